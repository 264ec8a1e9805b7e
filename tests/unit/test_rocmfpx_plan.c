/*
 * frank-large's ROCmFPX shape planned from a declared architecture (tests/data/rocmfpx/fleet.yaml):
 * one slot at 262,144, f16 KV = 16 full-attention layers x 4 KV heads x 256 x 2 x 2 B = 64 KiB a
 * token = 16 GiB; the Q4_0 MTP head (-md) and the BF16 projector (--mmproj) on the command line;
 * the fork's tensor type declared by the profile, so nothing here guesses its id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/hf.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/vllm.h>

#include "swtest.h"

#include <stdio.h>
#include <string.h>

static bool has_arg(const struct sw_engine_cmd *c, const char *flag, const char *tail)
{
    for (size_t i = 0; i + 1 < c->argc; i++) {
        size_t n = strlen(c->argv[i + 1]), t = strlen(tail);
        if (!strcmp(c->argv[i], flag) && n >= t && !strcmp(c->argv[i + 1] + n - t, tail))
            return true;
    }
    return false;
}

static void test_plan(void **state)
{
    struct sw_err e;
    struct sw_plan p;
    (void)state;
    sw_core_init();
    struct sw_fleet *f = swt_fleet("tests/data/rocmfpx/fleet.yaml");
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "frank-large-rocmfpx");
    swt_plan(f, "frank-large-rocmfpx", &p);
    const json_t *r = p.predicted;
    assert_int_equal(json_integer_value(json_object_get(r, "n_seq_max")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "n_ctx_seq")), 262144);
    const json_t *kv = json_array_get(json_object_get(r, "kv_caches"), 0);
    assert_int_equal(json_integer_value(json_object_get(kv, "layers")), 16);
    int64_t kb = json_integer_value(json_object_get(kv, "k_bytes")) +
                 json_integer_value(json_object_get(kv, "v_bytes"));
    assert_true(kb == 16ll << 30);         /* 16 GiB */
    assert_true(kb / 262144 == 64 * 1024); /* 64 KiB a token */
    assert_true(has_arg(&p.cmd, "--mmproj", "mmproj-Qwen3.8-27B-BF16.gguf"));
    assert_true(has_arg(&p.cmd, "-md", "Qwen3.8-27B-MTP-Q4_0.gguf"));
    assert_true(has_arg(&p.cmd, "-c", "262144"));

    /* The draft (-md, its GGUF not here: the declared draft_arch) and the projector, priced as
     * named lines on the one device:
     *   draft KV     1 layer x 262,144 cells x 4 KV heads x 256 x (K 2 + V 2) B = 1 GiB
     *   draft weights 1,610,612,736 B (fact draft_file: its architecture declares none)
     *   projector    905,969,664 B weights (projector_file) + 268,435,456 B compute
     *                (projector_compute) */
    const struct sw_llamacpp_plan *lp = p.llamacpp;
    assert_true(lp->has_draft);
    assert_true(lp->has_projector);
    assert_int_equal(lp->draft.n_kv, 1);
    assert_int_equal(lp->draft.kv[0].layers, 1);
    assert_int_equal(lp->draft.kv[0].cells, 262144);
    assert_int_equal(lp->draft.n_seq_max, 1);
    const struct sw_llamacpp_device *g = &lp->dev[1];
    assert_string_equal(g->name, "gfx1151");
    assert_true(g->draft_kv == 1ull << 30);
    assert_true(g->draft_weights == 1610612736ull);
    assert_true(g->draft_compute > 0); /* the law's estimate for the draft's own context */
    assert_true(g->projector_weights == 905969664ull);
    assert_true(g->projector_compute == 268435456ull);
    assert_true(g->total == g->weights + g->kv + g->recurrent + g->compute + g->output +
                                g->draft_weights + g->draft_kv + g->draft_compute +
                                g->projector_weights + g->projector_compute);
    assert_true(lp->dev[0].draft_kv == 0); /* nothing on the CPU: -ngld auto offloads it */
    /* --json names them too */
    json_t *j = sw_llamacpp_plan_to_json(lp);
    const json_t *d1 = json_array_get(json_object_get(json_object_get(j, "budget"), "devices"), 1);
    assert_int_equal(json_integer_value(json_object_get(d1, "draft_kv")), 1ll << 30);
    assert_int_equal(json_integer_value(json_object_get(d1, "projector_weights")), 905969664);
    assert_non_null(json_object_get(j, "draft"));
    assert_non_null(json_object_get(j, "projector"));
    json_decref(j);
    sw_plan_free(&p);

    /* a verbatim command line with -ctkd/-ctvd q8_0 (34 B per 32 elements): the draft's KV is
     * 1 x 262,144 x 4 x 256 x 2 x 34/32 B = 544 MiB */
    const char *argv[] = {"llama-server",
                          "-m",
                          "/nonexistent/m.gguf",
                          "-md",
                          "/nonexistent/d.gguf",
                          "-c",
                          "262144",
                          "-np",
                          "1",
                          "-ctkd",
                          "q8_0",
                          "-ctvd",
                          "q8_0"};
    struct sw_plan_overrides ov = {.argv = argv, .argc = SW_ARRAY_LEN(argv)};
    if (sw_plan_endpoint(f, ep, &ov, &p, &e))
        fail_msg("%s", e.msg);
    assert_true(p.llamacpp->has_draft);
    assert_true(p.llamacpp->dev[1].draft_kv == 544ull << 20);
    assert_int_equal(p.llamacpp->draft.kv[0].k_type, SW_KV_Q8_0);
    sw_plan_free(&p);

    /* a draft the law cannot read (here: a YAML file given as -md) leaves the plan standing and
     * says why, with nothing priced for it */
    const char *bad[] = {"llama-server",
                         "-m",
                         "/nonexistent/m.gguf",
                         "-md",
                         swt_src("tests/data/rocmfpx/fleet.yaml"),
                         "-c",
                         "4096"};
    struct sw_plan_overrides ovb = {.argv = bad, .argc = SW_ARRAY_LEN(bad)};
    if (sw_plan_endpoint(f, ep, &ovb, &p, &e))
        fail_msg("%s", e.msg);
    assert_false(p.llamacpp->has_draft);
    bool said = false;
    for (int i = 0; i < p.llamacpp->n_warn; i++)
        said |= strstr(p.llamacpp->warn[i], "the draft model is not priced") != NULL;
    assert_true(said);
    assert_true(p.llamacpp->dev[1].draft_kv == 0);
    sw_plan_free(&p);
    sw_fleet_free(f);
}

