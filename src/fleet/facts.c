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

struct fact_dec {
    struct sw_fleet_fact *fa;
    struct sw_fleet_str *device;
};

static int dec_fact_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *fk,
                        const struct sw__fleet_node *val, void *arg)
{
    struct fact_dec *fd = arg;
    struct sw_fleet_fact *fa = fd->fa;
    if (!strcmp(fk->text, "value")) {
        fa->at = sw__fleet_at(val);
        return sw__fleet_dec_qty(c, val, &fa->q);
    }
    if (!strcmp(fk->text, "date"))
        return sw__fleet_dec_date(c, val, &fa->date);
    if (!strcmp(fk->text, "device")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
        return sw__fleet_dec_str(c, val, &sp, fd->device);
    }
    /* source, note */
    if (fa->source)
        return sw__fleet_errp(c, val, "source and note are the same field: use one");
    return sw__fleet_dec_text(c, val, &fa->source);
}

static int dec_fact(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                    const struct sw__fleet_node *fv, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    struct sw__fleet_ep_raw *raw = sw__fleet_raw_of(c, ep);
    struct sw_fleet_fact *fa = &ep->facts[ep->n_facts];
    memset(fa, 0, sizeof(*fa));
    memset(&raw->fact_devices[ep->n_facts], 0, sizeof(raw->fact_devices[0]));
    fa->name = sw_region_strdup(c->a, k->text);
    if (!fa->name)
        return sw__fleet_nomem(c);
    fa->at = sw__fleet_at(fv);
    int r = 0;
    if (fv->kind == SW__FLN_SCALAR) {
        r = sw__fleet_dec_qty(c, fv, &fa->q);
    } else {
        static const char *const known[] = {"value", "date", "source", "note", "device"};
        struct fact_dec fd = {fa, &raw->fact_devices[ep->n_facts]};
        struct sw__fleet_walk w = {
            .what = "fact", .known = known, .n_known = 5, .fn = dec_fact_key, .arg = &fd};
        r = sw__fleet_walk(c, fv, &w);
        if (!r && !sw__fleet_map_get(fv, "value"))
            r = sw__fleet_errp(c, fv, "needs a value");
    }
    if (!r)
        ep->n_facts++;
    return r;
}

int sw__fleet_ep_measured(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw__fleet_ep_raw *raw = sw__fleet_raw_of(c, ep);
    int rc = sw__fleet_alloc_pair(c, v, &ep->facts, sizeof(*ep->facts), &raw->fact_devices,
                                  sizeof(*raw->fact_devices));
    if (rc)
        return rc;
    struct sw__fleet_walk w = {.what = "fact", .fn = dec_fact, .arg = ep};
    return sw__fleet_walk(c, v, &w);
}

static const char *const outcomes[] = {"booted", "serving", "failed", "rejected", NULL};

static const char *const boot_keys[] = {"shape",   "mmproj",  "device", "used", "total", "free",
                                        "outcome", "failure", "text",   "date", "note",  "printed"};

static const char *boot_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, void *arg)
{
    (void)arg;
    if (!strcmp(k->text, "projector"))
        return k->text;
    for (size_t i = 0; i < SW_ARRAY_LEN(boot_keys); i++)
        if (!strcmp(k->text, boot_keys[i]))
            return k->text;
    sw__fleet_unknown_key(c, k, "boot", boot_keys, SW_ARRAY_LEN(boot_keys));
    return NULL;
}

struct boot_dec {
    struct sw_fleet_boot *b;
    struct sw_fleet_str *device;
};

