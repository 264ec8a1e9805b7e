/*
 * waive: the fleet's waivers and declared contract (fleet/waive.c, gate/waive.c, gate/pool.c) on
 * the operator's fleet (examples/operator.yaml): his two deliberate choices, frank-small's window
 * waiver ("frank-primary's 183,501-token compaction request no longer fits here") and
 * frank-primary's contract of two full-length requests on three slots ("a capacity contract, not
 * a throughput one"). Parsing errors name file:line; a waiver past its day (the day injected with
 * sw_gate_opts.today or SLIPWAY_TODAY) or one that matches nothing is an error naming the fleet
 * line; the CLI shows WAIVED in check, render --target k8s and report, and refuses an expired
 * waiver with exit 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/gate.h>

#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* examples/operator.yaml's text with `insert` put after the first line equal to `after`; *line
 * gets the 1-based line number of the inserted text's first line; frank-small's own waiver is
 * kept or taken out. Caller frees. */
static char *operator_with_own(const char *after, const char *insert, int *line, bool keep_own)
{
    struct sw_err e;
    char *text = NULL;
    size_t n = 0;
    assert_int_equal(sw_read_file(swt_src("examples/operator.yaml"), 1u << 22, &text, &n, &e), 0);
    /* frank-small's own waiver out, so a test's waive: is the only one */
    char *own = keep_own ? NULL : strstr(text, "    waive:\n      - gate: window\n");
    assert_true(keep_own || own);
    if (own) {
        char *end = strstr(own, "        until: ");
        assert_non_null(end);
        end = strchr(end, '\n') + 1;
        memmove(own, end, strlen(end) + 1);
        n = strlen(text);
    }
    char *at = strstr(text, after);
    assert_non_null(at);
    at += strlen(after);
    assert_true(*at == '\n');
    at++;
    int l = 1;
    for (const char *p = text; p < at; p++)
        l += *p == '\n';
    *line = l;
    size_t head = (size_t)(at - text);
    char *out = malloc(n + strlen(insert) + 1);
    memcpy(out, text, head);
    memcpy(out + head, insert, strlen(insert));
    memcpy(out + head + strlen(insert), at, n - head + 1);
    sw_free(text);
    return out;
}

/* The same without frank-small's own waiver, so that a test's waive: is the only one. */
static char *operator_with(const char *after, const char *insert, int *line)
{
    return operator_with_own(after, insert, line, false);
}

/* Load the operator's fleet from memory (positions under its real name, so env files resolve). */
static int load(const char *text, struct sw_fleet **f, struct sw_err *e)
{
    struct sw_fleet_opts o = {.getenv = sw_fleet_no_environ};
    sw_err_clear(e);
    return sw_fleet_load_mem(swt_src("examples/operator.yaml"), text, strlen(text), &o, f, e);
}

static void want_error(const char *after, const char *insert, int line_offset, const char *needle)
{
    int line = 0;
    char *text = operator_with(after, insert, &line);
    struct sw_fleet *f = NULL;
    struct sw_err e;
    char at[64];
    assert_int_not_equal(load(text, &f, &e), 0);
    assert_null(f);
    char msg[1024];
    sw_err_format(&e, msg, sizeof(msg));
    snprintf(at, sizeof(at), "operator.yaml:%d:", line + line_offset);
    if (!strstr(msg, needle) || !strstr(msg, at))
        fail_msg("want \"%s\" at %s, got: %s", needle, at, msg);
    free(text);
}

#define SMALL_FROZEN "    frozen: [engine]"

/* ---------------------------------------------------------------------------------------------
 * The fleet grammar.
 */
static void test_operator_declares(void **state)
{
    (void)state;
    struct sw_fleet *f = swt_fleet("examples/operator.yaml");
    const struct sw_fleet_endpoint *s = sw_fleet_endpoint(f, "frank-small");
    assert_int_equal(s->n_waivers, 1);
    assert_string_equal(s->waivers[0].gate, "window");
    assert_non_null(strstr(s->waivers[0].reason,
                           "frank-primary's 183,501-token compaction request no longer fits here"));
    assert_true(!strncmp(s->waivers[0].until, "2027-", 5));
    assert_true(s->waivers[0].at.line > 0);
    const struct sw_fleet_endpoint *p = sw_fleet_endpoint(f, "frank-primary");
    assert_true(p->contract.full_length.set);
    assert_int_equal(p->contract.full_length.v, 2);
    assert_int_equal(p->n_waivers, 0);
    sw_fleet_free(f);
}

