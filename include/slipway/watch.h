/*
 * watch: keep the fleet serving between commands (`slipway watch`, `slipway logs`).
 *
 *   sw_watch_run: a foreground supervisor. Per endpoint, every interval (its fleet `watch:`, else
 *     30 s, jittered by up to a tenth), status's one look (sw_deploy_status: the unit's state and
 *     NRestarts, the drift of the installed files, /health and a one-token generation over the
 *     endpoint's route, device readings) is classified (sw_watch_classify) and acted on by the
 *     policy: restart at most restart.max times in restart.window; after rollback_after restarts
 *     that did not bring it back (or a crash loop of that many systemd restarts), the rollout's
 *     rollback to last-good. Never while the endpoint's deploy lock is held; never on a host that
 *     did not answer (it says so). One thread per host, each look bounded by its deadline, so a
 *     frozen host delays only its own endpoints. Every change of state, action, alert and job goes
 *     to the ledger (watch_events); an action is keyed by the endpoint and the state change it
 *     answers, so a watch restarted after a crash resumes from the ledger and acts once.
 *   alerts: the fleet's `alert:` hooks get one event per change of state (JSON on an exec's stdin,
 *     or the body of a POST), each bounded by a deadline and retried.
 *   metrics: with metrics_addr, Prometheus text on http://ADDR/metrics.
 *   schedules: the fleet's `schedule:` jobs, run by watch (docs/watch.md says why not timers).
 *   sw_watch_logs: an endpoint's journal from its host, the engine's failure line marked.
 *
 * What it deliberately does not do: deploy a new shape (the rollout does), decide what a shape
 * should be, or print (the CLI does; events go to on_event).
 */
#ifndef SLIPWAY_WATCH_H
#define SLIPWAY_WATCH_H

#include <slipway/core.h>

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;
struct sw_fleet_endpoint;
struct sw_ledger;

enum sw_watch_state {
    SW_WATCH_UNKNOWN = 0,
    SW_WATCH_SERVING,
    SW_WATCH_DEAD_GENERATION, /* /health 200, the one-token generation fails */
    SW_WATCH_CRASH_LOOP,      /* systemd restarting it (auto-restart, NRestarts rising) */
    SW_WATCH_DOWN,            /* unit not active, or nothing answers */
    SW_WATCH_DRIFTED,         /* serves, but the installed files are not what the fleet renders */
    SW_WATCH_MEMORY_OUT_OF_BAND, /* serves, device free memory outside the endpoint's free_band */
    SW_WATCH_UNREACHABLE,        /* its host did not answer within the deadline */
    SW_WATCH_N_STATES
};
/* "unknown", "serving", "dead_generation", "crash_loop", "down", "drifted",
 * "memory_out_of_band", "unreachable". */
const char *sw_watch_state_name(enum sw_watch_state s);
/* Does the state call for a restart/rollback (dead_generation, crash_loop, down)? */
bool sw_watch_state_needs_action(enum sw_watch_state s);

/*
 * Classify one endpoint of sw_deploy_status's document (an element of "endpoints"). ep gives the
 * free band (may be NULL). prev_restarts: NRestarts at the previous look (-1 none). why gets the
 * evidence in words.
 */
enum sw_watch_state sw_watch_classify(const json_t *st, const struct sw_fleet_endpoint *ep,
                                      int64_t prev_restarts, char *why, size_t n);

/* An endpoint's `watch:` policy with its defaults. */
struct sw_watch_policy {
    int64_t interval_ms;       /* 30 s */
    unsigned restart_max;      /* restarts allowed in restart_window_ms: 3 */
    int64_t restart_window_ms; /* 1 h */
    unsigned rollback_after;   /* failed restarts (or crash-loop restarts) before a rollback: 3;
                                  0 never rolls back */
    bool act;                  /* false: observe and alert only (watch: {act: false}) */
    unsigned devices_every;    /* read device memory every N looks (watch.devices_every: 10) */
};
/* ep->watch read into p (defaults where absent); default_interval_ms (0: 30 s) is --interval.
 * SW_EPARSE naming the fleet file, line and column of a bad value. */
int sw_watch_policy_read(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                         int64_t default_interval_ms, struct sw_watch_policy *p, struct sw_err *e);

/* The fleet's alert: and schedule: lists checked (unknown keys, types, durations, endpoints),
 * errors naming file:line:col. */
int sw_watch_check_fleet(const struct sw_fleet *f, struct sw_err *e);

/* One event as alerts and on_event see it. */
struct sw_watch_event {
    const char *endpoint;
    const char *host;
    const char *kind; /* "observation", "action", "alert", "job" */
    enum sw_watch_state state, prev;
    const char *action;     /* "restart", "rollback", "refused", job name..., or NULL */
    const char *outcome;    /* "ok", "failed", "skipped"... or NULL */
    const char *detail;     /* words */
    const json_t *evidence; /* the look's status object, or NULL */
};
/* {"endpoint","host","kind","state","previous","action","outcome","detail","at",
 * "evidence"}. New reference. */
json_t *sw_watch_event_json(const struct sw_watch_event *ev);

