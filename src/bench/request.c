/*
 * bench/request: one request of a run, from its body to its figures. The body is a synthetic
 * prompt with a nonce at its START (no prefix cache can serve it) sized to the point's depth from
 * the calibration, or a request of the prompts file; llama.cpp requests ask for timings in every
 * chunk (timings_per_token), so tokens are counted per chunk from the engine's own counter, and
 * for cache_prompt:false unless the caller wants the cache. A flight (pooled) carries it on the
 * run's loop: each chunk's counters and the emitter's stamp as the chunk arrives, then, at the
 * end, the server's claims checked (sw_bench_check) before anything is measured
 * (sw_bench_measure), the error in words (the API key never among them), and the next request of
 * a closed loop started.
 *
 * What it deliberately does not do: retry, or hold a sample array per token (ITLs go to fixed
 * histograms).
 */
#include "run_internal.h"

#include <event2/event.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EMIT_KEY "\"sim_emit_ns\":"

/* The emitter's stamp in a chunk's JSON ("sim_emit_ns":N at the top level, as the sim and
 * bench_timing's emitter write it); 0 when absent. A plain search: the key cannot occur inside
 * a JSON string unescaped (its quotes would be \"). */
static uint64_t emit_stamp(const char *d, size_t n)
{
    const char *p = memmem(d, n, EMIT_KEY, sizeof(EMIT_KEY) - 1);
    if (!p)
        return 0;
    p += sizeof(EMIT_KEY) - 1;
    const char *end = d + n;
    uint64_t v = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 19) {
        v = v * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    return digits ? v : 0;
}

/* Each token to the stamp of the chunk that brought it: arrival - emit into h, one value per
 * token. A token-bearing chunk without a stamp is missing; a stamp later than the chunk's
 * arrival or earlier than the previous chunk's cannot be this chunk's send (bad). */
static void emit_match(struct sw_bench_sample *s, const struct sw_openai_result *r,
                       const int64_t *cum, const uint64_t *emit, struct sw_bench_hist *h)
{
    bool per_chunk = s->count_src == SW_BENCH_COUNT_PER_CHUNK && cum;
    int64_t prev = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < r->nrecs && emit; i++) {
        const struct sw_openai_chunk_rec *c = &r->recs[i];
        bool text = c->content_bytes > 0 || c->reasoning_bytes > 0;
        int64_t k = text ? 1 : 0;
        if (per_chunk) {
            k = cum[i] > prev ? cum[i] - prev : 0;
            prev = SW_MAX(prev, cum[i]);
        }
        if (emit[i] && emit[i] < last)
            s->emit_bad++;
        if (emit[i])
            last = emit[i];
        if (k <= 0)
            continue;
        if (!emit[i]) {
            s->emit_missing++;
            continue;
        }
        if (emit[i] > c->t_ns) {
            s->emit_bad++;
            continue;
        }
        s->emit_matched += k;
        for (int64_t j = 0; j < k; j++)
            sw_bench_hist_add(h, c->t_ns - emit[i]);
    }
}

int sw__bench_on_event(void *ud, const struct sw_sse_event *ev)
{
    struct flight *f = ud;
    struct sw_openai_delta d;
    struct sw_err e;
    sw_err_clear(&e);
    memset(&d, 0, sizeof(d));
    size_t before = f->res.nrecs;
    int rc = sw_openai_feed_chunk(&f->res, ev->data, ev->data_len, ev->t_ns, &d, &e);
    if (rc && !f->res.err.code)
        f->res.err = e;
    if (f->res.nrecs == before + 1) {
        if (before >= f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 256;
            int64_t *c = sw_realloc(f->cum, cap * sizeof(*c));
            if (c)
                f->cum = c;
            double *m = c ? sw_realloc(f->srv_ms, cap * sizeof(*m)) : NULL;
            if (m)
                f->srv_ms = m;
            uint64_t *em = m ? sw_realloc(f->emit, cap * sizeof(*em)) : NULL;
            if (em)
                f->emit = em;
            if (!c || !m || !em)
                return SW_ENOMEM;
            f->cap = cap;
        }
        f->cum[before] = -1;
        f->srv_ms[before] = NAN;
        f->emit[before] = f->run->o->emit_stamps ? emit_stamp(ev->data, ev->data_len) : 0;
        if (d.timings && f->res.timings.predicted_n >= 0) {
            f->cum[before] = f->res.timings.predicted_n;
            f->srv_ms[before] = f->res.timings.predicted_ms;
        } else if (d.usage && f->res.usage.completion_tokens >= 0) {
            f->cum[before] = f->res.usage.completion_tokens;
        }
    }
    return rc;
}

