/*
 * The battery's runner: checks the target, runs readiness, discovers what the caller did not say
 * (engine, served name, window, slots, vision) from the endpoint itself, runs the selected checks
 * in order on one event loop, and renders the report as JSON or as a table. Also the helpers the
 * checks share (requests with the token and timeouts, outcome recording, filler prompts).
 *
 * What it deliberately does not do: decide anything a check decides, or retry.
 */
#include "probe_internal.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

typedef void (*check_fn)(struct sw__probe *p, struct sw_probe_result *r);

static const struct {
    const char *name;
    check_fn fn;
    bool by_default;
} checks[] = {
    {"readiness", sw__probe_readiness, true},     {"liveness", sw__probe_liveness, true},
    {"models", sw__probe_models, true},           {"chat", sw__probe_chat_check, true},
    {"stream", sw__probe_stream, true},           {"reasoning", sw__probe_reasoning, true},
    {"tool_calls", sw__probe_tool_calls, true},   {"vision", sw__probe_vision, true},
    {"metrics", sw__probe_metrics, true},         {"over_length", sw__probe_over_length, true},
    {"concurrency", sw__probe_concurrency, true}, {"speed", sw__probe_speed, true},
    {"worst_case", sw__probe_worst_case, false},
};

static const char *const names[] = {
    "readiness", "liveness", "models",      "chat",        "stream", "reasoning", "tool_calls",
    "vision",    "metrics",  "over_length", "concurrency", "speed",  "worst_case"};

const char *const *sw_probe_check_names(size_t *n)
{
    *n = SW_ARRAY_LEN(names);
    return names;
}

const char *sw_probe_status_name(enum sw_probe_status s)
{
    switch (s) {
    case SW_PROBE_PASS:
        return "pass";
    case SW_PROBE_FAIL:
        return "fail";
    default:
        return "skip";
    }
}

/* ---- helpers shared by the checks ---- */

const char *sw__probe_url(struct sw__probe *p, const char *path)
{
    static _Thread_local char rot[8][1024]; /* per thread: serve proves shapes from workers */
    static _Thread_local int i;
    char *b = rot[i++ % 8];
    snprintf(b, sizeof(rot[0]), "%s%s", p->base, path);
    return b;
}

unsigned sw__probe_left_ms(const struct sw__probe *p)
{
    uint64_t now = sw_now_ns();
    if (now >= p->deadline_ns)
        return 0;
    uint64_t left = (p->deadline_ns - now) / 1000000ull;
    return left > UINT_MAX ? UINT_MAX : (unsigned)left;
}

bool sw__probe_silent(const struct sw_net_resp *resp)
{
    return resp->rc && !resp->t.first_byte &&
           (resp->fail == SW_NET_TIMEOUT_FIRST_BYTE || resp->fail == SW_NET_TIMEOUT_IDLE ||
            resp->fail == SW_NET_TIMEOUT_TOTAL);
}

void sw__probe_give_up(struct sw__probe *p, const char *fmt, ...)
{
    p->unreachable = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->unreachable_why, sizeof(p->unreachable_why), fmt, ap);
    va_end(ap);
}

void sw__probe_req(struct sw__probe *p, struct sw_net_req *q, unsigned total_ms)
{
    memset(q, 0, sizeof(*q));
    q->unix_socket = p->t->unix_socket;
    q->bearer = p->t->api_key && *p->t->api_key ? p->t->api_key : NULL;
    /* every wait is bounded by what is left of the battery's deadline (1 ms when nothing is:
     * 0 would be "no limit") */
    unsigned left = SW_MAX(sw__probe_left_ms(p), 1u);
    q->connect_ms = SW_MIN(10000u, left);
    /* the budget is for silence: a reply that stalls that long has failed; a reply that keeps
     * streaming may take up to ten budgets */
    q->idle_ms = SW_MIN(p->timeout_ms, left);
    q->total_ms = SW_MIN(total_ms ? total_ms : p->timeout_ms * 10u, left);
    q->body_max = SW__PROBE_BODY_MAX;
}

