/*
 * engine/vllm command line: flags verbatim (dashes, underscores, =value, short forms,
 * --speculative-config JSON with a draft directory), errors that name the flag, and a whole
 * `vllm serve DIR ...` planned from a config.json on disk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

#include "swtest.h"

#include <string.h>

static void test_parse_flags(void **state)
{
    char *argv[] = {"vllm",
                    "serve",
                    "/models/frank",
                    "-tp",
                    "2",
                    "--max_model_len=262144",
                    "--max-num-seqs",
                    "3",
                    "--kv-cache-dtype",
                    "fp8",
                    "--kv-cache-memory-bytes",
                    "6100000000",
                    "--max-num-batched-tokens",
                    "2k",
                    "--enable-prefix-caching",
                    "--mamba-cache-mode",
                    "align",
                    "--speculative-config",
                    "{\"method\":\"mtp\",\"num_speculative_tokens\":4}",
                    "--host",
                    "0.0.0.0",
                    "--trust-remote-code",
                    "--gpu-memory-utilization",
                    "0.98"};
    struct sw_vllm_opts o;
    sw_vllm_opts_init(&o);
    const char *dir;
    char ign[256];
    struct sw_err e;
    assert_int_equal(
        sw_vllm_parse_argv((int)SW_ARRAY_LEN(argv), argv, &o, &dir, ign, sizeof(ign), &e), 0);
    assert_string_equal(dir, "/models/frank");
    assert_int_equal(o.tp, 2);
    assert_int_equal(o.max_model_len, 262144);
    assert_int_equal(o.max_num_seqs, 3);
    assert_int_equal(o.max_num_batched_tokens, 2000);
    assert_string_equal(o.kv_cache_dtype, "fp8");
    assert_int_equal(o.kv_cache_memory_bytes, 6100000000ull);
    assert_int_equal(o.enable_prefix_caching, 1);
    assert_int_equal(o.mamba_cache_mode, SW_MAMBA_ALIGN);
    assert_string_equal(o.spec_method, "mtp");
    assert_int_equal(o.num_speculative_tokens, 4);
    assert_true(o.gpu_memory_utilization == 0.98);
    swt_has_all("ign", ign, "--host", "--trust-remote-code", NULL);
}

static void test_parse_errors(void **state)
{
    struct {
        char *argv[6];
        int n;
        const char *needle;
    } cases[] = {
        {{"vllm", "serve", "/m", "--max-model-len", "lots"}, 5, "--max-model-len"},
        {{"vllm", "serve", "/m", "--gpu-memory-utilization", "1.5"}, 5, "--gpu-memory-utilization"},
        {{"vllm", "serve", "/m", "--speculative-config", "{nope"}, 5, "--speculative-config"},
        {{"vllm", "serve", "/m", "-tp"}, 4, "needs a value"},
        {{"vllm", "serve", "/m", "--mamba-cache-mode", "some"}, 5, "--mamba-cache-mode"},
        {{"vllm", "serve", "--max-num-seqs", "3"}, 4, "no model"},
        {{"vllm", "serve", "/m", "--max-model-len", "-1"}, 5, "auto-fit"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        struct sw_vllm_opts o;
        sw_vllm_opts_init(&o);
        const char *dir;
        struct sw_err e;
        sw_err_clear(&e);
        int rc = sw_vllm_parse_argv(cases[i].n, cases[i].argv, &o, &dir, NULL, 0, &e);
        if (rc == 0 || !strstr(e.msg, cases[i].needle))
            fail_msg("case %zu: rc=%d msg=%s", i, rc, e.msg);
    }
}

/* A whole command against a model directory with config.json: the frank-primary fp8 3 x 262144
 * shape, with the fork's two profile terms supplied as facts. */
static void test_plan_argv(void **state)
{
    char *dir = swt_tmpdir();
    swt_write_str(swt_join(dir, "config.json"),
                  "{\"architectures\":[\"Qwen3NextForCausalLM\"]," SWT_QWEN3_NEXT_FIELDS "}");
    char *argv[] = {"vllm",      "serve",
                    (char *)dir, "--tensor-parallel-size",
                    "2",         "--max-model-len",
                    "262144",    "--kv-cache-dtype",
                    "fp8",       "--kv-cache-memory-bytes",
                    "6.1e9",     "--max-num-seqs",
                    "3"};
    struct sw_vllm_opts facts;
    sw_vllm_opts_init(&facts);
    facts.extra_attn_bytes_per_token = 64;
    facts.extra_mamba_blocks = 1;
    struct sw_vllm_report r;
    struct sw_err e;
    if (sw_vllm_plan_argv((int)SW_ARRAY_LEN(argv), argv, &facts, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(r.kv_cache_tokens, 792069);
    json_t *j = sw_vllm_report_json(&r);
    json_t *rep = json_object_get(j, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "kv_cache_tokens")), 792069);
    assert_true(json_real_value(json_object_get(rep, "max_concurrency")) == 3.02);
    assert_int_equal(json_integer_value(json_object_get(rep, "block_size")), 3136);
    json_t *lines = json_object_get(j, "lines");
    bool found = false;
    for (size_t i = 0; i < json_array_size(lines); i++)
        found |= !strcmp(json_string_value(json_array_get(lines, i)),
                         "GPU KV cache size: 792,069 tokens");
    assert_true(found);
    json_decref(j);

    /* a missing draft directory is named */
    char *argv2[] = {"vllm",
                     "serve",
                     (char *)dir,
                     "--max-model-len",
                     "4096",
                     "--speculative-config",
                     "{\"method\":\"eagle3\",\"model\":\"/nonexistent/draft\","
                     "\"num_speculative_tokens\":3}"};
    assert_int_not_equal(sw_vllm_plan_argv((int)SW_ARRAY_LEN(argv2), argv2, &facts, &r, &e), 0);
    assert_non_null(strstr(e.msg, "draft"));
    swt_tmpdir_free(dir);
}

