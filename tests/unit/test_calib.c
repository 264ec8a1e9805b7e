/*
 * calib: fits over a ledger built from the seed fixture (tests/data/ledger/seed-boots.json, the
 * operator's measured boots and readings) and from points given directly.
 *
 * frank-primary's four fp8 boots (1,079,582 / 1,350,182 / 792,069 tokens at 262,144 and 398,658
 * at 200,704): fitted on all four, every printed figure is reproduced exactly; fitted on the
 * three at 262,144 only, the 200,704 prediction says it extrapolates and its interval (every
 * solution consistent with the three) contains 398,658; adding the fourth narrows predictions
 * for other geometries. With the inferred config the fit finds the fork's terms (64 B per token
 * per layer, one extra state block per group) instead of being told them.
 * frank-small's non-KV cost by subtraction and its budget; the expert arena; bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/calib.h>
#include <slipway/ledger.h>
#include <slipway/profile.h>

#include "swledger.h"
#include "swtest.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PRIMARY_CFG "tests/data/vllm/models/frank-primary-inferred"
#define SMALL_CFG   "tests/data/calib/frank-small-config.json"

struct fx {
    char *dir;
    struct sw_ledger l;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct sw_err e = {0};
    f->dir = swt_tmpdir();
    if (sw_ledger_open(&f->l, swt_join(f->dir, "seed.sqlite"), NULL, &e))
        fail_msg("%s", e.msg);
    swl_import_seed(&f->l, "seed-boots.json");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sw_ledger_close(&f->l);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static struct sw_calib_fit *fit(struct fx *f, const char *ep, const char *cfg)
{
    struct sw_calib_fit *r = NULL;
    struct sw_err e = {0};
    struct sw_calib_opts o = {.config_path = cfg ? swt_src(cfg) : NULL};
    if (sw_calib_fit(&f->l, ep, &o, &r, &e))
        fail_msg("%s", e.msg);
    return r;
}

static struct sw_calib_kv_fit *klass(struct sw_calib_fit *r, const char *name)
{
    for (int i = 0; i < r->n_kv; i++)
        if (!strcmp(r->kv[i].klass, name))
            return &r->kv[i];
    fail_msg("no KV class %s", name);
    return NULL;
}

static void conc_eq(double v, double printed)
{
    char a[16], b[16];
    snprintf(a, sizeof(a), "%.2f", v);
    snprintf(b, sizeof(b), "%.2f", printed);
    assert_string_equal(a, b);
}

/* Every printed token count and concurrency, reproduced exactly by every solution. */
static void test_fp8_all_four_exact(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-primary", NULL);
    struct sw_calib_kv_fit *k = klass(r, "kv=fp8 tp=2");
    assert_int_equal(k->n_points, 4);
    assert_true(k->consistent);
    assert_int_equal(k->n_lens, 2);
    int seen = 0;
    for (int i = 0; i < k->n_points; i++) {
        const struct sw_calib_kv_point *p = &k->pts[i];
        struct sw_calib_kv_pred pr;
        assert_int_equal(sw_calib_kv_predict(k, p->max_model_len, p->kv_bytes, &pr, NULL), 0);
        assert_int_equal(pr.tokens.lo, p->tokens);
        assert_int_equal(pr.tokens.hi, p->tokens);
        assert_false(pr.tokens.extrapolated);
        assert_int_equal(p->residual_tokens, 0);
        assert_int_equal(p->fit_tokens, p->tokens);
        if (p->has_conc) {
            conc_eq(pr.conc_lo, p->conc);
            conc_eq(pr.conc_hi, p->conc);
        }
        seen |= (p->tokens == 1079582) << 0 | (p->tokens == 1350182) << 1 |
                (p->tokens == 792069) << 2 | (p->tokens == 398658) << 3;
    }
    assert_int_equal(seen, 15);
    /* the 200,704 boot is the one that pins the geometry: it cut the set the most */
    for (int i = 0; i < k->n_points; i++)
        if (k->pts[i].max_model_len == 200704)
            assert_non_null(strstr(k->pts[i].taught, "the others predicted 312,925..409,888"));
    sw_calib_fit_free(r);
}

