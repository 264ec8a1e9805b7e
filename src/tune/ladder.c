/*
 * ladder: the search (include/slipway/ladder.h). One knob, a grid of the engine's granularity,
 * two proven bounds (largest value that passed, smallest that failed by size), a linear need law
 * recalibrated by every boot, and the ledger as the run's memory: every rung is written as soon
 * as it is known, and a run of the same label starts from what its rungs proved.
 *
 * The runners (how one rung boots) are in ladder_run.c; this file never boots anything itself.
 */
#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ladder.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/vllm.h>

#include "ladder_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const knob_names[] = {"max_model_len", "ctx_size", "slots", "kv_cache_bytes"};
/* the shape field sw_gate_set takes for each knob */
static const char *const knob_keys[] = {"max_model_len", "ctx_size", "seqs", "kv_cache_bytes"};

const char *sw_ladder_knob_name(enum sw_ladder_knob k)
{
    return (unsigned)k < 4 ? knob_names[k] : "?";
}

int sw_ladder_knob_parse(const char *s, enum sw_ladder_knob *out)
{
    static const struct {
        const char *name;
        enum sw_ladder_knob k;
    } t[] = {{"max_model_len", SW_LADDER_MAX_MODEL_LEN},
             {"maxlen", SW_LADDER_MAX_MODEL_LEN},
             {"ctx_size", SW_LADDER_CTX_SIZE},
             {"ctx", SW_LADDER_CTX_SIZE},
             {"slots", SW_LADDER_SLOTS},
             {"seqs", SW_LADDER_SLOTS},
             {"kv_cache_bytes", SW_LADDER_KV_BYTES},
             {"kv_bytes", SW_LADDER_KV_BYTES}};
    for (size_t i = 0; s && i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(s, t[i].name)) {
            *out = t[i].k;
            return 0;
        }
    return SW_EINVAL;
}

static const char *const class_names[] = {"pass",        "capture_oom", "boot_oom", "kv_refused",
                                          "runtime_oom", "compile",     "refused",  "other"};

const char *sw_ladder_class_name(enum sw_ladder_class c)
{
    return (unsigned)c <= SW_LADDER_OTHER ? class_names[c] : "?";
}

int sw_ladder_class_parse(const char *s, enum sw_ladder_class *out)
{
    for (unsigned i = 0; s && i <= SW_LADDER_OTHER; i++)
        if (!strcmp(s, class_names[i])) {
            *out = (enum sw_ladder_class)i;
            return 0;
        }
    return SW_EINVAL;
}

bool sw_ladder_class_is_bad(enum sw_ladder_class c)
{
    return c == SW_LADDER_CAPTURE_OOM || c == SW_LADDER_BOOT_OOM || c == SW_LADDER_KV_REFUSED ||
           c == SW_LADDER_RUNTIME_OOM;
}

static const char *const runner_names[] = {"auto", "sim", "local", "rollout"};

const char *sw_ladder_runner_name(enum sw_ladder_runner_kind k)
{
    return (unsigned)k < 4 ? runner_names[k] : "?";
}

int sw_ladder_runner_parse(const char *s, enum sw_ladder_runner_kind *out)
{
    for (unsigned i = 0; s && i < 4; i++)
        if (!strcmp(s, runner_names[i])) {
            *out = (enum sw_ladder_runner_kind)i;
            return 0;
        }
    return SW_EINVAL;
}

enum sw_ladder_class sw_ladder_classify(const json_t *failure)
{
    const char *cls = json_string_value(json_object_get(failure, "class"));
    const char *phase = json_string_value(json_object_get(failure, "phase"));
    if (!cls)
        return SW_LADDER_OTHER;
    if (!strcmp(cls, "oom")) {
        if (phase && !strcmp(phase, "graph_capture"))
            return SW_LADDER_CAPTURE_OOM;
        if (phase && !strcmp(phase, "runtime"))
            return SW_LADDER_RUNTIME_OOM;
        return SW_LADDER_BOOT_OOM;
    }
    if (!strcmp(cls, "kv_too_small"))
        return SW_LADDER_KV_REFUSED;
    if (!strcmp(cls, "compile_constraint"))
        return SW_LADDER_COMPILE;
    return SW_LADDER_OTHER;
}

/* ---------------------------------------------------------------------------------------------
 * The knob on the endpoint.
 */
static struct sw_fleet_u64 *knob_field(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k)
{
    switch (k) {
    case SW_LADDER_MAX_MODEL_LEN:
        return &ep->shape.max_model_len;
    case SW_LADDER_CTX_SIZE:
        return &ep->shape.ctx_size;
    case SW_LADDER_SLOTS:
        return &ep->shape.seqs;
    case SW_LADDER_KV_BYTES:
        return &ep->shape.kv_cache_bytes;
    }
    return NULL;
}

int sw__ladder_set(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k, int64_t v, struct sw_err *e)
{
    char kv[96];
    snprintf(kv, sizeof(kv), "%s=%" PRId64, knob_keys[k], v);
    return sw_gate_set(ep, kv, e);
}

/* ---------------------------------------------------------------------------------------------
 * The law: need(v) = a + b x v bytes against a capacity. b from the engine's memory law at the
 * grid's two ends; a's interval from the law's own constant, then from every boot.
 */
static int law_bytes(const struct sw_fleet *f, struct sw_fleet_endpoint *ep, enum sw_ladder_knob k,
                     int64_t v, double *bytes, struct sw_err *e)
{
    struct sw_plan pl;
    int rc = sw__ladder_set(ep, k, v, e);
    if (rc)
        return rc;
    rc = sw_plan_endpoint(f, ep, NULL, &pl, e);
    if (!rc && pl.llamacpp) {
        double t = 0;
        for (int d = 0; d < pl.llamacpp->n_dev; d++)
            t += (double)pl.llamacpp->dev[d].total;
        *bytes = t;
    } else if (!rc) {
        rc = sw_err_set(e, SW_EUNSUPPORTED, "%s: no host-memory law for %s's %s here", ep->name,
                        sw_fleet_engine_name(ep->engine), knob_names[k]);
    }
    sw_plan_free(&pl);
    return rc;
}

