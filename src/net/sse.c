/*
 * The incremental server-sent-events parser (see include/slipway/sse.h for the rules it follows).
 *
 * Lines that lie whole inside one read are parsed in place, without a copy; only a line cut by a
 * read boundary is gathered in a bounded buffer. The search for line ends caches the next LF and
 * the next CR so a read is scanned once, whatever mix of line ends it uses.
 *
 * What it deliberately does not do: decode or validate UTF-8, reconnect, interpret data.
 */
#include <slipway/sse.h>

#include <string.h>

static const unsigned char sse_bom[3] = {0xEF, 0xBB, 0xBF};

void sw_sse_init(struct sw_sse *p, size_t line_max, size_t event_max, sw_sse_event_fn on_event,
                 sw_sse_comment_fn on_comment, void *ud)
{
    memset(p, 0, sizeof(*p));
    p->on_event = on_event;
    p->on_comment = on_comment;
    p->ud = ud;
    p->line_max = line_max ? line_max : SW_SSE_LINE_MAX_DEFAULT;
    p->event_max = event_max ? event_max : SW_SSE_EVENT_MAX_DEFAULT;
    sw_buf_init(&p->line, p->line_max);
    /* +1: the data buffer keeps the '\n' after the last line until dispatch */
    sw_buf_init(&p->data, p->event_max + 1);
    sw_buf_init(&p->type, p->line_max);
    sw_buf_init(&p->id, p->line_max);
    p->retry_ms = -1;
}

void sw_sse_close(struct sw_sse *p)
{
    if (!p)
        return;
    sw_buf_free(&p->line);
    sw_buf_free(&p->data);
    sw_buf_free(&p->type);
    sw_buf_free(&p->id);
}

static void reset_event(struct sw_sse *p)
{
    sw_buf_reset(&p->data);
    sw_buf_reset(&p->type);
    p->has_data = false;
    p->event_started = false;
}

static int dispatch(struct sw_sse *p, uint64_t t_ns)
{
    if (!p->has_data) {
        /* the standard: an empty data buffer dispatches nothing and clears the type */
        reset_event(p);
        return 0;
    }
    /* drop the '\n' that followed the last data line */
    p->data.len--;
    p->data.data[p->data.len] = '\0';
    struct sw_sse_event ev = {
        .type = p->type.len ? sw_buf_cstr(&p->type) : "message",
        .data = sw_buf_cstr(&p->data),
        .data_len = p->data.len,
        .id = sw_buf_cstr(&p->id),
        .done = p->data.len == 6 && !memcmp(p->data.data, "[DONE]", 6),
        .t_ns = t_ns,
        .t_first_ns = p->event_t_ns,
        .index = p->events,
        .offset = p->event_offset,
    };
    p->events++;
    if (ev.done)
        p->done_seen = true;
    int rc = p->on_event ? p->on_event(p->ud, &ev) : 0;
    reset_event(p);
    return rc;
}

static bool field_is(const char *name, size_t nlen, const char *lit)
{
    size_t l = strlen(lit);
    return nlen == l && !memcmp(name, lit, l);
}

/* One complete line (without its end). loff / lt: where and when the line began. */
static int process_line(struct sw_sse *p, const char *line, size_t len, int64_t loff, uint64_t lt,
                        uint64_t t_ns, struct sw_err *e)
{
    if (len == 0)
        return dispatch(p, t_ns);
    if (line[0] == ':') {
        p->comments++;
        return p->on_comment ? p->on_comment(p->ud, line + 1, len - 1, t_ns) : 0;
    }
    const char *colon = memchr(line, ':', len);
    size_t nlen = colon ? (size_t)(colon - line) : len;
    const char *val = colon ? colon + 1 : line + len;
    size_t vlen = colon ? len - nlen - 1 : 0;
    if (vlen > 0 && val[0] == ' ') {
        val++;
        vlen--;
    }
    if (!p->event_started) {
        p->event_started = true;
        p->event_offset = loff;
        p->event_t_ns = lt;
    }
    int rc = 0;
    if (field_is(line, nlen, "data")) {
        if (vlen > p->event_max || p->data.len > p->event_max - vlen)
            return sw_err_at_offset(e, SW_ERANGE, "SSE stream", loff,
                                    "event data grows past the %zu-byte limit", p->event_max);
        rc = sw_buf_append(&p->data, val, vlen);
        if (!rc)
            rc = sw_buf_putc(&p->data, '\n');
        if (rc)
            return sw_err_at_offset(e, rc, "SSE stream", loff, "cannot hold event data");
        p->has_data = true;
    } else if (field_is(line, nlen, "event")) {
        sw_buf_reset(&p->type);
        rc = sw_buf_append(&p->type, val, vlen);
        if (rc)
            return sw_err_at_offset(e, rc, "SSE stream", loff, "cannot hold event type");
    } else if (field_is(line, nlen, "id")) {
        if (!memchr(val, '\0', vlen)) {
            sw_buf_reset(&p->id);
            rc = sw_buf_append(&p->id, val, vlen);
            if (rc)
                return sw_err_at_offset(e, rc, "SSE stream", loff, "cannot hold event id");
        }
    } else if (field_is(line, nlen, "retry")) {
        int64_t v = 0;
        bool ok = vlen > 0 && vlen <= 18;
        for (size_t k = 0; ok && k < vlen; k++) {
            if (val[k] < '0' || val[k] > '9')
                ok = false;
            else
                v = v * 10 + (val[k] - '0');
        }
        if (ok)
            p->retry_ms = v;
    }
    /* any other field name is ignored, as the standard says */
    return 0;
}

