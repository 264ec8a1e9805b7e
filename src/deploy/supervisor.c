/*
 * deploy/supervisor: one local child, started and stopped so that nothing outlives slipway by
 * accident.
 *
 * The child gets its own session (setsid: a new process group whose id is its pid, and no
 * controlling terminal, so a Ctrl-C at slipway's terminal reaches slipway, which stops it
 * cleanly). Signals go to the whole group: ggml forks a debugger to print a backtrace when it
 * aborts, and that debugger must not survive either.
 *
 * Two guards against slipway dying uncleanly (SIGKILL, OOM killer) while it owns a child:
 *   - PR_SET_PDEATHSIG(SIGKILL) in the child, when slipway supervises in the foreground;
 *   - a watchdog: a small forked process in its own session that holds the read end of a pipe
 *     only slipway can write to. When the pipe reaches EOF without "release" (slipway is gone),
 *     it sends SIGTERM to the child's group, waits, then SIGKILL. This covers --detach, where
 *     the child must outlive slipway after the hand-over and so cannot have PDEATHSIG. Before
 *     each signal the watchdog makes `down`'s proof (sw__signal_recorded: start time, exe and
 *     argv as they were when slipway handed the child over), so a recycled pid is safe; then
 *     it removes the child's pid file (when slipway told it one) so no stale record is left.
 *
 * The in-process stop (sw_child_stop) signals a child slipway has not reaped yet: its pid
 * cannot be recycled before waitpid, which is the proof there.
 *
 * Everything the child needs (argv, envp, the resolved path) is built before fork(): after
 * fork() only async-signal-safe calls are made.
 *
 * What it deliberately does not do: restart a child that died (a failed boot is reported, not
 * retried), or daemonize slipway itself.
 */
#include "deploy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---------------------------------------------------------------------------------------------
 * Before fork.
 */
static int resolve_exe(const char *name, char *out, size_t n, struct sw_err *e)
{
    if (!name || !*name)
        return sw_err_set(e, SW_EINVAL, "no program to run");
    if (strchr(name, '/')) {
        char real[PATH_MAX];
        if (!realpath(name, real))
            return sw_err_set(e, SW_ENOENT, "%s: %s", name, strerror(errno));
        if (access(real, X_OK) != 0)
            return sw_err_set(e, SW_ENOENT, "%s: not executable: %s", name, strerror(errno));
        snprintf(out, n, "%s", real);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        char cand[PATH_MAX];
        int w = snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, len ? p : ".", name);
        struct stat st;
        if (w > 0 && (size_t)w < sizeof(cand) && stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
            access(cand, X_OK) == 0) {
            snprintf(out, n, "%s", cand);
            return 0;
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return sw_err_set(e, SW_ENOENT, "%s: not found in PATH (%s)", name, path);
}

static bool env_name_eq(const char *a, const char *b)
{
    size_t la = strcspn(a, "="), lb = strcspn(b, "=");
    return la == lb && !strncmp(a, b, la);
}

/* The child's environment: ours, minus llama-server's own LLAMA_ARG_* knobs and LLAMA_API_KEY
 * (an inherited one would change the boot behind the plan's back: common/arg.cpp reads them for
 * every flag not given), plus env_add. Pointers are borrowed. */
static char **build_env(const struct sw_spawn_opts *o)
{
    size_t n = 0;
    for (char **p = environ; p && *p; p++)
        n++;
    char **v = sw_calloc(n + o->n_env_add + 1, sizeof(*v));
    if (!v)
        return NULL;
    size_t k = 0;
    for (char **p = environ; p && *p; p++) {
        if (!strncmp(*p, "LLAMA_ARG_", 10) || !strncmp(*p, "LLAMA_API_KEY=", 14))
            continue;
        bool over = false;
        for (size_t i = 0; i < o->n_env_add && !over; i++)
            over = env_name_eq(*p, o->env_add[i]);
        if (!over)
            v[k++] = *p;
    }
    for (size_t i = 0; i < o->n_env_add; i++)
        v[k++] = (char *)o->env_add[i];
    v[k] = NULL;
    return v;
}

/* ---------------------------------------------------------------------------------------------
 * The watchdog.
 */
static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0) == 0)
        return;
#endif
    for (int fd = lowfd; fd < 4096; fd++)
        close(fd);
}

/* Every descriptor from lowfd on closes at exec: the engine inherits its stdin, stdout and stderr
 * only. An inherited one lives as long as the engine (a detached one outlives slipway): a lock
 * the caller held (flock(1) around a test run leaks no lock through an engine `up` detached),
 * a socket. */