/* ---- request bodies ---- */

static int64_t words_for(const struct run *r, int64_t depth)
{
    if (depth <= r->overhead || r->tok_per_word <= 0)
        return 0;
    return (int64_t)((double)(depth - r->overhead) / r->tok_per_word + 0.5);
}

/* One more answered prompt of `words` filler words and `tokens` prompt tokens: the ratio over
 * every prompt so far, so later requests meet their depth closer than the first did. */
void sw__bench_learn_words(struct run *r, int64_t words, int64_t tokens)
{
    r->cal_words += (double)words;
    r->cal_tokens += (double)(tokens - r->overhead);
    if (r->cal_words > 0 && r->cal_tokens > 0)
        r->tok_per_word = r->cal_tokens / r->cal_words;
}

static void engine_fields(const struct run *r, json_t *b)
{
    if (!r->llama)
        return;
    if (!r->o->cache_prompt)
        sw_json_set_bool(b, "cache_prompt", false);
    else
        sw_json_set_bool(b, "cache_prompt", true);
    sw_json_set_bool(b, "timings_per_token", true);
}

/* What a body asks that bounds its reply (sw_bench_check): the largest token ceiling among the
 * keys the engines read (a key that is not a positive integer lifts the ceiling: llama.cpp's
 * n_predict -1 is none), and whether every message part is text. */
static void asked_of(const json_t *b, size_t len, struct sw_bench_seen *a)
{
    static const char *const keys[] = {"max_tokens", "max_completion_tokens", "n_predict"};
    int64_t most = -1;
    bool unbounded = false;
    for (size_t i = 0; i < SW_ARRAY_LEN(keys); i++) {
        const json_t *v = json_object_get(b, keys[i]);
        if (!v)
            continue;
        if (json_is_integer(v) && json_integer_value(v) > 0)
            most = SW_MAX(most, (int64_t)json_integer_value(v));
        else
            unbounded = true;
    }
    memset(a, 0, sizeof(*a));
    a->max_tokens = unbounded ? -1 : most;
    a->body_bytes = len;
    a->elapsed_ms = NAN;
    a->text_only = true;
    const json_t *msgs = json_object_get(b, "messages");
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        const json_t *c = json_object_get(json_array_get(msgs, i), "content");
        for (size_t k = 0; k < json_array_size(c); k++) {
            const char *t = json_string_value(json_object_get(json_array_get(c, k), "type"));
            if (!t || strcmp(t, "text"))
                a->text_only = false;
        }
    }
}

/* The body of one request; sw_free it. *asked (may be NULL) gets what it asks. */
char *sw__bench_make_body(struct run *r, int64_t words, int64_t max_tokens, uint64_t nonce,
                          size_t file_i, struct sw_bench_seen *asked)
{
    json_t *b = NULL;
    if (r->nfile) {
        b = json_deep_copy(r->file[file_i % r->nfile]);
    } else {
        char *prompt = sw_bench_prompt(nonce, (size_t)words, NULL);
        json_t *msgs = prompt ? json_array() : NULL;
        json_t *m = msgs ? sw_openai_msg("user", prompt) : NULL;
        sw_free(prompt);
        if (!m) {
            json_decref(msgs);
            return NULL;
        }
        json_array_append_new(msgs, m);
        b = json_object();
        if (b)
            sw_json_set_new(b, "messages", msgs);
        else
            json_decref(msgs);
    }
    if (!b)
        return NULL;
    if (r->o->model && !json_object_get(b, "model"))
        sw_json_set_str(b, "model", r->o->model);
    sw_json_set_bool(b, "stream", true);
    json_t *so = json_object();
    sw_json_set_bool(so, "include_usage", true);
    if (!r->llama)
        sw_json_set_bool(so, "continuous_usage_stats", true); /* vLLM: usage in every chunk */
    sw_json_set_new(b, "stream_options", so);
    if (max_tokens > 0)
        sw_json_set_int(b, "max_tokens", max_tokens);
    if (r->o->ignore_eos)
        sw_json_set_bool(b, "ignore_eos", true);
    engine_fields(r, b);
    if (r->o->extra)
        json_object_update(b, (json_t *)r->o->extra);
    char *text = sw_json_dumps(b, JSON_COMPACT);
    if (text && asked)
        asked_of(b, strlen(text), asked);
    json_decref(b);
    return text;
}

