/*
 * probe: the battery against a fake engine built on tests/support/swhttpd. The fake answers each
 * request with recorded real llama-server bytes (tests/data/openai/llama_*: /health while loading,
 * /v1/models, /props, /metrics, the probe's own liveness/chat/stream requests, a <think> stream
 * split into reasoning_content, a tool-call stream, an over-length 400), or misbehaves on
 * purpose (a dead engine behind a healthy /health, a stalled stream, a 10 MB line, a cut stream,
 * invalid UTF-8, data that is not JSON), or simulates what cannot be recorded here (a vision
 * model that reads the colour of the PNG the probe sends; an engine with a fixed number of slots
 * and a per-token delay, for concurrency and speed). Every outcome must be a classified check
 * result with evidence, never a hang or a crash. No timing thresholds: only order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/probe.h>

#include "swhttpd.h"
#include "swtest.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

enum chat_mode {
    CHAT_REPLAY,
    CHAT_DEAD,
    CHAT_STALL,
    CHAT_HUGE,
    CHAT_CUT,
    CHAT_BADUTF8,
    CHAT_NOTJSON,
    CHAT_SLOTS
};

struct fake {
    int health_503;
    int health_hits;
    const char *models;     /* file under tests/data/openai */
    const char *props;      /* file, or NULL: 404 */
    const char *props_text; /* literal JSON instead of a file */
    const char *metrics;    /* file, or NULL: 501 */
    const char *think_stream;
    const char *tool_stream;
    const char *exceed_body;
    enum chat_mode mode;
    int vision_sees;     /* answer the colour of an image_url PNG */
    int slots, token_ms; /* CHAT_SLOTS */
    int tokenizer;       /* answer /apply-template and /tokenize (fake_tokens); 0: 404 */
    int tokenize_calls;
    int parser_breaks; /* an ignore_eos stream without a grammar ends in the parser's error */
    int grammar_seen;  /* ignore_eos streams that carried a grammar */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int busy;
};

static void fake_init(struct fake *f)
{
    memset(f, 0, sizeof(*f));
    f->health_503 = 1;
    f->models = "llama_models.json";
    f->props = "llama_props.json";
    f->metrics = "llama_metrics.prom";
    f->think_stream = "llama_think_stream.sse";
    f->tool_stream = "llama_tool_stream.sse";
    f->exceed_body = "llama_exceed.body";
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
}

static bool put(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}

static char *data_file(const char *name, size_t *len)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "tests/data/openai/%s", name);
    char *buf = NULL;
    struct sw_err e;
    if (sw_read_file(swt_src(rel), 16u << 20, &buf, len, &e))
        fail_msg("cannot read %s", rel);
    return buf;
}

static int reply(int fd, int status, const char *ctype, const char *body, size_t n)
{
    char head[256];
    int h = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nServer: llama.cpp\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     status, ctype, n);
    return put(fd, head, (size_t)h) && put(fd, body, n) ? 0 : 1;
}

static int reply_file(int fd, int status, const char *ctype, const char *name)
{
    size_t n = 0;
    char *b = data_file(name, &n);
    int rc = reply(fd, status, ctype, b, n);
    sw_free(b);
    return rc;
}

static const char sse_head[] =
    "HTTP/1.1 200 OK\r\nServer: llama.cpp\r\n"
    "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

static bool chunk(int fd, const char *p, size_t n)
{
    char h[32];
    int k = snprintf(h, sizeof(h), "%zx\r\n", n);
    return put(fd, h, (size_t)k) && put(fd, p, n) && put(fd, "\r\n", 2);
}

static int stream_file(int fd, const char *name)
{
    size_t n = 0;
    char *b = data_file(name, &n);
    bool ok = put(fd, sse_head, sizeof(sse_head) - 1);
    /* in pieces of 61 bytes: events cut anywhere, as a network would */
    for (size_t i = 0; ok && i < n; i += 61)
        ok = chunk(fd, b + i, SW_MIN((size_t)61, n - i));
    ok = ok && put(fd, "0\r\n\r\n", 5);
    sw_free(b);
    return ok ? 0 : 1;
}

/* ---- reading the probe's PNG back (the fake vision model) ---- */

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static unsigned char *b64dec(const char *s, size_t *n)
{
    size_t l = strlen(s);
    unsigned char *o = malloc(l / 4 * 3 + 3);
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < l && s[i] != '='; i++) {
        int v = b64val(s[i]);
        if (v < 0)
            break;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (unsigned char)(acc >> bits);
        }
    }
    *n = k;
    return o;
}

