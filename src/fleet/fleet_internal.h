/*
 * fleet internals shared by the files of src/fleet: the YAML tree with positions, the decoding
 * context (path, error collection, position index) and the scalar decoders. Every string, array
 * and struct of a fleet (and of its YAML tree) lives in one core region (`arena` of the private
 * part, its ceiling set by load.c): freeing the fleet frees it whole, which is what makes the
 * load all-or-nothing without per-object cleanup. Nothing here is visible outside src/fleet/.
 */
#ifndef SW_FLEET_INTERNAL_H
#define SW_FLEET_INTERNAL_H

#include <slipway/fleet.h>

#include <stdarg.h>
#include <stddef.h>

/* ---------------------------------------------------------------------------------------------
 * The YAML tree: built from libfyaml's events so that every node (mappings and sequences too)
 * carries its line:col. Aliases share the anchored node (the tree is a DAG); merge keys (<<) are
 * expanded at build time. Mapping keys are scalars and unique (duplicates are an error).
 */
enum sw__fleet_nkind { SW__FLN_SCALAR = 1, SW__FLN_MAP = 2, SW__FLN_SEQ = 3 };

struct sw__fleet_node {
    enum sw__fleet_nkind kind;
    int line, col; /* 1-based */
    const char *file;
    const char *text; /* scalar, NUL-terminated (may contain NULs before len) */
    size_t len;
    bool plain;                   /* unquoted plain scalar: may be null / bool / number */
    size_t n;                     /* seq: items; map: pairs */
    struct sw__fleet_node **kids; /* seq: n items; map: keys at 2i, values at 2i+1 */
    uint64_t weight;              /* nodes in the subtree, aliases expanded (bounded at parse) */
    unsigned height; /* nesting depth of the subtree, aliases expanded (bounded at parse) */
};

/* Bounds that keep a hostile document (alias bombs, deep nesting) from costing more than a
 * fleet ever needs. */
#define SW__FLEET_MAX_WEIGHT 100000u
#define SW__FLEET_MAX_HEIGHT 64u

/* Strict UTF-8 (no overlongs, surrogates or NULs). On failure line and col (1-based, columns in
 * characters) say where, and *nul tells a NUL byte from a bad sequence. */
bool sw__fleet_utf8_check(const char *s, size_t n, int *line, int *col, bool *nul);

/* Parse one YAML document. Errors (syntax, duplicate key, unsupported tag, alias bomb, second
 * document) carry name:line:col. An empty document yields *root == NULL. */
int sw__fleet_yaml_parse(struct sw_region *a, const char *name, const char *text, size_t len,
                         struct sw__fleet_node **root, struct sw_err *e);
/* A plain scalar spelling null: "", "~", "null", "Null", "NULL". */
bool sw__fleet_node_is_null(const struct sw__fleet_node *n);
/* YAML -> JSON (plain scalars typed as null/bool/int/real, quoted ones strings). */
json_t *sw__fleet_node_to_json(const struct sw__fleet_node *n, struct sw_err *e);
const struct sw__fleet_node *sw__fleet_map_get(const struct sw__fleet_node *map, const char *key);

/* ---------------------------------------------------------------------------------------------
 * Suggestions for near misses ("did you mean 'max_model_len'?"): NULL when nothing is close.
 */
const char *sw__fleet_suggest(const char *word, const char *const *cands, size_t n);
/* The entry of first[0..n) (size bytes each, its name the first member) named name, or NULL. */
const void *sw__fleet_named(const void *first, size_t n, size_t size, const char *name);
/* What reads a struct's name at its start (sw__fleet_named, the resolver, the JSON view's
 * references and maps) may: these come first. A client's first member points to its endpoint. */
#define SW__FLEET_NAMED_FIRST(T) _Static_assert(offsetof(T, name) == 0, #T "'s name comes first")
SW__FLEET_NAMED_FIRST(struct sw_fleet_host);
SW__FLEET_NAMED_FIRST(struct sw_fleet_device);
SW__FLEET_NAMED_FIRST(struct sw_fleet_profile);
SW__FLEET_NAMED_FIRST(struct sw_fleet_endpoint);
SW__FLEET_NAMED_FIRST(struct sw_fleet_const);
SW__FLEET_NAMED_FIRST(struct sw_fleet_fact);
SW__FLEET_NAMED_FIRST(struct sw_fleet_knob);
SW__FLEET_NAMED_FIRST(struct sw_fleet_frozen);
SW__FLEET_NAMED_FIRST(struct sw_fleet_envvar);
_Static_assert(offsetof(struct sw_fleet_client, endpoint) == 0, "a client's endpoint comes first");
/* The shape field closest to a name that is none (for "did you mean"), or NULL. */
const char *sw__fleet_near_field(const char *name);
/* Levenshtein distance over normalized spellings (case, '-' vs '_', leading dashes). */
size_t sw__fleet_distance(const char *a, const char *b);

