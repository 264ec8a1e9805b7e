/*
 * Real tier: `slipway ladder --runner rollout` (src/tune/ladder_run.c sw_ladder_run_rollout): every
 * rung a real deploy on a real test host (scripts/testhost.sh sw-la-a, 169.254.28.2: systemd,
 * journald, sshd) running the pinned llama-server as the endpoint's systemd unit, with the
 * worst-case request as the rung's verdict. The grid is ctx_size 256..512 (two values, no
 * memory limit: both survive), so the ladder boots 256 (the grid's median), then 512, and stops
 * at the range's end. What it checks: 2 boots, each rung committed by the rollout (its attempt
 * and tag recorded by the rollout) after the worst case passed, the unit left serving the
 * answer's shape (its ExecStart has `-c 512` or `--ctx-size 512`), and a rerun resuming every
 * rung from the ledger with no boot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swthost.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR "169.254.28.2"
#define HOST "sw-la-a"
#define UNIT "slipway-la.service"

/* slipway ladder la FLEET --runner rollout ... --json: the parsed result (the run's stderr, its
 * progress view, printed) */
static json_t *ladder(struct swth_fx *f, int *status)
{
    struct swt_run r;
    swt_slipway(&r, "ladder", "la", "--fleet", f->fleet, "--runner", "rollout", "--ledger", f->led,
                "--probe-timeout", "300s", "--boot-timeout", "300s", "--json", NULL);
    *status = r.status;
    if (r.err && r.err[0])
        print_message("stderr: %s\n", r.err);
    json_t *j = swt_json_out(&r);
    if (!j)
        fail_msg("ladder exited %d, no JSON: %.2000s", r.status, r.out ? r.out : "");
    swt_run_free(&r);
    return j;
}

static void test_rollout_rungs(void **state)
{
    struct swth_fx *f = *state;
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/models", swth_gm.dir);
    const char *binds[] = {bind, NULL};
    swth_fx_up(f, HOST, ADDR, binds, "ladder.sqlite");
    char text[4096];
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  la-a:\n"
             "    transport: {kind: ssh, address: " ADDR ", user: root, identity_file: %s, "
             "known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             "endpoints:\n"
             "  la:\n"
             "    host: la-a\n"
             "    engine: llama.cpp\n"
             "    binary: /opt/llama/bin/llama-server\n"
             "    runtime: native\n"
             "    listen: 127.0.0.1:%d\n"
             "    alias: la-tiny\n"
             "    payload:\n"
             "      path: /models/chat.gguf\n"
             "      quantization: f32\n"
             "    shape:\n"
             "      ctx_size: 256\n"
             "      seqs: 1\n"
             "      n_gpu_layers: 0\n"
             "    knobs:\n"
             "      ctx_size: {min: 256, max: 512, step: 256}\n"
             "    service:\n"
             "      restart_sec: 1s\n",
             f->h.key, f->h.known_hosts, f->port);
    swt_write_str(f->fleet, text);

    int st = 0;
    json_t *j = ladder(f, &st);
    if (st)
        fail_msg("ladder exited %d: %s", st, json_string_value(json_object_get(j, "why_stopped")));
    json_t *rungs = json_object_get(j, "rungs");
    assert_int_equal(json_integer_value(json_object_get(j, "answer")), 512);
    assert_true(json_is_true(json_object_get(j, "converged")));
    assert_int_equal(json_integer_value(json_object_get(j, "boots")), 2);
    assert_int_equal(json_array_size(rungs), 2);
    static const int64_t want[] = {256, 512};
    for (size_t i = 0; i < 2; i++) {
        const json_t *g = json_array_get(rungs, i);
        assert_int_equal(json_integer_value(json_object_get(g, "value")), want[i]);
        assert_string_equal(json_string_value(json_object_get(g, "class")), "pass");
        assert_true(json_is_true(json_object_get(g, "booted")));
        /* each rung a committed rollout (its attempt and tag are the rollout's records) */
        const char *d = json_string_value(json_object_get(g, "detail"));
        if (!d || !strstr(d, "committed as la-") || !strstr(d, "worst case passed"))
            fail_msg("rung %zu: %s", i + 1, d ? d : "(no detail)");
    }
    json_decref(j);

    /* the unit on the host runs the answer's shape */
    struct swt_run r;
    assert_int_equal(swth_ssh(&f->h, "systemctl cat " UNIT, NULL, 60, &r), 0);
    if (r.status || (!strstr(r.out, "-c 512") && !strstr(r.out, "--ctx-size 512")))
        fail_msg("%s: the unit does not run ctx 512:\n%s%s", HOST, r.out, r.err);
    swt_run_free(&r);
    assert_int_equal(swth_wait(&f->h, "systemctl is-active " UNIT, 60, NULL), 0);

    /* a rerun: every rung resumed from the ledger, no boot */
    j = ladder(f, &st);
    assert_int_equal(st, 0);
    assert_int_equal(json_integer_value(json_object_get(j, "boots")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "boots_total")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "answer")), 512);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rollout_rungs, swth_fx_setup, swth_fx_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
