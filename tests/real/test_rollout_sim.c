/*
 * Real tier: `slipway deploy` of a vLLM endpoint on a real test host (scripts/testhost.sh:
 * systemd, journald, sshd on 169.254.32.2), the engine being slipway's simulator: vLLM needs a GPU
 * this machine does not have, so the endpoint's binary is a wrapper that runs `slipway sim
 * --engine vllm -- vllm serve ...` with the unit's argv (the copy of this build's binary and the
 * libraries it links bound read-only at /opt/sim). The rollout does not know: it renders vLLM's
 * argv, follows the journal with vLLM's boot-log parser, probes vLLM's HTTP surface and reads its
 * exit the way it reads vLLM's. One host, one test, in order:
 *   (a) a baseline deploy commits with the full battery (worst case included);
 *   (b) a shape whose engine serves /health but answers every generation with its 500 (the
 *       sim's http_500 fault, set through the unit's environment) fails at liveness as a dead
 *       generation path and rolls back;
 *   (c) a shape whose API server exits 0 once up (vLLM after its engine died: the exit0 fault)
 *       fails as engine_dead_exit0 (vLLM's EngineDeadError lines, read by its boot-log parser),
 *       not as a clean stop, and rolls back;
 *   (d) the seed's signature failure: a shape that boots and passes readiness and liveness, then
 *       dies on the worst-case request (3,584 prompt tokens + the rest of the 7,168 window, past
 *       the sim's declared runtime headroom of 5,000; every other check stays under it) with
 *       torch.OutOfMemoryError in the engine: classified runtime_oom from the engine's own line
 *       (no kernel OOM), rolled back, and the rolled-back shape serves.
 * Then SGLang on the same host, with no trace of the vLLM endpoint left (swro_up_shared removes
 * slipway's units, env files, rollout state and locks), the same way: a baseline commits; the
 * worst case's OOM (SGLang's scheduler exception, its launcher's sigquit, status 137) is
 * runtime_oom, rolled back. Every failed deploy leaves the last-good shape serving and nothing
 * staged. The host comes down in the group's teardown, also when a check fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct swro_site site = {"sw-rs-a", "169.254.32.2", "rs-a", "rs"};
static char *g_root; /* the bound directory, removed by the group's teardown */

/* The shared host down (swro_group_teardown), then the directory it had bound removed. */
static int group_teardown(void **state)
{
    int rc = swro_group_teardown(state);
    if (g_root)
        swt_tmpdir_free(g_root);
    g_root = NULL;
    return rc;
}

/* dir/ gets the slipway binary, dir/lib/ every library it links but the C library and the
 * loader (the host's Debian has the same ones), dir/vllm the wrapper, dir/model/config.json. */
