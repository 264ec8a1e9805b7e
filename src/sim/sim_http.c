/*
 * sim HTTP surface and scheduler, on the sim's one libevent loop.
 *
 * Surface: /health, /v1/models, /v1/chat/completions, /v1/completions (SSE or not), /metrics,
 * and llama-server's /props and /slots, with the engine's bodies: llama-server's 503
 * {"error":{"message":"Loading model","type":"unavailable_error","code":503}} while loading and its
 * exceed_context_size_error 400 (tests/data/bootlogs/llamacpp/http_*.json, captured from the
 * pinned build); vLLM's BadRequestError 400 ({"object":"error",...,"code":400}).
 *
 * Scheduler: n_slots sequences run at once; a request past them waits in a FIFO admission queue.
 * The running set advances in steps: one step prefills every newly admitted prompt whole (and
 * yields its first token) and decodes one token for every other running sequence; its duration
 * is the timing model's for that batch (sim.h), and its effects land when the step's timer fires.
 *
 * vLLM's pool (kv_pool tokens) gates admission and preempts (recompute) the latest admitted
 * sequence when the running ones' next tokens do not fit.
 *
 * Steps have a token budget (chunked prefill: decodes first, then prompt chunks); vLLM's pool is
 * counted in blocks; llama.cpp's --kv-unified slots share the n_ctx cells. POST /sim/fault sets
 * a fault on demand (docs/sim.md). In firehose mode steps take no time and a turn of the loop
 * runs several.
 *
 * A request's head is bounded before libevent parses it (sim_guard.c: 431 past 64 KiB or 100
 * header lines).
 *
 * What it does not do: images, a runtime OOM other than the declared threshold (or the
 * oom_next_request fault), more than one loop.
 */
#include "sim_internal.h"

#include <slipway/engine.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BODY_MAX (64u << 20)

static const char *const words[] = {
    "the",    "river",  "stone",  "light",  "north",   "quiet",   "ember",  "field",
    "cloud",  "amber",  "signal", "harbor", "lantern", "meadow",  "copper", "winter",
    "orbit",  "willow", "echo",   "cedar",  "granite", "marble",  "silver", "thunder",
    "valley", "canyon", "falcon", "garden", "island",  "jasmine", "kettle", "lumen",
};

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* The token at index i of a request: a word, with a leading space after the first. */
/* The next value of a seeded sequence (the faults' jitter, the drafts' acceptance). */
static uint64_t rng_next(uint64_t *state)
{
    *state = mix64(*state + 0x9e3779b97f4a7c15ull);
    return *state;
}

static void token_text(const struct sw__sim_req *r, int64_t i, char *out, size_t n)
{
    uint64_t w = mix64(r->text_seed + (uint64_t)i) % SW_ARRAY_LEN(words);
    snprintf(out, n, "%s%s", i ? " " : "", words[w]);
}

/* ---------------------------------------------------------------------------------------------
 * Replies.
 */
static void reply_json(struct evhttp_request *req, int code, const char *reason, json_t *j)
{
    struct evbuffer *b = evbuffer_new();
    char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (b) {
        if (txt)
            evbuffer_add(b, txt, strlen(txt));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "application/json; charset=utf-8");
        evhttp_send_reply(req, code, reason, b);
        evbuffer_free(b);
    } else {
        evhttp_send_error(req, 500, "out of memory");
    }
    free(txt);
    json_decref(j);
}

static void reply_text(struct evhttp_request *req, int code, const char *ctype, const char *txt,
                       size_t n)
{
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add(b, txt, n);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", b);
    evbuffer_free(b);
}

static void reply_loading(struct evhttp_request *req)
{
    reply_json(req, 503, "Service Unavailable",
               json_pack("{s:{s:s,s:s,s:i}}", "error", "message", "Loading model", "type",
                         "unavailable_error", "code", 503));
}

/* The engine's 400 for a request that does not fit the window. */
static void reply_too_long(struct sw_sim *s, struct evhttp_request *req, int64_t n_prompt,
                           int64_t max_tokens)
{
    char m[512];
    if (s->engine == SW__SIM_LLAMACPP) {
        snprintf(m, sizeof(m),
                 "request (%" PRId64 " tokens) exceeds the available context size (%" PRId64
                 " tokens), try increasing it",
                 n_prompt, s->window);
        reply_json(req, 400, "Bad Request",
                   json_pack("{s:{s:i,s:s,s:s,s:I,s:I}}", "error", "code", 400, "message", m,
                             "type", "exceed_context_size_error", "n_prompt_tokens",
                             (json_int_t)n_prompt, "n_ctx", (json_int_t)s->window));
    } else {
        if (s->engine == SW__SIM_SGLANG && n_prompt >= s->window)
            snprintf(m, sizeof(m),
                     "The input (%" PRId64 " tokens) is longer than the model's context length "
                     "(%" PRId64 " tokens).",
                     n_prompt, s->window);
        else if (s->engine == SW__SIM_SGLANG)
            snprintf(m, sizeof(m),
                     "Requested token count exceeds the model's maximum context length of %" PRId64
                     " tokens. You requested a total of %" PRId64 " tokens: %" PRId64
                     " tokens from the input messages and %" PRId64
                     " tokens for the completion. Please reduce the number of tokens in the input "
                     "messages or the completion to fit within the limit.",
                     s->window, n_prompt + max_tokens, n_prompt, max_tokens);
        else
            snprintf(m, sizeof(m),
                     "This model's maximum context length is %" PRId64 " tokens. However, you "
                     "requested %" PRId64 " tokens (%" PRId64 " in the messages, %" PRId64
                     " in the completion). Please reduce the length of the messages or completion.",
                     s->window, n_prompt + max_tokens, n_prompt, max_tokens);
        reply_json(req, 400, "Bad Request",
                   json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message", m, "type",
                             "BadRequestError", "param", "code", 400));
    }
}

static void reply_bad(struct sw_sim *s, struct evhttp_request *req, const char *msg)
{
    if (s->engine == SW__SIM_LLAMACPP)
        reply_json(req, 400, "Bad Request",
                   json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 400, "message", msg, "type",
                             "invalid_request_error"));
    else
        reply_json(req, 400, "Bad Request",
                   json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message", msg, "type",
                             "BadRequestError", "param", "code", 400));
}

/* ---------------------------------------------------------------------------------------------
 * Requests and the scheduler.
 */
static void req_free(struct sw__sim_req *r)
{
    if (!r)
        return;
    sw_buf_free(&r->text);
    sw_buf_free(&r->reason);
    sw_buf_free(&r->tool_args);
    sw_free(r->tool_name);
    sw_free(r);
}

static void on_client_gone(struct evhttp_connection *c, void *arg)
{
    struct sw__sim_req *r = arg;
    (void)c;
    /* libevent detaches a request whose reply is not done when its connection fails, and leaves
     * it to its user (http.c evhttp_connection_incoming_fail): free it here. One still attached
     * goes with its connection. */
    if (r->http && !evhttp_request_get_connection(r->http))
        evhttp_request_free(r->http);
    r->http = NULL; /* cancelled at the next step */
}

static void detach(struct sw__sim_req *r)
{
    if (r->http) {
        struct evhttp_connection *c = evhttp_request_get_connection(r->http);
        if (c)
            evhttp_connection_set_closecb(c, NULL, NULL);
    }
}

static double ms_between(uint64_t a, uint64_t b)
{
    return b > a ? (double)(b - a) / 1e6 : 0.0;
}

static json_t *timings_json(const struct sw__sim_req *r)
{
    double pm = r->prompt_ms, gm = r->predicted_ms;
    json_t *t = json_pack("{s:i,s:I,s:f,s:f,s:f,s:I,s:f,s:f,s:f}", "cache_n", 0, "prompt_n",
                          (json_int_t)r->n_prompt, "prompt_ms", pm, "prompt_per_token_ms",
                          r->n_prompt ? pm / (double)r->n_prompt : 0.0, "prompt_per_second",
                          pm > 0 ? (double)r->n_prompt * 1000.0 / pm : 0.0, "predicted_n",
                          (json_int_t)r->n_gen, "predicted_ms", gm, "predicted_per_token_ms",
                          r->n_gen ? gm / (double)r->n_gen : 0.0, "predicted_per_second",
                          gm > 0 ? (double)r->n_gen * 1000.0 / gm : 0.0);
    if (t && r->draft_n > 0) { /* llama-server's, with a draft model */
        sw_json_set_int(t, "draft_n", r->draft_n);
        sw_json_set_int(t, "draft_n_accepted", r->draft_accepted);
    }
    return t;
}

