/*
 * Every verb and sub-verb of the real binary behaves alike on its command line. The list comes
 * from the binary (`slipway help --list --json`), so a new verb is covered without an edit here.
 * For each: --help on stdout with exit 0 and nothing on stderr, and `slipway help VERB` prints
 * the same; an unknown option exits 2 with exactly one line naming it; a stray argument where
 * none is accepted exits 2 naming it; a usage error under --json (before or after the bad token)
 * prints {"error": {...}} on stdout; and per verb one option given as --opt=value prints the
 * same as --opt value (cases below: a verb that declares a valued option must have one).
 *
 * pending_verbs: verbs whose options are not read by the option layer yet (src/cli/opt.h). They
 * are run through every check and what fails is printed, but not failed on; the listing must
 * still say they are not converted, so converting one fails this test until it leaves the list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const pending_verbs[] = {NULL};

static char *dir;

static bool pending(const char *name)
{
    char top[64];
    snprintf(top, sizeof(top), "%.*s", (int)strcspn(name, " "), name);
    for (const char *const *p = pending_verbs; *p; p++)
        if (!strcmp(*p, top))
            return true;
    return false;
}

/* Run slipway with the words of `name` ("ledger list") then the NULL-terminated extra args. */
static void run_v(struct swt_run *r, const char *name, const char *const *extra)
{
    const char *argv[48];
    char words[128];
    int n = 0;
    argv[n++] = swt_bin();
    snprintf(words, sizeof(words), "%s", name);
    for (char *w = strtok(words, " "); w && n < 8; w = strtok(NULL, " "))
        argv[n++] = w;
    for (int i = 0; extra && extra[i] && n < 46; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    assert_int_equal(swt_run(argv, NULL, 60, r), 0);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A failed expectation: fails the test, or (a pending verb) is printed and counted. */
static int n_pending_fail;
#define EXPECT(name, cond, ...)                                                                    \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (pending(name)) {                                                                   \
                n_pending_fail++;                                                                  \
                printf("pending %s: ", name);                                                      \
                printf(__VA_ARGS__);                                                               \
                printf("\n");                                                                      \
            } else {                                                                               \
                fail_msg(__VA_ARGS__);                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static json_t *listing(void)
{
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "help", "--list", "--json", NULL), 0);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *v = json_incref(json_object_get(j, "verbs"));
    json_decref(j);
    assert_true(json_array_size(v) > 10);
    swt_run_free(&r);
    return v;
}

static void test_listing(void **state)
{
    json_t *v = listing();
    struct swt_run r, h;
    /* the text list and the JSON list name the same verbs, and `slipway --help` names every
     * top-level one */
    assert_int_equal(swt_slipway(&r, "help", "--list", NULL), 0);
    assert_int_equal(swt_slipway(&h, "--help", NULL), 0);
    assert_int_equal(h.status, 0);
    assert_int_equal(count_lines(r.out), (int)json_array_size(v));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        char line[160];
        snprintf(line, sizeof(line), "%s\n", name);
        assert_non_null(strstr(r.out, line));
        if (!strchr(name, ' ')) {
            snprintf(line, sizeof(line), "  %s ", name);
            assert_non_null(strstr(h.out, line));
        }
        /* a pending verb is still unconverted; a converted one must leave pending_verbs */
        bool conv = json_is_true(json_object_get(e, "converted"));
        if (pending(name) && conv)
            fail_msg("%s is converted: take it out of pending_verbs", name);
        if (!pending(name) && !conv)
            fail_msg("%s is not read by the option layer (src/cli/opt.h)", name);
    }
    /* `slipway --help` lists the top-level verbs alphabetically (SW_VERBS' order) */
    char prev[64] = "";
    for (const char *l = h.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "  ", 2) || l[2] < 'a' || l[2] > 'z')
            continue;
        char verb[64];
        snprintf(verb, sizeof(verb), "%.*s", (int)strcspn(l + 2, " \n"), l + 2);
        if (prev[0] && strcmp(prev, verb) >= 0)
            fail_msg("slipway --help lists %s after %s: keep SW_VERBS (src/cli/cli.h) "
                     "alphabetical",
                     verb, prev);
        snprintf(prev, sizeof(prev), "%s", verb);
    }
    json_decref(v);
    swt_run_free(&r);
    swt_run_free(&h);
}

