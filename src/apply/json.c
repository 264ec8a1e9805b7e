/*
 * apply/json: the survey and the run as one JSON document (sw_apply_survey_json), by host.
 *
 * What it deliberately does not do: print (the CLI does), or hold a secret (the changes come
 * from the drift with secret values already as ***).
 */
#include "apply_internal.h"

#include <string.h>

static json_t *item_json(const struct sw_apply_item *it, bool ran)
{
    json_t *o = json_object(), *cl = json_array();
    if (!o || !cl) {
        json_decref(o);
        json_decref(cl);
        return NULL;
    }
    int bad = 0;
    bad |= sw_json_set_str(o, "endpoint", it->ep->name);
    bad |= sw_json_set_str(o, "action", sw_apply_action_name(it->action));
    bad |= sw_json_set_str(o, "why", it->why);
    bad |= json_object_set(o, "changes", it->changes ? it->changes : json_null()) != 0;
    bad |= json_object_set(o, "missing", it->missing ? it->missing : json_null()) != 0;
    bad |= sw_json_set_str(o, "unit", it->unit);
    bad |= sw_json_set_str(o, "active", it->active);
    bad |= sw_json_set_int(o, "main_pid", it->main_pid);
    bad |= sw_json_set_int(o, "restarts", (int64_t)it->n_restarts);
    for (size_t c = 0; c < it->n_claims; c++) {
        json_t *x = json_pack("{s:s,s:f,s:s}", "device", it->claims[c].dev->name, "bytes",
                              it->claims[c].bytes, "how", it->claims[c].how);
        bad |= !x || json_array_append_new(cl, x);
    }
    bad |= sw_json_set_new(o, "claims", cl);
    if (it->plan_why[0])
        bad |= sw_json_set_str(o, "plan", it->plan_why);
    if (it->refused) {
        bad |= sw_json_set_bool(o, "refused", true);
        bad |= sw_json_set_str(o, "refused_why", it->refused_why);
    }
    if (ran) {
        bad |= sw_json_set_str(o, "outcome", sw_apply_outcome_name(it->outcome));
        bad |= sw_json_set_str(o, "outcome_why", it->outcome_why);
        if (it->tag[0])
            bad |= sw_json_set_str(o, "tag", it->tag);
        if (it->attempt)
            bad |= sw_json_set_int(o, "attempt", it->attempt);
        bad |= sw_json_set_bool(o, "restarted", it->restarted);
        bad |= sw_json_set_real(o, "seconds", it->seconds);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sw_apply_survey_json(const struct sw_apply_survey *s, bool ran)
{
    json_t *doc = json_object(), *hosts = json_array(), *counts = json_object(),
           *outs = json_object();
    int bad = !doc || !hosts || !counts || !outs;
    for (size_t h = 0; !bad && h < s->n_hosts; h++) {
        const struct sw_apply_host *hr = &s->hosts[h];
        json_t *ho = json_object(), *eps = json_array();
        bad |= !ho || !eps;
        bad |= sw_json_set_str(ho, "host", hr->fh->name);
        bad |= sw_json_set_str(ho, "transport", hr->transport);
        bad |= sw_json_set_bool(ho, "reached", hr->reached);
        if (hr->err[0])
            bad |= sw_json_set_str(ho, "error", hr->err);
        bad |= sw_json_set_real(ho, "seconds", hr->seconds);
        for (size_t i = 0; !bad && i < s->n; i++) {
            if (s->items[i].host != h)
                continue;
            json_t *x = item_json(&s->items[i], ran);
            bad |= !x || json_array_append_new(eps, x);
        }
        bad |= sw_json_set_new(ho, "endpoints", eps);
        bad |= json_array_append_new(hosts, ho);
    }
    size_t a[8], oc[8];
    sw_apply_count(s, a, oc);
    for (int k = SW_APPLY_UNCHANGED; !bad && k <= SW_APPLY_ABSENT; k++)
        bad |=
            sw_json_set_int(counts, sw_apply_action_name((enum sw_apply_action)k), (int64_t)a[k]);
    for (int k = SW_APPLY_LEFT; ran && !bad && k <= SW_APPLY_NOT_ATTEMPTED; k++)
        bad |=
            sw_json_set_int(outs, sw_apply_outcome_name((enum sw_apply_outcome)k), (int64_t)oc[k]);
    if (!bad) {
        bad |= sw_json_set_new(doc, "hosts", hosts);
        hosts = NULL;
        bad |= s->refusals ? json_object_set(doc, "refusals", s->refusals) != 0
                           : sw_json_set_new(doc, "refusals", json_array());
        bad |= sw_json_set_new(doc, "counts", counts);
        counts = NULL;
        if (ran) {
            bad |= sw_json_set_new(doc, "outcomes", outs);
            outs = NULL;
        }
        bad |= sw_json_set_real(doc, "seconds", s->seconds);
    }
    json_decref(hosts);
    json_decref(counts);
    json_decref(outs);
    if (bad) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}