static void scrub_buf(struct sw_buf *b, const char *key)
{
    if (!b->data || !b->len)
        return;
    sw_redact_mem(b->data, &b->len, key);
    b->data[b->len] = '\0';
}

void sw__probe_scrub_resp(const struct sw__probe *p, struct sw_net_resp *resp)
{
    const char *key = p->t->api_key;
    if (!key || !*key)
        return;
    scrub_buf(&resp->body, key);
    sw_redact(resp->err.msg, key);
    for (size_t i = 0; i < resp->nheaders; i++)
        sw_redact(resp->headers[i].value, key);
}

void sw__probe_scrub_res(const struct sw__probe *p, struct sw_openai_result *res)
{
    const char *key = p->t->api_key;
    if (!key || !*key)
        return;
    scrub_buf(&res->content, key);
    scrub_buf(&res->reasoning, key);
    sw_redact(res->error.message, key);
    sw_redact(res->err.msg, key);
    for (size_t i = 0; i < res->ntool_calls; i++)
        scrub_buf(&res->tool_calls[i].args, key);
}

static void add_replaced(json_t *data, size_t n)
{
    if (!n || !data)
        return;
    json_int_t had = json_integer_value(json_object_get(data, "invalid_utf8_replaced"));
    sw_json_set_int(data, "invalid_utf8_replaced", (int64_t)(had + (json_int_t)n));
}

void sw__probe_data_str(struct sw_probe_result *r, const char *key, const char *s)
{
    if (!s) {
        sw_json_set_new(r->data, key, json_null());
        return;
    }
    size_t bad = 0;
    sw_json_set_new(r->data, key, sw_json_text(s, strlen(s), &bad));
    add_replaced(r->data, bad);
}

const char *sw__probe_encoding_note(const struct sw_net_resp *resp, char *out, size_t n)
{
    const char *ce = sw_net_resp_header(resp, "content-encoding");
    out[0] = '\0';
    if (ce && *ce && strcasecmp(ce, "identity"))
        snprintf(out, n,
                 "; the body is Content-Encoding %.40s, which slipway did not ask for and does "
                 "not decode (read as raw bytes, at most %u MiB)",
                 ce, SW__PROBE_BODY_MAX / (1024u * 1024u));
    return out;
}

int sw__probe_get(struct sw__probe *p, const char *path, struct sw_net_resp *resp)
{
    struct sw_net_req q;
    sw__probe_req(p, &q, 30000);
    q.url = sw__probe_url(p, path);
    int rc = sw_net_request(&p->loop, &q, resp, NULL);
    sw__probe_scrub_resp(p, resp);
    return rc;
}

json_t *sw__probe_chat(struct sw__probe *p, const char *user, int max_tokens, bool stream)
{
    struct sw_openai_chat c;
    sw_openai_chat_init(&c);
    json_t *msgs = json_array();
    if (!msgs || json_array_append_new(msgs, sw_openai_msg("user", user))) {
        json_decref(msgs);
        return NULL;
    }
    c.model = p->model[0] ? p->model : NULL;
    c.messages = msgs;
    c.max_tokens = max_tokens;
    c.stream = stream;
    c.include_usage = stream;
    c.temperature = 0;
    c.has_seed = true;
    c.seed = 42;
    json_t *j = sw_openai_chat_json(&c, NULL);
    json_decref(msgs);
    return j;
}

struct post_ctx {
    struct sw_openai_result *res;
    sw_sse_event_fn on_event;
    void *ud;
};

static int post_event(void *ud, const struct sw_sse_event *ev)
{
    struct post_ctx *c = ud;
    int rc = sw_openai_on_event(c->res, ev);
    if (rc)
        return rc;
    return c->on_event ? c->on_event(c->ud, ev) : 0;
}

