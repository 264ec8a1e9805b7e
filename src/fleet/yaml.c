/*
 * YAML text -> a small tree whose every node knows its line:col, built from libfyaml's event
 * stream (libfyaml 0.7's document API gives no position for mappings and sequences, and a fleet
 * error must point at the mapping that lacks a key as precisely as at a bad scalar).
 *
 * Done here: one document only, scalar keys only, duplicate keys refused (with both positions),
 * aliases shared (the tree becomes a DAG) with the expansion bounded by SW__FLEET_MAX_WEIGHT and
 * SW__FLEET_MAX_HEIGHT, merge keys (<<) expanded, only the core schema tags accepted. libfyaml's
 * syntax errors come back with their position.
 * Not done here: what any key means (decode/load), typing scalars beyond null/bool/number for the
 * JSON conversion.
 */
#include "fleet_internal.h"

#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct vec {
    struct sw__fleet_node **v;
    size_t n, cap;
};

static int vec_push(struct vec *x, struct sw__fleet_node *n)
{
    if (sw_grow(&x->v, &x->cap, x->n, sizeof(*x->v), SIZE_MAX))
        return SW_ENOMEM;
    x->v[x->n++] = n;
    return 0;
}

struct frame {
    struct sw__fleet_node *node;
    struct vec kids;
    const char *anchor; /* registered when the node is complete */
    size_t anchor_len;
};

struct anchor {
    char *name;
    size_t len;
    struct sw__fleet_node *node;
};

struct builder {
    struct sw_region *a;
    const char *name;
    struct sw_err *e;
    struct frame stack[SW__FLEET_MAX_HEIGHT + 2];
    int depth;
    struct anchor *anchors;
    size_t n_anchors, cap_anchors;
    struct sw__fleet_node *root;
    int docs;
};

static void diag_quiet(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag;
    (void)user;
    (void)buf;
    (void)len;
}

static void mark_pos(struct fy_event *ev, int *line, int *col)
{
    const struct fy_mark *m = fy_event_start_mark(ev);
    *line = m ? m->line + 1 : 0;
    *col = m ? m->column + 1 : 0;
}

static int set_anchor(struct builder *b, const char *name, size_t len, struct sw__fleet_node *n)
{
    for (size_t i = 0; i < b->n_anchors; i++) {
        if (b->anchors[i].len == len && !memcmp(b->anchors[i].name, name, len)) {
            b->anchors[i].node = n; /* YAML allows redefining an anchor: later uses see the new */
            return 0;
        }
    }
    if (sw_grow(&b->anchors, &b->cap_anchors, b->n_anchors, sizeof(*b->anchors), SIZE_MAX))
        return SW_ENOMEM;
    char *copy = sw_region_strndup(b->a, name, len);
    if (!copy)
        return SW_ENOMEM;
    b->anchors[b->n_anchors].name = copy;
    b->anchors[b->n_anchors].len = len;
    b->anchors[b->n_anchors].node = n;
    b->n_anchors++;
    return 0;
}

static struct sw__fleet_node *find_anchor(struct builder *b, const char *name, size_t len)
{
    for (size_t i = 0; i < b->n_anchors; i++)
        if (b->anchors[i].len == len && !memcmp(b->anchors[i].name, name, len))
            return b->anchors[i].node;
    return NULL;
}

static int nomem(struct builder *b)
{
    return sw_err_set(b->e, SW_ENOMEM, "out of memory reading %s", b->name);
}

static bool key_eq(const struct sw__fleet_node *x, const struct sw__fleet_node *y)
{
    return x->len == y->len && !memcmp(x->text, y->text, x->len);
}

