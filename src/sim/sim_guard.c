/*
 * sim/guard: the bound on a request's head, in front of libevent's HTTP parser.
 *
 * libevent 2.1 reads a request head with no limit by default and rescans the whole buffer for a
 * line end at every read: a 96 MiB header line took 355 MB and ~50 s of CPU. Its own limit
 * (evhttp_set_max_headers_size) answers 400 with an HTML page and no word of the limit. So each
 * connection's socket sits under a filter (evhttp_set_bevcb) that holds the bytes of a head
 * until its empty line: at most SW__SIM_HEAD_MAX bytes and SW__SIM_HEAD_LINES header lines
 * (docs/sim.md). Past either, the filter answers 431 Request Header Fields Too Large itself,
 * naming both limits, shuts the connection's sending side, and discards what the client still
 * sends until it closes (the connection then goes as any other; nothing of the head is kept).
 * After a head the filter passes everything (the body is libevent's, bounded by its max body
 * size) until the request is dispatched (sw__sim_guard_rearm), when the next head begins. What
 * evhttp writes goes to the socket from the guard itself (guard_out says why).
 *
 * What it deliberately does not do: parse the body's framing. Bytes pipelined behind a request
 * in the read that ended it are already libevent's: their head is bounded by libevent's own
 * limit (set to the same size: a 400).
 */
#include "sim_internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

enum { GUARD_HEAD = 0, GUARD_BODY, GUARD_REFUSED };

struct sw__sim_guard {
    struct sw__sim_guard *next, *prev; /* the sim's guards */
    struct sw_sim *sim;
    struct bufferevent *bev;   /* the filter: what evhttp holds */
    struct bufferevent *under; /* the socket's */
    int state;
    size_t head_bytes;   /* bytes of the head so far */
    size_t lines;        /* lines of it ended so far (the request line among them) */
    size_t line_len;     /* bytes of the line under way */
    bool cr;             /* its last byte was '\r' */
    size_t scanned;      /* bytes held in the socket's input already scanned */
    struct event *flush; /* writes the filter's output (below); made once the socket is set */
    bool pending;        /* flush is active or waits for the socket: a reference held */
    bool flushing;       /* inside flush: guard_out writes */
    bool failed;         /* a write failed: nothing more is written */
};

/* Walk b[0..n) of the head: 1 with *end (bytes up to and with the empty line) when it ends
 * there, -1 when a bound is passed, 0 when more is needed. */
static int scan(struct sw__sim_guard *g, const unsigned char *b, size_t n, size_t *end)
{
    for (size_t i = 0; i < n; i++) {
        g->head_bytes++;
        if (b[i] == '\n') {
            if (g->line_len == 0 || (g->line_len == 1 && g->cr)) {
                *end = i + 1;
                return 1;
            }
            g->lines++;
            g->line_len = 0;
            g->cr = false;
        } else {
            g->line_len++;
            g->cr = b[i] == '\r';
        }
        if (g->head_bytes > SW__SIM_HEAD_MAX || g->lines > 1 + SW__SIM_HEAD_LINES)
            return -1;
    }
    return 0;
}

/* Scan buf from byte `from` on; as scan(), *end counted from buf's start. */
static int scan_buffer(struct sw__sim_guard *g, struct evbuffer *buf, size_t from, size_t *end)
{
    size_t len = evbuffer_get_length(buf);
    while (from < len) {
        struct evbuffer_ptr p;
        struct evbuffer_iovec v;
        if (evbuffer_ptr_set(buf, &p, from, EVBUFFER_PTR_SET) != 0 ||
            evbuffer_peek(buf, -1, &p, &v, 1) < 1 || !v.iov_len)
            return -1;
        size_t n = SW_MIN(v.iov_len, len - from), at = 0;
        int r = scan(g, v.iov_base, n, &at);
        if (r == 1)
            *end = from + at;
        if (r)
            return r;
        from += n;
    }
    return 0;
}

/* Past a bound: the 431 sent at once (nothing of evhttp's is waiting: it counts a reply sent
 * only once the socket took it, guard_out), the sending side shut so the client reads it and
 * then the end, and what is held dropped. send(MSG_NOSIGNAL): a client already gone is no
 * SIGPIPE. */
