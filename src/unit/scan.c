/*
 * The unit scanner, as its callers see it: a unit and its drop-ins checked, scanned into one
 * region (scan_lines.c, then the environment, the Exec lines and what they run: scan_env.c,
 * scan_exec.c) and read back (an assignment, a position, the engine's name), with the parse
 * state every room of the scanner writes into (notes, word lists). Each other concept of the
 * scanner is a file of its own (scan_internal.h).
 *
 * What the scanner reads: sections, `Key=Value` assignments (continuation lines, `#`/`;`
 * comments, repeated keys in order, an empty assignment resetting the list before it) of the unit
 * and then of its drop-ins, lines ended as systemd's read_line_full ends them (LF, CR, CR LF, LF
 * CR: a CR alone inside a line ends it, which is a note, and CR LF line ends are a warning note)
 * after a UTF-8 byte order mark; the Exec command lines split as systemd does (prefixes, quotes, C
 * escapes, `$VAR` split into words and `${VAR}` kept in one), and in them a `podman run`/`docker
 * run` (also inside `sh -c '...'`), the engine and the paths it receives, the container's stop
 * grace and a `podman wait` main process.
 *
 * It does not resolve %-specifiers (kept as written), find drop-ins (the caller hands them in),
 * or keys the laws do not read.
 */
#include "scan_internal.h"

#include <stdarg.h>
#include <string.h>

int sw__scan_word(struct sw__scan *s, struct sw__words *w, const char *p, size_t n)
{
    int rc = sw_region_grow(s->a, &w->v, &w->cap, w->n + 1, sizeof(char *), SW__SCAN_COUNT_MAX);
    if (rc)
        return rc;
    w->v[w->n] = sw_region_strndup(s->a, p, n);
    if (!w->v[w->n])
        return SW_ENOMEM;
    w->n++;
    w->v[w->n] = NULL;
    return 0;
}

static int vnote(struct sw__scan *s, int line, bool warning, const char *fmt, va_list ap)
    SW_PRINTF(4, 0);
static int vnote(struct sw__scan *s, int line, bool warning, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    int rc = sw_region_grow(s->a, &s->u->notes, &s->cap_notes, s->u->n_notes, sizeof(*s->u->notes),
                            SW__SCAN_COUNT_MAX);
    if (rc)
        return rc;
    s->u->notes[s->u->n_notes].line = line;
    s->u->notes[s->u->n_notes].warning = warning;
    s->u->notes[s->u->n_notes].msg = sw_region_strdup(s->a, msg);
    if (!s->u->notes[s->u->n_notes].msg)
        return SW_ENOMEM;
    s->u->n_notes++;
    return 0;
}

int sw__scan_note(struct sw__scan *s, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vnote(s, line, false, fmt, ap);
    va_end(ap);
    return rc;
}

int sw__scan_warn(struct sw__scan *s, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vnote(s, line, true, fmt, ap);
    va_end(ap);
    return rc;
}

bool sw__scan_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

const char *sw__scan_base(const char *p)
{
    const char *sl = strrchr(p, '/');
    return sl ? sl + 1 : p;
}

