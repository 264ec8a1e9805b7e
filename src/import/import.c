/*
 * import: the endpoints an import builds, its notes, and the YAML writer that puts every value on
 * its own line with a comment naming where it came from (file:line).
 *
 * What it does not do: read units, command lines or env files (import_unit.c, import_argv.c,
 * import_env.c) or touch a fleet file (import_write.c).
 */
#include "import_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REGION_MAX (64u << 20)

void sw_import_init(struct sw_import *im)
{
    memset(im, 0, sizeof(*im));
    sw_buf_init(&im->yaml, 16u << 20);
}

struct sw__imp *sw__imp(struct sw_import *im)
{
    if (!im->priv_) {
        struct sw__imp *p = sw_calloc(1, sizeof(*p));
        if (!p)
            return NULL;
        sw_region_init(&p->r, REGION_MAX);
        im->priv_ = p;
    }
    return im->priv_;
}

void sw_import_free(struct sw_import *im)
{
    if (!im)
        return;
    struct sw__imp *p = im->priv_;
    if (p) {
        sw_free(p->eps);
        sw_region_free(&p->r);
        sw_free(p);
    }
    for (size_t i = 0; i < im->n_names; i++)
        sw_free(im->names[i]);
    sw_free(im->names);
    sw_free(im->notes);
    sw_buf_free(&im->yaml);
    memset(im, 0, sizeof(*im));
}

char *sw__imp_printf(struct sw_import *im, const char *fmt, ...)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    char tmp[4096];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    if ((size_t)n < sizeof(tmp))
        return sw_region_strdup(&p->r, tmp);
    char *out = sw_region_alloc(&p->r, (size_t)n + 1);
    if (!out)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}

int sw__imp_note(struct sw_import *im, const char *where, const char *fmt, ...)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return SW_ENOMEM;
    if (im->n_notes >= SW_IMPORT_NOTES_MAX)
        return 0; /* the first SW_IMPORT_NOTES_MAX stand */
    if (sw_grow(&im->notes, &p->cap_notes, im->n_notes, sizeof(*im->notes), SW_IMPORT_NOTES_MAX))
        return SW_ENOMEM;
    struct sw_import_note *n = &im->notes[im->n_notes++];
    memset(n, 0, sizeof(*n));
    snprintf(n->where, sizeof(n->where), "%s", where ? where : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->msg, sizeof(n->msg), fmt, ap);
    va_end(ap);
    return 0;
}

struct sw__imp_ep *sw__imp_ep_new(struct sw_import *im, const char *name, struct sw_err *e)
{
    struct sw__imp *p = sw__imp(im);
    if (!p) {
        sw_err_set(e, SW_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < p->n_eps; i++)
        if (!strcmp(p->eps[i]->name, name)) {
            sw_err_set(e, SW_EINVAL,
                       "two imports name endpoint '%s': give each its own name (--name)", name);
            return NULL;
        }
    struct sw__imp_ep *ep = sw_region_alloc(&p->r, sizeof(*ep));
    char *copy = ep ? sw_strdup(name) : NULL;
    if (!ep || !copy ||
        sw_grow(&p->eps, &p->cap_eps, p->n_eps, sizeof(*p->eps), SW__IMP_VALUES_MAX) ||
        sw_grow(&im->names, &p->cap_names, im->n_names, sizeof(*im->names), SW__IMP_VALUES_MAX)) {
        sw_free(copy);
        sw_err_set(e, SW_ENOMEM, "out of memory");
        return NULL;
    }
    memset(ep, 0, sizeof(*ep));
    ep->name = sw_region_strdup(&p->r, name);
    if (!ep->name) {
        sw_free(copy);
        sw_err_set(e, SW_ENOMEM, "out of memory");
        return NULL;
    }
    p->eps[p->n_eps++] = ep;
    im->names[im->n_names++] = copy;
    return ep;
}

static bool is_list_key(const char *k)
{
    size_t n = strlen(k);
    return n > 2 && !strcmp(k + n - 2, "[]");
}

int sw__imp_set(struct sw_import *im, struct sw__imp_ep *ep, const char *key, const char *val,
                const char *from)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return SW_ENOMEM;
    const char *v = sw_region_strdup(&p->r, val);
    const char *f = sw_region_strdup(&p->r, from ? from : "");
    if (!v || !f)
        return SW_ENOMEM;
    if (!is_list_key(key))
        for (size_t i = 0; i < ep->n_kv; i++)
            if (!strcmp(ep->kv[i].key, key)) {
                ep->kv[i].val = v;
                ep->kv[i].from = f;
                return 0;
            }
    const char *k = sw_region_strdup(&p->r, key);
    if (!k)
        return SW_ENOMEM;
    int rc =
        sw_region_grow(&p->r, &ep->kv, &ep->cap_kv, ep->n_kv, sizeof(*ep->kv), SW__IMP_VALUES_MAX);
    if (rc)
        return rc;
    ep->kv[ep->n_kv++] = (struct sw__imp_kv){k, v, f};
    return 0;
}

