/*
 * Folding OpenAI chat-completions responses into one result: a whole chat.completion body, or a
 * stream of chat.completion.chunk payloads fed one SSE event at a time.
 *
 * Engines differ in ways that matter to a check or a benchmark, so the result records them rather
 * than smoothing them over: which field carried reasoning (llama.cpp's and older vLLM's
 * `reasoning_content`, newer vLLM's `reasoning`), whether reasoning came inline in the content as
 * <think>...</think> (split out at finish, and named), how tool calls were streamed (deltas by
 * index, assembled and then JSON-validated), and, per chunk, when it arrived and how many bytes
 * of text it carried. Token counts come from the server's usage/timings, never from chunk counts.
 *
 * Only choice index 0 is accumulated (slipway never asks for n > 1).
 *
 * What it deliberately does not do: tokenize, judge the content, or keep the text of each chunk.
 */
#include "openai_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* id, model, system_fingerprint, role: longer ones (truncated by copy_once) are jansson's */
#define SCAN_COPY_MAX 512

void sw_openai_result_init(struct sw_openai_result *r, size_t text_max, size_t recs_max)
{
    memset(r, 0, sizeof(*r));
    r->text_max = text_max ? text_max : SW_OAI_TEXT_MAX_DEFAULT;
    r->recs_max = recs_max ? recs_max : SW_OAI_RECS_MAX_DEFAULT;
    sw_buf_init(&r->content, r->text_max);
    sw_buf_init(&r->reasoning, r->text_max);
    r->usage.cached_tokens = -1;
    r->usage.reasoning_tokens = -1;
}

void sw_openai_result_free(struct sw_openai_result *r)
{
    if (!r)
        return;
    sw_buf_free(&r->content);
    sw_buf_free(&r->reasoning);
    for (size_t i = 0; i < r->ntool_calls; i++) {
        struct sw_openai_tool_call *c = &r->tool_calls[i];
        sw_free(c->id);
        sw_free(c->type);
        sw_free(c->name);
        sw_buf_free(&c->args);
    }
    sw_free(r->tool_calls);
    sw_free(r->recs);
    json_decref(r->cur);
    r->cur = NULL;
    r->tool_calls = NULL;
    r->ntool_calls = 0;
    r->recs = NULL;
    r->nrecs = r->recs_cap = 0;
}

static void copy_once(char *dst, size_t n, json_t *v)
{
    if (!dst[0] && json_is_string(v))
        snprintf(dst, n, "%s", json_string_value(v));
}

/* A server's number as an integer; anything not a whole number in int64_t's range is unknown. */
static int64_t int_or(json_t *v, int64_t dflt)
{
    int64_t x;
    if (!json_is_number(v) || sw_json_int_range(v, INT64_MIN, INT64_MAX, NULL, "n", &x, NULL))
        return dflt;
    return x;
}

static double real_or(json_t *v, double dflt)
{
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* A figure of a server's object read into a struct: at key (in the object under `in` when
 * given), an integer (-1 unknown) or a real (NaN unknown). */
struct figure {
    const char *in, *key;
    bool real;
    size_t off;
};

/* clang-format off */
#define U(in, k)   {in, #k, false, offsetof(struct sw_openai_usage, k)}
#define T(k, real) {NULL, #k, real, offsetof(struct sw_openai_timings, k)}
static const struct figure usage_figures[] = {
    U(NULL, prompt_tokens), U(NULL, completion_tokens), U(NULL, total_tokens),
    U("prompt_tokens_details", cached_tokens), U("completion_tokens_details", reasoning_tokens),
};
static const struct figure timings_figures[] = {
    T(cache_n, false), T(prompt_n, false), T(predicted_n, false),
    T(prompt_ms, true), T(prompt_per_token_ms, true), T(prompt_per_second, true),
    T(predicted_ms, true), T(predicted_per_token_ms, true), T(predicted_per_second, true),
    T(draft_n, false), T(draft_n_accepted, false),
};
/* clang-format on */

