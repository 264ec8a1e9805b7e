/*
 * tune without a boot: the objective grammar, the journal (ledger tables tune_runs and
 * tune_probes: begin, resume, probes, finish, refusals), the dry run on frank-primary of
 * examples/operator.yaml (every single-variable candidate planned and gated, the rejected ones
 * with the gate that rejected them, nothing booted), and the refusals before any search (a knob
 * that would move the payload, an endpoint without knobs), each at its fleet position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/tune.h>

#include "swtest.h"
#include "tune/tune_internal.h" /* sw__tune_refine */

#include <dirent.h>
#include <math.h>
#include <string.h>

static void test_objective(void **state)
{
    (void)state;
    struct sw_tune_objective o;
    struct sw_err e;
    assert_int_equal(sw_tune_objective_parse("decode_tps@512", &o, &e), 0);
    assert_int_equal(o.metric, SW_TUNE_DECODE_TPS);
    assert_int_equal(o.depth, 512);
    assert_string_equal(o.text, "decode_tps@512");
    assert_int_equal(sw_tune_objective_parse("decode_tps@4k", &o, &e), 0);
    assert_int_equal(o.depth, 4000);
    assert_int_equal(sw_tune_objective_parse("goodput", &o, &e), 0);
    assert_int_equal(o.metric, SW_TUNE_GOODPUT);
    assert_int_equal(o.depth, 256);
    assert_true(fabs(o.slo_tpot_s - 0.1) < 1e-9);
    assert_int_equal(sw_tune_objective_parse("goodput@1k:ttft=2s,tpot=50ms", &o, &e), 0);
    assert_int_equal(o.depth, 1000);
    assert_true(fabs(o.slo_ttft_s - 2) < 1e-9);
    assert_true(fabs(o.slo_tpot_s - 0.05) < 1e-9);
    assert_string_equal(o.text, "goodput@1000:ttft=2000ms,tpot=50ms");
    const char *bad[] = {"decode_tps",   "decode_tps@",    "decode_tps@x",
                         "goodput:tpot", "goodput:foo=1s", "goodput:tpot=fast",
                         "goodputs",     "throughput@512", NULL};
    for (size_t i = 0; bad[i]; i++) {
        sw_err_clear(&e);
        assert_int_equal(sw_tune_objective_parse(bad[i], &o, &e), SW_EINVAL);
        assert_true(strlen(e.msg) > 0);
    }
}

