/*
 * deploy/local: the one rule for the program a local llama.cpp endpoint runs (a declared binary,
 * else llama-server on $PATH, else the pinned build under $SLIPWAY_CACHE), the rendered argv made
 * to run it, where `up` keeps an endpoint's record, and the check before a local runner boots: a
 * live `up` record refused naming its pid and `slipway down NAME`, a stale one ignored, a port
 * held by another refused naming the holder. Stand-in programs are empty executable files; the
 * live record is this test process's own (nothing is ever signalled: stop_running stays off).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/deploy.h>
#include <slipway/fleet.h>

#include "swtest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char *g_dir;
static char g_old_path[8192];

static int setup(void **state)
{
    (void)state;
    g_dir = swt_tmpdir();
    const char *p = getenv("PATH");
    snprintf(g_old_path, sizeof(g_old_path), "%s", p ? p : "");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    setenv("PATH", g_old_path, 1);
    unsetenv("SLIPWAY_CACHE");
    unsetenv("SLIPWAY_RUN_DIR");
    swt_tmpdir_free(g_dir);
    return 0;
}

/* An empty executable file at path (its directories made). */
static void make_exe(const char *path)
{
    char cmd[4400];
    /* absolute programs: the test's $PATH is a stand-in's */
    snprintf(cmd, sizeof(cmd),
             "/bin/mkdir -p \"$(/usr/bin/dirname '%s')\" && : > '%s' && /bin/chmod 755 '%s'", path,
             path, path);
    assert_int_equal(system(cmd), 0);
}

static void test_program_rule(void **state)
{
    (void)state;
    char out[4096], pinned[4096], onpath[4096];
    const char *how = NULL;
    /* nothing anywhere: the bare name, said as not found */
    setenv("PATH", swt_join(g_dir, "empty-bin"), 1);
    setenv("SLIPWAY_CACHE", swt_join(g_dir, "cache"), 1);
    assert_string_equal(sw_deploy_llamacpp_program(NULL, out, sizeof(out), &how), "llama-server");
    assert_string_equal(how, "not found");
    /* the pinned build */
    snprintf(pinned, sizeof(pinned), "%s/cache/llama.cpp/%s/bin/llama-server", g_dir,
             SW_ENGINE_LLAMACPP_PIN);
    make_exe(pinned);
    assert_string_equal(sw_deploy_llamacpp_program(NULL, out, sizeof(out), &how), pinned);
    assert_string_equal(how, "pinned build");
    /* $PATH first: the bare name (the pid file records what ran) */
    snprintf(onpath, sizeof(onpath), "%s/bin/llama-server", g_dir);
    make_exe(onpath);
    setenv("PATH", swt_join(g_dir, "bin"), 1);
    assert_string_equal(sw_deploy_llamacpp_program(NULL, out, sizeof(out), &how), "llama-server");
    assert_string_equal(how, "$PATH");
    /* a declared binary wins over both */
    assert_string_equal(sw_deploy_llamacpp_program("/opt/x/llama-server", out, sizeof(out), &how),
                        "/opt/x/llama-server");
    assert_string_equal(how, "binary:");
    setenv("PATH", swt_join(g_dir, "empty-bin"), 1);
}

/* A fleet of yaml's endpoints on one local host "here". */
static struct sw_fleet *load(const char *yaml)
{
    struct sw_fleet *f = NULL;
    struct sw_err e;
    const char *path = swt_join(g_dir, "fleet.yaml");
    swt_write_str(path, yaml);
    if (sw_fleet_load(path, NULL, &f, &e))
        fail_msg("fleet: %s", e.msg);
    return f;
}

