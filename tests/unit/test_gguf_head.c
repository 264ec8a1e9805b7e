/*
 * model/gguf, reading the header alone: a GGUF cut after its header (and anywhere inside its
 * tensor data) is refused as truncated by the default open and accepted, marked header_only, by
 * a header-only read, from a file, from memory and for a split set whose parts are cut; a cut
 * inside the header is refused either way; a header-only read of a whole file is not marked;
 * absent data still has to sit inside 64-bit offsets. And the head of a file held elsewhere
 * (sw_gguf_parse_head): each time the bytes held end inside the header the reader says how far at
 * least it goes, never past the header's end, so a caller reading "that far, or one chunk more"
 * reads at most the header plus one chunk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swtest.h"
#include "test_gguf_build.h"

#include <string.h>

#define T_F32 0

/* A small llama-style header with a vocabulary of n_tok strings, two f32 tensors (1024 B and
 * 4096 B of data) after it; *hdr_end gets where the tensor infos end, *data_off where the data
 * starts. */
static void make_model(struct gb *b, int n_tok, size_t *hdr_end, size_t *data_off)
{
    gb_header(b, 3, 2, 3);
    gb_kv_str(b, "general.architecture", "llama");
    gb_kv_u32(b, "llama.block_count", 1);
    gb_str(b, "tokenizer.ggml.tokens");
    gb_u32(b, 9);
    gb_u32(b, 8);
    gb_u64(b, (uint64_t)n_tok);
    for (int i = 0; i < n_tok; i++) {
        char t[32];
        snprintf(t, sizeof(t), "tok%d", i);
        gb_str(b, t);
    }
    gb_tensor(b, "token_embd.weight", 2, (uint64_t[]){16, 16}, T_F32, 0);
    gb_tensor(b, "output.weight", 2, (uint64_t[]){16, 64}, T_F32, 1024);
    *hdr_end = b->n;
    gb_pad(b, 32);
    *data_off = b->n;
    gb_zeros(b, 1024 + 4096);
}

static void test_cut_after_header(void **state)
{
    (void)state;
    struct gb b = {0};
    size_t hdr, data;
    make_model(&b, 10, &hdr, &data);
    char *dir = swt_tmpdir();
    char path[4096];
    snprintf(path, sizeof(path), "%s", swt_join(dir, "cut.gguf"));
    const struct sw_gguf_read_opts ho = {.header_only = true};
    /* cut right after the tensor infos, after the padding, inside each tensor's data */
    const size_t cuts[] = {hdr, data, data + 1, data + 1024, data + 1024 + 4095};
    for (size_t k = 0; k < SW_ARRAY_LEN(cuts); k++) {
        size_t n = cuts[k];
        struct sw_gguf *g = NULL;
        struct sw_err e;
        swt_write(path, b.p, n);
        /* the default stays strict: verify and fetch need the data */
        assert_int_equal(sw_gguf_open(path, &g, &e), SW_ETRUNC);
        assert_null(g);
        assert_non_null(strstr(e.msg, "truncated"));
        assert_int_equal(sw_gguf_parse_mem(b.p, n, "cut", &g, &e), SW_ETRUNC);
        /* header only: accepted, said */
        assert_int_equal(sw_gguf_open_opts(path, &ho, &g, &e), 0);
        assert_true(g->header_only);
        assert_int_equal(g->n_tensors, 2);
        assert_int_equal(g->n_kv, 3);
        assert_int_equal(g->data_offset, data);
        assert_int_equal(g->tensor_bytes, 1024 + 4096);
        assert_int_equal(g->file_size, n);
        assert_string_equal(sw_gguf_arch(g), "llama");
        sw_gguf_free(g);
        assert_int_equal(sw_gguf_open_single_opts(path, &ho, &g, &e), 0);
        assert_true(g->header_only);
        sw_gguf_free(g);
        assert_int_equal(sw_gguf_parse_head(b.p, n, n, "cut", &ho, NULL, &g, &e), 0);
        assert_true(g->header_only);
        sw_gguf_free(g);
    }
    /* the whole file read header-only is not marked */
    struct sw_gguf *g = NULL;
    struct sw_err e;
    swt_write(path, b.p, b.n);
    assert_int_equal(sw_gguf_open_opts(path, &ho, &g, &e), 0);
    assert_false(g->header_only);
    assert_int_equal(g->file_size, b.n);
    sw_gguf_free(g);
    assert_int_equal(sw_gguf_open(path, &g, &e), 0);
    assert_false(g->header_only);
    sw_gguf_free(g);
    /* a cut inside the header is truncated either way, every byte of it */
    for (size_t n = 1; n < hdr; n++) {
        swt_write(path, b.p, n);
        int rc = sw_gguf_open_opts(path, &ho, &g, &e);
        if (rc != SW_ETRUNC)
            fail_msg("header-only read of a %zu-byte prefix: rc %d (%s)", n, rc, e.msg);
        assert_null(g);
    }
    gb_free(&b);
    swt_tmpdir_free(dir);
}

