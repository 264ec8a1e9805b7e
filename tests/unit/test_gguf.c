/*
 * model/gguf reader: a valid file read back value by value, the getters, hostile files (huge
 * lengths and counts, overflowing shapes, offsets past the end, overlaps, bad alignment, nested
 * arrays, duplicates), every truncation of a small valid file, files that are not GGUF at all,
 * allocation-failure torture, and split sets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swtest.h"
#include "test_gguf_build.h"

#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#define T_F32  0
#define T_F16  1
#define T_Q8_0 8

/* The reference file: every metadata type, three tensors (f32, q8_0, f16) laid out with padding. */
static void make_valid(struct gb *b, uint32_t version)
{
    gb_header(b, version, 3, 20);
    gb_kv_str(b, "general.architecture", "llama");
    gb_str(b, "general.note");
    gb_u32(b, 8);
    gb_strn(b, "ab\0cd", 5);
    gb_kv_u32(b, "llama.block_count", 2);
    gb_str(b, "llama.context_length");
    gb_u32(b, 10);
    gb_u64(b, 4096);
    gb_kv_i32(b, "llama.embedding_length", 8);
    gb_kv_u16(b, "llama.attention.head_count", 2);
    gb_str(b, "llama.attention.head_count_kv");
    gb_u32(b, 9);
    gb_u32(b, 5);
    gb_u64(b, 2);
    gb_u32(b, 1);
    gb_u32(b, 2);
    gb_str(b, "llama.rope.freq_base");
    gb_u32(b, 6);
    float f = 10000.0f;
    gb_put(b, &f, 4);
    gb_str(b, "llama.attention.layer_norm_rms_epsilon");
    gb_u32(b, 12);
    double d = 1e-5;
    gb_put(b, &d, 8);
    gb_str(b, "general.u8");
    gb_u32(b, 0);
    gb_u8(b, 7);
    gb_str(b, "general.i8");
    gb_u32(b, 1);
    gb_u8(b, (uint8_t)-3);
    gb_str(b, "general.i16");
    gb_u32(b, 3);
    int16_t s16 = -300;
    gb_put(b, &s16, 2);
    gb_str(b, "general.i64");
    gb_u32(b, 11);
    gb_u64(b, (uint64_t)(int64_t)-5000000000ll);
    gb_str(b, "general.flag");
    gb_u32(b, 7);
    gb_u8(b, 1);
    gb_str(b, "tokenizer.ggml.tokens");
    gb_u32(b, 9);
    gb_u32(b, 8);
    gb_u64(b, 3);
    gb_str(b, "<s>");
    gb_str(b, "a");
    gb_strn(b, "b\0c", 3);
    gb_str(b, "tokenizer.ggml.scores");
    gb_u32(b, 9);
    gb_u32(b, 6);
    gb_u64(b, 3);
    float sc[3] = {0.5f, -1.0f, 2.0f};
    gb_put(b, sc, sizeof(sc));
    gb_str(b, "test.bools");
    gb_u32(b, 9);
    gb_u32(b, 7);
    gb_u64(b, 3);
    gb_u8(b, 1);
    gb_u8(b, 0);
    gb_u8(b, 1);
    gb_str(b, "test.u64s");
    gb_u32(b, 9);
    gb_u32(b, 10);
    gb_u64(b, 2);
    gb_u64(b, 1);
    gb_u64(b, UINT64_MAX);
    gb_str(b, "test.empty");
    gb_u32(b, 9);
    gb_u32(b, 4);
    gb_u64(b, 0);
    gb_kv_u32(b, "general.alignment", 32);
    /* f32 [8,4] = 128 B at 0; q8_0 [32,2] = 68 B at 128; f16 [8,4] = 64 B at 224 */
    gb_tensor(b, "token_embd.weight", 2, (uint64_t[]){8, 4}, T_F32, 0);
    gb_tensor(b, "blk.0.attn_q.weight", 2, (uint64_t[]){32, 2}, T_Q8_0, 128);
    gb_tensor(b, "output.weight", 2, (uint64_t[]){8, 4}, T_F16, 224);
    gb_pad(b, 32);
    gb_zeros(b, 288);
}

static size_t valid_data_offset(void)
{
    struct gb b = {0};
    make_valid(&b, 3);
    size_t n = b.n - 288;
    gb_free(&b);
    return n;
}

