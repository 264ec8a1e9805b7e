/*
 * sim calibration: the timing model (sim.h, struct sw_sim_timing) fitted to measured points.
 *
 * The fit does not invert a closed formula of "tok/s at depth D and concurrency C": what a bench
 * measures against the sim depends on the scheduler (a request that arrives during a step waits
 * for the next one; a stream's prefill stalls the others' decode), so the model is fitted through
 * a replica of the scheduler on a virtual clock (sw_sim_predict): the terms that make the replica
 * show what the bench showed. The replica follows sim_sched.c's rules (admission at step ends,
 * one token per sequence per step, the first token out of the prefill step, the step cost of
 * sw_sim_step_us); tests/real/test_sim_fit.c checks the live sim against the real engine.
 *
 * Points come from a bench --json document (closed-loop sweep points, per-stream medians) or from
 * the operator's declared figures (fleet facts named decode*ctxN / prefill*ctxN, tok/s).
 *
 * What it does not do: fit the vLLM pool's preemption (the replica has no pool), or a term the
 * points cannot tell apart (it is kept from the starting model).
 */
#include "sim_internal.h"

#include <slipway/fleet.h>

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double sw_sim_step_us(const struct sw_sim_timing *t, int decoding, double kv_decoding,
                      size_t n_prefill, const double *prefill_n, const double *prefill_k0)
{
    double us = 0;
    if (decoding > 0) /* the decode part: an intercept (negative when a batch of 2 costs more
                       * than twice one, as on a CPU) and the per-sequence and per-KV costs */
        us = SW_MAX(t->decode_base_us + t->decode_per_seq_us * decoding +
                        t->decode_per_kv_us * kv_decoding / 1000.0,
                    0.0);
    if (n_prefill)
        us += t->prefill_step_us;
    double all = 0, top = 0;
    for (size_t i = 0; i < n_prefill; i++) {
        double n = prefill_n[i], k0 = prefill_k0 ? prefill_k0[i] : 0.0;
        double one = t->prefill_base_us + t->prefill_per_token_us * n +
                     t->prefill_per_kv_us * (n * k0 + n * (n - 1.0) / 2.0) / 1000.0;
        all += one;
        top = SW_MAX(top, one);
    }
    /* the costliest prompt in full, the others at the batch's share */
    double share = t->prefill_batch_share > 0 ? t->prefill_batch_share : 1.0;
    us += top + share * (all - top);
    return us > 0 ? us : 0;
}

/* ---------------------------------------------------------------------------------------------
 * The replica.
 */
#define PRED_MAX_REQ     2048
#define PRED_MAX_RUN     256
#define PRED_SEND_GAP_US 30.0  /* between the sends of one burst of a closed-loop client */
#define PRED_RTT_US      300.0 /* a stream's next request after its previous one ended */

