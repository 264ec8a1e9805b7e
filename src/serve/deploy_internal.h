/*
 * serve deploy internals: one deploy through serve (POST /admin/deploy) as bluegreen.c (the
 * request, the decision, blue/green, the steps) and stopstart.c (stop-start and its rollback)
 * share it.
 *
 * What it does not do: anything outside serve's deploys (serve_internal.h is serve's).
 */
#ifndef SW_SERVE_DEPLOY_INTERNAL_H
#define SW_SERVE_DEPLOY_INTERNAL_H

#include "serve_internal.h"

#define BG_WAITS         4096
#define BG_DRAIN_DEFAULT 300
#define BG_MAX           8 /* deploys at once (one per model) */

enum bg_phase {
    BG_IDLE,
    EV_STOPPING, /* idle endpoints are evicted to make room (then blue/green or stop-start) */
    BG_STARTING, /* blue/green: the new instance boots beside the old */
    BG_DRAINING, /* blue/green: switched; the old finishes its requests */
    BG_STOPPING, /* blue/green: the old stops */
    SS_DRAINING, /* stop-start: out of rotation, requests queue; the old finishes its requests */
    SS_STOPPING, /* stop-start: the old stops */
    SS_STARTING, /* stop-start: the new shape boots on the endpoint's port */
    SS_ROLLBACK, /* stop-start: the new shape failed; the old shape boots again */
    SS_DONE,     /* stop-start: it serves (or failed); the queue goes to it, then the answer */
    RO_DRAINING, /* another host: out of rotation, requests queue; the old finishes its requests */
    RO_RUNNING,  /* another host: the gated rollout stops, installs, starts and proves the unit */
};

struct sw__dep_fleet {
    struct sw_fleet *fleet;
    char *text; /* what it was read from: the shapes in it boot from this text */
    struct sw__dep_fleet *next;
};

/* One deploy. */
struct sw__deploy {
    struct sw__serve *sv;
    enum bg_phase phase;
    bool blue_green; /* the path: blue/green, else stop-start */
    bool remote;     /* another host's unit: stop-start through the gated rollout */
    bool worst_case; /* the rollout's battery: its worst_case check, the checks it runs */
    char probe_only[256];
    /* the rollout's verdict (written by its thread while RO_RUNNING, then read by the loop) */
    char ro_outcome[32], ro_class[64], ro_msg[1024], ro_rollback[512], ro_tag[160];
    int64_t ro_downtime_ms;
    bool ro_serving;
    char client[64];
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    const struct sw_fleet *fleet;       /* the reload the new shape is in */
    const char *text;                   /* its text */
    const struct sw_fleet_endpoint *ep; /* the new shape, in fleet */
    struct sw_serve_claim claim;
    /* the old shape, as it ran: a stop-start whose new shape fails boots it again */
    const struct sw_fleet_endpoint *old_ep;
    struct sw_serve_claim old_claim;
    char old_host[256];
    unsigned old_port;
    int slot, next; /* the old instance's slot; the new one's (blue/green) */
    int model;
    bool old_ours, old_pinned, rolled_back;
    int victims[16]; /* idle endpoints evicted to make room */
    int n_victims;
    char decision[1400], evicted[600], failure[1300], error[2800];
    char old_addr[300], new_addr[300];
    unsigned new_port;
    uint64_t t0, t_switch, t_drain0, t_stopped, t_evict0, t_evicted, t_rollback0, t_rollback;
    int inflight_at_switch;
    unsigned drain_s;
    struct event *drain_timer;
    uint64_t answered0, failed0; /* the model's answers before the deploy (all; >= 429) */
    double waits[BG_WAITS];      /* queued waits of the model's requests during the deploy */
    int n_waits;
    uint64_t n_queued;
    double wait_max;
    /* the loop of the admin's connection: only its thread touches req and conn (bluegreen.c) */
    struct sw__serve_loop *lp;
    /* its ledger attempt (record.c) */
    int64_t attempt;      /* 0: none recorded */
    json_t *shape;        /* the new shape, canonical: its attempt's and its tag's */
    bool same_shape;      /* as the endpoint's last-good: a failure then is not the shape's */
    char fail_class[64];  /* the new shape's failure, as its boot classed it */
    char ledger_msg[700]; /* why the ledger was not (wholly) written, "" when it was */
};

