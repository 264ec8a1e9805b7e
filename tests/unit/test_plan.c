/*
 * plan/: sw_plan_endpoint is the one plan of an endpoint (the argv the engine adapter renders, the
 * law's breakdown, the predicted report, the ledger shape), for a fleet endpoint and for a
 * verbatim command line; sw_plan_boot_shape takes llama-server's defaults from the law's argv
 * reader, not from a caller's table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/fleet.h>
#include <slipway/memory.h>
#include <slipway/plan.h>

#include <string.h>

static const char fleet_text[] = "version: 1\n"
                                 "hosts:\n"
                                 "  h:\n"
                                 "    transport: local\n"
                                 "    devices:\n"
                                 "      cpu: {kind: cpu, vendor: cpu}\n"
                                 "endpoints:\n"
                                 "  decl:\n"
                                 "    host: h\n"
                                 "    engine: llama.cpp\n"
                                 "    binary: /nonexistent/llama-server\n"
                                 "    listen: 127.0.0.1:18081\n"
                                 "    payload:\n"
                                 "      path: /nonexistent/qwen35-9b-Q4_K_M.gguf\n"
                                 "      quantization: Q4_K_M\n"
                                 "    arch: {arch: qwen35, vocab_size: 248320, context_length: "
                                 "262144, embedding_length: 4096, block_count: 32, "
                                 "feed_forward_length: 12288, attention.head_count: 16, "
                                 "attention.head_count_kv: 4, attention.key_length: 256, "
                                 "attention.value_length: 256, ssm.conv_kernel: 4, "
                                 "ssm.inner_size: 4096, ssm.state_size: 128, ssm.group_count: "
                                 "16, ssm.time_step_rank: 32, weights: {total: 5GiB}}\n"
                                 "    shape: {ctx_size: 16384, seqs: 2, cache_type_v: q8_0}\n";

static struct sw_fleet *load(void)
{
    return swt_fleet_text("p.yaml", fleet_text);
}

/* A fleet endpoint: the adapter's argv, the law over it (from the declared arch: the GGUF is not
 * here), the predicted report and the fleet-vocabulary shape, in one call. */
static void test_fleet_endpoint(void **state)
{
    (void)state;
    struct sw_fleet *f = load();
    struct sw_plan p;
    struct sw_err e;
    sw_err_clear(&e);
    swt_plan(f, "decl", &p);
    assert_int_equal(p.engine, SW_FLEET_LLAMACPP);
    assert_string_equal(p.cmd.argv[0], "/nonexistent/llama-server");
    assert_int_equal(p.llamacpp->report.n_ctx, 16384);
    assert_int_equal(p.llamacpp->n_slots, 2);
    assert_non_null(p.arch);
    assert_int_equal(json_integer_value(json_object_get(p.predicted, "n_ctx")), 16384);
    json_t *kv0 = json_array_get(json_object_get(p.predicted, "kv_caches"), 0);
    assert_string_equal(json_string_value(json_object_get(kv0, "v_type")), "q8_0");
    assert_string_equal(json_string_value(json_object_get(p.shape, "engine")), "llama.cpp");
    assert_int_equal(json_integer_value(json_object_get(p.shape, "ctx")), 16384);
    const char *name =
        json_string_value(json_object_get(json_object_get(p.shape, "model"), "name"));
    assert_non_null(name);
    assert_int_equal(strncmp(name, "qwen35-9b", 9), 0);
    sw_plan_free(&p);
    sw_fleet_free(f);
}

/* A verbatim command line with no endpoint: the model is not here and nothing declares it, so the
 * law cannot run (said, with the path); the argv was still read, and the boot shape makes
 * llama-server's defaults explicit from the law's argv reader. */
static void test_verbatim_boot_shape(void **state)
{
    (void)state;
    static const char *const argv[] = {
        "llama-server", "-m", "/nonexistent/m.gguf", "-c", "8192", "-np", "2", "-ngl", "0"};
    struct sw_plan_overrides ov = {.argv = argv, .argc = 9, .regular_files_only = true};
    struct sw_plan p;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_plan_endpoint(NULL, NULL, &ov, &p, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/m.gguf is not a regular file"));
    assert_null(p.predicted);

    struct sw_llamacpp_args def;
    sw_llamacpp_args_init(&def);
    json_t *s = sw_plan_boot_shape(&p, NULL);
    assert_non_null(s);
    assert_int_equal(json_integer_value(json_object_get(s, "ctx")), 8192);
    assert_int_equal(json_integer_value(json_object_get(s, "slots")), 2);
    assert_int_equal(json_integer_value(json_object_get(s, "batch")), def.n_batch);
    assert_int_equal(json_integer_value(json_object_get(s, "ubatch")), def.n_ubatch);
    assert_int_equal(json_integer_value(json_object_get(s, "gpu_layers")), 0);
    assert_string_equal(json_string_value(json_object_get(s, "kv_dtype_k")), "f16");
    json_t *flags = json_object_get(s, "flags");
    assert_string_equal(json_string_value(json_object_get(flags, "flash_attn")), "auto");
    assert_true(json_is_false(json_object_get(flags, "swa_full")));
    json_decref(s);

    /* what the engine printed wins where it printed it */
    json_t *printed = json_pack("{s:I,s:b,s:[{s:s,s:s}]}", "n_seq_max", (json_int_t)4, "kv_unified",
                                1, "kv_caches", "k_type", "q8_0", "v_type", "q8_0");
    s = sw_plan_boot_shape(&p, printed);
    assert_int_equal(json_integer_value(json_object_get(s, "slots")), 4);
    assert_string_equal(json_string_value(json_object_get(s, "kv_dtype_v")), "q8_0");
    assert_true(json_is_true(json_object_get(json_object_get(s, "flags"), "kv_unified")));
    json_decref(s);
    json_decref(printed);
    sw_plan_free(&p);

    /* nothing to plan */
    assert_int_equal(sw_plan_endpoint(NULL, NULL, NULL, &p, &e), SW_EINVAL);
    sw_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet_endpoint),
        cmocka_unit_test(test_verbatim_boot_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