/* Absent data is still checked where it can be: aligned, disjoint, inside 64-bit offsets. */
static void test_header_only_layout(void **state)
{
    (void)state;
    const struct sw_gguf_read_opts ho = {.header_only = true};
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    uint64_t offs[][2] = {{UINT64_MAX - 31, 0}, {0, 16}, {0, 0}};
    const char *want[] = {"past 2^64", "not a multiple of the alignment", "overlaps"};
    int codes[] = {SW_ERANGE, SW_EPARSE, SW_EPARSE};
    for (int k = 0; k < 3; k++) {
        gb_header(&b, 3, 2, 0);
        gb_tensor(&b, "a", 1, (uint64_t[]){8}, T_F32, offs[k][0]);
        gb_tensor(&b, "b", 1, (uint64_t[]){8}, T_F32, offs[k][1]);
        int rc = sw_gguf_parse_head(b.p, b.n, b.n, "hostile", &ho, NULL, &g, &e);
        if (rc != codes[k] || !strstr(e.msg, want[k]))
            fail_msg("case %d: rc %d (%s), want '%s'", k, rc, e.msg, want[k]);
        assert_null(g);
        gb_free(&b);
    }
    /* a far offset that fits 64 bits is absent data, not an error */
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "a", 1, (uint64_t[]){8}, T_F32, 1ull << 40);
    assert_int_equal(sw_gguf_parse_head(b.p, b.n, b.n, "far", &ho, NULL, &g, &e), 0);
    assert_true(g->header_only);
    sw_gguf_free(g);
    gb_free(&b);
}

/* A split set whose parts were copied header-only. */
static void test_split_header_only(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    for (int no = 0; no < 2; no++) {
        struct gb b = {0};
        char name[64];
        snprintf(name, sizeof(name), "m-%05d-of-00002.gguf", no + 1);
        gb_header(&b, 3, 1, no == 0 ? 4 : 2);
        if (no == 0) {
            gb_kv_str(&b, "general.architecture", "llama");
            gb_kv_u32(&b, "split.tensors.count", 2);
        }
        gb_kv_u16(&b, "split.no", (uint16_t)no);
        gb_kv_u16(&b, "split.count", 2);
        gb_tensor(&b, no ? "output.weight" : "token_embd.weight", 2, (uint64_t[]){8, 2}, T_F32, 0);
        swt_write(swt_join(dir, name), b.p, b.n); /* no data at all */
        gb_free(&b);
    }
    const struct sw_gguf_read_opts ho = {.header_only = true};
    struct sw_gguf *g = NULL;
    struct sw_err e;
    char first[4096];
    snprintf(first, sizeof(first), "%s", swt_join(dir, "m-00002-of-00002.gguf"));
    assert_int_equal(sw_gguf_open(first, &g, &e), SW_ETRUNC);
    assert_int_equal(sw_gguf_open_opts(first, &ho, &g, &e), 0);
    assert_true(g->header_only);
    assert_int_equal(g->n_splits, 2);
    assert_int_equal(g->n_tensors, 2);
    sw_gguf_free(g);
    swt_tmpdir_free(dir);
}

/* The head of a file held elsewhere, read the way a remote reader does: a first chunk, then up
 * to what the reader says the header needs or one chunk more, whichever is further. Each `need`
 * is a lower bound of the header's end; the bytes held at the end never pass the header's end
 * plus one chunk; the result is the header the whole file gives. */
