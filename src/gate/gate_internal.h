/*
 * gate internals: the run the gates share (the endpoint's plan view, sw_plan_view from plan/, its
 * ledger shape and the ledger's evidence), the result helpers (gate.c), and the gates.
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

/* The gate list being built. */
struct sw__gate_run {
    const struct sw_fleet *f;
    const struct sw_fleet_endpoint *ep;
    const struct sw_gate_opts *o;
    struct sw_plan_view plan; /* the endpoint's plan, as plan/ views it */
    json_t *shape;            /* the endpoint's ledger shape (canonical) */
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

/* The gates, one file each. Each appends one or more results; returns 0 or an unusable-input
 * error. */
int sw__gate_band(struct sw__gate_run *r, struct sw_err *e); /* band.c */
/* band_sglang.c: an SGLang endpoint's band from its calibration; *handled false: the generic
 * band runs (no facts, no law). */
int sw__gate_band_sglang(struct sw__gate_run *r, bool *handled, struct sw_err *e);
int sw__gate_pool(struct sw__gate_run *r, struct sw_err *e);      /* pool.c */
int sw__gate_arena(struct sw__gate_run *r, struct sw_err *e);     /* arena.c */
int sw__gate_headroom(struct sw__gate_run *r, struct sw_err *e);  /* headroom.c */
int sw__gate_window(struct sw__gate_run *r, struct sw_err *e);    /* window.c */
int sw__gate_known_bad(struct sw__gate_run *r, struct sw_err *e); /* known_bad.c */
int sw__gate_payload(struct sw__gate_run *r, struct sw_err *e);   /* payload.c */
int sw__gate_unit(struct sw__gate_run *r, struct sw_err *e);      /* unit.c */
int sw__gate_patches(struct sw__gate_run *r, struct sw_err *e);   /* patch.c */

/* "1,153 MiB", "18.4 GiB" style helpers (out returned). */
const char *sw__gate_mib(double bytes, char *out, size_t n);
const char *sw__gate_gib(double bytes, char *out, size_t n);

#endif