static void test_help(void **state)
{
    json_t *v = listing();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        struct swt_run r, h;
        const char *help[] = {"--help", NULL}, *shorth[] = {"-h", NULL};
        run_v(&r, name, help);
        EXPECT(name, r.status == 0, "%s --help exited %d", name, r.status);
        EXPECT(name, r.err[0] == '\0', "%s --help wrote on stderr: %.300s", name, r.err);
        char want[160];
        snprintf(want, sizeof(want), "usage: slipway %s ", name);
        EXPECT(name, strstr(r.out, want) != NULL, "%s --help: no '%s' on stdout: %.300s", name,
               want, r.out);
        /* -h and `slipway help VERB [SUB]` print the same */
        run_v(&h, name, shorth);
        EXPECT(name, h.status == 0 && !strcmp(h.out, r.out), "%s -h differs from --help", name);
        swt_run_free(&h);
        char words[160];
        snprintf(words, sizeof(words), "help %s", name);
        run_v(&h, words, NULL);
        EXPECT(name, h.status == 0 && !strcmp(h.out, r.out),
               "slipway help %s differs from slipway %s --help (exit %d)", name, name, h.status);
        swt_run_free(&h);
        swt_run_free(&r);
    }
    json_decref(v);
}

/* exit 2, stdout empty, exactly one line on stderr naming `token` */
static void expect_one_line(const char *name, const struct swt_run *r, const char *token,
                            const char *what)
{
    EXPECT(name, r->status == 2, "%s %s: exit %d, want 2", name, what, r->status);
    EXPECT(name, count_lines(r->err) == 1, "%s %s: %d lines on stderr, want 1: %.400s", name, what,
           count_lines(r->err), r->err);
    EXPECT(name, strstr(r->err, token) != NULL, "%s %s: stderr does not name '%s': %.300s", name,
           what, token, r->err);
    EXPECT(name, r->out[0] == '\0', "%s %s: stdout not empty: %.200s", name, what, r->out);
}

/* exit 2 and {"error": {"message": ...}} on stdout */
static void expect_json_error(const char *name, const struct swt_run *r, const char *what)
{
    EXPECT(name, r->status == 2, "%s %s: exit %d, want 2", name, what, r->status);
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    const json_t *err = json_object_get(j, "error");
    EXPECT(name, json_is_object(err) && json_is_string(json_object_get(err, "message")),
           "%s %s: no {\"error\": {\"message\": ...}} on stdout: %.300s", name, what, r->out);
    json_decref(j);
}

static void test_usage_errors(void **state)
{
    json_t *v = listing();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        struct swt_run r;
        const char *bogus[] = {"--bogus-conformance", NULL};
        run_v(&r, name, bogus);
        expect_one_line(name, &r, "--bogus-conformance", "unknown option");
        swt_run_free(&r);
        const char *bogus_eq[] = {"--bogus-conformance=1", NULL};
        run_v(&r, name, bogus_eq);
        expect_one_line(name, &r, "--bogus-conformance", "unknown --opt=value");
        swt_run_free(&r);

        const char *json_first[] = {"--json", "--bogus-conformance", NULL};
        run_v(&r, name, json_first);
        expect_json_error(name, &r, "--json --bogus");
        swt_run_free(&r);
        const char *json_last[] = {"--bogus-conformance", "--json", NULL};
        run_v(&r, name, json_last);
        expect_json_error(name, &r, "--bogus --json");
        swt_run_free(&r);

        /* one positional more than the verb takes; a verb with sub-verbs takes none of its own
         * (the word is an unknown sub-verb) */
        json_t *ma = json_object_get(e, "max_args");
        bool subs = json_is_true(json_object_get(e, "has_subcommands"));
        if (!subs && !(json_is_integer(ma) && json_integer_value(ma) >= 0))
            continue; /* any number of arguments (ledger note TEXT...) */
        int n = subs ? 1 : (int)json_integer_value(ma) + 1;
        const char *stray[12];
        char names[12][32];
        assert_true(n < 11);
        for (int k = 0; k < n; k++) {
            snprintf(names[k], sizeof(names[k]), "stray-%d", k);
            stray[k] = names[k];
        }
        stray[n] = NULL;
        run_v(&r, name, stray);
        expect_one_line(name, &r, names[n - 1], "stray argument");
        swt_run_free(&r);
        stray[n] = "--json";
        stray[n + 1] = NULL;
        run_v(&r, name, stray);
        expect_json_error(name, &r, "stray argument --json");
        swt_run_free(&r);
    }
    json_decref(v);
}

