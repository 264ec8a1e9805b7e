/*
 * bench/verdicts: what a run's points say together, once they ran. The cache check (from the
 * engine's own count of prompt tokens it did not compute, and from its /metrics after the
 * points: the second scrape, read again while its counters trail the last response), parity
 * (summed decode at concurrency C against one stream's at the same depth), each point against
 * the decode roofline at its measured depth, the open loop's achieved rate and validity, and
 * whether every check of the run held.
 *
 * What it does not do: judge a speed (it reports), or fail a run for a figure (the verb's exit
 * code reads sw_bench_report_held).
 */
#include "run_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void sw__bench_verdicts(const struct sw_bench_opts *o, struct sw_bench_report *rep)
{
    /* the cache check: the engine's own count of prompt tokens it did not compute */
    rep->cache_expect_hit = o->expect_hit;
    bool known = rep->npoints > 0;
    int64_t hits = 0, hit_reqs = 0, reqs = 0, firsts_hit = 0;
    for (size_t i = 0; i < rep->npoints; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        if (!pt->cache_checked)
            known = false;
        for (size_t j = 0; j < pt->nsamples; j++) {
            const struct sw_bench_sample *s = &pt->samples[j];
            if (s->rc || s->cached_tokens < 0)
                continue;
            reqs++;
            if (s->cached_tokens > 0) {
                hit_reqs++;
                hits += s->cached_tokens;
                if (j == 0)
                    firsts_hit++;
            }
        }
    }
    if (!known || !reqs) {
        rep->cache_verified = false;
        snprintf(rep->cache_why, sizeof(rep->cache_why),
                 "unverified: the engine did not say how much of each prompt it reused (no "
                 "timings.cache_n, no usage.prompt_tokens_details.cached_tokens)");
    } else if (!o->expect_hit) {
        rep->cache_verified = hit_reqs == 0;
        if (hit_reqs)
            snprintf(rep->cache_why, sizeof(rep->cache_why),
                     "FAILED: %lld of %lld requests read %lld prompt tokens from the engine's "
                     "cache although none should have",
                     (long long)hit_reqs, (long long)reqs, (long long)hits);
        else
            snprintf(rep->cache_why, sizeof(rep->cache_why),
                     "verified: no request read a prompt token from the cache (%lld checked)",
                     (long long)reqs);
    } else {
        int64_t expected = reqs - (int64_t)rep->npoints; /* every request but a point's first */
        rep->cache_verified = hit_reqs - firsts_hit >= expected && expected > 0;
        snprintf(rep->cache_why, sizeof(rep->cache_why),
                 "%s: %lld of %lld requests hit the cache (%lld expected), %lld prompt tokens "
                 "reused",
                 rep->cache_verified ? "verified" : "FAILED", (long long)hit_reqs, (long long)reqs,
                 (long long)expected, (long long)hits);
    }
    /* parity: summed decode at C > 1 against one stream's decode at the same depth */
    size_t used = 0;
    rep->parity[0] = '\0';
    for (size_t i = 0; i < rep->npoints; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        if (pt->concurrency <= 1 || !isfinite(pt->sum_decode_tps))
            continue;
        const struct sw_bench_point *one = NULL;
        for (size_t j = 0; j < rep->npoints; j++)
            if (rep->points[j].depth == pt->depth && rep->points[j].concurrency == 1)
                one = &rep->points[j];
        if (!one || !isfinite(one->decode.median))
            continue;
        bool below = pt->sum_decode_tps < one->decode.median;
        if (used < sizeof(rep->parity) - 1) {
            int w = snprintf(rep->parity + used, sizeof(rep->parity) - used,
                             "%s%d-way at depth %lld: summed %.2f tok/s %s single-stream %.2f",
                             used ? "; " : "", pt->concurrency, (long long)pt->depth,
                             pt->sum_decode_tps, below ? "BELOW parity with" : "above",
                             one->decode.median);
            if (w > 0)
                used = SW_MIN(sizeof(rep->parity) - 1, used + (size_t)w);
        }
    }
}

/* Each point against the decode sw__bench_roofline, at its measured depth (the mean prompt tokens). */
void sw__bench_roofline(const struct sw_bench_opts *o, struct sw_bench_report *rep)
{
    rep->roof_known = o->roof && o->roof->known;
    if (rep->roof_known)
        rep->roof = *o->roof;
    else
        snprintf(rep->roof_why, sizeof(rep->roof_why), "%.290s",
                 o->roof_why ? o->roof_why : "no roofline (a URL, or no --fleet endpoint)");
    for (size_t i = 0; i < rep->npoints; i++) {
        struct sw_bench_point *pt = &rep->points[i];
        size_t ok = pt->nsamples - pt->failed;
        pt->roof_depth = pt->roof_bytes = pt->roof_tps = pt->roof_pct = NAN;
        if (!rep->roof_known || !ok)
            continue;
        pt->roof_depth = (double)pt->tokens_in / (double)ok;
        pt->roof_bytes = sw_bench_roof_bytes(&rep->roof, (int64_t)(pt->roof_depth + 0.5));
        pt->roof_tps = sw_bench_roof_tps(&rep->roof, (int64_t)(pt->roof_depth + 0.5));
        pt->roof_pct = pt->roof_tps > 0 ? 100.0 * pt->decode.median / pt->roof_tps : NAN;
    }
}

