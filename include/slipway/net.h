/*
 * slipway net: the HTTP client core shared by probe, payload and deploy (its readiness wait), and
 * by the benchmarks under bench/.
 *
 * libcurl's multi interface driven by a libevent loop: one `struct sw_net_loop` per thread, any
 * number of concurrent transfers on it, kept-alive connections reused across transfers on the
 * same loop. A transfer (`struct sw_net_xfer`, caller-allocated) has timeouts on connect, first
 * byte, idle stream (no byte for N ms) and total, each reported as itself; sends a bearer token
 * that is never logged, never put in an error and not sent to another host on a redirect; and
 * delivers the response incrementally: status and bounded, parsed headers (on_head), then the body
 * piece by piece (on_data) with the CLOCK_MONOTONIC time taken in curl's write callback, the
 * moment the bytes arrive; or as server-sent events through the SSE parser (on_event), each event
 * stamped with the time of the read that completed it; or buffered, up to a ceiling.
 * sw_net_request() is the synchronous convenience (GET/POST and wait) for one-shot calls.
 *
 * Errors are classified (enum sw_net_fail) so a caller can tell a refused connection from a reset
 * mid-body, and which of the four timeouts fired; the message names the URL with its userinfo
 * and query string removed.
 *
 * What it deliberately does not do: no retries (the caller decides what a failure means), no
 * cookies, no proxies beyond curl's environment defaults, no content decoding, no HTTP/1.1
 * pipelining. It does not know about OpenAI (see openai.h) nor files (payload writes them).
 */
#ifndef SLIPWAY_NET_H
#define SLIPWAY_NET_H

#include <slipway/core.h>
#include <slipway/sse.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct event;
struct sw_net_xfer;

#define SW_NET_CONNECT_MS_DEFAULT 10000u        /* used when connect_ms is 0 */
#define SW_NET_HEADER_MAX_DEFAULT (64u * 1024u) /* bytes of response header lines */
#define SW_NET_HEADER_COUNT_MAX   256u
#define SW_NET_BODY_MAX_DEFAULT   (16u * 1024u * 1024u) /* a buffered body */
#define SW_NET_ERRBODY_MAX        (64u * 1024u) /* body kept from a failed status (fail_on_status) */

/* Why a transfer failed. */
enum sw_net_fail {
    SW_NET_OK = 0,
    SW_NET_REFUSED,            /* connection refused (nothing listens) */
    SW_NET_DNS,                /* the host name did not resolve */
    SW_NET_CONNECT,            /* another connect failure (unreachable, TLS handshake...) */
    SW_NET_TIMEOUT_CONNECT,    /* no connection within connect_ms */
    SW_NET_TIMEOUT_FIRST_BYTE, /* connected, but no response byte within first_byte_ms */
    SW_NET_TIMEOUT_IDLE,       /* the response stalled: no byte for idle_ms */
    SW_NET_TIMEOUT_TOTAL,      /* total_ms passed */
    SW_NET_EMPTY,              /* the server closed the connection without a reply */
    SW_NET_RESET,              /* the connection died while receiving (reset) */
    SW_NET_TRUNCATED,          /* the body or event stream ended before it should */
    SW_NET_PROTOCOL,           /* not valid HTTP, too many redirects, bad URL */
    SW_NET_TOO_BIG,            /* headers, buffered body or an SSE line/event past its ceiling */
    SW_NET_HTTP_STATUS,        /* status >= 400 with fail_on_status */
    SW_NET_CANCELLED,          /* sw_net_cancel() or the loop was closed */
    SW_NET_ABORTED,            /* a callback asked to stop */
    SW_NET_OTHER
};
/* "refused", "timeout_idle", ... (stable names for --json). Never NULL. */
const char *sw_net_fail_name(enum sw_net_fail f);

struct sw_net_header {
    char *name; /* as the server spelled it */
    char *value;
};

/* CLOCK_MONOTONIC (sw_now_ns) instants of one transfer; 0 when it did not happen. */
struct sw_net_times {
    uint64_t start;      /* sw_net_start */
    uint64_t connected;  /* a connection was ready (new or reused) */
    uint64_t first_byte; /* first byte of a response (the status line) */
    uint64_t headers;    /* end of the final response's headers */
    uint64_t first_body; /* first body byte */
    uint64_t last_byte;  /* latest byte of any kind */
    uint64_t done;       /* completion, success or not */
};