/* o's figures into dst, the struct's `present` set. */
static void read_figures(const json_t *o, const struct figure *t, size_t n, void *dst,
                         bool *present)
{
    *present = true;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(t[i].in ? json_object_get(o, t[i].in) : o, t[i].key);
        char *p = (char *)dst + t[i].off;
        if (t[i].real)
            *(double *)p = real_or(v, NAN);
        else
            *(int64_t *)p = int_or(v, -1);
    }
}

static int text_append(struct sw_openai_result *r, struct sw_buf *b, const char *what,
                       const char *p, size_t n, struct sw_err *e)
{
    int rc = sw_buf_append(b, p, n);
    if (rc == SW_ERANGE)
        return sw_err_set(e, rc, "the reply's %s exceeds %zu bytes", what, r->text_max);
    if (rc)
        return sw_err_set(e, rc, "out of memory holding the reply's %s", what);
    return 0;
}

/* A string member's text, when it has any: kept in *p and *len (the delta) and appended to b. */
static int take_text(struct sw_openai_result *r, struct sw_buf *b, const char *what,
                     const json_t *s, const char **p, size_t *len, struct sw_err *e)
{
    if (!json_is_string(s) || !json_string_length(s))
        return 0;
    *p = json_string_value(s);
    *len = json_string_length(s);
    return text_append(r, b, what, *p, *len, e);
}

static struct sw_openai_tool_call *call_at(struct sw_openai_result *r, int index, struct sw_err *e,
                                           int *rc)
{
    for (size_t i = 0; i < r->ntool_calls; i++)
        if (r->tool_calls[i].index == index)
            return &r->tool_calls[i];
    if (index < 0 || r->ntool_calls >= SW_OAI_TOOL_CALLS_MAX ||
        index >= (int)SW_OAI_TOOL_CALLS_MAX) {
        *rc = sw_err_set(e, SW_ERANGE, "tool call index %d is out of range (at most %u calls)",
                         index, SW_OAI_TOOL_CALLS_MAX);
        return NULL;
    }
    struct sw_openai_tool_call *nv = sw_realloc(r->tool_calls, (r->ntool_calls + 1) * sizeof(*nv));
    if (!nv) {
        *rc = sw_err_set(e, SW_ENOMEM, "out of memory holding tool calls");
        return NULL;
    }
    r->tool_calls = nv;
    struct sw_openai_tool_call *c = &nv[r->ntool_calls++];
    memset(c, 0, sizeof(*c));
    c->index = index;
    sw_buf_init(&c->args, SW_OAI_ARGS_MAX);
    return c;
}

/* Set *dst to s when unset; append when a different piece comes (names streamed in parts). */
static int merge_str(char **dst, const char *s, bool append)
{
    if (!s || !*s)
        return 0;
    if (!*dst) {
        *dst = sw_strdup(s);
        return *dst ? 0 : SW_ENOMEM;
    }
    if (!append || !strcmp(*dst, s))
        return 0;
    size_t a = strlen(*dst), b = strlen(s);
    if (a + b > 4096)
        return SW_ERANGE;
    char *n = sw_realloc(*dst, a + b + 1);
    if (!n)
        return SW_ENOMEM;
    memcpy(n + a, s, b + 1);
    *dst = n;
    return 0;
}