/* With the model's config, the fork's terms come out of the fit. */
static void test_fork_terms_found(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-primary", PRIMARY_CFG);
    struct sw_calib_kv_fit *k = klass(r, "kv=fp8 tp=2");
    const struct sw_calib_kv_model *m = &k->model;
    assert_true(m->have);
    assert_true(m->explained);
    assert_int_equal(m->block, 3136);
    assert_int_equal(m->group_size, 12);
    assert_int_equal(m->page_per_token, 512);
    assert_int_equal(m->extra_bytes_lo, 64);
    assert_int_equal(m->extra_bytes_hi, 64);
    assert_int_equal(m->state_blocks_base, 2);
    assert_int_equal(m->extra_blocks_lo, 1); /* 3 state blocks per request per GDN group */
    assert_int_equal(m->extra_blocks_hi, 1);
    assert_true(m->law_reproduces);
    /* bf16: one boot with a pinned pool, two whose pool the engine sized (utilization): those
     * still say their token count is a whole number of blocks, which cuts the structures */
    struct sw_calib_kv_fit *b = klass(r, "kv=auto tp=2");
    assert_int_equal(b->n_points, 3);
    assert_int_equal(b->n_skipped, 0);
    assert_true(b->consistent);
    assert_int_equal(b->n_solutions, 3);
    assert_true(b->b_lo <= 1568 && 1568 <= b->b_hi);
    assert_true(b->model.explained);
    assert_int_equal(b->model.block, 1568);
    assert_true(b->model.extra_bytes_lo <= 64 && b->model.extra_bytes_hi >= 64);
    assert_int_equal(b->model.extra_blocks_lo, 1);
    assert_true(b->model.law_reproduces);
    /* together: the terms do not depend on the KV dtype, and the classes pin them */
    assert_int_equal(r->joint_classes, 2);
    assert_true(r->joint_agree);
    assert_int_equal(r->joint_bytes_lo, 64);
    assert_int_equal(r->joint_bytes_hi, 64);
    assert_int_equal(r->joint_blocks_lo, 1);
    assert_int_equal(r->joint_blocks_hi, 1);
    sw_calib_fit_free(r);
}

/* A config whose structure the boots refute: the fleet's assumed 32 GDN value heads. */
static void test_wrong_config_refuted(void **state)
{
    struct fx *f = *state;
    char *dir = swt_tmpdir();
    swt_write_str(swt_join(dir, "config.json"),
                  "{\"model_type\":\"qwen3_next\",\"num_hidden_layers\":48,\"hidden_size\":2048,"
                  "\"num_attention_heads\":16,\"num_key_value_heads\":2,\"head_dim\":256,"
                  "\"full_attention_interval\":4,\"linear_num_key_heads\":16,"
                  "\"linear_num_value_heads\":32,\"linear_key_head_dim\":128,"
                  "\"linear_value_head_dim\":128,\"linear_conv_kernel_dim\":4,"
                  "\"max_position_embeddings\":262144}");
    struct sw_calib_fit *r = NULL;
    struct sw_calib_opts o = {.config_path = dir};
    assert_int_equal(sw_calib_fit(&f->l, "frank-primary", &o, &r, NULL), 0);
    struct sw_calib_kv_fit *k = klass(r, "kv=fp8 tp=2");
    assert_true(k->consistent); /* the law fits; the config does not */
    assert_true(k->model.have);
    assert_false(k->model.explained);
    assert_non_null(strstr(k->model.why, "not among the feasible solutions"));
    sw_calib_fit_free(r);
    swt_tmpdir_free(dir);
}

/* A class refitted without its 200,704 boot. */
static struct sw_calib_kv_fit *three(const struct sw_calib_kv_fit *k4, const char *cfg_text)
{
    struct sw_calib_kv_fit *k3 = calloc(1, sizeof(*k3));
    snprintf(k3->klass, sizeof(k3->klass), "%s", k4->klass);
    snprintf(k3->kv_dtype, sizeof(k3->kv_dtype), "%s", k4->kv_dtype);
    k3->tp = k4->tp;
    for (int i = 0; i < k4->n_points; i++)
        if (k4->pts[i].max_model_len == 262144)
            k3->pts[k3->n_points++] = k4->pts[i];
    assert_int_equal(k3->n_points, 3);
    struct sw_err e = {0};
    if (sw_calib_kv_fit(k3, cfg_text, 0, 0, &e))
        fail_msg("%s", e.msg);
    return k3;
}

