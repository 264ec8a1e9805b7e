/*
 * sim reply: the engine's answers in its own shapes: JSON bodies and plain text, llama-server's
 * 503 while loading and its exceed_context_size_error 400 (tests/data/bootlogs/llamacpp/http_*.json,
 * captured from the pinned build), vLLM's and SGLang's BadRequestError 400s, the 500s; a
 * generation's reply whole or streamed (SSE chunks: the role, each token or draft chunk, a tool
 * call's deltas, the finish with usage and llama.cpp's timings, [DONE]).
 *
 * What it does not do: decide what is said or when (the scheduler, sim_sched.c; the words,
 * sim_text.c), or route requests (sim_http.c).
 */
#include "sim_internal.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------------
 * Replies.
 */
void sw__sim_reply_json(struct evhttp_request *req, int code, const char *reason, json_t *j)
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

void sw__sim_reply_text(struct evhttp_request *req, int code, const char *ctype, const char *txt,
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

void sw__sim_reply_loading(struct evhttp_request *req)
{
    sw__sim_reply_json(req, 503, "Service Unavailable",
                       json_pack("{s:{s:s,s:s,s:i}}", "error", "message", "Loading model", "type",
                                 "unavailable_error", "code", 503));
}

/* The engine's 400 for a request that does not fit the window. */
void sw__sim_reply_too_long(struct sw_sim *s, struct evhttp_request *req, int64_t n_prompt,
                            int64_t max_tokens)
{
    char m[512];
    if (s->engine == SW__SIM_LLAMACPP) {
        snprintf(m, sizeof(m),
                 "request (%" PRId64 " tokens) exceeds the available context size (%" PRId64
                 " tokens), try increasing it",
                 n_prompt, s->window);
        sw__sim_reply_json(req, 400, "Bad Request",
                           json_pack("{s:{s:i,s:s,s:s,s:I,s:I}}", "error", "code", 400, "message",
                                     m, "type", "exceed_context_size_error", "n_prompt_tokens",
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
        sw__sim_reply_json(req, 400, "Bad Request",
                           json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message", m,
                                     "type", "BadRequestError", "param", "code", 400));
    }
}

void sw__sim_reply_bad(struct sw_sim *s, struct evhttp_request *req, const char *msg)
{
    if (s->engine == SW__SIM_LLAMACPP)
        sw__sim_reply_json(req, 400, "Bad Request",
                           json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 400, "message", msg,
                                     "type", "invalid_request_error"));
    else
        sw__sim_reply_json(req, 400, "Bad Request",
                           json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message", msg,
                                     "type", "BadRequestError", "param", "code", 400));
}

void sw__sim_reply_500(struct sw_sim *s, struct evhttp_request *req)
{
    if (s->engine == SW__SIM_LLAMACPP)
        sw__sim_reply_json(req, 500, "Internal Server Error",
                           json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 500, "message",
                                     "Internal Server Error (sim fault)", "type", "server_error"));
    else
        sw__sim_reply_json(req, 500, "Internal Server Error",
                           json_pack("{s:s,s:s,s:s,s:n,s:i}", "object", "error", "message",
                                     "Internal Server Error (sim fault)", "type",
                                     "InternalServerError", "param", "code", 500));
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
void sw__sim_stream_token(struct sw_sim *s, struct sw__sim_req *r, const char *tok, bool reasoning)
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
        r->predicted_ms = sw__sim_ms_between(r->t_first_ns, sw_now_ns());
        sw_json_set_new(o, "timings", timings_json(r));
    }
    if (r->continuous_usage) /* vLLM's continuous_usage_stats: the running usage in every chunk */
        sw_json_set_new(o, "usage", usage_json(r));
    send_chunk(r, o);
}

/* A tool call's delta: the first names the function, each next one carries a piece of its
 * arguments (as llama-server and vLLM stream a call's deltas). */
void sw__sim_stream_tool_call(struct sw_sim *s, struct sw__sim_req *r, bool first,
                              const char *piece)
{
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

void sw__sim_finish(struct sw_sim *s, struct sw__sim_req *r, const char *reason)
{
    r->t_done_ns = sw_now_ns();
    r->predicted_ms = sw__sim_ms_between(r->t_first_ns, r->t_done_ns);
    s->m_requests++;
    s->m_prompt_tokens += (uint64_t)r->n_prompt;
    s->m_predicted_tokens += (uint64_t)r->n_gen;
    s->m_prompt_seconds += r->prompt_ms / 1000.0;
    s->m_predicted_seconds += r->predicted_ms / 1000.0;
    if (s->fault_crash_left > 0 && --s->fault_crash_left == 0)
        s->crash_pending = true; /* the step that finished it is the engine's last */
    if (!r->http)
        return;
    sw__sim_detach(r);
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
        sw__sim_reply_json(r->http, 200, "OK", o);
    }
    r->http = NULL;
}

/* The stream's headers and the role chunk: sent when the request gets its slot, as llama-server
 * does (a queued request sees no byte until it runs). */
void sw__sim_start_stream(struct sw_sim *s, struct sw__sim_req *r)
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
