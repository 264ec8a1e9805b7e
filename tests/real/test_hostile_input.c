/*
 * Hostile input against the real binary (issue 20): a ledger another user owns in a directory
 * they cannot write, read as uid 65534; a ledger with garbage in its middle; a zero-byte ledger;
 * FIFOs given as fleet file, env file and boot log (every run bounded, so a reader that blocks
 * fails the test instead of hanging it); a --timeout past int64 milliseconds; one engine's boot
 * log given to another engine's parser. Each case failed before its fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOUND_S 20 /* a run that blocks is killed after this long (status 137) */

static char *dir;

static int setup(void **state)
{
    return swt_tmpdir_setup(state, &dir);
}

static void import_seed(const char *led)
{
    char seed[4096];
    snprintf(seed, sizeof(seed), "%s", swt_src("tests/data/ledger/seed-boots.json"));
    struct swt_run r;
    const char *argv[] = {swt_bin(), "ledger", "--ledger", led, "import", seed, NULL};
    swt_run_bounded(argv, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("import: %s", r.err);
    swt_run_free(&r);
}

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Defect 7: `ledger list` and `check` as uid 65534 on root's ledger in a 0755 directory
 * (the WAL's -shm cannot be created there). */
static void test_ledger_readonly_other_user(void **state)
{
    (void)state;
    if (getuid() != 0)
        skip(); /* needs root to become another user */
    char sub[4096], led[4200], shm[4300], wal[4300];
    /* the tmpdir is 0700 (mkdtemp); nobody must reach the ledger, not write beside it */
    assert_int_equal(chmod(dir, 0755), 0);
    snprintf(sub, sizeof(sub), "%s/ro", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(led, sizeof(led), "%s/fleet.ledger.sqlite", sub);
    snprintf(shm, sizeof(shm), "%s-shm", led);
    snprintf(wal, sizeof(wal), "%s-wal", led);
    import_seed(led);
    assert_int_equal(chmod(led, 0644), 0);
    assert_false(exists(shm)); /* the last writer's close folded the WAL in */
    long long size = file_size(led);

    const char *list[] = {"setpriv",
                          "--reuid=65534",
                          "--regid=65534",
                          "--clear-groups",
                          "--",
                          swt_bin(),
                          "ledger",
                          "list",
                          "--ledger",
                          led,
                          "--json",
                          NULL};
    struct swt_run r;
    swt_run_bounded(list, BOUND_S, &r);
    if (r.status != 0)
        fail_msg("ledger list as nobody exited %d: %s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    size_t boots = json_array_size(json_object_get(j, "boots"));
    assert_true(boots > 10);
    json_decref(j);
    swt_run_free(&r);

    /* the human view too */
    const char *list_h[] = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                            swt_bin(), "ledger",        "list",          "--ledger",       led,
                            NULL};
    swt_run_bounded(list_h, BOUND_S, &r);
    assert_int_equal(r.status, 0);
    char want[64];
    snprintf(want, sizeof(want), ": %zu boots", boots);
    assert_non_null(strstr(r.out, want));
    assert_non_null(strstr(r.out, "frank-small"));
    swt_run_free(&r);

    /* check reads the same ledger (documented read-only): exit 0 or 1, never 2 (unusable) */
    const char *fleet = swt_src("examples/operator.yaml");
    char fleetbuf[4096];
    snprintf(fleetbuf, sizeof(fleetbuf), "%s", fleet);
    const char *check[] = {
        "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", swt_bin(), "check",
        "--fleet", fleetbuf,        "frank-small",   "--ledger",       led,  "--json",  NULL};
    swt_run_bounded(check, BOUND_S, &r);
    if (r.status != 0 && r.status != 1)
        fail_msg("check as nobody exited %d: %s", r.status, r.err);
    j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "ledger")), led);
    json_decref(j);
    swt_run_free(&r);

    /* nothing was written: no -shm or -wal beside it, the file as it was */
    assert_false(exists(shm));
    assert_false(exists(wal));
    assert_int_equal(file_size(led), size);

    /* and nobody saw what root sees */
    const char *as_root[] = {swt_bin(), "ledger", "list", "--ledger", led, "--json", NULL};
    swt_run_bounded(as_root, BOUND_S, &r);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "boots")), boots);
    json_decref(j);
    swt_run_free(&r);

    /* a -wal with frames in it and no way to build its index: immutable=1 would read the file
     * without them, so the reader is told instead of shown a stale ledger */
    unlink(shm);
    unlink(wal);
    char frames[4096];
    memset(frames, 0x11, sizeof(frames));
    swt_write(wal, frames, sizeof(frames));
    assert_int_equal(chmod(wal, 0644), 0);
    swt_run_bounded(list_h, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, wal));
    assert_non_null(strstr(r.err, "holds commits"));
    swt_run_free(&r);
}

