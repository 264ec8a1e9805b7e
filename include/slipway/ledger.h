/*
 * slipway ledger: every boot, usage reading, battery run, bench run, ladder rung, note and
 * known-bad rule, kept in one SQLite file per fleet. It is the only thing that feeds back into the
 * plan: calibrate reads the boots of an endpoint (shape + printed figures), the gates read failed
 * shapes, known-bad rules and usage readings.
 *
 * Guarantees (docs/ledger.md has the schema and the reasons):
 *   - WAL journal, synchronous=FULL: a commit that returned is on disk; a process killed at any
 *     point (kill -9, OOM killer, power loss) loses nothing already committed and leaves no half
 *     record, because every record call is one transaction.
 *   - Several processes may record at once: writers take the lock up front (BEGIN IMMEDIATE) and
 *     wait on it (busy timeout), so SQLITE_BUSY does not surface under ordinary contention.
 *   - Versioned schema (PRAGMA user_version), each migration in its own transaction; a file newer
 *     than this code is refused and left untouched.
 *   - Every value reaches SQL through a bound parameter; JSON is validated before it is stored.
 *
 * What it deliberately does not do: parse boot logs (engine adapters do, and hand the result
 * here), fit laws (calibrate), decide whether a shape may boot (gates). It never deletes rows.
 */
#ifndef SLIPWAY_LEDGER_H
#define SLIPWAY_LEDGER_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The schema this code writes; sw_ledger_open migrates older files up to it. */
#define SW_LEDGER_SCHEMA_VERSION 8
/* The version of the shape canonicalization rules (stored beside every shape hash). */
#define SW_LEDGER_CANON_VERSION 1
/* Ceilings: a log excerpt is cut to this many bytes (head + tail kept); JSON documents larger
 * than the JSON ceiling are refused rather than stored. */
#define SW_LEDGER_EXCERPT_MAX (64u * 1024u)
#define SW_LEDGER_JSON_MAX    (4u * 1024u * 1024u)
/* A shape hash is 64 lowercase hex digits (SHA-256 of the canonical JSON). */
#define SW_LEDGER_HASH_LEN 64

struct sqlite3;
struct sqlite3_stmt;

#define SW__LEDGER_NSTMT 64

/*
 * An open ledger. Caller-allocated, set up by sw_ledger_open, released by sw_ledger_close.
 * Every field is opaque. One struct per thread; several processes may open the same file.
 * SQLite's busy handler points at the struct: do not copy or move it while it is open.
 */
struct sw_ledger {
    struct sqlite3 *db;
    char path[4096];
    int schema_version; /* the file's version after open (== SW_LEDGER_SCHEMA_VERSION) */
    bool readonly;
    bool immutable;         /* read through immutable=1: the directory is not the reader's */
    int busy_ms;            /* how long a writer waits for the lock */
    uint64_t busy_since_ns; /* when the current wait began */
    unsigned busy_seed;     /* jitter for the waits */
    struct sqlite3_stmt *stmt[SW__LEDGER_NSTMT];
};

struct sw_ledger_open_opts {
    bool create;         /* create the file (and its directory) when missing */
    bool readonly;       /* no writes; a file that needs migrating is an error */
    int busy_timeout_ms; /* 0 = 15000: how long a writer waits for another one */
    bool sync_normal;    /* synchronous=NORMAL instead of FULL (bench comparison only) */
};

/*
 * Open (and migrate) the ledger at `path`. opts may be NULL (= create, read-write).
 * Errors: SW_ENOENT (missing and !create), SW_EUNSUPPORTED (schema newer than this code, or not
 * a slipway ledger), SW_EDB (not a database, corrupt), SW_EBUSY, SW_EIO. On error `l` holds no
 * resources and sw_ledger_close(l) is still safe.
 */
int sw_ledger_open(struct sw_ledger *l, const char *path, const struct sw_ledger_open_opts *opts,
                   struct sw_err *e);
/* Finalize statements and close. Accepts a ledger that never opened or was already closed. */
void sw_ledger_close(struct sw_ledger *l);

/*
 * Where the ledger lives when --ledger is not given, in this order: $SLIPWAY_LEDGER; beside the
 * fleet file (`dir/fleet.yaml` -> `dir/fleet.ledger.sqlite`); $XDG_DATA_HOME/slipway/ledger.sqlite
 * (default ~/.local/share/slipway/ledger.sqlite). fleet_path may be NULL.
 */
int sw_ledger_default_path(const char *fleet_path, char *out, size_t n, struct sw_err *e);

/* Whether a missing ledger is an error for sw_ledger_open_for. */
enum sw_ledger_absent {
    SW_LEDGER_MUST_EXIST,            /* missing: SW_ENOENT (unless opts->create) */
    SW_LEDGER_DEFAULT_MAY_BE_ABSENT, /* missing where nobody named it (no explicit path, no
                                      * $SLIPWAY_LEDGER): not an error; one that was named must be */
    SW_LEDGER_MAY_BE_ABSENT,         /* missing anywhere: not an error */
};

