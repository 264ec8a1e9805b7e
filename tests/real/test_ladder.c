/*
 * `slipway ladder` end to end, from the built binary.
 *
 * Real llama-server under a memory limit (the local runner): a random-weight gemma3 model whose
 * full-attention KV costs 128 KiB per cell (f32 K and V, 32 KV heads of 512) so that a 256-cell
 * step of -c is 32 MiB, served by the pinned llama-server with --no-mmap (the weights are the
 * engine's own memory) and --cache-ram 0 (no prompt cache copying the KV after a request), each
 * rung in a memory cgroup of its own limited to 240 MiB. The ladder must find the largest -c that
 * boots AND survives the worst-case request (half the window of prompt, the rest generated), in
 * few boots; the test then boots one step above it with the same limit through the same runner
 * (a one-value grid) and requires a size failure; a rerun of the same label spends no boot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swledger.h"
#include "swllama.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *run_json(struct swt_run *r)
{
    struct sw_err e;
    json_t *j = sw_json_parse(r->out, strlen(r->out), "ladder --json", &e);
    if (!j)
        fail_msg("ladder --json: %s\nstdout: %.2000s\nstderr: %.4000s", e.msg, r->out, r->err);
    return j;
}

static void test_llama_memory_limit(void **state)
{
    (void)state;
    swt_need(swl_llama_dir() != NULL, "%s", swl_missing());
    char *dir = swt_tmpdir();
    char model[4200], fleet[4200], led[4200], port[16];
    snprintf(model, sizeof(model), "%s", swt_join(dir, "wide.gguf"));
    snprintf(fleet, sizeof(fleet), "%s", swt_join(dir, "fleet.yaml"));
    snprintf(led, sizeof(led), "%s", swt_join(dir, "ladder.sqlite"));
    snprintf(port, sizeof(port), "%d", swt_free_port());
    struct swt_run r;
    swt_slipway(&r, "gguf", "synth", "--arch", "gemma3", "--layers", "2", "--embd", "64", "--heads",
                "32", "--kv-heads", "32", "--head-dim", "512", "--ff", "128", "--swa-pattern", "2",
                "--vocab", swl_model_file("ggml-vocab-llama-spm.gguf"), "--out", model, "--ctx",
                "8192", NULL);
    if (r.status)
        fail_msg("gguf synth: %s", r.err);
    swt_run_free(&r);
    char text[8192];
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  here:\n"
             "    transport: local\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             "endpoints:\n"
             "  wide:\n"
             "    host: here\n"
             "    engine: llama.cpp\n"
             "    binary: %s\n"
             "    listen: 127.0.0.1:%s\n"
             "    payload:\n"
             "      path: %s\n"
             "    shape:\n"
             "      ctx_size: 512\n"
             "      seqs: 1\n"
             "      n_gpu_layers: 0\n"
             "      cache_type_k: f32\n"
             "      cache_type_v: f32\n"
             "      batch_size: 64\n"
             "      ubatch_size: 64\n"
             "    knobs:\n"
             "      ctx_size: {min: 256, max: 2048, step: 256}\n"
             "    args: [--no-mmap, --cache-ram, \"0\"]\n",
             swl_bin("llama-server"), port, model);
    swt_write_str(fleet, text);

    /* the ladder */
    swt_slipway(&r, "ladder", "wide", "--fleet", fleet, "--runner", "local", "--memory-max",
                "240MiB", "--probe-timeout", "180s", "--ledger", led, "--json", NULL);
    swt_need(!(r.err && strstr(r.err, "writable cgroup")),
             "a writable memory cgroup for the engine's limit: %.300s", r.err ? r.err : "");
    fprintf(stderr, "%s", r.err);
    json_t *j = run_json(&r);
    if (r.status)
        fail_msg("ladder exited %d: %.3000s", r.status, r.out);
    int64_t answer = json_integer_value(json_object_get(j, "answer"));
    int64_t bad = json_integer_value(json_object_get(j, "bad"));
    int64_t boots = json_integer_value(json_object_get(j, "boots"));
    fprintf(stderr, "ladder: -c %lld survives under 240 MiB, %lld fails; %lld boots\n",
            (long long)answer, (long long)bad, (long long)boots);
    assert_true(json_is_true(json_object_get(j, "converged")));
    assert_true(answer >= 256);
    /* converged on the grid: the value one step above was tried and failed by size */
    assert_int_equal(bad, answer + 256);
    /* 8 values: a bisection needs at most 4 boots */
    assert_true(boots >= 1 && boots <= 4);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(j, "rungs"), i, g)
    {
        const char *cls = json_string_value(json_object_get(g, "class"));
        int64_t v = json_integer_value(json_object_get(g, "value"));
        assert_true(json_is_true(json_object_get(g, "booted")));
        if (v <= answer)
            assert_string_equal(cls, "pass");
        else
            assert_true(!strcmp(cls, "boot_oom") || !strcmp(cls, "runtime_oom"));
    }
    json_decref(j);
    swt_run_free(&r);

    /* one step above, booted again through the same runner and limit: it must fail. Without
     * the ledger: with it, `check` would refuse the shape that failed (no boot spent) */
    char above[32];
    snprintf(above, sizeof(above), "%lld", (long long)(answer + 256));
    swt_slipway(&r, "ladder", "wide", "--fleet", fleet, "--runner", "local", "--memory-max",
                "240MiB", "--probe-timeout", "180s", "--no-ledger", "--min", above, "--max", above,
                "--json", NULL);
    j = run_json(&r);
    assert_int_equal(r.status, 1);
    assert_true(json_is_null(json_object_get(j, "answer")));
    assert_int_equal(json_integer_value(json_object_get(j, "bad")), answer + 256);
    g = json_array_get(json_object_get(j, "rungs"), 0);
    const char *cls = json_string_value(json_object_get(g, "class"));
    assert_true(json_is_true(json_object_get(g, "booted")));
    if (strcmp(cls, "boot_oom") && strcmp(cls, "runtime_oom"))
        fail_msg("%s above the answer: %s", above, json_string_value(json_object_get(g, "detail")));
    json_decref(j);
    swt_run_free(&r);

    /* the same ladder again: every rung is read back from the ledger, no boot is spent */
    swt_slipway(&r, "ladder", "wide", "--fleet", fleet, "--runner", "local", "--memory-max",
                "240MiB", "--ledger", led, "--json", NULL);
    j = run_json(&r);
    assert_int_equal(r.status, 0);
    assert_int_equal(json_integer_value(json_object_get(j, "boots")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "answer")), answer);
    assert_true(
        json_is_true(json_object_get(json_array_get(json_object_get(j, "rungs"), 0), "resumed")));
    json_decref(j);
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

