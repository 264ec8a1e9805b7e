/*
 * rollout/session: one rollout's session with its endpoint's host, shared by the deploy and the
 * rollback. Every step goes through sw__ro_record, the one place a step's outcome and time are
 * kept (the result's steps, the ledger's deploy_steps, the progress lines); a failure is named
 * once (sw__ro_fail); a transport that dies after the host's files changed ends the run as
 * interrupted (sw__ro_lost_host). Here too: the paths and URL of the endpoint on its host, the
 * host opened and closed, systemctl, the deploy lock taken, and a unit started and proven
 * (readiness, one-token generation).
 *
 * What it does not do: decide which steps run (rollout.c and rollback.c do), or touch the
 * ledger other than through rollout_ledger.c.
 */
#include "rollout_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static double ms_since(uint64_t t)
{
    return (double)(sw_now_ns() - t) / 1e6;
}

/* The one recording point of a step: kept in the result, printed as progress. */
void sw__ro_record(struct sw__ro *c, const char *step, bool ok, uint64_t t_start, const char *fmt,
                   ...)
{
    char detail[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    double ms = t_start ? ms_since(t_start) : 0;
    snprintf(c->last_step, sizeof(c->last_step), "%s", step);
    sw__ro_ledger_step(c, step, ok, ms, detail);
    json_t *s = json_object();
    if (s) {
        sw_json_set_str(s, "step", step);
        sw_json_set_bool(s, "ok", ok);
        sw_json_set_real(s, "ms", ms);
        sw_json_set_str(s, "detail", detail);
        json_array_append_new(c->r->steps, s);
    }
    if (c->o->progress) {
        fprintf(c->o->progress, "%-10s %-4s %8.0f ms  %s\n", step, ok ? "ok" : "FAIL", ms, detail);
        fflush(c->o->progress);
    }
}

void sw__ro_fail(struct sw__ro *c, const char *step, const char *cls, const char *fmt, ...)
{
    struct sw_rollout_result *r = c->r;
    snprintf(r->failed_step, sizeof(r->failed_step), "%s", step);
    snprintf(r->fail_class, sizeof(r->fail_class), "%s", cls);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->fail_msg, sizeof(r->fail_msg), fmt, ap);
    va_end(ap);
}

/* The transport to the host died after the host's files changed (or during the steps that
 * change them): nothing more can be done from here, neither a rollback nor a commit. The result
 * says how far it got; the lock this process holds is stale once it exits, so deploy or rollback
 * again converges. */
void sw__ro_lost_host(struct sw__ro *c, const char *msg)
{
    struct sw_rollout_result *r = c->r;
    sw__ro_fail(c, c->last_step[0] ? c->last_step : "host", "ssh_dropped",
                "the connection to the host was lost after the step '%s': %.400s%s%.400s",
                c->last_step, msg, c->gone_msg[0] ? "; then: " : "", c->gone_msg);
    snprintf(r->rollback_msg, sizeof(r->rollback_msg),
             "not attempted: the host cannot be reached; it holds what the steps above left "
             "(run deploy or rollback again: the lock of this process is stale once it exits)");
    r->outcome = SW_ROLLOUT_INTERRUPTED;
    c->locked = false; /* it cannot be released over a dead transport */
    sw__ro_record(c, "interrupted", false, 0, "%s", r->fail_msg);
}

/* Did an error of a remote step come from a transport that is gone? SW_ENET says so; a remote
 * command that ends without a word (ssh exits 255 with nothing on stderr when its master
 * connection dies under it) is told apart by asking the host for `true`. */
bool sw__ro_host_gone(struct sw__ro *c, int rc)
{
    if (rc == SW_ENET)
        return true;
    if (!rc || !c->host_open)
        return false;
    struct sw_host_result hr;
    struct sw_err pe;
    sw_err_clear(&pe);
    static const char script[] = "true\n";
    int prc = sw__ro_sh(c, script, NULL, 30000, &hr, &pe);
    sw_host_result_free(&hr);
    if (prc == SW_ENET)
        snprintf(c->gone_msg, sizeof(c->gone_msg), "%.500s", pe.msg);
    return prc == SW_ENET;
}

