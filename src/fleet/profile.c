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
    q->unit = sw__fleet_strdup(c->a, unit);
    q->text = sw__fleet_strdup(c->a, t);
    if (!q->unit || !q->text)
        return sw__fleet_nomem(c);
    return 0;
}

static int dec_const(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                     struct sw_fleet_const *k)
{
    k->at = sw__fleet_at(v);
    if (v->kind == SW__FLN_SCALAR)
        return sw__fleet_dec_qty(c, v, &k->q);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    sw__fleet_record(c, v);
    int rc = 0;
    bool have = false;
    for (size_t i = 0; i < v->n; i++) {
        const struct sw__fleet_node *key = v->kids[2 * i], *val = v->kids[2 * i + 1];
        size_t saved = sw__fleet_path_push(c, key->text);
        int r = 0;
        if (!strcmp(key->text, "value")) {
            r = sw__fleet_dec_qty(c, val, &k->q);
            have = true;
            k->at = sw__fleet_at(val);
        } else if (!strcmp(key->text, "note") || !strcmp(key->text, "source")) {
            r = sw__fleet_dec_text(c, val, &k->note);
        } else {
            sw__fleet_path_pop(c, saved);
            static const char *const known[] = {"value", "note", "source"};
            rc = sw__fleet_unknown_key(c, key, "constant", known, 3);
            continue;
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    if (!rc && !have)
        return sw__fleet_errp(c, v, "needs a value");
    return rc;
}

int sw__fleet_dec_profiles(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    f->profiles = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*f->profiles));
    if (!f->profiles)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *pv = v->kids[2 * i + 1];
        if (!sw__fleet_check_name(c, k, "profile")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_profile *p = &f->profiles[f->n_profiles++];
        p->name = sw__fleet_strdup(c->a, k->text);
        if (!p->name)
            return sw__fleet_nomem(c);
        p->at = sw__fleet_at(k);
        size_t saved = sw__fleet_path_push(c, k->text);
        if (!sw__fleet_want_map(c, pv)) {
            sw__fleet_path_pop(c, saved);
            rc = SW_EPARSE;
            continue;
        }
        sw__fleet_record(c, pv);
        bool have_base = false;
        for (size_t j = 0; j < pv->n && !c->oom; j++) {
            const struct sw__fleet_node *key = pv->kids[2 * j], *val = pv->kids[2 * j + 1];
            size_t s2 = sw__fleet_path_push(c, key->text);
            int r = 0;
            if (!strcmp(key->text, "base")) {
                struct sw__fleet_spec sp = SW__SPECC(sw__fleet_engine_names);
                struct sw_fleet_str s = {0};
                r = sw__fleet_dec_str(c, val, &sp, &s);
                if (!r && s.v) {
                    p->base = sw__fleet_engine_of(s.v);
                    have_base = true;
                }
            } else if (!strcmp(key->text, "note")) {
                struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
                r = sw__fleet_dec_str(c, val, &sp, &p->note);
            } else if (!strcmp(key->text, "terms")) {
                sw__fleet_record(c, val);
                if (val->kind != SW__FLN_MAP && val->kind != SW__FLN_SEQ) {
                    r = sw__fleet_errp(c, val, "must be a mapping or a list");
                } else {
                    struct sw_err e;
                    sw_err_clear(&e);
                    json_t *tj = sw__fleet_node_to_json(val, &e);
                    if (!tj)
                        r = e.code == SW_ENOMEM ? sw__fleet_nomem(c)
                                                : sw__fleet_err_from(c, val, &e);
                    else if (!sw__fleet_keep_json(c, tj))
                        p->terms = tj;
                }
            } else if (!strcmp(key->text, "constants")) {
                sw__fleet_record(c, val);
                if (!sw__fleet_want_map(c, val)) {
                    r = SW_EPARSE;
                } else {
                    p->consts = sw__fleet_allocn(c->a, val->n ? val->n : 1, sizeof(*p->consts));
                    if (!p->consts) {
                        r = sw__fleet_nomem(c);
                    } else {
                        for (size_t q = 0; q < val->n && !c->oom; q++) {
                            const struct sw__fleet_node *ck = val->kids[2 * q];
                            if (!sw__fleet_check_name(c, ck, "constant")) {
                                r = SW_EPARSE;
                                continue;
                            }
                            struct sw_fleet_const *kc = &p->consts[p->n_consts++];
                            memset(kc, 0, sizeof(*kc));
                            kc->name = sw__fleet_strdup(c->a, ck->text);
                            if (!kc->name) {
                                r = sw__fleet_nomem(c);
                                break;
                            }
                            size_t s3 = sw__fleet_path_push(c, ck->text);
                            int r3 = dec_const(c, val->kids[2 * q + 1], kc);
                            sw__fleet_path_pop(c, s3);
                            if (r3)
                                r = r3;
                        }
                    }
                }
            } else {
                sw__fleet_path_pop(c, s2);
                static const char *const known[] = {"base", "constants", "terms", "note"};
                rc = sw__fleet_unknown_key(c, key, "profile", known, 4);
                continue;
            }
            sw__fleet_path_pop(c, s2);
            if (r)
                rc = r;
        }
        if (!have_base && !c->oom) {
            struct sw_fleet_at at = sw__fleet_at(pv);
            rc = sw__fleet_err(c, &at,
                               "%s needs base: the engine whose law it extends (llama.cpp, vllm "
                               "or sglang)",
                               c->path);
        }
        sw__fleet_path_pop(c, saved);
    }
    return c->oom ? SW_ENOMEM : rc;
}
