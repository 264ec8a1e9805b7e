/*
 * `slipway bench` against a real llama-server (the pinned llama.cpp, the tiny synthesized chat
 * model of swllama.h, or $SW_NET_LLAMA_MODEL):
 *  - a depth sweep and a concurrency sweep run, and every request's figures reconcile with the
 *    server's own timings: token counts EXACTLY equal (usage, timings.predicted_n and the sum of
 *    the per-chunk increments), prompt tokens = prompt_n + cache_n, no prompt token from the
 *    cache when the bench asked for none;
 *  - decode rates: the client's (N-1)/(last token - first token) against llama.cpp's
 *    predicted_per_second, which is (N-1)/(its own first-to-last token span). Both clocks time the
 *    same N-1 decode steps, so the spans can differ only by how much later the last token's
 *    bytes reached us than the first token's did, relative to when the server made them. That is
 *    measured for every chunk (arrival - the server's predicted_ms in that chunk): its spread
 *    bounds the difference of the spans, and so the rates differ by at most spread / span. The
 *    bound holds however fast or slow either side runs (it is no threshold on speed); it fails
 *    when a token is miscounted or mis-timed: a chunk counted as one token, the role or usage
 *    chunk taken as a token, a time taken at parse instead of arrival of the bytes, or the
 *    server's span not being the span of the tokens we saw;
 *  - a prompt reused with cache_prompt on fails the cache check; with --expect-hit it passes;
 *  - the CLI prints JSON, an SVG and a ledger record.
 * Outputs are constrained by a grammar to lowercase ASCII: a random-weight model otherwise writes
 * bytes that are not UTF-8, which the pinned server answers with an error event mid-stream.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/bench.h>

#include "swllama.h"
#include "swtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fixture {
    char *dir;
    char model[4096];
    struct swl_server srv;
    json_t *extra;
};

static char g_missing[8700];

static int setup(void **state)
{
    *state = NULL;
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || swl_chat_dir(&f->dir, f->model, sizeof(f->model), g_missing, sizeof(g_missing))) {
        free(f);
        return 0;
    }
    /* one thread: ggml's spinning workers on a shared 2-core machine cost 50x */
    const char *args[] = {"-c", "12288", "-np", "2", "-t", "1", "--metrics", NULL};
    if (swl_start(f->model, args, NULL, 180, &f->srv)) {
        swt_tmpdir_free(f->dir);
        free(f);
        return -1;
    }
    f->extra = json_pack("{s:s}", "grammar", "root ::= [a-z ]+");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (!f)
        return 0;
    swl_stop(&f->srv);
    json_decref(f->extra);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static void opts(struct fixture *f, struct sw_bench_opts *o)
{
    sw_bench_opts_init(o);
    o->url = f->srv.url;
    o->tg = 32;
    o->repeat = 3;
    o->extra = f->extra;
    o->timeout_ms = 300000;
}

/* Every successful request reconciles with the server; returns how many succeeded. */
static size_t reconcile(const struct sw_bench_point *pt, int64_t tg)
{
    size_t ok = 0;
    for (size_t i = 0; i < pt->nsamples; i++) {
        const struct sw_bench_sample *s = &pt->samples[i];
        if (s->rc) {
            print_message("  request %zu failed: %s\n", i, s->error);
            continue;
        }
        ok++;
        assert_true(s->srv);
        assert_int_equal(s->count_src, SW_BENCH_COUNT_PER_CHUNK);
        assert_int_equal(s->completion_tokens, tg); /* ignore_eos: exactly --tg */
        assert_int_equal(s->completion_tokens, s->srv_predicted_n);
        assert_true(s->counts_agree);
        assert_int_equal(s->prompt_tokens, s->srv_prompt_n + s->srv_cache_n);
        assert_int_equal(s->cached_tokens, 0);
        assert_true(s->token_chunks <= (uint64_t)s->completion_tokens);
        assert_true(s->t_first_token >= s->t_sent && s->t_last_token >= s->t_first_token);
        /* the spans of the same decode steps on two clocks: apart by at most the spread of the
         * delivery delays (+ 1 us of printed rounding at each end) */
        double eps = 0.002;
        assert_true(isfinite(s->delivery_spread_ms));
        assert_true(fabs(s->span_diff_ms) <= s->delivery_spread_ms + eps);
        if (s->first_chunk_tokens == 1) {
            double bound = 100.0 * (s->delivery_spread_ms + eps) / (s->decode_span_s * 1e3);
            assert_true(fabs(s->decode_diff_pct) <= bound * 1.000001 + 1e-9);
        }
    }
    return ok;
}

