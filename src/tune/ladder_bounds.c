/*
 * ladder's grid and its two proven bounds (docs/ladder.md "The search"): the knob's range on the
 * engine's granularity, the largest value that passed and the smallest that failed by size, what
 * one rung's class teaches them, and which rung is next: the engine's own figure when it gave
 * one, the law's point first, a walk from the one proven bound, then the median of what is left
 * inside the prediction (or of all that is left).
 *
 * What it deliberately does not do: predict (ladder_law.c) or boot (ladder_run.c); only boots
 * move the bounds, a prediction never does.
 */
#include <slipway/fleet.h>
#include <slipway/ladder.h>

#include "ladder_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

int64_t sw__ladder_grid_val(const struct sw__ladder *L, int64_t i)
{
    return L->r->min + i * L->r->step;
}

int64_t sw__ladder_grid_floor(const struct sw__ladder *L, double v)
{
    if (v < (double)L->r->min)
        return -1;
    double i = floor((v - (double)L->r->min) / (double)L->r->step);
    return i >= (double)L->n_grid ? L->n_grid - 1 : (int64_t)i;
}

/* The index of grid value v, -1 when v is off the grid. */
static int64_t grid_index(const struct sw__ladder *L, int64_t v)
{
    if (v < L->r->min || v > L->r->max || (v - L->r->min) % L->r->step)
        return -1;
    return (v - L->r->min) / L->r->step;
}

int64_t sw__ladder_good(const struct sw__ladder *L)
{
    return L->good >= 0 ? sw__ladder_grid_val(L, L->good) : -1;
}

int64_t sw__ladder_bad(const struct sw__ladder *L)
{
    return L->bad < L->n_grid ? sw__ladder_grid_val(L, L->bad) : -1;
}

int sw__ladder_grid_setup(struct sw__ladder *L, struct sw_err *e)
{
    struct sw_ladder_result *r = L->r;
    const struct sw_ladder_opts *o = L->o;
    const char *name = sw_ladder_knob_name(o->knob);
    const struct sw_fleet_knob *fk = sw_fleet_endpoint_knob(L->ep, name);
    if (!fk && o->knob == SW_LADDER_SLOTS)
        fk = sw_fleet_endpoint_knob(L->ep, "seqs");
    int64_t min = o->min, max = o->max, step = o->step;
    if (fk && fk->is_range) {
        if (!min && fk->min.set)
            min = (int64_t)fk->min.u;
        if (!max && fk->max.set)
            max = (int64_t)fk->max.u;
        if (!step && fk->step.set)
            step = (int64_t)fk->step.u;
    }
    if (!step) {
        /* the engine's granularity: llama.cpp pads its context to 256 cells; vLLM's
         * max_model_len is any integer but the operator's ladder moved in 4,096-token steps
         * (seed-fleet.md), a block multiple of every attention block size */
        static const int64_t def[] = {4096, 256, 1, 256ll << 20};
        step = def[o->knob];
    }
    if (min <= 0 || max <= 0)
        return sw_err_set(e, SW_EINVAL,
                          "%s: no range for %s: declare knobs.%s {min, max} in the fleet or give "
                          "--min and --max",
                          L->ep->name, name, name);
    if (min > max || step <= 0)
        return sw_err_set(e, SW_EINVAL,
                          "%s: %s range %" PRId64 "..%" PRId64 " step %" PRId64 " is empty",
                          L->ep->name, name, min, max, step);
    if ((max - min) / step >= (1 << 20))
        return sw_err_set(e, SW_EINVAL,
                          "%s: %s grid of more than 2^20 values: give a coarser "
                          "--step",
                          L->ep->name, name);
    r->min = min;
    r->max = max;
    r->step = step;
    L->n_grid = (max - min) / step + 1;
    r->max = min + (L->n_grid - 1) * step;
    L->skip = sw_malloc((size_t)L->n_grid);
    if (!L->skip)
        return sw_err_set(e, SW_ENOMEM, "out of memory (ladder grid)");
    memset(L->skip, 0, (size_t)L->n_grid);
    L->good = -1;
    L->bad = L->n_grid;
    L->next_hint = -1;
    return 0;
}

