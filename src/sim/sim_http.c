/*
 * sim HTTP: the surface on the sim's one libevent loop: the routes (/health, /v1/models, the
 * completions routes, /metrics, llama-server's /props and /slots, SGLang's /flush_cache,
 * /get_model_info and /health_generate, vLLM's /reset_prefix_cache, the sim's POST /sim/fault),
 * what each engine answers while loading, and the loop's HTTP server. A request's head is bounded
 * before libevent parses it (sim_guard.c: 431 past 64 KiB or 100 header lines).
 *
 * What it does not do: read a generation request (sim_request.c), schedule (sim_sched.c), or
 * images.
 */
#include "sim_internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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
    sw__sim_reply_json(req, 200, "OK", json_pack("{s:s,s:[o]}", "object", "list", "data", m));
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
    sw__sim_reply_json(req, 200, "OK",
                       json_pack("{s:{s:I,s:{s:I}},s:i,s:s,s:s,s:{s:b,s:b,s:b},s:{s:b,s:b},s:s}",
                                 "default_generation_settings", "n_ctx", (json_int_t)s->window,
                                 "params", "n_predict", (json_int_t)-1, "total_slots", s->n_slots,
                                 "model_path", s->model_path, "chat_template",
                                 s->cfg.reasoning ? chatml_think : chatml, "chat_template_caps",
                                 "supports_tools", s->cfg.tools, "supports_tool_calls",
                                 s->cfg.tools, "supports_system_role", 1, "modalities", "vision", 0,
                                 "audio", 0, "build_info", "b1-80fb11a"));
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
    sw__sim_reply_json(req, 200, "OK", a);
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
        sw__sim_reply_json(req, 400, "Bad Request",
                           json_pack("{s:s}", "error", sw_err_format(&e, m, sizeof(m))));
        return;
    }
    sw__sim_reply_json(req, 200, "OK", json_pack("{s:s}", "fault", sw_sim_fault_name(f.kind)));
    sw__sim_fault_apply(s, &f);
}

void sw__sim_on_request(struct evhttp_request *req, void *arg)
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
        sw__sim_hold(s, req);
        return;
    }
    if (!strcmp(path, "/health")) {
        if (s->state == SW__SIM_LOADING)
            sw__sim_reply_loading(req);
        else if (s->engine == SW__SIM_LLAMACPP)
            sw__sim_reply_json(req, 200, "OK", json_pack("{s:s}", "status", "ok"));
        else
            sw__sim_reply_text(req, 200, "application/json", "", 0);
        return;
    }
    if (s->state == SW__SIM_LOADING) { /* llama-server answers everything 503 while loading */
        sw__sim_reply_loading(req);
        return;
    }
    bool get = m == EVHTTP_REQ_GET, post = m == EVHTTP_REQ_POST;
    if (get && (!strcmp(path, "/v1/models") || !strcmp(path, "/models")))
        on_models(s, req);
    else if (post && (!strcmp(path, "/v1/chat/completions") || !strcmp(path, "/chat/completions")))
        sw__sim_on_generate(s, req, true);
    else if (post && (!strcmp(path, "/v1/completions") || !strcmp(path, "/completions")))
        sw__sim_on_generate(s, req, false);
    else if (get && !strcmp(path, "/metrics"))
        sw__sim_on_metrics(s, req);
    else if (post && s->engine == SW__SIM_VLLM && !strcmp(path, "/reset_prefix_cache"))
        sw__sim_reply_text(req, 200, "application/json", "",
                           0); /* vLLM's dev route; nothing cached */
    else if (s->engine == SW__SIM_SGLANG && (get || post) && !strcmp(path, "/flush_cache")) {
        static const char flushed[] = "Cache flushed.\nPlease check backend logs for more details. "
                                      "(When there are running or waiting requests, the "
                                      "operation will not be performed.)\n";
        sw__sim_reply_text(req, 200, "text/plain", flushed, sizeof(flushed) - 1);
    } else if (get && s->engine == SW__SIM_SGLANG && !strcmp(path, "/get_model_info"))
        sw__sim_reply_json(req, 200, "OK",
                           json_pack("{s:s,s:s,s:b}", "model_path", s->model_path, "tokenizer_path",
                                     s->model_path, "is_generation", 1));
    else if (get && s->engine == SW__SIM_SGLANG && !strcmp(path, "/health_generate")) {
        /* SGLang generates one token to answer: a dead generation path fails it */
        if (s->fault_dead)
            sw__sim_reply_text(req, 503, "text/plain", "", 0);
        else
            sw__sim_reply_text(req, 200, "text/plain", "", 0);
    } else if (get && s->engine == SW__SIM_LLAMACPP && !strcmp(path, "/props"))
        on_props(s, req);
    else if (get && s->engine == SW__SIM_LLAMACPP && !strcmp(path, "/slots"))
        on_slots(s, req);
    else if (s->engine == SW__SIM_LLAMACPP)
        sw__sim_reply_json(req, 404, "Not Found",
                           json_pack("{s:{s:i,s:s,s:s}}", "error", "code", 404, "message",
                                     "File Not Found", "type", "not_found_error"));
    else
        sw__sim_reply_json(req, 404, "Not Found", json_pack("{s:s}", "detail", "Not Found"));
}

int sw__sim_http_init(struct sw_sim *s, struct sw_err *e)
{
    int rc = sw__sim_sched_init(s, e);
    if (rc)
        return rc;
    s->http = evhttp_new(s->base);
    if (!s->http)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
    evhttp_set_max_body_size(s->http, SW__SIM_BODY_MAX);
    if (sw__sim_guard_init(s))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    evhttp_set_timeout(s->http, 600);
    evhttp_set_gencb(s->http, sw__sim_on_request, s);
    /* the served name as a JSON string, once (the streamed chunks' fast path) */
    json_t *a = json_string(s->alias);
    s->alias_json = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL;
    json_decref(a);
    s->chunk = evbuffer_new();
    if (!s->alias_json || !s->chunk)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return 0;
}
