/*
 * watch/alert: one event to every `alert:` hook of the fleet: an exec gets the event's JSON on
 * its stdin (exit 0 is delivered), a post gets it as the body of an HTTP POST (2xx is
 * delivered). Each hook has its own deadline (default 10 s) and retries (default 2, one second
 * apart, doubling).
 *
 * What it deliberately does not do: decide when to alert (watch.c sends one per change of
 * state), or hold events for a hook that is down beyond its retries (the ledger keeps them).
 */
#include "watch_internal.h"

#include <slipway/net.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

static int deliver(const json_t *hook, const char *body, int64_t deadline_ms, struct sw_err *e)
{
    const json_t *x = json_object_get(hook, "exec");
    if (x) {
        int code = -1;
        bool over = false;
        int rc = sw__watch_spawn(x, body, NULL, deadline_ms, NULL, &code, &over, e);
        if (rc)
            return rc;
        if (over)
            return sw_err_set(e, SW_ETIMEDOUT, "alert exec: still running after %.1f s (killed)",
                              deadline_ms / 1000.0);
        if (code)
            return sw_err_set(e, SW_ECHILD, "alert exec: exit %d", code);
        return 0;
    }
    const char *url = json_string_value(json_object_get(hook, "post"));
    struct sw_net_req req = {0};
    struct sw_net_resp resp;
    char shown[256];
    req.connect_ms = (unsigned)SW_MIN(deadline_ms, 5000);
    req.total_ms = (unsigned)deadline_ms;
    int rc = sw_net_post_json(NULL, url, body, strlen(body), &req, &resp, e);
    long status = resp.status;
    sw_net_resp_free(&resp);
    if (rc)
        return rc;
    if (status < 200 || status > 299)
        return sw_err_set(e, SW_EHTTP, "alert post %s: HTTP %ld",
                          sw_net_redact_url(url, shown, sizeof(shown)), status);
    return 0;
}

int sw_watch_alert(const struct sw_fleet *f, const json_t *ev, size_t *n_ok, struct sw_err *e)
{
    int last = 0;
    size_t i;
    const json_t *hook;
    if (n_ok)
        *n_ok = 0;
    char *body = json_dumps(ev, JSON_COMPACT);
    if (!body)
        return sw_err_set(e, SW_ENOMEM, "alert: the event could not be serialized");
    json_array_foreach(f->alert, i, hook)
    {
        int64_t deadline = 10000;
        json_int_t retries = 2;
        sw__watch_duration(json_object_get(hook, "deadline"), &f->alert_at, "deadline", &deadline,
                           NULL);
        if (json_is_integer(json_object_get(hook, "retries")))
            retries = json_integer_value(json_object_get(hook, "retries"));
        long pause = 1000;
        int rc = 0;
        for (json_int_t t = 0; t <= retries; t++) {
            struct sw_err he;
            sw_err_clear(&he);
            rc = deliver(hook, body, deadline, &he);
            if (!rc)
                break;
            sw_err_set(e, rc, "alert %zu (try %lld of %lld): %s", i + 1, (long long)t + 1,
                       (long long)retries + 1, he.msg);
            if (t < retries) {
                struct timespec ts = {pause / 1000, (pause % 1000) * 1000000L};
                nanosleep(&ts, NULL);
                pause *= 2;
            }
        }
        if (rc)
            last = rc;
        else if (n_ok)
            (*n_ok)++;
    }
    free(body);
    return last;
}
