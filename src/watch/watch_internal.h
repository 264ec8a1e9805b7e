/*
 * watch's internals, shared by its files (classify.c, watch.c, act.c, alert.c, metrics.c,
 * schedule.c, proc.c).
 */
#ifndef SLIPWAY_WATCH_INTERNAL_H
#define SLIPWAY_WATCH_INTERNAL_H

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/watch.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A daily window in UTC minutes [start, end); end < start crosses midnight. */
struct sw__watch_window {
    bool set;
    int start_min, end_min;
};
int sw__watch_window_read(const json_t *v, const struct sw_fleet_at *at, const char *name,
                          struct sw__watch_window *w, struct sw_err *e);
/* Is unix time t inside w (always, when unset)? Milliseconds left in it into *left_ms (INT64_MAX
 * when unset). */
bool sw__watch_window_in(const struct sw__watch_window *w, int64_t t, int64_t *left_ms);

/* A job's slots (schedule.c). Slot k covers [anchor + k*every, anchor + (k+1)*every), the anchor
 * being the window's start on 1970-01-01 (0 without a window), so a window that crosses midnight
 * lies in one slot of a daily job. Times are unix ms. */
int64_t sw__watch_slot_of(int64_t every_ms, const struct sw__watch_window *w, int64_t t_ms);
/* When slot k's window time begins and ends: the first and the last stretch of the slot inside
 * the window (the whole slot without one). false when no moment of the slot is inside it (an
 * hourly job's slots outside a night window). */
bool sw__watch_slot_span(int64_t every_ms, const struct sw__watch_window *w, int64_t k,
                         int64_t *open_ms, int64_t *close_ms);
/* The slots after `settled` whose window time had ended by now_ms and that did not run
 * (ran(ctx, k) false): their count, the first and the last (at most the 1000 newest are
 * looked at). The current slot is one of them only when its window time is over. */
size_t sw__watch_missed(int64_t every_ms, const struct sw__watch_window *w, int64_t settled,
                        int64_t now_ms, bool (*ran)(void *ctx, int64_t k), void *ctx,
                        int64_t *first, int64_t *last);

/* A bare number is seconds; else sw_parse_duration_ms. Absent v leaves *ms. */
int sw__watch_duration(const json_t *v, const struct sw_fleet_at *at, const char *what, int64_t *ms,
                       struct sw_err *e);

/* Run cmd (a string for /bin/sh -c, or a list of words) with `input` on stdin and env extra
 * (NULL-ended "K=V", may be NULL), in its own process group, killed (TERM, then KILL after 2 s)
 * at deadline_ms. stop (may be NULL) ends it early the same way. *exit_code the exit status,
 * -1 killed; *overran when the deadline killed it. 0 when it ran (whatever its status). */
int sw__watch_spawn(const json_t *cmd, const char *input, const char *const *env,
                    int64_t deadline_ms, volatile sig_atomic_t *stop, int *exit_code, bool *overran,
                    struct sw_err *e);

struct lookjob;

/* One endpoint as watch holds it. Fields under the watch's lock unless said. */
struct sw__wep {
    const struct sw_fleet_endpoint *ep;
    struct sw_watch_policy pol;
    enum sw_watch_state state;           /* last recorded */
    enum sw_watch_state last_state_seen; /* at the last look (devices are read on a change) */
    int64_t episode;                     /* the observation row where it left serving, 0 serving */
    unsigned restarts_done;              /* watch's restarts in this episode */
    int64_t last_action_ms;              /* unix ms of watch's last restart/rollback (grace) */
    bool rolled_back;                    /* this episode's rollback ran */
    int64_t prev_restarts;               /* NRestarts at the last look, -1 none */
    uint64_t next_ns;                    /* next look (monotonic; its host thread's) */
    bool job_running;                    /* a schedule job holds the endpoint */
    bool acting;                         /* a restart or rollback runs */
    /* for the metrics page */
    bool looked, reachable;
    uint64_t looks;
    double proof_ms;
    int64_t n_restarts;
    size_t drift;
    json_t *devices;        /* readings array or NULL (owned) */
    double decode, prefill; /* newest bench figures, < 0 none */
    unsigned actions;
    struct lookjob *stuck; /* a look past its deadline, still running (watch.c), or NULL */
};

struct sw__watch {
    const struct sw_fleet *f;
    const struct sw_watch_opts *o;
    pthread_mutex_t mu;
    struct sw__wep *eps;
    size_t n;
    volatile int stopping; /* a fatal error or the caller's stop */
    int metrics_fd;
};

/* Under w->mu: the ledger's calls. */
int sw__watch_record(struct sw__watch *w, const struct sw_ledger_watch_event *ev, int64_t *id,
                     struct sw_err *e);
bool sw__watch_stopped(const struct sw__watch *w);
/* Unix time in ms (CLOCK_REALTIME). */
int64_t sw__watch_wall_ms(void);

/* Restart the endpoint's unit on its host, unless its deploy lock is held (SW_EBUSY naming the
 * holder). */
int sw__watch_restart(const struct sw_fleet_endpoint *ep, const json_t *st, int64_t deadline_ms,
                      char *detail, size_t n, struct sw_err *e);
/* Is the endpoint's deploy lock held on its host? *held and the holder's words. */
int sw__watch_lock_held(const struct sw_fleet_endpoint *ep, int64_t deadline_ms, bool *held,
                        char *holder, size_t n, struct sw_err *e);

/* The metrics server: bind addr (SW_EBUSY when it cannot), serve on its own thread. */
int sw__watch_metrics_start(struct sw__watch *w, const char *addr, pthread_t *th, struct sw_err *e);
/* The snapshot of every endpoint (under the lock), for the metrics page. */
json_t *sw__watch_snapshot(struct sw__watch *w);

/* The schedule thread's body. */
void *sw__watch_schedule_main(void *arg);

#endif
