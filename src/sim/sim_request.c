/*
 * sim request: a generation request read (/v1/chat/completions, /v1/completions): its body
 * bounded, its prompt's tokens and seed, its limits against the window, the tool it calls, the
 * engine's refusals; then queued for the scheduler.
 *
 * What it does not do: schedule (sim_sched.c), or answer anything but the refusals
 * (sim_reply.c).
 */
#include "sim_internal.h"

#include <event2/buffer.h>
#include <string.h>

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

/* What a generation request asks, read from its body. */
struct ask {
    int64_t n_prompt, max_tokens;
    uint64_t h; /* the seed x the prompt */
    bool stream, include_usage, continuous_usage, timings_per_token, reasoning;
    bool tool;                   /* it gets a call, not text */
    char *tool_name, *tool_args; /* the call's, allocated (NULL: out of memory) */
};

static void ask_free(struct ask *q)
{
    sw_free(q->tool_name);
    sw_free(q->tool_args);
}

/* The body, bounded: a JSON object, else NULL (refused). */
static json_t *read_body(struct sw_sim *s, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    if (n > SW__SIM_BODY_MAX) {
        sw__sim_reply_bad(s, req, "request body too large");
        return NULL;
    }
    unsigned char *raw = evbuffer_pullup(in, (ev_ssize_t)n);
    json_t *body = raw ? sw_json_parse((const char *)raw, n, "request", NULL) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        sw__sim_reply_bad(s, req, "the body is not a JSON object");
        return NULL;
    }
    return body;
}

/* The prompt's tokens and the text's seed; false: refused. */
static bool read_prompt(struct sw_sim *s, struct evhttp_request *req, const json_t *body, bool chat,
                        struct ask *q)
{
    q->h = s->cfg.seed;
    if (chat) {
        json_t *msgs = json_object_get(body, "messages");
        if (!json_is_array(msgs) || !json_array_size(msgs)) {
            sw__sim_reply_bad(s, req, "'messages' must be a non-empty array");
            return false;
        }
        /* the chat template's cost: 4 tokens a message and 3 to open the reply */
        for (size_t i = 0; i < json_array_size(msgs); i++) {
            const json_t *c = json_object_get(json_array_get(msgs, i), "content");
            q->n_prompt += sw_sim_count_tokens(NULL, content_len(c)) + 4;
            sw__sim_hash_content(c, &q->h);
        }
        q->n_prompt += 3;
        return true;
    }
    json_t *p = json_object_get(body, "prompt");
    if (!json_is_string(p)) {
        sw__sim_reply_bad(s, req, "'prompt' must be a string");
        return false;
    }
    q->n_prompt = sw_sim_count_tokens(NULL, json_string_length(p)) + 1; /* BOS */
    sw__sim_hash_content(p, &q->h);
    return true;
}

/* The request's options: its token limit, how it streams, whether it thinks. */
static void read_options(const struct sw_sim *s, const json_t *body, struct ask *q)
{
    json_t *mt = json_object_get(body, "max_tokens");
    if (!mt)
        mt = json_object_get(body, "max_completion_tokens");
    if (!mt)
        mt = json_object_get(body, "n_predict");
    q->max_tokens = json_is_integer(mt) ? json_integer_value(mt) : -1;
    q->stream = json_is_true(json_object_get(body, "stream"));
    q->timings_per_token = json_is_true(json_object_get(body, "timings_per_token"));
    const json_t *so = json_object_get(body, "stream_options");
    q->include_usage = json_is_true(json_object_get(so, "include_usage"));
    q->continuous_usage = s->engine != SW__SIM_LLAMACPP && q->include_usage &&
                          json_is_true(json_object_get(so, "continuous_usage_stats"));
    q->reasoning = s->cfg.reasoning ||
                   json_is_true(json_object_get(json_object_get(body, "chat_template_kwargs"),
                                                "enable_thinking"));
}

/* The tool the reply calls, when the model calls tools (--tools) or the engine forces one, and
 * the engine's refusals of a chat it cannot answer; false: refused. */