/* The colour of the first pixel of a PNG written with stored deflate blocks. */
static const char *png_colour(const unsigned char *p, size_t n)
{
    if (n < 8 + 25 + 12 || memcmp(p + 12, "IHDR", 4) || memcmp(p + 37, "IDAT", 4))
        return "unreadable";
    const unsigned char *z = p + 41; /* zlib header, then the first stored block's 5 bytes */
    const unsigned char *px = z + 2 + 5 + 1; /* skip the row's filter byte */
    if (px[0] > 150 && px[1] < 100 && px[2] < 100)
        return "red";
    if (px[1] > 150 && px[0] < 100 && px[2] < 100)
        return "green";
    if (px[2] > 150 && px[0] < 100 && px[1] < 100)
        return "blue";
    return "grey";
}

static int answer_text(int fd, const char *text)
{
    char body[1024];
    int n = snprintf(body, sizeof(body),
                     "{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":"
                     "\"assistant\",\"content\":\"%s\"}}],\"usage\":{\"prompt_tokens\":20,"
                     "\"completion_tokens\":2,\"total_tokens\":22}}",
                     text);
    return reply(fd, 200, "application/json", body, (size_t)n);
}

/* ---- an engine with slots and a per-token delay ---- */

static int slot_stream(struct fake *f, int fd, int max_tokens)
{
    pthread_mutex_lock(&f->mu);
    while (f->busy >= f->slots)
        pthread_cond_wait(&f->cv, &f->mu);
    f->busy++;
    pthread_mutex_unlock(&f->mu);
    /* like llama-server, nothing is sent before the first token */
    bool ok = true;
    char ev[512];
    for (int i = 0; ok && i < max_tokens; i++) {
        usleep((useconds_t)f->token_ms * 1000);
        if (i == 0)
            ok = put(fd, sse_head, sizeof(sse_head) - 1);
        int n = snprintf(ev, sizeof(ev),
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%d\"},"
                         "\"finish_reason\":null}]}\n\n",
                         i);
        ok = ok && chunk(fd, ev, (size_t)n);
    }
    int n = snprintf(ev, sizeof(ev),
                     "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}"
                     "\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,"
                     "\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
                     max_tokens, 40 + max_tokens);
    ok = ok && chunk(fd, ev, (size_t)n) && put(fd, "0\r\n\r\n", 5);
    pthread_mutex_lock(&f->mu);
    f->busy--;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return ok ? 0 : 1;
}

/* ---- llama-server's chat parser breaking on a random model's text ---- */

/* max_tokens tokens, or half of them and then the error event the pinned llama-server sends when
 * its chat parser rejects the text (a half character): what a grammar of printable ASCII avoids */
static int parser_stream(int fd, int max_tokens, bool broken)
{
    bool ok = put(fd, sse_head, sizeof(sse_head) - 1);
    char ev[512];
    int n_out = broken ? max_tokens / 2 : max_tokens;
    for (int i = 0; ok && i < n_out; i++) {
        int n = snprintf(ev, sizeof(ev),
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},"
                         "\"finish_reason\":null}]}\n\n",
                         i);
        ok = chunk(fd, ev, (size_t)n);
    }
    int n;
    if (broken)
        n = snprintf(ev, sizeof(ev),
                     "data: {\"error\":{\"code\":500,\"message\":\"The model produced output "
                     "that does not match the expected peg-native format\",\"type\":"
                     "\"server_error\"}}\n\n");
    else
        n = snprintf(ev, sizeof(ev),
                     "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
                     "\"length\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":"
                     "40,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
                     max_tokens, 40 + max_tokens);
    ok = ok && chunk(fd, ev, (size_t)n) && put(fd, "0\r\n\r\n", 5);
    return ok ? 0 : 1;
}

/* ---- the handler ---- */

