/*
 * slipway report / export through the binary: exit codes (export harness exits 1 when the
 * contract does not hold, and still writes its file; an unknown kind or a bad --since is 2),
 * --out and --md/--html written whole, --since listing what the ledger recorded since a date,
 * render --target refusing what it does not know.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swtest.h"

#include <slipway/core.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;
static char led[4200], fleet[4200];

static int setup(void **state)
{
    dir = swt_tmpdir();
    *state = dir;
    snprintf(led, sizeof(led), "%s/seed.sqlite", dir);
    snprintf(fleet, sizeof(fleet), "%s", swt_src("examples/operator.yaml"));
    swl_cli_import_seed(led);
    return 0;
}

static void test_export_exits(void **state)
{
    (void)state;
    struct swt_run r;
    char out[4300];
    snprintf(out, sizeof(out), "%s/harness.json", dir);
    swt_slipway(&r, "export", "harness", "--fleet", fleet, "--ledger", led, "--out", out, NULL);
    assert_int_equal(r.status, 1); /* 216,269 tokens do not fit 180,224 */
    assert_non_null(strstr(r.err, "harness contract does not hold"));
    swt_run_free(&r);
    assert_true(swt_file_has(out, "\"contextWindow\": 180224"));
    assert_true(swt_file_has(out, "\"request_tokens\": 216269"));
    /* beside it, the harness's own models.yml form */
    snprintf(out, sizeof(out), "%s/models.yml", dir);
    assert_true(swt_file_has(out, "\n  \"frank-small\":\n    contextWindow: 180224\n"));

    snprintf(out, sizeof(out), "%s/llama-swap.yaml", dir);
    swt_slipway_exits(0, "export", "llama-swap", "--fleet", fleet, "--ledger", led, "--out", out,
                      NULL);
    /* one config per host, as `---`-separated documents */
    assert_true(swt_file_has(out, "\n  frank-small:\n    cmd: "));
    assert_true(swt_file_has(out, "\n---\n# llama-swap config for host Dankclaw"));
    /* --out DIR: DIR/HOST.yaml, one config each */
    snprintf(out, sizeof(out), "%s/swap", dir);
    assert_int_equal(mkdir(out, 0755), 0);
    swt_slipway_exits(0, "export", "llama-swap", "--fleet", fleet, "--ledger", led, "--out", out,
                      NULL);
    snprintf(out, sizeof(out), "%s/swap/dankserver.yaml", dir);
    assert_true(swt_file_has(out, "\n  frank-primary:\n    cmd: "));
    assert_false(swt_file_has(out, "frank-large"));
    snprintf(out, sizeof(out), "%s/swap/Dankclaw.yaml", dir);
    assert_true(swt_file_has(out, "\n  frank-large-rocmfpx:\n    cmd: "));

    swt_slipway(&r, "export", "prometheus", "--fleet", fleet, "--ledger", led, "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_non_null(strstr(json_string_value(json_object_get(j, "text")),
                           "slipway_endpoint_window_tokens{endpoint=\"frank-small\"} 180224"));
    json_decref(j);
    swt_run_free(&r);

    swt_slipway(&r, "export", "bogus", "--fleet", fleet, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown export 'bogus'"));
    swt_run_free(&r);
    swt_slipway_exits(2, "export", NULL);
    /* a ledger named but missing is an error, not an empty report */
    swt_slipway(&r, "export", "harness", "--fleet", fleet, "--ledger", "/nonexistent/l.sqlite",
                NULL);
    assert_int_not_equal(r.status, 0);
    assert_int_not_equal(r.status, 1);
    swt_run_free(&r);
}

static void test_report_files_and_since(void **state)
{
    (void)state;
    struct swt_run r;
    char md[4300], html[4300];
    snprintf(md, sizeof(md), "%s/FLEET.md", dir);
    snprintf(html, sizeof(html), "%s/fleet.html", dir);
    swt_slipway_exits(0, "report", "--fleet", fleet, "--ledger", led, "--md", md, "--html", html,
                      NULL);
    assert_true(swt_file_has(md, "## frank-small (llama.cpp on dankserver)"));
    assert_true(swt_file_has(md, "106.8 tok/s decode, 3,814 t/s prefill"));
    assert_true(swt_file_has(html, "</html>"));

    swt_slipway(&r, "report", "--fleet", fleet, "--ledger", led, "--since", "2000-01-01", "--json",
                NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *eps = json_object_get(j, "endpoints");
    size_t i;
    json_t *ep;
    size_t small = 0;
    json_array_foreach(
        eps, i, ep) if (!strcmp(json_string_value(json_object_get(ep, "name")), "frank-small"))
        small = json_array_size(json_object_get(ep, "changes"));
    assert_true(small >= 3); /* its usage readings, bench run, notes were recorded just now */
    json_decref(j);
    swt_run_free(&r);

    swt_slipway(&r, "report", "--fleet", fleet, "--ledger", led, "--since", "2999-01-01", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no ledger row recorded since then"));
    swt_run_free(&r);

    swt_slipway_exits(2, "report", "--fleet", fleet, "--since", "yesterday-ish", NULL);

    swt_slipway(&r, "render", "--target", "helm", "frank-small", "--fleet", fleet, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--target: want systemd or k8s"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_exits),
        cmocka_unit_test(test_report_files_and_since),
    };
    return cmocka_run_group_tests(tests, setup, swt_tmpdir_teardown);
}
