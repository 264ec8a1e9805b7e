/*
 * The operator's unit mistakes, planted one at a time into the unit `slipway render` writes for
 * their frank-primary (vLLM in podman on two R9700s, examples/operator.yaml) and frank-small
 * (llama.cpp, native): the rendered units pass every law; each planted mistake is caught by its
 * own law, with the relationship named, and by no other law.
 *
 * examples/operator.yaml does not carry frank-primary's image digest (the operator's log prints
 * neither the image's name nor its digest), so the unpinned render has exactly one finding,
 * image-digest; the clean case pins a stand-in digest in a copy of the fleet text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/unit.h>
#include <slipway/unit_lint.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIN "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Render `name` from examples/operator.yaml, the image pinned when pin is set. */
static char *render(const char *name, bool pin, char **env)
{
    const char *path = swt_src("examples/operator.yaml");
    char *text = NULL, *fleet_text = NULL;
    size_t len = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(path, 1 << 22, &text, &len, &e), 0);
    if (pin) {
        const char *img = "image: localhost/tcclaviger-vllm";
        char *at = strstr(text, img);
        assert_non_null(at);
        size_t head = (size_t)(at - text) + strlen(img);
        fleet_text = malloc(len + strlen(PIN) + 1);
        assert_non_null(fleet_text);
        memcpy(fleet_text, text, head);
        strcpy(fleet_text + head, PIN);
        strcat(fleet_text, text + head);
    } else {
        fleet_text = strdup(text);
    }
    sw_free(text);
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    assert_int_equal(sw_fleet_load_mem(path, fleet_text, strlen(fleet_text), &fo, &f, &e), 0);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    assert_non_null(ep);
    struct sw_unit_render r;
    memset(&r, 0, sizeof(r));
    assert_int_equal(sw_unit_render_endpoint(f, ep, &r, &e), 0);
    char *svc = strdup(r.service.text);
    *env = strdup(r.env.text);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    free(fleet_text);
    return svc;
}

/* Lint text (no verify: nothing is executed) and return the findings. */
static void lint(const char *text, const char *env, struct sw_unit_report *rep)
{
    struct sw_unit *u = NULL;
    struct sw_err e;
    struct sw_unit_lint_opts o = {0};
    memset(rep, 0, sizeof(*rep));
    assert_int_equal(
        sw_unit_parse(text, strlen(text), "slipway-frank-primary.service", env, &u, &e), 0);
    assert_int_equal(sw_unit_lint(u, &o, rep, &e), 0);
    sw_unit_free(u);
}

/* Replace the first occurrence of from with to (the result is new). */
static char *plant(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("the rendered unit has no '%s' to plant into", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    memcpy(out, text, (size_t)(at - text));
    strcpy(out + (at - text), to);
    strcat(out, at + strlen(from));
    return out;
}

/* Exactly one finding, of law `law`, whose message holds every one of the words. */
static void expect_only(const char *text, const char *env, const char *law, ...)
{
    struct sw_unit_report rep;
    lint(text, env, &rep);
    for (size_t i = 0; i < rep.n; i++)
        print_message("  finding %zu: %s: %s\n", i, rep.v[i].law, rep.v[i].msg);
    assert_int_equal(rep.n, 1);
    assert_string_equal(rep.v[0].law, law);
    va_list ap;
    va_start(ap, law);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        if (!strstr(rep.v[0].msg, w))
            fail_msg("the %s finding does not name '%s': %s", law, w, rep.v[0].msg);
    va_end(ap);
    sw_unit_report_free(&rep);
}

static void test_rendered_units_pass(void **state)
{
    (void)state;
    char *env = NULL;
    char *svc = render("frank-primary", true, &env);
    struct sw_unit_report rep;
    lint(svc, env, &rep);
    for (size_t i = 0; i < rep.n; i++)
        print_message("  finding: %s: %s\n", rep.v[i].law, rep.v[i].msg);
    assert_int_equal(rep.n, 0);
    sw_unit_report_free(&rep);
    free(svc);
    free(env);

    svc = render("frank-small", false, &env);
    lint(svc, env, &rep);
    assert_int_equal(rep.n, 0);
    sw_unit_report_free(&rep);
    free(svc);
    free(env);

    /* the example as it is: one finding, the image the log does not pin for us */
    svc = render("frank-primary", false, &env);
    expect_only(svc, env, SW_UNIT_LAW_IMAGE, "localhost/tcclaviger-vllm", "digest", NULL);
    free(svc);
    free(env);
}

static void test_planted_mistakes(void **state)
{
    (void)state;
    char *env = NULL;
    char *svc = render("frank-primary", true, &env);
    char *a, *b;

    /* 1. the start-limit key in [Service]: systemd ignores it with a warning on every load */
    a = plant(svc, "StartLimitIntervalSec=0\n", "");
    b = plant(a, "[Service]\n", "[Service]\nStartLimitIntervalSec=0\n");
    expect_only(b, env, SW_UNIT_LAW_START_LIMIT, "StartLimitIntervalSec", "[Service]", NULL);
    free(a);
    free(b);

    /* 2. no TimeoutStopSec under `podman stop -t 120`: systemd's 90 s default cuts every stop */
    a = plant(svc, "TimeoutStopSec=180\n", "");
    expect_only(a, env, SW_UNIT_LAW_STOP_TIMEOUT, "90", "120", NULL);
    free(a);

    /* 3. Restart=on-failure for vLLM: its API server exits 0 when the engine dies */
    a = plant(svc, "Restart=always\n", "Restart=on-failure\n");
    expect_only(a, env, SW_UNIT_LAW_RESTART, "on-failure", "always", NULL);
    free(a);

    /* 4. the host path handed to the containerised engine (51 restarts) */
    a = plant(svc, "serve /models/Qwen3.8", "serve /home/dank/models/Qwen3.8");
    expect_only(a, env, SW_UNIT_LAW_PATH, "/home/dank/models/Qwen3.8", "/models", NULL);
    free(a);

    /* 5. the image by tag instead of digest */
    a = plant(svc, "localhost/tcclaviger-vllm" PIN, "localhost/tcclaviger-vllm:latest");
    expect_only(a, env, SW_UNIT_LAW_IMAGE, "tcclaviger-vllm:latest", NULL);
    free(a);

    /* 6. a key on the command line (the finding names the flag, never the value) */
    a = plant(svc, "--tool-call-parser qwen3_xml",
              "--tool-call-parser qwen3_xml --api-key sk-live-7f3a9c");
    expect_only(a, env, SW_UNIT_LAW_SECRET, "--api-key", NULL);
    struct sw_unit_report rep;
    lint(a, env, &rep);
    assert_null(strstr(rep.v[0].msg, "sk-live-7f3a9c"));
    sw_unit_report_free(&rep);
    free(a);

    free(svc);
    free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rendered_units_pass),
        cmocka_unit_test(test_planted_mistakes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
