/*
 * model/gguf_synth without llama-server: the gemma3 base writer, grafting a (small, hand-made)
 * vocabulary, resizing f32/f16 vocabulary tensors and learned position tables with the old rows
 * kept, ChatML when the vocabulary has no template, refusals, determinism, allocation torture.
 * (tests/real/test_gguf_synth.c boots the results in the real llama-server.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "model/gguf_internal.h"
#include "swtest.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static char *dir;
static char vocab_path[4096], vocab_tmpl_path[4096];

/* A small vocabulary GGUF like the bundle's: tokenizer keys only, no tensors. */
static void write_vocab(const char *path, uint64_t n, bool with_template)
{
    struct sw_gguf_writer *w = NULL;
    assert_int_equal(sw_gguf_writer_new(&w, 3, 32), 0);
    assert_int_equal(sw_gguf_writer_set_str(w, "general.architecture", "llama"), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "llama.context_length", 4096), 0);
    assert_int_equal(sw_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"), 0);
    struct sw_gguf_str *tok = calloc(n, sizeof(*tok));
    char(*txt)[16] = calloc(n, 16);
    double *sc = calloc(n, sizeof(double));
    for (uint64_t i = 0; i < n; i++) {
        tok[i].len = (uint64_t)snprintf(txt[i], 16, "t%llu", (unsigned long long)i);
        tok[i].s = txt[i];
        sc[i] = -(double)i;
    }
    struct sw_gguf_value v = {.type = SW_GGUF_ARRAY};
    v.as.arr.elem = SW_GGUF_STRING;
    v.as.arr.n = n;
    v.as.arr.v.str = tok;
    assert_int_equal(sw_gguf_writer_set(w, "tokenizer.ggml.tokens", &v), 0);
    v.as.arr.elem = SW_GGUF_FLOAT32;
    v.as.arr.v.f = sc;
    assert_int_equal(sw_gguf_writer_set(w, "tokenizer.ggml.scores", &v), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1), 0);
    if (with_template)
        assert_int_equal(sw_gguf_writer_set_str(w, "tokenizer.chat_template", "{{ messages }}"), 0);
    struct sw_err e;
    assert_int_equal(sw_gguf_writer_write(w, path, &e), 0);
    sw_gguf_writer_free(w);
    free(tok);
    free(txt);
    free(sc);
}

static int setup(void **state)
{
    dir = swt_tmpdir();
    snprintf(vocab_path, sizeof(vocab_path), "%s", swt_join(dir, "vocab.gguf"));
    snprintf(vocab_tmpl_path, sizeof(vocab_tmpl_path), "%s", swt_join(dir, "vocab-t.gguf"));
    write_vocab(vocab_path, 1000, false);
    write_vocab(vocab_tmpl_path, 300, true);
    return 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(dir);
    return 0;
}

static void read_tensor(const struct sw_gguf *g, const char *name, void *buf, size_t n)
{
    const struct sw_gguf_tensor *t = sw_gguf_tensor(g, name);
    assert_non_null(t);
    assert_true(n <= t->nbytes);
    FILE *f = fopen(g->path, "rb");
    assert_non_null(f);
    fseek(f, (long)(g->data_offset + t->offset), SEEK_SET);
    assert_int_equal(fread(buf, 1, n, f), n);
    fclose(f);
}

