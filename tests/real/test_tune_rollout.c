/*
 * Real tier: `slipway tune --runner rollout` (src/tune/tune_probe.c probe_rollout): every probe a
 * real deploy (sw_rollout_deploy: gates, stage, boot, readiness, liveness, the battery's liveness
 * check; rollback on failure) of the candidate on a real test host (scripts/testhost.sh sw-tu-a,
 * 169.254.29.2: systemd, journald, sshd) running the pinned llama-server as the endpoint's systemd
 * unit, then benched at the endpoint's URL on that host.
 *
 * One cheap knob, the thread count {2 (the baseline), 1}, repeats 2 at concurrency 1, a budget of
 * 4 boots (the baseline, the one candidate, and the two a re-measure takes if it wins). What it
 * checks: the report's runner is rollout; every booted probe was a committed deploy whose attempt
 * and tag the ledger holds (`slipway history`), with a finite score; the outcome is crowned (the
 * re-measure against a fresh baseline held) or an honest no_winner with the baseline's and the
 * candidate's figures; the host is left on the chosen shape (the crowned one, or the baseline's
 * put back when the last deploy was the losing candidate's): its unit's ExecStart has that
 * thread count, it is active, and the endpoint answers /health from here.
 *
 * Then, on the same host, a candidate whose engine cannot start (an environment variable naming a
 * file the host lacks; the baseline's names one it holds): that probe's deploy is rolled back
 * (its attempt recorded), the probe is boot_failed with the rollout's class in its why, tune goes
 * on and ends no_winner, and the host serves the baseline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swthost.h"
#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR "169.254.29.2"
#define HOST "sw-tu-a"
#define UNIT "slipway-tu.service"

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Is tag among the ledger's tags of the endpoint (`slipway history tu --ledger LED --json`)? */
static bool ledger_has_tag(const struct swth_fx *f, const char *tag)
{
    struct swt_run r;
    swt_slipway(&r, "history", "tu", "--ledger", f->led, "--json", NULL);
    json_t *j = swt_json_out(&r);
    if (!j)
        fail_msg("history exited %d, no JSON: %.1000s%.1000s", r.status, r.out ? r.out : "",
                 r.err ? r.err : "");
    swt_run_free(&r);
    bool found = false;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(j, "tags"), i, t) found |= !strcmp(str(t, "name"), tag);
    json_decref(j);
    return found;
}

static void write_fleet(const struct swth_fx *f, const char *tail);
static void tune_and_check(struct swth_fx *f, const char *failing);

/* A candidate whose engine cannot start: llama-server reads LLAMA_ARG_UI_CONFIG_FILE while parsing
 * its arguments and exits when the file is missing. The baseline names a file the host holds. */
static void failing_deploy(struct swth_fx *f)
{
    assert_int_equal(swth_put(&f->h, "/etc/tu-ui.json", "{}\n"), 0);
    write_fleet(f, "    env:\n"
                   "      LLAMA_ARG_UI_CONFIG_FILE: /etc/tu-ui.json\n"
                   "    knobs:\n"
                   "      env.LLAMA_ARG_UI_CONFIG_FILE: [/etc/tu-ui.json, /nonexistent/ui.json]\n");
    tune_and_check(f, "env.LLAMA_ARG_UI_CONFIG_FILE=/nonexistent/ui.json");
}

static void test_tune_rollout(void **state)
{
    struct swth_fx *f = *state;
    /* the model at the same path here and on the host: tune plans each candidate here (from the
     * GGUF's header) before the rollout deploys it there */
    const char *binds[] = {swth_gm.dir, NULL};
    swth_fx_up(f, HOST, ADDR, binds, "tune.sqlite");
    write_fleet(f, "    knobs:\n      arg.--threads: ['2', '1']\n");
    tune_and_check(f, NULL);
    failing_deploy(f);
}

static void write_fleet(const struct swth_fx *f, const char *tail)
{
    char text[8192];
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  tu-a:\n"
             "    transport: {kind: ssh, address: " ADDR ", user: root, identity_file: %s, "
             "known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             "endpoints:\n"
             "  tu:\n"
             "    host: tu-a\n"
             "    engine: llama.cpp\n"
             "    binary: /opt/llama/bin/llama-server\n"
             "    runtime: native\n"
             "    listen: 127.0.0.1:%d\n"
             "    alias: tu-tiny\n"
             "    payload:\n"
             "      path: %s\n"
             "      quantization: f32\n"
             "    shape:\n"
             "      ctx_size: 512\n"
             "      seqs: 1\n"
             "      n_gpu_layers: 0\n"
             "    args: [--threads, '2']\n"
             "    service:\n"
             "      restart_sec: 1s\n"
             "%s",
             f->h.key, f->h.known_hosts, f->port, swth_gm.model, tail);
    swt_write_str(f->fleet, text);
}

/* tune --runner rollout on the fleet as written; checks every probe, the outcome and the host's
 * final shape (module comment). failing: the candidate whose deploy must fail (NULL: none) */
