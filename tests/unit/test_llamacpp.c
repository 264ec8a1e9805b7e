/*
 * memory/llamacpp: the llama-server flag parser, the law's arithmetic on declared architectures
 * (rounding, iSWA sizes, recurrent states, MLA, V padding, refusals), the report's JSON/lines/diff,
 * and the data-driven real boot points of tests/data/llamacpp/ (one cmocka test per .json file).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/arch.h>
#include <slipway/engine.h>
#include <slipway/memory.h>

#include "swtest.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Helpers
 */
static struct sw_arch *decl(const char *json)
{
    struct sw_err e;
    struct sw_arch *a = NULL;
    json_t *j = sw_json_parse(json, strlen(json), "<test>", &e);
    assert_non_null(j);
    int rc = sw_arch_from_json(j, "<test>", &a, &e);
    if (rc)
        fprintf(stderr, "decl: %s\n", e.msg);
    assert_int_equal(rc, 0);
    json_decref(j);
    return a;
}

/* argv as one string, split on spaces; "llama-server -m x.gguf" is prepended. */
static int plan_str(const struct sw_arch *a, const char *flags, struct sw_llamacpp_plan *p,
                    struct sw_err *e)
{
    char buf[1024];
    const char *argv[64];
    int argc = 0;
    struct sw_llamacpp_args args;
    argv[argc++] = "llama-server";
    argv[argc++] = "-m";
    argv[argc++] = "x.gguf";
    snprintf(buf, sizeof(buf), "%s", flags);
    for (char *s = buf; *s;) {
        while (*s == ' ')
            *s++ = '\0';
        if (!*s)
            break;
        argv[argc++] = s;
        while (*s && *s != ' ')
            s++;
    }
    sw_llamacpp_args_init(&args);
    int rc = sw_llamacpp_args_parse(&args, argc, argv, e);
    if (rc)
        return rc;
    return sw_llamacpp_plan(a, &args, NULL, p, e);
}

static const char *LLAMA_SMALL =
    "{\"arch\":\"llama\",\"vocab_size\":32000,\"context_length\":8192,\"embedding_length\":2048,"
    "\"block_count\":16,\"feed_forward_length\":8192,\"attention.head_count\":32,"
    "\"attention.head_count_kv\":8}";

/* ---------------------------------------------------------------------------------------------
 * Flag parser
 */
static int parse(struct sw_llamacpp_args *a, struct sw_err *e, ...)
{
    const char *argv[64];
    int argc = 0;
    va_list ap;
    va_start(ap, e);
    for (const char *s = va_arg(ap, const char *); s && argc < 63; s = va_arg(ap, const char *))
        argv[argc++] = s;
    va_end(ap);
    sw_llamacpp_args_init(a);
    return sw_llamacpp_args_parse(a, argc, argv, e);
}

static void test_args_defaults(void **state)
{
    struct sw_llamacpp_args a;
    struct sw_err e;
    (void)state;
    assert_int_equal(parse(&a, &e, "llama-server", "-m", "m.gguf", NULL), 0);
    assert_string_equal(a.model, "m.gguf");
    assert_int_equal(a.n_ctx, 0);
    assert_int_equal(a.n_parallel, -1);
    assert_false(a.kv_unified);
    assert_int_equal(a.n_batch, 2048);
    assert_int_equal(a.n_ubatch, 512);
    assert_int_equal(a.type_k, SW_KV_F16);
    assert_int_equal(a.type_v, SW_KV_F16);
    assert_int_equal(a.flash_attn, SW_FA_AUTO);
    assert_true(a.mmap);
    assert_true(a.fit);
    assert_int_equal(a.n_warn, 0);
}