static void test_three_extrapolate(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-primary", NULL);
    struct sw_calib_kv_fit *k3 = three(klass(r, "kv=fp8 tp=2"), NULL);
    assert_true(k3->consistent);
    struct sw_calib_kv_pred p;
    assert_int_equal(sw_calib_kv_predict(k3, 200704, 3150000000ull, &p, NULL), 0);
    assert_true(p.tokens.extrapolated);
    assert_non_null(strstr(p.warning, "EXTRAPOLATES across geometry"));
    assert_true(p.tokens.lo <= 398658 && 398658 <= p.tokens.hi);
    /* honest, not tight: the set spans every (block, state blocks) split of the 262,144 price */
    assert_int_equal(p.tokens.hi, 409888);
    assert_int_equal(p.tokens.lo, 312925);
    /* the same shape at the fitted length is exact */
    assert_int_equal(sw_calib_kv_predict(k3, 262144, 6100000000ull, &p, NULL), 0);
    assert_false(p.tokens.extrapolated);
    assert_int_equal(p.tokens.lo, 792069);
    assert_int_equal(p.tokens.hi, 792069);
    sw_calib_kv_fit_release(k3);
    free(k3);

    /* with the config the structure is known: the point is the printed figure, the interval
     * still the whole set's (the config is itself inferred) */
    char *cfg;
    size_t n;
    assert_int_equal(sw_read_file(swt_src(PRIMARY_CFG "/config.json"), 1 << 20, &cfg, &n, NULL), 0);
    k3 = three(klass(r, "kv=fp8 tp=2"), cfg);
    assert_true(k3->model.explained);
    assert_int_equal(k3->model.extra_bytes_lo, 64);
    assert_int_equal(sw_calib_kv_predict(k3, 200704, 3150000000ull, &p, NULL), 0);
    assert_int_equal(p.tokens.point, 398658);
    assert_true(p.tokens.extrapolated);
    assert_true(p.tokens.hi - p.tokens.lo > 50000);
    sw_free(cfg);
    sw_calib_kv_fit_release(k3);
    free(k3);
    sw_calib_fit_free(r);
}

/* Adding the 200,704 boot narrows every other geometry. */
static void test_narrowing(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-primary", NULL);
    struct sw_calib_kv_fit *k4 = klass(r, "kv=fp8 tp=2");
    struct sw_calib_kv_fit *k3 = three(k4, NULL);
    assert_true(k4->n_solutions < k3->n_solutions);
    static const struct {
        int64_t L;
        uint64_t kv;
    } g[] = {{241664, 6000000000ull},
             {131072, 3000000000ull},
             {229376, 4500000000ull},
             {180224, 2500000000ull}};
    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
        struct sw_calib_kv_pred p3, p4;
        assert_int_equal(sw_calib_kv_predict(k3, g[i].L, g[i].kv, &p3, NULL), 0);
        assert_int_equal(sw_calib_kv_predict(k4, g[i].L, g[i].kv, &p4, NULL), 0);
        assert_true(p3.tokens.extrapolated && p4.tokens.extrapolated);
        assert_true(p4.tokens.lo >= p3.tokens.lo && p4.tokens.hi <= p3.tokens.hi);
        assert_true(p4.tokens.hi - p4.tokens.lo < p3.tokens.hi - p3.tokens.lo);
    }
    /* the pool that holds 3 x 241,664 for every solution */
    uint64_t lo, hi;
    bool ex;
    assert_int_equal(sw_calib_kv_need(k4, 241664, 3, &lo, &hi, &ex, NULL), 0);
    assert_true(ex);
    assert_true(lo <= hi);
    struct sw_calib_kv_pred p;
    assert_int_equal(sw_calib_kv_predict(k4, 241664, hi, &p, NULL), 0);
    assert_true(p.conc_lo >= 3.0);
    sw_calib_kv_fit_release(k3);
    free(k3);
    sw_calib_fit_free(r);
}

