/*
 * sim headroom: how a vLLM fleet endpoint's boot ends in the sim when a model says it does not
 * serve: a declared compile constraint (the fleet's known_bad with failure compile_constraint
 * whose `when` holds), else the headroom model fitted on the endpoint's recorded boots
 * (calib sw_calib_headroom_predict, the model the `headroom` gate reads): the pool's allocation
 * or the CUDA-graph capture runs out of memory, or the first long step does at runtime.
 *
 * What it does not do: print the engine's lines (sim_boot.c), or fit the model (calib/).
 */
#include "sim_internal.h"

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#include <math.h>
#include <string.h>

/* The capture transient's "Tried to allocate" when no capture death printed one. */
#define CAPTURE_TRIED_DEFAULT (64ull << 20)
/* vLLM captures CUDA graphs for batches up to 512 tokens by default: a longer step runs eager and
 * allocates, which is what dies first when nothing is free after the boot. */
#define RUNTIME_EAGER_TOKENS 512

/* The declared compile constraint whose condition the shape meets, if any. */
static bool compile_constraint(const struct sw_fleet_endpoint *ep, struct sw_sim_vllm_boot *boot)
{
    for (size_t i = 0; i < ep->n_known_bad; i++) {
        const struct sw_fleet_rule *r = &ep->known_bad[i];
        if (r->failure && !strcmp(r->failure, "compile_constraint") &&
            sw_fleet_rule_matches(r, &ep->shape)) {
            boot->fault = SW_SIM_VLLM_COMPILE;
            boot->text = r->text;
            return true;
        }
    }
    return false;
}

/* The model's verdict as the boot's end: the interval's middle decides a capture risk (the gate
 * refuses such a shape; the engine does one thing). */
static void verdict(const struct sw_calib_headroom *h, const struct sw_calib_hr_pred *pr,
                    const struct sw_headroom_shape *hs, const char *kv, struct sw_sim_config *c,
                    struct sw_sim_vllm_boot *boot)
{
    enum sw_calib_hr_verdict v = pr->verdict;
    if (v == SW_CALIB_HR_CAPTURE_RISK) {
        double need = pr->need_hi_set && isfinite(pr->need_lo) ? (pr->need_lo + pr->need_hi) / 2
                                                               : pr->need_lo;
        v = (pr->free_lo + pr->free_hi) / 2 < need ? SW_CALIB_HR_CAPTURE_FAILS : SW_CALIB_HR_FITS;
    }
    switch (v) {
    case SW_CALIB_HR_KV_FAILS:
        boot->fault = SW_SIM_VLLM_KV_OOM;
        boot->tried_bytes = (uint64_t)pr->kv_ask;
        boot->free_bytes = (uint64_t)((pr->kv_free_lo + pr->kv_free_hi) / 2);
        break;
    case SW_CALIB_HR_CAPTURE_FAILS: {
        boot->fault = SW_SIM_VLLM_CAPTURE_OOM;
        uint64_t t = h->capture_tried_bytes;
        for (int i = 0; pr->auto_pool && i < h->n_pools; i++)
            if (h->pools[i].tried_bytes && !strcmp(h->pools[i].kv_dtype, kv) &&
                h->pools[i].seqs == hs->seqs)
                t = h->pools[i].tried_bytes;
        boot->tried_bytes = t ? t : CAPTURE_TRIED_DEFAULT;
        boot->free_bytes = 0;
        break;
    }
    case SW_CALIB_HR_RUNTIME_FAILS:
        if (!c->runtime_oom_tokens)
            c->runtime_oom_tokens = RUNTIME_EAGER_TOKENS;
        if (!c->device_memory)
            c->device_memory = h->prof.usable;
        break;
    default:
        break;
    }
}

int sw__sim_vllm_boot(struct sw_fleet_endpoint *ep, const char *ledger_path,
                      struct sw_sim_config *c, struct sw_sim_vllm_boot *boot, struct sw_err *e)
{
    struct sw_ledger led;
    struct sw_calib_fit *fit = NULL;
    int rc = 0;
    memset(boot, 0, sizeof(*boot));
    memset(&led, 0, sizeof(led));
    if (compile_constraint(ep, boot) || !ledger_path || !ep->profile)
        return 0;
    struct sw_ledger_open_opts oo = {.readonly = true};
    rc = sw_ledger_open(&led, ledger_path, &oo, e);
    if (rc)
        return rc;
    struct sw_calib_opts co = {.ep = ep};
    rc = sw_calib_fit(&led, ep->name, &co, &fit, e);
    if (rc)
        goto out;
    if (!fit->headroom.have || !fit->headroom.consistent)
        goto out;
    /* plan/headroom's chain: the shape as the ledger keys it (which the model's pools are read
     * by), its terms, the verdict; a shape without max_model_len and seqs has none */
    struct sw_plan_headroom hr;
    rc = sw_plan_headroom_terms(ep, &hr, e);
    if (rc == SW_EINVAL) {
        rc = 0;
        goto out;
    }
    if (!rc)
        rc = sw_calib_headroom_predict(fit, &hr.shape, hr.kv_dtype, &hr.pred, e);
    if (rc)
        goto out;
    boot->total_bytes = fit->headroom.prof.usable;
    verdict(&fit->headroom, &hr.pred, &hr.shape, hr.kv_dtype, c, boot);
    /* an engine-sized pool the model predicts: pinned so the law prints its tokens */
    if (hr.pred.auto_pool && hr.pred.verdict != SW_CALIB_HR_UNKNOWN && hr.pred.pool_point > 0) {
        ep->shape.kv_cache_bytes.set = true;
        ep->shape.kv_cache_bytes.v = (uint64_t)hr.pred.pool_point;
    }
out:
    sw_calib_fit_free(fit);
    sw_ledger_close(&led);
    return rc;
}
