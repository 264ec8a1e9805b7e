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

#include <stdio.h>
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

#define FRANK                                                                                      \
    "{\"model_type\":\"qwen3_next\",\"num_hidden_layers\":48,\"num_attention_heads\":16,"          \
    "\"num_key_value_heads\":2,\"head_dim\":256,\"hidden_size\":2048,\"full_attention_interval\":" \
    "4,"                                                                                           \
    "\"linear_num_key_heads\":16,\"linear_num_value_heads\":48,\"linear_key_head_dim\":128,"       \
    "\"linear_value_head_dim\":128,\"linear_conv_kernel_dim\":4,\"torch_dtype\":\"bfloat16\","     \
    "\"max_position_embeddings\":262144}"

/* The seed's SGLang shape (fp8 KV, pool pinned at 606,208 tokens, mamba states pinned at 32
 * slots, 4 x 151,552) held against the qwen3_next config at TP 2: the law's arithmetic only. The
 * seed's figures themselves were printed for frank-small's model on one card
 * (test_sglang_fleet.c). Per request the 36 GDN layers hold 36 x (3 x 5120 x 2 + 24 x 128 x 128
 * x 4) = 57,729,024 B on each of 2 ranks; only the 12 full layers hold KV. */
static void test_frank_hybrid_pinned(void **state)
{
    cfg(FRANK);
    struct sw_sglang_opts o;
    sw_sglang_opts_init(&o);
    o.tp = 2;
    snprintf(o.kv_cache_dtype, sizeof(o.kv_cache_dtype), "fp8_e4m3");
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
    cfg(FRANK);
    struct sw_sglang_opts o;
    sw_sglang_opts_init(&o);
    o.tp = 2;
    snprintf(o.kv_cache_dtype, sizeof(o.kv_cache_dtype), "fp8_e4m3");
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
    };
    return cmocka_run_group_tests_name("sglang", tests, NULL, NULL);
}