static void tune_and_check(struct swth_fx *f, const char *failing)
{
    /* auto picks the rollout for an ssh host; the option says it here */
    struct swt_run r;
    swt_slipway(&r, "tune", "tu", "--fleet", f->fleet, "--runner", "rollout", "--objective",
                "decode_tps@16", "--budget-boots", "4", "--repeats", "2", "--concurrency", "1",
                "--tokens", "8", "--ledger", f->led, "--json", NULL);
    if (r.err && r.err[0])
        print_message("stderr: %s\n", r.err);
    json_t *j = swt_json_out(&r);
    if (r.status || !j)
        fail_msg("tune exited %d: %.3000s", r.status, r.out ? r.out : "");
    swt_run_free(&r);
    assert_string_equal(str(j, "boot"), "rollout");
    const char *oc = str(j, "outcome");
    print_message("outcome %s after %lld boots\n", oc,
                  (long long)json_integer_value(json_object_get(j, "boots")));

    /* every booted probe: a committed deploy, recorded (attempt, tag in the ledger), measured */
    size_t i, booted = 0, nfailed = 0;
    json_t *p;
    json_array_foreach(json_object_get(j, "probes"), i, p)
    {
        const json_t *d = json_object_get(p, "deploy");
        if (!strcmp(str(p, "outcome"), "rejected"))
            fail_msg("probe %s rejected by %s", str(p, "candidate"), str(p, "gate"));
        assert_true(json_is_object(d));
        booted++;
        print_message("probe %lld %s %s: deploy %s attempt %lld tag %s, score %.2f noise %.3f\n",
                      (long long)json_integer_value(json_object_get(p, "seq")), str(p, "phase"),
                      str(p, "candidate"), str(d, "outcome"),
                      (long long)json_integer_value(json_object_get(d, "attempt")), str(d, "tag"),
                      num(p, "score"), num(p, "noise"));
        if (failing && !strcmp(str(p, "candidate"), failing)) {
            /* a deploy that failed: rolled back, the probe a boot failure with the class; the
             * run went on */
            nfailed++;
            assert_string_equal(str(p, "outcome"), "boot_failed");
            if (strcmp(str(d, "outcome"), "rolled_back") || !str(d, "fail_class")[0])
                fail_msg("probe %s: deploy %s (%s), want rolled_back with a class: %s",
                         str(p, "candidate"), str(d, "outcome"), str(d, "fail_class"),
                         str(p, "why"));
            print_message("  why: %.300s\n", str(p, "why"));
            assert_non_null(strstr(str(p, "why"), str(d, "fail_class")));
            assert_true(json_integer_value(json_object_get(d, "attempt")) > 0);
            continue;
        }
        if (strcmp(str(d, "outcome"), "committed"))
            fail_msg("probe %s: deploy %s (%s): %s", str(p, "candidate"), str(d, "outcome"),
                     str(d, "fail_class"), str(p, "why"));
        assert_true(json_integer_value(json_object_get(d, "attempt")) > 0);
        assert_true(!strncmp(str(d, "tag"), "tu-", 3));
        assert_true(ledger_has_tag(f, str(d, "tag")));
        assert_string_equal(str(p, "outcome"), "measured");
        assert_true(num(p, "score") > 0);
    }
    assert_int_equal((long long)booted, json_integer_value(json_object_get(j, "boots")));
    assert_true(booted >= 2);
    assert_int_equal((long long)nfailed, failing ? 1 : 0);

    /* a winner that held, or an honest no_winner with the figures */
    const json_t *base = json_object_get(j, "baseline");
    assert_true(num(base, "score") > 0);
    char want_threads[16] = "2";
    if (!strcmp(oc, "crowned")) {
        const json_t *w = json_object_get(j, "winner");
        assert_true(num(w, "remeasured_gain") > 0);
        assert_string_equal(str(json_object_get(w, "remeasured"), "outcome"), "measured");
        snprintf(want_threads, sizeof(want_threads), "%s",
                 str(json_object_get(w, "settings"), "arg.--threads"));
        assert_string_equal(str(json_object_get(j, "host"), "shape"), "crowned");
    } else {
        assert_string_equal(oc, "no_winner");
        assert_true(json_is_null(json_object_get(j, "winner")));
        const json_t *ru = json_object_get(j, "runner_up");
        if (failing) { /* nothing else measured to compare */
            assert_true(json_is_null(ru));
        } else {
            assert_true(num(ru, "score") > 0);
            assert_true(isfinite(num(ru, "gain")));
            print_message("no winner: baseline %.2f, best candidate %.2f (gain %+.1f%%)\n",
                          num(base, "score"), num(ru, "score"), num(ru, "gain") * 100);
        }
        assert_string_equal(str(json_object_get(j, "host"), "shape"), "baseline");
    }
    const json_t *h = json_object_get(j, "host");
    print_message("host left on %s (%s)%s\n", str(h, "shape"), str(h, "tag"),
                  json_is_true(json_object_get(h, "restored")) ? ", put back" : "");
    assert_true(ledger_has_tag(f, str(h, "tag")));
    json_decref(j);

    /* the host serves the chosen shape */
    assert_int_equal(swth_wait(&f->h, "systemctl is-active " UNIT, 60, NULL), 0);
    assert_int_equal(swth_ssh(&f->h, "systemctl cat " UNIT, NULL, 60, &r), 0);
    char t1[64], t2[64];
    snprintf(t1, sizeof(t1), "--threads %s ", want_threads);
    snprintf(t2, sizeof(t2), "--threads %s\n", want_threads);
    if (r.status || (!strstr(r.out, t1) && !strstr(r.out, t2)))
        fail_msg("%s: the unit does not run --threads %s:\n%s%s", HOST, want_threads, r.out, r.err);
    swt_run_free(&r);
    /* on the host: the engine listens on the host's own loopback */
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "curl -sf --max-time 10 http://127.0.0.1:%d/health", f->port);
    assert_int_equal(swth_ssh(&f->h, cmd, NULL, 30, &r), 0);
    if (r.status)
        fail_msg("%s: %s does not answer: curl exited %d: %s", HOST, cmd, r.status, r.err);
    swt_run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tune_rollout, swth_fx_setup, swth_fx_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
