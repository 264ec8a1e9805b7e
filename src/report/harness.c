/*
 * report/harness: the client harness contract. Each endpoint's contextWindow is its REAL window
 * (the plan's tokens per conversation: a llama.cpp slot that cannot share its cache holds pool /
 * slots; a longer prompt is a hard HTTP 400), and the compaction request (ratio x contextWindow
 * + the summary budget) must fit one window of the endpoint that serves compaction. The
 * arithmetic is the window gate's (gate/window.c): ceil(window x ratio) + budget.
 *
 * Reasoning and tool settings are read from the plan's argv (the flags the engine runs with) and
 * held against the last battery's `reasoning` / `tool_calls` checks when the ledger has one.
 *
 * A line that does not fit and that the endpoint's fleet waiver covers (gate.h sw_gate_waiver, the
 * gates' one rule) carries the waiver: the report shows it WAIVED with its reason.
 *
 * What it deliberately does not do: change the fleet, or guess a window no plan gives.
 */
#include "report_internal.h"

#include <slipway/gate.h>

#include <math.h>
#include <string.h>

static const char *arg_after(const struct sw_plan *p, const char *flag)
{
    for (size_t i = 0; i + 1 < p->cmd.argc; i++)
        if (!strcmp(p->cmd.argv[i], flag))
            return p->cmd.argv[i + 1];
    return NULL;
}

static bool has_arg(const struct sw_plan *p, const char *flag)
{
    for (size_t i = 0; i < p->cmd.argc; i++)
        if (!strcmp(p->cmd.argv[i], flag))
            return true;
    return false;
}

static json_t *settings(const struct sw_fleet_endpoint *ep, const struct sw_plan *p, bool tools)
{
    if (ep->engine == SW_FLEET_LLAMACPP) {
        if (tools)
            return json_pack("{s:b,s:s}", "enabled", has_arg(p, "--jinja"), "flag", "--jinja");
        const char *f = arg_after(p, "--reasoning-format");
        return json_pack("{s:b,s:o,s:s}", "enabled", f ? strcmp(f, "none") != 0 : false, "parser",
                         f ? json_string(f) : json_null(), "flag", "--reasoning-format");
    }
    if (tools) {
        const char *f = arg_after(p, "--tool-call-parser");
        return json_pack("{s:b,s:o,s:s}", "enabled", has_arg(p, "--enable-auto-tool-choice"),
                         "parser", f ? json_string(f) : json_null(), "flag",
                         "--enable-auto-tool-choice --tool-call-parser");
    }
    const char *f = arg_after(p, "--reasoning-parser");
    return json_pack("{s:b,s:o,s:s}", "enabled", f != NULL, "parser",
                     f ? json_string(f) : json_null(), "flag", "--reasoning-parser");
}

/* A fleet waiver as the report shows it: {gate, reason, until, file, line, expired}. */
static json_t *waiver_json(const struct sw_fleet_waiver *w)
{
    char today[11];
    bool expired = !sw_gate_today(NULL, today, NULL) && strcmp(w->until, today) < 0;
    return json_pack("{s:s,s:s,s:s,s:s,s:i,s:b}", "gate", w->gate, "reason", w->reason, "until",
                     w->until, "file", w->at.file ? w->at.file : "", "line", w->at.line, "expired",
                     expired);
}