static void cloexec_from(int lowfd)
{
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
        return;
#endif
    for (int fd = lowfd; fd < 4096; fd++) {
        int fl = fcntl(fd, F_GETFD);
        if (fl >= 0)
            fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
    }
}

/* What the watchdog guards: the child's identity as /proc showed it when slipway handed it over,
 * and the pid file slipway wrote for it (removed once the child is stopped). Static: the
 * watchdog is a forked copy of slipway that lives only for this. */
static struct sw_pidfile wd_rec;
static char wd_pidfile[4096];

static void watchdog_kill(unsigned grace_ms)
{
    /* Every signal after the same proof as `down`: the leader is the recorded process (start
     * time, exe, argv), or it is dead and only its group is left. */
    if (!sw__signal_recorded(&wd_rec, -1, SIGTERM))
        return;
    for (unsigned waited = 0; waited < grace_ms; waited += 50) {
        if (!sw__proc_group_alive(wd_rec.pgid))
            return;
        sw_sleep_ms(50);
    }
    sw__signal_recorded(&wd_rec, -1, SIGKILL);
    for (int i = 0; i < 200 && sw__proc_group_alive(wd_rec.pgid); i++)
        sw_sleep_ms(50);
}

/* The child is stopped: its pid file is stale. Removed only when it still records this child
 * (another `up` may have replaced it) and the child is not alive. */
static void watchdog_unrecord(void)
{
    struct sw_pidfile p;
    if (!wd_pidfile[0] || sw__proc_alive(wd_rec.pid, wd_rec.start_ticks))
        return;
    if (sw_pidfile_read(wd_pidfile, &p, NULL) == 0 && p.pid == wd_rec.pid &&
        p.start_ticks == wd_rec.start_ticks)
        unlink(wd_pidfile);
}

/* One line slipway wrote to its watchdog, NUL-terminated: "G<pgid> <start ticks>" (the group to
 * guard), "P <pid file>", "R" (released). */
static void watchdog_line(const char *l, bool *released)
{
    if (l[0] == 'G') {
        char *end;
        pid_t pg = (pid_t)strtol(l + 1, &end, 10);
        unsigned long long ticks = strtoull(end, NULL, 10);
        /* the identity now, while slipway still holds the child unreaped */
        memset(&wd_rec, 0, sizeof(wd_rec));
        if (pg > 1 && sw_pidfile_identify(pg, &wd_rec, NULL) != 0) {
            memset(&wd_rec, 0, sizeof(wd_rec)); /* it died already: nothing of it runs */
            wd_rec.pid = wd_rec.pgid = pg;
        }
        wd_rec.start_ticks = ticks;
    } else if (l[0] == 'P' && l[1] == ' ') {
        size_t n = strlen(l + 2);
        if (n < sizeof(wd_pidfile))
            memcpy(wd_pidfile, l + 2, n + 1);
    } else if (l[0] == 'R') {
        *released = true;
    }
}

static void watchdog_main(int fd, unsigned grace_ms)
{
    char buf[4400];
    size_t len = 0;
    bool released = false;
    for (;;) {
        ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        /* the whole lines read so far; a partial one waits for the rest */
        struct sw_lines it;
        struct sw_line ln;
        size_t used = 0;
        sw_lines_init(&it, buf, len, SIZE_MAX, 0);
        while (sw_lines_next(&it, &ln) && ln.lf) {
            char *l = buf + (ln.s - buf);
            l[ln.len] = '\0';
            watchdog_line(l, &released);
            used = (size_t)(it.p - buf);
        }
        memmove(buf, buf + used, len - used);
        len -= used;
        if (len == sizeof(buf) - 1)
            len = 0; /* garbage: only slipway writes here */
    }
    if (!released && wd_rec.pid > 1) {
        watchdog_kill(grace_ms);
        watchdog_unrecord();
    }
}

