/*
 * `slipway plan --engine vllm|sglang`: the binary, end to end, on the fixture model directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <string.h>

static void test_plan_vllm_json(void **state)
{
    char dir[4096], prof[4096];
    snprintf(dir, sizeof(dir), "%s", swt_src("tests/data/vllm/models/frank-primary-inferred"));
    snprintf(prof, sizeof(prof), "%s",
             swt_src("tests/data/vllm/frank-expert-offload-calibrated.json"));
    struct swt_run r;
    swt_slipway(&r, "plan", "--engine", "vllm", "--json", "--profile", prof, "--", "vllm", "serve",
                dir, "-tp", "2", "--max-model-len", "262144", "--kv-cache-dtype", "fp8",
                "--kv-cache-memory-bytes", "6100000000", "--max-num-seqs", "3",
                "--max-num-batched-tokens", "2048", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *rep = json_object_get(j, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "kv_cache_tokens")), 792069);
    assert_true(json_real_value(json_object_get(rep, "max_concurrency")) == 3.02);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "arena"), "slots")),
                     6248);
    json_decref(j);
    swt_run_free(&r);
}

static void test_plan_sglang_and_errors(void **state)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", swt_src("tests/data/vllm/models/frank-primary-inferred"));
    struct swt_run r;
    swt_slipway(&r, "plan", "--engine", "sglang", "--", "python", "-m", "sglang.launch_server",
                "--model-path", dir, "--tp", "2", "--kv-cache-dtype", "fp8_e4m3",
                "--max-total-tokens", "606208", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "KV Cache is allocated. #tokens: 606208"));
    swt_run_free(&r);
    swt_slipway(&r, "plan", "--engine", "vllm", "--", "vllm", "serve", dir, "--max-model-len",
                "lots", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--max-model-len"));
    swt_run_free(&r);
    swt_slipway_exits(2, "plan", "--engine", "vllm", "--", "vllm", "serve", "/nonexistent/model",
                      NULL);
    /* a bad value of slipway's own fact options is a usage error naming the option (the CLI
     * reads them; the library takes struct sw_engine_plan_facts), as JSON under --json */
    swt_slipway(&r, "plan", "--engine", "vllm", "--weights=lots", "--", "vllm", "serve", dir, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--weights: \"lots\" is not a byte count"));
    assert_int_equal(strcspn(r.err, "\n") + 1, strlen(r.err)); /* one line */
    swt_run_free(&r);
    swt_slipway(&r, "plan", "--engine", "vllm", "--version", "9.x", "--json", "--", "vllm", "serve",
                dir, NULL);
    assert_int_equal(r.status, 2);
    json_t *j = swt_json_out(&r);
    assert_non_null(
        strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
               "--version: \"9.x\""));
    json_decref(j);
    swt_run_free(&r);
    swt_slipway(&r, "plan", "--engine", "sglang", "--pre-load-free", "1.5.5", "--", "python", "-m",
                "sglang.launch_server", "--model-path", dir, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--pre-load-free"));
    swt_run_free(&r);
}

/* `slipway bootlog parse --engine vllm|sglang LOG`: the human view shows the engine's own figures
 * (KV tokens, concurrency, pools, the failure's sizes), not llama.cpp's n_ctx/kv/model lines. */
static void test_bootlog_human_engine_aware(void **state)
{
    char *dir = swt_tmpdir();
    char vlog[4200], olog[4200], slog[4200];
    snprintf(vlog, sizeof(vlog), "%s", swt_join(dir, "vllm.log"));
    snprintf(olog, sizeof(olog), "%s", swt_join(dir, "vllm-oom.log"));
    snprintf(slog, sizeof(slog), "%s", swt_join(dir, "sglang.log"));
    swt_write_str(vlog, "(EngineCore pid=107) INFO 07-09 02:58:11 [gpu_worker.py:508] Available KV "
                        "cache memory: 6.01 GiB\n"
                        "(EngineCore pid=107) INFO 07-09 02:58:11 [kv_cache_utils.py:2146] GPU KV "
                        "cache size: 569,878 tokens\n"
                        "(EngineCore pid=107) INFO 07-09 02:58:11 [kv_cache_utils.py:2147] Maximum "
                        "concurrency for 131,072 tokens per request: 4.35x\n"
                        "INFO:     Application startup complete.\n");
    swt_write_str(olog,
                  "INFO [gpu_worker.py:440] Available KV cache memory: 10.28 GiB\n"
                  "ERROR torch.OutOfMemoryError: HIP out of memory. Tried to allocate 10.28 "
                  "GiB. GPU 0 has a total capacity of 31.86 GiB of which 9.46 GiB is free.\n");
    swt_write_str(slog, "[2026-09-30 10:00:01] max_total_num_tokens=606208, chunked_prefill_size="
                        "2048, max_prefill_tokens=16384, max_running_requests=4, "
                        "context_len=262144\n"
                        "[2026-09-30 10:00:02] The server is fired up and ready to roll!\n");
    struct swt_run r;
    swt_slipway(&r, "bootlog", "parse", "--engine", "vllm", vlog, NULL);
    assert_int_equal(r.status, 0);
    swt_has_all("stdout", r.out, "vllm boot log", "kv_cache_tokens        569878",
                "max_concurrency        4.35", "max_model_len          131072", NULL);
    assert_null(strstr(r.out, "n_ctx"));
    assert_null(strstr(r.out, "compute"));
    swt_run_free(&r);

    swt_slipway(&r, "bootlog", "parse", "--engine", "vllm", olog, NULL);
    assert_int_equal(r.status, 1);
    swt_has_all("stdout", r.out, "FAILED: oom (phase kv_alloc)",
                "line 2: ERROR torch.OutOfMemoryError", "tried_bytes", NULL);
    assert_null(strstr(r.out, "n_seq_max"));
    swt_run_free(&r);

    swt_slipway(&r, "bootlog", "parse", "--engine", "sglang", slog, NULL);
    assert_int_equal(r.status, 0);
    swt_has_all("stdout", r.out, "sglang boot log", "max_running_requests   4", NULL);
    assert_null(strstr(r.out, "kv_unified"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_vllm_json),
        cmocka_unit_test(test_plan_sglang_and_errors),
        cmocka_unit_test(test_bootlog_human_engine_aware),
    };
    return cmocka_run_group_tests_name("vllm_cli", tests, NULL, NULL);
}
