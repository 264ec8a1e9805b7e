/*
 * systemd's unit syntax (systemd.syntax(7)), one part at a time: its physical lines ended as
 * read_line_full ends them (LF, CR, CR LF or LF CR; a CR alone inside a line is a note, CR LF ends
 * a warning note) after a UTF-8 byte order mark, logical lines joined at a trailing backslash,
 * `#`/`;` comments, [Section] headers and `Key=Value` assignments (an empty one resetting the key's
 * list), each at its line in its part.
 *
 * It does not read the values (scan_split.c, scan_exec.c do) or know which keys exist.
 */
#include "scan_internal.h"

#include <ctype.h>
#include <string.h>

static int add_entry(struct sw__scan *s, const char *section, const char *k, size_t kn,
                     const char *v, size_t vn, int line)
{
    struct sw_unit *u = s->u;
    int rc = sw_region_grow(s->a, &u->entries, &s->cap_entries, u->n_entries, sizeof(*u->entries),
                            SW__SCAN_COUNT_MAX);
    if (rc)
        return rc;
    struct sw_unit_entry *en = &u->entries[u->n_entries];
    en->section = section;
    en->key = sw_region_strndup(s->a, k, kn);
    en->value = sw_region_strndup(s->a, v, vn);
    en->line = line;
    en->reset = false;
    if (!en->key || !en->value)
        return SW_ENOMEM;
    u->n_entries++;
    if (vn == 0) {
        /* An empty assignment resets the list: earlier ones of this key no longer count. */
        for (size_t i = 0; i + 1 < u->n_entries; i++)
            if (!strcmp(u->entries[i].section, section) && !strcmp(u->entries[i].key, en->key))
                u->entries[i].reset = true;
        en->reset = true;
    }
    return 0;
}

/*
 * One physical line as systemd's read_line_full (src/basic/fileio.c) ends it: at LF, CR, CR LF
 * or LF CR (one end each), never inside the end. [*st, *en) is the line without its end, *i moves
 * past the end. *lf says the end held an LF (the lines an editor counts), *cr that it held a CR:
 * 1 beside an LF, 2 alone (systemd ends the line there, an editor does not).
 */
static void next_line(const char *text, size_t len, size_t *i, size_t *st, size_t *en, bool *lf,
                      int *cr)
{
    size_t k = *i;
    *st = k;
    while (k < len && text[k] != '\n' && text[k] != '\r')
        k++;
    *en = k;
    *lf = false;
    *cr = 0;
    if (k < len) {
        char c = text[k++];
        char d = k < len ? text[k] : '\0';
        if ((c == '\r' && d == '\n') || (c == '\n' && d == '\r')) {
            k++;
            *lf = true;
            *cr = 1;
        } else if (c == '\n') {
            *lf = true;
        } else {
            *cr = 2;
        }
    }
    *i = k;
}

/* The lines of one part. `line` counts as an editor does (LF ends); `base` puts it in its part. */
struct lines {
    const char *text;
    size_t len, i;
    int base, line, next;
    int crlf, crlf_first; /* CR LF (or LF CR) ends seen, and the line of the first */
    int cr_noted;         /* the last line a CR alone was noted on (one note a line) */
};

/* The next physical line, trimmed; notes a CR alone (the line systemd ends there). */
static int lines_next(struct sw__scan *s, struct lines *l, size_t *st, size_t *en)
{
    bool lf;
    int cr;
    l->line = l->next;
    next_line(l->text, l->len, &l->i, st, en, &lf, &cr);
    if (lf)
        l->next++;
    if (cr == 1 && !l->crlf++)
        l->crlf_first = l->line;
    int rc = 0;
    if (cr == 2 && l->cr_noted != l->line) {
        l->cr_noted = l->line;
        /* what follows the CR, up to the next end, as the line systemd reads next */
        char shown[64];
        size_t k = 0;
        for (size_t j = l->i;
             j < l->len && k + 1 < sizeof(shown) && l->text[j] != '\n' && l->text[j] != '\r'; j++)
            shown[k++] = isprint((unsigned char)l->text[j]) ? l->text[j] : '?';
        shown[k] = '\0';
        rc = sw__scan_note(
            s, l->base + l->line,
            "a carriage return (CR) inside line %d ends the line for systemd, so '%s' after "
            "it is read as a line of its own (an assignment, when it holds '='); no editor "
            "shows that break",
            l->line, shown);
    }
    while (*st < *en && sw__scan_ws(l->text[*st]))
        (*st)++;
    while (*en > *st && sw__scan_ws(l->text[*en - 1]))
        (*en)--;
    return rc;
}