struct sw__serve_bg {
    struct sw__dep_fleet *fleets; /* every reload: the slots point into them until exit */
    struct sw__deploy d[BG_MAX];
};

/* bluegreen.c */
/* The deploy ended (ok, or error says why): the admin's answer with its figures; back to idle. */
void sw__dep_finish(struct sw__deploy *d, const char *path, const char *error);
/* The fleet ep is in (serve's first read, or a deploy's reload) and its text; NULL: none. */
const struct sw_fleet *sw__dep_fleet_of(struct sw__serve *sv, const struct sw_fleet_endpoint *ep,
                                        const char **text);
/* The deploy a job of its own belongs to (its new instance's boot, or its rollback's). */
struct sw__deploy *sw__dep_of_job(struct sw__serve *sv, const struct sw__serve_job *j);
/* A boot of slot i (`up` in a worker thread) whose end the loop hands to done: the shape of the
 * slot's endpoint from text, as `as` (NULL: its own name) on port (0: its own). 0, or -1. */
int sw__dep_boot(struct sw__deploy *d, int i, const char *text, const char *as, unsigned port,
                 void (*done)(struct sw__serve *sv, struct sw__serve_job *j));
/* Slot x booted and proved (job j): it serves. */
void sw__dep_started(struct sw__serve_ep *x, const struct sw__serve_job *j, bool ours);
/* The drain's bound (--drain) starts. */
void sw__dep_drain_timer(struct sw__deploy *d);

/* stopstart.c */
/* Out of rotation: the model's requests queue while the old drains (then the steps stop it). */
void sw__dep_ss_begin(struct sw__deploy *d);
/* The old stopped: the new shape boots on the endpoint's address; a failure rolls back. */
void sw__dep_ss_boot(struct sw__deploy *d);
/* Another host's endpoint: out of rotation (requests queue) while it drains, then the gated
 * rollout (sw_rollout_deploy) in a worker thread; the unit it leaves serving takes the queue. */
void sw__dep_ro_begin(struct sw__deploy *d);
/* The old drained (or its bound passed): the rollout runs. */
void sw__dep_ro_run(struct sw__deploy *d);
/* The slot takes a shape (ep, priced claim) on ep's own address in fleet f (port: another, 0:
 * the declared one); its pid file RUN_DIR/NAME.pid. 0, or why in why. */
int sw__dep_take_shape(struct sw__serve *sv, struct sw__serve_ep *x, const struct sw_fleet *f,
                       const struct sw_fleet_endpoint *ep, const struct sw_serve_claim *claim,
                       unsigned port, char *why, size_t n);

/* record.c: the deploy in the ledger (docs/serve.md, "The ledger") */
/* The attempt of a deploy serve runs itself begins (path: blue_green, stop_start; none: the law
 * refused it), with a step "decide" (the decision's figures). A failure goes to d->ledger_msg. */
void sw__dep_ledger_begin(struct sw__deploy *d, const char *path);
/* The deploy ended (path as the answer names it; error: why it failed): the step "serve" with
 * the answer's figures, the verdict (committed with a tag, rolled_back, rollback_failed,
 * gate_refused), and answer's "ledger" {path, attempt, outcome, tag, error} (answer may be NULL).
 * Another host's rollout finished its attempt itself: only its step is added. */
void sw__dep_ledger_end(struct sw__deploy *d, const char *path, const char *error, json_t *answer);
/* In the rollout's thread: its own connection to serve's ledger into l and o (false: none, why
 * in d->ledger_msg); after the rollout, sw__dep_ledger_rollout_done takes its attempt and
 * closes l. */
struct sw_rollout_opts;
struct sw_rollout_result;
bool sw__dep_ledger_rollout(struct sw__deploy *d, struct sw_ledger *l, struct sw_rollout_opts *o);
void sw__dep_ledger_rollout_done(struct sw__deploy *d, struct sw_ledger *l, bool have,
                                 const struct sw_rollout_result *r);

#endif
