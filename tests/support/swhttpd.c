/*
 * swhttpd: the scripted test HTTP server (see swhttpd.h). One acceptor thread and one thread per
 * connection with blocking sockets; every wait polls in short slices so swh_stop() ends it fast.
 *
 * What it deliberately does not do: TLS, chunked request bodies, HTTP/2, anything beyond what a
 * test needs to make a client see a particular sequence of bytes and silences.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swhttpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SWH_HEAD_MAX   (64u * 1024u)
#define SWH_BODY_MAX   (64u * 1024u * 1024u)
#define SWH_RECORD_MAX 4096u
#define SWH_MIN(a, b)  ((a) < (b) ? (a) : (b))

struct script {
    struct swh_step *steps;
    size_t n;
};

struct route {
    char method[16]; /* "" = any */
    char path[1024];
    struct script *scripts;
    size_t nscripts;
    unsigned hits;
    struct route *next;
};

struct conn {
    struct swh *s;
    int fd;
    unsigned id;
    pthread_t th;
    struct conn *next;
};

struct swh {
    int lfd;
    int port;
    pthread_t acceptor;
    pthread_mutex_t mu;
    atomic_bool stop;
    struct route *routes;
    struct conn *conns;
    unsigned nconns;
    struct swh_request *reqs;
    size_t nreqs;
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "swhttpd: out of memory\n");
        abort();
    }
    return p;
}

static void *xmemdup(const void *p, size_t n)
{
    char *d = xmalloc(n + 1);
    if (n)
        memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

/* ---- configuration (test thread) ---- */

static struct route *find_route(struct swh *s, const char *method, const char *path, bool create)
{
    size_t plen = strcspn(path, "?");
    for (struct route *r = s->routes; r; r = r->next) {
        if (strlen(r->path) != plen || strncmp(r->path, path, plen))
            continue;
        if (create ? !strcmp(r->method, method ? method : "")
                   : (!r->method[0] || !strcmp(r->method, method)))
            return r;
    }
    if (!create)
        return NULL;
    struct route *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    snprintf(r->method, sizeof(r->method), "%s", method ? method : "");
    snprintf(r->path, sizeof(r->path), "%.*s", (int)plen, path);
    r->next = s->routes;
    s->routes = r;
    return r;
}

void swh_script(struct swh *s, const char *method, const char *path, const struct swh_step *steps)
{
    size_t n = 0;
    while (steps[n].op != SWH_END)
        n++;
    struct swh_step *cp = xmalloc((n + 1) * sizeof(*cp));
    for (size_t i = 0; i <= n; i++) {
        cp[i] = steps[i];
        if (steps[i].data) {
            size_t len = steps[i].len ? steps[i].len : strlen(steps[i].data);
            cp[i].data = xmemdup(steps[i].data, len);
            cp[i].len = len;
        }
    }
    pthread_mutex_lock(&s->mu);
    struct route *r = find_route(s, method, path, true);
    struct script *ns = realloc(r->scripts, (r->nscripts + 1) * sizeof(*ns));
    if (!ns)
        abort();
    r->scripts = ns;
    r->scripts[r->nscripts].steps = cp;
    r->scripts[r->nscripts].n = n;
    r->nscripts++;
    pthread_mutex_unlock(&s->mu);
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 422:
        return "Unprocessable Entity";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Status";
    }
}

void swh_reply(struct swh *s, const char *method, const char *path, int status, const char *ctype,
               const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    size_t cap = blen + 512;
    char *msg = xmalloc(cap);
    int h = snprintf(msg, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Server: swhttpd\r\n\r\n",
                     status, reason(status), ctype ? ctype : "application/json", blen);
    if (blen)
        memcpy(msg + h, body, blen);
    struct swh_step steps[] = {{.op = SWH_SEND, .data = msg, .len = (size_t)h + blen},
                               {.op = SWH_END}};
    swh_script(s, method, path, steps);
    free(msg);
}

static const char sse_head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";

#define SWH_TIM                                                                                    \
    "\"timings\":{\"cache_n\":0,\"prompt_n\":10,\"prompt_ms\":5,\"prompt_per_second\":2000,"       \
    "\"predicted_n\":%u}"

const char *const *swh_llama_stream(unsigned n)
{
    static char buf[10][512];
    static const char *ev[11];
    assert_true(n >= 1 && n <= 8);
    ev[0] = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    for (unsigned i = 1; i <= n; i++) {
        snprintf(buf[i], sizeof(buf[i]),
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%c\"}}]," SWH_TIM
                 "}\n\n",
                 'a' + (int)i - 1, i);
        ev[i] = buf[i];
    }
    snprintf(buf[n + 1], sizeof(buf[n + 1]),
             "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":%u,"
             "\"total_tokens\":%u}," SWH_TIM "}\n\ndata: [DONE]\n\n",
             n, 10 + n, n);
    ev[n + 1] = buf[n + 1];
    ev[n + 2] = NULL;
    return ev;
}

