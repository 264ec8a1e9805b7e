/*
 * deploy/status: sw_deploy_status, what each endpoint's host says now. Per host, within its own
 * deadline: reached or not (and how it failed), then per endpoint the unit's state, the installed
 * unit and environment file read back and compared line by line with what the fleet renders now,
 * GET /health and a one-token generation, and device memory from the vendor tool the host has.
 * A host that cannot be reached costs one failed operation, not one per endpoint: its endpoints
 * are all reported with that failure. Hosts are asked at once, one thread each (an endpoint's
 * render too, since a render plans and a plan may read the model on the host), so the whole
 * status takes about the slowest host's time.
 *
 * What it deliberately does not do: change anything on a host, record readings in the ledger
 * (readings --record does), or print (the CLI does).
 */
#include "deploy_internal.h"
#include "service_internal.h"

#include <slipway/host.h>
#include <slipway/net.h>
#include <slipway/plan.h>
#include <slipway/readings.h>
#include <slipway/unit.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEF_DEADLINE_MS 20000
#define DEF_HTTP_MS     10000u

struct hostc {
    const struct sw_fleet_host *fh;
    struct sw_host h;
    uint64_t t0;
    int64_t budget;
    bool opened, tried, reached;
    enum sw_host_fail fail;
    char err[1024];
    char home[1024];
    char transport[512];
    bool devices_done;
    json_t *devices; /* {tool, readings} or {tool: null, note} */
    struct sw_readings rs;
};

static bool out_of_time(const struct hostc *c)
{
    return (int64_t)((sw_now_ns() - c->t0) / 1000000ull) >= c->budget;
}

/* A host operation's failure: unreachable/auth/hostkey/deadline mark the host not reached. */
static void host_failed(struct hostc *c, enum sw_host_fail f, const char *msg)
{
    if (f == SW_HOST_EXIT || f == SW_HOST_OK)
        return;
    c->reached = false;
    c->fail = f;
    snprintf(c->err, sizeof(c->err), "%s", msg);
}

/* Run argv; 0 with the output in *out (sw_free) or the error. */
static int hrun(struct hostc *c, const char *const *argv, char **out, size_t *len,
                enum sw_host_fail *fail, struct sw_err *e)
{
    struct sw_host_result hr;
    struct sw_host_run_opts ro = {.deadline_ms = sw__svc_left_ms(c->t0, c->budget),
                                  .max_out = 1u << 20};
    if (out_of_time(c)) {
        *fail = SW_HOST_DEADLINE;
        return sw_err_set(e, SW_ETIMEDOUT, "host %s: its deadline (%.1f s) has passed", c->fh->name,
                          c->budget / 1000.0);
    }
    int rc = sw_host_run(&c->h, argv, &ro, &hr, e);
    *fail = hr.fail;
    if (out) {
        *out = hr.out;
        *len = hr.out_len;
        hr.out = NULL;
    }
    if (rc)
        host_failed(c, hr.fail, e->msg);
    sw_host_result_free(&hr);
    return rc;
}

static void host_reach(struct hostc *c)
{
    struct sw_err e;
    sw_err_clear(&e);
    c->tried = true;
    unsigned ct = (unsigned)SW_MAX(1, SW_MIN(5, c->budget / 2000));
    int rc = sw_host_open_fleet(&c->h, c->fh, ct, &e);
    if (rc) {
        c->fail = SW_HOST_LOCAL;
        snprintf(c->err, sizeof(c->err), "%s", e.msg);
        snprintf(c->transport, sizeof(c->transport), "%s",
                 c->fh->transport == SW_FLEET_SSH ? "ssh" : "local");
        return;
    }
    c->opened = true;
    sw_host_describe(&c->h, c->transport, sizeof(c->transport));
    c->reached = true;
    /* this machine: its HOME is ours (a command here would inherit it); no command to run */
    const char *own = c->h.kind == SW_HOST_KIND_LOCAL ? getenv("HOME") : NULL;
    if (own && own[0] == '/' && strlen(own) < sizeof(c->home)) {
        snprintf(c->home, sizeof(c->home), "%s", own);
        return;
    }
    const char *argv[] = {"sh", "-c", "printf '%s\\n' \"$HOME\"", NULL};
    char *out = NULL;
    size_t len = 0;
    enum sw_host_fail f;
    rc = hrun(c, argv, &out, &len, &f, &e);
    if (rc) {
        host_failed(c, f == SW_HOST_EXIT ? SW_HOST_UNREACHABLE : f, e.msg);
    } else {
        size_t l = out ? strcspn(out, "\n") : 0;
        snprintf(c->home, sizeof(c->home), "%.*s", (int)SW_MIN(l, sizeof(c->home) - 1),
                 out ? out : "");
    }
    sw_free(out);
}

