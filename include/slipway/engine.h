/*
 * engine: one small adapter per serving engine (llama.cpp's llama-server today; vLLM and SGLang
 * register theirs the same way), behind one table of function pointers:
 *   - render:   the engine's argv and environment for a fleet endpoint, one builder per engine
 *               (secrets only in the env);
 *   - bootlog:  what the engine printed at boot -> the `report` object that `slipway plan`
 *               predicts, plus a classified failure when the boot failed;
 *   - diff:     predicted report vs printed report, field by field, with a tolerance only where
 *               the printed precision demands it;
 *   - the engine's readiness/liveness endpoints, its HTTP error shape and its metric names.
 *
 * Adding an engine: write src/engine/<engine>*.c defining `const struct sw_engine
 * sw__engine_<id>` and add one `X(<id>)` line to SW_ENGINES in src/engine/engine_internal.h.
 *
 * The vLLM and SGLang adapters' own entry points (argv parsing, plans, fleet rendering, boot-log
 * structs) are in slipway/engine_vllm.h and slipway/engine_sglang.h.
 *
 * What it deliberately does not do: start or stop processes (deploy), do the memory arithmetic
 * (the laws in memory/; a plan here feeds them the engine's flags), talk HTTP (net/probe). It
 * reads text and files (boot logs, config.json, GGUF and safetensors headers for a plan) and
 * writes argv; it starts nothing and changes nothing on the machine.
 */
#ifndef SLIPWAY_ENGINE_H
#define SLIPWAY_ENGINE_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Boot outcome, shared by every engine.
 */
enum sw_boot_class {
    SW_BOOT_NONE = 0,           /* no failure */
    SW_BOOT_OOM,                /* an allocation failed (phase says which) */
    SW_BOOT_BAD_PAYLOAD,        /* the model file is not a usable model (payload_kind says why) */
    SW_BOOT_MISSING_PAYLOAD,    /* the model file is not there (or cannot be opened) */
    SW_BOOT_BAD_FLAG,           /* the engine refused its command line */
    SW_BOOT_PORT_IN_USE,        /* the engine could not bind its listening socket */
    SW_BOOT_UNSUPPORTED,        /* well-formed payload this engine build does not support:
                                architecture, tensor type, tokenizer ("unsupported_arch") */
    SW_BOOT_CRASH,              /* assertion, abort, segfault, killed by a signal */
    SW_BOOT_TIMEOUT,            /* not ready within the deadline (deploy only) */
    SW_BOOT_UNKNOWN,            /* failed, and nothing we recognise says why */
    SW_BOOT_COMPILE_CONSTRAINT, /* torch.compile / dynamo refused a shape (vLLM) */
    SW_BOOT_KV_TOO_SMALL,       /* max_model_len above what the KV pool holds (vLLM, SGLang) */
    SW_BOOT_BAD_PATH,           /* the model path is not one the engine can open ("Repo id must
                                   be in the form ...": a host path inside a container) */
    SW_BOOT_ENGINE_DEAD_EXIT0,  /* the engine core died and the API server exited 0 */
    SW_BOOT_NOT_THIS_ENGINE,    /* no line of the log is one this engine prints: another
                                   engine's log, or not a boot log at all */
    SW_BOOT__NCLASS
};

/* Where the boot was when it stopped. The oom phases named by issue 3 are load, kv_alloc,
 * compute_alloc and runtime; the others locate non-oom failures. */
enum sw_boot_phase {
    SW_PHASE_NONE = 0,
    SW_PHASE_ARGS,          /* parsing its command line */
    SW_PHASE_BIND,          /* opening its listening socket */
    SW_PHASE_LOAD,          /* reading the model: header, tensors, weights buffer */
    SW_PHASE_CONTEXT,       /* building the context before the caches */
    SW_PHASE_KV_ALLOC,      /* allocating the KV / recurrent caches */
    SW_PHASE_COMPUTE_ALLOC, /* reserving the compute graphs and buffers */
    SW_PHASE_WARMUP,        /* the empty warm-up run */
    SW_PHASE_RUNTIME,       /* after it said it was serving */
    SW_PHASE_PROFILE,       /* vLLM/SGLang memory profiling run (before kv_alloc) */
    SW_PHASE_GRAPH_CAPTURE, /* CUDA/HIP graph capture (after kv_alloc) */
    SW_PHASE__N
};

