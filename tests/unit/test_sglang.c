/*
 * memory/sglang + engine/sglang: the default mem_fraction_static, the printed pool line, the
 * hybrid mamba pool, command lines and boot logs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/sglang.h>

#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sw_hf_config C;

static void cfg(const char *j)
{
    struct sw_err e;
    if (sw_hf_config_parse(j, strlen(j), "t", &C, &e))
        fail_msg("%s", e.msg);
}

/* server_args _handle_gpu_memory_settings on an RTX 4090 (24,564 MiB, tp 1, chunked prefill
 * 2048, cuda graph max bs 24): 512 + 3072 + 48 + 128 = 3,760 MiB reserved -> 0.847. */
static void test_default_fraction(void **state)
{
    struct sw_sglang_opts o;
    sw_sglang_opts_init(&o);
    o.gpu_mem_bytes = 24564ull << 20;
    o.cuda_graph_max_bs = 24;
    double res;
    assert_true(sw_sglang_default_mem_fraction(&o, &res) == 0.847);
    assert_true(res == 3760);
    /* > 60 GiB: a 10 GiB floor; eagle adds 2 GiB */
    o.gpu_mem_bytes = 81559ull << 20;
    o.cuda_graph_max_bs = 160;
    snprintf(o.speculative_algorithm, sizeof(o.speculative_algorithm), "EAGLE");
    sw_sglang_default_mem_fraction(&o, &res);
    assert_true(res == 512 + 8192 * 1.5 + 160 * 2 + 128 + 2048); /* chunked 8192 bucket */
    o.gpu_mem_bytes = 0;
    assert_true(sw_sglang_default_mem_fraction(&o, &res) == 0.88);
}

/* sglang-code-kvcached-gpt2: "#tokens: 248479, K size: 4.27 GB, V size: 4.27 GB" (the
 * physical line; the pool allocator is kvcached's, the K/V arithmetic SGLang's). */
static void test_gpt2_pool_line(void **state)
{
    cfg("{\"model_type\":\"gpt2\",\"n_layer\":12,\"n_head\":12,\"n_embd\":768,"
        "\"n_positions\":1024,\"torch_dtype\":\"float32\"}");
    struct sw_sglang_opts o;
    sw_sglang_opts_init(&o);
    o.max_total_tokens = 248479;
    struct sw_sglang_report r;
    struct sw_err e;
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), 0);
    assert_int_equal(r.max_total_num_tokens, 248479);
    char b[32];
    snprintf(b, sizeof(b), "%.2f", r.k_size_gb);
    assert_string_equal(b, "4.27");
    json_t *j = sw_sglang_report_json(&r);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "lines"), 0)),
                        "KV Cache is allocated. #tokens: 248479, K size: 4.27 GB, V size: 4.27 GB");
    json_decref(j);
}

#define FRANK SWT_QWEN3_NEXT_CONFIG

/* frank's architecture (FRANK) at TP 2 with an fp8_e4m3 KV cache, the rest SGLang's defaults. */
static void frank_tp2_fp8(struct sw_sglang_opts *o)
{
    cfg(FRANK);
    sw_sglang_opts_init(o);
    o->tp = 2;
    snprintf(o->kv_cache_dtype, sizeof(o->kv_cache_dtype), "fp8_e4m3");
}

/* The seed's SGLang shape (fp8 KV, pool pinned at 606,208 tokens, mamba states pinned at 32
 * slots, 4 x 151,552) held against the qwen3_next config at TP 2: the law's arithmetic only. The
 * seed's figures themselves were printed for frank-small's model on one card
 * (test_sglang_fleet.c). Per request the 36 GDN layers hold 36 x (3 x 5120 x 2 + 24 x 128 x 128
 * x 4) = 57,729,024 B on each of 2 ranks; only the 12 full layers hold KV. */
