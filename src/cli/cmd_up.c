/*
 * slipway up [options] -- llama-server -m MODEL.gguf [llama-server flags]
 * slipway up [ENDPOINT] [--fleet FILE] [options]
 *
 * Plan, render, start the engine supervised (its own process group, log captured), wait for
 * readiness, prove liveness with a real one-token generation, print the printed boot report and
 * the predicted-vs-printed diff, then serve in the foreground (Ctrl-C or SIGTERM stops it
 * cleanly) or --detach with a pid file for `slipway down`.
 *
 * Exit: 0 served and stopped cleanly / detached; 1 the boot failed (the failure is classified),
 * the endpoint is already running, or the engine died while serving; 2 unusable input.
 */
#include "cli.h"

#include <slipway/deploy.h>
#include <slipway/engine.h>
#include <slipway/fleet.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct sw_opt opts[] = {
    {"detach", 0, NULL, 0, "leave it running with a pid file (stop: slipway down)", NULL},
    {"name", 0, "NAME", 0,
     "endpoint name for the pid file and log (default: alias or llama-server-PORT)", NULL},
    {"pid-file", 0, "FILE", 0, "the pid file (default: RUN_DIR/NAME.pid)", NULL},
    {"log", 0, "FILE", 0, "engine output (default: RUN_DIR/NAME.log)", NULL},
    {"timeout", 0, "S", 0, "boot deadline, readiness and proof, 0..86400 s (default 900)", NULL},
    {"grace", 0, "S", 0, "SIGTERM -> SIGKILL delay when stopping, 0..86400 s (default 10)", NULL},
    {"limit-as", 0, "BYTES", 0, "cap the engine's address space (RLIMIT_AS), e.g. 3GiB", NULL},
    {"no-preflight", 0, NULL, 0,
     "do not check port, payload and the plan against the fleet's\n"
     "declared device memory first: let the engine fail",
     NULL},
    {"no-liveness", 0, NULL, 0, "skip the one-token generation", NULL},
    {"dry-run", 0, NULL, 0, "print the command line (and the prediction) and stop", NULL},
    {"record", 0, NULL, 0, "record the boot (ok or failed) in the ledger", NULL},
    {"ledger", 0, "PATH", 0,
     "that ledger (default: beside the fleet file, $SLIPWAY_LEDGER,\n"
     "or ~/.local/share/slipway/ledger.sqlite); implies --record",
     NULL},
    {"no-ledger", 0, NULL, 0,
     "read and write no ledger (the boot is not recorded; not with --record)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway up --fleet examples/local.yaml",
    "slipway up local --dry-run --json --fleet examples/local.yaml",
    "slipway up --detach --name tiny -- llama-server -m model.gguf -c 4096 --port 8088",
    NULL,
};

const struct sw_cmd_spec sw_spec_up = {
    .name = "up",
    .summary = "boot a local endpoint supervised, prove it serves, diff predicted vs printed",
    .synopsis = "[ENDPOINT] [--fleet FILE] [options]\n"
                "[options] -- llama-server -m MODEL.gguf [llama-server flags]",
    .about = "Starts the engine in its own process group (log captured), waits for readiness,\n"
             "proves liveness with a one-token generation, prints the printed boot report and\n"
             "the predicted-vs-printed diff, then serves in the foreground (Ctrl-C stops it) or\n"
             "--detach with a pid file for `slipway down`. --json prints {url, pid, report,\n"
             "diff, ...} on stdout.\n"
             "RUN_DIR: $SLIPWAY_RUN_DIR, else $XDG_RUNTIME_DIR/slipway, else /tmp/slipway-UID.\n"
             "The engine's LLAMA_ARG_* variables are not passed on (the argv is the shape);\n"
             "LLAMA_API_KEY, if set, is passed to the engine through its environment.\n"
             "Exit: 0 served and stopped cleanly / detached, 1 the boot failed, the endpoint is\n"
             "already running or the engine died while serving, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .command_line = true,
    .examples = examples,
    .fleet = true,
};

struct up_cli {
    bool json, detach, preflight, liveness, dry_run, record;
    const char *name, *pid_file, *log, *ledger;
    unsigned timeout_s, grace_ms;
    uint64_t limit_as;
    char **eng_argv; /* after "--" */
    int eng_argc;
    const char *fleet, *endpoint;
};

