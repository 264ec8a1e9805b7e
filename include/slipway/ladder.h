/*
 * ladder: the largest value of one knob of an endpoint (max_model_len, ctx_size, slots,
 * kv_cache_bytes) that boots AND survives the worst-case request, in few boots
 * (`slipway ladder`).
 *
 * The operator's night ladder subtracted 16k per rung at ~7 minutes a boot. This one:
 *   - starts from a prediction: a linear need law, need(v) = a + b x v bytes against a capacity
 *     (the memory limit of the rung's runner), b from the engine's memory law (sw_plan_endpoint
 *     at two values), a known only as an interval until a boot measures it; plus the bounds the
 *     ledger's earlier rungs of the run already proved;
 *   - predicts, then confirms: the first rung at the law's point, then (while only one bound
 *     is proven) a walk from it toward the other side, 1, 1, 2, 4, ... grid steps; once both
 *     bounds are proven, each rung halves what is left: the median of the untried grid values
 *     inside (largest known-good, smallest known-bad) and inside the predicted interval;
 *   - moves per failure class: an allocation that failed at graph capture or at load (the value
 *     is bad; the engine's "tried X, Y free" figures turn into a jump of (X - Y) / b when the law
 *     has a slope), the engine's KV-capacity refusal (bad; vLLM's estimated maximum becomes the
 *     next rung when it is inside), a death on the worst-case request (bad: booting is not
 *     surviving), a compile constraint (not monotone: that value alone is skipped, the bounds do
 *     not move), any other failure (the ladder stops: it is not about size);
 *   - spends no boot on a value `check` refuses (known_bad and pool gates): the rung is recorded
 *     as refused;
 *   - recalibrates after every boot: a measured peak sets the law's constant (a = peak - b x v),
 *     an OOM at v says a > capacity - b x v;
 *   - stops when no grid value (the engine's granularity) lies between the bounds, or at
 *     max_boots;
 *   - records every rung in the ledger (ladder_rungs: shape, boot, outcome, knob, value, class,
 *     evidence) as it happens, and resumes a run of the same label from its recorded rungs.
 *
 * Runners (how one rung is tried):
 *   SIM      the engine stand-in (sim) booted in a child process from the endpoint's plan, the
 *            probe's worst_case check against it, then stopped: for GPU engines here;
 *   LOCAL    the engine itself from the plan's argv (sw_deploy_up) on this machine, optionally in
 *            its own memory cgroup (memory_max), then the worst_case check; the cgroup's peak is
 *            the measurement;
 *   ROLLOUT  sw_rollout_deploy on the endpoint's host (gates, unit, rollback, worst case).
 *
 * What it deliberately does not do: move two knobs at once (tune does), judge anything but
 * "boots and survives the worst case" (the band gate's free-memory target is not its business),
 * or trust a prediction over a boot.
 */
#ifndef SLIPWAY_LADDER_H
#define SLIPWAY_LADDER_H

#include <slipway/core.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;
struct sw_fleet_endpoint;
struct sw_ledger;

enum sw_ladder_knob {
    SW_LADDER_MAX_MODEL_LEN = 0,
    SW_LADDER_CTX_SIZE,
    SW_LADDER_SLOTS,
    SW_LADDER_KV_BYTES,
};
/* "max_model_len", "ctx_size", "slots", "kv_cache_bytes" */
const char *sw_ladder_knob_name(enum sw_ladder_knob k);
/* Also accepts "ctx", "seqs", "kv_bytes". SW_EINVAL for anything else. */
int sw_ladder_knob_parse(const char *s, enum sw_ladder_knob *out);

/* What a rung found. Size failures (CAPTURE_OOM, BOOT_OOM, KV_REFUSED, RUNTIME_OOM) make the
 * value a known-bad bound; COMPILE and REFUSED skip the value alone. */
