/*
 * model/arch: the normalized architecture of every family llama.cpp's memory code treats
 * differently, read from declarations (the same interpretation code as a GGUF), from GGUF bytes
 * built here, and hostile or incomplete inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/arch.h>
#include <slipway/gguf.h>

#include "swtest.h"
#include "test_gguf_build.h"

#include <stdio.h>
#include <string.h>

static struct sw_arch *decl_rc(const char *json, int want_rc, struct sw_err *e)
{
    struct sw_arch *a = NULL;
    json_t *j = sw_json_parse(json, strlen(json), "<test>", e);
    assert_non_null(j);
    int rc = sw_arch_from_json(j, "decl.json", &a, e);
    if (rc != want_rc)
        fprintf(stderr, "rc %d: %s\n", rc, e->msg);
    assert_int_equal(rc, want_rc);
    json_decref(j);
    return a;
}

static struct sw_arch *decl(const char *json)
{
    struct sw_err e;
    return decl_rc(json, 0, &e);
}

#define BASE "\"vocab_size\":1000,\"context_length\":4096,\"embedding_length\":1024,"

static void test_dense_and_moe(void **state)
{
    (void)state;
    struct sw_arch *a = decl("{\"arch\":\"llama\"," BASE "\"block_count\":4,"
                             "\"attention.head_count\":16,\"attention.head_count_kv\":4}");
    assert_string_equal(a->name, "llama");
    assert_int_equal(a->n_layer, 4);
    assert_int_equal(a->n_attn_layers, 4);
    assert_int_equal(a->layers[0].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[0].head_dim_k, 64); /* n_embd / n_head */
    assert_int_equal(a->layers[3].k_width, 256);
    assert_int_equal(a->layers[3].v_width, 256);
    assert_int_equal(a->n_vocab, 1000);
    sw_arch_free(a);

    /* qwen3: key_length overrides n_embd / n_head */
    a = decl("{\"arch\":\"qwen3\"," BASE "\"block_count\":2,\"attention.head_count\":16,"
             "\"attention.head_count_kv\":8,\"attention.key_length\":128,"
             "\"attention.value_length\":128}");
    assert_int_equal(a->layers[1].k_width, 1024);
    sw_arch_free(a);

    /* qwen2 and qwen3moe: per-layer arrays and experts */
    a = decl("{\"arch\":\"qwen2\"," BASE "\"block_count\":3,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":[2,4,8]}");
    assert_int_equal(a->layers[0].k_width, 256);
    assert_int_equal(a->layers[2].k_width, 1024);
    sw_arch_free(a);
    a = decl("{\"arch\":\"qwen3moe\"," BASE "\"block_count\":2,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":2,\"expert_count\":128,\"expert_used_count\":8,"
             "\"expert_feed_forward_length\":768}");
    assert_int_equal(a->moe.n_expert, 128);
    assert_int_equal(a->moe.n_expert_used, 8);
    assert_int_equal(a->moe.n_ff_exp, 768);
    sw_arch_free(a);
}