/* The vendor tool the host has, run once per host, parsed by readings. */
static void host_devices(struct hostc *c)
{
    char tool[32], note[512];
    c->devices_done = true;
    c->devices = json_object();
    if (!c->devices)
        return;
    if (out_of_time(c)) {
        sw_json_set_new(c->devices, "tool", json_null());
        sw_json_set_str(c->devices, "note", "the host's deadline has passed");
        return;
    }
    int rc = sw__svc_devices(&c->h, c->fh->name, sw__svc_left_ms(c->t0, c->budget), &c->rs, tool,
                             sizeof(tool), note, sizeof(note));
    if (tool[0])
        sw_json_set_str(c->devices, "tool", tool);
    else
        sw_json_set_new(c->devices, "tool", json_null());
    if (rc || note[0])
        sw_json_set_str(c->devices, "note", note);
}

/* The readings of ep's devices (all of them when the endpoint names none or none match). */
static json_t *ep_devices(const struct hostc *c, const struct sw_fleet_endpoint *ep)
{
    json_t *d = json_deep_copy(c->devices);
    if (!d || !c->rs.n)
        return d;
    json_t *all = sw_readings_json(&c->rs);
    json_t *list = json_object_get(all, "readings");
    json_t *mine = json_array();
    for (size_t i = 0; mine && i < c->rs.n; i++)
        if (!ep->n_devices || sw_readings_match(ep, &c->rs.r[i]))
            json_array_append(mine, json_array_get(list, i));
    sw_json_set_new(d, "readings", json_array_size(mine) ? mine : json_incref(list));
    if (!json_array_size(mine))
        json_decref(mine);
    json_decref(all);
    return d;
}

/* `cat -- PATH` on the host (on this machine, read here: the same user, no program to start):
 * 0 with the text, 1 when the file is not there (or unreadable), <0 when the host failed. */
static int read_remote(struct hostc *c, const char *path, char **text, size_t *len)
{
    struct sw_err e;
    enum sw_host_fail f;
    const char *argv[] = {"cat", "--", path, NULL};
    *text = NULL;
    *len = 0;
    if (c->h.kind == SW_HOST_KIND_LOCAL) {
        sw_err_clear(&e);
        return sw_read_file(path, 1u << 20, text, len, &e) ? 1 : 0;
    }
    int rc = hrun(c, argv, text, len, &f, &e);
    if (!rc)
        return 0;
    if (*text) {
        explicit_bzero(*text, *len);
        sw_free(*text);
        *text = NULL;
    }
    return f == SW_HOST_EXIT ? 1 : -1;
}

static void not_reached(json_t *ej, const struct hostc *c)
{
    sw_json_set_bool(ej, "reached", false);
    sw_json_set_str(ej, "unreachable", sw_host_fail_name(c->fail));
    sw_json_set_str(ej, "error", c->err);
    sw_json_set_str(ej, "state", "unreachable");
}

/* One endpoint asked about: rendered on the calling thread before any host is asked (the render
 * reads the fleet and plans; the hosts' threads only read the result). */
struct epc {
    const struct sw_fleet_endpoint *ep;
    struct sw_unit_render ur;
    bool rendered;
    char render_err[1024];
    struct sw__status_up up; /* a local endpoint's `slipway up` record, read here too */
    json_t *out;
};