static void make_simroot(const char *dir)
{
    char lib[4200], cmd[8400];
    snprintf(lib, sizeof(lib), "%s/lib", dir);
    assert_int_equal(mkdir(lib, 0755), 0);
    snprintf(cmd, sizeof(cmd), "%s/model", dir);
    assert_int_equal(mkdir(cmd, 0755), 0);
    swt_write_str(swt_join(cmd, "config.json"), SWT_LLAMA8B_CONFIG);
    const char *cp[] = {"cp", swt_bin(), swt_join(dir, "slipway"), NULL};
    struct swt_run r;
    assert_int_equal(swt_run(cp, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    const char *ldd[] = {"ldd", swt_bin(), NULL};
    assert_int_equal(swt_run(ldd, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    int copied = 0;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        char *arrow = strstr(line, "=> /");
        if (!arrow)
            continue;
        char path[1024];
        if (sscanf(arrow + 3, "%1023s", path) != 1)
            continue;
        char copy[1100];
        snprintf(copy, sizeof(copy), "%s", path);
        const char *base = basename(copy);
        if (!strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8))
            continue;
        const char *c[] = {"cp", "-L", path, lib, NULL};
        struct swt_run rc;
        assert_int_equal(swt_run(c, NULL, 60, &rc), 0);
        assert_int_equal(rc.status, 0);
        swt_run_free(&rc);
        copied++;
    }
    swt_run_free(&r);
    assert_true(copied > 3);
    /* the engine vLLM would be: the unit's argv after the binary is `serve MODEL [flags]` */
    snprintf(cmd, sizeof(cmd), "%s/vllm", dir);
    swt_write_str(cmd,
                  "#!/bin/sh\n"
                  "# slipway's simulator standing in for vLLM (tests/real/test_rollout_sim.c)\n"
                  "export LD_LIBRARY_PATH=/opt/sim/lib ASAN_OPTIONS=detect_leaks=0\n"
                  "exec /opt/sim/slipway sim --engine vllm --device-memory 24GiB --weights "
                  "16GiB --load-time 1s $SIM_FLAGS -- vllm \"$@\"\n");
    assert_int_equal(chmod(cmd, 0755), 0);
    /* and the engine SGLang would be: the unit's argv after the binary is its flags */
    snprintf(cmd, sizeof(cmd), "%s/sglang", dir);
    swt_write_str(cmd,
                  "#!/bin/sh\n"
                  "# slipway's simulator standing in for SGLang (tests/real/test_rollout_sim.c)\n"
                  "export LD_LIBRARY_PATH=/opt/sim/lib ASAN_OPTIONS=detect_leaks=0\n"
                  "exec /opt/sim/slipway sim --engine sglang --load-time 1s $SIM_FLAGS -- "
                  "python3 -m sglang.launch_server \"$@\"\n");
    assert_int_equal(chmod(cmd, 0755), 0);
    assert_int_equal(chmod(swt_join(dir, "slipway"), 0755), 0);
}

/* The fleet: endpoint rs, vLLM (or SGLang, with a pinned pool of 4 x ctx tokens) natively
 * through the wrapper, max_model_len ctx, the sim's flags in the unit's environment. */
static void write_fleet_engine(struct swro *f, const char *engine, int ctx, const char *sim_flags)
{
    bool sglang = !strcmp(engine, "sglang");
    char pool[64] = "", text[4096];
    /* the host's own loopback, as the operator binds his engines: slipway goes through the host */
    snprintf(f->listen, sizeof(f->listen), "127.0.0.1");
    if (sglang)
        snprintf(pool, sizeof(pool), ", max_total_tokens: %d", 4 * ctx);
    int h = swro_fleet_head(f, "g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}", text,
                            sizeof(text));
    assert_true(h > 0 && (size_t)h < sizeof(text));
    int n = h + snprintf(text + h, sizeof(text) - (size_t)h,
                         "  %s:\n"
                         "    host: %s\n"
                         "    devices: [g0]\n"
                         "    engine: %s\n"
                         "    binary: /opt/sim/%s\n"
                         "    runtime: native\n"
                         "    listen: %s:%d\n"
                         "    alias: rs-8b\n"
                         "    payload: {path: /opt/sim/model}\n"
                         "    shape: {max_model_len: %d, seqs: 2%s}\n"
                         "%s"
                         "    env:\n"
                         "      SIM_FLAGS: \"%s\"\n"
                         "    service:\n"
                         "      restart_sec: 1s\n",
                         f->endpoint, f->fleet_host, engine, engine, f->listen, f->port, ctx, pool,
                         sglang ? "    args: [--enable-metrics]\n" : "", sim_flags);
    assert_true(n > 0 && (size_t)n < sizeof(text));
    swt_write_str(f->fleet, text);
}

static void write_fleet(struct swro *f, int ctx, const char *sim_flags)
{
    write_fleet_engine(f, "vllm", ctx, sim_flags);
}

/* The shared host (booted by the first test, kept for the next with slipway's state removed:
 * swro_up_shared) with this build's sim bound at /opt/sim (made once, removed by the group's
 * teardown). */
static void sim_host_up(struct swro *f)
{
    swt_need(swth_missing()[0] == '\0', "%s", swth_missing());
    if (!g_root) {
        g_root = swt_tmpdir();
        make_simroot(g_root);
    }
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/opt/sim", g_root);
    swro_up_shared_binds(f, &site, bind);
}

/* A deploy with the full battery: its result (json_decref), its exit in *st. */
static json_t *deploy(struct swro *f, int *st)
{
    json_t *j = swro_run(f, st, "deploy", NULL);
    swro_print_steps(j);
    print_message("outcome=%s step=%s class=%s\n  %s\n  rollback: %s\n", swro_str(j, "outcome"),
                  swro_str(j, "failed_step"), swro_str(j, "fail_class"), swro_str(j, "fail_msg"),
                  swro_str(j, "rollback"));
    return j;
}

/* The baseline (max_model_len 4096, no sim flags) commits with the full battery, serves, and
 * its unit runs what `live` says. */
static void baseline(struct swro *f, const char *engine, const char *live)
{
    write_fleet_engine(f, engine, 4096, "");
    int st = 0;
    json_t *j = deploy(f, &st);
    assert_int_equal(st, 0);
    assert_string_equal(swro_str(j, "outcome"), "committed");
    json_decref(j);
    assert_true(swro_serves(f));
    assert_true(swro_live_has(f, live));
}

/* A failed deploy rolled back: the class and step expected, the last-good shape (max_model_len
 * 4096, no sim flags) live and serving, nothing staged. */
static void rolled_back(struct swro *f, json_t *j, int st, const char *cls, const char *step)
{
    assert_int_not_equal(st, 0);
    assert_string_equal(swro_str(j, "outcome"), "rolled_back");
    assert_string_equal(swro_str(j, "fail_class"), cls);
    if (step)
        assert_string_equal(swro_str(j, "failed_step"), step);
    assert_true(swro_live_has(f, "--max-model-len 4096") ||
                swro_live_has(f, "--context-length 4096"));
    assert_true(swro_serves(f));
    swro_nothing_staged(f);
}

static void test_vllm_through_sim(void **state)
{
    struct swro *f = *state;
    sim_host_up(f);

    /* (a) the baseline, with the worst case */
    baseline(f, "vllm", "/opt/sim/vllm serve /opt/sim/model");
    int st = 0;
    json_t *j;

    /* (b) /health 200, every generation answered 500 (each shape a new one: a failed shape is
     * known-bad to the next deploy) */
    write_fleet(f, 8192, "--fault http_500:1000000");
    j = deploy(f, &st);
    rolled_back(f, j, st, "dead_generation", NULL);
    json_decref(j);

    /* (c) vLLM's API server exits 0 once its engine is gone */
    write_fleet(f, 6144, "--fault exit0");
    j = deploy(f, &st);
    rolled_back(f, j, st, "engine_dead_exit0", NULL); /* vLLM's own words: EngineDeadError */
    json_decref(j);

    /* (d) boots, passes readiness and liveness, dies on the worst case with the engine's
     * torch.OutOfMemoryError: no kernel OOM, the engine's own line names it */
    write_fleet(f, 7168, "--runtime-oom-tokens 5000");
    j = deploy(f, &st);
    rolled_back(f, j, st, "runtime_oom", "probe");
    assert_non_null(strstr(swro_str(j, "fail_msg"), "OutOfMemoryError"));
    json_decref(j);
}

/* SGLang the same way: a baseline commits with the full battery; a shape that dies on the worst
 * case (the scheduler's torch.OutOfMemoryError, the launcher's sigquit, its process tree killed:
 * status 137, systemd restarts it) is runtime_oom from the engine's own line, rolled back. */
static void test_sglang_through_sim(void **state)
{
    struct swro *f = *state;
    sim_host_up(f);

    baseline(f, "sglang", "/opt/sim/sglang --model-path /opt/sim/model");
    int st = 0;
    json_t *j;

    write_fleet_engine(f, "sglang", 7168, "--runtime-oom-tokens 5000");
    j = deploy(f, &st);
    rolled_back(f, j, st, "runtime_oom", "probe");
    assert_non_null(strstr(swro_str(j, "fail_msg"), "OutOfMemoryError"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vllm_through_sim, swro_setup, swro_shared_teardown),
        cmocka_unit_test_setup_teardown(test_sglang_through_sim, swro_setup, swro_shared_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, group_teardown);
}
