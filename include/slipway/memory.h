/*
 * memory: the engines' memory laws. Given a normalized architecture (slipway/arch.h) and the
 * engine's own launch flags, each law predicts what the engine allocates and what it PRINTS at boot.
 *
 * This header holds the llama.cpp (llama-server) law, and the flag tables every engine's command
 * line is read through (memory/flags.c: the llama-server reader here is the lowest that needs
 * them; engine/ reads vLLM's and SGLang's through them and renders all three). It mirrors the pinned llama.cpp (80fb11a):
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
 * Engine command lines as flag tables (memory/flags.c).
 *
 * Each engine's flags are the rows of one table, one row per flag: its spellings, whether it
 * takes a value, the reader that fills its field (and the field's default), whether the law
 * models it, and how the adapter renders it. sw_flags_parse reads a command line through a table
 * in its engine's dialect; the adapters render through the same rows (engine/argv.c); the sim
 * reads what the parse filled. Adding a flag is adding a row. llama-server's table is
 * memory/llamacpp_args.c's (the rows the adapter renders are SW_LLAMACPP_RENDERED, below); vLLM's
 * and SGLang's are engine/'s (engine_vllm.h, engine_sglang.h).
 */
struct sw_flag;

/* The field a row fills (its defaults and the round-trip tests read it by this type). */
enum sw_flag_type {
    SW_FLAG_NONE = 0, /* none: the flag is known and skipped, noted or warned about */
    SW_FLAG_I64,      /* int64_t */
    SW_FLAG_INT,      /* int, or an enum */
    SW_FLAG_BOOL,     /* bool */
    SW_FLAG_F64,      /* double */
    SW_FLAG_U64,      /* uint64_t */
    SW_FLAG_CHARS,    /* char[size], copied */
    SW_FLAG_TEXT,     /* const char *, pointing into argv */
};

/* How a row is rendered from the render source (an offset `from` into it). Numbers are written
 * in decimal, reals with %g. */
enum sw_flag_write {
    SW_FLAG_W_NONE = 0,  /* never rendered */
    SW_FLAG_W_STR,       /* const char *: when not NULL */
    SW_FLAG_W_STR_OR,    /* const char *: when NULL or empty, the row's wtext */
    SW_FLAG_W_U64,       /* uint64_t: when not 0 */
    SW_FLAG_W_UINT,      /* unsigned: when not 0 */
    SW_FLAG_W_INT_POS,   /* int: when > 0 */
    SW_FLAG_W_INT_OR,    /* int: when < 0, the row's wnum */
    SW_FLAG_W_IS,        /* int: the flag alone, when it equals the row's arg */
    SW_FLAG_W_LAYERS,    /* int64_t: INT64_MAX "all", >= 0 the count, else nothing */
    SW_FLAG_W_FLEET_U64, /* struct sw_fleet_u64: when set */
    SW_FLAG_W_FLEET_F64, /* struct sw_fleet_f64: when set */
    SW_FLAG_W_FLEET_STR, /* struct sw_fleet_str: when set */
    SW_FLAG_W_FLEET_IS,  /* struct sw_fleet_bool: the flag alone, when set and equal to arg */
    SW_FLAG_W_FN,        /* the row's wfn says */
};

/* Reads v (NULL for a switch) into the row's field in t, the target its SW_FLAG_LINE bit picks.
 * flag is the spelling errors name. */
typedef int (*sw_flag_read_fn)(const struct sw_flag *f, void *t, const char *flag, const char *v,
                               struct sw_err *e);
/* A row's own renderer (SW_FLAG_W_FN): the value's text appended to out, from the adapter's
 * render context ctx. Returns 1 when the row is written, 0 when it is not, or an error. */
typedef int (*sw_flag_write_fn)(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                                struct sw_err *e);

/* No default (SW_LLAMACPP_RENDERED's column): the field keeps what its struct starts with. */
#define SW_FLAG_NODEF INT64_MIN

/* Row bits. LINE: the field is in the parse's second target, what the line says beyond the law's
 * options (where it serves, its name). NOTE: noted among the flags the law does not model. */
#define SW_FLAG_LINE 1u
#define SW_FLAG_NOTE 2u