/* text with [from, to) cut out (malloc'd): `to` stays */
static char *cut(const char *text, const char *from, const char *to)
{
    const char *a = strstr(text, from);
    const char *b = a ? strstr(a, to) : NULL;
    if (!a || !b)
        fail_msg("'%s' .. '%s' is not in the fleet", from, to);
    size_t n = strlen(text) + 1;
    char *o = malloc(n);
    snprintf(o, n, "%.*s%s", (int)(a - text), text, b);
    return o;
}

/*
 * The simulated frank-primary night ladder. The simulated hardware is the sim's headroom model
 * fitted on every seed boot (`--sim-ledger`: it fails 262,144 and 245,760 at graph capture and
 * boots 237,568 and 241,664, as the operator's boots did). What the ladder knows is the seed
 * WITHOUT the night ladder's four rungs (its own ledger, and the fleet file with those three
 * recorded boots cut out): it must find 241,664 on the fleet's 4,096 grid in at most 3 boots
 * (the 16k ladder's 4 + a bonus rung), and the test counts the boots it spent; then one step
 * above the answer is booted in the sim alone and must die at graph capture.
 *
 * The shape is the night ladder's as the operator ran it: bf16 KV (auto), 3 sequences, the
 * engine sizing the pool (no KV_BYTES), at gpu_memory_utilization 0.98: the seed log says the
 * ladder's 241,664 was "DEPLOYED at util 0.98" and "Util stays 0.98", and every night-ladder boot
 * records it. The fleet file's endpoint does not spell the utilization (frank-primary.env has no
 * such variable; the profile's `utilization: 0.98` is what its arena constants hold at), so the
 * test sets it as `--set`, with the other three.
 */
