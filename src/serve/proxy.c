/*
 * serve proxy: one client request sent to one endpoint and its answer relayed byte for byte. The
 * engine's connection is a plain non-blocking socket with one event, not libevent's HTTP client
 * nor a bufferevent: its response head is read (status, Content-Type, Content-Length,
 * Transfer-Encoding, Connection), the client's head is sent with those, and then each read of the
 * engine's body goes to the client as it came, framing and all (its chunk sizes are tracked, not
 * re-encoded: libevent's own HTTP framing is switched off for the reply). A read is one read(2)
 * into one buffer of the loop and, when nothing waits in the client's output, one send(2) to the
 * client: no copy into a buffer, no FIONREAD, no epoll change per token; what the client's socket
 * does not take waits in its output buffer, and while that holds more than a mark the engine is
 * not read (backpressure: the engine's socket fills and its writes wait; serve's memory per
 * stream stays bounded). Engine connections are kept alive and pooled per endpoint (HTTP/1.1,
 * when the engine keeps them); a pooled one found closed before its first byte is replaced by a
 * new connection, not counted as the engine's failure. A failure before the first byte (no
 * connection, a reset, a 502/503 while another replica runs) is retried on another replica; a
 * death mid-stream ends the stream with an SSE error event when it fell between chunks (else the
 * client's connection is closed: its framing cannot be mended). The client going away closes the
 * engine's connection (never pooled), which is how an engine learns to cancel. An engine bound
 * to its ssh host's loopback is connected to through its route's forward, a unix socket the
 * host's ssh master takes to the engine (host/route), opened again when the master went; the
 * rest is the same (pool, failover), and nothing on this machine's own loopback is asked.
 *
 * What it does not do: choose the replica (serve.c), queue (front.c), or parse the events beyond
 * counting them for /metrics.
 */
#include "serve_internal.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define HEAD_MAX 65536
/* the client's output above HIGH: the engine is not read until it is back under LOW */
#define OUT_HIGH (128u << 10)
#define OUT_LOW  (32u << 10)
#define READ_MAX (64u << 10)

enum { CK_SIZE, CK_EXT, CK_DATA, CK_DATA_END, CK_TRAILER, CK_DONE };

/* One loop's read buffer: a read is relayed before the next one (one loop per thread). */
static _Thread_local char g_rd[READ_MAX];

void sw__serve_ep_release(struct sw__serve_px *px)
{
    struct sw__serve_ep *x = &px->sv->eps[px->ep];
    if (x->inflight > 0)
        x->inflight--;
    x->last_ns = sw_now_ns();
}

static void ep_done(struct sw__serve_px *px)
{
    sw__serve_ep_release(px);
}

static struct evbuffer *client_out(const struct sw__serve_px *px)
{
    struct bufferevent *b = px->cconn ? evhttp_connection_get_bufferevent(px->cconn) : NULL;
    return b ? bufferevent_get_output(b) : NULL;
}

/* The engine's connection goes: back to its endpoint's pool when `reuse` and the answer ended
 * cleanly on a kept-alive connection, else closed (an engine cancels on the close). */
static void upstream_close(struct sw__serve_px *px, bool reuse)
{
    if (px->drain) {
        struct evbuffer *o = client_out(px);
        if (o)
            evbuffer_remove_cb_entry(o, px->drain);
        px->drain = NULL;
    }
    px->paused = false;
    if (px->uev) {
        event_free(px->uev);
        px->uev = NULL;
        struct sw__serve_loop *lp = px->lp;
        if (reuse && px->keep && lp->n_pool[px->ep] < SW__SERVE_POOL)
            lp->pool[px->ep][lp->n_pool[px->ep]++] = px->ufd;
        else
            close(px->ufd);
    }
    px->ufd = -1;
    if (px->uhead)
        evbuffer_free(px->uhead);
    px->uhead = NULL;
}

