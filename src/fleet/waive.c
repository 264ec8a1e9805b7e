/*
 * Waivers and the declared contract of an endpoint: `waive: [{gate, reason, until, rule?}]` (a
 * failing verdict the operator accepts on purpose, until a date) and `contract: {full_length: N}`
 * (how many full-length requests the pool must hold at once). Each entry keeps its position so
 * the gate that applies it can name the fleet line.
 *
 * What it deliberately does not do: decide whether a waiver applies, has expired or matches
 * nothing (gate/waive.c does, against the day and the verdicts), or check the contract against
 * the pool (gate/pool.c).
 */
#include "fleet_internal.h"

#include <string.h>

const char *const sw_fleet_gate_names[] = {
    "band", "pool", "arena", "headroom", "window", "known_bad", "payload", "unit", "patches", NULL,
};

static const char *const waiver_keys[] = {"gate", "reason", "until", "rule"};

static int dec_waiver(struct sw__fleet_ctx *c, const struct sw__fleet_node *m, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    struct sw_fleet_waiver *w = &ep->waivers[ep->n_waivers];
    int rc = 0;
    memset(w, 0, sizeof(*w));
    w->at = sw__fleet_at(m);
    sw__fleet_record(c, m);
    if (m->kind != SW__FLN_MAP)
        return sw__fleet_errp(c, m, "must be {gate, reason, until} (rule: for a known_bad rule)");
    for (size_t k = 0; k < m->n && !c->oom; k++) {
        const struct sw__fleet_node *kn = m->kids[2 * k], *vn = m->kids[2 * k + 1];
        size_t q = 0;
        while (q < SW_ARRAY_LEN(waiver_keys) && strcmp(kn->text, waiver_keys[q]))
            q++;
        if (q == SW_ARRAY_LEN(waiver_keys)) {
            rc = sw__fleet_unknown_key(c, kn, "waiver", waiver_keys, SW_ARRAY_LEN(waiver_keys));
            continue;
        }
        size_t saved = sw__fleet_path_push(c, waiver_keys[q]);
        int r = 0;
        if (q == 0) {
            struct sw_fleet_str s = {0};
            struct sw__fleet_spec sp = SW__SPEC(SW__FT_WORD);
            r = sw__fleet_dec_str(c, vn, &sp, &s);
            if (!r && s.v) {
                size_t g = 0;
                while (sw_fleet_gate_names[g] && strcmp(sw_fleet_gate_names[g], s.v))
                    g++;
                if (sw_fleet_gate_names[g]) {
                    w->gate = sw_fleet_gate_names[g];
                } else {
                    const char *near = sw__fleet_suggest(s.v, sw_fleet_gate_names, g);
                    r = sw__fleet_errp(c, vn,
                                       "'%s' is not a gate%s%s%s (band, pool, arena, headroom, "
                                       "window, known_bad, payload, unit, patches)",
                                       s.v, near ? ": did you mean '" : "", near ? near : "",
                                       near ? "'?" : "");
                }
            }
        } else if (q == 1) {
            r = sw__fleet_dec_text(c, vn, &w->reason);
        } else if (q == 2) {
            r = sw__fleet_dec_date(c, vn, &w->until);
            if (!r && w->until && strlen(w->until) != 10)
                r = sw__fleet_errp(c, vn, "'%s' must be a day, YYYY-MM-DD", w->until);
        } else {
            struct sw_fleet_u64 u = {0};
            struct sw__fleet_spec sp = SW__SPECN(SW__FT_COUNT, 1, INT64_MAX);
            r = sw__fleet_dec_u64(c, vn, &sp, &u);
            w->rule = u.set ? u.v : 0;
        }
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    if (rc)
        return rc;
    if (!w->gate || !w->reason || !w->until)
        return sw__fleet_errp(c, m,
                              "needs gate, reason and until (a waiver without a reason or an "
                              "end is a gate switched off)");
    if (w->rule && strcmp(w->gate, "known_bad"))
        return sw__fleet_errp(c, m, "rule: narrows a known_bad waiver; gate is '%s'", w->gate);
    for (size_t i = 0; i < ep->n_waivers; i++)
        if (!strcmp(ep->waivers[i].gate, w->gate) && ep->waivers[i].rule == w->rule)
            return sw__fleet_errp(c, m, "waives gate %s again (already at line %d)", w->gate,
                                  ep->waivers[i].at.line);
    ep->n_waivers++;
    return 0;
}

int sw__fleet_ep_waive(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    if (v->kind == SW__FLN_MAP) /* one waiver without brackets */
        return sw__fleet_errp(c, v, "must be a list: waive: [{gate, reason, until}]");
    if (v->kind == SW__FLN_SEQ && v->n > 64)
        return sw__fleet_errp(c, v, "has %zu waivers: at most 64", v->n);
    return sw__fleet_seq_into(c, v, &ep->waivers, sizeof(*ep->waivers), dec_waiver, ep);
}

int sw__fleet_ep_contract(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d)
{
    struct sw_fleet_contract *k = &((struct sw_fleet_endpoint *)obj)->contract;
    static const struct sw__fleet_fdef defs[] = {
        {"full_length",
         {0},
         sw__fleet_dec_u64f,
         SW__SPECN(SW__FT_COUNT, 1, 1u << 20),
         offsetof(struct sw_fleet_contract, full_length)},
    };
    (void)d;
    k->at = sw__fleet_at(v);
    int rc = sw__fleet_dec_map(c, v, k, defs, SW_ARRAY_LEN(defs), "contract");
    if (!rc && !k->full_length.set)
        rc = sw__fleet_errp(c, v,
                            "needs full_length: the requests of max_model_len that must fit "
                            "at once");
    return rc;
}