/* ---------------------------------------------------------------------------------------------
 * Position index for sw_fleet_pos().
 */
struct sw__fleet_posent {
    const char *path;
    struct sw_fleet_at at;
    size_t seq;
};

struct sw__fleet_ep_raw;

/* Private part of a fleet. */
struct sw__fleet_priv {
    struct sw_region arena;
    struct sw__fleet_posent *pos; /* sorted by path once loaded */
    size_t n_pos, cap_pos;
    json_t **json; /* json_t references owned by the fleet */
    size_t n_json, cap_json;
    struct sw_fleet_envfile **envfiles;
    size_t n_envfiles, cap_envfiles;
    struct sw_fleet_warning *warn;
    size_t n_warn, cap_warn;
    struct sw_rule **rules; /* compiled known_bad rules, owned */
    size_t n_rules, cap_rules;
};

/* ---------------------------------------------------------------------------------------------
 * Decoding context.
 */
struct sw__fleet_ctx {
    struct sw_fleet *f;
    struct sw__fleet_priv *p;
    struct sw_region *a;
    const char *file; /* the fleet file's name (arena) */
    const char *dir;  /* its directory, for relative env files */
    const char *src;  /* its text (len src_len), for positions inside a scalar; may be NULL */
    size_t src_len;
    const struct sw_fleet_opts *opts;
    int max_errors;
    int nerr;
    bool oom;
    struct sw_err *first; /* caller's, may be NULL */
    int first_code;
    char path[1024];
    size_t plen;
    size_t seq;
    struct sw__fleet_ep_raw *raw; /* parallel to f->endpoints (endpoint.c) */
};

/* Path handling: push ".key" / "[i]", pop back to a saved length. */
size_t sw__fleet_path_push(struct sw__fleet_ctx *c, const char *key);
size_t sw__fleet_path_index(struct sw__fleet_ctx *c, size_t i);
void sw__fleet_path_pop(struct sw__fleet_ctx *c, size_t saved);

/* Report an error at a position (the message is used as is). Returns SW_EPARSE (or `code`). */
int sw__fleet_verr(struct sw__fleet_ctx *c, int code, const struct sw_fleet_at *at, const char *fmt,
                   va_list ap) SW_PRINTF(4, 0);
int sw__fleet_err(struct sw__fleet_ctx *c, const struct sw_fleet_at *at, const char *fmt, ...)
    SW_PRINTF(3, 4);
/* The same, prefixed by the current path: "endpoints.x.shape.seqs must be ...". */
int sw__fleet_errp(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, const char *fmt, ...)
    SW_PRINTF(3, 4);
/* Report an error that came back from a helper (sw_err), re-positioned at n. */
int sw__fleet_err_from(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                       const struct sw_err *e);
int sw__fleet_nomem(struct sw__fleet_ctx *c);
void sw__fleet_warn(struct sw__fleet_ctx *c, const struct sw_fleet_at *at, const char *fmt, ...)
    SW_PRINTF(3, 4);
struct sw_fleet_at sw__fleet_at(const struct sw__fleet_node *n);
/* Record the current path's position. */
void sw__fleet_record(struct sw__fleet_ctx *c, const struct sw__fleet_node *n);
void sw__fleet_record_at(struct sw__fleet_ctx *c, const char *path, const struct sw_fleet_at *at);
/* Keep a json_t for the fleet's lifetime (steals the reference). */
int sw__fleet_keep_json(struct sw__fleet_ctx *c, json_t *j);

/* ---------------------------------------------------------------------------------------------
 * Scalar decoding. `spec` says what a value must be; decoders report errors themselves (at the
 * node, prefixed with the path) and return SW_EPARSE so the caller continues with the next value.
 */
