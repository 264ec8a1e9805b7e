/*
 * serve bluegreen: deploys through serve (POST /admin/deploy {"endpoint": NAME}, a key of an
 * admin client): the fleet file is read again and the endpoint's new shape priced (its claim per
 * device). When the admission law (sw_serve_admit) says the new shape fits beside the old and
 * everything else that holds those devices, the new shape boots beside the old on another port
 * (`up`, proved by readiness and a one-token generation), the route switches in one step of the
 * loop (new requests go to the new instance), the old drains (its requests in flight finish) and
 * stops: blue/green, no request fails. Otherwise, when the new shape fits once the old is gone,
 * stop-start: the old leaves the rotation (requests queue for the model, they are not refused),
 * drains, stops, the new boots on the endpoint's own port, and the queue goes to it; the queued
 * wait is measured. A stop-start whose new shape fails to boot (or to answer its proof) is rolled
 * back: the old shape boots again from the fleet text it was read from, and the queue goes to it.
 * When idle endpoints stand in the way, the ones the serve's policy names (never pinned, never
 * with a request in flight or queued) are evicted first. Deploys of different models run at
 * once; one model has one deploy at a time. Every decision is logged with its figures; the
 * admin's request is answered with the outcome when the deploy ends.
 *
 * Endpoints on other hosts are deployed by their gated rollout with the model's requests queued
 * (stopstart.c).
 *
 * What it does not do: local endpoints `up` does not boot (vLLM, SGLang: a 400 naming `slipway
 * deploy`), blue/green on another host, or roll back a blue/green (its old instance never stopped
 * serving).
 */
#include "deploy_internal.h"

#include <slipway/deploy.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *phase_name(enum bg_phase p)
{
    static const char *const names[] = {
        "idle",
        "evicting idle endpoints to make room",
        "booting the new shape beside the old",
        "draining the old instance (switched)",
        "stopping the old instance (switched)",
        "draining the old instance (requests queue)",
        "stopping the old instance (requests queue)",
        "booting the new shape (requests queue)",
        "rolling back to the old shape (requests queue)",
        "ending",
        "draining the old instance (requests queue; another host)",
        "running the gated rollout of its unit (requests queue)",
    };
    return (size_t)p < SW_ARRAY_LEN(names) ? names[p] : "?";
}

/* ---------------------------------------------------------------------------------------------
 * The fleet's texts: a shape boots from the text it was priced from.
 */
int sw__serve_fleet_read(const char *path, struct sw_fleet **out, char **text, struct sw_err *e)
{
    size_t len = 0;
    *out = NULL;
    *text = NULL;
    int rc = sw_read_file(path, SW_FLEET_MAX_FILE, text, &len, e);
    if (!rc)
        rc = sw_fleet_load_mem(path, *text, len, NULL, out, e);
    if (rc) {
        sw_free(*text);
        *text = NULL;
    }
    return rc;
}

static bool in_fleet(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep)
{
    uintptr_t p = (uintptr_t)ep, a = (uintptr_t)f->endpoints;
    return f->n_endpoints && p >= a && p < a + f->n_endpoints * sizeof(*ep);
}

/* The fleet ep is in (serve's first read, or a deploy's reload) and its text; NULL: none. */
const struct sw_fleet *sw__dep_fleet_of(struct sw__serve *sv, const struct sw_fleet_endpoint *ep,
                                        const char **text)
{
    for (const struct sw__dep_fleet *f = sv->bg ? sv->bg->fleets : NULL; f; f = f->next)
        if (in_fleet(f->fleet, ep)) {
            *text = f->text;
            return f->fleet;
        }
    *text = sv->fleet_text;
    return in_fleet(sv->fleet, ep) ? sv->fleet : NULL;
}

const char *sw__serve_bg_text(struct sw__serve *sv, const struct sw_fleet_endpoint *ep)
{
    const char *text = NULL;
    return sw__dep_fleet_of(sv, ep, &text) ? text : NULL;
}

const struct sw_fleet *sw__serve_bg_fleet(struct sw__serve *sv, const struct sw_fleet_endpoint *ep)
{
    const char *text = NULL;
    return sw__dep_fleet_of(sv, ep, &text);
}

/* ---------------------------------------------------------------------------------------------
 * Answers.
 */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void model_answers(struct sw__serve *sv, int mi, uint64_t *all, uint64_t *failed)
{
    const struct sw__serve_model *m = &sv->models[mi];
    *all = *failed = 0;
    for (int i = 0; i < SW__SERVE_N_CODES && m->codes[i]; i++) {
        *all += m->code_n[i];
        if (m->codes[i] >= 429)
            *failed += m->code_n[i];
    }
}

/*
 * The admin's connection closed (on its loop's thread; the deploy runs on the state loop's). The
 * callback stays set on the connection until the connection goes, whatever the deploy does: a
 * thread other than the connection's own never touches it (libevent's closecb and the request
 * it detaches are that loop's alone). So it may come after its deploy ended, or after d was
 * taken by another deploy: under mu it acts only while d->conn is still c (sw__dep_finish clears
 * it under mu when it hands the answer over), and d (sv->bg) is freed only after every loop's
 * connections (serve.c's serve_close).
 */