/* One endpoint's status on its way: what each step of status_endpoint leaves for the next. */
struct st {
    const struct sw_fleet_endpoint *ep;
    const struct sw_unit_render *ur; /* NULL when the fleet does not render it now */
    struct hostc *c;
    json_t *ej;
    char unit[300], url[320], bearer[512];
    bool user;
    struct sw_host_unit u;
    bool active, installed;
    struct sw_host_route rt;
    int hs;    /* /health's status, 0: no answer */
    bool live; /* a token came back */
};

/* The endpoint as the fleet names it: its unit, where it answers, the key the render gives. */
static void st_head(struct st *s, const struct epc *x)
{
    struct sw_err e;
    struct sw_fleet_addr fa;
    sw_err_clear(&e);
    sw_json_set_str(s->ej, "endpoint", s->ep->name);
    sw_json_set_str(s->ej, "host", s->c->fh->name);
    if (x->up.process)
        json_object_set(s->ej, "process", x->up.process);
    sw_json_set_bool(s->ej, "serving", false);
    snprintf(s->unit, sizeof(s->unit), "%s.service",
             s->ep->service.name.v ? s->ep->service.name.v : s->ep->name);
    if (sw_fleet_endpoint_addr(s->ep, &fa, &e) == 0) {
        snprintf(s->url, sizeof(s->url), "%s", fa.url);
        sw_json_set_str(s->ej, "route", sw_fleet_route_name(fa.route));
    }
    if (s->ur) {
        snprintf(s->unit, sizeof(s->unit), "%s", s->ur->service.name);
        sw__svc_bearer(s->ur, s->bearer, sizeof(s->bearer));
    } else {
        sw_json_set_str(s->ej, "render_error", x->render_err);
    }
    s->user = s->ep->service.scope == SW_FLEET_SCOPE_USER;
}

/* The unit's state as systemd says it ("unknown" with systemctl's words when the host has no
 * manager); false when the host failed (the endpoint is then unreachable). */
static bool st_unit(struct st *s)
{
    struct hostc *c = s->c;
    struct sw_err e;
    sw_err_clear(&e);
    json_t *uj = json_object();
    sw_json_set_str(uj, "name", s->unit);
    sw_json_set_str(uj, "scope", s->user ? "user" : "system");
    sw_json_set_new(s->ej, "unit", uj);
    if (out_of_time(c)) {
        host_failed(c, SW_HOST_DEADLINE, "its deadline passed");
        return false;
    }
    int rc =
        sw_host_unit_show(&c->h, s->user, s->unit, sw__svc_left_ms(c->t0, c->budget), &s->u, &e);
    if (rc && rc != SW_ECHILD) {
        host_failed(c, rc == SW_ETIMEDOUT ? SW_HOST_DEADLINE : SW_HOST_UNREACHABLE, e.msg);
        return false;
    }
    if (rc) {
        /* systemctl ran and failed (no systemd manager there): the host answers, the unit's
         * state is unknown */
        memset(&s->u, 0, sizeof(s->u));
        snprintf(s->u.active_state, sizeof(s->u.active_state), "unknown");
        sw_json_set_str(uj, "error", e.msg);
    }
    sw_json_set_str(uj, "load", s->u.load_state);
    sw_json_set_str(uj, "active", s->u.active_state);
    sw_json_set_str(uj, "sub", s->u.sub_state);
    sw_json_set_str(uj, "result", s->u.result);
    sw_json_set_int(uj, "restarts", (int64_t)s->u.n_restarts);
    sw_json_set_int(uj, "main_pid", s->u.main_pid);
    sw_json_set_str(uj, "since", s->u.active_enter);
    s->active = !strcmp(s->u.active_state, "active");
    return true;
}

/* The installed unit and env file read back and compared with the render (into sj's drift);
 * the proofs then use the key the installed env file gives the engine. Returns the lines that
 * differ, or -1 when the host failed. */
