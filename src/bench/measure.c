/*
 * bench/measure: one request's instants, counts and derived figures from its chunk records, and
 * the reconciliation with the engine's own timings.
 *
 * A chunk is not a token. When the engine puts a cumulative count in every chunk (llama.cpp's
 * timings_per_token, vLLM's continuous usage), a chunk brings exactly (count - previous count)
 * tokens, all arriving at the chunk's instant; otherwise only the final total is known, and
 * per-token gaps are recorded only when the token-bearing chunks are exactly as many as the
 * tokens (one token each, no doubt left). Reasoning tokens count like content tokens; the first
 * token of either kind is the TTFT, the first content token the TTFC.
 *
 * What it deliberately does not do: send anything (run.c does), or guess a token count from
 * text length.
 */
#include <slipway/bench.h>

#include <math.h>
#include <string.h>

const char *sw_bench_count_src_name(enum sw_bench_count_src s)
{
    switch (s) {
    case SW_BENCH_COUNT_PER_CHUNK:
        return "per_chunk";
    case SW_BENCH_COUNT_FINAL:
        return "final";
    case SW_BENCH_COUNT_CHUNKS:
        return "chunks";
    case SW_BENCH_COUNT_NONE:
        break;
    }
    return "none";
}

static double secs(uint64_t a, uint64_t b)
{
    return a && b && a >= b ? (double)(a - b) / 1e9 : NAN;
}

static bool has_text(const struct sw_openai_chunk_rec *c)
{
    return c->content_bytes > 0 || c->reasoning_bytes > 0;
}

/* What the first pass over the chunks found beside the sample's instants. */
struct pass {
    bool per_chunk;    /* every text chunk carried the engine's cumulative count */
    int64_t counted;   /* tokens by those counts (or token-bearing chunks) */
    int64_t reasoning; /* of them, in chunks with reasoning and no content */
    bool reasoning_seen;
    double o_min, o_max; /* arrival minus the server's time, per chunk: the delivery spread */
};

/* Per-chunk counts only when every text chunk carried one (and no record was dropped). */
static bool per_chunk_counts(const struct sw_openai_result *r, const int64_t *cum)
{
    bool per_chunk = cum != NULL;
    for (size_t i = 0; per_chunk && i < r->nrecs; i++)
        if (has_text(&r->recs[i]) && cum[i] < 0)
            per_chunk = false;
    return per_chunk && !r->recs_dropped;
}

/* Pass 1: the instants of the first token, the first content and the last token, the token
 * increments per chunk, the gaps between token-bearing chunks. */
static void instants(struct sw_bench_sample *s, const struct sw_openai_result *r,
                     const int64_t *cum, const double *srv_ms, struct sw_bench_hist *itl_chunk,
                     struct pass *p)
{
    int64_t prev = 0;
    uint64_t t_prev_tok = 0;
    s->chunks = r->chunks;
    s->token_chunks = s->multi_chunks = 0;
    s->t_first_token = s->t_first_content = s->t_last_token = 0;
    s->first_chunk_tokens = 0;
    for (size_t i = 0; i < r->nrecs; i++) {
        const struct sw_openai_chunk_rec *c = &r->recs[i];
        int64_t k = 0;
        if (p->per_chunk) {
            if (cum[i] >= 0) {
                k = cum[i] > prev ? cum[i] - prev : 0;
                prev = SW_MAX(prev, cum[i]);
            }
        } else {
            k = has_text(c) ? 1 : 0;
        }
        if (c->reasoning_bytes)
            p->reasoning_seen = true;
        if (k <= 0 && !has_text(c))
            continue;
        /* a token-bearing chunk */
        s->token_chunks++;
        if (k > 1)
            s->multi_chunks++;
        if (c->reasoning_bytes && !c->content_bytes)
            p->reasoning += k;
        if (!s->t_first_token) {
            s->t_first_token = c->t_ns;
            s->first_chunk_tokens = p->per_chunk ? k : 1;
        } else if (itl_chunk) {
            sw_bench_hist_add(itl_chunk, c->t_ns - SW_MIN(c->t_ns, t_prev_tok));
        }
        if (c->content_bytes && !s->t_first_content)
            s->t_first_content = c->t_ns;
        s->t_last_token = c->t_ns;
        t_prev_tok = c->t_ns;
        p->counted += p->per_chunk ? k : 1;
        if (srv_ms && isfinite(srv_ms[i])) {
            double o = (double)c->t_ns / 1e6 - srv_ms[i];
            p->o_min = SW_MIN(p->o_min, o);
            p->o_max = SW_MAX(p->o_max, o);
        }
    }
}

