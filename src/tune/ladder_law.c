/*
 * ladder's prediction (docs/ladder.md "The prediction"): where the answer should lie before a
 * boot proves it. For llama.cpp a linear need law, need(v) = a + b x v bytes against a capacity:
 * b from the engine's memory law at the grid's two ends, a's interval from the law's own
 * constant, then narrowed by every boot (recalibration). For a vLLM fork's max_model_len, calib's
 * headroom model fitted on the ledger's boots, with a prior for an engine-sized pool no boot of
 * its class showed yet.
 *
 * What it deliberately does not do: move the proven bounds (ladder_bounds.c): a prediction
 * chooses the next rung, it never proves one.
 */
#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/ladder.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/vllm.h>

#include "ladder_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static int law_bytes(const struct sw_fleet *f, struct sw_fleet_endpoint *ep, enum sw_ladder_knob k,
                     int64_t v, double *bytes, struct sw_err *e)
{
    struct sw_plan pl;
    int rc = sw__ladder_set(ep, k, v, e);
    if (rc)
        return rc;
    rc = sw_plan_endpoint(f, ep, NULL, &pl, e);
    if (!rc && pl.llamacpp) {
        double t = 0;
        for (int d = 0; d < pl.llamacpp->n_dev; d++)
            t += (double)pl.llamacpp->dev[d].total;
        *bytes = t;
    } else if (!rc) {
        rc = sw_err_set(e, SW_EUNSUPPORTED, "%s: no host-memory law for %s's %s here", ep->name,
                        sw_fleet_engine_name(ep->engine), sw_ladder_knob_name(k));
    }
    sw_plan_free(&pl);
    return rc;
}

/*
 * The prior of an engine-sized pool no boot of its class has shown yet (the night ladder's
 * class, before the night ladder): the fork sizes such a pool for the contract, seqs requests
 * of max_model_len (the seed's fp8 6 x 241,664 boot asked 10.70 GiB, the law's pool for six
 * such requests; the night ladder's pools printed 3.03x for 3 seqs), so the pool is the law's
 * contract (sw_plan_endpoint's KV of one request x seqs). It fits when the contract is within
 * what the activation fit (the KV allocation failures of the pinned-pool boots) leaves free when
 * the pool is allocated, and fails past it. *have: false when there is no such evidence (no KV
 * allocation failure fitted, or no law for the value).
 */
static enum sw_calib_hr_verdict prior_auto(struct sw__ladder *L, const struct sw_calib_fit *fit,
                                           const struct sw_calib_hr_pred *pr, double *contract,
                                           bool *have)
{
    struct sw_plan pl;
    struct sw_err e;
    *have = false;
    *contract = 0;
    if (!pr->auto_pool || fit->headroom.n_act < 1 || !fit->headroom.act.n_vert)
        return SW_CALIB_HR_UNKNOWN;
    int rc = sw_plan_endpoint(L->f, L->ep, NULL, &pl, &e);
    if (!rc && pl.vllm && pl.vllm->kv_needed_bytes > 0)
        *contract = (double)pl.vllm->kv_needed_bytes * (double)L->ep->shape.seqs.v;
    sw_plan_free(&pl);
    if (*contract <= 0 || pr->kv_free_hi <= 0)
        return SW_CALIB_HR_UNKNOWN;
    *have = true;
    if (*contract <= pr->kv_free_lo)
        return SW_CALIB_HR_FITS;
    if (*contract > pr->kv_free_hi)
        return SW_CALIB_HR_KV_FAILS;
    return SW_CALIB_HR_CAPTURE_RISK;
}

/*
 * The endpoint's headroom shape and KV dtype, read once with the knob at the grid's first value,
 * through the ledger's canonical form (the shape calib reads); the grid is then walked in the
 * typed shape, where only max_model_len moves. false when the shape cannot be read.
 */
static bool headroom_shape(struct sw__ladder *L, struct sw_headroom_shape *hs, char *kv, size_t n)
{
    struct sw_plan_headroom hr;
    struct sw_err e;
    if (sw__ladder_set(L->ep, L->o->knob, L->r->min, &e) || sw_plan_headroom_terms(L->ep, &hr, &e))
        return false;
    *hs = hr.shape;
    snprintf(kv, n, "%s", hr.kv_dtype);
    return true;
}

/* What the grid values' verdicts say so far: the largest that fits, the first that fails, the
 * point (the last whose band's middle still fits), and how many were judged (by the prior). */
struct hr_tally {
    int64_t last_fit, first_fail, point;
    int n_known, n_prior;
};

