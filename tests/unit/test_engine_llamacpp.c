/*
 * engine/llamacpp: the adapter table, argv/env rendering (every knob explicit, the verbosity that
 * prints the memory lines, secrets only in the environment), shell quoting for people, and the
 * HTTP error shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/engine.h>
#include <slipway/fleet.h>

#include "swtest.h"

#include <stdlib.h>
#include <string.h>

static const char *argv_after(const struct sw_engine_cmd *c, const char *flag)
{
    for (size_t i = 0; i + 1 < c->argc; i++)
        if (!strcmp(c->argv[i], flag))
            return c->argv[i + 1];
    return NULL;
}

static bool has(const struct sw_engine_cmd *c, const char *flag)
{
    for (size_t i = 0; i < c->argc; i++)
        if (!strcmp(c->argv[i], flag))
            return true;
    return false;
}

static void test_table(void **state)
{
    const struct sw_engine *a = sw_engine_find("llama.cpp");
    assert_non_null(a);
    assert_ptr_equal(sw_engine_find("LLAMACPP"), a);
    assert_ptr_equal(sw_engine_find("llama-server"), a);
    assert_null(sw_engine_find("tgi"));
    assert_null(sw_engine_find(NULL));
    size_t n;
    const struct sw_engine *const *all = sw_engine_list(&n);
    assert_true(n >= 1);
    assert_ptr_equal(all[0], a);
    assert_string_equal(a->health_path, "/health");
    assert_int_equal(a->health_loading_status, 503);
    json_error_t je;
    json_t *body = json_loads(a->liveness_body, 0, &je);
    assert_non_null(body);
    assert_int_equal(json_integer_value(json_object_get(body, "max_tokens")), 1);
    json_decref(body);
    bool kv = false;
    for (size_t i = 0; i < a->n_metrics; i++) {
        assert_int_equal(strncmp(a->metrics[i].name, "llamacpp:", 9), 0);
        kv |= !strcmp(a->metrics[i].name, "llamacpp:requests_deferred");
    }
    assert_true(kv);
    enum sw_boot_class c;
    assert_int_equal(sw_boot_class_parse("unsupported_arch", &c), 0);
    assert_int_equal(c, SW_BOOT_UNSUPPORTED);
    assert_int_equal(sw_boot_class_parse("nope", &c), SW_ENOENT);
    assert_string_equal(sw_boot_phase_name(SW_PHASE_KV_ALLOC), "kv_alloc");
    assert_string_equal(sw_payload_kind_name(SW_PAYLOAD_LFS_POINTER), "lfs_pointer");
    assert_null(sw_payload_kind_name(SW_PAYLOAD_NONE));
}

static void test_render_full(void **state)
{
    assert_non_null(sw_engine_find("llama.cpp"));
    const char *extra[] = {"--no-webui", "--jinja"};
    const char *env[] = {"OMP_NUM_THREADS=2"};
    struct sw_engine_launch l = {
        .binary = "/opt/llama/bin/llama-server",
        .model = "/m/q.gguf",
        .alias = "frank-small",
        .host = "0.0.0.0",
        .port = 7771,
        .ctx_size = 540672,
        .parallel = 3,
        .cache_type_k = "f16",
        .cache_type_v = "q8_0",
        .flash_attn = "on",
        .batch = 2048,
        .ubatch = 512,
        .swa_full = 1,
        .kv_unified = 0,
        .n_gpu_layers = INT64_MAX,
        .mmproj = "/m/mmproj-f16.gguf",
        .threads = 8,
        .extra_args = extra,
        .n_extra_args = 2,
        .env = env,
        .n_env = 1,
        .api_key = "sk-secret",
        .verbosity = -1,
    };
    struct sw_engine_cmd c;
    struct sw_err e;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), 0);
    assert_string_equal(c.argv[0], "/opt/llama/bin/llama-server");
    assert_null(c.argv[c.argc]);
    assert_string_equal(argv_after(&c, "-m"), "/m/q.gguf");
    assert_string_equal(argv_after(&c, "--alias"), "frank-small");
    assert_string_equal(argv_after(&c, "--host"), "0.0.0.0");
    assert_string_equal(argv_after(&c, "--port"), "7771");
    assert_string_equal(argv_after(&c, "-c"), "540672");
    assert_string_equal(argv_after(&c, "-np"), "3");
    assert_string_equal(argv_after(&c, "-ctk"), "f16");
    assert_string_equal(argv_after(&c, "-ctv"), "q8_0");
    assert_string_equal(argv_after(&c, "-fa"), "on");
    assert_string_equal(argv_after(&c, "-b"), "2048");
    assert_string_equal(argv_after(&c, "-ub"), "512");
    assert_true(has(&c, "--swa-full"));
    assert_true(has(&c, "--no-kv-unified"));
    assert_false(has(&c, "-kvu"));
    assert_string_equal(argv_after(&c, "-ngl"), "all");
    assert_string_equal(argv_after(&c, "--mmproj"), "/m/mmproj-f16.gguf");
    assert_string_equal(argv_after(&c, "-t"), "8");
    assert_string_equal(argv_after(&c, "-lv"), "4");
    /* extra args last, verbatim */
    assert_string_equal(c.argv[c.argc - 2], "--no-webui");
    assert_string_equal(c.argv[c.argc - 1], "--jinja");
    /* the key: in the environment, nowhere in argv */
    for (size_t i = 0; i < c.argc; i++)
        assert_null(strstr(c.argv[i], "sk-secret"));
    assert_int_equal(c.envc, 2);
    assert_string_equal(c.env[0], "OMP_NUM_THREADS=2");
    assert_string_equal(c.env[1], "LLAMA_API_KEY=sk-secret");
    assert_null(c.env[2]);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    assert_int_equal(sw_engine_cmd_format(&c, &b), 0);
    assert_null(strstr(sw_buf_cstr(&b), "sk-secret"));
    sw_buf_free(&b);
    sw_engine_cmd_free(&c);
    sw_engine_cmd_free(&c); /* twice is fine */
}

