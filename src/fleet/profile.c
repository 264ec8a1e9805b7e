/*
 * Engine profiles of a fleet file: the engine a fork extends, its declared constants (quantities
 * with units) and its law terms (kept as raw JSON for memory/).
 *
 * Not here: evaluating a law or a term (memory).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Engine profiles.
 */
const char *const sw__fleet_engine_names[] = {"llama.cpp",    "vllm",     "sglang",
                                              "llama-server", "llamacpp", NULL};

enum sw_fleet_engine sw__fleet_engine_of(const char *s)
{
    if (!s)
        return SW_FLEET_ENGINE_NONE;
    if (!strcmp(s, "vllm"))
        return SW_FLEET_VLLM;
    if (!strcmp(s, "sglang"))
        return SW_FLEET_SGLANG;
    return SW_FLEET_LLAMACPP;
}

const char *sw_fleet_engine_name(enum sw_fleet_engine e)
{
    switch (e) {
    case SW_FLEET_LLAMACPP:
        return "llama.cpp";
    case SW_FLEET_VLLM:
        return "vllm";
    case SW_FLEET_SGLANG:
        return "sglang";
    default:
        return "?";
    }
}

/* A quantity: "9190 B/token", or {value: ..., note: ...}. */
int sw__fleet_dec_qty(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                      struct sw_fleet_qty *q)
{
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    sw__fleet_record(c, v);
    struct sw_err e;
    sw_err_clear(&e);
    char unit[160];
    if (sw_fleet_parse_qty(t, &q->value, unit, sizeof(unit), &e))
        return sw__fleet_errp(c, v, "%s", e.msg);
    q->unit = sw_region_strdup(c->a, unit);
    q->text = sw_region_strdup(c->a, t);
    if (!q->unit || !q->text)
        return sw__fleet_nomem(c);
    return 0;
}

static int dec_const_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *key,
                         const struct sw__fleet_node *val, void *arg)
{
    struct sw_fleet_const *k = arg;
    if (!strcmp(key->text, "value")) {
        k->at = sw__fleet_at(val);
        return sw__fleet_dec_qty(c, val, &k->q);
    }
    return sw__fleet_dec_text(c, val, &k->note); /* note, source */
}

static int dec_const(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                     struct sw_fleet_const *k)
{
    k->at = sw__fleet_at(v);
    if (v->kind == SW__FLN_SCALAR)
        return sw__fleet_dec_qty(c, v, &k->q);
    static const char *const known[] = {"value", "note", "source"};
    struct sw__fleet_walk w = {
        .what = "constant", .known = known, .n_known = 3, .fn = dec_const_key, .arg = k};
    int rc = sw__fleet_walk(c, v, &w);
    if (!rc && !sw__fleet_map_get(v, "value"))
        return sw__fleet_errp(c, v, "needs a value");
    return rc;
}

static int dec_constant(struct sw__fleet_ctx *c, const struct sw__fleet_node *ck,
                        const struct sw__fleet_node *cv, void *arg)
{
    struct sw_fleet_profile *p = arg;
    struct sw_fleet_const *kc = &p->consts[p->n_consts++];
    memset(kc, 0, sizeof(*kc));
    kc->name = sw_region_strdup(c->a, ck->text);
    if (!kc->name)
        return sw__fleet_nomem(c);
    return dec_const(c, cv, kc);
}