const struct sw__imp_kv *sw__imp_get(const struct sw__imp_ep *ep, const char *key)
{
    for (size_t i = 0; i < ep->n_kv; i++)
        if (!strcmp(ep->kv[i].key, key))
            return &ep->kv[i];
    return NULL;
}

/* A plain scalar that YAML reads back as this same string (not a number, bool or null, no
 * indicator, no ": " or " #"). */
static bool plain_ok(const char *s)
{
    static const char *const words[] = {"true",  "false", "yes", "no",   "null", "True",
                                        "False", "Yes",   "No",  "NULL", "Null", "~"};
    if (!*s || strchr("-?:,[]{}#&*!|>'\"%@`~ ", s[0]))
        return s[0] == '-' && s[1] && s[1] != ' ' && !strpbrk(s, "\"'#,[]{}:") && !strchr(s, ' ');
    for (size_t i = 0; i < SW_ARRAY_LEN(words); i++)
        if (!strcmp(s, words[i]))
            return false;
    size_t n = strlen(s);
    if (s[n - 1] == ' ' || s[n - 1] == ':')
        return false;
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u < 0x20 || u == 0x7f || u == '"' || u == '\\')
            return false;
        if (*c == ':' && (c[1] == ' ' || !c[1]))
            return false;
        if (*c == ' ' && c[1] == '#')
            return false;
        if (strchr(",[]{}", *c))
            return false;
    }
    /* a string that looks like a number would be read as one: quote it (the caller writes
     * numbers it means as numbers itself) */
    double d;
    return sw_parse_double(s, &d, NULL) != 0;
}

const char *sw__imp_yaml(struct sw_import *im, const char *s)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return NULL;
    if (plain_ok(s))
        return sw_region_strdup(&p->r, s);
    struct sw_buf b;
    sw_buf_init(&b, 1u << 20);
    int rc = sw_buf_putc(&b, '"');
    for (const char *c = s; *c && !rc; c++) {
        unsigned char u = (unsigned char)*c;
        if (u == '"' || u == '\\')
            rc = sw_buf_printf(&b, "\\%c", *c);
        else if (u == '\n')
            rc = sw_buf_puts(&b, "\\n");
        else if (u == '\t')
            rc = sw_buf_puts(&b, "\\t");
        else if (u < 0x20 || u == 0x7f)
            rc = sw_buf_printf(&b, "\\x%02x", u);
        else
            rc = sw_buf_putc(&b, *c);
    }
    if (!rc)
        rc = sw_buf_putc(&b, '"');
    const char *out = rc ? NULL : sw_region_strdup(&p->r, sw_buf_cstr(&b));
    sw_buf_free(&b);
    return out;
}

int sw__imp_set_str(struct sw_import *im, struct sw__imp_ep *ep, const char *key, const char *s,
                    const char *from)
{
    const char *y = sw__imp_yaml(im, s);
    return y ? sw__imp_set(im, ep, key, y, from) : SW_ENOMEM;
}

/* ---------------------------------------------------------------------------------------------
 * The writer.
 */
static const char *const groups[] = {"host",    "engine",   "binary", "image",   "runtime",
                                     "service", "listen",   "alias",  "api_key", "payload",
                                     "shape",   "env_file", "env",    "args",    "note"};

#define COMMENT_COL 52
#define DEPTH_MAX   8

