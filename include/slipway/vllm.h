/*
 * memory/vllm: vLLM v1's KV cache accounting, re-derived (facts and sources in docs/vllm-law.md),
 * and engine/vllm: its command line and its boot log.
 *
 * From a Hugging Face config and a `vllm serve` command line, predict what the engine prints:
 * "Setting attention block size to N tokens", "Padding mamba page size by X%", "Add N padding
 * layers", "Available KV cache memory", "GPU KV cache size: N tokens", "Maximum concurrency for
 * L tokens per request: X x", per KV-cache group detail, and num_gpu_blocks.
 *
 * The law works on vLLM's own per-layer view (struct sw_vllm_spec): full attention, sliding
 * window, chunked local, MLA (latent replicated on every TP rank), mamba-like state (mamba1,
 * mamba2, gated delta net, short conv) with conv and temporal shapes and dtypes, encoder-only.
 * The specs are built from struct sw_hf_config (model/hf).
 *
 * Versions: the printed token count changed. SW_VLLM_CURRENT (seen in v0.24 logs and later):
 * tokens = int(concurrency x max_model_len). SW_VLLM_V1_LEGACY (v1 engine up to the change):
 * tokens = num_blocks // num_groups x min block size (x cp world size). SW_VLLM_V0: blocks x
 * block_size, concurrency = tokens / max_model_len. CUDA graph memory is subtracted from the
 * budget before KV sizing from v0.21 (SW_VLLM_CURRENT); not before.
 *
 * What it does not do: model activation peak, non-torch or CUDA-graph bytes (the engine profiles
 * them on the GPU; they are supplied as facts), or run anything.
 */
#ifndef SLIPWAY_VLLM_H
#define SLIPWAY_VLLM_H

#include <slipway/core.h>
#include <slipway/engine.h>
#include <slipway/hf.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sw_vllm_version {
    SW_VLLM_CURRENT = 0, /* concurrency-derived token count, graphs profiled before KV */
    SW_VLLM_V1_LEGACY,   /* v1 engine, block-derived token count, graphs not subtracted */
    SW_VLLM_V0,          /* V0 engine: # GPU blocks, tokens = blocks x block_size */
};
const char *sw_vllm_version_name(enum sw_vllm_version v);
int sw_vllm_version_parse(const char *s, enum sw_vllm_version *out);

enum sw_vllm_kind {
    SW_VLLM_FULL = 0,
    SW_VLLM_SLIDING,
    SW_VLLM_CHUNKED,
    SW_VLLM_MLA,
    SW_VLLM_MAMBA,
    SW_VLLM_ENCODER_ONLY,
};
const char *sw_vllm_kind_name(enum sw_vllm_kind k);

enum sw_vllm_mamba_mode { SW_MAMBA_NONE = 0, SW_MAMBA_ALIGN, SW_MAMBA_ALL };

/* One layer as vLLM's KV cache manager sees it on one rank. */
struct sw_vllm_spec {
    enum sw_vllm_kind kind;
    int layer;  /* model layer index; >= 1000 for draft / MTP layers */
    bool draft; /* added by speculative decoding */
    int64_t block_size;
    /* attention */
    int64_t num_kv_heads; /* per rank (replicated when the model has fewer than TP) */
    int64_t head_size;
    int64_t head_size_v;
    unsigned dtype_bytes;
    bool per_token_head_scales;    /* fp8/int8_per_token_head: 2 x kv_heads x fp32 per token */
    int64_t extra_bytes_per_token; /* fork profile: bytes per token a fork adds to the page */
    int64_t sliding_window;
    int64_t chunk_size;
    /* mamba-like state: shapes flattened to element counts */
    char mamba_type[16]; /* "mamba1", "mamba2", "gdn", "short_conv" */
    int n_states;
    int64_t state_elems[2];
    unsigned state_bytes[2];
    int64_t num_speculative_blocks;
    /* unification */
    int64_t page_size_padded; /* 0 = none */
};

/* Page bytes of one spec (what vLLM's page_size_bytes returns). */
int64_t sw_vllm_page_bytes(const struct sw_vllm_spec *s);

/*
 * Facts slipway cannot know offline, and the knobs of the command line. Zero means "not given"
 * for every count and byte figure.
 */
