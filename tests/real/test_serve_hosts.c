/*
 * serve in front of units on an ssh host, as the operator's fleet is: two native llama-server
 * endpoints installed as systemd units on a real test host (swrollout.h's fixture, a network of
 * its own), both bound to the HOST's 127.0.0.1, whose planned claims do not fit together on the
 * host's declared device (each fits alone). `slipway serve` on this machine:
 *  - at start it knows sha runs (its health through the route's forward) and shb does not;
 *    /v1/models says so, with the route;
 *  - a request for sha is a real generation through the forward; the host's ssh master ended
 *    (the forward with it), the next one brings the forward back and is answered;
 *  - a streamed request for shb evicts sha (`systemctl stop` over the host) and starts shb
 *    (`systemctl start`, readiness and a one-token generation through the route), the decisions
 *    logged with their figures; `systemctl is-active` on the host shows it; the stream passes;
 *  - with sha's deploy lock held by another deploy, a request for sha is a 503 naming the lock:
 *    sha is not started and shb is not evicted for it;
 *  - shc, whose engine exits at once: its request evicts shb, its start fails (a 503 with the
 *    boot's class) and its unit is stopped again;
 *  - the lock gone, sha starts; at exit serve stops the unit it started;
 *  - a decoy on this machine's 127.0.0.1 at sha's port is never asked, and no forward socket is
 *    left in slipway's run directory.
 * Waits are bounded; nothing asserts a duration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swhttpd.h"
#include "swllama.h"
#include "swrollout.h"
#include "swtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct swro_site site = {"sw-sh-a", "169.254.60.2", "sh-a", "sha"};

/* One endpoint's lines, as swro_write_fleet writes its one (bound to the host's loopback). */
static int endpoint_text(const struct swro *r, const char *name, const char *binary, int port,
                         char *out, size_t n)
{
    return snprintf(out, n,
                    "  %s:\n"
                    "    host: %s\n"
                    "    engine: llama.cpp\n"
                    "    binary: %s\n"
                    "    runtime: native\n"
                    "    listen: 127.0.0.1:%d\n"
                    "    alias: %s-tiny\n"
                    "    payload:\n"
                    "      path: /models/chat.gguf\n"
                    "      quantization: f32\n"
                    "    shape:\n"
                    "      ctx_size: 512\n"
                    "      seqs: 1\n"
                    "      n_gpu_layers: 0\n"
                    "    service:\n"
                    "      restart_sec: 1s\n"
                    "    args: [--metrics]\n",
                    name, r->fleet_host, binary, port, name);
}

/* The fleet: the host's one device with a declared memory that holds one of the two claims, not
 * both (serve logs each claim at start). */
static void write_fleet(struct swro *r, int port_a, int port_b)
{
    char text[12000];
    int w = swro_fleet_head(r, "cpu: {kind: cpu, vendor: cpu, memory_total: 120MiB}", text,
                            sizeof(text));
    assert_true(w > 0 && (size_t)w < sizeof(text));
    const char *llama = "/opt/llama/bin/llama-server";
    w += endpoint_text(r, "sha", llama, port_a, text + w, sizeof(text) - (size_t)w);
    assert_true((size_t)w < sizeof(text));
    w += endpoint_text(r, "shb", llama, port_b, text + w, sizeof(text) - (size_t)w);
    assert_true((size_t)w < sizeof(text));
    /* shc's engine exits at once: its start fails */
    w += endpoint_text(r, "shc", "/bin/false", port_b + 1, text + w, sizeof(text) - (size_t)w);
    assert_true((size_t)w < sizeof(text));
    swt_write_str(r->fleet, text);
}

static void install(struct swro *r, const char *name)
{
    const char *argv[] = {swt_bin(), "install", name, "--fleet", r->fleet, "--json", NULL};
    struct swt_run x;
    assert_int_equal(swt_run(argv, NULL, r->deadline_s, &x), 0);
    if (x.status != 0)
        fail_msg("install %s: exit %d: %s %s", name, x.status, x.out ? x.out : "",
                 x.err ? x.err : "");
    swt_run_free(&x);
}

/* `systemctl is-active UNIT` on the host: "active", "inactive", "failed" ... */
static void is_active(struct swro *r, const char *name, char *out, size_t n)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "systemctl is-active slipway-%s.service", name);
    struct swt_run x;
    out[0] = 0;
    if (!swth_ssh(&r->h, cmd, NULL, 30, &x))
        snprintf(out, n, "%.*s", (int)strcspn(x.out ? x.out : "", "\n"), x.out ? x.out : "");
    swt_run_free(&x);
}

