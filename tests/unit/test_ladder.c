/*
 * ladder: the search itself (src/tune/ladder.c), driven by a runner that answers like the night
 * ladder's hardware did (a max_model_len above 241,664 dies at graph capture, one value is a
 * compile constraint), on the operator's frank-primary with the night ladder's shape (bf16 KV,
 * 3 sequences, the engine sizing the pool; utilization 0.95) and a real ledger. What it checks:
 * bisection on the grid, the boots counted, every rung recorded with its knob, value and class,
 * a rerun resuming from the recorded rungs (no value booted twice), a value `check` refuses
 * costing no boot, the engine's own estimate becoming the next rung, the classifier, and (on
 * the seed without the night ladder's boots) predict-then-confirm: the prior's point first, then
 * a walk from it.
 *
 * The end-to-end ladders (the sim's frank-primary, a real llama-server under a memory limit) are
 * tests/real/test_ladder.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ladder.h>
#include <slipway/ledger.h>

#include "swledger.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct fx {
    char *dir;
    struct sw_fleet *fleet;
    struct sw_fleet_endpoint *ep;
    struct sw_ledger led;
};

/* The world the runner answers from. */
struct world {
    int64_t max_ok;      /* the largest value that survives */
    int64_t compile_bad; /* a value that never compiles (0: none) */
    bool kv_refusal;     /* fail as vLLM's KV check does, naming its estimate */
    int boots;
    int64_t seen[64];
};

