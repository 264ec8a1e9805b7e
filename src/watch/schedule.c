/*
 * watch/schedule: the fleet's `schedule:` jobs, run by watch (docs/watch.md says why not systemd
 * timers): each entry {name, endpoint?, run, every (default 24h), window "HH:MM-HH:MM" UTC,
 * timeout} runs once per `every` slot, only inside its window, never while another job or one
 * of watch's actions holds its endpoint; it is stopped (TERM, then KILL) at the window's end or
 * its timeout, whichever comes first, and recorded as overran. The slot's key in the ledger
 * makes a restarted watch skip a slot that already ran.
 *
 * Slots are anchored at the window's start (a night window across midnight is one slot of a
 * daily job). A watch that was down catches up: a slot whose window is still open when it comes
 * back runs then, once (only the current slot can run, however many it missed); the slots whose
 * window time ended while it was down are recorded `missed`, once (one row for the run of them,
 * keyed by the last), from the newest slot the ledger has settled for the job.
 *
 * What it deliberately does not do: know what the job does (ladder, bench, status --record are
 * commands like any other), or run a missed slot late, outside its window.
 */
#include "watch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool sw__watch_window_in(const struct sw__watch_window *w, int64_t t, int64_t *left_ms)
{
    if (!w->set) {
        if (left_ms)
            *left_ms = INT64_MAX;
        return true;
    }
    int64_t sod = ((t % 86400) + 86400) % 86400; /* seconds of the UTC day */
    int64_t start = w->start_min * 60, end = w->end_min * 60;
    bool in;
    int64_t left;
    if (start <= end) {
        in = sod >= start && sod < end;
        left = end - sod;
    } else { /* crosses midnight */
        in = sod >= start || sod < end;
        left = sod >= start ? 86400 - sod + end : end - sod;
    }
    if (left_ms)
        *left_ms = left * 1000;
    return in;
}