struct preq {
    double t_arrive, t_first, t_last;
    int64_t n_gen;
    int stream;
    bool prefilled;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

void sw_sim_predict(const struct sw_sim_timing *t, int n_slots, int64_t batch_tokens,
                    const struct sw_sim_point *p, double *decode_tps, double *prefill_tps)
{
    int c = p->concurrency > 0 ? p->concurrency : 1;
    if (c > PRED_MAX_RUN)
        c = PRED_MAX_RUN;
    int reps = p->repeat > 0 ? p->repeat : 1;
    if ((int64_t)c * reps > PRED_MAX_REQ)
        reps = PRED_MAX_REQ / c;
    int total = c * reps;
    int slots = n_slots > 0 ? SW_MIN(n_slots, PRED_MAX_RUN) : c;
    int64_t tg = p->tg > 0 ? p->tg : 1;
    double P = p->prompt_tokens > 1 ? floor(p->prompt_tokens + 0.5) : 1.0;
    double next_arr[PRED_MAX_RUN];
    int left[PRED_MAX_RUN];
    static _Thread_local struct preq reqs[PRED_MAX_REQ];
    static _Thread_local double dec[PRED_MAX_REQ], pre[PRED_MAX_REQ];
    int queue[PRED_MAX_REQ];
    int slot[PRED_MAX_RUN]; /* request in each slot, -1 when free (the live sim's slots[]) */
    double chunk[PRED_MAX_RUN], done_tok[PRED_MAX_RUN];
    double pn[PRED_MAX_RUN], pk[PRED_MAX_RUN];
    int qh = 0, qt = 0, nrun = 0, nreq = 0, done = 0;
    size_t nd = 0, np = 0;
    double now = -1; /* idle before the first send */

    for (int i = 0; i < c; i++) {
        next_arr[i] = i * PRED_SEND_GAP_US;
        left[i] = reps;
    }
    for (int i = 0; i < slots; i++)
        slot[i] = -1;
    while (done < total) {
        /* arrivals up to now join the queue in time order */
        for (;;) {
            int who = -1;
            for (int i = 0; i < c; i++)
                if (next_arr[i] <= now && (who < 0 || next_arr[i] < next_arr[who]))
                    who = i;
            if (who < 0 || nreq >= PRED_MAX_REQ)
                break;
            struct preq *r = &reqs[nreq];
            memset(r, 0, sizeof(*r));
            r->t_arrive = next_arr[who];
            r->stream = who;
            queue[qt++] = nreq++;
            next_arr[who] = INFINITY;
        }
        for (int i = 0; i < slots && qh < qt; i++) /* the lowest free slot first */
            if (slot[i] < 0) {
                slot[i] = queue[qh++];
                done_tok[i] = 0;
                nrun++;
            }
        if (!nrun) { /* idle: the next arrival opens the batch window */
            double nx = INFINITY;
            for (int i = 0; i < c; i++)
                nx = SW_MIN(nx, next_arr[i]);
            if (!isfinite(nx))
                break;
            now = nx + SW_MAX(t->batch_window_us, 0.0);
            continue;
        }
        /* the step: decodes first, then prompts (those under way first) within the budget */
        int decoding = 0;
        size_t npf = 0;
        double kv = 0;
        double budget = batch_tokens > 0 ? (double)batch_tokens : INFINITY;
        for (int i = 0; i < slots; i++) {
            chunk[i] = -1; /* not in the step */
            if (slot[i] >= 0 && reqs[slot[i]].prefilled) {
                decoding++;
                kv += P + (double)reqs[slot[i]].n_gen;
                chunk[i] = 0;
                budget -= 1;
            }
        }
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < slots && budget > 0; i++) {
                if (slot[i] < 0 || reqs[slot[i]].prefilled || chunk[i] >= 0 ||
                    (pass == 0 && done_tok[i] <= 0))
                    continue;
                double want = P - done_tok[i];
                chunk[i] = want < budget ? want : budget;
                budget -= chunk[i];
                pn[npf] = chunk[i];
                pk[npf++] = done_tok[i];
            }
        double end = now + sw_sim_step_us(t, decoding, kv, npf, pn, pk);
        if (!(end > now))
            end = now + 1e-3; /* a zero-cost model still advances */
        for (int i = 0; i < slots; i++) {
            if (slot[i] < 0 || chunk[i] < 0)
                continue;
            struct preq *r = &reqs[slot[i]];
            if (!r->prefilled) {
                done_tok[i] += chunk[i];
                if (done_tok[i] < P)
                    continue;
                r->prefilled = true;
                r->t_first = end;
            }
            r->n_gen++;
            r->t_last = end;
            if (r->n_gen < tg)
                continue;
            if (tg >= 2 && r->t_last > r->t_first)
                dec[nd++] = (double)(tg - 1) * 1e6 / (r->t_last - r->t_first);
            if (r->t_first > r->t_arrive)
                pre[np++] = P * 1e6 / (r->t_first - r->t_arrive);
            done++;
            if (--left[r->stream] > 0)
                next_arr[r->stream] = end + PRED_RTT_US;
            slot[i] = -1;
            nrun--;
        }
        now = end;
    }
    *decode_tps = median(dec, nd);
    *prefill_tps = median(pre, np);
}

