/*
 * serve bluegreen: a deploy through serve (POST /admin/deploy {"endpoint": NAME}, a key of an
 * admin client): the fleet file is read again and the endpoint's new shape priced (its claim per
 * device). When the admission law (sw_serve_admit) says the new shape fits beside the old and
 * everything else that holds those devices, the new shape boots beside the old on another port
 * (`up`, proved by readiness and a one-token generation), the route switches in one step of the
 * loop (new requests go to the new instance), the old drains (its requests in flight finish) and
 * stops: blue/green, no request fails. Otherwise, when the new shape fits once the old is gone,
 * stop-start: the old leaves the rotation (requests queue for the model, they are not refused),
 * drains, stops, the new boots on the endpoint's own port, and the queue goes to it; the queued
 * wait is measured. Every decision is logged with its figures; the admin's request is answered
 * with the outcome when the deploy ends.
 *
 * What it does not do: endpoints serve does not start (`up` boots local llama.cpp endpoints; the
 * units of other hosts deploy by `slipway deploy`), evict others to make room for a deploy, roll
 * back a stop-start whose new shape fails to boot (the queue is answered 503 with the failure),
 * or more than one deploy at a time.
 */
#include "serve_internal.h"

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

#define BG_WAITS         4096
#define BG_DRAIN_DEFAULT 300

enum bg_phase {
    BG_IDLE,
    BG_STARTING, /* blue/green: the new instance boots beside the old */
    BG_DRAINING, /* blue/green: switched; the old finishes its requests */
    BG_STOPPING, /* blue/green: the old stops */
    SS_DRAINING, /* stop-start: out of rotation, requests queue; the old finishes its requests */
    SS_STOPPING, /* stop-start: the old stops */
    SS_STARTING, /* stop-start: the new shape boots on the endpoint's port */
    SS_DONE,     /* stop-start: it serves (or failed); the queue goes to it, then the answer */
};

struct bg_fleet {
    struct sw_fleet *fleet;
    struct bg_fleet *next;
};

struct sw__serve_bg {
    enum bg_phase phase;
    struct bg_fleet *fleets; /* every reload: the slots point into them until exit */
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    const struct sw_fleet_endpoint *ep; /* the new shape, in fleets->fleet */
    struct sw_serve_claim claim;
    int slot, next; /* the old instance's slot; the new one's (blue/green) */
    int model;
    bool old_ours, old_pinned;
    char decision[1400];
    char old_addr[300], new_addr[300];
    unsigned new_port;
    char next_pid[4096];
    uint64_t t0, t_switch, t_drain0, t_stopped;
    int inflight_at_switch;
    unsigned drain_s;
    struct event *drain_timer;
    uint64_t answered0, failed0; /* the model's answers before the deploy (all; >= 429) */
    double waits[BG_WAITS];      /* queued waits of the model's requests during the deploy */
    int n_waits;
    bool ss_ok;
    uint64_t n_queued;
    double wait_max;
};

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

static void on_admin_gone(struct evhttp_connection *c, void *arg)
{
    struct sw__serve *sv = arg;
    (void)c;
    struct sw__serve_bg *bg = sv->bg;
    /* libevent detaches a request whose reply is not done and leaves it to its user */
    if (bg->req && !evhttp_request_get_connection(bg->req))
        evhttp_request_free(bg->req);
    bg->req = NULL;
    bg->conn = NULL;
    sw__serve_logf(sv, "deploy: the admin's connection closed; the deploy goes on");
}

