/*
 * sim's timing model and its fit, without a loop or a socket:
 *  - the step cost is the documented formula (a negative intercept clamps at 0);
 *  - the scheduler's replica: one stream decodes at 1e6 / step; two streams sent together share
 *    the first (prefill) step through the batch window; without the window they do not; a
 *    prompt past the step budget is prefilled in chunks;
 *  - the fit recovers the terms that generated a depth x concurrency grid (sw_sim_predict's own
 *    figures), and keeps what single-stream figures cannot tell (decode_per_seq_us);
 *  - the points of a bench --json document and of the operator's measured facts
 *    (examples/operator.yaml's frank-primary decode at 166 / 1087 / 4064 tokens);
 *  - the timing's JSON round-trips and refuses a negative per-token cost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/sim.h>

#include "swtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct sw_sim_timing defaults(void)
{
    struct sw_sim_config c;
    sw_sim_config_init(&c);
    return c.timing;
}

static void test_step_cost(void **state)
{
    (void)state;
    struct sw_sim_timing t = defaults();
    t.prefill_base_us = 100;
    t.prefill_step_us = 10;
    t.prefill_per_kv_us = 2;
    /* decode only: 2000 + 200 x 2 + 1 x 3000 / 1000 */
    assert_float_equal(sw_sim_step_us(&t, 2, 3000, 0, NULL, NULL), 2403.0, 1e-9);
    /* one prompt of 10 at position 0, nothing decoding: 10 + 100 + 50 x 10 + 2 x 45 / 1000 */
    double n = 10, k0 = 0;
    assert_float_equal(sw_sim_step_us(&t, 0, 0, 1, &n, &k0), 610.09, 1e-9);
    /* a chunk at position 100: n x k0 = 1000 more pairs */
    k0 = 100;
    assert_float_equal(sw_sim_step_us(&t, 0, 0, 1, &n, &k0), 612.09, 1e-9);
    /* two prompts in one step: the costlier (20 tokens: 100 + 1000 + 2 x 190 / 1000) in full,
     * the other at the batch's share */
    double two[2] = {10, 20}, at[2] = {0, 0};
    t.prefill_batch_share = 0.5;
    assert_float_equal(sw_sim_step_us(&t, 0, 0, 2, two, at), 10 + 1100.38 + 0.5 * 600.09, 1e-9);
    t.prefill_batch_share = 1;
    assert_float_equal(sw_sim_step_us(&t, 0, 0, 2, two, at), 10 + 1100.38 + 600.09, 1e-9);
    t.decode_base_us = -5000;
    assert_float_equal(sw_sim_step_us(&t, 1, 0, 0, NULL, NULL), 0.0, 1e-9);
}

static void test_predict(void **state)
{
    (void)state;
    struct sw_sim_timing t = defaults();
    t.decode_per_kv_us = 0;
    struct sw_sim_point p = {.concurrency = 1, .repeat = 3, .prompt_tokens = 100, .tg = 20};
    double d, pf;
    sw_sim_predict(&t, 1, 0, &p, &d, &pf);
    assert_float_equal(d, 1e6 / 2200.0, 1e-6);
    /* the window, then the prompt's step (no decode in it) */
    assert_float_equal(pf, 100 * 1e6 / (3000.0 + 50.0 * 100), 1e-6);
    /* two streams sent together: one batch, both prefills in one step */
    p.concurrency = 2;
    sw_sim_predict(&t, 2, 0, &p, &d, &pf);
    assert_float_equal(pf, 100 * 1e6 / (3000.0 + 2 * 50.0 * 100), 1e-6);
    assert_float_equal(d, 1e6 / 2400.0, 1e-6);
    /* no window: the first request's step starts alone, the second waits for it */
    t.batch_window_us = 0;
    double pf0;
    sw_sim_predict(&t, 2, 0, &p, &d, &pf0);
    assert_true(pf0 != pf);
    /* one slot for two streams: the second waits for the first request to end */
    t.batch_window_us = 3000;
    double d1, pf1;
    sw_sim_predict(&t, 1, 0, &p, &d1, &pf1);
    assert_float_equal(d1, 1e6 / 2200.0, 1e-6);
    assert_true(pf1 < pf);
    /* chunked prefill: a 100-token prompt in a 30-token budget takes 4 steps, each paying the
     * per-step prefill cost; decode is unchanged */
    p.concurrency = 1;
    t.prefill_step_us = 100;
    sw_sim_predict(&t, 1, 0, &p, &d, &pf);
    assert_float_equal(pf, 100 * 1e6 / (3000.0 + 100 + 50.0 * 100), 1e-6);
    sw_sim_predict(&t, 1, 30, &p, &d1, &pf1);
    assert_float_equal(pf1, 100 * 1e6 / (3000.0 + 4 * 100 + 50.0 * 100), 1e-6);
    assert_float_equal(d1, d, 1e-9);
}

