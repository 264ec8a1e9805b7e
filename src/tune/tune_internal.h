/*
 * tune's internals shared by its files: the probe (boot a candidate's plan, measure the
 * objective), the refinement's arithmetic, and how an endpoint's settings read as knob values
 * (the space, the candidates and apply read them alike). The run's own state is
 * tune_run_internal.h. Never included by another module.
 */
#ifndef SLIPWAY_TUNE_INTERNAL_H
#define SLIPWAY_TUNE_INTERNAL_H

#include <slipway/fleet.h>
#include <slipway/plan.h>
#include <slipway/tune.h>

#define SW__TUNE_MAX_REPEATS 16
#define SW__TUNE_MAX_LEVELS  8

#define SW__TUNE_MAX_MIXES 4

/* One request of the load-side mix (the `load.mix` knob: "DEPTH/TOKENS"): prompt depth and
 * generated tokens. Without a declared mix, the one mix is the objective's depth and --tokens. */
struct sw__tune_mix {
    char name[40];
    int64_t depth, tokens;
};

/* What one probe measured: per request mix and concurrency level, its repeats; per mix the best
 * level's median; the probe's score over the mixes. */
struct sw__tune_measure {
    int levels[SW__TUNE_MAX_LEVELS];
    size_t nlevels;
    size_t nmix;
    double v[SW__TUNE_MAX_MIXES][SW__TUNE_MAX_LEVELS][SW__TUNE_MAX_REPEATS];
    size_t nv[SW__TUNE_MAX_MIXES][SW__TUNE_MAX_LEVELS];
    double median[SW__TUNE_MAX_MIXES][SW__TUNE_MAX_LEVELS];
    size_t mix_best[SW__TUNE_MAX_MIXES];  /* per mix: index of its best level */
    double mix_score[SW__TUNE_MAX_MIXES]; /* per mix: the best level's median */
    double mix_noise[SW__TUNE_MAX_MIXES]; /* its relative spread */
    size_t best;                          /* index of the best level (the first mix's) */
    double score; /* one mix: its score; several: their geometric mean (a ratio of two probes'
                   * scores is then the geometric mean of the per-mix ratios, whatever each
                   * mix's scale) */
    double noise; /* the largest per-mix noise */
    double boot_s;
    char url[320];
    char unix_socket[108]; /* the route's forward when the endpoint is reached through its host */
    char why[1400];        /* a boot or bench failure: what happened */
    char log[4096];
    /* rollout: what the deploy did (outcome name, the ledger's attempt, the committed tag) */
    char deploy_outcome[32];
    char deploy_class[64];
    char deploy_tag[160];
    int64_t deploy_attempt;
    bool deploy_serving;
    bool deployed; /* a deploy ran (deploy_* are set) */
};

struct sw_ledger;

enum sw__tune_probe_rc {
    SW__TUNE_MEASURED = 0,
    SW__TUNE_BOOT_FAILED = 1,
    SW__TUNE_BENCH_FAILED = 2,
};

/* Boot the candidate's plan (ep as modified, p its plan), measure the objective at each
 * concurrency level o allows up to `slots`, stop it. Returns a sw__tune_probe_rc (m->why says
 * why for a failure), or a negative SW_E* for a failure of slipway itself (SW_EINTR when
 * o->stop was set). seq names the log. The rollout runner deploys ep of f (the candidate's
 * fleet) on its host, recording its attempt in ledger (NULL: not recorded). */
int sw__tune_probe(const struct sw_tune_opts *o, enum sw_tune_boot boot, const char *run_dir,
                   const struct sw_fleet *f, struct sw_ledger *ledger,
                   const struct sw_fleet_endpoint *ep, const struct sw_plan *p, int slots,
                   const struct sw__tune_mix *mixes, size_t nmix, int seq,
                   struct sw__tune_measure *m, struct sw_err *e);

/* "DEPTH/TOKENS" (counts as sw_parse_count reads them: 512/64, 4k/256) into mx. SW_EINVAL. */
int sw__tune_mix_parse(const char *s, struct sw__tune_mix *mx, struct sw_err *e);

/*
 * A range knob refined around its best point: the points tried so far (xs, any order; scores
 * NAN for a point that was not measured: rejected by a gate, failed to boot) and the range
 * [lo, hi] on step (0: any; is_real: a real-valued knob). Writes at most two new points to out
 * (the midpoints, on the step, between the best measured point and its tried neighbours on each
 * side, when one fits strictly between them) and returns how many. No measured point: none.
 */
size_t sw__tune_refine(double lo, double hi, double step, bool is_real, const double *xs,
                       const double *scores, size_t n, double out[2]);

/* Is arg the flag, or llama-server's short spelling of it (-t for --threads...)? */
bool sw__tune_flag_is(const char *arg, const char *flag);
/* The index of args[from..] that spells flag (*joined: as "--flag=value"), or ep->n_args. */
size_t sw__tune_arg_find(const struct sw_fleet_endpoint *ep, const char *flag, size_t from,
                         bool *joined);
/* What the endpoint says for an engine flag (its value in args; "on" for a flag given bare;
 * "" when absent), an environment variable, and a shape value, as tune names knob values
 * (tune_space.c). */
void sw__tune_arg_value(const struct sw_fleet_endpoint *ep, const char *flag, char *out, size_t n);
void sw__tune_env_value(const struct sw_fleet_endpoint *ep, const char *name, char *out, size_t n);
void sw__tune_fmt_value(const struct sw_fleet_value *v, char *out, size_t n);

/* Median and relative spread of n values (n >= 1). */
void sw__tune_stats(const double *v, size_t n, double *median, double *noise);

#endif
