/*
 * engine/vllm: vLLM's entry in the engine table: argv + environment for a fleet endpoint (its one
 * builder, engine/vllm_render.c: the API key only in VLLM_API_KEY, container paths through the
 * payload's mounts), the boot-log reader, predicted-vs-printed diff, its HTTP error shape, health
 * endpoints and metric names.
 */
#include <slipway/engine_vllm.h>

#include "engine_internal.h"
#include "vllm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char *const vllm_aliases[] = {"vLLM", "vllm-openai", NULL};

static int vllm_bootlog(const char *text, size_t len, const char *where,
                        const struct sw_bootlog_hints *hints, json_t **out,
                        struct sw_boot_status *st, struct sw_err *e)
{
    *out = NULL;
    struct sw_vllm_bootlog *r = sw_malloc(sizeof(*r));
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "%s: out of memory", where);
    int rc = sw_vllm_bootlog_parse(text, len, r, e);
    if (!rc && hints && hints->exited && hints->exit_code == 0 && r->st.failed &&
        r->st.failure.cls == SW_BOOT_UNKNOWN && !strcmp(r->kind, "engine_dead"))
        r->st.failure.cls = SW_BOOT_ENGINE_DEAD_EXIT0; /* the process told us what the log can't */
    /* Nothing only vLLM prints: its figures, its version line, a failure it names, its marks. */
    if (!rc && !r->has_tokens && !r->has_concurrency && !r->has_available && !r->has_blocks &&
        !r->has_block_size && !r->engine_version[0] &&
        (!r->st.failed || r->st.failure.cls == SW_BOOT_UNKNOWN) &&
        sw__bootlog_not_this_engine(text, len, where, "vllm", hints, &r->st))
        snprintf(r->kind, sizeof(r->kind), "not_this_engine");
    if (!rc) {
        *out = sw_vllm_bootlog_json(r);
        if (!*out)
            rc = sw_err_set(e, SW_ENOMEM, "%s: out of memory", where);
        else
            sw_json_set_str(*out, "log", where);
    }
    if (!rc && st)
        *st = r->st;
    sw_free(r);
    return rc;
}

static const json_t *report_of(const json_t *doc)
{
    const json_t *r = json_object_get(doc, "report");
    return json_is_object(r) ? r : doc;
}

/* Fields the plan predicts and the log prints: counts exact, concurrency to its two decimals,
 * the budget to its 0.01 GiB. */
int sw__vllm_diff(const json_t *predicted, const json_t *printed, const json_t *precision,
                  json_t **out, struct sw_err *e)
{
    static const struct {
        const char *field;
        double tol;
    } f[] = {
        {"kv_cache_tokens", 0},
        {"num_gpu_blocks", 0},
        {"block_size", 0},
        {"max_concurrency", 0.005},
        {"available_kv_bytes", 0.005 * 1073741824.0 + 1},
        {"max_total_num_tokens", 0},
        {"max_running_requests", 0},
        /* SGLang's free memory at pool end: its print's 0.01 GB and the engine's own small
         * buffers the law does not model (0.05 and 0.08 GB in the two real boots of
         * tests/unit/test_sglang.c) */
        {"pool_end_avail_gb", 0.1},
    };
    const json_t *p = report_of(predicted), *g = report_of(printed);
    const json_t *prec = precision ? precision : json_object_get(printed, "precision");
    json_t *o = json_object(), *fields = json_array();
    int mism = 0;
    if (!o || !fields) {
        json_decref(o);
        json_decref(fields);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(f); i++) {
        json_t *a = json_object_get(p, f[i].field), *b = json_object_get(g, f[i].field);
        bool ha = a && json_is_number(a), hb = b && json_is_number(b);
        if (!ha && !hb)
            continue;
        json_t *x = json_object();
        if (!x)
            continue;
        sw_json_set_str(x, "field", f[i].field);
        double tol = f[i].tol;
        json_t *pt = prec ? json_object_get(prec, f[i].field) : NULL;
        if (pt && json_is_number(pt))
            tol = json_number_value(pt);
        const char *verdict;
        if (ha && hb) {
            double d = json_number_value(a) - json_number_value(b);
            sw_json_set_real(x, "delta", d);
            verdict = fabs(d) <= tol + 1e-9 ? "match" : "mismatch";
            if (!strcmp(verdict, "mismatch"))
                mism++;
        } else {
            verdict = ha ? "missing" : "unexpected";
        }
        json_object_set(x, "predicted", ha ? a : json_null());
        json_object_set(x, "printed", hb ? b : json_null());
        sw_json_set_real(x, "tolerance", tol);
        sw_json_set_str(x, "verdict", verdict);
        json_array_append_new(fields, x);
    }
    sw_json_set_bool(o, "match", mism == 0);
    sw_json_set_new(o, "fields", fields);
    sw_json_set_int(o, "mismatches", mism);
    *out = o;
    return 0;
}

/* vLLM's OpenAI error body: {"object":"error","message":...,"type":...,"code":N} (older) or
 * {"error":{"message":...,"type":...,"code":N}} (newer). */
int sw__openai_error_shape(int status, const char *body, size_t len, struct sw_engine_error *out)
{
    memset(out, 0, sizeof(*out));
    out->status = status;
    out->n_prompt_tokens = -1;
    out->n_ctx = -1;
    json_t *j = sw_json_parse(body, len, "error body", NULL);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return SW_EPARSE;
    }
    json_t *o = json_object_get(j, "error");
    if (!json_is_object(o))
        o = j;
    json_t *m = json_object_get(o, "message"), *t = json_object_get(o, "type");
    if (!json_is_string(m)) {
        json_decref(j);
        return SW_EPARSE;
    }
    snprintf(out->message, sizeof(out->message), "%s", json_string_value(m));
    if (json_is_string(t))
        snprintf(out->type, sizeof(out->type), "%s", json_string_value(t));
    /* "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens" */
    const char *p = strstr(out->message, "maximum context length is ");
    long long a, b;
    if (p && sscanf(p, "maximum context length is %lld tokens", &a) == 1)
        out->n_ctx = a;
    p = strstr(out->message, "you requested ");
    if (p && sscanf(p, "you requested %lld", &b) == 1)
        out->n_prompt_tokens = b;
    json_decref(j);
    return 0;
}

static const struct sw_engine_metric vllm_metrics[] = {
    {"vllm:num_requests_running", "gauge", "requests in the running batch"},
    {"vllm:num_requests_waiting", "gauge", "requests queued"},
    {"vllm:kv_cache_usage_perc", "gauge", "fraction of KV blocks in use"},
    {"vllm:prompt_tokens_total", "counter", "prefill tokens processed"},
    {"vllm:generation_tokens_total", "counter", "tokens generated"},
    {"vllm:num_preemptions_total", "counter", "requests preempted for lack of KV blocks"},
};

const struct sw_engine sw__engine_vllm = {
    .name = "vllm",
    .aliases = vllm_aliases,
    .default_binary = "vllm",
    .render = sw_vllm_render_endpoint,
    .bootlog = vllm_bootlog,
    .diff = sw__vllm_diff,
    .error_shape = sw__openai_error_shape,
    .health_path = "/health",
    .health_loading_status = 0, /* the API server does not listen until the engine is up */
    .liveness_path = SW__LIVENESS_PATH,
    .liveness_body = SW__LIVENESS_BODY,
    .metrics = vllm_metrics,
    .n_metrics = SW_ARRAY_LEN(vllm_metrics),
};
