/*
 * One HTTP transfer on a loop: builds the curl easy handle from a `struct sw_net_req`, receives
 * headers (bounded, parsed) and body (to on_data, to the SSE parser, or to a bounded buffer) with
 * the arrival time taken in curl's own callbacks, enforces the four deadlines with one libevent
 * timer per transfer, and turns curl's result into a classified, redacted error.
 *
 * The deadline timer is lazy: bytes arriving do not re-arm it; when it fires it recomputes the
 * nearest deadline from the latest byte time and sleeps again if none has passed. It is re-armed
 * at the two changes of state that can bring a deadline nearer (the connection is ready, the first
 * response byte came), because an idle deadline may come before the connect or first-byte one.
 *
 * What it deliberately does not do: retry, decode content, or log anything a request carried.
 */
#include "net_internal.h"

#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

static const char *const fail_names[] = {
    [SW_NET_OK] = "ok",
    [SW_NET_REFUSED] = "refused",
    [SW_NET_DNS] = "dns",
    [SW_NET_CONNECT] = "connect",
    [SW_NET_TIMEOUT_CONNECT] = "timeout_connect",
    [SW_NET_TIMEOUT_FIRST_BYTE] = "timeout_first_byte",
    [SW_NET_TIMEOUT_IDLE] = "timeout_idle",
    [SW_NET_TIMEOUT_TOTAL] = "timeout_total",
    [SW_NET_EMPTY] = "empty_reply",
    [SW_NET_RESET] = "reset",
    [SW_NET_TRUNCATED] = "truncated",
    [SW_NET_PROTOCOL] = "protocol",
    [SW_NET_TOO_BIG] = "too_big",
    [SW_NET_HTTP_STATUS] = "http_status",
    [SW_NET_CANCELLED] = "cancelled",
    [SW_NET_ABORTED] = "aborted",
    [SW_NET_OTHER] = "other",
};

const char *sw_net_fail_name(enum sw_net_fail f)
{
    if ((unsigned)f < SW_ARRAY_LEN(fail_names) && fail_names[f])
        return fail_names[f];
    return "unknown";
}

void sw_net_xfer_init(struct sw_net_xfer *x)
{
    memset(x, 0, sizeof(*x));
    sw_buf_init(&x->resp.body, SW_NET_BODY_MAX_DEFAULT);
}

static void free_headers(struct sw_net_resp *r)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        sw_free(r->headers[i].name);
        sw_free(r->headers[i].value);
    }
    sw_free(r->headers);
    r->headers = NULL;
    r->nheaders = 0;
}

void sw_net_resp_free(struct sw_net_resp *r)
{
    if (!r)
        return;
    free_headers(r);
    sw_buf_free(&r->body);
    memset(r, 0, sizeof(*r));
}

const char *sw_net_resp_header(const struct sw_net_resp *r, const char *name)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcasecmp(r->headers[i].name, name))
            return r->headers[i].value;
    return NULL;
}

/* Release what a transfer holds besides its response. */
static void release(struct sw_net_xfer *x)
{
    if (x->easy) {
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
    }
    if (x->slist) {
        curl_slist_free_all(x->slist);
        x->slist = NULL;
    }
    if (x->timer) {
        event_free(x->timer);
        x->timer = NULL;
    }
    if (x->sse_on) {
        sw_sse_close(&x->sse);
        x->sse_on = false;
    }
    sw_free(x->where);
    x->where = NULL;
}

void sw_net_xfer_close(struct sw_net_xfer *x)
{
    if (!x || x->state == SW_NET_RUNNING)
        return;
    release(x);
    sw_net_resp_free(&x->resp);
}

const char *sw_net_redact_url(const char *url, char *out, size_t n)
{
    if (!url) {
        snprintf(out, n, "(no url)");
        return out;
    }
    const char *p = strstr(url, "://");
    const char *host = p ? p + 3 : url;
    size_t hostlen = strcspn(host, "/?#");
    const char *at = memchr(host, '@', hostlen);
    const char *rest = at ? at + 1 : host;
    size_t pathlen = strcspn(rest, "?#");
    bool query = rest[pathlen] == '?';
    snprintf(out, n, "%.*s%.*s%s", (int)(host - url), url, (int)pathlen, rest, query ? "?..." : "");
    return out;
}

