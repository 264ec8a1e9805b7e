/*
 * The unit scanner: systemd's unit syntax (systemd.syntax(7)) and what a service runs.
 *
 * Reads sections, `Key=Value` assignments (continuation lines, `#`/`;` comments, repeated keys in
 * order, an empty assignment resetting the list before it) of the unit and then of its drop-ins,
 * lines ended as systemd's read_line_full ends them (LF, CR, CR LF, LF CR: a CR alone inside a
 * line ends it, which is a note, and CR LF line ends are a warning note) after a UTF-8 byte order
 * mark; splits the Exec command lines as systemd does (prefixes, quotes, C escapes, `$VAR` split
 * into words and `${VAR}` kept in one), and finds in them a `podman run`/`docker run` (also
 * inside `sh -c '...'`), the engine and the paths it receives, the container's stop grace and a
 * `podman wait` main process.
 *
 * It does not resolve %-specifiers (kept as written), find drop-ins (the caller hands them in),
 * or keys the laws do not read.
 */
#include "lint_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES (64u * 1024u)
#define COUNT_MAX      65536u

/* ---------------------------------------------------------------------------------------------
 * Parse state.
 */
struct scan {
    struct sw_unit *u;
    struct sw_region *a;
    struct sw_err *e;
    size_t cap_entries, cap_cmds, cap_notes, cap_env, cap_paths;
    size_t cap_mounts, cap_devices, cap_cenv, cap_cenvf;
};

/* A list of words being built. */
struct words {
    char **v;
    size_t n, cap;
};

static int words_push(struct scan *s, struct words *w, const char *p, size_t n)
{
    int rc = sw_region_grow(s->a, &w->v, &w->cap, w->n + 1, sizeof(char *), COUNT_MAX);
    if (rc)
        return rc;
    w->v[w->n] = sw_region_strndup(s->a, p, n);
    if (!w->v[w->n])
        return SW_ENOMEM;
    w->n++;
    w->v[w->n] = NULL;
    return 0;
}

static int vnote(struct scan *s, int line, bool warning, const char *fmt, va_list ap)
    SW_PRINTF(4, 0);
