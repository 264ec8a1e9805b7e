/*
 * bench/run: the workloads on one net.h event loop. A sweep runs each (depth, concurrency)
 * point as a closed loop (C streams kept in flight until C x repeat requests ran); an open-loop
 * run sends on a seeded arrival schedule (a libevent timer on the loop's base) whatever is still
 * in flight. Every request's intended send is the schedule's instant (closed loop: the moment a
 * stream's previous request ended), its actual send the moment its connection was ready.
 *
 * llama.cpp requests ask for timings in every chunk (timings_per_token), so tokens are counted per
 * chunk from the engine's own counter; and for cache_prompt:false unless the caller wants the
 * cache. A calibration pair of short requests first learns the prompt's template overhead and the
 * tokens per filler word, so a depth is met to within a few tokens (the measured prompt_tokens is
 * what the report shows beside the asked depth).
 *
 * What it deliberately does not do: retry, or hold a sample array per token (ITLs go to fixed
 * histograms).
 */
#include "bench_internal.h"

#include <event2/event.h>

#include <pthread.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAL_WORDS 256

struct run;

struct flight {
    struct sw_net_xfer x;
    struct sw_openai_result res;
    char *body;
    int64_t *cum;
    double *srv_ms;
    uint64_t *emit; /* opts.emit_stamps: the chunk's "sim_emit_ns", 0 when it carried none */
    size_t cap;
    struct sw_bench_sample *s;
    struct run *run;
    struct flight *next_free;
    int64_t words;              /* the filler words of its prompt (0: a file's request) */
    struct sw_bench_seen asked; /* its ceiling, body bytes, text only (sw_bench_check) */
};

struct run {
    const struct sw_bench_opts *o;
    struct sw_bench_report *rep;
    struct sw_net_loop loop;
    char url[700];
    bool llama;
    /* prompts */
    double tok_per_word;
    int64_t overhead; /* prompt tokens of a prompt with no filler words */
    /* every answered prompt's filler words and tokens, the calibration's among them: the ratio
     * one random prompt gives is ~4% off, so depths drift between runs unless refined */
    double cal_words, cal_tokens;
    json_t **file; /* requests read from --prompts */
    size_t nfile;
    uint64_t nonce;
    /* the point being run */
    struct sw_bench_point *pt;
    size_t next, done, cap;
    uint64_t shared_nonce;
    /* open loop */
    struct event *tick;
    struct sw_bench_rng rng;
    uint64_t t0;
    double next_at_s;
    bool sending_over;
    bool truncated; /* the schedule outgrew the samples' room (10 sigma: never expected) */
    /* --threads N: every thread walks the one schedule and sends the arrivals i with
     * i % stride == phase (stride 1: all of them) */
    uint64_t sched_i;
    int stride, phase;
    /* pool */
    struct flight *free_list;
    struct flight **all;
    size_t nall;
    /* progress */
    struct sw_progress prog;
    uint64_t prog_done;
    /* the first failure, for a run where nothing succeeded */
    int first_rc;
    char first_err[240];
};

void sw_bench_opts_init(struct sw_bench_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->tg = 128;
    o->pp = 512;
    o->repeat = 3;
    o->ignore_eos = true;
    o->arrival = SW_BENCH_ARRIVAL_POISSON;
    o->cv = 1.0;
    o->engine_metrics = true;
    o->duration_s = 30;
    o->seed = 1;
}

/* ---- chunks with their engine counters ---- */

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

static int on_event(void *ud, const struct sw_sse_event *ev)
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
static void learn_words(struct run *r, int64_t words, int64_t tokens)
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
static char *make_body(struct run *r, int64_t words, int64_t max_tokens, uint64_t nonce,
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

static void pool_free(struct run *r)
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

static bool start_one(struct run *r, uint64_t intended)
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
        f->body = make_body(r, f->words, r->o->tg, nonce, (size_t)s->index, &f->asked);
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
    q->on_event = on_event;
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
        learn_words(r, f->words, s->prompt_tokens);
    s->good = sw_bench_slo_good(r->o, s);
    flight_put(r, f);
    r->done++;
    if (r->o->progress)
        sw_progress_update(&r->prog, ++r->prog_done);
    if (closed_loop(r))
        start_one(r, sw_now_ns());
    else if (r->sending_over && sw_net_loop_active(&r->loop) == 0)
        event_base_loopbreak(sw_net_loop_base(&r->loop));
}

