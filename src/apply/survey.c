/*
 * apply/survey: what `slipway apply` would change, host by host (include/slipway/apply.h).
 *
 * Each host in a thread of its own, all at once, within its deadline: its endpoints' renders
 * (the unit and environment file the rollout would install) and plan views (the device memory
 * each takes: a plan may read the model on the host), then what the host has: the installed
 * files of its endpoints (one command), whether their payloads' paths exist (one command), each
 * unit's state. Then, on the calling thread, the fleet's own gates (gates.c) over those claims.
 * A thread writes only its own host's items.
 *
 * What it deliberately does not do: change anything, or speak HTTP to an endpoint (`slipway
 * status` proves serving; the survey says what the files and the unit's state say).
 */
#include "apply_internal.h"

#include <slipway/host.h>
#include <slipway/plan.h>
#include <slipway/service.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEF_DEADLINE_MS 20000
/* the installed files read back: a unit or environment file larger than this is a change */
#define FILE_MAX (1u << 20)

static const char *const action_names[] = {"unchanged", "install", "change", "start",
                                           "stop",      "unknown", "absent"};
static const char *const outcome_names[] = {"not_run",     "left",   "converged",
                                            "rolled_back", "failed", "not_attempted"};

const char *sw_apply_action_name(enum sw_apply_action a)
{
    return (unsigned)a < SW_ARRAY_LEN(action_names) ? action_names[a] : "?";
}

const char *sw_apply_outcome_name(enum sw_apply_outcome o)
{
    return (unsigned)o < SW_ARRAY_LEN(outcome_names) ? outcome_names[o] : "?";
}

void sw__apply_ctx_free(struct sw__apply_ctx *x)
{
    for (size_t i = 0; x->per && i < x->n; i++) {
        sw_unit_render_free(&x->per[i].ur);
        sw_free(x->per[i].unit_path);
        sw_free(x->per[i].env_path);
    }
    sw_free(x->per);
    memset(x, 0, sizeof(*x));
}

void sw_apply_survey_free(struct sw_apply_survey *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->items && i < s->n; i++) {
        json_decref(s->items[i].changes);
        json_decref(s->items[i].missing);
    }
    sw_free(s->items);
    sw_free(s->hosts);
    json_decref(s->refusals);
    memset(s, 0, sizeof(*s));
}

static bool selected(const struct sw_apply_opts *o, const char *name)
{
    if (!o || !o->only)
        return true;
    for (const char *const *p = o->only; *p; p++)
        if (!strcmp(*p, name))
            return true;
    return false;
}

/* The render, the unit's paths on the host, and the device memory of one endpoint. */
static void prepare(const struct sw_fleet *f, struct sw_apply_item *it, struct sw__apply_ep *pe)
{
    const struct sw_fleet_endpoint *ep = it->ep;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_unit_render_endpoint(f, ep, &pe->ur, &e)) {
        snprintf(it->plan_why, sizeof(it->plan_why), "not rendered: %.480s", e.msg);
        snprintf(it->unit, sizeof(it->unit), "%s.service",
                 ep->service.name.v ? ep->service.name.v : ep->name);
    } else {
        pe->rendered = true;
        snprintf(it->unit, sizeof(it->unit), "%s", pe->ur.service.name);
        if (pe->ur.scope == SW_FLEET_SCOPE_USER)
            snprintf(it->plan_why, sizeof(it->plan_why),
                     "a user-scope unit is not applied yet (the rollout deploys system units)");
    }
    char path[1100];
    snprintf(path, sizeof(path), "/etc/systemd/system/%s", it->unit);
    pe->unit_path = sw_strdup(path);
    pe->env_path = pe->rendered ? sw_strdup(pe->ur.env_path) : NULL;
    if (!ep->enabled)
        return;
    struct sw_plan_view v;
    sw_err_clear(&e);
    if (sw_plan_view(ep, &v, &e) == 0 && v.ok) {
        for (int d = 0; d < v.n_dev && it->n_claims < SW_APPLY_MAX_DEV; d++) {
            if (!v.dev[d].dev)
                continue;
            it->claims[it->n_claims].dev = v.dev[d].dev;
            it->claims[it->n_claims].bytes = sw_plan_view_claim(
                &v, &v.dev[d], it->claims[it->n_claims].how, sizeof(it->claims[0].how));
            it->n_claims++;
        }
    } else if (!it->plan_why[0]) {
        snprintf(it->plan_why, sizeof(it->plan_why), "no plan: %.480s", v.why[0] ? v.why : e.msg);
    }
    sw_plan_view_free(&v);
}

