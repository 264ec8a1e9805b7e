/*
 * rollout/ledger: what a rollout writes to the ledger (docs/ledger.md, "Deploys, steps and
 * tags"): the attempt when it starts, each step as it is recorded (and, after the gate step, one
 * "waiver" step per fleet waiver the gates went through: its gate, reason, until and fleet line),
 * and its end: a tag when it
 * committed, else the failure with its class and evidence (a failure of the shape teaches a
 * known-bad rule there, so `check` refuses that shape next time).
 *
 * Without a writable ledger (opts->ledger NULL or opts->record false) every call is a no-op: the
 * host's files stay the truth a rollback reads.
 *
 * What it does not do: decide anything (rollout.c does), or fail a deploy because the ledger
 * could not be written after the host changed (the write error is kept in the result).
 */
#include "rollout_internal.h"

#include <slipway/gate.h>
#include <slipway/ledger.h>

#include <stdio.h>
#include <string.h>

static bool writing(const struct sw__ro *c)
{
    return c->o->ledger && c->o->record;
}

int sw__ro_ledger_begin(struct sw__ro *c, const json_t *shape, struct sw_err *e)
{
    if (!writing(c))
        return 0;
    json_t *lg = NULL;
    const char *from = NULL;
    if (sw_ledger_tag_last_good(c->o->ledger, c->ep->name, &lg, NULL) == 0) {
        from = json_string_value(json_object_get(lg, "name"));
        c->same_shape_as_last_good = sw_gate_same_shape(json_object_get(lg, "shape"), shape);
    }
    struct sw_ledger_attempt a = {0};
    a.endpoint = c->ep->name;
    a.shape = shape;
    a.from_tag = from;
    a.note = c->o->note;
    int rc = sw_ledger_deploy_begin(c->o->ledger, &a, &c->attempt, e);
    json_decref(lg);
    return rc;
}

void sw__ro_ledger_step(struct sw__ro *c, const char *step, bool ok, double ms, const char *detail)
{
    if (!writing(c) || c->attempt <= 0)
        return;
    int64_t sid = 0;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_ledger_deploy_step_begin(c->o->ledger, c->attempt, step, &sid, &e)) {
        snprintf(c->r->ledger_msg, sizeof(c->r->ledger_msg), "%.500s", e.msg);
        return;
    }
    json_t *d = json_pack("{s:s,s:f}", "detail", detail, "ms", ms);
    if (sw_ledger_deploy_step_end(c->o->ledger, sid, ok ? "ok" : "failed", d, NULL, &e))
        snprintf(c->r->ledger_msg, sizeof(c->r->ledger_msg), "%.500s", e.msg);
    json_decref(d);
}

void sw__ro_ledger_waivers(struct sw__ro *c, const json_t *waivers)
{
    size_t i;
    const json_t *w;
    if (!writing(c) || c->attempt <= 0)
        return;
    json_array_foreach(waivers, i, w)
    {
        int64_t sid = 0;
        struct sw_err e;
        sw_err_clear(&e);
        if (sw_ledger_deploy_step_begin(c->o->ledger, c->attempt, "waiver", &sid, &e) ||
            sw_ledger_deploy_step_end(c->o->ledger, sid, "ok", w, NULL, &e)) {
            snprintf(c->r->ledger_msg, sizeof(c->r->ledger_msg), "%.500s", e.msg);
            return;
        }
    }
}

/* The tag for a committed attempt; its name into name (the host's tag directory takes it). */
int sw__ro_ledger_commit(struct sw__ro *c, const json_t *shape, const struct sw_unit_render *rd,
                         const json_t *payload, const char *image, char *name, size_t n,
                         struct sw_err *e)
{
    if (!writing(c) || c->attempt <= 0)
        return 0;
    struct sw_ledger_tag_new t = {0};
    t.endpoint = c->ep->name;
    t.attempt_id = c->attempt;
    t.shape = shape;
    t.unit_name = rd->service.name;
    t.unit_text = rd->service.shown;
    t.env_name = rd->env.name;
    t.env_text = rd->env.shown;
    t.payload = payload;
    t.image = image;
    t.note = c->o->note;
    t.downtime_ms = c->r->downtime_ms;
    char buf[SW_LEDGER_TAG_MAX];
    int64_t id = 0;
    int rc = sw_ledger_tag_commit(c->o->ledger, &t, buf, &id, e);
    if (!rc)
        snprintf(name, n, "%s", buf);
    return rc;
}

int sw__ro_ledger_usage(struct sw__ro *c, const struct sw_ledger_usage *u, int64_t *id,
                        struct sw_err *e)
{
    *id = 0;
    if (!writing(c))
        return 0;
    return sw_ledger_record_usage(c->o->ledger, u, id, e);
}

/* A failure class as the ledger's one lowercase word: "gate:known_bad" -> "known_bad". */
static const char *class_word(const char *cls)
{
    const char *colon = strchr(cls, ':');
    return colon ? colon + 1 : cls;
}

void sw__ro_ledger_finish(struct sw__ro *c)
{
    struct sw_rollout_result *r = c->r;
    if (!writing(c) || c->attempt <= 0 || r->outcome == SW_ROLLOUT_COMMITTED ||
        c->ledger_committed) /* the host's half cut off after it: the attempt is committed */
        return;
    struct sw_ledger_attempt_end f = {0};
    switch (r->outcome) {
    case SW_ROLLOUT_ROLLED_BACK:
    case SW_ROLLOUT_RESTORED: /* a recorded rollback by hand (watch's) */
        f.outcome = "rolled_back";
        break;
    case SW_ROLLOUT_ROLLBACK_FAILED:
        f.outcome = "rollback_failed";
        break;
    case SW_ROLLOUT_INTERRUPTED:
        f.outcome = "interrupted";
        break;
    default:
        f.outcome = "gate_refused";
        break;
    }
    f.failure_class = r->fail_class[0] ? class_word(r->fail_class) : c->o->cause;
    json_t *ev = json_object();
    if (ev) {
        if (r->journal)
            sw_json_set_str(ev, "journal", r->journal);
        if (r->boot)
            sw_json_set_new(ev, "boot_failure", json_incref(r->boot));
        sw_json_set_str(ev, "message", r->fail_msg);
        sw_json_set_str(ev, "step", r->failed_step);
        if (r->rollback_msg[0])
            sw_json_set_str(ev, "rollback", r->rollback_msg);
        if (c->o->cause)
            sw_json_set_str(ev, "cause", c->o->note ? c->o->note : c->o->cause);
    }
    f.evidence = ev;
    f.downtime_ms = r->downtime_ms;
    /* only a boot, a generation or a battery of this shape can blame the shape; and not when
     * it is the very shape that served as last-good (then the cause is outside the shape:
     * a binary, a path, the host) */
    bool shape_step = !strcmp(r->failed_step, "boot") || !strcmp(r->failed_step, "liveness") ||
                      !strcmp(r->failed_step, "probe");
    f.not_the_shape = !shape_step || c->same_shape_as_last_good ||
                      r->outcome == SW_ROLLOUT_INTERRUPTED || r->outcome == SW_ROLLOUT_RESTORED ||
                      c->o->cause;
    struct sw_err e;
    sw_err_clear(&e);
    int64_t rule = 0;
    if (sw_ledger_deploy_finish(c->o->ledger, c->attempt, &f, &rule, &e))
        snprintf(r->ledger_msg, sizeof(r->ledger_msg), "%.500s", e.msg);
    r->rule_id = rule;
    json_decref(ev);
}