/* A ledger with a page of garbage in its middle is refused before anything is added to it. */
static void test_ledger_corrupt_refused(void **state)
{
    (void)state;
    char led[4200];
    snprintf(led, sizeof(led), "%s/corrupt.ledger.sqlite", dir);
    import_seed(led);
    long long size = file_size(led);
    assert_true(size > 16 * 4096);
    FILE *f = fopen(led, "r+b");
    assert_non_null(f);
    char junk[4096];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(fseek(f, 10 * 4096, SEEK_SET), 0); /* page 11 of the file */
    assert_int_equal(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
    assert_int_equal(fclose(f), 0);

    char seed[4096];
    snprintf(seed, sizeof(seed), "%s", swt_src("tests/data/ledger/seed-boots.json"));
    struct swt_run r;
    const char *argv[] = {swt_bin(), "ledger", "--ledger", led, "import", seed, NULL};
    swt_run_bounded(argv, BOUND_S, &r);
    if (r.status == 0)
        fail_msg("a corrupt ledger was imported into: %s", r.out);
    assert_non_null(strstr(r.err, led));
    assert_non_null(strstr(r.err, "corrupt"));
    assert_non_null(strstr(r.err, "quick_check"));
    assert_non_null(strstr(r.err, "Page 11"));
    assert_null(strstr(r.out, "recorded"));
    swt_run_free(&r);
    assert_int_equal(file_size(led), size);
}

/* A zero-byte ledger is an uninitialised one: list says so and leaves it at 0 bytes. */
static void test_ledger_zero_bytes(void **state)
{
    (void)state;
    char led[4200];
    snprintf(led, sizeof(led), "%s/empty.ledger.sqlite", dir);
    swt_write(led, "", 0);
    struct swt_run r;
    const char *argv[] = {swt_bin(), "ledger", "list", "--ledger", led, NULL};
    swt_run_bounded(argv, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    assert_null(strstr(r.out, "0 boots"));
    assert_non_null(strstr(r.err, led));
    assert_non_null(strstr(r.err, "empty (0 bytes)"));
    assert_non_null(strstr(r.err, "uninitialised ledger"));
    swt_run_free(&r);
    const char *argvj[] = {swt_bin(), "ledger", "list", "--ledger", led, "--json", NULL};
    swt_run_bounded(argvj, BOUND_S, &r);
    assert_int_not_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "where")),
                        led);
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(file_size(led), 0); /* no schema was created by a reader */
}

static void expect_not_regular(struct swt_run *r, const char *fifo)
{
    if (r->status != 2)
        fail_msg("exited %d, want 2\nstdout: %.1000s\nstderr: %.1000s", r->status, r->out, r->err);
    assert_non_null(strstr(r->err, fifo));
    assert_non_null(strstr(r->err, "not a regular file"));
}

