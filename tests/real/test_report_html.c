/*
 * slipway report / export, end to end with the real consumers:
 *   - the HTML page of the operator's fleet (seed ledger imported) opened in headless Chromium:
 *     screenshotted (a PNG comes out), no console error or uncaught exception logged, and in the
 *     DOM Chromium built, one <svg> budget chart per endpoint with a device budget, each with its
 *     bars. A page with a deliberate script error is run the same way first, so the console
 *     detector is shown to catch one.
 *   - the Prometheus textfile export checked by `promtool check metrics` (Debian's prometheus
 *     package), with a malformed file refused by the same command as the control.
 * Both tools are prerequisites (swt_need): skipped on a machine without them, failed under CI.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swchrome.h"
#include "swledger.h"
#include "swtest.h"

#include <slipway/core.h>
#include <slipway/ledger.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;
static char ledger[4200], fleet[4200];

static int setup(void **state)
{
    dir = swt_tmpdir();
    *state = dir;
    snprintf(ledger, sizeof(ledger), "%s/seed.sqlite", dir);
    snprintf(fleet, sizeof(fleet), "%s", swt_src("examples/operator.yaml"));
    swl_cli_import_seed(ledger);
    return 0;
}

static void test_html_in_chromium(void **state)
{
    (void)state;
    char bin[4200], html[4300], png[4300];
    struct swt_run r;
    swt_need(swc_which("chromium", bin, sizeof(bin)),
             "chromium (apt-get install chromium; scripts/deps.sh) to render the report page");

    /* the control: a page with a script error is caught */
    swc_control(bin, dir, 2400);

    snprintf(html, sizeof(html), "%s/fleet.html", dir);
    swt_slipway(&r, "report", "--fleet", fleet, "--ledger", ledger, "--html", html, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_has(html, "21,684 used / 2,441 free of 24,576 MiB"));

    snprintf(png, sizeof(png), "%s/fleet.png", dir);
    swc_render_png(bin, dir, html, png, 2400, "the report");

    swc_load(bin, dir, true, html, png, 2400, &r);
    assert_int_equal(r.status, 0);
    size_t svgs = 0, bars = 0;
    for (const char *q = r.out; (q = strstr(q, "<svg ")); q++)
        svgs++;
    for (const char *q = r.out; (q = strstr(q, "class=\"part\"")); q++)
        bars++;
    /* four budgets (frank-primary, frank-small, frank-large, frank-large-rocmfpx),
     * frank-primary's speed by depth */
    assert_int_equal(svgs, 5);
    assert_non_null(strstr(r.out, "frank-primary: measured speed by context depth"));
    assert_true(bars >= 5 + 5 + 4); /* two ranks of 5 parts, frank-small's 4 parts */
    assert_non_null(strstr(r.out, "frank-small: budget per device"));
    swt_run_free(&r);
}

static void test_promtool(void **state)
{
    (void)state;
    char bin[4200], prom[4300];
    struct swt_run r;
    swt_need(swc_which("promtool", bin, sizeof(bin)),
             "promtool (apt-get install prometheus; scripts/deps.sh) to check the metrics file");
    snprintf(prom, sizeof(prom), "%s/slipway.prom", dir);
    swt_slipway(&r, "export", "prometheus", "--fleet", fleet, "--ledger", ledger, "--out", prom,
                NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    char *text = NULL;
    size_t len = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(prom, 16u << 20, &text, &len, &e), 0);
    const char *argv[] = {bin, "check", "metrics", NULL};
    swt_run(argv, text, 60, &r);
    if (r.status)
        fail_msg("promtool check metrics: %s%s", r.out, r.err);
    swt_run_free(&r);
    sw_free(text);
    /* the control: a sample before its family's TYPE, with an unescaped quote, is refused */
    swt_run(argv, "slipway_x{a=\"b\"c\"} 1\n# TYPE slipway_x gauge\n", 60, &r);
    assert_int_not_equal(r.status, 0);
    swt_run_free(&r);
    /* the families of deploys, tags and the depth x concurrency grid too: a ledger holding two
     * tags of the local fleet's endpoint (one payload gone), a crash-looped attempt and a
     * recorded sweep */
    char tled[4300], payload[4300], gone[4300];
    snprintf(tled, sizeof(tled), "%s/tags.sqlite", dir);
    snprintf(payload, sizeof(payload), "%s/p.gguf", dir);
    snprintf(gone, sizeof(gone), "%s/gone.gguf", dir);
    swt_write_str(payload, "12345");
    struct sw_ledger l;
    sw_err_clear(&e);
    assert_int_equal(sw_ledger_open(&l, tled, NULL, &e), 0);
    static const char *const shapes[] = {
        "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\"},\"ctx\":4096,\"slots\":1}",
        "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\"},\"ctx\":8192,\"slots\":2}"};
    char tag[SW_LEDGER_TAG_MAX];
    for (int i = 0; i < 2; i++) {
        json_t *sh = json_loads(shapes[i], 0, NULL);
        json_t *pl = json_pack("[{s:s,s:i,s:n}]", "path", i ? payload : gone, "size", 5, "sha256");
        struct sw_ledger_tag_new t = {.endpoint = "local", .shape = sh, .payload = pl};
        assert_int_equal(sw_ledger_tag_commit(&l, &t, tag, NULL, &e), 0);
        json_decref(sh);
        json_decref(pl);
    }
    json_t *sh = json_loads(shapes[0], 0, NULL);
    struct sw_ledger_attempt at = {.endpoint = "local", .shape = sh};
    int64_t aid = 0;
    assert_int_equal(sw_ledger_deploy_begin(&l, &at, &aid, &e), 0);
    json_t *ev = json_pack("{s:{s:i}}", "boot_failure", "n_restarts", 4);
    struct sw_ledger_attempt_end fin = {.outcome = "rolled_back",
                                        .failure_class = "crash_loop",
                                        .evidence = ev,
                                        .downtime_ms = -1,
                                        .not_the_shape = true};
    assert_int_equal(sw_ledger_deploy_finish(&l, aid, &fin, NULL, &e), 0);
    json_t *res = json_pack("{s:[{s:i,s:i,s:{s:f},s:f,s:{s:f}}]}", "points", "depth", 512,
                            "concurrency", 2, "decode_tps", "median", 20.5, "summed_decode_tps",
                            40.0, "prefill_tps", "median", 300.0);
    json_t *par = json_object();
    assert_int_equal(sw_ledger_record_bench(&l, "local", 0, 0, par, res, NULL, NULL, NULL, &e), 0);
    json_decref(sh);
    json_decref(ev);
    json_decref(res);
    json_decref(par);
    sw_ledger_close(&l);
    swt_slipway(&r, "export", "prometheus", "--fleet", swt_src("examples/local.yaml"), "--ledger",
                tled, "--out", prom, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_int_equal(sw_read_file(prom, 16u << 20, &text, &len, &e), 0);
    assert_non_null(strstr(text, "slipway_deploy_restarts{endpoint=\"local\"} 4\n"));
    assert_non_null(strstr(text, "slipway_tag_restorable{endpoint=\"local\""));
    assert_non_null(strstr(text, ",role=\"rollback\"} 0\n"));
    assert_non_null(strstr(text, "depth=\"512\",concurrency=\"2\"} 20.5\n"));
    swt_run(argv, text, 60, &r);
    if (r.status)
        fail_msg("promtool check metrics (tags): %s%s", r.out, r.err);
    swt_run_free(&r);
    sw_free(text);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_in_chromium),
        cmocka_unit_test(test_promtool),
    };
    return cmocka_run_group_tests(tests, setup, swt_tmpdir_teardown);
}