static bool read_tools(struct sw_sim *s, struct evhttp_request *req, const json_t *body, bool chat,
                       struct ask *q)
{
    json_t *tools = json_object_get(body, "tools");
    json_t *tc = json_object_get(body, "tool_choice");
    bool none = json_is_string(tc) && !strcmp(json_string_value(tc), "none");
    bool vllm_like = s->engine != SW__SIM_LLAMACPP;
    /* vLLM and SGLang force a call for tool_choice "required" or a named function (structured
     * output), whatever the server's flags; "auto" needs the server's tool parser */
    bool forced =
        json_is_object(tc) || (json_is_string(tc) && !strcmp(json_string_value(tc), "required"));
    if (chat && s->engine == SW__SIM_VLLM && json_array_size(tools) && !s->cfg.tools && !forced &&
        !none) {
        sw__sim_reply_bad(s, req,
                          "\"auto\" tool choice requires --enable-auto-tool-choice and "
                          "--tool-call-parser to be set");
        return false;
    }
    if (chat && vllm_like && has_image(json_object_get(body, "messages"))) {
        /* a text-only model (the sim has no vision tower) */
        sw__sim_reply_bad(s, req, "the model does not support multimodal (image) inputs");
        return false;
    }
    if (!chat || !(s->cfg.tools || (vllm_like && forced)) || !json_array_size(tools) || none)
        return true;
    /* the one asked for, else the first declared */
    const char *want = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *fn = json_object_get(json_array_get(tools, i), "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (name && (!want || !strcmp(want, name))) {
            q->tool = true;
            q->tool_name = sw_strdup(name);
            q->tool_args = sw__sim_tool_arguments(json_object_get(fn, "parameters"), q->h);
            break;
        }
    }
    return true;
}

/* The engine's window: llama-server refuses a prompt at or past the slot's window and stops
 * generating at it; vLLM and SGLang refuse prompt + max_tokens past max_model_len and, without
 * max_tokens, generate to it. False: refused. */
static bool fit_window(struct sw_sim *s, struct evhttp_request *req, struct ask *q)
{
    if (s->engine == SW__SIM_LLAMACPP) {
        if (q->n_prompt >= s->window) {
            sw__sim_reply_too_long(s, req, q->n_prompt, 0);
            return false;
        }
        if (q->max_tokens < 0)
            q->max_tokens = s->cfg.max_tokens_default;
        if (q->max_tokens > s->window - q->n_prompt)
            q->max_tokens = s->window - q->n_prompt;
    } else {
        if (q->max_tokens < 0)
            q->max_tokens = s->window - q->n_prompt;
        if (q->n_prompt + q->max_tokens > s->window) {
            sw__sim_reply_too_long(s, req, q->n_prompt, q->max_tokens);
            return false;
        }
    }
    if (q->max_tokens < 1)
        q->max_tokens = 1;
    return true;
}

/* The request for the scheduler, owning q's tool strings; NULL on OOM. */
static struct sw__sim_req *make_req(struct sw_sim *s, struct evhttp_request *req, bool chat,
                                    struct ask *q)
{
    struct sw__sim_req *r = sw_calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    sw_buf_init(&r->tool_args, 1u << 20);
    if (q->tool) {
        r->tool_name = q->tool_name;
        q->tool_name = NULL;
        sw_buf_puts(&r->tool_args, q->tool_args);
        /* the name, then 4 bytes a token */
        int64_t need = 1 + (int64_t)(r->tool_args.len + 3) / 4;
        if (q->max_tokens > need)
            q->max_tokens = need;
    }
    r->sim = s;
    r->http = req;
    r->id = ++s->next_id;
    r->chat = chat;
    r->stream = q->stream;
    r->include_usage = q->include_usage;
    r->continuous_usage = q->continuous_usage;
    r->timings_per_token = q->timings_per_token;
    r->reasoning = q->reasoning && chat;
    r->slot = -1;
    r->n_prompt = q->n_prompt;
    r->max_tokens = q->max_tokens;
    r->text_seed = sw__sim_mix64(q->h);
    r->t_arrive_ns = sw_now_ns();
    if (s->fault_reset_left > 0) {
        s->fault_reset_left--;
        r->reset_at = s->fault_reset_after;
    }
    sw_buf_init(&r->text, 16u << 20);
    sw_buf_init(&r->reason, 16u << 20);
    return r;
}

void sw__sim_on_generate(struct sw_sim *s, struct evhttp_request *req, bool chat)
{
    struct ask q;
    memset(&q, 0, sizeof(q));
    if (s->fault_500_left > 0) {
        s->fault_500_left--;
        sw__sim_reply_500(s, req);
        return;
    }
    if (s->fault_oom_next) {
        s->fault_oom_next = false;
        sw__sim_runtime_oom(s, req);
        return;
    }
    json_t *body = read_body(s, req);
    if (!body)
        return;
    bool ok = read_prompt(s, req, body, chat, &q);
    if (ok)
        read_options(s, body, &q);
    ok = ok && read_tools(s, req, body, chat, &q);
    json_decref(body);
    if (!ok || !fit_window(s, req, &q)) {
        ask_free(&q);
        return;
    }
    if (s->cfg.runtime_oom_tokens > 0 && q.n_prompt + q.max_tokens > s->cfg.runtime_oom_tokens) {
        ask_free(&q);
        sw__sim_runtime_oom(s, req);
        return;
    }
    bool oom = q.tool && (!q.tool_name || !q.tool_args);
    struct sw__sim_req *r = oom ? NULL : make_req(s, req, chat, &q);
    ask_free(&q);
    if (!r) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    sw__sim_enqueue(s, r);
}
