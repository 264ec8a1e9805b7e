/*
 * plan/headroom: the headroom verdict of a shape, the one chain from an endpoint (or its
 * canonical ledger shape) to calib's prediction: the shape's headroom terms (max_model_len, seqs,
 * MNBT, the pinned pool, utilization, --expert-precise-memory, speculative tokens:
 * sw_calib_headroom_shape), then the fork profile's budget at graph capture against the transient
 * needs fitted from the endpoint's boots (sw_calib_headroom_predict). The gates' headroom gate,
 * the ladder's prediction and the simulator's vLLM boot read it.
 *
 * What it deliberately does not do: fit (calib does, once per ledger: the caller hands the fit
 * in), judge what a verdict means for a boot (the gate fails it, the ladder brackets it, the
 * simulator boots or dies by it), or decide that a fit without a consistent headroom model is
 * usable (the callers say it in their own words).
 */
#include <slipway/calib.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#include <string.h>

/* A canonical shape's headroom terms into out (its shape and KV dtype; the verdict left zero). */
static int terms_of_canon(const json_t *canon, struct sw_plan_headroom *out, struct sw_err *e)
{
    const char *kv = "auto";
    memset(out, 0, sizeof(*out));
    if (sw_calib_headroom_shape(canon, &out->shape, &kv))
        return sw_err_set(e, SW_EINVAL, "the shape names no max_model_len and seqs to price");
    snprintf(out->kv_dtype, sizeof(out->kv_dtype), "%s", kv);
    return 0;
}

int sw_plan_headroom(const struct sw_calib_fit *fit, const json_t *canon,
                     struct sw_plan_headroom *out, struct sw_err *e)
{
    int rc = terms_of_canon(canon, out, e);
    return rc ? rc : sw_calib_headroom_predict(fit, &out->shape, out->kv_dtype, &out->pred, e);
}

int sw_plan_headroom_terms(const struct sw_fleet_endpoint *ep, struct sw_plan_headroom *out,
                           struct sw_err *e)
{
    json_t *raw = sw_plan_shape(ep), *canon = NULL;
    int rc;
    memset(out, 0, sizeof(*out));
    if (!raw)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_ledger_shape_canon(raw, &canon, NULL, NULL, e);
    if (!rc)
        rc = terms_of_canon(canon, out, e);
    json_decref(canon);
    json_decref(raw);
    return rc;
}

int sw_plan_headroom_endpoint(const struct sw_calib_fit *fit, const struct sw_fleet_endpoint *ep,
                              struct sw_plan_headroom *out, struct sw_err *e)
{
    int rc = sw_plan_headroom_terms(ep, out, e);
    return rc ? rc : sw_calib_headroom_predict(fit, &out->shape, out->kv_dtype, &out->pred, e);
}