static void test_fit_recovers(void **state)
{
    (void)state;
    struct sw_sim_timing truth = defaults();
    truth.decode_base_us = 1500;
    truth.decode_per_seq_us = 900;
    truth.decode_per_kv_us = 40;
    truth.prefill_per_token_us = 30;
    truth.prefill_base_us = 2000;
    truth.prefill_per_kv_us = 15;
    truth.prefill_step_us = 500;
    truth.prefill_batch_share = 0.7;
    struct sw_sim_point pts[9];
    const double depths[3] = {64, 512, 2048};
    for (int i = 0; i < 9; i++) {
        memset(&pts[i], 0, sizeof(pts[i]));
        pts[i].depth = (int64_t)depths[i / 3];
        pts[i].prompt_tokens = depths[i / 3];
        pts[i].concurrency = 1 + i % 3;
        pts[i].repeat = 3;
        pts[i].tg = 32;
        sw_sim_predict(&truth, 3, 2048, &pts[i], &pts[i].decode_tps, &pts[i].prefill_tps);
    }
    struct sw_sim_fit fit;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_sim_fit(pts, 9, 3, 2048, NULL, &fit, &e), 0);
    assert_int_equal(fit.n_targets, 18);
    assert_int_equal(fit.fitted, 0xff);
    /* the figures are reproduced; the terms need not be unique to do so */
    assert_true(fit.max_err_pct < 3.0);
    for (int i = 0; i < 9; i++) {
        double d, pf;
        sw_sim_predict(&fit.timing, 3, 2048, &pts[i], &d, &pf);
        assert_true(fabs(d - pts[i].decode_tps) / pts[i].decode_tps < 0.03);
        assert_true(fabs(pf - pts[i].prefill_tps) / pts[i].prefill_tps < 0.03);
    }
    /* single-stream decode figures only: the per-sequence cost is not told apart from base */
    struct sw_sim_point one[3];
    for (int i = 0; i < 3; i++) {
        one[i] = pts[i * 3];
        one[i].prefill_tps = NAN;
    }
    assert_int_equal(sw_sim_fit(one, 3, 1, 0, NULL, &fit, &e), 0);
    assert_int_equal(fit.fitted, SW_SIM_FIT_DECODE_BASE | SW_SIM_FIT_DECODE_KV);
    assert_float_equal(fit.timing.decode_per_seq_us, 0.0, 0.0);
    assert_float_equal(fit.timing.prefill_per_token_us, defaults().prefill_per_token_us, 0.0);
    assert_true(fit.max_err_pct < 1.0);
    /* nothing measured */
    for (int i = 0; i < 3; i++)
        one[i].decode_tps = NAN;
    assert_int_equal(sw_sim_fit(one, 3, 1, 0, NULL, &fit, &e), SW_EINVAL);
}

static void test_points(void **state)
{
    (void)state;
    struct sw_err e;
    sw_err_clear(&e);
    json_t *doc = json_pack(
        "{s:s,s:[{s:i,s:i,s:i,s:i,s:i,s:i,s:{s:f},s:{s:f}},{s:n,s:i,s:i,s:i,s:i,s:i,s:{s:f},"
        "s:{s:f}},{s:i,s:i,s:i,s:i,s:i,s:i,s:{s:n},s:{s:n}}]}",
        "mode", "sweep", "points", "depth", 512, "concurrency", 2, "requests", 6, "failed", 1,
        "prompt_tokens", 2550, "completion_tokens", 160, "decode_tps", "median", 88.5,
        "prefill_tps", "median", 4000.0, "depth", "concurrency", 1, "requests", 2, "failed", 2,
        "prompt_tokens", 0, "completion_tokens", 0, "decode_tps", "median", 1.0, "prefill_tps",
        "median", 1.0, "depth", 64, "concurrency", 1, "requests", 3, "failed", 0, "prompt_tokens",
        192, "completion_tokens", 96, "decode_tps", "median", "prefill_tps", "median");
    struct sw_sim_point *pts = NULL;
    size_t n = 0;
    assert_int_equal(sw_sim_points_from_bench(doc, "run 1", &pts, &n, &e), 0);
    assert_int_equal(n, 2); /* the point with no successful request adds none */
    assert_int_equal(pts[0].concurrency, 2);
    assert_int_equal(pts[0].repeat, 3);
    assert_float_equal(pts[0].prompt_tokens, 510.0, 1e-9);
    assert_int_equal(pts[0].tg, 32);
    assert_float_equal(pts[0].decode_tps, 88.5, 1e-9);
    assert_string_equal(pts[0].source, "run 1");
    assert_true(isnan(pts[1].decode_tps));
    json_decref(doc);
    /* open loop: no points; a document without points: an error */
    doc = json_pack("{s:s,s:[]}", "mode", "open", "points");
    assert_int_equal(sw_sim_points_from_bench(doc, "x", &pts, &n, &e), 0);
    assert_int_equal(n, 2);
    json_decref(doc);
    doc = json_object();
    assert_int_equal(sw_sim_points_from_bench(doc, "x", &pts, &n, &e), SW_EINVAL);
    json_decref(doc);
    sw_free(pts);

    /* the operator's frank-primary figures */
    struct sw_fleet *f = NULL;
    f = swt_fleet("examples/operator.yaml");
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "frank-primary");
    assert_non_null(ep);
    pts = NULL;
    n = 0;
    assert_int_equal(sw_sim_points_from_fleet(ep, &pts, &n, &e), 0);
    assert_int_equal(n, 3);
    assert_int_equal(pts[0].depth, 166);
    assert_float_equal(pts[0].decode_tps, 39.38, 1e-9);
    assert_int_equal(pts[2].depth, 4064);
    assert_float_equal(pts[2].decode_tps, 36.42, 1e-9);
    struct sw_sim_fit fit;
    assert_int_equal(sw_sim_fit(pts, n, 1, 0, NULL, &fit, &e), 0);
    assert_true(fit.max_err_pct < 1.0);
    assert_true(fit.timing.decode_per_kv_us > 0);
    sw_free(pts);
    sw_fleet_free(f);
}

