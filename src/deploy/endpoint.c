/*
 * deploy/endpoint: `slipway up` as one library call, sw_deploy_endpoint.
 *
 * The endpoint (a fleet endpoint rendered by its engine adapter, or a verbatim llama-server
 * command line the adapter makes verifiable) -> its plan over the very argv that is launched
 * (sw_plan_endpoint: the prediction, the ledger shape) -> preflight (the plan against the fleet's
 * declared device memory; one endpoint, one process: a live pid file refuses) -> sw_deploy_up
 * (spawn, readiness, liveness; it writes the pid file as soon as the engine runs and again once it
 * serves: the record `down` trusts) -> the boot recorded in the ledger (ok or failed) -> the
 * printed report diffed against the prediction by the engine's differ.
 *
 * What it deliberately does not do: print (the caller gets notes through a callback and the
 * result), install signal handlers, or serve in the foreground (the CLI waits on the child).
 */
#include "deploy_internal.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static void note(const struct sw_deploy_req *q, const char *kind, const char *fmt, ...)
    SW_PRINTF(3, 4);

static void note(const struct sw_deploy_req *q, const char *kind, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    if (!q->on_note)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    q->on_note(q->ctx, kind, buf);
}

/* The endpoint to boot: the one named, or the only enabled one. */
static int pick_endpoint(const struct sw_fleet *f, const char *name,
                         const struct sw_fleet_endpoint **out, struct sw_err *e)
{
    *out = NULL;
    if (name) {
        *out = sw_fleet_endpoint(f, name);
        if (!*out)
            return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s'", f->path, name);
        return 0;
    }
    for (size_t i = 0; i < f->n_endpoints; i++) {
        if (!f->endpoints[i].enabled)
            continue;
        if (*out)
            return sw_err_set(e, SW_EINVAL,
                              "%s: several endpoints (%s, %s, ...): name the one to boot", f->path,
                              (*out)->name, f->endpoints[i].name);
        *out = &f->endpoints[i];
    }
    if (!*out)
        return sw_err_set(e, SW_ENOENT, "%s: no enabled endpoint", f->path);
    return 0;
}

/* A fleet endpoint, rendered by its engine adapter. */
static int fleet_cmd(const struct sw_deploy_req *q, struct sw_deploy_res *r, struct sw_err *e)
{
    struct sw_fleet_opts fo;
    const struct sw_fleet_endpoint *ep;
    memset(&fo, 0, sizeof(fo));
    fo.on_error = q->on_fleet_error;
    fo.on_error_ctx = q->ctx;
    int rc = q->fleet_text ? sw_fleet_load_mem(q->fleet, q->fleet_text, strlen(q->fleet_text), &fo,
                                               &r->fleet, e)
                           : sw_fleet_load(q->fleet, &fo, &r->fleet, e);
    if (rc)
        return rc;
    rc = pick_endpoint(r->fleet, q->endpoint, &ep, e);
    if (rc)
        return rc;
    if (!ep->enabled)
        return sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                               "endpoint %s is disabled (kept for the record)", ep->name);
    if (ep->host && ep->host->transport != SW_FLEET_LOCAL)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->host_at,
                               "endpoint %s runs on host %s over ssh: `up` boots local "
                               "endpoints only for now",
                               ep->name, ep->host->name);
    if (ep->engine != SW_FLEET_LLAMACPP)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->engine_at,
                               "endpoint %s: `up` boots llama.cpp endpoints only for now (%s)",
                               ep->name, sw_fleet_engine_name(ep->engine));
    rc = sw_engine_launch_from_fleet(ep, &r->launch, e);
    if (rc)
        return rc;
    if (q->port)
        r->launch.port = q->port;
    /* the one rule (deploy/local): the local runners of ladder and tune run the same */
    r->launch.binary =
        sw_deploy_llamacpp_program(r->launch.binary, r->binary, sizeof(r->binary), NULL);
    rc = sw_engine_llamacpp_render(&r->launch, &r->cmd, e);
    if (rc) {
        sw_err_prefix(e, "endpoint %s", ep->name);
        return rc;
    }
    const struct sw_fleet_at *at = ep->payload.gguf.v ? &ep->payload.gguf.at : &ep->payload.path.at;
    if (at->file)
        snprintf(r->where, sizeof(r->where), "%s:%d:%d: payload of endpoint %s", at->file, at->line,
                 at->col, ep->name);
    snprintf(r->name, sizeof(r->name), "%s", ep->name);
    r->ep = ep;
    return 0;
}

