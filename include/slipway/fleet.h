/*
 * fleet: the declarative fleet file (fleet.yaml) as typed data.
 *
 * A fleet holds hosts (their transport and devices), engine profiles (declared constants of a
 * fork's memory law), endpoints (engine, payload, shape, movable and frozen knobs, the free-memory
 * band, what the operator already measured, known-bad rules, an inline architecture) and the
 * client harness (contextWindow, compaction). Endpoints may import values from the operator's
 * `KEY=VALUE` env files under the rule the operator's serve scripts follow (see
 * sw_fleet_envfile_parse and docs/fleet.md).
 *
 * Every value keeps where it came from (struct sw_fleet_at: a YAML line:col, an env-file line:col
 * or the caller's environment), so any later module can report `fleet.yaml:14:9: ...` about a
 * value it validates: sw_fleet_err_at(e, code, &ep->shape.seqs.at, "...").
 *
 * Loading is all-or-nothing: on any error nothing is returned. The loader keeps going after the
 * first mistake so one run reports all of them (each as file:line:col: what and why) through
 * sw_fleet_opts.on_error; struct sw_err receives the first.
 *
 * What it deliberately does not do: interpret an architecture (`arch` is kept as raw JSON for
 * model/arch), evaluate memory laws or profile terms (memory), decide whether a shape fits
 * (gates), render argv (engine), expand `~` or read payloads (those paths live on the endpoint's
 * host, not here), or read secrets (it keeps references to them, never values).
 *
 * Ownership: a struct sw_fleet owns every string, array and json_t it points to; all of it lives
 * until sw_fleet_free(). Strings of enumerated settings (kv dtypes, flash_attn, outcome...) point
 * to static storage, so a struct sw_fleet_shape may be copied by value and outlive nothing.
 */
#ifndef SLIPWAY_FLEET_H
#define SLIPWAY_FLEET_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;
struct sw_fleet_host;

/* ---------------------------------------------------------------------------------------------
 * Where a value came from. file is the fleet file's path as given to the loader, an env file's
 * path, or "environment variable NAME" for a value taken from the caller's environment (line/col
 * 0 then).
 * file == NULL: the value was never set (a default the consumer chooses).
 */
struct sw_fleet_at {
    const char *file;
    int line; /* 1-based, 0 unknown */
    int col;  /* 1-based, 0 unknown */
};

/* Set e to "file:line:col: <fmt>" at a value's position. Returns code. */
int sw_fleet_err_at(struct sw_err *e, int code, const struct sw_fleet_at *at, const char *fmt, ...)
    SW_PRINTF(4, 5);

/*
 * Optional typed values. `set` says the file (or an import) gave a value. `off` says it was given
 * as explicitly nothing: YAML `null`/`~`, or an env-file key declared as an opt-out set to an empty
 * value (MMPROJ_FILE= means text-only): a consumer must then not fall back to a default.
 */
struct sw_fleet_u64 {
    uint64_t v;
    bool set;
    bool off;
    struct sw_fleet_at at;
};
struct sw_fleet_f64 {
    double v;
    bool set;
    bool off;
    struct sw_fleet_at at;
};
struct sw_fleet_bool {
    bool v;
    bool set;
    bool off;
    struct sw_fleet_at at;
};
struct sw_fleet_str {
    const char *v; /* NULL when unset or off */
    bool off;
    struct sw_fleet_at at;
};

/* n_gpu_layers: "all" */
#define SW_FLEET_ALL UINT64_MAX

enum sw_fleet_engine {
    SW_FLEET_ENGINE_NONE = 0,
    SW_FLEET_LLAMACPP = 1, /* llama.cpp's llama-server */
    SW_FLEET_VLLM = 2,
    SW_FLEET_SGLANG = 3,
};
/* "llama.cpp", "vllm", "sglang" ("?" for NONE). */
const char *sw_fleet_engine_name(enum sw_fleet_engine e);

/* ---------------------------------------------------------------------------------------------
 * Hosts and devices.
 */
struct sw_fleet_device {
    const char *name; /* unique within its host */
    struct sw_fleet_at at;
    struct sw_fleet_str kind;          /* "R9700", "gfx1151", "cpu", free text */
    struct sw_fleet_str vendor;        /* amd | nvidia | intel | apple | cpu */
    struct sw_fleet_u64 index;         /* ordinal the engine sees (per vendor: CUDA and ROCm count
                                      separately); default: position in the host */
    struct sw_fleet_u64 memory_total;  /* bytes */
    struct sw_fleet_u64 memory_usable; /* bytes an engine can allocate; <= total */
    struct sw_fleet_u64 bandwidth;     /* bytes per second */
    struct sw_fleet_bool unified_memory;
    struct sw_fleet_str note;
    const struct sw_fleet_host *host;
};

enum sw_fleet_transport { SW_FLEET_LOCAL = 1, SW_FLEET_SSH = 2 };

struct sw_fleet_host {
    const char *name;
    struct sw_fleet_at at;
    enum sw_fleet_transport transport;
    struct sw_fleet_at transport_at;
    struct sw_fleet_str address;       /* ssh */
    struct sw_fleet_u64 port;          /* ssh, default 22 (unset) */
    struct sw_fleet_str user;          /* ssh */
    struct sw_fleet_str identity_file; /* ssh: a path, never key material */
    struct sw_fleet_str known_hosts;   /* ssh */
    struct sw_fleet_device *devices;
    size_t n_devices;
    struct sw_fleet_str note;
};

