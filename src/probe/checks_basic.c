/*
 * The battery's basic checks: readiness (/health as each engine means it), liveness (a real
 * one-token generation), models (the promised name and the window the server reports), chat and
 * stream (a reply whose token counts agree: usage, llama.cpp's timings, the chunks), metrics (the
 * engine's own names on /metrics).
 *
 * What it deliberately does not do: judge what the model said; a random-weight model's gibberish
 * passes as long as the protocol around it is right.
 */
#include "probe_internal.h"

#include <math.h>
#include <string.h>

void sw__probe_readiness(struct sw__probe *p, struct sw_probe_result *r)
{
    unsigned wait = p->t->ready_ms ? p->t->ready_ms : 60000;
    uint64_t t0 = sw_now_ns();
    int n503 = 0;
    char first503[256] = "";
    char d[512], q[384];
    for (;;) {
        struct sw_net_resp resp;
        struct sw_net_req req;
        sw__probe_req(p, &req, 10000);
        req.url = sw__probe_url(p, "/health");
        int rc = sw_net_request(&p->loop, &req, &resp, NULL);
        sw__probe_scrub_resp(p, &resp);
        uint64_t waited = sw_now_ns() - t0;
        sw_json_set_int(r->data, "status", resp.status);
        sw_json_set_int(r->data, "loading_503", n503);
        sw_json_set_int(r->data, "waited_ms", (int64_t)(waited / 1000000));
        if (rc) {
            if (resp.fail == SW_NET_REFUSED || resp.fail == SW_NET_DNS ||
                resp.fail == SW_NET_CONNECT || resp.fail == SW_NET_TIMEOUT_CONNECT) {
                sw__probe_give_up(p, "%.100s: %.140s", p->rep->url, resp.err.msg);
            } else if (sw__probe_silent(&resp)) {
                sw__probe_give_up(p,
                                  "%.100s accepted the connection but sent no byte for %s "
                                  "(GET /health): the endpoint is silent",
                                  p->rep->url, sw__probe_dur(waited, q, sizeof(q)));
            }
            sw__probe_set(r, SW_PROBE_FAIL,
                          p->unreachable ? p->unreachable_why : "nothing usable answers /health",
                          "GET /health: %s", sw__probe_describe(&resp, d, sizeof(d)));
            sw_net_resp_free(&resp);
            return;
        }
        if (resp.status == 200) {
            sw__probe_quote(resp.body.data ? resp.body.data : "", resp.body.len, 60, q, sizeof(q));
            char enc[200];
            size_t ql = strlen(q);
            snprintf(q + ql, sizeof(q) - ql, "%s",
                     sw__probe_encoding_note(&resp, enc, sizeof(enc)));
            char times[32];
            if (n503 == 1)
                snprintf(times, sizeof(times), "once");
            else
                snprintf(times, sizeof(times), "%d times", n503);
            if (n503)
                sw__probe_set(r, SW_PROBE_PASS, NULL,
                              "GET /health 503 (%s) %s over %s while loading, then 200 %s",
                              first503, times, sw__probe_dur(waited, d, sizeof(d)), q);
            else
                sw__probe_set(r, SW_PROBE_PASS, NULL, "GET /health 200 %s", q);
            sw_net_resp_free(&resp);
            return;
        }
        if (resp.status == 503) {
            struct sw_openai_error oe;
            sw__probe_error_of(&resp, &oe);
            if (!n503++)
                snprintf(first503, sizeof(first503), "%.200s",
                         oe.message[0] ? oe.message : "no body");
            if (waited < (uint64_t)wait * 1000000ull && sw__probe_left_ms(p) > 250) {
                sw_net_resp_free(&resp);
                sw_sleep_ms(250);
                continue;
            }
            sw__probe_set(r, SW_PROBE_FAIL, "the endpoint never became ready",
                          "GET /health still 503 (%s) after %s", first503,
                          sw__probe_dur(waited, d, sizeof(d)));
            sw_net_resp_free(&resp);
            return;
        }
        sw__probe_set(r, SW_PROBE_FAIL, "/health does not answer 200", "GET /health: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
        sw_net_resp_free(&resp);
        return;
    }
}

void sw__probe_liveness(struct sw__probe *p, struct sw_probe_result *r)
{
    json_t *body = sw__probe_chat(p, "Say OK.", 1, false);
    struct sw_openai_result res;
    struct sw_net_resp resp;
    char d[512], q[128];
    sw_openai_result_init(&res, 0, 0);
    int rc = sw__probe_post(p, body, &res, &resp, NULL, NULL, 0);
    uint64_t dt = resp.t.done - resp.t.start;
    sw_json_set_int(r->data, "status", resp.status);
    sw_json_set_real(r->data, "seconds", (double)dt / 1e9);
    if (rc && sw__probe_silent(&resp)) {
        /* every later check would wait out its own budget on the same silence */
        sw__probe_give_up(p, "POST /v1/chat/completions got no byte in %s: the engine is silent",
                          sw__probe_dur(dt, q, sizeof(q)));
        sw__probe_set(r, SW_PROBE_FAIL, p->unreachable_why,
                      "POST /v1/chat/completions max_tokens 1: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
    } else if (rc || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL, "no generation: the engine behind /health is not serving",
                      "POST /v1/chat/completions max_tokens 1: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
    } else if (res.err.code) {
        char m[1200], enc[200];
        sw__probe_set(r, SW_PROBE_FAIL, "the reply is not a chat completion",
                      "POST /v1/chat/completions max_tokens 1: %s%s",
                      sw_err_format(&res.err, m, sizeof(m)),
                      sw__probe_encoding_note(&resp, enc, sizeof(enc)));
    } else {
        int64_t n = res.usage.present ? res.usage.completion_tokens : -1;
        sw_json_set_int(r->data, "completion_tokens", n);
        const char *text = res.content.len ? res.content.data : sw_buf_cstr(&res.reasoning);
        size_t tl = res.content.len ? res.content.len : res.reasoning.len;
        if (n > 1)
            sw__probe_set(r, SW_PROBE_FAIL, "max_tokens was not honoured",
                          "asked for 1 token, usage says %lld", (long long)n);
        else
            sw__probe_set(r, SW_PROBE_PASS, NULL, "1 token %s in %s (finish %s)",
                          sw__probe_quote(text, tl, 40, q, sizeof(q)),
                          sw__probe_dur(dt, d, sizeof(d)),
                          res.finish_reason[0] ? res.finish_reason : "?");
    }
    json_decref(body);
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}

void sw__probe_models(struct sw__probe *p, struct sw_probe_result *r)
{
    struct sw_net_resp resp;
    char d[512];
    if (sw__probe_get(p, "/v1/models", &resp) || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL, "no model list", "GET /v1/models: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
        sw_net_resp_free(&resp);
        return;
    }
    struct sw_openai_models m;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_openai_parse_models(resp.body.data, resp.body.len, &m, &e)) {
        sw__probe_set(r, SW_PROBE_FAIL, "the model list is not usable", "GET /v1/models: %s",
                      e.msg);
        sw_net_resp_free(&resp);
        return;
    }
    sw_net_resp_free(&resp);
    json_t *ids = json_array();
    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < m.n; i++) {
        json_array_append_new(ids, json_string(m.v[i].id));
        if (used < sizeof(list) - 1) {
            int w = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", m.v[i].id);
            if (w > 0)
                used += (size_t)w;
        }
    }
    sw_json_set_new(r->data, "ids", ids);
    const char *want = p->t->model;
    const struct sw_openai_model *x =
        want ? sw_openai_models_find(&m, want) : (m.n ? &m.v[0] : NULL);
    if (!x) {
        sw__probe_set(r, SW_PROBE_FAIL, "the promised model name is not served",
                      "%s is not listed; /v1/models lists: %s", want ? want : "(any)",
                      m.n ? list : "nothing");
        sw_openai_models_free(&m);
        return;
    }
    int64_t reported = x->n_ctx > 0 ? x->n_ctx : x->max_model_len;
    const char *from = x->n_ctx > 0 ? "meta.n_ctx, per slot" : "max_model_len";
    sw_json_set_int(r->data, "reported_window", reported);
    sw_json_set_int(r->data, "n_ctx_train", x->n_ctx_train);
    char rw[32], pw[32], tw[32];
    sw_fmt_count((uint64_t)SW_MAX(reported, 0), rw, sizeof(rw));
    sw_fmt_count((uint64_t)SW_MAX(p->t->window, 0), pw, sizeof(pw));
    sw_fmt_count((uint64_t)SW_MAX(x->n_ctx_train, 0), tw, sizeof(tw));
    char how[160] = "";
    if (want && strcmp(x->id, want))
        snprintf(how, sizeof(how), " (as an alias of %s)", x->id);
    if (p->t->window > 0 && reported > 0 && reported < p->t->window) {
        sw__probe_set(r, SW_PROBE_FAIL, "the window clients rely on is larger than the server's",
                      "%s listed%s; clients rely on %s tokens but the server reports %s (%s)",
                      x->id, how, pw, rw, from);
    } else if (reported > 0) {
        sw__probe_set(r, SW_PROBE_PASS, NULL, "%s listed%s, owned by %s; window %s (%s)%s%s%s",
                      want ? want : x->id, how, x->owned_by ? x->owned_by : "?", rw, from,
                      x->n_ctx_train > 0 ? ", trained " : "", x->n_ctx_train > 0 ? tw : "",
                      p->t->window > 0 && reported > p->t->window ? "; clients use less" : "");
    } else {
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "%s listed%s, owned by %s; no context length reported", want ? want : x->id,
                      how, x->owned_by ? x->owned_by : "?");
    }
    sw_openai_models_free(&m);
}

