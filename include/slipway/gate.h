/*
 * gate: the checks a plan must pass before a boot is spent on it (`slipway check`).
 *
 * For one fleet endpoint (its shape as the fleet file, its env files, the caller's environment and
 * any `--set` overrides made it), each gate computes its numbers from the engine's memory law
 * (memory/llamacpp, memory/vllm with the endpoint's fork profile) and from what the ledger
 * measured, and returns a verdict with the numbers and a concrete fix:
 *
 *   band       free memory per device after the boot, inside the endpoint's free_band
 *              (default 2 GiB..3 GiB): a usage reading of this very shape when the ledger has one,
 *              else the calibrated non-KV cost plus the law's KV;
 *   pool       the pinned KV pool holds the contract, SEQS x MAXLEN tokens at this geometry's real
 *              price (whole blocks, per-request state), with a stated margin;
 *   arena      (fork profiles with an expert arena) the arena the fork sizes at this MAXLEN; a pool
 *              cut that does not move MAXLEN buys no arena, and the gate says so;
 *   window     per-slot window (llama.cpp slots that cannot share a cache: pool / slots) against
 *              the client harness's contextWindow, and the compaction request (window x ratio +
 *              summary budget) against one request window of the endpoint serving compaction;
 *   known_bad  exact shapes that failed in the ledger or in the fleet's boots, and known-bad rules
 *              (ledger expressions, fleet `known_bad`), each with the failure that taught it;
 *   payload    consistency that needs no network: spec-decode flags only when the checkpoint ships
 *              draft/MTP tensors, a projector when the model's vision needs one (skipped, with the
 *              reason, when the files are not on this machine);
 *   patches    each engine patch (fleet `patches:`) applied with patch -p1 to a copy of the pinned
 *              image's file (`base:`, on this machine) reproduces its recorded sha256; a drifted
 *              base or a patch that no longer applies fails (payload/patch.c).
 *
 * The endpoint's law comes from plan's view of it (sw_plan_view); `slipway check` over a whole
 * fleet is sw_gate_check_open / _next / _doc (below).
 *
 * And per host (sw_gate_host, `slipway hosts check`): what the host lacks that its endpoints
 * need (systemd, the engine binary or image, the payload, a patch's base).
 *
 * What it deliberately does not do: boot, probe or download anything; fit a law (calibration
 * does; the band gate uses the fitted non-KV cost when there is one); change the fleet file.
 */
#ifndef SLIPWAY_GATE_H
#define SLIPWAY_GATE_H

#include <slipway/core.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;
struct sw_fleet_endpoint;
struct sw_fleet_shape;
struct sw_ledger;

enum sw_gate_verdict {
    SW_GATE_PASS = 0,
    SW_GATE_SKIP = 1, /* could not be judged (missing input); says why; not a failure */
    SW_GATE_FAIL = 2,
    SW_GATE_WAIVED = 3, /* failed, and a fleet waiver (sw_gate_waive) accepts it; not a failure */
};
/* "pass", "skip", "fail", "waived". */
const char *sw_gate_verdict_name(enum sw_gate_verdict v);

/* The band used when an endpoint declares no free_band: the operator's 2-3 GiB (plan.h's
 * SW_PLAN_BAND_MIN..MAX, which the plan view holds). */
#define SW_GATE_BAND_MIN SW_PLAN_BAND_MIN
#define SW_GATE_BAND_MAX SW_PLAN_BAND_MAX

struct sw_gate_opts {
    struct sw_ledger *ledger; /* NULL: ledger-backed evidence is skipped, with that reason */
    double pool_margin;       /* the pool must hold SEQS x MAXLEN x (1 + margin); 0 = none */
    /* The endpoint's shape as the fleet file gives it, before any sw_gate_set override (NULL:
     * none were made). The arena gate says what an override of the pool alone buys. */
    const struct sw_fleet_shape *before;
    /* Waivers (sw_gate_waive): the day they are judged on, YYYY-MM-DD (NULL: $SLIPWAY_TODAY,
     * else the UTC clock), and whether a waiver that matches no failure is let be (a candidate
     * shape under trial, tune and ladder, or a --set override, may not need it). */
    const char *today;
    bool waivers_loose;
};