/* ---------------------------------------------------------------------------------------------
 * Asking a host.
 */

/* Prints, for each path argument, "== SIZE PATH" and the file's bytes, or "== - PATH" when it
 * cannot be read: one round trip for every file of a host. */
static const char read_script[] =
    "for f; do if [ -f \"$f\" ] && [ -r \"$f\" ]; then n=$(wc -c <\"$f\"); "
    "printf '== %s %s\\n' \"$n\" \"$f\"; cat -- \"$f\"; printf '\\n'; "
    "else printf '== - %s\\n' \"$f\"; fi; done";

/* "y PATH" or "n PATH" for each argument: does it exist there? */
static const char exists_script[] = "for p; do if [ -e \"$p\" ]; then echo \"y $p\"; "
                                    "else echo \"n $p\"; fi; done";

/* The file `path` in read_script's output: its bytes (borrowed from out) and length; false
 * when it was not there. */
static bool file_in(const char *out, size_t olen, const char *path, const char **text, size_t *len)
{
    const char *p = out, *end = out + olen;
    size_t pl = strlen(path);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || (size_t)(nl - p) < 5 || memcmp(p, "== ", 3))
            return false;
        const char *sp = memchr(p + 3, ' ', (size_t)(nl - p - 3));
        if (!sp)
            return false;
        bool absent = sp == p + 4 && p[3] == '-';
        uint64_t n = 0;
        if (!absent) {
            char num[24];
            size_t nn = (size_t)(sp - (p + 3));
            if (nn >= sizeof(num))
                return false;
            memcpy(num, p + 3, nn);
            num[nn] = '\0';
            if (sw_parse_u64(num, &n, NULL) || n > (uint64_t)(end - nl - 1))
                return false;
        }
        bool this = (size_t)(nl - sp - 1) == pl && !memcmp(sp + 1, path, pl);
        if (this) {
            if (absent)
                return false;
            *text = nl + 1;
            *len = (size_t)n;
            return true;
        }
        p = absent ? nl + 1 : nl + 1 + n + 1; /* the bytes, then the newline printed after */
    }
    return false;
}

/* The payload paths the endpoint needs on its host (model, projector, draft). */
static size_t payload_paths(const struct sw_fleet_endpoint *ep, const char **out, size_t max)
{
    size_t n = 0;
    const struct sw_fleet_payload *p = &ep->payload;
    if (p->path.v && n < max)
        out[n++] = p->path.v;
    if (p->mmproj.v && !p->mmproj.off && p->mmproj.v[0] == '/' && n < max)
        out[n++] = p->mmproj.v;
    if (p->draft.v && p->draft.v[0] == '/' && n < max)
        out[n++] = p->draft.v;
    return n;
}

static int run_capture(struct sw_host *h, const char *const *argv, int64_t dl, char **out,
                       size_t *len, struct sw_err *e)
{
    struct sw_host_result r;
    struct sw_host_run_opts o = {.deadline_ms = dl, .max_out = 8u * FILE_MAX};
    int rc = sw_host_run(h, argv, &o, &r, e);
    if (!rc) {
        *out = r.out;
        *len = r.out_len;
        r.out = NULL;
    }
    sw_host_result_free(&r);
    return rc;
}