static void test_gemma3(void **state)
{
    char out[4096];
    snprintf(out, sizeof(out), "%s", swt_join(dir, "g3.gguf"));
    struct sw_gguf_base_opts b = {.arch = "gemma3", .n_layer = 8, .swa = 64};
    struct sw_gguf_synth_opts o = {.base = &b, .vocab = vocab_path, .out = out, .ctx = 4096};
    struct sw_gguf_synth_result r;
    struct sw_err e;
    if (sw_gguf_synth(&o, &r, &e))
        fail_msg("%s", e.msg);
    assert_string_equal(r.arch, "gemma3");
    assert_int_equal(r.n_vocab_old, 128);
    assert_int_equal(r.n_vocab_new, 1000);
    assert_int_equal(r.ctx_new, 4096);
    assert_string_equal(r.template_source, "chatml");
    assert_int_equal(r.n_resized, 1);
    assert_string_equal(r.resized[0], "token_embd.weight");
    assert_int_equal(r.n_tensors, 2 + 8 * 13);
    /* the base was removed */
    char base[4200];
    snprintf(base, sizeof(base), "%s.base.tmp", out);
    assert_int_not_equal(access(base, F_OK), 0);

    struct sw_gguf *g = NULL;
    assert_int_equal(sw_gguf_open(out, &g, &e), 0);
    uint64_t pl[8];
    assert_int_equal(swt_gguf_u64(g, "block_count"), 8);
    assert_int_equal(swt_gguf_u64(g, "attention.sliding_window"), 64);
    assert_int_equal(swt_gguf_u64(g, "attention.sliding_window_pattern"), 6);
    assert_int_equal(sw_gguf_arch_per_layer(g, "attention.head_count_kv", pl, 8), 0);
    assert_int_equal(pl[7], 2);
    assert_int_equal(swt_gguf_u64(g, "context_length"), 4096);
    assert_int_equal(swt_gguf_u64(g, "vocab_size"), 1000);
    assert_int_equal(sw_gguf_tensor(g, "token_embd.weight")->ne[1], 1000);
    assert_null(sw_gguf_tensor(g, "output.weight")); /* tied, as the released gemma3 */
    assert_non_null(sw_gguf_tensor(g, "blk.7.attn_q_norm.weight"));
    assert_int_equal(sw_gguf_tensor(g, "blk.0.attn_k.weight")->ne[1], 2 * 64);
    const char *t;
    assert_int_equal(sw_gguf_get_str(g, "tokenizer.chat_template", &t), 0);
    assert_string_equal(t, sw_gguf_synth_chatml());
    assert_int_equal(sw_gguf_get_str(g, "tokenizer.ggml.model", &t), 0);
    assert_string_equal(t, "llama");
    /* new rows: small, finite, not all equal */
    static float emb[256 * 1000];
    read_tensor(g, "token_embd.weight", emb, sizeof(emb));
    double sum2 = 0;
    for (size_t i = 256 * 128; i < SW_ARRAY_LEN(emb); i++) {
        assert_true(isfinite(emb[i]) && fabsf(emb[i]) < 0.1f);
        sum2 += (double)emb[i] * emb[i];
    }
    double sd = sqrt(sum2 / (double)(SW_ARRAY_LEN(emb) - 256 * 128));
    assert_true(sd > 0.008 && sd < 0.012);
    sw_gguf_free(g);

    /* refusals */
    struct sw_gguf_base_opts bad = {.arch = "llama"};
    o.base = &bad;
    assert_int_equal(sw_gguf_synth(&o, &r, &e), SW_EUNSUPPORTED);
    bad.arch = "gemma3";
    bad.n_head = 4;
    bad.n_head_kv = 3;
    assert_int_equal(sw_gguf_synth(&o, &r, &e), SW_ERANGE);
}

/* An input like test-llama-archs writes, with f16 vocabulary tensors, an output bias and a
 * learned position table. */
