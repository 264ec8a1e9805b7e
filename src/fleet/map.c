/*
 * Decoding mappings of the fleet file: the table-driven mapping (a key table with aliases, each
 * key decoded into a field), the walk over a mapping of named objects, and the small value
 * decoders every noun shares (names, name lists, dates, free text).
 *
 * Not here: what any particular noun's keys are (host.c, profile.c, endpoint.c, ...).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Table-driven mappings.
 */
int sw__fleet_dec_strf(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    return sw__fleet_dec_str(c, v, &d->spec, (struct sw_fleet_str *)((char *)obj + d->off));
}

int sw__fleet_dec_u64f(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    return sw__fleet_dec_u64(c, v, &d->spec, (struct sw_fleet_u64 *)((char *)obj + d->off));
}

int sw__fleet_dec_boolf(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct sw__fleet_fdef *d)
{
    return sw__fleet_dec_bool(c, v, (struct sw_fleet_bool *)((char *)obj + d->off));
}

int sw__fleet_walk(struct sw__fleet_ctx *c, const struct sw__fleet_node *map,
                   const struct sw__fleet_walk *w)
{
    sw__fleet_record(c, map);
    if (!sw__fleet_want_map(c, map))
        return SW_EPARSE;
    int rc = 0;
    for (size_t i = 0; i < map->n && !c->oom; i++) {
        const struct sw__fleet_node *k = map->kids[2 * i], *v = map->kids[2 * i + 1];
        const char *seg = k->text;
        if (w->key) {
            seg = w->key(c, k, w->arg);
        } else if (w->known) {
            bool known = false;
            for (size_t j = 0; j < w->n_known && !known; j++)
                known = !strcmp(w->known[j], k->text);
            if (!known) {
                rc = sw__fleet_unknown_key(c, k, w->what, w->known, w->n_known);
                continue;
            }
        } else if (w->what && !sw__fleet_check_name(c, k, w->what)) {
            seg = NULL;
        }
        if (!seg) {
            rc = SW_EPARSE;
            continue;
        }
        size_t saved = sw__fleet_path_push(c, seg);
        int r = w->fn(c, k, v, w->arg);
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

int sw__fleet_walk_seq(struct sw__fleet_ctx *c, const struct sw__fleet_node *seq,
                       int (*fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *item,
                                 void *arg),
                       void *arg)
{
    sw__fleet_record(c, seq);
    if (!sw__fleet_want_seq(c, seq))
        return SW_EPARSE;
    int rc = 0;
    for (size_t i = 0; i < seq->n && !c->oom; i++) {
        size_t saved = sw__fleet_path_index(c, i);
        int r = fn(c, seq->kids[i], arg);
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

int sw__fleet_dec_map(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, void *obj,
                      const struct sw__fleet_fdef *defs, size_t nd, const char *what)
{
    int rc = 0;
    if (!sw__fleet_want_map(c, n))
        return SW_EPARSE;
    sw__fleet_record(c, n);
    const struct sw__fleet_node *seen[64] = {0};
    for (size_t i = 0; i < n->n && !c->oom; i++) {
        const struct sw__fleet_node *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
        size_t hit = nd;
        for (size_t j = 0; j < nd && hit == nd; j++) {
            if (!strcmp(defs[j].name, k->text))
                hit = j;
            for (size_t a = 0; a < 3 && defs[j].aliases[a] && hit == nd; a++)
                if (!strcmp(defs[j].aliases[a], k->text))
                    hit = j;
        }
        if (hit == nd || strlen(k->text) != k->len) {
            const char *known[64];
            size_t nk = 0;
            for (size_t j = 0; j < nd && nk < SW_ARRAY_LEN(known); j++)
                known[nk++] = defs[j].name;
            rc = sw__fleet_unknown_key(c, k, what, known, nk);
            continue;
        }
        if (hit < SW_ARRAY_LEN(seen) && seen[hit]) {
            struct sw_fleet_at at = sw__fleet_at(k);
            rc = sw__fleet_err(c, &at, "%s: '%s' sets %s again (already set at line %d)",
                               c->plen ? c->path : "the top level", k->text, defs[hit].name,
                               seen[hit]->line);
            continue;
        }
        if (hit < SW_ARRAY_LEN(seen))
            seen[hit] = k;
        size_t saved = sw__fleet_path_push(c, defs[hit].name);
        int r = defs[hit].dec(c, v, obj, &defs[hit]);
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

/* A `name: {...}` mapping of named objects: validates each name. */
bool sw__fleet_check_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, const char *what)
{
    const char *t = k->text;
    size_t n = strlen(t);
    bool ok = n == k->len && n > 0 && n <= 64 && isalnum((unsigned char)t[0]);
    for (size_t i = 1; ok && i < n; i++)
        ok = isalnum((unsigned char)t[i]) || t[i] == '_' || t[i] == '-';
    if (!ok) {
        struct sw_fleet_at at = sw__fleet_at(k);
        sw__fleet_err(c, &at,
                      "%s name '%s' is not a name: use letters, digits, '-' and '_' (at most 64, "
                      "starting with a letter or digit)",
                      what, t);
    }
    return ok;
}

bool sw__fleet_is_env_name(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static bool is_date(const char *s)
{
    /* YYYY-MM-DD, optionally followed by a time or a note */
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7) {
            if (s[i] != '-')
                return false;
        } else if (!isdigit((unsigned char)s[i])) {
            return false;
        }
    }
    int m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    return m >= 1 && m <= 12 && d >= 1 && d <= 31 && (!s[10] || s[10] == ' ' || s[10] == 'T');
}

int sw__fleet_dec_date(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, const char **out)
{
    struct sw_fleet_str s = {0};
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
    int rc = sw__fleet_dec_str(c, v, &sp, &s);
    if (rc)
        return rc;
    if (s.v && !is_date(s.v))
        return sw__fleet_errp(c, v, "'%s' is not a date: write YYYY-MM-DD", s.v);
    *out = s.v;
    return 0;
}

int sw__fleet_dec_text(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, const char **out)
{
    struct sw_fleet_str s = {0};
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_TEXT);
    int rc = sw__fleet_dec_str(c, v, &sp, &s);
    *out = s.v;
    return rc;
}

const struct sw__fleet_fdef *sw__fleet_find_def(const struct sw__fleet_fdef *defs, size_t n,
                                                const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(defs[i].name, name))
            return &defs[i];
    return NULL;
}

void *sw__fleet_alloc_each(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, size_t size)
{
    return sw_region_allocn(c->a, v->n ? v->n : 1, size);
}

int sw__fleet_alloc_pair(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *a,
                         size_t size_a, void *b, size_t size_b)
{
    void **pa = a, **pb = b;
    *pa = sw__fleet_alloc_each(c, v, size_a);
    *pb = sw__fleet_alloc_each(c, v, size_b);
    return *pa && *pb ? 0 : sw__fleet_nomem(c);
}

/* *arr (a pointer to the array's pointer): sw__fleet_alloc_each's array for v, or SW_ENOMEM. */
static int alloc_into(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *arr,
                      size_t size)
{
    void **pp = arr;
    *pp = sw__fleet_alloc_each(c, v, size);
    return *pp ? 0 : sw__fleet_nomem(c);
}

int sw__fleet_seq_into(
    struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *arr, size_t size,
    int (*fn)(struct sw__fleet_ctx *c, const struct sw__fleet_node *item, void *arg), void *arg)
{
    int rc = alloc_into(c, v, arr, size);
    return rc ? rc : sw__fleet_walk_seq(c, v, fn, arg);
}

int sw__fleet_map_into(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *arr,
                       size_t size, const struct sw__fleet_walk *w)
{
    int rc = alloc_into(c, v, arr, size);
    return rc ? rc : sw__fleet_walk(c, v, w);
}
