/*
 * The llama.cpp law against the REAL pinned llama-server: for architectures x shapes, boot
 * llama-server (-lv 4 makes it print its memory lines) on the random-weight models llama.cpp's own
 * test-llama-archs writes, parse what it printed with the product's boot-log parser and compare
 * with its differ (engine/llamacpp, as `slipway up` does), and require predicted == printed for n_ctx,
 * n_ctx_seq, n_seq_max, kv_unified, every llama_kv_cache line, the llama_memory_recurrent line,
 * the model and output buffers. A shape llama-server refuses must be refused by the law too (and
 * the server must have printed no memory line). The compute buffer is an estimate: its error is
 * measured and printed, not asserted. Each boot runs to /health 200 (a refusal after the memory
 * lines still counts), with one thread and no warmup run: the cheapest boot that prints them all.
 *
 * Group "matrix": the architectures (16) x 10 shapes; gemma3, which test-llama-archs does
 * not write, comes from `slipway gguf synth --arch gemma3` (12 layers, window 256, 128k-token
 * vocabulary). Group "sweep": every model in the directory, at two shapes; an architecture whose
 * memory module slipway does not model must be refused by the law with SW_EUNSUPPORTED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/arch.h>
#include <slipway/engine.h>
#include <slipway/gguf.h>
#include <slipway/memory.h>

#include "swllama.h"
#include "swtest.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *models_dir;
static char g_missing[8700]; /* what setup lacked, for swt_need */

/* compute-buffer error over every successful boot */
static double err_sum, err_max;
static int err_n;
static char err_max_case[256];

static const char *const SHAPES[] = {
    "-c 4096",
    "-c 8192 -np 3",
    "-c 8192 -np 2 -kvu",
    "-c 4096 -np 2 -ctk q8_0 -ctv q8_0 -fa on",
    "-c 6144 -np 2 --swa-full",
    "-c 5000 -np 1 -ub 256 -b 1024 -fa off",
    "-c 4096 -np 4 -ctk q4_0 -ctv q4_0 -fa on -ub 128",
    "-c 3000 -np 1 -ctk bf16 -ctv f32",
    "-c 4096 -np 2 -ctk q5_0 -ctv q5_1",
    "-c 4096 -ctk iq4_nl -ctv q4_1 -np 3 -kvu",
};

static const char *const MATRIX[] = {
    "llama-dense",         "qwen3moe-moe",     "gemma3-synth", "gpt-oss-moe",
    "gemma2-dense",        "qwen3next-moe",    "qwen35-dense", "qwen35moe-moe",
    "granitehybrid-dense", "nemotron_h-dense", "jamba-dense",  "falcon-h1-dense",
    "lfm2-dense",          "mamba2-dense",     "mamba-dense",  "deepseek2-moe",
};

static int split(char *buf, const char **argv, int max)
{
    int n = 0;
    for (char *s = buf; *s && n < max;) {
        while (*s == ' ')
            *s++ = '\0';
        if (!*s)
            break;
        argv[n++] = s;
        while (*s && *s != ' ')
            s++;
    }
    return n;
}

/* Plan in-process from the GGUF and the same flags llama-server gets. */
static int predict(const char *model, const char *const *flags, int nflags,
                   struct sw_llamacpp_plan *p, struct sw_err *e)
{
    struct sw_gguf *g = NULL;
    struct sw_arch *a = NULL;
    struct sw_llamacpp_args args;
    const char *argv[64];
    int argc = 0, rc;
    argv[argc++] = "llama-server";
    argv[argc++] = "-m";
    argv[argc++] = model;
    for (int i = 0; i < nflags && argc < 60; i++)
        argv[argc++] = flags[i];
    sw_llamacpp_args_init(&args);
    rc = sw_llamacpp_args_parse(&args, argc, argv, e);
    if (!rc)
        rc = sw_gguf_open(model, &g, e);
    if (!rc)
        rc = sw_arch_from_gguf(g, &a, e);
    if (!rc)
        rc = sw_llamacpp_plan(a, &args, NULL, p, e);
    sw_arch_free(a);
    sw_gguf_free(g);
    return rc;
}

/* The prediction against what was printed, with engine/llamacpp's differ (the printed side's
 * rounding as its tolerance; the compute buffer an estimate, never a mismatch). A field the law
 * predicts and the parser did not find counts as a difference too, except the model buffer
 * (kept by the old reader only when printed): a boot log that parsed to nothing must not pass.
 * Prints each differing field; returns their number. */
