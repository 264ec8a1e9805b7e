/*
 * model/arch_hf: the normalized architecture (model/arch) from a Hugging Face config.json, so the
 * laws that consume struct sw_arch can plan a safetensors checkpoint too. Names follow llama.cpp's
 * architecture names where one exists (qwen3_next -> "qwen3next", qwen3_5 -> "qwen35", gpt_oss ->
 * "gpt-oss", deepseek_v2/v3 -> "deepseek2"); the recurrent dims are filled in both llama.cpp's
 * terms (ssm.*) and the Hugging Face terms (linear_*), as arch.h asks.
 *
 * What it does not do: read weights by role (only the total, from safetensors, when asked), or
 * guess a dimension the config omits (an unknown GDN head count is an error).
 */
#include <slipway/arch.h>
#include <slipway/hf.h>

#include <string.h>

static const char *llama_name(const char *mt)
{
    static const struct {
        const char *hf, *ll;
    } m[] = {
        {"qwen3_next", "qwen3next"},
        {"qwen3_5", "qwen35"},
        {"qwen3_5_text", "qwen35"},
        {"qwen3_5_moe", "qwen35moe"},
        {"qwen3_5_moe_text", "qwen35moe"},
        {"qwen3_moe", "qwen3moe"},
        {"gpt_oss", "gpt-oss"},
        {"deepseek_v2", "deepseek2"},
        {"deepseek_v3", "deepseek2"},
        {"gemma3_text", "gemma3"},
        {"falcon_h1", "falcon-h1"},
        {"granitemoehybrid", "granitehybrid"},
        {"mamba", "mamba"},
        {"mamba2", "mamba2"},
        {"jamba", "jamba"},
        {"nemotron_h", "nemotron_h"},
        {"lfm2", "lfm2"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(m); i++)
        if (!strcmp(mt, m[i].hf))
            return m[i].ll;
    return mt;
}

int sw_arch_from_hf(const struct sw_hf_config *c, struct sw_arch **out, struct sw_err *e)
{
    struct sw_arch *a = NULL;
    *out = NULL;
    if (c->num_hidden_layers <= 0 || c->num_hidden_layers > SW_HF_MAX_LAYERS)
        return sw_err_set(e, SW_EINVAL, "config has no layers");
    int rc = sw_arch_new((uint32_t)c->num_hidden_layers, &a, e);
    if (rc)
        return rc;
    a->source = SW_ARCH_SRC_HF;
    snprintf(a->name, sizeof(a->name), "%.47s", llama_name(c->model_type));
    snprintf(a->model_name, sizeof(a->model_name), "%s", c->architecture);
    a->n_embd = (uint32_t)c->hidden_size;
    a->n_vocab = (uint64_t)c->vocab_size;
    a->n_ctx_train = (uint32_t)c->max_position_embeddings;
    a->causal = !c->encoder_only;
    if (c->kv_lora_rank > 0) {
        a->mla.on = true;
        a->mla.q_lora_rank = (uint32_t)c->q_lora_rank;
        a->mla.kv_lora_rank = (uint32_t)c->kv_lora_rank;
        a->mla.head_dim_k = (uint32_t)(c->qk_nope_head_dim + c->qk_rope_head_dim);
        a->mla.head_dim_v = (uint32_t)c->v_head_dim;
    }
    struct sw_arch_ssm *s = &a->ssm;
    if (sw_hf_count_kind(c, SW_HF_LAYER_LINEAR)) {
        if (!c->linear_num_key_heads || !c->linear_num_value_heads || !c->linear_key_head_dim)
            goto missing;
        s->linear_num_key_heads = (uint32_t)c->linear_num_key_heads;
        s->linear_num_value_heads = (uint32_t)c->linear_num_value_heads;
        s->linear_key_head_dim = (uint32_t)c->linear_key_head_dim;
        s->linear_value_head_dim = (uint32_t)c->linear_value_head_dim;
        s->linear_conv_kernel_dim =
            (uint32_t)(c->linear_conv_kernel_dim ? c->linear_conv_kernel_dim : 4);
        /* llama.cpp's names for the same dims (src/models/qwen35.cpp): group_count = key heads,
         * time_step_rank = value heads, state_size = head dim, inner_size = value width */
        s->n_group = s->linear_num_key_heads;
        s->dt_rank = s->linear_num_value_heads;
        s->d_state = s->linear_key_head_dim;
        s->d_inner = s->linear_num_value_heads * s->linear_value_head_dim;
        s->d_conv = s->linear_conv_kernel_dim;
    } else if (sw_hf_count_kind(c, SW_HF_LAYER_MAMBA2) || sw_hf_count_kind(c, SW_HF_LAYER_MAMBA)) {
        s->d_conv = (uint32_t)(c->mamba_d_conv ? c->mamba_d_conv : 4);
        s->d_state = (uint32_t)c->mamba_d_state;
        s->n_group = (uint32_t)(c->mamba_n_groups ? c->mamba_n_groups : 1);
        s->d_inner = (uint32_t)(c->mamba_d_inner ? c->mamba_d_inner
                                : c->mamba_num_heads && c->mamba_head_dim
                                    ? c->mamba_num_heads * c->mamba_head_dim
                                    : c->mamba_expand * c->hidden_size);
        s->dt_rank = (uint32_t)c->mamba_num_heads;
        s->n_head = (uint32_t)c->mamba_num_heads;
        s->head_dim = (uint32_t)c->mamba_head_dim;
    } else if (sw_hf_count_kind(c, SW_HF_LAYER_SHORTCONV)) {
        s->shortconv_l_cache = (uint32_t)(c->conv_L_cache ? c->conv_L_cache : 3);
    }
    a->moe.n_expert = (uint32_t)c->num_experts;
    a->moe.n_expert_used = (uint32_t)c->num_experts_per_tok;
    a->moe.n_ff_exp = (uint32_t)c->moe_intermediate_size;
    int64_t shared_from = c->num_hidden_layers - c->num_kv_shared_layers;
    for (uint32_t il = 0; il < a->n_layer; il++) {
        struct sw_arch_layer *L = &a->layers[il];
        enum sw_hf_layer_kind k = c->layer_kind[il];
        L->kv_source = -1;
        L->has_kv = true;
        L->n_head = (uint32_t)c->num_attention_heads;
        switch (k) {
        case SW_HF_LAYER_FULL:
            L->attn = SW_ATTN_FULL;
            break;
        case SW_HF_LAYER_SLIDING:
            L->attn = SW_ATTN_SWA;
            break;
        case SW_HF_LAYER_CHUNKED:
            L->attn = SW_ATTN_CHUNKED;
            break;
        case SW_HF_LAYER_MLA:
            L->attn = SW_ATTN_FULL;
            break;
        case SW_HF_LAYER_LINEAR:
            L->recr = SW_RECR_GDN;
            break;
        case SW_HF_LAYER_MAMBA:
            L->recr = SW_RECR_MAMBA;
            break;
        case SW_HF_LAYER_MAMBA2:
            L->recr = SW_RECR_MAMBA2;
            break;
        case SW_HF_LAYER_SHORTCONV:
            L->recr = SW_RECR_SHORTCONV;
            break;
        default:
            break;
        }
        if (L->attn != SW_ATTN_NONE) {
            if (a->mla.on) {
                /* llama.cpp's MLA cache: one latent "head" of kv_lora_rank + rope, no V */
                L->n_head_kv = 1;
                L->head_dim_k = (uint32_t)(c->kv_lora_rank + c->qk_rope_head_dim);
                L->head_dim_v = 0;
            } else {
                L->n_head_kv = (uint32_t)c->num_key_value_heads;
                L->head_dim_k = (uint32_t)c->head_dim;
                L->head_dim_v = (uint32_t)c->head_dim_v;
            }
            if (c->num_kv_shared_layers > 0 && (int64_t)il >= shared_from) {
                /* reads an earlier layer's KV: the last own layer of the same kind */
                L->has_kv = false;
                for (int64_t j = shared_from - 1; j >= 0; j--)
                    if (c->layer_kind[j] == k) {
                        L->kv_source = (int32_t)j;
                        break;
                    }
            }
        }
        if (k == SW_HF_LAYER_SLIDING)
            a->n_swa = (uint32_t)c->sliding_window, a->swa_kind = SW_ATTN_SWA;
        if (k == SW_HF_LAYER_CHUNKED)
            a->n_swa = (uint32_t)c->attention_chunk_size, a->swa_kind = SW_ATTN_CHUNKED;
        L->n_expert_used = (uint32_t)c->num_experts_per_tok;
        L->n_ff_exp = (uint32_t)c->moe_intermediate_size;
        L->n_ff = c->num_experts ? 0 : (uint32_t)c->intermediate_size;
    }
    rc = sw_arch_finalize(a, e);
    if (rc) {
        sw_arch_free(a);
        return rc;
    }
    *out = a;
    return 0;
missing:
    sw_arch_free(a);
    return sw_err_set(e, SW_EPARSE,
                      "linear-attention layers need linear_num_key_heads, linear_num_value_heads "
                      "and linear_key_head_dim");
}
