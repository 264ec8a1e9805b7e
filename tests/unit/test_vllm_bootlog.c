/*
 * engine/vllm boot-log parser: report fields from real boot lines (points.jsonl raw lines) and one
 * test per failure class, from the seed's quoted errors (seed/000_72a2b93c5830e64b.txt) and the
 * boot-log data. Where the seed quotes a fragment ("Tried to allocate 50.00 MiB ... 0 bytes free")
 * the fragment is kept verbatim inside a line of the engine's usual shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/vllm.h>

#include "swtest.h"

#include <stdlib.h>
#include <string.h>

static struct sw_vllm_bootlog R;

static void parse(const char *log)
{
    assert_int_equal(sw_vllm_bootlog_parse(log, strlen(log), &R, NULL), 0);
}

static void test_report_hybrid_652(void **state)
{
    parse("(EngineCore pid=107) INFO 07-09 02:58:11 [gpu_worker.py:508] Available KV cache "
          "memory: 6.01 GiB\n"
          "(EngineCore pid=107) INFO 07-09 02:58:11 [kv_cache_utils.py:2146] GPU KV cache size: "
          "569,878 tokens\n"
          "(EngineCore pid=107) INFO 07-09 02:58:11 [kv_cache_utils.py:2147] Maximum concurrency "
          "for 131,072 tokens per request: 4.35x\n");
    assert_true(R.has_tokens && R.has_available && R.has_concurrency);
    assert_int_equal(R.kv_cache_tokens, 569878);
    assert_int_equal(R.concurrency_len, 131072);
    assert_true(R.available_kv_gib == 6.01);
    assert_true(R.max_concurrency == 4.35);
    assert_int_equal(R.st.failure.cls, SW_BOOT_NONE);
}

static void test_report_combined_line_and_alignment(void **state)
{
    parse("(Worker_DP0_EP0 pid=2) INFO 08-13 11:26:35 [interface.py:911] Setting attention block "
          "size to 1056 tokens to ensure that attention page size is >= mamba page size.\n"
          "(Worker_DP0_EP0 pid=2) INFO 08-13 11:26:35 [interface.py:935] Padding mamba page size "
          "by 0.19% to ensure that mamba page size and attention page size are exactly equal.\n"
          "WARNING Add 2 padding layers, may waste at most 20.00% KV cache memory\n"
          "(EngineCore_DP0 pid=1) INFO 08-13 11:29:38 [kv_cache_utils.py:1882] GPU KV cache "
          "size: 394,633 tokens, Maximum concurrency for 10,240 tokens per request: 38.54x\n");
    assert_int_equal(R.block_size, 1056);
    assert_true(R.mamba_padding_pct == 0.19);
    assert_int_equal(R.padding_layers, 2);
    assert_int_equal(R.kv_cache_tokens, 394633);
    assert_true(R.max_concurrency == 38.54);
}

static void test_report_v0(void **state)
{
    /* vllm-10517-a and vllm-code-qwen25-3b-t4 raw lines */
    parse("Loading model weights took 14.9888 GB\n"
          "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
          "peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB "
          "non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90\n"
          "GPU blocks: 1952, # CPU blocks: 2048\n"
          "Maximum concurrency for 20000 tokens per request: 1.56x\n");
    assert_int_equal(R.num_gpu_blocks, 1952);
    assert_true(R.available_kv_gib == 3.81);
    assert_true(R.weights_gib == 14.9888);
    assert_true(R.max_concurrency == 1.56);
    parse("INFO ... gpu_executor.py] # GPU blocks: 10533 ... Maximum concurrency ... 41.14x\n");
    assert_int_equal(R.num_gpu_blocks, 10533);
    assert_true(R.max_concurrency == 41.14);
}

/* Seed: 5 x 262144 booted, then the first long request: "Tried to allocate 50.00 MiB ...
 * 0 bytes free" killed Worker_TP1 at runtime. */
