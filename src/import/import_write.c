/*
 * import_write: the fleet an import writes. A new fleet is `version: 1` and the endpoints; a
 * merge (--into FLEET) works on FLEET's text, so its comments and everything the import does not
 * write stay as they are: a new endpoint is appended under `endpoints:`, and in an endpoint that
 * exists each top-level key the import writes (engine, image, shape, env_file, ...) replaces the
 * old key's lines (a note names them). The result must load as a fleet before anything is
 * written; it is written to a temporary file and renamed over the target.
 *
 * What it does not do: merge inside a key (an imported shape replaces the old shape whole), or
 * follow YAML anchors out of a replaced block (a replaced block that defines one is refused).
 */
#include "import_internal.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>

#define FLEET_MAX (16u << 20)

struct line {
    const char *p;
    size_t n; /* without the newline */
};

static int split_lines(const char *t, struct line **out, size_t *n_out)
{
    size_t cap = 0, n = 0;
    struct line *v = NULL;
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (sw_grow(&v, &cap, n, sizeof(*v), 1u << 22)) {
            sw_free(v);
            return SW_ENOMEM;
        }
        v[n++] = (struct line){p, len};
        p += len + (nl ? 1 : 0);
    }
    *out = v;
    *n_out = n;
    return 0;
}

static size_t indent(const struct line *l)
{
    size_t i = 0;
    while (i < l->n && l->p[i] == ' ')
        i++;
    return i;
}

/* blank or a comment: belongs to no key */
static bool idle(const struct line *l)
{
    size_t i = indent(l);
    return i == l->n || l->p[i] == '#';
}

/* line l is `KEY:` (followed by a space, a comment or nothing) at indent ind */
static bool is_key(const struct line *l, size_t ind, const char *key, size_t kn)
{
    if (idle(l) || indent(l) != ind || l->n < ind + kn + 1)
        return false;
    const char *s = l->p + ind;
    return !strncmp(s, key, kn) && s[kn] == ':' &&
           (ind + kn + 1 == l->n || s[kn + 1] == ' ' || s[kn + 1] == '\t');
}

/* The end (exclusive) of the block that starts at line i with indent ind: the lines after it
 * that are deeper, or idle, up to the last deeper one. */
static size_t block_end(const struct line *v, size_t n, size_t i, size_t ind)
{
    size_t end = i + 1;
    for (size_t k = i + 1; k < n; k++) {
        if (idle(&v[k]))
            continue;
        if (indent(&v[k]) <= ind)
            break;
        end = k + 1;
    }
    return end;
}

/* The key name of a mapping line (up to its ':'); 0 when it is not one. */
static size_t key_of(const struct line *l, char *out, size_t n)
{
    size_t ind = indent(l);
    if (idle(l) || l->p[ind] == '-')
        return 0;
    const char *c = memchr(l->p + ind, ':', l->n - ind);
    if (!c || (size_t)(c - l->p - ind) >= n)
        return 0;
    size_t k = (size_t)(c - l->p - ind);
    memcpy(out, l->p + ind, k);
    out[k] = 0;
    return k;
}

/* A key line whose value is a block below it (nothing but a comment after the ':'). */
static bool opens_block(const struct line *l)
{
    size_t ind = indent(l);
    const char *c = memchr(l->p + ind, ':', l->n - ind);
    if (!c)
        return false;
    for (c++; c < l->p + l->n; c++) {
        if (*c == '#')
            return true;
        if (*c != ' ' && *c != '\t')
            return false;
    }
    return true;
}

/* The first line in [from, to) that is not idle; to when none. */
static size_t first_busy(const struct line *v, size_t from, size_t to)
{
    while (from < to && idle(&v[from]))
        from++;
    return from;
}

struct mctx {
    struct sw_import *im;
    const char *into;
    const struct line *v; /* the fleet's lines */
    size_t n;
    struct sw_buf *ins; /* n + 1: inserted before line k */
    bool *drop;
    struct sw_err *e;
};

static int put_ours(struct sw_buf *b, const struct line *o, size_t from, size_t to, long delta)
{
    int rc = 0;
    for (size_t k = from; k < to && !rc; k++) {
        long ni = (long)indent(&o[k]) + delta;
        rc = sw_buf_printf(b, "%*s%.*s\n", (int)(ni < 0 ? 0 : ni), "",
                           (int)(o[k].n - indent(&o[k])), o[k].p + indent(&o[k]));
    }
    return rc;
}

/* Merge our mapping o[ofrom, oto) (keys at indent oi) into the fleet's v[from, to) (keys at
 * indent ci): a key the fleet lacks is appended, a block mapping on both sides merges key by key,
 * anything else is replaced. path names the mapping in notes. */
