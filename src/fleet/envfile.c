/*
 * KEY=VALUE env files, read the way a POSIX shell's `source` would read the simple ones, and
 * refused (with line:col) where a shell would do something else than assign a value: run a command
 * ($(...), backticks, an unquoted space that turns the rest into a command), do arithmetic, expand
 * an unset name to nothing, or take a second value for a key. The operator's serve scripts source
 * these files; slipway must read the same numbers from them, or say exactly why it cannot.
 *
 * Supported: comments, blank lines, `export KEY=...`, bare / 'single' / "double" quoted values
 * (with \" \\ \$ \` inside double quotes, a backslash escape outside quotes), $NAME, ${NAME},
 * ${NAME-word} and ${NAME:-word} where NAME was set earlier in the file or in the caller's
 * environment (the environment wins, the same rule as for imports).
 * Not supported (refused): line continuations, multi-line values, ${NAME:=...} and the other
 * operators, special parameters ($1, $$, $?...), command and arithmetic substitution.
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct envp {
    const char *name;
    struct sw_err *e;
    sw_fleet_getenv_fn getenv;
    void *getenv_ctx;
    struct sw_fleet_envfile *ef;
    size_t cap;
    int line;
    const char *lstart;
};

static const char *real_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static int perr(struct envp *p, const char *at, const char *fmt, ...) SW_PRINTF(3, 4);
static int perr(struct envp *p, const char *at, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_err_at(p->e, SW_EPARSE, p->name, p->line, (int)(at - p->lstart) + 1, "%s", msg);
}

static bool name_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static const struct sw_fleet_envfile_var *find(const struct sw_fleet_envfile *ef, const char *k,
                                               size_t n)
{
    for (size_t i = 0; i < ef->n_vars; i++)
        if (strlen(ef->vars[i].key) == n && !memcmp(ef->vars[i].key, k, n))
            return &ef->vars[i];
    return NULL;
}

/* The value a name has at this point of the file: the environment's, else the file's. */
static const char *lookup(struct envp *p, const char *k, size_t n)
{
    char name[256];
    if (n >= sizeof(name))
        return NULL;
    memcpy(name, k, n);
    name[n] = '\0';
    const char *v = p->getenv(p->getenv_ctx, name);
    if (v)
        return v;
    const struct sw_fleet_envfile_var *fv = find(p->ef, k, n);
    return fv ? fv->value : NULL;
}

static int bufrc(struct envp *p, int rc)
{
    if (!rc)
        return 0;
    if (rc == SW_ENOMEM)
        return sw_err_set(p->e, SW_ENOMEM, "out of memory reading %s", p->name);
    return perr(p, p->lstart, "value too long");
}

/* $NAME's value v (NULL: set nowhere, an error at s) appended to out. */
static int put_value(struct envp *p, const char *s, const char *nm, size_t nl, const char *v,
                     struct sw_buf *out)
{
    if (!v)
        return perr(p, s,
                    "$%.*s is set neither earlier in the file nor in the environment (a shell "
                    "would silently expand it to nothing)",
                    (int)nl, nm);
    return bufrc(p, sw_buf_puts(out, v));
}

/* Expand the `$...` at *pp into out; advances *pp. */
static int expand(struct envp *p, const char **pp, const char *end, struct sw_buf *out)
{
    const char *s = *pp; /* at '$' */
    const char *q = s + 1;
    if (q < end && *q == '(')
        return perr(p, s, "%s",
                    q + 1 < end && q[1] == '('
                        ? "arithmetic $((...)) is refused: an env file holds values, not a script"
                        : "command substitution $(...) is refused: an env file holds values, not "
                          "a script");
    if (q < end && *q == '{') {
        q++;
        const char *nm = q;
        if (q >= end || !name_start(*q))
            return perr(p, s, "${...} must start with a variable name");
        while (q < end && name_char(*q))
            q++;
        size_t nl = (size_t)(q - nm);
        bool colon = false, has_default = false;
        const char *word = NULL;
        size_t wl = 0;
        if (q < end && *q == ':' && q + 1 < end && q[1] == '-') {
            colon = true;
            q++;
        }
        if (q < end && *q == '-') {
            has_default = true;
            q++;
            word = q;
            while (q < end && *q != '}') {
                if (*q == '$' || *q == '`' || *q == '"' || *q == '\'' || *q == '\\')
                    return perr(p, q,
                                "a ${NAME-word} default must be plain text (no quotes, $ or "
                                "backticks)");
                q++;
            }
            wl = (size_t)(q - word);
        }
        if (q >= end)
            return perr(p, s, "unterminated ${");
        if (*q != '}')
            return perr(p, s,
                        "only ${NAME}, ${NAME-word} and ${NAME:-word} are supported here (found "
                        "'%c' after the name)",
                        *q);
        *pp = q + 1;
        const char *v = lookup(p, nm, nl);
        if (has_default && (!v || (colon && !*v)))
            return bufrc(p, sw_buf_append(out, word, wl));
        return put_value(p, s, nm, nl, v, out);
    }
    if (q < end && name_start(*q)) {
        const char *nm = q;
        while (q < end && name_char(*q))
            q++;
        size_t nl = (size_t)(q - nm);
        *pp = q;
        return put_value(p, s, nm, nl, lookup(p, nm, nl), out);
    }
    if (q < end && (isdigit((unsigned char)*q) || strchr("$?!#@*-", *q)))
        return perr(p, s, "special parameter $%c is refused: it has no value in an env file", *q);
    /* a lone '$' before a space, a quote or the end is a literal dollar, as in the shell */
    *pp = s + 1;
    return bufrc(p, sw_buf_putc(out, '$'));
}

