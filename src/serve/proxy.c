/*
 * serve proxy: one client request sent to one endpoint and its answer relayed byte for byte. The
 * engine's connection is a plain bufferevent, not libevent's HTTP client: its response head is
 * read (status, Content-Type, Content-Length, Transfer-Encoding), the client's head is sent with
 * those, and then the engine's body bytes go to the client as they arrive, framing and all (its
 * chunk sizes are tracked, not re-encoded: libevent's own HTTP framing is switched off for the
 * reply), so a stream costs one move of a buffer per read. A failure before the first byte (no
 * connection, a reset, a 502/503 while another replica runs) is retried on another replica; a
 * death mid-stream ends the stream with an SSE error event when it fell between chunks (else the
 * client's connection is closed: its framing cannot be mended). The client going away closes the
 * engine's connection, which is how an engine learns to cancel.
 *
 * What it does not do: choose the replica (serve.c), queue (front.c), pool engine connections
 * (one per request, `Connection: close`), or hold back a slow client's bytes (they are buffered).
 */
#include "serve_internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define HEAD_MAX 65536

enum { CK_SIZE, CK_EXT, CK_DATA, CK_DATA_END, CK_TRAILER, CK_DONE };

static void ep_done(struct sw__serve_px *px)
{
    struct sw__serve_ep *x = &px->sv->eps[px->ep];
    if (x->inflight > 0)
        x->inflight--;
    x->last_ns = sw_now_ns();
}

static void upstream_close(struct sw__serve_px *px)
{
    if (px->ubev)
        bufferevent_free(px->ubev);
    px->ubev = NULL;
}

/* SSE events in b: "data: " not followed by "[DONE]", read where the bytes lie; an event split
 * across two reads is not counted (rare: an engine writes its events whole). */
