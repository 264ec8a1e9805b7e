/*
 * gate/arena: the fork's expert arena (fork profiles that declare one, memory/profile): the arena
 * and its slots at this max_model_len and MNBT, as the plan view holds it; what one step of the
 * max_model_len knob buys; and, when a --set moved the pool alone, that a pool cut buys no arena
 * (the fork reserves max_model_len x its registry price, not kv_cache_bytes). Fails when no slot
 * is left.
 *
 * What it deliberately does not do: judge the pool (pool.c) or free memory at capture
 * (headroom.c), or fit the arena's constants (calib).
 */
#include "gate_internal.h"

int sw__gate_arena(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_plan_view *p = &r->plan;
    const struct sw_fleet_shape *s = &r->ep->shape;
    char a[64], b[64], c[64], d[64], x[64], t[3][48];
    struct sw_arena ar, ar0, cut;
    (void)e;
    if (!p->ok || !p->has_arena)
        return 0; /* only fork profiles with an expert arena have this gate */
    int64_t L = (int64_t)p->maxlen;
    int64_t mnbt = p->mnbt;
    ar = p->arena;
    bool ok = ar.slots > 0;
    json_t *g = sw__gate_add(
        r, "arena", ok ? SW_GATE_PASS : SW_GATE_FAIL,
        "expert arena %s = %s slots of %s at max_model_len %s (reserve %.0f B/token x %s = %s, "
        "overhead %s at MNBT %s; profile %s); kv_cache_bytes does not enter it",
        sw__gate_gib((double)ar.arena_bytes, a, sizeof(a)),
        sw_fmt_count((uint64_t)SW_MAX(ar.slots, 0), b, sizeof(b)),
        sw__gate_mib((double)p->prof.slot, c, sizeof(c)), sw_fmt_count((uint64_t)L, d, sizeof(d)),
        p->prof.reserve_per_token, sw_fmt_count((uint64_t)L, x, sizeof(x)),
        sw__gate_gib((double)ar.reserve_bytes, t[0], 48),
        sw__gate_gib((double)ar.overhead_bytes, t[1], 48), sw_fmt_count((uint64_t)mnbt, t[2], 48),
        p->prof.name);
    sw__gate_num(g, "arena_bytes", (double)ar.arena_bytes);
    sw__gate_num(g, "slots", (double)ar.slots);
    sw__gate_num(g, "reserve_bytes", (double)ar.reserve_bytes);
    sw__gate_num(g, "overhead_bytes", (double)ar.overhead_bytes);
    /* What a MAXLEN cut buys, by the same law: one knob step (or 16,384 tokens). */
    const struct sw_fleet_knob *k = sw_fleet_endpoint_knob(r->ep, "max_model_len");
    int64_t step = k && k->is_range && k->step.set && k->step.u ? (int64_t)k->step.u : 16384;
    if (L > step && sw_profile_arena(&p->prof, L - step, mnbt, &cut, NULL) == 0) {
        sw__gate_num(g, "slots_per_maxlen_step", (double)(cut.slots - ar.slots));
        sw__gate_num(g, "maxlen_step", (double)step);
    }
    const struct sw_fleet_shape *b0 = r->o ? r->o->before : NULL;
    if (b0 && b0->kv_cache_bytes.set != s->kv_cache_bytes.set
            ? true
            : (b0 && b0->kv_cache_bytes.v != s->kv_cache_bytes.v)) {
        int64_t L0 = b0->max_model_len.set ? (int64_t)b0->max_model_len.v : L;
        int64_t m0 = b0->max_num_batched_tokens.set ? (int64_t)b0->max_num_batched_tokens.v : 0;
        if (sw_profile_arena(&p->prof, L0, m0, &ar0, NULL) == 0 && L0 == L && m0 == mnbt)
            sw__gate_evidence(
                g, json_pack("{s:s}", "note",
                             "the pool moved and max_model_len did not: a pool cut buys no "
                             "arena (the fork reserves max_model_len x its registry price, "
                             "not kv_cache_bytes); cut max_model_len to grow the arena"));
    }
    if (L > step && json_object_get(json_object_get(g, "numbers"), "slots_per_maxlen_step")) {
        char note[512];
        snprintf(note, sizeof(note),
                 "a pool cut that does not move max_model_len buys no arena; a max_model_len cut "
                 "of %s tokens buys %lld slots (%s)",
                 sw_fmt_count((uint64_t)step, a, sizeof(a)), (long long)(cut.slots - ar.slots),
                 sw__gate_mib((double)(cut.arena_bytes - ar.arena_bytes), b, sizeof(b)));
        sw__gate_evidence(g, json_pack("{s:s}", "note", note));
    }
    if (!ok)
        sw__gate_fix(g, "cut max_model_len: each %s tokens return %s of arena",
                     sw_fmt_count((uint64_t)step, a, sizeof(a)),
                     sw__gate_mib(p->prof.reserve_per_token * (double)step, b, sizeof(b)));
    return 0;
}