static int merge_map(struct mctx *m, const struct line *o, size_t ofrom, size_t oto, size_t oi,
                     size_t from, size_t to, size_t ci, const char *path)
{
    int rc = 0;
    for (size_t q = ofrom; q < oto && !rc; q++) {
        char key[128];
        if (indent(&o[q]) != oi || !key_of(&o[q], key, sizeof(key)))
            continue;
        size_t oend = block_end(o, oto, q, oi);
        size_t kat = m->n;
        for (size_t k = from; k < to; k++)
            if (is_key(&m->v[k], ci, key, strlen(key)))
                kat = k;
        char *sub = sw__imp_printf(m->im, "%s.%s", path, key);
        if (!sub)
            return SW_ENOMEM;
        if (kat == m->n) {
            rc = put_ours(&m->ins[to], o, q, oend, (long)ci - (long)oi);
            continue;
        }
        size_t kend = block_end(m->v, m->n, kat, ci);
        size_t ofirst = first_busy(o, q + 1, oend), vfirst = first_busy(m->v, kat + 1, kend);
        if (opens_block(&o[q]) && opens_block(&m->v[kat]) && ofirst < oend && vfirst < kend &&
            o[ofirst].p[indent(&o[ofirst])] != '-' &&
            m->v[vfirst].p[indent(&m->v[vfirst])] != '-') {
            rc = merge_map(m, o, q + 1, oend, indent(&o[ofirst]), kat + 1, kend,
                           indent(&m->v[vfirst]), sub);
            continue;
        }
        for (size_t k = kat; k < kend && !rc; k++) {
            const char *amp = memchr(m->v[k].p, '&', m->v[k].n);
            if (amp && amp > m->v[k].p && amp[-1] == ' ' && !idle(&m->v[k]))
                rc = sw_err_at(m->e, SW_EINVAL, m->into, (int)k + 1, 0,
                               "%s defines a YAML anchor the import would replace: merge by "
                               "hand",
                               sub);
            m->drop[k] = true;
        }
        if (!rc)
            rc = put_ours(&m->ins[kat], o, q, oend, (long)ci - (long)oi);
        if (!rc)
            rc = sw__imp_note(m->im, sw__imp_printf(m->im, "%s:%zu", m->into, kat + 1),
                              "%s: replaced by the import", sub);
    }
    return rc;
}

static int merge(struct sw_import *im, const char *into, const char *text, struct sw_buf *out,
                 struct sw_err *e)
{
    struct line *v = NULL, *o = NULL;
    size_t n = 0, on = 0;
    if (split_lines(text, &v, &n))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = 0;
    size_t eps = n;
    for (size_t i = 0; i < n; i++)
        if (is_key(&v[i], 0, "endpoints", 9))
            eps = i;
    if (eps == n) {
        /* no endpoints yet: the text, then ours */
        rc = sw_buf_puts(out, text);
        if (!rc && text[0] && text[strlen(text) - 1] != '\n')
            rc = sw_buf_putc(out, '\n');
        if (!rc)
            rc = sw_buf_printf(out, "\nendpoints:\n%s", sw_buf_cstr(&im->yaml));
        sw_free(v);
        return rc ? sw_err_set(e, rc, "out of memory") : 0;
    }
    if (split_lines(sw_buf_cstr(&im->yaml), &o, &on)) {
        sw_free(v);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (!opens_block(&v[eps])) {
        /* `endpoints: {}`: the empty flow mapping becomes the block of ours */
        const char *c = memchr(v[eps].p, ':', v[eps].n);
        const char *q = c + 1;
        while (q < v[eps].p + v[eps].n && *q == ' ')
            q++;
        if (v[eps].p + v[eps].n - q < 2 || q[0] != '{' || q[1] != '}') {
            sw_free(v);
            sw_free(o);
            return sw_err_at(e, SW_EINVAL, into, (int)eps + 1, 0,
                             "endpoints is written as a flow mapping: merge by hand");
        }
        for (size_t k = 0; k < n && !rc; k++) {
            if (k == eps)
                rc = sw_buf_printf(out, "endpoints:\n%s", sw_buf_cstr(&im->yaml));
            else
                rc = sw_buf_printf(out, "%.*s\n", (int)v[k].n, v[k].p);
        }
        sw_free(v);
        sw_free(o);
        return rc ? sw_err_set(e, rc, "out of memory") : 0;
    }
    size_t eend = block_end(v, n, eps, 0);
    size_t f = first_busy(v, eps + 1, eend);
    size_t eind = f < eend ? indent(&v[f]) : 2;
    struct sw_buf *ins = sw_calloc(n + 1, sizeof(*ins));
    bool *drop = sw_calloc(n + 1, sizeof(*drop));
    if (!ins || !drop) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k <= n; k++)
        sw_buf_init(&ins[k], FLEET_MAX);
    struct mctx m = {im, into, v, n, ins, drop, e};
    /* ours: `  NAME:` at indent 2, its keys at 4 */
    rc = merge_map(&m, o, 0, on, 2, eps + 1, eend, eind, "endpoints");
    for (size_t k = 0; k <= n && !rc; k++) {
        if (ins[k].len)
            rc = sw_buf_append(out, ins[k].data, ins[k].len);
        if (!rc && k < n && !drop[k])
            rc = sw_buf_printf(out, "%.*s\n", (int)v[k].n, v[k].p);
    }
    if (rc == SW_ENOMEM || rc == SW_ERANGE)
        rc = sw_err_set(e, rc, "out of memory");
out:
    if (ins)
        for (size_t k = 0; k <= n; k++)
            sw_buf_free(&ins[k]);
    sw_free(ins);
    sw_free(drop);
    sw_free(v);
    sw_free(o);
    return rc;
}

