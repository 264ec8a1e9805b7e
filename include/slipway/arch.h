/*
 * model/arch: one normalized description of a model's architecture, whatever it was read from
 * (a GGUF header, a declaration in a fleet file, or a Hugging Face config.json: model/arch_hf).
 *
 * It says, per layer, what kind of token mixer the layer has (full attention, sliding window,
 * chunked, a recurrent state of some kind, MLA, none), how wide its K and V rows are, whether it
 * reads another layer's KV instead of its own, and, for the model, the recurrent state dimensions,
 * the experts, the vocabulary, the training context and the weight bytes by role. The llama.cpp
 * law (memory/llamacpp) consumes only this struct; the vLLM and SGLang laws read struct
 * sw_hf_config (slipway/hf.h) instead, as those engines do.
 *
 * Reading a GGUF mirrors what llama.cpp's own loader does with it (llama_model_base::load_hparams
 * and each arch's load_arch_hparams in src/models/<arch>.cpp of the pinned version), because the
 * GGUF keys only mean what llama.cpp makes of them: for instance "sliding_window_pattern" is a
 * period for gemma3 but a per-layer array for step35, and a recurrent layer is "head_count_kv == 0"
 * for jamba but "every 4th layer is attention" for qwen35.
 *
 * What it does not do: size any memory (memory/), read tensor data, or know engine flags.
 */
#ifndef SLIPWAY_ARCH_H
#define SLIPWAY_ARCH_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_gguf; /* slipway/gguf.h */

/* The attention part of a layer. */
enum sw_attn_kind {
    SW_ATTN_NONE = 0,  /* no attention (recurrent-only or FFN-only layer) */
    SW_ATTN_FULL,      /* causal attention over the whole context */
    SW_ATTN_SWA,       /* sliding window of arch->n_swa tokens */
    SW_ATTN_CHUNKED,   /* chunked local attention (llama4), chunk = arch->n_swa */
    SW_ATTN_SYMMETRIC, /* symmetric window (embedding models) */
};

/* The recurrent part of a layer (a fixed-size per-sequence state instead of a growing KV). */
enum sw_recr_kind {
    SW_RECR_NONE = 0,
    SW_RECR_MAMBA,  /* Mamba-1 selective scan */
    SW_RECR_MAMBA2, /* Mamba-2 SSD (multi-head, groups) */
    SW_RECR_GDN,    /* gated delta net (qwen3next, qwen35) */
    SW_RECR_RWKV6,
    SW_RECR_RWKV7,
    SW_RECR_SHORTCONV, /* LFM2 short convolution */
    SW_RECR_KDA,       /* Kimi delta attention */
    SW_RECR_LINEAR,    /* MiniMax-01 lightning (linear) attention */
};

enum sw_arch_source { SW_ARCH_SRC_GGUF = 0, SW_ARCH_SRC_JSON, SW_ARCH_SRC_HF };

/* Weight bytes by role. `total` is the sum of the roles. */
struct sw_arch_weights {
    uint64_t total;
    uint64_t embd;    /* token embedding (and per-layer input embeddings) */
    uint64_t output;  /* lm head + final norm */
    uint64_t attn;    /* q/k/v/o, MLA projections, attention norms */
    uint64_t ffn;     /* dense FFN (and shared experts) */
    uint64_t experts; /* routed experts */
    uint64_t ssm;     /* recurrent mixers (ssm_*, time_mix_*, shortconv) */
    uint64_t norm;    /* other norms */
    uint64_t other;   /* anything unclassified */
    /* What llama.cpp maps when it memory-maps the file: per file, the span from the first to the
     * last byte of the tensors it loads (llama_model_loader::get_mapping_range). 0 when unknown. */
    uint64_t mapped;
    bool known; /* false for a declaration that did not give weights */
};

