/*
 * host: a unit's journal, read as `journalctl -o json` lines (one JSON object per entry; field
 * values are strings, or an array of byte values for a field that is not valid UTF-8 text, or
 * null for a field too large to show; see systemd's journal export formats). Read since a cursor,
 * or followed live with -f until the caller stops or the deadline passes.
 */
#include "host_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The size of an entry line we accept (journalctl shows a field up to 64 KiB by default). */
#define JOURNAL_LINE_MAX (1u << 20)

static int field_str(const json_t *v, char **out)
{
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v)) {
        *out = sw_strndup(json_string_value(v), json_string_length(v));
        return *out ? 0 : SW_ENOMEM;
    }
    if (!json_is_array(v))
        return SW_EPARSE;
    size_t n = json_array_size(v);
    char *s = sw_malloc(n + 1);
    if (!s)
        return SW_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *b = json_array_get(v, i);
        if (!json_is_integer(b) || json_integer_value(b) < 0 || json_integer_value(b) > 255) {
            sw_free(s);
            return SW_EPARSE;
        }
        s[i] = (char)json_integer_value(b);
        /* a NUL byte inside a message would cut it short: show it as a space */
        if (!s[i])
            s[i] = ' ';
    }
    s[n] = '\0';
    *out = s;
    return 0;
}

void sw_host_journal_entry_free(struct sw_host_journal_entry *en)
{
    if (!en)
        return;
    sw_free(en->cursor);
    sw_free(en->message);
    memset(en, 0, sizeof(*en));
}

int sw_host_journal_parse_line(const char *line, size_t len, struct sw_host_journal_entry *out,
                               struct sw_err *e)
{
    int rc = 0;
    memset(out, 0, sizeof(*out));
    out->priority = -1;
    if (len > JOURNAL_LINE_MAX)
        return sw_err_set(e, SW_ERANGE, "journal entry of %zu bytes (at most %u)", len,
                          JOURNAL_LINE_MAX);
    struct sw_err le;
    long failed = sw_alloc_failures();
    json_t *o = sw_json_parse(line, len, "journalctl -o json", e ? e : &le);
    if (!o) {
        rc = e ? e->code : le.code;
        goto out;
    }
    /* jansson's lexer drops a byte when growing its buffer fails and parses on: a cursor with a
     * byte missing would be worse than no cursor */
    if (sw_alloc_failures() != failed) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (!json_is_object(o)) {
        rc = sw_err_set(e, SW_EPARSE, "journalctl -o json: an entry that is not a JSON object");
        goto out;
    }
    const json_t *c = json_object_get(o, "__CURSOR");
    if (!json_is_string(c) || !json_string_length(c)) {
        rc = sw_err_set(e, SW_EPARSE, "journalctl -o json: an entry without __CURSOR");
        goto out;
    }
    rc = field_str(c, &out->cursor);
    if (!rc)
        rc = field_str(json_object_get(o, "MESSAGE"), &out->message);
    if (rc) {
        rc = rc == SW_ENOMEM
                 ? sw_err_set(e, rc, "out of memory")
                 : sw_err_set(e, rc, "journalctl -o json: MESSAGE is neither text, bytes nor null");
        goto out;
    }
    const json_t *t = json_object_get(o, "__REALTIME_TIMESTAMP");
    if (json_is_string(t) && sw_parse_u64(json_string_value(t), &out->realtime_us, NULL)) {
        rc = sw_err_set(e, SW_EPARSE, "journalctl -o json: __REALTIME_TIMESTAMP '%.40s'",
                        json_string_value(t));
        goto out;
    }
    const json_t *p = json_object_get(o, "PRIORITY");
    uint64_t pv;
    if (json_is_string(p) && !sw_parse_u64(json_string_value(p), &pv, NULL) && pv <= 7)
        out->priority = (int)pv;
out:
    json_decref(o);
    if (rc)
        sw_host_journal_entry_free(out);
    return rc;
}

static int journal_add(struct sw_host_journal *j, struct sw_host_journal_entry *en)
{
    struct sw_host_journal_entry *nv = sw_realloc(j->v, (j->n + 1) * sizeof(*nv));
    if (!nv)
        return SW_ENOMEM;
    j->v = nv;
    j->v[j->n++] = *en;
    return 0;
}

