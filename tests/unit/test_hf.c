/*
 * model/hf: config.json normalisation (text_config, layer patterns, GDN/mamba/MLA fields,
 * quantization), safetensors headers written here as real files, hostile headers, and the
 * shard-set completeness check of model.safetensors.index.json.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/hf.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Build a safetensors file in memory: header JSON padded with spaces, then `data_len` bytes. */
static char *st_make(const char *header, size_t data_len, size_t *size)
{
    size_t hl = strlen(header);
    size_t pad = (8 - hl % 8) % 8;
    size_t n = 8 + hl + pad + data_len;
    unsigned char *b = calloc(1, n);
    uint64_t H = hl + pad;
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(H >> (8 * i));
    memcpy(b + 8, header, hl);
    memset(b + 8 + hl, ' ', pad);
    *size = n;
    return (char *)b;
}

static void test_config_qwen3_next(void **state)
{
    const char *cfg = "{\"architectures\":[\"Qwen3NextForCausalLM\"],\"model_type\":\"qwen3_next\","
                      "\"num_hidden_layers\":48,\"hidden_size\":2048,\"num_attention_heads\":16,"
                      "\"num_key_value_heads\":2,\"head_dim\":256,\"full_attention_interval\":4,"
                      "\"linear_num_key_heads\":16,\"linear_num_value_heads\":32,"
                      "\"linear_key_head_dim\":128,\"linear_value_head_dim\":128,"
                      "\"linear_conv_kernel_dim\":4,\"torch_dtype\":\"bfloat16\","
                      "\"num_experts\":512,\"num_experts_per_tok\":10,\"mtp_num_hidden_layers\":1,"
                      "\"quantization_config\":{\"quant_method\":\"fp8\"}}";
    struct sw_hf_config c;
    struct sw_err e;
    assert_int_equal(sw_hf_config_parse(cfg, strlen(cfg), "q.json", &c, &e), 0);
    assert_string_equal(c.model_type, "qwen3_next");
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_FULL), 12);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_LINEAR), 36);
    assert_int_equal(c.layer_kind[3], SW_HF_LAYER_FULL);
    assert_int_equal(c.layer_kind[0], SW_HF_LAYER_LINEAR);
    assert_int_equal(c.linear_num_value_heads, 32);
    assert_int_equal(c.num_nextn_predict_layers, 1);
    assert_string_equal(c.quant_method, "fp8");
    assert_string_equal(c.torch_dtype, "bfloat16");
}

static void test_config_vlm_text_config(void **state)
{
    /* Qwen3.5-style VLM: text fields nested, dtype under the new "dtype" key, explicit layer
     * types, fp32 SSM state. */
    char cfg[4096];
    int n = snprintf(cfg, sizeof(cfg),
                     "{\"architectures\":[\"Qwen3_5ForConditionalGeneration\"],"
                     "\"model_type\":\"qwen3_5\",\"vision_config\":{\"depth\":27},"
                     "\"text_config\":{\"model_type\":\"qwen3_5_text\","
                     "\"num_hidden_layers\":8,\"num_attention_heads\":16,"
                     "\"num_key_value_heads\":4,\"head_dim\":256,"
                     "\"hidden_size\":2560,\"dtype\":\"bfloat16\","
                     "\"mamba_ssm_dtype\":\"float32\",\"layer_types\":[");
    for (int i = 0; i < 8; i++)
        n += snprintf(cfg + n, sizeof(cfg) - n, "%s\"%s\"", i ? "," : "",
                      (i % 4 == 3) ? "full_attention" : "linear_attention");
    snprintf(cfg + n, sizeof(cfg) - n, "]}}");
    struct sw_hf_config c;
    struct sw_err e;
    assert_int_equal(sw_hf_config_parse(cfg, strlen(cfg), "vlm.json", &c, &e), 0);
    assert_true(c.is_vlm);
    assert_string_equal(c.model_type, "qwen3_5_text");
    assert_string_equal(c.torch_dtype, "bfloat16");
    assert_string_equal(c.mamba_ssm_dtype, "float32");
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_FULL), 2);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_LINEAR), 6);
    assert_true(c.layer_types_given);
}