static int diff_printed(const char *name, const char *shape, const struct sw_llamacpp_report *pred,
                        const struct sw_bootlog_report *got)
{
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    json_t *a = sw_llamacpp_report_to_json(pred);
    json_t *b = sw_engine_llamacpp_report_json(got);
    json_t *prec = sw_engine_llamacpp_precision_json(got);
    json_t *d = NULL;
    struct sw_err e;
    int n = 1;
    assert_non_null(eng);
    if (!a || !b || !prec || eng->diff(a, b, prec, &d, &e)) {
        fprintf(stderr, "%s [%s]: the diff failed\n", name, shape);
        goto out;
    }
    n = 0;
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(d, "fields"), i, f)
    {
        const char *field = json_string_value(json_object_get(f, "field"));
        const char *verdict = json_string_value(json_object_get(f, "verdict"));
        bool unread = !strcmp(verdict, "not_printed") && strcmp(field, "model_bytes") &&
                      strcmp(field, "compute_bytes");
        if (strcmp(verdict, "mismatch") && !unread)
            continue;
        n++;
        char *pv = json_dumps(json_object_get(f, "predicted"), JSON_ENCODE_ANY);
        char *gv = json_dumps(json_object_get(f, "printed"), JSON_ENCODE_ANY);
        fprintf(stderr, "%s [%s]: %s: predicted %s, printed %s\n", name, shape, field,
                pv ? pv : "?",
                unread ? "(not found in the log)"
                : gv   ? gv
                       : "?");
        sw_free(pv);
        sw_free(gv);
    }
out:
    json_decref(a);
    json_decref(b);
    json_decref(prec);
    json_decref(d);
    return n;
}

/* Boot, parse, compare. Returns the number of differing fields (0 = exact). */
static int check_case(const char *name, const char *shape, bool *skipped, bool *refused)
{
    char model[4096], buf[512];
    const char *flags[48];
    struct swl_server s;
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_bootlog_report *got = calloc(1, sizeof(*got));
    struct sw_boot_status st;
    struct sw_err e;
    int diffs = 0;
    assert_non_null(got);

    *skipped = *refused = false;
    snprintf(model, sizeof(model), "%s/%s.gguf", models_dir, name);
    if (access(model, R_OK) != 0) {
        fprintf(stderr, "%s: no such model in %s\n", name, models_dir);
        free(p);
        free(got);
        return 1;
    }
    snprintf(buf, sizeof(buf), "%s", shape);
    int n = split(buf, flags, 40);
    /* -lv 4: the memory lines. The cheapest boot that still prints and allocates them all: one
     * thread (no pool whose spinning threads wait on each other on a shared CPU) and no warmup
     * run (it comes after every memory line; neither flag changes a memory figure, and the law
     * reads both as flags without a memory effect) */
    flags[n++] = "-lv";
    flags[n++] = "4";
    flags[n++] = "-t";
    flags[n++] = "1";
    flags[n++] = "--no-warmup";
    flags[n] = NULL;

    sw_err_clear(&e);
    int prc = predict(model, flags, n, p, &e);
    if (prc == SW_EUNSUPPORTED) {
        *skipped = true; /* a memory module slipway does not model: refused, as documented */
        free(p);
        free(got);
        return 0;
    }
    if (prc && prc != SW_EINVAL) {
        fprintf(stderr, "%s [%s]: the law failed: %s\n", name, shape, e.msg);
        free(p);
        free(got);
        return 1;
    }
    int src = swl_start(model, flags, NULL, 120, &s);
    char *log = NULL;
    size_t len = 0;
    if (s.log[0])
        sw_read_file(s.log, 64u << 20, &log, &len, NULL);
    sw_engine_llamacpp_bootlog(log ? log : "", log ? len : 0, NULL, got, &st);
    int lines = (int)got->n_kv + (got->has_recurrent ? 1 : 0); /* memory lines printed */

    if (prc) {
        /* the law refuses: llama-server must refuse too, before printing any memory line */
        if (src == 0 || lines > 0) {
            fprintf(stderr, "%s [%s]: the law refused (%s) but llama-server %s\n", name, shape,
                    e.msg, src == 0 ? "booted" : "printed memory lines");
            diffs = 1;
        }
        *refused = true;
    } else if (src != 0) {
        fprintf(stderr, "%s [%s]: llama-server did not boot; the law predicted a boot\n", name,
                shape);
        diffs = 1;
    } else {
        diffs = diff_printed(name, shape, &p->report, got);
        if (got->compute_bytes > 0) {
            double rel = fabs((double)p->report.compute_bytes - (double)got->compute_bytes) /
                         (double)got->compute_bytes;
            err_sum += rel;
            err_n++;
            if (rel > err_max) {
                err_max = rel;
                snprintf(err_max_case, sizeof(err_max_case),
                         "%s [%s]: predicted %.2f, printed %.2f MiB", name, shape,
                         p->report.compute_bytes / 1048576.0, got->compute_bytes / 1048576.0);
            }
        }
    }
    swl_stop(&s);
    sw_free(log);
    free(p);
    free(got);
    return diffs;
}

