/*
 * bench/bounds: the figures a server cannot have produced. Its usage and timings are claims; a
 * request whose claims break a bound that no engine can pass (more tokens than it was asked
 * for, more prompt tokens than the prompt's bytes could make, a rate no hardware reaches, more
 * time than the client saw the request take, a negative count) is refused before anything is
 * measured from it: docs/bench.md "Figures that cannot be" states each bound.
 *
 * What it deliberately does not do: judge a rate the client measured (a proxy that buffers a
 * stream delivers tokens faster than they were made), or judge a figure it cannot bound (the
 * prompt tokens of an image sent by URL).
 */
#include <slipway/bench.h>

#include <inttypes.h>
#include <math.h>

/* A server's integer, where -1 stands for "not sent" (openai.h): below it is a negative claim. */
struct int_claim {
    const char *name;
    int64_t v;
};

/* A server's real, where NaN stands for "not sent". */
struct real_claim {
    const char *name;
    double v;
};

static int refuse(struct sw_err *e, const char *fmt, ...) SW_PRINTF(2, 3);
static int refuse(struct sw_err *e, const char *fmt, ...)
{
    char m[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    return sw_err_set(e, SW_ERANGE, "figures that cannot be: %s", m);
}

static int signs(const struct sw_openai_result *r, struct sw_err *e)
{
    const struct sw_openai_usage *u = &r->usage;
    const struct sw_openai_timings *t = &r->timings;
    const struct int_claim ints[] = {
        {"usage.prompt_tokens", u->present ? u->prompt_tokens : -1},
        {"usage.completion_tokens", u->present ? u->completion_tokens : -1},
        {"usage.total_tokens", u->present ? u->total_tokens : -1},
        {"usage.prompt_tokens_details.cached_tokens", u->present ? u->cached_tokens : -1},
        {"usage.completion_tokens_details.reasoning_tokens", u->present ? u->reasoning_tokens : -1},
        {"timings.cache_n", t->present ? t->cache_n : -1},
        {"timings.prompt_n", t->present ? t->prompt_n : -1},
        {"timings.predicted_n", t->present ? t->predicted_n : -1},
        {"timings.draft_n", t->present ? t->draft_n : -1},
        {"timings.draft_n_accepted", t->present ? t->draft_n_accepted : -1},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(ints); i++)
        if (ints[i].v < -1)
            return refuse(e, "%s is %" PRId64 " (a count is never negative)", ints[i].name,
                          ints[i].v);
    const struct real_claim reals[] = {
        {"timings.prompt_ms", t->present ? t->prompt_ms : NAN},
        {"timings.prompt_per_token_ms", t->present ? t->prompt_per_token_ms : NAN},
        {"timings.prompt_per_second", t->present ? t->prompt_per_second : NAN},
        {"timings.predicted_ms", t->present ? t->predicted_ms : NAN},
        {"timings.predicted_per_token_ms", t->present ? t->predicted_per_token_ms : NAN},
        {"timings.predicted_per_second", t->present ? t->predicted_per_second : NAN},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(reals); i++)
        if (!isnan(reals[i].v) && (reals[i].v < 0 || !isfinite(reals[i].v)))
            return refuse(e, "%s is %g (a time or a rate is finite and never negative)",
                          reals[i].name, reals[i].v);
    return 0;
}

/* The most completion tokens any of the server's counts claims (-1: none). */
static int64_t completion_claimed(const struct sw_openai_result *r, const struct sw_bench_seen *s,
                                  const char **where)
{
    int64_t most = -1;
    *where = "";
    if (r->usage.present && r->usage.completion_tokens > most) {
        most = r->usage.completion_tokens;
        *where = "usage.completion_tokens";
    }
    if (r->timings.present && r->timings.predicted_n > most) {
        most = r->timings.predicted_n;
        *where = "timings.predicted_n";
    }
    for (size_t i = 0; s->cum && i < s->ncum; i++)
        if (s->cum[i] > most) {
            most = s->cum[i];
            *where = "a chunk's running count";
        }
    return most;
}

static int counts(const struct sw_openai_result *r, const struct sw_bench_seen *s, struct sw_err *e)
{
    const char *where;
    int64_t c = completion_claimed(r, s, &where);
    if (s->max_tokens > 0 && c > s->max_tokens)
        return refuse(e, "%s %" PRId64 " > the %" PRId64 " tokens asked (max_tokens)", where, c,
                      s->max_tokens);
    if (s->max_tokens <= 0 && c > 1 && isfinite(s->elapsed_ms) &&
        (double)(c - 1) > SW_BENCH_DECODE_TPS_MAX * s->elapsed_ms / 1e3)
        return refuse(e, "%s %" PRId64 " in %.3f ms (past %.0e tok/s)", where, c, s->elapsed_ms,
                      SW_BENCH_DECODE_TPS_MAX);
    const struct sw_openai_usage *u = &r->usage;
    const struct sw_openai_timings *t = &r->timings;
    int64_t p = u->present && u->prompt_tokens >= 0 ? u->prompt_tokens
                : t->present && t->prompt_n >= 0    ? t->prompt_n + SW_MAX(t->cache_n, 0)
                                                    : -1;
    int64_t room = (int64_t)SW_MIN(s->body_bytes, (size_t)INT64_MAX / 2) + SW_BENCH_TEMPLATE_TOKENS;
    if (s->text_only && p > room)
        return refuse(e,
                      "%" PRId64 " prompt tokens from a body of %zu bytes (at most a token a "
                      "byte + %d of the chat template's)",
                      p, s->body_bytes, SW_BENCH_TEMPLATE_TOKENS);
    if (u->present && u->prompt_tokens >= 0 && u->cached_tokens > u->prompt_tokens)
        return refuse(e, "%" PRId64 " cached prompt tokens of %" PRId64, u->cached_tokens,
                      u->prompt_tokens);
    if (u->present && u->completion_tokens >= 0 && u->reasoning_tokens > u->completion_tokens)
        return refuse(e, "%" PRId64 " reasoning tokens of %" PRId64 " completion tokens",
                      u->reasoning_tokens, u->completion_tokens);
    if (t->present && t->draft_n >= 0 && t->draft_n_accepted > t->draft_n)
        return refuse(e, "%" PRId64 " accepted of %" PRId64 " drafted tokens", t->draft_n_accepted,
                      t->draft_n);
    return 0;
}

static int rates(const struct sw_openai_result *r, const struct sw_bench_seen *s, struct sw_err *e)
{
    const struct sw_openai_timings *t = &r->timings;
    if (!t->present)
        return 0;
    /* over one token llama.cpp divides by the microseconds around a single sample: no rate */
    if (t->predicted_n >= 2 && t->predicted_per_second > SW_BENCH_DECODE_TPS_MAX)
        return refuse(e, "timings.predicted_per_second %g (past %.0e tok/s a stream)",
                      t->predicted_per_second, SW_BENCH_DECODE_TPS_MAX);
    if (t->prompt_n >= 1 && t->prompt_per_second > SW_BENCH_PREFILL_TPS_MAX)
        return refuse(e, "timings.prompt_per_second %g (past %.0e tok/s)", t->prompt_per_second,
                      SW_BENCH_PREFILL_TPS_MAX);
    /* the server's prompt and decode happen between the client's send and the end it saw */
    double srv = (isfinite(t->prompt_ms) ? t->prompt_ms : 0) +
                 (isfinite(t->predicted_ms) ? t->predicted_ms : 0);
    double room = s->elapsed_ms * (1 + SW_BENCH_CLOCK_SLACK) + SW_BENCH_CLOCK_SLACK_MS;
    if (isfinite(s->elapsed_ms) && srv > room)
        return refuse(e,
                      "timings.prompt_ms + predicted_ms = %.3f ms, the request took %.3f ms from "
                      "its send to its end",
                      srv, s->elapsed_ms);
    return 0;
}

int sw_bench_check(const struct sw_openai_result *r, const struct sw_bench_seen *seen,
                   struct sw_err *e)
{
    int rc = signs(r, e);
    if (rc)
        return rc;
    rc = counts(r, seen, e);
    if (rc)
        return rc;
    return rates(r, seen, e);
}
