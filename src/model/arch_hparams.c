/*
 * model/arch_hparams: llama.cpp's reading of a GGUF's metadata, mirrored over a key source
 * (struct sw__meta), so that a GGUF file and a JSON declaration give the same struct sw_arch.
 *
 * Mirrors, in the pinned llama.cpp (80fb11a):
 *   src/llama-model.cpp   llama_model_base::load_hparams   (the keys every arch reads)
 *   src/models/<arch>.cpp  llama_model_<arch>::load_arch_hparams (the per-arch rules below)
 *   src/llama-hparams.cpp set_swa_pattern, n_embd_r, n_embd_s, has_kv
 *   src/llama-arch.cpp    llm_arch_is_recurrent / llm_arch_is_hybrid (which layers are recurrent)
 * Only the facts that decide memory are mirrored: layer kinds, head counts and dims, windows,
 * recurrent dims, MLA, KV sharing, experts. A key an arch's loader does not read is ignored here
 * too, because test-llama-archs writes every key into every file.
 *
 * What it does not do: read tensors (arch_gguf.c) or size anything (memory/).
 */
#include "arch_internal.h"

#include <math.h>
#include <string.h>

#define MAXL 512 /* LLAMA_MAX_LAYERS */

/* What an arch's load_arch_hparams reads that matters for memory. */
enum {
    RD_SSM4 = 1 << 0,      /* ssm.conv_kernel, inner_size, state_size, time_step_rank */
    RD_SSM_GROUP = 1 << 1, /* ssm.group_count */
    RD_WKV = 1 << 2,       /* wkv.head_size, token_shift_count */
    RD_SHORTCONV = 1 << 3, /* shortconv.l_cache */
    RD_KDA = 1 << 4,       /* ssm.conv_kernel + kda.head_dim */
    RD_LA = 1 << 5,        /* lightning attention head dim = key_length (minimax-01) */
    RD_MLA = 1 << 6,       /* attention.key_length_mla / value_length_mla / kv_lora_rank */
};

/* Which layers are recurrent. */
enum recr_rule {
    RECR_NONE = 0,
    RECR_ALL,       /* llm_arch_is_recurrent: every layer (mamba, rwkv) */
    RECR_HEADKV0,   /* il < n_layer() && n_head_kv(il) == 0 (jamba, granitehybrid, lfm2 ...) */
    RECR_NEMOTRON,  /* il < n_layer() && n_head_kv == 0 && n_ff == 0 (nemotron_h) */
    RECR_INTERVAL,  /* attention.recurrent_layers, else (il+1) % full_attention_interval != 0 */
    RECR_FALCON_H1, /* every layer is both attention and mamba2 */
};

/* How the sliding-window layers are found. */
enum swa_rule {
    SWA_NONE = 0,
    SWA_ALWAYS,        /* STANDARD; period from a scalar key (an array is ignored) */
    SWA_IF_WINDOW,     /* only when attention.sliding_window is present and > 0 */
    SWA_ALWAYS_OR_ARR, /* STANDARD; period if scalar, else the per-layer array (n_layer()) */
    SWA_IF_WINDOW_OR_ARR,
    SWA_ARRAY_NLAYER, /* per-layer array or broadcast scalar, length n_layer() */
    SWA_ARRAY_NALL,   /* the same over n_layer_all */
    SWA_ARRAY_ANY,    /* get_arr: an array of any length <= 512 (granite_swa) */
    SWA_LLAMA4,       /* chunked 8192 unless sliding_window == 0 */
    SWA_LFM2,         /* every attention layer when sliding_window > 0 */
    SWA_EXAONE4,      /* only the 64-layer model (32B) */
};

enum {
    SP_KV_FROM_START_20 = 1 << 0, /* gemma3n: layers >= 20 read earlier layers' KV */
    SP_SHARED_KV_LAYERS = 1 << 1, /* gemma4: attention.shared_kv_layers */
    SP_SWA_DIMS_REQ = 1 << 2,     /* key_length_swa / value_length_swa required (gemma4) */
    SP_NONCAUSAL = 1 << 3,
    SP_ROUTER_LAYER = 1 << 4,   /* graniteswitch appends a 1-head router layer */
    SP_LOOPS = 1 << 5,          /* nanbeige repeats its layers num_loops times */
    SP_SWA_WINDOW_OPT = 1 << 6, /* the window key is optional (default kept) */
    SP_SWA_DENSE_FIRST = 1 << 7,
    SP_SWA_FORCE_WINDOW = 1 << 8, /* smallthinker: window forced to swa_default when present */
    SP_SYMMETRIC = 1 << 9,
};

struct arch_rule {
    const char *name;
    unsigned rd;
    enum recr_rule recr;
    enum sw_recr_kind rkind;
    uint32_t interval; /* default full_attention_interval for RECR_INTERVAL */
    enum swa_rule swa;
    uint32_t period;      /* default swa period */
    uint32_t swa_default; /* default window before the key is read */
    unsigned sp;
};