void swh_sse(struct swh *s, const char *path, const char *const *events, unsigned delay_ms)
{
    size_t n = 0;
    while (events[n])
        n++;
    struct swh_step *st = xmalloc((2 * n + 3) * sizeof(*st));
    size_t k = 0;
    st[k++] = (struct swh_step){.op = SWH_SEND, .data = sse_head};
    for (size_t i = 0; i < n; i++) {
        if (delay_ms)
            st[k++] = (struct swh_step){.op = SWH_SLEEP, .ms = delay_ms};
        st[k++] = (struct swh_step){.op = SWH_CHUNK, .data = events[i]};
    }
    st[k++] = (struct swh_step){.op = SWH_CHUNK_END};
    st[k] = (struct swh_step){.op = SWH_END};
    swh_script(s, "POST", path, st);
    free(st);
}

void swh_sse_file(struct swh *s, const char *path, const char *file, size_t chunk_bytes,
                  unsigned delay_ms)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        fail_msg("swhttpd: cannot open %s", file);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xmalloc(len > 0 ? (size_t)len : 1);
    if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)
        fail_msg("swhttpd: cannot read %s", file);
    fclose(f);
    size_t piece = chunk_bytes ? chunk_bytes : (size_t)(len > 0 ? len : 1);
    size_t npieces = len > 0 ? ((size_t)len + piece - 1) / piece : 0;
    struct swh_step *st = xmalloc((2 * npieces + 3) * sizeof(*st));
    size_t k = 0;
    st[k++] = (struct swh_step){.op = SWH_SEND, .data = sse_head};
    for (size_t i = 0; i < npieces; i++) {
        size_t off = i * piece;
        size_t l = SWH_MIN(piece, (size_t)len - off);
        if (delay_ms && i)
            st[k++] = (struct swh_step){.op = SWH_SLEEP, .ms = delay_ms};
        st[k++] = (struct swh_step){.op = SWH_CHUNK, .data = buf + off, .len = l};
    }
    st[k++] = (struct swh_step){.op = SWH_CHUNK_END};
    st[k] = (struct swh_step){.op = SWH_END};
    swh_script(s, "POST", path, st);
    free(st);
    free(buf);
}

/* ---- serving (connection threads) ---- */

static bool stopping(struct swh *s)
{
    return atomic_load(&s->stop);
}

/* Sleep ms in slices; false when the server stops meanwhile. */
static bool nap(struct swh *s, unsigned ms)
{
    while (ms > 0 && !stopping(s)) {
        unsigned slice = ms < 10 ? ms : 10;
        struct timespec ts = {0, (long)slice * 1000000L};
        nanosleep(&ts, NULL);
        ms -= slice;
    }
    return !stopping(s);
}

static bool send_all(struct swh *s, int fd, const char *p, size_t n)
{
    while (n > 0) {
        if (stopping(s))
            return false;
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Read more bytes into buf; 1 got some, 0 peer closed, -1 error or stop. */
static int read_more(struct swh *s, int fd, char *buf, size_t *len, size_t cap)
{
    for (;;) {
        if (stopping(s))
            return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, 50);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        ssize_t n = recv(fd, buf + *len, cap - *len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? 0 : -1;
        *len += (size_t)n;
        return 1;
    }
}

static const char *find_header(const char *h, size_t hlen, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *p = h, *end = h + hlen;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - p) > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol + 1;
    }
    return NULL;
}

const char *swh_request_header(const struct swh_request *r, const char *name, char *out, size_t n)
{
    size_t vlen = 0;
    const char *v = find_header(r->headers, r->headers_len, name, &vlen);
    if (!v)
        return NULL;
    snprintf(out, n, "%.*s", (int)vlen, v);
    return out;
}

