/*
 * `slipway gguf inspect`: the human view and --json of a small file, tensor roles, and the exit
 * codes and messages for files that are not usable GGUF; a file cut after its header (the tensor
 * data absent) is shown and said to be "header only", a file cut inside its header is not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swtest.h"
#include "test_gguf_build.h"

#include <string.h>

static void make_model(struct gb *b)
{
    gb_header(b, 3, 6, 6);
    gb_kv_str(b, "general.architecture", "qwen3moe");
    gb_kv_str(b, "general.name", "tiny \xff bytes");
    gb_kv_u32(b, "qwen3moe.block_count", 1);
    gb_kv_u32(b, "qwen3moe.expert_count", 2);
    gb_kv_u32(b, "general.file_type", 15);
    gb_str(b, "tokenizer.ggml.tokens");
    gb_u32(b, 9);
    gb_u32(b, 8);
    gb_u64(b, 40);
    for (int i = 0; i < 40; i++) {
        char t[8];
        snprintf(t, sizeof(t), "t%d", i);
        gb_str(b, t);
    }
    uint64_t off = 0;
    gb_tensor(b, "token_embd.weight", 2, (uint64_t[]){32, 40}, 8, off); /* q8_0: 40*34 */
    off += 1376;
    gb_tensor(b, "blk.0.attn_q.weight", 2, (uint64_t[]){32, 32}, 0, off);
    off += 4096;
    gb_tensor(b, "blk.0.ffn_up_exps.weight", 3, (uint64_t[]){32, 8, 2}, 1, off);
    off += 1024;
    gb_tensor(b, "blk.0.attn_norm.weight", 1, (uint64_t[]){32}, 0, off);
    off += 128;
    gb_tensor(b, "blk.0.ssm_in.weight", 2, (uint64_t[]){32, 4}, 0, off);
    off += 512;
    gb_tensor(b, "output.weight", 2, (uint64_t[]){32, 40}, 8, off);
    off += 1376;
    gb_pad(b, 32);
    gb_zeros(b, (size_t)off);
}

static void test_inspect(void **state)
{
    char *dir = swt_tmpdir();
    const char *p = swt_join(dir, "m.gguf");
    char path[4096];
    snprintf(path, sizeof(path), "%s", p);
    struct gb b = {0};
    make_model(&b);
    swt_write(path, b.p, b.n);
    gb_free(&b);

    struct swt_run r;
    swt_slipway(&r, "gguf", "inspect", path, NULL);
    swt_out_has(&r, 0, "qwen3moe", "Q4_K_M (15)", "experts", "[string x 40]",
                "40 tokens, chat template no", NULL);

    swt_slipway(&r, "gguf", "inspect", "--json", "--tensors", path, NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "n_tensors")), 6);
    assert_int_equal(json_integer_value(json_object_get(j, "tensor_bytes")),
                     1360 + 4096 + 1024 + 128 + 512 + 1360);
    json_t *arch = json_object_get(j, "arch");
    assert_string_equal(json_string_value(json_object_get(arch, "architecture")), "qwen3moe");
    assert_int_equal(json_integer_value(json_object_get(arch, "expert_count")), 2);
    assert_int_equal(json_integer_value(json_object_get(arch, "n_vocab")), 40);
    assert_string_equal(json_string_value(json_object_get(arch, "file_type_name")), "Q4_K_M");
    /* a name with a byte that is not UTF-8 still comes out, with U+FFFD */
    assert_string_equal(json_string_value(json_object_get(arch, "name")),
                        "tiny \xEF\xBF\xBD bytes");
    /* the 40-token array is summarized */
    json_t *tok = json_object_get(json_object_get(j, "metadata"), "tokenizer.ggml.tokens");
    assert_int_equal(json_integer_value(json_object_get(tok, "count")), 40);
    assert_int_equal(json_array_size(json_object_get(tok, "first")), 8);
    /* roles */
    json_t *roles = json_object_get(j, "roles");
    const char *want[][2] = {{"token_embd", "1360"}, {"output", "1360"}, {"attention", "4096"},
                             {"experts", "1024"},    {"ssm", "512"},     {"norms", "128"}};
    assert_int_equal(json_array_size(roles), 6);
    for (size_t i = 0; i < SW_ARRAY_LEN(want); i++) {
        bool found = false;
        for (size_t k = 0; k < json_array_size(roles); k++) {
            json_t *x = json_array_get(roles, k);
            if (!strcmp(json_string_value(json_object_get(x, "role")), want[i][0])) {
                char n[32];
                snprintf(n, sizeof(n), "%lld",
                         (long long)json_integer_value(json_object_get(x, "bytes")));
                assert_string_equal(n, want[i][1]);
                found = true;
            }
        }
        assert_true(found);
    }
    json_t *ts = json_object_get(j, "tensors");
    assert_int_equal(json_array_size(ts), 6);
    json_t *t2 = json_array_get(ts, 2);
    assert_string_equal(json_string_value(json_object_get(t2, "type")), "f16");
    assert_int_equal(json_array_size(json_object_get(t2, "shape")), 3);
    json_decref(j);
    swt_run_free(&r);

    /* not GGUF: exit 2 with what it looks like */
    const char *html = swt_join(dir, "page.gguf");
    swt_write_str(html, "<!DOCTYPE html><html><body>Sign in</body></html>");
    swt_slipway(&r, "gguf", "inspect", html, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "HTML page"));
    swt_run_free(&r);
    swt_slipway(&r, "gguf", "inspect", "--json", html, NULL);
    assert_int_equal(r.status, 2);
    j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "SW_EPARSE");
    json_decref(j);
    swt_run_free(&r);
    swt_slipway_exits(2, "gguf", "inspect", swt_join(dir, "none.gguf"), NULL);
    swt_slipway_exits(2, "gguf", "inspect", NULL);
    swt_slipway_exits(2, "gguf", "frobnicate", NULL);
    swt_tmpdir_free(dir);
}