static void test_sliding_window(void **state)
{
    (void)state;
    /* gemma2: window defaults to 4096, period 2 (even layers local) */
    struct sw_arch *a = decl("{\"arch\":\"gemma2\"," BASE "\"block_count\":4,"
                             "\"attention.head_count\":8}");
    assert_int_equal(a->n_swa, 4096);
    assert_int_equal(a->layers[0].attn, SW_ATTN_SWA);
    assert_int_equal(a->layers[1].attn, SW_ATTN_FULL);
    assert_int_equal(a->n_swa_layers, 2);
    sw_arch_free(a);

    /* gemma3 without a window key: no SWA at all */
    a = decl("{\"arch\":\"gemma3\"," BASE "\"block_count\":6,\"attention.head_count\":8}");
    assert_int_equal(a->swa_kind, SW_ATTN_NONE);
    assert_int_equal(a->n_swa_layers, 0);
    sw_arch_free(a);
    /* with it: 5 local, then 1 global; an array pattern is ignored (scalar expected) */
    a = decl("{\"arch\":\"gemma3\"," BASE "\"block_count\":12,\"attention.head_count\":8,"
             "\"attention.sliding_window\":512,\"attention.sliding_window_pattern\":[1,0]}");
    assert_int_equal(a->n_swa_layers, 10);
    assert_int_equal(a->layers[5].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[11].attn, SW_ATTN_FULL);
    sw_arch_free(a);

    /* gpt-oss: window required, period 2 */
    struct sw_err e;
    a = decl_rc("{\"arch\":\"gpt-oss\"," BASE "\"block_count\":4,\"attention.head_count\":8}",
                SW_EPARSE, &e);
    assert_non_null(strstr(e.msg, "gpt-oss.attention.sliding_window"));
    a = decl("{\"arch\":\"gpt-oss\"," BASE "\"block_count\":4,\"attention.head_count\":64,"
             "\"attention.head_count_kv\":8,\"attention.key_length\":64,"
             "\"attention.value_length\":64,\"attention.sliding_window\":128}");
    assert_int_equal(a->n_swa, 128);
    assert_int_equal(a->n_swa_layers, 2);
    assert_int_equal(a->layers[0].attn, SW_ATTN_SWA);
    sw_arch_free(a);

    /* llama4: chunked 8192 unless the window is 0 */
    a = decl("{\"arch\":\"llama4\"," BASE "\"block_count\":4,\"attention.head_count\":8}");
    assert_int_equal(a->swa_kind, SW_ATTN_CHUNKED);
    assert_int_equal(a->n_swa, 8192);
    assert_int_equal(a->layers[3].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[0].attn, SW_ATTN_CHUNKED);
    sw_arch_free(a);

    /* gemma3n: layers from 20 on read layer 18 (SWA) or 19 (full) */
    a = decl("{\"arch\":\"gemma3n\"," BASE "\"block_count\":22,\"attention.head_count\":1,"
             "\"attention.sliding_window\":512}");
    assert_int_equal(a->n_attn_layers, 20);
    assert_false(a->layers[20].has_kv);
    assert_int_equal(a->layers[20].kv_source, 18);
    assert_int_equal(a->layers[21].kv_source, 18);
    sw_arch_free(a);
}

