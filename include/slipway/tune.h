/*
 * tune: search an endpoint's declared knobs for a better objective in few boots (`slipway tune`,
 * docs/tune.md).
 *
 * The search space is the endpoint's `knobs:` (sets; ranges: four coarse points, then refined
 * around the best, docs/tune.md) and nothing else: a `frozen:`
 * setting never moves, and the payload, its quantization and the image are frozen always (a knob
 * that would move them, `arg.--model` say, is refused with its fleet position). The current shape
 * is the baseline.
 *
 *   candidates  single-variable probes first (each knob's other values from the baseline), then
 *               combinations of the knobs whose single probe won; every candidate is planned
 *               (sw_plan_endpoint, the one plan) and gated (sw_gate_endpoint) BEFORE any boot,
 *               and a candidate a gate fails is recorded with that gate and never booted;
 *   probes      boot-side knobs (everything the fleet declares) change across boots; the load
 *               side (concurrency) is swept inside one boot: 1, 2, 4... up to the candidate's
 *               slots. A probe is a boot (a local llama-server through deploy's supervisor, or
 *               the simulator for vLLM endpoints), then the objective measured `repeats` times
 *               with bench at the objective's depth;
 *   noise       the relative spread of a probe's repeats (interquartile range / median); a candidate wins
 *               only when its gain over the baseline exceeds the larger of its own noise and the
 *               baseline's; the best winner is booted again right after the baseline is booted
 *               again (interleaved, same conditions), and crowned only when its gain over that
 *               fresh baseline still exceeds the noise;
 *   journal     every probe lands in the ledger as it is decided (tune_runs, tune_probes); a run
 *               that was interrupted is resumed by the next `tune` of the same endpoint, objective
 *               and search space, and a probe already decided is not booted again.
 *
 * The rollout runner (SW_TUNE_BOOT_ROLLOUT, auto for an endpoint on an ssh host) deploys each
 * candidate on the endpoint's host and leaves the host on the last shape a probe committed.
 * What it deliberately does not do: move a knob the fleet does not declare, or write the winner into the fleet file on
 * its own (sw_tune_apply does, when asked: `tune --apply`).
 */
#ifndef SLIPWAY_TUNE_H
#define SLIPWAY_TUNE_H

#include <slipway/core.h>

#include <signal.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sw_tune_metric {
    SW_TUNE_DECODE_TPS = 1, /* generated tok/s of wall time across the streams in flight */
    SW_TUNE_GOODPUT = 2,    /* requests per second within the SLOs */
};

struct sw_tune_objective {
    enum sw_tune_metric metric;
    int64_t depth;                 /* prompt depth in tokens */
    double slo_ttft_s, slo_tpot_s; /* goodput: declared SLOs (0: none) */
    double slo_e2e_s;
    char text[96]; /* canonical: "decode_tps@512", "goodput@256:tpot=50ms" */
};

/* "decode_tps@DEPTH" or "goodput[@DEPTH][:SLO[,SLO]]" with SLO ttft=DUR, tpot=DUR or e2e=DUR
 * (durations as sw_parse_duration_ms reads them); DEPTH a count (512, 4k). SW_EINVAL naming the
 * part that is wrong. */
int sw_tune_objective_parse(const char *s, struct sw_tune_objective *o, struct sw_err *e);

enum sw_tune_boot {
    SW_TUNE_BOOT_AUTO = 0,    /* llama.cpp on a local host: local; vLLM: sim */
    SW_TUNE_BOOT_LOCAL = 1,   /* a local llama-server, supervised (deploy's up/down) */
    SW_TUNE_BOOT_SIM = 2,     /* the engine stand-in (slipway sim) serving the candidate's plan */
    SW_TUNE_BOOT_ROLLOUT = 3, /* a deploy on the endpoint's host (sw_rollout_deploy: gates,
                               * battery, rollback), benched at the endpoint's URL there */
};
/* "auto", "local", "sim" or "rollout" into *b; SW_EINVAL otherwise. */
int sw_tune_runner_parse(const char *s, enum sw_tune_boot *b);