static void on_admin_gone(struct evhttp_connection *c, void *arg)
{
    struct sw__deploy *d = arg;
    struct sw__serve *sv = d->sv;
    sw__serve_enter(sv);
    if (d->conn == c) {
        /* libevent detaches a request whose reply is not done and leaves it to its user */
        if (d->req && !evhttp_request_get_connection(d->req))
            evhttp_request_free(d->req);
        d->req = NULL;
        d->conn = NULL;
        sw__serve_logf(sv, "deploy: %s: the admin's connection closed; the deploy goes on",
                       d->ep->name);
    }
    sw__serve_leave(sv);
}

static void answer_extras(const struct sw__deploy *d, const char *path, const char *error,
                          json_t *j)
{
    if (d->t_switch)
        json_object_set_new(j, "switched_after_s", json_real((double)(d->t_switch - d->t0) / 1e9));
    if (d->t_stopped && d->t_drain0)
        json_object_set_new(j, "drained_s", json_real((double)(d->t_stopped - d->t_drain0) / 1e9));
    if (!strcmp(path, "blue-green"))
        json_object_set_new(j, "drained_in_flight", json_integer(d->inflight_at_switch));
    if (d->n_victims) {
        json_object_set_new(j, "evicted", json_string(d->evicted));
        if (d->t_evicted)
            json_object_set_new(j, "evicted_in_s",
                                json_real((double)(d->t_evicted - d->t_evict0) / 1e9));
    }
    if (d->failure[0])
        json_object_set_new(j, "new_shape_failure", json_string(d->failure));
    if (!strcmp(path, "stop-start") && d->failure[0]) {
        json_object_set_new(j, "rolled_back", json_boolean(d->rolled_back));
        if (d->t_rollback)
            json_object_set_new(j, "rollback_s",
                                json_real((double)(d->t_rollback - d->t_rollback0) / 1e9));
    }
    if (d->remote && d->ro_outcome[0])
        json_object_set_new(j, "rollout",
                            json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:b}", "outcome", d->ro_outcome,
                                      "fail_class", d->ro_class, "fail_msg", d->ro_msg, "rollback",
                                      d->ro_rollback, "tag", d->ro_tag, "downtime_ms",
                                      (json_int_t)d->ro_downtime_ms, "serving", d->ro_serving));
    if (error)
        json_object_set_new(j, "error", json_string(error));
}

/* The deploy ended (ok, or error says why): the admin's answer with its figures; back to idle. */
void sw__dep_finish(struct sw__deploy *d, const char *path, const char *error)
{
    struct sw__serve *sv = d->sv;
    uint64_t all = 0, failed = 0;
    model_answers(sv, d->model, &all, &failed);
    double secs = (double)(sw_now_ns() - d->t0) / 1e9;
    qsort(d->waits, (size_t)d->n_waits, sizeof(double), cmp_double);
    double p50 = d->n_waits ? d->waits[(d->n_waits - 1) / 2] : 0;
    double p99 = d->n_waits ? d->waits[(int)ceil(0.99 * d->n_waits) - 1] : 0;
    json_t *j = json_pack(
        "{s:s,s:s,s:b,s:s,s:s,s:s,s:f,s:{s:I,s:I},s:{s:I,s:f,s:f,s:f}}", "endpoint", d->ep->name,
        "path", path, "ok", !error, "decision", d->decision, "old", d->old_addr, "new", d->new_addr,
        "seconds", secs, "requests", "answered", (json_int_t)(all - d->answered0), "failed",
        (json_int_t)(failed - d->failed0), "queued", "requests", (json_int_t)d->n_queued,
        "wait_p50_s", p50, "wait_p99_s", p99, "wait_max_s", d->wait_max);
    if (j)
        answer_extras(d, path, error, j);
    sw__dep_ledger_end(d, path, error, j);
    sw__serve_logf(sv,
                   "deploy: %s: %s %s in %.1f s (%s -> %s; %" PRIu64 " answered, %" PRIu64
                   " failed; %" PRIu64 " queued, wait p50 %.3f s p99 %.3f s max %.3f s)%s%s",
                   d->ep->name, path, error ? "failed" : "done", secs, d->old_addr, d->new_addr,
                   all - d->answered0, failed - d->failed0, d->n_queued, p50, p99, d->wait_max,
                   error ? ": " : "", error ? error : "");
    if (d->req) { /* by the admin's own loop (on_admin_gone says why) */
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        sw__serve_reply_on(d->lp, d->req, error ? 500 : 200, text, 0);
        free(text);
    }
    json_decref(j);
    d->req = NULL;
    d->conn = NULL;
    sv->eps[d->slot].pinned = d->old_pinned;
    if (d->drain_timer) {
        event_free(d->drain_timer);
        d->drain_timer = NULL;
    }
    d->phase = BG_IDLE;
}