static void test_args_flags(void **state)
{
    struct sw_llamacpp_args a;
    struct sw_err e;
    (void)state;
    assert_int_equal(parse(&a, &e, "/usr/bin/llama-server", "--model", "m.gguf", "--ctx-size",
                           "32768", "-np", "3", "-kvu", "-ctk", "q8_0", "--cache-type-v=q4_0",
                           "-fa", "on", "--swa-full", "-b", "1024", "-ub", "256", "-ngl", "all",
                           "--no-mmap", "-nkvo", "--port", "8080", "-t", "4", NULL),
                     0);
    assert_int_equal(a.n_ctx, 32768);
    assert_int_equal(a.n_parallel, 3);
    assert_true(a.kv_unified);
    assert_int_equal(a.type_k, SW_KV_Q8_0);
    assert_int_equal(a.type_v, SW_KV_Q4_0);
    assert_int_equal(a.flash_attn, SW_FA_ON);
    assert_true(a.swa_full);
    assert_int_equal(a.n_batch, 1024);
    assert_int_equal(a.n_ubatch, 256);
    assert_int_equal(a.n_gpu_layers, -2);
    assert_false(a.mmap);
    assert_true(a.no_kv_offload);
    assert_int_equal(a.n_warn, 0); /* --port and -t have no memory effect */

    assert_int_equal(
        parse(&a, &e, "-m", "m.gguf", "-kvu", "-no-kvu", "-fa", "off", "-c", "0", NULL), 0);
    assert_false(a.kv_unified);
    assert_true(a.kv_unified_set);
    assert_int_equal(a.flash_attn, SW_FA_OFF);
    assert_true(a.n_ctx_zero);

    /* speculative decoding sets the rollback depth and the outputs per sequence */
    assert_int_equal(
        parse(&a, &e, "-m", "m.gguf", "--spec-type", "draft-mtp", "--spec-draft-n-max", "5", NULL),
        0);
    assert_true(a.spec_rs);
    assert_int_equal(a.spec_n_max, 5);
    assert_int_equal(parse(&a, &e, "-m", "m.gguf", "--spec-type", "ngram-mod,none", NULL), 0);
    assert_false(a.spec_rs);
    assert_int_equal(a.spec_n_max, 64);
}

static void test_args_warnings(void **state)
{
    struct sw_llamacpp_args a;
    struct sw_err e;
    (void)state;
    assert_int_equal(parse(&a, &e, "-m", "m.gguf", "-ot", "exps=CPU", "--mmproj", "p.gguf", "-md",
                           "d.gguf", NULL),
                     0);
    /* the projector and the draft are not the reader's to warn about: the plan prices them
     * (sw_llamacpp_plan_draft / _projector) or says why it cannot */
    assert_int_equal(a.n_warn, 1);
    assert_non_null(strstr(a.warn[0], "-ot"));
    assert_string_equal(a.mmproj, "p.gguf");
    assert_string_equal(a.draft, "d.gguf");
    /* the draft context's own flags (common_params_speculative_draft): f16, f16, auto */
    assert_int_equal(a.draft_type_k, SW_KV_F16);
    assert_int_equal(a.draft_type_v, SW_KV_F16);
    assert_int_equal(a.draft_n_gpu_layers, -1);
    assert_int_equal(parse(&a, &e, "-m", "m.gguf", "-md", "d.gguf", "-ctkd", "q8_0",
                           "--cache-type-v-draft", "q4_0", "-ngld", "all", NULL),
                     0);
    assert_int_equal(a.n_warn, 0);
    assert_int_equal(a.draft_type_k, SW_KV_Q8_0);
    assert_int_equal(a.draft_type_v, SW_KV_Q4_0);
    assert_int_equal(a.draft_n_gpu_layers, -2);
    sw_err_clear(&e);
    assert_int_equal(parse(&a, &e, "-m", "m.gguf", "-ctvd", "q9", NULL), SW_EINVAL);
    assert_non_null(strstr(e.msg, "-ctvd"));
}

static void test_args_errors(void **state)
{
    struct sw_llamacpp_args a;
    struct sw_err e;
    (void)state;
#define BAD(flagname, ...)                                                                         \
    do {                                                                                           \
        sw_err_clear(&e);                                                                          \
        assert_int_equal(parse(&a, &e, __VA_ARGS__, NULL), SW_EINVAL);                             \
        assert_non_null(strstr(e.msg, flagname));                                                  \
    } while (0)
    BAD("-c", "-m", "m.gguf", "-c", "abc");
    BAD("-c", "-m", "m.gguf", "-c", "-5");
    BAD("-c", "-m", "m.gguf", "-c");
    BAD("-np", "-m", "m.gguf", "-np", "0");
    BAD("-ctk", "-m", "m.gguf", "-ctk", "q4_K");
    BAD("-fa", "-m", "m.gguf", "-fa", "maybe");
    BAD("-ub", "-m", "m.gguf", "-ub", "0");
    BAD("--frobnicate", "-m", "m.gguf", "--frobnicate");
    BAD("--swa-full", "-m", "m.gguf", "--swa-full=1");
    BAD("--draft-max", "-m", "m.gguf", "--draft-max", "4");
    BAD("--spec-type", "-m", "m.gguf", "--spec-type", "draft-bogus");
    BAD("-m", "-c", "4096");
#undef BAD
}

/* ---------------------------------------------------------------------------------------------
 * The law on declared architectures
 */
