/*
 * deploy/proc: what the kernel says about a process (/proc/PID/stat, cmdline, exe, the boot id),
 * wait status wording, and where slipway keeps pid files and logs (a directory only the user can
 * write: a predictable shared name such as /tmp/slipway-UID could be pre-created by anyone).
 *
 * What it deliberately does not do: signal anything. Identity checks live here so that every
 * caller that is about to send a signal asks the same question the same way.
 */
#include "deploy_internal.h"

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static ssize_t read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

int sw_proc_boot_id(char *out, size_t n)
{
    char buf[64];
    if (read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) <= 0) {
        snprintf(out, n, "%s", "");
        return SW_EIO;
    }
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(out, n, "%s", buf);
    return 0;
}

int sw_proc_identify(pid_t pid, struct sw_proc_id *out, struct sw_err *e)
{
    char path[64], buf[2048];
    memset(out, 0, sizeof(*out));
    out->pid = pid;
    if (pid <= 0)
        return sw_err_set(e, SW_EINVAL, "pid %d is not a process id", (int)pid);
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (read_small(path, buf, sizeof(buf)) <= 0)
        return sw_err_set(e, SW_ENOENT, "no process %d", (int)pid);
    /* "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime cutime cstime priority nice threads itrealvalue starttime ...": comm may hold spaces
     * and parentheses, so fields are counted from the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return sw_err_set(e, SW_EPARSE, "%s: unexpected format", path);
    p += 2;
    out->state = *p;
    int field = 3;
    for (char *q = p; *q && field <= 22; q++) {
        if (*q != ' ')
            continue;
        field++;
        if (field == 5)
            out->pgid = (pid_t)strtol(q + 1, NULL, 10);
        if (field == 22)
            out->start_ticks = strtoull(q + 1, NULL, 10);
    }
    if (field < 22)
        return sw_err_set(e, SW_EPARSE, "%s: too few fields", path);
    sw_proc_boot_id(out->boot_id, sizeof(out->boot_id));
    return 0;
}

bool sw__proc_alive(pid_t pid, uint64_t ticks)
{
    struct sw_proc_id id;
    if (sw_proc_identify(pid, &id, NULL))
        return false;
    if (id.state == 'Z' || id.state == 'X')
        return false;
    return ticks == 0 || id.start_ticks == ticks;
}

bool sw__proc_group_alive(pid_t pg)
{
    if (pg <= 1)
        return false;
    if (kill(-pg, 0) != 0 && errno == ESRCH)
        return false; /* no member at all, zombies included */
    DIR *d = opendir("/proc");
    if (!d)
        return true; /* cannot tell: assume the worst */
    bool alive = false;
    struct dirent *de;
    while (!alive && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        struct sw_proc_id id;
        if (sw_proc_identify((pid_t)pid, &id, NULL))
            continue;
        alive = id.pgid == pg && id.state != 'Z' && id.state != 'X';
    }
    closedir(d);
    return alive;
}

int sw_proc_cmdline(pid_t pid, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    ssize_t got = read_small(path, out, n);
    if (got < 0) {
        if (n)
            out[0] = '\0';
        return SW_ENOENT;
    }
    while (got > 0 && out[got - 1] == '\0')
        got--;
    for (ssize_t i = 0; i < got; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    out[got] = '\0';
    return 0;
}

int sw_proc_args(pid_t pid, char *out, size_t n, size_t *len)
{
    char path[64];
    *len = 0;
    if (n < 2)
        return SW_ERANGE;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    /* read_small keeps one byte for a terminator: n bytes read means it may not have fit */
    ssize_t got = read_small(path, out, n);
    if (got < 0)
        return SW_ENOENT;
    if ((size_t)got >= n - 1)
        return SW_ERANGE;
    *len = (size_t)got;
    return 0;
}

int sw_proc_exe(pid_t pid, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    ssize_t got = n ? readlink(path, out, n - 1) : -1;
    if (got < 0 || (size_t)got >= n - 1) {
        if (n)
            out[0] = '\0';
        return got < 0 ? SW_ENOENT : SW_ERANGE;
    }
    out[got] = '\0';
    return 0;
}

const char *sw_wait_status_str(int status, char *buf, size_t n)
{
    if (WIFEXITED(status))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, n, "wait status 0x%x", (unsigned)status);
    return buf;
}

int sw_deploy_check_dir(const char *dir, struct sw_err *e)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return sw_err_set(e, SW_EIO, "%s: %s", dir, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        char to[4096];
        ssize_t n = readlink(dir, to, sizeof(to) - 1);
        to[n > 0 ? n : 0] = '\0';
        return sw_err_set(e, SW_EIO,
                          "%s is a symbolic link (to %s); refusing to keep or trust pid files "
                          "there: use the real directory",
                          dir, to[0] ? to : "?");
    }
    if (!S_ISDIR(st.st_mode))
        return sw_err_set(e, SW_EIO, "%s is not a directory", dir);
    if (st.st_uid != geteuid())
        return sw_err_set(e, SW_EIO,
                          "%s is owned by uid %u, not by you (uid %u); refusing to keep or trust "
                          "pid files there",
                          dir, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & 022)
        return sw_err_set(e, SW_EIO,
                          "%s has mode %04o: writable by %s (who could replace a pid file); "
                          "refusing to keep or trust pid files there (chmod go-w, or another "
                          "directory)",
                          dir, (unsigned)(st.st_mode & 07777),
                          (st.st_mode & 002) ? "everyone" : "its group");
    return 0;
}

int sw_deploy_run_dir(char *out, size_t n, struct sw_err *e)
{
    /* created 0700 when missing; an existing one is judged as it is, never repaired */
    int rc = sw_run_dir_create(out, n, e);
    return rc ? rc : sw_deploy_check_dir(out, e);
}