/* ---------------------------------------------------------------------------------------------
 * Quantities with units: profile constants and measured facts. value is in base units: bytes for
 * any byte unit ("7.60GiB" -> 8160437862.4, unit "B"), and a denominator keeps its word with its
 * count folded in ("0.22GiB/1024 tokens" -> 230686.72, unit "B/token"; "9190 B/token" -> 9190).
 * Token spellings (tok, tokens, t) become "token", seconds "s". A bare number has unit "".
 */
struct sw_fleet_qty {
    double value;
    const char *unit; /* canonical unit, "" for none */
    const char *text; /* as written */
};
/* Parse a quantity; errors say what was wrong (no position: the caller adds it). */
int sw_fleet_parse_qty(const char *s, double *value, char *unit, size_t unitn, struct sw_err *e);

/* A named constant of an engine profile. */
struct sw_fleet_const {
    const char *name;
    struct sw_fleet_qty q;
    const char *note;
    struct sw_fleet_at at;
};

/*
 * An engine profile: a fork's law declared as data. `base` is the known law it extends; the
 * constants are named (kv_reserve_per_token, overhead_default, slot_size, ...) and interpreted by
 * memory/; `terms` is an optional raw JSON subtree for memory/ too. slipway only stores them.
 */
/* An engine patch the operator keeps against a file of the pinned image (payload/patch.c verifies
 * it): `patch -p1` applied to the base file must reproduce patched_sha256. Paths as written; the
 * gate reads `patch` and `base` relative to the fleet file's directory. */
struct sw_fleet_patch {
    const char *file;           /* the file inside the image tree -p1 strips to */
    const char *patch;          /* the patch file */
    const char *base;           /* the pinned image's copy of `file` on this machine, or NULL */
    const char *base_sha256;    /* 64 hex */
    const char *patched_sha256; /* 64 hex */
    struct sw_fleet_at at;
};

/* A tensor type a fork build reads that the pinned ggml does not (a profile's gguf_types); the
 * GGUF reader takes it as struct sw_ggml_type (slipway/gguf.h). */
struct sw_fleet_gguf_type {
    uint32_t id;
    const char *name;
    uint32_t block_size; /* elements per block, >= 1 */
    uint32_t type_size;  /* bytes per block, >= 1 */
    struct sw_fleet_at at;
};

struct sw_fleet_profile {
    const char *name;
    struct sw_fleet_at at;
    struct sw_fleet_gguf_type *gguf_types; /* gguf_types: [{id, name, block_size, type_size}] */
    size_t n_gguf_types;
    enum sw_fleet_engine base;
    struct sw_fleet_const *consts;
    size_t n_consts;
    json_t *terms; /* NULL when absent; borrowed from the fleet */
    struct sw_fleet_str note;
};
const struct sw_fleet_const *sw_fleet_profile_const(const struct sw_fleet_profile *p,
                                                    const char *name);

/* ---------------------------------------------------------------------------------------------
 * The shape: the settings that change memory and throughput. One vocabulary for every engine;
 * a setting that does not apply to the endpoint's engine is an error at load (a silently ignored
 * key is how a unit file lies). Canonical names (with accepted aliases) are listed by
 * sw_fleet_shape_fields(); the `.name` strings are what knobs and known-bad rules use.
 */
struct sw_fleet_shape {
    struct sw_fleet_u64 ctx_size;       /* llama.cpp -c: KV cells across all slots */
    struct sw_fleet_u64 max_model_len;  /* vLLM --max-model-len, SGLang --context-length:
                                            tokens per request */
    struct sw_fleet_u64 seqs;           /* -np / --max-num-seqs / --max-running-requests */
    struct sw_fleet_str kv_cache_dtype; /* vLLM/SGLang: auto fp8 fp8_e4m3 fp8_e5m2 bf16 ... */
    struct sw_fleet_str cache_type_k; /* llama.cpp: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl */
    struct sw_fleet_str cache_type_v;
    struct sw_fleet_u64 kv_cache_bytes;   /* vLLM --kv-cache-memory-bytes (per rank), exact bytes */
    struct sw_fleet_u64 max_total_tokens; /* SGLang --max-total-tokens (pinned pool) */
    struct sw_fleet_u64 max_num_batched_tokens;  /* vLLM */
    struct sw_fleet_u64 batch_size;              /* llama.cpp -b */
    struct sw_fleet_u64 ubatch_size;             /* llama.cpp -ub */
    struct sw_fleet_str flash_attn;              /* llama.cpp: on | off | auto */
    struct sw_fleet_bool swa_full;               /* llama.cpp --swa-full */
    struct sw_fleet_bool kv_unified;             /* llama.cpp -kvu */
    struct sw_fleet_u64 n_gpu_layers;            /* llama.cpp -ngl; SW_FLEET_ALL for "all" */
    struct sw_fleet_f64 gpu_memory_utilization;  /* vLLM, (0, 1] */
    struct sw_fleet_f64 mem_fraction_static;     /* SGLang, (0, 1] */
    struct sw_fleet_u64 tensor_parallel;         /* vLLM/SGLang */
    struct sw_fleet_u64 pipeline_parallel;       /* vLLM/SGLang */
    struct sw_fleet_u64 decode_context_parallel; /* vLLM DCP */
    struct sw_fleet_u64 block_size;              /* vLLM --block-size */
    struct sw_fleet_bool prefix_caching;         /* vLLM --enable-prefix-caching */
    struct sw_fleet_bool enforce_eager;          /* vLLM */
    struct sw_fleet_u64 max_mamba_cache_size;    /* SGLang: mamba state slots */
    struct sw_fleet_str spec_method; /* spec_decode.method: mtp, eagle, eagle3, draft, ngram... */
    struct sw_fleet_u64 spec_tokens; /* spec_decode.tokens: draft tokens per step */
    struct sw_fleet_u64 spec_draft_min; /* spec_decode.draft_min: llama.cpp --draft-min */
};

