/*
 * deploy: pid files (atomic write, strict read, identity checks: alive / gone / reused), the port
 * check, the run directory, and the supervisor on small shell children (environment, log
 * capture, exec failure, SIGTERM then SIGKILL, the whole group, RLIMIT_AS, the watchdog when the
 * supervising process dies). Bounded waits only; no timing assertions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/deploy.h>

#include "swtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A record of this test process as /proc shows it (pid, start time, boot id, exe, argv). */
static void self_record(struct sw_pidfile *p)
{
    memset(p, 0, sizeof(*p));
    assert_int_equal(sw_pidfile_identify(getpid(), p, NULL), 0);
    snprintf(p->endpoint, sizeof(p->endpoint), "unit");
    snprintf(p->engine, sizeof(p->engine), "llama.cpp");
    snprintf(p->url, sizeof(p->url), "http://127.0.0.1:8080");
    p->port = 8080;
    p->started_unix = 1796246280;
}

static void test_pidfile_roundtrip(void **state)
{
    char *dir = swt_tmpdir();
    const char *path = swt_join(dir, "x.pid");
    struct sw_pidfile p, q;
    struct sw_err e;
    self_record(&p);
    snprintf(p.cmdline, sizeof(p.cmdline), "llama-server -m 'a b.gguf'");
    assert_int_equal(sw_pidfile_write(path, &p, &e), 0);
    assert_int_equal(sw_pidfile_read(path, &q, &e), 0);
    assert_int_equal(q.pid, p.pid);
    assert_int_equal(q.pgid, p.pgid);
    assert_int_equal(q.start_ticks, p.start_ticks);
    assert_string_equal(q.boot_id, p.boot_id);
    assert_string_equal(q.cmdline, p.cmdline);
    assert_string_equal(q.exe, p.exe);
    assert_int_equal(q.args_len, p.args_len);
    assert_memory_equal(q.args, p.args, p.args_len);
    assert_int_equal(q.port, 8080);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* no temporary file left behind */
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) -eq 1", dir);
    assert_int_equal(system(cmd), 0);
    swt_tmpdir_free(dir);
}

static void test_pidfile_malformed(void **state)
{
    char *dir = swt_tmpdir();
    const char *path = swt_join(dir, "x.pid");
    struct sw_pidfile q;
    struct sw_err e;
    assert_int_equal(sw_pidfile_read(path, &q, &e), SW_ENOENT);
    static const char *const bad[] = {
        "",
        "12345\n",
        "[]",
        "{\"pid\": 1, \"pgid\": 1, \"start_ticks\": 5}",
        "{\"pid\": 123, \"pgid\": 123, \"boot_id\": \"x\", \"exe\": \"y\"}",
        "{\"pid\": \"123\", \"pgid\": 123, \"start_ticks\": 5, \"boot_id\": \"x\", \"exe\": \"y\"}",
        "{\"pid\": 123, \"pgid\": 123, \"start_ticks\": 5, \"boot_id\": 7, \"exe\": \"y\"}",
        ("{\"pid\": 99999999999, \"pgid\": 123, \"start_ticks\": 5, \"boot_id\": \"x\", \"exe\": "
         "\"y\"}"),
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        swt_write_str(path, bad[i]);
        int rc = sw_pidfile_read(path, &q, &e);
        if (rc != SW_EPARSE)
            fail_msg("case %zu: rc %d (%s)", i, rc, e.msg);
        char fm[2048];
        if (!strstr(sw_err_format(&e, fm, sizeof(fm)), "x.pid"))
            fail_msg("case %zu: the error does not name the file: %s", i, fm);
    }
    swt_tmpdir_free(dir);
}