static int apply_tool_calls(struct sw_openai_result *r, json_t *arr, bool streamed,
                            struct sw_err *e)
{
    size_t i;
    json_t *tc;
    int rc = 0;
    json_array_foreach(arr, i, tc)
    {
        if (!json_is_object(tc))
            return sw_err_set(e, SW_EPARSE, "tool_calls[%zu] is not an object", i);
        json_t *jidx = json_object_get(tc, "index");
        const char *id = json_string_value(json_object_get(tc, "id"));
        int index;
        if (json_is_integer(jidx)) {
            json_int_t v = json_integer_value(jidx);
            index = v < 0 || v > (json_int_t)SW_OAI_TOOL_CALLS_MAX ? -1 : (int)v;
        } else if (!streamed) {
            index = (int)i;
        } else {
            /* a delta without index: a new id starts a call, otherwise it continues the last */
            index = r->ntool_calls ? r->tool_calls[r->ntool_calls - 1].index : 0;
            if (id) {
                bool known = false;
                for (size_t k = 0; k < r->ntool_calls; k++)
                    if (r->tool_calls[k].id && !strcmp(r->tool_calls[k].id, id))
                        known = true;
                if (!known && r->ntool_calls)
                    index = r->tool_calls[r->ntool_calls - 1].index + 1;
            }
        }
        struct sw_openai_tool_call *c = call_at(r, index, e, &rc);
        if (!c)
            return rc;
        json_t *fn = json_object_get(tc, "function");
        rc = merge_str(&c->id, id, false);
        if (!rc)
            rc = merge_str(&c->type, json_string_value(json_object_get(tc, "type")), false);
        if (!rc)
            rc = merge_str(&c->name, json_string_value(json_object_get(fn, "name")), true);
        if (rc)
            return sw_err_set(e, rc, "cannot hold tool call %d", index);
        json_t *args = json_object_get(fn, "arguments");
        if (json_is_string(args)) {
            rc = sw_buf_append(&c->args, json_string_value(args), json_string_length(args));
        } else if (json_is_object(args) || json_is_array(args)) {
            /* not the standard (it is a string), but some servers send the object itself */
            char *s = sw_json_dumps(args, JSON_COMPACT);
            rc = s ? sw_buf_puts(&c->args, s) : SW_ENOMEM;
            sw_free(s);
        }
        if (rc)
            return sw_err_set(e, rc, "tool call %d: arguments exceed %u bytes", index,
                              SW_OAI_ARGS_MAX);
    }
    return 0;
}

/* A delta (stream) or message (whole reply) object. */
static int apply_message(struct sw_openai_result *r, json_t *m, bool streamed,
                         struct sw_openai_delta *d, struct sw_err *e)
{
    int rc = 0;
    json_t *role = json_object_get(m, "role");
    if (json_is_string(role))
        copy_once(r->role, sizeof(r->role), role);
    rc = take_text(r, &r->content, "content", json_object_get(m, "content"), &d->content,
                   &d->content_len, e);
    if (rc)
        return rc;
    json_t *rs = json_object_get(m, "reasoning");
    json_t *rc_ = json_object_get(m, "reasoning_content");
    if (json_is_string(rs))
        r->reasoning_field =
            (enum sw_openai_reasoning_field)(r->reasoning_field | SW_OAI_REASONING_FIELD);
    if (json_is_string(rc_))
        r->reasoning_field =
            (enum sw_openai_reasoning_field)(r->reasoning_field | SW_OAI_REASONING_CONTENT);
    /* when a server sends both (a transition release), they carry the same text: take one */
    rc = take_text(r, &r->reasoning, "reasoning", json_is_string(rs) ? rs : rc_, &d->reasoning,
                   &d->reasoning_len, e);
    if (rc)
        return rc;
    json_t *tcs = json_object_get(m, "tool_calls");
    if (json_is_array(tcs) && json_array_size(tcs)) {
        d->tool_deltas += (int)json_array_size(tcs);
        rc = apply_tool_calls(r, tcs, streamed, e);
    }
    return rc;
}

static int push_rec(struct sw_openai_result *r, const struct sw_openai_chunk_rec *rec,
                    struct sw_err *e)
{
    if (r->nrecs >= r->recs_max) {
        r->recs_dropped++;
        return 0;
    }
    if (sw_grow(&r->recs, &r->recs_cap, r->nrecs, sizeof(*r->recs), r->recs_max))
        return sw_err_set(e, SW_ENOMEM, "out of memory recording chunks");
    r->recs[r->nrecs++] = *rec;
    return 0;
}

static void error_message(const struct sw_openai_error *o, struct sw_err *e, const char *ctx)
{
    sw_err_set(e, SW_EHTTP, "%s: %s error%s%s: %s", ctx, sw_openai_err_kind_name(o->kind),
               o->type[0] ? " " : "", o->type, o->message);
}

