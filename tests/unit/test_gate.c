/*
 * gate: `slipway check` on the operator's fleet (examples/operator.yaml) with a ledger built from
 * the seed's measurements (tests/data/ledger/seed-boots.json through sw_ledger_import). Each test
 * reproduces a verdict the operator reached by hand, reading the gate's numbers from its JSON;
 * expected figures are derived here independently (25,088 B/token = 8 attention layers x 4 KV
 * heads x 256 x (2 B for f16 K + 34/32 B for q8_0 V)), never copied from the gate's output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/gguf.h>
#include <slipway/ledger.h>

#include "swledger.h"
#include "swtest.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

struct fx {
    char *dir;
    struct sw_fleet *fleet;
    struct sw_ledger led;
    bool led_open;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    sw_core_init();
    f->dir = swt_tmpdir();
    f->fleet = swt_fleet("examples/operator.yaml");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->led_open)
        sw_ledger_close(&f->led);
    sw_fleet_free(f->fleet);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

/* A ledger in the test's directory; with the seed's rows when `seed`. */
static struct sw_ledger *ledger(struct fx *f, bool seed)
{
    struct sw_err e;
    assert_int_equal(sw_ledger_open(&f->led, swt_join(f->dir, "l.sqlite"), NULL, &e), 0);
    f->led_open = true;
    if (seed) {
        json_t *doc = sw_json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 1u << 24, &e);
        assert_non_null(doc);
        struct sw_ledger_import_stats st = {0};
        assert_int_equal(sw_ledger_import(&f->led, doc, "seed-boots.json", &st, &e), 0);
        json_decref(doc);
    }
    return &f->led;
}

static struct sw_fleet_endpoint *ep(struct fx *f, const char *name)
{
    struct sw_fleet_endpoint *x = (struct sw_fleet_endpoint *)sw_fleet_endpoint(f->fleet, name);
    assert_non_null(x);
    return x;
}

/* The pool judged by seqs x max_model_len, as before the operator declared his contract. */
static void no_contract(struct sw_fleet_endpoint *x)
{
    x->contract.full_length.set = false;
}

static void set(struct sw_fleet_endpoint *x, const char *kv)
{
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_gate_set(x, kv, &e))
        fail_msg("--set %s: %s", kv, e.msg);
}

static json_t *run(struct fx *f, struct sw_fleet_endpoint *x, struct sw_ledger *l,
                   const struct sw_fleet_shape *before)
{
    struct sw_err e;
    json_t *out = NULL;
    /* these tests try shapes the fleet file does not hold: a waiver the trial shape does not
     * need is let be (test_waive.c holds the strict rule) */
    struct sw_gate_opts o = {.ledger = l, .before = before, .waivers_loose = true};
    sw_err_clear(&e);
    if (sw_gate_endpoint(f->fleet, x, &o, &out, &e))
        fail_msg("gate: %s", e.msg);
    return out;
}

/* The n-th result of a gate (and optionally with numbers.check == check). */
static const json_t *gate(const json_t *r, const char *name, const char *check, int nth)
{
    const json_t *gs = json_object_get(r, "gates");
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (strcmp(json_string_value(json_object_get(g, "gate")), name))
            continue;
        const char *c = json_string_value(json_object_get(json_object_get(g, "numbers"), "check"));
        if (check && (!c || strcmp(c, check)))
            continue;
        if (nth-- == 0)
            return g;
    }
    return NULL;
}

static const char *verdict(const json_t *g)
{
    assert_non_null(g);
    return json_string_value(json_object_get(g, "verdict"));
}

static double num(const json_t *g, const char *k)
{
    const json_t *v = json_object_get(json_object_get(g, "numbers"), k);
    if (!v)
        fail_msg("no number %s in %s", k, json_dumps(g, 0));
    return json_number_value(v);
}

static void has(const json_t *g, const char *field, const char *needle)
{
    const char *s = json_string_value(json_object_get(g, field));
    if (!s || !strstr(s, needle))
        fail_msg("%s \"%s\" lacks \"%s\"", field, s ? s : "(null)", needle);
}

