/*
 * import: the operator's own units and env files (tests/data/import, written as the seed
 * describes them) imported into his fleet (examples/operator.yaml, merged with --into) plan what
 * his engines printed: frank-primary 398,658 tokens / 1.99x / 6,496 arena slots, frank-small a
 * pool of 540,672 over 3 slots. Every value carries its file:line; a secret never enters the
 * fleet; what is not imported is a note; garbage is refused with its line and nothing is written;
 * render(import(unit)) runs the unit's engine command line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/import.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/report.h>

#include "swtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool has_note(const struct sw_import *im, const char *needle)
{
    for (size_t i = 0; i < im->n_notes; i++)
        if (strstr(im->notes[i].msg, needle) || strstr(im->notes[i].where, needle))
            return true;
    return false;
}

/* dir/fleet.yaml = the operator's fleet with NAME's unit and env file imported into it */
static void import_into(const char *dir, const char *name, struct sw_import *im)
{
    char unit[4096], env[4096], envcopy[4096], fleet[4096];
    snprintf(unit, sizeof(unit), "%s", swt_src("tests/data/import"));
    strcat(unit, "/");
    strcat(unit, name);
    snprintf(env, sizeof(env), "%s", unit);
    strcat(unit, ".service");
    strcat(env, ".env");
    snprintf(envcopy, sizeof(envcopy), "%s/%s.env", dir, name);
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    if (access(fleet, F_OK)) {
        /* the operator's fleet and the env files it already references */
        swt_copy(swt_src("examples/operator.yaml"), fleet);
        swt_copy(swt_src("examples/frank-primary.env"), swt_join(dir, "frank-primary.env"));
        swt_copy(swt_src("examples/frank-small.env"), swt_join(dir, "frank-small.env"));
    }
    swt_copy(env, envcopy);
    struct sw_import_opts o = {.host = "dankserver", .env_file = envcopy, .out_dir = dir};
    struct sw_err e;
    sw_import_init(im);
    if (sw_import_unit(im, unit, &o, &e))
        fail_msg("%s", e.msg);
    if (sw_import_write(im, fleet, fleet, &e))
        fail_msg("%s", e.msg);
}

static struct sw_fleet *load(const char *path)
{
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    struct sw_err e;
    if (sw_fleet_load(path, &fo, &f, &e))
        fail_msg("%s: %s", path, e.msg);
    return f;
}

static void test_frank_primary(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    struct sw_import im;
    import_into(dir, "frank-primary", &im);
    char fleet[4096];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    char *text = swt_slurp(fleet);
    /* provenance: the env file's line and the unit's line that read it */
    swt_has_all("text", text, "MAXLEN: shape.max_model_len",
                "frank-primary.env:4 MAXLEN=200704, read by",
                "frank-primary.service:15 --max-model-len", "stop_grace: 120s",
                "frank-primary.service:25 podman stop -t 120", "stop_timeout: 180s", NULL);
    /* the secret stays in the env file: a reference only */
    assert_null(strstr(text, "hf_notarealtoken"));
    assert_non_null(strstr(text, "HF_TOKEN: {from_env: HF_TOKEN}"));
    assert_true(has_note(&im, "HF_TOKEN: a secret"));
    /* what is not imported is said, line by line */
    assert_true(has_note(&im, "TimeoutStartSec=900"));
    assert_true(has_note(&im, "--device /dev/dri"));
    /* the merge kept the operator's own keys (profile, arch, known_bad) */
    swt_has_all("text", text, "profile: tiered-expert-offload", "known_bad:", NULL);
    sw_free(text);

    struct sw_fleet *f = load(fleet);
    struct sw_plan pl;
    struct sw_err e;
    swt_plan(f, "frank-primary", &pl);
    json_t *rep = json_object_get(pl.engine_plan, "report");
    assert_int_equal(json_integer_value(json_object_get(rep, "kv_cache_tokens")), 398658);
    assert_true(json_real_value(json_object_get(rep, "max_concurrency")) == 1.99);
    json_t *arena = json_object_get(pl.engine_plan, "arena");
    assert_int_equal(json_integer_value(json_object_get(arena, "slots")), 6496);
    sw_plan_free(&pl);
    sw_fleet_free(f);

    /* render(import(unit)) runs the same vLLM command line (the secret set, as at a start) */
    setenv("HF_TOKEN", "hf_for_the_render_only_000000000000000", 1);
    size_t nd = 99;
    if (sw_import_roundtrip(&im, fleet, &nd, &e))
        fail_msg("%s", e.msg);
    for (size_t i = 0; nd && i < im.n_notes; i++)
        print_message("%s: %s\n", im.notes[i].where, im.notes[i].msg);
    assert_int_equal(nd, 0);
    unsetenv("HF_TOKEN");
    sw_import_free(&im);
    swt_tmpdir_free(dir);
}

