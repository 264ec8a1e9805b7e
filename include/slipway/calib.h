/*
 * calib: fit the free terms of an engine law from what the ledger recorded for an endpoint, and
 * predict from the fit with the geometry it was fitted on, its residuals and an interval.
 *
 *   - KV price (vLLM v1's block law, docs/vllm-law.md): per request, A attention groups take
 *     cdiv(max_model_len, B) blocks each and the state groups S blocks; the pool holds
 *     floor(KV_BYTES / stride) blocks; the engine prints tokens = int(blocks / per_request x L)
 *     and the concurrency to 2 decimals. The free terms (stride, B, A, S) are searched over a
 *     stated space; EVERY value consistent with every fitted boot is kept (the feasible set),
 *     and a prediction is the range over that set. With the model's config the set is mapped
 *     onto the fork's terms (extra bytes per token per layer, extra state blocks per group).
 *   - Non-KV cost by subtraction, per device: a usage reading (used MiB) minus the law's KV for
 *     that reading's shape (llama.cpp: memory/llamacpp's KV + recurrent state; vLLM: the pinned
 *     pool). The budget of a shape = the non-KV of readings of the same kind of shape + the
 *     law's KV for the asked shape.
 *   - Fork-profile constants (the expert-offload arena of memory/profile): the MAXLEN slope and
 *     the intercept that reproduce every printed slot count, as intervals.
 *
 * A prediction outside the fitted geometry (a max_model_len no fitted boot had, a KV dtype no
 * boot had) says so in `warning` and its interval is the whole feasible set's, which is wide.
 *
 * What it does not do: store anything (the CLI may write the fit as JSON), decide whether a shape
 * may boot (gates), or invent a term: a figure the ledger does not constrain stays a range.
 */
#ifndef SLIPWAY_CALIB_H
#define SLIPWAY_CALIB_H

#include <slipway/core.h>
#include <slipway/profile.h>
#include <slipway/sglang.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_ledger;
struct sw_fleet_endpoint;

#define SW_CALIB_MAX_POINTS  64        /* boots per KV class */
#define SW_CALIB_MAX_CLASSES 8         /* KV classes (dtype x tp x model) per endpoint */
#define SW_CALIB_MAX_SOLS    (1 << 20) /* feasible (A, B, S) triples kept per class */
#define SW_CALIB_MAX_DEV     8
#define SW_CALIB_MAX_READ    16 /* readings kept per non-KV class */
#define SW_CALIB_MAX_NONKV   8  /* non-KV classes per endpoint */

/* What to fit with. Every field may be NULL/0. */
struct sw_calib_opts {
    const struct sw_fleet_endpoint *ep; /* the endpoint's inline arch and devices, when known */
    const char
        *config_path;       /* a Hugging Face config.json (or its directory): overrides ep's arch */
    int max_state_blocks;   /* search bound for S (0 = 256) */
    int max_attn_groups;    /* search bound for A without a config (0 = 1) */
    const int64_t *exclude; /* boot ids left out of every fit (what-if), may be NULL */
    int n_exclude;
};

/* An interval of a predicted integer figure. lo <= point <= hi. */
struct sw_calib_range {
    int64_t lo, hi;
    int64_t point;     /* the config-explained value when there is one, else the midpoint */
    bool extrapolated; /* outside the fitted geometry */
};

/* One boot used by a KV fit. */
struct sw_calib_kv_point {
    int64_t boot_id;
    char ext_id[96];
    int64_t max_model_len;
    int64_t slots;
    uint64_t kv_bytes;
    int64_t tokens; /* printed */
    bool has_conc;
    double conc; /* printed, 2 decimals */
    /* what the fit reproduces (from the chosen solution) and what this boot taught */
    int64_t fit_tokens;
    char fit_conc[16];
    int64_t residual_tokens; /* fit - printed over the whole set: max |.| */
    char taught[256];
};

/* One family of solutions: for A and B fixed, the S and stride that fit. */
struct sw_calib_kv_sol {
    int a;              /* attention groups (blocks of cdiv(L, B) each per request) */
    int64_t b;          /* attention block, tokens */
    int64_t s;          /* state blocks per request (all state groups) */
    uint64_t stride_lo; /* bytes per block (all layers of a group), inclusive range */
    uint64_t stride_hi;
};