/* Paths and the URL of the endpoint on its host. */
int sw__ro_init(struct sw__ro *c, const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                struct sw_unit_render *rd, struct sw_err *e)
{
    static const struct sw_rollout_opts none;
    memset(c, 0, sizeof(*c));
    memset(r, 0, sizeof(*r));
    memset(rd, 0, sizeof(*rd));
    o = o ? o : &none;
    c->f = f;
    c->ep = ep;
    c->o = o;
    c->r = r;
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", ep->name);
    r->downtime_ms = -1;
    r->steps = json_array();
    if (!r->steps)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (!ep->host)
        return sw_err_set(e, SW_EINVAL, "endpoint %s has no host", ep->name);
    if (ep->service.scope == SW_FLEET_SCOPE_USER)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "endpoint %s: a user-scope unit is not deployed by rollout yet",
                          ep->name);
    c->eng = sw_engine_find(sw_fleet_engine_name(ep->engine));
    if (!c->eng || !c->eng->health_path || !c->eng->liveness_path)
        return sw_err_set(e, SW_EUNSUPPORTED, "endpoint %s: engine %s has no health/liveness",
                          ep->name, sw_fleet_engine_name(ep->engine));
    struct sw_fleet_addr fa;
    int rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        return rc;
    snprintf(c->url, sizeof(c->url), "%s", fa.url);
    return 0;
}

int sw__ro_route(struct sw__ro *c, struct sw_err *e)
{
    if (c->route_open)
        return sw_host_route_refresh(&c->route, 30000, e);
    int rc = sw_host_route_open(&c->route, c->ep, &c->h, 30000, e);
    if (rc) {
        sw_host_route_close(&c->route);
        return rc;
    }
    c->route_open = true;
    return 0;
}

int sw__ro_open(struct sw__ro *c, const struct sw_unit_render *rd, struct sw_err *e)
{
    snprintf(c->name, sizeof(c->name), "%s", rd->name);
    snprintf(c->unit, sizeof(c->unit), "%s.service", rd->name);
    snprintf(c->r->unit, sizeof(c->r->unit), "%s", c->unit);
    snprintf(c->live_unit, sizeof(c->live_unit), "/etc/systemd/system/%s", c->unit);
    snprintf(c->live_env, sizeof(c->live_env), "%s", rd->env_path);
    snprintf(c->state, sizeof(c->state), "/var/lib/slipway/rollout/%s", rd->name);
    int rc = sw_host_open_fleet(&c->h, c->ep->host, 5, e);
    if (rc)
        return rc;
    c->host_open = true;
    return 0;
}

/* The lock released and the ssh master asked to exit (unless keep_master): nothing of this run
 * outlives it. */
void sw__ro_close(struct sw__ro *c)
{
    if (c->route_open)
        sw_host_route_close(&c->route);
    c->route_open = false;
    sw__ro_unlock(c);
    if (c->host_open && !c->keep_master)
        sw_host_disconnect(&c->h);
    c->host_open = false;
}

int sw__ro_systemctl(struct sw__ro *c, const char *verb, const char *unit, int64_t dl, char *why,
                     size_t n)
{
    struct sw_host_result hr;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_host_systemctl(&c->h, false, verb, unit, dl, &hr, &e);
    if (rc && why)
        snprintf(why, n, "systemctl %s %s: %.400s %.300s", verb, unit ? unit : "", e.msg,
                 hr.err ? hr.err : "");
    sw_host_result_free(&hr);
    return rc;
}

/* Bring up whatever the live files say, from a fresh cursor, and prove it serves: readiness and
 * one-token generation. Returns 0 when it serves (b->ready, gen ok); else the class in b. */
