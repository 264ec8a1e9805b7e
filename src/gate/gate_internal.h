/*
 * gate internals: one engine-neutral view of what the law predicts for an endpoint (plan.c), the
 * ledger evidence the gates read (evidence.c), and the gates (gates.c).
 */
#ifndef SW_GATE_INTERNAL_H
#define SW_GATE_INTERNAL_H

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/profile.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

#define SW__GATE_MAX_DEV 8

/* What the engine's law says about this endpoint's shape. ok false: the law could not run, `why`
 * says why (every gate that needs it skips with that reason). */
struct sw__gate_plan {
    bool ok;
    char why[768];
    enum sw_fleet_engine engine;
    /* the pool */
    uint64_t slots;       /* SEQS */
    uint64_t maxlen;      /* tokens one request may hold (llama.cpp n_ctx_slot, vLLM L) */
    uint64_t pool_tokens; /* llama.cpp: cells over all slots; vLLM: printed GPU KV tokens */
    bool shared;          /* slots share one pool (vLLM, llama.cpp unified) */
    bool pinned; /* the pool size is fixed by a flag (llama.cpp -c, --kv-cache-memory-bytes) */
    uint64_t kv_bytes; /* per device / rank, summed KV caches */
    uint64_t recurrent_bytes;
    double kv_price;     /* attention KV bytes per token (per rank) */
    char price_how[256]; /* how the price was derived, for the verdict line */
    struct sw_plan plan; /* the endpoint's plan (plan/): what `slipway plan FLEET` shows */
    /* llama.cpp */
    const struct sw_llamacpp_plan *lp;
    uint32_t kv_layers;
    /* vLLM */
    const struct sw_vllm_report *vr;
    struct sw_fork_profile prof;
    bool has_prof;
    int64_t stride; /* bytes of one block across a group (page x group size) */
    int64_t max_mnbt;
    /* devices the law put memory on, in the endpoint's order */
    int n_dev;
    struct {
        const struct sw_fleet_device *dev;
        uint64_t capacity; /* memory_total (what nvidia-smi/rocm-smi print as total) */
        uint64_t kv;       /* KV caches on this device */
        uint64_t rec;      /* recurrent state on this device */
        /* llama.cpp: the draft model (-md: its weights, KV and compute) and the projector
         * (--mmproj: weights and encoder compute) the law priced on this device */
        uint64_t draft_weights, draft_kv, draft_compute, projector;
    } dev[SW__GATE_MAX_DEV];
};

int sw__gate_plan(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p, struct sw_err *e);
void sw__gate_plan_free(struct sw__gate_plan *p);

/* The gate list being built. */
struct sw__gate_run {
    const struct sw_fleet *f;
    const struct sw_fleet_endpoint *ep;
    const struct sw_gate_opts *o;
    struct sw__gate_plan plan;
    json_t *shape; /* the endpoint's ledger shape (canonical) */
    char hash[SW_LEDGER_HASH_LEN + 1];
    json_t *boots;            /* the endpoint's boots from the ledger (full), or NULL */
    json_t *known_bad;        /* sw_ledger_known_bad for the endpoint, or NULL */
    json_t *gates;            /* the result array */
    struct sw_calib_fit *fit; /* calibration of the endpoint from the ledger, or NULL */
    char fit_why[512];        /* why there is none */
};

/* Append a gate result; fmt is the verdict line. Returns the new object (borrowed) or NULL. */
json_t *sw__gate_add(struct sw__gate_run *r, const char *gate, enum sw_gate_verdict v,
                     const char *fmt, ...) SW_PRINTF(4, 5);
/* Set "fix" of a gate result. */
void sw__gate_fix(json_t *g, const char *fmt, ...) SW_PRINTF(2, 3);
/* Add a number (integer or real) under "numbers". */
void sw__gate_num(json_t *g, const char *k, double v);
void sw__gate_str(json_t *g, const char *k, const char *v);
/* Append a piece of evidence (stolen). */
void sw__gate_evidence(json_t *g, json_t *ev);

/* The gates. Each appends one or more results; returns 0 or an unusable-input error. */
int sw__gate_band(struct sw__gate_run *r, struct sw_err *e);
/* band_sglang.c: an SGLang endpoint's band from its calibration; *handled false: the generic
 * band runs (no facts, no law). */
int sw__gate_band_sglang(struct sw__gate_run *r, bool *handled, struct sw_err *e);
int sw__gate_pool(struct sw__gate_run *r, struct sw_err *e);
int sw__gate_arena(struct sw__gate_run *r, struct sw_err *e);
int sw__gate_headroom(struct sw__gate_run *r, struct sw_err *e); /* headroom.c */
int sw__gate_window(struct sw__gate_run *r, struct sw_err *e);
int sw__gate_known_bad(struct sw__gate_run *r, struct sw_err *e);
int sw__gate_payload(struct sw__gate_run *r, struct sw_err *e);
int sw__gate_unit(struct sw__gate_run *r, struct sw_err *e); /* unit.c */
int sw__gate_patches(struct sw__gate_run *r, struct sw_err *e);

/* "1,153 MiB", "18.4 GiB" style helpers (out returned). */
const char *sw__gate_mib(double bytes, char *out, size_t n);
const char *sw__gate_gib(double bytes, char *out, size_t n);

#endif
