/*
 * core: errors, allocation failure injection, bounded buffers, regions, lines, units, files,
 * sniffing.
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
    /* a heap array grown to hold an index, doubling, up to its most; a failure keeps it */
    int *v = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < 20; i++) {
        assert_int_equal(sw_grow(&v, &cap, i, sizeof(*v), 20), 0);
        v[i] = (int)i;
    }
    assert_int_equal(cap, 20);
    assert_int_equal(sw_grow(&v, &cap, 20, sizeof(*v), 20), SW_ERANGE);
    sw_alloc_fail_at(1);
    assert_int_equal(sw_grow(&v, &cap, 20, sizeof(*v), SIZE_MAX), SW_ENOMEM);
    sw_alloc_fail_at(0);
    assert_int_equal(cap, 20);
    assert_int_equal(v[19], 19);
    assert_int_equal(sw_grow(&v, &cap, 3, SIZE_MAX, SIZE_MAX), 0); /* room already */
    sw_free(v);
    v = NULL;
    cap = 0;
    assert_int_equal(sw_grow(&v, &cap, 0, SIZE_MAX / 2, SIZE_MAX), SW_ENOMEM);
    assert_null(v);
    uint64_t x;
    assert_false(sw_mul_ok(UINT64_MAX / 2, 3, &x));
    assert_true(sw_mul_ok(1u << 20, 1u << 20, &x));
    assert_int_equal(x, 1ull << 40);
}

static void test_str_in(void **state)
{
    (void)state;
    static const char *const list[] = {"--a", "--bb", NULL};
    assert_true(sw_str_in("--bb", list));
    assert_false(sw_str_in("--b", list));
    assert_false(sw_str_in(NULL, list));
    assert_false(sw_str_in("--a", NULL));
}

/* The Markdown escaper: no tag survives, no Markdown construct starts inside a value, a cell
 * stays one line; an underscore inside a word is left as written. */
static void test_buf_md(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 12);
    const char *in = "<script>alert(1)</script> <img src=x onerror=alert(1)> a|b\nc\r*d* "
                     "[l](javascript:x) `c` ~~s~~ _e_ kv_cache_bytes \\ & \x01";
    assert_int_equal(sw_buf_md(&b, in, strlen(in)), 0);
    assert_string_equal(sw_buf_cstr(&b),
                        "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt; "
                        "a\\|b c \\*d\\* \\[l\\](javascript:x) \\`c\\` \\~\\~s\\~\\~ \\_e\\_ "
                        "kv_cache_bytes \\\\ &amp;  ");
    sw_buf_free(&b);

    /* the YAML double-quoted scalar: no raw control character, quotes and backslashes escaped */
    sw_buf_init(&b, 1 << 12);
    assert_int_equal(sw_buf_yaml_str(&b, "a\"b\\c\nd\re\x7f\xc2\x85"
                                         "caf\xc3\xa9"),
                     0);
    assert_int_equal(sw_buf_yaml_str(&b, NULL), 0);
    assert_string_equal(sw_buf_cstr(&b), "\"a\\\"b\\\\c\\nd\\x0de\\x7f\\u0085caf\xc3\xa9\"\"\"");
    sw_buf_free(&b);
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

/* The one number lexer: what sw_parse_bytes/count read exactly and the fleet's quantities read as
 * a double are the same characters. */
