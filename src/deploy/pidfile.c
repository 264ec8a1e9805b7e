/*
 * deploy/pidfile: the record of a running engine, and `down`.
 *
 * A pid alone is not an identity: pids are recycled. The record keeps what the kernel says about
 * the process when it was started (its start time in clock ticks since boot, /proc/PID/stat
 * field 22, and the boot id), and nothing is signalled unless /proc still says the same. A
 * pidfd pins the process between that check and the signal where the kernel has pidfd_open.
 *
 * What it deliberately does not do: stop anything it cannot prove it started, or keep pid files
 * for processes that are gone (a stale record is removed, with the reason).
 */
#include "deploy_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PIDFILE_MAX (256u << 10)

int sw_pidfile_write(const char *path, const struct sw_pidfile *p, struct sw_err *e)
{
    json_t *o = json_object();
    char when[40];
    int rc = o ? 0 : SW_ENOMEM;
    if (!rc) {
        rc |= sw_json_set_int(o, "version", 1);
        rc |= sw_json_set_str(o, "endpoint", p->endpoint);
        rc |= sw_json_set_str(o, "engine", p->engine);
        rc |= sw_json_set_int(o, "pid", p->pid);
        rc |= sw_json_set_int(o, "pgid", p->pgid);
        rc |= sw_json_set_int(o, "start_ticks", (int64_t)p->start_ticks);
        rc |= sw_json_set_str(o, "boot_id", p->boot_id);
        rc |= sw_json_set_str(o, "exe", p->exe);
        rc |= sw_json_set_str(o, "cmdline", p->cmdline);
        rc |= sw_json_set_str(o, "host", p->host);
        rc |= sw_json_set_int(o, "port", p->port);
        rc |= sw_json_set_str(o, "url", p->url);
        rc |= sw_json_set_str(o, "log", p->log);
        rc |= sw_json_set_int(o, "started_unix", p->started_unix);
        rc |= sw_json_set_str(o, "started", sw_fmt_time(p->started_unix, when, sizeof(when)));
        rc |= sw_json_set_int(o, "supervisor", p->supervisor);
    }
    char *text = rc ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return sw_err_set(e, SW_ENOMEM, "out of memory writing %s", path);
    struct sw_buf b;
    sw_buf_init(&b, PIDFILE_MAX);
    rc = sw_buf_puts(&b, text);
    if (!rc)
        rc = sw_buf_putc(&b, '\n');
    sw_free(text); /* jansson allocates through sw_malloc (sw_core_init) */
    if (!rc)
        rc = sw_write_file_atomic(path, b.data, b.len, 0644, e);
    else
        sw_err_set(e, rc, "%s: record too large", path);
    sw_buf_free(&b);
    return rc;
}

static int get_str(const json_t *o, const char *k, char *out, size_t n, bool required,
                   const char *path, struct sw_err *e)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        out[0] = '\0';
        return required ? sw_err_set(e, SW_EPARSE, "%s: no \"%s\"", path, k) : 0;
    }
    if (!json_is_string(v))
        return sw_err_set(e, SW_EPARSE, "%s: \"%s\" must be a string", path, k);
    if (json_string_length(v) >= n)
        return sw_err_set(e, SW_EPARSE, "%s: \"%s\" is too long", path, k);
    snprintf(out, n, "%s", json_string_value(v));
    return 0;
}

static int get_int(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out,
                   bool required, const char *path, struct sw_err *e)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        *out = 0;
        return required ? sw_err_set(e, SW_EPARSE, "%s: no \"%s\"", path, k) : 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return sw_err_set(e, SW_EPARSE,
                          "%s: \"%s\" must be an integer in [%" PRId64 ", %" PRId64 "]", path, k,
                          lo, hi);
    *out = json_integer_value(v);
    return 0;
}

int sw_pidfile_read(const char *path, struct sw_pidfile *p, struct sw_err *e)
{
    memset(p, 0, sizeof(*p));
    if (access(path, F_OK) != 0)
        return sw_err_set(e, SW_ENOENT, "%s: no pid file", path);
    json_t *o = sw_json_load_file(path, PIDFILE_MAX, e);
    if (!o)
        return e ? e->code : SW_EPARSE;
    int64_t v;
    int rc = 0;
    if (!json_is_object(o)) {
        rc = sw_err_set(e, SW_EPARSE, "%s: not a slipway pid file", path);
        goto out;
    }
    rc = get_int(o, "pid", 2, INT32_MAX, &v, true, path, e);
    if (rc)
        goto out;
    p->pid = (pid_t)v;
    rc = get_int(o, "pgid", 2, INT32_MAX, &v, true, path, e);
    if (rc)
        goto out;
    p->pgid = (pid_t)v;
    rc = get_int(o, "start_ticks", 1, INT64_MAX, &v, true, path, e);
    if (rc)
        goto out;
    p->start_ticks = (uint64_t)v;
    rc = get_int(o, "port", 0, 65535, &v, false, path, e);
    if (rc)
        goto out;
    p->port = (unsigned)v;
    rc = get_int(o, "started_unix", 0, INT64_MAX, &v, false, path, e);
    if (rc)
        goto out;
    p->started_unix = v;
    rc = get_int(o, "supervisor", 0, INT32_MAX, &v, false, path, e);
    if (rc)
        goto out;
    p->supervisor = (pid_t)v;
    rc = get_str(o, "boot_id", p->boot_id, sizeof(p->boot_id), true, path, e);
    if (rc || (rc = get_str(o, "exe", p->exe, sizeof(p->exe), true, path, e)) ||
        (rc = get_str(o, "endpoint", p->endpoint, sizeof(p->endpoint), false, path, e)) ||
        (rc = get_str(o, "engine", p->engine, sizeof(p->engine), false, path, e)) ||
        (rc = get_str(o, "cmdline", p->cmdline, sizeof(p->cmdline), false, path, e)) ||
        (rc = get_str(o, "host", p->host, sizeof(p->host), false, path, e)) ||
        (rc = get_str(o, "url", p->url, sizeof(p->url), false, path, e)) ||
        (rc = get_str(o, "log", p->log, sizeof(p->log), false, path, e)))
        goto out;
out:
    json_decref(o);
    return rc;
}