/* Archs whose loader departs from the base rules (src/models/<file>.cpp, load_arch_hparams). */
static const struct arch_rule rules[] = {
    /* pure recurrent (llm_arch_is_recurrent) */
    {"mamba", RD_SSM4, RECR_ALL, SW_RECR_MAMBA, 0, SWA_NONE, 0, 0, 0},
    {"mamba2", RD_SSM4 | RD_SSM_GROUP, RECR_ALL, SW_RECR_MAMBA2, 0, SWA_NONE, 0, 0, 0},
    {"rwkv6", RD_WKV, RECR_ALL, SW_RECR_RWKV6, 0, SWA_NONE, 0, 0, 0},
    {"rwkv6qwen2", RD_WKV, RECR_ALL, SW_RECR_RWKV6, 0, SWA_NONE, 0, 0, 0},
    {"rwkv7", RD_WKV, RECR_ALL, SW_RECR_RWKV7, 0, SWA_NONE, 0, 0, 0},
    {"arwkv7", RD_WKV, RECR_ALL, SW_RECR_RWKV7, 0, SWA_NONE, 0, 0, 0},
    /* hybrids (llm_arch_is_hybrid) */
    {"jamba", RD_SSM4, RECR_HEADKV0, SW_RECR_MAMBA, 0, SWA_NONE, 0, 0, 0},
    {"falcon-h1", RD_SSM4 | RD_SSM_GROUP, RECR_FALCON_H1, SW_RECR_MAMBA2, 0, SWA_NONE, 0, 0, 0},
    {"plamo2", RD_SSM4 | RD_SSM_GROUP, RECR_HEADKV0, SW_RECR_MAMBA2, 0, SWA_NONE, 0, 0, 0},
    {"granitehybrid", RD_SSM4 | RD_SSM_GROUP, RECR_HEADKV0, SW_RECR_MAMBA2, 0, SWA_NONE, 0, 0, 0},
    {"lfm2", RD_SHORTCONV, RECR_HEADKV0, SW_RECR_SHORTCONV, 0, SWA_LFM2, 0, 0, 0},
    {"lfm2moe", RD_SHORTCONV, RECR_HEADKV0, SW_RECR_SHORTCONV, 0, SWA_NONE, 0, 0, 0},
    {"nemotron_h", RD_SSM4 | RD_SSM_GROUP, RECR_NEMOTRON, SW_RECR_MAMBA2, 0, SWA_NONE, 0, 0, 0},
    {"nemotron_h_moe", RD_SSM4 | RD_SSM_GROUP, RECR_NEMOTRON, SW_RECR_MAMBA2, 0, SWA_NONE, 0, 0, 0},
    {"qwen3next", RD_SSM4 | RD_SSM_GROUP, RECR_INTERVAL, SW_RECR_GDN, 4, SWA_NONE, 0, 0, 0},
    {"qwen35", RD_SSM4 | RD_SSM_GROUP, RECR_INTERVAL, SW_RECR_GDN, 4, SWA_NONE, 0, 0, 0},
    {"qwen35moe", RD_SSM4 | RD_SSM_GROUP, RECR_INTERVAL, SW_RECR_GDN, 4, SWA_NONE, 0, 0, 0},
    {"qwen4exp", RD_SSM4 | RD_SSM_GROUP, RECR_INTERVAL, SW_RECR_GDN, 4, SWA_NONE, 0, 0, 0},
    {"minimax-01", RD_LA, RECR_INTERVAL, SW_RECR_LINEAR, 8, SWA_NONE, 0, 0, 0},
    {"kimi-linear", RD_KDA | RD_MLA, RECR_HEADKV0, SW_RECR_KDA, 0, SWA_NONE, 0, 0, 0},
    {"kimi-k3", RD_KDA | RD_MLA, RECR_HEADKV0, SW_RECR_KDA, 0, SWA_NONE, 0, 0, 0},
    {"bailingmoe3", RD_KDA | RD_MLA, RECR_HEADKV0, SW_RECR_KDA, 0, SWA_NONE, 0, 0, 0},
    {"deepseek4", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_NALL, 0, 0, 0},
    /* MLA */
    {"deepseek2", RD_MLA, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, 0},
    {"mistral4", RD_MLA, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, 0},
    {"deepseek32", RD_MLA, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, 0},
    {"glm-dsa", RD_MLA, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, 0},
    {"dots3note", RD_MLA, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_ANY, 0, 0, 0},
    /* sliding window */
    {"gemma2", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS, 2, 4096, SP_SWA_WINDOW_OPT},
    {"gemma3", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 6, 0, 0},
    {"gemma3n", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS, 5, 0, SP_KV_FROM_START_20},
    {"gemma4", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_NLAYER, 0, 0,
     SP_SHARED_KV_LAYERS | SP_SWA_DIMS_REQ},
    {"gemma4-assistant", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_NALL, 0, 0, SP_SWA_DIMS_REQ},
    {"gemma-embedding", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS, 6, 0,
     SP_SYMMETRIC | SP_NONCAUSAL},
    {"modern-bert", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 3, 0,
     SP_SYMMETRIC | SP_SWA_DENSE_FIRST | SP_NONCAUSAL},
    {"cohere2", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS, 4, 0, 0},
    {"cohere2moe", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS_OR_ARR, 4, 0, SP_SWA_DENSE_FIRST},
    {"muse-glimmer", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS_OR_ARR, 4, 0, 0},
    {"exaone-moe", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS, 4, 128, 0},
    {"exaone4", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_EXAONE4, 4, 4096, SP_SWA_WINDOW_OPT},
    {"gpt-oss", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ALWAYS, 2, 0, 0},
    {"olmo2", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 4, 0, 0},
    {"plamo3", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 8, 0, 0},
    {"afmoe", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 4, 0, 0},
    {"laguna", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 4, 0, SP_SWA_DENSE_FIRST},
    {"mellum", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW_OR_ARR, 4, 0, 0},
    {"smallthinker", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_IF_WINDOW, 4, 4096,
     SP_SWA_DENSE_FIRST | SP_SWA_FORCE_WINDOW},
    {"mimo2", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_NLAYER, 0, 0, 0},
    {"step35", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_NALL, 0, 0, 0},
    {"granite_swa", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_ARRAY_ANY, 0, 0, 0},
    {"llama4", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_LLAMA4, 4, 8192, 0},
    /* other layouts */
    {"graniteswitch", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, SP_ROUTER_LAYER},
    {"nanbeige", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, SP_LOOPS},
    {"dream", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, SP_NONCAUSAL},
    {"llada", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, SP_NONCAUSAL},
    {"llada-moe", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, SP_NONCAUSAL},
    {"rnd1", 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE, 0, 0, SP_NONCAUSAL},
};