static void test_number_scan(void **state)
{
    (void)state;
    struct sw_number n;
    assert_int_equal(sw_number_scan("200,704 tokens", false, &n), 7);
    assert_true(n.mant == 200704 && n.exp10 == 0 && n.real_ok && n.real == 200704.0);
    assert_int_equal(sw_number_scan("3.15e9B", false, &n), 6);
    assert_true(n.mant == 315 && n.exp10 == 7 && n.real == 3.15e9);
    assert_int_equal(sw_number_scan("-1.5", false, &n), 0); /* no sign unless asked */
    assert_int_equal(sw_number_scan("-1.5", true, &n), 4);
    assert_true(n.negative && n.mant == 15 && n.exp10 == -1 && n.real == -1.5);
    assert_int_equal(sw_number_scan("1_000.5e", true, &n), 7); /* 'e' without digits: a unit */
    assert_true(n.mant == 10005 && n.exp10 == -1);
    assert_int_equal(sw_number_scan("1,,2", false, &n), 1);
    assert_int_equal(sw_number_scan(".5", false, &n), 2);
    assert_int_equal(sw_number_scan("e5", true, &n), 0);
    assert_int_equal(sw_number_scan("99999999999999999999", false, &n), 20);
    assert_true(n.overflow && n.real_ok);
    assert_int_equal(sw_number_scan("100000000000000000000", false, &n), 21);
    assert_true(!n.overflow && n.mant == 10000000000000000000ull && n.exp10 == 1);
    assert_int_equal(sw_number_scan("1e99999", false, &n), 7);
    assert_true(n.exp_huge && !n.real_ok);
    assert_int_equal(sw_number_scan("1e-20000", false, &n), 8);
    assert_true(n.exp_huge && n.real_ok && n.real == 0.0);
    char longnum[200];
    memset(longnum, '7', 150);
    longnum[150] = '\0';
    assert_int_equal(sw_number_scan(longnum, false, &n), 150);
    assert_true(n.overflow && !n.real_ok);

    assert_true(sw_unit_bytes("GiB", 3) == (1ull << 30) &&
                sw_unit_bytes("TB", 2) == 1000000000000ull);
    assert_true(sw_unit_bytes("Gi", 2) == 0 && sw_unit_bytes("GiBx", 3) == (1ull << 30));
    assert_true(sw_unit_multiplier("Ki", 2) == 1024 && sw_unit_multiplier("k", 1) == 1000);
    assert_true(sw_unit_multiplier("B", 1) == 0 && sw_unit_multiplier("T", 1) == 0);
    uint64_t v;
    assert_int_equal(sw_parse_bytes("2T", &v, NULL), 0); /* byte sizes take T and Ti too */
    assert_true(v == 2000000000000ull);
    assert_int_equal(sw_parse_count("2T", &v, NULL), SW_EPARSE);
}

/* The rule grammar knows no keys of its own: a vocabulary of two keys over a plain struct. */
struct toy {
    int64_t slots;
    const char *dtype;
};

static int toy_key(void *ctx, const char *text, size_t n, char *out, size_t outn, char *msg,
                   size_t msgn)
{
    (void)ctx;
    if ((n == 5 && !memcmp(text, "slots", 5)) || (n == 5 && !memcmp(text, "dtype", 5))) {
        snprintf(out, outn, "%.*s", (int)n, text);
        return 0;
    }
    snprintf(msg, msgn, "no key '%.*s'", (int)n, text);
    return -1;
}

static bool toy_literal(void *ctx, const char *key, const char *s, char *out, size_t outn)
{
    (void)ctx;
    if (strcmp(key, "dtype") || strcmp(s, "float8"))
        return false;
    snprintf(out, outn, "fp8");
    return true;
}

static bool toy_get(void *ctx, const void *subject, const char *key, struct sw_rule_value *out,
                    char *tmp, size_t tmpn)
{
    const struct toy *t = subject;
    (void)ctx;
    (void)tmp;
    (void)tmpn;
    if (!strcmp(key, "slots")) {
        out->type = SW_RULE_INT;
        out->i = t->slots;
        return true;
    }
    out->type = SW_RULE_STR;
    out->s = t->dtype;
    return t->dtype != NULL;
}

