/*
 * The decoding context of a fleet load: the dotted path of the value being decoded, error
 * collection (every mistake reported, the first kept for the caller), warnings, the position index
 * behind sw_fleet_pos(), and the json_t references a fleet keeps.
 * It does not know any key of the fleet format (schema.c, shape.c and load.c do).
 */
#include "fleet_internal.h"

#include <inttypes.h>
#include <string.h>

size_t sw__fleet_path_push(struct sw__fleet_ctx *c, const char *key)
{
    size_t saved = c->plen;
    int n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "%s%s", c->plen ? "." : "", key);
    if (n < 0 || (size_t)n >= sizeof(c->path) - c->plen)
        c->plen = sizeof(c->path) - 1; /* truncated: messages still read, lookups just miss */
    else
        c->plen += (size_t)n;
    return saved;
}

size_t sw__fleet_path_index(struct sw__fleet_ctx *c, size_t i)
{
    size_t saved = c->plen;
    int n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "[%zu]", i);
    if (n < 0 || (size_t)n >= sizeof(c->path) - c->plen)
        c->plen = sizeof(c->path) - 1;
    else
        c->plen += (size_t)n;
    return saved;
}

void sw__fleet_path_pop(struct sw__fleet_ctx *c, size_t saved)
{
    c->plen = saved;
    c->path[saved] = '\0';
}

struct sw_fleet_at sw__fleet_at(const struct sw__fleet_node *n)
{
    struct sw_fleet_at at = {0};
    if (n) {
        at.file = n->file;
        at.line = n->line;
        at.col = n->col;
    }
    return at;
}

int sw__fleet_verr(struct sw__fleet_ctx *c, int code, const struct sw_fleet_at *at, const char *fmt,
                   va_list ap)
{
    c->nerr++;
    if (c->nerr > c->max_errors)
        return code;
    struct sw_err e;
    sw_err_clear(&e);
    char msg[sizeof(e.msg)];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (at && at->file)
        sw_err_at(&e, code, at->file, at->line, at->col, "%s", msg);
    else
        sw_err_set(&e, code, "%s", msg);
    if (c->nerr == 1) {
        c->first_code = code;
        if (c->first)
            *c->first = e;
    }
    if (c->opts && c->opts->on_error)
        c->opts->on_error(c->opts->on_error_ctx, &e);
    return code;
}

int sw__fleet_err(struct sw__fleet_ctx *c, const struct sw_fleet_at *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sw__fleet_verr(c, SW_EPARSE, at, fmt, ap);
    va_end(ap);
    return rc;
}

int sw__fleet_errp(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, const char *fmt, ...)
{
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    struct sw_fleet_at at = sw__fleet_at(n);
    return sw__fleet_err(c, &at, "%s %s", c->plen ? c->path : "the fleet file", what);
}

int sw__fleet_err_from(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                       const struct sw_err *e)
{
    if (e->code == SW_ENOMEM)
        return sw__fleet_nomem(c);
    struct sw_fleet_at at = sw__fleet_at(n);
    return sw__fleet_err(c, &at, "%s: %s", c->plen ? c->path : "the fleet file", e->msg);
}

int sw__fleet_nomem(struct sw__fleet_ctx *c)
{
    if (c->oom)
        return SW_ENOMEM;
    c->oom = true;
    c->nerr++;
    /* Reported whatever max_errors says, and it becomes the error the caller sees: an
     * out-of-memory must not be mistaken for bad input. */
    struct sw_err e;
    sw_err_clear(&e);
    sw_err_at(&e, SW_ENOMEM, c->file ? c->file : "fleet", 0, 0, "out of memory loading the fleet");
    c->first_code = SW_ENOMEM;
    if (c->first)
        *c->first = e;
    if (c->opts && c->opts->on_error)
        c->opts->on_error(c->opts->on_error_ctx, &e);
    return SW_ENOMEM;
}

void sw__fleet_warn(struct sw__fleet_ctx *c, const struct sw_fleet_at *at, const char *fmt, ...)
{
    struct sw__fleet_priv *p = c->p;
    if (c->oom)
        return;
    if (sw_grow(&p->warn, &p->cap_warn, p->n_warn, sizeof(*p->warn), SIZE_MAX)) {
        sw__fleet_nomem(c);
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *m = sw_region_strdup(c->a, msg);
    if (!m) {
        sw__fleet_nomem(c);
        return;
    }
    p->warn[p->n_warn].msg = m;
    p->warn[p->n_warn].at = at ? *at : (struct sw_fleet_at){0};
    p->n_warn++;
}

void sw__fleet_record_at(struct sw__fleet_ctx *c, const char *path, const struct sw_fleet_at *at)
{
    struct sw__fleet_priv *p = c->p;
    if (c->oom)
        return;
    if (sw_grow(&p->pos, &p->cap_pos, p->n_pos, sizeof(*p->pos), SIZE_MAX)) {
        sw__fleet_nomem(c);
        return;
    }
    char *copy = sw_region_strdup(c->a, path);
    if (!copy) {
        sw__fleet_nomem(c);
        return;
    }
    p->pos[p->n_pos].path = copy;
    p->pos[p->n_pos].at = *at;
    p->pos[p->n_pos].seq = c->seq++;
    p->n_pos++;
}

void sw__fleet_record(struct sw__fleet_ctx *c, const struct sw__fleet_node *n)
{
    struct sw_fleet_at at = sw__fleet_at(n);
    sw__fleet_record_at(c, c->path, &at);
}

int sw__fleet_keep_json(struct sw__fleet_ctx *c, json_t *j)
{
    struct sw__fleet_priv *p = c->p;
    if (sw_grow(&p->json, &p->cap_json, p->n_json, sizeof(*p->json), SIZE_MAX)) {
        json_decref(j);
        return sw__fleet_nomem(c);
    }
    p->json[p->n_json++] = j;
    return 0;
}

int sw_fleet_err_at(struct sw_err *e, int code, const struct sw_fleet_at *at, const char *fmt, ...)
{
    char msg[sizeof(((struct sw_err *)0)->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (at && at->file)
        return sw_err_at(e, code, at->file, at->line, at->col, "%s", msg);
    return sw_err_set(e, code, "%s", msg);
}
