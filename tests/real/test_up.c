/*
 * `slipway up` / `slipway down` against the real pinned llama-server: nothing is ever left
 * running, and failing boots end with the right failure class.
 *
 *   - killed mid-boot: SIGKILL to slipway while llama-server loads (foreground and --detach);
 *     the model is a FIFO nobody writes, so llama-server is held in its load for as long as the
 *     test needs (a real llama-server, really loading, answering /health 503);
 *   - a failed boot (a real allocation failure under RLIMIT_AS), a crash while proving liveness;
 *   - Ctrl-C (SIGINT) in the foreground;
 *   - down on a live server, on a dead pid, on a stale pid file, on a pid reused by another
 *     process (which must be left alone);
 *   - failing boots, each classified: port in use, HTML page, git-lfs pointer, truncated,
 *     missing file, unknown flag, unsupported architecture, KV and compute allocation failures,
 *     with slipway's preflight and without it (the engine's own log).
 * After each case /proc is scanned for any non-zombie process whose argv carries the case's
 * unique marker (llama-server gets it as --alias; slipway and its watchdog carry it in their
 * argv). Zombies are not survivors: an orphan's zombie may never be reaped by this container's
 * PID 1. Waits are bounded; nothing here asserts a duration.
 * Skips when the pinned llama.cpp is not built.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/deploy.h>

#include "swllama.h"
#include "swtest.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *g_dir; /* per-run temporary directory */
static char g_models[4096];
static int g_case;
static int g_retries;

static int setup(void **state)
{
    if (!swl_llama_dir())
        return 0;
    g_dir = swt_tmpdir();
    snprintf(g_models, sizeof(g_models), "%s", swt_join(g_dir, "models"));
    mkdir(g_models, 0755);
    static const char *const archs[] = {"llama", "gemma2", "qwen3next", "mamba2"};
    struct swt_run r;
    for (size_t i = 0; i < SW_ARRAY_LEN(archs); i++) {
        const char *argv[] = {swl_bin("test-llama-archs"), "-a", archs[i], "-o", g_models, NULL};
        assert_int_equal(swt_run(argv, NULL, 120, &r), 0);
        if (r.status != 0)
            fail_msg("test-llama-archs -a %s failed: %s", archs[i], r.err);
        swt_run_free(&r);
    }
    /* a chat-capable model for liveness: the random llama with the phi-3 vocabulary grafted */
    const char *vocab = swl_model_file("ggml-vocab-phi-3.gguf");
    char in[4200], out[4200];
    snprintf(in, sizeof(in), "%s/llama-dense.gguf", g_models);
    snprintf(out, sizeof(out), "%s/chat.gguf", g_models);
    assert_int_equal(swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab", vocab, "--out", out,
                                 "--ctx", "8192", NULL),
                     0);
    if (r.status != 0)
        fail_msg("gguf synth failed: %s", r.err);
    swt_run_free(&r);
    return 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(g_dir);
    return 0;
}

#define NEED_LLAMA()                                                                               \
    do {                                                                                           \
        swt_need(g_dir != NULL, "%s", swl_missing());                                              \
    } while (0)

struct tcase {
    char dir[4096];
    char mark[64];
    char log[4352], pid[4352], out[4352], err[4352];
    int port;
};

static void tcase_init(struct tcase *t, const char *name)
{
    snprintf(t->mark, sizeof(t->mark), "swup-%d-%d-%s", (int)getpid(), ++g_case, name);
    snprintf(t->dir, sizeof(t->dir), "%s", swt_join(g_dir, t->mark));
    mkdir(t->dir, 0700);
    snprintf(t->log, sizeof(t->log), "%s/engine.log", t->dir);
    snprintf(t->pid, sizeof(t->pid), "%s/engine.pid", t->dir);
    snprintf(t->out, sizeof(t->out), "%s/stdout", t->dir);
    snprintf(t->err, sizeof(t->err), "%s/stderr", t->dir);
    t->port = swt_free_port();
    assert_true(t->port > 0);
}

/* Wait (bounded) until nothing carrying the mark is left; return how many are. */
static int settle(const char *mark)
{
    for (int i = 0; i < 300; i++) {
        if (swt_survivors(mark, false, NULL) == 0)
            return 0;
        sw_sleep_ms(50);
    }
    return swt_survivors(mark, true, NULL);
}

