/*
 * watch/install: `slipway install --watch`, watch's own unit (watch/unit.c's render) put on the
 * control machine, this one, the way install puts an endpoint's unit on its host: verified on a
 * staged copy (`systemd-analyze verify`) before anything is written where systemd reads it, the
 * unit written atomically with the file it replaces kept beside it, daemon-reload; with start,
 * enabled and (re)started and held to staying active for a settle time (watch dies at once on a
 * fleet or a metrics address it cannot use). When the manager did not take it or watch did not
 * stay up, the previous unit is put back (or the new one removed where there was none),
 * daemon-reload again, and the previous watch restarted when it ran: a failed install leaves the
 * machine as it found it.
 *
 * What it deliberately does not do: install on another machine (watch runs where slipway and the
 * fleet are), write a user unit, or print (steps go to on_step).
 */
#include "watch_internal.h"

#include <slipway/host.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNIT_NAME "slipway-watch.service"

struct ictx {
    const struct sw_watch_install_opts *o;
    struct sw_watch_install_result *r;
    struct sw_host h;
    int64_t dl;
    uint64_t t_step;
    char prev[4200]; /* UNIT.slipway-prev */
};

static void step(struct ictx *c, const char *name, bool ok, const char *fmt, ...) SW_PRINTF(4, 5);
static void step(struct ictx *c, const char *name, bool ok, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    double s = (double)(sw_now_ns() - c->t_step) / 1e9;
    if (c->o->on_step)
        c->o->on_step(c->o->ctx, name, ok, s, detail);
    c->t_step = sw_now_ns();
}

static int systemctl(struct ictx *c, const char *verb, struct sw_err *e)
{
    struct sw_host_result hr;
    int rc = sw_host_systemctl(&c->h, false, verb, strcmp(verb, "daemon-reload") ? UNIT_NAME : NULL,
                               c->dl, &hr, e);
    sw_host_result_free(&hr);
    return rc;
}

/* systemd-analyze verify of the unit staged in a private directory: a line it prints refuses
 * the install (it exits 0 on an unknown key). */
static int verify(struct ictx *c, const struct sw_buf *unit, struct sw_err *e)
{
    char run[4000], dir[4096], path[4200];
    int rc = sw_run_dir(run, sizeof(run), e);
    if (rc)
        return rc;
    snprintf(dir, sizeof(dir), "%s/watch-install-XXXXXX", run);
    if (!mkdtemp(dir))
        return sw_err_set(e, SW_EIO, "mkdtemp %s: %s", dir, strerror(errno));
    snprintf(path, sizeof(path), "%s/%s", dir, UNIT_NAME);
    rc = sw_write_file_atomic(path, unit->data, unit->len, 0644, e);
    if (!rc) {
        const char *argv[] = {"systemd-analyze", "verify", path, NULL};
        struct sw_host_run_opts ro = {.deadline_ms = c->dl, .max_out = 64u * 1024u};
        struct sw_host_result hr;
        rc = sw_host_run(&c->h, argv, &ro, &hr, e);
        const char *said = hr.err && hr.err[0] ? hr.err : hr.out && hr.out[0] ? hr.out : NULL;
        if (said || (rc && hr.fail == SW_HOST_EXIT)) {
            c->r->refused = true;
            rc = sw_err_set(e, SW_EGATE, "systemd-analyze verify %s: %.600s: nothing installed",
                            UNIT_NAME, said ? said : "it failed");
        }
        sw_host_result_free(&hr);
    }
    unlink(path);
    rmdir(dir);
    return rc;
}

/* The unit in place, the one it replaces kept as UNIT.slipway-prev. */
static int put(struct ictx *c, const struct sw_buf *unit, struct sw_err *e)
{
    struct sw_watch_install_result *r = c->r;
    char *old = NULL;
    size_t n = 0;
    unlink(c->prev);
    if (!access(r->unit_path, F_OK)) {
        int rc = sw_read_file(r->unit_path, 1u << 20, &old, &n, e);
        if (!rc)
            rc = sw_write_file_atomic(c->prev, old, n, 0644, e);
        sw_free(old);
        if (rc)
            return rc;
        r->replaced = true;
    }
    int rc = sw_write_file_atomic(r->unit_path, unit->data, unit->len, 0644, e);
    if (rc)
        return rc;
    r->installed = true;
    return 0;
}

/* Was the unit enabled before (`systemctl is-enabled` exits 0)? */
static bool is_enabled(struct ictx *c)
{
    const char *argv[] = {"systemctl", "is-enabled", "--quiet", UNIT_NAME, NULL};
    struct sw_host_run_opts ro = {.deadline_ms = c->dl};
    struct sw_host_result hr;
    int rc = sw_host_run(&c->h, argv, &ro, &hr, NULL);
    sw_host_result_free(&hr);
    return rc == 0;
}

/* Put back what was there (or remove what was not), have the manager read it again, and run the
 * previous watch again when it ran (and disable it again when this install enabled it). */
static void put_back(struct ictx *c, bool was_running, bool was_enabled)
{
    struct sw_watch_install_result *r = c->r;
    struct sw_err pe;
    sw_err_clear(&pe);
    if (r->replaced && r->started && !was_enabled)
        systemctl(c, "disable", &pe);
    if (!r->replaced) {
        systemctl(c, "stop", &pe);
        systemctl(c, "disable", &pe);
    }
    int rc = r->replaced ? rename(c->prev, r->unit_path) : unlink(r->unit_path);
    if (rc && errno != ENOENT) {
        step(c, "put-back", false, "%s: %s", r->unit_path, strerror(errno));
        return;
    }
    r->installed = false;
    rc = systemctl(c, "daemon-reload", &pe);
    if (!rc && was_running)
        rc = systemctl(c, "restart", &pe);
    r->put_back = rc == 0;
    step(c, "put-back", rc == 0, "%s%s%s%s",
         r->replaced ? "the previous unit is back" : "the new unit removed",
         was_running ? " and running again" : "", rc ? "; " : "", rc ? pe.msg : "");
}