enum sw_fleet_vtype {
    SW_FLEET_V_COUNT,
    SW_FLEET_V_BYTES,
    SW_FLEET_V_REAL,
    SW_FLEET_V_BOOL,
    SW_FLEET_V_STR
};

/* A value of any shape field (or a knob/rule operand). */
struct sw_fleet_value {
    enum sw_fleet_vtype type;
    bool set;
    uint64_t u;    /* COUNT, BYTES */
    double f;      /* REAL */
    bool b;        /* BOOL */
    const char *s; /* STR (static or fleet-owned) */
    struct sw_fleet_at at;
};

/* Engine bit masks for sw_fleet_field.engines. */
#define SW_FLEET_ENG_BIT(e) (1u << (e))

/* Description of one shape field (introspection for knobs, tune, docs). */
struct sw_fleet_field {
    const char *name;       /* canonical: "seqs", "spec_decode.tokens" */
    const char *aliases[6]; /* accepted spellings: "parallel", "max_num_seqs"... NULL-ended */
    enum sw_fleet_vtype type;
    unsigned engines;           /* SW_FLEET_ENG_BIT mask of the engines it applies to */
    const char *const *choices; /* STR: allowed values, NULL-ended; NULL = free word */
    const char *doc;
    const char *instead; /* where the setting lives for engines it does not apply to */
};
/* All shape fields, in the order above; *n receives the count. */
const struct sw_fleet_field *sw_fleet_shape_fields(size_t *n);
/* Find a field by canonical name or alias (NULL when unknown). */
const struct sw_fleet_field *sw_fleet_shape_field(const char *name);

/* Read a field by name. SW_ENOENT for an unknown name; out->set false when unset. */
int sw_fleet_shape_get(const struct sw_fleet_shape *s, const char *field,
                       struct sw_fleet_value *out);
/* A value as `slipway fleet show` writes it for people (fleet/format.c): "200,704", "3,146,000,000
 * (2.93 GiB)", "all", "-" when not set; a u64 as the same ("off" when turned off; bytes: with the
 * binary units). Return out. */
const char *sw_fleet_value_text(const struct sw_fleet_value *v, char *out, size_t n);
const char *sw_fleet_u64_text(const struct sw_fleet_u64 *u, bool bytes, char *out, size_t n);
/* Set a field (tune: a candidate shape). Type must match; a STR must be one of the field's
 * choices (the stored pointer is then the static choice). The value's `at` is kept. */
int sw_fleet_shape_set(struct sw_fleet_shape *s, const char *field, const struct sw_fleet_value *v,
                       struct sw_err *e);
/* Copy every field set in `delta` over `dst`. */
void sw_fleet_shape_overlay(struct sw_fleet_shape *dst, const struct sw_fleet_shape *delta);

/* ---------------------------------------------------------------------------------------------
 * Endpoint parts.
 */
struct sw_fleet_mount {
    const char *host_path;
    const char *container_path;
    bool readonly;
    struct sw_fleet_at at;
};

enum sw_fleet_payload_source {
    SW_FLEET_PAYLOAD_NONE = 0,
    SW_FLEET_PAYLOAD_LOCAL = 1,
    SW_FLEET_PAYLOAD_HF = 2
};

/* Paths are paths on the endpoint's host (absolute or ~/...); gguf and mmproj may be relative to
 * `path`. */
struct sw_fleet_payload {
    enum sw_fleet_payload_source source; /* LOCAL when `path` is given without `repo` */
    struct sw_fleet_str path;            /* model directory or file on the host */
    struct sw_fleet_str repo;            /* Hugging Face "namespace/name" */
    struct sw_fleet_str revision;        /* commit (40 hex) or branch/tag */
    struct sw_fleet_str *files;          /* globs of the files that make the payload */
    size_t n_files;
    struct sw_fleet_u64 shards;       /* expected number of weight shards */
    struct sw_fleet_str gguf;         /* the GGUF file (llama.cpp) */
    struct sw_fleet_str mmproj;       /* vision projector GGUF; off = text-only */
    struct sw_fleet_str draft;        /* speculative-decoding draft model (path or repo) */
    struct sw_fleet_str quantization; /* declared: "fp8", "Q5_K_M" (informative, freezable) */
    struct sw_fleet_mount *mounts;    /* container mounts: host path -> container path */
    size_t n_mounts;
};

enum sw_fleet_secret_kind {
    SW_FLEET_SECRET_NONE = 0,
    SW_FLEET_SECRET_ENV = 1,
    SW_FLEET_SECRET_FILE = 2
};
/* A secret by reference only: the NAME of an environment variable, or a file path. */
struct sw_fleet_secret {
    enum sw_fleet_secret_kind kind;
    const char *ref;
    struct sw_fleet_at at;
};

