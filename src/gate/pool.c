/*
 * gate/pool: the pool holds the contract, SEQS requests of MAXLEN tokens at once at this
 * geometry's real price (the plan view's pool and price per token), with the stated margin; or,
 * when the endpoint declares its contract (`contract: {full_length: N}`), N requests of MAXLEN
 * (slots beyond N buy headroom, not full-length requests), and the verdict says which it held.
 * A fix is offered only within the endpoint's knobs (a setting with a knob range moves inside
 * it; a frozen one does not move).
 *   llama.cpp  the -c cells over the slots (padded to 256), one pool shared or one window each;
 *   SGLang     max_total_num_tokens shared by the requests, and the request cap the mamba pool
 *              sets (slots / 3 with the radix cache on);
 *   vLLM       whole blocks: the printed figure of a boot of this very shape, else the
 *              calibration's block law (every solution the recorded boots allow), else the law;
 *              a pool the engine sizes at boot is held against what the fork's arena leaves.
 *
 * What it deliberately does not do: fit the block law (calib), or judge free memory (band.c) or
 * the window (window.c).
 */
#include "gate_internal.h"

#include <math.h>
#include <string.h>

/* The contract's figures every engine's verdict carries (slots, the request window, the pool's
 * KV and state bytes). */
static void contract_numbers(json_t *g, const struct sw_plan_view *p)
{
    sw__gate_num(g, "slots", (double)p->slots);
    sw__gate_num(g, "window", (double)p->maxlen);
    sw__gate_num(g, "kv_bytes", (double)p->kv_bytes);
    sw__gate_num(g, "recurrent_bytes", (double)p->recurrent_bytes);
}

/* The contract the pool is judged by: the declared full_length, else every slot at MAXLEN. */
struct contract {
    uint64_t n;    /* requests of MAXLEN that must fit at once */
    bool declared; /* from the fleet's contract: */
    char words[200];
};

static void contract_of(const struct sw__gate_run *r, struct contract *k)
{
    const struct sw_fleet_u64 *fl = &r->ep->contract.full_length;
    char a[48], b[48];
    k->declared = fl->set;
    k->n = fl->set ? fl->v : r->plan.slots;
    if (k->declared)
        snprintf(k->words, sizeof(k->words),
                 "the declared contract %s x %s (contract.full_length, %s:%d)",
                 sw_fmt_count(k->n, a, sizeof(a)), sw_fmt_count(r->plan.maxlen, b, sizeof(b)),
                 fl->at.file ? fl->at.file : "fleet", fl->at.line);
    else
        snprintf(k->words, sizeof(k->words), "the contract %s x %s",
                 sw_fmt_count(k->n, a, sizeof(a)), sw_fmt_count(r->plan.maxlen, b, sizeof(b)));
}

static void contract_mark(json_t *g, const struct contract *k)
{
    sw__gate_num(g, "contract_requests", (double)k->n);
    sw__gate_str(g, "contract", k->declared ? "declared" : "seqs x max_model_len");
}

/* May a fix move `name` to v? Not when it is frozen; within its knob when it has one (a range:
 * min..max; a set: one of its values); free when it has no knob. */
static bool knob_allows(const struct sw_fleet_endpoint *ep, const char *name, uint64_t v)
{
    if (sw_fleet_endpoint_frozen(ep, name))
        return false;
    const struct sw_fleet_knob *kb = sw_fleet_endpoint_knob(ep, name);
    if (!kb)
        return true;
    if (kb->type != SW_FLEET_V_COUNT && kb->type != SW_FLEET_V_BYTES)
        return true;
    if (kb->is_range)
        return (!kb->min.set || v >= kb->min.u) && (!kb->max.set || v <= kb->max.u);
    for (size_t i = 0; i < kb->n_values; i++)
        if (kb->values[i].u == v)
            return true;
    return false;
}

/* The fix: `raise` (a setting `key` moved up to `to`), and/or "cut seqs to `fit`", each only when
 * the endpoint's knobs allow it; seqs is no remedy under a declared contract (it is not the
 * need). When neither is allowed the fix says so, and what would be needed. */
