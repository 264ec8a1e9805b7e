/*
 * Comparing two folds of a reply field by field: how the tests and the fuzz harness hold the
 * chunk scanner (openai_scan.c) to jansson's reading of the same bytes. Only what a fold means
 * is compared (never r->cur, the private tree, nor r->scanned, which says which path ran).
 */
#include <slipway/openai.h>

#include <math.h>
#include <stdarg.h>
#include <string.h>

static int differ(char *why, size_t n, const char *fmt, ...) SW_PRINTF(3, 4);

static int differ(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return 1;
}

static bool same_buf(const struct sw_buf *a, const struct sw_buf *b)
{
    return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

static bool same_str(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return !strcmp(a, b);
}

static bool same_real(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

int sw_openai_result_diff(const struct sw_openai_result *a, const struct sw_openai_result *b,
                          char *why, size_t why_len)
{
#define STR(f)                                                                                     \
    if (strcmp(a->f, b->f))                                                                        \
        return differ(why, why_len, #f ": \"%s\" vs \"%s\"", a->f, b->f);
#define INT(f)                                                                                     \
    if (a->f != b->f)                                                                              \
        return differ(why, why_len, #f ": %lld vs %lld", (long long)a->f, (long long)b->f);
#define REAL(f)                                                                                    \
    if (!same_real(a->f, b->f))                                                                    \
        return differ(why, why_len, #f ": %.17g vs %.17g", a->f, b->f);
#define BUF(f)                                                                                     \
    if (!same_buf(&a->f, &b->f))                                                                   \
        return differ(why, why_len, #f ": %zu bytes \"%.40s\" vs %zu bytes \"%.40s\"", a->f.len,   \
                      sw_buf_cstr(&a->f), b->f.len, sw_buf_cstr(&b->f));
    STR(id);
    STR(model);
    STR(system_fingerprint);
    STR(role);
    BUF(content);
    BUF(reasoning);
    INT(reasoning_field);
    INT(think);
    INT(ntool_calls);
    for (size_t i = 0; i < a->ntool_calls; i++) {
        const struct sw_openai_tool_call *x = &a->tool_calls[i], *y = &b->tool_calls[i];
        if (x->index != y->index || !same_str(x->id, y->id) || !same_str(x->type, y->type) ||
            !same_str(x->name, y->name) || !same_buf(&x->args, &y->args) ||
            x->args_valid != y->args_valid || strcmp(x->args_error, y->args_error))
            return differ(why, why_len, "tool_calls[%zu]", i);
    }
    STR(finish_reason);
    INT(usage.present);
    INT(usage.prompt_tokens);
    INT(usage.completion_tokens);
    INT(usage.total_tokens);
    INT(usage.cached_tokens);
    INT(usage.reasoning_tokens);
    INT(timings.present);
    INT(timings.cache_n);
    INT(timings.prompt_n);
    INT(timings.predicted_n);
    REAL(timings.prompt_ms);
    REAL(timings.prompt_per_token_ms);
    REAL(timings.prompt_per_second);
    REAL(timings.predicted_ms);
    REAL(timings.predicted_per_token_ms);
    REAL(timings.predicted_per_second);
    INT(timings.draft_n);
    INT(timings.draft_n_accepted);
    INT(error.present);
    INT(error.kind);
    INT(error.shape);
    STR(error.message);
    STR(error.type);
    STR(error.code);
    INT(streamed);
    INT(done);
    INT(finished);
    INT(chunks);
    INT(text_chunks);
    INT(t_first_chunk);
    INT(t_first_text);
    INT(t_last_chunk);
    INT(nrecs);
    INT(recs_dropped);
    for (size_t i = 0; i < a->nrecs; i++) {
        const struct sw_openai_chunk_rec *x = &a->recs[i], *y = &b->recs[i];
        if (x->t_ns != y->t_ns || x->content_bytes != y->content_bytes ||
            x->reasoning_bytes != y->reasoning_bytes || x->flags != y->flags)
            return differ(why, why_len, "recs[%zu]: flags %u/%u, content %u/%u, reasoning %u/%u", i,
                          x->flags, y->flags, x->content_bytes, y->content_bytes,
                          x->reasoning_bytes, y->reasoning_bytes);
    }
    INT(err.code);
#undef STR
#undef INT
#undef REAL
#undef BUF
    return 0;
}