/*
 * Run every gate on one endpoint of a loaded fleet. *out (new reference) is
 *   {"endpoint", "engine", "shape": {ledger shape}, "shape_hash", "verdict": pass|fail,
 *    "gates": [{"gate", "verdict", "line", "fix" (string|null), "numbers": {...},
 *               "evidence": [...]}]}
 * A gate that cannot judge is "skip" with the reason in "line". A failure the endpoint's
 * waivers cover is "waived" with "waiver": {gate, reason, until, file, line, rule?}, and the
 * document's "waivers" lists each waiver applied (sw_gate_waive): the endpoint's "verdict" is
 * "pass" when every failure is waived. Returns 0 when the gates ran (whatever their verdicts),
 * or an error when the input is unusable (SW_EINVAL, SW_EPARSE, SW_EDB: a ledger that cannot be
 * read...; SW_EINVAL naming the fleet line for an expired or unmatched waiver).
 */
int sw_gate_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                     const struct sw_gate_opts *o, json_t **out, struct sw_err *e);

/*
 * Waivers: a verdict the operator accepts on purpose (fleet `waive:`). These are the ONE rule
 * every verb applies (check, render, deploy/rollout, apply, report); sw_gate_endpoint calls
 * sw_gate_waive on its own results, so a caller of sw_gate_endpoint gets them applied.
 *
 * sw_gate_waiver: the waiver of ep that covers a failure of gate `gate`, or NULL. `result` is the
 * failing gate's result object (its numbers.rule_id picks a known_bad waiver narrowed by `rule:`;
 * NULL: only a whole-gate waiver can match). A rule's own waiver beats the whole gate's. Expiry
 * is not judged here (sw_gate_waive does): a caller with its own verdicts (apply's fleet-wide
 * gates) asks this, and refuses what is past its day with sw_gate_today.
 *
 * sw_gate_waive: apply ep's waivers to a result document of sw_gate_endpoint's form: every
 * "fail" a waiver covers becomes "waived" with its "waiver"; "verdict" becomes "pass" when no
 * "fail" is left, and "waivers" lists the waivers applied. Errors (SW_EINVAL, the message
 * "FILE:LINE:COL: waiver for gate G on EP ..."): a waiver whose until is before `today`
 * (YYYY-MM-DD; NULL: expiry is not judged), or, unless `loose`, a waiver that covers no failure
 * ("matches nothing: remove it"). SW_ENOMEM.
 *
 * sw_gate_today: the day waivers are judged on: o->today, else $SLIPWAY_TODAY, else the UTC
 * clock; out gets "YYYY-MM-DD". SW_EINVAL for a value that is not a day.
 *
 * sw_gate_verdict_blocks: does this verdict string stop a deploy? Only "fail" ("waived" does not).
 */
struct sw_fleet_waiver;
const struct sw_fleet_waiver *sw_gate_waiver(const struct sw_fleet_endpoint *ep, const char *gate,
                                             const json_t *result);
int sw_gate_waive(const struct sw_fleet_endpoint *ep, json_t *doc, const char *today, bool loose,
                  struct sw_err *e);
int sw_gate_today(const struct sw_gate_opts *o, char out[11], struct sw_err *e);
bool sw_gate_verdict_blocks(const char *verdict);

/*
 * Override one setting of an endpoint, "KEY=VALUE": a shape field or alias (`slots=3`,
 * `ctx=196608`, `kv_cache_bytes=11.3e9`, `spec_decode.method=mtp`), `mmproj=PATH` or `draft=PATH`,
 * or KEY=null to unset it (`kv_cache_bytes=null`: the engine sizes the pool). Values are read like
 * the fleet file reads them; the fleet keeps ownership of nothing new: string values must outlive
 * the fleet (argv strings do). Errors name the key.
 */
int sw_gate_set(struct sw_fleet_endpoint *ep, const char *kv, struct sw_err *e);

/*
 * Do two ledger shapes describe the same boot? Compared on the keys that change memory (engine,
 * profile, model name and quant, ctx, slots, kv dtypes, kv_bytes, kv_tokens, mnbt, tp, pp, util,
 * projector, speculative decoding); a key one side has and the other lacks differs. Keys
 * outside that set (batch sizes, flash attention, free-form flags) are ignored, so a shape
 * recorded by hand with fewer keys still finds the fleet's.
 */
bool sw_gate_same_shape(const json_t *a, const json_t *b);