static void check_valid(const struct sw_gguf *g, uint32_t version, size_t size)
{
    assert_int_equal(g->version, version);
    assert_int_equal(g->n_kv, 20);
    assert_int_equal(g->n_tensors, 3);
    assert_int_equal(g->alignment, 32);
    assert_int_equal(g->file_size, size);
    assert_int_equal(g->data_offset, valid_data_offset());
    assert_int_equal(g->data_offset % 32, 0);
    assert_int_equal(g->tensor_bytes, 128 + 68 + 64);
    assert_int_equal(g->n_splits, 1);

    const char *s;
    uint64_t u;
    int64_t i;
    double f;
    bool b;
    assert_int_equal(sw_gguf_get_str(g, "general.architecture", &s), 0);
    assert_string_equal(s, "llama");
    assert_string_equal(sw_gguf_arch(g), "llama");
    const struct sw_gguf_kv *kv = sw_gguf_find(g, "general.note");
    assert_non_null(kv);
    assert_int_equal(kv->val.as.str.len, 5);
    assert_memory_equal(kv->val.as.str.s, "ab\0cd", 6);
    assert_int_equal(swt_gguf_u64(g, "block_count"), 2);
    assert_int_equal(swt_gguf_u64(g, "context_length"), 4096);
    assert_int_equal(sw_gguf_arch_u64(g, "embedding_length", &u), 0); /* i32 read as u64 */
    assert_int_equal(u, 8);
    assert_int_equal(swt_gguf_u64(g, "attention.head_count"), 2);
    assert_int_equal(sw_gguf_arch_f64(g, "rope.freq_base", &f), 0);
    assert_true(f == 10000.0);
    assert_int_equal(sw_gguf_arch_f64(g, "attention.layer_norm_rms_epsilon", &f), 0);
    assert_true(f == 1e-5);
    assert_int_equal(sw_gguf_get_u64(g, "general.u8", &u), 0);
    assert_int_equal(u, 7);
    assert_int_equal(sw_gguf_get_i64(g, "general.i8", &i), 0);
    assert_int_equal(i, -3);
    assert_int_equal(sw_gguf_get_u64(g, "general.i8", &u), SW_ERANGE);
    assert_int_equal(sw_gguf_get_i64(g, "general.i16", &i), 0);
    assert_int_equal(i, -300);
    assert_int_equal(sw_gguf_get_i64(g, "general.i64", &i), 0);
    assert_int_equal(i, -5000000000ll);
    assert_int_equal(sw_gguf_get_bool(g, "general.flag", &b), 0);
    assert_true(b);
    assert_int_equal(sw_gguf_get_u64(g, "general.flag", &u), 0);
    assert_int_equal(u, 1);
    /* wrong types and missing keys */
    assert_int_equal(sw_gguf_get_u64(g, "general.architecture", &u), SW_EPARSE);
    assert_int_equal(sw_gguf_get_u64(g, "llama.rope.freq_base", &u), SW_EPARSE);
    assert_int_equal(sw_gguf_get_str(g, "llama.block_count", &s), SW_EPARSE);
    assert_int_equal(sw_gguf_get_bool(g, "llama.block_count", &b), SW_EPARSE);
    assert_int_equal(sw_gguf_get_u64(g, "tokenizer.ggml.tokens", &u), SW_EPARSE);
    assert_int_equal(sw_gguf_get_u64(g, "no.such.key", &u), SW_ENOENT);
    assert_null(sw_gguf_find(g, "general"));
    struct sw_err e;
    char buf[512];
    sw_err_clear(&e);
    assert_int_equal(sw_gguf_key_err(g, "general.architecture", "u64", SW_EPARSE, &e), SW_EPARSE);
    sw_err_format(&e, buf, sizeof(buf));
    assert_non_null(strstr(buf, "'general.architecture' is string, expected u64"));
    assert_true(e.offset > 0);
    sw_gguf_key_err(g, "x.y", "u64", SW_ENOENT, &e);
    assert_non_null(strstr(e.msg, "'x.y' not found"));
    /* per-layer: array of 2, scalar broadcast, wrong length */
    uint64_t pl[4];
    assert_int_equal(sw_gguf_arch_per_layer(g, "attention.head_count_kv", pl, 2), 0);
    assert_int_equal(pl[0], 1);
    assert_int_equal(pl[1], 2);
    assert_int_equal(sw_gguf_arch_per_layer(g, "attention.head_count_kv", pl, 3), SW_EPARSE);
    assert_int_equal(sw_gguf_arch_per_layer(g, "attention.head_count", pl, 4), 0);
    assert_int_equal(pl[3], 2);
    assert_int_equal(sw_gguf_arch_per_layer(g, "feed_forward_length", pl, 2), SW_ENOENT);
    double pf[2];
    assert_int_equal(sw_gguf_arch_per_layer_f64(g, "rope.freq_base", pf, 2), 0);
    assert_true(pf[1] == 10000.0);
    /* arrays */
    kv = sw_gguf_find(g, "tokenizer.ggml.tokens");
    assert_int_equal(kv->val.type, SW_GGUF_ARRAY);
    assert_int_equal(kv->val.as.arr.elem, SW_GGUF_STRING);
    assert_int_equal(kv->val.as.arr.n, 3);
    assert_string_equal(kv->val.as.arr.v.str[0].s, "<s>");
    assert_int_equal(kv->val.as.arr.v.str[2].len, 3);
    kv = sw_gguf_find(g, "tokenizer.ggml.scores");
    assert_true(kv->val.as.arr.v.f[1] == -1.0);
    kv = sw_gguf_find(g, "test.bools");
    assert_true(kv->val.as.arr.v.b[0] && !kv->val.as.arr.v.b[1] && kv->val.as.arr.v.b[2]);
    kv = sw_gguf_find(g, "test.u64s");
    assert_true(kv->val.as.arr.v.u[1] == UINT64_MAX);
    kv = sw_gguf_find(g, "test.empty");
    assert_int_equal(kv->val.as.arr.n, 0);
    /* tensors */
    const struct sw_gguf_tensor *t = sw_gguf_tensor(g, "blk.0.attn_q.weight");
    assert_non_null(t);
    assert_int_equal(t->type, T_Q8_0);
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->ne[0], 32);
    assert_int_equal(t->ne[1], 2);
    assert_int_equal(t->ne[2], 1);
    assert_int_equal(t->nbytes, 68);
    assert_int_equal(t->offset, 128);
    assert_int_equal(sw_gguf_tensor_nelements(t), 64);
    assert_int_equal(sw_gguf_tensor(g, "output.weight")->nbytes, 64);
    assert_null(sw_gguf_tensor(g, "output"));
}