/* The newest lines of watch's journal (why it did not stay up). */
static void journal_tail(struct ictx *c)
{
    struct sw_host_journal j;
    struct sw_err e;
    size_t o = 0;
    c->r->journal[0] = '\0';
    if (sw_host_journal_read(&c->h, false, UNIT_NAME, NULL, 6, SW_MIN(c->dl, 10000), &j, &e))
        return;
    for (size_t i = 0; i < j.n && o + 2 < sizeof(c->r->journal); i++) {
        int w = snprintf(c->r->journal + o, sizeof(c->r->journal) - o, "    %.300s\n",
                         j.v[i].message ? j.v[i].message : "");
        if (w > 0)
            o = SW_MIN(o + (size_t)w, sizeof(c->r->journal) - 1);
    }
    sw_host_journal_free(&j);
}

/* enable, restart, then active and running with the same main process for the settle time. */
static int start(struct ictx *c, struct sw_err *e)
{
    struct sw_host_unit u;
    int rc = systemctl(c, "enable", e);
    if (!rc)
        rc = systemctl(c, "restart", e);
    if (rc) {
        step(c, "start", false, "%s", e->msg);
        return rc;
    }
    c->r->started = true;
    int64_t settle = c->o->settle_ms > 0 ? c->o->settle_ms : 3000;
    uint64_t t0 = sw_now_ns();
    int64_t pid = -1;
    uint64_t restarts = 0;
    for (;;) {
        rc = sw_host_unit_show(&c->h, false, UNIT_NAME, c->dl, &u, e);
        if (rc)
            break;
        bool up = !strcmp(u.active_state, "active") && !strcmp(u.sub_state, "running");
        if (pid < 0 && up) {
            pid = u.main_pid;
            restarts = u.n_restarts;
        }
        if (!up || (pid >= 0 && (u.main_pid != pid || u.n_restarts != restarts))) {
            rc = sw_err_set(e, SW_ECHILD,
                            "%s did not stay up: %s/%s (result %s, exit status %lld, NRestarts "
                            "%llu)",
                            UNIT_NAME, u.active_state, u.sub_state, u.result,
                            (long long)u.exec_main_status, (unsigned long long)u.n_restarts);
            break;
        }
        if ((int64_t)((sw_now_ns() - t0) / 1000000ull) >= settle)
            break;
        sw_sleep_ms(250);
    }
    if (!rc)
        c->r->serving = true;
    step(c, "start", rc == 0, "%s",
         rc ? e->msg : "enabled; active and running, the same process for the settle time");
    return rc;
}

int sw_watch_install(const struct sw_watch_install_opts *o, struct sw_watch_install_result *r,
                     struct sw_err *e)
{
    struct ictx c = {.o = o, .r = r, .dl = o->deadline_ms > 0 ? o->deadline_ms : 30000};
    struct sw_buf unit;
    struct sw_host_unit before;
    bool was_running = false, was_enabled = false;
    memset(r, 0, sizeof(*r));
    sw_buf_init(&unit, 1u << 16);
    c.t_step = sw_now_ns();
    const char *dir = o->unit_dir ? o->unit_dir : "/etc/systemd/system";
    snprintf(r->unit, sizeof(r->unit), "%s", UNIT_NAME);
    snprintf(r->unit_path, sizeof(r->unit_path), "%s/%s", dir, UNIT_NAME);
    snprintf(c.prev, sizeof(c.prev), "%s.slipway-prev", r->unit_path);
    int rc = sw_watch_unit_render(o->exe, o->fleet_path, o->ledger_path, o->metrics_addr, &unit, e);
    step(&c, "render", rc == 0, "%s", rc ? e->msg : UNIT_NAME);
    if (rc)
        goto out;
    struct sw_host_cfg hc = {.name = "this machine", .kind = SW_HOST_KIND_LOCAL};
    rc = sw_host_open(&c.h, &hc, e);
    if (rc)
        goto out;
    rc = verify(&c, &unit, e);
    step(&c, "verify", rc == 0, "%s", rc ? e->msg : "systemd-analyze verify said nothing");
    if (rc)
        goto out;
    if (!sw_host_unit_show(&c.h, false, UNIT_NAME, c.dl, &before, NULL))
        was_running = !strcmp(before.active_state, "active");
    was_enabled = is_enabled(&c);
    rc = put(&c, &unit, e);
    step(&c, "write", rc == 0, "%s%s%s", r->unit_path, rc ? ": " : " (0644)",
         rc            ? e->msg
         : r->replaced ? ", the previous one kept until it runs"
                       : "");
    if (rc) {
        if (r->installed || r->replaced)
            put_back(&c, false, was_enabled);
        goto out;
    }
    rc = systemctl(&c, "daemon-reload", e);
    step(&c, "daemon-reload", rc == 0, "%s", rc ? e->msg : "systemctl daemon-reload");
    if (!rc && o->start)
        rc = start(&c, e);
    if (rc) {
        if (r->started)
            journal_tail(&c);
        put_back(&c, was_running, was_enabled);
        goto out;
    }
    unlink(c.prev);
out:
    sw_buf_free(&unit);
    return rc;
}