static void test_journal(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    struct sw_ledger l;
    struct sw_err e;
    memset(&l, 0, sizeof(l));
    assert_int_equal(sw_ledger_open(&l, swt_join(dir, "l.sqlite"), NULL, &e), 0);
    int64_t run = 0, again = 0;
    bool resumed = true;
    assert_int_equal(
        sw_ledger_tune_begin(&l, "tiny", "decode_tps@64", "2 knobs, fnv 1", &run, &resumed, &e), 0);
    assert_false(resumed);
    json_t *p = json_pack("{s:i, s:s, s:s, s:s, s:s, s:{s:s}}", "seq", 1, "phase", "single",
                          "candidate", "seqs=2", "outcome", "rejected", "gate", "known_bad",
                          "evidence", "why", "compile constraint");
    assert_int_equal(sw_ledger_tune_probe(&l, run, p, &e), 0);
    json_decref(p);
    p = json_pack("{s:i, s:s, s:s, s:s, s:f, s:f, s:{}}", "seq", 2, "phase", "baseline",
                  "candidate", "baseline", "outcome", "measured", "score", 100.5, "noise", 0.04,
                  "evidence");
    assert_int_equal(sw_ledger_tune_probe(&l, run, p, &e), 0);
    /* the same seq twice is refused: a probe is written once */
    assert_int_not_equal(sw_ledger_tune_probe(&l, run, p, &e), 0);
    json_decref(p);
    /* refused before SQL: a gate without a rejection, a rejection without its gate, a phase */
    p = json_pack("{s:i, s:s, s:s, s:s, s:s}", "seq", 3, "phase", "single", "candidate", "x=1",
                  "outcome", "measured", "gate", "pool");
    assert_int_equal(sw_ledger_tune_probe(&l, run, p, &e), SW_EINVAL);
    json_decref(p);
    p = json_pack("{s:i, s:s, s:s, s:s}", "seq", 3, "phase", "single", "candidate", "x=1",
                  "outcome", "rejected");
    assert_int_equal(sw_ledger_tune_probe(&l, run, p, &e), SW_EINVAL);
    json_decref(p);
    p = json_pack("{s:i, s:s, s:s, s:s}", "seq", 3, "phase", "sideways", "candidate", "x=1",
                  "outcome", "measured");
    assert_int_equal(sw_ledger_tune_probe(&l, run, p, &e), SW_EINVAL);
    json_decref(p);
    /* an open run of the same space is resumed; another space is another run */
    assert_int_equal(
        sw_ledger_tune_begin(&l, "tiny", "decode_tps@64", "2 knobs, fnv 1", &again, &resumed, &e),
        0);
    assert_true(resumed);
    assert_int_equal(again, run);
    json_t *ps = NULL;
    assert_int_equal(sw_ledger_tune_probes(&l, run, &ps, &e), 0);
    assert_int_equal(json_array_size(ps), 2);
    const json_t *p0 = json_array_get(ps, 0), *p1 = json_array_get(ps, 1);
    assert_string_equal(json_string_value(json_object_get(p0, "gate")), "known_bad");
    assert_string_equal(json_string_value(json_object_get(json_object_get(p0, "evidence"), "why")),
                        "compile constraint");
    assert_true(json_is_null(json_object_get(p1, "gate")));
    assert_true(fabs(json_number_value(json_object_get(p1, "score")) - 100.5) < 1e-9);
    json_decref(ps);
    assert_int_equal(sw_ledger_tune_finish(&l, run, "crowned", NULL, &e), 0);
    /* ended: not finished twice, and the next begin is a new run */
    assert_int_equal(sw_ledger_tune_finish(&l, run, "no_winner", NULL, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_tune_finish(&l, run, "won", NULL, &e), SW_EINVAL);
    assert_int_equal(
        sw_ledger_tune_begin(&l, "tiny", "decode_tps@64", "2 knobs, fnv 1", &again, &resumed, &e),
        0);
    assert_false(resumed);
    assert_true(again != run);
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
}

static void test_dry_run_frank_primary(void **state)
{
    (void)state;
    char fleet[4200];
    snprintf(fleet, sizeof(fleet), "%s/examples/operator.yaml", SW_SOURCE_DIR);
    char *dir = swt_tmpdir();
    struct sw_tune_opts o;
    struct sw_err e;
    json_t *rep = NULL;
    sw_tune_opts_init(&o);
    o.fleet = fleet;
    o.endpoint = "frank-primary";
    o.dry_run = true;
    o.ledger = swt_join(dir, "none.sqlite"); /* absent: the gates run without ledger evidence */
    assert_int_equal(sw_tune_objective_parse("decode_tps@512", &o.objective, &e), 0);
    assert_int_equal(sw_tune_run(&o, &rep, &e), 0);
    assert_string_equal(json_string_value(json_object_get(rep, "outcome")), "dry_run");
    assert_string_equal(json_string_value(json_object_get(rep, "boot")), "sim");
    assert_int_equal(json_integer_value(json_object_get(rep, "boots")), 0);
    size_t i, rejected = 0, planned = 0;
    const json_t *p;
    bool seqs2 = false, kv1e9 = false;
    json_array_foreach(json_object_get(rep, "probes"), i, p)
    {
        const char *oc = json_string_value(json_object_get(p, "outcome"));
        const char *cand = json_string_value(json_object_get(p, "candidate"));
        const char *gate = json_string_value(json_object_get(p, "gate"));
        if (!strcmp(oc, "rejected")) {
            rejected++;
            assert_non_null(gate);
        } else {
            assert_string_equal(oc, "planned");
            planned++;
        }
        if (!strcmp(cand, "seqs=2"))
            seqs2 = gate && strstr(gate, "known_bad");
        if (!strcmp(cand, "kv_cache_bytes=1000000000"))
            kv1e9 = gate && strstr(gate, "pool");
        /* no candidate names a frozen setting */
        const json_t *st = json_object_get(p, "settings");
        assert_null(json_object_get(st, "quantization"));
        assert_null(json_object_get(st, "image"));
        assert_null(json_object_get(st, "payload"));
    }
    assert_true(seqs2);
    assert_true(kv1e9);
    assert_int_equal(json_integer_value(json_object_get(rep, "rejected")), (json_int_t)rejected);
    assert_true(rejected >= 5);
    assert_true(planned >= 5);
    /* the HTML report is self-contained */
    assert_int_equal(sw_tune_html(rep, swt_join(dir, "t.html"), &e), 0);
    assert_true(swt_file_has(swt_join(dir, "t.html"), "frank-primary"));
    json_decref(rep);
    swt_tmpdir_free(dir);
}

static void refused(const char *yaml, const char *want)
{
    char *dir = swt_tmpdir();
    char path[4200];
    snprintf(path, sizeof(path), "%s/f.yaml", dir);
    swt_write_str(path, yaml);
    struct sw_tune_opts o;
    struct sw_err e;
    json_t *rep = NULL;
    sw_err_clear(&e);
    sw_tune_opts_init(&o);
    o.fleet = path;
    o.endpoint = "tiny";
    o.dry_run = true;
    o.ledger = swt_join(dir, "none.sqlite");
    assert_int_equal(sw_tune_objective_parse("decode_tps@64", &o.objective, &e), 0);
    assert_int_not_equal(sw_tune_run(&o, &rep, &e), 0);
    assert_null(rep);
    char full[2000];
    snprintf(full, sizeof(full), "%s:%d:%d: %s", e.where, e.line, e.col, e.msg);
    if (!strstr(full, want) && !strstr(e.msg, want))
        fail_msg("'%s' not in '%s'", want, full);
    swt_tmpdir_free(dir);
}

/* A fleet's hosts and endpoints: llama.cpp endpoint tiny on the local host, its architecture
 * declared (no GGUF here); its shape and the rest follow. */
#define TINY_FLEET                                                                                 \
    "hosts:\n"                                                                                     \
    "  localhost: {transport: local}\n"                                                            \
    "endpoints:\n"                                                                                 \
    "  tiny:\n"                                                                                    \
    "    host: localhost\n"                                                                        \
    "    engine: llama.cpp\n"                                                                      \
    "    payload: {path: /nonexistent, gguf: m.gguf}\n"                                            \
    "    arch: {model_type: llama, num_hidden_layers: 2, hidden_size: 64, "                        \
    "num_attention_heads: 4, num_key_value_heads: 4}\n"

static void test_refusals(void **state)
{
    (void)state;
    static const char head[] = "version: 1\n" TINY_FLEET "    shape: {ctx_size: 4096, seqs: 1}\n";
    char yaml[4096];
    /* the payload is frozen always: a knob on the model flag is refused at its line */
    snprintf(yaml, sizeof(yaml), "%s    knobs:\n      arg.--model: [a.gguf, b.gguf]\n", head);
    refused(yaml, "f.yaml:12:7");
    refused(yaml, "frozen always");
    /* nothing declared: nothing to tune */
    snprintf(yaml, sizeof(yaml), "%s", head);
    refused(yaml, "declares no knobs");
    /* a request mix alone moves nothing that boots */
    snprintf(yaml, sizeof(yaml), "%s    knobs:\n      load.mix: ['64/8', '1k/64']\n", head);
    refused(yaml, "declares no knobs");
    /* a mix that is not DEPTH/TOKENS: refused at its value's position */
    snprintf(yaml, sizeof(yaml),
             "%s    knobs:\n      seqs: [1, 2]\n      load.mix: ['64/8', '1k']\n", head);
    refused(yaml, "f.yaml:13:27");
    refused(yaml, "not DEPTH/TOKENS");
    snprintf(yaml, sizeof(yaml),
             "%s    knobs:\n      seqs: [1, 2]\n      load.mix: ['64/8', '64/8']\n", head);
    refused(yaml, "lists 64/8 twice");
}

/* --runner's names, in the enum's order; anything else refused */
static void test_runner_parse(void **state)
{
    (void)state;
    static const char *const names[] = {"auto", "local", "sim", "rollout"};
    static const enum sw_tune_boot want[] = {SW_TUNE_BOOT_AUTO, SW_TUNE_BOOT_LOCAL,
                                             SW_TUNE_BOOT_SIM, SW_TUNE_BOOT_ROLLOUT};
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        enum sw_tune_boot b = (enum sw_tune_boot)99;
        assert_int_equal(sw_tune_runner_parse(names[i], &b), 0);
        assert_int_equal(b, want[i]);
    }
    enum sw_tune_boot b = SW_TUNE_BOOT_SIM;
    assert_int_equal(sw_tune_runner_parse("ssh", &b), SW_EINVAL);
    assert_int_equal(sw_tune_runner_parse("", &b), SW_EINVAL);
    assert_int_equal(sw_tune_runner_parse(NULL, &b), SW_EINVAL);
    assert_int_equal(b, SW_TUNE_BOOT_SIM);
}