static void test_valid_mem_and_file(void **state)
{
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    for (uint32_t v = 2; v <= 3; v++) {
        make_valid(&b, v);
        assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "mem.gguf", &g, &e), 0);
        check_valid(g, v, b.n);
        assert_string_equal(g->path, "mem.gguf");
        sw_gguf_free(g);

        char *dir = swt_tmpdir();
        const char *p = swt_join(dir, "m.gguf");
        swt_write(p, b.p, b.n);
        assert_int_equal(sw_gguf_open_single(p, &g, &e), 0);
        check_valid(g, v, b.n);
        sw_gguf_free(g);
        assert_int_equal(sw_gguf_open(p, &g, &e), 0);
        check_valid(g, v, b.n);
        sw_gguf_free(g);
        swt_tmpdir_free(dir);
        gb_free(&b);
    }
    sw_gguf_free(NULL);
}

/* Array elements as values, and the totals per ggml type, as inspect prints them. */
static void test_array_elem_and_type_totals(void **state)
{
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    make_valid(&b, 3);
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "mem.gguf", &g, &e), 0);
    struct sw_gguf_value x;
    const struct sw_gguf_kv *kv = sw_gguf_find(g, "tokenizer.ggml.tokens");
    assert_int_equal(sw_gguf_array_elem(&kv->val, 0, &x), 0);
    assert_int_equal(x.type, SW_GGUF_STRING);
    assert_string_equal(x.as.str.s, "<s>");
    assert_int_equal(sw_gguf_array_elem(&kv->val, 3, &x), SW_ERANGE);
    kv = sw_gguf_find(g, "tokenizer.ggml.scores");
    assert_int_equal(sw_gguf_array_elem(&kv->val, 1, &x), 0);
    assert_true(x.as.f == -1.0);
    kv = sw_gguf_find(g, "test.bools");
    assert_int_equal(sw_gguf_array_elem(&kv->val, 1, &x), 0);
    assert_int_equal(x.type, SW_GGUF_BOOL);
    assert_false(x.as.b);
    kv = sw_gguf_find(g, "test.u64s");
    assert_int_equal(sw_gguf_array_elem(&kv->val, 1, &x), 0);
    assert_true(x.as.u == UINT64_MAX);
    kv = sw_gguf_find(g, "test.empty");
    assert_int_equal(sw_gguf_array_elem(&kv->val, 0, &x), SW_ERANGE);
    struct sw_gguf_value scalar = {.type = SW_GGUF_UINT32, .as.u = 7};
    assert_int_equal(sw_gguf_array_elem(&scalar, 0, &x), SW_EINVAL); /* not an array */
    uint64_t n, by;
    sw_gguf_type_totals(g, T_Q8_0, &n, &by);
    assert_int_equal(n, 1);
    assert_int_equal(by, 68);
    sw_gguf_type_totals(g, 29, &n, &by);
    assert_int_equal(n, 0);
    assert_int_equal(by, 0);
    sw_gguf_free(g);
    gb_free(&b);
}