/* gguf_types: [{id: 115, name: Q8_0_ROCMFPX, block_size: 32, type_size: 33}] */
static int dec_gguf_types(struct sw__fleet_ctx *c, const struct sw__fleet_node *val,
                          struct sw_fleet_profile *p)
{
    static const char *const keys[] = {"id", "name", "block_size", "type_size"};
    sw__fleet_record(c, val);
    if (val->kind != SW__FLN_SEQ || val->n == 0 || val->n > 64)
        return sw__fleet_errp(c, val,
                              "gguf_types must be a list of 1..64 {id, name, block_size, "
                              "type_size}");
    p->gguf_types = sw_region_allocn(c->a, val->n, sizeof(*p->gguf_types));
    if (!p->gguf_types)
        return sw__fleet_nomem(c);
    for (size_t i = 0; i < val->n; i++) {
        const struct sw__fleet_node *m = val->kids[i];
        struct sw_fleet_gguf_type *t = &p->gguf_types[i];
        if (m->kind != SW__FLN_MAP)
            return sw__fleet_errp(c, m, "entry %zu must be {id, name, block_size, type_size}", i);
        for (size_t k = 0; k < m->n; k++) {
            const char *kt = m->kids[2 * k]->text;
            bool known = false;
            for (size_t q = 0; q < SW_ARRAY_LEN(keys); q++)
                known |= kt && !strcmp(kt, keys[q]);
            if (!known)
                return sw__fleet_errp(c, m->kids[2 * k],
                                      "entry %zu: unknown key '%s' (id, name, block_size, "
                                      "type_size)",
                                      i, kt ? kt : "");
        }
        t->at = sw__fleet_at(m);
        uint64_t v[3];
        static const char *const num[] = {"id", "block_size", "type_size"};
        for (size_t q = 0; q < 3; q++) {
            const struct sw__fleet_node *n = sw__fleet_map_get(m, num[q]);
            if (!n || n->kind != SW__FLN_SCALAR || !n->text ||
                sw_parse_count(n->text, &v[q], NULL) || v[q] > UINT32_MAX || (q && v[q] == 0))
                return sw__fleet_errp(c, n ? n : m, "entry %zu: %s must be a whole number%s", i,
                                      num[q], q ? " >= 1" : "");
        }
        const struct sw__fleet_node *nm = sw__fleet_map_get(m, "name");
        if (!nm || nm->kind != SW__FLN_SCALAR || !nm->text || !nm->text[0])
            return sw__fleet_errp(c, nm ? nm : m, "entry %zu: name must be the type's name", i);
        t->id = (uint32_t)v[0];
        t->block_size = (uint32_t)v[1];
        t->type_size = (uint32_t)v[2];
        t->name = sw_region_strdup(c->a, nm->text);
        if (!t->name)
            return sw__fleet_nomem(c);
    }
    p->n_gguf_types = val->n;
    return 0;
}

static int dec_profile_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *key,
                           const struct sw__fleet_node *val, void *arg)
{
    struct sw_fleet_profile *p = arg;
    int r = 0;
    if (!strcmp(key->text, "base")) {
        struct sw__fleet_spec sp = SW__SPECC(sw__fleet_engine_names);
        struct sw_fleet_str s = {0};
        r = sw__fleet_dec_str(c, val, &sp, &s);
        if (!r && s.v)
            p->base = sw__fleet_engine_of(s.v);
    } else if (!strcmp(key->text, "note")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_TEXT);
        r = sw__fleet_dec_str(c, val, &sp, &p->note);
    } else if (!strcmp(key->text, "gguf_types")) {
        r = dec_gguf_types(c, val, p);
    } else if (!strcmp(key->text, "terms")) {
        sw__fleet_record(c, val);
        if (val->kind != SW__FLN_MAP && val->kind != SW__FLN_SEQ) {
            r = sw__fleet_errp(c, val, "must be a mapping or a list");
        } else {
            struct sw_err e;
            sw_err_clear(&e);
            json_t *tj = sw__fleet_node_to_json(val, &e);
            if (!tj)
                r = e.code == SW_ENOMEM ? sw__fleet_nomem(c) : sw__fleet_err_from(c, val, &e);
            else if (!sw__fleet_keep_json(c, tj))
                p->terms = tj;
        }
    } else { /* constants */
        p->consts = sw_region_allocn(c->a, val->n ? val->n : 1, sizeof(*p->consts));
        if (!p->consts)
            return sw__fleet_nomem(c);
        struct sw__fleet_walk w = {.what = "constant", .fn = dec_constant, .arg = p};
        r = sw__fleet_walk(c, val, &w);
    }
    return r;
}

static int dec_profile(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                       const struct sw__fleet_node *pv, void *arg)
{
    struct sw_fleet *f = c->f;
    (void)arg;
    struct sw_fleet_profile *p = &f->profiles[f->n_profiles++];
    p->name = sw_region_strdup(c->a, k->text);
    if (!p->name)
        return sw__fleet_nomem(c);
    p->at = sw__fleet_at(k);
    static const char *const known[] = {"base", "constants", "terms", "note", "gguf_types"};
    struct sw__fleet_walk w = {
        .what = "profile", .known = known, .n_known = 5, .fn = dec_profile_key, .arg = p};
    int rc = sw__fleet_walk(c, pv, &w);
    if (pv->kind != SW__FLN_MAP)
        return rc;
    if (!p->base && !c->oom) {
        struct sw_fleet_at at = sw__fleet_at(pv);
        rc = sw__fleet_err(c, &at,
                           "%s needs base: the engine whose law it extends (llama.cpp, vllm "
                           "or sglang)",
                           c->path);
    }
    return rc;
}

int sw__fleet_dec_profiles(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    struct sw__fleet_walk w = {.what = "profile", .fn = dec_profile};
    return sw__fleet_map_into(c, v, &f->profiles, sizeof(*f->profiles), &w);
}