/* First index in [from, to) holding c, or `to`. */
static size_t find_byte(const char *s, size_t from, size_t to, char c)
{
    if (from >= to)
        return to;
    const char *q = memchr(s + from, c, to - from);
    return q ? (size_t)(q - s) : to;
}

static int feed_body(struct sw_sse *p, const char *s, size_t n, uint64_t t_ns, struct sw_err *e)
{
    size_t i = 0;
    if (p->skip_lf && n > 0) {
        p->skip_lf = false;
        if (s[0] == '\n') {
            i = 1;
            p->offset++;
        }
    }
    size_t nl_at = 0, cr_at = 0;
    bool nl_known = false, cr_known = false;
    while (i < n) {
        if (!nl_known || nl_at < i) {
            nl_at = find_byte(s, i, n, '\n');
            nl_known = true;
            cr_known = false;
        }
        if (!cr_known || cr_at < i) {
            cr_at = find_byte(s, i, nl_at, '\r'); /* == nl_at when no CR comes first */
            cr_known = true;
        }
        size_t end = cr_at;
        if (end == n) {
            /* no line end in the rest of this read: keep the piece, bounded */
            size_t rest = n - i;
            if (!p->in_line) {
                p->in_line = true;
                p->line_offset = p->offset;
                p->line_t_ns = t_ns;
            }
            if (rest > p->line_max || p->line.len > p->line_max - rest)
                return sw_err_at_offset(e, SW_ERANGE, "SSE stream", p->line_offset,
                                        "a line runs past the %zu-byte limit", p->line_max);
            int rc = sw_buf_append(&p->line, s + i, rest);
            if (rc)
                return sw_err_at_offset(e, rc, "SSE stream", p->line_offset,
                                        "cannot hold a partial line");
            p->offset += (int64_t)rest;
            return 0;
        }
        size_t len = end - i;
        const char *line;
        size_t llen;
        int64_t loff;
        uint64_t lt;
        if (p->in_line) {
            if (len > p->line_max || p->line.len > p->line_max - len)
                return sw_err_at_offset(e, SW_ERANGE, "SSE stream", p->line_offset,
                                        "a line runs past the %zu-byte limit", p->line_max);
            int rc = sw_buf_append(&p->line, s + i, len);
            if (rc)
                return sw_err_at_offset(e, rc, "SSE stream", p->line_offset,
                                        "cannot hold a partial line");
            line = p->line.data ? p->line.data : "";
            llen = p->line.len;
            loff = p->line_offset;
            lt = p->line_t_ns;
        } else {
            if (len > p->line_max)
                return sw_err_at_offset(e, SW_ERANGE, "SSE stream", p->offset,
                                        "a line runs past the %zu-byte limit", p->line_max);
            line = s + i;
            llen = len;
            loff = p->offset;
            lt = t_ns;
        }
        p->offset += (int64_t)len + 1;
        i = end + 1;
        if (s[end] == '\r') {
            if (i < n) {
                if (s[i] == '\n') {
                    i++;
                    p->offset++;
                }
            } else {
                p->skip_lf = true;
            }
        }
        int rc = process_line(p, line, llen, loff, lt, t_ns, e);
        if (p->in_line) {
            sw_buf_reset(&p->line);
            p->in_line = false;
        }
        if (rc)
            return rc;
    }
    return 0;
}

int sw_sse_feed(struct sw_sse *p, const void *buf, size_t n, uint64_t t_ns, struct sw_err *e)
{
    if (p->rc)
        return p->rc;
    const char *s = buf;
    size_t i = 0;
    int rc = 0;
    /* a UTF-8 BOM at the very start is not part of the stream; it may itself be cut */
    while (p->bom_pos < 3 && i < n) {
        if ((unsigned char)s[i] == sse_bom[p->bom_pos]) {
            p->bom_pos++;
            p->offset++;
            i++;
            continue;
        }
        int k = p->bom_pos;
        p->bom_pos = 3;
        if (k > 0) {
            /* it only looked like a BOM: give those bytes back to the line parser */
            p->offset -= k;
            rc = feed_body(p, (const char *)sse_bom, (size_t)k, t_ns, e);
            if (rc)
                goto out;
        }
    }
    if (i < n)
        rc = feed_body(p, s + i, n - i, t_ns, e);
out:
    p->rc = rc;
    return rc;
}

int sw_sse_finish(struct sw_sse *p, struct sw_err *e)
{
    if (p->rc)
        return p->rc;
    if (p->in_line)
        return sw_err_at_offset(e, SW_ETRUNC, "SSE stream", p->line_offset,
                                "the stream ended inside a line (%zu bytes without a line end)",
                                p->line.len);
    if (p->bom_pos > 0 && p->bom_pos < 3)
        return sw_err_at_offset(e, SW_ETRUNC, "SSE stream", 0, "the stream ended inside a BOM");
    if (p->event_started)
        return sw_err_at_offset(e, SW_ETRUNC, "SSE stream", p->event_offset,
                                "the stream ended inside an event (no blank line after it)");
    return 0;
}
