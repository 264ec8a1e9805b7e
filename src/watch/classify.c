/*
 * watch/classify: what one look of status says an endpoint is (serving, dead_generation,
 * crash_loop, down, drifted, memory_out_of_band, unreachable), and the fleet's watch:, alert:
 * and schedule: read with their defaults and checked, errors naming where they were written.
 *
 * What it deliberately does not do: look at a host (status does), act or alert (watch.c,
 * act.c, alert.c).
 */
#include "watch_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const names[SW_WATCH_N_STATES] = {
    [SW_WATCH_UNKNOWN] = "unknown",
    [SW_WATCH_SERVING] = "serving",
    [SW_WATCH_DEAD_GENERATION] = "dead_generation",
    [SW_WATCH_CRASH_LOOP] = "crash_loop",
    [SW_WATCH_DOWN] = "down",
    [SW_WATCH_DRIFTED] = "drifted",
    [SW_WATCH_MEMORY_OUT_OF_BAND] = "memory_out_of_band",
    [SW_WATCH_UNREACHABLE] = "unreachable",
};

const char *sw_watch_state_name(enum sw_watch_state s)
{
    return (unsigned)s < SW_WATCH_N_STATES ? names[s] : "unknown";
}

bool sw_watch_state_needs_action(enum sw_watch_state s)
{
    return s == SW_WATCH_DEAD_GENERATION || s == SW_WATCH_CRASH_LOOP || s == SW_WATCH_DOWN;
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* A reading's free bytes outside the endpoint's band: the first such reading, in words. */
static bool out_of_band(const json_t *st, const struct sw_fleet_endpoint *ep, char *why, size_t n)
{
    if (!ep || (!ep->free_band.min.set && !ep->free_band.max.set))
        return false;
    const json_t *rs = json_object_get(json_object_get(st, "devices"), "readings");
    size_t i;
    const json_t *r;
    json_array_foreach(rs, i, r)
    {
        const json_t *fb = json_object_get(r, "free_bytes");
        if (!json_is_integer(fb))
            continue;
        uint64_t free_b = (uint64_t)json_integer_value(fb);
        bool lo = ep->free_band.min.set && free_b < ep->free_band.min.v;
        bool hi = ep->free_band.max.set && free_b > ep->free_band.max.v;
        if (lo || hi) {
            snprintf(why, n, "device %lld: %.2f GiB free, %s the band's %s (%.2f GiB)",
                     (long long)json_integer_value(json_object_get(r, "index")),
                     free_b / 1073741824.0, lo ? "below" : "above", lo ? "min" : "max",
                     (lo ? ep->free_band.min.v : ep->free_band.max.v) / 1073741824.0);
            return true;
        }
    }
    return false;
}

enum sw_watch_state sw_watch_classify(const json_t *st, const struct sw_fleet_endpoint *ep,
                                      int64_t prev_restarts, char *why, size_t n)
{
    char tmp[8];
    if (!why) {
        why = tmp;
        n = sizeof(tmp);
    }
    why[0] = '\0';
    if (!json_is_object(st)) {
        snprintf(why, n, "no status");
        return SW_WATCH_UNKNOWN;
    }
    if (!json_is_true(json_object_get(st, "reached"))) {
        snprintf(why, n, "host %s not reached (%s): %.300s", str(st, "host"),
                 str(st, "unreachable"), str(st, "error"));
        return SW_WATCH_UNREACHABLE;
    }
    const json_t *u = json_object_get(st, "unit");
    const json_t *h = json_object_get(st, "health"), *lv = json_object_get(st, "liveness");
    const char *active = str(u, "active"), *sub = str(u, "sub");
    json_int_t restarts = json_integer_value(json_object_get(u, "restarts"));
    int hs = (int)json_integer_value(json_object_get(h, "status"));
    bool gen_ok = json_is_true(json_object_get(lv, "ok"));
    bool serving = json_is_true(json_object_get(st, "serving")) || (hs == 200 && gen_ok);
    bool rising = prev_restarts >= 0 && restarts > prev_restarts;

    if (!strcmp(sub, "auto-restart") || (!serving && rising) ||
        (!serving && !strcmp(active, "activating") && restarts > 0)) {
        snprintf(why, n, "unit %s/%s, NRestarts %lld%s", active, sub, (long long)restarts,
                 rising ? " (rising)" : "");
        return SW_WATCH_CRASH_LOOP;
    }
    if (hs == 200 && !gen_ok) {
        snprintf(why, n, "GET /health 200, but the one-token generation failed: %.400s",
                 str(lv, "detail"));
        return SW_WATCH_DEAD_GENERATION;
    }
    if (!serving) {
        if (strcmp(active, "active"))
            snprintf(why, n, "unit %s/%s (result %s)", active[0] ? active : "?", sub[0] ? sub : "?",
                     str(u, "result"));
        else
            snprintf(why, n, "unit active, but /health %d and generation: %.300s", hs,
                     str(lv, "detail"));
        return SW_WATCH_DOWN;
    }
    const json_t *sh = json_object_get(st, "shape");
    const json_t *drift = json_object_get(sh, "drift");
    if (json_is_false(json_object_get(sh, "as_rendered")) || json_array_size(drift)) {
        const json_t *d0 = json_array_get(drift, 0);
        snprintf(why, n, "%zu line(s) differ from the render%s%s%s", json_array_size(drift),
                 d0 ? " (first: " : "", d0 ? str(d0, "file") : "", d0 ? ")" : "");
        return SW_WATCH_DRIFTED;
    }
    if (out_of_band(st, ep, why, n))
        return SW_WATCH_MEMORY_OUT_OF_BAND;
    snprintf(why, n, "generation in %.0f ms", json_number_value(json_object_get(lv, "ms")));
    return SW_WATCH_SERVING;
}

/* ---------------------------------------------------------------------------------------------
 * The fleet's watch:, alert:, schedule:.
 */
__attribute__((format(printf, 3, 4))) static int bad(struct sw_err *e, const struct sw_fleet_at *at,
                                                     const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_fleet_err_at(e, SW_EPARSE, at, "%s", msg);
}

/* Only keys from `known` (NULL-ended) in o. */
static int keys_only(const json_t *o, const char *const *known, const struct sw_fleet_at *at,
                     const char *where, struct sw_err *e)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok |= !strcmp(known[i], k);
        if (!ok)
            return bad(e, at, "%s: unknown key '%s'", where, k);
    }
    return 0;
}

