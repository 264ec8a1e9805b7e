/*
 * The GGUF reader against real files written by the pinned llama.cpp: every architecture that
 * test-llama-archs writes (generated here into a temporary directory: the inputs of
 * `slipway gguf synth`), and the bundle's models/ggml-vocab-*.gguf (real vocabularies with big
 * string arrays). Each must parse; tensor bytes and layout must account for the file size exactly
 * (ggml's writer pads each tensor to the alignment and ends the file after the last one),
 * `slipway gguf inspect --json` must agree with the library, and slipway's writer must reproduce
 * each file byte for byte from what the reader parsed.
 * Skips with a message when the pinned llama.cpp is not built.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/gguf.h>

#include "swllama.h"
#include "swtest.h"

#include <dirent.h>
#include <string.h>
#include <unistd.h>

static int list_gguf(const char *dir, const char *prefix, char ***out)
{
    DIR *d = opendir(dir);
    int n = 0;
    *out = NULL;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".gguf") ||
            strncmp(de->d_name, prefix, strlen(prefix)))
            continue;
        *out = realloc(*out, sizeof(char *) * (size_t)(n + 1));
        (*out)[n++] = strdup(swt_join(dir, de->d_name));
    }
    closedir(d);
    return n;
}

static void check_layout(const struct sw_gguf *g)
{
    uint64_t end = 0, sum = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct sw_gguf_tensor *t = &g->tensors[i];
        uint64_t padded = (t->nbytes + g->alignment - 1) / g->alignment * g->alignment;
        if (t->offset + padded > end)
            end = t->offset + padded;
        sum += t->nbytes;
        /* nbytes is the ggml block arithmetic */
        const struct sw_ggml_type *ty = sw_ggml_type(t->type);
        assert_non_null(ty);
        uint64_t row;
        assert_int_equal(sw_ggml_row_size(t->type, t->ne[0], &row), 0);
        assert_int_equal(t->nbytes, row * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    assert_int_equal(sum, g->tensor_bytes);
    if (g->n_tensors)
        assert_int_equal(g->data_offset + end, g->file_size);
    else
        assert_int_equal(g->data_offset, g->file_size);
}

/* Rewrite a parsed file with slipway's writer (same keys in the same order, tensors streamed from
 * the original) and require the very same bytes: the writer lays files out exactly as ggml does. */
static void check_rewrite(const struct sw_gguf *g, const char *tmpdir)
{
    struct sw_gguf_writer *w = NULL;
    struct sw_err e;
    assert_int_equal(sw_gguf_writer_new(&w, g->version, g->alignment), 0);
    assert_int_equal(sw_gguf_writer_copy_kv(w, g), 0);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct sw_gguf_tensor *t = &g->tensors[i];
        assert_int_equal(sw_gguf_writer_add_tensor_from_file(w, t->name.s, t->type, t->n_dims,
                                                             t->ne, g->path,
                                                             g->data_offset + t->offset),
                         0);
    }
    char out[4096];
    snprintf(out, sizeof(out), "%s/rewrite.gguf", tmpdir);
    if (sw_gguf_writer_write(w, out, &e))
        fail_msg("%s", e.msg);
    sw_gguf_writer_free(w);
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(sw_read_file(g->path, 1u << 30, &a, &na, &e), 0);
    assert_int_equal(sw_read_file(out, 1u << 30, &b, &nb, &e), 0);
    if (na != nb || memcmp(a, b, na)) {
        size_t k = 0;
        while (k < na && k < nb && a[k] == b[k])
            k++;
        fail_msg("%s: rewrite differs at byte %zu (sizes %zu and %zu)", g->path, k, na, nb);
    }
    sw_free(a);
    sw_free(b);
    unlink(out);
}

static void test_archs(void **state)
{
    const char *bin = swl_bin("test-llama-archs");
    swt_need(bin != NULL, "test-llama-archs (%s)", swl_missing());
    char *dir = swt_tmpdir();
    struct swt_run r;
    const char *argv[] = {bin, "-s", "42", "-o", dir, NULL};
    swt_run(argv, NULL, 600, &r);
    if (r.status != 0)
        fail_msg("test-llama-archs failed (%d): %.2000s", r.status, r.err);
    swt_run_free(&r);
    char **files;
    int n = list_gguf(dir, "", &files);
    fprintf(stderr, "test-llama-archs wrote %d models\n", n);
    assert_true(n >= 100);
    int with_vocab_stub = 0;
    for (int i = 0; i < n; i++) {
        struct sw_gguf *g = swt_gguf_open(files[i]);
        assert_non_null(sw_gguf_arch(g));
        assert_true(g->n_tensors > 0);
        check_layout(g);
        check_rewrite(g, dir);
        uint64_t nl;
        assert_int_equal(sw_gguf_arch_u64(g, "block_count", &nl), 0);
        assert_true(nl >= 1 && nl <= 64);
        uint64_t heads[64];
        int rc = sw_gguf_arch_per_layer(g, "attention.head_count", heads, (size_t)nl);
        if (rc)
            fail_msg("%s: head_count per layer: %d", files[i], rc);
        const struct sw_gguf_kv *tok = sw_gguf_find(g, "tokenizer.ggml.tokens");
        if (tok && tok->val.type == SW_GGUF_ARRAY)
            with_vocab_stub++;
        /* the CLI agrees */
        if (i % 10 == 0) {
            swt_slipway(&r, "gguf", "inspect", "--json", files[i], NULL);
            assert_int_equal(r.status, 0);
            json_t *j = swt_json_out(&r);
            assert_int_equal(json_integer_value(json_object_get(j, "n_tensors")), g->n_tensors);
            assert_int_equal(json_integer_value(json_object_get(j, "tensor_bytes")),
                             g->tensor_bytes);
            json_decref(j);
            swt_run_free(&r);
        }
        sw_gguf_free(g);
        free(files[i]);
    }
    free(files);
    fprintf(stderr, "%d of them carry a placeholder vocabulary\n", with_vocab_stub);
    swt_tmpdir_free(dir);
}

static void test_vocabs(void **state)
{
    const char *m = swl_model_file("");
    swt_need(m != NULL, "llama.cpp's vocab models (%s)", swl_missing());
    char **files;
    int n = list_gguf(m, "ggml-vocab-", &files);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        struct sw_gguf *g = swt_gguf_open(files[i]);
        check_layout(g);
        char *tmp = swt_tmpdir();
        check_rewrite(g, tmp);
        swt_tmpdir_free(tmp);
        const struct sw_gguf_kv *tok = sw_gguf_find(g, "tokenizer.ggml.tokens");
        assert_non_null(tok);
        assert_int_equal(tok->val.type, SW_GGUF_ARRAY);
        assert_int_equal(tok->val.as.arr.elem, SW_GGUF_STRING);
        assert_true(tok->val.as.arr.n > 1000);
        /* parallel arrays have one entry per token */
        static const char *const par[] = {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"};
        for (size_t k = 0; k < 2; k++) {
            const struct sw_gguf_kv *p = sw_gguf_find(g, par[k]);
            if (p)
                assert_int_equal(p->val.as.arr.n, tok->val.as.arr.n);
        }
        const char *model;
        assert_int_equal(sw_gguf_get_str(g, "tokenizer.ggml.model", &model), 0);
        json_t *j = sw_gguf_to_json(g, false);
        assert_non_null(j);
        json_decref(j);
        sw_gguf_free(g);
        free(files[i]);
    }
    free(files);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_archs),
        cmocka_unit_test(test_vocabs),
    };
    return cmocka_run_group_tests_name("gguf_real_files", tests, NULL, NULL);
}
