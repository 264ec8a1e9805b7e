/*
 * calib/kv: fits vLLM v1's KV block law to printed boots by keeping every parameter value that
 * reproduces every fitted boot exactly, then predicts as a range over that set.
 *
 * The law (docs/vllm-law.md; kv_cache_utils.py get_kv_cache_config_from_groups,
 * get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity):
 *   blocks      N = floor(KV_BYTES / stride)           stride = bytes of one block, all layers
 *   per request R = A x cdiv(max_model_len, B) + S     A attention groups, S state blocks
 *   printed       tokens = int(N / R x max_model_len), concurrency = N / R to 2 decimals
 * Free terms: stride (a range), B (a multiple of the 16-token alignment), A, S. For A, B, S fixed
 * each boot bounds N, so the stride, to an interval; a triple is feasible when the boots'
 * intervals meet. The search space is stated with the fit (B up to the largest fitted
 * max_model_len, S up to max_s, A up to max_a).
 *
 * With the model's config.json the upstream law gives the structure (block B0 from the hybrid
 * alignment, group size g, A0 attention groups, Gs state groups of `base` blocks, page p0 bytes
 * per token per layer); a feasible triple with A0 and B0 then names the fork's terms:
 * extra bytes per token per layer = stride / (g x B0) - p0, extra state blocks = S / Gs - base.
 * memory/vllm is then run with those terms on every boot to confirm.
 *
 * What it does not do: fit the legacy or V0 token formulas, or sliding-window geometry below the
 * window (its constant blocks per request are part of S only when max_model_len exceeds it).
 */
#include "calib_internal.h"

#include <slipway/hf.h>
#include <slipway/vllm.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ALIGN 16

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* What the engine prints for N blocks, R per request, length L (the law's own arithmetic). */
static int64_t printed_tokens(int64_t n, int64_t r, int64_t L)
{
    return (int64_t)((double)n / (double)r * (double)L);
}

static bool conc_matches(int64_t n, int64_t r, double printed)
{
    /* printed to 2 decimals: N / R in [C - 0.005, C + 0.005); integers decide all but exact
     * ties, which go to printf's own rounding */
    int64_t c = llround(printed * 100.0);
    int64_t x = 200 * n, lo = (2 * c - 1) * r, hi = (2 * c + 1) * r;
    if (x > lo && x < hi)
        return true;
    if (x < lo || x > hi)
        return false;
    char a[32], b[32];
    snprintf(a, sizeof(a), "%.2f", (double)n / (double)r);
    snprintf(b, sizeof(b), "%.2f", printed);
    return !strcmp(a, b);
}

/* The blocks N a boot allows at R per request: [*lo, *hi], false when none. */
static bool n_range(const struct sw_calib_kv_point *p, int64_t r, int64_t *lo, int64_t *hi)
{
    int64_t L = p->max_model_len, t = p->tokens;
    /* floor(N x L / R) == t  <=>  N in [ceil(t R / L), ceil((t + 1) R / L) - 1]; the double
     * formula may differ by one at exact boundaries: widen, then test each candidate. */
    int64_t a = cdiv(t * r, L) - 1, b = cdiv((t + 1) * r, L);
    if (a < 1)
        a = 1;
    int64_t first = -1, last = -1;
    for (int64_t n = a; n <= b; n++) {
        if (printed_tokens(n, r, L) != t)
            continue;
        if (p->has_conc && !conc_matches(n, r, p->conc))
            continue;
        if (first < 0)
            first = n;
        last = n;
    }
    if (first < 0)
        return false;
    *lo = first;
    *hi = last;
    return true;
}

/* Stride interval of one (A, B, S) over the points; false when empty. */
static bool triple_ok(const struct sw_calib_kv_point *pts, int n, const bool *use, int a, int64_t b,
                      int64_t s, uint64_t *slo, uint64_t *shi)
{
    uint64_t lo = 1, hi = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        if (use && !use[i])
            continue;
        int64_t r = (int64_t)a * cdiv(pts[i].max_model_len, b) + s;
        int64_t nlo, nhi;
        if (!n_range(&pts[i], r, &nlo, &nhi))
            return false;
        if (!pts[i].kv_bytes) /* pool not known: the block count must exist, nothing more */
            continue;
        /* N = floor(K / stride)  <=>  stride in (K / (N + 1), K / N] */
        uint64_t k = pts[i].kv_bytes;
        uint64_t l2 = k / (uint64_t)(nhi + 1) + 1, h2 = k / (uint64_t)nlo;
        if (l2 > lo)
            lo = l2;
        if (h2 < hi)
            hi = h2;
        if (lo > hi)
            return false;
    }
    *slo = lo;
    *shi = hi;
    return true;
}

