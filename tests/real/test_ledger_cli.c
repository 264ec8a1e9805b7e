/*
 * `slipway ledger` end to end, running the real binary: import the seed, list / show / usage /
 * rules in both views, add a reading and a note by hand, export to a file and import it into a
 * second ledger, where the ledger lives by default, and the exit codes (0 ok, 1 failure found,
 * 2 unusable input).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/ledger.h>

#include <sqlite3.h>

#include "swtest.h"

#include <stdlib.h>
#include <string.h>

static char *dir;
static char led[4096];

static struct swt_run run(int want, ...)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = swt_bin();
    argv[n++] = "ledger";
    va_list ap;
    va_start(ap, want);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 62)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 120, &r), 0);
    if (r.status != want)
        fail_msg("slipway ledger %s ... exited %d, want %d\nstdout: %.2000s\nstderr: %.2000s",
                 argv[2], r.status, want, r.out, r.err);
    return r;
}

static int setup(void **state)
{
    dir = swt_tmpdir();
    snprintf(led, sizeof(led), "%s/fleet.ledger.sqlite", dir);
    unsetenv("SLIPWAY_LEDGER");
    return 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(dir);
    return 0;
}

static void test_cli_round(void **state)
{
    const char *seed = swt_src("tests/data/ledger/seed-boots.json");
    char seedbuf[4096];
    snprintf(seedbuf, sizeof(seedbuf), "%s", seed);

    /* nothing recorded yet: list says so, exit 0 */
    struct swt_run r = run(0, "--ledger", led, "list", NULL);
    assert_non_null(strstr(r.out, "nothing recorded"));
    swt_run_free(&r);

    r = run(0, "--ledger", led, "import", seedbuf, "--json", NULL);
    json_t *j = swt_json_out(&r);
    assert_true(json_integer_value(json_object_get(j, "added")) > 30);
    json_decref(j);
    swt_run_free(&r);
    r = run(0, "--ledger", led, "import", seedbuf, NULL);
    assert_non_null(strstr(r.out, "recorded 0 rows"));
    swt_run_free(&r);

    r = run(0, "--ledger", led, "list", "--endpoint", "frank-primary", "--json", NULL);
    j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "boots")), 15);
    json_decref(j);
    swt_run_free(&r);
    r = run(0, "--ledger", led, "list", "--outcome", "failed", NULL);
    assert_non_null(strstr(r.out, "compile_constraint/profile"));
    assert_non_null(strstr(r.out, "oom/graph_capture"));
    assert_null(strstr(r.out, " ok "));
    swt_run_free(&r);

    r = run(0, "--ledger", led, "show", "4", NULL);
    assert_non_null(strstr(r.out, "398658")); /* printed report */
    assert_non_null(strstr(r.out, "seed-fleet.md:26"));
    swt_run_free(&r);
    r = run(0, "--ledger", led, "show", "4", "--json", NULL);
    j = swt_json_out(&r);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "report"), "expert_arena_slots")),
        6496);
    json_decref(j);
    swt_run_free(&r);

    /* a reading by hand, tied to a boot; the free figure as the tool printed it */
    r = run(0, "--ledger", led, "add-usage", "--endpoint", "frank-small", "--device", "CUDA0",
            "--used", "21684MiB", "--total", "24576MiB", "--free", "2441MiB", "--source",
            "nvidia-smi", "--boot", "18", "--note", "after a week", "--json", NULL);
    j = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "free_mib")), 2441);
    json_decref(j);
    swt_run_free(&r);
    r = run(0, "--ledger", led, "usage", "--endpoint", "frank-small", NULL);
    assert_non_null(strstr(r.out, "4 usage readings"));
    assert_non_null(strstr(r.out, "after a week"));
    swt_run_free(&r);

    r = run(0, "--ledger", led, "note", "--boot", "12", "bisected", "on", "2026-10-01", NULL);
    assert_non_null(strstr(r.out, "on boot 12"));
    swt_run_free(&r);
    r = run(0, "--ledger", led, "show", "12", "--json", NULL);
    j = swt_json_out(&r);
    json_t *notes = json_object_get(j, "notes");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(notes, json_array_size(notes) - 1), "text")),
                        "bisected on 2026-10-01");
    json_decref(j);
    swt_run_free(&r);

    r = run(0, "--ledger", led, "add-rule", "--endpoint", "frank-primary", "--expr",
            "slots >= 6 && kv_dtype == fp8", "--reason", "6 full-length contexts never fit",
            "--boot", "11", NULL);
    swt_run_free(&r);
    r = run(0, "--ledger", led, "rules", "--endpoint", "frank-primary", "--json", NULL);
    j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "rules")), 2);
    json_t *r2 = json_array_get(json_object_get(j, "rules"), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(r2, "failure"), "class")),
                        "oom"); /* taken from boot 11 */
    assert_int_equal(json_array_size(json_object_get(j, "shapes")), 8);
    json_decref(j);
    swt_run_free(&r);

    /* export to a file, import into a second ledger, same counts */
    char out[4096], led2[4096];
    snprintf(out, sizeof(out), "%s/export.json", dir);
    snprintf(led2, sizeof(led2), "%s/copy.sqlite", dir);
    r = run(0, "--ledger", led, "export", "-o", out, NULL);
    swt_run_free(&r);
    r = run(0, "--ledger", led2, "import", out, NULL);
    swt_run_free(&r);
    r = run(0, "--ledger", led, "path", "--json", NULL);
    json_t *c1 = swt_json_out(&r);
    swt_run_free(&r);
    r = run(0, "--ledger", led2, "verify", "--json", NULL);
    json_t *c2 = swt_json_out(&r);
    swt_run_free(&r);
    assert_true(json_is_true(json_object_get(c2, "ok")));
    assert_true(json_equal(json_object_get(c1, "rows"), json_object_get(c2, "rows")));
    json_decref(c1);
    json_decref(c2);
}

