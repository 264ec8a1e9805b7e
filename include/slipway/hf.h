/*
 * model/hf: what a Hugging Face checkpoint directory says about itself.
 *
 *  - config.json: the fields that decide memory (layers and their kinds, KV heads, head sizes,
 *    sliding windows, linear-attention / gated-delta-net and mamba state dimensions, MLA ranks,
 *    MTP layers, dtypes, quantization), read from the top level or from a VLM's nested
 *    text_config. Fields that differ between model families are normalised here, once.
 *  - safetensors headers: 8-byte little-endian header length, then a JSON object. The length is
 *    bounded against the file size and a ceiling BEFORE anything is read or allocated; every
 *    tensor's dtype, shape and data_offsets are validated (inside the data area, no overlap,
 *    shape product x dtype size == byte range).
 *  - model.safetensors.index.json: the weight map, bytes per dtype, and whether the shard set is
 *    complete (every named shard exists and is exactly 8 + header + data bytes long).
 *
 * What it does not do: read tensor data, know what an engine does with these numbers (memory/),
 * or download anything (payload/).
 */
#ifndef SLIPWAY_HF_H
#define SLIPWAY_HF_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kind of one decoder layer, as the config declares it. */
enum sw_hf_layer_kind {
    SW_HF_LAYER_FULL = 0,  /* full (global) attention */
    SW_HF_LAYER_SLIDING,   /* sliding-window attention */
    SW_HF_LAYER_CHUNKED,   /* chunked local attention (llama4) */
    SW_HF_LAYER_LINEAR,    /* gated delta net / linear attention (qwen3-next, qwen3.5) */
    SW_HF_LAYER_MAMBA,     /* mamba v1 */
    SW_HF_LAYER_MAMBA2,    /* mamba v2 (SSD) */
    SW_HF_LAYER_SHORTCONV, /* short convolution (lfm2) */
    SW_HF_LAYER_MLA,       /* multi-head latent attention (deepseek v2/v3, kimi) */
    SW_HF_LAYER_NONE,      /* no cache (e.g. an MLP-only layer) */
    SW_HF_LAYER__N
};

const char *sw_hf_layer_kind_name(enum sw_hf_layer_kind k);

/* Element size in bytes of a torch/HF dtype name ("bfloat16", "float32", "fp8", "F8_E4M3");
 * 0 when unknown. */
unsigned sw_hf_dtype_size(const char *name);

#define SW_HF_MAX_LAYERS 1024

/*
 * The normalised config. Integers are 0 when the config does not say (callers pick defaults);
 * strings are "" when absent. layer_kind has num_hidden_layers entries.
 */
struct sw_hf_config {
    char model_type[64];
    char architecture[128]; /* architectures[0] */
    char torch_dtype[32];   /* torch_dtype or dtype (newer transformers); "" if absent */
    bool is_vlm;            /* values came from text_config */

    int64_t num_hidden_layers;
    int64_t hidden_size;
    int64_t num_attention_heads;
    int64_t num_key_value_heads; /* defaults to num_attention_heads when absent */
    int64_t head_dim;            /* explicit, or hidden_size / num_attention_heads */
    int64_t head_dim_v;          /* differs from head_dim only where the config says so */
    int64_t vocab_size;
    int64_t max_position_embeddings;
    int64_t intermediate_size;
    bool tie_word_embeddings;

    /* Layer pattern. */
    enum sw_hf_layer_kind layer_kind[SW_HF_MAX_LAYERS];
    int64_t sliding_window;          /* tokens; 0 = none */
    int64_t sliding_window_pattern;  /* gemma: every Nth layer is global */
    int64_t full_attention_interval; /* qwen3-next: every Nth layer is full attention */
    int64_t attention_chunk_size;    /* llama4 chunked local attention */
    bool layer_types_given;          /* the kinds came from an explicit per-layer list */