static void test_parse_errors(void **state)
{
    (void)state;
    /* a gate that does not exist, with its near miss */
    want_error(SMALL_FROZEN,
               "    waive:\n      - {gate: windw, reason: \"r\", until: 2027-01-01}\n", 1,
               "'windw' is not a gate: did you mean 'window'?");
    /* reason and until are required */
    want_error(SMALL_FROZEN, "    waive:\n      - {gate: window, until: 2027-01-01}\n", 1,
               "needs gate, reason and until");
    want_error(SMALL_FROZEN, "    waive:\n      - {gate: window, reason: \"r\"}\n", 1,
               "needs gate, reason and until");
    /* until is a day */
    want_error(SMALL_FROZEN, "    waive:\n      - {gate: window, reason: r, until: 2027-13-01}\n",
               1, "is not a date");
    want_error(SMALL_FROZEN, "    waive:\n      - {gate: window, reason: r, until: soon}\n", 1,
               "is not a date");
    /* rule: narrows a known_bad waiver only */
    want_error(SMALL_FROZEN,
               "    waive:\n      - {gate: window, reason: r, until: 2027-01-01, rule: 3}\n", 1,
               "rule: narrows a known_bad waiver");
    /* an unknown key, and one waiver given twice */
    want_error(SMALL_FROZEN,
               "    waive:\n      - {gate: window, reason: r, until: 2027-01-01, untill: x}\n", 1,
               "untill");
    want_error(SMALL_FROZEN,
               "    waive:\n      - {gate: window, reason: r, until: 2027-01-01}\n"
               "      - {gate: window, reason: s, until: 2027-02-01}\n",
               2, "waives gate window again");
    /* a list, not one mapping */
    want_error(SMALL_FROZEN, "    waive: {gate: window, reason: r, until: 2027-01-01}\n", 0,
               "must be a list");
    /* the contract: at least 1, at most seqs (frank-small's 3 slots come from its env file) */
    want_error(SMALL_FROZEN, "    contract: {full_length: 0}\n", 0, "full_length");
    want_error(SMALL_FROZEN, "    contract: {full_length: 4}\n", 0,
               "contract.full_length 4 is above seqs 3");
    want_error(SMALL_FROZEN, "    contract: {}\n", 0, "needs full_length");
}

/* ---------------------------------------------------------------------------------------------
 * The gates.
 */
static json_t *gate_run(const struct sw_fleet *f, const char *name, const char *today, bool loose,
                        int want_rc, struct sw_err *e)
{
    json_t *out = NULL;
    struct sw_gate_opts o = {.today = today, .waivers_loose = loose};
    sw_err_clear(e);
    int rc = sw_gate_endpoint(f, sw_fleet_endpoint(f, name), &o, &out, e);
    if (want_rc == 0 && rc)
        fail_msg("gate %s: %s", name, e->msg);
    if (want_rc && !rc)
        fail_msg("gate %s: want an error", name);
    return out;
}

static const json_t *first(const json_t *r, const char *gate, const char *verdict)
{
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(r, "gates"), i, g)
    {
        if (!strcmp(json_string_value(json_object_get(g, "gate")), gate) &&
            (!verdict || !strcmp(json_string_value(json_object_get(g, "verdict")), verdict)))
            return g;
    }
    return NULL;
}

static double num(const json_t *g, const char *k)
{
    const json_t *v = json_object_get(json_object_get(g, "numbers"), k);
    if (!v)
        fail_msg("no number %s", k);
    return json_number_value(v);
}

/* frank-small: the compaction check fails (216,269 > 180,224), is WAIVED with his reason, and
 * the endpoint passes; on the last day it still holds, the day after it is refused. */