/* Any known_bad result from `source` whose line contains needle. */
static const json_t *known_bad(const json_t *r, const char *source, const char *needle)
{
    for (int i = 0;; i++) {
        const json_t *g = gate(r, "known_bad", NULL, i);
        if (!g)
            return NULL;
        const char *s = json_string_value(json_object_get(json_object_get(g, "numbers"), "source"));
        const char *line = json_string_value(json_object_get(g, "line"));
        if (s && !strcmp(s, source) && line && strstr(line, needle))
            return g;
    }
}

#define MIB (1024.0 * 1024.0)

/* ---------------------------------------------------------------------------------------------
 * frank-small (llama.cpp on the 24,576 MiB card).
 */

/* 3 x 196,608 + projector: 1,153 MiB free, outside 2-3 GiB: rejected; the fix cuts the pool by
 * the knob's step (49,152 tokens, 1,176 MiB by the law) into the band. */
static void test_small_196608_rejected(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-small");
    set(x, "slots=3");
    set(x, "ctx=589824");
    json_t *r = run(f, x, ledger(f, true), NULL);
    const json_t *b = gate(r, "band", NULL, 0);
    assert_string_equal(verdict(b), "fail");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "numbers"), "source")),
                        "measured");
    assert_true(num(b, "free_bytes") == 1153 * MIB);
    assert_true(num(b, "band_min") == 2048 * MIB && num(b, "band_max") == 3072 * MIB);
    has(b, "line", "1,153 MiB free");
    has(b, "line", "outside");
    /* the fix: one knob step of 49,152 tokens at 25,088 B/token */
    assert_true(num(b, "fix_tokens") == -49152);
    assert_true(num(b, "fix_free_bytes") == 1153 * MIB + 49152.0 * 25088);
    has(b, "fix", "cut the pool by 49,152 tokens");
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "fail");
    json_decref(r);
}

/* 3 x 180,224 + projector (the deployed shape, from the env file): 2,441 MiB, inside. */
static void test_small_180224_accepted(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-small");
    json_t *r = run(f, x, ledger(f, true), NULL);
    const json_t *b = gate(r, "band", NULL, 0);
    assert_string_equal(verdict(b), "pass");
    assert_true(num(b, "free_bytes") == 2441 * MIB);
    has(b, "line", "2,441 MiB free");
    const json_t *p = gate(r, "pool", NULL, 0);
    assert_string_equal(verdict(p), "pass");
    assert_true(num(p, "pool_tokens") == 540672 && num(p, "window") == 180224);
    assert_true(num(p, "kv_bytes") == 540672.0 * 25088);
    json_decref(r);
}

/* 3 x 262,144: 18.4 GiB of KV alone. Calibrated from the seed's two projector readings (non-KV
 * = used - the law's KV - the recurrent state), it overflows the card; without a ledger, the
 * fleet's measured non-KV fact says the same. */
