/*
 * slipway sse: an incremental parser for server-sent events (the WHATWG "text/event-stream"
 * interpretation rules), fed with whatever pieces the network delivers.
 *
 * It handles: events split across reads at any byte, LF / CRLF / CR line ends (a CR at the end of
 * one read and the LF at the start of the next are one line end), a leading UTF-8 BOM, comment
 * and ping lines (":..."), multi-line `data:` joined with '\n', `event:`, `id:` (ignored when it
 * holds a NUL), `retry:` (digits only), and OpenAI's `data: [DONE]` sentinel (flagged, still
 * dispatched). Every dispatched event carries the CLOCK_MONOTONIC time of the read that completed
 * it, so a caller measuring inter-token latency gets the time the bytes arrived, not the time it
 * got round to parsing them.
 *
 * Bounded: a line longer than line_max or an event whose data grows past event_max is a clean
 * SW_ERANGE naming the byte offset, raised as soon as the limit is crossed (a 10 MB line costs at
 * most line_max bytes of buffer, never a realloc storm). After an error the parser is stuck and
 * returns the same code.
 *
 * What it deliberately does not do: no UTF-8 validation or decoding (bytes pass through; the JSON
 * layer rejects invalid UTF-8 with its own error), no reconnection (retry and the last event id
 * are only reported), no knowledge of what the data means.
 */
#ifndef SLIPWAY_SSE_H
#define SLIPWAY_SSE_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defaults when init is given 0: a line of 4 MiB, an event's data of 8 MiB. */
#define SW_SSE_LINE_MAX_DEFAULT  (4u * 1024u * 1024u)
#define SW_SSE_EVENT_MAX_DEFAULT (8u * 1024u * 1024u)

/* One dispatched event. Pointers are valid only during the callback. */
struct sw_sse_event {
    const char *type;    /* "message" unless an event: field said otherwise; NUL-terminated */
    const char *data;    /* data lines joined with '\n' (no trailing '\n'); NUL-terminated */
    size_t data_len;     /* data may itself hold NUL bytes: use this, not strlen */
    const char *id;      /* the last event id seen so far in the stream ("" when none) */
    bool done;           /* data is exactly "[DONE]" (OpenAI's end-of-stream sentinel) */
    uint64_t t_ns;       /* sw_now_ns() given with the read that completed the event */
    uint64_t t_first_ns; /* ... with the read that held the event's first field line */
    uint64_t index;      /* 0-based number of this event in the stream */
    int64_t offset;      /* byte offset of the event's first field line in the stream */
};

/* Return 0 to go on; anything else stops the parser and sw_sse_feed returns that value. */
typedef int (*sw_sse_event_fn)(void *ud, const struct sw_sse_event *ev);
/* A comment line without its ':' (pings are usually empty comments). Same return rule. */
typedef int (*sw_sse_comment_fn)(void *ud, const char *text, size_t len, uint64_t t_ns);

/* The parser. All fields are private; read them through the accessors below. */
struct sw_sse {
    sw_sse_event_fn on_event;
    sw_sse_comment_fn on_comment;
    void *ud;
    size_t line_max;
    size_t event_max;
    struct sw_buf line;  /* a line cut by a read boundary */
    struct sw_buf data;  /* data buffer of the event being built */
    struct sw_buf type;  /* event type buffer */
    struct sw_buf id;    /* last event id */
    bool in_line;        /* a partial line is pending in `line` */
    bool skip_lf;        /* the previous read ended with CR: a leading LF belongs to it */
    bool has_data;       /* at least one data: line in the current event */
    bool done_seen;      /* a [DONE] event was dispatched */
    bool event_started;  /* a field line of the current event was seen */
    int bom_pos;         /* bytes of a leading BOM matched so far; 3 = settled */
    int rc;              /* sticky: error or stop code */
    int64_t offset;      /* bytes consumed so far */
    int64_t line_offset; /* offset where the pending line started */
    int64_t event_offset;
    uint64_t line_t_ns; /* read time of the pending line's first byte */
    uint64_t event_t_ns;
    uint64_t events;
    uint64_t comments;
    int64_t retry_ms; /* last valid retry: field, -1 when none */
};

/* line_max / event_max of 0 take the defaults. on_comment may be NULL. Never fails. */
void sw_sse_init(struct sw_sse *p, size_t line_max, size_t event_max, sw_sse_event_fn on_event,
                 sw_sse_comment_fn on_comment, void *ud);
/*
 * Feed the next n bytes of the stream, read at t_ns (pass sw_now_ns() taken where the bytes
 * arrived). Calls on_event for every event the bytes complete. Returns 0, a negative SW_E* code
 * (SW_ERANGE: a limit crossed; SW_ENOMEM) with detail in e, or the callback's non-zero value.
 * Once non-zero, every later call returns the same value without parsing.
 */
int sw_sse_feed(struct sw_sse *p, const void *buf, size_t n, uint64_t t_ns, struct sw_err *e);
/*
 * The stream ended. Per the standard an unfinished event is discarded; this returns SW_ETRUNC
 * (with the offset) when a partial line or an undispatched event was pending, so a caller can say
 * "the stream stopped mid-event"; 0 when the stream ended on an event boundary. Returns the
 * sticky code when the parser had already stopped.
 */
int sw_sse_finish(struct sw_sse *p, struct sw_err *e);
/* Free the buffers. Accepts NULL; init may be called again afterwards. */
void sw_sse_close(struct sw_sse *p);

static inline uint64_t sw_sse_events(const struct sw_sse *p)
{
    return p->events;
}
static inline uint64_t sw_sse_comments(const struct sw_sse *p)
{
    return p->comments;
}
static inline bool sw_sse_done_seen(const struct sw_sse *p)
{
    return p->done_seen;
}
static inline int64_t sw_sse_retry_ms(const struct sw_sse *p)
{
    return p->retry_ms;
}
static inline int64_t sw_sse_offset(const struct sw_sse *p)
{
    return p->offset;
}
static inline const char *sw_sse_last_id(const struct sw_sse *p)
{
    return sw_buf_cstr(&p->id);
}

#ifdef __cplusplus
}
#endif
#endif
