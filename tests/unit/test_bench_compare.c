/*
 * bench compare and the ledger's bench shape column. Two real runs against a controlled HTTP
 * server on 127.0.0.1 (swhttpd), one streaming its chunks 4 ms apart and one 40 ms apart, are
 * recorded in a ledger (the first with an endpoint shape in its params, the second without);
 * `slipway bench compare` must call the slow run's decode worse beyond the noise (exit 1) and
 * the reverse better (exit 0), and a run against itself within the noise. sw_bench_compare's
 * rules (noise = half of each range summed, no verdict under two requests a side, points only
 * one run has listed apart) are checked on hand-written documents. No timing threshold: the
 * server's sleeps make the order certain (40 ms vs 4 ms between tokens).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/bench.h>
#include <slipway/ledger.h>

#include "swhttpd.h"
#include "swtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *SHAPE = "{\"engine\":\"vllm\",\"model\":{\"name\":\"Q\",\"quant\":\"fp8\"},"
                           "\"tp\":2,\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
                           "\"kv_bytes\":6100000000,\"mnbt\":2048}";

/* One run against a server that sleeps ms between chunks, recorded; its bench id. */
static int64_t run_and_record(const char *dir, const char *ledger, unsigned ms, bool shape)
{
    struct swh *s = swh_start();
    swh_sse(s, "/v1/chat/completions", swh_llama_stream(4), ms);
    const char *prompts = swt_join(dir, "p.jsonl");
    swt_write_str(prompts, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n");
    struct sw_bench_opts o;
    sw_bench_opts_init(&o);
    o.url = swh_url(s, "");
    o.prompts_file = prompts;
    o.tg = 4;
    o.repeat = 3;
    o.timeout_ms = 20000;
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_bench_run(&o, &rep, &e))
        fail_msg("bench run: %s", e.msg);
    swh_stop(s);
    assert_int_equal(rep.points[0].failed, 0);
    json_t *doc = sw_bench_report_json(&rep, false);
    sw_bench_report_free(&rep);
    json_t *params = json_object();
    if (shape) {
        /* as `slipway bench ENDPOINT --ledger` records it: the canonical shape and its hash */
        json_t *raw = sw_json_parse(SHAPE, strlen(SHAPE), "shape", NULL), *canon = NULL;
        char hash[SW_LEDGER_HASH_LEN + 1];
        assert_int_equal(sw_ledger_shape_canon(raw, &canon, NULL, hash, &e), 0);
        sw_json_set_new(params, "shape", canon);
        sw_json_set_str(params, "shape_hash", hash);
        json_decref(raw);
    }
    struct sw_ledger l;
    int64_t id = 0;
    assert_int_equal(sw_ledger_open(&l, ledger, NULL, &e), 0);
    if (sw_ledger_record_bench(&l, "ep", 0, 1764700000, params, doc, NULL, NULL, &id, &e))
        fail_msg("record: %s", e.msg);
    sw_ledger_close(&l);
    json_decref(params);
    json_decref(doc);
    return id;
}

static const json_t *metric(const json_t *cmp, const char *name)
{
    const json_t *p = json_array_get(json_object_get(cmp, "points"), 0);
    return swt_json_find(json_object_get(p, "metrics"), "metric", name);
}