enum sw__fleet_ft {
    SW__FT_STR = 1,      /* any non-empty text on one line (no control character) */
    SW__FT_TEXT,         /* free text: a note, a source; LF and tab allowed */
    SW__FT_NAME,         /* [A-Za-z0-9][A-Za-z0-9_-]* */
    SW__FT_WORD,         /* [a-z0-9_]+ */
    SW__FT_CHOICE,       /* one of spec->choices; stored pointer is the static choice */
    SW__FT_PATH,         /* absolute or ~/ path on a host */
    SW__FT_LPATH,        /* a path on this machine (relative to the fleet file allowed) */
    SW__FT_COUNT,        /* sw_parse_count, in [min, max] */
    SW__FT_BYTES,        /* sw_parse_bytes: exact whole bytes */
    SW__FT_BYTES_APPROX, /* a byte quantity, decimals rounded to the byte (31.86GiB) */
    SW__FT_RATE,         /* bytes per second ("644GB/s") */
    SW__FT_REAL,         /* in (fmin, fmax] when fmin_open, else [fmin, fmax] */
    SW__FT_BOOL,         /* true | false */
    SW__FT_PORT,         /* 1..65535 */
    SW__FT_NGL,          /* a count or "all" */
};

struct sw__fleet_spec {
    enum sw__fleet_ft ft;
    const char *const *choices;
    uint64_t min, max;
    double fmin, fmax;
    bool fmin_open;
};

int sw__fleet_dec_str(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                      const struct sw__fleet_spec *s, struct sw_fleet_str *out);
int sw__fleet_dec_u64(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                      const struct sw__fleet_spec *s, struct sw_fleet_u64 *out);
int sw__fleet_dec_f64(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                      const struct sw__fleet_spec *s, struct sw_fleet_f64 *out);
int sw__fleet_dec_bool(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                       struct sw_fleet_bool *out);
/* Decode into a typed sw_fleet_value of the given type (knob bounds, rule operands). */
int sw__fleet_dec_value(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                        enum sw_fleet_vtype t, const struct sw__fleet_spec *s,
                        struct sw_fleet_value *out);
/* A typed scalar's start: *at its position, recorded; 0 for a null (turned off: *set false, *off
 * true), SW_EPARSE when it is not a single value (reported), else 1 with *t its text. */
int sw__fleet_typed_start(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                          struct sw_fleet_at *at, bool *set, bool *off, const char **t);
/* Text of a scalar node, or an error: "must be a single value, not a mapping", a NUL, a control
 * character (C0 including tab, DEL, C1: the value would break a line-based file). */
const char *sw__fleet_scalar(struct sw__fleet_ctx *c, const struct sw__fleet_node *n);
bool sw__fleet_want_map(struct sw__fleet_ctx *c, const struct sw__fleet_node *n);
bool sw__fleet_want_seq(struct sw__fleet_ctx *c, const struct sw__fleet_node *n);

/* Unknown key in a mapping: error with a suggestion among the known keys (and hints). */
int sw__fleet_unknown_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *key,
                          const char *what, const char *const *known, size_t n);

/* Shape fields: the decode spec and storage of each public field (same order). */
struct sw__fleet_shape_slot {
    struct sw__fleet_spec spec;
    size_t off;
};
const struct sw__fleet_shape_slot *sw__fleet_shape_slot(const struct sw_fleet_field *f);
/* Decode a `shape:` mapping into s (only given fields are set). */
int sw__fleet_dec_shape(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                        struct sw_fleet_shape *s);
/* Decode one shape field's value from node n (used by the env import too). */
int sw__fleet_dec_shape_field(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                              const struct sw_fleet_field *f, struct sw_fleet_shape *s);
/* Pointer to a field's storage inside a shape. */
void *sw__fleet_shape_ptr(struct sw_fleet_shape *s, const struct sw_fleet_field *f);
const void *sw__fleet_shape_cptr(const struct sw_fleet_shape *s, const struct sw_fleet_field *f);

/* ---------------------------------------------------------------------------------------------
 * Mappings (map.c). A table-driven mapping: each known key (or alias) decoded into a field of obj
 * at `off`; unknown keys get a suggestion, a key set twice through an alias is an error.
 */
struct sw__fleet_fdef;
typedef int (*sw__fleet_dec_fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                                const struct sw__fleet_fdef *d);
struct sw__fleet_fdef {
    const char *name;
    const char *aliases[3];
    sw__fleet_dec_fn dec;
    struct sw__fleet_spec spec;
    size_t off;
};
#define SW__SPEC(ft_)                                                                              \
    {                                                                                              \
        .ft = (ft_)                                                                                \
    }