/* What came back. Owned by the transfer; sw_net_resp_free releases a moved copy. */
struct sw_net_resp {
    int rc;                /* 0 or SW_E*: SW_ENET, SW_ETIMEDOUT, SW_EHTTP, SW_ERANGE, SW_EINTR... */
    enum sw_net_fail fail; /* the class of rc */
    struct sw_err err;     /* the message; err.where is the redacted URL */
    long status;           /* HTTP status of the final response, 0 when none came */
    struct sw_net_header *headers; /* the final response's headers, in order */
    size_t nheaders;
    struct sw_buf body;  /* the body when neither on_data nor on_event took it (bounded by
                            * body_max); the error body with fail_on_status; for on_event
                            * transfers, the body of a non-2xx reply */
    uint64_t body_bytes; /* bytes of body received, however delivered */
    struct sw_net_times t;
    long new_connections; /* connections this transfer opened (0: it reused one) */
    long local_port;      /* our end of the connection used last */
    long redirects;
};

/* Case-insensitive lookup of a header of the final response; NULL when absent. */
const char *sw_net_resp_header(const struct sw_net_resp *r, const char *name);
/* Free headers and body; leaves *r zeroed. Accepts NULL. */
void sw_net_resp_free(struct sw_net_resp *r);

/* on_head: status and headers of the final response are in x->resp. Return 0 to go on; non-zero
 * stops the transfer (SW_NET_ABORTED; a negative SW_E* becomes its rc, anything else SW_EINTR). */
typedef int (*sw_net_head_fn)(void *ud, struct sw_net_xfer *x);
/* on_data: n body bytes that arrived at t_ns. Same return rule. */
typedef int (*sw_net_data_fn)(void *ud, struct sw_net_xfer *x, const char *p, size_t n,
                              uint64_t t_ns);
/* on_done: the transfer finished (x->resp.rc says how). The loop does not touch x afterwards, so
 * the callback may close or reuse it, and start new transfers. */
typedef void (*sw_net_done_fn)(void *ud, struct sw_net_xfer *x);

/*
 * The request. Strings are copied by sw_net_start: they need only live until it returns.
 * Every timeout of 0 is "none", except connect_ms (0 = SW_NET_CONNECT_MS_DEFAULT). first_byte_ms
 * counts from sw_net_start to the first response byte; idle_ms counts from the latest byte (and,
 * when first_byte_ms is 0, also guards the wait for the first byte from the moment the
 * connection is ready).
 */
struct sw_net_req {
    const char *method; /* NULL: POST when a body is set, else GET; "HEAD" sends no body back */
    const char *url;
    /* connect through this unix socket instead of to the URL's host and port (a route's ssh
     * forward, host/route), the URL still naming them for the server; NULL or "": the URL's */
    const char *unix_socket;
    const char *bearer;         /* token for "Authorization: Bearer"; must not hold CR/LF */
    const char *const *headers; /* extra "Name: value" lines, NULL-terminated; no CR/LF */
    const char *body;           /* request body (JSON usually); may hold NUL bytes */
    size_t body_len;
    const char *content_type; /* default "application/json" when a body is set */
    unsigned connect_ms, first_byte_ms, idle_ms, total_ms;
    size_t header_max;   /* 0: SW_NET_HEADER_MAX_DEFAULT */
    size_t body_max;     /* 0: SW_NET_BODY_MAX_DEFAULT; only for a buffered body */
    int max_redirects;   /* 0: redirects are not followed (the 3xx is the reply) */
    bool fail_on_status; /* status >= 400 ends the transfer with SW_EHTTP; the error body
                                 * is kept in resp.body (up to SW_NET_ERRBODY_MAX) and never
                                 * reaches on_data / on_event */
    /* Server-sent events: when on_event is set, a 2xx body is parsed as an event stream (limits
     * of 0 take the SSE defaults) and on_data is not called; an SSE error ends the transfer
     * (SW_NET_TOO_BIG), and a stream that ends inside an event is SW_NET_TRUNCATED. */
    sw_sse_event_fn on_event;
    sw_sse_comment_fn on_comment;
    size_t sse_line_max, sse_event_max;
    sw_net_head_fn on_head;
    sw_net_data_fn on_data;
    sw_net_done_fn on_done;
    void *ud;
};

enum sw_net_state { SW_NET_IDLE = 0, SW_NET_RUNNING, SW_NET_DONE };