/* slipway ARGS... in the background, stdout/stderr to files. */
static pid_t start_slipway(const struct tcase *t, const char *const *args)
{
    const char *argv[64];
    size_t n = 0;
    argv[n++] = swt_bin();
    for (size_t i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(t->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(t->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0)
            _exit(126);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        setenv("SLIPWAY_NO_PROGRESS", "1", 1);
        /* if this test dies, slipway dies too (and its watchdog then stops the engine) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Wait for needle in path while pid runs; false when pid exited first (it is then reaped). */
static bool wait_file_while(const char *path, const char *needle, pid_t pid, unsigned timeout_s)
{
    for (unsigned i = 0; i < timeout_s * 20; i++) {
        if (swt_file_has(path, needle))
            return true;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return swt_file_has(path, needle);
        sw_sleep_ms(50);
    }
    return false;
}

static void show(const struct tcase *t)
{
    char *a = swl_tail(t->err, 2000), *b = swl_tail(t->log, 1500);
    fprintf(stderr, "--- slipway stderr:\n%s\n--- engine log tail:\n%s\n", a ? a : "", b ? b : "");
    free(a);
    free(b);
}

static const char *model(const char *name)
{
    return swt_join(g_models, name);
}

/* ---------------------------------------------------------------------------------------------
 * Killed mid-boot.
 */
static void killed_mid_boot(bool detach, int sig)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, sig == SIGKILL ? (detach ? "kill9-detach" : "kill9-fg") : "term-fg");
    char fifo[4400], port[16];
    snprintf(fifo, sizeof(fifo), "%s/model.gguf", t.dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(port, sizeof(port), "%d", t.port);
    const char *args[] = {"up",
                          detach ? "--detach" : "--json",
                          "--no-preflight", /* the preflight would refuse a FIFO */
                          "--log",
                          t.log,
                          "--pid-file",
                          t.pid,
                          "--",
                          swl_bin("llama-server"),
                          "-m",
                          fifo,
                          "--port",
                          port,
                          "--alias",
                          t.mark,
                          NULL};
    pid_t s = start_slipway(&t, args);
    /* llama-server is up, loading (blocked opening the FIFO), /health says 503 */
    if (!wait_file_while(t.log, "loading model", s, 60) && swt_file_has(t.err, "port_in_use") &&
        g_retries++ < 3) {
        killed_mid_boot(detach, sig); /* someone else took the port meanwhile */
        return;
    }
    if (!swt_file_has(t.log, "loading model")) {
        show(&t);
        kill(s, SIGKILL); /* a failing test must not leave slipway behind either */
        waitpid(s, NULL, 0);
        fail_msg("llama-server never started loading");
    }
    int st = 0;
    char *body = NULL;
    for (int i = 0; i < 100 && st != 503; i++) {
        free(body);
        body = NULL;
        swl_http(t.port, "GET", "/health", NULL, 5, &st, &body);
        if (st != 503)
            sw_sleep_ms(50);
    }
    free(body);
    assert_int_equal(st, 503);
    assert_true(swt_survivors(t.mark, false, NULL) >= 3); /* slipway, its watchdog, llama-server */
    kill(s, sig);
    /* SIGKILL: slipway cannot act, PDEATHSIG and the watchdog must; SIGTERM: slipway stops the
     * boot itself (a failed boot: exit 1) */
    assert_int_equal(swt_wait_exit(s, 30), sig == SIGKILL ? 128 + SIGKILL : 1);
    assert_int_equal(settle(t.mark), 0);
    assert_int_equal(access(t.pid, F_OK), -1); /* never got as far as a pid file */
}

static void test_killed_mid_boot_foreground(void **state)
{
    killed_mid_boot(false, SIGKILL);
}

static void test_killed_mid_boot_detach(void **state)
{
    killed_mid_boot(true, SIGKILL);
}

static void test_sigterm_mid_boot(void **state)
{
    killed_mid_boot(false, SIGTERM);
}

/* ---------------------------------------------------------------------------------------------
 * Ctrl-C in the foreground, and down.
 */
static pid_t pid_from_file(const char *path)
{
    struct sw_pidfile p;
    struct sw_err e;
    if (sw_pidfile_read(path, &p, &e))
        fail_msg("%s: %s", path, e.msg);
    return p.pid;
}

static void test_ctrl_c_foreground(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "sigint");
    char port[16];
    snprintf(port, sizeof(port), "%d", t.port);
    const char *args[] = {"up",         "--no-liveness",
                          "--log",      t.log,
                          "--pid-file", t.pid,
                          "--",         swl_bin("llama-server"),
                          "-m",         model("llama-dense.gguf"),
                          "-c",         "1024",
                          "-np",        "1",
                          "--port",     port,
                          "--alias",    t.mark,
                          NULL};
    pid_t s = start_slipway(&t, args);
    if (!wait_file_while(t.out, "in the foreground", s, 120) &&
        swt_file_has(t.err, "port_in_use") && g_retries++ < 3) {
        test_ctrl_c_foreground(state); /* someone else took the port meanwhile */
        return;
    }
    if (!swt_file_has(t.out, "in the foreground")) {
        show(&t);
        kill(s, SIGINT);
        swt_wait_exit(s, 30);
        fail_msg("never served");
    }
    pid_t srv = pid_from_file(t.pid);
    int st = 0;
    char *body = NULL;
    assert_int_equal(swl_http(t.port, "GET", "/health", NULL, 10, &st, &body), 0);
    free(body);
    assert_int_equal(st, 200);
    kill(s, SIGINT);
    assert_int_equal(swt_wait_exit(s, 60), 0);
    assert_int_equal(settle(t.mark), 0);
    struct sw_proc_id id;
    assert_true(sw_proc_identify(srv, &id, NULL) != 0 || id.state == 'Z');
    assert_int_equal(access(t.pid, F_OK), -1);
    assert_true(swt_file_has(t.err, "Interrupt: stopped"));
}

static pid_t up_detached(struct tcase *t, const char *name)
{
again:
    tcase_init(t, name);
    char port[16];
    snprintf(port, sizeof(port), "%d", t->port);
    const char *args[] = {"up",
                          "--detach",
                          "--no-liveness",
                          "--json",
                          "--log",
                          t->log,
                          "--pid-file",
                          t->pid,
                          "--",
                          swl_bin("llama-server"),
                          "-m",
                          model("llama-dense.gguf"),
                          "-c",
                          "1024",
                          "-np",
                          "1",
                          "--port",
                          port,
                          "--alias",
                          t->mark,
                          NULL};
    pid_t s = start_slipway(t, args);
    int rc = swt_wait_exit(s, 120);
    if (rc != 0 && swt_file_has(t->err, "port_in_use") && g_retries++ < 3)
        goto again; /* someone else took the port meanwhile */
    if (rc != 0) {
        show(t);
        fail_msg("up --detach exited %d", rc);
    }
    /* slipway and its watchdog are gone; llama-server alone carries the mark */
    assert_int_equal(swt_survivors(t->mark, false, NULL), 1);
    return pid_from_file(t->pid);
}

static int down(const char *pid_file, struct swt_run *r)
{
    assert_int_equal(swt_slipway(r, "down", "--json", "--grace", "5", "--pid-file", pid_file, NULL),
                     0);
    return r->status;
}

static void test_down_live(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    pid_t srv = up_detached(&t, "down-live");
    struct swt_run r;
    assert_int_equal(down(t.pid, &r), 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "alive");
    assert_true(json_is_true(json_object_get(j, "signalled")));
    assert_int_equal(json_integer_value(json_object_get(j, "pid")), srv);
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(settle(t.mark), 0);
    assert_int_equal(access(t.pid, F_OK), -1);
}

static void test_down_dead_pid(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    pid_t srv = up_detached(&t, "down-dead");
    kill(-srv, SIGKILL);
    assert_int_equal(settle(t.mark), 0);
    struct swt_run r;
    assert_int_equal(down(t.pid, &r), 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "gone");
    assert_false(json_is_true(json_object_get(j, "signalled")));
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(access(t.pid, F_OK), -1);
    /* and down again: no pid file, nothing to do */
    assert_int_equal(down(t.pid, &r), 0);
    swt_run_free(&r);
}

static void test_down_stale_pid_file(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "down-stale");
    /* a record for a process that exited long ago: a reaped child's pid */
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    struct sw_pidfile p;
    memset(&p, 0, sizeof(p));
    p.pid = p.pgid = c;
    p.start_ticks = 12345;
    sw_proc_boot_id(p.boot_id, sizeof(p.boot_id));
    snprintf(p.exe, sizeof(p.exe), "%s", swl_bin("llama-server"));
    assert_int_equal(sw_pidfile_write(t.pid, &p, NULL), 0);
    struct swt_run r;
    assert_int_equal(down(t.pid, &r), 0);
    json_t *j = swt_json_out(&r);
    const char *v = json_string_value(json_object_get(j, "verdict"));
    /* gone, or (if the pid was handed out again meanwhile) reused: either way nothing signalled */
    assert_true(!strcmp(v, "gone") || !strcmp(v, "reused"));
    assert_false(json_is_true(json_object_get(j, "signalled")));
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(access(t.pid, F_OK), -1);
}

