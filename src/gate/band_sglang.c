/*
 * gate/band_sglang: the band gate of an SGLang endpoint. SGLang sizes its pools from free memory
 * the fleet does not hold, so the free memory after a boot comes from calibration
 * (calib sw_calib_sglang_fit): the endpoint's measured facts (free_at_boot at the declared shape,
 * autofit_tokens: the pool the engine sized itself without the pin) and the ledger's SGLang boots
 * (their printed pools). The asked shape's pools come from memory/sglang with the calibrated rest
 * (the autofit when the shape pins no pool), and its free memory is the fitted constant minus
 * them: below 0 the boot would OOM; otherwise the band decides.
 *
 * What it does not do: read usage readings of SGLang boots (the facts carry the free memory), or
 * fit anything itself.
 */
#include "gate_internal.h"

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

int sw__gate_band_sglang(struct sw__gate_run *r, bool *handled, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    struct sw_hf_config *c = NULL;
    struct sw_calib_sglang *s = NULL;
    struct sw_calib_sglang_obs *obs = NULL;
    struct sw_sglang_opts dopt, aopt;
    struct sw_sglang_report drep;
    struct sw_calib_sglang_pred pr;
    struct sw_err le;
    int n = 0, rc = 0;
    *handled = false;
    const struct sw_fleet_fact *ff = sw_fleet_endpoint_fact(ep, "free_at_boot");
    const struct sw_fleet_fact *fa = sw_fleet_endpoint_fact(ep, "autofit_tokens");
    if (ep->n_devices != 1 || (!ff && !fa && !(r->fit && r->fit->sglang.n)))
        return 0;
    c = sw_calloc(1, sizeof(*c));
    s = sw_calloc(1, sizeof(*s));
    obs = sw_calloc(SW_CALIB_SG_MAX, sizeof(*obs));
    if (!c || !s || !obs) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    sw_err_clear(&le);
    /* the facts are of the declared shape; the asked one may differ (--set) */
    if (sw_endpoint_hf_config(ep, c, NULL, 0, &le) ||
        sw_plan_sglang_opts(ep, r->o ? r->o->before : NULL, &dopt, &le) ||
        sw_plan_sglang_opts(ep, NULL, &aopt, &le) || sw_sglang_plan(c, &dopt, &drep, &le))
        goto nolaw;
    {
        struct sw_calib_sglang_obs d = {.tokens = drep.max_total_num_tokens,
                                        .pinned = dopt.max_total_tokens > 0,
                                        .mamba_slots = drep.max_mamba_cache_size,
                                        .mem_fraction_static = dopt.mem_fraction_static};
        /* the ledger's boots when it has some, else the fleet's facts (the same figures) */
        if (!(r->fit && r->fit->sglang.n))
            sw_calib_sglang_gather(ep, &d, NULL, NULL, obs, SW_CALIB_SG_MAX, &n);
        /* the ledger's SGLang boots, with their readings, as the calibration gathered them */
        for (int k = 0; r->fit && k < r->fit->sglang.n && n < SW_CALIB_SG_MAX; k++)
            obs[n++] = r->fit->sglang.obs[k];
    }
    if (!n)
        goto out;
    rc = sw_calib_sglang_fit(c, &dopt, obs, n, NULL, s, &le);
    if (rc == SW_ENOMEM) {
        *e = le;
        goto out;
    }
    rc = 0;
    if (!s->consistent || !s->have_free) {
        json_t *g = sw__gate_add(r, "band", SW_GATE_SKIP, "%s: the SGLang calibration %s",
                                 ep->devices[0]->name,
                                 !s->consistent ? s->why : "has no free-memory reading");
        sw__gate_str(g, "device", ep->devices[0]->name);
        *handled = true;
        goto out;
    }
    if (sw_calib_sglang_predict(s, c, &aopt, &pr, &le))
        goto nolaw;
    {
        double lo = (double)r->plan.band_min, hi = (double)r->plan.band_max;
        double fm = pr.tokens_open ? pr.free_hi : pr.free_lo;
        bool in = !pr.would_oom && pr.free_lo >= lo && pr.free_hi <= hi;
        char a[64], bb[64], cc[64], t[6][64];
        const char *dev = ep->devices[0]->name;
        char pool[200];
        if (pr.autofit)
            snprintf(pool, sizeof(pool), "autofit %s tokens from a rest of %.2f GiB",
                     sw_fmt_count((uint64_t)pr.tokens_lo, t[0], 64), pr.rest_lo / (double)SW_GIB);
        else
            snprintf(pool, sizeof(pool), "pinned %s tokens",
                     sw_fmt_count((uint64_t)pr.tokens_lo, t[0], 64));
        json_t *g = sw__gate_add(
            r, "band", in ? SW_GATE_PASS : SW_GATE_FAIL,
            "%s: %s free after boot, calibrated (%s..%s; %s + %lld mamba slots, against %s free "
            "at the pinned %s %s)%s%s the %s..%s band%s%s",
            dev, sw__gate_mib(fm, a, sizeof(a)), sw__gate_mib(pr.free_lo, bb, sizeof(bb)),
            sw__gate_mib(pr.free_hi, cc, sizeof(cc)), pool, (long long)pr.mamba_slots,
            sw__gate_mib(s->f0_lo -
                             (double)(drep.max_total_num_tokens + s->page) * (double)s->cell_bytes -
                             (double)drep.max_mamba_cache_size * (double)s->mamba_per_req,
                         t[1], 64),
            sw_fmt_count((uint64_t)drep.max_total_num_tokens, t[2], 64),
            r->fit && r->fit->sglang.n ? "by the ledger's SGLang boots" : "by the fleet's facts",
            pr.would_oom ? ": the boot would OOM (it allocates more than the card holds); " : ", ",
            in ? "inside" : "outside", sw__gate_mib(lo, t[3], 64), sw__gate_mib(hi, t[4], 64),
            pr.warning[0] ? "; " : "", pr.warning);
        sw__gate_str(g, "device", dev);
        sw__gate_str(g, "source", "calibrated");
        sw__gate_num(g, "free_bytes", fm);
        sw__gate_num(g, "free_lo_bytes", pr.free_lo);
        sw__gate_num(g, "free_hi_bytes", pr.free_hi);
        sw__gate_num(g, "pool_tokens", (double)pr.tokens_lo);
        sw__gate_num(g, "pool_tokens_hi", (double)pr.tokens_hi);
        sw__gate_num(g, "mamba_slots", (double)pr.mamba_slots);
        sw__gate_num(g, "band_min", lo);
        sw__gate_num(g, "band_max", hi);
        if (pr.would_oom)
            sw__gate_num(g, "would_oom", 1);
        if (!in) {
            /* the pin that lands in the band's middle: one cell of KV per token */
            double cut = (fm - (lo + hi) / 2) / (double)s->cell_bytes;
            int64_t to = pr.tokens_lo + (int64_t)floor(cut);
            if (to > 0)
                sw__gate_fix(g,
                             "pin the pool at max_total_tokens %s (%s %s tokens) to land "
                             "near %s free",
                             sw_fmt_count((uint64_t)to, t[5], 64), cut < 0 ? "cut" : "grow",
                             sw_fmt_count((uint64_t)llabs(to - pr.tokens_lo), a, sizeof(a)),
                             sw__gate_mib((lo + hi) / 2, bb, sizeof(bb)));
        }
        *handled = true;
    }
    goto out;
nolaw:
    if (le.code == SW_ENOMEM) {
        *e = le;
        rc = SW_ENOMEM;
    }
out:
    sw_free(obs);
    sw_free(s);
    sw_free(c);
    return rc;
}