/* The compaction requests of every contextWindow the harness uses, against window W. */
static json_t *compaction(const struct sw_fleet *f, uint64_t W, bool *all_fit)
{
    const struct sw_fleet_harness *h = &f->harness;
    uint64_t wins[64];
    size_t nw = sw_fleet_harness_windows(h, wins, SW_ARRAY_LEN(wins));
    *all_fit = true;
    json_t *reqs = json_array();
    if (!reqs)
        return NULL;
    double ratio = h->compaction_ratio.set ? h->compaction_ratio.v : 0;
    uint64_t sum = h->summary_budget.set ? h->summary_budget.v : 0;
    for (size_t i = 0; i < nw; i++) {
        uint64_t at = (uint64_t)ceil((double)wins[i] * ratio - 1e-9);
        uint64_t req = at + sum;
        bool ok = req <= W;
        *all_fit &= ok;
        json_t *x =
            json_pack("{s:I,s:I,s:I,s:b}", "context_window", (json_int_t)wins[i], "starts_at",
                      (json_int_t)at, "request_tokens", (json_int_t)req, "fits", ok);
        /* a request that does not fit, accepted on purpose: the gates' own rule says which */
        const struct sw_fleet_waiver *w =
            ok ? NULL : sw_gate_waiver(h->compaction_endpoint, "window", NULL);
        if (x && w)
            sw_json_set_new(x, "waiver", waiver_json(w));
        if (!x || json_array_append_new(reqs, x)) {
            json_decref(reqs);
            return NULL;
        }
    }
    return json_pack("{s:s,s:I,s:f,s:I,s:o}", "endpoint", h->compaction_endpoint->name, "window",
                     (json_int_t)W, "ratio", ratio, "summary_budget", (json_int_t)sum, "requests",
                     reqs);
}

int sw__rep_harness_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                             const struct sw_plan *p, bool planned, json_t **out)
{
    struct sw__rep_window w;
    int rc = 0;
    json_t *h = json_object();
    if (!h)
        return SW_ENOMEM;
    bool has_w = !sw__rep_window(ep, p, planned, &w);
    const struct sw_fleet_u64 *cw = f ? sw_fleet_client_window(f, ep) : NULL;
    bool conf = cw && cw->set;
    sw__rep_put(h, "contextWindow", has_w ? json_integer((json_int_t)w.window) : json_null(), &rc);
    sw__rep_put(h, "window_source", json_string(has_w ? w.source : "no window: the plan failed"),
                &rc);
    sw__rep_put(h, "configured", conf ? json_integer((json_int_t)cw->v) : json_null(), &rc);
    sw__rep_put(h, "matches", conf && has_w ? json_boolean(cw->v == w.window) : json_null(), &rc);
    sw__rep_put(h, "fits", conf && has_w ? json_boolean(cw->v <= w.window) : json_null(), &rc);
    const struct sw_fleet_waiver *cwv =
        conf && has_w && cw->v > w.window ? sw_gate_waiver(ep, "window", NULL) : NULL;
    sw__rep_put(h, "waiver", cwv ? waiver_json(cwv) : json_null(), &rc);
    sw__rep_put(h, "reasoning", planned ? settings(ep, p, false) : json_null(), &rc);
    sw__rep_put(h, "tools", planned ? settings(ep, p, true) : json_null(), &rc);
    bool fit = true;
    if (f && f->harness.present && f->harness.compaction_endpoint == ep && has_w)
        sw__rep_put(h, "compaction", compaction(f, w.window, &fit), &rc);
    else
        sw__rep_put(h, "compaction", json_null(), &rc);
    if (rc) {
        json_decref(h);
        return rc;
    }
    *out = h;
    return 0;
}

/* What the last battery said about a check, "pass" | "fail" | "skip", or NULL. */
static const char *battery_says(const json_t *led, const char *check)
{
    const json_t *runs = json_object_get(led, "battery_runs");
    size_t n = json_array_size(runs);
    if (!n)
        return NULL;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_array_get(runs, n - 1), "checks"), i, c)
    {
        const char *nm = json_string_value(json_object_get(c, "name"));
        if (nm && !strcmp(nm, check))
            return json_string_value(json_object_get(c, "status"));
    }
    return NULL;
}

/* A line that does not fit holds all the same under a waiver that has not expired. */
static bool waived(const json_t *w)
{
    return json_is_object(w) && !json_is_true(json_object_get(w, "expired"));
}