enum sw_payload_kind {
    SW_PAYLOAD_NONE = 0,
    SW_PAYLOAD_HTML,        /* an HTML page saved as the model (a 403/404 page) */
    SW_PAYLOAD_LFS_POINTER, /* a git-lfs pointer instead of the object */
    SW_PAYLOAD_JSON,        /* a JSON error body */
    SW_PAYLOAD_TRUNCATED,   /* the file ends before its header or its tensor data does */
    SW_PAYLOAD_BAD_MAGIC,   /* some other file */
    SW_PAYLOAD_CORRUPT,     /* right magic, inconsistent content */
    SW_PAYLOAD__N
};

/* "oom", "bad_payload", "missing_payload", "bad_flag", "port_in_use", "unsupported_arch",
 * "crash", "timeout", "unknown", "compile_constraint", "kv_too_small", "bad_path",
 * "engine_dead_exit0" ("none" for SW_BOOT_NONE). */
const char *sw_boot_class_name(enum sw_boot_class c);
/* "args", "bind", "load", "context", "kv_alloc", "compute_alloc", "warmup", "runtime" (NULL for
 * NONE). */
const char *sw_boot_phase_name(enum sw_boot_phase p);
/* "html", "lfs_pointer", "json", "truncated", "bad_magic", "corrupt" (NULL for NONE). */
const char *sw_payload_kind_name(enum sw_payload_kind k);
/* Inverse lookups: SW_ENOENT for an unknown name. */
int sw_boot_class_parse(const char *s, enum sw_boot_class *out);

struct sw_boot_failure {
    enum sw_boot_class cls;
    enum sw_boot_phase phase;
    enum sw_payload_kind payload_kind; /* only for SW_BOOT_BAD_PAYLOAD */
    char message[512];                 /* the engine's own words for it, prefix stripped */
    int line;                          /* 1-based line of the log that says it, 0 if none */
};

/* {class, phase, payload_kind, message, line}; phase/payload_kind null when NONE. New ref. */
json_t *sw_boot_failure_to_json(const struct sw_boot_failure *f);

/* What the caller knows beyond the log (all optional). */
struct sw_bootlog_hints {
    bool exited;         /* the process is gone */
    int exit_code;       /* when exited normally, else -1 */
    int exit_signal;     /* when killed by a signal, else 0 */
    const char *payload; /* the model path: sniffed to tell an HTML page from a pointer */
    bool ready;          /* the engine answered its readiness probe */
    bool live;           /* the log is still being written (deploy): a log with none of the
                            engine's lines yet is early, not another engine's */
};

/* The status of a boot read from its log. */
struct sw_boot_status {
    bool booted;              /* the engine said it is serving */
    bool failed;              /* failure is set */
    enum sw_boot_phase phase; /* the furthest phase the log reached */
    struct sw_boot_failure failure;
    int n_lines;
    char build[64]; /* engine build/version as printed, "" if absent */
};

/* ---------------------------------------------------------------------------------------------
 * Render.
 */
/* What an engine needs to be launched: engine-neutral; every field is optional except model.
 * Unset numbers are 0 (or -1 where 0 is meaningful), unset strings NULL. */