struct lad {
    const struct sw_fleet *f;
    struct sw_fleet_endpoint *ep;
    const struct sw_ladder_opts *o;
    struct sw_ladder_result *r;
    int64_t n_grid;
    unsigned char *skip; /* [n_grid] */
    int64_t good, bad;   /* grid indices; -1 / n_grid when none */
    int64_t next_hint;   /* an engine-given next rung (index), -1 none */
    bool have_meas;
    double meas_lo, meas_hi; /* a as measured by passing boots */
    /* predict, then confirm: while only one bound is proven, the next rung walks from it
     * toward the other side (1, 1, 2, 4, ... grid steps) instead of halving the whole range */
    bool walk;
    int walk_n;
};

static int64_t grid_val(const struct lad *L, int64_t i)
{
    return L->r->min + i * L->r->step;
}

/* The index of the largest grid value <= v (-1 below the grid). */
static int64_t grid_floor(const struct lad *L, double v)
{
    if (v < (double)L->r->min)
        return -1;
    double i = floor((v - (double)L->r->min) / (double)L->r->step);
    return i >= (double)L->n_grid ? L->n_grid - 1 : (int64_t)i;
}

static int64_t grid_index(const struct lad *L, int64_t v)
{
    if (v < L->r->min || v > L->r->max || (v - L->r->min) % L->r->step)
        return -1;
    return (v - L->r->min) / L->r->step;
}

/*
 * The prior of an engine-sized pool no boot of its class has shown yet (the night ladder's
 * class, before the night ladder): the fork sizes such a pool for the contract, seqs requests
 * of max_model_len (the seed's fp8 6 x 241,664 boot asked 10.70 GiB, the law's pool for six
 * such requests; the night ladder's pools printed 3.03x for 3 seqs), so the pool is the law's
 * contract (sw_plan_endpoint's KV of one request x seqs). It fits when the contract is within
 * what the activation fit (the KV allocation failures of the pinned-pool boots) leaves free when
 * the pool is allocated, and fails past it. *have: false when there is no such evidence (no KV
 * allocation failure fitted, or no law for the value).
 */
static enum sw_calib_hr_verdict prior_auto(struct lad *L, const struct sw_calib_fit *fit,
                                           const struct sw_calib_hr_pred *pr, double *contract,
                                           bool *have)
{
    struct sw_plan pl;
    struct sw_err e;
    *have = false;
    *contract = 0;
    if (!pr->auto_pool || fit->headroom.n_act < 1 || !fit->headroom.act.n_vert)
        return SW_CALIB_HR_UNKNOWN;
    int rc = sw_plan_endpoint(L->f, L->ep, NULL, &pl, &e);
    if (!rc && pl.vllm && pl.vllm->kv_needed_bytes > 0)
        *contract = (double)pl.vllm->kv_needed_bytes * (double)L->ep->shape.seqs.v;
    sw_plan_free(&pl);
    if (*contract <= 0 || pr->kv_free_hi <= 0)
        return SW_CALIB_HR_UNKNOWN;
    *have = true;
    if (*contract <= pr->kv_free_lo)
        return SW_CALIB_HR_FITS;
    if (*contract > pr->kv_free_hi)
        return SW_CALIB_HR_KV_FAILS;
    return SW_CALIB_HR_CAPTURE_RISK;
}

/*
 * The vLLM fork's prediction: calib's headroom model fitted on the ledger's boots (every rung's
 * boot included, so this is also the recalibration) gives each grid value a verdict: fits,
 * capture (or KV, or runtime) fails, or a risk band between. The predicted answer lies from the
 * largest value that fits to the first that fails; its point is where the band's middle (the
 * free memory at capture against the need's middle) still fits. An engine-sized class no
 * boot showed yet is judged by prior_auto.
 */
