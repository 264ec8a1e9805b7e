/*
 * The event loop of src/net: glues libcurl's multi "socket" interface to a libevent base.
 * curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION: one libevent event per socket,
 * kept in curl's per-socket pointer) and when it next needs a call (CURLMOPT_TIMERFUNCTION: one
 * timer event); libevent tells curl what became ready (curl_multi_socket_action); completed
 * transfers are collected after every action, outside curl's callbacks, which is the only place a
 * handle may be removed. A third event, the reaper, finishes transfers cancelled from inside a
 * callback on the next turn.
 *
 * What it deliberately does not do: share a loop between threads (one loop per thread: the base
 * and the multi handle are not locked), or set up transfers (xfer.c does).
 */
#include "net_internal.h"

#include <event2/event.h>
#include <pthread.h>
#include <string.h>

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int sw__net_global_init(struct sw_err *e)
{
    pthread_once(&global_once, global_init_once);
    if (global_rc != CURLE_OK)
        return sw_err_set(e, SW_ENET, "curl_global_init failed: %s", curl_easy_strerror(global_rc));
    return 0;
}

/* Completed transfers: collect them after each curl action. */
static void check_multi(struct sw_net_loop *l)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(l->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode res = m->data.result; /* m is invalid once the handle is removed */
        struct sw_net_xfer *x = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
        if (x)
            sw__net_xfer_curl_done(x, res);
    }
}

static void on_socket_ready(evutil_socket_t fd, short kind, void *arg)
{
    struct sw_net_loop *l = arg;
    int flags = 0;
    if (kind & EV_READ)
        flags |= CURL_CSELECT_IN;
    if (kind & EV_WRITE)
        flags |= CURL_CSELECT_OUT;
    int running = 0;
    curl_multi_socket_action(l->multi, fd, flags, &running);
    check_multi(l);
}

static void on_curl_timer(evutil_socket_t fd, short kind, void *arg)
{
    struct sw_net_loop *l = arg;
    int running = 0;
    curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi(l);
}

/* CURLMOPT_SOCKETFUNCTION: watch, re-watch or forget one socket. */
static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct sw_net_loop *l = userp;
    struct event *ev = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (ev) {
            event_free(ev);
            curl_multi_assign(l->multi, s, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST;
    if (what & CURL_POLL_IN)
        kind |= EV_READ;
    if (what & CURL_POLL_OUT)
        kind |= EV_WRITE;
    if (ev) {
        event_del(ev);
        if (event_assign(ev, l->base, s, kind, on_socket_ready, l) < 0)
            return -1;
    } else {
        ev = event_new(l->base, s, kind, on_socket_ready, l);
        if (!ev)
            return -1;
        curl_multi_assign(l->multi, s, ev);
    }
    return event_add(ev, NULL) < 0 ? -1 : 0;
}

/* CURLMOPT_TIMERFUNCTION: curl wants a call in timeout_ms (never from inside this callback). */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct sw_net_loop *l = userp;
    if (timeout_ms < 0) {
        evtimer_del(l->timer);
        return 0;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    return evtimer_add(l->timer, &tv) < 0 ? -1 : 0;
}

static void on_reap(evutil_socket_t fd, short kind, void *arg)
{
    struct sw_net_loop *l = arg;
    /* finishing one may start or cancel others: rescan from the head each time */
    bool again = true;
    while (again) {
        again = false;
        for (struct sw_net_xfer *x = l->active; x; x = x->next) {
            if (x->cancel) {
                sw__net_xfer_fail(x, SW_EINTR, SW_NET_CANCELLED, "cancelled");
                again = true;
                break;
            }
        }
    }
}

void sw__net_loop_wake_reaper(struct sw_net_loop *l)
{
    event_active(l->reap, 0, 0);
}

void sw__net_loop_link(struct sw_net_loop *l, struct sw_net_xfer *x)
{
    x->prev = NULL;
    x->next = l->active;
    if (l->active)
        l->active->prev = x;
    l->active = x;
    l->nactive++;
}

void sw__net_loop_unlink(struct sw_net_loop *l, struct sw_net_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        l->active = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
    l->nactive--;
}

int sw_net_loop_init(struct sw_net_loop *l, const struct sw_net_loop_opts *opts, struct sw_err *e)
{
    memset(l, 0, sizeof(*l));
    int rc = sw__net_global_init(e);
    if (rc)
        return rc;
    if (opts && opts->unix_socket && strlen(opts->unix_socket) >= sizeof(l->unix_socket))
        return sw_err_set(e, SW_EINVAL, "unix socket path too long: %s", opts->unix_socket);
    if (opts && opts->unix_socket)
        snprintf(l->unix_socket, sizeof(l->unix_socket), "%s", opts->unix_socket);
    if (opts && opts->base) {
        l->base = opts->base;
    } else {
        l->base = event_base_new();
        l->own_base = true;
        if (!l->base) {
            rc = sw_err_set(e, SW_ENOMEM, "cannot make an event base");
            goto out;
        }
    }
    l->timer = evtimer_new(l->base, on_curl_timer, l);
    l->reap = event_new(l->base, -1, 0, on_reap, l);
    l->multi = curl_multi_init();
    if (!l->timer || !l->reap || !l->multi) {
        rc = sw_err_set(e, SW_ENOMEM, "cannot make the transfer loop");
        goto out;
    }
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
    long cached = opts && opts->max_cached_conns > 0 ? opts->max_cached_conns : 64;
    curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, cached);
    if (opts && opts->max_host_conns > 0)
        curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS, opts->max_host_conns);
    if (opts && opts->max_total_conns > 0)
        curl_multi_setopt(l->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, opts->max_total_conns);
out:
    if (rc)
        sw_net_loop_close(l);
    return rc;
}

void sw_net_loop_close(struct sw_net_loop *l)
{
    if (!l)
        return;
    while (l->active)
        sw__net_xfer_fail(l->active, SW_EINTR, SW_NET_CANCELLED, "the loop was closed");
    if (l->multi)
        curl_multi_cleanup(l->multi); /* closes kept-alive connections (socket_cb REMOVE) */
    if (l->timer)
        event_free(l->timer);
    if (l->reap)
        event_free(l->reap);
    if (l->own_base && l->base)
        event_base_free(l->base);
    memset(l, 0, sizeof(*l));
}

/* One turn of the base; SW_EIO when nothing at all is left to wait on. */
static int turn(struct sw_net_loop *l)
{
    int r = event_base_loop(l->base, EVLOOP_ONCE);
    if (r < 0)
        return SW_EIO;
    if (r == 1) {
        /* no event pending although transfers run: let curl look at its timeouts once */
        int running = 0;
        curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_multi(l);
        if (event_base_loop(l->base, EVLOOP_NONBLOCK) == 1 && l->nactive > 0)
            return SW_EIO;
    }
    return 0;
}

int sw_net_loop_run(struct sw_net_loop *l)
{
    int rc = 0;
    while (!rc && l->nactive > 0 && !l->brk)
        rc = turn(l);
    l->brk = false;
    return rc;
}

int sw_net_loop_run_until(struct sw_net_loop *l, const struct sw_net_xfer *x)
{
    int rc = 0;
    while (!rc && x->state == SW_NET_RUNNING && !l->brk)
        rc = turn(l);
    l->brk = false;
    return rc;
}

void sw_net_loop_break(struct sw_net_loop *l)
{
    l->brk = true;
    event_base_loopbreak(l->base);
}

struct event_base *sw_net_loop_base(struct sw_net_loop *l)
{
    return l->base;
}
