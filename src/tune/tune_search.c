/*
 * tune's search (docs/tune.md "Candidates, gates, boots"): which candidates are tried, in what
 * order, within the budget. The baseline first (measured whatever its gates say: it is what runs
 * now); then every single-variable probe, all planned and gated before the first of them boots;
 * then the range knobs refined around their best point; then the combinations of the knobs whose
 * single probe won (all of them, then in pairs); then the crowning re-measure (tune_crown.c).
 * The budget keeps two boots for the re-measure through the single probes, four through the
 * combinations (a winner that does not hold has a runner-up to re-measure).
 *
 * What it deliberately does not do: judge a candidate (tune_judge.c) or crown one (tune_crown.c).
 */
#include "tune_run_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The baseline, measured first. false when the search cannot go on (it did not measure, and
 * this is no dry run: the report says no_winner, or interrupted). */
static int baseline(struct sw__tune_run *r, json_t *rep, bool *go_on, struct sw_err *e)
{
    const struct sw__tune_verdict *v = NULL;
    struct sw__tune_cand c;
    memset(&c, 0, sizeof(c));
    *go_on = true;
    int rc = sw__tune_judge(r, &c, SW__TUNE_PH_BASELINE, true, &v, e);
    if (rc)
        return rc;
    const json_t *fails = v ? json_object_get(v->json, "baseline_fails") : NULL;
    if (fails)
        sw__tune_note(r,
                      "the baseline fails %s; a candidate is rejected only by a gate it fails anew "
                      "or fails worse",
                      json_string_value(fails));
    if (sw__tune_measured(v)) {
        r->have_base = true;
        r->base_score = v->score;
        r->base_noise = isfinite(v->noise) ? v->noise : 0;
        json_object_set(rep, "baseline", v->json);
    } else if (!r->o->dry_run) {
        sw__tune_set_outcome(r, rep, r->interrupted ? "interrupted" : "no_winner");
        if (v)
            json_object_set(rep, "baseline", v->json);
        *go_on = false;
    }
    return 0;
}

/* Plan and gate every candidate of cs before any of them boots: pass[i] when cs[i] passed and
 * is not decided yet (a probe the journal decided is in the run and is not booted again). */
static int gate_all(struct sw__tune_run *r, struct sw__tune_cand *cs, size_t n,
                    enum sw__tune_phase phase, bool *pass, struct sw_err *e)
{
    for (size_t i = 0; i < n; i++) {
        const struct sw__tune_verdict *v = NULL;
        int rc = sw__tune_judge(r, &cs[i], phase, false, &v, e);
        if (rc)
            return rc;
        pass[i] = sw__tune_undecided(v);
    }
    return 0;
}