static void test_config_families(void **state)
{
    struct sw_hf_config c;
    struct sw_err e;
    /* gemma3: 5 sliding : 1 global. */
    const char *g = "{\"model_type\":\"gemma3_text\",\"num_hidden_layers\":12,"
                    "\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":256,"
                    "\"sliding_window\":1024,\"sliding_window_pattern\":6}";
    assert_int_equal(sw_hf_config_parse(g, strlen(g), "g", &c, &e), 0);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_SLIDING), 10);
    assert_int_equal(c.layer_kind[5], SW_HF_LAYER_FULL);
    /* qwen2 ships sliding_window but use_sliding_window false: all full. */
    const char *q2 = "{\"model_type\":\"qwen2\",\"num_hidden_layers\":4,\"hidden_size\":1024,"
                     "\"num_attention_heads\":8,\"num_key_value_heads\":2,"
                     "\"sliding_window\":32768,\"use_sliding_window\":false}";
    assert_int_equal(sw_hf_config_parse(q2, strlen(q2), "q2", &c, &e), 0);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_FULL), 4);
    assert_int_equal(c.head_dim, 128);
    /* DeepSeek MLA. */
    const char *ds = "{\"model_type\":\"deepseek_v2\",\"num_hidden_layers\":27,"
                     "\"num_attention_heads\":16,\"kv_lora_rank\":512,\"qk_rope_head_dim\":64,"
                     "\"qk_nope_head_dim\":128,\"v_head_dim\":128,\"q_lora_rank\":null,"
                     "\"hidden_size\":2048}";
    assert_int_equal(sw_hf_config_parse(ds, strlen(ds), "ds", &c, &e), 0);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_MLA), 27);
    assert_int_equal(c.kv_lora_rank, 512);
    /* nemotron_h pattern string. */
    const char *nh = "{\"model_type\":\"nemotron_h\",\"num_hidden_layers\":6,"
                     "\"num_attention_heads\":8,\"num_key_value_heads\":2,\"head_dim\":128,"
                     "\"hybrid_override_pattern\":\"M-M*-M\",\"mamba_num_heads\":64,"
                     "\"mamba_head_dim\":64,\"ssm_state_size\":128,\"n_groups\":8,"
                     "\"conv_kernel\":4}";
    assert_int_equal(sw_hf_config_parse(nh, strlen(nh), "nh", &c, &e), 0);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_MAMBA2), 3);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_FULL), 1);
    assert_int_equal(sw_hf_count_kind(&c, SW_HF_LAYER_NONE), 2);
    /* compressed-tensors fp8 KV scales. */
    const char *kv = "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,"
                     "\"num_attention_heads\":4,\"quantization_config\":{\"quant_method\":"
                     "\"compressed-tensors\",\"kv_cache_scheme\":{\"type\":\"float\","
                     "\"num_bits\":8}}}";
    assert_int_equal(sw_hf_config_parse(kv, strlen(kv), "kv", &c, &e), 0);
    assert_true(c.has_kv_scales);
    assert_string_equal(c.kv_cache_quant, "fp8");
}

static void test_config_hostile(void **state)
{
    struct sw_hf_config c;
    struct sw_err e;
    const char *bad[] = {
        "<html><body>403</body></html>",
        "[1,2,3]",
        "{\"num_hidden_layers\":\"48\",\"num_attention_heads\":2}",
        "{\"num_hidden_layers\":100000,\"num_attention_heads\":2}",
        "{\"num_hidden_layers\":4,\"num_attention_heads\":0}",
        "{\"num_hidden_layers\":4,\"num_attention_heads\":2,\"layer_types\":[\"full_attention\"]}",
        "{\"num_hidden_layers\":2,\"num_attention_heads\":2,\"layer_types\":[\"x\",\"y\"]}",
        "{\"num_hidden_layers\":2,\"num_attention_heads\":2,\"num_key_value_heads\":4}",
        "{\"num_hidden_layers\":2,\"num_attention_heads\":-3}",
        /* fuzz_hf_config's finding: a double far outside int64_t's range (UBSan) */
        "{\"head_dim\": 2e56}",
        "{\"num_hidden_layers\":2,\"num_attention_heads\":2,\"head_dim\":-1e300}",
        "{\"num_hidden_layers\":2,\"num_attention_heads\":2,\"head_dim\":64.5}",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++) {
        sw_err_clear(&e);
        assert_int_not_equal(sw_hf_config_parse(bad[i], strlen(bad[i]), "bad.json", &c, &e), 0);
        assert_true(e.msg[0] != '\0');
        assert_string_equal(e.where, "bad.json");
    }
    /* the error names the key and the value, the range it had to be in */
    const char *big = "{\"head_dim\": 2e56}";
    assert_int_equal(sw_hf_config_parse(big, strlen(big), "config.json", &c, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "head_dim is 2e+56, outside [0, "));
}

