/*
 * watch/logs: `slipway logs ENDPOINT`: the journal of the endpoint's unit (its name from the one
 * render, unit.h) read from its host with journalctl (-f follows, --since, --boot), each line
 * passed through the engine's own boot-log parser so a failure line (an OOM, a compile
 * constraint, a bad payload) comes out with its class and phase.
 *
 * What it deliberately does not do: read logs of an engine `up` runs on this machine without a
 * unit (its run directory holds them), or keep anything (the journal does).
 */
#include "watch_internal.h"

#include <slipway/engine.h>
#include <slipway/host.h>
#include <slipway/unit.h>

#include <stdio.h>
#include <string.h>

struct lctx {
    const struct sw_engine *eng;
    const struct sw_watch_logs_opts *o;
};

static int on_line(void *ctx, const char *line, size_t len)
{
    struct lctx *c = ctx;
    char buf[4096];
    snprintf(buf, sizeof(buf), "%.*s", (int)SW_MIN(len, sizeof(buf) - 1), line);
    const char *cls = NULL, *phase = NULL;
    /* one line at a time: a class the parser names from that line alone (an OOM, a compile
     * constraint, a missing payload); "unknown" and "not this engine" say nothing of one line */
    struct sw_boot_status st;
    memset(&st, 0, sizeof(st));
    json_t *out = NULL;
    if (c->eng && c->eng->bootlog &&
        !c->eng->bootlog(buf, strlen(buf), "journal", NULL, &out, &st, NULL) && st.failed &&
        st.failure.cls != SW_BOOT_UNKNOWN && st.failure.cls != SW_BOOT_NOT_THIS_ENGINE) {
        cls = sw_boot_class_name(st.failure.cls);
        phase = sw_boot_phase_name(st.failure.phase);
    }
    json_decref(out);
    if (c->o->on_line)
        c->o->on_line(c->o->ctx, buf, cls, phase);
    return c->o->stop && *c->o->stop;
}

int sw_watch_logs(const struct sw_fleet *f, const char *endpoint,
                  const struct sw_watch_logs_opts *o, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, endpoint);
    if (!ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s'",
                          f->path ? f->path : "the fleet", endpoint);
    if (!ep->host)
        return sw_err_set(e, SW_EINVAL,
                          "%s: endpoint %s has no host: its unit's journal is on "
                          "none (an engine `up` runs keeps its log in its run "
                          "directory)",
                          f->path ? f->path : "the fleet", endpoint);
    struct sw_unit_render r;
    memset(&r, 0, sizeof(r));
    int rc = sw_unit_render_endpoint(f, ep, &r, e);
    if (rc)
        return rc;
    char unit[300], lines[32], boot[32];
    snprintf(unit, sizeof(unit), "%s.service", r.name);
    bool user = r.scope == SW_FLEET_SCOPE_USER;
    sw_unit_render_free(&r);
    const char *argv[16];
    size_t n = 0;
    argv[n++] = "journalctl";
    if (user)
        argv[n++] = "--user";
    argv[n++] = "-u";
    argv[n++] = unit;
    argv[n++] = "-o";
    argv[n++] = "cat";
    argv[n++] = "--no-pager";
    if (o->since) {
        argv[n++] = "--since";
        argv[n++] = o->since;
    }
    if (o->set_boot) {
        snprintf(boot, sizeof(boot), "%d", o->boot);
        argv[n++] = "--boot";
        argv[n++] = boot;
    }
    if (o->follow) {
        argv[n++] = "-f";
    } else if (!o->since) {
        snprintf(lines, sizeof(lines), "%zu", o->lines ? o->lines : 200);
        argv[n++] = "-n";
        argv[n++] = lines;
    }
    argv[n] = NULL;
    struct sw_host h;
    rc = sw_host_open_fleet(&h, ep->host, 5, e);
    if (rc)
        return rc;
    struct lctx c = {.eng = sw_engine_find(sw_fleet_engine_name(ep->engine)), .o = o};
    struct sw_host_run_opts ro = {.deadline_ms = o->deadline_ms > 0 ? o->deadline_ms
                                                 : o->follow        ? INT64_MAX / 4
                                                                    : 30000,
                                  .on_line = on_line,
                                  .ctx = &c};
    struct sw_host_result hr;
    rc = sw_host_run(&h, argv, &ro, &hr, e);
    if (rc == SW_ETIMEDOUT && o->follow)
        rc = 0;
    sw_host_result_free(&hr);
    sw_host_disconnect(&h);
    return rc;
}
