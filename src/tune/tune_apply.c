/*
 * tune's winner written back into the fleet file (`slipway tune --apply`, sw_tune_apply).
 *
 * The edit is textual: each crowned setting replaces the one scalar the file already holds for it
 * (a shape field's value, the value after an engine flag in `args`, an environment variable's
 * value), found by the position the loader recorded, so every comment, anchor and the layout
 * stay as they were. The edited text is loaded again from a file beside the original (relative
 * paths resolve the same) and checked: every setting reads back as crowned and nothing else of
 * any endpoint moved (shape, args, env). Only then is it written, atomically (temp + rename),
 * and only if the file did not change since it was read.
 *
 * What it deliberately does not do: add what the file does not spell (a flag absent from args,
 * a shape field not written, a value imported from an env file or defined under another file):
 * it refuses, naming the setting and what to add, and writes nothing.
 */
#include "tune_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_EDITS 16
#define MAX_FILE  (8u << 20)

struct edit {
    const char *name; /* the knob */
    size_t off, len;  /* the scalar's bytes in the file, quotes included */
    char text[200];   /* what replaces them */
    int line;
};

/* The byte offset of a 1-based line:col, or (size_t)-1. */
static size_t offset_of(const char *t, size_t n, int line, int col)
{
    if (line < 1 || col < 1)
        return (size_t)-1;
    size_t o = 0;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(t + o, '\n', n - o);
        if (!nl)
            return (size_t)-1;
        o = (size_t)(nl - t) + 1;
    }
    o += (size_t)col - 1;
    return o < n ? o : (size_t)-1;
}

