/*
 * gate/band: free memory per device after the boot, inside the endpoint's free_band (the plan
 * view's band, default 2..3 GiB). Per device, in this order: a usage reading in the ledger of a
 * boot of THIS shape (measured); the calibration's budget, the non-KV cost the readings of the
 * same kind of shape measured plus the law's KV for this one (calibrated, calib
 * sw_calib_budget); the fleet's measured non-KV fact beside the law's KV (predicted, the plan
 * view's budget by the fact); else a skip naming what is missing. A band that fails gets the
 * pool change that lands it, priced by the law. SGLang endpoints go to band_sglang.c first.
 *
 * What it deliberately does not do: fit non-KV costs (calibration does), or judge the pool or the
 * window (pool.c, window.c).
 */
#include "gate_internal.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/* The fleet device a usage reading's device name means: the same name, the only device, or the
 * device whose index (else position) is the name's trailing number ("CUDA0", "R9700#1"). */
static const struct sw_fleet_device *reading_device(const struct sw_fleet_endpoint *ep,
                                                    const char *name)
{
    if (!name)
        return ep->n_devices == 1 ? ep->devices[0] : NULL;
    for (size_t i = 0; i < ep->n_devices; i++)
        if (!strcmp(ep->devices[i]->name, name))
            return ep->devices[i];
    if (ep->n_devices == 1)
        return ep->devices[0];
    size_t l = strlen(name), k = l;
    while (k > 0 && isdigit((unsigned char)name[k - 1]))
        k--;
    if (k == l)
        return NULL;
    uint64_t idx = strtoull(name + k, NULL, 10);
    for (size_t i = 0; i < ep->n_devices; i++) {
        const struct sw_fleet_device *d = ep->devices[i];
        if (d->index.set ? d->index.v == idx : i == idx)
            return d;
    }
    return NULL;
}

/* The newest usage reading of this shape on device d, from the endpoint's boots. */
static const json_t *measured_reading(const struct sw__gate_run *r, const struct sw_fleet_device *d,
                                      const json_t **boot)
{
    const json_t *best = NULL;
    for (size_t i = 0; i < json_array_size(r->boots); i++) {
        const json_t *b = json_array_get(r->boots, i);
        const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
        if (!canon || !sw_gate_same_shape(canon, r->shape))
            continue;
        const json_t *us = json_object_get(b, "usage");
        for (size_t k = 0; k < json_array_size(us); k++) {
            const json_t *u = json_array_get(us, k);
            if (reading_device(r->ep, json_string_value(json_object_get(u, "device"))) != d)
                continue;
            best = u;
            *boot = b;
        }
    }
    return best;
}

/* Search multiples of `step` for the move that lands inside [lo, hi] nearest the band's middle
 * (a prediction has an error; the middle leaves it room both ways), else the move nearest the
 * middle; *inside says which. Positive = grow the pool. */
static int64_t search_move(double free_now, double lo, double hi, double bytes_per_token,
                           uint64_t step, bool *inside)
{
    double unit = bytes_per_token * (double)step, mid = (lo + hi) / 2;
    int64_t best = 0;
    double best_d = INFINITY;
    *inside = false;
    if (unit <= 0)
        return 0;
    for (int64_t m = 1; m < 100000; m++) {
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            double land = free_now - sgn * (double)m * unit;
            bool in = land >= lo && land <= hi;
            if (in && !*inside) {
                *inside = true; /* an inside landing beats any outside one */
                best_d = INFINITY;
            }
            if ((in || !*inside) && fabs(land - mid) < best_d) {
                best_d = fabs(land - mid);
                best = sgn * m * (int64_t)step;
            }
        }
        if ((double)(m - 1) * unit > fabs(free_now - mid) + (hi - lo))
            break;
    }
    return best;
}

/* The pool change that lands `free_now` inside [lo, hi]: a multiple of the endpoint's ctx (or
 * max_model_len) knob step when it declares one and some multiple lands inside, else of the
 * engine's granularity (llama.cpp pads each slot to 256 cells). Signed tokens, + = grow. */