/* The same model with its tensor data absent: inspect reads the header only and says so. */
static void test_inspect_header_only(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char path[4096];
    snprintf(path, sizeof(path), "%s", swt_join(dir, "header.gguf"));
    struct gb b = {0};
    make_model(&b);
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "m", &g, &e), 0);
    size_t data_offset = (size_t)g->data_offset;
    sw_gguf_free(g);
    swt_write(path, b.p, data_offset);

    struct swt_run r;
    swt_slipway(&r, "gguf", "inspect", path, NULL);
    swt_out_has(&r, 0, "header only", "qwen3moe", NULL);
    swt_slipway(&r, "gguf", "inspect", "--json", path, NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "header_only")));
    assert_int_equal(json_integer_value(json_object_get(j, "n_tensors")), 6);
    assert_int_equal(json_integer_value(json_object_get(j, "file_size")), data_offset);
    json_decref(j);
    swt_run_free(&r);

    /* the whole file is not header only */
    swt_write(path, b.p, b.n);
    swt_slipway(&r, "gguf", "inspect", "--json", path, NULL);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_true(json_is_false(json_object_get(j, "header_only")));
    json_decref(j);
    swt_run_free(&r);
    swt_slipway(&r, "gguf", "inspect", path, NULL);
    assert_null(strstr(r.out, "header only"));
    swt_run_free(&r);

    /* cut inside the header: truncated, exit 2 */
    swt_write(path, b.p, data_offset / 2);
    swt_slipway(&r, "gguf", "inspect", path, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "truncated"));
    swt_run_free(&r);
    gb_free(&b);
    swt_tmpdir_free(dir);
}

static void test_roles(void **state)
{
    static const struct {
        const char *name;
        enum sw_gguf_role role;
    } cases[] = {
        {"token_embd.weight", SW_GGUF_ROLE_TOKEN_EMBD},
        {"per_layer_token_embd.weight", SW_GGUF_ROLE_TOKEN_EMBD},
        {"token_embd_norm.weight", SW_GGUF_ROLE_NORMS},
        {"output.weight", SW_GGUF_ROLE_OUTPUT},
        {"output_norm.weight", SW_GGUF_ROLE_NORMS},
        {"blk.12.attn_q.weight", SW_GGUF_ROLE_ATTENTION},
        {"blk.0.attn_kv_a_mqa.weight", SW_GGUF_ROLE_ATTENTION},
        {"blk.0.attn_sinks.weight", SW_GGUF_ROLE_ATTENTION},
        {"blk.0.attn_q_norm.weight", SW_GGUF_ROLE_NORMS},
        {"blk.3.ffn_down.weight", SW_GGUF_ROLE_FFN},
        {"blk.3.ffn_down_exps.weight", SW_GGUF_ROLE_EXPERTS},
        {"blk.3.ffn_up_shexp.weight", SW_GGUF_ROLE_EXPERTS},
        {"blk.3.ffn_gate_inp.weight", SW_GGUF_ROLE_EXPERTS},
        {"blk.3.exp_probs_b.bias", SW_GGUF_ROLE_EXPERTS},
        {"blk.3.ssm_in.weight", SW_GGUF_ROLE_SSM},
        {"blk.3.ssm_conv1d.weight", SW_GGUF_ROLE_SSM},
        {"blk.3.shortconv.in_proj.weight", SW_GGUF_ROLE_SSM},
        {"blk.3.time_mix_key.weight", SW_GGUF_ROLE_SSM},
        {"v.blk.0.attn_q.weight", SW_GGUF_ROLE_VISION},
        {"mm.0.weight", SW_GGUF_ROLE_VISION},
        {"blk.0.vis_up.weight", SW_GGUF_ROLE_VISION},
        {"rope_freqs.weight", SW_GGUF_ROLE_OTHER},
        {"blk.0.layer_output_scale.weight", SW_GGUF_ROLE_OTHER},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++)
        if (sw_gguf_tensor_role(cases[i].name) != cases[i].role)
            fail_msg("%s: got %s, want %s", cases[i].name,
                     sw_gguf_role_name(sw_gguf_tensor_role(cases[i].name)),
                     sw_gguf_role_name(cases[i].role));
    assert_string_equal(sw_gguf_ftype_name(15), "Q4_K_M");
    assert_null(sw_gguf_ftype_name(4));
    assert_null(sw_gguf_ftype_name(1000));
}

