/*
 * `slipway bench` (the real binary) against a fake engine (tests/support/swhttpd.h) that lies:
 *  - figures that cannot be: 1e15 completion tokens for a request that asked 8, a trillion
 *    prompt tokens from a body of a few hundred bytes, a decode rate of 1e300 tok/s, a negative
 *    time, more server time than the request took. Each request is marked invalid with the
 *    bound it broke (--json and the table), none of its figures enters the point, no digit run
 *    of a 1e300 reaches the output, and the run is not recorded in the ledger, which keeps only
 *    the honest run recorded before it;
 *  - failures with their reasons: llama-server's in-stream error event ("does not match the
 *    expected peg-native format") counted and shown in the table, deduplicated; a reason that
 *    echoes the API key, carries terminal escapes, or raw bytes that are not UTF-8 shows none
 *    of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swhttpd.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY "sk-test-0123456789abcdef"

static char *dir;
static char prompts[4200], ledger[4200];

static int setup(void **state)
{
    (void)state;
    dir = swt_tmpdir();
    snprintf(prompts, sizeof(prompts), "%s", swt_join(dir, "p.jsonl"));
    swt_write_str(prompts, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n");
    snprintf(ledger, sizeof(ledger), "%s", swt_join(dir, "ledger.db"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    swt_tmpdir_free(dir);
    return 0;
}

static void show(const struct swt_run *r)
{
    print_message("exit %d\nstdout: %.4000s\nstderr: %.2000s\n", r->status, r->out, r->err);
}

/* slipway bench URL --prompts FILE --tg 8 --repeat N --no-engine-metrics -q, then more args. */
static void bench(struct swt_run *r, struct swh *s, const char *repeat, ...)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = swt_bin();
    argv[n++] = "bench";
    argv[n++] = swh_url(s, "");
    argv[n++] = "--prompts";
    argv[n++] = prompts;
    argv[n++] = "--tg";
    argv[n++] = "8";
    argv[n++] = "--repeat";
    argv[n++] = repeat;
    argv[n++] = "--no-engine-metrics";
    argv[n++] = "-q";
    va_list ap;
    va_start(ap, repeat);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 63)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    swt_run(argv, NULL, 120, r);
}

/* The longest run of decimal digits in s: a 1e300 printed with %f is ~300 of them. */
static size_t digit_run(const char *s)
{
    size_t best = 0, cur = 0;
    for (; *s; s++) {
        cur = *s >= '0' && *s <= '9' ? cur + 1 : 0;
        best = cur > best ? cur : best;
    }
    return best;
}

/* The ledger's bench runs (sqlite3's CLI on the file the binary wrote). */
static long ledger_count(const char *where)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM bench_runs%s%s;", where ? " WHERE " : "",
             where ? where : "");
    const char *argv[] = {"sqlite3", "-readonly", ledger, sql, NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 30, &r), 0);
    if (r.status != 0)
        fail_msg("sqlite3: %s", r.err);
    long n = strtol(r.out, NULL, 10);
    swt_run_free(&r);
    return n;
}

#define ROLE "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
#define TOK(text, n)                                                                               \
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" text "\"}}],\"timings\":{"        \
    "\"cache_n\":0,\"prompt_n\":16,\"prompt_ms\":1,\"prompt_per_second\":16000,"                   \
    "\"predicted_n\":" #n ",\"predicted_ms\":1,\"predicted_per_second\":1000}}\n\n"
/* the last chunk: usage and timings as given */
#define LAST(usage, timings)                                                                       \
    "data: {\"choices\":[],\"usage\":{" usage "},\"timings\":{" timings "}}\n\ndata: [DONE]\n\n"
#define USAGE_OK "\"prompt_tokens\":16,\"completion_tokens\":3,\"total_tokens\":19"
#define TIMINGS(prompt_n, prompt_ms, pps, n, ms, tps)                                              \
    "\"cache_n\":0,\"prompt_n\":" #prompt_n ",\"prompt_ms\":" #prompt_ms                           \
    ",\"prompt_per_second\":" #pps ",\"predicted_n\":" #n ",\"predicted_ms\":" #ms                 \
    ",\"predicted_per_second\":" #tps

static const char *const honest[] = {ROLE,
                                     TOK("a", 1),
                                     TOK(" b", 2),
                                     TOK(" c", 3),
                                     LAST(USAGE_OK, TIMINGS(16, 1, 16000, 3, 2, 1000)),
                                     NULL};