static void test_hybrids(void **state)
{
    (void)state;
    /* qwen35: every 4th layer is attention; GDN widths */
    struct sw_arch *a = decl("{\"arch\":\"qwen35\"," BASE "\"block_count\":8,"
                             "\"attention.head_count\":16,\"attention.head_count_kv\":4,"
                             "\"attention.key_length\":256,\"attention.value_length\":256,"
                             "\"ssm.conv_kernel\":4,\"ssm.inner_size\":4096,\"ssm.state_size\":128,"
                             "\"ssm.group_count\":16,\"ssm.time_step_rank\":32}");
    assert_int_equal(a->n_attn_layers, 2);
    assert_int_equal(a->n_recr_layers, 6);
    assert_int_equal(a->layers[3].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[0].recr, SW_RECR_GDN);
    assert_int_equal(a->ssm.n_embd_r, 3 * (4096 + 2 * 16 * 128));
    assert_int_equal(a->ssm.n_embd_s, 128 * 4096);
    assert_int_equal(a->ssm.linear_num_key_heads, 16);
    assert_int_equal(a->ssm.linear_num_value_heads, 32);
    assert_int_equal(a->ssm.linear_value_head_dim, 128);
    sw_arch_free(a);

    /* qwen3next / qwen35moe use the recurrent_layers array when present */
    a = decl("{\"arch\":\"qwen35moe\"," BASE "\"block_count\":4,\"attention.head_count\":16,"
             "\"attention.recurrent_layers\":[1,0,0,1],\"ssm.conv_kernel\":4,"
             "\"ssm.inner_size\":256,\"ssm.state_size\":128,\"ssm.group_count\":2,"
             "\"ssm.time_step_rank\":2}");
    assert_int_equal(a->layers[1].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[3].recr, SW_RECR_GDN);
    sw_arch_free(a);
    a = decl("{\"arch\":\"qwen3next\"," BASE "\"block_count\":48,\"attention.head_count\":16,"
             "\"attention.head_count_kv\":2,\"ssm.conv_kernel\":4,\"ssm.inner_size\":4096,"
             "\"ssm.state_size\":128,\"ssm.group_count\":16,\"ssm.time_step_rank\":32}");
    assert_int_equal(a->n_attn_layers, 12);
    sw_arch_free(a);

    /* jamba / granitehybrid: a recurrent layer is head_count_kv == 0 */
    a = decl("{\"arch\":\"jamba\"," BASE "\"block_count\":4,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":[0,0,8,0],\"ssm.conv_kernel\":4,"
             "\"ssm.inner_size\":2048,\"ssm.state_size\":16,\"ssm.time_step_rank\":64}");
    assert_int_equal(a->n_attn_layers, 1);
    assert_int_equal(a->layers[0].recr, SW_RECR_MAMBA);
    assert_int_equal(a->ssm.n_embd_r, 3 * 2048); /* jamba reads no group count */
    assert_int_equal(a->ssm.n_embd_s, 16 * 2048);
    sw_arch_free(a);
    a = decl("{\"arch\":\"granitehybrid\"," BASE "\"block_count\":4,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":[0,8,0,0],\"ssm.conv_kernel\":4,"
             "\"ssm.inner_size\":2048,\"ssm.state_size\":128,\"ssm.group_count\":1,"
             "\"ssm.time_step_rank\":64}");
    assert_int_equal(a->layers[1].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[0].recr, SW_RECR_MAMBA2);
    assert_int_equal(a->ssm.n_head, 64);
    assert_int_equal(a->ssm.head_dim, 32);
    sw_arch_free(a);

    /* nemotron_h: attention (no FFN), mamba2 (no FFN, no KV heads), or FFN-only */
    a = decl("{\"arch\":\"nemotron_h\"," BASE "\"block_count\":3,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":[8,0,0],\"feed_forward_length\":[0,0,4096],"
             "\"ssm.conv_kernel\":4,\"ssm.inner_size\":2048,\"ssm.state_size\":128,"
             "\"ssm.group_count\":8,\"ssm.time_step_rank\":64}");
    assert_int_equal(a->layers[0].attn, SW_ATTN_FULL);
    assert_int_equal(a->layers[1].recr, SW_RECR_MAMBA2);
    assert_int_equal(a->layers[2].attn, SW_ATTN_NONE);
    assert_int_equal(a->layers[2].recr, SW_RECR_NONE);
    sw_arch_free(a);

    /* falcon-h1: attention and mamba2 side by side in every layer */
    a = decl("{\"arch\":\"falcon-h1\"," BASE "\"block_count\":2,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":2,\"ssm.conv_kernel\":4,\"ssm.inner_size\":2048,"
             "\"ssm.state_size\":256,\"ssm.group_count\":1,\"ssm.time_step_rank\":32}");
    assert_int_equal(a->n_attn_layers, 2);
    assert_int_equal(a->n_recr_layers, 2);
    sw_arch_free(a);

    /* lfm2: short conv state = n_embd x (l_cache - 1) */
    a = decl("{\"arch\":\"lfm2\"," BASE "\"block_count\":3,\"attention.head_count\":8,"
             "\"attention.head_count_kv\":[0,8,0],\"shortconv.l_cache\":3}");
    assert_int_equal(a->layers[0].recr, SW_RECR_SHORTCONV);
    assert_int_equal(a->ssm.n_embd_r, 1024 * 2);
    assert_int_equal(a->ssm.n_embd_s, 0);
    sw_arch_free(a);

    /* mamba, mamba2, rwkv6: every layer recurrent, no attention */
    a = decl("{\"arch\":\"mamba\"," BASE "\"block_count\":2,\"ssm.conv_kernel\":4,"
             "\"ssm.inner_size\":2048,\"ssm.state_size\":16,\"ssm.time_step_rank\":64}");
    assert_int_equal(a->n_attn_layers, 0);
    assert_int_equal(a->n_recr_layers, 2);
    sw_arch_free(a);
    a = decl("{\"arch\":\"rwkv6\"," BASE "\"block_count\":2,\"attention.head_count\":16,"
             "\"wkv.head_size\":64}");
    assert_int_equal(a->layers[0].recr, SW_RECR_RWKV6);
    assert_int_equal(a->ssm.n_embd_r, 2 * 1024);
    assert_int_equal(a->ssm.n_embd_s, 1024 * 64);
    sw_arch_free(a);
    a = decl("{\"arch\":\"mamba2\"," BASE "\"block_count\":2,\"ssm.conv_kernel\":4,"
             "\"ssm.inner_size\":2048,\"ssm.state_size\":128,\"ssm.group_count\":1,"
             "\"ssm.time_step_rank\":32,\"wkv.head_size\":99,\"shortconv.l_cache\":5}");
    /* keys mamba2 does not read are ignored (test-llama-archs writes them all) */
    assert_int_equal(a->ssm.wkv_head_size, 0);
    assert_int_equal(a->ssm.n_embd_r, 3 * (2048 + 256));
    sw_arch_free(a);
}