int sw__watch_duration(const json_t *v, const struct sw_fleet_at *at, const char *what, int64_t *ms,
                       struct sw_err *e)
{
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *ms = json_integer_value(v) * 1000; /* a bare number: seconds */
        return 0;
    }
    struct sw_err pe;
    sw_err_clear(&pe);
    if (!json_is_string(v) || sw_parse_duration_ms(json_string_value(v), ms, &pe) || *ms <= 0)
        return bad(e, at, "%s must be a duration such as 30s or 5m (got %s)", what,
                   json_is_string(v) ? json_string_value(v) : "not a string");
    return 0;
}

static int count(const json_t *v, const struct sw_fleet_at *at, const char *what, unsigned *out,
                 struct sw_err *e)
{
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000)
        return bad(e, at, "%s must be a whole number 0..1000", what);
    *out = (unsigned)json_integer_value(v);
    return 0;
}

int sw_watch_policy_read(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                         int64_t default_interval_ms, struct sw_watch_policy *p, struct sw_err *e)
{
    static const char *const top[] = {"interval", "restart",       "rollback_after",
                                      "act",      "devices_every", NULL};
    static const char *const rk[] = {"max", "window", NULL};
    (void)f;
    p->interval_ms = default_interval_ms > 0 ? default_interval_ms : 30000;
    p->restart_max = 3;
    p->restart_window_ms = 3600000;
    p->rollback_after = 3;
    p->act = true;
    p->devices_every = 10;
    const json_t *w = ep->watch;
    const struct sw_fleet_at *at = &ep->watch_at;
    if (!w)
        return 0;
    int rc = keys_only(w, top, at, "watch", e);
    if (!rc)
        rc = sw__watch_duration(json_object_get(w, "interval"), at, "watch.interval",
                                &p->interval_ms, e);
    const json_t *r = json_object_get(w, "restart");
    if (!rc && r && !json_is_object(r))
        rc = bad(e, at, "watch.restart must be a map {max, window}");
    if (!rc && r)
        rc = keys_only(r, rk, at, "watch.restart", e);
    if (!rc && r)
        rc = count(json_object_get(r, "max"), at, "watch.restart.max", &p->restart_max, e);
    if (!rc && r)
        rc = sw__watch_duration(json_object_get(r, "window"), at, "watch.restart.window",
                                &p->restart_window_ms, e);
    if (!rc)
        rc = count(json_object_get(w, "rollback_after"), at, "watch.rollback_after",
                   &p->rollback_after, e);
    if (!rc)
        rc = count(json_object_get(w, "devices_every"), at, "watch.devices_every",
                   &p->devices_every, e);
    if (!rc && !p->devices_every)
        p->devices_every = 1;
    const json_t *act = json_object_get(w, "act");
    if (!rc && act && !json_is_boolean(act))
        rc = bad(e, at, "watch.act must be true or false");
    if (!rc && act)
        p->act = json_is_true(act);
    return rc;
}