static const struct arch_rule *find_rule(const char *name)
{
    static const struct arch_rule generic = {NULL, 0, RECR_NONE, SW_RECR_NONE, 0, SWA_NONE,
                                             0,    0, 0};
    for (size_t i = 0; i < SW_ARRAY_LEN(rules); i++)
        if (!strcmp(rules[i].name, name))
            return &rules[i];
    return &generic;
}

/* ---------------------------------------------------------------------------------------------
 * Key readers with llama_model_loader's semantics.
 */
struct rd {
    const struct sw__meta *m;
    struct sw_err *e;
};

static int need(struct rd *r, const char *key)
{
    return sw_err_set(r->e, SW_EPARSE, "%s: key %s.%s is required by llama.cpp for '%s'",
                      r->m->where, r->m->arch, key, r->m->arch);
}

/* get_key into a uint32: a number that must be a whole value in range. *found tells presence. */
static int get_u32(struct rd *r, const char *key, uint32_t *out, bool required, bool *found)
{
    double v = 0;
    int rc = r->m->num(r->m->ctx, key, &v);
    if (found)
        *found = false;
    if (rc == SW_ENOENT)
        return required ? need(r, key) : 0;
    if (rc)
        return sw_err_set(r->e, SW_EPARSE, "%s: %s.%s must be a number", r->m->where, r->m->arch,
                          key);
    if (!(v >= 0 && v <= 4294967295.0) || v != floor(v))
        return sw_err_set(r->e, SW_ERANGE, "%s: %s.%s = %g is not a valid count", r->m->where,
                          r->m->arch, key, v);
    *out = (uint32_t)v;
    if (found)
        *found = true;
    return 0;
}

static int get_f64(struct rd *r, const char *key, double *out)
{
    double v;
    int rc = r->m->num(r->m->ctx, key, &v);
    if (rc == SW_ENOENT)
        return 0;
    if (rc)
        return sw_err_set(r->e, SW_EPARSE, "%s: %s.%s must be a number", r->m->where, r->m->arch,
                          key);
    *out = v;
    return 0;
}

/* get_key_or_arr(key, uint32_t&): an array counts as absent (llama_model_loader returns false). */
/* Reads several keys in order; the first error wins. */
struct u32_key {
    const char *key;
    uint32_t *out;
    bool required;
};