int sw_export_harness(const struct sw_fleet *f, const struct sw_report_opts *o, json_t **out,
                      struct sw_err *e)
{
    int rc = 0;
    bool ok = true;
    json_t *doc = json_object(), *eps = json_array(), *comp = NULL;
    *out = NULL;
    if (!doc || !eps) {
        json_decref(doc);
        json_decref(eps);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < f->n_endpoints && !rc; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        struct sw_plan p;
        struct sw_err pe;
        json_t *h = NULL, *led = NULL;
        memset(&p, 0, sizeof(p));
        sw_err_clear(&pe);
        if (!ep->enabled)
            continue;
        bool planned = !sw_plan_endpoint(f, ep, NULL, &p, &pe);
        rc = !planned && pe.code == SW_ENOMEM ? SW_ENOMEM : 0;
        if (!rc)
            rc = sw__rep_harness_endpoint(f, ep, &p, planned, &h);
        if (!rc)
            rc = sw__rep_ledger_rows(o ? o->ledger : NULL, ep->name, &led, e);
        if (!rc) {
            const char *r = battery_says(led, "reasoning"), *t = battery_says(led, "tool_calls");
            json_t *hr = json_object_get(h, "reasoning"), *ht = json_object_get(h, "tools");
            if (json_is_object(hr))
                sw__rep_put(hr, "battery", r ? json_string(r) : json_null(), &rc);
            if (json_is_object(ht))
                sw__rep_put(ht, "battery", t ? json_string(t) : json_null(), &rc);
            sw__rep_put(h, "name", json_string(ep->name), &rc);
            sw__rep_put(h, "engine", json_string(sw_fleet_engine_name(ep->engine)), &rc);
            if (!planned) {
                char why[512];
                sw__rep_put(h, "plan_error", json_string(sw_err_format(&pe, why, sizeof(why))),
                            &rc);
            }
            const json_t *fits = json_object_get(h, "fits");
            if (json_is_false(fits) && !waived(json_object_get(h, "waiver")))
                ok = false;
            json_t *c = json_object_get(h, "compaction");
            if (json_is_object(c)) {
                size_t k;
                json_t *q;
                json_array_foreach(json_object_get(c, "requests"), k, q)
                {
                    if (json_is_false(json_object_get(q, "fits")) &&
                        !waived(json_object_get(q, "waiver")))
                        ok = false;
                }
                json_decref(comp);
                comp = json_incref(c);
            }
            json_object_del(h, "compaction");
        }
        if (!rc && json_array_append_new(eps, h))
            rc = SW_ENOMEM;
        else if (rc)
            json_decref(h);
        json_decref(led);
        sw_plan_free(&p);
    }
    sw__rep_put(doc, "fleet", json_string(f->path ? f->path : ""), &rc);
    sw__rep_put(doc, "endpoints", eps, &rc);
    sw__rep_put(doc, "compaction", comp ? comp : json_null(), &rc);
    sw__rep_put(doc, "ok", json_boolean(ok), &rc);
    if (rc) {
        json_decref(doc);
        return e && e->code ? rc : sw_err_set(e, rc, "out of memory");
    }
    *out = doc;
    return 0;
}

int sw_export_harness_models_yml(const json_t *doc, const char *fleet_path, struct sw_buf *out,
                                 struct sw_err *e)
{
    int rc = sw_buf_puts(out, "# models.yml for the client harness, written by slipway from ");
    if (!rc)
        rc = sw_buf_line(out, fleet_path ? fleet_path : "(fleet)");
    if (!rc)
        rc = sw_buf_puts(out, ".\n# contextWindow is each endpoint's REAL window (its slot or "
                              "request window from the plan):\n# a longer prompt is a hard HTTP "
                              "400. The harness's other keys are its own.\nmodels:\n");
    size_t i, n = 0;
    json_t *ep;
    json_array_foreach(json_object_get(doc, "endpoints"), i, ep)
    {
        const char *name = json_string_value(json_object_get(ep, "name"));
        const json_t *cw = json_object_get(ep, "contextWindow");
        if (!name || rc)
            continue;
        rc = sw_buf_puts(out, "  ");
        if (!rc)
            rc = sw_buf_yaml_str(out, name);
        if (!rc && json_is_integer(cw))
            rc = sw_buf_printf(out, ":\n    contextWindow: %lld\n",
                               (long long)json_integer_value(cw));
        else if (!rc)
            rc = sw_buf_puts(out, ":\n    # contextWindow: no window (the plan failed)\n");
        n++;
    }
    if (!rc && !n)
        rc = sw_buf_puts(out, "  {}\n");
    return rc ? sw_err_set(e, rc, "out of memory") : 0;
}