#define SW__SPECN(ft_, mn, mx)                                                                     \
    {                                                                                              \
        .ft = (ft_), .min = (mn), .max = (mx)                                                      \
    }
#define SW__SPECC(ch)                                                                              \
    {                                                                                              \
        .ft = SW__FT_CHOICE, .choices = (ch)                                                       \
    }

/* listen.route's words: "direct", "host" (addr.c), NULL-terminated. */
extern const char *const sw__fleet_route_words[];

/* Field decoders for tables: a struct sw_fleet_str, sw_fleet_u64 or sw_fleet_bool at d->off. */
int sw__fleet_dec_strf(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d);
int sw__fleet_dec_u64f(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d);
int sw__fleet_dec_boolf(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct sw__fleet_fdef *d);
/* Decode mapping n into obj by the table; `what` names the mapping in errors. */
int sw__fleet_dec_map(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, void *obj,
                      const struct sw__fleet_fdef *defs, size_t nd, const char *what);
/*
 * The one walk over a mapping's pairs (named objects, or keyed settings), so that every mapping
 * reports alike: records the mapping's position and checks it is one; then for each pair checks
 * the key, pushes it on the path, hands the value to fn and pops. The key check is, in order:
 *   key(c, k, arg)  returns the path segment, or NULL after reporting the key itself;
 *   known/n_known   the keys allowed (an unknown one: "unknown key 'x' in PATH (did you mean)");
 *   what            the key must be a name (sw__fleet_check_name(c, k, what));
 *   none of these   any key.
 * Every pair is visited (until out of memory) so one run reports every mistake; the return is
 * SW_EPARSE when the node is not a mapping, SW_ENOMEM, or the last error a key or fn gave.
 */
struct sw__fleet_walk {
    const char *what;
    const char *const *known;
    size_t n_known;
    const char *(*key)(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, void *arg);
    int (*fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
              const struct sw__fleet_node *v, void *arg);
    void *arg;
};
int sw__fleet_walk(struct sw__fleet_ctx *c, const struct sw__fleet_node *map,
                   const struct sw__fleet_walk *w);

/* One zeroed entry of `size` bytes per item or pair of node v (at least one), from the loader's
 * arena: what a walk over v fills. NULL on OOM or over the arena's ceiling. */
void *sw__fleet_alloc_each(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, size_t size);
/* Two such arrays in step (a struct's list and its raw names beside it): *a and *b (addresses of
 * the arrays' pointers); 0, or SW_ENOMEM (reported) when either cannot be had. */
int sw__fleet_alloc_pair(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *a,
                         size_t size_a, void *b, size_t size_b);
/* The same as sw__fleet_walk for a list: records it and checks it is one; each item is decoded
 * by fn with "[i]" pushed on the path. Every item is visited (until out of memory); returns as
 * sw__fleet_walk. */
int sw__fleet_walk_seq(struct sw__fleet_ctx *c, const struct sw__fleet_node *seq,
                       int (*fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *item,
                                 void *arg),
                       void *arg);
/* The two together: *arr (the address of the array's pointer) made sw__fleet_alloc_each's array
 * for v, then v walked as a list (fn per item) or as a mapping (w per pair); SW_ENOMEM
 * (reported) when the array cannot be had. */
int sw__fleet_seq_into(
    struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *arr, size_t size,
    int (*fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *item, void *arg), void *arg);
int sw__fleet_map_into(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *arr,
                       size_t size, const struct sw__fleet_walk *w);

/* The entry of a table named `name` (aliases not searched), or NULL. */
const struct sw__fleet_fdef *sw__fleet_find_def(const struct sw__fleet_fdef *defs, size_t n,
                                                const char *name);

/* Is k's text a name (letters, digits, '-', '_'; at most 64; starts with a letter or digit)?
 * Reports "<what> name '...' is not a name" when not. */
bool sw__fleet_check_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                          const char *what);
/* [A-Za-z_][A-Za-z0-9_]* */
bool sw__fleet_is_env_name(const char *s);
/* A date (YYYY-MM-DD, optionally followed by a time or a note), or any non-empty text; the
 * stored string lives in the arena. */
int sw__fleet_dec_date(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, const char **out);
int sw__fleet_dec_text(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, const char **out);

/* ---------------------------------------------------------------------------------------------
 * Secrets (secret.c): names and values that look like secrets, and {from_env|from_file} refs.
 */