/* Contradictory boots: no solution, and the fit names the boot. */
static void test_contradiction(void **state)
{
    struct fx *f = *state;
    struct sw_err e = {0};
    /* a fifth fp8 boot at 262,144 whose pool buys far fewer tokens than the others' price */
    json_t *shape =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:i,s:s,s:i,s:i,s:I}", "engine", "vllm", "engine_profile",
                  "tiered-expert-offload", "model", "name", "Qwen3.8-Flash-Next-Uncensored-FP8",
                  "quant", "fp8", "tp", 2, "kv_dtype", "fp8", "slots", 3, "ctx", 262144, "kv_bytes",
                  (json_int_t)7000000000);
    json_t *rep = json_pack("{s:i}", "kv_cache_tokens", 700000);
    struct sw_ledger_boot b = {.endpoint = "frank-primary",
                               .shape = shape,
                               .engine = "vllm",
                               .report = rep,
                               .source = "by hand",
                               .duration_ms = -1};
    int64_t id = 0;
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), 0);
    json_decref(shape);
    json_decref(rep);
    struct sw_calib_fit *r = fit(f, "frank-primary", NULL);
    struct sw_calib_kv_fit *k = klass(r, "kv=fp8 tp=2");
    assert_int_equal(k->n_points, 5);
    assert_false(k->consistent);
    char want[32];
    snprintf(want, sizeof(want), "#%lld", (long long)id);
    assert_non_null(strstr(k->why, want));
    assert_non_null(strstr(k->why, "contradicts"));
    struct sw_calib_kv_pred p;
    assert_int_equal(sw_calib_kv_predict(k, 262144, 6100000000ull, &p, &e), SW_EMISMATCH);
    sw_calib_fit_free(r);
    /* leaving it out restores the fit */
    struct sw_calib_opts o = {.exclude = &id, .n_exclude = 1};
    assert_int_equal(sw_calib_fit(&f->l, "frank-primary", &o, &r, &e), 0);
    assert_true(klass(r, "kv=fp8 tp=2")->consistent);
    sw_calib_fit_free(r);
}

static void test_bad_input(void **state)
{
    struct fx *f = *state;
    struct sw_err e = {0};
    struct sw_calib_fit *r = NULL;
    assert_int_equal(sw_calib_fit(&f->l, "frank-nowhere", NULL, &r, &e), SW_ENOENT);
    assert_null(r);
    assert_int_equal(sw_calib_fit(&f->l, "", NULL, &r, &e), SW_EINVAL);
    /* an empty ledger */
    char *dir = swt_tmpdir();
    struct sw_ledger l = {0};
    assert_int_equal(sw_ledger_open(&l, swt_join(dir, "empty.sqlite"), NULL, &e), 0);
    assert_int_equal(sw_calib_fit(&l, "frank-primary", NULL, &r, &e), SW_ENOENT);
    /* an endpoint with nothing fittable: a fit with nothing in it */
    int64_t eid;
    assert_int_equal(sw_ledger_endpoint_id(&l, "bare", true, &eid, &e), 0);
    assert_int_equal(sw_calib_fit(&l, "bare", NULL, &r, &e), 0);
    assert_int_equal(r->n_kv + r->n_nonkv, 0);
    assert_false(r->arena.have);
    sw_calib_fit_free(r);
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
    /* a config that is not there */
    struct sw_calib_opts o = {.config_path = "/nonexistent/model"};
    assert_int_not_equal(sw_calib_fit(&f->l, "frank-primary", &o, &r, &e), 0);
    assert_non_null(strstr(e.msg, "--config"));
    /* a KV class with nothing in it */
    struct sw_calib_kv_fit k = {0};
    assert_int_equal(sw_calib_kv_fit(&k, NULL, 0, 0, &e), SW_EINVAL);
}

/* frank-small: non-KV cost = used - the law's KV (+ recurrent state) for the reading's shape. */
static void test_small_nonkv(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-small", SMALL_CFG);
    assert_int_equal(r->n_kv, 0);
    assert_int_equal(r->n_nonkv, 2);
    const struct sw_calib_nonkv *plain = NULL, *proj = NULL;
    for (int i = 0; i < r->n_nonkv; i++) {
        if (strstr(r->nonkv[i].key, "mmproj"))
            proj = &r->nonkv[i];
        else
            plain = &r->nonkv[i];
    }
    assert_non_null(plain);
    assert_non_null(proj);
    /* 2 x 262,144: KV 524,288 x 25,088 B = 12,544 MiB + 2 x 50.25 MiB of GDN state */
    assert_int_equal(plain->n, 1);
    assert_true(fabs(plain->r[0].kv_mib - 12644.5) < 1e-6);
    assert_true(fabs(plain->mean - 7545.5) < 1e-6);
    /* with the projector: 22,972 - 14,262.75 and 21,684 - 13,086.75 */
    assert_int_equal(proj->n, 2);
    assert_true(fabs(proj->lo - 8597.25) < 1e-6);
    assert_true(fabs(proj->hi - 8709.25) < 1e-6);
    assert_true(fabs(proj->reserve_lo - 451) < 1e-6 && fabs(proj->reserve_hi - 451) < 1e-6);
    /* the projector by subtraction: 1,051.75..1,163.75 MiB */
    assert_true(fabs(proj->lo - plain->mean - 1051.75) < 1e-6);
    assert_true(fabs(proj->hi - plain->mean - 1163.75) < 1e-6);
    sw_calib_fit_free(r);
}