/* What the model's config says, and the fork terms the fit implies (config given). */
struct sw_calib_kv_model {
    bool have;                 /* a config was given and planned */
    char source[256];          /* config path or "fleet arch" */
    int64_t block;             /* the law's aligned attention block */
    int64_t group_size;        /* layers per group */
    int attn_groups;           /* A */
    int state_groups;          /* mamba-like groups */
    int64_t state_blocks_base; /* upstream blocks per request per state group */
    int64_t page_per_token;    /* K+V (+ scales) bytes per token per layer, upstream */
    bool explained;            /* some feasible solution matches the config's structure */
    int64_t extra_bytes_lo, extra_bytes_hi;   /* fitted extra_attn_bytes_per_token range */
    int64_t extra_blocks_lo, extra_blocks_hi; /* fitted extra_mamba_blocks range */
    bool law_reproduces; /* sw_vllm_plan with the fitted terms reproduces every boot */
    char why[512];       /* when not explained: what does not match */
};

/* The KV fit of one class (same engine, model, kv dtype, tp): its geometry and feasible set. */
struct sw_calib_kv_fit {
    char klass[128]; /* "fp8 tp=2" */
    char kv_dtype[32];
    int64_t tp;
    int n_points;
    struct sw_calib_kv_point pts[SW_CALIB_MAX_POINTS];
    int n_lens; /* distinct max_model_len fitted (the geometry) */
    int64_t lens[SW_CALIB_MAX_POINTS];
    uint64_t kv_lo, kv_hi; /* range of KV_BYTES fitted */
    int n_skipped;         /* boots of the class the law could not use (no pinned KV bytes...) */
    char skipped[512];
    /* search space, stated */
    int64_t align; /* B is a multiple of this */
    int max_s, max_a;
    /* the feasible set */
    bool consistent;              /* at least one solution */
    char why[512];                /* when inconsistent: the boots that contradict the others */
    int64_t n_solutions;          /* (A, B, S) triples: every one reproduces every fitted boot */
    struct sw_calib_kv_sol *sols; /* [n_solutions], owned (sw_calib_kv_fit_release) */
    int64_t b_lo, b_hi, s_lo, s_hi;
    uint64_t stride_lo, stride_hi;
    int64_t chosen; /* index into sols of the config-explained solution, else -1 */
    double bytes_per_token_lo, bytes_per_token_hi; /* A x stride / B */
    struct sw_calib_kv_model model;
};

/* A KV prediction for one shape. */
struct sw_calib_kv_pred {
    struct sw_calib_range tokens;
    struct sw_calib_range blocks_per_request;
    double conc_lo, conc_hi;
    char warning[256];
};

/* One device's budget for a shape: predicted use from the readings it came from. */
struct sw_calib_device {
    char device[64];
    uint64_t total_mib;
    bool measured; /* this exact shape was read: the figures are the reading */
    double kv_mib; /* the law's KV (+ recurrent state) for the asked shape */
    double non_kv_mib, non_kv_lo, non_kv_hi; /* from the readings */
    double used_mib, used_lo, used_hi;
    double free_mib, free_lo, free_hi; /* as the tool reads free (reserve included) */
    double reserve_mib;                /* total - used - free of the readings (driver-held) */
    int n_readings;
    int64_t reading_ids[SW_CALIB_MAX_READ];
    char basis[256]; /* "usage #1 (2 x 262144): 20,190 used - 12,644.5 KV" */
};

struct sw_calib_budget {
    int n_dev;
    struct sw_calib_device dev[SW_CALIB_MAX_DEV];
    bool extrapolated;
    char warning[512];
};