static json_t *usage_json(const struct sw__sim_req *r)
{
    return json_pack("{s:I,s:I,s:I}", "completion_tokens", (json_int_t)r->n_gen, "prompt_tokens",
                     (json_int_t)r->n_prompt, "total_tokens", (json_int_t)(r->n_prompt + r->n_gen));
}

static json_t *base_obj(struct sw_sim *s, const struct sw__sim_req *r, const char *object)
{
    char id[64];
    snprintf(id, sizeof(id), "%s-sim%" PRIu64, r->chat ? "chatcmpl" : "cmpl", r->id);
    json_t *o = json_pack("{s:s,s:s,s:I,s:s}", "id", id, "object", object, "created",
                          (json_int_t)time(NULL), "model", s->alias);
    if (o && s->engine == SW__SIM_LLAMACPP)
        sw_json_set_str(o, "system_fingerprint", "b1-80fb11a");
    return o;
}

static void send_chunk(struct sw__sim_req *r, json_t *j)
{
    if (j && r->sim->cfg.emit_stamps)
        sw_json_set_int(j, "sim_emit_ns", (int64_t)sw_now_ns());
    char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    struct evbuffer *b = evbuffer_new();
    if (b && txt && r->http) {
        evbuffer_add_printf(b, "data: %s\n\n", txt);
        evhttp_send_reply_chunk(r->http, b);
    }
    if (b)
        evbuffer_free(b);
    free(txt);
    json_decref(j);
}

/* A streamed delta: role (first), reasoning_content or content. */
static void stream_token(struct sw_sim *s, struct sw__sim_req *r, const char *tok, bool reasoning)
{
    if (!r->timings_per_token && !r->continuous_usage && !s->cfg.emit_stamps && s->alias_json &&
        s->chunk && r->http) {
        /* the common chunk formatted at once (jansson's pack and dump of each token was most
         * of a streamed token's cost); the same bytes as the general path below. A token is a
         * word of the sim's list: nothing to escape. */
        const char *fp =
            s->engine == SW__SIM_LLAMACPP ? ",\"system_fingerprint\":\"b1-80fb11a\"" : "";
        if (r->chat)
            evbuffer_add_printf(s->chunk,
                                "data: {\"id\":\"chatcmpl-sim%" PRIu64
                                "\",\"object\":\"chat.completion.chunk\",\"created\":%lld,"
                                "\"model\":%s%s,\"choices\":[{\"finish_reason\":null,\"index\":"
                                "0,\"delta\":{\"%s\":\"%s\"}}]}\n\n",
                                r->id, (long long)time(NULL), s->alias_json, fp,
                                reasoning ? "reasoning_content" : "content", tok);
        else
            evbuffer_add_printf(s->chunk,
                                "data: {\"id\":\"cmpl-sim%" PRIu64
                                "\",\"object\":\"text_completion\",\"created\":%lld,"
                                "\"model\":%s%s,\"choices\":[{\"finish_reason\":null,\"index\":"
                                "0,\"text\":\"%s\",\"logprobs\":null}]}\n\n",
                                r->id, (long long)time(NULL), s->alias_json, fp, tok);
        evhttp_send_reply_chunk(r->http, s->chunk);
        return;
    }
    json_t *o = base_obj(s, r, r->chat ? "chat.completion.chunk" : "text_completion");
    json_t *ch;
    if (r->chat)
        ch = json_pack("{s:n,s:i,s:{s:s}}", "finish_reason", "index", 0, "delta",
                       reasoning ? "reasoning_content" : "content", tok);
    else
        ch = json_pack("{s:n,s:i,s:s,s:n}", "finish_reason", "index", 0, "text", tok, "logprobs");
    sw_json_set_new(o, "choices", json_pack("[o]", ch));
    if (r->timings_per_token && s->engine == SW__SIM_LLAMACPP) {
        /* llama-server's timings_per_token: the running figures in every chunk */
        r->predicted_ms = ms_between(r->t_first_ns, sw_now_ns());
        sw_json_set_new(o, "timings", timings_json(r));
    }
    if (r->continuous_usage) /* vLLM's continuous_usage_stats: the running usage in every chunk */
        sw_json_set_new(o, "usage", usage_json(r));
    send_chunk(r, o);
}

static void finish(struct sw_sim *s, struct sw__sim_req *r, const char *reason)
{
    r->t_done_ns = sw_now_ns();
    r->predicted_ms = ms_between(r->t_first_ns, r->t_done_ns);
    s->m_requests++;
    s->m_prompt_tokens += (uint64_t)r->n_prompt;
    s->m_predicted_tokens += (uint64_t)r->n_gen;
    s->m_prompt_seconds += r->prompt_ms / 1000.0;
    s->m_predicted_seconds += r->predicted_ms / 1000.0;
    if (s->fault_crash_left > 0 && --s->fault_crash_left == 0)
        s->crash_pending = true; /* the step that finished it is the engine's last */
    if (!r->http)
        return;
    detach(r);
    if (r->stream) {
        json_t *o = base_obj(s, r, r->chat ? "chat.completion.chunk" : "text_completion");
        json_t *ch = r->chat
                         ? json_pack("{s:s,s:i,s:{}}", "finish_reason", reason, "index", 0, "delta")
                         : json_pack("{s:s,s:i,s:s,s:n}", "finish_reason", reason, "index", 0,
                                     "text", "", "logprobs");
        sw_json_set_new(o, "choices", json_pack("[o]", ch));
        if (s->engine == SW__SIM_LLAMACPP)
            sw_json_set_new(o, "timings", timings_json(r));
        send_chunk(r, o);
        if (r->include_usage) {
            o = base_obj(s, r, r->chat ? "chat.completion.chunk" : "text_completion");
            sw_json_set_new(o, "choices", json_array());
            sw_json_set_new(o, "usage", usage_json(r));
            if (s->engine == SW__SIM_LLAMACPP)
                sw_json_set_new(o, "timings", timings_json(r));
            send_chunk(r, o);
        }
        struct evbuffer *b = evbuffer_new();
        if (b) {
            evbuffer_add_printf(b, "data: [DONE]\n\n");
            evhttp_send_reply_chunk(r->http, b);
            evbuffer_free(b);
        }
        evhttp_send_reply_end(r->http);
    } else {
        json_t *o = base_obj(s, r, r->chat ? "chat.completion" : "text_completion");
        json_t *ch;
        if (r->chat) {
            json_t *msg = json_pack("{s:s,s:s%}", "role", "assistant", "content",
                                    sw_buf_cstr(&r->text), r->text.len);
            if (r->tool_name) {
                char id[64];
                snprintf(id, sizeof(id), "call_sim%" PRIu64, r->id);
                json_object_set_new(msg, "content", json_null());
                sw_json_set_new(msg, "tool_calls",
                                json_pack("[{s:s,s:s,s:{s:s,s:s%}}]", "id", id, "type", "function",
                                          "function", "name", r->tool_name, "arguments",
                                          sw_buf_cstr(&r->tool_args), r->tool_off));
            }
            if (r->reason.len)
                sw_json_set_str(msg, "reasoning_content", sw_buf_cstr(&r->reason));
            ch = json_pack("{s:s,s:i,s:o}", "finish_reason", reason, "index", 0, "message", msg);
        } else {
            ch = json_pack("{s:s,s:i,s:s%,s:n}", "finish_reason", reason, "index", 0, "text",
                           sw_buf_cstr(&r->text), r->text.len, "logprobs");
        }
        sw_json_set_new(o, "choices", json_pack("[o]", ch));
        sw_json_set_new(o, "usage", usage_json(r));
        if (s->engine == SW__SIM_LLAMACPP)
            sw_json_set_new(o, "timings", timings_json(r));
        reply_json(r->http, 200, "OK", o);
    }
    r->http = NULL;
}

/* The stream's headers and the role chunk: sent when the request gets its slot, as llama-server
 * does (a queued request sees no byte until it runs). */