static void test_compare_recorded_runs(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char ledger[4200], ids[3][32];
    snprintf(ledger, sizeof(ledger), "%s", swt_join(dir, "l.sqlite"));
    int64_t fast = run_and_record(dir, ledger, 4, true);
    int64_t slow = run_and_record(dir, ledger, 40, false);
    snprintf(ids[0], sizeof(ids[0]), "%lld", (long long)fast);
    snprintf(ids[1], sizeof(ids[1]), "%lld", (long long)slow);
    snprintf(ids[2], sizeof(ids[2]), "%lld", (long long)slow + 100);

    /* the shape column: the summary of params.shape, null when the run had none */
    struct sw_ledger l;
    struct sw_err e;
    json_t *r = NULL;
    assert_int_equal(sw_ledger_open(&l, ledger, NULL, &e), 0);
    assert_int_equal(sw_ledger_bench_run(&l, fast, &r, &e), 0);
    const char *sh = json_string_value(json_object_get(r, "shape"));
    assert_non_null(sh);
    swt_has_all("sh", sh, "vllm", "262,144", NULL);
    json_decref(r);
    assert_int_equal(sw_ledger_bench_run(&l, slow, &r, &e), 0);
    assert_true(json_is_null(json_object_get(r, "shape")));
    json_decref(r);
    assert_int_equal(sw_ledger_bench_run(&l, slow + 100, &r, &e), SW_ENOENT);
    /* a tag of the fast run's shape names that run */
    json_t *shape = sw_json_parse(SHAPE, strlen(SHAPE), "shape", NULL), *payload = json_array();
    struct sw_ledger_tag_new t = {
        .endpoint = "ep", .shape = shape, .payload = payload, .downtime_ms = -1};
    char tag[SW_LEDGER_TAG_MAX];
    int64_t tag_id;
    if (sw_ledger_tag_commit(&l, &t, tag, &tag_id, &e))
        fail_msg("tag: %s", e.msg);
    json_decref(shape);
    json_decref(payload);
    sw_ledger_close(&l);
    struct swt_run run;
    swt_slipway(&run, "bench", "compare", tag, ids[1], "--ledger", ledger, "--json", NULL);
    assert_int_equal(run.status, 1);
    json_t *bytag = swt_json_out(&run);
    swt_run_free(&run);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(bytag, "a"), "id")), fast);
    json_decref(bytag);

    /* fast -> slow: decode worse beyond the noise, exit 1 */
    swt_slipway(&run, "bench", "compare", ids[0], ids[1], "--ledger", ledger, "--json", NULL);
    assert_int_equal(run.status, 1);
    json_t *cmp = swt_json_out(&run);
    swt_run_free(&run);
    const json_t *m = metric(cmp, "decode_tps");
    assert_string_equal(json_string_value(json_object_get(m, "verdict")), "worse");
    assert_true(json_is_true(json_object_get(m, "exceeds_noise")));
    assert_true(json_number_value(json_object_get(m, "diff")) < 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "a"), "n")), 3);
    assert_true(json_number_value(json_object_get(m, "noise")) >= 0);
    const json_t *tpot = metric(cmp, "tpot.p50_ms");
    assert_string_equal(json_string_value(json_object_get(tpot, "verdict")), "no spread");
    assert_true(json_number_value(json_object_get(tpot, "diff")) > 0);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(cmp, "a"), "shape")), "vllm"));
    assert_true(json_integer_value(json_object_get(cmp, "worse")) >= 1);
    json_decref(cmp);

    /* slow -> fast: better, exit 0; the table names the verdict */
    swt_slipway(&run, "bench", "compare", ids[1], ids[0], "--ledger", ledger, NULL);
    assert_int_equal(run.status, 0);
    swt_has_all("run.out", run.out, "decode_tps", "better", "A: bench", NULL);
    swt_run_free(&run);

    /* a run against itself: within the noise */
    swt_slipway(&run, "bench", "compare", ids[0], ids[0], "--ledger", ledger, "--json", NULL);
    assert_int_equal(run.status, 0);
    cmp = swt_json_out(&run);
    swt_run_free(&run);
    assert_string_equal(json_string_value(json_object_get(metric(cmp, "decode_tps"), "verdict")),
                        "within noise");
    assert_int_equal(json_integer_value(json_object_get(cmp, "better")), 0);
    json_decref(cmp);

    /* usage: one id, a non-id; no such run */
    swt_slipway(&run, "bench", "compare", ids[0], "--ledger", ledger, NULL);
    assert_int_equal(run.status, 2);
    swt_run_free(&run);
    swt_slipway(&run, "bench", "compare", ids[0], "x1", "--ledger", ledger, "--json", NULL);
    assert_int_not_equal(run.status, 0);
    assert_non_null(strstr(run.out, "\"error\""));
    assert_non_null(strstr(run.err, "neither a bench run id nor a tag"));
    swt_run_free(&run);
    swt_slipway(&run, "bench", "compare", ids[0], ids[2], "--ledger", ledger, NULL);
    assert_int_not_equal(run.status, 0);
    assert_non_null(strstr(run.err, "no bench run"));
    swt_run_free(&run);
    swt_tmpdir_free(dir);
}