static void test_rule(void **state)
{
    (void)state;
    const struct sw_rule_vocab v = {
        .key = toy_key, .literal = toy_literal, .get = toy_get, .keys_hint = "slots or dtype"};
    struct sw_rule *r = NULL;
    struct sw_err e;
    assert_int_equal(sw_rule_parse("slots >= 2 && !(dtype == float8) || slots == 1Ki", &v, &r, &e),
                     0);
    struct toy a = {2, "f16"}, b = {2, "fp8"}, c = {1024, NULL}, d = {1, "f16"};
    assert_true(sw_rule_eval(r, &a));
    assert_false(sw_rule_eval(r, &b)); /* float8 was normalized to fp8 */
    assert_true(sw_rule_eval(r, &c));
    assert_false(sw_rule_eval(r, &d));
    sw_rule_free(r);
    /* a missing value never matches, even under != */
    assert_int_equal(sw_rule_parse("dtype != f16", &v, &r, &e), 0);
    assert_false(sw_rule_eval(r, &c));
    assert_true(sw_rule_eval(r, &b));
    sw_rule_free(r);
    assert_int_equal(sw_rule_parse("slots == 2 && ctx > 5", &v, &r, &e), SW_EPARSE);
    assert_null(r);
    assert_int_equal(e.offset, 14);
    assert_non_null(strstr(e.msg, "no key 'ctx'"));
    assert_int_equal(sw_rule_parse("== 2", &v, &r, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "expected slots or dtype"));
    assert_int_equal(sw_rule_parse("dtype < fp8", &v, &r, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "only == and != compare strings"));
    assert_int_equal(e.offset, 6); /* at the operator */
}

/* The words and, or, not and a lone '=' are the same operators as &&, ||, ! and ==. */
static void test_rule_words(void **state)
{
    (void)state;
    const struct sw_rule_vocab v = {.key = toy_key, .literal = toy_literal, .get = toy_get};
    struct sw_rule *r = NULL, *sym = NULL;
    struct sw_err e;
    assert_int_equal(sw_rule_parse("slots = 2 and not (dtype = float8) or slots=1Ki", &v, &r, &e),
                     0);
    assert_int_equal(sw_rule_parse("slots == 2 && !(dtype == float8) || slots==1Ki", &v, &sym, &e),
                     0);
    struct toy cases[] = {{2, "f16"}, {2, "fp8"}, {1024, NULL}, {1, "f16"}, {3, "fp8"}};
    bool want[] = {true, false, true, false, false};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(sw_rule_eval(r, &cases[i]), want[i]);
        assert_int_equal(sw_rule_eval(sym, &cases[i]), want[i]);
    }
    assert_false(sw_rule_is_conjunction(r));
    sw_rule_free(r);
    sw_rule_free(sym);
    assert_int_equal(sw_rule_parse("slots >= 2 and dtype = fp8 && slots < 9", &v, &r, &e), 0);
    assert_true(sw_rule_is_conjunction(r));
    sw_rule_free(r);
    /* a word is an operator only as a whole word; as a value it is a word */
    assert_int_equal(sw_rule_parse("dtype == not", &v, &r, &e), 0);
    struct toy nt = {0, "not"}, c1k = {1024, "f16"};
    assert_true(sw_rule_eval(r, &nt));
    sw_rule_free(r);
    assert_int_equal(sw_rule_parse("slots == 2 andslots == 3", &v, &r, &e), SW_EPARSE);
    assert_int_equal(e.offset, 11);
    assert_int_equal(sw_rule_parse("slots = = 2", &v, &r, &e), SW_EPARSE);
    assert_int_equal(e.offset, 8);
    /* a unit may stand after its number's space; a word that is no unit may not */
    assert_int_equal(sw_rule_parse("slots == 1 Ki and dtype = f16", &v, &r, &e), 0);
    assert_true(sw_rule_eval(r, &c1k));
    sw_rule_free(r);
    assert_int_equal(sw_rule_parse("slots == 2 extra", &v, &r, &e), SW_EPARSE);
    assert_int_equal(e.offset, 11);
}

/* A vocabulary that reads each value in its key's own units: "2k" slots is 2000, a word for
 * slots is refused at the word's offset, and the hook sees each comparison's parts. */
