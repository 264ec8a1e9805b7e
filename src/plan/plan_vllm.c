/*
 * plan/plan_vllm: vLLM's plan of an endpoint, the vLLM branch of sw_plan_endpoint (plan.c):
 * memory/vllm with the endpoint's shape, devices and fork profile as the options and its
 * config.json (here, or on its ssh host; or inline `arch`) as the model; the weights from the
 * safetensors headers (here, or on the host). A pool the engine sizes at boot without the
 * weights is said, and only the per-request price is planned (against a stand-in pool);
 * speculative decoding's share of the pool is priced against the same plan without the drafter.
 *
 * What it does not do: the law itself (memory/vllm), judge the plan (gate), print (cli).
 */
#include <slipway/engine.h>
#include <slipway/hf.h>
#include <slipway/plan.h>
#include <slipway/profile.h>
#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

#include "plan/plan_internal.h"
#include "plan/remote_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Lines that only a sized pool prints; dropped when the pool is sized at boot by profiling and
 * slipway cannot know what the profile leaves. */
static bool pool_line(const char *s)
{
    return strstr(s, "Available KV cache memory") || strstr(s, "GPU KV cache size") ||
           strstr(s, "# GPU blocks") || strstr(s, "Maximum concurrency") ||
           strstr(s, "ValueError: one request");
}

/* The draft's config for vLLM speculative decoding: payload.draft's config.json when it is on
 * this machine, else the endpoint's draft_arch; 1 when loaded, 0 when neither is there. */
static int vllm_draft_config(const struct sw_fleet_endpoint *ep, struct sw_hf_config *dc, char *src,
                             size_t srcn, struct sw_err *e)
{
    const char *dir = ep->payload.draft.v;
    char path[4096];
    int rc;
    if (dir && dir[0] == '/' &&
        (size_t)snprintf(path, sizeof(path), "%s/config.json", dir) < sizeof(path) &&
        access(path, R_OK) == 0) {
        snprintf(src, srcn, "%.690s", path);
        rc = sw_hf_config_load(path, dc, e);
        return rc ? rc : 1;
    }
    if (!ep->draft_arch)
        return 0;
    struct sw_fleet_endpoint q = *ep;
    q.arch = ep->draft_arch;
    q.arch_at = ep->draft_arch_at;
    q.payload.path.v = NULL;
    rc = sw_endpoint_hf_config(&q, dc, src, srcn, e);
    if (rc) {
        sw_err_prefix(e, "%s: draft_arch", ep->name);
        return rc;
    }
    /* "FILE:L:C: EP: arch" names the draft's declaration */
    size_t n = strlen(src);
    if (n >= 4 && !strcmp(src + n - 4, "arch") && n + 6 < srcn)
        snprintf(src + n - 4, srcn - (n - 4), "draft_arch");
    return 1;
}

/* The per-token KV price of a vLLM report over its max_model_len: whole blocks per request x
 * the bytes of one block across the group (page x layers per group), as the pool gate counts it
 * (the pool's leftover bytes, less than a block, are not in the price). */
static double vllm_price(const struct sw_vllm_report *r)
{
    if (r->max_model_len <= 0)
        return 0;
    double stride = (double)r->page_bytes * (double)(r->group_size > 0 ? r->group_size : 1);
    if (r->num_gpu_blocks > 0 && r->available_kv_bytes > 0 && stride > 0 &&
        (int64_t)((double)r->available_kv_bytes / stride) != r->num_gpu_blocks)
        stride = (double)(r->available_kv_bytes / (uint64_t)r->num_gpu_blocks);
    return (double)r->blocks_per_request * stride / (double)r->max_model_len;
}

/* Speculative decoding's share of the pool, named: the same plan without the drafter gives the
 * price and pool the draft layers (the MTP layers as extra attention layers of the same pool,
 * the speculative state blocks of a hybrid's mamba groups) take; the drafter's weights come from
 * the fact draft_file when declared (the law does not read safetensors sizes here). */