/* One non-KV class: readings of shapes alike in everything but ctx/slots/pool. */
struct sw_calib_nonkv_read {
    int64_t usage_id, boot_id;
    char device[64];
    char shape[160]; /* summary */
    int64_t ctx, slots;
    uint64_t used_mib, total_mib;
    bool free_read;
    uint64_t free_mib;
    double kv_mib;     /* law */
    double non_kv_mib; /* used - kv */
};
struct sw_calib_nonkv {
    char key[512];   /* the identity (canonical shape without ctx/slots/pool) */
    char label[128]; /* "llama.cpp q5_k_m +mmproj" */
    char device[64];
    int n;
    struct sw_calib_nonkv_read r[SW_CALIB_MAX_READ];
    double lo, hi, mean; /* non-KV MiB over the readings */
    double reserve_lo, reserve_hi;
    int64_t ctx_lo, ctx_hi; /* geometry */
    char kv_source[160];    /* how KV was computed */
};

/* The expert arena of a fork profile (memory/profile): arena(L) = C - r x L at one MNBT class,
 * slots = floor(arena / slot). C folds usable - weights - non_torch - overhead + adjust: only the
 * sum is seen by boots. The feasible set is a polygon in (r, C) per slot size; its vertices are
 * kept and predictions range over them. */
#define SW_CALIB_MAX_VERT 256
struct sw_calib_arena_vertex {
    double slot, r, c; /* bytes, B/token, bytes */
};
struct sw_calib_arena {
    bool have; /* boots printed arena slots */
    int n;
    int64_t lens[SW_CALIB_MAX_POINTS];
    int64_t slots[SW_CALIB_MAX_POINTS];
    double gib[SW_CALIB_MAX_POINTS]; /* printed arena GiB (2 decimals), < 0 when not printed */
    int64_t mnbt[SW_CALIB_MAX_POINTS];
    int64_t boot_ids[SW_CALIB_MAX_POINTS];
    double slot_lo, slot_hi; /* slot bytes: the printed MiB figure's rounding range */
    bool consistent;
    bool one_geometry;             /* every arena boot had one max_model_len: r not seen,
                                         not a contradiction */
    double reserve_lo, reserve_hi; /* r: B/token x max_model_len (the MAXLEN slope) */
    double cap_lo, cap_hi;         /* C, bytes */
    bool have_base;                /* the fleet profile's declared constants */
    double base;                   /* usable - weights - non_torch - overhead, bytes */
    double adjust_lo, adjust_hi;   /* C - base */
    int n_vert;
    struct sw_calib_arena_vertex vert[SW_CALIB_MAX_VERT];
    char underdetermined[768];
    char why[256]; /* when inconsistent */
};

/* ---------------------------------------------------------------------------------------------
 * Headroom (memory/profile's sw_profile_headroom): the transient needs fitted from the boots'
 * outcomes. Each boot of a fork-profile endpoint is put through the profile's budget (its free
 * memory at capture, with its pinned pool or the pool the engine sized, from its printed token
 * count) and its outcome bounds a coefficient:
 *   - pinned pools: capture needs tau x seqs x (1 + MTP n); a boot that got past capture gives
 *     tau <= free / units, one that died at capture tau > free / units. A boot whose budget is
 *     overdrawn (free < 0) yet booted had its arena sized from what was left: it bounds nothing
 *     and says "0 bytes free at runtime" (the seed's five 262,144 contexts);
 *   - engine-sized pools (no KV_BYTES, one class per kv dtype x seqs x utilization x MNBT): the
 *     pool is linear in max_model_len, pool = p0 + p1 x L, fitted from the printed token counts;
 *     capture needs free >= theta, theta bounded by the class's passes and capture deaths;
 *   - the activations held when the pool is allocated, a0 + a1 x seqs x (1 + n), from the KV
 *     allocation failures that printed the free memory (free = free_kv - activation).
 * Every coefficient is an interval (open below for a failure, closed above for a pass) and
 * predictions range over it. Priors stated: tau, a0, a1 >= 0; a1 <= 2 GiB; a0 <= 16 GiB.
 */
#define SW_CALIB_HR_MAX_POINTS 32
#define SW_CALIB_HR_MAX_POOLS  4
#define SW_CALIB_HR_MAX_VERT   64