/* What a finished reply must satisfy, whichever way it came. Appends problems to out. */
static void token_agreement(const struct sw_openai_result *res, int max_tokens, char *out, size_t n,
                            json_t *data)
{
    size_t used = strlen(out);
#define PROBLEM(...)                                                                               \
    do {                                                                                           \
        if (used < n - 1) {                                                                        \
            int w_ = snprintf(out + used, n - used, "%s", used ? "; " : "");                       \
            if (w_ > 0)                                                                            \
                used += (size_t)w_;                                                                \
            w_ = snprintf(out + used, n - used, __VA_ARGS__);                                      \
            if (w_ > 0)                                                                            \
                used += (size_t)w_;                                                                \
        }                                                                                          \
    } while (0)
    const struct sw_openai_usage *u = &res->usage;
    sw_json_set_str(data, "finish_reason", res->finish_reason);
    if (!res->finish_reason[0])
        PROBLEM("no finish_reason");
    if (!u->present) {
        PROBLEM("no usage");
    } else {
        sw_json_set_int(data, "prompt_tokens", u->prompt_tokens);
        sw_json_set_int(data, "completion_tokens", u->completion_tokens);
        if (u->completion_tokens < 1 || u->completion_tokens > max_tokens)
            PROBLEM("usage.completion_tokens %lld outside 1..%d", (long long)u->completion_tokens,
                    max_tokens);
        if (u->total_tokens >= 0 && u->prompt_tokens >= 0 &&
            u->total_tokens != u->prompt_tokens + u->completion_tokens)
            PROBLEM("usage.total_tokens %lld != prompt %lld + completion %lld",
                    (long long)u->total_tokens, (long long)u->prompt_tokens,
                    (long long)u->completion_tokens);
        if (!strcmp(res->finish_reason, "length") && u->completion_tokens != max_tokens)
            PROBLEM("finish length after %lld of %d tokens", (long long)u->completion_tokens,
                    max_tokens);
    }
    if (res->timings.present) {
        sw_json_set_int(data, "timings_predicted_n", res->timings.predicted_n);
        sw_json_set_int(data, "timings_prompt_n", res->timings.prompt_n);
        if (u->present && res->timings.predicted_n != u->completion_tokens)
            PROBLEM("timings.predicted_n %lld != usage.completion_tokens %lld",
                    (long long)res->timings.predicted_n, (long long)u->completion_tokens);
    }
    if (!res->content.len && !res->reasoning.len && !res->ntool_calls)
        PROBLEM("an empty reply");
#undef PROBLEM
}

