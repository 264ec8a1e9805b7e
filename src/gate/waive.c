/*
 * gate/waive: waivers, the verdicts an operator accepts on purpose (the fleet's `waive:`), applied
 * to a gate run's results in ONE place (sw_gate_waive, called by sw_gate_endpoint), so that
 * check, render (systemd and Kubernetes), deploy/rollout, tune and report all read the same
 * "waived" verdict. A failing gate a waiver covers becomes "waived" with the waiver's reason and
 * date; the endpoint passes when every failure is waived. A waiver past its date, or one that
 * covers no failure (its gate passed, or does not run for this endpoint), is an error naming the
 * fleet line: a waiver outlives its reason silently otherwise.
 *
 * What it deliberately does not do: read the fleet file (fleet/waive.c decodes `waive:`), or
 * record what a deploy went through (the rollout writes the document's "waivers" to the ledger).
 */
#include "gate_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool is_day(const char *s)
{
    if (!s || strlen(s) != 10)
        return false;
    for (int i = 0; i < 10; i++)
        if (i == 4 || i == 7 ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
            return false;
    int m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
    return m >= 1 && m <= 12 && d >= 1 && d <= 31;
}

int sw_gate_today(const struct sw_gate_opts *o, char out[11], struct sw_err *e)
{
    const char *t = o && o->today ? o->today : getenv("SLIPWAY_TODAY");
    out[0] = '\0';
    if (t && *t) {
        if (!is_day(t))
            return sw_err_set(e, SW_EINVAL, "%s '%s' is not a day: write YYYY-MM-DD",
                              o && o->today ? "today" : "SLIPWAY_TODAY", t);
        memcpy(out, t, 11);
        return 0;
    }
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(out, 11, "%Y-%m-%d", &tm))
        return sw_err_set(e, SW_EIO, "the clock gives no date");
    return 0;
}

const struct sw_fleet_waiver *sw_gate_waiver(const struct sw_fleet_endpoint *ep, const char *gate,
                                             const json_t *result)
{
    const struct sw_fleet_waiver *any = NULL;
    json_int_t rule =
        json_integer_value(json_object_get(json_object_get(result, "numbers"), "rule_id"));
    if (!ep || !gate)
        return NULL;
    for (size_t i = 0; i < ep->n_waivers; i++) {
        const struct sw_fleet_waiver *w = &ep->waivers[i];
        if (strcmp(w->gate, gate))
            continue;
        if (w->rule && rule > 0 && w->rule == (uint64_t)rule)
            return w; /* the one rule named beats a waiver of the whole gate */
        if (!w->rule && !any)
            any = w;
    }
    return any;
}

bool sw_gate_verdict_blocks(const char *verdict)
{
    return verdict && !strcmp(verdict, "fail");
}

static json_t *waiver_json(const struct sw_fleet_waiver *w, const char *gate)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:i}", "gate", gate, "reason", w->reason, "until",
                          w->until, "file", w->at.file ? w->at.file : "", "line", w->at.line);
    if (j && w->rule)
        sw_json_set_int(j, "rule", (int64_t)w->rule);
    return j;
}

int sw_gate_waive(const struct sw_fleet_endpoint *ep, json_t *doc, const char *today, bool loose,
                  struct sw_err *e)
{
    json_t *gs = json_object_get(doc, "gates");
    size_t used[64] = {0};
    bool failed = false;
    json_t *applied = json_array();
    if (!applied)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    /* a waiver past its day is refused whatever the verdicts: the operator's acceptance ended */
    for (size_t i = 0; i < ep->n_waivers; i++) {
        const struct sw_fleet_waiver *w = &ep->waivers[i];
        if (today && strcmp(w->until, today) < 0) {
            json_decref(applied);
            return sw_fleet_err_at(e, SW_EINVAL, &w->at,
                                   "waiver for gate %s on %s expired on %s (today is %s): judge "
                                   "the shape again, then renew the waiver or remove it",
                                   w->gate, ep->name, w->until, today);
        }
    }
    for (size_t i = 0; i < json_array_size(gs); i++) {
        json_t *g = json_array_get(gs, i);
        const char *name = json_string_value(json_object_get(g, "gate"));
        if (!sw_gate_verdict_blocks(json_string_value(json_object_get(g, "verdict"))))
            continue;
        const struct sw_fleet_waiver *w = sw_gate_waiver(ep, name, g);
        if (!w) {
            failed = true;
            continue;
        }
        size_t wi = (size_t)(w - ep->waivers);
        json_t *wj = waiver_json(w, name);
        if (!wj || sw_json_set_str(g, "verdict", sw_gate_verdict_name(SW_GATE_WAIVED)) ||
            sw_json_set_new(g, "waiver", wj)) {
            json_decref(applied);
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        }
        if (wi < SW_ARRAY_LEN(used) && used[wi]++)
            continue; /* one entry per waiver in "waivers", however many results it covers */
        json_array_append(applied, wj);
    }
    for (size_t i = 0; !loose && i < ep->n_waivers && i < SW_ARRAY_LEN(used); i++) {
        if (used[i])
            continue;
        const struct sw_fleet_waiver *w = &ep->waivers[i];
        char rule[48] = "";
        if (w->rule)
            snprintf(rule, sizeof(rule), " (ledger rule #%llu)", (unsigned long long)w->rule);
        json_decref(applied);
        return sw_fleet_err_at(e, SW_EINVAL, &w->at,
                               "waiver for gate %s%s on %s matches nothing (the gate %s): remove "
                               "it",
                               w->gate, rule, ep->name,
                               w->rule ? "has no failure of that rule" : "passed or does not run");
    }
    if (sw_json_set_str(doc, "verdict", failed ? "fail" : "pass") ||
        sw_json_set_new(doc, "waivers", applied))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return 0;
}