static void test_mla(void **state)
{
    (void)state;
    struct sw_arch *a = decl("{\"arch\":\"deepseek2\"," BASE "\"block_count\":27,"
                             "\"attention.head_count\":16,\"attention.head_count_kv\":1,"
                             "\"attention.key_length\":576,\"attention.value_length\":512,"
                             "\"attention.key_length_mla\":192,\"attention.value_length_mla\":128,"
                             "\"attention.kv_lora_rank\":512}");
    assert_true(a->mla.on);
    assert_int_equal(a->mla.kv_lora_rank, 512);
    assert_int_equal(a->layers[0].k_width, 576);
    assert_int_equal(a->layers[0].v_width, 0);
    sw_arch_free(a);
    /* without the _mla keys llama.cpp stores per-head K and V */
    a = decl("{\"arch\":\"deepseek2\"," BASE "\"block_count\":27,\"attention.head_count\":16,"
             "\"attention.key_length\":192,\"attention.value_length\":128}");
    assert_false(a->mla.on);
    assert_int_equal(a->layers[0].k_width, 16 * 192);
    assert_int_equal(a->layers[0].v_width, 16 * 128);
    sw_arch_free(a);
}

static void test_errors_and_json(void **state)
{
    struct sw_err e;
    (void)state;
    assert_null(decl_rc("{\"arch\":\"llama\",\"context_length\":4096}", SW_EPARSE, &e));
    assert_non_null(strstr(e.msg, "llama.embedding_length"));
    assert_null(
        decl_rc("{\"arch\":\"nosucharch\"," BASE "\"block_count\":2}", SW_EUNSUPPORTED, &e));
    assert_non_null(strstr(e.msg, "nosucharch"));
    assert_null(decl_rc("{\"arch\":\"clip\"," BASE "\"block_count\":2}", SW_EUNSUPPORTED, &e));
    assert_null(decl_rc("{\"arch\":\"llama\"," BASE "\"block_count\":3,"
                        "\"attention.head_count\":[8,8]}",
                        SW_EPARSE, &e));
    assert_non_null(strstr(e.msg, "one per layer"));
    assert_null(decl_rc("{\"arch\":\"llama\"," BASE "\"block_count\":0}", SW_ERANGE, &e));
    assert_null(decl_rc("{\"arch\":\"llama\"," BASE "\"block_count\":2.5}", SW_ERANGE, &e));
    assert_null(decl_rc("{\"arch\":\"llama\"," BASE "\"block_count\":\"32\"}", SW_EPARSE, &e));
    assert_null(decl_rc("{\"arch\":\"llama\"," BASE "\"block_count\":4,"
                        "\"weights\":{\"total\":\"lots\"}}",
                        SW_EPARSE, &e));
    assert_null(decl_rc("[1,2]", SW_EPARSE, &e));

    /* prefixed keys, weights, JSON summary */
    struct sw_arch *a = decl("{\"arch\":\"qwen2\",\"qwen2.vocab_size\":7,"
                             "\"qwen2.context_length\":512,\"qwen2.embedding_length\":64,"
                             "\"qwen2.block_count\":2,\"qwen2.attention.head_count\":4,"
                             "\"name\":\"tiny\",\"weights\":{\"total\":\"1.5GiB\"}}");
    assert_string_equal(a->model_name, "tiny");
    assert_true(a->weights.known);
    assert_int_equal(a->weights.total, 1536ull * 1024 * 1024);
    json_t *j = sw_arch_to_json(a);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "n_layer")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "layers")), 1);
    json_decref(j);
    sw_arch_free(a);
}