static void test_down_reused_pid(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    pid_t srv = up_detached(&t, "down-reused");
    /* Make the record describe an earlier process with the pid of an unrelated, running one:
     * exactly what a recycled pid looks like. */
    pid_t other = fork();
    if (other == 0) {
        execl("/bin/sleep", "sleep", "300", (char *)NULL);
        _exit(127);
    }
    struct sw_proc_id id;
    for (int i = 0; i < 200 && (sw_proc_identify(other, &id, NULL) || id.state == 0); i++)
        sw_sleep_ms(10);
    struct sw_pidfile p;
    assert_int_equal(sw_pidfile_read(t.pid, &p, NULL), 0);
    p.pid = p.pgid = other;
    p.start_ticks = id.start_ticks - 1;
    assert_int_equal(sw_pidfile_write(t.pid, &p, NULL), 0);
    struct swt_run r;
    assert_int_equal(down(t.pid, &r), 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "reused");
    assert_false(json_is_true(json_object_get(j, "signalled")));
    json_decref(j);
    swt_run_free(&r);
    /* the unrelated process was left alone */
    assert_int_equal(waitpid(other, NULL, WNOHANG), 0);
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    /* clean up the real server ourselves (its record was overwritten on purpose) */
    kill(-srv, SIGKILL);
    assert_int_equal(settle(t.mark), 0);
}

/* ---------------------------------------------------------------------------------------------
 * A chat-capable model: the whole path, liveness included.
 */
static json_t *wait_json_out(const struct tcase *t, pid_t s, unsigned timeout_s)
{
    for (unsigned i = 0; i < timeout_s * 20; i++) {
        char *text = NULL;
        size_t n;
        if (sw_read_file(t->out, 1 << 24, &text, &n, NULL) == 0 && n > 2 && text[n - 1] == '\n' &&
            text[n - 2] == '}') {
            json_t *j = sw_json_parse(text, n, t->out, NULL);
            sw_free(text);
            if (j)
                return j;
        } else {
            sw_free(text);
        }
        int st;
        if (waitpid(s, &st, WNOHANG) == s) {
            show(t);
            fail_msg("slipway exited (%d) before printing its JSON", st);
        }
        sw_sleep_ms(50);
    }
    show(t);
    kill(s, SIGINT);
    swt_wait_exit(s, 30);
    fail_msg("no JSON from slipway up");
    return NULL;
}