static void pool_fix(json_t *g, const struct sw__gate_run *r, const struct contract *k,
                     const char *raise, const char *key, uint64_t to, uint64_t fit)
{
    char a[64], b[64];
    const struct sw_fleet_endpoint *ep = r->ep;
    bool up = raise && to && knob_allows(ep, key, to);
    bool cut = !k->declared && fit >= 1 && fit < r->plan.slots && knob_allows(ep, "seqs", fit);
    if (up || cut) {
        sw__gate_fix(g, "%s%s%s%s", up ? raise : "", up && cut ? ", or " : "",
                     cut ? "cut seqs to " : "", cut ? sw_fmt_count(fit, a, sizeof(a)) : "");
        return;
    }
    const struct sw_fleet_knob *kb = sw_fleet_endpoint_knob(ep, key);
    bool above = kb && kb->is_range && kb->max.set;
    sw__gate_fix(g,
                 "no setting within this endpoint's knobs holds %s: %s would need %s%s%s%s; "
                 "cut max_model_len%s",
                 k->words, key, sw_fmt_count(to, a, sizeof(a)),
                 sw_fleet_endpoint_frozen(ep, key) ? " (frozen)" : "",
                 above ? ", above its knob's max " : "",
                 above ? sw_fmt_count(kb->max.u, b, sizeof(b)) : "",
                 k->declared ? ""
                             : ", or state the contract the slots serve "
                               "(contract: {full_length: N})");
}

static void pool_llamacpp(struct sw__gate_run *r, double margin)
{
    const struct sw_plan_view *p = &r->plan;
    char a[64], b[64], c[64], d[64], x[64], fx[200];
    struct contract k;
    contract_of(r, &k);
    /* slots that cannot share a cache each hold a full window, whatever the contract says */
    uint64_t nreq = p->shared ? k.n : p->slots;
    uint64_t need = (uint64_t)ceil((double)nreq * (double)p->maxlen * (1 + margin));
    bool ok = p->pool_tokens >= need;
    json_t *g = sw__gate_add(
        r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
        "%s cells %s %s slots x %s tokens%s: %s of KV at %.0f B/token (%s)%s%s%s%s",
        sw_fmt_count(p->pool_tokens, a, sizeof(a)), ok ? "hold" : "do not hold",
        sw_fmt_count(p->slots, b, sizeof(b)), sw_fmt_count(p->maxlen, c, sizeof(c)),
        p->shared ? " (one pool shared by the slots)" : " (one window per slot)",
        sw__gate_gib((double)p->kv_bytes, d, sizeof(d)), p->kv_price, p->price_how,
        p->recurrent_bytes ? ", + recurrent state " : "",
        p->recurrent_bytes ? sw__gate_mib((double)p->recurrent_bytes, x, sizeof(x)) : "",
        k.declared ? "; held as " : "", k.declared ? k.words : "");
    sw__gate_num(g, "pool_tokens", (double)p->pool_tokens);
    contract_numbers(g, p);
    contract_mark(g, &k);
    sw__gate_num(g, "price_bytes_per_token", p->kv_price);
    sw__gate_num(g, "margin", margin);
    if (!ok) {
        snprintf(fx, sizeof(fx), "ctx_size %s (%s slots x %s)", sw_fmt_count(need, a, sizeof(a)),
                 sw_fmt_count(nreq, b, sizeof(b)), sw_fmt_count(p->maxlen, c, sizeof(c)));
        pool_fix(g, r, &k, fx, "ctx_size", need, 0);
    }
}

/* A hybrid runs at most mamba slots / 3 requests (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO):
 * fewer than seqs and the contract is not served however large the pool. */