static void test_frank_small(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    struct sw_import im;
    import_into(dir, "frank-small", &im);
    char fleet[4096];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    char *text = swt_slurp(fleet);
    swt_has_all("text", text, "CTX_SIZE: shape.ctx_size",
                "frank-small.env:3 CTX_SIZE=540672, read by", "PARALLEL: shape.seqs",
                "cache_type_v: q8_0", "CUDA_VISIBLE_DEVICES: \"0\"", NULL);
    sw_free(text);
    struct sw_fleet *f = load(fleet);
    struct sw_plan pl;
    struct sw_err e;
    swt_plan(f, "frank-small", &pl);
    assert_non_null(pl.llamacpp);
    assert_int_equal(pl.llamacpp->report.n_ctx, 540672);
    assert_int_equal(pl.llamacpp->report.n_seq_max, 3);
    assert_int_equal(pl.llamacpp->report.n_ctx_seq, 180224);
    sw_plan_free(&pl);
    sw_fleet_free(f);
    /* the round trip names what the render adds and nothing else */
    size_t nd = 0;
    if (sw_import_roundtrip(&im, fleet, &nd, &e))
        fail_msg("%s", e.msg);
    for (size_t i = 0; i < im.n_notes; i++)
        if (strstr(im.notes[i].where, "round trip"))
            assert_non_null(strstr(im.notes[i].msg, "the render adds -lv"));
    assert_true(nd <= 1);
    sw_import_free(&im);
    swt_tmpdir_free(dir);
}

/* A bare command line of each engine: flags land in the shape vocabulary; the rest verbatim. */
static void test_argv(void **state)
{
    (void)state;
    struct sw_import im;
    struct sw_err e;
    char *l[] = {"llama-server",
                 "-m",
                 "/m/q.gguf",
                 "-c",
                 "16384",
                 "-np",
                 "2",
                 "-ctk",
                 "q8_0",
                 "-fa",
                 "on",
                 "--jinja",
                 "--port",
                 "8081",
                 "--api-key",
                 "sk-abcdefabcdefabcdefabcd",
                 NULL};
    sw_import_init(&im);
    if (sw_import_argv(&im, 16, l, NULL, &e))
        fail_msg("%s", e.msg);
    const char *y = sw_buf_cstr(&im.yaml);
    swt_has_all("y", y, "ctx_size: 16384", "seqs: 2", "cache_type_k: q8_0", "gguf: q.gguf",
                "- --jinja", "port: 8081", NULL);
    assert_null(strstr(y, "sk-abcdef"));
    assert_non_null(strstr(y, "api_key: {from_env: LLAMA_API_KEY}"));
    assert_true(has_note(&im, "--api-key: a secret"));
    sw_import_free(&im);

    char *v[] = {"vllm",
                 "serve",
                 "/m/x",
                 "--max-model-len",
                 "32768",
                 "-tp",
                 "2",
                 "--enforce-eager",
                 "--kv-cache-memory-bytes",
                 "3.15e9",
                 NULL};
    sw_import_init(&im);
    if (sw_import_argv(&im, 10, v, NULL, &e))
        fail_msg("%s", e.msg);
    y = sw_buf_cstr(&im.yaml);
    swt_has_all("y", y, "  vllm:\n", "max_model_len: 32768", "tensor_parallel: 2",
                "enforce_eager: true", "kv_cache_bytes: 3.15e9", "path: /m/x", NULL);
    sw_import_free(&im);

    char *s[] = {"python3",
                 "-m",
                 "sglang.launch_server",
                 "--model-path",
                 "/m/y",
                 "--context-length",
                 "65536",
                 "--max-running-requests",
                 "4",
                 NULL};
    sw_import_init(&im);
    if (sw_import_argv(&im, 9, s, NULL, &e))
        fail_msg("%s", e.msg);
    y = sw_buf_cstr(&im.yaml);
    swt_has_all("y", y, "  sglang:\n", "engine: sglang", "max_model_len: 65536", "seqs: 4", NULL);
    sw_import_free(&im);
}