static void test_context_rounding(void **state)
{
    struct sw_arch *a = decl(LLAMA_SMALL);
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_err e;
    (void)state;

    /* n_ctx 5000 -> pad 5120; /3 = 1706 -> pad 1792; n_ctx = 1792 x 3 */
    assert_int_equal(plan_str(a, "-c 5000 -np 3", p, &e), 0);
    assert_int_equal(p->report.n_ctx, 5376);
    assert_int_equal(p->report.n_ctx_seq, 1792);
    assert_int_equal(p->report.n_seq_max, 3);
    assert_false(p->report.kv_unified);
    assert_int_equal(p->report.kv[0].streams, 3);
    assert_int_equal(p->report.kv[0].cells, 1792);
    /* K per token per layer: 8 x 64 x 2 B; 16 layers; 3 streams */
    assert_int_equal(p->report.kv[0].k_bytes, 1792ull * 3 * 16 * 8 * 64 * 2);
    assert_int_equal(p->n_slots, 3);
    assert_int_equal(p->n_ctx_slot, 1792);

    assert_int_equal(plan_str(a, "-c 5000 -np 3 -kvu", p, &e), 0);
    assert_int_equal(p->report.n_ctx, 5120);
    assert_int_equal(p->report.n_ctx_seq, 5120);
    assert_int_equal(p->report.kv[0].streams, 1);

    /* default: 4 auto slots, unified, the training context */
    assert_int_equal(plan_str(a, "", p, &e), 0);
    assert_int_equal(p->report.n_seq_max, 4);
    assert_true(p->report.kv_unified);
    assert_int_equal(p->report.n_ctx, 8192);
    assert_int_equal(p->report.n_batch, 2048);
    /* a batch larger than the context is cut to it (before padding) */
    assert_int_equal(plan_str(a, "-c 300 -np 1", p, &e), 0);
    assert_int_equal(p->report.n_batch, 300);
    assert_int_equal(p->report.n_ubatch, 300);
    assert_int_equal(p->report.n_ctx, 512);
    /* output buffer: vocab x n_seq_max floats */
    assert_int_equal(p->report.output_bytes, 32000ull * 1 * 4);
    /* -no-kvu without -np: auto slots force unified anyway, with a warning */
    assert_int_equal(plan_str(a, "-c 4096 -no-kvu", p, &e), 0);
    assert_true(p->report.kv_unified);
    bool warned = false;
    for (int i = 0; i < p->n_warn; i++)
        warned |= strstr(p->warn[i], "-no-kvu") != NULL;
    assert_true(warned);
    /* --kv-unified-per-slot sizes the pool when -c is not given */
    assert_int_equal(plan_str(a, "--kv-unified-per-slot 1000 -np 2 -kvu", p, &e), 0);
    assert_int_equal(p->report.n_ctx, 2048);
    assert_int_equal(p->n_ctx_slot, 1000);

    free(p);
    sw_arch_free(a);
}

static void test_swa_sizes(void **state)
{
    /* gemma3: window 1024, every 6th layer full */
    struct sw_arch *a = decl("{\"arch\":\"gemma3\",\"vocab_size\":262144,\"context_length\":"
                             "131072,\"embedding_length\":2560,\"block_count\":34,"
                             "\"attention.head_count\":8,\"attention.head_count_kv\":4,"
                             "\"attention.key_length\":256,\"attention.value_length\":256,"
                             "\"attention.sliding_window\":1024}");
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_err e;
    (void)state;
    assert_int_equal(a->n_swa_layers, 29);
    assert_int_equal(plan_str(a, "-c 8192 -np 2", p, &e), 0);
    assert_int_equal(p->report.n_kv, 2);
    assert_false(p->report.kv[0].swa);
    assert_int_equal(p->report.kv[0].layers, 5);
    assert_int_equal(p->report.kv[0].cells, 4096);
    assert_true(p->report.kv[1].swa);
    assert_int_equal(p->report.kv[1].layers, 29);
    assert_int_equal(p->report.kv[1].cells, 1536); /* pad(min(4096, 1024 + 512), 256) */
    assert_int_equal(plan_str(a, "-c 8192 -np 2 -kvu", p, &e), 0);
    assert_int_equal(p->report.kv[1].cells, 2560); /* 1024 x 2 + 512 */
    assert_int_equal(plan_str(a, "-c 8192 -np 2 --swa-full", p, &e), 0);
    assert_int_equal(p->report.kv[1].cells, 4096);
    assert_int_equal(plan_str(a, "-c 1024 -np 1", p, &e), 0);
    assert_int_equal(p->report.kv[1].cells, 1024); /* capped by the base size */
    free(p);
    sw_arch_free(a);
}