static void sglang_request_cap(struct sw__gate_run *r)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_sglang_report *sr = p->plan.sglang;
    char a[64];
    if (!sr->mamba_cache_per_req || (uint64_t)sr->max_running_requests >= p->slots)
        return;
    json_t *g = sw__gate_add(
        r, "pool", SW_GATE_FAIL,
        "the engine runs %lld requests, not %s: %lld mamba slots allow "
        "%lld (SGLang keeps 3 slots per running request with the radix "
        "cache on)",
        (long long)sr->max_running_requests, sw_fmt_count(p->slots, a, sizeof(a)),
        (long long)sr->max_mamba_cache_size,
        (long long)(sr->max_mamba_cache_size / (p->plan.sglang_opts->disable_radix_cache ? 1 : 3)));
    sw__gate_str(g, "source", "law");
    sw__gate_num(g, "max_running_requests", (double)sr->max_running_requests);
    sw__gate_fix(g, "max_mamba_cache_size %s (3 x seqs)", sw_fmt_count(3 * p->slots, a, sizeof(a)));
}

static void pool_sglang(struct sw__gate_run *r, double margin)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_sglang_report *sr = p->plan.sglang;
    char a[64], b[64], c[64], d[64], x[64], fx[240];
    struct contract k;
    if (p->slots == 0 || p->maxlen == 0) {
        sw__gate_add(r, "pool", SW_GATE_SKIP,
                     "seqs or max_model_len is not set: no contract to hold");
        return;
    }
    contract_of(r, &k);
    uint64_t need = (uint64_t)ceil((double)k.n * (double)p->maxlen * (1 + margin));
    bool ok = p->pool_tokens >= need;
    json_t *g =
        sw__gate_add(r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                     "%s tokens %s %s requests x %s tokens%s (one pool shared by the "
                     "requests): %s of KV at %.0f B/token (%s), + %lld mamba slots %s%s%s",
                     sw_fmt_count(p->pool_tokens, a, sizeof(a)), ok ? "hold" : "do not hold",
                     sw_fmt_count(k.n, b, sizeof(b)), sw_fmt_count(p->maxlen, c, sizeof(c)),
                     margin > 0 ? " + margin" : "", sw__gate_gib((double)p->kv_bytes, d, sizeof(d)),
                     p->kv_price, p->price_how, (long long)sr->max_mamba_cache_size,
                     sw__gate_mib((double)p->recurrent_bytes, x, sizeof(x)),
                     k.declared ? "; held as " : "", k.declared ? k.words : "");
    contract_mark(g, &k);
    /* unpinned, the pool is the engine's autofit (from the measured autofit_tokens): a
     * ceiling, since SGLang caps --max-total-tokens at it; only the contract can move */
    const char *from = json_string_value(json_object_get(p->plan.predicted, "pool_from"));
    sw__gate_str(g, "source",
                 from && !p->pinned ? "law, the autofit from measured autofit_tokens" : "law");
    if (!p->pinned)
        sw__gate_num(g, "autofit", 1);
    sw__gate_num(g, "pool_tokens", (double)p->pool_tokens);
    sw__gate_num(g, "need_tokens", (double)need);
    contract_numbers(g, p);
    sw__gate_num(g, "mamba_slots", (double)sr->max_mamba_cache_size);
    sw__gate_num(g, "price_bytes_per_token", p->kv_price);
    sw__gate_num(g, "margin", margin);
    if (!ok && p->pinned) {
        snprintf(fx, sizeof(fx), "max_total_tokens %s (%s requests x %s)",
                 sw_fmt_count(need, a, sizeof(a)), sw_fmt_count(k.n, b, sizeof(b)),
                 sw_fmt_count(p->maxlen, c, sizeof(c)));
        pool_fix(g, r, &k, fx, "max_total_tokens", need, p->pool_tokens / p->maxlen);
    } else if (!ok)
        sw__gate_fix(
            g,
            "the engine's autofit is the largest pool this card gives (a larger "
            "max_total_tokens is capped to it): cut seqs to %s, or max_model_len to "
            "%s",
            sw_fmt_count(p->pool_tokens / p->maxlen, a, sizeof(a)),
            sw_fmt_count((uint64_t)floor((double)p->pool_tokens / (1 + margin) / (double)k.n), b,
                         sizeof(b)));
    sglang_request_cap(r);
}

