/*
 * model/gguf: fork tensor types. frank-large's payload holds tensors of GGML_TYPE_Q8_0_ROCMFPX
 * ("a type only the ROCmFPX fork reads"; the issue gives it as type 115). Synthesized files with
 * a type-115 tensor: refused undeclared (the message names 115 and the declaration that reads
 * it), read with the declaration (sizes from the declared geometry, bounds checks unchanged), and
 * hostile declarations refused (zero block size, zero type size, a stock id, a duplicate, sizes
 * that overflow 64 bits).
 *
 * The geometry used, 32 elements in 33 bytes (8.25 bits per weight), is what public ROCmFPX
 * tooling states for Q8_0_ROCMFPX; its type id differs between fork versions, so the declaration
 * is the operator's (examples/operator.yaml says so).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swtest.h"
#include "test_gguf_build.h"

#include <stdio.h>
#include <string.h>

static const struct sw_ggml_type ROCMFPX[] = {{115, "Q8_0_ROCMFPX", 32, 33}};

/* One f32 norm and one type-115 matrix of 64 x 4 (2 blocks a row, 66 B a row, 264 B). */
static void make(struct gb *b, uint64_t ne0, uint64_t ne1, uint64_t data)
{
    uint64_t ne_norm[1] = {64}, ne_w[2] = {ne0, ne1};
    gb_header(b, 3, 2, 1);
    gb_kv_str(b, "general.architecture", "llama");
    gb_tensor(b, "blk.0.attn_norm.weight", 1, ne_norm, 0, 0);
    gb_tensor(b, "blk.0.attn_q.weight", 2, ne_w, 115, 256);
    gb_pad(b, 32);
    gb_zeros(b, (size_t)data);
}

static void test_undeclared_refused(void **state)
{
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    (void)state;
    make(&b, 64, 4, 256 + 264);
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "rocmfpx.gguf", &g, &e), SW_EPARSE);
    assert_null(g);
    assert_non_null(strstr(e.msg, "type 115 is not a ggml type"));
    assert_non_null(
        strstr(e.msg, "gguf_types: [{id: 115, name: NAME, block_size: N, type_size: M}]"));
    assert_non_null(strstr(e.msg, "blk.0.attn_q.weight"));
    /* a declaration of other types names who declared them */
    static const struct sw_ggml_type other[] = {{103, "Q8_0_ROCMFPX_OLD", 32, 33}};
    struct sw_gguf_types x = {other, 1, "profile rocmfpx"};
    assert_int_equal(sw_gguf_parse_mem_types(b.p, b.n, "rocmfpx.gguf", &x, &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "nor declared by profile rocmfpx"));
    gb_free(&b);
}

static void test_declared_read(void **state)
{
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    struct sw_gguf_types x = {ROCMFPX, 1, "profile rocmfpx"};
    (void)state;
    make(&b, 64, 4, 256 + 264);
    if (sw_gguf_parse_mem_types(b.p, b.n, "rocmfpx.gguf", &x, &g, &e))
        fail_msg("%s", e.msg);
    const struct sw_gguf_tensor *t = sw_gguf_tensor(g, "blk.0.attn_q.weight");
    assert_non_null(t);
    assert_int_equal(t->type, 115);
    assert_int_equal(t->nbytes, 4 * (64 / 32) * 33);
    assert_int_equal(g->tensor_bytes, 256 + 264);
    const struct sw_ggml_type *ty = sw_gguf_type(g, 115);
    assert_non_null(ty);
    assert_string_equal(ty->name, "Q8_0_ROCMFPX");
    assert_null(sw_ggml_type(115)); /* the stock table is unchanged */
    assert_string_equal(sw_gguf_type(g, 0)->name, "f32");
    sw_gguf_free(g);

    /* bounds checks unchanged: a row that is not whole blocks, data past the end */
    gb_free(&b);
    make(&b, 48, 4, 256 + 264);
    assert_int_equal(sw_gguf_parse_mem_types(b.p, b.n, "r.gguf", &x, &g, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "Q8_0_ROCMFPX block size 32"));
    gb_free(&b);
    make(&b, 64, 4, 256 + 100);
    assert_int_not_equal(sw_gguf_parse_mem_types(b.p, b.n, "r.gguf", &x, &g, &e), 0);
    assert_null(g);
    gb_free(&b);

    /* the same through a file on disk */
    char *dir = swt_tmpdir();
    make(&b, 64, 4, 256 + 264);
    const char *path = swt_join(dir, "m.gguf");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b.p, 1, b.n, f), b.n);
    fclose(f);
    assert_int_not_equal(sw_gguf_open(path, &g, &e), 0);
    assert_non_null(strstr(e.msg, "id: 115"));
    if (sw_gguf_open_types(path, &x, &g, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(sw_gguf_tensor(g, "blk.0.attn_q.weight")->nbytes, 264);
    sw_gguf_free(g);
    gb_free(&b);
    swt_tmpdir_free(dir);
}

static void test_hostile_declarations(void **state)
{
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    (void)state;
    make(&b, 64, 4, 256 + 264);
    struct {
        struct sw_ggml_type t[2];
        size_t n;
        const char *want;
    } bad[] = {
        {{{115, "Q8_0_ROCMFPX", 0, 33}}, 1, "block_size 0"},
        {{{115, "Q8_0_ROCMFPX", 32, 0}}, 1, "type_size 0"},
        {{{115, "Q8_0_ROCMFPX", 1u << 30, 33}}, 1, "block_size 1073741824"},
        {{{115, "Q8_0_ROCMFPX", 32, UINT32_MAX}}, 1, "type_size 4294967295"},
        {{{8, "Q8_0_ROCMFPX", 32, 33}}, 1, "stock ggml type q8_0"},
        {{{115, "", 32, 33}}, 1, "has no name"},
        {{{115, "A", 32, 33}, {115, "B", 32, 34}}, 2, "declared twice"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        struct sw_gguf_types x = {bad[i].t, bad[i].n, "profile hostile"};
        assert_int_equal(sw_gguf_parse_mem_types(b.p, b.n, "r.gguf", &x, &g, &e), SW_EINVAL);
        assert_null(g);
        if (!strstr(e.msg, bad[i].want))
            fail_msg("case %zu: %s", i, e.msg);
    }
    gb_free(&b);
    /* a legal declaration whose sizes overflow on a hostile shape: 2^40 x 2^23 elements of a
     * 1-element, 2^20-byte block */
    static const struct sw_ggml_type wide[] = {{115, "WIDE", 1, SW_GGML_MAX_TYPE_SIZE}};
    struct sw_gguf_types x = {wide, 1, "profile wide"};
    make(&b, 1ull << 40, 1ull << 23, 256 + 264);
    assert_int_equal(sw_gguf_parse_mem_types(b.p, b.n, "r.gguf", &x, &g, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "overflows"));
    gb_free(&b);
    make(&b, 1ull << 45, 1, 256 + 264);
    assert_int_equal(sw_gguf_parse_mem_types(b.p, b.n, "r.gguf", &x, &g, &e), SW_ERANGE);
    gb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_undeclared_refused),
        cmocka_unit_test(test_declared_read),
        cmocka_unit_test(test_hostile_declarations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