/* One environment variable for the engine: a literal (not a secret) or a secret reference. */
struct sw_fleet_envvar {
    const char *name;
    const char *value; /* literal; NULL when secret.kind != NONE */
    struct sw_fleet_secret secret;
    struct sw_fleet_at at;
};

/*
 * A knob that may move. name: a shape field ("max_model_len", "spec_decode.tokens"), an
 * environment variable ("env.NAME") or an engine flag ("arg.--flag"). The domain is a range
 * (min..max with an optional step, typed like the field) or a set of values.
 */
struct sw_fleet_knob {
    const char *name;
    struct sw_fleet_at at;
    enum sw_fleet_vtype type;
    bool is_range;
    struct sw_fleet_value min, max, step; /* range; step.set false when absent */
    struct sw_fleet_value *values;        /* set */
    size_t n_values;
};

/* A frozen setting: a shape field, "image", "binary", "engine", "profile", "payload",
 * "quantization", "env.NAME" or "arg.--flag". */
struct sw_fleet_frozen {
    const char *name;
    struct sw_fleet_at at;
};

/* The free-memory band per device after the boot (the operator's 2-3 GiB). */
struct sw_fleet_band {
    struct sw_fleet_u64 min;
    struct sw_fleet_u64 max;
    struct sw_fleet_at at;
};

/* Something the operator measured ("non_kv_cost: 7390MiB, 2026-10-01, from ..."). */
struct sw_fleet_fact {
    const char *name;
    struct sw_fleet_qty q;
    const char *date;                     /* as written, may be NULL */
    const char *source;                   /* how it was measured, may be NULL */
    const struct sw_fleet_device *device; /* may be NULL */
    struct sw_fleet_at at;
};

/* A boot the operator ran and what it showed. */
struct sw_fleet_boot {
    struct sw_fleet_at at;
    struct sw_fleet_shape shape; /* only the fields that differ from the endpoint's shape are
                                      set; sw_fleet_shape_overlay() onto a copy of it */
    struct sw_fleet_bool mmproj; /* projector loaded */
    const struct sw_fleet_device *device; /* the device `used`/`total` were read on, may be NULL */
    struct sw_fleet_u64 used;             /* bytes used on the device after the boot */
    struct sw_fleet_u64 total;
    struct sw_fleet_u64 free; /* bytes free as the tool printed it (may be < total - used:
                                      drivers reserve memory) */
    const char *outcome;      /* booted | serving | failed | rejected (static) */
    const char *failure;      /* failure class when failed (free word), may be NULL */
    const char *text;         /* the engine's own words, may be NULL */
    json_t *printed;          /* what the engine printed (raw object), may be NULL */
    const char *date;
    const char *note;
};

enum sw_fleet_op {
    SW_FLEET_EQ,
    SW_FLEET_NE,
    SW_FLEET_LT,
    SW_FLEET_LE,
    SW_FLEET_GT,
    SW_FLEET_GE,
    SW_FLEET_IN
};
const char *sw_fleet_op_name(enum sw_fleet_op op); /* "==", ..., "in" */

struct sw_fleet_cond {
    const struct sw_fleet_field *field;
    enum sw_fleet_op op;
    struct sw_fleet_value v;   /* operand (not IN) */
    struct sw_fleet_value *in; /* IN: the set */
    size_t n_in;
    struct sw_fleet_at at;
};

/* A known-bad rule: every condition holds -> the shape fails, as `text` taught. The conditions
 * are also compiled into the one rule language (core's sw_rule, the ledger's too): `expr` is what
 * sw_fleet_rule_matches evaluates, `expr_text` its text ("seqs == 2 && (tp == 1 || tp == 2)"). */
struct sw_fleet_rule {
    struct sw_fleet_cond *conds;
    size_t n_conds;
    const struct sw_rule *expr;
    const char *expr_text;
    const char *failure; /* class: compile_constraint, oom, ... (free word) */
    const char *text;    /* the failure text that taught it */
    const char *date;
    const char *note;
    struct sw_fleet_at at;
};
/* True when every condition holds for the shape (an unset field never matches): sw_rule_eval of
 * r->expr over the shape's fields. */
bool sw_fleet_rule_matches(const struct sw_fleet_rule *r, const struct sw_fleet_shape *s);
/* The rule vocabulary of a struct sw_fleet_shape (keys: shape field names and aliases). */
extern const struct sw_rule_vocab sw_fleet_rule_vocab;

/* One value an env-file import decided, with where it came from. */
struct sw_fleet_import {
    const char *key;   /* env key, "MAXLEN" */
    const char *field; /* fleet field, "shape.max_model_len" */
    const char *value; /* as found; "" for an opt-out */
    enum { SW_FLEET_FROM_ENVIRON = 1, SW_FLEET_FROM_FILE = 2, SW_FLEET_FROM_DEFAULT = 3 } from;
    struct sw_fleet_at at;
};

/* A parsed KEY=VALUE env file (values after quote removal and $NAME expansion). */
struct sw_fleet_envfile_var {
    const char *key;
    const char *value;
    bool exported;
    int line;
    int col; /* of the value */
};
struct sw_fleet_envfile {
    const char *path;
    struct sw_fleet_envfile_var *vars;
    size_t n_vars;
    void *priv; /* opaque */
};

