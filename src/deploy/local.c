/*
 * deploy/local: the local loop's shared answers, so `up`, `status` and the ladder's and tune's
 * local runners cannot disagree about them:
 *
 *   - which program runs a llama.cpp endpoint here (sw_deploy_llamacpp_program): the one rule
 *     `up` launches with, and the local runners too;
 *   - where `up` keeps an endpoint's record (sw_deploy_pid_path: RUN_DIR/NAME.pid), and whether
 *     that record names a process running now (sw_deploy_up_record);
 *   - before a local runner boots an endpoint on its own address (sw_deploy_local_clear): its
 *     own `up` still running there is stopped when the caller says so, or refused naming the pid
 *     and `slipway down NAME`; a port held by anything else is refused before any boot.
 *
 * What it deliberately does not do: signal anything without the pid file's proofs
 * (sw_pidfile_stop does the stopping), or start anything.
 */
#include "deploy_internal.h"

#include <slipway/fleet.h>

#include <string.h>

const char *sw_deploy_llamacpp_program(const char *declared, char *out, size_t n, const char **how)
{
    bool on_path = false;
    const char *h;
    const char *prog;
    if (declared && *declared) {
        h = "binary:";
        prog = declared;
    } else if (sw_engine_llamacpp_find_server(out, n, &on_path)) {
        /* the bare name when $PATH has it: the pid file records what ran */
        h = on_path ? "$PATH" : "pinned build";
        prog = on_path ? "llama-server" : out;
    } else {
        h = "not found";
        prog = "llama-server"; /* spawn names what is missing */
    }
    if (how)
        *how = h;
    return prog;
}

int sw_deploy_local_program(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *cmd,
                            const char **how, struct sw_err *e)
{
    char buf[4096];
    if (how)
        *how = "binary:";
    if (!cmd->argc || !cmd->argv || !cmd->argv[0])
        return sw_err_set(e, SW_EINVAL, "endpoint %s: no command line", ep ? ep->name : "?");
    if (ep && (ep->engine != SW_FLEET_LLAMACPP || ep->binary.v))
        return 0; /* the endpoint's own `binary:` (or another engine's program) as rendered */
    if (strcmp(cmd->argv[0], "llama-server"))
        return 0;
    const char *prog = sw_deploy_llamacpp_program(NULL, buf, sizeof(buf), how);
    if (prog == cmd->argv[0] || !strcmp(prog, cmd->argv[0]))
        return 0;
    char *dup = sw_strdup(prog);
    if (!dup)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw_free(cmd->argv[0]);
    cmd->argv[0] = dup;
    return 0;
}

int sw_deploy_pid_path(const char *name, char *out, size_t n, struct sw_err *e)
{
    char dir[3800], safe[128];
    int rc = sw_deploy_run_dir(dir, sizeof(dir), e);
    if (rc)
        return rc;
    snprintf(safe, sizeof(safe), "%s", name);
    for (char *p = safe; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
    if ((size_t)snprintf(out, n, "%s/%s.pid", dir, safe) >= n)
        return sw_err_set(e, SW_ERANGE, "%s/%s.pid: path too long", dir, safe);
    return 0;
}

int sw_deploy_up_record(const char *name, struct sw_up_record *r, struct sw_err *e)
{
    memset(r, 0, sizeof(*r));
    int rc = sw_deploy_pid_path(name, r->pid_file, sizeof(r->pid_file), e);
    if (rc)
        return rc;
    struct sw_err re;
    sw_err_clear(&re);
    rc = sw_pidfile_read(r->pid_file, &r->rec, &re);
    if (rc == SW_ENOENT)
        return 0;
    r->present = true;
    if (rc) {
        /* a file `down` would not trust either: never a proof of anything */
        snprintf(r->why, sizeof(r->why), "%.500s", re.msg);
        r->unreadable = true;
        return 0;
    }
    r->verdict = sw_pidfile_check(&r->rec, r->why, sizeof(r->why));
    return 0;
}

int sw_deploy_local_clear(const struct sw_fleet_endpoint *ep, const struct sw_local_clear_opts *o,
                          struct sw_local_clear *r, struct sw_err *e)
{
    struct sw_fleet_addr fa;
    struct sw_up_record ur;
    memset(r, 0, sizeof(*r));
    int rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        return rc;
    rc = sw_deploy_up_record(ep->name, &ur, e);
    if (rc)
        return rc;
    snprintf(r->pid_file, sizeof(r->pid_file), "%s", ur.pid_file);
    if (ur.present && !ur.unreadable && ur.verdict == SW_PID_ALIVE) {
        r->pid = ur.rec.pid;
        snprintf(r->url, sizeof(r->url), "%s", ur.rec.url);
        if (!o || !o->stop_running)
            return sw_err_set(e, SW_EEXIST,
                              "endpoint %s is running under `slipway up` (pid %d, %s, pid file "
                              "%s): a boot of it here would find its port taken; nothing was "
                              "booted. Stop it first (slipway down %s), or pass %s",
                              ep->name, (int)ur.rec.pid, ur.rec.url[0] ? ur.rec.url : fa.url,
                              ur.pid_file, ep->name, "--stop-running to have it stopped first");
        struct sw_stop_report sr;
        rc = sw_pidfile_stop(ur.pid_file, o->grace_ms ? o->grace_ms : 10000, &sr, e);
        if (rc) {
            sw_err_prefix(e, "endpoint %s: stopping what `slipway up` started", ep->name);
            return rc;
        }
        r->stopped = sr.verdict == SW_PID_ALIVE;
        r->stop_s = sr.waited_s;
    }
    /* whatever else holds the address: said now, not found by a failed boot */
    struct sw_err pe;
    sw_err_clear(&pe);
    rc = sw_port_check(fa.bind, fa.port, &pe);
    if (rc == SW_EBUSY)
        return sw_err_set(e, SW_EBUSY,
                          "endpoint %s: %s; nothing was booted (free the port, or move the "
                          "endpoint's listen:)",
                          ep->name, pe.msg);
    if (rc)
        return sw_err_set(e, rc, "endpoint %s: %s", ep->name, pe.msg);
    return 0;
}
