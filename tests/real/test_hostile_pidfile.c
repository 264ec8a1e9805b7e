/*
 * `slipway down` against hostile pid files, driving the real binary: nothing slipway did not
 * start is ever signalled, and every refusal says why and exits non-zero.
 *
 *   - a forged record naming a live unrelated process (/bin/sleep, started here in its own
 *     group) with its real start time and boot id, but another executable or argv;
 *   - a record that describes that process exactly, but in a file that is group/world-writable,
 *     owned by another user (uid 65534), a symbolic link, or in a directory that is writable by
 *     others, owned by another user or a symbolic link (the run directory too);
 *   - the control: the same exact record in a safe file is obeyed (so each refusal above is
 *     for the reason it names);
 *   - the run directory is never a predictable shared /tmp name: $SLIPWAY_RUN_DIR, else
 *     $XDG_RUNTIME_DIR/slipway, else ~/.local/state/slipway/run, created 0700;
 *   - the orphan: `up --detach` with a real llama-server held in its load (the model is a FIFO
 *     nobody writes), then slipway's watchdog and slipway itself SIGKILLed; `down NAME` must
 *     still find and stop the engine.
 * Forged records are written as JSON by hand, as an attacker would. Waits are bounded; nothing
 * asserts a duration. The foreign-owner case needs root; the orphan case the pinned llama.cpp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/deploy.h>

#include "swllama.h"
#include "swtest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *g_dir;
static int g_case;
static char *g_home, *g_xdg; /* the environment test_run_dir_choice changes */

static int setup(void **state)
{
    (void)state;
    g_dir = swt_tmpdir();
    g_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    g_xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    swl_llama_dir(); /* found (and remembered) with the caller's HOME */
    return 0;
}

/* After each case, pass or fail: the environment as it was. */
static int restore_env(void **state)
{
    (void)state;
    unsetenv("SLIPWAY_RUN_DIR");
    if (g_home)
        setenv("HOME", g_home, 1);
    if (g_xdg)
        setenv("XDG_RUNTIME_DIR", g_xdg, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    swt_tmpdir_free(g_dir);
    free(g_home);
    free(g_xdg);
    return 0;
}

/* A fresh directory of ours (0700) for one case. Short neutral names: a path must never
 * contain the words a refusal is expected to say. */
static const char *case_dir(const char *name)
{
    static char d[4096];
    snprintf(d, sizeof(d), "%s/%d-%s", g_dir, ++g_case, name);
    assert_int_equal(mkdir(d, 0700), 0);
    return d;
}

/* /bin/sleep 300 in its own process group: the unrelated process a forged record names. */
static pid_t start_victim(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl("/bin/sleep", "sleep", "300", (char *)NULL);
        _exit(127);
    }
    /* wait until it is sleep (exec done), not still our fork */
    char cmd[256] = "";
    for (int i = 0; i < 500; i++) {
        if (sw_proc_cmdline(pid, cmd, sizeof(cmd)) == 0 && !strcmp(cmd, "sleep 300"))
            break;
        sw_sleep_ms(10);
    }
    assert_string_equal(cmd, "sleep 300");
    return pid;
}

static bool victim_alive(pid_t pid)
{
    struct sw_proc_id id;
    return waitpid(pid, NULL, WNOHANG) == 0 && sw_proc_identify(pid, &id, NULL) == 0 &&
           id.state != 'Z';
}