/* ---------------------------------------------------------------------------------------------
 * Output.
 */
static void print_failure(const struct sw_up_result *r, const char *log, const char *where)
{
    const struct sw_boot_failure *f = &r->status.failure;
    const char *ph = sw_boot_phase_name(f->phase);
    const char *pk = sw_payload_kind_name(f->payload_kind);
    fprintf(stderr, "slipway up: boot FAILED: %s", sw_boot_class_name(f->cls));
    if (ph)
        fprintf(stderr, " (phase %s)", ph);
    if (pk)
        fprintf(stderr, " (payload %s)", pk);
    fprintf(stderr, "\n  %s\n", f->message);
    if (where && *where &&
        (f->cls == SW_BOOT_MISSING_PAYLOAD || f->cls == SW_BOOT_BAD_PAYLOAD ||
         f->cls == SW_BOOT_UNSUPPORTED))
        fprintf(stderr, "  (%s)\n", where);
    if (f->line > 0)
        fprintf(stderr, "  at %s:%d\n", log, f->line);
    else if (r->started)
        fprintf(stderr, "  log: %s\n", log);
}

static void print_report(const json_t *rep)
{
    char a[32], b[32];
    size_t i;
    const json_t *kv;
    if (!json_is_object(rep))
        return;
    printf("printed by the engine:\n");
    printf("  n_ctx %" JSON_INTEGER_FORMAT ", n_ctx_seq %" JSON_INTEGER_FORMAT
           ", n_seq_max %" JSON_INTEGER_FORMAT ", kv_unified %s\n",
           json_integer_value(json_object_get(rep, "n_ctx")),
           json_integer_value(json_object_get(rep, "n_ctx_seq")),
           json_integer_value(json_object_get(rep, "n_seq_max")),
           json_is_true(json_object_get(rep, "kv_unified")) ? "true" : "false");
    json_array_foreach(json_object_get(rep, "kv_caches"), i, kv)
    {
        printf(
            "  kv cache %zu%s: %" JSON_INTEGER_FORMAT " cells, %" JSON_INTEGER_FORMAT
            " layers, K %s %s MiB, V %s %s MiB\n",
            i, json_is_true(json_object_get(kv, "swa")) ? " (swa)" : "",
            json_integer_value(json_object_get(kv, "cells")),
            json_integer_value(json_object_get(kv, "layers")),
            json_string_value(json_object_get(kv, "k_type")),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(kv, "k_bytes")), a, sizeof(a)),
            json_string_value(json_object_get(kv, "v_type")),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(kv, "v_bytes")), b, sizeof(b)));
    }
    const json_t *rs = json_object_get(rep, "recurrent");
    if (json_is_object(rs))
        printf(
            "  recurrent: %" JSON_INTEGER_FORMAT " cells, R %s MiB, S %s MiB\n",
            json_integer_value(json_object_get(rs, "cells")),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rs, "r_bytes")), a, sizeof(a)),
            sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rs, "s_bytes")), b, sizeof(b)));
    printf(
        "  model %s MiB, compute %s MiB\n",
        sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rep, "model_bytes")), a, sizeof(a)),
        sw_fmt_mib((uint64_t)json_integer_value(json_object_get(rep, "compute_bytes")), b,
                   sizeof(b)));
}

static void print_diff(const json_t *diff, const char *why_none)
{
    if (!json_is_object(diff)) {
        printf("predicted vs printed: no prediction (%s)\n", why_none);
        return;
    }
    size_t i;
    const json_t *f;
    printf("predicted vs printed:\n");
    json_array_foreach(json_object_get(diff, "fields"), i, f)
    {
        const char *verdict = json_string_value(json_object_get(f, "verdict"));
        char *pa = sw_json_dumps(json_object_get(f, "predicted"), JSON_ENCODE_ANY);
        char *pb = sw_json_dumps(json_object_get(f, "printed"), JSON_ENCODE_ANY);
        const json_t *d = json_object_get(f, "delta");
        json_int_t tol = json_integer_value(json_object_get(f, "tolerance"));
        char extra[160] = "";
        if (!strcmp(verdict, "estimate"))
            snprintf(extra, sizeof(extra), "  (%s)", json_string_value(json_object_get(f, "note")));
        else if (json_is_integer(d) && json_integer_value(d) && tol)
            snprintf(extra, sizeof(extra),
                     "  (%+" JSON_INTEGER_FORMAT " B, printed to +-%" JSON_INTEGER_FORMAT " B)",
                     json_integer_value(d), tol);
        printf("  %-26s %14s %14s  %s%s\n", json_string_value(json_object_get(f, "field")),
               pa ? pa : "?", pb ? pb : "?", verdict, extra);
        sw_free(pa);
        sw_free(pb);
    }
    printf("  %s\n", json_is_true(json_object_get(diff, "match")) ? "MATCH" : "MISMATCH");
}

