/*
 * apply: the whole fleet converges to its file (`slipway diff`, `slipway apply`; docs/apply.md).
 *
 * sw_apply_survey: what apply would change, per host, touching nothing. Every selected endpoint
 * is planned and rendered here (its unit, its environment file, the device memory it takes);
 * then every host is asked at once (a thread per host, each within its own deadline) for each
 * endpoint's installed unit and environment file, the unit's state and whether the payload's
 * paths exist there. An endpoint is
 *   unchanged  installed as rendered, and active;
 *   install    not installed (its unit file is absent);
 *   change     installed, but its files differ from the render (the lines, secrets as ***);
 *   start      installed as rendered, but not active;
 *   stop       `enabled: false` in the fleet while its unit is active (it gives its memory back);
 *   unknown    its host could not be reached (said how).
 * With the survey come the fleet's own gates, the ones no single endpoint can see: the planned
 * device memory of every enabled endpoint on a device summed against that device (a tensor-
 * parallel group counts on each of its devices), and two endpoints of a host that would bind the
 * same port (on one address, or on every address). A gate refuses every endpoint it names.
 *
 * sw_apply_run: the survey carried out. Hosts in parallel (at most `parallel` at once); on one
 * host, a device's endpoints in one queue: stops first, and when more than one endpoint of a
 * device restarts, all of them are stopped before any starts (so an endpoint that needs memory
 * never starts beside one that has not yet given its memory back); each through the gated
 * rollout and its rollback (rollout.h); a failure ends its device's queue (what it had stopped
 * is started again as it was) while the other devices and hosts go on. An unchanged endpoint is
 * never touched: a second apply restarts nothing. A run killed half-way leaves each host as the
 * rollout leaves it (the lock of a dead process is taken over); the next apply converges.
 *
 * What it deliberately does not do: remove an endpoint's files (a disabled endpoint is stopped,
 * its files kept for the record), deploy a host it cannot reach, or decide for the operator
 * (a gate's refusal stands until the fleet changes or waives it).
 */
#ifndef SLIPWAY_APPLY_H
#define SLIPWAY_APPLY_H

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/rollout.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sw_apply_action {
    SW_APPLY_UNCHANGED = 0,
    SW_APPLY_INSTALL,
    SW_APPLY_CHANGE,
    SW_APPLY_START,
    SW_APPLY_STOP,
    SW_APPLY_UNKNOWN,
    SW_APPLY_ABSENT, /* disabled, and its unit is not running: nothing to do */
};
/* "unchanged", "install", "change", "start", "stop", "unknown", "absent". */
const char *sw_apply_action_name(enum sw_apply_action a);

/* What the run did to one endpoint. */
enum sw_apply_outcome {
    SW_APPLY_NOT_RUN = 0,   /* a survey, or the run has not reached it */
    SW_APPLY_LEFT,          /* unchanged (or absent): not touched */
    SW_APPLY_CONVERGED,     /* deployed (committed), started or stopped as the fleet says */
    SW_APPLY_ROLLED_BACK,   /* its deploy failed and the last-good serves again */
    SW_APPLY_FAILED,        /* its deploy or stop failed (and no rollback served) */
    SW_APPLY_NOT_ATTEMPTED, /* a gate refused it, its host could not be reached, or an earlier
                               endpoint of its device failed */
};
/* "not_run", "left", "converged", "rolled_back", "failed", "not_attempted". */
const char *sw_apply_outcome_name(enum sw_apply_outcome o);

#define SW_APPLY_MAX_DEV 8