/* Five liars (in the order the requests come), then the honest reply for every later request. */
static struct swh *liars(void)
{
    struct swh *s = swh_start();
    static const char *const too_many[] = {
        ROLE, TOK("a", 1), TOK(" b", 2),
        LAST("\"prompt_tokens\":16,\"completion_tokens\":1000000000000000,\"total_tokens\":"
             "1000000000000016",
             TIMINGS(16, 1, 16000, 1000000000000000, 2, 1e300)),
        NULL};
    static const char *const huge_prompt[] = {
        ROLE, TOK("a", 1),
        LAST("\"prompt_tokens\":1000000000000,\"completion_tokens\":1,\"total_tokens\":"
             "1000000000001",
             TIMINGS(1000000000000, 1, 16000, 1, 1, 1000)),
        NULL};
    static const char *const fast[] = {ROLE,
                                       TOK("a", 1),
                                       TOK(" b", 2),
                                       TOK(" c", 3),
                                       LAST(USAGE_OK, TIMINGS(16, 1, 16000, 3, 2, 1e300)),
                                       NULL};
    static const char *const negative[] = {ROLE,
                                           TOK("a", 1),
                                           TOK(" b", 2),
                                           TOK(" c", 3),
                                           LAST(USAGE_OK, TIMINGS(16, 1, 16000, 3, -5, 1000)),
                                           NULL};
    static const char *const slow[] = {
        ROLE,
        TOK("a", 1),
        TOK(" b", 2),
        TOK(" c", 3),
        LAST(USAGE_OK, TIMINGS(16, 1000000000, 0.000016, 3, 2, 1000)),
        NULL};
    swh_sse(s, "/v1/chat/completions", too_many, 5);
    swh_sse(s, "/v1/chat/completions", huge_prompt, 5);
    swh_sse(s, "/v1/chat/completions", fast, 5);
    swh_sse(s, "/v1/chat/completions", negative, 5);
    swh_sse(s, "/v1/chat/completions", slow, 5);
    swh_sse(s, "/v1/chat/completions", honest, 5);
    return s;
}

static void test_impossible_figures(void **state)
{
    (void)state;
    struct swt_run r;

    /* an honest run first: recorded */
    struct swh *s = swh_start();
    swh_sse(s, "/v1/chat/completions", honest, 5);
    bench(&r, s, "2", "--ledger", ledger, NULL);
    if (r.status != 0)
        show(&r);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recorded as bench 1"));
    swt_run_free(&r);
    swh_stop(s);
    assert_int_equal(ledger_count(NULL), 1);

    /* five liars and one honest request */
    s = liars();
    bench(&r, s, "6", "--ledger", ledger, "--json", "--samples", NULL);
    if (r.status != 1)
        show(&r);
    assert_int_equal(r.status, 1);
    assert_true(digit_run(r.out) < 20);
    assert_non_null(strstr(r.err, "not recorded in"));
    json_t *j = swt_json_out(&r);
    assert_null(json_object_get(j, "ledger_id"));
    assert_non_null(strstr(json_string_value(json_object_get(j, "ledger_not_recorded")),
                           "5 requests reported figures that cannot be"));
    json_t *pt = json_array_get(json_object_get(j, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(pt, "requests")), 6);
    assert_int_equal(json_integer_value(json_object_get(pt, "failed")), 5);
    assert_int_equal(json_integer_value(json_object_get(pt, "invalid")), 5);
    /* the point's figures are the honest request's alone */
    assert_int_equal(json_integer_value(json_object_get(pt, "completion_tokens")), 3);
    assert_int_equal(json_integer_value(json_object_get(pt, "prompt_tokens")), 16);
    json_t *sd = json_object_get(pt, "server_decode_tps");
    assert_int_equal(json_integer_value(json_object_get(sd, "n")), 1);
    assert_true(json_real_value(json_object_get(sd, "max")) == 1000);
    static const char *const why[] = {
        "usage.completion_tokens 1000000000000000 > the 8 tokens asked (max_tokens)",
        "1000000000000 prompt tokens from a body of",
        "timings.predicted_per_second 1e+300 (past 1e+06 tok/s a stream)",
        "timings.predicted_ms is -5",
        "timings.prompt_ms + predicted_ms = 1000000002.000 ms, the request took",
    };
    json_t *samples = json_object_get(pt, "samples");
    assert_int_equal(json_array_size(samples), 6);
    for (size_t i = 0; i < 6; i++) {
        json_t *x = json_array_get(samples, i);
        assert_int_equal(json_integer_value(json_object_get(x, "index")), (json_int_t)i);
        if (i == 5) {
            assert_true(json_is_true(json_object_get(x, "ok")));
            assert_null(json_object_get(x, "invalid"));
            continue;
        }
        assert_true(json_is_false(json_object_get(x, "ok")));
        assert_true(json_is_true(json_object_get(x, "invalid")));
        const char *e = json_string_value(json_object_get(x, "error"));
        if (!strstr(e, "figures that cannot be: ") || !strstr(e, why[i]))
            fail_msg("request %zu: '%s' (want '%s')", i, e, why[i]);
        /* none of its figures is kept */
        assert_int_equal(json_integer_value(json_object_get(x, "completion_tokens")), -1);
        assert_true(json_is_null(json_object_get(x, "server")));
    }
    json_decref(j);
    swt_run_free(&r);
    swh_stop(s);
    /* the ledger has the honest run only, and no figure of a liar */
    assert_int_equal(ledger_count(NULL), 1);
    assert_int_equal(ledger_count("results LIKE '%1000000000000%' OR results LIKE '%e+300%'"), 0);

    /* the table: the invalid requests and why, no 300-digit number */
    s = liars();
    bench(&r, s, "6", "--ledger", ledger, NULL);
    assert_int_equal(r.status, 1);
    assert_true(digit_run(r.out) < 20);
    assert_non_null(strstr(r.out, "5 of 6 requests failed (5 invalid):"));
    assert_non_null(strstr(r.out, "1x figures that cannot be: usage.completion_tokens "
                                  "1000000000000000 > the 8 tokens asked (max_tokens)"));
    assert_non_null(strstr(r.out, "1x figures that cannot be: timings.predicted_per_second"));
    assert_null(strstr(r.out, "recorded as bench"));
    assert_non_null(strstr(r.err, "not recorded in"));
    swt_run_free(&r);
    swh_stop(s);
    assert_int_equal(ledger_count(NULL), 1);
}