/* ---- completion ---- */

static void collect_info(struct sw_net_xfer *x)
{
    long v = 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &v) == CURLE_OK)
        x->resp.new_connections = v;
    v = 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_LOCAL_PORT, &v) == CURLE_OK)
        x->resp.local_port = v;
    v = 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_COUNT, &v) == CURLE_OK)
        x->resp.redirects = v;
}

/* The single way out of RUNNING: unhook from curl and the loop, then call on_done. */
static void finish(struct sw_net_xfer *x)
{
    struct sw_net_loop *l = x->loop;
    x->resp.t.done = sw_now_ns();
    collect_info(x);
    curl_multi_remove_handle(l->multi, x->easy);
    sw__net_loop_unlink(l, x);
    if (!x->resp.err.where[0] && x->where)
        snprintf(x->resp.err.where, sizeof(x->resp.err.where), "%s", x->where);
    char where[sizeof(x->resp.err.where)];
    memcpy(where, x->resp.err.where, sizeof(where));
    release(x);
    memcpy(x->resp.err.where, where, sizeof(where));
    x->state = SW_NET_DONE;
    x->loop = NULL;
    if (x->req.on_done)
        x->req.on_done(x->req.ud, x); /* x may be gone after this */
}

static void set_fail(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt,
                     va_list ap) SW_PRINTF(4, 0);