static void test_recurrent_states(void **state)
{
    struct sw_arch *m = decl("{\"arch\":\"mamba2\",\"vocab_size\":50288,\"context_length\":"
                             "1048576,\"embedding_length\":2560,\"block_count\":64,"
                             "\"ssm.conv_kernel\":4,\"ssm.inner_size\":5120,\"ssm.state_size\":128,"
                             "\"ssm.group_count\":1,\"ssm.time_step_rank\":80}");
    struct sw_arch *q = decl("{\"arch\":\"qwen35\",\"vocab_size\":248320,\"context_length\":"
                             "262144,\"embedding_length\":4096,\"block_count\":32,"
                             "\"attention.head_count\":16,\"attention.head_count_kv\":4,"
                             "\"attention.key_length\":256,\"attention.value_length\":256,"
                             "\"ssm.conv_kernel\":4,\"ssm.inner_size\":4096,\"ssm.state_size\":128,"
                             "\"ssm.group_count\":16,\"ssm.time_step_rank\":32}");
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_err e;
    (void)state;
    /* mamba2: r = 3 x (5120 + 2 x 1 x 128), s = 128 x 5120 */
    assert_int_equal(m->ssm.n_embd_r, 3 * (5120 + 256));
    assert_int_equal(m->ssm.n_embd_s, 128 * 5120);
    assert_int_equal(plan_str(m, "-c 4096 -np 3", p, &e), 0);
    assert_int_equal(p->report.n_kv, 0);
    assert_true(p->report.has_recurrent);
    assert_int_equal(p->report.recurrent.cells, 3);
    assert_int_equal(p->report.recurrent.layers, 64);
    assert_int_equal(p->report.recurrent.r_bytes, 64ull * 3 * 3 * (5120 + 256) * 4);
    /* mamba2 does not support rollback: a draft type leaves rs_seq at 0 */
    assert_int_equal(plan_str(m, "-c 4096 -np 1 --spec-type draft-mtp", p, &e), 0);
    assert_int_equal(p->report.recurrent.rs_seq, 0);

    /* qwen35: 8 attention + 24 GDN layers; the KV line comes first */
    assert_int_equal(q->n_attn_layers, 8);
    assert_int_equal(q->n_recr_layers, 24);
    assert_int_equal(plan_str(q, "-c 4096 -np 2 --spec-type draft-mtp --spec-draft-n-max 3", p, &e),
                     0);
    assert_int_equal(p->report.n_kv, 1);
    assert_int_equal(p->report.kv[0].layers, 8);
    assert_int_equal(p->report.recurrent.rs_seq, 3);
    assert_int_equal(p->report.recurrent.layers, 32);
    assert_int_equal(p->report.recurrent.s_bytes, 24ull * 2 * (1 + 3) * 128 * 4096 * 4);
    free(p);
    sw_arch_free(m);
    sw_arch_free(q);
}

static void test_mla_and_v_padding(void **state)
{
    struct sw_arch *d = decl("{\"arch\":\"deepseek2\",\"vocab_size\":102400,\"context_length\":"
                             "163840,\"embedding_length\":2048,\"block_count\":27,"
                             "\"attention.head_count\":16,\"attention.head_count_kv\":1,"
                             "\"attention.key_length\":576,\"attention.value_length\":512,"
                             "\"attention.key_length_mla\":192,\"attention.value_length_mla\":128,"
                             "\"attention.kv_lora_rank\":512}");
    /* gemma4: full layers have 512-wide heads, SWA layers 256 */
    struct sw_arch *g = decl("{\"arch\":\"gemma4\",\"vocab_size\":262144,\"context_length\":"
                             "131072,\"embedding_length\":2560,\"block_count\":6,"
                             "\"attention.head_count\":8,\"attention.head_count_kv\":2,"
                             "\"attention.key_length\":512,\"attention.value_length\":512,"
                             "\"attention.key_length_swa\":256,\"attention.value_length_swa\":256,"
                             "\"attention.sliding_window\":512,"
                             "\"attention.sliding_window_pattern\":[1,1,1,1,1,0]}");
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_err e;
    (void)state;
    assert_true(d->mla.on);
    assert_int_equal(plan_str(d, "-c 4096 -np 1", p, &e), 0);
    assert_int_equal(p->report.kv[0].k_bytes, 4096ull * 27 * 576 * 2);
    assert_int_equal(p->report.kv[0].v_bytes, 0);
    assert_int_equal(plan_str(d, "-c 4096 -ctk q8_0 -ctv f16", p, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "MLA"));

    /* with flash attention V rows keep their width; without, every V row is padded to 1024 */
    assert_int_equal(plan_str(g, "-c 4096 -np 1", p, &e), 0);
    assert_int_equal(p->report.kv[1].cells, 1024); /* pad(min(4096, 512 + 512), 256) */
    assert_int_equal(p->report.kv[1].v_bytes, 1024ull * 5 * 512 * 2); /* SWA: 2 x 256 */
    assert_int_equal(plan_str(g, "-c 4096 -np 1 -fa off", p, &e), 0);
    assert_int_equal(p->report.kv[1].v_bytes, 1024ull * 5 * 1024 * 2);
    free(p);
    sw_arch_free(d);
    sw_arch_free(g);
}