/* Parse and expect failure `code` whose formatted message contains `needle`. */
static void expect_fail(const struct gb *b, int code, const char *needle, int64_t offset)
{
    struct sw_gguf *g = NULL;
    struct sw_err e;
    char buf[2048];
    int rc = sw_gguf_parse_mem(b->p, b->n, "bad.gguf", &g, &e);
    sw_err_format(&e, buf, sizeof(buf));
    if (rc != code || (needle && !strstr(buf, needle)) || (offset >= 0 && e.offset != offset))
        fail_msg("want %s containing \"%s\" at byte %lld; got rc=%d offset=%lld: %s",
                 sw_strerror(code), needle ? needle : "", (long long)offset, rc,
                 (long long)e.offset, buf);
    assert_null(g);
}

static void test_versions(void **state)
{
    struct gb b = {0};
    make_valid(&b, 1);
    expect_fail(&b, SW_EUNSUPPORTED, "version 1 is no longer supported", 4);
    gb_free(&b);
    make_valid(&b, 4);
    expect_fail(&b, SW_EUNSUPPORTED, "version 4", 4);
    gb_free(&b);
    make_valid(&b, 0x03000000u);
    expect_fail(&b, SW_EUNSUPPORTED, "big-endian", 4);
    gb_free(&b);
    make_valid(&b, 0);
    expect_fail(&b, SW_EUNSUPPORTED, "version 0", 4);
    gb_free(&b);
}

static void test_not_gguf(void **state)
{
    static const struct {
        const char *body;
        const char *needle;
    } cases[] = {
        {"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title>", "HTML page"},
        {"\n  <html><body>Access denied</body></html>", "HTML page"},
        {"version https://git-lfs.github.com/spec/v1\noid sha256:4d7f0a2b\nsize 4683073536\n",
         "git-lfs pointer"},
        {"{\"error\":\"Repository not found\"}", "JSON object"},
        {"[{\"message\": \"rate limited\"}]", "JSON array"},
        {"Entry not found", "text starting \"Entry not found"},
        {"\x7f"
         "ELF\x02\x01\x01",
         "binary data starting 7f 45 4c 46"},
        {"", "empty"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        struct gb b = {0};
        gb_put(&b, cases[i].body, strlen(cases[i].body));
        expect_fail(&b, SW_EPARSE, cases[i].needle, 0);
        expect_fail(&b, SW_EPARSE, "not a GGUF file", 0);
        gb_free(&b);
    }
    /* the same through a file */
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "model.gguf");
    swt_write_str(p, "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n");
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_open(p, &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "git-lfs pointer"));
    assert_non_null(strstr(e.where, "model.gguf"));
    assert_int_equal(sw_gguf_open(swt_join(dir, "missing.gguf"), &g, &e), SW_ENOENT);
    assert_int_equal(sw_gguf_open(dir, &g, &e), SW_EINVAL);
    swt_tmpdir_free(dir);
}

/* Every proper prefix of a valid file fails cleanly, as truncated, through memory and fd. */
static void test_truncated_every_byte(void **state)
{
    struct gb b = {0};
    make_valid(&b, 3);
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "cut.gguf");
    for (size_t n = 0; n < b.n; n++) {
        struct sw_gguf *g = NULL;
        struct sw_err e;
        int want = n == 0 ? SW_EPARSE : SW_ETRUNC;
        int rc = sw_gguf_parse_mem(b.p, n, "cut", &g, &e);
        if (rc != want)
            fail_msg("prefix %zu: rc %d (%s)", n, rc, e.msg);
        assert_null(g);
        if (n > 0 && n < 4)
            assert_non_null(strstr(e.msg, "truncated"));
        swt_write(p, b.p, n);
        rc = sw_gguf_open(p, &g, &e);
        if (rc != want)
            fail_msg("file prefix %zu: rc %d (%s)", n, rc, e.msg);
        assert_true(n == 0 || e.offset >= 0);
    }
    gb_free(&b);
    swt_tmpdir_free(dir);
}