/* ---------------------------------------------------------------------------------------------
 * The fit.
 */
#define NPAR 8

static double *par(struct sw_sim_timing *t, int i)
{
    double *const f[NPAR] = {
        &t->decode_base_us,  &t->decode_per_seq_us, &t->decode_per_kv_us, &t->prefill_per_token_us,
        &t->prefill_base_us, &t->prefill_per_kv_us, &t->prefill_step_us,  &t->prefill_batch_share};
    return f[i];
}

static bool has(double v)
{
    return isfinite(v) && v > 0;
}

struct fitctx {
    const struct sw_sim_point *pts;
    size_t n;
    int n_slots;
    int64_t batch_tokens;
    struct sw_sim_timing base;
    int idx[NPAR]; /* the free parameters */
    int nfree;
};

static void apply(const struct fitctx *f, const double *x, struct sw_sim_timing *t)
{
    *t = f->base;
    for (int k = 0; k < f->nfree; k++)
        *par(t, f->idx[k]) = f->idx[k] == 0 ? x[k] * 1000.0 : exp(x[k]);
}

/* The squared log errors summed; the worst and the RMS relative error when asked. */
static double objective(const struct fitctx *f, const struct sw_sim_timing *t, double *max_pct,
                        double *rms_pct, size_t *ntarget)
{
    double sum = 0, worst = 0, sq = 0;
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        const struct sw_sim_point *p = &f->pts[i];
        if (!has(p->decode_tps) && !has(p->prefill_tps))
            continue;
        double d, pf;
        sw_sim_predict(t, f->n_slots, f->batch_tokens, p, &d, &pf);
        const double meas[2] = {p->decode_tps, p->prefill_tps}, pred[2] = {d, pf};
        for (int j = 0; j < 2; j++) {
            if (!has(meas[j]))
                continue;
            k++;
            if (!has(pred[j])) {
                sum += 100.0;
                worst = INFINITY;
                continue;
            }
            double l = log(pred[j] / meas[j]);
            sum += l * l;
            double rel = 100.0 * fabs(pred[j] - meas[j]) / meas[j];
            worst = SW_MAX(worst, rel);
            sq += rel * rel;
        }
    }
    if (max_pct)
        *max_pct = worst;
    if (rms_pct)
        *rms_pct = k ? sqrt(sq / (double)k) : 0;
    if (ntarget)
        *ntarget = k;
    return sum;
}

static double eval(const struct fitctx *f, const double *x)
{
    struct sw_sim_timing t;
    apply(f, x, &t);
    return objective(f, &t, NULL, NULL, NULL);
}

/* Nelder-Mead (reflection 1, expansion 2, contraction 1/2, shrink 1/2) from x, in place. */
static void nelder_mead(const struct fitctx *f, double *x, int iters)
{
    int n = f->nfree;
    double s[NPAR + 1][NPAR], fv[NPAR + 1], c[NPAR], xr[NPAR], xe[NPAR], xc[NPAR];
    for (int i = 0; i <= n; i++) {
        memcpy(s[i], x, sizeof(double) * (size_t)n);
        if (i)
            s[i][i - 1] += 0.7;
        fv[i] = eval(f, s[i]);
    }
    for (int it = 0; it < iters; it++) {
        /* order: best first */
        for (int i = 1; i <= n; i++)
            for (int j = i; j > 0 && fv[j] < fv[j - 1]; j--) {
                double tv = fv[j];
                fv[j] = fv[j - 1];
                fv[j - 1] = tv;
                for (int k = 0; k < n; k++) {
                    double tx = s[j][k];
                    s[j][k] = s[j - 1][k];
                    s[j - 1][k] = tx;
                }
            }
        if (fabs(fv[n] - fv[0]) < 1e-10 * (1.0 + fabs(fv[0])) && it > 20)
            break;
        for (int k = 0; k < n; k++) {
            c[k] = 0;
            for (int i = 0; i < n; i++)
                c[k] += s[i][k] / n;
        }
        for (int k = 0; k < n; k++)
            xr[k] = c[k] + (c[k] - s[n][k]);
        double fr = eval(f, xr);
        if (fr < fv[0]) {
            for (int k = 0; k < n; k++)
                xe[k] = c[k] + 2.0 * (c[k] - s[n][k]);
            double fe = eval(f, xe);
            memcpy(s[n], fe < fr ? xe : xr, sizeof(double) * (size_t)n);
            fv[n] = fe < fr ? fe : fr;
        } else if (fr < fv[n - 1]) {
            memcpy(s[n], xr, sizeof(double) * (size_t)n);
            fv[n] = fr;
        } else {
            for (int k = 0; k < n; k++)
                xc[k] = c[k] + 0.5 * (s[n][k] - c[k]);
            double fc = eval(f, xc);
            if (fc < fv[n]) {
                memcpy(s[n], xc, sizeof(double) * (size_t)n);
                fv[n] = fc;
            } else {
                for (int i = 1; i <= n; i++) {
                    for (int k = 0; k < n; k++)
                        s[i][k] = s[0][k] + 0.5 * (s[i][k] - s[0][k]);
                    fv[i] = eval(f, s[i]);
                }
            }
        }
    }
    int best = 0;
    for (int i = 1; i <= n; i++)
        if (fv[i] < fv[best])
            best = i;
    memcpy(x, s[best], sizeof(double) * (size_t)n);
}