static void test_parse_head(void **state)
{
    (void)state;
    struct gb b = {0};
    size_t hdr, data;
    make_model(&b, 20000, &hdr, &data); /* ~250 KB of vocabulary */
    const size_t chunks[] = {64, 4096, 65536, 1u << 20};
    for (size_t c = 0; c < SW_ARRAY_LEN(chunks); c++) {
        size_t chunk = chunks[c], have = SW_MIN(chunk, b.n);
        int rounds = 0;
        struct sw_gguf *g = NULL;
        struct sw_err e;
        for (;;) {
            uint64_t need = 1;
            int rc = sw_gguf_parse_head(b.p, have, b.n, "remote.gguf", NULL, &need, &g, &e);
            rounds++;
            if (rc == 0)
                break;
            if (rc != SW_ETRUNC || need <= have)
                fail_msg("chunk %zu, %zu bytes held: rc %d need %llu (%s)", chunk, have, rc,
                         (unsigned long long)need, e.msg);
            assert_null(g);
            /* a lower bound of the header's end */
            assert_true(need <= hdr);
            have = SW_MIN(b.n, SW_MAX((size_t)need, have + chunk));
            assert_true(rounds < 10000);
        }
        assert_true(have >= hdr);
        assert_true(have < hdr + chunk);
        assert_false(g->header_only); /* the data is in the file, not in the bytes held */
        assert_int_equal(g->data_offset, data);
        assert_int_equal(g->file_size, b.n);
        assert_int_equal(g->tensor_bytes, 1024 + 4096);
        const struct sw_gguf_kv *kv = sw_gguf_find(g, "tokenizer.ggml.tokens");
        assert_non_null(kv);
        assert_int_equal(kv->val.as.arr.n, 20000);
        assert_string_equal(kv->val.as.arr.v.str[19999].s, "tok19999");
        sw_gguf_free(g);
        /* the lower bound skips ahead over what the counts promise: far fewer rounds than
         * the header's size in chunks */
        if (chunk == 64)
            assert_true(rounds < (int)(hdr / 64) / 2);
    }
    /* a file whose header claims more than the file: the need never passes the file */
    struct sw_gguf *g = NULL;
    struct sw_err e;
    uint64_t need = 0;
    assert_int_equal(sw_gguf_parse_head(b.p, 100, 200, "short", NULL, &need, &g, &e), SW_ETRUNC);
    assert_true(need == 0 || need <= 200);
    /* an error that is not about the bytes held leaves need 0 */
    static const char page[] =
        "<!DOCTYPE html><html><head><title>403</title></head><body>Forbidden "
        "by the proxy</body></html>";
    need = 7;
    assert_int_equal(
        sw_gguf_parse_head(page, sizeof(page) - 1, 100000, "page", NULL, &need, &g, &e), SW_EPARSE);
    assert_int_equal(need, 0);
    assert_non_null(strstr(e.msg, "HTML"));
    gb_free(&b);
}

/* Every allocation of a head parse may fail: SW_ENOMEM, nothing kept. */
static void test_head_alloc_torture(void **state)
{
    (void)state;
    struct gb b = {0};
    size_t hdr, data;
    make_model(&b, 50, &hdr, &data);
    const struct sw_gguf_read_opts ho = {.header_only = true};
    long n;
    for (n = 1; n < 10000; n++) {
        struct sw_gguf *g = NULL;
        struct sw_err e;
        sw_alloc_fail_at(n);
        int rc = sw_gguf_parse_head(b.p, hdr, hdr, "m", &ho, NULL, &g, &e);
        sw_alloc_fail_at(0);
        if (rc == 0) {
            assert_true(g->header_only);
            sw_gguf_free(g);
            break;
        }
        assert_int_equal(rc, SW_ENOMEM);
        assert_null(g);
    }
    assert_true(n > 2 && n < 10000);
    gb_free(&b);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_after_header),   cmocka_unit_test(test_header_only_layout),
        cmocka_unit_test(test_split_header_only),  cmocka_unit_test(test_parse_head),
        cmocka_unit_test(test_head_alloc_torture),
    };
    return cmocka_run_group_tests_name("gguf_head", tests, NULL, NULL);
}
