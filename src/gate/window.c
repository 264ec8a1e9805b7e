/*
 * gate/window: the request window (llama.cpp slots that cannot share a cache: pool / slots; else
 * one request's max_model_len) against the client harness's contextWindow for this endpoint, and,
 * on the endpoint that serves compaction, every contextWindow the harness compacts there
 * (ceil(window x compaction_ratio) + summary_budget) against one request window.
 *
 * What it deliberately does not do: judge the pool (pool.c), or read the harness's own files (the
 * fleet's `harness:` is the contract).
 */
#include "gate_internal.h"

#include <math.h>

static uint64_t cdiv(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : 0;
}

int sw__gate_window(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_fleet_harness *h = &r->f->harness;
    char a[64], b[64], c[64], d[64], x[64];
    (void)e;
    if (!h->present) {
        sw__gate_add(r, "window", SW_GATE_SKIP, "the fleet declares no client harness");
        return 0;
    }
    if (!p->ok) {
        sw__gate_add(r, "window", SW_GATE_SKIP, "the law could not run: %s", p->why);
        return 0;
    }
    uint64_t W = p->maxlen;
    const char *what = p->engine == SW_FLEET_LLAMACPP && !p->shared
                           ? "slot window (pool / slots: these slots cannot share a cache)"
                           : "request window";
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(r->f, r->ep);
    if (cw && cw->set) {
        bool ok = cw->v <= W;
        json_t *g = sw__gate_add(r, "window", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                                 "client contextWindow %s %s the %s of %s tokens%s",
                                 sw_fmt_count(cw->v, a, sizeof(a)), ok ? "fits" : "exceeds", what,
                                 sw_fmt_count(W, b, sizeof(b)),
                                 ok ? "" : ": a longer prompt is refused (HTTP 400)");
        sw__gate_num(g, "context_window", (double)cw->v);
        sw__gate_num(g, "window", (double)W);
        if (!ok) {
            if (p->engine == SW_FLEET_LLAMACPP && !p->shared)
                sw__gate_fix(g,
                             "set the harness contextWindow for %s to %s, or ctx_size to %s "
                             "(%s slots x %s)",
                             r->ep->name, sw_fmt_count(W, a, sizeof(a)),
                             sw_fmt_count(p->slots * cdiv(cw->v, 256) * 256, b, sizeof(b)),
                             sw_fmt_count(p->slots, c, sizeof(c)),
                             sw_fmt_count(cdiv(cw->v, 256) * 256, d, sizeof(d)));
            else
                sw__gate_fix(g,
                             "set the harness contextWindow for %s to %s, or max_model_len to "
                             "%s",
                             r->ep->name, sw_fmt_count(W, a, sizeof(a)),
                             sw_fmt_count(cw->v, b, sizeof(b)));
        }
    }
    if (h->compaction_endpoint != r->ep)
        return 0;
    /* The conversations compacted here: every contextWindow the harness uses. */
    uint64_t wins[64];
    size_t nw = sw_fleet_harness_windows(h, wins, SW_ARRAY_LEN(wins));
    if (!h->compaction_ratio.set || !h->summary_budget.set) {
        sw__gate_add(r, "window", SW_GATE_SKIP,
                     "%s serves compaction, but the harness states no compaction_ratio or "
                     "summary_budget",
                     r->ep->name);
        return 0;
    }
    double ratio = h->compaction_ratio.v;
    uint64_t sum = h->summary_budget.v;
    for (size_t i = 0; i < nw; i++) {
        uint64_t at = (uint64_t)ceil((double)wins[i] * ratio - 1e-9);
        uint64_t req = at + sum;
        bool ok = req <= W;
        json_t *g = sw__gate_add(
            r, "window", ok ? SW_GATE_PASS : SW_GATE_FAIL,
            "compaction of a %s contextWindow: %s x %.2f + %s summary budget = %s tokens %s one %s "
            "of %s tokens on %s",
            sw_fmt_count(wins[i], a, sizeof(a)), sw_fmt_count(wins[i], b, sizeof(b)), ratio,
            sw_fmt_count(sum, c, sizeof(c)), sw_fmt_count(req, d, sizeof(d)),
            ok ? "fit" : "do not fit",
            p->engine == SW_FLEET_LLAMACPP && !p->shared ? "slot" : "request window",
            sw_fmt_count(W, x, sizeof(x)), r->ep->name);
        sw__gate_str(g, "check", "compaction");
        sw__gate_num(g, "context_window", (double)wins[i]);
        sw__gate_num(g, "compaction_ratio", ratio);
        sw__gate_num(g, "summary_budget", (double)sum);
        sw__gate_num(g, "request_tokens", (double)req);
        sw__gate_num(g, "window", (double)W);
        if (!ok) {
            uint64_t maxcw = W > sum ? (uint64_t)floor((double)(W - sum) / ratio + 1e-9) : 0;
            while (maxcw && (uint64_t)ceil((double)maxcw * ratio - 1e-9) + sum > W)
                maxcw--;
            if (p->engine == SW_FLEET_LLAMACPP && !p->shared)
                sw__gate_fix(g,
                             "give %s slots of >= %s tokens (ctx_size %s for %s slots), or "
                             "keep the compacted contextWindow <= %s",
                             r->ep->name, sw_fmt_count(cdiv(req, 256) * 256, a, sizeof(a)),
                             sw_fmt_count(p->slots * cdiv(req, 256) * 256, b, sizeof(b)),
                             sw_fmt_count(p->slots, c, sizeof(c)),
                             sw_fmt_count(maxcw, d, sizeof(d)));
            else
                sw__gate_fix(g,
                             "raise max_model_len on %s to >= %s, or keep the compacted "
                             "contextWindow <= %s",
                             r->ep->name, sw_fmt_count(req, a, sizeof(a)),
                             sw_fmt_count(maxcw, b, sizeof(b)));
        }
    }
    return 0;
}