static void refuse(struct sw__serve *sv, struct evhttp_request *req, int code, const char *msg)
{
    sw__serve_logf(sv, "deploy: refused (%d): %s", code, msg);
    sw__serve_reply_error(req, code, code == 403 ? "permission_error" : "invalid_request_error",
                          msg, 0);
}

/* The deploy a job of its own belongs to (its new instance's boot, or its rollback's). */
struct sw__deploy *sw__dep_of_job(struct sw__serve *sv, const struct sw__serve_job *j)
{
    for (int k = 0; sv->bg && k < BG_MAX; k++) {
        struct sw__deploy *d = &sv->bg->d[k];
        if ((d->phase == BG_STARTING && d->next == j->ep) ||
            ((d->phase == SS_STARTING || d->phase == SS_ROLLBACK) && d->slot == j->ep))
            return d;
    }
    return NULL;
}

/* A boot of slot i (`up` in a worker thread) whose end the loop hands to done: the shape of the
 * slot's endpoint from text, as `as` (NULL: its own name) on port (0: its own). */
int sw__dep_boot(struct sw__deploy *d, int i, const char *text, const char *as, unsigned port,
                 void (*done)(struct sw__serve *sv, struct sw__serve_job *j))
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_job *j = sw_calloc(1, sizeof(*j));
    if (!j)
        return -1;
    j->ep = i;
    j->start = true;
    j->fleet_text = text;
    if (as)
        snprintf(j->as, sizeof(j->as), "%s", as);
    j->port = port;
    j->done = done;
    sv->eps[i].state = SW_SERVE_STARTING;
    if (sw__serve_job_spawn(sv, j)) {
        sw_free(j);
        sv->eps[i].state = SW_SERVE_STOPPED;
        return -1;
    }
    return 0;
}

/* Slot x booted and proved (job j): it serves. */
void sw__dep_started(struct sw__serve_ep *x, const struct sw__serve_job *j, bool ours)
{
    snprintf(x->pid_path, sizeof(x->pid_path), "%s", j->pid_path);
    x->state = SW_SERVE_RUNNING;
    x->starts++;
    x->last_ns = sw_now_ns();
    x->ours = ours;
    x->can_stop = true;
}

/* ---------------------------------------------------------------------------------------------
 * The new shape beside the old.
 */
/* A slot for the new instance: a retired one that has stopped, else a new one. */
static int free_slot(struct sw__serve *sv)
{
    for (int i = 0; i < sv->n_eps; i++) {
        const struct sw__serve_ep *x = &sv->eps[i];
        if (x->retired && x->state == SW_SERVE_STOPPED && !x->inflight)
            return i;
    }
    return sv->n_eps < SW__SERVE_MAX_EP ? sv->n_eps++ : -1;
}

static void on_drain_bound(evutil_socket_t fd, short what, void *arg);

void sw__dep_drain_timer(struct sw__deploy *d)
{
    d->drain_timer = event_new(d->sv->base, -1, 0, on_drain_bound, d);
    struct timeval tv = {(time_t)d->drain_s, 0};
    if (d->drain_timer)
        event_add(d->drain_timer, &tv);
}

/* The new instance is proven: the route switches to it, the old drains. */
static void next_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    struct sw__deploy *d = sw__dep_of_job(sv, j);
    if (!d)
        return;
    struct sw__serve_ep *x = &sv->eps[d->next];
    if (j->rc) {
        x->state = SW_SERVE_STOPPED; /* its slot is free again */
        snprintf(d->failure, sizeof(d->failure), "%s", j->msg);
        sw__serve_logf(sv,
                       "deploy: %s: the new shape's boot failed after %.1f s: %s; the old "
                       "keeps serving",
                       d->ep->name, j->secs, j->msg);
        snprintf(d->fail_class, sizeof(d->fail_class), "%s", j->fail_class);
        sw__dep_finish(d, "blue-green", j->msg);
        return;
    }
    struct sw__serve_ep *old = &sv->eps[d->slot];
    sw__dep_started(x, j, d->old_ours);
    x->retired = false;
    struct sw__serve_model *m = &sv->models[d->model];
    for (int k = 0; k < m->n_eps; k++) /* the switch: one step of the loop */
        if (m->eps[k] == d->slot)
            m->eps[k] = d->next;
    old->retired = true;
    d->t_switch = d->t_drain0 = sw_now_ns();
    d->inflight_at_switch = old->inflight;
    sw__serve_logf(sv,
                   "deploy: %s: the new shape answered (ready and a one-token generation) in "
                   "%.1f s at %s; route switched from %s; the old drains %d in flight",
                   d->ep->name, j->secs, d->new_addr, d->old_addr, old->inflight);
    d->phase = BG_DRAINING;
    sw__dep_drain_timer(d);
}

/* The new instance's slot, STARTING and retired (in no model's list, out of /metrics) while it
 * boots: the admission law counts its claim on its devices from now on. -1: none. */
