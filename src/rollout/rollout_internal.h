/*
 * rollout's internals, shared by its files (rollout.c: the deploy's pipeline and its result;
 * session.c: the session with the host, each step's record, the failures' names; rollback.c: a
 * saved set put back and proven; commit.c: the commit; rollout_host.c: the remote scripts, the
 * lock and the file moves; rollout_watch.c: the boot watch, readiness, liveness;
 * rollout_ledger.c: the ledger's side).
 */
#ifndef SW_ROLLOUT_INTERNAL_H
#define SW_ROLLOUT_INTERNAL_H

#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/host.h>
#include <slipway/ledger.h>
#include <slipway/rollout.h>
#include <slipway/unit.h>

#include <stdbool.h>

struct sw__ro_boot;

struct sw__ro {
    const struct sw_fleet *f;
    const struct sw_fleet_endpoint *ep;
    const struct sw_rollout_opts *o;
    struct sw_rollout_result *r;
    const struct sw_engine *eng;
    struct sw_host h;
    bool host_open;
    bool locked;
    char lock_owner[256];
    char lock_stale[512];       /* the dead holder whose lock was taken over, "" none */
    char name[240];             /* the unit's name without .service */
    char unit[256];             /* NAME.service */
    char live_unit[512];        /* /etc/systemd/system/NAME.service */
    char live_env[512];         /* the EnvironmentFile= path */
    char state[512];            /* /var/lib/slipway/rollout/NAME */
    char url[512];              /* http://ADDR:PORT, as the endpoint's host sees it when routed */
    struct sw_host_route route; /* the way to url (opened at the first proof) */
    bool route_open;
    uint64_t t_down; /* sw_now_ns() when the endpoint stopped serving; 0: it was not */
    int64_t attempt; /* the ledger's attempt, 0 none */
    bool same_shape_as_last_good;
    char last_step[32];    /* the last step recorded (where an interruption happened) */
    char gone_msg[512];    /* why the host was found unreachable after a failed step */
    bool ledger_committed; /* the ledger finished the attempt `committed` (its tag named) */
    bool keep_master;      /* close leaves the host's ssh master running (serve's forwards ride
                            * on it: unit.c) */
};

/* systemctl stop / start / restart's bound */
#define SW__RO_STOP_MS (5 * 60 * 1000)

/* session.c: c for endpoint ep (its paths and URL on its host; o NULL: the defaults); r and rd
 * zeroed (rd is the caller's to free), r's steps begun. */
int sw__ro_init(struct sw__ro *c, const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                const struct sw_rollout_opts *o, struct sw_rollout_result *r,
                struct sw_unit_render *rd, struct sw_err *e);
/* The unit's names and places from the render, and the host opened. */
int sw__ro_open(struct sw__ro *c, const struct sw_unit_render *rd, struct sw_err *e);
/* The lock released and the ssh master asked to exit (unless keep_master): nothing of this run
 * outlives it. */
void sw__ro_close(struct sw__ro *c);
/* The one recording point of a step: kept in the result and the ledger, printed as progress. */
void sw__ro_record(struct sw__ro *c, const char *step, bool ok, uint64_t t_start, const char *fmt,
                   ...) SW_PRINTF(5, 6);
/* The run's failure: its step, class and words. */
void sw__ro_fail(struct sw__ro *c, const char *step, const char *cls, const char *fmt, ...)
    SW_PRINTF(4, 5);
/* The transport died after the host's files changed: the run ends interrupted. */
void sw__ro_lost_host(struct sw__ro *c, const char *msg);
/* Did a remote step's error come from a transport that is gone? */
bool sw__ro_host_gone(struct sw__ro *c, int rc);
/* systemctl VERB [UNIT] on the host; on failure why (n bytes) says so (why may be NULL). */
int sw__ro_systemctl(struct sw__ro *c, const char *verb, const char *unit, int64_t dl, char *why,
                     size_t n);
/* The unit stopped and its failed state reset. True when the transport was found gone (the run
 * is then interrupted). */
bool sw__ro_stop_unit(struct sw__ro *c);
/* After the host's files changed (rc: how that went, fe its error): daemon-reload, why (n bytes,
 * "" on entry) saying what failed. A transport found gone ends the run interrupted (*lost). The
 * first failure's code. */
int sw__ro_reload(struct sw__ro *c, int rc, const struct sw_err *fe, char *why, size_t n,
                  bool *lost);
/* The endpoint's deploy lock taken on its host (and recorded), then a commit an earlier run
 * left cut off between its halves settled (commit.c: sw__ro_commit_settle). */
int sw__ro_take_lock(struct sw__ro *c, struct sw_err *e);
/* commit.c: a STATE/last-good.new/ left by a cut-off commit completed when the ledger committed
 * its attempt, else removed; recorded as the step "reconcile". */
int sw__ro_commit_settle(struct sw__ro *c, struct sw_err *e);
/* Bring up whatever the live files say (systemctl verb), from a fresh cursor, and prove it
 * serves: readiness and one-token generation. 0 when it ran (*generated: it serves; else the
 * class in b). */
int sw__ro_start_and_prove(struct sw__ro *c, const char *verb, struct sw__ro_boot *b,
                           bool *generated, struct sw_err *e);
/* The same, what the boot showed kept in the result: its evidence (with its class when
 * with_class), the journal. b keeps its class and words; the caller frees it, after an error too. */
int sw__ro_start_and_keep(struct sw__ro *c, const char *verb, bool with_class,
                          struct sw__ro_boot *b, bool *generated, struct sw_err *e);
