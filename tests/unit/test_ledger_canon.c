/*
 * ledger, pure parts: shape canonicalization (what hashes equal, what does not, the exact
 * canonical text), the canonical JSON writer, known-bad rule expressions, the text helpers, and
 * allocation-failure torture of all of them. No database here (test_ledger.c has those).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/ledger.h>

#include "ledger/ledger_internal.h"
#include "swledger.h"
#include "swtest.h"

#include <string.h>

/* Hash of a shape given as JSON text; fails the test on error. */
static void hash_of(const char *shape, char out[SW_LEDGER_HASH_LEN + 1])
{
    struct sw_err e;
    sw_err_clear(&e);
    json_t *j = swl_json(shape);
    int rc = sw_ledger_shape_canon(j, NULL, NULL, out, &e);
    if (rc)
        fail_msg("canon failed: %s (%s)", e.msg, shape);
    json_decref(j);
}

static char *canon_text(const char *shape)
{
    struct sw_err e;
    char *t = NULL;
    json_t *j = swl_json(shape);
    int rc = sw_ledger_shape_canon(j, NULL, &t, NULL, &e);
    if (rc)
        fail_msg("canon failed: %s (%s)", e.msg, shape);
    json_decref(j);
    return t;
}

/* The error message canonicalization gives for a shape (must fail). */
static const char *canon_err(const char *shape, struct sw_err *e)
{
    sw_err_clear(e);
    json_t *j = swl_json(shape);
    int rc = sw_ledger_shape_canon(j, NULL, NULL, NULL, e);
    json_decref(j);
    assert_int_not_equal(rc, 0);
    return e->msg;
}

static void test_canon_equal_spellings(void **state)
{
    /* each group: the same shape written differently -> one hash */
    static const char *const groups[][5] = {
        {"{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"m.gguf\"},\"ctx\":180000,\"slots\":3,"
         "\"kv_dtype_k\":\"f16\",\"kv_dtype_v\":\"q8_0\"}",
         "{\"slots\":3,\"ctx\":\"180k\",\"engine\":\"llama-server\",\"model\":\"m.gguf\","
         "\"ctk\":\"fp16\",\"ctv\":\"Q8_0\"}",
         "{\"np\":\"3\",\"c\":\"180,000\",\"engine\":\"LlamaCpp\",\"model\":{\"name\":\" m.gguf "
         "\"},"
         "\"cache_type_k\":\"float16\",\"cache_type_v\":\"q8_0\",\"tp\":1,\"flags\":{}}",
         "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"m.gguf\"},\"n_ctx\":1.8e5,"
         "\"n_parallel\":3.0,\"kv_dtype_k\":\"half\",\"kv_dtype_v\":\"q8_0\",\"pp\":\"1\","
         "\"arch_digest\":null}",
         NULL},
        {"{\"engine\":\"vllm\",\"model\":{\"repo\":\"Org/M\",\"revision\":\"ABCDEF12\"},"
         "\"max_model_len\":200704,\"max_num_seqs\":3,\"kv_cache_dtype\":\"fp8\","
         "\"kv_cache_memory_bytes\":\"3.15e9\",\"tensor_parallel_size\":2,\"util\":0.9}",
         "{\"engine\":\"vllm\",\"model\":\"hf:Org/M@abcdef12\",\"ctx\":\"200,704\",\"slots\":3,"
         "\"kv_dtype_k\":\"fp8\",\"kv_dtype_v\":\"FP8\",\"kv_bytes\":3150000000,\"tp\":2,"
         "\"gpu_memory_utilization\":\"0.90\"}",
         "{\"engine\":\"vllm\",\"model\":{\"repo\":\"Org/M\",\"revision\":\"abcdef12\"},"
         "\"ctx\":200704,\"slots\":3,\"kv_dtype\":\"fp8\",\"kv_dtype_v\":\"fp8\","
         "\"kv_bytes\":3.15e9,\"tp\":2,\"gpu_memory_utilization\":0.9}",
         NULL},
        /* a sha256 identity drops names and sizes: the same bytes are the same model */
        {"{\"engine\":\"llama.cpp\",\"model\":{\"sha256\":\"" /* 64 hex */
         "FF348F31AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"name\":\"a\"},"
         "\"ctx\":4096}",
         "{\"engine\":\"llama.cpp\",\"model\":\"sha256:"
         "ff348f31aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"ctx\":4096}",
         "{\"engine\":\"llama.cpp\",\"model\":{\"sha256\":"
         "\"ff348f31aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":\"1GiB\","
         "\"file\":\"b.gguf\"},\"ctx\":\"4Ki\"}",
         NULL},
        /* flags: names fold dashes and case, "true"/"4" strings become typed, nulls drop */
        {"{\"engine\":\"llama.cpp\",\"model\":\"m\",\"flags\":{\"swa_full\":true,\"spec\":4,"
         "\"mmproj\":{\"name\":\"p.gguf\",\"size\":918166048}}}",
         "{\"engine\":\"llama.cpp\",\"model\":\"m\",\"flags\":{\"--swa-full\":\"true\","
         "\"SPEC\":\"4\",\"mmproj\":{\"size\":918166048.0,\"name\":\"p.gguf\"},\"gone\":null}}",
         NULL},
    };
    for (size_t g = 0; g < SW_ARRAY_LEN(groups); g++) {
        char first[SW_LEDGER_HASH_LEN + 1], h[SW_LEDGER_HASH_LEN + 1];
        hash_of(groups[g][0], first);
        for (size_t i = 1; groups[g][i]; i++) {
            hash_of(groups[g][i], h);
            if (strcmp(first, h)) {
                char *a = canon_text(groups[g][0]), *b = canon_text(groups[g][i]);
                fail_msg("group %zu member %zu hashes differently:\n%s\n%s", g, i, a, b);
            }
        }
    }
}

