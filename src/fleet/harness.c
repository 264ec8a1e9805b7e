/*
 * The client harness of a fleet file: context window, compaction ratio and endpoint, summary
 * budget, and per-endpoint client context windows.
 *
 * Not here: resolving endpoint names (validate.c) or running a client (bench).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Harness.
 */

struct harness_dec {
    struct sw_fleet_harness *h;
    struct sw__fleet_harness_raw *hr;
};

static int dec_window(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    return sw__fleet_dec_u64(c, v, &d->spec, &((struct harness_dec *)obj)->h->context_window);
}

static int dec_ratio(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct sw__fleet_fdef *d)
{
    return sw__fleet_dec_f64(c, v, &d->spec, &((struct harness_dec *)obj)->h->compaction_ratio);
}

static int dec_budget(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    return sw__fleet_dec_u64(c, v, &d->spec, &((struct harness_dec *)obj)->h->summary_budget);
}

static int dec_compaction(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d)
{
    struct harness_dec *hd = obj;
    hd->h->compaction_endpoint_at = sw__fleet_at(v);
    return sw__fleet_dec_str(c, v, &d->spec, &hd->hr->compaction_endpoint);
}

static int dec_client(struct sw__fleet_ctx *c, const struct sw__fleet_node *ek,
                      const struct sw__fleet_node *evv, void *arg)
{
    struct harness_dec *hd = arg;
    struct sw_fleet_harness *h = hd->h;
    struct sw_fleet_client *cl = &h->clients[h->n_clients];
    struct sw_fleet_str *nm = &hd->hr->client_names[h->n_clients];
    memset(cl, 0, sizeof(*cl));
    memset(nm, 0, sizeof(*nm));
    nm->v = sw_region_strdup(c->a, ek->text);
    if (!nm->v)
        return sw__fleet_nomem(c);
    nm->at = sw__fleet_at(ek);
    cl->at = sw__fleet_at(ek);
    static const struct sw__fleet_fdef cdefs[] = {
        {"context_window",
         {"contextWindow"},
         sw__fleet_dec_u64f,
         SW__SPECN(SW__FT_COUNT, 1, 0),
         offsetof(struct sw_fleet_client, context_window)},
    };
    int r = sw__fleet_dec_map(c, evv, cl, cdefs, 1, "harness endpoint");
    if (!r)
        h->n_clients++;
    return r;
}

static int dec_clients(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct harness_dec *hd = obj;
    (void)d;
    int rc = sw__fleet_alloc_pair(c, v, &hd->h->clients, sizeof(*hd->h->clients),
                                  &hd->hr->client_names, sizeof(*hd->hr->client_names));
    if (rc)
        return rc;
    struct sw__fleet_walk w = {.what = "endpoint", .fn = dec_client, .arg = hd};
    return sw__fleet_walk(c, v, &w);
}

static const struct sw__fleet_fdef harness_defs[] = {
    {"context_window", {"contextWindow"}, dec_window, SW__SPECN(SW__FT_COUNT, 1, 0), 0},
    {"compaction_ratio",
     {"compactionRatio"},
     dec_ratio,
     {.ft = SW__FT_REAL, .fmin = 0, .fmax = 1, .fmin_open = true},
     0},
    {"summary_budget", {"summaryBudget"}, dec_budget, SW__SPECN(SW__FT_COUNT, 0, 0), 0},
    {"compaction_endpoint", {"compaction"}, dec_compaction, SW__SPEC(SW__FT_NAME), 0},
    {"endpoints", {0}, dec_clients, SW__SPEC(0), 0},
};

int sw__fleet_dec_harness(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                          struct sw__fleet_harness_raw *hr)
{
    struct harness_dec hd = {&c->f->harness, hr};
    hd.h->present = true;
    hd.h->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    return sw__fleet_dec_map(c, v, &hd, harness_defs, SW_ARRAY_LEN(harness_defs), "harness");
}