static int next_slot(struct sw__serve *sv, struct sw__deploy *d, char *why, size_t n)
{
    struct sw__serve_ep *old = &sv->eps[d->slot];
    int i = free_slot(sv);
    if (i < 0) {
        snprintf(why, n, "serve takes at most %d endpoint instances", SW__SERVE_MAX_EP);
        return -1;
    }
    struct sw__serve_ep *x = &sv->eps[i];
    if (x->client_open)
        sw_service_client_close(&x->client);
    sw__serve_pool_close(sv, i);
    memcpy(x, old, sizeof(*x));
    x->client_open = false;
    x->n_pool = 0; /* the old one's idle connections are the old one's */
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_service_client_open(d->fleet, d->ep->name, &x->client, &e)) {
        char m[800];
        snprintf(why, n, "%s", sw_err_format(&e, m, sizeof(m)));
        x->state = SW_SERVE_STOPPED;
        x->retired = true;
        return -1;
    }
    x->client_open = true;
    x->ep = d->ep;
    x->claim = d->claim;
    x->claim_ok = true;
    x->port = d->new_port;
    x->pid_path[0] = 0;
    x->state = SW_SERVE_STARTING;
    x->inflight = 0;
    x->retired = true;
    x->ours = x->can_stop = false;
    x->pinned = d->old_pinned;
    return i;
}

static void on_drain_bound(evutil_socket_t fd, short what, void *arg)
{
    struct sw__deploy *d = arg;
    struct sw__serve *sv = d->sv;
    (void)fd;
    (void)what;
    event_free(d->drain_timer);
    d->drain_timer = NULL;
    if (d->phase != BG_DRAINING && d->phase != SS_DRAINING && d->phase != RO_DRAINING)
        return;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    sw__serve_logf(sv, "deploy: %s: %d still in flight after the drain bound %u s: stopped anyway",
                   d->ep->name, old->inflight, d->drain_s);
    if (d->phase == RO_DRAINING) { /* the rollout stops the unit under them */
        sw__dep_ro_run(d);
        return;
    }
    d->phase = d->phase == BG_DRAINING ? BG_STOPPING : SS_STOPPING;
    d->t_stopped = 0;
    sw__serve_start_stop(sv, d->slot, false);
}

/* The new instance's pid file takes the endpoint's name (RUN_DIR/NAME.pid): `slipway down NAME`,
 * `status` and the next serve find it there. */
static void rename_pid(struct sw__serve *sv, struct sw__serve_ep *x, const char *path)
{
    char to[4096];
    snprintf(to, sizeof(to), "%s", path); /* path may be another slot's */
    struct sw_pidfile pf;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_pidfile_read(x->pid_path, &pf, &e) == 0) {
        snprintf(pf.endpoint, sizeof(pf.endpoint), "%s", x->ep->name);
        if (sw_pidfile_write(to, &pf, &e) == 0) {
            unlink(x->pid_path);
            snprintf(x->pid_path, sizeof(x->pid_path), "%s", to);
            return;
        }
    }
    char m[800];
    sw__serve_logf(sv, "deploy: %s: its pid file stays %s: %s", x->ep->name, x->pid_path,
                   sw_err_format(&e, m, sizeof(m)));
}

/* Blue/green once there is room: the new shape boots beside the old (its slot is d->next). */
static void bg_boot(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    char as[160];
    /* its own pid file and log (RUN_DIR/NAME-PORT.*): the old one's log stays whole */
    snprintf(as, sizeof(as), "%.150s-%u", d->ep->name, d->new_port);
    d->phase = BG_STARTING;
    sw__serve_logf(sv, "deploy: %s: the new shape boots beside the old at %s:%u", d->ep->name,
                   old->host, d->new_port);
    if (sw__dep_boot(d, d->next, d->text, as, d->new_port, next_done))
        sw__dep_finish(d, "blue-green", "no thread for the new shape's boot");
}

/* ---------------------------------------------------------------------------------------------
 * The steps, driven from the loop.
 */
/* The evictions ended: then the path the decision took, or a failure (nothing else touched). */
static void evicted(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    for (int v = 0; v < d->n_victims; v++)
        if (sv->eps[d->victims[v]].state == SW_SERVE_STOPPING)
            return;
    d->t_evicted = sw_now_ns();
    for (int v = 0; v < d->n_victims; v++) {
        const struct sw__serve_ep *y = &sv->eps[d->victims[v]];
        if (y->state != SW_SERVE_STOPPED) {
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "%s could not be evicted (its stop failed: serve's log "
                     "says why); the old shape serves on",
                     y->ep->name);
            if (d->next >= 0)
                sv->eps[d->next].state = SW_SERVE_STOPPED;
            sw__dep_finish(d, d->blue_green ? "blue-green" : "stop-start", msg);
            return;
        }
    }
    sw__serve_logf(sv, "deploy: %s: room made in %.1f s (%s stopped); %s", d->ep->name,
                   (double)(d->t_evicted - d->t_evict0) / 1e9, d->evicted,
                   d->blue_green ? "blue/green" : "stop-start");
    if (d->blue_green)
        bg_boot(d);
    else
        sw__dep_ss_begin(d);
}

