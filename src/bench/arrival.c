/*
 * bench/arrival: the open-loop schedule's inter-arrival gaps (constant, exponential, gamma) from
 * a seeded xoshiro256** generator, and the synthetic prompts' words.
 *
 * Gamma variates by Marsaglia and Tsang's method (shape >= 1; shape < 1 boosted by U^(1/shape)),
 * normal variates by Box-Muller: textbook methods, written here.
 */
#include <slipway/bench.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void sw_bench_rng_seed(struct sw_bench_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sw_bench_rng_next(struct sw_bench_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double sw_bench_rng_unit(struct sw_bench_rng *r)
{
    /* 53 random bits, shifted off zero: (k + 0.5) / 2^53 */
    return ((double)(sw_bench_rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

int sw_bench_arrival_parse(const char *s, enum sw_bench_arrival *kind, double *cv, struct sw_err *e)
{
    *cv = 1.0;
    if (!s || !strcmp(s, "poisson")) {
        *kind = SW_BENCH_ARRIVAL_POISSON;
        return 0;
    }
    if (!strcmp(s, "constant")) {
        *kind = SW_BENCH_ARRIVAL_CONSTANT;
        *cv = 0;
        return 0;
    }
    if (!strncmp(s, "gamma:", 6)) {
        char *end = NULL;
        double v = strtod(s + 6, &end);
        if (end == s + 6 || *end || !isfinite(v) || v <= 0 || v > 100)
            return sw_err_set(e, SW_EINVAL, "--arrival %s: gamma:CV needs a CV in (0, 100]", s);
        *kind = SW_BENCH_ARRIVAL_GAMMA;
        *cv = v;
        return 0;
    }
    return sw_err_set(e, SW_EINVAL, "--arrival %s: constant, poisson or gamma:CV", s);
}

static double normal(struct sw_bench_rng *r)
{
    double u1 = sw_bench_rng_unit(r), u2 = sw_bench_rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* A gamma variate of shape k and scale 1. */
static double gamma1(double k, struct sw_bench_rng *r)
{
    if (k < 1.0) {
        double u = sw_bench_rng_unit(r);
        return gamma1(k + 1.0, r) * pow(u, 1.0 / k);
    }
    double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = normal(r), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = sw_bench_rng_unit(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

double sw_bench_arrival_gap(enum sw_bench_arrival kind, double cv, double rate,
                            struct sw_bench_rng *r)
{
    double mean = 1.0 / rate;
    switch (kind) {
    case SW_BENCH_ARRIVAL_CONSTANT:
        return mean;
    case SW_BENCH_ARRIVAL_POISSON:
        return -log(sw_bench_rng_unit(r)) * mean;
    case SW_BENCH_ARRIVAL_GAMMA: {
        /* shape k = 1/cv^2, scale mean/k: mean `mean`, coefficient of variation cv */
        double k = 1.0 / (cv * cv);
        return gamma1(k, r) * mean / k;
    }
    }
    return mean;
}

/* Filler words: common English, so a real tokenizer spends about one token on each. */
static const char *const words[] = {
    "the",   "river",  "stone",  "light",    "green", "house", "small",  "open",   "north",
    "table", "winter", "music",  "garden",   "paper", "clock", "water",  "bridge", "field",
    "quiet", "market", "silver", "window",   "road",  "cloud", "apple",  "school", "forest",
    "train", "letter", "summer", "mountain", "story", "river", "copper", "harbor", "lamp",
};

char *sw_bench_prompt(uint64_t nonce, size_t nwords, size_t *len)
{
    struct sw_buf b;
    struct sw_bench_rng r;
    sw_buf_init(&b, 64u * 1024u * 1024u);
    sw_bench_rng_seed(&r, nonce * 0x9E3779B97F4A7C15ull + 1);
    /* the nonce first: two prompts differ from their first token on */
    int rc = sw_buf_printf(&b, "[nonce %llu] ", (unsigned long long)nonce);
    for (size_t i = 0; !rc && i < nwords; i++) {
        const char *w = words[sw_bench_rng_next(&r) % SW_ARRAY_LEN(words)];
        rc = sw_buf_printf(&b, "%s%s", i ? " " : "", w);
    }
    if (!rc)
        rc = sw_buf_puts(&b, nwords ? ". Continue the list." : "Count upwards.");
    if (rc) {
        sw_buf_free(&b);
        return NULL;
    }
    if (len)
        *len = b.len;
    return sw_buf_steal(&b);
}