static void test_window_waived_and_expiry(void **state)
{
    (void)state;
    struct sw_fleet *f = swt_fleet("examples/operator.yaml");
    const struct sw_fleet_endpoint *s = sw_fleet_endpoint(f, "frank-small");
    struct sw_err e;
    json_t *r = gate_run(f, "frank-small", "2026-12-07", false, 0, &e);
    const json_t *w = first(r, "window", "waived");
    assert_non_null(w);
    assert_true(num(w, "request_tokens") == (uint64_t)ceil(262144 * 0.70 - 1e-9) + 32768);
    assert_true(num(w, "window") == 540672 / 3);
    const json_t *wv = json_object_get(w, "waiver");
    assert_non_null(strstr(json_string_value(json_object_get(wv, "reason")), "183,501"));
    assert_string_equal(json_string_value(json_object_get(wv, "until")), s->waivers[0].until);
    assert_int_equal(json_integer_value(json_object_get(wv, "line")), s->waivers[0].at.line);
    assert_null(first(r, "window", "fail"));
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "pass");
    assert_int_equal(json_array_size(json_object_get(r, "waivers")), 1);
    json_decref(r);

    /* until is the last day it holds */
    r = gate_run(f, "frank-small", s->waivers[0].until, false, 0, &e);
    json_decref(r);
    /* the day after: an error naming the fleet line */
    char after[11];
    snprintf(after, sizeof(after), "%s", s->waivers[0].until);
    after[3]++; /* a later year */
    r = gate_run(f, "frank-small", after, false, SW_EINVAL, &e);
    assert_null(r);
    char at[64], msg[1024];
    snprintf(at, sizeof(at), "operator.yaml:%d:", s->waivers[0].at.line);
    assert_non_null(strstr(sw_err_format(&e, msg, sizeof(msg)), at));
    swt_has_all("e.msg", e.msg, "expired on", "frank-small", NULL);
    /* an expired waiver is refused even when the trial shape would not need it */
    r = gate_run(f, "frank-small", after, true, SW_EINVAL, &e);
    assert_null(r);

    /* SLIPWAY_TODAY when the options give no day; a value that is not a day is unusable */
    setenv("SLIPWAY_TODAY", after, 1);
    r = gate_run(f, "frank-small", NULL, false, SW_EINVAL, &e);
    assert_non_null(strstr(e.msg, "expired"));
    setenv("SLIPWAY_TODAY", "tomorrow", 1);
    r = gate_run(f, "frank-small", NULL, false, SW_EINVAL, &e);
    assert_non_null(strstr(e.msg, "SLIPWAY_TODAY 'tomorrow' is not a day"));
    unsetenv("SLIPWAY_TODAY");
    char today[11];
    assert_int_equal(sw_gate_today(NULL, today, &e), 0);
    assert_int_equal(strlen(today), 10);
    sw_fleet_free(f);
}

/* A waiver whose gate passes, or does not run for the endpoint, matches nothing. */
static void test_unmatched(void **state)
{
    (void)state;
    static const char *const gates[] = {"pool", "arena"}; /* pool passes; arena is vLLM's */
    for (size_t i = 0; i < 2; i++) {
        char ins[256];
        int line = 0;
        snprintf(ins, sizeof(ins),
                 "    waive:\n      - {gate: window, reason: r, until: 2027-06-30}\n"
                 "      - {gate: %s, reason: r, until: 2027-06-30}\n",
                 gates[i]);
        char *text = operator_with(SMALL_FROZEN, ins, &line);
        struct sw_fleet *f = NULL;
        struct sw_err e;
        if (load(text, &f, &e))
            fail_msg("load: %s", e.msg);
        json_t *r = gate_run(f, "frank-small", "2026-12-07", false, SW_EINVAL, &e);
        assert_null(r);
        char want[96];
        snprintf(want, sizeof(want), "waiver for gate %s on frank-small matches nothing", gates[i]);
        if (!strstr(e.msg, want) || !strstr(e.msg, "remove it"))
            fail_msg("got: %s", e.msg);
        char at[64], msg[1024];
        snprintf(at, sizeof(at), "operator.yaml:%d:", line + 2);
        assert_non_null(strstr(sw_err_format(&e, msg, sizeof(msg)), at));
        /* loose (a trial shape): let be */
        r = gate_run(f, "frank-small", "2026-12-07", true, 0, &e);
        assert_string_equal(json_string_value(json_object_get(r, "verdict")), "pass");
        json_decref(r);
        sw_fleet_free(f);
        free(text);
    }
}