static void test_depth_sweep(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_bench_opts o;
    opts(f, &o);
    o.depths[0] = 0;
    o.depths[1] = 512;
    o.depths[2] = 2048;
    o.ndepths = 3;
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    sw_bench_report_print(stdout, &rep);
    assert_int_equal(rep.npoints, 3);
    for (size_t i = 0; i < rep.npoints; i++) {
        const struct sw_bench_point *pt = &rep.points[i];
        assert_int_equal(pt->nsamples, 3);
        assert_true(reconcile(pt, o.tg) >= 2);
        assert_true(pt->counts_agree);
        assert_true(pt->decode.n >= 2 && pt->decode.min <= pt->decode.median &&
                    pt->decode.median <= pt->decode.max);
        /* the depth is met by the tokenizer's own count (a property of the prompt, not time) */
        int64_t got = pt->tokens_in / (int64_t)(pt->nsamples - pt->failed);
        if (pt->depth >= 512)
            assert_true(got > pt->depth * 8 / 10 && got < pt->depth * 12 / 10);
    }
    assert_true(rep.cache_verified);
    assert_non_null(strstr(rep.cache_why, "verified"));
    sw_bench_report_free(&rep);
}

static void test_concurrency_sweep(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_bench_opts o;
    opts(f, &o);
    o.depths[0] = 256;
    o.ndepths = 1;
    o.conc[0] = 1;
    o.conc[1] = 2;
    o.nconc = 2;
    o.repeat = 2;
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    sw_bench_report_print(stdout, &rep);
    assert_int_equal(rep.npoints, 2);
    assert_int_equal(rep.points[0].nsamples, 2);
    assert_int_equal(rep.points[1].nsamples, 4);
    for (size_t i = 0; i < rep.npoints; i++)
        assert_true(reconcile(&rep.points[i], o.tg) >= 1);
    assert_true(isfinite(rep.points[1].sum_decode_tps));
    /* the parity line is written either way (above or BELOW) */
    assert_non_null(strstr(rep.parity, "2-way at depth 256"));
    assert_true(rep.cache_verified);
    sw_bench_report_free(&rep);
}

static void test_cache_check(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_bench_opts o;
    opts(f, &o);
    o.depths[0] = 512;
    o.ndepths = 1;
    o.tg = 4;
    o.repeat = 3;
    o.reuse_prompt = true;
    o.cache_prompt = true;
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    /* the same prompt three times with the cache on: the check that expects no hit fails */
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    print_message("  reused, cache on: %s\n", rep.cache_why);
    assert_false(rep.cache_verified);
    assert_non_null(strstr(rep.cache_why, "FAILED"));
    int64_t hits = 0;
    for (size_t i = 1; i < rep.points[0].nsamples; i++)
        hits += rep.points[0].samples[i].cached_tokens > 400;
    assert_true(hits >= 1);
    sw_bench_report_free(&rep);
    /* told to expect hits, the same run verifies */
    o.expect_hit = true;
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    print_message("  reused, cache on, hits expected: %s\n", rep.cache_why);
    assert_true(rep.cache_verified);
    sw_bench_report_free(&rep);
    /* reused but cache_prompt:false: no hit */
    o.expect_hit = false;
    o.cache_prompt = false;
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    print_message("  reused, cache off: %s\n", rep.cache_why);
    assert_true(rep.cache_verified);
    sw_bench_report_free(&rep);
}

/* Open loop above what the server sustains, through as many connections as it has slots:
 * requests pile up in the client. The latency from the intended send shows the queue; the one
 * from the actual send does not (it starts when a connection freed). Structural, not timed: a
 * request can only be sent once an earlier one ended. */