static void test_env(void **state)
{
    (void)state;
    struct sw_import im;
    struct sw_err e;
    sw_import_init(&im);
    if (sw_import_env(&im, swt_src("tests/data/import/frank-primary.env"), NULL, &e))
        fail_msg("%s", e.msg);
    const char *y = sw_buf_cstr(&im.yaml);
    swt_has_all("y", y, "engine: vllm", "KV_BYTES: shape.kv_cache_bytes",
                "frank-primary.env:9 MNBT=1024", NULL);
    assert_null(strstr(y, "hf_notarealtoken"));
    assert_true(has_note(&im, "HF_TOKEN: a secret"));
    sw_import_free(&im);
}

/* Garbage: refused with its line, nothing written. */
static void test_garbage(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char out[4096];
    snprintf(out, sizeof(out), "%s/out.yaml", dir);
    struct sw_import im;
    struct sw_err e;
    struct sw_import_opts o = {.out_dir = dir};

    static const char html[] = "[Service]\nExecStart=/usr/bin/llama-server -m /m.gguf\n"
                               "<html><body>not a unit</body></html>\n";
    sw_import_init(&im);
    sw_err_clear(&e);
    assert_int_not_equal(
        sw_import_unit_text(&im, "x.service", html, strlen(html), NULL, NULL, 0, &o, &e), 0);
    assert_int_equal(e.line, 3);
    sw_import_free(&im);

    static const char noengine[] = "[Service]\nExecStart=/usr/bin/sleep 100\n";
    sw_import_init(&im);
    sw_err_clear(&e);
    assert_int_not_equal(
        sw_import_unit_text(&im, "y.service", noengine, strlen(noengine), NULL, NULL, 0, &o, &e),
        0);
    assert_int_equal(e.line, 2);
    assert_non_null(strstr(e.msg, "runs no engine"));
    sw_import_free(&im);

    static const char unit[] = "[Service]\nEnvironmentFile=/e.env\n"
                               "ExecStart=/usr/bin/llama-server -m /m.gguf -c ${CTX}\n";
    static const char badenv[] = "A=1\nCTX = 4096\n";
    sw_import_init(&im);
    sw_err_clear(&e);
    assert_int_not_equal(sw_import_unit_text(&im, "z.service", unit, strlen(unit), "e.env", badenv,
                                             strlen(badenv), &o, &e),
                         0);
    assert_int_equal(e.line, 2);
    sw_import_free(&im);

    char *bad[] = {"llama-server", "-m", "/m.gguf", "-c", "lots", NULL};
    sw_import_init(&im);
    sw_err_clear(&e);
    assert_int_not_equal(sw_import_argv(&im, 5, bad, NULL, &e), 0);
    assert_non_null(strstr(e.msg, "-c"));
    sw_import_free(&im);

    /* a good import whose fleet does not load writes nothing */
    char *ok[] = {"vllm", "serve", "/m/x", "--max-num-seqs", "0", NULL};
    sw_import_init(&im);
    if (sw_import_argv(&im, 5, ok, NULL, &e))
        fail_msg("%s", e.msg);
    assert_int_not_equal(sw_import_write(&im, NULL, out, &e), 0);
    struct stat st;
    assert_int_not_equal(stat(out, &st), 0);
    sw_import_free(&im);
    swt_tmpdir_free(dir);
}

/* --into keeps what the import does not write, comments included. */
static void test_merge(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fleet[4096];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    swt_write_str(fleet, "version: 1\n"
                         "# my hosts\n"
                         "hosts:\n"
                         "  box: {transport: local}\n"
                         "endpoints:\n"
                         "  small:\n"
                         "    host: box\n"
                         "    engine: llama.cpp\n"
                         "    # keep me\n"
                         "    shape:\n"
                         "      ctx_size: 4096\n"
                         "      batch_size: 1024   # mine\n"
                         "    note: hand written\n");
    char *v[] = {"llama-server", "-m", "/m/q.gguf", "-c", "8192", NULL};
    struct sw_import im;
    struct sw_err e;
    struct sw_import_opts o = {.endpoint = "small", .host = "box"};
    sw_import_init(&im);
    if (sw_import_argv(&im, 5, v, &o, &e))
        fail_msg("%s", e.msg);
    if (sw_import_write(&im, fleet, fleet, &e))
        fail_msg("%s", e.msg);
    char *t = swt_slurp(fleet);
    swt_has_all("t", t, "# my hosts", "# keep me", "batch_size: 1024   # mine",
                "note: hand written", "ctx_size: 8192", NULL);
    assert_null(strstr(t, "ctx_size: 4096"));
    assert_true(has_note(&im, "endpoints.small.shape.ctx_size: replaced"));
    sw_free(t);
    struct sw_fleet *f = load(fleet);
    sw_fleet_free(f);
    sw_import_free(&im);
    swt_tmpdir_free(dir);
}