static void test_canon_differences(void **state)
{
    /* every memory-relevant change moves the hash */
    static const char *const shapes[] = {
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":2,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":200704,\"slots\":3,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"auto\"}",
        "{\"engine\":\"sglang\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":\"m2\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":{\"name\":\"m\",\"quant\":\"fp8\"},\"ctx\":262144,"
        "\"slots\":3,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
        "\"tp\":2}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
        "\"mnbt\":1024}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
        "\"kv_bytes\":6100000000}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
        "\"gpu_memory_utilization\":0.98}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
        "\"flags\":{\"expert_precise_memory\":true}}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype\":\"fp8\","
        "\"flags\":{\"expert_precise_memory\":false}}",
        "{\"engine\":\"vllm\",\"engine_profile\":\"fork\",\"model\":\"m\",\"ctx\":262144,"
        "\"slots\":3,\"kv_dtype\":\"fp8\"}",
        "{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":262144,\"slots\":3,\"kv_dtype_k\":\"fp8\"}",
    };
    char h[SW_ARRAY_LEN(shapes)][SW_LEDGER_HASH_LEN + 1];
    for (size_t i = 0; i < SW_ARRAY_LEN(shapes); i++) {
        hash_of(shapes[i], h[i]);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(h[i], h[k]))
                fail_msg("shapes %zu and %zu hash the same:\n%s\n%s", k, i, shapes[k], shapes[i]);
    }
}