/* The open loop's figures: the arrival kind, the achieved rate (requests actually sent over the
 * span from the first to the last send), and whether the run is valid (the schedule fit its room,
 * the client's p99 send lag within the bound). */
void sw__bench_open_verdict(const struct run *r, struct sw_bench_report *rep)
{
    const struct sw_bench_opts *o = r->o;
    const struct sw_bench_point *pt = &rep->points[0];
    rep->rate_asked = o->rate;
    rep->duration_s = o->duration_s;
    rep->seed = o->seed;
    snprintf(rep->arrival, sizeof(rep->arrival), "%s",
             o->arrival == SW_BENCH_ARRIVAL_CONSTANT  ? "constant"
             : o->arrival == SW_BENCH_ARRIVAL_POISSON ? "poisson"
                                                      : "gamma");
    if (o->arrival == SW_BENCH_ARRIVAL_GAMMA)
        snprintf(rep->arrival, sizeof(rep->arrival), "gamma:%g", o->cv);
    uint64_t f = UINT64_MAX, l = 0;
    for (size_t i = 0; i < pt->nsamples; i++) {
        if (!pt->samples[i].t_sent)
            continue;
        f = SW_MIN(f, pt->samples[i].t_sent);
        l = SW_MAX(l, pt->samples[i].t_sent);
    }
    rep->rate_achieved =
        pt->nsamples > 1 && l > f ? (double)(pt->nsamples - 1) / ((double)(l - f) / 1e9) : NAN;
    rep->max_lag_ms = o->max_lag_ms > 0 ? o->max_lag_ms : 10.0;
    double p99 = (double)sw_bench_hist_quantile(&pt->lag, 0.99) / 1e6;
    if (r->truncated) {
        rep->invalid = true;
        snprintf(rep->invalid_why, sizeof(rep->invalid_why),
                 "INVALID: the arrival schedule outgrew the room kept for it (%zu requests): "
                 "the run was cut short",
                 pt->nsamples);
    } else if (pt->lag.n && p99 > rep->max_lag_ms) {
        rep->invalid = true;
        snprintf(rep->invalid_why, sizeof(rep->invalid_why),
                 "INVALID: the client's p99 send lag %.3f ms exceeds the bound %.3f ms: the "
                 "schedule was not kept, latencies are not the server's",
                 p99, rep->max_lag_ms);
    }
}

/* The second scrape, the deltas, and what they say about the cache. An engine's counters may
 * trail the last response by an iteration: while the generation delta is short of the client's
 * count the page is read again, up to a second. */
void sw__bench_engine_counters(struct run *r, const char *base,
                               const struct sw_openai_metrics *before,
                               struct sw_openai_metrics *after, bool *have_after)
{
    struct sw_bench_report *rep = r->rep;
    struct sw_bench_counters *c = &rep->counters;
    for (int tries = 0; tries < 11; tries++) {
        if (*have_after)
            sw_openai_metrics_free(after);
        *have_after =
            !sw__bench_scrape(&r->loop, base, r->o->api_key, after, c->why, sizeof(c->why));
        if (!*have_after)
            return;
        sw__bench_counters(before, after, rep);
        if (!(c->generation_tokens < (double)c->client_completion_tokens) || c->client_failed)
            break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    c->why[0] = '\0';
    if (!isfinite(c->prefix_hits) || r->o->expect_hit)
        return;
    if (c->prefix_hits > 0) {
        rep->cache_verified = false;
        snprintf(rep->cache_why, sizeof(rep->cache_why),
                 "FAILED: the engine's /metrics say %.0f prompt tokens were read from its prefix "
                 "cache during the run although none should have",
                 c->prefix_hits);
    } else if (!rep->cache_verified && !strncmp(rep->cache_why, "unverified", 10) &&
               c->prefix_queries > 0) {
        rep->cache_verified = true;
        snprintf(rep->cache_why, sizeof(rep->cache_why),
                 "verified by /metrics: none of the %.0f prompt tokens looked up hit the "
                 "prefix cache",
                 c->prefix_queries);
    }
}

bool sw_bench_report_held(const struct sw_bench_report *rep, bool emit_stamps)
{
    bool bad = rep->invalid || !rep->cache_verified;
    for (size_t i = 0; i < rep->npoints; i++) {
        const struct sw_bench_point *pt = &rep->points[i];
        bad = bad || pt->failed || !pt->counts_agree ||
              (emit_stamps &&
               (pt->emit_missing || pt->emit_bad || pt->emit_matched != pt->tokens_out));
    }
    return !bad;
}

size_t sw_bench_report_invalid(const struct sw_bench_report *rep)
{
    size_t invalid = 0;
    for (size_t i = 0; i < rep->npoints; i++)
        invalid += rep->points[i].invalid;
    return invalid;
}
