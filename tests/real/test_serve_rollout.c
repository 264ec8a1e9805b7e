/*
 * A deploy through serve of an endpoint on another host: `slipway serve` in front of a native
 * llama-server unit on a real test host (systemd, sshd: swrollout.h's fixture, the engine bound to
 * every address so serve reaches it at the host's address), a stream of requests through serve,
 * the fleet edited (ctx 512 -> 1024), `slipway deploy --via-serve`: serve takes the endpoint out
 * of rotation, its requests queue (not refused) while the gated rollout stops, installs, starts
 * and proves the unit, and the queue goes to the new unit: path "rollout", outcome committed, no
 * request failed, the live unit holds the new shape. The rollout's attempt is in the ledger
 * beside the fleet (serve's default): committed with its tag, its note naming serve, and serve's
 * step "serve" with the path and the queue's figures. Waits are bounded; nothing asserts a
 * duration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swllama.h"
#include "swrollout.h"
#include "swtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct swro_site site = {"sw-sro-a", "169.254.52.2", "sro-a", "sro"};

/* The fleet with the engine on every address and a declared memory on the host's device (serve
 * prices each shape's claim: a device without memory admits nothing). */
static void write_fleet(struct swro *r, int ctx)
{
    swro_write_fleet(r, &(struct swro_fleet){.ctx = ctx, .listen = "0.0.0.0"});
    char *t = swl_tail(r->fleet, 1 << 16);
    assert_non_null(t);
    const char *dev = "cpu: {kind: cpu, vendor: cpu}";
    char *at = strstr(t, dev);
    assert_non_null(at);
    char text[16384];
    snprintf(text, sizeof(text), "%.*scpu: {kind: cpu, vendor: cpu, memory_total: 4GiB}%s",
             (int)(at - t), t, at + strlen(dev));
    free(t);
    swt_write_str(r->fleet, text);
}

/* serve (or the load) stopped: SIGTERM, then its exit awaited (swt_wait_exit kills past 30 s). */
static void stop_pid(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    swt_wait_exit(pid, 30);
}

/* The newest attempt of sro in the ledger beside the fleet, checked against serve's answer j. */
static void ledger_has(struct swro *r, const json_t *j)
{
    const json_t *fig = NULL;
    json_t *a = swl_last_attempt(swt_join(r->dir, "fleet.ledger.sqlite"), "sro", "serve", &fig);
    const json_t *q = json_object_get(j, "queued"), *fq = json_object_get(fig, "queued");
    print_message("ledger: attempt %lld of %s: %s, tag %s, downtime %lld ms, note '%s'; serve's "
                  "step: path %s, queued %lld, wait max %.3f s\n",
                  (long long)json_integer_value(json_object_get(a, "id")), swro_str(a, "endpoint"),
                  swro_str(a, "outcome"), swro_str(a, "tag"),
                  (long long)json_integer_value(json_object_get(a, "downtime_ms")),
                  swro_str(a, "note"), swro_str(fig, "path"),
                  (long long)json_integer_value(json_object_get(fq, "requests")),
                  json_real_value(json_object_get(fq, "wait_max_s")));
    assert_non_null(a);
    assert_non_null(fig);
    assert_string_equal(swro_str(a, "endpoint"), "sro");
    assert_string_equal(swro_str(a, "outcome"), "committed");
    assert_string_equal(swro_str(a, "note"), "through serve: rollout");
    assert_string_equal(swro_str(a, "tag"), swro_str(json_object_get(j, "rollout"), "tag"));
    assert_int_equal(json_integer_value(json_object_get(a, "id")),
                     json_integer_value(json_object_get(json_object_get(j, "ledger"), "attempt")));
    assert_string_equal(swro_str(fig, "path"), "rollout");
    assert_int_equal(json_integer_value(json_object_get(fq, "requests")),
                     json_integer_value(json_object_get(q, "requests")));
    assert_true(json_real_value(json_object_get(fq, "wait_max_s")) ==
                json_real_value(json_object_get(q, "wait_max_s")));
    assert_int_equal(
        json_integer_value(json_object_get(a, "downtime_ms")),
        json_integer_value(json_object_get(json_object_get(j, "rollout"), "downtime_ms")));
    assert_int_equal(json_integer_value(json_object_get(fig, "downtime_ms")),
                     json_integer_value(json_object_get(a, "downtime_ms")));
    json_decref(a);
}

