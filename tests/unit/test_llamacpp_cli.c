/*
 * `slipway plan --engine llama.cpp` through the binary: JSON shape, human view, exit codes
 * (0 planned, 1 does not fit a declared device, 2 unusable input naming the flag).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <stdio.h>
#include <string.h>

static char *dir;
static const char *decl_path;

static int setup(void **state)
{
    (void)state;
    dir = swt_tmpdir();
    decl_path = strdup(swt_join(dir, "qwen35.json"));
    swt_write_str(decl_path,
                  "{\"arch\":\"qwen35\",\"name\":\"Qwen3.5-9B\",\"vocab_size\":248320,"
                  "\"context_length\":262144,\"embedding_length\":4096,\"block_count\":32,"
                  "\"feed_forward_length\":12288,\"attention.head_count\":16,"
                  "\"attention.head_count_kv\":4,\"attention.key_length\":256,"
                  "\"attention.value_length\":256,\"ssm.conv_kernel\":4,\"ssm.inner_size\":4096,"
                  "\"ssm.state_size\":128,\"ssm.group_count\":16,\"ssm.time_step_rank\":32,"
                  "\"weights\":{\"total\":\"5GiB\"}}");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free((void *)decl_path);
    swt_tmpdir_free(dir);
    return 0;
}

static void test_json(void **state)
{
    struct swt_run r;
    (void)state;
    assert_int_equal(swt_slipway(&r, "plan", "--engine", "llama.cpp", "--json", "--arch", decl_path,
                                 "--", "llama-server", "-m", "q.gguf", "-c", "135168", NULL),
                     0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *rep = json_object_get(j, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx")), 135168);
    assert_int_equal(json_integer_value(json_object_get(rep, "n_seq_max")), 4);
    json_t *kv = json_array_get(json_object_get(rep, "kv_caches"), 0);
    /* the bootlog point llamacpp-code-qwen35-32L-4seq: 2112.00 MiB of K */
    assert_int_equal(json_integer_value(json_object_get(kv, "k_bytes")), 2112ll * 1048576);
    json_t *rec = json_object_get(rep, "recurrent");
    assert_int_equal(json_integer_value(json_object_get(rec, "s_bytes")), 192ll * 1048576);
    assert_non_null(json_object_get(json_object_get(j, "budget"), "devices"));
    assert_true(json_is_array(json_object_get(j, "warnings")));
    json_decref(j);
    swt_run_free(&r);
}

static void test_human_and_fit(void **state)
{
    struct swt_run r;
    (void)state;
    assert_int_equal(swt_slipway(&r, "plan", "--engine", "llama.cpp", "--arch", decl_path, "--gpu",
                                 "CUDA0=24GiB", "--", "llama-server", "-m", "q.gguf", "-c",
                                 "131072", "-np", "1", NULL),
                     0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "llama_kv_cache: size = 4096.00 MiB (131072 cells,   8 layers,  "
                                  "1/1 seqs), K (f16): 2048.00 MiB, V (f16): 2048.00 MiB"));
    assert_non_null(strstr(r.out, "CUDA0"));
    swt_run_free(&r);
    /* 8 GiB does not hold 5 GiB of weights and 8 GiB of KV: exit 1 */
    assert_int_equal(swt_slipway(&r, "plan", "--engine", "llama.cpp", "--arch", decl_path, "--gpu",
                                 "CUDA0=8GiB", "--", "llama-server", "-m", "q.gguf", "-c", "262144",
                                 "-np", "1", NULL),
                     0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "DOES NOT FIT"));
    swt_run_free(&r);
}

static void test_bad_input(void **state)
{
    struct swt_run r;
    (void)state;
    assert_int_equal(swt_slipway(&r, "plan", "--engine", "llama.cpp", "--arch", decl_path, "--",
                                 "llama-server", "-m", "q.gguf", "-c", "lots", NULL),
                     0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "-c"));
    swt_run_free(&r);
    swt_slipway_exits(2, "plan", "--engine", "vllm", "--", "x", NULL);
    swt_slipway_exits(2, "plan", "--engine", "llama.cpp", "--", "llama-server", "-m",
                      swt_join(dir, "missing.gguf"), NULL);
}