static json_t *small_shape(int64_t ctx, int slots, bool mmproj, const char *v)
{
    json_t *s = json_pack("{s:s,s:{s:s,s:s},s:s,s:s,s:I,s:i}", "engine", "llama.cpp", "model",
                          "name", "MiMo-V2.6-Distill-Qwen-9B", "quant", "Q5_K_M", "kv_dtype_k",
                          "f16", "kv_dtype_v", v, "ctx", (json_int_t)ctx, "slots", slots);
    if (mmproj)
        json_object_set_new(s, "flags",
                            json_pack("{s:{s:s,s:I}}", "mmproj", "name",
                                      "mmproj-MiMo-V2.6-Distill-Qwen-9B-f16.gguf", "size",
                                      (json_int_t)918166048));
    return s;
}

static void test_small_budget(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-small", SMALL_CFG);
    struct sw_calib_opts o = {.config_path = swt_src(SMALL_CFG)};
    struct sw_calib_budget b;
    struct sw_err e = {0};
    /* the operator's two projector shapes: the readings themselves */
    json_t *s = small_shape(589824, 3, true, "q8_0");
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), 0);
    assert_int_equal(b.n_dev, 1);
    assert_true(b.dev[0].measured);
    assert_true(b.dev[0].free_mib == 1153 && b.dev[0].used_mib == 22972);
    json_decref(s);
    s = small_shape(540672, 3, true, "q8_0");
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), 0);
    assert_true(b.dev[0].measured && b.dev[0].free_mib == 2441);
    json_decref(s);
    /* between them (3 x 188,416): predicted, inside the geometry */
    s = small_shape(565248, 3, true, "q8_0");
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), 0);
    assert_false(b.dev[0].measured);
    assert_false(b.extrapolated);
    assert_true(b.dev[0].free_lo > 1153 - 200 && b.dev[0].free_hi < 2441 + 200);
    assert_true(b.dev[0].free_lo <= b.dev[0].free_hi);
    json_decref(s);
    /* 3 x 262,144 with the projector: 18,816 MiB of KV alone; no free memory, and a warning */
    s = small_shape(786432, 3, true, "q8_0");
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), 0);
    assert_true(fabs(b.dev[0].kv_mib - (18816 + 150.75)) < 1e-6);
    assert_true(b.extrapolated);
    assert_non_null(strstr(b.warning, "outside the readings"));
    assert_true(b.dev[0].free_hi < 0);
    /* extrapolating widens the interval along the readings' trend */
    assert_true(b.dev[0].non_kv_hi - b.dev[0].non_kv_lo > 112);
    json_decref(s);
    /* a kind of shape never read (V f16): no budget, and why */
    s = small_shape(540672, 3, true, "f16");
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "no usage reading of a shape like this"));
    json_decref(s);
    /* a shape made elsewhere (the fleet names the GGUF file, not the model's name; the projector
     * by name only): the readings still cover it, with a warning that the match leaned */
    s = json_pack("{s:s,s:{s:s,s:s,s:s},s:s,s:s,s:i,s:i,s:{s:{s:s}}}", "engine", "llama.cpp",
                  "model", "name", "MiMo-V2.6-Distill-Qwen-9B-GGUF", "file",
                  "MiMo-V2.6-Distill-Qwen-9B-Q5_K_M.gguf", "quant", "Q5_K_M", "kv_dtype_k", "f16",
                  "kv_dtype_v", "q8_0", "ctx", 540672, "slots", 3, "flags", "mmproj", "name",
                  "mmproj-MiMo-V2.6-Distill-Qwen-9B-f16.gguf");
    if (sw_calib_budget(r, s, &o, &b, &e))
        fail_msg("%s", e.msg);
    assert_true(b.dev[0].measured && b.dev[0].free_mib == 2441);
    assert_non_null(strstr(b.warning, "assumed alike"));
    json_decref(s);
    /* another quant is another model: no reading covers it */
    s = json_pack("{s:s,s:{s:s,s:s},s:s,s:s,s:i,s:i}", "engine", "llama.cpp", "model", "name",
                  "MiMo-V2.6-Distill-Qwen-9B", "quant", "Q6_K", "kv_dtype_k", "f16", "kv_dtype_v",
                  "q8_0", "ctx", 524288, "slots", 2);
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), SW_ENOENT);
    json_decref(s);
    /* without a projector: the projector-less class only */
    s = small_shape(491520, 2, false, "q8_0");
    assert_int_equal(sw_calib_budget(r, s, &o, &b, &e), 0);
    assert_int_equal(b.n_dev, 1);
    assert_true(fabs(b.dev[0].non_kv_mib - 7545.5) < 1e-6);
    assert_true(b.extrapolated); /* one reading at 524,288 */
    json_decref(s);
    /* without an arch the KV cannot be priced */
    s = small_shape(565248, 3, true, "q8_0");
    assert_int_equal(sw_calib_budget(r, s, NULL, &b, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "--config"));
    json_decref(s);
    sw_calib_fit_free(r);
}