/* The CLI's library entry: facts (read by the CLI) + profile + command -> JSON with the arena. */
static void test_plan_facts(void **state)
{
    char *dir = swt_tmpdir();
    swt_write_str(swt_join(dir, "config.json"), SWT_QWEN3_NEXT_CONFIG);
    char prof[4096];
    snprintf(prof, sizeof(prof), "%s",
             swt_src("tests/data/vllm/frank-expert-offload-calibrated.json"));
    struct sw_engine_plan_facts facts;
    memset(&facts, 0, sizeof(facts));
    assert_int_equal(sw_vllm_version_parse("0.24.0", &facts.version), 0);
    facts.profile_path = prof;
    char *cmdv[] = {"vllm",       "serve",
                    dir,          "-tp",
                    "2",          "--max-model-len",
                    "200704",     "--kv-cache-dtype",
                    "fp8",        "--kv-cache-memory-bytes",
                    "3146000000", "--max-num-batched-tokens",
                    "1024"};
    json_t *out = NULL;
    struct sw_err e;
    if (sw_engine_plan_argv("vllm", &facts, (int)SW_ARRAY_LEN(cmdv), cmdv, &out, &e))
        fail_msg("%s", e.msg);
    json_t *rep = json_object_get(out, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "kv_cache_tokens")), 398658);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "arena"), "slots")),
                     6496);
    json_decref(out);
    /* no facts: the plain law (no arena) */
    assert_int_equal(sw_engine_plan_argv("vllm", NULL, (int)SW_ARRAY_LEN(cmdv), cmdv, &out, &e), 0);
    assert_null(json_object_get(out, "arena"));
    json_decref(out);
    /* a profile that is not there is named */
    facts.profile_path = "/nonexistent/profile.json";
    assert_int_not_equal(
        sw_engine_plan_argv("vllm", &facts, (int)SW_ARRAY_LEN(cmdv), cmdv, &out, &e), 0);
    assert_int_equal(e.code, SW_ENOENT);
    assert_string_equal(e.where, "/nonexistent/profile.json");
    assert_null(out);
    assert_int_not_equal(sw_engine_plan_argv("tgi", NULL, 0, NULL, &out, &e), 0);
    swt_tmpdir_free(dir);
}

/* The fixture model directories (tests/data/vllm/models) give the same figures as the law tests. */
static void test_fixture_dirs(void **state)
{
    char d1[4096], d2[4096];
    snprintf(d1, sizeof(d1), "%s", swt_src("tests/data/vllm/models/qwen3.6-35b-a3b"));
    snprintf(d2, sizeof(d2), "%s", swt_src("tests/data/vllm/models/deepseek-v2-lite"));
    char *a1[] = {"vllm",
                  "serve",
                  d1,
                  "--kv-cache-dtype",
                  "fp8",
                  "--max-model-len",
                  "131072",
                  "--enable-prefix-caching",
                  "--kv-cache-memory-bytes",
                  "6446000000"};
    struct sw_vllm_report r;
    struct sw_err e;
    if (sw_vllm_plan_argv((int)SW_ARRAY_LEN(a1), a1, NULL, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(r.kv_cache_tokens, 569878);
    struct sw_vllm_opts f;
    sw_vllm_opts_init(&f);
    f.version = SW_VLLM_V1_LEGACY;
    f.stage_kv_bytes[1] = (uint64_t)(11.33 * (double)SW_GIB);
    char *a2[] = {"vllm",       "serve",
                  d2,           "-tp",
                  "2",          "-pp",
                  "2",          "--max-model-len",
                  "1024",       "--kv-cache-memory-bytes",
                  "13028069376"};
    if (sw_vllm_plan_argv((int)SW_ARRAY_LEN(a2), a2, &f, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(r.kv_cache_tokens, 807792);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_flags),  cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_plan_argv),    cmocka_unit_test(test_plan_facts),
        cmocka_unit_test(test_fixture_dirs),
    };
    return cmocka_run_group_tests_name("vllm_argv", tests, NULL, NULL);
}