/* The counts: the engine's, never the chunks' unless nothing else came. */
static void counts(struct sw_bench_sample *s, const struct sw_openai_result *r,
                   const struct pass *p)
{
    s->completion_tokens = -1;
    s->count_src = SW_BENCH_COUNT_NONE;
    if (r->usage.present && r->usage.completion_tokens >= 0)
        s->completion_tokens = r->usage.completion_tokens;
    else if (r->timings.present && r->timings.predicted_n >= 0)
        s->completion_tokens = r->timings.predicted_n;
    if (p->per_chunk && p->counted > 0) {
        s->count_src = SW_BENCH_COUNT_PER_CHUNK;
        if (s->completion_tokens < 0)
            s->completion_tokens = p->counted; /* the stream ended before its usage */
    } else if (s->completion_tokens >= 0) {
        s->count_src = SW_BENCH_COUNT_FINAL;
    } else if (s->token_chunks) {
        s->count_src = SW_BENCH_COUNT_CHUNKS;
        s->completion_tokens = (int64_t)s->token_chunks;
    }
    s->prompt_tokens = -1;
    if (r->usage.present && r->usage.prompt_tokens >= 0)
        s->prompt_tokens = r->usage.prompt_tokens;
    else if (r->timings.present && r->timings.prompt_n >= 0)
        s->prompt_tokens = r->timings.prompt_n + SW_MAX(r->timings.cache_n, 0);
    s->cached_tokens = r->timings.present && r->timings.cache_n >= 0 ? r->timings.cache_n
                       : r->usage.present                            ? r->usage.cached_tokens
                                                                     : -1;
    if (s->count_src == SW_BENCH_COUNT_PER_CHUNK)
        s->reasoning_tokens = p->reasoning;
    else if (r->usage.present && r->usage.reasoning_tokens >= 0)
        s->reasoning_tokens = r->usage.reasoning_tokens;
    else
        s->reasoning_tokens = p->reasoning_seen ? -1 : 0;
}

/* Per-token gaps: exact with per-chunk counts, or when chunks == tokens (a token arriving in
 * the same chunk as the one before it: a gap of 0). */
static void token_gaps(const struct sw_bench_sample *s, const struct sw_openai_result *r,
                       const int64_t *cum, bool per_chunk, struct sw_bench_hist *itl_tok)
{
    if (!itl_tok || s->token_chunks <= 1 ||
        (s->count_src != SW_BENCH_COUNT_PER_CHUNK &&
         (int64_t)s->token_chunks != s->completion_tokens))
        return;
    uint64_t tp = 0;
    int64_t p2 = 0;
    bool first = true;
    for (size_t i = 0; i < r->nrecs; i++) {
        const struct sw_openai_chunk_rec *c = &r->recs[i];
        int64_t k;
        if (per_chunk) {
            k = cum[i] > p2 ? cum[i] - p2 : 0;
            p2 = SW_MAX(p2, cum[i]);
            if (k <= 0 && has_text(c))
                k = 0; /* text with no new token: not a token arrival */
        } else {
            k = has_text(c) ? 1 : 0;
        }
        if (k <= 0)
            continue;
        if (!first)
            sw_bench_hist_add(itl_tok, c->t_ns - SW_MIN(c->t_ns, tp));
        for (int64_t j = 1; j < k; j++)
            sw_bench_hist_add(itl_tok, 0); /* arrived with the previous token */
        first = false;
        tp = c->t_ns;
    }
}

