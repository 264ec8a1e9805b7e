/*
 * `slipway import` as the operator runs it: his frank-primary unit and env file merged into his
 * fleet, then `slipway plan` of the result prints what the engine printed (398,658 tokens, 1.99x,
 * 6,496 slots); garbage exits 2 with its file:line and leaves the fleet as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swtest.h"

#include <stdio.h>
#include <unistd.h>
#include <string.h>

static void test_import_then_plan(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fleet[4096], env[4096], unit[4096];
    snprintf(fleet, sizeof(fleet), "%s", swt_join(dir, "fleet.yaml"));
    snprintf(env, sizeof(env), "%s", swt_join(dir, "frank-primary.env"));
    snprintf(unit, sizeof(unit), "%s", swt_src("tests/data/import/frank-primary.service"));
    swt_copy(swt_src("examples/operator.yaml"), fleet);
    swt_copy(swt_src("examples/frank-small.env"), swt_join(dir, "frank-small.env"));
    swt_copy(swt_src("tests/data/import/frank-primary.env"), env);

    struct swt_run r;
    swt_slipway(&r, "import", "unit", unit, "--env-file", env, "--into", fleet, "--host",
                "dankserver", NULL);
    if (r.status)
        fail_msg("import: %d\n%s%s", r.status, r.out, r.err);
    swt_has_all("stdout", r.out, "merged endpoint frank-primary",
                "frank-primary.service:28: [Service] TimeoutStartSec=900", NULL);
    swt_run_free(&r);
    char *t = swt_slurp(fleet);
    assert_non_null(strstr(t, "frank-primary.env:8 KV_BYTES=3.15e9, read by"));
    assert_null(strstr(t, "hf_notarealtoken"));
    sw_free(t);

    swt_slipway(&r, "plan", "frank-primary", "--fleet", fleet, NULL);
    if (r.status)
        fail_msg("plan: %d\n%s%s", r.status, r.out, r.err);
    swt_has_all("stdout", r.out, "GPU KV cache size: 398,658 tokens",
                "Maximum concurrency for 200,704 tokens per request: 1.99x", "6496 slots", NULL);
    swt_run_free(&r);

    /* --json: the notes and the round trip's count */
    char out2[4096];
    snprintf(out2, sizeof(out2), "%s", swt_join(dir, "small.yaml"));
    swt_copy(swt_src("tests/data/import/frank-small.env"), swt_join(dir, "frank-small.env"));
    swt_slipway(&r, "import", "unit", swt_src("tests/data/import/frank-small.service"),
                "--env-file", swt_join(dir, "frank-small.env"), "--host", "dankserver", "--out",
                out2, "--json", NULL);
    if (r.status)
        fail_msg("import --json: %d\n%s%s", r.status, r.out, r.err);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "endpoints"), 0)),
                        "frank-small");
    assert_true(json_array_size(json_object_get(j, "notes")) >= 3);
    assert_non_null(json_object_get(j, "roundtrip_differences"));
    json_decref(j);
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

static void test_garbage_writes_nothing(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fleet[4096], bad[4096], badenv[4096], swap[4096];
    snprintf(fleet, sizeof(fleet), "%s", swt_join(dir, "fleet.yaml"));
    snprintf(bad, sizeof(bad), "%s", swt_join(dir, "bad.service"));
    snprintf(badenv, sizeof(badenv), "%s", swt_join(dir, "bad.env"));
    snprintf(swap, sizeof(swap), "%s", swt_join(dir, "none.yaml"));
    static const char before[] = "version: 1\nhosts:\n  box: {transport: local}\nendpoints: {}\n";
    swt_write_str(fleet, before);
    swt_write_str(bad, "[Service]\nExecStart=/usr/bin/llama-server -m /m.gguf\n{\"json\": 1}\n");
    swt_write_str(badenv, "CTX_SIZE=4096\nPARALLEL=$(nproc)\n");
    struct swt_run r;
    swt_slipway(&r, "import", "unit", bad, "--into", fleet, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "bad.service:3:"));
    swt_run_free(&r);
    swt_slipway(&r, "import", "env", badenv, "--into", fleet, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "bad.env:2:"));
    swt_run_free(&r);
    swt_slipway(&r, "import", "argv", "--out", swap, "--", "llama-server", "-m", "/m.gguf", "-np",
                "many", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "-np"));
    swt_run_free(&r);
    assert_true(swt_file_is(fleet, before, strlen(before)));
    assert_int_not_equal(access(swap, F_OK), 0);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_then_plan),
        cmocka_unit_test(test_garbage_writes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
