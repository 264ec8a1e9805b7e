/*
 * memory/sglang: SGLang's token pool, mamba state pool and request cap (sources per rule in
 * docs/sglang-law.md; python/sglang/srt/model_executor/model_runner*.py and server_args.py).
 *
 * What it does not do: the SWA / DSA / hierarchical-cache pools, or the VLM reduction of the
 * default fraction (a warning says so).
 */
#include <slipway/sglang.h>

#include <math.h>
#include <string.h>

void sw_sglang_opts_init(struct sw_sglang_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->tp = o->pp = o->dp = 1;
    snprintf(o->kv_cache_dtype, sizeof(o->kv_cache_dtype), "auto");
    snprintf(o->dtype, sizeof(o->dtype), "auto");
    snprintf(o->mamba_ssm_dtype, sizeof(o->mamba_ssm_dtype), "float32");
}

double sw_sglang_default_mem_fraction(const struct sw_sglang_opts *o, double *reserved_mib)
{
    if (!o->gpu_mem_bytes) {
        if (reserved_mib)
            *reserved_mib = 0;
        return 0.88; /* server_args: the fallback when the capacity is unknown */
    }
    double gpu_mem = (double)o->gpu_mem_bytes / 1048576.0; /* MiB */
    int64_t chunk = o->chunked_prefill_size;
    if (chunk == 0)
        chunk = gpu_mem < 35 * 1024    ? 2048
                : gpu_mem < 60 * 1024  ? 4096
                : gpu_mem < 160 * 1024 ? 8192
                                       : 16384;
    int64_t bs = o->cuda_graph_max_bs;
    if (bs == 0)
        bs = gpu_mem < 35 * 1024 ? 24 : 160; /* approximate buckets: pass --cuda-graph-max-bs */
    double reserved = 512;
    reserved += (double)SW_MAX(chunk, 2048) * 1.5;
    reserved += (double)bs * 2;
    reserved += (double)o->tp * (double)o->pp / 8 * 1024;
    if (o->enable_dp_attention) {
        reserved += (double)bs * o->dp * 3;
        if (bs > 300)
            reserved += (double)bs * o->dp * 1.5;
    }
    if (gpu_mem > 60 * 1024)
        reserved = SW_MAX(reserved, 10.0 * 1024);
    if (o->speculative_algorithm[0]) {
        if (!strcmp(o->speculative_algorithm, "STANDALONE"))
            reserved += 6 * 1024;
        else if (strcmp(o->speculative_algorithm, "NGRAM"))
            reserved += 2 * 1024;
    }
    if (reserved_mib)
        *reserved_mib = reserved;
    return round((gpu_mem - reserved) / gpu_mem * 1000.0) / 1000.0;
}

static unsigned kv_bytes(const struct sw_hf_config *c, const struct sw_sglang_opts *o)
{
    const char *k = o->kv_cache_dtype;
    if (!strncmp(k, "fp8", 3) || !strcmp(k, "int8"))
        return 1;
    if (!strcmp(k, "bf16") || !strcmp(k, "bfloat16") || !strcmp(k, "fp16") || !strcmp(k, "float16"))
        return 2;
    unsigned b =
        strcmp(o->dtype, "auto") ? sw_hf_dtype_size(o->dtype) : sw_hf_dtype_size(c->torch_dtype);
    return (b == 0 || b == 4) ? 2 : b;
}

/* The law's inputs and results, step to step of sw_sglang_plan. */
struct splan {
    const struct sw_hf_config *c;
    const struct sw_sglang_opts *o;
    struct sw_sglang_report *r;
    int64_t tp;
    unsigned kvb, mdt, ssm; /* KV, model and mamba ssm dtype bytes */
    bool hybrid;
    double rest; /* GiB left for KV (after the mamba pool) */
    int64_t tokens, reqs, ctx, page;
};

/* KV layers: every attention layer, except that hybrids keep KV only on full attention; the cell
 * (KV bytes per token over them, one rank; 0 without KV layers). */