struct search {
    const struct sw_calib_kv_point *pts;
    int n;
    const bool *use;
    int64_t max_b;
    int max_s, max_a, extra_a;
    /* out */
    struct sw_calib_kv_sol *sols;
    int64_t n_sols, cap;
    bool keep;
};

static int search_run(struct search *sr)
{
    sr->n_sols = 0;
    int top = SW_MAX(sr->max_a, sr->extra_a);
    for (int a = 1; a <= top; a++) {
        if (a > sr->max_a && a != sr->extra_a)
            continue;
        for (int64_t b = ALIGN; b <= sr->max_b; b += ALIGN) {
            for (int64_t s = 0; s <= sr->max_s; s++) {
                uint64_t lo, hi;
                if (!triple_ok(sr->pts, sr->n, sr->use, a, b, s, &lo, &hi))
                    continue;
                if (sr->keep) {
                    if (sr->n_sols >= SW_CALIB_MAX_SOLS)
                        return SW_ERANGE;
                    if (sr->n_sols == sr->cap) {
                        int64_t nc = sr->cap ? sr->cap * 2 : 256;
                        struct sw_calib_kv_sol *ns = sw_realloc(sr->sols, (size_t)nc * sizeof(*ns));
                        if (!ns)
                            return SW_ENOMEM;
                        sr->sols = ns;
                        sr->cap = nc;
                    }
                    sr->sols[sr->n_sols] = (struct sw_calib_kv_sol){a, b, s, lo, hi};
                }
                sr->n_sols++;
            }
        }
    }
    return 0;
}

void sw_calib_kv_fit_release(struct sw_calib_kv_fit *f)
{
    if (!f)
        return;
    sw_free(f->sols);
    f->sols = NULL;
    f->n_solutions = 0;
}

/* Range of a prediction over a solution set. */
static void pred_over(const struct sw_calib_kv_sol *sols, int64_t n, int64_t L, uint64_t k,
                      int64_t *tlo, int64_t *thi, double *clo, double *chi, int64_t *rlo,
                      int64_t *rhi)
{
    *tlo = INT64_MAX;
    *thi = INT64_MIN;
    *clo = INFINITY;
    *chi = -INFINITY;
    *rlo = INT64_MAX;
    *rhi = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        const struct sw_calib_kv_sol *s = &sols[i];
        int64_t r = (int64_t)s->a * cdiv(L, s->b) + s->s;
        int64_t nb[2] = {(int64_t)(k / s->stride_hi), (int64_t)(k / s->stride_lo)};
        for (int j = 0; j < 2; j++) {
            int64_t t = printed_tokens(nb[j], r, L);
            double c = (double)nb[j] / (double)r;
            if (t < *tlo)
                *tlo = t;
            if (t > *thi)
                *thi = t;
            *clo = fmin(*clo, c);
            *chi = fmax(*chi, c);
        }
        if (r < *rlo)
            *rlo = r;
        if (r > *rhi)
            *rhi = r;
    }
}