/* vLLM with a pinned pool: two ranks, each read; the non-KV per device is used - KV_BYTES. The
 * readings here are made up for the test (the seed has none for frank-primary). */
static void test_vllm_budget_two_devices(void **state)
{
    struct fx *f = *state;
    struct sw_err e = {0};
    json_t *shape =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:i,s:s,s:i,s:i,s:I,s:i}", "engine", "vllm",
                  "engine_profile", "tiered-expert-offload", "model", "name",
                  "Qwen3.8-Flash-Next-Uncensored-FP8", "quant", "fp8", "tp", 2, "kv_dtype", "fp8",
                  "slots", 3, "ctx", 262144, "kv_bytes", (json_int_t)6100000000, "mnbt", 2048);
    static const char *const dev[2] = {"r9700-0", "r9700-1"};
    static const uint64_t used[2] = {30000, 30100};
    for (int i = 0; i < 2; i++) {
        struct sw_ledger_usage u = {.endpoint = "frank-primary",
                                    .shape = shape,
                                    .device = dev[i],
                                    .used_mib = used[i],
                                    .total_mib = 32624,
                                    .source = "by hand",
                                    .taken_at = -1};
        assert_int_equal(sw_ledger_record_usage(&f->l, &u, NULL, &e), 0);
    }
    struct sw_calib_fit *r = fit(f, "frank-primary", NULL);
    assert_int_equal(r->n_nonkv, 2);
    /* 6.1e9 B = 5,817.41 MiB of pool per rank */
    double kv = 6100000000.0 / 1048576.0;
    for (int i = 0; i < 2; i++)
        assert_true(fabs(r->nonkv[i].mean - ((double)used[i] - kv)) < 1e-6);
    /* a smaller pool at the same length: free grows by the pool cut on each device */
    json_object_set_new(shape, "kv_bytes", json_integer(3150000000));
    struct sw_calib_budget b;
    assert_int_equal(sw_calib_budget(r, shape, NULL, &b, &e), 0);
    assert_int_equal(b.n_dev, 2);
    for (int i = 0; i < 2; i++) {
        assert_false(b.dev[i].measured);
        double want = 32624.0 - ((double)used[i] - kv) - 3150000000.0 / 1048576.0;
        assert_true(fabs(b.dev[i].free_mib - want) < 1e-6);
    }
    /* one reading per device: the warning says so */
    assert_non_null(strstr(b.warning, "one reading"));
    /* a utilization-sized pool is not a budget the readings can price */
    json_object_del(shape, "kv_bytes");
    assert_int_equal(sw_calib_budget(r, shape, NULL, &b, &e), SW_EUNSUPPORTED);
    json_decref(shape);
    sw_calib_fit_free(r);
}