static void test_canon_exact_text(void **state)
{
    /* The canonical form is a contract (hashes are stored): this text and hash may only change
     * together with SW_LEDGER_CANON_VERSION and a migration that rehashes. */
    char *t = canon_text(
        "{\"tp\":2,\"engine\":\"vLLM\",\"model\":{\"name\":\"Qwen3.8-Flash-Next-Uncensored-FP8\","
        "\"quant\":\"FP8\"},\"max_model_len\":\"200,704\",\"seqs\":3,\"kv_dtype\":\"fp8\","
        "\"kv_bytes\":\"3.15e9\",\"mnbt\":1024,\"util\":0.9,"
        "\"flags\":{\"--moe-gather\":\"32x64\",\"prefetch\":\"false\",\"note\":"
        "\"a\\\"b\\\\c\\u0001\\u00e9\","
        "\"ratio\":0.1,\"big\":1e300,\"list\":[3,\"x\",null,2.5]}}");
    assert_string_equal(
        t, "{\"ctx\":200704,\"engine\":\"vllm\",\"flags\":{\"big\":1e+300,\"list\":[3,\"x\",null,"
           "2.5],\"moe_gather\":\"32x64\",\"note\":\"a\\\"b\\\\c\\u0001\xc3\xa9\",\"prefetch\":"
           "false,\"ratio\":0.1},\"gpu_memory_utilization\":0.9,\"kv_bytes\":3150000000,"
           "\"kv_dtype_k\":\"fp8\",\"kv_dtype_v\":\"fp8\",\"mnbt\":1024,\"model\":{\"name\":"
           "\"Qwen3.8-Flash-Next-Uncensored-FP8\",\"quant\":\"fp8\"},\"slots\":3,\"tp\":2}");
    char h[SW_LEDGER_HASH_LEN + 1];
    assert_int_equal(sw__sha256_hex(t, strlen(t), h), 0);
    char again[SW_LEDGER_HASH_LEN + 1];
    hash_of("{\"engine\":\"vllm\",\"tp\":2,\"model\":{\"quant\":\"fp8\",\"name\":"
            "\"Qwen3.8-Flash-Next-Uncensored-FP8\"},\"ctx\":200704,\"slots\":3,\"kv_dtype_k\":"
            "\"fp8\",\"kv_dtype_v\":\"fp8\",\"kv_bytes\":3150000000,\"mnbt\":1024,"
            "\"gpu_memory_utilization\":0.9,\"flags\":{\"moe_gather\":\"32x64\",\"prefetch\":false,"
            "\"note\":\"a\\\"b\\\\c\\u0001\\u00e9\",\"ratio\":0.1,\"big\":1e300,"
            "\"list\":[3,\"x\",null,2.5]}}",
            again);
    assert_string_equal(h, again);
    /* SHA-256 of the text above, computed independently (Python hashlib) */
    assert_string_equal(h, "f9e6458632d6d54a622a18fad42d64986d6374bd7f8a80dfdf4a50b802b1e174");
    sw_free(t);

    struct sw_err e;
    char known[SW_LEDGER_HASH_LEN + 1];
    assert_int_equal(sw__sha256_hex("abc", 3, known), 0);
    assert_string_equal(known, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    (void)e;
}

static void test_canon_idempotent(void **state)
{
    static const char *const shapes[] = {
        "{\"engine\":\"vllm\",\"model\":\"hf:a/b@CAFE\",\"ctx\":\"200,704\",\"util\":1,"
        "\"mem_fraction_static\":0.85,\"flags\":{\"X-Y\":[1.5,{\"Q\":\"2\"}],\"e\":1e-7}}",
        "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"m\",\"size\":\"1.5GiB\"},"
        "\"ngl\":\"all\",\"ub\":512,\"b\":\"2Ki\",\"kv_tokens\":606208}",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(shapes); i++) {
        char *t1 = canon_text(shapes[i]);
        char *t2 = canon_text(t1);
        assert_string_equal(t1, t2);
        sw_free(t1);
        sw_free(t2);
    }
    /* a fraction of 1 stays a real in canonical form ("1.0") and reads back the same */
    char *t = canon_text("{\"engine\":\"vllm\",\"model\":\"m\",\"util\":1}");
    assert_non_null(strstr(t, "\"gpu_memory_utilization\":1.0"));
    sw_free(t);
}

static void test_canon_errors(void **state)
{
    struct sw_err e;
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"maxlen\":5}", &e),
                           "unknown key 'maxlen'"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":1,"
                                     "\"max_model_len\":2}",
                                     &e),
                           "same key (ctx)"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"kv_bytes\":"
                                     "\"6.1GiB\"}",
                                     &e),
                           "shape.kv_bytes"));
    assert_non_null(strstr(e.msg, "whole number"));
    assert_non_null(
        strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"ctx\":-4}", &e), "shape.ctx"));
    assert_non_null(
        strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"slots\":0}", &e), "out of range"));
    assert_non_null(strstr(canon_err("{\"model\":\"m\"}", &e), "\"engine\" is required"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\"}", &e), "\"model\" is required"));
    assert_non_null(
        strstr(canon_err("{\"engine\":\"vllm\",\"model\":{\"sha256\":\"abc\"}}", &e), "64 hex"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":{\"nme\":\"x\"}}", &e),
                           "unknown model key 'nme'"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"util\":1.5}", &e),
                           "outside (0, 1]"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"kv_dtype\":\"fp8\","
                                     "\"kv_dtype_v\":\"f16\"}",
                                     &e),
                           "disagrees"));
    assert_non_null(
        strstr(canon_err("{\"engine\":\"v llm\",\"model\":\"m\"}", &e), "not a valid engine"));
    assert_non_null(strstr(canon_err("{\"engine\":\"vllm\",\"model\":\"m\",\"flags\":"
                                     "{\"a\":1,\"A\":2}}",
                                     &e),
                           "given twice"));
    assert_non_null(strstr(canon_err("[1]", &e), "expected an object"));
    /* nesting beyond the limit is refused, not recursed into */
    char deep[512];
    size_t o =
        (size_t)snprintf(deep, sizeof(deep), "{\"engine\":\"vllm\",\"model\":\"m\",\"flags\":");
    for (int i = 0; i < 20; i++)
        o += (size_t)snprintf(deep + o, sizeof(deep) - o, "{\"a\":");
    o += (size_t)snprintf(deep + o, sizeof(deep) - o, "1");
    for (int i = 0; i < 21; i++)
        o += (size_t)snprintf(deep + o, sizeof(deep) - o, "}");
    assert_non_null(strstr(canon_err(deep, &e), "deeper"));
}