static void test_refusals(void **state)
{
    struct sw_arch *a = decl(LLAMA_SMALL);
    struct sw_arch *x =
        decl("{\"arch\":\"deepseek32\",\"context_length\":4096,"
             "\"embedding_length\":128,\"block_count\":2,\"attention.head_count\":1}");
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_err e;
    (void)state;
    assert_int_equal(plan_str(a, "-np 300", p, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "256"));
    assert_int_equal(plan_str(a, "-ctv q8_0 -fa off", p, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "flash"));
    /* -fa auto with a quantized V turns flash attention on */
    assert_int_equal(plan_str(a, "-ctv q8_0", p, &e), 0);
    assert_true(p->flash_attn);
    assert_int_equal(plan_str(x, "-c 512", p, &e), SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "DSA"));
    free(p);
    sw_arch_free(a);
    sw_arch_free(x);
}

static void test_fit_cpu(void **state)
{
    /* -c unset with separate streams: fit asks n_ctx_train x streams */
    struct sw_arch *a = decl(LLAMA_SMALL);
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_llamacpp_args args;
    struct sw_llamacpp_env env = {0};
    struct sw_err e;
    const char *argv[] = {"-m", "x.gguf", "-np", "2"};
    (void)state;
    sw_llamacpp_args_init(&args);
    assert_int_equal(sw_llamacpp_args_parse(&args, 4, argv, &e), 0);
    assert_int_equal(sw_llamacpp_plan(a, &args, NULL, p, &e), 0);
    assert_int_equal(p->report.n_ctx, 16384);
    assert_int_equal(p->report.n_ctx_seq, 8192);
    /* too little host memory: the context shrinks towards 4096 x 2, aligned to 512 */
    env.host_memory = 1024ull * SW_MIB + 300ull * SW_MIB; /* KV alone is 512 MiB */
    assert_int_equal(sw_llamacpp_plan(a, &args, &env, p, &e), 0);
    assert_true(p->report.n_ctx < 16384);
    assert_true(p->report.n_ctx >= 8192);
    assert_int_equal(p->report.n_ctx % 512, 0);
    /* -fit off keeps the training context (split across the streams) */
    const char *argv2[] = {"-m", "x.gguf", "-np", "2", "-fit", "off"};
    sw_llamacpp_args_init(&args);
    assert_int_equal(sw_llamacpp_args_parse(&args, 6, argv2, &e), 0);
    assert_int_equal(sw_llamacpp_plan(a, &args, NULL, p, &e), 0);
    assert_int_equal(p->report.n_ctx, 8192);
    assert_int_equal(p->report.n_ctx_seq, 4096);
    free(p);
    sw_arch_free(a);
}

static void test_gpu_budget(void **state)
{
    struct sw_arch *a = decl(
        "{\"arch\":\"llama\",\"vocab_size\":32000,\"context_length\":8192,\"embedding_length\":"
        "2048,\"block_count\":16,\"attention.head_count\":32,\"attention.head_count_kv\":8,"
        "\"weights\":{\"embd\":100000,\"output\":200000,\"attn\":1600000,\"ffn\":3200000}}");
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    struct sw_llamacpp_args args;
    struct sw_llamacpp_env env = {0};
    struct sw_err e;
    const char *argv[] = {"-m", "x.gguf", "-c", "4096", "-np", "1", "-ngl", "8"};
    (void)state;
    env.n_gpu = 1;
    snprintf(env.gpu_name[0], sizeof(env.gpu_name[0]), "CUDA0");
    env.gpu_memory[0] = 24ull * SW_GIB;
    sw_llamacpp_args_init(&args);
    assert_int_equal(sw_llamacpp_args_parse(&args, 8, argv, &e), 0);
    assert_int_equal(sw_llamacpp_plan(a, &args, &env, p, &e), 0);
    assert_int_equal(p->n_dev, 2);
    /* -ngl 8 of 16 layers + output: layers 9..15 and the output go to the GPU, so 7 of 16
     * layers' KV is on CUDA0 */
    uint64_t per_layer = 4096ull * 8 * 64 * 2 * 2;
    assert_int_equal(p->dev[1].kv, 7 * per_layer);
    assert_int_equal(p->dev[0].kv, 9 * per_layer);
    assert_int_equal(p->dev[1].weights, 200000);
    free(p);
    sw_arch_free(a);
}

/* ---------------------------------------------------------------------------------------------
 * Report: JSON, lines, diff. The printed side goes through the product's own boot-log parser and
 * differ (engine/llamacpp, as `up` and `bootlog diff` use them).
 */