static void step(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    switch (d->phase) {
    case EV_STOPPING:
        evicted(d);
        return;
    case RO_DRAINING:
        if (old->inflight)
            return;
        sw__serve_logf(sv, "deploy: %s: the old instance has drained in %.1f s: the rollout runs",
                       d->ep->name, (double)(sw_now_ns() - d->t_drain0) / 1e9);
        sw__dep_ro_run(d);
        return;
    case BG_DRAINING:
    case SS_DRAINING:
        if (old->inflight)
            return;
        if (old->state == SW_SERVE_STOPPED) { /* stopped meanwhile (an eviction, its idle_ttl) */
            d->phase = d->phase == BG_DRAINING ? BG_STOPPING : SS_STOPPING;
            step(d);
            return;
        }
        sw__serve_logf(sv, "deploy: %s: the old instance has drained in %.1f s: stopping it",
                       d->ep->name, (double)(sw_now_ns() - d->t_drain0) / 1e9);
        d->phase = d->phase == BG_DRAINING ? BG_STOPPING : SS_STOPPING;
        sw__serve_start_stop(sv, d->slot, false);
        return;
    case BG_STOPPING:
        if (old->state == SW_SERVE_STOPPING)
            return;
        d->t_stopped = sw_now_ns();
        if (old->state == SW_SERVE_RUNNING) { /* the stop failed: it keeps its memory */
            sw__dep_finish(d, "blue-green",
                           "the old instance's stop failed (serve's log says why)");
            return;
        }
        rename_pid(sv, &sv->eps[d->next], old->pid_path);
        sw__dep_finish(d, "blue-green", NULL);
        return;
    case SS_STOPPING:
        if (old->state == SW_SERVE_STOPPING)
            return;
        d->t_stopped = sw_now_ns();
        if (old->state == SW_SERVE_RUNNING) {
            old->claim = d->old_claim;
            sw__dep_finish(d, "stop-start", "the old instance's stop failed: it serves on");
            return;
        }
        sw__dep_ss_boot(d);
        return;
    default: /* the boots' ends come by their jobs; SS_DONE's by its event */
        return;
    }
}

void sw__serve_bg_kick(struct sw__serve *sv)
{
    for (int k = 0; sv->bg && k < BG_MAX; k++)
        if (sv->bg->d[k].phase != BG_IDLE)
            step(&sv->bg->d[k]);
}

static struct sw__deploy *of_model(struct sw__serve *sv, int mi)
{
    for (int k = 0; sv->bg && k < BG_MAX; k++)
        if (sv->bg->d[k].phase != BG_IDLE && sv->bg->d[k].model == mi)
            return &sv->bg->d[k];
    return NULL;
}

bool sw__serve_bg_holds(struct sw__serve *sv, int mi)
{
    const struct sw__deploy *d = of_model(sv, mi);
    return d && (d->phase == SS_DRAINING || d->phase == SS_STOPPING || d->phase == SS_STARTING ||
                 d->phase == SS_ROLLBACK || d->phase == RO_DRAINING || d->phase == RO_RUNNING);
}

void sw__serve_bg_waited(struct sw__serve *sv, int mi, double secs)
{
    struct sw__deploy *d = of_model(sv, mi);
    if (!d)
        return;
    d->n_queued++;
    if (d->n_waits < BG_WAITS)
        d->waits[d->n_waits++] = secs;
    if (secs > d->wait_max)
        d->wait_max = secs;
}

/* ---------------------------------------------------------------------------------------------
 * The decision.
 */
/* A port for the new instance on the old one's address: the endpoint's declared one when the old
 * runs elsewhere (an earlier deploy moved it) and it is free, else one the kernel gives. 0: none. */
static unsigned pick_port(const char *host, unsigned declared, unsigned old)
{
    if (declared && declared != old && !sw_port_check(host, declared, NULL))
        return declared;
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unsigned port = 0;
    socklen_t al = sizeof(a);
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
        !getsockname(fd, (struct sockaddr *)&a, &al))
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The law's two questions: does the new shape fit beside the old (and everything else, once the
 * idle endpoints the serve's policy names are evicted)? Does it fit once the old is gone (the
 * same)? 1 blue/green, 0 stop-start, -1 neither (why in d->decision); the endpoints to evict
 * first in d->victims. The old is never one of them: beside the new it is held as pinned. */
