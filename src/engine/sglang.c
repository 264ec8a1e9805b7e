/*
 * engine/sglang: SGLang's command line (verbatim) -> the SGLang law, its boot log -> the shared
 * boot-log report, and its entry in the engine table.
 *
 * What it does not do: container path mapping, or the router / PD-disaggregation processes.
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/sglang.h>

#include "engine_internal.h"
#include "vllm_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const sg_bool[] = {
    "--disable-radix-cache",
    "--enable-dp-attention",
    "--trust-remote-code",
    "--disable-cuda-graph",
    "--enable-torch-compile",
    "--enable-metrics",
    "--skip-server-warmup",
    "--enable-mixed-chunk",
    "--disable-overlap-schedule",
    "--enable-memory-saver",
    "--disable-custom-all-reduce",
    "--enable-piecewise-cuda-graph",
    "--log-requests",
    "--enable-hierarchical-cache",
    "--disable-chunked-prefix-cache",
    NULL,
};

static int geti(const char *flag, const char *v, int64_t *out, struct sw_err *e)
{
    uint64_t u;
    if (sw_parse_count(v, &u, NULL) || u > (uint64_t)INT64_MAX)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: \"%s\" is not a whole number", flag, v);
    *out = (int64_t)u;
    return 0;
}

static int getd(const char *flag, const char *v, double *out, struct sw_err *e)
{
    if (sw_parse_double(v, out, NULL) || *out < 0)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: \"%s\" is not a number", flag, v);
    return 0;
}

int sw_sglang_parse_argv(int argc, char **argv, struct sw_sglang_opts *o, const char **model_dir,
                         char *ignored, size_t ignored_n, struct sw_err *e)
{
    *model_dir = NULL;
    if (ignored && ignored_n)
        ignored[0] = 0;
    int i = 0;
    if (i < argc && (!strcmp(argv[i], "python") || !strncmp(argv[i], "python3", 7))) {
        i++;
        if (i + 1 < argc && !strcmp(argv[i], "-m"))
            i += 2;
    } else if (i < argc && !strcmp(argv[i], "sglang")) {
        i++;
        if (i < argc && !strcmp(argv[i], "serve"))
            i++;
    }
    for (; i < argc; i++) {
        char flag[128];
        const char *a = argv[i], *val = NULL;
        if (a[0] != '-')
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "unexpected argument \"%s\"", a);
        const char *eq = strchr(a, '=');
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        if (fl >= sizeof(flag))
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "flag too long");
        memcpy(flag, a, fl);
        flag[fl] = 0;
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        if (eq)
            val = eq + 1;
        if (sw_str_in(flag, sg_bool)) {
            if (!strcmp(flag, "--disable-radix-cache"))
                o->disable_radix_cache = true;
            else if (!strcmp(flag, "--enable-dp-attention"))
                o->enable_dp_attention = true;
            else if (ignored) {
                size_t l = strlen(ignored);
                snprintf(ignored + l, ignored_n - l, "%s%s", l ? "," : "", flag);
            }
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s needs a value", flag);
            val = argv[++i];
        }
        int rc = 0;
        int64_t n = 0;
        double d = 0;
        if (!strcmp(flag, "--model-path") || !strcmp(flag, "--model"))
            *model_dir = val;
        else if (!strcmp(flag, "--host") || !strcmp(flag, "--port") ||
                 !strcmp(flag, "--served-model-name") || !strcmp(flag, "--api-key"))
            ; /* the server's address and name: no memory */
        else if (!strcmp(flag, "--tp-size") || !strcmp(flag, "--tp") ||
                 !strcmp(flag, "--tensor-parallel-size")) {
            rc = geti(flag, val, &n, e);
            o->tp = (int)n;
        } else if (!strcmp(flag, "--pp-size") || !strcmp(flag, "--pipeline-parallel-size")) {
            rc = geti(flag, val, &n, e);
            o->pp = (int)n;
        } else if (!strcmp(flag, "--dp-size") || !strcmp(flag, "--dp")) {
            rc = geti(flag, val, &n, e);
            o->dp = (int)n;
        } else if (!strcmp(flag, "--kv-cache-dtype"))
            snprintf(o->kv_cache_dtype, sizeof(o->kv_cache_dtype), "%.31s", val);
        else if (!strcmp(flag, "--dtype"))
            snprintf(o->dtype, sizeof(o->dtype), "%.31s", val);
        else if (!strcmp(flag, "--mamba-ssm-dtype"))
            snprintf(o->mamba_ssm_dtype, sizeof(o->mamba_ssm_dtype), "%.31s", val);
        else if (!strcmp(flag, "--mem-fraction-static")) {
            rc = getd(flag, val, &d, e);
            if (!rc && (d <= 0 || d >= 1))
                rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0,
                               "--mem-fraction-static must be in (0, 1) (got %s)", val);
            o->mem_fraction_static = d;
        } else if (!strcmp(flag, "--mamba-full-memory-ratio"))
            rc = getd(flag, val, &o->mamba_full_memory_ratio, e);
        else if (!strcmp(flag, "--max-total-tokens"))
            rc = geti(flag, val, &o->max_total_tokens, e);
        else if (!strcmp(flag, "--max-running-requests"))
            rc = geti(flag, val, &o->max_running_requests, e);
        else if (!strcmp(flag, "--max-mamba-cache-size"))
            rc = geti(flag, val, &o->max_mamba_cache_size, e);
        else if (!strcmp(flag, "--page-size"))
            rc = geti(flag, val, &o->page_size, e);
        else if (!strcmp(flag, "--context-length"))
            rc = geti(flag, val, &o->context_length, e);
        else if (!strcmp(flag, "--chunked-prefill-size"))
            rc = geti(flag, val, &o->chunked_prefill_size, e);
        else if (!strcmp(flag, "--cuda-graph-max-bs"))
            rc = geti(flag, val, &o->cuda_graph_max_bs, e);
        else if (!strcmp(flag, "--speculative-algorithm"))
            snprintf(o->speculative_algorithm, sizeof(o->speculative_algorithm), "%.31s", val);
        else if (!strcmp(flag, "--speculative-num-steps"))
            rc = geti(flag, val, &o->spec_num_steps, e);
        else if (!strcmp(flag, "--speculative-eagle-topk"))
            rc = geti(flag, val, &o->spec_eagle_topk, e);
        else if (!strcmp(flag, "--speculative-num-draft-tokens"))
            rc = geti(flag, val, &o->spec_num_draft_tokens, e);
        else if (ignored) {
            size_t l = strlen(ignored);
            if (!strstr(ignored, flag))
                snprintf(ignored + l, ignored_n - l, "%s%s", l ? "," : "", flag);
        }
        if (rc)
            return rc;
    }
    if (!*model_dir)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "no model: expected python -m sglang.launch_server --model-path DIR");
    return 0;
}