struct sw_flag {
    /* "-c|--ctx-size": every spelling; the first is the one rendered */
    const char *names;
    bool value;           /* takes a value (else a switch) */
    sw_flag_read_fn read; /* fills the field; NULL: known, nothing to fill */
    enum sw_flag_type type;
    unsigned bits;   /* SW_FLAG_LINE, SW_FLAG_NOTE */
    size_t at, size; /* the field: its offset in the target, its bytes */
    /* the row's parameter: the value a switch stands for (read and written), the bound a number
     * reader checks (its table says which) */
    int64_t arg;
    int64_t dflt; /* the field's default, when has_dflt (sw_flags_defaults) */
    bool has_dflt;
    /* rendering: how, and the field it is rendered from (an offset into the render source) */
    enum sw_flag_write write;
    size_t from;
    const char *wtext;    /* SW_FLAG_W_STR_OR's default */
    int64_t wnum;         /* SW_FLAG_W_INT_OR's default */
    sw_flag_write_fn wfn; /* SW_FLAG_W_FN's */
};

/*
 * How an engine's command line is spelled around its flags (struct sw_flag_table's dialect).
 * ARGPARSE: Python's argparse, as the engines use it: '_' in a flag reads as '-', "-x=v" for any
 *   flag, a single-dash spelling is named by the row's first, an unknown flag takes a value and
 *   is noted; without it, llama-server's own parser: "--x=v" only, an unknown flag refused.
 * SWITCH_BOOL: a switch may be given =true or =false (else it takes no value).
 * SWITCH_ANY: a switch's =value is not read.
 * NOTE_SWITCH: a noted switch is noted each time it is given (else once).
 */
#define SW_FLAGS_ARGPARSE    1u
#define SW_FLAGS_SWITCH_BOOL 2u
#define SW_FLAGS_SWITCH_ANY  4u
#define SW_FLAGS_NOTE_SWITCH 8u

struct sw_flag_table {
    const struct sw_flag *rows;
    size_t n_rows;
    unsigned dialect;    /* SW_FLAGS_* */
    const char *unknown; /* what an unknown flag is (llama-server: "not a flag of ...") */
    /* The index of argv's first flag, past the program and its launcher's words; NULL: 0. */
    int (*skip)(int argc, const char *const *argv);
    /* A word that is not a flag, into the second target (NULL: refused). */
    int (*positional)(void *line, const char *word, struct sw_err *e);
};

/*
 * Read argv through the table: each row's reader fills its field in target (or in line, for a
 * row with SW_FLAG_LINE); flags the law does not model are noted, comma-separated, in noted (may
 * be NULL). A malformed command line or value fails naming the flag ("<argv>: -c: 'abc' is not a
 * whole number"). What the command line requires (a model) is the caller's to check.
 */
int sw_flags_parse(const struct sw_flag_table *t, void *target, void *line, int argc,
                   const char *const *argv, char *noted, size_t noted_n, struct sw_err *e);
/* The row that has `name` among its spellings (exactly), or NULL. */
const struct sw_flag *sw_flags_find(const struct sw_flag_table *t, const char *name);
/* Each row's default (has_dflt) into its field of target. */
void sw_flags_defaults(const struct sw_flag_table *t, void *target);
/* The row's first spelling (the rendered one) into out. */
const char *sw_flag_name(const struct sw_flag *f, char *out, size_t n);

/* Readers the engines' tables share. set: a switch stores arg, or with =false its negation, into
 * a bool (or an int, SW_FLAG_INT); text: the value itself (pointing into argv); copy: a char[]
 * copy, refused when it does not fit; clip: a char[] copy cut to fit. */
int sw_flag_set(const struct sw_flag *f, void *t, const char *flag, const char *v,
                struct sw_err *e);
int sw_flag_text(const struct sw_flag *f, void *t, const char *flag, const char *v,
                 struct sw_err *e);
int sw_flag_copy(const struct sw_flag *f, void *t, const char *flag, const char *v,
                 struct sw_err *e);
int sw_flag_clip(const struct sw_flag *f, void *t, const char *flag, const char *v,
                 struct sw_err *e);