/* The verdict of one field of a diff, or NULL. */
static const char *verdict_of(const json_t *d, const char *field, json_int_t *pred, json_int_t *got)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(d, "fields"), i, f)
    {
        if (strcmp(json_string_value(json_object_get(f, "field")), field))
            continue;
        if (pred)
            *pred = json_integer_value(json_object_get(f, "predicted"));
        if (got)
            *got = json_integer_value(json_object_get(f, "printed"));
        return json_string_value(json_object_get(f, "verdict"));
    }
    return NULL;
}

static void test_report_json_lines_diff(void **state)
{
    struct sw_arch *a = decl(LLAMA_SMALL);
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    struct sw_err e;
    struct sw_buf b;
    json_t *d = NULL, *boot = NULL;
    json_int_t pv, gv;
    assert_non_null(eng);
    (void)state;
    assert_int_equal(plan_str(a, "-c 4096 -np 2 -ctk q8_0 -ctv q8_0", p, &e), 0);
    json_t *j = sw_llamacpp_report_to_json(&p->report);
    assert_non_null(j);
    /* exactly the fields the issue names */
    const char *keys[] = {"n_ctx",     "n_ctx_seq",   "n_seq_max",    "kv_unified",   "kv_caches",
                          "recurrent", "model_bytes", "output_bytes", "compute_bytes"};
    assert_int_equal(json_object_size(j), SW_ARRAY_LEN(keys));
    for (size_t i = 0; i < SW_ARRAY_LEN(keys); i++)
        assert_non_null(json_object_get(j, keys[i]));
    json_t *kv0 = json_array_get(json_object_get(j, "kv_caches"), 0);
    assert_int_equal(json_object_size(kv0), 9);
    assert_string_equal(json_string_value(json_object_get(kv0, "k_type")), "q8_0");
    assert_true(json_is_null(json_object_get(j, "recurrent")));
    /* the prediction against itself: every field matches, compute is an estimate */
    assert_int_equal(eng->diff(j, j, NULL, &d, &e), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 0);
    assert_string_equal(verdict_of(d, "kv_caches[0].k_type", NULL, NULL), "match");
    assert_string_equal(verdict_of(d, "compute_bytes", NULL, NULL), "estimate");
    json_decref(d);

    /* the printed lines, read by the boot-log parser, give back the same report */
    sw_buf_init(&b, 1 << 16);
    assert_int_equal(sw_llamacpp_print_lines(&p->report, &b), 0);
    assert_non_null(strstr(sw_buf_cstr(&b),
                           "llama_kv_cache: size =   68.00 MiB (  2048 cells,  "
                           "16 layers,  2/2 seqs), K (q8_0):   34.00 MiB, V (q8_0): "
                           "  34.00 MiB"));
    assert_int_equal(eng->bootlog(b.data, b.len, "<printed>", NULL, &boot, NULL, &e), 0);
    json_t *printed = json_object_get(boot, "report");
    assert_int_equal(json_array_size(json_object_get(printed, "kv_caches")), 1);
    assert_int_equal(eng->diff(j, boot, NULL, &d, &e), 0);
    if (json_integer_value(json_object_get(d, "mismatches")))
        sw_json_print(stderr, d, true);
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 0);
    assert_string_equal(verdict_of(d, "n_ctx", NULL, NULL), "match");
    assert_string_equal(verdict_of(d, "kv_caches[0].cells", NULL, NULL), "match");
    assert_string_equal(verdict_of(d, "kv_caches[0].v_bytes", NULL, NULL), "match");
    json_decref(d);

    /* a difference is named, field by field */
    json_t *kv0p = json_array_get(json_object_get(printed, "kv_caches"), 0);
    json_object_set_new(kv0p, "cells", json_integer(1024));
    json_object_set_new(printed, "n_ctx", json_integer(1));
    assert_int_equal(eng->diff(j, boot, NULL, &d, &e), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 2);
    assert_false(json_is_true(json_object_get(d, "match")));
    assert_string_equal(verdict_of(d, "kv_caches[0].cells", &pv, &gv), "mismatch");
    assert_int_equal(pv, 2048);
    assert_int_equal(gv, 1024);
    assert_string_equal(verdict_of(d, "n_ctx", NULL, &gv), "mismatch");
    assert_int_equal(gv, 1);
    json_decref(d);
    json_decref(boot);
    json_decref(j);
    sw_buf_free(&b);

    /* plan JSON has report, budget, warnings */
    j = sw_llamacpp_plan_to_json(p);
    assert_non_null(json_object_get(j, "report"));
    assert_non_null(json_object_get(json_object_get(j, "budget"), "devices"));
    assert_true(json_is_array(json_object_get(j, "warnings")));
    json_decref(j);
    free(p);
    sw_arch_free(a);
}