enum sw_calib_hr_use {
    SW_CALIB_HR_UNUSED = 0,  /* no headroom information (compile error, bad path, no shape) */
    SW_CALIB_HR_CAPTURE_OK,  /* got past capture: bounds tau / theta from above */
    SW_CALIB_HR_CAPTURE_OOM, /* died at capture: bounds from below */
    SW_CALIB_HR_OVERDRAWN,   /* booted with the budget overdrawn: arena from what was left */
    SW_CALIB_HR_ACTIVATION,  /* a KV allocation failure that printed its free memory */
    SW_CALIB_HR_KV_OOM,      /* a KV allocation failure without a free figure */
};
const char *sw_calib_hr_use_name(enum sw_calib_hr_use u);

struct sw_calib_hr_point {
    int64_t boot_id;
    char ext_id[96];
    enum sw_calib_hr_use use;
    bool auto_pool; /* the engine sized the pool (no KV_BYTES) */
    int pool_class; /* index into pools[], -1 for pinned */
    struct sw_headroom_shape shape;
    double pool_lo, pool_hi; /* bytes per rank (pinned: both the flag) */
    double free_lo, free_hi; /* free at capture, bytes (signed) */
    double free_kv;          /* usable - weights - non_torch - arena */
    double printed_free;     /* KV allocation failures: the free bytes printed (-1: none) */
    double units;            /* seqs x (1 + n) */
    char why[192];           /* when unused or overdrawn: why */
};

/* One 2-D feasible polygon (x + t y within bounds), by its vertices. */
struct sw_calib_hr_poly {
    int n_constraints;
    int n_vert;
    double x[SW_CALIB_HR_MAX_VERT], y[SW_CALIB_HR_MAX_VERT];
};

struct sw_calib_hr_pool {
    char kv_dtype[32];
    int64_t seqs, mnbt;
    double util;
    bool precise;
    int n_boots;                  /* boots that printed a pool (pool constraints) */
    struct sw_calib_hr_poly line; /* pool = x + L y */
    double theta_lo, theta_hi;    /* capture needs free > theta_lo (open) ... <= theta_hi */
    bool theta_lo_set, theta_hi_set;
    int n_theta_lo, n_theta_hi;
    uint64_t tried_bytes; /* the capture deaths' printed "Tried to allocate" (0: none printed) */
};

struct sw_calib_headroom {
    bool have; /* the endpoint has a fork profile with an arena and boots to read */
    struct sw_fork_profile prof;
    int n_points;
    struct sw_calib_hr_point pts[SW_CALIB_HR_MAX_POINTS];
    /* pinned pools: capture transient per unit (bytes) */
    double tau_lo, tau_hi; /* tau > tau_lo (open unless 0, the prior), tau <= tau_hi */
    bool tau_hi_set;
    int n_tau_lo, n_tau_hi;
    /* activations at KV allocation: a0 + a1 x units */
    struct sw_calib_hr_poly act;
    int n_act;
    int n_pools;
    struct sw_calib_hr_pool pools[SW_CALIB_HR_MAX_POOLS];
    bool consistent;
    char why[512]; /* when inconsistent: which bounds cross */
    char notes[768];
    uint64_t capture_tried_bytes; /* any capture death's printed "Tried to allocate" (0: none) */
};

/* ---------------------------------------------------------------------------------------------
 * SGLang (memory/sglang, docs/sglang-law.md): what the engine's recorded boots fix.
 *   - rest (the bytes mem_fraction_static leaves for KV + mamba state): a boot whose pool the
 *     engine sized ("KV Cache is allocated. #tokens: N" with no --max-total-tokens, the mamba
 *     pool fixed: "max_mamba_cache_size: N") gives rest to one cell ([lo, hi)); a pinned boot
 *     only bounds it from below (rest >= its pool + its mamba pool).
 *   - free after boot: free = F0 - (tokens + page) x cell - slots x mamba_per_req, F0 fitted
 *     from every boot that read its free memory (MiB-rounded: [free, free + 1 MiB)).
 * An unpinned shape's pool is the autofit of the calibrated rest; at another
 * mem_fraction_static the rest moves by pre_load_free x the difference, with pre_load_free
 * bounded by rest / fraction (rest <= pre_load_free x fraction) and the card: the prediction
 * then says "EXTRAPOLATES across mem_fraction_static" and is a range.
 */
