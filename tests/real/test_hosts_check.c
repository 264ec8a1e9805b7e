/*
 * `slipway hosts check` on a local-transport host whose systemd manager cannot be reached. The
 * local transport runs the facts script with the caller's own PATH, so a stand-in `systemctl`
 * first in PATH is what the host answers with: `--version` as systemd 252 prints it (the binary
 * answers without any manager), and every other verb the way systemctl does in a container whose
 * PID 1 is not systemd ("Failed to connect to bus: ...", exit 1).
 *  - the manager answering: ready, exit 0 (the same fleet, so the gap below is the manager's);
 *  - the system manager gone: not ready, exit 1, the gap quoting systemctl (the real binary);
 *  - a user-scope endpoint: the user manager is the one that must answer (the check itself,
 *    sw_gate_host).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/fleet.h>
#include <slipway/gate.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *dir;
static char *old_path;

/* A systemctl that prints its version and answers `show` for the scopes in `up` ("system",
 * "user", both or none); any other call says there is no bus. */
static void fake_systemctl(const char *up)
{
    char text[2048], path[4200];
    snprintf(text, sizeof(text),
             "#!/bin/sh\n"
             "if [ \"$1\" = --version ]; then\n"
             "  echo 'systemd 252 (252.39-1~deb12u2)'; echo '+PAM +AUDIT'; exit 0\n"
             "fi\n"
             "case \"$1 $2\" in\n"
             "  \"--system show\") case '%s' in *system*) echo 252; exit 0 ;; esac ;;\n"
             "  \"--user show\") case '%s' in *user*) echo 252; exit 0 ;; esac ;;\n"
             "esac\n"
             "echo 'Failed to connect to bus: No such file or directory' >&2\n"
             "exit 1\n",
             up, up);
    snprintf(path, sizeof(path), "%s/bin/systemctl", dir);
    swt_write_str(path, text);
    assert_int_equal(chmod(path, 0755), 0);
}

static const char *write_fleet(const char *scope)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  box:\n"
             "    transport: local\n"
             "endpoints:\n"
             "  native:\n"
             "    host: box\n"
             "    engine: llama.cpp\n"
             "    binary: /bin/sh\n"
             "    listen: 127.0.0.1:18080\n"
             "    payload:\n"
             "      path: %s\n"
             "    service: {scope: %s}\n",
             dir, scope);
    const char *path = swt_join(dir, "fleet.yaml");
    swt_write_str(path, text);
    return path;
}

static int setup(void **state)
{
    (void)state;
    dir = swt_tmpdir();
    char bin[4200], path[8192];
    snprintf(bin, sizeof(bin), "%s/bin", dir);
    if (mkdir(bin, 0755) != 0)
        return -1;
    const char *p = getenv("PATH");
    old_path = strdup(p ? p : "/usr/bin:/bin");
    snprintf(path, sizeof(path), "%s:%s", bin, old_path);
    setenv("PATH", path, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (old_path)
        setenv("PATH", old_path, 1);
    free(old_path);
    swt_tmpdir_free(dir);
    return 0;
}

static json_t *check_json(struct swt_run *r, const char *fleet, int want_exit)
{
    assert_int_equal(swt_slipway(r, "hosts", "check", "--fleet", fleet, "--json", NULL), 0);
    if (r->status != want_exit)
        fail_msg("hosts check exit %d (want %d)\n%s\n%s", r->status, want_exit, r->out, r->err);
    return swt_json_out(r);
}

static void test_system_manager(void **state)
{
    (void)state;
    struct swt_run r;
    const char *fleet = write_fleet("system");

    fake_systemctl("system user");
    json_t *j = check_json(&r, fleet, 0);
    json_t *h = json_array_get(json_object_get(j, "hosts"), 0);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "pass");
    assert_int_equal(json_integer_value(json_object_get(h, "systemd")), 252);
    json_t *m = json_object_get(json_object_get(h, "systemd_manager"), "system");
    assert_true(json_is_true(json_object_get(m, "reached")));
    json_decref(j);
    swt_run_free(&r);

    /* systemctl --version still says 252; the manager does not answer */
    fake_systemctl("");
    j = check_json(&r, fleet, 1);
    h = json_array_get(json_object_get(j, "hosts"), 0);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "fail");
    assert_int_equal(json_integer_value(json_object_get(h, "systemd")), 252);
    m = json_object_get(json_object_get(h, "systemd_manager"), "system");
    assert_true(json_is_false(json_object_get(m, "reached")));
    assert_string_equal(json_string_value(json_object_get(m, "said")),
                        "Failed to connect to bus: No such file or directory");
    json_t *gaps = json_object_get(h, "gaps");
    assert_int_equal(json_array_size(gaps), 1);
    assert_non_null(strstr(json_string_value(json_array_get(gaps, 0)),
                           "box: systemd not reachable: Failed to connect to bus: No such file "
                           "or directory"));
    json_decref(j);
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "hosts", "check", "--fleet", fleet, NULL), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "GAP box: systemd not reachable: Failed to connect to bus"));
    assert_non_null(strstr(r.out, "hosts check: gaps found (exit 1)"));
    assert_null(strstr(r.out, "every host ready"));
    swt_run_free(&r);
}

/* sw_gate_host on the fleet's one host: its document, *n_gaps its gaps. */
static json_t *check_host(const char *fleet, size_t *n_gaps)
{
    struct sw_fleet *f = NULL;
    struct sw_err e;
    json_t *h = NULL;
    sw_err_clear(&e);
    if (sw_fleet_load(fleet, NULL, &f, &e) || sw_gate_host(f, &f->hosts[0], 20000, &h, n_gaps, &e))
        fail_msg("%s", e.msg);
    sw_fleet_free(f);
    return h;
}

static void test_user_manager(void **state)
{
    (void)state;
    size_t n_gaps;
    const char *fleet = write_fleet("user");

    /* a user unit needs the user manager: the system one answering is not enough */
    fake_systemctl("system");
    json_t *h = check_host(fleet, &n_gaps);
    json_t *gaps = json_object_get(h, "gaps");
    assert_int_equal(n_gaps, 1);
    assert_int_equal(json_array_size(gaps), 1);
    assert_string_equal(json_string_value(json_object_get(h, "verdict")), "fail");
    assert_non_null(strstr(json_string_value(json_array_get(gaps, 0)),
                           "box: systemd user manager (systemctl --user) not reachable: Failed "
                           "to connect to bus"));
    json_decref(h);

    /* ... and the system manager is not asked of it */
    fake_systemctl("user");
    h = check_host(fleet, &n_gaps);
    assert_int_equal(n_gaps, 0);
    assert_string_equal(json_string_value(json_object_get(h, "verdict")), "pass");
    json_decref(h);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_manager),
        cmocka_unit_test(test_user_manager),
    };
    return cmocka_run_group_tests_name("hosts_check", tests, setup, teardown);
}
