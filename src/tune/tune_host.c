/*
 * Where a rollout tune run leaves the host (docs/tune.md "Where the host is left"): on a shape a
 * probe committed, the chosen one: the crowned winner's (its re-measure is the last deploy),
 * else the baseline's (its latest committed deploy). When the last committed deploy was another
 * candidate's, that shape's saved set is put back (sw_rollout_rollback to its tag); an
 * interrupted run puts nothing back. The report's "host": {tag, shape: crowned | baseline |
 * last_committed, restored, why}.
 *
 * What it deliberately does not do: deploy the chosen shape anew, or edit the fleet file
 * (`--apply`, tune_apply.c).
 */
#include "tune_run_internal.h"

#include <slipway/rollout.h>

#include <string.h>

/* The tag of v's committed deploy, or NULL. */
static const char *committed_tag(const struct sw__tune_verdict *v)
{
    return v && v->deploy_tag[0] ? v->deploy_tag : NULL;
}

void sw__tune_settle_host(struct sw__tune_run *r, json_t *rep)
{
    const char *last = NULL, *base = NULL, *want = NULL, *shape = "baseline";
    for (size_t i = 0; i < r->nverdicts; i++) {
        const char *t = committed_tag(r->verdicts[i]);
        if (!t)
            continue;
        last = t;
        if (!r->verdicts[i]->c.n)
            base = t;
    }
    const char *oc = r->outcome;
    if (oc && !strcmp(oc, "crowned") && r->winner) {
        want = committed_tag(r->winner_again);
        if (!want)
            want = committed_tag(r->winner);
        shape = "crowned";
    } else {
        want = base;
    }
    json_t *h = json_object();
    if (!h)
        return;
    if (!want) {
        want = last;
        shape = "last_committed";
    }
    json_object_set_new(h, "shape", json_string(shape));
    json_object_set_new(h, "tag", want ? json_string(want) : json_null());
    json_object_set_new(h, "restored", json_false());
    if (want && last && strcmp(want, last) && oc && !strcmp(oc, "interrupted")) {
        /* stopped by the operator: no further deploy; the host stays as the last one left it */
        json_object_set_new(h, "shape", json_string("last_committed"));
        json_object_set_new(h, "tag", json_string(last));
        json_object_set_new(h, "why", json_string("interrupted: not put back"));
    } else if (want && last && strcmp(want, last)) {
        struct sw_rollout_opts ro;
        struct sw_rollout_result rr;
        struct sw_err e;
        memset(&ro, 0, sizeof(ro));
        sw_err_clear(&e);
        ro.ledger = r->have_ledger ? &r->ledger : NULL;
        ro.record = r->have_ledger;
        ro.to_tag = want;
        ro.note = "slipway tune: back to the chosen shape";
        sw__tune_note(r, "host %s: putting back %s (%s) over %s", r->base->host->name, want, shape,
                      last);
        int rc = sw_rollout_rollback(r->base_f, r->base, &ro, &rr, &e);
        if (rc)
            json_object_set_new(h, "why", json_string(e.msg));
        else if (rr.outcome != SW_ROLLOUT_RESTORED)
            json_object_set_new(h, "why",
                                json_sprintf("%s (%s): %s", sw_rollout_outcome_name(rr.outcome),
                                             rr.fail_class, rr.fail_msg));
        else
            json_object_set_new(h, "restored", json_true());
        if (rc || rr.outcome != SW_ROLLOUT_RESTORED) {
            /* still on the last committed shape (or what the rollback left) */
            json_object_set_new(h, "shape", json_string("last_committed"));
            json_object_set_new(h, "tag", json_string(last));
        }
        sw_rollout_result_free(&rr);
    }
    json_object_set_new(rep, "host", h);
}