/* The upstream structure from the config, and the fork terms a feasible set implies. */
static void model_map(struct sw_calib_kv_fit *f, const char *cfg_text)
{
    struct sw_calib_kv_model *m = &f->model;
    struct sw_hf_config *c = NULL;
    struct sw_vllm_report *r = NULL;
    struct sw_err e = {0};
    c = sw_calloc(1, sizeof(*c));
    r = sw_calloc(1, sizeof(*r));
    if (!c || !r) {
        snprintf(m->why, sizeof(m->why), "out of memory");
        goto out;
    }
    if (sw_hf_config_parse(cfg_text, strlen(cfg_text), "config", c, &e)) {
        snprintf(m->why, sizeof(m->why), "config: %.400s", e.msg);
        goto out;
    }
    struct sw_vllm_opts o;
    sw_vllm_opts_init(&o);
    snprintf(o.kv_cache_dtype, sizeof(o.kv_cache_dtype), "%s", f->kv_dtype);
    o.tp = (int)(f->tp > 0 ? f->tp : 1);
    o.max_model_len = f->pts[0].max_model_len;
    for (int i = 0; i < f->n_points; i++)
        if (f->pts[i].kv_bytes) {
            o.max_model_len = f->pts[i].max_model_len;
            o.kv_cache_memory_bytes = f->pts[i].kv_bytes;
            break;
        }
    if (sw_vllm_plan(c, &o, r, &e)) {
        snprintf(m->why, sizeof(m->why), "memory/vllm on the config: %.400s", e.msg);
        goto out;
    }
    m->have = true;
    m->block = r->block_size;
    m->group_size = r->group_size;
    m->page_per_token = r->block_size ? r->page_bytes / r->block_size : 0;
    for (int g = 0; g < r->n_groups; g++) {
        if (r->groups[g].kind == SW_VLLM_FULL)
            m->attn_groups++;
        else if (r->groups[g].kind == SW_VLLM_MAMBA) {
            m->state_groups++;
            m->state_blocks_base = r->groups[g].blocks_per_request;
        } else {
            snprintf(m->why, sizeof(m->why),
                     "the config has %s layers: the fork-term mapping covers full attention and "
                     "state groups only",
                     sw_vllm_kind_name(r->groups[g].kind));
            goto out;
        }
    }
    m->extra_bytes_lo = INT64_MAX;
    m->extra_bytes_hi = INT64_MIN;
    m->extra_blocks_lo = INT64_MAX;
    m->extra_blocks_hi = INT64_MIN;
    int64_t per_block = m->group_size * m->block; /* token-layers of one block */
    for (int64_t i = 0; i < f->n_solutions; i++) {
        const struct sw_calib_kv_sol *s = &f->sols[i];
        if (s->a != m->attn_groups || s->b != m->block)
            continue;
        int64_t xb = 0;
        if (m->state_groups) {
            if (s->s % m->state_groups)
                continue;
            xb = s->s / m->state_groups - m->state_blocks_base;
            if (s->s / m->state_groups < 1) /* a state group holds at least one block */
                continue;
        } else if (s->s) {
            continue;
        }
        if (per_block <= 0)
            continue;
        int64_t elo = cdiv((int64_t)s->stride_lo, per_block) - m->page_per_token;
        int64_t ehi = (int64_t)(s->stride_hi / (uint64_t)per_block) - m->page_per_token;
        /* a fork adds to the page; K and V themselves cannot shrink */
        if (elo < 0)
            elo = 0;
        if (elo > ehi)
            continue;
        m->explained = true;
        if (f->chosen < 0)
            f->chosen = i;
        if (elo < m->extra_bytes_lo)
            m->extra_bytes_lo = elo;
        if (ehi > m->extra_bytes_hi)
            m->extra_bytes_hi = ehi;
        if (xb < m->extra_blocks_lo)
            m->extra_blocks_lo = xb;
        if (xb > m->extra_blocks_hi)
            m->extra_blocks_hi = xb;
    }
    if (!m->explained) {
        snprintf(m->why, sizeof(m->why),
                 "the config's structure (block %lld, %d attention group%s, %d state group%s of "
                 "%lld blocks, %lld B/token/layer) is not among the feasible solutions (blocks "
                 "%lld..%lld): the config is not this model's, or the fork changes more than the "
                 "page and the state blocks",
                 (long long)m->block, m->attn_groups, m->attn_groups == 1 ? "" : "s",
                 m->state_groups, m->state_groups == 1 ? "" : "s", (long long)m->state_blocks_base,
                 (long long)m->page_per_token, (long long)f->b_lo, (long long)f->b_hi);
        goto out;
    }
    /* Confirm with the real law, every boot, the first fitted terms. */
    m->law_reproduces = true;
    for (int i = 0; i < f->n_points; i++) {
        const struct sw_calib_kv_point *p = &f->pts[i];
        if (!p->kv_bytes)
            continue; /* a pool-less boot constrained the structure only */
        o.max_model_len = p->max_model_len;
        o.kv_cache_memory_bytes = p->kv_bytes;
        o.extra_attn_bytes_per_token = m->extra_bytes_lo;
        o.extra_mamba_blocks = m->extra_blocks_lo;
        if (sw_vllm_plan(c, &o, r, &e) || r->kv_cache_tokens != p->tokens ||
            (p->has_conc && !conc_matches(r->num_gpu_blocks, r->blocks_per_request, p->conc))) {
            m->law_reproduces = false;
            snprintf(m->why, sizeof(m->why),
                     "memory/vllm with extra %lld B/token/layer and %lld state blocks gives %lld "
                     "tokens for boot #%lld (printed %lld)",
                     (long long)m->extra_bytes_lo, (long long)m->extra_blocks_lo,
                     (long long)r->kv_cache_tokens, (long long)p->boot_id, (long long)p->tokens);
            break;
        }
    }
out:
    sw_free(c);
    sw_free(r);
}

