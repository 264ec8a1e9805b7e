/*
 * `slipway import host` against a real host (a systemd + sshd test host with a network of its
 * own, tests/support/swthost.h): the operator's llama-server runs there under a HAND-WRITTEN unit
 * reading its shape from an env file (which also holds a key). The import, over slipway's own ssh
 * transport, must find the unit, read it and its env file, write a fleet whose values name their
 * host:path:line, keep the key on the host, and render the same llama-server command line the
 * unit runs (each difference named); `slipway status` then reads the imported endpoint's unit as
 * the one running.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swthost.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ADDR "169.254.40.2"
#define KEY  "sk-import-host-test-key-0123456789"

static void test_import_host(void **state)
{
    (void)state;
    const char *why = swth_missing();
    swt_need(!why[0], "%s", why);
    swt_need(swth_gm.model[0] != '\0', "no chat model: %s", swth_gm.missing);
    char bind[4200];
    snprintf(bind, sizeof(bind), "%s:/models", swth_gm.dir);
    const char *binds[] = {bind, NULL};
    struct swth_host h;
    assert_int_equal(swth_up("sw-import", ADDR, binds, &h), 0);
    const char *model = strrchr(swth_gm.model, '/') + 1;
    int port = swt_free_port();

    /* the operator's own unit and env file, written by hand */
    char text[4096];
    snprintf(text, sizeof(text),
             "# chat: llama-server on the CPU, hand-written\n"
             "[Unit]\n"
             "Description=chat (llama-server)\n"
             "After=network-online.target\n"
             "\n"
             "[Service]\n"
             "EnvironmentFile=/etc/chat/chat.env\n"
             "ExecStart=/opt/llama/bin/llama-server -m /models/%s --host 127.0.0.1 \\\n"
             "    --port ${PORT} -c ${CTX} -np 1 -ngl 0 -t 1\n"
             "Restart=always\n"
             "RestartSec=5\n"
             "TimeoutStopSec=60\n"
             "\n"
             "[Install]\n"
             "WantedBy=multi-user.target\n",
             model);
    assert_int_equal(swth_put(&h, "/etc/systemd/system/chat.service", text), 0);
    snprintf(text, sizeof(text), "PORT=%d\nCTX=512\nLLAMA_API_KEY=%s\n", port, KEY);
    char *out = swth_must(&h, "mkdir -p /etc/chat");
    free(out);
    assert_int_equal(swth_put(&h, "/etc/chat/chat.env", text), 0);
    out = swth_must(&h, "systemctl daemon-reload && systemctl start chat.service");
    free(out);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "curl -fsS http://127.0.0.1:%d/health", port);
    struct swt_run r;
    if (swth_wait(&h, cmd, 120, &r))
        fail_msg("the hand-written unit does not serve: %s %s", r.out, r.err);
    swt_run_free(&r);

    char *dir = swt_tmpdir();
    char fleet[4096], envcopy[4096];
    snprintf(fleet, sizeof(fleet), "%s", swt_join(dir, "fleet.yaml"));
    snprintf(envcopy, sizeof(envcopy), "%s", swt_join(dir, "th-import-chat.env"));
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  th-import:\n"
             "    transport: {kind: ssh, address: %s, user: root,\n"
             "                identity_file: %s, known_hosts: %s}\n"
             "    devices:\n"
             "      cpu: {kind: cpu, vendor: cpu}\n"
             "endpoints: {}\n",
             h.addr, h.key, h.known_hosts);
    swt_write_str(fleet, text);

    swt_slipway(&r, "import", "host", "th-import", "--into", fleet, "--json", NULL);
    if (r.status)
        fail_msg("import host: %d\n%s\n%s", r.status, r.out, r.err);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "endpoints"), 0)),
                        "chat");
    /* render(import(unit)) against the unit: only named differences, printed */
    size_t i;
    json_t *n;
    size_t rt = 0;
    json_array_foreach(json_object_get(j, "notes"), i, n)
    {
        const char *w = json_string_value(json_object_get(n, "where"));
        const char *m = json_string_value(json_object_get(n, "msg"));
        print_message("%s: %s\n", w, m);
        if (strstr(w, "round trip")) {
            rt++;
            /* what slipway's render always adds to llama-server (its log verbosity) */
            assert_non_null(strstr(m, "the render adds -lv"));
        }
    }
    assert_int_equal(json_integer_value(json_object_get(j, "roundtrip_differences")),
                     (json_int_t)rt);
    json_decref(j);
    swt_run_free(&r);

    char *t = NULL;
    size_t tl = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(fleet, 1u << 20, &t, &tl, &e), 0);
    print_message("%s", t);
    assert_non_null(strstr(t, "th-import:/etc/systemd/system/chat.service:"));
    assert_non_null(strstr(t, "CTX: shape.ctx_size"));
    assert_non_null(strstr(t, "PORT: listen.port"));
    assert_non_null(strstr(t, "binary: /opt/llama/bin/llama-server"));
    assert_non_null(strstr(t, "name: chat"));
    assert_null(strstr(t, KEY));
    sw_free(t);
    /* the key stayed on the host: the local copy names it only */
    assert_int_equal(sw_read_file(envcopy, 1u << 20, &t, &tl, &e), 0);
    assert_null(strstr(t, KEY));
    assert_non_null(strstr(t, "CTX=512"));
    sw_free(t);

    /* the imported endpoint is the unit that runs: status finds it active */
    swt_slipway(&r, "status", "--fleet", fleet, "--json", NULL);
    print_message("status: %d\n%s\n%.2000s\n", r.status, r.out, r.err);
    assert_non_null(strstr(r.out, "\"chat\""));
    assert_non_null(strstr(r.out, "active"));
    swt_run_free(&r);

    swt_tmpdir_free(dir);
    assert_int_equal(swth_down(&h), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_host),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