static void test_live_foreground(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "live");
    char port[16];
    snprintf(port, sizeof(port), "%d", t.port);
    const char *args[] = {"up",         "--json",
                          "--log",      t.log,
                          "--pid-file", t.pid,
                          "--",         swl_bin("llama-server"),
                          "-m",         model("chat.gguf"),
                          "-c",         "2048",
                          "-np",        "2",
                          "--port",     port,
                          "--alias",    t.mark,
                          NULL};
    pid_t s = start_slipway(&t, args);
    json_t *j = wait_json_out(&t, s, 180);
    if (json_is_object(json_object_get(j, "failure"))) {
        show(&t);
        kill(s, SIGINT);
        swt_wait_exit(s, 30);
        fail_msg("boot failed");
    }
    /* {url, pid, report, diff, ...} */
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", t.port);
    assert_string_equal(json_string_value(json_object_get(j, "url")), url);
    pid_t srv = (pid_t)json_integer_value(json_object_get(j, "pid"));
    assert_int_equal(srv, pid_from_file(t.pid));
    const char *live = json_string_value(json_object_get(j, "liveness"));
    assert_non_null(live);
    assert_non_null(strstr(live, "HTTP 200, 1 token(s)"));
    const json_t *rep = json_object_get(j, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx")), 2048);
    assert_int_equal(json_integer_value(json_object_get(rep, "n_seq_max")), 2);
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx_seq")), 1024);
    assert_int_equal(json_array_size(json_object_get(rep, "kv_caches")), 1);
    /* the law predicted what the engine printed */
    assert_true(json_is_object(json_object_get(j, "predicted")));
    if (!json_is_true(json_object_get(json_object_get(j, "diff"), "match"))) {
        char *d = json_dumps(json_object_get(j, "diff"), JSON_INDENT(1));
        fail_msg("predicted != printed: %s", d);
    }
    json_decref(j);
    /* it serves a client too */
    struct swl_server sv = {.pid = srv, .port = t.port};
    snprintf(sv.url, sizeof(sv.url), "%s", url);
    char *content = NULL;
    assert_int_equal(swl_chat(&sv, "Say hi.", 4, 60, &content), 0);
    free(content);
    kill(s, SIGINT);
    assert_int_equal(swt_wait_exit(s, 60), 0);
    assert_int_equal(settle(t.mark), 0);
    assert_int_equal(access(t.pid, F_OK), -1);
}

/* tiny's fields in every fleet here: llama-server (%s), its port (%d), its alias (%s) and the
 * folder (%s) that holds chat.gguf. */
#define TINY_CHAT                                                                                  \
    "    binary: %s\n"                                                                             \
    "    listen: 127.0.0.1:%d\n"                                                                   \
    "    alias: %s\n"                                                                              \
    "    payload:\n"                                                                               \
    "      path: %s\n"                                                                             \
    "      gguf: chat.gguf\n"

/* The fleet form: a local llama.cpp endpoint, detached, then down by the fleet file. */
static void test_fleet_up_down(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "fleet");
    char yaml[8192], fleet[4400], run[4400];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", t.dir);
    snprintf(run, sizeof(run), "%s/run", t.dir);
    snprintf(yaml, sizeof(yaml),
             SWL_FLEET_LOCAL_TINY TINY_CHAT "    shape:\n"
                                            "      ctx_size: 4096\n"
                                            "      seqs: 2\n"
                                            "      kv_unified: true\n"
                                            "      ubatch_size: 256\n",
             swl_bin("llama-server"), t.port, t.mark, g_models);
    swt_write_str(fleet, yaml);
    setenv("SLIPWAY_RUN_DIR", run, 1);
    char ledger[4500];
    snprintf(ledger, sizeof(ledger), "%s/ledger.sqlite", t.dir);
    const char *args[] = {"up", "--detach", "--json", "--ledger", ledger, "--fleet", fleet, NULL};
    pid_t s = start_slipway(&t, args);
    int rc = swt_wait_exit(s, 180);
    if (rc != 0) {
        show(&t);
        fail_msg("up fleet.yaml exited %d", rc);
    }
    char *out = NULL;
    size_t n;
    assert_int_equal(sw_read_file(t.out, 1 << 24, &out, &n, NULL), 0);
    json_t *j = sw_json_parse(out, n, t.out, NULL);
    sw_free(out);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "endpoint")), "tiny");
    const json_t *rep = json_object_get(j, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx")), 4096);
    assert_true(json_is_true(json_object_get(rep, "kv_unified")));
    json_decref(j);
    char pidf[4500];
    snprintf(pidf, sizeof(pidf), "%s/tiny.pid", run);
    assert_int_equal(access(pidf, F_OK), 0);
    assert_int_equal(swt_survivors(t.mark, false, NULL), 1);
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "down", "--fleet", fleet, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "stopped"));
    swt_run_free(&r);
    unsetenv("SLIPWAY_RUN_DIR");
    assert_int_equal(settle(t.mark), 0);
    assert_int_equal(access(pidf, F_OK), -1);
    /* the boot is in the ledger */
    assert_int_equal(swt_slipway(&r, "ledger", "list", "--ledger", ledger, "--json", NULL), 0);
    j = swt_json_out(&r);
    const json_t *b = json_array_get(json_object_get(j, "boots"), 0);
    assert_string_equal(json_string_value(json_object_get(b, "endpoint")), "tiny");
    assert_string_equal(json_string_value(json_object_get(b, "outcome")), "ok");
    assert_string_equal(json_string_value(json_object_get(b, "source")), "slipway up");
    json_decref(j);
    swt_run_free(&r);
}