/* Every byte of s is part of well-formed UTF-8 and none is a C0 control but newline and tab, DEL
 * or C1. */
static void assert_clean_text(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = sw_utf8_seq(p + i, n - i);
        if (!k)
            fail_msg("byte %zu (0x%02x) starts no UTF-8 character", i, p[i]);
        if (k == 1 && ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f))
            fail_msg("control byte 0x%02x at %zu", p[i], i);
        if (k == 2 && p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
            fail_msg("C1 control U+%04X at %zu", p[i + 1], i);
        i += k;
    }
}

#define PEG "The model produced output that does not match the expected peg-native format"

static void test_failure_reasons(void **state)
{
    (void)state;
    struct swt_run r;
    struct swh *s = swh_start();
    /* llama-server's in-stream error, twice; an error echoing the key with terminal escapes; an
     * HTML error page with bytes that are not UTF-8; then an honest reply */
    static const char *const peg[] = {ROLE, TOK("a", 1),
                                      "data: {\"error\":{\"code\":500,\"message\":\"" PEG
                                      "\",\"type\":\"server_error\"}}\n\n",
                                      NULL};
    static const char *const echo[] = {
        ROLE,
        "data: {\"error\":{\"code\":401,\"message\":\"key " KEY " refused \\u001b[2J\\u001b]0;"
        "pwned\\u0007 \\u009b31m\",\"type\":\"authentication_error\"}}\n\n",
        NULL};
    swh_sse(s, "/v1/chat/completions", peg, 5);
    swh_sse(s, "/v1/chat/completions", peg, 5);
    swh_sse(s, "/v1/chat/completions", echo, 5);
    static const char page[] = "<h1>bad \xff\xfe gateway \x1b[31m " KEY "</h1>";
    char head[160];
    snprintf(head, sizeof(head),
             "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: %zu\r\n\r\n",
             sizeof(page) - 1);
    const struct swh_step raw[] = {
        {.op = SWH_SEND, .data = head}, {.op = SWH_SEND, .data = page}, {.op = SWH_END}};
    swh_script(s, "POST", "/v1/chat/completions", raw);
    swh_sse(s, "/v1/chat/completions", honest, 5);

    setenv("SWT_BENCH_KEY", KEY, 1);
    bench(&r, s, "5", "--api-key-env", "SWT_BENCH_KEY", NULL);
    if (r.status != 1 || !strstr(r.out, "4 of 5 requests failed:"))
        show(&r);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "4 of 5 requests failed:\n          2x " PEG "\n"));
    assert_null(strstr(r.out, KEY));
    assert_null(strstr(r.err, KEY));
    assert_non_null(strstr(r.out, "1x key *** refused"));
    assert_non_null(strstr(r.out, "1x HTTP 502: "));
    assert_clean_text(r.out);
    swt_run_free(&r);
    swh_stop(s);

    /* --json: the same reasons, counted, the key in none */
    s = swh_start();
    swh_sse(s, "/v1/chat/completions", peg, 5);
    swh_sse(s, "/v1/chat/completions", echo, 5);
    swh_sse(s, "/v1/chat/completions", peg, 5);
    swh_sse(s, "/v1/chat/completions", honest, 5);
    bench(&r, s, "4", "--api-key-env", "SWT_BENCH_KEY", "--json", "--samples", NULL);
    assert_int_equal(r.status, 1);
    assert_null(strstr(r.out, KEY));
    json_t *j = swt_json_out(&r);
    json_t *pt = json_array_get(json_object_get(j, "points"), 0);
    json_t *f = json_object_get(pt, "failures");
    assert_int_equal(json_array_size(f), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "why")), PEG);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(f, 0), "count")), 2);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_array_get(f, 1), "why")), "key *** refused"));
    assert_int_equal(json_integer_value(json_object_get(pt, "invalid")), 0);
    json_decref(j);
    swt_run_free(&r);
    swh_stop(s);
    unsetenv("SWT_BENCH_KEY");
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_impossible_figures),
        cmocka_unit_test(test_failure_reasons),
    };
    return cmocka_run_group_tests_name("hostile_bench", tests, setup, teardown);
}