struct sw_engine_launch {
    const char *binary;       /* NULL: the engine's default_binary, found in PATH */
    const char *model;        /* payload path (a GGUF for llama.cpp) */
    const char *alias;        /* served model name */
    const char *host;         /* listen address; NULL: 127.0.0.1 */
    unsigned port;            /* 0: the engine's default */
    uint64_t ctx_size;        /* llama.cpp -c: cells over all slots */
    uint64_t parallel;        /* slots / sequences */
    const char *cache_type_k; /* f16, q8_0, ... */
    const char *cache_type_v;
    const char *flash_attn;        /* on | off | auto */
    uint64_t batch;                /* -b */
    uint64_t ubatch;               /* -ub */
    int swa_full;                  /* -1 unset, 0, 1 */
    int kv_unified;                /* -1 unset, 0 (--no-kv-unified), 1 (-kvu) */
    int64_t n_gpu_layers;          /* -1 unset; INT64_MAX = all */
    const char *mmproj;            /* vision projector */
    const char *draft;             /* speculative draft model */
    int threads;                   /* 0: engine default */
    const char *const *extra_args; /* verbatim, after the rendered ones */
    size_t n_extra_args;
    const char *const *env; /* NAME=VALUE literals for the engine's environment */
    size_t n_env;
    const char *api_key; /* a secret VALUE: rendered into the environment, never argv */
    int verbosity;       /* -1: what the adapter needs to read its boot report */
    void *priv;          /* storage of sw_engine_launch_from_fleet; NULL otherwise */
};

struct sw_fleet_endpoint;
/*
 * A fleet endpoint as a launch on the local host: the model is payload.gguf (relative to
 * payload.path) or payload.path itself, "~/" is expanded with $HOME, mmproj and draft resolve the
 * same way (an mmproj set to nothing stays off), the listen address defaults to 127.0.0.1:8080,
 * every shape field that is set becomes its flag, args/env are passed on, and secrets are read
 * from their reference (an environment variable of slipway, or a file) into api_key / env.
 * Fails naming the fleet position (file:line:col) of what cannot be used. l->binary is the
 * endpoint's binary or NULL. Free with sw_engine_launch_free.
 */
int sw_engine_launch_from_fleet(const struct sw_fleet_endpoint *ep, struct sw_engine_launch *l,
                                struct sw_err *e);

void sw_engine_launch_free(struct sw_engine_launch *l);

/* argv and envp (both NULL-terminated, owned). env holds only what the adapter adds; the caller
 * merges it over the environment it starts the child with. */
struct sw_engine_cmd {
    char **argv;
    size_t argc;
    char **env; /* "NAME=VALUE" */
    size_t envc;
};
void sw_engine_cmd_free(struct sw_engine_cmd *c);
/* argv as one shell-quoted line for people (secrets never appear: they are not in argv). */
int sw_engine_cmd_format(const struct sw_engine_cmd *c, struct sw_buf *out);

/* ---------------------------------------------------------------------------------------------
 * HTTP error shape and metrics.
 */
struct sw_engine_error {
    int status;    /* HTTP status */
    char type[64]; /* engine error type: "exceed_context_size_error", "BadRequestError" */
    char message[512];
    int64_t n_prompt_tokens; /* -1 when absent */
    int64_t n_ctx;           /* -1 when absent */
};

struct sw_engine_metric {
    const char *name; /* exact name on /metrics */
    const char *kind; /* counter | gauge */
    const char *what;
};

/* ---------------------------------------------------------------------------------------------
 * The adapter table.
 */
struct sw_engine {
    const char *name;           /* canonical: "llama.cpp" */
    const char *const *aliases; /* NULL-terminated other spellings */
    const char *default_binary; /* "llama-server" */

    /* argv + env for a fleet endpoint: the engine's one builder (llama.cpp:
     * sw_engine_launch_from_fleet + sw_engine_llamacpp_render; vLLM: sw_vllm_render_endpoint;
     * SGLang: sw_sglang_render_endpoint). Errors name the fleet position or the field. */
    int (*render)(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out, struct sw_err *e);