/* Distinct values (within 10%) of a figure's points, up to 3. */
static int distinct(const struct sw_sim_point *pts, size_t n, bool decode, bool by_conc)
{
    double seen[3];
    int k = 0;
    for (size_t i = 0; i < n && k < 3; i++) {
        if (!has(decode ? pts[i].decode_tps : pts[i].prefill_tps))
            continue;
        double v = by_conc ? (double)pts[i].concurrency : pts[i].prompt_tokens;
        bool dup = false;
        for (int j = 0; j < k; j++)
            dup |= fabs(v - seen[j]) <= 0.1 * SW_MAX(fabs(seen[j]), 1.0);
        if (!dup)
            seen[k++] = v;
    }
    return k;
}

/* A first guess from the single-stream figures, in closed form: a decode step of a stream at
 * mean depth d costs base + seq + kv*d/1000; a prefill of P tokens costs base + prefill. */
static void first_guess(const struct sw_sim_point *pts, size_t n, struct sw_sim_timing *t,
                        unsigned free)
{
    double lo_d = INFINITY, hi_d = 0, y_lo = 0, y_hi = 0;
    double pf_tok = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const struct sw_sim_point *p = &pts[i];
        double depth = p->prompt_tokens + (double)p->tg / 2.0;
        if (has(p->decode_tps) && p->concurrency <= 1) {
            double y = 1e6 / p->decode_tps;
            if (depth < lo_d) {
                lo_d = depth;
                y_lo = y;
            }
            if (depth > hi_d) {
                hi_d = depth;
                y_hi = y;
            }
        }
        if (has(p->prefill_tps) && p->prompt_tokens >= 1)
            pf_tok = SW_MIN(pf_tok, 1e6 / p->prefill_tps);
    }
    if (isfinite(lo_d)) {
        double kv = hi_d > lo_d ? (y_hi - y_lo) / ((hi_d - lo_d) / 1000.0) : 0;
        if (free & SW_SIM_FIT_DECODE_KV)
            t->decode_per_kv_us = SW_MAX(kv, y_lo * 1e-3);
        double rest = y_lo - t->decode_per_kv_us * lo_d / 1000.0;
        rest = SW_MAX(rest, y_lo * 0.5);
        if (free & SW_SIM_FIT_DECODE_SEQ) {
            t->decode_per_seq_us = rest * 0.2;
            rest *= 0.8;
        }
        if (free & SW_SIM_FIT_DECODE_BASE)
            t->decode_base_us = rest - ((free & SW_SIM_FIT_DECODE_SEQ) ? 0 : t->decode_per_seq_us);
        if (t->decode_base_us <= 0)
            t->decode_base_us = rest * 0.5;
    }
    if (isfinite(pf_tok)) {
        if (free & SW_SIM_FIT_PREFILL_TOKEN)
            t->prefill_per_token_us = pf_tok * 0.7;
        if (free & SW_SIM_FIT_PREFILL_BASE)
            t->prefill_base_us = SW_MAX(t->prefill_base_us, 100.0);
        if (free & SW_SIM_FIT_PREFILL_KV)
            t->prefill_per_kv_us = SW_MAX(t->prefill_per_kv_us, pf_tok * 0.01);
        if (free & SW_SIM_FIT_PREFILL_STEP)
            t->prefill_step_us = SW_MAX(t->prefill_step_us, 100.0);
        if ((free & SW_SIM_FIT_PREFILL_SHARE) && !(t->prefill_batch_share > 0))
            t->prefill_batch_share = 1.0;
    }
}