static void start_stream(struct sw_sim *s, struct sw__sim_req *r)
{
    struct evkeyvalq *hd = evhttp_request_get_output_headers(r->http);
    evhttp_add_header(hd, "Content-Type", "text/event-stream");
    evhttp_add_header(hd, "Cache-Control", "no-cache");
    evhttp_send_reply_start(r->http, 200, "OK");
    if (r->chat) {
        json_t *o = base_obj(s, r, "chat.completion.chunk");
        sw_json_set_new(o, "choices",
                        json_pack("[{s:n,s:i,s:{s:s,s:n}}]", "finish_reason", "index", 0, "delta",
                                  "role", "assistant", "content"));
        send_chunk(r, o);
    }
}

static int n_running(const struct sw_sim *s)
{
    int n = 0;
    for (int i = 0; i < s->n_slots; i++)
        n += s->slots[i] != NULL;
    return n;
}

static void schedule_step(struct sw_sim *s);

/* KV a sequence holds: its tokens, in whole blocks for vLLM (block_size tokens each; a block is
 * allocated whole). */
static int64_t seq_kv(const struct sw_sim *s, int64_t tokens)
{
    int64_t bs = s->block_size > 0 ? s->block_size : 1;
    return (tokens + bs - 1) / bs * bs;
}

/* KV the running sequences hold, of the shared pool (vLLM's blocks; llama.cpp's cells with
 * --kv-unified, each admitted sequence reserving its prompt and max_tokens). */
static int64_t kv_held(const struct sw_sim *s)
{
    int64_t n = 0;
    for (int i = 0; i < s->n_slots; i++) {
        const struct sw__sim_req *r = s->slots[i];
        if (!r)
            continue;
        n += s->engine != SW__SIM_LLAMACPP ? seq_kv(s, r->n_prompt + r->n_gen)
                                           : r->n_prompt + r->max_tokens;
    }
    return n;
}

/* The KV a queued request needs to be admitted. */
static int64_t kv_need(const struct sw_sim *s, const struct sw__sim_req *r)
{
    return s->engine != SW__SIM_LLAMACPP ? seq_kv(s, r->n_prompt + r->n_gen + 1)
                                         : r->n_prompt + r->max_tokens;
}

/* Queued requests into free slots, in arrival order. vLLM admits a request only when its
 * prompt (and what it already generated, after a preemption) fits what the pool has left. */
static void admit(struct sw_sim *s)
{
    for (int i = 0; i < s->n_slots && s->queue_head; i++) {
        if (s->slots[i])
            continue;
        struct sw__sim_req *r = s->queue_head;
        if (s->kv_pool > 0 && kv_held(s) + kv_need(s, r) > s->kv_pool && n_running(s) > 0)
            break; /* FIFO: the head waits for blocks (cells) */
        s->queue_head = r->next;
        if (!s->queue_head)
            s->queue_tail = NULL;
        r->next = NULL;
        r->slot = i;
        r->in_step = false; /* it joins the next step, not the one running */
        r->prefill_done = 0;
        if (!r->started) {
            r->t_start_ns = sw_now_ns();
            r->started = true;
            if (r->stream && r->http)
                start_stream(s, r);
        }
        s->slots[i] = r;
    }
}

/* vLLM's recompute preemption (SGLang's retraction of a decode request is the same move): when
 * the next step's tokens do not fit the pool, the most recently admitted sequence gives its
 * blocks back and waits at the head of the queue; on its return it prefills its prompt and what
 * it had generated again. */
static void preempt(struct sw_sim *s)
{
    if (s->engine == SW__SIM_LLAMACPP || s->kv_pool <= 0)
        return;
    for (;;) {
        /* the blocks the running sequences hold once each has its next token */
        int64_t next = 0;
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i])
                next += seq_kv(s, s->slots[i]->n_prompt + s->slots[i]->n_gen + 1);
        if (n_running(s) <= 1 || next <= s->kv_pool)
            break;
        int victim = -1;
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i] &&
                (victim < 0 || s->slots[i]->t_start_ns >= s->slots[victim]->t_start_ns))
                victim = i;
        struct sw__sim_req *r = s->slots[victim];
        s->slots[victim] = NULL;
        r->prefilled = false;
        r->prefill_done = 0;
        r->slot = -1;
        r->next = s->queue_head;
        s->queue_head = r;
        if (!s->queue_tail)
            s->queue_tail = r;
        s->m_preemptions++;
    }
}

/* A tool call, one token per step: the first names the function, each next one carries up to 4
 * bytes of its arguments (as llama-server and vLLM stream a call's deltas). True when done. */
static bool tool_step(struct sw_sim *s, struct sw__sim_req *r)
{
    char piece[8] = "";
    bool first = r->n_gen == 0;
    if (!first) {
        size_t n = r->tool_args.len - r->tool_off;
        n = n > 4 ? 4 : n;
        memcpy(piece, r->tool_args.data + r->tool_off, n);
        piece[n] = '\0';
        r->tool_off += n;
    }
    r->n_gen++;
    if (r->stream && r->http) {
        json_t *fn = first ? json_pack("{s:s,s:s}", "name", r->tool_name, "arguments", "")
                           : json_pack("{s:s}", "arguments", piece);
        json_t *call = json_pack("{s:i,s:o}", "index", 0, "function", fn);
        if (first) {
            char id[64];
            snprintf(id, sizeof(id), "call_sim%" PRIu64, r->id);
            sw_json_set_str(call, "id", id);
            sw_json_set_str(call, "type", "function");
        }
        json_t *o = base_obj(s, r, "chat.completion.chunk");
        sw_json_set_new(o, "choices",
                        json_pack("[{s:n,s:i,s:{s:[o]}}]", "finish_reason", "index", 0, "delta",
                                  "tool_calls", call));
        send_chunk(r, o);
    }
    return (!first && r->tool_off >= r->tool_args.len) || r->n_gen >= r->max_tokens;
}

/* A reset fault's request has generated its tokens. */
static bool reset_due(const struct sw__sim_req *r)
{
    return r->reset_at > 0 && r->n_gen >= r->reset_at;
}

/* Reset the connection of slot i's request (an RST, not a FIN), after what was generated so far
 * reached the socket: the client reads those tokens, then "connection reset by peer". The slot
 * is freed. */
static void reset_slot(struct sw_sim *s, int i)
{
    struct sw__sim_req *r = s->slots[i];
    struct evhttp_connection *c = r->http ? evhttp_request_get_connection(r->http) : NULL;
    detach(r);
    r->http = NULL; /* freed with its connection */
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        /* the bufferevent keeps its output's front frozen (only it drains it): thawed for
         * this one write */
        struct evbuffer *out = bufferevent_get_output(bev);
        evbuffer_unfreeze(out, 1);
        evbuffer_write(out, fd);
        evbuffer_freeze(out, 1);
        /* Linux aborts a connected TCP socket dissolved with AF_UNSPEC: it sends the RST that
         * close() with a zero linger would, and leaves the descriptor to its owner */
        struct sockaddr sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_family = AF_UNSPEC;
        (void)connect(fd, &sa, sizeof(sa));
    }
    if (c)
        evhttp_connection_free(c);
    s->slots[i] = NULL;
    req_free(r);
}

/* vLLM's API server after its engine core died: its last lines (after the cause's). */
static void vllm_dead_tail(struct sw_buf *b)
{
    sw_buf_puts(b, "(APIServer pid=1) ERROR [async_llm.py:480] EngineCore encountered a "
                   "fatal error.\n");
    sw_buf_puts(b, "(APIServer pid=1) ERROR EngineDeadError: EngineCore encountered an issue. "
                   "See stack trace (above) for the root cause.\n");
    sw_buf_puts(b, "(APIServer pid=1) INFO Shutting down FastAPI HTTP server.\n");
}

/* The engine is gone: what is in flight is cut, and the process ends with the engine's status
 * once the replies already written are flushed. */
static void die(struct sw_sim *s, int status)
{
    s->state = SW__SIM_FAILED;
    s->exit_status = status;
    sw__sim_drop_all(s);
    struct timeval flush = {0, 200000};
    event_base_loopexit(s->base, &flush);
}

/* SGLang's scheduler died of `cause`: its traceback's last line, then the launcher's SIGQUIT
 * handler kills the whole process tree: what is in flight gets no reply (status 137). */
static void sglang_child_died(struct sw_sim *s, const char *cause)
{
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    sw__sim_sglang_death(&b, cause);
    sw__sim_log_lines(s, &b);
    sw_buf_free(&b);
    die(s, SW__SIM_SGLANG_DIED);
}