struct sw_tune_opts {
    const char *fleet;    /* the fleet file */
    const char *endpoint; /* the endpoint to tune */
    struct sw_tune_objective objective;
    int budget_boots;    /* at most this many boots in the run (0: 16) */
    int repeats;         /* measurements per concurrency level (0: 3, at least 2) */
    int max_concurrency; /* the load-side sweep stops here (0: 8) */
    /* The load the endpoint must serve: measure at these concurrency levels only (clients past
     * the slots queue, as real ones do), the best level's figure the probe's. n_levels 0: 1, 2,
     * 4... up to the candidate's slots and max_concurrency. */
    int levels[8];
    size_t n_levels;
    int64_t tokens;      /* generated tokens per request (0: 64) */
    const json_t *extra; /* keys set in every bench request (a grammar...), as bench's; NULL */
    bool dry_run;        /* plan and gate every single-variable candidate; boot nothing */
    enum sw_tune_boot boot;
    const char *ledger;          /* NULL: sw_ledger_default_path(fleet) */
    bool no_ledger;              /* read and write no ledger: no journal, no resume, no evidence */
    const char *run_dir;         /* logs and the pid file; NULL: sw_deploy_run_dir */
    unsigned boot_timeout_s;     /* 0: 300 */
    FILE *progress;              /* a line per step for people (NULL: quiet) */
    volatile sig_atomic_t *stop; /* set by a signal handler: the run ends "interrupted" */
};
void sw_tune_opts_init(struct sw_tune_opts *o);

/*
 * Run the search. *out (new reference) is the report:
 *   {"endpoint", "objective", "engine", "boot": local|sim|rollout, "run" (ledger id), "resumed",
 *    "ledger", "dry_run", "budget_boots", "boots", "rejected" (count), "knobs": [{name,
 *    values: [...], baseline, kind: boot|load}], "frozen": [names], "baseline": {probe},
 *    "probes": [{seq, phase, candidate, settings: {knob: value}, outcome, gate, gates: [...],
 *    score, noise, gain, concurrency, repeats: [...], argv, boot_s, why, deploy (rollout:
 *    {outcome, attempt, tag, fail_class, serving})}], "winner": {probe
 *    + "remeasured", "rebaseline" (the fresh baseline's probe), "remeasured_gain" (over the
 *    fresh baseline), "remeasured_noise", "remeasured_gain_first"} | null, "runner_up": {probe} | null, "noise" (the baseline's),
 *    "outcome": crowned | no_winner | budget | interrupted | dry_run, "apply": {knob: value}}
 * Returns 0 when the search ran whatever it found; an error for unusable input (the fleet, a
 * knob that would move a frozen setting, an engine with no boot path), with the fleet's
 * file:line:col where there is one.
 */
int sw_tune_run(const struct sw_tune_opts *o, json_t **out, struct sw_err *e);

/*
 * Write crowned settings ({knob: value}, the report's "apply") into the endpoint of the fleet
 * file at path. Each value replaces the scalar the file already holds for it (a shape field's
 * value, the value after an engine flag in args, an env variable's value), found at the position
 * the loader recorded: a textual edit, so comments, anchors and layout stay. The edited text is
 * loaded again and checked (every setting reads back as given; nothing else of any endpoint
 * moved) and, unless dry_run, written atomically (temp + rename, the file's mode kept) provided
 * the file did not change since it was read. A setting the file does not spell (a flag absent
 * from args, a shape field not written, a value from an env file) is refused (SW_EUNSUPPORTED,
 * naming it and what to add); nothing is written on any error. diff (NULL: none) receives each
 * touched line, "@@ line N @@\n-old\n+new\n".
 */
int sw_tune_apply(const char *path, const char *endpoint, const json_t *settings, bool dry_run,
                  struct sw_buf *diff, struct sw_err *e);

/* The report as a table for people. */
void sw_tune_print(FILE *f, const json_t *report);
/* The report as one self-contained HTML page (inline CSS and an inline SVG chart of every
 * measured probe's objective with its spread against the baseline's noise band), written
 * atomically. */
int sw_tune_html(const json_t *report, const char *path, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
