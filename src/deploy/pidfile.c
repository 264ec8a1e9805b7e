/*
 * deploy/pidfile: the record of a running engine, and `down`.
 *
 * A pid alone is not an identity: pids are recycled. The record keeps what the kernel says about
 * the process once it ran (its start time in clock ticks since boot, /proc/PID/stat field 22, the
 * boot id, /proc/PID/exe and /proc/PID/cmdline), and nothing is signalled unless /proc still says
 * the same. A pidfd pins the process between that check and the signal where the kernel has
 * pidfd_open. A record is only as good as its file: it is trusted only when it is a regular file
 * (opened with O_NOFOLLOW, judged by fstat on that fd) owned by the caller and not writable by
 * group or others, in a directory that is the same (sw_deploy_check_dir); otherwise anyone who
 * can write it could name any process and have `down` kill it.
 *
 * What it deliberately does not do: stop anything it cannot prove it started, or keep pid files
 * for processes that are gone (a stale record is removed, with the reason). A record that names
 * a live process which is not what it says (a forged or corrupt file) is refused and kept.
 */
#include "deploy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PIDFILE_MAX (256u << 10)

/* The directory part of path ("." for a bare name). */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

static int check_dir_of(const char *path, struct sw_err *e)
{
    char dir[4096];
    dir_of(path, dir, sizeof(dir));
    return sw_deploy_check_dir(dir, e);
}

int sw_pidfile_identify(pid_t pid, struct sw_pidfile *p, struct sw_err *e)
{
    struct sw_proc_id id;
    int rc = sw_proc_identify(pid, &id, e);
    if (rc)
        return rc;
    p->pid = pid;
    p->pgid = id.pgid;
    p->start_ticks = id.start_ticks;
    snprintf(p->boot_id, sizeof(p->boot_id), "%s", id.boot_id);
    rc = sw_proc_exe(pid, p->exe, sizeof(p->exe));
    if (rc)
        return sw_err_set(e, rc, "pid %d: cannot read its executable (/proc/%d/exe)", (int)pid,
                          (int)pid);
    rc = sw_proc_args(pid, p->args, sizeof(p->args), &p->args_len);
    size_t argc = 0;
    for (size_t i = 0; !rc && i < p->args_len; i++)
        argc += p->args[i] == '\0';
    if (!rc && (argc > SW_PIDFILE_MAX_ARGS || (p->args_len && p->args[p->args_len - 1])))
        rc = SW_ERANGE;
    if (rc)
        return sw_err_set(e, rc, "pid %d: cannot record its argv (/proc/%d/cmdline)%s", (int)pid,
                          (int)pid, rc == SW_ERANGE ? ": too long" : "");
    return 0;
}

/* p->args as a JSON array of strings; NULL when it is not UTF-8 or out of memory. */
static json_t *args_json(const struct sw_pidfile *p)
{
    json_t *a = json_array();
    for (size_t off = 0; a && off < p->args_len;) {
        size_t len = strnlen(p->args + off, p->args_len - off);
        json_t *v = json_stringn(p->args + off, len);
        if (!v || json_array_append_new(a, v)) {
            json_decref(a);
            return NULL;
        }
        off += len + 1;
    }
    return a;
}

static int version_json(json_t *o, const char *key, const void *obj)
{
    return sw_json_set_int(o, key, 1);
}

static int argv_json(json_t *o, const char *key, const void *obj)
{
    return sw_json_set_new(o, key, args_json(obj));
}

static int started_json(json_t *o, const char *key, const void *obj)
{
    char when[40];
    return sw_json_set_str(
        o, key, sw_fmt_time(((const struct sw_pidfile *)obj)->started_unix, when, sizeof(when)));
}