/* ---- points ---- */

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The client's own cost over a point: the loop thread's CPU and the wall time it ran in. */
static void cost_begin(struct sw_bench_point *pt)
{
    pt->client_cpu_s = thread_cpu_s();
    pt->client_wall_s = (double)sw_now_ns() / 1e9;
}

static void cost_end(struct sw_bench_point *pt)
{
    pt->client_cpu_s = thread_cpu_s() - pt->client_cpu_s;
    pt->client_wall_s = (double)sw_now_ns() / 1e9 - pt->client_wall_s;
}

static int point_init(struct sw_bench_point *pt, int64_t depth, int conc, size_t cap)
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
static void point_close(struct sw_bench_point *pt)
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

static int run_threads(struct run *r, struct sw_bench_point *pt, int T);

static int run_closed(struct run *r, struct sw_bench_point *pt)
{
    int T = SW_MIN(r->o->threads, pt->concurrency);
    if (T > 1)
        return run_threads(r, pt, T);
    pt->threads = 1;
    r->pt = pt;
    r->next = r->done = 0;
    r->cap = (size_t)pt->concurrency * (size_t)r->o->repeat;
    r->shared_nonce = ++r->nonce;
    cost_begin(pt);
    uint64_t now = sw_now_ns();
    for (int i = 0; i < pt->concurrency; i++)
        start_one(r, now);
    int rc = sw_net_loop_run(&r->loop);
    cost_end(pt);
    pt->nsamples = r->next;
    point_close(pt);
    return rc;
}

/* ---- closed loop on several threads (--threads N): one event loop each ---- */

static int loop_open(struct run *r, struct event_base **base, struct sw_err *e)
{
    /* libevent times its timers on CLOCK_MONOTONIC_COARSE unless asked (a 4 ms tick at HZ=250):
     * the open-loop schedule would run up to a tick late, every send lag with it */
    struct event_config *cfg = event_config_new();
    if (cfg)
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    *base = cfg ? event_base_new_with_config(cfg) : NULL;
    if (cfg)
        event_config_free(cfg);
    if (!*base)
        return sw_err_set(e, SW_ENOMEM, "bench: cannot make an event base");
    struct sw_net_loop_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.base = *base;
    lo.max_total_conns = r->o->connections;
    lo.max_host_conns = r->o->connections;
    lo.max_cached_conns = r->o->connections > 64 ? r->o->connections : 0;
    lo.unix_socket = r->o->unix_socket;
    int rc = sw_net_loop_init(&r->loop, &lo, e);
    if (rc) {
        event_base_free(*base);
        *base = NULL;
    }
    return rc;
}

/* Fold one thread's share of a point into the point: its histograms, client CPU and wall time,
 * the first error any thread met, its finished requests (the progress). */
static void merge_thread(struct run *r, struct sw_bench_point *pt, const struct run *xr,
                         const struct sw_bench_point *xpt, double *cpu, double *wall)
{
    sw_bench_hist_merge(&pt->itl_tok, &xpt->itl_tok);
    sw_bench_hist_merge(&pt->itl_chunk, &xpt->itl_chunk);
    sw_bench_hist_merge(&pt->emit, &xpt->emit);
    *cpu += xpt->client_cpu_s;
    *wall = SW_MAX(*wall, xpt->client_wall_s);
    if (xr->first_rc && !r->first_rc) {
        r->first_rc = xr->first_rc;
        snprintf(r->first_err, sizeof(r->first_err), "%s", xr->first_err);
    }
    r->prog_done += xr->done; /* a thread draws no bar: its finished requests */
}