static int world_run(void *ctx, const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                     enum sw_ladder_knob knob, int64_t value, struct sw_ladder_outcome *out,
                     struct sw_err *e)
{
    struct world *w = ctx;
    (void)f;
    (void)e;
    assert_int_equal(knob, SW_LADDER_MAX_MODEL_LEN);
    /* the runner sees the rung's value on the endpoint it boots */
    assert_int_equal((int64_t)ep->shape.max_model_len.v, value);
    for (int i = 0; i < w->boots; i++)
        if (w->seen[i] == value)
            fail_msg("value %lld booted twice", (long long)value);
    if (w->boots < 64)
        w->seen[w->boots] = value;
    w->boots++;
    out->booted = true;
    if (value == w->compile_bad) {
        out->cls = SW_LADDER_COMPILE;
        snprintf(out->detail, sizeof(out->detail), "Constraints violated");
    } else if (value <= w->max_ok) {
        out->cls = SW_LADDER_PASS;
        snprintf(out->detail, sizeof(out->detail), "booted; worst case passed");
    } else if (w->kv_refusal) {
        out->cls = SW_LADDER_KV_REFUSED;
        out->engine_max = w->max_ok + 1000; /* the engine's estimate, off the grid */
        snprintf(out->detail, sizeof(out->detail), "estimated maximum model length is %lld",
                 (long long)out->engine_max);
    } else {
        out->cls = SW_LADDER_CAPTURE_OOM;
        snprintf(out->detail, sizeof(out->detail), "Tried to allocate 76.00 MiB ... 0 bytes free");
    }
    return 0;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct sw_err e;
    sw_core_init();
    f->dir = swt_tmpdir();
    f->fleet = swt_fleet("examples/operator.yaml");
    f->ep = (struct sw_fleet_endpoint *)sw_fleet_endpoint(f->fleet, "frank-primary");
    assert_non_null(f->ep);
    /* the night ladder's shape, at a utilization the fleet recorded no boot of (its own
     * 0.98 boots would be known-bad shapes the gates refuse: the world here is the runner's) */
    const char *sets[] = {"kv_cache_bytes=null", "kv_cache_dtype=auto",
                          "gpu_memory_utilization=0.95"};
    for (size_t i = 0; i < 3; i++)
        if (sw_gate_set(f->ep, sets[i], &e))
            fail_msg("%s: %s", sets[i], e.msg);
    assert_int_equal(sw_ledger_open(&f->led, swt_join(f->dir, "l.sqlite"), NULL, &e), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sw_ledger_close(&f->led);
    sw_fleet_free(f->fleet);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static void opts_for(struct fx *f, struct world *w, struct sw_ladder_opts *o, int max_boots)
{
    memset(o, 0, sizeof(*o));
    o->knob = SW_LADDER_MAX_MODEL_LEN;
    o->max_boots = max_boots;
    o->ledger = &f->led;
    o->run = world_run;
    o->run_ctx = w;
    o->progress = stderr;
}

static void test_bisect_and_resume(void **state)
{
    struct fx *f = *state;
    struct world w = {.max_ok = 241664};
    struct sw_ladder_opts o;
    struct sw_ladder_result *r = calloc(1, sizeof(*r));
    struct sw_err e;
    int64_t before = (int64_t)f->ep->shape.max_model_len.v;

    /* the fleet's knob: 131072..262144 step 4096, 33 values; no law without a capacity */
    opts_for(f, &w, &o, 3);
    assert_int_equal(sw_ladder_run(f->fleet, f->ep, &o, r, &e), 0);
    assert_int_equal(r->min, 131072);
    assert_int_equal(r->max, 262144);
    assert_int_equal(r->step, 4096);
    assert_false(r->law);
    assert_int_equal(r->boots, 3);
    assert_int_equal(w.boots, 3);
    assert_false(r->converged);
    assert_string_equal(r->label, "frank-primary/max_model_len");
    /* the first rung is the median of the grid: halving 33 values */
    assert_int_equal(r->rungs[0].value, 131072 + 16 * 4096);
    /* the endpoint is given back as it was */
    assert_int_equal((int64_t)f->ep->shape.max_model_len.v, before);
    int64_t good = r->answer, bad = r->bad;
    assert_true(good < 0 || good <= 241664);
    assert_true(bad < 0 || bad > 241664);

    /* every rung is in the ledger with its knob, value and class */
    json_t *rows = NULL;
    assert_int_equal(sw_ledger_rungs(&f->led, "frank-primary", r->label, &rows, &e), 0);
    assert_int_equal(json_array_size(rows), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *row = json_array_get(rows, i);
        assert_string_equal(json_string_value(json_object_get(row, "knob")), "max_model_len");
        assert_int_equal(json_integer_value(json_object_get(row, "value")), r->rungs[i].value);
        assert_string_equal(json_string_value(json_object_get(row, "class")),
                            sw_ladder_class_name(r->rungs[i].cls));
        assert_string_equal(json_string_value(json_object_get(row, "outcome")),
                            r->rungs[i].cls == SW_LADDER_PASS ? "pass" : "fail");
        assert_true(json_is_object(json_object_get(row, "evidence")));
    }
    json_decref(rows);

    /* a rerun continues: the three recorded rungs are read back, nothing is booted twice
     * (world_run fails on a repeat), and it converges on 241,664 */
    opts_for(f, &w, &o, 8);
    assert_int_equal(sw_ladder_run(f->fleet, f->ep, &o, r, &e), 0);
    assert_true(r->rungs[0].resumed && r->rungs[1].resumed && r->rungs[2].resumed);
    assert_false(r->rungs[3].resumed);
    assert_int_equal(r->rungs[3].n, 4);
    assert_true(r->converged);
    assert_int_equal(r->answer, 241664);
    assert_int_equal(r->bad, 245760);
    /* bisection over 33 values: at most ceil(log2(34)) = 6 boots in all */
    assert_true(r->boots_total <= 6);
    assert_int_equal(r->boots_total, w.boots);
    free(r);
}

static void test_compile_skips_one_value(void **state)
{
    struct fx *f = *state;
    /* 245,760 survives, 249,856 does not; 245,760 never compiles: the answer is the value
     * below it, and the bound above stays 249,856 (a compile constraint is not a size bound) */
    struct world w = {.max_ok = 245760, .compile_bad = 245760};
    struct sw_ladder_opts o;
    struct sw_ladder_result *r = calloc(1, sizeof(*r));
    struct sw_err e;
    opts_for(f, &w, &o, 12);
    o.label = "compile";
    assert_int_equal(sw_ladder_run(f->fleet, f->ep, &o, r, &e), 0);
    assert_true(r->converged);
    assert_int_equal(r->answer, 241664);
    assert_int_equal(r->bad, 249856);
    bool saw = false;
    for (int i = 0; i < r->n; i++)
        saw |= r->rungs[i].value == 245760 && r->rungs[i].cls == SW_LADDER_COMPILE;
    assert_true(saw);
    free(r);
}

static void test_check_refusal_costs_no_boot(void **state)
{
    struct fx *f = *state;
    struct world w = {.max_ok = 241664};
    struct sw_ladder_opts o;
    struct sw_ladder_result *r = calloc(1, sizeof(*r));
    struct sw_err e;
    int64_t id = 0;
    /* the operator's rule: nothing past 200,704 on this endpoint */
    struct sw_ledger_rule_rec rule = {.endpoint = "frank-primary",
                                      .expr = "max_model_len > 200704",
                                      .reason = "graph capture OOM above 200,704",
                                      .source = "operator"};
    assert_int_equal(sw_ledger_record_rule(&f->led, &rule, &id, &e), 0);
    opts_for(f, &w, &o, 8);
    o.label = "refused";
    assert_int_equal(sw_ladder_run(f->fleet, f->ep, &o, r, &e), 0);
    int refused = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->rungs[i].cls == SW_LADDER_REFUSED) {
            refused++;
            assert_false(r->rungs[i].booted);
            assert_true(r->rungs[i].value > 200704);
        }
    }
    assert_true(refused >= 1);
    /* no boot was spent above the rule's line */
    for (int i = 0; i < w.boots; i++)
        assert_true(w.seen[i] <= 200704);
    assert_int_equal(r->answer, 200704);
    assert_int_equal(r->boots, w.boots);
    free(r);
}

