/*
 * watch/schedule: the fleet's `schedule:` jobs, run by watch (docs/watch.md says why not systemd
 * timers): each entry {name, endpoint?, run, every (default 24h), window "HH:MM-HH:MM" UTC,
 * timeout} runs once per `every` slot, only inside its window, never while another job or one
 * of watch's actions holds its endpoint; it is stopped (TERM, then KILL) at the window's end or
 * its timeout, whichever comes first, and recorded as overran. The slot's key in the ledger
 * makes a restarted watch skip a slot that already ran.
 *
 * What it deliberately does not do: know what the job does (ladder, bench, status --record are
 * commands like any other), or catch up on slots missed while watch was not running.
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
};

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
    struct sw_ledger_watch_event le = {.endpoint = j->x ? j->x->ep->name : "-",
                                       .kind = "job",
                                       .state = "finished",
                                       .action = j->name,
                                       .outcome = out,
                                       .evidence = ev};
    sw__watch_record(w, &le, NULL, NULL);
    json_decref(ev);
    if (w->o->on_event) {
        struct sw_watch_event we = {.endpoint = j->x ? j->x->ep->name : "-",
                                    .kind = "job",
                                    .action = j->name,
                                    .outcome = out,
                                    .detail = detail};
        pthread_mutex_lock(&w->mu);
        w->o->on_event(w->o->ctx, &we);
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&w->mu);
    if (j->x)
        j->x->job_running = false;
    j->running = false;
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Start j now if it is due, inside its window, and its endpoint is free. */
static void maybe_start(struct job *j)
{
    struct sw__watch *w = j->w;
    int64_t now = sw_wall_unix(), left = 0;
    if (j->running || !sw__watch_window_in(&j->win, now, &left))
        return;
    int64_t slot = now * 1000 / j->every_ms;
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
    struct sw_ledger_watch_event le = {.endpoint = j->x ? j->x->ep->name : "-",
                                       .kind = "job",
                                       .state = "started",
                                       .action = j->name,
                                       .action_key = j->key,
                                       .outcome = "started",
                                       .evidence = ev};
    rc = sw__watch_record(w, &le, NULL, NULL);
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
    while (!sw__watch_stopped(w)) {
        for (size_t i = 0; i < n; i++)
            if (!json_is_false(json_object_get(jobs[i].entry, "enabled")))
                maybe_start(&jobs[i]);
        struct timespec ts = {0, 250 * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < n; i++)
        if (jobs[i].joinable)
            pthread_join(jobs[i].th, NULL);
    sw_free(jobs);
    return NULL;
}
