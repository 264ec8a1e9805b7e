/*
 * serve claim: what an endpoint holds on each of its devices while it runs: the one plan view's
 * claim (sw_plan_view_claim, what apply's fleet gate sums per device), gathered per fleet device
 * with the device's usable memory: the figures the admission law (admit.c) adds up.
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

/* The device a fleet's measured non-KV fact was measured on: the fact's, else the endpoint's
 * first (as `slipway plan` prints its budget, sw_plan_fact_budget). */
static const struct sw_fleet_device *fact_device(const struct sw_plan_view *v)
{
    if (!v->non_kv)
        return NULL;
    if (v->non_kv->device)
        return v->non_kv->device;
    return v->plan.ep && v->plan.ep->n_devices ? v->plan.ep->devices[0] : NULL;
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
    /* the one claim apply's fleet gate sums per device (sw_plan_view_claim), per view device */
    const struct sw_fleet_device *fd = fact_device(&v);
    for (int i = 0; i < v.n_dev && !rc; i++) {
        struct sw_plan_view_dev d = v.dev[i];
        if (!d.dev)
            continue;
        /* One difference: the measured non-KV fact is the main model's cost on ONE device; the
         * view marks every device with a capacity by the fact, so a model split over two GPUs
         * would count it on each. The others are priced by the law's parts (as `slipway plan`'s
         * budget reads the fact on its device only). */
        if (d.by_fact && v.engine == SW_FLEET_LLAMACPP && d.dev != fd)
            d.by_fact = false;
        char how[256];
        double b = sw_plan_view_claim(&v, &d, how, sizeof(how));
        if (b <= 0) {
            rc = sw_err_set(e, SW_EINVAL, "%s: device %s: %s: serve cannot admit by it", ep->name,
                            d.dev->name, how);
            break;
        }
        int k = 0;
        while (k < c->n && c->dev[k] != d.dev)
            k++;
        if (k == c->n) {
            if (c->n == SW_SERVE_MAX_DEV)
                break;
            c->dev[k] = d.dev;
            c->capacity[k] = dev_capacity(d.dev);
            c->n++;
        }
        c->bytes[k] += (uint64_t)llround(b);
        if (!c->how[0] || d.by_fact)
            snprintf(c->how, sizeof(c->how), "%s", how);
    }
    for (int i = 0; !rc && i < c->n; i++)
        if (!c->capacity[i])
            rc = sw_err_set(e, SW_EINVAL,
                            "%s: device %s declares no memory: serve cannot admit by it", ep->name,
                            c->dev[i]->name);
    if (!rc && !c->n)
        rc = sw_err_set(e, SW_EINVAL, "%s: its plan puts nothing on a declared device", ep->name);
    sw_plan_view_free(&v);
    return rc;
}
