/*
 * SGLang in the fleet: the operator's retired SGLang endpoint (examples/operator.yaml
 * frank-primary-sglang) planned by sw_plan_endpoint through memory/sglang and gated by `check`,
 * and the seed's SGLang figures reproduced from data.
 *
 * The figures (seed 000, "Shape: fp8 KV, pinned 606,208-token pool / 4 x 151,552 slots, bf16
 * mamba states pinned at 32 slots (the engine autofills the ssm pool to a fixed ~5.1 GB
 * regardless of dtype)"; "autofit's 687,388 would leave 0.53 GB"; "531 MiB free at the old
 * shape"; "2 x 262,144 = 524,288 leaves ~82k tokens of pool slack") and the model they were
 * printed for: the fleet's *mimo9b architecture (an assumption the fleet file states).
 *
 * What the seed does NOT give: the free memory before and after the weights load, the weights'
 * size or mem_fraction_static of that boot. So SGLang's rest cannot be computed from first
 * principles here; it is calibrated from one printed figure (the autofit) and the other (the
 * autofill) is predicted from it, and back. "Would leave 0.53 GB" is not an independent figure:
 * test_autofit_leaves says what the law gives, test_calib_sglang.c test_half_gb_readings the
 * only reading under which it is reproduced (the 531 MiB reading itself, taken at the autofit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/hf.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>

#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EP "frank-primary-sglang"

static struct sw_fleet_endpoint *ep(void)
{
    struct sw_fleet_endpoint *x = (struct sw_fleet_endpoint *)sw_fleet_endpoint(swt_operator(), EP);
    assert_non_null(x);
    return x;
}

/* The pinned shape, planned from the fleet: the pool is the pin, 4 x 151,552 exactly; 32 mamba
 * slots cap the running requests at 32 // 3 = 10, so the 4 requests run. */
static void test_plan_pinned(void **state)
{
    struct sw_plan p;
    struct sw_err e;
    (void)state;
    sw_err_clear(&e);
    if (sw_plan_endpoint(swt_operator(), ep(), NULL, &p, &e))
        fail_msg("%s", e.msg);
    assert_non_null(p.sglang);
    assert_int_equal(p.sglang->max_total_num_tokens, 606208);
    assert_int_equal(p.sglang->max_total_num_tokens, 4 * 151552);
    assert_int_equal(p.sglang->max_running_requests, 4);
    assert_int_equal(p.sglang->max_mamba_cache_size, 32);
    /* fp8: 8 full-attention layers x 4 KV heads x 256 x (K + V) x 1 B */
    assert_int_equal(p.sglang->cell_bytes, 16384);
    /* bf16 state (the endpoint's --mamba-ssm-dtype): 24 GDN layers x (conv 8,192 x 3 x 2 B +
     * temporal 32 x 128 x 128 x 2 B) */
    assert_int_equal(p.sglang->mamba_cache_per_req, 24 * (8192 * 3 * 2 + 32 * 128 * 128 * 2));
    assert_string_equal(p.sglang_opts->mamba_ssm_dtype, "bfloat16");
    /* the argv the law read is the one the unit would run */
    bool pin = false;
    for (size_t i = 0; i + 1 < p.cmd.argc; i++)
        if (!strcmp(p.cmd.argv[i], "--max-total-tokens") && !strcmp(p.cmd.argv[i + 1], "606208"))
            pin = true;
    assert_true(pin);
    /* the measured autofit calibrates the rest the fleet does not hold (see below) */
    json_t *cal = json_object_get(p.engine_plan, "calibrated");
    assert_int_equal(json_integer_value(json_object_get(cal, "autofit_tokens")), 687388);
    assert_int_equal(json_integer_value(json_object_get(cal, "pin_unallocated_tokens")), 81180);
    assert_int_equal(json_integer_value(json_object_get(cal, "autofill_mamba_slots")), 217);
    assert_true(json_number_value(json_object_get(cal, "autofill_ssm_gb")) == 5.09);
    json_t *lines = json_object_get(p.engine_plan, "lines");
    assert_string_equal(json_string_value(json_array_get(lines, 0)),
                        "KV Cache is allocated. #tokens: 606208, K size: 4.63 GB, V size: 4.63 GB");
    sw_plan_free(&p);
}