/* One option per verb, given both ways. `want` must be in stdout or stderr: the value was used. */
struct eq_case {
    const char *verb;     /* top-level verb */
    const char *args[12]; /* with "@" where the option goes */
    const char *opt;      /* "--name" */
    const char *value;
    const char *want;
};

static void test_opt_equals(void **state)
{
    char led[4200], empty[4200], fleet_missing[4200];
    snprintf(led, sizeof(led), "%s/calib.sqlite", dir);
    snprintf(empty, sizeof(empty), "%s/empty.sqlite", dir);
    snprintf(fleet_missing, sizeof(fleet_missing), "%s/no-fleet.yaml", dir);
    char pid_missing[4200];
    snprintf(pid_missing, sizeof(pid_missing), "%s/none.pid", dir);
    swl_cli_import_seed(led);
    char bootlog[4200], vdir[4200];
    snprintf(bootlog, sizeof(bootlog), "%s",
             swt_src("tests/data/bootlogs/llamacpp/bad_flag_fa_quant_v.log"));
    snprintf(vdir, sizeof(vdir), "%s", swt_src("tests/data/vllm/models/frank-primary-inferred"));
    char fetchdir[4200], local[4200];
    snprintf(fetchdir, sizeof(fetchdir), "%s", swt_src("tests/data/calib"));
    snprintf(local, sizeof(local), "%s", swt_src("examples/local.yaml"));
    char unit_file[4200], unit_env[4200];
    snprintf(unit_file, sizeof(unit_file), "%s",
             swt_src("tests/data/units/lint/vllm-podman.service"));
    snprintf(unit_env, sizeof(unit_env), "%s", swt_src("tests/data/units/lint/frank-primary.env"));
    char smi[4200];
    snprintf(smi, sizeof(smi), "%s", swt_src("tests/data/readings/nvidia-smi/one-gpu.csv"));
    char opyaml[4200], fpenv[4200];
    snprintf(fpenv, sizeof(fpenv), "%s", swt_src("examples/frank-primary.env"));
    snprintf(opyaml, sizeof(opyaml), "%s", swt_src("examples/operator.yaml"));
    char up_log[4200], port[16];
    snprintf(up_log, sizeof(up_log), "%s/up-conformance.log", dir);
    snprintf(port, sizeof(port), "%d", swt_free_port());
    const struct eq_case cases[] = {
        /* a duration that is not one: refused before the fleet is read or a host is reached */
        {"apply",
         {"apply", "--fleet", local, "@", "--json"},
         "--deadline",
         "bogus-dur",
         "bogus-dur"},
        {"diff", {"diff", "@", "--json"}, "--fleet", fleet_missing, fleet_missing},
        {"bench", {"bench", "nowhere", "@", "--json"}, "--fleet", fleet_missing, fleet_missing},
        {"bootlog",
         {"bootlog", "parse", bootlog, "@", "--json"},
         "--engine",
         "llama.cpp",
         "\"failure\""},
        {"calibrate",
         {"calibrate", "frank-primary", "@", "--json"},
         "--ledger",
         led,
         "\"geometry\""},
        {"check",
         {"check", "--fleet", local, "--no-ledger", "@", "--json"},
         "--margin",
         "0.5",
         "\"verdict\""},
        /* a duration that is not one: refused before the fleet is read or a host is reached */
        {"deploy",
         {"deploy", "local", "--fleet", local, "@", "--json"},
         "--deadline",
         "bogus-dur",
         "bogus-dur"},
        {"fetch",
         {"fetch", fetchdir, "--verify-only", "@", "--json"},
         "--threads",
         "2",
         "\"layout\""},
        {"gguf", {"gguf", "synth", "@"}, "--template", "bogus-template", "bogus-template"},
        /* a fleet that is not there: refused before a host is asked */
        {"logs", {"logs", "x", "@", "--json"}, "--fleet", fleet_missing, fleet_missing},
        {"watch", {"watch", "--once", "@", "--json"}, "--fleet", fleet_missing, fleet_missing},
        {"import",
         {"import", "env", fpenv, "--engine", "vllm", "@", "--json"},
         "--name",
         "conftest-ep",
         "conftest-ep"},
        {"hosts",
         {"hosts", "check", "--fleet", local, "@", "--json"},
         "--host",
         "nowhere",
         "nowhere"},
        {"install",
         {"install", "local", "--fleet", local, "@", "--json"},
         "--deadline",
         "50ms",
         "'50ms'"},
        {"ledger", {"ledger", "path", "@", "--json"}, "--ledger", empty, empty},
        /* a dry run: the prediction and the first rung, nothing booted */
        {"ladder",
         {"ladder", "frank-primary", "--fleet", opyaml, "--dry-run", "--no-ledger", "@", "--json"},
         "--knob",
         "max_model_len",
         "\"next\""},
        {"history", {"history", "frank-primary", "@", "--json"}, "--ledger", led, "\"tags\""},
        {"retire",
         {"retire", fetchdir, "--dry-run", "--ledger", led, "@", "--json"},
         "--to",
         dir,
         "\"dry_run\""},
        {"plan",
         {"plan", "@", "--gpu-memory", "32GiB", "--json", "--", "vllm", "serve", vdir,
          "--max-model-len", "65536"},
         "--engine",
         "vllm",
         "\"kv_cache_tokens\""},
        {"lint",
         {"lint", unit_file, "--no-verify", "@", "--json"},
         "--env-file",
         unit_env,
         "\"findings\""},
        {"probe", {"probe", "nowhere", "@", "--json"}, "--fleet", fleet_missing, fleet_missing},
        {"render",
         {"render", "local", "--fleet", local, "@", "--json"},
         "--out",
         dir,
         "\"written\""},
        {"completion", {"completion", "scdoc", "@", "--json"}, "--out", dir, "\"written\""},
        /* a tag that is not one: refused before the fleet is read or a host is reached */
        {"rollback",
         {"rollback", "local", "--fleet", local, "@", "--json"},
         "--to",
         "bad/tag",
         "bad/tag"},
        {"down", {"down", "@", "--json"}, "--pid-file", pid_missing, "nothing to stop"},
        {"readings", {"readings", smi, "@", "--json"}, "--tool", "nvidia-smi", "\"used_bytes\""},
        {"export",
         {"export", "harness", "--fleet", opyaml, "@", "--json"},
         "--ledger",
         led,
         "\"contextWindow\""},
        {"report", {"report", "--fleet", opyaml, "@", "--json"}, "--ledger", led, led},
        /* a fleet that is not there: refused before anything listens */
        {"serve", {"serve", "@", "--json"}, "--fleet", fleet_missing, fleet_missing},
        /* an address that is not one: refused before anything is bound or printed */
        {"sim",
         {"sim", "--json", "@", "--engine", "llama.cpp", "--", "llama-server", "-m",
          "/nonexistent.gguf"},
         "--listen",
         "bogus:1",
         "bogus"},
        {"status", {"status", "--fleet", local, "@", "--json"}, "--deadline", "50ms", "'50ms'"},
        /* a dry run plans and gates every single-variable probe, boots nothing */
        {"tune",
         {"tune", "frank-primary", "--fleet", opyaml, "--dry-run", "@", "--json"},
         "--objective",
         "decode_tps@512",
         "\"dry_run\""},
        /* the payload is missing, so nothing starts; the JSON names the log path given */
        {"up",
         {"up", "--json", "@", "--", "llama-server", "-m", "/nonexistent.gguf", "--port", port},
         "--log",
         up_log,
         up_log},
    };
    /* every verb that declares a valued option (itself or a sub-verb) has a case here */
    json_t *v = listing();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (pending(name))
            continue;
        size_t k;
        json_t *o;
        bool valued = false;
        json_array_foreach(json_object_get(e, "options"), k, o) valued |=
            json_is_string(json_object_get(o, "value"));
        if (!valued)
            continue;
        bool found = false;
        for (size_t c = 0; c < SW_ARRAY_LEN(cases); c++)
            found |= !strncmp(name, cases[c].verb, strlen(cases[c].verb)) &&
                     (name[strlen(cases[c].verb)] == ' ' || !name[strlen(cases[c].verb)]);
        if (!found)
            fail_msg("%s has a valued option: add an --opt=value case for it", name);
    }
    json_decref(v);

    for (size_t c = 0; c < SW_ARRAY_LEN(cases); c++) {
        const char *a1[24], *a2[24];
        char eq[4300];
        int n1 = 0, n2 = 0;
        snprintf(eq, sizeof(eq), "%s=%s", cases[c].opt, cases[c].value);
        a1[n1++] = a2[n2++] = swt_bin();
        for (int k = 0; cases[c].args[k]; k++) {
            if (!strcmp(cases[c].args[k], "@")) {
                a1[n1++] = eq;
                a2[n2++] = cases[c].opt;
                a2[n2++] = cases[c].value;
            } else {
                a1[n1++] = a2[n2++] = cases[c].args[k];
            }
        }
        a1[n1] = a2[n2] = NULL;
        struct swt_run r1, r2;
        assert_int_equal(swt_run(a1, NULL, 120, &r1), 0);
        assert_int_equal(swt_run(a2, NULL, 120, &r2), 0);
        if (r1.status != r2.status || strcmp(r1.out, r2.out) || strcmp(r1.err, r2.err))
            fail_msg("%s: %s differs from %s %s\n%d: %.500s%.500s\n%d: %.500s%.500s", cases[c].verb,
                     eq, cases[c].opt, cases[c].value, r1.status, r1.out, r1.err, r2.status, r2.out,
                     r2.err);
        if (!strstr(r1.out, cases[c].want) && !strstr(r1.err, cases[c].want))
            fail_msg("%s %s: '%s' is not in what it printed (exit %d): %.500s%.500s", cases[c].verb,
                     eq, cases[c].want, r1.status, r1.out, r1.err);
        swt_run_free(&r1);
        swt_run_free(&r2);
    }
}

