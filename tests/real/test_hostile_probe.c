/*
 * `slipway probe` (the real binary) against hostile servers (tests/support/swhostile.h), each
 * attack bounded in time:
 *  - invalid UTF-8 in /health and in an error body: --json still prints valid JSON (the bytes
 *    as U+FFFD, the evidence saying so), and --record records it;
 *  - a gzip bomb nobody asked for: not decoded, said so with the ceiling that bounds the raw
 *    bytes, and the report is still valid JSON;
 *  - an auth error quoting the Authorization header: the key is in no output (human, --json)
 *    and not in the ledger file, in none of the forms the server echoed;
 *  - silence (a socket that never answers): with --deadline 3 the battery ends in seconds, the
 *    checks after readiness skipped with the reason; with the defaults it ends well inside a
 *    minute and the default deadline it reports is well under an hour; a server that answers
 *    /health but never a generation holds liveness only as long as the deadline;
 *  - a 1 MB response header: the error names the limit, not "out of memory";
 *  - C1 controls and ESC in a completion: escaped in the human view, never raw.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swhostile.h"
#include "swtest.h"

#include <stdlib.h>
#include <string.h>

/* Run slipway with a time limit; r is filled; returns the seconds it took. */
static double run(struct swt_run *r, unsigned timeout_s, ...)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = swt_bin();
    va_list ap;
    va_start(ap, timeout_s);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 63)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    double t0 = sw_now_s();
    swt_run(argv, NULL, timeout_s, r);
    return sw_now_s() - t0;
}

static json_t *check_of(json_t *doc, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "checks"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "name")), name))
            return c;
    }
    fail_msg("no check %s in the report", name);
    return NULL;
}

static const char *str_of(json_t *c, const char *key)
{
    const char *s = json_string_value(json_object_get(c, key));
    assert_non_null(s);
    return s;
}

static void show(const struct swt_run *r)
{
    print_message("exit %d\nstdout: %.3000s\nstderr: %.1000s\n", r->status, r->out, r->err);
}

/* A fleet whose endpoint "hostile" is the server on port (--record needs an endpoint name). */
static const char *fleet_at(const char *dir, int port)
{
    char y[512];
    snprintf(y, sizeof(y),
             "version: 1\nhosts:\n  localhost:\n    transport: local\nendpoints:\n"
             "  hostile:\n    host: localhost\n    engine: vllm\n    listen: 127.0.0.1:%d\n"
             "    alias: m\n",
             port);
    const char *path = swt_join(dir, "fleet.yaml");
    swt_write_str(path, y);
    return path;
}