static void write_input(const char *path)
{
    struct sw_gguf_writer *w = NULL;
    assert_int_equal(sw_gguf_writer_new(&w, 3, 32), 0);
    assert_int_equal(sw_gguf_writer_set_str(w, "general.architecture", "gpt2"), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "gpt2.context_length", 256), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "gpt2.vocab_size", 128), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "gpt2.rope.scaling.original_context_length", 256),
                     0);
    assert_int_equal(sw_gguf_writer_set_str(w, "tokenizer.ggml.model", "no_vocab"), 0);
    assert_int_equal(sw_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 0xffffffffu), 0);
    static uint16_t emb[64 * 128];
    static float bias[128], pos[64 * 256];
    for (size_t i = 0; i < SW_ARRAY_LEN(emb); i++)
        emb[i] = (uint16_t)(0x2000 + i % 512);
    for (size_t i = 0; i < SW_ARRAY_LEN(bias); i++)
        bias[i] = (float)i;
    for (size_t i = 0; i < SW_ARRAY_LEN(pos); i++)
        pos[i] = (float)i / 7;
    assert_int_equal(
        sw_gguf_writer_add_tensor(w, "token_embd.weight", 1, 2, (uint64_t[]){64, 128}, emb, false),
        0);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "position_embd.weight", 0, 2,
                                               (uint64_t[]){64, 256}, pos, false),
                     0);
    assert_int_equal(
        sw_gguf_writer_add_tensor(w, "output.weight", 1, 2, (uint64_t[]){64, 128}, emb, false), 0);
    assert_int_equal(
        sw_gguf_writer_add_tensor(w, "output.bias", 0, 1, (uint64_t[]){128}, bias, false), 0);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", 0, 2,
                                               (uint64_t[]){64, 128}, pos, false),
                     0);
    struct sw_err e;
    assert_int_equal(sw_gguf_writer_write(w, path, &e), 0);
    sw_gguf_writer_free(w);
}