static void test_mib_precision(void **state)
{
    char a[32];
    (void)state;
    /* 28.125 MiB prints 28.12 (round half to even of the exact binary value) */
    assert_string_equal(sw_llamacpp_mib_f(28ull * SW_MIB + SW_MIB / 8, a, sizeof(a)), "28.12");
    assert_string_equal(sw_llamacpp_mib_d(9458688, a, sizeof(a)), "9.02");
    assert_string_equal(sw_llamacpp_mib_f(0, a, sizeof(a)), "0.00");
}

/* Declared arch -> law -> plan JSON, as `slipway plan --arch` runs it. */
static int arch_plan_json(void *arg)
{
    struct sw_err e;
    struct sw_arch *a = NULL;
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    int rc = sw_arch_from_json(arg, "<t>", &a, &e);
    if (rc == 0)
        rc = plan_str(a, "-c 1024", p, &e);
    if (rc == 0) {
        json_t *out = sw_llamacpp_plan_to_json(p);
        rc = out ? 0 : SW_ENOMEM;
        json_decref(out);
    }
    free(p);
    sw_arch_free(a);
    return rc;
}

/* Every allocation of the plan failing in turn: SW_ENOMEM each time, nothing leaked (ASan). */
static void test_alloc_failures(void **state)
{
    (void)state;
    json_t *j = json_loads(LLAMA_SMALL, 0, NULL);
    assert_non_null(j);
    assert_true(swt_torture("arch -> llama.cpp plan -> JSON", arch_plan_json, j, SW_ENOMEM) > 2);
    json_decref(j);
}

/* ---------------------------------------------------------------------------------------------
 * Data-driven: tests/data/llamacpp/<case>.json, real boot points from ../shared/data/bootlogs.
 */
static bool check_u(const json_t *o, const char *k, uint64_t got, const char *what)
{
    const json_t *v = json_object_get(o, k);
    if (!v)
        return true;
    if ((uint64_t)json_integer_value(v) != got &&
        !(json_is_boolean(v) && json_is_true(v) == (got != 0))) {
        fprintf(stderr, "  %s.%s: printed %lld, predicted %llu\n", what, k,
                (long long)json_integer_value(v), (unsigned long long)got);
        return false;
    }
    return true;
}

static bool check_s(const json_t *o, const char *k, const char *got, const char *what)
{
    const char *v = json_string_value(json_object_get(o, k));
    if (!v)
        return true;
    if (strcmp(v, got)) {
        fprintf(stderr, "  %s.%s: printed %s, predicted %s\n", what, k, v, got);
        return false;
    }
    return true;
}