static void refuse(struct sw__sim_guard *g, struct evbuffer *src)
{
    g->state = GUARD_REFUSED;
    evbuffer_drain(src, evbuffer_get_length(src));
    char body[300], msg[600];
    int nb = snprintf(body, sizeof(body),
                      "Request Header Fields Too Large: a request line and its headers are at "
                      "most %u bytes and %u header lines (slipway sim)\n",
                      SW__SIM_HEAD_MAX, SW__SIM_HEAD_LINES);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; "
                     "charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                     nb, body);
    evutil_socket_t fd = bufferevent_getfd(g->under);
    if (fd < 0)
        return;
    (void)send(fd, msg, (size_t)SW_MIN(n, (int)sizeof(msg) - 1), MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
}

static enum bufferevent_filter_result guard_in(struct evbuffer *src, struct evbuffer *dst,
                                               ev_ssize_t limit, enum bufferevent_flush_mode mode,
                                               void *ctx)
{
    struct sw__sim_guard *g = ctx;
    (void)mode;
    if (g->state == GUARD_REFUSED) {
        /* read and dropped, never kept; returning no data leaves libevent's timeout running */
        evbuffer_drain(src, evbuffer_get_length(src));
        return BEV_NEED_MORE;
    }
    if (g->state == GUARD_HEAD) {
        size_t end = 0;
        int r = scan_buffer(g, src, g->scanned, &end);
        if (r < 0) {
            refuse(g, src);
            return BEV_NEED_MORE;
        }
        if (r == 0) {
            g->scanned = evbuffer_get_length(src);
            return BEV_NEED_MORE; /* held until the head is whole */
        }
        g->state = GUARD_BODY;
        g->scanned = 0;
    }
    size_t n = evbuffer_get_length(src);
    if (limit >= 0)
        n = SW_MIN(n, (size_t)limit);
    if (!n)
        return BEV_NEED_MORE;
    return evbuffer_remove_buffer(src, dst, n) < 0 ? BEV_ERROR : BEV_OK;
}

/* Output. libevent 2.1's filter hands its output on when bytes are added while writing is
 * enabled, but evhttp adds a reply before it enables writing (evhttp_send: the header, then
 * evhttp_write_buffer) and enabling hands nothing on; evhttp counts a reply sent, and may close
 * the connection (Connection: close), once the filter's output is empty, although the socket's
 * bufferevent has not written it yet; and a filter's write callback (be_filter_writecb) holds no
 * reference while evhttp may free the connection inside it. So the filter's output is written by
 * the guard itself: an addition schedules `flush` (every addition of a loop's turn in one write,
 * as the socket's bufferevent did), which holds a reference on the filter while it writes, with
 * send(MSG_NOSIGNAL) (a client gone is an error, not SIGPIPE); what the socket does not take
 * waits in the filter's output and `flush` waits for the socket: the filter's output is empty
 * only once all of it was sent. */
static int write_out(struct evbuffer *src, evutil_socket_t fd)
{
    while (evbuffer_get_length(src)) {
        struct evbuffer_iovec v[16];
        int n = evbuffer_peek(src, -1, NULL, v, 16);
        struct msghdr m;
        memset(&m, 0, sizeof(m));
        m.msg_iov = (struct iovec *)v;
        m.msg_iovlen = (size_t)SW_MIN(n, 16);
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (w < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
        evbuffer_drain(src, (size_t)w);
    }
    return 0;
}

static enum bufferevent_filter_result guard_out(struct evbuffer *src, struct evbuffer *dst,
                                                ev_ssize_t limit, enum bufferevent_flush_mode mode,
                                                void *ctx)
{
    struct sw__sim_guard *g = ctx;
    (void)dst;
    (void)limit;
    (void)mode;
    evutil_socket_t fd = bufferevent_getfd(g->under);
    size_t before = evbuffer_get_length(src);
    if (!g->flushing || g->failed || fd < 0 || !before)
        return BEV_NEED_MORE;
    if (write_out(src, fd) != 0) {
        /* what the socket's bufferevent reports: evhttp fails the connection */
        g->failed = true;
        bufferevent_trigger_event(g->bev, BEV_EVENT_ERROR | BEV_EVENT_WRITING,
                                  BEV_TRIG_DEFER_CALLBACKS);
        return BEV_ERROR;
    }
    return evbuffer_get_length(src) < before ? BEV_OK : BEV_NEED_MORE;
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
    struct sw__sim_guard *g = arg;
    bufferevent_event_cb owner = NULL;
    (void)fd;
    (void)what;
    bufferevent_getcb(g->bev, NULL, NULL, &owner, NULL);
    if (owner && !g->failed) { /* evhttp still holds it (its free clears the callbacks) */
        g->flushing = true;
        bufferevent_flush(g->bev, EV_WRITE, BEV_NORMAL);
        g->flushing = false;
        bufferevent_getcb(g->bev, NULL, NULL, &owner, NULL);
        if (owner && !g->failed && evbuffer_get_length(bufferevent_get_output(g->bev)) &&
            (bufferevent_get_enabled(g->bev) & EV_WRITE) && event_add(g->flush, NULL) == 0)
            return; /* waits for the socket, the reference kept */
    }
    g->pending = false;
    bufferevent_decref(g->bev);
}

static void out_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct sw__sim_guard *g = arg;
    (void)buf;
    if (!info->n_added || g->pending)
        return;
    evutil_socket_t fd = bufferevent_getfd(g->under);
    if (!g->flush && fd >= 0)
        g->flush = event_new(bufferevent_get_base(g->bev), fd, EV_WRITE, flush_cb, g);
    if (!g->flush)
        return; /* out of memory: written by the next addition, or never */
    g->pending = true;
    bufferevent_incref(g->bev);
    event_active(g->flush, EV_WRITE, 1);
}

static void guard_free(void *ctx)
{
    struct sw__sim_guard *g = ctx;
    if (g->flush)
        event_free(g->flush);
    if (g->prev)
        g->prev->next = g->next;
    else
        g->sim->guards = g->next;
    if (g->next)
        g->next->prev = g->prev;
    sw_free(g);
}

/* evhttp's bufferevent for a new connection: the socket's under the guard. NULL (out of memory)
 * lets evhttp make a plain one, bounded by its own limit. The guard is freed with the filter
 * (guard_free, its context). */
static struct bufferevent *guard_new(struct event_base *base, void *arg)
{
    struct sw_sim *s = arg;
    struct sw__sim_guard *g = sw_calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->sim = s;
    g->next = s->guards;
    if (s->guards)
        s->guards->prev = g;
    s->guards = g;
    struct bufferevent *u = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct bufferevent *f =
        u ? bufferevent_filter_new(u, guard_in, guard_out, BEV_OPT_CLOSE_ON_FREE, guard_free, g)
          : NULL;
    if (!f) {
        if (u)
            bufferevent_free(u);
        guard_free(g);
        return NULL;
    }
    g->bev = f;
    g->under = u;
    if (!evbuffer_add_cb(bufferevent_get_output(f), out_added, g)) {
        bufferevent_free(f); /* and g with it (guard_free) */
        return NULL;
    }
    return f;
}

void sw__sim_guard_init(struct sw_sim *s)
{
    evhttp_set_bevcb(s->http, guard_new, s);
    evhttp_set_max_headers_size(s->http, SW__SIM_HEAD_MAX);
}

void sw__sim_guard_rearm(struct sw_sim *s, struct evhttp_request *req)
{
    struct evhttp_connection *c = evhttp_request_get_connection(req);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    struct sw__sim_guard *g = s->guards;
    while (g && g->bev != bev)
        g = g->next;
    if (!g || g->state == GUARD_REFUSED)
        return;
    g->state = GUARD_HEAD;
    g->head_bytes = g->lines = g->line_len = g->scanned = 0;
    g->cr = false;
    /* bytes of the next request that came in the read that ended this one are libevent's
     * already: they count, and a head they hold whole (or past a bound) is left to libevent */
    size_t end = 0;
    if (scan_buffer(g, bufferevent_get_input(bev), 0, &end) != 0)
        g->state = GUARD_BODY;
}

void sw__sim_guard_write_now(struct bufferevent *bev, evutil_socket_t fd)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    if (bufferevent_get_underlying(bev)) { /* a guarded connection: its filter holds it */
        write_out(out, fd);
        return;
    }
    /* a socket's bufferevent keeps its output's front frozen (only it drains it): thawed for
     * this one write */
    evbuffer_unfreeze(out, 1);
    evbuffer_write(out, fd);
    evbuffer_freeze(out, 1);
}