static void test_json_writer(void **state)
{
    struct sw_err e;
    char *t = NULL;
    json_t *j =
        swl_json("{\"b\":[0.1,5.15,-2.5e-10,3],\"a\":\"\\u00e9\\n\\t\\\"x\\\"\",\"\\u00e0\":true,"
                 "\"Z\":null}");
    assert_int_equal(sw__json_canon_text(j, 4096, &t, &e), 0);
    assert_string_equal(t, "{\"Z\":null,\"a\":\"\xc3\xa9\\u000a\\u0009\\\"x\\\"\",\"b\":[0.1,"
                           "5.15,-2.5e-10,3],\"\xc3\xa0\":true}");
    sw_free(t);
    /* the ceiling holds */
    assert_int_equal(sw__json_canon_text(j, 10, &t, &e), SW_ERANGE);
    assert_null(t);
    json_decref(j);
    /* invalid UTF-8 smuggled past jansson is refused */
    j = json_object();
    json_object_set_new(j, "k", json_stringn_nocheck("\xff\xfe", 2));
    assert_int_equal(sw__json_canon_text(j, 4096, &t, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "UTF-8"));
    json_decref(j);
}

struct rule_case {
    const char *expr;
    bool hit;
};

static void test_rules(void **state)
{
    const char *shape_text =
        "{\"engine\":\"vllm\",\"model\":{\"name\":\"Q\",\"quant\":\"FP8\"},\"ctx\":262144,"
        "\"slots\":2,\"kv_dtype\":\"fp8\",\"kv_bytes\":\"3.15e9\",\"util\":0.98,\"tp\":2,"
        "\"flags\":{\"--expert-precise-memory\":true,\"moe_gather\":\"32x64\"}}";
    static const struct rule_case cases[] = {
        {"slots == 2", true},
        {"max_num_seqs == 2", true},
        {"SEQS==2", true},
        {"slots != 2", false},
        {"slots >= 3", false},
        {"!(slots >= 3)", true},
        {"kv_dtype == fp8", true},
        {"kv_dtype == \"FP8\"", true},
        {"kv_dtype_v == fp8 && kv_dtype_k == fp8", true},
        {"engine == vLLM", true},
        {"engine == llamacpp", false},
        {"ctx > 241664 && kv_dtype == fp8", true},
        {"ctx > 262144 || slots < 3", true},
        {"ctx > 262144 || slots < 2", false},
        {"kv_bytes >= 3.15e9 && kv_bytes < 3GiB", true},
        {"kv_bytes == 3,150,000,000", true},
        {"ctx == 256Ki", true},
        {"gpu_memory_utilization > 0.95", true},
        {"util <= 0.9", false},
        {"flags.expert-precise-memory", true},
        {"flags.expert_precise_memory == false", false},
        {"flags.moe_gather == 32x64", true},
        {"model.quant == fp8", true},
        {"model.name == Q && tp == 2", true},
        {"mnbt < 4096", false},    /* missing key: never fires */
        {"mnbt != 4096", false},   /* ... whatever the operator */
        {"!(mnbt == 4096)", true}, /* but negating a miss is true */
        {"model.name > 3", false}, /* type mismatch */
        {"slots == \"2\"", false}, /* a quoted 2 is a string */
        {"((slots == 2))", true},
    };
    json_t *shape = swl_json(shape_text);
    json_t *canon = NULL;
    struct sw_err e;
    assert_int_equal(sw_ledger_shape_canon(shape, &canon, NULL, NULL, &e), 0);
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        struct sw_ledger_rule *r = NULL;
        sw_err_clear(&e);
        if (sw_ledger_rule_parse(cases[i].expr, &r, &e))
            fail_msg("rule '%s' does not parse: %s", cases[i].expr, e.msg);
        if (sw_ledger_rule_eval(r, canon) != cases[i].hit)
            fail_msg("rule '%s' should %s", cases[i].expr, cases[i].hit ? "hit" : "miss");
        sw_ledger_rule_free(r);
    }
    /* kv_dtype with k != v reads as "k/v" */
    bool hit = false;
    json_t *mixed =
        swl_json("{\"engine\":\"llama.cpp\",\"model\":\"m\",\"ctk\":\"f16\",\"ctv\":\"q8_0\"}");
    assert_int_equal(sw_ledger_rule_match("kv_dtype == f16/q8_0", mixed, &hit, &e), 0);
    assert_true(hit);
    assert_int_equal(sw_ledger_rule_match("kv_dtype == f16", mixed, &hit, &e), 0);
    assert_false(hit);
    /* and, not and a lone '=' are the same operators as &&, ! and == */
    assert_int_equal(
        sw_ledger_rule_match("kv_dtype = f16/q8_0 and not kv_dtype = f16", mixed, &hit, &e), 0);
    assert_true(hit);
    json_decref(mixed);

    static const struct {
        const char *expr;
        const char *msg;
        int64_t offset;
    } bad[] = {
        {"slots =< 2", "expected a value", 7},
        {"slots ==", "expected a value", 8},
        {"seqz == 2", "unknown shape key 'seqz'", 0},
        {"model.colour == red", "model keys", 0},
        {"flags == 1", "flags.<name>", 0},
        {"ctx.x == 1", "has no fields", 0},
        {"(slots == 2", "expected ')'", 11},
        {"slots == 2 extra", "unexpected 'extra'", 11},
        {"engine < vllm", "only == and !=", -1},
        {"", "empty", -1},
        {"slots == \"2", "unterminated", 9},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        struct sw_ledger_rule *r = NULL;
        sw_err_clear(&e);
        assert_int_equal(sw_ledger_rule_parse(bad[i].expr, &r, &e), SW_EPARSE);
        assert_null(r);
        if (!strstr(e.msg, bad[i].msg))
            fail_msg("'%s': got '%s', want '%s'", bad[i].expr, e.msg, bad[i].msg);
        if (bad[i].offset >= 0 && e.offset != bad[i].offset)
            fail_msg("'%s': offset %lld, want %lld", bad[i].expr, (long long)e.offset,
                     (long long)bad[i].offset);
    }
    /* depth and size limits */
    char deep[200];
    memset(deep, '(', 40);
    deep[40] = '\0';
    struct sw_ledger_rule *r = NULL;
    assert_int_equal(sw_ledger_rule_parse(deep, &r, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "deeper"));
    char many[4096];
    size_t o = 0;
    for (int i = 0; i < 200; i++)
        o += (size_t)snprintf(many + o, sizeof(many) - o, "%s", i ? "&&slots==1" : "slots==1");
    assert_int_equal(sw_ledger_rule_parse(many, &r, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "more than 256 terms"));
    json_decref(canon);
    json_decref(shape);
}

