/*
 * `slipway gguf synth` for real: for each architecture below, test-llama-archs writes a random
 * model (into a temporary directory), slipway grafts a bundled vocabulary onto it, and the real
 * llama-server must boot it on 127.0.0.1 and answer /v1/chat/completions (any text: the weights
 * are noise). Also checks what synth wrote (vocabulary, tokenizer keys, resized tensors,
 * training context), and a gemma3 model that slipway writes from scratch (`synth --arch gemma3`;
 * test-llama-archs cannot write gemma3), which must boot with its sliding-window cache.
 * Skips with a message when the pinned llama.cpp is not built.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swllama.h"
#include "swtest.h"

#include <string.h>
#include <unistd.h>

static char *archs_dir;

static int setup(void **state)
{
    const char *bin = swl_bin("test-llama-archs");
    if (!bin)
        return 0; /* each test then names swl_missing() */
    archs_dir = swt_tmpdir();
    struct swt_run r;
    /* a fixed seed: test-llama-archs picks a random one by default */
    const char *argv[] = {bin, "-s", "42", "-o", archs_dir, NULL};
    swt_run(argv, NULL, 600, &r);
    int st = r.status;
    if (st)
        fprintf(stderr, "test-llama-archs failed (%d): %.2000s\n", st, r.err);
    swt_run_free(&r);
    return st ? -1 : 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(archs_dir);
    return 0;
}

/* The tokenizer keys of the output are exactly the vocabulary's (plus a chat template). */
static void check_synth(const char *out, const char *vocab, uint64_t ctx, const char *tmpl)
{
    struct sw_gguf *g = NULL, *v = NULL;
    struct sw_err e;
    if (sw_gguf_open(out, &g, &e) || sw_gguf_open(vocab, &v, &e))
        fail_msg("%s", e.msg);
    uint64_t n = 0, c = 0;
    assert_int_equal(sw_gguf_arch_u64(g, "context_length", &c), 0);
    assert_int_equal(c, ctx);
    const struct sw_gguf_kv *vt = sw_gguf_find(v, "tokenizer.ggml.tokens");
    assert_int_equal(sw_gguf_arch_u64(g, "vocab_size", &n), 0);
    assert_int_equal(n, vt->val.as.arr.n);
    const struct sw_gguf_tensor *emb = sw_gguf_tensor(g, "token_embd.weight");
    assert_non_null(emb);
    assert_int_equal(emb->ne[1], n);
    const struct sw_gguf_tensor *outw = sw_gguf_tensor(g, "output.weight");
    if (outw)
        assert_int_equal(outw->ne[1], n);
    for (uint64_t i = 0; i < v->n_kv; i++) {
        const struct sw_gguf_kv *kv = &v->kv[i];
        if (strncmp(kv->key.s, "tokenizer.", 10))
            continue;
        const struct sw_gguf_kv *o = sw_gguf_find(g, kv->key.s);
        assert_non_null(o);
        assert_int_equal(o->val.type, kv->val.type);
        if (kv->val.type == SW_GGUF_ARRAY)
            assert_int_equal(o->val.as.arr.n, kv->val.as.arr.n);
    }
    const char *t = NULL;
    assert_int_equal(sw_gguf_get_str(g, "tokenizer.chat_template", &t), 0);
    if (!strcmp(tmpl, "chatml"))
        assert_string_equal(t, sw_gguf_synth_chatml());
    else
        assert_true(strlen(t) > 0);
    sw_gguf_free(g);
    sw_gguf_free(v);
}

struct arch_case {
    const char *file;  /* as test-llama-archs names it */
    const char *vocab; /* models/ggml-vocab-*.gguf */
    const char *tmpl;  /* where the chat template should come from */
};

static const struct arch_case cases[] = {
    {"llama-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"qwen3-dense", "ggml-vocab-qwen2.gguf", "vocab"},
    {"qwen3moe-moe", "ggml-vocab-phi-3.gguf", "vocab"},
    {"qwen35-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"qwen35moe-moe", "ggml-vocab-phi-3.gguf", "vocab"},
    {"qwen3next-moe", "ggml-vocab-phi-3.gguf", "vocab"},
    {"granitehybrid-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"nemotron_h-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"mamba2-dense", "ggml-vocab-llama-spm.gguf", "chatml"},
    {"mamba-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"lfm2-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"jamba-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"falcon-h1-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"gpt-oss-moe", "ggml-vocab-phi-3.gguf", "vocab"},
    {"gemma2-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"deepseek2-moe", "ggml-vocab-phi-3.gguf", "vocab"},
    {"qwen2-dense", "ggml-vocab-phi-3.gguf", "vocab"},
    {"gpt2-dense", "ggml-vocab-gpt-2.gguf", "chatml"}, /* learned positions resized too */
};

static void test_synth_boot_chat(void **state)
{
    swt_need(archs_dir != NULL, "test-llama-archs' models (%s)", swl_missing());
    char *out_dir = swt_tmpdir();
    int ok = 0;
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        const struct arch_case *c = &cases[i];
        char in[4096], out[4096], vocab[4096], name[128];
        snprintf(name, sizeof(name), "%s.gguf", c->file);
        snprintf(in, sizeof(in), "%s", swt_join(archs_dir, name));
        snprintf(out, sizeof(out), "%s", swt_join(out_dir, name));
        snprintf(vocab, sizeof(vocab), "%s", swl_model_file(c->vocab));
        struct swt_run r;
        swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab", vocab, "--out", out, "--json",
                    NULL);
        if (r.status)
            fail_msg("%s: synth exit %d: %s", c->file, r.status, r.err);
        json_t *j = swt_json_out(&r);
        assert_string_equal(json_string_value(json_object_get(j, "chat_template")), c->tmpl);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(j, "context_length"), "to")),
            SW_GGUF_SYNTH_DEFAULT_CTX);
        json_decref(j);
        swt_run_free(&r);
        check_synth(out, vocab, SW_GGUF_SYNTH_DEFAULT_CTX, c->tmpl);

        struct swl_server s;
        const char *args[] = {"-c", "512", "-t", "2", NULL};
        if (swl_start(out, args, NULL, 180, &s))
            fail_msg("%s: llama-server did not boot (log %s)", c->file, s.log);
        char *text = NULL;
        int rc = swl_chat(&s, "Say hello.", 8, 120, &text);
        if (rc)
            swl_keep_log(&s);
        swl_stop(&s);
        if (rc)
            fail_msg("%s: no chat completion (log %s)", c->file, s.log);
        fprintf(stderr, "  %-22s %-26s boots, chat: \"%.40s\"\n", c->file, c->vocab, text);
        free(text);
        unlink(out);
        ok++;
    }
    assert_int_equal(ok, (int)SW_ARRAY_LEN(cases));
    swt_tmpdir_free(out_dir);
}