static int add_var(struct envp *p, const char *key, size_t kl, const char *val, bool exported,
                   int col)
{
    struct sw_fleet_envfile *ef = p->ef;
    if (sw_grow(&ef->vars, &p->cap, ef->n_vars, sizeof(*ef->vars), SIZE_MAX))
        return sw_err_set(p->e, SW_ENOMEM, "out of memory reading %s", p->name);
    char *k = sw_strndup(key, kl);
    char *v = sw_strdup(val);
    if (!k || !v) {
        sw_free(k);
        sw_free(v);
        return sw_err_set(p->e, SW_ENOMEM, "out of memory reading %s", p->name);
    }
    struct sw_fleet_envfile_var *var = &ef->vars[ef->n_vars++];
    var->key = k;
    var->value = v;
    var->exported = exported;
    var->line = p->line;
    var->col = col;
    return 0;
}

static int parse_line(struct envp *p, const char *s, const char *end, struct sw_buf *val)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    if (s == end || *s == '#')
        return 0;
    bool exported = false;
    if (end - s > 6 && !memcmp(s, "export", 6) && (s[6] == ' ' || s[6] == '\t')) {
        exported = true;
        s += 6;
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
    }
    const char *key = s;
    if (s == end || !name_start(*s))
        return perr(p, s,
                    "expected KEY=VALUE (a key is letters, digits and _, not starting with "
                    "a digit)");
    while (s < end && name_char(*s))
        s++;
    size_t kl = (size_t)(s - key);
    if (s == end || *s != '=') {
        const char *t = s;
        while (t < end && (*t == ' ' || *t == '\t'))
            t++;
        if (t < end && *t == '=')
            return perr(p, s,
                        "no spaces around '=': a shell would run %.*s as a command instead of "
                        "assigning it",
                        (int)kl, key);
        if (s == end || *s == ' ' || *s == '\t')
            return perr(p, s, "%.*s has no '=VALUE': only assignments belong in an env file",
                        (int)kl, key);
        return perr(p, s, "expected '=' after %.*s", (int)kl, key);
    }
    const struct sw_fleet_envfile_var *prev = find(p->ef, key, kl);
    if (prev)
        return perr(p, key, "%.*s is set twice (first on line %d): say it once", (int)kl, key,
                    prev->line);
    s++; /* '=' */
    int col = (int)(s - p->lstart) + 1;
    sw_buf_reset(val);
    int rc = 0;
    if (s < end && *s == '~') {
        /* bash expands a leading ~ in an assignment to $HOME; ~user is refused */
        if (s + 1 < end && s[1] != '/')
            return perr(p, s, "~user paths are not supported: write the full path");
        const char *home = p->getenv(p->getenv_ctx, "HOME");
        if (!home || !*home)
            return perr(p, s, "~ needs HOME, which is not set");
        rc = sw_buf_puts(val, home);
        s++;
    }
    while (s < end && !rc) {
        char ch = *s;
        if (ch == ' ' || ch == '\t') {
            const char *t = s;
            while (t < end && (*t == ' ' || *t == '\t'))
                t++;
            if (t < end && *t != '#')
                return perr(p, t,
                            "unquoted space in the value of %.*s: a shell would run '%.*s' as a "
                            "command; quote the value",
                            (int)kl, key, (int)SW_MIN(end - t, 40), t);
            break;
        }
        if (ch == '`')
            return perr(p, s,
                        "command substitution with backticks is refused: an env file holds "
                        "values, not a script");
        if (strchr(";&|<>()", ch))
            return perr(p, s, "shell operator '%c' in the value of %.*s: quote the value", ch,
                        (int)kl, key);
        if (ch == '\\') {
            if (s + 1 >= end)
                return perr(p, s,
                            "a line continuation (\\ at the end of a line) is not "
                            "supported: put the value on one line");
            rc = sw_buf_putc(val, s[1]);
            s += 2;
            continue;
        }
        if (ch == '\'') {
            const char *q = memchr(s + 1, '\'', (size_t)(end - s - 1));
            if (!q)
                return perr(p, s, "unterminated single quote (values must fit on one line)");
            rc = sw_buf_append(val, s + 1, (size_t)(q - s - 1));
            s = q + 1;
            continue;
        }
        if (ch == '"') {
            const char *q = s + 1;
            for (;;) {
                if (q >= end)
                    return perr(p, s, "unterminated double quote (values must fit on one line)");
                if (*q == '"')
                    break;
                if (*q == '`')
                    return perr(p, q,
                                "command substitution with backticks is refused: an env "
                                "file holds values, not a script");
                if (*q == '\\' && q + 1 < end && strchr("\"\\$`", q[1])) {
                    rc = sw_buf_putc(val, q[1]);
                    q += 2;
                } else if (*q == '\\' && q + 1 >= end) {
                    return perr(p, q, "a line continuation inside quotes is not supported");
                } else if (*q == '$') {
                    rc = expand(p, &q, end, val);
                    if (rc)
                        return rc;
                    continue;
                } else {
                    rc = sw_buf_putc(val, *q);
                    q++;
                }
                if (rc)
                    break;
            }
            s = q + 1;
            continue;
        }
        if (ch == '$') {
            rc = expand(p, &s, end, val);
            if (rc)
                return rc;
            continue;
        }
        rc = sw_buf_putc(val, ch);
        s++;
    }
    if (rc)
        return bufrc(p, rc);
    return add_var(p, key, kl, sw_buf_cstr(val), exported, col);
}

