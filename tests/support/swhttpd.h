/*
 * swhttpd: a scripted HTTP/1.1 server on 127.0.0.1 for tests (slipway's own; plain sockets, one
 * thread per connection, blocking I/O, so a script can sleep between writes).
 *
 * A route (method + path, query ignored) holds a list of scripts: the first request gets the
 * first script, the second the second, and the last one repeats ("503 then 200"). A script is a
 * list of steps that write raw bytes (the test writes the status line and headers itself, so it
 * can send them slowly, wrongly or halfway), frame HTTP chunks, sleep, stall, reset the
 * connection (RST via SO_LINGER 0) or close it, or call a function. When a script ends without
 * closing, the connection stays open for the next request (keep-alive), so a client's connection
 * reuse shows in swh_connections().
 *
 * Every request is recorded (method, path, raw headers, body) for the test to inspect. The server
 * allocates with plain malloc, never sw_malloc, so a test's allocation-failure injection does not
 * reach it. Bounded: request headers 64 KiB, request body 64 MiB.
 *
 * Usable by any test that links tests/support (the probe battery and payload tests reuse it).
 */
#ifndef SWHTTPD_H
#define SWHTTPD_H

#include <stdbool.h>
#include <stddef.h>

struct swh;

/* A received request (copies). */
struct swh_request {
    char method[16];
    char path[2048]; /* with its query string */
    char *headers;   /* raw header lines after the request line, CRLF-separated */
    size_t headers_len;
    char *body; /* NUL-terminated copy of the body */
    size_t body_len;
    unsigned conn; /* 1-based number of the connection it came on */
};

/* A step may call a function with the connected socket and the request; return 0 to go on,
 * non-zero to close the connection. */
typedef int (*swh_fn)(void *ud, int fd, const struct swh_request *rq);

enum swh_op {
    SWH_END = 0,   /* end of script (keep the connection) */
    SWH_SEND,      /* write data[len] (len 0: strlen(data)) */
    SWH_REPEAT,    /* write data[len] count times (a 10 MB line without a 10 MB script) */
    SWH_CHUNK,     /* write data[len] framed as one HTTP/1.1 chunk */
    SWH_CHUNK_END, /* the last chunk "0\r\n\r\n" */
    SWH_SLEEP,     /* sleep ms */
    SWH_STALL,     /* write nothing until the client goes away or the server stops */
    SWH_RESET,     /* abort the connection with a TCP RST */
    SWH_CLOSE,     /* close the connection (FIN) */
    SWH_CALL       /* fn(ud, fd, request) */
};

struct swh_step {
    enum swh_op op;
    const char *data;
    size_t len;
    unsigned ms;
    size_t count;
    swh_fn fn;
    void *ud;
};

/* Start on an ephemeral port of 127.0.0.1. Fails the test (cmocka) when it cannot. */
struct swh *swh_start(void);
/* Stop: wakes stalled scripts, closes every connection, joins the threads, frees. NULL ok. */
void swh_stop(struct swh *s);
int swh_port(const struct swh *s);
/* "http://127.0.0.1:PORT" + path, in a static rotating buffer (8 deep). */
const char *swh_url(const struct swh *s, const char *path);

/* Append a script to the route (method NULL: any method). Steps end with SWH_END; data is
 * copied. */
void swh_script(struct swh *s, const char *method, const char *path, const struct swh_step *steps);
/* A whole reply with Content-Length (keep-alive). ctype NULL: application/json. */
void swh_reply(struct swh *s, const char *method, const char *path, int status, const char *ctype,
               const char *body);
/* An SSE reply, chunked: each string of events (NULL-terminated) is written as one chunk after
 * sleeping delay_ms; then the last chunk. The strings are sent as they are (include "data: "
 * and the blank line yourself). */
void swh_sse(struct swh *s, const char *path, const char *const *events, unsigned delay_ms);
/* The events of a llama-server chat stream of n one-letter tokens ("a", "b", ...; n 1..8): the
 * role chunk, one chunk per token with its timings (10 prompt tokens in 5 ms), the usage chunk
 * and [DONE]; for swh_sse. Static storage, overwritten by the next call. */
const char *const *swh_llama_stream(unsigned n);
/* An SSE reply made of the bytes of a file, cut into chunk_bytes pieces (0: one piece) with
 * delay_ms between pieces: a recorded stream replayed byte for byte. */
void swh_sse_file(struct swh *s, const char *path, const char *file, size_t chunk_bytes,
                  unsigned delay_ms);

/* Requests served on path (all paths when NULL) and connections accepted so far. */
unsigned swh_hits(struct swh *s, const char *path);
unsigned swh_connections(struct swh *s);
/* Copy of the latest request on path (any when NULL); false when none. Free with
 * swh_request_free. */
bool swh_last_request(struct swh *s, const char *path, struct swh_request *out);
void swh_request_free(struct swh_request *r);
/* Value of a request header (case-insensitive) copied into out; NULL when absent. */
const char *swh_request_header(const struct swh_request *r, const char *name, char *out, size_t n);

#endif