/* The parts common to a chunk and a whole reply. */
static int apply_object(struct sw_openai_result *r, json_t *j, bool streamed,
                        struct sw_openai_delta *d, uint32_t *flags, struct sw_err *e)
{
    copy_once(r->id, sizeof(r->id), json_object_get(j, "id"));
    copy_once(r->model, sizeof(r->model), json_object_get(j, "model"));
    copy_once(r->system_fingerprint, sizeof(r->system_fingerprint),
              json_object_get(j, "system_fingerprint"));
    json_t *choices = json_object_get(j, "choices");
    size_t i;
    json_t *ch;
    int rc = 0;
    json_array_foreach(choices, i, ch)
    {
        if (!json_is_object(ch))
            return sw_err_set(e, SW_EPARSE, "choices[%zu] is not an object", i);
        if (int_or(json_object_get(ch, "index"), 0) != 0)
            continue;
        json_t *m = json_object_get(ch, streamed ? "delta" : "message");
        if (json_is_object(m)) {
            if (json_is_string(json_object_get(m, "role")))
                *flags |= SW_OAI_CHUNK_ROLE;
            rc = apply_message(r, m, streamed, d, e);
            if (rc)
                return rc;
        }
        json_t *fr = json_object_get(ch, "finish_reason");
        if (json_is_string(fr)) {
            snprintf(r->finish_reason, sizeof(r->finish_reason), "%s", json_string_value(fr));
            d->finish_reason = json_string_value(fr);
            *flags |= SW_OAI_CHUNK_FINISH;
        }
    }
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        read_figures(u, usage_figures, SW_ARRAY_LEN(usage_figures), &r->usage, &r->usage.present);
        d->usage = true;
        *flags |= SW_OAI_CHUNK_USAGE;
    }
    json_t *t = json_object_get(j, "timings");
    if (json_is_object(t)) {
        read_figures(t, timings_figures, SW_ARRAY_LEN(timings_figures), &r->timings,
                     &r->timings.present);
        d->timings = true;
        *flags |= SW_OAI_CHUNK_TIMINGS;
    }
    if (d->tool_deltas)
        *flags |= SW_OAI_CHUNK_TOOL;
    return 0;
}

/* ---- the scanned path: the same effects as apply_object on jansson's tree ---- */

/* The scanned string's text appended to b; *at points to it (NUL-terminated: b keeps a NUL). */
static int scanned_append(struct sw_openai_result *r, struct sw_buf *b, const char *what,
                          const struct sw__scan_val *v, const char **at, struct sw_err *e)
{
    size_t old = b->len;
    /* room for the decoded text, taken by appending the raw bytes (never fewer), then decoded
     * over them in place */
    int rc = text_append(r, b, what, v->p, v->dec, e);
    if (rc)
        return rc;
    if (v->esc) {
        sw__openai_scan_decode(v, b->data + old);
        b->data[old + v->dec] = '\0';
    }
    *at = b->data + old;
    return 0;
}

static void scanned_copy_once(char *dst, size_t n, const struct sw__scan_val *v)
{
    char tmp[SCAN_COPY_MAX];
    if (dst[0] || v->k != SW__V_STR)
        return;
    sw__openai_scan_decode(v, tmp);
    size_t k = SW_MIN(v->dec, n - 1);
    memcpy(dst, tmp, k);
    dst[k] = '\0';
}

static bool text_fits(const struct sw_buf *b, const struct sw__scan_val *v)
{
    return v->k != SW__V_STR || !v->dec || (v->dec <= b->max && b->len <= b->max - v->dec);
}

/* What the scan found can be applied exactly as the jansson path would: the few limits it
 * enforces with an error or a truncation are left to that path. */
static bool scan_applies(const struct sw_openai_result *r, const struct sw__scan *s)
{
    const struct sw__scan_val *strs[] = {&s->id, &s->model, &s->fp, &s->role};
    for (size_t i = 0; i < SW_ARRAY_LEN(strs); i++)
        if (strs[i]->k == SW__V_STR && strs[i]->dec >= SCAN_COPY_MAX)
            return false;
    if (s->finish.k == SW__V_STR && s->finish.dec >= sizeof(r->finish_reason))
        return false;
    const struct sw__scan_val *rtext =
        s->reasoning.k == SW__V_STR ? &s->reasoning : &s->reasoning_content;
    return text_fits(&r->content, &s->content) && text_fits(&r->reasoning, rtext);
}

