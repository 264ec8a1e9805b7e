/*
 * calib/sglang and the SGLang band gate: the seed's SGLang shape (examples/operator.yaml
 * frank-primary-sglang, fp8 KV, 32 bf16 mamba slots) calibrated from its two recorded figures,
 * "531 MiB free" at the pinned 606,208-token pool and the engine's own autofit of 687,388 tokens,
 * each held out in turn and predicted from the other.
 *
 * The figures: rest = [687,388 x 16,384 + 32 x 26,345,472, + 16,384) B = 11.27 GiB; the free
 * constant F0 = 531 MiB + (606,208 + 1) x 16,384 + 32 x 26,345,472 B; the autofit then leaves
 * 531 - 81,180 x 16,384 B = -737 MiB: it would OOM (the seed: "would have left 0.53 GB and
 * OOMed"); the pinned pool's 531 MiB is outside the 2-3 GiB band.
 *
 * The pipeline (plan's sw_plan_sglang_calib, which calibrate and the band gate share) where the
 * two copies it replaced had drifted apart: the declared shape's mamba pool is the law's, not the
 * option (the radix cache off and no --max-mamba-cache-size: max_running_requests slots,
 * docs/sglang-law.md "Pool size"; calibrate's copy recorded 0, so its fit missed the 531 MiB it
 * was fitted on by 100 MiB); and a declared shape that pins no pool is still calibrated
 * (docs/check.md; the band gate's copy fell back to the generic band).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/hf.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>

#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EP "frank-primary-sglang"

static const struct sw_fleet_endpoint *ep(void)
{
    const struct sw_fleet_endpoint *x = sw_fleet_endpoint(swt_operator(), EP);
    assert_non_null(x);
    return x;
}

/* boot 1: the pinned shape, 531 MiB free; boot 2: the autofit, no reading */
static void seed_obs(struct sw_calib_sglang_obs obs[2])
{
    memset(obs, 0, 2 * sizeof(*obs));
    obs[0].boot_id = 1;
    snprintf(obs[0].ext_id, sizeof(obs[0].ext_id), "sglang-pinned-606208");
    obs[0].tokens = 606208;
    obs[0].pinned = true;
    obs[0].mamba_slots = 32;
    obs[0].has_free = true;
    obs[0].free_bytes = 531.0 * SW_MIB;
    obs[1].boot_id = 2;
    snprintf(obs[1].ext_id, sizeof(obs[1].ext_id), "sglang-autofit");
    obs[1].tokens = 687388;
    obs[1].mamba_slots = 32;
}

static const double KV_PIN = (606208.0 + 1) * 16384, MAMBA = 32.0 * 26345472;

/* Each test's fixture: the endpoint's law (its pinned options and the model's HF config), the
 * same options unpinned (the engine's autofit), the seed's two boots, and room for a fit. */
struct sg {
    struct sw_sglang_opts o, q;
    struct sw_hf_config c;
    struct sw_calib_sglang s;
    struct sw_calib_sglang_obs obs[2];
};

static int sg_setup(void **state)
{
    struct sg *g = calloc(1, sizeof(*g));
    *state = g;
    if (!g)
        return -1;
    swt_sglang_law(swt_operator(), EP, &g->o, &g->c);
    g->q = g->o;
    g->q.max_total_tokens = 0;
    seed_obs(g->obs);
    return 0;
}

static int sg_teardown(void **state)
{
    free(*state);
    return 0;
}

