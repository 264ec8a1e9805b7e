/*
 * The battery's load checks: over_length (a prompt past the window is a clean 400 in the
 * engine's shape, and the endpoint survives it), concurrency (the declared slots really run at
 * once, and one request more waits), speed (decode and prefill tok/s at two or three depths, as
 * the client sees them and as llama.cpp's timings say), worst_case (prompt + max_tokens fill the
 * window and run to the end; the endpoint must still be alive).
 *
 * Requests that must generate a fixed number of tokens set "ignore_eos" (llama.cpp, vLLM and
 * SGLang all accept it); llama.cpp's prompt cache is turned off where it would hide prefill.
 *
 * What it deliberately does not do: hold timing thresholds. Overlap and queueing are read from
 * the order of events (overlap from llama-server's decode counters when /metrics has them);
 * speeds are reported, not judged.
 */
#include "probe_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned nonce(void)
{
    return (unsigned)(sw_now_ns() / 1000u);
}

/* What a model is asked to do after a filler prompt: something long, so a real model does not
 * stop after two words (a random-weight one never stops anyway). */
static const char long_tail[] = "Now write out the numbers from one to three hundred in words, "
                                "separated by commas.";

/* A streamed request after a prompt of ~depth tokens; *len gets the prompt's bytes.
 * ignore_eos (worst_case only) makes it generate exactly max_tokens: llama.cpp, vLLM and SGLang
 * accept the field, but the pinned llama-server may then fail to parse its own output at the
 * end (the ignored end-of-turn token is in it), so the other checks do without. */
static json_t *fixed_body(struct sw__probe *p, size_t depth, int max_tokens, unsigned n,
                          bool ignore_eos, size_t *len)
{
    char *prompt = sw__probe_filler(p, depth, n, long_tail, len);
    if (!prompt)
        return NULL;
    json_t *b = sw__probe_chat(p, prompt, max_tokens, true);
    sw_free(prompt);
    if (!b)
        return NULL;
    if (ignore_eos)
        sw_json_set_bool(b, "ignore_eos", true);
    if (p->eng == SW__ENG_LLAMACPP)
        sw_json_set_bool(b, "cache_prompt", false);
    return b;
}

void sw__probe_over_length(struct sw__probe *p, struct sw_probe_result *r)
{
    int64_t w = p->reported > 0 ? p->reported : p->window;
    if (w <= 0) {
        sw__probe_set(r, SW_PROBE_SKIP, "no window known (give --window)",
                      "the server reports no context length");
        return;
    }
    /* ~1.5 x the window by the tokenizer's density (a first guess, then measured); when the
     * server took the prompt whole, it was not long enough: grow it and ask again */
    size_t target = (size_t)w + (size_t)w / 2 + 64;
    struct sw_openai_result res;
    struct sw_net_resp resp;
    char d[600], alive[300], ws[32];
    int rc = 0;
    sw_openai_result_init(&res, 0, 0);
    memset(&resp, 0, sizeof(resp));
    for (int attempt = 0; attempt < 3; attempt++) {
        size_t len = 0;
        char *prompt = sw__probe_filler(p, target, nonce(), NULL, &len);
        json_t *body = prompt ? sw__probe_chat(p, prompt, 8, false) : NULL;
        sw_free(prompt);
        sw_openai_result_free(&res);
        sw_net_resp_free(&resp);
        sw_openai_result_init(&res, 0, 0);
        rc = sw__probe_post(p, body, &res, &resp, NULL, NULL, 0);
        json_decref(body);
        sw_json_set_int(r->data, "attempts", attempt + 1);
        if (rc || resp.status != 200 || !res.usage.present)
            break;
        sw__probe_learn(p, len, res.usage.prompt_tokens);
        if (res.usage.prompt_tokens >= w)
            break; /* taken although longer than the window: that is the finding */
        target = (size_t)((double)w * 1.5) + 64;
    }
    sw_fmt_count((uint64_t)w, ws, sizeof(ws));
    sw_json_set_int(r->data, "window", w);
    sw_json_set_int(r->data, "status", resp.status);
    struct sw_openai_error oe;
    memset(&oe, 0, sizeof(oe));
    if (!rc && resp.status != 200)
        sw__probe_error_of(&resp, &oe);
    bool ok_now = !rc && resp.status == 400 && oe.kind == SW_OAI_ERR_CONTEXT;
    bool is_alive = sw__probe_alive(p, alive, sizeof(alive));
    sw_json_set_bool(r->data, "alive_after", is_alive);
    if (oe.present) {
        sw__probe_data_str(r, "error_type", oe.type);
        sw_json_set_int(r->data, "n_prompt_tokens", oe.n_prompt_tokens);
        sw_json_set_int(r->data, "n_ctx", oe.n_ctx);
    }
    if (rc) {
        sw__probe_set(r, SW_PROBE_FAIL, "the over-length request broke the connection",
                      "a ~%zu-token prompt for a %s window: %s; %s", target, ws,
                      sw__probe_describe(&resp, d, sizeof(d)), alive);
    } else if (resp.status == 200) {
        sw__probe_set(r, SW_PROBE_FAIL,
                      "a prompt longer than the window was accepted (truncated, or the window is "
                      "larger than reported)",
                      "HTTP 200 with usage.prompt_tokens %lld for a %s window; %s",
                      (long long)res.usage.prompt_tokens, ws, alive);
    } else if (!ok_now) {
        sw__probe_set(r, SW_PROBE_FAIL, "refused, but not as a context-length error", "%s; %s",
                      sw__probe_describe(&resp, d, sizeof(d)), alive);
    } else if (!is_alive) {
        sw__probe_set(r, SW_PROBE_FAIL, "the endpoint died after refusing a long prompt",
                      "HTTP 400 %s; then %s", oe.type, alive);
    } else if (oe.n_prompt_tokens > 0 && oe.n_ctx > 0) {
        char a[32], b[32];
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "HTTP 400 %s: n_prompt_tokens %s > n_ctx %s; still alive", oe.type,
                      sw_fmt_count((uint64_t)oe.n_prompt_tokens, a, sizeof(a)),
                      sw_fmt_count((uint64_t)oe.n_ctx, b, sizeof(b)));
    } else {
        sw__probe_set(r, SW_PROBE_PASS, NULL, "HTTP 400 %s: %.200s; still alive",
                      oe.type[0] ? oe.type : sw_openai_err_shape_name(oe.shape), oe.message);
    }
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}