static void predict_headroom(struct lad *L)
{
    struct sw_ladder_result *r = L->r;
    struct sw_calib_fit *fit = NULL;
    struct sw_calib_opts co;
    struct sw_err e;
    memset(&co, 0, sizeof(co));
    co.ep = L->ep;
    r->pred_lo = r->pred_hi = r->pred_point = -1;
    r->headroom = false;
    if (!L->o->ledger || sw_calib_fit(L->o->ledger, L->ep->name, &co, &fit, &e) ||
        !fit->headroom.have || !fit->headroom.consistent) {
        snprintf(r->law_source, sizeof(r->law_source), "no headroom model fitted%s%.200s",
                 fit ? ": " : "", fit ? fit->headroom.why : "");
        sw_calib_fit_free(fit);
        return;
    }
    struct sw_fleet_u64 saved = *knob_field(L->ep, L->o->knob);
    int64_t last_fit = -1, first_fail = -1, point = -1;
    int n_known = 0, n_prior = 0;
    for (int64_t i = 0; i < L->n_grid; i++) {
        int64_t v = grid_val(L, i);
        json_t *raw = NULL, *canon = NULL;
        struct sw_headroom_shape hs;
        struct sw_calib_hr_pred pr;
        const char *kv = "auto";
        if (sw__ladder_set(L->ep, L->o->knob, v, &e))
            break;
        raw = sw_plan_shape(L->ep);
        bool ok = raw && !sw_ledger_shape_canon(raw, &canon, NULL, NULL, &e) &&
                  !sw_calib_headroom_shape(canon, &hs, &kv) &&
                  !sw_calib_headroom_predict(fit, &hs, kv, &pr, &e);
        json_decref(canon);
        json_decref(raw);
        if (!ok)
            continue;
        enum sw_calib_hr_verdict vd = pr.verdict;
        double contract = 0;
        bool prior = false;
        if (vd == SW_CALIB_HR_UNKNOWN)
            vd = prior_auto(L, fit, &pr, &contract, &prior);
        if (vd == SW_CALIB_HR_UNKNOWN)
            continue;
        n_known++;
        n_prior += prior;
        bool fails = vd == SW_CALIB_HR_KV_FAILS || vd == SW_CALIB_HR_CAPTURE_FAILS ||
                     vd == SW_CALIB_HR_RUNTIME_FAILS;
        if (vd == SW_CALIB_HR_FITS)
            last_fit = i;
        if (fails && first_fail < 0)
            first_fail = i;
        /* the point: the middle of the band still fits (the prior: the contract against the
         * middle of what is free when the pool is allocated) */
        bool mid_fits;
        if (prior) {
            mid_fits = contract <= (pr.kv_free_lo + pr.kv_free_hi) / 2;
        } else {
            double need = pr.need_hi_set ? (pr.need_lo + pr.need_hi) / 2 : pr.need_lo;
            mid_fits = (pr.free_lo + pr.free_hi) / 2 >= need;
        }
        if (!fails && first_fail < 0 && (vd == SW_CALIB_HR_FITS || mid_fits))
            point = i;
    }
    *knob_field(L->ep, L->o->knob) = saved;
    r->headroom = n_known > 0;
    if (r->headroom) {
        r->pred_lo = last_fit >= 0 ? grid_val(L, last_fit) : r->min;
        r->pred_hi = first_fail >= 0 ? grid_val(L, first_fail) : -1;
        r->pred_point = point >= 0 ? grid_val(L, point) : r->pred_lo;
        if (n_prior)
            snprintf(r->law_source, sizeof(r->law_source),
                     "calib's headroom model on %d boot(s) of %s: %d of %lld grid values judged, "
                     "%d by the prior of an engine-sized pool no boot of its class showed (the "
                     "law's contract against the free the KV allocation failures leave)",
                     fit->n_boots, L->ep->name, n_known, (long long)L->n_grid, n_prior);
        else
            snprintf(r->law_source, sizeof(r->law_source),
                     "calib's headroom model on %d boot(s) of %s: %d of %lld grid values judged",
                     fit->n_boots, L->ep->name, n_known, (long long)L->n_grid);
    } else {
        snprintf(r->law_source, sizeof(r->law_source),
                 "the headroom model (%d boots) knows no shape like these yet", fit->n_boots);
    }
    sw_calib_fit_free(fit);
}

static void predict(struct lad *L)
{
    struct sw_ladder_result *r = L->r;
    if (L->ep->engine == SW_FLEET_VLLM && L->ep->profile && L->o->knob == SW_LADDER_MAX_MODEL_LEN) {
        predict_headroom(L);
        return;
    }
    if (!r->law || r->law_b <= 0) {
        r->pred_lo = r->pred_hi = r->pred_point = -1;
        return;
    }
    double c = (double)r->capacity;
    double lo = (c - r->law_a_hi) / r->law_b, hi = (c - r->law_a_lo) / r->law_b;
    double mid = (c - (r->law_a_lo + r->law_a_hi) / 2) / r->law_b;
    int64_t ilo = grid_floor(L, lo), ihi = grid_floor(L, hi), imid = grid_floor(L, mid);
    r->pred_lo = ilo < 0 ? -1 : grid_val(L, ilo);
    /* the first value predicted to fail: one step past the last that may pass */
    r->pred_hi = ihi + 1 < L->n_grid ? grid_val(L, ihi + 1) : -1;
    r->pred_point = imid < 0 ? -1 : grid_val(L, imid);
}

/* What a boot taught the law. */
static void recalibrate(struct lad *L, int64_t v, enum sw_ladder_class cls, uint64_t peak,
                        uint64_t tried, uint64_t freeb)
{
    struct sw_ladder_result *r = L->r;
    if (!r->law)
        return;
    double c = (double)r->capacity, slack = c * 0.01;
    if (cls == SW_LADDER_PASS && peak) {
        double a = (double)peak - r->law_b * (double)v;
        if (!L->have_meas) {
            L->meas_lo = L->meas_hi = a;
            L->have_meas = true;
        } else {
            L->meas_lo = fmin(L->meas_lo, a);
            L->meas_hi = fmax(L->meas_hi, a);
        }
        r->law_a_lo = L->meas_lo - slack;
        r->law_a_hi = L->meas_hi + slack;
    } else if (sw_ladder_class_is_bad(cls)) {
        /* it needed more than the capacity at v: a > c - b v, and by the failed allocation's
         * shortfall when the engine printed one */
        double need = c - r->law_b * (double)v;
        if (tried > freeb)
            need += (double)(tried - freeb);
        if (need > r->law_a_lo)
            r->law_a_lo = need;
        if (r->law_a_hi < r->law_a_lo)
            r->law_a_hi = r->law_a_lo + slack;
    }
}

/* Apply one rung's verdict to the bounds. */
static void learn(struct lad *L, int64_t v, enum sw_ladder_class cls, int64_t engine_max)
{
    int64_t i = grid_index(L, v);
    if (i < 0) {
        /* a value off the grid (a resumed run with another step): bounds by comparison */
        i = grid_floor(L, (double)v);
        if (cls == SW_LADDER_PASS && i > L->good)
            L->good = i;
        if (sw_ladder_class_is_bad(cls) && i + 1 < L->bad)
            L->bad = i + 1;
        return;
    }
    if (cls == SW_LADDER_PASS) {
        if (i > L->good)
            L->good = i;
    } else if (sw_ladder_class_is_bad(cls)) {
        if (i < L->bad)
            L->bad = i;
    } else {
        L->skip[i] = 1;
    }
    L->next_hint = -1;
    if (cls == SW_LADDER_KV_REFUSED && engine_max > 0) {
        int64_t h = grid_floor(L, (double)engine_max);
        if (h > L->good && h < L->bad)
            L->next_hint = h;
    }
}