static void test_fit_both(void **state)
{
    struct sg *g = *state;
    struct sw_calib_sglang *s = &g->s;
    struct sw_calib_sglang_pred pr;
    struct sw_err e;
    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, g->obs, 2, NULL, s, &e), 0);
    assert_true(s->consistent);
    assert_int_equal(s->cell_bytes, 16384);
    assert_int_equal(s->mamba_per_req, 26345472);
    assert_true(s->have_rest && s->have_free);
    assert_true(s->rest_lo == 687388ull * 16384 + 32ull * 26345472);
    assert_true(s->rest_hi == s->rest_lo + 16384);
    assert_true(fabs((double)s->rest_lo / SW_GIB - 11.27) < 0.005);
    assert_true(s->f0_lo == 531.0 * SW_MIB + KV_PIN + MAMBA);
    /* the pinned shape: its own reading back */
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->o, &pr, &e), 0);
    assert_false(pr.autofit);
    assert_int_equal(pr.tokens_lo, 606208);
    assert_int_equal(pr.tokens_hi, 606208);
    assert_true(pr.free_lo == 531.0 * SW_MIB);
    assert_false(pr.would_oom);
    /* the autofit: 687,388 tokens, 81,180 more = 1,268 MiB: -737 MiB, would OOM */
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), 0);
    assert_true(pr.autofit);
    assert_int_equal(pr.tokens_lo, 687388);
    assert_int_equal(pr.tokens_hi, 687388);
    assert_int_equal(pr.mamba_slots, 32);
    assert_true(pr.free_lo == (531.0 - 81180.0 * 16384 / SW_MIB) * SW_MIB);
    assert_true(fabs(pr.free_lo / SW_MIB - -737.4) < 0.05);
    assert_true(pr.would_oom);
    assert_false(pr.extrapolated);
}

/* "would have left 0.53 GB": which reading the law admits (docs/sglang-law.md "0.53 GB").
 *
 * Reading A (the one calibrated above): 531 MiB free at the pinned pool. The autofit allocates
 * 81,180 tokens = 1,268.4 MiB more, so it leaves -737.4 MiB: a verdict (would OOM), but no
 * spelling of -737.4 MiB is 0.53 G of anything.
 *
 * Reading B: the 531 MiB and the 0.53 GB are ONE reading, taken at the autofit, written twice
 * (531 MiB / 1000 = 0.531: "0.53 GB"; as GiB it would print 0.52, as decimal GB 0.56). Fitted on
 * that reading the law puts the autofit back at 531 MiB = "0.53", exactly, and the pinned pool at
 * 531 + 1,268.4 = 1,799.4 MiB. That is the only reading in which both figures and the law agree;
 * the seed does not say which boot the reading belongs to, so neither is asserted as the truth.
 * What both readings agree on is the verdict: the autofit is refused (would OOM under A, 531 MiB
 * under B, outside the 2-3 GiB band either way) and so is the pinned pool (531 or 1,799 MiB,
 * both below 2,048). */
static void test_half_gb_readings(void **state)
{
    struct sg *x = *state;
    struct sw_hf_config *c = &x->c;
    struct sw_calib_sglang *s = &x->s;
    struct sw_calib_sglang_obs *obs = x->obs;
    struct sw_calib_sglang_pred pin, fit;
    struct sw_err e;
    char g[32];

    /* the spellings of 531 MiB: only MiB / 1000 prints the operator's "0.53" */
    snprintf(g, sizeof(g), "%.2f", 531.0 / 1000);
    assert_string_equal(g, "0.53");
    snprintf(g, sizeof(g), "%.2f", 531.0 * SW_MIB / SW_GIB);
    assert_string_equal(g, "0.52");
    snprintf(g, sizeof(g), "%.2f", 531.0 * SW_MIB / 1e9);
    assert_string_equal(g, "0.56");

    /* A: the reading at the pin; the autofit's -737.4 MiB is none of those spellings */
    seed_obs(obs);
    assert_int_equal(sw_calib_sglang_fit(c, &x->o, obs, 2, NULL, s, &e), 0);
    assert_int_equal(sw_calib_sglang_predict(s, c, &x->q, &fit, &e), 0);
    assert_true(fit.would_oom);
    double miss = fabs(fit.free_lo) / SW_MIB;
    snprintf(g, sizeof(g), "%.2f|%.2f|%.2f", miss / 1000, miss / 1024, miss * SW_MIB / 1e9);
    assert_string_equal(g, "0.74|0.72|0.77");

    /* B: the same reading at the autofit */
    seed_obs(obs);
    obs[0].has_free = false;
    obs[0].free_bytes = 0;
    obs[1].has_free = true;
    obs[1].free_bytes = 531.0 * SW_MIB;
    assert_int_equal(sw_calib_sglang_fit(c, &x->o, obs, 2, NULL, s, &e), 0);
    assert_true(s->consistent && s->have_rest && s->have_free);
    assert_int_equal(sw_calib_sglang_predict(s, c, &x->q, &fit, &e), 0);
    assert_int_equal(fit.tokens_lo, 687388);
    assert_true(fit.free_lo == 531.0 * SW_MIB);
    snprintf(g, sizeof(g), "%.2f", fit.free_lo / SW_MIB / 1000);
    assert_string_equal(g, "0.53");
    assert_false(fit.would_oom); /* a runtime OOM ("on the first long request"), not a boot one */
    assert_int_equal(sw_calib_sglang_predict(s, c, &x->o, &pin, &e), 0);
    assert_int_equal(pin.tokens_lo, 606208);
    assert_true(fabs(pin.free_lo / SW_MIB - 1799.4) < 0.05);
    assert_true(pin.free_lo - fit.free_lo == 81180.0 * 16384);
    /* both below the 2 GiB floor of the band: refused under either reading */
    assert_true(fit.free_hi < 2048.0 * SW_MIB && pin.free_hi < 2048.0 * SW_MIB);
}

