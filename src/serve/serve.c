/*
 * serve: `slipway serve` set up and driven: the fleet's endpoints grouped into models by their
 * served name, each one's claim per device from its plan, what already runs (a live pid file of
 * `up`), the loop and its listener; then the admission driver: a queued request's model is served
 * by a running replica, else one of its stopped replicas starts when the law admits it
 * (sw_serve_admit), after the idle endpoints it names are stopped; starts (sw_deploy_endpoint,
 * `up` detached) and stops (sw_pidfile_stop, `down`) run in worker threads, each decision is
 * logged with its figures, and an endpoint idle past its idle_ttl is stopped.
 *
 * A system unit on an ssh host is started and stopped the same way, by systemctl over its host
 * under its deploy lock (units.c); one bound to its host's loopback is reached through its
 * route's forward (proxy.c).
 *
 * What it does not do: the HTTP routes (front.c), the upstream request (proxy.c), talk to
 * another host (units.c).
 */
#include "serve_internal.h"

#include <slipway/deploy.h>

#include <errno.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/listener.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void sw__serve_logf(struct sw__serve *sv, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    fprintf(sv->log, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ serve: %s\n", tm.tm_year + 1900,
            tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
            line);
    fflush(sv->log);
}

int sw__serve_pick(struct sw__serve *sv, const struct sw__serve_model *m,
                   const struct sw__serve_px *px)
{
    int best = -1;
    for (int k = 0; k < m->n_eps; k++) {
        int i = m->eps[k];
        const struct sw__serve_ep *x = &sv->eps[i];
        if (x->state != SW_SERVE_RUNNING || (px && px->tried[i]))
            continue;
        if (best < 0 || x->inflight < sv->eps[best].inflight)
            best = i;
    }
    return best;
}

/* ---------------------------------------------------------------------------------------------
 * The loops: the shared state's lock and the hand-offs between loops.
 */
static _Thread_local struct sw__serve_loop *t_loop; /* the calling thread's request loop */
/* the serve that runs (one a process): whose loops sw__serve_reply_elsewhere looks among */
static struct sw__serve *g_sv_loops;
static _Thread_local int t_held; /* its depth in sv->mu */

struct sw__serve_loop *sw__serve_self(void)
{
    return t_loop;
}

void sw__serve_enter(struct sw__serve *sv)
{
    if (!t_held++)
        pthread_mutex_lock(&sv->mu);
}

void sw__serve_leave(struct sw__serve *sv)
{
    if (!--t_held)
        pthread_mutex_unlock(&sv->mu);
}

void sw__serve_hand(struct sw__serve_px *px, int i, int code, const char *type, const char *msg,
                    int retry_after)
{
    struct sw__serve_loop *lp = px->lp;
    if (i >= 0) { /* reserved now: the law and the balance see it in flight from here */
        struct sw__serve_ep *x = &px->sv->eps[i];
        x->inflight++;
        x->last_ns = sw_now_ns();
    }
    px->ep = i;
    px->hand_code = code;
    px->hand_type = type;
    px->hand_retry = retry_after;
    sw_free(px->hand_msg);
    px->hand_msg = msg ? sw_strdup(msg) : NULL;
    if (!px->handed)
        TAILQ_INSERT_TAIL(&lp->handq, px, hlink);
    px->handed = true;
    event_active(lp->wake, EV_READ, 1);
}

void sw__serve_unhand(struct sw__serve_px *px)
{
    if (!px->handed)
        return;
    TAILQ_REMOVE(&px->lp->handq, px, hlink);
    px->handed = false;
    if (px->ep >= 0 && !px->hand_code)
        sw__serve_ep_release(px);
    px->ep = -1;
    sw_free(px->hand_msg);
    px->hand_msg = NULL;
}

bool sw__serve_reply_elsewhere(struct evhttp_request *req, int code, const char *body,
                               int retry_after)
{
    struct evhttp_connection *c = evhttp_request_get_connection(req);
    struct event_base *b = c ? evhttp_connection_get_base(c) : NULL;
    if (!b || (t_loop && t_loop->base == b))
        return false;
    struct sw__serve_loop *lp = NULL;
    for (int k = 0; g_sv_loops && k < g_sv_loops->n_loops && !lp; k++)
        if (g_sv_loops->loops[k].base == b)
            lp = &g_sv_loops->loops[k];
    if (!lp)
        return false;
    sw__serve_reply_on(lp, req, code, body, retry_after);
    return true;
}

void sw__serve_reply_on(struct sw__serve_loop *lp, struct evhttp_request *req, int code,
                        const char *body, int retry_after)
{
    if (!lp || lp == t_loop) {
        sw__serve_reply_text(req, code, body, retry_after);
        return;
    }
    struct sw__serve_reply *r = sw_calloc(1, sizeof(*r));
    if (!r)
        return; /* lost: the client's connection stays until it closes */
    r->req = req;
    r->code = code;
    r->retry_after = retry_after;
    r->body = sw_strdup(body ? body : "");
    r->next = lp->replies;
    lp->replies = r;
    event_active(lp->wake, EV_READ, 1);
}

