/*
 * deploy/status_up: what status says of a local endpoint that `slipway up` started. Its record
 * (RUN_DIR/NAME.pid, deploy/local) is read under the pid-file rules and checked against /proc
 * (pid, boot, start time, executable, argv); a record that still names its process makes the
 * endpoint "supervised by up": its state comes from the process (pid, group, since, executable,
 * log), and its shape is the argv it runs compared, argument by argument, with the argv `up`
 * would launch for the fleet now (the engine adapter's one render and deploy/local's one
 * program). A stale, refused or forged record is reported as what it is and proves nothing.
 *
 * What it deliberately does not do: signal or remove anything (down does), or prove health and
 * liveness (deploy/status does, through the endpoint's route, as for a unit).
 */
#include "deploy_internal.h"
#include "service_internal.h"

#include <slipway/fleet.h>

#include <string.h>

static const char *verdict_name(enum sw_pid_verdict v)
{
    switch (v) {
    case SW_PID_ALIVE:
        return "alive";
    case SW_PID_GONE:
        return "gone";
    case SW_PID_REUSED:
        return "reused";
    case SW_PID_MISMATCH:
        return "mismatch";
    }
    return "?";
}

/* The next NUL-terminated argument of args[*off..len), or NULL at the end. */
static const char *next_arg(const char *args, size_t len, size_t *off)
{
    if (*off >= len)
        return NULL;
    const char *a = args + *off;
    *off += strnlen(a, len - *off) + 1;
    return a;
}

/* The running argv against what `up` would launch now: {as_rendered, installed: true, drift:
 * [{file, line, installed, rendered}]} (installed: the process runs; line: the argument's
 * 1-based position). */
static json_t *shape_json(const struct sw_fleet_endpoint *ep, const struct sw_up_record *u)
{
    struct sw_engine_launch l;
    struct sw_engine_cmd cmd;
    struct sw_err e;
    char bin[4096];
    json_t *sj = json_object(), *drift = json_array();
    memset(&l, 0, sizeof(l));
    memset(&cmd, 0, sizeof(cmd));
    sw_err_clear(&e);
    sw_json_set_bool(sj, "installed", true);
    sw_json_set_str(sj, "compared_with", "the command line `slipway up` would launch now");
    int rc = ep->engine == SW_FLEET_LLAMACPP
                 ? sw_engine_launch_from_fleet(ep, &l, &e)
                 : sw_err_set(&e, SW_EUNSUPPORTED, "`up` boots llama.cpp endpoints only");
    if (!rc) {
        l.binary = sw_deploy_llamacpp_program(l.binary, bin, sizeof(bin), NULL);
        rc = sw_engine_llamacpp_render(&l, &cmd, &e);
    }
    size_t n = 0;
    if (rc) {
        sw_json_set_str(sj, "error", e.msg);
    } else {
        size_t off = 0;
        for (size_t i = 0;; i++) {
            const char *run = next_arg(u->rec.args, u->rec.args_len, &off);
            const char *ren = i < cmd.argc ? cmd.argv[i] : NULL;
            if (!run && !ren)
                break;
            if (run && ren && !strcmp(run, ren))
                continue;
            if (n++ < 20) {
                json_t *d = json_object();
                sw_json_set_str(d, "file", "argv");
                sw_json_set_int(d, "line", (int64_t)i + 1);
                sw_json_set_new(d, "installed", run ? json_string(run) : json_null());
                sw_json_set_new(d, "rendered", ren ? json_string(ren) : json_null());
                json_array_append_new(drift, d);
            }
        }
    }
    sw_json_set_bool(sj, "as_rendered", !rc && n == 0);
    sw_json_set_int(sj, "drift_lines", (int64_t)n);
    sw_json_set_new(sj, "drift", drift);
    sw_engine_cmd_free(&cmd);
    sw_engine_launch_free(&l);
    return sj;
}

int sw__status_up_read(const struct sw_fleet_endpoint *ep, struct sw__status_up *out)
{
    struct sw_up_record u;
    struct sw_err e;
    char when[40];
    memset(out, 0, sizeof(*out));
    sw_err_clear(&e);
    if (sw_deploy_up_record(ep->name, &u, &e)) {
        out->process = json_pack("{s:s, s:s}", "supervisor", "up", "error", e.msg);
        return 0;
    }
    if (!u.present)
        return 0;
    json_t *p = json_object();
    if (!p)
        return SW_ENOMEM;
    sw_json_set_str(p, "supervisor", "up");
    sw_json_set_str(p, "pid_file", u.pid_file);
    if (u.unreadable) {
        sw_json_set_str(p, "verdict", "refused");
        sw_json_set_str(p, "why", u.why);
        out->process = p;
        return 0;
    }
    out->alive = u.verdict == SW_PID_ALIVE;
    sw_json_set_str(p, "verdict", verdict_name(u.verdict));
    if (u.why[0])
        sw_json_set_str(p, "why", u.why);
    sw_json_set_int(p, "pid", u.rec.pid);
    sw_json_set_int(p, "pgid", u.rec.pgid);
    sw_json_set_int(p, "started_unix", u.rec.started_unix);
    sw_json_set_str(p, "since",
                    u.rec.started_unix ? sw_fmt_time(u.rec.started_unix, when, sizeof(when)) : "");
    sw_json_set_str(p, "exe", u.rec.exe);
    sw_json_set_str(p, "url", u.rec.url);
    sw_json_set_str(p, "log", u.rec.log);
    sw_json_set_bool(p, "detached", u.rec.supervisor == 0);
    out->process = p;
    if (out->alive)
        out->shape = shape_json(ep, &u);
    return 0;
}

void sw__status_up_free(struct sw__status_up *u)
{
    json_decref(u->process);
    json_decref(u->shape);
    memset(u, 0, sizeof(*u));
}
