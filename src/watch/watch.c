/*
 * watch/watch: sw_watch_run, the supervisor's loop (include/slipway/watch.h says what it does).
 * One thread per host: each look of an endpoint is status's (sw_deploy_status for that endpoint,
 * bounded by the host's deadline), so a frozen host holds up only its own thread. The policy
 * and every write to the ledger run under one lock; restarts and rollbacks run on the host's
 * thread outside it.
 *
 * Exactly once: an action is recorded with its key BEFORE it is taken (the key: the endpoint,
 * the episode, i.e. the ledger row of the observation where it stopped serving, the action and
 * its ordinal). A watch that was killed finds the key and does not take it again: at most once,
 * by design (a restart half-done is proven or not by the next look).
 *
 * What it deliberately does not do: deploy, print, or hold state outside the ledger that a
 * restart would need.
 */
#include "watch_internal.h"

#include <slipway/report.h>
#include <slipway/rollout.h>
#include <slipway/service.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct hostw {
    struct sw__watch *w;
    const struct sw_fleet_host *fh;
    size_t *idx; /* indexes into w->eps */
    size_t n;
    pthread_t th;
    bool started;
};

bool sw__watch_stopped(const struct sw__watch *w)
{
    return w->stopping || (w->o->stop && *w->o->stop);
}

