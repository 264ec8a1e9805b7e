/*
 * calib/arena: the expert-offload arena of the operator's vLLM fork (memory/profile), fitted from
 * the boots that printed it. The fork sizes the arena from what is left after a reserve priced
 * per token of max_model_len: arena(L) = C - r x L, slots = floor(arena / slot), where C folds
 * usable - weights - non_torch - overhead(MNBT) + adjust. Boots see only C, r and the slot, so
 * those are what is fitted; how C splits into the declared constants stays underdetermined.
 *
 * The feasible set, per slot size (the printed "2.344 MiB" is a range), is a convex polygon in
 * (r, C): every boot's printed slot count and arena GiB (2 decimals) bound C - r x L_i to a
 * strip. Its vertices are kept; a prediction is linear in (r, C), so its extremes are at them.
 *
 * What it does not do: fit the overhead's MNBT step (no boot above the threshold) or the split
 * of C; a boot above the MNBT threshold is left out with a note.
 */
#include "calib_internal.h"

#include <slipway/fleet.h>
#include <slipway/profile.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB            1073741824.0
#define MIB            1048576.0
#define N_SLOT_SAMPLES 17

/* Strip of boot i for a slot size: lo <= C - r L <= hi (bytes). */
static void strip(const struct sw_calib_arena *a, int i, double slot, double *lo, double *hi)
{
    *lo = (double)a->slots[i] * slot;
    *hi = (double)(a->slots[i] + 1) * slot - 1.0;
    if (a->gib[i] >= 0) {
        *lo = fmax(*lo, (a->gib[i] - 0.005) * GIB);
        *hi = fmin(*hi, (a->gib[i] + 0.005) * GIB - 1.0);
    }
}

static bool inside(const struct sw_calib_arena *a, double slot, double r, double c)
{
    for (int i = 0; i < a->n; i++) {
        double lo, hi;
        strip(a, i, slot, &lo, &hi);
        double v = c - r * (double)a->lens[i];
        double tol = 1e-6 * fmax(1.0, fabs(v));
        if (v < lo - tol || v > hi + tol)
            return false;
    }
    return true;
}

