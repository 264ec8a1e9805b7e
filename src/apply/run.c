/*
 * apply/run: the survey carried out (include/slipway/apply.h). A thread per host (at most
 * `parallel` at once); on a host, in this order: the endpoints that stop (`enabled: false`: they
 * give their memory back), then, on every device where more than one endpoint restarts, all of
 * those stopped first (none then starts beside one that still holds the memory of its old
 * shape), then each endpoint that installs, changes or starts through the gated rollout with its
 * rollback. A failure ends its devices' queue: an endpoint after it on one of those devices is
 * not attempted, and if it was stopped for the queue it is started again as it was. An
 * unchanged endpoint is never touched. Each host's thread opens its own ledger handle (SQLite
 * serialises the writers).
 *
 * What it deliberately does not do: retry a failed endpoint, or reorder across hosts (hosts are
 * independent: their devices are their own).
 */
#include "apply_internal.h"

#include <slipway/ledger.h>

#include <stdio.h>
#include <string.h>

struct hostrun {
    const struct sw_fleet *f;
    struct sw_apply_survey *s;
    const struct sw_apply_opts *o;
    size_t host;
    pthread_t th;
    bool started;
    /* the devices whose queue a failure ended, with why */
    const struct sw_fleet_device *failed[64];
    char failed_by[64][160];
    size_t n_failed;
};

static bool restarts(const struct sw_apply_item *it)
{
    return !it->refused && (it->action == SW_APPLY_CHANGE || it->action == SW_APPLY_START ||
                            it->action == SW_APPLY_INSTALL);
}

static bool shares_device(const struct sw_apply_item *a, const struct sw_apply_item *b)
{
    for (size_t i = 0; i < a->ep->n_devices; i++)
        for (size_t k = 0; k < b->ep->n_devices; k++)
            if (a->ep->devices[i] == b->ep->devices[k])
                return true;
    return false;
}

/* The failed device of it's queue, NULL when none failed. */
static const char *failed_device(const struct hostrun *hr, const struct sw_apply_item *it)
{
    for (size_t k = 0; k < hr->n_failed; k++)
        for (size_t i = 0; i < it->ep->n_devices; i++)
            if (it->ep->devices[i] == hr->failed[k])
                return hr->failed_by[k];
    return NULL;
}

static void fail_devices(struct hostrun *hr, const struct sw_apply_item *it)
{
    for (size_t i = 0; i < it->ep->n_devices && hr->n_failed < SW_ARRAY_LEN(hr->failed); i++) {
        hr->failed[hr->n_failed] = it->ep->devices[i];
        snprintf(hr->failed_by[hr->n_failed], sizeof(hr->failed_by[0]), "%s failed on device %s",
                 it->ep->name, it->ep->devices[i]->name);
        hr->n_failed++;
    }
}

static int systemctl(struct sw_host *h, const char *verb, const char *unit, char *why, size_t n)
{
    struct sw_host_result r;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_host_systemctl(h, false, verb, unit, 5 * 60 * 1000, &r, &e);
    if (rc)
        snprintf(why, n, "systemctl %s %s: %.500s", verb, unit, e.msg);
    sw_host_result_free(&r);
    return rc;
}

static void deploy(struct hostrun *hr, struct sw_apply_item *it, struct sw_ledger *led)
{
    const struct sw_apply_opts *o = hr->o;
    struct sw_rollout_opts ro;
    struct sw_rollout_result rr;
    struct sw_err e;
    memset(&ro, 0, sizeof(ro));
    sw_err_clear(&e);
    ro.ledger = led;
    ro.record = led != NULL;
    ro.worst_case = o->worst_case;
    ro.probe_only = o->probe_only;
    ro.deadline_ms = o->boot_ms;
    ro.note = o->note ? o->note : "slipway apply";
    ro.progress = o->progress;
    int rc = sw_rollout_deploy(hr->f, it->ep, &ro, &rr, &e);
    it->restarted = rr.stopped || rr.outcome == SW_ROLLOUT_COMMITTED;
    if (rc) {
        it->outcome = SW_APPLY_FAILED;
        snprintf(it->outcome_why, sizeof(it->outcome_why), "the deploy did not start: %.900s",
                 e.msg);
    } else if (rr.outcome == SW_ROLLOUT_COMMITTED) {
        it->outcome = SW_APPLY_CONVERGED;
        snprintf(it->tag, sizeof(it->tag), "%s", rr.tag);
        snprintf(it->outcome_why, sizeof(it->outcome_why), "committed %s", rr.tag);
    } else {
        it->outcome = rr.outcome == SW_ROLLOUT_ROLLED_BACK ? SW_APPLY_ROLLED_BACK : SW_APPLY_FAILED;
        snprintf(it->outcome_why, sizeof(it->outcome_why), "%s (%s at %s): %.600s%s%.300s",
                 sw_rollout_outcome_name(rr.outcome), rr.fail_class[0] ? rr.fail_class : "?",
                 rr.failed_step[0] ? rr.failed_step : "?", rr.fail_msg,
                 rr.rollback_msg[0] ? "; rollback: " : "", rr.rollback_msg);
    }
    it->attempt = rr.attempt;
    sw_rollout_result_free(&rr);
}

static void not_attempted(struct sw_apply_item *it, const char *why)
{
    it->outcome = SW_APPLY_NOT_ATTEMPTED;
    snprintf(it->outcome_why, sizeof(it->outcome_why), "%s", why);
}

