/*
 * serve proxy: one client request sent to one endpoint and its answer relayed byte for byte: the
 * status and headers as the engine sent them, the body as each read brings it (no re-chunking of
 * the SSE stream: the events are counted, not parsed). A failure before the first byte (no
 * connection, a reset, a 502/503 while another replica runs) is retried on another replica; a
 * death mid-stream ends the stream with an SSE error event. The client going away closes the
 * upstream connection, which is how an engine learns to cancel.
 *
 * What it does not do: choose the replica (serve.c), queue (front.c), or pool upstream
 * connections (one per request: the engines' own keep-alive is not relied on).
 */
#include "serve_internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

static void free_conn_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    evhttp_connection_free(arg);
}

/* libevent frees the request after its callback; its connection is freed on the next turn */
static void conn_release(struct sw__serve_px *px)
{
    if (px->uconn) {
        struct timeval zero = {0, 0};
        if (event_base_once(px->sv->base, -1, EV_TIMEOUT, free_conn_cb, px->uconn, &zero))
            evhttp_connection_free(px->uconn); /* never: an event cannot be had */
    }
    px->uconn = NULL;
    px->ureq = NULL;
}

static void ep_done(struct sw__serve_px *px)
{
    struct sw__serve_ep *x = &px->sv->eps[px->ep];
    if (x->inflight > 0)
        x->inflight--;
    x->last_ns = sw_now_ns();
}

/* SSE events in the bytes read: "data: " not followed by "[DONE]". The bytes are read where
 * they lie (evbuffer_peek), never copied; an event split across two reads is seen by its
 * "\n\ndata: " only in the read that holds it whole, so a rare split one is not counted. */
static uint64_t count_events(struct evbuffer *b)
{
    struct evbuffer_iovec v[16];
    int n = evbuffer_peek(b, -1, NULL, v, 16);
    uint64_t hits = 0;
    for (int i = 0; i < n && i < 16; i++) {
        const char *p = v[i].iov_base, *end = p + v[i].iov_len;
        while (p < end) {
            const char *q = memmem(p, (size_t)(end - p), "data: ", 6);
            if (!q)
                break;
            if (!(end - q >= 12 && !memcmp(q + 6, "[DONE]", 6)))
                hits++;
            p = q + 6;
        }
    }
    return hits;
}

static const char *const pass_headers[] = {"Content-Type", "Content-Length", "Cache-Control",
                                           "X-Request-Id", NULL};

static int on_header(struct evhttp_request *ureq, void *arg)
{
    struct sw__serve_px *px = arg;
    struct sw__serve *sv = px->sv;
    int code = evhttp_request_get_response_code(ureq);
    if ((code == 502 || code == 503) && sw__serve_pick(sv, &sv->models[px->model], px) >= 0) {
        px->retry = true; /* another replica runs: this one failed before the first byte */
        px->retry_code = code;
        return -1;
    }
    struct evkeyvalq *in = evhttp_request_get_input_headers(ureq);
    struct evkeyvalq *out = evhttp_request_get_output_headers(px->req);
    for (int i = 0; pass_headers[i]; i++) {
        const char *v = evhttp_find_header(in, pass_headers[i]);
        if (v)
            evhttp_add_header(out, pass_headers[i], v);
    }
    const char *ct = evhttp_find_header(in, "Content-Type");
    px->stream = ct && !strncmp(ct, "text/event-stream", 17);
    evhttp_send_reply_start(px->req, code, evhttp_request_get_response_code_line(ureq));
    px->headers_sent = true;
    sw__serve_count(&sv->models[px->model], code);
    return 0;
}