static int vllm_draft_lines(const struct sw_fleet_endpoint *ep, const struct sw_hf_config *c,
                            const struct sw_vllm_opts *o, const struct sw_vllm_report *r,
                            const char *draft_src, json_t *plan, char *warn, size_t warnn,
                            struct sw_err *e)
{
    struct sw_vllm_opts q = *o;
    struct sw_vllm_report *r0 = sw_calloc(1, sizeof(*r0));
    struct sw_vllm_spec *sp = sw_calloc(SW_VLLM_MAX_SPECS, sizeof(*sp));
    int rc = 0, n = 0, nd = 0;
    if (!r0 || !sp) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    bool hybrid = false;
    if (sw_vllm_specs(c, o, (o->pp > 0 ? o->pp : 1) - 1, sp, &n, NULL) == 0)
        for (int i = 0; i < n; i++) {
            nd += sp[i].draft;
            hybrid |= sp[i].n_states > 0;
        }
    q.spec_method[0] = '\0';
    q.num_speculative_tokens = 0;
    q.draft = NULL;
    rc = sw_vllm_plan(c, &q, r0, e);
    if (rc) {
        sw_err_prefix(e, "%s: the plan without speculative decoding", ep->name);
        goto out;
    }
    double with = vllm_price(r), without = vllm_price(r0);
    uint64_t wbytes = sw__plan_fact_bytes(ep, "draft_file");
    json_t *j = json_object();
    if (!j) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    sw_json_set_str(j, "method", o->spec_method);
    sw_json_set_int(j, "num_speculative_tokens", o->num_speculative_tokens);
    sw_json_set_int(j, "draft_layers", nd);
    if (draft_src && draft_src[0])
        sw_json_set_str(j, "draft_config", draft_src);
    sw_json_set_real(j, "draft_kv_bytes_per_token", round((with - without) * 10.0) / 10.0);
    sw_json_set_real(j, "bytes_per_token_without", round(without * 10.0) / 10.0);
    sw_json_set_int(j, "kv_cache_tokens_without", r0->kv_cache_tokens);
    sw_json_set_real(j, "max_concurrency_without", r0->max_concurrency);
    if (wbytes)
        sw_json_set_int(j, "draft_weights_bytes", (json_int_t)wbytes);
    else
        sw_json_set_new(j, "draft_weights_bytes", json_null());
    sw_json_set_new(plan, "draft", j);
    char b[400];
    snprintf(b, sizeof(b),
             "draft KV (%s, %lld tokens): %d draft layer%s in the pool%s: +%.1f B/token over "
             "%.1f without the drafter",
             o->spec_method, (long long)o->num_speculative_tokens, nd, nd == 1 ? "" : "s",
             hybrid ? " + speculative state blocks of the mamba groups" : "", with - without,
             without);
    json_array_append_new(json_object_get(plan, "lines"), json_string(b));
    if (wbytes) {
        snprintf(b, sizeof(b), "draft weights: %.2f GiB (fact draft_file)",
                 (double)wbytes / (double)SW_GIB);
        json_array_append_new(json_object_get(plan, "lines"), json_string(b));
    }
    bool mtp = strstr(o->spec_method, "mtp") != NULL;
    if (mtp && nd == 0)
        snprintf(warn + strlen(warn), warnn - strlen(warn),
                 "%sspeculative %s: no MTP layer is priced (the config declares no "
                 "num_nextn_predict_layers / mtp_num_hidden_layers%s)",
                 warn[0] ? "; " : "", o->spec_method,
                 ep->payload.draft.v ? " and the draft's config is neither here nor declared as "
                                       "draft_arch"
                                     : "");
    if (!wbytes)
        snprintf(warn + strlen(warn), warnn - strlen(warn),
                 "%sdraft weights not priced (the drafter's weights are in the engine's "
                 "profiled budget; declare measured.draft_file to name them)",
                 warn[0] ? "; " : "");
out:
    sw_free(r0);
    sw_free(sp);
    return rc;
}

/* The weights of a checkpoint on ep's host, as sw_vllm_weights_from_dir reads them here (the
 * shards' headers, per rank: / tp / pp). A host that does not give them leaves the pool sized
 * at boot (said); a shard header that is there but wrong is the plan's error. */
static int host_weights(const struct sw_fleet_endpoint *ep, struct sw_vllm_opts *o,
                        struct sw_plan_model_read *rd, struct sw_err *e)
{
    struct sw__remote r;
    struct sw_err re;
    uint64_t wb = 0;
    sw_err_clear(&re);
    int rc = sw__remote_begin(&r, ep, rd, &re);
    if (!rc)
        rc = sw__remote_weight_bytes(&r, ep->payload.path.v, &wb, &re);
    sw__remote_end(&r);
    if (!rc) {
        o->weights_bytes =
            wb / (uint64_t)(o->tp > 0 ? o->tp : 1) / (uint64_t)(o->pp > 0 ? o->pp : 1);
        return 0;
    }
    if (rc == SW_EPARSE || rc == SW_ERANGE || rc == SW_ETRUNC || rc == SW_ENOMEM) {
        if (e)
            *e = re;
        return rc;
    }
    sw__remote_note_why(rd, &re);
    return 0;
}

