/*
 * serve units: how serve knows and drives the endpoints on other hosts. Whether an endpoint answers
 * (its health through its route's forward for one bound to its host's loopback: the forward's own
 * socket always accepts; else a connect to its address); a system unit on an ssh host started or
 * stopped over its host under its deploy lock (sw_rollout_unit_start, sw_rollout_unit_stop: the
 * rollout's session, boot watch, readiness and one-token generation), in serve's worker thread;
 * and the look at a unit's lock before anything is evicted for it (a worker thread too: a host
 * that does not answer holds no loop).
 *
 * What it does not do: decide (the admission driver, serve.c), or reach the engine for a request
 * (proxy.c).
 */
#include "serve_internal.h"

#include <slipway/rollout.h>

#include <errno.h>
#include <event2/util.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A unit's start or stop over its host, under its deploy lock (a held lock: nothing touched). */
void sw__serve_unit_job(struct sw__serve_job *j)
{
    struct sw__serve *sv = j->sv;
    const struct sw_fleet_endpoint *ep = sv->eps[j->ep].ep;
    struct sw_rollout_opts o = {0};
    o.deadline_ms = (int64_t)(sv->o->boot_timeout_s ? sv->o->boot_timeout_s : 900) * 1000;
    struct sw_rollout_result r;
    struct sw_err e;
    sw_err_clear(&e);
    if (!j->fleet) {
        j->rc = -1;
        snprintf(j->msg, sizeof(j->msg), "its fleet is gone");
        return;
    }
    int rc = j->start ? sw_rollout_unit_start(j->fleet, ep, &o, &r, &e)
                      : sw_rollout_unit_stop(j->fleet, ep, &o, &r, &e);
    j->rc = rc || (j->start && !r.serving);
    if (rc) {
        char m[800];
        snprintf(j->msg, sizeof(j->msg), "%s%s", sw_err_format(&e, m, sizeof(m)),
                 rc == SW_EBUSY ? " (its deploy lock is held: not touched)" : "");
    } else if (j->rc)
        snprintf(j->msg, sizeof(j->msg), "%s: %.1000s", r.fail_class, r.fail_msg);
    snprintf(j->fail_class, sizeof(j->fail_class), "%s",
             rc == SW_EBUSY ? "locked" : (j->rc ? r.fail_class : ""));
    sw_rollout_result_free(&r);
}

/* In the worker thread: who holds the unit's deploy lock (j->msg; "" nobody), j->rc its error. */
static void look_run(struct sw__serve_job *j)
{
    struct sw_err e;
    sw_err_clear(&e);
    j->msg[0] = '\0';
    j->rc = j->fleet ? sw_rollout_unit_lock_holder(j->fleet, j->sv->eps[j->ep].ep, j->msg,
                                                   sizeof(j->msg), &e)
                     : -1;
}

/* On the state loop: a held lock answers the model's queue 503 (nothing evicted); else the
 * eviction the law named goes ahead (the kick that follows asks the law again). A look that
 * failed (the host did not answer) lets the start find out: its own lock is the authority. */
static void look_done(struct sw__serve *sv, struct sw__serve_job *j)
{
    struct sw__serve_ep *x = &sv->eps[j->ep];
    struct sw__serve_model *m = &sv->models[x->model];
    x->look = SW__SERVE_LOOK_NONE;
    if (j->rc || !j->msg[0]) {
        x->look = SW__SERVE_LOOK_FREE;
        return;
    }
    char msg[1800];
    snprintf(msg, sizeof(msg),
             "endpoint %s of model %s: its deploy lock on host %s is held (%s): not started, "
             "nothing evicted for it",
             x->ep->name, m->name, x->ep->host ? x->ep->host->name : "?", j->msg);
    sw__serve_logf(sv, "admit: %s; but %s: 503", m->last_why, msg);
    x->want_start = false;
    sw__serve_fail_queue(sv, m, 503, "unavailable_error", msg);
}

bool sw__serve_unit_look(struct sw__serve *sv, int i)
{
    struct sw__serve_ep *x = &sv->eps[i];
    if (!x->unit || x->look == SW__SERVE_LOOK_FREE) {
        x->look = SW__SERVE_LOOK_NONE;
        return false;
    }
    if (x->look == SW__SERVE_LOOK_RUNNING)
        return true;
    struct sw__serve_job *j = sw_calloc(1, sizeof(*j));
    if (!j)
        return false;
    j->ep = i;
    j->fleet = sw__serve_bg_fleet(sv, x->ep);
    j->run = look_run;
    j->done = look_done;
    if (sw__serve_job_spawn(sv, j)) {
        sw_free(j);
        return false; /* no thread: the start's own lock decides */
    }
    x->look = SW__SERVE_LOOK_RUNNING;
    return true;
}

/* Does something accept connections at host:port (within 500 ms)? An endpoint no pid file names
 * that answers runs outside serve: it is served, never stopped. */
static bool port_answers(const char *host, unsigned port)
{
    struct evutil_addrinfo hints = {0}, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof(ps), "%u", port);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = EVUTIL_AI_NUMERICHOST | EVUTIL_AI_NUMERICSERV;
    if (evutil_getaddrinfo(host, ps, &hints, &ai) || !ai)
        return false;
    bool ok = false;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (!r)
            ok = true;
        else if (errno == EINPROGRESS) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            int err = 0;
            socklen_t el = sizeof(err);
            ok = poll(&pf, 1, 500) == 1 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) && !err;
        }
        close(fd);
    }
    evutil_freeaddrinfo(ai);
    return ok;
}
/* Does the endpoint answer? Through its route's forward its health path (200 within 2 s: the
 * forward's socket itself always accepts); else something accepts at its address. Nothing on
 * this machine's own loopback is asked for an endpoint on another host. */
bool sw__serve_answers(struct sw__serve_ep *x)
{
    if (x->routed)
        return sw_service_client_health(&x->client, 2000) == 200;
    return port_answers(x->host, x->port);
}