/* `slipway bootlog record`: parse a real llama-server log and store it */
static void test_bootlog_record(void **state)
{
    const char *oom = swt_src("tests/data/bootlogs/llamacpp/oom_compute.log");
    char oombuf[4096], okbuf[4096], shape[4096];
    snprintf(oombuf, sizeof(oombuf), "%s", oom);
    snprintf(okbuf, sizeof(okbuf), "%s", swt_src("tests/data/bootlogs/llamacpp/ok_lv3.log"));
    snprintf(shape, sizeof(shape), "%s/shape.json", dir);
    swt_write_str(shape, "{\"shape\":{\"engine\":\"llama.cpp\",\"model\":\"m.gguf\","
                         "\"ctx\":65536,\"slots\":1}}");
    const char *argv[] = {swt_bin(), "bootlog", "record", "local",  oombuf, "--ledger",
                          led,       "--shape", shape,    "--json", NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
    assert_int_equal(r.status, 1); /* recorded, and it is a failed boot */
    json_t *j = swt_json_out(&r);
    json_t *b = json_object_get(j, "boot");
    assert_string_equal(json_string_value(json_object_get(b, "outcome")), "failed");
    assert_string_equal(json_string_value(json_object_get(b, "failure_class")), "oom");
    assert_string_equal(json_string_value(json_object_get(b, "failure_phase")), "compute_alloc");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "report"), "n_ctx")),
                     65536);
    assert_non_null(strstr(json_string_value(json_object_get(b, "log_excerpt")), "llama_kv_cache"));
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(b, "shape"), "canonical"), "ctx")),
                     65536);
    json_decref(j);
    swt_run_free(&r);
    const char *argv2[] = {swt_bin(), "bootlog", "record", "local", okbuf, "--ledger", led, NULL};
    assert_int_equal(swt_run(argv2, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recorded boot #2 of local"));
    swt_run_free(&r);
    r = run(0, "--ledger", led, "rules", "--json", NULL);
    j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "shapes")), 1); /* the OOM shape */
    json_decref(j);
    swt_run_free(&r);
}

