/*
 * slipway down [ENDPOINT|NAME...] [--fleet FILE] | --pid-file F [--grace S] [--json]
 *
 * Stop what `slipway up` started: SIGTERM to its process group, a grace period, SIGKILL. The pid
 * file's record (start time, boot id, executable, argv) must still describe the running process:
 * a pid that now belongs to something else is never signalled, and a stale record is removed with
 * the reason. The file and its directory must be the caller's alone (deploy checks that).
 *
 * Exit: 0 nothing slipway started is left running (stopped now, or already gone); 1 it survived
 * SIGKILL, or the record was refused (unsafe file or directory, or it does not describe the
 * process at its pid); 2 the pid file is malformed.
 */
#include "cli.h"

#include <slipway/deploy.h>
#include <slipway/fleet.h>

#include <string.h>

static const struct sw_opt opts[] = {
    {"pid-file", 0, "FILE", 0, "the pid file to act on (instead of NAME)", NULL},
    {"grace", 0, "S", 0, "seconds between SIGTERM and SIGKILL, 0..3600 (default 10)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway down local",
    "slipway down --fleet examples/local.yaml",
    "slipway down --pid-file run/local.pid --grace 30 --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_down = {
    .name = "down",
    .summary = "stop an endpoint `up` started (checks the pid still names that process)",
    .synopsis = "[ENDPOINT|NAME...] [--fleet FILE] [--grace S] [--json]\n"
                "--pid-file FILE [--grace S] [--json]",
    .about = "NAME is the endpoint name `slipway up` used (RUN_DIR/NAME.pid), a fleet's endpoint\n"
             "or the --name given to `up -- llama-server ...`; with no NAME, every endpoint of\n"
             "the fleet (--fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml), and with\n"
             "--fleet, the ENDPOINTs named must be that fleet's. The record\n"
             "(start time, boot id, executable, argv) must still describe the process.\n"
             "Exit: 0 nothing slipway started is left running, 1 it survived SIGKILL or the\n"
             "record was refused, 2 unusable input.",
    .opts = opts,
    .max_args = 8,
    .examples = examples,
    .fleet = true,
};

/* Stop what one pid file records. Exit code as documented above. */
static int down_one(const char *path, unsigned grace_ms, bool json)
{
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_pidfile rec;
    int rc = sw_pidfile_read(path, &rec, &e);
    if (rc == SW_ENOENT) {
        if (json) {
            json_t *o = json_pack("{s:s, s:b, s:s}", "pid_file", path, "running", 0, "note",
                                  "no pid file: nothing to stop");
            sw_json_print(stdout, o, true);
            json_decref(o);
        } else {
            printf("%s: not running (no pid file)\n", path);
        }
        return SW_EXIT_OK;
    }
    if (rc)
        return sw_cli_fail(&e, json);

    struct sw_stop_report r;
    rc = sw_pidfile_stop(path, grace_ms, &r, &e);
    static const char *const verdicts[] = {"alive", "gone", "reused", "mismatch"};
    if (json) {
        json_t *o = json_object();
        sw_json_set_str(o, "pid_file", path);
        sw_json_set_str(o, "endpoint", rec.endpoint);
        sw_json_set_int(o, "pid", rec.pid);
        sw_json_set_int(o, "pgid", rec.pgid);
        sw_json_set_str(o, "verdict", verdicts[r.verdict]);
        sw_json_set_bool(o, "signalled", r.signalled);
        sw_json_set_bool(o, "killed", r.killed);
        sw_json_set_real(o, "waited_s", r.waited_s);
        sw_json_set_str(o, "why", r.why[0] ? r.why : NULL);
        sw_json_set_bool(o, "running", rc != 0 && r.verdict != SW_PID_MISMATCH);
        if (rc)
            sw_json_set_new(o, "error", sw_err_to_json(&e));
        sw_json_print(stdout, o, true);
        json_decref(o);
    } else if (rc) {
        fprintf(stderr, "slipway down: %s\n", e.msg);
    } else if (r.verdict == SW_PID_ALIVE) {
        printf("%s (pid %d) stopped in %.1f s%s\n", rec.endpoint[0] ? rec.endpoint : path,
               (int)rec.pid, r.waited_s, r.killed ? " (needed SIGKILL)" : "");
    } else {
        printf("%s: not running: %s; removed the stale pid file %s%s\n",
               rec.endpoint[0] ? rec.endpoint : "endpoint", r.why, path,
               r.verdict == SW_PID_REUSED ? " (the process now using that pid was left alone)"
                                          : "");
    }
    return rc ? SW_EXIT_FAIL : SW_EXIT_OK;
}

static int down_fleet(const char *fleet_path, const char *endpoint, unsigned grace_ms, bool json)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    char dir[3800], path[4096];
    int rc = sw_fleet_load(fleet_path, NULL, &f, &e);
    if (rc)
        return sw_cli_fail(&e, json);
    if (endpoint && !sw_fleet_endpoint(f, endpoint)) {
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint named '%s'", fleet_path, endpoint);
        sw_fleet_free(f);
        return sw_cli_fail(&e, json);
    }
    rc = sw_deploy_run_dir(dir, sizeof(dir), &e);
    if (rc) {
        sw_fleet_free(f);
        return sw_cli_fail(&e, json);
    }
    int code = SW_EXIT_OK;
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (endpoint && strcmp(ep->name, endpoint))
            continue;
        snprintf(path, sizeof(path), "%s/%s.pid", dir, ep->name);
        int c = down_one(path, grace_ms, json);
        if (c > code)
            code = c;
    }
    sw_fleet_free(f);
    return code;
}