static void test_engine_estimate(void **state)
{
    struct fx *f = *state;
    /* vLLM's KV refusal names the largest max_model_len its pool holds: the next rung is that
     * value on the grid, not the midpoint */
    struct world w = {.max_ok = 241664, .kv_refusal = true};
    struct sw_ladder_opts o;
    struct sw_ladder_result *r = calloc(1, sizeof(*r));
    struct sw_err e;
    opts_for(f, &w, &o, 8);
    o.label = "estimate";
    o.min = 237568; /* 7 values: the first rung is their median, 249,856 */
    o.max = 262144;
    assert_int_equal(sw_ladder_run(f->fleet, f->ep, &o, r, &e), 0);
    assert_int_equal(r->rungs[0].cls, SW_LADDER_KV_REFUSED);
    assert_int_equal(r->rungs[1].value, 241664);
    assert_int_equal(r->answer, 241664);
    assert_true(r->converged);
    assert_int_equal(r->boots, 3); /* refused, the estimate, the step above it */
    free(r);
}

static void test_classify(void **state)
{
    (void)state;
    json_t *j = json_pack("{s:s,s:s}", "class", "oom", "phase", "graph_capture");
    assert_int_equal(sw_ladder_classify(j), SW_LADDER_CAPTURE_OOM);
    json_object_set_new(j, "phase", json_string("kv_alloc"));
    assert_int_equal(sw_ladder_classify(j), SW_LADDER_BOOT_OOM);
    json_object_set_new(j, "phase", json_string("runtime"));
    assert_int_equal(sw_ladder_classify(j), SW_LADDER_RUNTIME_OOM);
    json_object_set_new(j, "class", json_string("kv_too_small"));
    assert_int_equal(sw_ladder_classify(j), SW_LADDER_KV_REFUSED);
    json_object_set_new(j, "class", json_string("compile_constraint"));
    assert_int_equal(sw_ladder_classify(j), SW_LADDER_COMPILE);
    json_object_set_new(j, "class", json_string("bad_path"));
    assert_int_equal(sw_ladder_classify(j), SW_LADDER_OTHER);
    json_decref(j);
    enum sw_ladder_knob k;
    assert_int_equal(sw_ladder_knob_parse("ctx", &k), 0);
    assert_int_equal(k, SW_LADDER_CTX_SIZE);
    assert_int_equal(sw_ladder_knob_parse("bogus", &k), SW_EINVAL);
}

/*
 * Predict, then confirm. The ladder knows the seed WITHOUT the night ladder's four boots (its
 * ledger, and the fleet file with their records cut out), and the shape is the night ladder's
 * (bf16, 3 seqs, engine-sized pool, utilization 0.98): no boot of that class is recorded, so the
 * prediction is the prior (the law's contract against the free the pinned-pool boots' KV
 * allocation failures leave). Its point is the first rung, and the ladder walks from it; the
 * runner answers as the world chosen does, so a prediction a step off, or far off, is seen too.
 */
