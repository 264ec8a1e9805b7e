/*
 * What the operator measured on an endpoint: named facts (quantities with a date and a source)
 * and boots (a shape, what the device held after it, and the outcome).
 *
 * Not here: turning facts into law inputs (memory) or boots into calibration (calib).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int sw__fleet_ep_measured(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw__fleet_ep_raw *raw = sw__fleet_raw_of(c, ep);
    sw__fleet_record(c, v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    ep->facts = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->facts));
    raw->fact_devices = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*raw->fact_devices));
    if (!ep->facts || !raw->fact_devices)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *k = v->kids[2 * i], *fv = v->kids[2 * i + 1];
        if (!sw__fleet_check_name(c, k, "fact")) {
            rc = SW_EPARSE;
            continue;
        }
        struct sw_fleet_fact *fa = &ep->facts[ep->n_facts];
        memset(fa, 0, sizeof(*fa));
        memset(&raw->fact_devices[ep->n_facts], 0, sizeof(raw->fact_devices[0]));
        fa->name = sw__fleet_strdup(c->a, k->text);
        if (!fa->name)
            return sw__fleet_nomem(c);
        fa->at = sw__fleet_at(fv);
        size_t saved = sw__fleet_path_push(c, k->text);
        int r = 0;
        if (fv->kind == SW__FLN_SCALAR) {
            r = sw__fleet_dec_qty(c, fv, &fa->q);
        } else if (sw__fleet_want_map(c, fv)) {
            sw__fleet_record(c, fv);
            bool have = false;
            for (size_t j = 0; j < fv->n && !c->oom; j++) {
                const struct sw__fleet_node *fk = fv->kids[2 * j], *val = fv->kids[2 * j + 1];
                size_t s2 = sw__fleet_path_push(c, fk->text);
                int r2 = 0;
                if (!strcmp(fk->text, "value")) {
                    r2 = sw__fleet_dec_qty(c, val, &fa->q);
                    fa->at = sw__fleet_at(val);
                    have = true;
                } else if (!strcmp(fk->text, "date")) {
                    r2 = sw__fleet_dec_date(c, val, &fa->date);
                } else if (!strcmp(fk->text, "source") || !strcmp(fk->text, "note")) {
                    if (fa->source) {
                        r2 = sw__fleet_errp(c, val, "source and note are the same field: use one");
                    } else {
                        r2 = sw__fleet_dec_text(c, val, &fa->source);
                    }
                } else if (!strcmp(fk->text, "device")) {
                    struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
                    r2 = sw__fleet_dec_str(c, val, &sp, &raw->fact_devices[ep->n_facts]);
                } else {
                    sw__fleet_path_pop(c, s2);
                    static const char *const known[] = {"value", "date", "source", "note",
                                                        "device"};
                    r = sw__fleet_unknown_key(c, fk, "fact", known, 5);
                    continue;
                }
                sw__fleet_path_pop(c, s2);
                if (r2)
                    r = r2;
            }
            if (!r && !have)
                r = sw__fleet_errp(c, fv, "needs a value");
        } else {
            r = SW_EPARSE;
        }
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_facts++;
    }
    return c->oom ? SW_ENOMEM : rc;
}

static const char *const outcomes[] = {"booted", "serving", "failed", "rejected", NULL};

int sw__fleet_ep_boots(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw__fleet_ep_raw *raw = sw__fleet_raw_of(c, ep);
    sw__fleet_record(c, v);
    if (!sw__fleet_want_seq(c, v))
        return SW_EPARSE;
    ep->boots = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*ep->boots));
    raw->boot_devices = sw__fleet_allocn(c->a, v->n ? v->n : 1, sizeof(*raw->boot_devices));
    if (!ep->boots || !raw->boot_devices)
        return sw__fleet_nomem(c);
    int rc = 0;
    for (size_t i = 0; i < v->n && !c->oom; i++) {
        const struct sw__fleet_node *bv = v->kids[i];
        size_t saved = sw__fleet_path_index(c, i);
        struct sw_fleet_boot *b = &ep->boots[ep->n_boots];
        memset(b, 0, sizeof(*b));
        memset(&raw->boot_devices[ep->n_boots], 0, sizeof(raw->boot_devices[0]));
        b->at = sw__fleet_at(bv);
        int r = 0;
        if (!sw__fleet_want_map(c, bv)) {
            sw__fleet_path_pop(c, saved);
            rc = SW_EPARSE;
            continue;
        }
        sw__fleet_record(c, bv);
        for (size_t j = 0; j < bv->n && !c->oom; j++) {
            const struct sw__fleet_node *k = bv->kids[2 * j], *val = bv->kids[2 * j + 1];
            size_t s2 = sw__fleet_path_push(c, k->text);
            int r2 = 0;
            struct sw__fleet_spec bytes = SW__SPEC(SW__FT_BYTES_APPROX);
            if (!strcmp(k->text, "shape")) {
                r2 = sw__fleet_dec_shape(c, val, &b->shape);
            } else if (!strcmp(k->text, "mmproj") || !strcmp(k->text, "projector")) {
                r2 = sw__fleet_dec_bool(c, val, &b->mmproj);
            } else if (!strcmp(k->text, "device")) {
                struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
                r2 = sw__fleet_dec_str(c, val, &sp, &raw->boot_devices[ep->n_boots]);
            } else if (!strcmp(k->text, "used")) {
                r2 = sw__fleet_dec_u64(c, val, &bytes, &b->used);
            } else if (!strcmp(k->text, "total")) {
                r2 = sw__fleet_dec_u64(c, val, &bytes, &b->total);
            } else if (!strcmp(k->text, "free")) {
                r2 = sw__fleet_dec_u64(c, val, &bytes, &b->free);
            } else if (!strcmp(k->text, "outcome")) {
                struct sw__fleet_spec sp = SW__SPECC(outcomes);
                struct sw_fleet_str s = {0};
                r2 = sw__fleet_dec_str(c, val, &sp, &s);
                b->outcome = s.v;
            } else if (!strcmp(k->text, "failure")) {
                struct sw__fleet_spec sp = SW__SPEC(SW__FT_WORD);
                struct sw_fleet_str s = {0};
                r2 = sw__fleet_dec_str(c, val, &sp, &s);
                b->failure = s.v;
            } else if (!strcmp(k->text, "text")) {
                r2 = sw__fleet_dec_text(c, val, &b->text);
            } else if (!strcmp(k->text, "date")) {
                r2 = sw__fleet_dec_date(c, val, &b->date);
            } else if (!strcmp(k->text, "note")) {
                r2 = sw__fleet_dec_text(c, val, &b->note);
            } else if (!strcmp(k->text, "printed")) {
                sw__fleet_record(c, val);
                if (val->kind != SW__FLN_MAP) {
                    r2 = sw__fleet_errp(c, val, "must be a mapping of what the engine printed");
                } else {
                    struct sw_err e;
                    sw_err_clear(&e);
                    json_t *pj = sw__fleet_node_to_json(val, &e);
                    if (!pj)
                        r2 = e.code == SW_ENOMEM ? sw__fleet_nomem(c)
                                                 : sw__fleet_err_from(c, val, &e);
                    else if (!sw__fleet_keep_json(c, pj))
                        b->printed = pj;
                }
            } else {
                sw__fleet_path_pop(c, s2);
                static const char *const known[] = {"shape", "mmproj", "device",  "used",
                                                    "total", "free",   "outcome", "failure",
                                                    "text",  "date",   "note",    "printed"};
                r = sw__fleet_unknown_key(c, k, "boot", known, SW_ARRAY_LEN(known));
                continue;
            }
            sw__fleet_path_pop(c, s2);
            if (r2)
                r = r2;
        }
        if (!r && !b->outcome)
            r = sw__fleet_errp(c, bv, "needs an outcome: booted, serving, failed or rejected");
        if (!r && b->used.set && b->total.set && b->used.v > b->total.v)
            r = sw__fleet_errp(c, bv, "used is more than total");
        if (!r && b->free.set && b->total.set && b->free.v > b->total.v)
            r = sw__fleet_errp(c, bv, "free is more than total");
        if (!r && b->failure && strcmp(b->outcome, "failed"))
            r = sw__fleet_errp(c, bv, "has a failure class but its outcome is %s", b->outcome);
        sw__fleet_path_pop(c, saved);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_boots++;
    }
    return c->oom ? SW_ENOMEM : rc;
}