static int decide(struct sw__serve *sv, struct sw__deploy *d)
{
    struct sw_serve_tenant ts[SW__SERVE_MAX_EP + 1];
    int k = sw__serve_tenants(sv, ts), slot = d->slot;
    char nm[160], *out = d->decision;
    size_t n = sizeof(d->decision);
    snprintf(nm, sizeof(nm), "%s (new shape)", sv->eps[slot].ep->name);
    ts[k] = (struct sw_serve_tenant){.name = nm, .claim = &d->claim, .state = SW_SERVE_STOPPED};
    ts[slot].pinned = true;
    struct sw_serve_decision beside, alone, *took = NULL;
    sw_serve_admit(ts, k + 1, k, &beside);
    bool running = sv->eps[slot].state == SW_SERVE_RUNNING;
    int how = -1;
    if (running && !d->remote &&
        (beside.verdict == SW_SERVE_FITS || beside.verdict == SW_SERVE_EVICT)) {
        snprintf(out, n, "blue-green: beside the old: %.1200s", beside.text);
        took = &beside;
        how = 1;
    } else {
        ts[slot].state = SW_SERVE_STOPPED;
        sw_serve_admit(ts, k + 1, k, &alone);
        if (d->remote && (alone.verdict == SW_SERVE_FITS || alone.verdict == SW_SERVE_EVICT)) {
            snprintf(out, n,
                     "rollout (another host: its unit stops and starts, no blue/green there): "
                     "once the old is gone: %.1200s",
                     alone.text);
            took = &alone;
            how = 0;
        } else if (alone.verdict == SW_SERVE_FITS || alone.verdict == SW_SERVE_EVICT) {
            snprintf(out, n, "stop-start: %.600s; once the old is gone: %.600s",
                     running ? beside.text : "the old is not running", alone.text);
            took = &alone;
            how = 0;
        } else
            snprintf(out, n, "neither: beside the old: %.600s; once the old is gone: %.600s",
                     beside.text, alone.text);
    }
    d->n_victims = 0;
    d->evicted[0] = 0;
    int w = 0;
    for (int v = 0; took && took->verdict == SW_SERVE_EVICT && v < took->n_victims; v++) {
        d->victims[d->n_victims++] = took->victims[v];
        if (w >= 0 && (size_t)w < sizeof(d->evicted))
            w += snprintf(d->evicted + w, sizeof(d->evicted) - (size_t)w, "%s%s", v ? ", " : "",
                          sv->eps[took->victims[v]].ep->name);
    }
    return how;
}

/* Parse the admin's body: the endpoint's slot, or -1 (the refusal was sent); its drain bound and
 * (another host's) battery into d. */
static int find_slot(struct sw__serve *sv, struct evhttp_request *req, struct sw__deploy *d)
{
    char msg[600];
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    unsigned char *raw = evbuffer_pullup(in, (ev_ssize_t)len);
    json_t *body = raw ? sw_json_parse((const char *)raw, len, "request", NULL) : NULL;
    const char *name = json_string_value(json_object_get(body, "endpoint"));
    json_int_t drain = json_integer_value(json_object_get(body, "drain_s"));
    const char *probe = json_string_value(json_object_get(body, "probe_only"));
    snprintf(d->probe_only, sizeof(d->probe_only), "%s", probe ? probe : "");
    d->worst_case = !json_is_false(json_object_get(body, "worst_case"));
    int i = 0;
    while (name && i < sv->n_eps && (sv->eps[i].retired || strcmp(sv->eps[i].ep->name, name)))
        i++;
    if (!name || i == sv->n_eps) {
        if (name)
            snprintf(msg, sizeof(msg), "serve does not serve an endpoint named %.200s", name);
        else
            snprintf(msg, sizeof(msg), "the body must be a JSON object naming its 'endpoint'");
        json_decref(body);
        refuse(sv, req, name ? 404 : 400, msg);
        return -1;
    }
    json_decref(body);
    d->drain_s = drain > 0 && drain <= 86400 ? (unsigned)drain : BG_DRAIN_DEFAULT;
    return i;
}

/* May endpoint i be deployed now? 0, or the refusal was sent. */
static int check(struct sw__serve *sv, struct evhttp_request *req, int i)
{
    char msg[1600];
    const struct sw__serve_ep *x = &sv->eps[i];
    const struct sw__deploy *other = of_model(sv, x->model);
    if (other) {
        snprintf(msg, sizeof(msg),
                 "a deploy of %s (model %s, by %s) is under way: %s, %.1f s in; one deploy at a "
                 "time per model (deploys of other models may run beside it)",
                 other->ep->name, sv->models[x->model].name, other->client,
                 phase_name(other->phase), (double)(sw_now_ns() - other->t0) / 1e9);
        refuse(sv, req, 409, msg);
        return -1;
    }
    if (x->state == SW_SERVE_STARTING || x->state == SW_SERVE_STOPPING) {
        snprintf(msg, sizeof(msg), "%s is %s: deploy it once that is done", x->ep->name,
                 sw_serve_state_name(x->state));
        refuse(sv, req, 409, msg);
        return -1;
    }
    if (x->local &&
        (x->ep->engine != SW_FLEET_LLAMACPP || (!x->can_stop && x->state != SW_SERVE_STOPPED))) {
        snprintf(msg, sizeof(msg),
                 "%s: serve deploys the local llama.cpp endpoints it can start and stop (`up`) "
                 "and the units of other hosts (the gated rollout); %s",
                 x->ep->name,
                 x->ep->engine != SW_FLEET_LLAMACPP ? "deploy this one with `slipway deploy`"
                                                    : "this one runs outside serve's pid files");
        refuse(sv, req, 400, msg);
        return -1;
    }
    return 0;
}