static void test_small_262144_rejected(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-small");
    set(x, "ctx=786432");
    json_t *r = run(f, x, ledger(f, true), NULL);
    const json_t *b = gate(r, "band", NULL, 0);
    assert_string_equal(verdict(b), "fail");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "numbers"), "source")),
                        "calibrated");
    double kv = 786432.0 * 25088;
    /* the recurrent state: 24 gated-delta-net layers x 3 sequences x f32 (conv 3 x 8,192 +
     * state 128 x 128 x 32 heads) = 2,195,456 B per layer per sequence */
    double rec = 24.0 * 3 * (3 * 8192 + 128 * 128 * 32) * 4;
    assert_true(num(b, "kv_bytes") == kv);
    assert_true(num(b, "recurrent_bytes") == rec);
    has(b, "line", "18.4 GiB of KV");
    /* non-KV per reading: 22,972 - (589,824 x 25,088 B + rec) and 21,684 - (540,672 x 25,088 B
     * + rec), in MiB; their mean is the point, the driver reserve is total - used - free = 451 */
    double n1 = 22972 - (589824.0 * 25088 + rec) / MIB, n2 = 21684 - (540672.0 * 25088 + rec) / MIB;
    double nonkv = (n1 + n2) / 2;
    assert_true(fabs(num(b, "non_kv_bytes") / MIB - nonkv) < 1e-6);
    assert_true(fabs(num(b, "reserve_bytes") / MIB - 451) < 1e-6);
    double free_mib = 24576 - 451 - nonkv - (kv + rec) / MIB;
    assert_true(fabs(num(b, "free_bytes") / MIB - free_mib) < 1e-3);
    assert_true(num(b, "free_bytes") < 0);
    assert_true(num(b, "extrapolated") == 1);
    json_decref(r);

    /* no ledger: the fleet's measured non-KV cost with the projector, 8,859 MiB */
    r = run(f, x, NULL, NULL);
    b = gate(r, "band", NULL, 0);
    assert_string_equal(verdict(b), "fail");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "numbers"), "source")),
                        "predicted");
    assert_true(num(b, "kv_bytes") == kv);
    assert_true(num(b, "recurrent_bytes") == rec);
    assert_true(num(b, "non_kv_bytes") == 8859 * MIB);
    assert_true(num(b, "free_bytes") == 24576 * MIB - 8859 * MIB - kv - rec);
    has(b, "line", "18.4 GiB of KV");
    json_decref(r);
}

/* The compaction request of a 262,144 contextWindow (x 0.70 + 32,768 = 216,269) does not fit a
 * 180,224-token slot; the client's own 180,224 window does. */
static void test_small_compaction(void **state)
{
    struct fx *f = *state;
    json_t *r = run(f, ep(f, "frank-small"), NULL, NULL);
    const json_t *c = NULL;
    for (int i = 0; (c = gate(r, "window", "compaction", i)); i++)
        if (num(c, "context_window") == 262144)
            break;
    assert_non_null(c);
    /* failed, and waived by the operator's own choice in the fleet */
    assert_string_equal(verdict(c), "waived");
    has(json_object_get(c, "waiver"), "reason", "183,501-token compaction request no longer fits");
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "pass");
    assert_true(num(c, "request_tokens") == 183501 + 32768);
    assert_true(num(c, "window") == 180224);
    has(c, "line", "216,269 tokens do not fit");
    /* the client window itself fits the slot */
    const json_t *w = gate(r, "window", NULL, 0);
    assert_string_equal(verdict(w), "pass");
    assert_true(num(w, "context_window") == 180224 && num(w, "window") == 180224);
    /* a slot of 262,144 takes the compaction */
    json_decref(r);
    set(ep(f, "frank-small"), "ctx=786432");
    r = run(f, ep(f, "frank-small"), NULL, NULL);
    for (int i = 0; (c = gate(r, "window", "compaction", i)); i++)
        assert_string_equal(verdict(c), "pass");
    json_decref(r);
}

/* ---------------------------------------------------------------------------------------------
 * frank-primary (the vLLM fork, TP 2).
 */

/* 6 x 241,664 fp8, the shape the ledger recorded (the pool sized by the engine, MNBT default):
 * rejected with the failure that taught it. */
static void test_primary_6x241664_rejected(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-primary");
    no_contract(x);
    set(x, "seqs=6");
    set(x, "max_model_len=241664");
    set(x, "kv_cache_bytes=null");
    set(x, "max_num_batched_tokens=null");
    json_t *r = run(f, x, ledger(f, true), NULL);
    const json_t *k = known_bad(r, "ledger", "asked 10.70 GiB of KV against 9.18 GiB free");
    assert_non_null(k);
    assert_string_equal(verdict(k), "fail");
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "fail");
    json_decref(r);

    /* the same SEQS x MAXLEN on the env file's pinned pool: the fleet's record of the refusal,
     * and the pool floor by the law */
    teardown(state);
    setup(state);
    f = *state;
    x = ep(f, "frank-primary");
    no_contract(x);
    set(x, "seqs=6");
    set(x, "max_model_len=241664");
    r = run(f, x, NULL, NULL);
    assert_non_null(known_bad(r, "fleet", "asked 10.70 GiB of KV against 9.18 GiB free"));
    const json_t *p = gate(r, "pool", NULL, 0);
    assert_string_equal(verdict(p), "fail");
    assert_true(num(p, "need_blocks") == 6 * num(p, "blocks_per_request"));
    assert_true(num(p, "num_gpu_blocks") < num(p, "need_blocks"));
    json_decref(r);
}