static int hostile_stream(struct fake *f, int fd)
{
    static const char first[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"content\":\"hi\"}}]}\n\n";
    if (!put(fd, sse_head, sizeof(sse_head) - 1) || !chunk(fd, first, sizeof(first) - 1))
        return 1;
    switch (f->mode) {
    case CHAT_STALL:
        for (int i = 0; i < 3000; i++) {
            struct pollfd pf = {fd, POLLIN, 0};
            if (poll(&pf, 1, 10) > 0) {
                char junk[256];
                if (recv(fd, junk, sizeof(junk), 0) <= 0)
                    return 1;
            }
        }
        return 1;
    case CHAT_HUGE: {
        char *x = malloc(65536);
        memset(x, 'x', 65536);
        memcpy(x, "data: ", 6);
        bool ok = true;
        for (int i = 0; ok && i < 160; i++) /* 10 MB in one line */
            ok = chunk(fd, x, 65536);
        free(x);
        return 1;
    }
    case CHAT_CUT:
        chunk(fd, "data: {\"choices\":[{\"ind", 23);
        return 1; /* close inside an event, without the last chunk */
    case CHAT_BADUTF8: {
        static const char bad[] = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":"
                                  "\"\xff\xfe\"}}]}\n\n";
        chunk(fd, bad, sizeof(bad) - 1);
        put(fd, "0\r\n\r\n", 5);
        return 0;
    }
    case CHAT_NOTJSON:
        chunk(fd, "data: <html>oops</html>\n\n", 25);
        put(fd, "0\r\n\r\n", 5);
        return 0;
    default:
        return 1;
    }
}

/* The fake's chat template and tokenizer: "<u>" + content + "</a>", one token per 3 bytes
 * (rounded up), counted the same by /tokenize and by a one-token request's usage. */
static size_t fake_tokens(size_t content_len)
{
    return (content_len + 7 + 2) / 3;
}

static int fake_tokenizer(struct fake *f, int fd, const char *path, const struct swh_request *rq)
{
    json_t *j = json_loadb(rq->body, rq->body_len, 0, NULL);
    assert_non_null(j);
    char *out = NULL;
    if (!strcmp(path, "/apply-template")) {
        const char *c = json_string_value(
            json_object_get(json_array_get(json_object_get(j, "messages"), 0), "content"));
        assert_non_null(c);
        json_t *o = json_pack("{s:s++}", "prompt", "<u>", c, "</a>");
        out = json_dumps(o, JSON_COMPACT);
        json_decref(o);
    } else {
        const char *c = json_string_value(json_object_get(j, "content"));
        assert_non_null(c);
        assert_true(json_is_true(json_object_get(j, "add_special")));
        pthread_mutex_lock(&f->mu);
        f->tokenize_calls++;
        pthread_mutex_unlock(&f->mu);
        json_t *toks = json_array();
        for (size_t i = 0; i < (strlen(c) + 2) / 3; i++)
            json_array_append_new(toks, json_integer((json_int_t)i));
        json_t *o = json_pack("{s:o}", "tokens", toks);
        out = json_dumps(o, JSON_COMPACT);
        json_decref(o);
    }
    json_decref(j);
    int rc = reply(fd, 200, "application/json", out, strlen(out));
    free(out);
    return rc;
}

static int handler(void *ud, int fd, const struct swh_request *rq)
{
    struct fake *f = ud;
    const char *path = rq->path;
    if (!strcmp(path, "/health")) {
        pthread_mutex_lock(&f->mu);
        int hit = f->health_hits++;
        pthread_mutex_unlock(&f->mu);
        if (hit < f->health_503)
            return reply_file(fd, 503, "application/json", "llama_health_loading.body");
        return reply(fd, 200, "application/json", "{\"status\":\"ok\"}", 15);
    }
    if (!strcmp(path, "/v1/models"))
        return reply_file(fd, 200, "application/json", f->models);
    if (!strcmp(path, "/props")) {
        if (f->props_text)
            return reply(fd, 200, "application/json", f->props_text, strlen(f->props_text));
        if (f->props)
            return reply_file(fd, 200, "application/json", f->props);
        return reply(fd, 404, "application/json", "{\"detail\":\"Not Found\"}", 22);
    }
    if (!strcmp(path, "/metrics")) {
        if (f->metrics)
            return reply_file(fd, 200, "text/plain; version=0.0.4", f->metrics);
        static const char e[] = "{\"error\":{\"code\":501,\"message\":\"This server does not "
                                "support metrics endpoint. Start it with `--metrics`\","
                                "\"type\":\"not_supported_error\"}}";
        return reply(fd, 501, "application/json", e, sizeof(e) - 1);
    }
    if (!strcmp(path, "/apply-template") || !strcmp(path, "/tokenize")) {
        if (!f->tokenizer)
            return reply(fd, 404, "application/json", "{\"error\":\"Not Found\"}", 21);
        return fake_tokenizer(f, fd, path, rq);
    }
    if (strcmp(path, "/v1/chat/completions"))
        return reply(fd, 404, "application/json", "{}", 2);
    json_t *j = json_loadb(rq->body, rq->body_len, 0, NULL);
    assert_non_null(j);
    bool stream = json_is_true(json_object_get(j, "stream"));
    int max_tokens = (int)json_integer_value(json_object_get(j, "max_tokens"));
    json_t *msg0 = json_array_get(json_object_get(j, "messages"), 0);
    json_t *content = json_object_get(msg0, "content");
    int rc;
    if (f->mode == CHAT_DEAD) {
        static const char e[] = "{\"error\":{\"code\":500,\"message\":\"the engine is dead\","
                                "\"type\":\"server_error\"}}";
        rc = reply(fd, 500, "application/json", e, sizeof(e) - 1);
    } else if (f->parser_breaks && stream && json_is_true(json_object_get(j, "ignore_eos"))) {
        bool grammar = json_is_string(json_object_get(j, "grammar"));
        pthread_mutex_lock(&f->mu);
        f->grammar_seen += grammar;
        pthread_mutex_unlock(&f->mu);
        rc = parser_stream(fd, max_tokens, !grammar);
    } else if (f->mode == CHAT_SLOTS && stream) {
        rc = slot_stream(f, fd, max_tokens);
    } else if (stream && f->mode != CHAT_REPLAY && f->mode != CHAT_SLOTS) {
        rc = hostile_stream(f, fd);
    } else if (f->tokenizer && !stream && max_tokens == 1 && json_is_string(content)) {
        char body[512];
        int n = snprintf(body, sizeof(body),
                         "{\"choices\":[{\"finish_reason\":\"length\",\"index\":0,"
                         "\"message\":{\"role\":\"assistant\",\"content\":\"x\"}}],"
                         "\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":%zu,"
                         "\"total_tokens\":%zu}}",
                         fake_tokens(json_string_length(content)),
                         fake_tokens(json_string_length(content)) + 1);
        rc = reply(fd, 200, "application/json", body, (size_t)n);
    } else if (json_is_string(content) && json_string_length(content) > 2000) {
        rc = reply_file(fd, 400, "application/json", f->exceed_body);
    } else if (json_is_array(content)) {
        /* an image_url part */
        const char *url = json_string_value(
            json_object_get(json_object_get(json_array_get(content, 1), "image_url"), "url"));
        size_t n = 0;
        unsigned char *png = url && strchr(url, ',') ? b64dec(strchr(url, ',') + 1, &n) : NULL;
        const char *c = png ? png_colour(png, n) : "nothing";
        free(png);
        rc = answer_text(fd, f->vision_sees ? c : "Purple");
    } else if (json_object_get(j, "images")) {
        rc = answer_text(fd, "Purple"); /* the legacy field, silently ignored */
    } else if (stream && json_object_get(j, "tools")) {
        rc = stream_file(fd, f->tool_stream);
    } else if (stream &&
               (json_object_get(j, "grammar") || json_object_get(j, "chat_template_kwargs"))) {
        rc = stream_file(fd, f->think_stream);
    } else if (stream) {
        rc = stream_file(fd, "llama_probe_stream.sse");
    } else if (max_tokens == 1) {
        rc = reply_file(fd, 200, "application/json", "llama_probe_liveness.json");
    } else {
        rc = reply_file(fd, 200, "application/json", "llama_probe_chat.json");
    }
    json_decref(j);
    return rc;
}

static struct swh *serve(struct fake *f)
{
    struct swh *s = swh_start();
    static const char *const paths[] = {"/health",  "/v1/models",           "/props",
                                        "/metrics", "/v1/chat/completions", "/apply-template",
                                        "/tokenize"};
    for (size_t i = 0; i < SW_ARRAY_LEN(paths); i++) {
        struct swh_step st[] = {{.op = SWH_CALL, .fn = handler, .ud = f}, {.op = SWH_END}};
        swh_script(s, NULL, paths[i], st);
    }
    return s;
}

static const struct sw_probe_result *find(const struct sw_probe_report *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].name, name))
            return &r->v[i];
    fail_msg("no check %s in the report", name);
    return NULL;
}