/* The argv the engine would get. The law reads the fleet's shape, not this argv, so a render
 * that cannot be made here (a secret, say) is said in p->cmd_why and does not stop the plan;
 * only running out of memory does. */
static int vllm_cmd(const struct sw_fleet_endpoint *ep, struct sw_plan *p, struct sw_err *e)
{
    const struct sw_engine *eng = sw_engine_find("vllm");
    struct sw_err re;
    sw_err_clear(&re);
    if (!eng || eng->render(ep, &p->cmd, &re)) {
        char buf[600];
        snprintf(p->cmd_why, sizeof(p->cmd_why), "%s",
                 eng ? sw_err_format(&re, buf, sizeof(buf)) : "no vllm engine adapter");
        if (re.code == SW_ENOMEM)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    return 0;
}

/* The pool's inputs: pinned by kv_cache_bytes, or sized from the device and the weights (read
 * here, else on the host). Without either the engine sizes the pool at boot from what its
 * profiling run leaves, unknowable offline: the per-request block arithmetic does not depend on
 * the pool, so it is planned against a stand-in (p->pool_sized false) and the warning says why. */
static int vllm_pool(const struct sw_fleet_endpoint *ep, struct sw_vllm_opts *o, struct sw_plan *p,
                     char *warn, size_t warnn, struct sw_err *e)
{
    p->pool_pinned = o->kv_cache_memory_bytes > 0;
    p->pool_sized = true;
    if (p->pool_pinned)
        return 0;
    sw_vllm_weights_from_dir(o, ep->payload.path.v);
    if (!o->weights_bytes && o->gpu_total_bytes && p->model_read.found) {
        int rc = host_weights(ep, o, &p->model_read, e);
        if (rc)
            return rc;
    }
    if (o->gpu_total_bytes && o->weights_bytes)
        return 0;
    p->pool_sized = false;
    o->kv_cache_memory_bytes = 1ull << 30;
    snprintf(warn, warnn,
             "the pool is sized at boot (gpu_memory_utilization x device - weights - "
             "activation - non-torch%s) and %s: only the per-request price is planned; "
             "pin kv_cache_bytes or record a boot and run `slipway calibrate`",
             o->version == SW_VLLM_CURRENT ? " - CUDA graphs" : "",
             !o->gpu_total_bytes   ? "the device declares no memory"
             : p->model_read.found ? "the weights' headers could not be read on the host"
                                   : "the weights are not on this machine");
    return 0;
}

/* The plan's JSON (p->engine_plan) from the law's report: the endpoint, the config it read, what
 * was read on the host; a pool sized at boot drops every figure and line only a sized pool has;
 * the price of this geometry (whole blocks per request over max_model_len). */
static int vllm_plan_json(const struct sw_fleet_endpoint *ep, struct sw_plan *p, const char *src,
                          struct sw_err *e)
{
    const struct sw_vllm_report *r = p->vllm;
    json_t *j = sw_vllm_report_json(r);
    if (!j)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    p->engine_plan = j;
    json_t *rep = json_object_get(j, "report");
    sw_json_set_str(j, "endpoint", ep->name);
    sw_json_set_str(j, "config", src);
    if (p->model_read.asked)
        sw_json_set_new(j, "model_read", sw_plan_model_read_json(&p->model_read));
    sw_json_set_bool(rep, "pool_sized", p->pool_sized);
    if (!p->pool_sized) {
        static const char *const drop[] = {"kv_cache_tokens",
                                           "max_concurrency",
                                           "max_concurrency_exact",
                                           "num_gpu_blocks",
                                           "available_kv_bytes",
                                           "available_from_flag",
                                           "fits",
                                           "estimated_max_model_len"};
        for (size_t k = 0; k < SW_ARRAY_LEN(drop); k++)
            json_object_del(rep, drop[k]);
        json_t *lines = json_object_get(j, "lines");
        for (size_t k = json_array_size(lines); k-- > 0;)
            if (pool_line(json_string_value(json_array_get(lines, k))))
                json_array_remove(lines, k);
    }
    if (r->max_model_len > 0 && r->num_gpu_blocks > 0 && r->available_kv_bytes > 0) {
        double block = (double)(r->available_kv_bytes / (uint64_t)r->num_gpu_blocks);
        sw_json_set_real(
            rep, "bytes_per_token",
            round((double)r->blocks_per_request * block / (double)r->max_model_len * 10.0) / 10.0);
    }
    return 0;
}

/* The endpoint's fork profile: a warning when it declares no KV-law terms, and its arena lines
 * when it has one. */
static int vllm_profile(const struct sw_fleet_endpoint *ep, const struct sw_vllm_opts *o,
                        const struct sw_vllm_report *r, json_t *j, char *warn, size_t warnn,
                        struct sw_err *e)
{
    struct sw_fork_profile prof;
    if (!ep->profile)
        return 0;
    int rc = sw_profile_from_fleet(ep->profile, &prof, e);
    if (rc)
        return rc;
    if (!prof.extra_attn_bytes_per_token && !prof.extra_mamba_blocks)
        snprintf(warn + strlen(warn), warnn - strlen(warn),
                 "%sprofile %s declares no KV-law terms (extra bytes per token, extra state "
                 "blocks): the stock law's figures; `slipway calibrate` fits them from "
                 "recorded boots",
                 warn[0] ? "; " : "", prof.name);
    if (prof.has_arena)
        sw_profile_arena_json(&prof, r->max_model_len, o->max_num_batched_tokens, j);
    return 0;
}

/* The plan's warnings: the law's own, then the planner's (warn), joined by "; ". */
static void vllm_warnings(json_t *j, const char *warn)
{
    if (!warn[0])
        return;
    const char *w0 = json_string_value(json_object_get(j, "warnings"));
    char all[3072];
    snprintf(all, sizeof(all), "%s%s%s", w0 ? w0 : "", w0 ? "; " : "", warn);
    sw_json_set_str(j, "warnings", all);
}

/* vLLM's plan of an endpoint: the argv, the options from the fleet, the model's config (here,
 * on the host, or declared), the pool's inputs, the draft's config for speculative decoding,
 * the law, then the plan's JSON with the profile's and the draft's lines. */
int sw__plan_vllm(const struct sw_fleet_endpoint *ep, struct sw_plan *p, struct sw_err *e)
{
    struct sw_vllm_opts o;
    struct sw_hf_config *c = NULL, *dc = NULL;
    char src[700], warn[2048] = "", dsrc[700] = "";
    int rc = vllm_cmd(ep, p, e);
    if (!rc)
        rc = sw_vllm_opts_from_endpoint(ep, &o, e);
    if (rc)
        return rc;
    c = sw_calloc(1, sizeof(*c));
    p->vllm = sw_calloc(1, sizeof(*p->vllm));
    if (!c || !p->vllm) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto done;
    }
    rc = sw_endpoint_hf_config_read(ep, c, src, sizeof(src), &p->model_read, e);
    if (!rc)
        rc = vllm_pool(ep, &o, p, warn, sizeof(warn), e);
    if (rc)
        goto done;
    bool spec = o.num_speculative_tokens > 0 && o.spec_method[0] && strcmp(o.spec_method, "ngram");
    if (spec) {
        dc = sw_calloc(1, sizeof(*dc));
        if (!dc) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto done;
        }
        rc = vllm_draft_config(ep, dc, dsrc, sizeof(dsrc), e);
        if (rc < 0)
            goto done;
        if (rc == 1)
            o.draft = dc;
        rc = 0;
    }
    rc = sw_vllm_plan(c, &o, p->vllm, e);
    if (rc)
        goto done;
    p->vllm_opts = sw_malloc(sizeof(*p->vllm_opts));
    if (!p->vllm_opts) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto done;
    }
    *p->vllm_opts = o;
    rc = vllm_plan_json(ep, p, src, e);
    if (!rc)
        rc = vllm_profile(ep, &o, p->vllm, p->engine_plan, warn, sizeof(warn), e);
    if (rc)
        goto done;
    if (spec) {
        json_t *j = p->engine_plan;
        rc = vllm_draft_lines(ep, c, &o, p->vllm, dsrc, j, warn, sizeof(warn), e);
        if (rc)
            goto done;
        if (!p->pool_sized) { /* the stand-in pool's tokens mean nothing */
            json_object_del(json_object_get(j, "draft"), "kv_cache_tokens_without");
            json_object_del(json_object_get(j, "draft"), "max_concurrency_without");
        }
    }
    vllm_warnings(p->engine_plan, warn);
    p->predicted = json_incref(json_object_get(p->engine_plan, "report"));
done:
    if (p->vllm_opts)
        p->vllm_opts->draft = NULL; /* dc is freed here */
    sw_free(c);
    sw_free(dc);
    return rc;
}