/* Attach a finished node to its parent (or make it the root), checking keys and bounds. */
static int attach(struct builder *b, struct sw__fleet_node *n)
{
    if (n->weight > SW__FLEET_MAX_WEIGHT)
        return sw_err_at(b->e, SW_ERANGE, b->name, n->line, n->col,
                         "the document expands to more than %u values through aliases",
                         SW__FLEET_MAX_WEIGHT);
    if (n->height > SW__FLEET_MAX_HEIGHT)
        return sw_err_at(b->e, SW_ERANGE, b->name, n->line, n->col,
                         "values nest more than %u levels deep (aliases included)",
                         SW__FLEET_MAX_HEIGHT);
    if (b->depth == 0) {
        b->root = n;
        return 0;
    }
    struct frame *p = &b->stack[b->depth - 1];
    if (p->node->kind == SW__FLN_MAP && p->kids.n % 2 == 0) {
        /* n is a key */
        if (n->kind != SW__FLN_SCALAR)
            return sw_err_at(b->e, SW_EPARSE, b->name, n->line, n->col,
                             "a mapping key must be a plain value, not a %s",
                             n->kind == SW__FLN_MAP ? "mapping" : "sequence");
        for (size_t i = 0; i < p->kids.n; i += 2) {
            if (key_eq(p->kids.v[i], n))
                return sw_err_at(b->e, SW_EPARSE, b->name, n->line, n->col,
                                 "duplicate key '%s' (first at line %d, column %d)", n->text,
                                 p->kids.v[i]->line, p->kids.v[i]->col);
        }
    }
    if (vec_push(&p->kids, n))
        return nomem(b);
    return 0;
}

static struct sw__fleet_node *new_node(struct builder *b, enum sw__fleet_nkind kind, int line,
                                       int col)
{
    struct sw__fleet_node *n = sw_region_alloc(b->a, sizeof(*n));
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = line;
    n->col = col;
    n->file = b->name;
    n->weight = 1;
    n->height = 1;
    return n;
}

/* Tag check: the core schema's tags only. Returns 1 for !!str (forces a string), 0 otherwise. */
static int check_tag(struct builder *b, struct fy_token *tag, enum sw__fleet_nkind kind, int line,
                     int col)
{
    if (!tag)
        return 0;
    size_t len = 0;
    const char *t = fy_token_get_text(tag, &len);
    static const char pfx[] = "tag:yaml.org,2002:";
    if (t && len > sizeof(pfx) - 1 && !memcmp(t, pfx, sizeof(pfx) - 1)) {
        const char *rest = t + sizeof(pfx) - 1;
        size_t rl = len - (sizeof(pfx) - 1);
#define IS(s) (rl == sizeof(s) - 1 && !memcmp(rest, s, rl))
        if (kind == SW__FLN_SCALAR && IS("str"))
            return 1;
        if (kind == SW__FLN_SCALAR && (IS("int") || IS("float") || IS("bool") || IS("null")))
            return 0;
        if (kind == SW__FLN_MAP && IS("map"))
            return 0;
        if (kind == SW__FLN_SEQ && IS("seq"))
            return 0;
#undef IS
    }
    sw_err_at(b->e, SW_EPARSE, b->name, line, col,
              "YAML tag '%.*s' is not supported here (only the core schema's !!str, !!int, "
              "!!float, !!bool, !!null, !!map, !!seq)",
              (int)SW_MIN(len, 200), t ? t : "");
    return -1;
}

/* Expand merge keys (<<) of a finished mapping into its own pairs: explicit keys win, then the
 * merged mappings in the order given. */
static int expand_merges(struct builder *b, struct frame *fr)
{
    struct vec *k = &fr->kids;
    bool any = false;
    for (size_t i = 0; i < k->n; i += 2)
        if (k->v[i]->plain && k->v[i]->len == 2 && !memcmp(k->v[i]->text, "<<", 2))
            any = true;
    if (!any)
        return 0;
    struct vec out = {0};
    int rc = 0;
    for (size_t i = 0; i < k->n; i += 2) {
        if (k->v[i]->plain && k->v[i]->len == 2 && !memcmp(k->v[i]->text, "<<", 2))
            continue;
        if (vec_push(&out, k->v[i]) || vec_push(&out, k->v[i + 1])) {
            rc = nomem(b);
            goto done;
        }
    }
    for (size_t i = 0; i < k->n; i += 2) {
        if (!(k->v[i]->plain && k->v[i]->len == 2 && !memcmp(k->v[i]->text, "<<", 2)))
            continue;
        struct sw__fleet_node *src = k->v[i + 1];
        struct sw__fleet_node **maps = &src;
        size_t nmaps = 1;
        if (src->kind == SW__FLN_SEQ) {
            maps = src->kids;
            nmaps = src->n;
        }
        for (size_t m = 0; m < nmaps; m++) {
            if (maps[m]->kind != SW__FLN_MAP) {
                rc = sw_err_at(b->e, SW_EPARSE, b->name, maps[m]->line, maps[m]->col,
                               "a merge key (<<) takes a mapping or a list of mappings");
                goto done;
            }
            for (size_t j = 0; j < maps[m]->n; j++) {
                struct sw__fleet_node *key = maps[m]->kids[2 * j];
                bool have = false;
                for (size_t q = 0; q < out.n && !have; q += 2)
                    have = key_eq(out.v[q], key);
                if (have)
                    continue;
                if (vec_push(&out, key) || vec_push(&out, maps[m]->kids[2 * j + 1])) {
                    rc = nomem(b);
                    goto done;
                }
            }
        }
    }
    sw_free(k->v);
    *k = out;
    return 0;
done:
    sw_free(out.v);
    return rc;
}

