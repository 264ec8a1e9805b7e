/*
 * Error objects: a code, a position (file:line:col or a byte offset) and a message, owned by the
 * caller. Nothing here allocates except sw_err_to_json.
 */
#include <slipway/core.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const names[] = {
    "SW_OK: success",
    "SW_ENOMEM: out of memory",
    "SW_EINVAL: invalid argument",
    "SW_EIO: input/output error",
    "SW_EPARSE: malformed input",
    "SW_ERANGE: value out of range",
    "SW_ENOENT: not found",
    "SW_EUNSUPPORTED: not supported",
    "SW_ETRUNC: input truncated",
    "SW_EEXIST: already exists",
    "SW_ETIMEDOUT: timed out",
    "SW_ENET: network error",
    "SW_EHTTP: HTTP error",
    "SW_EBUSY: resource busy",
    "SW_EDB: database error",
    "SW_ECHILD: child process failed",
    "SW_EGATE: refused by a gate",
    "SW_EINTR: interrupted",
    "SW_EMISMATCH: verification failed",
};

const char *sw_strerror(int code)
{
    if (code > 0 || code <= SW__ELAST)
        return "SW_E?: unknown error code";
    return names[-code];
}

void sw_err_clear(struct sw_err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->line = 0;
    e->col = 0;
    e->offset = -1;
    e->where[0] = '\0';
    e->msg[0] = '\0';
}

int sw_err_vset(struct sw_err *e, int code, const char *fmt, va_list ap)
{
    if (!e)
        return code;
    e->code = code;
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    return code;
}

int sw_err_set(struct sw_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    if (!e)
        return code;
    sw_err_clear(e);
    va_start(ap, fmt);
    sw_err_vset(e, code, fmt, ap);
    va_end(ap);
    return code;
}

/* e cleared, then its place and message set. */
static int vset_at(struct sw_err *e, int code, const char *where, int line, int col, int64_t offset,
                   const char *fmt, va_list ap) SW_PRINTF(7, 0);
static int vset_at(struct sw_err *e, int code, const char *where, int line, int col, int64_t offset,
                   const char *fmt, va_list ap)
{
    if (!e)
        return code;
    sw_err_clear(e);
    snprintf(e->where, sizeof(e->where), "%s", where ? where : "");
    e->line = line;
    e->col = col;
    e->offset = offset;
    return sw_err_vset(e, code, fmt, ap);
}

int sw_err_at(struct sw_err *e, int code, const char *where, int line, int col, const char *fmt,
              ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset_at(e, code, where, line, col, -1, fmt, ap);
    va_end(ap);
    return code;
}

int sw_err_at_offset(struct sw_err *e, int code, const char *where, int64_t offset, const char *fmt,
                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset_at(e, code, where, 0, 0, offset, fmt, ap);
    va_end(ap);
    return code;
}

void sw_err_prefix(struct sw_err *e, const char *fmt, ...)
{
    char pre[512];
    char old[sizeof(e->msg)];
    va_list ap;
    if (!e)
        return;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof(pre), fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof(old));
    snprintf(e->msg, sizeof(e->msg), "%.500s: %.500s", pre, old);
}

const char *sw_err_format(const struct sw_err *e, char *out, size_t n)
{
    if (!n)
        return out;
    if (!e) {
        out[0] = '\0';
        return out;
    }
    const char *msg = e->msg[0] ? e->msg : sw_strerror(e->code);
    if (e->where[0] && e->line > 0 && e->col > 0)
        snprintf(out, n, "%s:%d:%d: %s", e->where, e->line, e->col, msg);
    else if (e->where[0] && e->line > 0)
        snprintf(out, n, "%s:%d: %s", e->where, e->line, msg);
    else if (e->where[0] && e->offset >= 0)
        snprintf(out, n, "%s: byte %" PRId64 ": %s", e->where, e->offset, msg);
    else if (e->where[0])
        snprintf(out, n, "%s: %s", e->where, msg);
    else
        snprintf(out, n, "%s", msg);
    return out;
}

json_t *sw_err_to_json(const struct sw_err *e)
{
    char buf[2048];
    json_t *j = json_object();
    if (!j || !e)
        return j;
    const char *name = sw_strerror(e->code);
    const char *colon = strchr(name, ':');
    json_t *code = json_stringn(name, colon ? (size_t)(colon - name) : strlen(name));
    if (sw_json_set_new(j, "code", code) || sw_json_set_str(j, "message", e->msg) ||
        sw_json_set_str(j, "error", sw_err_format(e, buf, sizeof(buf))))
        goto fail;
    if (e->where[0] && sw_json_set_str(j, "where", e->where))
        goto fail;
    if (e->line > 0 && sw_json_set_int(j, "line", e->line))
        goto fail;
    if (e->col > 0 && sw_json_set_int(j, "col", e->col))
        goto fail;
    if (e->offset >= 0 && sw_json_set_int(j, "offset", e->offset))
        goto fail;
    return j;
fail:
    json_decref(j);
    return NULL;
}