/* The crash fault: llama-server aborts on a failed assertion (exit 134, what abort() gives);
 * vLLM's engine core dies on a device error and its API server exits 0. */
static void crash(struct sw_sim *s)
{
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    s->crash_pending = false;
    if (s->engine == SW__SIM_LLAMACPP) {
        FILE *f = s->cfg.log ? s->cfg.log : stderr;
        fprintf(f, "ggml/src/ggml.c:0: GGML_ABORT(sim fault: crash) failed\n");
        fflush(f);
        die(s, 134);
    } else if (s->engine == SW__SIM_SGLANG) {
        sglang_child_died(s, "RuntimeError: CUDA error: an illegal memory access was encountered "
                             "(sim fault: crash)");
    } else {
        sw_buf_puts(&b, "(EngineCore_DP0 pid=2) ERROR RuntimeError: CUDA error: an illegal "
                        "memory access was encountered (sim fault: crash)\n");
        vllm_dead_tail(&b);
        sw__sim_log_lines(s, &b);
        die(s, 0);
    }
    sw_buf_free(&b);
}

/* Speculative decoding (cfg.spec_accept): one draft of n_spec tokens for r's decode step; how
 * many of them are kept, drawn from the seed (P(kept > k) = spec_accept[k]). Counted as the
 * engine counts: drafts, draft tokens, kept tokens, per position. */
static int spec_kept(struct sw_sim *s, struct sw__sim_req *r)
{
    if (s->cfg.n_spec < 1)
        return 0;
    double u = (double)(rng_next(&s->spec_rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    int a = 0;
    while (a < s->cfg.n_spec && u < s->cfg.spec_accept[a])
        a++;
    s->m_spec_drafts++;
    s->m_spec_draft_tokens += (uint64_t)s->cfg.n_spec;
    s->m_spec_accepted += (uint64_t)a;
    for (int k = 0; k < a; k++)
        s->m_spec_pos[k]++;
    r->draft_n += s->cfg.n_spec;
    r->draft_accepted += a;
    return a;
}

/* The step that just ended: its effects. */
static void step_end(struct sw_sim *s)
{
    char tok[64];
    s->stepping = false;
    s->m_decode_calls++;
    uint64_t now = sw_now_ns();
    s->step_chained = true; /* a step started from here follows this one at once */
    for (int i = 0; i < s->n_slots; i++) {
        struct sw__sim_req *r = s->slots[i];
        if (!r)
            continue;
        if (!r->http) { /* the client went away */
            s->slots[i] = NULL;
            req_free(r);
            continue;
        }
        if (!r->in_step) /* not in the step that ended */
            continue;
        r->in_step = false;
        if (!r->prefilled) {
            /* a chunk of its prompt; the first token comes with the last chunk */
            r->prefill_done += r->step_chunk;
            r->step_chunk = 0;
            if (r->prefill_done < r->n_prompt + r->n_gen)
                continue;
            r->prefilled = true;
            if (!r->t_first_ns) {
                r->t_first_ns = now;
                r->prompt_ms = ms_between(r->t_start_ns, now);
            }
        }
        if (r->tool_name) {
            bool done = tool_step(s, r);
            if (reset_due(r)) {
                reset_slot(s, i);
            } else if (done) {
                finish(s, r,
                       r->tool_off < r->tool_args.len || !r->tool_args.len ? "length"
                                                                           : "tool_calls");
                s->slots[i] = NULL;
                req_free(r);
            }
            continue;
        }
        /* reasoning: the first half of the tokens, in the engine's reasoning_content */
        bool reasoning = r->reasoning && r->n_gen < r->max_tokens / 2;
        /* with speculative decoding a decode step keeps its accepted drafts too: one chunk */
        int want = r->n_gen > 0 ? 1 + spec_kept(s, r) : 1;
        char step_txt[64 * (SW_SIM_SPEC_MAX + 1)];
        size_t used = 0;
        for (int k = 0; k < want && r->n_gen < r->max_tokens; k++) {
            if (k && (r->reasoning && r->n_gen < r->max_tokens / 2) != reasoning)
                break; /* a part's end ends the chunk */
            token_text(r, r->n_gen, tok, sizeof(tok));
            r->n_gen++;
            /* each part (reasoning, content) starts without the separating space */
            bool *begun = reasoning ? &r->reason_begun : &r->content_begun;
            const char *t = !*begun && tok[0] == ' ' ? tok + 1 : tok;
            *begun = true;
            int w = snprintf(step_txt + used, sizeof(step_txt) - used, "%s", t);
            if (w > 0 && (size_t)w < sizeof(step_txt) - used)
                used += (size_t)w;
        }
        if (r->stream)
            stream_token(s, r, step_txt, reasoning);
        else
            sw_buf_puts(reasoning ? &r->reason : &r->text, step_txt);
        if (reset_due(r)) {
            reset_slot(s, i);
        } else if (r->n_gen >= r->max_tokens) {
            finish(s, r, "length");
            s->slots[i] = NULL;
            req_free(r);
        }
    }
    if (s->crash_pending) {
        crash(s);
        return;
    }
    admit(s);
    schedule_step(s);
    s->step_chained = false; /* a request arriving while idle starts a step when it arrives */
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct sw_sim *s = arg;
    (void)fd;
    (void)what;
    /* firehose: several steps per turn of the loop (each stream's chunks leave in one write),
     * fewer the more streams there are (what one turn buffers stays bounded) */
    int running = n_running(s);
    int rounds = s->cfg.firehose ? SW_MAX(1, SW_MIN(64, 4096 / SW_MAX(running, 1))) : 1;
    for (int k = 0; k < rounds; k++) {
        step_end(s);
        if (!s->stepping || k + 1 == rounds)
            break;
        event_del(s->step_timer); /* the next step runs now, in this turn */
    }
}

/* Start the next step when anything runs: its duration from the timing model. Steps run back to
 * back on the engine's clock: a step that follows the previous one at once starts at that one's
 * ideal end, not when the loop got to it, so the loop's own lateness does not add up. */
static void schedule_step(struct sw_sim *s)
{
    if (s->stepping || s->in_window || s->state != SW__SIM_READY || s->fault_dead || s->fault_hang)
        return;
    preempt(s);
    int running = 0, decoding = 0;
    size_t npf = 0;
    double kv = 0;
    /* the step's token budget (vLLM max_num_batched_tokens, llama.cpp -b): the decoding
     * sequences' tokens first, then the prompts in admission order, the last one cut to a chunk
     * (chunked prefill); 0: no budget */
    int64_t budget = s->batch_tokens > 0 ? s->batch_tokens : INT64_MAX;
    for (int i = 0; i < s->n_slots; i++) {
        struct sw__sim_req *r = s->slots[i];
        if (!r)
            continue;
        running++;
        r->in_step = false;
        if (r->prefilled) {
            decoding++;
            kv += (double)(r->n_prompt + r->n_gen);
            r->in_step = true;
            budget--;
        }
    }
    if (!running)
        return;
    for (int pass = 0; pass < 2; pass++) /* the longest-admitted prompt first */
        for (int i = 0; i < s->n_slots && budget > 0; i++) {
            struct sw__sim_req *r = s->slots[i];
            if (!r || r->prefilled || r->in_step || npf >= s->n_pf_max)
                continue;
            if (pass == 0 && !r->prefill_done)
                continue; /* first the prompts already under way */
            /* after a preemption its tokens are prefilled again */
            int64_t left = r->n_prompt + r->n_gen - r->prefill_done;
            int64_t chunk = left < budget ? left : budget;
            r->step_chunk = chunk;
            r->in_step = true;
            budget -= chunk;
            s->pf_n[npf] = (double)chunk;
            s->pf_k0[npf++] = (double)r->prefill_done;
        }
    double win = s->cfg.firehose ? 0 : s->cfg.timing.batch_window_us;
    if (!s->step_chained && !s->window_passed && win > 0) {
        /* idle: what arrives within the window joins the first step */
        uint64_t w = (uint64_t)(win * 1000.0);
        struct timeval wt = {(time_t)(w / 1000000000u), (suseconds_t)(w % 1000000000u / 1000u)};
        s->in_window = true;
        s->window_end_ns = sw_now_ns() + w;
        event_add(s->window_timer, &wt);
        return;
    }
    double us =
        s->cfg.firehose ? 0 : sw_sim_step_us(&s->cfg.timing, decoding, kv, npf, s->pf_n, s->pf_k0);
    if (s->fault_jitter_us > 0) { /* seeded: the same seed jitters the same way */
        us += (double)(rng_next(&s->jitter_rng) % ((uint64_t)s->fault_jitter_us + 1));
    }
    us += s->fault_stall_us; /* a stall holds one step */
    s->fault_stall_us = 0;
    uint64_t now = sw_now_ns();
    /* chained to the last step's ideal end (or the batch window's), unless the loop fell 20 ms
     * behind (a stall is not caught up in a burst): a late timer on a loaded machine does not
     * add to the time the model says */
    uint64_t start = now;
    if (s->step_chained && s->step_end_ns <= now && now - s->step_end_ns < 20000000u)
        start = s->step_end_ns;
    else if (s->window_passed && s->window_end_ns <= now && now - s->window_end_ns < 20000000u)
        start = s->window_end_ns;
    uint64_t end = start + (uint64_t)(us * 1000.0);
    s->step_end_ns = end;
    uint64_t wait = end > now ? end - now : 0;
    struct timeval tv = {(time_t)(wait / 1000000000u), (suseconds_t)(wait % 1000000000u / 1000u)};
    s->stepping = true;
    event_add(s->step_timer, &tv);
}

static void on_window(evutil_socket_t fd, short what, void *arg)
{
    struct sw_sim *s = arg;
    (void)fd;
    (void)what;
    s->in_window = false;
    s->window_passed = true;
    admit(s);
    schedule_step(s);
    s->window_passed = false;
}

void sw__sim_drop_all(struct sw_sim *s)
{
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        if (s->slots[i]) {
            detach(s->slots[i]);
            req_free(s->slots[i]);
            s->slots[i] = NULL;
        }
    }
    while (s->queue_head) {
        struct sw__sim_req *r = s->queue_head;
        s->queue_head = r->next;
        detach(r);
        req_free(r);
    }
    s->queue_tail = NULL;
}

void sw__sim_http_ready(struct sw_sim *s)
{
    for (int i = 0; i < s->cfg.n_faults && s->state == SW__SIM_READY; i++)
        sw__sim_fault_apply(s, &s->cfg.faults[i]);
    admit(s);
    schedule_step(s);
}

/* ---------------------------------------------------------------------------------------------
 * Endpoints.
 */
/* Text of a message's content: a string, or the text parts of an array. */
static size_t content_len(const json_t *c)
{
    if (json_is_string(c))
        return json_string_length(c);
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(c); i++)
        n += json_string_length(json_object_get(json_array_get(c, i), "text"));
    return n;
}