/* One figure held out at a time, predicted from the other. */
static void test_held_out(void **state)
{
    struct sg *g = *state;
    struct sw_calib_sglang *s = &g->s;
    struct sw_calib_sglang_pred pr;
    struct sw_err e;
    /* without the autofit: the pinned boot only says rest >= its pools; the autofit is open
     * above, at least 606,208, which holds the printed 687,388 */
    int64_t out_autofit = 2;
    struct sw_calib_opts co = {.exclude = &out_autofit, .n_exclude = 1};
    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, g->obs, 2, &co, s, &e), 0);
    assert_false(s->have_rest);
    assert_true(s->rest_floor == 606208ull * 16384 + 32ull * 26345472);
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), 0);
    assert_true(pr.tokens_open);
    assert_int_equal(pr.tokens_lo, 606208);
    assert_true(pr.tokens_lo <= 687388);
    assert_non_null(strstr(pr.warning, "only the floor"));
    assert_false(pr.would_oom); /* not known: the top of the pool is open */
    /* without the free reading: the autofit alone reproduces itself, and the pin's unallocated
     * 81,180 tokens; nothing says what is free */
    int64_t out_pinned = 1;
    co.exclude = &out_pinned;
    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, g->obs, 2, &co, s, &e), 0);
    assert_true(s->have_rest);
    assert_false(s->have_free);
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), 0);
    assert_int_equal(pr.tokens_lo, 687388);
    assert_false(pr.have_free);
    /* nothing at all: the autofit is refused, naming why */
    struct sw_calib_sglang_obs none = g->obs[0];
    none.tokens = 0;
    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, &none, 1, NULL, s, &e), 0);
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "autofit cannot be predicted"));
}

/* Another mem_fraction_static: rest moves by the pre-load free memory x the difference, that
 * memory bounded by rest / fraction and the card: a range, marked as an extrapolation. */
static void test_fraction_extrapolates(void **state)
{
    struct sg *g = *state;
    struct sw_calib_sglang *s = &g->s;
    struct sw_calib_sglang_pred pr;
    struct sw_err e;
    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, g->obs, 2, NULL, s, &e), 0);
    /* the seed's boot ran at the card's default (24 GiB: 0.847) */
    assert_true(fabs(s->rest_mfs - 0.847) < 1e-9);
    g->q.mem_fraction_static = 0.80;
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), 0);
    assert_true(pr.extrapolated);
    assert_non_null(strstr(pr.warning, "EXTRAPOLATES across mem_fraction_static"));
    assert_true(pr.tokens_lo < pr.tokens_hi);
    assert_true(pr.tokens_hi < 687388);
    /* a smaller pool leaves more free: still under the band's floor at the top */
    assert_true(pr.free_hi > -737.0 * SW_MIB);
}