/* px is done with engines: its request's head goes (kept until now for a retry) */
static void upstream_done(struct sw__serve_px *px, bool reuse)
{
    upstream_close(px, reuse);
    sw_free(px->ureq);
    px->ureq = NULL;
}

void sw__serve_pool_close(struct sw__serve *sv, int ep)
{
    for (int k = 0; k < sv->n_loops; k++) /* every loop's pool of it */
        for (int i = ep < 0 ? 0 : ep; i < (ep < 0 ? sv->n_eps : ep + 1); i++) {
            struct sw__serve_loop *lp = &sv->loops[k];
            while (lp->n_pool[i] > 0)
                close(lp->pool[i][--lp->n_pool[i]]);
        }
}

/* SSE events in [p, p+n): "data: " not followed by "[DONE]"; an event split across two reads is
 * not counted (rare: an engine writes its events whole). */
static uint64_t count_events(const char *p, size_t n)
{
    uint64_t hits = 0;
    const char *end = p + n;
    while (p < end) {
        const char *q = memmem(p, (size_t)(end - p), "data: ", 6);
        if (!q)
            break;
        if (!(end - q >= 12 && !memcmp(q + 6, "[DONE]", 6)))
            hits++;
        p = q + 6;
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

/* Follow the body's framing over n bytes: how many of them are the body's (the rest came after
 * its end), or -1 when it is malformed. */
static ssize_t track(struct sw__serve_px *px, const char *p, size_t n)
{
    if (!px->chunked) {
        if (px->remain < 0)
            return (ssize_t)n;
        int64_t k = (int64_t)n < px->remain ? (int64_t)n : px->remain;
        px->remain -= k;
        return (ssize_t)k;
    }
    const char *b = p, *end = p + n;
    while (p < end) {
        switch (px->ck) {
        case CK_SIZE: {
            int h = hexval(*p);
            if (h >= 0) {
                if (px->remain > (INT64_MAX >> 4))
                    return -1;
                px->remain = px->remain * 16 + h;
                px->ck_digits = true;
            } else if (*p == ';' || *p == ' ' || *p == '\t')
                px->ck = CK_EXT;
            else if (*p == '\n') {
                if (!px->ck_digits)
                    return -1;
                px->ck = px->remain ? CK_DATA : CK_TRAILER;
                px->ck_line = 0;
            } else if (*p != '\r')
                return -1;
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
                return -1;
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
            return p - b;
        }
    }
    return p - b;
}

static bool body_done(const struct sw__serve_px *px)
{
    return px->chunked ? px->ck == CK_DONE : px->remain == 0;
}

static void finish(struct sw__serve_px *px, bool reuse)
{
    struct sw__serve *sv = px->sv;
    upstream_done(px, reuse);
    ep_done(px);
    /* px goes first: with nothing left to write (the relay sends straight to the socket) the
     * reply's end completes at once, and a `Connection: close` client's connection is freed
     * inside evhttp_send_reply_end, close callback and all */
    struct evhttp_request *req = px->req;
    if (px->cconn)
        evhttp_connection_set_closecb(px->cconn, NULL, NULL);
    px->cconn = NULL;
    px->req = NULL;
    sw__serve_px_free(px);
    evhttp_send_reply_end(req);
    sw__serve_kick(sv);
}

static void connect_to(struct sw__serve_px *px, int i, bool fresh);

/* Failed before the first byte: another replica, else the client's 502. A pooled connection the
 * engine had closed is not a failure: the request goes again on a new one. */
static void failed_early(struct sw__serve_px *px, const char *what)
{
    struct sw__serve *sv = px->sv;
    struct sw__serve_model *m = &sv->models[px->model];
    struct sw__serve_ep *x = &sv->eps[px->ep];
    bool stale = px->pooled && !px->retry && px->ustate == 0 &&
                 (!px->uhead || !evbuffer_get_length(px->uhead));
    upstream_close(px, false);
    if (stale) {
        connect_to(px, px->ep, true);
        return;
    }
    ep_done(px);
    px->tried[px->ep] = true;
    if (!px->retry && (!x->can_stop || x->unit)) {
        /* no answer from one that runs outside serve: it is gone until it is seen again; a unit
         * on an ssh host until a request starts it again (systemctl start: its proofs) */
        x->state = SW_SERVE_STOPPED;
        sw__serve_pool_close(sv, px->ep);
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
    upstream_done(px, false);
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
        finish(px, false);
        return;
    }
    upstream_done(px, false);
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
    int code = 0, minor = 0;
    char sl[64] = ""; /* the status line's start, terminated: the head is not */
    if (h)
        memcpy(sl, h, hl < sizeof(sl) - 1 ? hl : sizeof(sl) - 1);
    if (!h || sscanf(sl, "HTTP/1.%1d %3d", &minor, &code) != 2 || code < 100) {
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
    /* the connection may serve the next request: HTTP/1.1, framed, and not closed by the engine */
    const char *cn = header(h, end, "Connection", &n);
    px->keep = px->keep && minor >= 1 && px->remain != -1 &&
               !(cn && n == 5 && !strncasecmp(cn, "close", 5));
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
    /* (a chunked body has no Content-Length: libevent writes `Transfer-Encoding: chunked` itself
     * for an HTTP/1.1 client; adding it here too sent the header twice) */
    evhttp_send_reply_start(px->req, code, reason);
    if (px->raw)
        px->req->chunked = 0;
    px->cout = client_out(px);
    struct bufferevent *cb = px->cconn ? evhttp_connection_get_bufferevent(px->cconn) : NULL;
    px->cfd = cb ? bufferevent_getfd(cb) : -1;
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

/* The client's output drained below the low mark: read the engine again. */
static void on_drain(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
    struct sw__serve_px *px = arg;
    if (!px->paused || !info->n_deleted || evbuffer_get_length(b) > OUT_LOW)
        return;
    px->paused = false;
    evbuffer_cb_set_flags(b, px->drain, 0);
    if (px->uev)
        event_add(px->uev, NULL);
}

/* n bytes of the body to the client: straight to its socket when nothing waits before them,
 * else after what waits (libevent writes it); above the high mark the engine is not read. */
static void to_client(struct sw__serve_px *px, const char *p, size_t n)
{
    if (!px->raw) { /* libevent frames it (an HTTP/1.0 client, or a body ended by the close) */
        struct evbuffer *b = evbuffer_new();
        if (b) {
            evbuffer_add(b, p, n);
            evhttp_send_reply_chunk(px->req, b);
            evbuffer_free(b);
        }
    } else {
        struct evbuffer *o = px->cout; /* the client's output and socket, found at the head */
        if (!o)
            return;
        size_t done = 0;
        if (!evbuffer_get_length(o)) {
            ssize_t w = send(px->cfd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0)
                done = (size_t)w;
        }
        if (done == n) /* all in the socket: nothing waits, no mark to check */
            return;
        /* the socket is full (or failed: libevent's write will say so) */
        evbuffer_add(o, p + done, n - done);
    }
    struct evbuffer *o = client_out(px);
    if (o && evbuffer_get_length(o) > OUT_HIGH && px->uev) {
        if (!px->drain)
            px->drain = evbuffer_add_cb(o, on_drain, px);
        else
            evbuffer_cb_set_flags(o, px->drain, EVBUFFER_CB_ENABLED);
        if (px->drain) {
            px->paused = true;
            event_del(px->uev);
        }
    }
}

/* A read of the body: its bytes to the client, then finished or failed when the framing says. */
static bool relay(struct sw__serve_px *px, const char *p, size_t n)
{
    struct sw__serve *sv = px->sv;
    if (!px->first) {
        px->first = true;
        sw__serve_enter(sv);
        sw__serve_hist_add(&sv->models[px->model].ttft,
                           (double)(sw_now_ns() - px->t_arrive_ns) / 1e9);
        sw__serve_leave(sv);
    }
    ssize_t k = track(px, p, n);
    size_t body = k < 0 ? n : (size_t)k;
    if (px->stream) { /* this loop's counter: no lock a chunk */
        uint64_t *t = &px->lp->tokens[px->model];
        __atomic_store_n(t, *t + count_events(p, body), __ATOMIC_RELAXED);
    }
    to_client(px, p, body);
    if (k >= 0 && !body_done(px))
        return true;
    sw__serve_enter(sv);
    if (k < 0)
        failed_midstream(px);
    else
        finish(px, body == n); /* nothing after the end: the connection can serve again */
    sw__serve_leave(sv);
    return false;
}

/* The engine closed (eof) or failed: the body's end when it was delimited by the close. */
static void upstream_ended(struct sw__serve_px *px, bool eof)
{
    if (!px->ustate)
        failed_early(px, eof ? "closed" : "no answer");
    else if (body_done(px) || (!px->chunked && px->remain < 0 && eof))
        finish(px, false);
    else
        failed_midstream(px);
}

static bool head_read(struct sw__serve_px *px, size_t r);

/* The engine's socket is readable: one read (level-triggered: what is left is reported again;
 * edge-triggered was tried and dropped: an engine's reset that came with its last bytes gave no
 * later edge, and libevent masks the hang-up out of a read event, docs/serve.md). */
static void on_readable(struct sw__serve_px *px)
{
    ssize_t r;
    do
        r = read(px->ufd, g_rd, sizeof(g_rd));
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    struct sw__serve *sv = px->sv;
    if (r <= 0) {
        sw__serve_enter(sv);
        upstream_ended(px, r == 0);
        sw__serve_leave(sv);
        return;
    }
    if (px->ustate) {
        relay(px, g_rd, (size_t)r);
        return;
    }
    sw__serve_enter(sv); /* the head: counted, maybe retried elsewhere */
    head_read(px, (size_t)r);
    sw__serve_leave(sv);
}

/* r bytes of the engine's head (and maybe the body's first) in g_rd; under mu. false: px is
 * done with this connection (answered, retried on another, or finished). */
static bool head_read(struct sw__serve_px *px, size_t r)
{
    if (!px->uhead)
        px->uhead = evbuffer_new();
    if (!px->uhead || evbuffer_add(px->uhead, g_rd, r)) {
        failed_early(px, "out of memory");
        return false;
    }
    struct evbuffer_ptr e = evbuffer_search(px->uhead, "\r\n\r\n", 4, NULL);
    if (e.pos < 0) {
        if (evbuffer_get_length(px->uhead) <= HEAD_MAX)
            return true;
        failed_early(px, "a head past 64 KiB");
        return false;
    }
    if (!on_head(px, px->uhead, (size_t)e.pos + 4))
        return false;
    size_t n = evbuffer_get_length(px->uhead);
    if (!n) {
        if (!body_done(px))
            return true;
        finish(px, true); /* an empty body */
        return false;
    }
    /* the body's first bytes came with the head: relayed from a copy (the head's buffer goes) */
    char *rest = n <= sizeof(g_rd) ? g_rd : NULL;
    if (!rest || evbuffer_remove(px->uhead, rest, n) != (int)n) {
        failed_midstream(px);
        return false;
    }
    return relay(px, rest, n);
}

static void on_upstream(evutil_socket_t fd, short what, void *arg);

/* The request (head, then body) to the engine, as the socket takes it. */
static void on_writable(struct sw__serve_px *px)
{
    size_t total = px->ureq_len + px->body_len;
    while (px->usent < total) {
        struct iovec v[2];
        int k = 0;
        if (px->usent < px->ureq_len)
            v[k++] = (struct iovec){px->ureq + px->usent, px->ureq_len - px->usent};
        size_t bo = px->usent > px->ureq_len ? px->usent - px->ureq_len : 0;
        if (px->body_len > bo)
            v[k++] = (struct iovec){px->body + bo, px->body_len - bo};
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)k};
        ssize_t w = sendmsg(px->ufd, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0) {
            failed_early(px, "no answer");
            return;
        }
        px->usent += (size_t)w;
    }
    /* all sent: from now on the connection is only read */
    event_del(px->uev);
    event_assign(px->uev, px->lp->base, px->ufd, EV_READ | EV_PERSIST, on_upstream, px);
    if (event_add(px->uev, NULL))
        failed_early(px, "no event");
}

static void on_upstream(evutil_socket_t fd, short what, void *arg)
{
    struct sw__serve_px *px = arg;
    (void)fd;
    if (px->usent < px->ureq_len + px->body_len) {
        if (what & EV_WRITE) {
            struct sw__serve *sv = px->sv;
            sw__serve_enter(sv);
            on_writable(px);
            sw__serve_leave(sv);
        }
        return;
    }
    on_readable(px);
}

/* A new non-blocking connection to x's address (TCP), or -1 and why. */
static int connect_tcp(const struct sw__serve_ep *x, const char **why)
{
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    char hp[300];
    snprintf(hp, sizeof(hp), strchr(x->host, ':') ? "[%s]:%u" : "%s:%u", x->host, x->port);
    if (evutil_parse_sockaddr_port(hp, (struct sockaddr *)&ss, &sl)) {
        *why = "not a numeric address";
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *why = "no socket";
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&ss, (socklen_t)sl) && errno != EINPROGRESS) {
        close(fd);
        *why = "no answer";
        return -1;
    }
    return fd;
}

/* A new non-blocking connection to the unix socket of x's forward (host/route: the host's ssh
 * master takes it to the engine on the host's loopback), or -1. */
static int connect_unix(const struct sw__serve_ep *x)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strnlen(x->client.route.unix_socket, sizeof(x->client.route.unix_socket));
    if (n >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, x->client.route.unix_socket, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Through the forward; when nothing listens there (the ssh master went: ControlPersist ended it
 * after a quiet minute, or it died), the forward is asked again of a master brought back
 * (sw_host_route_refresh, bounded by 10 s, under serve's lock: docs/serve.md; after a failure
 * not again for 10 s) and tried once more. -1 and why when neither connects. */
static int connect_routed(struct sw__serve *sv, struct sw__serve_ep *x, const char **why)
{
    int fd = connect_unix(x);
    if (fd >= 0)
        return fd;
    struct sw_err e;
    sw_err_clear(&e);
    uint64_t t0 = sw_now_ns();
    if (x->refresh_failed_ns && t0 - x->refresh_failed_ns < 10000000000ull) {
        *why = "its host's forward is gone (asked again at most every 10 s)";
        return -1; /* a host that does not answer holds the loops once per 10 s, not per request */
    }
    if (sw_host_route_refresh(&x->client.route, 10000, &e)) {
        char m[600];
        x->refresh_failed_ns = sw_now_ns();
        sw__serve_logf(sv, "%s: its forward is gone and could not be opened again: %s", x->ep->name,
                       sw_err_format(&e, m, sizeof(m)));
        *why = "its host's forward is gone";
        return -1;
    }
    x->refresh_failed_ns = 0;
    x->refreshes++;
    sw__serve_logf(sv,
                   "%s: its forward was gone (the ssh master had ended): opened again in %.2f s",
                   x->ep->name, (double)(sw_now_ns() - t0) / 1e9);
    fd = connect_unix(x);
    if (fd < 0)
        *why = "no answer through its host's forward";
    return fd;
}

/* A connection to endpoint i: one from its pool unless `fresh` (or none is left alive), else a
 * new one; the request goes as soon as the socket takes it. */
static void connect_to(struct sw__serve_px *px, int i, bool fresh)
{
    struct sw__serve *sv = px->sv;
    struct sw__serve_ep *x = &sv->eps[i];
    struct sw__serve_loop *lp = px->lp;
    px->ufd = -1;
    px->pooled = false;
    px->usent = 0;
    while (!fresh && lp->n_pool[i] > 0) {
        int fd = lp->pool[i][--lp->n_pool[i]];
        char c;
        ssize_t r = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* open and quiet */
            px->ufd = fd;
            px->pooled = true;
            break;
        }
        close(fd); /* closed by the engine, or bytes nobody asked for */
    }
    if (px->ufd < 0) {
        const char *why = NULL;
        px->ufd = x->routed ? connect_routed(px->sv, x, &why) : connect_tcp(x, &why);
        if (px->ufd < 0) {
            failed_early(px, why);
            return;
        }
    }
    px->uev = event_new(lp->base, px->ufd, EV_WRITE | EV_PERSIST, on_upstream, px);
    if (!px->uev) {
        close(px->ufd);
        px->ufd = -1;
        failed_early(px, "out of memory");
        return;
    }
    if (event_add(px->uev, NULL)) {
        failed_early(px, "no event");
        return;
    }
    /* a pooled (or already connected) socket takes it at once; px may be retried or answered
     * in there: nothing of it is touched after */
    on_writable(px);
}

void sw__serve_forward(struct sw__serve_px *px, int i)
{
    struct sw__serve_ep *x = &px->sv->eps[i];
    x->inflight++;
    x->last_ns = sw_now_ns();
    sw__serve_forward_reserved(px, i);
}

void sw__serve_forward_reserved(struct sw__serve_px *px, int i)
{
    struct sw__serve_ep *x = &px->sv->eps[i];
    px->ep = i;
    px->first = false;
    px->ustate = 0;
    px->t_sent_ns = sw_now_ns();
    char hp[300];
    snprintf(hp, sizeof(hp), strchr(x->host, ':') ? "[%s]:%u" : "%s:%u", x->host, x->port);
    const char *acc = evhttp_find_header(evhttp_request_get_input_headers(px->req), "Accept");
    bool v11 = px->req->minor >= 1;
    px->keep = v11; /* an HTTP/1.0 client's answer is ended by the close: never pooled */
    struct sw_buf b;
    sw_buf_init(&b, HEAD_MAX);
    int rc = sw_buf_printf(&b,
                           "POST %s HTTP/1.%d\r\nHost: %s\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\nConnection: %s\r\n",
                           px->path, v11 ? 1 : 0, hp, px->body_len, v11 ? "keep-alive" : "close");
    if (!rc && acc)
        rc = sw_buf_printf(&b, "Accept: %s\r\n", acc);
    if (!rc && x->client.api_key)
        rc = sw_buf_printf(&b, "Authorization: Bearer %s\r\n", x->client.api_key);
    if (!rc)
        rc = sw_buf_puts(&b, "\r\n");
    sw_free(px->ureq);
    px->ureq_len = b.len;
    px->ureq = rc ? NULL : sw_buf_steal(&b);
    sw_buf_free(&b);
    if (!px->ureq) {
        px->ufd = -1;
        failed_early(px, rc == SW_ERANGE ? "a head past 64 KiB" : "out of memory");
        return;
    }
    connect_to(px, i, false);
}

void sw__serve_cancel(struct sw__serve_px *px)
{
    if (!px->uev) {
        upstream_done(px, false);
        return;
    }
    struct sw__serve_model *m = &px->sv->models[px->model];
    m->cancelled++;
    sw__serve_logf(px->sv, "%s: the client went away: its request to %s is cancelled", m->name,
                   px->sv->eps[px->ep].ep->name);
    /* the engine sees the close and cancels */
    upstream_done(px, false);
    ep_done(px);
}