static void test_frank_hybrid_pinned(void **state)
{
    struct sw_sglang_opts o;
    frank_tp2_fp8(&o);
    o.max_total_tokens = 606208;
    o.max_mamba_cache_size = 32;
    o.max_running_requests = 4;
    struct sw_sglang_report r;
    struct sw_err e;
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), 0);
    assert_int_equal(r.kv_layers, 12);
    assert_int_equal(r.cell_bytes, 12 * 256 * 2);
    assert_int_equal(r.mamba_cache_per_req, 57729024);
    assert_int_equal(r.max_total_num_tokens, 606208);
    /* requests capped by the mamba pool / 3 (radix cache on) */
    assert_int_equal(r.max_num_reqs, 10);
    assert_int_equal(r.max_running_requests, 4);
}

/* The autofit split: mamba / KV = mamba_full_memory_ratio (0.9) of what is left. */
static void test_hybrid_autofit(void **state)
{
    struct sw_sglang_opts o;
    frank_tp2_fp8(&o);
    o.mem_fraction_static = 0.85;
    o.pre_load_free_bytes = 31ull << 30;
    o.post_load_avail_bytes = 20ull << 30;
    struct sw_sglang_report r;
    struct sw_err e;
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), 0);
    double rest = 20.0 - 31.0 * 0.15; /* 15.35 GiB */
    double mamba = rest * 0.9 / 1.9;  /* GiB */
    int64_t slots = (int64_t)(mamba * (1 << 30) / 57729024.0);
    assert_int_equal(r.max_mamba_cache_size, slots);
    double left = rest - (double)slots * 57729024.0 / (1 << 30);
    assert_int_equal(r.max_total_num_tokens, (int64_t)(left * (1 << 30) / 6144.0));
    /* too little: SGLang's own refusal */
    o.post_load_avail_bytes = 4ull << 30;
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "mem-fraction-static"));
}

