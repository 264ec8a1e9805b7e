/*
 * ladder: the run (include/slipway/ladder.h; docs/ladder.md). One knob, a grid of the engine's
 * granularity, two proven bounds (largest value that passed, smallest that failed by size), a
 * prediction recalibrated by every boot, and the ledger as the run's memory: every rung is
 * written as soon as it is known, and a run of the same label starts from what its rungs proved.
 * A rung is refused without a boot when the gates already know it fails (known_bad, a pinned
 * pool that cannot hold the contract); otherwise the runner boots it.
 *
 * The rooms: the names (ladder_names.c), the grid and bounds (ladder_bounds.c), the prediction
 * (ladder_law.c), the ledger (ladder_journal.c), the result's JSON and table (ladder_report.c).
 * The runners (how one rung boots) are in ladder_run.c; this file never boots anything itself.
 */
#include <slipway/deploy.h>
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ladder.h>

#include "ladder_internal.h"

#include <inttypes.h>
#include <string.h>

/*
 * check: the gates that predict a failure of this very value (known_bad: a shape or rule the
 * ledger or the fleet says failed; pool: a pinned pool cannot hold the contract). The band
 * gate's free-memory target is not the ladder's question, and an engine-sized pool's estimate
 * is a prediction the boot settles, not a refusal. why "" when nothing refuses it; *bad when
 * the refusal is a size failure (a bound), not one value's compile constraint.
 */
static void refused_by_check(const struct sw__ladder *L, char *why, size_t n, bool *bad)
{
    json_t *doc = NULL;
    struct sw_gate_opts go;
    memset(&go, 0, sizeof(go));
    go.ledger = L->o->ledger;
    go.waivers_loose = true; /* a rung under trial may not need the fleet's waivers */
    *bad = false;
    why[0] = 0;
    struct sw_err ge;
    sw_err_clear(&ge);
    if (sw_gate_endpoint(L->f, L->ep, &go, &doc, &ge)) {
        /* a shape the gates cannot read is for the boot to judge */
        snprintf(why, n, "check could not run: %.400s", ge.msg);
        return;
    }
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "gates"), i, g)
    {
        const char *name = json_string_value(json_object_get(g, "gate"));
        const char *verdict = json_string_value(json_object_get(g, "verdict"));
        const char *line = json_string_value(json_object_get(g, "line"));
        if (!name || !verdict || strcmp(verdict, "fail"))
            continue;
        /* the pool gate proves a refusal only for a pinned pool (the engine's own KV check
         * on a declared number); an engine-sized pool is the law's estimate of what the fork
         * leaves, which the boot is there to settle */
        bool pinned = L->ep->shape.kv_cache_bytes.set || L->ep->shape.max_total_tokens.set;
        if (strcmp(name, "known_bad") && (strcmp(name, "pool") || !pinned))
            continue;
        snprintf(why, n, "check: %s: %s", name, line ? line : "fail");
        /* a compile constraint is one value's; a size failure bounds every larger value */
        char *dump = sw_json_dumps(g, JSON_COMPACT);
        *bad = !(dump && (strstr(dump, "compile") || strstr(dump, "constraint")));
        sw_free(dump);
        break;
    }
    json_decref(doc);
}

static void progress(const struct sw__ladder *L, const struct sw_ladder_rung *g)
{
    FILE *p = L->o->progress;
    if (!p)
        return;
    char good[32] = "-", bad[32] = "-";
    if (L->good >= 0)
        snprintf(good, sizeof(good), "%" PRId64, sw__ladder_good(L));
    if (L->bad < L->n_grid)
        snprintf(bad, sizeof(bad), "%" PRId64, sw__ladder_bad(L));
    fprintf(p, "ladder: rung %d %s=%" PRId64 " %s%s (%.1f s) -> good %s, bad %s: %s\n", g->n,
            L->r->knob, g->value, sw_ladder_class_name(g->cls), g->booted ? "" : " (no boot)",
            g->ms / 1000.0, good, bad, g->detail);
    fflush(p);
}

/* The result's names (endpoint, knob, engine, label, runner), the runner's kind, and the
 * endpoint as the ladder runs it (every --set made). */
