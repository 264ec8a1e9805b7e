/*
 * sim/guard: the bound on a request's head, watched as the bytes arrive.
 *
 * libevent 2.1 reads a request head with no limit by default and rescans the whole buffer for a
 * line end at every read: a 96 MiB header line took 355 MB and ~50 s of CPU. Its own limit
 * (evhttp_set_max_headers_size) answers with an HTML page and no word of the limit. So every
 * connection's socket bufferevent (evhttp_set_bevcb) carries a callback on its INPUT buffer that
 * walks each read's new bytes while a head is under way: at most SW__SIM_HEAD_MAX bytes and
 * SW__SIM_HEAD_LINES header lines (docs/sim.md). Past either, the guard answers 431 Request
 * Header Fields Too Large itself, naming both limits, shuts the connection's sending side, and
 * drops what the client still sends (evhttp, which never sees a whole head, frees the connection
 * when the client closes, as any other). After a head the guard counts nothing (the body is
 * libevent's, bounded by its max body size) until the request is dispatched
 * (sw__sim_guard_rearm), when the next head begins.
 *
 * It watches the input side only: what evhttp writes goes out through the socket's own
 * bufferevent, untouched (a filter bufferevent in front of evhttp carried every streamed token
 * through two more callbacks and a write of its own, and halved the firehose's tokens per second;
 * libevent 2.1's filters also lose a Connection: close reply).
 *
 * The state of a connection's head lives in a table of the sim keyed by its input buffer's
 * address, written when evhttp makes the bufferevent (so a buffer at a reused address starts
 * afresh) and read by the input callback. An entry outlives its connection (libevent says
 * nothing when it frees a bufferevent), which is harmless: it is found only through a live
 * buffer, whose own creation reset it. A full table leaves a new connection to libevent's own
 * limit, the backstop (set above this one).
 *
 * What it deliberately does not do: parse the body's framing. Bytes pipelined behind a request
 * in the read that ended it are scanned at dispatch.
 */
#include "sim_internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

enum { GUARD_HEAD = 0, GUARD_BODY, GUARD_REFUSED };

#define SLOTS  (1u << 14) /* connections tracked at once; a power of two */
#define PROBES 32u

struct sw__sim_guard {
    const struct evbuffer *in; /* the connection's input buffer; NULL: free */
    struct bufferevent *bev;   /* its bufferevent (valid while `in` is found live) */
    uint32_t head_bytes;       /* bytes of the head so far */
    uint32_t lines;            /* lines of it ended so far (the request line among them) */
    uint32_t line_len;         /* bytes of the line under way */
    uint8_t state;
    uint8_t cr; /* its last byte was '\r' */
};

static size_t slot_of(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return (size_t)(x & (SLOTS - 1));
}

/* The entry of input buffer `in`, NULL when it has none. */
static struct sw__sim_guard *find(struct sw_sim *s, const struct evbuffer *in)
{
    if (!s->guards)
        return NULL;
    size_t h = slot_of(in);
    for (size_t i = 0; i < PROBES; i++) {
        struct sw__sim_guard *g = &s->guards[(h + i) & (SLOTS - 1)];
        if (g->in == in)
            return g;
    }
    return NULL;
}

/* A fresh entry for a new connection's buffer: its own old one, else a free one, else the
 * first probed (a connection that entry tracked goes to libevent's backstop). */
static struct sw__sim_guard *claim(struct sw_sim *s, struct bufferevent *bev)
{
    const struct evbuffer *in = bufferevent_get_input(bev);
    size_t h = slot_of(in);
    struct sw__sim_guard *g = find(s, in);
    for (size_t i = 0; !g && i < PROBES; i++) {
        struct sw__sim_guard *c = &s->guards[(h + i) & (SLOTS - 1)];
        if (!c->in)
            g = c;
    }
    if (!g)
        g = &s->guards[h];
    memset(g, 0, sizeof(*g));
    g->in = in;
    g->bev = bev;
    return g;
}

/* Walk b[0..n) of the head: 1 when it ends there, -1 when a bound is passed, 0 when more is
 * needed. */
static int scan(struct sw__sim_guard *g, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g->head_bytes++;
        if (b[i] == '\n') {
            if (g->line_len == 0 || (g->line_len == 1 && g->cr))
                return 1;
            g->lines++;
            g->line_len = 0;
            g->cr = 0;
        } else {
            g->line_len++;
            g->cr = b[i] == '\r';
        }
        if (g->head_bytes > SW__SIM_HEAD_MAX || g->lines > 1 + SW__SIM_HEAD_LINES)
            return -1;
    }
    return 0;
}