static void stop_victim(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Write a pid file by hand: pid/pgid, the process's real start time and boot id, and the given
 * executable and argv. Mode set exactly (fchmod, not the umask). */
static void forge(const char *path, pid_t pid, const char *exe, const char *const *argv,
                  mode_t mode)
{
    struct sw_proc_id id;
    assert_int_equal(sw_proc_identify(pid, &id, NULL), 0);
    json_t *args = json_array();
    char line[1024] = "";
    for (size_t i = 0; argv[i]; i++) {
        json_array_append_new(args, json_string(argv[i]));
        snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", i ? " " : "", argv[i]);
    }
    json_t *o = json_pack("{s:i, s:s, s:s, s:i, s:i, s:I, s:s, s:s, s:s, s:o, s:s, s:i, s:s, "
                          "s:s, s:i, s:i}",
                          "version", 1, "endpoint", "victim", "engine", "llama.cpp", "pid",
                          (int)pid, "pgid", (int)id.pgid, "start_ticks", (json_int_t)id.start_ticks,
                          "boot_id", id.boot_id, "exe", exe, "cmdline", line, "argv", args, "host",
                          "127.0.0.1", "port", 8080, "url", "http://127.0.0.1:8080", "log",
                          "/dev/null", "started_unix", 1796246280, "supervisor", 0);
    assert_non_null(o);
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
    free(text);
}

/* The record that describes the victim exactly: its real executable and argv. */
static void forge_exact(const char *path, pid_t pid, mode_t mode)
{
    char link[64], exe[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    const char *argv[] = {"sleep", "300", NULL};
    forge(path, pid, exe, argv, mode);
}

/* Run `slipway down ARGS...` (--json added when json) and require a refusal naming `why`
 * (stdout or stderr). The victim must still be alive afterwards. */
static void expect_refusal(pid_t victim, const char *why, bool json, const char *a1, const char *a2)
{
    struct swt_run r;
    if (json)
        assert_int_equal(swt_slipway(&r, "down", "--json", "--grace", "2", a1, a2, NULL), 0);
    else
        assert_int_equal(swt_slipway(&r, "down", "--grace", "2", a1, a2, NULL), 0);
    bool said = strstr(r.out, why) || strstr(r.err, why);
    bool alive = victim_alive(victim);
    if (r.status == 0 || !said || !alive)
        fail_msg("down %s %s: exit %d, victim %s, expected a refusal naming '%s'\nstdout: "
                 "%.1500s\nstderr: %.1500s",
                 a1, a2 ? a2 : "", r.status, alive ? "alive" : "KILLED", why, r.out, r.err);
    if (json) {
        json_t *j = swt_json_out(&r);
        assert_non_null(json_object_get(j, "error"));
        json_decref(j);
    }
    swt_run_free(&r);
}

/* (a) A record with the victim's pid, start time and boot id but another program. */
static void test_forged_exe_and_argv(void **state)
{
    (void)state;
    const char *run = case_dir("a");
    setenv("SLIPWAY_RUN_DIR", run, 1);
    char path[4200];
    snprintf(path, sizeof(path), "%s/victim.pid", run);
    pid_t v = start_victim();
    char exe[PATH_MAX], link[64];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)v);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';

    /* another executable (what an engine record would say) */
    const char *engine_argv[] = {"llama-server", "-m", "model.gguf", "--port", "8080", NULL};
    forge(path, v, "/usr/local/bin/llama-server", engine_argv, 0644);
    expect_refusal(v, exe, true, "victim", NULL); /* names what really runs there */
    expect_refusal(v, "executable", false, "victim", NULL);
    assert_int_equal(access(path, F_OK), 0); /* a refusal leaves the record for a human */

    /* the right executable, another argv */
    const char *other_argv[] = {"sleep", "301", NULL};
    forge(path, v, exe, other_argv, 0644);
    expect_refusal(v, "argv", true, "victim", NULL);

    /* no argv recorded at all: nothing proves which program the pid is */
    const char *none[] = {NULL};
    forge(path, v, exe, none, 0644);
    expect_refusal(v, "argv", true, "victim", NULL);

    stop_victim(v);
    unsetenv("SLIPWAY_RUN_DIR");
}

/* (b) The exact record, in a file or a directory others can write. */
static void test_writable_by_others(void **state)
{
    (void)state;
    const char *run = case_dir("b");
    setenv("SLIPWAY_RUN_DIR", run, 1);
    char path[4200];
    snprintf(path, sizeof(path), "%s/victim.pid", run);
    pid_t v = start_victim();

    forge_exact(path, v, 0666);
    expect_refusal(v, "writable", true, "victim", NULL);
    expect_refusal(v, "writable", false, "victim", NULL);
    forge_exact(path, v, 0620);
    expect_refusal(v, "writable", true, "victim", NULL);

    /* the directory: world-writable (sticky or not), named through --pid-file */
    forge_exact(path, v, 0644);
    assert_int_equal(chmod(run, 01777), 0);
    expect_refusal(v, "writable", true, "--pid-file", path);
    unsetenv("SLIPWAY_RUN_DIR");
    assert_int_equal(chmod(run, 0770), 0);
    expect_refusal(v, "writable", true, "--pid-file", path);
    /* and as the run directory */
    setenv("SLIPWAY_RUN_DIR", run, 1);
    expect_refusal(v, "writable", true, "victim", NULL);
    assert_int_equal(chmod(run, 0700), 0);

    stop_victim(v);
    unsetenv("SLIPWAY_RUN_DIR");
}