static int begin(struct sw__ladder *L, enum sw_ladder_runner_kind *rk, struct sw_err *e)
{
    const struct sw_ladder_opts *o = L->o;
    struct sw_fleet_endpoint *ep = L->ep;
    struct sw_ladder_result *r = L->r;
    const char *knob = sw_ladder_knob_name(o->knob);
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", ep->name);
    snprintf(r->knob, sizeof(r->knob), "%s", knob);
    snprintf(r->engine, sizeof(r->engine), "%s", sw_fleet_engine_name(ep->engine));
    if (o->label)
        snprintf(r->label, sizeof(r->label), "%s", o->label);
    else
        snprintf(r->label, sizeof(r->label), "%s/%s", ep->name, knob);
    *rk = o->runner;
    if (*rk == SW_LADDER_RUN_AUTO)
        *rk = ep->host ? SW_LADDER_RUN_ROLLOUT : SW_LADDER_RUN_SIM;
    snprintf(r->runner, sizeof(r->runner), "%s", o->run ? "custom" : sw_ladder_runner_name(*rk));
    bool engine_ok = o->knob == SW_LADDER_CTX_SIZE ? ep->engine == SW_FLEET_LLAMACPP
                     : o->knob == SW_LADDER_MAX_MODEL_LEN || o->knob == SW_LADDER_KV_BYTES
                         ? ep->engine != SW_FLEET_LLAMACPP
                         : true;
    if (!engine_ok)
        return sw_err_set(e, SW_EINVAL, "%s: %s is not a knob of %s", ep->name, knob,
                          sw_fleet_engine_name(ep->engine));
    for (int i = 0; i < o->n_sets; i++) {
        int rc = sw_gate_set(ep, o->sets[i], e);
        if (rc)
            return rc;
    }
    return 0;
}

/* Whether the run stops before the rung at grid index i (-1: converged), and why in the
 * result. */
static bool stops(struct sw__ladder *L, int64_t i, int max_boots)
{
    struct sw_ladder_result *r = L->r;
    if (i < 0) {
        r->converged = true;
        snprintf(r->why_stopped, sizeof(r->why_stopped),
                 "no %s value of the grid (step %" PRId64 ") is left untried between the bounds",
                 r->knob, r->step);
    } else if (L->o->dry_run) {
        r->next = sw__ladder_grid_val(L, i);
        snprintf(r->why_stopped, sizeof(r->why_stopped), "dry run");
    } else if (r->boots >= max_boots) {
        snprintf(r->why_stopped, sizeof(r->why_stopped), "--max-boots %d spent", max_boots);
    } else if (r->n >= SW_LADDER_MAX_RUNGS) {
        snprintf(r->why_stopped, sizeof(r->why_stopped), "%d rungs", SW_LADDER_MAX_RUNGS);
    } else {
        return false;
    }
    return true;
}

/* A rung the gates refused: no boot; a size failure the ledger or the fleet already showed is a
 * bound, another refusal skips the value. */
static void refused(struct sw__ladder *L, struct sw_ladder_rung *g, int64_t i, const char *why,
                    bool bad)
{
    g->cls = SW_LADDER_REFUSED;
    snprintf(g->detail, sizeof(g->detail), "%s", why);
    if (!bad)
        L->skip[i] = 1;
    else if (i < L->bad)
        L->bad = i;
}

/* A rung the runner booted: its outcome into g, the boot counted, the law and the bounds taught
 * by it. */
static void booted(struct sw__ladder *L, struct sw_ladder_rung *g,
                   const struct sw_ladder_outcome *oc)
{
    g->cls = oc->cls;
    g->booted = oc->booted;
    g->boot_id = oc->boot_id;
    g->peak_bytes = oc->peak_bytes;
    snprintf(g->detail, sizeof(g->detail), "%s", oc->detail);
    if (g->booted) {
        L->r->boots++;
        L->r->boots_total++;
    }
    sw__ladder_recalibrate(L, g->value, g->cls, oc->peak_bytes, oc->tried_bytes, oc->free_bytes);
    sw__ladder_learn(L, g->value, g->cls, oc->engine_max);
}