static void ladder_world(const char *dir, const char *fleet_text, const json_t *prior,
                         int64_t max_ok, struct sw_ladder_result *r, struct world *w)
{
    char path[4200];
    struct sw_err e;
    struct sw_fleet *fl = NULL;
    struct sw_ledger led;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    snprintf(path, sizeof(path), "%s/operator.yaml", dir);
    swt_write_str(path, fleet_text);
    if (sw_fleet_load(path, &fo, &fl, &e))
        fail_msg("%s", e.msg);
    struct sw_fleet_endpoint *ep =
        (struct sw_fleet_endpoint *)sw_fleet_endpoint(fl, "frank-primary");
    assert_non_null(ep);
    const char *sets[] = {"kv_cache_bytes=null", "kv_cache_dtype=auto", "seqs=3",
                          "gpu_memory_utilization=0.98"};
    for (size_t i = 0; i < 4; i++)
        if (sw_gate_set(ep, sets[i], &e))
            fail_msg("%s: %s", sets[i], e.msg);
    snprintf(path, sizeof(path), "%s/ladder-%lld.sqlite", dir, (long long)max_ok);
    assert_int_equal(sw_ledger_open(&led, path, NULL, &e), 0);
    struct sw_ledger_import_stats st;
    memset(&st, 0, sizeof(st));
    if (sw_ledger_import(&led, prior, "prior.json", &st, &e))
        fail_msg("import: %s", e.msg);
    memset(w, 0, sizeof(*w));
    w->max_ok = max_ok;
    struct sw_ladder_opts o;
    memset(&o, 0, sizeof(o));
    o.knob = SW_LADDER_MAX_MODEL_LEN;
    o.ledger = &led;
    o.run = world_run;
    o.run_ctx = w;
    o.progress = stderr;
    if (sw_ladder_run(fl, ep, &o, r, &e))
        fail_msg("ladder: %s", e.msg);
    sw_ledger_close(&led);
    sw_fleet_free(fl);
}

static void test_predict_then_confirm(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char path[4200];
    sw_core_init();
    /* the payload's config.json, for the vLLM law */
    char *b = swt_operator_local(dir);
    /* the night ladder's records cut out of the fleet */
    const char *from = "      - shape: {kv_cache_dtype: auto, seqs: 3, max_model_len: 245760, "
                       "gpu_memory_utilization: 0.98}";
    const char *until = "      - shape: {kv_cache_dtype: fp8, seqs: 6, max_model_len: 241664}";
    char *c0 = strstr(b, from), *c1 = c0 ? strstr(c0, until) : NULL;
    assert_non_null(c1);
    memmove(c0, c1, strlen(c1) + 1);
    char *envs[] = {"frank-primary.env", "frank-small.env"};
    for (int i = 0; i < 2; i++) {
        char src[512];
        snprintf(src, sizeof(src), "examples/%s", envs[i]);
        snprintf(path, sizeof(path), "%s/%s", dir, envs[i]);
        swt_copy(swt_src(src), path);
    }
    /* the seed without the night ladder's boots */
    json_t *seed = swl_seed_before_night();

    struct sw_ladder_result *r = calloc(1, sizeof(*r));
    struct world w;
    /* the seed's world: the prior's point is 237,568 (it predicts 241,664 to fail: one grid
     * step short), the walk confirms 241,664 and 245,760's failure */
    ladder_world(dir, b, seed, 241664, r, &w);
    assert_true(r->headroom);
    assert_int_equal(r->pred_point, 237568);
    assert_int_equal(r->n, 3);
    assert_int_equal(r->rungs[0].value, 237568);
    assert_int_equal(r->rungs[1].value, 241664);
    assert_int_equal(r->rungs[2].value, 245760);
    assert_int_equal(r->boots, 3);
    assert_int_equal(w.boots, 3);
    assert_int_equal(r->answer, 241664);
    assert_int_equal(r->bad, 245760);
    assert_true(r->converged);
    /* a world whose edge is below the point: the walk goes down from the failed point */
    ladder_world(dir, b, seed, 229376, r, &w);
    assert_int_equal(r->rungs[0].value, 237568);
    assert_int_equal(r->rungs[1].value, 233472);
    assert_int_equal(r->answer, 229376);
    assert_true(r->converged);
    assert_int_equal(r->boots, 3);
    /* far above: the walk gallops (1, 1, 2, 4 steps) and then halves; every value once */
    ladder_world(dir, b, seed, 258048, r, &w);
    assert_int_equal(r->answer, 258048);
    assert_int_equal(r->bad, 262144);
    assert_true(r->converged);
    assert_true(r->boots <= 6);
    free(r);
    json_decref(seed);
    free(b);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bisect_and_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compile_skips_one_value, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_refusal_costs_no_boot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_estimate, setup, teardown),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_predict_then_confirm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