    /*
     * Read a boot log (text of len bytes; `where` names it in errors). *out receives
     *   {"engine", "booted", "phase", "report", "precision", "failure"}
     * where report is the same object `slipway plan --json` prints, failure is null or
     * {class, phase, payload_kind, message, line}, and precision gives, per byte field of the
     * report, the largest difference (in bytes) the printed rounding allows.
     * st (may be NULL) receives the status. hints may be NULL.
     */
    int (*bootlog)(const char *text, size_t len, const char *where,
                   const struct sw_bootlog_hints *hints, json_t **out, struct sw_boot_status *st,
                   struct sw_err *e);

    /*
     * Predicted vs printed reports, field by field. `precision` (may be NULL) is the printed
     * side's precision object. *out: {"match": bool, "fields": [{field, predicted, printed,
     * delta, tolerance, verdict, note}], "mismatches": n}. verdict is match | mismatch |
     * missing (predicted, not printed) | unexpected (printed, not predicted) | estimate
     * (reported, never a mismatch).
     */
    int (*diff)(const json_t *predicted, const json_t *printed, const json_t *precision,
                json_t **out, struct sw_err *e);

    /* Read an HTTP error body in the engine's shape. SW_EPARSE if it is not one. */
    int (*error_shape)(int status, const char *body, size_t len, struct sw_engine_error *out);

    const char *health_path;   /* "/health" */
    int health_loading_status; /* what it answers while loading (503) */
    const char *liveness_path; /* a real generation: "/v1/chat/completions" */
    const char *liveness_body; /* JSON asking for exactly one token */

    const struct sw_engine_metric *metrics;
    size_t n_metrics;
};

/* Find an adapter by name or alias (case-insensitive). NULL if none. */
const struct sw_engine *sw_engine_find(const char *name);
/* All registered adapters; *n receives the count. */
const struct sw_engine *const *sw_engine_list(size_t *n);

/* ---------------------------------------------------------------------------------------------
 * llama.cpp, typed. The table entry above wraps these.
 */
#define SW_BOOTLOG_MAX_KV 16

/* One `llama_kv_cache: size = ...` line. */
struct sw_bootlog_kv {
    int64_t cells, layers, seqs, streams; /* -1 when the build does not print it */
    char k_type[16], v_type[16];
    int64_t k_bytes, v_bytes; /* printed MiB x 2^20, rounded */
    int64_t k_prec, v_prec;   /* largest |true - k_bytes| the print allows */
    bool swa;                 /* announced by `creating SWA KV cache` */
    int line;
};

/* The numbers a llama-server boot prints; -1 (or has_recurrent false) when not printed. Byte
 * fields are the printed MiB times 2^20, rounded: a printed "4.00 MiB" stands for any size in
 * [3.995, 4.005) MiB, so each byte field has a *_prec: the largest difference from the true size
 * that the print allows (half the last printed digit, plus float rounding where llama.cpp prints
 * a float, times the number of lines summed into it). Only the first (main) context counts: a
 * draft model's context and buffers are ignored. */
struct sw_bootlog_report {
    int64_t n_ctx, n_ctx_seq, n_seq_max;
    int kv_unified; /* -1, 0, 1 */
    size_t n_kv;
    struct sw_bootlog_kv kv[SW_BOOTLOG_MAX_KV];
    bool has_recurrent;
    struct {
        int64_t cells, layers;
        int64_t r_bytes, s_bytes;
        int64_t r_prec, s_prec;
        int line;
    } recurrent;
    int64_t model_bytes, output_bytes, compute_bytes;
    int64_t model_prec, output_prec, compute_prec;
    unsigned model_lines, output_lines, compute_lines; /* printed lines summed into each */
};

/* Largest log read (a -lv 4 boot log is ~50 KiB; a day of request logs is larger: only the boot
 * matters, so callers may pass a prefix). */
#define SW_BOOTLOG_MAX (64u << 20)