static void test_pidfile_check(void **state)
{
    struct sw_pidfile p;
    char why[512];
    self_record(&p);
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_ALIVE);
    /* same pid and start time, another executable or argv: a forged or corrupt record */
    snprintf(p.exe, sizeof(p.exe), "/usr/bin/llama-server");
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_MISMATCH);
    assert_non_null(strstr(why, "executable"));
    self_record(&p);
    p.args[0] ^= 1;
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_MISMATCH);
    assert_non_null(strstr(why, "argv"));
    self_record(&p);
    p.args_len = 0;
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_MISMATCH);
    self_record(&p);
    /* same pid, another start time: a recycled pid */
    p.start_ticks++;
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_REUSED);
    assert_non_null(strstr(why, "reused"));
    /* same start time, another boot */
    self_record(&p);
    snprintf(p.boot_id, sizeof(p.boot_id), "00000000-0000-0000-0000-000000000000");
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_REUSED);
    assert_non_null(strstr(why, "earlier boot"));
    /* a pid nobody has: a reaped child's */
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    assert_true(c > 0);
    waitpid(c, NULL, 0);
    self_record(&p);
    p.pid = c;
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_GONE);
    /* a zombie counts as gone */
    c = fork();
    if (c == 0)
        _exit(0);
    struct sw_proc_id id;
    for (int i = 0; i < 500; i++) {
        if (sw_proc_identify(c, &id, NULL) == 0 && id.state == 'Z')
            break;
        sw_sleep_ms(10);
    }
    assert_int_equal(id.state, 'Z');
    self_record(&p);
    p.pid = c;
    p.start_ticks = id.start_ticks;
    assert_int_equal(sw_pidfile_check(&p, why, sizeof(why)), SW_PID_GONE);
    waitpid(c, NULL, 0);
}

static void test_stop_refuses_reused(void **state)
{
    char *dir = swt_tmpdir();
    const char *path = swt_join(dir, "x.pid");
    pid_t c = fork();
    if (c == 0) {
        execl("/bin/sleep", "sleep", "300", (char *)NULL);
        _exit(127);
    }
    struct sw_proc_id id;
    for (int i = 0; i < 500 && (sw_proc_identify(c, &id, NULL) || id.state == 0); i++)
        sw_sleep_ms(10);
    struct sw_pidfile p;
    self_record(&p);
    p.pid = p.pgid = c;
    p.start_ticks = id.start_ticks + 1; /* what a previous owner of the pid would have had */
    struct sw_err e;
    struct sw_stop_report r;
    assert_int_equal(sw_pidfile_write(path, &p, &e), 0);
    assert_int_equal(sw_pidfile_stop(path, 1000, &r, &e), 0);
    assert_int_equal(r.verdict, SW_PID_REUSED);
    assert_false(r.signalled);
    assert_int_equal(access(path, F_OK), -1); /* the stale record is gone */
    /* and sleep was left alone */
    assert_int_equal(waitpid(c, NULL, WNOHANG), 0);
    assert_int_equal(kill(c, 0), 0);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    swt_tmpdir_free(dir);
}

static void test_port_check(void **state)
{
    struct sw_err e;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &l);
    unsigned port = ntohs(a.sin_port);
    /* bound but not listening: bind() already conflicts */
    assert_int_equal(listen(fd, 1), 0);
    assert_int_equal(sw_port_check("127.0.0.1", port, &e), SW_EBUSY);
    char want[64];
    snprintf(want, sizeof(want), "pid %d", (int)getpid());
    if (!strstr(e.msg, want))
        fail_msg("holder not named: %s", e.msg);
    assert_int_equal(sw_port_check("localhost", port, &e), SW_EBUSY);
    close(fd);
    assert_int_equal(sw_port_check("127.0.0.1", port, &e), 0);
    assert_int_equal(sw_port_check("example.com", 80, &e), SW_EINVAL);
    assert_int_equal(sw_port_check("127.0.0.1", 0, &e), SW_EINVAL);
    assert_int_equal(sw_port_check("127.0.0.1", 70000, &e), SW_EINVAL);
}