static int toy_value(void *ctx, const struct sw_rule_cmp *cmp, struct sw_rule_value *out, char *msg,
                     size_t msgn)
{
    int *calls = ctx;
    (*calls)++;
    if (!strcmp(cmp->key, "dtype")) {
        out->type = SW_RULE_STR;
        out->s = cmp->text;
        return 0;
    }
    uint64_t u;
    if (cmp->quoted || sw_parse_count(cmp->text, &u, NULL)) {
        snprintf(msg, msgn, "slots '%s' is not a count", cmp->text);
        return -1;
    }
    out->type = SW_RULE_INT;
    out->i = (int64_t)u;
    return 0;
}

static void test_rule_value_hook(void **state)
{
    (void)state;
    int calls = 0;
    const struct sw_rule_vocab v = {
        .key = toy_key, .value = toy_value, .get = toy_get, .ctx = &calls};
    struct sw_rule *r = NULL;
    struct sw_err e;
    assert_int_equal(sw_rule_parse("slots = 2k and dtype = \"f p8\"", &v, &r, &e), 0);
    assert_int_equal(calls, 2);
    struct toy a = {2000, "f p8"}, b = {2048, "f p8"};
    assert_true(sw_rule_eval(r, &a));
    assert_false(sw_rule_eval(r, &b));
    sw_rule_free(r);
    assert_int_equal(sw_rule_parse("dtype == fp8 && slots >= two", &v, &r, &e), SW_EPARSE);
    assert_null(r);
    assert_int_equal(e.offset, 25);
    assert_non_null(strstr(e.msg, "slots 'two' is not a count"));
}

static void test_files(void **state)
{
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "a/b/c");
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(p, 0755, &e), 0);
    /* an output directory: one that exists; a missing one says whether its parent exists, and
     * nothing is created */
    assert_int_equal(sw_out_dir(p, &e), 0);
    assert_int_equal(sw_out_dir(swt_join(p, "new/"), &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "(its parent "));
    assert_int_equal(sw_out_dir(swt_join(p, "x/y"), &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "is not one either"));
    struct stat nst;
    assert_int_not_equal(stat(swt_join(p, "new"), &nst), 0);
    const char *f = swt_join(p, "x.txt");
    assert_int_equal(sw_write_file_atomic(f, "hello", 5, 0644, &e), 0);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(f, 100, &data, &len, &e), 0);
    assert_int_equal(len, 5);
    assert_string_equal(data, "hello");
    assert_int_equal(sw_out_dir(f, &e), SW_EINVAL);
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

static void test_redact(void **state)
{
    char s[200] = "Authorization: Bearer hf_SECRET; again hf_SECRET end";
    assert_int_equal(sw_redact(s, "hf_SECRET"), 2);
    assert_string_equal(s, "Authorization: Bearer ***; again *** end");
    char t[50] = "nothing here";
    assert_int_equal(sw_redact(t, "hf_SECRET"), 0);
    assert_string_equal(t, "nothing here");
    sw_redact(t, "");
    sw_redact(t, NULL);
    sw_redact(NULL, "x");
    sw_redact(t, "not"); /* shorter than SW_REDACT_MIN: left alone */
    assert_string_equal(t, "nothing here");
    /* the forms a server echoes: JSON-escaped, percent-encoded, base64 (with and without '=') */
    char u[300] = "{\"m\":\"Bearer sk\\/a\\\"b+c\"} url ?k=sk%2Fa%22b%2Bc ?k=sk%2fa%22b%2bc "
                  "Basic c2svYSJiK2M= c2svYSJiK2M";
    assert_int_equal(sw_redact(u, "sk/a\"b+c"), 5);
    assert_string_equal(u, "{\"m\":\"Bearer ***\"} url ?k=*** ?k=*** Basic *** ***");
    /* bytes after a NUL are reached by the _mem form */
    char m[32] = "a\0b KEY1 c";
    size_t len = 10;
    assert_int_equal(sw_redact_mem(m, &len, "KEY1"), 1);
    assert_int_equal(len, 9);
    assert_memory_equal(m, "a\0b *** c", 9);
}