int sw__probe_post(struct sw__probe *p, json_t *body, struct sw_openai_result *res,
                   struct sw_net_resp *resp, sw_sse_event_fn on_event, void *ud, unsigned total_ms)
{
    memset(resp, 0, sizeof(*resp));
    if (!body)
        return SW_ENOMEM;
    bool stream = json_is_true(json_object_get(body, "stream"));
    char *text = sw_json_dumps(body, JSON_COMPACT);
    if (!text)
        return SW_ENOMEM;
    struct sw_net_req q;
    sw__probe_req(p, &q, total_ms);
    q.url = sw__probe_url(p, "/v1/chat/completions");
    q.body = text;
    q.body_len = strlen(text);
    struct post_ctx c = {res, on_event, ud};
    if (stream) {
        q.on_event = post_event;
        q.ud = &c;
    }
    int rc = sw_net_request(&p->loop, &q, resp, NULL);
    sw_free(text);
    sw__probe_scrub_resp(p, resp);
    if (stream) {
        if (!rc)
            sw_openai_finish(res, NULL);
    } else if (!rc && resp->status == 200) {
        struct sw_err e;
        sw_err_clear(&e);
        if (sw_openai_parse_response(res, resp->body.data, resp->body.len, &e) && !res->err.code)
            res->err = e;
    }
    sw__probe_scrub_res(p, res);
    return rc;
}

char *sw__probe_filler(struct sw__probe *p, size_t tokens, unsigned nonce, const char *tail,
                       size_t *len)
{
    double bpt = p->bytes_per_token > 0 ? p->bytes_per_token : 4.0;
    return sw__probe_filler_bytes(p, (size_t)((double)tokens * bpt), nonce, tail, len);
}

char *sw__probe_filler_bytes(struct sw__probe *p, size_t want, unsigned nonce, const char *tail,
                             size_t *len)
{
    (void)p;
    static const char *const words[] = {
        "river",  "stone",  "garden", "winter", "letter", "market", "silver", "engine",
        "window", "forest", "harbor", "candle", "pepper", "ladder", "meadow", "copper",
    };
    size_t tl = tail ? strlen(tail) : 0;
    struct sw_buf b;
    sw_buf_init(&b, want + tl + 512);
    int rc = sw_buf_printf(&b, "[probe %u] ", nonce);
    uint32_t x = nonce * 2654435761u + 1;
    while (!rc && b.len < want) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        /* words and numbers: tokenizers split numbers finely, so the text is dense */
        rc = sw_buf_printf(&b, "%s %u ", words[x % SW_ARRAY_LEN(words)], (x >> 8) % 10000);
    }
    if (!rc && tail)
        rc = sw_buf_puts(&b, tail);
    if (rc) {
        sw_buf_free(&b);
        return NULL;
    }
    if (len)
        *len = b.len;
    return sw_buf_steal(&b);
}

void sw__probe_learn(struct sw__probe *p, size_t len, int64_t prompt_tokens)
{
    /* small prompts are mostly chat template: learn from large ones only */
    if (prompt_tokens >= 100 && len > 0)
        p->bytes_per_token = (double)len / (double)prompt_tokens;
}

void sw__probe_set(struct sw_probe_result *r, enum sw_probe_status st, const char *reason,
                   const char *fmt, ...)
{
    r->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->evidence, sizeof(r->evidence), fmt, ap);
    va_end(ap);
    snprintf(r->reason, sizeof(r->reason), "%s", reason ? reason : "");
}

void sw__probe_error_of(const struct sw_net_resp *resp, struct sw_openai_error *oe)
{
    sw_openai_parse_error(resp->body.data, resp->body.len, resp->status, oe);
}

const char *sw__probe_describe(const struct sw_net_resp *resp, char *out, size_t n)
{
    if (resp->rc) {
        snprintf(out, n, "%s (%s)", resp->err.msg, sw_net_fail_name(resp->fail));
        return out;
    }
    if (resp->status == 200) {
        snprintf(out, n, "HTTP 200");
        return out;
    }
    struct sw_openai_error oe;
    char enc[200];
    sw__probe_error_of(resp, &oe);
    snprintf(out, n, "HTTP %ld %s%s%s: %.300s%s", resp->status, sw_openai_err_kind_name(oe.kind),
             oe.type[0] ? " " : "", oe.type, oe.message,
             sw__probe_encoding_note(resp, enc, sizeof(enc)));
    return out;
}