static int start_watchdog(struct sw_child *c, unsigned grace_ms, struct sw_err *e)
{
    int p[2];
    /* a socket pair rather than a pipe: send(MSG_NOSIGNAL) cannot raise SIGPIPE in slipway if
     * the watchdog is gone */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0)
        return sw_err_set(e, SW_EIO, "socketpair: %s", strerror(errno));
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(p[0]);
        close(p[1]);
        if (devnull >= 0)
            close(devnull);
        return sw_err_set(e, SW_EIO, "fork: %s", strerror(err));
    }
    if (pid == 0) {
        /* Its own session: a terminal's SIGINT/SIGHUP to slipway's group does not reach it. */
        setsid();
        static const int ign[] = {SIGINT,  SIGHUP,  SIGTERM, SIGQUIT, SIGPIPE,
                                  SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2};
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_IGN;
        for (size_t i = 0; i < SW_ARRAY_LEN(ign); i++)
            sigaction(ign[i], &sa, NULL);
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        /* keep only the pipe (as fd 3): a stray copy of slipway's stdout would keep a caller
         * that reads slipway's output waiting for EOF */
        if (dup2(p[0], 3) < 0)
            _exit(1);
        close_from(4);
        watchdog_main(3, grace_ms ? grace_ms : 3000);
        _exit(0);
    }
    close(p[0]);
    if (devnull >= 0)
        close(devnull);
    c->wd_fd = p[1];
    c->wd_pid = pid;
    return 0;
}