struct sub {
    struct run r;
    struct sw_bench_opts o; /* the caller's, without the progress bar */
    struct sw_bench_point pt;
    struct event_base *base;
    int streams;
    int rc;
    pthread_t th;
};

static void *sub_main(void *arg)
{
    struct sub *u = arg;
    cost_begin(&u->pt);
    uint64_t now = sw_now_ns();
    for (int i = 0; i < u->streams; i++)
        start_one(&u->r, now);
    u->rc = sw_net_loop_run(&u->r.loop);
    cost_end(&u->pt);
    return NULL;
}

/* Thread t's own copy of the run, its options (no progress bar: the caller draws it) and the
 * point (empty histograms; the samples are the caller's to place): a pool of its own, a nonce
 * range of its own. */
static void thread_copy(const struct run *r, const struct sw_bench_point *pt, int t, struct run *xr,
                        struct sw_bench_opts *xo, struct sw_bench_point *xpt)
{
    *xo = *r->o;
    xo->progress = NULL;
    *xr = *r;
    xr->o = xo;
    xr->free_list = NULL;
    xr->all = NULL;
    xr->nall = 0;
    xr->first_rc = 0;
    xr->truncated = false;
    xr->nonce = r->nonce + (uint64_t)(t + 1) * 1000000007ull;
    xr->next = xr->done = 0;
    *xpt = *pt;
    struct sw_bench_hist *h[] = {&xpt->itl_tok, &xpt->itl_chunk, &xpt->emit};
    for (size_t i = 0; i < SW_ARRAY_LEN(h); i++)
        sw_bench_hist_init(h[i]);
    xr->pt = xpt;
}

/* The point's C streams split over T threads, each its own loop and its own share of the
 * samples; the per-token histograms and the cost merged after. */
static int run_threads(struct run *r, struct sw_bench_point *pt, int T)
{
    struct sub *u = sw_calloc((size_t)T, sizeof(*u));
    if (!u)
        return SW_ENOMEM;
    int rc = 0, started = 0;
    size_t off = 0;
    for (int t = 0; t < T && !rc; t++) {
        struct sub *x = &u[t];
        thread_copy(r, pt, t, &x->r, &x->o, &x->pt);
        x->streams = pt->concurrency / T + (t < pt->concurrency % T);
        x->pt.samples = pt->samples + off;
        x->r.cap = (size_t)x->streams * (size_t)r->o->repeat;
        off += x->r.cap;
        struct sw_err e;
        rc = loop_open(&x->r, &x->base, &e);
        if (rc)
            break;
        started++;
    }
    int made = 0;
    for (int t = 0; t < started && !rc; t++) {
        if (pthread_create(&u[t].th, NULL, sub_main, &u[t])) {
            rc = SW_ENOMEM;
            break;
        }
        made++;
    }
    double cpu = 0, wall = 0;
    size_t n = 0;
    for (int t = 0; t < made; t++) {
        pthread_join(u[t].th, NULL);
        struct sub *x = &u[t];
        if (x->rc && !rc)
            rc = x->rc;
        /* the samples of thread t sit right after those of t - 1 (each ran all of its cap) */
        n += x->r.next;
        merge_thread(r, pt, &x->r, &x->pt, &cpu, &wall);
    }
    for (int t = 0; t < started; t++) {
        sw_net_loop_close(&u[t].r.loop);
        event_base_free(u[t].base);
        pool_free(&u[t].r);
    }
    r->nonce += (uint64_t)(T + 1) * 1000000007ull;
    pt->nsamples = made == T ? n : 0;
    pt->client_cpu_s = cpu;
    pt->client_wall_s = wall;
    pt->threads = T;
    sw_free(u);
    point_close(pt);
    if (r->o->progress)
        sw_progress_update(&r->prog, r->prog_done);
    return rc;
}

/* ---- open loop ---- */

static void schedule(struct run *r);