static void test_hostile_lengths(void **state)
{
    struct gb b = {0};
    /* a key whose length claims 2^62 bytes */
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 1ull << 62);
    gb_put(&b, "general.name", 12);
    expect_fail(&b, SW_ERANGE, "more than the whole file", 24);
    gb_free(&b);
    /* a string value of UINT64_MAX bytes */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, 8);
    gb_u64(&b, UINT64_MAX);
    expect_fail(&b, SW_ERANGE, "'general.name'", 24 + 8 + 12 + 4);
    gb_free(&b);
    /* a string value a little longer than what is left: truncated */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, 8);
    gb_u64(&b, 10);
    gb_put(&b, "llama", 5);
    expect_fail(&b, SW_ETRUNC, "truncated", -1);
    gb_free(&b);
    /* an array that claims 2^61 u32 elements: overflow of the byte count */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "llama.head_counts");
    gb_u32(&b, 9);
    gb_u32(&b, 4);
    gb_u64(&b, 1ull << 62);
    gb_u32(&b, 1);
    expect_fail(&b, SW_ERANGE, "overflows", -1);
    gb_free(&b);
    /* a string array that claims 1e12 strings */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, 9);
    gb_u32(&b, 8);
    gb_u64(&b, 1000000000000ull);
    gb_str(&b, "a");
    expect_fail(&b, SW_ERANGE, "array of 1000000000000 string", 24 + 8 + 21 + 4 + 4);
    gb_free(&b);
    /* counts that cannot fit */
    gb_header(&b, 3, 1ull << 40, 1ull << 40);
    expect_fail(&b, SW_ERANGE, "cannot fit", 8);
    gb_free(&b);
    gb_header(&b, 3, UINT64_MAX, UINT64_MAX);
    expect_fail(&b, SW_ERANGE, "cannot fit", 8);
    gb_free(&b);
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "a.b", 1);
    expect_fail(&b, SW_ETRUNC, "cannot fit", 8);
    gb_free(&b);
}

static void test_hostile_structure(void **state)
{
    struct gb b = {0};
    /* nested array */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "x.nested");
    gb_u32(&b, 9);
    gb_u32(&b, 9);
    gb_u64(&b, 1);
    gb_u32(&b, 4);
    gb_u64(&b, 1);
    gb_u32(&b, 1);
    expect_fail(&b, SW_EPARSE, "nested arrays", 24 + 8 + 8 + 4);
    gb_free(&b);
    /* invalid value type */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "x.y");
    gb_u32(&b, 13);
    gb_u64(&b, 0);
    expect_fail(&b, SW_EPARSE, "not a GGUF type", 24 + 8 + 3);
    gb_free(&b);
    /* invalid array element type */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "x.y");
    gb_u32(&b, 9);
    gb_u32(&b, 77);
    gb_u64(&b, 0);
    expect_fail(&b, SW_EPARSE, "element type 77", -1);
    gb_free(&b);
    /* duplicate key, empty key */
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "llama.block_count", 1);
    gb_kv_u32(&b, "llama.block_count", 2);
    expect_fail(&b, SW_EPARSE, "duplicate key (first at byte 24)", 24 + 8 + 17 + 8);
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "", 1);
    expect_fail(&b, SW_EPARSE, "empty key", 24);
    gb_free(&b);
    /* alignment: zero, not a power of two, wrong type */
    for (int k = 0; k < 3; k++) {
        gb_header(&b, 3, 0, 1);
        if (k == 2) {
            gb_str(&b, "general.alignment");
            gb_u32(&b, 10);
            gb_u64(&b, 32);
        } else {
            gb_kv_u32(&b, "general.alignment", k == 0 ? 0 : 48);
        }
        expect_fail(&b, SW_EPARSE, k == 2 ? "must be u32 (it is u64)" : "nonzero power of two", 24);
        gb_free(&b);
    }
}

/* A one-tensor file with a chosen shape/type/offset and `data` bytes of tensor data. */
static void one_tensor(struct gb *b, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                       uint64_t off, size_t data)
{
    gb_header(b, 3, 1, 0);
    gb_tensor(b, "blk.0.ffn_up.weight", n_dims, ne, type, off);
    gb_pad(b, 32);
    gb_zeros(b, data);
}

