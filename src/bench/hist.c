/*
 * bench/hist: the fixed-bucket latency histogram and the spread of a few repeats.
 *
 * Buckets: values below 1 us share bucket 0's first sub-buckets linearly (32 of ~31 ns); above,
 * each octave [2^k us, 2^(k+1) us) is cut into 32 equal sub-buckets, so a bucket's width is at
 * most 1/32 of its value. Values past the last octave land in the last bucket; min and max stay
 * exact. No allocation: a histogram is a fixed struct that merges by adding counts.
 */
#include <slipway/bench.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BASE_NS 1000u

void sw_bench_hist_init(struct sw_bench_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min_ns = UINT64_MAX;
}

static unsigned bin_of(uint64_t ns)
{
    if (ns < BASE_NS)
        return (unsigned)(ns * SW_BENCH_HIST_SUB / BASE_NS); /* 0..31: the linear first octave */
    uint64_t u = ns / BASE_NS;                               /* >= 1 */
    unsigned oct = 0;
    while (oct < 63 && (u >> (oct + 1)) != 0)
        oct++;
    if (oct + 1 >= SW_BENCH_HIST_OCT)
        return SW_BENCH_HIST_NBINS - 1;
    uint64_t lo = (uint64_t)BASE_NS << oct;
    unsigned sub = (unsigned)((ns - lo) * SW_BENCH_HIST_SUB / lo);
    if (sub >= SW_BENCH_HIST_SUB)
        sub = SW_BENCH_HIST_SUB - 1;
    return (oct + 1) * SW_BENCH_HIST_SUB + sub;
}

/* Upper edge of a bucket in ns. */
static uint64_t bin_hi(unsigned b)
{
    if (b < SW_BENCH_HIST_SUB)
        return (uint64_t)(b + 1) * BASE_NS / SW_BENCH_HIST_SUB;
    if (b >= SW_BENCH_HIST_NBINS - 1)
        return UINT64_MAX;
    unsigned oct = b / SW_BENCH_HIST_SUB - 1, sub = b % SW_BENCH_HIST_SUB;
    uint64_t lo = (uint64_t)BASE_NS << oct;
    return lo + lo * (sub + 1) / SW_BENCH_HIST_SUB;
}

void sw_bench_hist_add(struct sw_bench_hist *h, uint64_t ns)
{
    h->bins[bin_of(ns)]++;
    h->n++;
    h->sum_ns += (double)ns;
    h->min_ns = SW_MIN(h->min_ns, ns);
    h->max_ns = SW_MAX(h->max_ns, ns);
}

void sw_bench_hist_merge(struct sw_bench_hist *to, const struct sw_bench_hist *from)
{
    if (!from->n)
        return;
    for (unsigned i = 0; i < SW_BENCH_HIST_NBINS; i++)
        to->bins[i] += from->bins[i];
    to->n += from->n;
    to->sum_ns += from->sum_ns;
    to->min_ns = SW_MIN(to->min_ns, from->min_ns);
    to->max_ns = SW_MAX(to->max_ns, from->max_ns);
}

uint64_t sw_bench_hist_quantile(const struct sw_bench_hist *h, double q)
{
    if (!h->n)
        return 0;
    if (q <= 0)
        return h->min_ns;
    if (q >= 1)
        return h->max_ns;
    /* the smallest value with at least ceil(q * n) values at or below it */
    uint64_t want = (uint64_t)ceil(q * (double)h->n);
    if (want < 1)
        want = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < SW_BENCH_HIST_NBINS; i++) {
        seen += h->bins[i];
        if (seen >= want) {
            uint64_t v = bin_hi(i);
            return SW_MAX(h->min_ns, SW_MIN(v, h->max_ns));
        }
    }
    return h->max_ns;
}

size_t sw_bench_hist_cdf(const struct sw_bench_hist *h, double *x_ms, double *y, size_t max)
{
    size_t k = 0;
    uint64_t seen = 0;
    for (unsigned i = 0; i < SW_BENCH_HIST_NBINS && k < max && h->n; i++) {
        if (!h->bins[i])
            continue;
        seen += h->bins[i];
        uint64_t v = SW_MAX(h->min_ns, SW_MIN(bin_hi(i), h->max_ns));
        x_ms[k] = (double)v / 1e6;
        y[k] = (double)seen / (double)h->n;
        k++;
    }
    return k;
}

json_t *sw_bench_hist_json(const struct sw_bench_hist *h)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = 0;
    bad |= sw_json_set_int(o, "n", (int64_t)h->n);
    if (!h->n) {
        if (bad) {
            json_decref(o);
            return NULL;
        }
        return o;
    }
    bad |= sw_json_set_real(o, "mean_ms", h->sum_ns / (double)h->n / 1e6);
    bad |= sw_json_set_real(o, "min_ms", (double)h->min_ns / 1e6);
    bad |= sw_json_set_real(o, "p50_ms", (double)sw_bench_hist_quantile(h, 0.50) / 1e6);
    bad |= sw_json_set_real(o, "p90_ms", (double)sw_bench_hist_quantile(h, 0.90) / 1e6);
    bad |= sw_json_set_real(o, "p99_ms", (double)sw_bench_hist_quantile(h, 0.99) / 1e6);
    bad |= sw_json_set_real(o, "p999_ms", (double)sw_bench_hist_quantile(h, 0.999) / 1e6);
    bad |= sw_json_set_real(o, "max_ms", (double)h->max_ns / 1e6);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double at(const double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

void sw_bench_spread(const double *v, size_t n, struct sw_bench_spread *out)
{
    memset(out, 0, sizeof(*out));
    out->median = out->min = out->max = out->q1 = out->q3 = NAN;
    double stackbuf[64];
    double *s = n <= 64 ? stackbuf : sw_malloc(n * sizeof(*s));
    if (!s)
        return;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            s[k++] = v[i];
    if (k) {
        qsort(s, k, sizeof(*s), cmp_d);
        out->n = k;
        out->min = s[0];
        out->max = s[k - 1];
        out->median = at(s, k, 0.5);
        out->q1 = at(s, k, 0.25);
        out->q3 = at(s, k, 0.75);
    }
    if (s != stackbuf)
        sw_free(s);
}
