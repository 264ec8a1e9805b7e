/*
 * slipway lint FILE.service [--env-file FILE] [--no-verify] [--json]
 *
 * The relational lint of a systemd unit the operator already has (include/slipway/unit_lint.h):
 * every finding as FILE:LINE: law: message, the relationship named with both values. The unit's
 * drop-ins beside it are read after it (given a drop-in, its unit and all of them), and the
 * files read are named; a finding in a drop-in names the drop-in.
 * Exit: 0 clean, 1 findings, 2 usage or a file that cannot be read as a unit.
 */
#include "cli.h"

#include <slipway/unit_lint.h>

#include <string.h>

static const struct sw_opt opts[] = {
    {"env-file", 0, "FILE", 0,
     "the unit's EnvironmentFile, read for $VAR / ${VAR} in its command lines", NULL},
    {"no-verify", 0, NULL, 0, "do not run `systemd-analyze verify` on the file", NULL},
    {"check-paths", 0, NULL, 0,
     "also check that the engine's model paths exist on this machine\n"
     "(for a container: the host side of its mount)",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway lint /etc/systemd/system/frank-primary.service",
    "slipway lint frank-small.service --env-file /etc/slipway/frank-small.env --json",
    "slipway lint --no-verify unit.service",
    NULL,
};

const struct sw_cmd_spec sw_spec_lint = {
    .name = "lint",
    .summary = "lint a systemd unit: stop timeout, start limits, Restart, paths, digest, secrets",
    .synopsis = "FILE.service|NAME.d/FILE.conf [--env-file FILE] [--no-verify] [--check-paths] "
                "[--json]",
    .about = "Laws: stop-timeout (TimeoutStopSec above the container's stop grace),\n"
             "start-limit (StartLimit* once, in [Unit]), restart (Restart=always where the\n"
             "main process exits 0 on a dead engine), path (every path the engine receives\n"
             "inside its mounts; absolute), image-digest, secret (none on a command line or in\n"
             "the unit), verify (any line `systemd-analyze verify` prints), syntax (lines\n"
             "systemd skips, a CR that ends a line, CR LF line ends).\n"
             "The drop-ins FILE.service.d/*.conf are read after the unit, in lexical order, as\n"
             "systemd applies them; given a drop-in, its unit and all of its drop-ins are read.\n"
             "Exit: 0 clean, 1 findings, 2 usage or an unreadable file.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
};

int sw_cmd_lint(int argc, char **argv)
{
    struct sw_args a;
    int code;
    if (!sw_args_parse(&sw_spec_lint, argc, argv, &a, &code))
        return code;
    if (a.npos != 1)
        return sw_args_usage(&a, "give one unit file");
    const char *path = a.pos[0];
    struct sw_unit_lint_opts o = {0};
    o.verify = !sw_args_flag(&a, "no-verify");
    if (sw_args_flag(&a, "check-paths"))
        o.exists = sw_unit_exists_local;
    struct sw_unit_report r = {0};
    struct sw_unit *u = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_unit_lint_file(path, sw_args_str(&a, "env-file"), &o, &r, &u, &e);
    if (rc) {
        sw_unit_report_free(&r);
        return sw_cli_fail(&e, a.json);
    }
    if (a.json) {
        json_t *root = json_object(), *arr = json_array();
        sw_json_set_str(root, "file", path);
        json_t *files = json_array();
        for (size_t i = 0; i < u->n_parts; i++)
            json_array_append_new(files, json_string(u->parts[i].where));
        sw_json_set_new(root, "files", files);
        sw_json_set_str(root, "engine", sw_unit_engine_name(u->engine));
        sw_json_set_bool(root, "container", u->ctr.found);
        sw_json_set_bool(root, "verified", o.verify);
        sw_json_set_str(root, "image", u->ctr.image);
        json_t *paths = json_array();
        for (size_t i = 0; i < u->n_paths; i++) {
            json_t *p = json_object();
            sw_json_set_str(p, "role", u->paths[i].role);
            sw_json_set_str(p, "flag", u->paths[i].flag);
            sw_json_set_str(p, "path", u->paths[i].path);
            json_array_append_new(paths, p);
        }
        sw_json_set_new(root, "paths", paths);
        json_t *mounts = json_array();
        for (size_t i = 0; i < u->ctr.n_mounts; i++) {
            json_t *m = json_object();
            sw_json_set_str(m, "host", u->ctr.mounts[i].host);
            sw_json_set_str(m, "container", u->ctr.mounts[i].cont);
            sw_json_set_bool(m, "ro", u->ctr.mounts[i].ro);
            json_array_append_new(mounts, m);
        }
        sw_json_set_new(root, "mounts", mounts);
        if (u->stop_grace_s >= 0)
            sw_json_set_int(root, "stop_grace_s", u->stop_grace_s);
        for (size_t i = 0; i < r.n; i++) {
            json_t *f = json_object();
            sw_json_set_str(f, "law", r.v[i].law);
            sw_json_set_str(f, "severity",
                            r.v[i].severity == SW_UNIT_WARNING ? "warning" : "error");
            int line = 0;
            sw_json_set_str(f, "file", sw_unit_pos(u, r.v[i].line, &line));
            sw_json_set_int(f, "line", line);
            sw_json_set_str(f, "message", r.v[i].msg);
            json_array_append_new(arr, f);
        }
        sw_json_set_new(root, "findings", arr);
        sw_json_set_bool(root, "clean", r.n == 0);
        sw_json_print(stdout, root, true);
        json_decref(root);
    } else {
        if (u->n_parts > 1) {
            printf("%s: read with its drop-in%s, in this order:", u->where,
                   u->n_parts > 2 ? "s" : "");
            for (size_t i = 1; i < u->n_parts; i++)
                printf("%s %s", i > 1 ? "," : "", u->parts[i].where);
            printf("\n");
        }
        for (size_t i = 0; i < r.n; i++) {
            char at[32] = "";
            int line = 0;
            const char *file = sw_unit_pos(u, r.v[i].line, &line);
            if (line > 0) /* 0: about the file as a whole */
                snprintf(at, sizeof(at), ":%d", line);
            printf("%s%s: %s: %s%s\n", file, at, r.v[i].law,
                   r.v[i].severity == SW_UNIT_WARNING ? "warning: " : "", r.v[i].msg);
        }
        if (r.n == 0)
            printf("%s: clean (%s%s%s)\n", path, u->ctr.found ? "container, " : "",
                   u->engine ? sw_unit_engine_name(u->engine) : "no engine recognised",
                   o.verify ? ", systemd-analyze verify said nothing" : ", not verified");
        else
            printf("%zu finding%s\n", r.n, r.n == 1 ? "" : "s");
    }
    code = r.n ? SW_EXIT_FAIL : SW_EXIT_OK;
    sw_unit_report_free(&r);
    sw_unit_free(u);
    return code;
}