void sw_fleet_envfile_free(struct sw_fleet_envfile *ef)
{
    if (!ef)
        return;
    for (size_t i = 0; i < ef->n_vars; i++) {
        sw_free((char *)ef->vars[i].key);
        sw_free((char *)ef->vars[i].value);
    }
    sw_free(ef->vars);
    sw_free((char *)ef->path);
    sw_free(ef);
}

int sw__fleet_envfile_parse(const char *name, const char *text, size_t len,
                            sw_fleet_getenv_fn getenv_fn, void *getenv_ctx,
                            struct sw_fleet_envfile **out, struct sw_err *e)
{
    int rc = 0;
    struct envp p;
    memset(&p, 0, sizeof(p));
    struct sw_buf val;
    sw_buf_init(&val, SW_FLEET_MAX_ENVFILE);
    *out = NULL;
    if (!name)
        name = "<env>";
    if (len > SW_FLEET_MAX_ENVFILE)
        return sw_err_at(e, SW_ERANGE, name, 0, 0, "is larger than %u bytes: not an env file",
                         SW_FLEET_MAX_ENVFILE);
    p.name = name;
    p.e = e;
    p.getenv = getenv_fn ? getenv_fn : real_getenv;
    p.getenv_ctx = getenv_ctx;
    p.ef = sw_calloc(1, sizeof(*p.ef));
    if (!p.ef)
        return sw_err_set(e, SW_ENOMEM, "out of memory reading %s", name);
    p.ef->path = sw_strdup(name);
    if (!p.ef->path) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory reading %s", name);
        goto out;
    }
    const char *s = text ? text : "";
    const char *end = s + (text ? len : 0);
    int bl = 0, bc = 0;
    bool nul = false;
    if (!sw__fleet_utf8_check(s, (size_t)(end - s), &bl, &bc, &nul)) {
        /* a binary file under an env-file name, or text in another encoding */
        rc = sw_err_at(e, SW_EPARSE, name, bl, bc, "%s",
                       nul ? "holds a NUL byte: this is not a text env file"
                           : "invalid UTF-8 here: an env file must be UTF-8 text");
        goto out;
    }
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, s, (size_t)(end - s), SIZE_MAX, SW_LINES_CRLF);
    while (sw_lines_next(&it, &ln)) {
        p.line = it.no;
        p.lstart = ln.s;
        rc = parse_line(&p, ln.s, ln.s + ln.len, &val);
        if (rc)
            goto out;
    }
    *out = p.ef;
    p.ef = NULL;
out:
    sw_buf_free(&val);
    sw_fleet_envfile_free(p.ef);
    return rc;
}

int sw_fleet_envfile_parse(const char *name, const char *text, size_t len,
                           sw_fleet_getenv_fn getenv_fn, void *getenv_ctx,
                           struct sw_fleet_envfile **out, struct sw_err *e)
{
    if (!out)
        return sw_err_set(e, SW_EINVAL, "sw_fleet_envfile_parse: no output");
    return sw__fleet_envfile_parse(name, text, len, getenv_fn, getenv_ctx, out, e);
}

int sw_fleet_envfile_load(const char *path, sw_fleet_getenv_fn getenv_fn, void *getenv_ctx,
                          struct sw_fleet_envfile **out, struct sw_err *e)
{
    if (!out)
        return sw_err_set(e, SW_EINVAL, "sw_fleet_envfile_load: no output");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, SW_FLEET_MAX_ENVFILE, &text, &len, e);
    if (rc)
        return rc;
    rc = sw__fleet_envfile_parse(path, text, len, getenv_fn, getenv_ctx, out, e);
    sw_free(text);
    return rc;
}

const struct sw_fleet_envfile_var *sw_fleet_envfile_get(const struct sw_fleet_envfile *ef,
                                                        const char *key)
{
    if (!ef || !key)
        return NULL;
    return find(ef, key, strlen(key));
}