/*
 * One layer. Invariants (after sw_arch_finalize):
 *   k_width = n_head_kv * head_dim_k and v_width = n_head_kv * head_dim_v for non-MLA attention;
 *   for MLA layers (arch->mla.on) K holds the compressed latent (kv_lora_rank + rope dims, as the
 *   GGUF's key_length/head_count_kv say) and v_width is 0 (llama.cpp stores no V for MLA);
 *   attn == SW_ATTN_NONE implies k_width == v_width == 0.
 */
struct sw_arch_layer {
    enum sw_attn_kind attn;
    enum sw_recr_kind recr;
    bool nextn;        /* a multi-token-prediction (MTP/NextN) block after the trunk */
    bool has_kv;       /* llama.cpp has_kv(): false for layers that read another's KV */
    int32_t kv_source; /* -1: own KV; else the layer whose KV this layer reads (gemma3n, gemma4) */
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t head_dim_k;
    uint32_t head_dim_v;
    uint64_t k_width; /* elements of K per token (llama.cpp n_embd_k_gqa(il)) */
    uint64_t v_width; /* elements of V per token (llama.cpp n_embd_v_gqa(il)) */
    uint32_t n_ff;    /* dense FFN width (0: none or MoE-only) */
    uint32_t n_ff_exp;
    uint32_t n_expert_used;
    uint64_t weight_bytes; /* tensors blk.<il>.* */
};

/* Recurrent state dimensions, in both llama.cpp's terms and the Hugging Face terms other engines
 * use. Fields that do not apply are 0. */
struct sw_arch_ssm {
    uint32_t d_conv;   /* conv kernel width (ssm.conv_kernel / *_conv_kernel_dim) */
    uint32_t d_inner;  /* ssm.inner_size */
    uint32_t d_state;  /* ssm.state_size */
    uint32_t n_group;  /* ssm.group_count (Mamba-2 groups; GDN key heads) */
    uint32_t dt_rank;  /* ssm.time_step_rank (Mamba-2 heads; GDN value heads) */
    uint32_t n_head;   /* SSM heads (Mamba-2: dt_rank; GDN: value heads) */
    uint32_t head_dim; /* SSM head dim (Mamba-2: d_inner / n_head; GDN: value head dim) */
    /* Hugging Face linear-attention names (qwen3_next / qwen3_5): filled from the above when read
     * from a GGUF; sw_arch_from_hf fills them from config.json. */
    uint32_t linear_num_key_heads;
    uint32_t linear_num_value_heads;
    uint32_t linear_key_head_dim;
    uint32_t linear_value_head_dim;
    uint32_t linear_conv_kernel_dim;
    /* RWKV */
    uint32_t wkv_head_size;
    uint32_t token_shift_count;
    /* LFM2 short convolution cache length (shortconv.l_cache) */
    uint32_t shortconv_l_cache;
    /* Kimi delta attention / MiniMax lightning attention head dims */
    uint32_t kda_head_dim;
    uint32_t la_head_dim;
    /* Elements per sequence per recurrent layer, exactly as llama.cpp defines them
     * (llama_hparams::n_embd_r: the rolling conv / token-shift state, and n_embd_s: the SSM /
     * WKV / delta-rule state). States are stored as f32. */
    uint64_t n_embd_r;
    uint64_t n_embd_s;
};

struct sw_arch_mla {
    bool on; /* K holds the latent; no V is cached (llama_hparams::is_mla) */
    uint32_t q_lora_rank;
    uint32_t kv_lora_rank;
    uint32_t head_dim_k; /* decompressed per-head K dim (key_length_mla: nope + rope) */
    uint32_t head_dim_v; /* decompressed per-head V dim (value_length_mla) */
};

struct sw_arch_moe {
    uint32_t n_expert;
    uint32_t n_expert_used; /* maximum over layers */
    uint32_t n_expert_shared;
    uint32_t n_ff_exp; /* first MoE layer's expert FFN width */
    uint32_t n_ff_shexp;
    uint32_t n_layer_dense_lead;
};

struct sw_arch {
    char name[48];        /* llama.cpp architecture name: "qwen35", "gpt-oss", "nemotron_h" */
    char model_name[128]; /* general.name or the declaration's "name" */
    enum sw_arch_source source;

