/*
 * deploy's service helpers and the refusals of `slipway install` / `slipway status` that need no
 * host: where an installed endpoint answers (its argv's --host/--port, a wildcard address
 * replaced by the host's), the bearer read from an environment file, the unit's paths per scope;
 * an install the lint refuses stops before the host is opened (its steps are render and lint
 * only); a host that cannot be reached is reported as such (exit 1), never waited on.
 * The real tier (tests/real/test_install_status.c) installs on test hosts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "deploy/service_internal.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An endpoint `name` of llama.cpp's llama-server on the host far (its fields follow). */
#define FAR_LLAMA(name)                                                                            \
    "  " name ":\n"                                                                                \
    "    host: far\n"                                                                              \
    "    engine: llama.cpp\n"                                                                      \
    "    binary: /opt/llama/bin/llama-server\n"

static struct sw_fleet *load_text(const char *text)
{
    return swt_fleet_text("test.yaml", text);
}

#define HOSTS                                                                                      \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  far:\n"                                                                                     \
    "    transport: {kind: ssh, address: 192.0.2.1, user: root}\n"                                 \
    "    devices:\n"                                                                               \
    "      cpu: {kind: cpu, vendor: cpu}\n"

static void render(const struct sw_fleet *f, const char *name, struct sw_unit_render *r)
{
    struct sw_err e;
    sw_err_clear(&e);
    memset(r, 0, sizeof(*r));
    if (sw_unit_render_endpoint(f, sw_fleet_endpoint(f, name), r, &e))
        fail_msg("render %s: %s", name, e.msg);
}

