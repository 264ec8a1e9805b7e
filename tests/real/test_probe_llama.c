/*
 * `slipway probe` against real llama-servers booted by `slipway up --detach` (the pinned
 * llama.cpp, a random-weight model with a real tokenizer from `slipway gguf synth`, or the file
 * named by $SW_NET_LLAMA_MODEL), stopped with `slipway down`:
 *  - the model's own template (no tools, no reasoning block): every check a random-weight model
 *    can pass passes (readiness, liveness, models, chat, stream, metrics, over_length,
 *    concurrency, speed) and reasoning, tool_calls and vision are skipped, each with its reason;
 *  - Qwen3's template (a <think> block, tools): reasoning passes (the server splits a forced
 *    <think> into reasoning_content); tool_calls is reported either way (a random model cannot
 *    be made to call a tool by the pinned build's grammar, which lets free text come first);
 *  - nothing listening: exit 1, readiness fails naming the refused connection, the rest skip.
 * Skips (saying why) when llama.cpp is not built or no chat-capable model can be made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>
#include <slipway/probe.h>

#include "swllama.h"
#include "swtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fx {
    char *dir;
    char model[4096];
};

static char g_missing[8700]; /* what setup lacked, for swt_need */

static int setup(void **state)
{
    *state = NULL;
    struct fx *f = calloc(1, sizeof(*f));
    if (!f || swl_chat_dir(&f->dir, f->model, sizeof(f->model), g_missing, sizeof(g_missing))) {
        free(f);
        return 0;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f) {
        swt_tmpdir_free(f->dir);
        free(f);
    }
    return 0;
}

/* One `slipway up --detach` attempt on a free port; 0 and the port, or -1 (reported). */
static int boot_once(struct fx *f, const char *tmpl, char *pidfile, size_t n, int *out_port);

/* Boot with `slipway up --detach`; returns the port, fills pidfile. Another program may take
 * the free port between the look and the bind (other tests run beside this one): try again. */
static int boot(struct fx *f, const char *tmpl, char *pidfile, size_t n)
{
    int port = 0;
    for (int attempt = 0; attempt < 3; attempt++)
        if (!boot_once(f, tmpl, pidfile, n, &port))
            return port;
    fail_msg("slipway up failed three times");
    return -1;
}

static int boot_once(struct fx *f, const char *tmpl, char *pidfile, size_t n, int *out_port)
{
    int port = swt_free_port();
    char ports[16];
    snprintf(ports, sizeof(ports), "%d", port);
    snprintf(pidfile, n, "%s/up-%d.pid", f->dir, port);
    char log[4200];
    snprintf(log, sizeof(log), "%s/up-%d.log", f->dir, port);
    const char *argv[40];
    int k = 0;
    argv[k++] = swt_bin();
    const char *pre[] = {"up",
                         "--detach",
                         "--json",
                         "--pid-file",
                         pidfile,
                         "--log",
                         log,
                         "--timeout",
                         "180",
                         "--",
                         swl_bin("llama-server"),
                         "-m",
                         f->model,
                         "--host",
                         "127.0.0.1",
                         "--port",
                         ports,
                         "-c",
                         "1024",
                         "-np",
                         "2",
                         "--metrics",
                         "--alias",
                         "frank-small",
                         "--jinja",
                         NULL};
    for (int i = 0; pre[i]; i++)
        argv[k++] = pre[i];
    char tpath[4200];
    if (tmpl) {
        snprintf(tpath, sizeof(tpath), "%s/src/models/templates/%s", swl_llama_dir(), tmpl);
        argv[k++] = "--chat-template-file";
        argv[k++] = tpath;
    }
    argv[k] = NULL;
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 300, &r), 0);
    int st = r.status;
    if (st)
        print_message("slipway up failed (%d): %.2000s\n%.2000s\n", st, r.out, r.err);
    swt_run_free(&r);
    *out_port = port;
    return st ? -1 : 0;
}

static void down(const char *pidfile)
{
    struct swt_run r;
    swt_slipway(&r, "down", "--pid-file", pidfile, NULL);
    swt_run_free(&r);
}

static json_t *probe(int port, const char *extra, int *status)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct swt_run r;
    if (extra)
        swt_slipway(&r, "probe", url, "--json", "--model", "frank-small", "--timeout", "120",
                    "--only", extra, NULL);
    else
        swt_slipway(&r, "probe", url, "--json", "--model", "frank-small", "--timeout", "120", NULL);
    *status = r.status;
    json_t *j = swt_json_out(&r);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "checks"), i, c)
        print_message("  %-12s %-5s %s %s\n", json_string_value(json_object_get(c, "name")),
                      json_string_value(json_object_get(c, "status")),
                      json_string_value(json_object_get(c, "evidence")),
                      json_string_value(json_object_get(c, "reason")));
    swt_run_free(&r);
    return j;
}

static const char *status_of(json_t *j, const char *name, const char **reason)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "checks"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "name")), name)) {
            if (reason)
                *reason = json_string_value(json_object_get(c, "reason"));
            return json_string_value(json_object_get(c, "status"));
        }
    }
    fail_msg("no check %s", name);
    return NULL;
}

