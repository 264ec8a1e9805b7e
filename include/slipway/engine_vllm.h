/*
 * engine/vllm: the vLLM adapter over the law in slipway/vllm.h: `vllm serve` command lines parsed
 * into the law's options, plans from argv (`slipway plan --engine vllm|sglang`) and from a fleet
 * endpoint, argv + environment rendered for a fleet endpoint, and vLLM boot logs parsed into
 * figures and a classified failure (the struct SGLang's parser fills too).
 *
 * What it does not do: the KV arithmetic (memory/vllm, slipway/vllm.h) or launch anything
 * (deploy/).
 */
#ifndef SLIPWAY_ENGINE_VLLM_H
#define SLIPWAY_ENGINE_VLLM_H

#include <slipway/core.h>
#include <slipway/engine.h>
#include <slipway/memory.h>
#include <slipway/vllm.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What a vLLM or SGLang command line says beyond the law's options, as its flag table reads it
 * (pointing into argv; NULL when not given): the model directory, where the server listens and
 * the name it serves; whether "auto" tool choice works (vLLM's --enable-auto-tool-choice) and
 * whether it serves /metrics (SGLang's --enable-metrics). The sim serves by them.
 */
struct sw_engine_argv {
    const char *model_dir;
    const char *host, *port, *served_name;
    bool auto_tool_choice;
    bool metrics;
};

/* vLLM's flags, one row each (engine/vllm_flags.c): read into struct sw_vllm_opts and struct
 * sw_engine_argv, rendered from a fleet endpoint in the rows' order. */
extern const struct sw_flag_table sw_vllm_flags;

/*
 * Command line: `vllm serve MODEL_DIR [flags]` or `python -m vllm.entrypoints.openai.api_server
 * --model DIR [flags]`, flags verbatim, read through sw_vllm_flags into o and line (OUT). Flags
 * slipway does not model are listed in `ignored` (comma-separated) rather than refused; a
 * malformed value of a modelled flag is an error naming the flag.
 */
int sw_vllm_read_argv(int argc, char **argv, struct sw_vllm_opts *o, struct sw_engine_argv *line,
                      char *ignored, size_t ignored_n, struct sw_err *e);
/* The same, for the model directory alone (OUT: points into argv). */
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
 * What `slipway plan --engine vllm|sglang` knows beyond the engine's command line: facts the engine
 * measures at boot, which the CLI reads from its own options (--version, --gpu-memory, ...). A
 * zeroed struct gives none: version SW_VLLM_CURRENT, every byte figure 0 (not given).
 */
struct sw_engine_plan_facts {
    enum sw_vllm_version version; /* vLLM's token-count rule (SGLang: unused) */
    uint64_t gpu_memory;          /* card capacity: vLLM's gpu_total, SGLang's default fraction */
    uint64_t weights, activation, non_torch, cudagraph; /* vLLM's budget terms */
    uint64_t pre_load_free, post_load_avail;            /* SGLang's free memory around the load */
    const char *profile_path; /* a fork profile (JSON): its KV terms apply, its arena is reported
                                 when declared; NULL: none */
};

/*
 * Plan `vllm serve ...` or `python -m sglang.launch_server ...` (cmdv, verbatim) with the facts f
 * (may be NULL), as one library call so the CLI verb stays a dispatcher. *out receives {engine,
 * report, lines, [arena], [warnings]} (the caller json_decref's it). Returns 0, or an error naming
 * the engine flag or the profile's position.
 */
int sw_engine_plan_argv(const char *engine, const struct sw_engine_plan_facts *f, int cmdc,
                        char **cmdv, json_t **out, struct sw_err *e);

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
    /* "avail mem=X GB" at "Load weight begin", "Load weight end", "Memory pool end" (0: absent) */
    double pre_load_avail_gb, post_load_avail_gb, pool_end_avail_gb;
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