static void hash_content(const json_t *c, uint64_t *h)
{
    if (json_is_string(c)) {
        *h ^= hash_bytes(json_string_value(c), json_string_length(c));
        *h = mix64(*h);
    }
    for (size_t i = 0; i < json_array_size(c); i++)
        hash_content(json_object_get(json_array_get(c, i), "text"), h);
}

/* An image part (image_url / input_image) in any message's content. */
static bool has_image(const json_t *msgs)
{
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        const json_t *c = json_object_get(json_array_get(msgs, i), "content");
        for (size_t k = 0; k < json_array_size(c); k++) {
            const char *t = json_string_value(json_object_get(json_array_get(c, k), "type"));
            if (t && (!strcmp(t, "image_url") || !strcmp(t, "input_image")))
                return true;
        }
    }
    return false;
}

/* The engine dies on this request: its lines, its 500, then the process ends (after the reply
 * is flushed) with the engine's status. */
static void runtime_oom(struct sw_sim *s, struct evhttp_request *req)
{
    struct sw_buf b;
    uint64_t task = ++s->next_id;
    if (s->engine == SW__SIM_SGLANG) {
        char cause[256] =
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB.";
        if (s->cfg.device_memory)
            snprintf(cause, sizeof(cause),
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU "
                     "0 has a total capacity of %.2f GiB of which 0 bytes is free.",
                     (double)s->cfg.device_memory / SW_GIB);
        (void)req; /* the process tree is killed: no reply */
        sglang_child_died(s, cause);
        return;
    }
    sw_buf_init(&b, 8192);
    if (s->engine == SW__SIM_LLAMACPP) {
        /* tests/data/bootlogs/llamacpp/oom_runtime.log */
        sw_buf_printf(
            &b, "E slot      iterate: id  0 | task %" PRIu64 " | got exception: std::bad_alloc\n",
            task);
        sw_buf_printf(&b,
                      "E srv    send_error: task id = %" PRIu64 ", error: got exception: "
                      "std::bad_alloc\n",
                      task);
        reply_json(req, 500, "Internal Server Error",
                   json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 500, "message",
                             "got exception: std::bad_alloc", "type", "server_error"));
        sw__sim_log_lines(s, &b);
        /* the assertion has no log prefix */
        FILE *f = s->cfg.log ? s->cfg.log : stderr;
        fprintf(f, "tools/server/server-context.cpp:2830: GGML_ASSERT(batch.slot_batched || "
                   "batch.size() == 0) failed\n");
        fflush(f);
    } else {
        char gib[128] = "";
        if (s->cfg.device_memory)
            snprintf(gib, sizeof(gib),
                     " GPU 0 has a total capacity of %.2f GiB of which 0 bytes "
                     "is free.",
                     (double)s->cfg.device_memory / SW_GIB);
        sw_buf_printf(&b,
                      "(EngineCore_DP0 pid=2) ERROR torch.OutOfMemoryError: CUDA out of memory. "
                      "Tried to allocate 50.00 MiB.%s\n",
                      gib);
        vllm_dead_tail(&b);
        reply_json(req, 500, "Internal Server Error",
                   json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message",
                             "EngineCore encountered an issue. See stack trace (above) for the "
                             "root cause.",
                             "type", "InternalServerError", "param", "code", 500));
        sw__sim_log_lines(s, &b);
    }
    sw_buf_free(&b);
    /* llama-server's abort(); vLLM's API server exits 0 after its engine died */
    die(s, s->engine == SW__SIM_LLAMACPP ? 134 : 0);
}

/* The arguments of a call: every required property, a word for a string, 1 for a number or an
 * integer, true for a boolean. Allocated (sw_free); NULL on OOM. */
static char *tool_arguments(const json_t *params, uint64_t seed)
{
    json_t *args = json_object();
    const json_t *props = json_object_get(params, "properties");
    const json_t *req = json_object_get(params, "required");
    for (size_t i = 0; args && i < json_array_size(req); i++) {
        const char *k = json_string_value(json_array_get(req, i));
        if (!k)
            continue;
        const char *type = json_string_value(json_object_get(json_object_get(props, k), "type"));
        if (type && (!strcmp(type, "number") || !strcmp(type, "integer")))
            json_object_set_new(args, k, json_integer(1));
        else if (type && !strcmp(type, "boolean"))
            json_object_set_new(args, k, json_true());
        else
            json_object_set_new(args, k, json_string(words[mix64(seed + i) % SW_ARRAY_LEN(words)]));
    }
    char *txt = args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(args);
    char *out = txt ? sw_strdup(txt) : NULL;
    free(txt);
    return out;
}

static void reply_500(struct sw_sim *s, struct evhttp_request *req)
{
    if (s->engine == SW__SIM_LLAMACPP)
        reply_json(req, 500, "Internal Server Error",
                   json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 500, "message",
                             "Internal Server Error (sim fault)", "type", "server_error"));
    else
        reply_json(req, 500, "Internal Server Error",
                   json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message",
                             "Internal Server Error (sim fault)", "type", "InternalServerError",
                             "param", "code", 500));
}

