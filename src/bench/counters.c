/*
 * The engine's own counters around a bench run: /metrics read before the first point and after
 * the last, the deltas set beside the client's sums over the same requests (prompt and
 * generated tokens), the prefix cache's lookups and hits, and speculative decoding's drafts and
 * acceptance per draft position. And the engines' prefix-cache resets.
 *
 * Names (Prometheus, summed over every label set: one model per server):
 *   vLLM    vllm:prompt_tokens_total, vllm:generation_tokens_total,
 *           vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total (V1; older builds:
 *           vllm:gpu_prefix_cache_queries_total / _hits_total), vllm:spec_decode_num_drafts_total,
 *           vllm:spec_decode_num_draft_tokens_total, vllm:spec_decode_num_accepted_tokens_total,
 *           vllm:spec_decode_num_accepted_tokens_per_pos_total{position="k"}
 *           (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py)
 *   SGLang  sglang:prompt_tokens_total, sglang:generation_tokens_total,
 *           sglang:cached_tokens_total (prompt tokens served from its radix cache); the gauges
 *           sglang:spec_accept_length and sglang:spec_accept_rate (per tp/dp rank: averaged),
 *           SGLang's only speculative-decoding figures: no per-position counters
 *   llama.cpp (--metrics) llamacpp:prompt_tokens_total, llamacpp:tokens_predicted_total
 *
 * What it deliberately does not do: judge a speed from the counters, or take a delta of a gauge
 * (it means nothing: SGLang's two spec gauges are read from the after page as they are).
 */
#include "bench_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX (16u << 20)

int sw__bench_scrape(struct sw_net_loop *l, const char *base, const char *bearer,
                     struct sw_openai_metrics *m, char *why, size_t why_len)
{
    char url[700];
    struct sw_net_req q;
    struct sw_net_resp resp;
    struct sw_err e;
    memset(m, 0, sizeof(*m));
    memset(&q, 0, sizeof(q));
    sw_err_clear(&e);
    snprintf(url, sizeof(url), "%s/metrics", base);
    q.method = "GET";
    q.url = url;
    q.bearer = bearer;
    q.total_ms = 10000;
    q.body_max = METRICS_MAX;
    int rc = sw_net_request(l, &q, &resp, &e);
    if (!rc && resp.status != 200) {
        snprintf(why, why_len, "GET /metrics: HTTP %ld", resp.status);
        rc = -1;
    } else if (rc) {
        snprintf(why, why_len, "GET /metrics: %s", e.msg);
        rc = -1;
    } else if (sw_openai_metrics_parse(resp.body.data ? resp.body.data : "", resp.body.len, m,
                                       &e)) {
        snprintf(why, why_len, "GET /metrics: %s", e.msg);
        rc = -1;
    }
    sw_net_resp_free(&resp);
    return rc;
}

int sw__bench_reset_cache(struct sw_net_loop *l, const char *base, const char *engine,
                          const char *bearer, char *done, size_t done_len, struct sw_err *e)
{
    const char *path = NULL, *hint = "";
    if (engine && !strcmp(engine, "vllm")) {
        path = "/reset_prefix_cache";
        hint = " (vLLM serves it with VLLM_SERVER_DEV_MODE=1)";
    } else if (engine && !strcmp(engine, "sglang")) {
        path = "/flush_cache";
    }
    if (!path)
        return sw_err_set(e, SW_EINVAL,
                          "--reset-cache: engine %s has no prefix-cache reset (llama.cpp: "
                          "cache_prompt:false is sent instead)",
                          engine ? engine : "llama.cpp");
    char url[700];
    struct sw_net_req q;
    struct sw_net_resp resp;
    memset(&q, 0, sizeof(q));
    snprintf(url, sizeof(url), "%s%s", base, path);
    q.method = "POST";
    q.url = url;
    q.bearer = bearer;
    q.total_ms = 30000;
    q.body = "";
    q.body_len = 0;
    int rc = sw_net_request(l, &q, &resp, e);
    if (!rc && (resp.status < 200 || resp.status > 299))
        rc = sw_err_set(e, SW_EHTTP, "--reset-cache: POST %s: HTTP %ld%s", path, resp.status, hint);
    else if (rc)
        sw_err_prefix(e, "--reset-cache: POST %s", path);
    else
        snprintf(done, done_len, "ok: POST %s (HTTP %ld)", path, resp.status);
    sw_net_resp_free(&resp);
    return rc;
}

/* after - before of a counter; NaN when either page lacks it. */
static double delta(const struct sw_openai_metrics *b, const struct sw_openai_metrics *a,
                    const char *name)
{
    return sw_openai_metrics_sum(a, name) - sw_openai_metrics_sum(b, name);
}