/* The next rung: the engine's own figure when it gave one, the law's point first, then a walk
 * from the one proven bound (when the run began from a prediction), then the median of what is
 * left inside the prediction (or of all that is left). -1: converged. */
static int64_t choose(struct lad *L, bool first)
{
    if (L->next_hint > L->good && L->next_hint < L->bad && !L->skip[L->next_hint])
        return L->next_hint;
    int64_t n_left = 0;
    for (int64_t i = L->good + 1; i < L->bad; i++)
        n_left += !L->skip[i];
    if (!n_left)
        return -1;
    int64_t plo = -1, phi = L->n_grid;
    const struct sw_ladder_result *r = L->r;
    bool pred = r->law || r->headroom;
    if (pred && r->pred_lo >= 0)
        plo = grid_index(L, r->pred_lo);
    if (pred && r->pred_hi >= 0)
        phi = grid_index(L, r->pred_hi);
    if (first && pred && r->pred_point >= 0) {
        int64_t p = grid_index(L, r->pred_point);
        if (p > L->good && p < L->bad && !L->skip[p])
            return p;
    }
    bool has_good = L->good >= 0, has_bad = L->bad < L->n_grid;
    if (L->walk && has_good != has_bad) {
        /* the prediction's edge is near: confirm it one step at a time, then gallop */
        int64_t stride =
            L->walk_n < 2 ? 1 : (int64_t)1 << (L->walk_n - 1 < 20 ? L->walk_n - 1 : 20);
        L->walk_n++;
        if (has_good) {
            int64_t i = L->good + stride < L->bad ? L->good + stride : L->bad - 1;
            for (; i > L->good; i--)
                if (!L->skip[i])
                    return i;
        } else {
            int64_t i = L->bad - stride > L->good ? L->bad - stride : L->good + 1;
            for (; i < L->bad; i++)
                if (!L->skip[i])
                    return i;
        }
    }
    int64_t lo = L->good + 1 > plo ? L->good + 1 : plo;
    int64_t hi = L->bad - 1 < phi ? L->bad - 1 : phi;
    int64_t n_in = 0;
    for (int64_t i = lo; i <= hi; i++)
        n_in += i >= 0 && i < L->n_grid && !L->skip[i];
    if (!n_in) {
        lo = L->good + 1;
        hi = L->bad - 1;
        n_in = n_left;
    }
    int64_t want = (n_in - 1) / 2, k = 0;
    for (int64_t i = lo; i <= hi; i++) {
        if (i < 0 || i >= L->n_grid || L->skip[i])
            continue;
        if (k++ == want)
            return i;
    }
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * check: the gates that predict a failure of this very value (known_bad: a shape or rule the
 * ledger or the fleet says failed; pool: a pinned pool cannot hold the contract). The band
 * gate's free-memory target is not the ladder's question, and an engine-sized pool's estimate
 * is a prediction the boot settles, not a refusal.
 */
static int refused_by_check(const struct lad *L, char *why, size_t n, bool *bad, struct sw_err *e)
{
    json_t *doc = NULL;
    struct sw_gate_opts go;
    memset(&go, 0, sizeof(go));
    go.ledger = L->o->ledger;
    *bad = false;
    why[0] = 0;
    struct sw_err ge;
    sw_err_clear(&ge);
    int rc = sw_gate_endpoint(L->f, L->ep, &go, &doc, &ge);
    if (rc) {
        /* a shape the gates cannot read is for the boot to judge, said in the rung */
        snprintf(why, n, "check could not run: %.400s", ge.msg);
        return 0;
    }
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(doc, "gates"), i, g)
    {
        const char *name = json_string_value(json_object_get(g, "gate"));
        const char *verdict = json_string_value(json_object_get(g, "verdict"));
        const char *line = json_string_value(json_object_get(g, "line"));
        if (!name || !verdict || strcmp(verdict, "fail"))
            continue;
        /* the pool gate proves a refusal only for a pinned pool (the engine's own KV check
         * on a declared number); an engine-sized pool is the law's estimate of what the fork
         * leaves, which the boot is there to settle */
        bool pinned = L->ep->shape.kv_cache_bytes.set || L->ep->shape.max_total_tokens.set;
        if (strcmp(name, "known_bad") && (strcmp(name, "pool") || !pinned))
            continue;
        snprintf(why, n, "check: %s: %s", name, line ? line : "fail");
        /* a compile constraint is one value's; a size failure bounds every larger value */
        char *dump = sw_json_dumps(g, JSON_COMPACT);
        *bad = !(dump && (strstr(dump, "compile") || strstr(dump, "constraint")));
        sw_free(dump);
        break;
    }
    json_decref(doc);
    (void)e;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Recording and resuming.
 */
static json_t *rung_evidence(const struct sw_ladder_rung *g, const struct sw_ladder_outcome *oc,
                             const struct lad *L)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    sw_json_set_bool(o, "booted", g->booted);
    sw_json_set_int(o, "good_before", g->good_before);
    sw_json_set_int(o, "bad_before", g->bad_before);
    json_t *p = json_object();
    if (p) {
        sw_json_set_int(p, "lo", g->pred_lo);
        sw_json_set_int(p, "hi", g->pred_hi);
        sw_json_set_int(p, "point", g->pred_point);
        sw_json_set_new(o, "prediction", p);
    }
    if (g->peak_bytes)
        sw_json_set_int(o, "peak_bytes", (int64_t)g->peak_bytes);
    if (oc && oc->tried_bytes)
        sw_json_set_int(o, "tried_bytes", (int64_t)oc->tried_bytes);
    if (oc && oc->free_bytes)
        sw_json_set_int(o, "free_bytes", (int64_t)oc->free_bytes);
    if (oc && oc->engine_max)
        sw_json_set_int(o, "engine_max", oc->engine_max);
    if (L->r->law) {
        sw_json_set_real(o, "law_a_lo", L->r->law_a_lo);
        sw_json_set_real(o, "law_a_hi", L->r->law_a_hi);
    }
    sw_json_set_int(o, "ms", (int64_t)g->ms);
    if (oc && oc->evidence)
        json_object_set(o, "run", oc->evidence);
    return o;
}