/* A shape that does not fit the fleet's declared device memory is refused before anything
 * starts: no engine process, no pid file, no log; the message names the device and the plan's
 * terms. The same endpoint with room passes the preflight (checked with --dry-run). */
static void test_fleet_refuses_unfit(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "unfit");
    char yaml[8192], fleet[4400], run[4400];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", t.dir);
    snprintf(run, sizeof(run), "%s/run", t.dir);
    for (int pass = 0; pass < 2; pass++) {
        snprintf(yaml, sizeof(yaml),
                 "version: 1\n"
                 "hosts:\n"
                 "  localhost:\n"
                 "    transport: local\n"
                 "    devices:\n"
                 "      cpu: {kind: cpu, vendor: cpu, memory_total: %s}\n"
                 "endpoints:\n"
                 "  tiny:\n"
                 "    host: localhost\n"
                 "    engine: llama.cpp\n" TINY_CHAT "    shape:\n"
                 "      ctx_size: 65536\n"
                 "      seqs: 2\n",
                 pass == 0 ? "1MiB" : "64GiB", swl_bin("llama-server"), t.port, t.mark, g_models);
        swt_write_str(fleet, yaml);
        setenv("SLIPWAY_RUN_DIR", run, 1);
        struct swt_run r;
        if (pass == 0) {
            assert_int_equal(swt_slipway(&r, "up", "--json", "--fleet", fleet, NULL), 0);
            assert_int_equal(r.status, 1);
            json_t *j = swt_json_out(&r);
            const char *m =
                json_string_value(json_object_get(json_object_get(j, "error"), "message"));
            assert_non_null(m);
            assert_non_null(strstr(m, "the plan does not fit CPU"));
            assert_non_null(strstr(m, "of 1.00 MiB declared"));
            assert_non_null(strstr(m, "nothing was started"));
            json_decref(j);
            char pidf[4500], logf[4500];
            snprintf(pidf, sizeof(pidf), "%s/tiny.pid", run);
            snprintf(logf, sizeof(logf), "%s/tiny.log", run);
            assert_int_equal(access(pidf, F_OK), -1);
            assert_int_equal(access(logf, F_OK), -1);
            assert_int_equal(swt_survivors(t.mark, false, NULL), 0);
        } else {
            assert_int_equal(swt_slipway(&r, "up", "--dry-run", "--fleet", fleet, NULL), 0);
            assert_int_equal(r.status, 0);
            assert_null(strstr(r.err, "does not fit"));
        }
        swt_run_free(&r);
        unsetenv("SLIPWAY_RUN_DIR");
    }
}

/*
 * Render, plan, boot: for fleet endpoints of several memory layouts (dense, iSWA, iSWA full,
 * hybrid, recurrent, quantized caches), the adapter's argv planned in-process by `up` equals
 * `slipway plan` on that same argv, and the real boot prints exactly what was predicted (every
 * field within its printed precision; the compute buffer is an estimate and reported only).
 */
struct shape_case {
    const char *name, *model, *shape;
    bool live;
};

static void render_plan_boot(const struct shape_case *sc)
{
    struct tcase t;
    tcase_init(&t, sc->name);
    char yaml[8192], fleet[4400], run[4400];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", t.dir);
    snprintf(run, sizeof(run), "%s/run", t.dir);
    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "hosts:\n"
             "  localhost:\n"
             "    transport: local\n"
             "endpoints:\n"
             "  %s:\n"
             "    host: localhost\n"
             "    engine: llama.cpp\n"
             "    binary: %s\n"
             "    listen: 127.0.0.1:%d\n"
             "    alias: %s\n"
             "    payload:\n"
             "      path: %s\n"
             "      gguf: %s\n"
             "    shape:\n%s",
             sc->name, swl_bin("llama-server"), t.port, t.mark, g_models, sc->model, sc->shape);
    swt_write_str(fleet, yaml);
    setenv("SLIPWAY_RUN_DIR", run, 1);

    /* 1. what up would run, and its prediction */
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "up", "--dry-run", "--json", "--fleet", fleet, NULL), 0);
    if (r.status)
        fail_msg("%s: up --dry-run: %s", sc->name, r.err);
    json_t *dry = swt_json_out(&r);
    swt_run_free(&r);
    const json_t *predicted = json_object_get(dry, "predicted");
    if (!json_is_object(predicted))
        fail_msg("%s: no prediction: %s", sc->name,
                 json_string_value(json_object_get(dry, "predicted_note")));

    /* 2. slipway plan on the rendered argv says the same */
    const char *pargv[64];
    size_t n = 0;
    pargv[n++] = swt_bin();
    pargv[n++] = "plan";
    pargv[n++] = "--engine";
    pargv[n++] = "llama.cpp";
    pargv[n++] = "--json";
    pargv[n++] = "--";
    size_t i;
    const json_t *a;
    json_array_foreach(json_object_get(dry, "argv"), i, a)
    {
        assert_true(n < 63);
        pargv[n++] = json_string_value(a);
    }
    pargv[n] = NULL;
    assert_int_equal(swt_run(pargv, NULL, 60, &r), 0);
    json_t *plan = swt_json_out(&r);
    swt_run_free(&r);
    if (!json_equal((json_t *)predicted, json_object_get(plan, "report"))) {
        char *x = json_dumps(predicted, 0), *y = json_dumps(json_object_get(plan, "report"), 0);
        fail_msg("%s: up's prediction %s != plan's %s", sc->name, x, y);
    }
    json_decref(plan);

    /* 3. the real boot prints it */
    const char *args[] = {"up",      "--detach", "--json", sc->live ? "--json" : "--no-liveness",
                          "--fleet", fleet,      NULL};
    pid_t s = start_slipway(&t, args);
    int rc = swt_wait_exit(s, 180);
    if (rc != 0) {
        show(&t);
        fail_msg("%s: up exited %d", sc->name, rc);
    }
    char *out = NULL;
    size_t len;
    assert_int_equal(sw_read_file(t.out, 1 << 24, &out, &len, NULL), 0);
    json_t *j = sw_json_parse(out, len, t.out, NULL);
    sw_free(out);
    assert_non_null(j);
    const json_t *diff = json_object_get(j, "diff");
    bool match = json_is_true(json_object_get(diff, "match"));
    json_t *f;
    json_array_foreach(json_object_get(diff, "fields"), i, f)
    {
        const char *v = json_string_value(json_object_get(f, "verdict"));
        if (!strcmp(v, "mismatch") || !strcmp(v, "estimate")) {
            char *x = json_dumps(json_object_get(f, "predicted"), JSON_ENCODE_ANY);
            char *y = json_dumps(json_object_get(f, "printed"), JSON_ENCODE_ANY);
            fprintf(stderr, "  %s: %s predicted %s printed %s (%s)\n", sc->name,
                    json_string_value(json_object_get(f, "field")), x, y, v);
            free(x);
            free(y);
        }
    }
    json_decref(j);
    json_decref(dry);
    assert_int_equal(swt_slipway(&r, "down", "--fleet", fleet, NULL), 0);
    swt_run_free(&r);
    unsetenv("SLIPWAY_RUN_DIR");
    assert_int_equal(settle(t.mark), 0);
    if (!match)
        fail_msg("%s: the boot did not print what was predicted", sc->name);
}