    /* Gated delta net (linear attention). */
    int64_t linear_num_key_heads;
    int64_t linear_num_value_heads;
    int64_t linear_key_head_dim;
    int64_t linear_value_head_dim;
    int64_t linear_conv_kernel_dim;

    /* Mamba / mamba2 / short-conv. */
    int64_t mamba_d_state;
    int64_t mamba_d_conv;
    int64_t mamba_expand;
    int64_t mamba_n_groups;
    int64_t mamba_num_heads;
    int64_t mamba_head_dim;
    int64_t mamba_d_inner;    /* explicit intermediate size when given */
    int64_t conv_L_cache;     /* lfm2 short conv */
    char mamba_ssm_dtype[32]; /* "float32" on qwen3.5; "" = model dtype */

    /* MLA. */
    int64_t kv_lora_rank;
    int64_t qk_rope_head_dim;
    int64_t qk_nope_head_dim;
    int64_t v_head_dim;
    int64_t q_lora_rank;

    /* Speculative heads shipped in the checkpoint. */
    int64_t num_nextn_predict_layers; /* num_nextn_predict_layers or mtp_num_hidden_layers */

    /* Experts. */
    int64_t num_experts;
    int64_t num_experts_per_tok;
    int64_t moe_intermediate_size;

    /* Quantization. */
    char quant_method[32];   /* quantization_config.quant_method, "" if none */
    char kv_cache_quant[32]; /* e.g. "fp8" when the checkpoint ships KV scales */
    bool has_kv_scales;
    int64_t encoder_layers;       /* encoder-decoder models; 0 otherwise */
    int64_t num_kv_shared_layers; /* gemma3n: the last N layers read earlier layers' KV */
    bool encoder_only;            /* BERT-style models: bidirectional, no KV cache */
};

/* A config.json larger than this is refused before it is read (real ones are a few KB). */
#define SW_HF_CONFIG_CEILING (16ull * 1024 * 1024)

/* Parse config.json text. `where` names the source for errors. */
int sw_hf_config_parse(const char *text, size_t len, const char *where, struct sw_hf_config *out,
                       struct sw_err *e);
/* Load DIR/config.json, or the file itself when `path` is a file. */
int sw_hf_config_load(const char *path, struct sw_hf_config *out, struct sw_err *e);
/* Count layers of one kind. */
int64_t sw_hf_count_kind(const struct sw_hf_config *c, enum sw_hf_layer_kind k);

/* ---------------------------------------------------------------------------------------------
 * safetensors
 */
enum sw_st_dtype {
    SW_ST_BOOL = 0,
    SW_ST_U8,
    SW_ST_I8,
    SW_ST_F8_E4M3,
    SW_ST_F8_E5M2,
    SW_ST_F8_E8M0,
    SW_ST_F4, /* packed fp4 (two per byte); shape counts elements */
    SW_ST_I16,
    SW_ST_U16,
    SW_ST_F16,
    SW_ST_BF16,
    SW_ST_I32,
    SW_ST_U32,
    SW_ST_F32,
    SW_ST_I64,
    SW_ST_U64,
    SW_ST_F64,
    SW_ST__N
};

const char *sw_st_dtype_name(enum sw_st_dtype d);

#define SW_ST_MAX_DIMS 8
/* A header larger than this is refused before it is read (real headers are < 10 MiB). */
#define SW_ST_HEADER_CEILING (100ull * 1024 * 1024)

struct sw_st_tensor {
    char *name;
    enum sw_st_dtype dtype;
    int ndim;
    uint64_t shape[SW_ST_MAX_DIMS];
    uint64_t begin, end; /* offsets into the data area (after the header) */
};

struct sw_st_file {
    uint64_t header_len; /* N of the 8-byte prefix */
    uint64_t data_len;   /* max data offset: the data area the header describes */
    uint64_t file_size;  /* 8 + header_len + data_len when the file is whole */
    size_t n_tensors;
    struct sw_st_tensor *tensors;
    uint64_t bytes_by_dtype[SW_ST__N];
};