/* The record as its file holds it. */
#define P(kind, m) SW_JSON_M(kind, struct sw_pidfile, m, 0)
/* clang-format off */
static const struct sw_json_field record_fields[] = {
    SW_JSON_ROW_FN("version", version_json), P(SW_JK_CHARS, endpoint), P(SW_JK_CHARS, engine),
    P(SW_JK_INT, pid), P(SW_JK_INT, pgid), P(SW_JK_U64, start_ticks), P(SW_JK_CHARS, boot_id),
    P(SW_JK_CHARS, exe), P(SW_JK_CHARS, cmdline), SW_JSON_ROW_FN("argv", argv_json),
    P(SW_JK_CHARS, host), P(SW_JK_INT, port), P(SW_JK_CHARS, url), P(SW_JK_CHARS, log),
    P(SW_JK_I64, started_unix), SW_JSON_ROW_FN("started", started_json), P(SW_JK_INT, supervisor),
};
/* clang-format on */

int sw_pidfile_write(const char *path, const struct sw_pidfile *p, struct sw_err *e)
{
    int rc = check_dir_of(path, e);
    if (rc)
        return rc;
    json_t *args = args_json(p);
    if (!args)
        return sw_err_set(e, SW_EINVAL, "%s: the argv of pid %d is not UTF-8 text", path,
                          (int)p->pid);
    json_decref(args);
    json_t *o = json_object();
    rc = o ? sw_json_put_fields(o, record_fields, SW_ARRAY_LEN(record_fields), p) : SW_ENOMEM;
    char *text = rc ? NULL : sw_json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text)
        return sw_err_set(e, SW_ENOMEM, "out of memory writing %s", path);
    struct sw_buf b;
    sw_buf_init(&b, PIDFILE_MAX);
    rc = sw_buf_puts(&b, text);
    if (!rc)
        rc = sw_buf_putc(&b, '\n');
    sw_free(text);
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

/* "argv": an array of strings without NUL bytes, into p->args. Absent: args_len 0. */
static int get_args(const json_t *o, struct sw_pidfile *p, const char *path, struct sw_err *e)
{
    const json_t *a = json_object_get(o, "argv");
    p->args_len = 0;
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a) || json_array_size(a) > SW_PIDFILE_MAX_ARGS)
        return sw_err_set(e, SW_EPARSE, "%s: \"argv\" must be an array of at most %d strings", path,
                          SW_PIDFILE_MAX_ARGS);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
            return sw_err_set(e, SW_EPARSE, "%s: \"argv\"[%zu] must be a string without NUL", path,
                              i);
        size_t len = json_string_length(v);
        if (len + 1 > sizeof(p->args) - p->args_len)
            return sw_err_set(e, SW_EPARSE, "%s: \"argv\" is too long", path);
        memcpy(p->args + p->args_len, json_string_value(v), len + 1);
        p->args_len += len + 1;
    }
    return 0;
}

/* Open a pid file the safe way: no symbolic link, a regular file of ours that only we can
 * write, in a directory of ours that only we can write. The fd is returned in *fd. */
static int open_record(const char *path, int *fd, struct sw_err *e)
{
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (*fd < 0) {
        int err = errno;
        if (err == ENOENT)
            return sw_err_set(e, SW_ENOENT, "%s: no pid file", path);
        if (err == ELOOP)
            return sw_err_set(e, SW_EIO,
                              "%s is a symbolic link; refusing to trust it (a pid file is a "
                              "regular file slipway wrote)",
                              path);
        return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(err));
    }
    int rc = check_dir_of(path, e);
    if (rc)
        return rc;
    struct stat st;
    if (fstat(*fd, &st) != 0)
        return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sw_err_set(e, SW_EIO, "%s is not a regular file; refusing to trust it", path);
    if (st.st_uid != geteuid())
        return sw_err_set(e, SW_EIO,
                          "%s is owned by uid %u, not by you (uid %u); refusing to trust it", path,
                          (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & 022)
        return sw_err_set(e, SW_EIO,
                          "%s has mode %04o: writable by %s; refusing to trust it (slipway "
                          "writes pid files 0644)",
                          path, (unsigned)(st.st_mode & 07777),
                          (st.st_mode & 002) ? "everyone" : "its group");
    if (st.st_size > (off_t)PIDFILE_MAX)
        return sw_err_set(e, SW_EPARSE, "%s: %lld bytes is too large for a pid file", path,
                          (long long)st.st_size);
    return 0;
}