/* A new fleet's hosts: each endpoint's `host:` (from --host) as an ssh host of that name, or,
 * when none was given, `local` (the files were read on this machine). Devices are not guessed:
 * the load warns until they are declared. */
static int hosts(struct sw_import *im, struct sw_buf *b)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return SW_ENOMEM;
    int rc = sw_buf_puts(b, "hosts:\n");
    bool local = false;
    for (size_t i = 0; i < p->n_eps && !rc; i++) {
        struct sw__imp_ep *ep = p->eps[i];
        const struct sw__imp_kv *h = sw__imp_get(ep, "host");
        if (!h) {
            rc = sw__imp_set(im, ep, "host", "local",
                             "no --host: the files were read on this machine");
            if (!local && !rc)
                rc = sw_buf_puts(b, "  local:\n    transport: local\n"
                                    "    # devices: not in a unit; declare them (slipway hosts "
                                    "check reads them)\n");
            local = true;
            continue;
        }
        bool seen = false;
        for (size_t k = 0; k < i; k++) {
            const struct sw__imp_kv *o = sw__imp_get(p->eps[k], "host");
            if (o && !strcmp(o->val, h->val))
                seen = true;
        }
        if (!seen)
            rc = sw_buf_printf(b,
                               "  %s:\n    transport: {kind: ssh, address: %s}"
                               "  # --host: the address is the name\n"
                               "    # devices: not in a unit; declare them (slipway hosts check "
                               "reads them)\n",
                               h->val, h->val);
    }
    if (!rc)
        rc = sw_buf_putc(b, '\n');
    return rc ? rc : sw__imp_emit(im);
}

int sw_import_fleet_text(struct sw_import *im, const char *into_path, char **out, struct sw_err *e)
{
    *out = NULL;
    if (!im->n_names)
        return sw_err_set(e, SW_EINVAL, "nothing was imported");
    struct sw_buf b;
    sw_buf_init(&b, FLEET_MAX);
    int rc = 0;
    if (!into_path) {
        rc = sw_buf_puts(&b, "# Written by `slipway import`: every value says where it came "
                             "from (file:line).\nversion: 1\n\n");
        if (!rc)
            rc = hosts(im, &b);
        if (!rc)
            rc = sw_buf_printf(&b, "endpoints:\n%s", sw_buf_cstr(&im->yaml));
        if (rc)
            rc = sw_err_set(e, rc, "out of memory");
    } else {
        char *text = NULL;
        size_t len = 0;
        rc = sw_read_file(into_path, FLEET_MAX, &text, &len, e);
        if (!rc && strlen(text) != len)
            rc = sw_err_set(e, SW_EPARSE, "%s: holds a NUL byte: not a fleet file", into_path);
        if (!rc)
            rc = merge(im, into_path, text, &b, e);
        sw_free(text);
    }
    if (!rc) {
        *out = sw_buf_steal(&b);
        if (!*out)
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    sw_buf_free(&b);
    return rc;
}

int sw_import_write(struct sw_import *im, const char *into_path, const char *out_path,
                    struct sw_err *e)
{
    char *text = NULL;
    int rc = sw_import_fleet_text(im, into_path, &text, e);
    if (rc)
        return rc;
    /* it must load as a fleet where it will live (env files resolve beside it) */
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    struct sw_fleet *f = NULL;
    rc = sw_fleet_load_mem(out_path, text, strlen(text), &fo, &f, e);
    if (rc) {
        char msg[sizeof(e->msg)];
        if (e) {
            snprintf(msg, sizeof(msg), "%s", e->msg);
            sw_err_set(e, rc, "the imported fleet does not load (nothing written): %s", msg);
        }
    } else {
        rc = sw_write_file_atomic(out_path, text, strlen(text), 0644, e);
    }
    sw_fleet_free(f);
    sw_free(text);
    return rc;
}
