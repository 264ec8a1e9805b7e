/*
 * gate/gate: the driver of `slipway check` for one endpoint: shape, law, ledger evidence, then
 * each gate in a fixed order, and the result document.
 *
 * What it deliberately does not do: print (the CLI renders the JSON), or open the ledger (the
 * caller hands one in, so a test and the CLI decide where it lives).
 */
#include "gate_internal.h"

#include <stdarg.h>
#include <string.h>

const char *sw_gate_verdict_name(enum sw_gate_verdict v)
{
    switch (v) {
    case SW_GATE_PASS:
        return "pass";
    case SW_GATE_SKIP:
        return "skip";
    case SW_GATE_FAIL:
        return "fail";
    case SW_GATE_WAIVED:
        return "waived";
    }
    return "?";
}

const char *sw__gate_mib(double bytes, char *out, size_t n)
{
    char c[64];
    double m = bytes / (double)SW_MIB;
    bool neg = m < 0;
    double a = neg ? -m : m;
    if (a < 100 && a != (double)(uint64_t)a) {
        snprintf(out, n, "%s%.3g MiB", neg ? "-" : "", a);
        return out;
    }
    snprintf(out, n, "%s%s MiB", neg ? "-" : "", sw_fmt_count((uint64_t)(a + 0.5), c, sizeof(c)));
    return out;
}

const char *sw__gate_gib(double bytes, char *out, size_t n)
{
    double g = bytes / (double)SW_GIB;
    double a = g < 0 ? -g : g;
    snprintf(out, n, a >= 10 ? "%.1f GiB" : "%.2f GiB", g);
    return out;
}

json_t *sw__gate_add(struct sw__gate_run *r, const char *gate, enum sw_gate_verdict v,
                     const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    json_t *g = json_pack("{s:s,s:s,s:s,s:n,s:{},s:[]}", "gate", gate, "verdict",
                          sw_gate_verdict_name(v), "line", line, "fix", "numbers", "evidence");
    if (!g || json_array_append_new(r->gates, g))
        return NULL;
    return g;
}

void sw__gate_fix(json_t *g, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    if (!g)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    sw_json_set_str(g, "fix", line);
}

void sw__gate_num(json_t *g, const char *k, double v)
{
    json_t *n = json_object_get(g, "numbers");
    if (!n)
        return;
    if (v == (double)(int64_t)v && v < 9e15 && v > -9e15)
        sw_json_set_int(n, k, (int64_t)v);
    else
        sw_json_set_real(n, k, v);
}

void sw__gate_str(json_t *g, const char *k, const char *v)
{
    json_t *n = json_object_get(g, "numbers");
    if (n)
        sw_json_set_str(n, k, v);
}

void sw__gate_evidence(json_t *g, json_t *ev)
{
    json_t *a = json_object_get(g, "evidence");
    if (!ev)
        return;
    if (!a || json_array_append_new(a, ev))
        json_decref(ev);
}

static int load_ledger(struct sw__gate_run *r, struct sw_err *e)
{
    struct sw_ledger_query q;
    int rc;
    if (!r->o || !r->o->ledger)
        return 0;
    memset(&q, 0, sizeof(q));
    q.endpoint = r->ep->name;
    q.full = true;
    rc = sw_ledger_boots(r->o->ledger, &q, &r->boots, e);
    if (rc)
        return rc;
    rc = sw_ledger_known_bad(r->o->ledger, r->ep->name, &r->known_bad, e);
    if (rc)
        return rc;
    /* The calibration (non-KV cost by subtraction, per device). An endpoint the ledger has no
     * record of, or whose readings do not fit, is not unusable input: the band says why. */
    struct sw_calib_opts co = {.ep = r->ep};
    struct sw_err ce;
    char buf[480];
    sw_err_clear(&ce);
    if (json_array_size(r->boots) == 0) {
        snprintf(r->fit_why, sizeof(r->fit_why), "the ledger has no boot of %s", r->ep->name);
    } else if (sw_calib_fit(r->o->ledger, r->ep->name, &co, &r->fit, &ce)) {
        if (ce.code == SW_ENOMEM)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        snprintf(r->fit_why, sizeof(r->fit_why), "calibration: %s",
                 sw_err_format(&ce, buf, sizeof(buf)));
        r->fit = NULL;
    }
    return 0;
}

int sw_gate_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                     const struct sw_gate_opts *o, json_t **out, struct sw_err *e)
{
    struct sw__gate_run r;
    json_t *canon = NULL, *res = NULL, *raw = NULL;
    int rc = 0;

    *out = NULL;
    memset(&r, 0, sizeof(r));
    r.f = f;
    r.ep = ep;
    r.o = o;
    r.gates = json_array();
    raw = sw_plan_shape(ep);
    if (!r.gates || !raw) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_ledger_shape_canon(raw, &canon, NULL, r.hash, e);
    if (rc) {
        sw_err_prefix(e, "%s: the endpoint's shape", ep->name);
        goto out;
    }
    r.shape = canon;
    rc = sw_plan_view(ep, &r.plan, e);
    if (rc)
        goto out;
    rc = load_ledger(&r, e);
    if (rc)
        goto out;
    /* the gates in the order they print */
    int (*const gates[])(struct sw__gate_run *, struct sw_err *) = {
        sw__gate_band,      sw__gate_pool,    sw__gate_arena, sw__gate_headroom, sw__gate_window,
        sw__gate_known_bad, sw__gate_payload, sw__gate_unit,  sw__gate_patches,
    };
    for (size_t g = 0; g < SW_ARRAY_LEN(gates); g++) {
        rc = gates[g](&r, e);
        if (rc)
            goto out;
    }

    bool failed = false;
    for (size_t i = 0; i < json_array_size(r.gates); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(r.gates, i), "verdict")),
                    "fail"))
            failed = true;
    res = json_pack("{s:s,s:s,s:O,s:s,s:s,s:O}", "endpoint", ep->name, "engine",
                    sw_fleet_engine_name(ep->engine), "shape", canon, "shape_hash", r.hash,
                    "verdict", failed ? "fail" : "pass", "gates", r.gates);
    if (!res) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (!r.plan.ok && r.plan.why[0])
        sw_json_set_str(res, "law", r.plan.why);
    /* the operator's waivers, judged on one day for the whole run */
    char today[11];
    rc = sw_gate_today(o, today, e);
    if (!rc)
        rc = sw_gate_waive(ep, res, today, (o && (o->waivers_loose || o->before)), e);
    if (rc) {
        json_decref(res);
        goto out;
    }
    *out = res;
out:
    sw_plan_view_free(&r.plan);
    json_decref(r.gates);
    json_decref(r.boots);
    json_decref(r.known_bad);
    sw_calib_fit_free(r.fit);
    json_decref(canon);
    json_decref(raw);
    return rc;
}