/* One transfer: fill `req`, start it, read `resp` in on_done or after the loop ran. */
struct sw_net_xfer {
    struct sw_net_req req;   /* IN */
    struct sw_net_resp resp; /* OUT */
    enum sw_net_state state; /* read-only for the caller */
    /* private */
    struct sw_net_loop *loop;
    void *easy;
    void *slist;
    struct event *timer;
    struct sw_sse sse;
    struct sw_net_xfer *prev, *next;
    char *where;
    size_t header_bytes;
    size_t header_cap;
    int abort_rc;
    enum sw_net_fail abort_fail;
    bool cancel;
    bool head_done;
    bool sse_on;
    bool connected;
    bool in_final_headers;
    char errbuf[256];
};

/* The loop. Fields are private. */
struct sw_net_loop {
    struct event_base *base;
    bool own_base;
    bool brk;
    char unix_socket[108]; /* every transfer's socket unless its request names one; "" none */
    void *multi;
    struct event *timer;
    struct event *reap;
    struct sw_net_xfer *active;
    int nactive;
};

struct sw_net_loop_opts {
    struct event_base *base; /* NULL: the loop makes (and frees) its own */
    long max_host_conns;     /* 0: unlimited (curl queues transfers past the limit) */
    long max_total_conns;    /* 0: unlimited */
    long max_cached_conns;   /* kept-alive connections kept; 0: 64 */
    /* every transfer of the loop connects through this unix socket unless its request names
     * one (a client of one endpoint routed through its host); NULL or "": none */
    const char *unix_socket;
};

/* Make a loop for this thread. opts may be NULL. Close with sw_net_loop_close. */
int sw_net_loop_init(struct sw_net_loop *l, const struct sw_net_loop_opts *opts, struct sw_err *e);
/* Cancel what still runs (their on_done is called with SW_NET_CANCELLED), close connections and
 * free everything. Accepts a loop that failed init or was already closed. */
void sw_net_loop_close(struct sw_net_loop *l);
/* Run until no transfer is active or sw_net_loop_break() was called. 0 or SW_EIO. */
int sw_net_loop_run(struct sw_net_loop *l);
/* Run until x is done (other transfers progress meanwhile). */
int sw_net_loop_run_until(struct sw_net_loop *l, const struct sw_net_xfer *x);
/* Make the current run return after the events being handled (callable from callbacks). */
void sw_net_loop_break(struct sw_net_loop *l);
/* The libevent base, for callers adding their own timers (bench's arrival schedule). */
struct event_base *sw_net_loop_base(struct sw_net_loop *l);
static inline int sw_net_loop_active(const struct sw_net_loop *l)
{
    return l->nactive;
}

/* Zero x and its response. Call before filling x->req. */
void sw_net_xfer_init(struct sw_net_xfer *x);
/* Free the response (and anything left of a transfer that never started). Must not be running. */
void sw_net_xfer_close(struct sw_net_xfer *x);
/*
 * Start x on loop l. Returns 0 (the transfer runs; on_done will be called exactly once) or a
 * negative code for a request that cannot be made (bad header, no URL, out of memory): then
 * nothing runs and on_done is not called.
 */
int sw_net_start(struct sw_net_loop *l, struct sw_net_xfer *x, struct sw_err *e);
/* Stop x: it completes with SW_EINTR / SW_NET_CANCELLED on the loop's next turn (on_done is
 * called then). Safe from any callback, including x's own; no-op when x is not running. */
void sw_net_cancel(struct sw_net_xfer *x);

/*
 * The synchronous convenience: run req (callbacks allowed but not needed) on l, or on a private
 * loop when l is NULL (then no connection is reused across calls), and wait. The response is
 * moved into *out (free with sw_net_resp_free), also on failure. Returns out->rc; e gets the
 * same message. An HTTP status of 400 or more is not an error unless req->fail_on_status.
 */
int sw_net_request(struct sw_net_loop *l, const struct sw_net_req *req, struct sw_net_resp *out,
                   struct sw_err *e);
/* GET url with the options of tmpl (may be NULL). */
int sw_net_get(struct sw_net_loop *l, const char *url, const struct sw_net_req *tmpl,
               struct sw_net_resp *out, struct sw_err *e);
/* POST a JSON text to url with the options of tmpl (may be NULL). */
int sw_net_post_json(struct sw_net_loop *l, const char *url, const char *json, size_t len,
                     const struct sw_net_req *tmpl, struct sw_net_resp *out, struct sw_err *e);

/* url without its userinfo and with its query string replaced by "?...", for messages. */
const char *sw_net_redact_url(const char *url, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