/* (c) The exact record, owned by another user (or in another user's directory). */
static void test_foreign_owner(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* only root can give a file away */
    const char *run = case_dir("c");
    setenv("SLIPWAY_RUN_DIR", run, 1);
    char path[4200];
    snprintf(path, sizeof(path), "%s/victim.pid", run);
    pid_t v = start_victim();

    forge_exact(path, v, 0644);
    assert_int_equal(chown(path, 65534, 65534), 0);
    expect_refusal(v, "uid 65534", true, "victim", NULL);
    expect_refusal(v, "uid 65534", false, "victim", NULL);

    /* our file in a directory another user owns (and could swap files in) */
    char sub[4300], inner[4400];
    snprintf(sub, sizeof(sub), "%s/theirs", run);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(inner, sizeof(inner), "%s/victim.pid", sub);
    forge_exact(inner, v, 0644);
    assert_int_equal(chown(sub, 65534, 65534), 0);
    expect_refusal(v, "uid 65534", true, "--pid-file", inner);
    unsetenv("SLIPWAY_RUN_DIR");

    stop_victim(v);
}

/* (d) Symbolic links: the pid file, its directory, the run directory. */
static void test_symlinks(void **state)
{
    (void)state;
    const char *run = case_dir("d");
    char real[4200], elsewhere[4300], link[4300], linkdir[4300], viadir[4400];
    snprintf(real, sizeof(real), "%s", run);
    pid_t v = start_victim();

    /* RUN_DIR/victim.pid -> a safe, exact record elsewhere */
    snprintf(elsewhere, sizeof(elsewhere), "%s/record.json", real);
    forge_exact(elsewhere, v, 0644);
    snprintf(link, sizeof(link), "%s/victim.pid", real);
    assert_int_equal(symlink(elsewhere, link), 0);
    setenv("SLIPWAY_RUN_DIR", real, 1);
    expect_refusal(v, "symbolic link", true, "victim", NULL);
    expect_refusal(v, "symbolic link", false, "victim", NULL);
    expect_refusal(v, "symbolic link", true, "--pid-file", link);
    unlink(link);

    /* the pid file's directory is a link to a safe directory holding the exact record */
    snprintf(linkdir, sizeof(linkdir), "%s.link", real);
    assert_int_equal(symlink(real, linkdir), 0);
    snprintf(viadir, sizeof(viadir), "%s/record.json", linkdir);
    unsetenv("SLIPWAY_RUN_DIR");
    expect_refusal(v, "symbolic link", true, "--pid-file", viadir);

    /* the run directory is a link */
    char rec[4400];
    snprintf(rec, sizeof(rec), "%s/victim.pid", real);
    forge_exact(rec, v, 0644);
    setenv("SLIPWAY_RUN_DIR", linkdir, 1);
    expect_refusal(v, "symbolic link", true, "victim", NULL);
    unsetenv("SLIPWAY_RUN_DIR");
    unlink(linkdir);

    stop_victim(v);
}

/* The control: the exact record in a safe file is obeyed, so the refusals above are for the
 * reasons they name, not because the record could never match. */
