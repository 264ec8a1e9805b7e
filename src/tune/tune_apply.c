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
        bool joined = false;
        for (size_t i = sw__tune_arg_find(ep, flag, 0, &joined); i < ep->n_args;
             i = sw__tune_arg_find(ep, flag, i + 1, &joined)) {
            const char *a = ep->args[i].v;
            if (joined) {
                snprintf(why, wn, "args spells %s as one word ('%s'): change it by hand", flag, a);
                return false;
            }
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

/* One apply: the file as read, its edits, the edited text and where it was tried. */
struct apply {
    const char *path, *endpoint;
    const json_t *settings;
    char *text; /* the file as read */
    size_t n;
    struct sw_fleet *f; /* ... as loaded */
    struct edit ed[MAX_EDITS];
    size_t ne;
    char *out; /* the edited text */
    size_t on;
    char tmp[4200]; /* the edited text beside the file ("" when not written) */
};

/* The edit that writes val for the setting kn into the scalar the file holds for it. */
static int edit_of(struct apply *a, const struct sw_fleet_endpoint *ep, const char *kn,
                   const char *val, struct sw_err *e)
{
    struct sw_fleet_at at;
    char why[400];
    if (!val || a->ne >= MAX_EDITS)
        return sw_err_set(e, SW_EINVAL, "tune apply: setting %s is not a string value", kn);
    if (!locate(ep, kn, &at, why, sizeof(why)))
        return sw_err_set(e, SW_EUNSUPPORTED, "%s: endpoint %s: %s=%s: %s (nothing written)",
                          a->path, a->endpoint, kn, val, why);
    if (!at.file || strcmp(at.file, a->path))
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s: endpoint %s: %s is written in %s:%d, not in this file: set it to "
                          "%s there (nothing written)",
                          a->path, a->endpoint, kn, at.file ? at.file : "?", at.line, val);
    size_t o = offset_of(a->text, a->n, at.line, at.col), start = 0, len = 0;
    char quote = 0;
    if (o == (size_t)-1 || !scalar_at(a->text, a->n, o, &start, &len, &quote))
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s:%d:%d: %s: the value cannot be delimited here (nothing written)",
                          a->path, at.line, at.col, kn);
    for (size_t i = 0; i < a->ne; i++)
        if (a->ed[i].off == start)
            return sw_err_set(e, SW_EUNSUPPORTED,
                              "%s:%d:%d: %s and %s are the same scalar (nothing written)", a->path,
                              at.line, at.col, a->ed[i].name, kn);
    struct edit *x = &a->ed[a->ne++];
    x->name = kn;
    x->off = start;
    x->len = len;
    x->line = at.line;
    int rc = render(val, quote, x->text, sizeof(x->text));
    if (rc)
        return sw_err_set(e, rc, "%s: %s: '%s' cannot be written as a YAML scalar here", a->path,
                          kn, val);
    return 0;
}

/* Read and load the file, and find every setting's scalar in it. */
static int plan_edits(struct apply *a, struct sw_err *e)
{
    int rc = sw_read_file(a->path, MAX_FILE, &a->text, &a->n, e);
    if (!rc)
        rc = sw_fleet_load(a->path, NULL, &a->f, e);
    if (rc)
        return rc;
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(a->f, a->endpoint);
    if (!ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", a->path, a->endpoint);
    const char *kn;
    const json_t *kv;
    json_object_foreach((json_t *)a->settings, kn, kv)
    {
        rc = edit_of(a, ep, kn, json_string_value(kv), e);
        if (rc)
            return rc;
    }
    return 0;
}

/* The edits made on a copy of the text, back to front so earlier offsets stay valid; each
 * touched line into diff (NULL: none). */
static int splice(struct apply *a, struct sw_buf *diff, struct sw_err *e)
{
    struct edit *ed = a->ed;
    for (size_t i = 1; i < a->ne; i++)
        for (size_t j = i; j > 0 && ed[j - 1].off < ed[j].off; j--) {
            struct edit t = ed[j];
            ed[j] = ed[j - 1];
            ed[j - 1] = t;
        }
    size_t cap = a->n + 1;
    for (size_t i = 0; i < a->ne; i++)
        cap += strlen(ed[i].text);
    a->out = sw_malloc(cap);
    if (!a->out)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    memcpy(a->out, a->text, a->n + 1);
    size_t on = a->n;
    for (size_t i = 0; i < a->ne; i++) {
        size_t tl = strlen(ed[i].text);
        memmove(a->out + ed[i].off + tl, a->out + ed[i].off + ed[i].len,
                on - ed[i].off - ed[i].len + 1);
        memcpy(a->out + ed[i].off, ed[i].text, tl);
        on = on - ed[i].len + tl;
    }
    a->on = on;
    if (diff)
        for (size_t i = a->ne; i-- > 0;)
            diff_line(diff, a->text, a->n, a->out, on, ed[i].off, ed[i].line);
    return 0;
}

/* The edited text into a temporary file beside the original (relative paths resolve the same). */
static int write_beside(struct apply *a, struct sw_err *e)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", a->path);
    char *sl = strrchr(dir, '/');
    if (sl)
        *sl = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    snprintf(a->tmp, sizeof(a->tmp), "%s/.tune-apply-XXXXXX.yaml", dir);
    int fd = mkstemps(a->tmp, 5);
    if (fd < 0) {
        int rc = sw_err_set(e, SW_EIO, "%s: %s", a->tmp, strerror(errno));
        a->tmp[0] = '\0';
        return rc;
    }
    ssize_t w = write(fd, a->out, a->on);
    close(fd);
    if (w != (ssize_t)a->on)
        return sw_err_set(e, SW_EIO, "%s: short write", a->tmp);
    return 0;
}

