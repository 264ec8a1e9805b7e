/*
 * memory/profile_fleet: a fleet file's engine profile (named constants, optional raw terms) as a
 * fork profile, shared by plan and calib. An endpoint's shape and devices as the laws' inputs are
 * plan/inputs.c's.
 *
 * What it does not do: load the fleet (fleet/), or read the payload (the caller loads the
 * config.json it can reach, or the endpoint's declared architecture).
 */
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/memory.h>
#include <slipway/profile.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sw_profile_from_fleet(const struct sw_fleet_profile *fp, struct sw_fork_profile *p,
                          struct sw_err *e)
{
    memset(p, 0, sizeof(*p));
    p->overhead_per = 1024;
    if (fp->terms) {
        char *t = sw_json_dumps(fp->terms, JSON_COMPACT);
        if (!t)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        int rc = sw_profile_parse(t, strlen(t), fp->at.file ? fp->at.file : "profile", p, e);
        sw_free(t);
        if (rc)
            return rc;
    }
    snprintf(p->name, sizeof(p->name), "%s", fp->name);
    snprintf(p->extends, sizeof(p->extends), "vllm");
    for (size_t i = 0; i < fp->n_consts; i++) {
        const struct sw_fleet_const *c = &fp->consts[i];
        double v = c->q.value;
        uint64_t u = v > 0 ? (uint64_t)llround(v) : 0;
        const char *n = c->name;
        bool arena = true;
        if (!strcmp(n, "usable"))
            p->usable = u;
        else if (!strcmp(n, "weights"))
            p->weights = u;
        else if (!strcmp(n, "non_torch"))
            p->non_torch = u;
        else if (!strcmp(n, "graphs"))
            p->graphs = u;
        else if (!strcmp(n, "overhead"))
            p->overhead = u;
        else if (!strcmp(n, "overhead_step"))
            p->overhead_step = u;
        else if (!strcmp(n, "overhead_per"))
            p->overhead_per = (int64_t)u;
        else if (!strcmp(n, "overhead_threshold"))
            p->overhead_threshold = (int64_t)u;
        else if (!strcmp(n, "reserve_per_token"))
            p->reserve_per_token = v;
        else if (!strcmp(n, "slot"))
            p->slot = u;
        else if (!strcmp(n, "adjust"))
            p->adjust = (int64_t)llround(v);
        else if (!strcmp(n, "extra_attn_bytes_per_token"))
            p->extra_attn_bytes_per_token = (int64_t)u, arena = false;
        else if (!strcmp(n, "extra_mamba_blocks"))
            p->extra_mamba_blocks = (int64_t)u, arena = false;
        else if (!strcmp(n, "overhead_precise"))
            p->overhead_precise = u, arena = false; /* --expert-precise-memory's, not the default */
        else if (!strcmp(n, "utilization"))
            p->utilization = v, arena = false;
        else
            return sw_fleet_err_at(e, SW_EPARSE, &c->at,
                                   "profile %s: constant %s is not a term of the vLLM fork law "
                                   "(memory/profile.h)",
                                   fp->name, n);
        if (arena)
            p->has_arena = true;
    }
    if (p->has_arena && (!p->usable || !p->slot))
        return sw_fleet_err_at(e, SW_EPARSE, &fp->at,
                               "profile %s: an arena needs at least usable and slot", fp->name);
    if (p->overhead_per <= 0)
        return sw_fleet_err_at(e, SW_ERANGE, &fp->at, "profile %s: overhead_per must be > 0",
                               fp->name);
    return 0;
}