/*
 * The ledger a command uses, opened: `explicit_path` when given (--ledger), else
 * sw_ledger_default_path(fleet_path). `path` (n bytes) receives the path either way. When the file
 * is missing and `absent` allows it, returns 0 with *opened false and `l` holding nothing; else
 * *opened is true exactly when 0 is returned. Errors as sw_ledger_open, and path resolution's.
 */
int sw_ledger_open_for(struct sw_ledger *l, const char *explicit_path, const char *fleet_path,
                       const struct sw_ledger_open_opts *opts, enum sw_ledger_absent absent,
                       bool *opened, char *path, size_t n, struct sw_err *e);

/* PRAGMA integrity_check + foreign_key_check. *ok false and the first problem in e when bad. */
int sw_ledger_verify(struct sw_ledger *l, bool *ok, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Shapes: everything that changes memory, canonicalized (docs/ledger.md, "Shape canonical form").
 */

/*
 * Canonicalize a shape description. *canonical receives the canonical object (new reference),
 * *text its canonical serialization (sorted keys, no whitespace; free with sw_free) and hash the
 * SHA-256 of that text as 64 hex digits + NUL. Any output pointer may be NULL.
 * Errors (SW_EINVAL) name the key: "shape.kv_bytes: \"6.1GiB\" is not a whole number of bytes".
 */
int sw_ledger_shape_canon(const json_t *shape, json_t **canonical, char **text,
                          char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e);

/* A short human summary of a canonical shape: "vllm ctx=262,144 slots=3 kv=fp8 kvb=6.1e9".
 * Writes into out; returns out. */
const char *sw_ledger_shape_summary(const json_t *canonical, char *out, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Known-bad rule expressions, e.g. `slots == 2`, `engine == vllm && kv_dtype == fp8 && ctx >
 * 241664`. Paths name canonical shape keys (aliases accepted: max_num_seqs -> slots);
 * `kv_dtype` is k's dtype when k and v agree, else "k/v". A comparison on a key the shape does
 * not have is false. Grammar in docs/ledger.md.
 */
struct sw_ledger_rule;
/* Parse; *out freed with sw_ledger_rule_free. Errors give the byte offset in the expression. */
int sw_ledger_rule_parse(const char *expr, struct sw_ledger_rule **out, struct sw_err *e);
/* Evaluate against a CANONICAL shape (from sw_ledger_shape_canon). */
bool sw_ledger_rule_eval(const struct sw_ledger_rule *r, const json_t *canonical);
void sw_ledger_rule_free(struct sw_ledger_rule *r);
/* Parse + canonicalize + evaluate in one call, for callers holding a raw shape. */
int sw_ledger_rule_match(const char *expr, const json_t *shape, bool *hit, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Recording. Each call is one transaction: it lands whole or not at all. Endpoints and shapes
 * are created on first use. Times are unix seconds; 0 means unknown. *id receives the new row id
 * (may be NULL).
 */

/* Get or create an endpoint by name ([A-Za-z0-9._:@/-], 1..128 bytes). */
int sw_ledger_endpoint_id(struct sw_ledger *l, const char *name, bool create, int64_t *id,
                          struct sw_err *e);
/* Get or create a shape; hash (may be NULL) receives its hash. */
int sw_ledger_record_shape(struct sw_ledger *l, const json_t *shape, int64_t *id,
                           char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e);
/* Look a shape up by full hash or a unique prefix of >= 6 hex digits. */
int sw_ledger_find_shape(struct sw_ledger *l, const char *hash_or_prefix, int64_t *id,
                         struct sw_err *e);

/*
 * One boot. outcome is derived: failed when `failure` is given. A boot that came up and died on
 * its first request is failed, with failure.phase "runtime", and keeps its printed report.
 *   failure: {class, phase?, payload_kind?, message?, line?, ...} as the boot-log parsers emit it.
 */
struct sw_ledger_boot {
    const char *endpoint;       /* required */
    const json_t *shape;        /* a shape description (canonicalized here); NULL = unknown */
    const char *engine;         /* required: "llama.cpp", "vllm", "sglang", ... */
    const char *engine_version; /* NULL = unknown */
    int64_t started_at;         /* wall clock, unix seconds; 0 = unknown */
    int64_t ended_at;           /* 0 = unknown / still running */
    int64_t duration_ms;        /* measured on the monotonic clock; < 0 = unknown */
    const json_t *predicted;    /* the plan's report (object) or NULL */
    const json_t *report;       /* what the engine printed, parsed (object) or NULL */
    const json_t *failure;      /* NULL = the boot is ok */
    const char *log_excerpt;    /* cut to SW_LEDGER_EXCERPT_MAX (head + tail), UTF-8 repaired */
    size_t log_len;             /* bytes of log_excerpt (0 with non-NULL = strlen) */
    const char *log_path;       /* where the whole log is, if kept */
    const char *source;         /* "slipway up", "bootlog record", "import", "by hand" */
    const char *source_line;    /* the line a hand-recorded figure was read from */
    const char *note;           /* attached as a note on the boot */
    const char *ext_id;         /* optional external key; a second record with it is SW_EEXIST */
};
int sw_ledger_record_boot(struct sw_ledger *l, const struct sw_ledger_boot *b, int64_t *id,
                          struct sw_err *e);

/* A device memory reading: used/total MiB as rocm-smi/nvidia-smi print them, or read by hand. */
struct sw_ledger_usage {
    const char *endpoint; /* required */
    int64_t boot_id;      /* 0 = not tied to a boot */
    const json_t *shape;  /* or a shape (when boot_id is 0); NULL = none */
    int64_t shape_id;     /* or a shape row already known; 0 = none */
    const char *device;   /* required: "cuda0", "R9700#1", "gfx1151" */
    uint64_t used_mib;
    uint64_t total_mib; /* > 0, >= used */
    bool has_free;      /* the tool's own free figure was read (nvidia-smi's free leaves out
                                driver-reserved memory, so used + free can be < total) */
    uint64_t free_mib;  /* with has_free; used + free <= total */
    const char *source; /* required: "nvidia-smi", "rocm-smi", "by hand", ... */
    int64_t taken_at;   /* 0 = now; < 0 = unknown (a reading transcribed from history) */
    const char *note;
    const char *source_line;
    const char *ext_id;
};
int sw_ledger_record_usage(struct sw_ledger *l, const struct sw_ledger_usage *u, int64_t *id,
                           struct sw_err *e);

/* A probe battery: `doc` is what `slipway probe --json` prints, {"checks": [{name, status
 * (pass|fail|skip), evidence, reason, ms}, ...]}; url may be NULL. */
int sw_ledger_record_battery(struct sw_ledger *l, const char *endpoint, int64_t boot_id,
                             const char *url, int64_t started_at, const json_t *doc, int64_t *id,
                             struct sw_err *e);

/* A bench run: parameters and results as JSON objects; chart_path may be NULL. */
int sw_ledger_record_bench(struct sw_ledger *l, const char *endpoint, int64_t boot_id,
                           int64_t started_at, const json_t *params, const json_t *results,
                           const char *chart_path, const char *source_line, int64_t *id,
                           struct sw_err *e);

/* One bench run by id: {id, endpoint, boot, started_at, params, results, chart_path,
 * source_line, ext_id, recorded_at, shape (the planned shape's summary, null when the run had
 * none)} (new reference). SW_ENOENT when there is no such run. */
int sw_ledger_bench_run(struct sw_ledger *l, int64_t id, json_t **out, struct sw_err *e);

/* The endpoint's latest bench run whose params.shape_hash is shape_hash (a run of a tag's shape):
 * its id in *id, or SW_ENOENT. */
int sw_ledger_bench_of_shape(struct sw_ledger *l, const char *endpoint, const char *shape_hash,
                             int64_t *id, struct sw_err *e);

/* A ladder rung: one shape tried by a ladder run named `ladder`; outcome pass|fail|refused. */
struct sw_ledger_rung {
    const char *endpoint;
    const char *ladder; /* the run's label, e.g. "night-2026-10-01" */
    int64_t rung;       /* order within the run, from 1 */
    const json_t *shape;
    int64_t boot_id; /* 0 = no boot (refused by a gate) */
    const char *outcome;
    const char *note;
    const char *source_line;
    const char *ext_id;
    /* schema 4: what the ladder moved and why (all optional) */
    const char *knob; /* "max_model_len", "ctx_size", "slots", "kv_cache_bytes" */
    bool has_value;
    int64_t value;          /* the knob's value on this rung */
    const char *klass;      /* "pass", "capture_oom", "kv_refused", "runtime_oom", ... */
    const json_t *evidence; /* object: prediction, bounds, the engine's figures */
};
int sw_ledger_record_rung(struct sw_ledger *l, const struct sw_ledger_rung *r, int64_t *id,
                          struct sw_err *e);
/* The rungs of one ladder run of an endpoint, in rung order: [{id, endpoint, ladder, rung,
 * shape_hash, shape, boot, outcome, note, source_line, ext_id, recorded_at, knob, value, class,
 * evidence}] (an empty array when there are none). New reference. */
int sw_ledger_rungs(struct sw_ledger *l, const char *endpoint, const char *ladder, json_t **out,
                    struct sw_err *e);

/* A known-bad rule: an expression (validated), why, the failure that taught it (object or
 * NULL), the boot that showed it (0 = none). endpoint NULL = any endpoint. */
struct sw_ledger_rule_rec {
    const char *endpoint;
    const char *expr;
    const char *reason; /* required */
    const json_t *failure;
    int64_t boot_id;
    const char *source; /* "operator", "bisection", "import" */
    const char *source_line;
    const char *ext_id;
};
int sw_ledger_record_rule(struct sw_ledger *l, const struct sw_ledger_rule_rec *r, int64_t *id,
                          struct sw_err *e);

/* What `slipway status --record` saw of an endpoint's systemd unit (src/ledger/unitobs.c). The
 * texts are systemctl's (ActiveState, SubState, Result, ActiveEnterTimestamp), bounded; a
 * control character is refused. */
struct sw_ledger_unit_obs {
    const char *endpoint; /* created in the ledger when new */
    const char *host;
    const char *unit;
    const char *active; /* required */
    const char *sub;    /* may be NULL */
    const char *result; /* may be NULL */
    uint64_t n_restarts;
    int64_t main_pid;    /* < 0: unknown */
    const char *since;   /* may be NULL */
    int64_t observed_ms; /* unix ms; 0 = now */
};
int sw_ledger_record_unit_obs(struct sw_ledger *l, const struct sw_ledger_unit_obs *o, int64_t *id,
                              struct sw_err *e);
/* Observations, newest first (limit 0 = all; endpoint NULL = all) as a new array of {id,
 * endpoint, host, unit, active, sub, result, n_restarts, main_pid, since, observed,
 * observed_ms}. */
int sw_ledger_unit_obs_list(struct sw_ledger *l, const char *endpoint, int64_t limit, json_t **out,
                            struct sw_err *e);

/* What `slipway watch` saw and did (src/ledger/watch.c): kind "observation" (a change of the
 * endpoint's state), "action" (restart, rollback, or a refusal to act), "alert", "job" (a
 * scheduled job). action_key, when given, is UNIQUE across the ledger: recording a key already
 * there returns SW_EEXIST and records nothing (an action is taken once, whoever restarts). */
struct sw_ledger_watch_event {
    const char *endpoint;   /* created in the ledger when new */
    const char *kind;       /* required */
    const char *state;      /* required: the classified state ("serving", "dead_generation"...) */
    const char *action;     /* may be NULL */
    const char *action_key; /* may be NULL */
    const char *outcome;    /* may be NULL */
    json_t *evidence;       /* may be NULL; borrowed */
    int64_t observed_ms;    /* unix ms; 0 = now */
};
int sw_ledger_record_watch(struct sw_ledger *l, const struct sw_ledger_watch_event *ev, int64_t *id,
                           struct sw_err *e);
/* Events, newest first (limit 0 = all; endpoint, kind NULL = all) as a new array of {id,
 * endpoint, kind, state, action, action_key, outcome, observed, observed_ms, evidence}. */
int sw_ledger_watch_list(struct sw_ledger *l, const char *endpoint, const char *kind, int64_t limit,
                         json_t **out, struct sw_err *e);
/* Is action_key recorded? *found set; 0 or the error. */
int sw_ledger_watch_has_key(struct sw_ledger *l, const char *action_key, bool *found,
                            struct sw_err *e);

/* A note on anything: kind is one of endpoint, shape, boot, usage, battery, bench, rung, rule,
 * ledger (subject_id 0). The subject must exist. */
int sw_ledger_record_note(struct sw_ledger *l, const char *kind, int64_t subject_id,
                          const char *text, const char *author, int64_t *id, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Queries. Every result is a new JSON reference (json_decref it); times are ISO-8601 UTC strings.
 */
struct sw_ledger_query {
    const char *endpoint; /* NULL = every endpoint */
    const char *outcome;  /* "ok" | "failed" | NULL */
    int64_t shape_id;     /* 0 = any */
    int64_t limit;        /* 0 = no limit */
    bool newest_first;    /* default oldest first (id order) */
    bool full;            /* boots: include predicted, report, failure, excerpt, shape, usage,
                             notes (what calibrate wants); otherwise a summary row each */
};

/* Boots matching q (NULL = all), as an array. */
int sw_ledger_boots(struct sw_ledger *l, const struct sw_ledger_query *q, json_t **out,
                    struct sw_err *e);
/* One boot, full. SW_ENOENT when there is none. */
int sw_ledger_boot(struct sw_ledger *l, int64_t id, json_t **out, struct sw_err *e);
/* Usage readings (q->endpoint, q->shape_id, q->limit honoured), each with its shape. */
int sw_ledger_usage_list(struct sw_ledger *l, const struct sw_ledger_query *q, json_t **out,
                         struct sw_err *e);
/* What the gates refuse: {"shapes": [{hash, canonical, endpoint, failed, ok, failures: [...]}],
 * "rules": [{id, endpoint, expr, reason, failure, boot_id, ...}]} for one endpoint (rules with no
 * endpoint included) or all (NULL). */
int sw_ledger_known_bad(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e);
/* Everything (or one endpoint's rows), in the format sw_ledger_import reads back. */
int sw_ledger_export(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e);

/*
 * Record a document (an export, or a hand-written fixture such as tests/data/ledger/
 * seed-boots.json; format in docs/ledger.md) in ONE transaction: all of it or none. Rows refer to
 * each other by "ref" (or "id"); with a top-level "id", every row gets ext_id "<id>:<kind>:<ref>"
 * and rows already present are skipped, so importing twice records once.
 * Errors name the JSON path: "seed.json: boots[3].shape.kv_bytes: ...".
 */
struct sw_ledger_import_stats {
    int64_t added;                /* OUT */
    int64_t skipped;              /* OUT: already present (same ext_id) */
    struct sw_progress *progress; /* IN, may be NULL: its total is set and it advances per row */
};
int sw_ledger_import(struct sw_ledger *l, const json_t *doc, const char *where,
                     struct sw_ledger_import_stats *st, struct sw_err *e);

/* "21684MiB", "21,684 MiB", "24GiB" -> MiB. A unit is required (a bare number is refused: MiB
 * or bytes?) and the value must be a whole number of MiB. */
int sw_ledger_parse_mib(const char *s, uint64_t *mib, struct sw_err *e);

/* "2026-10-01T13:27:17Z", "2026-10-01" (UTC) or unix seconds -> unix seconds. */
int sw_ledger_parse_time(const char *s, int64_t *out, struct sw_err *e);

/* Row counts per table, {"boots": N, ...}. */
int sw_ledger_counts(struct sw_ledger *l, json_t **out, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * By hand (`slipway ledger`, src/ledger/hand.c): each call finds and opens the ledger a command
 * names (sw_ledger_open_for), does one thing, closes it and hands back the answer. A reading call
 * opens read-only; where it answers a missing file as an empty ledger it says so in at->missing.
 * A recording call creates the file. An answer (*out) is a new JSON reference: json_decref it.
 */
struct sw_ledger_at {
    const char *ledger; /* IN: --ledger PATH (wins), or NULL */
    const char *fleet;  /* IN: --fleet FLEET.yaml (the ledger beside it), or NULL */
    char path[4096];    /* OUT: the ledger's path */
    bool missing;       /* OUT: no file there (a reading answered as empty) */
    int schema_version; /* OUT: the file's schema version; 0 when missing */
};

/* {"ledger": path, "boots": [...]}: sw_ledger_boots of q; an endpoint the ledger does not know
 * is SW_ENOENT. */
int sw_ledger_at_list(struct sw_ledger_at *at, const struct sw_ledger_query *q, json_t **out,
                      struct sw_err *e);
/* One boot in full (sw_ledger_boot); a missing ledger is SW_ENOENT. */
int sw_ledger_at_show(struct sw_ledger_at *at, int64_t id, json_t **out, struct sw_err *e);
/* The export document (sw_ledger_export) in *out; with `file`, written there (atomically, mode
 * 0644, indented, reals at full precision) and *out NULL. A missing ledger is SW_ENOENT. */
int sw_ledger_at_export(struct sw_ledger_at *at, const char *endpoint, const char *file,
                        json_t **out, struct sw_err *e);
/* Import the document in `file` (64 MiB at most; read before the ledger is opened or created). */
int sw_ledger_at_import(struct sw_ledger_at *at, const char *file,
                        struct sw_ledger_import_stats *st, struct sw_err *e);
/* {"ledger": path, "usage": [...]}: sw_ledger_usage_list of q. */
int sw_ledger_at_usage(struct sw_ledger_at *at, const struct sw_ledger_query *q, json_t **out,
                       struct sw_err *e);
/* Record a reading; shape_hash (may be NULL) names its shape by hash or unique prefix (into
 * u->shape_id). *new_endpoint: the endpoint was not in the ledger (set before the record, so
 * even when it fails). */
int sw_ledger_at_add_usage(struct sw_ledger_at *at, struct sw_ledger_usage *u,
                           const char *shape_hash, int64_t *id, bool *new_endpoint,
                           struct sw_err *e);
/* What a note is on: a kind and its row's id, or an endpoint by name, or a shape by hash or
 * prefix; nothing: the ledger itself. kind and subject are OUT too, resolved. */
struct sw_ledger_note_on {
    const char *kind;     /* boot, usage, rule, rung, battery, bench; NULL: the others */
    int64_t subject;      /* that row's id */
    const char *endpoint; /* or a note on this endpoint */
    const char *shape;    /* or on this shape */
};
int sw_ledger_at_note(struct sw_ledger_at *at, struct sw_ledger_note_on *on, const char *text,
                      const char *author, int64_t *id, struct sw_err *e);
/* What the gates refuse (sw_ledger_known_bad); a missing ledger: {"shapes": [], "rules": []}. */
int sw_ledger_at_rules(struct sw_ledger_at *at, const char *endpoint, json_t **out,
                       struct sw_err *e);
/* Record a known-bad rule; with a boot and no failure, the boot's failure is the rule's. */
int sw_ledger_at_add_rule(struct sw_ledger_at *at, const struct sw_ledger_rule_rec *r, int64_t *id,
                          struct sw_err *e);
/* {"ledger": path, "exists", "schema_version", "ok" and "problem" (check: integrity_check +
 * foreign_key_check, the first problem when not ok), "rows" (sw_ledger_counts)}; a missing
 * ledger has neither ok nor rows. */
int sw_ledger_at_verify(struct sw_ledger_at *at, bool check, json_t **out, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Deploys and tags (docs/ledger.md, "Deploys, steps and tags"): what the rollout pipeline writes
 * as it goes and reads back to roll back. Every call is one transaction, so what returned is on
 * disk before the next step starts. Times here are unix MILLISECONDS (0 = now) unless named _at.
 *
 * Secrets: every text and JSON document below is stored with each value of the call's `secrets`
 * list (NULL-ended, may be NULL) replaced by "***" (sw_redact). A tag's env file additionally has
 * the value of every secret-named key (*TOKEN, *ACCESS_KEY, *API_KEY*, *APIKEY*, *SECRET*,
 * *PASSWORD*, *PASSWD*) replaced by "***": the ledger keeps the secret-free render only.
 */

/* The longest tag name: an endpoint (128) + "-YYYYMMDD-N". */
#define SW_LEDGER_TAG_MAX 160

/* A deploy attempt as it starts. */
struct sw_ledger_attempt {
    const char *endpoint; /* required */
    const json_t *shape;  /* required: the shape being deployed (canonicalized and hashed) */
    const char *from_tag; /* the endpoint's last-good tag when the attempt began, NULL = none */
    const char *note;     /* the operator's note, or NULL */
    int64_t started_ms;   /* 0 = now */
    const char *const *secrets;
};

/*
 * Open an attempt. First marks this endpoint's stale open attempts interrupted (their process is
 * gone: sw_ledger_deploy_recover), then refuses (SW_EBUSY, naming the attempt and its pid) while
 * another attempt of the endpoint is open: one deploy per endpoint at a time. The attempt records
 * its owner (host, kernel boot id, pid and the pid's start time). from_tag must be a tag of the
 * endpoint (SW_ENOENT). *id receives the attempt id.
 */
int sw_ledger_deploy_begin(struct sw_ledger *l, const struct sw_ledger_attempt *a, int64_t *id,
                           struct sw_err *e);

/*
 * A step of an open attempt, written when it starts (begin) and when it ends (end), each its own
 * transaction: a process killed mid-step leaves that step open, and recovery closes it as
 * `interrupted`. step: a lowercase word (plan, gate, render, stage, stop, start, follow, ready,
 * live, battery, readings, commit, rollback, ...); steps are numbered 1.. in order.
 * outcome: ok | failed | skipped. detail: any JSON (what the step wrote, measured, saw) or NULL.
 */
int sw_ledger_deploy_step_begin(struct sw_ledger *l, int64_t attempt, const char *step,
                                int64_t *step_id, struct sw_err *e);
int sw_ledger_deploy_step_end(struct sw_ledger *l, int64_t step_id, const char *outcome,
                              const json_t *detail, const char *const *secrets, struct sw_err *e);

/*
 * A step recorded whole (started and ended now, one transaction) on an attempt, open OR finished:
 * what a caller that drives an attempt from outside measured around it (serve: its queue while a
 * gated rollout ran the attempt, known only once the rollout finished it). Numbered after the
 * attempt's other steps; outcome and detail as sw_ledger_deploy_step_end. SW_ENOENT: no such
 * attempt.
 */
int sw_ledger_deploy_step_record(struct sw_ledger *l, int64_t attempt, const char *step,
                                 const char *outcome, const json_t *detail,
                                 const char *const *secrets, struct sw_err *e);

/* How an attempt that did not commit ended. */
struct sw_ledger_attempt_end {
    const char *outcome;       /* rolled_back | rollback_failed | gate_refused | interrupted */
    const char *failure_class; /* lowercase word: oom, crash_loop, dead_generation, worst_case,
                                  ssh_dropped, disk_full, known_bad, ...; NULL = the outcome */
    const json_t *evidence;    /* object or NULL: {journal (excerpt), boot_failure (the classified
                                  failure), probe_check (the failing check), ...} */
    int64_t downtime_ms;       /* how long the endpoint did not serve; < 0 = unknown */
    const char *note;          /* NULL keeps the attempt's note */
    bool not_the_shape;        /* the failure is not the shape's (ssh dropped, disk full): no
                                  known-bad rule */
    int64_t ended_ms;          /* 0 = now */
    const char *const *secrets;
};

/*
 * Finish an open attempt that did not commit (a committed one is finished by sw_ledger_tag_commit,
 * which records the tag in the same transaction; "committed" here is SW_EINVAL). A rolled_back or
 * rollback_failed attempt teaches, unless not_the_shape: in the same transaction it adds a
 * known-bad rule for the endpoint matching its exact shape (every scalar of the canonical form
 * joined by &&, source "deploy", failure {class, phase: "deploy", message, attempt}; the
 * attempt's rule_id points at it), so `slipway check`'s known_bad gate refuses that shape next time.
 * *rule_id (may be NULL) receives the rule's id, 0 when none was added. SW_ENOENT: no such
 * attempt; SW_EINVAL: already finished.
 */
int sw_ledger_deploy_finish(struct sw_ledger *l, int64_t attempt,
                            const struct sw_ledger_attempt_end *f, int64_t *rule_id,
                            struct sw_err *e);

/*
 * Mark every open attempt (of endpoint, NULL = all) whose owner is provably gone as
 * `interrupted` (failure_class "interrupted", evidence {reason, last_step, owner}), and its open
 * steps `interrupted`; ended = the last time the dead process wrote. An owner on another host is
 * left alone (cannot tell). *marked (may be NULL) receives the count. Every read-write
 * sw_ledger_open runs it once; reads report a stale open attempt as "interrupted" with
 * "recovered": false before it has run.
 */
int sw_ledger_deploy_recover(struct sw_ledger *l, const char *endpoint, int64_t *marked,
                             struct sw_err *e);

/*
 * An attempt: {id, endpoint, shape_hash, shape, from_tag, tag, started, ended, started_ms,
 * ended_ms, ms, outcome ("running" while open and its owner lives), recovered, failure_class,
 * downtime_ms, rule_id, note, evidence, owner {host, pid}, steps: [{seq, name, started_ms,
 * ended_ms, ms, outcome ("running" while open), detail}]}. SW_ENOENT when there is none.
 */
int sw_ledger_deploy_get(struct sw_ledger *l, int64_t attempt, json_t **out, struct sw_err *e);
/* Attempts of endpoint (NULL = all), newest first, each as sw_ledger_deploy_get; limit 0 = all. */
int sw_ledger_deploy_list(struct sw_ledger *l, const char *endpoint, int64_t limit, json_t **out,
                          struct sw_err *e);

/* A shape that proved itself, as it becomes the endpoint's last-good. */
struct sw_ledger_tag_new {
    const char *endpoint;  /* required */
    int64_t attempt_id;    /* the attempt that proved it, finished `committed` in the same
                                transaction; 0 = a tag recorded without one (by hand) */
    const json_t *shape;   /* required */
    const char *unit_name; /* "slipway-frank-primary.service", or NULL */
    const char *unit_text; /* the rendered unit (its `shown` text), or NULL */
    const char *env_name;  /* "slipway-frank-primary.env", or NULL */
    const char *env_text;  /* the env file: pass the render's `shown` text; secrets are
                                redacted again here whatever is passed */
    const json_t *payload; /* required: the manifest, an array of {path (absolute), size
                                (bytes), sha256 (64 hex, or null when not hashed)} */
    const char *image;     /* the image digest (name@sha256:...), or NULL (native) */
    const char *note;      /* the operator's note, or NULL */
    int64_t created_at;    /* unix SECONDS, 0 = now; its UTC day names the tag */
    int64_t downtime_ms;   /* for the attempt; < 0 = unknown */
    const char *const *secrets;
};

/*
 * Record a new tag ENDPOINT-YYYYMMDD-N (N counts the endpoint's tags of that UTC day from 1) and
 * make it the endpoint's last-good, atomically: the previous last-good stays, kept, as a rollback
 * tag. With attempt_id the attempt (open, same endpoint and shape) is finished `committed` with
 * the tag. name (may be NULL, SW_LEDGER_TAG_MAX bytes) and *id receive the tag.
 */
int sw_ledger_tag_commit(struct sw_ledger *l, const struct sw_ledger_tag_new *t,
                         char name[SW_LEDGER_TAG_MAX], int64_t *id, struct sw_err *e);

/*
 * A tag: {id, name, endpoint, day, n, shape_hash, shape, summary, attempt, image, created, note,
 * last_good, kept, retired, retired_why, payload: [{path, size, sha256}], files: [{name, kind
 * (unit|env), text}]}. SW_ENOENT when there is none.
 */
int sw_ledger_tag_get(struct sw_ledger *l, const char *name, json_t **out, struct sw_err *e);
/* The tags of endpoint (NULL = all), newest first, as sw_ledger_tag_get without files (with:
 * full). */
int sw_ledger_tag_list(struct sw_ledger *l, const char *endpoint, bool full, json_t **out,
                       struct sw_err *e);
/* The endpoint's last-good tag, with files; SW_ENOENT when it has no tag. */
int sw_ledger_tag_last_good(struct sw_ledger *l, const char *endpoint, json_t **out,
                            struct sw_err *e);
/* Make a kept tag the endpoint's last-good again (a rollback by hand to it). A retired tag is
 * SW_EINVAL. */
int sw_ledger_tag_set_last_good(struct sw_ledger *l, const char *name, struct sw_err *e);
/* Retire a tag with why (required): it is no longer a rollback target and its payload may be
 * moved. The last-good is refused (SW_EINVAL: make another one last-good first); a tag already
 * retired is SW_EINVAL. at: unix seconds, 0 = now. */
int sw_ledger_tag_retire(struct sw_ledger *l, const char *name, const char *why, int64_t at,
                         struct sw_err *e);

/*
 * The KEPT tags (not retired, of any endpoint) that still need `path`: a manifest path equal to
 * it, under it, or above it (compared by whole components; give absolute, normalized paths).
 * *out: array of {tag, endpoint, last_good, paths: [...]}; empty when the path may go.
 */
int sw_ledger_tags_needing(struct sw_ledger *l, const char *path, json_t **out, struct sw_err *e);
/* Record that a payload directory was moved (method "rename" or "copy"; bytes/files < 0 =
 * unknown). */
int sw_ledger_record_move(struct sw_ledger *l, const char *from, const char *to, const char *method,
                          int64_t bytes, int64_t files, const char *note, int64_t *id,
                          struct sw_err *e);
/* The moves recorded, oldest first: [{id, from, to, method, bytes, files, moved, note}]. */
int sw_ledger_moves(struct sw_ledger *l, json_t **out, struct sw_err *e);

/*
 * Whether a tag can be restored: is `what` there on the endpoint's host? kind is "path" (a
 * payload manifest path) or "image" (an image digest). Return 0 with *present set, or an error
 * (then the tag's restorability is unknown and the error is reported beside it).
 */
typedef int (*sw_ledger_present_fn)(void *ctx, const char *kind, const char *what, bool *present,
                                    struct sw_err *e);
/* The same, told the size the TAG's own manifest recorded for a path (-1: none recorded, and for
 * an image): two tags may record different sizes for one path, and only the asking tag's size
 * says whether its payload is still the one it deployed. */
typedef int (*sw_ledger_present_sized_fn)(void *ctx, const char *kind, const char *what,
                                          int64_t size, bool *present, struct sw_err *e);
struct sw_ledger_history_opts {
    sw_ledger_present_fn present; /* NULL: not checked (unless present_sized) */
    void *ctx;
    const char *unchecked; /* why not, when neither callback is set: "not checked (remote host)" */
    sw_ledger_present_sized_fn present_sized; /* preferred over present when set */
};

/*
 * The history of an endpoint: {endpoint, last_good (name or null), tags: [tag (as tag_list) +
 * {measured: {boots, boots_ok, boots_failed, kv_cache_tokens, max_concurrency, battery: {runs,
 * last: {passed, failed, skipped, when}}, bench: {runs, last: {params, results, when}}, usage:
 * {readings, last: {device, used_mib, total_mib, free_mib}}}, restorable: true | false | null,
 * missing: [...], restorable_why}], attempts: [the last 20 attempts, as deploy_list]}, newest
 * first. Measured figures join the ledger's boots, batteries, benches and usage readings of the
 * tag's shape on that endpoint. o may be NULL (not checked).
 */
int sw_ledger_history(struct sw_ledger *l, const char *endpoint,
                      const struct sw_ledger_history_opts *o, json_t **out, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * The tuner's journal (slipway tune; tables tune_runs and tune_probes, docs/tune.md).
 */
/* Open (or resume) the run of endpoint x objective x space: the newest run of that triple that
 * has not ended is resumed (*resumed true), else a new one begins. objective and space are
 * labels (1..160 bytes of printable text). */
int sw_ledger_tune_begin(struct sw_ledger *l, const char *endpoint, const char *objective,
                         const char *space, int64_t *run, bool *resumed, struct sw_err *e);
/* One probe as decided, in one transaction: {"seq" (>= 1), "phase" (baseline|single|combo|
 * remeasure), "candidate" (its key, text), "outcome" (rejected|boot_failed|bench_failed|
 * measured), "gate" (the rejecting gate: required for rejected, else absent or null), "score",
 * "noise" (numbers or null), "evidence" (object)}. */
int sw_ledger_tune_probe(struct sw_ledger *l, int64_t run, const json_t *probe, struct sw_err *e);
/* The probes of a run in seq order, each as given to sw_ledger_tune_probe. New reference. */
int sw_ledger_tune_probes(struct sw_ledger *l, int64_t run, json_t **out, struct sw_err *e);
/* End a run: outcome crowned | no_winner | budget | interrupted, result an object (may be
 * NULL). A run that already ended is refused (SW_EINVAL). */
int sw_ledger_tune_finish(struct sw_ledger *l, int64_t run, const char *outcome,
                          const json_t *result, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