static void test_top_level(void **state)
{
    struct swt_run r;
    /* no verb: usage on stderr, exit 2; an unknown one: one line; version --json --bogus: 2 */
    assert_int_equal(swt_slipway(&r, NULL), 0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "frobnicate", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "frobnicate"));
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "frobnicate", "--json", NULL), 0);
    assert_int_equal(r.status, 2);
    json_decref(swt_json_out(&r));
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "version", "--json", "--bogus", NULL), 0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    /* a missing value, a repeated single option, a value given to a flag */
    assert_int_equal(swt_slipway(&r, "check", "--margin", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "--margin"));
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "check", "--margin", "1", "--margin=2", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "twice"));
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "check", "--no-ledger=yes", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--no-ledger"));
    swt_run_free(&r);
    /* `--` ends the options: what follows is an argument, here the fleet file */
    assert_int_equal(swt_slipway(&r, "fleet", "check", "--", "--not-an-option.yaml", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--not-an-option.yaml"));
    assert_null(strstr(r.err, "unknown option"));
    swt_run_free(&r);
    if (n_pending_fail)
        printf("%d expectation(s) fail for pending_verbs (see above)\n", n_pending_fail);
}

static int setup(void **state)
{
    dir = swt_tmpdir();
    unsetenv("SLIPWAY_LEDGER");
    return 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing),      cmocka_unit_test(test_help),
        cmocka_unit_test(test_usage_errors), cmocka_unit_test(test_opt_equals),
        cmocka_unit_test(test_top_level),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