/* What one endpoint's host says of it, into its item. */
static void judge(struct sw__apply_hostjob *j, struct sw_apply_item *it, struct sw__apply_ep *pe,
                  const char *files, size_t flen, const char *exists)
{
    const struct sw_fleet_endpoint *ep = it->ep;
    struct sw_host_unit u;
    struct sw_err e;
    sw_err_clear(&e);
    memset(&u, 0, sizeof(u));
    if (sw_host_unit_show(&j->h, false, it->unit, j->deadline_ms, &u, &e) == 0) {
        snprintf(it->active, sizeof(it->active), "%s", u.active_state);
        it->main_pid = u.main_pid;
        it->n_restarts = u.n_restarts;
    }
    bool active = !strcmp(it->active, "active") || !strcmp(it->active, "activating") ||
                  !strcmp(it->active, "reloading");
    const char *ut = NULL, *et = NULL;
    size_t ul = 0, el = 0;
    bool have_unit = file_in(files, flen, pe->unit_path, &ut, &ul);
    bool have_env = pe->env_path && file_in(files, flen, pe->env_path, &et, &el);
    if (!ep->enabled) {
        it->action = active ? SW_APPLY_STOP : SW_APPLY_ABSENT;
        snprintf(it->why, sizeof(it->why), "%s",
                 active ? "enabled: false in the fleet, and its unit is active: it would stop"
                        : "enabled: false in the fleet, and its unit is not running");
        return;
    }
    /* payload paths the host does not have */
    const char *paths[4];
    size_t np = payload_paths(ep, paths, SW_ARRAY_LEN(paths));
    for (size_t i = 0; i < np; i++) {
        char want[1200];
        snprintf(want, sizeof(want), "n %s\n", paths[i]);
        if (exists && strstr(exists, want))
            json_array_append_new(it->missing, json_string(paths[i]));
    }
    if (!pe->rendered || it->plan_why[0]) {
        it->action = SW_APPLY_UNKNOWN;
        snprintf(it->why, sizeof(it->why), "%s", it->plan_why);
        return;
    }
    if (!have_unit) {
        it->action = SW_APPLY_INSTALL;
        snprintf(it->why, sizeof(it->why), "not installed (%s is absent): install and start",
                 pe->unit_path);
        return;
    }
    size_t n = sw_service_drift(&pe->ur, false, pe->unit_path, ut, ul, pe->ur.service.text,
                                pe->ur.service.len, it->changes);
    if (have_env)
        n += sw_service_drift(&pe->ur, true, pe->env_path, et, el, pe->ur.env.text, pe->ur.env.len,
                              it->changes);
    if (!have_env) {
        json_t *d = json_object();
        sw_json_set_str(d, "file", pe->env_path);
        sw_json_set_int(d, "line", 0);
        sw_json_set_str(d, "installed", "(no such file)");
        sw_json_set_str(d, "rendered", "(the environment file)");
        json_array_append_new(it->changes, d);
        n++;
    }
    if (n) {
        const json_t *c = json_array_get(it->changes, 0);
        const char *iv = json_string_value(json_object_get(c, "installed"));
        const char *rv = json_string_value(json_object_get(c, "rendered"));
        it->action = SW_APPLY_CHANGE;
        snprintf(it->why, sizeof(it->why),
                 "%zu line(s) differ; it would restart: %.200s line %lld: %.220s -> %.220s", n,
                 json_string_value(json_object_get(c, "file")),
                 (long long)json_integer_value(json_object_get(c, "line")), iv ? iv : "(none)",
                 rv ? rv : "(none)");
        return;
    }
    if (!active) {
        it->action = SW_APPLY_START;
        snprintf(it->why, sizeof(it->why), "installed as rendered but %s: it would start",
                 it->active[0] ? it->active : "not running");
        return;
    }
    it->action = SW_APPLY_UNCHANGED;
    snprintf(it->why, sizeof(it->why), "installed as rendered and active (MainPID %lld)",
             (long long)it->main_pid);
}