int sw__scan_lines(struct sw__scan *s, size_t part, const char *text, size_t len)
{
    const char *section = NULL;
    struct sw_buf lb;
    sw_buf_init(&lb, SW__SCAN_LINE_MAX);
    struct lines ls = {.text = text, .len = len, .base = (int)part * SW_UNIT_PART_LINES, .next = 1};
    /* systemd skips a UTF-8 byte order mark at the start of the file */
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
        ls.i = 3;
    int rc = 0;
    while (ls.i < len) {
        size_t st, en;
        rc = lines_next(s, &ls, &st, &en);
        if (rc)
            goto out;
        if (st == en || text[st] == '#' || text[st] == ';')
            continue;
        int first = ls.base + ls.line;
        if (text[st] == '[') {
            if (text[en - 1] != ']' || en - st < 3) {
                rc = sw__scan_note(s, first,
                                   "'%.*s' is not a [Section] header; systemd ignores the line",
                                   (int)SW_MIN(en - st, 80), text + st);
                if (rc)
                    goto out;
                section = NULL;
                continue;
            }
            char *sec = sw_region_strndup(s->a, text + st + 1, en - st - 2);
            if (!sec) {
                rc = SW_ENOMEM;
                goto out;
            }
            section = sec;
            continue;
        }
        /* A logical line: a trailing backslash continues it on the next line (joined with a
         * space); comment lines inside a continuation are skipped, as systemd does. */
        sw_buf_reset(&lb);
        for (;;) {
            bool cont = text[en - 1] == '\\';
            rc = sw_buf_append(&lb, text + st, en - st - (cont ? 1 : 0));
            if (rc)
                goto out;
            if (!cont || ls.i >= len)
                break;
            rc = sw_buf_putc(&lb, ' ');
            if (rc)
                goto out;
            for (;;) {
                rc = lines_next(s, &ls, &st, &en);
                if (rc)
                    goto out;
                if (st < en && (text[st] == '#' || text[st] == ';'))
                    continue;
                break;
            }
            if (st == en)
                break;
        }
        const char *l = sw_buf_cstr(&lb);
        const char *eq = strchr(l, '=');
        if (!eq) {
            rc = sw__scan_note(s, first, "'%.80s' is not Key=Value; systemd ignores the line", l);
            if (rc)
                goto out;
            continue;
        }
        if (!section) {
            rc = sw__scan_note(s, first,
                               "assignment '%.80s' outside of any section; systemd ignores it", l);
            if (rc)
                goto out;
            continue;
        }
        size_t kn = (size_t)(eq - l);
        while (kn > 0 && sw__scan_ws(l[kn - 1]))
            kn--;
        const char *v = eq + 1;
        while (*v && sw__scan_ws(*v))
            v++;
        size_t vn = strlen(v);
        while (vn > 0 && sw__scan_ws(v[vn - 1]))
            vn--;
        rc = add_entry(s, section, l, kn, v, vn, first);
        if (rc)
            goto out;
    }
    if (ls.crlf)
        rc = sw__scan_warn(
            s, ls.base + ls.crlf_first,
            "%d line%s end%s in CR LF, the first line %d: systemd reads CR LF as one "
            "line end, so they read as written, but it also ends a line at a CR "
            "alone, a break no editor shows and a file kept in CR LF hides; write the "
            "file with LF ends (sed -i 's/\\r$//' FILE)",
            ls.crlf, ls.crlf == 1 ? "" : "s", ls.crlf == 1 ? "s" : "", ls.crlf_first);
out:
    if (rc == SW_ERANGE)
        sw_err_at(s->e, rc, s->u->parts[part].where, ls.line, 0, "line longer than %u bytes",
                  SW__SCAN_LINE_MAX);
    sw_buf_free(&lb);
    return rc;
}