/* ---- concurrency ---- */

struct flight {
    struct sw_net_xfer x;
    struct sw_openai_result res;
    char *body;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* llama-server's cumulative decode counters (tools/server/server-task.cpp,
 * server_task_result_metrics::to_metrics; counted in server-context.cpp metrics_post_decode):
 * n_decode_total llama_decode() calls and, per call, every slot that was processing; /metrics
 * prints the latter as the average n_busy_slots_per_decode. Read before and after a round, they
 * say on the server's side, with no clock involved, whether two slots were ever busy in the same
 * decode step. */
struct busy {
    double decodes, busy_slots; /* cumulative since the server started */
    double rounding;            /* bound on the error of busy_slots (6 printed digits) */
};

static bool busy_read(struct sw__probe *p, struct busy *b)
{
    struct sw_net_resp resp;
    struct sw_openai_metrics m;
    bool ok = false;
    if (sw__probe_get(p, "/metrics", &resp) || resp.status != 200 ||
        sw_openai_metrics_parse(resp.body.data, resp.body.len, &m, NULL)) {
        sw_net_resp_free(&resp);
        return false;
    }
    double d = sw_openai_metrics_sum(&m, "llamacpp:n_decode_total");
    double per = sw_openai_metrics_sum(&m, "llamacpp:n_busy_slots_per_decode");
    if (isfinite(d) && isfinite(per) && d >= 0 && per >= 0) {
        b->decodes = d;
        b->busy_slots = per * d;
        /* both printed with 6 significant digits (std::stringstream's default) */
        b->rounding = b->busy_slots * 1e-5 + per * d * 1e-5 + d * 1e-5;
        ok = true;
    }
    sw_openai_metrics_free(&m);
    sw_net_resp_free(&resp);
    return ok;
}

/* Every stream of a round put on the loop at once and run to its end (what a server sent
 * scrubbed of the key); the count that could be started. */
static int send_round(struct sw__probe *p, struct flight *f, int total, int max_tokens)
{
    int started = 0;
    for (int i = 0; i < total; i++) {
        json_t *b = fixed_body(p, 32, max_tokens, nonce() + (unsigned)i * 7919u, false, NULL);
        f[i].body = b ? sw_json_dumps(b, JSON_COMPACT) : NULL;
        json_decref(b);
        sw_net_xfer_init(&f[i].x);
        sw_openai_result_init(&f[i].res, 0, 0);
        if (!f[i].body)
            continue;
        sw__probe_req(p, &f[i].x.req, 0);
        f[i].x.req.url = sw__probe_url(p, "/v1/chat/completions");
        f[i].x.req.body = f[i].body;
        f[i].x.req.body_len = strlen(f[i].body);
        f[i].x.req.on_event = sw_openai_on_event;
        f[i].x.req.ud = &f[i].res;
        if (!sw_net_start(&p->loop, &f[i].x, NULL))
            started++;
    }
    sw_net_loop_run(&p->loop);
    for (int i = 0; i < total; i++) {
        sw__probe_scrub_resp(p, &f[i].x.resp);
        sw__probe_scrub_res(p, &f[i].res);
    }
    return started;
}