static void on_tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct run *r = ud;
    uint64_t now = sw_now_ns();
    /* every instant already due goes now, each keeping its own intended time */
    while (!r->sending_over) {
        uint64_t due = r->t0 + (uint64_t)(r->next_at_s * 1e9);
        if (due > now)
            break;
        if (r->next_at_s >= r->o->duration_s) {
            r->sending_over = true;
            break;
        }
        bool mine = r->stride <= 1 || r->sched_i % (uint64_t)r->stride == (uint64_t)r->phase;
        r->sched_i++;
        if (mine && !start_one(r, due)) {
            r->truncated = true;
            r->sending_over = true;
            break;
        }
        r->next_at_s += sw_bench_arrival_gap(r->o->arrival, r->o->cv, r->o->rate, &r->rng);
    }
    if (r->sending_over) {
        if (sw_net_loop_active(&r->loop) == 0)
            event_base_loopbreak(sw_net_loop_base(&r->loop));
        return;
    }
    schedule(r);
}

static void schedule(struct run *r)
{
    uint64_t due = r->t0 + (uint64_t)(r->next_at_s * 1e9), now = sw_now_ns();
    uint64_t wait = due > now ? due - now : 0;
    struct timeval tv = {(time_t)(wait / 1000000000u), (suseconds_t)(wait % 1000000000u / 1000u)};
    evtimer_add(r->tick, &tv);
}

/* The schedule from t0 on r's loop until its last request is done (pt's samples: r->pt). */
static int open_loop(struct run *r, uint64_t t0)
{
    r->next = r->done = 0;
    sw_bench_rng_seed(&r->rng, r->o->seed);
    r->tick = evtimer_new(sw_net_loop_base(&r->loop), on_tick, r);
    if (!r->tick)
        return SW_ENOMEM;
    r->t0 = t0;
    r->next_at_s = 0;
    r->sched_i = 0;
    r->sending_over = false;
    schedule(r);
    int rc = event_base_loop(sw_net_loop_base(&r->loop), 0) < 0 ? SW_EIO : 0;
    /* anything still running (a break from elsewhere) runs out */
    if (!rc && sw_net_loop_active(&r->loop))
        rc = sw_net_loop_run(&r->loop);
    event_free(r->tick);
    r->tick = NULL;
    return rc;
}

static int run_open_threads(struct run *r, struct sw_bench_point *pt, int T);

static int run_open(struct run *r, struct sw_bench_point *pt)
{
    if (r->o->threads > 1)
        return run_open_threads(r, pt, r->o->threads);
    pt->threads = 1;
    r->pt = pt;
    r->shared_nonce = ++r->nonce;
    r->stride = 1;
    cost_begin(pt);
    int rc = open_loop(r, sw_now_ns());
    cost_end(pt);
    pt->nsamples = r->next;
    point_close(pt);
    return rc;
}

/* ---- open loop on several threads: one schedule, its arrivals dealt round-robin ---- */

struct osub {
    struct run r;
    struct sw_bench_opts o; /* the caller's, without the progress bar */
    struct sw_bench_point pt;
    struct event_base *base;
    uint64_t t0;
    int rc;
    pthread_t th;
};

static void *osub_main(void *arg)
{
    struct osub *u = arg;
    cost_begin(&u->pt);
    u->rc = open_loop(&u->r, u->t0);
    cost_end(&u->pt);
    return NULL;
}

static int by_intended(const void *a, const void *b)
{
    const struct sw_bench_sample *x = a, *y = b;
    return x->t_intended < y->t_intended ? -1 : x->t_intended > y->t_intended;
}

/* Thread t sends arrivals t, t + T, t + 2T... of the schedule a single loop would keep (same
 * seed, same intended instants), each on its own loop and connections (--connections split
 * over the threads), into its own samples. After: the samples gathered in intended order (the
 * per-request figures, the send lag among them, stay per intended send), the per-token
 * histograms and the cost merged. */