static const json_t *gate_of(const json_t *out, const char *gate)
{
    const json_t *gs = json_object_get(out, "gates");
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (!strcmp(json_string_value(json_object_get(g, "gate")), gate))
            return g;
    }
    return NULL;
}

static double num(const json_t *g, const char *k)
{
    return json_number_value(json_object_get(json_object_get(g, "numbers"), k));
}

/* The band gate from the fleet's facts: the pinned shape's 531 MiB is outside 2-3 GiB; the
 * unpinned shape's autofit would OOM; the fix's pin lands in the band. */
static void test_band_gate(void **state)
{
    struct sw_err e;
    json_t *out = NULL;
    struct sw_fleet_shape before = ep()->shape;
    struct sw_gate_opts go = {.before = &before};
    (void)state;
    struct sw_fleet_endpoint x = *ep();
    assert_int_equal(sw_gate_endpoint(swt_operator(), &x, &go, &out, &e), 0);
    const json_t *g = gate_of(out, "band");
    assert_non_null(g);
    assert_string_equal(json_string_value(json_object_get(g, "verdict")), "fail");
    assert_true(num(g, "free_bytes") == 531.0 * SW_MIB);
    assert_true(num(g, "pool_tokens") == 606208);
    assert_non_null(strstr(json_string_value(json_object_get(g, "line")), "outside"));
    const char *fix = json_string_value(json_object_get(g, "fix"));
    assert_non_null(fix);
    assert_non_null(strstr(fix, "max_total_tokens 476,352"));
    json_decref(out);

    struct sw_fleet_endpoint y = *ep();
    assert_int_equal(sw_gate_set(&y, "max_total_tokens=null", &e), 0);
    assert_int_equal(sw_gate_endpoint(swt_operator(), &y, &go, &out, &e), 0);
    g = gate_of(out, "band");
    assert_string_equal(json_string_value(json_object_get(g, "verdict")), "fail");
    assert_true(num(g, "pool_tokens") == 687388);
    assert_true(num(g, "would_oom") == 1);
    assert_true(fabs(num(g, "free_bytes") / SW_MIB - -737.4) < 0.05);
    assert_non_null(strstr(json_string_value(json_object_get(g, "line")), "would OOM"));
    json_decref(out);

    /* the fix's pin: 476,352 tokens land inside the band */
    struct sw_fleet_endpoint z = *ep();
    assert_int_equal(sw_gate_set(&z, "max_total_tokens=476352", &e), 0);
    assert_int_equal(sw_gate_set(&z, "seqs=3", &e), 0);
    assert_int_equal(sw_gate_set(&z, "max_model_len=151552", &e), 0);
    assert_int_equal(sw_gate_endpoint(swt_operator(), &z, &go, &out, &e), 0);
    g = gate_of(out, "band");
    assert_string_equal(json_string_value(json_object_get(g, "verdict")), "pass");
    double fm = num(g, "free_bytes");
    assert_true(fm >= 2048.0 * SW_MIB && fm <= 3072.0 * SW_MIB);
    json_decref(out);
}

/* The same figures as recorded boots (tests/data/ledger/seed-sglang.json): sw_calib_fit gathers
 * both with the pinned boot's reading; held out in turn; the gate reads them from the ledger. */
