/*
 * rollout/rollback: a saved set of unit and environment files put back over the live ones and
 * proven to serve (readiness, one-token generation): after a deploy's new shape failed once the
 * live files changed (the last-good set, else the live files saved before the swap; with neither,
 * the failed unit stopped and its files moved aside), or by hand (`slipway rollback`: the
 * last-good, the rollback set or a tag's set). The time the endpoint did not serve runs to the
 * first generation of the shape that serves in the end.
 *
 * A rollback by hand recorded (opts.record with a ledger: `slipway watch`'s rollbacks) is an
 * attempt of its own in the ledger, as a deploy's is: of the shape it puts back (the tag's), its
 * steps as they run, and its end rolled_back (or rollback_failed) with the cause's class
 * (opts.cause); never a known-bad rule (nothing proved the shape at fault).
 *
 * What it does not do: pick a set the host does not hold (that is SW_ENOENT), or leave a unit
 * that failed its rollback crash-looping (it is stopped).
 */
#include "rollout_internal.h"

#include <slipway/ledger.h>

#include <stdio.h>
#include <string.h>

/* The new shape failed after the live files changed: put the rollback set back and prove it. */
int sw__ro_roll_back(struct sw__ro *c, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    /* the last-good set when a deploy committed one (the live files may be an interrupted
     * deploy's unproven shape), else the live files saved before the swap */
    char set[600], lg[700];
    bool have_lg = false;
    snprintf(set, sizeof(set), "%s/last-good", c->state);
    snprintf(lg, sizeof(lg), "%.400s/%.250s", set, c->unit);
    if (sw__ro_exists(c, lg, &have_lg, NULL) || !have_lg)
        snprintf(set, sizeof(set), "%s/rollback", c->state);
    uint64_t t = sw_now_ns();
    if (!have_lg && !r->had_rollback_set) {
        char why[512] = "";
        sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, why, sizeof(why));
        sw__ro_systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
        struct sw_err re;
        sw_err_clear(&re);
        int rc = sw__ro_remove_live(c, &re);
        if (!rc)
            rc = sw__ro_systemctl(c, "daemon-reload", NULL, 60000, why, sizeof(why));
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "the host had no live unit before: the failed one is stopped and its files "
                 "moved to %.200s/failed/ %.150s",
                 c->state, rc ? re.msg : "");
        sw__ro_record(c, "rollback", rc == 0, t, "%s", r->rollback_msg);
        r->outcome = SW_ROLLOUT_ROLLED_BACK;
        return 0;
    }
    struct sw_err re;
    sw_err_clear(&re);
    char why[512] = "";
    /* the failed unit first: a crash loop left running restarts the old definition while the
     * files are put back (ASan's slower restore saw a restart of the broken binary land after
     * the explicit start, and read its exit 127 as the rollback's own death) */
    if (sw__ro_stop_unit(c))
        return 0;
    bool lost;
    int rc = sw__ro_reload(c, sw__ro_restore(c, set, &re), &re, why, sizeof(why), &lost);
    if (lost)
        return 0;
    if (rc) {
        snprintf(r->rollback_msg, sizeof(r->rollback_msg), "restoring %.200s failed: %.150s%.100s",
                 set, re.msg, why);
        sw__ro_record(c, "rollback", false, t, "%s", r->rollback_msg);
        sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, NULL, 0);
        r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
        return 0;
    }
    sw__ro_record(c, "restore", true, t, "%s put back over %s and %s", set, c->live_unit,
                  c->live_env);
    struct sw__ro_boot b;
    bool gen = false;
    /* the downtime runs to the first generation of the shape that serves in the end */
    r->downtime_ms = -1;
    rc = sw__ro_start_and_prove(c, "restart", &b, &gen, e);
    if (rc) {
        sw__ro_boot_free(&b);
        return rc;
    }
    if (!gen && !strcmp(b.cls, "ssh_dropped")) {
        sw__ro_lost_host(c, b.msg);
        sw__ro_boot_free(&b);
        return 0;
    }
    if (gen) {
        r->serving = true;
        r->outcome = SW_ROLLOUT_ROLLED_BACK;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "%.400s serves again (readiness and one-token generation)", set);
    } else {
        /* nothing worse behind: the broken target does not crash-loop */
        sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, NULL, 0);
        sw__ro_systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
        r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "%.200s failed too (%s: %.200s); the unit is stopped", set, b.cls, b.msg);
    }
    sw__ro_record(c, "rollback", gen, t, "%s", r->rollback_msg);
    sw__ro_boot_free(&b);
    return 0;
}

/* The set a rollback by hand puts back: the tag's, else the last-good, else the rollback set.
 * SW_ENOENT when the host holds none of them. */
static int choose_set(struct sw__ro *c, char *set, size_t n, struct sw_err *e)
{
    const struct sw_rollout_opts *o = c->o;
    bool yes = false;
    int rc;
    if (o->to_tag) {
        if (strchr(o->to_tag, '/') || o->to_tag[0] == '.' || !o->to_tag[0])
            return sw_err_set(e, SW_EINVAL, "--to %s: not a tag name", o->to_tag);
        snprintf(set, n, "%s/tags/%s", c->state, o->to_tag);
    } else {
        snprintf(set, n, "%s/last-good", c->state);
        rc = sw__ro_exists(c, set, &yes, e);
        if (rc)
            return rc;
        if (!yes)
            snprintf(set, n, "%s/rollback", c->state);
    }
    rc = sw__ro_exists(c, set, &yes, e);
    if (rc)
        return rc;
    if (!yes)
        return sw_err_set(e, SW_ENOENT, "%s: no saved set for %s (%s)", c->h.name, c->name, set);
    return 0;
}