static void test_matrix(void **state)
{
    int bad = 0, ok = 0, refused = 0, unsupported = 0;
    (void)state;
    swt_need(models_dir != NULL, "test-llama-archs' models (%s)", g_missing);
    for (size_t a = 0; a < SW_ARRAY_LEN(MATRIX); a++) {
        for (size_t s = 0; s < SW_ARRAY_LEN(SHAPES); s++) {
            bool skipped, ref;
            int d = check_case(MATRIX[a], SHAPES[s], &skipped, &ref);
            if (d)
                bad++;
            else
                ok++;
            unsupported += skipped;
            refused += ref && !d;
        }
    }
    fprintf(stderr,
            "matrix: %zu architectures x %zu shapes: %d agree (%d of them refused by both "
            "the law and llama-server), %d differ\n",
            SW_ARRAY_LEN(MATRIX), SW_ARRAY_LEN(SHAPES), ok, refused, bad);
    assert_int_equal(unsupported, 0);
    assert_int_equal(bad, 0);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void test_sweep(void **state)
{
    char *names[256];
    size_t n = 0;
    int bad = 0, ok = 0, unsupported = 0;
    (void)state;
    swt_need(models_dir != NULL, "test-llama-archs' models (%s)", g_missing);
    DIR *d = opendir(models_dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) && n < SW_ARRAY_LEN(names)) {
        size_t l = strlen(de->d_name);
        if (l > 5 && !strcmp(de->d_name + l - 5, ".gguf"))
            names[n++] = strndup(de->d_name, l - 5);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str);
    for (size_t i = 0; i < n; i++) {
        const char *shapes[] = {"-c 2048 -np 2", "-c 3072 -np 3 -kvu -ub 256 -fa off"};
        for (size_t s = 0; s < 2; s++) {
            bool skipped, ref;
            int df = check_case(names[i], shapes[s], &skipped, &ref);
            if (skipped)
                unsupported++;
            else if (df)
                bad++;
            else
                ok++;
        }
        free(names[i]);
    }
    fprintf(stderr,
            "sweep: %zu models x 2 shapes: %d exact, %d differ, %d refused as unsupported\n", n, ok,
            bad, unsupported);
    assert_true(n >= 100);
    assert_int_equal(bad, 0);
    /* the DSA, MSA, DeepSeek-V4 and qwen4exp-indexer caches: 5 models x 2 shapes */
    assert_true(unsupported <= 10);
}

static int setup(void **state)
{
    (void)state;
    const char *gen = swl_bin("test-llama-archs");
    snprintf(g_missing, sizeof(g_missing), "%s", swl_missing());
    if (!swl_llama_dir() || !gen)
        return 0;
    models_dir = swt_tmpdir();
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' -o '%s' >/dev/null 2>&1", gen, models_dir);
    if (system(cmd) != 0) {
        snprintf(g_missing, sizeof(g_missing), "test-llama-archs -o %s failed", models_dir);
        swt_tmpdir_free(models_dir);
        models_dir = NULL;
        return 0;
    }
    /* gemma3: test-llama-archs does not write it; slipway's synth does */
    const char *vocab = swl_model_file("ggml-vocab-llama-bpe.gguf");
    if (vocab) {
        snprintf(cmd, sizeof(cmd),
                 "'%s' gguf synth --arch gemma3 --layers 12 --swa 256 --vocab '%s' --out "
                 "'%s/gemma3-synth.gguf' >/dev/null 2>&1",
                 swt_bin(), vocab, models_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "slipway gguf synth --arch gemma3 failed\n");
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (err_n)
        fprintf(stderr,
                "compute buffer estimate over %d boots: mean |error| %.1f%%, max %.1f%% (%s)\n",
                err_n, 100.0 * err_sum / err_n, 100.0 * err_max, err_max_case);
    if (models_dir)
        swt_tmpdir_free(models_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_sweep),
    };
    sw_core_init();
    return cmocka_run_group_tests_name("llamacpp_law_real", tests, setup, teardown);
}
