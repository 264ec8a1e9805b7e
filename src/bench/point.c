/*
 * bench/point: a point's summaries once its samples are in (histograms, spreads, token sums, the
 * cache and count checks, goodput, why requests failed), and the client's own cost over it (the
 * loop thread's CPU against the wall time).
 *
 * What it does not do: run anything, or judge the points together (verdicts.c).
 */
#include "run_internal.h"

#include <math.h>
#include <string.h>
#include <time.h>

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The client's own cost over a point: the loop thread's CPU and the wall time it ran in. */
void sw__bench_cost_begin(struct sw_bench_point *pt)
{
    pt->client_cpu_s = thread_cpu_s();
    pt->client_wall_s = (double)sw_now_ns() / 1e9;
}

void sw__bench_cost_end(struct sw_bench_point *pt)
{
    pt->client_cpu_s = thread_cpu_s() - pt->client_cpu_s;
    pt->client_wall_s = (double)sw_now_ns() / 1e9 - pt->client_wall_s;
}

int sw__bench_point_init(struct sw_bench_point *pt, int64_t depth, int conc, size_t cap)
{
    memset(pt, 0, sizeof(*pt));
    pt->depth = depth;
    pt->concurrency = conc;
    pt->samples = sw_calloc(cap ? cap : 1, sizeof(*pt->samples));
    if (!pt->samples)
        return SW_ENOMEM;
    struct sw_bench_hist *h[] = {&pt->ttft, &pt->ttft_sent, &pt->ttfc,      &pt->e2e, &pt->e2e_sent,
                                 &pt->tpot, &pt->itl_tok,   &pt->itl_chunk, &pt->lag, &pt->emit};
    for (size_t i = 0; i < SW_ARRAY_LEN(h); i++)
        sw_bench_hist_init(h[i]);
    return 0;
}

static void add_s(struct sw_bench_hist *h, double s)
{
    if (isfinite(s) && s >= 0)
        sw_bench_hist_add(h, (uint64_t)(s * 1e9));
}

/* Why a point's requests failed: each distinct error counted (the first 16 kinds; the rest
 * only in the total), the most frequent SW_BENCH_REASONS kept. */
static void point_reasons(struct sw_bench_point *pt)
{
    struct {
        const char *why;
        size_t n;
    } seen[16];
    size_t nseen = 0;
    for (size_t i = 0; i < pt->nsamples; i++) {
        const struct sw_bench_sample *s = &pt->samples[i];
        if (!s->rc)
            continue;
        size_t k = 0;
        while (k < nseen && strcmp(seen[k].why, s->error))
            k++;
        if (k < nseen) {
            seen[k].n++;
        } else if (nseen < SW_ARRAY_LEN(seen)) {
            seen[nseen].why = s->error;
            seen[nseen++].n = 1;
        }
    }
    /* most frequent first; the first seen first among equals */
    for (size_t i = 1; i < nseen; i++)
        for (size_t k = i; k > 0 && seen[k].n > seen[k - 1].n; k--) {
            const char *w = seen[k].why;
            size_t n = seen[k].n;
            seen[k] = seen[k - 1];
            seen[k - 1].why = w;
            seen[k - 1].n = n;
        }
    size_t kept = 0;
    pt->nreasons = SW_MIN(nseen, (size_t)SW_BENCH_REASONS);
    for (size_t i = 0; i < pt->nreasons; i++) {
        snprintf(pt->reasons[i].why, sizeof(pt->reasons[i].why), "%s", seen[i].why);
        pt->reasons[i].n = seen[i].n;
        kept += seen[i].n;
    }
    pt->reasons_other = pt->failed - kept;
}