static void fmt_count(int64_t v, char *o, size_t n)
{
    sw_fmt_count(v < 0 ? 0 : (uint64_t)v, o, n);
}

/* The boots to fit: each in range; the distinct max_model_lens, the largest (*max_b) and the
 * pinned pools' range. SW_EINVAL for a boot out of range or no pinned pool at all. */
static int check_points(struct sw_calib_kv_fit *f, int64_t *max_b, struct sw_err *e)
{
    int n_pinned = 0;
    *max_b = 0;
    f->n_lens = 0;
    f->kv_lo = UINT64_MAX;
    f->kv_hi = 0;
    for (int i = 0; i < f->n_points; i++) {
        const struct sw_calib_kv_point *p = &f->pts[i];
        if (p->max_model_len <= 0 || p->tokens < 0 || p->max_model_len > (INT64_C(1) << 31) ||
            p->tokens > (INT64_C(1) << 34))
            return sw_err_set(e, SW_EINVAL,
                              "boot #%lld: max_model_len, pool or tokens out of range",
                              (long long)p->boot_id);
        bool seen = false;
        for (int j = 0; j < f->n_lens; j++)
            seen |= f->lens[j] == p->max_model_len;
        if (!seen)
            f->lens[f->n_lens++] = p->max_model_len;
        if (p->max_model_len > *max_b)
            *max_b = p->max_model_len;
        if (!p->kv_bytes)
            continue;
        n_pinned++;
        if (p->kv_bytes < f->kv_lo)
            f->kv_lo = p->kv_bytes;
        if (p->kv_bytes > f->kv_hi)
            f->kv_hi = p->kv_bytes;
    }
    if (!n_pinned)
        return sw_err_set(e, SW_EINVAL,
                          "KV class %s: no boot with a pinned pool (kv_bytes): the block size in "
                          "bytes is not seen",
                          f->klass);
    *max_b = cdiv(*max_b, ALIGN) * ALIGN;
    return 0;
}

/* The ranges the solutions span: B, S, the stride and the bytes per token. */
static void solution_ranges(struct sw_calib_kv_fit *f)
{
    f->b_lo = f->s_lo = INT64_MAX;
    f->b_hi = f->s_hi = 0;
    f->stride_lo = UINT64_MAX;
    f->stride_hi = 0;
    f->bytes_per_token_lo = INFINITY;
    f->bytes_per_token_hi = 0;
    for (int64_t i = 0; i < f->n_solutions; i++) {
        const struct sw_calib_kv_sol *s = &f->sols[i];
        f->b_lo = SW_MIN(f->b_lo, s->b);
        f->b_hi = SW_MAX(f->b_hi, s->b);
        f->s_lo = SW_MIN(f->s_lo, s->s);
        f->s_hi = SW_MAX(f->s_hi, s->s);
        f->stride_lo = SW_MIN(f->stride_lo, s->stride_lo);
        f->stride_hi = SW_MAX(f->stride_hi, s->stride_hi);
        f->bytes_per_token_lo =
            fmin(f->bytes_per_token_lo, (double)s->a * (double)s->stride_lo / (double)s->b);
        f->bytes_per_token_hi =
            fmax(f->bytes_per_token_hi, (double)s->a * (double)s->stride_hi / (double)s->b);
    }
}

