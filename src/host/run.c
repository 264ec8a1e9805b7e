/*
 * host: opening a host and running one command on it with a deadline.
 *
 * The command's local process (the program itself, or the ssh client) gets its own process group
 * so a deadline kills everything it started here; stdout and stderr are read through pipes with a
 * bound, and the loop waits for the process to exit rather than for the pipes to close (an ssh
 * master backgrounded by ControlPersist may hold a copy of them). What it does not do: retry,
 * or read a terminal (stdin is a file or /dev/null).
 */
#include "host_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *sw_host_fail_name(enum sw_host_fail f)
{
    switch (f) {
    case SW_HOST_OK:
        return "ok";
    case SW_HOST_UNREACHABLE:
        return "unreachable";
    case SW_HOST_AUTH:
        return "auth";
    case SW_HOST_HOSTKEY:
        return "hostkey";
    case SW_HOST_EXIT:
        return "exit";
    case SW_HOST_DEADLINE:
        return "deadline";
    case SW_HOST_LOCAL:
        return "local";
    }
    return "?";
}

static int copy_str(char *dst, size_t n, const char *src, const char *what, struct sw_err *e)
{
    if (!src) {
        dst[0] = '\0';
        return 0;
    }
    if (strlen(src) >= n)
        return sw_err_set(e, SW_EINVAL, "host %s too long (%zu bytes, at most %zu)", what,
                          strlen(src), n - 1);
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* FNV-1a over the words that make a connection distinct: a master made with one known_hosts
 * file or key must not serve a host opened with another. */
static uint64_t fnv(uint64_t hsh, const char *s)
{
    for (; s && *s; s++) {
        hsh ^= (unsigned char)*s;
        hsh *= 1099511628211ull;
    }
    hsh ^= 0xff;
    hsh *= 1099511628211ull;
    return hsh;
}

int sw_host_open(struct sw_host *h, const struct sw_host_cfg *cfg, struct sw_err *e)
{
    int rc;
    memset(h, 0, sizeof(*h));
    rc = copy_str(h->name, sizeof(h->name), cfg->name ? cfg->name : "?", "name", e);
    if (rc)
        return rc;
    h->kind = cfg->kind;
    if (cfg->kind == SW_HOST_KIND_LOCAL) {
        h->ops = &sw__host_local;
        return 0;
    }
    if (cfg->kind != SW_HOST_KIND_SSH)
        return sw_err_set(e, SW_EINVAL, "host %s: unknown transport %d", h->name, cfg->kind);
    h->ops = &sw__host_ssh;
    if (!cfg->address || !*cfg->address)
        return sw_err_set(e, SW_EINVAL, "host %s: ssh without an address", h->name);
    if (cfg->address[0] == '-' || strpbrk(cfg->address, " \t\n'\"\\"))
        return sw_err_set(e, SW_EINVAL, "host %s: address '%s' is not a host name", h->name,
                          cfg->address);
    if (cfg->user && (cfg->user[0] == '-' || strpbrk(cfg->user, " \t\n@")))
        return sw_err_set(e, SW_EINVAL, "host %s: user '%s' is not a user name", h->name,
                          cfg->user);
    if (cfg->port > 65535)
        return sw_err_set(e, SW_EINVAL, "host %s: port %u out of range", h->name, cfg->port);
    rc = copy_str(h->address, sizeof(h->address), cfg->address, "address", e);
    if (!rc)
        rc = copy_str(h->user, sizeof(h->user), cfg->user, "user", e);
    if (!rc)
        rc = copy_str(h->identity_file, sizeof(h->identity_file), cfg->identity_file,
                      "identity_file", e);
    if (!rc)
        rc = copy_str(h->known_hosts, sizeof(h->known_hosts), cfg->known_hosts, "known_hosts", e);
    if (!rc)
        rc = copy_str(h->ssh_binary, sizeof(h->ssh_binary),
                      cfg->ssh_binary ? cfg->ssh_binary : "/usr/bin/ssh", "ssh binary", e);
    if (rc)
        return rc;
    if (h->identity_file[0])
        rc = sw__host_ssh_path_check("identity_file", h->identity_file, e);
    if (!rc && h->known_hosts[0])
        rc = sw__host_ssh_path_check("known_hosts", h->known_hosts, e);
    if (rc) {
        sw_err_prefix(e, "host %s", h->name);
        return rc;
    }
    h->port = cfg->port;
    h->connect_timeout_s = cfg->connect_timeout_s ? cfg->connect_timeout_s : 5;

    char dir[4096];
    if (cfg->control_dir) {
        rc = copy_str(dir, sizeof(dir), cfg->control_dir, "control directory", e);
        if (!rc)
            rc = sw_mkdir_p(dir, 0700, e);
    } else {
        char run[3800];
        rc = sw_run_dir(run, sizeof(run), e);
        if (!rc) {
            snprintf(dir, sizeof(dir), "%s/ssh", run);
            rc = sw_mkdir_p(dir, 0700, e);
        }
    }
    if (rc) {
        sw_err_prefix(e, "host %s: ssh control directory", h->name);
        return rc;
    }
    uint64_t k = 14695981039346656037ull;
    k = fnv(k, h->user);
    k = fnv(k, h->address);
    char port[16];
    snprintf(port, sizeof(port), "%u", h->port);
    k = fnv(k, port);
    k = fnv(k, h->identity_file);
    k = fnv(k, h->known_hosts);
    /* ssh appends a 17-byte temporary suffix while it creates the socket: leave room for it
     * inside sun_path (108 bytes). */
    int w = snprintf(h->control_path, sizeof(h->control_path), "%s/%016llx", dir,
                     (unsigned long long)k);
    if (w < 0 || (size_t)w + 18 > sizeof(h->control_path))
        return sw_err_set(e, SW_EINVAL,
                          "host %s: the ssh control socket under %s would be too long for a unix "
                          "socket (set SLIPWAY_RUN_DIR to a shorter directory)",
                          h->name, dir);
    return 0;
}

int sw_host_open_fleet(struct sw_host *h, const struct sw_fleet_host *fh,
                       unsigned connect_timeout_s, struct sw_err *e)
{
    struct sw_host_cfg c = {
        .name = fh->name,
        .kind = fh->transport == SW_FLEET_SSH ? SW_HOST_KIND_SSH : SW_HOST_KIND_LOCAL,
        .address = fh->address.v,
        .port = fh->port.set ? (unsigned)fh->port.v : 0,
        .user = fh->user.v,
        .identity_file = fh->identity_file.v,
        .known_hosts = fh->known_hosts.v,
        .connect_timeout_s = connect_timeout_s,
    };
    if (fh->port.set && fh->port.v > 65535)
        return sw_fleet_err_at(e, SW_EINVAL, &fh->port.at, "host %s: port %llu out of range",
                               fh->name, (unsigned long long)fh->port.v);
    return sw_host_open(h, &c, e);
}

const char *sw_host_describe(const struct sw_host *h, char *out, size_t n)
{
    if (h->kind != SW_HOST_KIND_SSH) {
        snprintf(out, n, "local");
        return out;
    }
    char port[16] = "";
    if (h->port)
        snprintf(port, sizeof(port), ":%u", h->port);
    snprintf(out, n, "ssh %s%s%s%s", h->user, h->user[0] ? "@" : "", h->address, port);
    return out;
}

void sw_host_result_free(struct sw_host_result *r)
{
    if (!r)
        return;
    sw_free(r->out);
    sw_free(r->err);
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
}

void sw__host_argv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        sw_free(v[i]);
    sw_free(v);
}

