/*
 * serve admit: the admission law. May an endpoint start beside what runs on its devices, and if
 * not, which idle endpoints go first (policy lru or priority), or must it wait, or can it never
 * fit? Every verdict is one line with its figures (bytes per device), for the log.
 *
 * What it does not do: start or stop anything (serve.c), or price a claim (claim.c); a stop-start
 * deploy's reservation (the larger of two claims, per device) is merged here, not decided.
 */
#include "serve_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *sw_serve_state_name(enum sw_serve_state s)
{
    switch (s) {
    case SW_SERVE_STOPPED:
        return "stopped";
    case SW_SERVE_STARTING:
        return "starting";
    case SW_SERVE_RUNNING:
        return "running";
    case SW_SERVE_STOPPING:
        return "stopping";
    }
    return "?";
}

/* One device? A deploy through serve reloads the fleet (bluegreen.c): an endpoint's new claim
 * names the reloaded fleet's devices, the others' the first load's; a device is its host's name
 * and its own. */
static bool same_dev(const struct sw_fleet_device *a, const struct sw_fleet_device *b)
{
    if (a == b)
        return true;
    if (!a || !b || strcmp(a->name, b->name))
        return false;
    const char *ha = a->host ? a->host->name : "", *hb = b->host ? b->host->name : "";
    return !strcmp(ha, hb);
}

/* What tenants other than `skip` (and not in `gone`) hold on device d. */
static uint64_t held(const struct sw_serve_tenant *ts, int n, int skip, const bool *gone,
                     const struct sw_fleet_device *d)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (i == skip || (gone && gone[i]) || ts[i].state == SW_SERVE_STOPPED)
            continue;
        for (int k = 0; k < ts[i].claim->n; k++)
            if (same_dev(ts[i].claim->dev[k], d))
                sum += ts[i].claim->bytes[k];
    }
    return sum;
}

void sw__serve_claim_max(struct sw_serve_claim *into, const struct sw_serve_claim *c)
{
    for (int k = 0; k < c->n; k++) {
        int i = 0;
        while (i < into->n && !same_dev(into->dev[i], c->dev[k]))
            i++;
        if (i == into->n) {
            if (into->n >= SW_SERVE_MAX_DEV)
                continue;
            into->n++;
            into->dev[i] = c->dev[k];
            into->bytes[i] = 0;
            into->capacity[i] = c->capacity[k];
        }
        if (c->bytes[k] > into->bytes[i])
            into->bytes[i] = c->bytes[k];
    }
}

static uint64_t claim_on(const struct sw_serve_tenant *t, const struct sw_fleet_device *d)
{
    for (int k = 0; k < t->claim->n; k++)
        if (same_dev(t->claim->dev[k], d))
            return t->claim->bytes[k];
    return 0;
}

/* The first device of t's claim that does not fit with `gone` stopped; -1 when all fit. */
static int overfull(const struct sw_serve_tenant *ts, int n, int t, const bool *gone,
                    uint64_t *used)
{
    const struct sw_serve_claim *c = ts[t].claim;
    for (int k = 0; k < c->n; k++) {
        uint64_t u = held(ts, n, t, gone, c->dev[k]);
        if (u + c->bytes[k] > c->capacity[k]) {
            *used = u;
            return k;
        }
    }
    return -1;
}

/* Is a before b as a victim? priority (under policy priority) lowest first, then oldest use. */
static bool before(const struct sw_serve_tenant *a, const struct sw_serve_tenant *b)
{
    unsigned pa = a->by_priority ? a->priority : 0, pb = b->by_priority ? b->priority : 0;
    if (pa != pb)
        return pa < pb;
    return a->last_ns < b->last_ns;
}

static int fig(char *out, size_t n, const struct sw_serve_claim *c, int k, uint64_t used)
{
    return snprintf(out, n,
                    "%s/%s: claim %" PRIu64 " B (%.2f GiB) + held %" PRIu64
                    " B (%.2f GiB) of %" PRIu64 " B (%.2f GiB)",
                    c->dev[k]->host ? c->dev[k]->host->name : "?", c->dev[k]->name, c->bytes[k],
                    (double)c->bytes[k] / (1024.0 * 1024 * 1024), used,
                    (double)used / (1024.0 * 1024 * 1024), c->capacity[k],
                    (double)c->capacity[k] / (1024.0 * 1024 * 1024));
}