static void test_cli_location(void **state)
{
    /* beside the fleet file */
    char fleet[4096], want[4096];
    snprintf(fleet, sizeof(fleet), "%s/prod.yaml", dir);
    snprintf(want, sizeof(want), "%s/prod.ledger.sqlite", dir);
    struct swt_run r = run(0, "--fleet", fleet, "note", "first", "note", NULL);
    swt_run_free(&r);
    r = run(0, "--fleet", fleet, "path", "--json", NULL);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "ledger")), want);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "rows"), "notes")), 1);
    json_decref(j);
    swt_run_free(&r);
    /* XDG when there is no fleet; --ledger wins over everything */
    char xdg[4096];
    snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
    setenv("XDG_DATA_HOME", xdg, 1);
    r = run(0, "path", "--json", NULL);
    j = swt_json_out(&r);
    snprintf(want, sizeof(want), "%s/xdg/slipway/ledger.sqlite", dir);
    assert_string_equal(json_string_value(json_object_get(j, "ledger")), want);
    assert_true(json_is_false(json_object_get(j, "exists")));
    json_decref(j);
    swt_run_free(&r);
    unsetenv("XDG_DATA_HOME");
}

static void test_cli_exit_codes(void **state)
{
    struct swt_run r = run(2, "--ledger", led, "show", "999", NULL);
    assert_non_null(strstr(r.err, "no ledger here")); /* nothing recorded in this fresh dir */
    swt_run_free(&r);
    r = run(0, "--ledger", led, "note", "x", NULL);
    swt_run_free(&r);
    r = run(2, "--ledger", led, "show", "999", "--json", NULL);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "SW_ENOENT");
    json_decref(j);
    swt_run_free(&r);
    r = run(2, "--ledger", led, "add-usage", "--endpoint", "e", "--device", "d", "--used", "21684",
            "--total", "24576MiB", NULL);
    assert_non_null(strstr(r.err, "no unit"));
    swt_run_free(&r);
    r = run(2, "--ledger", led, "add-usage", "--endpoint", "e", "--device", "d", NULL);
    swt_run_free(&r);
    r = run(2, "--ledger", led, "add-rule", "--expr", "slots =< 2", "--reason", "r", NULL);
    assert_non_null(strstr(r.err, "expected a value"));
    swt_run_free(&r);
    r = run(2, "--ledger", led, "frobnicate", NULL);
    swt_run_free(&r);
    r = run(2, "--ledger", led, "show", "abc", NULL);
    swt_run_free(&r);
    r = run(0, "--help", NULL);
    assert_non_null(strstr(r.out, "add-usage"));
    swt_run_free(&r);

    /* a ledger from the future: refused, exit 2, and the file keeps its version */
    char fut[4096];
    snprintf(fut, sizeof(fut), "%s/future.sqlite", dir);
    struct sw_ledger l;
    struct sw_err e;
    assert_int_equal(sw_ledger_open(&l, fut, NULL, &e), 0);
    assert_int_equal(sqlite3_exec(l.db, "PRAGMA user_version = 99", 0, 0, 0), 0);
    sw_ledger_close(&l);
    r = run(2, "--ledger", fut, "list", NULL);
    assert_non_null(strstr(r.err, "newer than this slipway"));
    swt_run_free(&r);

    /* integrity trouble is a failure found: exit 1 */
    char bad[4096];
    snprintf(bad, sizeof(bad), "%s/notdb.sqlite", dir);
    swt_write_str(bad, "<html>403</html>");
    r = run(1, "--ledger", bad, "verify", NULL);
    assert_non_null(strstr(r.err, "not an SQLite database"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cli_round, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bootlog_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_location, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_exit_codes, setup, teardown),
    };
    return cmocka_run_group_tests_name("ledger_cli", tests, NULL, NULL);
}
