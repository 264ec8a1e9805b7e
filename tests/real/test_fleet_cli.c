/*
 * slipway fleet show|check, run as the real binary: exit codes, the file:line:col lines on
 * stderr, and the --json shapes later tools read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <string.h>

static void test_check_ok(void **state)
{
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "fleet", "check", swt_src("examples/operator.yaml"), NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "ok: 2 hosts, 2 profiles, 5 endpoints, 2 warnings"));
    assert_non_null(
        strstr(r.err, "warning: endpoints.frank-primary.image is frozen but not pinned"));
    swt_run_free(&r);

    assert_int_equal(
        swt_slipway(&r, "fleet", "check", "--json", swt_src("examples/local.yaml"), NULL), 0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "endpoints")), 1);
    json_decref(j);
    swt_run_free(&r);
}

static void test_check_errors(void **state)
{
    struct swt_run r;
    const char *bad = swt_src("tests/data/fleet/bad-multi.yaml");
    char path[4096];
    snprintf(path, sizeof(path), "%s", bad);
    assert_int_equal(swt_slipway(&r, "fleet", "check", path, NULL), 0);
    assert_int_equal(r.status, 2);
    char want[4200];
    snprintf(want, sizeof(want), "%s:11:13: endpoints.x.shape.seqs must be >= 1 (got 0)\n", path);
    assert_non_null(strstr(r.err, want));
    snprintf(want, sizeof(want),
             "%s:13:15: unknown key 'pth' in endpoints.x.payload (did you mean "
             "'path'?)\n",
             path);
    assert_non_null(strstr(r.err, want));
    assert_non_null(strstr(r.err, "3 errors; nothing loaded"));
    assert_string_equal(r.out, "");
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "fleet", "check", "--json", path, NULL), 0);
    assert_int_equal(r.status, 2);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_false(json_object_get(j, "ok")));
    /* the shape every verb prints an error in: the first mistake, then all of them */
    json_t *first = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(first, "code")), "SW_EPARSE");
    assert_int_equal(json_integer_value(json_object_get(first, "line")), 11);
    json_t *errs = json_object_get(j, "errors");
    assert_int_equal(json_array_size(errs), 3);
    json_t *e0 = json_array_get(errs, 0);
    assert_int_equal(json_integer_value(json_object_get(e0, "line")), 11);
    assert_int_equal(json_integer_value(json_object_get(e0, "col")), 13);
    json_decref(j);
    swt_run_free(&r);

    /* a file that is not there, a verb misused */
    assert_int_equal(swt_slipway(&r, "fleet", "check", "/nonexistent/fleet.yaml", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "/nonexistent/fleet.yaml"));
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "fleet", "frobnicate", NULL), 0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "fleet", NULL), 0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
}

static void test_show(void **state)
{
    struct swt_run r;
    const char *ex = swt_src("examples/operator.yaml");
    char path[4096];
    snprintf(path, sizeof(path), "%s", ex);
    assert_int_equal(swt_slipway(&r, "fleet", "show", path, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "endpoint frank-small: llama.cpp on dankserver [cuda-24g]"));
    assert_non_null(strstr(r.out, "CTX_SIZE       -> shape.ctx_size"));
    assert_non_null(strstr(r.out, "harness: contextWindow 262,144"));
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "fleet", "show", "--json", path, NULL), 0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *eps = json_object_get(j, "endpoints");
    assert_int_equal(json_array_size(eps), 5);
    json_t *fp = json_array_get(eps, 0);
    assert_string_equal(json_string_value(json_object_get(fp, "name")), "frank-primary");
    json_t *shape = json_object_get(fp, "shape");
    assert_int_equal(json_integer_value(json_object_get(shape, "max_model_len")), 200704);
    assert_int_equal(json_integer_value(json_object_get(shape, "kv_cache_bytes")), 3150000000LL);
    json_decref(j);
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "fleet", "show", "--json", path, "frank-small", NULL), 0);
    j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "frank-small");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "free_band"), "min")),
                     2147483648LL);
    json_decref(j);
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "fleet", "show", path, "frank-tiny", NULL), 0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_ok),
        cmocka_unit_test(test_check_errors),
        cmocka_unit_test(test_show),
    };
    return cmocka_run_group_tests_name("fleet_cli", tests, NULL, NULL);
}
