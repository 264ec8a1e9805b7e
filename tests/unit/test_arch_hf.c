/*
 * model/arch_hf: config.json -> struct sw_arch for the fixture models (hybrid GDN, MLA, sliding
 * window, KV sharing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/arch.h>
#include <slipway/hf.h>

#include "swtest.h"

#include <string.h>

static struct sw_hf_config C;

static struct sw_arch *arch_of(const char *rel)
{
    struct sw_err e;
    struct sw_arch *a = NULL;
    if (sw_hf_config_load(swt_src(rel), &C, &e) || sw_arch_from_hf(&C, &a, &e))
        fail_msg("%s: %s", rel, e.msg);
    return a;
}

static void test_hybrid_gdn(void **state)
{
    struct sw_arch *a = arch_of("tests/data/vllm/models/qwen3.6-35b-a3b");
    assert_string_equal(a->name, "qwen35moe");
    assert_int_equal(a->n_layer, 40);
    assert_int_equal(a->n_attn_layers, 10);
    assert_int_equal(a->n_recr_layers, 30);
    assert_int_equal(a->layers[3].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[0].recr, SW_RECR_GDN);
    assert_int_equal(a->layers[3].k_width, 2 * 256);
    assert_int_equal(a->ssm.linear_num_value_heads, 32);
    assert_int_equal(a->ssm.n_group, 16);
    assert_int_equal(a->moe.n_expert, 256);
    sw_arch_free(a);
}

static void test_mla(void **state)
{
    struct sw_arch *a = arch_of("tests/data/vllm/models/deepseek-v2-lite");
    assert_string_equal(a->name, "deepseek2");
    assert_true(a->mla.on);
    assert_int_equal(a->layers[0].k_width, 576);
    assert_int_equal(a->layers[0].v_width, 0);
    assert_int_equal(a->n_attn_layers, 27);
    sw_arch_free(a);
}

static void test_sliding_and_sharing(void **state)
{
    const char *g = "{\"model_type\":\"gemma3n_text\",\"num_hidden_layers\":10,"
                    "\"num_attention_heads\":8,\"num_key_value_heads\":2,\"head_dim\":256,"
                    "\"sliding_window\":512,\"sliding_window_pattern\":5,"
                    "\"num_kv_shared_layers\":4}";
    struct sw_err e;
    struct sw_arch *a = NULL;
    assert_int_equal(sw_hf_config_parse(g, strlen(g), "g", &C, &e), 0);
    assert_int_equal(sw_arch_from_hf(&C, &a, &e), 0);
    assert_int_equal(a->n_swa, 512);
    assert_int_equal(a->layers[0].attn, SW_ATTN_SWA);
    assert_int_equal(a->layers[4].attn, SW_ATTN_FULL);
    /* layers 6..9 read earlier layers' KV: 9 (full) reads 4, 8 (sliding) reads 5 */
    assert_false(a->layers[9].has_kv);
    assert_int_equal(a->layers[9].kv_source, 4);
    assert_int_equal(a->layers[8].kv_source, 5);
    assert_int_equal(a->n_attn_layers, 6);
    sw_arch_free(a);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hybrid_gdn),
        cmocka_unit_test(test_mla),
        cmocka_unit_test(test_sliding_and_sharing),
    };
    return cmocka_run_group_tests_name("arch_hf", tests, NULL, NULL);
}