/* The hello both chat checks send (at most HELLO_MAX tokens), streamed or not: res and resp
 * filled, the caller frees both. The post's code. */
#define HELLO_MAX 16
static int hello(struct sw__probe *p, bool stream, struct sw_openai_result *res,
                 struct sw_net_resp *resp)
{
    json_t *body = sw__probe_chat(p, "Say hello in a few words.", HELLO_MAX, stream);
    sw_openai_result_init(res, 0, 0);
    int rc = sw__probe_post(p, body, res, resp, NULL, NULL, 0);
    json_decref(body);
    return rc;
}

void sw__probe_chat_check(struct sw__probe *p, struct sw_probe_result *r)
{
    struct sw_openai_result res;
    struct sw_net_resp resp;
    char d[512], q[128], problems[512] = "";
    int rc = hello(p, false, &res, &resp);
    if (rc || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL, "no reply", "POST /v1/chat/completions: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
    } else if (res.err.code) {
        char m[1200];
        sw__probe_set(r, SW_PROBE_FAIL, "the reply is not a chat completion", "%s",
                      sw_err_format(&res.err, m, sizeof(m)));
    } else {
        token_agreement(&res, HELLO_MAX, problems, sizeof(problems), r->data);
        const char *text = res.content.len ? res.content.data : sw_buf_cstr(&res.reasoning);
        size_t tl = res.content.len ? res.content.len : res.reasoning.len;
        uint64_t dt = resp.t.done - resp.t.start;
        sw_json_set_real(r->data, "seconds", (double)dt / 1e9);
        bool agree = res.timings.present && res.usage.present &&
                     res.timings.predicted_n == res.usage.completion_tokens;
        sw__probe_set(
            r, problems[0] ? SW_PROBE_FAIL : SW_PROBE_PASS, problems[0] ? problems : NULL,
            "%lld tokens (finish %s), prompt %lld, in %s%s; %s",
            (long long)res.usage.completion_tokens, res.finish_reason[0] ? res.finish_reason : "?",
            (long long)res.usage.prompt_tokens, sw__probe_dur(dt, d, sizeof(d)),
            agree ? "; usage and timings agree" : "", sw__probe_quote(text, tl, 48, q, sizeof(q)));
    }
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}