int sw_sglang_plan_argv(int argc, char **argv, const struct sw_sglang_opts *facts,
                        struct sw_sglang_report *r, struct sw_err *e)
{
    struct sw_sglang_opts o;
    const char *dir;
    char ign[512];
    if (facts)
        o = *facts;
    else
        sw_sglang_opts_init(&o);
    int rc = sw_sglang_parse_argv(argc, argv, &o, &dir, ign, sizeof(ign), e);
    if (rc)
        return rc;
    struct sw_hf_config *c = sw_calloc(1, sizeof(*c));
    if (!c)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_hf_config_load(dir, c, e);
    if (!rc)
        rc = sw_sglang_plan(c, &o, r, e);
    if (!rc && ign[0]) {
        size_t l = strlen(r->warnings);
        snprintf(r->warnings + l, sizeof(r->warnings) - l, "%sflags not modelled: %.300s",
                 l ? "; " : "", ign);
    }
    sw_free(c);
    return rc;
}

static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *q = p; q + n <= end; q++)
        if (*q == *needle && !memcmp(q, needle, n))
            return q;
    return NULL;
}

static bool num(const char *p, const char *end, double *out)
{
    char b[40];
    size_t n = 0;
    while (p < end && n + 1 < sizeof(b) && (isdigit((unsigned char)*p) || *p == '.' || *p == ','))
        if (*p++ != ',')
            b[n++] = p[-1];
    if (!n)
        return false;
    b[n] = 0;
    char *x;
    *out = strtod(b, &x);
    return *x == 0 && *out < 9e18; /* callers cast to int64 */
}

