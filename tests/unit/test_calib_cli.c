/*
 * slipway calibrate: the verb over a ledger imported from the seed fixture; human view, --json,
 * --predict, --exclude, --budget, --save, and the exit codes (0 fitted, 1 nothing fit or
 * inconsistent, 2 unusable input).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swtest.h"

#include <stdio.h>
#include <string.h>

struct fx {
    char *dir;
    char led[4096];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->dir = swt_tmpdir();
    snprintf(f->led, sizeof(f->led), "%s", swt_join(f->dir, "seed.sqlite"));
    swl_cli_import_seed(f->led);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static void test_human(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--config",
                swt_src("tests/data/vllm/models/frank-primary-inferred"), "--predict", "241664:6e9",
                NULL);
    assert_int_equal(r.status, 0);
    swt_has_all("stdout", r.out, "KV class kv=fp8 tp=2",
                "extra_attn_bytes_per_token 64..64, extra_mamba_blocks 1..1", NULL);
    assert_non_null(
        strstr(r.out, "printed 398,658 tokens, 1.99x; fit 398,658 (1.99x), residual 0"));
    swt_has_all("stdout", r.out, "EXTRAPOLATES across geometry", "expert arena", NULL);
    assert_non_null(strstr(r.out, "fork KV terms over the 2 KV classes the config explains: "
                                  "extra_attn_bytes_per_token 64..64, extra_mamba_blocks 1..1"));
    swt_run_free(&r);
    /* the pool that holds a contract, for every solution */
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--need", "3x262144",
                "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *n = json_array_get(json_object_get(j, "needs"), 0);
    assert_string_equal(json_string_value(json_object_get(n, "class")), "kv=fp8 tp=2");
    /* 3 x 93 blocks at the largest stride of the set; 6.1e9 bought 3.02x */
    assert_true(json_integer_value(json_object_get(n, "kv_bytes_hi")) <= 6100000000);
    assert_false(json_is_true(json_object_get(n, "extrapolated")));
    json_decref(j);
    swt_run_free(&r);
}

static void test_json_exclude(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    /* boot 4 is the 200,704 one in the seed's order */
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--exclude", "4", "--predict",
                "200704:3150000000", "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_t *p = json_array_get(json_object_get(j, "predictions"), 0);
    assert_string_equal(json_string_value(json_object_get(p, "class")), "kv=fp8 tp=2");
    json_t *t = json_object_get(p, "tokens");
    assert_true(json_integer_value(json_object_get(t, "lo")) <= 398658);
    assert_true(json_integer_value(json_object_get(t, "hi")) >= 398658);
    assert_true(json_is_true(json_object_get(p, "extrapolated")));
    assert_non_null(strstr(json_string_value(json_object_get(p, "warning")), "EXTRAPOLATES"));
    json_decref(j);
    swt_run_free(&r);
}

/* --svg: per KV class, the printed boots beside the fit, the prediction with its interval;
 * the interval's whisker spans exactly what --json says (312,925..409,888 on the y scale is not
 * checked, the values are: each bar carries its number in a title). */
static void test_svg(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    const char *svg = swt_join(f->dir, "calib.svg");
    swt_slipway_exits(0, "calibrate", "frank-primary", "--ledger", f->led, "--exclude", "4",
                      "--predict", "200704:3150000000", "--svg", svg, NULL);
    char *text = NULL;
    size_t n = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(svg, 1 << 22, &text, &n, &e), 0);
    swt_has_all("text", text, "frank-primary: vllm KV class kv=fp8 tp=2",
                "fitted on max_model_len 262144", NULL);
    /* the three fitted fp8 boots, printed and fit equal (residual 0) */
    swt_has_all("text", text, "<title>printed: 1079582.00</title>",
                "<title>fit / prediction: 1079582.00</title>", "<title>printed: 792069.00</title>",
                NULL);
    /* the prediction across geometry, labelled as such, with a whisker */
    swt_has_all("text", text, ">EXTRAP. 200704</tspan>", ">3.15e9 B</tspan>", "<path d=\"M", NULL);
    sw_free(text);
    /* a path that cannot be written: exit 1 or 2 with the flag named, nothing left */
    const char *bad = swt_join(f->dir, "no/such/dir/c.svg");
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--svg", bad, NULL);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "--svg"));
    swt_run_free(&r);
}

static void test_budget_save(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    const char *shape = swt_join(f->dir, "shape.json");
    swt_write_str(shape, "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"MiMo-V2.6-Distill-Qwen-"
                         "9B\",\"quant\":\"Q5_K_M\"},\"ctx_size\":589824,\"parallel\":3,"
                         "\"cache_type_k\":\"f16\",\"cache_type_v\":\"q8_0\",\"flags\":{\"mmproj\":"
                         "{\"name\":\"mmproj-MiMo-V2.6-Distill-Qwen-9B-f16.gguf\",\"size\":"
                         "918166048}}}");
    const char *save = swt_join(f->dir, "fit.json");
    swt_slipway(&r, "calibrate", "frank-small", "--ledger", f->led, "--config",
                swt_src("tests/data/calib/frank-small-config.json"), "--budget", shape, "--save",
                save, NULL);
    swt_out_has(&r, 0, "20190 used - 12644.50 KV = 7545.50 MiB non-KV",
                "free 1153 MiB (1153..1153) [measured]", NULL);
    json_t *j = json_load_file(save, 0, NULL);
    assert_non_null(j);
    assert_true(json_array_size(json_object_get(j, "non_kv")) == 2);
    json_decref(j);
    /* --record: the fit's summary lands as a note on the endpoint */
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--record", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recorded as note #"));
    swt_run_free(&r);
    swt_slipway(&r, "ledger", "export", "--endpoint", "frank-primary", "--ledger", f->led, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "slipway calibrate frank-primary: KV kv=fp8 tp=2 over "
                                  "max_model_len 262144,200704 (4 boots, residual 0): 15 "
                                  "solutions"));
    swt_run_free(&r);
}