static void expect(const struct sw_probe_report *r, const char *name, enum sw_probe_status st,
                   const char *evidence_has)
{
    const struct sw_probe_result *c = find(r, name);
    if (c->status != st ||
        (evidence_has && !strstr(c->evidence, evidence_has) && !strstr(c->reason, evidence_has))) {
        print_error("%s: expected %s with \"%s\", got %s: %s -- %s\n", name,
                    sw_probe_status_name(st), evidence_has ? evidence_has : "",
                    sw_probe_status_name(c->status), c->evidence, c->reason);
        fail();
    }
}

static void run(struct swh *s, struct sw_probe_target *t, struct sw_probe_report *r)
{
    struct sw_err e;
    t->url = swh_url(s, "");
    if (!t->ready_ms)
        t->ready_ms = 10000;
    if (!t->timeout_ms)
        t->timeout_ms = 10000;
    assert_int_equal(sw_probe_run(t, r, &e), 0);
    json_t *j = sw_probe_report_json(r);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "checks")), r->n);
    json_decref(j);
}

/* ---- tests ---- */

static void test_replay_llama(void **state)
{
    struct fake f;
    fake_init(&f);
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1,
                                .model = "frank-small",
                                .only = "readiness,liveness,models,chat,stream,reasoning,"
                                        "tool_calls,vision,metrics,over_length"};
    struct sw_probe_report r;
    run(s, &t, &r);
    sw_probe_report_print(stderr, &r);
    assert_string_equal(r.engine, "llama.cpp");
    assert_string_equal(r.model, "frank-small");
    assert_int_equal(r.window, 512);
    assert_int_equal(r.slots, 2);
    assert_int_equal(r.vision, 0);
    expect(&r, "readiness", SW_PROBE_PASS, "503 (Loading model)");
    expect(&r, "liveness", SW_PROBE_PASS, "1 token");
    expect(&r, "models", SW_PROBE_PASS, "window 512");
    expect(&r, "chat", SW_PROBE_PASS, "16 tokens");
    expect(&r, "stream", SW_PROBE_PASS, "[DONE]");
    expect(&r, "reasoning", SW_PROBE_PASS, "reasoning_content");
    expect(&r, "tool_calls", SW_PROBE_PASS, "get_weather(");
    expect(&r, "vision", SW_PROBE_SKIP, "modalities.vision");
    expect(&r, "metrics", SW_PROBE_PASS, "llamacpp:*");
    expect(&r, "over_length", SW_PROBE_PASS, "n_prompt_tokens 1,009 > n_ctx 512");
    assert_int_equal(r.failed, 0);
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_replay_variants(void **state)
{
    struct fake f;
    fake_init(&f);
    /* the same <think> with --reasoning-format none: inline, named, a failure */
    f.think_stream = "llama_think_inline_stream.sse";
    /* arguments that are not JSON (synthetic: the random model's calls all came out whole) */
    f.tool_stream = "tool_call_bad_args.sse";
    f.metrics = NULL;
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1,
                                .model = "frank-small",
                                .window = 180224,
                                .only = "models,reasoning,tool_calls,metrics"};
    struct sw_probe_report r;
    run(s, &t, &r);
    expect(&r, "models", SW_PROBE_FAIL,
           "clients rely on 180,224 tokens but the server reports 512");
    expect(&r, "reasoning", SW_PROBE_FAIL, "inline");
    expect(&r, "tool_calls", SW_PROBE_FAIL, "not a JSON object");
    expect(&r, "metrics", SW_PROBE_FAIL, "--metrics");
    sw_probe_report_free(&r);
    /* a name the server does not serve */
    struct sw_probe_target t2 = {.vision = -1, .model = "frank-primary", .only = "models"};
    run(s, &t2, &r);
    expect(&r, "models", SW_PROBE_FAIL, "frank-primary is not listed");
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_vllm_shapes(void **state)
{
    struct fake f;
    fake_init(&f);
    f.health_503 = 0;
    f.models = "models_vllm.json";
    f.props = NULL;
    f.metrics = "metrics_vllm_spec.prom";
    f.think_stream = "vllm_reasoning_field.sse";
    f.exceed_body = "err_vllm_context.body";
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1,
                                .model = "frank-primary",
                                .slots = 3,
                                .only = "models,reasoning,metrics,over_length"};
    struct sw_probe_report r;
    run(s, &t, &r);
    assert_string_equal(r.engine, "vllm");
    assert_int_equal(r.window, 241664);
    expect(&r, "models", SW_PROBE_PASS, "max_model_len");
    expect(&r, "reasoning", SW_PROBE_PASS, "\"reasoning\"");
    expect(&r, "metrics", SW_PROBE_PASS, "pos0 69% pos1 44%");
    expect(&r, "over_length", SW_PROBE_PASS, "BadRequestError");
    sw_probe_report_free(&r);
    /* the operator's frank-primary before --reasoning-parser: a dangling </think> */
    f.think_stream = "dangling_think.sse";
    struct sw_probe_target t2 = {.vision = -1, .model = "frank-primary", .only = "reasoning"};
    run(s, &t2, &r);
    expect(&r, "reasoning", SW_PROBE_FAIL, "dangling </think>");
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_vision(void **state)
{
    struct fake f;
    fake_init(&f);
    f.health_503 = 0;
    f.props = NULL;
    f.props_text = "{\"total_slots\":1,\"modalities\":{\"vision\":true},"
                   "\"chat_template_caps\":{\"supports_tools\":true},\"chat_template\":\"x\"}";
    f.vision_sees = 1;
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1, .only = "vision"};
    struct sw_probe_report r;
    run(s, &t, &r);
    /* the fake read the colour out of the PNG the probe made: the image really went across */
    expect(&r, "vision", SW_PROBE_PASS, "silently ignored");
    assert_true(json_is_true(json_object_get(r.v[0].data, "legacy_images_ignored")));
    sw_probe_report_free(&r);
    f.vision_sees = 0;
    run(s, &t, &r);
    expect(&r, "vision", SW_PROBE_FAIL, "does not name the colour");
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_hostile(void **state)
{
    static const struct {
        enum chat_mode mode;
        const char *has;
    } cases[] = {
        {CHAT_STALL, "stalled"},        {CHAT_HUGE, "limit"},           {CHAT_CUT, "ended"},
        {CHAT_BADUTF8, "invalid JSON"}, {CHAT_NOTJSON, "invalid JSON"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(cases); i++) {
        struct fake f;
        fake_init(&f);
        f.health_503 = 0;
        f.mode = cases[i].mode;
        struct swh *s = serve(&f);
        struct sw_probe_target t = {.vision = -1, .timeout_ms = 1500, .only = "stream"};
        struct sw_probe_report r;
        run(s, &t, &r);
        print_message("%s\n", r.v[0].evidence);
        expect(&r, "stream", SW_PROBE_FAIL, cases[i].has);
        sw_probe_report_free(&r);
        swh_stop(s);
    }
    /* a healthy /health in front of a dead engine: readiness passes, liveness does not */
    struct fake f;
    fake_init(&f);
    f.mode = CHAT_DEAD;
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1, .only = "readiness,liveness,chat"};
    struct sw_probe_report r;
    run(s, &t, &r);
    expect(&r, "readiness", SW_PROBE_PASS, "200");
    expect(&r, "liveness", SW_PROBE_FAIL, "the engine is dead");
    expect(&r, "chat", SW_PROBE_FAIL, "HTTP 500");
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_slots(void **state)
{
    /* an engine with 2 slots: 2 streams overlap, the 3rd waits */
    struct fake f;
    fake_init(&f);
    f.health_503 = 0;
    f.mode = CHAT_SLOTS;
    f.slots = 2;
    f.token_ms = 15;
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1, .only = "concurrency,speed"};
    struct sw_probe_report r;
    run(s, &t, &r);
    print_message("%s\n%s\n", r.v[0].evidence, r.v[1].evidence);
    expect(&r, "concurrency", SW_PROBE_PASS, "after a slot freed");
    expect(&r, "speed", SW_PROBE_PASS, "decode");
    assert_true(json_array_size(json_object_get(r.v[1].data, "depths")) >= 2);
    sw_probe_report_free(&r);
    /* declared 2 but it runs 3 at once */
    f.slots = 3;
    run(s, &t, &r);
    expect(&r, "concurrency", SW_PROBE_FAIL, "did not wait");
    sw_probe_report_free(&r);
    /* declared 2 but only 1 runs */
    f.slots = 1;
    struct sw_probe_target t2 = {.vision = -1, .slots = 2, .only = "concurrency"};
    run(s, &t2, &r);
    expect(&r, "concurrency", SW_PROBE_FAIL, "do not run at once");
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_unreachable_and_usage(void **state)
{
    struct sw_probe_target t = {.url = "http://127.0.0.1:1", .vision = -1, .ready_ms = 100};
    struct sw_probe_report r;
    struct sw_err e;
    assert_int_equal(sw_probe_run(&t, &r, &e), 0);
    expect(&r, "readiness", SW_PROBE_FAIL, "refused");
    expect(&r, "liveness", SW_PROBE_SKIP, "refused");
    assert_int_equal(r.failed, 1);
    assert_int_equal(r.skipped, (int)r.n - 1);
    sw_probe_report_free(&r);
    t.only = "chat,bogus";
    assert_int_equal(sw_probe_run(&t, &r, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "bogus"));
    sw_probe_report_free(&r);
    size_t n;
    const char *const *names = sw_probe_check_names(&n);
    assert_int_equal(n, 13);
    assert_string_equal(names[n - 1], "worst_case");
}

/* worst_case sizes its prompt with the engine's tokenizer: the fake's count lands on the target
 * within the margin in a few counts, and max_tokens is the rest of the window by the usage
 * count; without the endpoints (404) it falls back to the usage of one-token requests, says
 * so, and stops after 4 counts. */
static void test_worst_case_sizing(void **state)
{
    (void)state;
    struct fake f;
    fake_init(&f);
    f.health_503 = 0;
    f.tokenizer = 1;
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1, .only = "readiness,worst_case", .window = 4096};
    struct sw_probe_report r;
    run(s, &t, &r);
    const struct sw_probe_result *w = find(&r, "worst_case");
    json_int_t target = json_integer_value(json_object_get(w->data, "target_prompt_tokens"));
    json_int_t got = json_integer_value(json_object_get(w->data, "prompt_tokens"));
    json_int_t sized = json_integer_value(json_object_get(w->data, "sized_tokens"));
    json_int_t margin = json_integer_value(json_object_get(w->data, "margin"));
    json_int_t counts = json_integer_value(json_object_get(w->data, "size_counts"));
    json_int_t gen = json_integer_value(json_object_get(w->data, "max_tokens"));
    const char *by = json_string_value(json_object_get(w->data, "sized_by"));
    print_message("target %lld: sized %lld, usage %lld in %lld counts (%s); %s\n",
                  (long long)target, (long long)sized, (long long)got, (long long)counts, by,
                  w->evidence);
    assert_true(target > 100);
    assert_true(got >= target - margin && got <= target + margin);
    assert_int_equal(sized, got);
    assert_true(counts >= 1 && counts <= 8);
    assert_int_equal(f.tokenize_calls, (int)counts);
    assert_int_equal(got + gen, target * 2);
    assert_non_null(strstr(by, "/tokenize"));
    assert_null(json_object_get(w->data, "size_note"));
    sw_probe_report_free(&r);

    /* no tokenizer endpoint: the fallback, said */
    f.tokenizer = 0;
    f.tokenize_calls = 0;
    run(s, &t, &r);
    w = find(&r, "worst_case");
    const char *note = json_string_value(json_object_get(w->data, "size_note"));
    assert_non_null(note);
    assert_non_null(strstr(note, "/apply-template"));
    assert_non_null(strstr(json_string_value(json_object_get(w->data, "sized_by")), "usage"));
    assert_true(json_integer_value(json_object_get(w->data, "size_counts")) <= 5);
    assert_int_equal(f.tokenize_calls, 0);
    sw_probe_report_free(&r);
    swh_stop(s);
}

