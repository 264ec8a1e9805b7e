/*
 * calib/sglang: SGLang's free terms from its recorded boots (include/slipway/calib.h, "SGLang").
 * memory/sglang computes the pools from rest (what mem_fraction_static leaves for KV + mamba
 * state); the fleet does not hold the free-memory facts rest comes from, so it is fitted here: a
 * boot whose pool the engine sized gives it to one cell, a pinned boot bounds it from below. The
 * free memory a boot leaves is fitted as one constant minus the pools (a boot's reading gives it
 * to the MiB), and a shape's free memory predicted from the pools the law gives it.
 *
 * What it does not do: read the ledger (fit.c gathers the observations), or model the engine's
 * transient use after the pools (activations, graphs): they are inside the fitted constant, so a
 * shape that moves them (another batch, graph capture on) is not covered.
 */
#include "calib_internal.h"

#include <slipway/fleet.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static double fraction_of(const struct sw_sglang_opts *o, double mfs)
{
    if (mfs > 0)
        return mfs;
    if (o->mem_fraction_static > 0)
        return o->mem_fraction_static;
    return sw_sglang_default_mem_fraction(o, NULL);
}

static double pools_bytes(const struct sw_calib_sglang *s, int64_t tokens, int64_t slots)
{
    return (double)(tokens + s->page) * (double)s->cell_bytes +
           (double)slots * (double)s->mamba_per_req;
}

/* The same for a predicted shape: its own cell and state (another KV dtype moves them). */
static double shape_pools(const struct sw_sglang_opts *o, const struct sw_sglang_report *r,
                          int64_t tokens)
{
    int64_t page = o->page_size > 0 ? o->page_size : 1;
    return (double)(tokens + page) * (double)r->cell_bytes +
           (double)r->max_mamba_cache_size * (double)r->mamba_cache_per_req;
}

int sw_calib_sglang_fit(const struct sw_hf_config *c, const struct sw_sglang_opts *o,
                        const struct sw_calib_sglang_obs *obs, int n,
                        const struct sw_calib_opts *co, struct sw_calib_sglang *out,
                        struct sw_err *e)
{
    struct sw_sglang_opts q = *o;
    struct sw_sglang_report r;
    int rc;
    memset(out, 0, sizeof(*out));
    if (n < 0 || n > SW_CALIB_SG_MAX)
        return sw_err_set(e, SW_EINVAL, "%d SGLang boots (at most %d)", n, SW_CALIB_SG_MAX);
    /* the shape's cell and state size: the law with the pool pinned (no facts needed) */
    q.max_total_tokens = 1 << 20;
    if (q.max_mamba_cache_size <= 0)
        q.max_mamba_cache_size = 1;
    rc = sw_sglang_plan(c, &q, &r, e);
    if (rc)
        return rc;
    out->cell_bytes = r.cell_bytes;
    out->mamba_per_req = r.mamba_cache_per_req;
    out->page = o->page_size > 0 ? o->page_size : 1;
    out->consistent = true;
    out->f0_lo = -INFINITY;
    out->f0_hi = INFINITY;
    uint64_t rlo = 0, rhi = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        const struct sw_calib_sglang_obs *b = &obs[i];
        if (sw__calib_excluded(co, b->boot_id) || b->tokens <= 0)
            continue;
        out->obs[out->n++] = *b;
        out->have = true;
        double pools = pools_bytes(out, b->tokens, b->mamba_slots);
        if (b->pinned) {
            uint64_t fl = (uint64_t)b->tokens * (uint64_t)out->cell_bytes +
                          (uint64_t)b->mamba_slots * (uint64_t)out->mamba_per_req;
            out->rest_floor = SW_MAX(out->rest_floor, fl);
        } else {
            uint64_t lo = 0, hi = 0;
            q = *o;
            q.max_total_tokens = 0;
            q.max_mamba_cache_size = b->mamba_slots;
            q.rest_bytes = 0;
            rc = sw_sglang_rest_from_tokens(c, &q, b->tokens, &lo, &hi, e);
            if (rc) {
                sw_err_prefix(e, "SGLang boot #%lld (%s)", (long long)b->boot_id, b->ext_id);
                return rc;
            }
            double mfs = fraction_of(o, b->mem_fraction_static);
            if (out->n_rest && fabs(mfs - out->rest_mfs) > 1e-9) {
                snprintf(out->why, sizeof(out->why),
                         "boot #%lld sized its pool at mem_fraction_static %.3f, boot #%lld at "
                         "%.3f: one rest per fraction (not fitted across)",
                         (long long)b->boot_id, mfs, (long long)out->obs[0].boot_id, out->rest_mfs);
                continue;
            }
            out->rest_mfs = mfs;
            rlo = SW_MAX(rlo, lo);
            rhi = SW_MIN(rhi, hi);
            out->n_rest++;
        }
        if (b->has_free) {
            out->f0_lo = fmax(out->f0_lo, b->free_bytes + pools);
            out->f0_hi = fmin(out->f0_hi, b->free_bytes + (double)SW_MIB + pools);
            out->n_free++;
        }
    }
    if (out->n_rest) {
        out->have_rest = true;
        out->rest_lo = rlo;
        out->rest_hi = rhi;
        if (rlo >= rhi || rhi <= out->rest_floor) {
            out->consistent = false;
            snprintf(out->why, sizeof(out->why),
                     "the autofit boots' rest [%llu, %llu) B does not hold the pinned boots' "
                     "pools (>= %llu B)",
                     (unsigned long long)rlo, (unsigned long long)rhi,
                     (unsigned long long)out->rest_floor);
        }
    }
    if (out->n_free) {
        out->have_free = true;
        if (out->f0_lo >= out->f0_hi) {
            out->consistent = false;
            snprintf(out->why, sizeof(out->why),
                     "the boots' free readings do not agree on one constant (free + pools: "
                     "%.0f..%.0f B)",
                     out->f0_hi, out->f0_lo);
        }
    }
    return 0;
}

