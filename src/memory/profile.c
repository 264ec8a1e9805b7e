/*
 * memory/profile: fork profiles (declared terms on top of a known law), and the expert-offload
 * arena of the operator's vLLM fork. See include/slipway/profile.h for the arithmetic.
 *
 * What it does not do: fit constants (calibration reads the ledger), or know any fork by name.
 */
#include <slipway/profile.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "31.86 GiB", "2.34375MiB", "9190", 6.1e9 -> bytes rounded to the nearest byte. */
static int bytes_of(json_t *v, const char *where, const char *key, double *out, struct sw_err *e)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s: expected a number or \"N unit\"", key);
    const char *s = json_string_value(v);
    char *end;
    double d = strtod(s, &end);
    if (end == s)
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s: \"%s\" is not a size", key, s);
    while (*end == ' ')
        end++;
    static const struct {
        const char *u;
        double m;
    } units[] = {
        {"", 1},     {"B", 1},    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
    for (size_t i = 0; i < SW_ARRAY_LEN(units); i++)
        if (!strcmp(end, units[i].u)) {
            *out = d * units[i].m;
            return 0;
        }
    return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s: unknown unit \"%s\"", key, end);
}

int sw_profile_parse(const char *text, size_t len, const char *where, struct sw_fork_profile *p,
                     struct sw_err *e)
{
    int rc = 0;
    memset(p, 0, sizeof(*p));
    p->overhead_per = 1024;
    json_t *j = sw_json_parse(text, len, where, e);
    if (!j)
        return e ? e->code : SW_EPARSE;
    if (!json_is_object(j)) {
        rc = sw_err_at(e, SW_EPARSE, where, 1, 1, "a profile is a JSON object");
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        if (!strcmp(k, "name") && json_is_string(v))
            snprintf(p->name, sizeof(p->name), "%s", json_string_value(v));
        else if (!strcmp(k, "extends") && json_is_string(v)) {
            snprintf(p->extends, sizeof(p->extends), "%s", json_string_value(v));
            if (strcasecmp(p->extends, "vllm")) {
                rc = sw_err_at(e, SW_EUNSUPPORTED, where, 0, 0,
                               "extends: only \"vllm\" profiles exist (got \"%s\")", p->extends);
                goto out;
            }
        } else if (!strcmp(k, "kv") && json_is_object(v)) {
            const char *kk;
            json_t *vv;
            json_object_foreach(v, kk, vv)
            {
                double d;
                rc = bytes_of(vv, where, kk, &d, e);
                if (rc)
                    goto out;
                if (!strcmp(kk, "extra_attn_bytes_per_token"))
                    p->extra_attn_bytes_per_token = (int64_t)d;
                else if (!strcmp(kk, "extra_mamba_blocks"))
                    p->extra_mamba_blocks = (int64_t)d;
                else {
                    rc = sw_err_at(e, SW_EPARSE, where, 0, 0, "kv.%s: unknown term", kk);
                    goto out;
                }
            }
        } else if (!strcmp(k, "arena") && json_is_object(v)) {
            p->has_arena = true;
            const char *kk;
            json_t *vv;
            json_object_foreach(v, kk, vv)
            {
                if (!strcmp(kk, "subtract_graphs")) {
                    p->subtract_graphs = json_is_true(vv);
                    continue;
                }
                double d;
                rc = bytes_of(vv, where, kk, &d, e);
                if (rc)
                    goto out;
                uint64_t u = d > 0 ? (uint64_t)llround(d) : 0;
                if (!strcmp(kk, "usable"))
                    p->usable = u;
                else if (!strcmp(kk, "weights"))
                    p->weights = u;
                else if (!strcmp(kk, "non_torch"))
                    p->non_torch = u;
                else if (!strcmp(kk, "graphs"))
                    p->graphs = u;
                else if (!strcmp(kk, "overhead"))
                    p->overhead = u;
                else if (!strcmp(kk, "overhead_step"))
                    p->overhead_step = u;
                else if (!strcmp(kk, "overhead_threshold"))
                    p->overhead_threshold = (int64_t)d;
                else if (!strcmp(kk, "overhead_per"))
                    p->overhead_per = (int64_t)d;
                else if (!strcmp(kk, "reserve_per_token"))
                    p->reserve_per_token = d;
                else if (!strcmp(kk, "adjust"))
                    p->adjust = (int64_t)llround(d);
                else if (!strcmp(kk, "slot"))
                    p->slot = u;
                else if (!strcmp(kk, "overhead_precise"))
                    p->overhead_precise = u;
                else if (!strcmp(kk, "utilization"))
                    p->utilization = d;
                else {
                    rc = sw_err_at(e, SW_EPARSE, where, 0, 0, "arena.%s: unknown term", kk);
                    goto out;
                }
            }
            if (!p->slot || !p->usable) {
                rc = sw_err_at(e, SW_EPARSE, where, 0, 0, "arena needs at least usable and slot");
                goto out;
            }
            if (p->overhead_per <= 0) {
                rc = sw_err_at(e, SW_ERANGE, where, 0, 0, "arena.overhead_per must be > 0");
                goto out;
            }
        } else {
            rc = sw_err_at(e, SW_EPARSE, where, 0, 0, "%s: unknown key or wrong type", k);
            goto out;
        }
    }
out:
    json_decref(j);
    return rc;
}