static void test_render_minimal(void **state)
{
    struct sw_engine_launch l = {
        .model = "m.gguf", .n_gpu_layers = -1, .swa_full = -1, .kv_unified = -1, .verbosity = -1};
    struct sw_engine_cmd c;
    struct sw_err e;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), 0);
    /* llama-server -m m.gguf --host 127.0.0.1 -lv 4: no knob invented */
    assert_int_equal(c.argc, 7);
    assert_string_equal(c.argv[0], "llama-server");
    assert_string_equal(argv_after(&c, "--host"), "127.0.0.1");
    assert_false(has(&c, "-c"));
    assert_false(has(&c, "-ngl"));
    assert_false(has(&c, "--no-kv-unified"));
    assert_int_equal(c.envc, 0);
    assert_non_null(c.env);
    assert_null(c.env[0]);
    sw_engine_cmd_free(&c);
    l.kv_unified = 1;
    l.verbosity = 5;
    l.n_gpu_layers = 0;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), 0);
    assert_true(has(&c, "-kvu"));
    assert_string_equal(argv_after(&c, "-lv"), "5");
    assert_string_equal(argv_after(&c, "-ngl"), "0");
    sw_engine_cmd_free(&c);
}

/* One render; a failed one leaves no half-built command. */
static int render_once(void *arg)
{
    struct sw_engine_cmd c;
    struct sw_err e;
    int rc = sw_engine_llamacpp_render(arg, &c, &e);
    if (rc == 0)
        sw_engine_cmd_free(&c);
    else
        assert_null(c.argv);
    return rc;
}