/* Every setting of the endpoint in g reads back as given. */
static int reads_back(const struct apply *a, const struct sw_fleet_endpoint *ep2, struct sw_err *e)
{
    const char *kn;
    const json_t *kv;
    json_object_foreach((json_t *)a->settings, kn, kv)
    {
        char got[256] = "";
        struct sw_fleet_value v;
        if (!strncmp(kn, "arg.", 4))
            sw__tune_arg_value(ep2, kn + 4, got, sizeof(got));
        else if (!strncmp(kn, "env.", 4))
            sw__tune_env_value(ep2, kn + 4, got, sizeof(got));
        else if (sw_fleet_shape_get(&ep2->shape, kn, &v) == 0 && v.set)
            sw__tune_fmt_value(&v, got, sizeof(got));
        if (strcmp(got, json_string_value(kv)))
            return sw_err_set(e, SW_EINVAL,
                              "%s: %s reads back as '%s', not '%s', after the edit; nothing "
                              "written",
                              a->path, kn, got, json_string_value(kv));
    }
    return 0;
}

/* The edited text loaded again and checked: every setting reads back as crowned and nothing
 * else of any endpoint moved. */
static int check_edited(const struct apply *a, struct sw_err *e)
{
    struct sw_fleet *g = NULL;
    struct sw_buf d1, d2;
    struct sw_err le;
    int rc = 0;
    sw_buf_init(&d1, 1 << 22);
    sw_buf_init(&d2, 1 << 22);
    sw_err_clear(&le);
    if (sw_fleet_load(a->tmp, NULL, &g, &le)) {
        rc = sw_err_set(e, SW_EINVAL, "%s: the edited file does not load (%s); nothing written",
                        a->path, le.msg);
        goto out;
    }
    const struct sw_fleet_endpoint *ep2 = sw_fleet_endpoint(g, a->endpoint);
    if (ep2) {
        rc = reads_back(a, ep2, e);
        if (rc)
            goto out;
    }
    if (fleet_digest(a->f, a->endpoint, a->settings, &d1) ||
        fleet_digest(g, a->endpoint, a->settings, &d2)) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (!ep2 || strcmp(sw_buf_cstr(&d1), sw_buf_cstr(&d2)))
        rc = sw_err_set(e, SW_EINVAL,
                        "%s: the edit would move more than the crowned settings (a value shared "
                        "through an anchor?); nothing written",
                        a->path);
out:
    sw_fleet_free(g);
    sw_buf_free(&d1);
    sw_buf_free(&d2);
    return rc;
}

/* The edited text written over the file, atomically and with its mode, if nobody changed the
 * file meanwhile. */
static int write_back(const struct apply *a, struct sw_err *e)
{
    char *again = NULL;
    size_t n2 = 0;
    int rc = sw_read_file(a->path, MAX_FILE, &again, &n2, e);
    if (rc)
        return rc;
    if (n2 != a->n || memcmp(again, a->text, a->n)) {
        rc = sw_err_set(e, SW_EBUSY, "%s changed while tune applied its winner; nothing written",
                        a->path);
    } else {
        struct stat st;
        int mode = stat(a->path, &st) == 0 ? (int)(st.st_mode & 07777) : 0644;
        rc = sw_write_file_atomic(a->path, a->out, a->on, mode, e);
    }
    sw_free(again);
    return rc;
}

int sw_tune_apply(const char *path, const char *endpoint, const json_t *settings, bool dry_run,
                  struct sw_buf *diff, struct sw_err *e)
{
    struct apply a;
    int rc;
    if (!path || !endpoint || !json_is_object(settings) || !json_object_size(settings))
        return sw_err_set(e, SW_EINVAL, "tune apply: a fleet, an endpoint and settings needed");
    memset(&a, 0, sizeof(a));
    a.path = path;
    a.endpoint = endpoint;
    a.settings = settings;
    rc = plan_edits(&a, e);
    if (!rc)
        rc = splice(&a, diff, e);
    if (!rc)
        rc = write_beside(&a, e);
    if (!rc)
        rc = check_edited(&a, e);
    if (!rc && !dry_run)
        rc = write_back(&a, e);
    if (a.tmp[0])
        unlink(a.tmp);
    sw_fleet_free(a.f);
    sw_free(a.out);
    sw_free(a.text);
    return rc;
}