/* The figures derived from the instants and counts: lag, queue, TTFT, TTFC, E2E, TPOT, rates. */
static void derived(struct sw_bench_sample *s)
{
    s->send_lag_s = secs(s->t_issued, s->t_intended);
    s->queue_s = secs(s->t_sent, s->t_issued);
    s->ttft_s = secs(s->t_first_token, s->t_intended);
    s->ttft_sent_s = secs(s->t_first_token, s->t_sent);
    s->ttfc_s = secs(s->t_first_content, s->t_intended);
    s->e2e_s = secs(s->t_end, s->t_intended);
    s->e2e_sent_s = secs(s->t_end, s->t_sent);
    s->decode_span_s = secs(s->t_last_token, s->t_first_token);
    int64_t after_first = s->completion_tokens - s->first_chunk_tokens;
    if (isfinite(s->decode_span_s) && s->decode_span_s > 0 && after_first > 0) {
        s->tpot_s = s->decode_span_s / (double)after_first;
        s->decode_tps = (double)after_first / s->decode_span_s;
    } else {
        s->tpot_s = s->decode_tps = NAN;
    }
    int64_t processed =
        s->prompt_tokens >= 0 ? s->prompt_tokens - SW_MAX(s->cached_tokens, (int64_t)0) : -1;
    s->prefill_tps = processed > 0 && s->ttft_sent_s > 0 ? (double)processed / s->ttft_sent_s : NAN;
}

/* The engine's own figures and the difference from the client's. */
static void engine_figures(struct sw_bench_sample *s, const struct sw_openai_result *r,
                           const struct pass *p)
{
    s->srv = r->timings.present;
    s->srv_prompt_n = s->srv ? r->timings.prompt_n : -1;
    s->srv_cache_n = s->srv ? r->timings.cache_n : -1;
    s->srv_predicted_n = s->srv ? r->timings.predicted_n : -1;
    s->srv_draft_n = s->srv ? r->timings.draft_n : -1;
    s->srv_draft_accepted = s->srv ? r->timings.draft_n_accepted : -1;
    s->srv_prompt_ms = s->srv ? r->timings.prompt_ms : NAN;
    s->srv_predicted_ms = s->srv ? r->timings.predicted_ms : NAN;
    s->srv_prompt_tps = s->srv ? r->timings.prompt_per_second : NAN;
    s->srv_decode_tps = s->srv ? r->timings.predicted_per_second : NAN;
    s->span_diff_ms = NAN;
    s->decode_diff_pct = NAN;
    s->prefill_diff_pct = NAN;
    s->counts_agree = true;
    if (s->srv) {
        if (isfinite(s->decode_span_s) && isfinite(s->srv_predicted_ms))
            s->span_diff_ms = s->decode_span_s * 1e3 - s->srv_predicted_ms;
        /* the pinned llama.cpp's predicted_per_second is (predicted_n - 1) decode steps over
         * the span from the first token to the last (server-common.h n_gen_steps, t_gen_us:
         * "the first token is free"): the client's decode_tps on the same definition */
        if (isfinite(s->decode_tps) && s->srv_decode_tps > 0)
            s->decode_diff_pct = 100.0 * (s->decode_tps - s->srv_decode_tps) / s->srv_decode_tps;
        if (isfinite(s->prefill_tps) && s->srv_prompt_tps > 0)
            s->prefill_diff_pct = 100.0 * (s->prefill_tps - s->srv_prompt_tps) / s->srv_prompt_tps;
        if (s->srv_predicted_n >= 0 && s->completion_tokens != s->srv_predicted_n)
            s->counts_agree = false;
    }
    if (s->count_src == SW_BENCH_COUNT_PER_CHUNK && p->counted != s->completion_tokens)
        s->counts_agree = false;
    s->delivery_spread_ms = p->o_max >= p->o_min ? p->o_max - p->o_min : NAN;
}

void sw_bench_measure(struct sw_bench_sample *s, const struct sw_openai_result *r,
                      const int64_t *cum, const double *srv_ms, struct sw_bench_hist *itl_tok,
                      struct sw_bench_hist *itl_chunk)
{
    struct pass p = {.per_chunk = per_chunk_counts(r, cum), .o_min = INFINITY, .o_max = -INFINITY};
    instants(s, r, cum, srv_ms, itl_chunk, &p);
    counts(s, r, &p);
    token_gaps(s, r, cum, p.per_chunk, itl_tok);
    derived(s);
    engine_figures(s, r, &p);
}