int sw__watch_record(struct sw__watch *w, const struct sw_ledger_watch_event *ev, int64_t *id,
                     struct sw_err *e)
{
    pthread_mutex_lock(&w->mu);
    int rc = sw_ledger_record_watch(w->o->ledger, ev, id, e);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int64_t sw__watch_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void emit(struct sw__watch *w, const struct sw_watch_event *ev)
{
    if (w->o->on_event) {
        pthread_mutex_lock(&w->mu);
        w->o->on_event(w->o->ctx, ev);
        pthread_mutex_unlock(&w->mu);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Resume: what the ledger says about each endpoint.
 */
static int resume(struct sw__watch *w, struct sw__wep *x, struct sw_err *e)
{
    json_t *obs = NULL, *acts = NULL;
    int rc = sw_ledger_watch_list(w->o->ledger, x->ep->name, "observation", 1, &obs, e);
    if (!rc)
        rc = sw_ledger_watch_list(w->o->ledger, x->ep->name, "action", 200, &acts, e);
    if (rc)
        goto out;
    const json_t *last = json_array_get(obs, 0);
    if (last) {
        const char *s = json_string_value(json_object_get(last, "state"));
        for (int i = 0; s && i < SW_WATCH_N_STATES; i++)
            if (!strcmp(s, sw_watch_state_name((enum sw_watch_state)i)))
                x->state = (enum sw_watch_state)i;
        const json_t *ev = json_object_get(last, "evidence");
        x->episode = json_integer_value(json_object_get(ev, "episode"));
        if (!x->episode && sw_watch_state_needs_action(x->state))
            x->episode = json_integer_value(json_object_get(last, "id"));
        const json_t *pr = json_object_get(ev, "restarts");
        if (json_is_integer(pr))
            x->prev_restarts = json_integer_value(pr);
    }
    char prefix[200];
    snprintf(prefix, sizeof(prefix), "%s#%lld#", x->ep->name, (long long)x->episode);
    size_t i;
    const json_t *a;
    json_array_foreach(acts, i, a)
    {
        const char *key = json_string_value(json_object_get(a, "action_key"));
        const char *act = json_string_value(json_object_get(a, "action"));
        int64_t at = json_integer_value(json_object_get(a, "observed_ms"));
        if (!key || !act)
            continue;
        if (at > x->last_action_ms && (!strcmp(act, "restart") || !strcmp(act, "rollback")))
            x->last_action_ms = at;
        if (!x->episode || strncmp(key, prefix, strlen(prefix)))
            continue;
        if (!strcmp(act, "restart"))
            x->restarts_done++;
        else if (!strcmp(act, "rollback"))
            x->rolled_back = true;
    }
out:
    json_decref(obs);
    json_decref(acts);
    return rc;
}

/* Restarts watch took of this endpoint in the policy's window (any episode). */
static unsigned restarts_in_window(struct sw__watch *w, struct sw__wep *x)
{
    json_t *acts = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&w->mu);
    int rc = sw_ledger_watch_list(w->o->ledger, x->ep->name, "action", 500, &acts, NULL);
    pthread_mutex_unlock(&w->mu);
    if (rc)
        return 0;
    int64_t since = sw__watch_wall_ms() - x->pol.restart_window_ms;
    size_t i;
    const json_t *a;
    json_array_foreach(acts, i, a)
    {
        const char *act = json_string_value(json_object_get(a, "action"));
        if (act && !strcmp(act, "restart") && json_object_get(a, "action_key") &&
            !json_is_null(json_object_get(a, "action_key")) &&
            json_integer_value(json_object_get(a, "observed_ms")) >= since)
            n++;
    }
    json_decref(acts);
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Acting.
 */

/* Record the action's key first; false when it is already there (taken before). */
/* One action row of the ledger: `key` (the claim written before acting) or the outcome. */
static int action_row(struct sw__watch *w, struct sw__wep *x, const char *action, const char *key,
                      const char *out, const char *detail, struct sw_err *e)
{
    json_t *ev = json_object();
    sw_json_set_str(ev, "detail", detail);
    sw_json_set_int(ev, "episode", x->episode);
    struct sw_ledger_watch_event le = {.endpoint = x->ep->name,
                                       .kind = "action",
                                       .state = sw_watch_state_name(x->state),
                                       .action = action,
                                       .action_key = key,
                                       .outcome = out,
                                       .evidence = ev};
    int rc = sw__watch_record(w, &le, NULL, e);
    json_decref(ev);
    return rc;
}

static bool claim(struct sw__watch *w, struct sw__wep *x, const char *action, const char *key,
                  const char *detail)
{
    struct sw_err e;
    sw_err_clear(&e);
    return action_row(w, x, action, key, "started", detail, &e) == 0;
}

static void outcome(struct sw__watch *w, struct sw__wep *x, const char *action, const char *out,
                    const char *detail, const json_t *st)
{
    action_row(w, x, action, NULL, out, detail, NULL);
    struct sw_watch_event we = {.endpoint = x->ep->name,
                                .host = x->ep->host ? x->ep->host->name : "",
                                .kind = "action",
                                .state = x->state,
                                .prev = x->state,
                                .action = action,
                                .outcome = out,
                                .detail = detail,
                                .evidence = st};
    emit(w, &we);
    pthread_mutex_lock(&w->mu);
    x->actions++;
    pthread_mutex_unlock(&w->mu);
}

static void do_rollback(struct sw__watch *w, struct sw__wep *x, const json_t *st)
{
    char key[256], detail[1200];
    snprintf(key, sizeof(key), "%s#%lld#rollback", x->ep->name, (long long)x->episode);
    x->rolled_back = true;
    x->last_action_ms = sw__watch_wall_ms();
    if (!claim(w, x, "rollback", key, "rolling back to last-good"))
        return;
    /* recorded as a rollout attempt too (history and report show it as any rollback), through
     * a connection of its own: the rollout's transactions never interleave with this watch's
     * other threads' writes on the shared one */
    char note[300];
    struct sw_ledger own;
    struct sw_err le;
    sw_err_clear(&le);
    bool own_open = w->o->ledger_path && !sw_ledger_open(&own, w->o->ledger_path, NULL, &le);
    snprintf(note, sizeof(note), "slipway watch: %s, episode #%lld, rollback_after %u reached",
             sw_watch_state_name(x->state), (long long)x->episode, x->pol.rollback_after);
    struct sw_rollout_opts ro = {.ledger = own_open ? &own : NULL,
                                 .record = own_open,
                                 .note = note,
                                 .cause = sw_watch_state_name(x->state)};
    struct sw_rollout_result rr;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_rollout_rollback(w->f, x->ep, &ro, &rr, &e);
    char rec[600];
    if (rr.attempt > 0)
        snprintf(rec, sizeof(rec), " (rollout attempt #%lld)", (long long)rr.attempt);
    else
        snprintf(rec, sizeof(rec), " (not recorded as a rollout attempt: %.500s)",
                 rr.ledger_msg[0] ? rr.ledger_msg
                 : own_open       ? "-"
                                  : le.msg);
    if (own_open)
        sw_ledger_close(&own);
    if (rc)
        snprintf(detail, sizeof(detail), "rollback: %.500s%.600s", e.msg, rec);
    else
        snprintf(detail, sizeof(detail), "rollback: %s%s%.400s%.600s",
                 sw_rollout_outcome_name(rr.outcome), rr.rollback_msg[0] ? ": " : "",
                 rr.rollback_msg, rec);
    outcome(w, x, "rollback",
            rc == SW_EBUSY                             ? "refused_locked"
            : !rc && rr.outcome == SW_ROLLOUT_RESTORED ? "ok"
                                                       : "failed",
            detail, st);
    sw_rollout_result_free(&rr);
}

static void act(struct sw__watch *w, struct sw__wep *x, const json_t *st, int64_t nrestarts)
{
    const struct sw_watch_policy *p = &x->pol;
    char key[256], detail[1200];
    if (!p->act || !x->ep->host)
        return;
    /* a restart's boot is given the grace of one interval (at least 10 s) before it is judged */
    int64_t grace = SW_MAX(p->interval_ms, 10000);
    if (x->last_action_ms && sw__watch_wall_ms() - x->last_action_ms < grace)
        return;
    if (x->rolled_back)
        return; /* one rollback per episode; a rollback that did not serve is the operator's */
    /* systemd's own restarts count as failed ones: a unit that crash-looped N times (and
     * perhaps hit its start limit: failed, "down") has proven the shape does not stay up */
    bool roll =
        p->rollback_after > 0 &&
        ((x->state != SW_WATCH_DEAD_GENERATION && nrestarts >= (int64_t)p->rollback_after) ||
         x->restarts_done >= p->rollback_after);
    if (roll) {
        do_rollback(w, x, st);
        return;
    }
    if (x->state == SW_WATCH_CRASH_LOOP)
        return; /* systemd restarts it; watch counts until rollback_after */
    /* a unit stopped cleanly (inactive, result success, no automatic restarts) was stopped on
     * purpose (`systemctl stop`, maintenance): said once, not undone */
    const json_t *u = json_object_get(st, "unit");
    const char *active = json_string_value(json_object_get(u, "active"));
    const char *result = json_string_value(json_object_get(u, "result"));
    if (active && result && !strcmp(active, "inactive") && !strcmp(result, "success") &&
        nrestarts == 0) {
        snprintf(key, sizeof(key), "%s#%lld#stopped", x->ep->name, (long long)x->episode);
        snprintf(detail, sizeof(detail),
                 "not restarted: the unit was stopped cleanly (inactive, result success): on "
                 "purpose, as far as watch can tell");
        if (claim(w, x, "refused", key, detail))
            outcome(w, x, "refused", "stopped_on_purpose", detail, st);
        return;
    }
    if (restarts_in_window(w, x) >= p->restart_max) {
        snprintf(key, sizeof(key), "%s#%lld#ratelimited", x->ep->name, (long long)x->episode);
        snprintf(detail, sizeof(detail),
                 "not restarted: %u restart(s) in the last %.0f s is the policy's limit",
                 p->restart_max, p->restart_window_ms / 1000.0);
        if (claim(w, x, "refused", key, detail))
            outcome(w, x, "refused", "rate_limited", detail, st);
        return;
    }
    unsigned k = x->restarts_done + 1;
    snprintf(key, sizeof(key), "%s#%lld#restart#%u", x->ep->name, (long long)x->episode, k);
    x->restarts_done = k;
    x->last_action_ms = sw__watch_wall_ms();
    if (!claim(w, x, "restart", key, "restarting the unit"))
        return;
    struct sw_err e;
    sw_err_clear(&e);
    int64_t dl = w->o->restart_deadline_ms > 0 ? w->o->restart_deadline_ms : 60000;
    int rc = sw__watch_restart(x->ep, st, dl, detail, sizeof(detail), &e);
    outcome(w, x, "restart", rc == SW_EBUSY ? "refused_locked" : rc ? "failed" : "ok", detail, st);
}

/* ---------------------------------------------------------------------------------------------
 * One look.
 */
static void snapshot(struct sw__watch *w, struct sw__wep *x, const json_t *st, bool reached,
                     int64_t nrestarts)
{
    pthread_mutex_lock(&w->mu);
    x->looked = true;
    x->looks++;
    x->reachable = reached;
    if (reached) {
        const json_t *lv = json_object_get(st, "liveness");
        x->proof_ms = json_number_value(json_object_get(lv, "ms"));
        x->n_restarts = nrestarts;
        x->drift = json_array_size(json_object_get(json_object_get(st, "shape"), "drift"));
        const json_t *rd = json_object_get(json_object_get(st, "devices"), "readings");
        if (rd) { /* a look without devices keeps the last readings */
            json_decref(x->devices);
            x->devices = json_deep_copy(rd);
        }
    }
    pthread_mutex_unlock(&w->mu);
}

/* ---------------------------------------------------------------------------------------------
 * A look bounded by watch itself: status bounds each host operation by the host's deadline, but
 * a frozen host can still hold a step past it (measured: 23 s to the first "unreachable" at a 3 s
 * deadline). The look runs on a thread of its own; past its deadline + 2 s the endpoint is
 * reported unreachable and the look is left to finish: no new look of that endpoint starts
 * until it has.
 */
struct lookjob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs; /* the waiter's and the thread's */
    bool done;
    const struct sw_fleet *f;
    struct sw_status_opts so;
    json_t *doc;
    int rc;
    struct sw_err e;
};

static void lookjob_put(struct lookjob *j)
{
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left)
        return;
    json_decref(j->doc);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    sw_free(j);
}

static void *lookjob_main(void *arg)
{
    struct lookjob *j = arg;
    json_t *doc = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_deploy_status(j->f, &j->so, &doc, NULL, NULL, &e);
    pthread_mutex_lock(&j->mu);
    j->doc = doc;
    j->rc = rc;
    j->e = e;
    j->done = true;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    lookjob_put(j);
    return NULL;
}

static int bounded_status(struct sw__watch *w, struct sw__wep *x, const struct sw_status_opts *so,
                          json_t **doc, struct sw_err *e)
{
    (void)w;
    *doc = NULL;
    if (x->stuck) {
        struct lookjob *old = x->stuck;
        pthread_mutex_lock(&old->mu);
        bool done = old->done;
        pthread_mutex_unlock(&old->mu);
        if (!done)
            return sw_err_set(e, SW_ETIMEDOUT,
                              "host %s: the last look is still waiting on it (past its deadline)",
                              x->ep->host->name);
        lookjob_put(old);
        x->stuck = NULL;
    }
    struct lookjob *j = sw_calloc(1, sizeof(*j));
    if (!j)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 2;
    j->f = w->f;
    j->so = *so;
    pthread_t th;
    if (pthread_create(&th, NULL, lookjob_main, j)) {
        lookjob_main(j); /* no thread: in turn (it drops its own reference) */
    } else {
        pthread_detach(th);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ms = so->deadline_ms + 2000;
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &until) == 0)
        ;
    bool done = j->done;
    int rc = 0;
    if (done) {
        rc = j->rc;
        *doc = j->doc;
        j->doc = NULL;
        if (rc && e)
            *e = j->e;
    }
    pthread_mutex_unlock(&j->mu);
    if (!done) {
        x->stuck = j; /* its last reference: dropped when it is found done */
        return sw_err_set(e, SW_ETIMEDOUT,
                          "host %s: no answer within the look's deadline "
                          "(%.1f s + 2 s)",
                          x->ep->host->name, so->deadline_ms / 1000.0);
    }
    lookjob_put(j);
    return rc;
}