/* With the seed ledger the pool floor comes from the calibrated block law (the four fp8 boots),
 * not from the fleet's assumed config: 6 x 241,664 on the engine-sized pool asks ~10.5 GiB per
 * rank (the operator's boot asked 10.70) where the fork leaves ~9.1 GiB (9.18 measured). */
static void test_primary_pool_calibrated(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-primary");
    no_contract(x);
    set(x, "seqs=6");
    set(x, "max_model_len=241664");
    set(x, "kv_cache_bytes=null");
    set(x, "max_num_batched_tokens=null");
    json_t *r = run(f, x, ledger(f, true), NULL);
    const json_t *p = gate(r, "pool", NULL, 0);
    assert_string_equal(verdict(p), "fail");
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "numbers"), "source")),
                        "calibrated");
    /* the printed 5 x 262,144 boot: 10,388,766,720 B held 1,350,182 tokens = 5.15 requests of
     * 262,144, i.e. ~7,694 B per token of contract; 6 x 241,664 tokens at that price is 10.4 GiB */
    double need = num(p, "need_bytes");
    assert_true(need > 6 * 241664.0 * (10388766720.0 / 1350182) * 0.99);
    assert_true(need < 10.70 * 1073741824.0);
    assert_true(num(p, "room_bytes") < need);
    has(p, "line", "EXTRAPOLATES");
    json_decref(r);

    /* pinned at the 5 x 262,144 boot's pool: holds 5 x 262,144 (that boot printed 5.15x) */
    teardown(state);
    setup(state);
    f = *state;
    x = ep(f, "frank-primary");
    no_contract(x);
    set(x, "seqs=5");
    set(x, "max_model_len=262144");
    set(x, "kv_cache_bytes=10388766720");
    r = run(f, x, ledger(f, true), NULL);
    p = gate(r, "pool", NULL, 0);
    assert_string_equal(verdict(p), "pass");
    assert_true(num(p, "kv_cache_tokens_lo") == 1350182 && num(p, "kv_cache_tokens_hi") == 1350182);
    json_decref(r);
}

/* SEQS 2: unknown before its compile failure is recorded, rejected after (the rule, with the
 * failure that taught it). The fleet's own known_bad rule and boots are set aside here so only
 * the ledger speaks. */
static void test_primary_seqs2(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-primary");
    struct sw_err e;
    x->n_known_bad = 0;
    x->n_boots = 0;
    set(x, "seqs=2");
    struct sw_ledger *l = ledger(f, false);
    json_t *r = run(f, x, l, NULL);
    assert_string_equal(verdict(gate(r, "known_bad", NULL, 0)), "pass");
    assert_null(gate(r, "known_bad", NULL, 1));
    json_decref(r);

    json_t *fail =
        json_pack("{s:s,s:s,s:s}", "class", "compile_constraint", "phase", "profile", "message",
                  "Constraints violated (L['query_start_loc'].size()[0])! ... a "
                  "constant (3)");
    struct sw_ledger_rule_rec rr = {.endpoint = "frank-primary",
                                    .expr = "slots == 2",
                                    .reason = "max_num_seqs 2 never compiles on this model",
                                    .failure = fail,
                                    .source = "bisection"};
    assert_int_equal(sw_ledger_record_rule(l, &rr, NULL, &e), 0);
    json_decref(fail);
    r = run(f, x, l, NULL);
    const json_t *k = known_bad(r, "ledger", "slots == 2");
    assert_non_null(k);
    assert_string_equal(verdict(k), "fail");
    has(k, "line", "never compiles");
    has(k, "line", "query_start_loc");
    json_decref(r);

    /* SEQS 3 is not touched by the rule */
    set(x, "seqs=3");
    r = run(f, x, l, NULL);
    assert_string_equal(verdict(gate(r, "known_bad", NULL, 0)), "pass");
    json_decref(r);
}