static void test_safetensors_roundtrip(void **state)
{
    char *dir = swt_tmpdir();
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                    "\"a.weight\":{\"dtype\":\"BF16\",\"shape\":[4,8],\"data_offsets\":[0,64]},"
                    "\"b.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[16],\"data_offsets\":[64,80]},"
                    "\"b.scale\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[80,84]}}";
    size_t n;
    char *buf = st_make(h, 84, &n);
    swt_write(swt_join(dir, "model.safetensors"), buf, n);
    struct sw_st_file f;
    struct sw_err e;
    assert_int_equal(sw_st_read(swt_join(dir, "model.safetensors"), &f, &e), 0);
    assert_int_equal(f.n_tensors, 3);
    assert_int_equal(f.data_len, 84);
    assert_int_equal(f.bytes_by_dtype[SW_ST_BF16], 64);
    assert_int_equal(f.bytes_by_dtype[SW_ST_F8_E4M3], 16);
    assert_int_equal(f.bytes_by_dtype[SW_ST_F32], 4);
    sw_st_file_free(&f);
    uint64_t wb;
    assert_int_equal(sw_hf_weight_bytes(dir, &wb, &e), 0);
    assert_int_equal(wb, 84);
    free(buf);
    swt_tmpdir_free(dir);
}

static void test_safetensors_hostile(void **state)
{
    struct sw_st_file f;
    struct sw_err e;
    size_t n;
    /* header length far past the file */
    unsigned char big[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, '{', '}'};
    assert_int_equal(sw_st_parse_buffer(big, sizeof(big), "big", &f, &e), SW_ETRUNC);
    assert_non_null(strstr(e.msg, "exceeds the file"));
    /* git-lfs pointer saved as the shard */
    const char *lfs = "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n";
    assert_int_not_equal(sw_st_parse_buffer(lfs, strlen(lfs), "lfs", &f, &e), 0);
    assert_non_null(strstr(e.msg, "git-lfs"));
    /* HTML saved as the shard, with a plausible small length */
    char html[64] = {20, 0, 0, 0, 0, 0, 0, 0};
    memcpy(html + 8, "<html>403 Forbidden</html>", 26);
    assert_int_equal(sw_st_parse_buffer(html, 34, "html", &f, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "HTML"));
    struct {
        const char *hdr;
        size_t data;
        const char *needle;
    } cases[] = {
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,6]}}", 6, "span"},
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 4, "past the data"},
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
         "\"u\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[4,12]}}",
         12, "overlaps"},
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[8,16]}}", 16, "hole"},
        {"{\"t\":{\"dtype\":\"Q9\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8, "unknown dtype"},
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4294967296,4294967296,4294967296],"
         "\"data_offsets\":[0,8]}}",
         8, "overflow"},
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[8,0]}}", 8, "begin <= end"},
        {"{\"t\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}", 20, "after the last"},
        {"{\"t\":[1,2]}", 0, "not an object"},
        {"{\"__metadata__\":{\"a\":1}}", 0, "__metadata__"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        char *b = st_make(cases[i].hdr, cases[i].data, &n);
        sw_err_clear(&e);
        int rc = sw_st_parse_buffer(b, n, "case", &f, &e);
        if (rc == 0 || !strstr(e.msg, cases[i].needle))
            fail_msg("case %zu: rc=%d msg=%s", i, rc, e.msg);
        assert_true(e.offset >= 0);
        free(b);
    }
}

static void write_shard(const char *dir, const char *name, const char *hdr, size_t data)
{
    size_t n;
    char *b = st_make(hdr, data, &n);
    swt_write(swt_join(dir, name), b, n);
    free(b);
}