/* vLLM's need: whole blocks. A request of L tokens takes blocks_per_request blocks (attention
 * blocks + the per-request state blocks); the pool holds num_gpu_blocks. */
struct vneed {
    struct contract k; /* n requests of MAXLEN; declared or seqs */
    double margin;
    uint64_t bpr, need_blocks;
    double need_bytes;
    /* the calibrated block law of this KV class (every solution consistent with the recorded
     * boots): the pool that holds SEQS x MAXLEN whatever the free terms are */
    const struct sw_calib_kv_fit *cls;
    uint64_t c_lo, c_hi;
    bool c_extr, have_c;
    char src[400]; /* where the need comes from, for the verdict line */
};

static void vllm_need(const struct sw__gate_run *r, struct vneed *n)
{
    const struct sw_plan_view *p = &r->plan;
    char t[2][48];
    n->bpr = (uint64_t)p->vr->blocks_per_request;
    n->need_blocks = (uint64_t)ceil((double)(n->k.n * n->bpr) * (1 + n->margin));
    n->need_bytes = (double)n->need_blocks * (double)p->stride;
    n->cls = r->fit ? sw_calib_kv_class(r->fit, r->shape) : NULL;
    if (n->cls && n->cls->consistent && n->cls->n_solutions > 0 &&
        sw_calib_kv_need(n->cls, (int64_t)p->maxlen, (int64_t)n->k.n, &n->c_lo, &n->c_hi,
                         &n->c_extr, NULL) == 0 &&
        n->c_hi > 0)
        n->have_c = true;
    if (n->have_c) {
        n->need_bytes = (double)n->c_hi * (1 + n->margin);
        snprintf(n->src, sizeof(n->src),
                 "calibrated: %s..%s over the %lld block-law solutions that reproduce %d boots of "
                 "class %s%s",
                 sw__gate_gib((double)n->c_lo, t[0], 48), sw__gate_gib((double)n->c_hi, t[1], 48),
                 (long long)n->cls->n_solutions, n->cls->n_points, n->cls->klass,
                 n->c_extr ? "; EXTRAPOLATES: this max_model_len was not fitted" : "");
    } else {
        snprintf(n->src, sizeof(n->src),
                 "%s blocks: %s, by the law as the fleet declares the "
                 "model",
                 sw_fmt_count(n->need_blocks, t[0], 48), p->price_how);
    }
}

/* The engine sizes the pool at boot. A fork that declares its arena leaves the pool (and graphs,
 * activations) the room the arena does not take; without one the gate cannot judge. */