static void test_url(void **state)
{
    (void)state;
    struct sw_fleet *f = load_text(
        HOSTS "endpoints:\n" FAR_LLAMA("wild") "    listen: 0.0.0.0:9001\n"
                                               "    payload: {path: /models/m.gguf}\n" FAR_LLAMA(
                                                   "own") "    listen: 10.1.2.3:9002\n"
                                                          "    payload: {path: /models/m.gguf}\n");
    struct sw_unit_render r;
    struct sw_fleet_addr a;
    render(f, "wild", &r);
    assert_int_equal(sw_fleet_endpoint_addr(r.ep, &a, NULL), 0);
    /* every interface: the proofs go to the host's own address */
    assert_string_equal(a.url, "http://192.0.2.1:9001");
    assert_int_equal(a.route, SW_FLEET_ROUTE_DIRECT);
    sw_unit_render_free(&r);
    render(f, "own", &r);
    assert_int_equal(sw_fleet_endpoint_addr(r.ep, &a, NULL), 0);
    assert_string_equal(a.url, "http://10.1.2.3:9002");

    char up[1024], envp[1024];
    struct sw_err e;
    assert_int_equal(sw__svc_paths(&r, "/root", up, sizeof(up), envp, sizeof(envp), &e), 0);
    assert_string_equal(up, "/etc/systemd/system/slipway-own.service");
    assert_string_equal(envp, r.env_path);
    assert_true(envp[0] == '/');
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

static void test_user_scope_paths(void **state)
{
    (void)state;
    struct sw_fleet *f =
        load_text(HOSTS "endpoints:\n" FAR_LLAMA("mine") "    listen: 127.0.0.1:9003\n"
                                                         "    service: {scope: user}\n"
                                                         "    payload: {path: /models/m.gguf}\n");
    struct sw_unit_render r;
    render(f, "mine", &r);
    char up[1024], envp[1024];
    struct sw_err e;
    assert_int_equal(sw__svc_paths(&r, "/home/dank", up, sizeof(up), envp, sizeof(envp), &e), 0);
    assert_string_equal(up, "/home/dank/.config/systemd/user/slipway-mine.service");
    assert_non_null(strstr(envp, "/home/dank/"));
    assert_null(strstr(envp, "%h"));
    /* no $HOME from the host: refused, not guessed */
    sw_err_clear(&e);
    assert_int_not_equal(sw__svc_paths(&r, "", up, sizeof(up), envp, sizeof(envp), &e), 0);
    assert_non_null(strstr(e.msg, "HOME"));
    sw_unit_render_free(&r);
    sw_fleet_free(f);
}

static void test_bearer(void **state)
{
    (void)state;
    char b[64];
    const char *t = "# comment LLAMA_API_KEY=no\nFOO=1\nLLAMA_API_KEY=sk-abc\nX=2\n";
    sw__svc_bearer_text(t, strlen(t), b, sizeof(b));
    assert_string_equal(b, "sk-abc");
    t = "VLLM_API_KEY=\"quoted key\"";
    sw__svc_bearer_text(t, strlen(t), b, sizeof(b));
    assert_string_equal(b, "quoted key");
    t = "FOO=1\n";
    sw__svc_bearer_text(t, strlen(t), b, sizeof(b));
    assert_string_equal(b, "");
    /* bounded by the text's length, not its NUL */
    t = "LLAMA_API_KEY=abcdef";
    sw__svc_bearer_text(t, 17, b, sizeof(b));
    assert_string_equal(b, "abc");
    /* too long for the buffer: nothing rather than a cut key */
    char small[4];
    sw__svc_bearer_text(t, strlen(t), small, sizeof(small));
    assert_string_equal(small, "");
}

static const char *write_fleet(const char *dir, const char *text)
{
    static char path[4200];
    snprintf(path, sizeof(path), "%s/fleet.yaml", dir);
    swt_write_str(path, text);
    return path;
}

/* An endpoint in a container whose image is named by tag only (no digest). */
static const char BOXED[] = HOSTS "endpoints:\n"
                                  "  boxed:\n"
                                  "    host: far\n"
                                  "    engine: llama.cpp\n"
                                  "    image: localhost/llama:latest\n"
                                  "    listen: 127.0.0.1:9004\n"
                                  "    payload:\n"
                                  "      path: /models/m.gguf\n"
                                  "      mounts: [\"/models:/models:ro\"]\n";

/* An unpinned image is a lint error: refused before the host is opened. */
static void test_install_refused_before_host(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    const char *fleet = write_fleet(dir, BOXED);
    struct swt_run r;
    assert_int_equal(
        swt_slipway(&r, "install", "boxed", "--fleet", fleet, "--start", "--json", NULL), 0);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "refused")));
    assert_false(json_is_true(json_object_get(j, "installed")));
    const json_t *steps = json_object_get(j, "steps");
    assert_int_equal(json_array_size(steps), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 1), "name")),
                        "lint");
    size_t i;
    const json_t *fd;
    bool digest = false;
    json_array_foreach(json_object_get(j, "findings"), i, fd) digest |=
        !strcmp(json_string_value(json_object_get(fd, "law")), "image-digest");
    assert_true(digest);
    assert_string_equal(json_string_value(json_object_get(j, "transport")), "");
    json_decref(j);
    swt_run_free(&r);

    /* a disabled endpoint (kept for the record) is not installed */
    fleet = write_fleet(dir, HOSTS "endpoints:\n"
                                   "  old:\n"
                                   "    host: far\n"
                                   "    enabled: false\n"
                                   "    engine: llama.cpp\n"
                                   "    binary: /opt/llama/bin/llama-server\n"
                                   "    payload: {path: /models/m.gguf}\n");
    assert_int_equal(swt_slipway(&r, "install", "old", "--fleet", fleet, NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "disabled"));
    swt_run_free(&r);
    fleet = write_fleet(dir, BOXED);

    /* the human view says so too */
    assert_int_equal(swt_slipway(&r, "install", "boxed", "--fleet", fleet, NULL), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "image-digest"));
    assert_non_null(strstr(r.err, "nothing installed on far"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

/* A host nobody answers for: unreachable, exit 1, every other field still there. */
static void test_status_unreachable(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    const char *fleet = write_fleet(
        dir, HOSTS "endpoints:\n" FAR_LLAMA("n") "    listen: 192.0.2.1:9005\n"
                                                 "    payload: {path: /models/m.gguf}\n");
    char run[4300];
    snprintf(run, sizeof(run), "SLIPWAY_RUN_DIR=%s", dir);
    const char *argv[] = {"env", run,          swt_bin(), "status", "--fleet",
                          fleet, "--deadline", "2s",      "--json", NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    const json_t *ep = json_array_get(json_object_get(j, "endpoints"), 0);
    assert_string_equal(json_string_value(json_object_get(ep, "state")), "unreachable");
    assert_false(json_is_true(json_object_get(ep, "reached")));
    assert_false(json_is_true(json_object_get(ep, "serving")));
    assert_non_null(json_string_value(json_object_get(ep, "error")));
    assert_int_equal(json_integer_value(json_object_get(j, "serving")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 1);
    json_decref(j);
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

static void test_usage(void **state)
{
    (void)state;
    struct swt_run r;
    swt_slipway_exits(2, "install", NULL);
    swt_slipway_exits(2, "install", "x", "--fleet", "y.yaml", "z", NULL);
    swt_slipway_exits(2, "status", "--fleet", "a.yaml", "b", "c", NULL);
    swt_slipway_exits(2, "status", "--deadline", "forever", NULL);
    /* an endpoint the fleet does not have */
    assert_int_equal(
        swt_slipway(&r, "status", "--fleet", swt_src("examples/local.yaml"), "nope", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "nope"));
    swt_run_free(&r);
    swt_slipway_exits(2, "install", "nope", "--fleet", swt_src("examples/local.yaml"), "--json",
                      NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_user_scope_paths),
        cmocka_unit_test(test_bearer),
        cmocka_unit_test(test_install_refused_before_host),
        cmocka_unit_test(test_status_unreachable),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