static void test_render_plan_boot(void **state)
{
    NEED_LLAMA();
    static const struct shape_case cases[] = {
        {"dense-kvu", "chat.gguf",
         "      ctx_size: 4096\n      seqs: 2\n      kv_unified: true\n      ubatch_size: 256\n",
         true},
        {"dense-q8", "llama-dense.gguf",
         "      ctx_size: 16384\n      seqs: 3\n      cache_type_k: q8_0\n"
         "      cache_type_v: q4_0\n      flash_attn: \"on\"\n",
         false},
        {"iswa", "gemma2-dense.gguf", "      ctx_size: 8192\n      seqs: 2\n", false},
        {"iswa-full", "gemma2-dense.gguf",
         "      ctx_size: 8192\n      seqs: 2\n      swa_full: true\n      kv_unified: true\n",
         false},
        {"hybrid", "qwen3next-moe.gguf", "      ctx_size: 8192\n      seqs: 3\n", false},
        {"recurrent", "mamba2-dense.gguf", "      ctx_size: 2048\n      seqs: 2\n", false},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++)
        render_plan_boot(&cases[i]);
}

/* A failed boot is recorded with its class and phase (the gates learn from those). */
static void test_record_failed_boot(void **state)
{
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "record");
    char port[16], ledger[4500];
    snprintf(port, sizeof(port), "%d", t.port);
    snprintf(ledger, sizeof(ledger), "%s/ledger.sqlite", t.dir);
    const char *args[] = {"up",
                          "--ledger",
                          ledger,
                          "--limit-as",
                          "3GiB",
                          "--log",
                          t.log,
                          "--pid-file",
                          t.pid,
                          "--",
                          swl_bin("llama-server"),
                          "-m",
                          model("llama-dense.gguf"),
                          "-c",
                          "2097152",
                          "-np",
                          "1",
                          "--port",
                          port,
                          "--alias",
                          t.mark,
                          NULL};
    pid_t s = start_slipway(&t, args);
    assert_int_equal(swt_wait_exit(s, 120), 1);
    assert_int_equal(settle(t.mark), 0);
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "ledger", "list", "--ledger", ledger, "--json", NULL), 0);
    json_t *j = swt_json_out(&r);
    const json_t *b = json_array_get(json_object_get(j, "boots"), 0);
    if (!b) {
        show(&t);
        fail_msg("nothing recorded");
    }
    assert_string_equal(json_string_value(json_object_get(b, "outcome")), "failed");
    assert_string_equal(json_string_value(json_object_get(b, "failure_class")), "oom");
    assert_string_equal(json_string_value(json_object_get(b, "failure_phase")), "kv_alloc");
    json_decref(j);
    swt_run_free(&r);
}

/* ---------------------------------------------------------------------------------------------
 * Failing boots.
 */
struct failcase {
    const char *name;
    const char *payload; /* written into the case dir as model.gguf; NULL: use `model` */
    const char *model;   /* a path under g_models; "@missing" for a file that is not there */
    const char *extra[16];
    bool preflight;
    const char *limit_as;
    const char *cls, *phase, *kind;
    bool hold_port;
};

