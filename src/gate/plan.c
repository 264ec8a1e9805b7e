/*
 * gate/plan: run the endpoint's engine law once and keep, engine-neutral, what the gates need: the
 * pool (slots, tokens per request, tokens held, bytes per device), the price per token of THIS
 * geometry, and for vLLM the block arithmetic (whole blocks, per-request state blocks) and the fork
 * profile.
 *
 * llama.cpp: the engine adapter renders the endpoint's argv and the law reads it back (as `slipway
 * plan FLEET` does); the architecture comes from the GGUF when it is on this machine, else from the
 * endpoint's `arch` (llama.cpp keys, or a config.json-like object through model/arch_hf).
 * vLLM: memory/vllm with sw_vllm_opts_from_endpoint (shape, fork profile KV terms) and the
 * checkpoint's config.json when it is here, else the endpoint's `arch`.
 *
 * What it deliberately does not do: fit anything, or guess a figure a law does not give (weights,
 * compute on GPU builds): those come from measured boots (the band gate).
 */
#include "gate_internal.h"

#include <slipway/arch.h>
#include <slipway/engine.h>
#include <slipway/gguf.h>
#include <slipway/hf.h>

#include <string.h>
#include <unistd.h>

static void why(struct sw__gate_plan *p, const struct sw_err *e, const char *prefix)
{
    char buf[600];
    snprintf(p->why, sizeof(p->why), "%s%s", prefix, sw_err_format(e, buf, sizeof(buf)));
    p->ok = false;
}

static uint64_t dev_capacity(const struct sw_fleet_device *d)
{
    if (!d)
        return 0;
    return d->memory_total.set ? d->memory_total.v
                               : (d->memory_usable.set ? d->memory_usable.v : 0);
}

static int plan_llamacpp(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p,
                         struct sw_err *e)
{
    struct sw_engine_launch l;
    struct sw_engine_cmd cmd = {0};
    struct sw_llamacpp_env env;
    struct sw_llamacpp_args *args = sw_calloc(1, sizeof(*args));
    struct sw_hf_config *hc = NULL;
    struct sw_gguf *g = NULL;
    struct sw_arch *a = NULL;
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    struct sw_err le;
    int rc = 0;

    memset(&l, 0, sizeof(l));
    memset(&env, 0, sizeof(env));
    sw_err_clear(&le);
    p->lp = sw_calloc(1, sizeof(*p->lp));
    if (!p->lp || !args) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (!eng) {
        sw_err_set(&le, SW_EUNSUPPORTED, "no llama.cpp engine adapter");
        goto cannot;
    }
    if (sw_engine_launch_from_fleet(ep, &l, &le) || eng->render(&l, &cmd, &le))
        goto cannot;
    sw_llamacpp_args_init(args);
    if (sw_llamacpp_args_parse(args, (int)cmd.argc, (const char *const *)cmd.argv, &le))
        goto cannot;
    if (access(args->model, R_OK) == 0) {
        if (sw_gguf_open(args->model, &g, &le) || sw_arch_from_gguf(g, &a, &le))
            goto cannot;
    } else if (ep->arch && json_object_get(ep->arch, "arch")) {
        if (sw_arch_from_json(ep->arch, ep->arch_at.file ? ep->arch_at.file : "arch", &a, &le))
            goto cannot;
    } else if (ep->arch) {
        hc = sw_calloc(1, sizeof(*hc));
        if (!hc) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        if (sw_endpoint_hf_config(ep, hc, NULL, 0, &le) || sw_arch_from_hf(hc, &a, &le))
            goto cannot;
    } else {
        sw_err_set(&le, SW_ENOENT, "%s is not on this machine and the endpoint declares no `arch`",
                   args->model);
        goto cannot;
    }
    for (size_t d = 0; d < ep->n_devices && env.n_gpu < SW_LLAMACPP_MAX_DEV - 1; d++) {
        const struct sw_fleet_device *dev = ep->devices[d];
        if (dev->vendor.v && !strcmp(dev->vendor.v, "cpu"))
            continue;
        snprintf(env.gpu_name[env.n_gpu], sizeof(env.gpu_name[0]), "%s", dev->name);
        env.gpu_memory[env.n_gpu] = dev_capacity(dev);
        env.n_gpu++;
    }
    if (sw_llamacpp_plan(a, args, &env, p->lp, &le))
        goto cannot;

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
        if (!fd)
            continue; /* "CPU" when everything is offloaded */
        p->dev[p->n_dev].dev = fd;
        p->dev[p->n_dev].capacity = dev_capacity(fd);
        p->dev[p->n_dev].kv = x->kv;
        p->dev[p->n_dev].rec = x->recurrent;
        p->n_dev++;
    }
    goto out;
cannot:
    why(p, &le, "");
out:
    sw_free(args);
    sw_free(hc);
    sw_arch_free(a);
    sw_gguf_free(g);
    sw_engine_cmd_free(&cmd);
    sw_engine_launch_free(&l);
    return rc;
}

static int plan_vllm(const struct sw_fleet_endpoint *ep, struct sw__gate_plan *p, struct sw_err *e)
{
    struct sw_vllm_opts o;
    struct sw_hf_config *hc = sw_calloc(1, sizeof(*hc));
    struct sw_err le;
    int rc = 0;
    sw_err_clear(&le);
    p->vr = sw_calloc(1, sizeof(*p->vr));
    if (!hc || !p->vr) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (sw_vllm_opts_from_endpoint(ep, &o, &le) || sw_endpoint_hf_config(ep, hc, NULL, 0, &le))
        goto cannot;
    if (ep->profile) {
        if (sw_profile_from_fleet(ep->profile, &p->prof, &le))
            goto cannot;
        p->has_prof = true;
    }
    p->pinned = o.kv_cache_memory_bytes > 0;
    if (!p->pinned) {
        /* The engine sizes the pool at boot from what its profiling run leaves; the block
         * arithmetic per request does not depend on it, so plan it against a stand-in pool. */
        o.kv_cache_memory_bytes = 1ull << 30;
    }
    if (sw_vllm_plan(hc, &o, p->vr, &le))
        goto cannot;
    const struct sw_vllm_report *r = p->vr;
    p->ok = true;
    p->slots = o.max_num_seqs > 0 ? (uint64_t)o.max_num_seqs : 0;
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
        p->dev[p->n_dev].capacity = dev_capacity(ep->devices[d]);
        p->dev[p->n_dev].kv = p->kv_bytes;
        p->n_dev++;
    }
    goto out;
cannot:
    why(p, &le, "");
out:
    sw_free(hc);
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
    default:
        snprintf(p->why, sizeof(p->why), "no %s law wired into the gates yet",
                 sw_fleet_engine_name(ep->engine));
        return 0;
    }
}

void sw__gate_plan_free(struct sw__gate_plan *p)
{
    sw_free(p->lp);
    sw_free(p->vr);
    p->lp = NULL;
    p->vr = NULL;
}
