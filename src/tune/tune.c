/*
 * tune: the run (include/slipway/tune.h says what it is for; docs/tune.md how). sw_tune_run
 * loads the endpoint, picks its runner, builds the search space, opens the journal (resuming a
 * run of the same space), writes the report's head, runs the search and writes the report's
 * tail, then closes the run in the journal unless it stays open.
 *
 * The rooms of the run: the space (tune_space.c), a candidate made (tune_candidate.c), judging a
 * candidate (tune_judge.c), the journal (tune_journal.c), the search (tune_search.c), the
 * crowning re-measure (tune_crown.c), the host a rollout run leaves (tune_host.c); and below
 * them one probe's boot and measure (tune_probe.c). What it deliberately does not do: print
 * (tune_report.c), or write the winner into the fleet file (tune_apply.c).
 */
#include "tune_run_internal.h"

#include <slipway/deploy.h>

#include <math.h>
#include <stdarg.h>
#include <string.h>

void sw__tune_note(const struct sw__tune_run *r, const char *fmt, ...)
{
    if (!r->o->progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("tune: ", r->o->progress);
    vfprintf(r->o->progress, fmt, ap);
    fputc('\n', r->o->progress);
    va_end(ap);
    fflush(r->o->progress);
}

json_t *sw__tune_jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

void sw__tune_set_outcome(struct sw__tune_run *r, json_t *rep, const char *outcome)
{
    r->outcome = outcome;
    json_object_set_new(rep, "outcome", json_string(outcome));
}

static void run_free(struct sw__tune_run *r)
{
    if (!r)
        return;
    json_decref(r->probes);
    json_decref(r->prior);
    json_decref(r->base_gates);
    for (size_t i = 0; i < r->nverdicts; i++)
        sw_free(r->verdicts[i]);
    if (r->have_ledger)
        sw_ledger_close(&r->ledger);
    sw_fleet_free(r->base_f);
    sw_free(r);
}

/* A run of o: the fleet loaded, its endpoint the baseline. Free with run_free (also after an
 * error). */
static int run_new(const struct sw_tune_opts *o, struct sw__tune_run **out, struct sw_err *e)
{
    struct sw__tune_run *r = sw_malloc(sizeof(*r));
    *out = r;
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->budget = o->budget_boots > 0 ? o->budget_boots : 16;
    r->probes = json_array();
    if (!r->probes)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_fleet_load(o->fleet, NULL, &r->base_f, e);
    if (rc)
        return rc;
    r->base = sw_fleet_endpoint(r->base_f, o->endpoint);
    if (!r->base)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", o->fleet, o->endpoint);
    return 0;
}

/* The runner (auto: a vLLM endpoint simulated, a llama.cpp one booted where its host is), and
 * whether the endpoint can have it. */
static int pick_runner(struct sw__tune_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->base;
    r->boot = r->o->boot;
    if (r->boot == SW_TUNE_BOOT_AUTO) {
        if (ep->engine == SW_FLEET_VLLM)
            r->boot = SW_TUNE_BOOT_SIM;
        else if (ep->engine == SW_FLEET_LLAMACPP &&
                 (!ep->host || ep->host->transport == SW_FLEET_LOCAL))
            r->boot = SW_TUNE_BOOT_LOCAL;
        else if (ep->host && ep->host->transport == SW_FLEET_SSH)
            r->boot = SW_TUNE_BOOT_ROLLOUT;
        else
            return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->engine_at,
                                   "endpoint %s: tune boots a local llama.cpp endpoint, or "
                                   "simulates (--sim); %s on host %s has no boot path here yet",
                                   ep->name, sw_fleet_engine_name(ep->engine),
                                   ep->host ? ep->host->name : "?");
    }
    if (r->boot == SW_TUNE_BOOT_ROLLOUT && !ep->host)
        return sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                               "endpoint %s: the rollout runner deploys on the endpoint's host; "
                               "it has none",
                               ep->name);
    if (r->boot == SW_TUNE_BOOT_LOCAL && ep->engine != SW_FLEET_LLAMACPP)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->engine_at,
                               "endpoint %s: only llama.cpp boots locally; use --sim", ep->name);
    return 0;
}

/* The space, and a directory for the logs. */
static int prepare(struct sw__tune_run *r, struct sw_err *e)
{
    int rc = sw__tune_space_build(r, e);
    if (rc)
        return rc;
    if (!r->nk || (r->nmix && r->nk == 1))
        return sw_fleet_err_at(e, SW_EINVAL, &r->base->at,
                               "endpoint %s declares no knobs to tune (knobs: in the fleet file)",
                               r->base->name);
    if (r->o->run_dir)
        snprintf(r->run_dir, sizeof(r->run_dir), "%s", r->o->run_dir);
    else if (!r->o->dry_run)
        return sw_deploy_run_dir(r->run_dir, sizeof(r->run_dir), e);
    return 0;
}

/* The local runner boots on the endpoint's own address: its `up` process stopped first when
 * asked, else refused; a port held by anything else said now, before any boot. */