/* One rung at grid index i: refused by check (no boot) or run; recorded and shown. */
static int rung(struct sw__ladder *L, int64_t i, sw_ladder_run_fn run, void *ctx, struct sw_err *e)
{
    struct sw_ladder_result *r = L->r;
    struct sw_ladder_rung *g = &r->rungs[r->n];
    struct sw_ladder_outcome oc;
    char why[512];
    bool chk_bad = false;
    memset(g, 0, sizeof(*g));
    memset(&oc, 0, sizeof(oc));
    g->n = r->n ? r->rungs[r->n - 1].n + 1 : 1;
    g->value = sw__ladder_grid_val(L, i);
    g->good_before = sw__ladder_good(L);
    g->bad_before = sw__ladder_bad(L);
    g->pred_lo = r->pred_lo;
    g->pred_hi = r->pred_hi;
    g->pred_point = r->pred_point;
    int rc = sw__ladder_set(L->ep, L->o->knob, g->value, e);
    if (rc)
        return rc;
    uint64_t t0 = sw_now_ns();
    refused_by_check(L, why, sizeof(why), &chk_bad);
    bool refuse = why[0] && strncmp(why, "check could not run", 19);
    if (!refuse) {
        rc = run(ctx, L->f, L->ep, L->o->knob, g->value, &oc, e);
        if (rc) {
            json_decref(oc.evidence);
            return rc;
        }
    }
    g->ms = (double)(sw_now_ns() - t0) / 1e6;
    if (refuse)
        refused(L, g, i, why, chk_bad);
    else
        booted(L, g, &oc);
    r->n++;
    rc = sw__ladder_record(L, g, &oc, e);
    json_decref(oc.evidence);
    progress(L, g);
    return rc;
}

int sw_ladder_run(const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                  const struct sw_ladder_opts *o, struct sw_ladder_result *r, struct sw_err *e)
{
    struct sw__ladder L;
    enum sw_ladder_runner_kind rk;
    memset(r, 0, sizeof(*r));
    memset(&L, 0, sizeof(L));
    r->answer = r->bad = r->next = -1;
    r->pred_lo = r->pred_hi = r->pred_point = -1;
    if (!ep || !o || (unsigned)o->knob > SW_LADDER_KV_BYTES)
        return sw_err_set(e, SW_EINVAL, "ladder: an endpoint and a knob are required");
    L.f = f;
    L.ep = ep;
    L.o = o;
    L.r = r;
    int rc = begin(&L, &rk, e);
    if (rc)
        return rc;
    struct sw_fleet_u64 saved = *sw__ladder_knob_field(ep, o->knob);
    rc = sw__ladder_grid_setup(&L, e);
    if (rc)
        goto out;
    sw__ladder_law_setup(&L);
    rc = sw__ladder_resume(&L, e);
    if (rc)
        goto out;
    sw__ladder_predict(&L);
    int64_t p_lo = r->pred_lo, p_hi = r->pred_hi, p_pt = r->pred_point;
    L.walk = p_pt >= 0;
    sw_ladder_run_fn run = o->run;
    void *ctx = o->run ? o->run_ctx : (void *)o;
    if (!run)
        run = rk == SW_LADDER_RUN_SIM     ? sw_ladder_run_sim
              : rk == SW_LADDER_RUN_LOCAL ? sw_ladder_run_local
                                          : sw_ladder_run_rollout;
    int max_boots = o->max_boots > 0 ? o->max_boots : 8;
    bool clear = run == sw_ladder_run_local && !o->run && !o->dry_run;
    for (bool first = r->n == 0;; first = false) {
        int64_t i = sw__ladder_choose(&L, first);
        if (stops(&L, i, max_boots))
            break;
        if (clear) {
            /* the local runner boots on the endpoint's own address: its `up` process stopped
             * first when asked, else refused; anything else on the port said now */
            struct sw_local_clear lc;
            struct sw_local_clear_opts lo = {.stop_running = o->stop_running};
            clear = false;
            rc = sw_deploy_local_clear(ep, &lo, &lc, e);
            if (rc)
                goto out;
            if (lc.stopped) {
                r->stopped_up_pid = (int)lc.pid;
                if (o->progress)
                    fprintf(o->progress, "ladder: stopped %s's `slipway up` process (pid %d, %s)\n",
                            ep->name, (int)lc.pid, lc.pid_file);
            }
        }
        rc = rung(&L, i, run, ctx, e);
        if (rc)
            goto out;
        const struct sw_ladder_rung *g = &r->rungs[r->n - 1];
        if (g->cls == SW_LADDER_OTHER) {
            r->stopped_other = true;
            snprintf(r->why_stopped, sizeof(r->why_stopped),
                     "rung %d failed for a reason that is not about size: %.200s", g->n, g->detail);
            break;
        }
        sw__ladder_predict(&L);
    }
    if (!o->dry_run || r->n) {
        /* the prediction as the run began, for the report */
        r->pred_lo = p_lo;
        r->pred_hi = p_hi;
        r->pred_point = p_pt;
    }
    r->answer = sw__ladder_good(&L);
    r->bad = sw__ladder_bad(&L);
out:
    *sw__ladder_knob_field(ep, o->knob) = saved;
    sw_free(L.skip);
    return rc;
}