bool sw__scan_prefix(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

int sw_unit_parse(const char *text, size_t len, const char *where, const char *env_file,
                  struct sw_unit **out, struct sw_err *e)
{
    struct sw_unit_part p = {where, text, len};
    return sw_unit_parse_parts(&p, 1, env_file, out, e);
}

/* A part as the scanner takes it: within the size, no NUL byte (naming its line). */
static int part_ok(const struct sw_unit_part *p, struct sw_err *e)
{
    if (p->len > SW_UNIT_TEXT_MAX)
        return sw_err_at(e, SW_ERANGE, p->where, 0, 0, "larger than %u bytes", SW_UNIT_TEXT_MAX);
    const char *nul = memchr(p->text, '\0', p->len);
    if (nul) {
        int line = 1;
        for (const char *q = p->text; q < nul; q++)
            line += *q == '\n';
        return sw_err_at(e, SW_EPARSE, p->where, line, 0, "a NUL byte: not a unit file");
    }
    return 0;
}

int sw_unit_parse_parts(const struct sw_unit_part *parts, size_t n, const char *env_file,
                        struct sw_unit **out, struct sw_err *e)
{
    *out = NULL;
    if (n < 1 || n > SW_UNIT_PARTS_MAX)
        return sw_err_set(e, SW_EINVAL, "a unit is read from 1 to %d files, not %zu",
                          SW_UNIT_PARTS_MAX, n);
    const char *where = parts[0].where ? parts[0].where : "<unit>";
    for (size_t k = 0; k < n; k++) {
        struct sw_unit_part p = parts[k];
        if (!p.where)
            p.where = k ? "<drop-in>" : where;
        int prc = part_ok(&p, e);
        if (prc)
            return prc;
    }
    if (env_file && strlen(env_file) > SW_UNIT_TEXT_MAX)
        return sw_err_set(e, SW_ERANGE, "environment file larger than %u bytes", SW_UNIT_TEXT_MAX);
    struct sw_region *a = sw_malloc(sizeof(*a));
    if (!a)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_region_init(a, SW__UNIT_REGION_MAX);
    struct sw_unit *u = sw_region_alloc(a, sizeof(*u));
    int rc = SW_ENOMEM;
    if (!u)
        goto fail;
    memset(u, 0, sizeof(*u));
    u->arena_ = a;
    u->stop_grace_s = -1;
    u->parts = sw_region_alloc(a, n * sizeof(*u->parts));
    if (!u->parts)
        goto fail;
    for (size_t k = 0; k < n; k++) {
        const char *w = parts[k].where ? parts[k].where : k ? "<drop-in>" : where;
        u->parts[k].where = sw_region_strdup(a, w);
        u->parts[k].text = sw_region_strndup(a, parts[k].text, parts[k].len);
        u->parts[k].len = parts[k].len;
        if (!u->parts[k].where || !u->parts[k].text)
            goto fail;
    }
    u->n_parts = n;
    u->where = u->parts[0].where;
    u->text = u->parts[0].text;
    u->len = u->parts[0].len;
    struct sw__scan s = {.u = u, .a = a, .e = e};
    for (size_t k = 0; k < n; k++) {
        rc = sw__scan_lines(&s, k, u->parts[k].text, u->parts[k].len);
        if (rc)
            goto fail;
    }
    rc = sw__scan_env(&s, env_file);
    if (rc)
        goto fail;
    for (size_t i = 0; i < u->n_entries; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        if (en->reset || strcmp(en->section, "Service") || !sw__scan_is_exec(en->key))
            continue;
        rc = sw__scan_cmd(&s, en);
        if (rc)
            goto fail;
    }
    for (size_t i = 0; i < u->n_cmds; i++) {
        rc = sw__scan_exec(&s, &u->cmds[i]);
        if (rc)
            goto fail;
    }
    /* A container stopped without an ExecStop: systemd's SIGTERM reaches `podman run`, which
     * stops the container with its --stop-timeout (the grace) when one is set. */
    if (u->ctr.found && u->ctr.stop_timeout_s >= 0 && u->ctr.stop_timeout_s > u->stop_grace_s) {
        u->stop_grace_s = u->ctr.stop_timeout_s;
        u->stop_grace_line = u->ctr.line;
        snprintf(u->stop_grace_how, sizeof(u->stop_grace_how), "--stop-timeout %lld",
                 (long long)u->ctr.stop_timeout_s);
    }
    *out = u;
    return 0;
fail:
    if (rc == SW_ENOMEM)
        sw_err_set(e, rc, "%s: out of memory", where);
    else if (rc == SW_ERANGE && (!e || !e->msg[0] || e->code != rc))
        sw_err_at(e, rc, where, 0, 0, "more than %u assignments, words or paths",
                  SW__SCAN_COUNT_MAX);
    sw_region_free(a);
    sw_free(a);
    return rc;
}

const char *sw_unit_pos(const struct sw_unit *u, int pos, int *line)
{
    size_t part = pos > 0 ? (size_t)pos / SW_UNIT_PART_LINES : 0;
    if (part >= u->n_parts)
        part = 0;
    if (line)
        *line = pos > 0 ? pos - (int)part * SW_UNIT_PART_LINES : 0;
    return u->n_parts ? u->parts[part].where : u->where;
}

void sw_unit_free(struct sw_unit *u)
{
    if (!u)
        return;
    struct sw_region *a = u->arena_;
    sw_region_free(a);
    sw_free(a);
}

const char *sw_unit_get(const struct sw_unit *u, const char *section, const char *key, int *line)
{
    const char *v = NULL;
    for (size_t i = 0; i < u->n_entries; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        if (en->reset || strcmp(en->section, section) || strcmp(en->key, key))
            continue;
        v = en->value;
        if (line)
            *line = en->line;
    }
    return v;
}

const char *sw_unit_engine_name(enum sw_unit_engine e)
{
    switch (e) {
    case SW_UNIT_ENGINE_LLAMACPP:
        return "llama.cpp";
    case SW_UNIT_ENGINE_VLLM:
        return "vLLM";
    case SW_UNIT_ENGINE_SGLANG:
        return "SGLang";
    default:
        return "none";
    }
}