static void write_zlama(const char *dst)
{
    char *t = NULL;
    size_t n;
    assert_int_equal(sw_read_file(model("llama-dense.gguf"), 64u << 20, &t, &n, NULL), 0);
    /* general.architecture's value sits right after its key (ggml's writer puts it first) */
    char *k = memmem(t, SW_MIN(n, (size_t)4096), "general.architecture", 20);
    assert_non_null(k);
    assert_memory_equal(k + 20 + 4 + 8, "llama", 5);
    k[20 + 4 + 8] = 'z';
    swt_write(dst, t, n);
    sw_free(t);
}

/* Another program on this machine may take the free port between swt_free_port() and the boot
 * (other test suites run here too): a port_in_use that the case did not ask for is retried on a
 * new port, at most twice. Returns true when the case ran to its verdict. */
static bool run_fail_once(const struct failcase *fc, bool last);

static void run_fail(const struct failcase *fc)
{
    for (int attempt = 0; attempt < 3; attempt++)
        if (run_fail_once(fc, attempt == 2))
            return;
}

static bool run_fail_once(const struct failcase *fc, bool last)
{
    struct tcase t;
    tcase_init(&t, fc->name);
    char path[4400], port[16];
    snprintf(port, sizeof(port), "%d", t.port);
    snprintf(path, sizeof(path), "%s/model.gguf", t.dir);
    if (fc->payload && !strcmp(fc->payload, "@zlama")) {
        write_zlama(path);
    } else if (fc->payload && !strcmp(fc->payload, "@truncated")) {
        char *d = NULL;
        size_t n;
        assert_int_equal(sw_read_file(model("llama-dense.gguf"), 64u << 20, &d, &n, NULL), 0);
        swt_write(path, d, 1000000);
        sw_free(d);
    } else if (fc->payload) {
        swt_write_str(path, fc->payload);
    } else if (!strcmp(fc->model, "@missing")) {
        snprintf(path, sizeof(path), "%s/not-there.gguf", t.dir);
    } else {
        snprintf(path, sizeof(path), "%s", model(fc->model));
    }
    int hold = -1;
    if (fc->hold_port) {
        hold = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)t.port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(hold, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(hold, 1), 0);
    }
    const char *args[48];
    size_t n = 0;
    args[n++] = "up";
    args[n++] = "--json";
    args[n++] = "--log";
    args[n++] = t.log;
    args[n++] = "--pid-file";
    args[n++] = t.pid;
    if (!fc->preflight)
        args[n++] = "--no-preflight";
    if (fc->limit_as) {
        args[n++] = "--limit-as";
        args[n++] = fc->limit_as;
    }
    args[n++] = "--";
    args[n++] = swl_bin("llama-server");
    args[n++] = "-m";
    args[n++] = path;
    args[n++] = "--port";
    args[n++] = port;
    args[n++] = "--alias";
    args[n++] = t.mark;
    for (size_t i = 0; fc->extra[i]; i++)
        args[n++] = fc->extra[i];
    args[n] = NULL;
    pid_t s = start_slipway(&t, args);
    int rc = swt_wait_exit(s, 180);
    if (hold >= 0)
        close(hold);
    if (rc != 1) {
        show(&t);
        fail_msg("%s: slipway up exited %d, want 1", fc->name, rc);
    }
    char *out = NULL;
    size_t len;
    assert_int_equal(sw_read_file(t.out, 1 << 24, &out, &len, NULL), 0);
    json_t *j = sw_json_parse(out, len, t.out, NULL);
    sw_free(out);
    assert_non_null(j);
    json_t *f = json_object_get(j, "failure");
    const char *cls = json_string_value(json_object_get(f, "class"));
    const char *ph = json_string_value(json_object_get(f, "phase"));
    const char *kind = json_string_value(json_object_get(f, "payload_kind"));
    if (!last && cls && !strcmp(cls, "port_in_use") && strcmp(fc->cls, "port_in_use")) {
        fprintf(stderr, "%s: port %d was taken by someone else; retrying\n", fc->name, t.port);
        json_decref(j);
        assert_int_equal(settle(t.mark), 0);
        return false;
    }
    if (!cls || strcmp(cls, fc->cls) || (fc->phase && (!ph || strcmp(ph, fc->phase))) ||
        (fc->kind && (!kind || strcmp(kind, fc->kind)))) {
        show(&t);
        fail_msg("%s: got class %s phase %s kind %s (%s); want %s %s %s", fc->name, cls ? cls : "-",
                 ph ? ph : "-", kind ? kind : "-", json_string_value(json_object_get(f, "message")),
                 fc->cls, fc->phase ? fc->phase : "*", fc->kind ? fc->kind : "-");
    }
    json_decref(j);
    if (settle(t.mark) != 0)
        fail_msg("%s: processes survived a failed boot", fc->name);
    assert_int_equal(access(t.pid, F_OK), -1);
    return true;
}

static const char html[] = "<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>"
                           "<body>Access denied</body></html>\n";
static const char lfs[] = "version https://git-lfs.github.com/spec/v1\noid sha256:"
                          "4d5c1e4b0a3f5e1a6c8b2f7d9e0a1b2c3d4e5f60718293a4b5c6d7e8f9012345\n"
                          "size 4763872\n";