void sw_profile_apply_vllm(const struct sw_fork_profile *p, struct sw_vllm_opts *o)
{
    o->extra_attn_bytes_per_token = p->extra_attn_bytes_per_token;
    o->extra_mamba_blocks = p->extra_mamba_blocks;
}

int sw_profile_arena(const struct sw_fork_profile *p, int64_t L, int64_t mnbt, struct sw_arena *a,
                     struct sw_err *e)
{
    memset(a, 0, sizeof(*a));
    if (!p->has_arena)
        return sw_err_set(e, SW_EINVAL, "profile %s declares no arena", p->name);
    uint64_t over = p->overhead;
    if (mnbt > p->overhead_threshold && p->overhead_step)
        over += p->overhead_step *
                (uint64_t)((mnbt - p->overhead_threshold + p->overhead_per - 1) / p->overhead_per);
    double reserve = p->reserve_per_token * (double)L;
    double arena = (double)p->usable - (double)p->weights - (double)p->non_torch -
                   (p->subtract_graphs ? (double)p->graphs : 0) - (double)over - reserve +
                   (double)p->adjust;
    a->overhead_bytes = over;
    a->reserve_bytes = (uint64_t)reserve;
    a->arena_bytes = (int64_t)floor(arena);
    a->slots = arena > 0 ? (int64_t)floor(arena / (double)p->slot) : 0;
    return 0;
}

void sw_profile_arena_json(const struct sw_fork_profile *p, int64_t max_model_len, int64_t mnbt,
                           json_t *out)
{
    struct sw_arena a;
    if (sw_profile_arena(p, max_model_len, mnbt, &a, NULL))
        return;
    json_t *j = json_object();
    sw_json_set_str(j, "profile", p->name);
    sw_json_set_int(j, "arena_bytes", a.arena_bytes);
    sw_json_set_int(j, "slots", a.slots);
    sw_json_set_int(j, "reserve_bytes", (int64_t)a.reserve_bytes);
    sw_json_set_int(j, "overhead_bytes", (int64_t)a.overhead_bytes);
    sw_json_set_new(out, "arena", j);
}

double sw_headroom_seq_units(const struct sw_headroom_shape *s)
{
    return (double)SW_MAX(s->seqs, 1) * (1.0 + (double)SW_MAX(s->spec_tokens, 0));
}

int sw_profile_headroom(const struct sw_fork_profile *p, const struct sw_headroom_shape *s,
                        struct sw_headroom_budget *out, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    if (!p->has_arena)
        return sw_err_set(e, SW_EINVAL, "profile %s declares no arena", p->name);
    if (s->precise && !p->overhead_precise)
        return sw_err_set(e, SW_EINVAL,
                          "profile %s: --expert-precise-memory needs the constant "
                          "overhead_precise (the fitted overhead it selects)",
                          p->name);
    struct sw_fork_profile q = *p;
    if (s->precise)
        q.overhead = p->overhead_precise;
    int rc = sw_profile_arena(&q, s->max_model_len, s->mnbt, &out->arena, e);
    if (rc)
        return rc;
    /* the arena is sized from usable x utilization: another utilization than the profile's
     * moves it by the difference (the seed: util 0.90 "returns ~2.5 GiB/rank of workspace") */
    if (p->utilization > 0 && s->util > 0 && s->util != p->utilization) {
        double shift = (s->util - p->utilization) * (double)p->usable;
        out->util_shift = (int64_t)llround(shift);
        double arena = (double)out->arena.arena_bytes + shift;
        out->arena.arena_bytes = (int64_t)floor(arena);
        out->arena.slots = arena > 0 ? (int64_t)floor(arena / (double)p->slot) : 0;
    }
    out->overhead = out->arena.overhead_bytes;
    out->weights = p->weights;
    out->non_torch = p->non_torch;
    out->graphs = p->graphs;
    out->pool = s->pool;
    out->usable = p->usable;
    out->free_kv = (double)p->usable - (double)p->weights - (double)p->non_torch -
                   (double)out->arena.arena_bytes;
    out->resident = (double)p->weights + (double)p->non_torch + (double)out->arena.arena_bytes +
                    (double)s->pool + (double)p->graphs;
    out->free_capture = (double)p->usable - out->resident;
    return 0;
}