int sw_sglang_bootlog_parse(const char *text, size_t len, struct sw_vllm_bootlog *o,
                            struct sw_err *e)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->engine, sizeof(o->engine), "sglang");
    o->mamba_padding_pct = -1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *q;
        double v;
        q = find(p, le, "KV Cache") ? find(p, le, "#tokens: ") : NULL;
        if (q && num(q + 9, le, &v)) {
            o->has_sglang_kv = true;
            o->sglang_tokens = (int64_t)v;
            const char *k = find(p, le, "K size: ");
            if (k && num(k + 8, le, &v))
                o->sglang_k_gb = v;
            k = find(p, le, "V size: ");
            if (k && num(k + 8, le, &v))
                o->sglang_v_gb = v;
            k = find(p, le, "KV size: ");
            if (k && num(k + 9, le, &v))
                o->sglang_k_gb = v;
        }
        q = find(p, le, "max_total_num_tokens=");
        if (q && num(q + 21, le, &v))
            o->max_total_num_tokens = (int64_t)v;
        q = find(p, le, "max_running_requests=");
        if (q && num(q + 21, le, &v))
            o->max_running_requests = (int64_t)v;
        q = find(p, le, "max_mamba_cache_size: ");
        if (q && num(q + 22, le, &v))
            o->mamba_slots = (int64_t)v;
        q = find(p, le, "Load weight end");
        const char *a = q ? find(q, le, "avail mem=") : NULL;
        q = q ? find(q, le, "mem usage=") : NULL;
        if (q && num(q + 10, le, &v))
            o->weights_gib = v;
        if (a && num(a + 10, le, &v) && !o->post_load_avail_gb)
            o->post_load_avail_gb = v;
        q = find(p, le, "Load weight begin");
        q = q ? find(q, le, "avail mem=") : NULL;
        if (q && num(q + 10, le, &v) && !o->pre_load_avail_gb)
            o->pre_load_avail_gb = v; /* the target's; a draft's load comes later */
        q = find(p, le, "Memory pool end");
        q = q ? find(q, le, "avail mem=") : NULL;
        if (q && num(q + 10, le, &v))
            o->pool_end_avail_gb = v;
        q = find(p, le, "sglang version ");
        if (!q)
            q = find(p, le, "SGLang version ");
        if (q) {
            q += 15;
            size_t l = 0;
            while (q + l < le && !isspace((unsigned char)q[l]) && l + 1 < sizeof(o->engine_version))
                l++;
            memcpy(o->engine_version, q, l);
            o->engine_version[l] = 0;
        }
        p = nl ? nl + 1 : end;
    }
    sw__bootlog_classify(text, len, o);
    /* "Not enough memory. Please try to increase --mem-fraction-static." is SGLang's
     * pool-too-small refusal. */
    const char *nm = find(text, end, "Not enough memory. Please try to increase --mem-fraction");
    if (nm && (!o->st.failed || o->st.failure.cls == SW_BOOT_UNKNOWN)) {
        int line = 1;
        for (const char *x = text; x < nm; x++)
            line += *x == '\n';
        const char *le = memchr(nm, '\n', (size_t)(end - nm));
        struct sw_boot_failure *f = &o->st.failure;
        f->cls = SW_BOOT_KV_TOO_SMALL;
        f->phase = SW_PHASE_KV_ALLOC;
        f->line = line;
        sw__engine_copy_line(f->message, sizeof(f->message), nm, (size_t)((le ? le : end) - nm));
        snprintf(o->kind, sizeof(o->kind), "runtime_error");
        o->st.failed = true;
    }
    (void)e;
    return 0;
}

static int sglang_bootlog(const char *text, size_t len, const char *where,
                          const struct sw_bootlog_hints *hints, json_t **out,
                          struct sw_boot_status *st, struct sw_err *e)
{
    struct sw_vllm_bootlog *r = sw_malloc(sizeof(*r));
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_sglang_bootlog_parse(text, len, r, e);
    /* Nothing only SGLang prints: its pool line, its limits, its version line or its marks. */
    if (!r->has_sglang_kv && !r->max_total_num_tokens && !r->max_running_requests &&
        !r->mamba_slots && !r->engine_version[0] &&
        (!r->st.failed || r->st.failure.cls == SW_BOOT_UNKNOWN) &&
        sw__bootlog_not_this_engine(text, len, where, "sglang", hints, &r->st))
        snprintf(r->kind, sizeof(r->kind), "not_this_engine");
    *out = sw_vllm_bootlog_json(r);
    int rc = *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
    if (!rc) {
        sw_json_set_str(*out, "log", where);
        if (st)
            *st = r->st;
    }
    sw_free(r);
    return rc;
}

static const struct sw_engine_metric sglang_metrics[] = {
    {"sglang:num_running_reqs", "gauge", "requests running"},
    {"sglang:num_queue_reqs", "gauge", "requests waiting"},
    {"sglang:token_usage", "gauge", "fraction of the token pool in use"},
    {"sglang:prompt_tokens_total", "counter", "prefill tokens processed"},
    {"sglang:generation_tokens_total", "counter", "tokens generated"},
};

static const char *const sglang_aliases[] = {"SGLang", NULL};

const struct sw_engine sw__engine_sglang = {
    .name = "sglang",
    .aliases = sglang_aliases,
    .default_binary = "python3",
    .render = sw_sglang_render_endpoint,
    .bootlog = sglang_bootlog,
    .diff = sw__vllm_diff,
    .error_shape = sw__openai_error_shape,
    .health_path = "/health",
    .health_loading_status = 0,
    .liveness_path = "/v1/chat/completions",
    .liveness_body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Say OK.\"}],"
                     "\"max_tokens\":1,\"temperature\":0,\"stream\":false}",
    .metrics = sglang_metrics,
    .n_metrics = SW_ARRAY_LEN(sglang_metrics),
};