static void test_failing_boots(void **state)
{
    NEED_LLAMA();
    const struct failcase cases[] = {
        /* slipway's own preflight: refused before a boot is spent */
        {"pre-port",
         NULL,
         "llama-dense.gguf",
         {NULL},
         true,
         NULL,
         "port_in_use",
         "bind",
         NULL,
         true},
        {"pre-html", html, NULL, {NULL}, true, NULL, "bad_payload", "load", "html"},
        {"pre-lfs", lfs, NULL, {NULL}, true, NULL, "bad_payload", "load", "lfs_pointer"},
        {"pre-missing", NULL, "@missing", {NULL}, true, NULL, "missing_payload", "load", NULL},
        {"pre-trunc", "@truncated", NULL, {NULL}, true, NULL, "bad_payload", "load", "truncated"},
        /* the engine's own failure, read from its log */
        {"eng-port",
         NULL,
         "llama-dense.gguf",
         {NULL},
         false,
         NULL,
         "port_in_use",
         "bind",
         NULL,
         true},
        {"eng-html", html, NULL, {NULL}, false, NULL, "bad_payload", "load", "html"},
        {"eng-lfs", lfs, NULL, {NULL}, false, NULL, "bad_payload", "load", "lfs_pointer"},
        {"eng-trunc", "@truncated", NULL, {NULL}, false, NULL, "bad_payload", "load", "truncated"},
        {"eng-missing", NULL, "@missing", {NULL}, false, NULL, "missing_payload", "load", NULL},
        {"eng-flag",
         NULL,
         "llama-dense.gguf",
         {"--no-such-flag", NULL},
         true,
         NULL,
         "bad_flag",
         "args",
         NULL},
        {"eng-arch", "@zlama", NULL, {NULL}, true, NULL, "unsupported_arch", "load", NULL},
        /* real allocation failures: a 4 GiB KV cache, a 48 GiB compute graph, under a 3 GiB
         * address-space cap */
        {"eng-oom-kv",
         NULL,
         "llama-dense.gguf",
         {"-c", "2097152", "-np", "1", NULL},
         true,
         "3GiB",
         "oom",
         "kv_alloc",
         NULL},
        {"eng-oom-compute",
         NULL,
         "llama-dense.gguf",
         {"-c", "65536", "-b", "65536", "-ub", "65536", "-fa", "off", "-np", "1", NULL},
         true,
         "3GiB",
         "oom",
         "compute_alloc",
         NULL},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++)
        run_fail(&cases[i]);
}

/* test-llama-archs models have no tokenizer (llama-server adds dummy tokens): the one-token
 * generation makes the real server abort, and `up` must say so and leave nothing behind. */
static void test_liveness_crash(void **state)
{
    NEED_LLAMA();
    const struct failcase c = {
        "live-crash", NULL, "llama-dense.gguf", {"-c", "1024", NULL}, true, NULL, "crash",
        "runtime",    NULL};
    run_fail(&c);
}

/* The one-token proof ends by the boot deadline (--timeout), not after a fixed 10 minutes: the
 * sim standing in for llama-server is ready in 1 s but takes 5 s per prompt token, so its proof
 * cannot answer by --timeout 6s; up fails as a timeout naming the deadline, and nothing carrying
 * the case's mark is left running. */
static void test_liveness_deadline(void **state)
{
    (void)state;
    NEED_LLAMA();
    struct tcase t;
    tcase_init(&t, "live-deadline");
    char sim[4400], text[5000], port[16];
    snprintf(sim, sizeof(sim), "%s/sim.sh", t.dir);
    snprintf(text, sizeof(text),
             "#!/bin/sh\n# slipway's sim as a llama-server whose prompts take 5 s a token "
             "(test_up.c)\nexport ASAN_OPTIONS=detect_leaks=0\nexec %s sim --engine llama.cpp "
             "--device-memory 24GiB --load-time 1s --prefill-us 5000000 --alias %s -- "
             "llama-server \"$@\"\n",
             swt_bin(), t.mark);
    swt_write_str(sim, text);
    chmod(sim, 0755);
    snprintf(port, sizeof(port), "%d", t.port);
    const char *argv[] = {swt_bin(), "up", "--timeout", "6s",   "--log",
                          t.log,     "--", sim,         "-m",   model("chat.gguf"),
                          "--port",  port, "-c",        "1024", NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 120, &r), 0);
    print_message("up: exit %d\n%s\n", r.status, r.err ? r.err : "");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "boot FAILED: timeout (phase runtime)"));
    assert_non_null(strstr(r.err, "liveness: POST /v1/chat/completions: no answer to the one-token "
                                  "generation by the boot deadline (6 s from the start; "));
    swt_run_free(&r);
    assert_int_equal(settle(t.mark), 0);
}

int main(void)
{
    sw_core_init();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_mid_boot_foreground),
        cmocka_unit_test(test_killed_mid_boot_detach),
        cmocka_unit_test(test_sigterm_mid_boot),
        cmocka_unit_test(test_ctrl_c_foreground),
        cmocka_unit_test(test_live_foreground),
        cmocka_unit_test(test_fleet_up_down),
        cmocka_unit_test(test_fleet_refuses_unfit),
        cmocka_unit_test(test_record_failed_boot),
        cmocka_unit_test(test_render_plan_boot),
        cmocka_unit_test(test_down_live),
        cmocka_unit_test(test_down_dead_pid),
        cmocka_unit_test(test_down_stale_pid_file),
        cmocka_unit_test(test_down_reused_pid),
        cmocka_unit_test(test_failing_boots),
        cmocka_unit_test(test_liveness_crash),
        cmocka_unit_test(test_liveness_deadline),
    };
    return cmocka_run_group_tests_name("up", tests, setup, teardown);
}