/* Grid index i's verdict (hs at its value; the endpoint set to it for the prior) into t. */
static void hr_judge(struct sw__ladder *L, const struct sw_calib_fit *fit,
                     const struct sw_headroom_shape *hs, const char *kv, int64_t i,
                     struct hr_tally *t)
{
    struct sw_calib_hr_pred pr;
    struct sw_err e;
    if (sw_calib_headroom_predict(fit, hs, kv, &pr, &e))
        return;
    enum sw_calib_hr_verdict vd = pr.verdict;
    double contract = 0;
    bool prior = false;
    if (vd == SW_CALIB_HR_UNKNOWN)
        vd = prior_auto(L, fit, &pr, &contract, &prior);
    if (vd == SW_CALIB_HR_UNKNOWN)
        return;
    t->n_known++;
    t->n_prior += prior;
    bool fails = vd == SW_CALIB_HR_KV_FAILS || vd == SW_CALIB_HR_CAPTURE_FAILS ||
                 vd == SW_CALIB_HR_RUNTIME_FAILS;
    if (vd == SW_CALIB_HR_FITS)
        t->last_fit = i;
    if (fails && t->first_fail < 0)
        t->first_fail = i;
    /* the point: the middle of the band still fits (the prior: the contract against the
     * middle of what is free when the pool is allocated) */
    bool mid_fits;
    if (prior) {
        mid_fits = contract <= (pr.kv_free_lo + pr.kv_free_hi) / 2;
    } else {
        double need = pr.need_hi_set ? (pr.need_lo + pr.need_hi) / 2 : pr.need_lo;
        mid_fits = (pr.free_lo + pr.free_hi) / 2 >= need;
    }
    if (!fails && t->first_fail < 0 && (vd == SW_CALIB_HR_FITS || mid_fits))
        t->point = i;
}

/* The prediction and its source from the tally. */
static void hr_predict(struct sw__ladder *L, const struct sw_calib_fit *fit,
                       const struct hr_tally *t)
{
    struct sw_ladder_result *r = L->r;
    r->headroom = t->n_known > 0;
    if (!r->headroom) {
        snprintf(r->law_source, sizeof(r->law_source),
                 "the headroom model (%d boots) knows no shape like these yet", fit->n_boots);
        return;
    }
    r->pred_lo = t->last_fit >= 0 ? sw__ladder_grid_val(L, t->last_fit) : r->min;
    r->pred_hi = t->first_fail >= 0 ? sw__ladder_grid_val(L, t->first_fail) : -1;
    r->pred_point = t->point >= 0 ? sw__ladder_grid_val(L, t->point) : r->pred_lo;
    if (t->n_prior)
        snprintf(r->law_source, sizeof(r->law_source),
                 "calib's headroom model on %d boot(s) of %s: %d of %lld grid values judged, "
                 "%d by the prior of an engine-sized pool no boot of its class showed (the "
                 "law's contract against the free the KV allocation failures leave)",
                 fit->n_boots, L->ep->name, t->n_known, (long long)L->n_grid, t->n_prior);
    else
        snprintf(r->law_source, sizeof(r->law_source),
                 "calib's headroom model on %d boot(s) of %s: %d of %lld grid values judged",
                 fit->n_boots, L->ep->name, t->n_known, (long long)L->n_grid);
}

/*
 * The vLLM fork's prediction: calib's headroom model fitted on the ledger's boots (every rung's
 * boot included, so this is also the recalibration) gives each grid value a verdict: fits,
 * capture (or KV, or runtime) fails, or a risk band between. The predicted answer lies from the
 * largest value that fits to the first that fails; its point is where the band's middle (the
 * free memory at capture against the need's middle) still fits. An engine-sized class no
 * boot showed yet is judged by prior_auto.
 */
static void predict_headroom(struct sw__ladder *L)
{
    struct sw_ladder_result *r = L->r;
    struct sw_calib_fit *fit = NULL;
    struct sw_calib_opts co;
    struct sw_headroom_shape hs;
    struct hr_tally t = {-1, -1, -1, 0, 0};
    char kv[64];
    struct sw_err e;
    memset(&co, 0, sizeof(co));
    co.ep = L->ep;
    r->pred_lo = r->pred_hi = r->pred_point = -1;
    r->headroom = false;
    if (!L->o->ledger || sw_calib_fit(L->o->ledger, L->ep->name, &co, &fit, &e) ||
        !fit->headroom.have || !fit->headroom.consistent) {
        snprintf(r->law_source, sizeof(r->law_source), "no headroom model fitted%s%.200s",
                 fit ? ": " : "", fit ? fit->headroom.why : "");
        sw_calib_fit_free(fit);
        return;
    }
    struct sw_fleet_u64 saved = *sw__ladder_knob_field(L->ep, L->o->knob);
    bool read = headroom_shape(L, &hs, kv, sizeof(kv));
    for (int64_t i = 0; read && i < L->n_grid; i++) {
        int64_t v = sw__ladder_grid_val(L, i);
        /* the endpoint at v too: the prior plans it */
        if (sw__ladder_set(L->ep, L->o->knob, v, &e))
            break;
        /* calib reads a window of 1..2^31 tokens (sw_calib_headroom_shape) */
        if (v > (INT64_C(1) << 31))
            continue;
        hs.max_model_len = v;
        hr_judge(L, fit, &hs, kv, i, &t);
    }
    *sw__ladder_knob_field(L->ep, L->o->knob) = saved;
    hr_predict(L, fit, &t);
    sw_calib_fit_free(fit);
}

