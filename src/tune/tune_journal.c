/*
 * tune's journal: the run in the ledger (tables tune_runs and tune_probes, docs/tune.md "The
 * journal"). A run is one endpoint x objective x search space; every probe is written as it is
 * decided, one transaction each; a run that was interrupted or stopped by its budget stays open,
 * and the next `tune` of the same space resumes it: the probes it decided are read back (their
 * verdicts from their evidence) and the boots they spent count against the budget.
 *
 * What it deliberately does not do: decide whether a journaled probe is taken (tune_judge.c), or
 * change the ledger's stored forms (the evidence is the report's probe, as it always was).
 */
#include "tune_run_internal.h"

#include <math.h>
#include <string.h>

static int open_ledger(struct sw__tune_run *r, char *path, size_t n, struct sw_err *e)
{
    struct sw_ledger_open_opts lo;
    if (r->o->no_ledger) { /* --no-ledger: nothing journaled, nothing resumed */
        r->have_ledger = false;
        if (n)
            path[0] = '\0';
        return 0;
    }
    memset(&lo, 0, sizeof(lo));
    lo.create = !r->o->dry_run;
    lo.readonly = r->o->dry_run;
    /* a dry run with nothing recorded yet: the gates run without ledger evidence */
    return sw_ledger_open_for(&r->ledger, r->o->ledger, r->o->fleet, &lo,
                              r->o->dry_run ? SW_LEDGER_MAY_BE_ABSENT : SW_LEDGER_MUST_EXIST,
                              &r->have_ledger, path, n, e);
}

int sw__tune_journal_open(struct sw__tune_run *r, const char *space, char *path, size_t n,
                          bool *resumed, struct sw_err *e)
{
    *resumed = false;
    if (r->o->no_ledger) {
        path[0] = '\0';
        return 0; /* nothing journaled, nothing resumed */
    }
    int rc = open_ledger(r, path, n, e);
    if (rc || !r->have_ledger || r->o->dry_run)
        return rc;
    rc = sw_ledger_tune_begin(&r->ledger, r->base->name, r->o->objective.text, space, &r->run_id,
                              resumed, e);
    if (!rc)
        rc = sw_ledger_tune_probes(&r->ledger, r->run_id, &r->prior, e);
    if (rc)
        return rc;
    /* the probes decided so far: the numbering goes on, their boots are spent */
    size_t i;
    const json_t *x;
    json_array_foreach(r->prior, i, x)
    {
        int s = (int)json_integer_value(json_object_get(x, "seq"));
        const char *oc = json_string_value(json_object_get(x, "outcome"));
        if (s > r->seq)
            r->seq = s;
        if (oc && strcmp(oc, "rejected"))
            r->boots++;
    }
    if (*resumed)
        sw__tune_note(r, "resuming run %lld: %zu probes decided, %d boots spent",
                      (long long)r->run_id, json_array_size(r->prior), r->boots);
    return 0;
}

const json_t *sw__tune_journal_prior(const struct sw__tune_run *r, const char *key,
                                     enum sw__tune_phase phase)
{
    const char *phase_name = sw__tune_phase_name(phase);
    size_t i;
    const json_t *p, *hit = NULL;
    json_array_foreach(r->prior, i, p)
    {
        const char *k = json_string_value(json_object_get(p, "candidate"));
        const char *ph = json_string_value(json_object_get(p, "phase"));
        if (k && ph && !strcmp(k, key) && !strcmp(ph, phase_name))
            hit = p;
    }
    return hit;
}

int sw__tune_journal_record(struct sw__tune_run *r, const json_t *p, struct sw_err *e)
{
    if (!r->have_ledger || r->o->dry_run)
        return 0;
    /* the journal's phases are the schema's: the baseline booted again before a winner's
     * re-measure is a re-measure (of the candidate "baseline"); its evidence says "rebase" */
    const char *ph = json_string_value(json_object_get(p, "phase"));
    json_t *jph = json_string(ph && !strcmp(ph, "rebase") ? "remeasure" : ph ? ph : "");
    json_t *rec =
        json_pack("{s:O, s:o, s:O, s:O, s:O?, s:O?, s:O?, s:O}", "seq", json_object_get(p, "seq"),
                  "phase", jph, "candidate", json_object_get(p, "candidate"), "outcome",
                  json_object_get(p, "outcome"), "gate", json_object_get(p, "gate"), "score",
                  json_object_get(p, "score"), "noise", json_object_get(p, "noise"), "evidence", p);
    if (!rec)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_ledger_tune_probe(&r->ledger, r->run_id, rec, e);
    json_decref(rec);
    return rc;
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void sw__tune_verdict_from_json(struct sw__tune_verdict *v, const json_t *p)
{
    const char *oc = json_string_value(json_object_get(p, "outcome"));
    v->outcome = oc ? SW__TUNE_OC_OTHER : SW__TUNE_OC_NONE;
    for (int i = SW__TUNE_OC_PLANNED; oc && i < SW__TUNE_OC_OTHER; i++)
        if (!strcmp(oc, sw__tune_outcome_name((enum sw__tune_outcome)i)))
            v->outcome = (enum sw__tune_outcome)i;
    v->score = num(p, "score");
    v->noise = num(p, "noise");
    v->gain = num(p, "gain");
    const json_t *d = json_object_get(p, "deploy");
    const char *doc = json_string_value(json_object_get(d, "outcome"));
    const char *tag = json_string_value(json_object_get(d, "tag"));
    v->deploy_tag[0] = '\0';
    if (doc && !strcmp(doc, "committed") && tag)
        snprintf(v->deploy_tag, sizeof(v->deploy_tag), "%s", tag);
}

int sw__tune_journal_finish(struct sw__tune_run *r, const json_t *rep, struct sw_err *e)
{
    if (!r->have_ledger || r->o->dry_run)
        return 0;
    /* an interrupted run, or one whose budget ran out, stays open: the next `tune` of the same
     * space resumes it (with a larger --budget-boots) */
    if (!strcmp(r->outcome, "interrupted") || !strcmp(r->outcome, "budget"))
        return 0;
    const json_t *apply = json_object_get(rep, "apply");
    json_t *res =
        json_pack("{s:O, s:O, s:O, s:O}", "winner", json_object_get(rep, "winner"), "apply",
                  apply ? apply : json_null(), "boots", json_object_get(rep, "boots"), "rejected",
                  json_object_get(rep, "rejected"));
    int rc = sw_ledger_tune_finish(&r->ledger, r->run_id, r->outcome, res, e);
    json_decref(res);
    return rc;
}