/* The rendered command without starting it. Environment values are not shown: they may be
 * secrets (LLAMA_API_KEY); their names are. */
static int dry_run(const struct sw_engine_cmd *cmd, const json_t *predicted, const char *why,
                   bool json)
{
    if (json) {
        json_t *o = json_object(), *argv = json_array(), *env = json_array();
        for (size_t i = 0; i < cmd->argc; i++)
            json_array_append_new(argv, sw_json_text(cmd->argv[i], strlen(cmd->argv[i]), NULL));
        for (size_t i = 0; i < cmd->envc; i++)
            json_array_append_new(env, sw_json_text(cmd->env[i], strcspn(cmd->env[i], "="), NULL));
        sw_json_set_new(o, "argv", argv);
        sw_json_set_new(o, "env", env);
        sw_json_set_new(o, "predicted", predicted ? json_deep_copy(predicted) : json_null());
        if (!predicted)
            sw_json_set_str(o, "predicted_note", why);
        sw_json_print(stdout, o, true);
        json_decref(o);
        return SW_EXIT_OK;
    }
    struct sw_buf line;
    sw_buf_init(&line, 1 << 20);
    sw_engine_cmd_format(cmd, &line);
    printf("%s\n", sw_buf_cstr(&line));
    sw_buf_free(&line);
    for (size_t i = 0; i < cmd->envc; i++)
        printf("env: %.*s=...\n", (int)strcspn(cmd->env[i], "="), cmd->env[i]);
    if (!predicted)
        printf("no prediction (%s)\n", why);
    else
        sw_json_print(stdout, predicted, true);
    return SW_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The verb.
 */
/* Read the line into c. 0, or the exit code to return now (help printed: 0 is returned as -1). */
static int parse_args(int argc, char **argv, struct up_cli *c)
{
    struct sw_args a;
    int code;
    memset(c, 0, sizeof(*c));
    if (!sw_args_parse(&sw_spec_up, argc, argv, &a, &code))
        return code ? code : -1;
    static const char *const uses[] = {"record", "ledger", NULL};
    code = sw_cli_no_ledger(&a, uses);
    if (code)
        return code;
    c->json = a.json;
    c->detach = sw_args_flag(&a, "detach");
    c->preflight = !sw_args_flag(&a, "no-preflight");
    c->liveness = !sw_args_flag(&a, "no-liveness");
    c->dry_run = sw_args_flag(&a, "dry-run");
    c->ledger = sw_args_str(&a, "ledger");
    c->record = sw_args_flag(&a, "record") || c->ledger;
    c->name = sw_args_str(&a, "name");
    c->pid_file = sw_args_str(&a, "pid-file");
    c->log = sw_args_str(&a, "log");
    int64_t timeout_ms = 900000, grace_ms = 10000;
    code = sw_args_duration(&a, "timeout", 0, 86400000, &timeout_ms);
    if (!code)
        code = sw_args_duration(&a, "grace", 0, 86400000, &grace_ms);
    if (!code)
        code = sw_args_size(&a, "limit-as", 0, UINT64_MAX, &c->limit_as);
    if (code)
        return code;
    c->timeout_s = (unsigned)((timeout_ms + 999) / 1000); /* whole seconds, never less */
    c->grace_ms = (unsigned)grace_ms;
    c->eng_argv = a.rest;
    c->eng_argc = a.nrest;
    if (c->eng_argv && (a.npos || a.fleet))
        return sw_args_usage(&a, "either an ENDPOINT (--fleet FILE) or -- llama-server ..., not "
                                 "both");
    if (c->eng_argv)
        return 0;
    struct sw_cli_fleet fl;
    code = sw_cli_fleet(&a, 0, 0, &fl);
    if (code)
        return code;
    c->fleet = fl.path;
    c->endpoint = fl.n_endpoints ? fl.endpoints[0] : NULL;
    return 0;
}

static int serve_foreground(struct sw_up_result *r, const struct sw_up_opts *o, bool json,
                            const char *pid_file)
{
    int code = SW_EXIT_OK;
    if (!json)
        printf("serving at %s in the foreground (pid %d); Ctrl-C stops it\n", r->url,
               (int)r->child.pid);
    fflush(stdout);
    while (!sw_cli_stop && !sw_child_poll(&r->child))
        sw_sleep_ms(100);
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_cli_stop) {
        int rc = sw_child_stop(&r->child, o->grace_ms, &e);
        char st[96];
        fprintf(stderr, "slipway up: %s: stopped %s (%s)\n", strsignal(sw_cli_stop_signal),
                r->child.exe,
                r->child.exited ? sw_wait_status_str(r->child.status, st, sizeof(st))
                                : "still running?");
        if (rc) {
            fprintf(stderr, "slipway up: %s\n", e.msg);
            code = SW_EXIT_FAIL;
        }
    } else {
        /* it went away on its own: `slipway down` from elsewhere, or a crash */
        sw_child_stop(&r->child, o->grace_ms, NULL);
        sw_deploy_read_log(o, r, NULL);
        char st[96];
        sw_wait_status_str(r->child.status, st, sizeof(st));
        if (r->status.failed) {
            print_failure(r, o->log_path, NULL);
            code = SW_EXIT_FAIL;
        } else if (WIFEXITED(r->child.status) && WEXITSTATUS(r->child.status) == 0) {
            fprintf(stderr, "slipway up: %s stopped (%s)\n", r->child.exe, st);
        } else {
            fprintf(stderr, "slipway up: %s died while serving (%s); log %s\n", r->child.exe, st,
                    o->log_path);
            code = SW_EXIT_FAIL;
        }
    }
    unlink(pid_file);
    return code;
}

