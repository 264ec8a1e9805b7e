/*
 * The one grammar of the verbs that act on a fleet's endpoints (docs/cli.md, "One grammar"):
 * `slipway VERB [ENDPOINT...] [--fleet FILE]`, the fleet from --fleet, else $SLIPWAY_FLEET, else
 * ./fleet.yaml (said once on stderr when it is not the flag, never under --json); the old order,
 * a file where an endpoint goes, an endpoint where the file goes and an unknown endpoint refused
 * with a "did you mean" (exit 2, before anything is read from a host); the hidden `fleet names`
 * the completion calls; --no-ledger against the options that would use a ledger. Everything runs
 * the binary on examples/operator.yaml copied into a directory of its own; no host is reached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = swt_tmpdir();
    /* the operator's fleet as ./fleet.yaml, with the env files it imports */
    const char *files[][2] = {{"examples/operator.yaml", "fleet.yaml"},
                              {"examples/frank-primary.env", "frank-primary.env"},
                              {"examples/frank-small.env", "frank-small.env"}};
    for (size_t i = 0; i < SW_ARRAY_LEN(files); i++) {
        char *text = NULL;
        size_t len = 0;
        struct sw_err e;
        if (sw_read_file(swt_src(files[i][0]), 1u << 20, &text, &len, &e))
            fail_msg("%s: %s", files[i][0], e.msg);
        swt_write(swt_join(dir, files[i][1]), text, len);
        sw_free(text);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    swt_tmpdir_free(dir);
    return 0;
}

/* slipway ARGS... run in `in` with $SLIPWAY_FLEET set to env_fleet (NULL: unset). */
static void run_in(struct swt_run *r, const char *in, const char *env_fleet, ...)
{
    const char *argv[40];
    char assign[4300];
    int n = 0;
    argv[n++] = "env";
    argv[n++] = "-u";
    argv[n++] = "SLIPWAY_FLEET";
    if (env_fleet) {
        snprintf(assign, sizeof(assign), "SLIPWAY_FLEET=%s", env_fleet);
        argv[n++] = assign;
    }
    argv[n++] = "sh";
    argv[n++] = "-c";
    argv[n++] = "cd \"$0\" && exec \"$@\"";
    argv[n++] = in;
    argv[n++] = swt_bin();
    va_list ap;
    va_start(ap, env_fleet);
    swt_argv_va(argv, n, 39, ap);
    va_end(ap);
    assert_int_equal(swt_run(argv, NULL, 60, r), 0);
}

static void has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("want '%s' in: %s", want, text);
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The fleet: the flag, $SLIPWAY_FLEET, ./fleet.yaml; where it came from said once, not under
 * --json; none at all is an error naming all three. */
static void test_resolution(void **state)
{
    (void)state;
    struct swt_run r;
    const char *fleet = swt_join(dir, "fleet.yaml");
    /* ./fleet.yaml: said once */
    run_in(&r, dir, NULL, "plan", "frank-small", NULL);
    assert_int_equal(r.status, 0);
    has(r.err, "fleet: ./fleet.yaml (default)\n");
    assert_int_equal(count(r.err, "fleet: "), 1);
    has(r.out, "frank-small");
    assert_null(strstr(r.out, "frank-primary "));
    swt_run_free(&r);
    /* under --json: stdout is the document, stderr has no note */
    run_in(&r, dir, NULL, "plan", "frank-small", "--json", NULL);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "fleet: "));
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "fleet")), "fleet.yaml");
    json_decref(j);
    swt_run_free(&r);
    /* $SLIPWAY_FLEET from elsewhere */
    run_in(&r, "/", fleet, "plan", "frank-small", NULL);
    assert_int_equal(r.status, 0);
    char want[4400];
    snprintf(want, sizeof(want), "fleet: %s (from $SLIPWAY_FLEET)\n", fleet);
    has(r.err, want);
    swt_run_free(&r);
    /* the flag wins over both, and is not announced */
    run_in(&r, "/", "/nonexistent.yaml", "plan", "frank-small", "--fleet", fleet, NULL);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "fleet: "));
    swt_run_free(&r);
    /* none: exit 2 naming the ways to give one */
    run_in(&r, "/", NULL, "status", NULL);
    assert_int_equal(r.status, 2);
    has(r.err,
        "no fleet file: ./fleet.yaml is not here (give --fleet FILE, or set $SLIPWAY_FLEET)");
    swt_run_free(&r);
    run_in(&r, "/", "/nonexistent.yaml", "render", "frank-small", NULL);
    assert_int_equal(r.status, 2);
    has(r.err, "$SLIPWAY_FLEET names '/nonexistent.yaml': no such file");
    swt_run_free(&r);
}