static int record(struct lad *L, struct sw_ladder_rung *g, const struct sw_ladder_outcome *oc,
                  struct sw_err *e)
{
    if (!L->o->ledger || L->o->dry_run)
        return 0;
    json_t *shape = sw_plan_shape(L->ep);
    json_t *ev = rung_evidence(g, oc, L);
    int rc = 0;
    if (!shape || !ev) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory recording a rung");
        goto out;
    }
    struct sw_ledger_rung lr;
    memset(&lr, 0, sizeof(lr));
    lr.endpoint = L->ep->name;
    lr.ladder = L->r->label;
    lr.rung = g->n;
    lr.shape = shape;
    lr.boot_id = g->boot_id;
    lr.outcome = g->cls == SW_LADDER_PASS      ? "pass"
                 : g->cls == SW_LADDER_REFUSED ? "refused"
                                               : "fail";
    lr.note = g->detail;
    lr.source_line = "slipway ladder";
    lr.knob = L->r->knob;
    lr.has_value = true;
    lr.value = g->value;
    lr.klass = sw_ladder_class_name(g->cls);
    lr.evidence = ev;
    rc = sw_ledger_record_rung(L->o->ledger, &lr, &g->rung_id, e);
    if (rc == SW_EINVAL && lr.boot_id) {
        /* the runner's boot was recorded with a shape the ledger keys differently: keep the
         * rung, say which boot in its evidence */
        sw_json_set_int(ev, "boot", lr.boot_id);
        lr.boot_id = 0;
        sw_err_clear(e);
        rc = sw_ledger_record_rung(L->o->ledger, &lr, &g->rung_id, e);
    }
out:
    json_decref(shape);
    json_decref(ev);
    return rc;
}

static int resume(struct lad *L, struct sw_err *e)
{
    if (!L->o->ledger)
        return 0;
    json_t *rows = NULL;
    int rc = sw_ledger_rungs(L->o->ledger, L->ep->name, L->r->label, &rows, e);
    if (rc)
        return rc;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (L->r->n >= SW_LADDER_MAX_RUNGS)
            break;
        const char *knob = json_string_value(json_object_get(row, "knob"));
        const char *cls = json_string_value(json_object_get(row, "class"));
        json_t *val = json_object_get(row, "value");
        json_t *ev = json_object_get(row, "evidence");
        struct sw_ladder_rung *g = &L->r->rungs[L->r->n];
        memset(g, 0, sizeof(*g));
        g->n = (int)json_integer_value(json_object_get(row, "rung"));
        g->rung_id = json_integer_value(json_object_get(row, "id"));
        g->boot_id = json_integer_value(json_object_get(row, "boot"));
        g->resumed = true;
        if (!knob || strcmp(knob, L->r->knob) || !json_is_integer(val) || !cls ||
            sw_ladder_class_parse(cls, &g->cls)) {
            json_decref(rows);
            return sw_err_set(e, SW_EMISMATCH,
                              "ladder '%s' of %s: rung %d was not a %s rung of this code "
                              "(knob %s); use another --label",
                              L->r->label, L->ep->name, g->n, L->r->knob, knob ? knob : "none");
        }
        g->value = json_integer_value(val);
        g->booted = json_is_true(json_object_get(ev, "booted")) || g->boot_id;
        g->peak_bytes = (uint64_t)json_integer_value(json_object_get(ev, "peak_bytes"));
        g->good_before = L->good >= 0 ? grid_val(L, L->good) : -1;
        g->bad_before = L->bad < L->n_grid ? grid_val(L, L->bad) : -1;
        g->pred_lo = g->pred_hi = g->pred_point = -1;
        const char *note = json_string_value(json_object_get(row, "note"));
        snprintf(g->detail, sizeof(g->detail), "%s", note ? note : "");
        recalibrate(L, g->value, g->cls, g->peak_bytes,
                    (uint64_t)json_integer_value(json_object_get(ev, "tried_bytes")),
                    (uint64_t)json_integer_value(json_object_get(ev, "free_bytes")));
        learn(L, g->value, g->cls, json_integer_value(json_object_get(ev, "engine_max")));
        if (g->booted)
            L->r->boots_total++;
        L->r->n++;
    }
    json_decref(rows);
    return 0;
}

static void progress(const struct lad *L, const struct sw_ladder_rung *g)
{
    FILE *p = L->o->progress;
    if (!p)
        return;
    char good[32] = "-", bad[32] = "-";
    if (L->good >= 0)
        snprintf(good, sizeof(good), "%" PRId64, grid_val(L, L->good));
    if (L->bad < L->n_grid)
        snprintf(bad, sizeof(bad), "%" PRId64, grid_val(L, L->bad));
    fprintf(p, "ladder: rung %d %s=%" PRId64 " %s%s (%.1f s) -> good %s, bad %s: %s\n", g->n,
            L->r->knob, g->value, sw_ladder_class_name(g->cls), g->booted ? "" : " (no boot)",
            g->ms / 1000.0, good, bad, g->detail);
    fflush(p);
}