/* The fork's expert arena: 6,248 slots at 262,144 and 6,496 at 200,704. */
static void test_arena(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-primary", NULL);
    const struct sw_calib_arena *a = &r->arena;
    assert_true(a->have);
    assert_int_equal(a->n, 2);
    assert_true(a->consistent);
    /* the MAXLEN slope: 9,880-9,963 B/token by hand; the log's 9,190 is outside */
    assert_true(a->reserve_lo > 9870 && a->reserve_lo < 9890);
    assert_true(a->reserve_hi > 9955 && a->reserve_hi < 9970);
    struct sw_calib_range s;
    assert_int_equal(sw_calib_arena_predict(a, 262144, &s, NULL), 0);
    assert_int_equal(s.lo, 6248);
    assert_int_equal(s.hi, 6248);
    assert_false(s.extrapolated);
    assert_int_equal(sw_calib_arena_predict(a, 200704, &s, NULL), 0);
    assert_int_equal(s.lo, 6496);
    assert_int_equal(s.hi, 6496);
    assert_int_equal(sw_calib_arena_predict(a, 241664, &s, NULL), 0);
    assert_true(s.extrapolated);
    assert_true(s.lo <= s.hi);
    /* the hand-fitted profile is in the set; the one as stated is not */
    struct sw_fork_profile p;
    char *text;
    size_t n;
    bool ok;
    assert_int_equal(sw_read_file(swt_src("tests/data/vllm/frank-expert-offload-calibrated.json"),
                                  1 << 20, &text, &n, NULL),
                     0);
    assert_int_equal(sw_profile_parse(text, n, "calibrated", &p, NULL), 0);
    sw_free(text);
    double c = (double)p.usable - (double)p.weights - (double)p.non_torch - (double)p.overhead +
               (double)p.adjust;
    assert_int_equal(sw_calib_arena_check(a, c, p.reserve_per_token, (double)p.slot, &ok, NULL), 0);
    assert_true(ok);
    assert_true(c >= a->cap_lo && c <= a->cap_hi);
    assert_true(p.reserve_per_token >= a->reserve_lo && p.reserve_per_token <= a->reserve_hi);
    assert_int_equal(sw_read_file(swt_src("tests/data/vllm/frank-expert-offload.json"), 1 << 20,
                                  &text, &n, NULL),
                     0);
    assert_int_equal(sw_profile_parse(text, n, "stated", &p, NULL), 0);
    sw_free(text);
    c = (double)p.usable - (double)p.weights - (double)p.non_torch - (double)p.overhead;
    assert_int_equal(sw_calib_arena_check(a, c, p.reserve_per_token, (double)p.slot, &ok, NULL), 0);
    assert_false(ok);
    assert_non_null(strstr(a->underdetermined, "only C ="));
    sw_calib_fit_free(r);
}

static void test_json(void **state)
{
    struct fx *f = *state;
    struct sw_calib_fit *r = fit(f, "frank-primary", PRIMARY_CFG);
    json_t *j = sw_calib_fit_json(r);
    assert_non_null(j);
    json_t *kv = json_object_get(j, "kv");
    assert_true(json_array_size(kv) == 2);
    json_t *k0 = json_array_get(kv, 0);
    assert_true(json_is_true(json_object_get(k0, "consistent")));
    assert_non_null(json_object_get(json_object_get(k0, "model"), "extra_attn_bytes_per_token"));
    assert_true(json_array_size(json_object_get(k0, "boots")) == 4);
    assert_non_null(json_object_get(j, "arena"));
    json_decref(j);
    sw_calib_fit_free(r);
}

/* sw_calib_run: calibrate's orchestration as one call (what `slipway calibrate` prints). */
static int64_t notes(const char *path)
{
    struct sw_ledger l = {0};
    struct sw_err e = {0};
    json_t *c = NULL;
    struct sw_ledger_open_opts oo = {.readonly = true};
    assert_int_equal(sw_ledger_open(&l, path, &oo, &e), 0);
    assert_int_equal(sw_ledger_counts(&l, &c, &e), 0);
    int64_t n = json_integer_value(json_object_get(c, "notes"));
    json_decref(c);
    sw_ledger_close(&l);
    return n;
}

