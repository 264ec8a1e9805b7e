/*
 * The verify step of the unit lint: `systemd-analyze verify` on a copy of the unit in a private
 * temporary directory (the file keeps its name, so systemd reads the right unit type; its drop-ins
 * are copied into NAME.d/ beside it, where systemd-analyze reads them), with a deadline. systemd-analyze exits 0 on an unknown key ("Unknown key 'X' in section [Service],
 * ignoring."), so its exit status says little: every line it prints is a finding, naming the
 * original file instead of the copy. A missing systemd-analyze is a finding, never a silent pass.
 *
 * It does not interpret what systemd says, except to fold a line about a start-limit key the
 * start-limit law already reported into that finding (one mistake, one finding).
 */
#include "lint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX   (64u * 1024u)
#define LINES_MAX 100

/* The copies in the temporary directory: the unit, NAME.d and each drop-in (part k at k). */
struct copies {
    char dir[512];
    char dropdir[1024];
    char file[SW_UNIT_PARTS_MAX][1536];
    size_t n;
};

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static int write_copies(const struct sw_unit *u, const char *name, struct copies *c,
                        struct sw_err *e)
{
    snprintf(c->file[0], sizeof(c->file[0]), "%s/%s", c->dir, name);
    int rc = sw_write_file_atomic(c->file[0], u->text, u->len, 0600, e);
    if (rc)
        return rc;
    c->n = 1;
    if (u->n_parts < 2)
        return 0;
    snprintf(c->dropdir, sizeof(c->dropdir), "%s/%s.d", c->dir, name);
    if (mkdir(c->dropdir, 0700))
        return sw_err_set(e, SW_EIO, "systemd-analyze verify: %s: %s", c->dropdir, strerror(errno));
    for (size_t k = 1; k < u->n_parts; k++) {
        snprintf(c->file[k], sizeof(c->file[k]), "%s/%s", c->dropdir, base_name(u->parts[k].where));
        rc = sw_write_file_atomic(c->file[k], u->parts[k].text, u->parts[k].len, 0600, e);
        if (rc)
            return rc;
        c->n = k + 1;
    }
    return 0;
}

static void remove_copies(struct copies *c)
{
    for (size_t k = c->n; k-- > 0;)
        unlink(c->file[k]);
    if (c->dropdir[0])
        rmdir(c->dropdir);
    rmdir(c->dir);
}

static bool unit_suffix(const char *n)
{
    static const char *const sfx[] = {".service", ".socket",    ".timer", ".mount",
                                      ".target",  ".path",      ".slice", ".scope",
                                      ".swap",    ".automount", ".device"};
    size_t l = strlen(n);
    for (size_t i = 0; i < SW_ARRAY_LEN(sfx); i++) {
        size_t sl = strlen(sfx[i]);
        if (l > sl && !strcmp(n + l - sl, sfx[i]))
            return true;
    }
    return false;
}

/* The program on PATH (or as given when it holds a '/'): true when executable. */
static bool findable(const char *prog)
{
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        size_t l = strcspn(path, ":");
        int w = snprintf(buf, sizeof(buf), "%.*s/%s", (int)l, path, prog);
        if (l && w > 0 && (size_t)w < sizeof(buf)) {
            if (access(buf, X_OK) == 0)
                return true;
        }
        path += l;
        if (*path)
            path++;
    }
    return false;
}

/* Run argv with stdout+stderr into out (at most OUT_MAX), killed at the deadline. *status is
 * the wait status, *timed_out set when it was killed. */