static void test_run_dir(void **state)
{
    char *dir = swt_tmpdir();
    char out[4096];
    struct sw_err e;
    const char *sub = swt_join(dir, "run/x");
    setenv("SLIPWAY_RUN_DIR", sub, 1);
    assert_int_equal(sw_deploy_run_dir(out, sizeof(out), &e), 0);
    assert_string_equal(out, sub);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    chmod(out, 0777);
    assert_int_equal(sw_deploy_run_dir(out, sizeof(out), &e), SW_EIO);
    unsetenv("SLIPWAY_RUN_DIR");
    swt_tmpdir_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * The supervisor on shell children.
 */
static bool alive(pid_t pid)
{
    struct sw_proc_id id;
    return sw_proc_identify(pid, &id, NULL) == 0 && id.state != 'Z';
}

static pid_t read_pid_file(const char *path)
{
    for (int i = 0; i < 1000; i++) {
        char *t = NULL;
        size_t n;
        if (sw_read_file(path, 64, &t, &n, NULL) == 0 && n > 0 && t[n - 1] == '\n') {
            pid_t p = (pid_t)strtol(t, NULL, 10);
            sw_free(t);
            return p;
        }
        sw_free(t);
        sw_sleep_ms(10);
    }
    fail_msg("%s never appeared", path);
    return 0;
}

static void test_spawn_env_log(void **state)
{
    char *dir = swt_tmpdir();
    const char *log = swt_join(dir, "out.log");
    setenv("LLAMA_ARG_CTX_SIZE", "999", 1);
    setenv("LLAMA_API_KEY", "leak", 1);
    setenv("SW_KEEP", "kept", 1);
    /* a descriptor the caller holds open across exec (flock(1)'s lock, say): not the engine's */
    int held = open("/dev/null", O_RDONLY);
    assert_true(held >= 0);
    assert_int_equal(dup2(held, 9), 9);
    const char *argv[] = {"sh", "-c",
                          "echo ctx=${LLAMA_ARG_CTX_SIZE-unset} key=${LLAMA_API_KEY-unset} "
                          "keep=$SW_KEEP add=$SW_ADD; echo err >&2; read x; echo stdin=${x-eof}; "
                          "if [ -e /proc/$$/fd/9 ]; then echo fd9=open; else echo fd9=closed; fi",
                          NULL};
    const char *add[] = {"SW_ADD=yes", "SW_KEEP=over"};
    struct sw_spawn_opts o = {.argv = argv, .env_add = add, .n_env_add = 2, .log_path = log};
    struct sw_child c;
    struct sw_err e;
    assert_int_equal(sw_child_spawn(&o, &c, &e), 0);
    assert_true(c.pid > 0);
    assert_int_equal(c.pgid, c.pid);
    assert_true(c.exe[0] == '/');
    for (int i = 0; i < 1000 && !sw_child_poll(&c); i++)
        sw_sleep_ms(10);
    assert_true(c.exited);
    assert_true(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0);
    char *t = NULL;
    size_t n;
    assert_int_equal(sw_read_file(log, 1 << 16, &t, &n, &e), 0);
    assert_string_equal(t, "ctx=unset key=unset keep=over add=yes\nerr\nstdin=\nfd9=closed\n");
    close(9);
    close(held);
    sw_free(t);
    unsetenv("LLAMA_ARG_CTX_SIZE");
    unsetenv("LLAMA_API_KEY");
    unsetenv("SW_KEEP");
    assert_int_equal(sw_child_stop(&c, 100, &e), 0);

    const char *nope[] = {"no-such-program-xyz", NULL};
    o.argv = nope;
    assert_int_equal(sw_child_spawn(&o, &c, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "not found in PATH"));
    const char *notexec[] = {log, NULL}; /* a file without the x bit */
    o.argv = notexec;
    assert_int_equal(sw_child_spawn(&o, &c, &e), SW_ENOENT);
    swt_tmpdir_free(dir);
}

static void test_stop_group_and_sigkill(void **state)
{
    char *dir = swt_tmpdir();
    const char *pidf = swt_join(dir, "grandchild.pid");
    char script[8192];
    /* ignores SIGTERM; its background grandchild (in the same group) ignores it too */
    snprintf(script, sizeof(script),
             "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > %s; while :; do sleep 1; done' & "
             "while :; do sleep 1; done",
             pidf);
    const char *argv[] = {"sh", "-c", script, NULL};
    struct sw_spawn_opts o = {.argv = argv, .log_path = swt_join(dir, "log")};
    struct sw_child c;
    struct sw_err e;
    assert_int_equal(sw_child_spawn(&o, &c, &e), 0);
    pid_t gc = read_pid_file(pidf);
    assert_true(alive(gc));
    assert_int_equal(sw_child_stop(&c, 200, &e), 0);
    assert_true(c.exited);
    assert_true(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL);
    for (int i = 0; i < 500 && alive(gc); i++)
        sw_sleep_ms(10);
    assert_false(alive(gc));
    /* stopping twice is harmless */
    assert_int_equal(sw_child_stop(&c, 200, &e), 0);
    swt_tmpdir_free(dir);
}

static void test_rlimit(void **state)
{
    char *dir = swt_tmpdir();
    const char *log = swt_join(dir, "log");
    const char *argv[] = {"sh", "-c", "ulimit -v", NULL};
    struct sw_spawn_opts o = {.argv = argv, .log_path = log, .rlimit_as = 3ull << 30};
    struct sw_child c;
    struct sw_err e;
    assert_int_equal(sw_child_spawn(&o, &c, &e), 0);
    for (int i = 0; i < 1000 && !sw_child_poll(&c); i++)
        sw_sleep_ms(10);
    char *t = NULL;
    size_t n;
    assert_int_equal(sw_read_file(log, 1 << 16, &t, &n, &e), 0);
    assert_string_equal(t, "3145728\n"); /* KiB */
    sw_free(t);
    sw_child_stop(&c, 100, NULL);
    swt_tmpdir_free(dir);
}

/* A supervisor that dies without stopping its child: the child must not survive it. */
static void supervisor_dies(bool pdeath, bool watchdog)
{
    char *dir = swt_tmpdir();
    const char *pidf = swt_join(dir, "child.pid");
    pid_t sup = fork();
    if (sup == 0) {
        /* With a watchdog the shell stays the leader (no exec): the watchdog proves the exe and
         * argv it was handed, and a leader that became another program is not signalled.
         * PDEATHSIG alone reaches only the leader, so there it must be sleep itself. */
        const char *script =
            watchdog ? "echo $$ > \"$0\"; sleep 300; :" : "echo $$ > \"$0\"; exec sleep 300";
        const char *argv[] = {"sh", "-c", script, pidf, NULL};
        struct sw_spawn_opts o = {.argv = argv,
                                  .die_with_parent = pdeath,
                                  .watchdog = watchdog,
                                  .watchdog_grace_ms = 500};
        struct sw_child c;
        if (sw_child_spawn(&o, &c, NULL))
            _exit(1);
        for (int i = 0; i < 1000 && access(pidf, F_OK); i++)
            sw_sleep_ms(10);
        _exit(0); /* dies with the child still running, like a SIGKILLed slipway */
    }
    pid_t child = read_pid_file(pidf);
    int st;
    waitpid(sup, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < 1000 && alive(child); i++)
        sw_sleep_ms(10);
    assert_false(alive(child));
    swt_tmpdir_free(dir);
}

static void test_pdeathsig(void **state)
{
    supervisor_dies(true, false);
}

static void test_watchdog(void **state)
{
    supervisor_dies(false, true);
}

static void test_release_keeps_child(void **state)
{
    char *dir = swt_tmpdir();
    const char *argv[] = {"sleep", "300", NULL};
    struct sw_spawn_opts o = {.argv = argv, .watchdog = true, .watchdog_grace_ms = 200};
    struct sw_child c;
    struct sw_err e;
    assert_int_equal(sw_child_spawn(&o, &c, &e), 0);
    pid_t wd = c.wd_pid;
    assert_true(wd > 0);
    sw_child_release(&c);
    assert_int_equal(c.wd_fd, -1);
    assert_false(alive(wd));   /* the watchdog went away (reaped) */
    assert_true(alive(c.pid)); /* and left the child alone */
    kill(c.pid, SIGKILL);
    waitpid(c.pid, NULL, 0);
    swt_tmpdir_free(dir);
}

static void test_wait_status_str(void **state)
{
    char b[96];
    assert_string_equal(sw_wait_status_str(1 << 8, b, sizeof(b)), "exited with status 1");
    assert_non_null(strstr(sw_wait_status_str(9, b, sizeof(b)), "killed by signal 9"));
}

int main(void)
{
    sw_core_init();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pidfile_roundtrip),
        cmocka_unit_test(test_pidfile_malformed),
        cmocka_unit_test(test_pidfile_check),
        cmocka_unit_test(test_stop_refuses_reused),
        cmocka_unit_test(test_port_check),
        cmocka_unit_test(test_run_dir),
        cmocka_unit_test(test_spawn_env_log),
        cmocka_unit_test(test_stop_group_and_sigkill),
        cmocka_unit_test(test_rlimit),
        cmocka_unit_test(test_pdeathsig),
        cmocka_unit_test(test_watchdog),
        cmocka_unit_test(test_release_keeps_child),
        cmocka_unit_test(test_wait_status_str),
    };
    return cmocka_run_group_tests_name("deploy", tests, NULL, NULL);
}