static void fleet_error(void *ctx, const struct sw_err *e)
{
    char buf[2048];
    (void)ctx;
    fprintf(stderr, "%s\n", sw_err_format(e, buf, sizeof(buf)));
}

/* The callbacks' context: the bar first, so it stands for the bar (sw_deploy_bar_update). */
struct up_ctx {
    struct sw_deploy_bar bar;
    bool json;
};

/* The library's notes, on stderr as `slipway up: ...`; the command line and where the boot was
 * recorded only in the human view. */
static void up_note(void *ctx, const char *kind, const char *text)
{
    const struct up_ctx *u = ctx;
    if (u->json && (!strcmp(kind, "start") || !strcmp(kind, "recorded")))
        return;
    fprintf(stderr, "slipway up: %s\n", text);
}

int sw_cmd_up(int argc, char **argv)
{
    struct up_cli c;
    int prc = parse_args(argc, argv, &c);
    if (prc)
        return prc < 0 ? SW_EXIT_OK : prc;
    struct sw_err e;
    sw_err_clear(&e);
    int code = SW_EXIT_FAIL, rc;
    json_t *out = NULL;
    struct sw_deploy_res r;
    struct up_ctx u;
    memset(&u, 0, sizeof(u));
    u.json = c.json;

    sw_cli_catch_stop(true);
    signal(SIGPIPE, SIG_IGN);
    sw_progress_init(&u.bar.bar, "starting", "", 0);
    u.bar.on = u.bar.bar.enabled && !c.json && !c.dry_run;

    struct sw_deploy_req q;
    memset(&q, 0, sizeof(q));
    q.fleet = c.fleet;
    q.endpoint = c.endpoint;
    q.argv = (const char *const *)c.eng_argv;
    q.argc = (size_t)c.eng_argc;
    q.name = c.name;
    q.pid_file = c.pid_file;
    q.log = c.log;
    q.ledger = c.ledger;
    q.api_key = getenv("LLAMA_API_KEY");
    q.detach = c.detach;
    q.preflight = c.preflight;
    q.liveness = c.liveness;
    q.dry_run = c.dry_run;
    q.record = c.record;
    q.timeout_s = c.timeout_s;
    q.grace_ms = c.grace_ms;
    q.limit_as = c.limit_as;
    q.stop = &sw_cli_stop;
    q.on_progress = sw_deploy_bar_update;
    q.on_note = up_note;
    q.on_fleet_error = fleet_error;
    q.ctx = &u;
    rc = sw_deploy_endpoint(&q, &r, &e);
    if (u.bar.on && r.attempted)
        sw_progress_finish(&u.bar.bar);
    if (c.dry_run && !rc) {
        code = dry_run(&r.cmd, r.plan.predicted, r.why_none, c.json);
        if (r.unfit[0] && !c.json)
            fprintf(stderr, "slipway up: %s\n", r.unfit);
        goto out;
    }
    if (rc && !r.attempted) {
        code = sw_cli_fail(&e, c.json);
        goto out;
    }
    if (rc) {
        if (c.json) {
            out = json_object();
            sw_json_set_str(out, "url", r.up.url);
            sw_json_set_new(out, "pid", json_null());
            sw_json_set_str(out, "log", r.log_path);
            sw_json_set_new(out, "report",
                            json_object_get(r.up.bootlog, "report")
                                ? json_deep_copy(json_object_get(r.up.bootlog, "report"))
                                : json_null());
            sw_json_set_new(out, "failure",
                            r.up.status.failed ? sw_boot_failure_to_json(&r.up.status.failure)
                                               : json_null());
            sw_json_set_new(out, "error", sw_err_to_json(&e));
            sw_json_print(stdout, out, true);
        }
        if (r.up.status.failed)
            print_failure(&r.up, r.log_path, r.where);
        else
            fprintf(stderr, "slipway up: %s\n", e.msg);
        code = rc == SW_EINTR || r.up.status.failed || rc == SW_EEXIST || rc == SW_ECHILD
                   ? SW_EXIT_FAIL
                   : sw_cli_exit_for(rc);
        goto out;
    }

    const json_t *printed = json_object_get(r.up.bootlog, "report");
    const json_t *predicted = r.plan.predicted;
    if (c.json) {
        out = json_object();
        sw_json_set_str(out, "url", r.up.url);
        sw_json_set_int(out, "pid", r.up.child.pid);
        sw_json_set_int(out, "pgid", r.up.child.pgid);
        sw_json_set_str(out, "endpoint", r.name);
        sw_json_set_str(out, "pid_file", r.pid_path);
        sw_json_set_str(out, "log", r.log_path);
        sw_json_set_bool(out, "detached", c.detach);
        sw_json_set_real(out, "boot_s", r.up.boot_s);
        sw_json_set_str(out, "liveness", c.liveness ? r.up.liveness : NULL);
        sw_json_set_new(out, "report", printed ? json_deep_copy(printed) : json_null());
        sw_json_set_new(out, "predicted", predicted ? json_deep_copy(predicted) : json_null());
        sw_json_set_new(out, "diff", r.diff ? json_incref(r.diff) : json_null());
        if (!r.diff)
            sw_json_set_str(out, "diff_note", r.why_none);
        sw_json_set_new(out, "failure", json_null());
        sw_json_print(stdout, out, true);
    } else {
        printf("ready in %.1f s at %s (pid %d, group %d)\n", r.up.boot_s, r.up.url,
               (int)r.up.child.pid, (int)r.up.child.pgid);
        if (c.liveness)
            printf("liveness: %s\n", r.up.liveness);
        print_report(printed);
        print_diff(r.diff, r.why_none);
    }
    fflush(stdout);
    if (c.detach) {
        sw_child_release(&r.up.child);
        if (!c.json)
            printf("detached: pid file %s; stop with: slipway down --pid-file %s\n", r.pid_path,
                   r.pid_path);
        code = SW_EXIT_OK;
        goto out;
    }
    code = serve_foreground(&r.up, &r.up_opts, c.json, r.pid_path);
out:
    json_decref(out);
    sw_deploy_res_free(&r);
    return code;
}