/* When a round's streams ran, on the client's clock. */
struct times {
    int bad;         /* the first stream that failed, -1 none */
    int ended_badly; /* streams ended by an error event after their tokens */
    char late_error[200];
    uint64_t t0;        /* the first request's start */
    uint64_t min_done;  /* the first stream's end */
    uint64_t last_sent; /* the last request on the wire */
};

/* Each stream's first chunk into first[] (sorted), and the round's instants into t. */
static void read_times(const struct flight *f, int total, uint64_t *first, struct times *t)
{
    memset(t, 0, sizeof(*t));
    t->bad = -1;
    t->t0 = t->min_done = UINT64_MAX;
    for (int i = 0; i < total; i++) {
        /* an error event after the tokens still shows when the stream ran: the pinned
         * llama-server ends a stream that way when a random model's text is not valid UTF-8
         * ("does not match the expected ... format"); the timing is what this check reads */
        bool late = f[i].x.resp.rc && f[i].res.error.present && f[i].res.text_chunks > 0;
        if (late) {
            t->ended_badly++;
            snprintf(t->late_error, sizeof(t->late_error), "%.180s", f[i].res.error.message);
        }
        if ((f[i].x.resp.rc && !late) || f[i].x.resp.status != 200 || !f[i].res.t_first_chunk) {
            if (t->bad < 0)
                t->bad = i;
            continue;
        }
        t->t0 = SW_MIN(t->t0, f[i].x.resp.t.start);
        /* the request goes out as soon as its connection is ready */
        t->last_sent = SW_MAX(t->last_sent, f[i].x.resp.t.connected ? f[i].x.resp.t.connected
                                                                    : f[i].x.resp.t.start);
        first[i] = f[i].res.t_first_chunk;
        t->min_done = SW_MIN(t->min_done, f[i].res.t_last_chunk);
    }
    if (t->bad < 0)
        qsort(first, (size_t)total, sizeof(*first), cmp_u64);
}

/* The first chunks in r's data, and the slots' ones as text ("0.41/0.43"). */
static void first_chunks(struct sw_probe_result *r, const uint64_t *first, int total, int n,
                         const struct times *t, int max_tokens, char *list, size_t size)
{
    json_t *arr = json_array();
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < total; i++) {
        double s = (double)(first[i] - t->t0) / 1e9;
        json_array_append_new(arr, json_real(s));
        if (i < n && used < size - 1) {
            int w = snprintf(list + used, size - used, "%s%.2f", i ? "/" : "", s);
            if (w > 0)
                used += (size_t)w;
        }
    }
    sw_json_set_new(r->data, "first_chunk_s", arr);
    sw_json_set_int(r->data, "ended_with_error", t->ended_badly);
    sw_json_set_real(r->data, "first_finish_s", (double)(t->min_done - t->t0) / 1e9);
    sw_json_set_real(r->data, "last_sent_s", (double)(t->last_sent - t->t0) / 1e9);
    sw_json_set_int(r->data, "slots", n);
    sw_json_set_int(r->data, "max_tokens", max_tokens);
}

/* llama-server's own counters say without a clock whether slots ran at once: decode steps that
 * ran with two or more busy slots. *overlap is set when the counters are exact enough to say;
 * srv then says what they showed. */
static void server_overlap(struct sw_probe_result *r, const struct busy *b0, const struct busy *b1,
                           bool *overlap, char *srv, size_t size)
{
    double steps = b1->decodes - b0->decodes;
    double extra = (b1->busy_slots - b0->busy_slots) - steps;
    double err = b0->rounding + b1->rounding;
    sw_json_set_real(r->data, "server_decode_steps", steps);
    sw_json_set_real(r->data, "server_extra_busy_slot_steps", extra);
    if (err < 0.25) {
        *overlap = extra > 0.5;
        snprintf(srv, size,
                 " (server: %.0f decode steps, %.0f extra busy-slot steps: "
                 "llamacpp:n_busy_slots_per_decode x n_decode_total)",
                 steps, extra);
    }
}

