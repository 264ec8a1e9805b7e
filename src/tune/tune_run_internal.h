/*
 * One tune run's state, shared by the files that decide it: the run (tune.c), the space
 * (tune_space.c), a candidate made (tune_candidate.c), the judge (tune_judge.c), the journal
 * (tune_journal.c), the search (tune_search.c), the crowning re-measure (tune_crown.c) and the
 * host a rollout run leaves behind (tune_host.c). Never included by another module.
 *
 * Typed inside, JSON at the edges: what the search decides from (a candidate's knobs and values,
 * each probe's phase, outcome, score and noise) is struct sw__tune_verdict; a probe's JSON is what
 * goes to the report and to the journal's evidence, and what a resumed run reads back from it.
 */
#ifndef SLIPWAY_TUNE_RUN_INTERNAL_H
#define SLIPWAY_TUNE_RUN_INTERNAL_H

#include "tune_internal.h"

#include <slipway/ledger.h>

#define SW__TUNE_MAX_KNOBS    24
#define SW__TUNE_MAX_VALUES   12
#define SW__TUNE_MAX_SETTINGS 8
#define SW__TUNE_MAX_CANDS    160
/* At most 1 baseline + 160 singles + 288 refined points (24 knobs x 12 values) + 160 combinations
 * + 2 x 320 ranked winners re-measured (and their fresh baselines) probes in one run. */
#define SW__TUNE_MAX_PROBES 2048

enum sw__tune_knob_kind { SW__TUNE_SHAPE, SW__TUNE_ARG, SW__TUNE_ENV, SW__TUNE_LOAD };

/* One declared knob: its values as tune names them (the declared ones first, then the points a
 * range was refined to), the baseline's value, and "name=value" for each (kept for the run). */
struct sw__tune_knob {
    const char *name; /* the fleet's (canonical) knob name */
    enum sw__tune_knob_kind kind;
    struct sw_fleet_at at;
    char values[SW__TUNE_MAX_VALUES][64];
    size_t nvalues;
    char baseline[64]; /* "" when the endpoint does not set it (the engine's default) */
    char kv[SW__TUNE_MAX_VALUES][160]; /* "name=value" for sw_gate_set */
    bool is_range, is_real;            /* a range: refined around its best point */
    double lo, hi, step;
    size_t ncoarse; /* values[0..ncoarse) are the declared ones; the rest were refined */
};

/* A candidate: the baseline with a few knobs moved (knob and value indices into the space);
 * key names it in the journal ("batch_size=512 arg.--threads=4", "baseline" for none). */
struct sw__tune_cand {
    int knob[SW__TUNE_MAX_SETTINGS];
    int value[SW__TUNE_MAX_SETTINGS];
    size_t n;
    char key[1024];
};

enum sw__tune_phase {
    SW__TUNE_PH_BASELINE,
    SW__TUNE_PH_SINGLE,
    SW__TUNE_PH_COMBO,
    SW__TUNE_PH_REBASE, /* the baseline booted again before a winner's re-measure */
    SW__TUNE_PH_REMEASURE,
};

/* A probe's outcome, as the report names it (sw__tune_outcome_name). */
enum sw__tune_outcome {
    SW__TUNE_OC_NONE, /* a journal's probe that names no outcome */
    SW__TUNE_OC_PLANNED,
    SW__TUNE_OC_REJECTED,
    SW__TUNE_OC_BOOT_FAILED,
    SW__TUNE_OC_BENCH_FAILED,
    SW__TUNE_OC_MEASURED,
    SW__TUNE_OC_OTHER, /* an outcome this code does not name */
};

/* What was decided of one candidate in one phase. json is its probe as the report and the
 * journal hold it (a reference owned by the run's probe list). */
struct sw__tune_verdict {
    struct sw__tune_cand c;
    enum sw__tune_phase phase;
    enum sw__tune_outcome outcome;
    double score, noise, gain; /* NAN when not measured (gain: over the first baseline) */
    char deploy_tag[160];      /* the tag of a committed rollout deploy, "" otherwise */
    json_t *json;
};

struct sw__tune_run {
    const struct sw_tune_opts *o;
    enum sw_tune_boot boot;
    int budget; /* boots, re-measures included */
    struct sw__tune_knob ks[SW__TUNE_MAX_KNOBS];
    size_t nk;
    struct sw__tune_mix mixes[SW__TUNE_MAX_MIXES]; /* load.mix: swept inside every boot */
    size_t nmix;
    struct sw_fleet *base_f;
    const struct sw_fleet_endpoint *base;
    struct sw_ledger ledger;
    bool have_ledger;
    int64_t run_id;
    json_t *prior; /* the journal's probes of a resumed run */
    int seq;
    int boots, rejected;
    json_t *probes;     /* the report's list, in the order decided */
    json_t *base_gates; /* the baseline's gate verdicts (gate's JSON) */
    struct sw__tune_verdict *verdicts[SW__TUNE_MAX_PROBES]; /* one per probe of the list, the
                                                             * same order (each sw_malloc'd) */
    size_t nverdicts;
    char run_dir[4096];
    double base_score, base_noise;
    bool have_base;
    bool interrupted;
    bool budget_hit;     /* a candidate that passed its gates was left unbooted */
    int refine_round;    /* the probes judged now refine a range (their "refine" round), or 0 */
    const char *outcome; /* the report's outcome once decided */
    const struct sw__tune_verdict *winner, *winner_again; /* crowned, and its re-measure */
};