#define DAY_MS     86400000LL
#define MISSED_MAX 1000 /* slots looked back at */

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b) && ((a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t anchor(const struct sw__watch_window *w)
{
    return w->set ? (int64_t)w->start_min * 60000 : 0;
}

int64_t sw__watch_slot_of(int64_t every_ms, const struct sw__watch_window *w, int64_t t_ms)
{
    return floordiv(t_ms - anchor(w), every_ms > 0 ? every_ms : DAY_MS);
}

bool sw__watch_slot_span(int64_t every_ms, const struct sw__watch_window *w, int64_t k,
                         int64_t *open_ms, int64_t *close_ms)
{
    every_ms = every_ms > 0 ? every_ms : DAY_MS;
    int64_t a = anchor(w) + k * every_ms, b = a + every_ms;
    if (!w->set) {
        *open_ms = a;
        *close_ms = b;
        return true;
    }
    /* each day's window [start, end) (end past midnight when it crosses it), as window_in */
    int64_t start = (int64_t)w->start_min * 60000, end = (int64_t)w->end_min * 60000;
    if (end < start)
        end += DAY_MS;
    bool any = false;
    for (int64_t d = floordiv(a, DAY_MS) - 1; d * DAY_MS < b; d++) {
        int64_t lo = SW_MAX(a, d * DAY_MS + start), hi = SW_MIN(b, d * DAY_MS + end);
        if (lo >= hi)
            continue;
        if (!any)
            *open_ms = lo;
        *close_ms = hi;
        any = true;
    }
    return any;
}

size_t sw__watch_missed(int64_t every_ms, const struct sw__watch_window *w, int64_t settled,
                        int64_t now_ms, bool (*ran)(void *ctx, int64_t k), void *ctx,
                        int64_t *first, int64_t *last)
{
    int64_t cur = sw__watch_slot_of(every_ms, w, now_ms);
    size_t n = 0;
    for (int64_t k = SW_MAX(settled + 1, cur - (MISSED_MAX - 1)); k <= cur; k++) {
        int64_t o, c;
        if (!sw__watch_slot_span(every_ms, w, k, &o, &c) || c > now_ms || ran(ctx, k))
            continue;
        if (!n)
            *first = k;
        *last = k;
        n++;
    }
    return n;
}

struct job {
    struct sw__watch *w;
    const json_t *entry;
    const char *name;
    struct sw__wep *x; /* NULL: the job names no endpoint */
    int64_t every_ms, timeout_ms;
    struct sw__watch_window win;
    bool running;
    pthread_t th;
    bool joinable;
    int64_t deadline_ms;
    char key[256];
    int64_t settled; /* every slot up to this one ran or is recorded missed */
};

/* A job's row in the ledger and, with detail, to on_event (not when the key was there). */
static int job_row(struct job *j, const char *state, const char *outcome, const char *key,
                   json_t *ev, const char *detail)
{
    struct sw__watch *w = j->w;
    struct sw_ledger_watch_event le = {.endpoint = j->x ? j->x->ep->name : "-",
                                       .kind = "job",
                                       .state = state,
                                       .action = j->name,
                                       .action_key = key,
                                       .outcome = outcome,
                                       .evidence = ev};
    int rc = sw__watch_record(w, &le, NULL, NULL);
    if (rc != SW_EEXIST && detail && w->o->on_event) {
        struct sw_watch_event we = {.endpoint = le.endpoint,
                                    .kind = "job",
                                    .action = j->name,
                                    .outcome = outcome,
                                    .detail = detail};
        pthread_mutex_lock(&w->mu);
        w->o->on_event(w->o->ctx, &we);
        pthread_mutex_unlock(&w->mu);
    }
    return rc;
}

static void *job_main(void *arg)
{
    struct job *j = arg;
    struct sw__watch *w = j->w;
    char envf[1100], envl[1100], enve[300];
    const char *env[4];
    size_t ne = 0;
    if (w->o->fleet_path) {
        snprintf(envf, sizeof(envf), "SLIPWAY_FLEET=%s", w->o->fleet_path);
        env[ne++] = envf;
    }
    if (w->o->ledger_path) {
        snprintf(envl, sizeof(envl), "SLIPWAY_LEDGER=%s", w->o->ledger_path);
        env[ne++] = envl;
    }
    if (j->x) {
        snprintf(enve, sizeof(enve), "SLIPWAY_ENDPOINT=%s", j->x->ep->name);
        env[ne++] = enve;
    }
    env[ne] = NULL;
    int code = -1;
    bool over = false;
    struct sw_err e;
    sw_err_clear(&e);
    double t0 = sw_now_s();
    int rc = sw__watch_spawn(json_object_get(j->entry, "run"), NULL, env, j->deadline_ms,
                             w->o->stop, &code, &over, &e);
    double secs = sw_now_s() - t0;
    const char *out = rc ? "failed" : over ? "overran" : code == 0 ? "ok" : "failed";
    char detail[1200];
    if (rc)
        snprintf(detail, sizeof(detail), "job %s: %s", j->name, e.msg);
    else if (over)
        snprintf(detail, sizeof(detail), "job %s overran its window (%.1f s): stopped", j->name,
                 secs);
    else
        snprintf(detail, sizeof(detail), "job %s: exit %d after %.1f s", j->name, code, secs);
    json_t *ev = json_object();
    sw_json_set_str(ev, "detail", detail);
    sw_json_set_str(ev, "job", j->name);
    sw_json_set_real(ev, "seconds", secs);
    sw_json_set_int(ev, "exit", code);
    job_row(j, "finished", out, NULL, ev, detail);
    json_decref(ev);
    pthread_mutex_lock(&w->mu);
    if (j->x)
        j->x->job_running = false;
    j->running = false;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Is slot k's key (it ran, or started) in the ledger? */
static bool ran(void *ctx, int64_t k)
{
    struct job *j = ctx;
    char key[256];
    bool found = false;
    snprintf(key, sizeof(key), "job#%s#%lld", j->name, (long long)k);
    pthread_mutex_lock(&j->w->mu);
    sw_ledger_watch_has_key(j->w->o->ledger, key, &found, NULL);
    pthread_mutex_unlock(&j->w->mu);
    return found;
}

/* The newest slot the ledger has settled for j (ran, or recorded missed), else the one before
 * the slot of now (nothing before a job's first sight is missed; its current slot is, when its
 * window time is over). */
static void settled_from_ledger(struct job *j, int64_t now_ms)
{
    struct sw__watch *w = j->w;
    json_t *rows = NULL;
    char prefix[300];
    int n = snprintf(prefix, sizeof(prefix), "job#%s#", j->name);
    int64_t best = INT64_MIN, o, c, cur = sw__watch_slot_of(j->every_ms, &j->win, now_ms);
    pthread_mutex_lock(&w->mu);
    int rc =
        sw_ledger_watch_list(w->o->ledger, j->x ? j->x->ep->name : "-", "job", 500, &rows, NULL);
    pthread_mutex_unlock(&w->mu);
    size_t i;
    json_t *r;
    json_array_foreach(rc ? NULL : rows, i, r)
    {
        const char *key = json_string_value(json_object_get(r, "action_key"));
        if (!key || strncmp(key, prefix, (size_t)n))
            continue;
        key += n;
        if (!strncmp(key, "missed#", 7))
            key += 7;
        char *end = NULL;
        long long k = strtoll(key, &end, 10);
        if (end != key && !*end && k > best)
            best = k;
    }
    json_decref(rows);
    bool over = !sw__watch_slot_span(j->every_ms, &j->win, cur, &o, &c) || c <= now_ms;
    j->settled = best != INT64_MIN ? best : over ? cur : cur - 1;
}

/* Record the slots whose window time ended without a run since j->settled: one row. */
static void settle(struct job *j, int64_t now_ms)
{
    int64_t cur = sw__watch_slot_of(j->every_ms, &j->win, now_ms), o = 0, c = 0, first = 0,
            last = 0;
    bool over = !sw__watch_slot_span(j->every_ms, &j->win, cur, &o, &c) || c <= now_ms;
    int64_t upto = over ? cur : cur - 1;
    if (upto <= j->settled || j->running)
        return;
    size_t n = sw__watch_missed(j->every_ms, &j->win, j->settled, now_ms, ran, j, &first, &last);
    if (n) {
        char key[300], detail[600], t0[32], t1[32];
        sw__watch_slot_span(j->every_ms, &j->win, first, &o, &c);
        sw_fmt_time(o / 1000, t0, sizeof(t0));
        sw__watch_slot_span(j->every_ms, &j->win, last, &o, &c);
        sw_fmt_time(c / 1000, t1, sizeof(t1));
        snprintf(key, sizeof(key), "job#%s#missed#%lld", j->name, (long long)last);
        snprintf(detail, sizeof(detail),
                 "job %s: %zu slot%s missed (watch was not running in %s window time, %s to %s)",
                 j->name, n, n == 1 ? "" : "s", n == 1 ? "its" : "their", t0, t1);
        json_t *ev = json_object();
        sw_json_set_str(ev, "detail", detail);
        sw_json_set_str(ev, "job", j->name);
        sw_json_set_int(ev, "slots", (json_int_t)n);
        sw_json_set_int(ev, "first_slot", first);
        sw_json_set_int(ev, "last_slot", last);
        int rc = job_row(j, "missed", "missed", key, ev, detail);
        json_decref(ev);
        if (rc && rc != SW_EEXIST)
            return; /* the next tick tries again */
    }
    j->settled = upto;
}

/* Start j at now_ms if it is due, inside its window, and its endpoint is free. */
static void maybe_start(struct job *j, int64_t now_ms)
{
    struct sw__watch *w = j->w;
    int64_t left = 0, o, c;
    if (j->running || !sw__watch_window_in(&j->win, now_ms / 1000, &left))
        return;
    int64_t slot = sw__watch_slot_of(j->every_ms, &j->win, now_ms);
    if (sw__watch_slot_span(j->every_ms, &j->win, slot, &o, &c))
        left = SW_MIN(left, c - now_ms); /* the slot's end, for a window longer than every */
    snprintf(j->key, sizeof(j->key), "job#%s#%lld", j->name, (long long)slot);
    pthread_mutex_lock(&w->mu);
    bool busy = j->x && (j->x->job_running || j->x->acting);
    pthread_mutex_unlock(&w->mu);
    if (busy)
        return;
    bool done = false;
    pthread_mutex_lock(&w->mu);
    int rc = sw_ledger_watch_has_key(w->o->ledger, j->key, &done, NULL);
    pthread_mutex_unlock(&w->mu);
    if (rc || done)
        return;
    json_t *ev = json_object();
    sw_json_set_str(ev, "job", j->name);
    rc = job_row(j, "started", "started", j->key, ev, NULL);
    json_decref(ev);
    if (rc)
        return;
    j->deadline_ms = SW_MIN(j->timeout_ms > 0 ? j->timeout_ms : INT64_MAX, left);
    if (j->joinable) {
        pthread_join(j->th, NULL);
        j->joinable = false;
    }
    pthread_mutex_lock(&w->mu);
    if (j->x)
        j->x->job_running = true;
    j->running = true;
    pthread_mutex_unlock(&w->mu);
    j->joinable = pthread_create(&j->th, NULL, job_main, j) == 0;
    if (!j->joinable) {
        pthread_mutex_lock(&w->mu);
        if (j->x)
            j->x->job_running = false;
        j->running = false;
        pthread_mutex_unlock(&w->mu);
    }
}

void *sw__watch_schedule_main(void *arg)
{
    struct sw__watch *w = arg;
    size_t n = json_array_size(w->f->schedule);
    struct job *jobs = sw_calloc(n ? n : 1, sizeof(*jobs));
    if (!jobs)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        struct job *j = &jobs[i];
        j->w = w;
        j->entry = json_array_get(w->f->schedule, i);
        j->name = json_string_value(json_object_get(j->entry, "name"));
        j->every_ms = 86400000;
        const char *epn = json_string_value(json_object_get(j->entry, "endpoint"));
        for (size_t k = 0; epn && k < w->n; k++)
            if (!strcmp(w->eps[k].ep->name, epn))
                j->x = &w->eps[k];
        sw__watch_duration(json_object_get(j->entry, "every"), &w->f->schedule_at, "every",
                           &j->every_ms, NULL);
        sw__watch_duration(json_object_get(j->entry, "timeout"), &w->f->schedule_at, "timeout",
                           &j->timeout_ms, NULL);
        sw__watch_window_read(json_object_get(j->entry, "window"), &w->f->schedule_at, j->name,
                              &j->win, NULL);
        /* a job on an endpoint this watch does not watch still runs, unguarded by its looks */
    }
    for (size_t i = 0; i < n; i++)
        settled_from_ledger(&jobs[i], sw__watch_wall_ms());
    while (!sw__watch_stopped(w)) {
        int64_t now = sw__watch_wall_ms();
        for (size_t i = 0; i < n; i++) {
            if (json_is_false(json_object_get(jobs[i].entry, "enabled")))
                continue;
            maybe_start(&jobs[i], now);
            settle(&jobs[i], now);
        }
        struct timespec ts = {0, 250 * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < n; i++)
        if (jobs[i].joinable)
            pthread_join(jobs[i].th, NULL);
    sw_free(jobs);
    return NULL;
}
