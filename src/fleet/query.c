/*
 * Looking things up in a loaded fleet: by name (hosts, endpoints, profiles, devices, facts,
 * constants, knobs, frozen settings), the client's window for an endpoint, and where a value was
 * written (sw_fleet_pos). Read-only; nothing here allocates.
 */
#include "fleet_internal.h"

#include <stddef.h>
#include <string.h>

const void *sw__fleet_named(const void *first, size_t n, size_t size, const char *name)
{
    for (size_t i = 0; first && name && i < n; i++) {
        const void *x = (const char *)first + i * size;
        if (!strcmp(*(const char *const *)x, name))
            return x;
    }
    return NULL;
}

/* Each of these lists is an array of structs whose first member is the name (fleet_internal.h
 * checks). */
#define NAMED(list, n, name) sw__fleet_named(list, n, sizeof(*(list)), name)

const struct sw_fleet_host *sw_fleet_host(const struct sw_fleet *f, const char *name)
{
    return f ? NAMED(f->hosts, f->n_hosts, name) : NULL;
}

const struct sw_fleet_endpoint *sw_fleet_endpoint(const struct sw_fleet *f, const char *name)
{
    return f ? NAMED(f->endpoints, f->n_endpoints, name) : NULL;
}

const struct sw_fleet_profile *sw_fleet_profile(const struct sw_fleet *f, const char *name)
{
    return f ? NAMED(f->profiles, f->n_profiles, name) : NULL;
}

const struct sw_fleet_device *sw_fleet_device(const struct sw_fleet_host *h, const char *name)
{
    return h ? NAMED(h->devices, h->n_devices, name) : NULL;
}

const struct sw_fleet_const *sw_fleet_profile_const(const struct sw_fleet_profile *p,
                                                    const char *name)
{
    return p ? NAMED(p->consts, p->n_consts, name) : NULL;
}

const struct sw_fleet_fact *sw_fleet_endpoint_fact(const struct sw_fleet_endpoint *ep,
                                                   const char *name)
{
    return ep ? NAMED(ep->facts, ep->n_facts, name) : NULL;
}

uint64_t sw_fleet_device_capacity(const struct sw_fleet_device *d)
{
    if (!d)
        return 0;
    return d->memory_total.set ? d->memory_total.v
                               : (d->memory_usable.set ? d->memory_usable.v : 0);
}

const struct sw_fleet_fact *sw_fleet_endpoint_non_kv(const struct sw_fleet_endpoint *ep)
{
    if (ep && ep->payload.mmproj.v) /* the no-projector cost would understate it */
        return sw_fleet_endpoint_fact(ep, "non_kv_cost_with_projector");
    return sw_fleet_endpoint_fact(ep, "non_kv_cost");
}

/* Knob and frozen names are canonical; a shape alias asked for finds its canonical entry. */
static const char *canon(const char *name)
{
    const struct sw_fleet_field *f = sw_fleet_shape_field(name);
    return f ? f->name : name;
}

const struct sw_fleet_frozen *sw_fleet_endpoint_frozen(const struct sw_fleet_endpoint *ep,
                                                       const char *name)
{
    if (!ep || !name)
        return NULL;
    name = canon(name);
    for (size_t i = 0; i < ep->n_frozen; i++)
        if (!strcmp(ep->frozen[i].name, name))
            return &ep->frozen[i];
    return NULL;
}

const struct sw_fleet_knob *sw_fleet_endpoint_knob(const struct sw_fleet_endpoint *ep,
                                                   const char *name)
{
    if (!ep || !name)
        return NULL;
    name = canon(name);
    for (size_t i = 0; i < ep->n_knobs; i++)
        if (!strcmp(ep->knobs[i].name, name))
            return &ep->knobs[i];
    return NULL;
}

const struct sw_fleet_u64 *sw_fleet_client_window(const struct sw_fleet *f,
                                                  const struct sw_fleet_endpoint *ep)
{
    if (!f || !f->harness.present)
        return NULL;
    for (size_t i = 0; ep && i < f->harness.n_clients; i++)
        if (f->harness.clients[i].endpoint == ep && f->harness.clients[i].context_window.set)
            return &f->harness.clients[i].context_window;
    return f->harness.context_window.set ? &f->harness.context_window : NULL;
}

size_t sw_fleet_harness_windows(const struct sw_fleet_harness *h, uint64_t *out, size_t max)
{
    size_t n = 0;
    if (max && h->context_window.set)
        out[n++] = h->context_window.v;
    for (size_t i = 0; i < h->n_clients && n < max; i++) {
        uint64_t v = h->clients[i].context_window.v;
        bool dup = false;
        for (size_t k = 0; k < n; k++)
            dup |= out[k] == v;
        if (h->clients[i].context_window.set && !dup)
            out[n++] = v;
    }
    return n;
}

int sw_fleet_pos(const struct sw_fleet *f, const char *path, struct sw_fleet_at *out)
{
    if (!f || !f->priv || !path)
        return SW_ENOENT;
    const struct sw__fleet_priv *p = f->priv;
    /* an alias in a shape path ("...shape.parallel") is looked up under its canonical name */
    char buf[1024];
    const char *sh = strstr(path, ".shape.");
    if (sh) {
        const struct sw_fleet_field *fld = sw_fleet_shape_field(sh + 7);
        if (fld) {
            snprintf(buf, sizeof(buf), "%.*s.shape.%s", (int)(sh - path), path, fld->name);
            path = buf;
        }
    }
    size_t lo = 0, hi = p->n_pos;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(p->pos[mid].path, path) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= p->n_pos || strcmp(p->pos[lo].path, path))
        return SW_ENOENT;
    /* the latest record wins: an env-file import overrides the fleet-file default */
    while (lo + 1 < p->n_pos && !strcmp(p->pos[lo + 1].path, path))
        lo++;
    if (out)
        *out = p->pos[lo].at;
    return 0;
}