/* The deploy ended (ok, or error says why): the admin's answer with its figures; back to idle. */
static void finish(struct sw__serve *sv, const char *path, const char *error)
{
    struct sw__serve_bg *bg = sv->bg;
    uint64_t all = 0, failed = 0;
    model_answers(sv, bg->model, &all, &failed);
    double secs = (double)(sw_now_ns() - bg->t0) / 1e9;
    qsort(bg->waits, (size_t)bg->n_waits, sizeof(double), cmp_double);
    double p50 = bg->n_waits ? bg->waits[(bg->n_waits - 1) / 2] : 0;
    double p99 = bg->n_waits ? bg->waits[(int)ceil(0.99 * bg->n_waits) - 1] : 0;
    json_t *j = json_pack(
        "{s:s,s:s,s:b,s:s,s:s,s:s,s:f,s:{s:I,s:I},s:{s:I,s:f,s:f,s:f}}", "endpoint", bg->ep->name,
        "path", path, "ok", !error, "decision", bg->decision, "old", bg->old_addr, "new",
        bg->new_addr, "seconds", secs, "requests", "answered", (json_int_t)(all - bg->answered0),
        "failed", (json_int_t)(failed - bg->failed0), "queued", "requests",
        (json_int_t)bg->n_queued, "wait_p50_s", p50, "wait_p99_s", p99, "wait_max_s", bg->wait_max);
    if (j && bg->t_switch)
        json_object_set_new(j, "switched_after_s",
                            json_real((double)(bg->t_switch - bg->t0) / 1e9));
    if (j && bg->t_stopped && bg->t_drain0)
        json_object_set_new(j, "drained_s",
                            json_real((double)(bg->t_stopped - bg->t_drain0) / 1e9));
    if (j && !strcmp(path, "blue-green"))
        json_object_set_new(j, "drained_in_flight", json_integer(bg->inflight_at_switch));
    if (j && error)
        json_object_set_new(j, "error", json_string(error));
    sw__serve_logf(sv,
                   "deploy: %s: %s %s in %.1f s (%s -> %s; %" PRIu64 " answered, %" PRIu64
                   " failed; %" PRIu64 " queued, wait p50 %.3f s p99 %.3f s max %.3f s)%s%s",
                   bg->ep->name, path, error ? "failed" : "done", secs, bg->old_addr, bg->new_addr,
                   all - bg->answered0, failed - bg->failed0, bg->n_queued, p50, p99, bg->wait_max,
                   error ? ": " : "", error ? error : "");
    if (bg->req) {
        if (bg->conn)
            evhttp_connection_set_closecb(bg->conn, NULL, NULL);
        sw__serve_reply_json(bg->req, error ? 500 : 200, j);
    } else
        json_decref(j);
    bg->req = NULL;
    bg->conn = NULL;
    sv->eps[bg->slot].pinned = bg->old_pinned;
    if (bg->drain_timer) {
        event_free(bg->drain_timer);
        bg->drain_timer = NULL;
    }
    bg->phase = BG_IDLE;
}

static void refuse(struct sw__serve *sv, struct evhttp_request *req, int code, const char *msg)
{
    sw__serve_logf(sv, "deploy: refused (%d): %s", code, msg);
    sw__serve_reply_error(req, code, code == 403 ? "permission_error" : "invalid_request_error",
                          msg, 0);
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

/* The new instance is proven: the route switches to it, the old drains. */
static void next_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    struct sw__serve_bg *bg = sv->bg;
    struct sw__serve_ep *x = &sv->eps[bg->next];
    if (j->rc) {
        x->state = SW_SERVE_STOPPED; /* its slot is free again */
        sw__serve_logf(sv,
                       "deploy: %s: the new shape's boot failed after %.1f s: %s; the old "
                       "keeps serving",
                       bg->ep->name, j->secs, j->msg);
        finish(sv, "blue-green", j->msg);
        return;
    }
    struct sw__serve_ep *old = &sv->eps[bg->slot];
    snprintf(x->pid_path, sizeof(x->pid_path), "%s", j->pid_path);
    x->state = SW_SERVE_RUNNING;
    x->retired = false;
    x->starts = old->starts + 1;
    x->last_ns = sw_now_ns();
    x->ours = bg->old_ours;
    x->can_stop = true;
    struct sw__serve_model *m = &sv->models[bg->model];
    for (int k = 0; k < m->n_eps; k++) /* the switch: one step of the loop */
        if (m->eps[k] == bg->slot)
            m->eps[k] = bg->next;
    old->retired = true;
    bg->t_switch = bg->t_drain0 = sw_now_ns();
    bg->inflight_at_switch = old->inflight;
    sw__serve_logf(sv,
                   "deploy: %s: the new shape answered (ready and a one-token generation) in "
                   "%.1f s at %s; route switched from %s; the old drains %d in flight",
                   bg->ep->name, j->secs, bg->new_addr, bg->old_addr, old->inflight);
    bg->phase = BG_DRAINING;
    bg->drain_timer = event_new(sv->base, -1, 0, on_drain_bound, sv);
    struct timeval tv = {(time_t)bg->drain_s, 0};
    if (bg->drain_timer)
        event_add(bg->drain_timer, &tv);
}

/* The new instance's slot, STARTING and retired (in no model's list, out of /metrics) while it
 * boots: the admission law counts its claim on its devices from now on. -1: none. */