const char *sw__probe_dur(uint64_t ns, char *out, size_t n)
{
    if (ns >= 1000000000ull)
        snprintf(out, n, "%.2f s", (double)ns / 1e9);
    else
        snprintf(out, n, "%.0f ms", (double)ns / 1e6);
    return out;
}

const char *sw__probe_quote(const char *s, size_t len, size_t n, char *out, size_t outn)
{
    size_t o = 0;
    if (outn < 8)
        return "";
    out[o++] = '"';
    for (size_t i = 0; i < len && i < n && o + 6 < outn; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (c < 0x20 || c == 0x7f) {
            out[o++] = '?';
        } else {
            out[o++] = (char)c;
        }
    }
    if (len > n && o + 4 < outn) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

bool sw__probe_alive(struct sw__probe *p, char *out, size_t n)
{
    json_t *body = sw__probe_chat(p, "Say OK.", 1, false);
    struct sw_openai_result res;
    struct sw_net_resp resp;
    sw_openai_result_init(&res, 0, 0);
    int rc = sw__probe_post(p, body, &res, &resp, NULL, NULL, 0);
    bool ok = !rc && resp.status == 200 && !res.err.code;
    char d[512];
    if (ok)
        snprintf(out, n, "a one-token generation answered in %s",
                 sw__probe_dur(resp.t.done - resp.t.start, d, sizeof(d)));
    else
        snprintf(out, n, "a one-token generation failed: %s",
                 sw__probe_describe(&resp, d, sizeof(d)));
    json_decref(body);
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
    return ok;
}

/* ---- discovery ---- */

static const char *eng_name(enum sw__probe_engine g)
{
    static const char *const n[] = {"", "llama.cpp", "vllm", "sglang"};
    return n[g];
}

static enum sw__probe_engine eng_from(const char *s)
{
    if (!s)
        return SW__ENG_UNKNOWN;
    if (!strcasecmp(s, "llama.cpp") || !strcasecmp(s, "llamacpp") ||
        !strcasecmp(s, "llama-server") || !strcasecmp(s, "llama"))
        return SW__ENG_LLAMACPP;
    if (!strcasecmp(s, "vllm"))
        return SW__ENG_VLLM;
    if (!strcasecmp(s, "sglang"))
        return SW__ENG_SGLANG;
    return SW__ENG_UNKNOWN;
}

static void found(struct sw__probe *p, const char *what, json_t *value, const char *from)
{
    json_t *o = json_object();
    if (!o) {
        json_decref(value);
        return;
    }
    sw_json_set_new(o, "value", value ? value : json_null());
    sw_json_set_str(o, "from", from);
    sw_json_set_new(p->rep->found, what, o);
}

static void discover(struct sw__probe *p)
{
    const struct sw_probe_target *t = p->t;
    p->eng = eng_from(t->engine);
    if (p->eng)
        found(p, "engine", json_string(eng_name(p->eng)), "given");
    struct sw_net_resp r;
    int64_t reported = 0;
    const char *wfrom = NULL;
    if (!sw__probe_get(p, "/v1/models", &r) && r.status == 200) {
        struct sw_openai_models m;
        if (!sw_openai_parse_models(r.body.data, r.body.len, &m, NULL) && m.n) {
            const struct sw_openai_model *x = t->model ? sw_openai_models_find(&m, t->model) : NULL;
            if (!x)
                x = &m.v[0];
            if (!p->eng && x->owned_by) {
                p->eng = eng_from(!strcmp(x->owned_by, "llamacpp") ? "llama.cpp" : x->owned_by);
                if (p->eng)
                    found(p, "engine", json_string(eng_name(p->eng)), "/v1/models owned_by");
            }
            if (t->model) {
                snprintf(p->model, sizeof(p->model), "%s", t->model);
                found(p, "model", sw_json_text(t->model, strlen(t->model), NULL), "given");
            } else {
                snprintf(p->model, sizeof(p->model), "%s", x->id);
                found(p, "model", json_string(x->id), "/v1/models (the first listed)");
            }
            if (x->n_ctx > 0) {
                reported = x->n_ctx;
                wfrom = "/v1/models meta.n_ctx (per slot)";
            } else if (x->max_model_len > 0) {
                reported = x->max_model_len;
                wfrom = "/v1/models max_model_len";
            }
        }
        sw_openai_models_free(&m);
    }
    if (!p->eng) {
        const char *server = sw_net_resp_header(&r, "server");
        if (server && strstr(server, "llama.cpp")) {
            p->eng = SW__ENG_LLAMACPP;
            found(p, "engine", json_string("llama.cpp"), "Server header");
        }
    }
    sw_net_resp_free(&r);
    if (!p->model[0] && t->model)
        snprintf(p->model, sizeof(p->model), "%s", t->model);
    int props_slots = 0, props_vision = -1;
    if (p->eng == SW__ENG_LLAMACPP && !sw__probe_get(p, "/props", &r) && r.status == 200) {
        json_t *j = sw_json_parse(r.body.data, r.body.len, "/props", NULL);
        if (j) {
            json_t *ts = json_object_get(j, "total_slots");
            if (json_is_integer(ts))
                props_slots = (int)json_integer_value(ts);
            json_t *nc =
                json_object_get(json_object_get(j, "default_generation_settings"), "n_ctx");
            if (!reported && json_is_integer(nc)) {
                reported = json_integer_value(nc);
                wfrom = "/props default_generation_settings.n_ctx";
            }
            json_t *v = json_object_get(json_object_get(j, "modalities"), "vision");
            if (json_is_boolean(v))
                props_vision = json_is_true(v);
            json_t *st =
                json_object_get(json_object_get(j, "chat_template_caps"), "supports_tools");
            if (json_is_boolean(st)) {
                p->tmpl_tools = json_is_true(st);
                found(p, "template_tools", json_boolean(p->tmpl_tools),
                      "/props chat_template_caps.supports_tools");
            }
            const char *tmpl = json_string_value(json_object_get(j, "chat_template"));
            if (tmpl) {
                /* the reasoning markers the templates llama.cpp knows use */
                p->tmpl_think = strstr(tmpl, "<think>") || strstr(tmpl, "[THINK]") ||
                                strstr(tmpl, "<|channel|>") || strstr(tmpl, "<seed:think>");
                found(p, "template_reasoning", json_boolean(p->tmpl_think),
                      "/props chat_template (a <think>-style block)");
            }
            json_decref(j);
        }
    }
    sw_net_resp_free(&r);
    p->reported = reported;
    if (reported)
        found(p, "reported_window", json_integer(reported), wfrom);
    if (t->window > 0) {
        p->window = t->window;
        found(p, "window", json_integer(t->window), "given");
    } else if (reported) {
        p->window = reported;
        found(p, "window", json_integer(reported), wfrom);
    }
    if (t->slots > 0) {
        p->slots = t->slots;
        found(p, "slots", json_integer(t->slots), "given");
    } else if (props_slots > 0) {
        p->slots = props_slots;
        found(p, "slots", json_integer(props_slots), "/props total_slots");
    }
    if (t->vision >= 0) {
        p->vision = t->vision;
        found(p, "vision", json_boolean(t->vision), "given");
    } else {
        p->vision = props_vision;
        if (props_vision >= 0)
            found(p, "vision", json_boolean(props_vision), "/props modalities.vision");
    }
    snprintf(p->rep->engine, sizeof(p->rep->engine), "%s", eng_name(p->eng));
    snprintf(p->rep->model, sizeof(p->rep->model), "%s", p->model);
    p->rep->window = p->window;
    p->rep->slots = p->slots;
    p->rep->vision = p->vision;
}

/* ---- what reaches the report ---- */

/* The key out of every string of a JSON value (jansson's strings are well-formed already). */
static void scrub_json(json_t *j, const char *key)
{
    if (!j || !key || !*key)
        return;
    if (json_is_string(j)) {
        size_t len = json_string_length(j);
        char *c = sw_malloc(len + 1);
        if (!c)
            return;
        memcpy(c, json_string_value(j), len + 1);
        if (sw_redact_mem(c, &len, key))
            json_string_setn(j, c, len);
        sw_free(c);
    } else if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            scrub_json(v, key);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            scrub_json(json_array_get(j, i), key);
    }
}