enum sw_ladder_class {
    SW_LADDER_PASS = 0,    /* booted and survived the worst-case request */
    SW_LADDER_CAPTURE_OOM, /* the boot died allocating at graph capture */
    SW_LADDER_BOOT_OOM,    /* the boot died allocating (load, KV, compute, profile) */
    SW_LADDER_KV_REFUSED,  /* the engine refused: its KV pool cannot hold one request */
    SW_LADDER_RUNTIME_OOM, /* booted, then died (or failed) on the worst-case request */
    SW_LADDER_COMPILE,     /* a compile constraint: this value only, not monotone */
    SW_LADDER_REFUSED,     /* `check` refused it: no boot spent */
    SW_LADDER_OTHER,       /* a failure that is not about size: the ladder stops */
};
/* "pass", "capture_oom", "boot_oom", "kv_refused", "runtime_oom", "compile", "refused",
 * "other" */
const char *sw_ladder_class_name(enum sw_ladder_class c);
int sw_ladder_class_parse(const char *s, enum sw_ladder_class *out);
/* Does this class bound the answer from above (a monotone size failure)? */
bool sw_ladder_class_is_bad(enum sw_ladder_class c);

enum sw_ladder_runner_kind {
    SW_LADDER_RUN_AUTO = 0, /* ROLLOUT when the endpoint has a host, else SIM */
    SW_LADDER_RUN_SIM,
    SW_LADDER_RUN_LOCAL,
    SW_LADDER_RUN_ROLLOUT,
};
const char *sw_ladder_runner_name(enum sw_ladder_runner_kind k); /* "auto", "sim", ... */
int sw_ladder_runner_parse(const char *s, enum sw_ladder_runner_kind *out);

/* What one tried rung produced (a runner fills it). */
struct sw_ladder_outcome {
    enum sw_ladder_class cls;
    bool booted;          /* a boot was spent (false: refused before one) */
    int64_t boot_id;      /* the ledger's boot, 0 none */
    uint64_t peak_bytes;  /* measured peak of the engine's memory, 0 unknown */
    uint64_t tried_bytes; /* the failed allocation, 0 unknown */
    uint64_t free_bytes;  /* what was free then */
    int64_t engine_max;   /* the engine's own estimate of the largest value, 0 none */
    char detail[512];     /* one line: the evidence in words */
    json_t *evidence;     /* object (owned): boot failure, probe check, figures; may be NULL */
};

/*
 * One rung runner. ep already carries the rung's value (sw_gate_set). Fill out (cls, booted,
 * ...) and return 0; an error return means the rung could not be tried at all (the ladder stops
 * with it, and nothing is recorded for the rung).
 */
typedef int (*sw_ladder_run_fn)(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                                enum sw_ladder_knob knob, int64_t value,
                                struct sw_ladder_outcome *out, struct sw_err *e);

struct sw_ladder_opts {
    enum sw_ladder_knob knob;
    int max_boots;            /* 0: 8 */
    bool dry_run;             /* the prediction and the first rung only: nothing booted/written */
    const char *label;        /* the run's name in the ledger; NULL: "ENDPOINT/KNOB" (resumed) */
    int64_t min, max, step;   /* the grid; 0: the fleet knob's range and step, else defaults */
    struct sw_ledger *ledger; /* rungs are recorded and resumed here; NULL: neither */
    /* LOCAL: the endpoint's own `slipway up` process (its pid file) is stopped before the first
     * boot; without it such a process refuses the run before any boot (sw_deploy_local_clear) */
    bool stop_running;
    enum sw_ladder_runner_kind runner;
    uint64_t memory_max;     /* LOCAL: the engine's memory cgroup limit (bytes); 0 none */
    uint64_t capacity;       /* the law's capacity (bytes); 0: memory_max, else the devices' */
    int64_t boot_timeout_ms; /* one boot's bound; 0: 10 min */
    int64_t probe_ms;        /* the worst-case check's bound; 0: 5 min */
    /* SIM: run `SIM_EXE sim ENDPOINT FLEET --set ...` (the slipway binary) instead of the sim
     * library in a fork; sim_ledger is its --ledger, the boots its headroom model is fitted on
     * (the simulated hardware). NULL: the library, no headroom model. */
    const char *sim_exe;
    const char *sim_ledger;
    /* shape overrides (sw_gate_set "KEY=VALUE") applied to the endpoint before the run, and
     * passed to an exec'd sim */
    const char *const *sets;
    int n_sets;
    sw_ladder_run_fn run; /* a custom runner (tests, callers); NULL: the built-in `runner` */
    void *run_ctx;
    FILE *progress; /* a line per rung as it runs, or NULL */
};