#define SW_CALIB_SG_MAX 32
struct sw_calib_sglang_obs {
    int64_t boot_id;
    char ext_id[96];
    int64_t tokens;             /* printed pool */
    bool pinned;                /* --max-total-tokens capped it */
    int64_t mamba_slots;        /* printed mamba pool (0: not a hybrid) */
    double mem_fraction_static; /* 0: the engine's default for the card */
    bool has_free;
    double free_bytes; /* free on the card after the boot (a reading, MiB-rounded) */
};

struct sw_calib_sglang {
    bool have;
    int n;
    struct sw_calib_sglang_obs obs[SW_CALIB_SG_MAX];
    int64_t cell_bytes, page, mamba_per_req;
    bool have_rest;
    uint64_t rest_lo, rest_hi; /* [lo, hi) bytes */
    double rest_mfs;           /* the fraction the rest was fitted at */
    int n_rest;
    uint64_t rest_floor; /* pinned boots: rest >= this */
    bool have_free;
    double f0_lo, f0_hi; /* [lo, hi) bytes */
    int n_free;
    bool consistent;
    char why[256];
};

/* ---------------------------------------------------------------------------------------------
 * Calibration contexts: how the engine ran (host, root or rootless, runtime, the pinned-expert
 * path), recorded on a boot's shape as flags.context (a string, or an object whose members are
 * joined "key=value" in key order). The laws' free terms are fitted over every boot (the KV
 * price does not depend on who ran the engine), but what is free when the pool is allocated does:
 * the contexts are listed, a prediction for a context no fitted boot ran in warns "EXTRAPOLATES
 * across context", and two contexts of one shape give the offset of the free memory at KV
 * allocation between them (a KV allocation failure that printed its free memory in one, a boot
 * that got past the allocation in the other: the other had at least the pool's ask free).
 */
#define SW_CALIB_MAX_CTX 8
struct sw_calib_ctx {
    char label[192]; /* "" when the boots recorded none ("unrecorded") */
    int n_boots;
    int64_t boot_ids[SW_CALIB_MAX_POINTS];
};

struct sw_calib_fit {
    char endpoint[129];
    char engine[32];
    int n_boots; /* boots of the endpoint in the ledger */
    int n_kv;
    struct sw_calib_kv_fit kv[SW_CALIB_MAX_CLASSES];
    int n_nonkv;
    struct sw_calib_nonkv nonkv[SW_CALIB_MAX_NONKV];
    struct sw_calib_arena arena;
    /* The fork's KV terms over every class the config explained (they do not depend on the KV
     * dtype): the intersection of the classes' ranges. joint_classes 0 = none explained. */
    int joint_classes;
    bool joint_agree; /* the ranges meet */
    int64_t joint_bytes_lo, joint_bytes_hi, joint_blocks_lo, joint_blocks_hi;
    char notes[1024]; /* what could not be used and why */
    struct sw_calib_headroom headroom;
    /* SGLang: the ledger's boots gathered (obs, n); fitted by the caller, which knows the law's
     * options (sw_calib_sglang_fit) */
    struct sw_calib_sglang sglang;
    int n_ctx; /* the contexts the fitted boots ran in */
    struct sw_calib_ctx ctx[SW_CALIB_MAX_CTX];
};

/* The context label of a canonical (or raw) ledger shape into out ("" when none). */
const char *sw_calib_context_label(const json_t *shape, char *out, size_t n);
/* When `asked` (a label) is not among the contexts of the fitted boots: true, and warn says
 * "EXTRAPOLATES across context: ... was not fitted (fitted: ...)". */
bool sw_calib_context_warning(const struct sw_calib_fit *f, const char *asked, char *warn,
                              size_t n);
/* The free memory at KV allocation in context b minus that in context a, over boots of one shape
 * (ctx and slots and the pool equal): *lo (with *lo_set) and *hi (with *hi_set) bound it.
 * SW_ENOENT when no pair of boots of the two contexts constrains it. */