void sw__ladder_learn(struct sw__ladder *L, int64_t v, enum sw_ladder_class cls, int64_t engine_max)
{
    int64_t i = grid_index(L, v);
    if (i < 0) {
        /* a value off the grid (a resumed run with another step): bounds by comparison */
        i = sw__ladder_grid_floor(L, (double)v);
        if (cls == SW_LADDER_PASS && i > L->good)
            L->good = i;
        if (sw_ladder_class_is_bad(cls) && i + 1 < L->bad)
            L->bad = i + 1;
        return;
    }
    if (cls == SW_LADDER_PASS) {
        if (i > L->good)
            L->good = i;
    } else if (sw_ladder_class_is_bad(cls)) {
        if (i < L->bad)
            L->bad = i;
    } else {
        L->skip[i] = 1;
    }
    L->next_hint = -1;
    if (cls == SW_LADDER_KV_REFUSED && engine_max > 0) {
        int64_t h = sw__ladder_grid_floor(L, (double)engine_max);
        if (h > L->good && h < L->bad)
            L->next_hint = h;
    }
}

/* The next rung: the engine's own figure when it gave one, the law's point first, then a walk
 * from the one proven bound (when the run began from a prediction), then the median of what is
 * left inside the prediction (or of all that is left). -1: converged. */
int64_t sw__ladder_choose(struct sw__ladder *L, bool first)
{
    if (L->next_hint > L->good && L->next_hint < L->bad && !L->skip[L->next_hint])
        return L->next_hint;
    int64_t n_left = 0;
    for (int64_t i = L->good + 1; i < L->bad; i++)
        n_left += !L->skip[i];
    if (!n_left)
        return -1;
    int64_t plo = -1, phi = L->n_grid;
    const struct sw_ladder_result *r = L->r;
    bool pred = r->law || r->headroom;
    if (pred && r->pred_lo >= 0)
        plo = grid_index(L, r->pred_lo);
    if (pred && r->pred_hi >= 0)
        phi = grid_index(L, r->pred_hi);
    if (first && pred && r->pred_point >= 0) {
        int64_t p = grid_index(L, r->pred_point);
        if (p > L->good && p < L->bad && !L->skip[p])
            return p;
    }
    bool has_good = L->good >= 0, has_bad = L->bad < L->n_grid;
    if (L->walk && has_good != has_bad) {
        /* the prediction's edge is near: confirm it one step at a time, then gallop */
        int64_t stride =
            L->walk_n < 2 ? 1 : (int64_t)1 << (L->walk_n - 1 < 20 ? L->walk_n - 1 : 20);
        L->walk_n++;
        if (has_good) {
            int64_t i = L->good + stride < L->bad ? L->good + stride : L->bad - 1;
            for (; i > L->good; i--)
                if (!L->skip[i])
                    return i;
        } else {
            int64_t i = L->bad - stride > L->good ? L->bad - stride : L->good + 1;
            for (; i < L->bad; i++)
                if (!L->skip[i])
                    return i;
        }
    }
    int64_t lo = L->good + 1 > plo ? L->good + 1 : plo;
    int64_t hi = L->bad - 1 < phi ? L->bad - 1 : phi;
    int64_t n_in = 0;
    for (int64_t i = lo; i <= hi; i++)
        n_in += i >= 0 && i < L->n_grid && !L->skip[i];
    if (!n_in) {
        lo = L->good + 1;
        hi = L->bad - 1;
        n_in = n_left;
    }
    int64_t want = (n_in - 1) / 2, k = 0;
    for (int64_t i = lo; i <= hi; i++) {
        if (i < 0 || i >= L->n_grid || L->skip[i])
            continue;
        if (k++ == want)
            return i;
    }
    return -1;
}