/* "2 x 262,144 = 524,288 leaves ~82k tokens of pool slack": the same pin, the new contract. */
static void test_pool_slack(void **state)
{
    struct sw_err e;
    json_t *out = NULL;
    (void)state;
    struct sw_fleet_endpoint x = *ep();
    assert_int_equal(sw_gate_set(&x, "seqs=2", &e), 0);
    assert_int_equal(sw_gate_set(&x, "max_model_len=262144", &e), 0);
    struct sw_gate_opts o = {0};
    if (sw_gate_endpoint(swt_operator(), &x, &o, &out, &e))
        fail_msg("%s", e.msg);
    const json_t *g = NULL, *gs = json_object_get(out, "gates");
    for (size_t i = 0; i < json_array_size(gs); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(gs, i), "gate")), "pool"))
            g = json_array_get(gs, i);
    assert_non_null(g);
    assert_string_equal(json_string_value(json_object_get(g, "verdict")), "pass");
    const json_t *n = json_object_get(g, "numbers");
    double slack = json_number_value(json_object_get(n, "pool_tokens")) -
                   json_number_value(json_object_get(n, "need_tokens"));
    assert_true(slack == 81920); /* "~82k" */
    json_decref(out);
}

static const json_t *first(const json_t *out, const char *gate, const char *verdict)
{
    const json_t *gs = json_object_get(out, "gates");
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (!strcmp(json_string_value(json_object_get(g, "gate")), gate) &&
            (!verdict || !strcmp(json_string_value(json_object_get(g, "verdict")), verdict)))
            return g;
    }
    return NULL;
}

/* The first gate `gate` with `verdict` is there and its `field` says needle. */
static void gate_says(const json_t *out, const char *gate, const char *verdict, const char *field,
                      const char *needle)
{
    const json_t *g = first(out, gate, verdict);
    if (!g)
        fail_msg("no %s gate with verdict %s", gate, verdict);
    const char *v = json_string_value(json_object_get(g, field));
    if (!v || !strstr(v, needle))
        fail_msg("%s gate's %s does not say '%s': %s", gate, field, needle, v ? v : "(none)");
}

/* check: the pool floor (seqs x context), the mamba request cap, the window, known-bad. */
static void test_gates(void **state)
{
    struct sw_err e;
    json_t *out = NULL;
    struct sw_gate_opts o = {0};
    (void)state;
    struct sw_fleet_endpoint x = *ep();
    assert_int_equal(sw_gate_endpoint(swt_operator(), &x, &o, &out, &e), 0);
    assert_non_null(first(out, "pool", "pass"));
    assert_null(first(out, "pool", "fail"));
    /* the harness's 262,144 contextWindow does not fit a 151,552 request window */
    assert_non_null(first(out, "window", "fail"));
    assert_non_null(first(out, "known_bad", "pass"));
    json_decref(out);

    /* 5 x 151,552 = 757,760 > 606,208 */
    struct sw_fleet_endpoint y = *ep();
    assert_int_equal(sw_gate_set(&y, "seqs=5", &e), 0);
    assert_int_equal(sw_gate_endpoint(swt_operator(), &y, &o, &out, &e), 0);
    gate_says(out, "pool", "fail", "fix", "757,760");
    json_decref(out);

    /* 9 mamba slots run 3 requests: the contract of 4 is not served */
    struct sw_fleet_endpoint z = *ep();
    assert_int_equal(sw_gate_set(&z, "max_mamba_cache_size=9", &e), 0);
    assert_int_equal(sw_gate_endpoint(swt_operator(), &z, &o, &out, &e), 0);
    gate_says(out, "pool", "fail", "line", "runs 3 requests");
    json_decref(out);
}

/* An unpinned SGLang endpoint: the engine sizes its pool, and the fleet holds no free-memory
 * facts; the measured autofit (687,388 tokens for this shape) gives the rest, so the pool and
 * window gates hold the autofit's pool instead of skipping. A larger pin is capped at the autofit,
 * so a contract past it is fixed by the contract, not by max_total_tokens. Without the fact the
 * law cannot run and the gates say so. */
static double num_of(const json_t *g, const char *k)
{
    return json_number_value(json_object_get(json_object_get(g, "numbers"), k));
}

