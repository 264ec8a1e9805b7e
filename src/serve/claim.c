/*
 * serve claim: what an endpoint holds on each of its devices while it runs, read from the one
 * plan view (sw_plan_view): the figure the admission law (admit.c) adds up per device.
 *
 * What it does not do: plan (plan/), or decide (admit.c).
 */
#include <slipway/plan.h>
#include <slipway/serve.h>

#include <math.h>
#include <string.h>

static uint64_t dev_capacity(const struct sw_fleet_device *d)
{
    if (d->memory_usable.set && d->memory_usable.v)
        return d->memory_usable.v;
    return sw_fleet_device_capacity(d);
}

/* llama.cpp: the law's parts on each device it names (the fleet's measured non-KV fact standing
 * for weights + compute where the view priced by it). */
static void claim_llamacpp(const struct sw_plan_view *v, struct sw_serve_claim *c)
{
    bool fact = false;
    for (int i = 0; i < v->n_dev && c->n < SW_SERVE_MAX_DEV; i++) {
        const struct sw_plan_view_dev *x = &v->dev[i];
        uint64_t b;
        /* the fact is the main model's cost on its device (the fact's, else the first) */
        const struct sw_fleet_device *fd = v->non_kv && v->non_kv->device ? v->non_kv->device
                                           : v->plan.ep && v->plan.ep->n_devices
                                               ? v->plan.ep->devices[0]
                                               : NULL;
        if (x->by_fact && x->dev == fd) {
            b = (uint64_t)llround(x->used);
            fact = true;
        } else
            b = x->weights + x->kv + x->rec + x->compute + x->draft_weights + x->draft_kv +
                x->draft_compute + x->projector;
        int k = 0;
        while (k < c->n && c->dev[k] != x->dev)
            k++;
        if (k == c->n) {
            c->dev[k] = x->dev;
            c->capacity[k] = dev_capacity(x->dev);
            c->bytes[k] = 0;
            c->n++;
        }
        c->bytes[k] += b;
    }
    snprintf(c->how, sizeof(c->how), "%s",
             fact ? "the fleet's measured non-KV cost + the law's KV, state and draft"
                  : "the llama.cpp law: weights + KV + state + compute (+ draft, projector)");
}

int sw_serve_claim(const struct sw_fleet_endpoint *ep, struct sw_serve_claim *c, struct sw_err *e)
{
    memset(c, 0, sizeof(*c));
    struct sw_plan_view v;
    int rc = sw_plan_view(ep, &v, e);
    if (rc) {
        sw_plan_view_free(&v);
        return rc;
    }
    if (!v.ok) {
        rc = sw_err_set(e, SW_EINVAL, "%s: no plan to admit it by: %s", ep->name, v.why);
        sw_plan_view_free(&v);
        return rc;
    }
    if (v.plan.llamacpp)
        claim_llamacpp(&v, c);
    else {
        /* vLLM and SGLang take a fraction of the device at boot (the pool grows into it) */
        double frac = 0;
        const char *what = "";
        if (v.plan.vllm_opts) {
            frac = v.plan.vllm_opts->gpu_memory_utilization > 0
                       ? v.plan.vllm_opts->gpu_memory_utilization
                       : 0.9;
            what = "vLLM's gpu_memory_utilization";
        } else if (v.plan.sglang_opts) {
            frac = v.plan.sglang_opts->mem_fraction_static;
            what = "SGLang's mem_fraction_static";
        }
        bool fork = v.has_arena && v.prof.weights;
        for (size_t d = 0; d < ep->n_devices && c->n < SW_SERVE_MAX_DEV; d++) {
            const struct sw_fleet_device *fd = ep->devices[d];
            uint64_t cap = sw_fleet_device_capacity(fd);
            c->dev[c->n] = fd;
            c->capacity[c->n] = dev_capacity(fd);
            if (fork)
                c->bytes[c->n] = v.prof.weights + v.kv_bytes + v.prof.graphs +
                                 (uint64_t)(v.arena.arena_bytes > 0 ? v.arena.arena_bytes : 0) +
                                 v.prof.non_torch;
            else if (frac > 0)
                c->bytes[c->n] = (uint64_t)llround(frac * (double)cap);
            else
                c->bytes[c->n] = v.kv_bytes + v.recurrent_bytes;
            c->n++;
        }
        if (fork)
            snprintf(c->how, sizeof(c->how),
                     "the fork profile: weights + pool + graphs + arena + non-torch");
        else if (frac > 0)
            snprintf(c->how, sizeof(c->how), "%s %.2f x the device's memory", what, frac);
        else
            snprintf(c->how, sizeof(c->how), "the law's pools");
    }
    for (int i = 0; i < c->n; i++)
        if (!c->capacity[i]) {
            rc = sw_err_set(e, SW_EINVAL,
                            "%s: device %s declares no memory: serve cannot admit by it", ep->name,
                            c->dev[i]->name);
            break;
        }
    if (!rc && !c->n)
        rc = sw_err_set(e, SW_EINVAL, "%s: its plan puts nothing on a declared device", ep->name);
    sw_plan_view_free(&v);
    return rc;
}