/* What the boots taught: the bounded search space, and the boots that a contradiction may lie
 * on ("#12, #14"). */
struct teach {
    int64_t max_b;
    int extra_a;
    bool *use; /* the boots a leave-one-out search uses */
    int n_bad;
    char bad[256];
};

static void note_bad(struct teach *t, const struct sw_calib_kv_point *p)
{
    if (t->n_bad >= 4)
        return;
    size_t bl = strlen(t->bad);
    snprintf(t->bad + bl, sizeof(t->bad) - bl, "%s#%lld", bl ? ", " : "", (long long)p->boot_id);
    t->n_bad++;
}

/* Boot i left out: what the others alone predict for it, and how much it cut the set (in
 * p->taught). */
static int taught_by(struct sw_calib_kv_fit *f, int i, struct teach *t, struct sw_err *e)
{
    struct sw_calib_kv_point *p = &f->pts[i];
    for (int j = 0; j < f->n_points; j++)
        t->use[j] = j != i;
    struct search lo = {.pts = f->pts,
                        .n = f->n_points,
                        .use = t->use,
                        .max_b = t->max_b,
                        .max_s = f->max_s,
                        .max_a = f->max_a,
                        .extra_a = t->extra_a,
                        .keep = true};
    int rc = search_run(&lo);
    if (rc) {
        sw_free(lo.sols);
        return sw_err_set(e, rc, "out of memory");
    }
    char a[32], b[32], c[32], d[32], tk[32];
    fmt_count(p->tokens, tk, sizeof(tk));
    fmt_count(lo.n_sols, c, sizeof(c));
    fmt_count(f->n_solutions, d, sizeof(d));
    int others_pinned = 0;
    for (int j = 0; j < f->n_points; j++)
        others_pinned += j != i && f->pts[j].kv_bytes > 0;
    if (!lo.n_sols) {
        snprintf(p->taught, sizeof(p->taught),
                 "the others alone admit no solution (the contradiction is elsewhere)");
    } else if (!others_pinned) {
        snprintf(p->taught, sizeof(p->taught),
                 "the only boot with a pinned pool: it alone gives the bytes of a block; it cut "
                 "the solutions from %s structures to %s",
                 c, d);
    } else if (!p->kv_bytes) {
        snprintf(p->taught, sizeof(p->taught),
                 "pool not recorded: only that %s tokens is a whole number of blocks at some "
                 "split; it cut the solutions from %s to %s",
                 tk, c, d);
        if (!f->consistent)
            note_bad(t, p);
    } else {
        int64_t tlo, thi, rlo, rhi;
        double clo, chi;
        pred_over(lo.sols, lo.n_sols, p->max_model_len, p->kv_bytes, &tlo, &thi, &clo, &chi, &rlo,
                  &rhi);
        fmt_count(tlo, a, sizeof(a));
        fmt_count(thi, b, sizeof(b));
        bool inside = p->tokens >= tlo && p->tokens <= thi;
        snprintf(p->taught, sizeof(p->taught),
                 "the others predicted %s..%s tokens (printed %s%s); it cut the solutions from %s "
                 "to %s",
                 a, b, tk, inside ? "" : ": OUTSIDE", c, d);
        if (lo.n_sols == f->n_solutions)
            snprintf(p->taught + strlen(p->taught), sizeof(p->taught) - strlen(p->taught),
                     " (nothing the others did not)");
        if (!f->consistent)
            note_bad(t, p);
    }
    sw_free(lo.sols);
    return 0;
}

/* What each boot taught: the whole set's prediction for it, and (up to 16 boots) what the others
 * alone say. */