static void test_ledger(void **state)
{
    struct sw_err e = {0};
    struct sw_ledger l;
    struct sw_calib_fit *f = NULL;
    struct sg *g = *state;
    struct sw_calib_sglang *s = &g->s;
    struct sw_calib_sglang_pred pr;
    char *dir = swt_tmpdir();
    memset(&l, 0, sizeof(l));
    if (sw_ledger_open(&l, swt_join(dir, "sg.sqlite"), NULL, &e))
        fail_msg("%s", e.msg);
    json_t *seed = json_load_file(swt_src("tests/data/ledger/seed-sglang.json"), 0, NULL);
    assert_non_null(seed);
    struct sw_ledger_import_stats st = {0};
    if (sw_ledger_import(&l, seed, "seed-sglang.json", &st, &e))
        fail_msg("%s", e.msg);
    json_decref(seed);
    assert_int_equal(sw_calib_fit(&l, EP, NULL, &f, &e), 0);
    assert_int_equal(f->sglang.n, 2);
    const struct sw_calib_sglang_obs *pin = &f->sglang.obs[0], *fit = &f->sglang.obs[1];
    if (!pin->pinned) {
        pin = &f->sglang.obs[1];
        fit = &f->sglang.obs[0];
    }
    assert_true(pin->pinned && pin->has_free && pin->free_bytes == 531.0 * SW_MIB);
    assert_int_equal(pin->tokens, 606208);
    assert_int_equal(pin->mamba_slots, 32);
    assert_false(fit->pinned || fit->has_free);
    assert_int_equal(fit->tokens, 687388);

    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, f->sglang.obs, f->sglang.n, NULL, s, &e), 0);
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), 0);
    assert_int_equal(pr.tokens_lo, 687388);
    assert_true(pr.would_oom);
    /* the autofit held out: predicted only from below, and it holds the printed figure */
    struct sw_calib_opts co = {.exclude = &fit->boot_id, .n_exclude = 1};
    assert_int_equal(sw_calib_sglang_fit(&g->c, &g->o, f->sglang.obs, f->sglang.n, &co, s, &e), 0);
    assert_int_equal(sw_calib_sglang_predict(s, &g->c, &g->q, &pr, &e), 0);
    assert_true(pr.tokens_open && pr.tokens_lo <= 687388);
    /* the gate from the ledger's boots (no fleet fact needed: they say the same) */
    json_t *out = NULL;
    struct sw_fleet_shape before = ep()->shape;
    struct sw_gate_opts go = {.before = &before, .ledger = &l};
    struct sw_fleet_endpoint y = *ep();
    assert_int_equal(sw_gate_set(&y, "max_total_tokens=null", &e), 0);
    assert_int_equal(sw_gate_endpoint(swt_operator(), &y, &go, &out, &e), 0);
    const json_t *band = gate_of(out, "band");
    assert_string_equal(json_string_value(json_object_get(band, "verdict")), "fail");
    assert_true(num(band, "would_oom") == 1);
    assert_non_null(strstr(json_string_value(json_object_get(band, "line")), "ledger"));
    json_decref(out);
    sw_calib_fit_free(f);
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
}

/* The pipeline on the seed's shape: the facts' two observations, the law's 32 slots, the 531 MiB
 * given back. */
static void test_pipeline(void **state)
{
    struct sw_plan_sglang_calib sc;
    struct sw_calib_sglang_pred pr;
    struct sw_err e = {0};
    (void)state;
    if (sw_plan_sglang_calib(ep(), NULL, &sc, &e))
        fail_msg("%s", e.msg);
    assert_true(sc.law_ok && sc.declared_pinned && !sc.from_ledger);
    assert_int_equal(sc.n_obs, 2);
    assert_int_equal(sc.obs[0].tokens, 606208);
    assert_int_equal(sc.obs[0].mamba_slots, 32);
    assert_int_equal(sc.obs[1].tokens, 687388);
    assert_true(sc.s->consistent && sc.s->have_rest && sc.s->have_free);
    assert_int_equal(sw_calib_sglang_predict(sc.s, sc.c, &sc.declared, &pr, &e), 0);
    assert_true(pr.free_lo <= 531.0 * SW_MIB && pr.free_hi >= 531.0 * SW_MIB);
    sw_plan_sglang_calib_free(&sc);
}

/* Radix cache off, no --max-mamba-cache-size: the mamba pool is max_running_requests (seqs 4),
 * in the declared observation too, and the fit gives back the reading it was fitted on. */