static void test_open_loop_overload(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_bench_opts o;
    opts(f, &o);
    o.mode = SW_BENCH_OPEN;
    o.depths[0] = 128;
    o.ndepths = 1;
    o.tg = 16;
    o.rate = 200;
    o.arrival = SW_BENCH_ARRIVAL_CONSTANT;
    o.duration_s = 0.1; /* 20 requests, 5 ms apart */
    o.connections = 2;
    o.max_lag_ms = 1000; /* validity is not what this test reads */
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    sw_bench_report_print(stdout, &rep);
    const struct sw_bench_point *pt = &rep.points[0];
    assert_int_equal(pt->nsamples, 20);
    assert_true(reconcile(pt, o.tg) >= 18);
    /* every request after the first two waited for one of the two connections */
    size_t queued = 0;
    for (size_t i = 0; i < pt->nsamples; i++) {
        const struct sw_bench_sample *s = &pt->samples[i];
        if (s->rc)
            continue;
        assert_true(s->e2e_s >= s->e2e_sent_s && s->ttft_s >= s->ttft_sent_s);
        if (i >= 2) {
            uint64_t earliest_end = UINT64_MAX;
            for (size_t k = 0; k < i; k++)
                earliest_end = SW_MIN(earliest_end, pt->samples[k].t_first_token);
            assert_true(s->t_sent >= earliest_end);
            queued += s->queue_s > 0;
        }
    }
    assert_true(queued >= 16);
    /* the queue is in the corrected figure and not in the uncorrected one */
    assert_true(sw_bench_hist_quantile(&pt->e2e, 0.9) > sw_bench_hist_quantile(&pt->e2e_sent, 0.9));
    assert_true(sw_bench_hist_quantile(&pt->ttft, 0.9) >
                sw_bench_hist_quantile(&pt->ttft_sent, 0.9));
    assert_true(rep.rate_achieved < rep.rate_asked);
    sw_bench_report_free(&rep);
}