static int teach_points(struct sw_calib_kv_fit *f, struct teach *t, struct sw_err *e)
{
    for (int i = 0; i < f->n_points; i++) {
        struct sw_calib_kv_point *p = &f->pts[i];
        p->fit_tokens = -1;
        p->fit_conc[0] = 0;
        p->residual_tokens = 0;
        if (f->consistent && p->kv_bytes) {
            int64_t tlo, thi, rlo, rhi;
            double clo, chi;
            pred_over(f->sols, f->n_solutions, p->max_model_len, p->kv_bytes, &tlo, &thi, &clo,
                      &chi, &rlo, &rhi);
            p->fit_tokens = tlo;
            p->residual_tokens = SW_MAX(p->tokens - tlo, thi - p->tokens);
            snprintf(p->fit_conc, sizeof(p->fit_conc), "%.2f", clo);
        }
        if (f->n_points == 1) {
            snprintf(p->taught, sizeof(p->taught), "the only boot: it alone bounds the set");
            continue;
        }
        if (f->n_points > 16) {
            snprintf(p->taught, sizeof(p->taught), "(not computed beyond 16 boots)");
            continue;
        }
        int rc = taught_by(f, i, t, e);
        if (rc)
            return rc;
    }
    return 0;
}

int sw_calib_kv_fit(struct sw_calib_kv_fit *f, const char *config_json, int max_s, int max_a,
                    struct sw_err *e)
{
    int rc = 0;
    struct teach t;
    memset(&t, 0, sizeof(t));
    sw_calib_kv_fit_release(f);
    memset(&f->model, 0, sizeof(f->model));
    f->consistent = false;
    f->why[0] = 0;
    f->chosen = -1;
    if (f->n_points <= 0 || f->n_points > SW_CALIB_MAX_POINTS)
        return sw_err_set(e, SW_EINVAL, "KV class %s: no boots to fit", f->klass);
    f->align = ALIGN;
    f->max_s = max_s > 0 ? SW_MIN(max_s, 4096) : 256;
    f->max_a = max_a > 0 ? SW_MIN(max_a, 16) : 1;
    rc = check_points(f, &t.max_b, e);
    if (rc)
        return rc;
    /* The config's attention group count joins the search. */
    if (config_json) {
        model_map(f, config_json); /* structure only: no solutions yet */
        if (f->model.have)
            t.extra_a = f->model.attn_groups;
        memset(&f->model, 0, sizeof(f->model));
    }
    /* Bounded work: B steps x S values x A values triples, each checked against the boots. A
     * ledger with a max_model_len in the millions would make this minutes; say so instead. */
    double triples =
        (double)(t.max_b / ALIGN) * (double)(f->max_s + 1) * (double)SW_MAX(f->max_a, t.extra_a);
    if (triples > 6.4e7) {
        snprintf(f->why, sizeof(f->why),
                 "not searched: max_model_len %lld with S <= %d is %.0f candidate structures "
                 "(limit 64M); lower --max-state-blocks",
                 (long long)t.max_b, f->max_s, triples);
        return 0;
    }
    struct search sr = {.pts = f->pts,
                        .n = f->n_points,
                        .max_b = t.max_b,
                        .max_s = f->max_s,
                        .max_a = f->max_a,
                        .extra_a = t.extra_a,
                        .keep = true};
    rc = search_run(&sr);
    if (rc) {
        sw_free(sr.sols);
        return sw_err_set(e, rc,
                          rc == SW_ENOMEM ? "out of memory" : "KV class %s: more than %d solutions",
                          f->klass, SW_CALIB_MAX_SOLS);
    }
    f->sols = sr.sols;
    f->n_solutions = sr.n_sols;
    f->consistent = sr.n_sols > 0;
    if (f->consistent) {
        solution_ranges(f);
        if (config_json)
            model_map(f, config_json);
    }
    t.use = sw_calloc((size_t)f->n_points, sizeof(*t.use));
    if (!t.use)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = teach_points(f, &t, e);
    if (rc)
        goto out;
    if (!f->consistent && t.n_bad)
        snprintf(f->why, sizeof(f->why),
                 "no (stride, block, state blocks) reproduces every boot of %s; without boot %s "
                 "the others agree: %s contradicts them (a transcription slip, another engine "
                 "version, or a changed model)",
                 f->klass, t.bad, t.n_bad == 1 ? "it" : "one of them");
    else if (!f->consistent)
        snprintf(f->why, sizeof(f->why),
                 "no (stride, block, state blocks) reproduces every boot of %s, and no single boot "
                 "explains it: the law or the search space (B <= %lld, S <= %d, A <= %d) does not "
                 "fit",
                 f->klass, (long long)t.max_b, f->max_s, f->max_a);
out:
    sw_free(t.use);
    return rc;
}