static int64_t pool_move(const struct sw__gate_run *r, double free_now, double lo, double hi,
                         double bytes_per_token, uint64_t *step_out)
{
    const struct sw_plan_view *p = &r->plan;
    uint64_t gran;
    const struct sw_fleet_knob *k;
    bool inside = false;
    if (p->engine == SW_FLEET_LLAMACPP) {
        k = sw_fleet_endpoint_knob(r->ep, "ctx_size");
        gran = (uint64_t)(p->slots ? p->slots : 1) * 256;
    } else {
        k = sw_fleet_endpoint_knob(r->ep, "max_model_len");
        gran = (uint64_t)(p->vr && p->vr->block_size > 0 ? p->vr->block_size : 16) *
               (p->slots ? p->slots : 1);
    }
    if (k && k->is_range && k->step.set && k->step.u > 0) {
        int64_t mv = search_move(free_now, lo, hi, bytes_per_token, k->step.u, &inside);
        if (inside) {
            *step_out = k->step.u;
            return mv;
        }
    }
    *step_out = gran;
    return search_move(free_now, lo, hi, bytes_per_token, gran, &inside);
}

static void band_fix(json_t *g, const struct sw__gate_run *r, double free_now, double lo, double hi)
{
    const struct sw_plan_view *p = &r->plan;
    char a[64], b[64];
    uint64_t step = 0;
    if (!p->ok || p->pool_tokens == 0 || p->kv_bytes == 0) {
        sw__gate_fix(g, "%s the pool until %s..%s is free", free_now < lo ? "cut" : "grow",
                     sw__gate_mib(lo, a, sizeof(a)), sw__gate_mib(hi, b, sizeof(b)));
        return;
    }
    double per_token = (double)p->kv_bytes / (double)p->pool_tokens;
    int64_t mv = pool_move(r, free_now, lo, hi, per_token, &step);
    if (!mv)
        return;
    /* mv > 0 grows the pool (less free): landing = free - mv x price */
    double land = free_now - (double)mv * per_token;
    uint64_t mag = (uint64_t)(mv < 0 ? -mv : mv);
    if (p->engine == SW_FLEET_LLAMACPP) {
        char t[6][64];
        uint64_t now = p->pool_tokens, next = (uint64_t)((int64_t)now + mv);
        sw__gate_fix(g,
                     "%s the pool by %s tokens (ctx_size %s -> %s = %s slots x %s) to land at "
                     "%s free",
                     mv < 0 ? "cut" : "grow", sw_fmt_count(mag, t[0], 64),
                     sw_fmt_count(now, t[1], 64), sw_fmt_count(next, t[2], 64),
                     sw_fmt_count(p->slots, t[3], 64),
                     sw_fmt_count(p->slots ? next / p->slots : next, t[4], 64),
                     sw__gate_mib(land, t[5], 64));
    } else {
        sw__gate_fix(g, "%s the pool by %s tokens to land at %s free", mv < 0 ? "cut" : "grow",
                     sw_fmt_count(mag, a, sizeof(a)), sw__gate_mib(land, b, sizeof(b)));
    }
    sw__gate_num(g, "fix_tokens", (double)mv);
    sw__gate_num(g, "fix_free_bytes", land);
}

/* The shape to ask the calibration's budget for: a recorded boot of the same kind (equal on
 * every memory key once ctx, slots and the pool are set to ours), so the recorded vocabulary of
 * flags (a projector's size, ...) matches the class the calibration built from it. NULL: none. */
static json_t *budget_shape(const struct sw__gate_run *r)
{
    static const char *const pool_keys[] = {"ctx", "slots", "kv_bytes", "kv_tokens"};
    for (size_t i = json_array_size(r->boots); i-- > 0;) {
        const json_t *canon =
            json_object_get(json_object_get(json_array_get(r->boots, i), "shape"), "canonical");
        if (!json_is_object(canon))
            continue;
        json_t *t = json_deep_copy(canon);
        if (!t)
            return NULL;
        for (size_t k = 0; k < SW_ARRAY_LEN(pool_keys); k++) {
            json_t *v = json_object_get(r->shape, pool_keys[k]);
            if (v)
                json_object_set(t, pool_keys[k], v);
            else
                json_object_del(t, pool_keys[k]);
        }
        if (sw_gate_same_shape(t, r->shape))
            return t;
        json_decref(t);
    }
    return NULL;
}

