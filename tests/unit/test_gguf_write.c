/*
 * model/gguf_write: round trips through the reader (every metadata type, arrays including a big
 * string array, tensors of several ggml types with their bytes), alignment, v2, streamed tensor
 * data, refusals (values that do not fit their type, bad names and shapes, duplicate tensors),
 * nothing left behind on failure, and allocation-failure torture.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swtest.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define N_TOKENS 200000

static bool value_eq(const struct sw_gguf_value *a, const struct sw_gguf_value *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case SW_GGUF_STRING:
        return a->as.str.len == b->as.str.len &&
               !memcmp(a->as.str.s, b->as.str.s, (size_t)a->as.str.len);
    case SW_GGUF_BOOL:
        return a->as.b == b->as.b;
    case SW_GGUF_FLOAT32:
    case SW_GGUF_FLOAT64:
        return a->as.f == b->as.f || (isnan(a->as.f) && isnan(b->as.f));
    case SW_GGUF_UINT8:
    case SW_GGUF_UINT16:
    case SW_GGUF_UINT32:
    case SW_GGUF_UINT64:
        return a->as.u == b->as.u;
    case SW_GGUF_ARRAY:
        break;
    default:
        return a->as.i == b->as.i;
    }
    if (a->as.arr.elem != b->as.arr.elem || a->as.arr.n != b->as.arr.n)
        return false;
    for (uint64_t i = 0; i < a->as.arr.n; i++) {
        switch (a->as.arr.elem) {
        case SW_GGUF_STRING:
            if (a->as.arr.v.str[i].len != b->as.arr.v.str[i].len ||
                memcmp(a->as.arr.v.str[i].s, b->as.arr.v.str[i].s, (size_t)a->as.arr.v.str[i].len))
                return false;
            break;
        case SW_GGUF_BOOL:
            if (a->as.arr.v.b[i] != b->as.arr.v.b[i])
                return false;
            break;
        default:
            if (a->as.arr.v.u[i] != b->as.arr.v.u[i]) /* same bits for u64/i64/f64 */
                return false;
        }
    }
    return true;
}

struct src {
    float emb[64 * 10];
    uint16_t half[32 * 4];
    uint8_t q8[34 * 3];
    uint8_t q4k[144 * 2];
    char **tokens;
    struct sw_gguf_str *tok_str;
    double *scores;
    int64_t *types;
    size_t n_tok;
};

static void src_init(struct src *s, size_t n_tok)
{
    s->n_tok = n_tok;
    for (size_t i = 0; i < SW_ARRAY_LEN(s->emb); i++)
        s->emb[i] = (float)i * 0.25f - 3.0f;
    for (size_t i = 0; i < SW_ARRAY_LEN(s->half); i++)
        s->half[i] = (uint16_t)(i * 977);
    for (size_t i = 0; i < sizeof(s->q8); i++)
        s->q8[i] = (uint8_t)(i * 13);
    for (size_t i = 0; i < sizeof(s->q4k); i++)
        s->q4k[i] = (uint8_t)(i * 7 + 1);
    s->tok_str = calloc(n_tok, sizeof(*s->tok_str));
    s->tokens = calloc(n_tok, sizeof(char *));
    s->scores = calloc(n_tok, sizeof(double));
    s->types = calloc(n_tok, sizeof(int64_t));
    for (size_t i = 0; i < n_tok; i++) {
        char b[32];
        int n = snprintf(b, sizeof(b), i % 3 ? "tok%zu" : "\xc4\xa0w%zu", i);
        s->tokens[i] = strdup(b);
        s->tok_str[i].s = s->tokens[i];
        s->tok_str[i].len = (uint64_t)n;
        s->scores[i] = -(double)i / 4;
        s->types[i] = (int64_t)(i % 6);
    }
    /* one token with an embedded NUL and one empty */
    s->tok_str[5].len = 0;
    s->tokens[7][1] = '\0';
}

static void src_free(struct src *s)
{
    for (size_t i = 0; i < s->n_tok; i++)
        free(s->tokens[i]);
    free(s->tokens);
    free(s->tok_str);
    free(s->scores);
    free(s->types);
}