/* sw_gate_waiver: a rule's own waiver beats the whole gate's; NULL when none covers. */
static void test_waiver_lookup(void **state)
{
    (void)state;
    struct sw_fleet_waiver w[2] = {
        {.gate = "known_bad", .reason = "whole gate", .until = "2027-01-01"},
        {.gate = "known_bad", .reason = "rule 7", .until = "2027-01-01", .rule = 7},
    };
    struct sw_fleet_endpoint ep = {.name = "x", .waivers = w, .n_waivers = 2};
    json_t *r7 = json_pack("{s:s,s:{s:i}}", "gate", "known_bad", "numbers", "rule_id", 7);
    json_t *r9 = json_pack("{s:s,s:{s:i}}", "gate", "known_bad", "numbers", "rule_id", 9);
    assert_ptr_equal(sw_gate_waiver(&ep, "known_bad", r7), &w[1]);
    assert_ptr_equal(sw_gate_waiver(&ep, "known_bad", r9), &w[0]);
    assert_ptr_equal(sw_gate_waiver(&ep, "known_bad", NULL), &w[0]);
    assert_null(sw_gate_waiver(&ep, "pool", NULL));
    ep.n_waivers = 1;
    ep.waivers = &w[1]; /* only the rule's: another rule is not covered */
    assert_null(sw_gate_waiver(&ep, "known_bad", r9));
    assert_true(sw_gate_verdict_blocks("fail"));
    assert_false(sw_gate_verdict_blocks("waived"));
    json_decref(r7);
    json_decref(r9);
}

/* Every gate a run emits is a name a waiver may use (fleet's list = gate's gates). */
static void test_gate_names(void **state)
{
    (void)state;
    struct sw_fleet *f = swt_fleet("examples/operator.yaml");
    struct sw_err e;
    for (size_t i = 0; i < f->n_endpoints; i++) {
        json_t *r = gate_run(f, f->endpoints[i].name, "2026-12-07", true, 0, &e);
        size_t k;
        const json_t *g;
        json_array_foreach(json_object_get(r, "gates"), k, g)
        {
            const char *nm = json_string_value(json_object_get(g, "gate"));
            size_t j = 0;
            while (sw_fleet_gate_names[j] && strcmp(sw_fleet_gate_names[j], nm))
                j++;
            if (!sw_fleet_gate_names[j])
                fail_msg("gate %s is not in sw_fleet_gate_names", nm);
        }
        json_decref(r);
    }
    sw_fleet_free(f);
}

/* frank-primary's pool, held as he declared it: 2 x 200,704 on KV_BYTES 3.15e9 per rank. The
 * pool holds floor(3.15e9 / block bytes) whole blocks; two requests need one block more than
 * that (the engine printed 1.99x, not 2: the fp8 price at 200,704 is 7,892 B/token, not the
 * 7,701 his 3.15e9 was sized with). The fix is +14 MiB of kv_cache_bytes, inside his knob
 * (1e9..12e9); "cut seqs" is no fix for a declared contract. */