/* ---------------------------------------------------------------------------------------------
 * The run.
 */
static int setup_grid(struct lad *L, struct sw_err *e)
{
    struct sw_ladder_result *r = L->r;
    const struct sw_ladder_opts *o = L->o;
    const struct sw_fleet_knob *fk = sw_fleet_endpoint_knob(L->ep, knob_names[o->knob]);
    if (!fk && o->knob == SW_LADDER_SLOTS)
        fk = sw_fleet_endpoint_knob(L->ep, "seqs");
    int64_t min = o->min, max = o->max, step = o->step;
    if (fk && fk->is_range) {
        if (!min && fk->min.set)
            min = (int64_t)fk->min.u;
        if (!max && fk->max.set)
            max = (int64_t)fk->max.u;
        if (!step && fk->step.set)
            step = (int64_t)fk->step.u;
    }
    if (!step) {
        /* the engine's granularity: llama.cpp pads its context to 256 cells; vLLM's
         * max_model_len is any integer but the operator's ladder moved in 4,096-token steps
         * (seed-fleet.md), a block multiple of every attention block size */
        static const int64_t def[] = {4096, 256, 1, 256ll << 20};
        step = def[o->knob];
    }
    if (min <= 0 || max <= 0)
        return sw_err_set(e, SW_EINVAL,
                          "%s: no range for %s: declare knobs.%s {min, max} in the fleet or give "
                          "--min and --max",
                          L->ep->name, knob_names[o->knob], knob_names[o->knob]);
    if (min > max || step <= 0)
        return sw_err_set(e, SW_EINVAL,
                          "%s: %s range %" PRId64 "..%" PRId64 " step %" PRId64 " is empty",
                          L->ep->name, knob_names[o->knob], min, max, step);
    if ((max - min) / step >= (1 << 20))
        return sw_err_set(e, SW_EINVAL,
                          "%s: %s grid of more than 2^20 values: give a coarser "
                          "--step",
                          L->ep->name, knob_names[o->knob]);
    r->min = min;
    r->max = max;
    r->step = step;
    L->n_grid = (max - min) / step + 1;
    r->max = min + (L->n_grid - 1) * step;
    L->skip = sw_malloc((size_t)L->n_grid);
    if (!L->skip)
        return sw_err_set(e, SW_ENOMEM, "out of memory (ladder grid)");
    memset(L->skip, 0, (size_t)L->n_grid);
    L->good = -1;
    L->bad = L->n_grid;
    L->next_hint = -1;
    return 0;
}

static void setup_law(struct lad *L)
{
    struct sw_ladder_result *r = L->r;
    const struct sw_ladder_opts *o = L->o;
    r->capacity = o->capacity ? o->capacity : o->memory_max;
    if (!r->capacity) {
        snprintf(r->law_source, sizeof(r->law_source),
                 "no capacity to predict against (no memory limit given)");
        return;
    }
    double b0 = 0, b1 = 0;
    struct sw_err le;
    sw_err_clear(&le);
    if (law_bytes(L->f, L->ep, o->knob, r->min, &b0, &le) ||
        law_bytes(L->f, L->ep, o->knob, r->max, &b1, &le)) {
        snprintf(r->law_source, sizeof(r->law_source), "%.250s", le.msg);
        return;
    }
    if (r->max == r->min || b1 <= b0) {
        snprintf(r->law_source, sizeof(r->law_source), "the law's need does not grow with %s",
                 r->knob);
        return;
    }
    r->law = true;
    r->law_b = (b1 - b0) / (double)(r->max - r->min);
    double a = b0 - r->law_b * (double)r->min;
    /* what the law leaves out (the process's own runtime, threads, allocator slack) is unknown
     * until a boot measures it: stated as an interval of the capacity */
    r->law_a_lo = a - 0.05 * (double)r->capacity;
    r->law_a_hi = a + 0.25 * (double)r->capacity;
    snprintf(r->law_source, sizeof(r->law_source),
             "%s's memory law: %.0f B per %s, %.0f B at %" PRId64
             "; the rest in [-5%%, +25%%] of %" PRIu64 " B until a boot measures it",
             sw_fleet_engine_name(L->ep->engine), r->law_b, r->knob, b0, r->min, r->capacity);
}