/* The lines of an import's YAML without their comments, one per string. */
static size_t value_lines(const char *y, char lines[][256], size_t max)
{
    size_t n = 0;
    for (const char *p = y; *p && n < max;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        const char *hash = NULL;
        for (size_t k = 0; k + 2 < len; k++)
            if (p[k] == ' ' && p[k + 1] == ' ' && p[k + 2] == '#') {
                hash = p + k;
                break;
            }
        size_t l = hash ? (size_t)(hash - p) : len;
        while (l && p[l - 1] == ' ')
            l--;
        snprintf(lines[n++], 256, "%.*s", (int)l, p);
        p += len + (nl ? 1 : 0);
    }
    return n;
}

/* import llama-swap, export llama-swap, import again: each model's command imports to the same
 * endpoint; the export adds only what the render always writes (--host, llama-server's -lv). */
static void test_llama_swap_round_trip(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char fleet[4096], out[4096];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    snprintf(out, sizeof(out), "%s/gpubox.yaml", dir);
    struct sw_import a, b;
    struct sw_err e;
    struct sw_import_opts o = {.host = "gpubox", .out_dir = dir};
    sw_import_init(&a);
    if (sw_import_llama_swap(&a, swt_src("tests/data/import/llama-swap.yaml"), &o, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(a.n_names, 3);
    assert_true(has_note(&a, "models.qwen-small.ttl 300"));
    assert_true(has_note(&a, "group always-on"));
    assert_true(has_note(&a, "--port ${PORT}"));
    const char *y = sw_buf_cstr(&a.yaml);
    assert_non_null(strstr(y, "gguf: Qwen3-4B-Q4_K_M.gguf")); /* ${models} expanded */
    assert_non_null(strstr(y, "llama-swap.yaml:13"));         /* the cmd's line */
    if (sw_import_write(&a, NULL, fleet, &e))
        fail_msg("%s", e.msg);
    struct sw_fleet *f = load(fleet);
    struct sw_buf x;
    sw_buf_init(&x, 1u << 20);
    if (sw_export_llama_swap_host(f, "gpubox", NULL, &x, &e))
        fail_msg("%s", e.msg);
    assert_non_null(strstr(sw_buf_cstr(&x), "--port ${PORT}"));
    assert_non_null(strstr(sw_buf_cstr(&x), "- \"CUDA_VISIBLE_DEVICES=1\""));
    assert_non_null(strstr(sw_buf_cstr(&x), "checkEndpoint: /health"));
    swt_write_str(out, sw_buf_cstr(&x));
    sw_buf_free(&x);
    sw_fleet_free(f);
    sw_import_init(&b);
    if (sw_import_llama_swap(&b, out, &o, &e))
        fail_msg("%s", e.msg);
    static char la[256][256], lb[256][256];
    size_t na = value_lines(sw_buf_cstr(&a.yaml), la, 256);
    size_t nb = value_lines(sw_buf_cstr(&b.yaml), lb, 256);
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t k = 0; k < nb && !found; k++)
            found = !strcmp(la[i], lb[k]);
        if (!found)
            fail_msg("lost in the round trip: '%s'", la[i]);
    }
    for (size_t k = 0; k < nb; k++) {
        bool found = false;
        for (size_t i = 0; i < na && !found; i++)
            found = !strcmp(la[i], lb[k]);
        if (!found && !strstr(lb[k], "listen:") && !strstr(lb[k], "address: 127.0.0.1") &&
            strcmp(lb[k], "      - -lv") && strcmp(lb[k], "      - \"4\""))
            fail_msg("added in the round trip: '%s'", lb[k]);
    }
    sw_import_free(&a);
    sw_import_free(&b);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frank_primary),
        cmocka_unit_test(test_frank_small),
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_llama_swap_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