static int push_container(struct builder *b, enum sw__fleet_nkind kind, struct fy_event *ev,
                          struct fy_token *anchor, struct fy_token *tag)
{
    int line, col;
    mark_pos(ev, &line, &col);
    if (b->depth >= (int)SW__FLEET_MAX_HEIGHT)
        return sw_err_at(b->e, SW_ERANGE, b->name, line, col,
                         "values nest more than %u levels deep", SW__FLEET_MAX_HEIGHT);
    if (check_tag(b, tag, kind, line, col) < 0)
        return SW_EPARSE;
    struct sw__fleet_node *n = new_node(b, kind, line, col);
    if (!n)
        return nomem(b);
    struct frame *fr = &b->stack[b->depth++];
    memset(fr, 0, sizeof(*fr));
    fr->node = n;
    if (anchor) {
        size_t al = 0;
        const char *at = fy_token_get_text(anchor, &al);
        fr->anchor = sw_region_strndup(b->a, at ? at : "", at ? al : 0);
        if (!fr->anchor)
            return nomem(b);
        fr->anchor_len = at ? al : 0;
    }
    return 0;
}

static int pop_container(struct builder *b)
{
    struct frame *fr = &b->stack[b->depth - 1];
    struct sw__fleet_node *n = fr->node;
    int rc = 0;
    if (n->kind == SW__FLN_MAP) {
        rc = expand_merges(b, fr);
        if (rc)
            return rc;
    }
    size_t nk = fr->kids.n;
    if (nk) {
        n->kids = sw_region_allocn(b->a, nk, sizeof(*n->kids));
        if (!n->kids)
            return nomem(b);
        memcpy(n->kids, fr->kids.v, nk * sizeof(*n->kids));
    }
    n->n = n->kind == SW__FLN_MAP ? nk / 2 : nk;
    uint64_t w = 1;
    unsigned h = 0;
    for (size_t i = 0; i < nk; i++) {
        w += n->kids[i]->weight;
        if (w > SW__FLEET_MAX_WEIGHT)
            w = SW__FLEET_MAX_WEIGHT + 1; /* saturate; attach() reports it */
        if (n->kids[i]->height > h)
            h = n->kids[i]->height;
    }
    n->weight = w;
    n->height = h + 1;
    sw_free(fr->kids.v);
    fr->kids.v = NULL;
    b->depth--;
    if (fr->anchor) {
        rc = set_anchor(b, fr->anchor, fr->anchor_len, n);
        if (rc)
            return nomem(b);
    }
    return attach(b, n);
}

static int on_scalar(struct builder *b, struct fy_event *ev)
{
    int line, col;
    mark_pos(ev, &line, &col);
    int tagrc = check_tag(b, ev->scalar.tag, SW__FLN_SCALAR, line, col);
    if (tagrc < 0)
        return SW_EPARSE;
    struct sw__fleet_node *n = new_node(b, SW__FLN_SCALAR, line, col);
    if (!n)
        return nomem(b);
    size_t len = 0;
    const char *t = ev->scalar.value ? fy_token_get_text(ev->scalar.value, &len) : NULL;
    if (!t) {
        t = "";
        len = 0;
    }
    n->text = sw_region_strndup(b->a, t, len);
    if (!n->text)
        return nomem(b);
    n->len = len;
    n->plain =
        tagrc == 0 && (!ev->scalar.value || fy_token_scalar_style(ev->scalar.value) == FYSS_PLAIN);
    if (ev->scalar.anchor) {
        size_t al = 0;
        const char *at = fy_token_get_text(ev->scalar.anchor, &al);
        if (set_anchor(b, at ? at : "", at ? al : 0, n))
            return nomem(b);
    }
    return attach(b, n);
}