/* How an endpoint's engine runs on its host (`runtime:`): the binary itself, or a container. */
enum sw_fleet_runtime_kind {
    SW_FLEET_RUNTIME_NATIVE = 1,
    SW_FLEET_RUNTIME_PODMAN = 2,
    SW_FLEET_RUNTIME_DOCKER = 3,
};
/* "native", "podman", "docker". */
const char *sw_fleet_runtime_name(enum sw_fleet_runtime_kind k);

/* `runtime:` as a word (`podman`) or a map. kind is always resolved after a load: the value
 * given, else podman when the endpoint has an image, else native (at.file NULL then). The other
 * fields are what the file gave (unset: the renderer's per-engine default). */
struct sw_fleet_runtime {
    enum sw_fleet_runtime_kind kind;
    struct sw_fleet_at at;
    struct sw_fleet_u64 shm_size;      /* container /dev/shm, bytes */
    struct sw_fleet_u64 stop_grace_ms; /* `podman stop -t`: whole seconds, in ms */
    struct sw_fleet_str *devices;      /* extra --device entries: a /dev path or a CDI name */
    size_t n_devices;
    struct sw_fleet_str *args; /* extra `podman run` arguments, verbatim, before the image */
    size_t n_args;
};

enum sw_fleet_scope { SW_FLEET_SCOPE_SYSTEM = 1, SW_FLEET_SCOPE_USER = 2 };

/* `service:`: the systemd unit that runs the endpoint. name and scope are always resolved
 * (default slipway-ENDPOINT, system); durations are milliseconds; unset values are the
 * renderer's per-engine defaults. */
struct sw_fleet_service {
    struct sw_fleet_at at;
    struct sw_fleet_str name; /* unit name without ".service" */
    enum sw_fleet_scope scope;
    struct sw_fleet_at scope_at;
    struct sw_fleet_u64 restart_sec_ms;
    struct sw_fleet_u64 stop_timeout_ms;
    struct sw_fleet_u64 start_limit_burst;
    struct sw_fleet_u64 start_limit_interval_ms; /* 0: never stop restarting */
    struct {
        int64_t v; /* -1000..1000 */
        bool set;
        struct sw_fleet_at at;
    } oom_score_adjust;
    struct sw_fleet_str user;       /* User= (system scope only) */
    struct sw_fleet_u64 memory_max; /* MemoryMax= in bytes (>= 1 MiB); unset: no limit. Native
                                     * units only: a container's processes live in podman's own
                                     * cgroup, which the unit's limit does not reach */
};

/*
 * A verdict the operator accepts on purpose (`waive:`, per endpoint): a failing gate of this name
 * on this endpoint is "waived", with the reason and until when. `rule` narrows a known_bad waiver
 * to one ledger rule (its id, `slipway ledger rule`); 0 = every failure of the gate. The gate
 * decides (gate.h sw_gate_waiver): an expired waiver, or one that matches no failure, is an error.
 */
struct sw_fleet_waiver {
    const char *gate;   /* one of sw_fleet_gate_names */
    const char *reason; /* required, free text */
    const char *until;  /* required, YYYY-MM-DD (the last day it holds) */
    uint64_t rule;      /* known_bad: a ledger rule id; 0 = any */
    struct sw_fleet_at at;
};
/* The names of the gates (gate.h) a waiver may name, NULL-terminated. The gate module's own list
 * is checked against it by tests/unit/test_waive.c. */
extern const char *const sw_fleet_gate_names[];

/*
 * The contract the pool is judged by (`contract:`): full_length requests of max_model_len that
 * must fit in the pool at once (1 <= full_length <= seqs). Unset: every slot at full length
 * (seqs x max_model_len), the assumption an operator whose slots buy headroom rather than
 * throughput states away ("a capacity contract, not a throughput one").
 */
struct sw_fleet_contract {
    struct sw_fleet_u64 full_length;
    struct sw_fleet_at at;
};

/* serve: how `slipway serve` admits and evicts the endpoint (docs/serve.md). All optional. */
struct sw_fleet_serve {
    struct sw_fleet_at at;
    const char *policy;              /* "lru" | "priority" (static); NULL: lru */
    struct sw_fleet_u64 idle_ttl_ms; /* stopped after this long with no request; unset: never */
    struct sw_fleet_bool pinned;     /* never evicted */
    struct sw_fleet_u64 priority;    /* 0..1000: under "priority", the lowest goes first */
};