static int vnote(struct scan *s, int line, bool warning, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    int rc = sw_region_grow(s->a, &s->u->notes, &s->cap_notes, s->u->n_notes, sizeof(*s->u->notes),
                            COUNT_MAX);
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

static int note(struct scan *s, int line, const char *fmt, ...) SW_PRINTF(3, 4);
static int note(struct scan *s, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vnote(s, line, false, fmt, ap);
    va_end(ap);
    return rc;
}

static int warn_note(struct scan *s, int line, const char *fmt, ...) SW_PRINTF(3, 4);
static int warn_note(struct scan *s, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vnote(s, line, true, fmt, ap);
    va_end(ap);
    return rc;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* ---------------------------------------------------------------------------------------------
 * Lines.
 */
static int add_entry(struct scan *s, const char *section, const char *k, size_t kn, const char *v,
                     size_t vn, int line)
{
    struct sw_unit *u = s->u;
    int rc = sw_region_grow(s->a, &u->entries, &s->cap_entries, u->n_entries, sizeof(*u->entries),
                            COUNT_MAX);
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
static int lines_next(struct scan *s, struct lines *l, size_t *st, size_t *en)
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
        rc = note(s, l->base + l->line,
                  "a carriage return (CR) inside line %d ends the line for systemd, so '%s' after "
                  "it is read as a line of its own (an assignment, when it holds '='); no editor "
                  "shows that break",
                  l->line, shown);
    }
    while (*st < *en && is_ws(l->text[*st]))
        (*st)++;
    while (*en > *st && is_ws(l->text[*en - 1]))
        (*en)--;
    return rc;
}

static int scan_lines(struct scan *s, size_t part, const char *text, size_t len)
{
    const char *section = NULL;
    struct sw_buf lb;
    sw_buf_init(&lb, LINE_MAX_BYTES);
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
                rc = note(s, first, "'%.*s' is not a [Section] header; systemd ignores the line",
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
            rc = note(s, first, "'%.80s' is not Key=Value; systemd ignores the line", l);
            if (rc)
                goto out;
            continue;
        }
        if (!section) {
            rc = note(s, first, "assignment '%.80s' outside of any section; systemd ignores it", l);
            if (rc)
                goto out;
            continue;
        }
        size_t kn = (size_t)(eq - l);
        while (kn > 0 && is_ws(l[kn - 1]))
            kn--;
        const char *v = eq + 1;
        while (*v && is_ws(*v))
            v++;
        size_t vn = strlen(v);
        while (vn > 0 && is_ws(v[vn - 1]))
            vn--;
        rc = add_entry(s, section, l, kn, v, vn, first);
        if (rc)
            goto out;
    }
    if (ls.crlf)
        rc = warn_note(s, ls.base + ls.crlf_first,
                       "%d line%s end%s in CR LF, the first line %d: systemd reads CR LF as one "
                       "line end, so they read as written, but it also ends a line at a CR "
                       "alone, a break no editor shows and a file kept in CR LF hides; write the "
                       "file with LF ends (sed -i 's/\\r$//' FILE)",
                       ls.crlf, ls.crlf == 1 ? "" : "s", ls.crlf == 1 ? "s" : "", ls.crlf_first);
out:
    if (rc == SW_ERANGE)
        sw_err_at(s->e, rc, s->u->parts[part].where, ls.line, 0, "line longer than %u bytes",
                  LINE_MAX_BYTES);
    sw_buf_free(&lb);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Environment.
 */
static const char *env_lookup(const struct sw_unit *u, const char *name, size_t n)
{
    const char *found = NULL;
    for (size_t i = 0; i < u->n_env; i++)
        if (!strncmp(u->env[i], name, n) && u->env[i][n] == '=')
            found = u->env[i] + n + 1; /* the last assignment wins */
    return found;
}

const char *sw_unit_env(const struct sw_unit *u, const char *var)
{
    return u ? env_lookup(u, var, strlen(var)) : NULL;
}

static int env_push(struct scan *s, const char *p, size_t n)
{
    int rc = sw_region_grow(s->a, &s->u->env, &s->cap_env, s->u->n_env, sizeof(char *), COUNT_MAX);
    if (rc)
        return rc;
    s->u->env[s->u->n_env] = sw_region_strndup(s->a, p, n);
    if (!s->u->env[s->u->n_env])
        return SW_ENOMEM;
    s->u->n_env++;
    return 0;
}

/* Split words. mode 0: systemd (quotes anywhere, C escapes, `$VAR`/`${VAR}` when expand);
 * mode 1: POSIX sh (single quotes literal; `;`, `&&`, `||`, `|`, `&` become their own words,
 * marked by a leading '\1'). */
enum { SPLIT_SYSTEMD = 0, SPLIT_SHELL = 1 };

static bool var_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

static int split(struct scan *s, const char *p, int mode, bool expand, struct words *w)
{
    struct sw_buf cur;
    sw_buf_init(&cur, LINE_MAX_BYTES);
    int rc = 0;
    size_t i = 0, n = strlen(p);
    while (i < n) {
        while (i < n && is_ws(p[i]))
            i++;
        if (i >= n)
            break;
        if (mode == SPLIT_SHELL && strchr(";&|", p[i])) {
            char op[4] = {'\1', p[i], 0, 0};
            if (i + 1 < n && p[i + 1] == p[i] && p[i] != ';')
                op[2] = p[++i];
            i++;
            rc = words_push(s, w, op, strlen(op));
            if (rc)
                goto out;
            continue;
        }
        sw_buf_reset(&cur);
        bool whole_var = false, any = false;
        char q = 0;
        while (i < n) {
            char c = p[i];
            if (!q && is_ws(c))
                break;
            if (!q && mode == SPLIT_SHELL && strchr(";&|", c))
                break;
            if (!q && (c == '"' || c == '\'')) {
                q = c;
                any = true;
                i++;
                continue;
            }
            if (q && c == q) {
                q = 0;
                i++;
                continue;
            }
            if (c == '\\' && i + 1 < n && !(mode == SPLIT_SHELL && q == '\'')) {
                char d = p[i + 1];
                char out = d;
                if (mode == SPLIT_SYSTEMD) {
                    /* systemd's cunescape: the one-letter escapes and \xNN (what the renderer
                     * writes for a control character) */
                    static const char from[] = "ntsrfvab", to[] = "\n\t \r\f\v\a\b";
                    const char *k = strchr(from, d);
                    if (d && k)
                        out = to[k - from];
                    if (d == 'x' && i + 3 < n && isxdigit((unsigned char)p[i + 2]) &&
                        isxdigit((unsigned char)p[i + 3])) {
                        char hex[3] = {p[i + 2], p[i + 3], '\0'};
                        out = (char)strtol(hex, NULL, 16);
                        i += 2;
                    }
                } else if (q == '"' && !strchr("$`\"\\\n", d)) {
                    rc = sw_buf_putc(&cur, '\\');
                    if (rc)
                        goto out;
                }
                rc = sw_buf_putc(&cur, out);
                if (rc)
                    goto out;
                i += 2;
                continue;
            }
            bool may_expand = expand && c == '$' && !(mode == SPLIT_SHELL && q == '\'');
            if (may_expand && i + 1 < n && p[i + 1] == '$' && mode == SPLIT_SYSTEMD) {
                rc = sw_buf_putc(&cur, '$');
                if (rc)
                    goto out;
                i += 2;
                continue;
            }
            if (may_expand && i + 1 < n && (p[i + 1] == '{' || var_char(p[i + 1], true))) {
                size_t ns, ne, next;
                bool braced = p[i + 1] == '{';
                if (braced) {
                    ns = i + 2;
                    ne = ns;
                    while (ne < n && p[ne] != '}')
                        ne++;
                    if (ne >= n) {
                        rc = sw_buf_putc(&cur, c);
                        if (rc)
                            goto out;
                        i++;
                        continue;
                    }
                    next = ne + 1;
                } else {
                    ns = i + 1;
                    ne = ns;
                    while (ne < n && var_char(p[ne], ne == ns))
                        ne++;
                    next = ne;
                }
                const char *val = env_lookup(s->u, p + ns, ne - ns);
                /* systemd splits a word that is exactly $VAR at whitespace; the shell splits any
                 * unquoted expansion. */
                bool whole = !braced && !q && cur.len == 0 && !any && (next >= n || is_ws(p[next]));
                if (whole && (mode == SPLIT_SYSTEMD || !q)) {
                    whole_var = true;
                    if (val) {
                        rc = split(s, val, SPLIT_SYSTEMD, false, w);
                        if (rc)
                            goto out;
                    }
                } else if (val) {
                    rc = sw_buf_puts(&cur, val);
                    if (rc)
                        goto out;
                }
                i = next;
                any = true;
                continue;
            }
            rc = sw_buf_putc(&cur, c);
            if (rc)
                goto out;
            i++;
        }
        if (whole_var)
            continue;
        if (cur.len || any) {
            rc = words_push(s, w, sw_buf_cstr(&cur), cur.len);
            if (rc)
                goto out;
        }
    }
out:
    sw_buf_free(&cur);
    return rc;
}

static int scan_env(struct scan *s, const char *env_file)
{
    struct sw_unit *u = s->u;
    int rc = 0;
    for (size_t i = 0; i < u->n_entries; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        if (en->reset || strcmp(en->section, "Service") || strcmp(en->key, "Environment"))
            continue;
        struct words w = {0};
        rc = split(s, en->value, SPLIT_SYSTEMD, false, &w);
        if (rc)
            return rc;
        for (size_t j = 0; j < w.n; j++) {
            if (!strchr(w.v[j], '='))
                continue;
            rc = env_push(s, w.v[j], strlen(w.v[j]));
            if (rc)
                return rc;
        }
    }
    /* An environment file: KEY=VALUE lines, # and ; comments, a value optionally quoted. */
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, env_file, env_file ? strlen(env_file) : 0, SIZE_MAX, 0);
    while (sw_lines_next(&it, &ln)) {
        const char *st = ln.s, *en = ln.s + ln.len;
        while (st < en && is_ws(*st))
            st++;
        while (en > st && is_ws(en[-1]))
            en--;
        if (st == en || *st == '#' || *st == ';')
            continue;
        const char *eq = memchr(st, '=', (size_t)(en - st));
        if (!eq)
            continue;
        const char *ke = eq;
        while (ke > st && is_ws(ke[-1]))
            ke--;
        const char *v = eq + 1;
        while (v < en && is_ws(*v))
            v++;
        if (en - v >= 2 && (*v == '"' || *v == '\'') && en[-1] == *v) {
            v++;
            en--;
        }
        struct sw_buf b;
        sw_buf_init(&b, LINE_MAX_BYTES);
        rc = sw_buf_append(&b, st, (size_t)(ke - st));
        if (!rc)
            rc = sw_buf_putc(&b, '=');
        if (!rc)
            rc = sw_buf_append(&b, v, (size_t)(en - v));
        if (!rc)
            rc = env_push(s, sw_buf_cstr(&b), b.len);
        sw_buf_free(&b);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Exec lines.
 */
static const char *const exec_keys[] = {"ExecStartPre", "ExecStart",  "ExecStartPost", "ExecStop",
                                        "ExecStopPost", "ExecReload", "ExecCondition", NULL};

static bool is_exec_key(const char *k)
{
    for (size_t i = 0; exec_keys[i]; i++)
        if (!strcmp(k, exec_keys[i]))
            return true;
    return false;
}

static int scan_cmd(struct scan *s, const struct sw_unit_entry *en)
{
    struct sw_unit *u = s->u;
    const char *v = en->value;
    unsigned prefix = 0;
    for (;; v++) {
        if (*v == '-')
            prefix |= SW_UNIT_EXEC_IGNORE;
        else if (*v == '@')
            prefix |= SW_UNIT_EXEC_ARGV0;
        else if (*v == '+')
            prefix |= SW_UNIT_EXEC_FULLPRIV;
        else if (*v == '!')
            prefix |= SW_UNIT_EXEC_NOAMBIENT;
        else if (*v == ':')
            prefix |= SW_UNIT_EXEC_NOENV;
        else
            break;
    }
    struct words w = {0}, raw = {0};
    int rc = split(s, v, SPLIT_SYSTEMD, !(prefix & SW_UNIT_EXEC_NOENV), &w);
    if (!rc)
        rc = split(s, v, SPLIT_SYSTEMD, false, &raw);
    if (rc)
        return rc;
    if ((prefix & SW_UNIT_EXEC_ARGV0) && w.n >= 2) {
        memmove(w.v + 1, w.v + 2, (w.n - 1) * sizeof(char *));
        w.n--;
    }
    if (w.n == 0)
        return 0;
    rc = sw_region_grow(s->a, &u->cmds, &s->cap_cmds, u->n_cmds, sizeof(*u->cmds), COUNT_MAX);
    if (rc)
        return rc;
    struct sw_unit_cmd *c = &u->cmds[u->n_cmds++];
    c->key = en->key;
    c->line = en->line;
    c->prefix = prefix;
    c->argv = w.v;
    c->argc = w.n;
    c->raw = raw.v;
    c->n_raw = raw.n;
    return 0;
}

static const char *base(const char *p)
{
    const char *sl = strrchr(p, '/');
    return sl ? sl + 1 : p;
}

static bool is_tool(const char *a)
{
    const char *b = base(a);
    return !strcmp(b, "podman") || !strcmp(b, "docker");
}

static bool is_shell(const char *a)
{
    const char *b = base(a);
    return !strcmp(b, "sh") || !strcmp(b, "bash") || !strcmp(b, "dash");
}

/* ---------------------------------------------------------------------------------------------
 * The container.
 */
static bool has_prefix(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

/* `podman run` boolean options (no value): everything else with two dashes and no '=' takes the
 * next word. Short clusters of these letters are flags: d i t P q. */
static const char *const run_bools[] = {"rm",
                                        "detach",
                                        "interactive",
                                        "tty",
                                        "privileged",
                                        "init",
                                        "replace",
                                        "read-only",
                                        "publish-all",
                                        "quiet",
                                        "no-hosts",
                                        "no-healthcheck",
                                        "rootfs",
                                        "env-host",
                                        "http-proxy",
                                        "oom-kill-disable",
                                        "read-only-tmpfs",
                                        "sig-proxy",
                                        "tls-verify",
                                        "help",
                                        NULL};

static bool run_bool(const char *name, size_t n)
{
    for (size_t i = 0; run_bools[i]; i++)
        if (strlen(run_bools[i]) == n && !strncmp(run_bools[i], name, n))
            return true;
    return false;
}

#define PUSH(arr, n, cap, val)                                                                     \
    do {                                                                                           \
        rc = sw_region_grow(s->a, &(arr), &(cap), (n), sizeof(*(arr)), COUNT_MAX);                 \
        if (rc)                                                                                    \
            return rc;                                                                             \
        (arr)[(n)++] = (val);                                                                      \
    } while (0)

static int add_mount_volume(struct scan *s, const char *v)
{
    struct sw_unit_container *c = &s->u->ctr;
    int rc;
    const char *c1 = strchr(v, ':');
    if (!c1)
        return 0; /* an anonymous volume: no host side */
    const char *c2 = strchr(c1 + 1, ':');
    struct sw_unit_mount m = {0};
    m.host = sw_region_strndup(s->a, v, (size_t)(c1 - v));
    m.cont = c2 ? sw_region_strndup(s->a, c1 + 1, (size_t)(c2 - c1 - 1))
                : sw_region_strdup(s->a, c1 + 1);
    if (!m.host || !m.cont)
        return SW_ENOMEM;
    if (c2) {
        const char *o = c2 + 1;
        while (*o) {
            size_t l = strcspn(o, ",");
            if (l == 2 && !strncmp(o, "ro", 2))
                m.ro = true;
            o += l;
            if (*o)
                o++;
        }
    }
    PUSH(c->mounts, c->n_mounts, s->cap_mounts, m);
    return 0;
}

static int add_mount_spec(struct scan *s, const char *v)
{
    struct sw_unit_container *c = &s->u->ctr;
    struct sw_unit_mount m = {0};
    int rc;
    bool bind = false;
    const char *o = v;
    while (*o) {
        size_t l = strcspn(o, ",");
        const char *eq = memchr(o, '=', l);
        size_t kl = eq ? (size_t)(eq - o) : l;
        const char *val = eq ? eq + 1 : o + l;
        size_t vl = (size_t)(o + l - val);
#define K(str) (kl == strlen(str) && !strncmp(o, str, kl))
        if (K("type"))
            bind = vl == 4 && !strncmp(val, "bind", 4);
        else if (K("source") || K("src"))
            m.host = sw_region_strndup(s->a, val, vl);
        else if (K("target") || K("destination") || K("dst"))
            m.cont = sw_region_strndup(s->a, val, vl);
        else if (K("ro") || K("readonly"))
            m.ro = !eq || (vl == 4 && !strncmp(val, "true", 4)) || (vl == 1 && *val == '1');
#undef K
        o += l;
        if (*o)
            o++;
    }
    if (!bind || !m.host || !m.cont)
        return 0;
    PUSH(c->mounts, c->n_mounts, s->cap_mounts, m);
    return 0;
}

/* argv[i] is `run` of a podman/docker command line: read its options, image and the rest. */
static int scan_run(struct scan *s, char **argv, size_t argc, size_t i, const char *key, int line,
                    bool via_shell)
{
    struct sw_unit_container *c = &s->u->ctr;
    int rc;
    if (c->found)
        return 0; /* the first container wins */
    c->found = true;
    c->tool = !strcmp(base(argv[0]), "docker") ? "docker" : "podman";
    c->key = key;
    c->line = line;
    c->via_shell = via_shell;
    c->stop_timeout_s = -1;
    for (i++; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || !a[1])
            break;
        const char *name = a, *val = NULL;
        size_t nl;
        bool is_long = a[1] == '-';
        if (is_long) {
            name = a + 2;
            const char *eq = strchr(name, '=');
            nl = eq ? (size_t)(eq - name) : strlen(name);
            if (eq)
                val = eq + 1;
            else if (!run_bool(name, nl) && i + 1 < argc)
                val = argv[++i];
        } else {
            name = a + 1;
            nl = strlen(name);
            if (strspn(name, "ditPq") == nl)
                continue;
            if (nl > 1 && strchr("vepwuhml", name[0])) {
                val = name + 1 + (name[1] == '=');
                nl = 1;
            } else if (i + 1 < argc) {
                val = argv[++i];
            }
        }
        if (!val)
            continue;
        rc = 0;
#define N(str) (nl == strlen(str) && !strncmp(name, str, nl))
        if (N("name"))
            c->name = val;
        else if (N("v") || N("volume"))
            rc = add_mount_volume(s, val);
        else if (N("mount"))
            rc = add_mount_spec(s, val);
        else if (N("device"))
            PUSH(c->devices, c->n_devices, s->cap_devices, val);
        else if (N("e") || N("env"))
            PUSH(c->env, c->n_env, s->cap_cenv, val);
        else if (N("entrypoint"))
            c->entrypoint = val;
        else if (N("env-file"))
            PUSH(c->env_files, c->n_env_files, s->cap_cenvf, val);
        else if (N("stop-timeout")) {
            int64_t t;
            if (!sw_parse_i64(val, &t, NULL) && t >= 0)
                c->stop_timeout_s = t;
        }
#undef N
        if (rc)
            return rc;
    }
    if (i < argc) {
        c->image = argv[i++];
        c->argv = (const char **)(argv + i);
        c->argc = argc - i;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The engine and its paths.
 */
static int add_path(struct scan *s, const char *role, const char *flag, const char *path)
{
    struct sw_unit *u = s->u;
    int rc;
    struct sw_unit_path p = {role, flag, path};
    if (!*path)
        return 0;
    PUSH(u->paths, u->n_paths, s->cap_paths, p);
    return 0;
}

struct pathopt {
    const char *flag, *alt, *role;
};

static const struct pathopt llama_opts[] = {{"-m", "--model", "model"},
                                            {"--mmproj", NULL, "projector"},
                                            {"-md", "--model-draft", "draft model"},
                                            {"--chat-template-file", NULL, "chat template"},
                                            {"--lora", NULL, "LoRA adapter"},
                                            {NULL, NULL, NULL}};
static const struct pathopt vllm_opts[] = {
    {"--model", NULL, "model"}, {"--tokenizer", NULL, "tokenizer"}, {NULL, NULL, NULL}};
static const struct pathopt sglang_opts[] = {
    {"--model-path", NULL, "model"},
    {"--tokenizer-path", NULL, "tokenizer"},
    {"--speculative-draft-model-path", NULL, "draft model"},
    {NULL, NULL, NULL}};

static int scan_spec_config(struct scan *s, const char *json)
{
    long f0 = sw_alloc_failures();
    json_t *j = sw_json_parse(json, strlen(json), "--speculative-config", NULL);
    /* jansson (2.14) may return a value after a failed allocation in its lexer, with a string
     * cut short: any failure during the parse is out of memory, whatever it returned. */
    if (sw_alloc_failures() != f0) {
        json_decref(j);
        return SW_ENOMEM;
    }
    if (!j)
        return 0; /* not JSON: no draft path to read */
    int rc = 0;
    const json_t *m = json_is_object(j) ? json_object_get(j, "model") : NULL;
    if (json_is_string(m)) {
        const char *p = sw_region_strdup(s->a, json_string_value(m));
        rc = p ? add_path(s, "draft model", "--speculative-config model", p) : SW_ENOMEM;
    }
    json_decref(j);
    return rc;
}

static int scan_engine_args(struct scan *s, char **argv, size_t argc, size_t i,
                            const struct pathopt *tab)
{
    int rc = 0;
    for (; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (a[0] != '-')
            continue;
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        if (!val)
            break;
        if (s->u->engine == SW_UNIT_ENGINE_VLLM && nl == 20 &&
            !strncmp(a, "--speculative-config", nl)) {
            rc = scan_spec_config(s, val);
            continue;
        }
        for (const struct pathopt *p = tab; p->flag; p++) {
            if ((strlen(p->flag) == nl && !strncmp(a, p->flag, nl)) ||
                (p->alt && strlen(p->alt) == nl && !strncmp(a, p->alt, nl))) {
                rc = add_path(s, p->role, p->flag, val);
                if (!eq)
                    i++;
                break;
            }
        }
    }
    return rc;
}

static bool python(const char *a)
{
    return has_prefix(base(a), "python");
}

/* Recognise the engine in argv[0..argc) (a native command, or the words after the image);
 * image helps when the words are only arguments to the image's entrypoint. */
static int scan_engine(struct scan *s, char **argv, size_t argc, const char *image, int line)
{
    struct sw_unit *u = s->u;
    if (u->engine != SW_UNIT_ENGINE_NONE)
        return 0;
    size_t i = 0;
    bool positional = false;
    enum sw_unit_engine e = SW_UNIT_ENGINE_NONE;
    if (argc >= 1 && !strcmp(base(argv[0]), "llama-server")) {
        e = SW_UNIT_ENGINE_LLAMACPP;
        i = 1;
    } else if (argc >= 2 && !strcmp(base(argv[0]), "vllm") && !strcmp(argv[1], "serve")) {
        e = SW_UNIT_ENGINE_VLLM;
        i = 2;
    } else if (argc >= 3 && python(argv[0]) && !strcmp(argv[1], "-m") &&
               !strcmp(argv[2], "vllm.entrypoints.openai.api_server")) {
        e = SW_UNIT_ENGINE_VLLM;
        i = 3;
    } else if (argc >= 3 && python(argv[0]) && !strcmp(argv[1], "-m") &&
               !strcmp(argv[2], "sglang.launch_server")) {
        e = SW_UNIT_ENGINE_SGLANG;
        i = 3;
    } else if (image && strstr(image, "vllm") && argc >= 1 && argv[0][0] != '-' &&
               !strchr(argv[0], '=') && strncmp(argv[0], "/usr/", 5) &&
               strncmp(argv[0], "/bin/", 5)) {
        /* vllm/vllm-openai's entrypoint is `vllm serve`: a first word that is not a program is
         * the positional model. */
        e = SW_UNIT_ENGINE_VLLM;
        positional = true;
    } else if (image && (argc == 0 || argv[0][0] == '-')) {
        /* Only arguments: the image's entrypoint is the engine (vllm/vllm-openai runs the
         * OpenAI API server; llama.cpp's server images run llama-server). */
        if (strstr(image, "vllm"))
            e = SW_UNIT_ENGINE_VLLM;
        else if (strstr(image, "sglang"))
            e = SW_UNIT_ENGINE_SGLANG;
        else if (strstr(image, "llama.cpp") || strstr(image, "llama-cpp") ||
                 strstr(image, "llama-server"))
            e = SW_UNIT_ENGINE_LLAMACPP;
    }
    if (e == SW_UNIT_ENGINE_NONE)
        return 0;
    u->engine = e;
    u->engine_line = line;
    int rc = 0;
    if (positional || (e == SW_UNIT_ENGINE_VLLM && i >= 2 && i < argc &&
                       !strcmp(argv[i - 1], "serve") && argv[i][0] != '-'))
        rc = add_path(s, "model", "serve (positional)", argv[i]);
    if (!rc)
        rc = scan_engine_args(s, argv, argc, i,
                              e == SW_UNIT_ENGINE_LLAMACPP ? llama_opts
                              : e == SW_UNIT_ENGINE_VLLM   ? vllm_opts
                                                           : sglang_opts);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * One simple command (argv), from an Exec line or a piece of `sh -c`.
 */
static int stop_grace(struct scan *s, char **argv, size_t argc, int line)
{
    struct sw_unit *u = s->u;
    int64_t t = -1;
    for (size_t i = 2; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!strcmp(a, "-t") || !strcmp(a, "--time") || !strcmp(a, "--timeout"))
            val = i + 1 < argc ? argv[++i] : NULL;
        else if (has_prefix(a, "--time="))
            val = a + 7;
        else if (has_prefix(a, "--timeout="))
            val = a + 10;
        else if (has_prefix(a, "-t=") || (has_prefix(a, "-t") && isdigit((unsigned char)a[2])))
            val = a + 2 + (a[2] == '=');
        if (val && sw_parse_i64(val, &t, NULL))
            t = -1;
    }
    char how[96];
    if (t >= 0)
        snprintf(how, sizeof(how), "%s stop -t %lld", base(argv[0]), (long long)t);
    else {
        t = 10;
        snprintf(how, sizeof(how), "%s stop without -t: its default 10 s", base(argv[0]));
    }
    if (t > u->stop_grace_s) {
        u->stop_grace_s = t;
        u->stop_grace_line = line;
        snprintf(u->stop_grace_how, sizeof(u->stop_grace_how), "%s", how);
    }
    return 0;
}

static int scan_simple(struct scan *s, const struct sw_unit_cmd *c, char **argv, size_t argc,
                       bool via_shell, bool last)
{
    int rc;
    if (argc && !strcmp(argv[0], "exec")) {
        argv++;
        argc--;
    }
    if (!argc)
        return 0;
    bool start = !strcmp(c->key, "ExecStart");
    if (is_tool(argv[0]) && argc >= 2) {
        size_t i = 1;
        if (!strcmp(argv[1], "container") && argc >= 3)
            i = 2;
        if (!strcmp(argv[i], "run") && (start || !strcmp(c->key, "ExecStartPre"))) {
            rc = scan_run(s, argv, argc, i, c->key, c->line, via_shell);
            if (rc)
                return rc;
            if (s->u->ctr.line != c->line || !s->u->ctr.argv)
                return 0;
            if (!s->u->ctr.entrypoint)
                return scan_engine(s, (char **)s->u->ctr.argv, s->u->ctr.argc, s->u->ctr.image,
                                   c->line);
            /* --entrypoint=PROGRAM IMAGE ARGS: the engine's command line is PROGRAM ARGS */
            size_t n = s->u->ctr.argc + 1;
            char **ev = sw_malloc(n * sizeof(*ev));
            if (!ev)
                return sw_err_set(s->e, SW_ENOMEM, "out of memory");
            ev[0] = (char *)s->u->ctr.entrypoint;
            for (size_t k = 1; k < n; k++)
                ev[k] = (char *)s->u->ctr.argv[k - 1];
            rc = scan_engine(s, ev, n, s->u->ctr.image, c->line);
            sw_free(ev);
            return rc;
        }
        if (!strcmp(argv[i], "wait") && start && last) {
            s->u->wait_line = c->line;
            return 0;
        }
        if (!strcmp(argv[i], "stop") && !strcmp(c->key, "ExecStop"))
            return stop_grace(s, argv + (i - 1), argc - (i - 1), c->line);
        return 0;
    }
    if (start)
        return scan_engine(s, argv, argc, NULL, c->line);
    return 0;
}

static int scan_exec(struct scan *s, const struct sw_unit_cmd *c)
{
    if (c->argc >= 3 && is_shell(c->argv[0]) && !strcmp(c->argv[1], "-c")) {
        struct words w = {0};
        int rc = split(s, c->argv[2], SPLIT_SHELL, true, &w);
        if (rc || w.n == 0)
            return rc;
        size_t st = 0;
        for (size_t i = 0; i <= w.n; i++) {
            if (i < w.n && w.v[i][0] != '\1')
                continue;
            /* the last simple command is the main process when the shell execs it */
            rc = scan_simple(s, c, w.v + st, i - st, true, i == w.n);
            if (rc)
                return rc;
            st = i + 1;
        }
        return 0;
    }
    return scan_simple(s, c, c->argv, c->argc, false, true);
}

/* ---------------------------------------------------------------------------------------------
 * Entry points.
 */
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
    struct scan s = {.u = u, .a = a, .e = e};
    for (size_t k = 0; k < n; k++) {
        rc = scan_lines(&s, k, u->parts[k].text, u->parts[k].len);
        if (rc)
            goto fail;
    }
    rc = scan_env(&s, env_file);
    if (rc)
        goto fail;
    for (size_t i = 0; i < u->n_entries; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        if (en->reset || strcmp(en->section, "Service") || !is_exec_key(en->key))
            continue;
        rc = scan_cmd(&s, en);
        if (rc)
            goto fail;
    }
    for (size_t i = 0; i < u->n_cmds; i++) {
        rc = scan_exec(&s, &u->cmds[i]);
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
        sw_err_at(e, rc, where, 0, 0, "more than %u assignments, words or paths", COUNT_MAX);
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

int sw_unit_timespan_ms(const char *s, int64_t *ms)
{
    static const struct {
        const char *u;
        int64_t us;
    } units[] = {{"usec", 1},
                 {"us", 1},
                 {"msec", 1000},
                 {"ms", 1000},
                 {"seconds", 1000000},
                 {"second", 1000000},
                 {"sec", 1000000},
                 {"s", 1000000},
                 {"minutes", 60000000},
                 {"minute", 60000000},
                 {"min", 60000000},
                 {"months", 2629800000000},
                 {"month", 2629800000000},
                 {"M", 2629800000000},
                 {"m", 60000000},
                 {"hours", 3600000000},
                 {"hour", 3600000000},
                 {"hr", 3600000000},
                 {"h", 3600000000},
                 {"days", 86400000000},
                 {"day", 86400000000},
                 {"d", 86400000000},
                 {"weeks", 604800000000},
                 {"week", 604800000000},
                 {"w", 604800000000},
                 {"years", 31557600000000},
                 {"year", 31557600000000},
                 {"y", 31557600000000}};
    while (*s && is_ws(*s))
        s++;
    if (!strcmp(s, "infinity")) {
        *ms = INT64_MAX;
        return 0;
    }
    int64_t total_us = 0;
    bool any = false;
    while (*s) {
        while (*s && is_ws(*s))
            s++;
        if (!*s)
            break;
        if (!isdigit((unsigned char)*s))
            return SW_EPARSE;
        int64_t v = 0;
        while (isdigit((unsigned char)*s)) {
            if (v > INT64_MAX / 10 - 10)
                return SW_EPARSE;
            v = v * 10 + (*s++ - '0');
        }
        int64_t frac_num = 0, frac_den = 1;
        if (*s == '.') {
            s++;
            while (isdigit((unsigned char)*s)) {
                if (frac_den < 1000000) {
                    frac_num = frac_num * 10 + (*s - '0');
                    frac_den *= 10;
                }
                s++;
            }
        }
        while (*s && is_ws(*s))
            s++;
        int64_t mult = 1000000; /* a bare number is seconds */
        size_t ul = 0;
        while (isalpha((unsigned char)s[ul]))
            ul++;
        if (ul) {
            mult = 0;
            for (size_t k = 0; k < SW_ARRAY_LEN(units); k++)
                if (strlen(units[k].u) == ul && !strncmp(s, units[k].u, ul)) {
                    mult = units[k].us;
                    break;
                }
            if (!mult)
                return SW_EPARSE;
            s += ul;
        }
        /* the fraction is below one unit (frac_num < frac_den), so it cannot overflow; the
         * whole part must leave room for it ("292271.999999y" passed v <= INT64_MAX / mult) */
        int64_t frac = (mult / frac_den) * frac_num;
        if (v > (INT64_MAX - frac) / mult)
            return SW_EPARSE;
        int64_t add = v * mult + frac;
        if (total_us > INT64_MAX - add)
            return SW_EPARSE;
        total_us += add;
        any = true;
    }
    if (!any)
        return SW_EPARSE;
    *ms = total_us / 1000;
    return 0;
}