/* The saved set over the live files (the time it does not serve counted from here): a unit
 * that is neither active nor inactive (a crash loop:
 * activating, auto-restart, failed) stopped first, or a restart of the old definition can land
 * after ours; then daemon-reload. */
static int restore(struct sw__ro *c, const char *set, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    struct sw_host_unit before;
    char why[512] = "";
    int rc;
    memset(&before, 0, sizeof(before));
    sw_host_unit_show(&c->h, false, c->unit, 30000, &before, NULL);
    uint64_t t = sw_now_ns();
    c->t_down = t; /* the downtime runs from here */
    r->stopped = !strcmp(before.active_state, "active");
    if (strcmp(before.active_state, "active") && strcmp(before.active_state, "inactive") &&
        sw__ro_stop_unit(c))
        return 0;
    bool lost;
    rc = sw__ro_reload(c, sw__ro_restore(c, set, e), e, why, sizeof(why), &lost);
    if (lost)
        return 0;
    if (rc) {
        sw__ro_record(c, "restore", false, t, "%s%s", e->msg, why);
        return rc;
    }
    sw__ro_record(c, "restore", true, t, "%s put back over %s", set, c->live_unit);
    return 0;
}

/* Restart what was put back and say whether it serves (a unit that does not is stopped). */
static int prove_restored(struct sw__ro *c, const char *set, struct sw_err *e)
{
    struct sw_rollout_result *r = c->r;
    struct sw__ro_boot b;
    bool gen = false;
    int rc = sw__ro_start_and_keep(c, "restart", false, &b, &gen, e);
    if (rc) {
        sw__ro_boot_free(&b);
        return rc;
    }
    if (!gen && !strcmp(b.cls, "ssh_dropped")) {
        sw__ro_lost_host(c, b.msg);
    } else if (gen) {
        r->serving = true;
        r->outcome = SW_ROLLOUT_RESTORED;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg), "%.400s serves", set);
    } else {
        sw__ro_fail(c, "rollback", b.cls, "%s", b.msg);
        sw__ro_systemctl(c, "stop", c->unit, SW__RO_STOP_MS, NULL, 0);
        sw__ro_systemctl(c, "reset-failed", c->unit, 30000, NULL, 0);
        r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
        snprintf(r->rollback_msg, sizeof(r->rollback_msg),
                 "%.400s did not serve: the unit is stopped", set);
    }
    sw__ro_boot_free(&b);
    return 0;
}

/* Recording: the attempt of the shape the set holds (the tag's in the ledger). A ledger that
 * cannot take it does not stop the rollback: the result says why (ledger_msg). */
static void begin_attempt(struct sw__ro *c)
{
    const struct sw_rollout_opts *o = c->o;
    json_t *tag = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    if (!o->ledger || !o->record)
        return;
    int rc = o->to_tag ? sw_ledger_tag_get(o->ledger, o->to_tag, &tag, &e)
                       : sw_ledger_tag_last_good(o->ledger, c->ep->name, &tag, &e);
    if (!rc)
        rc = sw__ro_ledger_begin(c, json_object_get(tag, "shape"), &e);
    if (rc)
        snprintf(c->r->ledger_msg, sizeof(c->r->ledger_msg),
                 "the rollback is not recorded as an attempt: %.400s", e.msg);
    c->r->attempt = c->attempt;
    json_decref(tag);
}

int sw_rollout_rollback(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                        const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                        struct sw_err *e)
{
    struct sw__ro c;
    struct sw_unit_render rd;
    char set[700];
    int rc = sw__ro_init(&c, f, ep, o, r, &rd, e);
    /* the render names the unit and the env path: the same the deploy used */
    if (!rc)
        rc = sw_unit_render_endpoint(f, ep, &rd, e);
    if (!rc)
        rc = sw__ro_open(&c, &rd, e);
    if (!rc)
        rc = sw__ro_take_lock(&c, e);
    if (!rc)
        rc = choose_set(&c, set, sizeof(set), e);
    if (rc)
        goto out;
    begin_attempt(&c);
    rc = restore(&c, set, e);
    if (rc || r->outcome != SW_ROLLOUT_NONE)
        goto out;
    rc = prove_restored(&c, set, e);
out:
    rc = sw__ro_settle(&c, rc, e);
    if (c.attempt > 0) {
        if (r->outcome == SW_ROLLOUT_NONE) { /* an error ended it */
            r->outcome = SW_ROLLOUT_ROLLBACK_FAILED;
            if (!r->fail_msg[0])
                snprintf(r->fail_msg, sizeof(r->fail_msg), "%.1000s", e ? e->msg : "error");
        }
        sw__ro_ledger_finish(&c);
    }
    sw__ro_close(&c);
    sw_unit_render_free(&rd);
    return rc;
}