static void test_pipeline_mamba_from_law(void **state)
{
    struct sw_plan_sglang_calib sc;
    struct sw_calib_sglang_pred pr;
    struct sw_err e = {0};
    struct sw_fleet_str args[8];
    struct sw_fleet_endpoint x = *ep();
    (void)state;
    assert_true(x.n_args < SW_ARRAY_LEN(args));
    memcpy(args, x.args, x.n_args * sizeof(*args));
    args[x.n_args++] = (struct sw_fleet_str){.v = "--disable-radix-cache"};
    x.args = args;
    if (sw_gate_set(&x, "max_mamba_cache_size=null", &e) || sw_plan_sglang_calib(&x, NULL, &sc, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(sc.drep.max_mamba_cache_size, 4);
    assert_int_equal(sc.n_obs, 2);
    assert_int_equal(sc.obs[0].mamba_slots, 4);
    assert_int_equal(sc.obs[1].mamba_slots, 4);
    assert_int_equal(sw_calib_sglang_predict(sc.s, sc.c, &sc.declared, &pr, &e), 0);
    assert_int_equal(pr.mamba_slots, 4);
    assert_true(pr.free_lo <= 531.0 * SW_MIB && pr.free_hi >= 531.0 * SW_MIB);
    sw_plan_sglang_calib_free(&sc);
}

/* A declared shape without the pin and the ledger's two boots (imported by the CLI): the pipeline
 * runs, and the band gate judges the autofit from them (it would OOM). */
static void test_pipeline_unpinned(void **state)
{
    struct sw_err e = {0};
    struct sw_ledger l;
    struct swt_run run;
    struct sw_calib_fit *f = NULL;
    struct sw_plan_sglang_calib sc;
    json_t *out = NULL;
    char *dir = swt_tmpdir();
    const char *db = swt_join(dir, "sg.sqlite");
    (void)state;
    swt_slipway(&run, "ledger", "import", swt_src("tests/data/ledger/seed-sglang.json"), "--ledger",
                db, NULL);
    assert_int_equal(run.status, 0);
    swt_run_free(&run);
    memset(&l, 0, sizeof(l));
    struct sw_fleet_endpoint y = *ep();
    if (sw_ledger_open(&l, db, NULL, &e) || sw_gate_set(&y, "max_total_tokens=null", &e) ||
        sw_calib_fit(&l, EP, NULL, &f, &e))
        fail_msg("%s", e.msg);
    struct sw_plan_sglang_calib_opts o = {.fit = f};
    if (sw_plan_sglang_calib(&y, &o, &sc, &e))
        fail_msg("%s", e.msg);
    assert_true(sc.law_ok && !sc.declared_pinned && sc.from_ledger && sc.n_obs == 2);
    assert_true(sc.s->consistent && sc.s->have_free);
    sw_plan_sglang_calib_free(&sc);
    sw_calib_fit_free(f);
    /* no --set: the declared shape is the unpinned one */
    struct sw_gate_opts go = {.ledger = &l};
    assert_int_equal(sw_gate_endpoint(swt_operator(), &y, &go, &out, &e), 0);
    const json_t *band = gate_of(out, "band");
    assert_string_equal(json_string_value(json_object_get(band, "verdict")), "fail");
    const char *line = json_string_value(json_object_get(band, "line"));
    swt_has_all("line", line, "calibrated", "by the ledger's SGLang boots", NULL);
    assert_true(num(band, "would_oom") == 1);
    assert_true(fabs(num(band, "free_bytes") / SW_MIB - -737.4) < 0.05);
    json_decref(out);
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fit_both, sg_setup, sg_teardown),
        cmocka_unit_test_setup_teardown(test_held_out, sg_setup, sg_teardown),
        cmocka_unit_test_setup_teardown(test_half_gb_readings, sg_setup, sg_teardown),
        cmocka_unit_test_setup_teardown(test_fraction_extrapolates, sg_setup, sg_teardown),
        cmocka_unit_test(test_band_gate),
        cmocka_unit_test_setup_teardown(test_ledger, sg_setup, sg_teardown),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_pipeline_mamba_from_law),
        cmocka_unit_test(test_pipeline_unpinned),
    };
    return cmocka_run_group_tests(tests, swt_operator_setup, swt_operator_teardown);
}