static void test_contract_arithmetic(void **state)
{
    (void)state;
    struct sw_fleet *f = swt_fleet("examples/operator.yaml");
    struct sw_fleet_endpoint *p = (struct sw_fleet_endpoint *)sw_fleet_endpoint(f, "frank-primary");
    struct sw_err e;
    json_t *r = gate_run(f, "frank-primary", "2026-12-07", false, 0, &e);
    const json_t *g = first(r, "pool", NULL);
    double bb = num(g, "block_bytes"), bpr = num(g, "blocks_per_request");
    assert_true(num(g, "contract_requests") == 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(g, "numbers"), "contract")), "declared");
    assert_true(num(g, "num_gpu_blocks") == floor(3150000000.0 / bb));
    assert_true(num(g, "need_blocks") == 2 * bpr);
    assert_true(num(g, "need_bytes") == 2 * bpr * bb);
    assert_true(num(g, "kv_cache_tokens") < 2 * 200704.0);
    assert_string_equal(json_string_value(json_object_get(g, "verdict")), "fail");
    const char *line = json_string_value(json_object_get(g, "line"));
    assert_non_null(strstr(line, "the declared contract 2 x 200,704 (contract.full_length,"));
    const char *fix = json_string_value(json_object_get(g, "fix"));
    char want[96], c[48];
    snprintf(want, sizeof(want), "raise kv_cache_bytes to %s",
             sw_fmt_count((uint64_t)(2 * bpr * bb), c, sizeof(c)));
    assert_non_null(strstr(fix, want));
    assert_null(strstr(fix, "cut seqs"));
    json_decref(r);

    /* the assumed contract, seqs x max_model_len: 3 requests; the fix offered before, "cut seqs
     * to 1", lies below his seqs knob (2..6) and is not offered */
    p->contract.full_length.set = false;
    r = gate_run(f, "frank-primary", "2026-12-07", false, 0, &e);
    g = first(r, "pool", NULL);
    assert_true(num(g, "need_blocks") == 3 * bpr);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(g, "numbers"), "contract")),
        "seqs x max_model_len");
    fix = json_string_value(json_object_get(g, "fix"));
    assert_null(strstr(fix, "cut seqs to 1"));
    assert_non_null(strstr(fix, "raise kv_cache_bytes"));
    json_decref(r);

    /* a kv_cache_bytes knob that cannot reach the need: no fix inside the knobs, said so */
    struct sw_fleet_knob *kb = (struct sw_fleet_knob *)sw_fleet_endpoint_knob(p, "kv_cache_bytes");
    assert_non_null(kb);
    kb->max.u = 3150000000u;
    r = gate_run(f, "frank-primary", "2026-12-07", false, 0, &e);
    fix = json_string_value(json_object_get(first(r, "pool", NULL), "fix"));
    swt_has_all("fix", fix, "no setting within this endpoint's knobs holds",
                "above its knob's max 3,150,000,000", NULL);
    json_decref(r);

    /* a contract of one full-length request fits */
    p->contract.full_length.set = true;
    p->contract.full_length.v = 1;
    r = gate_run(f, "frank-primary", "2026-12-07", false, 0, &e);
    assert_string_equal(json_string_value(json_object_get(first(r, "pool", NULL), "verdict")),
                        "pass");
    json_decref(r);
    sw_fleet_free(f);
}

/* ---------------------------------------------------------------------------------------------
 * The CLI: check, render --target k8s, report.
 */

/* The operator's fleet in dir, frank-small given a pinned image and a mount so that Kubernetes
 * can run it (the log names neither: a test fixture, not his fleet). */
static const char *k8s_fleet(const char *dir)
{
    int line;
    char *t = operator_with_own("    engine: llama.cpp",
                                "    image: ghcr.io/ggml-org/llama.cpp@sha256:"
                                "00000000000000000000000000000000000000000000000000000000000000aa\n"
                                "    runtime: {kind: podman}\n",
                                &line, true);
    char *m = strstr(t, "      quantization: Q5_K_M\n");
    assert_non_null(m);
    m += strlen("      quantization: Q5_K_M\n");
    const char *mount =
        "      mounts: [{host: /home/dank/models, container: /home/dank/models, readonly: true}]\n";
    char *out = malloc(strlen(t) + strlen(mount) + 1);
    size_t head = (size_t)(m - t);
    memcpy(out, t, head);
    strcpy(out + head, mount);
    strcat(out, m);
    const char *path = swt_join(dir, "operator.yaml");
    static char keep[4096];
    snprintf(keep, sizeof(keep), "%s", path);
    swt_write_str(keep, out);
    static const char *const envs[] = {"frank-primary.env", "frank-small.env"};
    for (size_t i = 0; i < 2; i++) {
        char *text = NULL;
        size_t n = 0;
        struct sw_err e;
        char src[64];
        snprintf(src, sizeof(src), "examples/%s", envs[i]);
        assert_int_equal(sw_read_file(swt_src(src), 1u << 20, &text, &n, &e), 0);
        swt_write(swt_join(dir, envs[i]), text, n);
        sw_free(text);
    }
    free(out);
    free(t);
    return keep;
}