static void test_local_program_argv(void **state)
{
    (void)state;
    char pinned[4096];
    snprintf(pinned, sizeof(pinned), "%s/cache/llama.cpp/%s/bin/llama-server", g_dir,
             SW_ENGINE_LLAMACPP_PIN);
    make_exe(pinned);
    setenv("SLIPWAY_CACHE", swt_join(g_dir, "cache"), 1);
    setenv("PATH", swt_join(g_dir, "empty-bin"), 1);
    struct sw_fleet *f = load("version: 1\n"
                              "hosts: {here: {transport: local}}\n"
                              "endpoints:\n"
                              "  plain:\n"
                              "    host: here\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m/x.gguf}\n"
                              "  pinned:\n"
                              "    host: here\n"
                              "    engine: llama.cpp\n"
                              "    binary: /opt/llama/bin/llama-server\n"
                              "    payload: {path: /m/x.gguf}\n");
    char *a0 = sw_strdup("llama-server"), *a1 = sw_strdup("-m");
    char *argv[] = {a0, a1, NULL};
    struct sw_engine_cmd cmd = {.argv = argv, .argc = 2};
    const char *how = NULL;
    /* a declared binary is left as rendered */
    assert_int_equal(sw_deploy_local_program(sw_fleet_endpoint(f, "pinned"), &cmd, &how, NULL), 0);
    assert_string_equal(cmd.argv[0], "llama-server");
    /* without one: what `up` runs */
    assert_int_equal(sw_deploy_local_program(sw_fleet_endpoint(f, "plain"), &cmd, &how, NULL), 0);
    assert_string_equal(cmd.argv[0], pinned);
    assert_string_equal(how, "pinned build");
    assert_string_equal(cmd.argv[1], "-m");
    sw_free(cmd.argv[0]);
    sw_free(cmd.argv[1]);
    sw_fleet_free(f);
}

static void test_clear(void **state)
{
    (void)state;
    char run[4200], pidf[4300], yaml[1024], msg[64];
    snprintf(run, sizeof(run), "%s/run", g_dir);
    mkdir(run, 0700);
    setenv("SLIPWAY_RUN_DIR", run, 1);
    int port = swt_free_port();
    assert_true(port > 0);
    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "hosts: {here: {transport: local}}\n"
             "endpoints:\n"
             "  ep-one:\n"
             "    host: here\n"
             "    engine: llama.cpp\n"
             "    listen: 127.0.0.1:%d\n"
             "    payload: {path: /m/x.gguf}\n",
             port);
    struct sw_fleet *f = load(yaml);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "ep-one");
    assert_non_null(ep);
    /* the record's path, as `up` writes it */
    assert_int_equal(sw_deploy_pid_path(ep->name, pidf, sizeof(pidf), NULL), 0);
    assert_string_equal(pidf, swt_join(run, "ep-one.pid"));

    struct sw_local_clear lc;
    struct sw_err e;
    /* nothing recorded, nothing listening: clear */
    assert_int_equal(sw_deploy_local_clear(ep, NULL, &lc, &e), 0);
    assert_int_equal(lc.pid, 0);

    /* a live record (this very process): refused, naming the pid and `slipway down` */
    struct sw_pidfile p;
    memset(&p, 0, sizeof(p));
    assert_int_equal(sw_pidfile_identify(getpid(), &p, NULL), 0);
    snprintf(p.endpoint, sizeof(p.endpoint), "ep-one");
    snprintf(p.url, sizeof(p.url), "http://127.0.0.1:%d", port);
    assert_int_equal(sw_pidfile_write(pidf, &p, NULL), 0);
    struct sw_up_record ur;
    assert_int_equal(sw_deploy_up_record(ep->name, &ur, NULL), 0);
    assert_true(ur.present);
    assert_int_equal(ur.verdict, SW_PID_ALIVE);
    sw_err_clear(&e);
    assert_int_equal(sw_deploy_local_clear(ep, NULL, &lc, &e), SW_EEXIST);
    snprintf(msg, sizeof(msg), "pid %d", (int)getpid());
    assert_non_null(strstr(e.msg, msg));
    swt_has_all("e.msg", e.msg, "slipway down ep-one", "--stop-running", NULL);
    assert_int_equal(lc.pid, getpid());

    /* a stale record (another start time) proves nothing: clear again */
    p.start_ticks += 1;
    assert_int_equal(sw_pidfile_write(pidf, &p, NULL), 0);
    assert_int_equal(sw_deploy_local_clear(ep, NULL, &lc, &e), 0);
    unlink(pidf);

    /* the port held by another socket: refused before any boot, the holder named */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = swt_loopback(port);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 1), 0);
    sw_err_clear(&e);
    assert_int_equal(sw_deploy_local_clear(ep, NULL, &lc, &e), SW_EBUSY);
    snprintf(msg, sizeof(msg), "in use by pid %d", (int)getpid());
    assert_non_null(strstr(e.msg, msg));
    assert_non_null(strstr(e.msg, "nothing was booted"));
    close(fd);
    sw_fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_rule),
        cmocka_unit_test(test_local_program_argv),
        cmocka_unit_test(test_clear),
    };
    return cmocka_run_group_tests_name("deploy_local", tests, setup, teardown);
}