int sw_cmd_down(int argc, char **argv)
{
    const char *pid_file, *name = NULL, *fleet_path = NULL;
    bool json;
    unsigned grace_ms = 10000;
    struct sw_err e;
    struct sw_args a;
    int code;
    sw_err_clear(&e);
    if (!sw_args_parse(&sw_spec_down, argc, argv, &a, &code))
        return code;
    json = a.json;
    pid_file = sw_args_str(&a, "pid-file");
    int64_t grace = grace_ms;
    code = sw_args_duration(&a, "grace", 0, 3600000, &grace);
    if (code)
        return code;
    grace_ms = (unsigned)grace;
    if (pid_file && (a.npos || a.fleet))
        return sw_args_usage(&a, "either --pid-file or NAME/--fleet, not both");
    bool path_arg = false;
    for (int i = 0; i < a.npos; i++)
        path_arg |= sw_fleet_is_file_name(a.pos[i]) || strchr(a.pos[i], '/') != NULL;
    if (!pid_file && (a.fleet || !a.npos || path_arg)) {
        /* the fleet's endpoints (a file name where a NAME goes is refused there) */
        struct sw_cli_fleet fl;
        code = sw_cli_fleet(&a, 0, 0, &fl);
        if (code)
            return code;
        fleet_path = fl.path;
    }
    if (fleet_path) {
        if (a.npos <= 1)
            return down_fleet(fleet_path, a.npos ? a.pos[0] : NULL, grace_ms, json);
        for (int i = 0; i < a.npos; i++) {
            int c = down_fleet(fleet_path, a.pos[i], grace_ms, json); /* SW_MAX evaluates twice */
            code = SW_MAX(code, c);
        }
        return code;
    }
    char path[4352] = "";
    if (pid_file)
        return down_one(pid_file, grace_ms, json);
    /* one or more names `up` used, each its own pid file */
    char dir[4096];
    if (sw_deploy_run_dir(dir, sizeof(dir), &e))
        return sw_cli_fail(&e, json);
    for (int i = 0; i < a.npos; i++) {
        name = a.pos[i];
        if (!strcmp(name, "..") || !strcmp(name, "."))
            return sw_args_usage(&a, "'%s' is not an endpoint name", name);
    }
    for (int i = 0; i < a.npos; i++) {
        snprintf(path, sizeof(path), "%s/%s.pid", dir, a.pos[i]);
        int c = down_one(path, grace_ms, json); /* once: SW_MAX evaluates its arguments twice */
        code = SW_MAX(code, c);
    }
    return code;
}