int sw_host_quote_argv(const char *const *argv, struct sw_buf *b)
{
    int rc = 0;
    for (size_t i = 0; argv[i] && !rc; i++) {
        if (i)
            rc = sw_buf_putc(b, ' ');
        if (!rc)
            rc = sw_buf_putc(b, '\'');
        for (const char *c = argv[i]; *c && !rc; c++)
            rc = *c == '\'' ? sw_buf_puts(b, "'\\''") : sw_buf_putc(b, *c);
        if (!rc)
            rc = sw_buf_putc(b, '\'');
    }
    return rc;
}

/* A growing capture with a ceiling: bytes past it are counted as truncation, not kept. */
struct cap {
    struct sw_buf b;
    size_t max;
    bool trunc;
    /* line mode */
    sw_host_line_fn on_line;
    void *ctx;
    bool stop;
};

static int cap_add(struct cap *c, const char *p, size_t n)
{
    if (!c->on_line) {
        size_t room = c->max > c->b.len ? c->max - c->b.len : 0;
        if (n > room) {
            c->trunc = true;
            n = room;
        }
        return n ? sw_buf_append(&c->b, p, n) : 0;
    }
    /* the line so far grows by each piece; an LF hands it to on_line */
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, p, n, SIZE_MAX, 0);
    while (!c->stop && sw_lines_next(&it, &ln)) {
        size_t room = c->max > c->b.len ? c->max - c->b.len : 0;
        if (ln.len > room)
            c->trunc = true;
        if (SW_MIN(ln.len, room))
            sw_buf_append(&c->b, ln.s, SW_MIN(ln.len, room));
        if (!ln.lf)
            break;
        if (c->on_line(c->ctx, c->b.len ? c->b.data : "", c->b.len))
            c->stop = true;
        sw_buf_reset(&c->b);
    }
    return 0;
}

