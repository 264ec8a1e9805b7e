/*
 * slipway bench against `slipway sim --engine vllm` (the real binary, HTTP on 127.0.0.1): the
 * engine's /metrics read before and after the points, the deltas reconciled with the client's
 * counts (prompt and generated tokens exactly equal, calibration requests excluded), the prefix
 * cache's lookups equal to the prompt tokens and its hits 0, and that 0 verifying the cache
 * check; --reset-cache posts vLLM's /reset_prefix_cache first (the sim answers it as vLLM's dev
 * route does; a path it did not serve would be a 404 and fail the run). --reset-cache for an
 * engine with no reset route fails with a usage-class error, and --no-engine-metrics reads no
 * counters. The sim is stopped by its pid, also when an assertion fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swllama.h"
#include "swtest.h"

#include <slipway/core.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t g_pid;
static char *g_dir;

static int teardown(void **state)
{
    (void)state;
    if (g_pid > 0) {
        int st;
        kill(-g_pid, SIGKILL);
        kill(g_pid, SIGKILL);
        waitpid(g_pid, &st, 0);
        g_pid = 0;
    }
    if (g_dir)
        swt_tmpdir_free(g_dir);
    g_dir = NULL;
    return 0;
}

/* Start `slipway sim` with argv (argv[0] the binary) in its own process group, stdout and
 * stderr to dir/sim.out and dir/sim.log; the port it printed once it serves. */
static int spawn_sim(const char *dir, const char *const *argv)
{
    char out[4200], log[4200];
    snprintf(out, sizeof(out), "%s/sim.out", dir);
    snprintf(log, sizeof(log), "%s/sim.log", dir);
    int port = swt_spawn_announced("slipway sim", argv, out, log, &g_pid);
    /* announced as it binds; it accepts once loaded (within the same 30 s) */
    for (int i = 0; port && i < 300 && !swt_port_open(port); i++)
        usleep(100000);
    if (!port || !swt_port_open(port))
        fail_msg("slipway sim never served");
    return port;
}

/* The sim (vLLM, a Llama-8B-shaped config) with extra options before its `--`. */
static int start_sim_with(const char *dir, const char *const *extra)
{
    char model[4200];
    snprintf(model, sizeof(model), "%s/m", dir);
    mkdir(model, 0700);
    swt_write_str(swt_join(model, "config.json"), SWT_LLAMA8B_CONFIG);
    const char *head[] = {swt_bin(),         "sim",   "--engine",  "vllm", "--load-time", "0",
                          "--device-memory", "24GiB", "--weights", "16GiB"};
    const char *tail[] = {"--", "vllm", "serve", model, "--max-model-len", "32768"};
    const char *argv[40];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
        argv[n++] = head[i];
    for (size_t i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
        argv[n++] = tail[i];
    argv[n] = NULL;
    return spawn_sim(dir, argv);
}

static int start_sim(const char *dir)
{
    return start_sim_with(dir, NULL);
}

static void test_counters_against_sim(void **state)
{
    (void)state;
    g_dir = swt_tmpdir();
    int port = start_sim(g_dir);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct swt_run r;
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "64,256", "--tg", "16", "--repeat",
                "2", "--concurrency", "1,2", "--reset-cache", "--json", NULL);
    if (r.status)
        fail_msg("bench exited %d: %s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    json_t *ec = json_object_get(j, "engine_counters");
    assert_true(json_is_true(json_object_get(ec, "present")));
    assert_string_equal(json_string_value(json_object_get(ec, "engine")), "vllm");
    assert_string_equal(json_string_value(json_object_get(ec, "reset")),
                        "ok: POST /reset_prefix_cache (HTTP 200)");
    double prompt = json_number_value(json_object_get(ec, "prompt_tokens"));
    double gen = json_number_value(json_object_get(ec, "generation_tokens"));
    json_int_t cp = json_integer_value(json_object_get(ec, "client_prompt_tokens"));
    json_int_t cc = json_integer_value(json_object_get(ec, "client_completion_tokens"));
    /* 4 points: 2 + 4 requests at each of 2 depths, 16 tokens each */
    assert_int_equal(cc, 12 * 16);
    assert_true(cp > 12 * 64);
    assert_true(prompt == (double)cp);
    assert_true(gen == (double)cc);
    assert_true(json_is_true(json_object_get(ec, "counts_agree")));
    json_t *pc = json_object_get(ec, "prefix_cache");
    assert_true(json_number_value(json_object_get(pc, "queries")) == prompt);
    assert_true(json_number_value(json_object_get(pc, "hits")) == 0);
    json_t *cache = json_object_get(j, "cache");
    assert_true(json_is_true(json_object_get(cache, "verified")));
    assert_non_null(strstr(json_string_value(json_object_get(cache, "why")), "/metrics"));
    json_decref(j);

    /* the table says the same */
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "64", "--tg", "8", "--repeat", "2",
                "-q", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "engine counters (vllm /metrics, over the points)"));
    assert_non_null(strstr(r.out, ": agree; prefix cache 0 of"));
    swt_run_free(&r);

    /* llama.cpp has no reset route: asked anyway, the run is refused */
    swt_slipway(&r, "bench", url, "--engine", "llama.cpp", "--depth", "64", "--tg", "8",
                "--reset-cache", "-q", NULL);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "no prefix-cache reset"));
    swt_run_free(&r);

    /* not read when asked not to */
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "64", "--tg", "8", "--repeat", "2",
                "--no-engine-metrics", "--json", NULL);
    j = swt_json_out(&r);
    swt_run_free(&r);
    ec = json_object_get(j, "engine_counters");
    assert_true(json_is_false(json_object_get(ec, "present")));
    assert_string_equal(json_string_value(json_object_get(ec, "why")), "not read (asked)");
    json_decref(j);
}

