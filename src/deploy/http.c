/*
 * deploy/http: the two requests deploy makes itself (GET /health while the engine loads, one POST
 * for the liveness generation), through net's client on a private loop, interruptible: a timer
 * on the loop cancels the transfer as soon as the caller's stop flag is set (Ctrl-C during a
 * long first generation on CPU must not wait for it).
 *
 * What it deliberately does not do: reuse connections across calls (one call every 200 ms while
 * booting does not need it), follow redirects, or keep more than the bounded response body.
 */
#include "deploy_internal.h"

#include <slipway/net.h>

#include <event2/event.h>
#include <string.h>

struct watch {
    volatile sig_atomic_t *stop;
    struct sw_net_xfer *x;
};

static void on_tick(evutil_socket_t fd, short what, void *ud)
{
    struct watch *w = ud;
    (void)fd;
    (void)what;
    if (w->stop && *w->stop)
        sw_net_cancel(w->x);
}

int sw__http(const char *method, const char *url, const char *unix_socket, const char *body,
             const char *bearer, unsigned timeout_ms, volatile sig_atomic_t *stop, int *status,
             struct sw_buf *resp, struct sw_err *e)
{
    struct sw_net_loop loop;
    struct sw_net_xfer x;
    struct event *tick = NULL;
    int rc;
    *status = 0;
    rc = sw_net_loop_init(&loop, NULL, e);
    if (rc)
        return rc;
    sw_net_xfer_init(&x);
    x.req.method = method;
    x.req.url = url;
    x.req.unix_socket = unix_socket;
    x.req.bearer = bearer && *bearer ? bearer : NULL;
    x.req.body = body;
    x.req.body_len = body ? strlen(body) : 0;
    x.req.connect_ms = SW_MIN(timeout_ms, 5000u);
    x.req.total_ms = timeout_ms;
    x.req.body_max = resp ? resp->max : 64u * 1024u;
    struct watch w = {stop, &x};
    rc = sw_net_start(&loop, &x, e);
    if (rc)
        goto out;
    tick = event_new(sw_net_loop_base(&loop), -1, EV_PERSIST, on_tick, &w);
    if (tick) {
        struct timeval tv = {0, 100 * 1000};
        event_add(tick, &tv);
    }
    sw_net_loop_run_until(&loop, &x);
    rc = x.resp.rc;
    *status = (int)x.resp.status;
    if (rc && e)
        *e = x.resp.err;
    if (resp && x.resp.body.len) {
        sw_buf_reset(resp);
        if (sw_buf_append(resp, x.resp.body.data, x.resp.body.len))
            sw_buf_reset(resp); /* the status is what matters */
    }
    if (rc == 0 && !*status)
        rc = sw_err_set(e, SW_ENET, "%s: no HTTP status", url);
out:
    if (tick)
        event_free(tick);
    sw_net_xfer_close(&x);
    sw_net_loop_close(&loop);
    return rc ? (x.resp.rc ? x.resp.rc : rc) : 0;
}