/* `slipway plan FLEET ENDPOINT --json`: that endpoint's report (exit 0 required). */
static json_t *plan_report(const char *fleet, const char *endpoint)
{
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "plan", "--fleet", fleet, endpoint, "--json", NULL), 0);
    if (r.status != 0)
        fprintf(stderr, "%s%s", r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *rep = json_object_get(json_array_get(json_object_get(j, "endpoints"), 0), "report");
    assert_non_null(rep);
    json_incref(rep);
    json_decref(j);
    swt_run_free(&r);
    return rep;
}

/* K + V bytes over every KV cache of a report. */
static long long kv_total(const json_t *rep)
{
    long long t = 0;
    size_t i;
    const json_t *kv;
    json_array_foreach(json_object_get(rep, "kv_caches"), i, kv) t +=
        json_integer_value(json_object_get(kv, "k_bytes")) +
        json_integer_value(json_object_get(kv, "v_bytes"));
    return t;
}

/* A fleet whose payload is not here: the endpoint declares its architecture with llama.cpp's
 * keys, or config.json-like (model/hf + sw_arch_from_hf): both plan to the same report; a
 * config.json-like declaration without model_type is refused, naming it. */
static void test_fleet(void **state)
{
    struct swt_run r;
    const char *fleet = swt_join(dir, "fleet.yaml");
    (void)state;
    swt_write_str(
        fleet, "version: 1\n"
               "hosts:\n"
               "  box:\n"
               "    transport: local\n"
               "    devices:\n"
               "      gpu0: {kind: test, vendor: nvidia, memory_total: 24576MiB}\n"
               "endpoints:\n"
               "  small:\n"
               "    host: box\n"
               "    devices: [gpu0]\n"
               "    engine: llama.cpp\n"
               "    payload: {path: /nonexistent/qwen35-9b.gguf}\n"
               "    shape: {ctx_size: 540672, seqs: 3, cache_type_k: f16, cache_type_v: q8_0}\n"
               "    arch: {arch: qwen35, vocab_size: 248320, context_length: 262144,\n"
               "           embedding_length: 4096, block_count: 32,\n"
               "           attention.head_count: 16, attention.head_count_kv: 4,\n"
               "           attention.key_length: 256, attention.value_length: 256,\n"
               "           ssm.conv_kernel: 4, ssm.inner_size: 4096, ssm.state_size: 128,\n"
               "           ssm.group_count: 16, ssm.time_step_rank: 32}\n"
               "  hf:\n"
               "    host: box\n"
               "    devices: [gpu0]\n"
               "    engine: llama.cpp\n"
               "    payload: {path: /nonexistent/other.gguf}\n"
               "    arch: {num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32}\n"
               "  hfq:\n"
               "    host: box\n"
               "    devices: [gpu0]\n"
               "    engine: llama.cpp\n"
               "    payload: {path: /nonexistent/qwen35-9b.gguf}\n"
               "    shape: &s {ctx_size: 540672, seqs: 3, cache_type_k: f16, cache_type_v: q8_0}\n"
               "    arch: &hf {model_type: qwen3_5, num_hidden_layers: 32,\n"
               "           full_attention_interval: 4, num_attention_heads: 16,\n"
               "           num_key_value_heads: 4, head_dim: 256, hidden_size: 4096,\n"
               "           linear_num_key_heads: 16, linear_num_value_heads: 32,\n"
               "           linear_key_head_dim: 128, linear_value_head_dim: 128,\n"
               "           linear_conv_kernel_dim: 4, vocab_size: 248320,\n"
               "           max_position_embeddings: 262144}\n"
               "  hfcut:\n"
               "    host: box\n"
               "    devices: [gpu0]\n"
               "    engine: llama.cpp\n"
               "    payload: {path: /nonexistent/qwen35-9b.gguf}\n"
               "    shape: {ctx_size: 491520, seqs: 3, cache_type_k: f16, cache_type_v: q8_0}\n"
               "    arch: *hf\n");
    assert_int_equal(swt_slipway(&r, "plan", "--fleet", fleet, "small", "--json", NULL), 0);
    if (r.status != 0)
        fprintf(stderr, "%s%s", r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *ep = json_array_get(json_object_get(j, "endpoints"), 0);
    assert_string_equal(json_string_value(json_object_get(ep, "endpoint")), "small");
    json_t *rep = json_object_get(ep, "report");
    /* frank-small's deployed shape: 3 x 180224, K f16 + V q8_0 over 8 attention layers */
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx_seq")), 180224);
    json_t *kv = json_array_get(json_object_get(rep, "kv_caches"), 0);
    assert_int_equal(json_integer_value(json_object_get(kv, "k_bytes")), 540672ll * 8 * 1024 * 2);
    assert_int_equal(json_integer_value(json_object_get(kv, "v_bytes")),
                     540672ll * 8 * 1024 / 32 * 34);
    json_decref(j);
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "plan", "--fleet", fleet, "hf", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.out, "needs model_type"));
    swt_run_free(&r);

    /* config.json form: the same boot lines as the llama.cpp-key declaration */
    json_t *small = plan_report(fleet, "small"), *hfq = plan_report(fleet, "hfq");
    json_t *cut = plan_report(fleet, "hfcut");
    assert_true(json_equal(json_object_get(small, "kv_caches"), json_object_get(hfq, "kv_caches")));
    assert_true(json_equal(json_object_get(small, "recurrent"), json_object_get(hfq, "recurrent")));
    assert_true(json_is_object(json_object_get(hfq, "recurrent")));
    assert_int_equal(json_integer_value(json_object_get(hfq, "n_ctx_seq")), 180224);
    /* the operator's measurement: cutting the pool by 49,152 tokens freed 1,176 MiB */
    assert_int_equal(kv_total(hfq) - kv_total(cut), 1176ll << 20);
    json_decref(small);
    json_decref(hfq);
    json_decref(cut);
}