/* One rung, as run now or read back from the ledger. */
struct sw_ladder_rung {
    int n; /* 1-based */
    int64_t value;
    enum sw_ladder_class cls;
    bool booted;
    bool resumed; /* read from the ledger, not run now */
    int64_t boot_id;
    int64_t rung_id;                      /* ladder_rungs.id, 0 when not recorded */
    int64_t good_before, bad_before;      /* bounds before the rung (-1: none) */
    int64_t pred_lo, pred_hi, pred_point; /* the predicted answer before the rung (-1: none) */
    uint64_t peak_bytes;
    double ms;
    char detail[512];
};

#define SW_LADDER_MAX_RUNGS 256

struct sw_ladder_result {
    char endpoint[128];
    char label[256];
    char knob[32];
    char engine[32];
    char runner[16];
    int64_t min, max, step;
    int64_t answer;     /* the largest value that passed, -1 none */
    int64_t bad;        /* the smallest value that failed by size, -1 none */
    bool converged;     /* no grid value left between answer and bad (or the range's end) */
    bool stopped_other; /* a non-size failure stopped it */
    int boots;          /* boots spent by this invocation */
    int boots_total;    /* ... and by the resumed rungs before it */
    int n;
    struct sw_ladder_rung rungs[SW_LADDER_MAX_RUNGS];
    /* the law: a linear need (law) or the calibrated headroom model's verdicts (headroom) */
    bool headroom;             /* vLLM fork: calib's headroom verdict per grid value */
    bool law;                  /* a slope and a capacity are known */
    double law_b;              /* bytes per unit of the knob */
    double law_a_lo, law_a_hi; /* the constant's interval (bytes) */
    uint64_t capacity;
    char law_source[256];
    int64_t pred_lo, pred_hi, pred_point; /* the first prediction */
    int64_t next;                         /* dry run: the first rung it would boot, -1 none */
    char why_stopped[256];
    /* LOCAL with stop_running: the endpoint's `slipway up` process stopped before the first
     * rung (0: none was running) */
    int stopped_up_pid;
};

/*
 * Run (or resume) the ladder of one knob of one endpoint. ep is modified (its knob set to each
 * rung's value in turn, then restored). Returns 0 when the ladder ran to a verdict (read
 * r->answer, r->converged), or an error (SW_EINVAL a knob the engine has not, no range;
 * a runner's error). r is always initialised.
 */
int sw_ladder_run(const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                  const struct sw_ladder_opts *o, struct sw_ladder_result *r, struct sw_err *e);

/* The built-in runners (o->runner chooses; ctx is the sw_ladder_opts). */
int sw_ladder_run_sim(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                      enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                      struct sw_err *e);
int sw_ladder_run_local(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                        enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                        struct sw_err *e);
int sw_ladder_run_rollout(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                          enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                          struct sw_err *e);

/* Classify a boot failure object ({class, phase, tried_bytes, free_bytes, ...} as the engines'
 * boot-log parsers emit it) into a ladder class. */
enum sw_ladder_class sw_ladder_classify(const json_t *failure);

/* {"endpoint","label","knob","engine","runner","range":{min,max,step},"answer","bad",
 *  "converged","boots","boots_total","law":{...}|null,"prediction":{lo,hi,point},
 *  "rungs":[{rung,value,class,booted,resumed,boot,good_before,bad_before,prediction,peak_bytes,
 *  ms,detail}],"why_stopped"}. New reference. */
json_t *sw_ladder_result_json(const struct sw_ladder_result *r);
/* The human table: one line per rung, then the answer and the boots. */
void sw_ladder_result_print(FILE *out, const struct sw_ladder_result *r);

#ifdef __cplusplus
}
#endif
#endif
