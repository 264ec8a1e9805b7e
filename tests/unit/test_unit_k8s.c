/*
 * unit/k8s without a process in between: the objects of the test fleet's two endpoints (kinds,
 * GPU limits per vendor, the shm volume, the startupProbe from a given boot time), refusals (an
 * endpoint without an image), the YAML writer's quoting, and every allocation failure of the
 * render returning SW_ENOMEM with nothing leaked (ASan builds check the leaks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/unit_k8s.h>

#include <stdlib.h>
#include <string.h>

static struct sw_fleet *fleet;

static int setup(void **state)
{
    (void)state;
    struct sw_err e;
    setenv("SMALL_API_KEY", "k", 1);
    if (sw_fleet_load(swt_src("tests/data/k8s/fleet.yaml"), NULL, &fleet, &e))
        fail_msg("%s", e.msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sw_fleet_free(fleet);
    return 0;
}

static void test_objects(void **state)
{
    (void)state;
    struct sw_err e;
    json_t *d = NULL;
    struct sw_k8s_opts o = {.boot_ms = 95000, .namespace = "llm"};
    assert_int_equal(sw_unit_render_k8s(fleet, sw_fleet_endpoint(fleet, "big-amd"), &o, &d, &e), 0);
    json_t *objs = json_object_get(d, "objects");
    assert_int_equal(json_array_size(objs), 3);
    static const char *const kinds[] = {"Deployment", "Service", "PersistentVolumeClaim"};
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(objs, i);
        assert_string_equal(json_string_value(json_object_get(x, "kind")), kinds[i]);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(x, "metadata"), "namespace")), "llm");
    }
    /* 95 s x 1.5 = 142.5 s: 15 periods of 10 s */
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(d, "startup"), "failure_threshold")),
        15);
    struct sw_buf b;
    sw_buf_init(&b, 1u << 20);
    assert_int_equal(sw_unit_k8s_yaml(objs, &b), 0);
    const char *y = sw_buf_cstr(&b);
    swt_has_all("y", y, "---\napiVersion: \"apps/v1\"\nkind: \"Deployment\"\n", "amd.com/gpu: 2\n",
                "medium: \"Memory\"\n", "sizeLimit: \"16Gi\"\n",
                "\n---\napiVersion: \"v1\"\nkind: \"Service\"\n", NULL);
    sw_buf_free(&b);
    json_decref(d);

    /* the YAML writer quotes what needs it */
    json_t *q = json_pack("[{s:s,s:[],s:{}}]", "k:x", "a\"b\\c\nd", "e", "f");
    sw_buf_init(&b, 1u << 20);
    assert_int_equal(sw_unit_k8s_yaml(q, &b), 0);
    assert_string_equal(sw_buf_cstr(&b), "---\n\"k:x\": \"a\\\"b\\\\c\\nd\"\ne: []\nf: {}\n");
    sw_buf_free(&b);
    json_decref(q);
}

static void test_refused(void **state)
{
    (void)state;
    struct sw_err e;
    json_t *d = NULL;
    struct sw_fleet *f = NULL;
    const char *y = "version: 1\nhosts:\n  h: {transport: local, devices: {c: {vendor: cpu}}}\n"
                    "endpoints:\n  native:\n    host: h\n    engine: llama.cpp\n"
                    "    payload: {path: /m/x.gguf}\n";
    assert_int_equal(sw_fleet_load_mem("native.yaml", y, strlen(y), NULL, &f, &e), 0);
    assert_int_equal(sw_unit_render_k8s(f, sw_fleet_endpoint(f, "native"), NULL, &d, &e),
                     SW_EINVAL);
    assert_non_null(strstr(e.msg, "container image"));
    assert_null(d);
    sw_fleet_free(f);
}

static int t_render(void *arg)
{
    json_t *d = NULL;
    struct sw_buf b;
    int rc = sw_unit_render_k8s(fleet, sw_fleet_endpoint(fleet, arg), NULL, &d, NULL);
    sw_buf_init(&b, 1u << 20);
    if (!rc)
        rc = sw_unit_k8s_yaml(json_object_get(d, "objects"), &b);
    sw_buf_free(&b);
    json_decref(d);
    return rc;
}

static void test_torture(void **state)
{
    (void)state;
    swt_torture("sw_unit_render_k8s small-nv", t_render, (void *)"small-nv", SW_ENOMEM);
    swt_torture("sw_unit_render_k8s big-amd", t_render, (void *)"big-amd", SW_ENOMEM);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objects),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_torture),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
