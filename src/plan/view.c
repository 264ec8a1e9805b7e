/*
 * plan/view: the one engine-neutral view of an endpoint's plan (sw_plan_view, include/slipway/
 * plan.h), filled once from sw_plan_endpoint and read by `slipway plan`'s print, the gates and the
 * report: the pool (slots, tokens per request, tokens held, bytes per device), the price per
 * token of THIS geometry (llama.cpp's K and V types over the attention layers; vLLM's whole
 * blocks per request and the block's bytes; SGLang's cell), the fork profile and its arena, the
 * free band, and per device the law's parts, the capacity and what the fleet's non-KV fact
 * leaves free.
 *
 * What it deliberately does not do: plan (plan.c does), judge (gate), read the ledger (the gates'
 * measured and calibrated budgets, the report's readings), fit anything, or guess a figure a law
 * does not give (weights and compute on GPU builds come from measured boots).
 */
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

#include <stdio.h>
#include <string.h>

static void cannot(struct sw_plan_view *v, const struct sw_err *le)
{
    char buf[600];
    v->err = *le;
    snprintf(v->why, sizeof(v->why), "%s", sw_err_format(le, buf, sizeof(buf)));
    v->ok = false;
}

/* The plan, or why the law could not run; only SW_ENOMEM is an error. */
static int plan_of(const struct sw_fleet_endpoint *ep, struct sw_plan_view *v, struct sw_err *e)
{
    struct sw_err le;
    sw_err_clear(&le);
    if (sw_plan_endpoint(NULL, ep, NULL, &v->plan, &le) == 0)
        return 0;
    if (le.code == SW_ENOMEM) {
        if (e)
            *e = le;
        return SW_ENOMEM;
    }
    cannot(v, &le);
    return 0;
}

/* The fleet device llama.cpp's device x is: the same name, or for its "CPU" the fleet's
 * `vendor: cpu` device (the law's environment took that device's memory as the host's). */
static const struct sw_fleet_device *llamacpp_device(const struct sw_fleet_endpoint *ep,
                                                     const char *name)
{
    const struct sw_fleet_device *fd = NULL;
    for (size_t k = 0; k < ep->n_devices; k++)
        if (!strcmp(ep->devices[k]->name, name))
            fd = ep->devices[k];
    for (size_t k = 0; !fd && !strcmp(name, "CPU") && k < ep->n_devices; k++)
        if (ep->devices[k]->vendor.v && !strcmp(ep->devices[k]->vendor.v, "cpu"))
            fd = ep->devices[k];
    return fd;
}

static void view_llamacpp(const struct sw_fleet_endpoint *ep, struct sw_plan_view *v)
{
    v->lp = v->plan.llamacpp;
    const struct sw_llamacpp_report *rep = &v->lp->report;
    v->ok = true;
    v->slots = v->lp->n_slots;
    v->maxlen = v->lp->n_ctx_slot;
    v->pool_tokens = rep->n_ctx;
    v->shared = rep->kv_unified;
    v->pinned = true;
    uint64_t kvb = 0, cells_layers = 0;
    for (uint32_t i = 0; i < rep->n_kv && i < SW_LLAMACPP_MAX_KV; i++) {
        kvb += rep->kv[i].k_bytes + rep->kv[i].v_bytes;
        cells_layers += rep->kv[i].layers;
    }
    v->kv_layers = (uint32_t)cells_layers;
    v->kv_bytes = kvb;
    v->recurrent_bytes = rep->has_recurrent ? rep->recurrent.r_bytes + rep->recurrent.s_bytes : 0;
    v->kv_price = rep->n_ctx ? (double)kvb / (double)rep->n_ctx : 0;
    if (rep->n_kv)
        snprintf(v->price_how, sizeof(v->price_how), "K %s + V %s over %u attention layers",
                 sw_kv_type_name(rep->kv[0].k_type) ? sw_kv_type_name(rep->kv[0].k_type) : "?",
                 sw_kv_type_name(rep->kv[0].v_type) ? sw_kv_type_name(rep->kv[0].v_type) : "?",
                 v->kv_layers);
    for (int d = 0; d < v->lp->n_dev && v->n_dev < SW_PLAN_VIEW_MAX_DEV; d++) {
        const struct sw_llamacpp_device *x = &v->lp->dev[d];
        const struct sw_fleet_device *fd = llamacpp_device(ep, x->name);
        if (!fd)
            continue; /* "CPU" when everything is offloaded to GPUs the fleet declares */
        struct sw_plan_view_dev *vd = &v->dev[v->n_dev++];
        vd->dev = fd;
        snprintf(vd->law_name, sizeof(vd->law_name), "%s", x->name);
        vd->kv = x->kv;
        vd->rec = x->recurrent;
        vd->weights = x->weights;
        vd->compute = x->compute + x->output;
        vd->draft_weights = x->draft_weights;
        vd->draft_kv = x->draft_kv;
        vd->draft_compute = x->draft_compute;
        vd->projector = x->projector_weights + x->projector_compute;
    }
}

