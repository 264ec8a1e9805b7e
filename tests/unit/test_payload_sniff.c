/*
 * payload/sniff: the stand-ins a bare download saves in place of a shard (an HTML 403 page, a
 * git-lfs pointer, a JSON error body from the Hub, an XML storage error, nothing at all) are
 * named with their first bytes quoted safely; truncated and insane safetensors headers, GGUF
 * without its magic or cut short, broken JSON; head-only judgements while a download streams.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/payload.h>

#include "swtest.h"
#include "test_payload_build.h"

#include <string.h>

#define HTML403                                                                                    \
    "<!DOCTYPE html>\n<html class=\"\" lang=\"en\">\n<head><title>403 Forbidden</title></head>\n"  \
    "<body>Access to model X is restricted.</body></html>\n"
#define LFS                                                                                        \
    "version https://git-lfs.github.com/spec/v1\n"                                                 \
    "oid sha256:4d7e1c6f8a4f1e9e1bb1e7c4d4f9c3b4b1d9e3e0f7a1c2b3d4e5f60718293a4b\n"                \
    "size 4976698672\n"
#define JSONERR "{\"error\":\"Repository Not Found for url: https://huggingface.co/x/y.\"}"

static enum sw_payload_body sniff_file(const char *dir, const char *name, const void *body,
                                       size_t n, struct sw_payload_sniff *s)
{
    struct sw_err e;
    swt_write(swt_join(dir, name), body, n);
    int rc = sw_payload_sniff_file(swt_join(dir, name), s, &e);
    if (s->body == SW_PAYLOAD_BODY_OK)
        assert_int_equal(rc, 0);
    else {
        assert_int_equal(rc, SW_EMISMATCH);
        assert_int_equal(e.code, SW_EMISMATCH);
        assert_non_null(strstr(e.where, name)); /* the error names the file */
    }
    return s->body;
}

static void test_standins(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_sniff s;
    const char *names[] = {"model-00001-of-00002.safetensors", "m.gguf", "config.json",
                           "tokenizer.model"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(sniff_file(dir, names[i], HTML403, strlen(HTML403), &s),
                         SW_PAYLOAD_BODY_HTML);
        assert_non_null(strstr(s.msg, "an HTML page"));
        /* quoted safely: the newline escaped, the quotes escaped */
        assert_non_null(strstr(s.msg, "<!DOCTYPE html>\\n<html class=\\\"\\\""));
        assert_null(strchr(s.msg, '\n'));

        assert_int_equal(sniff_file(dir, names[i], LFS, strlen(LFS), &s),
                         SW_PAYLOAD_BODY_LFS_POINTER);
        swt_has_all("s.msg", s.msg, "git-lfs pointer", "version https://git-lfs.github.com", NULL);

        assert_int_equal(sniff_file(dir, names[i], JSONERR, strlen(JSONERR), &s),
                         SW_PAYLOAD_BODY_JSON_ERROR);
        swt_has_all("s.msg", s.msg, "JSON error body", "Repository Not Found for url", NULL);

        const char *xml = "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>";
        assert_int_equal(sniff_file(dir, names[i], xml, strlen(xml), &s), SW_PAYLOAD_BODY_XML);
    }
    /* empty: wrong for weights and JSON, fine for an "other" file */
    assert_int_equal(sniff_file(dir, "a.safetensors", "", 0, &s), SW_PAYLOAD_BODY_EMPTY);
    assert_int_equal(sniff_file(dir, "a.gguf", "", 0, &s), SW_PAYLOAD_BODY_EMPTY);
    assert_int_equal(sniff_file(dir, "a.json", "", 0, &s), SW_PAYLOAD_BODY_EMPTY);
    assert_int_equal(sniff_file(dir, "__init__.py", "", 0, &s), SW_PAYLOAD_BODY_OK);
    /* documents are not judged */
    assert_int_equal(sniff_file(dir, "README.md", HTML403, strlen(HTML403), &s),
                     SW_PAYLOAD_BODY_OK);
    /* an API error with an object: {"error": {"message": ...}} */
    const char *apierr = "{\"error\":{\"message\":\"Invalid credentials in Authorization header\"},"
                         "\"status\":401}";
    assert_int_equal(sniff_file(dir, "config.json", apierr, strlen(apierr), &s),
                     SW_PAYLOAD_BODY_JSON_ERROR);
    assert_non_null(strstr(s.msg, "Invalid credentials"));
    /* binary garbage in place of a safetensors / gguf */
    unsigned char bin[64];
    for (int i = 0; i < 64; i++)
        bin[i] = (unsigned char)(0xf0 + i % 16);
    assert_int_equal(sniff_file(dir, "a.gguf", bin, sizeof(bin), &s), SW_PAYLOAD_BODY_WRONG_KIND);
    assert_non_null(strstr(s.msg, "binary data starting f0 f1"));
    assert_int_equal(sniff_file(dir, "a.safetensors", bin, sizeof(bin), &s),
                     SW_PAYLOAD_BODY_MALFORMED);
    assert_non_null(strstr(s.msg, "exceeds"));
    assert_non_null(strstr(s.msg, "\\xf0\\xf1")); /* the first bytes, escaped */
    swt_tmpdir_free(dir);
}