/* With the whole seed ledger, SEQS 2 meets its exact failed boot and the rule; the fleet file's
 * rule agrees. */
static void test_primary_seqs2_seed(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-primary");
    set(x, "seqs=2");
    json_t *r = run(f, x, ledger(f, true), NULL);
    assert_non_null(known_bad(r, "ledger", "slots == 2"));
    assert_non_null(known_bad(r, "ledger", "compile_constraint"));
    assert_non_null(known_bad(r, "fleet", "seqs == 2"));
    json_decref(r);
}

/* The arena: a pool cut that does not move MAXLEN buys no arena; a MAXLEN cut does. */
static void test_primary_arena(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-primary");
    json_t *r0 = run(f, x, NULL, NULL);
    const json_t *a0 = gate(r0, "arena", NULL, 0);
    assert_string_equal(verdict(a0), "pass");
    struct sw_fleet_shape before = x->shape;
    set(x, "kv_cache_bytes=2e9");
    json_t *r1 = run(f, x, NULL, &before);
    const json_t *a1 = gate(r1, "arena", NULL, 0);
    assert_true(num(a1, "slots") == num(a0, "slots"));
    assert_true(num(a1, "arena_bytes") == num(a0, "arena_bytes"));
    const char *note = json_string_value(
        json_object_get(json_array_get(json_object_get(a1, "evidence"), 0), "note"));
    assert_non_null(note);
    assert_non_null(strstr(note, "buys no arena"));
    assert_true(num(a1, "slots_per_maxlen_step") > 0);
    /* cutting MAXLEN by the knob's step buys what the gate said it would */
    before = x->shape;
    set(x, "max_model_len=196608");
    json_t *r2 = run(f, x, NULL, &before);
    assert_true(num(gate(r2, "arena", NULL, 0), "slots") ==
                num(a1, "slots") + num(a1, "slots_per_maxlen_step"));
    json_decref(r0);
    json_decref(r1);
    json_decref(r2);
}

/* The deployed 3 x 200,704 on 3.15e9 B/rank: the boot of this shape printed 398,658 tokens
 * (1.99x), below the contract of 3 full-length requests; the printed figure decides. */
static void test_primary_pool_printed(void **state)
{
    struct fx *f = *state;
    json_t *r = run(f, ep(f, "frank-primary"), ledger(f, true), NULL);
    const json_t *p = gate(r, "pool", NULL, 0);
    assert_string_equal(verdict(p), "fail");
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "numbers"), "source")),
                        "measured");
    assert_true(num(p, "kv_cache_tokens") == 398658);
    /* held as the operator declared it (contract: {full_length: 2}), and still one block short */
    assert_true(num(p, "need_tokens") == 2.0 * 200704);
    has(p, "line", "398,658 tokens");
    has(p, "line", "the declared contract 2 x 200,704");
    json_decref(r);
    /* two requests of 200,704 need 401,408 > 398,658: the operator's "2.04x" was 1.99x. SEQS 2
     * is another shape (no printed figure): the calibrated block law speaks, exactly, since
     * 200,704 and this pool were fitted */
    set(ep(f, "frank-primary"), "seqs=2");
    r = run(f, ep(f, "frank-primary"), &f->led, NULL);
    p = gate(r, "pool", NULL, 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "numbers"), "source")),
                        "calibrated");
    assert_string_equal(verdict(p), "fail");
    assert_true(num(p, "kv_cache_tokens_lo") == 398658 && num(p, "kv_cache_tokens_hi") == 398658);
    json_decref(r);
}

/* ---------------------------------------------------------------------------------------------
 * Pieces.
 */