/* The JSON summary survives every allocation failure (NULL, nothing leaked). */
static void test_json_torture(void **state)
{
    struct gb b = {0};
    make_model(&b);
    struct sw_gguf *g = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_parse_mem(b.p, b.n, "m", &g, &e), 0);
    long n;
    for (n = 1; n < 100000; n++) {
        sw_alloc_fail_at(n);
        json_t *j = sw_gguf_to_json(g, true);
        sw_alloc_fail_at(0);
        if (j) {
            json_decref(j);
            break;
        }
    }
    assert_true(n > 1 && n < 100000);
    sw_gguf_free(g);
    gb_free(&b);
}

/* `gguf synth` option handling, with a hand-made vocabulary (no llama.cpp needed). */
static void test_synth_cli(void **state)
{
    char *dir = swt_tmpdir();
    char vocab[4096], out[4096];
    snprintf(vocab, sizeof(vocab), "%s", swt_join(dir, "v.gguf"));
    snprintf(out, sizeof(out), "%s", swt_join(dir, "o.gguf"));
    struct sw_gguf_writer *w = NULL;
    assert_int_equal(sw_gguf_writer_new(&w, 3, 32), 0);
    assert_int_equal(sw_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"), 0);
    struct sw_gguf_str toks[200];
    char txt[200][8];
    for (int i = 0; i < 200; i++) {
        toks[i].len = (uint64_t)snprintf(txt[i], sizeof(txt[i]), "w%d", i);
        toks[i].s = txt[i];
    }
    struct sw_gguf_value v = {.type = SW_GGUF_ARRAY};
    v.as.arr.elem = SW_GGUF_STRING;
    v.as.arr.n = 200;
    v.as.arr.v.str = toks;
    assert_int_equal(sw_gguf_writer_set(w, "tokenizer.ggml.tokens", &v), 0);
    struct sw_err e;
    assert_int_equal(sw_gguf_writer_write(w, vocab, &e), 0);
    sw_gguf_writer_free(w);

    struct swt_run r;
    swt_slipway(&r, "gguf", "synth", "--arch", "gemma3", "--layers", "3", "--swa", "32",
                "--swa-pattern", "3", "--ctx", "2k", "--vocab", vocab, "--out", out, "--json",
                NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "arch")), "gemma3");
    assert_true(json_is_null(json_object_get(j, "in")));
    assert_string_equal(json_string_value(json_object_get(j, "chat_template")), "chatml");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "n_vocab"), "to")), 200);
    json_decref(j);
    swt_run_free(&r);
    struct sw_gguf *g = NULL;
    assert_int_equal(sw_gguf_open(out, &g, &e), 0);
    assert_int_equal(swt_gguf_u64(g, "block_count"), 3);
    assert_int_equal(swt_gguf_u64(g, "attention.sliding_window_pattern"), 3);
    assert_int_equal(swt_gguf_u64(g, "context_length"), 2000);
    sw_gguf_free(g);
    /* human output */
    swt_slipway(&r, "gguf", "synth", "--arch", "gemma3", "--vocab", vocab, "--out", out, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "gemma3 model, vocabulary 128 -> 200 tokens"));
    swt_run_free(&r);
    /* refusals */
    static const char *const bad[][8] = {
        {"--arch", "gemma3", "--in", "x.gguf", NULL},
        {"--arch", "gemma3", "--layers", "0", NULL},
        {"--arch", "llama", NULL},
        {"--arch", "gemma3", "--template", "jinja", NULL},
        {"--arch", "gemma3", "--bogus", NULL},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        const char *argv[16] = {swt_bin(), "gguf", "synth", "--vocab", vocab, "--out", out};
        int k = 7;
        for (int m = 0; bad[i][m]; m++)
            argv[k++] = bad[i][m];
        argv[k] = NULL;
        swt_run(argv, NULL, 60, &r);
        if (r.status != 2)
            fail_msg("case %zu: exit %d: %s", i, r.status, r.err);
        swt_run_free(&r);
    }
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inspect),   cmocka_unit_test(test_inspect_header_only),
        cmocka_unit_test(test_roles),     cmocka_unit_test(test_json_torture),
        cmocka_unit_test(test_synth_cli),
    };
    return cmocka_run_group_tests_name("gguf_cli", tests, NULL, NULL);
}