void sw__probe_stream(struct sw__probe *p, struct sw_probe_result *r)
{
    struct sw_openai_result res;
    struct sw_net_resp resp;
    char d[512], d2[64], problems[512] = "";
    int rc = hello(p, true, &res, &resp);
    if (rc && res.err.code) {
        char m[1200];
        sw__probe_set(r, SW_PROBE_FAIL, "the stream is not usable", "%s (after %llu chunks)",
                      sw_err_format(&res.err, m, sizeof(m)), (unsigned long long)res.chunks);
    } else if (rc || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL, "no stream", "POST /v1/chat/completions stream: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
    } else {
        const char *ct = sw_net_resp_header(&resp, "content-type");
        size_t used = 0;
        if (!ct || !strstr(ct, "text/event-stream")) {
            snprintf(problems, sizeof(problems), "Content-Type is %s, not text/event-stream",
                     ct ? ct : "missing");
            used = strlen(problems);
        }
        if (!res.done && used < sizeof(problems) - 1)
            snprintf(problems + used, sizeof(problems) - used, "%sno [DONE]", used ? "; " : "");
        if (!res.usage.present) {
            used = strlen(problems);
            snprintf(problems + used, sizeof(problems) - used,
                     "%sno usage chunk (stream_options.include_usage ignored)", used ? "; " : "");
        } else {
            token_agreement(&res, HELLO_MAX, problems, sizeof(problems), r->data);
            if (res.text_chunks > (uint64_t)res.usage.completion_tokens) {
                used = strlen(problems);
                snprintf(problems + used, sizeof(problems) - used,
                         "%s%llu chunks with text for %lld tokens", used ? "; " : "",
                         (unsigned long long)res.text_chunks,
                         (long long)res.usage.completion_tokens);
            }
        }
        uint64_t ttft = res.t_first_text ? res.t_first_text - resp.t.start : 0;
        sw_json_set_int(r->data, "chunks", (int64_t)res.chunks);
        sw_json_set_int(r->data, "text_chunks", (int64_t)res.text_chunks);
        sw_json_set_real(r->data, "ttft_s", (double)ttft / 1e9);
        sw_json_set_real(r->data, "seconds", (double)(resp.t.done - resp.t.start) / 1e9);
        sw__probe_set(r, problems[0] ? SW_PROBE_FAIL : SW_PROBE_PASS, problems[0] ? problems : NULL,
                      "%lld tokens in %llu chunks (%llu with text), first text after %s, %s%s",
                      (long long)res.usage.completion_tokens, (unsigned long long)res.chunks,
                      (unsigned long long)res.text_chunks, sw__probe_dur(ttft, d2, sizeof(d2)),
                      res.done ? "[DONE]" : "no [DONE]",
                      res.timings.present && res.usage.present &&
                              res.timings.predicted_n == res.usage.completion_tokens
                          ? "; usage and timings agree"
                          : "");
    }
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}

static void add_value(const struct sw_openai_metrics *m, const char *name, const char *label,
                      char *out, size_t n, json_t *data)
{
    double v = sw_openai_metrics_sum(m, name);
    if (isnan(v))
        return;
    size_t used = strlen(out);
    snprintf(out + used, n - used, "%s%s %g", used ? ", " : "", label, v);
    sw_json_set_real(data, name, v);
}