/* A GGUF built byte by byte: llama with 2 layers, one 1 KiB tensor each plus embeddings. */
static void test_from_gguf(void **state)
{
    struct gb b = {0};
    struct sw_gguf *g = NULL;
    struct sw_arch *a = NULL;
    struct sw_err e;
    (void)state;
    gb_header(&b, 3, 4, 8);
    gb_kv_str(&b, "general.architecture", "llama");
    gb_kv_str(&b, "general.name", "tiny-llama");
    gb_kv_u32(&b, "llama.context_length", 2048);
    gb_kv_u32(&b, "llama.embedding_length", 256);
    gb_kv_u32(&b, "llama.block_count", 2);
    gb_kv_u32(&b, "llama.attention.head_count", 4);
    gb_kv_u32(&b, "llama.attention.head_count_kv", 2);
    gb_kv_u32(&b, "llama.vocab_size", 64);
    uint64_t ne_e[2] = {256, 64}, ne_q[2] = {256, 256}, ne_n[1] = {256};
    gb_tensor(&b, "token_embd.weight", 2, ne_e, 0, 0);           /* 65536 B */
    gb_tensor(&b, "blk.0.attn_q.weight", 2, ne_q, 1, 65536);     /* f16: 131072 B */
    gb_tensor(&b, "blk.1.attn_norm.weight", 1, ne_n, 0, 196608); /* 1024 B */
    gb_tensor(&b, "output.weight", 2, ne_e, 0, 197632);          /* 65536 B */
    gb_pad(&b, 32);
    gb_zeros(&b, 65536 + 131072 + 1024 + 65536);
    int rc = sw_gguf_parse_mem(b.p, b.n, "tiny.gguf", &g, &e);
    if (rc)
        fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(sw_arch_from_gguf(g, &a, &e), 0);
    assert_string_equal(a->name, "llama");
    assert_string_equal(a->model_name, "tiny-llama");
    assert_int_equal(a->n_vocab, 64);
    assert_int_equal(a->layers[0].k_width, 128);
    assert_true(a->weights.known);
    assert_int_equal(a->weights.embd, 65536);
    assert_int_equal(a->weights.output, 65536);
    assert_int_equal(a->weights.attn, 131072);
    assert_int_equal(a->weights.norm, 1024);
    assert_int_equal(a->weights.total, 65536 * 2 + 131072 + 1024);
    assert_int_equal(a->weights.mapped, 197632 + 65536);
    assert_int_equal(a->layers[0].weight_bytes, 131072);
    assert_int_equal(a->layers[1].weight_bytes, 1024);
    sw_arch_free(a);
    sw_gguf_free(g);
    gb_free(&b);
}

/* Declared arch -> struct -> JSON; every allocation failing in turn gives SW_ENOMEM. */
static int arch_round_trip(void *arg)
{
    struct sw_err e;
    struct sw_arch *a = NULL;
    int rc = sw_arch_from_json(arg, "<t>", &a, &e);
    if (rc == 0) {
        json_t *out = sw_arch_to_json(a);
        rc = out ? 0 : SW_ENOMEM;
        json_decref(out);
    }
    sw_arch_free(a);
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *s = "{\"arch\":\"qwen35\"," BASE "\"block_count\":8,\"attention.head_count\":16,"
                    "\"ssm.conv_kernel\":4,\"ssm.inner_size\":4096,\"ssm.state_size\":128,"
                    "\"ssm.group_count\":16,\"ssm.time_step_rank\":32}";
    json_t *j = json_loads(s, 0, NULL);
    assert_non_null(j);
    assert_true(swt_torture("arch from/to json", arch_round_trip, j, SW_ENOMEM) > 2);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_and_moe),   cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_hybrids),         cmocka_unit_test(test_mla),
        cmocka_unit_test(test_errors_and_json), cmocka_unit_test(test_from_gguf),
        cmocka_unit_test(test_alloc_failures),
    };
    sw_core_init();
    return cmocka_run_group_tests_name("arch", tests, NULL, NULL);
}
