/*
 * headroom: memory/profile's budget at graph capture (sw_profile_headroom) against the seed's
 * printed budget line, the transient needs fitted from the seed ledger's frank-primary boots
 * (calib sw_calib_headroom_predict), one boot held out of the fit and predicted, and the
 * `headroom` gate of `slipway check` on the seed's failing shapes and the deployed ones.
 *
 * Figures and where they are printed (seed/000_72a2b93c5830e64b.txt):
 *   :167-170  bf16 2 x 262144 with --expert-precise-memory: weights 6.28 + pool 6.80 + graphs
 *             0.55 + arena 16.65 (precise overhead 5.25) + non-torch 1.45 = 31.73 of 31.86 GiB,
 *             ~0.13 GiB free; :171-172 the default overhead (7.60) gives arena 14.31, ~2.4 free
 *   :259      6 x 241664 fp8 asked 10.70 GiB against 9.18 GiB free
 *   :282-285  bf16 3 x 262144 at util 0.98: tried 10.28 GiB with 9.46 GiB free per rank;
 *             util 0.90 returns ~2.5 GiB/rank
 *   :268-271  night ladder (bf16, 3 seqs, util 0.98): 262144 and 245760 OOM at capture,
 *             237568 (718,606 tokens) and 241664 (732,359) pass
 *   :246-249  five 262144 fp8 contexts booted, 0 bytes free at runtime
 * Every GiB figure is printed to 2 decimals: the tolerance is 0.005 GiB.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/profile.h>

#include "swledger.h"
#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB   1073741824.0
#define PRINT (0.005 * GIB) /* a GiB figure printed to 2 decimals */