static void watchdog_send(struct sw_child *c, const char *msg)
{
    if (c->wd_fd < 0)
        return;
    size_t n = strlen(msg);
    while (n) {
        ssize_t w = send(c->wd_fd, msg, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        msg += w;
        n -= (size_t)w;
    }
}

void sw__child_watch_record(struct sw_child *c, const char *path)
{
    char msg[4200];
    /* "G" again: the watchdog takes the child's identity anew (a wrapper script that exec'd
     * the engine meanwhile is the engine now) */
    snprintf(msg, sizeof(msg), "G %d %llu\n", (int)c->pid, (unsigned long long)c->start_ticks);
    watchdog_send(c, msg);
    int w = snprintf(msg, sizeof(msg), "P %s\n", path);
    if (w > 0 && (size_t)w < sizeof(msg) && !strchr(path, '\n'))
        watchdog_send(c, msg);
}

void sw_child_release(struct sw_child *c)
{
    if (!c || c->wd_fd < 0)
        return;
    watchdog_send(c, "R\n");
    close(c->wd_fd);
    c->wd_fd = -1;
    /* it exits as soon as it reads EOF; reap it (bounded) */
    for (int i = 0; i < 200 && c->wd_pid > 0; i++) {
        pid_t r = waitpid(c->wd_pid, NULL, WNOHANG);
        if (r == c->wd_pid || (r < 0 && errno != EINTR))
            break;
        sw_sleep_ms(10);
    }
    c->wd_pid = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Spawn, poll, stop.
 */
int sw_child_spawn(const struct sw_spawn_opts *o, struct sw_child *c, struct sw_err *e)
{
    int rc = 0, logfd = -1, nullfd = -1, cgfd = -1, sp[2] = {-1, -1};
    char **envp = NULL;
    memset(c, 0, sizeof(*c));
    c->wd_fd = -1;
    if (!o || !o->argv || !o->argv[0])
        return sw_err_set(e, SW_EINVAL, "nothing to run");
    rc = resolve_exe(o->argv[0], c->exe, sizeof(c->exe), e);
    if (rc)
        return rc;
    envp = build_env(o);
    if (!envp)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    logfd = open(o->log_path ? o->log_path : "/dev/null",
                 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
    if (logfd < 0) {
        rc = sw_err_set(e, SW_EIO, "%s: %s", o->log_path, strerror(errno));
        goto out;
    }
    if (o->cgroup_procs) {
        cgfd = open(o->cgroup_procs, O_WRONLY | O_CLOEXEC);
        if (cgfd < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: %s", o->cgroup_procs, strerror(errno));
            goto out;
        }
    }
    nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nullfd < 0 || pipe2(sp, O_CLOEXEC) != 0) {
        rc = sw_err_set(e, SW_EIO, "pipe: %s", strerror(errno));
        goto out;
    }
    if (o->watchdog) {
        rc = start_watchdog(c, o->watchdog_grace_ms, e);
        if (rc)
            goto out;
    }
    pid_t parent = getpid();
    struct rlimit rl = {(rlim_t)o->rlimit_as, (rlim_t)o->rlimit_as};
    pid_t pid = fork();
    if (pid < 0) {
        rc = sw_err_set(e, SW_EIO, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        int err;
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++)
            if (s != SIGKILL && s != SIGSTOP)
                sigaction(s, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (setsid() < 0)
            goto fail;
        if (o->die_with_parent) {
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
                goto fail;
            if (getppid() != parent)
                _exit(127); /* slipway died before prctl took effect */
        }
        if (o->rlimit_as && setrlimit(RLIMIT_AS, &rl) != 0)
            goto fail;
        /* "0" moves the writing process (cgroup v1 and v2 alike) */
        if (cgfd >= 0 && write(cgfd, "0", 1) != 1)
            goto fail;
        if (dup2(nullfd, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
            goto fail;
        if (o->cwd && chdir(o->cwd) != 0)
            goto fail;
        cloexec_from(3); /* (sp[1] is close-on-exec already: it tells exec's failure) */
        execve(c->exe, (char *const *)o->argv, envp);
    fail:
        err = errno;
        if (write(sp[1], &err, sizeof(err)) < 0) {
            /* nothing else to do */
        }
        _exit(127);
    }
    close(sp[1]);
    sp[1] = -1;
    int child_errno = 0;
    ssize_t got;
    do {
        got = read(sp[0], &child_errno, sizeof(child_errno));
    } while (got < 0 && errno == EINTR);
    c->pid = pid;
    c->pgid = pid;
    c->t_start = sw_now_s();
    if (got == (ssize_t)sizeof(child_errno)) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        c->exited = true;
        c->status = st;
        c->pid = 0;
        rc = sw_err_set(e, child_errno == ENOENT || child_errno == EACCES ? SW_ENOENT : SW_EIO,
                        "cannot start %s: %s", c->exe, strerror(child_errno));
        goto out;
    }
    /* exec succeeded (the pipe closed on exec): setsid ran. The start time identifies the
     * process for the watchdog and the pid file; a zombie still has its /proc entry. */
    struct sw_proc_id id;
    if (sw_proc_identify(pid, &id, NULL) == 0) {
        c->start_ticks = id.start_ticks;
        snprintf(c->boot_id, sizeof(c->boot_id), "%s", id.boot_id);
    }
    if (c->wd_fd >= 0) {
        char msg[64];
        snprintf(msg, sizeof(msg), "G %d %llu\n", (int)pid, (unsigned long long)c->start_ticks);
        watchdog_send(c, msg);
    }
out:
    if (rc && c->wd_fd >= 0) {
        /* nothing to guard: let the watchdog go without killing anything */
        sw_child_release(c);
    }
    if (logfd >= 0)
        close(logfd);
    if (nullfd >= 0)
        close(nullfd);
    if (cgfd >= 0)
        close(cgfd);
    if (sp[0] >= 0)
        close(sp[0]);
    if (sp[1] >= 0)
        close(sp[1]);
    sw_free(envp);
    return rc;
}

int sw_child_poll(struct sw_child *c)
{
    if (!c->pid || c->exited)
        return 1;
    int st;
    pid_t r = waitpid(c->pid, &st, WNOHANG);
    if (r == 0)
        return 0;
    if (r < 0) {
        if (errno == EINTR)
            return 0;
        /* not our child any more (ECHILD): judge from /proc */
        if (sw__proc_alive(c->pid, c->start_ticks))
            return 0;
        c->exited = true;
        c->status = -1;
        return 1;
    }
    c->exited = true;
    c->status = st;
    return 1;
}

int sw_child_stop(struct sw_child *c, unsigned grace_ms, struct sw_err *e)
{
    int rc = 0;
    if (!c || !c->pid)
        goto out;
    if (!sw_child_poll(c)) {
        if (kill(-c->pgid, SIGTERM) != 0)
            kill(c->pid, SIGTERM);
        double deadline = sw_now_s() + grace_ms / 1000.0;
        while (!sw_child_poll(c) && sw_now_s() < deadline)
            sw_sleep_ms(20);
        if (!sw_child_poll(c)) {
            if (kill(-c->pgid, SIGKILL) != 0)
                kill(c->pid, SIGKILL);
            deadline = sw_now_s() + 10.0;
            while (!sw_child_poll(c) && sw_now_s() < deadline)
                sw_sleep_ms(20);
            if (!c->exited)
                rc = sw_err_set(e, SW_ETIMEDOUT,
                                "pid %d survived SIGKILL for 10 s (uninterruptible sleep?)",
                                (int)c->pid);
        }
    }
    /* What else is in the group (a debugger printing a backtrace) goes too. The leader is
     * reaped: its pid stays reserved while the group has members, unless a stranger holds it
     * already (then the group is gone and that is not ours). */
    struct sw_proc_id id;
    bool stranger = sw_proc_identify(c->pgid, &id, NULL) == 0 && id.start_ticks != c->start_ticks;
    if (!stranger && sw__proc_group_alive(c->pgid)) {
        kill(-c->pgid, SIGKILL);
        for (int i = 0; i < 250 && sw__proc_group_alive(c->pgid); i++)
            sw_sleep_ms(20);
    }
out:
    if (c)
        sw_child_release(c);
    return rc;
}