static int get_u32_all(struct rd *r, const struct u32_key *k, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = get_u32(r, k[i].key, k[i].out, k[i].required, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

static int get_u32_scalar_only(struct rd *r, const char *key, uint32_t *out, bool *found)
{
    size_t len;
    *found = false;
    if (r->m->arr(r->m->ctx, key, NULL, 0, &len) == 0)
        return 0;
    return get_u32(r, key, out, false, found);
}

/* get_key_or_arr(key, std::array, n): an array must have exactly n elements; a scalar is
 * broadcast. */
static int get_per_layer(struct rd *r, const char *key, uint32_t *out, uint32_t n, bool required,
                         bool *found)
{
    double tmp[MAXL];
    size_t len = 0;
    bool f = false;
    int rc = r->m->arr(r->m->ctx, key, tmp, MAXL, &len);
    if (found)
        *found = false;
    if (rc == 0) {
        if (len != n)
            return sw_err_set(r->e, SW_EPARSE,
                              "%s: %s.%s has %zu values; llama.cpp wants one per layer (%u)",
                              r->m->where, r->m->arch, key, len, n);
        for (uint32_t i = 0; i < n; i++) {
            if (!(tmp[i] >= 0 && tmp[i] <= 4294967295.0) || tmp[i] != floor(tmp[i]))
                return sw_err_set(r->e, SW_ERANGE, "%s: %s.%s[%u] = %g is not a valid count",
                                  r->m->where, r->m->arch, key, i, tmp[i]);
            out[i] = (uint32_t)tmp[i];
        }
        if (found)
            *found = true;
        return 0;
    }
    uint32_t v = 0;
    rc = get_u32(r, key, &v, required, &f);
    if (rc || !f)
        return rc;
    for (uint32_t i = 0; i < n; i++)
        out[i] = v;
    if (found)
        *found = true;
    return 0;
}

/* get_arr(key, std::array): an array of any length up to 512. */
static int get_flags_any(struct rd *r, const char *key, uint8_t *out, bool required, bool *found)
{
    double tmp[MAXL];
    size_t len = 0;
    int rc = r->m->arr(r->m->ctx, key, tmp, MAXL, &len);
    *found = false;
    if (rc == SW_ENOENT)
        return required ? need(r, key) : 0;
    if (rc)
        return sw_err_set(r->e, SW_EPARSE, "%s: %s.%s must be an array", r->m->where, r->m->arch,
                          key);
    if (len > MAXL)
        return sw_err_set(r->e, SW_ERANGE, "%s: %s.%s has %zu values (max %d)", r->m->where,
                          r->m->arch, key, len, MAXL);
    for (size_t i = 0; i < len; i++)
        out[i] = tmp[i] != 0;
    *found = true;
    return 0;
}

/* llama_hparams::set_swa_pattern */
static void set_swa_pattern(uint8_t *is_swa, uint32_t n_layer, uint32_t n_all, uint32_t period,
                            bool dense_first)
{
    for (uint32_t il = 0; il < n_layer; il++) {
        if (dense_first)
            is_swa[il] = period == 0 || (il % period != 0);
        else
            is_swa[il] = period == 0 || (il % period < (period - 1));
    }
    for (uint32_t il = n_layer; il < n_all; il++)
        is_swa[il] = 0;
}

/* ---------------------------------------------------------------------------------------------
 * The mirror.
 */
struct hp {
    uint32_t n_layer_all, n_layer_nextn, n_embd, n_ctx_train;
    uint32_t n_head[MAXL], n_head_kv[MAXL], n_ff[MAXL], n_ff_exp[MAXL], n_expert_used[MAXL];
    uint8_t is_swa[MAXL], is_recr[MAXL];
    uint32_t hk_full, hv_full, hk_swa, hv_swa, n_rot;
    uint32_t n_swa;
    enum sw_attn_kind swa_kind;
    int32_t kv_from_start; /* -1: every layer has KV */
    uint32_t hk_mla, hv_mla, n_lora_kv, n_lora_q;
    uint32_t d_conv, d_inner, d_state, dt_rank, n_group;
    uint32_t wkv, token_shift, shortconv, kda, la;
    uint32_t n_expert, n_expert_shared, n_ff_shexp, n_dense_lead;
    bool causal;
    double rope_base, rope_scale;
};

static uint32_t n_layer_trunk(const struct hp *h)
{
    return h->n_layer_all - h->n_layer_nextn;
}

/* Per-layer values (get_key_or_arr) over n layers, several in order; the first error wins. */
struct pl_key {
    const char *key;
    uint32_t *out;
};

static int get_per_layer_all(struct rd *r, const struct pl_key *k, size_t nk, uint32_t n)
{
    for (size_t i = 0; i < nk; i++) {
        int rc = get_per_layer(r, k[i].key, k[i].out, n, false, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* llama_model_base::load_hparams: the keys every arch reads, in its order. */
static int read_base(struct rd *r, struct hp *h)
{
    int rc;
    bool f;
    uint32_t b;

    const struct u32_key sizes[] = {{"context_length", &h->n_ctx_train, true},
                                    {"embedding_length", &h->n_embd, true}};
    rc = get_u32_all(r, sizes, SW_ARRAY_LEN(sizes));
    if (rc)
        return rc;
    b = 1;
    rc = get_u32(r, "attention.causal", &b, false, &f);
    if (rc)
        return rc;
    h->causal = b != 0;
    rc = get_u32(r, "block_count", &h->n_layer_all, true, NULL);
    if (rc)
        return rc;
    if (h->n_layer_all == 0 || h->n_layer_all > MAXL)
        return sw_err_set(r->e, SW_ERANGE, "%s: %s.block_count = %u (llama.cpp allows 1..%d)",
                          r->m->where, r->m->arch, h->n_layer_all, MAXL);
    rc = get_u32(r, "nextn_predict_layers", &h->n_layer_nextn, false, NULL);
    if (rc)
        return rc;
    if (h->n_layer_nextn > h->n_layer_all)
        return sw_err_set(r->e, SW_ERANGE, "%s: nextn_predict_layers %u > block_count %u",
                          r->m->where, h->n_layer_nextn, h->n_layer_all);
    rc = get_u32(r, "expert_count", &h->n_expert, false, NULL);
    if (rc)
        return rc;
    const struct pl_key layers[] = {{"expert_used_count", h->n_expert_used},
                                    {"feed_forward_length", h->n_ff},
                                    {"attention.head_count", h->n_head}};
    rc = get_per_layer_all(r, layers, SW_ARRAY_LEN(layers), h->n_layer_all);
    if (rc)
        return rc;
    memcpy(h->n_head_kv, h->n_head, sizeof(h->n_head));
    rc = get_per_layer(r, "attention.head_count_kv", h->n_head_kv, h->n_layer_all, false, NULL);
    if (rc)
        return rc;
    h->rope_base = 10000.0;
    rc = get_f64(r, "rope.freq_base", &h->rope_base);
    if (rc)
        return rc;
    double sc = 0;
    rc = get_f64(r, "rope.scaling.factor", &sc);
    if (rc)
        return rc;
    h->rope_scale = sc == 0 ? 1.0 : 1.0 / sc;
    if (h->n_head[0] > 0) {
        h->hk_full = h->n_embd / h->n_head[0];
        h->hv_full = h->n_embd / h->n_head[0];
        const struct u32_key dims[] = {{"attention.key_length", &h->hk_full, false},
                                       {"attention.value_length", &h->hv_full, false}};
        rc = get_u32_all(r, dims, SW_ARRAY_LEN(dims));
        if (rc)
            return rc;
        h->n_rot = h->hk_full;
        rc = get_u32(r, "rope.dimension_count", &h->n_rot, false, NULL);
        if (rc)
            return rc;
    }
    h->hk_swa = h->hk_full;
    h->hv_swa = h->hv_full;
    /* the shared-expert and dense-lead keys are not read by load_hparams itself, but by many
     * archs; harmless to read for the summary */
    const struct u32_key more[] = {
        {"attention.key_length_swa", &h->hk_swa, false},
        {"attention.value_length_swa", &h->hv_swa, false},
        {"expert_shared_count", &h->n_expert_shared, false},
        {"expert_shared_feed_forward_length", &h->n_ff_shexp, false},
        {"leading_dense_block_count", &h->n_dense_lead, false},
    };
    rc = get_u32_all(r, more, SW_ARRAY_LEN(more));
    if (rc)
        return rc;
    /* expert_feed_forward_length is per-layer in some archs, scalar in most */
    return get_per_layer(r, "expert_feed_forward_length", h->n_ff_exp, h->n_layer_all, false, NULL);
}

/* What an arch's load_arch_hparams reads for its recurrent state, MLA and lightning attention:
 * each key read when the arch's rule has its RD_* flag, in this order. */
static int read_recurrent(struct rd *r, const struct arch_rule *ar, struct hp *h)
{
    const struct {
        unsigned flag;
        struct u32_key k;
    } keys[] = {
        {RD_SSM4, {"ssm.conv_kernel", &h->d_conv, true}},
        {RD_SSM4, {"ssm.inner_size", &h->d_inner, true}},
        {RD_SSM4, {"ssm.state_size", &h->d_state, true}},
        {RD_SSM4, {"ssm.time_step_rank", &h->dt_rank, true}},
        {RD_SSM_GROUP, {"ssm.group_count", &h->n_group, true}},
        {RD_WKV, {"wkv.head_size", &h->wkv, true}},
        {RD_WKV, {"token_shift_count", &h->token_shift, false}},
        {RD_SHORTCONV, {"shortconv.l_cache", &h->shortconv, true}},
        {RD_KDA, {"ssm.conv_kernel", &h->d_conv, true}},
        {RD_KDA, {"kda.head_dim", &h->kda, true}},
        {RD_MLA, {"attention.key_length_mla", &h->hk_mla, false}},
        {RD_MLA, {"attention.value_length_mla", &h->hv_mla, false}},
        {RD_MLA, {"attention.kv_lora_rank", &h->n_lora_kv, false}},
        {RD_MLA, {"attention.q_lora_rank", &h->n_lora_q, false}},
    };
    if (ar->rd & RD_WKV)
        h->token_shift = 2;
    if (ar->rd & RD_LA)
        h->la = h->hk_full; /* minimax-01: n_embd_head_la = n_embd_head_k_full */
    for (size_t i = 0; i < SW_ARRAY_LEN(keys); i++) {
        if (!(ar->rd & keys[i].flag))
            continue;
        const struct u32_key *k = &keys[i].k;
        int rc = get_u32(r, k->key, k->out, k->required, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

static int mark_recurrent(struct rd *r, const struct arch_rule *ar, struct hp *h)
{
    uint32_t nl = n_layer_trunk(h);
    switch (ar->recr) {
    case RECR_NONE:
        break;
    case RECR_ALL:
    case RECR_FALCON_H1:
        memset(h->is_recr, 1, h->n_layer_all);
        break;
    case RECR_HEADKV0:
        for (uint32_t i = 0; i < nl; i++)
            h->is_recr[i] = h->n_head_kv[i] == 0;
        break;
    case RECR_NEMOTRON:
        for (uint32_t i = 0; i < h->n_layer_all; i++)
            h->is_recr[i] = i < nl && h->n_head_kv[i] == 0 && h->n_ff[i] == 0;
        break;
    case RECR_INTERVAL: {
        bool found = false;
        uint32_t flags[MAXL];
        int rc =
            get_per_layer(r, "attention.recurrent_layers", flags, h->n_layer_all, false, &found);
        if (rc)
            return rc;
        if (found) {
            for (uint32_t i = 0; i < h->n_layer_all; i++)
                h->is_recr[i] = flags[i] != 0;
        } else {
            uint32_t interval = ar->interval;
            rc = get_u32(r, "full_attention_interval", &interval, false, NULL);
            if (rc)
                return rc;
            if (interval == 0)
                return sw_err_set(r->e, SW_ERANGE, "%s: %s.full_attention_interval is 0",
                                  r->m->where, r->m->arch);
            for (uint32_t i = 0; i < h->n_layer_all; i++)
                h->is_recr[i] = i < nl && ((i + 1) % interval != 0);
        }
        break;
    }
    }
    return 0;
}

/* The per-layer sliding-window flags (the pattern key as an array), when the GGUF has them, into
 * is_swa[0..n). */
static int swa_flags(struct rd *r, uint8_t *is_swa, uint32_t n)
{
    uint32_t flags[MAXL];
    bool af = false;
    int rc = get_per_layer(r, "attention.sliding_window_pattern", flags, n, false, &af);
    if (rc)
        return rc;
    if (af)
        for (uint32_t i = 0; i < n; i++)
            is_swa[i] = flags[i] != 0;
    return 0;
}

static int mark_swa(struct rd *r, const struct arch_rule *ar, struct hp *h)
{
    uint32_t nl = n_layer_trunk(h);
    uint32_t period = ar->period;
    bool found = false, pfound = false;
    int rc = 0;
    enum sw_attn_kind kind = (ar->sp & SP_SYMMETRIC) ? SW_ATTN_SYMMETRIC : SW_ATTN_SWA;
    bool dense_first = (ar->sp & SP_SWA_DENSE_FIRST) != 0;
    const char *WIN = "attention.sliding_window", *PAT = "attention.sliding_window_pattern";

    switch (ar->swa) {
    case SWA_NONE:
        return 0;
    case SWA_ALWAYS:
        h->n_swa = ar->swa_default;
        rc = get_u32_scalar_only(r, PAT, &period, &pfound);
        if (rc)
            return rc;
        set_swa_pattern(h->is_swa, nl, h->n_layer_all, period, dense_first);
        rc = get_u32(r, WIN, &h->n_swa, !(ar->sp & SP_SWA_WINDOW_OPT), NULL);
        if (rc)
            return rc;
        h->swa_kind = kind;
        break;
    case SWA_EXAONE4:
        if (nl == 64) {
            h->swa_kind = kind;
            h->n_swa = ar->swa_default;
            rc = get_u32_scalar_only(r, PAT, &period, &pfound);
            if (rc)
                return rc;
            set_swa_pattern(h->is_swa, nl, h->n_layer_all, period, false);
        }
        rc = get_u32(r, WIN, &h->n_swa, false, NULL);
        if (rc)
            return rc;
        break;
    case SWA_IF_WINDOW:
    case SWA_IF_WINDOW_OR_ARR:
        rc = get_u32(r, WIN, &h->n_swa, false, &found);
        if (rc)
            return rc;
        if (!(found && h->n_swa > 0)) {
            h->swa_kind = SW_ATTN_NONE;
            return 0;
        }
        h->swa_kind = kind;
        if (ar->sp & SP_SWA_FORCE_WINDOW)
            h->n_swa = ar->swa_default;
        rc = get_u32_scalar_only(r, PAT, &period, &pfound);
        if (rc)
            return rc;
        if (ar->swa == SWA_IF_WINDOW_OR_ARR && !pfound) {
            rc = swa_flags(r, h->is_swa, nl);
            if (rc)
                return rc;
        } else {
            set_swa_pattern(h->is_swa, nl, h->n_layer_all, period, dense_first);
        }
        break;
    case SWA_ALWAYS_OR_ARR:
        rc = get_u32(r, WIN, &h->n_swa, true, NULL);
        if (rc)
            return rc;
        h->swa_kind = kind;
        rc = get_u32_scalar_only(r, PAT, &period, &pfound);
        if (rc)
            return rc;
        if (pfound) {
            set_swa_pattern(h->is_swa, nl, h->n_layer_all, period, dense_first);
        } else {
            rc = swa_flags(r, h->is_swa, nl);
            if (rc)
                return rc;
        }
        break;
    case SWA_ARRAY_NLAYER:
    case SWA_ARRAY_NALL: {
        uint32_t n = ar->swa == SWA_ARRAY_NLAYER ? nl : h->n_layer_all;
        h->swa_kind = kind;
        rc = swa_flags(r, h->is_swa, n);
        if (rc)
            return rc;
        rc = get_u32(r, WIN, &h->n_swa, true, NULL);
        if (rc)
            return rc;
        break;
    }
    case SWA_ARRAY_ANY: {
        bool af = false;
        rc = get_flags_any(r, PAT, h->is_swa, true, &af);
        if (rc)
            return rc;
        rc = get_u32(r, WIN, &h->n_swa, true, NULL);
        if (rc)
            return rc;
        h->swa_kind = kind;
        break;
    }
    case SWA_LLAMA4:
        rc = get_u32(r, WIN, &h->n_swa, false, &found);
        if (rc)
            return rc;
        if (found && h->n_swa == 0) {
            h->swa_kind = SW_ATTN_NONE;
            set_swa_pattern(h->is_swa, nl, h->n_layer_all, 1, false);
        } else {
            h->swa_kind = SW_ATTN_CHUNKED;
            h->n_swa = ar->swa_default;
            rc = get_u32_scalar_only(r, PAT, &period, &pfound);
            if (rc)
                return rc;
            set_swa_pattern(h->is_swa, nl, h->n_layer_all, period, false);
        }
        break;
    case SWA_LFM2:
        rc = get_u32(r, WIN, &h->n_swa, false, &found);
        if (rc)
            return rc;
        if (found && h->n_swa > 0) {
            h->swa_kind = SW_ATTN_SWA;
            for (uint32_t i = 0; i < nl; i++)
                h->is_swa[i] = !h->is_recr[i];
        }
        break;
    }
    return 0;
}

static int read_special(struct rd *r, const struct arch_rule *ar, struct hp *h)
{
    int rc;
    if (ar->sp & SP_NONCAUSAL)
        h->causal = false;
    if (ar->sp & SP_KV_FROM_START_20)
        h->kv_from_start = 20;
    if (ar->sp & SP_SHARED_KV_LAYERS) {
        uint32_t shared = 0;
        rc = get_u32(r, "attention.shared_kv_layers", &shared, false, NULL);
        if (rc)
            return rc;
        if (shared > h->n_layer_all)
            return sw_err_set(r->e, SW_ERANGE, "%s: shared_kv_layers %u > block_count %u",
                              r->m->where, shared, h->n_layer_all);
        h->kv_from_start = (int32_t)(h->n_layer_all - shared);
    }
    if (ar->sp & SP_SWA_DIMS_REQ) {
        const struct u32_key k[] = {{"attention.key_length_swa", &h->hk_swa, true},
                                    {"attention.value_length_swa", &h->hv_swa, true}};
        rc = get_u32_all(r, k, SW_ARRAY_LEN(k));
        if (rc)
            return rc;
    }
    if (ar->sp & SP_ROUTER_LAYER) {
        /* graniteswitch: a single-head router layer after the trunk, counted as a nextn layer */
        uint32_t n_real = n_layer_trunk(h);
        if (n_real + 1 > MAXL)
            return sw_err_set(r->e, SW_ERANGE, "%s: too many layers", r->m->where);
        h->n_layer_all = n_real + 1;
        h->n_layer_nextn = 1;
        h->n_head[n_real] = 1;
        h->n_head_kv[n_real] = 1;
        h->n_ff[n_real] = 0;
    }
    if (ar->sp & SP_LOOPS) {
        uint32_t loops = 1;
        rc = get_u32(r, "num_loops", &loops, false, NULL);
        if (rc)
            return rc;
        if (loops < 1)
            return sw_err_set(r->e, SW_ERANGE, "%s: num_loops must be >= 1", r->m->where);
        uint32_t phys = n_layer_trunk(h);
        if ((uint64_t)phys * loops > MAXL)
            return sw_err_set(r->e, SW_ERANGE, "%s: %u layers x %u loops > %d", r->m->where, phys,
                              loops, MAXL);
        for (uint32_t j = 1; j < loops; j++) {
            for (uint32_t i = 0; i < phys; i++) {
                uint32_t dst = i + j * phys;
                h->n_head[dst] = h->n_head[i];
                h->n_head_kv[dst] = h->n_head_kv[i];
                h->n_ff[dst] = h->n_ff[i];
                h->is_swa[dst] = h->is_swa[i];
                h->is_recr[dst] = h->is_recr[i];
            }
        }
        if (loops > 1)
            h->n_layer_all = phys * loops;
    }
    return 0;
}

static int str_copy(char *dst, size_t n, const char *src)
{
    if (!src)
        src = "";
    size_t l = strlen(src);
    if (l >= n)
        l = n - 1;
    memcpy(dst, src, l);
    dst[l] = '\0';
    return 0;
}

/* An architecture this mirror reads: named, known to the pinned llama.cpp, a language model. */
static int check_arch(const struct sw__meta *m, struct sw_err *e)
{
    if (!m->arch || !*m->arch)
        return sw_err_set(e, SW_EPARSE, "%s: no architecture name (general.architecture)",
                          m->where);
    if (!sw__arch_known(m->arch))
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s: architecture '%s' is not known to the pinned llama.cpp (80fb11a)",
                          m->where, m->arch);
    if (!strcmp(m->arch, "clip"))
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s: this is a multimodal projector (clip), not a language model; pass "
                          "it with --mmproj",
                          m->where);
    return 0;
}

/* load_hparams then load_arch_hparams: the base keys, the recurrent dims, which layers are
 * recurrent and which sliding-window, then the arch's own departures. */
static int read_hparams(struct rd *r, const struct arch_rule *ar, struct hp *h)
{
    int rc = read_base(r, h);
    if (rc)
        return rc;
    rc = read_recurrent(r, ar, h);
    if (rc)
        return rc;
    rc = mark_recurrent(r, ar, h);
    if (rc)
        return rc;
    rc = mark_swa(r, ar, h);
    if (rc)
        return rc;
    return read_special(r, ar, h);
}

/* llama_vocab::n_tokens(): the tokenizer's token list, except for a "no_vocab" tokenizer, which
 * gets <arch>.vocab_size dummy tokens (llama_vocab::impl::load). A declaration says vocab_size. */
static uint64_t vocab_of(const struct sw__meta *m)
{
    size_t len = 0;
    double v = 0;
    const char *tm = NULL;
    m->str(m->ctx, "@tokenizer.ggml.model", &tm);
    bool dummy = tm && (!strcmp(tm, "no_vocab") || !strcmp(tm, "none"));
    if (!dummy && m->arr(m->ctx, "@tokenizer.ggml.tokens", NULL, 0, &len) == 0)
        return len;
    if (m->num(m->ctx, "vocab_size", &v) == 0 && v >= 0)
        return (uint64_t)v;
    return 0;
}

/* The whole-model facts: names, sizes, rope, vocabulary, MLA, recurrent state, experts. */
static void fill_model(struct sw_arch *a, const struct hp *h, const struct sw__meta *m)
{
    const char *nm = NULL;
    str_copy(a->name, sizeof(a->name), m->arch);
    m->str(m->ctx, "@general.name", &nm);
    str_copy(a->model_name, sizeof(a->model_name), nm);
    a->n_layer_nextn = h->n_layer_nextn;
    a->n_embd = h->n_embd;
    a->n_ctx_train = h->n_ctx_train;
    a->causal = h->causal;
    a->n_swa = h->n_swa;
    a->swa_kind = h->swa_kind;
    a->rope_freq_base = h->rope_base;
    a->rope_freq_scale = h->rope_scale;
    a->n_rot = h->n_rot;
    a->n_vocab = vocab_of(m);

    a->mla.on = h->hk_mla != 0 && h->hv_mla != 0;
    a->mla.head_dim_k = h->hk_mla;
    a->mla.head_dim_v = h->hv_mla;
    a->mla.kv_lora_rank = h->n_lora_kv;
    a->mla.q_lora_rank = h->n_lora_q;

    a->ssm.d_conv = h->d_conv;
    a->ssm.d_inner = h->d_inner;
    a->ssm.d_state = h->d_state;
    a->ssm.n_group = h->n_group;
    a->ssm.dt_rank = h->dt_rank;
    a->ssm.wkv_head_size = h->wkv;
    a->ssm.token_shift_count = h->token_shift;
    a->ssm.shortconv_l_cache = h->shortconv;
    a->ssm.kda_head_dim = h->kda;
    a->ssm.la_head_dim = h->la;

    a->moe.n_expert = h->n_expert;
    a->moe.n_expert_shared = h->n_expert_shared;
    a->moe.n_ff_shexp = h->n_ff_shexp;
    a->moe.n_layer_dense_lead = h->n_dense_lead;
}

/* Each layer: heads, dims (the sliding-window ones on SWA layers), KV or a layer it reuses, its
 * recurrent kind and its attention kind by the arch's recurrent rule; the experts used. */
static void fill_layers(struct sw_arch *a, const struct hp *h, const struct arch_rule *ar)
{
    for (uint32_t il = 0; il < h->n_layer_all; il++) {
        struct sw_arch_layer *L = &a->layers[il];
        bool swa = h->is_swa[il] != 0, recr = h->is_recr[il] != 0;
        L->nextn = il >= h->n_layer_all - h->n_layer_nextn;
        L->n_head = h->n_head[il];
        L->n_head_kv = h->n_head_kv[il];
        L->n_ff = h->n_ff[il];
        L->n_ff_exp = h->n_ff_exp[il];
        L->n_expert_used = h->n_expert_used[il];
        L->head_dim_k = swa ? h->hk_swa : h->hk_full;
        L->head_dim_v = swa ? h->hv_swa : h->hv_full;
        /* llama_hparams::has_kv, and the gemma3n/gemma4 reuse rule in llama_model::create_memory */
        L->has_kv = h->kv_from_start < 0 || il < (uint32_t)h->kv_from_start;
        L->kv_source = -1;
        if (!L->has_kv)
            L->kv_source = h->kv_from_start - (swa ? 2 : 1);
        L->recr = recr ? ar->rkind : SW_RECR_NONE;
        enum sw_attn_kind ak =
            swa ? (h->swa_kind != SW_ATTN_NONE ? h->swa_kind : SW_ATTN_SWA) : SW_ATTN_FULL;
        switch (ar->recr) {
        case RECR_ALL:
            L->attn = SW_ATTN_NONE;
            break;
        case RECR_FALCON_H1:
            L->attn = ak; /* attention and mamba2 side by side in every layer */
            break;
        case RECR_NEMOTRON:
            L->attn = (!recr && L->n_ff == 0) ? ak : SW_ATTN_NONE; /* else an MLP-only layer */
            break;
        default:
            L->attn = recr ? SW_ATTN_NONE : ak;
            break;
        }
        if (L->n_expert_used > a->moe.n_expert_used)
            a->moe.n_expert_used = L->n_expert_used;
        if (!a->moe.n_ff_exp && L->n_ff_exp && h->n_expert)
            a->moe.n_ff_exp = L->n_ff_exp;
    }
}

int sw__arch_from_meta(const struct sw__meta *m, struct sw_arch **out, struct sw_err *e)
{
    struct hp *h = NULL;
    struct sw_arch *a = NULL;
    struct rd r = {m, e};
    int rc = 0;

    *out = NULL;
    rc = check_arch(m, e);
    if (rc)
        goto out;
    h = sw_calloc(1, sizeof(*h));
    if (!h) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    h->kv_from_start = -1;
    h->causal = true;
    const struct arch_rule *ar = find_rule(m->arch);
    rc = read_hparams(&r, ar, h);
    if (rc)
        goto out;
    rc = sw_arch_new(h->n_layer_all, &a, e);
    if (rc)
        goto out;
    fill_model(a, h, m);
    fill_layers(a, h, ar);
    rc = sw_arch_finalize(a, e);
    if (rc)
        goto out;
    *out = a;
    a = NULL;
out:
    sw_arch_free(a);
    sw_free(h);
    return rc;
}