int sw_sim_fit(const struct sw_sim_point *pts, size_t n, int n_slots, int64_t batch_tokens,
               const struct sw_sim_timing *start, struct sw_sim_fit *out, struct sw_err *e)
{
    struct fitctx f;
    memset(&f, 0, sizeof(f));
    memset(out, 0, sizeof(*out));
    if (start) {
        f.base = *start;
    } else {
        struct sw_sim_config c;
        sw_sim_config_init(&c);
        f.base = c.timing;
    }
    f.pts = pts;
    f.n = n;
    f.n_slots = n_slots;
    f.batch_tokens = batch_tokens;
    int dec_depths = distinct(pts, n, true, false), dec_conc = distinct(pts, n, true, true);
    int pf_depths = distinct(pts, n, false, false), pf_conc = distinct(pts, n, false, true);
    if (!dec_depths && !pf_depths)
        return sw_err_set(e, SW_EINVAL, "sim fit: no point has a decode or prefill figure");
    unsigned free = 0;
    if (dec_depths) {
        free |= SW_SIM_FIT_DECODE_BASE;
        if (dec_conc >= 2)
            free |= SW_SIM_FIT_DECODE_SEQ;
        if (dec_depths >= 2)
            free |= SW_SIM_FIT_DECODE_KV;
    }
    if (pf_depths) {
        free |= SW_SIM_FIT_PREFILL_TOKEN;
        if (pf_depths >= 2)
            free |= SW_SIM_FIT_PREFILL_BASE;
        if (pf_depths >= 3)
            free |= SW_SIM_FIT_PREFILL_KV;
        if (pf_conc >= 2 && pf_depths >= 2)
            free |= SW_SIM_FIT_PREFILL_STEP;
        if (pf_conc >= 2 && pf_depths >= 2) /* a per-step cost and a per-prompt share apart */
            free |= SW_SIM_FIT_PREFILL_SHARE;
    }
    if (!(free & SW_SIM_FIT_DECODE_SEQ) && dec_depths)
        f.base.decode_per_seq_us = 0; /* single-stream figures: a step's cost is all in base */
    first_guess(pts, n, &f.base, free);
    double x[NPAR];
    for (int i = 0; i < NPAR; i++) {
        if (!(free & (1u << i)))
            continue;
        f.idx[f.nfree] = i;
        /* the decode intercept may be negative: fitted in ms; the others in their logs */
        x[f.nfree++] = i == 0 ? *par(&f.base, i) / 1000.0 : log(SW_MAX(*par(&f.base, i), 1e-3));
    }
    /* three rounds from the best so far: Nelder-Mead stalls on a flat simplex */
    for (int round = 0; round < 3; round++)
        nelder_mead(&f, x, 300 * f.nfree);
    apply(&f, x, &out->timing);
    objective(&f, &out->timing, &out->max_err_pct, &out->rms_err_pct, &out->n_targets);
    out->fitted = free;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Points.
 */
static int push(struct sw_sim_point **pts, size_t *n, const struct sw_sim_point *p,
                struct sw_err *e)
{
    struct sw_sim_point *g = sw_realloc(*pts, (*n + 1) * sizeof(*g));
    if (!g)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    g[*n] = *p;
    *pts = g;
    (*n)++;
    return 0;
}

static double median_of(const json_t *spread)
{
    const json_t *m = json_object_get(spread, "median");
    return json_is_number(m) ? json_number_value(m) : NAN;
}

int sw_sim_points_from_bench(const json_t *doc, const char *source, struct sw_sim_point **pts,
                             size_t *n, struct sw_err *e)
{
    const char *mode = json_string_value(json_object_get(doc, "mode"));
    if (mode && strcmp(mode, "sweep"))
        return 0;
    const json_t *a = json_object_get(doc, "points");
    if (!json_is_array(a))
        return sw_err_set(e, SW_EINVAL, "%s: no \"points\" array (a bench --json document?)",
                          source ? source : "bench");
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *o = json_array_get(a, i);
        int64_t req = json_integer_value(json_object_get(o, "requests"));
        int64_t failed = json_integer_value(json_object_get(o, "failed"));
        int64_t conc = json_integer_value(json_object_get(o, "concurrency"));
        int64_t ok = req - failed;
        if (ok <= 0 || conc < 1 || req < 1)
            continue;
        struct sw_sim_point p;
        memset(&p, 0, sizeof(p));
        p.depth = json_integer_value(json_object_get(o, "depth"));
        p.concurrency = (int)conc;
        p.repeat = (int)SW_MAX(req / conc, 1);
        p.prompt_tokens =
            (double)json_integer_value(json_object_get(o, "prompt_tokens")) / (double)ok;
        p.tg = (int64_t)floor(
            (double)json_integer_value(json_object_get(o, "completion_tokens")) / (double)ok + 0.5);
        p.decode_tps = median_of(json_object_get(o, "decode_tps"));
        p.prefill_tps = median_of(json_object_get(o, "prefill_tps"));
        snprintf(p.source, sizeof(p.source), "%s", source ? source : "bench");
        int rc = push(pts, n, &p, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* The points of one workload (depth, concurrency, tg, prompt tokens within 10%: a bench run meets
 * its depth to a few percent, and which few differs between runs) measured in
 * several runs merged into one carrying each figure's median over the runs: on a shared machine
 * one run's figure moves 20-50% with the load, and a least-squares fit over every run's points
 * leans towards the runs that happened to be slow; the median of the runs does not. */
void sw_sim_points_pool(struct sw_sim_point *pts, size_t *n)
{
    size_t out = 0;
    for (size_t i = 0; i < *n; i++) {
        struct sw_sim_point p = pts[i];
        if (p.repeat < 0) /* merged into an earlier one */
            continue;
        double dv[64], pv[64];
        size_t nd = 0, np = 0, runs = 0;
        double prompt = 0;
        int repeat = 0;
        for (size_t j = i; j < *n; j++) {
            struct sw_sim_point *q = &pts[j];
            if (q->repeat < 0 || q->depth != p.depth || q->concurrency != p.concurrency ||
                q->tg != p.tg ||
                fabs(q->prompt_tokens - p.prompt_tokens) > 0.10 * SW_MAX(p.prompt_tokens, 1.0))
                continue;
            if (runs >= SW_ARRAY_LEN(dv))
                break; /* the rest stays a point of its own */
            if (has(q->decode_tps))
                dv[nd++] = q->decode_tps;
            if (has(q->prefill_tps))
                pv[np++] = q->prefill_tps;
            prompt += q->prompt_tokens;
            repeat += q->repeat > 0 ? q->repeat : 1;
            runs++;
            if (j != i)
                q->repeat = -1;
        }
        p.prompt_tokens = prompt / (double)runs;
        p.repeat = SW_MAX(repeat / (int)runs, 1); /* the workload of one run */
        p.decode_tps = nd ? median(dv, nd) : NAN;
        p.prefill_tps = np ? median(pv, np) : NAN;
        if (runs > 1) {
            char src[sizeof(p.source)];
            snprintf(src, sizeof(src), "%s", p.source);
            snprintf(p.source, sizeof(p.source), "median of %zu runs (%.40s, ...)", runs, src);
        }
        pts[out++] = p;
    }
    *n = out;
}

/* The number after `key` in name ("ctx" in "decode_bf16_ctx4064"), -1 when absent. */
static int64_t number_after(const char *name, const char *key)
{
    for (const char *p = strstr(name, key); p; p = strstr(p + 1, key)) {
        const char *d = p + strlen(key);
        if (!isdigit((unsigned char)*d))
            continue;
        if (p > name && isalnum((unsigned char)p[-1]) && strcmp(key, "ctx"))
            continue; /* "_c2", not "bloc2" */
        return strtoll(d, NULL, 10);
    }
    return -1;
}

int sw_sim_points_from_fleet(const struct sw_fleet_endpoint *ep, struct sw_sim_point **pts,
                             size_t *n, struct sw_err *e)
{
    for (size_t i = 0; i < ep->n_facts; i++) {
        const struct sw_fleet_fact *ft = &ep->facts[i];
        bool dec = !strncmp(ft->name, "decode", 6), pre = !strncmp(ft->name, "prefill", 7);
        if ((!dec && !pre) || !ft->q.unit || strcmp(ft->q.unit, "token/s"))
            continue;
        int64_t ctx = number_after(ft->name, "ctx");
        if (ctx < 0)
            continue; /* a figure at no stated context: not a point */
        int64_t conc = number_after(ft->name, "_c");
        struct sw_sim_point p;
        memset(&p, 0, sizeof(p));
        p.depth = ctx;
        p.prompt_tokens = (double)ctx;
        p.concurrency = conc > 0 ? (int)conc : 1;
        p.repeat = 1;
        p.tg = 64;
        p.decode_tps = dec ? ft->q.value : NAN;
        p.prefill_tps = pre ? ft->q.value : NAN;
        snprintf(p.source, sizeof(p.source), "fact %s", ft->name);
        int rc = push(pts, n, &p, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The fit's JSON.
 */
static const char *const par_names[NPAR] = {
    "decode_base_us",  "decode_per_seq_us", "decode_per_kv_us", "prefill_per_token_us",
    "prefill_base_us", "prefill_per_kv_us", "prefill_step_us",  "prefill_batch_share"};

json_t *sw_sim_timing_json(const struct sw_sim_timing *t)
{
    json_t *o = json_object();
    struct sw_sim_timing c = *t;
    int bad = !o;
    for (int i = 0; o && i < NPAR; i++)
        bad |= sw_json_set_real(o, par_names[i], *par(&c, i));
    if (o)
        bad |= sw_json_set_real(o, "batch_window_us", c.batch_window_us);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int sw_sim_timing_from_json(const json_t *j, const char *where, struct sw_sim_timing *t,
                            struct sw_err *e)
{
    if (!json_is_object(j))
        return sw_err_set(e, SW_EINVAL, "%s: the timing is not an object", where);
    for (int i = 0; i < NPAR; i++) {
        const json_t *v = json_object_get(j, par_names[i]);
        if (!v)
            continue;
        /* the decode intercept may be negative (sim.h) */
        if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
            (i && json_number_value(v) < 0))
            return sw_err_set(e, SW_EINVAL, "%s: timing.%s must be a number%s", where, par_names[i],
                              i ? " >= 0" : "");
        *par(t, i) = json_number_value(v);
    }
    const json_t *w = json_object_get(j, "batch_window_us");
    if (w && (!json_is_number(w) || !(json_number_value(w) >= 0)))
        return sw_err_set(e, SW_EINVAL, "%s: timing.batch_window_us must be a number >= 0", where);
    if (w)
        t->batch_window_us = json_number_value(w);
    return 0;
}

int sw_sim_timing_load(const char *path, struct sw_sim_timing *t, struct sw_err *e)
{
    json_t *j = sw_json_load_file(path, 1u << 20, e);
    if (!j)
        return e ? e->code : SW_EINVAL;
    const json_t *tj = json_object_get(j, "timing");
    int rc = sw_sim_timing_from_json(tj ? tj : j, path, t, e);
    json_decref(j);
    return rc;
}