/* vLLM: whole blocks (a stand-in pool when the engine sizes it at boot: the block arithmetic per
 * request does not depend on it), and the fork profile. */
static int view_vllm(const struct sw_fleet_endpoint *ep, struct sw_plan_view *v)
{
    struct sw_err le;
    sw_err_clear(&le);
    if (ep->profile) {
        if (sw_profile_from_fleet(ep->profile, &v->prof, &le)) {
            cannot(v, &le);
            return 0;
        }
        v->has_prof = true;
    }
    v->vr = v->plan.vllm;
    v->pinned = v->plan.pool_pinned;
    const struct sw_vllm_report *r = v->vr;
    v->ok = true;
    const struct sw_vllm_opts *o = v->plan.vllm_opts;
    v->slots = o->max_num_seqs > 0 ? (uint64_t)o->max_num_seqs : 0;
    v->maxlen = (uint64_t)r->max_model_len;
    v->shared = true;
    v->stride = r->page_bytes * (r->group_size > 0 ? r->group_size : 1);
    if (v->stride > 0 && r->num_gpu_blocks > 0 &&
        (int64_t)(r->available_kv_bytes / (uint64_t)v->stride) != r->num_gpu_blocks)
        v->stride = (int64_t)(r->available_kv_bytes / (uint64_t)r->num_gpu_blocks);
    v->pool_tokens = v->pinned ? (uint64_t)r->kv_cache_tokens : 0;
    v->kv_bytes = v->pinned ? r->available_kv_bytes : 0;
    v->kv_price = r->max_model_len > 0
                      ? (double)(r->blocks_per_request * v->stride) / (double)r->max_model_len
                      : 0;
    snprintf(v->price_how, sizeof(v->price_how),
             "%lld blocks per request (%d groups, block %lld tokens) x %lld B per block",
             (long long)r->blocks_per_request, r->n_groups, (long long)r->block_size,
             (long long)v->stride);
    v->has_arena = v->has_prof && v->prof.has_arena &&
                   sw_profile_arena(&v->prof, (int64_t)v->maxlen, v->mnbt, &v->arena, NULL) == 0;
    for (size_t d = 0; d < ep->n_devices && v->n_dev < SW_PLAN_VIEW_MAX_DEV; d++) {
        v->dev[v->n_dev].dev = ep->devices[d];
        v->dev[v->n_dev].kv = v->kv_bytes;
        v->n_dev++;
    }
    return 0;
}

/* SGLang: one pool of max_total_num_tokens shared by the running requests (radix pages), and a
 * mamba pool of fixed slots: the law's pools as planned for `slipway plan FLEET`. */
static void view_sglang(const struct sw_fleet_endpoint *ep, struct sw_plan_view *v)
{
    const struct sw_sglang_report *r = v->plan.sglang;
    const struct sw_sglang_opts *o = v->plan.sglang_opts;
    v->ok = true;
    v->pinned = v->plan.pool_pinned;
    v->slots = o->max_running_requests > 0 ? (uint64_t)o->max_running_requests : 0;
    v->maxlen = o->context_length > 0 ? (uint64_t)o->context_length : 0;
    v->pool_tokens = (uint64_t)r->max_total_num_tokens;
    v->shared = true;
    /* the buffers hold (tokens + page) cells: K + V at cell_bytes a token */
    int64_t page = o->page_size > 0 ? o->page_size : 1;
    v->kv_bytes = (uint64_t)(r->max_total_num_tokens + page) * (uint64_t)r->cell_bytes;
    v->recurrent_bytes = (uint64_t)(r->max_mamba_cache_size * r->mamba_cache_per_req);
    v->kv_price = (double)r->cell_bytes;
    snprintf(v->price_how, sizeof(v->price_how), "%s KV over %lld full-attention layers",
             o->kv_cache_dtype, (long long)r->kv_layers);
    for (size_t d = 0; d < ep->n_devices && v->n_dev < SW_PLAN_VIEW_MAX_DEV; d++) {
        v->dev[v->n_dev].dev = ep->devices[d];
        v->dev[v->n_dev].kv = v->kv_bytes;
        v->dev[v->n_dev].rec = v->recurrent_bytes;
        v->n_dev++;
    }
}