static void vllm_engine_sized(struct sw__gate_run *r, const struct vneed *n)
{
    const struct sw_plan_view *p = &r->plan;
    char a[64], b[64], c[64], x[64], t[3][48];
    json_t *g;
    if (!p->has_arena) {
        g = sw__gate_add(r, "pool", SW_GATE_SKIP,
                         "the pool is sized by the engine at boot (no kv_cache_bytes): %s x %s "
                         "tokens need %s per rank (%s); pin kv_cache_bytes to check it here",
                         sw_fmt_count(p->slots, a, sizeof(a)),
                         sw_fmt_count(p->maxlen, b, sizeof(b)),
                         sw__gate_gib(n->need_bytes, c, sizeof(c)), p->price_how);
        sw__gate_num(g, "need_bytes", n->need_bytes);
        return;
    }
    const struct sw_arena *ar = &p->arena;
    double room = (double)ar->overhead_bytes + (double)ar->reserve_bytes - (double)p->prof.adjust -
                  (double)p->prof.graphs;
    bool ok = n->need_bytes <= room;
    g = sw__gate_add(r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                     "%s x %s tokens ask %s of KV per rank (%s); the fork leaves %s for "
                     "the pool (overhead %s + reserve %s - graphs %s, profile %s)%s%s",
                     sw_fmt_count(n->k.n, a, sizeof(a)), sw_fmt_count(p->maxlen, b, sizeof(b)),
                     sw__gate_gib(n->need_bytes, c, sizeof(c)), n->src,
                     sw__gate_gib(room, x, sizeof(x)),
                     sw__gate_gib((double)ar->overhead_bytes, t[0], 48),
                     sw__gate_gib((double)ar->reserve_bytes, t[1], 48),
                     sw__gate_gib((double)p->prof.graphs, t[2], 48), p->prof.name,
                     n->k.declared ? "; held as " : "", n->k.declared ? n->k.words : "");
    contract_mark(g, &n->k);
    sw__gate_num(g, "need_bytes", n->need_bytes);
    sw__gate_num(g, "room_bytes", room);
    sw__gate_str(g, "source", n->have_c ? "calibrated" : "law");
    sw__gate_num(g, "blocks_per_request", (double)n->bpr);
    sw__gate_num(g, "block_bytes", (double)p->stride);
    if (!ok) {
        double per_req = n->need_bytes / (double)n->k.n;
        uint64_t fit = room > 0 && per_req > 0 ? (uint64_t)(room / per_req) : 0;
        bool cut = !n->k.declared && fit >= 1 && knob_allows(r->ep, "seqs", fit);
        sw__gate_fix(g, "%s%s%scut max_model_len, or pin kv_cache_bytes below %s and %s",
                     cut ? "cut seqs to " : "", cut ? sw_fmt_count(fit, a, sizeof(a)) : "",
                     cut ? ", or " : "", sw__gate_gib(room, b, sizeof(b)),
                     n->k.declared ? "declare fewer full-length requests (contract.full_length)"
                                   : "accept fewer full-length requests");
    }
}

/* The newest boot of this very shape that printed its token count, or NULL. */
static const json_t *printed_boot(const struct sw__gate_run *r)
{
    const json_t *pb = NULL;
    for (size_t i = 0; i < json_array_size(r->boots); i++) {
        const json_t *bt = json_array_get(r->boots, i);
        const json_t *rep = json_object_get(bt, "report");
        const json_t *canon = json_object_get(json_object_get(bt, "shape"), "canonical");
        if (json_is_integer(json_object_get(rep, "kv_cache_tokens")) && canon &&
            sw_gate_same_shape(canon, r->shape))
            pb = bt;
    }
    return pb;
}

/* What a boot of this very shape printed beats the law: the engine's own arithmetic, where the
 * law may lack a fork's terms or the model's true dimensions. */
static void vllm_measured(struct sw__gate_run *r, const struct vneed *n, double margin,
                          const json_t *pb)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_vllm_report *vr = p->vr;
    const json_t *prep = json_object_get(pb, "report");
    char a[64], b[64], c[64], d[64], x[64], t[48];
    double tok = (double)json_integer_value(json_object_get(prep, "kv_cache_tokens"));
    double need_tok = (double)n->k.n * (double)p->maxlen * (1 + margin);
    double conc = tok / (double)p->maxlen;
    bool pok = tok >= need_tok;
    double off = vr->kv_cache_tokens ? 100.0 * ((double)vr->kv_cache_tokens - tok) / tok : 0;
    json_t *g = sw__gate_add(
        r, "pool", pok ? SW_GATE_PASS : SW_GATE_FAIL,
        "boot #%lld of this shape printed %s tokens = %.2fx of %s-token requests; %s%s needs "
        "%s tokens (the law as the fleet declares the model predicts %s, %+.1f%%%s)",
        (long long)json_integer_value(json_object_get(pb, "id")),
        sw_fmt_count((uint64_t)tok, a, 64), conc, sw_fmt_count(p->maxlen, b, sizeof(b)), n->k.words,
        margin > 0 ? " + margin" : "", sw_fmt_count((uint64_t)need_tok, x, sizeof(x)),
        sw_fmt_count((uint64_t)vr->kv_cache_tokens, t, 48), off,
        fabs(off) > 0.5 ? ": calibrate it" : "");
    sw__gate_str(g, "source", "measured");
    contract_mark(g, &n->k);
    sw__gate_num(g, "kv_cache_tokens", tok);
    sw__gate_num(g, "max_concurrency", conc);
    sw__gate_num(g, "need_tokens", need_tok);
    sw__gate_num(g, "law_kv_cache_tokens", (double)vr->kv_cache_tokens);
    sw__gate_evidence(g, json_pack("{s:I,s:O}", "boot",
                                   json_integer_value(json_object_get(pb, "id")), "report", prep));
    if (!pok) {
        char fx[240];
        double per_tok = (double)vr->available_kv_bytes / tok;
        double more = (need_tok - tok) * per_tok;
        snprintf(fx, sizeof(fx),
                 "raise kv_cache_bytes by about %s (%.0f B per printed token) to hold %s x %s",
                 sw__gate_mib(more, a, sizeof(a)), per_tok, sw_fmt_count(n->k.n, b, sizeof(b)),
                 sw_fmt_count(p->maxlen, c, sizeof(c)));
        (void)d;
        pool_fix(g, r, &n->k, fx, "kv_cache_bytes",
                 (uint64_t)ceil((double)r->ep->shape.kv_cache_bytes.v + more),
                 (uint64_t)floor(conc));
    }
}