static void look(struct sw__watch *w, struct sw__wep *x)
{
    struct sw_status_opts so = {0};
    json_t *doc = NULL;
    struct sw_err e;
    char why[1024];
    sw_err_clear(&e);
    so.only = x->ep->name;
    so.deadline_ms = w->o->deadline_ms > 0 ? w->o->deadline_ms : SW_MIN(x->pol.interval_ms, 20000);
    so.http_timeout_ms = (unsigned)SW_MIN(so.deadline_ms / 2, 10000);
    /* the device tool (found by a dozen commands, then run) every devices_every looks and on
     * a look after a change of state, not on every one */
    so.skip_devices = x->looks % x->pol.devices_every != 0 && x->state == x->last_state_seen;
    int rc = bounded_status(w, x, &so, &doc, &e);
    const json_t *st = rc ? NULL : json_array_get(json_object_get(doc, "endpoints"), 0);
    enum sw_watch_state s = rc == SW_ETIMEDOUT ? SW_WATCH_UNREACHABLE
                            : rc               ? SW_WATCH_UNKNOWN
                                 : sw_watch_classify(st, x->ep, x->prev_restarts, why, sizeof(why));
    if (rc)
        snprintf(why, sizeof(why), "%s%.900s", rc == SW_ETIMEDOUT ? "" : "status: ", e.msg);
    int64_t nr = json_integer_value(json_object_get(json_object_get(st, "unit"), "restarts"));
    bool reached = st && json_is_true(json_object_get(st, "reached"));
    snapshot(w, x, st, reached, nr);
    if (s != x->state) {
        enum sw_watch_state prev = x->state;
        bool new_episode = !sw_watch_state_needs_action(prev) && sw_watch_state_needs_action(s);
        json_t *ev = json_object();
        sw_json_set_str(ev, "why", why);
        sw_json_set_int(ev, "restarts", nr);
        if (!new_episode && sw_watch_state_needs_action(s))
            sw_json_set_int(ev, "episode", x->episode);
        if (st)
            sw_json_set_new(ev, "status", json_deep_copy(st));
        int64_t id = 0;
        struct sw_ledger_watch_event le = {.endpoint = x->ep->name,
                                           .kind = "observation",
                                           .state = sw_watch_state_name(s),
                                           .evidence = ev};
        /* the episode is this row's id when a new one begins: recorded, then set */
        pthread_mutex_lock(&w->mu);
        int lrc = sw_ledger_record_watch(w->o->ledger, &le, &id, &e);
        pthread_mutex_unlock(&w->mu);
        if (lrc) {
            json_decref(ev);
            json_decref(doc);
            return; /* the next look tries again */
        }
        if (new_episode) {
            x->episode = id;
            x->restarts_done = 0;
            x->rolled_back = false;
        } else if (s == SW_WATCH_SERVING) {
            x->episode = 0;
            x->restarts_done = 0;
            x->rolled_back = false;
        }
        /* the episode goes into the row's successors; the row itself names it by its own id */
        x->state = s;
        struct sw_watch_event we = {.endpoint = x->ep->name,
                                    .host = x->ep->host ? x->ep->host->name : "",
                                    .kind = "observation",
                                    .state = s,
                                    .prev = prev,
                                    .detail = why,
                                    .evidence = st};
        emit(w, &we);
        /* one alert per change of state (not the first look's "serving") */
        if (w->f->alert && !(prev == SW_WATCH_UNKNOWN && s == SW_WATCH_SERVING)) {
            char key[256];
            snprintf(key, sizeof(key), "%s#obs%lld#alert", x->ep->name, (long long)id);
            json_t *aj = sw_watch_event_json(&we);
            size_t ok = 0;
            struct sw_err ae;
            sw_err_clear(&ae);
            int arc = sw_watch_alert(w->f, aj, &ok, &ae);
            json_t *aev = json_object();
            sw_json_set_int(aev, "delivered", (json_int_t)ok);
            sw_json_set_int(aev, "hooks", (json_int_t)json_array_size(w->f->alert));
            if (arc)
                sw_json_set_str(aev, "error", ae.msg);
            struct sw_ledger_watch_event al = {.endpoint = x->ep->name,
                                               .kind = "alert",
                                               .state = sw_watch_state_name(s),
                                               .action_key = key,
                                               .outcome = arc ? "failed" : "delivered",
                                               .evidence = aev};
            sw__watch_record(w, &al, NULL, NULL);
            struct sw_watch_event wa = we;
            wa.kind = "alert";
            wa.outcome = arc ? "failed" : "delivered";
            wa.detail = arc ? ae.msg : "delivered to every hook";
            wa.evidence = NULL;
            emit(w, &wa);
            json_decref(aev);
            json_decref(aj);
        }
        json_decref(ev);
    }
    /* unreachable needs no action: watch never acts on a host it cannot reach (the observation
     * said so once) */
    bool busy;
    pthread_mutex_lock(&w->mu);
    busy = x->job_running;
    x->acting = !busy && sw_watch_state_needs_action(s);
    pthread_mutex_unlock(&w->mu);
    if (x->acting)
        act(w, x, st, nr);
    pthread_mutex_lock(&w->mu);
    x->acting = false;
    pthread_mutex_unlock(&w->mu);
    if (st)
        x->prev_restarts = nr;
    x->last_state_seen = s;
    json_decref(doc);
}