static ssize_t st_files(struct st *s, const char *upath, const char *epath, json_t *sj,
                        json_t *drift)
{
    const struct sw_unit_render *ur = s->ur;
    char *ut = NULL, *et = NULL;
    size_t ul = 0, el = 0, n_drift = 0;
    int ru = read_remote(s->c, upath, &ut, &ul);
    int re = ru < 0 ? -1 : read_remote(s->c, epath, &et, &el);
    if (ru >= 0 && re >= 0) {
        s->installed = ru == 0;
        sw_json_set_str(sj, "unit_path", upath);
        sw_json_set_str(sj, "env_path", epath);
        if (ru == 0)
            n_drift += sw_service_drift(ur, false, upath, ut, ul, ur->service.text, ur->service.len,
                                        drift);
        if (re == 0) {
            n_drift += sw_service_drift(ur, true, epath, et, el, ur->env.text, ur->env.len, drift);
            /* the proofs speak to what runs: the key the installed file gives the engine */
            explicit_bzero(s->bearer, sizeof(s->bearer));
            sw__svc_bearer_text(et, el, s->bearer, sizeof(s->bearer));
        } else if (s->installed) {
            json_t *d = json_object();
            sw_json_set_str(d, "file", epath);
            sw_json_set_int(d, "line", 0);
            sw_json_set_str(d, "installed", "(no such file)");
            sw_json_set_str(d, "rendered", "(the environment file)");
            json_array_append_new(drift, d);
            n_drift++;
        }
    }
    sw_free(ut);
    if (et)
        explicit_bzero(et, el);
    sw_free(et);
    return ru < 0 || re < 0 ? -1 : (ssize_t)n_drift;
}

/* The shape it runs: the installed files against the render. false when the host failed. */
static bool st_shape(struct st *s)
{
    struct sw_err e;
    char upath[1024] = "", epath[1024] = "";
    sw_err_clear(&e);
    json_t *sj = json_object(), *drift = json_array();
    sw_json_set_new(s->ej, "shape", sj);
    ssize_t n_drift = 0;
    if (s->ur &&
        !sw__svc_paths(s->ur, s->c->home, upath, sizeof(upath), epath, sizeof(epath), &e)) {
        n_drift = st_files(s, upath, epath, sj, drift);
        if (n_drift < 0) {
            json_decref(drift);
            return false;
        }
    } else if (!s->ur) {
        sw_json_set_str(sj, "error", "the fleet does not render this endpoint now");
    } else {
        sw_json_set_str(sj, "error", e.msg);
    }
    sw_json_set_bool(sj, "installed", s->installed);
    sw_json_set_bool(sj, "as_rendered", s->installed && s->ur && n_drift == 0);
    sw_json_set_int(sj, "drift_lines", (int64_t)n_drift);
    sw_json_set_new(sj, "drift", drift);
    return true;
}

/* Health and a one-token liveness, through the host when it listens on the host's loopback. */
static void st_proofs(struct st *s, unsigned http_ms)
{
    struct hostc *c = s->c;
    const struct sw_engine *eng = sw__svc_engine(s->ep);
    double hms = 0, lms = 0;
    bool routed = false;
    char ld[512] = "";
    sw_json_set_str(s->ej, "url", s->url);
    if (s->url[0] && !out_of_time(c)) {
        struct sw_err re;
        sw_err_clear(&re);
        routed =
            sw_host_route_open(&s->rt, s->ep, &c->h, sw__svc_left_ms(c->t0, c->budget), &re) == 0;
        if (s->rt.via[0])
            sw_json_set_str(s->ej, "via", s->rt.via);
        if (!routed)
            snprintf(ld, sizeof(ld), "not tried: no way to it: %.440s", re.msg);
    }
    if (routed && !out_of_time(c)) {
        unsigned t = (unsigned)SW_MIN((int64_t)http_ms, sw__svc_left_ms(c->t0, c->budget));
        sw__svc_health(eng, &s->rt, s->bearer, t, &s->hs, &hms);
    }
    json_t *hj = json_object();
    sw_json_set_int(hj, "status", s->hs);
    sw_json_set_real(hj, "ms", hms);
    sw_json_set_new(s->ej, "health", hj);
    if (s->hs == 200 && !out_of_time(c)) {
        unsigned t = (unsigned)SW_MIN((int64_t)http_ms, sw__svc_left_ms(c->t0, c->budget));
        s->live = sw__svc_liveness(eng, &s->rt, s->bearer, t, ld, sizeof(ld), &lms);
    } else if (!ld[0]) {
        snprintf(ld, sizeof(ld), "%s",
                 s->hs ? "not tried: /health is not 200" : "not tried: /health did not answer");
    }
    json_t *lj = json_object();
    sw_json_set_bool(lj, "ok", s->live);
    sw_json_set_real(lj, "ms", lms);
    sw_json_set_str(lj, "detail", ld);
    sw_json_set_new(s->ej, "liveness", lj);
}

