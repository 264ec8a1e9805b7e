/*
 * gate/headroom: does the shape leave the engine the memory it allocates transiently, by the fork
 * profile's budget (memory/profile sw_profile_headroom) and the transient needs fitted from the
 * endpoint's recorded boots (the verdict: plan/headroom sw_plan_headroom, over calib
 * sw_calib_headroom_predict)? Fails on a pool that does not fit
 * what is free when it is allocated, on a budget overdrawn at capture (the arena takes what is left
 * and the first long request dies), and on free memory at capture below the top of the fitted
 * need (not known to fit: a boot costs minutes, the gate does not gamble on the interval).
 *
 * What it does not do: judge endpoints without a fork profile with an arena (the band and pool
 * gates do), or fit anything (calib).
 */
#include "gate_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *gb(double b, char *out, size_t n)
{
    snprintf(out, n, "%.2f GiB", b / (double)SW_GIB);
    return out;
}

int sw__gate_headroom(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    char a[48], b[48], c[48];
    if (!p->ok || !p->has_prof || !p->prof.has_arena)
        return 0; /* only fork profiles with an expert arena have this gate */
    if (!r->fit || !r->fit->headroom.have) {
        sw__gate_add(r, "headroom", SW_GATE_SKIP, "no headroom model: %s",
                     r->fit_why[0] ? r->fit_why : "no ledger given (--ledger)");
        return 0;
    }
    const struct sw_calib_headroom *h = &r->fit->headroom;
    if (!h->consistent) {
        sw__gate_add(r, "headroom", SW_GATE_SKIP,
                     "the recorded boots contradict the headroom model: %s", h->why);
        return 0;
    }
    /* the chain from the shape to the verdict: plan/headroom (a shape without max_model_len and
     * seqs is one of its reasons to skip) */
    struct sw_plan_headroom hr;
    struct sw_err pe;
    sw_err_clear(&pe);
    if (sw_plan_headroom(r->fit, r->shape, &hr, &pe)) {
        if (pe.code == SW_ENOMEM)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        char buf[512];
        sw__gate_add(r, "headroom", SW_GATE_SKIP, "%s", sw_err_format(&pe, buf, sizeof(buf)));
        return 0;
    }
    const struct sw_headroom_shape s = hr.shape;
    const struct sw_calib_hr_pred pr = hr.pred;
    json_t *g;
    if (pr.verdict == SW_CALIB_HR_UNKNOWN) {
        /* an engine-sized pool no boot of this class showed: the contract (seqs requests of
         * max_model_len, by the law) against what is free when the pool is allocated */
        double contract = p->vr ? (double)p->vr->kv_needed_bytes * (double)s.seqs : 0;
        if (contract > 0 && pr.kv_free_hi > 0 && contract > pr.kv_free_hi) {
            g = sw__gate_add(
                r, "headroom", SW_GATE_FAIL,
                "%lld x %lld needs %s of KV against %s free when the pool is allocated (usable - "
                "weights - non-torch - arena %s - activations at %lld seqs)",
                (long long)s.seqs, (long long)s.max_model_len, gb(contract, a, sizeof(a)),
                gb(pr.kv_free_hi, b, sizeof(b)),
                gb((double)pr.budget.arena.arena_bytes, c, sizeof(c)), (long long)s.seqs);
            sw__gate_num(g, "kv_ask_bytes", contract);
            sw__gate_num(g, "kv_free_bytes", pr.kv_free_hi);
            sw__gate_fix(g, "cut seqs or max_model_len until %s x max_model_len fits %s", "seqs",
                         gb(pr.kv_free_lo, a, sizeof(a)));
        } else {
            sw__gate_add(r, "headroom", SW_GATE_SKIP, "%s", pr.why);
        }
        return 0;
    }
    bool pass = pr.verdict == SW_CALIB_HR_FITS;
    g = sw__gate_add(r, "headroom", pass ? SW_GATE_PASS : SW_GATE_FAIL, "%s: %s",
                     sw_calib_hr_verdict_name(pr.verdict), pr.why);
    sw__gate_str(g, "verdict", sw_calib_hr_verdict_name(pr.verdict));
    sw__gate_num(g, "free_at_capture_bytes", round(pr.free_lo));
    sw__gate_num(g, "free_at_capture_hi_bytes", round(pr.free_hi));
    sw__gate_num(g, "need_lo_bytes", isfinite(pr.need_lo) ? round(pr.need_lo) : 0);
    if (pr.need_hi_set)
        sw__gate_num(g, "need_hi_bytes", round(pr.need_hi));
    sw__gate_num(g, "pool_bytes", round(pr.pool_point));
    sw__gate_num(g, "arena_bytes", (double)pr.budget.arena.arena_bytes);
    sw__gate_num(g, "kv_free_bytes", round(pr.kv_free_hi));
    sw__gate_num(g, "kv_free_lo_bytes", round(pr.kv_free_lo));
    if (pr.extrapolated)
        sw__gate_num(g, "extrapolated", 1);
    switch (pr.verdict) {
    case SW_CALIB_HR_KV_FAILS:
        sw__gate_fix(g,
                     "cut kv_cache_bytes to %s or less (or seqs: the activations grow with them)",
                     gb(pr.kv_free_lo, a, sizeof(a)));
        break;
    case SW_CALIB_HR_RUNTIME_FAILS:
    case SW_CALIB_HR_CAPTURE_FAILS:
    case SW_CALIB_HR_CAPTURE_RISK: {
        double need = pr.need_hi_set ? pr.need_hi : pr.need_lo;
        double gap = need - pr.free_lo;
        if (!pr.auto_pool)
            sw__gate_fix(g,
                         "free %s more at capture: cut kv_cache_bytes by that much%s, or cut "
                         "max_model_len (it gives back arena reserve)",
                         gb(gap, a, sizeof(a)),
                         s.precise ? ", or drop --expert-precise-memory (the default overhead "
                                     "keeps the capture headroom)"
                                   : "");
        else
            sw__gate_fix(g, "cut max_model_len: the engine-sized pool grows with it faster than "
                            "the arena gives back");
        break;
    }
    default:
        break;
    }
    return 0;
}