static void test_sim_frank_primary(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char path[4200], world[4200], led[4200], fleet[4200];
    struct swt_run r;
    snprintf(world, sizeof(world), "%s", swt_join(dir, "world.sqlite"));
    snprintf(led, sizeof(led), "%s", swt_join(dir, "ladder.sqlite"));
    swl_cli_import_seed(world);
    /* the ladder's knowledge: the seed without the night ladder's boots and rungs */
    json_t *seed = swl_seed_before_night();
    snprintf(path, sizeof(path), "%s", swt_join(dir, "prior.json"));
    assert_int_equal(json_dump_file(seed, path, 0), 0);
    json_decref(seed);
    swt_slipway(&r, "ledger", "import", path, "--ledger", led, NULL);
    if (r.status)
        fail_msg("import: %s", r.err);
    swt_run_free(&r);
    /* the payload: the inferred config, as tests/real/test_sim_headroom.c does */
    char *b = swt_operator_local(dir);
    swt_copy(swt_src("examples/frank-primary.env"), swt_join(dir, "frank-primary.env"));
    swt_copy(swt_src("examples/frank-small.env"), swt_join(dir, "frank-small.env"));
    char *c = cut(b,
                  "      - shape: {kv_cache_dtype: auto, seqs: 3, max_model_len: 245760, "
                  "gpu_memory_utilization: 0.98}",
                  "      - shape: {kv_cache_dtype: fp8, seqs: 6, max_model_len: 241664}");
    snprintf(fleet, sizeof(fleet), "%s", swt_join(dir, "operator.yaml"));
    swt_write_str(fleet, c);
    free(b);
    free(c);

    swt_slipway(&r, "ladder", "frank-primary", "--fleet", fleet, "--runner", "sim", "--sim-ledger",
                world, "--ledger", led, "--set", "kv_cache_bytes=null", "--set",
                "kv_cache_dtype=auto", "--set", "seqs=3", "--set", "gpu_memory_utilization=0.98",
                "--probe-timeout", "120s", "--json", NULL);
    fprintf(stderr, "%s", r.err);
    json_t *j = run_json(&r);
    if (r.status)
        fail_msg("ladder exited %d: %.3000s", r.status, r.out);
    int64_t boots = json_integer_value(json_object_get(j, "boots"));
    fprintf(stderr, "simulated frank-primary: max_model_len %lld in %lld boots (%s)\n",
            (long long)json_integer_value(json_object_get(j, "answer")), (long long)boots,
            json_string_value(json_object_get(j, "law_source")));
    assert_int_equal(json_integer_value(json_object_get(j, "answer")), 241664);
    assert_int_equal(json_integer_value(json_object_get(j, "bad")), 245760);
    assert_true(json_is_true(json_object_get(j, "converged")));
    /* the 16k ladder needed 4 boots + a bonus rung: this one at most 3, every one a sim boot */
    assert_true(boots >= 2 && boots <= 3);
    json_t *rungs = json_object_get(j, "rungs");
    int booted = 0;
    for (size_t i = 0; i < json_array_size(rungs); i++)
        booted += json_is_true(json_object_get(json_array_get(rungs, i), "booted"));
    assert_int_equal(booted, boots);
    /* the prediction came from the model without the night ladder's boots: its point is within
     * a grid step of the answer, and the first rung is that point */
    int64_t point = json_integer_value(json_object_get(json_object_get(j, "prediction"), "point"));
    assert_true(point >= 241664 - 4096 && point <= 241664 + 4096);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(rungs, 0), "value")), point);
    json_decref(j);
    swt_run_free(&r);

    /* one step above the answer, booted in the sim alone (no ladder, no ledger of its own):
     * it dies at graph capture, as the operator's 245,760 did */
    swt_slipway(&r, "sim", "frank-primary", "--fleet", fleet, "--ledger", world, "--load-time", "0",
                "--set", "kv_cache_bytes=null", "--set", "kv_cache_dtype=auto", "--set", "seqs=3",
                "--set", "gpu_memory_utilization=0.98", "--set", "max_model_len=245760", NULL);
    if (r.status != 1)
        fail_msg("sim at 245,760: exit %d, want 1:\n%.3000s", r.status, r.err);
    assert_non_null(strstr(r.err, "Capturing CUDA graphs"));
    assert_non_null(strstr(r.err, "Tried to allocate 76.00 MiB"));
    assert_non_null(strstr(r.err, "0 bytes is free"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_frank_primary),
        cmocka_unit_test(test_llama_memory_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