static void test_gates_unpinned(void **state)
{
    struct sw_err e;
    json_t *out = NULL;
    struct sw_gate_opts o = {0};
    struct sw_plan p;
    (void)state;
    struct sw_fleet_endpoint x = *ep();
    assert_int_equal(sw_gate_set(&x, "max_total_tokens=null", &e), 0);
    /* the plan: the autofit's pool, said where it comes from */
    if (sw_plan_endpoint(swt_operator(), &x, NULL, &p, &e))
        fail_msg("%s", e.msg);
    assert_false(p.pool_pinned);
    assert_int_equal(p.sglang->max_total_num_tokens, 687388);
    assert_string_equal(json_string_value(json_object_get(p.predicted, "pool_from")),
                        "measured autofit_tokens");
    sw_plan_free(&p);

    assert_int_equal(sw_gate_endpoint(swt_operator(), &x, &o, &out, &e), 0);
    const json_t *g = first(out, "pool", "pass");
    assert_non_null(g);
    assert_true(num_of(g, "pool_tokens") == 687388);
    assert_true(num_of(g, "need_tokens") == 4.0 * 151552);
    assert_true(num_of(g, "autofit") == 1);
    assert_null(first(out, "pool", "skip"));
    /* 262,144 > the 151,552 request window */
    assert_non_null(first(out, "window", "fail"));
    assert_null(first(out, "window", "skip"));
    json_decref(out);

    /* 3 x 262,144 = 786,432 > 687,388: the autofit is the ceiling */
    struct sw_fleet_endpoint y = x;
    assert_int_equal(sw_gate_set(&y, "seqs=3", &e), 0);
    assert_int_equal(sw_gate_set(&y, "max_model_len=262144", &e), 0);
    assert_int_equal(sw_gate_endpoint(swt_operator(), &y, &o, &out, &e), 0);
    g = first(out, "pool", "fail");
    assert_non_null(g);
    const char *fix = json_string_value(json_object_get(g, "fix"));
    assert_non_null(strstr(fix, "cut seqs to 2, or max_model_len to 229,129"));
    assert_null(strstr(fix, "max_total_tokens 786,432"));
    assert_non_null(first(out, "window", "pass"));
    json_decref(out);

    /* no autofit fact: nothing sizes the pool here */
    struct sw_fleet_endpoint z = x;
    z.n_facts = 0;
    assert_int_equal(sw_gate_endpoint(swt_operator(), &z, &o, &out, &e), 0);
    gate_says(out, "pool", "skip", "line", "free memory");
    json_decref(out);
}

/* Held out both ways. The autofit (687,388 tokens with 32 bf16 mamba slots, no pin) implies a
 * rest of [687,388, 687,389) x 16,384 + 32 x 26,345,472 B = 11.27 GiB. The same rest with the
 * mamba pool left to the engine's autofill (ratio 0.9: rest x 0.9 / 1.9) predicts the ssm pool
 * the log quotes: "~5.1 GB" read as [5.05, 5.15) GB (SGLang prints GB = 2^30 B). "Regardless of
 * dtype": the autofill's bytes do not depend on mamba_ssm_dtype (within one slot); the ssm share
 * does, 5.09 (bf16) vs 5.20 (float32), which "~5.1" covers to 0.1 GB. */
static void test_autofill_from_autofit(void **state)
{
    struct sw_sglang_opts o;
    struct sw_hf_config *c = calloc(1, sizeof(*c));
    struct sw_sglang_report r32, rbf;
    struct sw_err e;
    uint64_t lo, hi;
    (void)state;
    swt_sglang_law(swt_operator(), EP, &o, c);
    o.max_total_tokens = 0; /* the autofit: no pin */
    assert_int_equal(sw_sglang_rest_from_tokens(c, &o, 687388, &lo, &hi, &e), 0);
    assert_true(lo == 687388ull * 16384 + 32ull * 26345472);
    assert_true(hi == lo + 16384);
    /* the calibrated rest reproduces the autofit itself */
    o.rest_bytes = lo;
    assert_int_equal(sw_sglang_plan(c, &o, &rbf, &e), 0);
    assert_int_equal(rbf.max_total_num_tokens, 687388);
    o.rest_bytes = hi - 1;
    assert_int_equal(sw_sglang_plan(c, &o, &rbf, &e), 0);
    assert_int_equal(rbf.max_total_num_tokens, 687388);
    /* the autofill of the same rest, over the whole interval */
    for (int k = 0; k < 2; k++) {
        o.rest_bytes = k ? hi - 1 : lo;
        o.max_mamba_cache_size = 0;
        snprintf(o.mamba_ssm_dtype, sizeof(o.mamba_ssm_dtype), "bfloat16");
        assert_int_equal(sw_sglang_plan(c, &o, &rbf, &e), 0);
        assert_true(rbf.mamba_ssm_gb >= 5.05 && rbf.mamba_ssm_gb < 5.15);
        assert_int_equal(rbf.max_mamba_cache_size, 217);
        snprintf(o.mamba_ssm_dtype, sizeof(o.mamba_ssm_dtype), "float32");
        assert_int_equal(sw_sglang_plan(c, &o, &r32, &e), 0);
        assert_int_equal(r32.max_mamba_cache_size, 111);
        assert_true(fabs(r32.mamba_ssm_gb - 5.1) <= 0.11);
        /* the pool's bytes: the same within one slot of the larger state */
        double b16 = rbf.mamba_conv_gb + rbf.mamba_ssm_gb,
               b32 = r32.mamba_conv_gb + r32.mamba_ssm_gb;
        assert_true(fabs(b16 - b32) * (double)SW_GIB < (double)r32.mamba_cache_per_req);
    }
    /* And back: "~5.1 GB" of bf16 ssm state = 216..219 autofilled slots, a rest of
     * [216, 220) x 26,345,472 x 1.9 / 0.9 B; with 32 slots pinned instead, the autofit of that
     * rest spans 681,792..695,370 tokens and holds the printed 687,388. */
    snprintf(o.mamba_ssm_dtype, sizeof(o.mamba_ssm_dtype), "bfloat16");
    o.max_mamba_cache_size = 32;
    o.rest_bytes = (uint64_t)ceil(216.0 * 26345472.0 * 1.9 / 0.9);
    assert_int_equal(sw_sglang_plan(c, &o, &rbf, &e), 0);
    int64_t t_lo = rbf.max_total_num_tokens;
    o.rest_bytes = (uint64_t)floor(220.0 * 26345472.0 * 1.9 / 0.9);
    assert_int_equal(sw_sglang_plan(c, &o, &rbf, &e), 0);
    int64_t t_hi = rbf.max_total_num_tokens;
    assert_true(t_lo <= 687388 && 687388 <= t_hi);
    assert_true(t_hi - t_lo < 14000); /* the print's tolerance, in tokens */
    free(c);
}