static void *host_job(void *arg)
{
    struct sw__apply_hostjob *j = arg;
    struct sw_apply_host *hr = j->hr;
    struct sw_err e;
    uint64_t t0 = sw_now_ns();
    char *files = NULL, *exists = NULL;
    size_t flen = 0, xlen = 0;
    sw_err_clear(&e);
    /* the renders and plans of this host's endpoints, here in its thread: a plan may read the
     * model on this host, within the host's deadline (plan.h sw_plan_remote_within) */
    uint64_t was = sw_plan_remote_within(t0 + (uint64_t)j->deadline_ms * 1000000u);
    for (size_t i = 0; i < j->n; i++)
        prepare(j->f, j->items[i], j->pe[i]);
    sw_plan_remote_within(was);
    /* what is left of the deadline for the host's own questions (at least a second) */
    int64_t left = j->deadline_ms - (int64_t)((sw_now_ns() - t0) / 1000000u);
    int64_t dl = left < 1000 ? 1000 : left;
    const char **fargv = sw_calloc(4 + 2 * j->n + 1, sizeof(*fargv));
    const char **xargv = sw_calloc(4 + 4 * j->n + 1, sizeof(*xargv));
    if (!fargv || !xargv) {
        snprintf(hr->err, sizeof(hr->err), "out of memory");
        goto out;
    }
    size_t fn = 0, xn = 0;
    fargv[fn++] = "sh";
    fargv[fn++] = "-c";
    fargv[fn++] = read_script;
    fargv[fn++] = "sh";
    xargv[xn++] = "sh";
    xargv[xn++] = "-c";
    xargv[xn++] = exists_script;
    xargv[xn++] = "sh";
    for (size_t i = 0; i < j->n; i++) {
        struct sw__apply_ep *pe = j->pe[i];
        if (pe->unit_path)
            fargv[fn++] = pe->unit_path;
        if (pe->env_path)
            fargv[fn++] = pe->env_path;
        xn += payload_paths(j->items[i]->ep, xargv + xn, 3);
    }
    int rc = sw_host_open_fleet(&j->h, hr->fh, 5, &e);
    if (!rc) {
        j->open = true;
        sw_host_describe(&j->h, hr->transport, sizeof(hr->transport));
        rc = run_capture(&j->h, fargv, dl, &files, &flen, &e);
    }
    if (!rc && xn > 4)
        rc = run_capture(&j->h, xargv, dl, &exists, &xlen, &e);
    if (rc) {
        hr->reached = false;
        snprintf(hr->err, sizeof(hr->err), "%.700s", e.msg);
        for (size_t i = 0; i < j->n; i++) {
            struct sw_apply_item *it = j->items[i];
            it->action = SW_APPLY_UNKNOWN;
            snprintf(it->why, sizeof(it->why),
                     "%s; its host %s was not reached, so its installed files and state are "
                     "unknown (the host's error above)",
                     !it->ep->enabled     ? "would be stopped if it runs"
                     : j->pe[i]->rendered ? "would be deployed as rendered where it differs"
                                          : "could not be rendered here either",
                     hr->fh->name);
        }
        goto out;
    }
    hr->reached = true;
    for (size_t i = 0; i < j->n; i++)
        judge(j, j->items[i], j->pe[i], files, flen, exists);
out:
    hr->seconds = (double)(sw_now_ns() - t0) / 1e9;
    if (files)
        explicit_bzero(files, flen); /* environment files hold secrets */
    sw_free(files);
    sw_free(exists);
    sw_free(fargv);
    sw_free(xargv);
    return NULL;
}

int sw__apply_hosts(const struct sw_fleet *f, struct sw_apply_survey *s, struct sw__apply_ctx *x,
                    int64_t deadline_ms, struct sw__apply_hostjob **jobs_out, struct sw_err *e)
{
    struct sw__apply_hostjob *jobs = sw_calloc(s->n_hosts ? s->n_hosts : 1, sizeof(*jobs));
    if (!jobs)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t h = 0; h < s->n_hosts; h++) {
        struct sw__apply_hostjob *j = &jobs[h];
        j->f = f;
        j->hr = &s->hosts[h];
        j->deadline_ms = deadline_ms;
        j->items = sw_calloc(s->n ? s->n : 1, sizeof(*j->items));
        j->pe = sw_calloc(s->n ? s->n : 1, sizeof(*j->pe));
        if (!j->items || !j->pe) {
            sw__apply_jobs_free(jobs, s->n_hosts);
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < s->n; i++)
            if (s->items[i].host == h) {
                j->items[j->n] = &s->items[i];
                j->pe[j->n++] = &x->per[i];
            }
    }
    for (size_t h = 0; h < s->n_hosts; h++)
        jobs[h].started = pthread_create(&jobs[h].th, NULL, host_job, &jobs[h]) == 0;
    for (size_t h = 0; h < s->n_hosts; h++) {
        if (jobs[h].started)
            pthread_join(jobs[h].th, NULL);
        else
            host_job(&jobs[h]); /* no thread: asked here */
    }
    *jobs_out = jobs;
    return 0;
}