int sw_calib_context_offset(struct sw_ledger *l, const char *endpoint, const char *a, const char *b,
                            double *lo, bool *lo_set, double *hi, bool *hi_set, char *basis,
                            size_t basis_n, struct sw_err *e);

/*
 * Fit everything the ledger allows for `endpoint`. *out is allocated (free with
 * sw_calib_fit_free). Errors: SW_ENOENT (no such endpoint in the ledger), SW_EINVAL (bad
 * options), SW_EMISMATCH (boots no law value explains: the fit names the class and the boots).
 * An endpoint with boots but nothing fittable returns 0 with n_kv == n_nonkv == 0 and
 * !arena.have: the caller decides (the CLI exits 1).
 */
int sw_calib_fit(struct sw_ledger *l, const char *endpoint, const struct sw_calib_opts *opts,
                 struct sw_calib_fit **out, struct sw_err *e);
void sw_calib_fit_free(struct sw_calib_fit *f);

/* Fit one KV class from f->pts[0..n_points) (f->kv_dtype and f->tp set): the library core of
 * sw_calib_fit, which tests drive directly. config_json may be NULL (the model's config.json
 * text, for the fork-term mapping). Releases what a previous fit of f held. Returns 0 also for
 * an inconsistent class (f->consistent false, f->why says which boots contradict). */
int sw_calib_kv_fit(struct sw_calib_kv_fit *f, const char *config_json, int max_s, int max_a,
                    struct sw_err *e);
/* Free what a KV fit holds (its solutions); f stays valid with n_solutions 0. */
void sw_calib_kv_fit_release(struct sw_calib_kv_fit *f);

/* Which KV class a shape belongs to (canonical or raw shape); NULL when none. */
const struct sw_calib_kv_fit *sw_calib_kv_class(const struct sw_calib_fit *f, const json_t *shape);

/* Tokens and concurrency the engine would print for max_model_len L and a pool of kv_bytes. */
int sw_calib_kv_predict(const struct sw_calib_kv_fit *f, int64_t max_model_len, uint64_t kv_bytes,
                        struct sw_calib_kv_pred *out, struct sw_err *e);

/*
 * The smallest pool (KV_BYTES per rank) at which `seqs` requests of max_model_len fit
 * (concurrency >= seqs) for EVERY solution (hi) and for the most favourable one (lo).
 * A pool of at least *hi holds the contract whatever the free terms are.
 */
int sw_calib_kv_need(const struct sw_calib_kv_fit *f, int64_t max_model_len, int64_t seqs,
                     uint64_t *lo, uint64_t *hi, bool *extrapolated, struct sw_err *e);

/*
 * The budget of a shape of the endpoint, per device: used/free MiB with the readings they came
 * from. An exact shape that was read returns the reading (measured). Otherwise the non-KV class
 * of the same kind of shape + the law's KV for this shape; outside the class's ctx range, or
 * with only one reading, `extrapolated` and a warning. SW_ENOENT when no reading of a shape like
 * this exists (the message says which class is missing, e.g. "no reading with flags.mmproj").
 */
int sw_calib_budget(const struct sw_calib_fit *f, const json_t *shape,
                    const struct sw_calib_opts *opts, struct sw_calib_budget *out,
                    struct sw_err *e);

/* The law's KV (+ recurrent) MiB for a shape of a llama.cpp endpoint, and how it was computed.
 * Needs an arch: opts->config_path or the endpoint's inline arch. */
int sw_calib_llamacpp_kv(const json_t *shape, const struct sw_calib_opts *opts, double *kv_mib,
                         char *how, size_t how_n, struct sw_err *e);

/* Predicted arena slots at max_model_len: range over the fitted constants. */
int sw_calib_arena_predict(const struct sw_calib_arena *a, int64_t max_model_len,
                           struct sw_calib_range *slots, struct sw_err *e);
/* Does a declared profile (C = usable - weights - non_torch - overhead + adjust, r, slot) lie in
 * the feasible set? *slots_ok says whether it reproduces every printed slot count. */