struct fx {
    char *dir;
    char led[4096];
    struct sw_ledger l;
    struct sw_fleet *fleet;
    const struct sw_fleet_endpoint *ep;
    struct sw_fork_profile prof;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct sw_err e = {0};
    f->dir = swt_tmpdir();
    snprintf(f->led, sizeof(f->led), "%s", swt_join(f->dir, "seed.sqlite"));
    if (sw_ledger_open(&f->l, f->led, NULL, &e))
        fail_msg("%s", e.msg);
    swl_import_seed(&f->l, "seed-boots.json");
    f->fleet = swt_fleet("examples/operator.yaml");
    f->ep = sw_fleet_endpoint(f->fleet, "frank-primary");
    assert_non_null(f->ep);
    if (sw_profile_from_fleet(f->ep->profile, &f->prof, &e))
        fail_msg("%s", e.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sw_ledger_close(&f->l);
    sw_fleet_free(f->fleet);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static struct sw_calib_fit *fit_excluding(struct fx *f, const int64_t *ex, int n_ex)
{
    struct sw_calib_fit *r = NULL;
    struct sw_err e = {0};
    struct sw_calib_opts o = {.ep = f->ep, .exclude = ex, .n_exclude = n_ex};
    if (sw_calib_fit(&f->l, "frank-primary", &o, &r, &e))
        fail_msg("%s", e.msg);
    assert_true(r->headroom.have);
    return r;
}

static struct sw_headroom_shape shape(int64_t L, int64_t seqs, uint64_t pool, double util,
                                      bool precise, int64_t mnbt)
{
    struct sw_headroom_shape s = {.max_model_len = L,
                                  .seqs = seqs,
                                  .pool = pool,
                                  .util = util,
                                  .precise = precise,
                                  .mnbt = mnbt};
    return s;
}

static struct sw_calib_hr_pred predict(const struct sw_calib_fit *r, struct sw_headroom_shape s,
                                       const char *kv)
{
    struct sw_calib_hr_pred p;
    struct sw_err e = {0};
    if (sw_calib_headroom_predict(r, &s, kv, &p, &e))
        fail_msg("%s", e.msg);
    return p;
}

static void near(double got, double want_gib, double tol)
{
    if (fabs(got - want_gib * GIB) > tol * 1.0001) /* the interval ends at the print's edge */
        fail_msg("%.4f GiB, want %.2f +- %.4f", got / GIB, want_gib, tol / GIB);
}

/* The law alone: the seed's budget line, term by term. */
static void test_budget_line(void **state)
{
    struct fx *f = *state;
    struct sw_headroom_budget b;
    struct sw_err e = {0};
    struct sw_headroom_shape s = shape(262144, 2, 7300000000u, 0, true, 1024);
    assert_int_equal(sw_profile_headroom(&f->prof, &s, &b, &e), 0);
    near((double)b.overhead, 5.25, PRINT);
    near((double)b.arena.arena_bytes, 16.65, PRINT);
    near((double)b.pool, 6.80, PRINT);
    near(b.resident, 31.73, PRINT);
    near(b.free_capture, 0.13, PRINT);
    /* without the flag: the default overhead, arena ~14.31, ~2.4 GiB free */
    s.precise = false;
    assert_int_equal(sw_profile_headroom(&f->prof, &s, &b, &e), 0);
    near((double)b.overhead, 7.60, PRINT);
    near((double)b.arena.arena_bytes, 14.31, 0.015 * GIB);
    assert_true(b.free_capture > 2.35 * GIB && b.free_capture < 2.55 * GIB);
    /* util 0.90 against the profile's 0.98: ~2.5 GiB of arena go back to the workspace */
    struct sw_headroom_budget b90;
    s.util = 0.90;
    assert_int_equal(sw_profile_headroom(&f->prof, &s, &b90, &e), 0);
    double back = (double)(b.arena.arena_bytes - b90.arena.arena_bytes) / GIB;
    assert_true(back > 2.45 && back < 2.6);
    /* precise asked of a profile that does not declare the precise overhead */
    struct sw_fork_profile q = f->prof;
    q.overhead_precise = 0;
    s.precise = true;
    assert_int_equal(sw_profile_headroom(&q, &s, &b, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "overhead_precise"));
}

/* The fit over every recorded boot: the quoted figures, and each boot's outcome replayed. */
static void test_fit_reproduces(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit_excluding(f, NULL, 0);
    const struct sw_calib_headroom *h = &r->headroom;
    assert_true(h->consistent);
    /* capture per sequence, pinned pools: bounded by the 4 x 262144 fp8 boot's 1.54 GiB / 4 */
    assert_true(h->tau_hi_set);
    near(h->tau_hi * 4, 1.54, PRINT);
    /* the KV allocation failures' printed free memory, reproduced by the activation line */
    struct sw_calib_hr_pred p = predict(r, shape(262144, 3, 11047010304u, 0.98, false, 0), "auto");
    assert_int_equal(p.verdict, SW_CALIB_HR_KV_FAILS);
    near(p.kv_free_lo, 9.46, PRINT);
    near(p.kv_free_hi, 9.46, PRINT);
    assert_non_null(strstr(p.why, "asked 10.29 GiB of KV against 9.46 GiB free"));
    p = predict(r, shape(241664, 6, 11489112064u, 0, false, 0), "fp8"); /* 10.70 GiB asked */
    assert_int_equal(p.verdict, SW_CALIB_HR_KV_FAILS);
    near(p.kv_free_lo, 9.18, PRINT);
    near(p.kv_free_hi, 9.18, PRINT);
    assert_non_null(strstr(p.why, "asked 10.70 GiB of KV against 9.18 GiB free"));
    /* the night ladder */
    static const struct {
        int64_t L;
        enum sw_calib_hr_verdict v;
    } ladder[] = {{262144, SW_CALIB_HR_CAPTURE_FAILS},
                  {245760, SW_CALIB_HR_CAPTURE_FAILS},
                  {237568, SW_CALIB_HR_FITS},
                  {241664, SW_CALIB_HR_FITS}};
    for (size_t i = 0; i < SW_ARRAY_LEN(ladder); i++) {
        p = predict(r, shape(ladder[i].L, 3, 0, 0.98, false, 0), "auto");
        if (p.verdict != ladder[i].v)
            fail_msg("ladder %lld: %s (%s)", (long long)ladder[i].L,
                     sw_calib_hr_verdict_name(p.verdict), p.why);
    }
    /* five 262144 fp8 contexts: the budget is overdrawn, boots, dies at runtime */
    p = predict(r, shape(262144, 5, 10388766720u, 0, false, 0), "fp8");
    assert_int_equal(p.verdict, SW_CALIB_HR_RUNTIME_FAILS);
    /* the deployed shapes */
    p = predict(r, shape(200704, 3, 3150000000u, 0, false, 1024), "fp8");
    assert_int_equal(p.verdict, SW_CALIB_HR_FITS);
    p = predict(r, shape(262144, 3, 11047010304u, 0.90, false, 1024), "auto");
    assert_int_equal(p.verdict, SW_CALIB_HR_FITS);
    p = predict(r, shape(262144, 3, 6100000000u, 0, false, 2048), "fp8");
    assert_int_equal(p.verdict, SW_CALIB_HR_FITS);
    /* the precise shape: 0.13 GiB free at capture, not known to fit */
    p = predict(r, shape(262144, 2, 7300000000u, 0, true, 1024), "auto");
    assert_int_equal(p.verdict, SW_CALIB_HR_CAPTURE_RISK);
    near(p.free_lo, 0.13, PRINT);
    assert_non_null(strstr(p.why, "0.13 GiB free at capture"));
    /* the boots' printed token counts come back through the pool line (the law prints them from
     * the predicted pool in the sim): 497 and 487 blocks of 20,471,808 B */
    p = predict(r, shape(241664, 3, 0, 0.98, false, 0), "auto");
    assert_true(p.pool_lo >= 497.0 * 20471808 - 1 && p.pool_hi < 498.0 * 20495380);
    sw_calib_fit_free(r);
}

/* Held out: the night ladder's first rung (262144) is left out of the fit and predicted from the
 * other three rungs: it dies at capture, with a free at capture below the 245760 death's. */
static void test_held_out(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *all = fit_excluding(f, NULL, 0);
    int64_t id = 0;
    for (int i = 0; i < all->headroom.n_points; i++)
        if (!strcmp(all->headroom.pts[i].ext_id, "seed-fleet:boot:ladder-262144"))
            id = all->headroom.pts[i].boot_id;
    sw_calib_fit_free(all);
    assert_true(id > 0);
    struct sw_calib_fit *r = fit_excluding(f, &id, 1);
    for (int i = 0; i < r->headroom.n_points; i++)
        assert_int_not_equal(r->headroom.pts[i].boot_id, id);
    assert_int_equal(r->headroom.n_pools, 1);
    assert_int_equal(r->headroom.pools[0].n_theta_lo, 1); /* only 245760's death is left */
    struct sw_calib_hr_pred p = predict(r, shape(262144, 3, 0, 0.98, false, 0), "auto");
    assert_int_equal(p.verdict, SW_CALIB_HR_CAPTURE_FAILS);
    assert_true(p.extrapolated);
    assert_true(p.free_hi < r->headroom.pools[0].theta_lo);
    sw_calib_fit_free(r);
}

/* ---------------------------------------------------------------------------------------------
 * The gate, through `slipway check`.
 */
static json_t *headroom_gate(json_t *doc)
{
    json_t *eps = json_object_get(doc, "endpoints");
    json_t *ep = json_is_array(eps) ? json_array_get(eps, 0) : doc;
    json_t *gates = json_object_get(ep, "gates");
    for (size_t i = 0; i < json_array_size(gates); i++) {
        json_t *g = json_array_get(gates, i);
        if (!strcmp(json_string_value(json_object_get(g, "gate")), "headroom"))
            return g;
    }
    return NULL;
}

static void check_gate(const char *fleet, const char *led, const char *const *sets,
                       const char *verdict, const char *line_has)
{
    const char *argv[40];
    int n = 0;
    argv[n++] = swt_bin();
    argv[n++] = "check";
    argv[n++] = "--fleet";
    argv[n++] = fleet;
    argv[n++] = "frank-primary";
    argv[n++] = "--ledger";
    argv[n++] = led;
    argv[n++] = "--json";
    for (int i = 0; sets && sets[i] && n < 36; i++) {
        argv[n++] = "--set";
        argv[n++] = sets[i];
    }
    argv[n] = NULL;
    struct swt_run r;
    swt_run(argv, NULL, 60, &r);
    json_t *doc = swt_json_out(&r);
    if (!doc)
        fail_msg("check printed no JSON (exit %d): %s", r.status, r.err);
    json_t *g = headroom_gate(doc);
    if (!g)
        fail_msg("no headroom gate: %s", r.out);
    const char *v = json_string_value(json_object_get(g, "verdict"));
    const char *line = json_string_value(json_object_get(g, "line"));
    if (strcmp(v, verdict) || !strstr(line, line_has))
        fail_msg("headroom %s: %s (want %s with \"%s\")", v, line, verdict, line_has);
    json_decref(doc);
    swt_run_free(&r);
}

static void test_gate(void **state)
{
    struct fx *f = *state;
    const char *op = swt_src("examples/operator.yaml");
    /* the deployed shape (frank-primary.env: 3 x 200704 fp8, 3.15e9, MNBT 1024) */
    check_gate(op, f->led, NULL, "pass", "5.78 GiB free at capture");
    /* the bf16 incumbent at util 0.90 */
    const char *bf16[] = {"kv_cache_dtype=auto", "max_model_len=262144",
                          "kv_cache_bytes=11047010304", "gpu_memory_utilization=0.90", NULL};
    check_gate(op, f->led, bf16, "pass", "1.54 GiB free at capture");
    /* the night ladder's maximum, engine-sized */
    const char *max[] = {"kv_cache_dtype=auto", "max_model_len=241664", "kv_cache_bytes=null",
                         "gpu_memory_utilization=0.98", NULL};
    check_gate(op, f->led, max, "pass", "engine-sized pool");
    const char *rung[] = {"kv_cache_dtype=auto", "max_model_len=245760", "kv_cache_bytes=null",
                          "gpu_memory_utilization=0.98", NULL};
    check_gate(op, f->led, rung, "fail", "graph_capture_oom");
    /* six full contexts at fp8, asking 10.70 GiB */
    const char *six[] = {"seqs=6", "max_model_len=241664", "kv_cache_bytes=11489112064", NULL};
    check_gate(op, f->led, six, "fail", "asked 10.70 GiB of KV against 9.18 GiB free");
    /* bf16 2 x 262144 with --expert-precise-memory: a copy of the fleet with the flag */
    FILE *in = fopen(op, "r");
    assert_non_null(in);
    static char text[1 << 17];
    size_t len = fread(text, 1, sizeof(text) - 1, in);
    fclose(in);
    text[len] = 0;
    const char *key = "    args: [--reasoning-parser";
    char *at = strstr(text, key);
    assert_non_null(at);
    char path[4096], out[sizeof(text) + 64];
    snprintf(out, sizeof(out), "%.*s    args: [--expert-precise-memory, --reasoning-parser%s",
             (int)(at - text), text, at + strlen(key));
    snprintf(path, sizeof(path), "%s", swt_join(f->dir, "frank-primary.env"));
    swt_write_str(path, "MAXLEN=262144\nSEQS=2\nKV_BYTES=7.3e9\nMNBT=1024\n");
    in = fopen(swt_src("examples/frank-small.env"), "r");
    assert_non_null(in);
    len = fread(text, 1, sizeof(text) - 1, in);
    fclose(in);
    text[len] = 0;
    snprintf(path, sizeof(path), "%s", swt_join(f->dir, "frank-small.env"));
    swt_write_str(path, text);
    snprintf(path, sizeof(path), "%s", swt_join(f->dir, "operator.yaml"));
    swt_write_str(path, out);
    const char *precise[] = {"kv_cache_dtype=auto", NULL};
    check_gate(path, f->led, precise, "fail", "0.13 GiB free at capture");
}

/* `slipway calibrate` shows the headroom fit (human view and --json). */
static void test_calibrate_cli(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    swt_slipway(&r, "calibrate", "frank-primary", "--fleet", swt_src("examples/operator.yaml"),
                "--ledger", f->led, NULL);
    swt_out_has(&r, 0, "capture, pinned pools: 0.000..0.384 GiB per sequence",
                "fp8-5x262144: overdrawn, -0.40..-0.40 GiB free at capture",
                "engine-sized pool, auto x 3 at utilization 0.98", NULL);
    swt_slipway(&r, "calibrate", "frank-primary", "--fleet", swt_src("examples/operator.yaml"),
                "--ledger", f->led, "--json", NULL);
    json_t *j = swt_json_out(&r);
    json_t *h = json_object_get(j, "headroom");
    if (!h)
        h = json_object_get(json_object_get(j, "fit"), "headroom");
    assert_true(json_is_true(json_object_get(h, "consistent")));
    assert_int_equal(json_array_size(json_object_get(h, "boots")), 15);
    json_decref(j);
    swt_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_budget_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fit_reproduces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calibrate_cli, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