struct sw_watch_opts {
    const char *const *only; /* endpoint names (NULL-ended), NULL: every enabled endpoint */
    size_t n_only;
    int64_t interval_ms;         /* default interval (0: 30 s); the fleet's watch.interval wins */
    int64_t deadline_ms;         /* each look's host deadline (0: min(interval, 20 s)) */
    bool once;                   /* one look per endpoint (acting and alerting), then return */
    const char *metrics_addr;    /* "HOST:PORT" to serve /metrics on, or NULL */
    struct sw_ledger *ledger;    /* required: observations, actions, resume */
    const char *ledger_path;     /* for the schedule's jobs' environment (SLIPWAY_LEDGER) */
    const char *fleet_path;      /* for the jobs' environment (SLIPWAY_FLEET) */
    volatile sig_atomic_t *stop; /* set nonzero (a signal handler) to return; may be NULL */
    void (*on_event)(void *ctx, const struct sw_watch_event *ev); /* may be NULL */
    void *ctx;
    /* An action's own bounds. */
    int64_t restart_deadline_ms; /* 0: 60 s */
};

/*
 * Watch (module comment). Returns 0 when stop was set (or after --once), SW_EINVAL for an
 * option, SW_ENOENT an unknown endpoint, SW_EPARSE a bad watch:/alert:/schedule:, SW_EBUSY
 * metrics_addr could not be bound, or the ledger's error when it cannot be written.
 */
int sw_watch_run(const struct sw_fleet *f, const struct sw_watch_opts *o, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * Pieces, public so tests and the CLI can reach them.
 */

/* The metrics page of a set of endpoint snapshots (what sw_watch_run serves). snap is a JSON
 * array of {endpoint, host, state, reachable, proof_ms, restarts, decode_tok_s, prefill_tok_s,
 * drift, devices: [{index, used_bytes, free_bytes, total_bytes}], actions}. Appended to out. */
int sw_watch_metrics_text(const json_t *snap, struct sw_buf *out, struct sw_err *e);

/* Deliver ev to every alert: hook of f (deadline and retries from each hook). *n_ok counts the
 * hooks that took it. 0 when every hook took it, else the last hook's error (e names it). */
int sw_watch_alert(const struct sw_fleet *f, const json_t *ev, size_t *n_ok, struct sw_err *e);

/* A systemd unit that runs `slipway watch` on this machine (render --watch): exe is slipway's
 * absolute path, fleet_path the fleet's, args the extra arguments (may be NULL). Appended. */
int sw_watch_unit_render(const char *exe, const char *fleet_path, const char *ledger_path,
                         const char *metrics_addr, struct sw_buf *out, struct sw_err *e);

/* install --watch: watch's unit (sw_watch_unit_render's) on this machine, as a system unit
 * (src/watch/install.c). */
struct sw_watch_install_opts {
    const char *exe, *fleet_path, *ledger_path, *metrics_addr; /* as sw_watch_unit_render */
    const char *unit_dir;                                      /* NULL: /etc/systemd/system */
    bool start;          /* enable, (re)start, and hold it to staying up for settle_ms */
    int64_t settle_ms;   /* 0: 3 s */
    int64_t deadline_ms; /* each systemctl (0: 30 s) */
    void (*on_step)(void *ctx, const char *name, bool ok, double seconds, const char *detail);
    void *ctx;
};
struct sw_watch_install_result {
    char unit[64];
    char unit_path[4096];
    bool refused;   /* systemd-analyze verify printed a finding: nothing written */
    bool replaced;  /* a unit was there before */
    bool installed; /* the new unit is in place */
    bool started, serving;
    bool put_back;      /* it failed after the write: the previous state is back */
    char journal[2048]; /* watch's newest journal lines when it did not stay up */
};
/* Render, verify, write (atomic; the previous unit kept), daemon-reload, with start enable and
 * restart and prove it stays up; on a failure after the write, the previous unit put back.
 * SW_EGATE refused by verify, SW_ECHILD it did not stay up, a systemctl's error. */
int sw_watch_install(const struct sw_watch_install_opts *o, struct sw_watch_install_result *r,
                     struct sw_err *e);

struct sw_watch_logs_opts {
    bool follow;
    const char *since; /* journalctl --since value, or NULL */
    int boot;          /* journalctl --boot N (0: none, -1 the previous, ...); set_boot */
    bool set_boot;
    size_t lines;        /* the last N (0: 200) when not following */
    int64_t deadline_ms; /* 0: 30 s (following: until stop) */
    volatile sig_atomic_t *stop;
    /* Each line: its text, and the engine's failure class when the boot-log parser classifies
     * it (NULL otherwise). */
    void (*on_line)(void *ctx, const char *line, const char *cls, const char *phase);
    void *ctx;
    char *from; /* OUT (may be NULL): what was read, in words ("up's log PATH ...") */
    size_t from_n;
};
/* The endpoint's journal from its host, or, for an endpoint `up` runs on this machine, up's log
 * (module comment; src/watch/logs.c). SW_ENET the host, SW_ENOENT no such endpoint or log,
 * SW_EUNSUPPORTED a --since inside up's run. */
int sw_watch_logs(const struct sw_fleet *f, const char *endpoint,
                  const struct sw_watch_logs_opts *o, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
