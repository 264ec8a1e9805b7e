/*
 * Readings into the ledger: each reading matched to the endpoint's device (vendor + index) and
 * written as one usage row through sw_ledger_record_usage, the one writer of that table (`slipway
 * ledger add-usage` uses it too). Nothing is decided here from the figures.
 */
#include "readings_internal.h"

#include <stdio.h>
#include <string.h>

/* The index the engine sees: the declared one, else the device's position in its host. */
static uint64_t device_index(const struct sw_fleet_device *d)
{
    if (d->index.set || !d->host)
        return d->index.v;
    return (uint64_t)(d - d->host->devices);
}

const struct sw_fleet_device *sw_readings_match(const struct sw_fleet_endpoint *ep,
                                                const struct sw_reading *r)
{
    for (size_t i = 0; ep && i < ep->n_devices; i++) {
        const struct sw_fleet_device *d = ep->devices[i];
        if (d && d->vendor.v && !strcmp(d->vendor.v, r->vendor) && device_index(d) == r->index)
            return d;
    }
    return NULL;
}

int sw_readings_to_usage(const struct sw_reading *r, struct sw_ledger_usage *u, struct sw_err *e)
{
    if (!r->has_used || !r->has_total)
        return sw_err_set(e, SW_EINVAL, "%s: %s device %llu: %s not printed (%s)", r->tool,
                          r->vendor, (unsigned long long)r->index,
                          !r->has_used && !r->has_total ? "used and total"
                          : !r->has_used                ? "used"
                                                        : "total",
                          r->origin);
    if (r->total_bytes < SW__MIB)
        return sw_err_set(e, SW_EINVAL, "%s: %s device %llu: total %llu bytes is under 1 MiB (%s)",
                          r->tool, r->vendor, (unsigned long long)r->index,
                          (unsigned long long)r->total_bytes, r->origin);
    u->total_mib = r->total_bytes / SW__MIB;
    u->used_mib = r->used_bytes / SW__MIB + (r->used_bytes % SW__MIB != 0);
    if (u->used_mib > u->total_mib)
        u->used_mib = u->total_mib;
    u->has_free = r->has_free;
    u->free_mib = 0;
    if (r->has_free) {
        u->free_mib = r->free_bytes / SW__MIB;
        if (u->free_mib > u->total_mib - u->used_mib)
            u->free_mib = u->total_mib - u->used_mib;
    }
    u->source = r->tool;
    u->source_line = r->origin;
    return 0;
}

int sw_readings_record(struct sw_ledger *l, const struct sw_fleet_endpoint *ep,
                       const struct sw_readings *rs, const struct sw_readings_record_opts *o,
                       struct sw_readings_outcome *out, size_t *recorded, struct sw_err *e)
{
    static const struct sw_readings_record_opts none;
    size_t done = 0;
    int rc = 0;
    if (!o)
        o = &none;
    if (recorded)
        *recorded = 0;
    if (!l || !ep || !rs || (rs->n && !out))
        return sw_err_set(e, SW_EINVAL,
                          "readings: record needs a ledger, an endpoint and room "
                          "for the outcomes");
    /* every reading checked before the first row is written */
    for (size_t i = 0; i < rs->n; i++) {
        const struct sw_reading *r = &rs->r[i];
        struct sw_readings_outcome *x = &out[i];
        struct sw_ledger_usage u;
        struct sw_err e2;
        memset(x, 0, sizeof(*x));
        x->device = sw_readings_match(ep, r);
        if (!x->device) {
            snprintf(
                x->warning, sizeof(x->warning),
                "%s: %s device %llu (%.60s) is none of endpoint %.128s's devices: not recorded",
                r->tool, r->vendor, (unsigned long long)r->index, r->origin, ep->name);
        } else if (sw_readings_to_usage(r, &u, &e2)) {
            snprintf(x->warning, sizeof(x->warning), "%.400s: not recorded", e2.msg);
            x->device = NULL;
        }
    }
    for (size_t i = 0; i < rs->n; i++) {
        if (!out[i].device)
            continue;
        struct sw_ledger_usage u = {.endpoint = ep->name,
                                    .boot_id = o->boot_id,
                                    .device = out[i].device->name,
                                    .taken_at = o->taken_at,
                                    .note = o->note};
        rc = sw_readings_to_usage(&rs->r[i], &u, e);
        if (!rc)
            rc = sw_ledger_record_usage(l, &u, &out[i].usage_id, e);
        if (rc) {
            sw_err_prefix(e, "%s: %s device %llu", rs->r[i].tool, rs->r[i].vendor,
                          (unsigned long long)rs->r[i].index);
            break;
        }
        done++;
    }
    if (recorded)
        *recorded = done;
    return rc;
}