static void test_hostile_tensors(void **state)
{
    struct gb b = {0};
    /* dimension product overflow */
    one_tensor(&b, 4, (uint64_t[]){1ull << 20, 1ull << 20, 1ull << 20, 1ull << 20}, T_F32, 0, 64);
    expect_fail(&b, SW_ERANGE, "element count passes 2^63", -1);
    gb_free(&b);
    one_tensor(&b, 2, (uint64_t[]){1ull << 62, 4}, T_F32, 0, 64);
    expect_fail(&b, SW_ERANGE, "2^63", -1);
    gb_free(&b);
    /* elements fit but bytes do not (f32: 2^62 elements = 2^64 bytes) */
    one_tensor(&b, 2, (uint64_t[]){1ull << 31, 1ull << 31}, T_F32, 0, 64);
    expect_fail(&b, SW_ERANGE, "overflows 64 bits", -1);
    gb_free(&b);
    /* negative and zero dimensions */
    one_tensor(&b, 2, (uint64_t[]){(uint64_t)-8, 4}, T_F32, 0, 64);
    expect_fail(&b, SW_EPARSE, "positive element count", -1);
    gb_free(&b);
    one_tensor(&b, 2, (uint64_t[]){8, 0}, T_F32, 0, 64);
    expect_fail(&b, SW_EPARSE, "dimension 1 is 0", -1);
    gb_free(&b);
    /* too many dimensions */
    gb_header(&b, 3, 1, 0);
    gb_str(&b, "t");
    gb_u32(&b, 5);
    for (int i = 0; i < 5; i++)
        gb_u64(&b, 1);
    gb_u32(&b, 0);
    gb_u64(&b, 0);
    expect_fail(&b, SW_EPARSE, "5 dimensions", 24 + 9);
    gb_free(&b);
    /* row not a multiple of the block */
    one_tensor(&b, 2, (uint64_t[]){33, 2}, T_Q8_0, 0, 256);
    expect_fail(&b, SW_EPARSE, "not a multiple of the q8_0 block size 32", -1);
    gb_free(&b);
    /* unknown and removed types */
    one_tensor(&b, 1, (uint64_t[]){32}, 99, 0, 256);
    expect_fail(&b, SW_EPARSE, "type 99 is not a ggml type", -1);
    gb_free(&b);
    one_tensor(&b, 1, (uint64_t[]){32}, 31, 0, 256);
    expect_fail(&b, SW_EUNSUPPORTED, "q4_0_4_4", -1);
    gb_free(&b);
    /* data offset past the end, and a tensor that runs past it */
    one_tensor(&b, 1, (uint64_t[]){8}, T_F32, 1ull << 40, 32);
    expect_fail(&b, SW_ETRUNC, "past the end of the file", 24);
    gb_free(&b);
    one_tensor(&b, 1, (uint64_t[]){8}, T_F32, UINT64_MAX - 31, 32);
    expect_fail(&b, SW_ETRUNC, "past the end of the file", 24);
    gb_free(&b);
    one_tensor(&b, 1, (uint64_t[]){16}, T_F32, 0, 63);
    expect_fail(&b, SW_ETRUNC, "truncated or corrupt", 24);
    gb_free(&b);
    /* unaligned offset */
    one_tensor(&b, 1, (uint64_t[]){8}, T_F32, 4, 64);
    expect_fail(&b, SW_EPARSE, "not a multiple of the alignment 32", 24);
    gb_free(&b);
    /* names: empty, too long, duplicate */
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "", 1, (uint64_t[]){8}, T_F32, 0);
    expect_fail(&b, SW_EPARSE, "empty tensor name", 24);
    gb_free(&b);
    char longname[80];
    memset(longname, 'x', 64);
    longname[64] = '\0';
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, longname, 1, (uint64_t[]){8}, T_F32, 0);
    expect_fail(&b, SW_EPARSE, "at most 63", 24);
    gb_free(&b);
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "a.weight", 1, (uint64_t[]){8}, T_F32, 0);
    gb_tensor(&b, "a.weight", 1, (uint64_t[]){8}, T_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    expect_fail(&b, SW_EPARSE, "duplicate tensor name (tensors #0 and #1)", -1);
    gb_free(&b);
    /* overlapping tensors (the second starts inside the first) */
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "a.weight", 1, (uint64_t[]){16}, T_F32, 0);
    gb_tensor(&b, "b.weight", 1, (uint64_t[]){8}, T_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 128);
    expect_fail(&b, SW_EPARSE, "overlaps tensor 'a.weight'", -1);
    gb_free(&b);
    /* disjoint but out of order, with a gap: accepted */
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "a.weight", 1, (uint64_t[]){8}, T_F32, 96);
    gb_tensor(&b, "b.weight", 1, (uint64_t[]){8}, T_F32, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 128);
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "ok", &g, &e), 0);
    assert_int_equal(g->tensor_bytes, 64);
    sw_gguf_free(g);
    gb_free(&b);
    /* a 0-dim (scalar) tensor is one element */
    one_tensor(&b, 0, NULL, T_F32, 0, 32);
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "ok", &g, &e), 0);
    assert_int_equal(g->tensors[0].nbytes, 4);
    sw_gguf_free(g);
    gb_free(&b);
    /* no tensors: the data section starts right after the metadata, unpadded (as ggml) */
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "a.b", 1);
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "ok", &g, &e), 0);
    assert_int_equal(g->data_offset, b.n);
    sw_gguf_free(g);
    gb_free(&b);
}