static void test_exact_record_is_obeyed(void **state)
{
    (void)state;
    const char *run = case_dir("ctl");
    setenv("SLIPWAY_RUN_DIR", run, 1);
    char path[4200];
    snprintf(path, sizeof(path), "%s/victim.pid", run);
    pid_t v = start_victim();
    forge_exact(path, v, 0644);
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "down", "--json", "--grace", "2", "victim", NULL), 0);
    int st = -1;
    for (int i = 0; i < 200 && waitpid(v, &st, WNOHANG) != v; i++)
        sw_sleep_ms(10);
    if (r.status != 0 || !WIFSIGNALED(st)) {
        stop_victim(v);
        fail_msg("exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    }
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "alive");
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(access(path, F_OK), -1);
    unsetenv("SLIPWAY_RUN_DIR");
}

/* The run directory: never /tmp/slipway-UID; created 0700 where the user alone writes. */
static void expect_run_dir(const char *want)
{
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "down", "--json", "nothing-here", NULL), 0);
    if (r.status != 0)
        fail_msg("exit %d: %s %s", r.status, r.out, r.err);
    json_t *j = swt_json_out(&r);
    const char *pf = json_string_value(json_object_get(j, "pid_file"));
    char expect[4300];
    snprintf(expect, sizeof(expect), "%s/nothing-here.pid", want);
    if (!pf || strcmp(pf, expect))
        fail_msg("pid file %s, expected %s", pf ? pf : "(none)", expect);
    json_decref(j);
    swt_run_free(&r);
    struct stat st;
    assert_int_equal(lstat(want, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(st.st_uid, geteuid());
}

static void test_run_dir_choice(void **state)
{
    (void)state;
    const char *base = case_dir("run");
    char home[4200], xdg[4200], want[4300];
    snprintf(home, sizeof(home), "%s/home", base);
    snprintf(xdg, sizeof(xdg), "%s/xdg", base);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(mkdir(xdg, 0700), 0);
    unsetenv("SLIPWAY_RUN_DIR");
    setenv("HOME", home, 1);

    unsetenv("XDG_RUNTIME_DIR");
    snprintf(want, sizeof(want), "%s/.local/state/slipway/run", home);
    expect_run_dir(want);

    setenv("XDG_RUNTIME_DIR", xdg, 1);
    snprintf(want, sizeof(want), "%s/slipway", xdg);
    expect_run_dir(want);

    /* an existing one that others may write is refused, by path, not repaired */
    assert_int_equal(chmod(want, 0777), 0);
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "down", "nothing-here", NULL), 0);
    assert_int_not_equal(r.status, 0);
    if (!strstr(r.err, want) || !strstr(r.err, "writable"))
        fail_msg("stderr: %s", r.err);
    swt_run_free(&r);
}

/* ---------------------------------------------------------------------------------------------
 * (e) The orphan: slipway and its watchdog both SIGKILLed while a detached boot loads.
 */