/* Fill a writer with everything; returns the first error. */
static int fill(struct sw_gguf_writer *w, const struct src *s)
{
    int rc = 0;
    struct sw_gguf_value v;
#define SET(k, ty, field, val)                                                                     \
    do {                                                                                           \
        memset(&v, 0, sizeof(v));                                                                  \
        v.type = ty;                                                                               \
        v.as.field = val;                                                                          \
        if (!rc)                                                                                   \
            rc = sw_gguf_writer_set(w, k, &v);                                                     \
    } while (0)
    if (!rc)
        rc = sw_gguf_writer_set_str(w, "general.architecture", "llama");
    SET("t.u8", SW_GGUF_UINT8, u, 255);
    SET("t.i8", SW_GGUF_INT8, i, -128);
    SET("t.u16", SW_GGUF_UINT16, u, 65535);
    SET("t.i16", SW_GGUF_INT16, i, -32768);
    SET("t.u32", SW_GGUF_UINT32, u, 4000000000u);
    SET("t.i32", SW_GGUF_INT32, i, INT32_MIN);
    SET("t.f32", SW_GGUF_FLOAT32, f, 0.5);
    SET("t.bool", SW_GGUF_BOOL, b, true);
    SET("t.u64", SW_GGUF_UINT64, u, UINT64_MAX);
    SET("t.i64", SW_GGUF_INT64, i, INT64_MIN);
    SET("t.f64", SW_GGUF_FLOAT64, f, 1e-300);
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "llama.block_count", 1);
    if (!rc)
        rc = sw_gguf_writer_set_i32(w, "t.neg", -7);
    if (!rc)
        rc = sw_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    if (!rc)
        rc = sw_gguf_writer_set_bool(w, "t.off", false);
    if (!rc)
        rc = sw_gguf_writer_set_u64(w, "t.big", 1ull << 40);
    memset(&v, 0, sizeof(v));
    v.type = SW_GGUF_ARRAY;
    v.as.arr.elem = SW_GGUF_STRING;
    v.as.arr.n = s->n_tok;
    v.as.arr.v.str = s->tok_str;
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.tokens", &v);
    v.as.arr.elem = SW_GGUF_FLOAT32;
    v.as.arr.v.f = s->scores;
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.scores", &v);
    v.as.arr.elem = SW_GGUF_INT32;
    v.as.arr.v.i = s->types;
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.token_type", &v);
    uint64_t small[3] = {1, 65535, 7};
    v.as.arr.elem = SW_GGUF_UINT16;
    v.as.arr.n = 3;
    v.as.arr.v.u = small;
    if (!rc)
        rc = sw_gguf_writer_set(w, "t.u16s", &v);
    bool bools[2] = {true, false};
    v.as.arr.elem = SW_GGUF_BOOL;
    v.as.arr.n = 2;
    v.as.arr.v.b = bools;
    if (!rc)
        rc = sw_gguf_writer_set(w, "t.bools", &v);
    v.as.arr.elem = SW_GGUF_INT8;
    v.as.arr.n = 0;
    v.as.arr.v.i = NULL;
    if (!rc)
        rc = sw_gguf_writer_set(w, "t.empty", &v);
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "token_embd.weight", 0, 2, (uint64_t[]){64, 10}, s->emb,
                                       false);
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", 1, 2, (uint64_t[]){32, 4}, s->half,
                                       true);
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", 8, 2, (uint64_t[]){32, 3}, s->q8,
                                       false);
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "output.weight", 12, 3, (uint64_t[]){256, 1, 2}, s->q4k,
                                       false);
    return rc;
#undef SET
}