static json_t *doc(const char *s)
{
    json_t *j = sw_json_parse(s, strlen(s), "doc", NULL);
    assert_non_null(j);
    return j;
}

static void test_compare_rules(void **state)
{
    (void)state;
    json_t *a = doc("{\"points\":[{\"depth\":4096,\"concurrency\":1,"
                    "\"decode_tps\":{\"n\":3,\"median\":40,\"min\":39,\"max\":41},"
                    "\"prefill_tps\":{\"n\":3,\"median\":1000,\"min\":900,\"max\":1100},"
                    "\"server_decode_tps\":{\"n\":1,\"median\":40,\"min\":40,\"max\":40},"
                    "\"ttft\":{\"p50_ms\":100}},"
                    "{\"depth\":0,\"concurrency\":1}]}");
    json_t *b = doc("{\"points\":[{\"depth\":4096,\"concurrency\":1,"
                    "\"decode_tps\":{\"n\":3,\"median\":37,\"min\":36,\"max\":38.5},"
                    "\"prefill_tps\":{\"n\":3,\"median\":1150,\"min\":1000,\"max\":1200},"
                    "\"server_decode_tps\":{\"n\":3,\"median\":38,\"min\":37,\"max\":39},"
                    "\"ttft\":{\"p50_ms\":90}},"
                    "{\"depth\":16384,\"concurrency\":1}]}");
    struct sw_err e;
    json_t *c = sw_bench_compare(a, b, &e);
    assert_non_null(c);
    /* decode: -3, noise 1 + 1.25 = 2.25: worse */
    const json_t *m = metric(c, "decode_tps");
    assert_true(fabs(json_number_value(json_object_get(m, "noise")) - 2.25) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(m, "diff")) + 3) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(m, "diff_pct")) + 7.5) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(m, "verdict")), "worse");
    /* prefill: +150, noise 100 + 100 = 200: within */
    m = metric(c, "prefill_tps");
    assert_string_equal(json_string_value(json_object_get(m, "verdict")), "within noise");
    assert_true(json_is_false(json_object_get(m, "exceeds_noise")));
    /* one request on A's side: no verdict */
    m = metric(c, "server_decode_tps");
    assert_string_equal(json_string_value(json_object_get(m, "verdict")), "no spread");
    assert_true(json_is_null(json_object_get(m, "exceeds_noise")));
    /* a lower latency is not judged (no repeats), only shown */
    m = metric(c, "ttft.p50_ms");
    assert_true(fabs(json_number_value(json_object_get(m, "diff")) + 10) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(m, "better")), "lower");
    assert_int_equal(json_array_size(json_object_get(c, "points")), 1);
    assert_int_equal(json_integer_value(
                         json_object_get(json_array_get(json_object_get(c, "only_a"), 0), "depth")),
                     0);
    assert_int_equal(json_integer_value(
                         json_object_get(json_array_get(json_object_get(c, "only_b"), 0), "depth")),
                     16384);
    assert_int_equal(json_integer_value(json_object_get(c, "worse")), 1);
    json_decref(c);
    /* not a bench document */
    json_t *x = doc("{\"checks\":[]}");
    assert_null(sw_bench_compare(a, x, &e));
    assert_int_equal(e.code, SW_EINVAL);
    json_decref(x);
    json_decref(a);
    json_decref(b);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_rules),
        cmocka_unit_test(test_compare_recorded_runs),
    };
    return cmocka_run_group_tests_name("bench_compare", tests, NULL, NULL);
}