/*
 * One engine patch (fleet `patches:`) verified, the one implementation `check`'s patches gate and
 * `slipway hosts check` share: base_sha256 of the base file, `patch -p1` applies to a copy of it,
 * the copy's sha256 is patched_sha256 (payload sw_payload_patch_verify). h NULL: `base` is on
 * this machine (relative to the fleet file); else it is an absolute path on host h, read over the
 * host's transport into a private temporary file (removed on every path). The patch file is
 * always this machine's (relative to the fleet file). *out gets the verdict (skip when there is
 * no base, or it cannot be read), its line and fix. Errors: SW_ENOMEM only.
 */
struct sw_host;
struct sw_fleet_patch;
struct sw_gate_patch_result {
    enum sw_gate_verdict verdict;
    char line[1400];
    char fix[320];
    char base_sha256[65];
    char patched_sha256[65]; /* "" when not patched */
    char detail[32];         /* sw_payload_patch_verdict_name, "" on skip */
};
int sw_gate_patch(const struct sw_fleet_patch *fp, struct sw_host *h, int64_t deadline_ms,
                  struct sw_gate_patch_result *out, struct sw_err *e);

/*
 * `slipway check` over a fleet (gate/check.c), one endpoint at a time so the caller shows each
 * result as it is judged:
 *
 *     struct sw_gate_check c;
 *     rc = sw_gate_check_open(&c, &opts, &e);          fleet, the endpoint, --set, the ledger
 *     while (!(rc = sw_gate_check_next(&c, &r, &e)) && r)   every gate on the next endpoint
 *         show(r);
 *     doc = sw_gate_check_doc(&c);                     {fleet, ledger, set?, verdict, endpoints}
 *     sw_gate_check_close(&c);                         also after a failed open
 *
 * Errors are unusable input: the fleet's, an unknown endpoint (the message names the fleet's),
 * a bad --set, a ledger that cannot be read (ledger_failed), a gate's.
 */
struct sw_gate_check_opts {
    const char *fleet_path;  /* required */
    const char *endpoint;    /* NULL: every enabled endpoint */
    const char *const *sets; /* "KEY=VALUE" overrides of `endpoint` (sw_gate_set) */
    size_t n_sets;
    const char *ledger_path; /* NULL: $SLIPWAY_LEDGER, else beside the fleet (may be absent) */
    bool no_ledger;          /* no ledger evidence */
    double margin;           /* sw_gate_opts.pool_margin */
};
struct sw_gate_check {
    struct sw_gate_check_opts opts;
    bool have_ledger;     /* a ledger is read */
    bool ledger_absent;   /* the default ledger does not exist: evidence is skipped */
    bool ledger_failed;   /* open failed because of the ledger */
    char ledger_at[4096]; /* where it is (or would be) */
    bool failed;          /* a gate failed so far */
    /* opaque */
    struct sw_fleet *fleet;
    struct sw_fleet_endpoint *target;
    struct sw_fleet_shape before;
    struct sw_ledger ledger;
    size_t next;
    json_t *results;
};
int sw_gate_check_open(struct sw_gate_check *c, const struct sw_gate_check_opts *o,
                       struct sw_err *e);
/* The next endpoint's result (borrowed: c keeps it for the document), or *result NULL when every
 * endpoint was judged. */
int sw_gate_check_next(struct sw_gate_check *c, const json_t **result, struct sw_err *e);
/* The document of every result so far. New reference, or NULL on OOM. */
json_t *sw_gate_check_doc(const struct sw_gate_check *c);
void sw_gate_check_close(struct sw_gate_check *c);

/*
 * A fleet host checked for what its enabled endpoints need (`slipway hosts check`, gate/hosts.c):
 * reached over its transport (host.h) within deadline_ms, its facts read, and per endpoint the
 * engine binary, the image (pinned by digest, present in podman, else docker), the payload
 * (present, free disk) and each patch (sw_gate_patch over the host). *out (new reference):
 *   {"host", "transport", "seconds", "reached", "error" (when not reached), "kernel", "systemd",
 *    "podman", "docker", "memory": {total, available}, "gpus": {kfd, dri_render_nodes,
 *    nvidia_nodes, tools}, "systemd_manager": {system, user}, "endpoints": [{"endpoint",
 *    "binary", "image", "payload", "patches"}], "gaps": ["HOST: ..."], "verdict": pass|fail}
 * An unreachable host is a gap, not an error. *n_gaps counts "gaps". Errors: SW_ENOMEM.
 */
struct sw_fleet_host;
int sw_gate_host(const struct sw_fleet *f, const struct sw_fleet_host *fh, int64_t deadline_ms,
                 json_t **out, size_t *n_gaps, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