/* ---- the pool ---- */

static struct flight *flight_get(struct run *r)
{
    struct flight *f = r->free_list;
    if (f) {
        r->free_list = f->next_free;
    } else {
        f = sw_calloc(1, sizeof(*f));
        struct flight **all = f ? sw_realloc(r->all, (r->nall + 1) * sizeof(*all)) : NULL;
        if (!all) {
            sw_free(f);
            return NULL;
        }
        r->all = all;
        r->all[r->nall++] = f;
    }
    sw_net_xfer_init(&f->x);
    sw_openai_result_init(&f->res, 0, 0);
    f->run = r;
    f->next_free = NULL;
    return f;
}

static void flight_put(struct run *r, struct flight *f)
{
    sw_net_xfer_close(&f->x);
    sw_openai_result_free(&f->res);
    sw_free(f->body);
    f->body = NULL;
    f->s = NULL;
    f->next_free = r->free_list;
    r->free_list = f;
}

void sw__bench_pool_free(struct run *r)
{
    for (size_t i = 0; i < r->nall; i++) {
        sw_free(r->all[i]->cum);
        sw_free(r->all[i]->srv_ms);
        sw_free(r->all[i]->emit);
        sw_free(r->all[i]);
    }
    sw_free(r->all);
    r->all = NULL;
    r->nall = 0;
    r->free_list = NULL;
}

/* ---- one request ---- */

static void on_done(void *ud, struct sw_net_xfer *x);

bool sw__bench_start_one(struct run *r, uint64_t intended)
{
    struct sw_bench_point *pt = r->pt;
    if (r->next >= r->cap)
        return false;
    struct sw_bench_sample *s = &pt->samples[r->next];
    memset(s, 0, sizeof(*s));
    s->index = r->next;
    s->depth = pt->depth;
    s->tg = r->o->tg;
    s->concurrency = pt->concurrency;
    s->t_intended = intended;
    r->next++;
    struct flight *f = flight_get(r);
    uint64_t nonce = r->o->reuse_prompt ? r->shared_nonce : ++r->nonce;
    if (f) {
        f->words = r->nfile ? 0 : words_for(r, pt->depth);
        f->body = sw__bench_make_body(r, f->words, r->o->tg, nonce, (size_t)s->index, &f->asked);
    }
    if (!f || !f->body) {
        s->rc = SW_ENOMEM;
        snprintf(s->error, sizeof(s->error), "out of memory building the request");
        if (f)
            flight_put(r, f);
        r->done++;
        return true;
    }
    f->s = s;
    struct sw_net_req *q = &f->x.req;
    q->url = r->url;
    q->bearer = r->o->api_key;
    q->body = f->body;
    q->body_len = strlen(f->body);
    q->total_ms = r->o->timeout_ms ? r->o->timeout_ms : 600000u;
    q->idle_ms = q->total_ms;
    q->fail_on_status = true;
    q->on_event = sw__bench_on_event;
    q->on_done = on_done;
    q->ud = f;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_net_start(&r->loop, &f->x, &e);
    if (rc) {
        s->rc = rc;
        snprintf(s->error, sizeof(s->error), "%.230s", e.msg);
        flight_put(r, f);
        r->done++;
    }
    return true;
}

/* A request whose figures are refused: counts unknown, times and rates undefined (its
 * instants stay: they are the client's). */
static void no_figures(struct sw_bench_sample *s)
{
    s->prompt_tokens = s->completion_tokens = s->reasoning_tokens = s->cached_tokens = -1;
    s->first_chunk_tokens = 0;
    s->count_src = SW_BENCH_COUNT_NONE;
    s->chunks = s->token_chunks = s->multi_chunks = 0;
    s->t_first_token = s->t_first_content = s->t_last_token = 0;
    s->ttft_s = s->ttft_sent_s = s->ttfc_s = s->decode_span_s = s->tpot_s = NAN;
    s->decode_tps = s->prefill_tps = NAN;
    s->e2e_s = s->e2e_sent_s = s->send_lag_s = s->queue_s = NAN;
    s->srv = false;
    s->srv_prompt_n = s->srv_cache_n = s->srv_predicted_n = -1;
    s->srv_draft_n = s->srv_draft_accepted = -1;
    s->srv_prompt_ms = s->srv_predicted_ms = s->srv_prompt_tps = s->srv_decode_tps = NAN;
    s->span_diff_ms = s->decode_diff_pct = s->prefill_diff_pct = s->delivery_spread_ms = NAN;
    s->counts_agree = true;
}

