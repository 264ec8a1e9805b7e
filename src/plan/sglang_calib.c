/*
 * plan/sglang_calib: the SGLang calibration pipeline, written once for `slipway calibrate` and the
 * band gate (docs/calibrate.md "SGLang", docs/sglang-law.md): the endpoint's model (config.json or
 * its inline `arch`), the law's options of the declared shape (the shape the fleet's facts are of,
 * read back from the rendered argv: sw_plan_sglang_opts), the declared shape's pools by the law,
 * the observations (the ledger's SGLang boots when it has some, else the fleet's facts
 * free_at_boot and autofit_tokens: both at once would hold every held-out figure in again), and
 * the fit (calib sw_calib_sglang_fit). Also calibrate's "sglang" section, the fit and the declared
 * and unpinned shapes' predictions as JSON.
 *
 * It sits in plan, not calib: the options come from the engine adapter's argv reader (plan), which
 * calib, below engine and plan, cannot call.
 *
 * What it deliberately does not do: read the ledger (calib's sw_calib_fit gathers the boots and
 * hands them in), judge the prediction against a band (the gate), or print (cli).
 */
#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>

#include <math.h>
#include <string.h>

/* The declared shape's pools by the law. An unpinned shape is planned with a pin (the law needs a
 * pin or free-memory facts; the pin moves neither the cell nor the mamba pool, the printed pools
 * the observations need): its tokens are then not a pool and the declared observation has none. */
static int declared_pools(struct sw_plan_sglang_calib *out, struct sw_err *e)
{
    struct sw_sglang_opts q = out->declared;
    out->declared_pinned = q.max_total_tokens > 0;
    if (!out->declared_pinned)
        q.max_total_tokens = 1 << 20;
    return sw_sglang_plan(out->c, &q, &out->drep, e);
}

/* The observations: the ledger's SGLang boots when it has some, else the fleet's facts. */
static void gather(const struct sw_fleet_endpoint *ep, const struct sw_calib_fit *fit,
                   struct sw_plan_sglang_calib *out)
{
    struct sw_calib_sglang_obs d = {.tokens =
                                        out->declared_pinned ? out->drep.max_total_num_tokens : 0,
                                    .pinned = out->declared_pinned,
                                    .mamba_slots = out->drep.max_mamba_cache_size,
                                    .mem_fraction_static = out->declared.mem_fraction_static};
    out->from_ledger = fit && fit->sglang.n;
    if (!out->from_ledger)
        sw_calib_sglang_gather(ep, &d, NULL, NULL, out->obs, SW_CALIB_SG_MAX, &out->n_obs);
    for (int k = 0; out->from_ledger && k < fit->sglang.n && out->n_obs < SW_CALIB_SG_MAX; k++)
        out->obs[out->n_obs++] = fit->sglang.obs[k];
}

int sw_plan_sglang_calib(const struct sw_fleet_endpoint *ep,
                         const struct sw_plan_sglang_calib_opts *o,
                         struct sw_plan_sglang_calib *out, struct sw_err *e)
{
    int rc;
    memset(out, 0, sizeof(*out));
    out->c = sw_calloc(1, sizeof(*out->c));
    out->s = sw_calloc(1, sizeof(*out->s));
    out->obs = sw_calloc(SW_CALIB_SG_MAX, sizeof(*out->obs));
    if (!out->c || !out->s || !out->obs)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    /* the facts are of the declared shape; the asked one may differ (check --set) */
    rc = sw_endpoint_hf_config(ep, out->c, NULL, 0, e);
    if (!rc)
        rc = sw_plan_sglang_opts(ep, o ? o->declared : NULL, &out->declared, e);
    if (!rc)
        rc = declared_pools(out, e);
    if (rc)
        return rc;
    out->law_ok = true;
    gather(ep, o ? o->fit : NULL, out);
    struct sw_calib_opts co = {
        .ep = ep, .exclude = o ? o->exclude : NULL, .n_exclude = o ? o->n_exclude : 0};
    return sw_calib_sglang_fit(out->c, &out->declared, out->obs, out->n_obs, &co, out->s, e);
}

void sw_plan_sglang_calib_free(struct sw_plan_sglang_calib *c)
{
    sw_free(c->obs);
    sw_free(c->s);
    sw_free(c->c);
    memset(c, 0, sizeof(*c));
}

static json_t *pred_json(const char *what, const struct sw_calib_sglang_pred *p)
{
    json_t *j = json_pack("{s:s,s:b,s:I,s:I,s:b,s:I,s:f,s:f}", "shape", what, "autofit", p->autofit,
                          "tokens_lo", (json_int_t)p->tokens_lo, "tokens_hi",
                          (json_int_t)p->tokens_hi, "tokens_open", p->tokens_open, "mamba_slots",
                          (json_int_t)p->mamba_slots, "rest_lo", p->rest_lo, "rest_hi", p->rest_hi);
    if (j && p->have_free) {
        if (isfinite(p->free_lo))
            sw_json_set_real(j, "free_lo_bytes", p->free_lo);
        sw_json_set_real(j, "free_hi_bytes", p->free_hi);
        sw_json_set_bool(j, "would_oom", p->would_oom);
    }
    if (j && p->warning[0])
        sw_json_set_str(j, "warning", p->warning);
    return j;
}

