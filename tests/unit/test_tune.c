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

#include <slipway/ledger.h>
#include <slipway/tune.h>

#include "swtest.h"

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

static void test_refusals(void **state)
{
    (void)state;
    static const char head[] = "version: 1\n"
                               "hosts:\n"
                               "  localhost: {transport: local}\n"
                               "endpoints:\n"
                               "  tiny:\n"
                               "    host: localhost\n"
                               "    engine: llama.cpp\n"
                               "    payload: {path: /nonexistent, gguf: m.gguf}\n"
                               "    arch: {model_type: llama, num_hidden_layers: 2, hidden_size: "
                               "64, num_attention_heads: 4, num_key_value_heads: 4}\n"
                               "    shape: {ctx_size: 4096, seqs: 1}\n";
    char yaml[4096];
    /* the payload is frozen always: a knob on the model flag is refused at its line */
    snprintf(yaml, sizeof(yaml), "%s    knobs:\n      arg.--model: [a.gguf, b.gguf]\n", head);
    refused(yaml, "f.yaml:12:7");
    refused(yaml, "frozen always");
    /* nothing declared: nothing to tune */
    snprintf(yaml, sizeof(yaml), "%s", head);
    refused(yaml, "declares no knobs");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objective),
        cmocka_unit_test(test_journal),
        cmocka_unit_test(test_dry_run_frank_primary),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests_name("tune", tests, NULL, NULL);
}