enum sw_pid_verdict sw_pidfile_check(const struct sw_pidfile *p, char *why, size_t n)
{
    char tmp[8];
    if (!why) {
        why = tmp;
        n = sizeof(tmp);
    }
    why[0] = '\0';
    struct sw_proc_id id;
    if (sw_proc_identify(p->pid, &id, NULL) != 0) {
        snprintf(why, n, "no process has pid %d any more", (int)p->pid);
        return SW_PID_GONE;
    }
    if (p->boot_id[0] && id.boot_id[0] && strcmp(p->boot_id, id.boot_id)) {
        snprintf(why, n, "the record is from an earlier boot (%s); pid %d is another process now",
                 p->boot_id, (int)p->pid);
        return SW_PID_REUSED;
    }
    if (id.start_ticks != p->start_ticks) {
        char cmd[256];
        sw_proc_cmdline(p->pid, cmd, sizeof(cmd));
        snprintf(why, n,
                 "pid %d was reused: it is now '%s', started at tick %llu, not the recorded "
                 "%s started at tick %llu",
                 (int)p->pid, cmd[0] ? cmd : "?", (unsigned long long)id.start_ticks, p->exe,
                 (unsigned long long)p->start_ticks);
        return SW_PID_REUSED;
    }
    if (id.state == 'Z' || id.state == 'X') {
        snprintf(why, n, "pid %d exited (a zombie nobody reaped yet)", (int)p->pid);
        return SW_PID_GONE;
    }
    return SW_PID_ALIVE;
}

/* Signal the leader through its pidfd when we have one (it cannot reach a successor). */
static void signal_leader(int pidfd, const struct sw_pidfile *p, int sig)
{
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0)
        return;
#endif
    if (sw__proc_alive(p->pid, p->start_ticks))
        kill(p->pid, sig);
}

static bool ours_alive(const struct sw_pidfile *p)
{
    return sw__proc_alive(p->pid, p->start_ticks) || sw__proc_group_alive(p->pgid);
}

int sw_pidfile_stop(const char *path, unsigned grace_ms, struct sw_stop_report *r, struct sw_err *e)
{
    struct sw_pidfile p;
    memset(r, 0, sizeof(*r));
    int rc = sw_pidfile_read(path, &p, e);
    if (rc)
        return rc;
    r->verdict = sw_pidfile_check(&p, r->why, sizeof(r->why));
    if (r->verdict != SW_PID_ALIVE) {
        if (unlink(path) != 0 && errno != ENOENT)
            return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
        return 0;
    }
    /* Pin the process: after pidfd_open, a second check proves the fd names the recorded
     * process, and a signal through the fd cannot reach a successor. */
    int pidfd = -1;
#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, p.pid, 0);
    if (pidfd >= 0 && sw_pidfile_check(&p, r->why, sizeof(r->why)) != SW_PID_ALIVE) {
        close(pidfd);
        r->verdict = SW_PID_GONE;
        unlink(path);
        return 0;
    }
#endif
    struct sw_proc_id id;
    bool group_ok = sw_proc_identify(p.pid, &id, NULL) == 0 && id.pgid == p.pgid;
    double t0 = sw_now_s();
    signal_leader(pidfd, &p, SIGTERM);
    if (group_ok)
        kill(-p.pgid, SIGTERM);
    r->signalled = true;
    while (ours_alive(&p) && sw_now_s() - t0 < grace_ms / 1000.0)
        sw_sleep_ms(50);
    if (ours_alive(&p)) {
        r->killed = true;
        signal_leader(pidfd, &p, SIGKILL);
        if (group_ok)
            kill(-p.pgid, SIGKILL);
        double t1 = sw_now_s();
        while (ours_alive(&p) && sw_now_s() - t1 < 10.0)
            sw_sleep_ms(50);
    }
    if (pidfd >= 0)
        close(pidfd);
    r->waited_s = sw_now_s() - t0;
    if (ours_alive(&p))
        return sw_err_set(e, SW_ETIMEDOUT, "pid %d (group %d) survived SIGKILL", (int)p.pid,
                          (int)p.pgid);
    if (unlink(path) != 0 && errno != ENOENT)
        return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
    return 0;
}