static void test_invalid_utf8(void **state)
{
    struct swh *s = swh_start();
    swx_invalid_utf8(s);
    struct swt_run r;
    run(&r, 60, "probe", swh_url(s, ""), "--json", "--only", "readiness", NULL);
    show(&r);
    assert_int_equal(r.status, 0);
    json_t *doc = swt_json_out(&r); /* nothing printed, or not JSON, fails here */
    json_t *c = check_of(doc, "readiness");
    assert_string_equal(str_of(c, "status"), "pass");
    assert_non_null(strstr(str_of(c, "evidence"), "\xef\xbf\xbd"));
    assert_non_null(strstr(str_of(c, "evidence"), "invalid UTF-8"));
    assert_true(json_integer_value(
                    json_object_get(json_object_get(c, "data"), "invalid_utf8_replaced")) >= 5);
    json_decref(doc);
    swt_run_free(&r);

    /* recorded too (--record skipped it when the report could not be built), and a reply that
     * is not JSON where a completion should be fails liveness with a readable reason */
    char *dir = swt_tmpdir();
    char fleet[4200], led[4200];
    snprintf(fleet, sizeof(fleet), "%s", fleet_at(dir, swh_port(s)));
    snprintf(led, sizeof(led), "%s", swt_join(dir, "ledger.db"));
    run(&r, 60, "probe", "hostile", "--fleet", fleet, "--only", "readiness,liveness", "--record",
        "--ledger", led, NULL);
    show(&r);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "recorded as battery"));
    assert_non_null(strstr(r.out, "invalid UTF-8 from the server shown as U+FFFD"));
    assert_non_null(strstr(r.out, "unable to decode byte 0xfe"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
    swh_stop(s);
}

static void test_gzip_bomb(void **state)
{
    struct swh *s = swh_start();
    swx_gzip_bomb(s, 100u * 1000u * 1000u);
    struct swt_run r;
    double secs =
        run(&r, 60, "probe", swh_url(s, ""), "--json", "--only", "readiness,liveness", NULL);
    show(&r);
    assert_true(secs < 30);
    assert_int_equal(r.status, 1); /* liveness: not a chat completion */
    json_t *doc = swt_json_out(&r);
    json_t *c = check_of(doc, "readiness");
    assert_non_null(strstr(str_of(c, "evidence"), "Content-Encoding gzip"));
    assert_non_null(strstr(str_of(c, "evidence"), "at most 64 MiB"));
    c = check_of(doc, "liveness");
    assert_string_equal(str_of(c, "status"), "fail");
    assert_non_null(strstr(str_of(c, "evidence"), "Content-Encoding gzip"));
    json_decref(doc);
    swt_run_free(&r);
    swh_stop(s);
}

static bool file_holds(const char *path, const char *needle)
{
    char *data = NULL;
    size_t len = 0;
    if (sw_read_file(path, 256u << 20, &data, &len, NULL))
        return false;
    bool hit = memmem(data, len, needle, strlen(needle)) != NULL;
    sw_free(data);
    return hit;
}

static void test_key_echo(void **state)
{
    /* '/' and '+' so that the percent-encoded form differs from the key */
    static const char key[] = "sk-hostile/0123+4567-abcdef";
    static const char pct[] = "sk-hostile%2F0123%2B4567-abcdef";
    setenv("SW_HOSTILE_KEY", key, 1);
    struct swh *s = swh_start();
    swx_echo_auth(s);
    char *dir = swt_tmpdir();
    char fleet[4200], ledger[4200];
    snprintf(fleet, sizeof(fleet), "%s", fleet_at(dir, swh_port(s)));
    snprintf(ledger, sizeof(ledger), "%s", swt_join(dir, "ledger.db"));
    struct swt_run r;
    run(&r, 60, "probe", "hostile", "--fleet", fleet, "--only", "liveness,models", "--api-key-env",
        "SW_HOSTILE_KEY", "--record", "--ledger", ledger, NULL);
    show(&r);
    assert_null(strstr(r.out, key));
    assert_null(strstr(r.err, key));
    assert_null(strstr(r.out, pct));
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "HTTP 401"));
    assert_non_null(strstr(r.out, "Bearer ***"));
    assert_non_null(strstr(r.out, "recorded as battery"));
    swt_run_free(&r);
    run(&r, 60, "probe", "hostile", "--fleet", fleet, "--json", "--only", "liveness,models",
        "--api-key-env", "SW_HOSTILE_KEY", "--record", "--ledger", ledger, NULL);
    show(&r);
    assert_int_equal(r.status, 1);
    json_t *doc = swt_json_out(&r);
    assert_non_null(strstr(str_of(check_of(doc, "liveness"), "evidence"), "Bearer ***"));
    json_decref(doc);
    assert_null(strstr(r.out, key));
    assert_null(strstr(r.out, pct));
    swt_run_free(&r);
    /* what the ledger stored (the database and its write-ahead log) */
    char wal[4300];
    snprintf(wal, sizeof(wal), "%s-wal", ledger);
    assert_true(file_holds(ledger, "HTTP 401") || file_holds(wal, "HTTP 401"));
    assert_false(file_holds(ledger, key));
    assert_false(file_holds(wal, key));
    assert_false(file_holds(ledger, pct));
    assert_false(file_holds(wal, pct));
    swt_tmpdir_free(dir);
    swh_stop(s);
    unsetenv("SW_HOSTILE_KEY");
}

static void assert_skipped_silent(json_t *doc, const char *first_run)
{
    size_t i;
    json_t *c;
    bool after = false;
    json_array_foreach(json_object_get(doc, "checks"), i, c)
    {
        const char *name = str_of(c, "name");
        if (after) {
            assert_string_equal(str_of(c, "status"), "skip");
            assert_non_null(strstr(str_of(c, "reason"), "silent"));
        }
        if (!strcmp(name, first_run))
            after = true;
    }
    assert_true(after);
}

static void test_silent_deadline(void **state)
{
    struct swx_silent q;
    swx_silent_start(&q);
    struct swt_run r;
    double secs = run(&r, 60, "probe", q.url, "--json", "--deadline", "3", NULL);
    show(&r);
    print_message("the silent battery with --deadline 3 took %.1f s\n", secs);
    assert_true(secs < 15);
    assert_int_equal(r.status, 1);
    json_t *doc = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "deadline_ms")), 3000);
    assert_string_equal(str_of(check_of(doc, "readiness"), "status"), "fail");
    assert_skipped_silent(doc, "readiness");
    json_decref(doc);
    swt_run_free(&r);

    /* readiness not asked for: it still runs first, and the check asked for says why it did
     * not run */
    secs = run(&r, 60, "probe", q.url, "--json", "--only", "models", "--deadline", "2", NULL);
    show(&r);
    assert_true(secs < 15);
    assert_int_equal(r.status, 1); /* nothing ran because nothing answers: not a success */
    doc = swt_json_out(&r);
    assert_string_equal(str_of(check_of(doc, "models"), "status"), "skip");
    assert_non_null(strstr(str_of(check_of(doc, "models"), "reason"), "silent"));
    json_decref(doc);
    swt_run_free(&r);
    swx_silent_stop(&q);
}

