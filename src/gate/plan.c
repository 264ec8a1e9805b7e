/*
 * gate/plan: the endpoint's plan (sw_plan_endpoint, the same plan as `slipway plan FLEET`) kept,
 * engine-neutral, as the gates need it: the pool (slots, tokens per request, tokens held, bytes
 * per device), the price per token of THIS geometry, and for vLLM the block arithmetic (whole
 * blocks, per-request state blocks) and the fork profile; for SGLang the token pool and the
 * mamba slots.
 *
 * What it deliberately does not do: plan (plan/ does), fit anything, or guess a figure a law does
 * not give (weights, compute on GPU builds): those come from measured boots (the band gate).
 */
#include "gate_internal.h"

#include <string.h>

static void why(struct sw__gate_plan *p, const struct sw_err *e, const char *prefix)
{
    char buf[600];
    snprintf(p->why, sizeof(p->why), "%s%s", prefix, sw_err_format(e, buf, sizeof(buf)));
    p->ok = false;
}

static int plan_llamacpp(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p,
                         struct sw_err *e)
{
    struct sw_err le;
    int rc = 0;

    sw_err_clear(&le);
    /* the same plan as `slipway plan FLEET`; a plan that cannot be made skips the gates that
     * need it, with its reason, unless memory ran out */
    if (sw_plan_endpoint(NULL, ep, NULL, &p->plan, &le)) {
        if (le.code == SW_ENOMEM) {
            *e = le;
            rc = SW_ENOMEM;
            goto out;
        }
        goto cannot;
    }
    p->lp = p->plan.llamacpp;

    const struct sw_llamacpp_report *rep = &p->lp->report;
    p->ok = true;
    p->slots = p->lp->n_slots;
    p->maxlen = p->lp->n_ctx_slot;
    p->pool_tokens = rep->n_ctx;
    p->shared = rep->kv_unified;
    p->pinned = true;
    uint64_t kvb = 0, cells_layers = 0;
    for (uint32_t i = 0; i < rep->n_kv && i < SW_LLAMACPP_MAX_KV; i++) {
        kvb += rep->kv[i].k_bytes + rep->kv[i].v_bytes;
        cells_layers += rep->kv[i].layers;
    }
    p->kv_layers = (uint32_t)cells_layers;
    p->kv_bytes = kvb;
    p->recurrent_bytes = rep->has_recurrent ? rep->recurrent.r_bytes + rep->recurrent.s_bytes : 0;
    p->kv_price = rep->n_ctx ? (double)kvb / (double)rep->n_ctx : 0;
    if (rep->n_kv)
        snprintf(p->price_how, sizeof(p->price_how), "K %s + V %s over %u attention layers",
                 sw_kv_type_name(rep->kv[0].k_type) ? sw_kv_type_name(rep->kv[0].k_type) : "?",
                 sw_kv_type_name(rep->kv[0].v_type) ? sw_kv_type_name(rep->kv[0].v_type) : "?",
                 p->kv_layers);
    for (int d = 0; d < p->lp->n_dev && p->n_dev < SW__GATE_MAX_DEV; d++) {
        const struct sw_llamacpp_device *x = &p->lp->dev[d];
        const struct sw_fleet_device *fd = NULL;
        for (size_t k = 0; k < ep->n_devices; k++)
            if (!strcmp(ep->devices[k]->name, x->name))
                fd = ep->devices[k];
        /* llama.cpp calls the host "CPU"; the fleet names its `vendor: cpu` device as it likes
         * (the law's environment took that device's memory as the host's) */
        for (size_t k = 0; !fd && !strcmp(x->name, "CPU") && k < ep->n_devices; k++)
            if (ep->devices[k]->vendor.v && !strcmp(ep->devices[k]->vendor.v, "cpu"))
                fd = ep->devices[k];
        if (!fd)
            continue; /* "CPU" when everything is offloaded to GPUs the fleet declares */
        p->dev[p->n_dev].dev = fd;
        p->dev[p->n_dev].capacity = sw_fleet_device_capacity(fd);
        p->dev[p->n_dev].kv = x->kv;
        p->dev[p->n_dev].rec = x->recurrent;
        p->dev[p->n_dev].draft_weights = x->draft_weights;
        p->dev[p->n_dev].draft_kv = x->draft_kv;
        p->dev[p->n_dev].draft_compute = x->draft_compute;
        p->dev[p->n_dev].projector = x->projector_weights + x->projector_compute;
        p->n_dev++;
    }
    goto out;
cannot:
    why(p, &le, "");
out:
    return rc;
}

