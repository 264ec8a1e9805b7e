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

static int usage(void)
{
    fprintf(stderr, "usage: slipway down [--json] [--grace S] NAME | --pid-file F | FLEET.yaml "
                    "[ENDPOINT]\n"
                    "NAME is the endpoint name `slipway up` used (RUN_DIR/NAME.pid); a fleet file\n"
                    "stops its endpoint(s) that way (all of them when none is named).\n");
    return SW_EXIT_USAGE;
}

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

static bool is_yaml(const char *a)
{
    size_t n = strlen(a);
    return (n > 5 && !strcmp(a + n - 5, ".yaml")) || (n > 4 && !strcmp(a + n - 4, ".yml"));
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
    const char *pid_file = NULL, *name = NULL, *fleet_path = NULL, *endpoint = NULL;
    bool json = false;
    unsigned grace_ms = 10000;
    struct sw_err e;
    sw_err_clear(&e);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--pid-file") && i + 1 < argc) {
            pid_file = argv[++i];
        } else if (!strcmp(a, "--grace") && i + 1 < argc) {
            uint64_t s;
            if (sw_parse_u64(argv[++i], &s, NULL) || s > 3600)
                return sw_cli_usage("down", "--grace %s: seconds expected", argv[i]);
            grace_ms = (unsigned)s * 1000;
        } else if (sw_cli_is(a, "-h", "--help")) {
            usage();
            return SW_EXIT_OK;
        } else if (a[0] == '-') {
            return sw_cli_usage("down", "unknown option '%s'", a);
        } else if (!name && !fleet_path && is_yaml(a)) {
            fleet_path = a;
        } else if (fleet_path && !endpoint) {
            endpoint = a;
        } else if (!name && !fleet_path) {
            name = a;
        } else {
            return sw_cli_usage("down", "one endpoint at a time");
        }
    }
    if (!pid_file && !name && !fleet_path)
        return usage();
    if (fleet_path && pid_file)
        return sw_cli_usage("down", "either a fleet file or --pid-file, not both");
    if (pid_file && name)
        return sw_cli_usage("down", "either NAME or --pid-file, not both");
    char path[4352] = "";
    if (fleet_path) {
        /* down_fleet builds each path */
    } else if (name) {
        if (strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
            return sw_cli_usage("down", "'%s' is not an endpoint name", name);
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