static void cell_size(struct splan *p)
{
    const struct sw_hf_config *c = p->c;
    struct sw_sglang_report *r = p->r;
    int64_t n_full = sw_hf_count_kind(c, SW_HF_LAYER_FULL) + sw_hf_count_kind(c, SW_HF_LAYER_MLA);
    int64_t n_swa =
        sw_hf_count_kind(c, SW_HF_LAYER_SLIDING) + sw_hf_count_kind(c, SW_HF_LAYER_CHUNKED);
    int64_t n_lin = sw_hf_count_kind(c, SW_HF_LAYER_LINEAR);
    int64_t n_m2 = sw_hf_count_kind(c, SW_HF_LAYER_MAMBA2) + sw_hf_count_kind(c, SW_HF_LAYER_MAMBA);
    p->hybrid = n_lin + n_m2 > 0;
    r->kv_layers = n_full + n_swa;
    if (n_swa)
        snprintf(r->warnings, sizeof(r->warnings),
                 "sliding-window layers counted as full: SGLang's SWA pool ratio is not modelled");
    if (c->kv_lora_rank > 0)
        r->cell_bytes = (c->kv_lora_rank + c->qk_rope_head_dim) * r->kv_layers * p->kvb;
    else {
        int64_t kvh = c->num_key_value_heads / p->tp > 0 ? c->num_key_value_heads / p->tp : 1;
        r->cell_bytes = kvh * c->head_dim * r->kv_layers * 2 * p->kvb;
    }
}

/* Mamba state per request: conv (model dtype) + temporal (mamba_ssm_dtype). */
static void mamba_state(struct splan *p)
{
    const struct sw_hf_config *c = p->c;
    struct sw_sglang_report *r = p->r;
    int64_t tp = p->tp, per = 0, conv = 0;
    for (int64_t i = 0; i < c->num_hidden_layers; i++) {
        if (c->layer_kind[i] == SW_HF_LAYER_LINEAR) {
            int64_t conv_dim = c->linear_num_key_heads * c->linear_key_head_dim * 2 +
                               c->linear_num_value_heads * c->linear_value_head_dim;
            int64_t k = c->linear_conv_kernel_dim ? c->linear_conv_kernel_dim : 4;
            conv += (conv_dim / tp) * (k - 1) * p->mdt;
            per += (c->linear_num_value_heads / tp) * c->linear_value_head_dim *
                   c->linear_key_head_dim * p->ssm;
        } else if (c->layer_kind[i] == SW_HF_LAYER_MAMBA2) {
            int64_t heads = c->mamba_num_heads, hd = c->mamba_head_dim;
            int64_t inter = c->mamba_d_inner ? c->mamba_d_inner : heads * hd;
            int64_t ng = c->mamba_n_groups ? c->mamba_n_groups : 1;
            if (ng % tp)
                ng += tp - ng % tp;
            int64_t k = c->mamba_d_conv ? c->mamba_d_conv : 4;
            conv += ((inter + 2 * ng * c->mamba_d_state) / tp) * (k - 1) * p->mdt;
            per += (heads / tp) * hd * c->mamba_d_state * p->ssm;
        }
    }
    r->mamba_conv_per_req = conv;
    r->mamba_ssm_per_req = per;
    r->mamba_cache_per_req = conv + per;
}

/* mem_fraction_static and rest (profile_max_num_token): what the static fraction leaves after
 * the weights, from the free-memory facts or a calibrated rest. */
static int rest_of(struct splan *p, struct sw_err *e)
{
    const struct sw_sglang_opts *o = p->o;
    struct sw_sglang_report *r = p->r;
    r->mem_fraction_static = o->mem_fraction_static;
    if (r->mem_fraction_static <= 0) {
        r->mem_fraction_static = sw_sglang_default_mem_fraction(o, &r->reserved_mem_mib);
        r->fraction_defaulted = true;
    }
    if (!o->rest_bytes && (!o->post_load_avail_bytes || !o->pre_load_free_bytes)) {
        if (!o->max_total_tokens)
            return sw_err_set(e, SW_EINVAL,
                              "SGLang sizes its pool from free memory before and after loading "
                              "the weights: give both facts, or --max-total-tokens");
    }
    double avail = (double)o->post_load_avail_bytes / (double)SW_GIB;
    double total = (double)o->pre_load_free_bytes / (double)SW_GIB;
    p->rest = avail - total * (1 - r->mem_fraction_static);
    if (o->rest_bytes)
        p->rest = (double)o->rest_bytes / (double)SW_GIB;
    return 0;
}