static void on_generate(struct sw_sim *s, struct evhttp_request *req, bool chat)
{
    if (s->fault_500_left > 0) {
        s->fault_500_left--;
        reply_500(s, req);
        return;
    }
    if (s->fault_oom_next) {
        s->fault_oom_next = false;
        runtime_oom(s, req);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    if (n > BODY_MAX) {
        reply_bad(s, req, "request body too large");
        return;
    }
    unsigned char *raw = evbuffer_pullup(in, (ev_ssize_t)n);
    json_t *body = raw ? sw_json_parse((const char *)raw, n, "request", NULL) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        reply_bad(s, req, "the body is not a JSON object");
        return;
    }
    int64_t n_prompt = 0;
    uint64_t h = s->cfg.seed;
    if (chat) {
        json_t *msgs = json_object_get(body, "messages");
        if (!json_is_array(msgs) || !json_array_size(msgs)) {
            json_decref(body);
            reply_bad(s, req, "'messages' must be a non-empty array");
            return;
        }
        /* the chat template's cost: 4 tokens a message and 3 to open the reply */
        for (size_t i = 0; i < json_array_size(msgs); i++) {
            const json_t *c = json_object_get(json_array_get(msgs, i), "content");
            n_prompt += sw_sim_count_tokens(NULL, content_len(c)) + 4;
            hash_content(c, &h);
        }
        n_prompt += 3;
    } else {
        json_t *p = json_object_get(body, "prompt");
        if (!json_is_string(p)) {
            json_decref(body);
            reply_bad(s, req, "'prompt' must be a string");
            return;
        }
        n_prompt = sw_sim_count_tokens(NULL, json_string_length(p)) + 1; /* BOS */
        hash_content(p, &h);
    }
    json_t *mt = json_object_get(body, "max_tokens");
    if (!mt)
        mt = json_object_get(body, "max_completion_tokens");
    if (!mt)
        mt = json_object_get(body, "n_predict");
    int64_t max_tokens = json_is_integer(mt) ? json_integer_value(mt) : -1;
    bool stream = json_is_true(json_object_get(body, "stream"));
    bool timings_per_token = json_is_true(json_object_get(body, "timings_per_token"));
    bool include_usage =
        json_is_true(json_object_get(json_object_get(body, "stream_options"), "include_usage"));
    bool continuous_usage = s->engine != SW__SIM_LLAMACPP && include_usage &&
                            json_is_true(json_object_get(json_object_get(body, "stream_options"),
                                                         "continuous_usage_stats"));
    /* a model that calls tools (--tools) calls the one asked for, else the first declared, when
     * the request declares any and does not say "none" */
    json_t *tools = json_object_get(body, "tools");
    json_t *tc = json_object_get(body, "tool_choice");
    const char *tool = NULL;
    json_t *tool_params = NULL;
    bool vllm_like = s->engine != SW__SIM_LLAMACPP;
    /* vLLM and SGLang force a call for tool_choice "required" or a named function (structured
     * output), whatever the server's flags; "auto" needs the server's tool parser */
    bool forced =
        json_is_object(tc) || (json_is_string(tc) && !strcmp(json_string_value(tc), "required"));
    if (chat && s->engine == SW__SIM_VLLM && json_array_size(tools) && !s->cfg.tools && !forced &&
        !(json_is_string(tc) && !strcmp(json_string_value(tc), "none"))) {
        json_decref(body);
        reply_bad(s, req,
                  "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser "
                  "to be set");
        return;
    }
    if (chat && vllm_like && has_image(json_object_get(body, "messages"))) {
        /* a text-only model (the sim has no vision tower) */
        json_decref(body);
        reply_bad(s, req, "the model does not support multimodal (image) inputs");
        return;
    }
    if (chat && (s->cfg.tools || (vllm_like && forced)) && json_array_size(tools) &&
        !(json_is_string(tc) && !strcmp(json_string_value(tc), "none"))) {
        const char *want =
            json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
        for (size_t i = 0; i < json_array_size(tools) && !tool; i++) {
            json_t *fn = json_object_get(json_array_get(tools, i), "function");
            const char *name = json_string_value(json_object_get(fn, "name"));
            if (name && (!want || !strcmp(want, name))) {
                tool = name;
                tool_params = json_object_get(fn, "parameters");
            }
        }
    }
    char *tool_name = tool ? sw_strdup(tool) : NULL;
    char *tool_args = tool ? tool_arguments(tool_params, h) : NULL;
    bool reasoning = s->cfg.reasoning ||
                     json_is_true(json_object_get(json_object_get(body, "chat_template_kwargs"),
                                                  "enable_thinking"));
    json_decref(body);

    if (s->engine == SW__SIM_LLAMACPP) {
        /* llama-server: a prompt at or past the slot's window is refused; generation stops at
         * the window */
        if (n_prompt >= s->window) {
            sw_free(tool_name);
            sw_free(tool_args);
            reply_too_long(s, req, n_prompt, 0);
            return;
        }
        if (max_tokens < 0)
            max_tokens = s->cfg.max_tokens_default;
        if (max_tokens > s->window - n_prompt)
            max_tokens = s->window - n_prompt;
    } else {
        if (max_tokens < 0)
            max_tokens = s->window - n_prompt;
        if (n_prompt + max_tokens > s->window) {
            sw_free(tool_name);
            sw_free(tool_args);
            reply_too_long(s, req, n_prompt, max_tokens);
            return;
        }
    }
    if (max_tokens < 1)
        max_tokens = 1;
    if (s->cfg.runtime_oom_tokens > 0 && n_prompt + max_tokens > s->cfg.runtime_oom_tokens) {
        sw_free(tool_name);
        sw_free(tool_args);
        runtime_oom(s, req);
        return;
    }
    struct sw__sim_req *r = sw_calloc(1, sizeof(*r));
    if (!r || (tool && (!tool_name || !tool_args))) {
        sw_free(r);
        sw_free(tool_name);
        sw_free(tool_args);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    sw_buf_init(&r->tool_args, 1u << 20);
    if (tool) {
        r->tool_name = tool_name;
        sw_buf_puts(&r->tool_args, tool_args);
        sw_free(tool_args);
        /* the name, then 4 bytes a token */
        int64_t need = 1 + (int64_t)(r->tool_args.len + 3) / 4;
        if (max_tokens > need)
            max_tokens = need;
    }
    r->sim = s;
    r->http = req;
    r->id = ++s->next_id;
    r->chat = chat;
    r->stream = stream;
    r->include_usage = include_usage;
    r->continuous_usage = continuous_usage;
    r->timings_per_token = timings_per_token;
    r->reasoning = reasoning && chat;
    r->slot = -1;
    r->n_prompt = n_prompt;
    r->max_tokens = max_tokens;
    r->text_seed = mix64(h);
    r->t_arrive_ns = sw_now_ns();
    if (s->fault_reset_left > 0) {
        s->fault_reset_left--;
        r->reset_at = s->fault_reset_after;
    }
    sw_buf_init(&r->text, 16u << 20);
    sw_buf_init(&r->reason, 16u << 20);
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_client_gone, r);
    if (s->queue_tail)
        s->queue_tail->next = r;
    else
        s->queue_head = r;
    s->queue_tail = r;
    admit(s);
    schedule_step(s);
}

static void on_models(struct sw_sim *s, struct evhttp_request *req)
{
    json_t *m = json_pack("{s:s,s:s,s:I,s:s}", "id", s->alias, "object", "model", "created",
                          (json_int_t)time(NULL), "owned_by",
                          s->engine == SW__SIM_LLAMACPP ? "llamacpp"
                          : s->engine == SW__SIM_SGLANG ? "sglang"
                                                        : "vllm");
    if (s->engine == SW__SIM_LLAMACPP)
        sw_json_set_new(m, "meta",
                        json_pack("{s:I,s:I}", "n_ctx_train", (json_int_t)s->window, "size",
                                  (json_int_t)s->payload_bytes));
    else
        sw_json_set_int(m, "max_model_len", s->window);
    reply_json(req, 200, "OK", json_pack("{s:s,s:[o]}", "object", "list", "data", m));
}

static void on_props(struct sw_sim *s, struct evhttp_request *req)
{
    /* a thinking model's template opens the reply with a <think> block */
    static const char chatml_think[] =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
        "%}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}";
    /* ChatML, as the test models here carry; no tools, no reasoning block */
    static const char chatml[] =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
        "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    reply_json(req, 200, "OK",
               json_pack("{s:{s:I,s:{s:I}},s:i,s:s,s:s,s:{s:b,s:b,s:b},s:{s:b,s:b},s:s}",
                         "default_generation_settings", "n_ctx", (json_int_t)s->window, "params",
                         "n_predict", (json_int_t)-1, "total_slots", s->n_slots, "model_path",
                         s->model_path, "chat_template", s->cfg.reasoning ? chatml_think : chatml,
                         "chat_template_caps", "supports_tools", s->cfg.tools,
                         "supports_tool_calls", s->cfg.tools, "supports_system_role", 1,
                         "modalities", "vision", 0, "audio", 0, "build_info", "b1-80fb11a"));
}