static int verbatim_cmd(const struct sw_deploy_req *q, struct sw_deploy_res *r, struct sw_err *e)
{
    const char *exe = NULL, *how = "";
    if (q->argc && !strcmp(q->argv[0], "llama-server"))
        exe = sw_deploy_llamacpp_program(NULL, r->binary, sizeof(r->binary), &how);
    if (!strcmp(how, "not found"))
        exe = NULL;
    return sw_engine_llamacpp_verbatim((int)q->argc, q->argv, exe, q->api_key, &r->cmd, &r->launch,
                                       e);
}

/*
 * The prediction: memory/llamacpp's law over the very argv the engine receives, through the one
 * plan (the GGUF's architecture when it is a regular file here, else the endpoint's `arch`; the
 * fleet's devices). It never blocks or fails the boot: a plan that cannot be made is a reason.
 */
static void predict(struct sw_deploy_res *r)
{
    struct sw_plan_overrides ov;
    struct sw_err e;
    char msg[1200];
    memset(&ov, 0, sizeof(ov));
    ov.argv = (const char *const *)r->cmd.argv;
    ov.argc = r->cmd.argc;
    ov.regular_files_only = true;
    sw_err_clear(&e);
    if (sw_plan_endpoint(r->fleet, r->ep, &ov, &r->plan, &e)) {
        json_decref(r->plan.predicted);
        r->plan.predicted = NULL;
        if (e.code == SW_ENOENT && !r->ep)
            snprintf(r->why_none, sizeof(r->why_none), "%.200s", e.msg);
        else
            snprintf(r->why_none, sizeof(r->why_none), "the plan failed: %.200s",
                     sw_err_format(&e, msg, sizeof(msg)));
        return;
    }
    const struct sw_llamacpp_plan *p = r->plan.llamacpp;
    for (int d = 0; d < p->n_dev && !r->unfit[0]; d++) {
        const struct sw_llamacpp_device *x = &p->dev[d];
        const double M = 1024.0 * 1024.0;
        if (x->memory && x->total > x->memory)
            snprintf(r->unfit, sizeof(r->unfit),
                     "the plan does not fit %s: %.2f MiB (weights %.2f + KV %.2f + recurrent "
                     "%.2f + compute %.2f + output %.2f) of %.2f MiB declared",
                     x->name, (double)x->total / M, (double)x->weights / M, (double)x->kv / M,
                     (double)x->recurrent / M, (double)x->compute / M, (double)x->output / M,
                     (double)x->memory / M);
    }
}