static json_t *check(struct sw_fleet *f, const char *name)
{
    struct sw_err e;
    json_t *out = NULL;
    struct sw_gate_opts o = {0};
    sw_err_clear(&e);
    if (sw_gate_endpoint(f, sw_fleet_endpoint(f, name), &o, &out, &e))
        fail_msg("gate %s: %s", name, e.msg);
    return out;
}

static const json_t *band(const json_t *r)
{
    const json_t *gs = json_object_get(r, "gates");
    for (size_t i = 0; i < json_array_size(gs); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(gs, i), "gate")), "band"))
            return json_array_get(gs, i);
    fail_msg("no band gate");
    return NULL;
}

/* A shape that fits its band without the draft is refused with it (tests/data/rocmfpx):
 *   without: 40,960 - (20,480 non-KV + 16,384 KV + 149.62 recurrent) = 3,946.38 MiB free, inside
 *            3..5 GiB
 *   with -md: the same - 1,024 MiB draft KV - the draft's compute estimate: below 2,922.38 MiB,
 *            outside */
static void test_band_refuses_the_draft(void **state)
{
    struct sw_fleet *f = NULL;
    (void)state;
    sw_core_init();
    f = swt_fleet("tests/data/rocmfpx/fleet.yaml");
    json_t *a = check(f, "tight-nodraft"), *b = check(f, "tight-draft");
    const json_t *ga = band(a), *gb = band(b);
    assert_string_equal(json_string_value(json_object_get(ga, "verdict")), "pass");
    assert_string_equal(json_string_value(json_object_get(gb, "verdict")), "fail");
    const json_t *na = json_object_get(ga, "numbers"), *nb = json_object_get(gb, "numbers");
    double fa = json_number_value(json_object_get(na, "free_bytes"));
    double fb = json_number_value(json_object_get(nb, "free_bytes"));
    assert_true(fa ==
                40960.0 * 1048576 - (20480.0 * 1048576 + 16384.0 * 1048576 +
                                     json_number_value(json_object_get(na, "recurrent_bytes"))));
    assert_null(json_object_get(na, "draft_kv_bytes"));
    assert_true(json_number_value(json_object_get(nb, "draft_kv_bytes")) == 1073741824.0);
    double dc = json_number_value(json_object_get(nb, "draft_compute_bytes"));
    assert_true(dc > 0);
    assert_true(fb == fa - 1073741824.0 - dc);
    assert_non_null(strstr(json_string_value(json_object_get(gb, "line")), "draft KV 1,024 MiB"));
    json_decref(a);
    json_decref(b);
    sw_fleet_free(f);
}