static int apply_scanned(struct sw_openai_result *r, const struct sw__scan *s, uint64_t t_ns,
                         struct sw_openai_delta *d, struct sw_err *e)
{
    int rc = 0;
    uint32_t flags = 0;
    r->chunks++;
    r->scanned++;
    if (!r->t_first_chunk)
        r->t_first_chunk = t_ns;
    r->t_last_chunk = t_ns;
    scanned_copy_once(r->id, sizeof(r->id), &s->id);
    scanned_copy_once(r->model, sizeof(r->model), &s->model);
    scanned_copy_once(r->system_fingerprint, sizeof(r->system_fingerprint), &s->fp);
    if (s->nchoices && sw__scan_int_or(&s->index, 0) == 0) {
        if (s->delta_obj) {
            if (s->role.k == SW__V_STR) {
                flags |= SW_OAI_CHUNK_ROLE;
                scanned_copy_once(r->role, sizeof(r->role), &s->role);
            }
            if (s->content.k == SW__V_STR && s->content.dec) {
                rc = scanned_append(r, &r->content, "content", &s->content, &d->content, e);
                if (rc)
                    goto fail;
                d->content_len = s->content.dec;
            }
            if (s->reasoning.k == SW__V_STR)
                r->reasoning_field =
                    (enum sw_openai_reasoning_field)(r->reasoning_field | SW_OAI_REASONING_FIELD);
            if (s->reasoning_content.k == SW__V_STR)
                r->reasoning_field =
                    (enum sw_openai_reasoning_field)(r->reasoning_field | SW_OAI_REASONING_CONTENT);
            const struct sw__scan_val *rt =
                s->reasoning.k == SW__V_STR ? &s->reasoning : &s->reasoning_content;
            if (rt->k == SW__V_STR && rt->dec) {
                rc = scanned_append(r, &r->reasoning, "reasoning", rt, &d->reasoning, e);
                if (rc)
                    goto fail;
                d->reasoning_len = rt->dec;
            }
        }
        if (s->finish.k == SW__V_STR) {
            sw__openai_scan_decode(&s->finish, r->finish_reason);
            r->finish_reason[s->finish.dec] = '\0';
            d->finish_reason = r->finish_reason;
            flags |= SW_OAI_CHUNK_FINISH;
        }
    }
    if (s->usage_obj) {
        struct sw_openai_usage *u = &r->usage;
        struct sw__scan_val none = {.k = SW__V_ABSENT};
        u->present = true;
        u->prompt_tokens = sw__scan_int_or(&s->prompt_tokens, -1);
        u->completion_tokens = sw__scan_int_or(&s->completion_tokens, -1);
        u->total_tokens = sw__scan_int_or(&s->total_tokens, -1);
        u->cached_tokens = sw__scan_int_or(s->ptd_obj ? &s->cached_tokens : &none, -1);
        u->reasoning_tokens = sw__scan_int_or(s->ctd_obj ? &s->reasoning_tokens : &none, -1);
        d->usage = true;
        flags |= SW_OAI_CHUNK_USAGE;
    }
    if (s->timings_obj) {
        struct sw_openai_timings *t = &r->timings;
        t->present = true;
        t->cache_n = sw__scan_int_or(&s->cache_n, -1);
        t->prompt_n = sw__scan_int_or(&s->prompt_n, -1);
        t->predicted_n = sw__scan_int_or(&s->predicted_n, -1);
        t->prompt_ms = sw__scan_real_or(&s->prompt_ms, NAN);
        t->prompt_per_token_ms = sw__scan_real_or(&s->prompt_per_token_ms, NAN);
        t->prompt_per_second = sw__scan_real_or(&s->prompt_per_second, NAN);
        t->predicted_ms = sw__scan_real_or(&s->predicted_ms, NAN);
        t->predicted_per_token_ms = sw__scan_real_or(&s->predicted_per_token_ms, NAN);
        t->predicted_per_second = sw__scan_real_or(&s->predicted_per_second, NAN);
        t->draft_n = sw__scan_int_or(&s->draft_n, -1);
        t->draft_n_accepted = sw__scan_int_or(&s->draft_n_accepted, -1);
        d->timings = true;
        flags |= SW_OAI_CHUNK_TIMINGS;
    }
    if (d->content_len || d->reasoning_len) {
        r->text_chunks++;
        if (!r->t_first_text)
            r->t_first_text = t_ns;
    }
    struct sw_openai_chunk_rec rec = {
        .t_ns = t_ns,
        .content_bytes = (uint32_t)SW_MIN(d->content_len, UINT32_MAX),
        .reasoning_bytes = (uint32_t)SW_MIN(d->reasoning_len, UINT32_MAX),
        .flags = flags,
    };
    rc = push_rec(r, &rec, e);
    if (rc)
        goto fail;
    return 0;
fail:
    sw_err_prefix(e, "stream chunk %llu", (unsigned long long)r->chunks);
    return rc;
}