static int plan_vllm(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p, struct sw_err *e)
{
    struct sw_err le;
    int rc = 0;
    sw_err_clear(&le);
    /* the same plan as `slipway plan FLEET` (a stand-in pool when the engine sizes it at boot:
     * the block arithmetic per request does not depend on it) */
    if (sw_plan_endpoint(NULL, ep, NULL, &p->plan, &le)) {
        if (le.code == SW_ENOMEM) {
            *e = le;
            rc = SW_ENOMEM;
            goto out;
        }
        goto cannot;
    }
    if (ep->profile) {
        if (sw_profile_from_fleet(ep->profile, &p->prof, &le))
            goto cannot;
        p->has_prof = true;
    }
    p->vr = p->plan.vllm;
    p->pinned = p->plan.pool_pinned;
    const struct sw_vllm_report *r = p->vr;
    p->ok = true;
    const struct sw_vllm_opts *o = p->plan.vllm_opts;
    p->slots = o->max_num_seqs > 0 ? (uint64_t)o->max_num_seqs : 0;
    p->maxlen = (uint64_t)r->max_model_len;
    p->shared = true;
    p->stride = r->page_bytes * (r->group_size > 0 ? r->group_size : 1);
    if (p->stride > 0 && r->num_gpu_blocks > 0 &&
        (int64_t)(r->available_kv_bytes / (uint64_t)p->stride) != r->num_gpu_blocks)
        p->stride = (int64_t)(r->available_kv_bytes / (uint64_t)r->num_gpu_blocks);
    p->pool_tokens = p->pinned ? (uint64_t)r->kv_cache_tokens : 0;
    p->kv_bytes = p->pinned ? r->available_kv_bytes : 0;
    p->kv_price = r->max_model_len > 0
                      ? (double)(r->blocks_per_request * p->stride) / (double)r->max_model_len
                      : 0;
    snprintf(p->price_how, sizeof(p->price_how),
             "%lld blocks per request (%d groups, block %lld tokens) x %lld B per block",
             (long long)r->blocks_per_request, r->n_groups, (long long)r->block_size,
             (long long)p->stride);
    for (size_t d = 0; d < ep->n_devices && p->n_dev < SW__GATE_MAX_DEV; d++) {
        p->dev[p->n_dev].dev = ep->devices[d];
        p->dev[p->n_dev].capacity = sw_fleet_device_capacity(ep->devices[d]);
        p->dev[p->n_dev].kv = p->kv_bytes;
        p->n_dev++;
    }
    goto out;
cannot:
    why(p, &le, "");
out:
    return rc;
}

/* SGLang: one pool of max_total_num_tokens shared by the running requests (radix pages), and a
 * mamba pool of fixed slots: the law's pools as planned for `slipway plan FLEET`. */
static int plan_sglang(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p,
                       struct sw_err *e)
{
    struct sw_err le;
    int rc = 0;
    sw_err_clear(&le);
    if (sw_plan_endpoint(NULL, ep, NULL, &p->plan, &le)) {
        if (le.code == SW_ENOMEM) {
            *e = le;
            rc = SW_ENOMEM;
            goto out;
        }
        why(p, &le, "");
        goto out;
    }
    const struct sw_sglang_report *r = p->plan.sglang;
    const struct sw_sglang_opts *o = p->plan.sglang_opts;
    p->ok = true;
    p->pinned = p->plan.pool_pinned;
    p->slots = o->max_running_requests > 0 ? (uint64_t)o->max_running_requests : 0;
    p->maxlen = o->context_length > 0 ? (uint64_t)o->context_length : 0;
    p->pool_tokens = (uint64_t)r->max_total_num_tokens;
    p->shared = true;
    /* the buffers hold (tokens + page) cells: K + V at cell_bytes a token */
    int64_t page = o->page_size > 0 ? o->page_size : 1;
    p->kv_bytes = (uint64_t)(r->max_total_num_tokens + page) * (uint64_t)r->cell_bytes;
    p->recurrent_bytes = (uint64_t)(r->max_mamba_cache_size * r->mamba_cache_per_req);
    p->kv_price = (double)r->cell_bytes;
    snprintf(p->price_how, sizeof(p->price_how), "%s KV over %lld full-attention layers",
             o->kv_cache_dtype, (long long)r->kv_layers);
    for (size_t d = 0; d < ep->n_devices && p->n_dev < SW__GATE_MAX_DEV; d++) {
        p->dev[p->n_dev].dev = ep->devices[d];
        p->dev[p->n_dev].capacity = sw_fleet_device_capacity(ep->devices[d]);
        p->dev[p->n_dev].kv = p->kv_bytes;
        p->dev[p->n_dev].rec = p->recurrent_bytes;
        p->n_dev++;
    }
out:
    return rc;
}

int sw__gate_plan(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p, struct sw_err *e)
{
    memset(p, 0, sizeof(*p));
    p->engine = ep->engine;
    switch (ep->engine) {
    case SW_FLEET_LLAMACPP:
        return plan_llamacpp(ep, p, e);
    case SW_FLEET_VLLM:
        return plan_vllm(ep, p, e);
    case SW_FLEET_SGLANG:
        return plan_sglang(ep, p, e);
    default:
        snprintf(p->why, sizeof(p->why), "no %s law wired into the gates yet",
                 sw_fleet_engine_name(ep->engine));
        return 0;
    }
}

void sw__gate_plan_free(struct sw__gate_plan *p)
{
    sw_plan_free(&p->plan);
    p->lp = NULL;
    p->vr = NULL;
}