/* vLLM MTP: the MTP layer is one more full-attention layer of the same pool (dense-mtp in
 * tests/data/rocmfpx, 1 GiB pinned):
 *   without: 1 GiB / (16 x 4,096 B x 32 layers) = 512 blocks = 8,192 tokens, 131,072 B/token
 *   with:    1 GiB / (16 x 4,096 B x 33 layers) = 496 blocks = 7,936 tokens, 135,168 B/token */
static void test_vllm_mtp(void **state)
{
    struct sw_plan p;
    (void)state;
    sw_core_init();
    struct sw_fleet *f = swt_fleet("tests/data/rocmfpx/fleet.yaml");
    swt_plan(f, "dense-mtp", &p);
    assert_int_equal(p.vllm->kv_cache_tokens, 7936);
    const json_t *d = json_object_get(p.engine_plan, "draft");
    assert_non_null(d);
    assert_int_equal(json_integer_value(json_object_get(d, "draft_layers")), 1);
    assert_int_equal(json_integer_value(json_object_get(d, "kv_cache_tokens_without")), 8192);
    assert_true(json_number_value(json_object_get(d, "bytes_per_token_without")) == 131072.0);
    assert_true(json_number_value(json_object_get(d, "draft_kv_bytes_per_token")) == 4096.0);
    assert_int_equal(json_integer_value(json_object_get(d, "draft_weights_bytes")), 805306368);
    sw_plan_free(&p);
    sw_fleet_free(f);
}

/* vLLM's Qwen3-Next drafter: qwen3_next_mtp.py takes num_mtp_layers = getattr(config,
 * "num_nextn_predict_layers", 1), and Qwen3-Next's config.json does not declare it: one MTP layer
 * (one more full-attention layer in the pool) for method mtp, none without speculative decoding. */
static void test_vllm_qwen3_next_mtp_default(void **state)
{
    static const char cfg[] =
        "{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 8, \"full_attention_interval\": 4,"
        " \"num_attention_heads\": 16, \"num_key_value_heads\": 2, \"head_dim\": 256,"
        " \"hidden_size\": 2048, \"linear_num_key_heads\": 16, \"linear_num_value_heads\": 32,"
        " \"linear_key_head_dim\": 128, \"linear_value_head_dim\": 128,"
        " \"linear_conv_kernel_dim\": 4, \"torch_dtype\": \"bfloat16\","
        " \"max_position_embeddings\": 262144}";
    struct sw_hf_config c;
    struct sw_vllm_opts o;
    struct sw_vllm_spec sp[SW_VLLM_MAX_SPECS];
    struct sw_err e;
    int n = 0, nd = 0, nattn = 0;
    (void)state;
    if (sw_hf_config_parse(cfg, sizeof(cfg) - 1, "cfg", &c, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(c.num_nextn_predict_layers, 0);
    sw_vllm_opts_init(&o);
    snprintf(o.spec_method, sizeof(o.spec_method), "mtp");
    o.num_speculative_tokens = 4;
    if (sw_vllm_specs(&c, &o, 0, sp, &n, &e))
        fail_msg("%s", e.msg);
    for (int i = 0; i < n; i++) {
        nd += sp[i].draft;
        nattn += sp[i].kind == SW_VLLM_FULL;
    }
    assert_int_equal(nd, 1);
    assert_int_equal(nattn, 2 + 1); /* layers 3 and 7, and the MTP layer */
    o.spec_method[0] = '\0';
    o.num_speculative_tokens = 0;
    n = nd = 0;
    if (sw_vllm_specs(&c, &o, 0, sp, &n, &e))
        fail_msg("%s", e.msg);
    for (int i = 0; i < n; i++)
        nd += sp[i].draft;
    assert_int_equal(nd, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_band_refuses_the_draft),
        cmocka_unit_test(test_vllm_mtp),
        cmocka_unit_test(test_vllm_qwen3_next_mtp_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