int sw_openai_feed_chunk(struct sw_openai_result *r, const char *data, size_t len, uint64_t t_ns,
                         struct sw_openai_delta *delta, struct sw_err *e)
{
    struct sw__scan scan;
    if (!r->json_only && !(len == 6 && !memcmp(data, "[DONE]", 6)) &&
        !sw__openai_scan_chunk(data, len, &scan) && scan_applies(r, &scan)) {
        struct sw_openai_delta d;
        memset(&d, 0, sizeof(d));
        r->streamed = true;
        /* the previous chunk's tree is no longer the delta's */
        json_decref(r->cur);
        r->cur = NULL;
        int rc = apply_scanned(r, &scan, t_ns, &d, e);
        if (delta)
            *delta = d;
        return rc;
    }
    struct sw_openai_delta d;
    memset(&d, 0, sizeof(d));
    if (delta)
        *delta = d;
    r->streamed = true;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        r->done = true;
        if (delta)
            delta->done = true;
        return 0;
    }
    char where[64];
    snprintf(where, sizeof(where), "stream chunk %llu", (unsigned long long)r->chunks + 1);
    json_t *j = sw_json_parse(data, len, where, e);
    if (!j)
        return SW_EPARSE;
    int rc = 0;
    uint32_t flags = 0;
    if (!json_is_object(j)) {
        rc = sw_err_set(e, SW_EPARSE, "%s is JSON but not an object", where);
        goto out;
    }
    r->chunks++;
    if (!r->t_first_chunk)
        r->t_first_chunk = t_ns;
    r->t_last_chunk = t_ns;
    if (json_object_get(j, "error")) {
        sw__openai_error_from_json(j, 0, &r->error);
        d.error = true;
        flags |= SW_OAI_CHUNK_ERROR;
        struct sw_openai_chunk_rec rec = {.t_ns = t_ns, .flags = flags};
        push_rec(r, &rec, NULL);
        error_message(&r->error, e, where);
        rc = SW_EHTTP;
        goto out;
    }
    rc = apply_object(r, j, true, &d, &flags, e);
    if (rc) {
        sw_err_prefix(e, "%s", where);
        goto out;
    }
    if (d.content_len || d.reasoning_len) {
        r->text_chunks++;
        if (!r->t_first_text)
            r->t_first_text = t_ns;
    }
    struct sw_openai_chunk_rec rec = {
        .t_ns = t_ns,
        .content_bytes = (uint32_t)SW_MIN(d.content_len, UINT32_MAX),
        .reasoning_bytes = (uint32_t)SW_MIN(d.reasoning_len, UINT32_MAX),
        .flags = flags,
    };
    rc = push_rec(r, &rec, e);
out:
    if (delta)
        *delta = d;
    /* the delta points into j: keep j until the next chunk */
    json_decref(r->cur);
    r->cur = j;
    return rc;
}

int sw_openai_parse_response(struct sw_openai_result *r, const char *body, size_t len,
                             struct sw_err *e)
{
    json_t *j = sw_json_parse(body, len, "chat completion reply", e);
    if (!j)
        return SW_EPARSE;
    int rc = 0;
    if (!json_is_object(j)) {
        rc = sw_err_set(e, SW_EPARSE, "the chat completion reply is not a JSON object");
        goto out;
    }
    if (json_object_get(j, "error") || !json_object_get(j, "choices")) {
        sw__openai_error_from_json(j, 0, &r->error);
        if (r->error.shape != SW_OAI_SHAPE_TEXT) {
            error_message(&r->error, e, "chat completion reply");
            rc = SW_EHTTP;
        } else {
            memset(&r->error, 0, sizeof(r->error));
            rc = sw_err_set(e, SW_EPARSE, "the chat completion reply has no choices");
        }
        goto out;
    }
    struct sw_openai_delta d;
    memset(&d, 0, sizeof(d));
    uint32_t flags = 0;
    rc = apply_object(r, j, false, &d, &flags, e);
    if (rc)
        goto out;
    rc = sw_openai_finish(r, e);
out:
    json_decref(j);
    return rc;
}