    uint32_t n_layer;       /* all blocks, NextN/MTP blocks included (llama.cpp n_layer_all) */
    uint32_t n_layer_nextn; /* trailing NextN/MTP blocks (nextn_predict_layers) */
    uint32_t n_embd;
    uint64_t n_vocab;
    uint32_t n_ctx_train;
    bool causal; /* false for embedding / diffusion models */

    /* Sliding window: window (or chunk) size in tokens, 0 when no layer is local. */
    uint32_t n_swa;
    enum sw_attn_kind swa_kind; /* SW_ATTN_SWA, SW_ATTN_CHUNKED, SW_ATTN_SYMMETRIC or NONE */

    struct sw_arch_mla mla;
    struct sw_arch_ssm ssm;
    struct sw_arch_moe moe;

    /* Rope as trained (informative; the laws here do not need it). */
    double rope_freq_base;
    double rope_freq_scale;
    uint32_t n_rot;

    struct sw_arch_weights weights;
    struct sw_arch_layer *layers; /* n_layer entries, owned */

    /* Counts filled by sw_arch_finalize. */
    uint32_t n_attn_layers; /* layers with attention that own a KV */
    uint32_t n_swa_layers;  /* of which local (SWA/chunked/symmetric) */
    uint32_t n_recr_layers; /* layers with a recurrent state */
};

/* Allocate an arch with n_layer zeroed layers (kv_source = -1). Free with sw_arch_free. */
int sw_arch_new(uint32_t n_layer, struct sw_arch **out, struct sw_err *e);
void sw_arch_free(struct sw_arch *a);

/* Recompute the derived fields (per-layer widths, recurrent widths, counts) from the primary ones.
 * Every constructor calls it; a caller that edits an arch by hand (sw_arch_from_hf) calls it too. */
int sw_arch_finalize(struct sw_arch *a, struct sw_err *e);

/* Read the architecture from a parsed GGUF header the way the pinned llama.cpp reads it.
 * SW_EUNSUPPORTED for an architecture this version of llama.cpp does not know. */
int sw_arch_from_gguf(const struct sw_gguf *g, struct sw_arch **out, struct sw_err *e);

/*
 * A declared architecture (fleet files, test cases): a JSON object whose keys are llama.cpp's own
 * GGUF metadata names without the "<arch>." prefix, plus a few extras. Missing keys take llama.cpp's
 * defaults (head_count_kv = head_count, key_length = embedding_length / head_count, ...). Example:
 *
 *   {"arch": "qwen35", "name": "Qwen3.5-9B", "vocab_size": 248320,
 *    "context_length": 262144, "embedding_length": 4096, "block_count": 32,
 *    "attention.head_count": 16, "attention.head_count_kv": 4, "attention.key_length": 256,
 *    "attention.value_length": 256, "full_attention_interval": 4,
 *    "ssm.conv_kernel": 4, "ssm.inner_size": 4096, "ssm.state_size": 128,
 *    "ssm.group_count": 16, "ssm.time_step_rank": 32,
 *    "weights": {"total": 5680000000}}
 *
 * Per-layer keys take a number or an array of block_count numbers. "weights" is optional
 * ({"total": bytes} or the roles of struct sw_arch_weights). `where` names the source in errors
 * ("fleet.yaml:12:5" or a file name).
 */
int sw_arch_from_json(const json_t *decl, const char *where, struct sw_arch **out,
                      struct sw_err *e);

/* Names for printing and JSON. */
const char *sw_attn_kind_name(enum sw_attn_kind k);
const char *sw_recr_kind_name(enum sw_recr_kind k);

/* Summary as JSON (for `gguf inspect` and `plan --json`): model-level fields, layer kinds grouped
 * into runs, weights by role. New reference. */
json_t *sw_arch_to_json(const struct sw_arch *a);

#ifdef __cplusplus
}
#endif
#endif
