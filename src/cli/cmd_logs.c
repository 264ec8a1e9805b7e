/*
 * slipway logs ENDPOINT [--fleet FILE] [-f] [--since T] [--boot N] [-n N] [--json]
 *
 *   The journal of the endpoint's unit, read from its host (journalctl), or the log of the engine
 *   `up --detach` runs for it on this machine (its record names it), each line run through
 *   the engine's boot-log parser: a failure line is marked with its class and phase
 *   (`!! oom/kv_alloc`). With --json one object per line {line, class, phase}.
 *
 * Exit: 0 read, 1 the host or journal failed, 2 usage.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/watch.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"follow", 'f', NULL, 0, "keep reading as the engine writes (Ctrl-C ends)", NULL},
    {"since", 0, "T", 0, "journalctl --since (\"1 hour ago\", 2026-10-01 13:00)", NULL},
    {"boot", 0, "N", 0, "journalctl --boot N (0 this boot, -1 the previous)", NULL},
    {"lines", 'n', "N", 0, "the last N lines (default 200)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway logs frank-primary --fleet fleet.yaml",
    "slipway logs frank-primary -f",
    "slipway logs frank-primary --since '1 hour ago' --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_logs = {
    .name = "logs",
    .summary = "an endpoint's journal from its host (or up's log here), failure lines classified",
    .synopsis = "ENDPOINT [--fleet FILE] [-f] [--since T] [--boot N] [-n N] [--json]",
    .about = "journalctl of the endpoint's unit on its host, or, for an engine `up` runs on\n"
             "this machine, its log (-f until the engine exits; --since applies to the run as a\n"
             "whole: its lines carry no time); every line goes through the\n"
             "engine's boot-log parser and a failure (oom, compile, bad payload, ...) is\n"
             "marked with its class and phase.",
    .opts = opts,
    .max_args = 1,
    .fleet = true,
    .examples = examples,
};

static bool g_json;

static void on_line(void *ctx, const char *line, const char *cls, const char *phase)
{
    (void)ctx;
    if (g_json) {
        json_t *j = json_object();
        sw_json_set_str(j, "line", line);
        sw_json_set_new(j, "class", cls ? json_string(cls) : json_null());
        sw_json_set_new(j, "phase", phase ? json_string(phase) : json_null());
        char *s = json_dumps(j, JSON_COMPACT);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        if (cls)
            printf("!! %s%s%s  ", cls, phase ? "/" : "", phase ? phase : "");
        sw_fput_term(stdout, line, 0);
        putchar('\n');
    }
    fflush(stdout);
}

int sw_cmd_logs(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    int rc;
    struct sw_args a;
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_logs, argc, argv, &a, &rc))
        return rc;
    g_json = a.json;
    uint64_t lines = 200;
    rc = sw_args_number(&a, "lines", 1, 1000000, &lines);
    if (rc)
        return rc;
    struct sw_watch_logs_opts o = {.follow = sw_args_flag(&a, "follow"),
                                   .since = sw_args_str(&a, "since"),
                                   .lines = (size_t)lines,
                                   .on_line = on_line};
    const char *boot = sw_args_str(&a, "boot");
    if (boot) {
        char *end = NULL;
        long b = strtol(boot, &end, 10);
        if (!*boot || *end || b < -1000 || b > 1000)
            return sw_args_usage(&a, "--boot %s: a whole number such as 0 or -1", boot);
        o.boot = (int)b;
        o.set_boot = true;
    }
    struct sw_cli_fleet fl;
    if ((rc = sw_cli_fleet(&a, 0, SW_CLI_FLEET_LOAD, &fl)))
        return rc;
    f = fl.fleet;
    if (fl.n_endpoints != 1) {
        sw_fleet_free(f);
        return fl.n_endpoints ? sw_args_usage(&a, "one endpoint at a time")
                              : sw_cli_need_endpoint(&a, "");
    }
    const char *name = fl.endpoints[0];
    char from[4400] = "";
    o.from = from;
    o.from_n = sizeof(from);
    sw_cli_catch_stop(false);
    o.stop = &sw_cli_stop;
    rc = sw_watch_logs(f, name, &o, &e);
    if (!a.json && from[0])
        fprintf(stderr, "logs: %s\n", from);
    sw_cli_release_stop();
    rc = rc ? sw_cli_fail(&e, a.json) : SW_EXIT_OK;
    sw_fleet_free(f);
    return rc;
}