/* The verdict of a round whose n + 1 streams all ran: the n slots overlapped, and the one
 * request more waited for a slot. */
static void round_verdict(struct sw_probe_result *r, const uint64_t *first, int n,
                          const struct times *t, const char *list, bool overlap, const char *srv)
{
    double ff = (double)(t->min_done - t->t0) / 1e9, last = (double)(first[n] - t->t0) / 1e9;
    double ls = (double)(t->last_sent - t->t0) / 1e9;
    /* the last one's first chunk came after a stream ended: it waited for a slot */
    bool queued = first[n] >= t->min_done;
    if (!overlap)
        sw__probe_set(r, SW_PROBE_FAIL, "the declared slots do not run at once",
                      "%d streams sent by %.2f s: first chunks at %s s, but a stream finished at "
                      "%.2f s before the %dth began%s",
                      n + 1, ls, list, ff, n, srv);
    else if (!queued)
        sw__probe_set(r, SW_PROBE_FAIL,
                      "one request more than the slots did not wait: the server runs more than "
                      "the declared slots",
                      "%d streams overlapped (first chunks at %s s) and stream %d began at %.2f s, "
                      "before the first finished at %.2f s",
                      n, list, n + 1, last, ff);
    else
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "%d streams overlapped (first chunks at %s s, first finish at %.2f s)%s; "
                      "stream %d, sent by %.2f s, began at %.2f s, after a slot freed%s%s",
                      n, list, ff, srv, n + 1, ls, last,
                      t->ended_badly ? "; some streams ended with an error event after their "
                                       "tokens: "
                                     : "",
                      t->late_error);
}

/* One round: n + 1 streams of max_tokens. Returns true when it decided (r is set), false when
 * the client could not put every request on the wire before the first stream ended (a fast
 * model, a loaded client): then nothing can be read from the order, and r is untouched. */
static bool concurrency_round(struct sw__probe *p, struct sw_probe_result *r, int n, int max_tokens,
                              bool last_round)
{
    int total = n + 1;
    struct flight *f = sw_calloc((size_t)total, sizeof(*f));
    uint64_t *first = sw_calloc((size_t)total, sizeof(*first));
    char d[512], list[256], srv[200] = "";
    struct times t;
    bool decided = true;
    if (!f || !first) {
        sw_free(f);
        sw_free(first);
        sw__probe_set(r, SW_PROBE_FAIL, "out of memory", "cannot hold %d requests", total);
        return true;
    }
    struct busy b0 = {0}, b1 = {0};
    bool have_busy = busy_read(p, &b0);
    int started = send_round(p, f, total, max_tokens);
    have_busy = have_busy && busy_read(p, &b1) && b1.decodes > b0.decodes;
    read_times(f, total, first, &t);
    if (started < total || t.bad >= 0) {
        int i = t.bad >= 0 ? t.bad : 0;
        sw__probe_set(r, SW_PROBE_FAIL, "a parallel request failed", "request %d of %d: %s", i + 1,
                      total, sw__probe_describe(&f[i].x.resp, d, sizeof(d)));
        goto out;
    }
    first_chunks(r, first, total, n, &t, max_tokens, list, sizeof(list));
    if (t.last_sent >= t.min_done) {
        decided = last_round;
        if (last_round)
            sw__probe_set(r, SW_PROBE_FAIL, "inconclusive: the streams were too short to overlap",
                          "a stream of %d tokens finished at %.2f s, before the last request went "
                          "out at %.2f s",
                          max_tokens, (double)(t.min_done - t.t0) / 1e9,
                          (double)(t.last_sent - t.t0) / 1e9);
        goto out;
    }
    /* the n earliest first chunks all came before any stream ended: they ran at once. The
     * client's clock can only see that when it read the streams as they were written: a stalled
     * client (a loaded machine) or a server that holds a stream back (llama-server does until a
     * UTF-8 character is complete) delivers a whole stream in one read; the server's counters
     * say it without a clock. */
    bool overlap = first[n - 1] < t.min_done;
    if (have_busy)
        server_overlap(r, &b0, &b1, &overlap, srv, sizeof(srv));
    round_verdict(r, first, n, &t, list, overlap, srv);
out:
    for (int i = 0; i < total; i++) {
        sw_net_xfer_close(&f[i].x);
        sw_openai_result_free(&f[i].res);
        sw_free(f[i].body);
    }
    sw_free(f);
    sw_free(first);
    return decided;
}