static void on_slots(struct sw_sim *s, struct evhttp_request *req)
{
    json_t *a = json_array();
    for (int i = 0; i < s->n_slots; i++) {
        const struct sw__sim_req *r = s->slots[i];
        json_array_append_new(a,
                              json_pack("{s:i,s:I,s:b,s:I,s:{s:I}}", "id", i, "n_ctx",
                                        (json_int_t)s->window, "is_processing", r != NULL,
                                        "id_task", (json_int_t)(r ? (int64_t)r->id : -1),
                                        "next_token", "n_decoded", (json_int_t)(r ? r->n_gen : 0)));
    }
    reply_json(req, 200, "OK", a);
}

static int n_queued(const struct sw_sim *s)
{
    int n = 0;
    for (const struct sw__sim_req *r = s->queue_head; r; r = r->next)
        n++;
    return n;
}

static void on_metrics(struct sw_sim *s, struct evhttp_request *req)
{
    struct sw_buf b;
    sw_buf_init(&b, 1u << 20);
    int running = n_running(s);
    if (s->engine == SW__SIM_LLAMACPP) {
        if (!s->metrics) {
            reply_json(req, 501, "Not Implemented",
                       json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 501, "message",
                                 "This server does not support metrics endpoint. Start it with "
                                 "`--metrics`",
                                 "type", "not_supported_error"));
            sw_buf_free(&b);
            return;
        }
        const struct {
            const char *name, *kind, *help;
            double v;
        } m[] = {
            {"prompt_tokens_total", "counter", "Number of prompt tokens processed.",
             (double)s->m_prompt_tokens},
            {"prompt_seconds_total", "counter", "Prompt process time", s->m_prompt_seconds},
            {"tokens_predicted_total", "counter", "Number of generation tokens processed.",
             (double)s->m_predicted_tokens},
            {"tokens_predicted_seconds_total", "counter", "Predict process time",
             s->m_predicted_seconds},
            {"n_decode_total", "counter", "Total number of llama_decode() calls",
             (double)s->m_decode_calls},
            {"prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
             s->m_prompt_seconds > 0 ? (double)s->m_prompt_tokens / s->m_prompt_seconds : 0},
            {"predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
             s->m_predicted_seconds > 0 ? (double)s->m_predicted_tokens / s->m_predicted_seconds
                                        : 0},
            {"requests_processing", "gauge", "Number of requests processing.", (double)running},
            {"requests_deferred", "gauge", "Number of requests deferred.", (double)n_queued(s)},
        };
        for (size_t i = 0; i < SW_ARRAY_LEN(m); i++)
            sw_buf_printf(&b, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %g\n",
                          m[i].name, m[i].help, m[i].name, m[i].kind, m[i].name, m[i].v);
    } else if (s->engine == SW__SIM_SGLANG) {
        if (!s->metrics) { /* the route is mounted only with --enable-metrics */
            reply_json(req, 404, "Not Found", json_pack("{s:s}", "detail", "Not Found"));
            sw_buf_free(&b);
            return;
        }
        /* python/sglang/srt/metrics/collector.py's names; no radix cache is kept, so nothing
         * is ever served from it */
        int64_t kv = kv_held(s);
        const struct {
            const char *name, *kind;
            double v;
        } m[] = {
            {"num_running_reqs", "gauge", (double)running},
            {"num_queue_reqs", "gauge", (double)n_queued(s)},
            {"num_used_tokens", "gauge", (double)kv},
            {"token_usage", "gauge", s->kv_pool > 0 ? (double)kv / (double)s->kv_pool : 0.0},
            {"gen_throughput", "gauge",
             s->m_predicted_seconds > 0 ? (double)s->m_predicted_tokens / s->m_predicted_seconds
                                        : 0},
            {"prompt_tokens_total", "counter", (double)s->m_prompt_tokens},
            {"generation_tokens_total", "counter", (double)s->m_predicted_tokens},
            {"num_requests_total", "counter", (double)s->m_requests},
            {"cached_tokens_total", "counter", 0.0},
            /* speculative decoding: tokens a verify step keeps (the bonus token included) and
             * the share of drafted tokens kept; SGLang shows 0 without it */
            {"spec_accept_length", "gauge",
             s->m_spec_drafts ? 1.0 + (double)s->m_spec_accepted / (double)s->m_spec_drafts : 0},
            {"spec_accept_rate", "gauge",
             s->m_spec_draft_tokens ? (double)s->m_spec_accepted / (double)s->m_spec_draft_tokens
                                    : 0},
        };
        for (size_t i = 0; i < SW_ARRAY_LEN(m); i++)
            sw_buf_printf(&b, "# TYPE sglang:%s %s\nsglang:%s{model_name=\"%s\"} %g\n", m[i].name,
                          m[i].kind, m[i].name, s->alias, m[i].v);
    } else {
        int64_t kv = kv_held(s);
        const struct {
            const char *name, *kind;
            double v;
        } m[] = {
            {"num_requests_running", "gauge", (double)running},
            {"num_requests_waiting", "gauge", (double)n_queued(s)},
            {"kv_cache_usage_perc", "gauge",
             s->kv_pool > 0 ? (double)kv / (double)s->kv_pool : 0.0},
            {"prompt_tokens_total", "counter", (double)s->m_prompt_tokens},
            {"generation_tokens_total", "counter", (double)s->m_predicted_tokens},
            {"request_success_total", "counter", (double)s->m_requests},
            {"num_preemptions_total", "counter", (double)s->m_preemptions},
            /* V1's prefix-cache counters: the sim keeps no prefix cache, so every prompt token
             * is looked up and none is found */
            {"prefix_cache_queries_total", "counter", (double)s->m_prompt_tokens},
            {"prefix_cache_hits_total", "counter", 0.0},
        };
        for (size_t i = 0; i < SW_ARRAY_LEN(m); i++)
            sw_buf_printf(&b, "# TYPE vllm:%s %s\nvllm:%s{engine=\"0\",model_name=\"%s\"} %g\n",
                          m[i].name, m[i].kind, m[i].name, s->alias, m[i].v);
        if (s->cfg.n_spec > 0) { /* vllm/v1/spec_decode/metrics.py's counters */
            const struct {
                const char *name;
                uint64_t v;
            } sd[] = {{"spec_decode_num_drafts_total", s->m_spec_drafts},
                      {"spec_decode_num_draft_tokens_total", s->m_spec_draft_tokens},
                      {"spec_decode_num_accepted_tokens_total", s->m_spec_accepted}};
            for (size_t i = 0; i < SW_ARRAY_LEN(sd); i++)
                sw_buf_printf(&b,
                              "# TYPE vllm:%s counter\nvllm:%s{engine=\"0\",model_name=\"%s\"} "
                              "%" PRIu64 "\n",
                              sd[i].name, sd[i].name, s->alias, sd[i].v);
            sw_buf_puts(&b, "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n");
            for (int k = 0; k < s->cfg.n_spec; k++)
                sw_buf_printf(&b,
                              "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\","
                              "model_name=\"%s\",position=\"%d\"} %" PRIu64 "\n",
                              s->alias, k, s->m_spec_pos[k]);
        }
    }
    reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", sw_buf_cstr(&b), b.len);
    sw_buf_free(&b);
}

static void on_request(struct evhttp_request *req, void *arg);

/* A held request's client went away: forget it (and free it when libevent left it to us, as
 * on_client_gone does). */
static void on_hung_gone(struct evhttp_connection *c, void *arg)
{
    struct sw_sim *s = arg;
    for (size_t i = 0; i < s->n_hung; i++) {
        if (s->hung_conn[i] != c)
            continue;
        if (!evhttp_request_get_connection(s->hung[i]))
            evhttp_request_free(s->hung[i]);
        s->hung[i] = s->hung[--s->n_hung];
        s->hung_conn[i] = s->hung_conn[s->n_hung];
        i--;
    }
}