/* A header larger than SW_GGUF_MAX_HEADER is refused without reading it (sparse file). */
static void test_header_ceiling(void **state)
{
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "big.gguf");
    struct gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.blob");
    gb_u32(&b, 8);
    gb_u64(&b, SW_GGUF_MAX_HEADER + 10);
    swt_write(p, b.p, b.n);
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)(SW_GGUF_MAX_HEADER + 4096)), 0);
    close(fd);
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_open(p, &g, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "more than any real GGUF header"));
    gb_free(&b);
    swt_tmpdir_free(dir);
}

/* Every allocation of a parse may fail: the parse must fail with SW_ENOMEM and free everything
 * (ASan's leak checker proves the second half in the sanitizer build). */
static void test_alloc_torture(void **state)
{
    struct gb b = {0};
    make_valid(&b, 3);
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "m.gguf");
    swt_write(p, b.p, b.n);
    for (int mode = 0; mode < 2; mode++) {
        long n;
        for (n = 1; n < 10000; n++) {
            struct sw_gguf *g = NULL;
            struct sw_err e;
            sw_alloc_fail_at(n);
            int rc = mode == 0 ? sw_gguf_parse_mem(b.p, b.n, "m", &g, &e) : sw_gguf_open(p, &g, &e);
            sw_alloc_fail_at(0);
            if (rc == 0) {
                check_valid(g, 3, b.n);
                sw_gguf_free(g);
                break;
            }
            if (rc != SW_ENOMEM)
                fail_msg("mode %d, failing allocation %ld: rc %d (%s)", mode, n, rc, e.msg);
            assert_null(g);
        }
        assert_true(n > 2 && n < 10000);
    }
    gb_free(&b);
    swt_tmpdir_free(dir);
}

/* ----------------------------------------------------------------------------------------- */