static void record(struct swh *s, const struct swh_request *rq)
{
    pthread_mutex_lock(&s->mu);
    if (s->nreqs < SWH_RECORD_MAX) {
        struct swh_request *nr = realloc(s->reqs, (s->nreqs + 1) * sizeof(*nr));
        if (!nr)
            abort();
        s->reqs = nr;
        struct swh_request *c = &s->reqs[s->nreqs++];
        *c = *rq;
        c->headers = xmemdup(rq->headers, rq->headers_len);
        c->body = xmemdup(rq->body, rq->body_len);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Pick the script for this request (and count the hit). */
static const struct script *pick(struct swh *s, const struct swh_request *rq)
{
    const struct script *sc = NULL;
    pthread_mutex_lock(&s->mu);
    struct route *r = find_route(s, rq->method, rq->path, false);
    if (r && r->nscripts) {
        size_t i = r->hits < r->nscripts ? r->hits : r->nscripts - 1;
        sc = &r->scripts[i];
        r->hits++;
    }
    pthread_mutex_unlock(&s->mu);
    return sc;
}

/* Abort with a TCP RST: linger 0, then close now (the fd is gone for swh_stop too). */
static void rst_close(struct conn *c)
{
    struct linger lg = {1, 0};
    pthread_mutex_lock(&c->s->mu);
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(c->fd);
    c->fd = -1;
    pthread_mutex_unlock(&c->s->mu);
}

/* Run a script; false when the connection must end. */
static bool run_script(struct swh *s, struct conn *c, const struct script *sc,
                       const struct swh_request *rq)
{
    int fd = c->fd;
    char hdr[32];
    for (size_t i = 0; i < sc->n; i++) {
        const struct swh_step *st = &sc->steps[i];
        switch (st->op) {
        case SWH_SEND:
            if (!send_all(s, fd, st->data, st->len))
                return false;
            break;
        case SWH_REPEAT:
            for (size_t k = 0; k < st->count; k++)
                if (!send_all(s, fd, st->data, st->len))
                    return false;
            break;
        case SWH_CHUNK: {
            int h = snprintf(hdr, sizeof(hdr), "%zx\r\n", st->len);
            if (!send_all(s, fd, hdr, (size_t)h) || !send_all(s, fd, st->data, st->len) ||
                !send_all(s, fd, "\r\n", 2))
                return false;
            break;
        }
        case SWH_CHUNK_END:
            if (!send_all(s, fd, "0\r\n\r\n", 5))
                return false;
            break;
        case SWH_SLEEP:
            if (!nap(s, st->ms))
                return false;
            break;
        case SWH_STALL:
            for (;;) {
                if (stopping(s))
                    return false;
                struct pollfd pf = {fd, POLLIN, 0};
                int r = poll(&pf, 1, 50);
                if (r > 0) {
                    char junk[4096];
                    ssize_t n = recv(fd, junk, sizeof(junk), 0);
                    if (n <= 0)
                        return false; /* the client went away */
                }
            }
        case SWH_RESET:
            rst_close(c);
            return false;
        case SWH_CLOSE:
            shutdown(fd, SHUT_RDWR);
            return false;
        case SWH_CALL:
            if (st->fn(st->ud, fd, rq))
                return false;
            break;
        case SWH_END:
            return true;
        }
    }
    return true;
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct swh *s = c->s;
    size_t cap = SWH_HEAD_MAX;
    char *buf = xmalloc(cap + 1);
    size_t len = 0;
    for (;;) {
        /* headers */
        char *eoh = NULL;
        while (!(eoh = len >= 4 ? memmem(buf, len, "\r\n\r\n", 4) : NULL)) {
            if (len >= SWH_HEAD_MAX)
                goto done;
            if (read_more(s, c->fd, buf, &len, SWH_HEAD_MAX) <= 0)
                goto done;
        }
        struct swh_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.conn = c->id;
        size_t head_len = (size_t)(eoh - buf) + 4;
        const char *eol = memchr(buf, '\n', head_len);
        char line[4096];
        snprintf(line, sizeof(line), "%.*s", (int)(eol - buf), buf);
        char *sp1 = strchr(line, ' ');
        char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp1 || !sp2)
            goto done;
        *sp1 = *sp2 = '\0';
        snprintf(rq.method, sizeof(rq.method), "%s", line);
        snprintf(rq.path, sizeof(rq.path), "%s", sp1 + 1);
        rq.headers = (char *)eol + 1;
        rq.headers_len = head_len - (size_t)(eol + 1 - buf);
        size_t vlen = 0;
        const char *cl = find_header(rq.headers, rq.headers_len, "Content-Length", &vlen);
        size_t blen = cl ? strtoul(cl, NULL, 10) : 0;
        if (blen > SWH_BODY_MAX)
            goto done;
        char *body = xmalloc(blen + 1);
        size_t have = SWH_MIN(blen, len - head_len);
        memcpy(body, buf + head_len, have);
        size_t used = head_len + have;
        while (have < blen) {
            if (stopping(s)) {
                free(body);
                goto done;
            }
            struct pollfd pf = {c->fd, POLLIN, 0};
            if (poll(&pf, 1, 50) <= 0)
                continue;
            ssize_t n = recv(c->fd, body + have, blen - have, 0);
            if (n <= 0) {
                free(body);
                goto done;
            }
            have += (size_t)n;
        }
        body[blen] = '\0';
        rq.body = body;
        rq.body_len = blen;
        bool close_after = false;
        const char *conn_h = find_header(rq.headers, rq.headers_len, "Connection", &vlen);
        if (conn_h && vlen == 5 && !strncasecmp(conn_h, "close", 5))
            close_after = true;
        record(s, &rq);
        const struct script *sc = pick(s, &rq);
        bool keep;
        if (sc) {
            keep = run_script(s, c, sc, &rq);
        } else {
            static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                                     "Content-Length: 22\r\n\r\n{\"error\":\"no route\"}\r\n";
            keep = send_all(s, c->fd, nf, sizeof(nf) - 1);
        }
        free(body);
        /* keep whatever the client already sent after this request */
        memmove(buf, buf + used, len - used);
        len -= used;
        if (!keep || close_after)
            break;
    }
done:
    free(buf);
    pthread_mutex_lock(&s->mu);
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct swh *s = arg;
    while (!stopping(s)) {
        struct pollfd pf = {s->lfd, POLLIN, 0};
        int r = poll(&pf, 1, 50);
        if (r <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = calloc(1, sizeof(*c));
        if (!c)
            abort();
        c->s = s;
        c->fd = fd;
        pthread_mutex_lock(&s->mu);
        c->id = ++s->nconns;
        c->next = s->conns;
        s->conns = c;
        pthread_mutex_unlock(&s->mu);
        if (pthread_create(&c->th, NULL, conn_main, c) != 0)
            abort();
    }
    return NULL;
}

struct swh *swh_start(void)
{
    struct swh *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s->lfd, 128), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->acceptor, NULL, accept_main, s), 0);
    return s;
}