static void test_plain_template(void **state)
{
    struct fx *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    char pidfile[4300];
    int port = boot(f, NULL, pidfile, sizeof(pidfile));
    int st;
    json_t *j = probe(port, NULL, &st);
    static const char *const must_pass[] = {"readiness",   "liveness",    "models",
                                            "chat",        "stream",      "metrics",
                                            "over_length", "concurrency", "speed"};
    for (size_t i = 0; i < SW_ARRAY_LEN(must_pass); i++)
        assert_string_equal(status_of(j, must_pass[i], NULL), "pass");
    const char *why = NULL;
    static const char *const may_skip[] = {"reasoning", "tool_calls", "vision"};
    for (size_t i = 0; i < SW_ARRAY_LEN(may_skip); i++) {
        assert_string_equal(status_of(j, may_skip[i], &why), "skip");
        assert_true(why && *why);
    }
    assert_int_equal(st, 0);
    assert_string_equal(json_string_value(json_object_get(j, "engine")), "llama.cpp");
    assert_int_equal(json_integer_value(json_object_get(j, "slots")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "window")), 512);
    /* the speed check as a chart: a point per depth for client and server, decode and prefill */
    char *dir = swt_tmpdir();
    const char *svg = swt_join(dir, "speed.svg");
    struct sw_err e;
    assert_int_equal(sw_probe_speed_svg(j, svg, &e), 0);
    char *text = NULL;
    size_t n = 0, depths = 0, points = 0;
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(j, "checks"), i,
                       c) if (!strcmp(json_string_value(json_object_get(c, "name")), "speed"))
        depths = json_array_size(json_object_get(json_object_get(c, "data"), "depths"));
    assert_true(depths >= 2);
    assert_int_equal(sw_read_file(svg, 1 << 22, &text, &n, &e), 0);
    for (const char *q = strstr(text, "<circle"); q; q = strstr(q + 1, "<circle"))
        points++;
    assert_int_equal(points, 4 * depths);
    assert_non_null(strstr(text, "decode tok/s by context depth"));
    assert_non_null(strstr(text, "server (timings)"));
    sw_free(text);
    /* a battery without the speed check: said, no file */
    json_t *none = json_pack("{s:[]}", "checks");
    const char *svg2 = swt_join(dir, "none.svg");
    assert_int_equal(sw_probe_speed_svg(none, svg2, &e), SW_ENOENT);
    assert_int_equal(access(svg2, F_OK), -1);
    json_decref(none);
    swt_tmpdir_free(dir);
    json_decref(j);
    down(pidfile);
}

static void test_qwen3_template(void **state)
{
    struct fx *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    char pidfile[4300];
    int port = boot(f, "Qwen-Qwen3-0.6B.jinja", pidfile, sizeof(pidfile));
    int st;
    json_t *j = probe(port, "readiness,reasoning,tool_calls", &st);
    assert_string_equal(status_of(j, "readiness", NULL), "pass");
    assert_string_equal(status_of(j, "reasoning", NULL), "pass");
    /* reported either way; never a crash or a hang */
    const char *tc = status_of(j, "tool_calls", NULL);
    assert_true(!strcmp(tc, "pass") || !strcmp(tc, "fail"));
    json_decref(j);
    down(pidfile);
}

/* worst_case sizes its half-window prompt with the server's own tokenizer (/apply-template +
 * /tokenize): the server's usage.prompt_tokens of it lands on the target within the margin
 * (max(8, target / 100) tokens), and max_tokens is exactly the rest of the window. Before, the
 * filler came out at 2.25x its target on this SPM vocabulary (every digit a token). */
static void test_worst_case_sized(void **state)
{
    struct fx *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    char pidfile[4300];
    int port = boot(f, NULL, pidfile, sizeof(pidfile));
    int st;
    json_t *j = probe(port, "readiness,worst_case", &st);
    json_t *wc = NULL, *c;
    size_t i;
    json_array_foreach(json_object_get(j, "checks"), i,
                       c) if (!strcmp(json_string_value(json_object_get(c, "name")), "worst_case"))
        wc = c;
    assert_non_null(wc);
    const json_t *d = json_object_get(wc, "data");
    json_int_t target = json_integer_value(json_object_get(d, "target_prompt_tokens"));
    json_int_t got = json_integer_value(json_object_get(d, "prompt_tokens"));
    json_int_t sized = json_integer_value(json_object_get(d, "sized_tokens"));
    json_int_t margin = json_integer_value(json_object_get(d, "margin"));
    json_int_t gen = json_integer_value(json_object_get(d, "max_tokens"));
    json_int_t counts = json_integer_value(json_object_get(d, "size_counts"));
    const char *by = json_string_value(json_object_get(d, "sized_by"));
    print_message("worst_case sizing: target %lld, usage.prompt_tokens %lld, tokenizer %lld, "
                  "margin %lld, %lld counts by %s; max_tokens %lld\n",
                  (long long)target, (long long)got, (long long)sized, (long long)margin,
                  (long long)counts, by ? by : "?", (long long)gen);
    assert_int_equal(target, 256);
    assert_int_equal(margin, 8);
    assert_non_null(by);
    assert_non_null(strstr(by, "/tokenize"));
    assert_true(got >= target - margin && got <= target + margin);
    /* the tokenizer's count is the server's count */
    assert_int_equal(sized, got);
    assert_int_equal(got + gen, 512);
    assert_true(counts >= 1 && counts <= 8);
    assert_string_equal(status_of(j, "worst_case", NULL), "pass");
    assert_int_equal(st, 0);
    json_decref(j);
    down(pidfile);
}

static void test_nothing_listening(void **state)
{
    struct swt_run r;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", swt_free_port());
    swt_slipway(&r, "probe", url, "--ready-wait", "1", NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "refused"));
    assert_non_null(strstr(r.out, "1 failed"));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_template),
        cmocka_unit_test(test_qwen3_template),
        cmocka_unit_test(test_worst_case_sized),
        cmocka_unit_test(test_nothing_listening),
    };
    return cmocka_run_group_tests_name("probe_llama", tests, setup, teardown);
}
