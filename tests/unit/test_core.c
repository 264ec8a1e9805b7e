/*
 * core: errors, allocation failure injection, bounded buffers, units, files, sniffing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swtest.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_err_format(void **state)
{
    struct sw_err e;
    char buf[256];
    sw_err_clear(&e);
    assert_int_equal(
        sw_err_at(&e, SW_EPARSE, "fleet.yaml", 14, 9, "shape.seqs must be >= 1 (got %d)", 0),
        SW_EPARSE);
    assert_string_equal(sw_err_format(&e, buf, sizeof(buf)),
                        "fleet.yaml:14:9: shape.seqs must be >= 1 (got 0)");
    sw_err_at_offset(&e, SW_ETRUNC, "m.gguf", 4096, "tensor info cut short");
    assert_string_equal(sw_err_format(&e, buf, sizeof(buf)),
                        "m.gguf: byte 4096: tensor info cut short");
    sw_err_prefix(&e, "loading %s", "frank-small");
    assert_string_equal(e.msg, "loading frank-small: tensor info cut short");
    json_t *j = sw_err_to_json(&e);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "code")), "SW_ETRUNC");
    assert_int_equal(json_integer_value(json_object_get(j, "offset")), 4096);
    json_decref(j);
    assert_int_equal(sw_err_set(NULL, SW_EIO, "x"), SW_EIO);
    assert_non_null(strstr(sw_strerror(SW_EGATE), "gate"));
    assert_non_null(strstr(sw_strerror(-99), "unknown"));
}

static void test_alloc_fail(void **state)
{
    sw_alloc_fail_at(2);
    void *a = sw_malloc(10);
    void *b = sw_malloc(10);
    void *c = sw_malloc(10);
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    sw_free(a);
    sw_free(c);
    sw_alloc_fail_at(0);
    uint64_t x;
    assert_false(sw_mul_ok(UINT64_MAX / 2, 3, &x));
    assert_true(sw_mul_ok(1u << 20, 1u << 20, &x));
    assert_int_equal(x, 1ull << 40);
}

static void test_buf(void **state)
{
    struct sw_buf b;
    sw_buf_init(&b, 10);
    assert_string_equal(sw_buf_cstr(&b), "");
    assert_int_equal(sw_buf_puts(&b, "hello"), 0);
    assert_int_equal(sw_buf_printf(&b, "%d", 1234), 0);
    assert_string_equal(sw_buf_cstr(&b), "hello1234");
    assert_int_equal(sw_buf_puts(&b, "xy"), SW_ERANGE);
    assert_string_equal(sw_buf_cstr(&b), "hello1234");
    assert_int_equal(sw_buf_putc(&b, '!'), 0);
    assert_int_equal(b.len, 10);
    sw_buf_consume(&b, 5);
    assert_string_equal(sw_buf_cstr(&b), "1234!");
    char *s = sw_buf_steal(&b);
    assert_string_equal(s, "1234!");
    sw_free(s);
    assert_int_equal(b.len, 0);
    /* every allocation failure in a growing buffer leaves it consistent */
    for (long n = 1; n < 6; n++) {
        sw_buf_init(&b, 1 << 20);
        sw_alloc_fail_at(n);
        int failed = 0;
        for (int i = 0; i < 200; i++)
            if (sw_buf_puts(&b, "0123456789") == SW_ENOMEM)
                failed++;
        sw_alloc_fail_at(0);
        assert_true(failed <= 1);
        assert_int_equal(b.len, (size_t)(200 - failed) * 10);
        sw_buf_free(&b);
    }
    sw_buf_free(NULL);
}

struct unit_case {
    const char *in;
    uint64_t want;
    int rc;
};