static uint64_t count_events(const struct evbuffer_iovec *v, int n)
{
    uint64_t hits = 0;
    for (int i = 0; i < n; i++) {
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

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Follow the body's framing over n bytes; false when it is malformed. */
static bool track(struct sw__serve_px *px, const char *p, size_t n)
{
    if (!px->chunked) {
        if (px->remain >= 0)
            px->remain -= (int64_t)n < px->remain ? (int64_t)n : px->remain;
        return true;
    }
    const char *end = p + n;
    while (p < end) {
        switch (px->ck) {
        case CK_SIZE: {
            int h = hexval(*p);
            if (h >= 0) {
                if (px->remain > (INT64_MAX >> 4))
                    return false;
                px->remain = px->remain * 16 + h;
                px->ck_digits = true;
            } else if (*p == ';' || *p == ' ' || *p == '\t')
                px->ck = CK_EXT;
            else if (*p == '\n') {
                if (!px->ck_digits)
                    return false;
                px->ck = px->remain ? CK_DATA : CK_TRAILER;
                px->ck_line = 0;
            } else if (*p != '\r')
                return false;
            p++;
            break;
        }
        case CK_EXT:
            if (*p == '\n') {
                px->ck = px->remain ? CK_DATA : CK_TRAILER;
                px->ck_line = 0;
            }
            p++;
            break;
        case CK_DATA: {
            int64_t k = end - p < px->remain ? end - p : px->remain;
            p += k;
            px->remain -= k;
            if (!px->remain)
                px->ck = CK_DATA_END;
            break;
        }
        case CK_DATA_END:
            if (*p == '\n') {
                px->ck = CK_SIZE;
                px->ck_digits = false;
                px->remain = 0;
            } else if (*p != '\r')
                return false;
            p++;
            break;
        case CK_TRAILER:
            if (*p == '\n') {
                if (!px->ck_line)
                    px->ck = CK_DONE;
                px->ck_line = 0;
            } else if (*p != '\r')
                px->ck_line++;
            p++;
            break;
        default: /* past the end: nothing more is the body's */
            return true;
        }
    }
    return true;
}

static bool body_done(const struct sw__serve_px *px)
{
    return px->chunked ? px->ck == CK_DONE : px->remain == 0;
}

static void finish(struct sw__serve_px *px)
{
    struct sw__serve *sv = px->sv;
    upstream_close(px);
    ep_done(px);
    evhttp_send_reply_end(px->req);
    sw__serve_px_free(px);
    sw__serve_kick(sv);
}

/* Failed before the first byte: another replica, else the client's 502. */
static void failed_early(struct sw__serve_px *px, const char *what)
{
    struct sw__serve *sv = px->sv;
    struct sw__serve_model *m = &sv->models[px->model];
    struct sw__serve_ep *x = &sv->eps[px->ep];
    upstream_close(px);
    ep_done(px);
    px->tried[px->ep] = true;
    if (!px->retry && !x->can_stop) {
        /* no answer from one that runs outside serve: it is gone until it is seen again */
        x->state = SW_SERVE_STOPPED;
        sw__serve_logf(sv, "%s: no answer at %s:%u: taken out of rotation", x->ep->name, x->host,
                       x->port);
    }
    int next = sw__serve_pick(sv, m, px);
    sw__serve_logf(sv, "%s: %s failed before the first byte (%s)%s%s", m->name, x->ep->name, what,
                   next >= 0 ? "; retried on " : "", next >= 0 ? sv->eps[next].ep->name : "");
    px->retry = false;
    px->ustate = 0;
    if (next >= 0) {
        m->retried++;
        sw__serve_forward(px, next);
        return;
    }
    x->failures++;
    char msg[600];
    snprintf(msg, sizeof(msg), "endpoint %s of model %s failed before answering (%s)", x->ep->name,
             m->name, what);
    sw__serve_count(m, 502);
    sw__serve_reply_error(px->req, 502, "upstream_error", msg, 0);
    sw__serve_px_free(px);
    sw__serve_kick(sv);
}

/* Died mid-body: an SSE error event when the framing allows, else the client's connection goes. */
static void failed_midstream(struct sw__serve_px *px)
{
    struct sw__serve *sv = px->sv;
    struct sw__serve_model *m = &sv->models[px->model];
    struct sw__serve_ep *x = &sv->eps[px->ep];
    m->midstream++;
    x->failures++;
    bool between = !px->raw || (px->chunked && px->ck == CK_SIZE && !px->ck_digits);
    sw__serve_logf(sv, "%s: %s died mid-stream: %s", m->name, x->ep->name,
                   px->stream && between ? "the stream ends with an error event"
                                         : "the client's connection is closed");
    if (px->stream && between) {
        char ev[600];
        int n = snprintf(ev, sizeof(ev),
                         "data: {\"error\":{\"message\":\"endpoint %s of model %s ended the stream "
                         "before its end\",\"type\":\"upstream_error\",\"code\":502}}\n\n",
                         x->ep->name, m->name);
        struct evbuffer *b = evbuffer_new();
        if (b) {
            if (px->raw)
                evbuffer_add_printf(b, "%x\r\n%s\r\n0\r\n\r\n", n, ev);
            else
                evbuffer_add(b, ev, (size_t)n);
            evhttp_send_reply_chunk(px->req, b);
            evbuffer_free(b);
        }
        finish(px);
        return;
    }
    upstream_close(px);
    ep_done(px);
    if (px->cconn) {
        evhttp_connection_set_closecb(px->cconn, NULL, NULL);
        evhttp_connection_free(px->cconn); /* frees the request with it */
        px->cconn = NULL;
    }
    px->req = NULL;
    sw__serve_px_free(px);
    sw__serve_kick(sv);
}

/* A header's value in the head [h, end), or NULL; its length in *n. */
static const char *header(const char *h, const char *end, const char *name, size_t *n)
{
    size_t k = strlen(name);
    const char *p = memchr(h, '\n', (size_t)(end - h)); /* past the status line */
    while (p && p < end) {
        p++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - p) > k && p[k] == ':' && !strncasecmp(p, name, k)) {
            const char *v = p + k + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
                ve--;
            *n = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

/* The engine's head is whole in `in`: answer the client's head; false: it was retried/answered. */
static bool on_head(struct sw__serve_px *px, struct evbuffer *in, size_t hl)
{
    struct sw__serve *sv = px->sv;
    const char *h = (const char *)evbuffer_pullup(in, (ev_ssize_t)hl);
    const char *end = h + hl;
    int code = 0;
    if (!h || sscanf(h, "HTTP/1.%*1d %3d", &code) != 1 || code < 100) {
        failed_early(px, "not an HTTP answer");
        return false;
    }
    if ((code == 502 || code == 503) && sw__serve_pick(sv, &sv->models[px->model], px) >= 0) {
        px->retry = true;
        failed_early(px, code == 502 ? "its 502" : "its 503");
        return false;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(px->req);
    static const char *const pass[] = {"Content-Type", "Content-Length", "Cache-Control",
                                       "X-Request-Id", NULL};
    char val[1024];
    size_t n = 0;
    for (int i = 0; pass[i]; i++) {
        const char *v = header(h, end, pass[i], &n);
        if (v && n < sizeof(val)) {
            memcpy(val, v, n);
            val[n] = 0;
            evhttp_add_header(out, pass[i], val);
            if (i == 0)
                px->stream = !strncmp(val, "text/event-stream", 17);
            if (i == 1)
                px->remain = strtoll(val, NULL, 10);
        }
    }
    const char *te = header(h, end, "Transfer-Encoding", &n);
    px->chunked = te && n >= 7 && !strncasecmp(te + n - 7, "chunked", 7);
    if (!px->chunked && !header(h, end, "Content-Length", &n))
        px->remain = -1; /* delimited by the close */
    /* the reason phrase as the engine sent it */
    char reason[128] = "OK";
    const char *sp = memchr(h, ' ', hl);
    sp = sp ? memchr(sp + 1, ' ', (size_t)(end - sp - 1)) : NULL;
    const char *eol = memchr(h, '\r', hl);
    if (sp && eol && eol > sp && (size_t)(eol - sp - 1) < sizeof(reason)) {
        memcpy(reason, sp + 1, (size_t)(eol - sp - 1));
        reason[eol - sp - 1] = 0;
    }
    /* a client of HTTP/1.1 gets the engine's framing as it is; libevent adds none */
    px->raw = (px->chunked || px->remain >= 0) && px->req->major == 1 && px->req->minor >= 1;
    if (px->raw && px->chunked)
        evhttp_add_header(out, "Transfer-Encoding", "chunked");
    evhttp_send_reply_start(px->req, code, reason);
    if (px->raw)
        px->req->chunked = 0;
    px->headers_sent = true;
    sw__serve_count(&sv->models[px->model], code);
    evbuffer_drain(in, hl);
    px->ustate = 1;
    px->ck = CK_SIZE;
    px->ck_digits = false;
    if (px->chunked)
        px->remain = 0;
    return true;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct sw__serve_px *px = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (!px->ustate) {
        size_t len = evbuffer_get_length(in);
        struct evbuffer_ptr e = evbuffer_search(in, "\r\n\r\n", 4, NULL);
        if (e.pos < 0) {
            if (len > HEAD_MAX)
                failed_early(px, "a head past 64 KiB");
            return;
        }
        if (!on_head(px, in, (size_t)e.pos + 4))
            return;
    }
    size_t n = evbuffer_get_length(in);
    if (!n)
        return;
    struct sw__serve_model *m = &px->sv->models[px->model];
    if (!px->first) {
        px->first = true;
        sw__serve_hist_add(&m->ttft, (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
    }
    struct evbuffer_iovec v[64];
    int k = evbuffer_peek(in, -1, NULL, v, 64);
    if (k > 64) { /* many small chains: one flat copy */
        if (!evbuffer_pullup(in, -1))
            return;
        k = evbuffer_peek(in, -1, NULL, v, 64);
    }
    bool ok = true;
    for (int i = 0; i < k && ok; i++)
        ok = track(px, v[i].iov_base, v[i].iov_len);
    if (px->stream)
        m->tokens += count_events(v, k);
    evhttp_send_reply_chunk(px->req, in);
    if (!ok) {
        failed_midstream(px);
        return;
    }
    if (body_done(px))
        finish(px);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct sw__serve_px *px = arg;
    if (what & BEV_EVENT_CONNECTED) {
        evutil_socket_t fd = bufferevent_getfd(bev);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return;
    }
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    if (!px->ustate) {
        failed_early(px, what & BEV_EVENT_EOF ? "closed" : "no answer");
        return;
    }
    if (body_done(px) || (!px->chunked && px->remain < 0 && (what & BEV_EVENT_EOF)))
        finish(px);
    else
        failed_midstream(px);
}

void sw__serve_forward(struct sw__serve_px *px, int i)
{
    struct sw__serve *sv = px->sv;
    struct sw__serve_ep *x = &sv->eps[i];
    px->ep = i;
    px->first = false;
    px->ustate = 0;
    x->inflight++;
    x->last_ns = sw_now_ns();
    px->t_sent_ns = sw_now_ns();
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    char hp[300];
    snprintf(hp, sizeof(hp), strchr(x->host, ':') ? "[%s]:%u" : "%s:%u", x->host, x->port);
    px->ubev = bufferevent_socket_new(sv->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!px->ubev || evutil_parse_sockaddr_port(hp, (struct sockaddr *)&ss, &sl)) {
        failed_early(px, px->ubev ? "not a numeric address" : "out of memory");
        return;
    }
    bufferevent_setcb(px->ubev, on_read, NULL, on_event, px);
    struct evbuffer *o = bufferevent_get_output(px->ubev);
    const char *acc = evhttp_find_header(evhttp_request_get_input_headers(px->req), "Accept");
    evbuffer_add_printf(o,
                        "POST %s HTTP/1.%d\r\nHost: %s\r\nContent-Type: application/json\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n%s%s%s",
                        px->path, px->req->minor >= 1 ? 1 : 0, hp, px->body_len,
                        acc ? "Accept: " : "", acc ? acc : "", acc ? "\r\n" : "");
    if (x->client.api_key)
        evbuffer_add_printf(o, "Authorization: Bearer %s\r\n", x->client.api_key);
    evbuffer_add(o, "\r\n", 2);
    evbuffer_add(o, px->body, px->body_len);
    bufferevent_enable(px->ubev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(px->ubev, (struct sockaddr *)&ss, sl))
        failed_early(px, "no connection");
}

void sw__serve_cancel(struct sw__serve_px *px)
{
    if (!px->ubev)
        return;
    struct sw__serve_model *m = &px->sv->models[px->model];
    m->cancelled++;
    sw__serve_logf(px->sv, "%s: the client went away: its request to %s is cancelled", m->name,
                   px->sv->eps[px->ep].ep->name);
    /* the engine sees the close and cancels */
    upstream_close(px);
    ep_done(px);
}