/* --emit-stamps at 100 concurrent streams: every token of every stream is matched to the stamp
 * of the chunk that brought it (the sim stamps every chunk it writes), none is missing, no stamp
 * is later than its chunk's arrival or earlier than the one before; the timing error is a
 * histogram over exactly those tokens. No timing threshold: the figure is bench_timing's. And
 * the check can fail: the same client against a sim that stamps nothing finds every token
 * chunk unstamped and exits 1. */
static void test_emit_stamps_against_sim(void **state)
{
    (void)state;
    g_dir = swt_tmpdir();
    const char *stamps[] = {
        "--emit-stamps", "--decode-base-us", "2000", "--decode-seq-us", "0", NULL};
    int port = start_sim_with(g_dir, stamps);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct swt_run r;
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "0", "--tg", "40", "--repeat", "1",
                "--concurrency", "100", "--emit-stamps", "--samples", "--json", NULL);
    if (r.status)
        fail_msg("bench exited %d: %s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    json_t *pt = json_array_get(json_object_get(j, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(pt, "failed")), 0);
    assert_int_equal(json_integer_value(json_object_get(pt, "completion_tokens")), 100 * 40);
    json_t *te = json_object_get(pt, "timing_error");
    assert_non_null(te);
    assert_int_equal(json_integer_value(json_object_get(te, "matched")), 100 * 40);
    assert_int_equal(json_integer_value(json_object_get(te, "n")), 100 * 40);
    assert_int_equal(json_integer_value(json_object_get(te, "missing")), 0);
    assert_int_equal(json_integer_value(json_object_get(te, "bad")), 0);
    /* a delay is never negative and never longer than the whole point */
    double max_ms = json_number_value(json_object_get(te, "max_ms"));
    assert_true(json_number_value(json_object_get(te, "min_ms")) >= 0);
    assert_true(max_ms <= json_number_value(json_object_get(pt, "wall_s")) * 1e3);
    /* the client's own cost: its loop's thread ran for part of the point's wall time */
    json_t *cl = json_object_get(pt, "client");
    double util = json_number_value(json_object_get(cl, "loop_utilisation"));
    assert_true(util > 0 && util <= 1.001);
    assert_true(json_number_value(json_object_get(cl, "cpu_per_token_us")) > 0);
    json_t *samples = json_object_get(pt, "samples");
    assert_int_equal(json_array_size(samples), 100);
    size_t i;
    json_t *s;
    json_array_foreach(samples, i, s)
    {
        json_t *em = json_object_get(s, "emit");
        assert_int_equal(json_integer_value(json_object_get(em, "matched")), 40);
        assert_int_equal(json_integer_value(json_object_get(em, "missing")), 0);
        assert_int_equal(json_integer_value(json_object_get(em, "bad")), 0);
    }
    json_decref(j);

    /* --threads 2: the 100 streams on two loops, every token still matched, each request once,
     * the engine's counters equal to the client's sums over both threads' samples */
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "0", "--tg", "20", "--repeat", "2",
                "--concurrency", "100", "--threads", "2", "--emit-stamps", "--json", NULL);
    if (r.status)
        fail_msg("bench --threads 2 exited %d: %s", r.status, r.err);
    j = swt_json_out(&r);
    swt_run_free(&r);
    pt = json_array_get(json_object_get(j, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(pt, "requests")), 200);
    assert_int_equal(json_integer_value(json_object_get(pt, "failed")), 0);
    assert_int_equal(json_integer_value(json_object_get(pt, "completion_tokens")), 200 * 20);
    te = json_object_get(pt, "timing_error");
    assert_int_equal(json_integer_value(json_object_get(te, "matched")), 200 * 20);
    assert_int_equal(json_integer_value(json_object_get(te, "n")), 200 * 20);
    assert_int_equal(json_integer_value(json_object_get(te, "missing")), 0);
    assert_int_equal(json_integer_value(json_object_get(te, "bad")), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pt, "itl_token"), "n")),
                     200 * 19);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pt, "client"), "threads")),
                     2);
    assert_true(
        json_is_true(json_object_get(json_object_get(j, "engine_counters"), "counts_agree")));
    json_decref(j);
    /* an open-loop run on two loops: the schedule's 40 arrivals (constant, 40/s over 1 s)
     * each sent once, every one with its own send lag, stamped and matched, and the engine's
     * counters equal to the client's sums over both threads (the lag bound loose: seven other
     * builds share these two cores, and the lag's size is not what this checks) */
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--rate", "40", "--duration", "1s",
                "--arrival", "constant", "--tg", "8", "--threads", "2", "--emit-stamps",
                "--max-lag", "1000", "--samples", "--json", NULL);
    if (r.status)
        fail_msg("bench --rate --threads 2 exited %d: %s%s", r.status, r.out, r.err);
    j = swt_json_out(&r);
    swt_run_free(&r);
    pt = json_array_get(json_object_get(j, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(pt, "requests")), 40);
    assert_int_equal(json_integer_value(json_object_get(pt, "failed")), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pt, "client"), "threads")),
                     2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pt, "send_lag"), "n")), 40);
    te = json_object_get(pt, "timing_error");
    assert_int_equal(json_integer_value(json_object_get(te, "matched")), 40 * 8);
    assert_int_equal(json_integer_value(json_object_get(te, "missing")), 0);
    samples = json_object_get(pt, "samples");
    assert_int_equal(json_array_size(samples), 40);
    json_array_foreach(samples, i, s)
    {
        assert_int_equal(json_integer_value(json_object_get(s, "index")), (json_int_t)i);
        assert_true(json_number_value(json_object_get(s, "send_lag_ms")) >= 0);
    }
    assert_true(
        json_is_true(json_object_get(json_object_get(j, "engine_counters"), "counts_agree")));
    assert_true(
        json_number_value(json_object_get(json_object_get(j, "open_loop"), "rate_achieved")) > 30);
    json_decref(j);

    /* the table's line */
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "0", "--tg", "8", "--repeat", "1",
                "--concurrency", "4", "--emit-stamps", "-q", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "timing error (arrival - emit): p50 "));
    assert_non_null(strstr(r.out, "ms over 32 tokens (0 chunks unstamped, 0 stamps not theirs)"));
    assert_non_null(strstr(r.out, "client: event loop busy "));
    swt_run_free(&r);
    int st;
    kill(g_pid, SIGKILL);
    waitpid(g_pid, &st, 0);
    g_pid = 0;

    /* a sim that stamps nothing: every token chunk is unstamped, the run fails */
    port = start_sim(g_dir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "0", "--tg", "8", "--repeat", "1",
                "--concurrency", "4", "--emit-stamps", "--json", NULL);
    assert_int_equal(r.status, 1);
    j = swt_json_out(&r);
    swt_run_free(&r);
    te = json_object_get(json_array_get(json_object_get(j, "points"), 0), "timing_error");
    assert_int_equal(json_integer_value(json_object_get(te, "matched")), 0);
    assert_int_equal(json_integer_value(json_object_get(te, "missing")), 32);
    json_decref(j);
}