static void test_safetensors(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_sniff s;
    struct sw_err e;
    const char *p = swt_join(dir, "model.safetensors");
    pb_st1(p, "w", 16, 0);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), 0);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_OK);
    assert_true(s.complete);
    assert_int_equal(s.ftype, SW_PAYLOAD_FT_SAFETENSORS);

    /* truncated: the data area is cut */
    pb_st1(p, "w", 16, -10);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_TRUNCATED);
    assert_non_null(strstr(s.msg, "truncated"));

    /* trailing bytes after the data */
    pb_st1(p, "w", 16, 5);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_MALFORMED);

    /* cut inside the header */
    pb_st1(p, "w", 16, -(long)(16 * 4 + 20));
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_true(s.body == SW_PAYLOAD_BODY_MALFORMED || s.body == SW_PAYLOAD_BODY_TRUNCATED);
    assert_non_null(strstr(s.msg, "exceeds the file"));

    /* bad header length: far beyond the ceiling */
    unsigned char b[64] = {0};
    b[7] = 0x40; /* 2^62 */
    memcpy(b + 8, "{}", 2);
    swt_write(p, b, sizeof(b));
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_MALFORMED);
    assert_non_null(strstr(s.msg, "header length 4611686018427387904"));

    /* a header that is not an object */
    memset(b, 0, sizeof(b));
    b[0] = 8;
    memcpy(b + 8, "[1,2,3] ", 8);
    swt_write(p, b, 16);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_MALFORMED);

    /* a header of exactly 123 bytes starts with the byte '{': not mistaken for JSON text */
    char hdr[124];
    memset(hdr, ' ', 123);
    hdr[123] = 0;
    memcpy(hdr, "{\"__metadata__\":{}}", 19);
    memset(b, 0, sizeof(b));
    unsigned char full[8 + 123];
    memset(full, 0, 8);
    full[0] = 123;
    memcpy(full + 8, hdr, 123);
    swt_write(p, full, sizeof(full));
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), 0);

    /* a GGUF named .safetensors */
    pb_gguf(swt_join(dir, "g.gguf"), "llama", (const char *const[]){"token_embd.weight"}, 1, 0, 0,
            0, 0);
    char *data;
    size_t len;
    assert_int_equal(sw_read_file(swt_join(dir, "g.gguf"), 1 << 20, &data, &len, NULL), 0);
    swt_write(p, data, len);
    sw_free(data);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_WRONG_KIND);
    assert_non_null(strstr(s.msg, "a GGUF header"));
    swt_tmpdir_free(dir);
}

static void test_gguf(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_sniff s;
    struct sw_err e;
    const char *p = swt_join(dir, "m.gguf");
    pb_gguf(p, "llama", (const char *const[]){"token_embd.weight", "output.weight"}, 2, 0, 0, 0, 0);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), 0);
    assert_true(s.complete);
    char *data;
    size_t len;
    assert_int_equal(sw_read_file(p, 1 << 20, &data, &len, NULL), 0);
    /* in memory too */
    assert_int_equal(sw_payload_sniff_mem("m.gguf", data, len, &s, &e), 0);
    /* cut in its header */
    swt_write(p, data, 40);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_TRUNCATED);
    /* cut in its tensor data */
    swt_write(p, data, len - 8);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_true(s.body == SW_PAYLOAD_BODY_TRUNCATED || s.body == SW_PAYLOAD_BODY_MALFORMED);
    /* only "GG" */
    swt_write(p, "GG", 2);
    assert_int_equal(sw_payload_sniff_file(p, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_TRUNCATED);
    sw_free(data);
    swt_tmpdir_free(dir);
}