/* An error once the host was ours from a transport that died: a verdict (interrupted), 0. Else
 * rc. */
int sw__ro_settle(struct sw__ro *c, int rc, struct sw_err *e);

/* rollback.c: the new shape failed after the live files changed: put the rollback set back and
 * prove it. */
int sw__ro_roll_back(struct sw__ro *c, struct sw_err *e);
/* commit.c: the commit step (the host's last-good and tag, the ledger's tag, readings). */
int sw__ro_commit_step(struct sw__ro *c, const json_t *shape, const struct sw_unit_render *rd,
                       struct sw_err *e);

/* The way to the endpoint opened (or made sure of again: its master may have gone quiet): before
 * every proof. The host's error (SW_ENET when it cannot be reached) when it cannot be. */
int sw__ro_route(struct sw__ro *c, struct sw_err *e);

/* sh -c SCRIPT sh ARGS... on the host (args NULL-terminated, at most 11). */
int sw__ro_sh(struct sw__ro *c, const char *script, const char *const *args, int64_t deadline_ms,
              struct sw_host_result *hr, struct sw_err *e);
int sw__ro_lock(struct sw__ro *c, struct sw_err *e);
void sw__ro_unlock(struct sw__ro *c);
/* Who holds the lock now (its owner line; "" when nobody, or a dead holder a lock takes over). */
int sw__ro_lock_holder(struct sw__ro *c, char *holder, size_t n, struct sw_err *e);
/* The newest cursor of the host's whole journal (sw_free), NULL when the journal is empty. */
int sw__ro_cursor(struct sw__ro *c, char **cursor, struct sw_err *e);
/* A remote file's text (sw_free) and whether it exists. */
int sw__ro_cat(struct sw__ro *c, const char *path, char **text, bool *exists, struct sw_err *e);
int sw__ro_verify(struct sw__ro *c, char *out, size_t n, struct sw_err *e);
int sw__ro_save(struct sw__ro *c, const char *set, bool *had, struct sw_err *e);
int sw__ro_swap(struct sw__ro *c, struct sw_err *e);
int sw__ro_unstage(struct sw__ro *c);
int sw__ro_restore(struct sw__ro *c, const char *set, struct sw_err *e);
int sw__ro_remove_live(struct sw__ro *c, struct sw_err *e);
/* The commit in two halves around the ledger's (commit.c says why), and what a cut-off one left. */
int sw__ro_commit_prepare(struct sw__ro *c, struct sw_err *e);
int sw__ro_commit_finish(struct sw__ro *c, char *tag, size_t n, struct sw_err *e);
int sw__ro_commit_pending(struct sw__ro *c, bool *present, int64_t *attempt, struct sw_err *e);
int sw__ro_commit_drop(struct sw__ro *c, struct sw_err *e);
int sw__ro_exists(struct sw__ro *c, const char *path, bool *yes, struct sw_err *e);

/* The ledger side (rollout_ledger.c); no-ops without a writable ledger. */
int sw__ro_ledger_begin(struct sw__ro *c, const json_t *shape, struct sw_err *e);
void sw__ro_ledger_step(struct sw__ro *c, const char *step, bool ok, double ms, const char *detail);
/* One "waiver" step per waiver the gates applied (gate.h sw_gate_waive's "waivers"), each with
 * the waiver as its detail: what a deploy went through on the operator's word. */
void sw__ro_ledger_waivers(struct sw__ro *c, const json_t *waivers);
int sw__ro_ledger_commit(struct sw__ro *c, const json_t *shape, const struct sw_unit_render *rd,
                         const json_t *payload, const char *image, char *name, size_t n,
                         struct sw_err *e);
void sw__ro_ledger_finish(struct sw__ro *c);
/* A device reading taken at commit, as a usage row of the endpoint's shape (so `slipway
 * history` shows it among the tag's measured figures); 0 and *id 0 when not writing. */
int sw__ro_ledger_usage(struct sw__ro *c, const struct sw_ledger_usage *u, int64_t *id,
                        struct sw_err *e);

/* How a watched boot ended. */
struct sw__ro_boot {
    bool ready;
    char cls[64];   /* "" when ready */
    char msg[1024]; /* the evidence in words */
    json_t *evidence;
    char *journal; /* the unit's journal since the cursor (sw_free) */
    uint64_t ready_ns;
};
void sw__ro_boot_free(struct sw__ro_boot *b);
/* Watch the unit from `cursor` until the health path answers 200 or the boot fails. */
int sw__ro_watch(struct sw__ro *c, const char *cursor, struct sw__ro_boot *b, struct sw_err *e);
/* How the engine ended under a request after it served (the battery's worst case). */
struct sw__ro_death {
    bool died;        /* the unit's journal or state shows the engine died after `cursor` */
    bool oom;         /* by the kernel's OOM killer (cls "runtime_oom") */
    char cls[64];     /* "runtime_oom", "runtime_death"; "" when it lives */
    char msg[1024];   /* the evidence in words */
    json_t *evidence; /* the unit's state, class, phase "runtime", during, memory_max */
    char *journal;    /* the unit's journal after the cursor, last lines (sw_free) */
};
/* Read the unit's journal after `cursor` and its state: did the engine die (during: what was
 * running, for the message)? Always 0; d filled (free evidence and journal). */
int sw__ro_runtime_death(struct sw__ro *c, const char *cursor, const char *during,
                         struct sw__ro_death *d);
/* One-token generation: 0 when it answered 2xx with a choice; else the reason in why. */
int sw__ro_generate(struct sw__ro *c, char *why, size_t n);

#endif
