/*
 * ladder's internals shared by its files (src/tune/ladder*.c): the run's state (struct
 * sw__ladder) and the rooms that read and move it: the names and the knob on the endpoint
 * (ladder_names.c), the grid and its two proven bounds (ladder_bounds.c), the law's prediction
 * (ladder_law.c), the ledger as the run's memory (ladder_journal.c), the runners' shared steps
 * (ladder_run.c, ladder_cgroup.c). Never included by another module.
 */
#ifndef SLIPWAY_TUNE_LADDER_INTERNAL_H
#define SLIPWAY_TUNE_LADDER_INTERNAL_H

#include <slipway/ladder.h>

struct sw_fleet_endpoint;
struct sw_fleet_u64;

/* One ladder run: the endpoint it moves, the grid, the two proven bounds and what the boots
 * measured of the law's constant. */
struct sw__ladder {
    const struct sw_fleet *f;
    struct sw_fleet_endpoint *ep;
    const struct sw_ladder_opts *o;
    struct sw_ladder_result *r;
    int64_t n_grid;
    unsigned char *skip; /* [n_grid] */
    int64_t good, bad;   /* grid indices; -1 / n_grid when none */
    int64_t next_hint;   /* an engine-given next rung (index), -1 none */
    bool have_meas;
    double meas_lo, meas_hi; /* a as measured by passing boots */
    /* predict, then confirm: while only one bound is proven, the next rung walks from it
     * toward the other side (1, 1, 2, 4, ... grid steps) instead of halving the whole range */
    bool walk;
    int walk_n;
};

/* ladder_names.c: the knob's shape field on the endpoint, and setting it (sw_gate_set with the
 * knob's shape field). */
struct sw_fleet_u64 *sw__ladder_knob_field(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k);
int sw__ladder_set(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k, int64_t v,
                   struct sw_err *e);

/* ladder_bounds.c: the grid from the fleet's range or the options (its skip map allocated: freed
 * with sw_free(L->skip)), a grid value, and the largest grid index at or below v (-1 below). */
int sw__ladder_grid_setup(struct sw__ladder *L, struct sw_err *e);
int64_t sw__ladder_grid_val(const struct sw__ladder *L, int64_t i);
int64_t sw__ladder_grid_floor(const struct sw__ladder *L, double v);
/* The proven bounds as values: the largest good, the smallest bad (-1: none yet). */
int64_t sw__ladder_good(const struct sw__ladder *L);
int64_t sw__ladder_bad(const struct sw__ladder *L);
/* Apply one rung's verdict (its class, the engine's own maximum) to the bounds. */
void sw__ladder_learn(struct sw__ladder *L, int64_t v, enum sw_ladder_class cls,
                      int64_t engine_max);
/* The next rung's grid index, -1 when converged. first: no rung was run yet. */
int64_t sw__ladder_choose(struct sw__ladder *L, bool first);

/* ladder_law.c: the linear need law from the engine's memory law; the prediction (into L->r);
 * what a boot taught the law. */
void sw__ladder_law_setup(struct sw__ladder *L);
void sw__ladder_predict(struct sw__ladder *L);
void sw__ladder_recalibrate(struct sw__ladder *L, int64_t v, enum sw_ladder_class cls,
                            uint64_t peak, uint64_t tried, uint64_t freeb);

/* ladder_journal.c: write a rung to the ledger; read a run's rungs back, rebuilding the bounds
 * and the law. */
int sw__ladder_record(struct sw__ladder *L, struct sw_ladder_rung *g,
                      const struct sw_ladder_outcome *oc, struct sw_err *e);
int sw__ladder_resume(struct sw__ladder *L, struct sw_err *e);

/* ladder_run.c: a number for this process's run files (logs, cgroups), never the same twice. */
unsigned sw__ladder_next_seq(void);

/* ladder_cgroup.c: a memory cgroup of its own for one rung, under this process's cgroup
 * (cgroup v1's memory controller or v2), with no swap to hide in. */
struct sw__ladder_cg {
    char dir[4200]; /* "" when none */
    bool v2;
};
int sw__ladder_cg_create(uint64_t limit, struct sw__ladder_cg *g, struct sw_err *e);
/* Its peak usage and its OOM kills (0 when unreadable). */
uint64_t sw__ladder_cg_peak(const struct sw__ladder_cg *g);
uint64_t sw__ladder_cg_ooms(const struct sw__ladder_cg *g);
/* Remove it (its engine reaped). */
void sw__ladder_cg_remove(struct sw__ladder_cg *g);

#endif