/* Summaries of a point whose samples are in. */
void sw__bench_point_close(struct sw_bench_point *pt)
{
    size_t n = pt->nsamples;
    double *dec = sw_calloc(n ? n : 1, sizeof(double));
    double *pre = sw_calloc(n ? n : 1, sizeof(double));
    double *ttft = sw_calloc(n ? n : 1, sizeof(double));
    double *sdec = sw_calloc(n ? n : 1, sizeof(double));
    double *diff = sw_calloc(n ? n : 1, sizeof(double));
    double *spre = sw_calloc(n ? n : 1, sizeof(double));
    double *pdiff = sw_calloc(n ? n : 1, sizeof(double));
    bool arrays = dec && pre && ttft && sdec && diff && spre && pdiff;
    uint64_t t_first = UINT64_MAX, t_last = 0;
    double dec_sum = 0;
    size_t dec_n = 0;
    pt->cache_checked = n > 0;
    pt->counts_agree = true;
    pt->cached_max = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_bench_sample *s = &pt->samples[i];
        double nan = NAN;
        if (arrays)
            dec[i] = pre[i] = ttft[i] = sdec[i] = diff[i] = spre[i] = pdiff[i] = nan;
        if (s->rc) {
            pt->failed++;
            pt->invalid += s->invalid;
            continue;
        }
        add_s(&pt->ttft, s->ttft_s);
        add_s(&pt->ttft_sent, s->ttft_sent_s);
        add_s(&pt->ttfc, s->ttfc_s);
        add_s(&pt->e2e, s->e2e_s);
        add_s(&pt->e2e_sent, s->e2e_sent_s);
        add_s(&pt->tpot, s->tpot_s);
        add_s(&pt->lag, s->send_lag_s);
        if (arrays) {
            spre[i] = s->srv_prompt_tps;
            pdiff[i] = s->prefill_diff_pct;
            dec[i] = s->decode_tps;
            pre[i] = s->prefill_tps;
            ttft[i] = s->ttft_s;
            sdec[i] = s->srv_decode_tps;
            diff[i] = s->decode_diff_pct;
        }
        if (isfinite(s->decode_tps)) {
            dec_sum += s->decode_tps;
            dec_n++;
        }
        pt->tokens_out += SW_MAX(s->completion_tokens, (int64_t)0);
        pt->tokens_in += SW_MAX(s->prompt_tokens, (int64_t)0);
        pt->reasoning_tokens += SW_MAX(s->reasoning_tokens, (int64_t)0);
        if (s->cached_tokens < 0)
            pt->cache_checked = false;
        else
            pt->cached_max = SW_MAX(pt->cached_max, s->cached_tokens);
        if (!s->counts_agree)
            pt->counts_agree = false;
        pt->good += s->good;
        pt->emit_matched += s->emit_matched;
        pt->emit_missing += s->emit_missing;
        pt->emit_bad += s->emit_bad;
        if (s->srv_draft_n > 0) {
            pt->draft_n += s->srv_draft_n;
            pt->draft_accepted += SW_MAX(s->srv_draft_accepted, (int64_t)0);
        }
        t_first = SW_MIN(t_first, s->t_sent);
        t_last = SW_MAX(t_last, s->t_end);
    }
    point_reasons(pt);
    pt->wall_s = t_last > t_first ? (double)(t_last - t_first) / 1e9 : NAN;
    pt->goodput_rps = pt->wall_s > 0 ? (double)pt->good / pt->wall_s : NAN;
    /* summed decode: the mean stream's decode rate times the streams kept in flight */
    pt->sum_decode_tps =
        dec_n ? dec_sum / (double)dec_n * (double)(pt->concurrency ? pt->concurrency : 1) : NAN;
    if (arrays) {
        sw_bench_spread(spre, n, &pt->srv_prefill);
        sw_bench_spread(pdiff, n, &pt->prefill_diff);
        sw_bench_spread(dec, n, &pt->decode);
        sw_bench_spread(pre, n, &pt->prefill);
        sw_bench_spread(ttft, n, &pt->ttft_s);
        sw_bench_spread(sdec, n, &pt->srv_decode);
        sw_bench_spread(diff, n, &pt->decode_diff);
    }
    sw_free(dec);
    sw_free(pre);
    sw_free(ttft);
    sw_free(sdec);
    sw_free(diff);
    sw_free(spre);
    sw_free(pdiff);
}