static int settle(const char *mark)
{
    for (int i = 0; i < 300 && swt_survivors(mark, false, NULL); i++)
        sw_sleep_ms(50);
    return swt_survivors(mark, false, NULL);
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    int ppid = 0;
    if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

/* slipway's children that run slipway's own executable: its watchdog (a fork, no exec). */
static pid_t find_watchdog(pid_t slipway)
{
    char self[PATH_MAX], want[PATH_MAX];
    if (!realpath(swt_bin(), want))
        return 0;
    DIR *d = opendir("/proc");
    assert_non_null(d);
    pid_t found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || parent_of((pid_t)pid) != slipway)
            continue;
        char link[64];
        snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
        ssize_t n = readlink(link, self, sizeof(self) - 1);
        if (n <= 0)
            continue;
        self[n] = '\0';
        if (!strcmp(self, want))
            found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

static void test_orphan_found_by_down(void **state)
{
    (void)state;
    if (!swl_llama_dir())
        skip();
    const char *run = case_dir("e");
    char mark[64], fifo[4300], log[4300], port[16];
    snprintf(mark, sizeof(mark), "swhostile-%d-orphan", (int)getpid());
    snprintf(fifo, sizeof(fifo), "%s/model.gguf", run);
    snprintf(log, sizeof(log), "%s/stdout", run);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    setenv("SLIPWAY_RUN_DIR", run, 1);
    char engine_log[4400];
    snprintf(engine_log, sizeof(engine_log), "%s/%s.log", run, mark);

    pid_t s = 0;
    bool loading = false;
    for (int attempt = 0; attempt < 3 && !loading; attempt++) {
        snprintf(port, sizeof(port), "%d", swt_free_port());
        const char *argv[] = {swt_bin(),  "up",
                              "--detach", "--no-preflight", /* the preflight would refuse a FIFO */
                              "--",       swl_bin("llama-server"),
                              "-m",       fifo,
                              "--port",   port,
                              "--alias",  mark,
                              NULL};
        s = fork();
        assert_true(s >= 0);
        if (s == 0) {
            int o = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            int in = open("/dev/null", O_RDONLY);
            if (o < 0 || in < 0)
                _exit(126);
            dup2(in, 0);
            dup2(o, 1);
            dup2(o, 2);
            setenv("SLIPWAY_NO_PROGRESS", "1", 1);
            execv(argv[0], (char *const *)argv);
            _exit(127);
        }
        /* llama-server runs, blocked opening the FIFO */
        for (int i = 0; i < 1200 && !loading; i++) {
            loading = swt_file_has(engine_log, "loading model");
            if (!loading && waitpid(s, NULL, WNOHANG) == s) {
                s = 0;
                break; /* the boot failed (a port someone took meanwhile): again */
            }
            if (!loading)
                sw_sleep_ms(50);
        }
    }
    if (!loading) {
        char *t = swl_tail(log, 2000);
        if (s > 0) {
            kill(s, SIGKILL);
            waitpid(s, NULL, 0);
        }
        settle(mark);
        fail_msg("llama-server never started loading; slipway said:\n%s", t ? t : "");
    }
    /* the record is written once the engine has exec'd (its exe and argv are read from /proc):
     * under ASan, "loading model" can come first; the case is about an orphan WITH its record,
     * so wait for it (bounded) before the kills */
    char pidf0[4400];
    snprintf(pidf0, sizeof(pidf0), "%s/%s.pid", run, mark);
    for (int i = 0; i < 400 && access(pidf0, F_OK) != 0; i++)
        sw_sleep_ms(25);
    /* slipway, its watchdog, llama-server: the watchdog first, so nobody stops the engine */
    pid_t wd = find_watchdog(s);
    assert_true(wd > 0);
    assert_int_equal(kill(wd, SIGKILL), 0);
    assert_int_equal(kill(s, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(s, &st, 0), s);
    for (int i = 0; i < 200 && swt_survivors(mark, false, NULL) > 1; i++)
        sw_sleep_ms(10);
    pid_t engine = 0;
    int left = swt_survivors(mark, false, &engine);
    if (left != 1) {
        settle(mark);
        fail_msg("%d processes carry the mark after SIGKILL; expected the orphaned engine", left);
    }

    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "down", "--json", "--grace", "3", mark, NULL), 0);
    int remaining = settle(mark);
    if (remaining) {
        kill(-engine, SIGKILL); /* never leave it behind, pass or fail */
        settle(mark);
    }
    if (r.status != 0 || remaining)
        fail_msg("down %s: exit %d, %d process(es) left\nstdout: %s\nstderr: %s", mark, r.status,
                 remaining, r.out, r.err);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "alive");
    assert_true(json_is_true(json_object_get(j, "signalled")));
    assert_int_equal(json_integer_value(json_object_get(j, "pid")), engine);
    json_decref(j);
    swt_run_free(&r);
    char pidf[4400];
    snprintf(pidf, sizeof(pidf), "%s/%s.pid", run, mark);
    assert_int_equal(access(pidf, F_OK), -1);
    unsetenv("SLIPWAY_RUN_DIR");
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_forged_exe_and_argv, restore_env),
        cmocka_unit_test_teardown(test_writable_by_others, restore_env),
        cmocka_unit_test_teardown(test_foreign_owner, restore_env),
        cmocka_unit_test_teardown(test_symlinks, restore_env),
        cmocka_unit_test_teardown(test_exact_record_is_obeyed, restore_env),
        cmocka_unit_test_teardown(test_run_dir_choice, restore_env),
        cmocka_unit_test_teardown(test_orphan_found_by_down, restore_env),
    };
    return cmocka_run_group_tests_name("hostile_pidfile", tests, setup, teardown);
}