static void must_be(struct swro *r, const char *name, const char *state)
{
    char s[64];
    is_active(r, name, s, sizeof(s));
    print_message("systemctl is-active slipway-%s.service: %s\n", name, s);
    assert_string_equal(s, state);
}

/* POST a chat request for model through serve (curl): the body, its HTTP status in *code. */
static char *chat(int port, const char *model, bool stream, int *code)
{
    char body[512], url[96];
    snprintf(body, sizeof(body),
             "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Say OK.\"}],"
             "\"max_tokens\":4,\"temperature\":0%s}",
             model, stream ? ",\"stream\":true" : "");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/chat/completions", port);
    const char *argv[] = {"curl",
                          "-sS",
                          "-m",
                          "200",
                          "-w",
                          "\n%{http_code}",
                          "-H",
                          "Content-Type: application/json",
                          "--data-binary",
                          body,
                          url,
                          NULL};
    struct swt_run x;
    assert_int_equal(swt_run(argv, NULL, 220, &x), 0);
    char *out = strdup(x.out ? x.out : "");
    swt_run_free(&x);
    char *nl = strrchr(out, '\n');
    *code = nl ? atoi(nl + 1) : 0;
    if (nl)
        *nl = 0;
    print_message("%s%s: HTTP %d: %.600s\n", model, stream ? " (stream)" : "", *code, out);
    return out;
}

static char *get(int port, const char *path)
{
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    const char *argv[] = {"curl", "-sS", "-m", "30", url, NULL};
    struct swt_run x;
    assert_int_equal(swt_run(argv, NULL, 40, &x), 0);
    char *out = strdup(x.out ? x.out : "");
    swt_run_free(&x);
    return out;
}

/* A chat request for model through serve answers 200 with a real generation (never the decoy). */
static void chat_ok(int port, const char *model)
{
    int code = 0;
    char *out = chat(port, model, false, &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(out, "\"completion_tokens\""));
    assert_null(strstr(out, "decoy"));
    free(out);
}

/* A request for NAME-tiny is a 503 saying why; NAME's unit is inactive, other's is as said. */
static void refused(struct swro *r, int port, const char *name, const char *why, const char *other,
                    const char *other_state)
{
    char model[64];
    snprintf(model, sizeof(model), "%s-tiny", name);
    int code = 0;
    char *out = chat(port, model, false, &code);
    assert_int_equal(code, 503);
    assert_non_null(strstr(out, why));
    free(out);
    must_be(r, name, "inactive");
    must_be(r, other, other_state);
}