static int on_alias(struct builder *b, struct fy_event *ev)
{
    int line, col;
    mark_pos(ev, &line, &col);
    size_t al = 0;
    const char *at = ev->alias.anchor ? fy_token_get_text(ev->alias.anchor, &al) : NULL;
    struct sw__fleet_node *target = at ? find_anchor(b, at, al) : NULL;
    if (!target)
        return sw_err_at(b->e, SW_EPARSE, b->name, line, col,
                         "alias *%.*s names no complete anchor before it", (int)SW_MIN(al, 200),
                         at ? at : "");
    /* Alias used as a mapping key would make keys compare by content: allowed (scalars only). */
    return attach(b, target);
}

bool sw__fleet_utf8_check(const char *s, size_t n, int *line, int *col, bool *nul)
{
    const unsigned char *p = (const unsigned char *)s;
    int l = 1, c = 1;
    size_t i = 0;
    *nul = false;
    while (i < n) {
        unsigned b = p[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xBF; /* allowed range of the first continuation byte */
        if (b == 0) {
            *nul = true;
            goto bad;
        }
        if (b < 0x80) {
            k = 0;
        } else if (b >= 0xC2 && b <= 0xDF) {
            k = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            k = 2;
            if (b == 0xE0)
                lo = 0xA0; /* overlong */
            if (b == 0xED)
                hi = 0x9F; /* UTF-16 surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            k = 3;
            if (b == 0xF0)
                lo = 0x90;
            if (b == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            goto bad;
        }
        if (k >= n - i)
            goto bad;
        for (size_t j = 1; j <= k; j++) {
            unsigned cb = p[i + j];
            unsigned want_lo = j == 1 ? lo : 0x80, want_hi = j == 1 ? hi : 0xBF;
            if (cb < want_lo || cb > want_hi)
                goto bad;
        }
        if (b == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
        i += k + 1;
    }
    return true;
bad:
    *line = l;
    *col = c;
    return false;
}

int sw__fleet_yaml_parse(struct sw_region *a, const char *name, const char *text, size_t len,
                         struct sw__fleet_node **root, struct sw_err *e)
{
    int rc = 0;
    struct builder b;
    memset(&b, 0, sizeof(b));
    b.a = a;
    b.name = name;
    b.e = e;
    *root = NULL;
    struct fy_diag *diag = NULL;
    {
        /* YAML is Unicode text. Checked here, strictly, because libfyaml 0.7.12 loops forever on
         * some invalid sequences (a '%' directive line followed by a stray or truncated byte). */
        int bl = 0, bc = 0;
        bool nul = false;
        if (!sw__fleet_utf8_check(text, len, &bl, &bc, &nul))
            return sw_err_at(e, SW_EPARSE, name, bl, bc, "%s",
                             nul ? "holds a NUL byte: this is not a text file"
                                 : "invalid UTF-8 here: a fleet file is UTF-8 text");
    }
    struct fy_parser *fyp = NULL;
    struct fy_event *ev = NULL;

    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.output_fn = diag_quiet;
    dc.colorize = false;
    diag = fy_diag_create(&dc);
    if (!diag) {
        rc = nomem(&b);
        goto out;
    }
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.flags = FYPCF_QUIET | FYPCF_JSON_NONE;
    cfg.diag = diag;
    fyp = fy_parser_create(&cfg);
    if (!fyp) {
        rc = nomem(&b);
        goto out;
    }
    if (fy_parser_set_string(fyp, text, len)) {
        rc = nomem(&b);
        goto out;
    }
    int last_line = 1, last_col = 1;
    for (;;) {
        ev = fy_parser_parse(fyp);
        if (!ev)
            break;
        int l, c;
        mark_pos(ev, &l, &c);
        if (l > 0) {
            last_line = l;
            last_col = c;
        }
        switch (ev->type) {
        case FYET_DOCUMENT_START:
            if (++b.docs > 1) {
                rc = sw_err_at(e, SW_EPARSE, name, last_line, last_col,
                               "a fleet file holds one YAML document; a second one starts here");
                goto out;
            }
            break;
        case FYET_MAPPING_START:
            rc = push_container(&b, SW__FLN_MAP, ev, ev->mapping_start.anchor,
                                ev->mapping_start.tag);
            break;
        case FYET_SEQUENCE_START:
            rc = push_container(&b, SW__FLN_SEQ, ev, ev->sequence_start.anchor,
                                ev->sequence_start.tag);
            break;
        case FYET_MAPPING_END:
        case FYET_SEQUENCE_END:
            rc = b.depth > 0 ? pop_container(&b) : 0;
            break;
        case FYET_SCALAR:
            rc = on_scalar(&b, ev);
            break;
        case FYET_ALIAS:
            rc = on_alias(&b, ev);
            break;
        default:
            break;
        }
        fy_parser_event_free(fyp, ev);
        ev = NULL;
        if (rc)
            goto out;
    }
    if (fy_parser_get_stream_error(fyp) || fy_diag_got_error(diag)) {
        void *it = NULL;
        struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
        if (de)
            rc = sw_err_at(e, SW_EPARSE, name, de->line > 0 ? de->line : last_line,
                           de->line > 0 && de->column > 0 ? de->column : last_col,
                           "YAML syntax: %s", de->msg ? de->msg : "malformed");
        else
            rc = sw_err_at(e, SW_EPARSE, name, last_line, last_col, "YAML syntax error");
        goto out;
    }
    *root = b.root;
out:
    if (ev)
        fy_parser_event_free(fyp, ev);
    for (int i = 0; i < b.depth; i++)
        sw_free(b.stack[i].kids.v);
    sw_free(b.anchors);
    if (fyp)
        fy_parser_destroy(fyp);
    if (diag)
        fy_diag_destroy(diag);
    return rc;
}

bool sw__fleet_node_is_null(const struct sw__fleet_node *n)
{
    if (!n || n->kind != SW__FLN_SCALAR || !n->plain)
        return false;
    return n->len == 0 || !strcmp(n->text, "~") || !strcmp(n->text, "null") ||
           !strcmp(n->text, "Null") || !strcmp(n->text, "NULL");
}

const struct sw__fleet_node *sw__fleet_map_get(const struct sw__fleet_node *map, const char *key)
{
    if (!map || map->kind != SW__FLN_MAP)
        return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < map->n; i++) {
        const struct sw__fleet_node *k = map->kids[2 * i];
        if (k->len == kl && !memcmp(k->text, key, kl))
            return map->kids[2 * i + 1];
    }
    return NULL;
}

/* YAML 1.2 core schema integers and floats, strictly (no sign-less hex magic beyond 0x). */
static json_t *plain_scalar_json(const struct sw__fleet_node *n)
{
    const char *s = n->text;
    if (sw__fleet_node_is_null(n))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return json_false();
    if (strlen(s) != n->len)
        return json_stringn(s, n->len);
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    bool digits = *p >= '0' && *p <= '9';
    bool integer = digits;
    for (const char *q = p; *q && integer; q++)
        integer = *q >= '0' && *q <= '9';
    if (integer) {
        errno = 0;
        char *end = NULL;
        long long v = strtoll(s, &end, 10);
        if (!errno && end && !*end)
            return json_integer(v);
    }
    if (digits || (*p == '.' && p[1] >= '0' && p[1] <= '9')) {
        errno = 0;
        char *end = NULL;
        double d = strtod(s, &end);
        if (end && !*end && isfinite(d))
            return json_real(d);
    }
    return json_stringn(s, n->len);
}

/* Valid UTF-8 without NULs (jansson accepts nothing else). Overlongs are left to jansson. */
static bool utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t k;
        if (c == 0)
            return false;
        if (c < 0x80)
            k = 0;
        else if ((c & 0xE0) == 0xC0)
            k = 1;
        else if ((c & 0xF0) == 0xE0)
            k = 2;
        else if ((c & 0xF8) == 0xF0)
            k = 3;
        else
            return false;
        if (k >= n - i)
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

static json_t *text_json(const struct sw__fleet_node *n, struct sw_err *e)
{
    if (!utf8_ok(n->text, n->len)) {
        sw_err_at(e, SW_EPARSE, n->file, n->line, n->col,
                  "text is not valid UTF-8 (or holds a NUL character)");
        return NULL;
    }
    json_t *j = json_stringn(n->text, n->len);
    if (!j)
        sw_err_set(e, SW_ENOMEM, "out of memory converting YAML to JSON");
    return j;
}

json_t *sw__fleet_node_to_json(const struct sw__fleet_node *n, struct sw_err *e)
{
    json_t *j = NULL;
    switch (n->kind) {
    case SW__FLN_SCALAR:
        if (!n->plain)
            return text_json(n, e);
        if (!utf8_ok(n->text, n->len))
            return text_json(n, e);
        j = plain_scalar_json(n);
        break;
    case SW__FLN_SEQ:
        j = json_array();
        for (size_t i = 0; j && i < n->n; i++) {
            json_t *k = sw__fleet_node_to_json(n->kids[i], e);
            if (!k) {
                json_decref(j);
                return NULL;
            }
            if (json_array_append_new(j, k)) {
                json_decref(j);
                j = NULL;
            }
        }
        break;
    case SW__FLN_MAP:
        j = json_object();
        for (size_t i = 0; j && i < n->n; i++) {
            const struct sw__fleet_node *k = n->kids[2 * i];
            if (!utf8_ok(k->text, k->len)) {
                json_decref(j);
                return text_json(k, e);
            }
            json_t *v = sw__fleet_node_to_json(n->kids[2 * i + 1], e);
            if (!v) {
                json_decref(j);
                return NULL;
            }
            if (json_object_set_new(j, k->text, v)) {
                json_decref(j);
                j = NULL;
            }
        }
        break;
    }
    if (!j)
        sw_err_set(e, SW_ENOMEM, "out of memory converting YAML to JSON");
    return j;
}

/* ---------------------------------------------------------------------------------------------
 * Any YAML document, for importers (fleet.h "Any YAML document").
 */
struct sw_fleet_ydoc {
    struct sw_region a;
    struct sw__fleet_node *root;
};

int sw_fleet_yaml_read(const char *name, const char *text, size_t len, struct sw_fleet_ydoc **out,
                       struct sw_err *e)
{
    *out = NULL;
    struct sw_fleet_ydoc *d = sw_calloc(1, sizeof(*d));
    if (!d)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_region_init(&d->a, 64u << 20);
    int rc = sw__fleet_yaml_parse(&d->a, name, text, len, &d->root, e);
    if (rc) {
        sw_fleet_ydoc_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void sw_fleet_ydoc_free(struct sw_fleet_ydoc *d)
{
    if (!d)
        return;
    sw_region_free(&d->a);
    sw_free(d);
}

#define YN(n) ((const struct sw__fleet_node *)(const void *)(n))

const struct sw_fleet_ynode *sw_fleet_ydoc_root(const struct sw_fleet_ydoc *d)
{
    return d ? (const struct sw_fleet_ynode *)(const void *)d->root : NULL;
}

int sw_fleet_ynode_kind(const struct sw_fleet_ynode *n)
{
    return n ? (int)YN(n)->kind : 0;
}

int sw_fleet_ynode_line(const struct sw_fleet_ynode *n)
{
    return n ? YN(n)->line : 0;
}

const char *sw_fleet_ynode_str(const struct sw_fleet_ynode *n)
{
    return n && YN(n)->kind == SW__FLN_SCALAR ? YN(n)->text : NULL;
}

size_t sw_fleet_ynode_len(const struct sw_fleet_ynode *n)
{
    return n && YN(n)->kind != SW__FLN_SCALAR ? YN(n)->n : 0;
}

const struct sw_fleet_ynode *sw_fleet_ynode_at(const struct sw_fleet_ynode *n, size_t i,
                                               const char **key)
{
    if (key)
        *key = NULL;
    if (!n || i >= sw_fleet_ynode_len(n))
        return NULL;
    const struct sw__fleet_node *x = YN(n);
    if (x->kind == SW__FLN_SEQ)
        return (const struct sw_fleet_ynode *)(const void *)x->kids[i];
    if (key)
        *key = x->kids[2 * i]->text;
    return (const struct sw_fleet_ynode *)(const void *)x->kids[2 * i + 1];
}

const struct sw_fleet_ynode *sw_fleet_ynode_get(const struct sw_fleet_ynode *n, const char *key)
{
    if (sw_fleet_ynode_kind(n) != SW_FLEET_Y_MAP)
        return NULL;
    for (size_t i = 0; i < sw_fleet_ynode_len(n); i++) {
        const char *k;
        const struct sw_fleet_ynode *v = sw_fleet_ynode_at(n, i, &k);
        if (k && !strcmp(k, key))
            return v;
    }
    return NULL;
}