/* Device memory, read once per host. */
static void st_devices(struct st *s)
{
    struct hostc *c = s->c;
    if (!c->devices_done && !out_of_time(c))
        host_devices(c);
    json_t *dj = c->devices ? ep_devices(c, s->ep) : NULL;
    if (!dj) {
        dj = json_object();
        sw_json_set_new(dj, "tool", json_null());
        sw_json_set_str(dj, "note", "not read: the host's deadline passed");
    }
    sw_json_set_new(s->ej, "devices", dj);
}

static json_t *status_endpoint(struct epc *x, struct hostc *c, unsigned http_ms)
{
    struct st s;
    memset(&s, 0, sizeof(s));
    s.ep = x->ep;
    s.ur = x->rendered ? &x->ur : NULL;
    s.c = c;
    s.ej = json_object();
    uint64_t t_ep = sw_now_ns();
    if (!s.ej)
        return NULL;
    st_head(&s, x);
    if (!c->tried)
        host_reach(c);
    sw_json_set_str(s.ej, "transport", c->transport);
    if (!c->reached) {
        not_reached(s.ej, c);
        goto out;
    }
    sw_json_set_bool(s.ej, "reached", true);
    if (x->up.alive) {
        /* supervised by `slipway up`: the process is the state, its argv the shape */
        sw_json_set_str(s.ej, "supervisor", "up");
        json_object_set(s.ej, "shape", x->up.shape);
        st_proofs(&s, http_ms);
        st_devices(&s);
        bool serving = s.hs == 200 && s.live;
        sw_json_set_bool(s.ej, "serving", serving);
        sw_json_set_str(s.ej, "state",
                        serving       ? "serving"
                        : s.hs != 200 ? "not answering"
                                      : "no generation");
        goto out;
    }
    if (!st_unit(&s) || !st_shape(&s)) {
        not_reached(s.ej, c);
        goto out;
    }
    st_proofs(&s, http_ms);
    st_devices(&s);
    bool serving = s.active && s.hs == 200 && s.live;
    sw_json_set_bool(s.ej, "serving", serving);
    sw_json_set_str(s.ej, "state",
                    serving                                            ? "serving"
                    : !s.installed && strcmp(s.u.load_state, "loaded") ? "not installed"
                    : !s.active                                        ? s.u.active_state
                    : s.hs != 200                                      ? "not answering"
                                                                       : "no generation");
out:
    sw_host_route_close(&s.rt);
    sw_json_set_real(s.ej, "seconds", (double)(sw_now_ns() - t_ep) / 1e9);
    explicit_bzero(s.bearer, sizeof(s.bearer));
    return s.ej;
}

/* One host's work: its endpoints in fleet order, within its deadline (a thread of its own). */
struct hostjob {
    struct hostc c;
    const struct sw_fleet *f;
    struct epc *eps;
    size_t n_eps;
    unsigned http_ms;
    pthread_t th;
    bool started;
};

static void *host_job(void *arg)
{
    struct hostjob *j = arg;
    j->c.t0 = sw_now_ns();
    /* the renders here, within the host's deadline: a render plans, and a plan may read the
     * model on this host (plan.h sw_plan_remote_within) */
    host_reach(&j->c);
    /* a host not reached is not asked again by the plan */
    uint64_t was =
        sw_plan_remote_within(j->c.reached ? j->c.t0 + (uint64_t)j->c.budget * 1000000u : 1);
    for (size_t i = 0; i < j->n_eps; i++) {
        struct epc *x = &j->eps[i];
        if (x->ep->host != j->c.fh)
            continue;
        struct sw_err re;
        sw_err_clear(&re);
        x->rendered = sw_unit_render_endpoint(j->f, x->ep, &x->ur, &re) == 0;
        if (!x->rendered)
            snprintf(x->render_err, sizeof(x->render_err), "%s", re.msg);
        x->out = status_endpoint(x, &j->c, j->http_ms);
    }
    sw_plan_remote_within(was);
    json_decref(j->c.devices);
    j->c.devices = NULL;
    sw_readings_free(&j->c.rs);
    return NULL;
}