/* ---- finish: inline reasoning, tool-call arguments ---- */

static const char *find_mem(const char *h, size_t hn, const char *needle)
{
    size_t nn = strlen(needle);
    if (hn < nn)
        return NULL;
    return memmem(h, hn, needle, nn);
}

static int split_think(struct sw_openai_result *r, struct sw_err *e)
{
    const char *c = r->content.data;
    size_t n = r->content.len;
    if (!c || !n)
        return 0;
    size_t lead = 0;
    while (lead < n && (c[lead] == ' ' || c[lead] == '\n' || c[lead] == '\r' || c[lead] == '\t'))
        lead++;
    const char *close;
    size_t rstart, rend, cstart;
    if (n - lead >= 7 && !memcmp(c + lead, "<think>", 7)) {
        rstart = lead + 7;
        close = find_mem(c + rstart, n - rstart, "</think>");
        if (close) {
            rend = (size_t)(close - c);
            cstart = rend + 8;
            r->think = SW_OAI_THINK_INLINE;
        } else {
            rend = n;
            cstart = n;
            r->think = SW_OAI_THINK_UNCLOSED;
        }
    } else {
        close = find_mem(c, n, "</think>");
        if (!close)
            return 0;
        rstart = 0;
        rend = (size_t)(close - c);
        cstart = rend + 8;
        r->think = SW_OAI_THINK_DANGLING;
    }
    int rc = text_append(r, &r->reasoning, "reasoning", c + rstart, rend - rstart, e);
    if (rc)
        return rc;
    while (cstart < n && (c[cstart] == '\n' || c[cstart] == '\r' || c[cstart] == ' '))
        cstart++;
    sw_buf_consume(&r->content, cstart);
    return 0;
}

static void check_args(struct sw_openai_tool_call *c)
{
    c->args_valid = false;
    c->args_error[0] = '\0';
    if (!c->args.len) {
        snprintf(c->args_error, sizeof(c->args_error), "the arguments are empty");
        return;
    }
    json_error_t je;
    json_t *j = json_loadb(c->args.data, c->args.len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(c->args_error, sizeof(c->args_error), "not JSON at byte %d: %.100s", je.position,
                 je.text);
        return;
    }
    if (!json_is_object(j))
        snprintf(c->args_error, sizeof(c->args_error), "JSON but not an object");
    else
        c->args_valid = true;
    json_decref(j);
}

int sw_openai_finish(struct sw_openai_result *r, struct sw_err *e)
{
    if (r->finished)
        return 0;
    r->finished = true;
    int rc = 0;
    if (r->reasoning_field == SW_OAI_REASONING_NONE)
        rc = split_think(r, e);
    for (size_t i = 0; i < r->ntool_calls; i++)
        check_args(&r->tool_calls[i]);
    return rc;
}

int sw_openai_on_event(void *ud, const struct sw_sse_event *ev)
{
    struct sw_openai_result *r = ud;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_openai_feed_chunk(r, ev->data, ev->data_len, ev->t_ns, NULL, &e);
    if (rc && !r->err.code)
        r->err = e;
    return rc;
}

const char *sw_openai_reasoning_field_name(enum sw_openai_reasoning_field f)
{
    static const char *const names[] = {"none", "reasoning_content", "reasoning", "both"};
    return (unsigned)f < SW_ARRAY_LEN(names) ? names[f] : "none";
}

const char *sw_openai_think_name(enum sw_openai_think t)
{
    static const char *const names[] = {"none", "inline", "dangling", "unclosed"};
    return (unsigned)t < SW_ARRAY_LEN(names) ? names[t] : "none";
}