/* Is offset o inside a flow collection ([...] or {...}) opened on its own line? */
static bool in_flow(const char *t, size_t o)
{
    size_t s = o;
    while (s && t[s - 1] != '\n')
        s--;
    int depth = 0;
    char q = 0;
    for (size_t i = s; i < o; i++) {
        char c = t[i];
        if (q) {
            if (c == q)
                q = 0;
        } else if (c == '\'' || c == '"') {
            q = c;
        } else if (c == '#' && (i == s || t[i - 1] == ' ')) {
            break;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return depth > 0;
}

/* The scalar at offset o (the loader's position: a quoted scalar's first content byte, a plain
 * one's first byte): its start and length, quotes included; *quote the quote character or 0.
 * false when it cannot be delimited. */
static bool scalar_at(const char *t, size_t n, size_t o, size_t *start, size_t *len, char *quote)
{
    *quote = 0;
    if (o > 0 && (t[o - 1] == '\'' || t[o - 1] == '"')) {
        char q = t[o - 1];
        size_t i = o;
        while (i < n && t[i] != '\n') {
            if (q == '\'' && t[i] == '\'' && i + 1 < n && t[i + 1] == '\'') {
                i += 2;
                continue;
            }
            if (q == '"' && t[i] == '\\' && i + 1 < n) {
                i += 2;
                continue;
            }
            if (t[i] == q) {
                *start = o - 1;
                *len = i + 1 - (o - 1);
                *quote = q;
                return true;
            }
            i++;
        }
        return false;
    }
    bool flow = in_flow(t, o);
    size_t i = o;
    while (i < n && t[i] != '\n' && t[i] != '\r') {
        if (flow && (t[i] == ',' || t[i] == ']' || t[i] == '}'))
            break;
        if (t[i] == '#' && i > o && (t[i - 1] == ' ' || t[i - 1] == '\t'))
            break;
        i++;
    }
    while (i > o && (t[i - 1] == ' ' || t[i - 1] == '\t'))
        i--;
    if (i == o)
        return false;
    *start = o;
    *len = i - o;
    return true;
}

/* The replacement text: in the quote the file used, plain when the value needs none. */
static int render(const char *v, char quote, char *out, size_t n)
{
    bool plain_ok = *v != '\0';
    for (const char *p = v; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-' || *p == '+' || *p == '/'))
            plain_ok = false;
    if (*v == '-' && v[1] != '\0' && !(v[1] >= '0' && v[1] <= '9'))
        plain_ok = false; /* "--flag"-like: quoted, as YAML would read it fine but people not */
    if (!strcmp(v, "on") || !strcmp(v, "off") || !strcmp(v, "yes") || !strcmp(v, "no") ||
        !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "null"))
        plain_ok = quote == 0 && plain_ok; /* keep a plain bool plain, a quoted one quoted */
    if (!quote && plain_ok)
        return snprintf(out, n, "%s", v) < (int)n ? 0 : SW_ERANGE;
    char q = quote ? quote : '\'';
    size_t k = 0;
    if (k + 1 < n)
        out[k++] = q;
    for (const char *p = v; *p && k + 3 < n; p++) {
        if (*p == '\n' || (q == '"' && (*p == '"' || *p == '\\')))
            return SW_EINVAL;
        if (q == '\'' && *p == '\'')
            out[k++] = '\'';
        out[k++] = *p;
    }
    if (k + 2 > n)
        return SW_ERANGE;
    out[k++] = q;
    out[k] = '\0';
    return 0;
}

/* Where the endpoint holds a setting's value: its position, or an explanation in why. */
static bool locate(const struct sw_fleet_endpoint *ep, const char *knob, struct sw_fleet_at *at,
                   char *why, size_t wn)
{
    memset(at, 0, sizeof(*at));
    if (!strncmp(knob, "arg.", 4)) {
        const char *flag = knob + 4;
        size_t fl = strlen(flag);
        for (size_t i = 0; i < ep->n_args; i++) {
            const char *a = ep->args[i].v;
            if (!a)
                continue;
            if (!strncmp(a, flag, fl) && a[fl] == '=') {
                snprintf(why, wn, "args spells %s as one word ('%s'): change it by hand", flag, a);
                return false;
            }
            if (!sw__tune_flag_is(a, flag))
                continue;
            if (i + 1 >= ep->n_args || !ep->args[i + 1].v || ep->args[i + 1].v[0] == '-') {
                snprintf(why, wn, "args gives %s without a value: add the value after it", a);
                return false;
            }
            *at = ep->args[i + 1].at;
        }
        if (!at->line)
            snprintf(why, wn, "args does not spell %s: add `%s, VALUE` to args", flag, flag);
        return at->line > 0;
    }
    if (!strncmp(knob, "env.", 4)) {
        for (size_t i = 0; i < ep->n_env; i++)
            if (!strcmp(ep->env[i].name, knob + 4) && ep->env[i].value)
                *at = ep->env[i].at;
        if (!at->line)
            snprintf(why, wn, "env does not set %s: add `%s: VALUE` to env", knob + 4, knob + 4);
        return at->line > 0;
    }
    struct sw_fleet_value v;
    if (sw_fleet_shape_get(&ep->shape, knob, &v) || !v.set || !v.at.line) {
        snprintf(why, wn, "shape does not write %s: add `%s: VALUE` to shape", knob, knob);
        return false;
    }
    *at = v.at;
    return true;
}

/* Everything of an endpoint apply must not move, one line each, the settings' own values left
 * out. */
static int digest(const struct sw_fleet_endpoint *ep, const json_t *settings, struct sw_buf *b)
{
    size_t nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    char v[256];
    int rc = sw_buf_printf(b, "endpoint %s\n", ep->name);
    for (size_t i = 0; !rc && i < nf; i++) {
        struct sw_fleet_value x;
        if (json_object_get(settings, fs[i].name))
            continue;
        v[0] = '\0';
        if (sw_fleet_shape_get(&ep->shape, fs[i].name, &x) == 0 && x.set)
            sw__tune_fmt_value(&x, v, sizeof(v));
        rc = sw_buf_printf(b, "shape %s=%s\n", fs[i].name, v);
    }
    bool skip_next = false;
    for (size_t i = 0; !rc && i < ep->n_args; i++) {
        const char *a = ep->args[i].v ? ep->args[i].v : "(null)";
        if (skip_next) {
            skip_next = false;
            rc = sw_buf_puts(b, "arg *\n");
            continue;
        }
        const char *kn;
        const json_t *kv;
        json_object_foreach((json_t *)settings, kn, kv)
        {
            if (!strncmp(kn, "arg.", 4) && sw__tune_flag_is(a, kn + 4))
                skip_next = true;
        }
        rc = sw_buf_printf(b, "arg %s\n", a);
    }
    for (size_t i = 0; !rc && i < ep->n_env; i++) {
        char k[200];
        snprintf(k, sizeof(k), "env.%s", ep->env[i].name);
        if (json_object_get(settings, k))
            continue;
        rc = sw_buf_printf(b, "env %s=%s\n", ep->env[i].name,
                           ep->env[i].value ? ep->env[i].value : "(secret)");
    }
    return rc;
}

static int fleet_digest(const struct sw_fleet *f, const char *target, const json_t *settings,
                        struct sw_buf *b)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < f->n_endpoints; i++)
        rc = digest(&f->endpoints[i], strcmp(f->endpoints[i].name, target) ? NULL : settings, b);
    return rc;
}