/* s (a buffer of n bytes) without the key and as well-formed UTF-8. Returns the bytes replaced
 * by U+FFFD. */
static size_t scrub_text(char *s, size_t n, const char *key)
{
    char tmp[1024];
    size_t bad = 0;
    if (key && *key)
        sw_redact(s, key);
    sw_utf8_repair(s, strlen(s), tmp, SW_MIN(n, sizeof(tmp)), &bad);
    if (bad)
        memcpy(s, tmp, strlen(tmp) + 1);
    return bad;
}

/* Append a note to a one-line text, cutting the text (at a character boundary) to make room. */
static void append_note(char *s, size_t n, const char *note)
{
    size_t nl = strlen(note), len = strlen(s);
    if (nl >= n)
        return;
    if (len + nl >= n) {
        len = n - nl - 1;
        while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
            len--;
    }
    memcpy(s + len, note, nl + 1);
}

/* Every check's outcome passes here before it is kept: the key replaced wherever it hides
 * (evidence, reason, data), and text made well-formed UTF-8, saying how many bytes were
 * replaced. */
static void scrub_result(struct sw__probe *p, struct sw_probe_result *r)
{
    const char *key = p->t->api_key;
    size_t bad = scrub_text(r->evidence, sizeof(r->evidence), key);
    bad += scrub_text(r->reason, sizeof(r->reason), key);
    scrub_json(r->data, key);
    add_replaced(r->data, bad);
    json_int_t n = json_integer_value(json_object_get(r->data, "invalid_utf8_replaced"));
    if (n > 0) {
        char note[160];
        snprintf(note, sizeof(note),
                 " [%lld byte%s of invalid UTF-8 from the server shown as U+FFFD]", (long long)n,
                 n == 1 ? "" : "s");
        append_note(r->evidence, sizeof(r->evidence), note);
    }
}