static void test_bootlog_point(void **state)
{
    const char *path = *state;
    struct sw_err e;
    struct sw_arch *a = NULL;
    struct sw_llamacpp_args args;
    struct sw_llamacpp_plan *p = calloc(1, sizeof(*p));
    const char *argv[64];
    char m[32];
    bool ok = true;

    json_t *c = sw_json_load_file(path, 1 << 20, &e);
    assert_non_null(c);
    assert_int_equal(sw_arch_from_json(json_object_get(c, "arch"), path, &a, &e), 0);
    const json_t *av = json_object_get(c, "argv");
    int argc = 0;
    argv[argc++] = "llama-server";
    for (size_t i = 0; i < json_array_size(av) && argc < 63; i++)
        argv[argc++] = json_string_value(json_array_get(av, i));
    sw_llamacpp_args_init(&args);
    assert_int_equal(sw_llamacpp_args_parse(&args, argc, argv, &e), 0);
    int rc = sw_llamacpp_plan(a, &args, NULL, p, &e);
    if (rc)
        fprintf(stderr, "%s: %s\n", path, e.msg);
    assert_int_equal(rc, 0);

    const json_t *x = json_object_get(c, "expect");
    const struct sw_llamacpp_report *r = &p->report;
    ok &= check_u(x, "n_ctx", r->n_ctx, "report");
    ok &= check_u(x, "n_ctx_seq", r->n_ctx_seq, "report");
    ok &= check_u(x, "n_seq_max", r->n_seq_max, "report");
    ok &= check_u(x, "kv_unified", r->kv_unified, "report");
    if (json_object_get(x, "kv_total_mib")) {
        uint64_t t = 0;
        for (uint32_t i = 0; i < r->n_kv; i++)
            t += r->kv[i].k_bytes + r->kv[i].v_bytes;
        ok &= check_s(x, "kv_total_mib", sw_llamacpp_mib_d(t, m, sizeof(m)), "report");
    }
    const json_t *kvs = json_object_get(x, "kv");
    if (kvs) {
        if (json_array_size(kvs) != r->n_kv) {
            fprintf(stderr, "  %zu KV lines printed, %u predicted\n", json_array_size(kvs),
                    r->n_kv);
            ok = false;
        }
        for (uint32_t i = 0; i < r->n_kv && i < json_array_size(kvs); i++) {
            const json_t *o = json_array_get(kvs, i);
            const struct sw_llamacpp_kv *k = &r->kv[i];
            ok &= check_u(o, "cells", k->cells, "kv");
            ok &= check_u(o, "layers", k->layers, "kv");
            ok &= check_u(o, "seqs", k->seqs, "kv");
            ok &= check_u(o, "streams", k->streams, "kv");
            ok &= check_u(o, "swa", k->swa, "kv");
            ok &= check_s(o, "k_type", sw_kv_type_name(k->k_type), "kv");
            ok &= check_s(o, "v_type", sw_kv_type_name(k->v_type), "kv");
            ok &= check_s(o, "k_mib", sw_llamacpp_mib_f(k->k_bytes, m, sizeof(m)), "kv");
            ok &= check_s(o, "v_mib", sw_llamacpp_mib_f(k->v_bytes, m, sizeof(m)), "kv");
            ok &= check_s(o, "size_mib", sw_llamacpp_mib_f(k->k_bytes + k->v_bytes, m, sizeof(m)),
                          "kv");
        }
    }
    const json_t *rec = json_object_get(x, "recurrent");
    if (rec) {
        assert_true(r->has_recurrent);
        const struct sw_llamacpp_recurrent *q = &r->recurrent;
        ok &= check_u(rec, "cells", q->cells, "recurrent");
        ok &= check_u(rec, "layers", q->layers, "recurrent");
        ok &= check_u(rec, "seqs", q->seqs, "recurrent");
        ok &= check_u(rec, "rs_seq", q->rs_seq, "recurrent");
        ok &= check_s(rec, "r_mib", sw_llamacpp_mib_f(q->r_bytes, m, sizeof(m)), "recurrent");
        ok &= check_s(rec, "s_mib", sw_llamacpp_mib_f(q->s_bytes, m, sizeof(m)), "recurrent");
        ok &= check_s(rec, "size_mib", sw_llamacpp_mib_f(q->r_bytes + q->s_bytes, m, sizeof(m)),
                      "recurrent");
    } else {
        /* a point with KV lines only must not predict a recurrent line it did not print, unless
         * the excerpt simply did not include it */
    }
    if (!ok)
        fprintf(stderr, "%s: prediction differs from the printed lines\n", path);
    assert_true(ok);
    free(p);
    sw_arch_free(a);
    json_decref(c);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_args_defaults),    cmocka_unit_test(test_args_flags),
        cmocka_unit_test(test_args_warnings),    cmocka_unit_test(test_args_errors),
        cmocka_unit_test(test_context_rounding), cmocka_unit_test(test_swa_sizes),
        cmocka_unit_test(test_recurrent_states), cmocka_unit_test(test_mla_and_v_padding),
        cmocka_unit_test(test_refusals),         cmocka_unit_test(test_fit_cpu),
        cmocka_unit_test(test_gpu_budget),       cmocka_unit_test(test_report_json_lines_diff),
        cmocka_unit_test(test_mib_precision),    cmocka_unit_test(test_alloc_failures),
    };
    sw_core_init();
    int rc = cmocka_run_group_tests_name("llamacpp", fixed, NULL, NULL);

    /* one test per boot point */
    const char *dir = swt_src("tests/data/llamacpp");
    char *paths[256];
    size_t n = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) && n < SW_ARRAY_LEN(paths)) {
            size_t l = strlen(de->d_name);
            if (l > 5 && !strcmp(de->d_name + l - 5, ".json")) {
                char buf[4096];
                snprintf(buf, sizeof(buf), "%s/%s", dir, de->d_name);
                paths[n++] = strdup(buf);
            }
        }
        closedir(d);
    }
    qsort(paths, n, sizeof(paths[0]), cmp_str);
    struct CMUnitTest *tests = calloc(n ? n : 1, sizeof(*tests));
    for (size_t i = 0; i < n; i++) {
        tests[i].name = strrchr(paths[i], '/') + 1;
        tests[i].test_func = test_bootlog_point;
        tests[i].initial_state = paths[i];
    }
    if (n == 0) {
        fprintf(stderr, "no boot points found in %s\n", dir);
        rc |= 1;
    } else {
        rc |= _cmocka_run_group_tests("llamacpp_bootlogs", tests, n, NULL, NULL);
    }
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(tests);
    return rc;
}