/* worst_case's request broken by the server's chat parser (an error event half-way, the engine
 * alive) is retried with a grammar of printable ASCII, which fills the window: a pass, with the
 * attempts counted; a server that breaks every attempt fails the check, 3 attempts made. */
static void test_worst_case_parser_retry(void **state)
{
    (void)state;
    struct fake f;
    fake_init(&f);
    f.health_503 = 0;
    f.tokenizer = 1;
    f.parser_breaks = 1;
    struct swh *s = serve(&f);
    struct sw_probe_target t = {.vision = -1, .only = "readiness,worst_case", .window = 1024};
    struct sw_probe_report r;
    run(s, &t, &r);
    const struct sw_probe_result *w = find(&r, "worst_case");
    print_message("%s\n", w->evidence);
    assert_int_equal(w->status, SW_PROBE_PASS);
    assert_int_equal(json_integer_value(json_object_get(w->data, "attempts")), 2);
    assert_int_equal(f.grammar_seen, 1);
    assert_int_equal(json_integer_value(json_object_get(w->data, "completion_tokens")),
                     json_integer_value(json_object_get(w->data, "max_tokens")));
    sw_probe_report_free(&r);
    swh_stop(s);
}

static void test_cli(void **state)
{
    struct fake f;
    fake_init(&f);
    f.health_503 = 0;
    struct swh *s = serve(&f);
    struct swt_run r;
    swt_slipway(&r, "probe", swh_url(s, "/v1"), "--json", "--only", "readiness,liveness,models",
                "--model", "frank-small", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_int_equal(json_array_size(json_object_get(j, "checks")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "engine")), "llama.cpp");
    json_decref(j);
    swt_run_free(&r);
    swt_slipway(&r, "probe", swh_url(s, ""), "--only", "models", "--model", "nope", NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "nope is not listed"));
    swt_run_free(&r);
    swt_slipway_exits(2, "probe", swh_url(s, ""), "--only", "nosuch", NULL);
    swt_slipway_exits(2, "probe", "--frobnicate", NULL);
    swh_stop(s);
}