static void write_part(const char *dir, const char *prefix, int no, int count, int tensors_count,
                       const char *tensor, bool meta)
{
    struct gb b = {0};
    char name[256];
    snprintf(name, sizeof(name), "%s-%05d-of-%05d.gguf", prefix, no + 1, count);
    gb_header(&b, 3, 1, meta ? 4 : 2);
    if (meta) {
        gb_kv_str(&b, "general.architecture", "llama");
        gb_kv_i32(&b, "split.tensors.count", tensors_count);
    }
    gb_kv_u16(&b, "split.no", (uint16_t)no);
    gb_kv_u16(&b, "split.count", (uint16_t)count);
    gb_tensor(&b, tensor, 2, (uint64_t[]){8, 2}, T_F32, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    swt_write(swt_join(dir, name), b.p, b.n);
    gb_free(&b);
}

static void test_split_sets(void **state)
{
    char *dir = swt_tmpdir();
    write_part(dir, "m", 0, 3, 3, "token_embd.weight", true);
    write_part(dir, "m", 1, 3, 3, "blk.0.ffn_up.weight", false);
    write_part(dir, "m", 2, 3, 3, "output.weight", false);
    struct sw_gguf *g = NULL;
    struct sw_err e;
    /* from any part */
    for (int k = 1; k <= 3; k++) {
        char name[64];
        snprintf(name, sizeof(name), "m-%05d-of-00003.gguf", k);
        char path[4096];
        snprintf(path, sizeof(path), "%s", swt_join(dir, name));
        int rc = sw_gguf_open(path, &g, &e);
        if (rc)
            fail_msg("%s: %s", name, e.msg);
        assert_int_equal(g->n_splits, 3);
        assert_int_equal(g->n_tensors, 3);
        assert_int_equal(g->tensor_bytes, 3 * 64);
        assert_non_null(strstr(g->path, "m-00001-of-00003.gguf"));
        assert_string_equal(sw_gguf_arch(g), "llama");
        assert_int_equal(sw_gguf_tensor(g, "output.weight")->split, 2);
        assert_int_equal(sw_gguf_tensor(g, "token_embd.weight")->split, 0);
        sw_gguf_free(g);
    }
    /* one part alone */
    assert_int_equal(sw_gguf_open_single(swt_join(dir, "m-00002-of-00003.gguf"), &g, &e), 0);
    assert_int_equal(g->n_tensors, 1);
    sw_gguf_free(g);

    /* allocation torture over the whole set */
    long n;
    for (n = 1; n < 1000; n++) {
        sw_alloc_fail_at(n);
        int rc = sw_gguf_open(swt_join(dir, "m-00002-of-00003.gguf"), &g, &e);
        sw_alloc_fail_at(0);
        if (!rc) {
            sw_gguf_free(g);
            break;
        }
        assert_int_equal(rc, SW_ENOMEM);
    }
    assert_true(n < 1000);

    /* a missing part */
    unlink(swt_join(dir, "m-00003-of-00003.gguf"));
    assert_int_equal(sw_gguf_open(swt_join(dir, "m-00001-of-00003.gguf"), &g, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "part 3 of 3 is missing"));
    /* a part that says it is another part */
    write_part(dir, "m", 1, 3, 3, "output.weight", false);
    rename(swt_join(dir, "m-00002-of-00003.gguf"), swt_join(dir, "m-00003-of-00003.gguf"));
    write_part(dir, "m", 1, 3, 3, "blk.0.ffn_up.weight", false);
    assert_int_equal(sw_gguf_open(swt_join(dir, "m-00001-of-00003.gguf"), &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "inconsistent split set"));
    /* tensor count disagrees */
    write_part(dir, "m", 2, 3, 3, "output.weight", false);
    write_part(dir, "m", 0, 3, 4, "token_embd.weight", true);
    assert_int_equal(sw_gguf_open(swt_join(dir, "m-00002-of-00003.gguf"), &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "split.tensors.count is 4"));
    /* duplicate tensor across parts */
    write_part(dir, "m", 0, 3, 3, "token_embd.weight", true);
    write_part(dir, "m", 2, 3, 3, "token_embd.weight", false);
    assert_int_equal(sw_gguf_open(swt_join(dir, "m-00001-of-00003.gguf"), &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "appears twice"));
    /* a split part that is not named as one */
    write_part(dir, "m", 2, 3, 3, "output.weight", false);
    rename(swt_join(dir, "m-00001-of-00003.gguf"), swt_join(dir, "renamed.gguf"));
    assert_int_equal(sw_gguf_open(swt_join(dir, "renamed.gguf"), &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "not named <prefix>-00001-of-00003.gguf"));
    swt_tmpdir_free(dir);
}

static void test_ggml_types(void **state)
{
    const struct sw_ggml_type *t = sw_ggml_type(8);
    assert_non_null(t);
    assert_string_equal(t->name, "q8_0");
    assert_int_equal(t->blck, 32);
    assert_int_equal(t->size, 34);
    assert_int_equal(sw_ggml_type_by_name("Q4_K")->id, 12);
    assert_int_equal(sw_ggml_type_by_name("iq4_nl")->size, 18);
    assert_int_equal(sw_ggml_type_by_name("mxfp4")->size, 17);
    assert_int_equal(sw_ggml_type_by_name("nvfp4")->blck, 64);
    assert_int_equal(sw_ggml_type_by_name("q1_0")->id, 41);
    assert_int_equal(sw_ggml_type_by_name("bf16")->id, 30);
    assert_null(sw_ggml_type(31));
    assert_null(sw_ggml_type(43));
    assert_null(sw_ggml_type_by_name("q4_2"));
    uint64_t r;
    assert_int_equal(sw_ggml_row_size(12, 4096, &r), 0);
    assert_int_equal(r, 16 * 144);
    assert_int_equal(sw_ggml_row_size(12, 100, &r), SW_EPARSE);
    assert_int_equal(sw_ggml_row_size(99, 100, &r), SW_EPARSE);
    assert_int_equal(sw_ggml_type_count_known(), 35);
    for (size_t i = 0; i < sw_ggml_type_count_known(); i++) {
        const struct sw_ggml_type *x = sw_ggml_type_at(i);
        assert_ptr_equal(sw_ggml_type(x->id), x);
        assert_ptr_equal(sw_ggml_type_by_name(x->name), x);
    }
    assert_null(sw_ggml_type_at(35));
    assert_string_equal(sw_gguf_type_name(SW_GGUF_STRING), "string");
    assert_string_equal(sw_gguf_type_name((enum sw_gguf_type)99), "invalid");
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_mem_and_file),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_not_gguf),
        cmocka_unit_test(test_truncated_every_byte),
        cmocka_unit_test(test_hostile_lengths),
        cmocka_unit_test(test_hostile_structure),
        cmocka_unit_test(test_hostile_tensors),
        cmocka_unit_test(test_header_ceiling),
        cmocka_unit_test(test_alloc_torture),
        cmocka_unit_test(test_split_sets),
        cmocka_unit_test(test_ggml_types),
        cmocka_unit_test(test_array_elem_and_type_totals),
    };
    return cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
}