/* The fit: its cell and state, every boot it read, the rest and the free constant (and why it is
 * inconsistent); "predictions" empty, for the caller. */
static json_t *fit_json(const struct sw_calib_sglang *s)
{
    json_t *j = json_pack("{s:I,s:I,s:b,s:b,s:[],s:[]}", "cell_bytes", (json_int_t)s->cell_bytes,
                          "mamba_cache_per_req", (json_int_t)s->mamba_per_req, "consistent",
                          s->consistent, "rest_fitted", s->have_rest, "boots", "predictions");
    json_t *bs = json_object_get(j, "boots");
    for (int k = 0; j && k < s->n; k++) {
        const struct sw_calib_sglang_obs *b = &s->obs[k];
        json_t *x = json_pack("{s:I,s:s,s:I,s:b,s:I}", "boot", (json_int_t)b->boot_id, "source",
                              b->ext_id, "tokens", (json_int_t)b->tokens, "pinned", b->pinned,
                              "mamba_slots", (json_int_t)b->mamba_slots);
        if (x && b->has_free)
            sw_json_set_real(x, "free_bytes", b->free_bytes);
        json_array_append_new(bs, x);
    }
    if (j && s->have_rest) {
        sw_json_set_int(j, "rest_lo", (json_int_t)s->rest_lo);
        sw_json_set_int(j, "rest_hi", (json_int_t)s->rest_hi);
        sw_json_set_real(j, "rest_mem_fraction_static", s->rest_mfs);
    } else if (j && s->rest_floor) {
        sw_json_set_int(j, "rest_floor", (json_int_t)s->rest_floor);
    }
    if (j && s->have_free) {
        sw_json_set_real(j, "free_constant_lo", s->f0_lo);
        sw_json_set_real(j, "free_constant_hi", s->f0_hi);
    }
    if (j && !s->consistent)
        sw_json_set_str(j, "why", s->why);
    return j;
}

/* The declared shape (when it pins a pool) and the unpinned autofit, predicted. */
static int predictions(const struct sw_plan_sglang_calib *sc, json_t *ps)
{
    for (int k = 0; k < 2 && sc->s->consistent; k++) {
        struct sw_sglang_opts q = sc->declared;
        struct sw_calib_sglang_pred pr;
        struct sw_err pe;
        const char *what = k ? "autofit" : "declared";
        if (k == 1)
            q.max_total_tokens = 0;
        else if (sc->declared.max_total_tokens <= 0)
            continue;
        sw_err_clear(&pe);
        json_t *x = sw_calib_sglang_predict(sc->s, sc->c, &q, &pr, &pe) == 0
                        ? pred_json(what, &pr)
                        : json_pack("{s:s,s:s}", "shape", what, "why", pe.msg);
        if (!x || json_array_append_new(ps, x))
            return SW_ENOMEM;
    }
    return 0;
}

int sw_plan_sglang_calib_doc(const char *fleet_path, const char *endpoint,
                             const struct sw_calib_fit *fit, const int64_t *exclude, int n_exclude,
                             json_t *doc, bool *fitted, bool *bad, struct sw_err *e)
{
    struct sw_fleet *fleet = NULL;
    struct sw_plan_sglang_calib sc;
    json_t *j = NULL;
    int rc;
    memset(&sc, 0, sizeof(sc));
    *fitted = false;
    *bad = false;
    if (!fleet_path)
        return sw_json_set_new(doc, "sglang",
                               json_pack("{s:s}", "why",
                                         "no fleet named: the law's options and the model come "
                                         "from the endpoint's fleet entry"));
    struct sw_plan_sglang_calib_opts o = {.fit = fit, .exclude = exclude, .n_exclude = n_exclude};
    const struct sw_fleet_endpoint *ep = NULL;
    rc = sw_fleet_load(fleet_path, NULL, &fleet, e);
    if (!rc)
        ep = sw_fleet_endpoint(fleet, endpoint);
    if (!rc && !ep)
        rc = sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", fleet_path, endpoint);
    if (!rc)
        rc = sw_plan_sglang_calib(ep, &o, &sc, e);
    if (rc)
        goto out;
    j = fit_json(sc.s);
    if (!j || predictions(&sc, json_object_get(j, "predictions"))) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    *fitted = sc.s->consistent && (sc.s->have_rest || sc.s->have_free);
    *bad = !sc.s->consistent;
    rc = sw_json_set_new(doc, "sglang", j);
    j = NULL;
out:
    json_decref(j);
    sw_plan_sglang_calib_free(&sc);
    sw_fleet_free(fleet);
    return rc;
}
