/*
 * tune's internals shared by its files: the probe (boot a candidate's plan, measure the
 * objective) and the report writers. Never included by another module.
 */
#ifndef SLIPWAY_TUNE_INTERNAL_H
#define SLIPWAY_TUNE_INTERNAL_H

#include <slipway/fleet.h>
#include <slipway/plan.h>
#include <slipway/tune.h>

#define SW__TUNE_MAX_REPEATS 16
#define SW__TUNE_MAX_LEVELS  8

/* What one probe measured: per concurrency level, its repeats; the best level's median. */
struct sw__tune_measure {
    int levels[SW__TUNE_MAX_LEVELS];
    size_t nlevels;
    double v[SW__TUNE_MAX_LEVELS][SW__TUNE_MAX_REPEATS];
    size_t nv[SW__TUNE_MAX_LEVELS];
    double median[SW__TUNE_MAX_LEVELS];
    size_t best;  /* index of the best level */
    double score; /* the best level's median */
    double noise; /* its relative spread: interquartile range / median */
    double boot_s;
    char url[320];
    char why[1400]; /* a boot or bench failure: what happened */
    char log[4096];
};

enum sw__tune_probe_rc {
    SW__TUNE_MEASURED = 0,
    SW__TUNE_BOOT_FAILED = 1,
    SW__TUNE_BENCH_FAILED = 2,
};

/* Boot the candidate's plan (ep as modified, p its plan), measure the objective at each
 * concurrency level o allows up to `slots`, stop it. Returns a sw__tune_probe_rc (m->why says
 * why for a failure), or a negative SW_E* for a failure of slipway itself (SW_EINTR when
 * o->stop was set). seq names the log. */
int sw__tune_probe(const struct sw_tune_opts *o, enum sw_tune_boot boot, const char *run_dir,
                   const struct sw_fleet_endpoint *ep, const struct sw_plan *p, int slots, int seq,
                   struct sw__tune_measure *m, struct sw_err *e);

/*
 * A range knob refined around its best point: the points tried so far (xs, any order; scores
 * NAN for a point that was not measured: rejected by a gate, failed to boot) and the range
 * [lo, hi] on step (0: any; is_real: a real-valued knob). Writes at most two new points to out
 * (the midpoints, on the step, between the best measured point and its tried neighbours on each
 * side, when one fits strictly between them) and returns how many. No measured point: none.
 */
size_t sw__tune_refine(double lo, double hi, double step, bool is_real, const double *xs,
                       const double *scores, size_t n, double out[2]);

/* Median and relative spread of n values (n >= 1). */
void sw__tune_stats(const double *v, size_t n, double *median, double *noise);

#endif
