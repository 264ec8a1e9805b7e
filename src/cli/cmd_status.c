/*
 * slipway status [ENDPOINT] [--fleet FILE] [--deadline DUR] [--json]
 *
 *   Per endpoint, what its host says now (include/slipway/service.h): host and transport, the
 *   unit's state (ActiveState/SubState, NRestarts, MainPID, since), the shape it runs (the
 *   installed unit and environment file read back and compared with what the fleet renders now:
 *   "as rendered" or the drift, line by line), /health and a one-token liveness with their
 *   times, and device memory from the vendor tool the host has. Each host is bounded by its own
 *   deadline: an unreachable host is reported as such within it.
 *
 * Exit: 0 every endpoint serving, 1 any endpoint not serving or its host unreachable, 2 usage.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/service.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"deadline", 0, "DUR", 0,
     "per host: everything asked of it, HTTP included, within DUR (default 20s)", NULL},
    {"record", 0, NULL, 0,
     "record each reached unit's state and NRestarts in the ledger (restarts between deploys:\n"
     "`slipway report`, `slipway export prometheus`)",
     NULL},
    {"ledger", 0, "PATH", 0, "--record: the ledger (default: beside the fleet)", NULL},
    {"no-ledger", 0, NULL, 0, "read and write no ledger (status reads none; not with --record)",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway status --fleet examples/operator.yaml",
    "slipway status frank-small --deadline 5s --json",
    "slipway status --record",
    NULL,
};

const struct sw_cmd_spec sw_spec_status = {
    .name = "status",
    .summary = "each endpoint on its host now: unit state, shape vs render, health, liveness",
    .synopsis = "[ENDPOINT] [--fleet FILE] [--deadline DUR] [--record [--ledger PATH]]\n"
                "    [--no-ledger] [--json]",
    .about = "Reads each host (its own deadline): systemctl show of the endpoint's unit, the\n"
             "installed unit and env file compared line by line with the render (secrets shown\n"
             "as ***), GET /health and a one-token generation, device memory from nvidia-smi,\n"
             "rocm-smi or amd-smi when the host has one. Nothing on a host is changed.\n"
             "A local endpoint `slipway up` started (its pid file still names the process) is\n"
             "reported from the process instead of a unit: pid, since, its argv against what\n"
             "`up` would launch now; it serves when /health and the generation answer.\n"
             "--record adds one row per reached unit to the ledger (state, NRestarts, PID).\n"
             "The fleet is --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml.\n"
             "Exit: 0 all serving, 1 any not serving or unreachable, 2 usage.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

static void print_devices(const json_t *d)
{
    char a[32], b[32];
    const char *tool = json_string_value(json_object_get(d, "tool"));
    const json_t *rs = json_object_get(d, "readings");
    if (!tool || !json_array_size(rs)) {
        printf("    devices: %s%s%s\n", tool ? tool : "", tool ? ": " : "",
               sw_json_str(d, "note", "")[0] ? sw_json_str(d, "note", "") : "no readings");
        return;
    }
    size_t i;
    const json_t *r;
    json_array_foreach(rs, i, r)
    {
        const json_t *u = json_object_get(r, "used_bytes"), *t = json_object_get(r, "total_bytes");
        printf(
            "    device %lld (%s, %s): %s used of %s\n",
            (long long)json_integer_value(json_object_get(r, "index")), sw_json_str(r, "name", ""),
            tool,
            json_is_integer(u) ? sw_fmt_bytes((uint64_t)json_integer_value(u), a, sizeof(a)) : "?",
            json_is_integer(t) ? sw_fmt_bytes((uint64_t)json_integer_value(t), b, sizeof(b)) : "?");
    }
}

/* The liveness probe's detail, then each line that drifted from the render: an argv word of the
 * process `up` supervises (up), else a line of the installed unit's files. */
