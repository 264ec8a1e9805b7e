/*
 * memory: the engines' memory laws. Given a normalized architecture (slipway/arch.h) and the
 * engine's own launch flags, each law predicts what the engine allocates and what it PRINTS at boot.
 *
 * This header holds the llama.cpp (llama-server) law. It mirrors the pinned llama.cpp (80fb11a):
 * the server's flag defaults (common/arg.cpp, common/common.h, tools/server/server.cpp), context
 * setup (src/llama-context.cpp), the memory module each architecture gets
 * (src/llama-model.cpp llama_model::create_memory) and the caches' own sizes
 * (src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp, src/llama-memory-recurrent.cpp).
 * Every printed figure is computed by one function named after the llama.cpp code it mirrors; see
 * docs/llamacpp-law.md.
 *
 * The report struct is the law's prediction (struct sw_llamacpp_report; the vLLM and SGLang laws
 * have their own). A real boot is read by engine/llamacpp's boot-log parser into its own struct
 * (struct sw_bootlog_report, with the rounding each printed figure allows), and the two meet as
 * the same JSON `report` object (sw_llamacpp_report_to_json here, sw_engine_llamacpp_report_json
 * there), which the engine's differ compares field by field (`slipway bootlog diff`, `slipway up`).
 *
 * What it does not do: read files (the caller passes an arch), launch anything, or model the
 * compute buffer exactly (llama.cpp has no closed formula for it; sw_llamacpp_compute_estimate
 * states its method and measured error).
 */
#ifndef SLIPWAY_MEMORY_H
#define SLIPWAY_MEMORY_H

#include <slipway/arch.h>
#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ggml type ids of the KV cache types llama-server accepts (common/arg.cpp kv_cache_types). */
enum sw_kv_type {
    SW_KV_F32 = 0,
    SW_KV_F16 = 1,
    SW_KV_Q4_0 = 2,
    SW_KV_Q4_1 = 3,
    SW_KV_Q5_0 = 6,
    SW_KV_Q5_1 = 7,
    SW_KV_Q8_0 = 8,
    SW_KV_IQ4_NL = 20,
    SW_KV_BF16 = 30,
};
/* "f16", "q8_0" ... as ggml_type_name prints them; NULL if not a KV cache type. */
const char *sw_kv_type_name(int type);
/* -1 if `name` is not one of llama-server's cache types. */
int sw_kv_type_from_name(const char *name);
/* Bytes of a row of n elements of a cache type (ggml_row_size); SW_EINVAL if n is not a multiple
 * of the type's block (32 for the quantized types). */
int sw_kv_row_size(int type, uint64_t n, uint64_t *out);

/* ---------------------------------------------------------------------------------------------
 * llama-server's command line.
 */
enum sw_llamacpp_fa { SW_FA_AUTO = -1, SW_FA_OFF = 0, SW_FA_ON = 1 };

#define SW_LLAMACPP_MAX_WARN 32

struct sw_llamacpp_args {
    char model[1024];   /* -m */
    char mmproj[1024];  /* --mmproj (empty: none) */
    char draft[1024];   /* -md (empty: none) */
    int64_t n_ctx;      /* -c; 0 = the model's training context */
    bool n_ctx_zero;    /* -c 0 given explicitly (disables fit's context reduction) */
    int64_t n_parallel; /* -np; -1 = auto (4 slots, unified KV) */
    bool kv_unified;    /* -kvu / -no-kvu; default false (auto -np forces true) */
    bool kv_unified_set;
    int64_t kv_unified_per_slot;    /* --kv-unified-per-slot */
    int64_t n_batch;                /* -b, default 2048 */
    int64_t n_ubatch;               /* -ub, default 512 */
    int type_k, type_v;             /* -ctk / -ctv, default f16 */
    enum sw_llamacpp_fa flash_attn; /* -fa, default auto */
    bool swa_full;                  /* --swa-full */
    int64_t n_gpu_layers;           /* -ngl: -1 auto, -2 all, else a count */
    bool mmap;                      /* default on; --no-mmap, --mlock keep/clear it */
    bool no_kv_offload;             /* -nkvo */
    bool embedding;                 /* --embedding */
    bool fit;                       /* -fit on|off, default on */
    /* speculative decoding: what decides n_rs_seq and n_outputs_max */
    bool spec_rs;             /* a draft-mtp/-eagle3/-dflash/-dspark type is enabled */
    bool spec_draft;          /* any draft-* type, or -md */
    int64_t spec_ngram_max;   /* largest n-gram draft length among the enabled n-gram types */
    int64_t spec_n_max;       /* common_speculative_n_max: largest draft length (0: none) */
    int64_t spec_draft_n_max; /* --spec-draft-n-max, default 3 */
    /* the draft model's context (-md): -ctkd/-ctvd (default f16), -ngld (-1 auto, -2 all) */
    int draft_type_k, draft_type_v;
    int64_t draft_n_gpu_layers;
    char warn[SW_LLAMACPP_MAX_WARN][200];
    int n_warn;
};