/* The runs of one workload pooled into their medians, prompt tokens 7% apart among them (two
 * bench runs' depths: a clean-clone CI run had 5.3% between two of 768); another workload, and
 * the same depth label with 17% more prompt, left alone. */
static void test_pool(void **state)
{
    (void)state;
    struct sw_sim_point p[7];
    const double dec[7] = {100, 130, 110, 50, 120, 70, 30},
                 pre[7] = {1000, 900, NAN, 400, 1100, 600, 200};
    const double prompt[7] = {66, 67, 66, 750, 67, 803, 900};
    for (int i = 0; i < 7; i++) {
        memset(&p[i], 0, sizeof(p[i]));
        p[i].depth = i == 3 || i >= 5 ? 768 : 64;
        p[i].prompt_tokens = prompt[i];
        p[i].concurrency = 2;
        p[i].repeat = 3;
        p[i].tg = 24;
        p[i].decode_tps = dec[i];
        p[i].prefill_tps = pre[i];
        snprintf(p[i].source, sizeof(p[i].source), "run %d", i);
    }
    size_t n = 7;
    sw_sim_points_pool(p, &n);
    assert_int_equal(n, 3);
    assert_float_equal(p[0].decode_tps, 115.0, 1e-9);   /* 100 110 120 130 */
    assert_float_equal(p[0].prefill_tps, 1000.0, 1e-9); /* 900 1000 1100 */
    assert_float_equal(p[0].prompt_tokens, 66.5, 1e-9); /* 66 67 66 67 */
    assert_int_equal(p[0].repeat, 3);
    assert_non_null(strstr(p[0].source, "median of 4 runs"));
    assert_int_equal(p[1].depth, 768);
    assert_float_equal(p[1].decode_tps, 60.0, 1e-9); /* 50 70 */
    assert_float_equal(p[1].prompt_tokens, 776.5, 1e-9);
    assert_non_null(strstr(p[1].source, "median of 2 runs"));
    assert_int_equal(p[2].depth, 768);
    assert_float_equal(p[2].decode_tps, 30.0, 0.0);
    assert_string_equal(p[2].source, "run 6");
}

static void test_timing_json(void **state)
{
    (void)state;
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_sim_timing t = defaults(), u;
    t.decode_base_us = -12.5;
    t.prefill_step_us = 7;
    json_t *j = sw_sim_timing_json(&t);
    assert_non_null(j);
    memset(&u, 0, sizeof(u));
    assert_int_equal(sw_sim_timing_from_json(j, "t", &u, &e), 0);
    assert_memory_equal(&t, &u, sizeof(t));
    json_object_set_new(j, "prefill_per_token_us", json_real(-1));
    assert_int_equal(sw_sim_timing_from_json(j, "fit.json", &u, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "prefill_per_token_us"));
    json_decref(j);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_cost),    cmocka_unit_test(test_predict),
        cmocka_unit_test(test_fit_recovers), cmocka_unit_test(test_points),
        cmocka_unit_test(test_timing_json),  cmocka_unit_test(test_pool),
    };
    return cmocka_run_group_tests_name("sim_fit", tests, NULL, NULL);
}