/* The lines an edit touched, old and new, for people. */
static void diff_line(struct sw_buf *d, const char *old, size_t on, const char *neu, size_t nn,
                      size_t at, int line)
{
    size_t s = at;
    while (s && old[s - 1] != '\n')
        s--;
    const char *e1 = memchr(old + at, '\n', on - at);
    size_t oe = e1 ? (size_t)(e1 - old) : on;
    /* the same line in the new text starts at the same offset (edits are applied back to front
     * and this line's start precedes every later edit) */
    const char *e2 = memchr(neu + s, '\n', nn - s);
    size_t ne = e2 ? (size_t)(e2 - neu) : nn;
    sw_buf_printf(d, "@@ line %d @@\n-%.*s\n+%.*s\n", line, (int)(oe - s), old + s, (int)(ne - s),
                  neu + s);
}

int sw_tune_apply(const char *path, const char *endpoint, const json_t *settings, bool dry_run,
                  struct sw_buf *diff, struct sw_err *e)
{
    char *text = NULL, *again = NULL, *out = NULL;
    size_t n = 0, n2 = 0;
    struct sw_fleet *f = NULL, *g = NULL;
    struct sw_buf d1, d2;
    struct edit ed[MAX_EDITS];
    size_t ne = 0;
    char tmp[4200] = "";
    int rc;
    sw_buf_init(&d1, 1 << 22);
    sw_buf_init(&d2, 1 << 22);
    if (!path || !endpoint || !json_is_object(settings) || !json_object_size(settings))
        return sw_err_set(e, SW_EINVAL, "tune apply: a fleet, an endpoint and settings needed");
    rc = sw_read_file(path, MAX_FILE, &text, &n, e);
    if (rc)
        goto out;
    rc = sw_fleet_load(path, NULL, &f, e);
    if (rc)
        goto out;
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, endpoint);
    if (!ep) {
        rc = sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", path, endpoint);
        goto out;
    }
    const char *kn;
    const json_t *kv;
    json_object_foreach((json_t *)settings, kn, kv)
    {
        const char *val = json_string_value(kv);
        struct sw_fleet_at at;
        char why[400];
        if (!val || ne >= MAX_EDITS) {
            rc = sw_err_set(e, SW_EINVAL, "tune apply: setting %s is not a string value", kn);
            goto out;
        }
        if (!locate(ep, kn, &at, why, sizeof(why))) {
            rc = sw_err_set(e, SW_EUNSUPPORTED, "%s: endpoint %s: %s=%s: %s (nothing written)",
                            path, endpoint, kn, val, why);
            goto out;
        }
        if (!at.file || strcmp(at.file, path)) {
            rc = sw_err_set(e, SW_EUNSUPPORTED,
                            "%s: endpoint %s: %s is written in %s:%d, not in this file: set it "
                            "to %s there (nothing written)",
                            path, endpoint, kn, at.file ? at.file : "?", at.line, val);
            goto out;
        }
        size_t o = offset_of(text, n, at.line, at.col), start = 0, len = 0;
        char quote = 0;
        if (o == (size_t)-1 || !scalar_at(text, n, o, &start, &len, &quote)) {
            rc = sw_err_set(e, SW_EUNSUPPORTED,
                            "%s:%d:%d: %s: the value cannot be delimited here (nothing written)",
                            path, at.line, at.col, kn);
            goto out;
        }
        for (size_t i = 0; i < ne; i++)
            if (ed[i].off == start) {
                rc = sw_err_set(e, SW_EUNSUPPORTED,
                                "%s:%d:%d: %s and %s are the same scalar (nothing written)", path,
                                at.line, at.col, ed[i].name, kn);
                goto out;
            }
        struct edit *x = &ed[ne++];
        x->name = kn;
        x->off = start;
        x->len = len;
        x->line = at.line;
        rc = render(val, quote, x->text, sizeof(x->text));
        if (rc) {
            rc = sw_err_set(e, rc, "%s: %s: '%s' cannot be written as a YAML scalar here", path, kn,
                            val);
            goto out;
        }
    }
    /* back to front, so earlier offsets stay valid */
    for (size_t i = 1; i < ne; i++)
        for (size_t j = i; j > 0 && ed[j - 1].off < ed[j].off; j--) {
            struct edit t = ed[j];
            ed[j] = ed[j - 1];
            ed[j - 1] = t;
        }
    size_t cap = n + 1;
    for (size_t i = 0; i < ne; i++)
        cap += strlen(ed[i].text);
    out = sw_malloc(cap);
    if (!out) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    memcpy(out, text, n + 1);
    size_t on = n;
    for (size_t i = 0; i < ne; i++) {
        size_t tl = strlen(ed[i].text);
        memmove(out + ed[i].off + tl, out + ed[i].off + ed[i].len, on - ed[i].off - ed[i].len + 1);
        memcpy(out + ed[i].off, ed[i].text, tl);
        on = on - ed[i].len + tl;
    }
    if (diff)
        for (size_t i = ne; i-- > 0;)
            diff_line(diff, text, n, out, on, ed[i].off, ed[i].line);

    /* the edited text, loaded from beside the original and checked */
    {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", path);
        char *sl = strrchr(dir, '/');
        if (sl)
            *sl = '\0';
        else
            snprintf(dir, sizeof(dir), ".");
        snprintf(tmp, sizeof(tmp), "%s/.tune-apply-XXXXXX.yaml", dir);
        int fd = mkstemps(tmp, 5);
        if (fd < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: %s", tmp, strerror(errno));
            tmp[0] = '\0';
            goto out;
        }
        ssize_t w = write(fd, out, on);
        close(fd);
        if (w != (ssize_t)on) {
            rc = sw_err_set(e, SW_EIO, "%s: short write", tmp);
            goto out;
        }
    }
    struct sw_err le;
    sw_err_clear(&le);
    if (sw_fleet_load(tmp, NULL, &g, &le)) {
        rc = sw_err_set(e, SW_EINVAL, "%s: the edited file does not load (%s); nothing written",
                        path, le.msg);
        goto out;
    }
    const struct sw_fleet_endpoint *ep2 = sw_fleet_endpoint(g, endpoint);
    json_object_foreach((json_t *)settings, kn, kv)
    {
        char got[256] = "";
        struct sw_fleet_value v;
        if (!ep2)
            break;
        if (!strncmp(kn, "arg.", 4))
            sw__tune_arg_value(ep2, kn + 4, got, sizeof(got));
        else if (!strncmp(kn, "env.", 4))
            sw__tune_env_value(ep2, kn + 4, got, sizeof(got));
        else if (sw_fleet_shape_get(&ep2->shape, kn, &v) == 0 && v.set)
            sw__tune_fmt_value(&v, got, sizeof(got));
        if (strcmp(got, json_string_value(kv))) {
            rc = sw_err_set(e, SW_EINVAL,
                            "%s: %s reads back as '%s', not '%s', after the edit; nothing "
                            "written",
                            path, kn, got, json_string_value(kv));
            goto out;
        }
    }
    rc = fleet_digest(f, endpoint, settings, &d1);
    if (!rc)
        rc = fleet_digest(g, endpoint, settings, &d2);
    if (rc) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (!ep2 || strcmp(sw_buf_cstr(&d1), sw_buf_cstr(&d2))) {
        rc = sw_err_set(e, SW_EINVAL,
                        "%s: the edit would move more than the crowned settings (a value shared "
                        "through an anchor?); nothing written",
                        path);
        goto out;
    }
    if (dry_run)
        goto out;
    /* the file as read, still: nobody edited it meanwhile */
    rc = sw_read_file(path, MAX_FILE, &again, &n2, e);
    if (rc)
        goto out;
    if (n2 != n || memcmp(again, text, n)) {
        rc = sw_err_set(e, SW_EBUSY, "%s changed while tune applied its winner; nothing written",
                        path);
        goto out;
    }
    struct stat st;
    int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : 0644;
    rc = sw_write_file_atomic(path, out, on, mode, e);
out:
    if (tmp[0])
        unlink(tmp);
    sw_fleet_free(g);
    sw_fleet_free(f);
    sw_buf_free(&d1);
    sw_buf_free(&d2);
    sw_free(out);
    sw_free(again);
    sw_free(text);
    return rc;
}