void sw_serve_admit(const struct sw_serve_tenant *ts, int n, int t, struct sw_serve_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->dev = -1;
    const struct sw_serve_tenant *me = &ts[t];
    const struct sw_serve_claim *c = me->claim;
    for (int k = 0; k < c->n; k++)
        if (c->bytes[k] > c->capacity[k]) {
            d->verdict = SW_SERVE_NEVER;
            d->dev = k;
            d->need = c->bytes[k];
            d->capacity = c->capacity[k];
            snprintf(d->text, sizeof(d->text),
                     "%s does not fit even alone: %s/%s needs %" PRIu64 " B (%.2f GiB) of %" PRIu64
                     " B (%.2f GiB) (%s)",
                     me->name, c->dev[k]->host ? c->dev[k]->host->name : "?", c->dev[k]->name,
                     c->bytes[k], (double)c->bytes[k] / (1024.0 * 1024 * 1024), c->capacity[k],
                     (double)c->capacity[k] / (1024.0 * 1024 * 1024), c->how);
            return;
        }
    bool gone[256] = {false};
    if (n > 256)
        n = 256;
    uint64_t used = 0;
    int k = overfull(ts, n, t, NULL, &used);
    char f[400];
    if (k < 0) {
        d->verdict = SW_SERVE_FITS;
        int w = snprintf(d->text, sizeof(d->text), "%s fits:", me->name);
        for (int j = 0; j < c->n && w > 0 && (size_t)w < sizeof(d->text); j++) {
            fig(f, sizeof(f), c, j, held(ts, n, t, NULL, c->dev[j]));
            w += snprintf(d->text + w, sizeof(d->text) - (size_t)w, " %s;", f);
        }
        return;
    }
    /* victims, best first, until every device fits */
    for (;;) {
        k = overfull(ts, n, t, gone, &used);
        if (k < 0)
            break;
        int best = -1;
        for (int i = 0; i < n; i++) {
            const struct sw_serve_tenant *x = &ts[i];
            if (i == t || gone[i] || x->state != SW_SERVE_RUNNING || x->pinned || x->inflight ||
                !x->can_stop || !claim_on(x, c->dev[k]))
                continue;
            if (best < 0 || before(x, &ts[best]))
                best = i;
        }
        if (best < 0 || d->n_victims >= (int)SW_ARRAY_LEN(d->victims))
            break;
        gone[best] = true;
        d->victims[d->n_victims++] = best;
    }
    if (k >= 0) {
        d->verdict = SW_SERVE_WAIT;
        d->dev = k;
        d->need = c->bytes[k];
        d->used = used;
        d->capacity = c->capacity[k];
        fig(f, sizeof(f), c, k, used);
        int w = snprintf(d->text, sizeof(d->text), "%s waits: %s; held by", me->name, f);
        for (int i = 0; i < n && w > 0 && (size_t)w < sizeof(d->text); i++)
            if (i != t && !gone[i] && ts[i].state != SW_SERVE_STOPPED &&
                claim_on(&ts[i], c->dev[k]))
                w += snprintf(d->text + w, sizeof(d->text) - (size_t)w,
                              " %s (%s%s%s, %d in flight)", ts[i].name,
                              sw_serve_state_name(ts[i].state), ts[i].pinned ? ", pinned" : "",
                              ts[i].can_stop ? "" : ", not ours", ts[i].inflight);
        d->n_victims = 0;
        return;
    }
    d->verdict = SW_SERVE_EVICT;
    int w = snprintf(d->text, sizeof(d->text), "%s evicts", me->name);
    for (int j = 0; j < d->n_victims && w > 0 && (size_t)w < sizeof(d->text); j++) {
        const struct sw_serve_tenant *x = &ts[d->victims[j]];
        w += snprintf(d->text + w, sizeof(d->text) - (size_t)w, "%s %s (%s, priority %u)",
                      j ? "," : "", x->name, x->by_priority ? "priority" : "lru", x->priority);
    }
    for (int j = 0; j < c->n && w > 0 && (size_t)w < sizeof(d->text); j++) {
        fig(f, sizeof(f), c, j, held(ts, n, t, NULL, c->dev[j]));
        w += snprintf(d->text + w, sizeof(d->text) - (size_t)w, "; before: %s", f);
    }
}
