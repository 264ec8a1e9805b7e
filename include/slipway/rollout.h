/*
 * rollout: an endpoint's new shape goes live on its host only after it proves itself, or the old
 * one comes back (`slipway deploy`, `slipway rollback`).
 *
 * One pipeline per deploy, every step recorded with its time:
 *   plan + every gate (sw_gate_endpoint; a failing gate touches nothing on the host)
 *   -> lock (/run/slipway/NAME.lock: the deploying machine, pid, process start and boot id; a
 *      lock whose owner is a dead process of this machine is taken over, any other refuses)
 *   -> render (sw_unit_render_endpoint) -> stage beside the live files (NAME.service.new and
 *      NAME.env.new through sw_host_copy; the live files untouched)
 *   -> `systemd-analyze verify` of the staged unit on the host
 *   -> save the live files as the rollback set (/var/lib/slipway/rollout/NAME/rollback/)
 *   -> swap (rename staged over live) -> daemon-reload -> stop the old unit -> start the new one
 *   -> watch the boot: the unit's journal read from a cursor taken before the start and fed to
 *      the engine's boot-log parser as it arrives (a failure the engine prints is classified on
 *      the poll that reads it); `systemctl show` (a death that systemd will restart, NRestarts
 *      rising, ActiveState failed, or an engine that exited 0 is a failure); a stall is judged by
 *      progress (no new journal line and no readiness for stall_ms)
 *   -> readiness (the engine's health path answers 200)
 *   -> liveness by generation (one token; a 200 health with a failing generation is a failure)
 *   -> the probe battery (worst_case included unless opts say no)
 *   -> commit: the device readings (the host's vendor tool, as usage rows of the shape), the
 *      payload's files with their sha256 read on the host and the image digest go into the
 *      ledger's tag; the new files become the endpoint's last-good set on the host
 *      (/var/lib/slipway/rollout/NAME/last-good/).
 * A transport that dies once the lock is taken (ssh dropped: SW_ENET, or a command ending without
 * a word while the host no longer answers) ends the run `interrupted` (class ssh_dropped): no
 * rollback or commit is tried over it; the steps say how far it got, the lock left is stale once
 * this process exits, and deploy or rollback again converges.
 * Any failure after the stop restores the last-good set (or, when no deploy committed one, the
 * live files saved before the swap; when the host had neither, the new unit is stopped and its
 * files moved aside so that nothing crash-loops), reloads, starts it, and proves it serves
 * (readiness and one-token generation); a rollback target that does not serve is stopped too. The time the endpoint did not serve is measured from the stop (or the
 * start, when nothing was serving) to the first successful generation of whichever shape serves.
 *
 * What it deliberately does not do (yet): resume an interrupted deploy from recorded state
 * (running deploy or rollback again converges from the host's files), user-scope units.
 */
#ifndef SLIPWAY_ROLLOUT_H
#define SLIPWAY_ROLLOUT_H

#include <slipway/core.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;
struct sw_fleet_endpoint;
struct sw_ledger;

enum sw_rollout_outcome {
    SW_ROLLOUT_NONE = 0,
    SW_ROLLOUT_COMMITTED,   /* the new shape serves and is the last-good */
    SW_ROLLOUT_DRY_RUN,     /* nothing touched; steps say what would happen */
    SW_ROLLOUT_GATE_FAILED, /* a gate refused it: nothing on the host touched */
    SW_ROLLOUT_REFUSED,     /* failed before the stop (lock, stage, verify): old unit as it was */
    SW_ROLLOUT_ROLLED_BACK, /* failed after the stop; the rollback set serves again */
    SW_ROLLOUT_ROLLBACK_FAILED, /* failed, and the rollback set did not serve either: stopped */
    SW_ROLLOUT_RESTORED,        /* `rollback` by hand: the saved set serves */
    SW_ROLLOUT_INTERRUPTED,     /* the host became unreachable after its files changed (class
                                   ssh_dropped): neither rolled back nor committed; the steps
                                   say how far it got, and deploy or rollback again converges
                                   (this process's lock on the host is stale once it exits) */
};
/* "none", "committed", "dry_run", "gate_failed", "refused", "rolled_back", "rollback_failed",
 * "restored", "interrupted". */
const char *sw_rollout_outcome_name(enum sw_rollout_outcome o);

struct sw_rollout_opts {
    struct sw_ledger *ledger; /* for the gates' evidence; NULL: ledger-backed gates skip */
    bool dry_run;
    bool worst_case;        /* run the probe's worst_case check */
    const char *probe_only; /* comma-separated probe checks; NULL: the default battery */
    int64_t deadline_ms;    /* the boot's own bound (readiness); 0: 10 min */
    int64_t stall_ms;       /* no journal line and no readiness this long: a stall; 0: 120 s */
    int64_t probe_ms;       /* the battery's deadline; 0: the probe's default */
    const char *to_tag;     /* rollback: restore this tag's set instead of the last-good */
    bool record;            /* write the attempt, its steps and its tag or failure to ledger */
    const char *note;       /* the operator's note for the attempt and its tag, or NULL */
    const char *cause;      /* rollback by hand, recorded: the failure it answers ("crash_loop",
                                watch's state), the attempt's class; never teaches a rule */
    FILE *progress;         /* a line per step as it runs, or NULL */
};