void sw__ladder_predict(struct sw__ladder *L)
{
    struct sw_ladder_result *r = L->r;
    if (L->ep->engine == SW_FLEET_VLLM && L->ep->profile && L->o->knob == SW_LADDER_MAX_MODEL_LEN) {
        predict_headroom(L);
        return;
    }
    if (!r->law || r->law_b <= 0) {
        r->pred_lo = r->pred_hi = r->pred_point = -1;
        return;
    }
    double c = (double)r->capacity;
    double lo = (c - r->law_a_hi) / r->law_b, hi = (c - r->law_a_lo) / r->law_b;
    double mid = (c - (r->law_a_lo + r->law_a_hi) / 2) / r->law_b;
    int64_t ilo = sw__ladder_grid_floor(L, lo), ihi = sw__ladder_grid_floor(L, hi),
            imid = sw__ladder_grid_floor(L, mid);
    r->pred_lo = ilo < 0 ? -1 : sw__ladder_grid_val(L, ilo);
    /* the first value predicted to fail: one step past the last that may pass */
    r->pred_hi = ihi + 1 < L->n_grid ? sw__ladder_grid_val(L, ihi + 1) : -1;
    r->pred_point = imid < 0 ? -1 : sw__ladder_grid_val(L, imid);
}

/* What a boot taught the law. */
void sw__ladder_recalibrate(struct sw__ladder *L, int64_t v, enum sw_ladder_class cls,
                            uint64_t peak, uint64_t tried, uint64_t freeb)
{
    struct sw_ladder_result *r = L->r;
    if (!r->law)
        return;
    double c = (double)r->capacity, slack = c * 0.01;
    if (cls == SW_LADDER_PASS && peak) {
        double a = (double)peak - r->law_b * (double)v;
        if (!L->have_meas) {
            L->meas_lo = L->meas_hi = a;
            L->have_meas = true;
        } else {
            L->meas_lo = fmin(L->meas_lo, a);
            L->meas_hi = fmax(L->meas_hi, a);
        }
        r->law_a_lo = L->meas_lo - slack;
        r->law_a_hi = L->meas_hi + slack;
    } else if (sw_ladder_class_is_bad(cls)) {
        /* it needed more than the capacity at v: a > c - b v, and by the failed allocation's
         * shortfall when the engine printed one */
        double need = c - r->law_b * (double)v;
        if (tried > freeb)
            need += (double)(tried - freeb);
        if (need > r->law_a_lo)
            r->law_a_lo = need;
        if (r->law_a_hi < r->law_a_lo)
            r->law_a_hi = r->law_a_lo + slack;
    }
}

void sw__ladder_law_setup(struct sw__ladder *L)
{
    struct sw_ladder_result *r = L->r;
    const struct sw_ladder_opts *o = L->o;
    r->capacity = o->capacity ? o->capacity : o->memory_max;
    if (!r->capacity) {
        snprintf(r->law_source, sizeof(r->law_source),
                 "no capacity to predict against (no memory limit given)");
        return;
    }
    double b0 = 0, b1 = 0;
    struct sw_err le;
    sw_err_clear(&le);
    if (law_bytes(L->f, L->ep, o->knob, r->min, &b0, &le) ||
        law_bytes(L->f, L->ep, o->knob, r->max, &b1, &le)) {
        snprintf(r->law_source, sizeof(r->law_source), "%.250s", le.msg);
        return;
    }
    if (r->max == r->min || b1 <= b0) {
        snprintf(r->law_source, sizeof(r->law_source), "the law's need does not grow with %s",
                 r->knob);
        return;
    }
    r->law = true;
    r->law_b = (b1 - b0) / (double)(r->max - r->min);
    double a = b0 - r->law_b * (double)r->min;
    /* what the law leaves out (the process's own runtime, threads, allocator slack) is unknown
     * until a boot measures it: stated as an interval of the capacity */
    r->law_a_lo = a - 0.05 * (double)r->capacity;
    r->law_a_hi = a + 0.25 * (double)r->capacity;
    snprintf(r->law_source, sizeof(r->law_source),
             "%s's memory law: %.0f B per %s, %.0f B at %" PRId64
             "; the rest in [-5%%, +25%%] of %" PRIu64 " B until a boot measures it",
             sw_fleet_engine_name(L->ep->engine), r->law_b, r->knob, b0, r->min, r->capacity);
}
