/*
 * gate/known_bad: what failed before. Exact shapes that failed in the ledger (the same shape
 * hash, or sw_gate_same_shape), the ledger's rules (its own rule engine on the canonical shape),
 * the fleet's known_bad rules, and the fleet's failed or rejected boots overlaid on the fleet
 * file's shape; each with the failure that taught it.
 *
 * What it deliberately does not do: write a rule (`slipway ledger rule` does), or judge a shape
 * that never failed (the other gates do).
 */
#include "gate_internal.h"

#include <string.h>

static const char *failure_text(const json_t *f, char *out, size_t n)
{
    const char *cls = json_string_value(json_object_get(f, "class"));
    const char *ph = json_string_value(json_object_get(f, "phase"));
    const char *msg = json_string_value(json_object_get(f, "message"));
    snprintf(out, n, "%s%s%s%s%s%s", cls ? cls : "failed", ph ? " (" : "", ph ? ph : "",
             ph ? ")" : "", msg ? ": " : "", msg ? msg : "");
    return out;
}

/* The fleet's own record of failed/rejected boots, overlaid on the fleet file's shape. */
static int fleet_boots(struct sw__gate_run *r, int *hits, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_fleet_shape *base = r->o && r->o->before ? r->o->before : &ep->shape;
    char buf[1400];
    for (size_t i = 0; i < ep->n_boots; i++) {
        const struct sw_fleet_boot *b = &ep->boots[i];
        if (!b->outcome || (strcmp(b->outcome, "failed") && strcmp(b->outcome, "rejected")))
            continue;
        struct sw_fleet_endpoint tmp = *ep;
        tmp.shape = *base;
        sw_fleet_shape_overlay(&tmp.shape, &b->shape);
        if (b->mmproj.set && !b->mmproj.v) {
            tmp.payload.mmproj.v = NULL;
            tmp.payload.mmproj.off = true;
        } else if (b->mmproj.set && b->mmproj.v && !tmp.payload.mmproj.v) {
            tmp.payload.mmproj.v = "mmproj";
        }
        json_t *raw = sw_plan_shape(&tmp), *canon = NULL;
        if (!raw)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        int rc = sw_ledger_shape_canon(raw, &canon, NULL, NULL, NULL);
        json_decref(raw);
        if (rc)
            continue;
        bool same = sw_gate_same_shape(canon, r->shape);
        json_decref(canon);
        if (!same)
            continue;
        (*hits)++;
        snprintf(buf, sizeof(buf), "%s%s%s", b->text ? b->text : (b->note ? b->note : ""),
                 b->text && b->note ? "; " : "", b->text && b->note ? b->note : "");
        json_t *g =
            sw__gate_add(r, "known_bad", SW_GATE_FAIL, "this shape %s before (%s:%d, %s%s%s): %s",
                         !strcmp(b->outcome, "failed") ? "failed" : "was rejected",
                         b->at.file ? b->at.file : "fleet", b->at.line, b->outcome,
                         b->failure ? " " : "", b->failure ? b->failure : "", buf);
        sw__gate_str(g, "source", "fleet");
        sw__gate_evidence(g, json_pack("{s:s,s:i,s:s,s:s?,s:s?,s:s?}", "file",
                                       b->at.file ? b->at.file : "", "line", b->at.line, "outcome",
                                       b->outcome, "failure", b->failure, "text", b->text, "note",
                                       b->note));
        sw__gate_fix(g, "change the shape: this exact one was already spent");
    }
    return 0;
}