/* handle_max_mamba_cache: the mamba pool carved out of rest first. */
static void mamba_pool(struct splan *p)
{
    const struct sw_sglang_opts *o = p->o;
    struct sw_sglang_report *r = p->r;
    if (o->speculative_algorithm[0] && o->max_running_requests && o->spec_num_draft_tokens)
        p->rest -=
            (double)(r->mamba_cache_per_req * o->max_running_requests * o->spec_num_draft_tokens) /
            (double)SW_GIB;
    if (o->max_mamba_cache_size > 0)
        r->max_mamba_cache_size = o->max_mamba_cache_size;
    else if (o->disable_radix_cache && o->max_running_requests > 0)
        r->max_mamba_cache_size = o->max_running_requests;
    else {
        double ratio = o->mamba_full_memory_ratio > 0 ? o->mamba_full_memory_ratio : 0.9;
        double mem = p->rest * ratio / (1 + ratio);
        r->max_mamba_cache_size =
            mem > 0 ? (int64_t)floor(mem * (double)SW_GIB / (double)r->mamba_cache_per_req) : 0;
    }
    p->rest -= (double)(r->max_mamba_cache_size * r->mamba_cache_per_req) / (double)SW_GIB;
    /* "Mamba Cache is allocated. ... conv_state size: X GB, ssm_state size: Y GB" */
    r->mamba_conv_gb = (double)(r->max_mamba_cache_size * r->mamba_conv_per_req) / (double)SW_GIB;
    r->mamba_ssm_gb = (double)(r->max_mamba_cache_size * r->mamba_ssm_per_req) / (double)SW_GIB;
}

/* max_total_num_tokens (capped by --max-total-tokens, grown by a speculative draft, rounded to
 * the page), the request pool and the scheduler's running requests. */
static int pool_tokens(struct splan *p, struct sw_err *e)
{
    const struct sw_sglang_opts *o = p->o;
    struct sw_sglang_report *r = p->r;
    int64_t tokens =
        p->rest > 0 ? (int64_t)floor(p->rest * (double)SW_GIB / (double)r->cell_bytes) : 0;
    if (o->max_total_tokens > 0 && (tokens <= 0 || o->max_total_tokens < tokens))
        tokens = o->max_total_tokens;
    p->ctx = o->context_length > 0 ? o->context_length : p->c->max_position_embeddings;
    if (p->ctx <= 0)
        p->ctx = 4096;
    int64_t reqs = SW_MIN(SW_MAX((int64_t)((double)tokens / (double)p->ctx * 512), 2048), 4096);
    if (p->hybrid) {
        int64_t ratio =
            o->disable_radix_cache ? 1 : 3; /* MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO */
        reqs = SW_MIN(reqs, r->max_mamba_cache_size / ratio);
    }
    if (o->speculative_algorithm[0] && strcmp(o->speculative_algorithm, "NGRAM"))
        tokens +=
            reqs * o->spec_num_steps * o->spec_eagle_topk + reqs * o->spec_num_draft_tokens + 100;
    p->page = o->page_size > 0 ? o->page_size : 1;
    tokens = tokens / p->page * p->page;
    if (tokens <= 0)
        return sw_err_set(e, SW_ERANGE,
                          "Not enough memory: %.2f GiB left for KV after the static fraction "
                          "%.3f (SGLang: increase --mem-fraction-static)",
                          p->rest, r->mem_fraction_static);
    r->max_total_num_tokens = tokens;
    r->max_num_reqs = reqs;
    /* Scheduler: min(max_total_num_tokens // 2 or the flag, the request pool). */
    int64_t mr = o->max_running_requests > 0
                     ? o->max_running_requests / (o->enable_dp_attention ? o->dp : 1)
                     : tokens / 2;
    r->max_running_requests = SW_MIN(mr, reqs);
    p->tokens = tokens;
    p->reqs = reqs;
    return 0;
}