static void test_same_shape(void **state)
{
    (void)state;
    json_t *a = json_pack("{s:s,s:{s:s,s:s},s:i,s:i,s:s,s:s}", "engine", "llama.cpp", "model",
                          "name", "M", "quant", "q5_k_m", "ctx", 540672, "slots", 3, "kv_dtype_k",
                          "f16", "kv_dtype_v", "q8_0");
    json_t *b = json_deep_copy(a);
    assert_true(sw_gate_same_shape(a, b));
    /* keys outside the memory set do not matter */
    json_object_set_new(b, "batch", json_integer(2048));
    json_object_set_new(b, "flags", json_pack("{s:s}", "flash_attn", "on"));
    assert_true(sw_gate_same_shape(a, b));
    /* the projector does */
    json_object_set_new(b, "flags", json_pack("{s:{s:s}}", "mmproj", "name", "/x/p.gguf"));
    assert_false(sw_gate_same_shape(a, b));
    json_object_set_new(a, "flags",
                        json_pack("{s:{s:s,s:i}}", "mmproj", "name", "p.gguf", "size", 1));
    assert_true(sw_gate_same_shape(a, b));
    /* a memory key one side lacks */
    json_object_set_new(b, "kv_bytes", json_integer(1000));
    assert_false(sw_gate_same_shape(a, b));
    json_decref(a);
    json_decref(b);
}

static void test_set_errors(void **state)
{
    struct fx *f = *state;
    struct sw_err e;
    struct sw_fleet_endpoint *s = ep(f, "frank-small"), *p = ep(f, "frank-primary");
    assert_int_not_equal(sw_gate_set(s, "slots", &e), 0);
    assert_int_not_equal(sw_gate_set(s, "nonsense=1", &e), 0);
    assert_non_null(strstr(e.msg, "nonsense"));
    assert_int_not_equal(sw_gate_set(s, "slots=abc", &e), 0);
    assert_non_null(strstr(e.msg, "slots"));
    assert_int_not_equal(sw_gate_set(s, "max_model_len=1000", &e), 0); /* not llama.cpp's */
    assert_int_not_equal(sw_gate_set(p, "ctx_size=1000", &e), 0);
    assert_int_not_equal(sw_gate_set(s, "mmproj=", &e), 0);
    assert_int_equal(sw_gate_set(s, "mmproj=null", &e), 0);
    assert_null(s->payload.mmproj.v);
    assert_int_equal(sw_gate_set(p, "gpu_util=90%", &e), 0);
    assert_true(p->shape.gpu_memory_utilization.v > 0.899 &&
                p->shape.gpu_memory_utilization.v < 0.901);
    assert_int_equal(sw_gate_set(p, "kv_cache_bytes=null", &e), 0);
    assert_false(p->shape.kv_cache_bytes.set);
    assert_true(p->shape.seqs.set && p->shape.max_model_len.set); /* the rest is kept */
}

/* ---------------------------------------------------------------------------------------------
 * payload: spec-decode flags against the checkpoint's MTP tensors, the projector.
 */

/* A one-file safetensors checkpoint with one F32 tensor of 1 element named `tensor`. */
static void write_checkpoint(const char *dir, const char *tensor)
{
    char hdr[256], buf[512];
    int hl = snprintf(hdr, sizeof(hdr),
                      "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", tensor);
    uint64_t n = (uint64_t)hl;
    for (int i = 0; i < 8; i++)
        buf[i] = (char)((n >> (8 * i)) & 0xff);
    memcpy(buf + 8, hdr, (size_t)hl);
    memset(buf + 8 + hl, 0, 4);
    swt_write(swt_join(dir, "model.safetensors"), buf, (size_t)(8 + hl + 4));
    swt_write_str(swt_join(dir, "config.json"),
                  "{\"model_type\":\"qwen3_next\",\"num_hidden_layers\":2,\"hidden_size\":64,"
                  "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":32,"
                  "\"vocab_size\":16,\"num_nextn_predict_layers\":1}");
}

static const json_t *payload_gate(const json_t *r, const char *needle)
{
    for (int i = 0;; i++) {
        const json_t *g = gate(r, "payload", NULL, i);
        if (!g || strstr(json_string_value(json_object_get(g, "line")), needle))
            return g;
    }
}

