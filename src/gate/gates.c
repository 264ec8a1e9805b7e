/*
 * gate/gates: the gates of `slipway check` (include/slipway/gate.h says what each one holds).
 * Every number in a verdict line comes from the law (struct sw_plan_view), a ledger row or a
 * fleet fact, and the line names which.
 *
 * What it deliberately does not do: fit non-KV costs (calibration does; the band gate reads what
 * the fleet or the calibration states), or read anything over the network.
 */
#include "gate_internal.h"

#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/payload.h>

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t cdiv(uint64_t a, uint64_t b)
{
    return b ? (a + b - 1) / b : 0;
}

static const char *cnt(uint64_t v, char *out, size_t n)
{
    return sw_fmt_count(v, out, n);
}

/* ---------------------------------------------------------------------------------------------
 * Ledger evidence helpers.
 */

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

/* ---------------------------------------------------------------------------------------------
 * band: free memory per device after the boot.
 */

/* The pool change that lands `free_now` inside [lo, hi]: a multiple of the endpoint's ctx/kv knob
 * step when it declares one, else of the engine's granularity; the smallest change that lands
 * inside, or the one nearest the band's middle. bytes_per_unit: what one token of the pool costs
 * on this device. Returns the signed change in tokens (negative = cut). */
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
                     mv < 0 ? "cut" : "grow", cnt(mag, t[0], 64), cnt(now, t[1], 64),
                     cnt(next, t[2], 64), cnt(p->slots, t[3], 64),
                     cnt(p->slots ? next / p->slots : next, t[4], 64),
                     sw__gate_mib(land, t[5], 64));
    } else {
        sw__gate_fix(g, "%s the pool by %s tokens to land at %s free", mv < 0 ? "cut" : "grow",
                     cnt(mag, a, sizeof(a)), sw__gate_mib(land, b, sizeof(b)));
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

int sw__gate_band(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_plan_view *p = &r->plan;
    double lo = (double)p->band_min, hi = (double)p->band_max;
    char a[64], b[64], c[64], d[64], bs[64], t[2][48];
    snprintf(bs, sizeof(bs), "%s..%s", sw__gate_mib(lo, a, sizeof(a)),
             sw__gate_mib(hi, b, sizeof(b)));
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
    /* The calibrated budget: the readings' non-KV cost + the law's KV for this shape. */
    struct sw_calib_budget cb;
    bool have_cb = false;
    char cb_why[640] = "";
    memset(&cb, 0, sizeof(cb));
    if (r->fit) {
        json_t *q = budget_shape(r);
        struct sw_err ce;
        struct sw_calib_opts co = {.ep = ep};
        sw_err_clear(&ce);
        if (q && sw_calib_budget(r->fit, q, &co, &cb, &ce) == 0)
            have_cb = true;
        else if (q)
            sw_err_format(&ce, cb_why, sizeof(cb_why));
        else
            snprintf(cb_why, sizeof(cb_why), "no boot of a shape like this one was read");
        json_decref(q);
    } else {
        snprintf(cb_why, sizeof(cb_why), "%s", r->fit_why[0] ? r->fit_why : "no ledger was given");
    }
    for (size_t i = 0; i < ep->n_devices; i++) {
        const struct sw_fleet_device *dev = ep->devices[i];
        const json_t *boot = NULL, *u = measured_reading(r, dev, &boot);
        const struct sw_calib_device *cd = have_cb ? budget_device(r, &cb, dev) : NULL;
        json_t *g;
        if (cd && !cd->measured) {
            double fm = cd->free_mib * SW_MIB, flo = cd->free_lo * SW_MIB,
                   fhi = cd->free_hi * SW_MIB;
            bool in = fm >= lo && fm <= hi;
            char kvs[160];
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
            g = sw__gate_add(r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
                             "%s: %s free, calibrated (%s..%s; %s by the law + non-KV %s "
                             "from %d reading%s, driver reserve %s), %s the %s band%s%s",
                             dev->name, sw__gate_mib(fm, a, sizeof(a)),
                             sw__gate_mib(flo, b, sizeof(b)), sw__gate_mib(fhi, c, sizeof(c)), kvs,
                             sw__gate_mib(cd->non_kv_mib * SW_MIB, t[0], 48), cd->n_readings,
                             cd->n_readings == 1 ? "" : "s",
                             sw__gate_mib(cd->reserve_mib * SW_MIB, t[1], 48),
                             in ? "inside" : "outside", bs, cb.warning[0] ? "; " : "", cb.warning);
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
            sw__gate_num(g, "band_min", lo);
            sw__gate_num(g, "band_max", hi);
            if (cb.extrapolated)
                sw__gate_num(g, "extrapolated", 1);
            sw__gate_evidence(g, json_pack("{s:s}", "basis", cd->basis));
            if (!in)
                band_fix(g, r, fm, lo, hi);
            continue;
        }
        if (u) {
            double total = (double)json_integer_value(json_object_get(u, "total_mib")) * SW_MIB;
            double used = (double)json_integer_value(json_object_get(u, "used_mib")) * SW_MIB;
            bool fr = json_is_true(json_object_get(u, "free_read"));
            double fm = fr ? (double)json_integer_value(json_object_get(u, "free_mib")) * SW_MIB
                           : total - used;
            bool in = fm >= lo && fm <= hi;
            g = sw__gate_add(r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
                             "%s: %s free, measured (boot #%lld: %s / %s used), %s the %s band",
                             dev->name, sw__gate_mib(fm, a, sizeof(a)),
                             (long long)json_integer_value(json_object_get(boot, "id")),
                             sw__gate_mib(used, b, sizeof(b)), sw__gate_mib(total, c, sizeof(c)),
                             in ? "inside" : "outside", bs);
            sw__gate_str(g, "device", dev->name);
            sw__gate_str(g, "source", "measured");
            sw__gate_num(g, "free_bytes", fm);
            sw__gate_num(g, "used_bytes", used);
            sw__gate_num(g, "total_bytes", total);
            sw__gate_num(g, "band_min", lo);
            sw__gate_num(g, "band_max", hi);
            sw__gate_evidence(g, json_deep_copy(u));
            if (!in)
                band_fix(g, r, fm, lo, hi);
            continue;
        }
        /* Predicted: a stated non-KV cost plus the law's KV on this device. */
        const struct sw_fleet_fact *nk = p->non_kv;
        const struct sw_plan_view_dev *vd = sw_plan_view_device(p, dev);
        uint64_t kv = vd ? vd->kv : 0, rec = vd ? vd->rec : 0, cap = vd ? vd->capacity : 0;
        uint64_t dw = vd ? vd->draft_weights : 0, dkv = vd ? vd->draft_kv : 0;
        uint64_t dc = vd ? vd->draft_compute : 0;
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
            continue;
        }
        if (p->engine == SW_FLEET_VLLM && !p->pinned) {
            g = sw__gate_add(r, "band", SW_GATE_SKIP,
                             "%s: no usage reading of this shape in the ledger, and the engine "
                             "sizes the pool at boot (no kv_cache_bytes)",
                             dev->name);
            sw__gate_str(g, "device", dev->name);
            continue;
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
            continue;
        }
        double used = vd->used, fm = vd->free;
        bool in = sw_plan_view_in_band(p, fm);
        char um[48];
        g = sw__gate_add(
            r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
            "%s: %s free, predicted (%s of KV + %s of recurrent state by the law + "
            "non-KV %s measured%s = %s of %s), %s the %s band",
            dev->name, sw__gate_mib(fm, a, sizeof(a)), sw__gate_gib((double)kv, b, sizeof(b)),
            sw__gate_mib((double)rec, t[1], 48), sw__gate_mib(nk->q.value, c, sizeof(c)), dl,
            sw__gate_mib(used, um, sizeof(um)), sw__gate_mib((double)cap, t[0], 48),
            in ? "inside" : "outside", bs);
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
        sw__gate_num(g, "band_min", lo);
        sw__gate_num(g, "band_max", hi);
        sw__gate_evidence(g, json_pack("{s:s,s:s,s:s?}", "fact", nk->name, "value", nk->q.text,
                                       "source", nk->source));
        sw__gate_evidence(g, json_pack("{s:s}", "no_calibration", cb_why));
        if (!in)
            band_fix(g, r, fm, lo, hi);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * pool: the pool holds the contract.
 */
int sw__gate_pool(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    double margin = r->o ? r->o->pool_margin : 0;
    char a[64], b[64], c[64], d[64], x[64], t[3][48];
    json_t *g;
    (void)e;
    if (!p->ok) {
        sw__gate_add(r, "pool", SW_GATE_SKIP, "the law could not run: %s", p->why);
        return 0;
    }
    if (p->engine == SW_FLEET_LLAMACPP) {
        uint64_t need = (uint64_t)ceil((double)p->slots * (double)p->maxlen * (1 + margin));
        bool ok = p->pool_tokens >= need;
        g = sw__gate_add(r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                         "%s cells %s %s slots x %s tokens%s: %s of KV at %.0f B/token (%s)%s%s",
                         cnt(p->pool_tokens, a, sizeof(a)), ok ? "hold" : "do not hold",
                         cnt(p->slots, b, sizeof(b)), cnt(p->maxlen, c, sizeof(c)),
                         p->shared ? " (one pool shared by the slots)" : " (one window per slot)",
                         sw__gate_gib((double)p->kv_bytes, d, sizeof(d)), p->kv_price, p->price_how,
                         p->recurrent_bytes ? ", + recurrent state " : "",
                         p->recurrent_bytes ? sw__gate_mib((double)p->recurrent_bytes, x, sizeof(x))
                                            : "");
        sw__gate_num(g, "pool_tokens", (double)p->pool_tokens);
        sw__gate_num(g, "slots", (double)p->slots);
        sw__gate_num(g, "window", (double)p->maxlen);
        sw__gate_num(g, "kv_bytes", (double)p->kv_bytes);
        sw__gate_num(g, "recurrent_bytes", (double)p->recurrent_bytes);
        sw__gate_num(g, "price_bytes_per_token", p->kv_price);
        sw__gate_num(g, "margin", margin);
        if (!ok)
            sw__gate_fix(g, "ctx_size %s (%s slots x %s)", cnt(need, a, sizeof(a)),
                         cnt(p->slots, b, sizeof(b)), cnt(p->maxlen, c, sizeof(c)));
        return 0;
    }
    if (p->engine == SW_FLEET_SGLANG) {
        const struct sw_sglang_report *sr = p->plan.sglang;
        if (p->slots == 0 || p->maxlen == 0) {
            sw__gate_add(r, "pool", SW_GATE_SKIP,
                         "seqs or max_model_len is not set: no contract to hold");
            return 0;
        }
        uint64_t need = (uint64_t)ceil((double)p->slots * (double)p->maxlen * (1 + margin));
        bool ok = p->pool_tokens >= need;
        g = sw__gate_add(r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                         "%s tokens %s %s requests x %s tokens%s (one pool shared by the "
                         "requests): %s of KV at %.0f B/token (%s), + %lld mamba slots %s",
                         cnt(p->pool_tokens, a, sizeof(a)), ok ? "hold" : "do not hold",
                         cnt(p->slots, b, sizeof(b)), cnt(p->maxlen, c, sizeof(c)),
                         margin > 0 ? " + margin" : "",
                         sw__gate_gib((double)p->kv_bytes, d, sizeof(d)), p->kv_price, p->price_how,
                         (long long)sr->max_mamba_cache_size,
                         sw__gate_mib((double)p->recurrent_bytes, x, sizeof(x)));
        /* unpinned, the pool is the engine's autofit (from the measured autofit_tokens): a
         * ceiling, since SGLang caps --max-total-tokens at it; only the contract can move */
        const char *from = json_string_value(json_object_get(p->plan.predicted, "pool_from"));
        sw__gate_str(g, "source",
                     from && !p->pinned ? "law, the autofit from measured autofit_tokens" : "law");
        if (!p->pinned)
            sw__gate_num(g, "autofit", 1);
        sw__gate_num(g, "pool_tokens", (double)p->pool_tokens);
        sw__gate_num(g, "need_tokens", (double)need);
        sw__gate_num(g, "slots", (double)p->slots);
        sw__gate_num(g, "window", (double)p->maxlen);
        sw__gate_num(g, "kv_bytes", (double)p->kv_bytes);
        sw__gate_num(g, "recurrent_bytes", (double)p->recurrent_bytes);
        sw__gate_num(g, "mamba_slots", (double)sr->max_mamba_cache_size);
        sw__gate_num(g, "price_bytes_per_token", p->kv_price);
        sw__gate_num(g, "margin", margin);
        if (!ok && p->pinned)
            sw__gate_fix(g, "max_total_tokens %s (%s requests x %s), or cut seqs to %s",
                         cnt(need, a, sizeof(a)), cnt(p->slots, b, sizeof(b)),
                         cnt(p->maxlen, c, sizeof(c)),
                         cnt(p->pool_tokens / p->maxlen, d, sizeof(d)));
        else if (!ok)
            sw__gate_fix(
                g,
                "the engine's autofit is the largest pool this card gives (a larger "
                "max_total_tokens is capped to it): cut seqs to %s, or max_model_len to "
                "%s",
                cnt(p->pool_tokens / p->maxlen, a, sizeof(a)),
                cnt((uint64_t)floor((double)p->pool_tokens / (1 + margin) / (double)p->slots), b,
                    sizeof(b)));
        /* a hybrid runs at most mamba slots / 3 requests (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_
         * RATIO): fewer than seqs and the contract is not served however large the pool */
        if (sr->mamba_cache_per_req && (uint64_t)sr->max_running_requests < p->slots) {
            g = sw__gate_add(r, "pool", SW_GATE_FAIL,
                             "the engine runs %lld requests, not %s: %lld mamba slots allow "
                             "%lld (SGLang keeps 3 slots per running request with the radix "
                             "cache on)",
                             (long long)sr->max_running_requests, cnt(p->slots, a, sizeof(a)),
                             (long long)sr->max_mamba_cache_size,
                             (long long)(sr->max_mamba_cache_size /
                                         (p->plan.sglang_opts->disable_radix_cache ? 1 : 3)));
            sw__gate_str(g, "source", "law");
            sw__gate_num(g, "max_running_requests", (double)sr->max_running_requests);
            sw__gate_fix(g, "max_mamba_cache_size %s (3 x seqs)", cnt(3 * p->slots, a, sizeof(a)));
        }
        return 0;
    }
    /* vLLM: whole blocks. A request of L tokens takes blocks_per_request blocks (attention
     * blocks + the per-request state blocks); the pool holds num_gpu_blocks. */
    const struct sw_vllm_report *vr = p->vr;
    uint64_t bpr = (uint64_t)vr->blocks_per_request;
    uint64_t need_blocks = (uint64_t)ceil((double)(p->slots * bpr) * (1 + margin));
    double need_bytes = (double)need_blocks * (double)p->stride;
    if (p->slots == 0) {
        sw__gate_add(r, "pool", SW_GATE_SKIP, "seqs is not set: no contract to hold");
        return 0;
    }
    /* The calibrated block law of this KV class (every solution consistent with the recorded
     * boots): the pool that holds SEQS x MAXLEN whatever the free terms are. */
    const struct sw_calib_kv_fit *cls = r->fit ? sw_calib_kv_class(r->fit, r->shape) : NULL;
    uint64_t c_lo = 0, c_hi = 0;
    bool c_extr = false, have_c = false;
    char needsrc[400];
    if (cls && cls->consistent && cls->n_solutions > 0 &&
        sw_calib_kv_need(cls, (int64_t)p->maxlen, (int64_t)p->slots, &c_lo, &c_hi, &c_extr, NULL) ==
            0 &&
        c_hi > 0)
        have_c = true;
    if (have_c) {
        need_bytes = (double)c_hi * (1 + margin);
        snprintf(needsrc, sizeof(needsrc),
                 "calibrated: %s..%s over the %lld block-law solutions that reproduce %d boots of "
                 "class %s%s",
                 sw__gate_gib((double)c_lo, t[0], 48), sw__gate_gib((double)c_hi, t[1], 48),
                 (long long)cls->n_solutions, cls->n_points, cls->klass,
                 c_extr ? "; EXTRAPOLATES: this max_model_len was not fitted" : "");
    } else {
        snprintf(needsrc, sizeof(needsrc),
                 "%s blocks: %s, by the law as the fleet declares the "
                 "model",
                 cnt(need_blocks, t[0], 48), p->price_how);
    }
    if (!p->pinned) {
        /* The engine sizes the pool at boot. A fork that declares its arena leaves the pool
         * (and graphs, activations) the room the arena does not take. */
        if (p->has_arena) {
            const struct sw_arena ar = p->arena;
            {
                double room = (double)ar.overhead_bytes + (double)ar.reserve_bytes -
                              (double)p->prof.adjust - (double)p->prof.graphs;
                bool ok = need_bytes <= room;
                g = sw__gate_add(
                    r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                    "%s x %s tokens ask %s of KV per rank (%s); the fork leaves %s for "
                    "the pool (overhead %s + reserve %s - graphs %s, profile %s)",
                    cnt(p->slots, a, sizeof(a)), cnt(p->maxlen, b, sizeof(b)),
                    sw__gate_gib(need_bytes, c, sizeof(c)), needsrc,
                    sw__gate_gib(room, x, sizeof(x)),
                    sw__gate_gib((double)ar.overhead_bytes, t[0], 48),
                    sw__gate_gib((double)ar.reserve_bytes, t[1], 48),
                    sw__gate_gib((double)p->prof.graphs, t[2], 48), p->prof.name);
                sw__gate_num(g, "need_bytes", need_bytes);
                sw__gate_num(g, "room_bytes", room);
                sw__gate_str(g, "source", have_c ? "calibrated" : "law");
                sw__gate_num(g, "blocks_per_request", (double)bpr);
                sw__gate_num(g, "block_bytes", (double)p->stride);
                if (!ok) {
                    double per_req = need_bytes / (double)p->slots;
                    uint64_t fit = room > 0 && per_req > 0 ? (uint64_t)(room / per_req) : 0;
                    sw__gate_fix(g,
                                 "cut seqs to %s, or max_model_len, or pin kv_cache_bytes "
                                 "below %s and accept fewer full-length requests",
                                 cnt(fit, a, sizeof(a)), sw__gate_gib(room, b, sizeof(b)));
                }
                return 0;
            }
        }
        g = sw__gate_add(r, "pool", SW_GATE_SKIP,
                         "the pool is sized by the engine at boot (no kv_cache_bytes): %s x %s "
                         "tokens need %s per rank (%s); pin kv_cache_bytes to check it here",
                         cnt(p->slots, a, sizeof(a)), cnt(p->maxlen, b, sizeof(b)),
                         sw__gate_gib(need_bytes, c, sizeof(c)), p->price_how);
        sw__gate_num(g, "need_bytes", need_bytes);
        return 0;
    }
    /* What a boot of this very shape printed beats the law: the engine's own arithmetic, where
     * the law may lack a fork's terms or the model's true dimensions. */
    const json_t *pb = NULL, *prep = NULL;
    for (size_t i = 0; i < json_array_size(r->boots); i++) {
        const json_t *bt = json_array_get(r->boots, i);
        const json_t *rep = json_object_get(bt, "report");
        const json_t *canon = json_object_get(json_object_get(bt, "shape"), "canonical");
        if (json_is_integer(json_object_get(rep, "kv_cache_tokens")) && canon &&
            sw_gate_same_shape(canon, r->shape)) {
            pb = bt;
            prep = rep;
        }
    }
    if (pb) {
        double tok = (double)json_integer_value(json_object_get(prep, "kv_cache_tokens"));
        double need_tok = (double)p->slots * (double)p->maxlen * (1 + margin);
        double conc = tok / (double)p->maxlen;
        bool pok = tok >= need_tok;
        double off = vr->kv_cache_tokens ? 100.0 * ((double)vr->kv_cache_tokens - tok) / tok : 0;
        g = sw__gate_add(
            r, "pool", pok ? SW_GATE_PASS : SW_GATE_FAIL,
            "boot #%lld of this shape printed %s tokens = %.2fx of %s-token requests; the contract "
            "%s x %s%s needs %s tokens (the law as the fleet declares the model predicts %s, "
            "%+.1f%%%s)",
            (long long)json_integer_value(json_object_get(pb, "id")), cnt((uint64_t)tok, a, 64),
            conc, cnt(p->maxlen, b, sizeof(b)), cnt(p->slots, c, sizeof(c)),
            cnt(p->maxlen, d, sizeof(d)), margin > 0 ? " + margin" : "",
            cnt((uint64_t)need_tok, x, sizeof(x)), cnt((uint64_t)vr->kv_cache_tokens, t[0], 48),
            off, fabs(off) > 0.5 ? ": calibrate it" : "");
        sw__gate_str(g, "source", "measured");
        sw__gate_num(g, "kv_cache_tokens", tok);
        sw__gate_num(g, "max_concurrency", conc);
        sw__gate_num(g, "need_tokens", need_tok);
        sw__gate_num(g, "law_kv_cache_tokens", (double)vr->kv_cache_tokens);
        sw__gate_evidence(g,
                          json_pack("{s:I,s:O}", "boot",
                                    json_integer_value(json_object_get(pb, "id")), "report", prep));
        if (!pok) {
            double per_tok = (double)vr->available_kv_bytes / tok;
            sw__gate_fix(g,
                         "raise kv_cache_bytes by about %s (%.0f B per printed token) to hold "
                         "%s x %s, or cut seqs to %s",
                         sw__gate_mib((need_tok - tok) * per_tok, a, sizeof(a)), per_tok,
                         cnt(p->slots, b, sizeof(b)), cnt(p->maxlen, c, sizeof(c)),
                         cnt((uint64_t)floor(conc), d, sizeof(d)));
        }
        return 0;
    }
    if (have_c) {
        struct sw_calib_kv_pred cp;
        uint64_t pool = vr->available_kv_bytes;
        bool ok = (double)pool >= need_bytes;
        memset(&cp, 0, sizeof(cp));
        sw_calib_kv_predict(cls, (int64_t)p->maxlen, pool, &cp, NULL);
        g = sw__gate_add(
            r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
            "kv_cache_bytes %s per rank holds %s..%s tokens = %.2f..%.2fx of "
            "%s-token requests; the contract %s x %s%s needs %s (%s)",
            sw__gate_gib((double)pool, a, sizeof(a)), cnt((uint64_t)cp.tokens.lo, b, sizeof(b)),
            cnt((uint64_t)cp.tokens.hi, c, sizeof(c)), cp.conc_lo, cp.conc_hi,
            cnt(p->maxlen, d, sizeof(d)), cnt(p->slots, x, sizeof(x)), cnt(p->maxlen, t[2], 48),
            margin > 0 ? " + margin" : "", sw__gate_gib(need_bytes, t[0], 48), needsrc);
        sw__gate_str(g, "source", "calibrated");
        sw__gate_num(g, "kv_cache_bytes", (double)pool);
        sw__gate_num(g, "kv_cache_tokens_lo", (double)cp.tokens.lo);
        sw__gate_num(g, "kv_cache_tokens_hi", (double)cp.tokens.hi);
        sw__gate_num(g, "need_bytes", need_bytes);
        sw__gate_num(g, "need_bytes_lo", (double)c_lo);
        sw__gate_num(g, "law_kv_cache_tokens", (double)vr->kv_cache_tokens);
        if (c_extr)
            sw__gate_num(g, "extrapolated", 1);
        if (!ok)
            sw__gate_fix(g,
                         "raise kv_cache_bytes to %s (+%s) to hold %s x %s whatever the "
                         "fitted terms are, or cut seqs to %s",
                         cnt((uint64_t)ceil(need_bytes), a, sizeof(a)),
                         sw__gate_mib(need_bytes - (double)pool, b, sizeof(b)),
                         cnt(p->slots, c, sizeof(c)), cnt(p->maxlen, d, sizeof(d)),
                         cnt((uint64_t)floor(cp.conc_lo), x, sizeof(x)));
        return 0;
    }
    bool ok = (uint64_t)vr->num_gpu_blocks >= need_blocks;
    g = sw__gate_add(
        r, "pool", ok ? SW_GATE_PASS : SW_GATE_FAIL,
        "kv_cache_bytes %s per rank holds %s blocks = %s tokens = %.2fx of %s-token requests "
        "(%s); the contract %s x %s%s needs %s blocks = %s",
        sw__gate_gib((double)vr->available_kv_bytes, a, sizeof(a)),
        cnt((uint64_t)vr->num_gpu_blocks, b, sizeof(b)),
        cnt((uint64_t)vr->kv_cache_tokens, c, sizeof(c)), vr->max_concurrency,
        cnt(p->maxlen, d, sizeof(d)), p->price_how, cnt(p->slots, x, sizeof(x)),
        cnt(p->maxlen, t[0], 48), margin > 0 ? " + margin" : "", cnt(need_blocks, t[1], 48),
        sw__gate_gib(need_bytes, t[2], 48));
    sw__gate_num(g, "kv_cache_bytes", (double)vr->available_kv_bytes);
    sw__gate_num(g, "num_gpu_blocks", (double)vr->num_gpu_blocks);
    sw__gate_num(g, "kv_cache_tokens", (double)vr->kv_cache_tokens);
    sw__gate_num(g, "max_concurrency", vr->max_concurrency);
    sw__gate_num(g, "blocks_per_request", (double)bpr);
    sw__gate_num(g, "block_bytes", (double)p->stride);
    sw__gate_num(g, "need_blocks", (double)need_blocks);
    sw__gate_num(g, "need_bytes", need_bytes);
    sw__gate_num(g, "price_bytes_per_token", p->kv_price);
    sw__gate_num(g, "margin", margin);
    if (!ok) {
        uint64_t fit = bpr ? (uint64_t)vr->num_gpu_blocks / bpr : 0;
        sw__gate_fix(g, "raise kv_cache_bytes to %s (+%s) to hold %s x %s, or cut seqs to %s",
                     cnt((uint64_t)need_bytes, a, sizeof(a)),
                     sw__gate_mib(need_bytes - (double)vr->available_kv_bytes, b, sizeof(b)),
                     cnt(p->slots, c, sizeof(c)), cnt(p->maxlen, d, sizeof(d)),
                     cnt(fit, x, sizeof(x)));
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * arena (fork profiles).
 */
int sw__gate_arena(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_fleet_shape *s = &r->ep->shape;
    char a[64], b[64], c[64], d[64], x[64], t[3][48];
    struct sw_arena ar, ar0, cut;
    (void)e;
    if (!p->ok || !p->has_arena)
        return 0; /* only fork profiles with an expert arena have this gate */
    int64_t L = (int64_t)p->maxlen;
    int64_t mnbt = p->mnbt;
    ar = p->arena;
    bool ok = ar.slots > 0;
    json_t *g = sw__gate_add(
        r, "arena", ok ? SW_GATE_PASS : SW_GATE_FAIL,
        "expert arena %s = %s slots of %s at max_model_len %s (reserve %.0f B/token x %s = %s, "
        "overhead %s at MNBT %s; profile %s); kv_cache_bytes does not enter it",
        sw__gate_gib((double)ar.arena_bytes, a, sizeof(a)),
        cnt((uint64_t)SW_MAX(ar.slots, 0), b, sizeof(b)),
        sw__gate_mib((double)p->prof.slot, c, sizeof(c)), cnt((uint64_t)L, d, sizeof(d)),
        p->prof.reserve_per_token, cnt((uint64_t)L, x, sizeof(x)),
        sw__gate_gib((double)ar.reserve_bytes, t[0], 48),
        sw__gate_gib((double)ar.overhead_bytes, t[1], 48), cnt((uint64_t)mnbt, t[2], 48),
        p->prof.name);
    sw__gate_num(g, "arena_bytes", (double)ar.arena_bytes);
    sw__gate_num(g, "slots", (double)ar.slots);
    sw__gate_num(g, "reserve_bytes", (double)ar.reserve_bytes);
    sw__gate_num(g, "overhead_bytes", (double)ar.overhead_bytes);
    /* What a MAXLEN cut buys, by the same law: one knob step (or 16,384 tokens). */
    const struct sw_fleet_knob *k = sw_fleet_endpoint_knob(r->ep, "max_model_len");
    int64_t step = k && k->is_range && k->step.set && k->step.u ? (int64_t)k->step.u : 16384;
    if (L > step && sw_profile_arena(&p->prof, L - step, mnbt, &cut, NULL) == 0) {
        sw__gate_num(g, "slots_per_maxlen_step", (double)(cut.slots - ar.slots));
        sw__gate_num(g, "maxlen_step", (double)step);
    }
    const struct sw_fleet_shape *b0 = r->o ? r->o->before : NULL;
    if (b0 && b0->kv_cache_bytes.set != s->kv_cache_bytes.set
            ? true
            : (b0 && b0->kv_cache_bytes.v != s->kv_cache_bytes.v)) {
        int64_t L0 = b0->max_model_len.set ? (int64_t)b0->max_model_len.v : L;
        int64_t m0 = b0->max_num_batched_tokens.set ? (int64_t)b0->max_num_batched_tokens.v : 0;
        if (sw_profile_arena(&p->prof, L0, m0, &ar0, NULL) == 0 && L0 == L && m0 == mnbt)
            sw__gate_evidence(
                g, json_pack("{s:s}", "note",
                             "the pool moved and max_model_len did not: a pool cut buys no "
                             "arena (the fork reserves max_model_len x its registry price, "
                             "not kv_cache_bytes); cut max_model_len to grow the arena"));
    }
    if (L > step && json_object_get(json_object_get(g, "numbers"), "slots_per_maxlen_step")) {
        char note[512];
        snprintf(note, sizeof(note),
                 "a pool cut that does not move max_model_len buys no arena; a max_model_len cut "
                 "of %s tokens buys %lld slots (%s)",
                 cnt((uint64_t)step, a, sizeof(a)), (long long)(cut.slots - ar.slots),
                 sw__gate_mib((double)(cut.arena_bytes - ar.arena_bytes), b, sizeof(b)));
        sw__gate_evidence(g, json_pack("{s:s}", "note", note));
    }
    if (!ok)
        sw__gate_fix(g, "cut max_model_len: each %s tokens return %s of arena",
                     cnt((uint64_t)step, a, sizeof(a)),
                     sw__gate_mib(p->prof.reserve_per_token * (double)step, b, sizeof(b)));
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * window: the client's contextWindow and the compaction request against one request window.
 */
int sw__gate_window(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_fleet_harness *h = &r->f->harness;
    char a[64], b[64], c[64], d[64], x[64];
    (void)e;
    if (!h->present) {
        sw__gate_add(r, "window", SW_GATE_SKIP, "the fleet declares no client harness");
        return 0;
    }
    if (!p->ok) {
        sw__gate_add(r, "window", SW_GATE_SKIP, "the law could not run: %s", p->why);
        return 0;
    }
    uint64_t W = p->maxlen;
    const char *what = p->engine == SW_FLEET_LLAMACPP && !p->shared
                           ? "slot window (pool / slots: these slots cannot share a cache)"
                           : "request window";
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(r->f, r->ep);
    if (cw && cw->set) {
        bool ok = cw->v <= W;
        json_t *g =
            sw__gate_add(r, "window", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                         "client contextWindow %s %s the %s of %s tokens%s",
                         cnt(cw->v, a, sizeof(a)), ok ? "fits" : "exceeds", what,
                         cnt(W, b, sizeof(b)), ok ? "" : ": a longer prompt is refused (HTTP 400)");
        sw__gate_num(g, "context_window", (double)cw->v);
        sw__gate_num(g, "window", (double)W);
        if (!ok) {
            if (p->engine == SW_FLEET_LLAMACPP && !p->shared)
                sw__gate_fix(g,
                             "set the harness contextWindow for %s to %s, or ctx_size to %s "
                             "(%s slots x %s)",
                             r->ep->name, cnt(W, a, sizeof(a)),
                             cnt(p->slots * cdiv(cw->v, 256) * 256, b, sizeof(b)),
                             cnt(p->slots, c, sizeof(c)),
                             cnt(cdiv(cw->v, 256) * 256, d, sizeof(d)));
            else
                sw__gate_fix(g,
                             "set the harness contextWindow for %s to %s, or max_model_len to "
                             "%s",
                             r->ep->name, cnt(W, a, sizeof(a)), cnt(cw->v, b, sizeof(b)));
        }
    }
    if (h->compaction_endpoint != r->ep)
        return 0;
    /* The conversations compacted here: every contextWindow the harness uses. */
    uint64_t wins[64];
    size_t nw = sw_fleet_harness_windows(h, wins, SW_ARRAY_LEN(wins));
    if (!h->compaction_ratio.set || !h->summary_budget.set) {
        sw__gate_add(r, "window", SW_GATE_SKIP,
                     "%s serves compaction, but the harness states no compaction_ratio or "
                     "summary_budget",
                     r->ep->name);
        return 0;
    }
    double ratio = h->compaction_ratio.v;
    uint64_t sum = h->summary_budget.v;
    for (size_t i = 0; i < nw; i++) {
        uint64_t at = (uint64_t)ceil((double)wins[i] * ratio - 1e-9);
        uint64_t req = at + sum;
        bool ok = req <= W;
        json_t *g = sw__gate_add(
            r, "window", ok ? SW_GATE_PASS : SW_GATE_FAIL,
            "compaction of a %s contextWindow: %s x %.2f + %s summary budget = %s tokens %s one %s "
            "of %s tokens on %s",
            cnt(wins[i], a, sizeof(a)), cnt(wins[i], b, sizeof(b)), ratio, cnt(sum, c, sizeof(c)),
            cnt(req, d, sizeof(d)), ok ? "fit" : "do not fit",
            p->engine == SW_FLEET_LLAMACPP && !p->shared ? "slot" : "request window",
            cnt(W, x, sizeof(x)), r->ep->name);
        sw__gate_str(g, "check", "compaction");
        sw__gate_num(g, "context_window", (double)wins[i]);
        sw__gate_num(g, "compaction_ratio", ratio);
        sw__gate_num(g, "summary_budget", (double)sum);
        sw__gate_num(g, "request_tokens", (double)req);
        sw__gate_num(g, "window", (double)W);
        if (!ok) {
            uint64_t maxcw = W > sum ? (uint64_t)floor((double)(W - sum) / ratio + 1e-9) : 0;
            while (maxcw && (uint64_t)ceil((double)maxcw * ratio - 1e-9) + sum > W)
                maxcw--;
            if (p->engine == SW_FLEET_LLAMACPP && !p->shared)
                sw__gate_fix(g,
                             "give %s slots of >= %s tokens (ctx_size %s for %s slots), or "
                             "keep the compacted contextWindow <= %s",
                             r->ep->name, cnt(cdiv(req, 256) * 256, a, sizeof(a)),
                             cnt(p->slots * cdiv(req, 256) * 256, b, sizeof(b)),
                             cnt(p->slots, c, sizeof(c)), cnt(maxcw, d, sizeof(d)));
            else
                sw__gate_fix(g,
                             "raise max_model_len on %s to >= %s, or keep the compacted "
                             "contextWindow <= %s",
                             r->ep->name, cnt(req, a, sizeof(a)), cnt(maxcw, b, sizeof(b)));
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * known_bad: failed shapes and rules.
 */
static const char *failure_text(const json_t *f, char *out, size_t n)
{
    const char *cls = json_string_value(json_object_get(f, "class"));
    const char *ph = json_string_value(json_object_get(f, "phase"));
    const char *msg = json_string_value(json_object_get(f, "message"));
    snprintf(out, n, "%s%s%s%s%s%s", cls ? cls : "failed", ph ? " (" : "", ph ? ph : "",
             ph ? ")" : "", msg ? ": " : "", msg ? msg : "");
    return out;
}

/* The fleet's own record of failed/rejected boots, overlaid on the fleet file's shape. */
static int fleet_boots(struct sw__gate_run *r, int *hits, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_fleet_shape *base = r->o && r->o->before ? r->o->before : &ep->shape;
    char buf[1400];
    for (size_t i = 0; i < ep->n_boots; i++) {
        const struct sw_fleet_boot *b = &ep->boots[i];
        if (!b->outcome || (strcmp(b->outcome, "failed") && strcmp(b->outcome, "rejected")))
            continue;
        struct sw_fleet_endpoint tmp = *ep;
        tmp.shape = *base;
        sw_fleet_shape_overlay(&tmp.shape, &b->shape);
        if (b->mmproj.set && !b->mmproj.v) {
            tmp.payload.mmproj.v = NULL;
            tmp.payload.mmproj.off = true;
        } else if (b->mmproj.set && b->mmproj.v && !tmp.payload.mmproj.v) {
            tmp.payload.mmproj.v = "mmproj";
        }
        json_t *raw = sw_plan_shape(&tmp), *canon = NULL;
        if (!raw)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        int rc = sw_ledger_shape_canon(raw, &canon, NULL, NULL, NULL);
        json_decref(raw);
        if (rc)
            continue;
        bool same = sw_gate_same_shape(canon, r->shape);
        json_decref(canon);
        if (!same)
            continue;
        (*hits)++;
        snprintf(buf, sizeof(buf), "%s%s%s", b->text ? b->text : (b->note ? b->note : ""),
                 b->text && b->note ? "; " : "", b->text && b->note ? b->note : "");
        json_t *g =
            sw__gate_add(r, "known_bad", SW_GATE_FAIL, "this shape %s before (%s:%d, %s%s%s): %s",
                         !strcmp(b->outcome, "failed") ? "failed" : "was rejected",
                         b->at.file ? b->at.file : "fleet", b->at.line, b->outcome,
                         b->failure ? " " : "", b->failure ? b->failure : "", buf);
        sw__gate_str(g, "source", "fleet");
        sw__gate_evidence(g, json_pack("{s:s,s:i,s:s,s:s?,s:s?,s:s?}", "file",
                                       b->at.file ? b->at.file : "", "line", b->at.line, "outcome",
                                       b->outcome, "failure", b->failure, "text", b->text, "note",
                                       b->note));
        sw__gate_fix(g, "change the shape: this exact one was already spent");
    }
    return 0;
}

int sw__gate_known_bad(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    char buf[1400], fb[1024];
    int hits = 0, rc;

    /* 1. exact shapes that failed, in the ledger */
    const json_t *shapes = json_object_get(r->known_bad, "shapes");
    for (size_t i = 0; i < json_array_size(shapes); i++) {
        const json_t *s = json_array_get(shapes, i);
        const char *h = json_string_value(json_object_get(s, "hash"));
        const json_t *canon = json_object_get(s, "canonical");
        if (json_integer_value(json_object_get(s, "failed")) <= 0)
            continue;
        if (!(h && !strcmp(h, r->hash)) && !sw_gate_same_shape(canon, r->shape))
            continue;
        const json_t *fs = json_object_get(s, "failures");
        for (size_t k = 0; k < json_array_size(fs); k++) {
            const json_t *f = json_array_get(fs, k);
            hits++;
            json_t *g = sw__gate_add(
                r, "known_bad", SW_GATE_FAIL, "this shape failed in the ledger (boot #%lld%s): %s",
                (long long)json_integer_value(json_object_get(f, "boot")),
                json_integer_value(json_object_get(s, "ok")) > 0 ? ", though it booted too" : "",
                failure_text(json_object_get(f, "failure"), fb, sizeof(fb)));
            sw__gate_str(g, "source", "ledger");
            sw__gate_str(g, "shape_hash", h);
            sw__gate_evidence(g, json_deep_copy(f));
            sw__gate_fix(g, "change the shape: this exact one was already spent on a boot");
        }
    }
    /* 2. rules in the ledger */
    const json_t *rules = json_object_get(r->known_bad, "rules");
    for (size_t i = 0; i < json_array_size(rules); i++) {
        const json_t *ru = json_array_get(rules, i);
        const char *expr = json_string_value(json_object_get(ru, "expr"));
        struct sw_ledger_rule *pr = NULL;
        if (!expr || sw_ledger_rule_parse(expr, &pr, NULL))
            continue;
        bool hit = sw_ledger_rule_eval(pr, r->shape);
        sw_ledger_rule_free(pr);
        if (!hit)
            continue;
        hits++;
        const json_t *f = json_object_get(ru, "failure");
        const char *reason = json_string_value(json_object_get(ru, "reason"));
        json_int_t boot = json_integer_value(json_object_get(ru, "boot_id"));
        if (!boot)
            boot = json_integer_value(json_object_get(ru, "boot"));
        snprintf(buf, sizeof(buf), "%s", reason ? reason : "");
        json_t *g =
            sw__gate_add(r, "known_bad", SW_GATE_FAIL, "rule `%s` (ledger rule #%lld): %s%s%s",
                         expr, (long long)json_integer_value(json_object_get(ru, "id")), buf,
                         f ? " Taught by: " : "", f ? failure_text(f, fb, sizeof(fb)) : "");
        sw__gate_str(g, "source", "ledger");
        sw__gate_str(g, "rule", expr);
        if (boot)
            sw__gate_num(g, "boot", (double)boot);
        sw__gate_evidence(g, json_deep_copy(ru));
        sw__gate_fix(g, "change the shape so that `%s` no longer holds", expr);
    }
    /* 3. rules in the fleet file */
    for (size_t i = 0; i < ep->n_known_bad; i++) {
        const struct sw_fleet_rule *ru = &ep->known_bad[i];
        if (!sw_fleet_rule_matches(ru, &ep->shape))
            continue;
        hits++;
        size_t o = 0;
        buf[0] = '\0';
        for (size_t k = 0; k < ru->n_conds && o < sizeof(buf) - 1; k++) {
            const struct sw_fleet_cond *c = &ru->conds[k];
            char v[128] = "";
            if (c->op != SW_FLEET_IN && c->v.type != SW_FLEET_V_STR)
                snprintf(v, sizeof(v), "%llu", (unsigned long long)c->v.u);
            else if (c->op != SW_FLEET_IN)
                snprintf(v, sizeof(v), "%s", c->v.s ? c->v.s : "");
            else
                snprintf(v, sizeof(v), "(%zu values)", c->n_in);
            if (c->op != SW_FLEET_IN && c->v.type == SW_FLEET_V_REAL)
                snprintf(v, sizeof(v), "%g", c->v.f);
            int w = snprintf(buf + o, sizeof(buf) - o, "%s%s %s %s", k ? " && " : "",
                             c->field->name, sw_fleet_op_name(c->op), v);
            if (w > 0)
                o += (size_t)w;
        }
        json_t *g =
            sw__gate_add(r, "known_bad", SW_GATE_FAIL, "fleet rule `%s` (%s:%d)%s%s: %s%s%s", buf,
                         ru->at.file ? ru->at.file : "fleet", ru->at.line, ru->failure ? ", " : "",
                         ru->failure ? ru->failure : "", ru->text ? ru->text : "",
                         ru->text && ru->note ? "; " : "", ru->note ? ru->note : "");
        sw__gate_str(g, "source", "fleet");
        sw__gate_str(g, "rule", buf);
        sw__gate_fix(g, "change the shape so that `%s` no longer holds", buf);
    }
    /* 4. failed or rejected boots the fleet file records */
    rc = fleet_boots(r, &hits, e);
    if (rc)
        return rc;
    if (!hits) {
        json_t *g = sw__gate_add(
            r, "known_bad", SW_GATE_PASS,
            "no failed boot of this shape and no known-bad rule matches (%zu failed shapes and "
            "%zu rules in the ledger%s, %zu rules in the fleet)",
            json_array_size(shapes), json_array_size(rules),
            r->o && r->o->ledger ? "" : ": none given", ep->n_known_bad);
        sw__gate_num(g, "ledger_failed_shapes", (double)json_array_size(shapes));
        sw__gate_num(g, "ledger_rules", (double)json_array_size(rules));
        sw__gate_num(g, "fleet_rules", (double)ep->n_known_bad);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * payload: spec-decode flags and the projector, from the files when they are here.
 */
static bool is_file(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}
static bool is_dir(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* payload-relative path -> absolute (only absolute or relative-to-an-absolute-dir paths are read
 * here: "~" means the endpoint's host, which may not be this one). */
static const char *payload_file(const struct sw_fleet_endpoint *ep, const char *f, char *out,
                                size_t n)
{
    if (!f)
        return NULL;
    if (f[0] == '/')
        snprintf(out, n, "%s", f);
    else if (ep->payload.path.v && ep->payload.path.v[0] == '/')
        snprintf(out, n, "%s/%s", ep->payload.path.v, f);
    else
        return NULL;
    return out;
}

int sw__gate_payload(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_fleet_shape *s = &ep->shape;
    char path[4096];
    struct sw_err le;
    (void)e;

    /* speculative decoding */
    if (s->spec_method.v) {
        const char *m = s->spec_method.v;
        bool mtp = !strcmp(m, "mtp") || !strcmp(m, "nextn");
        bool needs_draft = !strcmp(m, "draft") || !strcmp(m, "eagle") || !strcmp(m, "eagle3");
        json_t *g = NULL;
        sw_err_clear(&le);
        if (needs_draft) {
            const char *dp = payload_file(ep, ep->payload.draft.v, path, sizeof(path));
            if (!ep->payload.draft.v)
                g = sw__gate_add(r, "payload", SW_GATE_FAIL,
                                 "spec_decode.method %s needs a draft model and payload.draft is "
                                 "not set",
                                 m);
            else if (!dp || (!is_file(dp) && !is_dir(dp)))
                g = sw__gate_add(r, "payload", SW_GATE_SKIP,
                                 "spec_decode.method %s: the draft %s is not on this machine", m,
                                 ep->payload.draft.v);
            else
                g = sw__gate_add(r, "payload", SW_GATE_PASS,
                                 "spec_decode.method %s: the draft %s is there", m, dp);
            if (g && !ep->payload.draft.v)
                sw__gate_fix(g, "set payload.draft, or drop spec_decode");
        } else if (mtp) {
            /* payload/layout's count: declared MTP layers vs the weights that belong to them */
            const char *where = ep->engine == SW_FLEET_LLAMACPP && ep->payload.gguf.v
                                    ? payload_file(ep, ep->payload.gguf.v, path, sizeof(path))
                                    : payload_file(ep, ep->payload.path.v, path, sizeof(path));
            struct sw_payload_mtp mt;
            memset(&mt, 0, sizeof(mt));
            if (!where || (!is_file(where) && !is_dir(where))) {
                g = sw__gate_add(r, "payload", SW_GATE_SKIP,
                                 "spec_decode.method %s: the checkpoint %s is not on this "
                                 "machine; its MTP tensors cannot be counted",
                                 m, ep->payload.path.v ? ep->payload.path.v : "(no payload.path)");
            } else if (sw_payload_mtp_check(where, &mt, &le)) {
                char eb[1200];
                g = sw__gate_add(r, "payload", SW_GATE_SKIP,
                                 "spec_decode.method %s: cannot read %s: %s", m, where,
                                 sw_err_format(&le, eb, sizeof(eb)));
            } else {
                bool ok = sw_payload_ships_mtp(&mt);
                g = sw__gate_add(r, "payload", ok ? SW_GATE_PASS : SW_GATE_FAIL,
                                 "spec_decode.method %s: %s declares %lld MTP layers (%s), the "
                                 "weights hold %llu of their tensors%s",
                                 m, where, (long long)mt.declared,
                                 mt.source[0] ? mt.source : "nothing declared",
                                 (unsigned long long)mt.tensors,
                                 mt.weights_read ? "" : " (not every header was read)");
                sw__gate_num(g, "mtp_layers_declared", (double)mt.declared);
                sw__gate_num(g, "mtp_tensors", (double)mt.tensors);
                if (!ok)
                    sw__gate_fix(g, "drop spec_decode (it would draft from nothing), or point "
                                    "payload.draft at a checkpoint that ships the MTP head");
            }
        } else {
            sw__gate_add(r, "payload", SW_GATE_PASS,
                         "spec_decode.method %s needs no tensors from the checkpoint", m);
        }
    }
    /* the projector: vision is promised when one is configured */
    if (ep->payload.mmproj.v) {
        const char *mp = payload_file(ep, ep->payload.mmproj.v, path, sizeof(path));
        json_t *g;
        if (!mp || !is_file(mp)) {
            sw__gate_add(r, "payload", SW_GATE_SKIP,
                         "projector %s is not on this machine: its vision tensors cannot be "
                         "checked here",
                         ep->payload.mmproj.v);
        } else {
            struct sw_payload_layout lay;
            struct sw_payload_layout_opts lo = {.mmproj = mp, .vision = true};
            char dir[4096];
            memset(&lay, 0, sizeof(lay));
            snprintf(dir, sizeof(dir), "%s", mp);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir)
                *slash = '\0';
            sw_err_clear(&le);
            /* the model's own directory when it is here, else the projector's */
            const char *d0 =
                ep->payload.path.v && is_dir(ep->payload.path.v) ? ep->payload.path.v : dir;
            if (sw_payload_layout_check(d0, &lo, &lay, &le)) {
                char eb[1200];
                sw__gate_add(r, "payload", SW_GATE_SKIP, "projector %s: %s", mp,
                             sw_err_format(&le, eb, sizeof(eb)));
            } else {
                const char *why = NULL;
                for (size_t i = 0; i < lay.n_issues; i++)
                    if (lay.issues[i].kind == SW_PAYLOAD_ISSUE_PROJECTOR)
                        why = lay.issues[i].msg;
                bool ok = lay.has_projector && !why;
                g = sw__gate_add(r, "payload", ok ? SW_GATE_PASS : SW_GATE_FAIL, "projector %s: %s",
                                 mp,
                                 ok ? "a projector GGUF with its vision tensors"
                                    : (why ? why : "no projector found"));
                if (!ok)
                    sw__gate_fix(g, "point mmproj at the model's projector GGUF, or set "
                                    "mmproj: null for text-only");
            }
            sw_payload_layout_free(&lay);
        }
    }
    if (!s->spec_method.v && !ep->payload.mmproj.v)
        sw__gate_add(r, "payload", SW_GATE_PASS,
                     "no spec-decode flags and no projector: nothing to hold against the files");
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * patches: each engine patch applies to the pinned image's file and reproduces its sha256.
 */
int sw__gate_patches(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    for (size_t i = 0; i < ep->n_patches; i++) {
        const struct sw_fleet_patch *fp = &ep->patches[i];
        struct sw_gate_patch_result pr;
        int rc = sw_gate_patch(fp, NULL, 0, &pr, e);
        if (rc)
            return rc;
        json_t *g = sw__gate_add(r, "patches", pr.verdict, "%s", pr.line);
        sw__gate_str(g, "file", fp->file);
        if (!pr.detail[0])
            continue;
        sw__gate_str(g, "verdict_detail", pr.detail);
        sw__gate_str(g, "base_sha256", pr.base_sha256);
        if (pr.patched_sha256[0])
            sw__gate_str(g, "patched_sha256", pr.patched_sha256);
        if (pr.fix[0])
            sw__gate_fix(g, "%s", pr.fix);
    }
    return 0;
}