/* The row's field in the target (or line) of a parse. */
void *sw_flag_field(const struct sw_flag *f, void *target, void *line);
/* n into the row's integer field of t, as its type holds it (SW_FLAG_INT, _I64, _U64). */
void sw_flag_put(const struct sw_flag *f, void *t, int64_t n);

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
    /* What the command line says beyond memory, as given (pointing into argv; NULL when not
     * given): where the server listens, the name it serves, its threads and verbosity; and
     * whether it serves /metrics. The sim and the adapter read them. */
    const char *alias;     /* -a / --alias */
    const char *host;      /* --host */
    const char *port;      /* --port */
    const char *threads;   /* -t */
    const char *verbosity; /* -lv */
    bool metrics;          /* --metrics */
    char warn[SW_LLAMACPP_MAX_WARN][200];
    int n_warn;
};

/*
 * The flags the adapter renders (engine/llamacpp.c) as well as the reader reads, one row each in
 * the order they are rendered:
 *     ROW(spellings, read, field, default, write, launch field)
 * read names how the value is read into `field` of struct sw_llamacpp_args (the reader's kinds:
 * memory/llamacpp_args.c); default is the field's (SW_FLAG_NODEF: none); write names how it is
 * rendered (engine/llamacpp.c) from `launch field` of the engine's launch (struct
 * sw_engine_launch, engine.h: a type this header cannot name, so the renderer expands that
 * column). The table's other rows, read but never rendered, are memory/llamacpp_args.c's.
 */
#define SW_LLAMACPP_RENDERED(ROW)                                                                  \
    ROW("-m|--model", path, model, SW_FLAG_NODEF, STR, model)                                      \
    ROW("--alias|-a", text, alias, SW_FLAG_NODEF, STR, alias)                                      \
    ROW("--host", text, host, SW_FLAG_NODEF, HOST, host)                                           \
    ROW("--port", text, port, SW_FLAG_NODEF, UINT, port)                                           \
    ROW("-c|--ctx-size", ctx, n_ctx, SW_FLAG_NODEF, U64, ctx_size)                                 \
    /* common_params_parser_init: the server's default is auto */                                  \
    ROW("-np|--parallel", slots, n_parallel, -1, U64, parallel)                                    \
    ROW("-kvu|--kv-unified", unified, kv_unified, SW_FLAG_NODEF, IS1, kv_unified)                  \
    ROW("--no-kv-unified|-no-kvu", split, kv_unified, SW_FLAG_NODEF, IS0, kv_unified)              \
    /* common_params::cache_type_k/v, flash_attn_type, n_batch, n_ubatch */                        \
    ROW("-ctk|--cache-type-k", cache, type_k, SW_KV_F16, STR, cache_type_k)                        \
    ROW("-ctv|--cache-type-v", cache, type_v, SW_KV_F16, STR, cache_type_v)                        \
    ROW("-fa|--flash-attn", fa, flash_attn, SW_FA_AUTO, STR, flash_attn)                           \
    ROW("-b|--batch-size", min1, n_batch, 2048, U64, batch)                                        \
    ROW("-ub|--ubatch-size", min1, n_ubatch, 512, U64, ubatch)                                     \
    ROW("--swa-full", on, swa_full, SW_FLAG_NODEF, IS1, swa_full)                                  \
    /* -1 auto */                                                                                  \
    ROW("-ngl|--gpu-layers|--n-gpu-layers", layers, n_gpu_layers, -1, LAYERS, n_gpu_layers)        \
    ROW("--mmproj|-mm", path, mmproj, SW_FLAG_NODEF, STR, mmproj)                                  \
    ROW("-md|--model-draft|--spec-draft-model", path, draft, SW_FLAG_NODEF, STR, draft)            \
    ROW("-t|--threads", text, threads, SW_FLAG_NODEF, THREADS, threads)                            \
    ROW("-lv|--verbosity|--log-verbosity", text, verbosity, SW_FLAG_NODEF, VERBOSITY, verbosity)

/* llama-server's whole table: the rows above, those read but never rendered, and every other flag
 * of the pinned server known by name (its value skipped, a warning where it may move memory). */
extern const struct sw_flag_table sw_llamacpp_flags;

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
