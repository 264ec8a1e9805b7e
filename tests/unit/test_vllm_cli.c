/*
 * `slipway plan --engine vllm|sglang`: the binary, end to end, on the fixture model directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <string.h>

static void test_plan_vllm_json(void **state)
{
    char dir[4096], prof[4096];
    snprintf(dir, sizeof(dir), "%s", swt_src("tests/data/vllm/models/frank-primary-inferred"));
    snprintf(prof, sizeof(prof), "%s",
             swt_src("tests/data/vllm/frank-expert-offload-calibrated.json"));
    struct swt_run r;
    swt_slipway(&r, "plan", "--engine", "vllm", "--json", "--profile", prof, "--", "vllm", "serve",
                dir, "-tp", "2", "--max-model-len", "262144", "--kv-cache-dtype", "fp8",
                "--kv-cache-memory-bytes", "6100000000", "--max-num-seqs", "3",
                "--max-num-batched-tokens", "2048", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *rep = json_object_get(j, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "kv_cache_tokens")), 792069);
    assert_true(json_real_value(json_object_get(rep, "max_concurrency")) == 3.02);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "arena"), "slots")),
                     6248);
    json_decref(j);
    swt_run_free(&r);
}

static void test_plan_sglang_and_errors(void **state)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", swt_src("tests/data/vllm/models/frank-primary-inferred"));
    struct swt_run r;
    swt_slipway(&r, "plan", "--engine", "sglang", "--", "python", "-m", "sglang.launch_server",
                "--model-path", dir, "--tp", "2", "--kv-cache-dtype", "fp8_e4m3",
                "--max-total-tokens", "606208", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "KV Cache is allocated. #tokens: 606208"));
    swt_run_free(&r);
    swt_slipway(&r, "plan", "--engine", "vllm", "--", "vllm", "serve", dir, "--max-model-len",
                "lots", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--max-model-len"));
    swt_run_free(&r);
    swt_slipway(&r, "plan", "--engine", "vllm", "--", "vllm", "serve", "/nonexistent/model", NULL);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_vllm_json),
        cmocka_unit_test(test_plan_sglang_and_errors),
    };
    return cmocka_run_group_tests_name("vllm_cli", tests, NULL, NULL);
}