/* The winner written back into the fleet file: only the crowned values move, comments stay, the
 * file is replaced whole or not at all. */
static void test_apply(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    char path[4200];
    snprintf(path, sizeof(path), "%s/f.yaml", dir);
    static const char yaml[] = "version: 1\n"
                               "# the operator's fleet\n" TINY_FLEET
                               "    shape: {ctx_size: 8192, seqs: 1}   # one slot for now\n"
                               "    args: [--threads, '8', -ub, 512] # keep\n"
                               "    env:\n"
                               "      GGML_SCHED_MAX_COPIES: \"4\"  # the default\n"
                               "    knobs:\n"
                               "      seqs: [1, 4]\n"
                               "      arg.--threads: ['1', '8']\n"
                               "      arg.--ubatch-size: ['128', '512']\n"
                               "      arg.--flash-attn: ['on', 'off']\n"
                               "      env.GGML_SCHED_MAX_COPIES: ['1', '4']\n";
    swt_write_str(path, yaml);
    struct sw_err e;
    struct sw_buf d;
    sw_err_clear(&e);
    sw_buf_init(&d, 1 << 20);
    json_t *st = json_pack("{s:s, s:s, s:s, s:s}", "seqs", "4", "arg.--threads", "1",
                           "arg.--ubatch-size", "128", "env.GGML_SCHED_MAX_COPIES", "1");
    /* dry run: the patch, nothing written */
    int rc = sw_tune_apply(path, "tiny", st, true, &d, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_non_null(strstr(sw_buf_cstr(&d), "+    shape: {ctx_size: 8192, seqs: 4}   # one slot"));
    assert_non_null(strstr(sw_buf_cstr(&d), "-    args: [--threads, '8', -ub, 512] # keep"));
    assert_non_null(strstr(sw_buf_cstr(&d), "+    args: [--threads, '1', -ub, 128] # keep"));
    assert_true(swt_file_is(path, yaml, strlen(yaml)));
    /* written: exactly those scalars moved, comments and quotes kept */
    sw_buf_free(&d);
    sw_buf_init(&d, 1 << 20);
    rc = sw_tune_apply(path, "tiny", st, false, &d, &e);
    if (rc)
        fail_msg("%s", e.msg);
    char want[4096];
    snprintf(want, sizeof(want), "%s", yaml);
    static const char *const swaps[][2] = {
        {"{ctx_size: 8192, seqs: 1}", "{ctx_size: 8192, seqs: 4}"},
        {"[--threads, '8', -ub, 512]", "[--threads, '1', -ub, 128]"},
        {"GGML_SCHED_MAX_COPIES: \"4\"", "GGML_SCHED_MAX_COPIES: \"1\""},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(swaps); i++) {
        char *at = strstr(want, swaps[i][0]);
        assert_non_null(at);
        assert_int_equal(strlen(swaps[i][0]), strlen(swaps[i][1]));
        memcpy(at, swaps[i][1], strlen(swaps[i][1]));
    }
    assert_true(swt_file_is(path, want, strlen(want)));
    /* nothing left beside it */
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    for (struct dirent *de = readdir(dh); de; de = readdir(dh))
        assert_null(strstr(de->d_name, "tune-apply"));
    closedir(dh);
    json_decref(st);

    /* a flag the file does not spell: refused, naming what to add; the file untouched */
    st = json_pack("{s:s, s:s}", "seqs", "1", "arg.--flash-attn", "on");
    rc = sw_tune_apply(path, "tiny", st, false, NULL, &e);
    assert_int_equal(rc, SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "add `--flash-attn, VALUE` to args"));
    assert_true(swt_file_is(path, want, strlen(want)));
    json_decref(st);

    /* a shape shared through an anchor: the edit would move another endpoint, refused */
    static const char shared[] = "version: 1\n"
                                 "hosts:\n"
                                 "  localhost: {transport: local}\n"
                                 "x-shape: &sh {ctx_size: 4096, seqs: 1}\n"
                                 "endpoints:\n"
                                 "  a:\n"
                                 "    host: localhost\n"
                                 "    engine: llama.cpp\n"
                                 "    listen: 127.0.0.1:18081\n"
                                 "    payload: {path: /nonexistent, gguf: m.gguf}\n"
                                 "    arch: {model_type: llama, num_hidden_layers: 2, "
                                 "hidden_size: 64, num_attention_heads: 4, "
                                 "num_key_value_heads: 4}\n"
                                 "    shape: *sh\n"
                                 "  b:\n"
                                 "    host: localhost\n"
                                 "    engine: llama.cpp\n"
                                 "    listen: 127.0.0.1:18082\n"
                                 "    payload: {path: /nonexistent, gguf: m.gguf}\n"
                                 "    arch: {model_type: llama, num_hidden_layers: 2, "
                                 "hidden_size: 64, num_attention_heads: 4, "
                                 "num_key_value_heads: 4}\n"
                                 "    shape: *sh\n";
    char p2[4200];
    snprintf(p2, sizeof(p2), "%s/shared.yaml", dir);
    swt_write_str(p2, shared);
    st = json_pack("{s:s}", "seqs", "2");
    struct sw_fleet *f = NULL;
    if (sw_fleet_load(p2, NULL, &f, &e))
        fail_msg("the anchored fleet does not load: %s", e.msg);
    sw_fleet_free(f);
    rc = sw_tune_apply(p2, "a", st, false, NULL, &e);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(e.msg, "more than the crowned settings"));
    assert_true(swt_file_is(p2, shared, strlen(shared)));
    json_decref(st);
    /* no such endpoint, no settings */
    st = json_pack("{s:s}", "seqs", "2");
    assert_int_equal(sw_tune_apply(path, "nope", st, false, NULL, &e), SW_ENOENT);
    json_decref(st);
    st = json_object();
    assert_int_equal(sw_tune_apply(path, "tiny", st, false, NULL, &e), SW_EINVAL);
    json_decref(st);
    assert_true(swt_file_is(path, want, strlen(want)));
    sw_buf_free(&d);
    swt_tmpdir_free(dir);
}

