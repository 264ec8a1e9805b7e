/*
 * The local loop against the real pinned llama-server (issue 29): an endpoint `slipway up
 * --detach` started is what `status` reports serving (exit 0), supervised by up, its argv as up
 * renders it; `tune` and `ladder` with the local runner on that same endpoint refuse before any
 * boot, naming the pid and `slipway down EP` (no boot spent on "port in use"), or stop it first
 * with --stop-running, and then boot the very program `up` ran (argv[0] of the pid file); a port
 * held by another process is reported before any boot; `tune --no-ledger` leaves no ledger file.
 *
 * The fleet names no `binary:`: the engine is found the one way (deploy/local), the pinned build
 * when $PATH has no llama-server. After each case /proc is scanned for any non-zombie process
 * whose argv carries the case's marker (llama-server gets it as --alias). A missing llama.cpp
 * build fails the test, naming what is missing. Waits are bounded; nothing asserts a duration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/deploy.h>
#include <slipway/ledger.h>

#include "swllama.h"
#include "swtest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char *g_dir;
static char g_model[4096];
static char g_fleet[4200], g_run[4200]; /* the running case's: stopped by case_teardown */
static char g_why[1024];
static int g_case;

struct tcase {
    char dir[4096], mark[64], fleet[4200], run[4200], ledger[4200];
    int port;
};

static int setup(void **state)
{
    (void)state;
    if (!swl_llama_dir())
        return 0;
    g_dir = swt_tmpdir();
    if (swl_chat_model(g_dir, g_model, sizeof(g_model), g_why, sizeof(g_why)))
        g_model[0] = '\0';
    unsetenv("SLIPWAY_LEDGER");
    setenv("SLIPWAY_NO_PROGRESS", "1", 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    swt_tmpdir_free(g_dir);
    return 0;
}

#define NEED_LLAMA()                                                                               \
    do {                                                                                           \
        if (!g_dir)                                                                                \
            fail_msg("needs the pinned llama.cpp build: %s", swl_missing());                       \
        if (!g_model[0])                                                                           \
            fail_msg("needs a chat model: %s", g_why);                                             \
    } while (0)

/* A fleet of one local llama.cpp endpoint "tiny" without `binary:`, its own run directory. */
static void tcase_init(struct tcase *t, const char *name)
{
    char yaml[4096];
    snprintf(t->mark, sizeof(t->mark), "swloop-%d-%d-%s", (int)getpid(), ++g_case, name);
    snprintf(t->dir, sizeof(t->dir), "%s", swt_join(g_dir, t->mark));
    mkdir(t->dir, 0700);
    snprintf(t->fleet, sizeof(t->fleet), "%s/fleet.yaml", t->dir);
    snprintf(t->run, sizeof(t->run), "%s/run", t->dir);
    mkdir(t->run, 0700);
    t->port = swt_free_port();
    assert_true(t->port > 0);
    snprintf(yaml, sizeof(yaml),
             SWL_FLEET_LOCAL_TINY "    listen: 127.0.0.1:%d\n"
                                  "    alias: %s\n"
                                  "    payload:\n"
                                  "      path: %s\n"
                                  "    shape:\n"
                                  "      ctx_size: 2048\n"
                                  "      seqs: 1\n"
                                  "    knobs:\n"
                                  "      seqs: [1, 2]\n"
                                  "      ctx_size: {min: 1024, max: 2048, step: 1024}\n",
             t->port, t->mark, g_model);
    swt_write_str(t->fleet, yaml);
    setenv("SLIPWAY_RUN_DIR", t->run, 1);
    snprintf(g_fleet, sizeof(g_fleet), "%s", t->fleet);
    snprintf(g_run, sizeof(g_run), "%s", t->run);
    assert_int_equal(sw_ledger_default_path(t->fleet, t->ledger, sizeof(t->ledger), NULL), 0);
}

/* `slipway up --detach` of the fleet: the pid file's record (pid and argv[0], what up ran). */
static pid_t up_detached(const struct tcase *t, char *argv0, size_t n)
{
    struct swt_run r;
    char pidf[4300];
    struct sw_pidfile p;
    assert_int_equal(
        swt_slipway(&r, "up", "--detach", "--timeout", "180", "--fleet", t->fleet, NULL), 0);
    if (r.status)
        fail_msg("up --detach exited %d:\n%s\n%s", r.status, r.out, r.err);
    swt_run_free(&r);
    snprintf(pidf, sizeof(pidf), "%s/tiny.pid", t->run);
    assert_int_equal(sw_pidfile_read(pidf, &p, NULL), 0);
    assert_int_equal(sw_pidfile_check(&p, NULL, 0), SW_PID_ALIVE);
    snprintf(argv0, n, "%s", p.args);
    return p.pid;
}

/* Nothing of the case is left running: down (if anything is), then the marker scan. */
static void tcase_end(const struct tcase *t)
{
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "down", "--fleet", t->fleet, NULL), 0);
    swt_run_free(&r);
    for (int i = 0; i < 200 && swt_survivors(t->mark, false, NULL); i++)
        sw_sleep_ms(50);
    assert_int_equal(swt_survivors(t->mark, true, NULL), 0);
    unsetenv("SLIPWAY_RUN_DIR");
}