static void test_render_refuses(void **state)
{
    struct sw_engine_cmd c;
    struct sw_err e;
    struct sw_engine_launch l = {.model = NULL, .n_gpu_layers = -1, .verbosity = -1};
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), SW_EINVAL);
    l.model = "m.gguf";
    l.cache_type_k = "q9_9";
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "q9_9"));
    l.cache_type_k = NULL;
    l.flash_attn = "yes";
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), SW_EINVAL);
    l.flash_attn = NULL;
    const char *leak[] = {"--api-key", "sk"};
    l.extra_args = leak;
    l.n_extra_args = 2;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "LLAMA_API_KEY"));
    const char *leak2[] = {"--api-key=sk"};
    l.extra_args = leak2;
    l.n_extra_args = 1;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), SW_EINVAL);
    l.n_extra_args = 0;
    const char *badenv[] = {"NOEQUALS"};
    l.env = badenv;
    l.n_env = 1;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), SW_EINVAL);
    l.n_env = 0;
    /* allocation failures: SW_ENOMEM at each, never a leak or a half-built command */
    assert_true(swt_torture("llama.cpp render", render_once, &l, SW_ENOMEM) > 2);
}

static void test_quote(void **state)
{
    char *a[] = {"llama-server", "-m", "/m/a b.gguf", "--alias", "it's", "", NULL};
    struct sw_engine_cmd c = {.argv = a, .argc = 6};
    struct sw_buf b;
    sw_buf_init(&b, 1 << 12);
    assert_int_equal(sw_engine_cmd_format(&c, &b), 0);
    assert_string_equal(sw_buf_cstr(&b), "llama-server -m '/m/a b.gguf' --alias 'it'\\''s' ''");
    sw_buf_free(&b);
}

static void test_error_shape(void **state)
{
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    struct sw_engine_error er;
    /* bodies a real llama-server answered (tests/data/bootlogs/llamacpp/http_*.cmd) */
    char *body = NULL;
    size_t len;
    assert_int_equal(sw_read_file(swt_src("tests/data/bootlogs/llamacpp/"
                                          "http_400_exceed_context.json"),
                                  1 << 16, &body, &len, NULL),
                     0);
    assert_int_equal(eng->error_shape(400, body, len, &er), 0);
    assert_int_equal(er.status, 400);
    assert_string_equal(er.type, "exceed_context_size_error");
    assert_int_equal(er.n_prompt_tokens, 6019);
    assert_int_equal(er.n_ctx, 4096);
    assert_non_null(strstr(er.message, "exceeds the available context size"));
    sw_free(body);
    assert_int_equal(sw_read_file(swt_src("tests/data/bootlogs/llamacpp/http_503_loading.json"),
                                  1 << 16, &body, &len, NULL),
                     0);
    assert_int_equal(eng->error_shape(0, body, len, &er), 0);
    assert_int_equal(er.status, 503); /* from the body's code */
    assert_string_equal(er.type, "unavailable_error");
    assert_string_equal(er.message, "Loading model");
    assert_int_equal(er.n_ctx, -1);
    sw_free(body);
    assert_int_equal(eng->error_shape(500, "<html>", 6, &er), SW_EPARSE);
    assert_int_equal(eng->error_shape(500, "{\"detail\":1}", 12, &er), SW_EPARSE);
}