/* The request mix's grammar. */
static void test_mix(void **state)
{
    (void)state;
    struct sw__tune_mix mx;
    struct sw_err e;
    assert_int_equal(sw__tune_mix_parse("512/64", &mx, &e), 0);
    assert_true(mx.depth == 512 && mx.tokens == 64);
    assert_string_equal(mx.name, "512/64");
    assert_int_equal(sw__tune_mix_parse("4k/256", &mx, &e), 0);
    assert_true(mx.depth == 4000 && mx.tokens == 256); /* counts: k is x1000, Ki x1024 */
    assert_int_equal(sw__tune_mix_parse("0/1", &mx, &e), 0);
    static const char *const bad[] = {"512",        "/64", "512/",       "512/0",
                                      "512/100000", "x/8", "99999999/8", "1/2/3"};
    for (size_t i = 0; i < SW_ARRAY_LEN(bad); i++)
        assert_int_equal(sw__tune_mix_parse(bad[i], &mx, &e), SW_EINVAL);
    assert_int_equal(sw__tune_mix_parse(NULL, &mx, &e), SW_EINVAL);
}

/* A range refined around its best point: midpoints on the step toward the best, never a point
 * already tried, never outside the range. */
static void test_refine(void **state)
{
    (void)state;
    double out[2];
    /* seqs 3..12 step 1: 3 (baseline), 6, 9, 12; 9 best: 8 (7.5 toward 9) and 10 (10.5 toward 9) */
    double xs[] = {3, 6, 9, 12}, sc[] = {500, 620, 760, 730};
    assert_int_equal(sw__tune_refine(3, 12, 1, false, xs, sc, 4, out), 2);
    assert_true(out[0] == 8 && out[1] == 10);
    /* round two: 8 best between 6 and 9 (10 tried): 7; 8.5 toward 8 is 8 itself: none */
    double xs2[] = {3, 6, 9, 12, 8, 10}, sc2[] = {500, 620, 760, 730, 780, 630};
    assert_int_equal(sw__tune_refine(3, 12, 1, false, xs2, sc2, 6, out), 1);
    assert_true(out[0] == 7);
    /* on the step from the minimum: 131072..262144 step 4096, best at the top end */
    double xs3[] = {131072, 172032, 217088, 262144}, sc3[] = {1, 2, 3, 4};
    assert_int_equal(sw__tune_refine(131072, 262144, 4096, false, xs3, sc3, 4, out), 1);
    assert_true(out[0] == 241664); /* (217088 + 262144) / 2 = 239616, on the step toward the top */
    assert_true(fmod(out[0] - 131072, 4096) == 0);
    /* a neighbour that was not measured (rejected, failed) still bounds the refinement */
    double sc4[] = {NAN, 5, NAN, NAN};
    assert_int_equal(sw__tune_refine(131072, 262144, 4096, false, xs3, sc4, 4, out), 2);
    assert_true(out[0] > 131072 && out[0] < 172032 && out[1] > 172032 && out[1] < 217088);
    /* nothing measured: nothing to refine around; adjacent points: nothing between */
    double sc5[] = {NAN, NAN, NAN, NAN};
    assert_int_equal(sw__tune_refine(131072, 262144, 4096, false, xs3, sc5, 4, out), 0);
    double xs6[] = {1, 2, 3}, sc6[] = {1, 3, 2};
    assert_int_equal(sw__tune_refine(1, 3, 1, false, xs6, sc6, 3, out), 0);
    /* a real-valued range: plain midpoints */
    double xs7[] = {0.5, 0.7, 0.9}, sc7[] = {1, 2, 1};
    assert_int_equal(sw__tune_refine(0.5, 0.9, 0, true, xs7, sc7, 3, out), 2);
    assert_true(fabs(out[0] - 0.6) < 1e-12 && fabs(out[1] - 0.8) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objective),
        cmocka_unit_test(test_journal),
        cmocka_unit_test(test_dry_run_frank_primary),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_runner_parse),
        cmocka_unit_test(test_refine),
        cmocka_unit_test(test_mix),
        cmocka_unit_test(test_apply),
    };
    return cmocka_run_group_tests_name("tune", tests, NULL, NULL);
}