void sw__probe_metrics(struct sw__probe *p, struct sw_probe_result *r)
{
    struct sw_net_resp resp;
    char d[512];
    if (sw__probe_get(p, "/metrics", &resp) || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL,
                      p->eng == SW__ENG_LLAMACPP ? "no metrics (llama-server needs --metrics)"
                      : p->eng == SW__ENG_SGLANG ? "no metrics (SGLang needs --enable-metrics)"
                                                 : "no metrics",
                      "GET /metrics: %s", sw__probe_describe(&resp, d, sizeof(d)));
        sw_net_resp_free(&resp);
        return;
    }
    struct sw_openai_metrics m;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_openai_metrics_parse(resp.body.data, resp.body.len, &m, &e)) {
        sw__probe_set(r, SW_PROBE_FAIL, "not the Prometheus text format",
                      "GET /metrics line %d col %d: %s", e.line, e.col, e.msg);
        sw_net_resp_free(&resp);
        return;
    }
    sw_net_resp_free(&resp);
    enum sw_openai_engine g = sw_openai_metrics_engine(&m);
    const char *gn = sw_openai_engine_name(g);
    sw_json_set_str(r->data, "names", gn);
    sw_json_set_int(r->data, "samples", (int64_t)m.n);
    static const enum sw_openai_engine want[] = {SW_OAI_ENGINE_UNKNOWN, SW_OAI_ENGINE_LLAMACPP,
                                                 SW_OAI_ENGINE_VLLM, SW_OAI_ENGINE_SGLANG};
    char vals[600] = "";
    if (g == SW_OAI_ENGINE_LLAMACPP) {
        add_value(&m, "llamacpp:prompt_tokens_total", "prompt_tokens_total", vals, sizeof(vals),
                  r->data);
        add_value(&m, "llamacpp:tokens_predicted_total", "tokens_predicted_total", vals,
                  sizeof(vals), r->data);
        add_value(&m, "llamacpp:requests_processing", "requests_processing", vals, sizeof(vals),
                  r->data);
        add_value(&m, "llamacpp:requests_deferred", "requests_deferred", vals, sizeof(vals),
                  r->data);
    } else if (g == SW_OAI_ENGINE_VLLM) {
        add_value(&m, "vllm:num_requests_running", "num_requests_running", vals, sizeof(vals),
                  r->data);
        add_value(&m, "vllm:num_requests_waiting", "num_requests_waiting", vals, sizeof(vals),
                  r->data);
        add_value(&m, "vllm:kv_cache_usage_perc", "kv_cache_usage_perc", vals, sizeof(vals),
                  r->data);
        add_value(&m, "vllm:generation_tokens_total", "generation_tokens_total", vals, sizeof(vals),
                  r->data);
        double rates[16];
        size_t npos = 0;
        if (!sw_openai_metrics_spec_accept(&m, rates, SW_ARRAY_LEN(rates), &npos)) {
            json_t *arr = json_array();
            size_t used = strlen(vals);
            used += (size_t)snprintf(vals + used, sizeof(vals) - used, "; spec-decode acceptance");
            for (size_t i = 0; i < npos && used < sizeof(vals) - 1; i++) {
                json_array_append_new(arr, json_real(rates[i]));
                int w =
                    snprintf(vals + used, sizeof(vals) - used, " pos%zu %.0f%%", i, rates[i] * 100);
                if (w > 0)
                    used += (size_t)w;
            }
            sw_json_set_new(r->data, "spec_accept_per_pos", arr);
        }
    } else if (g == SW_OAI_ENGINE_SGLANG) {
        add_value(&m, "sglang:num_running_reqs", "num_running_reqs", vals, sizeof(vals), r->data);
        add_value(&m, "sglang:gen_throughput", "gen_throughput", vals, sizeof(vals), r->data);
        add_value(&m, "sglang:token_usage", "token_usage", vals, sizeof(vals), r->data);
        add_value(&m, "sglang:spec_accept_length", "spec_accept_length", vals, sizeof(vals),
                  r->data);
    }
    if (g == SW_OAI_ENGINE_UNKNOWN) {
        sw__probe_set(r, SW_PROBE_FAIL, "no engine's metric names on /metrics",
                      "%zu samples, none named llamacpp:*, vllm:* or sglang:*", m.n);
    } else if (p->eng && want[p->eng] != g) {
        sw__probe_set(r, SW_PROBE_FAIL, "the metrics are another engine's",
                      "%s:* names on an endpoint detected as %s", gn, p->rep->engine);
    } else {
        sw__probe_set(r, SW_PROBE_PASS, NULL, "%zu samples with %s:* names: %s", m.n, gn,
                      vals[0] ? vals : "(none of the usual ones)");
    }
    sw_openai_metrics_free(&m);
}