/* The old order and its mirror images get a "did you mean", exit 2. */
static void test_did_you_mean(void **state)
{
    (void)state;
    struct swt_run r;
    const char *fleet = swt_join(dir, "fleet.yaml");
    char want[4400];
    /* the old orders: render ENDPOINT FLEET, check FLEET ENDPOINT, status FLEET */
    const char *verbs[] = {"render", "deploy", "install", "history", "ladder", "sim", "rollback"};
    for (size_t i = 0; i < SW_ARRAY_LEN(verbs); i++) {
        run_in(&r, "/", NULL, verbs[i], "frank-small", fleet, "--json", NULL);
        if (r.status != 2 || !strstr(r.err, "is a file: did you mean --fleet"))
            fail_msg("%s ENDPOINT FLEET: exit %d: %s", verbs[i], r.status, r.err);
        json_t *j = swt_json_out(&r);
        assert_non_null(json_object_get(j, "error"));
        json_decref(j);
        swt_run_free(&r);
    }
    const char *first[] = {"check", "status", "plan", "up", "report", "down"};
    for (size_t i = 0; i < SW_ARRAY_LEN(first); i++) {
        run_in(&r, "/", NULL, first[i], fleet, NULL);
        snprintf(want, sizeof(want), "'%s' is a file: did you mean --fleet %s?", fleet, fleet);
        if (r.status != 2 || !strstr(r.err, want))
            fail_msg("%s FLEET: exit %d: %s", first[i], r.status, r.err);
        swt_run_free(&r);
    }
    run_in(&r, "/", NULL, "check", fleet, "frank-small", NULL);
    assert_int_equal(r.status, 2);
    has(r.err, "is a file: did you mean --fleet");
    swt_run_free(&r);
    /* in the fleet file's folder: usage errors (exit 2) that say what was meant */
    static const struct {
        const char *args[4]; /* NULL-terminated */
        const char *want;
    } mistakes[] = {
        /* a file name that is not there either */
        {{"render", "nope/fleet.yaml"},
         "'nope/fleet.yaml' is a file name, not an endpoint (and there is no such file)"},
        /* an endpoint where the file goes */
        {{"render", "--fleet", "frank-small"},
         "--fleet 'frank-small': no such file; 'frank-small' is an endpoint of "
         "./fleet.yaml: did you mean slipway render frank-small?"},
        /* an unknown endpoint: the nearest by edit distance, else the names */
        {{"render", "frank-smal"},
         "no endpoint 'frank-smal' in fleet.yaml: did you mean frank-small?"},
        {{"deploy", "zebra", "--dry-run"},
         "no endpoint 'zebra' in fleet.yaml (it has: frank-primary, frank-small"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(mistakes); i++) {
        const char *const *m = mistakes[i].args;
        run_in(&r, dir, NULL, m[0], m[1], m[2], m[3], NULL);
        assert_int_equal(r.status, 2);
        has(r.err, mistakes[i].want);
        swt_run_free(&r);
    }
    /* a URL or a command line stays what it was */
    run_in(&r, dir, NULL, "probe", "http://127.0.0.1:1", "--only", "readiness", "--ready-wait", "0",
           "--timeout", "1", "--json", NULL);
    assert_int_not_equal(r.status, 2);
    swt_run_free(&r);
}

/* The hidden helper the completion script calls: the names, one a line; quiet. */
static void test_fleet_names(void **state)
{
    (void)state;
    struct swt_run r;
    run_in(&r, dir, NULL, "fleet", "names", NULL);
    assert_int_equal(r.status, 0);
    has(r.out, "frank-primary\nfrank-small\n");
    assert_string_equal(r.err, "");
    swt_run_free(&r);
    run_in(&r, "/", swt_join(dir, "fleet.yaml"), "fleet", "names", NULL);
    assert_int_equal(r.status, 0);
    has(r.out, "frank-small\n");
    swt_run_free(&r);
    /* not in the verbs' list, nor in `fleet --help` */
    assert_int_equal(swt_slipway(&r, "fleet", "--help", NULL), 0);
    assert_null(strstr(r.out, "names"));
    swt_run_free(&r);
}

/* --no-ledger: accepted where --ledger is, refused with what would use a ledger, refused with
 * the reason where the ledger is the verb's input. */
static void test_no_ledger(void **state)
{
    (void)state;
    struct swt_run r;
    run_in(&r, dir, NULL, "status", "--no-ledger", "--record", NULL);
    assert_int_equal(r.status, 2);
    has(r.err, "--no-ledger and --record together");
    swt_run_free(&r);
    run_in(&r, dir, NULL, "tune", "frank-small", "--no-ledger", "--ledger", "x.sqlite",
           "--objective", "decode_tps@64", NULL);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    run_in(&r, dir, NULL, "tune", "frank-small", "--no-ledger", "--objective", "decode_tps@64",
           "--dry-run", "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_null(json_object_get(j, "ledger")));
    json_decref(j);
    swt_run_free(&r);
    run_in(&r, dir, NULL, "report", "--no-ledger", "--json", NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    const char *refused[] = {"history", "calibrate"};
    for (size_t i = 0; i < SW_ARRAY_LEN(refused); i++) {
        run_in(&r, dir, NULL, refused[i], "frank-small", "--no-ledger", NULL);
        assert_int_equal(r.status, 2);
        has(r.err, "there is no --no-ledger: ");
        swt_run_free(&r);
    }
    /* every verb with --ledger lists --no-ledger too (or refuses it, saying why) */
    assert_int_equal(swt_slipway(&r, "help", "--list", "--json", NULL), 0);
    j = swt_json_out(&r);
    swt_run_free(&r);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "verbs"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        bool ledger = false, no = false;
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(v, "options"), k, o)
        {
            ledger |= !strcmp(json_string_value(json_object_get(o, "name")), "ledger");
            no |= !strcmp(json_string_value(json_object_get(o, "name")), "no-ledger");
        }
        if (!ledger || no || json_is_true(json_object_get(v, "has_subcommands")))
            continue;
        /* refused: `--no-ledger` is a usage error that says why */
        char words[64];
        snprintf(words, sizeof(words), "%s", name);
        const char *argv[8];
        int n = 0;
        argv[n++] = swt_bin();
        char *sp = strchr(words, ' ');
        if (sp)
            *sp = '\0';
        argv[n++] = words;
        if (sp)
            argv[n++] = sp + 1;
        argv[n++] = "--no-ledger";
        argv[n] = NULL;
        assert_int_equal(swt_run(argv, NULL, 30, &r), 0);
        if (r.status != 2 || !strstr(r.err, "there is no --no-ledger: "))
            fail_msg("%s has --ledger but no --no-ledger: %s", name, r.err);
        swt_run_free(&r);
    }
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolution),
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_fleet_names),
        cmocka_unit_test(test_no_ledger),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
