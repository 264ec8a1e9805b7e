/*
 * bench/roof: the decode roofline. A decode step of one sequence reads every weight it uses once
 * and the KV of every token of its context (and its recurrent state), so the device's memory
 * bandwidth over those bytes is a ceiling no engine can pass: ceiling tok/s = bandwidth / bytes
 * per token at the depth. Bytes per token from the architecture: all weights but the token
 * embedding (a step reads one row of it; when the output head is tied to it, the whole table is
 * read by the head), routed experts at n_expert_used / n_expert (each token goes to that many);
 * KV from the plan's caches (bytes per cell, a sliding-window cache capped at its window);
 * recurrent state per sequence read once.
 *
 * What it deliberately does not do: model compute-bound steps (prefill, large batches), the
 * activations, or a batch's shared weight reads (one stream's ceiling: at concurrency C the
 * weights are read once for C tokens).
 */
#include "bench_internal.h"

#include <slipway/arch.h>
#include <slipway/memory.h>
#include <slipway/plan.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

void sw_bench_roof_init(struct sw_bench_roof *r)
{
    memset(r, 0, sizeof(*r));
}

double sw_bench_roof_bytes(const struct sw_bench_roof *r, int64_t depth)
{
    if (depth < 0)
        depth = 0;
    double swa = r->swa_window > 0 && depth > r->swa_window ? (double)r->swa_window : (double)depth;
    return r->weight_bytes + r->kv_bytes_per_token * (double)depth +
           r->kv_swa_bytes_per_token * swa + r->state_bytes;
}

double sw_bench_roof_tps(const struct sw_bench_roof *r, int64_t depth)
{
    double b = sw_bench_roof_bytes(r, depth);
    return r->known && b > 0 && r->bandwidth > 0 ? r->bandwidth / b : NAN;
}

int sw_bench_roof_weights(const struct sw_arch *a, struct sw_bench_roof *r, struct sw_err *e)
{
    const struct sw_arch_weights *w = &a->weights;
    if (!w->known || !w->total)
        return sw_err_set(e, SW_ENOENT,
                          "roofline: the weights of %s are not known (no GGUF here, no "
                          "`weights` in the declared arch)",
                          a->model_name[0] ? a->model_name : a->name);
    double active = (double)w->total;
    /* the embedding table: one row a token, unless the head reads it (tied: no output weights) */
    if (w->output > 0)
        active -= (double)w->embd;
    if (w->experts > 0 && a->moe.n_expert > 0 && a->moe.n_expert_used > 0 &&
        a->moe.n_expert_used < a->moe.n_expert)
        active -=
            (double)w->experts * (1.0 - (double)a->moe.n_expert_used / (double)a->moe.n_expert);
    r->weight_bytes = active;
    r->total_weight_bytes = (double)w->total;
    return 0;
}

int sw_bench_roof_from_plan(const struct sw_plan *p, struct sw_bench_roof *r, struct sw_err *e)
{
    sw_bench_roof_init(r);
    const struct sw_fleet_endpoint *ep = p->ep;
    if (!ep)
        return sw_err_set(e, SW_ENOENT, "roofline: no fleet endpoint");
    /* an endpoint that names no device runs on its host's only one */
    const struct sw_fleet_device *only = NULL;
    const struct sw_fleet_device *const *devs = ep->devices;
    size_t ndev = ep->n_devices;
    if (!ndev && ep->host && ep->host->n_devices == 1) {
        only = &ep->host->devices[0];
        devs = &only;
        ndev = 1;
    }
    if (!ndev)
        return sw_err_set(e, SW_ENOENT,
                          "roofline: %s names no device (fleet: endpoints.%s.devices) and its "
                          "host has %zu",
                          ep->name, ep->name, ep->host ? ep->host->n_devices : 0);
    /* llama.cpp splits a model's layers over its devices: their bandwidths add up. A vLLM or
     * SGLang rank reads its tensor-parallel share on its own device: the slowest one bounds the
     * step. */
    bool hf = p->engine != SW_FLEET_LLAMACPP;
    double bw = 0;
    for (size_t i = 0; i < ndev; i++) {
        const struct sw_fleet_device *d = devs[i];
        if (!d->bandwidth.set)
            return sw_err_set(e, SW_ENOENT,
                              "roofline: device %s of %s declares no bandwidth (fleet: "
                              "hosts.%s.devices.%s.bandwidth)",
                              d->name, ep->name, ep->host ? ep->host->name : "?", d->name);
        double b = (double)d->bandwidth.v;
        if (!hf)
            bw += b;
        else if (i == 0 || b < bw)
            bw = b;
    }
    r->bandwidth = bw;
    r->ranks = 1;
    if (hf) {
        int rc = sw__bench_roof_hf(p, r, e);
        if (rc)
            sw_bench_roof_init(r);
        return rc;
    }
    if (!p->arch || !p->llamacpp)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "roofline: %s: the plan has no llama.cpp law (an engine without one)",
                          ep->name);
    snprintf(r->weights_from, sizeof(r->weights_from), "%s",
             p->arch->source == SW_ARCH_SRC_JSON ? "declared (arch.weights)" : "GGUF");
    int rc = sw_bench_roof_weights(p->arch, r, e);
    if (rc)
        return rc;
    const struct sw_llamacpp_report *rep = &p->llamacpp->report;
    for (size_t i = 0; i < rep->n_kv && i < SW_LLAMACPP_MAX_KV; i++) {
        const struct sw_llamacpp_kv *kv = &rep->kv[i];
        if (!kv->cells)
            continue;
        double per = (double)(kv->k_bytes + kv->v_bytes) / (double)kv->cells;
        if (kv->swa) {
            r->kv_swa_bytes_per_token += per;
            r->swa_window = p->arch->n_swa;
        } else {
            r->kv_bytes_per_token += per;
        }
    }
    if (rep->has_recurrent && rep->recurrent.cells)
        r->state_bytes = (double)(rep->recurrent.r_bytes + rep->recurrent.s_bytes) /
                         (double)rep->recurrent.cells;
    r->known = true;
    return 0;
}