int sw_host_journal_parse(const char *text, size_t len, struct sw_host_journal *j, struct sw_err *e)
{
    int rc = 0;
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, text, len, SIZE_MAX, 0);
    while (sw_lines_next(&it, &ln)) {
        if (!ln.len || (ln.len == 1 && ln.s[0] == '\r'))
            continue;
        struct sw_host_journal_entry en;
        rc = sw_host_journal_parse_line(ln.s, ln.len, &en, e);
        if (rc) {
            sw_err_prefix(e, "line %d", it.no);
            return rc;
        }
        rc = journal_add(j, &en);
        if (rc) {
            sw_host_journal_entry_free(&en);
            return sw_err_set(e, rc, "out of memory");
        }
        char *cur = sw_strdup(en.cursor);
        if (!cur)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        sw_free(j->cursor);
        j->cursor = cur;
    }
    return 0;
}

void sw_host_journal_free(struct sw_host_journal *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n; i++)
        sw_host_journal_entry_free(&j->v[i]);
    sw_free(j->v);
    sw_free(j->cursor);
    memset(j, 0, sizeof(*j));
}

static size_t journal_argv(const char **argv, bool user, const char *unit, const char *cursor,
                           bool follow, const char *nbuf)
{
    size_t n = 0;
    argv[n++] = "journalctl";
    if (user)
        argv[n++] = "--user";
    argv[n++] = "-u";
    argv[n++] = unit;
    argv[n++] = "-o";
    argv[n++] = "json";
    argv[n++] = "--no-pager";
    if (follow)
        argv[n++] = "-f";
    if (cursor) {
        argv[n++] = "--after-cursor";
        argv[n++] = cursor;
    }
    if (nbuf) {
        argv[n++] = "-n";
        argv[n++] = nbuf;
    }
    argv[n] = NULL;
    return n;
}

int sw_host_journal_read(struct sw_host *h, bool user, const char *unit, const char *cursor,
                         size_t max_entries, int64_t deadline_ms, struct sw_host_journal *j,
                         struct sw_err *e)
{
    const char *argv[16];
    char nbuf[32];
    struct sw_host_result r;
    memset(j, 0, sizeof(*j));
    if (!unit || !*unit || unit[0] == '-')
        return sw_err_set(e, SW_EINVAL, "host %s: journal: no unit", h->name);
    snprintf(nbuf, sizeof(nbuf), "%zu", max_entries ? max_entries : 1000);
    journal_argv(argv, user, unit, cursor, false, nbuf);
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .max_out = 64u << 20};
    int rc = sw_host_run(h, argv, &o, &r, e);
    if (!rc && r.out_truncated)
        rc = sw_err_set(e, SW_ERANGE, "host %s: journal of %s larger than %u MiB", h->name, unit,
                        64);
    if (!rc)
        rc = sw_host_journal_parse(r.out, r.out_len, j, e);
    if (!rc && !j->cursor && cursor) {
        j->cursor = sw_strdup(cursor);
        if (!j->cursor)
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (rc) {
        sw_err_prefix(e, "host %s: journal of %s", h->name, unit);
        sw_host_journal_free(j);
    }
    sw_host_result_free(&r);
    return rc;
}

struct follow {
    sw_host_journal_fn fn;
    void *ctx;
    int rc;
    struct sw_err *e;
};

static int follow_line(void *ctx, const char *line, size_t len)
{
    struct follow *f = ctx;
    struct sw_host_journal_entry en;
    if (!len)
        return 0;
    f->rc = sw_host_journal_parse_line(line, len, &en, f->e);
    if (f->rc)
        return 1;
    int stop = f->fn(f->ctx, &en);
    sw_host_journal_entry_free(&en);
    return stop;
}

int sw_host_journal_follow(struct sw_host *h, bool user, const char *unit, const char *cursor,
                           int64_t deadline_ms, sw_host_journal_fn fn, void *ctx, struct sw_err *e)
{
    const char *argv[16];
    struct sw_host_result r;
    if (!unit || !*unit || unit[0] == '-' || !fn)
        return sw_err_set(e, SW_EINVAL, "host %s: journal follow: no unit or callback", h->name);
    /* no cursor: only what comes next (-n 0) */
    journal_argv(argv, user, unit, cursor, true, cursor ? NULL : "0");
    struct follow f = {.fn = fn, .ctx = ctx, .e = e};
    struct sw_host_run_opts o = {
        .deadline_ms = deadline_ms, .max_out = JOURNAL_LINE_MAX, .on_line = follow_line, .ctx = &f};
    int rc = sw_host_run(h, argv, &o, &r, e);
    if (!rc && f.rc)
        rc = f.rc;
    sw_host_result_free(&r);
    return rc;
}