int sw_calib_kv_predict(const struct sw_calib_kv_fit *f, int64_t L, uint64_t k,
                        struct sw_calib_kv_pred *out, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    if (!f->consistent || !f->n_solutions)
        return sw_err_set(e, SW_EMISMATCH, "KV class %s has no consistent fit", f->klass);
    if (L <= 0 || L > (INT64_C(1) << 31) || k == 0)
        return sw_err_set(e, SW_EINVAL, "max_model_len and pool must be positive");
    int64_t tlo, thi, rlo, rhi;
    pred_over(f->sols, f->n_solutions, L, k, &tlo, &thi, &out->conc_lo, &out->conc_hi, &rlo, &rhi);
    out->tokens.lo = tlo;
    out->tokens.hi = thi;
    out->blocks_per_request.lo = rlo;
    out->blocks_per_request.hi = rhi;
    if (f->chosen >= 0) {
        int64_t a, b, c, d;
        double x, y;
        pred_over(&f->sols[f->chosen], 1, L, k, &a, &b, &x, &y, &c, &d);
        out->tokens.point = a;
        out->blocks_per_request.point = c;
    } else {
        out->tokens.point = tlo + (thi - tlo) / 2;
        out->blocks_per_request.point = rlo + (rhi - rlo) / 2;
    }
    bool in_geo = false;
    for (int i = 0; i < f->n_lens; i++)
        in_geo |= f->lens[i] == L;
    if (!in_geo) {
        out->tokens.extrapolated = out->blocks_per_request.extrapolated = true;
        char fit[160] = "";
        size_t n = 0;
        for (int i = 0; i < f->n_lens && n + 16 < sizeof(fit); i++)
            n += (size_t)snprintf(fit + n, sizeof(fit) - n, "%s%lld", i ? ", " : "",
                                  (long long)f->lens[i]);
        snprintf(out->warning, sizeof(out->warning),
                 "EXTRAPOLATES across geometry: max_model_len %lld was not fitted (fitted: %s); "
                 "the interval spans every solution consistent with the fitted boots",
                 (long long)L, fit);
    } else if (k < f->kv_lo || k > f->kv_hi) {
        snprintf(out->warning, sizeof(out->warning),
                 "pool %llu B is outside the fitted %llu..%llu B (same geometry: the block law "
                 "holds, the interval covers the stride's range)",
                 (unsigned long long)k, (unsigned long long)f->kv_lo, (unsigned long long)f->kv_hi);
    }
    return 0;
}

int sw_calib_kv_need(const struct sw_calib_kv_fit *f, int64_t L, int64_t seqs, uint64_t *lo,
                     uint64_t *hi, bool *extrapolated, struct sw_err *e)
{
    if (!f->consistent || !f->n_solutions)
        return sw_err_set(e, SW_EMISMATCH, "KV class %s has no consistent fit", f->klass);
    if (L <= 0 || L > (INT64_C(1) << 31) || seqs <= 0 || seqs > 65536)
        return sw_err_set(e, SW_EINVAL, "max_model_len and seqs must be positive");
    uint64_t mn = UINT64_MAX, mx = 0;
    for (int64_t i = 0; i < f->n_solutions; i++) {
        const struct sw_calib_kv_sol *s = &f->sols[i];
        uint64_t r = (uint64_t)((int64_t)s->a * cdiv(L, s->b) + s->s);
        /* concurrency N / R >= seqs needs N = seqs x R blocks of stride bytes */
        uint64_t blocks = (uint64_t)seqs * r;
        uint64_t a = blocks * s->stride_lo, b = blocks * s->stride_hi;
        mn = SW_MIN(mn, a);
        mx = SW_MAX(mx, b);
    }
    *lo = mn;
    *hi = mx;
    if (extrapolated) {
        bool in_geo = false;
        for (int i = 0; i < f->n_lens; i++)
            in_geo |= f->lens[i] == L;
        *extrapolated = !in_geo;
    }
    return 0;
}