static int dec_boot_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                        const struct sw__fleet_node *val, void *arg)
{
    struct boot_dec *bd = arg;
    struct sw_fleet_boot *b = bd->b;
    struct sw__fleet_spec bytes = SW__SPEC(SW__FT_BYTES_APPROX);
    if (!strcmp(k->text, "shape"))
        return sw__fleet_dec_shape(c, val, &b->shape);
    if (!strcmp(k->text, "mmproj") || !strcmp(k->text, "projector"))
        return sw__fleet_dec_bool(c, val, &b->mmproj);
    if (!strcmp(k->text, "device")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
        return sw__fleet_dec_str(c, val, &sp, bd->device);
    }
    if (!strcmp(k->text, "used"))
        return sw__fleet_dec_u64(c, val, &bytes, &b->used);
    if (!strcmp(k->text, "total"))
        return sw__fleet_dec_u64(c, val, &bytes, &b->total);
    if (!strcmp(k->text, "free"))
        return sw__fleet_dec_u64(c, val, &bytes, &b->free);
    if (!strcmp(k->text, "outcome")) {
        struct sw__fleet_spec sp = SW__SPECC(outcomes);
        struct sw_fleet_str s = {0};
        int r = sw__fleet_dec_str(c, val, &sp, &s);
        b->outcome = s.v;
        return r;
    }
    if (!strcmp(k->text, "failure")) {
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_WORD);
        struct sw_fleet_str s = {0};
        int r = sw__fleet_dec_str(c, val, &sp, &s);
        b->failure = s.v;
        return r;
    }
    if (!strcmp(k->text, "text"))
        return sw__fleet_dec_text(c, val, &b->text);
    if (!strcmp(k->text, "date"))
        return sw__fleet_dec_date(c, val, &b->date);
    if (!strcmp(k->text, "note"))
        return sw__fleet_dec_text(c, val, &b->note);
    /* printed */
    sw__fleet_record(c, val);
    if (val->kind != SW__FLN_MAP)
        return sw__fleet_errp(c, val, "must be a mapping of what the engine printed");
    struct sw_err e;
    sw_err_clear(&e);
    json_t *pj = sw__fleet_node_to_json(val, &e);
    if (!pj)
        return e.code == SW_ENOMEM ? sw__fleet_nomem(c) : sw__fleet_err_from(c, val, &e);
    int r = sw__fleet_keep_json(c, pj);
    if (!r)
        b->printed = pj;
    return r;
}

static int dec_boot(struct sw__fleet_ctx *c, const struct sw__fleet_node *bv, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    struct sw__fleet_ep_raw *raw = sw__fleet_raw_of(c, ep);
    struct sw_fleet_boot *b = &ep->boots[ep->n_boots];
    memset(b, 0, sizeof(*b));
    memset(&raw->boot_devices[ep->n_boots], 0, sizeof(raw->boot_devices[0]));
    b->at = sw__fleet_at(bv);
    struct boot_dec bd = {b, &raw->boot_devices[ep->n_boots]};
    struct sw__fleet_walk w = {.key = boot_key, .fn = dec_boot_key, .arg = &bd};
    int r = sw__fleet_walk(c, bv, &w);
    if (!r && !b->outcome)
        r = sw__fleet_errp(c, bv, "needs an outcome: booted, serving, failed or rejected");
    if (!r && b->used.set && b->total.set && b->used.v > b->total.v)
        r = sw__fleet_errp(c, bv, "used is more than total");
    if (!r && b->free.set && b->total.set && b->free.v > b->total.v)
        r = sw__fleet_errp(c, bv, "free is more than total");
    if (!r && b->failure && strcmp(b->outcome, "failed"))
        r = sw__fleet_errp(c, bv, "has a failure class but its outcome is %s", b->outcome);
    if (!r)
        ep->n_boots++;
    return r;
}

int sw__fleet_ep_boots(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw__fleet_ep_raw *raw = sw__fleet_raw_of(c, ep);
    int rc = sw__fleet_alloc_pair(c, v, &ep->boots, sizeof(*ep->boots), &raw->boot_devices,
                                  sizeof(*raw->boot_devices));
    if (rc)
        return rc;
    return sw__fleet_walk_seq(c, v, dec_boot, ep);
}