/*
 * Parse a header JSON (the bytes after the 8-byte length) of a file whose total size is
 * file_size (0 = unknown: offsets are then checked only against each other). Errors carry the
 * byte offset in the file. Free with sw_st_file_free.
 */
int sw_st_parse_header(const char *json, size_t len, uint64_t file_size, const char *where,
                       struct sw_st_file *out, struct sw_err *e);
/* Parse a whole in-memory file (prefix + header + data); `size` is the file size. */
int sw_st_parse_buffer(const void *buf, size_t size, const char *where, struct sw_st_file *out,
                       struct sw_err *e);
/* The header length N of a file from its first avail bytes (at least 8; up to 64 name what a
 * bad file looks like), checked against the file's size and SW_ST_HEADER_CEILING before anything
 * is allocated: SW_ETRUNC / SW_ERANGE saying which. For a header read elsewhere, by ranges. */
int sw_st_header_len(const void *prefix, size_t avail, uint64_t file_size, const char *where,
                     uint64_t *n, struct sw_err *e);
/* Read a file's header from disk (reads 8 + header_len bytes, never the data). */
int sw_st_read(const char *path, struct sw_st_file *out, struct sw_err *e);
void sw_st_file_free(struct sw_st_file *f);

/* model.safetensors.index.json: weight map and completeness of the shard set. */
struct sw_st_shard {
    char *file;        /* shard file name as the index names it */
    size_t n_tensors;  /* tensors the index maps to it */
    bool present;      /* exists in the directory */
    bool complete;     /* size == 8 + header + data (and its header parsed) */
    uint64_t size;     /* bytes on disk */
    char problem[256]; /* why not complete, "" if complete */
};

struct sw_st_index {
    size_t n_tensors;
    size_t n_shards;
    struct sw_st_shard *shards;
    uint64_t total_size; /* metadata.total_size, 0 if absent */
    uint64_t bytes_by_dtype[SW_ST__N];
    uint64_t weight_bytes;  /* sum of every tensor's bytes over the shards read */
    bool complete;          /* every shard present and whole, every mapped tensor found */
    size_t missing_tensors; /* mapped in the index but absent from its shard's header */
};

/* An index larger than this is refused before it is read (a 1T-parameter model's is ~10 MiB). */
#define SW_ST_INDEX_CEILING (64ull * 1024 * 1024)

/*
 * Load DIR/model.safetensors.index.json and check each shard in DIR (headers are read, data is
 * not). A missing or truncated shard is not an error: it is reported in the result (complete =
 * false, shard.problem). A malformed index is an error. Free with sw_st_index_free.
 */
int sw_st_index_load(const char *dir, struct sw_st_index *out, struct sw_err *e);
/* The index's text alone (read elsewhere): its shards and the tensors each is mapped, total_size;
 * no shard is looked at (present, complete and the byte counts stay 0). `where` names it in
 * errors. Free with sw_st_index_free. */
int sw_st_index_parse(const char *text, size_t len, const char *where, struct sw_st_index *out,
                      struct sw_err *e);
void sw_st_index_free(struct sw_st_index *ix);

/* The normalized architecture (slipway/arch.h) of a config: per-layer kinds, KV heads and head
 * dims (MLA: the latent as llama.cpp caches it), recurrent dims under both llama.cpp's and the
 * Hugging Face names, experts, KV-sharing layers. Weights are not known from a config alone
 * (weights.known = false). Free with sw_arch_free. */
struct sw_arch;
int sw_arch_from_hf(const struct sw_hf_config *c, struct sw_arch **out, struct sw_err *e);

/* Weight bytes of a checkpoint directory: the index when present, else model.safetensors, else
 * every *.safetensors file. Returns SW_ENOENT when there is none. */
int sw_hf_weight_bytes(const char *dir, uint64_t *bytes, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