struct sw_fleet_endpoint {
    const char *name;
    struct sw_fleet_at at;
    bool enabled; /* false: kept for the record (a retired shape); not deployed */
    const struct sw_fleet_host *host;
    struct sw_fleet_at host_at;
    const struct sw_fleet_device **devices; /* in the order given */
    struct sw_fleet_at *devices_at;
    size_t n_devices;
    enum sw_fleet_engine engine;
    struct sw_fleet_at engine_at;
    struct sw_fleet_str engine_version;
    const struct sw_fleet_profile *profile; /* NULL = the engine's plain law */
    struct sw_fleet_at profile_at;
    struct sw_fleet_str binary; /* engine binary path */
    struct sw_fleet_str image;  /* container image */
    bool image_pinned;          /* image is name@sha256:<64 hex> */
    struct sw_fleet_runtime runtime;
    struct sw_fleet_service service;
    struct sw_fleet_str listen_address;
    struct sw_fleet_u64 listen_port;
    struct sw_fleet_str listen_route; /* "direct" | "host"; NULL: by the address (sw_fleet_addr) */
    struct sw_fleet_str alias;        /* served model name */
    struct sw_fleet_secret api_key;
    struct sw_fleet_payload payload;
    struct sw_fleet_shape shape;
    struct sw_fleet_str *args; /* extra engine arguments, verbatim, after the rendered ones */
    size_t n_args;
    struct sw_fleet_envvar *env;
    size_t n_env;
    struct sw_fleet_knob *knobs;
    size_t n_knobs;
    struct sw_fleet_frozen *frozen;
    size_t n_frozen;
    struct sw_fleet_band free_band; /* min.set false when absent */
    struct sw_fleet_fact *facts;
    size_t n_facts;
    struct sw_fleet_boot *boots;
    size_t n_boots;
    struct sw_fleet_rule *known_bad;
    size_t n_known_bad;
    struct sw_fleet_patch *patches; /* engine patches to the pinned image's files */
    size_t n_patches;
    json_t *arch; /* inline architecture (config.json-like object) or NULL; borrowed */
    struct sw_fleet_at arch_at;
    /* the draft model's architecture (payload.draft: a llama.cpp -md GGUF, e.g. an MTP head)
     * when its file is not on this machine; the same forms as `arch`; NULL when absent */
    json_t *draft_arch;
    struct sw_fleet_at draft_arch_at;
    const struct sw_fleet_envfile *env_file; /* NULL when none */
    struct sw_fleet_import *imports;
    size_t n_imports;
    struct sw_fleet_str note;
    /* nodes: the endpoint spans this many machines (vLLM over Ray; rendered for Kubernetes as a
     * LeaderWorkerSet). `devices` are ONE node's GPUs, every node alike, so tensor x pipeline
     * parallel = n_devices x nodes. Unset = 1. */
    struct sw_fleet_u64 nodes;
    struct sw_fleet_waiver *waivers; /* `waive:` (gate.h applies them) */
    size_t n_waivers;
    struct sw_fleet_contract contract; /* full_length.set false: seqs x max_model_len */
    /* watch: the supervisor's policy for this endpoint ({interval, restart: {max, window},
     * rollback_after}), kept as written; src/watch checks it and says where. NULL when absent. */
    json_t *watch;
    struct sw_fleet_at watch_at;
    struct sw_fleet_serve serve; /* serve: {policy, idle_ttl, pinned, priority} */
};
/* ---------------------------------------------------------------------------------------------
 * Where an endpoint answers: the ONE address every verb uses (render's --host/--port, install,
 * status, deploy's proofs, probe, bench, ladder and tune), so that defaults cannot drift apart.
 *
 * The route rule: a local host's endpoint is reached directly. On an ssh host, an endpoint bound
 * to a loopback address (127.0.0.0/8, ::1, localhost) answers only on that host, so it is reached
 * THROUGH the host (a forward over its ssh connection, host/route); one bound to every address
 * (0.0.0.0, ::) is reached at the host's ssh address; one bound to another address is reached at
 * that address. `listen.route: host` forces the way through the host for an address this machine
 * cannot reach (a container bridge, a private interface); `listen.route: direct` forces the
 * direct way (a loopback address this machine shares with the host, as on a tunnel).
 */
enum sw_fleet_route {
    SW_FLEET_ROUTE_DIRECT = 1, /* this machine connects to connect:port */
    SW_FLEET_ROUTE_HOST = 2,   /* only the host reaches connect:port: through its ssh */
};
/* "direct", "host". */
const char *sw_fleet_route_name(enum sw_fleet_route r);

struct sw_fleet_addr {
    char bind[256];    /* what the engine binds: listen.address, else the engine's default
                        * (127.0.0.1; vLLM and SGLang in a container: 0.0.0.0) */
    unsigned port;     /* listen.port, else the engine's default (sw_fleet_engine_default_port) */
    bool port_default; /* port is the engine's default */
    char connect[256]; /* the address a client connects to, as seen from this machine (DIRECT)
                        * or from the host (HOST); without brackets */
    enum sw_fleet_route route;
    char url[300];   /* http://connect:port (IPv6 in brackets), no trailing slash */
    const char *why; /* the rule that chose the route, in words (static) */
};
/* The engine's own default port: llama.cpp 8080, vLLM 8000, SGLang 30000 (0 for none). */
unsigned sw_fleet_engine_default_port(enum sw_fleet_engine e);
/* ep's address. SW_EINVAL (naming the fleet position) for an ssh host without an address or an
 * address too long; a filled *a otherwise. */
int sw_fleet_endpoint_addr(const struct sw_fleet_endpoint *ep, struct sw_fleet_addr *a,
                           struct sw_err *e);
/* Is text a loopback address (127.0.0.0/8, ::1, ::ffff:127.x, "localhost"), a wildcard
 * (0.0.0.0, ::, "", "*")? */
bool sw_fleet_addr_is_loopback(const char *text);
bool sw_fleet_addr_is_wildcard(const char *text);

/* The node count of an endpoint: its `nodes:` or 1. */
uint64_t sw_fleet_endpoint_nodes(const struct sw_fleet_endpoint *ep);
const struct sw_fleet_fact *sw_fleet_endpoint_fact(const struct sw_fleet_endpoint *ep,
                                                   const char *name);