static void on_chunk(struct evhttp_request *ureq, void *arg)
{
    struct sw__serve_px *px = arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(ureq);
    if (!evbuffer_get_length(in))
        return;
    struct sw__serve_model *m = &px->sv->models[px->model];
    if (!px->first) {
        px->first = true;
        sw__serve_hist_add(&m->ttft, (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
    }
    if (px->stream)
        m->tokens += count_events(in);
    evhttp_send_reply_chunk(px->req, in);
}

static void on_error(enum evhttp_request_error err, void *arg)
{
    struct sw__serve_px *px = arg;
    (void)err;
    (void)px;
}

static void on_done(struct evhttp_request *ureq, void *arg)
{
    struct sw__serve_px *px = arg;
    struct sw__serve *sv = px->sv;
    struct sw__serve_model *m = &sv->models[px->model];
    struct sw__serve_ep *x = &sv->eps[px->ep];
    bool ok = ureq && evhttp_request_get_response_code(ureq) > 0 && !px->retry;
    if (ok && px->headers_sent) {
        struct evbuffer *in = evhttp_request_get_input_buffer(ureq);
        if (evbuffer_get_length(in)) /* what a read brought with the end */
            on_chunk(ureq, px);
    }
    ep_done(px);
    conn_release(px);
    if (ok && px->headers_sent) {
        evhttp_send_reply_end(px->req);
        sw__serve_px_free(px);
        sw__serve_kick(sv);
        return;
    }
    if (!px->headers_sent) {
        /* failed before the first byte: another replica, else the client's 502 */
        px->tried[px->ep] = true;
        if (!px->retry && !x->can_stop) {
            /* no answer from one that runs outside serve: it is gone until it is seen again */
            x->state = SW_SERVE_STOPPED;
            sw__serve_logf(sv, "%s: no answer at %s:%u: taken out of rotation", x->ep->name,
                           x->host, x->port);
        }
        int next = sw__serve_pick(sv, m, px);
        sw__serve_logf(sv, "%s: %s failed before the first byte (%s)%s%s", m->name, x->ep->name,
                       px->retry ? "its 502/503" : "no answer", next >= 0 ? "; retried on " : "",
                       next >= 0 ? sv->eps[next].ep->name : "");
        px->retry = false;
        if (next >= 0) {
            m->retried++;
            sw__serve_forward(px, next);
            return;
        }
        x->failures++;
        char msg[600];
        snprintf(msg, sizeof(msg), "endpoint %s of model %s failed before answering", x->ep->name,
                 m->name);
        sw__serve_count(m, 502);
        sw__serve_reply_error(px->req, 502, "upstream_error", msg, 0);
        sw__serve_px_free(px);
        sw__serve_kick(sv);
        return;
    }
    /* died mid-stream: the stream ends with an error event */
    m->midstream++;
    x->failures++;
    sw__serve_logf(sv, "%s: %s died mid-stream: the stream ends with an error event", m->name,
                   x->ep->name);
    if (px->stream) {
        struct evbuffer *b = evbuffer_new();
        if (b) {
            evbuffer_add_printf(b,
                                "data: {\"error\":{\"message\":\"endpoint %s of model %s ended "
                                "the stream before its end\",\"type\":\"upstream_error\","
                                "\"code\":502}}\n\n",
                                x->ep->name, m->name);
            evhttp_send_reply_chunk(px->req, b);
            evbuffer_free(b);
        }
    }
    evhttp_send_reply_end(px->req);
    sw__serve_px_free(px);
    sw__serve_kick(sv);
}

void sw__serve_forward(struct sw__serve_px *px, int i)
{
    struct sw__serve *sv = px->sv;
    struct sw__serve_ep *x = &sv->eps[i];
    px->ep = i;
    px->first = false;
    x->inflight++;
    x->last_ns = sw_now_ns();
    px->t_sent_ns = sw_now_ns();
    px->uconn = evhttp_connection_base_new(sv->base, NULL, x->host, (unsigned short)x->port);
    px->ureq = px->uconn ? evhttp_request_new(on_done, px) : NULL;
    if (!px->ureq) {
        if (px->uconn)
            evhttp_connection_free(px->uconn);
        px->uconn = NULL;
        x->inflight--;
        sw__serve_count(&sv->models[px->model], 500);
        sw__serve_reply_error(px->req, 500, "server_error", "out of memory", 0);
        sw__serve_px_free(px);
        return;
    }
    evhttp_connection_set_timeout(px->uconn, 3600);
    evhttp_request_set_header_cb(px->ureq, on_header);
    evhttp_request_set_chunked_cb(px->ureq, on_chunk);
    evhttp_request_set_error_cb(px->ureq, on_error);
    struct evkeyvalq *h = evhttp_request_get_output_headers(px->ureq);
    char hostport[300];
    snprintf(hostport, sizeof(hostport), "%s:%u", x->host, x->port);
    evhttp_add_header(h, "Host", hostport);
    evhttp_add_header(h, "Content-Type", "application/json");
    const char *acc = evhttp_find_header(evhttp_request_get_input_headers(px->req), "Accept");
    if (acc)
        evhttp_add_header(h, "Accept", acc);
    if (x->client.api_key) {
        char auth[1100];
        snprintf(auth, sizeof(auth), "Bearer %s", x->client.api_key);
        evhttp_add_header(h, "Authorization", auth);
    }
    evbuffer_add(evhttp_request_get_output_buffer(px->ureq), px->body, px->body_len);
    if (evhttp_make_request(px->uconn, px->ureq, EVHTTP_REQ_POST, px->path)) {
        /* libevent freed ureq; treat as a failure before the first byte on the next turn */
        px->ureq = NULL;
        on_done(NULL, px);
        return;
    }
    struct bufferevent *bev = evhttp_connection_get_bufferevent(px->uconn);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
}

void sw__serve_cancel(struct sw__serve_px *px)
{
    if (!px->uconn)
        return;
    struct sw__serve_model *m = &px->sv->models[px->model];
    m->cancelled++;
    sw__serve_logf(px->sv, "%s: the client went away: its request to %s is cancelled", m->name,
                   px->sv->eps[px->ep].ep->name);
    /* freeing the connection frees its request without its callbacks and closes the socket:
     * the engine sees the close and cancels */
    evhttp_connection_free(px->uconn);
    px->uconn = NULL;
    px->ureq = NULL;
    ep_done(px);
}