static void test_cli(void **state)
{
    (void)state;
    struct swt_run r;
    const char *fleet = swt_src("examples/operator.yaml");
    setenv("SLIPWAY_TODAY", "2026-12-07", 1);

    /* check: WAIVED with his reason; frank-small accepted */
    assert_int_equal(swt_slipway(&r, "check", "frank-small", "--fleet", fleet, "--no-ledger", NULL),
                     0);
    swt_out_has(&r, 0, "WAIVED window", "waived: \"three contexts buy 180,224 tokens",
                "0 failed, 1 waived", NULL);
    /* --json: "verdict": "waived" with the waiver */
    assert_int_equal(
        swt_slipway(&r, "check", "frank-small", "--fleet", fleet, "--no-ledger", "--json", NULL),
        0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "pass");
    const json_t *ep0 = json_array_get(json_object_get(j, "endpoints"), 0);
    const json_t *w = first(ep0, "window", "waived");
    assert_non_null(w);
    assert_non_null(json_object_get(json_object_get(w, "waiver"), "reason"));
    assert_non_null(json_object_get(json_object_get(w, "waiver"), "until"));
    json_decref(j);
    swt_run_free(&r);
    /* frank-primary's pool, as declared */
    assert_int_equal(
        swt_slipway(&r, "check", "frank-primary", "--fleet", fleet, "--no-ledger", NULL), 0);
    assert_non_null(strstr(r.out, "the declared contract 2 x 200,704"));
    assert_null(strstr(r.out, "cut seqs to 1"));
    swt_run_free(&r);

    /* render --target k8s: rendered, the waiver said on stderr */
    char *dir = swt_tmpdir();
    const char *kf = k8s_fleet(dir);
    assert_int_equal(
        swt_slipway(&r, "render", "--target", "k8s", "frank-small", "--fleet", kf, NULL), 0);
    if (r.status != 0)
        fail_msg("render k8s: %s", r.err);
    swt_has_all("stdout", r.out, "kind: \"Deployment\"", "slipway.dev/waivers: \"window until ",
                NULL);
    swt_has_all("stderr", r.err, "WAIVED window", "183,501-token compaction request", NULL);
    swt_run_free(&r);
    assert_int_equal(
        swt_slipway(&r, "render", "--target", "k8s", "frank-small", "--fleet", kf, "--json", NULL),
        0);
    j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "waivers")), 1);
    json_decref(j);
    swt_run_free(&r);

    /* report: the compaction line WAIVED with the reason */
    assert_int_equal(swt_slipway(&r, "report", "--fleet", fleet, NULL), 0);
    assert_non_null(strstr(r.out, "DO NOT FIT one window of 180,224; WAIVED until"));
    swt_run_free(&r);

    /* expired: refused, exit 2, the fleet line named, nothing rendered */
    setenv("SLIPWAY_TODAY", "2099-01-01", 1);
    const struct sw_fleet_endpoint *s;
    struct sw_fleet *f = swt_fleet("examples/operator.yaml");
    s = sw_fleet_endpoint(f, "frank-small");
    char at[64];
    snprintf(at, sizeof(at), "operator.yaml:%d:", s->waivers[0].at.line);
    assert_int_equal(swt_slipway(&r, "check", "frank-small", "--fleet", fleet, "--no-ledger", NULL),
                     0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, at));
    assert_non_null(strstr(r.err, "expired on"));
    swt_run_free(&r);
    assert_int_equal(
        swt_slipway(&r, "render", "--target", "k8s", "frank-small", "--fleet", kf, NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "expired on"));
    assert_null(strstr(r.out, "Deployment"));
    swt_run_free(&r);
    unsetenv("SLIPWAY_TODAY");
    sw_fleet_free(f);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operator_declares),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_window_waived_and_expiry),
        cmocka_unit_test(test_unmatched),
        cmocka_unit_test(test_waiver_lookup),
        cmocka_unit_test(test_gate_names),
        cmocka_unit_test(test_contract_arithmetic),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests_name("waive", tests, NULL, NULL);
}