static void set_fail(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt,
                     va_list ap)
{
    x->resp.rc = rc;
    x->resp.fail = fail;
    char msg[sizeof(x->resp.err.msg)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    sw_err_set(&x->resp.err, rc, "%s", msg);
    if (x->where)
        snprintf(x->resp.err.where, sizeof(x->resp.err.where), "%s", x->where);
}

static void set_failf(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt, ...)
    SW_PRINTF(4, 5);
static void set_failf(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_fail(x, rc, fail, fmt, ap);
    va_end(ap);
}

void sw__net_xfer_fail(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt, ...)
{
    if (x->state != SW_NET_RUNNING)
        return;
    va_list ap;
    va_start(ap, fmt);
    set_fail(x, rc, fail, fmt, ap);
    va_end(ap);
    finish(x);
}

/* Remember why a callback stopped the transfer; curl then reports a write/abort error. */
static void abort_with(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt, ...)
    SW_PRINTF(4, 5);
static void abort_with(struct sw_net_xfer *x, int rc, enum sw_net_fail fail, const char *fmt, ...)
{
    if (x->abort_rc)
        return;
    va_list ap;
    va_start(ap, fmt);
    set_fail(x, rc, fail, fmt, ap);
    va_end(ap);
    x->abort_rc = rc;
    x->abort_fail = fail;
}

static void status_failure(struct sw_net_xfer *x)
{
    char sniff[160];
    sw_sniff(x->resp.body.data, x->resp.body.len, sniff, sizeof(sniff));
    set_failf(x, SW_EHTTP, SW_NET_HTTP_STATUS, "HTTP %ld; the body is %s", x->resp.status, sniff);
}

void sw__net_xfer_curl_done(struct sw_net_xfer *x, CURLcode res)
{
    if (x->state != SW_NET_RUNNING)
        return;
    if (x->abort_rc) {
        /* a callback (ours or the caller's) stopped it: its reason is already recorded */
        finish(x);
        return;
    }
    if (x->cancel) {
        set_failf(x, SW_EINTR, SW_NET_CANCELLED, "cancelled");
        finish(x);
        return;
    }
    long oserr = 0;
    curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &oserr);
    const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror(res);
    uint64_t got = x->resp.body_bytes;
    switch (res) {
    case CURLE_OK:
        if (x->req.fail_on_status && x->resp.status >= 400) {
            status_failure(x);
        } else if (x->sse_on && x->resp.status >= 200 && x->resp.status < 300) {
            struct sw_err se;
            sw_err_clear(&se);
            int rc = sw_sse_finish(&x->sse, &se);
            if (rc == SW_ETRUNC)
                set_failf(x, SW_ETRUNC, SW_NET_TRUNCATED,
                          "the event stream ended inside an event (byte %lld)",
                          (long long)se.offset);
        }
        break;
    case CURLE_COULDNT_CONNECT:
        if (oserr == ECONNREFUSED)
            set_failf(x, SW_ENET, SW_NET_REFUSED, "connection refused");
        else
            set_failf(x, SW_ENET, SW_NET_CONNECT, "cannot connect: %s", detail);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        set_failf(x, SW_ENET, SW_NET_DNS, "cannot resolve the host: %s", detail);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        /* only curl's connect timeout reaches here: the other deadlines are ours */
        if (!x->connected)
            set_failf(x, SW_ETIMEDOUT, SW_NET_TIMEOUT_CONNECT,
                      "no connection within %u ms (connect timeout)",
                      x->req.connect_ms ? x->req.connect_ms : SW_NET_CONNECT_MS_DEFAULT);
        else
            set_failf(x, SW_ETIMEDOUT, SW_NET_TIMEOUT_TOTAL, "timed out: %s", detail);
        break;
    case CURLE_GOT_NOTHING:
        set_failf(x, SW_ENET, SW_NET_EMPTY, "the server closed the connection without a reply");
        break;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        set_failf(x, SW_ENET, SW_NET_RESET, "the connection died %s (%s) after %llu body bytes",
                  x->resp.t.first_byte ? "while receiving the reply" : "before any reply",
                  oserr == ECONNRESET ? "reset by the peer" : detail, (unsigned long long)got);
        break;
    case CURLE_PARTIAL_FILE:
        set_failf(x, SW_ENET, SW_NET_TRUNCATED, "the reply ended early after %llu body bytes (%s)",
                  (unsigned long long)got, detail);
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        set_failf(x, SW_ENET, SW_NET_CONNECT, "TLS: %s", detail);
        break;
    case CURLE_TOO_MANY_REDIRECTS:
        set_failf(x, SW_EHTTP, SW_NET_PROTOCOL, "more than %d redirects", x->req.max_redirects);
        break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        set_failf(x, SW_EINVAL, SW_NET_PROTOCOL, "unusable URL: %s", detail);
        break;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_RANGE_ERROR:
        set_failf(x, SW_EHTTP, SW_NET_PROTOCOL, "not a valid HTTP reply: %s", detail);
        break;
#if LIBCURL_VERSION_NUM >= 0x080600
    case CURLE_TOO_LARGE:
#endif
    case CURLE_OUT_OF_MEMORY:
        if (!x->resp.t.headers) {
            /* before the headers ended, curl says "out of memory" for a header line past its
             * own ceiling ("Avoided giant realloc for header"); ours are whole lines only */
            set_failf(x, SW_ERANGE, SW_NET_TOO_BIG,
                      "a response header line is longer than curl's limit of %u bytes "
                      "(CURL_MAX_HTTP_HEADER; slipway's ceiling for all header lines is %zu "
                      "bytes)",
                      (unsigned)CURL_MAX_HTTP_HEADER,
                      x->req.header_max ? x->req.header_max : (size_t)SW_NET_HEADER_MAX_DEFAULT);
            break;
        }
        set_failf(x, SW_ENOMEM, SW_NET_OTHER, "out of memory: %s", detail);
        break;
    default:
        set_failf(x, SW_ENET, SW_NET_OTHER, "%s", detail);
        break;
    }
    finish(x);
}

/* ---- deadlines ---- */

static uint64_t ms_ns(unsigned ms)
{
    return (uint64_t)ms * 1000000ull;
}

/* The nearest deadline still to come and which one it is; 0 when there is none. */
static uint64_t next_deadline(const struct sw_net_xfer *x, enum sw_net_fail *which)
{
    const struct sw_net_req *q = &x->req;
    const struct sw_net_times *t = &x->resp.t;
    uint64_t best = 0;
    enum sw_net_fail w = SW_NET_OK;
#define CONSIDER(when, kind)                                                                       \
    do {                                                                                           \
        uint64_t d_ = (when);                                                                      \
        if (!best || d_ < best) {                                                                  \
            best = d_;                                                                             \
            w = (kind);                                                                            \
        }                                                                                          \
    } while (0)
    if (!x->connected)
        CONSIDER(t->start + ms_ns(q->connect_ms ? q->connect_ms : SW_NET_CONNECT_MS_DEFAULT),
                 SW_NET_TIMEOUT_CONNECT);
    if (!t->first_byte && q->first_byte_ms)
        CONSIDER(t->start + ms_ns(q->first_byte_ms), SW_NET_TIMEOUT_FIRST_BYTE);
    if (q->idle_ms) {
        if (t->first_byte)
            CONSIDER(t->last_byte + ms_ns(q->idle_ms), SW_NET_TIMEOUT_IDLE);
        else if (x->connected && !q->first_byte_ms)
            CONSIDER(t->connected + ms_ns(q->idle_ms), SW_NET_TIMEOUT_IDLE);
    }
    if (q->total_ms)
        CONSIDER(t->start + ms_ns(q->total_ms), SW_NET_TIMEOUT_TOTAL);
#undef CONSIDER
    *which = w;
    return best;
}

