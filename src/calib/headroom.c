/*
 * calib/headroom: the transient needs of memory/profile's headroom budget (sw_profile_headroom),
 * fitted from what the recorded boots of a fork-profile endpoint did. Every boot is put through
 * the budget (free at capture = usable - weights - non_torch - arena - pool - graphs) and its
 * outcome bounds one coefficient; see include/slipway/calib.h for the model. The bounds are kept
 * as intervals (2-D ones as the vertices of their feasible polygon, as calib/arena does), so a
 * prediction is a range and a boot held out of the fit is predicted, not looked up.
 *
 * What it does not do: decide (the headroom gate and the sim read the prediction), or model
 * contexts (root vs rootless, the pinned-expert path): boots of another context shift the
 * engine-sized classes' theta, which is why those are fitted per class.
 */
#include "calib_internal.h"

#include <slipway/fleet.h>
#include <slipway/profile.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GIB 1073741824.0

const char *sw_calib_hr_use_name(enum sw_calib_hr_use u)
{
    switch (u) {
    case SW_CALIB_HR_UNUSED:
        return "unused";
    case SW_CALIB_HR_CAPTURE_OK:
        return "capture_ok";
    case SW_CALIB_HR_CAPTURE_OOM:
        return "capture_oom";
    case SW_CALIB_HR_OVERDRAWN:
        return "overdrawn";
    case SW_CALIB_HR_ACTIVATION:
        return "activation";
    case SW_CALIB_HR_KV_OOM:
        return "kv_oom";
    }
    return "?";
}

const char *sw_calib_hr_verdict_name(enum sw_calib_hr_verdict v)
{
    switch (v) {
    case SW_CALIB_HR_FITS:
        return "fits";
    case SW_CALIB_HR_KV_FAILS:
        return "kv_alloc_oom";
    case SW_CALIB_HR_CAPTURE_FAILS:
        return "graph_capture_oom";
    case SW_CALIB_HR_CAPTURE_RISK:
        return "not_known_to_fit";
    case SW_CALIB_HR_RUNTIME_FAILS:
        return "runtime_oom";
    case SW_CALIB_HR_UNKNOWN:
        return "unknown";
    }
    return "?";
}

/* ---------------------------------------------------------------------------------------------
 * A 2-D feasible polygon: constraints lo_i <= x + t_i y <= hi_i and a box, by vertex enumeration
 * (a handful of constraints: every pair of boundary lines is intersected and kept when inside).
 */
struct line {
    double a, b, c; /* a x + b y = c */
};
struct cons {
    double t, lo, hi;
};

static bool poly_inside(const struct cons *k, int n, const double box[4], double x, double y)
{
    double tx = 1e-9 * fmax(1.0, fabs(x)), ty = 1e-9 * fmax(1.0, fabs(y));
    if (x < box[0] - tx || x > box[1] + tx || y < box[2] - ty || y > box[3] + ty)
        return false;
    for (int i = 0; i < n; i++) {
        double v = x + k[i].t * y;
        double tol = 1e-9 * fmax(1.0, fabs(v));
        if (v < k[i].lo - tol || v > k[i].hi + tol)
            return false;
    }
    return true;
}

static void poly_fit(struct sw_calib_hr_poly *p, const struct cons *k, int n, const double box[4])
{
    struct line L[2 * 16 + 4];
    int nl = 0;
    memset(p, 0, sizeof(*p));
    p->n_constraints = n;
    for (int i = 0; i < n && i < 16; i++) {
        L[nl++] = (struct line){1, k[i].t, k[i].lo};
        L[nl++] = (struct line){1, k[i].t, k[i].hi};
    }
    L[nl++] = (struct line){1, 0, box[0]};
    L[nl++] = (struct line){1, 0, box[1]};
    L[nl++] = (struct line){0, 1, box[2]};
    L[nl++] = (struct line){0, 1, box[3]};
    for (int i = 0; i < nl; i++)
        for (int j = i + 1; j < nl; j++) {
            double det = L[i].a * L[j].b - L[j].a * L[i].b;
            if (fabs(det) < 1e-12)
                continue;
            double x = (L[i].c * L[j].b - L[j].c * L[i].b) / det;
            double y = (L[i].a * L[j].c - L[j].a * L[i].c) / det;
            if (!poly_inside(k, n, box, x, y) || p->n_vert >= SW_CALIB_HR_MAX_VERT)
                continue;
            p->x[p->n_vert] = x;
            p->y[p->n_vert] = y;
            p->n_vert++;
        }
}

static double ylo(const struct sw_calib_hr_poly *p)
{
    double v = INFINITY;
    for (int i = 0; i < p->n_vert; i++)
        v = fmin(v, p->y[i]);
    return p->n_vert ? v : 0;
}