void swh_stop(struct swh *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, true);
    pthread_join(s->acceptor, NULL);
    close(s->lfd);
    pthread_mutex_lock(&s->mu);
    struct conn *c = s->conns;
    s->conns = NULL;
    pthread_mutex_unlock(&s->mu);
    while (c) {
        struct conn *next = c->next;
        pthread_mutex_lock(&s->mu);
        if (c->fd >= 0)
            shutdown(c->fd, SHUT_RDWR);
        pthread_mutex_unlock(&s->mu);
        pthread_join(c->th, NULL);
        if (c->fd >= 0)
            close(c->fd);
        free(c);
        c = next;
    }
    for (struct route *r = s->routes, *rn; r; r = rn) {
        rn = r->next;
        for (size_t i = 0; i < r->nscripts; i++) {
            for (size_t k = 0; k < r->scripts[i].n; k++)
                free((void *)r->scripts[i].steps[k].data);
            free(r->scripts[i].steps);
        }
        free(r->scripts);
        free(r);
    }
    for (size_t i = 0; i < s->nreqs; i++)
        swh_request_free(&s->reqs[i]);
    free(s->reqs);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int swh_port(const struct swh *s)
{
    return s->port;
}

const char *swh_url(const struct swh *s, const char *path)
{
    static char rot[8][2200];
    static atomic_int i;
    char *b = rot[atomic_fetch_add(&i, 1) % 8];
    snprintf(b, sizeof(rot[0]), "http://127.0.0.1:%d%s", s->port, path);
    return b;
}

unsigned swh_hits(struct swh *s, const char *path)
{
    unsigned n = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nreqs; i++) {
        size_t plen = strcspn(s->reqs[i].path, "?");
        if (!path || (strlen(path) == plen && !strncmp(path, s->reqs[i].path, plen)))
            n++;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

unsigned swh_connections(struct swh *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = s->nconns;
    pthread_mutex_unlock(&s->mu);
    return n;
}

bool swh_last_request(struct swh *s, const char *path, struct swh_request *out)
{
    bool found = false;
    pthread_mutex_lock(&s->mu);
    for (size_t i = s->nreqs; i-- > 0;) {
        size_t plen = strcspn(s->reqs[i].path, "?");
        if (path && !(strlen(path) == plen && !strncmp(path, s->reqs[i].path, plen)))
            continue;
        *out = s->reqs[i];
        out->headers = xmemdup(s->reqs[i].headers, s->reqs[i].headers_len);
        out->body = xmemdup(s->reqs[i].body, s->reqs[i].body_len);
        found = true;
        break;
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

void swh_request_free(struct swh_request *r)
{
    if (!r)
        return;
    free(r->headers);
    free(r->body);
    r->headers = r->body = NULL;
}
