/*
 * rollout/unit: an endpoint's installed unit started and proven, or stopped, as it is, under its
 * deploy lock (serve's starts and evictions of units on ssh hosts): the session, the lock, the
 * boot's watch, readiness and the one-token generation are the deploy's own (session.c,
 * rollout_host.c, rollout_watch.c).
 *
 * What it does not do: stage, swap, gate, commit or roll back (a deploy does), record an attempt
 * in the ledger, or ask the host's ssh master to exit (the caller's forwards ride on it).
 */
#include "rollout_internal.h"

#include <stdio.h>
#include <string.h>

/* What runs in the unit's session: 0, or the error. */
typedef int (*unit_fn)(struct sw__ro *c, void *arg, struct sw_err *e);

/* The session opened (and the lock taken, recorded, when `lock`), fn run in it, the session
 * closed with the host's master kept. */
static int unit_session(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                        const struct sw_rollout_opts *o, struct sw_rollout_result *r, bool lock,
                        unit_fn fn, void *arg, struct sw_err *e)
{
    struct sw__ro c;
    struct sw_unit_render rd;
    int rc = sw__ro_init(&c, f, ep, o, r, &rd, e);
    c.keep_master = true;
    if (!rc)
        rc = sw_unit_render_endpoint(f, ep, &rd, e);
    if (!rc)
        rc = sw__ro_open(&c, &rd, e);
    uint64_t t = sw_now_ns();
    if (!rc && lock) {
        rc = sw__ro_lock(&c, e);
        if (rc == SW_EBUSY)
            sw__ro_fail(&c, "lock", "locked", "%.1000s", e ? e->msg : "its deploy lock is held");
        if (!rc)
            sw__ro_record(&c, "lock", true, t, "/run/slipway/%s.lock on %s", c.name, c.h.name);
    }
    if (!rc)
        rc = fn(&c, arg, e);
    sw__ro_close(&c);
    sw_unit_render_free(&rd);
    return rc;
}

static int start_unit(struct sw__ro *c, void *arg, struct sw_err *e)
{
    (void)arg;
    struct sw__ro_boot b;
    bool generated = false;
    int rc = sw__ro_start_and_prove(c, "start", &b, &generated, e);
    if (!rc && generated)
        c->r->serving = true;
    else if (!rc) {
        sw__ro_fail(c, b.ready ? "liveness" : "boot", b.cls[0] ? b.cls : "boot", "%.1000s", b.msg);
        sw__ro_stop_unit(c); /* it holds no memory, and does not crash-loop */
    }
    sw__ro_boot_free(&b);
    return rc;
}

static int stop_unit(struct sw__ro *c, void *arg, struct sw_err *e)
{
    (void)arg;
    uint64_t t = sw_now_ns();
    char why[700] = "";
    int rc = sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, why, sizeof(why));
    sw__ro_record(c, "stop", rc == 0, t, "systemctl stop %s%s%s", c->unit, rc ? ": " : "", why);
    if (rc)
        return sw_err_set(e, rc, "%s on %s: %s", c->unit, c->h.name, why);
    sw__ro_systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
    return 0;
}

struct holder {
    char *out;
    size_t n;
};

static int read_holder(struct sw__ro *c, void *arg, struct sw_err *e)
{
    struct holder *h = arg;
    return sw__ro_lock_holder(c, h->out, h->n, e);
}

int sw_rollout_unit_start(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                          const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                          struct sw_err *e)
{
    return unit_session(f, ep, o, r, true, start_unit, NULL, e);
}

int sw_rollout_unit_stop(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                         const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                         struct sw_err *e)
{
    return unit_session(f, ep, o, r, true, stop_unit, NULL, e);
}

int sw_rollout_unit_lock_holder(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                                char *holder, size_t n, struct sw_err *e)
{
    struct sw_rollout_result r;
    struct holder h = {holder, n};
    holder[0] = '\0';
    int rc = unit_session(f, ep, NULL, &r, false, read_holder, &h, e);
    sw_rollout_result_free(&r);
    return rc;
}