static void test_serve_units_on_a_host(void **state)
{
    struct swro *r = *state;
    const char *curl_argv[] = {"curl", "--version", NULL};
    struct swt_run cv;
    swt_need(swt_run(curl_argv, NULL, 30, &cv) == 0 && cv.status == 0,
             "curl on this machine (the test's client of serve)");
    swt_run_free(&cv);
    swro_up_shared(r, &site);
    struct swh *decoy = swh_start();
    swh_reply(decoy, "GET", "/health", 200, NULL, "{\"status\":\"ok\"}");
    swh_reply(decoy, "POST", "/v1/chat/completions", 200, NULL, "{\"id\":\"decoy\"}");
    int port_a = swh_port(decoy); /* sha's port on the host is the decoy's here */
    char run_dir[4200], ready[4300], slog[4300], sout[4300];
    snprintf(run_dir, sizeof(run_dir), "%s", swt_join(r->dir, "run"));
    setenv("SLIPWAY_RUN_DIR", run_dir, 1);
    snprintf(ready, sizeof(ready), "%s/serve.port", r->dir);
    snprintf(slog, sizeof(slog), "%s/serve.log", r->dir);
    snprintf(sout, sizeof(sout), "%s/serve.out", r->dir);
    write_fleet(r, port_a, r->port);
    install(r, "sha");
    install(r, "shb");
    install(r, "shc");
    free(swth_must(&r->h, "systemctl start slipway-sha.service"));
    char wait[160];
    snprintf(wait, sizeof(wait), "curl -sf -m 2 http://127.0.0.1:%d/health", port_a);
    struct swt_run w;
    if (swth_wait(&r->h, wait, 120, &w))
        fail_msg("sha's unit did not answer /health on the host");
    swt_run_free(&w);

    const char *sargv[] = {swt_bin(),        "serve",        "--fleet", r->fleet,     "--listen",
                           "127.0.0.1:0",    "--ready-file", ready,     "--max-wait", "150s",
                           "--boot-timeout", "120s",         "--loops", "2",          NULL};
    pid_t serve = swt_spawn(sargv, sout, slog, NULL);
    int port = swt_announced_port(ready, serve, 60000, NULL);
    if (port <= 0) {
        char *t = swl_tail(slog, 4000);
        fail_msg("serve did not listen: %s", t ? t : "");
    }

    /* 1. what runs is known at start: sha from its health through the forward */
    char *models = get(port, "/v1/models");
    print_message("/v1/models: %s\n", models);
    json_error_t je;
    json_t *mj = json_loads(models, 0, &je);
    free(models);
    const json_t *ma = swt_json_find(json_object_get(mj, "data"), "id", "sha-tiny");
    const json_t *mb = swt_json_find(json_object_get(mj, "data"), "id", "shb-tiny");
    assert_non_null(ma);
    assert_non_null(mb);
    assert_string_equal(swro_str(ma, "state"), "running");
    assert_string_equal(swro_str(mb, "state"), "stopped");
    const json_t *hosta =
        json_object_get(json_array_get(json_object_get(ma, "endpoints"), 0), "host");
    assert_string_equal(swro_str(hosta, "route"), "host");
    assert_true(json_is_true(json_object_get(hosta, "unit")));
    json_decref(mj);

    /* 2. a real generation through the forward */
    chat_ok(port, "sha-tiny");

    /* 2b. the host's ssh master ended (its forward with it): the next request brings both back */
    swth_end_masters(run_dir);
    chat_ok(port, "sha-tiny");

    /* 3. shb (streamed): sha's unit is stopped, shb's started, the stream passes */
    int code = 0;
    char *out = chat(port, "shb-tiny", true, &code);
    assert_int_equal(code, 200);
    assert_non_null(strstr(out, "data: "));
    assert_non_null(strstr(out, "[DONE]"));
    free(out);
    must_be(r, "sha", "inactive");
    must_be(r, "shb", "active");

    /* 4. sha's deploy lock held by another deploy: sha is not started, shb not evicted (503) */
    free(swth_must(&r->h, "mkdir -p /run/slipway && echo 'host=elsewhere boot=x pid=1 start=1' "
                          "> /run/slipway/slipway-sha.lock"));
    refused(r, port, "sha", "its deploy lock on host sh-a is held (host=elsewhere", "shb",
            "active");
    free(swth_must(&r->h, "rm -f /run/slipway/slipway-sha.lock"));

    /* 5. shc, whose engine exits at once: shb is evicted, shc's start fails (503 with the boot's
     * class), and its unit is left stopped */
    refused(r, port, "shc", "failed to start: crash_loop", "shb", "inactive");

    /* 6. the lock gone: sha starts */
    chat_ok(port, "sha-tiny");
    must_be(r, "sha", "active");
    must_be(r, "shb", "inactive");

    kill(serve, SIGTERM);
    assert_int_equal(swt_wait_exit(serve, 120), 0);
    char *log = swl_tail(slog, 40000);
    print_message("--- serve's log\n");
    for (char *p = log, *nl; p && *p; p = nl ? nl + 1 : p + strlen(p)) {
        nl = strchr(p, '\n');
        print_message("%.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
    }
    free(log);
    /* the decisions, with their figures */
    assert_true(swt_file_has(slog, "sha: model sha-tiny at 127.0.0.1:"));
    assert_true(swt_file_has(slog, "on its host (through ssh"));
    assert_true(swt_file_has(slog, "sha: its forward was gone (the ssh master had ended): opened "
                                   "again in "));
    assert_true(swt_file_has(slog, "admit: shb evicts sha (lru, priority 0); before: sh-a/cpu: "
                                   "claim "));
    assert_true(swt_file_has(slog, "sha: stopped in "));
    assert_true(swt_file_has(slog, "admit: shb fits: sh-a/cpu: claim "));
    assert_true(swt_file_has(slog, "shb: started in "));
    assert_true(swt_file_has(slog, "admit: sha evicts shb (lru, priority 0); before: sh-a/cpu: "
                                   "claim "));
    assert_true(swt_file_has(slog, "; but endpoint sha of model sha-tiny: its deploy lock on host "
                                   "sh-a is held (host=elsewhere boot=x pid=1 start=1): not "
                                   "started, nothing evicted for it: 503"));
    assert_true(swt_file_has(slog, "admit: shc evicts shb (lru, priority 0)"));
    assert_true(swt_file_has(slog, "shc: its start failed after "));
    assert_true(swt_file_has(slog, "sha: stopped (its unit) at exit"));
    must_be(r, "sha", "inactive");
    swro_nothing_left_here(decoy, run_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serve_units_on_a_host, swro_setup,
                                        swro_shared_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swro_group_teardown);
}