struct sw_vllm_opts {
    enum sw_vllm_version version;
    int tp, pp, dcp, pcp;
    char kv_cache_dtype[32];    /* "auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", ... */
    char dtype[32];             /* --dtype, "auto" */
    char mamba_cache_dtype[32]; /* --mamba-cache-dtype, "auto" */
    char mamba_ssm_cache_dtype[32];
    int64_t block_size;    /* --block-size, 0 = engine's choice */
    int64_t max_model_len; /* 0 = max_position_embeddings */
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    double gpu_memory_utilization;  /* 0 = 0.9 */
    uint64_t kv_cache_memory_bytes; /* --kv-cache-memory-bytes */
    int enable_prefix_caching;      /* -1 = default, 0 off, 1 on */
    int mamba_cache_mode;           /* -1 = default, else enum sw_vllm_mamba_mode */
    bool disable_hybrid_kv_cache_manager;
    int64_t num_gpu_blocks_override;
    /* speculative decoding (--speculative-config) */
    char spec_method[32]; /* "", "mtp", "eagle", "eagle3", "draft_model", "ngram", ... */
    int64_t num_speculative_tokens;
    char spec_model[1024];            /* draft model directory, when given */
    const struct sw_hf_config *draft; /* loaded draft config (NULL = none) */
    /* memory facts for the budget (bytes per rank) */
    uint64_t gpu_total_bytes;
    uint64_t weights_bytes;
    uint64_t activation_peak_bytes;
    uint64_t non_torch_bytes;
    uint64_t cudagraph_bytes;
    uint64_t stage_kv_bytes[16]; /* per PP stage, when the stages differ (0 = the same) */
    /* fork profile terms (0 = plain vLLM) */
    int64_t extra_attn_bytes_per_token; /* added to each attention page, per token per layer */
    int64_t extra_mamba_blocks;         /* added to each mamba group's blocks per request */
};

void sw_vllm_opts_init(struct sw_vllm_opts *o);

#define SW_VLLM_MAX_GROUPS 64
#define SW_VLLM_MAX_SPECS  (SW_HF_MAX_LAYERS + 16)

struct sw_vllm_group {
    enum sw_vllm_kind kind;
    int n_layers; /* real layers in this group */
    int64_t block_size;
    int64_t page_bytes;
    int64_t blocks_per_request;
    int first_layer;
};

struct sw_vllm_report {
    enum sw_vllm_version version;
    int pp_stage; /* the stage that limits num_blocks */
    uint64_t available_kv_bytes;
    bool available_from_flag; /* --kv-cache-memory-bytes */
    int64_t block_size;       /* cache_config.block_size after hybrid alignment */
    bool block_size_set;      /* the engine prints "Setting attention block size to" */
    double mamba_padding_pct; /* -1 when not printed */
    int padding_layers;       /* "Add N padding layers" (sum over buckets) */
    int64_t group_size;       /* layers per group (the divisor of the budget) */
    int64_t page_bytes;       /* uniform page per layer, or the uniform-type group page */
    int64_t num_gpu_blocks;
    int64_t blocks_per_request;
    int64_t kv_cache_tokens; /* "GPU KV cache size: N tokens" */
    double max_concurrency;  /* "Maximum concurrency for L tokens per request: X x" */
    int64_t max_model_len;
    int64_t kv_needed_bytes;   /* KV for one request of max_model_len */
    int64_t estimated_max_len; /* when one request does not fit: the engine's suggestion */
    bool fits;                 /* at least one max_model_len request fits */
    int n_groups;
    struct sw_vllm_group groups[SW_VLLM_MAX_GROUPS];
    int n_specs; /* layers with a cache on the limiting stage */
    char warnings[1024];
};

/* Build vLLM's per-layer specs for one PP stage (stage < pp) from a config. */
int sw_vllm_specs(const struct sw_hf_config *c, const struct sw_vllm_opts *o, int stage,
                  struct sw_vllm_spec *specs, int *n, struct sw_err *e);
/* The whole law. */
int sw_vllm_plan(const struct sw_hf_config *c, const struct sw_vllm_opts *o,
                 struct sw_vllm_report *r, struct sw_err *e);
/* The report as JSON: {engine, engine_version, report:{...}, groups:[...], lines:[...]}. */
json_t *sw_vllm_report_json(const struct sw_vllm_report *r);
/* The lines vLLM would print, newline-separated, into b. */
int sw_vllm_report_lines(const struct sw_vllm_report *r, struct sw_buf *b);

/*
 * Command line: `vllm serve MODEL_DIR [flags]` or `python -m vllm.entrypoints.openai.api_server
 * --model DIR [flags]`, flags verbatim. model_dir (OUT) points into argv. Flags slipway does not
 * model are listed in `ignored` (comma-separated) rather than refused; a malformed value of a
 * modelled flag is an error naming the flag.
 */
int sw_vllm_parse_argv(int argc, char **argv, struct sw_vllm_opts *o, const char **model_dir,
                       char *ignored, size_t ignored_n, struct sw_err *e);