/* The failure of a boot log's parse (a bootlog's *out and status), new reference: its classified
 * one; "unknown" at the phase it reached for a log that ends without the engine serving and
 * without an error (no success); NULL for a boot that served. */
json_t *sw_engine_boot_failure(const json_t *parsed, const struct sw_boot_status *st);
/* A JSON file holding the object itself or {"<key>": object} (a report as plan --json prints it,
 * a shape): new reference, or NULL with e set. */
json_t *sw_engine_json_inner(const char *path, const char *key, struct sw_err *e);

/* Parse a llama-server log. Never fails on content (unknown lines are skipped); SW_EINVAL only
 * for NULL text with len > 0. */
int sw_engine_llamacpp_bootlog(const char *text, size_t len, const struct sw_bootlog_hints *hints,
                               struct sw_bootlog_report *rep, struct sw_boot_status *st);
/* The report as plan prints it: {n_ctx, n_ctx_seq, n_seq_max, kv_unified, kv_caches,
 * recurrent, model_bytes, output_bytes, compute_bytes}; unprinted values are null. New ref. */
json_t *sw_engine_llamacpp_report_json(const struct sw_bootlog_report *r);
/* Per byte field, the rounding the print allows, in bytes. New ref. */
json_t *sw_engine_llamacpp_precision_json(const struct sw_bootlog_report *r);

/* Render llama-server's argv/env (also reachable as the table's render). */
int sw_engine_llamacpp_render(const struct sw_engine_launch *l, struct sw_engine_cmd *out,
                              struct sw_err *e);

/*
 * A llama-server command line the operator wrote, made verifiable: argv[0] replaced by exe (when
 * not NULL), the listen address made explicit with llama-server's defaults (127.0.0.1:8080), the
 * verbosity the boot report needs (unless one is given), and api_key (when set) passed as
 * LLAMA_API_KEY in the environment. A secret on the command line (--api-key, --api-key-file) is
 * refused (readable in /proc/PID/cmdline), as is a command line without -m. l receives model,
 * alias, host, port and api_key (pointing into argv, api_key, or static defaults). Free out with
 * sw_engine_cmd_free.
 */
int sw_engine_llamacpp_verbatim(int argc, const char *const *argv, const char *exe,
                                const char *api_key, struct sw_engine_cmd *out,
                                struct sw_engine_launch *l, struct sw_err *e);

/* The verbosity at which llama-server prints its memory lines: llama's INFO messages pass
 * common_log only at LOG_LEVEL_TRACE (4); see common/log.cpp common_log_get_verbosity. */
#define SW_ENGINE_LLAMACPP_VERBOSITY 4

/* The llama.cpp release the adapter's boot-log rules were captured from (scripts/llama-build.sh
 * pins and builds it). */
#define SW_ENGINE_LLAMACPP_PIN "80fb11ac73e66d89eae2c6a91d8a77428fa733ed"

struct sw_fleet_secret;
/* A fleet secret's value, read here: an environment variable of slipway, or the first line of a
 * file (`~/` expanded). *out is NULL for SW_FLEET_SECRET_NONE, else a new string (wipe and sw_free
 * it). An unset or empty variable, an unreadable or empty file: an error at the fleet's line:col,
 * prefixed with what ("api_key"). The one reader of secrets (engine env, probe, bench). */
int sw_engine_read_secret(const struct sw_fleet_secret *s, const char *what, char **out,
                          struct sw_err *e);

/* Where llama-server is on this machine: the first executable llama-server on $PATH, else the
 * pinned build scripts/llama-build.sh made ($SLIPWAY_CACHE or ~/.cache/slipway,
 * llama.cpp/<pin>/bin/llama-server). Writes the absolute path into out and returns out; *on_path
 * (may be NULL) says it came from $PATH. NULL when neither has one. */
const char *sw_engine_llamacpp_find_server(char *out, size_t n, bool *on_path);

#ifdef __cplusplus
}
#endif
#endif
