/*
 * rollout without a host: what happens before anything on a host is reached. A gate failure (a
 * fleet known_bad rule) ends the deploy as gate_failed naming the gate, with one recorded step
 * and no downtime, for an endpoint whose host could not even be reached (an ssh host on a
 * closed port: nothing was tried); an endpoint without a host is refused; the result's JSON
 * keeps its shape. The pipeline on a real host is tests/real/test_rollout.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/rollout.h>

#include "swtest.h"

#include <stdio.h>
#include <string.h>

static const char fleet_text[] = "version: 1\n"
                                 "hosts:\n"
                                 "  far:\n"
                                 "    transport: {kind: ssh, address: 127.0.0.1, port: 1, user: "
                                 "nobody}\n"
                                 "    devices:\n"
                                 "      cpu: {kind: cpu, vendor: cpu}\n"
                                 "endpoints:\n"
                                 "  ro:\n"
                                 "    host: far\n"
                                 "    engine: llama.cpp\n"
                                 "    binary: /opt/llama/bin/llama-server\n"
                                 "    runtime: native\n"
                                 "    listen: 127.0.0.1:1\n"
                                 "    payload: {path: /models/chat.gguf, quantization: f32}\n"
                                 "    shape: {ctx_size: 2048, seqs: 1, n_gpu_layers: 0}\n"
                                 "    known_bad:\n"
                                 "      - when: ctx_size == 2048\n"
                                 "        failure: oom\n"
                                 "        text: died at kv_alloc\n";

static struct sw_fleet *load(void)
{
    return swt_fleet_text("ro.yaml", fleet_text);
}

static void test_gate_failure_reaches_no_host(void **state)
{
    (void)state;
    struct sw_fleet *f = load();
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "ro");
    assert_non_null(ep);
    struct sw_rollout_opts o = {0};
    struct sw_rollout_result r;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_rollout_deploy(f, ep, &o, &r, &e), 0);
    assert_int_equal(r.outcome, SW_ROLLOUT_GATE_FAILED);
    assert_string_equal(sw_rollout_outcome_name(r.outcome), "gate_failed");
    assert_string_equal(r.failed_step, "gate");
    assert_string_equal(r.fail_class, "gate:known_bad");
    assert_non_null(strstr(r.fail_msg, "died at kv_alloc"));
    assert_int_equal(r.downtime_ms, -1);
    assert_false(r.stopped);
    assert_false(r.serving);
    assert_int_equal(json_array_size(r.steps), 1);
    json_t *j = sw_rollout_result_json(&r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "outcome")), "gate_failed");
    assert_true(json_is_null(json_object_get(j, "downtime_ms")));
    assert_true(json_is_object(json_object_get(j, "gates")));
    assert_true(json_is_null(json_object_get(j, "journal")));
    json_decref(j);
    sw_rollout_result_free(&r);
    sw_rollout_result_free(&r); /* twice is fine: it was zeroed */
    sw_fleet_free(f);
}

/* The same known-bad rule, waived by the fleet: the gates pass on the operator's word, and the
 * attempt the ledger keeps records the waiver it went through (a "waiver" step after "gate",
 * with the reason, the day and the fleet line), however the rest of the deploy ends (here: a
 * host that cannot be reached). */
static void test_waiver_recorded(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof(text), "%s%s", fleet_text,
             "    waive:\n"
             "      - {gate: known_bad, reason: \"the kv_alloc death was a bad card\", "
             "until: 2099-12-31}\n");
    struct sw_err e;
    struct sw_fleet *f = swt_fleet_text("ro.yaml", text);
    char *dir = swt_tmpdir();
    struct sw_ledger l;
    assert_int_equal(sw_ledger_open(&l, swt_join(dir, "l.sqlite"), NULL, &e), 0);
    struct sw_rollout_opts o = {.ledger = &l, .record = true, .deadline_ms = 2000};
    struct sw_rollout_result r;
    /* the closed port ends it after the gates (an error reaching the host, or a failure) */
    int rc = sw_rollout_deploy(f, sw_fleet_endpoint(f, "ro"), &o, &r, &e);
    assert_true(rc == 0 || rc == SW_ENET);
    assert_int_not_equal(r.outcome, SW_ROLLOUT_GATE_FAILED);
    assert_string_equal(json_string_value(json_object_get(r.gates, "verdict")), "pass");
    const json_t *st = json_array_get(r.steps, 0);
    assert_string_equal(json_string_value(json_object_get(st, "step")), "gate");
    assert_non_null(strstr(json_string_value(json_object_get(st, "detail")),
                           "WAIVED: known_bad until 2099-12-31 (\"the kv_alloc death"));
    assert_true(r.attempt > 0);
    json_t *a = NULL;
    assert_int_equal(sw_ledger_deploy_get(&l, r.attempt, &a, &e), 0);
    const json_t *steps = json_object_get(a, "steps");
    size_t i, nw = 0;
    json_t *x;
    json_array_foreach(steps, i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "name")), "waiver"))
            continue;
        nw++;
        const json_t *d = json_object_get(x, "detail");
        assert_string_equal(json_string_value(json_object_get(d, "gate")), "known_bad");
        assert_string_equal(json_string_value(json_object_get(d, "reason")),
                            "the kv_alloc death was a bad card");
        assert_string_equal(json_string_value(json_object_get(d, "until")), "2099-12-31");
        assert_int_equal(json_integer_value(json_object_get(d, "line")), 21); /* its list item */
        assert_string_equal(json_string_value(json_object_get(x, "outcome")), "ok");
    }
    assert_int_equal(nw, 1);
    json_decref(a);
    sw_rollout_result_free(&r);
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
    sw_fleet_free(f);
}

static void test_no_host_refused(void **state)
{
    (void)state;
    struct sw_fleet *f = load();
    struct sw_fleet_endpoint ep = *sw_fleet_endpoint(f, "ro");
    ep.host = NULL;
    struct sw_rollout_result r;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_rollout_deploy(f, &ep, NULL, &r, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "no host"));
    sw_rollout_result_free(&r);
    assert_int_equal(sw_rollout_rollback(f, &ep, NULL, &r, &e), SW_EINVAL);
    sw_rollout_result_free(&r);
    sw_fleet_free(f);
}

static void test_outcome_names(void **state)
{
    (void)state;
    const char *want[] = {"none",    "committed",   "dry_run",         "gate_failed",
                          "refused", "rolled_back", "rollback_failed", "restored"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(sw_rollout_outcome_name((enum sw_rollout_outcome)i), want[i]);
    assert_string_equal(sw_rollout_outcome_name((enum sw_rollout_outcome)99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_failure_reaches_no_host),
        cmocka_unit_test(test_waiver_recorded),
        cmocka_unit_test(test_no_host_refused),
        cmocka_unit_test(test_outcome_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