/* After every case, passed or failed: what `up` left running is stopped. */
static int case_teardown(void **state)
{
    (void)state;
    struct swt_run r;
    if (!g_fleet[0])
        return 0;
    setenv("SLIPWAY_RUN_DIR", g_run, 1);
    if (swt_slipway(&r, "down", "--fleet", g_fleet, NULL) == 0)
        swt_run_free(&r);
    unsetenv("SLIPWAY_RUN_DIR");
    g_fleet[0] = '\0';
    return 0;
}

/* Files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    char cmd[4400];
    struct swt_run r;
    snprintf(cmd, sizeof(cmd), "ls -1 '%s' | grep -c '^%s' || true", dir, prefix);
    const char *argv[] = {"sh", "-c", cmd, NULL};
    assert_int_equal(swt_run(argv, NULL, 30, &r), 0);
    int n = atoi(r.out);
    swt_run_free(&r);
    return n;
}

/* up --detach, then status: serving, exit 0, from the process; the engine is the one program. */
static void test_status_knows_up(void **state)
{
    (void)state;
    NEED_LLAMA();
    struct tcase t;
    char argv0[4096], want[4096];
    tcase_init(&t, "status");
    pid_t pid = up_detached(&t, argv0, sizeof(argv0));
    /* up ran what deploy/local says this machine runs */
    const char *how = NULL;
    assert_string_equal(argv0, sw_deploy_llamacpp_program(NULL, want, sizeof(want), &how));
    assert_string_not_equal(how, "not found");

    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "status", "--fleet", t.fleet, "--json", NULL), 0);
    if (r.status)
        fail_msg("status exited %d:\n%s\n%s", r.status, r.out, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "serving")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 1);
    const json_t *ej = json_array_get(json_object_get(j, "endpoints"), 0);
    assert_true(json_is_true(json_object_get(ej, "serving")));
    assert_string_equal(sw_json_str(ej, "state", ""), "serving");
    assert_string_equal(sw_json_str(ej, "supervisor", ""), "up");
    const json_t *pj = json_object_get(ej, "process");
    assert_int_equal(json_integer_value(json_object_get(pj, "pid")), pid);
    assert_string_equal(sw_json_str(pj, "verdict", ""), "alive");
    assert_true(sw_json_str(pj, "since", "")[0] != '\0');
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ej, "health"), "status")),
                     200);
    assert_true(json_is_true(json_object_get(json_object_get(ej, "liveness"), "ok")));
    assert_true(json_is_true(json_object_get(json_object_get(ej, "shape"), "as_rendered")));
    json_decref(j);

    /* the human view says so too, and exits 0 */
    assert_int_equal(swt_slipway(&r, "status", "--fleet", t.fleet, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "supervised by up"));
    assert_non_null(strstr(r.out, "1 of 1 endpoint(s) serving"));
    swt_run_free(&r);

    /* stopped, it is not serving: exit 1, the unit path again (no live record) */
    assert_int_equal(swt_slipway(&r, "down", "--fleet", t.fleet, NULL), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_int_equal(
        swt_slipway(&r, "status", "--fleet", t.fleet, "--json", "--deadline", "10s", NULL), 0);
    assert_int_equal(r.status, 1);
    j = swt_json_out(&r);
    swt_run_free(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "serving")), 0);
    assert_null(json_object_get(json_array_get(json_object_get(j, "endpoints"), 0), "supervisor"));
    json_decref(j);
    tcase_end(&t);
}

/* tune and ladder on the endpoint up runs: refused before any boot, the up process untouched. */
static void test_runners_refuse(void **state)
{
    (void)state;
    NEED_LLAMA();
    struct tcase t;
    char argv0[4096], pidnum[32];
    tcase_init(&t, "refuse");
    pid_t pid = up_detached(&t, argv0, sizeof(argv0));
    snprintf(pidnum, sizeof(pidnum), "pid %d", (int)pid);

    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "tune", "tiny", "--fleet", t.fleet, "--objective",
                                 "decode_tps@32", "--budget-boots", "2", "--no-ledger", NULL),
                     0);
    assert_int_not_equal(r.status, 0);
    assert_int_not_equal(r.status, 2);
    assert_non_null(strstr(r.err, pidnum));
    assert_non_null(strstr(r.err, "slipway down tiny"));
    assert_non_null(strstr(r.err, "--stop-running"));
    assert_null(strstr(r.err, "in use"));
    assert_null(strstr(r.err, "booting"));
    swt_run_free(&r);
    assert_int_equal(count_files(t.run, "tune-"), 0); /* no boot's log */

    assert_int_equal(swt_slipway(&r, "ladder", "tiny", "--fleet", t.fleet, "--runner", "local",
                                 "--no-ledger", "--max-boots", "1", NULL),
                     0);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, pidnum));
    assert_non_null(strstr(r.err, "slipway down tiny"));
    assert_null(strstr(r.err, "in use"));
    swt_run_free(&r);
    assert_int_equal(count_files(t.run, "ladder-"), 0);

    /* the up process is the one still serving */
    assert_int_equal(swt_slipway(&r, "status", "--fleet", t.fleet, "--json", NULL), 0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    const json_t *ej = json_array_get(json_object_get(j, "endpoints"), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ej, "process"), "pid")),
                     pid);
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(access(t.ledger, F_OK), -1);
    tcase_end(&t);
}