static void test_cli(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    const char *svg = swt_join(f->dir, "bench.svg");
    char svgp[4200], led[4200];
    snprintf(svgp, sizeof(svgp), "%s", svg);
    snprintf(led, sizeof(led), "%s", swt_join(f->dir, "ledger.db"));
    struct swt_run r;
    swt_slipway(&r, "bench", f->srv.url, "--depth", "0,256", "--tg", "8", "--repeat", "2",
                "--extra", "{\"grammar\":\"root ::= [a-z ]+\"}", "--json", "--samples", "--svg",
                svgp, "--ledger", led, NULL);
    if (r.status)
        print_message("stdout: %s\nstderr: %s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "points")), 2);
    assert_true(json_integer_value(json_object_get(j, "ledger_id")) > 0);
    json_t *s0 = json_array_get(
        json_object_get(json_array_get(json_object_get(j, "points"), 0), "samples"), 0);
    assert_string_equal(json_string_value(json_object_get(s0, "count_source")), "per_chunk");
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_has(svgp, "<svg"));
    assert_true(swt_file_has(svgp, "decode tok/s by context depth"));

    /* a fleet endpoint: examples/local.yaml pointed at this server; the ledger record carries
     * the endpoint's name and its shape hash */
    char *yaml = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(swt_src("examples/local.yaml"), 1u << 20, &yaml, &len, NULL), 0);
    char *at = strstr(yaml, "127.0.0.1:18080");
    assert_non_null(at);
    char fleet[4200], listen[64];
    snprintf(fleet, sizeof(fleet), "%s", swt_join(f->dir, "fleet.yaml"));
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", f->srv.port);
    FILE *fp = fopen(fleet, "w");
    assert_non_null(fp);
    fprintf(fp, "%.*s%s%s", (int)(at - yaml), yaml, listen, at + strlen("127.0.0.1:18080"));
    fclose(fp);
    /* the same endpoint on this server's model with a declared bandwidth: the decode roofline */
    char fleet2[4200];
    snprintf(fleet2, sizeof(fleet2), "%s", swt_join(f->dir, "fleet-roof.yaml"));
    fp = fopen(fleet2, "w");
    assert_non_null(fp);
    const char *pay = strstr(yaml, "~/.cache/slipway/models/tiny-llama.gguf");
    const char *ven = strstr(yaml, "        vendor: cpu\n");
    assert_true(pay && ven && ven < at && at < pay);
    fprintf(fp, "%.*s        vendor: cpu\n        bandwidth: 20GB/s\n%.*s%s%.*s%s%s",
            (int)(ven - yaml), yaml, (int)(at - (ven + 20)), ven + 20, listen,
            (int)(pay - (at + 15)), at + 15, f->model,
            pay + strlen("~/.cache/slipway/models/tiny-llama.gguf"));
    fclose(fp);
    sw_free(yaml);
    swt_slipway(&r, "bench", "local", "--fleet", fleet, "--depth", "64", "--tg", "4", "--repeat",
                "1", "--extra", "{\"grammar\":\"root ::= [a-z ]+\"}", "--ledger", led, "--json",
                NULL);
    if (r.status)
        print_message("stdout: %s\nstderr: %s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "model")), "local-tiny");
    json_decref(j);
    swt_run_free(&r);
    swt_slipway(&r, "ledger", "export", "--ledger", led, NULL);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    json_t *runs = json_object_get(j, "bench_runs");
    assert_int_equal(json_array_size(runs), 2);
    json_t *run2 = json_array_get(runs, 1);
    assert_string_equal(json_string_value(json_object_get(run2, "endpoint")), "local");
    const char *hash =
        json_string_value(json_object_get(json_object_get(run2, "params"), "shape_hash"));
    assert_non_null(hash);
    assert_int_equal(strlen(hash), 64);
    json_decref(j);
    swt_run_free(&r);

    /* the roofline: the plan's bytes a token (this GGUF's weights by role, its f16 KV per cell)
     * over the declared 20 GB/s; each point's ceiling and share at its measured depth */
    swt_slipway(&r, "bench", "local", "--fleet", fleet2, "--depth", "64", "--tg", "8", "--repeat",
                "2", "--extra", "{\"grammar\":\"root ::= [a-z ]+\"}", "--json", NULL);
    if (r.status)
        print_message("stdout: %s\nstderr: %s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    swt_run_free(&r);
    json_t *roof = json_object_get(j, "roofline");
    if (!json_is_true(json_object_get(roof, "known")))
        fail_msg("no roofline: %s", json_string_value(json_object_get(roof, "why")));
    double wb = json_number_value(json_object_get(roof, "weight_bytes"));
    double kvb = json_number_value(json_object_get(roof, "kv_bytes_per_token"));
    assert_true(wb > 0 && wb < json_number_value(json_object_get(roof, "total_weight_bytes")));
    assert_true(kvb > 0);
    assert_true(json_number_value(json_object_get(roof, "bandwidth")) == 20e9);
    json_t *pr = json_object_get(json_array_get(json_object_get(j, "points"), 0), "roofline");
    double depth = json_number_value(json_object_get(pr, "depth"));
    double bytes = json_number_value(json_object_get(pr, "bytes_per_token"));
    double ceil_tps = json_number_value(json_object_get(pr, "ceiling_tps"));
    double med = json_number_value(json_object_get(
        json_object_get(json_array_get(json_object_get(j, "points"), 0), "decode_tps"), "median"));
    assert_true(depth >= 64);
    assert_true(fabs(bytes - (wb + kvb * floor(depth + 0.5) +
                              json_number_value(json_object_get(roof, "state_bytes")))) < 1);
    assert_true(fabs(ceil_tps - 20e9 / bytes) < 1e-6 * ceil_tps);
    assert_true(fabs(json_number_value(json_object_get(pr, "pct")) - 100.0 * med / ceil_tps) <
                1e-6);
    json_decref(j);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_sweep), cmocka_unit_test(test_concurrency_sweep),
        cmocka_unit_test(test_cache_check), cmocka_unit_test(test_open_loop_overload),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests_name("bench_llama", tests, setup, teardown);
}