int sw__ro_start_and_prove(struct sw__ro *c, const char *verb, struct sw__ro_boot *b,
                           bool *generated, struct sw_err *e)
{
    char *cursor = NULL;
    char why[1024];
    *generated = false;
    memset(b, 0, sizeof(*b));
    int rc = sw__ro_route(c, e);
    if (!rc)
        rc = sw__ro_cursor(c, &cursor, e);
    if (rc)
        return rc;
    sw__ro_systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
    uint64_t t = sw_now_ns();
    /* a start job that fails (Type=exec: the process died at once) is read like any other
     * death: the watch says what the unit and the journal show */
    bool refused = sw__ro_systemctl(c, verb, c->unit, SW__RO_STOP_MS, why, sizeof(why)) != 0;
    sw__ro_record(c, verb, !refused, t, "systemctl %s %s%s%s", verb, c->unit, refused ? ": " : "",
                  refused ? why : "");
    t = sw_now_ns();
    rc = sw__ro_watch(c, cursor, b, e);
    sw_free(cursor);
    if (rc)
        return rc;
    if (refused && !b->ready && !b->cls[0]) {
        snprintf(b->cls, sizeof(b->cls), "start_refused");
        snprintf(b->msg, sizeof(b->msg), "%.1000s", why);
    }
    if (!b->ready) {
        sw__ro_record(c, "boot", false, t, "%s: %s", b->cls, b->msg);
        return 0;
    }
    sw__ro_record(c, "readiness", true, t, "%s%s answered 200", c->url, c->eng->health_path);
    t = sw_now_ns();
    if (sw__ro_generate(c, why, sizeof(why))) {
        snprintf(b->cls, sizeof(b->cls), "dead_generation");
        snprintf(b->msg, sizeof(b->msg), "%s answered 200 but generation failed: %.900s",
                 c->eng->health_path, why);
        b->ready = false;
        sw__ro_record(c, "liveness", false, t, "%s", b->msg);
        return 0;
    }
    *generated = true;
    if (c->t_down && c->r->downtime_ms < 0)
        c->r->downtime_ms = (int64_t)((sw_now_ns() - c->t_down) / 1000000);
    sw__ro_record(c, "liveness", true, t, "one-token generation answered");
    return 0;
}

int sw__ro_start_and_keep(struct sw__ro *c, const char *verb, bool with_class,
                          struct sw__ro_boot *b, bool *generated, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    int rc = sw__ro_start_and_prove(c, verb, b, generated, e);
    if (rc)
        return rc;
    r->boot = b->evidence;
    b->evidence = NULL;
    if (with_class && r->boot && b->cls[0])
        sw_json_set_str(r->boot, "class", b->cls);
    r->journal = b->journal;
    b->journal = NULL;
    return 0;
}

bool sw__ro_stop_unit(struct sw__ro *c)
{
    char why[512] = "";
    int rc = sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, why, sizeof(why));
    if (rc && sw__ro_host_gone(c, rc)) {
        sw__ro_lost_host(c, why);
        return true;
    }
    sw__ro_systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
    return false;
}

int sw__ro_reload(struct sw__ro *c, int rc, const struct sw_err *fe, char *why, size_t n,
                  bool *lost)
{
    *lost = false;
    if (!rc)
        rc = sw__ro_systemctl(c, "daemon-reload", NULL, 60000, why, n);
    if (rc && sw__ro_host_gone(c, rc)) {
        sw__ro_lost_host(c, why[0] ? why : fe->msg);
        *lost = true;
    }
    return rc;
}

int sw__ro_take_lock(struct sw__ro *c, struct sw_err *e)
{
    uint64_t t = sw_now_ns();
    int rc = sw__ro_lock(c, e);
    if (rc)
        return rc;
    sw__ro_record(c, "lock", true, t, "/run/slipway/%s.lock on %s%s%s%s", c->name, c->h.name,
                  c->lock_stale[0] ? " (taken over from a dead holder: " : "", c->lock_stale,
                  c->lock_stale[0] ? ")" : "");
    return sw__ro_commit_settle(c, e);
}

int sw__ro_settle(struct sw__ro *c, int rc, struct sw_err *e)
{
    if (rc && c->locked && c->r->outcome == SW_ROLLOUT_NONE && sw__ro_host_gone(c, rc)) {
        /* the transport died once the host was ours: a verdict, not an error */
        sw__ro_lost_host(c, e->msg);
        return 0;
    }
    return rc;
}