/* Scan buf's bytes from `from` to its end, piece by piece (no copy). */
static int scan_from(struct sw__sim_guard *g, struct evbuffer *buf, size_t from)
{
    size_t len = evbuffer_get_length(buf);
    while (from < len) {
        struct evbuffer_ptr p;
        struct evbuffer_iovec v;
        if (evbuffer_ptr_set(buf, &p, from, EVBUFFER_PTR_SET) != 0 ||
            evbuffer_peek(buf, -1, &p, &v, 1) < 1 || !v.iov_len)
            return -1;
        size_t n = SW_MIN(v.iov_len, len - from);
        int r = scan(g, v.iov_base, n);
        if (r)
            return r;
        from += n;
    }
    return 0;
}

/* Past a bound: the 431 sent at once on the socket (nothing of evhttp's is waiting: it has not
 * seen a whole head), the sending side shut so the client reads it and then the end, and what is
 * held dropped. send(MSG_NOSIGNAL): a client already gone is no SIGPIPE. */
static void refuse(struct sw__sim_guard *g, struct evbuffer *in)
{
    g->state = GUARD_REFUSED;
    char body[300], msg[600];
    int nb = snprintf(body, sizeof(body),
                      "Request Header Fields Too Large: a request line and its headers are at "
                      "most %u bytes and %u header lines (slipway sim)\n",
                      SW__SIM_HEAD_MAX, SW__SIM_HEAD_LINES);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; "
                     "charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                     nb, body);
    evutil_socket_t fd = bufferevent_getfd(g->bev);
    if (fd >= 0) {
        (void)send(fd, msg, (size_t)SW_MIN(n, (int)sizeof(msg) - 1), MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
    }
    evbuffer_drain(in, evbuffer_get_length(in));
}

/* Bytes came into (or left) a connection's input: the new ones are its last n_added. */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
    struct sw_sim *s = arg;
    if (!info->n_added)
        return; /* evhttp consumed some: nothing new to count */
    struct sw__sim_guard *g = find(s, in);
    if (!g || g->state == GUARD_BODY)
        return;
    if (g->state == GUARD_REFUSED) {
        evbuffer_drain(in, evbuffer_get_length(in)); /* read and dropped, never kept */
        return;
    }
    size_t len = evbuffer_get_length(in);
    size_t from = len >= info->n_added ? len - info->n_added : 0;
    int r = scan_from(g, in, from);
    if (r > 0)
        g->state = GUARD_BODY;
    else if (r < 0)
        refuse(g, in);
}

/* evhttp's bufferevent for a new connection: a socket bufferevent with the guard on its input.
 * NULL (out of memory) lets evhttp make a plain one, bounded by libevent's own limit. */
static struct bufferevent *guard_new(struct event_base *base, void *arg)
{
    struct sw_sim *s = arg;
    struct bufferevent *b = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!b)
        return NULL;
    if (s->guards && evbuffer_add_cb(bufferevent_get_input(b), on_input, s))
        claim(s, b);
    return b;
}

int sw__sim_guard_init(struct sw_sim *s)
{
    s->guards = sw_calloc(SLOTS, sizeof(*s->guards));
    if (!s->guards)
        return SW_ENOMEM;
    evhttp_set_bevcb(s->http, guard_new, s);
    /* the backstop (a full table, a head pipelined behind a request): libevent's own error past
     * twice this bound */
    evhttp_set_max_headers_size(s->http, 2 * SW__SIM_HEAD_MAX);
    return 0;
}

void sw__sim_guard_free(struct sw_sim *s)
{
    sw_free(s->guards);
    s->guards = NULL;
}

void sw__sim_guard_rearm(struct sw_sim *s, struct evhttp_request *req)
{
    struct evhttp_connection *c = evhttp_request_get_connection(req);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    struct evbuffer *in = bev ? bufferevent_get_input(bev) : NULL;
    struct sw__sim_guard *g = in ? find(s, in) : NULL;
    if (!g || g->state == GUARD_REFUSED)
        return;
    g->state = GUARD_HEAD;
    g->head_bytes = g->lines = g->line_len = 0;
    g->cr = 0;
    /* bytes of the next request that came in the read that ended this one: they count (a head
     * they hold whole, or one past a bound, is libevent's to parse: its backstop decides) */
    if (scan_from(g, in, 0) != 0)
        g->state = GUARD_BODY;
}