int sw_calib_arena_check(const struct sw_calib_arena *a, double c, double r, double slot,
                         bool *reproduces, struct sw_err *e);

/* What the headroom model predicts for a shape of the endpoint. */
enum sw_calib_hr_verdict {
    SW_CALIB_HR_FITS = 0,      /* boots, and the free at capture covers the fitted need's top */
    SW_CALIB_HR_KV_FAILS,      /* the pool does not fit what is free when it is allocated */
    SW_CALIB_HR_CAPTURE_FAILS, /* free at capture below the fitted need's bottom */
    SW_CALIB_HR_CAPTURE_RISK,  /* within the need's interval: not known to fit */
    SW_CALIB_HR_RUNTIME_FAILS, /* budget overdrawn: boots, 0 bytes free, the first long request
                                  dies */
    SW_CALIB_HR_UNKNOWN,       /* nothing fitted for a shape like this */
};
const char *sw_calib_hr_verdict_name(enum sw_calib_hr_verdict v);

struct sw_calib_hr_pred {
    enum sw_calib_hr_verdict verdict;
    struct sw_headroom_budget budget; /* at the pool's point */
    bool auto_pool;
    double pool_lo, pool_hi, pool_point; /* bytes per rank */
    double free_lo, free_hi;             /* free at capture */
    double need_lo, need_hi;             /* capture transient (pinned) or theta (engine-sized) */
    bool need_hi_set;
    double act_lo, act_hi;         /* activations at KV allocation */
    double kv_free_lo, kv_free_hi; /* free for the pool when it is allocated */
    double kv_ask;                 /* the pool asked (pinned) */
    bool extrapolated;
    char why[768]; /* the verdict in words, with the numbers */
};

/*
 * Predict a shape's headroom. kv_dtype is the shape's ("auto", "fp8"); s->pool is the pinned pool
 * (0: engine-sized, predicted from the class's pool line). SW_ENOENT when the fit has no headroom
 * model (no fork profile, no boots); an engine-sized pool with no class like it is UNKNOWN.
 */
int sw_calib_headroom_predict(const struct sw_calib_fit *f, const struct sw_headroom_shape *s,
                              const char *kv_dtype, struct sw_calib_hr_pred *out, struct sw_err *e);
/* The headroom fit as JSON (coefficients, classes, every boot's use). New reference. */
json_t *sw_calib_headroom_json(const struct sw_calib_headroom *h);
/* The headroom shape of a canonical (or raw) ledger shape: ctx, slots, mnbt, kv_bytes,
 * gpu_memory_utilization, flags.expert_precise_memory, flags.spec_tokens / num_speculative_tokens.
 * *kv_dtype points into the shape (or "auto"). */
int sw_calib_headroom_shape(const json_t *canon, struct sw_headroom_shape *s,
                            const char **kv_dtype);

/* The SGLang observations of an endpoint: its measured facts (free_at_boot, autofit_tokens: of
 * the declared shape, whose printed pool, pin, mamba slots and fraction `declared` gives) and the
 * ledger's SGLang boots (`boots` as sw_ledger_boots full gives them: "KV Cache is allocated"'s
 * report.max_total_num_tokens, report.mamba_pool_size, the shape's kv_tokens pin) with the free
 * memory of their usage readings (`usage`: sw_ledger_export's "usage"). Any may be NULL. Appends
 * to obs[*n..max). */
void sw_calib_sglang_gather(const struct sw_fleet_endpoint *ep,
                            const struct sw_calib_sglang_obs *declared, const json_t *boots,
                            const json_t *usage, struct sw_calib_sglang_obs *obs, int max, int *n);

/* Fit from obs[0..n) under the shape o (its arch c): obs excluded by co->exclude are left out.
 * Returns 0 also for an inconsistent set (out->consistent false, out->why names the boots). */
int sw_calib_sglang_fit(const struct sw_hf_config *c, const struct sw_sglang_opts *o,
                        const struct sw_calib_sglang_obs *obs, int n,
                        const struct sw_calib_opts *co, struct sw_calib_sglang *out,
                        struct sw_err *e);

