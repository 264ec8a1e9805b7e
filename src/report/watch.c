/*
 * report/watch: an endpoint's status history as `slipway watch` recorded it (the ledger's
 * watch_events, schema 8): where it stands now and since when, how many changes of state,
 * restarts, rollbacks, refusals, alerts and scheduled jobs, and the newest rows in words.
 *
 * What it deliberately does not do: classify or count anything watch did not record (a look
 * that changed nothing is no row), or read the looks' full status documents into the report
 * (the ledger keeps them; `slipway ledger` shows them).
 */
#include "report_internal.h"

#include <slipway/ledger.h>

#include <string.h>

#define HISTORY_ROWS 20   /* rows the report shows, newest first */
#define READ_ROWS    2000 /* rows read to count from */

static bool is(const json_t *o, const char *k, const char *v)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s && !strcmp(s, v);
}

/* The row in words: an observation's why, an action's detail, an alert's error or reach. */
static const char *words(const json_t *r, char *buf, size_t n)
{
    const json_t *ev = json_object_get(r, "evidence");
    const char *s = json_string_value(json_object_get(ev, "why"));
    if (!s)
        s = json_string_value(json_object_get(ev, "detail"));
    if (!s)
        s = json_string_value(json_object_get(ev, "error"));
    if (!s && is(r, "kind", "alert")) {
        snprintf(buf, n, "%lld of %lld hook(s)",
                 (long long)json_integer_value(json_object_get(ev, "delivered")),
                 (long long)json_integer_value(json_object_get(ev, "hooks")));
        return buf;
    }
    snprintf(buf, n, "%.300s", s ? s : "");
    return buf;
}

int sw__rep_watch(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e)
{
    json_t *rows = NULL, *hist = NULL, *d = NULL;
    *out = NULL;
    if (!l) {
        *out = json_null();
        return 0;
    }
    int rc = sw__rep_absent_ok(sw_ledger_watch_list(l, endpoint, NULL, READ_ROWS, &rows, e), e);
    if (rc)
        return rc;
    hist = json_array();
    if (!hist)
        goto oom;
    json_int_t obs = 0, restarts = 0, rollbacks = 0, refused = 0, al_ok = 0, al_fail = 0;
    json_int_t jobs = 0, jobs_bad = 0, missed = 0;
    const json_t *now = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *action = json_string_value(json_object_get(r, "action"));
        bool done = is(r, "outcome", "ok") || is(r, "outcome", "failed");
        if (is(r, "kind", "observation")) {
            obs++;
            if (!now)
                now = r; /* newest first */
        } else if (is(r, "kind", "action") && action && done) {
            restarts += !strcmp(action, "restart");
            rollbacks += !strcmp(action, "rollback");
        } else if (is(r, "kind", "action") && action && !strcmp(action, "refused")) {
            refused++;
        } else if (is(r, "kind", "alert")) {
            al_ok += is(r, "outcome", "delivered");
            al_fail += !is(r, "outcome", "delivered");
        } else if (is(r, "kind", "job")) {
            jobs++;
            missed += is(r, "outcome", "missed");
            jobs_bad += !is(r, "outcome", "ok") && !is(r, "outcome", "missed") &&
                        !is(r, "outcome", "started");
        }
        /* the claim before an action ("started") is the same act as its outcome: one row */
        if (json_array_size(hist) >= HISTORY_ROWS || is(r, "outcome", "started"))
            continue;
        char w[400];
        json_t *h =
            json_pack("{s:O,s:O,s:O,s:O,s:O,s:s}", "at", json_object_get(r, "observed"), "kind",
                      json_object_get(r, "kind"), "state", json_object_get(r, "state"), "action",
                      json_object_get(r, "action"), "outcome", json_object_get(r, "outcome"),
                      "detail", words(r, w, sizeof(w)));
        if (!h || json_array_append_new(hist, h))
            goto oom;
    }
    d = json_pack("{s:s,s:O,s:O,s:I,s:I,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I,s:I},s:I,s:O}", "source",
                  "the ledger's watch_events: what `slipway watch` saw change and did", "state",
                  now ? json_object_get(now, "state") : json_null(), "since",
                  now ? json_object_get(now, "observed") : json_null(), "changes", obs, "restarts",
                  restarts, "rollbacks", rollbacks, "refused", refused, "alerts", "delivered",
                  al_ok, "failed", al_fail, "jobs", "runs", jobs, "not_ok", jobs_bad, "missed",
                  missed, "rows", (json_int_t)json_array_size(rows), "history", hist);
    if (!d)
        goto oom;
    json_decref(hist);
    json_decref(rows);
    *out = d;
    return 0;
oom:
    json_decref(hist);
    json_decref(rows);
    return sw_err_set(e, SW_ENOMEM, "out of memory");
}