static int run_open_threads(struct run *r, struct sw_bench_point *pt, int T)
{
    struct osub *u = sw_calloc((size_t)T, sizeof(*u));
    if (!u)
        return SW_ENOMEM;
    int rc = 0, started = 0;
    r->shared_nonce = ++r->nonce;
    for (int t = 0; t < T && !rc; t++) {
        struct osub *x = &u[t];
        thread_copy(r, pt, t, &x->r, &x->o, &x->pt);
        if (r->o->connections > 0)
            x->o.connections = (r->o->connections + T - 1) / T;
        x->r.stride = T;
        x->r.phase = t;
        /* a thread's share of a random schedule is not known in advance: room for all of it */
        x->pt.samples = sw_calloc(r->cap ? r->cap : 1, sizeof(*x->pt.samples));
        if (!x->pt.samples) {
            rc = SW_ENOMEM;
            break;
        }
        x->r.cap = r->cap;
        struct sw_err e;
        rc = loop_open(&x->r, &x->base, &e);
        if (rc) {
            sw_free(x->pt.samples);
            x->pt.samples = NULL;
            break;
        }
        started++;
    }
    /* one t0 for every thread: a thread that starts late shows it as send lag */
    uint64_t t0 = sw_now_ns();
    int made = 0;
    for (int t = 0; t < started && !rc; t++) {
        u[t].t0 = t0;
        if (pthread_create(&u[t].th, NULL, osub_main, &u[t])) {
            rc = SW_ENOMEM;
            break;
        }
        made++;
    }
    double cpu = 0, wall = 0;
    size_t n = 0;
    for (int t = 0; t < made; t++) {
        pthread_join(u[t].th, NULL);
        struct osub *x = &u[t];
        if (x->rc && !rc)
            rc = x->rc;
        for (size_t i = 0; i < x->r.next; i++) {
            if (n >= r->cap) {
                r->truncated = true;
                break;
            }
            pt->samples[n++] = x->pt.samples[i];
        }
        r->truncated = r->truncated || x->r.truncated;
        merge_thread(r, pt, &x->r, &x->pt, &cpu, &wall);
    }
    for (int t = 0; t < started; t++) {
        sw_net_loop_close(&u[t].r.loop);
        event_base_free(u[t].base);
        pool_free(&u[t].r);
        sw_free(u[t].pt.samples);
    }
    r->nonce += (uint64_t)(T + 1) * 1000000007ull;
    qsort(pt->samples, n, sizeof(*pt->samples), by_intended);
    for (size_t i = 0; i < n; i++)
        pt->samples[i].index = i;
    pt->nsamples = made == T ? n : 0;
    pt->client_cpu_s = cpu;
    pt->client_wall_s = wall;
    pt->threads = T;
    sw_free(u);
    point_close(pt);
    if (r->o->progress)
        sw_progress_update(&r->prog, r->prog_done);
    return rc;
}

/* ---- calibration and files ---- */

/* One short request, synchronously; *prompt_tokens from its usage. */
static int one_prompt(struct run *r, int64_t words, int64_t *prompt_tokens, struct sw_err *e)
{
    struct sw_bench_seen asked;
    char *body = make_body(r, words, 1, ++r->nonce, 0, &asked);
    if (!body)
        return sw_err_set(e, SW_ENOMEM, "bench: out of memory");
    struct flight f;
    memset(&f, 0, sizeof(f));
    sw_openai_result_init(&f.res, 0, 0);
    f.run = r;
    struct sw_net_req q;
    memset(&q, 0, sizeof(q));
    q.url = r->url;
    q.bearer = r->o->api_key;
    q.body = body;
    q.body_len = strlen(body);
    q.total_ms = r->o->timeout_ms ? r->o->timeout_ms : 600000u;
    q.fail_on_status = true;
    q.on_event = on_event;
    q.ud = &f;
    struct sw_net_resp resp;
    int rc = sw_net_request(&r->loop, &q, &resp, e);
    if (!rc && f.res.error.present) {
        sw_redact(f.res.error.message, r->o->api_key);
        rc = sw_err_set(e, SW_EHTTP, "%s: the calibration request failed: %s", r->o->url,
                        f.res.error.message);
    }
    if (!rc) {
        /* the depths are met from this count: a claim that cannot be would set them all */
        asked.elapsed_ms =
            resp.t.done > resp.t.start ? (double)(resp.t.done - resp.t.start) / 1e6 : NAN;
        asked.cum = f.cum;
        asked.ncum = f.res.nrecs;
        rc = sw_bench_check(&f.res, &asked, e);
        if (rc)
            sw_err_prefix(e, "%s: the calibration request", r->o->url);
    }
    if (!rc) {
        int64_t p = f.res.usage.present ? f.res.usage.prompt_tokens : -1;
        if (p < 0 && f.res.timings.present)
            p = f.res.timings.prompt_n + SW_MAX(f.res.timings.cache_n, 0);
        if (p < 0)
            rc = sw_err_set(e, SW_EHTTP,
                            "%s: the server reports no prompt token count (no usage, no "
                            "timings): depths cannot be met",
                            r->o->url);
        *prompt_tokens = p;
    } else if (resp.status && resp.body.len) {
        struct sw_openai_error oe;
        sw_openai_parse_error(resp.body.data, resp.body.len, resp.status, &oe);
        sw_redact(oe.message, r->o->api_key);
        sw_err_set(e, rc, "%s: HTTP %ld: %.300s", r->o->url, resp.status, oe.message);
    }
    sw_net_resp_free(&resp);
    sw_openai_result_free(&f.res);
    sw_free(f.cum);
    sw_free(f.srv_ms);
    sw_free(f.emit);
    sw_free(body);
    return rc;
}