static void test_units(void **state)
{
    static const struct unit_case bytes[] = {
        {"24GiB", 24ull << 30, 0},
        {"24576MiB", 24576ull << 20, 0},
        {"3.15e9", 3150000000ull, 0},
        {"6.1e9", 6100000000ull, 0},
        {"200704", 200704, 0},
        {"8,311,013,376", 8311013376ull, 0},
        {"1.5GiB", 1610612736ull, 0},
        {"24 GiB", 24ull << 30, 0},
        {"2G", 2000000000ull, 0},
        {"2Gi", 2ull << 30, 0},
        {"0.1KiB", 0, SW_ERANGE},
        {"-1", 0, SW_ERANGE},
        {"12 parsecs", 0, SW_EPARSE},
        {"", 0, SW_EPARSE},
        {"GiB", 0, SW_EPARSE},
        {"1e30", 0, SW_ERANGE},
        {"99999999999999999999", 0, SW_ERANGE},
        {"18446744073709551615", UINT64_MAX, 0},
        {"18446744073709551616", 0, SW_ERANGE},
        {"1,2", 12, 0},
        {"1,", 0, SW_EPARSE},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bytes); i++) {
        uint64_t v = 0;
        struct sw_err e;
        int rc = sw_parse_bytes(bytes[i].in, &v, &e);
        if (rc != bytes[i].rc)
            fail_msg("bytes '%s': rc %d want %d (%s)", bytes[i].in, rc, bytes[i].rc, e.msg);
        if (!rc && v != bytes[i].want)
            fail_msg("bytes '%s': %llu want %llu", bytes[i].in, (unsigned long long)v,
                     (unsigned long long)bytes[i].want);
    }
    static const struct unit_case counts[] = {
        {"180k", 180000, 0},    {"176Ki", 180224, 0}, {"200704", 200704, 0},
        {"262,144", 262144, 0}, {"1M", 1000000, 0},   {"3GiB", 0, SW_EPARSE},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(counts); i++) {
        uint64_t v = 0;
        int rc = sw_parse_count(counts[i].in, &v, NULL);
        if (rc != counts[i].rc || (!rc && v != counts[i].want))
            fail_msg("count '%s': rc %d v %llu", counts[i].in, rc, (unsigned long long)v);
    }
    char out[64];
    assert_string_equal(sw_fmt_count(180224, out, sizeof(out)), "180,224");
    assert_string_equal(sw_fmt_count(0, out, sizeof(out)), "0");
    assert_string_equal(sw_fmt_count(100, out, sizeof(out)), "100");
    assert_string_equal(sw_fmt_mib(272ull << 20, out, sizeof(out)), "272.00");
    assert_string_equal(sw_fmt_bytes(24ull << 30, out, sizeof(out)), "24.00 GiB");
    int64_t i64;
    assert_int_equal(sw_parse_i64("-12", &i64, NULL), 0);
    assert_int_equal(i64, -12);
    assert_int_equal(sw_parse_i64("12x", &i64, NULL), SW_EPARSE);
    double d;
    assert_int_equal(sw_parse_double("0.98", &d, NULL), 0);
    assert_int_equal(sw_parse_double("nan", &d, NULL), SW_ERANGE);
}

static void test_files(void **state)
{
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "a/b/c");
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(p, 0755, &e), 0);
    const char *f = swt_join(p, "x.txt");
    assert_int_equal(sw_write_file_atomic(f, "hello", 5, 0644, &e), 0);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(f, 100, &data, &len, &e), 0);
    assert_int_equal(len, 5);
    assert_string_equal(data, "hello");
    sw_free(data);
    assert_int_equal(sw_read_file(f, 3, &data, &len, &e), SW_ERANGE);
    assert_int_equal(sw_read_file(swt_join(dir, "nope"), 3, &data, &len, &e), SW_ENOENT);
    assert_string_equal(e.where, swt_join(dir, "nope"));
    /* an atomic write into a directory we cannot write leaves nothing behind */
    assert_int_not_equal(sw_write_file_atomic("/proc/slipway-test/x", "x", 1, 0644, &e), 0);
    swt_tmpdir_free(dir);
}

static void test_sniff(void **state)
{
    char out[256];
    assert_non_null(strstr(sw_sniff("<!DOCTYPE html><html>403", 24, out, sizeof(out)), "HTML"));
    const char *lfs = "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n";
    assert_non_null(strstr(sw_sniff(lfs, strlen(lfs), out, sizeof(out)), "git-lfs pointer"));
    const char *js = "{\"error\":\"Access to model is restricted\"}";
    assert_non_null(strstr(sw_sniff(js, strlen(js), out, sizeof(out)), "JSON object"));
    assert_non_null(strstr(sw_sniff("", 0, out, sizeof(out)), "empty"));
    assert_non_null(strstr(sw_sniff("GGUF\3\0\0\0", 8, out, sizeof(out)), "GGUF"));
    assert_non_null(strstr(sw_sniff("\x7f"
                                    "ELF\2\1\1",
                                    7, out, sizeof(out)),
                           "binary"));
}

static void test_json(void **state)
{
    struct sw_err e;
    json_t *j = sw_json_parse("{\"a\":1,\n\"a\":2}", 14, "x.json", &e);
    assert_null(j);
    assert_int_equal(e.code, SW_EPARSE);
    assert_string_equal(e.where, "x.json");
    assert_int_equal(e.line, 2);
    j = sw_json_parse("{\"a\":[1,2]}", 11, "x.json", &e);
    assert_non_null(j);
    json_decref(j);
}

/* Every JSON number that becomes an integer goes through sw_json_int_range: 2e56 is an error
 * naming the key, never a conversion outside int64_t (undefined behaviour, UBSan). */