int sw__calib_arena_fit(struct sw_calib_fit *f, const json_t *boots, const struct sw_calib_opts *o,
                        struct sw_err *e)
{
    struct sw_calib_arena *a = &f->arena;
    memset(a, 0, sizeof(*a));
    double slot_mib = -1;
    int64_t threshold = 4096;
    struct sw_fork_profile prof;
    bool have_prof = false;
    if (o && o->ep && o->ep->profile) {
        struct sw_err e2 = {0};
        memset(&prof, 0, sizeof(prof));
        if (!sw_profile_from_fleet(o->ep->profile, &prof, &e2) && prof.has_arena) {
            have_prof = true;
            if (prof.overhead_threshold > 0)
                threshold = prof.overhead_threshold;
        }
    }
    char skipped[256] = "";
    size_t i;
    json_t *b;
    json_array_foreach(boots, i, b)
    {
        const json_t *rep = json_object_get(b, "report");
        const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
        const json_t *sl = json_object_get(rep, "expert_arena_slots");
        if (!json_is_integer(sl) || !json_is_object(canon))
            continue;
        int64_t id = (int64_t)json_integer_value(json_object_get(b, "id"));
        if (sw__calib_excluded(o, id))
            continue;
        int64_t L = sw__calib_shape_int(canon, "ctx", 0);
        int64_t mnbt = sw__calib_shape_int(canon, "mnbt", 0);
        if (L <= 0)
            continue;
        int64_t sl0 = (int64_t)json_integer_value(sl);
        if (sl0 < 0 || sl0 > (INT64_C(1) << 40))
            continue;
        if (mnbt > threshold) {
            size_t n = strlen(skipped);
            snprintf(skipped + n, sizeof(skipped) - n, "%sboot #%lld (MNBT %lld > %lld)",
                     n ? ", " : "", (long long)id, (long long)mnbt, (long long)threshold);
            continue;
        }
        if (a->n >= SW_CALIB_MAX_POINTS)
            break;
        a->lens[a->n] = L;
        a->slots[a->n] = (int64_t)json_integer_value(sl);
        a->mnbt[a->n] = mnbt;
        a->boot_ids[a->n] = id;
        const json_t *g = json_object_get(rep, "expert_arena_gib");
        a->gib[a->n] = json_is_number(g) && json_number_value(g) >= 0 && json_number_value(g) < 1e9
                           ? json_number_value(g)
                           : -1;
        const json_t *sm = json_object_get(rep, "expert_slot_mib");
        if (json_is_number(sm) && json_number_value(sm) > 0 && json_number_value(sm) < 1e6)
            slot_mib = json_number_value(sm);
        a->n++;
    }
    if (!a->n)
        return 0;
    a->have = true;
    if (slot_mib > 0) {
        /* printed to 3 decimals */
        a->slot_lo = (slot_mib - 0.0005) * MIB;
        a->slot_hi = (slot_mib + 0.0005) * MIB;
    } else if (have_prof && prof.slot) {
        a->slot_lo = a->slot_hi = (double)prof.slot;
    } else {
        snprintf(a->why, sizeof(a->why),
                 "no boot printed the slot size and no fleet profile declares it");
        return 0;
    }
    int n_len = 0;
    for (int k = 0; k < a->n; k++) {
        bool seen = false;
        for (int j = 0; j < k; j++)
            seen |= a->lens[j] == a->lens[k];
        n_len += !seen;
    }
    a->reserve_lo = a->cap_lo = INFINITY;
    a->reserve_hi = a->cap_hi = -INFINITY;
    if (n_len < 2) {
        a->one_geometry = true;
        snprintf(a->why, sizeof(a->why),
                 "every arena boot has max_model_len %lld: the reserve per token is not seen",
                 (long long)a->lens[0]);
        return 0;
    }
    for (int si = 0; si < N_SLOT_SAMPLES; si++) {
        double slot = a->slot_lo + (a->slot_hi - a->slot_lo) * si / (N_SLOT_SAMPLES - 1);
        if (a->slot_hi == a->slot_lo && si)
            break;
        for (int p = 0; p < a->n; p++)
            for (int q = 0; q < a->n; q++) {
                if (a->lens[p] == a->lens[q])
                    continue;
                double lp, hp, lq, hq;
                strip(a, p, slot, &lp, &hp);
                strip(a, q, slot, &lq, &hq);
                double vp[2] = {lp, hp}, vq[2] = {lq, hq};
                for (int x = 0; x < 2; x++)
                    for (int y = 0; y < 2; y++) {
                        /* C - r Lp = vp, C - r Lq = vq */
                        double r = (vp[x] - vq[y]) / (double)(a->lens[q] - a->lens[p]);
                        double c = vp[x] + r * (double)a->lens[p];
                        if (!inside(a, slot, r, c))
                            continue;
                        if (a->n_vert < SW_CALIB_MAX_VERT)
                            a->vert[a->n_vert++] = (struct sw_calib_arena_vertex){slot, r, c};
                        a->reserve_lo = fmin(a->reserve_lo, r);
                        a->reserve_hi = fmax(a->reserve_hi, r);
                        a->cap_lo = fmin(a->cap_lo, c);
                        a->cap_hi = fmax(a->cap_hi, c);
                    }
            }
    }
    a->consistent = a->n_vert > 0;
    if (!a->consistent) {
        snprintf(a->why, sizeof(a->why),
                 "no (reserve per token, capacity, slot) reproduces every printed slot count "
                 "and arena size");
        return 0;
    }
    if (have_prof) {
        a->have_base = true;
        a->base = (double)prof.usable - (double)prof.weights - (double)prof.non_torch -
                  (double)prof.overhead - (prof.subtract_graphs ? (double)prof.graphs : 0.0);
        a->adjust_lo = a->cap_lo - a->base;
        a->adjust_hi = a->cap_hi - a->base;
    }
    snprintf(a->underdetermined, sizeof(a->underdetermined),
             "only C = usable - weights - non_torch - overhead + adjust is seen (how it splits "
             "needs a budget line); the reserve per token is bounded by %d geometries only; the "
             "overhead's MNBT step is not seen (every boot at MNBT <= %lld)%s%s",
             n_len, (long long)threshold, skipped[0] ? "; left out: " : "", skipped);
    (void)e;
    return 0;
}

int sw_calib_arena_predict(const struct sw_calib_arena *a, int64_t L, struct sw_calib_range *slots,
                           struct sw_err *e)
{
    memset(slots, 0, sizeof(*slots));
    if (!a->have || !a->consistent || !a->n_vert)
        return sw_err_set(e, SW_EMISMATCH, "no consistent arena fit%s%s", a->why[0] ? ": " : "",
                          a->why);
    if (L <= 0)
        return sw_err_set(e, SW_EINVAL, "max_model_len must be positive");
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < a->n_vert; i++) {
        const struct sw_calib_arena_vertex *v = &a->vert[i];
        /* vertices sit on strip edges: absorb the rounding of c - r L at an exact multiple */
        double x = floor((v->c - v->r * (double)L) / v->slot + 1e-7);
        if (!(fabs(x) < 9e18)) /* a hostile ledger figure must not reach an undefined cast */
            return sw_err_set(e, SW_ERANGE, "arena prediction out of range");
        int64_t s = (int64_t)x;
        lo = SW_MIN(lo, s);
        hi = SW_MAX(hi, s);
    }
    slots->lo = lo;
    slots->hi = hi;
    slots->point = lo + (hi - lo) / 2;
    bool in_geo = false;
    for (int i = 0; i < a->n; i++)
        in_geo |= a->lens[i] == L;
    slots->extrapolated = !in_geo;
    return 0;
}

int sw_calib_arena_check(const struct sw_calib_arena *a, double c, double r, double slot,
                         bool *reproduces, struct sw_err *e)
{
    *reproduces = false;
    if (!a->have)
        return sw_err_set(e, SW_EINVAL, "no arena boots");
    for (int i = 0; i < a->n; i++) {
        double v = c - r * (double)a->lens[i];
        if ((int64_t)floor(v / slot) != a->slots[i])
            return 0;
        if (a->gib[i] >= 0 && fabs(v / GIB - a->gib[i]) > 0.005 + 1e-9)
            return 0;
    }
    *reproduces = true;
    return 0;
}
