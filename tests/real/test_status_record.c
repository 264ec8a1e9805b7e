/*
 * Restarts between deploys, on a real test host (scripts/testhost.sh through swthost.h: a
 * systemd-nspawn machine with its own systemd and sshd on 169.254.30.2, reached over slipway's ssh
 * transport):
 *  - `slipway install --start` puts a native llama.cpp endpoint on the host (the tiny chat model);
 *  - `slipway status --record --ledger L` records the unit as systemd shows it (active, NRestarts
 *    0, its main PID) in the ledger;
 *  - the engine is killed (SIGKILL of the unit's MainPID, as an OOM kill would): systemd restarts
 *    it (Restart=, RestartSec= of the render); once it serves again, `status --record` records
 *    NRestarts 1 and a new PID;
 *  - `slipway report --json` and `slipway export prometheus` from that ledger show the restart
 *    between deploys (slipway_unit_restarts 1), which no deploy attempt saw.
 * `--ledger` without `--record` is a usage error. The host is always taken down (teardown, and
 * swthost's exit and signal hooks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swthost.h"
#include "swtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ADDR "169.254.30.2"

struct fx {
    struct swth_host h;
    char *dir;
    char model_dir[4096], model[4096], missing[8700];
    char run[4200], fleet[4200], ledger[4200];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->dir = swt_tmpdir();
    snprintf(f->run, sizeof(f->run), "%s/run", f->dir);
    mkdir(f->run, 0700);
    setenv("SLIPWAY_RUN_DIR", f->run, 1);
    snprintf(f->fleet, sizeof(f->fleet), "%s/fleet.yaml", f->dir);
    snprintf(f->ledger, sizeof(f->ledger), "%s/ledger.sqlite", f->dir);
    swth_model(f->model_dir, sizeof(f->model_dir), f->model, sizeof(f->model), f->missing,
               sizeof(f->missing));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    swth_end_masters(f->run);
    swth_down(&f->h);
    swth_end_masters(f->run);
    assert_int_equal(swt_survivors(f->run, true, NULL), 0);
    if (f->model_dir[0])
        swt_tmpdir_free(strdup(f->model_dir));
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static const json_t *only_endpoint(const json_t *st)
{
    const json_t *eps = json_object_get(st, "endpoints");
    assert_int_equal(json_array_size(eps), 1);
    return json_array_get(eps, 0);
}

static void test_restarts_between_deploys(void **state)
{
    struct fx *f = *state;
    const char *why = swth_missing();
    swt_need(!why[0], "%s", why);
    swt_need(f->model[0] != '\0', "no chat model: %s", f->missing);
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/models", f->model_dir);
    const char *binds[] = {bind, NULL};
    assert_int_equal(swth_up("sw-rp-a", ADDR, binds, &f->h), 0);
    const char *base = strrchr(f->model, '/');
    int port = swt_free_port();
    char text[4096];
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  rp:\n"
             "    transport: {kind: ssh, address: %s, user: root,\n"
             "                identity_file: %s, known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             "endpoints:\n"
             "  rp-small:\n"
             "    host: rp\n"
             "    engine: llama.cpp\n"
             "    binary: /opt/llama/bin/llama-server\n"
             "    listen: 127.0.0.1:%d\n"
             "    payload: {path: /models%s}\n"
             "    shape: {ctx_size: 512, seqs: 1, n_gpu_layers: 0}\n"
             "    args: [-t, \"1\"]\n",
             f->h.addr, f->h.key, f->h.known_hosts, port, base ? base : "/chat.gguf");
    swt_write_str(f->fleet, text);

    struct swt_run r;
    /* --ledger alone is a usage error */
    assert_int_equal(swt_slipway(&r, "status", "--fleet", f->fleet, "--ledger", f->ledger, NULL),
                     0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);

    json_t *j = swt_slipway_json(&r, 0, "install", "rp-small", "--fleet", f->fleet, "--start",
                                 "--timeout", "120s", "--json", NULL);
    assert_true(json_is_true(json_object_get(j, "serving")));
    json_decref(j);
    swt_run_free(&r);

    /* the first look: serving, NRestarts 0, recorded */
    j = swt_slipway_json(&r, 0, "status", "--fleet", f->fleet, "--record", "--ledger", f->ledger,
                         "--json", NULL);
    const json_t *ep = only_endpoint(j);
    const json_t *u = json_object_get(ep, "unit");
    assert_int_equal(json_integer_value(json_object_get(u, "restarts")), 0);
    json_int_t pid1 = json_integer_value(json_object_get(u, "main_pid"));
    assert_true(pid1 > 0);
    json_int_t id1 = json_integer_value(json_object_get(ep, "recorded"));
    assert_true(id1 > 0);
    assert_string_equal(json_string_value(json_object_get(j, "ledger")), f->ledger);
    char unit[256];
    snprintf(unit, sizeof(unit), "%s", json_string_value(json_object_get(u, "name")));
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "kill -KILL $(systemctl show -p MainPID --value %s)", unit);
    json_decref(j);
    swt_run_free(&r);

    /* the engine dies as an OOM kill would; systemd restarts it */
    struct swt_run s = {0};
    assert_int_equal(swth_ssh(&f->h, cmd, NULL, 30, &s), 0);
    assert_int_equal(s.status, 0);
    swt_run_free(&s);
    snprintf(cmd, sizeof(cmd),
             "[ \"$(systemctl show -p NRestarts --value %s)\" -ge 1 ] && systemctl is-active -q %s",
             unit, unit);
    if (swth_wait(&f->h, cmd, 180, &s))
        fail_msg("the unit did not come back after the kill: %s %s", s.out, s.err);
    swt_run_free(&s);
    /* serving again (the model loads after the unit is active) */
    int st = -1;
    for (int i = 0; i < 120 && st != 0; i++) {
        if (i)
            sleep(1);
        assert_int_equal(swt_slipway(&r, "status", "--fleet", f->fleet, "--json", NULL), 0);
        st = r.status;
        swt_run_free(&r);
    }
    assert_int_equal(st, 0);

    /* the second look: NRestarts 1, a new PID */
    j = swt_slipway_json(&r, 0, "status", "--fleet", f->fleet, "--record", "--ledger", f->ledger,
                         "--json", NULL);
    ep = only_endpoint(j);
    u = json_object_get(ep, "unit");
    assert_int_equal(json_integer_value(json_object_get(u, "restarts")), 1);
    assert_true(json_integer_value(json_object_get(u, "main_pid")) != pid1);
    json_int_t id2 = json_integer_value(json_object_get(ep, "recorded"));
    assert_true(id2 > id1);
    json_decref(j);
    swt_run_free(&r);

    /* the human view says what it recorded */
    assert_int_equal(
        swt_slipway(&r, "status", "--fleet", f->fleet, "--record", "--ledger", f->ledger, NULL), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recorded: unit observation #3"));
    assert_non_null(strstr(r.out, "recorded 1 unit observation(s) in "));
    swt_run_free(&r);

    /* the report and the Prometheus file show the restart no deploy attempt saw */
    j = swt_slipway_json(&r, 0, "report", "--fleet", f->fleet, "--ledger", f->ledger, "--json",
                         NULL);
    const json_t *rs = json_object_get(only_endpoint(j), "restarts");
    assert_int_equal(json_integer_value(json_object_get(rs, "attempts")), 0);
    const json_t *bt = json_object_get(rs, "between_deploys");
    assert_int_equal(json_integer_value(json_object_get(bt, "n_restarts")), 1);
    assert_int_equal(json_integer_value(json_object_get(bt, "observation")), 3);
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(
        swt_slipway(&r, "export", "prometheus", "--fleet", f->fleet, "--ledger", f->ledger, NULL),
        0);
    if (r.status)
        fail_msg("export prometheus exited %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "\nslipway_unit_restarts{endpoint=\"rp-small\"} 1\n"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restarts_between_deploys, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