static void test_deploy_remote_rollout(void **state)
{
    struct swro *r = *state;
    swro_up(r, &site);
    write_fleet(r, 512);
    swro_must_commit(r, "baseline deploy");
    char keys[4300], ready[4300], slog[4300], codes[4300], stopf[4300];
    snprintf(keys, sizeof(keys), "%s/clients.env", r->dir);
    snprintf(ready, sizeof(ready), "%s/serve.port", r->dir);
    snprintf(slog, sizeof(slog), "%s/serve.log", r->dir);
    snprintf(codes, sizeof(codes), "%s/codes.txt", r->dir);
    snprintf(stopf, sizeof(stopf), "%s/load.stop", r->dir);
    swt_write_str(keys, "admin=sk-admin-0123456789\nalice=sk-alice-0123\n");
    const char *sargv[] = {swt_bin(),     "serve",        "--fleet", r->fleet, "--listen",
                           "127.0.0.1:0", "--ready-file", ready,     "--keys", keys,
                           "--max-wait",  "1s",           NULL};
    char serr[4300];
    snprintf(serr, sizeof(serr), "%s/serve.err", r->dir);
    pid_t serve = swt_spawn(sargv, serr, slog, NULL); /* serve's decisions go to stderr */
    int port = 0;
    for (int i = 0; i < 1200 && port <= 0; i++) {
        FILE *f = fopen(ready, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port <= 0)
            usleep(50000);
    }
    if (port <= 0) {
        char *t = swl_tail(slog, 4000);
        stop_pid(serve);
        fail_msg("serve did not listen: %s", t ? t : "");
    }
    /* streams of requests for the model through serve, three at a time, each code to codes.txt */
    char script[2048];
    snprintf(
        script, sizeof(script),
        "for i in 1 2 3; do (while [ ! -e '%s' ]; do curl -s -o /dev/null -w '%%{http_code}\\n' "
        "-m 300 "
        "-H 'Authorization: Bearer sk-alice-0123' -H 'Content-Type: application/json' "
        "--data-binary '{\"model\":\"sro-tiny\",\"messages\":[{\"role\":\"user\","
        "\"content\":\"Say OK.\"}],\"max_tokens\":2,\"temperature\":0}' "
        "http://127.0.0.1:%d/v1/chat/completions >> '%s'; sleep 0.1; done) & done; wait",
        stopf, port, codes);
    char llog[4300];
    snprintf(llog, sizeof(llog), "%s/load.log", r->dir);
    const char *largv[] = {"/bin/sh", "-c", script, NULL};
    pid_t load = swt_spawn(largv, llog, llog, NULL);
    for (int i = 0; i < 600 && !swt_file_has(codes, "200"); i++)
        usleep(100000);
    assert_true(swt_file_has(codes, "200"));
    /* the new shape, deployed through serve */
    write_fleet(r, 1024);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    const char *dargv[] = {"/usr/bin/env",
                           "SLIPWAY_SERVE_KEY=sk-admin-0123456789",
                           swt_bin(),
                           "deploy",
                           "sro",
                           "--via-serve",
                           url,
                           "--no-worst-case",
                           "--probe-only",
                           "readiness,liveness,models,chat",
                           "--json",
                           NULL};
    struct swt_run d;
    assert_int_equal(swt_run(dargv, NULL, r->deadline_s, &d), 0);
    print_message("deploy: exit %d\n%s%s\n", d.status, d.out ? d.out : "", d.err ? d.err : "");
    json_t *j = swt_json_out(&d);
    swt_run_free(&d);
    usleep(1000000); /* requests go on against the new unit */
    swt_write_str(stopf, "stop\n");
    swt_wait_exit(load, 330);
    char *log = swl_tail(slog, 20000);
    print_message("--- serve's log\n%s\n", log ? log : "");
    free(log);
    char *c = swl_tail(codes, 1 << 20);
    long ok = 0, bad = 0;
    for (char *p = c; p && *p;) {
        char *nl = strchr(p, '\n');
        if (!strncmp(p, "200", 3))
            ok++;
        else
            bad++;
        p = nl ? nl + 1 : p + strlen(p);
    }
    free(c);
    print_message("requests through serve: %ld answered 200, %ld not\n", ok, bad);
    stop_pid(serve);
    assert_non_null(j);
    assert_string_equal(swro_str(j, "path"), "rollout");
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_string_equal(swro_str(json_object_get(j, "rollout"), "outcome"), "committed");
    const json_t *q = json_object_get(j, "queued");
    print_message("queued %lld, wait p50 %.3f s, max %.3f s; the unit's downtime %lld ms\n",
                  (long long)json_integer_value(json_object_get(q, "requests")),
                  json_real_value(json_object_get(q, "wait_p50_s")),
                  json_real_value(json_object_get(q, "wait_max_s")),
                  (long long)json_integer_value(
                      json_object_get(json_object_get(j, "rollout"), "downtime_ms")));
    assert_true(json_integer_value(json_object_get(q, "requests")) >= 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "requests"), "failed")),
                     0);
    ledger_has(r, j);
    json_decref(j);
    assert_true(ok > 0);
    assert_int_equal(bad, 0);
    assert_true(swt_file_has(slog, "deploy: sro (by admin): rollout (another host: its unit "
                                   "stops and starts, no blue/green there): once the old is gone: "
                                   "sro (new shape) fits: sro-a/cpu: claim "));
    assert_true(swt_file_has(slog, "out of rotation (requests queue)"));
    assert_true(swro_live_has(r, "-c 1024"));
    assert_true(swro_serves(r));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deploy_remote_rollout, swro_setup, swro_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