static void test_json_int_range(void **state)
{
    struct sw_err e;
    int64_t x = 7;
    const char *doc = "{\"a\":2e56,\"b\":1e3,\"c\":2.5,\"d\":-4,\"e\":\"9\","
                      "\"f\":9223372036854775807,\"g\":9223372036854775808.0,"
                      "\"h\":-9223372036854775808.0,\"i\":null}";
    json_t *j = sw_json_parse(doc, strlen(doc), "c.json", &e);
    assert_non_null(j);
    assert_int_equal(sw_json_int_range(json_object_get(j, "a"), 0, 1 << 20, "c.json", "a", &x, &e),
                     SW_ERANGE);
    assert_int_equal(x, 7);
    assert_string_equal(e.where, "c.json");
    assert_non_null(strstr(e.msg, "a is 2e+56"));
    assert_int_equal(sw_json_int_range(json_object_get(j, "b"), 0, 1 << 20, "c.json", "b", &x, &e),
                     0);
    assert_int_equal(x, 1000);
    assert_int_equal(sw_json_int_range(json_object_get(j, "c"), 0, 9, "c.json", "c", &x, &e),
                     SW_EPARSE);
    assert_non_null(strstr(e.msg, "whole number"));
    assert_int_equal(sw_json_int_range(json_object_get(j, "d"), 0, 9, "c.json", "d", &x, &e),
                     SW_ERANGE);
    assert_non_null(strstr(e.msg, "d is -4, outside [0, 9]"));
    assert_int_equal(sw_json_int_range(json_object_get(j, "e"), 0, 9, "c.json", "e", &x, &e),
                     SW_EPARSE);
    assert_non_null(strstr(e.msg, "a string"));
    assert_int_equal(
        sw_json_int_range(json_object_get(j, "f"), INT64_MIN, INT64_MAX, "c.json", "f", &x, &e), 0);
    assert_int_equal(x, INT64_MAX);
    /* 2^63 as a double is one past INT64_MAX; -2^63 is INT64_MIN exactly */
    assert_int_equal(
        sw_json_int_range(json_object_get(j, "g"), INT64_MIN, INT64_MAX, "c.json", "g", &x, &e),
        SW_ERANGE);
    assert_int_equal(
        sw_json_int_range(json_object_get(j, "h"), INT64_MIN, INT64_MAX, "c.json", "h", &x, &e), 0);
    assert_int_equal(x, INT64_MIN);
    assert_int_equal(sw_json_int_range(json_object_get(j, "i"), 0, 9, "c.json", "i", &x, &e),
                     SW_EPARSE);
    assert_int_equal(sw_json_int_range(NULL, 0, 9, "c.json", "z", &x, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "z: missing"));
    json_decref(j);
}

/* Durations: a bare number is seconds; a value past int64_t milliseconds is refused, named
 * (18446744073709552 s used to wrap to 384 ms). */
static void test_duration(void **state)
{
    struct sw_err e;
    int64_t ms = -1;
    assert_int_equal(sw_parse_duration_ms("30", &ms, &e), 0);
    assert_int_equal(ms, 30000);
    assert_int_equal(sw_parse_duration_ms("1.5", &ms, &e), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(sw_parse_duration_ms("250ms", &ms, &e), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(sw_parse_duration_ms("2m", &ms, &e), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(sw_parse_duration_ms("1h", &ms, &e), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(sw_parse_duration_ms("9223372036854775807ms", &ms, &e), 0);
    assert_int_equal(ms, INT64_MAX);
    ms = -1;
    assert_int_equal(sw_parse_duration_ms("18446744073709552", &ms, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "18446744073709552"));
    assert_int_equal(ms, -1);
    assert_int_equal(sw_parse_duration_ms("9223372036854776", &ms, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "'9223372036854776' is too large"));
    assert_int_equal(sw_parse_duration_ms("9223372036854775808ms", &ms, &e), SW_ERANGE);
    assert_int_equal(sw_parse_duration_ms("1e300h", &ms, &e), SW_ERANGE);
    assert_int_equal(sw_parse_duration_ms("-1", &ms, &e), SW_ERANGE);
    assert_int_equal(sw_parse_duration_ms("0.0001", &ms, &e), SW_ERANGE);
    assert_int_equal(sw_parse_duration_ms("5 fortnights", &ms, &e), SW_EPARSE);
    assert_int_equal(ms, -1);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_format), cmocka_unit_test(test_alloc_fail),
        cmocka_unit_test(test_buf),        cmocka_unit_test(test_units),
        cmocka_unit_test(test_files),      cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_json),       cmocka_unit_test(test_json_int_range),
        cmocka_unit_test(test_duration),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