/* What other threads handed to this loop: requests to send, answers to give. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve_loop *lp = arg;
    struct sw__serve *sv = lp->sv;
    (void)fd;
    (void)what;
    sw__serve_enter(sv);
    while (!TAILQ_EMPTY(&lp->handq)) {
        struct sw__serve_px *px = TAILQ_FIRST(&lp->handq);
        TAILQ_REMOVE(&lp->handq, px, hlink);
        px->handed = false;
        if (px->deadline) {
            event_free(px->deadline);
            px->deadline = NULL;
        }
        if (!px->hand_code) {
            sw__serve_forward_reserved(px, px->ep);
            continue;
        }
        sw__serve_reply_error(px->req, px->hand_code, px->hand_type,
                              px->hand_msg ? px->hand_msg : "", px->hand_retry);
        sw__serve_px_free(px);
    }
    struct sw__serve_reply *r = lp->replies;
    lp->replies = NULL;
    while (r) {
        struct sw__serve_reply *n = r->next;
        sw__serve_reply_text(r->req, r->code, r->body, r->retry_after);
        sw_free(r->body);
        sw_free(r);
        r = n;
    }
    sw__serve_leave(sv);
}

/* A request of model mi's queue goes to endpoint i: by its own loop. */
static void dispatch(struct sw__serve_px *px, int i)
{
    if (px->lp == t_loop) {
        if (px->deadline) {
            event_free(px->deadline);
            px->deadline = NULL;
        }
        sw__serve_forward(px, i);
    } else
        sw__serve_hand(px, i, 0, NULL, NULL, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Starts and stops, in worker threads (`up` and `down` block for the boot and the grace).
 */
static void *job_main(void *arg)
{
    struct sw__serve_job *j = arg;
    struct sw__serve *sv = j->sv;
    struct sw__serve_ep *x = &sv->eps[j->ep];
    struct sw_err e;
    sw_err_clear(&e);
    uint64_t t0 = sw_now_ns();
    if (j->run)
        j->run(j);
    else if (x->unit)
        sw__serve_unit_job(j);
    else if (j->start) {
        struct sw_deploy_req q = {0};
        struct sw_deploy_res r;
        q.fleet = sv->fleet_path;
        q.fleet_text = j->fleet_text;
        q.endpoint = x->ep->name;
        q.name = j->as[0] ? j->as : NULL;
        q.port = j->port;
        q.detach = true;
        q.preflight = true;
        q.liveness = true;
        q.timeout_s = sv->o->boot_timeout_s;
        q.grace_ms = sv->o->grace_ms;
        j->rc = sw_deploy_endpoint(&q, &r, &e);
        if (!j->rc) {
            sw_child_release(&r.up.child);
            snprintf(j->pid_path, sizeof(j->pid_path), "%s", r.pid_path);
        } else {
            char m[800];
            const char *f = r.up.status.failure.message;
            bool said = !f[0] || strstr(sw_err_format(&e, m, sizeof(m)), f); /* not twice */
            snprintf(j->msg, sizeof(j->msg), "%s%s%.390s", m, said ? "" : ": ", said ? "" : f);
            /* the class a ledger records (record.c): the engine's, else a failed proof's */
            enum sw_boot_class cls = r.up.status.failure.cls;
            snprintf(j->fail_class, sizeof(j->fail_class), "%s",
                     cls                          ? sw_boot_class_name(cls)
                     : strstr(j->msg, "liveness") ? "dead_generation"
                                                  : "boot");
        }
        sw_deploy_res_free(&r);
    } else {
        struct sw_stop_report rep;
        j->rc = sw_pidfile_stop(x->pid_path, sv->o->grace_ms ? sv->o->grace_ms : 10000, &rep, &e);
        if (j->rc) {
            char m[800];
            snprintf(j->msg, sizeof(j->msg), "%s", sw_err_format(&e, m, sizeof(m)));
        }
    }
    j->secs = (double)(sw_now_ns() - t0) / 1e9;
    ssize_t w;
    do
        w = write(sv->jobs_pipe[1], &j, sizeof(j));
    while (w < 0 && errno == EINTR);
    return NULL;
}

int sw__serve_job_spawn(struct sw__serve *sv, struct sw__serve_job *j)
{
    j->sv = sv;
    if (pthread_create(&j->th, NULL, job_main, j))
        return -1;
    j->next = sv->jobs;
    sv->jobs = j;
    sv->n_jobs_running++;
    return 0;
}

static void job_run(struct sw__serve *sv, int i, bool start)
{
    struct sw__serve_ep *x = &sv->eps[i];
    struct sw__serve_job *j = sw_calloc(1, sizeof(*j));
    if (!j) {
        sw__serve_logf(sv, "%s: out of memory for its %s", x->ep->name, start ? "start" : "stop");
        return;
    }
    j->sv = sv;
    j->ep = i;
    j->start = start;
    j->fleet_text = sw__serve_bg_text(sv, x->ep);
    j->fleet = sw__serve_bg_fleet(sv, x->ep);
    if (!start)
        sw__serve_pool_close(sv, i);
    x->state = start ? SW_SERVE_STARTING : SW_SERVE_STOPPING;
    if (pthread_create(&j->th, NULL, job_main, j)) {
        x->state = start ? SW_SERVE_STOPPED : SW_SERVE_RUNNING;
        sw__serve_logf(sv, "%s: no thread for its %s", x->ep->name, start ? "start" : "stop");
        sw_free(j);
        return;
    }
    j->next = sv->jobs;
    sv->jobs = j;
    sv->n_jobs_running++;
}

void sw__serve_fail_queue(struct sw__serve *sv, struct sw__serve_model *m, int code,
                          const char *type, const char *msg)
{
    while (!TAILQ_EMPTY(&m->queue)) {
        struct sw__serve_px *px = TAILQ_FIRST(&m->queue);
        sw__serve_count(m, code);
        sw__serve_hist_add(&m->queue_wait, (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
        if (px->lp != t_loop) { /* answered by its own loop */
            TAILQ_REMOVE(&m->queue, px, link);
            m->n_queued--;
            px->queued = false;
            sw__serve_hand(px, -1, code, type, msg, code == 503 ? 5 : 0);
            continue;
        }
        sw__serve_reply_error(px->req, code, type, msg, code == 503 ? 5 : 0);
        sw__serve_px_free(px);
    }
    (void)sv;
}

static void job_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    pthread_join(j->th, NULL);
    for (struct sw__serve_job **p = &sv->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    sv->n_jobs_running--;
    if (j->done) {
        j->done(sv, j);
        sw_free(j);
        sw__serve_kick(sv);
        return;
    }
    struct sw__serve_ep *x = &sv->eps[j->ep];
    struct sw__serve_model *m = &sv->models[x->model];
    if (j->start && !j->rc) {
        x->state = SW_SERVE_RUNNING;
        x->ours = true;
        x->can_stop = true;
        x->starts++;
        x->last_ns = sw_now_ns();
        snprintf(x->pid_path, sizeof(x->pid_path), "%s", j->pid_path);
        sw__serve_logf(sv, "%s: started in %.1f s (%s)", x->ep->name, j->secs,
                       x->unit ? "its unit: systemctl start over its host, ready and a one-token "
                                 "generation through its route"
                               : j->pid_path);
    } else if (j->start) {
        x->state = SW_SERVE_STOPPED;
        x->failures++;
        sw__serve_logf(sv, "%s: its start failed after %.1f s: %s", x->ep->name, j->secs, j->msg);
        if (sw__serve_pick(sv, m, NULL) < 0) {
            char msg[1400];
            snprintf(msg, sizeof(msg), "endpoint %s of model %s failed to start: %s", x->ep->name,
                     m->name, j->msg);
            sw__serve_fail_queue(sv, m, 503, "unavailable_error", msg);
        }
    } else if (!j->rc) {
        x->state = SW_SERVE_STOPPED;
        x->ours = false;
        x->can_stop = x->unit; /* a unit stays serve's to start and stop */
        sw__serve_logf(sv, "%s: stopped in %.1f s%s", x->ep->name, j->secs,
                       x->unit ? " (its unit, systemctl stop over its host)" : "");
    } else {
        x->state = SW_SERVE_RUNNING; /* still there: it keeps its memory */
        sw__serve_logf(sv, "%s: its stop failed: %s", x->ep->name, j->msg);
    }
    sw_free(j);
    sw__serve_kick(sv);
}

static void on_jobs(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve *sv = arg;
    (void)what;
    struct sw__serve_job *j;
    ssize_t r = read(fd, &j, sizeof(j));
    if (r == (ssize_t)sizeof(j))
        job_done(sv, j);
}

/* ---------------------------------------------------------------------------------------------
 * Admission.
 */
int sw__serve_tenants(struct sw__serve *sv, struct sw_serve_tenant *ts)
{
    int n = 0;
    for (int i = 0; i < sv->n_eps; i++) {
        const struct sw__serve_ep *x = &sv->eps[i];
        static const struct sw_serve_claim none = {0};
        ts[n++] = (struct sw_serve_tenant){
            .name = x->ep->name,
            .claim = x->claim_ok ? &x->claim : &none,
            .state = x->state,
            .inflight =
                x->inflight + sv->models[x->model].n_queued * (x->state == SW_SERVE_RUNNING),
            .pinned = x->pinned,
            .by_priority = x->by_priority,
            .priority = x->priority,
            .last_ns = x->last_ns,
            .can_stop = x->can_stop && (x->local || x->unit),
        };
    }
    return n;
}

/* Does serve start it? `up` boots local llama.cpp endpoints; systemctl a unit on an ssh host. */
static bool startable(const struct sw__serve_ep *x)
{
    return x->unit || (x->local && x->ep->engine == SW_FLEET_LLAMACPP);
}

/* Serve what m has queued: dispatch to running replicas, else start one the law admits. */
static void serve_model(struct sw__serve *sv, int mi)
{
    struct sw__serve_model *m = &sv->models[mi];
    while (!TAILQ_EMPTY(&m->queue)) {
        int i = sw__serve_pick(sv, m, NULL);
        if (i < 0)
            break;
        struct sw__serve_px *px = TAILQ_FIRST(&m->queue);
        TAILQ_REMOVE(&m->queue, px, link);
        m->n_queued--;
        px->queued = false;
        sw__serve_hist_add(&m->queue_wait, (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
        sw__serve_bg_waited(sv, mi, (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
        dispatch(px, i);
    }
    if (TAILQ_EMPTY(&m->queue))
        return;
    for (int k = 0; k < m->n_eps; k++) {
        enum sw_serve_state s = sv->eps[m->eps[k]].state;
        if (s == SW_SERVE_STARTING)
            return; /* it waits for that one */
    }
    struct sw_serve_tenant ts[SW__SERVE_MAX_EP];
    int n = sw__serve_tenants(sv, ts);
    int n_never = 0, n_cand = 0;
    char never_why[1024] = "", wait_why[1024] = "";
    for (int k = 0; k < m->n_eps; k++) {
        int i = m->eps[k];
        struct sw__serve_ep *x = &sv->eps[i];
        if (x->state != SW_SERVE_STOPPED || !startable(x))
            continue; /* `up` boots local llama.cpp endpoints, systemctl units on ssh hosts; the
                       * others come back by themselves */
        n_cand++;
        if (!x->claim_ok) {
            n_never++;
            snprintf(never_why, sizeof(never_why), "%s", x->claim_why);
            continue;
        }
        struct sw_serve_decision d;
        sw_serve_admit(ts, n, i, &d);
        if (d.verdict == SW_SERVE_NEVER) {
            n_never++;
            snprintf(never_why, sizeof(never_why), "%s", d.text);
            continue;
        }
        if (d.verdict == SW_SERVE_WAIT) {
            if (strcmp(m->last_why, d.text))
                sw__serve_logf(sv, "admit: %s", d.text);
            snprintf(wait_why, sizeof(wait_why), "%s", d.text);
            continue;
        }
        if (d.verdict == SW_SERVE_EVICT) {
            bool stopping = false;
            for (int v = 0; v < n; v++)
                stopping = stopping || sv->eps[v].state == SW_SERVE_STOPPING;
            if (!x->want_start || !stopping) {
                snprintf(m->last_why, sizeof(m->last_why), "%s", d.text);
                if (sw__serve_unit_look(sv, i))
                    return; /* its lock first: nothing is evicted for a locked unit */
            }
            if (!x->want_start || !stopping) {
                sw__serve_logf(sv, "admit: %s", d.text);
                for (int v = 0; v < d.n_victims; v++) {
                    struct sw__serve_ep *y = &sv->eps[d.victims[v]];
                    y->evictions++;
                    job_run(sv, d.victims[v], false);
                }
                x->want_start = true;
            }
            snprintf(m->last_why, sizeof(m->last_why), "%s", d.text);
            return; /* it starts when they are stopped */
        }
        sw__serve_logf(sv, "admit: %s start", d.text);
        x->want_start = false;
        snprintf(m->last_why, sizeof(m->last_why), "%s", d.text);
        job_run(sv, i, true);
        return;
    }
    if (n_cand && n_never == n_cand && sw__serve_pick(sv, m, NULL) < 0) {
        bool others = false; /* a replica that is not ours to start may come back */
        for (int k = 0; k < m->n_eps; k++)
            others = others || !startable(&sv->eps[m->eps[k]]);
        if (!others) {
            m->never = true;
            snprintf(m->last_why, sizeof(m->last_why), "%s", never_why);
            sw__serve_logf(sv, "refuse: %s: 507", never_why);
            sw__serve_fail_queue(sv, m, 507, "insufficient_memory", never_why);
            return;
        }
    }
    if (wait_why[0])
        snprintf(m->last_why, sizeof(m->last_why), "%s", wait_why);
}

void sw__serve_start_stop(struct sw__serve *sv, int i, bool start)
{
    job_run(sv, i, start);
}

void sw__serve_kick(struct sw__serve *sv)
{
    sw__serve_bg_kick(sv);
    for (int i = 0; i < sv->n_models; i++)
        if (sv->models[i].n_queued)
            serve_model(sv, i);
}

/* Every 200 ms: idle endpoints past their idle_ttl are stopped; a stop request ends the loop. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve *sv = arg;
    (void)fd;
    (void)what;
    if (sv->o->stop && *sv->o->stop) {
        event_base_loopbreak(sv->base);
        return;
    }
    uint64_t now = sw_now_ns();
    bool back = false;
    if (++sv->ticks % 10 == 0) /* every 2 s: one that runs outside serve and stopped answering */
        for (int i = 0; i < sv->n_eps; i++) {
            struct sw__serve_ep *x = &sv->eps[i];
            if (x->state != SW_SERVE_STOPPED || x->can_stop || startable(x) ||
                !sw__serve_answers(x))
                continue;
            x->state = SW_SERVE_RUNNING;
            x->last_ns = now;
            back = true;
            sw__serve_logf(sv, "%s: answers again at %s:%u: back in rotation", x->ep->name, x->host,
                           x->port);
        }
    if (back)
        sw__serve_kick(sv);
    for (int i = 0; i < sv->n_eps; i++) {
        struct sw__serve_ep *x = &sv->eps[i];
        if (x->state != SW_SERVE_RUNNING || !x->idle_ttl_ms || x->pinned || x->inflight ||
            !x->can_stop || !(x->local || x->unit) || sv->models[x->model].n_queued)
            continue;
        uint64_t idle_ms = (now - x->last_ns) / 1000000u;
        if (idle_ms < x->idle_ttl_ms)
            continue;
        sw__serve_logf(sv, "%s: idle %.1f s, past its idle_ttl %.1f s: stopped", x->ep->name,
                       (double)idle_ms / 1000.0, (double)x->idle_ttl_ms / 1000.0);
        x->stops_idle++;
        job_run(sv, i, false);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Set-up.
 */
static int add_ep(struct sw__serve *sv, const struct sw_fleet_endpoint *ep, struct sw_err *e)
{
    if (sv->n_eps >= SW__SERVE_MAX_EP)
        return sw_err_set(e, SW_ERANGE, "serve takes at most %d endpoints", SW__SERVE_MAX_EP);
    struct sw__serve_ep *x = &sv->eps[sv->n_eps];
    memset(x, 0, sizeof(*x));
    x->ep = ep;
    x->local = !ep->host || ep->host->transport != SW_FLEET_SSH;
    x->pinned = ep->serve.pinned.set && ep->serve.pinned.v;
    x->by_priority = ep->serve.policy && !strcmp(ep->serve.policy, "priority");
    x->priority = ep->serve.priority.set ? (unsigned)ep->serve.priority.v : 0;
    x->idle_ttl_ms = ep->serve.idle_ttl_ms.set ? ep->serve.idle_ttl_ms.v : 0;
    int rc = sw_service_client_open(sv->fleet, ep->name, &x->client, e);
    x->client_open = true; /* safe to close after an error too */
    if (rc && !x->local && x->client.route.unix_socket[0]) {
        /* its route's forward could not be asked for (the host unreachable now): stopped; the
         * forward is asked again when a request needs it (proxy.c) */
        char m[600];
        sw__serve_logf(sv, "%s: its host cannot be reached now (%s): stopped until it can",
                       ep->name, sw_err_format(e, m, sizeof(m)));
        sw_err_clear(e);
        rc = 0;
    }
    if (rc)
        return rc;
    x->routed = x->client.route.unix_socket[0] != 0;
    x->unit = !x->local && ep->service.scope != SW_FLEET_SCOPE_USER;
    size_t hl = strnlen(x->client.route.addr.connect, sizeof(x->host) - 1);
    memcpy(x->host, x->client.route.addr.connect, hl);
    x->host[hl] = 0;
    x->port = x->client.route.addr.port;
    struct sw_err ce;
    sw_err_clear(&ce);
    if (sw_serve_claim(ep, &x->claim, &ce)) {
        char m[600];
        snprintf(x->claim_why, sizeof(x->claim_why), "%s", sw_err_format(&ce, m, sizeof(m)));
    } else
        x->claim_ok = true;
    /* the served name: the alias, else the endpoint's name */
    const char *name = ep->alias.v ? ep->alias.v : ep->name;
    int mi = 0;
    while (mi < sv->n_models && strcmp(sv->models[mi].name, name))
        mi++;
    if (mi == sv->n_models) {
        struct sw__serve_model *m = &sv->models[sv->n_models++];
        memset(m, 0, sizeof(*m));
        m->name = name;
        TAILQ_INIT(&m->queue);
    }
    struct sw__serve_model *m = &sv->models[mi];
    if (m->n_eps >= SW__SERVE_MAX_REPL)
        return sw_err_set(e, SW_ERANGE, "model %s: at most %d replicas", name, SW__SERVE_MAX_REPL);
    m->eps[m->n_eps++] = sv->n_eps;
    x->model = mi;
    /* already running as `up --detach` left it: its pid file */
    char dir[3000];
    struct sw_err de;
    sw_err_clear(&de);
    if (x->local && !sw_deploy_run_dir(dir, sizeof(dir), &de)) {
        struct sw_pidfile pf;
        snprintf(x->pid_path, sizeof(x->pid_path), "%s/%s.pid", dir, ep->name);
        if (!sw_pidfile_read(x->pid_path, &pf, &de) &&
            sw_pidfile_check(&pf, NULL, 0) == SW_PID_ALIVE) {
            x->state = SW_SERVE_RUNNING;
            x->can_stop = true;
            if (pf.port && pf.host[0] && strlen(pf.host) < sizeof(x->host)) {
                /* a deploy through serve may have left it on another port (bluegreen.c) */
                snprintf(x->host, sizeof(x->host), "%s", pf.host);
                x->port = pf.port;
            }
        }
    }
    /* a system unit on an ssh host is serve's to start and stop (systemctl over its host);
     * running when it answers: its health through its route, else its port */
    x->can_stop = x->can_stop || x->unit;
    if (!x->local && !x->routed && !x->unit)
        x->state = SW_SERVE_RUNNING; /* a user unit on its host: served, not started or stopped */
    else if (x->state == SW_SERVE_STOPPED && sw__serve_answers(x))
        x->state = SW_SERVE_RUNNING; /* started outside serve (a unit, a sim): never stopped, but
                                      * for a unit on an ssh host */
    x->last_ns = sw_now_ns();
    char figs[600] = "";
    int w = 0;
    for (int d = 0; x->claim_ok && d < x->claim.n && w >= 0 && (size_t)w < sizeof(figs); d++)
        w += snprintf(figs + w, sizeof(figs) - (size_t)w, "%s%s %.2f GiB of %.2f GiB",
                      d ? ", " : "", x->claim.dev[d]->name, (double)x->claim.bytes[d] / (1 << 30),
                      (double)x->claim.capacity[d] / (1 << 30));
    sw__serve_logf(sv, "%s: model %s at %s:%u%s%s%s, %s; claim %s%s%s%s", ep->name, name, x->host,
                   x->port, x->routed ? " on its host (through " : "",
                   x->routed ? x->client.route.via : "", x->routed ? ")" : "",
                   sw_serve_state_name(x->state),
                   x->claim_ok ? figs : "unknown: ", x->claim_ok ? " (" : x->claim_why,
                   x->claim_ok ? x->claim.how : "", x->claim_ok ? ")" : "");
    sv->n_eps++;
    return 0;
}

static int load_keys(struct sw__serve *sv, const char *path, struct sw_err *e)
{
    struct sw_fleet_envfile *ef = NULL;
    int rc = sw_fleet_envfile_load(path, NULL, NULL, &ef, e);
    if (rc)
        return rc;
    sv->keys = sw_calloc(ef->n_vars ? ef->n_vars : 1, sizeof(*sv->keys));
    if (!sv->keys) {
        sw_fleet_envfile_free(ef);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < ef->n_vars; i++) {
        if (!ef->vars[i].value[0])
            continue;
        snprintf(sv->keys[sv->n_keys].client, sizeof(sv->keys[0].client), "%s", ef->vars[i].key);
        sv->keys[sv->n_keys].key = sw_strdup(ef->vars[i].value);
        if (!sv->keys[sv->n_keys].key) {
            sw_fleet_envfile_free(ef);
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        }
        sv->n_keys++;
    }
    sw_fleet_envfile_free(ef);
    if (!sv->n_keys)
        return sw_err_set(e, SW_EINVAL, "%s: no CLIENT=KEY line with a key", path);
    return 0;
}

static int listen_on(struct sw__serve *sv, const char *spec, struct sw_err *e)
{
    char host[256] = "127.0.0.1";
    unsigned port = 8090;
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    if (spec && colon) {
        size_t hn = (size_t)(colon - spec);
        if (hn >= sizeof(host))
            return sw_err_set(e, SW_EINVAL, "--listen %s: the host is too long", spec);
        memcpy(host, spec, hn);
        host[hn] = 0;
        char *end = NULL;
        unsigned long p = strtoul(colon + 1, &end, 10);
        if (!end || *end || p > 65535)
            return sw_err_set(e, SW_EINVAL, "--listen %s: not HOST:PORT", spec);
        port = (unsigned)p;
    } else if (spec)
        return sw_err_set(e, SW_EINVAL, "--listen %s: not HOST:PORT", spec);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(sv->loops[0].http, host, (ev_uint16_t)port);
    if (!bs)
        return sw_err_set(e, SW_EBUSY, "cannot listen on %s:%u: %s", host, port, strerror(errno));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    evutil_socket_t fd = evhttp_bound_socket_get_fd(bs);
    /* the other loops accept on the same socket (a descriptor of their own for it): a
     * connection goes to whichever loop is free to accept it first (docs/serve.md) */
    for (int k = 1; k < sv->n_loops; k++) {
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0 || !evhttp_accept_socket_with_handle(sv->loops[k].http, d)) {
            if (d >= 0)
                close(d);
            return sw_err_set(e, SW_EBUSY, "cannot share the listener with loop %d: %s", k,
                              strerror(errno));
        }
    }
    if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
        port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    char url[320];
    snprintf(url, sizeof(url), "http://%s:%u", host, port);
    sw__serve_logf(sv,
                   "listening on %s (%d models, %d endpoints; queue %u, max wait %.1f s; %d "
                   "request loop%s%s)",
                   url, sv->n_models, sv->n_eps, sv->queue_max, (double)sv->max_wait_ms / 1000.0,
                   sv->n_loops, sv->n_loops == 1 ? "" : "s", sv->n_keys ? "; API keys asked" : "");
    if (sv->o->ready_file) {
        FILE *f = fopen(sv->o->ready_file, "w");
        if (f) {
            fprintf(f, "%u\n", port);
            fclose(f);
        }
    }
    if (sv->o->on_listen)
        sv->o->on_listen(sv->o->ctx, url);
    return 0;
}

/* n request loops (0: the online CPUs), each an event_base and an evhttp; not yet running. */
static int loops_new(struct sw__serve *sv, unsigned n)
{
    if (!n) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (unsigned)c : 1;
    }
    if (n > 64)
        n = 64;
    sv->loops = sw_calloc(n, sizeof(*sv->loops));
    if (!sv->loops)
        return -1;
    sv->n_loops = (int)n;
    g_sv_loops = sv;
    for (int k = 0; k < sv->n_loops; k++) {
        struct sw__serve_loop *lp = &sv->loops[k];
        lp->sv = sv;
        lp->idx = k;
        TAILQ_INIT(&lp->handq);
        lp->base = event_base_new();
        lp->http = lp->base ? evhttp_new(lp->base) : NULL;
        lp->wake = lp->base ? event_new(lp->base, -1, 0, on_wake, lp) : NULL;
        if (!lp->http || !lp->wake)
            return -1;
        evhttp_set_allowed_methods(lp->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
        evhttp_set_max_body_size(lp->http, SW__SERVE_BODY_MAX);
        evhttp_set_max_headers_size(lp->http, 65536);
        evhttp_set_timeout(lp->http, 3600);
        evhttp_set_gencb(lp->http, sw__serve_on_request, lp);
    }
    return 0;
}

static void *loop_main(void *arg)
{
    struct sw__serve_loop *lp = arg;
    t_loop = lp;
    event_base_loop(lp->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* The request loops in their threads; the state loop (ticks, the jobs' ends, the deploys'
 * timers) on this one, run under mu a turn at a time, so that every callback of it, blue/green's
 * included, is serialised with the request loops' uses of the shared state; between turns this
 * thread sleeps without the lock until the jobs' pipe is readable or 10 ms passed (its timers
 * are late by that much at most). Returns when the tick saw a stop. */
static int loops_run(struct sw__serve *sv, struct sw_err *e)
{
    int rc = 0;
    for (int k = 0; k < sv->n_loops; k++) {
        if (pthread_create(&sv->loops[k].th, NULL, loop_main, &sv->loops[k])) {
            rc = sw_err_set(e, SW_ENOMEM, "no thread for request loop %d", k);
            break;
        }
        sv->loops[k].th_started = true;
    }
    while (!rc) {
        sw__serve_enter(sv);
        event_base_loop(sv->base, EVLOOP_NONBLOCK);
        bool stop = event_base_got_break(sv->base);
        sw__serve_leave(sv);
        if (stop)
            break;
        struct pollfd pf = {.fd = sv->jobs_pipe[0], .events = POLLIN};
        poll(&pf, 1, 10);
    }
    for (int k = 0; k < sv->n_loops; k++)
        if (sv->loops[k].th_started)
            event_base_loopbreak(sv->loops[k].base);
    for (int k = 0; k < sv->n_loops; k++)
        if (sv->loops[k].th_started) {
            pthread_join(sv->loops[k].th, NULL);
            sv->loops[k].th_started = false;
        }
    return rc;
}

static void serve_close(struct sw__serve *sv)
{
    /* the starts and stops under way end first (a boot may take its timeout) */
    while (sv->jobs) {
        struct sw__serve_job *j = sv->jobs;
        pthread_join(j->th, NULL);
        struct sw__serve_job *r = NULL;
        ssize_t n = read(sv->jobs_pipe[0], &r, sizeof(r));
        (void)n;
        sv->jobs = j->next;
        if (j->done)
            sw__serve_bg_orphan(sv, j);
        else if (j->start && !j->rc) {
            sv->eps[j->ep].ours = true;
            snprintf(sv->eps[j->ep].pid_path, sizeof(sv->eps[j->ep].pid_path), "%s", j->pid_path);
        }
        sw_free(j);
    }
    if (sv->loops)
        sw__serve_pool_close(sv, -1); /* idle engine connections: none holds an engine's stop */
    for (int i = 0; i < sv->n_eps; i++) {
        struct sw__serve_ep *x = &sv->eps[i];
        if (x->ours && !sv->o->keep && x->unit) {
            struct sw__serve_job j = {.sv = sv, .ep = i, .fleet = sw__serve_bg_fleet(sv, x->ep)};
            sw__serve_unit_job(&j);
            sw__serve_logf(sv, "%s: %s at exit%s%s", x->ep->name,
                           j.rc ? "not stopped" : "stopped (its unit)", j.rc ? ": " : "", j.msg);
        } else if (x->ours && !sv->o->keep) {
            struct sw_stop_report rep;
            struct sw_err e;
            sw_err_clear(&e);
            int rc =
                sw_pidfile_stop(x->pid_path, sv->o->grace_ms ? sv->o->grace_ms : 10000, &rep, &e);
            sw__serve_logf(sv, "%s: %s at exit", x->ep->name, rc ? "not stopped" : "stopped");
        }
        if (x->client_open)
            sw_service_client_close(&x->client);
    }
    for (int i = 0; i < sv->n_keys; i++) {
        explicit_bzero(sv->keys[i].key, strlen(sv->keys[i].key));
        sw_free(sv->keys[i].key);
    }
    sw_free(sv->keys);
    for (int k = 0; sv->loops && k < sv->n_loops; k++) {
        struct sw__serve_loop *lp = &sv->loops[k];
        while (!TAILQ_EMPTY(&lp->handq)) { /* handed, never sent: the connections go below */
            struct sw__serve_px *px = TAILQ_FIRST(&lp->handq);
            sw__serve_unhand(px);
            sw__serve_px_free(px);
        }
        while (lp->replies) {
            struct sw__serve_reply *r = lp->replies;
            lp->replies = r->next;
            sw_free(r->body);
            sw_free(r);
        }
        if (lp->http)
            evhttp_free(lp->http);
        if (lp->wake)
            event_free(lp->wake);
        if (lp->base)
            event_base_free(lp->base);
    }
    sw_free(sv->loops);
    g_sv_loops = NULL;
    /* after the loops' connections: a deploy's admin connection freed above calls its close
     * callback with its deploy (bluegreen.c), which lives until here */
    sw__serve_bg_free(sv);
    sw__serve_ledger_close(sv);
    if (sv->tick)
        event_free(sv->tick);
    if (sv->jobs_ev)
        event_free(sv->jobs_ev);
    if (sv->base)
        event_base_free(sv->base);
    if (sv->jobs_pipe[0] >= 0)
        close(sv->jobs_pipe[0]);
    if (sv->jobs_pipe[1] >= 0)
        close(sv->jobs_pipe[1]);
    sw_fleet_free(sv->fleet);
    sw_free(sv->fleet_text);
}

/* libevent's locks: a loop's events may be activated or added from another thread */
static void threads_on(void)
{
    evthread_use_pthreads();
}

int sw_serve_run(const struct sw_serve_opts *o, struct sw_err *e)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, threads_on);
    struct sw__serve *sv = sw_calloc(1, sizeof(*sv));
    if (!sv)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sv->o = o;
    sv->log = o->log ? o->log : stderr;
    sv->fleet_path = o->fleet ? o->fleet : "fleet.yaml";
    sv->queue_max = o->queue_max ? o->queue_max : 64;
    sv->max_wait_ms = o->max_wait_ms ? o->max_wait_ms : 120000;
    sv->jobs_pipe[0] = sv->jobs_pipe[1] = -1;
    pthread_mutex_init(&sv->mu, NULL);
    /* two sockets a stream (the client's and the engine's): the hard limit, as the sim takes */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int rc = sw__serve_fleet_read(sv->fleet_path, &sv->fleet, &sv->fleet_text, e);
    if (rc)
        goto out;
    if (o->n_endpoints) {
        for (size_t i = 0; i < o->n_endpoints && !rc; i++) {
            const struct sw_fleet_endpoint *ep = NULL;
            rc = sw_fleet_find_endpoint(sv->fleet, o->endpoints[i], &ep, e);
            if (!rc)
                rc = add_ep(sv, ep, e);
        }
    } else
        for (size_t i = 0; i < sv->fleet->n_endpoints && !rc; i++)
            if (sv->fleet->endpoints[i].enabled)
                rc = add_ep(sv, &sv->fleet->endpoints[i], e);
    if (rc)
        goto out;
    if (!sv->n_eps) {
        rc = sw_err_set(e, SW_EINVAL, "%s: no enabled endpoint to serve", sv->fleet_path);
        goto out;
    }
    if (o->keys_file) {
        rc = load_keys(sv, o->keys_file, e);
        if (rc)
            goto out;
    }
    rc = sw__serve_ledger_open(sv, e);
    if (rc)
        goto out;
    sv->base = event_base_new();
    if (!sv->base || pipe(sv->jobs_pipe) || loops_new(sv, o->loops)) {
        rc = sw_err_set(e, SW_ENOMEM, "cannot set up the loops");
        goto out;
    }
    sv->jobs_ev = event_new(sv->base, sv->jobs_pipe[0], EV_READ | EV_PERSIST, on_jobs, sv);
    sv->tick = event_new(sv->base, -1, EV_PERSIST, on_tick, sv);
    struct timeval sec = {0, 200000};
    if (!sv->jobs_ev || !sv->tick || event_add(sv->jobs_ev, NULL) || event_add(sv->tick, &sec)) {
        rc = sw_err_set(e, SW_ENOMEM, "cannot set up the loop");
        goto out;
    }
    rc = listen_on(sv, o->listen, e);
    if (rc)
        goto out;
    rc = loops_run(sv, e);
    sw__serve_logf(sv, "stopping");
out:
    serve_close(sv);
    pthread_mutex_destroy(&sv->mu);
    sw_free(sv);
    return rc;
}