static double delta_any(const struct sw_openai_metrics *b, const struct sw_openai_metrics *a,
                        const char *name, const char *old)
{
    double d = delta(b, a, name);
    return isnan(d) && old ? delta(b, a, old) : d;
}

/* One position's counter: the sample with label position="k". */
static double pos_value(const struct sw_openai_metrics *m, size_t k)
{
    char v[24];
    snprintf(v, sizeof(v), "%zu", k);
    double sum = NAN;
    for (size_t i = 0; i < m->n; i++) {
        const struct sw_openai_sample *s = &m->v[i];
        if (strcmp(s->name, "vllm:spec_decode_num_accepted_tokens_per_pos_total"))
            continue;
        const char *p = sw_openai_sample_label(s, "position");
        if (!p || strcmp(p, v))
            continue;
        sum = isnan(sum) ? s->value : sum + s->value;
    }
    return sum;
}

/* A gauge's mean over its label sets (ranks); NaN when absent. */
static double gauge_mean(const struct sw_openai_metrics *m, const char *name)
{
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!strcmp(m->v[i].name, name) && isfinite(m->v[i].value)) {
            sum += m->v[i].value;
            n++;
        }
    }
    return n ? sum / (double)n : NAN;
}

void sw__bench_counters(const struct sw_openai_metrics *before,
                        const struct sw_openai_metrics *after, struct sw_bench_report *rep)
{
    struct sw_bench_counters *c = &rep->counters;
    c->present = true;
    enum sw_openai_engine g = sw_openai_metrics_engine(after);
    snprintf(c->engine, sizeof(c->engine), "%s", sw_openai_engine_name(g));
    c->prompt_tokens = c->generation_tokens = c->prefix_queries = c->prefix_hits = NAN;
    c->spec_drafts = c->spec_draft_tokens = c->spec_accepted = NAN;
    c->spec_npos = 0;
    c->spec_accept_length = c->spec_accept_rate = NAN;
    if (g == SW_OAI_ENGINE_VLLM) {
        c->prompt_tokens = delta(before, after, "vllm:prompt_tokens_total");
        c->generation_tokens = delta(before, after, "vllm:generation_tokens_total");
        c->prefix_queries = delta_any(before, after, "vllm:prefix_cache_queries_total",
                                      "vllm:gpu_prefix_cache_queries_total");
        c->prefix_hits = delta_any(before, after, "vllm:prefix_cache_hits_total",
                                   "vllm:gpu_prefix_cache_hits_total");
        c->spec_drafts = delta(before, after, "vllm:spec_decode_num_drafts_total");
        c->spec_draft_tokens = delta(before, after, "vllm:spec_decode_num_draft_tokens_total");
        c->spec_accepted = delta(before, after, "vllm:spec_decode_num_accepted_tokens_total");
        for (size_t k = 0; k < SW_BENCH_SPEC_POS_MAX && c->spec_drafts > 0; k++) {
            double d = pos_value(after, k) - pos_value(before, k);
            if (isnan(pos_value(after, k)))
                break;
            /* a position first seen during the run was 0 before */
            if (isnan(d))
                d = pos_value(after, k);
            c->spec_accept_pos[k] = d / c->spec_drafts;
            c->spec_npos = k + 1;
        }
    } else if (g == SW_OAI_ENGINE_SGLANG) {
        c->prompt_tokens = delta(before, after, "sglang:prompt_tokens_total");
        c->generation_tokens = delta(before, after, "sglang:generation_tokens_total");
        c->prefix_hits = delta(before, after, "sglang:cached_tokens_total");
        c->prefix_queries = c->prompt_tokens;
        /* a server without speculative decoding shows them at 0 (or not at all) */
        double len = gauge_mean(after, "sglang:spec_accept_length");
        if (len > 0) {
            c->spec_accept_length = len;
            c->spec_accept_rate = gauge_mean(after, "sglang:spec_accept_rate");
        }
    } else if (g == SW_OAI_ENGINE_LLAMACPP) {
        c->prompt_tokens = delta(before, after, "llamacpp:prompt_tokens_total");
        c->generation_tokens = delta(before, after, "llamacpp:tokens_predicted_total");
    }
    c->client_prompt_tokens = c->client_completion_tokens = 0;
    c->client_failed = 0;
    for (size_t i = 0; i < rep->npoints; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        c->client_failed += pt->failed;
        c->client_prompt_tokens += pt->tokens_in;
        c->client_completion_tokens += pt->tokens_out;
    }
    c->counts_agree = !c->client_failed && c->prompt_tokens == (double)c->client_prompt_tokens &&
                      c->generation_tokens == (double)c->client_completion_tokens;
}