static void arm(struct sw_net_xfer *x, uint64_t now)
{
    enum sw_net_fail which;
    uint64_t d = next_deadline(x, &which);
    if (!d)
        return;
    uint64_t wait = d > now ? d - now : 0;
    /* +1 ms so the timer never fires a hair before the deadline and spins */
    struct timeval tv = {.tv_sec = (time_t)(wait / 1000000000ull),
                         .tv_usec = (suseconds_t)((wait % 1000000000ull) / 1000ull) + 1000};
    evtimer_add(x->timer, &tv);
}

static void on_deadline(evutil_socket_t fd, short kind, void *arg)
{
    struct sw_net_xfer *x = arg;
    if (x->state != SW_NET_RUNNING)
        return;
    uint64_t now = sw_now_ns();
    enum sw_net_fail which;
    uint64_t d = next_deadline(x, &which);
    if (!d || d > now) {
        arm(x, now);
        return;
    }
    const struct sw_net_req *q = &x->req;
    unsigned long long got = (unsigned long long)x->resp.body_bytes;
    switch (which) {
    case SW_NET_TIMEOUT_CONNECT:
        sw__net_xfer_fail(x, SW_ETIMEDOUT, which, "no connection within %u ms (connect timeout)",
                          q->connect_ms ? q->connect_ms : SW_NET_CONNECT_MS_DEFAULT);
        break;
    case SW_NET_TIMEOUT_FIRST_BYTE:
        sw__net_xfer_fail(x, SW_ETIMEDOUT, which,
                          "no reply byte within %u ms of the request (first-byte timeout)",
                          q->first_byte_ms);
        break;
    case SW_NET_TIMEOUT_IDLE:
        sw__net_xfer_fail(x, SW_ETIMEDOUT, which,
                          "the reply stalled: no byte for %u ms after %llu body bytes "
                          "(idle timeout)",
                          q->idle_ms, got);
        break;
    default:
        sw__net_xfer_fail(x, SW_ETIMEDOUT, SW_NET_TIMEOUT_TOTAL,
                          "not finished within %u ms after %llu body bytes (total timeout)",
                          q->total_ms, got);
        break;
    }
}

/* ---- curl callbacks (never remove handles here) ---- */

#if LIBCURL_VERSION_NUM >= 0x075000
static int prereq_cb(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port)
{
    struct sw_net_xfer *x = ud;
    if (!x->connected) {
        x->connected = true;
        x->resp.t.connected = sw_now_ns();
        arm(x, x->resp.t.connected); /* an idle deadline from the connection may be nearer */
    }
    return x->cancel ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}
#endif

static int stop_code(int r)
{
    return r < 0 ? r : SW_EINTR;
}

/* Hand the final headers to on_head, once. Returns false when the transfer must stop. */
static bool deliver_head(struct sw_net_xfer *x)
{
    if (x->head_done)
        return true;
    x->head_done = true;
    long st = x->resp.status;
    bool ok2xx = st >= 200 && st < 300;
    if (x->req.fail_on_status && st >= 400) {
        /* keep a bounded error body for the message, whatever body_max says */
        x->resp.body.max = SW_NET_ERRBODY_MAX;
    }
    if (x->req.on_event && ok2xx && !x->sse_on) {
        sw_sse_init(&x->sse, x->req.sse_line_max, x->req.sse_event_max, x->req.on_event,
                    x->req.on_comment, x->req.ud);
        x->sse_on = true;
    }
    if (x->req.on_head) {
        int r = x->req.on_head(x->req.ud, x);
        if (r) {
            abort_with(x, stop_code(r), SW_NET_ABORTED, "stopped by the caller after the headers");
            return false;
        }
    }
    return true;
}