/* The calibrated block law: the tokens this pool holds over every solution, against the need. */
static void vllm_calibrated(struct sw__gate_run *r, const struct vneed *n)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_vllm_report *vr = p->vr;
    char a[64], b[64], c[64], d[64], t[3][48];
    struct sw_calib_kv_pred cp;
    uint64_t pool = vr->available_kv_bytes;
    bool ok = (double)pool >= n->need_bytes;
    memset(&cp, 0, sizeof(cp));
    sw_calib_kv_predict(n->cls, (int64_t)p->maxlen, pool, &cp, NULL);
    json_t *g = sw__gate_add(r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                             "kv_cache_bytes %s per rank holds %s..%s tokens = %.2f..%.2fx of "
                             "%s-token requests; %s%s needs %s (%s)",
                             sw__gate_gib((double)pool, a, sizeof(a)),
                             sw_fmt_count((uint64_t)cp.tokens.lo, b, sizeof(b)),
                             sw_fmt_count((uint64_t)cp.tokens.hi, c, sizeof(c)), cp.conc_lo,
                             cp.conc_hi, sw_fmt_count(p->maxlen, d, sizeof(d)), n->k.words,
                             n->margin > 0 ? " + margin" : "",
                             sw__gate_gib(n->need_bytes, t[0], 48), n->src);
    sw__gate_str(g, "source", "calibrated");
    contract_mark(g, &n->k);
    sw__gate_num(g, "kv_cache_bytes", (double)pool);
    sw__gate_num(g, "kv_cache_tokens_lo", (double)cp.tokens.lo);
    sw__gate_num(g, "kv_cache_tokens_hi", (double)cp.tokens.hi);
    sw__gate_num(g, "need_bytes", n->need_bytes);
    sw__gate_num(g, "need_bytes_lo", (double)n->c_lo);
    sw__gate_num(g, "law_kv_cache_tokens", (double)vr->kv_cache_tokens);
    if (n->c_extr)
        sw__gate_num(g, "extrapolated", 1);
    if (!ok) {
        char fx[240];
        snprintf(fx, sizeof(fx),
                 "raise kv_cache_bytes to %s (+%s) to hold %s x %s whatever the fitted terms are",
                 sw_fmt_count((uint64_t)ceil(n->need_bytes), a, sizeof(a)),
                 sw__gate_mib(n->need_bytes - (double)pool, b, sizeof(b)),
                 sw_fmt_count(n->k.n, c, sizeof(c)), sw_fmt_count(p->maxlen, d, sizeof(d)));
        pool_fix(g, r, &n->k, fx, "kv_cache_bytes", (uint64_t)ceil(n->need_bytes),
                 (uint64_t)floor(cp.conc_lo));
    }
}