static void test_exit_codes(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    swt_slipway(&r, "calibrate", "frank-nowhere", "--ledger", f->led, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "frank-nowhere"));
    swt_run_free(&r);
    swt_slipway_exits(2, "calibrate", "frank-primary", "--ledger", swt_join(f->dir, "none.sqlite"),
                      NULL);
    swt_slipway_exits(2, "calibrate", NULL);
    swt_slipway_exits(2, "calibrate", "frank-primary", "--ledger", f->led, "--predict", "abc",
                      NULL);
    /* frank-small without an arch: readings cannot be priced, nothing fit */
    swt_slipway(&r, "calibrate", "frank-small", "--ledger", f->led, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "nothing to fit"));
    swt_run_free(&r);
    /* a contradictory boot: exit 1 and the boot named */
    const char *doc = swt_join(f->dir, "bad.json");
    swt_write_str(doc,
                  "{\"boots\":[{\"endpoint\":\"frank-primary\",\"engine\":\"vllm\","
                  "\"shape\":{\"engine\":\"vllm\",\"engine_profile\":\"tiered-expert-offload\","
                  "\"model\":{\"name\":\"Qwen3.8-Flash-Next-Uncensored-FP8\",\"quant\":\"fp8\"},"
                  "\"tp\":2,\"kv_dtype\":\"fp8\",\"slots\":3,\"ctx\":262144,"
                  "\"kv_bytes\":7000000000},\"report\":{\"kv_cache_tokens\":700000},"
                  "\"source\":\"by hand\"}]}");
    swt_slipway_exits(0, "ledger", "import", doc, "--ledger", f->led, NULL);
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, NULL);
    swt_out_has(&r, 1, "INCONSISTENT", "contradicts", NULL);
}

/* SGLang: the seed's two SGLang figures as boots; the autofit held out is open above. */
static void test_sglang(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    char led[4096];
    snprintf(led, sizeof(led), "%s", swt_join(f->dir, "sg.sqlite"));
    swt_slipway_exits(0, "ledger", "import", swt_src("tests/data/ledger/seed-sglang.json"),
                      "--ledger", led, NULL);
    swt_slipway(&r, "calibrate", "frank-primary-sglang", "--fleet",
                swt_src("examples/operator.yaml"), "--ledger", led, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "rest 11.27 GiB at mem_fraction_static 0.847"));
    assert_non_null(strstr(r.out, "predict declared: 606,208..606,208 tokens, 32 mamba slots, "
                                  "free after boot 531..532 MiB"));
    assert_non_null(strstr(r.out, "predict autofit: 687,388..687,388 tokens, 32 mamba slots, "
                                  "free after boot -737..-736 MiB: WOULD OOM"));
    swt_run_free(&r);
    swt_slipway(&r, "calibrate", "frank-primary-sglang", "--fleet",
                swt_src("examples/operator.yaml"), "--ledger", led, "--exclude", "2", "--json",
                NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *sg = json_object_get(j, "sglang");
    assert_false(json_is_true(json_object_get(sg, "rest_fitted")));
    json_t *p = json_array_get(json_object_get(sg, "predictions"), 1);
    assert_string_equal(json_string_value(json_object_get(p, "shape")), "autofit");
    assert_true(json_is_true(json_object_get(p, "tokens_open")));
    assert_true(json_integer_value(json_object_get(p, "tokens_lo")) <= 687388);
    json_decref(j);
    swt_run_free(&r);
}

/* Contexts: a prediction for a context no fitted boot ran in warns; the root unit vs the
 * rootless probe of one shape. */
static void test_contexts(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    swt_slipway_exits(0, "ledger", "import", swt_src("tests/data/ledger/seed-contexts.json"),
                      "--ledger", f->led, NULL);
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--predict",
                "262144:6100000000", "--context", "user=root", NULL);
    swt_out_has(&r, 0, "EXTRAPOLATES across context: user=root was not fitted",
                "user=rootless: 1 boot", ">= +0.823 GiB/rank", NULL);
    swt_slipway(&r, "calibrate", "frank-primary", "--ledger", f->led, "--predict",
                "262144:6100000000", "--context",
                "expert_path=pinned host=dankserver runtime=podman user=root", NULL);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "EXTRAPOLATES across context"));
    swt_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(test_human, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_exclude, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_save, setup, teardown),
        cmocka_unit_test_setup_teardown(test_svg, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sglang, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contexts, setup, teardown),
    };
    return cmocka_run_group_tests_name("calib_cli", t, NULL, NULL);
}