static void test_png(void **state)
{
    /* check the PNG with an independent, bitwise CRC-32 and Adler-32 and by reading it back */
    size_t n = 0;
    unsigned char *p = sw_probe_png_solid(3, 2, 10, 200, 30, &n);
    assert_non_null(p);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    assert_memory_equal(p, sig, 8);
    size_t off = 8;
    int chunks = 0;
    while (off + 12 <= n) {
        uint32_t len = (uint32_t)p[off] << 24 | p[off + 1] << 16 | p[off + 2] << 8 | p[off + 3];
        uint32_t crc = 0xFFFFFFFFu;
        for (size_t i = off + 4; i < off + 8 + len; i++) {
            crc ^= p[i];
            for (int k = 0; k < 8; k++)
                crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
        crc ^= 0xFFFFFFFFu;
        const unsigned char *c = p + off + 8 + len;
        assert_int_equal(crc, (uint32_t)c[0] << 24 | c[1] << 16 | c[2] << 8 | c[3]);
        if (!memcmp(p + off + 4, "IDAT", 4)) {
            const unsigned char *z = p + off + 8;
            assert_int_equal((z[0] * 256 + z[1]) % 31, 0);
            assert_int_equal(z[2], 1); /* final stored block */
            size_t blen = z[3] | z[4] << 8;
            assert_int_equal(blen, 2 * (1 + 3 * 3));
            const unsigned char *raw = z + 7;
            uint32_t a = 1, b = 0;
            for (size_t i = 0; i < blen; i++) {
                a = (a + raw[i]) % 65521;
                b = (b + a) % 65521;
            }
            const unsigned char *ad = raw + blen;
            assert_int_equal(b << 16 | a, (uint32_t)ad[0] << 24 | ad[1] << 16 | ad[2] << 8 | ad[3]);
            assert_int_equal(raw[0], 0);
            assert_int_equal(raw[1], 10);
            assert_int_equal(raw[2], 200);
            assert_int_equal(raw[3], 30);
        }
        off += 12 + len;
        chunks++;
    }
    assert_int_equal(off, n);
    assert_int_equal(chunks, 3);
    sw_free(p);
    /* a picture past one stored block (65,535 bytes) */
    p = sw_probe_png_solid(200, 200, 1, 2, 3, &n);
    assert_non_null(p);
    assert_true(n > 120000);
    sw_free(p);
    assert_null(sw_probe_png_solid(0, 5, 0, 0, 0, &n));
}

/* A report built by hand with what a server could have put in it: the JSON is still made (the
 * text repaired), and the table escapes every control character. */
static void test_report_text(void **state)
{
    struct sw_probe_report rep;
    memset(&rep, 0, sizeof(rep));
    struct sw_probe_result r;
    memset(&r, 0, sizeof(r));
    r.name = "readiness";
    r.status = SW_PROBE_PASS;
    snprintf(r.evidence, sizeof(r.evidence),
             "ok \xff\xfe \xc2\x9b"
             "31m \x1b]0;x\x07 tab\there\nnl");
    snprintf(r.reason, sizeof(r.reason), "\xc3(");
    r.data = json_object();
    rep.v = &r;
    rep.n = 1;
    rep.vision = -1;
    snprintf(rep.url, sizeof(rep.url), "http://127.0.0.1:1");
    snprintf(rep.model, sizeof(rep.model), "m\xc2\x85");
    json_t *doc = sw_probe_report_json(&rep);
    assert_non_null(doc);
    const char *ev = json_string_value(
        json_object_get(json_array_get(json_object_get(doc, "checks"), 0), "evidence"));
    assert_non_null(strstr(ev, "ok \xef\xbf\xbd\xef\xbf\xbd "));
    json_decref(doc);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    sw_probe_report_print(f, &rep);
    fclose(f);
    assert_null(strstr(buf, "\xc2\x9b"));
    assert_null(strstr(buf, "\xc2\x85"));
    assert_null(strchr(buf, 0x1b));
    assert_null(strchr(buf, 0x07));
    assert_null(strchr(buf, 0xff));
    assert_non_null(
        strstr(buf, "ok \\xff\\xfe \\u009b31m \\x1b]0;x\\x07 tab\there\\nnl -- \\xc3("));
    assert_non_null(strstr(buf, "model m\\u0085,"));
    free(buf);
    json_decref(r.data);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png),
        cmocka_unit_test(test_report_text),
        cmocka_unit_test(test_replay_llama),
        cmocka_unit_test(test_replay_variants),
        cmocka_unit_test(test_vllm_shapes),
        cmocka_unit_test(test_vision),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_unreachable_and_usage),
        cmocka_unit_test(test_worst_case_sizing),
        cmocka_unit_test(test_worst_case_parser_retry),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