/* tune.c: a progress line for people (o->progress; nothing when NULL). */
void sw__tune_note(const struct sw__tune_run *r, const char *fmt, ...) SW_PRINTF(2, 3);
/* A number for the report: null when it is not finite. */
json_t *sw__tune_jnum(double v);
/* The report's outcome, set in r and in rep at once. */
void sw__tune_set_outcome(struct sw__tune_run *r, json_t *rep, const char *outcome);

/* tune_space.c: the knobs of the base endpoint (and the load mixes) into r; a knob that would
 * move what tune never moves is refused with its fleet position. */
int sw__tune_space_build(struct sw__tune_run *r, struct sw_err *e);
/* Add a value to a knob (ignored when known or when the knob is full); its kv entry too. */
void sw__tune_knob_add(struct sw__tune_knob *k, const char *v);
/* The candidate of one knob at one value. */
void sw__tune_cand_single(struct sw__tune_cand *c, size_t k, size_t v);
/* c's settings as the report names them, {knob: value} (new reference). */
json_t *sw__tune_cand_settings(const struct sw__tune_run *r, const struct sw__tune_cand *c);
/* Sort c's settings in knob order and write its key. */
void sw__tune_cand_key(const struct sw__tune_knob *ks, struct sw__tune_cand *c);
/* The report's "knobs" (new reference) and the journal's name of the space (hashed). */
json_t *sw__tune_space_json(const struct sw__tune_run *r);
void sw__tune_space_key(const struct sw__tune_run *r, char *out, size_t n);

/* tune_candidate.c: a candidate made on a fresh load of the fleet. */
struct sw__tune_made {
    struct sw_fleet *f;
    struct sw_fleet_endpoint *ep;
    struct sw_fleet_str *args; /* ours, when an arg. knob moved */
    struct sw_fleet_envvar *env;
    char *strs[SW__TUNE_MAX_SETTINGS * 2];
    size_t nstrs;
    struct sw_plan plan;
    bool planned;
    int plan_rc;
};
/* Load the fleet afresh and make c's settings on the endpoint; free with sw__tune_made_free
 * (also after an error). */
int sw__tune_make(const struct sw__tune_run *r, const struct sw__tune_cand *c,
                  struct sw__tune_made *m, struct sw_err *e);
void sw__tune_made_free(struct sw__tune_made *m);
/* NULL when every frozen setting of ep equals the baseline's, else the first that moved. */
const char *sw__tune_frozen_moved(const struct sw_fleet_endpoint *base,
                                  const struct sw_fleet_endpoint *ep);

/* tune_judge.c: judge one candidate in a phase (docs/tune.md "Candidates, gates, boots"): a
 * probe the journal already decided is taken from it; else planned and gated (and the frozen
 * guard), a rejected one recorded and never booted, and with `boot` set and the budget allowing,
 * booted and measured. *out (owned by r) is the verdict, or NULL when nothing was decided (a
 * candidate that passed its gates, not booted: boot unset, or no budget left). */
int sw__tune_judge(struct sw__tune_run *r, struct sw__tune_cand *c, enum sw__tune_phase phase,
                   bool boot, const struct sw__tune_verdict **out, struct sw_err *e);
/* A verdict that passed its gates and is not decided yet (NULL, planned, no outcome). */
bool sw__tune_undecided(const struct sw__tune_verdict *v);
bool sw__tune_measured(const struct sw__tune_verdict *v);
const char *sw__tune_phase_name(enum sw__tune_phase ph);
const char *sw__tune_outcome_name(enum sw__tune_outcome oc);

/* tune_journal.c: the ledger's tune_runs / tune_probes for this run. Open the ledger (path: where
 * it is; a dry run reads one only if it exists) and, unless a dry run, begin the run of this
 * space or resume it (*resumed): its probes into r->prior, r->seq and r->boots counted on. */
int sw__tune_journal_open(struct sw__tune_run *r, const char *space, char *path, size_t n,
                          bool *resumed, struct sw_err *e);
/* The journal's probe of key in phase (the last one), or NULL. */
const json_t *sw__tune_journal_prior(const struct sw__tune_run *r, const char *key,
                                     enum sw__tune_phase phase);
/* Write a decided probe (nothing without a ledger or in a dry run). */
int sw__tune_journal_record(struct sw__tune_run *r, const json_t *p, struct sw_err *e);
/* A probe's evidence read back into its verdict (outcome, score, noise, gain, deploy tag). */
void sw__tune_verdict_from_json(struct sw__tune_verdict *v, const json_t *p);
/* Close the run in the journal unless it stays open (interrupted, budget). */
int sw__tune_journal_finish(struct sw__tune_run *r, const json_t *rep, struct sw_err *e);

/* tune_search.c: the baseline, the single probes, the ranges refined, the combinations, then the
 * crowning (tune_crown.c); the report's baseline, winner, runner_up, apply and outcome. */
int sw__tune_search(struct sw__tune_run *r, json_t *rep, struct sw_err *e);

/* tune_crown.c: rank the winners and re-measure the best against a fresh baseline. */
int sw__tune_crown(struct sw__tune_run *r, json_t *rep, struct sw_err *e);
/* Does v beat the first baseline beyond the noise (the larger of the two)? *gain either way. */
bool sw__tune_wins(const struct sw__tune_run *r, const struct sw__tune_verdict *v, double *gain);

/* tune_host.c: where the rollout runner leaves the host (the report's "host"). */
void sw__tune_settle_host(struct sw__tune_run *r, json_t *rep);

#endif