struct sw_calib_sglang_pred {
    bool autofit;                 /* the engine sizes the pool (no --max-total-tokens) */
    int64_t tokens_lo, tokens_hi; /* the pool it prints */
    bool tokens_open;             /* no rest fitted: only the lower bound is known */
    int64_t mamba_slots;
    double rest_lo, rest_hi; /* bytes (rest at the shape's fraction) */
    bool have_free;
    double free_lo, free_hi; /* bytes after the boot */
    bool would_oom;          /* free_lo < 0: the card cannot hold what the boot allocates */
    bool extrapolated;
    char warning[256];
};

/* The pool and the free memory a shape o (max_total_tokens 0 = autofit) would boot with. SW_ENOENT
 * when an unpinned shape has no fitted rest and no pinned floor. */
int sw_calib_sglang_predict(const struct sw_calib_sglang *s, const struct sw_hf_config *c,
                            const struct sw_sglang_opts *o, struct sw_calib_sglang_pred *out,
                            struct sw_err *e);

/* A one-paragraph summary of the fit (terms, geometry, residuals), for a ledger note. Writes into
 * out (truncated to n); returns out. */
const char *sw_calib_fit_summary(const struct sw_calib_fit *f, char *out, size_t n);

/* The fit as JSON (every term, residual, geometry and what each boot taught). New reference. */
json_t *sw_calib_fit_json(const struct sw_calib_fit *f);
json_t *sw_calib_budget_json(const struct sw_calib_budget *b);
/* A calibration document (`slipway calibrate --json`: sw_calib_fit_json + "predictions") as an
 * SVG: per KV class, each fitted boot's printed tokens beside the fit, then each prediction with
 * its interval. SW_ENOENT when no class has boots. */
int sw_calib_svg(const json_t *doc, const char *path, struct sw_err *e);
json_t *sw_calib_kv_pred_json(const struct sw_calib_kv_pred *p);

/*
 * `slipway calibrate` as one call: load the fleet (when named) for the endpoint's arch and
 * profile, open the ledger (read-only unless `record`), fit, then the predictions, needs and
 * budget asked for, and (record) the fit's summary as a note on the endpoint.
 */
struct sw_calib_request {
    const char *endpoint;    /* required */
    const char *fleet_path;  /* NULL: no fleet (no inline arch, no profile) */
    const char *ledger_path; /* NULL: sw_ledger_default_path(fleet_path) */
    const char *config_path; /* overrides the endpoint's arch (sw_calib_opts.config_path) */
    int max_state_blocks;    /* 0: the default bound */
    const int64_t *exclude;  /* boot ids left out of every fit */
    int n_exclude;
    const int64_t *predict_len; /* predict at max_model_len predict_len[i], pool predict_kv[i] */
    const uint64_t *predict_kv;
    int n_predict;
    const int64_t *need_seqs; /* the pool at which need_seqs[i] requests of need_len[i] fit */
    const int64_t *need_len;
    int n_need;
    const char *budget_path; /* a SHAPE.json whose per-device budget is wanted, or NULL */
    bool record;             /* write the fit's summary as a note on the endpoint */
    const char *context;     /* how the predicted boots would run (a context label), or NULL */
};

/* What sw_calib_run found. Release with sw_calib_result_free (also after a failed run). */
struct sw_calib_result {
    struct sw_calib_fit *fit; /* owned */
    json_t *doc;              /* owned: sw_calib_fit_json + "predictions", "needs" (+ "budget") */
    char ledger_path[4096];
    bool nothing;      /* no KV pool, usage reading or arena could be fitted */
    bool inconsistent; /* a KV class (or the arena) has boots no law value explains */
    int64_t note_id;   /* the note `record` wrote, 0 when none */
};

/* Errors: SW_ENOENT (no fleet, endpoint, ledger or record), SW_EINVAL (a bad option), the
 * ledger's and the budget's. A fit that explains nothing is not an error: see `nothing`. */
int sw_calib_run(const struct sw_calib_request *rq, struct sw_calib_result *out, struct sw_err *e);
void sw_calib_result_free(struct sw_calib_result *r);

#ifdef __cplusplus
}
#endif
#endif