static void test_resize(void **state)
{
    char in[4096], out[4096];
    snprintf(in, sizeof(in), "%s", swt_join(dir, "in.gguf"));
    snprintf(out, sizeof(out), "%s", swt_join(dir, "out.gguf"));
    write_input(in);
    struct sw_gguf_synth_opts o = {.in = in, .vocab = vocab_tmpl_path, .out = out, .seed = 3};
    struct sw_gguf_synth_result r;
    struct sw_err e;
    if (sw_gguf_synth(&o, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(r.n_vocab_old, 128);
    assert_int_equal(r.n_vocab_new, 300);
    assert_int_equal(r.ctx_old, 256);
    assert_int_equal(r.ctx_new, SW_GGUF_SYNTH_DEFAULT_CTX);
    assert_string_equal(r.template_source, "vocab");
    assert_int_equal(r.n_resized, 4);
    struct sw_gguf *g = NULL, *gi = NULL;
    assert_int_equal(sw_gguf_open(out, &g, &e), 0);
    assert_int_equal(sw_gguf_open(in, &gi, &e), 0);
    assert_int_equal(sw_gguf_tensor(g, "token_embd.weight")->ne[1], 300);
    assert_int_equal(sw_gguf_tensor(g, "token_embd.weight")->type, 1);
    assert_int_equal(sw_gguf_tensor(g, "output.bias")->ne[0], 300);
    assert_int_equal(sw_gguf_tensor(g, "position_embd.weight")->ne[1], SW_GGUF_SYNTH_DEFAULT_CTX);
    /* a tensor that only happens to have a 128 dimension is left alone */
    assert_int_equal(sw_gguf_tensor(g, "blk.0.ffn_up.weight")->ne[1], 128);
    uint64_t u;
    assert_int_equal(swt_gguf_u64(g, "rope.scaling.original_context_length"),
                     SW_GGUF_SYNTH_DEFAULT_CTX);
    /* the placeholder tokenizer keys are gone, the vocabulary's are there */
    assert_null(sw_gguf_find(g, "tokenizer.ggml.eos_token_id"));
    assert_int_equal(sw_gguf_get_u64(g, "tokenizer.ggml.bos_token_id", &u), 0);
    const char *t;
    assert_int_equal(sw_gguf_get_str(g, "tokenizer.chat_template", &t), 0);
    assert_string_equal(t, "{{ messages }}");
    /* the old rows are kept byte for byte, the new ones are f16 noise */
    static uint16_t a[64 * 300], b0[64 * 128];
    read_tensor(g, "token_embd.weight", a, sizeof(a));
    read_tensor(gi, "token_embd.weight", b0, sizeof(b0));
    assert_memory_equal(a, b0, sizeof(b0));
    for (size_t i = 64 * 128; i < SW_ARRAY_LEN(a); i++)
        assert_true((a[i] & 0x7fff) < 0x2c00); /* |x| < 0.0625 */
    float bias[300];
    read_tensor(g, "output.bias", bias, sizeof(bias));
    assert_true(bias[127] == 127.0f && fabsf(bias[200]) < 0.1f);
    /* unchanged tensors are copied as they were */
    static float p1[64 * 128], p2[64 * 128];
    read_tensor(g, "blk.0.ffn_up.weight", p1, sizeof(p1));
    read_tensor(gi, "blk.0.ffn_up.weight", p2, sizeof(p2));
    assert_memory_equal(p1, p2, sizeof(p1));
    sw_gguf_free(g);
    sw_gguf_free(gi);

    /* same seed, same bytes; another seed, other bytes */
    char *x = NULL, *y = NULL;
    size_t nx, ny;
    assert_int_equal(sw_read_file(out, 1u << 28, &x, &nx, &e), 0);
    assert_int_equal(sw_gguf_synth(&o, &r, &e), 0);
    assert_int_equal(sw_read_file(out, 1u << 28, &y, &ny, &e), 0);
    assert_true(nx == ny && !memcmp(x, y, nx));
    sw_free(y);
    o.seed = 4;
    assert_int_equal(sw_gguf_synth(&o, &r, &e), 0);
    assert_int_equal(sw_read_file(out, 1u << 28, &y, &ny, &e), 0);
    assert_true(nx == ny && memcmp(x, y, nx));
    sw_free(x);
    sw_free(y);

    /* refusals: a vocabulary without tokens, a placeholder vocabulary, no input */
    o.vocab = in;
    assert_int_equal(sw_gguf_synth(&o, &r, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "is not a vocabulary"));
    o.vocab = vocab_path;
    o.in = NULL;
    assert_int_equal(sw_gguf_synth(&o, &r, &e), SW_EINVAL);
    o.in = in;
    o.ctx = 1ull << 33;
    assert_int_equal(sw_gguf_synth(&o, &r, &e), SW_ERANGE);
}

static void test_torture(void **state)
{
    char in[4096], out[4096];
    snprintf(in, sizeof(in), "%s", swt_join(dir, "tin.gguf"));
    snprintf(out, sizeof(out), "%s", swt_join(dir, "tout.gguf"));
    write_input(in);
    int files = swt_count_entries(dir);
    struct sw_gguf_synth_opts o = {.in = in, .vocab = vocab_tmpl_path, .out = out};
    long n;
    for (n = 1; n < 100000; n++) {
        struct sw_gguf_synth_result r;
        struct sw_err e;
        sw_alloc_fail_at(n);
        int rc = sw_gguf_synth(&o, &r, &e);
        sw_alloc_fail_at(0);
        if (!rc)
            break;
        if (rc != SW_ENOMEM)
            fail_msg("allocation %ld: rc %d (%s)", n, rc, e.msg);
        assert_int_equal(swt_count_entries(dir), files);
    }
    assert_true(n > 5 && n < 100000);
    fprintf(stderr, "synth survived %ld failing allocations\n", n - 1);
}

static void test_f16(void **state)
{
    assert_int_equal(sw__f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(sw__f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(sw__f32_to_f16(0.0f), 0);
    assert_int_equal(sw__f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(sw__f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(sw__f32_to_f16(0.01f), 0x211f);
    assert_int_equal(sw__f32_to_f16(5.960464477539063e-08f), 0x0001); /* smallest subnormal */
    assert_int_equal(sw__f32_to_f16(1e-9f), 0);
    assert_int_equal(sw__f32_to_f16(1.0009765625f), 0x3c01);
    assert_int_equal(sw__f32_to_f16(1.00048828125f), 0x3c00); /* tie to even */
    assert_int_equal(sw__f32_to_f16(NAN) & 0x7c00, 0x7c00);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_torture),
        cmocka_unit_test(test_f16),
    };
    return cmocka_run_group_tests_name("gguf_synth", tests, setup, teardown);
}