static bool header_is_final(const struct sw_net_xfer *x)
{
    long st = x->resp.status;
    if (st < 200)
        return false;
    if (st >= 300 && st < 400 && x->req.max_redirects > 0 &&
        sw_net_resp_header(&x->resp, "location"))
        return false; /* curl follows it: the next response is the one that counts */
    return true;
}

static size_t header_cb(char *p, size_t size, size_t nmemb, void *ud)
{
    struct sw_net_xfer *x = ud;
    size_t n = size * nmemb;
    uint64_t now = sw_now_ns();
    if (x->cancel)
        return 0;
    if (!x->connected) {
        x->connected = true;
        x->resp.t.connected = now;
    }
    x->resp.t.last_byte = now;
    if (!x->resp.t.first_byte) {
        x->resp.t.first_byte = now;
        arm(x, now); /* the idle deadline may now be the nearest */
    }
    size_t hmax = x->req.header_max ? x->req.header_max : SW_NET_HEADER_MAX_DEFAULT;
    if (n > hmax || x->header_bytes > hmax - n) {
        abort_with(x, SW_ERANGE, SW_NET_TOO_BIG, "response headers exceed %zu bytes", hmax);
        return 0;
    }
    x->header_bytes += n;
    /* strip the line end */
    size_t len = n;
    while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        len--;
    if (len >= 5 && !memcmp(p, "HTTP/", 5)) {
        /* a new response begins (after a 1xx or a followed redirect): forget the previous */
        free_headers(&x->resp);
        x->header_cap = 0;
        x->resp.status = 0;
        const char *sp = memchr(p, ' ', len);
        long st = 0;
        for (const char *q = sp ? sp + 1 : p + len; q < p + len && *q >= '0' && *q <= '9'; q++)
            st = st * 10 + (*q - '0');
        if (st < 100 || st > 999) {
            abort_with(x, SW_EHTTP, SW_NET_PROTOCOL, "malformed status line");
            return 0;
        }
        x->resp.status = st;
        return n;
    }
    if (len == 0) {
        x->resp.t.headers = now;
        if (header_is_final(x) && !deliver_head(x))
            return 0;
        return n;
    }
    if (p[0] == ' ' || p[0] == '\t') {
        /* obsolete line folding: continue the previous value */
        if (x->resp.nheaders > 0) {
            struct sw_net_header *h = &x->resp.headers[x->resp.nheaders - 1];
            size_t old = strlen(h->value);
            char *v = sw_realloc(h->value, old + len + 1);
            if (!v) {
                abort_with(x, SW_ENOMEM, SW_NET_OTHER, "out of memory reading headers");
                return 0;
            }
            memcpy(v + old, p, len);
            v[old + len] = '\0';
            h->value = v;
        }
        return n;
    }
    const char *colon = memchr(p, ':', len);
    if (!colon)
        return n; /* not a header line: ignore it like curl does */
    if (x->resp.nheaders >= SW_NET_HEADER_COUNT_MAX) {
        abort_with(x, SW_ERANGE, SW_NET_TOO_BIG, "more than %u response headers",
                   SW_NET_HEADER_COUNT_MAX);
        return 0;
    }
    if (sw_grow(&x->resp.headers, &x->header_cap, x->resp.nheaders, sizeof(*x->resp.headers),
                SIZE_MAX)) {
        abort_with(x, SW_ENOMEM, SW_NET_OTHER, "out of memory reading headers");
        return 0;
    }
    const char *v = colon + 1;
    const char *end = p + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    char *name = sw_strndup(p, (size_t)(colon - p));
    char *value = sw_strndup(v, (size_t)(end - v));
    if (!name || !value) {
        sw_free(name);
        sw_free(value);
        abort_with(x, SW_ENOMEM, SW_NET_OTHER, "out of memory reading headers");
        return 0;
    }
    x->resp.headers[x->resp.nheaders].name = name;
    x->resp.headers[x->resp.nheaders].value = value;
    x->resp.nheaders++;
    return n;
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *ud)
{
    struct sw_net_xfer *x = ud;
    size_t n = size * nmemb;
    uint64_t now = sw_now_ns();
    const size_t refuse = n ? 0 : 1; /* any value other than n makes curl stop */
    if (x->cancel || x->abort_rc)
        return refuse;
    x->resp.t.last_byte = now;
    if (!x->resp.t.first_body)
        x->resp.t.first_body = now;
    if (!x->head_done && !deliver_head(x))
        return refuse;
    x->resp.body_bytes += n;
    long st = x->resp.status;
    int r = 0;
    if (x->req.fail_on_status && st >= 400) {
        /* keep what fits for the message; the rest is dropped, not an error */
        size_t room = x->resp.body.max - x->resp.body.len;
        if (room)
            sw_buf_append(&x->resp.body, p, SW_MIN(room, n));
        return n;
    }
    if (x->sse_on) {
        struct sw_err se;
        sw_err_clear(&se);
        r = sw_sse_feed(&x->sse, p, n, now, &se);
        if (r < 0 && !se.code) {
            /* the caller's event callback refused an event (a chunk that is not JSON...) */
            abort_with(x, r, SW_NET_ABORTED, "stopped by the event callback (%s)", sw_strerror(r));
            return refuse;
        }
        if (r < 0) {
            abort_with(x, r, r == SW_ERANGE ? SW_NET_TOO_BIG : SW_NET_OTHER, "%s (byte %lld)",
                       se.msg, (long long)se.offset);
            return refuse;
        }
        if (r > 0) {
            abort_with(x, SW_EINTR, SW_NET_ABORTED, "stopped by the caller at an event");
            return refuse;
        }
        return n;
    }
    if (x->req.on_data && !(x->req.on_event && !(st >= 200 && st < 300))) {
        r = x->req.on_data(x->req.ud, x, p, n, now);
        if (r) {
            abort_with(x, stop_code(r), SW_NET_ABORTED, "stopped by the caller after %llu bytes",
                       (unsigned long long)x->resp.body_bytes);
            return refuse;
        }
        return n;
    }
    r = sw_buf_append(&x->resp.body, p, n);
    if (r) {
        abort_with(x, r, r == SW_ERANGE ? SW_NET_TOO_BIG : SW_NET_OTHER,
                   "the reply body exceeds %zu bytes", x->resp.body.max);
        return refuse;
    }
    return n;
}