static void test_argv(void **state)
{
    char *dir = swt_tmpdir();
    swt_write_str(swt_join(dir, "config.json"), FRANK);
    char *argv[] = {"python",
                    "-m",
                    "sglang.launch_server",
                    "--model-path",
                    dir,
                    "--tp",
                    "2",
                    "--kv-cache-dtype",
                    "fp8_e4m3",
                    "--max-total-tokens",
                    "606208",
                    "--max-mamba-cache-size",
                    "32",
                    "--max-running-requests",
                    "4",
                    "--context-length",
                    "151552",
                    "--disable-cuda-graph",
                    "--port",
                    "7770"};
    struct sw_sglang_report r;
    struct sw_err e;
    if (sw_sglang_plan_argv((int)SW_ARRAY_LEN(argv), argv, NULL, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(r.max_total_num_tokens, 606208);
    /* the server's address is no memory flag; a graph flag the law does not model is said */
    assert_null(strstr(r.warnings, "--port"));
    assert_non_null(strstr(r.warnings, "--disable-cuda-graph"));
    char *bad[] = {"python",       "-m", "sglang.launch_server",
                   "--model-path", dir,  "--mem-fraction-static",
                   "1.5"};
    assert_int_not_equal(sw_sglang_plan_argv((int)SW_ARRAY_LEN(bad), bad, NULL, &r, &e), 0);
    assert_non_null(strstr(e.msg, "--mem-fraction-static"));
    swt_tmpdir_free(dir);
}

static void test_bootlog(void **state)
{
    struct sw_vllm_bootlog b;
    const char *log =
        "[kvcached][INFO] Init kvcached KV cache allocator: num_layers=12, "
        "mem_size_per_layer=363MB\n"
        "[kvcached][INFO] VirtualKV Cache is allocated. #tokens: 248479, K size: 7.99 GB, V size: "
        "7.99 GB\n"
        "[kvcached][INFO] Physical KV Cache limits by --mem-fraction-static: #tokens: 248479, K "
        "size: 4.27 GB, V size: 4.27 GB\n"
        "[2026-09-30 10:00:01] max_total_num_tokens=606208, chunked_prefill_size=2048, "
        "max_prefill_tokens=16384, max_running_requests=4, context_len=262144\n"
        "[2026-09-30 10:00:02] The server is fired up and ready to roll!\n";
    assert_int_equal(sw_sglang_bootlog_parse(log, strlen(log), &b, NULL), 0);
    assert_true(b.has_sglang_kv);
    assert_int_equal(b.sglang_tokens, 248479);
    assert_true(b.sglang_k_gb == 4.27);
    assert_int_equal(b.max_total_num_tokens, 606208);
    assert_int_equal(b.max_running_requests, 4);
    assert_true(b.st.booted);
    assert_false(b.st.failed);
    const char *fail = "Load weight end. type=Qwen3NextForCausalLM, avail mem=9.10 GB, mem "
                       "usage=21.40 GB.\n"
                       "RuntimeError: Not enough memory. Please try to increase "
                       "--mem-fraction-static.\n";
    assert_int_equal(sw_sglang_bootlog_parse(fail, strlen(fail), &b, NULL), 0);
    assert_int_equal(b.st.failure.cls, SW_BOOT_KV_TOO_SMALL);
    assert_int_equal(b.st.failure.line, 2);
    assert_true(b.weights_gib == 21.40);
    assert_non_null(sw_engine_find("SGLang"));
}

/* Two real SGLang boots from public issue threads (their printed figures; the configs are the
 * models' published ones). The law takes the free memory around the weights' load and predicts
 * the pool and "Memory pool end. avail mem=": what the static fraction leaves once the K and V
 * buffers and the request table (requests + 1 rows of the context, int32) are allocated.
 *  A: Qwen2 7B (28 layers, 4 KV heads x 128), bf16, TP 1, Feb 2025: "Load weight begin. avail
 *     mem=22.76 GB", "Load weight end ... avail mem=8.37 GB", "K size: 2.82 GB, V size: 2.82 GB",
 *     "Memory pool end. avail mem=1.68 GB", max_total_num_tokens=105531, context_len=131072; the
 *     fraction then defaulted to 0.88 at TP 1. The request table is 2,049 x 131,072 x 4 B = 1.00
 *     GB: without it the prediction is 1.05 GB high.
 *  B: Qwen2.5-0.5B-Instruct (24 layers, 2 KV heads x 64), bf16, Feb 2026: "Load weight end ...
 *     avail mem=77.45 GB, mem usage=0.98 GB", "#tokens: 20480, K size: 0.12 GB, V size: 0.12 GB",
 *     "Memory pool end. avail mem=77.12 GB", max_running_requests=128, context_len=32768.
 * What the law leaves out (the engine's own small buffers) is 0.05 GB in A and 0.08 GB in B. */
static void test_pool_end_real_boots(void **state)
{
    (void)state;
    struct sw_sglang_opts o;
    struct sw_sglang_report r;
    struct sw_err e;
    const double gib = 1073741824.0;

    cfg("{\"model_type\":\"qwen2\",\"num_hidden_layers\":28,\"num_attention_heads\":28,"
        "\"num_key_value_heads\":4,\"hidden_size\":3584,\"max_position_embeddings\":131072,"
        "\"torch_dtype\":\"bfloat16\"}");
    sw_sglang_opts_init(&o);
    o.mem_fraction_static = 0.88;
    o.pre_load_free_bytes = (uint64_t)(22.76 * gib);
    o.post_load_avail_bytes = (uint64_t)(8.37 * gib);
    o.context_length = 131072;
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), 0);
    /* the prints' 0.005 GB on each free figure: +-0.0056 GiB of rest = +-105 tokens */
    assert_true(llabs(r.max_total_num_tokens - 105531) <= 105);
    char b[64];
    snprintf(b, sizeof(b), "%.2f", r.k_size_gb);
    assert_string_equal(b, "2.82");
    assert_true(r.has_pool_end);
    assert_true(fabs(r.req_to_token_gb - 1.00) < 0.005);
    assert_true(fabs(r.pool_end_avail_gb - 1.68) <= 0.1);
    assert_true(r.pool_end_avail_gb - 1.68 > 0); /* the unmodelled buffers only take */

    /* the same boot's log read back and held against the plan by the engine's diff */
    const char *log = "[2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.76 GB\n"
                      "[2025-02-04 05:29:17 TP0] Load weight end. type=Qwen2ForCausalLM, "
                      "dtype=torch.bfloat16, avail mem=8.37 GB\n"
                      "[2025-02-04 05:29:17 TP0] KV Cache is allocated. K size: 2.82 GB, V size: "
                      "2.82 GB.\n"
                      "[2025-02-04 05:29:17 TP0] Memory pool end. avail mem=1.68 GB\n"
                      "[2025-02-04 05:29:20 TP0] max_total_num_tokens=105531, "
                      "chunked_prefill_size=2048, max_prefill_tokens=16384, "
                      "max_running_requests=2049, context_len=131072\n";
    struct sw_vllm_bootlog bl;
    assert_int_equal(sw_sglang_bootlog_parse(log, strlen(log), &bl, NULL), 0);
    assert_true(bl.pre_load_avail_gb == 22.76);
    assert_true(bl.post_load_avail_gb == 8.37);
    assert_true(bl.pool_end_avail_gb == 1.68);
    json_t *printed = sw_vllm_bootlog_json(&bl), *pred = sw_sglang_report_json(&r), *d = NULL;
    const struct sw_engine *eng = sw_engine_find("sglang");
    assert_int_equal(eng->diff(pred, printed, NULL, &d, &e), 0);
    json_t *f;
    size_t i;
    bool seen = false;
    json_array_foreach(json_object_get(d, "fields"), i, f)
    {
        if (strcmp(json_string_value(json_object_get(f, "field")), "pool_end_avail_gb"))
            continue;
        seen = true;
        assert_string_equal(json_string_value(json_object_get(f, "verdict")), "match");
    }
    assert_true(seen);
    json_decref(d);
    json_decref(printed);
    /* the law's own line, as the engine prints it */
    const json_t *lines = json_object_get(pred, "lines");
    const char *last = json_string_value(json_array_get(lines, json_array_size(lines) - 1));
    assert_non_null(strstr(last, "Memory pool end. avail mem=1.7"));
    json_decref(pred);

    cfg("{\"model_type\":\"qwen2\",\"num_hidden_layers\":24,\"num_attention_heads\":14,"
        "\"num_key_value_heads\":2,\"hidden_size\":896,\"max_position_embeddings\":32768,"
        "\"torch_dtype\":\"bfloat16\"}");
    sw_sglang_opts_init(&o);
    o.max_total_tokens = 20480;
    o.max_running_requests = 128;
    o.pre_load_free_bytes = (uint64_t)((77.45 + 0.98) * gib);
    o.post_load_avail_bytes = (uint64_t)(77.45 * gib);
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), 0);
    assert_int_equal(r.max_total_num_tokens, 20480);
    snprintf(b, sizeof(b), "%.2f", r.k_size_gb);
    assert_string_equal(b, "0.12");
    assert_true(fabs(r.req_to_token_gb - 129.0 * 32768 * 4 / gib) < 1e-9);
    assert_true(fabs(r.pool_end_avail_gb - 77.12) <= 0.1);
    assert_true(r.pool_end_avail_gb - 77.12 > 0);
    /* without the free-memory facts (a pinned pool): no figure at pool end */
    o.post_load_avail_bytes = 0;
    assert_int_equal(sw_sglang_plan(&C, &o, &r, &e), 0);
    assert_false(r.has_pool_end);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_fraction),
        cmocka_unit_test(test_gpt2_pool_line),
        cmocka_unit_test(test_frank_hybrid_pinned),
        cmocka_unit_test(test_hybrid_autofit),
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_bootlog),
        cmocka_unit_test(test_pool_end_real_boots),
    };
    return cmocka_run_group_tests_name("sglang", tests, NULL, NULL);
}