/* A fleet endpoint rendered: paths resolved, every set knob a flag, secrets only in the env. */
static void test_from_fleet(void **state)
{
    char *dir = swt_tmpdir();
    const char *keyfile = swt_join(dir, "key");
    swt_write_str(keyfile, "sk-from-file\n");
    setenv("SW_TEST_KEY", "sk-from-env", 1);
    setenv("HOME", dir, 1);
    char yaml[4096];
    snprintf(yaml, sizeof(yaml),
             "version: 1\n"
             "hosts:\n"
             "  here:\n"
             "    transport: local\n"
             "endpoints:\n"
             "  small:\n"
             "    host: here\n"
             "    engine: llama.cpp\n"
             "    listen: 0.0.0.0:7771\n"
             "    alias: frank-small\n"
             "    api_key: {from_env: SW_TEST_KEY}\n"
             "    payload:\n"
             "      path: ~/models\n"
             "      gguf: m-Q5_K_M.gguf\n"
             "      mmproj: mmproj-f16.gguf\n"
             "    shape:\n"
             "      ctx_size: 540672\n"
             "      seqs: 3\n"
             "      cache_type_k: f16\n"
             "      cache_type_v: q8_0\n"
             "      flash_attn: \"on\"\n"
             "      ubatch_size: 512\n"
             "      swa_full: true\n"
             "      kv_unified: false\n"
             "      n_gpu_layers: all\n"
             "    args: [--jinja]\n"
             "    env:\n"
             "      OMP_NUM_THREADS: \"2\"\n"
             "      HF_TOKEN: {from_file: %s}\n",
             keyfile);
    struct sw_fleet *f = NULL;
    struct sw_err e;
    if (sw_fleet_load_mem("t.yaml", yaml, strlen(yaml), NULL, &f, &e))
        fail_msg("fleet: %s", e.msg);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "small");
    assert_non_null(ep);
    struct sw_engine_launch l;
    assert_int_equal(sw_engine_launch_from_fleet(ep, &l, &e), 0);
    char want[4200];
    snprintf(want, sizeof(want), "%s/models/m-Q5_K_M.gguf", dir);
    assert_string_equal(l.model, want);
    snprintf(want, sizeof(want), "%s/models/mmproj-f16.gguf", dir);
    assert_string_equal(l.mmproj, want);
    assert_string_equal(l.host, "0.0.0.0");
    assert_int_equal(l.port, 7771);
    assert_string_equal(l.api_key, "sk-from-env");
    assert_null(l.binary);
    struct sw_engine_cmd c;
    assert_int_equal(sw_engine_llamacpp_render(&l, &c, &e), 0);
    assert_string_equal(argv_after(&c, "-c"), "540672");
    assert_string_equal(argv_after(&c, "-np"), "3");
    assert_string_equal(argv_after(&c, "-ctv"), "q8_0");
    assert_string_equal(argv_after(&c, "-fa"), "on");
    assert_string_equal(argv_after(&c, "-ub"), "512");
    assert_true(has(&c, "--swa-full"));
    assert_true(has(&c, "--no-kv-unified"));
    assert_string_equal(argv_after(&c, "-ngl"), "all");
    assert_string_equal(argv_after(&c, "--alias"), "frank-small");
    assert_string_equal(c.argv[c.argc - 1], "--jinja");
    assert_false(has(&c, "-b")); /* unset knobs stay unset */
    for (size_t i = 0; i < c.argc; i++)
        assert_null(strstr(c.argv[i], "sk-from"));
    assert_int_equal(c.envc, 3);
    assert_string_equal(c.env[0], "OMP_NUM_THREADS=2");
    assert_string_equal(c.env[1], "HF_TOKEN=sk-from-file");
    assert_string_equal(c.env[2], "LLAMA_API_KEY=sk-from-env");
    sw_engine_cmd_free(&c);
    sw_engine_launch_free(&l);
    /* a secret that is not there: the error points into the fleet file */
    unsetenv("SW_TEST_KEY");
    assert_int_equal(sw_engine_launch_from_fleet(ep, &l, &e), SW_EINVAL);
    char buf[2048];
    assert_non_null(strstr(sw_err_format(&e, buf, sizeof(buf)), "t.yaml:11:"));
    assert_non_null(strstr(e.msg, "SW_TEST_KEY"));
    sw_fleet_free(f);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),          cmocka_unit_test(test_render_full),
        cmocka_unit_test(test_render_minimal), cmocka_unit_test(test_render_refuses),
        cmocka_unit_test(test_quote),          cmocka_unit_test(test_error_shape),
        cmocka_unit_test(test_from_fleet),
    };
    return cmocka_run_group_tests_name("engine_llamacpp", tests, NULL, NULL);
}
