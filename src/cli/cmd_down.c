/*
 * slipway down [--json] [--grace S] NAME | --pid-file F | FLEET.yaml [ENDPOINT]
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
    "slipway down examples/local.yaml",
    "slipway down --pid-file run/local.pid --grace 30 --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_down = {
    .name = "down",
    .summary = "stop an endpoint `up` started (checks the pid still names that process)",
    .synopsis = "NAME | --pid-file FILE | FLEET.yaml [ENDPOINT] [--grace S] [--json]",
    .about = "NAME is the endpoint name `slipway up` used (RUN_DIR/NAME.pid); a fleet file\n"
             "stops its endpoint(s) that way (all of them when none is named). The record\n"
             "(start time, boot id, executable, argv) must still describe the process.\n"
             "Exit: 0 nothing slipway started is left running, 1 it survived SIGKILL or the\n"
             "record was refused, 2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
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
    const char *pid_file, *name = NULL, *fleet_path = NULL, *endpoint = NULL;
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
    if (a.npos > 0 && sw_fleet_is_file_name(a.pos[0])) {
        fleet_path = a.pos[0];
        endpoint = a.npos > 1 ? a.pos[1] : NULL;
    } else if (a.npos > 1) {
        return sw_args_usage(&a, "one endpoint at a time (got %s and %s)", a.pos[0], a.pos[1]);
    } else if (a.npos == 1) {
        name = a.pos[0];
    }
    if (!pid_file && !name && !fleet_path)
        return sw_args_usage(&a, "give a NAME, --pid-file FILE or a FLEET.yaml");
    if (fleet_path && pid_file)
        return sw_args_usage(&a, "either a fleet file or --pid-file, not both");
    if (pid_file && name)
        return sw_args_usage(&a, "either NAME or --pid-file, not both");
    char path[4352] = "";
    if (fleet_path) {
        /* down_fleet builds each path */
    } else if (name) {
        if (strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
            return sw_args_usage(&a, "'%s' is not an endpoint name", name);
        char dir[4096];
        if (sw_deploy_run_dir(dir, sizeof(dir), &e))
            return sw_cli_fail(&e, json);
        snprintf(path, sizeof(path), "%s/%s.pid", dir, name);
    } else {
        snprintf(path, sizeof(path), "%s", pid_file);
    }

    if (fleet_path)
        return down_fleet(fleet_path, endpoint, grace_ms, json);
    return down_one(path, grace_ms, json);
}