static void test_gemma3_boot_chat(void **state)
{
    swt_need(swl_llama_dir() != NULL, "%s", swl_missing());
    char *dir = swt_tmpdir();
    char out[4096], vocab[4096];
    snprintf(out, sizeof(out), "%s", swt_join(dir, "gemma3.gguf"));
    snprintf(vocab, sizeof(vocab), "%s", swl_model_file("ggml-vocab-phi-3.gguf"));
    struct swt_run r;
    swt_slipway(&r, "gguf", "synth", "--arch", "gemma3", "--layers", "8", "--swa", "64", "--vocab",
                vocab, "--out", out, "--json", NULL);
    if (r.status)
        fail_msg("synth --arch gemma3: exit %d: %s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "arch")), "gemma3");
    json_decref(j);
    swt_run_free(&r);
    check_synth(out, vocab, SW_GGUF_SYNTH_DEFAULT_CTX, "vocab");
    /* -c above the window, so both the SWA and the full-attention caches are real */
    char logp[4200];
    snprintf(logp, sizeof(logp), "%s/server.log", dir);
    struct swl_server s;
    const char *args[] = {"-c", "1024", "-t", "2", "-v", NULL};
    if (swl_start(out, args, logp, 180, &s))
        fail_msg("gemma3: llama-server did not boot (log %s)", s.log);
    char *text = NULL;
    int rc = swl_chat(&s, "Say hello.", 8, 120, &text);
    swl_stop(&s);
    if (rc)
        fail_msg("gemma3: no chat completion (log %s)", s.log);
    char *log = NULL;
    size_t n;
    struct sw_err e;
    assert_int_equal(sw_read_file(logp, 64u << 20, &log, &n, &e), 0);
    /* layers 0-4 and 6-7 sliding, layer 5 full: two caches */
    assert_non_null(strstr(log, "llama_kv_cache_iswa"));
    assert_non_null(strstr(log, "n_swa                 = 64"));
    sw_free(log);
    fprintf(stderr, "  %-22s %-26s boots (iSWA cache), chat: \"%.40s\"\n", "gemma3 (slipway)",
            "ggml-vocab-phi-3.gguf", text);
    free(text);
    swt_tmpdir_free(dir);
}

/* Options and refusals of the CLI. */
static void test_synth_cli(void **state)
{
    swt_need(archs_dir != NULL, "test-llama-archs' models (%s)", swl_missing());
    char *dir = swt_tmpdir();
    char in[4096], vocab[4096], out[4096];
    snprintf(in, sizeof(in), "%s", swt_join(archs_dir, "llama-dense.gguf"));
    snprintf(vocab, sizeof(vocab), "%s", swl_model_file("ggml-vocab-phi-3.gguf"));
    snprintf(out, sizeof(out), "%s", swt_join(dir, "o.gguf"));
    struct swt_run r;
    /* a custom context and the forced ChatML template; deterministic output for a seed */
    swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab", vocab, "--out", out, "--ctx", "8k",
                "--template", "chatml", "--seed", "7", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "32,064 tokens"));
    swt_run_free(&r);
    check_synth(out, vocab, 8000, "chatml");
    char *a = NULL, *b = NULL;
    size_t na, nb;
    struct sw_err e;
    assert_int_equal(sw_read_file(out, 1u << 30, &a, &na, &e), 0);
    swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab", vocab, "--out", out, "--ctx", "8k",
                "--template", "chatml", "--seed", "7", NULL);
    swt_run_free(&r);
    assert_int_equal(sw_read_file(out, 1u << 30, &b, &nb, &e), 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    sw_free(a);
    sw_free(b);
    /* refusals: missing options, a vocabulary that is not one, an HTML file as the model */
    swt_slipway(&r, "gguf", "synth", "--in", in, "--out", out, NULL);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab", in, "--out", out, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "is not a vocabulary"));
    swt_run_free(&r);
    const char *html = swt_join(dir, "page.gguf");
    swt_write_str(html, "<html><body>502 Bad Gateway</body></html>");
    swt_slipway(&r, "gguf", "synth", "--in", html, "--vocab", vocab, "--out", out, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "HTML page"));
    swt_run_free(&r);
    swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab", vocab, "--out", out, "--ctx", "0",
                NULL);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synth_boot_chat),
        cmocka_unit_test(test_gemma3_boot_chat),
        cmocka_unit_test(test_synth_cli),
    };
    return cmocka_run_group_tests_name("gguf_synth_real", tests, setup, teardown);
}
