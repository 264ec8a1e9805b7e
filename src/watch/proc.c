/*
 * watch/proc: run one command (an alert's exec, a scheduled job) with its input on stdin, in its
 * own process group, bounded by a deadline: at the deadline (or the caller's stop) the group gets
 * SIGTERM, then SIGKILL two seconds later.
 *
 * What it deliberately does not do: capture the command's output (it goes where watch's own
 * goes, the journal under systemd), or retry (the callers do).
 */
#include "watch_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_WORDS 64

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int sw__watch_spawn(const json_t *cmd, const char *input, const char *const *env,
                    int64_t deadline_ms, volatile sig_atomic_t *stop, int *exit_code, bool *overran,
                    struct sw_err *e)
{
    const char *argv[MAX_WORDS + 1];
    size_t na = 0;
    *exit_code = -1;
    *overran = false;
    if (json_is_string(cmd)) {
        argv[na++] = "/bin/sh";
        argv[na++] = "-c";
        argv[na++] = json_string_value(cmd);
    } else {
        size_t i;
        const json_t *w;
        json_array_foreach(cmd, i, w)
        {
            if (!json_is_string(w) || na >= MAX_WORDS)
                return sw_err_set(e, SW_EINVAL, "a command list holds strings only, at most %d",
                                  MAX_WORDS);
            argv[na++] = json_string_value(w);
        }
    }
    if (!na)
        return sw_err_set(e, SW_EINVAL, "an empty command");
    argv[na] = NULL;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC))
        return sw_err_set(e, SW_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return sw_err_set(e, SW_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(pfd[0], 0);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        signal(SIGPIPE, SIG_DFL);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(pfd[0]);
    /* the input is small (an event): a pipe buffer holds it; a command that does not read it
     * gets EPIPE here, not a blocked watch */
    if (input) {
        int fl = fcntl(pfd[1], F_GETFL);
        fcntl(pfd[1], F_SETFL, fl | O_NONBLOCK);
        size_t len = strlen(input), off = 0;
        while (off < len) {
            ssize_t w = write(pfd[1], input + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
    }
    close(pfd[1]);
    uint64_t t0 = sw_now_ns();
    int status = 0;
    bool termed = false;
    uint64_t term_at = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        int64_t used = (int64_t)((sw_now_ns() - t0) / 1000000ull);
        if (!termed && ((deadline_ms > 0 && used >= deadline_ms) || (stop && *stop))) {
            *overran = deadline_ms > 0 && used >= deadline_ms;
            kill(-pid, SIGTERM);
            termed = true;
            term_at = sw_now_ns();
        } else if (termed && sw_now_ns() - term_at > 2000000000ull) {
            kill(-pid, SIGKILL);
        }
        sleep_ms(used < 200 ? 10 : 50);
    }
    if (WIFEXITED(status) && !termed)
        *exit_code = WEXITSTATUS(status);
    else if (WIFEXITED(status))
        *exit_code = WEXITSTATUS(status);
    if (termed)
        *exit_code = -1;
    return 0;
}