/* What a deploy (or a rollback) did. Strings are "" when not applicable. */
struct sw_rollout_result {
    enum sw_rollout_outcome outcome;
    char endpoint[128];
    char unit[256];         /* "slipway-NAME.service" */
    char failed_step[32];   /* "gate", "lock", "stage", "verify", "boot", "readiness",
                               "liveness", "probe" ... */
    char fail_class[64];    /* "gate:band", "crash_loop", "exit0", "stall", "missing_payload",
                               "oom", "dead_generation", "probe:worst_case", "runtime_oom"
                               (the engine was OOM-killed under a battery request),
                               "runtime_death" ... */
    char fail_msg[1024];    /* one line: the evidence in words */
    char rollback_msg[512]; /* what the rollback did, "" when none ran */
    char tag[160];          /* committed: the new last-good's tag (ENDPOINT-YYYYMMDD-N): the
                             ledger's when it recorded one; the host's tags/ directory too */
    int64_t attempt;        /* the ledger's attempt id, 0 when none was recorded */
    int64_t rule_id;        /* the known-bad rule the failure taught, 0 none */
    char ledger_msg[512];   /* why the ledger could not be written, "" when it was (or unused) */
    bool had_rollback_set;  /* the host had live files to go back to */
    bool stopped;           /* the old unit was stopped (the live shape changed) */
    int64_t downtime_ms;    /* -1: the endpoint never stopped serving (or was not serving) */
    bool serving;           /* something serves at the end (new or restored) */
    json_t *steps;          /* [{step, ok, ms, detail}] (owned) */
    json_t *gates;          /* sw_gate_endpoint's object (owned), NULL when not run */
    json_t *probe;          /* the battery's report (owned), NULL when not run */
    json_t *boot;           /* {class, phase, message, line, n_restarts, active_state,
                               sub_state, exec_main_status} or NULL */
    char *journal;          /* the unit's journal since the start, last lines (sw_free) */
    json_t *diff;           /* dry run: [{file, path, live_exists, diff}] (owned) */
};
void sw_rollout_result_free(struct sw_rollout_result *r);
/* {"endpoint","unit","outcome","failed_step","fail_class","fail_msg","rollback","downtime_ms",
 *  "serving","steps","gates","boot","journal","probe","diff"}. New reference, NULL on OOM. */
json_t *sw_rollout_result_json(const struct sw_rollout_result *r);

/*
 * Deploy one endpoint of a loaded fleet on its host (module comment). Returns 0 when the
 * pipeline ran to a verdict (read r->outcome: committed, gate_failed, refused, rolled_back,
 * rollback_failed, dry_run), or an error when it could not start (SW_EINVAL an endpoint without
 * a host, SW_EUNSUPPORTED a user-scope unit, SW_ENET the host unreachable before anything was
 * touched, SW_EBUSY another deploy holds the lock). r is always initialised; free it.
 */
int sw_rollout_deploy(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                      const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                      struct sw_err *e);

/*
 * Does the deployed shape survive the worst-case request (the longest prompt the window admits
 * with the rest of the window as max_tokens, the probe's worst_case check)? From a deploy's
 * result: 1 the check ran and passed; 0 it failed, or the engine died under it (fail_class
 * "runtime_oom": the kernel's OOM killer, read from the unit's journal and state, e.g. past the
 * unit's MemoryMax=); -1 unknown (worst_case did not run: opts.worst_case false, a --probe-only
 * without it, or a deploy that failed before the battery). The ladder's "survives" test.
 */
int sw_rollout_survives_worst_case(const struct sw_rollout_result *r);

/*
 * Put the endpoint's saved set back by hand: the last-good set (or o->to_tag's) over the live
 * files, daemon-reload, restart, prove it serves. outcome restored or rollback_failed. With
 * o->record and o->ledger, an attempt in the ledger of the tag's shape, ended rolled_back or
 * rollback_failed (class o->cause, no known-bad rule); r->attempt its id.
 * SW_ENOENT when the host holds no such set.
 */
int sw_rollout_rollback(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                        const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                        struct sw_err *e);

/*
 * The endpoint's installed unit started or stopped as it is (no render staged, no gate, no
 * ledger attempt: serve's starts and evictions, src/rollout/unit.c), under its deploy lock for
 * the while: SW_EBUSY naming the holder when another deploy holds it (nothing is touched). A
 * start is `systemctl start`, the boot watched as a deploy's is (journal, unit state, stall),
 * readiness and the one-token generation through the endpoint's route, bounded by
 * o->deadline_ms: r->serving when it serves; else r->fail_class and fail_msg say why, and the
 * unit is stopped again (it holds no memory). A stop is `systemctl stop` (and reset-failed).
 * The host's ssh master is left running (forwards of the caller's may ride on it). r->steps
 * holds the steps; free r with sw_rollout_result_free.
 */
int sw_rollout_unit_start(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                          const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                          struct sw_err *e);
int sw_rollout_unit_stop(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                         const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                         struct sw_err *e);
/* Who holds the endpoint's deploy lock on its host now: holder (n bytes) its owner line, "" when
 * nobody does (or a dead process of this machine, whose lock the next start takes over). A look,
 * not a promise: sw_rollout_unit_start takes the lock itself. */
int sw_rollout_unit_lock_holder(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                                char *holder, size_t n, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