/* examples/operator.yaml: frank-small's architecture is declared config.json-like; its plan on
 * the card is the deployed 3 x 180,224 pool at K f16 + V q8_0 over 8 attention layers (about 13
 * GiB) plus the 24 gated-delta-net layers' state. */
static void test_operator_frank_small(void **state)
{
    struct swt_run r;
    (void)state;
    json_t *rep = plan_report(swt_src("examples/operator.yaml"), "frank-small");
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx")), 540672);
    assert_int_equal(json_integer_value(json_object_get(rep, "n_seq_max")), 3);
    assert_int_equal(json_integer_value(json_object_get(rep, "n_ctx_seq")), 180224);
    assert_int_equal(json_array_size(json_object_get(rep, "kv_caches")), 1);
    assert_int_equal(kv_total(rep), 540672ll * 25088);
    json_t *rs = json_object_get(rep, "recurrent");
    assert_int_equal(json_integer_value(json_object_get(rs, "layers")), 32);
    assert_int_equal(json_integer_value(json_object_get(rs, "cells")), 3);
    json_decref(rep);
    /* the human view names the device budget */
    assert_int_equal(
        swt_slipway(&r, "plan", "--fleet", swt_src("examples/operator.yaml"), "frank-small", NULL),
        0);
    assert_int_equal(r.status, 0);
    swt_has_all("stdout", r.out, "cuda-24g", "12936.00 MiB (180224 cells,   8 layers,  3/3 seqs)",
                NULL);
    /* no weights in a declared architecture: no free figure from the law alone, but the
     * operator's measured non-KV (with the projector) gives the device's budget and band */
    swt_has_all("stdout", r.out, "? (weights)", "2630.25 MiB free, inside the 2048..3072 MiB band",
                NULL);
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "plan", "--fleet", swt_src("examples/operator.yaml"),
                                 "frank-small", "--json", NULL),
                     0);
    json_t *j = swt_json_out(&r);
    json_t *mb =
        json_object_get(json_array_get(json_object_get(j, "endpoints"), 0), "measured_budget");
    assert_string_equal(json_string_value(json_object_get(mb, "fact")),
                        "non_kv_cost_with_projector");
    assert_int_equal(json_integer_value(json_object_get(mb, "non_kv_bytes")), 8859ll << 20);
    /* 24,576 - (12,936 + 150.75 + 8,859) MiB */
    assert_int_equal(json_integer_value(json_object_get(mb, "free_bytes")),
                     (long long)(2630.25 * 1048576.0));
    assert_true(json_is_true(json_object_get(mb, "in_band")));
    json_decref(j);
    swt_run_free(&r);

    /* the fleet's vLLM endpoints are planned too: frank-primary's deployed shape prints what
     * the engine printed (398,658 tokens, 1.99x, 6,496 arena slots) */
    assert_int_equal(swt_slipway(&r, "plan", "--fleet", swt_src("examples/operator.yaml"), NULL),
                     0);
    swt_out_has(&r, 0, "== frank-primary (vllm", "GPU KV cache size: 398,658 tokens",
                "Maximum concurrency for 200,704 tokens per request: 1.99x",
                "14.87 GiB / 6496 slots", "== frank-large (vllm", "pool sized at boot", NULL);
}

