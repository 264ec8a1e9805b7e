/*
 * model/arch: the normalized architecture struct: allocation, the derived fields every constructor
 * relies on (sw_arch_finalize), names, weight roles and the JSON summary.
 *
 * The recurrent state widths follow llama.cpp's definitions exactly (src/llama-hparams.cpp,
 * llama_hparams::n_embd_r and n_embd_s), since the llama.cpp law multiplies them by cells and 4
 * bytes to get the printed R and S sizes.
 *
 * What it does not do: read files (arch_gguf.c, arch_json.c) or interpret GGUF keys
 * (arch_hparams.c).
 */
#include "arch_internal.h"

#include <string.h>

int sw_arch_new(uint32_t n_layer, struct sw_arch **out, struct sw_err *e)
{
    struct sw_arch *a;
    *out = NULL;
    if (n_layer == 0 || n_layer > 4096)
        return sw_err_set(e, SW_ERANGE, "an architecture needs 1..4096 layers (got %u)", n_layer);
    a = sw_calloc(1, sizeof(*a));
    if (!a)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    a->layers = sw_calloc(n_layer, sizeof(*a->layers));
    if (!a->layers) {
        sw_free(a);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    a->n_layer = n_layer;
    a->causal = true;
    for (uint32_t i = 0; i < n_layer; i++) {
        a->layers[i].kv_source = -1;
        a->layers[i].has_kv = true;
    }
    *out = a;
    return 0;
}

void sw_arch_free(struct sw_arch *a)
{
    if (!a)
        return;
    sw_free(a->layers);
    sw_free(a);
}

const char *sw_attn_kind_name(enum sw_attn_kind k)
{
    switch (k) {
    case SW_ATTN_NONE:
        return "none";
    case SW_ATTN_FULL:
        return "full";
    case SW_ATTN_SWA:
        return "swa";
    case SW_ATTN_CHUNKED:
        return "chunked";
    case SW_ATTN_SYMMETRIC:
        return "symmetric";
    }
    return "?";
}

const char *sw_recr_kind_name(enum sw_recr_kind k)
{
    switch (k) {
    case SW_RECR_NONE:
        return "none";
    case SW_RECR_MAMBA:
        return "mamba";
    case SW_RECR_MAMBA2:
        return "mamba2";
    case SW_RECR_GDN:
        return "gated_delta_net";
    case SW_RECR_RWKV6:
        return "rwkv6";
    case SW_RECR_RWKV7:
        return "rwkv7";
    case SW_RECR_SHORTCONV:
        return "short_conv";
    case SW_RECR_KDA:
        return "kimi_delta";
    case SW_RECR_LINEAR:
        return "linear";
    }
    return "?";
}

/* llama_hparams::n_embd_r (src/llama-hparams.cpp): the rolling state per sequence per layer. */
static uint64_t llama_n_embd_r(const struct sw_arch *a)
{
    const struct sw_arch_ssm *s = &a->ssm;
    if (s->wkv_head_size)
        return (uint64_t)s->token_shift_count * a->n_embd;
    if (s->shortconv_l_cache)
        return (uint64_t)a->n_embd * (s->shortconv_l_cache - 1);
    if (s->kda_head_dim) {
        uint64_t d_inner = (uint64_t)a->layers[0].n_head * s->kda_head_dim;
        return 3ull * (s->d_conv > 0 ? s->d_conv - 1 : 3) * d_inner;
    }
    return (uint64_t)(s->d_conv > 0 ? s->d_conv - 1 : 0) *
           ((uint64_t)s->d_inner + 2ull * s->n_group * s->d_state);
}

/* llama_hparams::n_embd_s: the recurrent state proper. */
static uint64_t llama_n_embd_s(const struct sw_arch *a)
{
    const struct sw_arch_ssm *s = &a->ssm;
    if (s->wkv_head_size)
        return (uint64_t)a->n_embd * s->wkv_head_size;
    if (s->kda_head_dim)
        return (uint64_t)s->kda_head_dim * s->kda_head_dim * a->layers[0].n_head;
    if (s->la_head_dim)
        return (uint64_t)s->la_head_dim * s->la_head_dim * a->layers[0].n_head;
    return (uint64_t)s->d_state * s->d_inner;
}

int sw_arch_finalize(struct sw_arch *a, struct sw_err *e)
{
    enum sw_recr_kind rk = SW_RECR_NONE;

    if (!a || !a->layers || a->n_layer == 0)
        return sw_err_set(e, SW_EINVAL, "empty architecture");
    if (a->n_layer_nextn > a->n_layer)
        return sw_err_set(e, SW_ERANGE, "%u NextN layers in a %u-layer model", a->n_layer_nextn,
                          a->n_layer);
    a->n_attn_layers = a->n_swa_layers = a->n_recr_layers = 0;
    for (uint32_t il = 0; il < a->n_layer; il++) {
        struct sw_arch_layer *L = &a->layers[il];
        if (L->kv_source >= (int32_t)a->n_layer)
            return sw_err_set(e, SW_ERANGE,
                              "layer %u reads the KV of layer %d, which does not exist", il,
                              L->kv_source);
        if (L->attn == SW_ATTN_NONE) {
            L->k_width = L->v_width = 0;
        } else {
            L->k_width = (uint64_t)L->n_head_kv * L->head_dim_k;
            L->v_width = a->mla.on ? 0 : (uint64_t)L->n_head_kv * L->head_dim_v;
            if (L->has_kv) {
                a->n_attn_layers++;
                if (L->attn != SW_ATTN_FULL)
                    a->n_swa_layers++;
            }
        }
        if (L->recr != SW_RECR_NONE) {
            a->n_recr_layers++;
            rk = L->recr;
        }
    }

    /* recurrent widths, and the same dims under the names other engines use */
    struct sw_arch_ssm *s = &a->ssm;
    if (a->n_recr_layers) {
        s->n_embd_r = llama_n_embd_r(a);
        s->n_embd_s = llama_n_embd_s(a);
    } else {
        s->n_embd_r = s->n_embd_s = 0;
    }
    if (rk == SW_RECR_MAMBA2 && s->dt_rank) {
        if (!s->n_head)
            s->n_head = s->dt_rank;
        if (!s->head_dim)
            s->head_dim = s->d_inner / s->dt_rank;
    } else if (rk == SW_RECR_GDN) {
        /* qwen3next / qwen35 (src/models/qwen35.cpp load_block_trunk): key heads = group_count,
         * value heads = time_step_rank, both head dims = state_size */
        if (!s->n_head)
            s->n_head = s->dt_rank;
        if (!s->head_dim)
            s->head_dim = s->d_state;
        if (!s->linear_num_key_heads)
            s->linear_num_key_heads = s->n_group;
        if (!s->linear_num_value_heads)
            s->linear_num_value_heads = s->dt_rank;
        if (!s->linear_key_head_dim)
            s->linear_key_head_dim = s->d_state;
        if (!s->linear_value_head_dim)
            s->linear_value_head_dim = s->d_state;
        if (!s->linear_conv_kernel_dim)
            s->linear_conv_kernel_dim = s->d_conv;
    }

    struct sw_arch_weights *w = &a->weights;
    uint64_t sum =
        w->embd + w->output + w->attn + w->ffn + w->experts + w->ssm + w->norm + w->other;
    if (sum)
        w->total = sum;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Weight roles. The role names come from model/gguf (sw_gguf_tensor_role); here only the block
 * index of "blk.N.*" is parsed, for per-layer bytes.
 */
int sw__tensor_layer(const char *name)
{
    int n = 0;
    bool digits = false;
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    name += 4;
    while (*name >= '0' && *name <= '9' && n < 100000) {
        n = n * 10 + (*name - '0');
        name++;
        digits = true;
    }
    return digits && *name == '.' ? n : -1;
}

void sw__weights_add(struct sw_arch_weights *w, enum sw__wrole role, uint64_t bytes)
{
    switch (role) {
    case SW__W_EMBD:
        w->embd += bytes;
        break;
    case SW__W_OUTPUT:
        w->output += bytes;
        break;
    case SW__W_ATTN:
        w->attn += bytes;
        break;
    case SW__W_FFN:
        w->ffn += bytes;
        break;
    case SW__W_EXPERTS:
        w->experts += bytes;
        break;
    case SW__W_SSM:
        w->ssm += bytes;
        break;
    case SW__W_NORM:
        w->norm += bytes;
        break;
    case SW__W_OTHER:
        w->other += bytes;
        break;
    }
    w->total += bytes;
}

/* ---------------------------------------------------------------------------------------------
 * JSON summary.
 */
static bool same_run(const struct sw_arch_layer *x, const struct sw_arch_layer *y)
{
    return x->attn == y->attn && x->recr == y->recr && x->nextn == y->nextn &&
           x->has_kv == y->has_kv && x->n_head == y->n_head && x->n_head_kv == y->n_head_kv &&
           x->head_dim_k == y->head_dim_k && x->head_dim_v == y->head_dim_v && x->kv_source == -1 &&
           y->kv_source == -1;
}

json_t *sw_arch_to_json(const struct sw_arch *a)
{
    json_t *j = json_object(), *runs = json_array(), *w = json_object();
    int bad = 0; /* any failed set: jansson drops the key, so the summary would be short */
    if (!j || !runs || !w)
        goto fail;
    bad |= sw_json_set_str(j, "arch", a->name);
    bad |= sw_json_set_str(j, "name", a->model_name);
    bad |= sw_json_set_int(j, "n_layer", a->n_layer);
    bad |= sw_json_set_int(j, "n_layer_nextn", a->n_layer_nextn);
    bad |= sw_json_set_int(j, "n_embd", a->n_embd);
    bad |= sw_json_set_int(j, "n_vocab", (int64_t)a->n_vocab);
    bad |= sw_json_set_int(j, "n_ctx_train", a->n_ctx_train);
    bad |= sw_json_set_int(j, "n_attn_layers", a->n_attn_layers);
    bad |= sw_json_set_int(j, "n_swa_layers", a->n_swa_layers);
    bad |= sw_json_set_int(j, "n_recurrent_layers", a->n_recr_layers);
    if (a->n_swa) {
        bad |= sw_json_set_int(j, "n_swa", a->n_swa);
        bad |= sw_json_set_str(j, "swa_kind", sw_attn_kind_name(a->swa_kind));
    }
    if (a->mla.on) {
        json_t *m =
            json_pack("{s:I,s:I,s:I,s:I}", "kv_lora_rank", (json_int_t)a->mla.kv_lora_rank,
                      "q_lora_rank", (json_int_t)a->mla.q_lora_rank, "head_dim_k",
                      (json_int_t)a->mla.head_dim_k, "head_dim_v", (json_int_t)a->mla.head_dim_v);
        bad |= sw_json_set_new(j, "mla", m);
    }
    if (a->n_recr_layers) {
        const struct sw_arch_ssm *s = &a->ssm;
        json_t *r =
            json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "d_conv", (json_int_t)s->d_conv,
                      "d_inner", (json_int_t)s->d_inner, "d_state", (json_int_t)s->d_state,
                      "n_group", (json_int_t)s->n_group, "dt_rank", (json_int_t)s->dt_rank,
                      "n_head", (json_int_t)s->n_head, "head_dim", (json_int_t)s->head_dim,
                      "n_embd_r", (json_int_t)s->n_embd_r, "n_embd_s", (json_int_t)s->n_embd_s);
        bad |= sw_json_set_new(j, "recurrent", r);
    }
    if (a->moe.n_expert) {
        json_t *m =
            json_pack("{s:I,s:I,s:I,s:I,s:I}", "n_expert", (json_int_t)a->moe.n_expert,
                      "n_expert_used", (json_int_t)a->moe.n_expert_used, "n_expert_shared",
                      (json_int_t)a->moe.n_expert_shared, "n_ff_exp", (json_int_t)a->moe.n_ff_exp,
                      "n_layer_dense_lead", (json_int_t)a->moe.n_layer_dense_lead);
        bad |= sw_json_set_new(j, "moe", m);
    }
    for (uint32_t i = 0; i < a->n_layer;) {
        uint32_t k = i + 1;
        while (k < a->n_layer && same_run(&a->layers[i], &a->layers[k]))
            k++;
        const struct sw_arch_layer *L = &a->layers[i];
        json_t *r = json_object();
        if (!r)
            goto fail;
        bad |= sw_json_set_int(r, "from", i);
        bad |= sw_json_set_int(r, "to", k - 1);
        bad |= sw_json_set_str(r, "attn", sw_attn_kind_name(L->attn));
        bad |= sw_json_set_str(r, "recurrent", sw_recr_kind_name(L->recr));
        bad |= sw_json_set_int(r, "n_head", L->n_head);
        bad |= sw_json_set_int(r, "n_head_kv", L->n_head_kv);
        bad |= sw_json_set_int(r, "k_width", (int64_t)L->k_width);
        bad |= sw_json_set_int(r, "v_width", (int64_t)L->v_width);
        if (L->kv_source >= 0)
            bad |= sw_json_set_int(r, "kv_source", L->kv_source);
        if (L->nextn)
            bad |= sw_json_set_bool(r, "nextn", true);
        bad |= json_array_append_new(runs, r);
        i = k;
    }
    bad |= sw_json_set_new(j, "layers", runs);
    runs = NULL;
    if (a->weights.known) {
        const struct sw_arch_weights *x = &a->weights;
        bad |= sw_json_set_int(w, "total", (int64_t)x->total);
        bad |= sw_json_set_int(w, "embd", (int64_t)x->embd);
        bad |= sw_json_set_int(w, "output", (int64_t)x->output);
        bad |= sw_json_set_int(w, "attn", (int64_t)x->attn);
        bad |= sw_json_set_int(w, "ffn", (int64_t)x->ffn);
        bad |= sw_json_set_int(w, "experts", (int64_t)x->experts);
        bad |= sw_json_set_int(w, "ssm", (int64_t)x->ssm);
        bad |= sw_json_set_int(w, "norm", (int64_t)x->norm);
        bad |= sw_json_set_int(w, "other", (int64_t)x->other);
        if (x->mapped)
            bad |= sw_json_set_int(w, "mapped", (int64_t)x->mapped);
        bad |= sw_json_set_new(j, "weights", w);
    } else {
        json_decref(w);
        bad |= sw_json_set_new(j, "weights", json_null());
    }
    w = NULL;
    if (bad)
        goto fail;
    return j;
fail:
    json_decref(j);
    json_decref(runs);
    json_decref(w);
    return NULL;
}