void sw__probe_concurrency(struct sw__probe *p, struct sw_probe_result *r)
{
    int n = p->slots;
    if (n <= 0) {
        sw__probe_set(r, SW_PROBE_SKIP, "the number of slots is unknown (give --slots)",
                      "no slot count given or reported");
        return;
    }
    if (n > 256) {
        sw__probe_set(r, SW_PROBE_SKIP, "more than 256 slots: not probed", "%d slots", n);
        return;
    }
    /* 24 tokens outlast the sending on any real engine; a tiny model on a fast CPU may finish
     * before the client sent the last request: then longer streams, four times, twice */
    int tokens = 24;
    for (int round = 0; round < 3; round++, tokens *= 4)
        if (concurrency_round(p, r, n, tokens, round == 2))
            return;
}

/* ---- speed ---- */

struct depth_run {
    int64_t prompt_tokens, completion_tokens;
    double ttft_s, decode_tps, prefill_tps, srv_decode_tps, srv_prefill_tps;
    bool counted_in_chunks; /* no usage came (an error event ended the stream): see run_depth */
    uint64_t text_chunks;
    double text_span_s; /* from the first to the last chunk with text */
    char late_error[160];
};

static int run_depth(struct sw__probe *p, size_t depth, int max_tokens, struct depth_run *out,
                     char *why, size_t whyn)
{
    size_t len = 0;
    json_t *b = fixed_body(p, depth, max_tokens, nonce(), false, &len);
    struct sw_openai_result res;
    struct sw_net_resp resp;
    sw_openai_result_init(&res, 0, 0);
    int rc = sw__probe_post(p, b, &res, &resp, NULL, NULL, 0);
    json_decref(b);
    memset(out, 0, sizeof(*out));
    if (!rc && res.usage.present)
        sw__probe_learn(p, len, res.usage.prompt_tokens);
    if (rc && res.error.present && res.text_chunks >= 2 && resp.status == 200) {
        /* the pinned llama-server ends a stream with an error event when a random model's text
         * is not valid UTF-8: the tokens did arrive, only the usage did not. Count text chunks
         * (one token each on llama-server, fewer when it holds back a partial character: a
         * lower bound) and estimate the prompt from the tokenizer density seen so far. */
        uint64_t last = res.t_first_text;
        for (size_t i = 0; i < res.nrecs; i++)
            if (res.recs[i].content_bytes || res.recs[i].reasoning_bytes)
                last = res.recs[i].t_ns;
        out->counted_in_chunks = true;
        snprintf(out->late_error, sizeof(out->late_error), "%.150s", res.error.message);
        out->completion_tokens = (int64_t)res.text_chunks;
        out->prompt_tokens =
            p->bytes_per_token > 0 ? (int64_t)((double)len / p->bytes_per_token) : -1;
        out->ttft_s = (double)(res.t_first_text - resp.t.start) / 1e9;
        out->prefill_tps = out->prompt_tokens > 0 && out->ttft_s > 0
                               ? (double)out->prompt_tokens / out->ttft_s
                               : 0;
        double span = (double)(last - res.t_first_text) / 1e9;
        out->text_chunks = res.text_chunks;
        out->text_span_s = span;
        out->decode_tps = span > 0 ? (double)(res.text_chunks - 1) / span : 0;
        out->srv_decode_tps = out->srv_prefill_tps = NAN;
        rc = 0;
        goto out;
    }
    if (rc || resp.status != 200 || !res.usage.present || !res.t_first_text) {
        if (rc && res.error.present)
            snprintf(why, whyn, "the stream ended with an error event: %.300s", res.error.message);
        else if (rc || resp.status != 200)
            sw__probe_describe(&resp, why, whyn);
        else
            snprintf(why, whyn, "%s",
                     res.usage.present ? "no text came" : "no usage in the stream");
        rc = rc && !res.error.present ? rc : SW_EHTTP;
        goto out;
    }
    uint64_t last_text = res.t_first_text;
    for (size_t i = 0; i < res.nrecs; i++)
        if (res.recs[i].content_bytes || res.recs[i].reasoning_bytes)
            last_text = res.recs[i].t_ns;
    out->prompt_tokens = res.usage.prompt_tokens;
    out->completion_tokens = res.usage.completion_tokens;
    out->text_chunks = res.text_chunks;
    out->text_span_s = (double)(last_text - res.t_first_text) / 1e9;
    out->ttft_s = (double)(res.t_first_text - resp.t.start) / 1e9;
    out->prefill_tps = out->ttft_s > 0 ? (double)out->prompt_tokens / out->ttft_s : 0;
    /* tokens after the first, over the time between the first and the last text */
    double span = (double)(last_text - res.t_first_text) / 1e9;
    out->decode_tps =
        span > 0 && out->completion_tokens > 1 ? (double)(out->completion_tokens - 1) / span : 0;
    out->srv_decode_tps = res.timings.present ? res.timings.predicted_per_second : NAN;
    out->srv_prefill_tps = res.timings.present ? res.timings.prompt_per_second : NAN;
out:
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
    return rc;
}