static void print_liveness_drift(const json_t *l, const json_t *sh, bool up)
{
    fputs("    liveness: ", stdout);
    sw_fput_term(stdout, sw_json_str(l, "detail", ""), 0);
    putchar('\n');
    size_t i;
    const json_t *d;
    json_array_foreach(json_object_get(sh, "drift"), i, d)
    {
        const char *in = json_string_value(json_object_get(d, "installed"));
        const char *re = json_string_value(json_object_get(d, "rendered"));
        long long line = (long long)json_integer_value(json_object_get(d, "line"));
        if (up)
            printf("    drift argv[%lld]\n      running:  %s\n      rendered: %s\n", line - 1,
                   in ? in : "(none)", re ? re : "(none)");
        else
            printf("    drift %s:%lld\n      installed: %s\n      rendered:  %s\n",
                   sw_json_str(d, "file", ""), line, in ? in : "(none)", re ? re : "(none)");
    }
}

/* An endpoint `slipway up` supervises (its pid file names the process): the process, not a unit. */
static void print_up(const json_t *ej)
{
    const json_t *pj = json_object_get(ej, "process");
    const json_t *sh = json_object_get(ej, "shape");
    const json_t *h = json_object_get(ej, "health");
    const json_t *l = json_object_get(ej, "liveness");
    printf(" %-18s pid %-7lld %-12s health %d (%.0f ms)  liveness %s (%.0f ms)\n",
           "supervised by up", (long long)json_integer_value(json_object_get(pj, "pid")),
           json_is_true(json_object_get(sh, "as_rendered")) ? "as rendered" : "DRIFT",
           (int)json_integer_value(json_object_get(h, "status")),
           json_real_value(json_object_get(h, "ms")),
           json_is_true(json_object_get(l, "ok")) ? "ok" : "FAIL",
           json_real_value(json_object_get(l, "ms")));
    printf("    pid file %s at %s, since %s\n    %s, log %s\n", sw_json_str(pj, "pid_file", ""),
           sw_json_str(ej, "url", ""), sw_json_str(pj, "since", ""), sw_json_str(pj, "exe", ""),
           sw_json_str(pj, "log", ""));
    print_liveness_drift(l, sh, true);
    if (sw_json_str(sh, "error", "")[0])
        printf("    shape: %s\n", sw_json_str(sh, "error", ""));
}

static void print_endpoint(const json_t *ej)
{
    const json_t *u = json_object_get(ej, "unit");
    const json_t *sh = json_object_get(ej, "shape");
    const json_t *h = json_object_get(ej, "health");
    const json_t *l = json_object_get(ej, "liveness");
    printf("%-20s %-14s %-14s", sw_json_str(ej, "endpoint", ""), sw_json_str(ej, "host", ""),
           sw_json_str(ej, "state", ""));
    if (!json_is_true(json_object_get(ej, "reached"))) {
        printf(" host not reached (%s) after %.2f s\n    %s: %s\n",
               sw_json_str(ej, "unreachable", ""), json_real_value(json_object_get(ej, "seconds")),
               sw_json_str(ej, "transport", ""), sw_json_str(ej, "error", ""));
        return;
    }
    if (!strcmp(sw_json_str(ej, "supervisor", ""), "up")) {
        print_up(ej);
        print_devices(json_object_get(ej, "devices"));
        return;
    }
    char unit[80];
    snprintf(unit, sizeof(unit), "%s/%s", sw_json_str(u, "active", ""), sw_json_str(u, "sub", ""));
    printf(" %-18s restarts %-3lld pid %-7lld %-12s health %d (%.0f ms)  liveness %s (%.0f ms)\n",
           unit, (long long)json_integer_value(json_object_get(u, "restarts")),
           (long long)json_integer_value(json_object_get(u, "main_pid")),
           json_is_true(json_object_get(sh, "as_rendered")) ? "as rendered"
           : json_is_true(json_object_get(sh, "installed")) ? "DRIFT"
                                                            : "not installed",
           (int)json_integer_value(json_object_get(h, "status")),
           json_real_value(json_object_get(h, "ms")),
           json_is_true(json_object_get(l, "ok")) ? "ok" : "FAIL",
           json_real_value(json_object_get(l, "ms")));
    printf("    %s %s via %s at %s, since %s\n", sw_json_str(u, "name", ""),
           sw_json_str(u, "scope", ""), sw_json_str(ej, "transport", ""),
           sw_json_str(ej, "url", ""),
           sw_json_str(u, "since", "")[0] ? sw_json_str(u, "since", "") : "-");
    print_liveness_drift(l, sh, false);
    if (sw_json_str(u, "error", "")[0]) {
        fputs("    unit: ", stdout);
        sw_fput_term(stdout, sw_json_str(u, "error", ""), 0);
        putchar('\n');
    }
    if (sw_json_str(ej, "render_error", "")[0])
        printf("    render: %s\n", sw_json_str(ej, "render_error", ""));
    const json_t *pj = json_object_get(ej, "process");
    if (pj && sw_json_str(pj, "why", "")[0])
        printf("    `slipway up` record %s: %s\n", sw_json_str(pj, "pid_file", ""),
               sw_json_str(pj, "why", ""));
    print_devices(json_object_get(ej, "devices"));
}