static int calibrate(struct run *r, struct sw_err *e)
{
    int64_t p0 = 0, p1 = 0;
    int rc = one_prompt(r, 0, &p0, e);
    if (!rc)
        rc = one_prompt(r, CAL_WORDS, &p1, e);
    if (rc)
        return rc;
    r->overhead = p0;
    r->tok_per_word = p1 > p0 ? (double)(p1 - p0) / CAL_WORDS : 1.0;
    r->cal_words = r->cal_tokens = 0;
    if (p1 > p0)
        learn_words(r, CAL_WORDS, p1);
    return 0;
}

static int load_file(struct run *r, const char *path, struct sw_err *e)
{
    char *data = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, 256u * 1024u * 1024u, &data, &len, e);
    if (rc)
        return rc;
    size_t line = 0;
    char *p = data, *end = data + len;
    while (!rc && p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        if (n && !(n == 1 && p[0] == '\r')) {
            char where[4200];
            snprintf(where, sizeof(where), "%s:%zu", path, line);
            json_t *j = sw_json_parse(p, n, where, e);
            if (!j) {
                rc = e && e->code ? e->code : SW_EPARSE;
                break;
            }
            if (!json_is_object(j) || !json_is_array(json_object_get(j, "messages"))) {
                json_decref(j);
                rc = sw_err_set(e, SW_EPARSE, "%s: not a chat request (an object with messages)",
                                where);
                break;
            }
            json_t **f = sw_realloc(r->file, (r->nfile + 1) * sizeof(*f));
            if (!f) {
                json_decref(j);
                rc = sw_err_set(e, SW_ENOMEM, "%s: out of memory", where);
                break;
            }
            r->file = f;
            r->file[r->nfile++] = j;
        }
        p += n + 1;
    }
    sw_free(data);
    if (!rc && !r->nfile)
        rc = sw_err_set(e, SW_EINVAL, "%s: no request in the file", path);
    return rc;
}

/* ---- the run ---- */