/* Boot the candidates that passed, in order, while the budget less `keep` boots allows. */
static int boot_passed(struct sw__tune_run *r, struct sw__tune_cand *cs, size_t n, const bool *pass,
                       enum sw__tune_phase phase, int keep, struct sw_err *e)
{
    for (size_t i = 0; i < n; i++) {
        const struct sw__tune_verdict *v = NULL;
        if (!pass[i])
            continue;
        if (r->boots >= r->budget - keep) {
            r->budget_hit = true;
            break;
        }
        int rc = sw__tune_judge(r, &cs[i], phase, true, &v, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* The single probe of knob k at value v (from this run or the journal), or NULL. */
static const struct sw__tune_verdict *single_of(const struct sw__tune_run *r, size_t k, size_t v)
{
    for (size_t i = 0; i < r->nverdicts; i++) {
        const struct sw__tune_verdict *x = r->verdicts[i];
        if (x->phase == SW__TUNE_PH_SINGLE && x->c.n == 1 && x->c.knob[0] == (int)k &&
            x->c.value[0] == (int)v)
            return x;
    }
    return NULL;
}

/* A range knob's points tried so far and their scores (NAN: not measured), the baseline's value
 * included when it is a number and the baseline measured. */
static size_t tried_points(const struct sw__tune_run *r, size_t k, double *xs, double *sc)
{
    const struct sw__tune_knob *kn = &r->ks[k];
    size_t n = 0;
    char *end = NULL;
    double bx = kn->baseline[0] ? strtod(kn->baseline, &end) : NAN;
    if (end && !*end && isfinite(bx) && r->have_base) {
        xs[n] = bx;
        sc[n++] = r->base_score;
    }
    for (size_t v = 0; v < kn->nvalues; v++) {
        if (!strcmp(kn->values[v], kn->baseline))
            continue;
        const struct sw__tune_verdict *p = single_of(r, k, v);
        if (!p)
            continue; /* not tried (the budget) */
        xs[n] = strtod(kn->values[v], NULL);
        sc[n++] = sw__tune_measured(p) ? p->score : NAN;
    }
    return n;
}

/* Probe one refined point of knob k (its text in buf) as a single probe of round `round`; *spent
 * when the budget less the two re-measure boots is spent. */
static int probe_point(struct sw__tune_run *r, size_t k, const char *buf, int round, bool *spent,
                       struct sw_err *e)
{
    struct sw__tune_knob *kn = &r->ks[k];
    bool known = false;
    for (size_t v = 0; v < kn->nvalues; v++)
        known |= !strcmp(kn->values[v], buf);
    if (known || !strcmp(buf, kn->baseline) || kn->nvalues >= SW__TUNE_MAX_VALUES)
        return 0;
    if (r->boots >= r->budget - 2) {
        r->budget_hit = true;
        *spent = true;
        return 0;
    }
    size_t v = kn->nvalues;
    sw__tune_knob_add(kn, buf);
    struct sw__tune_cand c;
    sw__tune_cand_single(&c, k, v);
    const struct sw__tune_verdict *p = NULL;
    sw__tune_note(r, "refine %s (round %d): around its best point so far", kn->kv[v], round);
    r->refine_round = round;
    int rc = sw__tune_judge(r, &c, SW__TUNE_PH_SINGLE, true, &p, e);
    r->refine_round = 0;
    return rc;
}

/*
 * Range knobs refined around their best point: after the coarse points (the single probes), up
 * to two rounds, each probing the midpoints (on the step) between the best measured point (the
 * baseline's value included) and its tried neighbours; a refined point is a single probe like
 * the others (planned and gated before its boot, journaled, resumed), within the budget less
 * the two boots kept for the re-measure.
 */
static int refine_ranges(struct sw__tune_run *r, struct sw_err *e)
{
    bool spent = false;
    for (int round = 1; round <= 2; round++) {
        for (size_t k = 0; k < r->nk; k++) {
            const struct sw__tune_knob *kn = &r->ks[k];
            if (!kn->is_range)
                continue;
            double xs[SW__TUNE_MAX_VALUES + 1], sc[SW__TUNE_MAX_VALUES + 1], pts[2];
            size_t n = tried_points(r, k, xs, sc);
            size_t np = sw__tune_refine(kn->lo, kn->hi, kn->step, kn->is_real, xs, sc, n, pts);
            for (size_t i = 0; i < np; i++) {
                char buf[64];
                if (kn->is_real)
                    snprintf(buf, sizeof(buf), "%.6g", pts[i]);
                else
                    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)llround(pts[i]));
                int rc = probe_point(r, k, buf, round, &spent, e);
                if (rc || spent)
                    return rc;
            }
        }
    }
    return 0;
}

/* Per knob, its single probe's best winning value (best_val[k], -1 when none won). */
static void best_per_knob(const struct sw__tune_run *r, int *best_val)
{
    double best_gain[SW__TUNE_MAX_KNOBS];
    for (size_t k = 0; k < r->nk; k++) {
        best_gain[k] = NAN;
        best_val[k] = -1;
    }
    for (size_t i = 0; i < r->nverdicts; i++) {
        const struct sw__tune_verdict *x = r->verdicts[i];
        double g;
        if (x->phase != SW__TUNE_PH_SINGLE || !sw__tune_wins(r, x, &g) || x->c.n != 1)
            continue;
        int k = x->c.knob[0];
        if (!isfinite(best_gain[k]) || g > best_gain[k]) {
            best_gain[k] = g;
            best_val[k] = x->c.value[0];
        }
    }
}

/* The combinations of the knobs whose single probe won: all of them (two or more won), then
 * every pair (three or more won). */
static size_t combinations(const struct sw__tune_run *r, const int *best_val,
                           struct sw__tune_cand *combos)
{
    int won[SW__TUNE_MAX_KNOBS];
    size_t nw = 0, nc = 0;
    for (size_t k = 0; k < r->nk; k++)
        if (best_val[k] >= 0)
            won[nw++] = (int)k;
    if (nw >= 2) {
        struct sw__tune_cand *c = &combos[nc++];
        memset(c, 0, sizeof(*c));
        for (size_t i = 0; i < nw && i < SW__TUNE_MAX_SETTINGS; i++) {
            c->knob[i] = won[i];
            c->value[i] = best_val[won[i]];
            c->n++;
        }
    }
    for (size_t i = 0; nw >= 3 && i < nw; i++)
        for (size_t j = i + 1; j < nw && nc < SW__TUNE_MAX_CANDS; j++) {
            struct sw__tune_cand *c = &combos[nc++];
            sw__tune_cand_single(c, (size_t)won[i], (size_t)best_val[won[i]]);
            c->knob[1] = won[j];
            c->value[1] = best_val[won[j]];
            c->n = 2;
        }
    return nc;
}

/* Each knob's other values, one knob at a time (the load side is never a candidate). */
static size_t singles(const struct sw__tune_run *r, struct sw__tune_cand *cs)
{
    size_t ns = 0;
    for (size_t k = 0; k < r->nk; k++)
        for (size_t v = 0; v < r->ks[k].nvalues && ns < SW__TUNE_MAX_CANDS; v++) {
            if (r->ks[k].kind == SW__TUNE_LOAD || !strcmp(r->ks[k].values[v], r->ks[k].baseline))
                continue;
            sw__tune_cand_single(&cs[ns++], k, v);
        }
    return ns;
}

int sw__tune_search(struct sw__tune_run *r, json_t *rep, struct sw_err *e)
{
    struct sw__tune_cand cs[SW__TUNE_MAX_CANDS];
    bool pass[SW__TUNE_MAX_CANDS], go_on;
    int best_val[SW__TUNE_MAX_KNOBS];
    int rc = baseline(r, rep, &go_on, e);
    if (rc || !go_on)
        return rc;

    /* single-variable probes: every candidate planned and gated before the first boot; two
     * boots kept for the re-measure (the baseline's and the winner's) */
    size_t n = singles(r, cs);
    rc = gate_all(r, cs, n, SW__TUNE_PH_SINGLE, pass, e);
    if (rc || r->o->dry_run)
        return rc;
    rc = boot_passed(r, cs, n, pass, SW__TUNE_PH_SINGLE, 2, e);
    if (!rc && !r->budget_hit)
        rc = refine_ranges(r, e);
    if (rc)
        return rc;

    /* combinations of the winners; four boots kept (a winner that does not hold on re-measure
     * has a runner-up, two boots each) */
    best_per_knob(r, best_val);
    n = combinations(r, best_val, cs);
    rc = gate_all(r, cs, n, SW__TUNE_PH_COMBO, pass, e);
    if (!rc)
        rc = boot_passed(r, cs, n, pass, SW__TUNE_PH_COMBO, 4, e);
    if (rc)
        return rc;
    return sw__tune_crown(r, rep, e);
}