static void test_silent_default(void **state)
{
    struct swx_silent q;
    swx_silent_start(&q);
    struct swt_run r;
    /* with the defaults: before, readiness (10 s), /v1/models (30 s) and liveness (300 s of
     * silence, 3000 s in all) came one after another, then every other check */
    double secs = run(&r, 120, "probe", q.url, "--json", NULL);
    show(&r);
    print_message("the silent battery with the defaults took %.1f s\n", secs);
    assert_true(secs < 60);
    assert_int_equal(r.status, 1);
    json_t *doc = swt_json_out(&r);
    json_int_t dl = json_integer_value(json_object_get(doc, "deadline_ms"));
    assert_true(dl > 0 && dl <= 30 * 60 * 1000); /* well under an hour */
    assert_skipped_silent(doc, "readiness");
    json_decref(doc);
    swt_run_free(&r);
    swx_silent_stop(&q);
}

static void test_deadline_bounds_a_check(void **state)
{
    /* /health answers, a generation never does: liveness waits only what the deadline leaves
     * (its own budget is 300 s of silence), and what follows is skipped */
    struct swh *s = swh_start();
    swh_reply(s, "GET", "/health", 200, NULL, "{\"status\":\"ok\"}");
    struct swh_step stall[] = {{.op = SWH_STALL}, {.op = SWH_END}};
    swh_script(s, "POST", "/v1/chat/completions", stall);
    struct swt_run r;
    double secs = run(&r, 60, "probe", swh_url(s, ""), "--json", "--only", "liveness,chat,stream",
                      "--deadline", "3", NULL);
    show(&r);
    assert_true(secs < 15);
    assert_int_equal(r.status, 1);
    json_t *doc = swt_json_out(&r);
    assert_string_equal(str_of(check_of(doc, "liveness"), "status"), "fail");
    assert_skipped_silent(doc, "liveness");
    json_decref(doc);
    swt_run_free(&r);
    swh_stop(s);
}

static void test_big_header(void **state)
{
    struct swh *s = swh_start();
    swx_big_header(s, 1u << 20);
    struct swt_run r;
    run(&r, 60, "probe", swh_url(s, ""), "--json", "--only", "readiness", NULL);
    show(&r);
    assert_int_equal(r.status, 1);
    json_t *doc = swt_json_out(&r);
    const char *ev = str_of(check_of(doc, "readiness"), "evidence");
    assert_null(strstr(ev, "out of memory"));
    assert_non_null(strstr(ev, "CURL_MAX_HTTP_HEADER"));
    assert_non_null(strstr(ev, "102400 bytes"));
    json_decref(doc);
    swt_run_free(&r);
    swh_stop(s);
}

static void test_c1_controls(void **state)
{
    struct swh *s = swh_start();
    swx_c1_completion(s);
    struct swt_run r;
    run(&r, 60, "probe", swh_url(s, ""), "--only", "liveness", NULL);
    show(&r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "\xc2\x9b"));
    assert_null(strstr(r.out, "\xc2\x85"));
    assert_null(strchr(r.out, 0x1b));
    assert_null(strchr(r.out, 0x07));
    assert_non_null(strstr(r.out, "\\u009b31mRED\\u0085"));
    swt_run_free(&r);
    /* --json carries the text as JSON strings (escaped by the encoder) */
    run(&r, 60, "probe", swh_url(s, ""), "--json", "--only", "liveness", NULL);
    assert_int_equal(r.status, 0);
    json_decref(swt_json_out(&r));
    assert_null(strchr(r.out, 0x1b));
    swt_run_free(&r);
    swh_stop(s);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_utf8),   cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_key_echo),       cmocka_unit_test(test_silent_deadline),
        cmocka_unit_test(test_silent_default), cmocka_unit_test(test_deadline_bounds_a_check),
        cmocka_unit_test(test_big_header),     cmocka_unit_test(test_c1_controls),
    };
    return cmocka_run_group_tests_name("hostile_probe", tests, NULL, NULL);
}