static void check_file(const char *path, const struct src *s, uint64_t align)
{
    struct sw_gguf *g = swt_gguf_open(path);
    assert_int_equal(g->alignment, align);
    assert_int_equal(g->n_tensors, 4);
    uint64_t u;
    int64_t i;
    double f;
    bool b;
    assert_int_equal(sw_gguf_get_u64(g, "t.u8", &u), 0);
    assert_int_equal(u, 255);
    assert_int_equal(sw_gguf_find(g, "t.u8")->val.type, SW_GGUF_UINT8);
    assert_int_equal(sw_gguf_get_i64(g, "t.i8", &i), 0);
    assert_int_equal(i, -128);
    assert_int_equal(sw_gguf_get_i64(g, "t.i16", &i), 0);
    assert_int_equal(i, -32768);
    assert_int_equal(sw_gguf_get_u64(g, "t.u32", &u), 0);
    assert_int_equal(u, 4000000000u);
    assert_int_equal(sw_gguf_get_i64(g, "t.i32", &i), 0);
    assert_int_equal(i, INT32_MIN);
    assert_int_equal(sw_gguf_get_f64(g, "t.f32", &f), 0);
    assert_true(f == 0.5);
    assert_int_equal(sw_gguf_get_bool(g, "t.bool", &b), 0);
    assert_true(b);
    assert_int_equal(sw_gguf_get_u64(g, "t.u64", &u), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(sw_gguf_get_i64(g, "t.i64", &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(sw_gguf_get_f64(g, "t.f64", &f), 0);
    assert_true(f == 1e-300);
    assert_int_equal(sw_gguf_find(g, "t.f64")->val.type, SW_GGUF_FLOAT64);
    assert_int_equal(sw_gguf_get_i64(g, "t.neg", &i), 0);
    assert_int_equal(i, -7);
    const struct sw_gguf_kv *kv = sw_gguf_find(g, "tokenizer.ggml.tokens");
    assert_int_equal(kv->val.as.arr.n, s->n_tok);
    for (size_t k = 0; k < s->n_tok; k++) {
        assert_int_equal(kv->val.as.arr.v.str[k].len, s->tok_str[k].len);
        assert_memory_equal(kv->val.as.arr.v.str[k].s, s->tok_str[k].s, s->tok_str[k].len);
    }
    kv = sw_gguf_find(g, "tokenizer.ggml.scores");
    assert_int_equal(kv->val.as.arr.elem, SW_GGUF_FLOAT32);
    assert_true(kv->val.as.arr.v.f[s->n_tok - 1] == s->scores[s->n_tok - 1]);
    kv = sw_gguf_find(g, "tokenizer.ggml.token_type");
    assert_int_equal(kv->val.as.arr.elem, SW_GGUF_INT32);
    assert_int_equal(kv->val.as.arr.v.i[11], 5);
    kv = sw_gguf_find(g, "t.u16s");
    assert_int_equal(kv->val.as.arr.v.u[1], 65535);
    kv = sw_gguf_find(g, "t.bools");
    assert_true(kv->val.as.arr.v.b[0] && !kv->val.as.arr.v.b[1]);
    assert_int_equal(sw_gguf_find(g, "t.empty")->val.as.arr.n, 0);

    /* tensor data round trip */
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    static const struct {
        const char *name;
        size_t off;
    } names[] = {{"token_embd.weight", offsetof(struct src, emb)},
                 {"blk.0.attn_q.weight", offsetof(struct src, half)},
                 {"blk.0.ffn_up.weight", offsetof(struct src, q8)},
                 {"output.weight", offsetof(struct src, q4k)}};
    for (size_t k = 0; k < 4; k++) {
        const struct sw_gguf_tensor *t = sw_gguf_tensor(g, names[k].name);
        assert_non_null(t);
        assert_int_equal(t->offset % align, 0);
        char buf[4096];
        assert_true(t->nbytes <= sizeof(buf));
        fseek(fp, (long)(g->data_offset + t->offset), SEEK_SET);
        assert_int_equal(fread(buf, 1, (size_t)t->nbytes, fp), t->nbytes);
        assert_memory_equal(buf, (const char *)s + names[k].off, (size_t)t->nbytes);
    }
    assert_int_equal(sw_gguf_tensor(g, "output.weight")->ne[2], 2);
    assert_int_equal(sw_gguf_tensor(g, "output.weight")->n_dims, 3);
    fclose(fp);
    sw_gguf_free(g);
}

static void test_round_trip(void **state)
{
    struct src s;
    src_init(&s, N_TOKENS);
    char *dir = swt_tmpdir();
    for (int k = 0; k < 3; k++) {
        uint32_t version = k == 2 ? 2 : 3;
        uint64_t align = k == 1 ? 64 : 32;
        struct sw_gguf_writer *w = NULL;
        assert_int_equal(sw_gguf_writer_new(&w, version, align), 0);
        assert_int_equal(fill(w, &s), 0);
        const char *p = swt_join(dir, "rt.gguf");
        char path[4096];
        snprintf(path, sizeof(path), "%s", p);
        struct sw_err e;
        assert_int_equal(sw_gguf_writer_write(w, path, &e), 0);
        sw_gguf_writer_free(w);
        check_file(path, &s, align);
        struct sw_gguf *g = NULL;
        assert_int_equal(sw_gguf_open(path, &g, &e), 0);
        assert_int_equal(g->version, version);
        assert_int_equal(sw_gguf_find(g, "general.alignment") != NULL, align != 32);

        /* read -> copy -> write -> read: every key identical, and the bytes too */
        struct sw_gguf_writer *w2 = NULL;
        assert_int_equal(sw_gguf_writer_new(&w2, version, align), 0);
        assert_int_equal(sw_gguf_writer_copy_kv(w2, g), 0);
        for (uint64_t t = 0; t < g->n_tensors; t++) {
            const struct sw_gguf_tensor *ti = &g->tensors[t];
            assert_int_equal(sw_gguf_writer_add_tensor_from_file(w2, ti->name.s, ti->type,
                                                                 ti->n_dims, ti->ne, path,
                                                                 g->data_offset + ti->offset),
                             0);
        }
        char path2[4096];
        snprintf(path2, sizeof(path2), "%s", swt_join(dir, "rt2.gguf"));
        assert_int_equal(sw_gguf_writer_write(w2, path2, &e), 0);
        sw_gguf_writer_free(w2);
        struct sw_gguf *g2 = NULL;
        assert_int_equal(sw_gguf_open(path2, &g2, &e), 0);
        assert_int_equal(g2->n_kv, g->n_kv);
        for (uint64_t i = 0; i < g->n_kv; i++) {
            assert_string_equal(g->kv[i].key.s, g2->kv[i].key.s);
            assert_true(value_eq(&g->kv[i].val, &g2->kv[i].val));
        }
        char *a = NULL, *b = NULL;
        size_t na, nb;
        assert_int_equal(sw_read_file(path, 1 << 30, &a, &na, &e), 0);
        assert_int_equal(sw_read_file(path2, 1 << 30, &b, &nb, &e), 0);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        sw_free(a);
        sw_free(b);
        sw_gguf_free(g2);
        sw_gguf_free(g);
        unlink(path);
        unlink(path2);
    }
    assert_int_equal(swt_count_entries(dir), 0);
    swt_tmpdir_free(dir);
    src_free(&s);
}

static void test_refusals(void **state)
{
    struct sw_gguf_writer *w = NULL;
    assert_int_equal(sw_gguf_writer_new(&w, 1, 32), SW_EINVAL);
    assert_int_equal(sw_gguf_writer_new(&w, 3, 48), SW_EINVAL);
    assert_int_equal(sw_gguf_writer_new(&w, 3, 0), 0);
    struct sw_gguf_value v = {.type = SW_GGUF_UINT8, .as.u = 300};
    assert_int_equal(sw_gguf_writer_set(w, "a.b", &v), SW_ERANGE);
    v.type = SW_GGUF_INT16;
    v.as.i = -40000;
    assert_int_equal(sw_gguf_writer_set(w, "a.b", &v), SW_ERANGE);
    v.type = SW_GGUF_ARRAY;
    v.as.arr.elem = SW_GGUF_ARRAY;
    v.as.arr.n = 0;
    assert_int_equal(sw_gguf_writer_set(w, "a.b", &v), SW_EINVAL);
    v.type = (enum sw_gguf_type)42;
    assert_int_equal(sw_gguf_writer_set(w, "a.b", &v), SW_EINVAL);
    assert_int_equal(sw_gguf_writer_set_u32(w, "", 1), SW_EINVAL);
    assert_int_equal(sw_gguf_writer_set_u32(w, "general.alignment", 3), SW_EINVAL);
    assert_int_equal(sw_gguf_writer_set_u64(w, "general.alignment", 64), SW_EINVAL);
    assert_int_equal(sw_gguf_writer_remove(w, "nope"), SW_ENOENT);
    assert_int_equal(sw_gguf_writer_set_u32(w, "a.b", 1), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "a.b", 2), 0); /* replace */
    assert_int_equal(sw_gguf_writer_n_kv(w), 1);
    assert_int_equal(sw_gguf_writer_set_u32(w, "c.d", 2), 0);
    assert_int_equal(sw_gguf_writer_remove(w, "a.b"), 0);
    assert_int_equal(sw_gguf_writer_n_kv(w), 1);
    float data[64] = {0};
    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = '\0';
    assert_int_equal(sw_gguf_writer_add_tensor(w, longname, 0, 1, (uint64_t[]){4}, data, true),
                     SW_EINVAL);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "x", 8, 1, (uint64_t[]){33}, data, true),
                     SW_EINVAL);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "x", 0, 2, (uint64_t[]){4, 0}, data, true),
                     SW_ERANGE);
    assert_int_equal(
        sw_gguf_writer_add_tensor(w, "x", 0, 5, (uint64_t[]){1, 1, 1, 1, 1}, data, true),
        SW_EINVAL);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "x", 31, 1, (uint64_t[]){32}, data, true),
                     SW_EINVAL);
    assert_int_equal(
        sw_gguf_writer_add_tensor(w, "x", 0, 2, (uint64_t[]){1ull << 40, 1ull << 40}, data, true),
        SW_ERANGE);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "x", 0, 1, (uint64_t[]){4}, NULL, true),
                     SW_EINVAL);
    assert_int_equal(sw_gguf_writer_n_tensors(w), 0);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "x", 0, 1, (uint64_t[]){4}, data, true), 0);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "y", 0, 1, (uint64_t[]){4}, data, true), 0);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "x", 0, 1, (uint64_t[]){8}, data, false), 0);
    char *dir = swt_tmpdir();
    struct sw_err e;
    assert_int_equal(sw_gguf_writer_write(w, swt_join(dir, "dup.gguf"), &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "tensor 'x' added twice"));
    assert_int_equal(swt_count_entries(dir), 0);
    sw_gguf_writer_free(w);
    /* I/O failures leave nothing behind either */
    assert_int_equal(sw_gguf_writer_new(&w, 3, 32), 0);
    assert_int_equal(sw_gguf_writer_add_tensor_from_file(w, "z", 0, 1, (uint64_t[]){4},
                                                         swt_join(dir, "missing"), 0),
                     0);
    assert_int_equal(sw_gguf_writer_write(w, swt_join(dir, "out.gguf"), &e), SW_ENOENT);
    assert_int_equal(swt_count_entries(dir), 0);
    sw_gguf_writer_free(w);
    swt_write_str(swt_join(dir, "short"), "abc");
    assert_int_equal(sw_gguf_writer_new(&w, 3, 32), 0);
    assert_int_equal(sw_gguf_writer_add_tensor_from_file(w, "z", 0, 1, (uint64_t[]){4},
                                                         swt_join(dir, "short"), 0),
                     0);
    assert_int_equal(sw_gguf_writer_write(w, swt_join(dir, "out.gguf"), &e), SW_ETRUNC);
    assert_int_equal(swt_count_entries(dir), 1);
    assert_int_equal(sw_gguf_writer_write(w, "/nonexistent-dir/x.gguf", &e), SW_EIO);
    sw_gguf_writer_free(w);
    sw_gguf_writer_free(NULL);
    swt_tmpdir_free(dir);
}