/* ---- running ---- */

static int select_checks(const struct sw_probe_target *t, bool *on, struct sw_err *e)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(checks); i++)
        on[i] = t->only ? false
                        : (checks[i].by_default ||
                           (t->worst_case && !strcmp(checks[i].name, "worst_case")));
    if (!t->only)
        return 0;
    const char *s = t->only;
    while (*s) {
        size_t len = strcspn(s, ", ");
        if (len) {
            bool hit = false;
            for (size_t i = 0; i < SW_ARRAY_LEN(checks); i++) {
                if (strlen(checks[i].name) == len && !strncmp(checks[i].name, s, len)) {
                    on[i] = true;
                    hit = true;
                }
            }
            if (!hit)
                return sw_err_set(e, SW_EINVAL,
                                  "--only: no check named '%.*s' (checks: "
                                  "readiness, liveness, models, chat, stream, reasoning, "
                                  "tool_calls, vision, metrics, over_length, concurrency, speed, "
                                  "worst_case)",
                                  (int)len, s);
        }
        s += len;
        while (*s == ',' || *s == ' ')
            s++;
    }
    if (t->worst_case)
        on[SW_ARRAY_LEN(checks) - 1] = true;
    return 0;
}

static void set_base(struct sw__probe *p, const char *url)
{
    snprintf(p->base, sizeof(p->base), "%s", url);
    size_t n = strlen(p->base);
    while (n && p->base[n - 1] == '/')
        p->base[--n] = '\0';
    if (n >= 3 && !strcmp(p->base + n - 3, "/v1"))
        p->base[n - 3] = '\0';
}