/* What a device holds in all, as a usage reading's "used / total" counts it: memory_total, else
 * memory_usable; 0 when neither is declared. Free-memory bands are taken against it. */
uint64_t sw_fleet_device_capacity(const struct sw_fleet_device *d);
/* The non-KV cost (weights + compute + projector) the operator measured for this endpoint: the
 * fact non_kv_cost_with_projector when a projector is set, else non_kv_cost; NULL when absent. */
const struct sw_fleet_fact *sw_fleet_endpoint_non_kv(const struct sw_fleet_endpoint *ep);
/* Is a name (shape field, "image", "env.X", ...) frozen / movable on this endpoint? */
const struct sw_fleet_frozen *sw_fleet_endpoint_frozen(const struct sw_fleet_endpoint *ep,
                                                       const char *name);
const struct sw_fleet_knob *sw_fleet_endpoint_knob(const struct sw_fleet_endpoint *ep,
                                                   const char *name);

/* ---------------------------------------------------------------------------------------------
 * The client harness: the agent that talks to the endpoints.
 */
struct sw_fleet_client {
    const struct sw_fleet_endpoint *endpoint;
    struct sw_fleet_u64 context_window;
    struct sw_fleet_at at;
};
struct sw_fleet_harness {
    bool present;
    struct sw_fleet_at at;
    struct sw_fleet_u64 context_window;   /* the client's contextWindow (default for all) */
    struct sw_fleet_f64 compaction_ratio; /* compaction starts at ratio x contextWindow */
    struct sw_fleet_u64 summary_budget;   /* tokens the compaction request reserves */
    const struct sw_fleet_endpoint *compaction_endpoint;
    struct sw_fleet_at compaction_endpoint_at;
    struct sw_fleet_client *clients; /* per-endpoint contextWindow overrides */
    size_t n_clients;
};
/* The contextWindow the client uses with this endpoint (override, else the default). */
const struct sw_fleet_u64 *sw_fleet_client_window(const struct sw_fleet *f,
                                                  const struct sw_fleet_endpoint *ep);
/* Every contextWindow the harness uses (its default, then each client override), each once, in
 * that order: at most max into out. Returns how many. */
size_t sw_fleet_harness_windows(const struct sw_fleet_harness *h, uint64_t *out, size_t max);

/* ---------------------------------------------------------------------------------------------
 * The fleet.
 */
struct sw_fleet_warning {
    struct sw_fleet_at at;
    const char *msg;
};

struct sw_fleet {
    const char *path; /* as given to the loader */
    struct sw_fleet_u64 version;
    struct sw_fleet_host *hosts;
    size_t n_hosts;
    struct sw_fleet_profile *profiles;
    size_t n_profiles;
    struct sw_fleet_endpoint *endpoints;
    size_t n_endpoints;
    struct sw_fleet_harness harness;
    struct sw_fleet_warning *warnings; /* advice that does not stop the load */
    size_t n_warnings;
    void *priv; /* opaque: storage, the position index */
    /* alert: [{exec: CMD} | {post: URL}] and schedule: [{name, endpoint, run, ...}], the
     * supervisor's (`slipway watch`), kept as written; src/watch checks them and says where.
     * NULL when absent. */
    json_t *alert;
    struct sw_fleet_at alert_at;
    json_t *schedule;
    struct sw_fleet_at schedule_at;
};

/* Read an environment variable of the caller: NULL when unset ("" when set empty). */
typedef const char *(*sw_fleet_getenv_fn)(void *ctx, const char *name);
/* Read a file the fleet refers to (env files). data must come from sw_malloc (caller frees). */
typedef int (*sw_fleet_read_fn)(void *ctx, const char *path, size_t max, char **data, size_t *len,
                                struct sw_err *e);

struct sw_fleet_opts {
    /* The caller's environment for env-file imports. NULL: getenv(3). Use sw_fleet_no_environ
     * to ignore the environment (tests, fuzzing). */
    sw_fleet_getenv_fn getenv;
    void *getenv_ctx;
    /* How env files are read. NULL: sw_read_file. */
    sw_fleet_read_fn read;
    void *read_ctx;
    /* Called for every error (in file order within a pass), up to max_errors. Warnings are not
     * errors: they are in fleet->warnings once the load succeeded. May be NULL. */
    void (*on_error)(void *ctx, const struct sw_err *e);
    void *on_error_ctx;
    int max_errors; /* stop reporting after this many (0: 50) */
};
/* An environment that has nothing set. */
const char *sw_fleet_no_environ(void *ctx, const char *name);

/* Largest fleet file and env file read. */
#define SW_FLEET_MAX_FILE    (4u << 20)
#define SW_FLEET_MAX_ENVFILE (1u << 20)

/*
 * Load a fleet file. On success *out is a new fleet (free with sw_fleet_free). On error *out is
 * NULL, e holds the first error (file:line:col) and opts->on_error saw all of them; the return is
 * that error's code (SW_EPARSE for mistakes in the file, SW_ENOENT/SW_EIO for unreadable files,
 * SW_ENOMEM). opts may be NULL.
 */
int sw_fleet_load(const char *path, const struct sw_fleet_opts *opts, struct sw_fleet **out,
                  struct sw_err *e);
/* The same from memory; `name` is used in positions. Relative env-file paths resolve against
 * the directory of `name`. */
