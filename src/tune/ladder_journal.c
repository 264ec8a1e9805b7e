/*
 * ladder's memory (docs/ladder.md "The ledger: every rung, resumable"): every rung is written to
 * the ledger as soon as it is known (ladder_rungs: shape, boot, outcome, knob, value, class and
 * the evidence: the prediction before the rung, the bounds, the engine's figures, the runner's
 * evidence), and a run of the same label reads its rungs back, rebuilds the bounds and the law,
 * and continues numbering: no value is booted twice.
 *
 * What it deliberately does not do: decide the next rung (ladder_bounds.c) or change the
 * ledger's stored forms.
 */
#include <slipway/fleet.h>
#include <slipway/ladder.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#include "ladder_internal.h"

#include <string.h>

static json_t *rung_evidence(const struct sw_ladder_rung *g, const struct sw_ladder_outcome *oc,
                             const struct sw__ladder *L)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    sw_json_set_bool(o, "booted", g->booted);
    sw_json_set_int(o, "good_before", g->good_before);
    sw_json_set_int(o, "bad_before", g->bad_before);
    json_t *p = json_object();
    if (p) {
        sw_json_set_int(p, "lo", g->pred_lo);
        sw_json_set_int(p, "hi", g->pred_hi);
        sw_json_set_int(p, "point", g->pred_point);
        sw_json_set_new(o, "prediction", p);
    }
    if (g->peak_bytes)
        sw_json_set_int(o, "peak_bytes", (int64_t)g->peak_bytes);
    if (oc && oc->tried_bytes)
        sw_json_set_int(o, "tried_bytes", (int64_t)oc->tried_bytes);
    if (oc && oc->free_bytes)
        sw_json_set_int(o, "free_bytes", (int64_t)oc->free_bytes);
    if (oc && oc->engine_max)
        sw_json_set_int(o, "engine_max", oc->engine_max);
    if (L->r->law) {
        sw_json_set_real(o, "law_a_lo", L->r->law_a_lo);
        sw_json_set_real(o, "law_a_hi", L->r->law_a_hi);
    }
    sw_json_set_int(o, "ms", (int64_t)g->ms);
    if (oc && oc->evidence)
        json_object_set(o, "run", oc->evidence);
    return o;
}

int sw__ladder_record(struct sw__ladder *L, struct sw_ladder_rung *g,
                      const struct sw_ladder_outcome *oc, struct sw_err *e)
{
    if (!L->o->ledger || L->o->dry_run)
        return 0;
    json_t *shape = sw_plan_shape(L->ep);
    json_t *ev = rung_evidence(g, oc, L);
    int rc = 0;
    if (!shape || !ev) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory recording a rung");
        goto out;
    }
    struct sw_ledger_rung lr;
    memset(&lr, 0, sizeof(lr));
    lr.endpoint = L->ep->name;
    lr.ladder = L->r->label;
    lr.rung = g->n;
    lr.shape = shape;
    lr.boot_id = g->boot_id;
    lr.outcome = g->cls == SW_LADDER_PASS      ? "pass"
                 : g->cls == SW_LADDER_REFUSED ? "refused"
                                               : "fail";
    lr.note = g->detail;
    lr.source_line = "slipway ladder";
    lr.knob = L->r->knob;
    lr.has_value = true;
    lr.value = g->value;
    lr.klass = sw_ladder_class_name(g->cls);
    lr.evidence = ev;
    rc = sw_ledger_record_rung(L->o->ledger, &lr, &g->rung_id, e);
    if (rc == SW_EINVAL && lr.boot_id) {
        /* the runner's boot was recorded with a shape the ledger keys differently: keep the
         * rung, say which boot in its evidence */
        sw_json_set_int(ev, "boot", lr.boot_id);
        lr.boot_id = 0;
        sw_err_clear(e);
        rc = sw_ledger_record_rung(L->o->ledger, &lr, &g->rung_id, e);
    }
out:
    json_decref(shape);
    json_decref(ev);
    return rc;
}

int sw__ladder_resume(struct sw__ladder *L, struct sw_err *e)
{
    if (!L->o->ledger)
        return 0;
    json_t *rows = NULL;
    int rc = sw_ledger_rungs(L->o->ledger, L->ep->name, L->r->label, &rows, e);
    if (rc)
        return rc;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (L->r->n >= SW_LADDER_MAX_RUNGS)
            break;
        const char *knob = json_string_value(json_object_get(row, "knob"));
        const char *cls = json_string_value(json_object_get(row, "class"));
        json_t *val = json_object_get(row, "value");
        json_t *ev = json_object_get(row, "evidence");
        struct sw_ladder_rung *g = &L->r->rungs[L->r->n];
        memset(g, 0, sizeof(*g));
        g->n = (int)json_integer_value(json_object_get(row, "rung"));
        g->rung_id = json_integer_value(json_object_get(row, "id"));
        g->boot_id = json_integer_value(json_object_get(row, "boot"));
        g->resumed = true;
        if (!knob || strcmp(knob, L->r->knob) || !json_is_integer(val) || !cls ||
            sw_ladder_class_parse(cls, &g->cls)) {
            json_decref(rows);
            return sw_err_set(e, SW_EMISMATCH,
                              "ladder '%s' of %s: rung %d was not a %s rung of this code "
                              "(knob %s); use another --label",
                              L->r->label, L->ep->name, g->n, L->r->knob, knob ? knob : "none");
        }
        g->value = json_integer_value(val);
        g->booted = json_is_true(json_object_get(ev, "booted")) || g->boot_id;
        g->peak_bytes = (uint64_t)json_integer_value(json_object_get(ev, "peak_bytes"));
        g->good_before = sw__ladder_good(L);
        g->bad_before = sw__ladder_bad(L);
        g->pred_lo = g->pred_hi = g->pred_point = -1;
        const char *note = json_string_value(json_object_get(row, "note"));
        snprintf(g->detail, sizeof(g->detail), "%s", note ? note : "");
        sw__ladder_recalibrate(L, g->value, g->cls, g->peak_bytes,
                               (uint64_t)json_integer_value(json_object_get(ev, "tried_bytes")),
                               (uint64_t)json_integer_value(json_object_get(ev, "free_bytes")));
        sw__ladder_learn(L, g->value, g->cls,
                         json_integer_value(json_object_get(ev, "engine_max")));
        if (g->booted)
            L->r->boots_total++;
        L->r->n++;
    }
    json_decref(rows);
    return 0;
}