int sw_deploy_status(const struct sw_fleet *f, const struct sw_status_opts *o, json_t **out,
                     size_t *n_serving, size_t *n_total, struct sw_err *e)
{
    int64_t budget = o && o->deadline_ms > 0 ? o->deadline_ms : DEF_DEADLINE_MS;
    unsigned http_ms = o && o->http_timeout_ms ? o->http_timeout_ms : DEF_HTTP_MS;
    const char *only = o ? o->only : NULL;
    size_t ns = 0, nt = 0;
    *out = NULL;
    if (only && !sw_fleet_endpoint(f, only))
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", f->path ? f->path : "fleet", only);
    json_t *res = json_object(), *eps = json_array();
    if (!res || !eps) {
        json_decref(res);
        json_decref(eps);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    /* every host at once, each in its own thread bounded by its own deadline (its endpoints'
     * renders too), so one dead host costs its deadline once, not once per host before it */
    struct epc *eps_c = sw_calloc(f->n_endpoints ? f->n_endpoints : 1, sizeof(*eps_c));
    struct hostjob *jobs = sw_calloc(f->n_hosts ? f->n_hosts : 1, sizeof(*jobs));
    size_t n_ep = 0;
    if (!eps_c || !jobs) {
        sw_free(eps_c);
        sw_free(jobs);
        json_decref(res);
        json_decref(eps);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (!ep->host || (only ? strcmp(only, ep->name) : !ep->enabled))
            continue;
        struct epc *x = &eps_c[n_ep++];
        x->ep = ep;
        /* on this machine, what `up` started is known by its pid file as well as by a unit */
        if (ep->host->transport == SW_FLEET_LOCAL)
            sw__status_up_read(ep, &x->up);
    }
    /* net's process-wide setup (curl's and libevent's globals) once here, before the threads,
     * rather than raced for under its pthread_once by the first two hosts */
    {
        struct sw_net_loop l;
        struct sw_err ne;
        if (!sw_net_loop_init(&l, NULL, &ne))
            sw_net_loop_close(&l);
    }
    for (size_t hi = 0; hi < f->n_hosts; hi++) {
        struct hostjob *j = &jobs[hi];
        bool any = false;
        for (size_t i = 0; i < n_ep; i++)
            any |= eps_c[i].ep->host == &f->hosts[hi];
        if (!any)
            continue;
        j->c.fh = &f->hosts[hi];
        j->c.budget = budget;
        j->f = f;
        if (o && o->skip_devices) {
            j->c.devices_done = true;
            j->c.devices = json_pack("{s:n,s:s}", "tool", "note", "not read on this look");
        }
        j->eps = eps_c;
        j->n_eps = n_ep;
        j->http_ms = http_ms;
        j->started = pthread_create(&j->th, NULL, host_job, j) == 0;
        if (!j->started)
            host_job(j); /* no thread: this host in turn, still within its deadline */
    }
    for (size_t hi = 0; hi < f->n_hosts; hi++)
        if (jobs[hi].started)
            pthread_join(jobs[hi].th, NULL);
    for (size_t i = 0; i < n_ep; i++) {
        struct epc *x = &eps_c[i];
        if (x->out) {
            nt++;
            ns += json_is_true(json_object_get(x->out, "serving"));
            json_array_append_new(eps, x->out);
        }
        sw_unit_render_free(&x->ur);
        sw__status_up_free(&x->up);
    }
    sw_free(eps_c);
    sw_free(jobs);
    sw_json_set_str(res, "fleet", f->path ? f->path : "");
    sw_json_set_int(res, "serving", (int64_t)ns);
    sw_json_set_int(res, "total", (int64_t)nt);
    sw_json_set_new(res, "endpoints", eps);
    *out = res;
    if (n_serving)
        *n_serving = ns;
    if (n_total)
        *n_total = nt;
    return 0;
}
