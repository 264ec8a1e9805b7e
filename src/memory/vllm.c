/*
 * memory/vllm: vLLM v1 KV cache accounting. Each rule names its source in vLLM (file + function)
 * in docs/vllm-law.md; the short form is beside the code.
 *
 * What it does not do: estimate activation, non-torch or CUDA-graph memory (facts supplied by
 * the caller), or model DeepSeek-V3.2's fp8_ds_mla / indexer caches and nvfp4 KV (refused with
 * SW_EUNSUPPORTED rather than guessed).
 */
#include <slipway/vllm.h>

#include <math.h>
#include <string.h>
#include <strings.h>

static int64_t cdiv(int64_t a, int64_t b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

const char *sw_vllm_version_name(enum sw_vllm_version v)
{
    switch (v) {
    case SW_VLLM_CURRENT:
        return "vllm-v1-current (>= 0.24: tokens = concurrency x max_model_len)";
    case SW_VLLM_V1_LEGACY:
        return "vllm-v1-legacy (tokens = blocks // groups x block_size)";
    case SW_VLLM_V0:
        return "vllm-v0 (# GPU blocks x block_size)";
    }
    return "?";
}

int sw_vllm_version_parse(const char *s, enum sw_vllm_version *out)
{
    if (!strcmp(s, "current") || !strcmp(s, "v1"))
        *out = SW_VLLM_CURRENT;
    else if (!strcmp(s, "legacy") || !strcmp(s, "v1-legacy"))
        *out = SW_VLLM_V1_LEGACY;
    else if (!strcmp(s, "v0") || !strcmp(s, "V0"))
        *out = SW_VLLM_V0;
    else {
        /* A release number: 0.x with x >= 24 is current; 0.10..0.23 legacy v1; below v0. */
        unsigned maj = 0, min = 0;
        const char *p = s[0] == 'v' ? s + 1 : s;
        if (sscanf(p, "%u.%u", &maj, &min) != 2)
            return SW_EINVAL;
        if (maj > 0 || min >= 24)
            *out = SW_VLLM_CURRENT;
        else if (min >= 10)
            *out = SW_VLLM_V1_LEGACY;
        else
            *out = SW_VLLM_V0;
    }
    return 0;
}

const char *sw_vllm_kind_name(enum sw_vllm_kind k)
{
    static const char *n[] = {"FullAttentionSpec", "SlidingWindowSpec", "ChunkedLocalAttentionSpec",
                              "MLAAttentionSpec",  "MambaSpec",         "EncoderOnlyAttentionSpec"};
    return (unsigned)k < SW_ARRAY_LEN(n) ? n[k] : "?";
}

void sw_vllm_opts_init(struct sw_vllm_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->version = SW_VLLM_CURRENT;
    o->tp = o->pp = o->dcp = o->pcp = 1;
    snprintf(o->kv_cache_dtype, sizeof(o->kv_cache_dtype), "auto");
    snprintf(o->dtype, sizeof(o->dtype), "auto");
    snprintf(o->mamba_cache_dtype, sizeof(o->mamba_cache_dtype), "auto");
    snprintf(o->mamba_ssm_cache_dtype, sizeof(o->mamba_ssm_cache_dtype), "auto");
    o->enable_prefix_caching = -1;
    o->mamba_cache_mode = -1;
}

static bool is_attn(const struct sw_vllm_spec *s)
{
    return s->kind != SW_VLLM_MAMBA;
}

int64_t sw_vllm_page_bytes(const struct sw_vllm_spec *s)
{
    int64_t real;
    if (s->kind == SW_VLLM_MAMBA) {
        real = 0;
        for (int i = 0; i < s->n_states; i++)
            real += s->state_elems[i] * (int64_t)s->state_bytes[i];
    } else if (s->kind == SW_VLLM_MLA) {
        /* kv_cache_interface.py MLAAttentionSpec.real_page_size_bytes */
        real = s->block_size * s->num_kv_heads * s->head_size * s->dtype_bytes;
    } else {
        /* FullAttentionSpec.real_page_size_bytes: K and V */
        real = s->block_size * s->num_kv_heads * (s->head_size + s->head_size_v) * s->dtype_bytes;
    }
    if (is_attn(s)) {
        if (s->per_token_head_scales)
            real += 2 * s->block_size * s->num_kv_heads * 4;
        real += s->extra_bytes_per_token * s->block_size;
    }
    if (s->page_size_padded > real)
        return s->page_size_padded;
    return real;
}

/* Model dtype: --dtype, else the config's; vLLM runs float32 checkpoints in bfloat16 (auto). */
static unsigned model_dtype_bytes(const struct sw_hf_config *c, const struct sw_vllm_opts *o)
{
    unsigned b = 0;
    if (strcmp(o->dtype, "auto") && o->dtype[0])
        b = sw_hf_dtype_size(o->dtype);
    else if (c->torch_dtype[0])
        b = sw_hf_dtype_size(c->torch_dtype);
    if (b == 0 || b == 4)
        b = 2;
    return b;
}

static int kv_dtype(const struct sw_hf_config *c, const struct sw_vllm_opts *o, unsigned *bytes,
                    bool *scales, struct sw_err *e)
{
    const char *k = o->kv_cache_dtype[0] ? o->kv_cache_dtype : "auto";
    *scales = false;
    if (!strcmp(k, "auto")) {
        *bytes = model_dtype_bytes(c, o);
    } else if (!strcmp(k, "fp8_per_token_head") || !strcmp(k, "int8_per_token_head")) {
        /* kv_cache_interface.py AttentionSpec.page_size_bytes: + 2 x kv_heads x fp32 per token */
        *bytes = 1;
        *scales = true;
    } else if (!strncmp(k, "fp8", 3) || !strcmp(k, "int8")) {
        *bytes = 1;
    } else if (!strcmp(k, "bfloat16") || !strcmp(k, "float16") || !strcmp(k, "half") ||
               !strcmp(k, "bf16") || !strcmp(k, "fp16")) {
        *bytes = 2;
    } else if (!strcmp(k, "float32") || !strcmp(k, "float")) {
        *bytes = 4;
    } else {
        return sw_err_at(e, SW_EUNSUPPORTED, "--kv-cache-dtype", 0, 0,
                         "kv cache dtype \"%s\" is not modelled", k);
    }
    return 0;
}

static unsigned mamba_dtype(const char *opt, unsigned fallback)
{
    if (!opt[0] || !strcmp(opt, "auto"))
        return fallback;
    unsigned b = sw_hf_dtype_size(opt);
    return b ? b : fallback;
}

static int mamba_mode(const struct sw_vllm_opts *o)
{
    if (o->mamba_cache_mode >= 0)
        return o->mamba_cache_mode;
    /* With prefix caching on, vLLM keeps block-aligned states ("align"); off: one state.
     * Prefix caching defaults on in current vLLM (config/cache.py CacheConfig
     * enable_prefix_caching = True, mamba_cache_mode "align" when it is on); older v1 releases
     * disabled it for hybrid models (model_executor/models/config.py MambaModelConfig). */
    int pc = o->enable_prefix_caching;
    if (pc < 0)
        pc = o->version == SW_VLLM_CURRENT ? 1 : 0;
    return pc ? SW_MAMBA_ALIGN : SW_MAMBA_NONE;
}

/* vLLM's get_pp_indices: even split, the remainder goes to the stages before the last. */
static void pp_range(int64_t n, int pp, int stage, int64_t *start, int64_t *end)
{
    int64_t parts[64];
    if (pp < 1 || pp > 64)
        pp = 1;
    for (int i = 0; i < pp; i++)
        parts[i] = n / pp;
    int64_t rem = n % pp;
    for (int64_t i = 2; i < rem + 2 && i <= pp; i++)
        parts[pp - i] += 1;
    *start = 0;
    for (int i = 0; i < stage; i++)
        *start += parts[i];
    *end = *start + parts[stage];
}

static void attn_spec(const struct sw_hf_config *c, const struct sw_vllm_opts *o, unsigned kvb,
                      bool scales, int64_t kv_heads, int64_t head, struct sw_vllm_spec *s)
{
    int tp = o->tp > 0 ? o->tp : 1;
    s->num_kv_heads = kv_heads / tp > 0 ? kv_heads / tp : 1; /* replicated when < TP */
    s->head_size = head;
    s->head_size_v = head;
    s->dtype_bytes = kvb;
    s->per_token_head_scales = scales;
    s->extra_bytes_per_token = o->extra_attn_bytes_per_token;
    (void)c;
}

static int mamba_spec(const struct sw_hf_config *c, const struct sw_vllm_opts *o,
                      enum sw_hf_layer_kind k, struct sw_vllm_spec *s, struct sw_err *e)
{
    int64_t tp = o->tp > 0 ? o->tp : 1;
    unsigned mdt = model_dtype_bytes(c, o);
    unsigned conv_b = mamba_dtype(o->mamba_cache_dtype, mdt);
    unsigned ssm_fb = c->mamba_ssm_dtype[0] ? sw_hf_dtype_size(c->mamba_ssm_dtype) : conv_b;
    unsigned ssm_b = mamba_dtype(o->mamba_ssm_cache_dtype, ssm_fb ? ssm_fb : conv_b);
    int64_t nspec =
        (!strcmp(o->spec_method, "ngram") || !o->spec_method[0]) ? 0 : o->num_speculative_tokens;
    s->kind = SW_VLLM_MAMBA;
    s->num_speculative_blocks = nspec;
    s->state_bytes[0] = conv_b;
    s->state_bytes[1] = ssm_b;
    if (k == SW_HF_LAYER_LINEAR) {
        /* mamba_utils.py gated_delta_net_state_shape: conv (kernel-1+spec, conv_dim/tp),
         * temporal (v_heads/tp, v_dim, k_dim). */
        int64_t nk = c->linear_num_key_heads, nv = c->linear_num_value_heads;
        int64_t dk = c->linear_key_head_dim, dv = c->linear_value_head_dim;
        int64_t kern = c->linear_conv_kernel_dim ? c->linear_conv_kernel_dim : 4;
        if (nk <= 0 || nv <= 0 || dk <= 0 || dv <= 0)
            return sw_err_set(e, SW_EPARSE,
                              "linear-attention layers need linear_num_key_heads, "
                              "linear_num_value_heads, linear_key_head_dim, linear_value_head_dim");
        int64_t conv_dim = nk * dk * 2 + nv * dv;
        snprintf(s->mamba_type, sizeof(s->mamba_type), "gdn");
        s->n_states = 2;
        s->state_elems[0] = (kern - 1 + nspec) * (conv_dim / tp);
        s->state_elems[1] = (nv / tp) * dv * dk;
    } else if (k == SW_HF_LAYER_MAMBA2) {
        /* mamba_utils.py mamba2_state_shape; groups replicated to TP when not divisible. */
        int64_t ds = c->mamba_d_state, heads = c->mamba_num_heads, hd = c->mamba_head_dim;
        int64_t inter = c->mamba_d_inner;
        if (!inter)
            inter = heads && hd ? heads * hd : c->mamba_expand * c->hidden_size;
        if (!heads && hd)
            heads = inter / hd;
        if (!hd && heads)
            hd = inter / heads;
        int64_t ng = c->mamba_n_groups ? c->mamba_n_groups : 1;
        if (ng % tp)
            ng = ng + (tp - ng % tp);
        int64_t kern = c->mamba_d_conv ? c->mamba_d_conv : 4;
        if (ds <= 0 || heads <= 0 || hd <= 0)
            return sw_err_set(e, SW_EPARSE, "mamba2 layers need ssm state size, heads, head dim");
        snprintf(s->mamba_type, sizeof(s->mamba_type), "mamba2");
        s->n_states = 2;
        s->state_elems[0] = ((inter + 2 * ng * ds) / tp) * (kern - 1 + nspec);
        s->state_elems[1] = (heads / tp) * hd * ds;
    } else if (k == SW_HF_LAYER_MAMBA) {
        int64_t inter = c->mamba_d_inner ? c->mamba_d_inner : c->mamba_expand * c->hidden_size;
        if (!inter)
            inter = c->intermediate_size;
        int64_t kern = c->mamba_d_conv ? c->mamba_d_conv : 4;
        if (inter <= 0 || c->mamba_d_state <= 0)
            return sw_err_set(e, SW_EPARSE, "mamba layers need intermediate and state sizes");
        snprintf(s->mamba_type, sizeof(s->mamba_type), "mamba1");
        s->n_states = 2;
        s->state_elems[0] = (inter / tp) * (kern - 1);
        s->state_elems[1] = (inter / tp) * c->mamba_d_state;
    } else { /* short conv */
        int64_t L = c->conv_L_cache ? c->conv_L_cache : 3;
        snprintf(s->mamba_type, sizeof(s->mamba_type), "short_conv");
        s->n_states = 1;
        s->state_elems[0] = (c->hidden_size / tp) * (L - 1);
    }
    return 0;
}

int sw_vllm_specs(const struct sw_hf_config *c, const struct sw_vllm_opts *o, int stage,
                  struct sw_vllm_spec *specs, int *n, struct sw_err *e)
{
    unsigned kvb = 0;
    bool scales = false;
    int rc = kv_dtype(c, o, &kvb, &scales, e);
    if (rc)
        return rc;
    int64_t start, end;
    pp_range(c->num_hidden_layers, o->pp, stage, &start, &end);
    *n = 0;
    /* Cross-layer KV sharing (gemma3n): the last num_kv_shared_layers layers read an earlier
     * layer's cache and get no spec (gpu_model_runner get_kv_cache_spec skips layers with a
     * kv_sharing_target_layer_name). Encoder-only models get EncoderOnlyAttentionSpec (0). */
    int64_t shared_from = c->num_hidden_layers - c->num_kv_shared_layers;
    for (int64_t i = start; i < end; i++) {
        enum sw_hf_layer_kind k = c->layer_kind[i];
        struct sw_vllm_spec *s = &specs[*n];
        memset(s, 0, sizeof(*s));
        s->layer = (int)i;
        if (c->num_kv_shared_layers > 0 && i >= shared_from)
            continue;
        if (c->encoder_only) {
            s->kind = SW_VLLM_ENCODER_ONLY;
            attn_spec(c, o, kvb, scales, c->num_key_value_heads, c->head_dim, s);
            (*n)++;
            continue;
        }
        switch (k) {
        case SW_HF_LAYER_NONE:
            continue;
        case SW_HF_LAYER_FULL:
        case SW_HF_LAYER_SLIDING:
        case SW_HF_LAYER_CHUNKED:
            s->kind = k == SW_HF_LAYER_FULL      ? SW_VLLM_FULL
                      : k == SW_HF_LAYER_SLIDING ? SW_VLLM_SLIDING
                                                 : SW_VLLM_CHUNKED;
            attn_spec(c, o, kvb, scales, c->num_key_value_heads, c->head_dim, s);
            s->sliding_window = k == SW_HF_LAYER_SLIDING ? c->sliding_window : 0;
            s->chunk_size = k == SW_HF_LAYER_CHUNKED ? c->attention_chunk_size : 0;
            if (o->disable_hybrid_kv_cache_manager && s->kind != SW_VLLM_FULL)
                s->kind = SW_VLLM_FULL; /* kv_cache_utils.py unify_hybrid_kv_cache_specs */
            break;
        case SW_HF_LAYER_MLA:
            /* The latent (kv_lora_rank + rope dim) is one "head", replicated on every rank. */
            s->kind = SW_VLLM_MLA;
            s->num_kv_heads = 1;
            s->head_size = c->kv_lora_rank + c->qk_rope_head_dim;
            s->head_size_v = 0;
            s->dtype_bytes = kvb;
            s->extra_bytes_per_token = o->extra_attn_bytes_per_token;
            break;
        default:
            rc = mamba_spec(c, o, k, s, e);
            if (rc)
                return rc;
            break;
        }
        (*n)++;
    }
    /* Speculative decoding adds the draft's attention layers on the last stage. */
    if (stage == (o->pp > 0 ? o->pp : 1) - 1 && o->num_speculative_tokens > 0) {
        int64_t nd = 0;
        const struct sw_hf_config *d = NULL;
        bool mtp = false; /* MTP layers are full attention, whatever the trunk's pattern */
        if (!strcmp(o->spec_method, "mtp") || strstr(o->spec_method, "mtp") ||
            !strcmp(o->spec_method, "deepseek_mtp") || !strcmp(o->spec_method, "qwen3_next_mtp")) {
            /* the MTP layers of the checkpoint the drafter loads: the target's own, or a
             * separate checkpoint's (speculative_config.model) when one is given; each is one
             * more full-attention layer in the same KV pool (the drafter's layers get specs
             * like the target's in gpu_model_runner get_kv_cache_spec) */
            nd = c->num_nextn_predict_layers;
            /* qwen3_next_mtp.py: num_mtp_layers = getattr(config, "num_nextn_predict_layers", 1)
             * (Qwen3-Next's config.json does not declare it) */
            if (nd == 0 && !strcmp(c->model_type, "qwen3_next"))
                nd = 1;
            if (o->draft && o->draft->num_nextn_predict_layers > 0) {
                d = o->draft;
                nd = d->num_nextn_predict_layers;
            }
            mtp = true;
        } else if (o->draft)
            d = o->draft, nd = o->draft->num_hidden_layers;
        for (int64_t j = 0; j < nd && *n < SW_VLLM_MAX_SPECS; j++) {
            struct sw_vllm_spec *s = &specs[*n];
            memset(s, 0, sizeof(*s));
            s->layer = 1000 + (int)j;
            s->draft = true;
            const struct sw_hf_config *src = d ? d : c;
            if (src->kv_lora_rank > 0) {
                s->kind = SW_VLLM_MLA;
                s->num_kv_heads = 1;
                s->head_size = src->kv_lora_rank + src->qk_rope_head_dim;
                s->dtype_bytes = kvb;
            } else {
                enum sw_hf_layer_kind dk = d && !mtp ? d->layer_kind[j] : SW_HF_LAYER_FULL;
                s->kind = dk == SW_HF_LAYER_SLIDING ? SW_VLLM_SLIDING : SW_VLLM_FULL;
                attn_spec(src, o, kvb, scales, src->num_key_value_heads, src->head_dim, s);
                s->sliding_window = dk == SW_HF_LAYER_SLIDING ? src->sliding_window : 0;
            }
            (*n)++;
        }
    }
    return 0;
}

static bool spec_eq(const struct sw_vllm_spec *a, const struct sw_vllm_spec *b)
{
    return a->kind == b->kind && a->block_size == b->block_size &&
           a->num_kv_heads == b->num_kv_heads && a->head_size == b->head_size &&
           a->head_size_v == b->head_size_v && a->dtype_bytes == b->dtype_bytes &&
           a->per_token_head_scales == b->per_token_head_scales &&
           a->extra_bytes_per_token == b->extra_bytes_per_token &&
           a->sliding_window == b->sliding_window && a->chunk_size == b->chunk_size &&
           a->n_states == b->n_states && a->state_elems[0] == b->state_elems[0] &&
           a->state_elems[1] == b->state_elems[1] && a->state_bytes[0] == b->state_bytes[0] &&
           a->state_bytes[1] == b->state_bytes[1] &&
           a->num_speculative_blocks == b->num_speculative_blocks &&
           sw_vllm_page_bytes(a) == sw_vllm_page_bytes(b);
}

/* Blocks one request of max_model_len holds in a group of this spec (max_memory_usage_bytes /
 * page_size_bytes, kv_cache_interface.py). */
static int64_t blocks_per_request(const struct sw_vllm_spec *s, const struct sw_vllm_opts *o,
                                  int64_t L)
{
    /* engine/arg_utils.py _set_default_args (OpenAI server): 8192 on cards of 70 GiB and more
     * (A100-80GB excepted, which slipway cannot tell), else 2048. */
    int64_t mnbt = o->max_num_batched_tokens > 0                 ? o->max_num_batched_tokens
                   : o->gpu_total_bytes >= 70ull * 1073741824ull ? 8192
                                                                 : 2048;
    switch (s->kind) {
    case SW_VLLM_FULL:
    case SW_VLLM_MLA: {
        int64_t cp = (int64_t)(o->dcp > 0 ? o->dcp : 1) * (o->pcp > 0 ? o->pcp : 1);
        int64_t l = cp > 1 ? cdiv(L, cp) : L; /* each DCP rank stores 1/cp of the tokens */
        return cdiv(l, s->block_size);
    }
    case SW_VLLM_SLIDING: {
        int64_t n = SW_MIN(s->sliding_window - 1 + mnbt, L);
        return cdiv(n, s->block_size) + 1;
    }
    case SW_VLLM_CHUNKED: {
        int64_t n = SW_MIN(s->chunk_size + mnbt, L);
        return cdiv(n, s->block_size);
    }
    case SW_VLLM_MAMBA: {
        int m = mamba_mode(o);
        int64_t b;
        if (m == SW_MAMBA_ALL)
            b = cdiv(L, s->block_size);
        else if (m == SW_MAMBA_ALIGN)
            b = 2 + s->num_speculative_blocks;
        else
            b = 1 + s->num_speculative_blocks;
        return b + o->extra_mamba_blocks;
    }
    case SW_VLLM_ENCODER_ONLY:
        return 0;
    }
    return 0;
}

/* Hybrid block-size alignment (attention page >= mamba page; pad mamba to equal). */
static void hybrid_align(struct sw_vllm_spec *s, int n, const struct sw_vllm_opts *o,
                         struct sw_vllm_report *r)
{
    int fa = -1;
    int64_t mamba_page = 0;
    for (int i = 0; i < n; i++) {
        if (is_attn(&s[i]) && fa < 0 && !s[i].draft)
            fa = i;
        if (s[i].kind == SW_VLLM_MAMBA) {
            int64_t p = sw_vllm_page_bytes(&s[i]);
            if (p > mamba_page)
                mamba_page = p;
        }
    }
    int64_t bs = o->block_size > 0 ? o->block_size : 16;
    r->mamba_padding_pct = -1;
    if (fa >= 0 && mamba_page > 0) {
        struct sw_vllm_spec one = s[fa];
        one.block_size = 1;
        one.extra_bytes_per_token = 0;
        one.page_size_padded = 0;
        int64_t a1 = sw_vllm_page_bytes(&one);
        int64_t align = s[fa].kind == SW_VLLM_MLA ? 64 : 16;
        int64_t need = align * cdiv(mamba_page, align * a1);
        if (o->block_size <= 0) {
            bs = need;
            r->block_size_set = true;
        } else if (o->block_size < need) {
            /* Current: a multiple of the user's block size; legacy: the minimum. */
            bs = o->version == SW_VLLM_CURRENT ? o->block_size * cdiv(need, o->block_size) : need;
            r->block_size_set = true;
        }
        int64_t attn_page = bs * a1;
        if (attn_page > mamba_page)
            r->mamba_padding_pct = 100.0 * (double)(attn_page - mamba_page) / (double)mamba_page;
        for (int i = 0; i < n; i++)
            s[i].block_size = bs;
        one = s[fa];
        int64_t real_attn = sw_vllm_page_bytes(&one);
        for (int i = 0; i < n; i++)
            if (s[i].kind == SW_VLLM_MAMBA)
                s[i].page_size_padded = real_attn;
    } else {
        for (int i = 0; i < n; i++)
            s[i].block_size = bs;
    }
    r->block_size = bs;
}

static bool uniform_type(const struct sw_vllm_spec *s, int n)
{
    for (int i = 1; i < n; i++) {
        if (s[i].block_size != s[0].block_size)
            return false;
        bool fa0 = s[0].kind == SW_VLLM_FULL || s[0].kind == SW_VLLM_MLA;
        bool fai = s[i].kind == SW_VLLM_FULL || s[i].kind == SW_VLLM_MLA;
        if (fa0 != fai)
            return false;
        if (!fa0 && s[i].kind != s[0].kind)
            return false;
        if (s[0].kind == SW_VLLM_SLIDING && s[i].sliding_window != s[0].sliding_window)
            return false;
        if (s[0].kind == SW_VLLM_CHUNKED && s[i].chunk_size != s[0].chunk_size)
            return false;
        if (s[0].kind == SW_VLLM_MAMBA &&
            s[i].num_speculative_blocks != s[0].num_speculative_blocks)
            return false;
    }
    return true;
}

/* The law's working state, step to step of sw_vllm_plan: every layer's spec across the PP stages
 * (all, stage_of), its group (gid), and what each step found. */
struct vplan {
    const struct sw_hf_config *c;
    const struct sw_vllm_opts *o;
    struct sw_vllm_report *r;
    int pp;
    int n; /* specs over every stage */
    int64_t L;
    struct sw_vllm_spec *all;
    int *stage_of;
    int *gid;
    bool all_eq, utype; /* one group: every spec equal, or all of one type */
    int n_groups;
    int64_t page, group_size, bpr_sum;
    uint64_t avail;
};

/* Every stage's specs, in stage order. */
static int collect_specs(struct vplan *v, struct sw_vllm_spec *tmp, struct sw_err *e)
{
    for (int st = 0; st < v->pp; st++) {
        int m = 0;
        int rc = sw_vllm_specs(v->c, v->o, st, tmp, &m, e);
        if (rc)
            return rc;
        for (int i = 0; i < m && v->n < SW_VLLM_MAX_SPECS; i++) {
            v->stage_of[v->n] = st;
            v->all[v->n++] = tmp[i];
        }
    }
    return 0;
}

/* get_kv_cache_groups: every spec equal, or all of one type: one group. */
static void group_one(struct vplan *v)
{
    struct sw_vllm_report *r = v->r;
    v->n_groups = 1;
    for (int i = 0; i < v->n; i++)
        v->gid[i] = 0;
    r->groups[0].kind = v->all[0].kind;
    r->groups[0].n_layers = v->n;
    r->groups[0].block_size = v->all[0].block_size;
    int64_t bpr = 0;
    for (int i = 0; i < v->n; i++) {
        int64_t b = blocks_per_request(&v->all[i], v->o, v->L);
        if (b > bpr)
            bpr = b;
    }
    r->groups[0].blocks_per_request = bpr;
    v->page = sw_vllm_page_bytes(&v->all[0]);
    r->groups[0].page_bytes = v->page;
}

/* unify_kv_cache_spec_page_size: grow small attention blocks, pad mamba pages. */
static int unify_pages(struct vplan *v, struct sw_err *e)
{
    int64_t maxp = 0;
    for (int i = 0; i < v->n; i++)
        maxp = SW_MAX(maxp, sw_vllm_page_bytes(&v->all[i]));
    for (int i = 0; i < v->n; i++) {
        struct sw_vllm_spec *s = &v->all[i];
        int64_t p = sw_vllm_page_bytes(s);
        if (p == maxp)
            continue;
        if (s->kind == SW_VLLM_MAMBA)
            s->page_size_padded = maxp;
        else if (maxp % p == 0)
            s->block_size *= maxp / p;
        else
            return sw_err_set(e, SW_EUNSUPPORTED,
                              "layer %d: page %lld does not divide the largest page %lld "
                              "(vLLM raises NotImplementedError here)",
                              s->layer, (long long)p, (long long)maxp);
    }
    v->page = maxp;
    return 0;
}

#define VPLAN_MAX_BUCKETS 64

/* Specs bucketed by equality (bucket_of[i], each bucket's first spec and size). */
struct buckets {
    int rep[VPLAN_MAX_BUCKETS], n_of[VPLAN_MAX_BUCKETS], n;
};

static int bucket_specs(const struct vplan *v, int *bucket_of, struct buckets *bk, struct sw_err *e)
{
    bk->n = 0;
    for (int i = 0; i < v->n; i++) {
        int b;
        for (b = 0; b < bk->n; b++)
            if (spec_eq(&v->all[i], &v->all[bk->rep[b]]))
                break;
        if (b == bk->n) {
            if (bk->n == VPLAN_MAX_BUCKETS)
                return sw_err_set(e, SW_EUNSUPPORTED, "more than %d distinct layer specs",
                                  VPLAN_MAX_BUCKETS);
            bk->rep[b] = i;
            bk->n_of[b] = 0;
            bk->n++;
        }
        bucket_of[i] = b;
        bk->n_of[b]++;
    }
    return 0;
}

/* _get_kv_cache_groups_uniform_page_size: the group size (the smallest bucket, or the largest
 * when max < 1.5 x min), each bucket split into cdiv(len, gs) groups taking layers[i::num]. */
static int split_groups(struct vplan *v, struct sw_err *e)
{
    struct sw_vllm_report *r = v->r;
    struct buckets bk = {.n = 0};
    int *bucket_of = v->gid; /* reused: a layer's bucket is read before its group is written */
    int rc = bucket_specs(v, bucket_of, &bk, e);
    if (rc)
        return rc;
    int mn = bk.n_of[0], mx = bk.n_of[0];
    for (int b = 1; b < bk.n; b++) {
        mn = SW_MIN(mn, bk.n_of[b]);
        mx = SW_MAX(mx, bk.n_of[b]);
    }
    v->group_size = mn;
    if (mx < mn * 1.5)
        v->group_size = mx;
    int gbase[VPLAN_MAX_BUCKETS];
    for (int b = 0; b < bk.n; b++) {
        int len = bk.n_of[b];
        int num = (int)cdiv(len, v->group_size);
        int pad = (int)(v->group_size - len % v->group_size);
        if (pad != v->group_size)
            r->padding_layers += pad;
        gbase[b] = v->n_groups;
        for (int k = 0; k < num; k++) {
            if (v->n_groups >= SW_VLLM_MAX_GROUPS)
                return sw_err_set(e, SW_EUNSUPPORTED, "more than %d KV cache groups",
                                  SW_VLLM_MAX_GROUPS);
            struct sw_vllm_group *g = &r->groups[v->n_groups++];
            g->kind = v->all[bk.rep[b]].kind;
            g->block_size = v->all[bk.rep[b]].block_size;
            g->page_bytes = v->page;
            g->blocks_per_request = blocks_per_request(&v->all[bk.rep[b]], v->o, v->L);
            g->first_layer = -1;
        }
    }
    int seen[VPLAN_MAX_BUCKETS] = {0};
    for (int i = 0; i < v->n; i++) {
        int b = bucket_of[i];
        int num = (int)cdiv(bk.n_of[b], v->group_size);
        int g = gbase[b] + seen[b] % num;
        seen[b]++;
        v->gid[i] = g;
        if (r->groups[g].first_layer < 0)
            r->groups[g].first_layer = v->all[i].layer;
        r->groups[g].n_layers++;
    }
    return 0;
}

/* Grouping (kv_cache_utils.py get_kv_cache_groups). */
static int group_specs(struct vplan *v, struct sw_err *e)
{
    int rc = 0;
    v->all_eq = true;
    for (int i = 1; i < v->n && v->all_eq; i++)
        v->all_eq = spec_eq(&v->all[i], &v->all[0]);
    v->utype = !v->all_eq && uniform_type(v->all, v->n);
    if (v->all_eq || v->utype) {
        group_one(v);
    } else {
        rc = unify_pages(v, e);
        if (!rc)
            rc = split_groups(v, e);
    }
    v->r->n_groups = v->n_groups;
    v->r->page_bytes = v->page;
    return rc;
}

/* Budget (gpu_worker.py determine_available_memory). */
static void budget(struct vplan *v)
{
    const struct sw_vllm_opts *o = v->o;
    uint64_t avail = 0;
    if (o->kv_cache_memory_bytes) {
        avail = o->kv_cache_memory_bytes;
        v->r->available_from_flag = true;
    } else if (o->gpu_total_bytes) {
        /* config/cache.py: 0.92 in current vLLM, 0.9 before. */
        double util = o->gpu_memory_utilization > 0   ? o->gpu_memory_utilization
                      : o->version == SW_VLLM_CURRENT ? 0.92
                                                      : 0.9;
        double req = (double)o->gpu_total_bytes * util;
        double used = (double)o->weights_bytes + (double)o->activation_peak_bytes +
                      (double)o->non_torch_bytes;
        if (o->version == SW_VLLM_CURRENT)
            used += (double)o->cudagraph_bytes; /* profiled before KV sizing from v0.21 */
        avail = req > used ? (uint64_t)(req - used) : 0;
    }
    v->r->available_kv_bytes = avail;
    v->avail = avail;
}

/* num_blocks per stage (projected groups), the minimum wins. */
static void stage_blocks(struct vplan *v)
{
    struct sw_vllm_report *r = v->r;
    int64_t nbmin = -1;
    v->bpr_sum = 0;
    for (int g = 0; g < v->n_groups; g++)
        v->bpr_sum += r->groups[g].blocks_per_request;
    r->blocks_per_request = v->bpr_sum;
    for (int st = 0; st < v->pp; st++) {
        int64_t nb;
        uint64_t av = v->o->stage_kv_bytes[st] ? v->o->stage_kv_bytes[st] : v->avail;
        if (v->all_eq || v->utype) {
            int64_t sum = 0, cnt = 0;
            for (int i = 0; i < v->n; i++)
                if (v->stage_of[i] == st) {
                    sum += sw_vllm_page_bytes(&v->all[i]);
                    cnt++;
                }
            if (!cnt)
                continue;
            if (v->utype)
                nb = sum ? (int64_t)(av / (uint64_t)sum) : 0;
            else
                nb = (int64_t)(av / (uint64_t)v->page / (uint64_t)cnt);
            if (st == 0 || nbmin < 0)
                r->group_size = v->utype ? 1 : cnt;
            if (v->utype)
                r->page_bytes = sum;
        } else {
            int cnt[SW_VLLM_MAX_GROUPS] = {0};
            int64_t gs = 0;
            for (int i = 0; i < v->n; i++)
                if (v->stage_of[i] == st)
                    cnt[v->gid[i]]++;
            for (int g = 0; g < v->n_groups; g++)
                gs = SW_MAX(gs, cnt[g]);
            if (!gs)
                continue;
            nb = (int64_t)(av / (uint64_t)v->page / (uint64_t)gs);
            if (nbmin < 0 || nb < nbmin)
                r->group_size = gs;
        }
        if (nbmin < 0 || nb < nbmin) {
            nbmin = nb;
            r->pp_stage = st;
        }
    }
    if (nbmin < 0)
        nbmin = 0;
    if (v->o->num_gpu_blocks_override > 0)
        nbmin = v->o->num_gpu_blocks_override;
    r->num_gpu_blocks = nbmin;
    r->n_specs = v->n;
}

/* One request of max_model_len L under options o: its bytes on the limiting stage
 * (max_memory_usage over the groups, padding included). */
static int64_t request_bytes(const struct vplan *v, const struct sw_vllm_opts *o, int64_t L)
{
    int64_t s = 0;
    if (v->utype || v->all_eq) {
        for (int i = 0; i < v->n; i++)
            if (v->stage_of[i] == v->r->pp_stage)
                s += blocks_per_request(&v->all[i], o, L) * sw_vllm_page_bytes(&v->all[i]);
        return s;
    }
    int64_t b = 0;
    for (int g = 0; g < v->n_groups; g++) {
        for (int i = 0; i < v->n; i++)
            if (v->gid[i] == g) {
                b += blocks_per_request(&v->all[i], o, L);
                break;
            }
    }
    return v->r->group_size * v->page * b;
}

/* One request's need, and when it does not fit the engine's estimate of the longest that does
 * (_check_enough_kv_cache_memory, estimate_max_model_len: a binary search). */
static void request_need(struct vplan *v)
{
    struct sw_vllm_report *r = v->r;
    if (v->utype || v->all_eq)
        r->kv_needed_bytes = request_bytes(v, v->o, v->L);
    else
        r->kv_needed_bytes = r->group_size * v->page * v->bpr_sum;
    r->fits = v->avail == 0 || (uint64_t)r->kv_needed_bytes <= v->avail;
    if (r->fits || r->kv_needed_bytes <= 0)
        return;
    int64_t lo = 1, hi = v->L, best = 0;
    struct sw_vllm_opts o2 = *v->o;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        o2.max_model_len = mid;
        if ((uint64_t)request_bytes(v, &o2, mid) <= v->avail) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    r->estimated_max_len = best;
}

/* What the engine prints: the concurrency and the token count, per version. */
static void printed(struct vplan *v)
{
    struct sw_vllm_report *r = v->r;
    const struct sw_vllm_opts *o = v->o;
    if (v->bpr_sum > 0)
        r->max_concurrency = (double)r->num_gpu_blocks / (double)v->bpr_sum;
    int64_t min_bs = r->groups[0].block_size;
    for (int g = 1; g < v->n_groups; g++)
        min_bs = SW_MIN(min_bs, r->groups[g].block_size);
    int64_t cp = (int64_t)(o->dcp > 0 ? o->dcp : 1) * (o->pcp > 0 ? o->pcp : 1);
    switch (o->version) {
    case SW_VLLM_CURRENT:
        /* kv_cache_utils.py get_kv_cache_capacity: int(max_concurrency * max_model_len) */
        r->kv_cache_tokens = (int64_t)(r->max_concurrency * (double)v->L);
        break;
    case SW_VLLM_V1_LEGACY:
        /* kv_cache_utils.py _report_kv_cache_config (older): blocks // groups * min bs * cp */
        r->kv_cache_tokens = r->num_gpu_blocks / v->n_groups * min_bs * cp;
        break;
    case SW_VLLM_V0:
        r->kv_cache_tokens = r->num_gpu_blocks * min_bs;
        r->max_concurrency = (double)r->kv_cache_tokens / (double)v->L;
        break;
    }
}

int sw_vllm_plan(const struct sw_hf_config *c, const struct sw_vllm_opts *o,
                 struct sw_vllm_report *r, struct sw_err *e)
{
    struct vplan v = {.c = c, .o = o, .r = r};
    struct sw_vllm_spec *tmp = NULL;
    int rc = 0;
    memset(r, 0, sizeof(*r));
    r->version = o->version;
    r->mamba_padding_pct = -1;
    v.pp = o->pp > 0 ? o->pp : 1;
    if (v.pp > 16)
        return sw_err_set(e, SW_EUNSUPPORTED, "pipeline parallel size %d is not modelled", v.pp);
    v.all = sw_calloc((size_t)SW_VLLM_MAX_SPECS, sizeof(*v.all));
    v.stage_of = sw_calloc((size_t)SW_VLLM_MAX_SPECS, sizeof(int));
    v.gid = sw_calloc((size_t)SW_VLLM_MAX_SPECS, sizeof(int));
    tmp = sw_calloc((size_t)SW_VLLM_MAX_SPECS, sizeof(*tmp));
    if (!v.all || !v.stage_of || !v.gid || !tmp) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = collect_specs(&v, tmp, e);
    if (rc)
        goto out;
    r->max_model_len = o->max_model_len > 0 ? o->max_model_len : c->max_position_embeddings;
    if (r->max_model_len <= 0) {
        rc = sw_err_set(e, SW_EINVAL, "max_model_len unknown: pass --max-model-len");
        goto out;
    }
    v.L = r->max_model_len;
    if (v.n == 0) {
        r->num_gpu_blocks = 1; /* attention-free: BlockPool's null block */
        goto out;
    }
    hybrid_align(v.all, v.n, o, r);
    rc = group_specs(&v, e);
    if (rc)
        goto out;
    budget(&v);
    stage_blocks(&v);
    request_need(&v);
    printed(&v);
out:
    sw_free(v.all);
    sw_free(v.stage_of);
    sw_free(v.gid);
    sw_free(tmp);
    return rc;
}

static const char *commas(int64_t v, char *buf, size_t n)
{
    return sw_fmt_count(v < 0 ? 0 : (uint64_t)v, buf, n);
}

int sw_vllm_report_lines(const struct sw_vllm_report *r, struct sw_buf *b)
{
    char t1[32], t2[32];
    int rc = 0;
    if (r->block_size_set)
        rc |= sw_buf_printf(b,
                            "Setting attention block size to %lld tokens to ensure that "
                            "attention page size is >= mamba page size.\n",
                            (long long)r->block_size);
    if (r->mamba_padding_pct >= 0)
        rc |= sw_buf_printf(b,
                            "Padding mamba page size by %.2f%% to ensure that mamba page size "
                            "and attention page size are exactly equal.\n",
                            r->mamba_padding_pct);
    if (r->padding_layers > 0)
        rc |= sw_buf_printf(b, "Add %d padding layers\n", r->padding_layers);
    if (r->available_kv_bytes)
        rc |= sw_buf_printf(b, "Available KV cache memory: %.2f GiB\n",
                            (double)r->available_kv_bytes / (double)SW_GIB);
    if (r->version == SW_VLLM_V0) {
        rc |= sw_buf_printf(b, "# GPU blocks: %lld\n", (long long)r->num_gpu_blocks);
    } else {
        rc |= sw_buf_printf(b, "GPU KV cache size: %s tokens\n",
                            commas(r->kv_cache_tokens, t1, sizeof(t1)));
    }
    rc |= sw_buf_printf(b, "Maximum concurrency for %s tokens per request: %.2fx\n",
                        commas(r->max_model_len, t2, sizeof(t2)), r->max_concurrency);
    if (!r->fits)
        rc |=
            sw_buf_printf(b,
                          "ValueError: one request of %lld tokens needs %.2f GiB of KV cache, "
                          "more than the available %.2f GiB; estimated maximum model "
                          "length is %lld\n",
                          (long long)r->max_model_len, (double)r->kv_needed_bytes / SW_GIB,
                          (double)r->available_kv_bytes / SW_GIB, (long long)r->estimated_max_len);
    return rc ? SW_ENOMEM : 0;
}

json_t *sw_vllm_report_json(const struct sw_vllm_report *r)
{
    json_t *root = json_object();
    json_t *rep = json_object();
    json_t *groups = json_array();
    json_t *lines = json_array();
    if (!root || !rep || !groups || !lines) {
        json_decref(root);
        json_decref(rep);
        json_decref(groups);
        json_decref(lines);
        return NULL;
    }
    sw_json_set_str(root, "engine", "vllm");
    sw_json_set_str(rep, "engine_version", sw_vllm_version_name(r->version));
    sw_json_set_int(rep, "kv_cache_tokens", r->kv_cache_tokens);
    sw_json_set_real(rep, "max_concurrency", round(r->max_concurrency * 100.0) / 100.0);
    sw_json_set_real(rep, "max_concurrency_exact", r->max_concurrency);
    sw_json_set_int(rep, "max_model_len", r->max_model_len);
    sw_json_set_int(rep, "num_gpu_blocks", r->num_gpu_blocks);
    sw_json_set_int(rep, "block_size", r->block_size);
    sw_json_set_int(rep, "available_kv_bytes", (int64_t)r->available_kv_bytes);
    sw_json_set_bool(rep, "available_from_flag", r->available_from_flag);
    sw_json_set_int(rep, "page_bytes", r->page_bytes);
    sw_json_set_int(rep, "group_size", r->group_size);
    sw_json_set_int(rep, "blocks_per_request", r->blocks_per_request);
    sw_json_set_int(rep, "padding_layers", r->padding_layers);
    if (r->mamba_padding_pct >= 0)
        sw_json_set_real(rep, "mamba_padding_pct", round(r->mamba_padding_pct * 100) / 100);
    sw_json_set_int(rep, "kv_needed_bytes", r->kv_needed_bytes);
    sw_json_set_bool(rep, "fits", r->fits);
    if (!r->fits)
        sw_json_set_int(rep, "estimated_max_model_len", r->estimated_max_len);
    sw_json_set_int(rep, "pp_stage", r->pp_stage);
    for (int g = 0; g < r->n_groups; g++) {
        json_t *o = json_object();
        sw_json_set_str(o, "spec", sw_vllm_kind_name(r->groups[g].kind));
        sw_json_set_int(o, "layers", r->groups[g].n_layers);
        sw_json_set_int(o, "block_size", r->groups[g].block_size);
        sw_json_set_int(o, "page_bytes", r->groups[g].page_bytes);
        sw_json_set_int(o, "blocks_per_request", r->groups[g].blocks_per_request);
        json_array_append_new(groups, o);
    }
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    sw_vllm_report_lines(r, &b);
    const char *p = sw_buf_cstr(&b);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        json_array_append_new(lines, json_stringn(p, l));
        p += l + (nl ? 1 : 0);
    }
    sw_buf_free(&b);
    sw_json_set_new(rep, "groups", groups);
    sw_json_set_new(root, "report", rep);
    sw_json_set_new(root, "lines", lines);
    if (r->warnings[0])
        sw_json_set_str(root, "warnings", r->warnings);
    return root;
}