/* The buffers as printed: K and V (MHATokenToKVPool), the request table, the pool end. */
static void buffers(struct splan *p)
{
    const struct sw_sglang_opts *o = p->o;
    struct sw_sglang_report *r = p->r;
    double tokens = (double)p->tokens, page = (double)p->page;
    /* MHATokenToKVPool: buffers of (size + page_size) x heads x dim per KV layer. */
    if (p->c->kv_lora_rank > 0) {
        r->k_size_gb = (tokens + page) * (double)r->cell_bytes / (double)SW_GIB;
    } else {
        r->k_size_gb = (tokens + page) * (double)(r->cell_bytes / 2) / (double)SW_GIB;
        r->v_size_gb = r->k_size_gb;
    }
    /* ReqToTokenPool: one row of the context per request slot, + 1 (the padding slot); the
     * slots are the flag's when given, else the formula's */
    int64_t slots =
        (o->max_running_requests > 0 ? SW_MIN(o->max_running_requests, p->reqs) : p->reqs) + 1;
    r->req_to_token_gb = (double)slots * (double)p->ctx * 4.0 / (double)SW_GIB;
    if (o->post_load_avail_bytes) {
        r->has_pool_end = true;
        r->pre_load_gb = (double)o->pre_load_free_bytes / (double)SW_GIB;
        r->post_load_gb = (double)o->post_load_avail_bytes / (double)SW_GIB;
        r->pool_end_avail_gb = (double)o->post_load_avail_bytes / (double)SW_GIB - r->k_size_gb -
                               r->v_size_gb - r->mamba_conv_gb - r->mamba_ssm_gb -
                               r->req_to_token_gb;
    }
}

int sw_sglang_plan(const struct sw_hf_config *c, const struct sw_sglang_opts *o,
                   struct sw_sglang_report *r, struct sw_err *e)
{
    struct splan p = {.c = c, .o = o, .r = r};
    int rc;
    memset(r, 0, sizeof(*r));
    p.tp = o->tp > 0 ? o->tp : 1;
    p.kvb = kv_bytes(c, o);
    p.mdt =
        strcmp(o->dtype, "auto") ? sw_hf_dtype_size(o->dtype) : sw_hf_dtype_size(c->torch_dtype);
    if (p.mdt == 0 || p.mdt == 4)
        p.mdt = 2;
    p.ssm = sw_hf_dtype_size(o->mamba_ssm_dtype[0] ? o->mamba_ssm_dtype : "float32");
    if (!p.ssm)
        p.ssm = 4;
    cell_size(&p);
    if (r->cell_bytes <= 0)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "no KV layers: SGLang's attention-free path is not "
                          "modelled");
    if (p.hybrid)
        mamba_state(&p);
    if (p.hybrid && r->mamba_cache_per_req <= 0)
        return sw_err_set(e, SW_EINVAL,
                          "a hybrid with no mamba state per request: the config declares no "
                          "linear-attention or mamba dimensions");
    rc = rest_of(&p, e);
    if (rc)
        return rc;
    if (p.hybrid)
        mamba_pool(&p);
    r->rest_gib = p.rest;
    rc = pool_tokens(&p, e);
    if (rc)
        return rc;
    buffers(&p);
    return 0;
}

int sw_sglang_rest_from_tokens(const struct sw_hf_config *c, const struct sw_sglang_opts *o,
                               int64_t tokens, uint64_t *lo, uint64_t *hi, struct sw_err *e)
{
    struct sw_sglang_opts q = *o;
    struct sw_sglang_report r;
    if (tokens <= 0)
        return sw_err_set(e, SW_EINVAL, "a printed pool of %lld tokens calibrates nothing",
                          (long long)tokens);
    if (tokens > ((int64_t)1 << 40))
        return sw_err_set(e, SW_ERANGE, "a printed pool of %lld tokens is past any device",
                          (long long)tokens);
    if (q.speculative_algorithm[0])
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "a speculative pool grows by the draft's tokens: not inverted");
    q.max_total_tokens = tokens; /* the law runs without free-memory facts */
    q.rest_bytes = 0;
    int rc = sw_sglang_plan(c, &q, &r, e);
    if (rc)
        return rc;
    bool fixed =
        o->max_mamba_cache_size > 0 || (o->disable_radix_cache && o->max_running_requests > 0);
    if (r.mamba_cache_per_req && !fixed)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "the mamba pool is autofilled from the same rest: pin "
                          "max_mamba_cache_size on the calibrating boot");
    int64_t page = o->page_size > 0 ? o->page_size : 1;
    uint64_t mamba = (uint64_t)(r.max_mamba_cache_size * r.mamba_cache_per_req);
    /* tokens = floor(rest / cell) rounded down to the page: rest in [tokens x cell, (tokens +
     * page) x cell), plus the mamba pool carved out first */
    if ((uint64_t)tokens > (UINT64_MAX - mamba) / (uint64_t)r.cell_bytes - (uint64_t)page)
        return sw_err_set(e, SW_ERANGE, "%lld tokens overflow the pool arithmetic",
                          (long long)tokens);
    *lo = (uint64_t)tokens * (uint64_t)r.cell_bytes + mamba;
    *hi = ((uint64_t)tokens + (uint64_t)page) * (uint64_t)r.cell_bytes + mamba;
    return 0;
}