static void print_recorded(const json_t *ej)
{
    const json_t *id = json_object_get(ej, "recorded");
    if (json_is_integer(id))
        printf("    recorded: unit observation #%lld\n", (long long)json_integer_value(id));
    else if (sw_json_str(ej, "not_recorded", "")[0])
        printf("    not recorded: %s\n", sw_json_str(ej, "not_recorded", ""));
}

int sw_cmd_status(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    json_t *out = NULL;
    int rc;
    struct sw_args a;
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_status, argc, argv, &a, &rc))
        return rc;
    static const char *const uses[] = {"record", "ledger", NULL};
    rc = sw_cli_no_ledger(&a, uses);
    if (rc)
        return rc;
    bool json = a.json;
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    const char *path = fl.path;
    const char *only = fl.n_endpoints ? fl.endpoints[0] : NULL;
    int64_t deadline_ms = 20000;
    rc = sw_args_duration(&a, "deadline", 100, 3600000, &deadline_ms);
    if (rc)
        return rc;
    bool record = sw_args_flag(&a, "record");
    const char *ledger = sw_args_str(&a, "ledger");
    if (ledger && !record)
        return sw_args_usage(&a, "--ledger goes with --record");
    if (record && sw_args_flag(&a, "no-ledger"))
        return sw_args_usage(&a, "--record and --no-ledger together");
    if (sw_fleet_load(path, NULL, &f, &e))
        return sw_cli_fail(&e, json);
    struct sw_status_opts o = {.deadline_ms = deadline_ms, .only = only};
    size_t ns = 0, nt = 0;
    if (sw_deploy_status(f, &o, &out, &ns, &nt, &e)) {
        rc = sw_cli_fail(&e, json);
        goto done;
    }
    sw_json_set_str(out, "verdict", ns == nt ? "pass" : "fail");
    size_t n_rec = 0;
    if (record && sw_deploy_status_record(out, ledger, path, &n_rec, &e)) {
        rc = sw_cli_fail(&e, json);
        goto done;
    }
    if (json) {
        sw_json_print(stdout, out, true);
    } else {
        size_t i;
        const json_t *ej;
        json_array_foreach(json_object_get(out, "endpoints"), i, ej)
        {
            print_endpoint(ej);
            print_recorded(ej);
        }
        printf("status: %zu of %zu endpoint(s) serving\n", ns, nt);
        if (record)
            printf("recorded %zu unit observation(s) in %s\n", n_rec,
                   sw_json_str(out, "ledger", ""));
    }
    rc = ns == nt ? SW_EXIT_OK : SW_EXIT_FAIL;
done:
    json_decref(out);
    sw_fleet_free(f);
    return rc;
}