/* `slipway plan examples/operator.yaml` covers every endpoint of the operator's fleet: frank-large
 * on the ROCmFPX fork (its tensor type declared by the profile, one slot of 262,144 at f16 = 64 KiB
 * a token = 16 GiB) and the retired SGLang shape (its pinned 606,208-token pool) included; none
 * fails to plan, and the disabled one is marked and does not move the exit. */
static void test_operator_every_endpoint(void **state)
{
    (void)state;
    struct swt_run r;
    const char *names[] = {"frank-primary", "frank-small", "frank-large", "frank-large-rocmfpx",
                           "frank-primary-sglang"};
    const size_t n = sizeof(names) / sizeof(names[0]);

    assert_int_equal(swt_slipway(&r, "plan", "--fleet", swt_src("examples/operator.yaml"), NULL),
                     0);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "cannot plan"));
    size_t sections = 0;
    for (const char *q = r.out; (q = strstr(q, "== ")); q++)
        sections++;
    assert_int_equal(sections, n);
    assert_non_null(strstr(r.out, "== frank-large-rocmfpx (llama.cpp)\n"));
    assert_non_null(strstr(r.out, "llama_kv_cache: size = 16384.00 MiB (262144 cells,  16 layers,  "
                                  "1/1 seqs), K (f16): 8192.00 MiB, V (f16): 8192.00 MiB"));
    assert_non_null(
        strstr(r.out, "== frank-primary-sglang (sglang, disabled: kept for the record"));
    assert_non_null(strstr(r.out, "KV Cache is allocated. #tokens: 606208"));
    swt_run_free(&r);

    assert_int_equal(
        swt_slipway(&r, "plan", "--fleet", swt_src("examples/operator.yaml"), "--json", NULL), 0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *eps = json_object_get(j, "endpoints");
    assert_int_equal(json_array_size(eps), n);
    for (size_t i = 0; i < n; i++) {
        json_t *ep = json_array_get(eps, i);
        assert_string_equal(json_string_value(json_object_get(ep, "endpoint")), names[i]);
        assert_null(json_object_get(ep, "error"));
        assert_non_null(json_object_get(ep, "report"));
        /* only the retired one says so */
        assert_true(json_is_false(json_object_get(ep, "enabled")) == (i == n - 1));
    }
    json_decref(j);
    swt_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_human_and_fit),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_fleet),
        cmocka_unit_test(test_operator_frank_small),
        cmocka_unit_test(test_operator_every_endpoint),
    };
    sw_core_init();
    return cmocka_run_group_tests_name("llamacpp_cli", tests, setup, teardown);
}