static void test_run(void **state)
{
    struct fx *f = *state;
    char led[4096];
    snprintf(led, sizeof(led), "%s", swt_join(f->dir, "seed.sqlite"));
    const int64_t excl[] = {4}, plen[] = {200704}, nseqs[] = {3}, nlen[] = {262144};
    const uint64_t pkv[] = {3150000000u};
    struct sw_calib_request rq = {.endpoint = "frank-primary",
                                  .ledger_path = led,
                                  .exclude = excl,
                                  .n_exclude = 1,
                                  .predict_len = plen,
                                  .predict_kv = pkv,
                                  .n_predict = 1,
                                  .need_seqs = nseqs,
                                  .need_len = nlen,
                                  .n_need = 1};
    struct sw_calib_result res;
    struct sw_err e = {0};
    if (sw_calib_run(&rq, &res, &e))
        fail_msg("%s", e.msg);
    assert_false(res.nothing);
    assert_false(res.inconsistent);
    assert_string_equal(res.ledger_path, led);
    assert_int_equal(res.note_id, 0);
    /* the prediction across geometry (200,704 was left out): one per KV class, extrapolated */
    json_t *preds = json_object_get(res.doc, "predictions");
    assert_true(json_array_size(preds) >= 1);
    json_t *p0 = json_array_get(preds, 0);
    assert_int_equal(json_integer_value(json_object_get(p0, "max_model_len")), 200704);
    assert_true(json_is_true(json_object_get(p0, "extrapolated")));
    json_t *needs = json_object_get(res.doc, "needs");
    assert_true(json_array_size(needs) >= 1);
    assert_true(json_integer_value(json_object_get(json_array_get(needs, 0), "kv_bytes_hi")) >=
                json_integer_value(json_object_get(json_array_get(needs, 0), "kv_bytes_lo")));
    sw_calib_result_free(&res);

    /* record: one note more in the ledger, its id in the result */
    int64_t before = notes(led);
    struct sw_calib_request rec = {.endpoint = "frank-primary", .ledger_path = led, .record = true};
    if (sw_calib_run(&rec, &res, &e))
        fail_msg("%s", e.msg);
    assert_true(res.note_id > 0);
    assert_int_equal(notes(led), before + 1);
    sw_calib_result_free(&res);

    /* no such endpoint: SW_ENOENT naming it and the ledger; the result is still freeable */
    struct sw_calib_request none = {.endpoint = "frank-nowhere", .ledger_path = led};
    assert_int_equal(sw_calib_run(&none, &res, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "frank-nowhere"));
    assert_non_null(strstr(e.msg, led));
    sw_calib_result_free(&res);
    /* a fleet without the endpoint */
    struct sw_calib_request nofleet = {.endpoint = "frank-nowhere",
                                       .fleet_path = swt_src("examples/operator.yaml"),
                                       .ledger_path = led};
    assert_int_equal(sw_calib_run(&nofleet, &res, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "no endpoint 'frank-nowhere' in the fleet"));
    sw_calib_result_free(&res);
}

/* Fail each allocation of a fit in turn: an error, never a crash or a leak (ASan checks). */
static void test_alloc_failures(void **state)
{
    struct fx *f = *state;
    struct sw_calib_opts o = {.config_path = swt_src(SMALL_CFG)};
    struct sw_calib_fit *r = NULL;
    long before = sw_alloc_count();
    assert_int_equal(sw_calib_fit(&f->l, "frank-small", &o, &r, NULL), 0);
    long total = sw_alloc_count() - before;
    sw_calib_fit_free(r);
    assert_true(total > 10);
    int failed = 0;
    for (long n = 1; n <= total; n++) {
        struct sw_err e = {0};
        r = NULL;
        sw_alloc_fail_at(n);
        int rc = sw_calib_fit(&f->l, "frank-small", &o, &r, &e);
        sw_alloc_fail_at(0);
        if (rc) {
            assert_null(r);
            failed++;
        } else {
            /* a failed allocation inside a reading's pricing drops that reading with a note */
            sw_calib_fit_free(r);
        }
    }
    assert_true(failed > 0);
    /* the budget too */
    assert_int_equal(sw_calib_fit(&f->l, "frank-small", &o, &r, NULL), 0);
    json_t *s = small_shape(565248, 3, true, "q8_0");
    struct sw_calib_budget b;
    for (long n = 1; n < 400; n++) {
        sw_alloc_fail_at(n);
        int rc = sw_calib_budget(r, s, &o, &b, NULL);
        sw_alloc_fail_at(0);
        if (!rc)
            break;
    }
    json_decref(s);
    sw_calib_fit_free(r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fp8_all_four_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_terms_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_config_refuted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_three_extrapolate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_narrowing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contradiction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_nonkv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_arena, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vllm_budget_two_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
    };
    return cmocka_run_group_tests_name("calib", t, NULL, NULL);
}