void sw__probe_speed(struct sw__probe *p, struct sw_probe_result *r)
{
    /* 64 decode steps: 16 were too few to average out scheduling on a small model (a tiny model
     * on 2 cores swung 150..650 tok/s between runs at 16, the server agreeing each time) */
    const int max_tokens = 64;
    int64_t w = p->reported > 0 ? p->reported : p->window;
    size_t depths[3];
    size_t nd = 0;
    size_t room = w > 0 ? (size_t)w - SW_MIN((size_t)w, (size_t)max_tokens + 96) : 8192;
    /* prompts are sized in ~4-byte units, which come out at ~0.85 tokens each */
    size_t want[3] = {128, w > 0 ? (size_t)w / 4 : 1024, w > 0 ? (size_t)w / 2 : 4096};
    if (want[1] > 2048)
        want[1] = 2048;
    if (want[2] > 8192)
        want[2] = 8192;
    for (int i = 0; i < 3; i++) {
        size_t d = SW_MIN(want[i], room);
        if (d >= 16 && (nd == 0 || d > depths[nd - 1] + depths[nd - 1] / 4))
            depths[nd++] = d;
    }
    json_t *arr = json_array();
    char line[900] = "";
    size_t used = 0;
    int failed = 0;
    char why[512] = "", late[160] = "";
    bool chunk_note = false;
    for (size_t i = 0; i < nd; i++) {
        struct depth_run dr;
        char w1[512];
        int drc = 0;
        /* a stream the server ends with an error event (a random model's invalid UTF-8 on the
         * pinned llama-server) has no usage: ask again with another prompt, twice at most */
        for (int attempt = 0; attempt < 3; attempt++) {
            drc = run_depth(p, depths[i], max_tokens, &dr, w1, sizeof(w1));
            if (drc || !dr.counted_in_chunks)
                break;
        }
        if (drc) {
            if (!failed++)
                snprintf(why, sizeof(why), "depth ~%zu: %.400s", depths[i], w1);
            continue;
        }
        json_t *o = json_object();
        sw_json_set_bool(o, "counted_in_chunks", dr.counted_in_chunks);
        sw_json_set_int(o, "prompt_tokens", dr.prompt_tokens);
        sw_json_set_int(o, "completion_tokens", dr.completion_tokens);
        sw_json_set_real(o, "ttft_s", dr.ttft_s);
        sw_json_set_real(o, "decode_tps", dr.decode_tps);
        sw_json_set_real(o, "prefill_tps", dr.prefill_tps);
        sw_json_set_new(o, "server_decode_tps",
                        isnan(dr.srv_decode_tps) ? json_null() : json_real(dr.srv_decode_tps));
        sw_json_set_new(o, "server_prefill_tps",
                        isnan(dr.srv_prefill_tps) ? json_null() : json_real(dr.srv_prefill_tps));
        json_array_append_new(arr, o);
        char sd[128] = "", sp[32] = "";
        if (!isnan(dr.srv_decode_tps))
            snprintf(sd, sizeof(sd), " (server %.1f)", dr.srv_decode_tps);
        sw_json_set_int(o, "text_chunks", (int64_t)dr.text_chunks);
        if (!isnan(dr.srv_decode_tps) && dr.srv_decode_tps > 0 &&
            (dr.decode_tps > 2 * dr.srv_decode_tps || 2 * dr.decode_tps < dr.srv_decode_tps)) {
            /* not a judgement: what the client saw differs from the server's own count because
             * the tokens did not arrive one by one (held back, or several per chunk) */
            snprintf(sd, sizeof(sd),
                     " (server %.1f; %llu tokens came in %llu chunks within %.0f ms)",
                     dr.srv_decode_tps, (unsigned long long)dr.completion_tokens,
                     (unsigned long long)dr.text_chunks, dr.text_span_s * 1000);
        }
        if (!isnan(dr.srv_prefill_tps))
            snprintf(sp, sizeof(sp), " (server %.0f)", dr.srv_prefill_tps);
        if (dr.counted_in_chunks) {
            snprintf(sd, sizeof(sd), " (in chunks)");
            chunk_note = true;
            snprintf(late, sizeof(late), "%s", dr.late_error);
        }
        if (used < sizeof(line) - 1) {
            int n = snprintf(line + used, sizeof(line) - used,
                             "%sctx %s%lld: decode %.1f%s tok/s, prefill %.0f%s tok/s",
                             used ? "; " : "", dr.counted_in_chunks ? "~" : "",
                             (long long)dr.prompt_tokens, dr.decode_tps, sd, dr.prefill_tps, sp);
            if (n > 0)
                used += (size_t)n;
        }
        if (dr.decode_tps <= 0 || dr.prefill_tps <= 0) {
            if (!failed++)
                snprintf(why, sizeof(why), "ctx %lld: no measurable rate",
                         (long long)dr.prompt_tokens);
        }
    }
    sw_json_set_new(r->data, "depths", arr);
    if (!nd)
        sw__probe_set(r, SW_PROBE_SKIP, "the window is too small to probe speed", "window %lld",
                      (long long)w);
    else if (failed)
        sw__probe_set(r, SW_PROBE_FAIL, why, "%s", line[0] ? line : "no depth measured");
    else if (chunk_note)
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "%s; \"in chunks\": the server ended those streams with an error event "
                      "(%s), so no usage or timings: tokens counted as text chunks, the prompt "
                      "estimated",
                      line, late);
    else
        sw__probe_set(r, SW_PROBE_PASS, NULL, "%s", line);
}