/* Per device: the capacity, and the free memory the measured non-KV fact leaves beside the law's
 * KV, state and draft (no fact holds the draft: a fact is the main model's cost, with the
 * projector when one is set). */
static void budget_by_fact(struct sw_plan_view *v)
{
    const struct sw_fleet_fact *nk = v->non_kv;
    for (int i = 0; i < v->n_dev; i++) {
        struct sw_plan_view_dev *d = &v->dev[i];
        d->capacity = sw_fleet_device_capacity(d->dev);
        if (!nk || strcmp(nk->q.unit, "B") || d->capacity == 0)
            continue;
        d->by_fact = true;
        d->used = nk->q.value + (double)d->kv + (double)d->rec +
                  (double)(d->draft_weights + d->draft_kv + d->draft_compute);
        d->free = (double)d->capacity - d->used;
    }
}

int sw_plan_view(const struct sw_fleet_endpoint *ep, struct sw_plan_view *v, struct sw_err *e)
{
    int rc;
    memset(v, 0, sizeof(*v));
    v->engine = ep->engine;
    v->band_declared = ep->free_band.min.set;
    v->band_min = ep->free_band.min.set ? ep->free_band.min.v : SW_PLAN_BAND_MIN;
    v->band_max = ep->free_band.max.set ? ep->free_band.max.v : SW_PLAN_BAND_MAX;
    v->non_kv = sw_fleet_endpoint_non_kv(ep);
    v->mnbt =
        ep->shape.max_num_batched_tokens.set ? (int64_t)ep->shape.max_num_batched_tokens.v : 0;
    rc = plan_of(ep, v, e);
    if (rc || v->why[0])
        goto out;
    switch (ep->engine) {
    case SW_FLEET_LLAMACPP:
        view_llamacpp(ep, v);
        break;
    case SW_FLEET_VLLM:
        rc = view_vllm(ep, v);
        break;
    case SW_FLEET_SGLANG:
        view_sglang(ep, v);
        break;
    default:
        break;
    }
out:
    if (!rc && !v->ok && ep->engine != SW_FLEET_LLAMACPP && ep->engine != SW_FLEET_VLLM &&
        ep->engine != SW_FLEET_SGLANG)
        snprintf(v->why, sizeof(v->why), "no %s law wired into the gates yet",
                 sw_fleet_engine_name(ep->engine));
    budget_by_fact(v);
    return rc;
}

void sw_plan_view_free(struct sw_plan_view *v)
{
    sw_plan_free(&v->plan);
    v->lp = NULL;
    v->vr = NULL;
}

const struct sw_plan_view_dev *sw_plan_view_device(const struct sw_plan_view *v,
                                                   const struct sw_fleet_device *d)
{
    const struct sw_plan_view_dev *found = NULL;
    for (int k = 0; k < v->n_dev; k++)
        if (v->dev[k].dev == d)
            found = &v->dev[k];
    return found;
}