static int clear_local(struct sw__tune_run *r, json_t *rep, struct sw_err *e)
{
    struct sw_local_clear lc;
    struct sw_local_clear_opts lo = {.stop_running = r->o->stop_running};
    if (r->boot != SW_TUNE_BOOT_LOCAL || r->o->dry_run)
        return 0;
    int rc = sw_deploy_local_clear(r->base, &lo, &lc, e);
    if (rc)
        return rc;
    if (lc.stopped) {
        sw__tune_note(r, "stopped %s's `slipway up` process (pid %d, %s) in %.1f s", r->base->name,
                      (int)lc.pid, lc.pid_file, lc.stop_s);
        json_object_set_new(rep, "stopped_up",
                            json_pack("{s:i, s:s, s:f}", "pid", (int)lc.pid, "pid_file",
                                      lc.pid_file, "seconds", lc.stop_s));
    }
    return 0;
}

/* The report before the search: what runs, against what, in which journal. */
static void report_head(const struct sw__tune_run *r, json_t *rep, const char *ledger,
                        const char *space, bool resumed)
{
    const struct sw_tune_opts *o = r->o;
    json_t *frozen = json_array();
    for (size_t i = 0; i < r->base->n_frozen; i++)
        json_array_append_new(frozen, json_string(r->base->frozen[i].name));
    for (const char *const *w = (const char *const[]){"payload", "quantization", "image", NULL}; *w;
         w++)
        if (!sw_fleet_endpoint_frozen(r->base, *w))
            json_array_append_new(frozen, json_sprintf("%s (always)", *w));
    json_object_set_new(rep, "endpoint", json_string(r->base->name));
    json_object_set_new(rep, "fleet", json_string(o->fleet));
    json_object_set_new(rep, "objective", json_string(o->objective.text));
    json_object_set_new(rep, "engine", json_string(sw_fleet_engine_name(r->base->engine)));
    json_object_set_new(rep, "boot",
                        json_string(r->boot == SW_TUNE_BOOT_SIM       ? "sim"
                                    : r->boot == SW_TUNE_BOOT_ROLLOUT ? "rollout"
                                                                      : "local"));
    json_object_set_new(rep, "dry_run", json_boolean(o->dry_run));
    json_object_set_new(rep, "ledger", ledger[0] ? json_string(ledger) : json_null());
    json_object_set_new(rep, "run", r->run_id ? json_integer(r->run_id) : json_null());
    json_object_set_new(rep, "resumed", json_boolean(resumed));
    json_object_set_new(rep, "space", json_string(space));
    json_object_set_new(rep, "knobs", sw__tune_space_json(r));
    json_object_set_new(rep, "frozen", frozen);
    json_object_set_new(rep, "budget_boots", json_integer(r->budget));
}

/* The report after the search: its outcome, the host, the counts and every probe. */
static void report_tail(struct sw__tune_run *r, json_t *rep)
{
    if (r->o->dry_run)
        sw__tune_set_outcome(r, rep, "dry_run");
    if (r->boot == SW_TUNE_BOOT_ROLLOUT && !r->o->dry_run)
        sw__tune_settle_host(r, rep);
    json_object_set_new(rep, "boots", json_integer(r->boots));
    json_object_set_new(rep, "rejected", json_integer(r->rejected));
    json_object_set_new(rep, "noise", r->have_base ? sw__tune_jnum(r->base_noise) : json_null());
    json_object_set(rep, "probes", r->probes);
    if (!json_object_get(rep, "winner"))
        json_object_set_new(rep, "winner", json_null());
    if (!json_object_get(rep, "runner_up"))
        json_object_set_new(rep, "runner_up", json_null());
}

int sw_tune_run(const struct sw_tune_opts *o, json_t **out, struct sw_err *e)
{
    struct sw__tune_run *r = NULL;
    json_t *rep = NULL;
    char lpath[4096] = "", space[160];
    bool resumed = false;
    int rc;
    *out = NULL;
    if (!o || !o->fleet || !o->endpoint)
        return sw_err_set(e, SW_EINVAL, "tune: a fleet and an endpoint are required");
    if (!o->objective.metric)
        return sw_err_set(e, SW_EINVAL, "tune: an objective is required");
    rep = json_object();
    if (!rep)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = run_new(o, &r, e);
    if (!rc)
        rc = pick_runner(r, e);
    if (!rc)
        rc = prepare(r, e);
    if (!rc)
        rc = clear_local(r, rep, e);
    if (rc)
        goto out;
    sw__tune_space_key(r, space, sizeof(space));
    rc = sw__tune_journal_open(r, space, lpath, sizeof(lpath), &resumed, e);
    if (rc)
        goto out;
    report_head(r, rep, lpath, space, resumed);

    rc = sw__tune_search(r, rep, e);
    json_object_set_new(rep, "knobs", sw__tune_space_json(r)); /* with the points refined */
    if (rc == SW_EINTR || r->interrupted) {
        rc = 0;
        sw__tune_set_outcome(r, rep, "interrupted");
    }
    if (rc)
        goto out;
    report_tail(r, rep);
    rc = sw__tune_journal_finish(r, rep, e);
    if (rc)
        goto out;
    *out = rep;
    rep = NULL;
out:
    json_decref(rep);
    run_free(r);
    return rc;
}