static int next_slot(struct sw__serve *sv, struct sw__serve_bg *bg, char *why, size_t n)
{
    struct sw__serve_ep *old = &sv->eps[bg->slot];
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
    if (sw_service_client_open(bg->fleets->fleet, bg->ep->name, &x->client, &e)) {
        char m[800];
        snprintf(why, n, "%s", sw_err_format(&e, m, sizeof(m)));
        x->state = SW_SERVE_STOPPED;
        x->retired = true;
        return -1;
    }
    x->client_open = true;
    x->ep = bg->ep;
    x->claim = bg->claim;
    x->claim_ok = true;
    x->port = bg->new_port;
    x->pid_path[0] = 0;
    x->state = SW_SERVE_STARTING;
    x->inflight = 0;
    x->retired = true;
    x->ours = x->can_stop = false;
    x->pinned = bg->old_pinned;
    return i;
}

static void on_drain_bound(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve *sv = arg;
    struct sw__serve_bg *bg = sv->bg;
    (void)fd;
    (void)what;
    event_free(bg->drain_timer);
    bg->drain_timer = NULL;
    if (bg->phase != BG_DRAINING && bg->phase != SS_DRAINING)
        return;
    struct sw__serve_ep *old = &sv->eps[bg->slot];
    sw__serve_logf(sv, "deploy: %s: %d still in flight after the drain bound %u s: stopped anyway",
                   bg->ep->name, old->inflight, bg->drain_s);
    bg->phase = bg->phase == BG_DRAINING ? BG_STOPPING : SS_STOPPING;
    bg->t_stopped = 0;
    sw__serve_start_stop(sv, bg->slot, false);
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

/* ---------------------------------------------------------------------------------------------
 * The steps, driven from the loop.
 */
static void on_ss_done(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve *sv = arg;
    (void)fd;
    (void)what;
    if (sv->bg->phase == SS_DONE)
        finish(sv, "stop-start", sv->bg->ss_ok ? NULL : "the new shape's boot failed");
}

void sw__serve_bg_kick(struct sw__serve *sv)
{
    struct sw__serve_bg *bg = sv->bg;
    if (!bg || bg->phase == BG_IDLE)
        return;
    struct sw__serve_ep *old = &sv->eps[bg->slot];
    switch (bg->phase) {
    case BG_DRAINING:
    case SS_DRAINING:
        if (old->inflight)
            return;
        if (old->state == SW_SERVE_STOPPED) { /* stopped meanwhile (an eviction, its idle_ttl) */
            bg->phase = bg->phase == BG_DRAINING ? BG_STOPPING : SS_STOPPING;
            sw__serve_bg_kick(sv);
            return;
        }
        sw__serve_logf(sv, "deploy: %s: the old instance has drained in %.1f s: stopping it",
                       bg->ep->name, (double)(sw_now_ns() - bg->t_drain0) / 1e9);
        bg->phase = bg->phase == BG_DRAINING ? BG_STOPPING : SS_STOPPING;
        sw__serve_start_stop(sv, bg->slot, false);
        return;
    case BG_STOPPING:
        if (old->state == SW_SERVE_STOPPING)
            return;
        bg->t_stopped = sw_now_ns();
        if (old->state == SW_SERVE_RUNNING) { /* the stop failed: it keeps its memory */
            finish(sv, "blue-green", "the old instance's stop failed (serve's log says why)");
            return;
        }
        rename_pid(sv, &sv->eps[bg->next], old->pid_path);
        finish(sv, "blue-green", NULL);
        return;
    case SS_STOPPING:
        if (old->state == SW_SERVE_STOPPING)
            return;
        bg->t_stopped = sw_now_ns();
        if (old->state == SW_SERVE_RUNNING) {
            finish(sv, "stop-start", "the old instance's stop failed: it serves on");
            return;
        }
        /* the slot takes the new shape on the endpoint's own address, then boots it */
        {
            struct sw_service_client c;
            struct sw_err e;
            sw_err_clear(&e);
            if (sw_service_client_open(bg->fleets->fleet, bg->ep->name, &c, &e)) {
                char m[800];
                finish(sv, "stop-start", sw_err_format(&e, m, sizeof(m)));
                return;
            }
            if (old->client_open)
                sw_service_client_close(&old->client);
            old->client = c;
            old->client_open = true;
            old->ep = bg->ep;
            old->claim = bg->claim;
            old->claim_ok = true;
            snprintf(old->host, sizeof(old->host), "%s", c.route.addr.connect);
            old->port = c.route.addr.port;
            char p[4096];
            if (!sw_deploy_pid_path(bg->ep->name, p, sizeof(p), NULL))
                snprintf(old->pid_path, sizeof(old->pid_path), "%s", p);
        }
        snprintf(bg->new_addr, sizeof(bg->new_addr), "%s:%u", old->host, old->port);
        sw__serve_logf(sv, "deploy: %s: stopped; the new shape boots at %s (%d requests queued)",
                       bg->ep->name, bg->new_addr, sv->models[bg->model].n_queued);
        bg->phase = SS_STARTING;
        sw__serve_start_stop(sv, bg->slot, true);
        return;
    case SS_STARTING:
        if (old->state == SW_SERVE_STARTING)
            return;
        bg->t_switch = sw_now_ns();
        old->ours = bg->old_ours;
        /* the queue goes to it in this kick (its waits counted): the answer on the next turn */
        bg->phase = SS_DONE;
        bg->ss_ok = old->state == SW_SERVE_RUNNING;
        struct timeval zero = {0, 0};
        if (event_base_once(sv->base, -1, EV_TIMEOUT, on_ss_done, sv, &zero))
            on_ss_done(-1, 0, sv);
        return;
    default:
        return;
    }
}

bool sw__serve_bg_holds(struct sw__serve *sv, int mi)
{
    const struct sw__serve_bg *bg = sv->bg;
    return bg && mi == bg->model &&
           (bg->phase == SS_DRAINING || bg->phase == SS_STOPPING || bg->phase == SS_STARTING);
}

void sw__serve_bg_waited(struct sw__serve *sv, int mi, double secs)
{
    struct sw__serve_bg *bg = sv->bg;
    if (!bg || bg->phase == BG_IDLE || mi != bg->model)
        return;
    bg->n_queued++;
    if (bg->n_waits < BG_WAITS)
        bg->waits[bg->n_waits++] = secs;
    if (secs > bg->wait_max)
        bg->wait_max = secs;
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

/* The law's two questions: does the new shape fit beside the old (and everything else)? Does it
 * fit once the old is gone? 1 blue/green, 0 stop-start, -1 neither (why in out). Only FITS
 * counts: a deploy stops nothing but the old instance (an EVICT verdict names what would have
 * to go; naming the old itself, it is the stop-start path). */
static int decide(struct sw__serve *sv, int slot, const struct sw_serve_claim *nc, char *out,
                  size_t n)
{
    struct sw_serve_tenant ts[SW__SERVE_MAX_EP + 1];
    static const struct sw_serve_claim none = {0};
    int k = 0;
    for (int i = 0; i < sv->n_eps; i++) {
        const struct sw__serve_ep *x = &sv->eps[i];
        ts[k++] = (struct sw_serve_tenant){
            .name = x->ep->name,
            .claim = x->claim_ok ? &x->claim : &none,
            .state = x->state,
            .inflight = x->inflight,
            .pinned = x->pinned,
            .by_priority = x->by_priority,
            .priority = x->priority,
            .last_ns = x->last_ns,
            .can_stop = x->can_stop && x->local,
        };
    }
    char nm[160];
    snprintf(nm, sizeof(nm), "%s (new shape)", sv->eps[slot].ep->name);
    ts[k] = (struct sw_serve_tenant){.name = nm, .claim = nc, .state = SW_SERVE_STOPPED};
    struct sw_serve_decision beside, alone;
    sw_serve_admit(ts, k + 1, k, &beside);
    if (beside.verdict == SW_SERVE_FITS && sv->eps[slot].state == SW_SERVE_RUNNING) {
        snprintf(out, n, "blue-green: beside the old: %.1200s", beside.text);
        return 1;
    }
    ts[slot].state = SW_SERVE_STOPPED;
    sw_serve_admit(ts, k + 1, k, &alone);
    if (alone.verdict == SW_SERVE_FITS) {
        snprintf(out, n, "stop-start: %.600s; once the old is gone: %.600s",
                 sv->eps[slot].state == SW_SERVE_RUNNING ? beside.text : "the old is not running",
                 alone.text);
        return 0;
    }
    snprintf(out, n, "neither: beside the old: %.600s; once the old is gone: %.600s", beside.text,
             alone.text);
    return -1;
}

static struct sw__serve_bg *bg_get(struct sw__serve *sv)
{
    if (!sv->bg)
        sv->bg = sw_calloc(1, sizeof(*sv->bg));
    return sv->bg;
}

/* Parse the admin's body and reload the fleet: 0, or the refusal was sent. */
static int begin(struct sw__serve *sv, struct evhttp_request *req, const char *client,
                 struct sw__serve_bg *bg, int *slot)
{
    char msg[1600];
    if (!sv->n_keys || strncmp(client, "admin", 5)) {
        refuse(sv, req, 403,
               sv->n_keys ? "a deploy needs the key of an admin client (a --keys name that "
                            "begins with 'admin')"
                          : "serve runs without --keys: a deploy needs the key of an admin client");
        return -1;
    }
    if (bg->phase != BG_IDLE) {
        snprintf(msg, sizeof(msg), "a deploy of %s is under way", bg->ep->name);
        refuse(sv, req, 409, msg);
        return -1;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    unsigned char *raw = evbuffer_pullup(in, (ev_ssize_t)len);
    json_t *body = raw ? sw_json_parse((const char *)raw, len, "request", NULL) : NULL;
    const char *name = json_string_value(json_object_get(body, "endpoint"));
    json_int_t drain = json_integer_value(json_object_get(body, "drain_s"));
    int i = 0;
    while (name && i < sv->n_eps && (sv->eps[i].retired || strcmp(sv->eps[i].ep->name, name)))
        i++;
    if (!name || i == sv->n_eps) {
        if (name)
            snprintf(msg, sizeof(msg), "serve does not serve an endpoint named %s", name);
        else
            snprintf(msg, sizeof(msg), "the body must be a JSON object naming its 'endpoint'");
        json_decref(body);
        refuse(sv, req, name ? 404 : 400, msg);
        return -1;
    }
    bg->drain_s = drain > 0 && drain <= 86400 ? (unsigned)drain : BG_DRAIN_DEFAULT;
    const struct sw__serve_ep *x = &sv->eps[i];
    if (x->state == SW_SERVE_STARTING || x->state == SW_SERVE_STOPPING) {
        snprintf(msg, sizeof(msg), "%s is %s: deploy it once that is done", name,
                 sw_serve_state_name(x->state));
        json_decref(body);
        refuse(sv, req, 409, msg);
        return -1;
    }
    if (!x->local || x->ep->engine != SW_FLEET_LLAMACPP ||
        (!x->can_stop && x->state != SW_SERVE_STOPPED)) {
        snprintf(msg, sizeof(msg),
                 "%s: serve deploys only the local llama.cpp endpoints it can start and stop "
                 "(`up`); %s",
                 x->ep->name,
                 x->ep->engine != SW_FLEET_LLAMACPP || !x->local
                     ? "deploy this one with `slipway deploy`"
                     : "this one runs outside serve's pid files");
        json_decref(body);
        refuse(sv, req, 400, msg);
        return -1;
    }
    struct bg_fleet *bf = sw_calloc(1, sizeof(*bf));
    struct sw_err e;
    sw_err_clear(&e);
    const struct sw_fleet_endpoint *nep = NULL;
    int rc = bf ? sw_fleet_load(sv->fleet_path, NULL, &bf->fleet, &e) : SW_ENOMEM;
    if (!rc)
        rc = sw_fleet_find_endpoint(bf->fleet, name, &nep, &e);
    if (!rc && nep->engine != SW_FLEET_LLAMACPP)
        rc = sw_err_set(&e, SW_EINVAL, "%s: the new shape is not a llama.cpp endpoint", name);
    if (!rc)
        rc = sw_serve_claim(nep, &bg->claim, &e);
    json_decref(body);
    if (rc) {
        if (bf)
            sw_fleet_free(bf->fleet);
        sw_free(bf);
        char m[1200];
        snprintf(msg, sizeof(msg), "the new shape: %s", sw_err_format(&e, m, sizeof(m)));
        refuse(sv, req, 400, msg);
        return -1;
    }
    bf->next = bg->fleets;
    bg->fleets = bf;
    bg->ep = nep;
    *slot = i;
    return 0;
}

void sw__serve_on_deploy(struct sw__serve *sv, struct evhttp_request *req, const char *client)
{
    struct sw__serve_bg *bg = bg_get(sv);
    if (!bg) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    int slot = -1;
    if (begin(sv, req, client, bg, &slot))
        return;
    struct sw__serve_ep *old = &sv->eps[slot];
    bg->slot = slot;
    bg->next = -1;
    bg->model = old->model;
    bg->old_ours = old->ours;
    bg->old_pinned = old->pinned;
    bg->t0 = sw_now_ns();
    bg->t_switch = bg->t_drain0 = bg->t_stopped = 0;
    bg->n_waits = 0;
    bg->n_queued = 0;
    bg->wait_max = 0;
    model_answers(sv, bg->model, &bg->answered0, &bg->failed0);
    snprintf(bg->old_addr, sizeof(bg->old_addr), "%s:%u", old->host, old->port);
    snprintf(bg->new_addr, sizeof(bg->new_addr), "-");
    int how = decide(sv, slot, &bg->claim, bg->decision, sizeof(bg->decision));
    sw__serve_logf(sv, "deploy: %s (by %s): %s", bg->ep->name, client, bg->decision);
    if (how < 0) {
        sw__serve_reply_error(req, 409, "insufficient_memory", bg->decision, 0);
        return;
    }
    bg->req = req;
    bg->conn = evhttp_request_get_connection(req);
    if (bg->conn)
        evhttp_connection_set_closecb(bg->conn, on_admin_gone, sv);
    if (old->state == SW_SERVE_STOPPED) {
        /* nothing runs: the slot takes the new shape; its next start boots it */
        old->ep = bg->ep;
        old->claim = bg->claim;
        struct sw_service_client c;
        if (!sw_service_client_open(bg->fleets->fleet, bg->ep->name, &c, NULL)) {
            if (old->client_open)
                sw_service_client_close(&old->client);
            old->client = c;
            old->client_open = true;
            snprintf(old->host, sizeof(old->host), "%s", c.route.addr.connect);
            old->port = c.route.addr.port;
        }
        snprintf(bg->new_addr, sizeof(bg->new_addr), "%s:%u", old->host, old->port);
        finish(sv, "stopped", NULL);
        return;
    }
    if (how == 0) {
        /* stop-start: out of rotation; its requests queue while it drains, stops and boots */
        old->state = SW_SERVE_STOPPING;
        bg->t_drain0 = sw_now_ns();
        bg->phase = SS_DRAINING;
        bg->drain_timer = event_new(sv->base, -1, 0, on_drain_bound, sv);
        struct timeval tv = {(time_t)bg->drain_s, 0};
        if (bg->drain_timer)
            event_add(bg->drain_timer, &tv);
        sw__serve_logf(sv, "deploy: %s: out of rotation (requests queue); draining %d in flight",
                       bg->ep->name, old->inflight);
        sw__serve_bg_kick(sv);
        return;
    }
    struct sw_service_client nc;
    unsigned declared = 0;
    if (!sw_service_client_open(bg->fleets->fleet, bg->ep->name, &nc, NULL))
        declared = nc.route.addr.port;
    sw_service_client_close(&nc);
    bg->new_port = pick_port(old->host, declared, old->port);
    char why[900];
    if (!bg->new_port) {
        finish(sv, "blue-green", "no free port for the new shape beside the old");
        return;
    }
    bg->next = next_slot(sv, bg, why, sizeof(why));
    if (bg->next < 0) {
        finish(sv, "blue-green", why);
        return;
    }
    old = &sv->eps[slot];
    old->pinned = true; /* not evicted while the new one boots beside it */
    snprintf(bg->new_addr, sizeof(bg->new_addr), "%s:%u", old->host, bg->new_port);
    struct sw__serve_job *j = sw_calloc(1, sizeof(*j));
    if (!j) {
        sv->eps[bg->next].state = SW_SERVE_STOPPED;
        finish(sv, "blue-green", "out of memory");
        return;
    }
    j->ep = bg->next;
    j->start = true;
    /* its own pid file and log (RUN_DIR/NAME-PORT.*): the old one's log stays whole */
    snprintf(j->as, sizeof(j->as), "%.150s-%u", bg->ep->name, bg->new_port);
    j->port = bg->new_port;
    j->done = next_done;
    bg->phase = BG_STARTING;
    sw__serve_logf(sv, "deploy: %s: the new shape boots beside the old at %s:%u", bg->ep->name,
                   old->host, bg->new_port);
    if (sw__serve_job_spawn(sv, j)) {
        sw_free(j);
        sv->eps[bg->next].state = SW_SERVE_STOPPED;
        finish(sv, "blue-green", "no thread for the new shape's boot");
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
    if (bg->drain_timer)
        event_free(bg->drain_timer);
    if (bg->req && bg->conn)
        evhttp_connection_set_closecb(bg->conn, NULL, NULL);
    while (bg->fleets) {
        struct bg_fleet *f = bg->fleets;
        bg->fleets = f->next;
        sw_fleet_free(f->fleet);
        sw_free(f);
    }
    sw_free(bg);
    sv->bg = NULL;
}
