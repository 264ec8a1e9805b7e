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
#include <slipway/plan.h>

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
    struct sw_fleet *f = NULL;
    struct sw_err e;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    struct sw_plan p;
    (void)state;
    sw_core_init();
    if (sw_fleet_load(swt_src("tests/data/rocmfpx/fleet.yaml"), &fo, &f, &e))
        fail_msg("%s", e.msg);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "frank-large-rocmfpx");
    assert_non_null(ep);
    if (sw_plan_endpoint(f, ep, NULL, &p, &e))
        fail_msg("%s", e.msg);
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
    sw_plan_free(&p);
    sw_fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