/* The defaults of the pinned llama-server (n_parallel auto, f16 caches, fa auto ...). */
void sw_llamacpp_args_init(struct sw_llamacpp_args *a);
/*
 * Parse llama-server's own flags, verbatim. argv[0] may be the program ("llama-server", a path) or
 * the first flag. A bad value fails naming the flag ("-c: 'abc' is not a number"); a flag slipway
 * does not model is accepted with a warning in a->warn (its value skipped when it takes one).
 */
int sw_llamacpp_args_parse(struct sw_llamacpp_args *a, int argc, const char *const *argv,
                           struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * The report: what llama-server prints at boot, field by field.
 */
#define SW_LLAMACPP_MAX_KV 4

/* One `llama_kv_cache: size = ... (C cells, L layers, S/T seqs), K (t): ..., V (t): ...` line. */
struct sw_llamacpp_kv {
    uint32_t cells;
    uint32_t layers;
    uint32_t seqs;
    uint32_t streams;
    int k_type, v_type;
    uint64_t k_bytes, v_bytes;
    bool swa; /* the sliding-window cache of an iSWA pair */
};

/* The `llama_memory_recurrent: size = ... (C cells, L layers, S seqs R rs_seq), R ..., S ...`. */
struct sw_llamacpp_recurrent {
    uint32_t cells;
    uint32_t layers; /* llama.cpp prints the trunk layer count, not the recurrent layers */
    uint32_t seqs;
    uint32_t rs_seq;
    uint64_t r_bytes, s_bytes;
};

struct sw_llamacpp_report {
    uint32_t n_ctx, n_ctx_seq, n_seq_max;
    bool kv_unified;
    uint32_t n_batch, n_ubatch; /* printed too (llama_context: n_batch / n_ubatch) */
    uint32_t n_kv;
    struct sw_llamacpp_kv kv[SW_LLAMACPP_MAX_KV];
    bool has_recurrent;
    struct sw_llamacpp_recurrent recurrent;
    uint64_t model_bytes;   /* sum of `load_tensors: ... model buffer size` */
    uint64_t output_bytes;  /* `llama_context: ... output buffer size` */
    uint64_t compute_bytes; /* sum of `sched_reserve: ... compute buffer size` (an estimate) */
    bool model_known, compute_known;
};

/* Per device (budget). Bytes. */
#define SW_LLAMACPP_MAX_DEV 8
struct sw_llamacpp_device {
    char name[32];
    uint64_t weights, kv, recurrent, compute, output, total;
    /* the draft model (-md): its weights, its context's KV and recurrent state, its compute and
     * output buffers; the projector (--mmproj): its weights and the vision encoder's compute.
     * Zero unless priced (sw_llamacpp_plan_draft / _projector); included in total. */
    uint64_t draft_weights, draft_kv, draft_compute;
    uint64_t projector_weights, projector_compute;
    uint64_t memory; /* declared capacity, 0 if unknown */
};

struct sw_llamacpp_plan {
    struct sw_llamacpp_report report;
    uint32_t n_slots, n_ctx_slot; /* the server's slots and per-slot window */
    bool flash_attn;              /* as the memory module saw it (auto counts as on) */
    int n_dev;
    struct sw_llamacpp_device dev[SW_LLAMACPP_MAX_DEV];
    char compute_method[256];
    char warn[SW_LLAMACPP_MAX_WARN * 2][200];
    int n_warn;
    /* the draft context's own report (its KV and recurrent lines), when has_draft */
    bool has_draft, has_projector;
    struct sw_llamacpp_report draft;
    char draft_from[320];     /* where the draft's architecture and weights came from */
    char projector_from[320]; /* where the projector's figures came from */
};

/* Where the devices are: none (CPU build: everything on "CPU"), or GPUs with declared memory.
 * When device memory is known and -c is not set, the law applies llama.cpp's --fit context
 * reduction (common/fit.cpp common_params_fit_impl). */
struct sw_llamacpp_env {
    int n_gpu;
    char gpu_name[SW_LLAMACPP_MAX_DEV][32];
    uint64_t gpu_memory[SW_LLAMACPP_MAX_DEV]; /* free bytes as llama.cpp would see them */
    uint64_t host_memory;                     /* for a CPU-only build; 0 = unknown */
};

/* Run the law. SW_EUNSUPPORTED for memory modules slipway does not model (DSA, MSA, DeepSeek-V4,
 * the qwen4exp indexer); SW_EINVAL for a command line llama-server would refuse (n_ctx_seq == 0,
 * quantized V without flash attention, -np > 256), naming why. */
int sw_llamacpp_plan(const struct sw_arch *arch, const struct sw_llamacpp_args *args,
                     const struct sw_llamacpp_env *env, struct sw_llamacpp_plan *out,
                     struct sw_err *e);

/*
 * The draft model (-md) beside the main one, priced as llama-server loads it (common/speculative.cpp
 * common_base_params_to_speculative and common_speculative_init_result): a second model (its
 * weights, placed by -ngld) and a second context with the target's n_ctx and slots, the draft's
 * own cache types (-ctkd/-ctvd, f16 by default), no recurrent rollback cells (n_rs_seq 0) and one
 * output per sequence. `draft` is the draft's architecture (its GGUF, or declared: weights unknown
 * then, unless declared); `weights_bytes`, when not 0, replaces the architecture's weights (a
 * declared file size). Adds the draft_* lines to p's devices and totals, fills p->draft; `from`
 * says where the figures came from. Call after sw_llamacpp_plan with the same args and env.
 */
int sw_llamacpp_plan_draft(struct sw_llamacpp_plan *p, const struct sw_arch *draft,
                           uint64_t weights_bytes, const struct sw_llamacpp_args *args,
                           const struct sw_llamacpp_env *env, const char *from, struct sw_err *e);
/*
 * The draft's weights alone, when its architecture is unknown (its KV and compute then go
 * unpriced: the caller warns). On the first GPU unless -ngld 0 or there is none.
 */
void sw_llamacpp_plan_draft_weights(struct sw_llamacpp_plan *p, uint64_t weights_bytes,
                                    const struct sw_llamacpp_args *args,
                                    const struct sw_llamacpp_env *env, const char *from);
/*
 * The projector (--mmproj): its weights (the file's size, or declared) and the vision encoder's
 * compute buffer (declared or measured; 0 when unknown), on the first GPU (mtmd's use_gpu is on
 * by default) or the CPU when there is none.
 */
void sw_llamacpp_plan_projector(struct sw_llamacpp_plan *p, uint64_t weights_bytes,
                                uint64_t compute_bytes, const struct sw_llamacpp_env *env,
                                const char *from);

/* The compute-buffer estimate alone (bytes, summed over devices) for the caches already in `r`
 * (their cells size the KQ masks), n_tokens = min(n_ctx, n_ubatch) and n_outputs rows of logits;
 * and the method in words. */
uint64_t sw_llamacpp_compute_estimate(const struct sw_arch *arch,
                                      const struct sw_llamacpp_report *r, uint32_t n_tokens,
                                      uint32_t n_outputs, bool flash_attn);
extern const char *const sw_llamacpp_compute_method;

/* ---------------------------------------------------------------------------------------------
 * Output.
 */
/* {"n_ctx", "n_ctx_seq", "n_seq_max", "kv_unified", "kv_caches": [{cells, layers, seqs, streams,
 *   k_type, v_type, k_bytes, v_bytes, swa}], "recurrent": {cells, layers, r_bytes, s_bytes} | null,
 *   "model_bytes", "output_bytes", "compute_bytes"}. New reference. */
json_t *sw_llamacpp_report_to_json(const struct sw_llamacpp_report *r);
/* {"report": ..., "budget": {"devices": [...], "total": ...}, "server": {...},
 *  "compute_method": ..., "warnings": [...]}. New reference. */
json_t *sw_llamacpp_plan_to_json(const struct sw_llamacpp_plan *p);

/* The lines llama-server prints for this report, in its own format, one per line. */
int sw_llamacpp_print_lines(const struct sw_llamacpp_report *r, struct sw_buf *out);
/* Two of those lines, each after prefix ("" or a log level such as "I "; the sim prints the
 * whole log): a KV cache's `llama_kv_cache: size = ...` and the recurrent state's
 * `llama_memory_recurrent: size = ...`. SW_ENOMEM when the buffer refuses. */
int sw_llamacpp_kv_line(struct sw_buf *out, const char *prefix, const struct sw_llamacpp_kv *k);
int sw_llamacpp_recurrent_line(struct sw_buf *out, const char *prefix,
                               const struct sw_llamacpp_recurrent *x);

/* MiB the way llama.cpp prints them: "%.2f" of a float (the `size = ` lines cast to float) or of
 * a double (the buffer lines). Returns out. */
const char *sw_llamacpp_mib_f(uint64_t bytes, char *out, size_t n);
const char *sw_llamacpp_mib_d(uint64_t bytes, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