int sw_ladder_run(const struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                  const struct sw_ladder_opts *o, struct sw_ladder_result *r, struct sw_err *e)
{
    struct lad L;
    memset(r, 0, sizeof(*r));
    memset(&L, 0, sizeof(L));
    r->answer = r->bad = r->next = -1;
    r->pred_lo = r->pred_hi = r->pred_point = -1;
    if (!ep || !o || (unsigned)o->knob > SW_LADDER_KV_BYTES)
        return sw_err_set(e, SW_EINVAL, "ladder: an endpoint and a knob are required");
    L.f = f;
    L.ep = ep;
    L.o = o;
    L.r = r;
    snprintf(r->endpoint, sizeof(r->endpoint), "%s", ep->name);
    snprintf(r->knob, sizeof(r->knob), "%s", knob_names[o->knob]);
    snprintf(r->engine, sizeof(r->engine), "%s", sw_fleet_engine_name(ep->engine));
    if (o->label)
        snprintf(r->label, sizeof(r->label), "%s", o->label);
    else
        snprintf(r->label, sizeof(r->label), "%s/%s", ep->name, knob_names[o->knob]);
    enum sw_ladder_runner_kind rk = o->runner;
    if (rk == SW_LADDER_RUN_AUTO)
        rk = ep->host ? SW_LADDER_RUN_ROLLOUT : SW_LADDER_RUN_SIM;
    snprintf(r->runner, sizeof(r->runner), "%s", o->run ? "custom" : sw_ladder_runner_name(rk));
    bool engine_ok = o->knob == SW_LADDER_CTX_SIZE ? ep->engine == SW_FLEET_LLAMACPP
                     : o->knob == SW_LADDER_MAX_MODEL_LEN || o->knob == SW_LADDER_KV_BYTES
                         ? ep->engine != SW_FLEET_LLAMACPP
                         : true;
    if (!engine_ok)
        return sw_err_set(e, SW_EINVAL, "%s: %s is not a knob of %s", ep->name, knob_names[o->knob],
                          sw_fleet_engine_name(ep->engine));
    for (int i = 0; i < o->n_sets; i++) {
        int src = sw_gate_set(ep, o->sets[i], e);
        if (src)
            return src;
    }
    struct sw_fleet_u64 saved = *knob_field(ep, o->knob);
    int rc = setup_grid(&L, e);
    if (rc)
        goto out;
    setup_law(&L);
    rc = resume(&L, e);
    if (rc)
        goto out;
    predict(&L);
    int64_t p_lo = r->pred_lo, p_hi = r->pred_hi, p_pt = r->pred_point;
    L.walk = p_pt >= 0;
    sw_ladder_run_fn run = o->run;
    void *ctx = o->run ? o->run_ctx : (void *)o;
    if (!run)
        run = rk == SW_LADDER_RUN_SIM     ? sw_ladder_run_sim
              : rk == SW_LADDER_RUN_LOCAL ? sw_ladder_run_local
                                          : sw_ladder_run_rollout;
    int max_boots = o->max_boots > 0 ? o->max_boots : 8;
    bool first = r->n == 0;
    for (;;) {
        int64_t i = choose(&L, first);
        if (i < 0) {
            r->converged = true;
            snprintf(r->why_stopped, sizeof(r->why_stopped),
                     "no %s value of the grid (step %" PRId64 ") is left untried between the "
                     "bounds",
                     r->knob, r->step);
            break;
        }
        if (o->dry_run) {
            r->next = grid_val(&L, i);
            snprintf(r->why_stopped, sizeof(r->why_stopped), "dry run");
            break;
        }
        if (r->boots >= max_boots) {
            snprintf(r->why_stopped, sizeof(r->why_stopped), "--max-boots %d spent", max_boots);
            break;
        }
        if (r->n >= SW_LADDER_MAX_RUNGS) {
            snprintf(r->why_stopped, sizeof(r->why_stopped), "%d rungs", SW_LADDER_MAX_RUNGS);
            break;
        }
        first = false;
        struct sw_ladder_rung *g = &r->rungs[r->n];
        memset(g, 0, sizeof(*g));
        g->n = r->n ? r->rungs[r->n - 1].n + 1 : 1;
        g->value = grid_val(&L, i);
        g->good_before = L.good >= 0 ? grid_val(&L, L.good) : -1;
        g->bad_before = L.bad < L.n_grid ? grid_val(&L, L.bad) : -1;
        g->pred_lo = r->pred_lo;
        g->pred_hi = r->pred_hi;
        g->pred_point = r->pred_point;
        rc = sw__ladder_set(ep, o->knob, g->value, e);
        if (rc)
            goto out;
        uint64_t t0 = sw_now_ns();
        char why[512];
        bool chk_bad = false;
        struct sw_ladder_outcome oc;
        memset(&oc, 0, sizeof(oc));
        rc = refused_by_check(&L, why, sizeof(why), &chk_bad, e);
        if (rc)
            goto out;
        if (why[0] && strncmp(why, "check could not run", 19)) {
            g->cls = SW_LADDER_REFUSED;
            snprintf(g->detail, sizeof(g->detail), "%s", why);
            g->ms = (double)(sw_now_ns() - t0) / 1e6;
            if (chk_bad) {
                /* a size failure the ledger or the fleet already showed: a bound, no boot */
                if (i < L.bad)
                    L.bad = i;
            } else {
                L.skip[i] = 1;
            }
        } else {
            rc = run(ctx, f, ep, o->knob, g->value, &oc, e);
            if (rc) {
                json_decref(oc.evidence);
                goto out;
            }
            g->ms = (double)(sw_now_ns() - t0) / 1e6;
            g->cls = oc.cls;
            g->booted = oc.booted;
            g->boot_id = oc.boot_id;
            g->peak_bytes = oc.peak_bytes;
            snprintf(g->detail, sizeof(g->detail), "%s", oc.detail);
            if (g->booted) {
                r->boots++;
                r->boots_total++;
            }
            recalibrate(&L, g->value, g->cls, oc.peak_bytes, oc.tried_bytes, oc.free_bytes);
            learn(&L, g->value, g->cls, oc.engine_max);
        }
        r->n++;
        rc = record(&L, g, &oc, e);
        json_decref(oc.evidence);
        progress(&L, g);
        if (rc)
            goto out;
        if (g->cls == SW_LADDER_OTHER) {
            r->stopped_other = true;
            snprintf(r->why_stopped, sizeof(r->why_stopped),
                     "rung %d failed for a reason that is not about size: %.200s", g->n, g->detail);
            break;
        }
        predict(&L);
    }
    if (!o->dry_run || r->n) {
        /* the prediction as the run began, for the report */
        r->pred_lo = p_lo;
        r->pred_hi = p_hi;
        r->pred_point = p_pt;
    }
    r->answer = L.good >= 0 ? grid_val(&L, L.good) : -1;
    r->bad = L.bad < L.n_grid ? grid_val(&L, L.bad) : -1;
out:
    *knob_field(ep, o->knob) = saved;
    sw_free(L.skip);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Output.
 */
json_t *sw_ladder_result_json(const struct sw_ladder_result *r)
{
    json_t *o = json_object();
    json_t *rungs = json_array();
    json_t *range = json_object();
    json_t *pred = json_object();
    if (!o || !rungs || !range || !pred) {
        json_decref(o);
        json_decref(rungs);
        json_decref(range);
        json_decref(pred);
        return NULL;
    }
    sw_json_set_str(o, "endpoint", r->endpoint);
    sw_json_set_str(o, "label", r->label);
    sw_json_set_str(o, "knob", r->knob);
    sw_json_set_str(o, "engine", r->engine);
    sw_json_set_str(o, "runner", r->runner);
    sw_json_set_int(range, "min", r->min);
    sw_json_set_int(range, "max", r->max);
    sw_json_set_int(range, "step", r->step);
    sw_json_set_new(o, "range", range);
    sw_json_set_new(o, "answer", r->answer >= 0 ? json_integer(r->answer) : json_null());
    sw_json_set_new(o, "bad", r->bad >= 0 ? json_integer(r->bad) : json_null());
    sw_json_set_bool(o, "converged", r->converged);
    sw_json_set_int(o, "boots", r->boots);
    sw_json_set_int(o, "boots_total", r->boots_total);
    if (r->law) {
        json_t *law = json_object();
        if (law) {
            sw_json_set_real(law, "bytes_per_unit", r->law_b);
            sw_json_set_real(law, "a_lo", r->law_a_lo);
            sw_json_set_real(law, "a_hi", r->law_a_hi);
            sw_json_set_int(law, "capacity", (int64_t)r->capacity);
        }
        sw_json_set_new(o, "law", law ? law : json_null());
    } else {
        sw_json_set_new(o, "law", json_null());
    }
    sw_json_set_str(o, "law_source", r->law_source);
    sw_json_set_bool(o, "headroom", r->headroom);
    sw_json_set_new(pred, "lo", r->pred_lo >= 0 ? json_integer(r->pred_lo) : json_null());
    sw_json_set_new(pred, "hi", r->pred_hi >= 0 ? json_integer(r->pred_hi) : json_null());
    sw_json_set_new(pred, "point", r->pred_point >= 0 ? json_integer(r->pred_point) : json_null());
    sw_json_set_new(o, "prediction", pred);
    sw_json_set_new(o, "next", r->next >= 0 ? json_integer(r->next) : json_null());
    for (int i = 0; i < r->n; i++) {
        const struct sw_ladder_rung *g = &r->rungs[i];
        json_t *j = json_object();
        if (!j)
            continue;
        sw_json_set_int(j, "rung", g->n);
        sw_json_set_int(j, "value", g->value);
        sw_json_set_str(j, "class", sw_ladder_class_name(g->cls));
        sw_json_set_bool(j, "booted", g->booted);
        sw_json_set_bool(j, "resumed", g->resumed);
        sw_json_set_new(j, "boot", g->boot_id ? json_integer(g->boot_id) : json_null());
        sw_json_set_new(j, "good_before",
                        g->good_before >= 0 ? json_integer(g->good_before) : json_null());
        sw_json_set_new(j, "bad_before",
                        g->bad_before >= 0 ? json_integer(g->bad_before) : json_null());
        json_t *p = json_object();
        if (p) {
            sw_json_set_new(p, "lo", g->pred_lo >= 0 ? json_integer(g->pred_lo) : json_null());
            sw_json_set_new(p, "hi", g->pred_hi >= 0 ? json_integer(g->pred_hi) : json_null());
            sw_json_set_new(p, "point",
                            g->pred_point >= 0 ? json_integer(g->pred_point) : json_null());
            sw_json_set_new(j, "prediction", p);
        }
        sw_json_set_new(j, "peak_bytes",
                        g->peak_bytes ? json_integer((int64_t)g->peak_bytes) : json_null());
        sw_json_set_int(j, "ms", (int64_t)g->ms);
        sw_json_set_str(j, "detail", g->detail);
        json_array_append_new(rungs, j);
    }
    sw_json_set_new(o, "rungs", rungs);
    sw_json_set_str(o, "why_stopped", r->why_stopped);
    return o;
}

void sw_ladder_result_print(FILE *out, const struct sw_ladder_result *r)
{
    fprintf(out, "ladder %s of %s (%s, runner %s): %" PRId64 "..%" PRId64 " step %" PRId64 "\n",
            r->knob, r->endpoint, r->engine, r->runner, r->min, r->max, r->step);
    if (r->law || r->headroom)
        fprintf(out, "law: %s\n", r->law_source);
    else
        fprintf(out, "law: none (%s)\n", r->law_source[0] ? r->law_source : "not available");
    if (r->pred_point >= 0)
        fprintf(out, "predicted: %" PRId64 " (in %" PRId64 "..%" PRId64 ")\n", r->pred_point,
                r->pred_lo, r->pred_hi);
    fprintf(out, "%-5s %-12s %-12s %-5s %-9s %s\n", "rung", "value", "class", "boot", "seconds",
            "evidence");
    for (int i = 0; i < r->n; i++) {
        const struct sw_ladder_rung *g = &r->rungs[i];
        fprintf(out, "%-5d %-12" PRId64 " %-12s %-5s %-9.1f %s%s\n", g->n, g->value,
                sw_ladder_class_name(g->cls), g->booted ? "yes" : "no", g->ms / 1000.0,
                g->resumed ? "(resumed) " : "", g->detail);
    }
    if (r->next >= 0)
        fprintf(out, "dry run: the first rung would boot %s=%" PRId64 "\n", r->knob, r->next);
    if (r->answer >= 0)
        fprintf(out, "answer: %s=%" PRId64, r->knob, r->answer);
    else
        fprintf(out, "answer: none proven");
    if (r->bad >= 0)
        fprintf(out, " (%" PRId64 " fails)", r->bad);
    fprintf(out, "; %d boot%s now, %d in all; %s\n", r->boots, r->boots == 1 ? "" : "s",
            r->boots_total, r->why_stopped);
}