static void test_text_helpers(void **state)
{
    char *out = NULL;
    size_t n = 0;
    assert_true(sw__utf8_valid("abc\xc3\xa9", 5));
    assert_false(sw__utf8_valid("\xc0\xaf", 2));         /* overlong */
    assert_false(sw__utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    assert_false(sw__utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_int_equal(sw__utf8_repair("a\xff"
                                     "b\0c",
                                     5, &out, &n),
                     0);
    assert_int_equal(n, 1 + 3 + 1 + 3 + 1);
    assert_memory_equal(out,
                        "a\xef\xbf\xbd"
                        "b\xef\xbf\xbd"
                        "c",
                        n);
    sw_free(out);

    /* a log bigger than the ceiling keeps its head and its tail, cut at lines */
    size_t big = 300000;
    char *log = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        log[i] = (i % 100 == 99) ? '\n' : (char)('a' + i % 26);
    memcpy(log, "HEAD-LINE\n", 10);
    memcpy(log + big - 12, "\nFAIL-LINE\xff\n", 12);
    log[big] = '\0';
    assert_int_equal(sw__log_excerpt(log, big, SW_LEDGER_EXCERPT_MAX, &out), 0);
    size_t len = strlen(out);
    assert_true(len <= SW_LEDGER_EXCERPT_MAX);
    assert_true(len > SW_LEDGER_EXCERPT_MAX - 4096);
    assert_true(sw__utf8_valid(out, len));
    assert_memory_equal(out, "HEAD-LINE\n", 10);
    swt_has_all("out", out, "FAIL-LINE\xef\xbf\xbd\n", "bytes of the log elided", NULL);
    sw_free(out);
    free(log);

    int64_t t;
    struct sw_err e;
    assert_int_equal(sw_ledger_parse_time("2026-10-01T13:27:17Z", &t, &e), 0);
    assert_int_equal(t, 1790861237);
    assert_int_equal(sw_ledger_parse_time("2026-10-01", &t, &e), 0);
    assert_int_equal(t, 1790812800);
    assert_int_equal(sw_ledger_parse_time("1790812800", &t, &e), 0);
    assert_int_equal(t, 1790812800);
    assert_int_equal(sw_ledger_parse_time("2026-13-01", &t, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_parse_time("yesterday", &t, &e), SW_EINVAL);

    uint64_t mib;
    assert_int_equal(sw_ledger_parse_mib("21684MiB", &mib, &e), 0);
    assert_int_equal(mib, 21684);
    assert_int_equal(sw_ledger_parse_mib("21,684 MiB", &mib, &e), 0);
    assert_int_equal(mib, 21684);
    assert_int_equal(sw_ledger_parse_mib("24GiB", &mib, &e), 0);
    assert_int_equal(mib, 24576);
    assert_int_equal(sw_ledger_parse_mib("21684", &mib, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "no unit"));
    assert_int_equal(sw_ledger_parse_mib("1.5MiB", &mib, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "whole number of MiB"));
}

/* ---------------------------------------------------------------------------------------------
 * Allocation-failure torture: fail the 1st, 2nd, ... allocation of each operation until it runs
 * through with no injected failure. Every run must end in success or SW_ENOMEM (never a crash,
 * never another error), and ASan checks that the error paths free what they took.
 */

typedef int (*torture_fn)(void *arg, char *result, size_t n);

static void torture(const char *name, torture_fn fn, void *arg)
{
    char want[4096], got[4096];
    sw_alloc_fail_at(0);
    assert_int_equal(fn(arg, want, sizeof(want)), 0);
    int failures = 0;
    for (long k = 1; k < 100000; k++) {
        long before = sw_alloc_count();
        sw_alloc_fail_at(k);
        int rc = fn(arg, got, sizeof(got));
        long used = sw_alloc_count() - before;
        sw_alloc_fail_at(0);
        if (rc == 0) {
            if (strcmp(want, got))
                fail_msg("%s: result differs after a failed allocation %ld", name, k);
            if (used < k) /* the injected failure never happened: we covered every one */
                break;
            continue;
        }
        if (rc != SW_ENOMEM)
            fail_msg("%s: allocation %ld failed -> %s, want SW_ENOMEM or success", name, k,
                     sw_strerror(rc));
        failures++;
    }
    assert_true(failures > 0);
}

static int t_canon(void *arg, char *res, size_t n)
{
    struct sw_err e;
    char *text = NULL;
    json_t *c = NULL;
    char h[SW_LEDGER_HASH_LEN + 1];
    int rc = sw_ledger_shape_canon(arg, &c, &text, h, &e);
    if (!rc)
        snprintf(res, n, "%s %s %zu", h, text, json_object_size(c));
    json_decref(c);
    sw_free(text);
    return rc;
}

static json_t *rule_shape;

static int t_rule(void *arg, char *res, size_t n)
{
    struct sw_err e;
    bool hit = false;
    int rc = sw_ledger_rule_match(arg, rule_shape, &hit, &e);
    if (!rc)
        snprintf(res, n, "%d", hit);
    return rc;
}

static int t_excerpt(void *arg, char *res, size_t n)
{
    char *out = NULL;
    size_t len = 100000;
    char *log = arg;
    int rc = sw__log_excerpt(log, len, 8192, &out);
    if (!rc)
        snprintf(res, n, "%zu %.64s", strlen(out), out);
    sw_free(out);
    return rc;
}

static void test_alloc_torture(void **state)
{
    json_t *vllm = swl_json(
        "{\"engine\":\"vllm\",\"model\":{\"repo\":\"a/b\",\"revision\":\"CAFE\",\"size\":\"1GiB\"},"
        "\"max_model_len\":\"200,704\",\"seqs\":3,\"kv_dtype\":\"fp8\",\"kv_bytes\":3.15e9,"
        "\"util\":0.9,\"tp\":2,\"flags\":{\"--a-b\":[1,\"2\",{\"c\":\"true\"}],\"d\":0.5}}");
    json_t *llama = swl_json(
        "{\"engine\":\"llama-server\",\"model\":\"sha256:ff348f31aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaa\",\"c\":\"540,672\",\"np\":3,\"ctk\":\"f16\","
        "\"ctv\":\"q8_0\",\"flags\":{\"mmproj\":{\"name\":\"p.gguf\",\"size\":918166048}}}");
    torture("canon vllm", t_canon, vllm);
    torture("canon llama", t_canon, llama);
    json_decref(vllm);
    json_decref(llama);
    rule_shape = swl_json("{\"engine\":\"vllm\",\"model\":\"m\",\"slots\":2,\"ctx\":262144,"
                          "\"flags\":{\"a-b\":true}}");
    torture("rule", t_rule,
            "slots == 2 && !(ctx < 200,704 || flags.a-b == false) && "
            "kv_dtype != \"x\"");
    json_decref(rule_shape);
    char *log = malloc(100001);
    for (size_t i = 0; i < 100000; i++)
        log[i] = i % 61 == 60 ? '\n' : (i % 97 == 0 ? '\xff' : 'x');
    log[100000] = '\0';
    torture("excerpt", t_excerpt, log);
    free(log);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canon_equal_spellings),
        cmocka_unit_test(test_canon_differences),
        cmocka_unit_test(test_canon_exact_text),
        cmocka_unit_test(test_canon_idempotent),
        cmocka_unit_test(test_canon_errors),
        cmocka_unit_test(test_json_writer),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_text_helpers),
        cmocka_unit_test(test_alloc_torture),
    };
    return cmocka_run_group_tests_name("ledger_canon", tests, NULL, NULL);
}