static double yhi(const struct sw_calib_hr_poly *p)
{
    double v = -INFINITY;
    for (int i = 0; i < p->n_vert; i++)
        v = fmax(v, p->y[i]);
    return p->n_vert ? v : 0;
}

/* min and max of x + t y over the polygon; false when it is empty */
static bool poly_range(const struct sw_calib_hr_poly *p, double t, double *lo, double *hi)
{
    if (!p->n_vert)
        return false;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < p->n_vert; i++) {
        double v = p->x[i] + t * p->y[i];
        *lo = fmin(*lo, v);
        *hi = fmax(*hi, v);
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Shapes.
 */
static bool truthy(const json_t *v)
{
    return json_is_true(v) || (json_is_integer(v) && json_integer_value(v) != 0) ||
           (json_is_string(v) &&
            (!strcmp(json_string_value(v), "true") || !strcmp(json_string_value(v), "on")));
}

int sw_calib_headroom_shape(const json_t *canon, struct sw_headroom_shape *s, const char **kv_dtype)
{
    memset(s, 0, sizeof(*s));
    if (!json_is_object(canon))
        return SW_EINVAL;
    s->max_model_len = sw__calib_shape_int(canon, "ctx", 0);
    s->seqs = sw__calib_shape_int(canon, "slots", 0);
    s->mnbt = sw__calib_shape_int(canon, "mnbt", 0);
    int64_t kb = sw__calib_shape_int(canon, "kv_bytes", 0);
    s->pool = kb > 0 ? (uint64_t)kb : 0;
    const json_t *u = json_object_get(canon, "gpu_memory_utilization");
    s->util = json_is_number(u) ? json_number_value(u) : 0;
    const json_t *fl = json_object_get(canon, "flags");
    s->precise = truthy(json_object_get(fl, "expert_precise_memory")) ||
                 truthy(json_object_get(fl, "expert-precise-memory")) ||
                 truthy(json_object_get(fl, "--expert-precise-memory"));
    const json_t *sp = json_object_get(json_object_get(fl, "speculative"), "tokens");
    if (!sp)
        sp = json_object_get(fl, "spec_tokens");
    if (!sp)
        sp = json_object_get(fl, "num_speculative_tokens");
    if (json_is_integer(sp) && json_integer_value(sp) > 0 && json_integer_value(sp) < 64)
        s->spec_tokens = (int64_t)json_integer_value(sp);
    if (kv_dtype) {
        const char *k = sw__calib_shape_str(canon, "kv_dtype_k");
        if (!k[0])
            k = sw__calib_shape_str(canon, "kv_dtype");
        *kv_dtype = k[0] ? k : "auto";
    }
    if (s->max_model_len <= 0 || s->seqs <= 0 || s->max_model_len > (INT64_C(1) << 31) ||
        s->seqs > 65536)
        return SW_EINVAL;
    return 0;
}

/* MNBT's effect: the overhead's steps above its threshold (none at or below it: the seed's arena
 * "measured 6,499 slots at every MNBT <= 4096"), so an unrecorded MNBT and 1024 are one class. */
static int64_t mnbt_steps(int64_t m)
{
    return m > 4096 ? (m - 4096 + 1023) / 1024 : 0;
}

static bool same_class(const struct sw_calib_hr_pool *c, const char *kv,
                       const struct sw_headroom_shape *s)
{
    return !strcmp(c->kv_dtype, kv) && c->seqs == s->seqs &&
           mnbt_steps(c->mnbt) == mnbt_steps(s->mnbt) && fabs(c->util - s->util) < 1e-9 &&
           c->precise == s->precise;
}

static int find_class(const struct sw_calib_headroom *h, const char *kv,
                      const struct sw_headroom_shape *s)
{
    for (int i = 0; i < h->n_pools; i++)
        if (same_class(&h->pools[i], kv, s))
            return i;
    return -1;
}

/* The pool bytes [lo, hi) a printed token count means, through the KV fit of the boot's class:
 * the smallest pool that prints at least `tokens` and the smallest that prints more. */
static bool pool_of_tokens(const struct sw_calib_fit *f, const struct sw_fork_profile *prof,
                           const json_t *canon, int64_t L, int64_t tokens, double *lo, double *hi)
{
    const struct sw_calib_kv_fit *k = sw_calib_kv_class(f, canon);
    if (!k || !k->consistent || !k->n_solutions)
        return false;
    /* With the model's structure (the config explained the class) and the profile's declared
     * extra bytes, the block is the law's own: whole blocks n with int(n / per_request x L) ==
     * tokens, so the pool is [n x stride, (n + 1) x stride), the range memory/vllm reproduces. */
    const struct sw_calib_kv_model *km = &k->model;
    if (km->have && km->explained && k->chosen >= 0 && km->group_size > 0 && km->block > 0) {
        const struct sw_calib_kv_sol *so = &k->sols[k->chosen];
        int64_t per = (int64_t)so->a * ((L + so->b - 1) / so->b) + so->s;
        double stride = (double)km->group_size * (double)km->block *
                        (double)(km->page_per_token + prof->extra_attn_bytes_per_token);
        if (per > 0 && stride > 0) {
            int64_t n = (int64_t)((double)tokens * (double)per / (double)L);
            for (int64_t c = SW_MAX(n - 2, 1); c <= n + 2; c++)
                if ((int64_t)((double)c / (double)per * (double)L) == tokens) {
                    *lo = (double)c * stride;
                    *hi = (double)(c + 1) * stride - 1.0;
                    return true;
                }
        }
    }
    uint64_t bound[2];
    for (int w = 0; w < 2; w++) {
        uint64_t a = 1, b = UINT64_C(1) << 40;
        while (a < b) {
            uint64_t m = a + (b - a) / 2;
            struct sw_calib_kv_pred p;
            if (sw_calib_kv_predict(k, L, m, &p, NULL))
                return false;
            if (w == 0 ? p.tokens.point >= tokens : p.tokens.point > tokens)
                b = m;
            else
                a = m + 1;
        }
        bound[w] = a;
    }
    *lo = (double)bound[0];
    *hi = (double)bound[1] - 1.0;
    return bound[1] > bound[0];
}

static void budget_free(const struct sw_fork_profile *p, const struct sw_headroom_shape *s,
                        double pool, double *free_cap, double *free_kv)
{
    struct sw_headroom_shape q = *s;
    struct sw_headroom_budget b;
    q.pool = 0;
    if (sw_profile_headroom(p, &q, &b, NULL)) {
        *free_cap = *free_kv = NAN;
        return;
    }
    *free_kv = b.free_kv;
    *free_cap = b.free_capture - pool;
}

static void add_note(struct sw_calib_headroom *h, long long id)
{
    size_t n = strlen(h->notes);
    if (n + 8 < sizeof(h->notes))
        snprintf(h->notes + n, sizeof(h->notes) - n,
                 "%sboot #%lld: its printed tokens are not invertible through its KV class",
                 n ? "; " : "", id);
}

/* ---------------------------------------------------------------------------------------------
 * The fit.
 */

/* A KV allocation failure: the free memory it printed bounds the activations. */
static void kv_alloc_point(struct sw_calib_hr_point *pt, const json_t *fail)
{
    const json_t *fg = json_object_get(fail, "free_gib");
    const json_t *fbytes = json_object_get(fail, "free_bytes");
    if (json_is_number(fg) && json_number_value(fg) >= 0 && json_number_value(fg) < 1e6)
        pt->printed_free = json_number_value(fg) * GIB;
    else if (json_is_integer(fbytes) && json_integer_value(fbytes) > 0)
        pt->printed_free = (double)json_integer_value(fbytes);
    pt->use = pt->printed_free >= 0 ? SW_CALIB_HR_ACTIVATION : SW_CALIB_HR_KV_OOM;
    if (pt->use == SW_CALIB_HR_KV_OOM)
        snprintf(pt->why, sizeof(pt->why), "a KV allocation failure without a free figure");
}

/* A pinned pool (kv_bytes in the shape): the free memory at capture is known; a pass with the
 * budget overdrawn is said, not used. */
static void pinned_point(struct sw_calib_hr_point *pt, double fcap, bool capture_oom)
{
    pt->pool_lo = pt->pool_hi = (double)pt->shape.pool;
    pt->free_lo = pt->free_hi = fcap - (double)pt->shape.pool;
    if (!capture_oom && pt->free_hi < 0) {
        pt->use = SW_CALIB_HR_OVERDRAWN;
        snprintf(pt->why, sizeof(pt->why),
                 "booted with the budget overdrawn by %.2f GiB: the arena took what was left, 0 "
                 "bytes free at runtime",
                 -pt->free_hi / GIB);
    }
}

/* An engine-sized pool: the point joins its class (kv dtype, seqs, MNBT steps, util, precise),
 * and its printed token count, inverted through the class's KV fit, gives the pool's range. */
static void engine_point(struct sw_calib_fit *f, struct sw_calib_hr_point *pt, const json_t *b,
                         const char *kv, uint64_t tried)
{
    struct sw_calib_headroom *h = &f->headroom;
    const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
    int c = find_class(h, kv, &pt->shape);
    if (c < 0 && h->n_pools < SW_CALIB_HR_MAX_POOLS) {
        c = h->n_pools++;
        struct sw_calib_hr_pool *pc = &h->pools[c];
        memset(pc, 0, sizeof(*pc));
        snprintf(pc->kv_dtype, sizeof(pc->kv_dtype), "%s", kv);
        pc->seqs = pt->shape.seqs;
        pc->mnbt = pt->shape.mnbt;
        pc->util = pt->shape.util;
        pc->precise = pt->shape.precise;
    }
    pt->pool_class = c;
    if (c >= 0 && tried > h->pools[c].tried_bytes)
        h->pools[c].tried_bytes = tried;
    if (c < 0) {
        pt->use = SW_CALIB_HR_UNUSED;
        snprintf(pt->why, sizeof(pt->why), "too many engine-sized pool classes");
        return;
    }
    const json_t *tok = json_object_get(json_object_get(b, "report"), "kv_cache_tokens");
    if (json_is_integer(tok) &&
        !pool_of_tokens(f, &h->prof, canon, pt->shape.max_model_len,
                        (int64_t)json_integer_value(tok), &pt->pool_lo, &pt->pool_hi))
        add_note(h, (long long)pt->boot_id);
    else if (json_is_integer(tok))
        h->pools[c].n_boots++;
}

/* One recorded boot as a point (appended, used or with why not): its shape priced by the
 * profile, and what its outcome bounds (a capture that passed or died, a KV allocation failure's
 * printed free memory), through a pinned or an engine-sized pool. */
static void add_point(struct sw_calib_fit *f, const json_t *b, int64_t id)
{
    struct sw_calib_headroom *h = &f->headroom;
    struct sw_calib_hr_point *pt = &h->pts[h->n_points++];
    memset(pt, 0, sizeof(*pt));
    pt->boot_id = id;
    pt->pool_class = -1;
    pt->printed_free = -1;
    const char *ext = json_string_value(json_object_get(b, "ext_id"));
    snprintf(pt->ext_id, sizeof(pt->ext_id), "%s", ext ? ext : "");
    const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
    const char *kv = "auto";
    if (sw_calib_headroom_shape(canon, &pt->shape, &kv)) {
        snprintf(pt->why, sizeof(pt->why), "no shape with max_model_len and seqs");
        return;
    }
    pt->units = sw_headroom_seq_units(&pt->shape);
    const json_t *fail = json_object_get(b, "failure");
    const char *fc = sw__calib_failure(b, "failure_class", "class");
    const char *ph = sw__calib_failure(b, "failure_phase", "phase");
    pt->auto_pool = pt->shape.pool == 0;
    double fcap, fkv;
    budget_free(&h->prof, &pt->shape, 0, &fcap, &fkv);
    if (isnan(fcap)) {
        snprintf(pt->why, sizeof(pt->why), "the profile cannot price this shape");
        return;
    }
    pt->free_kv = fkv;
    if (fc[0] && strcmp(fc, "oom")) {
        snprintf(pt->why, sizeof(pt->why), "%s: the boot never reached the pool", fc);
        return;
    }
    if (!strcmp(fc, "oom") && !strcmp(ph, "kv_alloc")) {
        kv_alloc_point(pt, fail);
        return;
    }
    bool capture_oom = !strcmp(fc, "oom") && !strcmp(ph, "graph_capture");
    if (!strcmp(fc, "oom") && !capture_oom && strcmp(ph, "runtime")) {
        snprintf(pt->why, sizeof(pt->why), "oom at %s: not a headroom phase", ph);
        return;
    }
    pt->use = capture_oom ? SW_CALIB_HR_CAPTURE_OOM : SW_CALIB_HR_CAPTURE_OK;
    const json_t *tb = json_object_get(fail, "tried_bytes");
    uint64_t tried = capture_oom && json_is_integer(tb) && json_integer_value(tb) > 0
                         ? (uint64_t)json_integer_value(tb)
                         : 0;
    if (tried > h->capture_tried_bytes)
        h->capture_tried_bytes = tried;
    if (!pt->auto_pool)
        pinned_point(pt, fcap, capture_oom);
    else
        engine_point(f, pt, b, kv, tried);
}

/* Engine-sized pools: pool = x + L y per class, from the points' pool ranges. */
static void fit_pool_lines(struct sw_calib_headroom *h)
{
    for (int c = 0; c < h->n_pools; c++) {
        struct cons k[16];
        int n = 0;
        for (int j = 0; j < h->n_points && n < 16; j++) {
            const struct sw_calib_hr_point *pt = &h->pts[j];
            if (pt->pool_class == c && pt->pool_hi > 0)
                k[n++] = (struct cons){(double)pt->shape.max_model_len, pt->pool_lo, pt->pool_hi};
        }
        /* prior: the intercept within +-64 GiB, the slope 0..1 MB per token (a longer
         * max_model_len takes arena back: the pool does not shrink) */
        const double box[4] = {-64 * GIB, 64 * GIB, 0, 1e6};
        poly_fit(&h->pools[c].line, k, n, box);
    }
}

/* Every capture point's free memory at capture bounds the transient need: per engine-sized
 * class its theta (a pass: theta <= its free_hi; a death: theta > its free_lo), for pinned pools
 * tau per sequence unit. */
static void bound_needs(struct sw_calib_headroom *h)
{
    double tau_lo = 0, tau_hi = INFINITY;
    for (int j = 0; j < h->n_points; j++) {
        struct sw_calib_hr_point *pt = &h->pts[j];
        if (pt->use != SW_CALIB_HR_CAPTURE_OK && pt->use != SW_CALIB_HR_CAPTURE_OOM)
            continue;
        if (pt->auto_pool) {
            struct sw_calib_hr_pool *pc = &h->pools[pt->pool_class];
            if (pt->pool_hi <= 0 &&
                !poly_range(&pc->line, (double)pt->shape.max_model_len, &pt->pool_lo, &pt->pool_hi))
                continue;
            double fcap, fkv;
            budget_free(&h->prof, &pt->shape, 0, &fcap, &fkv);
            pt->free_lo = fcap - pt->pool_hi;
            pt->free_hi = fcap - pt->pool_lo;
            /* the weakest bounds the boot allows: a pass says theta <= its true free <= free_hi,
             * a capture death theta > its true free >= free_lo */
            if (pt->use == SW_CALIB_HR_CAPTURE_OK) {
                if (!pc->theta_hi_set || pt->free_hi < pc->theta_hi)
                    pc->theta_hi = pt->free_hi;
                pc->theta_hi_set = true;
                pc->n_theta_hi++;
            } else {
                if (!pc->theta_lo_set || pt->free_lo > pc->theta_lo)
                    pc->theta_lo = pt->free_lo;
                pc->theta_lo_set = true;
                pc->n_theta_lo++;
            }
            continue;
        }
        double per = pt->free_lo / pt->units;
        if (pt->use == SW_CALIB_HR_CAPTURE_OK) {
            tau_hi = fmin(tau_hi, per);
            h->n_tau_hi++;
        } else {
            tau_lo = fmax(tau_lo, per);
            h->n_tau_lo++;
        }
    }
    h->tau_lo = tau_lo;
    h->tau_hi_set = isfinite(tau_hi);
    h->tau_hi = h->tau_hi_set ? tau_hi : 0;
}

/* Activations: printed free = free_kv - (a0 + a1 units), the free printed to 0.01 GiB. */
static void fit_activation(struct sw_calib_headroom *h)
{
    struct cons k[16];
    int n = 0;
    for (int j = 0; j < h->n_points && n < 16; j++) {
        const struct sw_calib_hr_point *pt = &h->pts[j];
        if (pt->use != SW_CALIB_HR_ACTIVATION)
            continue;
        double a = pt->free_kv - pt->printed_free;
        k[n++] = (struct cons){pt->units, a - 0.005 * GIB, a + 0.005 * GIB};
    }
    const double abox[4] = {0, 16 * GIB, 0, 2 * GIB};
    poly_fit(&h->act, k, n, abox);
    h->n_act = n;
}

/* A contradiction: the fit is not consistent, and h->why says so (after "; " when it already
 * says something). */
static void add_why(struct sw_calib_headroom *h, const char *fmt, ...) SW_PRINTF(2, 3);
static void add_why(struct sw_calib_headroom *h, const char *fmt, ...)
{
    char text[sizeof(h->why)];
    size_t l = strlen(h->why);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    snprintf(h->why + l, sizeof(h->why) - l, "%s%s", l ? "; " : "", text);
    h->consistent = false;
}

/* Do the bounds agree? Each contradiction is said in h->why. */
static void check_consistent(struct sw_calib_headroom *h)
{
    h->consistent = true;
    if (h->tau_hi_set && h->tau_hi < h->tau_lo)
        add_why(h,
                "pinned pools: a capture death needs more than %.3f GiB per sequence, a pass at "
                "most %.3f",
                h->tau_lo / GIB, h->tau_hi / GIB);
    for (int c = 0; c < h->n_pools; c++) {
        const struct sw_calib_hr_pool *pc = &h->pools[c];
        if (pc->theta_lo_set && pc->theta_hi_set && pc->theta_hi <= pc->theta_lo)
            add_why(h, "engine-sized %s x %lld: a capture death at %.3f GiB free, a pass at %.3f",
                    pc->kv_dtype, (long long)pc->seqs, pc->theta_lo / GIB, pc->theta_hi / GIB);
        if (pc->n_boots && !pc->line.n_vert)
            add_why(h, "engine-sized %s x %lld: no pool line fits the printed token counts",
                    pc->kv_dtype, (long long)pc->seqs);
    }
    if (h->n_act && !h->act.n_vert)
        add_why(h, "no activation line fits the KV allocation failures");
}

int sw__calib_headroom_fit(struct sw_calib_fit *f, const json_t *boots,
                           const struct sw_calib_opts *o, struct sw_err *e)
{
    struct sw_calib_headroom *h = &f->headroom;
    memset(h, 0, sizeof(*h));
    (void)e;
    if (!o || !o->ep || !o->ep->profile)
        return 0;
    struct sw_err pe;
    sw_err_clear(&pe);
    if (sw_profile_from_fleet(o->ep->profile, &h->prof, &pe) || !h->prof.has_arena)
        return 0;
    h->have = true;
    size_t i;
    json_t *b;
    json_array_foreach(boots, i, b)
    {
        int64_t id = (int64_t)json_integer_value(json_object_get(b, "id"));
        if (sw__calib_excluded(o, id) || h->n_points >= SW_CALIB_HR_MAX_POINTS)
            continue;
        add_point(f, b, id);
    }
    fit_pool_lines(h);
    bound_needs(h);
    fit_activation(h);
    check_consistent(h);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Prediction.
 */
static const char *gib(double b, char *out, size_t n)
{
    snprintf(out, n, "%.2f GiB", b / GIB);
    return out;
}

int sw_calib_headroom_predict(const struct sw_calib_fit *f, const struct sw_headroom_shape *s,
                              const char *kv_dtype, struct sw_calib_hr_pred *out, struct sw_err *e)
{
    const struct sw_calib_headroom *h = &f->headroom;
    char t[9][32];
    memset(out, 0, sizeof(*out));
    if (!h->have)
        return sw_err_set(e, SW_ENOENT, "%s: no headroom model (no fork profile with an arena)",
                          f->endpoint);
    struct sw_headroom_shape q = *s;
    q.pool = 0;
    int rc = sw_profile_headroom(&h->prof, &q, &out->budget, e);
    if (rc)
        return rc;
    double units = sw_headroom_seq_units(s);
    double fcap = out->budget.free_capture; /* before the pool */
    if (!poly_range(&h->act, units, &out->act_lo, &out->act_hi))
        out->act_lo = out->act_hi = 0;
    out->kv_free_lo = out->budget.free_kv - out->act_hi;
    out->kv_free_hi = out->budget.free_kv - out->act_lo;
    out->auto_pool = s->pool == 0;
    kv_dtype = kv_dtype ? kv_dtype : "auto";

    if (out->auto_pool) {
        int ci = find_class(h, kv_dtype, s);
        if (ci < 0 || !h->pools[ci].line.n_vert) {
            out->verdict = SW_CALIB_HR_UNKNOWN;
            snprintf(out->why, sizeof(out->why),
                     "no recorded boot of an engine-sized %s pool at %lld seqs, utilization %.2f: "
                     "the pool the engine sizes is not known",
                     kv_dtype, (long long)s->seqs, s->util);
            return 0;
        }
        const struct sw_calib_hr_pool *pc = &h->pools[ci];
        poly_range(&pc->line, (double)s->max_model_len, &out->pool_lo, &out->pool_hi);
        out->pool_point = floor((out->pool_lo + out->pool_hi) / 2);
        out->free_lo = fcap - out->pool_hi;
        out->free_hi = fcap - out->pool_lo;
        out->need_lo = pc->theta_lo_set ? pc->theta_lo : -INFINITY;
        out->need_hi = pc->theta_hi;
        out->need_hi_set = pc->theta_hi_set;
        /* Compare with the class's own boots, not with theta's interval: free(L) - free(L_i) =
         * fcap(L) - fcap(L_i) - (L - L_i) y, where the pool line's intercept cancels. A shape whose
         * free is at least a pass's, for every slope the line allows, fits; one whose free is at
         * most a capture death's fails. */
        bool in = false, fits = false, fails = false;
        for (int j = 0; j < h->n_points; j++) {
            const struct sw_calib_hr_point *pt = &h->pts[j];
            if (pt->pool_class != ci ||
                (pt->use != SW_CALIB_HR_CAPTURE_OK && pt->use != SW_CALIB_HR_CAPTURE_OOM))
                continue;
            in |= pt->shape.max_model_len == s->max_model_len;
            double fj, kj;
            budget_free(&h->prof, &pt->shape, 0, &fj, &kj);
            double dl = (double)(s->max_model_len - pt->shape.max_model_len);
            double lo = INFINITY, hi = -INFINITY;
            for (int v = 0; v < pc->line.n_vert; v++) {
                double d = fcap - fj - dl * pc->line.y[v];
                lo = fmin(lo, d);
                hi = fmax(hi, d);
            }
            if (pt->use == SW_CALIB_HR_CAPTURE_OK && lo >= 0)
                fits = true;
            if (pt->use == SW_CALIB_HR_CAPTURE_OOM && hi <= 0)
                fails = true;
        }
        out->extrapolated = !in;
        out->verdict = fails  ? SW_CALIB_HR_CAPTURE_FAILS
                       : fits ? SW_CALIB_HR_FITS
                              : SW_CALIB_HR_CAPTURE_RISK;
        snprintf(out->why, sizeof(out->why),
                 "engine-sized pool %s..%s at max_model_len %lld leaves %s..%s free at capture; "
                 "capture needs more than %s and at most %s (fitted on %d pass(es), %d "
                 "capture death(s) of %s x %lld at utilization %.2f; the pool grows %.0f..%.0f "
                 "B per token of max_model_len, the arena gives back %.0f)",
                 gib(out->pool_lo, t[0], 32), gib(out->pool_hi, t[1], 32),
                 (long long)s->max_model_len, gib(out->free_lo, t[2], 32),
                 gib(out->free_hi, t[3], 32),
                 pc->theta_lo_set ? gib(pc->theta_lo, t[4], 32) : "-inf",
                 pc->theta_hi_set ? gib(pc->theta_hi, t[5], 32) : "unbounded", pc->n_theta_hi,
                 pc->n_theta_lo, pc->kv_dtype, (long long)pc->seqs, pc->util, ylo(&pc->line),
                 yhi(&pc->line), h->prof.reserve_per_token);
        out->budget.pool = out->pool_point > 0
                               ? (uint64_t)out->pool_point
                               : 0; /* a negative point is an overdrawn budget: no pool */
        out->budget.resident += out->pool_point;
        out->budget.free_capture -= out->pool_point;
        return 0;
    }

    double pool = (double)s->pool;
    out->pool_lo = out->pool_hi = out->pool_point = pool;
    out->kv_ask = pool;
    out->free_lo = out->free_hi = fcap - pool;
    out->budget.pool = s->pool;
    out->budget.resident += pool;
    out->budget.free_capture -= pool;
    out->need_lo = h->tau_lo * units;
    out->need_hi = h->tau_hi * units;
    out->need_hi_set = h->tau_hi_set;
    /* A pool past what the activations leave beside the arena, but within what the arena's own
     * remainder leaves, is allocated: the arena yields (it is sized from what is left) and the
     * boot goes on overdrawn, as the seed's five 262,144 fp8 contexts did. Past the remainder
     * too, the allocation fails (bf16 3 x 262144 at util 0.98: tried 10.28 GiB, 9.46 free). */
    if (h->act.n_vert && pool > out->kv_free_hi && pool > out->budget.free_kv) {
        out->verdict = SW_CALIB_HR_KV_FAILS;
        snprintf(out->why, sizeof(out->why),
                 "asked %s of KV against %s free when the pool is allocated (usable - weights - "
                 "non-torch - arena %s - activations %s at %lld seqs)",
                 gib(pool, t[0], 32), gib((out->kv_free_lo + out->kv_free_hi) / 2, t[1], 32),
                 gib((double)out->budget.arena.arena_bytes, t[2], 32),
                 gib((out->act_lo + out->act_hi) / 2, t[3], 32), (long long)s->seqs);
        return 0;
    }
    if (out->free_hi < 0) {
        out->verdict = SW_CALIB_HR_RUNTIME_FAILS;
        snprintf(out->why, sizeof(out->why),
                 "the budget is overdrawn by %s at capture (weights + non-torch + arena %s + pool "
                 "%s + graphs): the arena takes what is left, 0 bytes stay free, and the first "
                 "long request dies",
                 gib(-out->free_hi, t[0], 32), gib((double)out->budget.arena.arena_bytes, t[1], 32),
                 gib(pool, t[2], 32));
        return 0;
    }
    if (out->free_hi <= out->need_lo) {
        out->verdict = SW_CALIB_HR_CAPTURE_FAILS;
    } else if (h->tau_hi_set && out->free_lo >= out->need_hi) {
        out->verdict = SW_CALIB_HR_FITS;
    } else {
        out->verdict = SW_CALIB_HR_CAPTURE_RISK;
    }
    snprintf(
        out->why, sizeof(out->why),
        "%s free at capture (usable %s - weights %s - non-torch %s - arena %s - pool %s - "
        "graphs %s); capture needs more than %s and %s%s at %lld seqs (per sequence %.3f..%.3f "
        "GiB, fitted on %d boot(s) past capture, %d death(s) at capture)",
        gib(out->free_lo, t[0], 32), gib((double)h->prof.usable, t[1], 32),
        gib((double)h->prof.weights, t[2], 32), gib((double)h->prof.non_torch, t[3], 32),
        gib((double)out->budget.arena.arena_bytes, t[4], 32), gib(pool, t[5], 32),
        gib((double)h->prof.graphs, t[6], 32), gib(out->need_lo, t[7], 32),
        h->tau_hi_set ? "up to " : "", h->tau_hi_set ? gib(out->need_hi, t[8], 32) : "no bound",
        (long long)s->seqs, h->tau_lo / GIB, h->tau_hi / GIB, h->n_tau_hi, h->n_tau_lo);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * JSON.
 */
static json_t *poly_json(const struct sw_calib_hr_poly *p)
{
    double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
    for (int i = 0; i < p->n_vert; i++) {
        xl = fmin(xl, p->x[i]);
        xh = fmax(xh, p->x[i]);
        yl = fmin(yl, p->y[i]);
        yh = fmax(yh, p->y[i]);
    }
    if (!p->n_vert)
        return json_pack("{s:i,s:b}", "constraints", p->n_constraints, "feasible", 0);
    return json_pack("{s:i,s:b,s:[f,f],s:[f,f]}", "constraints", p->n_constraints, "feasible", 1,
                     "intercept", xl, xh, "slope", yl, yh);
}

json_t *sw_calib_headroom_json(const struct sw_calib_headroom *h)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    sw_json_set_bool(o, "have", h->have);
    if (!h->have)
        return o;
    sw_json_set_bool(o, "consistent", h->consistent);
    if (h->why[0])
        sw_json_set_str(o, "why", h->why);
    json_t *tau = json_pack("{s:f,s:i,s:i}", "lo_gib", h->tau_lo / GIB, "bounded_below_by",
                            h->n_tau_lo, "bounded_above_by", h->n_tau_hi);
    if (tau && h->tau_hi_set)
        sw_json_set_real(tau, "hi_gib", h->tau_hi / GIB);
    sw_json_set_new(o, "capture_per_sequence", tau);
    json_t *act = poly_json(&h->act);
    sw_json_set_new(o, "activation_bytes", act); /* intercept a0, slope a1 per sequence unit */
    json_t *pools = json_array();
    for (int c = 0; pools && c < h->n_pools; c++) {
        const struct sw_calib_hr_pool *p = &h->pools[c];
        json_t *pj =
            json_pack("{s:s,s:I,s:I,s:f,s:b,s:i,s:o}", "kv_dtype", p->kv_dtype, "seqs",
                      (json_int_t)p->seqs, "mnbt", (json_int_t)p->mnbt, "util", p->util, "precise",
                      p->precise, "boots", p->n_boots, "pool_bytes", poly_json(&p->line));
        if (pj && p->theta_lo_set)
            sw_json_set_real(pj, "theta_lo_gib", p->theta_lo / GIB);
        if (pj && p->theta_hi_set)
            sw_json_set_real(pj, "theta_hi_gib", p->theta_hi / GIB);
        json_array_append_new(pools, pj);
    }
    sw_json_set_new(o, "engine_sized_pools", pools);
    json_t *pts = json_array();
    for (int j = 0; pts && j < h->n_points; j++) {
        const struct sw_calib_hr_point *p = &h->pts[j];
        json_t *pj = json_pack("{s:I,s:s,s:s,s:I,s:I,s:b}", "boot", (json_int_t)p->boot_id,
                               "ext_id", p->ext_id, "use", sw_calib_hr_use_name(p->use),
                               "max_model_len", (json_int_t)p->shape.max_model_len, "seqs",
                               (json_int_t)p->shape.seqs, "engine_sized_pool", p->auto_pool);
        if (pj && (p->use == SW_CALIB_HR_CAPTURE_OK || p->use == SW_CALIB_HR_CAPTURE_OOM ||
                   p->use == SW_CALIB_HR_OVERDRAWN)) {
            sw_json_set_real(pj, "free_at_capture_lo_gib", p->free_lo / GIB);
            sw_json_set_real(pj, "free_at_capture_hi_gib", p->free_hi / GIB);
            sw_json_set_real(pj, "pool_lo_bytes", p->pool_lo);
            sw_json_set_real(pj, "pool_hi_bytes", p->pool_hi);
        }
        if (pj && p->use == SW_CALIB_HR_ACTIVATION) {
            sw_json_set_real(pj, "free_kv_gib", p->free_kv / GIB);
            sw_json_set_real(pj, "printed_free_gib", p->printed_free / GIB);
        }
        if (pj && p->why[0])
            sw_json_set_str(pj, "why", p->why);
        json_array_append_new(pts, pj);
    }
    sw_json_set_new(o, "boots", pts);
    if (h->notes[0])
        sw_json_set_str(o, "notes", h->notes);
    return o;
}