/* ---- start / cancel ---- */

static bool has_crlf(const char *s)
{
    return s && strpbrk(s, "\r\n") != NULL;
}

static int add_header(struct sw_net_xfer *x, const char *h, struct sw_err *e)
{
    struct curl_slist *n = curl_slist_append(x->slist, h);
    if (!n)
        return sw_err_set(e, SW_ENOMEM, "out of memory building headers");
    x->slist = n;
    return 0;
}

#define SETOPT(opt, val)                                                                           \
    do {                                                                                           \
        if (curl_easy_setopt(easy, opt, val) != CURLE_OK) {                                        \
            rc = sw_err_set(e, SW_EINVAL, "%s: cannot set " #opt, x->where);                       \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

int sw_net_start(struct sw_net_loop *l, struct sw_net_xfer *x, struct sw_err *e)
{
    int rc = 0;
    const struct sw_net_req *q = &x->req;
    if (x->state == SW_NET_RUNNING)
        return sw_err_set(e, SW_EBUSY, "this transfer is already running");
    /* a reused xfer starts with a clean response */
    release(x);
    sw_net_resp_free(&x->resp);
    sw_buf_init(&x->resp.body, q->body_max ? q->body_max : SW_NET_BODY_MAX_DEFAULT);
    x->header_bytes = 0;
    x->header_cap = 0;
    x->abort_rc = 0;
    x->abort_fail = SW_NET_OK;
    x->cancel = x->head_done = x->connected = false;
    x->errbuf[0] = '\0';
    x->state = SW_NET_IDLE;

    char red[1024];
    if (!q->url || !q->url[0])
        return sw_err_set(e, SW_EINVAL, "no URL to request");
    sw_net_redact_url(q->url, red, sizeof(red));
    x->where = sw_strdup(red);
    if (!x->where)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (has_crlf(q->bearer) || has_crlf(q->content_type) || has_crlf(q->method)) {
        rc = sw_err_set(e, SW_EINVAL, "%s: a request field holds a line break", x->where);
        goto out;
    }
    for (const char *const *h = q->headers; h && *h; h++) {
        if (has_crlf(*h) || !strchr(*h, ':')) {
            rc = sw_err_set(e, SW_EINVAL, "%s: request header %d is not one \"Name: value\" line",
                            x->where, (int)(h - q->headers) + 1);
            goto out;
        }
    }
    rc = sw__net_global_init(e);
    if (rc)
        goto out;
    CURL *easy = curl_easy_init();
    if (!easy) {
        rc = sw_err_set(e, SW_ENOMEM, "cannot make a curl handle");
        goto out;
    }
    x->easy = easy;
    x->timer = evtimer_new(l->base, on_deadline, x);
    if (!x->timer) {
        rc = sw_err_set(e, SW_ENOMEM, "cannot make a timer");
        goto out;
    }
    SETOPT(CURLOPT_URL, q->url);
    if (q->unix_socket && q->unix_socket[0])
        SETOPT(CURLOPT_UNIX_SOCKET_PATH, q->unix_socket);
    else if (l->unix_socket[0])
        SETOPT(CURLOPT_UNIX_SOCKET_PATH, l->unix_socket);
    SETOPT(CURLOPT_PRIVATE, (void *)x);
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
    SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
    SETOPT(CURLOPT_WRITEDATA, (void *)x);
    SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
    SETOPT(CURLOPT_HEADERDATA, (void *)x);
#if LIBCURL_VERSION_NUM >= 0x075000
    SETOPT(CURLOPT_PREREQFUNCTION, prereq_cb);
    SETOPT(CURLOPT_PREREQDATA, (void *)x);
#endif
#if LIBCURL_VERSION_NUM >= 0x075500
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    SETOPT(CURLOPT_CONNECTTIMEOUT_MS,
           (long)(q->connect_ms ? q->connect_ms : SW_NET_CONNECT_MS_DEFAULT));
    SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
    if (q->max_redirects > 0) {
        SETOPT(CURLOPT_FOLLOWLOCATION, 1L);
        SETOPT(CURLOPT_MAXREDIRS, (long)q->max_redirects);
    }
    if (q->bearer) {
        /* curl sends it with the first request and never to another host on a redirect */
        SETOPT(CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        SETOPT(CURLOPT_XOAUTH2_BEARER, q->bearer);
    }
    const char *method = q->method;
    if (!method)
        method = q->body ? "POST" : "GET";
    if (!strcmp(method, "HEAD")) {
        SETOPT(CURLOPT_NOBODY, 1L);
    } else if (q->body) {
        SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
        SETOPT(CURLOPT_COPYPOSTFIELDS, q->body);
        if (strcmp(method, "POST"))
            SETOPT(CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET")) {
        SETOPT(CURLOPT_CUSTOMREQUEST, method);
    }
    if (q->body) {
        char ct[256];
        snprintf(ct, sizeof(ct), "Content-Type: %s",
                 q->content_type ? q->content_type : "application/json");
        rc = add_header(x, ct, e);
        if (rc)
            goto out;
        /* no "Expect: 100-continue" round trip for large bodies */
        rc = add_header(x, "Expect:", e);
        if (rc)
            goto out;
    }
    for (const char *const *h = q->headers; h && *h; h++) {
        rc = add_header(x, *h, e);
        if (rc)
            goto out;
    }
    if (x->slist)
        SETOPT(CURLOPT_HTTPHEADER, (struct curl_slist *)x->slist);

    x->loop = l;
    x->resp.t.start = sw_now_ns();
    x->state = SW_NET_RUNNING;
    sw__net_loop_link(l, x);
    CURLMcode mc = curl_multi_add_handle(l->multi, easy);
    if (mc != CURLM_OK) {
        sw__net_loop_unlink(l, x);
        x->state = SW_NET_IDLE;
        x->loop = NULL;
        rc = sw_err_set(e, SW_ENET, "%s: cannot start the transfer: %s", x->where,
                        curl_multi_strerror(mc));
        goto out;
    }
    arm(x, x->resp.t.start);
out:
    if (rc)
        release(x);
    return rc;
}

void sw_net_cancel(struct sw_net_xfer *x)
{
    if (!x || x->state != SW_NET_RUNNING || x->cancel)
        return;
    x->cancel = true;
    sw__net_loop_wake_reaper(x->loop);
}