double sw_plan_view_claim(const struct sw_plan_view *v, const struct sw_plan_view_dev *d, char *how,
                          size_t n)
{
    char scratch[8];
    if (!how) {
        how = scratch;
        n = sizeof(scratch);
    }
    how[0] = '\0';
    if (!v->ok || !d) {
        snprintf(how, n, "no plan: %s", v->why[0] ? v->why : "the law did not run");
        return 0;
    }
    if (d->by_fact) {
        snprintf(how, n, "the measured non-KV cost with the law's KV and state");
        return d->used;
    }
    double cap = (double)(d->capacity ? d->capacity : sw_fleet_device_capacity(d->dev));
    double frac = 0;
    switch (v->engine) {
    case SW_FLEET_LLAMACPP:
        snprintf(how, n, "the law's weights, compute, KV and state%s%s",
                 d->draft_weights ? ", the draft" : "", d->projector ? ", the projector" : "");
        return (double)(d->weights + d->compute + d->kv + d->rec + d->draft_weights + d->draft_kv +
                        d->draft_compute + d->projector);
    case SW_FLEET_VLLM:
        frac = v->plan.vllm_opts && v->plan.vllm_opts->gpu_memory_utilization > 0
                   ? v->plan.vllm_opts->gpu_memory_utilization
                   : 0.9;
        snprintf(how, n, "vLLM reserves gpu_memory_utilization %.2f of the device", frac);
        break;
    case SW_FLEET_SGLANG:
        frac = v->plan.sglang ? v->plan.sglang->mem_fraction_static : 0;
        snprintf(how, n, "SGLang reserves mem_fraction_static %.3f of the device", frac);
        break;
    case SW_FLEET_ENGINE_NONE:
        break;
    }
    if (frac <= 0 || cap <= 0) {
        snprintf(how, n, "unknown: the device declares no memory_total for the engine's share");
        return 0;
    }
    return frac * cap;
}

bool sw_plan_view_in_band(const struct sw_plan_view *v, double free_bytes)
{
    return free_bytes >= (double)v->band_min && free_bytes <= (double)v->band_max;
}

bool sw_plan_llamacpp_fits(const struct sw_llamacpp_plan *lp)
{
    for (int d = 0; d < lp->n_dev; d++)
        if (lp->dev[d].memory && lp->dev[d].total > lp->dev[d].memory)
            return false;
    return true;
}

int sw_plan_fact_budget(const struct sw_plan_view *v, struct sw_plan_fact_budget *out)
{
    const struct sw_fleet_endpoint *ep = v->plan.ep;
    const struct sw_fleet_fact *nk = v->non_kv;
    memset(out, 0, sizeof(*out));
    if (!ep || !nk || strcmp(nk->q.unit, "B"))
        return SW_ENOENT;
    /* the fact's device, else the endpoint's first; the law's KV and state on it */
    const struct sw_fleet_device *fd =
        nk->device ? nk->device : (ep->n_devices ? ep->devices[0] : NULL);
    for (int i = 0; fd && i < v->n_dev; i++)
        if (!strcmp(v->dev[i].law_name, fd->name))
            out->dev = &v->dev[i];
    if (!out->dev || !out->dev->by_fact)
        return SW_ENOENT;
    const struct sw_plan_view_dev *d = out->dev;
    out->fact = nk;
    out->draft = (double)(d->draft_weights + d->draft_kv + d->draft_compute);
    out->band = v->band_declared;
    out->in_band =
        d->free >= (double)v->band_min && (!v->band_max || d->free <= (double)v->band_max);
    return 0;
}

json_t *sw_plan_fact_budget_json(const struct sw_plan_view *v, const struct sw_plan_fact_budget *b)
{
    const struct sw_plan_view_dev *d = b->dev;
    json_t *j = json_object();
    if (!j)
        return NULL;
    sw_json_set_str(j, "device", d->law_name);
    sw_json_set_str(j, "fact", b->fact->name);
    if (b->fact->source)
        sw_json_set_str(j, "source", b->fact->source);
    sw_json_set_int(j, "kv_bytes", (int64_t)d->kv);
    sw_json_set_int(j, "recurrent_bytes", (int64_t)d->rec);
    sw_json_set_int(j, "non_kv_bytes", (int64_t)b->fact->q.value);
    if (b->draft > 0)
        sw_json_set_int(j, "draft_bytes", (int64_t)b->draft);
    sw_json_set_int(j, "used_bytes", (int64_t)d->used);
    sw_json_set_int(j, "memory_bytes", (int64_t)d->capacity);
    sw_json_set_int(j, "free_bytes", (int64_t)d->free);
    if (b->band) {
        sw_json_set_int(j, "band_min_bytes", (int64_t)v->band_min);
        sw_json_set_int(j, "band_max_bytes", (int64_t)v->band_max);
        sw_json_set_bool(j, "in_band", b->in_band);
    }
    return j;
}
