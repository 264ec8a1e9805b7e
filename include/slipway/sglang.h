/*
 * memory/sglang: SGLang's memory pools (facts and sources in docs/sglang-law.md). The law only: its
 * command line, fleet rendering and boot log are the engine adapter's (slipway/engine_sglang.h).
 *
 * The law (model_runner profile_max_num_token / handle_max_mamba_cache / init_memory_pool, as of
 * SGLang v0.5.9): rest = available after weights - pre-load free x (1 - mem_fraction_static);
 * hybrid models carve the mamba state pool out of rest (ratio mamba_full_memory_ratio, or an
 * explicit --max-mamba-cache-size); max_total_num_tokens = rest // cell (only full-attention
 * layers hold KV in a hybrid); requests capped by the mamba pool / 3; page alignment; and the
 * default mem_fraction_static from server_args _handle_gpu_memory_settings.
 *
 * What it does not do: measure "available after weights" (a fact from the log or the operator),
 * sliding-window hybrid pools (SWA ratio), DeepSeek-V3.2 indexer pools, or VLM fraction
 * adjustment (warned, not modelled).
 */
#ifndef SLIPWAY_SGLANG_H
#define SLIPWAY_SGLANG_H

#include <slipway/core.h>
#include <slipway/hf.h>
#include <slipway/vllm.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_sglang_opts {
    int tp, pp, dp;
    bool enable_dp_attention;
    char kv_cache_dtype[32];        /* "auto", "fp8_e4m3", "fp8_e5m2", "bf16" */
    char dtype[32];                 /* "auto" */
    char mamba_ssm_dtype[32];       /* server_args default "float32" */
    double mem_fraction_static;     /* 0 = SGLang's default heuristic */
    uint64_t gpu_mem_bytes;         /* card capacity (for the default fraction) */
    uint64_t pre_load_free_bytes;   /* free memory before weights (total_gpu_memory in SGLang) */
    uint64_t post_load_avail_bytes; /* free memory after weights ("avail mem=" at load end) */
    int64_t max_total_tokens;       /* --max-total-tokens */
    int64_t max_running_requests;
    int64_t max_mamba_cache_size;
    double mamba_full_memory_ratio; /* 0 = 0.9 */
    bool disable_radix_cache;
    int64_t page_size;              /* 0 = 1 */
    int64_t context_length;         /* 0 = max_position_embeddings */
    int64_t chunked_prefill_size;   /* 0 = SGLang's bucket by GPU memory */
    int64_t cuda_graph_max_bs;      /* 0 = bucket (approximate; see docs) */
    char speculative_algorithm[32]; /* "", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM" */
    int64_t spec_num_steps, spec_eagle_topk, spec_num_draft_tokens;
    /* The room the static fraction leaves for KV + mamba state ("rest"), in bytes, when it is
     * known from a printed pool (sw_sglang_rest_from_tokens) rather than from the free-memory
     * facts above; 0 = from the facts. */
    uint64_t rest_bytes;
};
void sw_sglang_opts_init(struct sw_sglang_opts *o);

struct sw_sglang_report {
    double mem_fraction_static;
    bool fraction_defaulted;
    double reserved_mem_mib; /* the default heuristic's reserve */
    double rest_gib;         /* after the mamba pool */
    int64_t cell_bytes;      /* KV bytes per token over the KV layers of one rank */
    int64_t kv_layers;
    int64_t mamba_cache_per_req;  /* bytes of one request's mamba state (0 if none) */
    int64_t max_mamba_cache_size; /* mamba pool slots */
    int64_t max_total_num_tokens; /* "KV Cache is allocated. #tokens: N" */
    int64_t max_num_reqs;         /* req_to_token pool size before the scheduler */
    int64_t max_running_requests;
    double k_size_gb, v_size_gb;                   /* as printed: GB = 2^30 bytes */
    double mamba_conv_gb, mamba_ssm_gb;            /* the mamba pool as printed (GB = 2^30 bytes) */
    int64_t mamba_conv_per_req, mamba_ssm_per_req; /* bytes of one request's state, per rank */
    /* "Memory pool end. avail mem=X GB" (GB = 2^30 bytes), known only with the free memory after
     * the weights (has_pool_end): that, less the mamba pool, the K and V buffers and the request
     * table (req_to_token: (requests + 1) x context x int32). What the static fraction leaves for
     * activations and graphs; the engine's own small buffers (0.05 and 0.08 GB in two real boots,
     * docs/sglang-law.md) are not modelled. */
    bool has_pool_end;
    double pre_load_gb, post_load_gb; /* the facts it came from ("Load weight begin/end") */
    double pool_end_avail_gb;
    double req_to_token_gb;
    char warnings[512];
};

int sw_sglang_plan(const struct sw_hf_config *c, const struct sw_sglang_opts *o,
                   struct sw_sglang_report *r, struct sw_err *e);
json_t *sw_sglang_report_json(const struct sw_sglang_report *r);
/* Calibration: the rest (bytes the static fraction left for KV + mamba state) a printed pool of
 * `tokens` implies under the shape in o, as [*lo, *hi) (the engine floors rest / cell). Needs the
 * mamba pool fixed (--max-mamba-cache-size, or the radix cache disabled with a request cap) in a
 * hybrid: the autofill's slot floor is not inverted. The shape's --max-total-tokens is ignored. */
int sw_sglang_rest_from_tokens(const struct sw_hf_config *c, const struct sw_sglang_opts *o,
                               int64_t tokens, uint64_t *lo, uint64_t *hi, struct sw_err *e);
/* The default mem_fraction_static (server_args _handle_gpu_memory_settings); MiB reserve out. */
double sw_sglang_default_mem_fraction(const struct sw_sglang_opts *o, double *reserved_mib);

#ifdef __cplusplus
}
#endif
#endif