int sw_calib_sglang_predict(const struct sw_calib_sglang *s, const struct sw_hf_config *c,
                            const struct sw_sglang_opts *o, struct sw_calib_sglang_pred *out,
                            struct sw_err *e)
{
    struct sw_sglang_opts q = *o;
    struct sw_sglang_report r;
    int rc;
    memset(out, 0, sizeof(*out));
    out->autofit = o->max_total_tokens <= 0;
    double rlo = (double)s->rest_lo, rhi = (double)s->rest_hi - 1;
    if (!s->have_rest) {
        if (out->autofit && !s->rest_floor)
            return sw_err_set(e, SW_ENOENT,
                              "no SGLang boot sized its own pool (no --max-total-tokens) and no "
                              "pinned boot bounds the rest: the autofit cannot be predicted");
        rlo = (double)s->rest_floor;
        rhi = rlo;
        out->tokens_open = out->autofit;
    } else {
        double mfs = fraction_of(o, 0);
        if (fabs(mfs - s->rest_mfs) > 1e-9) {
            /* rest = avail - P x (1 - f): at f' it moves by P x (f' - f), P in [rest / f, card] */
            double d = mfs - s->rest_mfs;
            double plo = (double)s->rest_lo / s->rest_mfs;
            double phi = o->gpu_mem_bytes ? (double)o->gpu_mem_bytes : plo;
            double a = rlo + (d > 0 ? plo : phi) * d, b = rhi + (d > 0 ? phi : plo) * d;
            rlo = fmax(a, 0);
            rhi = fmax(b, 0);
            out->extrapolated = true;
            snprintf(out->warning, sizeof(out->warning),
                     "EXTRAPOLATES across mem_fraction_static: %.3f was not fitted (fitted: "
                     "%.3f); the pre-load free memory is bounded by %.2f..%.2f GiB",
                     mfs, s->rest_mfs, plo / (double)SW_GIB, phi / (double)SW_GIB);
        }
    }
    out->rest_lo = rlo;
    out->rest_hi = rhi;
    for (int k = 0; k < 2; k++) {
        q = *o;
        q.rest_bytes = (uint64_t)fmax(k ? rhi : rlo, 1);
        rc = sw_sglang_plan(c, &q, &r, e);
        if (rc)
            return rc;
        if (k)
            out->tokens_hi = r.max_total_num_tokens;
        else
            out->tokens_lo = r.max_total_num_tokens;
        out->mamba_slots = r.max_mamba_cache_size;
    }
    if (out->tokens_open)
        snprintf(out->warning, sizeof(out->warning),
                 "no boot sized its own pool: %lld tokens is only the floor the pinned boots "
                 "held",
                 (long long)out->tokens_lo);
    if (s->have_free && s->consistent) {
        out->have_free = true;
        /* an open pool (no rest fitted): only the top is known */
        out->free_lo = out->tokens_open ? -INFINITY : s->f0_lo - shape_pools(o, &r, out->tokens_hi);
        out->free_hi = s->f0_hi - shape_pools(o, &r, out->tokens_lo);
        out->would_oom = !out->tokens_open && out->free_lo < 0;
    }
    return 0;
}