json_t *sw_sglang_report_json(const struct sw_sglang_report *r)
{
    json_t *root = json_object(), *rep = json_object(), *lines = json_array();
    if (!root || !rep || !lines) {
        json_decref(root);
        json_decref(rep);
        json_decref(lines);
        return NULL;
    }
    sw_json_set_str(root, "engine", "sglang");
    sw_json_set_str(rep, "engine_version", "sglang-0.5.9 (model_runner memory pools)");
    sw_json_set_int(rep, "max_total_num_tokens", r->max_total_num_tokens);
    sw_json_set_int(rep, "max_running_requests", r->max_running_requests);
    sw_json_set_real(rep, "mem_fraction_static", r->mem_fraction_static);
    sw_json_set_bool(rep, "mem_fraction_defaulted", r->fraction_defaulted);
    sw_json_set_int(rep, "cell_bytes", r->cell_bytes);
    sw_json_set_int(rep, "kv_layers", r->kv_layers);
    if (r->mamba_cache_per_req) {
        sw_json_set_int(rep, "mamba_cache_per_req", r->mamba_cache_per_req);
        sw_json_set_int(rep, "mamba_pool_size", r->max_mamba_cache_size);
    }
    if (r->mamba_cache_per_req && r->max_mamba_cache_size > 0) {
        sw_json_set_real(rep, "mamba_conv_gb", round(r->mamba_conv_gb * 100) / 100);
        sw_json_set_real(rep, "mamba_ssm_gb", round(r->mamba_ssm_gb * 100) / 100);
    }
    if (r->has_pool_end) {
        sw_json_set_real(rep, "pool_end_avail_gb", round(r->pool_end_avail_gb * 100) / 100);
        sw_json_set_real(rep, "req_to_token_gb", round(r->req_to_token_gb * 1000) / 1000);
        if (r->pre_load_gb > 0)
            sw_json_set_real(rep, "pre_load_avail_gb", round(r->pre_load_gb * 100) / 100);
        sw_json_set_real(rep, "post_load_avail_gb", round(r->post_load_gb * 100) / 100);
    }
    sw_json_set_real(rep, "k_size_gb", round(r->k_size_gb * 100) / 100);
    sw_json_set_real(rep, "v_size_gb", round(r->v_size_gb * 100) / 100);
    char b[256];
    if (r->v_size_gb > 0)
        snprintf(b, sizeof(b),
                 "KV Cache is allocated. #tokens: %lld, K size: %.2f GB, V size: "
                 "%.2f GB",
                 (long long)r->max_total_num_tokens, r->k_size_gb, r->v_size_gb);
    else
        snprintf(b, sizeof(b), "KV Cache is allocated. #tokens: %lld, KV size: %.2f GB",
                 (long long)r->max_total_num_tokens, r->k_size_gb);
    json_array_append_new(lines, json_string(b));
    if (r->mamba_cache_per_req && r->max_mamba_cache_size > 0) {
        snprintf(b, sizeof(b),
                 "Mamba Cache is allocated. max_mamba_cache_size: %lld, conv_state size: %.2f GB, "
                 "ssm_state size: %.2f GB",
                 (long long)r->max_mamba_cache_size, r->mamba_conv_gb, r->mamba_ssm_gb);
        json_array_append_new(lines, json_string(b));
    }
    if (r->has_pool_end) {
        snprintf(b, sizeof(b), "Memory pool end. avail mem=%.2f GB", r->pool_end_avail_gb);
        json_array_append_new(lines, json_string(b));
    }
    sw_json_set_new(root, "report", rep);
    sw_json_set_new(root, "lines", lines);
    if (r->warnings[0])
        sw_json_set_str(root, "warnings", r->warnings);
    return root;
}