static void test_payload_mtp(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-large"); /* spec_decode: mtp x 2 */
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", swt_join(f->dir, "ckpt"));
    assert_int_equal(mkdir(dir, 0755), 0);

    /* not on this machine: skipped, with the path */
    json_t *r = run(f, x, NULL, NULL);
    const json_t *g = payload_gate(r, "spec_decode");
    assert_string_equal(verdict(g), "skip");
    has(g, "line", "not on this machine");
    json_decref(r);

    /* declares one MTP layer, ships zero mtp tensors: the flags must not be rendered */
    write_checkpoint(dir, "model.layers.0.mlp.weight");
    x->payload.path.v = dir;
    r = run(f, x, NULL, NULL);
    g = payload_gate(r, "spec_decode");
    assert_string_equal(verdict(g), "fail");
    assert_true(num(g, "mtp_layers_declared") == 1 && num(g, "mtp_tensors") == 0);
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "fail");
    json_decref(r);

    /* ships its head */
    write_checkpoint(dir, "mtp.fc.weight");
    r = run(f, x, NULL, NULL);
    g = payload_gate(r, "spec_decode");
    assert_string_equal(verdict(g), "pass");
    assert_true(num(g, "mtp_tensors") == 1);
    json_decref(r);
}

static void test_payload_projector(void **state)
{
    struct fx *f = *state;
    struct sw_fleet_endpoint *x = ep(f, "frank-small");
    struct sw_err e;
    char html[4096], proj[4096];
    snprintf(html, sizeof(html), "%s", swt_join(f->dir, "mmproj-403.gguf"));
    snprintf(proj, sizeof(proj), "%s", swt_join(f->dir, "mmproj-ok.gguf"));

    json_t *r = run(f, x, NULL, NULL); /* the operator's path is not here */
    assert_string_equal(verdict(payload_gate(r, "projector")), "skip");
    json_decref(r);

    swt_write_str(html, "<html><body>403 Forbidden</body></html>\n");
    x->payload.mmproj.v = html;
    r = run(f, x, NULL, NULL);
    const json_t *g = payload_gate(r, "projector");
    assert_string_equal(verdict(g), "fail");
    has(g, "fix", "mmproj");
    json_decref(r);

    struct sw_gguf_writer *w = NULL;
    float data[32] = {0};
    uint64_t ne[1] = {32};
    assert_int_equal(sw_gguf_writer_new(&w, 3, 0), 0);
    assert_int_equal(sw_gguf_writer_set_str(w, "general.architecture", "clip"), 0);
    assert_int_equal(sw_gguf_writer_add_tensor(w, "v.patch_embd.weight", 0, 1, ne, data, false), 0);
    assert_int_equal(sw_gguf_writer_write(w, proj, &e), 0);
    sw_gguf_writer_free(w);
    x->payload.mmproj.v = proj;
    r = run(f, x, NULL, NULL);
    assert_string_equal(verdict(payload_gate(r, "projector")), "pass");
    json_decref(r);
}

/* ---------------------------------------------------------------------------------------------
 * The command line: exit codes and bad input.
 */