static void test_json(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_sniff s;
    const char *ok = "{\"architectures\":[\"LlamaForCausalLM\"],\"num_hidden_layers\":2}";
    assert_int_equal(sniff_file(dir, "config.json", ok, strlen(ok), &s), SW_PAYLOAD_BODY_OK);
    assert_true(s.complete);
    const char *cut = "{\"architectures\":[\"LlamaFor";
    assert_int_equal(sniff_file(dir, "config.json", cut, strlen(cut), &s),
                     SW_PAYLOAD_BODY_TRUNCATED);
    const char *bad = "{\"a\":1,}";
    assert_int_equal(sniff_file(dir, "config.json", bad, strlen(bad), &s),
                     SW_PAYLOAD_BODY_MALFORMED);
    assert_int_equal(sniff_file(dir, "config.json", "hello", 5, &s), SW_PAYLOAD_BODY_WRONG_KIND);
    /* an object that has an "error" key among many is a config, not an error body */
    const char *many = "{\"error\":0,\"a\":1,\"b\":2,\"c\":3,\"d\":4}";
    assert_int_equal(sniff_file(dir, "config.json", many, strlen(many), &s), SW_PAYLOAD_BODY_OK);
    swt_tmpdir_free(dir);
}

static void test_head_streaming(void **state)
{
    struct sw_payload_sniff s;
    struct sw_err e;
    /* the first chunk of a download: judged against the size the file will have */
    unsigned char b[16] = {0};
    b[0] = 0x40;
    b[8] = '{';
    assert_int_equal(sw_payload_sniff_head("x.safetensors", b, sizeof(b), 1 << 20, &s, &e), 0);
    assert_false(s.complete);
    /* the header length exceeds the announced size */
    assert_int_equal(sw_payload_sniff_head("x.safetensors", b, sizeof(b), 32, &s, &e),
                     SW_EMISMATCH);
    /* fewer bytes than the prefix so far: wait */
    assert_int_equal(sw_payload_sniff_head("x.safetensors", b, 3, 1 << 20, &s, &e), 0);
    assert_int_equal(sw_payload_sniff_head("x.gguf", "GG", 2, 1 << 20, &s, &e), 0);
    /* an HTML page is known from its first bytes whatever comes next */
    assert_int_equal(sw_payload_sniff_head("x.gguf", "<html><head>", 12, 0, &s, &e), SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_HTML);
    /* a JSON error body not yet whole: still an error body */
    assert_int_equal(
        sw_payload_sniff_head("x.safetensors", "{\"error\": \"Unauth", 17, 300, &s, &e),
        SW_EMISMATCH);
    assert_int_equal(s.body, SW_PAYLOAD_BODY_JSON_ERROR);
    /* a .json whose first key is "error", not yet whole: judged when it is */
    assert_int_equal(sw_payload_sniff_head("config.json", "{\"error\": 0, \"a\"", 16, 9000, &s, &e),
                     0);
    assert_int_equal(sw_payload_sniff_head(NULL, "", 0, 0, &s, &e), 0);
}

static void test_quote(void **state)
{
    char out[32];
    assert_string_equal(sw_payload_quote("a\"b\\c\n\t\x01", 8, 100, out, sizeof(out)),
                        "a\\\"b\\\\c\\n\\t\\x01");
    assert_string_equal(sw_payload_quote("abcdef", 6, 3, out, sizeof(out)), "abc...");
    /* a small output buffer cuts cleanly, never mid-escape */
    assert_string_equal(sw_payload_quote("\x01\x02\x03", 3, 100, out, 10), "\\x01...");
    assert_string_equal(sw_payload_quote("", 0, 10, out, sizeof(out)), "");
}

static void test_ftypes(void **state)
{
    assert_int_equal(sw_payload_ftype_of("a/B.SafeTensors"), SW_PAYLOAD_FT_SAFETENSORS);
    assert_int_equal(sw_payload_ftype_of("x.gguf"), SW_PAYLOAD_FT_GGUF);
    assert_int_equal(sw_payload_ftype_of("tokenizer.json"), SW_PAYLOAD_FT_JSON);
    assert_int_equal(sw_payload_ftype_of("README.md"), SW_PAYLOAD_FT_DOC);
    assert_int_equal(sw_payload_ftype_of("tokenizer.model"), SW_PAYLOAD_FT_OTHER);
    assert_string_equal(sw_payload_body_name(SW_PAYLOAD_BODY_LFS_POINTER), "lfs_pointer");
    assert_string_equal(sw_payload_body_name(SW_PAYLOAD_BODY__N), "?");
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_standins),       cmocka_unit_test(test_safetensors),
        cmocka_unit_test(test_gguf),           cmocka_unit_test(test_json),
        cmocka_unit_test(test_head_streaming), cmocka_unit_test(test_quote),
        cmocka_unit_test(test_ftypes),
    };
    return cmocka_run_group_tests_name("payload_sniff", tests, NULL, NULL);
}
