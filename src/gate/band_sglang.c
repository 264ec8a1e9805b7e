/*
 * gate/band_sglang: the band gate of an SGLang endpoint. SGLang sizes its pools from free memory
 * the fleet does not hold, so the free memory after a boot comes from the SGLang calibration
 * (plan's pipeline sw_plan_sglang_calib, the same `slipway calibrate` runs): the endpoint's
 * measured facts (free_at_boot at the declared shape, autofit_tokens: the pool the engine sized
 * itself without the pin) or the ledger's SGLang boots (their printed pools and readings). The
 * asked shape's pools come from memory/sglang with the calibrated rest (the autofit when the
 * shape pins no pool), and its free memory is the fitted constant minus them: below 0 the boot
 * would OOM; otherwise the band decides.
 *
 * What it does not do: read usage readings of SGLang boots itself (calib gathers them), or fit
 * anything itself.
 */
#include "gate_internal.h"

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The pin that lands in the band's middle: one cell of KV per token. */
static void band_fix(json_t *g, const struct sw_calib_sglang *s,
                     const struct sw_calib_sglang_pred *pr, double fm, double lo, double hi)
{
    char a[64], b[64], t[64];
    double cut = (fm - (lo + hi) / 2) / (double)s->cell_bytes;
    int64_t to = pr->tokens_lo + (int64_t)floor(cut);
    if (to > 0)
        sw__gate_fix(g, "pin the pool at max_total_tokens %s (%s %s tokens) to land near %s free",
                     sw_fmt_count((uint64_t)to, t, sizeof(t)), cut < 0 ? "cut" : "grow",
                     sw_fmt_count((uint64_t)llabs(to - pr->tokens_lo), a, sizeof(a)),
                     sw__gate_mib((lo + hi) / 2, b, sizeof(b)));
}

/* What the prediction stands on: the free memory the calibration puts at the declared pinned
 * pool, and whose figures those are. */
static const char *basis(const struct sw_plan_sglang_calib *sc, char *out, size_t n)
{
    const struct sw_calib_sglang *s = sc->s;
    const char *by = sc->from_ledger ? "by the ledger's SGLang boots" : "by the fleet's facts";
    char f[64], t[64];
    if (!sc->declared_pinned) {
        snprintf(out, n, "%s", by);
        return out;
    }
    double at = s->f0_lo -
                (double)(sc->drep.max_total_num_tokens + s->page) * (double)s->cell_bytes -
                (double)sc->drep.max_mamba_cache_size * (double)s->mamba_per_req;
    snprintf(out, n, "against %s free at the pinned %s %s", sw__gate_mib(at, f, sizeof(f)),
             sw_fmt_count((uint64_t)sc->drep.max_total_num_tokens, t, sizeof(t)), by);
    return out;
}

/* The verdict of the asked shape's prediction against the band. */
static void band_verdict(struct sw__gate_run *r, const struct sw_plan_sglang_calib *sc,
                         const struct sw_calib_sglang_pred *pr)
{
    const char *dev = r->ep->devices[0]->name;
    double lo = (double)r->plan.band_min, hi = (double)r->plan.band_max;
    double fm = pr->tokens_open ? pr->free_hi : pr->free_lo;
    bool in = !pr->would_oom && pr->free_lo >= lo && pr->free_hi <= hi;
    char a[64], bb[64], cc[64], t[3][64], pool[200], on[400];
    if (pr->autofit)
        snprintf(pool, sizeof(pool), "autofit %s tokens from a rest of %.2f GiB",
                 sw_fmt_count((uint64_t)pr->tokens_lo, t[0], 64), pr->rest_lo / (double)SW_GIB);
    else
        snprintf(pool, sizeof(pool), "pinned %s tokens",
                 sw_fmt_count((uint64_t)pr->tokens_lo, t[0], 64));
    json_t *g = sw__gate_add(
        r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
        "%s: %s free after boot, calibrated (%s..%s; %s + %lld mamba slots, %s)%s%s the %s..%s "
        "band%s%s",
        dev, sw__gate_mib(fm, a, sizeof(a)), sw__gate_mib(pr->free_lo, bb, sizeof(bb)),
        sw__gate_mib(pr->free_hi, cc, sizeof(cc)), pool, (long long)pr->mamba_slots,
        basis(sc, on, sizeof(on)),
        pr->would_oom ? ": the boot would OOM (it allocates more than the card holds); " : ", ",
        in ? "inside" : "outside", sw__gate_mib(lo, t[1], 64), sw__gate_mib(hi, t[2], 64),
        pr->warning[0] ? "; " : "", pr->warning);
    sw__gate_str(g, "device", dev);
    sw__gate_str(g, "source", "calibrated");
    sw__gate_num(g, "free_bytes", fm);
    sw__gate_num(g, "free_lo_bytes", pr->free_lo);
    sw__gate_num(g, "free_hi_bytes", pr->free_hi);
    sw__gate_num(g, "pool_tokens", (double)pr->tokens_lo);
    sw__gate_num(g, "pool_tokens_hi", (double)pr->tokens_hi);
    sw__gate_num(g, "mamba_slots", (double)pr->mamba_slots);
    sw__gate_num(g, "band_min", lo);
    sw__gate_num(g, "band_max", hi);
    if (pr->would_oom)
        sw__gate_num(g, "would_oom", 1);
    if (!in)
        band_fix(g, sc->s, pr, fm, lo, hi);
}

int sw__gate_band_sglang(struct sw__gate_run *r, bool *handled, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    struct sw_plan_sglang_calib sc;
    struct sw_sglang_opts aopt;
    struct sw_calib_sglang_pred pr;
    struct sw_err le;
    int rc = 0;
    *handled = false;
    memset(&sc, 0, sizeof(sc));
    const struct sw_fleet_fact *ff = sw_fleet_endpoint_fact(ep, "free_at_boot");
    const struct sw_fleet_fact *fa = sw_fleet_endpoint_fact(ep, "autofit_tokens");
    if (ep->n_devices != 1 || (!ff && !fa && !(r->fit && r->fit->sglang.n)))
        return 0;
    sw_err_clear(&le);
    struct sw_plan_sglang_calib_opts o = {.declared = r->o ? r->o->before : NULL, .fit = r->fit};
    int frc = sw_plan_sglang_calib(ep, &o, &sc, &le);
    if (frc == SW_ENOMEM || !sc.law_ok || !sc.n_obs)
        goto nolaw; /* no model or no observation: the generic band judges */
    if (sw_plan_sglang_opts(ep, NULL, &aopt, &le))
        goto nolaw;
    *handled = true;
    if (frc || !sc.s->consistent || !sc.s->have_free) {
        char eb[600];
        const char *why = frc                 ? sw_err_format(&le, eb, sizeof(eb))
                          : !sc.s->consistent ? sc.s->why
                                              : "has no free-memory reading";
        json_t *g = sw__gate_add(r, "band", SW_GATE_SKIP, "%s: the SGLang calibration %s%s",
                                 ep->devices[0]->name, frc ? "failed: " : "", why);
        sw__gate_str(g, "device", ep->devices[0]->name);
        goto out;
    }
    sw_err_clear(&le);
    if (sw_calib_sglang_predict(sc.s, sc.c, &aopt, &pr, &le)) {
        *handled = false;
        goto nolaw;
    }
    band_verdict(r, &sc, &pr);
    goto out;
nolaw:
    if (le.code == SW_ENOMEM) {
        *e = le;
        rc = SW_ENOMEM;
    }
out:
    sw_plan_sglang_calib_free(&sc);
    return rc;
}