static uint64_t jittered(int64_t interval_ms)
{
    int64_t j = interval_ms / 10;
    int64_t add = j > 0 ? (int64_t)(random() % (long)(j + 1)) : 0;
    return (uint64_t)(interval_ms - j / 2 + add) * 1000000ull;
}

static void *host_main(void *arg)
{
    struct hostw *hw = arg;
    struct sw__watch *w = hw->w;
    bool once_done = false;
    while (!sw__watch_stopped(w) && !once_done) {
        uint64_t now = sw_now_ns(), next = now + 1000000000ull;
        once_done = w->o->once;
        for (size_t i = 0; i < hw->n && !sw__watch_stopped(w); i++) {
            struct sw__wep *x = &w->eps[hw->idx[i]];
            if (now >= x->next_ns) {
                look(w, x);
                x->next_ns = sw_now_ns() + jittered(x->pol.interval_ms);
            }
            if (x->next_ns < next)
                next = x->next_ns;
        }
        while (!once_done && !sw__watch_stopped(w) && sw_now_ns() < next) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* The newest bench figures per endpoint, from the report's document (ledger benches). */
static void bench_figures(struct sw__watch *w)
{
    json_t *doc = NULL;
    struct sw_report_opts ro = {.ledger = w->o->ledger};
    pthread_mutex_lock(&w->mu);
    int rc = sw_report_collect(w->f, &ro, &doc, NULL);
    pthread_mutex_unlock(&w->mu);
    if (rc)
        return;
    size_t i;
    const json_t *ep;
    json_array_foreach(json_object_get(doc, "endpoints"), i, ep)
    {
        const char *name = json_string_value(json_object_get(ep, "name"));
        const json_t *m = json_object_get(ep, "measured");
        for (size_t k = 0; name && k < w->n; k++) {
            if (strcmp(w->eps[k].ep->name, name))
                continue;
            for (int f = 0; f < 2; f++) {
                const json_t *v = json_object_get(m, f ? "prefill_tok_s" : "decode_tok_s");
                if (json_is_array(v))
                    v = json_array_get(v, json_array_size(v) - 1);
                double d = json_is_number(v) ? json_number_value(v) : -1;
                pthread_mutex_lock(&w->mu);
                if (f)
                    w->eps[k].prefill = d;
                else
                    w->eps[k].decode = d;
                pthread_mutex_unlock(&w->mu);
            }
        }
    }
    json_decref(doc);
}

json_t *sw__watch_snapshot(struct sw__watch *w)
{
    json_t *a = json_array();
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; a && i < w->n; i++) {
        const struct sw__wep *x = &w->eps[i];
        json_t *o = json_object();
        sw_json_set_str(o, "endpoint", x->ep->name);
        sw_json_set_str(o, "host", x->ep->host ? x->ep->host->name : "");
        sw_json_set_str(o, "state", sw_watch_state_name(x->state));
        sw_json_set_bool(o, "looked", x->looked);
        sw_json_set_bool(o, "reachable", x->reachable);
        sw_json_set_real(o, "proof_ms", x->proof_ms);
        sw_json_set_int(o, "restarts", x->n_restarts);
        sw_json_set_int(o, "drift", (json_int_t)x->drift);
        sw_json_set_int(o, "actions", x->actions);
        sw_json_set_int(o, "looks", (json_int_t)x->looks);
        if (x->decode >= 0)
            sw_json_set_real(o, "decode_tok_s", x->decode);
        if (x->prefill >= 0)
            sw_json_set_real(o, "prefill_tok_s", x->prefill);
        sw_json_set_new(o, "devices", x->devices ? json_deep_copy(x->devices) : json_array());
        json_array_append_new(a, o);
    }
    pthread_mutex_unlock(&w->mu);
    return a;
}

static bool wanted(const struct sw_watch_opts *o, const struct sw_fleet_endpoint *ep)
{
    if (!o->only || !o->n_only)
        return ep->enabled;
    for (size_t i = 0; i < o->n_only; i++)
        if (!strcmp(o->only[i], ep->name))
            return true;
    return false;
}

int sw_watch_run(const struct sw_fleet *f, const struct sw_watch_opts *o, struct sw_err *e)
{
    struct sw__watch w = {.f = f, .o = o, .metrics_fd = -1};
    struct hostw *hosts = NULL;
    size_t nh = 0;
    pthread_t mth, sth;
    bool mstarted = false, sstarted = false;
    int rc = 0;
    if (!o->ledger)
        return sw_err_set(e, SW_EINVAL, "watch needs a ledger (its observations and actions)");
    for (size_t i = 0; o->only && i < o->n_only; i++)
        if (!sw_fleet_endpoint(f, o->only[i]))
            return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s'",
                              f->path ? f->path : "the fleet", o->only[i]);
    rc = sw_watch_check_fleet(f, e);
    if (rc)
        return rc;
    pthread_mutex_init(&w.mu, NULL);
    w.eps = sw_calloc(f->n_endpoints ? f->n_endpoints : 1, sizeof(*w.eps));
    hosts = sw_calloc(f->n_hosts ? f->n_hosts : 1, sizeof(*hosts));
    if (!w.eps || !hosts) {
        rc = sw_err_set(e, SW_ENOMEM, "watch: out of memory");
        goto out;
    }
    srandom((unsigned)(sw_now_ns() ^ (uint64_t)getpid()));
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (!wanted(o, ep))
            continue;
        if (!ep->host) {
            rc = sw_err_set(e, SW_EINVAL, "%s: endpoint %s has no host to watch it on",
                            f->path ? f->path : "the fleet", ep->name);
            goto out;
        }
        struct sw__wep *x = &w.eps[w.n];
        x->ep = ep;
        x->prev_restarts = -1;
        x->decode = x->prefill = -1;
        rc = sw_watch_policy_read(f, ep, o->interval_ms, &x->pol, e);
        if (!rc)
            rc = resume(&w, x, e);
        if (rc)
            goto out;
        w.n++;
    }
    if (!w.n) {
        rc = sw_err_set(e, SW_ENOENT, "%s: no enabled endpoint to watch",
                        f->path ? f->path : "the fleet");
        goto out;
    }
    for (size_t i = 0; i < w.n; i++) {
        size_t h = 0;
        while (h < nh && hosts[h].fh != w.eps[i].ep->host)
            h++;
        if (h == nh) {
            hosts[nh].w = &w;
            hosts[nh].fh = w.eps[i].ep->host;
            hosts[nh].idx = sw_calloc(w.n, sizeof(size_t));
            if (!hosts[nh].idx) {
                rc = sw_err_set(e, SW_ENOMEM, "watch: out of memory");
                goto out;
            }
            nh++;
        }
        hosts[h].idx[hosts[h].n++] = i;
    }
    bench_figures(&w);
    if (o->metrics_addr) {
        rc = sw__watch_metrics_start(&w, o->metrics_addr, &mth, e);
        if (rc)
            goto out;
        mstarted = true;
    }
    if (f->schedule && !o->once)
        sstarted = pthread_create(&sth, NULL, sw__watch_schedule_main, &w) == 0;
    for (size_t h = 0; h < nh; h++)
        hosts[h].started = pthread_create(&hosts[h].th, NULL, host_main, &hosts[h]) == 0;
    for (size_t h = 0; h < nh; h++)
        if (hosts[h].started)
            pthread_join(hosts[h].th, NULL);
    w.stopping = 1;
    if (sstarted)
        pthread_join(sth, NULL);
    if (mstarted)
        pthread_join(mth, NULL);
out:
    for (size_t h = 0; hosts && h < nh; h++)
        sw_free(hosts[h].idx);
    sw_free(hosts);
    for (size_t i = 0; w.eps && i < w.n; i++) {
        json_decref(w.eps[i].devices);
        struct lookjob *j = w.eps[i].stuck;
        if (!j)
            continue;
        /* a look still running reads the fleet: give it up to 30 s to end before returning */
        for (int t = 0; t < 300; t++) {
            pthread_mutex_lock(&j->mu);
            bool done = j->done;
            pthread_mutex_unlock(&j->mu);
            if (done)
                break;
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
        lookjob_put(j);
    }
    sw_free(w.eps);
    if (w.metrics_fd >= 0)
        close(w.metrics_fd);
    pthread_mutex_destroy(&w.mu);
    return rc;
}