/* The admin's request: checked, the fleet read again and the new shape priced into a free
 * deploy. NULL: the refusal was sent. */
static struct sw__deploy *begin(struct sw__serve *sv, struct evhttp_request *req,
                                const char *client)
{
    char msg[1600];
    if (!sv->n_keys || strncmp(client, "admin", 5)) {
        refuse(sv, req, 403,
               sv->n_keys ? "a deploy needs the key of an admin client (a --keys name that "
                            "begins with 'admin')"
                          : "serve runs without --keys: a deploy needs the key of an admin client");
        return NULL;
    }
    struct sw__deploy *d = NULL;
    for (int k = 0; k < BG_MAX && !d; k++)
        if (sv->bg->d[k].phase == BG_IDLE)
            d = &sv->bg->d[k];
    if (!d) {
        snprintf(msg, sizeof(msg), "%d deploys are under way (serve runs at most %d at once)",
                 BG_MAX, BG_MAX);
        refuse(sv, req, 409, msg);
        return NULL;
    }
    int i = find_slot(sv, req, d);
    if (i < 0 || check(sv, req, i))
        return NULL;
    const char *name = sv->eps[i].ep->name;
    struct sw__dep_fleet *bf = sw_calloc(1, sizeof(*bf));
    struct sw_err e;
    sw_err_clear(&e);
    const struct sw_fleet_endpoint *nep = NULL;
    int rc = bf ? sw__serve_fleet_read(sv->fleet_path, &bf->fleet, &bf->text, &e) : SW_ENOMEM;
    if (!rc)
        rc = sw_fleet_find_endpoint(bf->fleet, name, &nep, &e);
    if (!rc && sv->eps[i].local && nep->engine != SW_FLEET_LLAMACPP)
        rc = sw_err_set(&e, SW_EINVAL, "%s: the new shape is not a llama.cpp endpoint", name);
    if (!rc)
        rc = sw_serve_claim(nep, &d->claim, &e);
    if (rc) {
        if (bf) {
            sw_fleet_free(bf->fleet);
            sw_free(bf->text);
        }
        sw_free(bf);
        char m[1200];
        snprintf(msg, sizeof(msg), "the new shape: %s", sw_err_format(&e, m, sizeof(m)));
        refuse(sv, req, 400, msg);
        return NULL;
    }
    bf->next = sv->bg->fleets;
    sv->bg->fleets = bf;
    d->sv = sv;
    d->fleet = bf->fleet;
    d->text = bf->text;
    d->ep = nep;
    d->slot = i;
    d->remote = !sv->eps[i].local;
    snprintf(d->client, sizeof(d->client), "%s", client);
    return d;
}

/* The deploy's start: its figures zeroed, the old shape kept (for a rollback). */
static void reset(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    d->next = -1;
    d->model = old->model;
    d->old_ours = old->ours;
    d->old_pinned = old->pinned;
    d->old_ep = old->ep;
    d->old_claim = old->claim;
    snprintf(d->old_host, sizeof(d->old_host), "%s", old->host);
    d->old_port = old->port;
    d->rolled_back = false;
    d->failure[0] = d->error[0] = 0;
    d->ro_outcome[0] = 0;
    d->ro_downtime_ms = -1;
    d->ro_serving = false;
    d->t0 = sw_now_ns();
    d->t_switch = d->t_drain0 = d->t_stopped = d->t_evict0 = d->t_evicted = 0;
    d->t_rollback0 = d->t_rollback = 0;
    d->attempt = 0;
    json_decref(d->shape);
    d->shape = NULL;
    d->same_shape = false;
    d->fail_class[0] = d->ledger_msg[0] = 0;
    d->n_waits = 0;
    d->n_queued = 0;
    d->wait_max = 0;
    d->inflight_at_switch = 0;
    model_answers(sv, d->model, &d->answered0, &d->failed0);
    snprintf(d->old_addr, sizeof(d->old_addr), "%s:%u", old->host, old->port);
    snprintf(d->new_addr, sizeof(d->new_addr), "-");
}

/* A stopped endpoint just takes the new shape: its next start boots it. */
static void take_stopped(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    char why[1000];
    if (sw__dep_take_shape(sv, old, d->fleet, d->ep, &d->claim, 0, why, sizeof(why))) {
        sw__dep_finish(d, "stopped", why);
        return;
    }
    old->pid_path[0] = 0;
    snprintf(d->new_addr, sizeof(d->new_addr), "%s:%u", old->host, old->port);
    sw__dep_finish(d, "stopped", NULL);
}

