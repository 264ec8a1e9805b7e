/*
 * engine/sglang: SGLang's command line (read through its flag table, sglang_flags.c) -> the
 * SGLang law, its boot log -> the shared boot-log report, and its entry in the engine table.
 *
 * What it does not do: read flags (sglang_flags.c), container path mapping (vllm_render.c), or
 * the router / PD-disaggregation processes.
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

/* One line of an SGLang boot log, [p, le): the figures it prints. */
static void sglang_line(struct sw_vllm_bootlog *o, const char *p, const char *le)
{
    const char *q;
    double v;
    q = sw__bootlog_find(p, le, "KV Cache") ? sw__bootlog_find(p, le, "#tokens: ") : NULL;
    if (q && num(q + 9, le, &v)) {
        o->has_sglang_kv = true;
        o->sglang_tokens = (int64_t)v;
        const char *k = sw__bootlog_find(p, le, "K size: ");
        if (k && num(k + 8, le, &v))
            o->sglang_k_gb = v;
        k = sw__bootlog_find(p, le, "V size: ");
        if (k && num(k + 8, le, &v))
            o->sglang_v_gb = v;
        k = sw__bootlog_find(p, le, "KV size: ");
        if (k && num(k + 9, le, &v))
            o->sglang_k_gb = v;
    }
    q = sw__bootlog_find(p, le, "max_total_num_tokens=");
    if (q && num(q + 21, le, &v))
        o->max_total_num_tokens = (int64_t)v;
    q = sw__bootlog_find(p, le, "max_running_requests=");
    if (q && num(q + 21, le, &v))
        o->max_running_requests = (int64_t)v;
    q = sw__bootlog_find(p, le, "max_mamba_cache_size: ");
    if (q && num(q + 22, le, &v))
        o->mamba_slots = (int64_t)v;
    q = sw__bootlog_find(p, le, "Load weight end");
    const char *a = q ? sw__bootlog_find(q, le, "avail mem=") : NULL;
    q = q ? sw__bootlog_find(q, le, "mem usage=") : NULL;
    if (q && num(q + 10, le, &v))
        o->weights_gib = v;
    if (a && num(a + 10, le, &v) && !o->post_load_avail_gb)
        o->post_load_avail_gb = v;
    q = sw__bootlog_find(p, le, "Load weight begin");
    q = q ? sw__bootlog_find(q, le, "avail mem=") : NULL;
    if (q && num(q + 10, le, &v) && !o->pre_load_avail_gb)
        o->pre_load_avail_gb = v; /* the target's; a draft's load comes later */
    q = sw__bootlog_find(p, le, "Memory pool end");
    q = q ? sw__bootlog_find(q, le, "avail mem=") : NULL;
    if (q && num(q + 10, le, &v))
        o->pool_end_avail_gb = v;
    q = sw__bootlog_find(p, le, "sglang version ");
    if (!q)
        q = sw__bootlog_find(p, le, "SGLang version ");
    if (q) {
        q += 15;
        size_t l = 0;
        while (q + l < le && !isspace((unsigned char)q[l]) && l + 1 < sizeof(o->engine_version))
            l++;
        memcpy(o->engine_version, q, l);
        o->engine_version[l] = 0;
    }
}

int sw_sglang_bootlog_parse(const char *text, size_t len, struct sw_vllm_bootlog *o,
                            struct sw_err *e)
{
    const char *end = text + len;
    sw__bootlog_read(text, len, "sglang", o, sglang_line);
    /* "Not enough memory. Please try to increase --mem-fraction-static." is SGLang's
     * pool-too-small refusal. */
    const char *nm =
        sw__bootlog_find(text, end, "Not enough memory. Please try to increase --mem-fraction");
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
    .liveness_path = SW__LIVENESS_PATH,
    .liveness_body = SW__LIVENESS_BODY,
    .metrics = sglang_metrics,
    .n_metrics = SW_ARRAY_LEN(sglang_metrics),
};