int sw_probe_run(const struct sw_probe_target *t, struct sw_probe_report *out, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    out->vision = -1;
    int rc = 0;
    struct sw__probe p;
    memset(&p, 0, sizeof(p));
    bool on[SW_ARRAY_LEN(checks)];
    bool loop_ok = false;
    if (!t->url || !*t->url)
        return sw_err_set(e, SW_EINVAL, "probe: no URL");
    rc = select_checks(t, on, e);
    if (rc)
        return rc;
    out->found = json_object();
    out->v = sw_calloc(SW_ARRAY_LEN(checks), sizeof(*out->v));
    if (!out->found || !out->v) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_net_loop_init(&p.loop, NULL, e);
    if (rc)
        goto out;
    loop_ok = true;
    p.t = t;
    p.rep = out;
    p.timeout_ms = t->timeout_ms ? t->timeout_ms : 300000;
    p.deadline_ms = t->deadline_ms ? t->deadline_ms : SW_PROBE_DEADLINE_MS_DEFAULT;
    p.deadline_ns = sw_now_ns() + (uint64_t)p.deadline_ms * 1000000ull;
    out->deadline_ms = p.deadline_ms;
    p.vision = -1;
    p.tmpl_tools = -1;
    p.tmpl_think = -1;
    set_base(&p, t->url);
    sw_net_redact_url(p.base, out->url, sizeof(out->url));
    if (t->unix_socket && t->unix_socket[0])
        snprintf(out->via, sizeof(out->via), "%s", t->via && t->via[0] ? t->via : "a forward");
    bool discovered = false;
    for (size_t i = 0; i < SW_ARRAY_LEN(checks); i++) {
        if (!on[i] && i != 0)
            continue;
        if (i == 0 && !on[i]) {
            /* readiness not asked for: still wait through "loading" before anything else */
            struct sw_probe_result scratch;
            memset(&scratch, 0, sizeof(scratch));
            scratch.data = json_object();
            sw__probe_readiness(&p, &scratch);
            json_decref(scratch.data);
            continue;
        }
        if (i > 0 && !discovered) {
            if (!p.unreachable)
                discover(&p);
            discovered = true;
        }
        struct sw_probe_result *r = &out->v[out->n++];
        r->name = checks[i].name;
        r->data = json_object();
        if (!r->data) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        if (t->progress)
            fprintf(t->progress, "probe: %s ...\n", r->name);
        double t0 = sw_now_s();
        if (p.unreachable && i > 0) {
            sw__probe_set(r, SW_PROBE_SKIP, p.unreachable_why,
                          "not run: the endpoint is unreachable or silent");
        } else if (i > 0 && !sw__probe_left_ms(&p)) {
            sw__probe_set(r, SW_PROBE_SKIP, NULL,
                          "not run: the battery's deadline of %u s (--deadline) ran out before "
                          "this check",
                          p.deadline_ms / 1000u);
            snprintf(r->reason, sizeof(r->reason), "the battery's deadline ran out");
        } else {
            checks[i].fn(&p, r);
            if (r->status == SW_PROBE_FAIL && !sw__probe_left_ms(&p)) {
                size_t rl = strlen(r->reason);
                snprintf(r->reason + rl, sizeof(r->reason) - rl,
                         "%sthe battery's deadline of %u s (--deadline) ran out during it",
                         rl ? "; " : "", p.deadline_ms / 1000u);
            }
        }
        scrub_result(&p, r);
        r->ms = (sw_now_s() - t0) * 1000.0;
        if (r->status == SW_PROBE_PASS)
            out->passed++;
        else if (r->status == SW_PROBE_FAIL)
            out->failed++;
        else
            out->skipped++;
        if (t->progress)
            fprintf(t->progress, "probe: %s %s (%.0f ms)\n", r->name,
                    sw_probe_status_name(r->status), r->ms);
    }
    if (p.unreachable) {
        snprintf(out->gave_up, sizeof(out->gave_up), "%s", p.unreachable_why);
        scrub_text(out->gave_up, sizeof(out->gave_up), t->api_key);
    }
    scrub_json(out->found, t->api_key);
    scrub_text(out->model, sizeof(out->model), t->api_key);
    scrub_text(out->engine, sizeof(out->engine), t->api_key);
out:
    if (loop_ok)
        sw_net_loop_close(&p.loop);
    return rc;
}

