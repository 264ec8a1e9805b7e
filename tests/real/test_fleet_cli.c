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

/* An endpoint with no listen port is at its engine's own default port everywhere: the unit's
 * --port, fleet show, and where probe looks (issue 27: vLLM and SGLang were rendered with 8000 and
 * 30000 and probed at 8080, or refused by probe and bench for "no listen port"). */
static void test_default_ports(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fleet[4200];
    snprintf(fleet, sizeof(fleet), "%s", swt_join(dir, "f.yaml"));
    swt_write_str(fleet, "version: 1\n"
                         "hosts:\n"
                         "  far:\n"
                         "    transport: {kind: ssh, address: 192.0.2.7, user: root}\n"
                         "    devices:\n"
                         "      cpu: {kind: cpu, vendor: cpu}\n"
                         "endpoints:\n"
                         "  l:\n"
                         "    host: far\n"
                         "    engine: llama.cpp\n"
                         "    binary: /opt/llama/bin/llama-server\n"
                         "    payload: {path: /models/m.gguf}\n"
                         "  v:\n"
                         "    host: far\n"
                         "    engine: vllm\n"
                         "    payload: {path: /models/v}\n"
                         "    listen: {address: 0.0.0.0}\n"
                         "  s:\n"
                         "    host: far\n"
                         "    engine: sglang\n"
                         "    payload: {path: /models/s}\n"
                         "    listen: {address: 0.0.0.0}\n");
    static const struct {
        const char *ep, *port, *reached;
    } want[] = {
        {"l", "--port 8080", "reached through its host at http://127.0.0.1:8080"},
        {"v", "--port 8000", "reached at http://192.0.2.7:8000"},
        {"s", "--port 30000", "reached at http://192.0.2.7:30000"},
    };
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "fleet", "show", fleet, NULL), 0);
    assert_int_equal(r.status, 0);
    for (size_t i = 0; i < SW_ARRAY_LEN(want); i++)
        if (!strstr(r.out, want[i].reached))
            fail_msg("fleet show does not say '%s':\n%s", want[i].reached, r.out);
    swt_run_free(&r);
    for (size_t i = 0; i < SW_ARRAY_LEN(want); i++) {
        assert_int_equal(swt_slipway(&r, "render", want[i].ep, "--fleet", fleet, NULL), 0);
        if (!strstr(r.out, want[i].port))
            fail_msg("render %s: no '%s' in:\n%s%s", want[i].ep, want[i].port, r.out, r.err);
        swt_run_free(&r);
    }
    /* probe looks where the engine listens (192.0.2.7 is TEST-NET: nothing answers, the
     * battery gives up within its deadline) */
    assert_int_equal(swt_slipway(&r, "probe", "v", "--fleet", fleet, "--only", "readiness",
                                 "--deadline", "2s", "--json", NULL),
                     0);
    json_t *j = swt_json_out(&r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "url")), "http://192.0.2.7:8000");
    json_decref(j);
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_ok),
        cmocka_unit_test(test_check_errors),
        cmocka_unit_test(test_show),
        cmocka_unit_test(test_default_ports),
    };
    return cmocka_run_group_tests_name("fleet_cli", tests, NULL, NULL);
}