/* What the autofit leaves. The seed gives 531 MiB free at the pinned 606,208; the autofit holds
 * 81,180 tokens more = 1,268 MiB of fp8 KV (the mamba pool is the same 32 slots), more than the
 * 531 MiB that were free: the autofit's pool could not have been added to the pinned boot's
 * usage. "Would leave 0.53 GB" is then SGLang's own reserve (1 - mem_fraction_static of the
 * pre-load free memory), which needs the boot's free-memory facts and mem_fraction_static: the
 * seed does not give them, so it is not reproduced. */
static void test_autofit_leaves(void **state)
{
    struct sw_sglang_opts o;
    struct sw_hf_config *c = calloc(1, sizeof(*c));
    struct sw_sglang_report pin, fit;
    struct sw_err e;
    (void)state;
    swt_sglang_law(swt_operator(), EP, &o, c);
    assert_int_equal(sw_sglang_plan(c, &o, &pin, &e), 0);
    uint64_t lo, hi;
    o.max_total_tokens = 0;
    assert_int_equal(sw_sglang_rest_from_tokens(c, &o, 687388, &lo, &hi, &e), 0);
    o.rest_bytes = lo;
    assert_int_equal(sw_sglang_plan(c, &o, &fit, &e), 0);
    int64_t more = fit.max_total_num_tokens - pin.max_total_num_tokens;
    assert_int_equal(more, 81180);
    double mib = (double)more * (double)pin.cell_bytes / (double)SW_MIB;
    assert_true(fabs(mib - 1268.4) < 0.1);
    assert_true(mib > 531); /* more than the pinned boot had free */
    assert_true(fit.max_mamba_cache_size == pin.max_mamba_cache_size);
    free(c);
}

/* Calibration refuses what it cannot invert. */
static void test_rest_refusals(void **state)
{
    struct sw_sglang_opts o;
    struct sw_hf_config *c = calloc(1, sizeof(*c));
    struct sw_err e;
    uint64_t lo, hi;
    (void)state;
    swt_sglang_law(swt_operator(), EP, &o, c);
    o.max_mamba_cache_size = 0; /* autofilled from the same rest */
    assert_int_equal(sw_sglang_rest_from_tokens(c, &o, 687388, &lo, &hi, &e), SW_EUNSUPPORTED);
    o.max_mamba_cache_size = 32;
    assert_int_equal(sw_sglang_rest_from_tokens(c, &o, 0, &lo, &hi, &e), SW_EINVAL);
    assert_int_equal(sw_sglang_rest_from_tokens(c, &o, INT64_MAX, &lo, &hi, &e), SW_ERANGE);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_pinned),
        cmocka_unit_test(test_pool_slack),
        cmocka_unit_test(test_gates),
        cmocka_unit_test(test_gates_unpinned),
        cmocka_unit_test(test_autofill_from_autofit),
        cmocka_unit_test(test_autofit_leaves),
        cmocka_unit_test(test_rest_refusals),
    };
    return cmocka_run_group_tests(tests, swt_operator_setup, swt_operator_teardown);
}