void sw__sim_fault_apply(struct sw_sim *s, const struct sw_sim_fault *f)
{
    struct sw_buf b;
    switch (f->kind) {
    case SW_SIM_FAULT_NONE:
        s->fault_dead = s->fault_hang = s->fault_oom_next = false;
        s->fault_500_left = s->fault_reset_left = s->fault_crash_left = 0;
        s->fault_jitter_us = s->fault_stall_us = 0;
        break;
    case SW_SIM_FAULT_DEAD_GENERATION:
        s->fault_dead = true;
        break;
    case SW_SIM_FAULT_HANG:
        s->fault_hang = true;
        break;
    case SW_SIM_FAULT_OOM_NEXT_REQUEST:
        s->fault_oom_next = true;
        break;
    case SW_SIM_FAULT_HTTP_500:
        s->fault_500_left = f->count;
        break;
    case SW_SIM_FAULT_JITTER:
        s->fault_jitter_us = (double)f->ms * 1000.0;
        s->jitter_rng = s->cfg.seed;
        break;
    case SW_SIM_FAULT_STALL:
        s->fault_stall_us += (double)f->ms * 1000.0;
        break;
    case SW_SIM_FAULT_RESET:
        s->fault_reset_left = f->count;
        s->fault_reset_after = f->after;
        break;
    case SW_SIM_FAULT_CRASH:
        s->fault_crash_left = f->count;
        break;
    case SW_SIM_FAULT_EXIT0:
        /* vLLM's API server after its engine died: the engine's last lines, exit 0 */
        sw_buf_init(&b, 4096);
        if (s->engine == SW__SIM_VLLM)
            vllm_dead_tail(&b);
        else if (s->engine == SW__SIM_SGLANG)
            sw_buf_puts(&b, "INFO:     Shutting down\n");
        else
            sw_buf_puts(&b, "I srv    operator(): operator(): cleaning up before exit...\n");
        sw__sim_log_lines(s, &b);
        sw_buf_free(&b);
        die(s, 0);
        return;
    }
    if (!s->fault_hang) { /* a hang cleared: what it held is answered; steps resume */
        size_t n_held = s->n_hung;
        s->n_hung = 0;
        for (size_t i = 0; i < n_held; i++) {
            if (s->hung_conn[i])
                evhttp_connection_set_closecb(s->hung_conn[i], NULL, NULL);
            on_request(s->hung[i], s);
        }
    }
    admit(s);
    schedule_step(s);
}

/* POST /sim/fault {"kind": K, "count": N, "ms": N, "after": N}: a fault on demand (docs/sim.md,
 * "Faults"); 400 with the reason for a fault that is not one. */
static void on_fault(struct sw_sim *s, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    unsigned char *raw = n < 65536 ? evbuffer_pullup(in, (ev_ssize_t)n) : NULL;
    json_t *body = raw ? sw_json_parse((const char *)raw, n, "fault", NULL) : NULL;
    struct sw_sim_fault f;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_sim_fault_from_json(body, &f, &e);
    json_decref(body);
    if (rc) {
        char m[600];
        reply_json(req, 400, "Bad Request",
                   json_pack("{s:s}", "error", sw_err_format(&e, m, sizeof(m))));
        return;
    }
    reply_json(req, 200, "OK", json_pack("{s:s}", "fault", sw_sim_fault_name(f.kind)));
    sw__sim_fault_apply(s, &f);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct sw_sim *s = arg;
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (!path)
        path = "/";
    sw__sim_guard_rearm(s, req);
    /* a token is a small write: Nagle's algorithm would hold it for the client's delayed ACK
     * (40 ms here), which no engine's stream shows */
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (s->state == SW__SIM_STOPPING || s->state == SW__SIM_FAILED) {
        evhttp_send_error(req, 503, "shutting down");
        return;
    }
    if (!strcmp(path, "/sim/fault") && m == EVHTTP_REQ_POST && s->state == SW__SIM_READY) {
        on_fault(s, req); /* the control path is the sim's, not the engine's: never hangs */
        return;
    }
    if (s->fault_hang) { /* held, unanswered, until the hang clears (or the client goes) */
        if (s->n_hung == s->cap_hung) {
            size_t cap = s->cap_hung ? s->cap_hung * 2 : 64;
            struct evhttp_request **g = sw_realloc(s->hung, cap * sizeof(*g));
            if (g)
                s->hung = g;
            struct evhttp_connection **gc = g ? sw_realloc(s->hung_conn, cap * sizeof(*gc)) : NULL;
            if (gc)
                s->hung_conn = gc;
            if (!g || !gc) {
                evhttp_send_error(req, 500, "out of memory");
                return;
            }
            s->cap_hung = cap;
        }
        s->hung_conn[s->n_hung] = conn;
        s->hung[s->n_hung++] = req;
        if (conn)
            evhttp_connection_set_closecb(conn, on_hung_gone, s);
        return;
    }
    if (!strcmp(path, "/health")) {
        if (s->state == SW__SIM_LOADING)
            reply_loading(req);
        else if (s->engine == SW__SIM_LLAMACPP)
            reply_json(req, 200, "OK", json_pack("{s:s}", "status", "ok"));
        else
            reply_text(req, 200, "application/json", "", 0);
        return;
    }
    if (s->state == SW__SIM_LOADING) { /* llama-server answers everything 503 while loading */
        reply_loading(req);
        return;
    }
    bool get = m == EVHTTP_REQ_GET, post = m == EVHTTP_REQ_POST;
    if (get && (!strcmp(path, "/v1/models") || !strcmp(path, "/models")))
        on_models(s, req);
    else if (post && (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/chat/completions")))
        on_generate(s, req, true);
    else if (post && (!strcmp(path, "/v1/completions") || !strcmp(path, "/completions")))
        on_generate(s, req, false);
    else if (get && !strcmp(path, "/metrics"))
        on_metrics(s, req);
    else if (post && s->engine == SW__SIM_VLLM && !strcmp(path, "/reset_prefix_cache"))
        reply_text(req, 200, "application/json", "", 0); /* vLLM's dev route; nothing cached */
    else if (s->engine == SW__SIM_SGLANG && (get || post) && !strcmp(path, "/flush_cache")) {
        static const char flushed[] = "Cache flushed.\nPlease check backend logs for more details. "
                                      "(When there are running or waiting requests, the "
                                      "operation will not be performed.)\n";
        reply_text(req, 200, "text/plain", flushed, sizeof(flushed) - 1);
    } else if (get && s->engine == SW__SIM_SGLANG && !strcmp(path, "/get_model_info"))
        reply_json(req, 200, "OK",
                   json_pack("{s:s,s:s,s:b}", "model_path", s->model_path, "tokenizer_path",
                             s->model_path, "is_generation", 1));
    else if (get && s->engine == SW__SIM_SGLANG && !strcmp(path, "/health_generate")) {
        /* SGLang generates one token to answer: a dead generation path fails it */
        if (s->fault_dead)
            reply_text(req, 503, "text/plain", "", 0);
        else
            reply_text(req, 200, "text/plain", "", 0);
    } else if (get && s->engine == SW__SIM_LLAMACPP && !strcmp(path, "/props"))
        on_props(s, req);
    else if (get && s->engine == SW__SIM_LLAMACPP && !strcmp(path, "/slots"))
        on_slots(s, req);
    else if (s->engine == SW__SIM_LLAMACPP)
        reply_json(req, 404, "Not Found",
                   json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 404, "message", "File Not Found",
                             "type", "not_found_error"));
    else
        reply_json(req, 404, "Not Found", json_pack("{s:s}", "detail", "Not Found"));
}

int sw__sim_http_init(struct sw_sim *s, struct sw_err *e)
{
    s->spec_rng = s->cfg.seed ^ 0x5bd1e9955bd1e995ull; /* the drafts' own seeded sequence */
    s->slots = sw_calloc((size_t)s->n_slots, sizeof(*s->slots));
    s->n_pf_max = (size_t)s->n_slots;
    s->pf_n = sw_calloc(s->n_pf_max, sizeof(*s->pf_n));
    s->pf_k0 = sw_calloc(s->n_pf_max, sizeof(*s->pf_k0));
    if (!s->pf_n || !s->pf_k0)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    s->http = evhttp_new(s->base);
    s->step_timer = evtimer_new(s->base, on_step, s);
    s->window_timer = evtimer_new(s->base, on_window, s);
    if (!s->slots || !s->http || !s->step_timer || !s->window_timer)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
    evhttp_set_max_body_size(s->http, BODY_MAX);
    if (sw__sim_guard_init(s))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    evhttp_set_timeout(s->http, 600);
    evhttp_set_gencb(s->http, on_request, s);
    /* the served name as a JSON string, once (the streamed chunks' fast path) */
    json_t *a = json_string(s->alias);
    s->alias_json = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL;
    json_decref(a);
    s->chunk = evbuffer_new();
    if (!s->alias_json || !s->chunk)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return 0;
}