/* When the pool is not pinned and no weights were given: the checkpoint's safetensors bytes in
 * DIR, per rank (/ TP / PP), as o->weights_bytes. Nothing when DIR has no readable weights. */
void sw_vllm_weights_from_dir(struct sw_vllm_opts *o, const char *dir);
/* Parse argv, load MODEL_DIR/config.json (and the draft's), fill weights from safetensors when
 * no fact says otherwise, and plan. `facts` carries the budget facts and version (may be NULL). */
int sw_vllm_plan_argv(int argc, char **argv, const struct sw_vllm_opts *facts,
                      struct sw_vllm_report *r, struct sw_err *e);

/*
 * `slipway plan --engine vllm|sglang [OPTIONS] -- COMMAND...`, as one library call so the CLI verb
 * stays a dispatcher. OPTIONS are slipway's facts about what the engine measures at boot:
 *   --version V (vLLM: current|legacy|v0|0.24.0...), --gpu-memory BYTES (card capacity),
 *   --weights BYTES, --activation BYTES, --non-torch BYTES, --cudagraph BYTES (vLLM budget terms),
 *   --pre-load-free BYTES, --post-load-avail BYTES (SGLang), --profile FILE.json (a fork profile:
 *   its KV terms apply; its arena is reported when declared).
 * BYTES take units ("31.86GiB" is refused by sw_parse_bytes as fractional: write "32622MiB" or
 * bytes). *out receives {engine, report, lines, [arena], [warnings]}. Returns 0, or an error
 * naming the option or the engine flag.
 */
int sw_engine_plan_cli(const char *engine, int optc, char **optv, int cmdc, char **cmdv,
                       json_t **out, struct sw_err *e);

/*
 * Argv + environment for a fleet endpoint (engine vllm): paths translated through the payload's
 * container mounts when the endpoint has an image (a host path no mount covers is an error at its
 * fleet position), the API key only in VLLM_API_KEY, the shape's settings as vLLM flags, the
 * endpoint's args verbatim last. Free with sw_engine_cmd_free.
 */
struct sw_fleet_endpoint;
int sw_vllm_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                            struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Boot logs. The status and failure classes are engine/'s (slipway/engine.h); what follows adds
 * what vLLM and SGLang print and the figures of their failures.
 */
struct sw_vllm_bootlog {
    char engine[16]; /* "vllm" or "sglang" */
    char engine_version[64];
    bool has_tokens, has_concurrency, has_available, has_blocks, has_block_size;
    int64_t kv_cache_tokens;  /* "GPU KV cache size: N tokens" */
    double max_concurrency;   /* "Maximum concurrency for L tokens per request: X x" */
    int64_t concurrency_len;  /* L */
    double available_kv_gib;  /* "Available KV cache memory: X GiB" */
    int64_t num_gpu_blocks;   /* V0 "# GPU blocks: N" */
    int64_t block_size;       /* "Setting attention block size to N tokens" */
    double mamba_padding_pct; /* "Padding mamba page size by X%", -1 if absent */
    int padding_layers;       /* "Add N padding layers" */
    double weights_gib;       /* "Model loading took X GiB" */
    /* SGLang */
    bool has_sglang_kv;
    int64_t sglang_tokens; /* "KV Cache is allocated. #tokens: N" */
    double sglang_k_gb, sglang_v_gb;
    int64_t max_total_num_tokens;
    int64_t max_running_requests;
    int64_t mamba_slots; /* "Mamba Cache is allocated. max_mamba_cache_size: N" */
    /* the boot: booted, failed, furthest phase, failure {class, phase, message, line} */
    struct sw_boot_status st;
    /* figures of the failure */
    char kind[32];             /* "torch_oom", "hip_oom", "dynamo", "value_error", ... */
    uint64_t tried_bytes;      /* oom: "Tried to allocate X" */
    uint64_t free_bytes;       /* oom: "Y free" */
    char dimension[128];       /* compile_constraint: the dimension dynamo specialised */
    int64_t constant;          /* ... and the constant it specialised it to */
    int64_t max_model_len;     /* kv_too_small: the asked length */
    int64_t suggested_max_len; /* kv_too_small: the engine's suggestion / capacity */
    double needed_gib, available_gib;
};

/* Parse a vLLM boot log. Never fails on content (an empty report is a valid answer). */
int sw_vllm_bootlog_parse(const char *text, size_t len, struct sw_vllm_bootlog *out,
                          struct sw_err *e);
/* {"engine", "booted", "phase", "report", "precision", "failure"} as engine.h's bootlog
 * contract describes; failure carries the figures above. New reference. */
json_t *sw_vllm_bootlog_json(const struct sw_vllm_bootlog *r);

#ifdef __cplusplus
}
#endif
#endif
