/*
 * tune's crowning: noise, and the re-measure that keeps a lucky reading from being crowned
 * (docs/tune.md "Candidates, gates, boots", 4). A candidate wins when its gain over the first
 * baseline exceeds the larger of its own noise and the baseline's. The winners are ranked by
 * score; the best is booted again right after the baseline is booted again (two boots back to
 * back, the same conditions), and crowned only when its gain over that fresh baseline exceeds
 * every noise the run measured for either. If it does not hold, the next winner is tried the
 * same way.
 *
 * What it deliberately does not do: choose or judge the candidates (tune_search.c,
 * tune_judge.c); the first baseline only ranks them, it never crowns one.
 */
#include "tune_run_internal.h"

#include <math.h>
#include <string.h>

bool sw__tune_wins(const struct sw__tune_run *r, const struct sw__tune_verdict *v, double *gain)
{
    *gain = NAN;
    if (!sw__tune_measured(v) || !r->have_base || !(r->base_score > 0))
        return false;
    *gain = (v->score - r->base_score) / r->base_score;
    double noise = r->base_noise;
    if (isfinite(v->noise) && v->noise > noise)
        noise = v->noise;
    return *gain > noise;
}

/* The re-measure's verdict: the winner booted again against the baseline booted again just
 * before it (same conditions, interleaved), its gain over that fresh baseline, which must
 * exceed every noise the run measured for either (the first baseline's, the fresh one's, the
 * winner's first and second). */
static bool holds(const struct sw__tune_run *r, const struct sw__tune_verdict *fresh,
                  const struct sw__tune_verdict *first, const struct sw__tune_verdict *again,
                  double *gain, double *noise)
{
    *gain = NAN;
    *noise = NAN;
    if (!sw__tune_measured(fresh) || !sw__tune_measured(again) || !(fresh->score > 0))
        return false;
    *gain = (again->score - fresh->score) / fresh->score;
    double n = r->base_noise;
    const struct sw__tune_verdict *ps[] = {fresh, first, again};
    for (size_t i = 0; i < SW_ARRAY_LEN(ps); i++)
        if (isfinite(ps[i]->noise) && ps[i]->noise > n)
            n = ps[i]->noise;
    *noise = n;
    return *gain > n;
}

/* The single and combination probes that won, best score first (a stable order). */
static size_t rank_winners(const struct sw__tune_run *r, const struct sw__tune_verdict **rank,
                           size_t max)
{
    size_t nr = 0;
    for (size_t i = 0; i < r->nverdicts; i++) {
        const struct sw__tune_verdict *x = r->verdicts[i];
        double g;
        if ((x->phase == SW__TUNE_PH_SINGLE || x->phase == SW__TUNE_PH_COMBO) &&
            sw__tune_wins(r, x, &g) && nr < max)
            rank[nr++] = x;
    }
    for (size_t a = 1; a < nr; a++)
        for (size_t b = a; b > 0 && rank[b - 1]->score < rank[b]->score; b--) {
            const struct sw__tune_verdict *t = rank[b];
            rank[b] = rank[b - 1];
            rank[b - 1] = t;
        }
    return nr;
}

/* The report's winner: its first probe with the re-measure and the fresh baseline beside it. */
static void crown(struct sw__tune_run *r, json_t *rep, const struct sw__tune_verdict *w,
                  const struct sw__tune_verdict *fresh, const struct sw__tune_verdict *again,
                  double gain, double noise)
{
    json_t *j = json_deep_copy(w->json);
    json_object_set(j, "remeasured", again->json);
    json_object_set(j, "rebaseline", fresh->json);
    json_object_set_new(j, "remeasured_gain", sw__tune_jnum(gain));
    json_object_set_new(j, "remeasured_noise", sw__tune_jnum(noise));
    json_object_set_new(j, "remeasured_gain_first", sw__tune_jnum(again->gain));
    json_object_set_new(rep, "winner", j);
    json_object_set(rep, "apply", json_object_get(w->json, "settings"));
    r->winner = w;
    r->winner_again = again;
}

/* Without a crowned winner's runner-up: the best measured candidate, for the record. */
static void runner_up_of_record(const struct sw__tune_run *r, json_t *rep)
{
    const struct sw__tune_verdict *best = NULL;
    for (size_t i = 0; i < r->nverdicts; i++) {
        const struct sw__tune_verdict *x = r->verdicts[i];
        if (x->phase == SW__TUNE_PH_BASELINE || x->phase == SW__TUNE_PH_REMEASURE ||
            x->phase == SW__TUNE_PH_REBASE || !sw__tune_measured(x))
            continue;
        if (r->winner && !strcmp(r->winner->c.key, x->c.key))
            continue;
        if (!best || x->score > best->score)
            best = x;
    }
    if (best)
        json_object_set_new(rep, "runner_up", json_deep_copy(best->json));
}

/* Re-measure one ranked winner: the baseline again, then the candidate again. *held when it is
 * crowned; *stop when the fresh baseline did not measure (nothing can be crowned against it). */
static int remeasure(struct sw__tune_run *r, json_t *rep, const struct sw__tune_verdict *w,
                     bool *held, bool *stop, struct sw_err *e)
{
    const struct sw__tune_verdict *fresh = NULL, *again = NULL;
    struct sw__tune_cand base_c, again_c = w->c;
    memset(&base_c, 0, sizeof(base_c));
    *held = *stop = false;
    int rc = sw__tune_judge(r, &base_c, SW__TUNE_PH_REBASE, true, &fresh, e);
    if (rc)
        return rc;
    if (!sw__tune_measured(fresh)) {
        sw__tune_note(r,
                      "the baseline did not measure again (%s): nothing can be crowned against it",
                      fresh ? sw__tune_outcome_name(fresh->outcome) : "not booted");
        *stop = true;
        return 0;
    }
    rc = sw__tune_judge(r, &again_c, SW__TUNE_PH_REMEASURE, true, &again, e);
    if (rc)
        return rc;
    double g, gn;
    *held = holds(r, fresh, w, again, &g, &gn);
    if (sw__tune_measured(again))
        json_object_set_new(again->json, "gain_fresh", sw__tune_jnum(g));
    if (*held)
        crown(r, rep, w, fresh, again, g, gn);
    else
        sw__tune_note(r,
                      "%s did not hold on re-measure: %+.1f%% over the fresh baseline (%.2f "
                      "against %.2f), noise %.1f%%",
                      w->c.key, g * 100, again ? again->score : NAN, fresh->score, gn * 100);
    return 0;
}

int sw__tune_crown(struct sw__tune_run *r, json_t *rep, struct sw_err *e)
{
    const struct sw__tune_verdict *rank[2 * SW__TUNE_MAX_CANDS];
    size_t nr = rank_winners(r, rank, SW_ARRAY_LEN(rank));
    const char *outcome = r->budget_hit ? "budget" : "no_winner";
    for (size_t a = 0; a < nr; a++) {
        bool held, stop;
        if (r->boots + 2 > r->budget) {
            outcome = "budget";
            break;
        }
        int rc = remeasure(r, rep, rank[a], &held, &stop, e);
        if (rc)
            return rc;
        if (stop)
            break;
        if (held) {
            outcome = "crowned";
            for (size_t b = 0; b < nr; b++)
                if (b != a) {
                    json_object_set_new(rep, "runner_up", json_deep_copy(rank[b]->json));
                    break;
                }
            break;
        }
    }
    if (!json_object_get(rep, "runner_up"))
        runner_up_of_record(r, rep);
    sw__tune_set_outcome(r, rep, outcome);
    return 0;
}
