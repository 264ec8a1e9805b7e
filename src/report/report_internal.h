/*
 * report internals: the pieces collect.c, harness.c, export.c and render.c share.
 */
#ifndef SW_REPORT_INTERNAL_H
#define SW_REPORT_INTERNAL_H

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>
#include <slipway/report.h>

/* An endpoint's window as the plan gives it. */
struct sw__rep_window {
    uint64_t slots;
    uint64_t window; /* tokens one conversation may hold */
    uint64_t pool;   /* tokens the pool holds (0: unknown) */
    bool shared;
    const char *source; /* static */
};
/* SW_ENOENT when neither the plan nor the fleet gives a window. */
int sw__rep_window(const struct sw_fleet_endpoint *ep, const struct sw_plan *p, bool planned,
                   struct sw__rep_window *w);

/* Set o[k] = v (stolen); on a NULL v or a failure *rc = SW_ENOMEM; does nothing once *rc. */
void sw__rep_put(json_t *o, const char *k, json_t *v, int *rc);

/* The endpoint's rows of the ledger (sw_ledger_export), {} without a ledger or rows. */
int sw__rep_ledger_rows(struct sw_ledger *l, const char *name, json_t **out, struct sw_err *e);

/* The harness contract of one endpoint (new reference in *out): {contextWindow, window_source,
 * configured, matches, reasoning, tools, compaction (when it serves compaction) | null}. */
int sw__rep_harness_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                             const struct sw_plan *p, bool planned, json_t **out);

/* The endpoint's deploy tags (new reference; null without a ledger): {last_good: TAG | null,
 * rollback: [TAG] (kept, newest first), retired: [TAG], count, unrestorable (kept tags whose
 * payload or image is gone), checked, unchecked_why, check}; TAG = {name, created, summary,
 * shape_hash, image, note, last_good, kept, retired, retired_why, restorable (true | false |
 * null), missing: [...], restorable_why, payload_paths}. tags.c. */
int sw__rep_tags(struct sw_ledger *l, const struct sw_fleet_endpoint *ep, json_t **out,
                 struct sw_err *e);
/* The restarts the ledger's deploy attempts saw (new reference; null without a ledger):
 * {source, attempts, committed, rolled_back, crash_loops, restarts_seen, last: {attempt, at,
 * class, n_restarts} | null}. tags.c. */
int sw__rep_restarts(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e);

/* A ledger read's rc with "nothing recorded" (SW_ENOENT, e cleared) as 0. tags.c. */
int sw__rep_absent_ok(int rc, struct sw_err *e);
/* The endpoint's status history from watch (new reference; null without a ledger): {source,
 * state, since, changes, restarts, rollbacks, refused, alerts: {delivered, failed}, jobs: {runs,
 * not_ok, missed}, rows, history: [{at, kind, state, action, outcome, detail}] newest first}.
 * watch.c. */
int sw__rep_watch(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e);

/* XML/HTML text escaping into b. */
int sw__rep_esc(struct sw_buf *b, const char *s);

#endif
