/*
 * rollout/result: what a deploy or a rollback leaves for its caller: the outcome's name, the
 * result as JSON, what the battery said of the worst case, and the result freed.
 *
 * What it does not do: print (the CLI does), or read the host again.
 */
#include <slipway/rollout.h>

#include <string.h>

static const char *const outcome_names[] = {
    "none",        "committed",       "dry_run",  "gate_failed", "refused",
    "rolled_back", "rollback_failed", "restored", "interrupted",
};

const char *sw_rollout_outcome_name(enum sw_rollout_outcome o)
{
    if ((unsigned)o >= SW_ARRAY_LEN(outcome_names))
        return "?";
    return outcome_names[o];
}

void sw_rollout_result_free(struct sw_rollout_result *r)
{
    if (!r)
        return;
    json_decref(r->steps);
    json_decref(r->gates);
    json_decref(r->probe);
    json_decref(r->boot);
    json_decref(r->diff);
    sw_free(r->journal);
    memset(r, 0, sizeof(*r));
}

int sw_rollout_survives_worst_case(const struct sw_rollout_result *r)
{
    if (!strcmp(r->fail_class, "runtime_oom") || !strcmp(r->fail_class, "probe:worst_case"))
        return 0;
    const json_t *checks = json_object_get(r->probe, "checks");
    for (size_t i = 0; i < json_array_size(checks); i++) {
        const json_t *ck = json_array_get(checks, i);
        const char *name = json_string_value(json_object_get(ck, "name"));
        if (!name || strcmp(name, "worst_case"))
            continue;
        const char *st = json_string_value(json_object_get(ck, "status"));
        if (st && !strcmp(st, "pass"))
            return 1;
        if (st && !strcmp(st, "fail"))
            return 0;
    }
    return -1;
}

json_t *sw_rollout_result_json(const struct sw_rollout_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = sw_json_set_str(o, "endpoint", r->endpoint);
    rc = rc ? rc : sw_json_set_str(o, "unit", r->unit);
    rc = rc ? rc : sw_json_set_str(o, "outcome", sw_rollout_outcome_name(r->outcome));
    rc = rc ? rc : sw_json_set_str(o, "failed_step", r->failed_step);
    rc = rc ? rc : sw_json_set_str(o, "fail_class", r->fail_class);
    rc = rc ? rc : sw_json_set_str(o, "fail_msg", r->fail_msg);
    rc = rc ? rc : sw_json_set_str(o, "rollback", r->rollback_msg);
    rc = rc ? rc : sw_json_set_str(o, "tag", r->tag);
    rc = rc ? rc : sw_json_set_int(o, "attempt", r->attempt);
    rc = rc ? rc : sw_json_set_int(o, "rule_id", r->rule_id);
    rc = rc ? rc : sw_json_set_str(o, "ledger_error", r->ledger_msg);
    rc = rc ? rc : sw_json_set_bool(o, "had_rollback_set", r->had_rollback_set);
    rc = rc ? rc : sw_json_set_bool(o, "stopped", r->stopped);
    rc = rc ? rc : sw_json_set_bool(o, "serving", r->serving);
    if (!rc)
        rc = r->downtime_ms >= 0 ? sw_json_set_int(o, "downtime_ms", r->downtime_ms)
                                 : sw_json_set_new(o, "downtime_ms", json_null());
    rc = rc ? rc : sw_json_set_new(o, "steps", r->steps ? json_incref(r->steps) : json_array());
    rc = rc ? rc : sw_json_set_new(o, "gates", r->gates ? json_incref(r->gates) : json_null());
    rc = rc ? rc : sw_json_set_new(o, "boot", r->boot ? json_incref(r->boot) : json_null());
    rc = rc ? rc : sw_json_set_new(o, "probe", r->probe ? json_incref(r->probe) : json_null());
    rc = rc ? rc : sw_json_set_new(o, "diff", r->diff ? json_incref(r->diff) : json_null());
    if (!rc)
        rc = r->journal ? sw_json_set_str(o, "journal", r->journal)
                        : sw_json_set_new(o, "journal", json_null());
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}