static bool drain(int *fd, struct cap *c)
{
    char buf[65536];
    bool any = false;
    while (*fd >= 0) {
        ssize_t got = read(*fd, buf, sizeof(buf));
        if (got > 0) {
            any = true;
            if (cap_add(c, buf, (size_t)got))
                c->trunc = true;
            if (c->stop)
                return any;
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return any;
        close(*fd);
        *fd = -1;
    }
    return any;
}

static char *cap_take(struct cap *c, size_t *len)
{
    *len = c->b.len;
    char *s = c->b.data ? sw_buf_steal(&c->b) : sw_strdup("");
    return s;
}

/* One command on its way: the child, its pipes and captures, and how it ended. */
struct run {
    struct sw_host *h;
    pid_t pid;
    int po[2], pe[2], in;
    struct cap co, ce;
    uint64_t t0, end;
    int status;
    bool exited, expired;
};

/* The child in its own process group: stdin from x->in, stdout and stderr into the pipes,
 * SIGPIPE at its default. posix_spawnp, not fork: a fork copies this process's page tables
 * only for the exec to drop them, which was the largest part of what a watch look cost here
 * (bench_watch). A program that cannot be run ends as the fork path did: exit 127 with
 * "slipway: cannot run PROGRAM: why" on its stderr (x->pid stays -1, x->exited is set). */
static int spawn(struct run *x, char **lv, struct sw_err *e)
{
    if (pipe2(x->po, O_CLOEXEC) < 0 || pipe2(x->pe, O_CLOEXEC) < 0)
        return sw_err_set(e, SW_EIO, "host %s: pipe: %s", x->h->name, strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    int err = posix_spawnattr_init(&at);
    if (err)
        return sw_err_set(e, SW_ENOMEM, "host %s: spawn: %s", x->h->name, strerror(err));
    err = posix_spawn_file_actions_init(&fa);
    if (err) {
        posix_spawnattr_destroy(&at);
        return sw_err_set(e, SW_ENOMEM, "host %s: spawn: %s", x->h->name, strerror(err));
    }
    if (!(err = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF)) &&
        !(err = posix_spawnattr_setpgroup(&at, 0)) &&
        !(err = posix_spawnattr_setsigdefault(&at, &def)) &&
        !(err = posix_spawn_file_actions_adddup2(&fa, x->in, 0)) &&
        !(err = posix_spawn_file_actions_adddup2(&fa, x->po[1], 1)) &&
        !(err = posix_spawn_file_actions_adddup2(&fa, x->pe[1], 2)))
        err = posix_spawnp(&x->pid, lv[0], &fa, &at, lv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(x->po[1]);
    close(x->pe[1]);
    x->po[1] = x->pe[1] = -1;
    if (err == ENOMEM || err == EAGAIN) {
        x->pid = -1;
        return sw_err_set(e, SW_EIO, "host %s: spawn: %s", x->h->name, strerror(err));
    }
    if (err) {
        char msg[600];
        int n = snprintf(msg, sizeof(msg), "slipway: cannot run %s: %s\n", lv[0], strerror(err));
        cap_add(&x->ce, msg, (size_t)SW_MIN(SW_MAX(n, 0), (int)sizeof(msg) - 1));
        x->pid = -1;
        x->status = 127 << 8; /* as W_EXITCODE(127, 0): what the shell says for "not found" */
        x->exited = true;
        return 0;
    }
    setpgid(x->pid, x->pid); /* the child did; this closes the race with a kill of the group */
    fcntl(x->po[0], F_SETFL, O_NONBLOCK);
    fcntl(x->pe[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* Until the child exits, line mode stops, or the deadline passes, its output drained as it
 * comes; then a child still running killed with its group. 0, or poll's failure (the child is
 * killed then, as at the deadline). */
static int watch(struct run *x, struct sw_err *e)
{
    int rc = 0;
    for (;;) {
        pid_t w = waitpid(x->pid, &x->status, WNOHANG);
        if (w == x->pid) {
            x->exited = true;
            drain(&x->po[0], &x->co);
            drain(&x->pe[0], &x->ce);
            if (x->co.on_line && x->co.b.len && !x->co.stop &&
                x->co.on_line(x->co.ctx, x->co.b.data, x->co.b.len))
                x->co.stop = true;
            break;
        }
        if (x->co.stop)
            break;
        uint64_t now = sw_now_ns();
        if (now >= x->end) {
            x->expired = true;
            break;
        }
        struct pollfd pf[2];
        nfds_t np = 0;
        if (x->po[0] >= 0)
            pf[np++] = (struct pollfd){.fd = x->po[0], .events = POLLIN};
        if (x->pe[0] >= 0)
            pf[np++] = (struct pollfd){.fd = x->pe[0], .events = POLLIN};
        int wait_ms = (int)SW_MIN((x->end - now) / 1000000ull + 1, 50ull);
        int pr = np ? poll(pf, np, wait_ms) : 0;
        if (!np)
            sw_sleep_ms((unsigned)wait_ms);
        if (pr < 0 && errno != EINTR) {
            rc = sw_err_set(e, SW_EIO, "host %s: poll: %s", x->h->name, strerror(errno));
            x->expired = true; /* kill it: the loop cannot watch it any more */
            break;
        }
        drain(&x->po[0], &x->co);
        drain(&x->pe[0], &x->ce);
    }
    if (!x->exited) {
        kill(-x->pid, SIGKILL);
        kill(x->pid, SIGKILL);
        while (waitpid(x->pid, &x->status, 0) < 0 && errno == EINTR)
            ;
    }
    x->pid = -1;
    return rc;
}

/* The last line of stderr that is not empty (what says most often why) into out. */
static void last_err_line(const struct sw_host_result *r, char *out, size_t n)
{
    size_t end = r->err_len;
    while (end && (r->err[end - 1] == '\n' || r->err[end - 1] == '\r'))
        end--;
    size_t s = end;
    while (s && r->err[s - 1] != '\n')
        s--;
    snprintf(out, n, "%.*s", (int)SW_MIN(end - s, n - 1), r->err + s);
}

/* How the run ended, in r->fail and the error: the deadline, a stop line mode asked for, a
 * signal, or the exit code as the transport classifies it. */
static int judge(struct run *x, const char *what, int64_t deadline_ms, struct sw_host_result *r,
                 struct sw_err *e)
{
    struct sw_host *h = x->h;
    if (x->expired) {
        r->fail = SW_HOST_DEADLINE;
        return sw_err_set(e, SW_ETIMEDOUT,
                          "host %s: %s: deadline of %.1f s passed (killed after %.1f s)", h->name,
                          what, (double)deadline_ms / 1000.0, r->seconds);
    }
    if (x->co.stop) {
        r->fail = SW_HOST_OK;
        return 0;
    }
    if (WIFSIGNALED(x->status)) {
        r->term_signal = WTERMSIG(x->status);
        r->fail = SW_HOST_EXIT;
        return sw_err_set(e, SW_ECHILD, "host %s: %s: killed by signal %d", h->name, what,
                          r->term_signal);
    }
    r->exit_code = WEXITSTATUS(x->status);
    char why[1400] = "";
    r->fail = h->ops->classify(h, r->exit_code, r, why, sizeof(why));
    switch (r->fail) {
    case SW_HOST_OK:
        return 0;
    case SW_HOST_UNREACHABLE:
    case SW_HOST_AUTH:
        return sw_err_set(e, SW_ENET, "host %s: %s", h->name, why);
    case SW_HOST_HOSTKEY:
        return sw_err_set(e, SW_EMISMATCH, "host %s: %s", h->name, why);
    case SW_HOST_EXIT: {
        char last[300];
        last_err_line(r, last, sizeof(last));
        return sw_err_set(e, SW_ECHILD, "host %s: %s exited %d%s%s", h->name, what, r->exit_code,
                          last[0] ? ": " : "", last);
    }
    default:
        return sw_err_set(e, SW_EIO, "host %s: %s: %s", h->name, what, why);
    }
}

int sw_host_run(struct sw_host *h, const char *const *argv, const struct sw_host_run_opts *o,
                struct sw_host_result *r, struct sw_err *e)
{
    static const struct sw_host_run_opts none;
    if (!o)
        o = &none;
    int64_t deadline_ms = o->deadline_ms > 0 ? o->deadline_ms : SW__HOST_DEADLINE_MS;
    size_t max = o->max_out ? o->max_out : SW_HOST_OUT_MAX;
    int rc = 0;
    char **lv = NULL;
    struct run x = {.h = h,
                    .pid = -1,
                    .po = {-1, -1},
                    .pe = {-1, -1},
                    .in = -1,
                    .co = {.max = max, .on_line = o->on_line, .ctx = o->ctx},
                    .ce = {.max = max},
                    .t0 = sw_now_ns()};
    char what[64];

    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    r->fail = SW_HOST_LOCAL;
    sw_buf_init(&x.co.b, max + 1);
    sw_buf_init(&x.ce.b, max + 1);
    if (!argv || !argv[0] || !h->ops) {
        rc = sw_err_set(e, SW_EINVAL, "host %s: no command", h->name);
        goto out;
    }
    snprintf(what, sizeof(what), "%s", argv[0]);
    rc = h->ops->build(h, argv, deadline_ms, &lv, e);
    if (rc)
        goto out;
    x.in = open(o->stdin_path ? o->stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (x.in < 0) {
        rc = sw_err_set(e, SW_EIO, "host %s: %s: cannot open: %s", h->name,
                        o->stdin_path ? o->stdin_path : "/dev/null", strerror(errno));
        goto out;
    }
    rc = spawn(&x, lv, e);
    if (rc)
        goto out;
    x.end = x.t0 + (uint64_t)deadline_ms * 1000000ull;
    if (!x.exited)
        rc = watch(&x, e);
    r->out = cap_take(&x.co, &r->out_len);
    r->err = cap_take(&x.ce, &r->err_len);
    r->out_truncated = x.co.trunc;
    r->err_truncated = x.ce.trunc;
    r->seconds = (double)(sw_now_ns() - x.t0) / 1e9;
    if (!r->out || !r->err) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (rc)
        goto out;
    rc = judge(&x, what, deadline_ms, r, e);
out:
    if (x.pid > 0) {
        kill(-x.pid, SIGKILL);
        waitpid(x.pid, NULL, 0);
    }
    if (x.in >= 0)
        close(x.in);
    for (int i = 0; i < 2; i++) {
        if (x.po[i] >= 0)
            close(x.po[i]);
        if (x.pe[i] >= 0)
            close(x.pe[i]);
    }
    sw_buf_free(&x.co.b);
    sw_buf_free(&x.ce.b);
    if (!r->out)
        r->out = sw_strdup("");
    if (!r->err)
        r->err = sw_strdup("");
    sw__host_argv_free(lv);
    return rc;
}