/* The decode roofline of a vLLM fleet endpoint, end to end: `slipway sim ENDPOINT FLEET` serves
 * it, `slipway bench ENDPOINT --fleet FLEET` plans it and judges each point. The checkpoint is
 * here: a Llama-8B config and one safetensors file whose header maps 16,060,522,496 B (sparse:
 * nothing is written past the header) as the embedding table, the lm head and the layers. The
 * device declares 1 TB/s. Worked:
 *   weights a token: 16,060,522,496 - 1,050,673,152 (embed_tokens, untied) = 15,009,849,344
 *   KV a context token (vLLM's specs, bf16): 32 layers x 8 KV heads x 128 x (K + V) x 2 B
 *     = 131,072
 *   ceiling at depth d: 1e12 / (15,009,849,344 + 131,072 d): 66.62 tok/s at 0
 * The sim decodes a token every 20 ms (50 tok/s): about 75% of the roof. */
static void test_roofline_against_sim(void **state)
{
    (void)state;
    g_dir = swt_tmpdir();
    char model[4200], fleet[4200], yaml[8192], listen[64];
    snprintf(model, sizeof(model), "%s/m", g_dir);
    mkdir(model, 0700);
    swt_write_str(swt_join(model, "config.json"), SWT_LLAMA8B_CONFIG);
    static const char hdr[] =
        "{\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[128256,4096],"
        "\"data_offsets\":[0,1050673152]},"
        "\"lm_head.weight\":{\"dtype\":\"BF16\",\"shape\":[128256,4096],"
        "\"data_offsets\":[1050673152,2101346304]},"
        "\"model.layers.weight\":{\"dtype\":\"BF16\",\"shape\":[6979588096],"
        "\"data_offsets\":[2101346304,16060522496]}}";
    const char *st = swt_join(model, "model.safetensors");
    int fd = open(st, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    uint64_t hl = sizeof(hdr) - 1;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(hl >> (8 * i));
    assert_int_equal(write(fd, le, 8), 8);
    assert_int_equal(write(fd, hdr, hl), (ssize_t)hl);
    assert_int_equal(ftruncate(fd, (off_t)(8 + hl + 16060522496ull)), 0);
    close(fd);
    int port = swt_free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(yaml, sizeof(yaml),
             SWT_FLEET_HERE_GPU(
                 "1TB/s") "endpoints:\n"
                          "  roofed:\n"
                          "    host: here\n"
                          "    devices: [g0]\n"
                          "    engine: vllm\n"
                          "    listen: %s\n"
                          "    payload: {path: %s}\n"
                          "    shape: {max_model_len: 32768, kv_cache_bytes: 4GiB, seqs: 4}\n",
             listen, model);
    snprintf(fleet, sizeof(fleet), "%s", swt_join(g_dir, "fleet.yaml"));
    swt_write_str(fleet, yaml);
    const char *argv[] = {
        swt_bin(), "sim",         "roofed", "--fleet",          fleet,   "--listen",
        listen,    "--load-time", "0",      "--decode-base-us", "20000", "--decode-seq-us",
        "0",       NULL};
    assert_int_equal(spawn_sim(g_dir, argv), port);
    struct swt_run r;
    char svg[4300];
    snprintf(svg, sizeof(svg), "%s", swt_join(g_dir, "roof.svg"));
    swt_slipway(&r, "bench", "roofed", "--fleet", fleet, "--depth", "64,2048", "--tg", "16",
                "--repeat", "2", "--svg", svg, "--json", NULL);
    if (r.status)
        fail_msg("bench exited %d: %s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    json_t *roof = json_object_get(j, "roofline");
    if (!json_is_true(json_object_get(roof, "known")))
        fail_msg("no roofline: %s", json_string_value(json_object_get(roof, "why")));
    assert_true(json_number_value(json_object_get(roof, "weight_bytes")) == 15009849344.0);
    assert_true(json_number_value(json_object_get(roof, "total_weight_bytes")) == 16060522496.0);
    assert_true(json_number_value(json_object_get(roof, "kv_bytes_per_token")) == 131072.0);
    assert_true(json_number_value(json_object_get(roof, "state_bytes")) == 0);
    assert_true(json_number_value(json_object_get(roof, "bandwidth")) == 1e12);
    assert_int_equal(json_integer_value(json_object_get(roof, "ranks")), 1);
    assert_non_null(strstr(json_string_value(json_object_get(roof, "weights_from")),
                           "checkpoint (1 safetensors file"));
    json_t *pts = json_object_get(j, "points");
    assert_int_equal(json_array_size(pts), 2);
    double prev = INFINITY;
    for (size_t i = 0; i < 2; i++) {
        json_t *pt = json_array_get(pts, i);
        json_t *pr = json_object_get(pt, "roofline");
        assert_non_null(pr);
        double depth = json_number_value(json_object_get(pr, "depth"));
        double bytes = json_number_value(json_object_get(pr, "bytes_per_token"));
        double ceil_tps = json_number_value(json_object_get(pr, "ceiling_tps"));
        double pct = json_number_value(json_object_get(pr, "pct"));
        double med =
            json_number_value(json_object_get(json_object_get(pt, "decode_tps"), "median"));
        print_message("depth %.0f: %.0f B a token, ceiling %.3f tok/s, decode %.2f = %.1f%%\n",
                      depth, bytes, ceil_tps, med, pct);
        /* the sim's prompt tokens are the synthetic prompt's, near what was asked */
        assert_true(depth > (i ? 2048 : 64) * 0.9 && depth < (i ? 2048 : 64) * 1.2);
        assert_true(bytes == 15009849344.0 + 131072.0 * floor(depth + 0.5));
        assert_true(fabs(ceil_tps - 1e12 / bytes) < 1e-9 * ceil_tps);
        assert_true(ceil_tps < prev && ceil_tps > 60 && ceil_tps < 66.7);
        prev = ceil_tps;
        assert_true(fabs(pct - 100.0 * med / ceil_tps) < 1e-6);
        assert_true(pct > 0 && pct < 100); /* the sim's 50 tok/s is under the roof */
    }
    json_decref(j);
    /* the chart: the roofline panel, each point's % of the ceiling drawn above it */
    assert_true(swt_file_has(svg, "decode roofline by context depth"));
    assert_true(swt_file_has(svg, "ceiling: bandwidth / bytes a token"));
    char *text = NULL;
    size_t tlen = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(svg, 16u << 20, &text, &tlen, &e), 0);
    size_t nlab = 0;
    for (const char *q = strstr(text, "class=\"label\""); q; q = strstr(q + 1, "class=\"label\""))
        nlab++;
    sw_free(text);
    assert_int_equal(nlab, 2);

    /* the table says it per point, and the roof's sources once */
    swt_slipway(&r, "bench", "roofed", "--fleet", fleet, "--depth", "64", "--tg", "8", "--repeat",
                "1", "-q", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "        roofline: 150"));
    assert_non_null(strstr(r.out, " MB a token at depth "));
    assert_non_null(strstr(r.out, " tok/s; decode "));
    assert_non_null(strstr(r.out, "roofline: 15.01 GB of weights read a token (of 16.06), KV "
                                  "131072 B a context token, state 0 B, at 1000.0 GB/s; "
                                  "weights: checkpoint (1 safetensors file"));
    swt_run_free(&r);
}