int sw_watch_check_fleet(const struct sw_fleet *f, struct sw_err *e)
{
    static const char *const ak[] = {"exec", "post", "deadline", "retries", NULL};
    static const char *const sk[] = {"name",   "endpoint", "run",     "every",
                                     "window", "timeout",  "enabled", NULL};
    size_t i;
    const json_t *a;
    json_array_foreach(f->alert, i, a)
    {
        const struct sw_fleet_at *at = &f->alert_at;
        if (!json_is_object(a))
            return bad(e, at, "alert: entry must be a map {exec: CMD} or {post: URL}");
        int rc = keys_only(a, ak, at, "alert", e);
        if (rc)
            return rc;
        const json_t *x = json_object_get(a, "exec"), *p = json_object_get(a, "post");
        if (!!x == !!p)
            return bad(e, at, "alert: each entry needs exactly one of exec: or post:");
        if ((x && !json_is_string(x) && !json_is_array(x)) || (p && !json_is_string(p)))
            return bad(e, at, "alert: exec is a command (a string or a list), post a URL");
        if (p && strncmp(json_string_value(p), "http://", 7) &&
            strncmp(json_string_value(p), "https://", 8))
            return bad(e, at, "alert: post '%s' is not an http(s) URL", json_string_value(p));
        int64_t ms = 0;
        unsigned n = 0;
        rc = sw__watch_duration(json_object_get(a, "deadline"), at, "alert.deadline", &ms, e);
        if (!rc)
            rc = count(json_object_get(a, "retries"), at, "alert.retries", &n, e);
        if (rc)
            return rc;
    }
    const json_t *s;
    json_array_foreach(f->schedule, i, s)
    {
        const struct sw_fleet_at *at = &f->schedule_at;
        if (!json_is_object(s))
            return bad(e, at, "schedule: entry must be a map {name, endpoint, run, every, window}");
        int rc = keys_only(s, sk, at, "schedule", e);
        if (rc)
            return rc;
        const char *name = json_string_value(json_object_get(s, "name"));
        const char *epn = json_string_value(json_object_get(s, "endpoint"));
        const json_t *run = json_object_get(s, "run");
        if (!name || !*name)
            return bad(e, at, "schedule: every entry needs a name");
        if (!run || (!json_is_string(run) && !json_is_array(run)))
            return bad(e, at, "schedule %s: run: is the command (a string or a list)", name);
        if (epn && !sw_fleet_endpoint(f, epn))
            return bad(e, at, "schedule %s: no endpoint named '%s'", name, epn);
        struct sw__watch_window w;
        rc = sw__watch_window_read(json_object_get(s, "window"), at, name, &w, e);
        int64_t ms = 0;
        if (!rc)
            rc = sw__watch_duration(json_object_get(s, "every"), at, "schedule.every", &ms, e);
        if (!rc)
            rc = sw__watch_duration(json_object_get(s, "timeout"), at, "schedule.timeout", &ms, e);
        if (rc)
            return rc;
    }
    return 0;
}

int sw__watch_window_read(const json_t *v, const struct sw_fleet_at *at, const char *name,
                          struct sw__watch_window *w, struct sw_err *e)
{
    memset(w, 0, sizeof(*w));
    if (!v)
        return 0;
    const char *s = json_string_value(v);
    int h1, m1, h2, m2;
    char tail;
    if (!s || sscanf(s, "%d:%d-%d:%d%c", &h1, &m1, &h2, &m2, &tail) != 4 || h1 < 0 || h1 > 23 ||
        h2 < 0 || h2 > 24 || m1 < 0 || m1 > 59 || m2 < 0 || m2 > 59)
        return bad(e, at, "schedule %s: window must be HH:MM-HH:MM in UTC (got %s)", name,
                   s ? s : "not a string");
    w->set = true;
    w->start_min = h1 * 60 + m1;
    w->end_min = h2 * 60 + m2;
    return 0;
}

json_t *sw_watch_event_json(const struct sw_watch_event *ev)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    sw_json_set_str(j, "endpoint", ev->endpoint);
    sw_json_set_str(j, "host", ev->host ? ev->host : "");
    sw_json_set_str(j, "kind", ev->kind);
    sw_json_set_str(j, "state", sw_watch_state_name(ev->state));
    sw_json_set_str(j, "previous", sw_watch_state_name(ev->prev));
    sw_json_set_new(j, "action", ev->action ? json_string(ev->action) : json_null());
    sw_json_set_new(j, "outcome", ev->outcome ? json_string(ev->outcome) : json_null());
    sw_json_set_str(j, "detail", ev->detail ? ev->detail : "");
    sw_json_set_int(j, "at", sw_wall_unix());
    sw_json_set_new(j, "evidence", ev->evidence ? json_deep_copy(ev->evidence) : json_null());
    return j;
}