static void *host_run(void *arg)
{
    struct hostrun *hr = arg;
    struct sw_apply_survey *s = hr->s;
    struct sw_apply_host *h = &s->hosts[hr->host];
    struct sw_ledger led;
    bool have_led = false;
    struct sw_host host;
    bool open = false;
    char why[768];
    struct sw_err e;
    uint64_t t0;
    sw_err_clear(&e);
    if (hr->o->ledger_path) {
        struct sw_ledger_open_opts oo = {.create = true};
        have_led = sw_ledger_open(&led, hr->o->ledger_path, &oo, &e) == 0;
        if (!have_led)
            sw_ledger_close(&led);
    }
    /* the items that cannot go on, and those left as they are */
    for (size_t i = 0; i < s->n; i++) {
        struct sw_apply_item *it = &s->items[i];
        if (it->host != hr->host)
            continue;
        if (it->refused)
            not_attempted(it, it->refused_why);
        else if (it->action == SW_APPLY_UNKNOWN)
            not_attempted(it, it->why);
        else if (it->action == SW_APPLY_UNCHANGED || it->action == SW_APPLY_ABSENT) {
            it->outcome = SW_APPLY_LEFT;
            snprintf(it->outcome_why, sizeof(it->outcome_why), "%s", it->why);
        }
    }
    if (h->reached && sw_host_open_fleet(&host, h->fh, 5, &e) == 0)
        open = true;
    /* 1. the stops */
    for (size_t i = 0; open && i < s->n; i++) {
        struct sw_apply_item *it = &s->items[i];
        if (it->host != hr->host || it->outcome || it->action != SW_APPLY_STOP)
            continue;
        t0 = sw_now_ns();
        it->restarted = true;
        if (systemctl(&host, "stop", it->unit, why, sizeof(why))) {
            it->outcome = SW_APPLY_FAILED;
            snprintf(it->outcome_why, sizeof(it->outcome_why), "%s", why);
        } else {
            it->outcome = SW_APPLY_CONVERGED;
            snprintf(it->outcome_why, sizeof(it->outcome_why), "stopped (enabled: false)");
        }
        it->seconds = (double)(sw_now_ns() - t0) / 1e9;
    }
    /* 2. devices with more than one restart: all of them stopped first */
    bool prestopped[4096] = {false};
    for (size_t i = 0; open && i < s->n && i < SW_ARRAY_LEN(prestopped); i++) {
        struct sw_apply_item *it = &s->items[i];
        if (it->host != hr->host || it->outcome || !restarts(it))
            continue;
        bool crowded = false;
        for (size_t k = 0; k < s->n && !crowded; k++)
            crowded = k != i && s->items[k].host == hr->host && !s->items[k].outcome &&
                      restarts(&s->items[k]) && shares_device(it, &s->items[k]);
        if (!crowded || it->action == SW_APPLY_INSTALL || strcmp(it->active, "active"))
            continue;
        if (systemctl(&host, "stop", it->unit, why, sizeof(why)) == 0) {
            prestopped[i] = true;
            it->restarted = true;
        }
    }
    /* 3. the deploys, each device's queue in fleet order */
    for (size_t i = 0; open && i < s->n; i++) {
        struct sw_apply_item *it = &s->items[i];
        if (it->host != hr->host || it->outcome || !restarts(it))
            continue;
        const char *gone = failed_device(hr, it);
        if (gone) {
            char w[300];
            snprintf(w, sizeof(w), "not attempted: %s", gone);
            not_attempted(it, w);
            if (i < SW_ARRAY_LEN(prestopped) && prestopped[i] &&
                systemctl(&host, "start", it->unit, why, sizeof(why)) == 0)
                snprintf(it->outcome_why + strlen(it->outcome_why),
                         sizeof(it->outcome_why) - strlen(it->outcome_why),
                         "; started again as it was");
            continue;
        }
        t0 = sw_now_ns();
        deploy(hr, it, have_led ? &led : NULL);
        it->seconds = (double)(sw_now_ns() - t0) / 1e9;
        if (it->outcome != SW_APPLY_CONVERGED)
            fail_devices(hr, it);
    }
    /* a host that could not be opened now */
    for (size_t i = 0; i < s->n; i++) {
        struct sw_apply_item *it = &s->items[i];
        if (it->host == hr->host && !it->outcome)
            not_attempted(it, open ? "not reached by the run" : e.msg);
    }
    if (have_led)
        sw_ledger_close(&led);
    return NULL;
}

int sw_apply_run(const struct sw_fleet *f, struct sw_apply_survey *s, const struct sw_apply_opts *o,
                 struct sw_err *e)
{
    struct hostrun *runs = sw_calloc(s->n_hosts ? s->n_hosts : 1, sizeof(*runs));
    if (!runs)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    uint64_t t0 = sw_now_ns();
    size_t width = o && o->parallel ? o->parallel : s->n_hosts;
    if (!width)
        width = 1;
    static const struct sw_apply_opts none = {0};
    for (size_t h = 0; h < s->n_hosts; h++) {
        runs[h].f = f;
        runs[h].s = s;
        runs[h].o = o ? o : &none;
        runs[h].host = h;
    }
    /* at most `width` hosts at once: batches in fleet order */
    for (size_t b = 0; b < s->n_hosts; b += width) {
        size_t end = SW_MIN(s->n_hosts, b + width);
        for (size_t h = b; h < end; h++)
            runs[h].started = pthread_create(&runs[h].th, NULL, host_run, &runs[h]) == 0;
        for (size_t h = b; h < end; h++) {
            if (runs[h].started)
                pthread_join(runs[h].th, NULL);
            else
                host_run(&runs[h]);
        }
    }
    sw_free(runs);
    s->seconds += (double)(sw_now_ns() - t0) / 1e9;
    return 0;
}
