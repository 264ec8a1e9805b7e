/*
 * slipway install ENDPOINT [--fleet FILE] [--start] [--deadline DUR] [--timeout DUR] [--json]
 *
 *   Put an endpoint's rendered service on its host (include/slipway/service.h): the one render,
 *   its lint (an error refuses the install: nothing is touched on the host), `systemd-analyze
 *   verify` on the host on a staged copy, the unit and its environment file copied atomically to
 *   the scope's places, daemon-reload; with --start, (re)started and waited on until it is
 *   active, /health answers 200 and a one-token generation comes back. Each step is timed, and
 *   the time from render to serving is reported.
 *
 * Exit: 0 installed (and serving with --start), 1 refused by the lint or verify, the host failed,
 * or it did not serve, 2 unusable input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/service.h>
#include <slipway/watch.h>

#include <limits.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"start", 0, NULL, 0,
     "start (restart when it runs) the unit and wait until it serves: active, /health 200, a\n"
     "one-token generation",
     NULL},
    {"deadline", 0, "DUR", 0, "each operation on the host (default 60s)", NULL},
    {"timeout", 0, "DUR", 0, "with --start: start -> serving (default 300s)", NULL},
    {"ledger", 0, "PATH", 0,
     "with --start: record the device readings taken once it serves (default: the ledger\n"
     "beside the fleet file)",
     NULL},
    {"no-ledger", 0, NULL, 0, "read the devices, record nothing", NULL},
    {"watch", 0, NULL, 0,
     "install `slipway watch`'s own unit on this machine instead (slipway-watch.service in\n"
     "/etc/systemd/system; with --start enabled, started and held to staying up)",
     NULL},
    {"metrics", 0, "ADDR", 0, "--watch: watch serves Prometheus text on ADDR", NULL},
    {"settle", 0, "DUR", 0, "--watch --start: how long watch must stay up (default 3s)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway install frank-small --fleet examples/operator.yaml",
    "slipway install frank-small --start --timeout 10m --json",
    "slipway install --watch --start --fleet /etc/slipway/fleet.yaml --metrics 127.0.0.1:9464",
    NULL,
};

const struct sw_cmd_spec sw_spec_install = {
    .name = "install",
    .summary = "install an endpoint's rendered service on its host; --start and prove it serves",
    .synopsis = "ENDPOINT [--fleet FILE] [--start] [--deadline DUR] [--timeout DUR] [--ledger "
                "PATH] [--json]\n"
                "--watch [--fleet FILE] [--ledger PATH] [--metrics ADDR] [--start] [--settle DUR]",
    .about = "render -> lint (an error: nothing touched on the host) -> systemd-analyze verify on\n"
             "the host (staged copy) -> copy unit (0644) and env file (0600) atomically ->\n"
             "daemon-reload -> with --start: restart, active, /health 200, one-token generation.\n"
             "System units go to /etc/systemd/system (env file where the render says,\n"
             "/etc/slipway/NAME.env), user units to ~/.config/systemd/user.\n"
             "--watch: watch's own unit on this machine, verified, written atomically,\n"
             "daemon-reload; --start enables and starts it; a failure puts the previous back.\n"
             "Exit: 0 installed (serving with --start), 1 refused or failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

static void on_step(void *ctx, const struct sw_install_step *s)
{
    if (*(bool *)ctx)
        return;
    printf("  %-13s %s %6.2f s  %s\n", s->name, s->ok ? "ok  " : "FAIL", s->seconds, s->detail);
    fflush(stdout);
}

static void on_watch_step(void *ctx, const char *name, bool ok, double seconds, const char *detail)
{
    if (*(bool *)ctx)
        return;
    printf("  %-13s %s %6.2f s  %s\n", name, ok ? "ok  " : "FAIL", seconds, detail);
    fflush(stdout);
}

/* --watch: src/watch/install.c. */
static int install_watch(const struct sw_args *a)
{
    struct sw_err e;
    struct sw_watch_install_result r;
    char exe[PATH_MAX], fleet[PATH_MAX], ledger[PATH_MAX];
    const char *lp = NULL;
    bool json = a->json;
    int64_t dl = 30000, settle = 3000;
    int rc;
    sw_err_clear(&e);
    if (a->npos > 0)
        return sw_args_usage(a, "--watch installs the supervisor of the whole fleet: no ENDPOINT");
    if (sw_args_flag(a, "no-ledger") || sw_args_str(a, "timeout"))
        return sw_args_usage(a, "--watch takes neither --no-ledger nor --timeout (--settle)");
    rc = sw_args_duration(a, "deadline", 100, 86400000, &dl);
    if (!rc)
        rc = sw_args_duration(a, "settle", 100, 600000, &settle);
    if (rc)
        return rc;
    struct sw_cli_fleet fl;
    if ((rc = sw_cli_fleet(a, 0, 0, &fl)) ||
        (rc = sw_cli_watch_paths(a, fl.path, exe, fleet, ledger, &lp)))
        return rc;
    struct sw_watch_install_opts o = {.exe = exe,
                                      .fleet_path = fleet,
                                      .ledger_path = lp,
                                      .metrics_addr = sw_args_str(a, "metrics"),
                                      .start = sw_args_flag(a, "start"),
                                      .settle_ms = settle,
                                      .deadline_ms = dl,
                                      .on_step = on_watch_step,
                                      .ctx = &json};
    if (!json)
        printf("install --watch on this machine\n");
    int irc = sw_watch_install(&o, &r, &e);
    if (json) {
        json_t *j =
            json_pack("{s:s,s:s,s:b,s:b,s:b,s:b,s:b,s:b,s:s,s:s}", "unit", r.unit, "unit_path",
                      r.unit_path, "refused", r.refused, "replaced", r.replaced, "installed",
                      r.installed, "started", r.started, "serving", r.serving, "put_back",
                      r.put_back, "journal", r.journal, "verdict", irc ? "fail" : "pass");
        if (j && irc)
            sw_json_set_str(j, "error", e.msg);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        if (r.journal[0])
            printf("  journal of %s (newest lines):\n%s", r.unit, r.journal);
        if (irc)
            fprintf(stderr, "slipway: %s\n", e.msg);
        else
            printf("%s installed at %s%s\n", r.unit, r.unit_path,
                   r.serving ? ", enabled and running" : " (--start enables and starts it)");
    }
    if (!irc)
        return SW_EXIT_OK;
    return r.refused || r.installed || r.started || r.put_back ? SW_EXIT_FAIL
                                                               : sw_cli_exit_for(irc);
}