/* ---- worst case ---- */

void sw__probe_worst_case(struct sw__probe *p, struct sw_probe_result *r)
{
    int64_t w = p->reported > 0 ? p->reported : p->window;
    char d[512], alive[300];
    if (w <= 64) {
        sw__probe_set(r, SW_PROBE_SKIP, "no window known (give --window)", "window %lld",
                      (long long)w);
        return;
    }
    /* a prompt of half the window, sized by the engine's own tokenizer (sizing.c), then its
     * count by the server itself (usage of a one-token request): max_tokens is exactly the rest
     * of the window by that count */
    int64_t target = w / 2;
    struct sw__probe_sized sz;
    int rc = sw__probe_size_prompt(p, target, nonce(), long_tail, &sz);
    sw_json_set_int(r->data, "target_prompt_tokens", target);
    sw_json_set_int(r->data, "margin", sz.margin);
    sw_json_set_str(r->data, "sized_by", sw__probe_size_by(&sz));
    sw_json_set_int(r->data, "size_counts", sz.rounds);
    if (sz.note[0])
        sw__probe_data_str(r, "size_note", sz.note);
    if (rc) {
        sw__probe_set(r, SW_PROBE_FAIL, "could not size the prompt",
                      "a prompt of %lld tokens by %s: %s", (long long)target,
                      sw__probe_size_by(&sz), sz.why);
        sw__probe_sized_free(&sz);
        return;
    }
    sw_json_set_int(r->data, "sized_tokens", sz.tokens);
    int64_t prompt_tokens = sz.tokens;
    if (sz.tokenizer != SW__SIZE_USAGE &&
        sw__probe_usage_tokens(p, sz.prompt, &prompt_tokens, d, sizeof(d))) {
        /* the tokenizer ran no model; this is the first request that prefills the worst-case
         * prompt, and the first that can kill an endpoint short of memory */
        bool is_alive = sw__probe_alive(p, alive, sizeof(alive));
        sw_json_set_bool(r->data, "alive_after", is_alive);
        sw__probe_set(r, SW_PROBE_FAIL,
                      is_alive ? "the worst-case prompt was refused"
                               : "the endpoint died under the worst-case prompt",
                      "a prompt of %lld tokens (by %s) sent for one token: %s; then %s",
                      (long long)sz.tokens, sw__probe_size_by(&sz), d, alive);
        sw__probe_sized_free(&sz);
        return;
    }
    bool within = prompt_tokens >= target - sz.margin && prompt_tokens <= target + sz.margin;
    sw_json_set_bool(r->data, "within_margin", within);
    if (prompt_tokens <= 0 || prompt_tokens >= w) {
        sw__probe_set(r, SW_PROBE_FAIL, "could not size the prompt",
                      "a prompt sized to %lld tokens by %s came out at %lld for a %lld window%s%s",
                      (long long)target, sw__probe_size_by(&sz), (long long)prompt_tokens,
                      (long long)w, sz.why[0] ? ": " : "", sz.why);
        sw__probe_sized_free(&sz);
        return;
    }
    char *prompt = sz.prompt;
    sz.prompt = NULL;
    struct sw_openai_result res;
    struct sw_net_resp resp;
    int64_t gen = w - prompt_tokens, made = 0;
    bool is_alive = false, ran_full = false;
    int attempt = 0;
    memset(&resp, 0, sizeof(resp));
    sw_openai_result_init(&res, 0, 0);
    /* A random-weight model's text can break the server's own chat-format parser mid-stream (an
     * error event after a lone byte token: docs/probe.md); that says nothing about memory. Such
     * an attempt, with the engine alive, is retried (at most twice) sampled with another seed
     * and, on llama.cpp, held by a grammar to printable ASCII (no byte token the parser can
     * trip on; the grammar costs sampling time, not memory): the window must still be filled by
     * one of them. */
    for (;;) {
        json_t *b = sw__probe_chat(p, prompt, (int)SW_MIN(gen, (int64_t)INT32_MAX), true);
        if (b) {
            sw_json_set_bool(b, "ignore_eos", true);
            if (p->eng == SW__ENG_LLAMACPP)
                sw_json_set_bool(b, "cache_prompt", false);
            if (attempt) {
                sw_json_set_real(b, "temperature", 1.0);
                sw_json_set_int(b, "seed", 42 + attempt);
                if (p->eng == SW__ENG_LLAMACPP)
                    sw_json_set_str(b, "grammar", "root ::= [ -~]*");
            }
        }
        /* the whole window at the decode rate: allow ten request budgets */
        rc = sw__probe_post(p, b, &res, &resp, NULL, NULL, p->timeout_ms * 10u);
        json_decref(b);
        made = res.usage.present ? res.usage.completion_tokens : (int64_t)res.text_chunks;
        is_alive = sw__probe_alive(p, alive, sizeof(alive));
        /* generating past the end-of-turn token (ignore_eos) may make the server fail to parse
         * its own output after the last token: what is checked here is that it survived */
        ran_full = made >= gen * 9 / 10;
        if (ran_full || !is_alive || !res.error.present || resp.status != 200 || made <= 0 ||
            attempt >= 2)
            break;
        if (!attempt)
            sw__probe_data_str(r, "first_error", res.error.message);
        attempt++;
        sw_openai_result_free(&res);
        sw_net_resp_free(&resp);
        memset(&resp, 0, sizeof(resp));
        sw_openai_result_init(&res, 0, 0);
    }
    sw_free(prompt);
    sw_json_set_int(r->data, "attempts", attempt + 1);
    sw_json_set_int(r->data, "prompt_tokens", prompt_tokens);
    sw_json_set_int(r->data, "max_tokens", gen);
    sw_json_set_int(r->data, "completion_tokens", made);
    sw_json_set_bool(r->data, "alive_after", is_alive);
    char a[32], g[32], ws[32], after[700] = "", tries[420] = "";
    sw_fmt_count((uint64_t)prompt_tokens, a, sizeof(a));
    sw_fmt_count((uint64_t)SW_MAX(made, 0), g, sizeof(g));
    sw_fmt_count((uint64_t)w, ws, sizeof(ws));
    if (res.error.present)
        snprintf(after, sizeof(after), "; then an error event: %.300s", res.error.message);
    if (attempt)
        snprintf(tries, sizeof(tries), "; attempt %d of 3 (the first cut short: %.300s)",
                 attempt + 1,
                 json_string_value(json_object_get(r->data, "first_error"))
                     ? json_string_value(json_object_get(r->data, "first_error"))
                     : "an error event");
    if ((rc && !res.error.present) || resp.status != 200 || !ran_full)
        sw__probe_set(r, SW_PROBE_FAIL, "a request filling the window did not complete",
                      "prompt %s + max_tokens %lld: %s, %s generated%s; %s", a, (long long)gen,
                      sw__probe_describe(&resp, d, sizeof(d)), g, after, alive);
    else if (!is_alive)
        sw__probe_set(r, SW_PROBE_FAIL, "the endpoint died after a request that filled the window",
                      "prompt %s + %s generated%s; then %s", a, g, after, alive);
    else
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "prompt %s (target %lld, sized by %s in %d counts%s) + %s generated = the "
                      "%s window in %s%s%s; still alive (%s)",
                      a, (long long)target, sw__probe_size_by(&sz), sz.rounds,
                      within ? "" : ", outside the margin", g, ws,
                      sw__probe_dur(resp.t.done - resp.t.start, d, sizeof(d)), after, tries, alive);
    sw__probe_sized_free(&sz);
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}