int sw__gate_known_bad(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    char buf[1400], fb[1024];
    int hits = 0, rc;

    /* 1. exact shapes that failed, in the ledger */
    const json_t *shapes = json_object_get(r->known_bad, "shapes");
    for (size_t i = 0; i < json_array_size(shapes); i++) {
        const json_t *s = json_array_get(shapes, i);
        const char *h = json_string_value(json_object_get(s, "hash"));
        const json_t *canon = json_object_get(s, "canonical");
        if (json_integer_value(json_object_get(s, "failed")) <= 0)
            continue;
        if (!(h && !strcmp(h, r->hash)) && !sw_gate_same_shape(canon, r->shape))
            continue;
        const json_t *fs = json_object_get(s, "failures");
        for (size_t k = 0; k < json_array_size(fs); k++) {
            const json_t *f = json_array_get(fs, k);
            hits++;
            json_t *g = sw__gate_add(
                r, "known_bad", SW_GATE_FAIL, "this shape failed in the ledger (boot #%lld%s): %s",
                (long long)json_integer_value(json_object_get(f, "boot")),
                json_integer_value(json_object_get(s, "ok")) > 0 ? ", though it booted too" : "",
                failure_text(json_object_get(f, "failure"), fb, sizeof(fb)));
            sw__gate_str(g, "source", "ledger");
            sw__gate_str(g, "shape_hash", h);
            sw__gate_evidence(g, json_deep_copy(f));
            sw__gate_fix(g, "change the shape: this exact one was already spent on a boot");
        }
    }
    /* 2. rules in the ledger */
    const json_t *rules = json_object_get(r->known_bad, "rules");
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const json_t *ru = json_array_get(rules, i);
        const char *expr = json_string_value(json_object_get(ru, "expr"));
        struct sw_ledger_rule *pr = NULL;
        if (!expr || sw_ledger_rule_parse(expr, &pr, NULL))
            continue;
        bool hit = sw_ledger_rule_eval(pr, r->shape);
        sw_ledger_rule_free(pr);
        if (!hit)
            continue;
        hits++;
        const json_t *f = json_object_get(ru, "failure");
        const char *reason = json_string_value(json_object_get(ru, "reason"));
        json_int_t boot = json_integer_value(json_object_get(ru, "boot_id"));
        if (!boot)
            boot = json_integer_value(json_object_get(ru, "boot"));
        snprintf(buf, sizeof(buf), "%s", reason ? reason : "");
        json_t *g =
            sw__gate_add(r, "known_bad", SW_GATE_FAIL, "rule `%s` (ledger rule #%lld): %s%s%s",
                         expr, (long long)json_integer_value(json_object_get(ru, "id")), buf,
                         f ? " Taught by: " : "", f ? failure_text(f, fb, sizeof(fb)) : "");
        sw__gate_str(g, "source", "ledger");
        sw__gate_str(g, "rule", expr);
        /* what a waiver's `rule:` names (sw_gate_waiver) */
        sw__gate_num(g, "rule_id", (double)json_integer_value(json_object_get(ru, "id")));
        if (boot)
            sw__gate_num(g, "boot", (double)boot);
        sw__gate_evidence(g, json_deep_copy(ru));
        sw__gate_fix(g, "change the shape so that `%s` no longer holds", expr);
    }
    /* 3. rules in the fleet file */
    for (size_t i = 0; i < ep->n_known_bad; i++) {
        const struct sw_fleet_rule *ru = &ep->known_bad[i];
        if (!sw_fleet_rule_matches(ru, &ep->shape))
            continue;
        hits++;
        size_t o = 0;
        buf[0] = '\0';
        for (size_t k = 0; k < ru->n_conds && o < sizeof(buf) - 1; k++) {
            const struct sw_fleet_cond *c = &ru->conds[k];
            char v[128] = "";
            if (c->op != SW_FLEET_IN && c->v.type != SW_FLEET_V_STR)
                snprintf(v, sizeof(v), "%llu", (unsigned long long)c->v.u);
            else if (c->op != SW_FLEET_IN)
                snprintf(v, sizeof(v), "%s", c->v.s ? c->v.s : "");
            else
                snprintf(v, sizeof(v), "(%zu values)", c->n_in);
            if (c->op != SW_FLEET_IN && c->v.type == SW_FLEET_V_REAL)
                snprintf(v, sizeof(v), "%g", c->v.f);
            int w = snprintf(buf + o, sizeof(buf) - o, "%s%s %s %s", k ? " && " : "",
                             c->field->name, sw_fleet_op_name(c->op), v);
            if (w > 0)
                o += (size_t)w;
        }
        json_t *g =
            sw__gate_add(r, "known_bad", SW_GATE_FAIL, "fleet rule `%s` (%s:%d)%s%s: %s%s%s", buf,
                         ru->at.file ? ru->at.file : "fleet", ru->at.line, ru->failure ? ", " : "",
                         ru->failure ? ru->failure : "", ru->text ? ru->text : "",
                         ru->text && ru->note ? "; " : "", ru->note ? ru->note : "");
        sw__gate_str(g, "source", "fleet");
        sw__gate_str(g, "rule", buf);
        sw__gate_fix(g, "change the shape so that `%s` no longer holds", buf);
    }
    /* 4. failed or rejected boots the fleet file records */
    rc = fleet_boots(r, &hits, e);
    if (rc)
        return rc;
    if (!hits) {
        json_t *g = sw__gate_add(
            r, "known_bad", SW_GATE_PASS,
            "no failed boot of this shape and no known-bad rule matches (%zu failed shapes and "
            "%zu rules in the ledger%s, %zu rules in the fleet)",
            json_array_size(shapes), json_array_size(rules),
            r->o && r->o->ledger ? "" : ": none given", ep->n_known_bad);
        sw__gate_num(g, "ledger_failed_shapes", (double)json_array_size(shapes));
        sw__gate_num(g, "ledger_rules", (double)json_array_size(rules));
        sw__gate_num(g, "fleet_rules", (double)ep->n_known_bad);
    }
    return 0;
}