/* A point's completion tokens and its per-token / per-chunk gap counts. */
static void point_counts(json_t *doc, json_int_t *tokens, json_int_t *itl_tok,
                         json_int_t *itl_chunk)
{
    json_t *p = json_array_get(json_object_get(doc, "points"), 0);
    *tokens = json_integer_value(json_object_get(p, "completion_tokens"));
    *itl_tok = json_integer_value(json_object_get(json_object_get(p, "itl_token"), "n"));
    *itl_chunk = json_integer_value(json_object_get(json_object_get(p, "itl_chunk"), "n"));
}

/* Speculative decoding end to end: the sim drafts 2 tokens a decode step and keeps position 0
 * with probability 0.71 and position 1 with 0.44 (the operator's MTP-2 figures), so a chunk
 * brings 1 to 3 tokens. vLLM: bench counts tokens from usage (5 x 64, equal to the engine's
 * counter), not chunks (fewer gaps per chunk than per token), and reads the acceptance per
 * position from the engine's counters: within 0.08 of the declared rates over ~150 seeded
 * drafts. SGLang: its two gauges give the tokens kept a step (1 + 0.71 + 0.44 = 2.15) and the
 * share of drafts kept (0.575), no per-position figure. */
static void test_spec_decode_against_sim(void **state)
{
    (void)state;
    g_dir = swt_tmpdir();
    const char *extra[] = {"--spec-accept", "0.71,0.44", NULL};
    int port = start_sim_with(g_dir, extra);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct swt_run r;
    swt_slipway(&r, "bench", url, "--engine", "vllm", "--depth", "64", "--tg", "64", "--repeat",
                "5", "--json", NULL);
    if (r.status)
        fail_msg("bench exited %d: %s", r.status, r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    json_int_t tokens, itl_tok, itl_chunk;
    point_counts(j, &tokens, &itl_tok, &itl_chunk);
    assert_int_equal(tokens, 5 * 64);
    assert_int_equal(itl_tok, 5 * 63);
    assert_true(itl_chunk < itl_tok * 3 / 4); /* ~1.6 tokens a chunk */
    json_t *ec = json_object_get(j, "engine_counters");
    assert_true(json_is_true(json_object_get(ec, "counts_agree")));
    json_t *sd = json_object_get(ec, "spec_decode");
    json_t *pos = json_object_get(sd, "acceptance_per_pos");
    assert_int_equal(json_array_size(pos), 2);
    double a0 = json_number_value(json_array_get(pos, 0));
    double a1 = json_number_value(json_array_get(pos, 1));
    print_message("vLLM sim, declared 0.71 / 0.44: bench read %.3f / %.3f over %.0f drafts\n", a0,
                  a1, json_number_value(json_object_get(sd, "drafts")));
    assert_true(fabs(a0 - 0.71) < 0.08);
    assert_true(fabs(a1 - 0.44) < 0.08);
    /* the drafts are the decode steps: one per token after the first, less what they kept */
    assert_true(json_number_value(json_object_get(sd, "accepted")) +
                    json_number_value(json_object_get(sd, "drafts")) >=
                5 * 63);
    json_decref(j);
    kill(-g_pid, SIGTERM);
    int st;
    waitpid(g_pid, &st, 0);
    g_pid = 0;

    /* SGLang */
    char model[4200];
    snprintf(model, sizeof(model), "%s/m", g_dir);
    const char *argv[] = {swt_bin(),
                          "sim",
                          "--engine",
                          "sglang",
                          "--load-time",
                          "0",
                          "--spec-accept",
                          "0.71,0.44",
                          "--",
                          "python",
                          "-m",
                          "sglang.launch_server",
                          "--model-path",
                          model,
                          "--context-length",
                          "8192",
                          "--max-total-tokens",
                          "50000",
                          "--enable-metrics",
                          NULL};
    port = spawn_sim(g_dir, argv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    swt_slipway(&r, "bench", url, "--engine", "sglang", "--depth", "64", "--tg", "64", "--repeat",
                "5", "--json", NULL);
    if (r.status)
        fail_msg("bench exited %d: %s", r.status, r.err);
    j = swt_json_out(&r);
    swt_run_free(&r);
    ec = json_object_get(j, "engine_counters");
    assert_string_equal(json_string_value(json_object_get(ec, "engine")), "sglang");
    assert_true(json_is_true(json_object_get(ec, "counts_agree")));
    sd = json_object_get(ec, "spec_decode");
    double len = json_number_value(json_object_get(sd, "accept_length"));
    double acc = json_number_value(json_object_get(sd, "acceptance"));
    print_message("SGLang sim: accept length %.3f (declared 2.15), acceptance %.3f (0.575)\n", len,
                  acc);
    assert_true(fabs(len - 2.15) < 0.15);
    assert_true(fabs(acc - 0.575) < 0.08);
    assert_true(json_is_null(json_object_get(sd, "acceptance_per_pos")));
    json_decref(j);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_counters_against_sim, teardown),
        cmocka_unit_test_teardown(test_emit_stamps_against_sim, teardown),
        cmocka_unit_test_teardown(test_roofline_against_sim, teardown),
        cmocka_unit_test_teardown(test_spec_decode_against_sim, teardown),
    };
    return cmocka_run_group_tests_name("bench_sim", tests, NULL, NULL);
}