static struct sw_calib_sglang_obs *add_obs(struct sw_calib_sglang_obs *obs, int max, int *n,
                                           int64_t id, const char *ext, int64_t tokens, bool pinned,
                                           int64_t slots, double mfs)
{
    if (*n >= max || tokens <= 0)
        return NULL;
    struct sw_calib_sglang_obs *b = &obs[(*n)++];
    memset(b, 0, sizeof(*b));
    b->boot_id = id;
    snprintf(b->ext_id, sizeof(b->ext_id), "%s", ext);
    b->tokens = tokens;
    b->pinned = pinned;
    b->mamba_slots = slots;
    b->mem_fraction_static = mfs;
    return b;
}

void sw_calib_sglang_gather(const struct sw_fleet_endpoint *ep,
                            const struct sw_calib_sglang_obs *declared, const json_t *boots,
                            const json_t *usage, struct sw_calib_sglang_obs *obs, int max, int *n)
{
    const struct sw_fleet_fact *ff = ep ? sw_fleet_endpoint_fact(ep, "free_at_boot") : NULL;
    const struct sw_fleet_fact *fa = ep ? sw_fleet_endpoint_fact(ep, "autofit_tokens") : NULL;
    if (ff && declared && declared->pinned && !strcmp(ff->q.unit, "B")) {
        struct sw_calib_sglang_obs *b =
            add_obs(obs, max, n, 0, "fleet measured.free_at_boot", declared->tokens, true,
                    declared->mamba_slots, declared->mem_fraction_static);
        if (b) {
            b->has_free = true;
            b->free_bytes = ff->q.value;
        }
    }
    if (fa && declared && fa->q.value >= 1 && fa->q.value < 9e15)
        add_obs(obs, max, n, 0, "fleet measured.autofit_tokens", (int64_t)fa->q.value, false,
                declared->mamba_slots, declared->mem_fraction_static);
    size_t i;
    json_t *b;
    json_array_foreach(boots, i, b)
    {
        const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
        const json_t *rep = json_object_get(b, "report");
        const json_t *tok = json_object_get(rep, "max_total_num_tokens");
        const char *eng = json_string_value(json_object_get(canon, "engine"));
        if (!eng || strcmp(eng, "sglang") || !json_is_integer(tok))
            continue;
        const char *ext = json_string_value(json_object_get(b, "ext_id"));
        int64_t id = (int64_t)json_integer_value(json_object_get(b, "id"));
        struct sw_calib_sglang_obs *o =
            add_obs(obs, max, n, id, ext ? ext : "", (int64_t)json_integer_value(tok),
                    json_integer_value(json_object_get(canon, "kv_tokens")) > 0,
                    (int64_t)json_integer_value(json_object_get(rep, "mamba_pool_size")),
                    json_number_value(json_object_get(canon, "mem_fraction_static")));
        size_t k;
        json_t *u;
        json_array_foreach(usage, k, u)
        {
            const json_t *fr = json_object_get(u, "free_mib");
            if (!o || json_integer_value(json_object_get(u, "boot")) != id ||
                !json_is_integer(fr) || json_integer_value(fr) < 0)
                continue;
            o->has_free = true;
            o->free_bytes = (double)json_integer_value(fr) * (double)SW_MIB;
        }
    }
}