/* s->error from why (a server's words among them): "HTTP N: " when the status says so, the API
 * key replaced wherever it is echoed (before the text is cut, so no part of it is left), and
 * well-formed UTF-8. */
static void error_text(struct sw_bench_sample *s, long status, const char *why, const char *key)
{
    char w[1100], t[sizeof(s->error)];
    snprintf(w, sizeof(w), "%s", why);
    sw_redact(w, key);
    if (status && status != 200)
        snprintf(t, sizeof(t), "HTTP %ld: %.200s", status, w);
    else
        snprintf(t, sizeof(t), "%.230s", w);
    sw_utf8_repair(t, strlen(t), s->error, sizeof(s->error), NULL);
}

static bool closed_loop(const struct run *r)
{
    return r->o->mode == SW_BENCH_SWEEP;
}

static void on_done(void *ud, struct sw_net_xfer *x)
{
    struct flight *f = ud;
    struct run *r = f->run;
    struct sw_bench_point *pt = r->pt;
    struct sw_bench_sample *s = f->s;
    const struct sw_net_resp *resp = &x->resp;
    uint64_t now = sw_now_ns();
    s->status = resp->status;
    s->t_sent =
        resp->t.connected && resp->t.connected > resp->t.start ? resp->t.connected : resp->t.start;
    s->t_issued = resp->t.start;
    s->t_first_byte = resp->t.first_byte;
    s->t_end = resp->t.done ? resp->t.done : now;
    sw_openai_finish(&f->res, NULL);
    /* the server's claims first: a request whose figures cannot be is measured not at all (a
     * chunk's count sizes the per-token loops, and none of its figures may enter the point) */
    struct sw_err ce;
    sw_err_clear(&ce);
    f->asked.elapsed_ms = s->t_end > s->t_sent ? (double)(s->t_end - s->t_sent) / 1e6 : NAN;
    f->asked.cum = f->cum;
    f->asked.ncum = f->res.nrecs;
    s->invalid = sw_bench_check(&f->res, &f->asked, &ce) != 0;
    if (s->invalid) {
        no_figures(s);
    } else {
        sw_bench_measure(s, &f->res, f->cum, f->srv_ms, &pt->itl_tok, &pt->itl_chunk);
        if (r->o->emit_stamps)
            emit_match(s, &f->res, f->cum, f->emit, &pt->emit);
    }
    s->rc = s->invalid ? SW_ERANGE : resp->rc;
    if (!s->rc && f->res.error.present)
        s->rc = SW_EHTTP;
    if (!s->rc && !s->t_first_token)
        s->rc = SW_EPARSE;
    if (s->rc) {
        struct sw_openai_error oe;
        memset(&oe, 0, sizeof(oe));
        if (resp->status >= 400 && resp->body.len)
            sw_openai_parse_error(resp->body.data, resp->body.len, resp->status, &oe);
        const char *why = s->invalid             ? ce.msg
                          : f->res.error.present ? f->res.error.message
                          : oe.present           ? oe.message
                          : resp->err.msg[0]     ? resp->err.msg
                          : !s->t_first_token    ? "no token came"
                                                 : sw_strerror(s->rc);
        error_text(s, resp->status, why, r->o->api_key);
        if (!r->first_rc) {
            r->first_rc = s->rc;
            snprintf(r->first_err, sizeof(r->first_err), "%s", s->error);
        }
    }
    if (!s->rc && f->words > 0 && s->prompt_tokens > r->overhead)
        sw__bench_learn_words(r, f->words, s->prompt_tokens);
    s->good = sw_bench_slo_good(r->o, s);
    flight_put(r, f);
    r->done++;
    if (r->o->progress)
        sw_progress_update(&r->prog, ++r->prog_done);
    if (closed_loop(r))
        sw__bench_start_one(r, sw_now_ns());
    else if (r->sending_over && sw_net_loop_active(&r->loop) == 0)
        event_base_loopbreak(sw_net_loop_base(&r->loop));
}