/* One endpoint in the survey. */
struct sw_apply_item {
    const struct sw_fleet_endpoint *ep;
    size_t host;                 /* index into sw_apply_survey.hosts */
    enum sw_apply_action action; /* from the host (unknown when it was not reached) */
    char why[768];               /* the action in words ("-c 512 -> -c 1024 (unit line 12)") */
    json_t *changes;             /* [{file, line, installed, rendered}], secrets as *** (owned) */
    json_t *missing;             /* [path]: payload paths the host does not have (owned) */
    char unit[256];              /* NAME.service */
    char active[32];             /* ActiveState, "" unknown */
    int64_t main_pid;
    uint64_t n_restarts;
    /* the device memory it takes on each of its devices when it runs (sw_plan_view_claim) */
    size_t n_claims;
    struct {
        const struct sw_fleet_device *dev;
        double bytes;
        char how[160];
    } claims[SW_APPLY_MAX_DEV];
    char plan_why[512]; /* why the plan or render failed, "" when both ran */
    /* the fleet's gates */
    bool refused;
    char refused_why[768];
    /* the run */
    enum sw_apply_outcome outcome;
    char outcome_why[1024];
    char tag[160];   /* a committed deploy's tag */
    int64_t attempt; /* the ledger's attempt, 0 none */
    bool restarted;  /* the run stopped or restarted its unit */
    double seconds;  /* what the run spent on it */
};

struct sw_apply_host {
    const struct sw_fleet_host *fh;
    char transport[300]; /* sw_host_describe */
    bool reached;
    char err[768]; /* why it was not reached */
    double seconds;
};

struct sw_apply_survey {
    struct sw_apply_item *items; /* in fleet order */
    size_t n;
    struct sw_apply_host *hosts; /* the hosts of the selected endpoints, in fleet order */
    size_t n_hosts;
    json_t *refusals; /* [{gate: "cotenancy"|"port", line, endpoints: [...]}] (owned) */
    double seconds;
};

struct sw_apply_opts {
    const char *const *only; /* endpoint names (NULL-terminated); NULL: every endpoint */
    int64_t deadline_ms;     /* per host, the survey's questions (0: 20 s) */
    unsigned parallel;       /* hosts at once (0: every host) */
    const char *ledger_path; /* the run's ledger (each host's thread opens its own); NULL none */
    bool worst_case;         /* the deploys' battery runs the worst case */
    const char *probe_only;  /* the deploys' battery (NULL: the default) */
    int64_t boot_ms;         /* each deploy's boot bound (0: the rollout's) */
    const char *note;        /* recorded with each deploy */
    FILE *progress;          /* a line per step as it runs, or NULL */
};

/*
 * The survey (module comment). SW_ENOENT naming the fleet for an `only` name it does not have;
 * SW_ENOMEM. Hosts that cannot be reached are not errors: their endpoints are `unknown`.
 * s is always initialised; free it with sw_apply_survey_free.
 */
int sw_apply_survey(const struct sw_fleet *f, const struct sw_apply_opts *o,
                    struct sw_apply_survey *s, struct sw_err *e);
void sw_apply_survey_free(struct sw_apply_survey *s);

/*
 * Carry out the survey (module comment), filling each item's outcome. Returns 0 when it ran
 * (read the outcomes), an error only when it could not start (SW_ENOMEM, threads).
 */
int sw_apply_run(const struct sw_fleet *f, struct sw_apply_survey *s, const struct sw_apply_opts *o,
                 struct sw_err *e);

/* How many items have each action / outcome (arrays indexed by the enums, sized 8). */
void sw_apply_count(const struct sw_apply_survey *s, size_t actions[8], size_t outcomes[8]);

/* {"hosts": [{host, transport, reached, error?, seconds, endpoints: [{endpoint, action, why,
 *   changes, missing, unit, active, main_pid, restarts, claims: [{device, bytes, how}],
 *   refused?, refused_why?, outcome?, outcome_why?, tag?, attempt?, restarted?, seconds?}]}],
 *  "refusals", "counts": {action: n...}, "outcomes": {outcome: n...}, "seconds"}.
 * ran: include the run's fields. New reference, NULL on OOM. */
json_t *sw_apply_survey_json(const struct sw_apply_survey *s, bool ran);

#ifdef __cplusplus
}
#endif
#endif