/* FIFOs as fleet file, env file (referenced by a fleet) and boot log: refused, never waited on. */
static void test_fifo_refused(void **state)
{
    (void)state;
    char fifo[4200];
    snprintf(fifo, sizeof(fifo), "%s/fleet.yaml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    struct swt_run r;
    const char *fleet[] = {swt_bin(), "fleet", "check", fifo, NULL};
    swt_run_bounded(fleet, BOUND_S, &r);
    expect_not_regular(&r, fifo);
    swt_run_free(&r);

    char log[4200];
    snprintf(log, sizeof(log), "%s/server.log", dir);
    assert_int_equal(mkfifo(log, 0600), 0);
    const char *boot[] = {swt_bin(), "bootlog", "parse", "--engine", "llama.cpp", log, NULL};
    swt_run_bounded(boot, BOUND_S, &r);
    expect_not_regular(&r, log);
    swt_run_free(&r);

    /* the operator's fleet beside its env files, one of them a FIFO */
    char sub[4096], yaml[4200], env[4200];
    snprintf(sub, sizeof(sub), "%s/op", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(swt_src("examples/operator.yaml"), 1 << 20, &text, &len, NULL),
                     0);
    snprintf(yaml, sizeof(yaml), "%s/operator.yaml", sub);
    swt_write(yaml, text, len);
    sw_free(text);
    assert_int_equal(sw_read_file(swt_src("examples/frank-small.env"), 1 << 20, &text, &len, NULL),
                     0);
    snprintf(env, sizeof(env), "%s/frank-small.env", sub);
    swt_write(env, text, len);
    sw_free(text);
    snprintf(env, sizeof(env), "%s/frank-primary.env", sub);
    assert_int_equal(mkfifo(env, 0600), 0);
    const char *op[] = {swt_bin(), "fleet", "check", yaml, NULL};
    swt_run_bounded(op, BOUND_S, &r);
    expect_not_regular(&r, env);
    assert_non_null(strstr(r.err, "operator.yaml:")); /* where in the fleet it is referenced */
    swt_run_free(&r);
}

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* `--timeout 18446744073709552` (seconds) does not wrap to 384 ms: it is refused, named. */
static void test_timeout_overflow(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
    const char *vals[] = {"18446744073709552", "9223372036854776", "18446744073709552000ms"};
    for (size_t i = 0; i < SW_ARRAY_LEN(vals); i++) {
        struct swt_run r;
        const char *argv[] = {swt_bin(), "probe",  url,         "--timeout",
                              vals[i],   "--only", "readiness", NULL};
        swt_run_bounded(argv, BOUND_S, &r);
        if (r.status != 2)
            fail_msg("--timeout %s: exited %d, want 2 (usage)\n%s%s", vals[i], r.status, r.out,
                     r.err);
        assert_non_null(strstr(r.err, vals[i]));
        assert_non_null(strstr(r.err, "too large"));
        swt_run_free(&r);
    }
    /* what still works: a unit, and seconds by default */
    struct swt_run r;
    const char *ok[] = {swt_bin(),   "probe",        url, "--timeout", "1500ms", "--only",
                        "readiness", "--ready-wait", "1", NULL};
    swt_run_bounded(ok, BOUND_S, &r);
    assert_int_equal(r.status, 1); /* nothing listens there: readiness fails, not the flag */
    swt_run_free(&r);
}

static json_t *parse_log(const char *engine, const char *log, int want_status)
{
    struct swt_run r;
    const char *argv[] = {swt_bin(), "bootlog", "parse", "--engine", engine, log, "--json", NULL};
    swt_run_bounded(argv, BOUND_S, &r);
    if (r.status != want_status)
        fail_msg("bootlog parse --engine %s %s: exited %d, want %d\n%.2000s", engine, log, r.status,
                 want_status, r.out);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    return j;
}

static void expect_not_this_engine(const char *engine, const char *label, const char *log,
                                   const char *other)
{
    json_t *j = parse_log(engine, log, 1);
    assert_false(json_is_true(json_object_get(j, "booted")));
    const json_t *f = json_object_get(j, "failure");
    if (!json_is_object(f))
        fail_msg("--engine %s on %s: no failure", engine, log);
    assert_string_equal(json_string_value(json_object_get(f, "class")), "not_this_engine");
    const char *msg = json_string_value(json_object_get(f, "message"));
    assert_non_null(strstr(msg, log));
    char want[96];
    snprintf(want, sizeof(want), "not a %s boot log", label);
    assert_non_null(strstr(msg, want));
    snprintf(want, sizeof(want), "--engine %s", other);
    assert_non_null(strstr(msg, want));
    json_decref(j);
}

static void expect_own(const char *engine, const char *log, bool booted)
{
    json_t *j = parse_log(engine, log, booted ? 0 : 1);
    assert_int_equal(json_is_true(json_object_get(j, "booted")), booted);
    const json_t *f = json_object_get(j, "failure");
    if (json_is_object(f))
        assert_string_not_equal(json_string_value(json_object_get(f, "class")), "not_this_engine");
    json_decref(j);
}

/* Write the raw lines of the first point of `engine` in points.jsonl that has `needle`. */
static void write_point(const char *engine, const char *needle, const char *extra, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(
        sw_read_file(swt_shared("data/bootlogs/points.jsonl"), 16u << 20, &text, &len, NULL), 0);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    bool found = false;
    for (char *line = strtok(text, "\n"); line && !found; line = strtok(NULL, "\n")) {
        json_t *p = json_loads(line, 0, NULL);
        const json_t *raw = json_object_get(p, "raw");
        if (p && !strcmp(json_string_value(json_object_get(p, "engine")), engine) &&
            json_is_array(raw) && strstr(line, needle)) {
            size_t i;
            const json_t *l;
            json_array_foreach(raw, i, l)
            {
                assert_int_equal(
                    sw_buf_append(&b, json_string_value(l), strlen(json_string_value(l))), 0);
                assert_int_equal(sw_buf_append(&b, "\n", 1), 0);
            }
            found = true;
        }
        json_decref(p);
    }
    sw_free(text);
    if (!found)
        fail_msg("no %s point with '%s' in points.jsonl", engine, needle);
    if (extra)
        assert_int_equal(sw_buf_append(&b, extra, strlen(extra)), 0);
    swt_write(path, b.data, b.len);
    sw_buf_free(&b);
}

/* `bootlog parse --engine sglang` on a vLLM log said booted: true with an empty report. Every
 * engine's parser now says when a log is not its engine's; its own logs are still its own. */
static void test_bootlog_not_this_engine(void **state)
{
    (void)state;
    char vlog[4200], slog[4200], llog[4200];
    /* real vLLM lines (a public boot, shared/data/bootlogs) and uvicorn's serving line */
    snprintf(vlog, sizeof(vlog), "%s/vllm.log", dir);
    write_point("vllm", "(EngineCore pid=107)", "INFO:     Application startup complete.\n", vlog);
    snprintf(slog, sizeof(slog), "%s/sglang.log", dir);
    write_point("sglang", "KV Cache is allocated", NULL, slog);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(swt_src("tests/data/bootlogs/llamacpp/ok_gemma2_swa.log"),
                                  16u << 20, &text, &len, NULL),
                     0);
    snprintf(llog, sizeof(llog), "%s/llama.log", dir);
    swt_write(llog, text, len);
    sw_free(text);

    expect_own("vllm", vlog, true);
    expect_own("llama.cpp", llog, true);
    expect_own("sglang", slog, false); /* three lines of its KV pool, no serving line */

    expect_not_this_engine("sglang", "SGLang", vlog, "vllm");
    expect_not_this_engine("llama.cpp", "llama.cpp", vlog, "vllm");
    expect_not_this_engine("vllm", "vLLM", slog, "sglang");
    expect_not_this_engine("llama.cpp", "llama.cpp", slog, "sglang");
    expect_not_this_engine("vllm", "vLLM", llog, "llama.cpp");
    expect_not_this_engine("sglang", "SGLang", llog, "llama.cpp");

    /* the human view names it too */
    struct swt_run r;
    const char *argv[] = {swt_bin(), "bootlog", "parse", "--engine", "sglang", vlog, NULL};
    swt_run_bounded(argv, BOUND_S, &r);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "not_this_engine"));
    assert_non_null(strstr(r.out, "is not a SGLang boot log"));
    assert_null(strstr(r.out, "booted\n"));
    swt_run_free(&r);
}

/* Each case in a fresh directory of its own. */
#define CASE(t) cmocka_unit_test_setup_teardown(t, setup, swt_tmpdir_teardown)

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        CASE(test_ledger_readonly_other_user), CASE(test_ledger_corrupt_refused),
        CASE(test_ledger_zero_bytes),          CASE(test_fifo_refused),
        CASE(test_timeout_overflow),           CASE(test_bootlog_not_this_engine),
    };
    return cmocka_run_group_tests_name("hostile_input", tests, NULL, NULL);
}