static int run(char *const argv[], unsigned timeout_ms, struct sw_buf *out, int *status,
               bool *timed_out, struct sw_err *e)
{
    int fds[2];
    *timed_out = false;
    if (pipe2(fds, O_CLOEXEC))
        return sw_err_set(e, SW_EIO, "systemd-analyze: pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return sw_err_set(e, SW_EIO, "systemd-analyze: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        int dn = open("/dev/null", O_RDONLY);
        if (dn >= 0)
            dup2(dn, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    uint64_t deadline = sw_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    int rc = 0;
    for (;;) {
        uint64_t now = sw_now_ns();
        if (now >= deadline) {
            *timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int left = (int)((deadline - now) / 1000000ull) + 1;
        int pr = poll(&pf, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        char chunk[4096];
        ssize_t n = read(fds[0], chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (out->len < OUT_MAX) {
            size_t take = SW_MIN((size_t)n, OUT_MAX - out->len);
            rc = sw_buf_append(out, chunk, take);
            if (rc)
                break;
        }
    }
    close(fds[0]);
    if (rc)
        kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return rc;
}

/* Replace every occurrence of from in s (in place, into a buffer of n bytes) by to. */
static void replace_all(char *s, size_t n, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    char *p = s;
    while (fl && (p = strstr(p, from))) {
        size_t rest = strlen(p + fl);
        if ((size_t)(p - s) + tl + rest + 1 > n)
            return;
        memmove(p + tl, p + fl, rest + 1);
        memcpy(p, to, tl);
        p += tl;
    }
}

int sw__unit_verify(const struct sw_unit *u, const struct sw_unit_lint_opts *o,
                    struct sw_unit_report *r, struct sw_err *e)
{
    const char *prog = o->systemd_analyze ? o->systemd_analyze : "systemd-analyze";
    if (!findable(prog))
        return sw__unit_add(r, SW_UNIT_LAW_VERIFY, SW_UNIT_ERROR, 0,
                            "%s is not installed here (not found on PATH), so `systemd-analyze "
                            "verify` did not check the file: install systemd (or pass --no-verify "
                            "to lint without it)",
                            prog);
    const char *b = strrchr(u->where, '/');
    b = b ? b + 1 : u->where;
    char name[256];
    if (unit_suffix(b) && strlen(b) < sizeof(name) && !strchr(b, '\\'))
        snprintf(name, sizeof(name), "%s", b);
    else
        snprintf(name, sizeof(name), "unit.service");

    const char *tmp = getenv("TMPDIR");
    struct copies *c = sw_calloc(1, sizeof(*c));
    if (!c)
        return SW_ENOMEM;
    snprintf(c->dir, sizeof(c->dir), "%s/slipway-unit-verify.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) {
        sw_free(c);
        return sw_err_set(e, SW_EIO, "systemd-analyze verify: a temporary directory under %s: %s",
                          tmp && *tmp ? tmp : "/tmp", strerror(errno));
    }
    const char *dir = c->dir;
    struct sw_buf out;
    sw_buf_init(&out, OUT_MAX + 1);
    int rc = write_copies(u, name, c, e);
    if (rc)
        goto out;
    char *argv[] = {(char *)prog, "verify", c->file[0], NULL};
    int status = 0;
    bool timed_out = false;
    unsigned tmo = o->verify_timeout_ms ? o->verify_timeout_ms : 20000;
    rc = run(argv, tmo, &out, &status, &timed_out, e);
    if (rc)
        goto out;
    if (timed_out) {
        rc = sw__unit_add(r, SW_UNIT_LAW_VERIFY, SW_UNIT_ERROR, 0,
                          "`%s verify` did not finish within %u ms and was killed: the file is "
                          "not verified",
                          prog, tmo);
        goto out;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out.len == 0) {
        rc = sw__unit_add(r, SW_UNIT_LAW_VERIFY, SW_UNIT_ERROR, 0,
                          "%s could not be executed, so `systemd-analyze verify` did not check "
                          "the file",
                          prog);
        goto out;
    }
    size_t nlines = 0;
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, out.data, out.data ? strlen(out.data) : 0, SIZE_MAX, 0);
    while (!rc && sw_lines_next(&it, &ln)) {
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)SW_MIN(ln.len, sizeof(line) - 1), ln.s);
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\r' || line[l - 1] == ' '))
            line[--l] = '\0';
        if (!l)
            continue;
        if (++nlines > LINES_MAX)
            break;
        /* "FILE:LINE: message" names a copy: give the original's position and name. */
        int at = 0;
        for (size_t k = 0; k < c->n && !at; k++) {
            size_t fl = strlen(c->file[k]);
            if (!strncmp(line, c->file[k], fl) && line[fl] == ':') {
                char *end = NULL;
                long v = strtol(line + fl + 1, &end, 10);
                if (end != line + fl + 1 && v > 0 && v < SW_UNIT_PART_LINES)
                    at = (int)v + (int)k * SW_UNIT_PART_LINES;
            }
        }
        for (size_t k = c->n; k-- > 0;)
            replace_all(line, sizeof(line), c->file[k], u->parts[k].where);
        replace_all(line, sizeof(line), dir, "<tmp>");
        bool folded = false;
        for (size_t i = 0; at && i < r->n; i++) {
            if (r->v[i].line == at && !strcmp(r->v[i].law, SW_UNIT_LAW_START_LIMIT)) {
                size_t ml = strlen(r->v[i].msg);
                snprintf(r->v[i].msg + ml, sizeof(r->v[i].msg) - ml,
                         " [systemd-analyze verify agrees: %s]", line);
                folded = true;
            }
        }
        if (!folded)
            rc = sw__unit_add(r, SW_UNIT_LAW_VERIFY, SW_UNIT_ERROR, at,
                              "systemd-analyze verify: %s", line);
    }
    if (!rc && nlines == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        rc = sw__unit_add(r, SW_UNIT_LAW_VERIFY, SW_UNIT_ERROR, 0,
                          "`%s verify` failed (status %d) without saying why", prog,
                          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
out:
    sw_buf_free(&out);
    remove_copies(c);
    sw_free(c);
    return rc;
}