void sw__apply_jobs_free(struct sw__apply_hostjob *jobs, size_t n)
{
    for (size_t h = 0; jobs && h < n; h++) {
        sw_free(jobs[h].items);
        sw_free(jobs[h].pe);
    }
    sw_free(jobs);
}

/* ---------------------------------------------------------------------------------------------
 * The survey.
 */

static int add_host(struct sw_apply_survey *s, const struct sw_fleet_host *fh, size_t *idx)
{
    for (size_t h = 0; h < s->n_hosts; h++)
        if (s->hosts[h].fh == fh) {
            *idx = h;
            return 0;
        }
    *idx = s->n_hosts;
    s->hosts[s->n_hosts++].fh = fh;
    return 0;
}

int sw__apply_prepare(const struct sw_fleet *f, const struct sw_apply_opts *o,
                      struct sw_apply_survey *s, struct sw__apply_ctx *x, struct sw_err *e)
{
    memset(s, 0, sizeof(*s));
    memset(x, 0, sizeof(*x));
    for (const char *const *p = o && o->only ? o->only : NULL; p && *p; p++)
        if (!sw_fleet_endpoint(f, *p))
            return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s'",
                              f->path ? f->path : "the fleet", *p);
    size_t cap = f->n_endpoints ? f->n_endpoints : 1;
    s->items = sw_calloc(cap, sizeof(*s->items));
    s->hosts = sw_calloc(cap, sizeof(*s->hosts));
    x->per = sw_calloc(cap, sizeof(*x->per));
    s->refusals = json_array();
    if (!s->items || !s->hosts || !x->per || !s->refusals)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (!ep->host || !selected(o, ep->name))
            continue;
        struct sw_apply_item *it = &s->items[s->n];
        it->ep = ep;
        it->changes = json_array();
        it->missing = json_array();
        if (!it->changes || !it->missing)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        add_host(s, ep->host, &it->host);
        s->n++;
        x->n = s->n;
    }
    return 0;
}

int sw_apply_survey(const struct sw_fleet *f, const struct sw_apply_opts *o,
                    struct sw_apply_survey *s, struct sw_err *e)
{
    struct sw__apply_ctx x;
    struct sw__apply_hostjob *jobs = NULL;
    uint64_t t0 = sw_now_ns();
    int64_t dl = o && o->deadline_ms > 0 ? o->deadline_ms : DEF_DEADLINE_MS;
    /* the items here; each host's renders, plans and answers in its own thread; then the fleet's
     * gates over the claims the threads planned (an endpoint outside the selection is planned
     * by the gates, within the same deadline) */
    int rc = sw__apply_prepare(f, o, s, &x, e);
    if (!rc)
        rc = sw__apply_hosts(f, s, &x, dl, &jobs, e);
    if (!rc) {
        uint64_t was = sw_plan_remote_within(sw_now_ns() + (uint64_t)dl * 1000000u);
        rc = sw__apply_gates(f, s, e);
        sw_plan_remote_within(was);
    }
    sw__apply_jobs_free(jobs, s->n_hosts);
    sw__apply_ctx_free(&x);
    s->seconds = (double)(sw_now_ns() - t0) / 1e9;
    return rc;
}

void sw_apply_count(const struct sw_apply_survey *s, size_t actions[8], size_t outcomes[8])
{
    for (size_t i = 0; i < 8; i++)
        actions[i] = outcomes[i] = 0;
    for (size_t i = 0; i < s->n; i++) {
        actions[s->items[i].action & 7]++;
        outcomes[s->items[i].outcome & 7]++;
    }
}