static int check_opts(const struct sw_bench_opts *o, struct sw_err *e)
{
    if (!o->url || strncmp(o->url, "http", 4))
        return sw_err_set(e, SW_EINVAL, "bench: a URL http(s)://HOST:PORT is needed");
    if (o->tg < 1 || o->tg > 1000000)
        return sw_err_set(e, SW_EINVAL, "bench: --tg must be 1..1000000 (got %lld)",
                          (long long)o->tg);
    if (o->mode == SW_BENCH_SWEEP) {
        if (o->repeat < 1 || o->repeat > 100000)
            return sw_err_set(e, SW_EINVAL, "bench: --repeat must be 1..100000");
        for (size_t i = 0; i < o->nconc; i++)
            if (o->conc[i] < 1 || o->conc[i] > 4096)
                return sw_err_set(e, SW_EINVAL, "bench: --concurrency must be 1..4096 (got %d)",
                                  o->conc[i]);
    } else {
        if (!(o->rate > 0) || o->rate > 100000)
            return sw_err_set(e, SW_EINVAL, "bench: --rate must be in (0, 100000]");
        if (!(o->duration_s > 0) || o->duration_s > 86400)
            return sw_err_set(e, SW_EINVAL, "bench: --duration must be in (0, 1 day]");
        if (o->rate * o->duration_s > 200000)
            return sw_err_set(e, SW_EINVAL,
                              "bench: --rate x --duration asks for more than 200,000 requests");
    }
    if (o->threads < 0 || o->threads > 256)
        return sw_err_set(e, SW_EINVAL, "bench: --threads must be 1..256");
    for (size_t i = 0; i < o->ndepths; i++)
        if (o->depths[i] < 0 || o->depths[i] > 100000000)
            return sw_err_set(e, SW_EINVAL, "bench: a depth must be 0..100M tokens");
    return 0;
}

static void verdicts(const struct sw_bench_opts *o, struct sw_bench_report *rep)
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

/* Each point against the decode roofline, at its measured depth (the mean prompt tokens). */
static void roofline(const struct sw_bench_opts *o, struct sw_bench_report *rep)
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

/* The second scrape, the deltas, and what they say about the cache. An engine's counters may
 * trail the last response by an iteration: while the generation delta is short of the client's
 * count the page is read again, up to a second. */