/* The law as the fleet declares the model: whole blocks against num_gpu_blocks. */
static void vllm_law(struct sw__gate_run *r, const struct vneed *n)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_vllm_report *vr = p->vr;
    char a[64], b[64], c[64], d[64], t[3][48];
    bool ok = (uint64_t)vr->num_gpu_blocks >= n->need_blocks;
    json_t *g = sw__gate_add(
        r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
        "kv_cache_bytes %s per rank holds %s blocks = %s tokens = %.2fx of %s-token requests "
        "(%s); %s%s needs %s blocks = %s",
        sw__gate_gib((double)vr->available_kv_bytes, a, sizeof(a)),
        sw_fmt_count((uint64_t)vr->num_gpu_blocks, b, sizeof(b)),
        sw_fmt_count((uint64_t)vr->kv_cache_tokens, c, sizeof(c)), vr->max_concurrency,
        sw_fmt_count(p->maxlen, d, sizeof(d)), p->price_how, n->k.words,
        n->margin > 0 ? " + margin" : "", sw_fmt_count(n->need_blocks, t[1], 48),
        sw__gate_gib(n->need_bytes, t[2], 48));
    contract_mark(g, &n->k);
    sw__gate_num(g, "kv_cache_bytes", (double)vr->available_kv_bytes);
    sw__gate_num(g, "num_gpu_blocks", (double)vr->num_gpu_blocks);
    sw__gate_num(g, "kv_cache_tokens", (double)vr->kv_cache_tokens);
    sw__gate_num(g, "max_concurrency", vr->max_concurrency);
    sw__gate_num(g, "blocks_per_request", (double)n->bpr);
    sw__gate_num(g, "block_bytes", (double)p->stride);
    sw__gate_num(g, "need_blocks", (double)n->need_blocks);
    sw__gate_num(g, "need_bytes", n->need_bytes);
    sw__gate_num(g, "price_bytes_per_token", p->kv_price);
    sw__gate_num(g, "margin", n->margin);
    if (!ok) {
        char fx[240];
        uint64_t fit = n->bpr ? (uint64_t)vr->num_gpu_blocks / n->bpr : 0;
        snprintf(fx, sizeof(fx), "raise kv_cache_bytes to %s (+%s) to hold %s x %s",
                 sw_fmt_count((uint64_t)n->need_bytes, a, sizeof(a)),
                 sw__gate_mib(n->need_bytes - (double)vr->available_kv_bytes, b, sizeof(b)),
                 sw_fmt_count(n->k.n, c, sizeof(c)), sw_fmt_count(p->maxlen, d, sizeof(d)));
        pool_fix(g, r, &n->k, fx, "kv_cache_bytes", (uint64_t)n->need_bytes, fit);
    }
}

static void pool_vllm(struct sw__gate_run *r, double margin)
{
    struct vneed n;
    memset(&n, 0, sizeof(n));
    n.margin = margin;
    if (r->plan.slots == 0) {
        sw__gate_add(r, "pool", SW_GATE_SKIP, "seqs is not set: no contract to hold");
        return;
    }
    contract_of(r, &n.k);
    vllm_need(r, &n);
    const json_t *pb = r->plan.pinned ? printed_boot(r) : NULL;
    if (!r->plan.pinned)
        vllm_engine_sized(r, &n);
    else if (pb)
        vllm_measured(r, &n, margin, pb);
    else if (n.have_c)
        vllm_calibrated(r, &n);
    else
        vllm_law(r, &n);
}

int sw__gate_pool(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    double margin = r->o ? r->o->pool_margin : 0;
    (void)e;
    if (!p->ok) {
        sw__gate_add(r, "pool", SW_GATE_SKIP, "the law could not run: %s", p->why);
        return 0;
    }
    if (p->engine == SW_FLEET_LLAMACPP)
        pool_llamacpp(r, margin);
    else if (p->engine == SW_FLEET_SGLANG)
        pool_sglang(r, margin);
    else
        pool_vllm(r, margin);
    return 0;
}