static void test_cli(void **state)
{
    struct fx *f = *state;
    struct swt_run r;
    const char *fleet = swt_src("examples/operator.yaml");
    char led[4096];
    snprintf(led, sizeof(led), "%s", swt_join(f->dir, "cli.sqlite"));

    swl_cli_import_seed(led);

    /* the operator's rejection of 3 x 196,608, human view */
    assert_int_equal(swt_slipway(&r, "check", "--fleet", fleet, "frank-small", "--ledger", led,
                                 "--set", "slots=3", "--set", "ctx=589824", NULL),
                     0);
    swt_out_has(&r, 1, "FAIL band", "1,153 MiB free", "fix: cut the pool by 49,152 tokens", NULL);

    /* --json: frank-large's memory gates pass or skip; its unit fails on one law only, the
     * image named by tag (the operator's log omits the digest the real unit pins): exit 1 */
    assert_int_equal(
        swt_slipway(&r, "check", "--fleet", fleet, "frank-large", "--ledger", led, "--json", NULL),
        0);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "fail");
    assert_int_equal(json_array_size(json_object_get(j, "endpoints")), 1);
    json_t *gates = json_object_get(json_array_get(json_object_get(j, "endpoints"), 0), "gates");
    size_t failed = 0;
    for (size_t i = 0; i < json_array_size(gates); i++) {
        json_t *g = json_array_get(gates, i);
        if (strcmp(json_string_value(json_object_get(g, "verdict")), "fail"))
            continue;
        failed++;
        assert_string_equal(json_string_value(json_object_get(g, "gate")), "unit");
        assert_non_null(strstr(json_string_value(json_object_get(g, "line")), "image-digest"));
    }
    assert_int_equal(failed, 1);
    json_decref(j);
    swt_run_free(&r);

    /* the same endpoint with its image pinned by digest: every gate passes or skips, exit 0 */
    {
        char *text = NULL;
        size_t len = 0;
        struct sw_err e;
        assert_int_equal(sw_read_file(fleet, 1 << 22, &text, &len, &e), 0);
        const char *img = "image: docker.io/kyuz0/vllm-therock-gfx1151";
        char *at = strstr(text, img);
        assert_non_null(at);
        FILE *fp = fopen(swt_join(f->dir, "pinned.yaml"), "w");
        assert_non_null(fp);
        fwrite(text, 1, (size_t)(at - text) + strlen(img), fp);
        fputs("@sha256:"
              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
              fp);
        fputs(at + strlen(img), fp);
        fclose(fp);
        sw_free(text);
        /* env files resolve against the fleet's directory */
        assert_int_equal(
            symlink(swt_src("examples/frank-primary.env"), swt_join(f->dir, "frank-primary.env")),
            0);
        assert_int_equal(
            symlink(swt_src("examples/frank-small.env"), swt_join(f->dir, "frank-small.env")), 0);
        assert_int_equal(swt_slipway(&r, "check", "--fleet", swt_join(f->dir, "pinned.yaml"),
                                     "frank-large", "--ledger", led, "--json", NULL),
                         0);
        assert_int_equal(r.status, 0);
        j = swt_json_out(&r);
        assert_string_equal(json_string_value(json_object_get(j, "verdict")), "pass");
        json_decref(j);
        swt_run_free(&r);
    }

    /* unusable input: exit 2 with a clear error */
    assert_int_equal(swt_slipway(&r, "check", "--fleet", swt_join(f->dir, "missing.yaml"), NULL),
                     0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "missing.yaml"));
    swt_run_free(&r);

    assert_int_equal(
        swt_slipway(&r, "check", "--fleet", fleet, "frank-nobody", "--no-ledger", NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no endpoint 'frank-nobody'"));
    swt_run_free(&r);

    const char *broken = swt_join(f->dir, "broken.sqlite");
    swt_write_str(broken, "<html><body>403 Forbidden</body></html>\n");
    assert_int_equal(
        swt_slipway(&r, "check", "--fleet", fleet, "frank-small", "--ledger", broken, NULL), 0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "broken.sqlite"));
    swt_run_free(&r);

    assert_int_equal(swt_slipway(&r, "check", "--fleet", fleet, "frank-small", "--no-ledger",
                                 "--set", "slots=zero", NULL),
                     0);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "slots"));
    swt_run_free(&r);

    swt_slipway_exits(2, "check", "--fleet", fleet, "--set", "slots=3", "--no-ledger", NULL);

    swt_slipway_exits(2, "check", "--fleet", fleet, "frank-small", "--ledger",
                      swt_join(f->dir, "nope.sqlite"), NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_small_196608_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_180224_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_262144_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_primary_6x241664_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_primary_pool_calibrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_primary_seqs2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_primary_seqs2_seed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_primary_arena, setup, teardown),
        cmocka_unit_test_setup_teardown(test_primary_pool_printed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_payload_mtp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_payload_projector, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
    };
    return cmocka_run_group_tests_name("gate", tests, NULL, NULL);
}
