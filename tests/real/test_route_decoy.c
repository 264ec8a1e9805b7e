/*
 * A loopback-bound engine on a remote host is reached THROUGH that host, never on this machine
 * (issue 27). A test host with a network of its own (scripts/testhost.sh sw-dc-a, 169.254.34.2)
 * runs the pinned llama-server bound to the host's own 127.0.0.1:PORT, the operator's shape for
 * frank-small; on this machine a decoy answers 200 on 127.0.0.1:PORT, the same port, to /health,
 * /v1/models, /props, /metrics and a chat completion, the way another process on the operator's
 * workstation would. Before the fix every proof went to this machine's 127.0.0.1:PORT: the decoy
 * answered, so a deploy committed and `status` said serving whatever ran on the host.
 *  - deploy of the good shape commits; its proofs went through the host (the result's steps say
 *    so) and the decoy saw not one request;
 *  - `status` says serving through the host; with the unit stopped it says not serving (the decoy
 *    still answering here);
 *  - a broken shape (an engine that cannot start) fails at boot and is rolled back to the
 *    last-good, proved again through the host;
 *  - `probe ENDPOINT --fleet` and `bench ENDPOINT --fleet` reach the engine through the host;
 *  - after all of it the decoy has no request, and no forward socket is left in slipway's
 *    private ssh directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swhttpd.h"
#include "swrollout.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct swro_site site = {"sw-dc-a", "169.254.34.2", "dc-a", "dc"};

#define CHAT_REPLY                                                                                 \
    "{\"id\":\"decoy\",\"object\":\"chat.completion\",\"model\":\"dc-tiny\",\"choices\":[{"        \
    "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"OK\"},\"finish_reason\":"       \
    "\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}"

/* The decoy: everything a prover asks answered 200, on this machine's 127.0.0.1. */
static struct swh *decoy_start(void)
{
    struct swh *d = swh_start();
    swh_reply(d, "GET", "/health", 200, NULL, "{\"status\":\"ok\"}");
    swh_reply(d, "GET", "/v1/models", 200, NULL,
              "{\"object\":\"list\",\"data\":[{\"id\":\"dc-tiny\",\"object\":\"model\"}]}");
    swh_reply(d, "GET", "/props", 200, NULL, "{\"total_slots\":1}");
    swh_reply(d, "GET", "/metrics", 200, "text/plain", "# decoy\n");
    swh_reply(d, "POST", "/v1/chat/completions", 200, NULL, CHAT_REPLY);
    return d;
}

static const json_t *step(const json_t *j, const char *name)
{
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(j, "steps"), i, s)
    {
        if (!strcmp(swro_str(s, "step"), name))
            return s;
    }
    return NULL;
}

static json_t *run_json(struct swro *f, int *st, const char *const *argv)
{
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, f->deadline_s, &r), 0);
    *st = r.status;
    json_t *j = swt_json_out(&r);
    if (r.err && r.err[0])
        print_message("stderr: %s\n", r.err);
    swt_run_free(&r);
    return j;
}

static const json_t *status_of(const json_t *j)
{
    return json_array_get(json_object_get(j, "endpoints"), 0);
}

static void test_decoy_never_answers(void **state)
{
    struct swro *f = *state;
    swro_up(f, &site);
    struct swh *decoy = decoy_start();
    /* the decoy holds this machine's 127.0.0.1:PORT; the engine binds the host's */
    f->port = swh_port(decoy);
    char run_dir[4096];
    snprintf(run_dir, sizeof(run_dir), "%s", swt_join(f->dir, "run"));
    setenv("SLIPWAY_RUN_DIR", run_dir, 1);

    /* 1. the good shape commits, proved through the host */
    swro_write_fleet(f, &(struct swro_fleet){.ctx = 512});
    int st = 0;
    json_t *j = swro_run(f, &st, "deploy", "--no-worst-case", "--probe-only",
                         "readiness,liveness,models,chat", NULL);
    if (st != 0 || strcmp(swro_str(j, "outcome"), "committed")) {
        swro_print_steps(j);
        fail_msg("deploy: exit %d %s %s %s", st, swro_str(j, "outcome"), swro_str(j, "fail_class"),
                 swro_str(j, "fail_msg"));
    }
    assert_int_equal(swh_hits(decoy, NULL), 0);
    json_decref(j);
    assert_true(swro_serves(f));

    /* 2. status: serving, through the host; the unit stopped: not serving */
    const char *status_argv[] = {swt_bin(), "status", "--fleet", f->fleet, "--json", NULL};
    j = run_json(f, &st, status_argv);
    const json_t *e = status_of(j);
    if (!json_is_true(json_object_get(e, "serving")))
        fail_msg("status does not say serving: %s", json_dumps(e, 0));
    assert_string_equal(swro_str(e, "route"), "host");
    assert_non_null(strstr(swro_str(e, "via"), site.addr));
    json_decref(j);
    free(swth_must(&f->h, "systemctl stop "
                          "slipway-dc.service"));
    j = run_json(f, &st, status_argv);
    e = status_of(j);
    assert_int_equal(st, 1);
    assert_false(json_is_true(json_object_get(e, "serving")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "health"), "status")),
                     0);
    json_decref(j);
    assert_int_equal(swh_hits(decoy, NULL), 0);
    free(swth_must(&f->h, "systemctl start "
                          "slipway-dc.service"));

    /* 3. a broken shape (its engine exits at once) fails at boot and is rolled back, the last-good
     * proved again through the host */
    swro_write_fleet(f, &(struct swro_fleet){.ctx = 512, .binary = "/bin/false"});
    j = swro_run(f, &st, "deploy", "--no-worst-case", "--probe-only",
                 "readiness,liveness,models,chat", NULL);
    swro_print_steps(j);
    assert_int_not_equal(st, 0);
    assert_string_equal(swro_str(j, "outcome"), "rolled_back");
    assert_true(json_is_true(json_object_get(j, "serving")));
    assert_non_null(step(j, "readiness"));
    json_decref(j);
    assert_int_equal(swh_hits(decoy, NULL), 0);
    assert_true(swro_serves(f));

    /* 4. probe and bench by name go through the host too */
    swro_write_fleet(f, &(struct swro_fleet){.ctx = 512});
    const char *probe_argv[] = {
        swt_bin(), "probe", f->endpoint, "--fleet", f->fleet, "--only", "readiness,liveness,models",
        "--json",  NULL};
    j = run_json(f, &st, probe_argv);
    if (st != 0)
        fail_msg("probe through the host: exit %d: %s", st, json_dumps(j, 0));
    assert_int_equal(json_integer_value(json_object_get(j, "failed")), 0);
    json_decref(j);
    const char *bench_argv[] = {swt_bin(), "bench",  f->endpoint, "--fleet", f->fleet,
                                "--depth", "0",      "--tg",      "4",       "--repeat",
                                "1",       "--json", NULL};
    j = run_json(f, &st, bench_argv);
    const json_t *pt = json_array_get(json_object_get(j, "points"), 0);
    if (!pt || json_integer_value(json_object_get(pt, "requests")) < 1 ||
        json_integer_value(json_object_get(pt, "failed")) != 0)
        fail_msg("bench through the host: exit %d: %s", st, j ? json_dumps(j, 0) : "(no json)");
    json_decref(j);

    swro_nothing_left_here(decoy, run_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_decoy_never_answers, swro_setup, swro_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