int sw_fleet_load_mem(const char *name, const char *text, size_t len,
                      const struct sw_fleet_opts *opts, struct sw_fleet **out, struct sw_err *e);
void sw_fleet_free(struct sw_fleet *f);

/*
 * Any YAML document read with the fleet file's hardened reader (strict UTF-8, alias bombs and deep
 * nesting bounded, errors at line:col): for importers of other tools' configs. A node is a
 * scalar, a mapping or a sequence, with its line and column. The document owns every node; free
 * it with sw_fleet_ydoc_free.
 */
struct sw_fleet_ydoc;
struct sw_fleet_ynode;
enum sw_fleet_ykind { SW_FLEET_Y_SCALAR = 1, SW_FLEET_Y_MAP = 2, SW_FLEET_Y_SEQ = 3 };
int sw_fleet_yaml_read(const char *name, const char *text, size_t len, struct sw_fleet_ydoc **out,
                       struct sw_err *e);
void sw_fleet_ydoc_free(struct sw_fleet_ydoc *d);
const struct sw_fleet_ynode *sw_fleet_ydoc_root(const struct sw_fleet_ydoc *d);
/* 0 for NULL */
int sw_fleet_ynode_kind(const struct sw_fleet_ynode *n);
int sw_fleet_ynode_line(const struct sw_fleet_ynode *n);
/* A scalar's text (NULL for a mapping or sequence). */
const char *sw_fleet_ynode_str(const struct sw_fleet_ynode *n);
/* Pairs of a mapping, items of a sequence. */
size_t sw_fleet_ynode_len(const struct sw_fleet_ynode *n);
/* Item i of a sequence, or the value of pair i of a mapping (*key its key's text). */
const struct sw_fleet_ynode *sw_fleet_ynode_at(const struct sw_fleet_ynode *n, size_t i,
                                               const char **key);
/* The value of key in a mapping, NULL when absent. */
const struct sw_fleet_ynode *sw_fleet_ynode_get(const struct sw_fleet_ynode *n, const char *key);

/* Would the fleet refuse NAME=VALUE as a literal because it looks like a secret (a token-like
 * name or value, fleet/secret.c)? Either may be NULL. Importers use it to keep secrets out. */
bool sw_fleet_looks_secret(const char *name, const char *value);

const struct sw_fleet_host *sw_fleet_host(const struct sw_fleet *f, const char *name);
const struct sw_fleet_endpoint *sw_fleet_endpoint(const struct sw_fleet *f, const char *name);
/* The same for a name a person typed (fleet/find.c): 0 with *ep set, or SW_ENOENT with e saying
 * "FLEET: no endpoint 'NAME' (the fleet has: A, B)". */
int sw_fleet_find_endpoint(const struct sw_fleet *f, const char *name,
                           const struct sw_fleet_endpoint **ep, struct sw_err *e);
/* Does a command-line argument name a fleet file (it ends in .yaml or .yml) rather than an
 * endpoint? */
bool sw_fleet_is_file_name(const char *arg);
const struct sw_fleet_profile *sw_fleet_profile(const struct sw_fleet *f, const char *name);
const struct sw_fleet_device *sw_fleet_device(const struct sw_fleet_host *h, const char *name);

/*
 * Where a value is, by dotted path: "endpoints.frank-small.shape.seqs",
 * "hosts.dankserver.devices.gpu0.memory_total", "endpoints.x.known_bad[0].when". Aliases are
 * stored under their canonical name. A value imported from an env file points at that file.
 * Returns 0, or SW_ENOENT when the path names nothing the file said.
 */
int sw_fleet_pos(const struct sw_fleet *f, const char *path, struct sw_fleet_at *out);

/* The whole fleet as JSON (`slipway fleet show --json`). New reference or NULL (OOM). */
json_t *sw_fleet_to_json(const struct sw_fleet *f);
json_t *sw_fleet_shape_to_json(const struct sw_fleet_shape *s);

/* ---------------------------------------------------------------------------------------------
 * Env files: KEY=VALUE lines as the operator's serve scripts `source` them, parsed strictly:
 * `#` comments (whole line, or after whitespace), an optional `export ` prefix, values bare,
 * 'single-quoted' (literal) or "double-quoted" (\" \\ \$ \` escapes), and $NAME / ${NAME} /
 * ${NAME-word} / ${NAME:-word} expansion of names set earlier in the file or in the caller's
 * environment (the environment wins over the file, as it does for the import). Refused with their
 * position: $(...) and backticks (command substitution), $((...)), unknown ${...} forms, an
 * unset $NAME (the shell would silently expand it to nothing), spaces around '=', unquoted
 * whitespace or shell operators in a value, a key set twice, an unterminated quote.
 * getenv NULL: getenv(3).
 */
int sw_fleet_envfile_parse(const char *name, const char *text, size_t len,
                           sw_fleet_getenv_fn getenv, void *getenv_ctx,
                           struct sw_fleet_envfile **out, struct sw_err *e);
int sw_fleet_envfile_load(const char *path, sw_fleet_getenv_fn getenv, void *getenv_ctx,
                          struct sw_fleet_envfile **out, struct sw_err *e);
void sw_fleet_envfile_free(struct sw_fleet_envfile *ef);
const struct sw_fleet_envfile_var *sw_fleet_envfile_get(const struct sw_fleet_envfile *ef,
                                                        const char *key);

#ifdef __cplusplus
}
#endif
#endif