/* The calibration's budget entry for fleet device d, or NULL. */
static const struct sw_calib_device *budget_device(const struct sw__gate_run *r,
                                                   const struct sw_calib_budget *b,
                                                   const struct sw_fleet_device *d)
{
    for (int i = 0; i < b->n_dev; i++)
        if (reading_device(r->ep, b->dev[i].device) == d)
            return &b->dev[i];
    return NULL;
}

/* What every device's verdict shares: the band, and the calibration's budget of this shape
 * (or why there is none). */
struct band {
    double lo, hi;
    char bs[64]; /* "2,048 MiB..3,072 MiB" */
    struct sw_calib_budget cb;
    bool have_cb;
    char cb_why[640];
};

/* The calibrated budget: the readings' non-KV cost + the law's KV for this shape. */
static void calibrated_budget(const struct sw__gate_run *r, struct band *b)
{
    memset(&b->cb, 0, sizeof(b->cb));
    if (!r->fit) {
        snprintf(b->cb_why, sizeof(b->cb_why), "%s",
                 r->fit_why[0] ? r->fit_why : "no ledger was given");
        return;
    }
    json_t *q = budget_shape(r);
    struct sw_err ce;
    struct sw_calib_opts co = {.ep = r->ep};
    sw_err_clear(&ce);
    if (q && sw_calib_budget(r->fit, q, &co, &b->cb, &ce) == 0)
        b->have_cb = true;
    else if (q)
        sw_err_format(&ce, b->cb_why, sizeof(b->cb_why));
    else
        snprintf(b->cb_why, sizeof(b->cb_why), "no boot of a shape like this one was read");
    json_decref(q);
}

/* calibrated: the calibration's budget on this device. */
static void band_calibrated(struct sw__gate_run *r, const struct band *b,
                            const struct sw_fleet_device *dev, const struct sw_calib_device *cd)
{
    const struct sw_plan_view *p = &r->plan;
    char a[64], bb[64], c[64], d[64], t[2][48], kvs[160];
    double fm = cd->free_mib * SW_MIB, flo = cd->free_lo * SW_MIB, fhi = cd->free_hi * SW_MIB;
    bool in = fm >= b->lo && fm <= b->hi;
    const struct sw_plan_view_dev *vd = sw_plan_view_device(p, dev);
    uint64_t pkv = vd ? vd->kv : 0, prec = vd ? vd->rec : 0;
    if (pkv && fabs((double)(pkv + prec) - cd->kv_mib * SW_MIB) < SW_MIB) {
        char k1[48], k2[48];
        snprintf(kvs, sizeof(kvs), "%s of KV + %s of recurrent state",
                 sw__gate_gib((double)pkv, k1, sizeof(k1)),
                 sw__gate_mib((double)prec, k2, sizeof(k2)));
    } else {
        snprintf(kvs, sizeof(kvs), "%s of KV and state",
                 sw__gate_gib(cd->kv_mib * SW_MIB, d, sizeof(d)));
    }
    json_t *g = sw__gate_add(
        r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
        "%s: %s free, calibrated (%s..%s; %s by the law + non-KV %s "
        "from %d reading%s, driver reserve %s), %s the %s band%s%s",
        dev->name, sw__gate_mib(fm, a, sizeof(a)), sw__gate_mib(flo, bb, sizeof(bb)),
        sw__gate_mib(fhi, c, sizeof(c)), kvs, sw__gate_mib(cd->non_kv_mib * SW_MIB, t[0], 48),
        cd->n_readings, cd->n_readings == 1 ? "" : "s",
        sw__gate_mib(cd->reserve_mib * SW_MIB, t[1], 48), in ? "inside" : "outside", b->bs,
        b->cb.warning[0] ? "; " : "", b->cb.warning);
    sw__gate_str(g, "device", dev->name);
    sw__gate_str(g, "source", "calibrated");
    sw__gate_num(g, "free_bytes", fm);
    sw__gate_num(g, "free_lo_bytes", flo);
    sw__gate_num(g, "free_hi_bytes", fhi);
    sw__gate_num(g, "kv_and_state_bytes", cd->kv_mib * SW_MIB);
    if (pkv) {
        sw__gate_num(g, "kv_bytes", (double)pkv);
        sw__gate_num(g, "recurrent_bytes", (double)prec);
    }
    sw__gate_num(g, "non_kv_bytes", cd->non_kv_mib * SW_MIB);
    sw__gate_num(g, "reserve_bytes", cd->reserve_mib * SW_MIB);
    sw__gate_num(g, "total_bytes", (double)cd->total_mib * SW_MIB);
    sw__gate_num(g, "band_min", b->lo);
    sw__gate_num(g, "band_max", b->hi);
    if (b->cb.extrapolated)
        sw__gate_num(g, "extrapolated", 1);
    sw__gate_evidence(g, json_pack("{s:s}", "basis", cd->basis));
    if (!in)
        band_fix(g, r, fm, b->lo, b->hi);
}