/* An empty writer makes a valid GGUF with nothing in it. */
static void test_empty(void **state)
{
    struct sw_gguf_writer *w = NULL;
    assert_int_equal(sw_gguf_writer_new(&w, 3, 32), 0);
    char *dir = swt_tmpdir();
    char p[4096];
    snprintf(p, sizeof(p), "%s", swt_join(dir, "e.gguf"));
    struct sw_err e;
    assert_int_equal(sw_gguf_writer_write(w, p, &e), 0);
    sw_gguf_writer_free(w);
    struct sw_gguf *g = NULL;
    assert_int_equal(sw_gguf_open(p, &g, &e), 0);
    assert_int_equal(g->n_kv, 0);
    assert_int_equal(g->n_tensors, 0);
    assert_int_equal(g->file_size, 24);
    sw_gguf_free(g);
    swt_tmpdir_free(dir);
}

static void test_alloc_torture(void **state)
{
    /* a short token list keeps the loop short: the paths are the same as with 200k */
    struct src s;
    src_init(&s, 40);
    char *dir = swt_tmpdir();
    char p[4096];
    snprintf(p, sizeof(p), "%s", swt_join(dir, "t.gguf"));
    long n;
    for (n = 1; n < 100000; n++) {
        struct sw_gguf_writer *w = NULL;
        struct sw_err e;
        sw_err_clear(&e);
        sw_alloc_fail_at(n);
        int rc = sw_gguf_writer_new(&w, 3, 64);
        if (!rc)
            rc = fill(w, &s);
        if (!rc)
            rc = sw_gguf_writer_write(w, p, &e);
        sw_alloc_fail_at(0);
        sw_gguf_writer_free(w);
        if (!rc)
            break;
        if (rc != SW_ENOMEM)
            fail_msg("allocation %ld: rc %d (%s)", n, rc, e.msg);
        assert_int_equal(swt_count_entries(dir), 0);
    }
    assert_true(n > 10 && n < 100000);
    check_file(p, &s, 64);
    swt_tmpdir_free(dir);
    src_free(&s);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_alloc_torture),
    };
    return cmocka_run_group_tests_name("gguf_write", tests, NULL, NULL);
}
