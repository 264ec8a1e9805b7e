/*
 * sim metrics: the engine's /metrics in its own names (llama-server's llamacpp:* only with
 * --metrics, else its 501; vLLM's vllm:*, with the speculative decoding counters; SGLang's
 * sglang:* only with --enable-metrics, else 404), from the sim's counters and its scheduler's
 * state.
 *
 * What it does not do: count (the scheduler and the replies do).
 */
#include "sim_internal.h"

#include <inttypes.h>

struct metric {
    const char *name, *kind, *help;
    double v;
};

/* a / b, or 0 before anything was counted */
static double rate(double a, double b)
{
    return b > 0 ? a / b : 0;
}

/* tools/server/server-task.cpp server_task_result_metrics::to_metrics, prefixed "llamacpp:" */
static void llamacpp(const struct sw_sim *s, int running, struct sw_buf *b)
{
    const struct metric m[] = {
        {"prompt_tokens_total", "counter", "Number of prompt tokens processed.",
         (double)s->m_prompt_tokens},
        {"prompt_seconds_total", "counter", "Prompt process time", s->m_prompt_seconds},
        {"tokens_predicted_total", "counter", "Number of generation tokens processed.",
         (double)s->m_predicted_tokens},
        {"tokens_predicted_seconds_total", "counter", "Predict process time",
         s->m_predicted_seconds},
        {"n_decode_total", "counter", "Total number of llama_decode() calls",
         (double)s->m_decode_calls},
        {"prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         rate((double)s->m_prompt_tokens, s->m_prompt_seconds)},
        {"predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         rate((double)s->m_predicted_tokens, s->m_predicted_seconds)},
        {"requests_processing", "gauge", "Number of requests processing.", (double)running},
        {"requests_deferred", "gauge", "Number of requests deferred.", (double)sw__sim_n_queued(s)},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(m); i++)
        sw_buf_printf(b, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %g\n",
                      m[i].name, m[i].help, m[i].name, m[i].kind, m[i].name, m[i].v);
}

/* vLLM's and SGLang's lines: the type, then the value labelled with the model's name (after
 * `labels`) */
static void typed(const struct sw_sim *s, const char *prefix, const char *labels,
                  const struct metric *m, size_t n, struct sw_buf *b)
{
    for (size_t i = 0; i < n; i++)
        sw_buf_printf(b, "# TYPE %s:%s %s\n%s:%s{%smodel_name=\"%s\"} %g\n", prefix, m[i].name,
                      m[i].kind, prefix, m[i].name, labels, s->alias, m[i].v);
}

/* python/sglang/srt/metrics/collector.py's names; no radix cache is kept, so nothing is ever
 * served from it */
static void sglang(const struct sw_sim *s, int running, struct sw_buf *b)
{
    int64_t kv = sw__sim_kv_held(s);
    const struct metric m[] = {
        {"num_running_reqs", "gauge", NULL, (double)running},
        {"num_queue_reqs", "gauge", NULL, (double)sw__sim_n_queued(s)},
        {"num_used_tokens", "gauge", NULL, (double)kv},
        {"token_usage", "gauge", NULL, s->kv_pool > 0 ? (double)kv / (double)s->kv_pool : 0.0},
        {"gen_throughput", "gauge", NULL,
         rate((double)s->m_predicted_tokens, s->m_predicted_seconds)},
        {"prompt_tokens_total", "counter", NULL, (double)s->m_prompt_tokens},
        {"generation_tokens_total", "counter", NULL, (double)s->m_predicted_tokens},
        {"num_requests_total", "counter", NULL, (double)s->m_requests},
        {"cached_tokens_total", "counter", NULL, 0.0},
        /* speculative decoding: tokens a verify step keeps (the bonus token included) and the
         * share of drafted tokens kept; SGLang shows 0 without it */
        {"spec_accept_length", "gauge", NULL,
         s->m_spec_drafts ? 1.0 + (double)s->m_spec_accepted / (double)s->m_spec_drafts : 0},
        {"spec_accept_rate", "gauge", NULL,
         rate((double)s->m_spec_accepted, (double)s->m_spec_draft_tokens)},
    };
    typed(s, "sglang", "", m, SW_ARRAY_LEN(m), b);
}

static void vllm(const struct sw_sim *s, int running, struct sw_buf *b)
{
    int64_t kv = sw__sim_kv_held(s);
    const struct metric m[] = {
        {"num_requests_running", "gauge", NULL, (double)running},
        {"num_requests_waiting", "gauge", NULL, (double)sw__sim_n_queued(s)},
        {"kv_cache_usage_perc", "gauge", NULL,
         s->kv_pool > 0 ? (double)kv / (double)s->kv_pool : 0.0},
        {"prompt_tokens_total", "counter", NULL, (double)s->m_prompt_tokens},
        {"generation_tokens_total", "counter", NULL, (double)s->m_predicted_tokens},
        {"request_success_total", "counter", NULL, (double)s->m_requests},
        {"num_preemptions_total", "counter", NULL, (double)s->m_preemptions},
        /* V1's prefix-cache counters: the sim keeps no prefix cache, so every prompt token is
         * looked up and none is found */
        {"prefix_cache_queries_total", "counter", NULL, (double)s->m_prompt_tokens},
        {"prefix_cache_hits_total", "counter", NULL, 0.0},
    };
    typed(s, "vllm", "engine=\"0\",", m, SW_ARRAY_LEN(m), b);
    if (s->cfg.n_spec < 1)
        return;
    /* vllm/v1/spec_decode/metrics.py's counters */
    const struct {
        const char *name;
        uint64_t v;
    } sd[] = {{"spec_decode_num_drafts_total", s->m_spec_drafts},
              {"spec_decode_num_draft_tokens_total", s->m_spec_draft_tokens},
              {"spec_decode_num_accepted_tokens_total", s->m_spec_accepted}};
    for (size_t i = 0; i < SW_ARRAY_LEN(sd); i++)
        sw_buf_printf(
            b, "# TYPE vllm:%s counter\nvllm:%s{engine=\"0\",model_name=\"%s\"} %" PRIu64 "\n",
            sd[i].name, sd[i].name, s->alias, sd[i].v);
    sw_buf_puts(b, "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n");
    for (int k = 0; k < s->cfg.n_spec; k++)
        sw_buf_printf(b,
                      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\","
                      "model_name=\"%s\",position=\"%d\"} %" PRIu64 "\n",
                      s->alias, k, s->m_spec_pos[k]);
}

void sw__sim_on_metrics(struct sw_sim *s, struct evhttp_request *req)
{
    struct sw_buf b;
    int running = sw__sim_n_running(s);
    if (s->engine == SW__SIM_LLAMACPP && !s->metrics) {
        sw__sim_reply_json(req, 501, "Not Implemented",
                           json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 501, "message",
                                     "This server does not support metrics endpoint. Start it "
                                     "with `--metrics`",
                                     "type", "not_supported_error"));
        return;
    }
    if (s->engine == SW__SIM_SGLANG && !s->metrics) { /* mounted only with --enable-metrics */
        sw__sim_reply_json(req, 404, "Not Found", json_pack("{s:s}", "detail", "Not Found"));
        return;
    }
    sw_buf_init(&b, 1u << 20);
    if (s->engine == SW__SIM_LLAMACPP)
        llamacpp(s, running, &b);
    else if (s->engine == SW__SIM_SGLANG)
        sglang(s, running, &b);
    else
        vllm(s, running, &b);
    sw__sim_reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", sw_buf_cstr(&b),
                       b.len);
    sw_buf_free(&b);
}