/* measured: a usage reading of a boot of this very shape on this device. */
static void band_measured(struct sw__gate_run *r, const struct band *b,
                          const struct sw_fleet_device *dev, const json_t *u, const json_t *boot)
{
    char a[64], bb[64], c[64];
    double total = (double)json_integer_value(json_object_get(u, "total_mib")) * SW_MIB;
    double used = (double)json_integer_value(json_object_get(u, "used_mib")) * SW_MIB;
    bool fr = json_is_true(json_object_get(u, "free_read"));
    double fm =
        fr ? (double)json_integer_value(json_object_get(u, "free_mib")) * SW_MIB : total - used;
    bool in = fm >= b->lo && fm <= b->hi;
    json_t *g = sw__gate_add(r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
                             "%s: %s free, measured (boot #%lld: %s / %s used), %s the %s band",
                             dev->name, sw__gate_mib(fm, a, sizeof(a)),
                             (long long)json_integer_value(json_object_get(boot, "id")),
                             sw__gate_mib(used, bb, sizeof(bb)), sw__gate_mib(total, c, sizeof(c)),
                             in ? "inside" : "outside", b->bs);
    sw__gate_str(g, "device", dev->name);
    sw__gate_str(g, "source", "measured");
    sw__gate_num(g, "free_bytes", fm);
    sw__gate_num(g, "used_bytes", used);
    sw__gate_num(g, "total_bytes", total);
    sw__gate_num(g, "band_min", b->lo);
    sw__gate_num(g, "band_max", b->hi);
    sw__gate_evidence(g, json_deep_copy(u));
    if (!in)
        band_fix(g, r, fm, b->lo, b->hi);
}

/* predicted: the fleet's measured non-KV fact beside the law's KV on this device (the plan
 * view's budget by the fact), or a skip naming what is missing. */
