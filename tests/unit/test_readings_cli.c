/*
 * slipway readings: the verb over recorded tool outputs: human view and --json, stdin, the tool
 * refused with its name on malformed output (exit 2), ambiguity refused, and --record into a
 * ledger beside a fleet file, read back with `slipway ledger usage --json`, the unmatched reading
 * warned about on stderr.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/core.h>

#include <stdio.h>
#include <string.h>

static void test_print(void **state)
{
    (void)state;
    struct swt_run r;
    swt_slipway(&r, "readings", swt_src("tests/data/readings/nvidia-smi/two-gpus-nounits.csv"),
                NULL);
    swt_out_has(&r, 0, "nvidia-smi: 2 devices", "41,512", NULL);

    swt_slipway(&r, "readings", "--json", swt_src("tests/data/readings/amd-smi/metric-units.json"),
                NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "tool")), "amd-smi");
    json_t *r0 = json_array_get(json_object_get(j, "readings"), 0);
    assert_int_equal(json_integer_value(json_object_get(r0, "used_bytes")), 21684LL * 1048576);
    json_decref(j);
    swt_run_free(&r);

    /* stdin */
    const char *argv[] = {swt_bin(), "readings", "--tool", "rocm-smi", "-", NULL};
    swt_run(argv,
            "{\"card2\": {\"VRAM Total Memory (B)\": \"100\", "
            "\"VRAM Total Used Memory (B)\": \"7\"}}",
            30, &r);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "rocm-smi: 1 device (<stdin>)"));
    swt_run_free(&r);
}

static void test_refused(void **state)
{
    (void)state;
    struct swt_run r;
    const char *argv[] = {swt_bin(), "readings", "--json", NULL};
    swt_run(argv, "index, memory.used [MiB], memory.total [MiB]\n0, 5 MiB\n", 30, &r);
    swt_out_has(&r, 2, "nvidia-smi", "fields", NULL);
    swt_run(argv, "{\"card0\": {}, \"gpu_data\": []}", 30, &r);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.out, "cannot tell which tool"));
    swt_run_free(&r);
    swt_slipway_exits(2, "readings", "--tool", "xpu-smi", NULL);
    swt_slipway(&r, "readings", "--record", "--endpoint", "x", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--fleet"));
    swt_run_free(&r);
}

static void test_record(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fleet[4200];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    static const char y[] = "version: 1\n"
                            "hosts:\n"
                            "  box:\n"
                            "    transport: local\n"
                            "    devices:\n"
                            "      r9700-0: {kind: R9700, vendor: amd, index: 0}\n"
                            "endpoints:\n"
                            "  one:\n"
                            "    host: box\n"
                            "    devices: [r9700-0]\n"
                            "    engine: llama.cpp\n"
                            "    payload: {path: /nonexistent/m.gguf}\n";
    struct sw_err e;
    assert_int_equal(sw_write_file_atomic(fleet, y, strlen(y), 0644, &e), 0);
    struct swt_run r;
    swt_slipway(&r, "readings", swt_src("tests/data/readings/rocm-smi/two-cards-system.json"),
                "--record", "--fleet", fleet, "--endpoint", "one", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recorded usage #1: one r9700-0"));
    assert_non_null(strstr(r.err, "warning: rocm-smi: amd device 1 (card1)"));
    swt_run_free(&r);
    swt_slipway(&r, "ledger", "usage", "--fleet", fleet, "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *u = json_object_get(j, "usage");
    assert_int_equal(json_array_size(u), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(u, 0), "used_mib")), 26460);
    assert_string_equal(json_string_value(json_object_get(json_array_get(u, 0), "source")),
                        "rocm-smi");
    json_decref(j);
    swt_run_free(&r);
    /* nothing matches: exit 1, nothing written */
    swt_slipway(&r, "readings", swt_src("tests/data/readings/nvidia-smi/one-gpu.csv"), "--record",
                "--fleet", fleet, "--endpoint", "one", "--json", NULL);
    assert_int_equal(r.status, 1);
    j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "recorded")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "warnings")), 1);
    json_decref(j);
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_record),
    };
    return cmocka_run_group_tests_name("readings_cli", tests, NULL, NULL);
}