static void engine_counters(struct run *r, const char *base, const struct sw_openai_metrics *before,
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

int sw_bench_run(const struct sw_bench_opts *o, struct sw_bench_report *rep, struct sw_err *e)
{
    memset(rep, 0, sizeof(*rep));
    int rc = check_opts(o, e);
    if (rc)
        return rc;
    struct run r;
    struct event_base *base = NULL;
    struct sw_openai_metrics before, after;
    bool have_before = false, have_after = false;
    memset(&before, 0, sizeof(before));
    memset(&after, 0, sizeof(after));
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.rep = rep;
    r.llama = !o->engine || !strcmp(o->engine, "llama.cpp") || !strcmp(o->engine, "llamacpp");
    r.nonce = (o->seed * 1000003ull) ^ (sw_now_ns() / 1000u);
    size_t ul = strlen(o->url);
    while (ul && o->url[ul - 1] == '/')
        ul--;
    snprintf(r.url, sizeof(r.url), "%.*s/v1/chat/completions", (int)SW_MIN(ul, 600u), o->url);
    sw_net_redact_url(o->url, rep->url, sizeof(rep->url));
    snprintf(rep->model, sizeof(rep->model), "%s", o->model ? o->model : "");
    snprintf(rep->engine, sizeof(rep->engine), "%s", o->engine ? o->engine : "llama.cpp");
    rep->mode = o->mode;
    rep->started_at = sw_wall_unix();
    rc = loop_open(&r, &base, e);
    if (rc)
        return rc;
    if (o->prompts_file) {
        rc = load_file(&r, o->prompts_file, e);
        if (rc)
            goto out;
    } else {
        rc = calibrate(&r, e);
        if (rc)
            goto out;
    }
    /* the engine's counters from here (calibration excluded) to the last point's end */
    char root[700];
    snprintf(root, sizeof(root), "%.*s", (int)SW_MIN(ul, 600u), o->url);
    if (o->reset_cache) {
        rc = sw__bench_reset_cache(&r.loop, root, o->engine, o->api_key, rep->counters.reset,
                                   sizeof(rep->counters.reset), e);
        if (rc)
            goto out;
    }
    if (o->engine_metrics)
        have_before = !sw__bench_scrape(&r.loop, root, o->api_key, &before, rep->counters.why,
                                        sizeof(rep->counters.why));
    else
        snprintf(rep->counters.why, sizeof(rep->counters.why), "not read (asked)");
    int64_t depths[SW_BENCH_MAX_POINTS];
    size_t nd = o->ndepths;
    memcpy(depths, o->depths, nd * sizeof(*depths));
    if (!nd)
        depths[nd++] = o->pp;
    if (o->prompts_file) {
        nd = 1;
        depths[0] = -1;
    }
    int conc[SW_BENCH_MAX_POINTS];
    size_t nc = o->nconc;
    memcpy(conc, o->conc, nc * sizeof(*conc));
    if (!nc)
        conc[nc++] = 1;
    if (o->mode == SW_BENCH_OPEN) {
        nd = nc = 1;
        conc[0] = 0;
    }
    rep->points = sw_calloc(nd * nc, sizeof(*rep->points));
    if (!rep->points) {
        rc = sw_err_set(e, SW_ENOMEM, "bench: out of memory");
        goto out;
    }
    uint64_t total = 0;
    size_t caps[SW_BENCH_MAX_POINTS * 2];
    size_t open_cap = 0;
    if (o->mode == SW_BENCH_OPEN) {
        /* the schedule's length is random: its mean plus ten standard deviations of a renewal
         * count (variance ~ cv^2 x mean), at least 64 more */
        double mean = o->rate * o->duration_s;
        open_cap = (size_t)(mean + 10.0 * SW_MAX(o->cv, 0.1) * sqrt(mean)) + 64;
        total = (uint64_t)(o->rate * o->duration_s);
    } else {
        for (size_t c = 0; c < nc; c++) {
            caps[c] = (size_t)conc[c] * (size_t)o->repeat;
            total += caps[c] * nd;
        }
    }
    if (o->progress) {
        sw_progress_init(&r.prog, "bench", "req", total);
        r.prog.out = o->progress;
    }
    for (size_t d = 0; d < nd && !rc; d++) {
        for (size_t c = 0; c < nc && !rc; c++) {
            struct sw_bench_point *pt = &rep->points[rep->npoints];
            rc = point_init(pt, depths[d], conc[c], o->mode == SW_BENCH_OPEN ? open_cap : caps[c]);
            if (rc) {
                sw_err_set(e, rc, "bench: out of memory");
                break;
            }
            rep->npoints++;
            if (o->mode == SW_BENCH_OPEN) {
                r.cap = open_cap;
                rc = run_open(&r, pt);
            } else {
                rc = run_closed(&r, pt);
            }
            if (rc)
                sw_err_set(e, rc, "bench: the event loop failed");
        }
    }
    if (o->progress)
        sw_progress_finish(&r.prog);
    if (rc)
        goto out;
    if (o->mode == SW_BENCH_OPEN && rep->npoints) {
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
        /* achieved: requests actually sent over the span from the first to the last send */
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
        if (r.truncated) {
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
    verdicts(o, rep);
    roofline(o, rep);
    if (have_before)
        engine_counters(&r, root, &before, &after, &have_after);
    sw_bench_slo_text(o, rep->slo, sizeof(rep->slo));
    size_t ok = 0;
    for (size_t i = 0; i < rep->npoints; i++)
        ok += rep->points[i].nsamples - rep->points[i].failed;
    if (!ok) {
        rc = sw_err_set(e, r.first_rc ? r.first_rc : SW_EIO, "%s: no request succeeded: %s",
                        rep->url, r.first_err);
    }
out:
    if (have_before)
        sw_openai_metrics_free(&before);
    if (have_after)
        sw_openai_metrics_free(&after);
    sw_net_loop_close(&r.loop);
    event_base_free(base);
    pool_free(&r);
    for (size_t i = 0; i < r.nfile; i++)
        json_decref(r.file[i]);
    sw_free(r.file);
    return rc;
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

void sw_bench_report_free(struct sw_bench_report *rep)
{
    if (!rep)
        return;
    for (size_t i = 0; i < rep->npoints; i++)
        sw_free(rep->points[i].samples);
    sw_free(rep->points);
    memset(rep, 0, sizeof(*rep));
}