static void test_oom_runtime(void **state)
{
    parse("INFO:     Application startup complete.\n"
          "INFO:     127.0.0.1:40120 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
          "(Worker_TP1 pid=311) ERROR torch.OutOfMemoryError: HIP out of memory. Tried to "
          "allocate 50.00 MiB. GPU 1 has a total capacity of 31.86 GiB of which 0 bytes is free.\n"
          "(APIServer pid=1) ERROR EngineDeadError: EngineCore encountered an issue.\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_OOM);
    assert_int_equal(R.st.failure.phase, SW_PHASE_RUNTIME);
    assert_int_equal(R.tried_bytes, 50ull << 20);
    assert_int_equal(R.free_bytes, 0);
    assert_int_equal(R.st.failure.line, 3);
    assert_string_equal(R.kind, "hip_oom");
}

/* Seed night ladder: 262144 and 245760 OOM at CUDA graph capture ("Tried to allocate 76.00 MiB
 * ... 0 bytes free"). */
static void test_oom_graph_capture(void **state)
{
    parse("INFO [gpu_worker.py:440] Available KV cache memory: 9.18 GiB\n"
          "INFO [kv_cache_utils.py:1733] GPU KV cache size: 798,280 tokens\n"
          "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  40%|####      | 27/67\n"
          "RuntimeError: Worker failed with error 'HIP out of memory. Tried to allocate 76.00 MiB"
          " ... 0 bytes free'\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_OOM);
    assert_int_equal(R.st.failure.phase, SW_PHASE_GRAPH_CAPTURE);
    assert_int_equal(R.tried_bytes, 76ull << 20);
    assert_int_equal(R.free_bytes, 0);
    assert_int_equal(R.kv_cache_tokens, 798280);
}

/* Seed: "The 0.98 boot died at KV allocation: torch OOM tried 10.28 GiB ... with 9.46 GiB free
 * per rank". */
static void test_oom_kv_alloc(void **state)
{
    parse("INFO [gpu_worker.py:440] Available KV cache memory: 10.28 GiB\n"
          "ERROR   File \"vllm/v1/worker/gpu_model_runner.py\", in initialize_kv_cache\n"
          "ERROR torch.OutOfMemoryError: HIP out of memory. Tried to allocate 10.28 GiB. GPU 0 has"
          " a total capacity of 31.86 GiB of which 9.46 GiB is free.\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_OOM);
    assert_int_equal(R.st.failure.phase, SW_PHASE_KV_ALLOC);
    assert_true(R.tried_bytes > 11038000000ull && R.tried_bytes < 11039000000ull);
    assert_true(R.free_bytes > 10157000000ull && R.free_bytes < 10158000000ull);
}

/* Seed, verbatim and wrapped as quoted: SEQS 2 never compiles. */
static void test_compile_constraint(void **state)
{
    parse("INFO determine_available_memory -> profile_run -> _dummy_run\n"
          "RuntimeError: Worker failed with error 'Constraints violated\n"
          "(L['query_start_loc'].size()[0])! You marked it as dynamic but your code\n"
          "specialized it to be a constant (3)'\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_COMPILE_CONSTRAINT);
    assert_int_equal(R.st.failure.phase, SW_PHASE_PROFILE);
    assert_string_equal(R.dimension, "L['query_start_loc'].size()[0]");
    assert_int_equal(R.constant, 3);
    assert_int_equal(R.st.failure.line, 2);
}

/* vllm-13061 raw line (V0) and the v1 form of the same refusal. */
static void test_kv_too_small(void **state)
{
    parse("(VllmWorkerProcess pid=1786) INFO 02-11 07:40:45 model_runner.py:1115] Loading model "
          "weights took 13.9476 GB\n"
          "ValueError: The model's max seq len (131072) is larger than the maximum number of "
          "tokens that can be stored in KV cache (81536). Try increasing `gpu_memory_utilization` "
          "or decreasing `max_model_len` when initializing the engine.\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_KV_TOO_SMALL);
    assert_int_equal(R.max_model_len, 131072);
    assert_int_equal(R.suggested_max_len, 81536);
    parse("ERROR ValueError: To serve at least one request with the models's max seq len "
          "(262144), (10.70 GiB KV cache is needed, which is larger than the available KV cache "
          "memory (9.18 GiB). Based on the available memory, the estimated maximum model length "
          "is 225280. Try increasing `gpu_memory_utilization` or decreasing `max_model_len`\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_KV_TOO_SMALL);
    assert_int_equal(R.max_model_len, 262144);
    assert_int_equal(R.suggested_max_len, 225280);
    assert_true(R.needed_gib == 10.70);
    assert_true(R.available_gib == 9.18);
}

/* Seed: 51 restarts; transformers refused the host path before the engine built. */
static void test_bad_path(void **state)
{
    parse("(APIServer pid=1) INFO Resolved architecture: Qwen3NextForCausalLM\n"
          "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
          "'namespace/repo_name': '/home/dank/models/Qwen3.8-Flash-Next-FP8'. Use `repo_type` "
          "argument if needed.\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_BAD_PATH);
    assert_int_equal(R.st.failure.phase, SW_PHASE_LOAD);
    assert_int_equal(R.st.failure.line, 2);
    assert_non_null(strstr(R.st.failure.message, "Repo id must be in the form"));
}

/* Seed: a dead engine makes the API server exit 0 ("Deactivated successfully"). */
static void test_engine_dead_exit0(void **state)
{
    parse("INFO:     Application startup complete.\n"
          "(APIServer pid=1) ERROR [async_llm.py:480] EngineCore encountered a fatal error.\n"
          "(APIServer pid=1) INFO Shutting down FastAPI HTTP server.\n"
          "systemd[1]: frank-primary.service: Deactivated successfully.\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_ENGINE_DEAD_EXIT0);
    assert_int_equal(R.st.failure.line, 2);
}

static void test_bad_flag(void **state)
{
    parse("usage: vllm serve [model_tag] [options]\n"
          "vllm serve: error: unrecognized arguments: --expert-precise-memory\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_BAD_FLAG);
    assert_non_null(strstr(R.st.failure.message, "--expert-precise-memory"));
}

/* vllm-27508 raw lines: the budget line, then the engine failed with no message in the excerpt. */
static void test_unknown(void **state)
{
    parse("(EngineCore_DP0 pid=6880) INFO 10-31 15:07:49 [gpu_worker.py:298] Available KV cache "
          "memory: 1.71 GiB\n"
          "(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:50 [core.py:708] EngineCore failed to "
          "start.\n");
    assert_int_equal(R.st.failure.cls, SW_BOOT_UNKNOWN);
    assert_true(R.available_kv_gib == 1.71);
    assert_int_equal(R.st.failure.line, 2);
    json_t *j = sw_vllm_bootlog_json(&R);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "failure"), "class")),
                        "unknown");
    json_decref(j);
}

static void test_garbage(void **state)
{
    static const char junk[] = "\x00\xff GPU KV cache size: , Maximum concurrency for x tokens "
                               "per request: .x\nTried to allocate \nConstraints violated (";
    assert_int_equal(sw_vllm_bootlog_parse(junk, sizeof(junk) - 1, &R, NULL), 0);
    assert_false(R.has_tokens);
}

/* The table entry: found by name; its render is the one fleet-endpoint builder (argv without the
 * secret, env with it). */
static void test_adapter_render(void **state)
{
    static const char fleet[] =
        SWT_FLEET_ONE_GPU "  frank-primary:\n"
                          "    host: h\n"
                          "    devices: [g0]\n"
                          "    engine: vllm\n"
                          "    listen: 127.0.0.1:7770\n"
                          "    alias: frank-primary\n"
                          "    api_key: {from_env: SWT_VLLM_TABLE_KEY}\n"
                          "    payload: {path: /models/frank}\n"
                          "    shape: {max_model_len: 262144, seqs: 3, kv_cache_dtype: fp8}\n";
    const struct sw_engine *g = sw_engine_find("vLLM");
    assert_non_null(g);
    assert_string_equal(g->name, "vllm");
    struct sw_err e;
    struct sw_fleet *f = swt_fleet_text("t.yaml", fleet);
    setenv("SWT_VLLM_TABLE_KEY", "sk-secret", 1);
    struct sw_engine_cmd c;
    assert_int_equal(g->render(sw_fleet_endpoint(f, "frank-primary"), &c, &e), 0);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    for (size_t i = 0; i < c.argc; i++)
        sw_buf_printf(&b, "%s ", c.argv[i]);
    assert_non_null(strstr(sw_buf_cstr(&b), "serve /models/frank"));
    assert_non_null(strstr(sw_buf_cstr(&b), "--max-model-len 262144 --max-num-seqs 3"));
    assert_null(strstr(sw_buf_cstr(&b), "sk-secret"));
    bool found = false;
    for (size_t i = 0; i < c.envc; i++)
        found |= !strcmp(c.env[i], "VLLM_API_KEY=sk-secret");
    assert_true(found);
    sw_buf_free(&b);
    sw_engine_cmd_free(&c);
    /* SGLang's entry refuses the key: it reads it only from argv */
    assert_int_equal(
        sw_engine_find("sglang")->render(sw_fleet_endpoint(f, "frank-primary"), &c, &e),
        SW_EUNSUPPORTED);
    unsetenv("SWT_VLLM_TABLE_KEY");
    sw_fleet_free(f);
}

/* Predicted (the law's JSON) against printed (the 652 boot): every field within its print. */
static void test_adapter_diff(void **state)
{
    const struct sw_engine *g = sw_engine_find("vllm");
    const char *log = "INFO Available KV cache memory: 6.01 GiB\n"
                      "INFO GPU KV cache size: 569,878 tokens\n"
                      "INFO Maximum concurrency for 131,072 tokens per request: 4.35x\n";
    json_t *printed = NULL;
    struct sw_err e;
    assert_int_equal(g->bootlog(log, strlen(log), "652.log", NULL, &printed, NULL, &e), 0);
    json_t *pred =
        json_pack("{s:{s:I,s:f,s:I}}", "report", "kv_cache_tokens", (json_int_t)569878,
                  "max_concurrency", 4.3478, "available_kv_bytes", (json_int_t)6451000000);
    json_t *d = NULL;
    assert_int_equal(g->diff(pred, printed, NULL, &d, &e), 0);
    assert_true(json_is_true(json_object_get(d, "match")));
    json_decref(d);
    json_object_set_new(json_object_get(pred, "report"), "kv_cache_tokens", json_integer(569877));
    assert_int_equal(g->diff(pred, printed, NULL, &d, &e), 0);
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 1);
    json_decref(d);
    json_decref(pred);
    json_decref(printed);
}

static void test_adapter_error_shape(void **state)
{
    const struct sw_engine *g = sw_engine_find("vllm");
    const char *body = "{\"object\":\"error\",\"message\":\"This model's maximum context "
                       "length is 4096 tokens. However, you requested 5000 tokens (4000 in the "
                       "messages, 1000 in the completion).\",\"type\":\"BadRequestError\","
                       "\"param\":null,\"code\":400}";
    struct sw_engine_error er;
    assert_int_equal(g->error_shape(400, body, strlen(body), &er), 0);
    assert_int_equal(er.n_ctx, 4096);
    assert_int_equal(er.n_prompt_tokens, 5000);
    assert_string_equal(er.type, "BadRequestError");
    assert_int_equal(g->error_shape(500, "<html>", 6, &er), SW_EPARSE);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_hybrid_652),
        cmocka_unit_test(test_report_combined_line_and_alignment),
        cmocka_unit_test(test_report_v0),
        cmocka_unit_test(test_oom_runtime),
        cmocka_unit_test(test_oom_graph_capture),
        cmocka_unit_test(test_oom_kv_alloc),
        cmocka_unit_test(test_compile_constraint),
        cmocka_unit_test(test_kv_too_small),
        cmocka_unit_test(test_bad_path),
        cmocka_unit_test(test_engine_dead_exit0),
        cmocka_unit_test(test_bad_flag),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_adapter_render),
        cmocka_unit_test(test_adapter_diff),
        cmocka_unit_test(test_adapter_error_shape),
    };
    return cmocka_run_group_tests_name("vllm_bootlog", tests, NULL, NULL);
}