/* Split key into components; "x[]" becomes "x", "-". Returns the count. */
static size_t split(const char *key, char comp[DEPTH_MAX][128])
{
    size_t n = 0;
    const char *s = key;
    while (*s && n < DEPTH_MAX - 1) {
        const char *d = strchr(s, '.');
        size_t len = d ? (size_t)(d - s) : strlen(s);
        bool list = len > 2 && s[len - 2] == '[' && s[len - 1] == ']';
        size_t l = list ? len - 2 : len;
        snprintf(comp[n++], 128, "%.*s", (int)l, s);
        if (list)
            snprintf(comp[n++], 128, "-");
        if (!d)
            break;
        s = d + 1;
    }
    return n;
}

static int line_with_comment(struct sw_buf *b, size_t start, const char *from)
{
    int rc = 0;
    if (from && *from) {
        size_t col = b->len - start;
        for (; col < COMMENT_COL && !rc; col++)
            rc = sw_buf_putc(b, ' ');
        if (!rc)
            rc = sw_buf_printf(b, "  # %s", from);
    }
    return rc ? rc : sw_buf_putc(b, '\n');
}

static int emit_ep(struct sw_buf *b, const struct sw__imp_ep *ep)
{
    int rc = sw_buf_printf(b, "  %s:\n", ep->name);
    for (size_t g = 0; g < SW_ARRAY_LEN(groups) && !rc; g++) {
        char prev[DEPTH_MAX][128];
        size_t np = 0;
        /* pass 0: the group's own leaves (env_file.path), pass 1: deeper (env_file.map.X) */
        for (size_t i = 0; i < 2 * ep->n_kv && !rc; i++) {
            const struct sw__imp_kv *kv = &ep->kv[i % ep->n_kv];
            size_t gl = strlen(groups[g]);
            if (strncmp(kv->key, groups[g], gl) ||
                (kv->key[gl] && kv->key[gl] != '.' && strcmp(kv->key + gl, "[]")))
                continue;
            const char *dot = strchr(kv->key, '.');
            bool deep = dot && strchr(dot + 1, '.');
            if (deep != (i >= ep->n_kv))
                continue;
            char comp[DEPTH_MAX][128];
            size_t n = split(kv->key, comp);
            size_t c = 0;
            while (c < np && c + 1 < n && !strcmp(prev[c], comp[c]) && strcmp(comp[c], "-"))
                c++;
            for (size_t l = c; l + 1 < n && !rc; l++)
                rc = sw_buf_printf(b, "%*s%s:\n", (int)(4 + 2 * l), "", comp[l]);
            if (rc)
                break;
            size_t start = b->len;
            size_t lv = n - 1;
            if (!strcmp(comp[lv], "-"))
                rc = sw_buf_printf(b, "%*s- %s", (int)(4 + 2 * lv), "", kv->val);
            else
                rc = sw_buf_printf(b, "%*s%s: %s", (int)(4 + 2 * lv), "", comp[lv], kv->val);
            if (!rc)
                rc = line_with_comment(b, start, kv->from);
            memcpy(prev, comp, sizeof(prev));
            np = n;
        }
    }
    return rc;
}

int sw__imp_emit(struct sw_import *im)
{
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return SW_ENOMEM;
    sw_buf_reset(&im->yaml);
    int rc = 0;
    for (size_t i = 0; i < p->n_eps && !rc; i++)
        rc = emit_ep(&im->yaml, p->eps[i]);
    return rc;
}

json_t *sw_import_json(const struct sw_import *im)
{
    json_t *o = json_object(), *eps = json_array(), *notes = json_array();
    if (!o || !eps || !notes) {
        json_decref(o);
        json_decref(eps);
        json_decref(notes);
        return NULL;
    }
    json_object_set_new(o, "endpoints", eps);
    json_object_set_new(o, "notes", notes);
    for (size_t i = 0; i < im->n_names; i++)
        json_array_append_new(eps, json_string(im->names[i]));
    for (size_t i = 0; i < im->n_notes; i++) {
        json_t *n = json_object();
        if (!n)
            break;
        json_object_set_new(n, "where", json_string(im->notes[i].where));
        json_object_set_new(n, "msg", json_string(im->notes[i].msg));
        json_array_append_new(notes, n);
    }
    json_object_set_new(o, "yaml", json_string(sw_buf_cstr(&im->yaml)));
    return o;
}