void sw_probe_report_free(struct sw_probe_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        json_decref(r->v[i].data);
    sw_free(r->v);
    json_decref(r->found);
    memset(r, 0, sizeof(*r));
}

json_t *sw_probe_report_json(const struct sw_probe_report *r)
{
    json_t *j = json_object();
    json_t *arr = json_array();
    int rc = 0;
    if (!j || !arr) {
        json_decref(j);
        json_decref(arr);
        return NULL;
    }
    rc |= sw_json_set_str(j, "url", r->url);
    if (r->via[0])
        rc |= sw_json_set_str(j, "via", r->via);
    rc |= sw_json_set_str(j, "engine", r->engine[0] ? r->engine : NULL);
    rc |= sw_json_set_str(j, "model", r->model[0] ? r->model : NULL);
    rc |= sw_json_set_new(j, "window", r->window ? json_integer(r->window) : json_null());
    rc |= sw_json_set_new(j, "slots", r->slots ? json_integer(r->slots) : json_null());
    rc |= sw_json_set_new(j, "vision", r->vision < 0 ? json_null() : json_boolean(r->vision));
    rc |= sw_json_set_int(j, "deadline_ms", r->deadline_ms);
    rc |= sw_json_set_str(j, "gave_up", r->gave_up[0] ? r->gave_up : NULL);
    rc |= sw_json_set_new(j, "found", r->found ? json_incref(r->found) : json_object());
    for (size_t i = 0; i < r->n; i++) {
        const struct sw_probe_result *c = &r->v[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o)) {
            rc = SW_ENOMEM;
            break;
        }
        rc |= sw_json_set_str(o, "name", c->name);
        rc |= sw_json_set_str(o, "status", sw_probe_status_name(c->status));
        rc |= sw_json_set_str(o, "evidence", c->evidence);
        rc |= sw_json_set_str(o, "reason", c->reason);
        rc |= sw_json_set_real(o, "ms", round(c->ms * 10) / 10);
        rc |= sw_json_set_new(o, "data", c->data ? json_incref(c->data) : json_object());
    }
    rc |= sw_json_set_new(j, "checks", arr);
    rc |= sw_json_set_int(j, "passed", r->passed);
    rc |= sw_json_set_int(j, "failed", r->failed);
    rc |= sw_json_set_int(j, "skipped", r->skipped);
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}

void sw_probe_report_print(FILE *f, const struct sw_probe_report *r)
{
    char win[32] = "?", slots[16] = "?";
    if (r->window)
        sw_fmt_count((uint64_t)r->window, win, sizeof(win));
    if (r->slots)
        snprintf(slots, sizeof(slots), "%d", r->slots);
    fputs("probe ", f);
    sw_fput_term(f, r->url, 0);
    if (r->via[0]) {
        fputs(" on its host, through ", f);
        sw_fput_term(f, r->via, 0);
    }
    fputs("  engine ", f);
    sw_fput_term(f, r->engine[0] ? r->engine : "?", 0);
    fputs(", model ", f);
    sw_fput_term(f, r->model[0] ? r->model : "?", 0);
    fprintf(f, ", window %s, slots %s, vision %s\n", win, slots,
            r->vision < 0 ? "?"
            : r->vision   ? "yes"
                          : "no");
    fprintf(f, "  %-12s %-6s %9s  %s\n", "check", "status", "ms", "evidence");
    for (size_t i = 0; i < r->n; i++) {
        const struct sw_probe_result *c = &r->v[i];
        fprintf(f, "  %-12s %-6s %9.0f  ", c->name, sw_probe_status_name(c->status), c->ms);
        sw_fput_term(f, c->evidence, 0);
        if (c->reason[0]) {
            fputs(" -- ", f);
            sw_fput_term(f, c->reason, 0);
        }
        fputc('\n', f);
    }
    fprintf(f, "%d passed, %d failed, %d skipped\n", r->passed, r->failed, r->skipped);
    if (r->gave_up[0]) {
        fputs("gave up on the endpoint: ", f);
        sw_fput_term(f, r->gave_up, 0);
        fputc('\n', f);
    }
}