static void band_predicted(struct sw__gate_run *r, const struct band *b,
                           const struct sw_fleet_device *dev)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_plan_view *p = &r->plan;
    const struct sw_fleet_fact *nk = p->non_kv;
    const struct sw_plan_view_dev *vd = sw_plan_view_device(p, dev);
    uint64_t kv = vd ? vd->kv : 0, rec = vd ? vd->rec : 0, cap = vd ? vd->capacity : 0;
    uint64_t dw = vd ? vd->draft_weights : 0, dkv = vd ? vd->draft_kv : 0;
    uint64_t dc = vd ? vd->draft_compute : 0;
    char a[64], bb[64], c[64], d[64], t[2][48], um[48];
    json_t *g;
    /* the draft model's lines, named: no non-KV fact holds them (a fact is the main model's
     * cost, with the projector when one is set), so they are added to it */
    char dl[200] = "";
    if (dw || dkv || dc)
        snprintf(dl, sizeof(dl), " + draft weights %s + draft KV %s + draft compute %s",
                 sw__gate_mib((double)dw, t[0], 48), sw__gate_mib((double)dkv, t[1], 48),
                 sw__gate_mib((double)dc, d, sizeof(d)));
    if (!p->ok) {
        sw__gate_add(r, "band", SW_GATE_SKIP,
                     "%s: no reading of this shape, and the law "
                     "could not run: %s",
                     dev->name, p->why);
        return;
    }
    if (p->engine == SW_FLEET_VLLM && !p->pinned) {
        g = sw__gate_add(r, "band", SW_GATE_SKIP,
                         "%s: no usage reading of this shape in the ledger, and the engine "
                         "sizes the pool at boot (no kv_cache_bytes)",
                         dev->name);
        sw__gate_str(g, "device", dev->name);
        return;
    }
    if (!vd || !vd->by_fact) {
        g = sw__gate_add(r, "band", SW_GATE_SKIP,
                         "%s: no usage reading of this shape in the ledger and no non-KV cost "
                         "for it (a measured fact non_kv_cost%s, or a calibration): the law "
                         "puts %s of KV here%s",
                         dev->name, ep->payload.mmproj.v ? "_with_projector" : "",
                         sw__gate_gib((double)kv, a, sizeof(a)), dl);
        sw__gate_str(g, "device", dev->name);
        sw__gate_num(g, "kv_bytes", (double)kv);
        return;
    }
    double used = vd->used, fm = vd->free;
    bool in = sw_plan_view_in_band(p, fm);
    g = sw__gate_add(r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
                     "%s: %s free, predicted (%s of KV + %s of recurrent state by the law + "
                     "non-KV %s measured%s = %s of %s), %s the %s band",
                     dev->name, sw__gate_mib(fm, a, sizeof(a)),
                     sw__gate_gib((double)kv, bb, sizeof(bb)), sw__gate_mib((double)rec, t[1], 48),
                     sw__gate_mib(nk->q.value, c, sizeof(c)), dl,
                     sw__gate_mib(used, um, sizeof(um)), sw__gate_mib((double)cap, t[0], 48),
                     in ? "inside" : "outside", b->bs);
    sw__gate_num(g, "recurrent_bytes", (double)rec);
    if (dw || dkv || dc) {
        sw__gate_num(g, "draft_weights_bytes", (double)dw);
        sw__gate_num(g, "draft_kv_bytes", (double)dkv);
        sw__gate_num(g, "draft_compute_bytes", (double)dc);
    }
    sw__gate_str(g, "device", dev->name);
    sw__gate_str(g, "source", "predicted");
    sw__gate_num(g, "free_bytes", fm);
    sw__gate_num(g, "kv_bytes", (double)kv);
    sw__gate_num(g, "non_kv_bytes", nk->q.value);
    sw__gate_num(g, "total_bytes", (double)cap);
    sw__gate_num(g, "band_min", b->lo);
    sw__gate_num(g, "band_max", b->hi);
    sw__gate_evidence(g, json_pack("{s:s,s:s,s:s?}", "fact", nk->name, "value", nk->q.text,
                                   "source", nk->source));
    sw__gate_evidence(g, json_pack("{s:s}", "no_calibration", b->cb_why));
    if (!in)
        band_fix(g, r, fm, b->lo, b->hi);
}

int sw__gate_band(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_plan_view *p = &r->plan;
    struct band b = {.lo = (double)p->band_min, .hi = (double)p->band_max};
    char a[64], c[64];
    snprintf(b.bs, sizeof(b.bs), "%s..%s", sw__gate_mib(b.lo, a, sizeof(a)),
             sw__gate_mib(b.hi, c, sizeof(c)));
    if (ep->n_devices == 0) {
        sw__gate_add(r, "band", SW_GATE_SKIP, "the endpoint names no device");
        return 0;
    }
    if (p->engine == SW_FLEET_SGLANG) {
        bool done = false;
        int rc = sw__gate_band_sglang(r, &done, e);
        if (rc || done)
            return rc;
    }
    calibrated_budget(r, &b);
    for (size_t i = 0; i < ep->n_devices; i++) {
        const struct sw_fleet_device *dev = ep->devices[i];
        const json_t *boot = NULL, *u = measured_reading(r, dev, &boot);
        const struct sw_calib_device *cd = b.have_cb ? budget_device(r, &b.cb, dev) : NULL;
        if (cd && !cd->measured)
            band_calibrated(r, &b, dev, cd);
        else if (u)
            band_measured(r, &b, dev, u, boot);
        else
            band_predicted(r, &b, dev);
    }
    return 0;
}