static void test_index(void **state)
{
    char *dir = swt_tmpdir();
    write_shard(dir, "model-00001-of-00002.safetensors",
                "{\"a\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[0,16]}}", 16);
    write_shard(dir, "model-00002-of-00002.safetensors",
                "{\"b\":{\"dtype\":\"F8_E4M3\",\"shape\":[32],\"data_offsets\":[0,32]}}", 32);
    swt_write_str(swt_join(dir, "model.safetensors.index.json"),
                  "{\"metadata\":{\"total_size\":48},\"weight_map\":{"
                  "\"a\":\"model-00001-of-00002.safetensors\","
                  "\"b\":\"model-00002-of-00002.safetensors\"}}");
    struct sw_st_index ix;
    struct sw_err e;
    assert_int_equal(sw_st_index_load(dir, &ix, &e), 0);
    assert_true(ix.complete);
    assert_int_equal(ix.n_shards, 2);
    assert_int_equal(ix.weight_bytes, 48);
    assert_int_equal(ix.bytes_by_dtype[SW_ST_BF16], 16);
    assert_int_equal(ix.bytes_by_dtype[SW_ST_F8_E4M3], 32);
    sw_st_index_free(&ix);

    /* a truncated second shard (a download cut short) */
    size_t n;
    char *b =
        st_make("{\"b\":{\"dtype\":\"F8_E4M3\",\"shape\":[32],\"data_offsets\":[0,32]}}", 32, &n);
    swt_write(swt_join(dir, "model-00002-of-00002.safetensors"), b, n - 5);
    free(b);
    assert_int_equal(sw_st_index_load(dir, &ix, &e), 0);
    assert_false(ix.complete);
    assert_true(ix.shards[0].complete);
    assert_false(ix.shards[1].complete);
    assert_non_null(strstr(ix.shards[1].problem, "past the data"));
    sw_st_index_free(&ix);

    /* a shard that is missing, and a tensor mapped to a shard that lacks it */
    swt_write_str(swt_join(dir, "model.safetensors.index.json"),
                  "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                  "\"zz\":\"model-00001-of-00002.safetensors\","
                  "\"c\":\"model-00003-of-00003.safetensors\"}}");
    assert_int_equal(sw_st_index_load(dir, &ix, &e), 0);
    assert_false(ix.complete);
    assert_int_equal(ix.missing_tensors, 1);
    assert_false(ix.shards[1].present);
    assert_string_equal(ix.shards[1].problem, "missing");
    sw_st_index_free(&ix);

    /* a path escaping the directory is refused */
    swt_write_str(swt_join(dir, "model.safetensors.index.json"),
                  "{\"weight_map\":{\"a\":\"../../etc/passwd\"}}");
    assert_int_equal(sw_st_index_load(dir, &ix, &e), SW_EPARSE);
    swt_tmpdir_free(dir);
}

struct st_buf {
    const char *p;
    size_t n;
};

static int st_parse_once(void *arg)
{
    const struct st_buf *b = arg;
    struct sw_st_file f;
    int rc = sw_st_parse_buffer(b->p, b->n, "x", &f, NULL);
    if (rc == 0) {
        rc = f.n_tensors == 2 ? 0 : SW_EPARSE;
        sw_st_file_free(&f);
    }
    return rc;
}

/* A safetensors header parse with every allocation failing in turn: SW_ENOMEM each time. */
static void test_alloc_failures(void **state)
{
    const char *h = "{\"a\":{\"dtype\":\"BF16\",\"shape\":[4,8],\"data_offsets\":[0,64]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[64,68]}}";
    struct st_buf b;
    char *buf = st_make(h, 68, &b.n);
    b.p = buf;
    assert_true(swt_torture("safetensors header", st_parse_once, &b, SW_ENOMEM) > 1);
    free(buf);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_qwen3_next),
        cmocka_unit_test(test_config_vlm_text_config),
        cmocka_unit_test(test_config_families),
        cmocka_unit_test(test_config_hostile),
        cmocka_unit_test(test_safetensors_roundtrip),
        cmocka_unit_test(test_safetensors_hostile),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests_name("hf", tests, NULL, NULL);
}