bool sw__fleet_looks_secret_name(const char *name);
bool sw__fleet_looks_secret_value(const char *v);
int sw__fleet_dec_secret_ref(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                             struct sw_fleet_secret *out, const char *what);

/* ---------------------------------------------------------------------------------------------
 * The nouns: each decodes its part of the file (pass 1); validate.c resolves and checks (pass 3).
 */
/* host.c */
int sw__fleet_dec_hosts(struct sw__fleet_ctx *c, const struct sw__fleet_node *v);
/* profile.c: engine spellings accepted in a file, and the engine each names */
extern const char *const sw__fleet_engine_names[];
enum sw_fleet_engine sw__fleet_engine_of(const char *s);
int sw__fleet_dec_profiles(struct sw__fleet_ctx *c, const struct sw__fleet_node *v);
/* A quantity with a unit: "9190 B/token" (profile constants and measured facts). */
int sw__fleet_dec_qty(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                      struct sw_fleet_qty *q);

/* endpoint.c: what an endpoint names (host, devices, profile...) is kept as text until resolved. */
struct sw__fleet_ep_raw {
    struct sw_fleet_str host;
    struct sw_fleet_str *devices;
    size_t n_devices;
    bool devices_given;
    struct sw_fleet_str profile;
    struct sw_fleet_str engine;
    const struct sw__fleet_node *env_file;
    struct sw_fleet_str *fact_devices; /* per fact */
    struct sw_fleet_str *boot_devices; /* per boot */
};
struct sw__fleet_ep_raw *sw__fleet_raw_of(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep);
int sw__fleet_dec_endpoints(struct sw__fleet_ctx *c, const struct sw__fleet_node *v);
/* The endpoint's and the payload's field tables (for env-file targets). */
const struct sw__fleet_fdef *sw__fleet_endpoint_def(const char *name);
const struct sw__fleet_fdef *sw__fleet_payload_def(const char *name);
const struct sw__fleet_fdef *sw__fleet_listen_def(const char *name);
/* Set payload->source from what the payload names (path: local, repo: Hugging Face). */
void sw__fleet_payload_source(struct sw_fleet_payload *p);
/* facts.c, rules.c: endpoint keys measured:, boots:, known_bad: */
int sw__fleet_ep_measured(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d);
int sw__fleet_ep_boots(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d);
/* waive.c: `waive:` and `contract:` of an endpoint. */
int sw__fleet_ep_waive(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d);
int sw__fleet_ep_contract(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d);
int sw__fleet_ep_known_bad(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                           const struct sw__fleet_fdef *d);
/* runtime.c: endpoint keys runtime: and service:, and their checks once the endpoint is read
 * (the default runtime follows image:) */
int sw__fleet_ep_runtime(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d);
int sw__fleet_ep_serve(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d);
int sw__fleet_ep_service(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d);
void sw__fleet_check_runtime(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                             const char *where);
/* harness.c: endpoint names kept as text until resolved */
struct sw__fleet_harness_raw {
    struct sw_fleet_str compaction_endpoint;
    struct sw_fleet_str *client_names;
};
int sw__fleet_dec_harness(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                          struct sw__fleet_harness_raw *hr);
/* validate.c */
void sw__fleet_check_endpoint(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                              struct sw__fleet_ep_raw *raw);
void sw__fleet_check_fleet(struct sw__fleet_ctx *c, struct sw__fleet_harness_raw *hr);

/* ---------------------------------------------------------------------------------------------
 * Env-file import targets (envtarget.c): "shape.seqs", "payload.mmproj", "listen.port", "binary",
 * "image", "alias", "engine_version", "env.NAME". canon: canonical spelling or NULL. */
const char *sw__fleet_target_canon(const char *t, struct sw_region *a);
size_t sw__fleet_target_names(const char **out, size_t max);
int sw__fleet_dec_target(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep, const char *target,
                         const struct sw__fleet_node *n);
bool sw__fleet_target_has_default(struct sw_fleet_endpoint *ep, const char *target,
                                  struct sw_fleet_at *at);
int sw__fleet_import_env(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                         const struct sw__fleet_node *decl);

/* Env-file internals: parse into an arena-less struct (owned by the envfile itself). */
int sw__fleet_envfile_parse(const char *name, const char *text, size_t len,
                            sw_fleet_getenv_fn getenv, void *getenv_ctx,
                            struct sw_fleet_envfile **out, struct sw_err *e);

#endif