static void test_utf8_repair(void **state)
{
    char out[64];
    size_t bad = 99;
    /* well-formed text is copied as it is */
    assert_int_equal(
        sw_utf8_repair("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10, out, sizeof(out), &bad), 10);
    assert_int_equal(bad, 0);
    /* a stray continuation, an overlong '/', a surrogate, past U+10FFFF, a cut sequence, a NUL */
    const char in[] = "x\x80y\xc0\xafz\xed\xa0\x80w\xf4\x90\x80\x80v\xe2\x82";
    sw_utf8_repair(in, sizeof(in) - 1, out, sizeof(out), &bad);
    assert_int_equal(bad, 1 + 2 + 3 + 4 + 2);
    assert_non_null(strstr(out, "x\xef\xbf\xbdy"));
    json_t *j = json_string(out);
    assert_non_null(j); /* what jansson refused before, it takes now */
    json_decref(j);
    char z[3] = {'a', '\0', 'b'};
    sw_utf8_repair(z, 3, out, sizeof(out), &bad);
    assert_int_equal(bad, 1);
    assert_string_equal(out, "a\xef\xbf\xbd"
                             "b");
    /* never half a character at the end */
    assert_int_equal(sw_utf8_repair("ab\xe2\x82\xac", 5, out, 5, &bad), 2);
    assert_string_equal(out, "ab");
}

/* sw_json_set_str keeps a string that is not UTF-8 (bytes from a server, a ledger, a log):
 * repaired, one U+FFFD per bad byte, and never reported as out of memory. */
static void test_fput_term(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    /* an ANSI recolour, a title change (OSC ... BEL), a C1 CSI, a stray byte, DEL, tab kept */
    sw_fput_term(f, "ok\x1b[31mred\x1b]0;t\x07\xc2\x9b\xff\x7f\tcaf\xc3\xa9\nz", 0);
    sw_fput_term(f, "|a\nb", SW_TERM_LINES);
    sw_fput_term(f, NULL, 0);
    fclose(f);
    assert_string_equal(buf, "ok\\x1b[31mred\\x1b]0;t\\x07\\u009b\\xff\\x7f\tcaf\xc3\xa9\\nz|a\nb");
    free(buf);

    /* one line of a line-based file: the same escapes, CR named, a backslash doubled (an env
     * file's comment would continue at one before the line end) */
    struct sw_buf b;
    sw_buf_init(&b, 1 << 10);
    assert_int_equal(sw_buf_line(&b, "/tmp/f\nLD_PRELOAD=/x.so\r\\\x1b\xc2\x85\tcaf\xc3\xa9"), 0);
    assert_int_equal(sw_buf_line(&b, NULL), 0);
    assert_string_equal(sw_buf_cstr(&b),
                        "/tmp/f\\nLD_PRELOAD=/x.so\\r\\\\\\x1b\\u0085\tcaf\xc3\xa9");
    assert_null(strchr(sw_buf_cstr(&b), '\n'));
    sw_buf_free(&b);
}

static void test_json_set_str_not_utf8(void **state)
{
    (void)state;
    json_t *o = json_object();
    assert_non_null(o);
    assert_int_equal(sw_json_set_str(o, "latin1", "caf\xe9 \xff\xfe end"), 0);
    assert_string_equal(json_string_value(json_object_get(o, "latin1")),
                        "caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd end");
    /* well-formed text is kept as it is */
    assert_int_equal(sw_json_set_str(o, "ok",
                                     "\xe2\x82\xac"
                                     "5"),
                     0);
    assert_string_equal(json_string_value(json_object_get(o, "ok")), "\xe2\x82\xac"
                                                                     "5");
    assert_int_equal(sw_json_set_str(o, "none", NULL), 0);
    assert_true(json_is_null(json_object_get(o, "none")));
    /* the one helper, with the count; a NUL inside the bytes is a bad byte too */
    size_t bad = 9;
    json_t *s = sw_json_text("a\0b\x80", 4, &bad);
    assert_non_null(s);
    assert_int_equal(bad, 2);
    assert_string_equal(json_string_value(s), "a\xef\xbf\xbd"
                                              "b\xef\xbf\xbd");
    json_decref(s);
    json_decref(o);
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

/* The region (arena): zeroed aligned allocations, its ceiling, arrays grown to a count. */
static void test_region(void **state)
{
    struct sw_region a;
    sw_region_init(&a, 64u * 1024u);
    char *p = sw_region_alloc(&a, 5);
    char *q = sw_region_alloc(&a, 0);
    assert_non_null(p);
    assert_non_null(q);
    assert_ptr_not_equal(p, q);
    assert_int_equal((uintptr_t)p % 16, 0);
    assert_int_equal(p[0] | p[4], 0);
    assert_string_equal(sw_region_strndup(&a, "abcdef", 3), "abc");
    assert_string_equal(sw_region_printf(&a, "%s-%d", "x", 7), "x-7");
    char longer[600];
    memset(longer, 'y', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_string_equal(sw_region_printf(&a, "%s", longer), longer);
    assert_null(sw_region_strdup(&a, NULL));
    assert_null(sw_region_allocn(&a, SIZE_MAX / 2, 3));
    /* past the ceiling: NULL, and the region still serves what fits */
    assert_null(sw_region_alloc(&a, 60u * 1024u));
    assert_true(a.total <= a.max);
    assert_non_null(sw_region_alloc(&a, 16));
    int *v = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < 20; i++) {
        assert_int_equal(sw_region_grow(&a, &v, &cap, i, sizeof(*v), 20), 0);
        v[i] = (int)i;
    }
    assert_int_equal(cap, 20);
    assert_int_equal(v[19], 19);
    assert_int_equal(v[3], 3);
    assert_int_equal(sw_region_grow(&a, &v, &cap, 20, sizeof(*v), 20), SW_ERANGE);
    sw_region_free(&a);
    sw_region_free(NULL);
    /* every allocation failure is a NULL, never a crash or a leak */
    for (long k = 1; k < 6; k++) {
        sw_region_init(&a, 1u << 20);
        sw_alloc_fail_at(k);
        for (int i = 0; i < 4; i++)
            (void)sw_region_alloc(&a, 20000);
        sw_alloc_fail_at(0);
        sw_region_free(&a);
    }
}

/* Lines: LF ends, CR LF ends when asked, no empty line after a final LF, NUL bytes kept, and the
 * bound that stops the walk naming the line. */
static void test_lines(void **state)
{
    static const char t[] = "a\r\n\nbc\rd\n\0x\r";
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, t, sizeof(t) - 1, SIZE_MAX, 0);
    assert_true(sw_lines_next(&it, &ln));
    assert_int_equal(ln.len, 2);
    assert_true(ln.lf);
    assert_true(sw_lines_next(&it, &ln));
    assert_int_equal(ln.len, 0);
    assert_true(sw_lines_next(&it, &ln));
    assert_int_equal(ln.len, 4);
    assert_memory_equal(ln.s, "bc\rd", 4);
    assert_true(sw_lines_next(&it, &ln));
    assert_int_equal(ln.len, 3);
    assert_false(ln.lf);
    assert_int_equal(it.no, 4);
    assert_false(sw_lines_next(&it, &ln));
    assert_false(it.over);
    sw_lines_init(&it, t, sizeof(t) - 1, SIZE_MAX, SW_LINES_CRLF);
    size_t lens[4], n = 0;
    while (sw_lines_next(&it, &ln))
        lens[n++] = ln.len;
    assert_int_equal(n, 4);
    assert_int_equal(lens[0], 1);
    assert_int_equal(lens[2], 4);
    assert_int_equal(lens[3], 2);
    sw_lines_init(&it, "one\n", 4, SIZE_MAX, 0);
    assert_true(sw_lines_next(&it, &ln));
    assert_false(sw_lines_next(&it, &ln));
    assert_int_equal(it.no, 1);
    sw_lines_init(&it, NULL, 0, SIZE_MAX, 0);
    assert_false(sw_lines_next(&it, &ln));
    sw_lines_init(&it, "ab\r\nabc\r\nx", 10, 2, SW_LINES_CRLF);
    assert_true(sw_lines_next(&it, &ln));
    assert_false(sw_lines_next(&it, &ln));
    assert_true(it.over);
    assert_int_equal(it.no, 2);
    assert_int_equal(ln.len, 3);
    assert_memory_equal(ln.s, "abc", 3);
    assert_false(sw_lines_next(&it, &ln));
}

/* The lexical form of a path, and "at or under" over it: the one comparison of every mount
 * check (issue 27: "/models/../etc" passed a text prefix compare against "/models"). */
static void test_path_lexical(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"/models/../etc", "/etc"},
        {"/models/./a//b", "/models/a/b"},
        {"/", "/"},
        {"//", "/"},
        {"/..", "/"},
        {"/a/b/../../..", "/"},
        {"/a/", "/a"},
        {"a/./b/", "a/b"},
        {"a/..", "."},
        {"", "."},
        {"../a/../../b", "../../b"},
        {"~/m/../n", "~/n"},
        {"/a/.../b", "/a/.../b"},
        {"/a/..b/c", "/a/..b/c"},
    };
    char out[64];
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        assert_int_equal(sw_path_lexical(cases[i][0], out, sizeof(out)), 0);
        if (strcmp(out, cases[i][1]))
            fail_msg("'%s' -> '%s', want '%s'", cases[i][0], out, cases[i][1]);
    }
    assert_int_equal(sw_path_lexical("/abcdef", out, 4), SW_ERANGE);
    char rest[64];
    assert_int_equal(sw_path_within("/models/../etc/x", "/models", rest, sizeof(rest)), 0);
    assert_int_equal(sw_path_within("/models/./a//b", "/models/", rest, sizeof(rest)), 7);
    assert_string_equal(rest, "/a/b");
    assert_int_equal(sw_path_within("/models", "/models", rest, sizeof(rest)), 7);
    assert_string_equal(rest, "");
    assert_int_equal(sw_path_within("/modelsx/a", "/models", NULL, 0), 0);
    assert_int_equal(sw_path_within("/srv/m/../models/a", "/srv//models", rest, sizeof(rest)), 11);
    assert_string_equal(rest, "/a");
    assert_int_equal(sw_path_within("/a/b", "/", rest, sizeof(rest)), 1);
    assert_string_equal(rest, "/a/b");
    assert_int_equal(sw_path_within("a/b", "/", NULL, 0), 0);
    assert_int_equal(sw_path_within("/a/b", "/a", rest, 2), 0); /* rest does not fit */
    assert_int_equal(
        sw_path_rebase("/srv/models/./m//x.gguf", "/srv/models/", "/models", rest, sizeof(rest)),
        11);
    assert_string_equal(rest, "/models/m/x.gguf");
    assert_int_equal(
        sw_path_rebase("/srv/models/../etc", "/srv/models", "/models", rest, sizeof(rest)), 0);
    assert_int_equal(sw_path_rebase("/srv/m", "/srv", "/", rest, sizeof(rest)), 4);
    assert_string_equal(rest, "/m");
    assert_int_equal(sw_path_rebase("/srv", "/srv", "/", rest, sizeof(rest)), 4);
    assert_string_equal(rest, "/");
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_format),  cmocka_unit_test(test_alloc_fail),
        cmocka_unit_test(test_str_in),      cmocka_unit_test(test_buf),
        cmocka_unit_test(test_buf_md),      cmocka_unit_test(test_units),
        cmocka_unit_test(test_number_scan), cmocka_unit_test(test_rule),
        cmocka_unit_test(test_rule_words),  cmocka_unit_test(test_rule_value_hook),
        cmocka_unit_test(test_files),       cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_json),        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_utf8_repair), cmocka_unit_test(test_json_int_range),
        cmocka_unit_test(test_duration),    cmocka_unit_test(test_json_set_str_not_utf8),
        cmocka_unit_test(test_fput_term),   cmocka_unit_test(test_path_lexical),
        cmocka_unit_test(test_region),      cmocka_unit_test(test_lines),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