int sw_pidfile_read(const char *path, struct sw_pidfile *p, struct sw_err *e)
{
    memset(p, 0, sizeof(*p));
    int fd = -1;
    json_t *o = NULL;
    struct sw_buf b;
    sw_buf_init(&b, PIDFILE_MAX);
    int rc = open_record(path, &fd, e);
    if (rc)
        goto out;
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        rc = sw_buf_append(&b, chunk, (size_t)n);
        if (rc) {
            rc = rc == SW_ENOMEM ? sw_err_set(e, rc, "%s: out of memory", path)
                                 : sw_err_set(e, SW_EPARSE, "%s: too large for a pid file", path);
            goto out;
        }
    }
    o = sw_json_parse(b.data ? b.data : "", b.len, path, e);
    if (!o) {
        rc = e ? e->code : SW_EPARSE;
        goto out;
    }
    int64_t v;
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
    static const struct {
        const char *key;
        size_t off, size;
        bool required;
    } strs[] = {
        {"boot_id", offsetof(struct sw_pidfile, boot_id), sizeof(p->boot_id), true},
        {"exe", offsetof(struct sw_pidfile, exe), sizeof(p->exe), true},
        {"endpoint", offsetof(struct sw_pidfile, endpoint), sizeof(p->endpoint), false},
        {"engine", offsetof(struct sw_pidfile, engine), sizeof(p->engine), false},
        {"cmdline", offsetof(struct sw_pidfile, cmdline), sizeof(p->cmdline), false},
        {"host", offsetof(struct sw_pidfile, host), sizeof(p->host), false},
        {"url", offsetof(struct sw_pidfile, url), sizeof(p->url), false},
        {"log", offsetof(struct sw_pidfile, log), sizeof(p->log), false},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(strs); i++) {
        rc = get_str(o, strs[i].key, (char *)p + strs[i].off, strs[i].size, strs[i].required, path,
                     e);
        if (rc)
            goto out;
    }
    rc = get_args(o, p, path, e);
out:
    if (fd >= 0)
        close(fd);
    sw_buf_free(&b);
    json_decref(o);
    return rc;
}

/* argv for people: the NUL separators as spaces, at most n-1 bytes. */
static void args_str(const char *args, size_t len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i + 1 < len && k + 1 < n; i++)
        out[k++] = args[i] ? args[i] : ' ';
    out[k] = '\0';
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
    /* Same pid, same start time: the process the record was written for, if the record is
     * honest. A forged or corrupt one names a live process with its real start time; what
     * that process runs must be what the record says slipway started. */
    char exe[4096];
    int rc = sw_proc_exe(p->pid, exe, sizeof(exe));
    if (rc) {
        snprintf(why, n,
                 "cannot read the executable of pid %d (/proc/%d/exe): nothing proves it is the "
                 "recorded %s; not signalling it",
                 (int)p->pid, (int)p->pid, p->exe);
        return SW_PID_MISMATCH;
    }
    size_t el = strlen(p->exe);
    bool exe_ok = !strcmp(exe, p->exe) ||
                  (el && !strncmp(exe, p->exe, el) && !strcmp(exe + el, " (deleted)"));
    if (!exe_ok) {
        snprintf(why, n,
                 "pid %d is not the recorded process: its executable is %s, the record says %s "
                 "(a forged or corrupt pid file); not signalling it",
                 (int)p->pid, exe, p->exe);
        return SW_PID_MISMATCH;
    }
    if (!p->args_len) {
        snprintf(why, n,
                 "the record has no argv: nothing proves pid %d (%s) is the process slipway "
                 "started; not signalling it",
                 (int)p->pid, exe);
        return SW_PID_MISMATCH;
    }
    char args[SW_PIDFILE_ARGS_MAX];
    size_t alen = 0;
    rc = sw_proc_args(p->pid, args, sizeof(args), &alen);
    if (rc || alen != p->args_len || memcmp(args, p->args, alen)) {
        char now[200], rec[200];
        args_str(args, rc ? 0 : alen, now, sizeof(now));
        args_str(p->args, p->args_len, rec, sizeof(rec));
        snprintf(why, n,
                 "pid %d is not the recorded process: its argv is '%s', the record says '%s' (a "
                 "forged or corrupt pid file); not signalling it",
                 (int)p->pid, rc ? "(unreadable)" : now, rec);
        return SW_PID_MISMATCH;
    }
    return SW_PID_ALIVE;
}