/* --stop-running: the up process stopped first, then the boots run the program up ran; tune
 * --no-ledger writes no ledger; ladder likewise. */
static void test_runners_stop_running(void **state)
{
    (void)state;
    NEED_LLAMA();
    struct tcase t;
    char argv0[4096], pidf[4300];
    tcase_init(&t, "stop");
    snprintf(pidf, sizeof(pidf), "%s/tiny.pid", t.run);
    pid_t pid = up_detached(&t, argv0, sizeof(argv0));

    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "tune", "tiny", "--fleet", t.fleet, "--objective",
                                 "decode_tps@32", "--budget-boots", "1", "--repeats", "2",
                                 "--max-concurrency", "1", "--tokens", "4", "--no-ledger",
                                 "--stop-running", "--json", NULL),
                     0);
    if (r.status)
        fail_msg("tune --stop-running exited %d:\n%s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "stopped_up"), "pid")),
                     pid);
    assert_true(json_is_null(json_object_get(j, "ledger")));
    const json_t *p0 = json_array_get(json_object_get(j, "probes"), 0);
    assert_string_equal(sw_json_str(p0, "outcome", ""), "measured");
    /* the boot ran the program up ran: argv[0] of the pid file, not a $PATH lookup */
    const char *argv = sw_json_str(p0, "argv", "");
    if (strncmp(argv, argv0, strlen(argv0)) || argv[strlen(argv0)] != ' ')
        fail_msg("tune booted '%s', up ran '%s'", argv, argv0);
    json_decref(j);
    assert_int_equal(access(pidf, F_OK), -1);     /* up's record went with its process */
    assert_int_equal(access(t.ledger, F_OK), -1); /* --no-ledger */

    /* the same for ladder */
    pid = up_detached(&t, argv0, sizeof(argv0));
    assert_int_equal(swt_slipway(&r, "ladder", "tiny", "--fleet", t.fleet, "--runner", "local",
                                 "--no-ledger", "--stop-running", "--max-boots", "1", "--json",
                                 NULL),
                     0);
    j = swt_json_out(&r);
    if (json_integer_value(json_object_get(j, "stopped_up_pid")) != pid)
        fail_msg("ladder --stop-running (exit %d) did not stop pid %d:\n%s\n%s", r.status, (int)pid,
                 r.out, r.err);
    swt_run_free(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "boots")), 1);
    const json_t *g0 = json_array_get(json_object_get(j, "rungs"), 0);
    assert_null(strstr(sw_json_str(g0, "detail", ""), "in use"));
    json_decref(j);
    assert_int_equal(access(t.ledger, F_OK), -1);
    tcase_end(&t);
}

/* A port another process holds: said before any boot, naming the holder. */
static void test_port_held_by_another(void **state)
{
    (void)state;
    NEED_LLAMA();
    struct tcase t;
    char holder[64];
    tcase_init(&t, "held");
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* the holder is this process alone */
    assert_true(fd >= 0);
    struct sockaddr_in a = swt_loopback(t.port);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 4), 0);
    snprintf(holder, sizeof(holder), "in use by pid %d", (int)getpid());
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "tune", "tiny", "--fleet", t.fleet, "--objective",
                                 "decode_tps@32", "--budget-boots", "2", "--no-ledger", NULL),
                     0);
    if (!r.status || !strstr(r.err, holder) || !strstr(r.err, "nothing was booted"))
        fail_msg("tune (exit %d) did not name the port's holder (%s):\n%s", r.status, holder,
                 r.err);
    swt_run_free(&r);
    assert_int_equal(count_files(t.run, "tune-"), 0);
    assert_int_equal(swt_slipway(&r, "ladder", "tiny", "--fleet", t.fleet, "--runner", "local",
                                 "--no-ledger", "--max-boots", "1", NULL),
                     0);
    if (!r.status || !strstr(r.err, holder))
        fail_msg("ladder (exit %d) did not name the port's holder (%s):\n%s", r.status, holder,
                 r.err);
    swt_run_free(&r);
    assert_int_equal(count_files(t.run, "ladder-"), 0);
    close(fd);
    tcase_end(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_status_knows_up, case_teardown),
        cmocka_unit_test_teardown(test_runners_refuse, case_teardown),
        cmocka_unit_test_teardown(test_runners_stop_running, case_teardown),
        cmocka_unit_test_teardown(test_port_held_by_another, case_teardown),
    };
    return cmocka_run_group_tests_name("local_loop", tests, setup, teardown);
}