/* Blue/green: the new instance's port and slot (its claim counts from now on). 0, or finished. */
static int bg_prepare(struct sw__deploy *d)
{
    struct sw__serve *sv = d->sv;
    struct sw__serve_ep *old = &sv->eps[d->slot];
    struct sw_service_client nc;
    unsigned declared = 0;
    if (!sw_service_client_open(d->fleet, d->ep->name, &nc, NULL)) {
        declared = nc.route.addr.port;
        sw_service_client_close(&nc);
    }
    d->new_port = pick_port(old->host, declared, old->port);
    char why[900];
    if (!d->new_port) {
        sw__dep_finish(d, "blue-green", "no free port for the new shape beside the old");
        return -1;
    }
    d->next = next_slot(sv, d, why, sizeof(why));
    if (d->next < 0) {
        sw__dep_finish(d, "blue-green", why);
        return -1;
    }
    old = &sv->eps[d->slot];
    old->pinned = true; /* not evicted while the new one boots beside it */
    snprintf(d->new_addr, sizeof(d->new_addr), "%s:%u", old->host, d->new_port);
    return 0;
}

void sw__serve_on_deploy(struct sw__serve *sv, struct evhttp_request *req, const char *client)
{
    if (!sv->bg)
        sv->bg = sw_calloc(1, sizeof(*sv->bg));
    if (!sv->bg) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    struct sw__deploy *d = begin(sv, req, client);
    if (!d)
        return;
    reset(d);
    int how = decide(sv, d);
    sw__serve_logf(sv, "deploy: %s (by %s): %s", d->ep->name, client, d->decision);
    d->blue_green = how == 1 && !d->remote;
    if (how < 0) { /* refused by the law: recorded as a gate's refusal */
        sw__dep_ledger_begin(d, "none");
        sw__dep_ledger_end(d, "none", d->decision, NULL);
        sw__serve_reply_error(req, 409, "insufficient_memory", d->decision, 0);
        return;
    }
    /* a deploy serve runs itself records its attempt; another host's rollout its own */
    if (!d->remote && sv->eps[d->slot].state != SW_SERVE_STOPPED)
        sw__dep_ledger_begin(d, d->blue_green ? "blue_green" : "stop_start");
    d->req = req;
    d->lp = sw__serve_self();
    d->conn = evhttp_request_get_connection(req);
    if (d->conn)
        evhttp_connection_set_closecb(d->conn, on_admin_gone, d);
    if (d->remote) {
        /* one unit per endpoint on its host: no blue/green there; the rollout stops and starts it */
        sv->eps[d->slot].pinned = true;
        d->n_victims = 0; /* serve stops nothing on another host */
        sw__dep_ro_begin(d);
        return;
    }
    if (sv->eps[d->slot].state == SW_SERVE_STOPPED) {
        d->n_victims = 0; /* nothing boots now: nothing is evicted */
        take_stopped(d);
        return;
    }
    if (d->blue_green && bg_prepare(d))
        return;
    /* the old is not evicted (by another deploy or a start) while this one runs */
    sv->eps[d->slot].pinned = true;
    if (!d->blue_green) /* the larger of both shapes is held from now on */
        sw__serve_claim_max(&sv->eps[d->slot].claim, &d->claim);
    if (d->n_victims) {
        /* the idle endpoints the policy names make room first; nothing in flight, none pinned */
        d->phase = EV_STOPPING;
        d->t_evict0 = sw_now_ns();
        sw__serve_logf(sv, "deploy: %s: evicting %s to make room (idle, by the serve's policy)",
                       d->ep->name, d->evicted);
        for (int v = 0; v < d->n_victims; v++) {
            sv->eps[d->victims[v]].evictions++;
            sw__serve_start_stop(sv, d->victims[v], false);
        }
        step(d);
        return;
    }
    if (d->blue_green)
        bg_boot(d);
    else {
        sw__dep_ss_begin(d);
        step(d);
    }
}

void sw__serve_bg_orphan(struct sw__serve *sv, struct sw__serve_job *j)
{
    if (j->rc || !j->pid_path[0] || sv->o->keep)
        return;
    struct sw_stop_report rep;
    int rc = sw_pidfile_stop(j->pid_path, sv->o->grace_ms ? sv->o->grace_ms : 10000, &rep, NULL);
    sw__serve_logf(sv, "deploy: its new instance (%s) %s at exit", j->pid_path,
                   rc ? "not stopped" : "stopped");
}

void sw__serve_bg_free(struct sw__serve *sv)
{
    struct sw__serve_bg *bg = sv->bg;
    if (!bg)
        return;
    for (int k = 0; k < BG_MAX; k++) {
        struct sw__deploy *d = &bg->d[k];
        if (d->drain_timer)
            event_free(d->drain_timer);
        json_decref(d->shape);
    }
    while (bg->fleets) {
        struct sw__dep_fleet *f = bg->fleets;
        bg->fleets = f->next;
        sw_fleet_free(f->fleet);
        sw_free(f->text);
        sw_free(f);
    }
    sw_free(bg);
    sv->bg = NULL;
}