bool sw__signal_recorded(const struct sw_pidfile *p, int pidfd, int sig)
{
    struct sw_proc_id id;
    enum sw_pid_verdict v = sw_pidfile_check(p, NULL, 0);
    if (v == SW_PID_ALIVE) {
        bool sent = false;
#ifdef SYS_pidfd_send_signal
        /* through the pidfd when there is one: it cannot reach a successor */
        sent = pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0;
#else
        (void)pidfd;
#endif
        if (!sent)
            sent = kill(p->pid, sig) == 0;
        if (sw_proc_identify(p->pid, &id, NULL) == 0 && id.pgid == p->pgid)
            sent = kill(-p->pgid, sig) == 0 || sent;
        return sent;
    }
    /* The leader is dead (gone or a zombie): while its group has members, its pid is reserved
     * (the kernel does not hand out a pid in use as a group id), so they are its own. */
    if (v == SW_PID_GONE && p->pgid == p->pid && sw__proc_group_alive(p->pgid))
        return kill(-p->pgid, sig) == 0;
    return false;
}

static bool ours_alive(const struct sw_pidfile *p)
{
    if (sw__proc_alive(p->pid, p->start_ticks))
        return true;
    /* the leader is gone: its group (if any) is ours only while no stranger holds its pid */
    return p->pgid == p->pid && sw_pidfile_check(p, NULL, 0) == SW_PID_GONE &&
           sw__proc_group_alive(p->pgid);
}

int sw_pidfile_stop(const char *path, unsigned grace_ms, struct sw_stop_report *r, struct sw_err *e)
{
    struct sw_pidfile p;
    memset(r, 0, sizeof(*r));
    int rc = sw_pidfile_read(path, &p, e);
    if (rc)
        return rc;
    r->verdict = sw_pidfile_check(&p, r->why, sizeof(r->why));
    int pidfd = -1;
#ifdef SYS_pidfd_open
    /* Pin the process: after pidfd_open, a second check proves the fd names the recorded
     * process, and a signal through the fd cannot reach a successor. */
    if (r->verdict == SW_PID_ALIVE) {
        pidfd = (int)syscall(SYS_pidfd_open, p.pid, 0);
        if (pidfd >= 0)
            r->verdict = sw_pidfile_check(&p, r->why, sizeof(r->why));
    }
#endif
    if (r->verdict == SW_PID_MISMATCH) {
        if (pidfd >= 0)
            close(pidfd);
        return sw_err_set(e, SW_EMISMATCH, "%s: %s; the pid file was left as it is", path, r->why);
    }
    if (r->verdict != SW_PID_ALIVE) {
        if (pidfd >= 0)
            close(pidfd);
        if (unlink(path) != 0 && errno != ENOENT)
            return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
        return 0;
    }
    double t0 = sw_now_s();
    r->signalled = sw__signal_recorded(&p, pidfd, SIGTERM);
    while (ours_alive(&p) && sw_now_s() - t0 < grace_ms / 1000.0)
        sw_sleep_ms(50);
    if (ours_alive(&p)) {
        r->killed = true;
        sw__signal_recorded(&p, pidfd, SIGKILL);
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