int sw_cmd_install(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_install_result r;
    json_t *out = NULL;
    struct sw_ledger led;
    bool led_open = false;
    int rc;
    struct sw_args a;
    memset(&r, 0, sizeof(r));
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_install, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    if (sw_args_flag(&a, "watch"))
        return install_watch(&a);
    if (sw_args_str(&a, "metrics") || sw_args_str(&a, "settle"))
        return sw_args_usage(&a, "--metrics and --settle go with --watch");
    if (a.npos < 1)
        return sw_cli_need_endpoint(&a, " to install");
    const char *name = a.pos[0];
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    const char *fleet_path = fl.path;
    int64_t dl = 60000, to = 300000;
    rc = sw_args_duration(&a, "deadline", 100, 86400000, &dl);
    if (!rc)
        rc = sw_args_duration(&a, "timeout", 100, 86400000, &to);
    if (rc)
        return rc;
    if (sw_fleet_load(fleet_path, NULL, &f, &e))
        return sw_cli_fail(&e, json);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    if (!ep) {
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", fleet_path, name);
        rc = sw_cli_fail(&e, json);
        goto done;
    }
    struct sw_install_opts o = {.start = sw_args_flag(&a, "start"),
                                .deadline_ms = dl,
                                .serve_timeout_ms = (unsigned)to,
                                .on_step = on_step,
                                .ctx = &json};
    if (sw_args_str(&a, "ledger") && sw_args_flag(&a, "no-ledger")) {
        rc = sw_args_usage(&a, "--ledger and --no-ledger are each other's opposite");
        goto done;
    }
    if (o.start && !sw_args_flag(&a, "no-ledger")) {
        char lpath[4096];
        if (sw_ledger_open_for(&led, sw_args_str(&a, "ledger"), fleet_path, NULL,
                               SW_LEDGER_MUST_EXIST, &led_open, lpath, sizeof(lpath), &e)) {
            rc = sw_cli_fail(&e, json);
            goto done;
        }
        o.ledger = &led;
    }
    if (!json)
        printf("install %s on %s\n", ep->name, ep->host ? ep->host->name : "?");
    int irc = sw_deploy_install(f, ep, &o, &r, &e);
    if (json) {
        out = sw_install_result_json(&r);
        if (out && irc)
            sw_json_set_str(out, "error", e.msg);
        if (out)
            sw_json_set_str(out, "verdict", irc ? "fail" : "pass");
        if (!out) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, json);
            goto done;
        }
        sw_json_print(stdout, out, true);
    } else {
        size_t i;
        const json_t *fj;
        json_array_foreach(r.findings, i, fj)
        {
            printf("  %s:%lld: %s: %s%s\n", r.unit,
                   (long long)json_integer_value(json_object_get(fj, "line")),
                   json_string_value(json_object_get(fj, "law")),
                   strcmp(json_string_value(json_object_get(fj, "severity")), "warning")
                       ? ""
                       : "warning: ",
                   json_string_value(json_object_get(fj, "message")));
        }
        if (r.journal[0])
            printf("  journal of %s (newest lines):\n%s", r.unit, r.journal);
        if (irc)
            fprintf(stderr, "slipway: %s\n", e.msg);
        else if (r.serving)
            printf("%s serving at %s%s%s: render -> serving in %.2f s\n", r.unit, r.url,
                   r.via[0] ? " on its host, through " : "", r.via, r.render_to_serving_s);
        else
            printf("%s installed on %s (%s, %s); not started (--start starts it)\n", r.unit, r.host,
                   r.unit_path, r.env_path);
    }
    if (!irc)
        rc = SW_EXIT_OK;
    else if (r.refused || r.n_steps > 1)
        rc = SW_EXIT_FAIL; /* the work ran and found a failure */
    else
        rc = sw_cli_exit_for(irc);
done:
    if (led_open)
        sw_ledger_close(&led);
    json_decref(out);
    sw_install_result_free(&r);
    sw_fleet_free(f);
    return rc;
}