static int paths(const struct sw_deploy_req *q, struct sw_deploy_res *r, struct sw_err *e)
{
    char run_dir[3800];
    if (q->name)
        snprintf(r->name, sizeof(r->name), "%s", q->name);
    else if (!r->name[0] && r->launch.alias)
        snprintf(r->name, sizeof(r->name), "%s", r->launch.alias);
    else if (!r->name[0])
        snprintf(r->name, sizeof(r->name), "llama-server-%u", r->launch.port);
    for (char *p = r->name; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    if (!q->pid_file || !q->log) {
        int rc = sw_deploy_run_dir(run_dir, sizeof(run_dir), e);
        if (rc)
            return rc;
    }
    if (q->pid_file)
        snprintf(r->pid_path, sizeof(r->pid_path), "%s", q->pid_file);
    else {
        int rc = sw_deploy_pid_path(r->name, r->pid_path, sizeof(r->pid_path), e);
        if (rc)
            return rc;
    }
    if (q->log)
        snprintf(r->log_path, sizeof(r->log_path), "%s", q->log);
    else
        snprintf(r->log_path, sizeof(r->log_path), "%s/%s.log", run_dir, r->name);
    return 0;
}

/* Record one boot (ok or failed) in the ledger; a note says where, or why not. */
static void record_boot(const struct sw_deploy_req *q, struct sw_deploy_res *r, int64_t started,
                        double boot_s)
{
    char path[4096], msg[1200];
    struct sw_err e;
    struct sw_ledger led;
    int rc = 0;
    memset(&led, 0, sizeof(led));
    sw_err_clear(&e);
    const json_t *rep = json_object_get(r->up.bootlog, "report");
    json_t *shape = sw_plan_boot_shape(&r->plan, rep);
    json_t *failure = r->up.status.failed ? sw_boot_failure_to_json(&r->up.status.failure) : NULL;
    char *text = NULL;
    size_t len = 0;
    if (sw_read_file(r->log_path, 64u << 20, &text, &len, NULL))
        text = NULL;
    struct sw_ledger_boot b;
    memset(&b, 0, sizeof(b));
    b.endpoint = r->name;
    b.shape = shape;
    b.engine = r->engine->name;
    b.engine_version = r->up.status.build[0] ? r->up.status.build : NULL;
    b.started_at = started;
    b.ended_at = sw_wall_unix();
    b.duration_ms = boot_s > 0 ? (int64_t)(boot_s * 1000) : -1;
    b.predicted = r->plan.predicted;
    b.report = json_is_object(rep) ? rep : NULL;
    b.failure = failure;
    b.log_excerpt = text;
    b.log_len = len;
    b.log_path = r->log_path;
    b.source = "slipway up";
    int64_t id = 0;
    bool opened;
    rc = sw_ledger_open_for(&led, q->ledger, q->fleet, NULL, SW_LEDGER_MUST_EXIST, &opened, path,
                            sizeof(path), &e);
    if (!rc)
        rc = sw_ledger_record_boot(&led, &b, &id, &e);
    sw_ledger_close(&led);
    if (rc)
        note(q, "record_failed", "boot not recorded: %s", sw_err_format(&e, msg, sizeof(msg)));
    else
        note(q, "recorded", "recorded as boot %lld in %s", (long long)id, path);
    sw_free(text);
    json_decref(shape);
    json_decref(failure);
}

int sw_deploy_endpoint(const struct sw_deploy_req *q, struct sw_deploy_res *r, struct sw_err *e)
{
    int rc;
    memset(r, 0, sizeof(*r));
    r->engine = sw_engine_find("llama.cpp");
    if (!r->engine)
        return sw_err_set(e, SW_EUNSUPPORTED, "no llama.cpp engine adapter");
    if (q->fleet)
        rc = fleet_cmd(q, r, e);
    else
        rc = verbatim_cmd(q, r, e);
    if (rc)
        return rc;
    predict(r);
    if (q->dry_run)
        return 0;
    /* A shape that does not fit is refused here, not found minutes into a boot. */
    if (r->unfit[0] && q->preflight)
        return sw_err_set(e, SW_EGATE,
                          "%s: %s; nothing was started (change the shape, or --no-preflight to "
                          "boot it anyway)",
                          r->name[0] ? r->name : "llama-server", r->unfit);
    rc = paths(q, r, e);
    if (rc)
        return rc;

    /* one endpoint, one process: an existing record must be dead or stale */
    struct sw_pidfile old;
    if (sw_pidfile_read(r->pid_path, &old, NULL) == 0) {
        char why[512];
        enum sw_pid_verdict vd = sw_pidfile_check(&old, why, sizeof(why));
        if (vd == SW_PID_ALIVE)
            return sw_err_set(e, SW_EEXIST,
                              "%s is already running (pid %d, %s); stop it first: slipway down "
                              "--pid-file %s",
                              r->name, (int)old.pid, old.url, r->pid_path);
        note(q, "stale", "removing stale pid file %s: %s", r->pid_path, why);
        unlink(r->pid_path);
    }

    /* the pid file is written by sw_deploy_up as soon as the engine runs */
    r->up_opts = (struct sw_up_opts){.engine = r->engine,
                                     .cmd = &r->cmd,
                                     .host = r->launch.host,
                                     .port = r->launch.port,
                                     .payload = r->launch.model,
                                     .log_path = r->log_path,
                                     .pid_file = r->pid_path,
                                     .endpoint = r->name,
                                     .api_key = r->launch.api_key,
                                     .detach = q->detach,
                                     .preflight = q->preflight,
                                     .liveness = q->liveness,
                                     .boot_timeout_s = q->timeout_s,
                                     .grace_ms = q->grace_ms,
                                     .rlimit_as = q->limit_as,
                                     .stop = q->stop,
                                     .on_progress = q->on_progress,
                                     .ctx = q->ctx};
    struct sw_buf line;
    sw_buf_init(&line, 1 << 16);
    sw_engine_cmd_format(&r->cmd, &line);
    note(q, "start", "%s\n  log %s", sw_buf_cstr(&line), r->log_path);
    sw_buf_free(&line);

    int64_t started = sw_wall_unix();
    r->attempted = true;
    rc = sw_deploy_up(&r->up_opts, &r->up, e);
    if (q->record && r->up.started)
        record_boot(q, r, started, r->up.ready ? r->up.boot_s : sw_now_s() - r->up.child.t_start);
    if (rc)
        return rc;
    r->attempted = false; /* what fails from here is not the boot */
    if (r->plan.predicted)
        r->engine->diff(r->plan.predicted, r->up.bootlog, NULL, &r->diff, NULL);
    return 0;
}

void sw_deploy_res_free(struct sw_deploy_res *r)
{
    json_decref(r->diff);
    sw_up_result_free(&r->up);
    sw_plan_free(&r->plan);
    sw_engine_cmd_free(&r->cmd);
    if (r->fleet) /* the verbatim form's launch points into argv: nothing to free */
        sw_engine_launch_free(&r->launch);
    sw_fleet_free(r->fleet);
    memset(r, 0, sizeof(*r));
}
