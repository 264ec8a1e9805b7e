/*
 * Classifying error bodies from OpenAI-compatible servers. Each engine has its own shape:
 *  - llama-server: {"error":{"code":400,"message":...,"type":"exceed_context_size_error",
 *    "n_prompt_tokens":N,"n_ctx":M}} (tools/server/server-common.cpp format_error_response; the
 *    two counts are added by server-context.cpp send_error for that type);
 *  - vLLM (current): {"error":{"message","type":"BadRequestError","param","code":400}}
 *    (vllm/entrypoints/openai/protocol.py ErrorResponse/ErrorInfo);
 *  - older vLLM and SGLang: the same fields flat, with "object":"error";
 *  - OpenAI itself: {"error":{"message","type","param","code":"context_length_exceeded"|null}};
 *  - FastAPI's own errors (unknown route, validation): {"detail": ...}.
 * The shape is told from the JSON alone (CamelCase *Error types are vLLM's, integer codes in the
 * nested form llama-server's); the kind from the type/code/message and the HTTP status.
 *
 * What it deliberately does not do: trust the numbers in a message beyond reading them (they are
 * evidence shown to people, the check decides).
 */
#include "openai_internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static void copy_str(char *dst, size_t n, json_t *v)
{
    if (json_is_string(v))
        snprintf(dst, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(dst, n, "%lld", (long long)json_integer_value(v));
    else
        dst[0] = '\0';
}

/* The first run of digits after `after` in s (within 40 bytes), or -1. */
static int64_t number_after(const char *s, const char *after)
{
    const char *p = strcasestr(s, after);
    if (!p)
        return -1;
    p += strlen(after);
    for (int k = 0; k < 40 && *p && !isdigit((unsigned char)*p); k++)
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    int64_t v = 0;
    for (int k = 0; k < 15 && isdigit((unsigned char)*p); k++, p++)
        v = v * 10 + (*p - '0');
    return v;
}

/* The run of digits that ends just before `before` in s (spaces between allowed), or -1. */
static int64_t number_before(const char *s, const char *before)
{
    const char *p = strcasestr(s, before);
    if (!p)
        return -1;
    while (p > s && p[-1] == ' ')
        p--;
    const char *end = p;
    while (p > s && isdigit((unsigned char)p[-1]) && end - p < 15)
        p--;
    if (p == end)
        return -1;
    int64_t v = 0;
    for (; p < end; p++)
        v = v * 10 + (*p - '0');
    return v;
}

/*
 * Read a window and a prompt length out of the wording vLLM and SGLang use, e.g.
 *   vLLM:   "This model's maximum context length is 4096 tokens. However, you requested 100 output
 *            tokens and your prompt contains at least 4097 input tokens, ..."
 *           (vllm/renderers/params.py), older "... However, you requested 5000 tokens (4000 in the
 *           messages, 1000 in the completion)", and the engine's "The decoder prompt (length 5000)
 *           is longer than the maximum model length of 4096."
 *   SGLang: "Requested token count exceeds the model's maximum context length of 4096 tokens. You
 *           requested a total of 5000 tokens: 4000 tokens from the input messages and ...", and
 *           "The input (5000 tokens) is longer than the model's context length (4096 tokens)."
 */
/* Where a figure is printed: the number after the words, or before them. */
struct mark {
    const char *words;
    bool before;
};

static const struct mark ctx_marks[] = {{"maximum context length is", false},
                                        {"maximum context length of", false},
                                        {"maximum model length of", false},
                                        {"context length (", false}};
static const struct mark prompt_marks[] = {
    {"your request has", false}, {"prompt contains", false},      {"decoder prompt (length", false},
    {"The input (", false},      {"tokens from the input", true}, {"in the messages", true}};

/* The first of the marks (in order) that m holds a number at; -1 when none. */
static int64_t first_number(const char *m, const struct mark *t, size_t n)
{
    int64_t v = -1;
    for (size_t i = 0; i < n && v < 0; i++)
        v = t[i].before ? number_before(m, t[i].words) : number_after(m, t[i].words);
    return v;
}

static void numbers_from_message(struct sw_openai_error *o)
{
    if (o->n_ctx < 0)
        o->n_ctx = first_number(o->message, ctx_marks, SW_ARRAY_LEN(ctx_marks));
    if (o->n_prompt_tokens < 0)
        o->n_prompt_tokens = first_number(o->message, prompt_marks, SW_ARRAY_LEN(prompt_marks));
}

static bool says_context(const char *s)
{
    static const char *const phrases[] = {
        "maximum context length", "maximum model length", "context length",     "context size",
        "context window",         "too many tokens",      "prompt is too long",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(phrases); i++)
        if (strcasestr(s, phrases[i]))
            return true;
    return false;
}

static enum sw_openai_err_kind kind_from_status(long st)
{
    if (st == 400 || st == 422)
        return SW_OAI_ERR_INVALID;
    if (st == 401 || st == 403)
        return SW_OAI_ERR_AUTH;
    if (st == 404)
        return SW_OAI_ERR_NOT_FOUND;
    if (st == 429)
        return SW_OAI_ERR_RATE_LIMIT;
    if (st == 501)
        return SW_OAI_ERR_NOT_SUPPORTED;
    if (st == 503)
        return SW_OAI_ERR_UNAVAILABLE;
    if (st >= 500)
        return SW_OAI_ERR_SERVER;
    return SW_OAI_ERR_UNKNOWN;
}

static enum sw_openai_err_kind kind_from_type(const char *t)
{
    static const struct {
        const char *type;
        enum sw_openai_err_kind kind;
    } map[] = {
        /* llama-server's error_type names */
        {"exceed_context_size_error", SW_OAI_ERR_CONTEXT},
        {"invalid_request_error", SW_OAI_ERR_INVALID},
        {"authentication_error", SW_OAI_ERR_AUTH},
        {"permission_error", SW_OAI_ERR_AUTH},
        {"not_found_error", SW_OAI_ERR_NOT_FOUND},
        {"not_supported_error", SW_OAI_ERR_NOT_SUPPORTED},
        {"unavailable_error", SW_OAI_ERR_UNAVAILABLE},
        {"server_error", SW_OAI_ERR_SERVER},
        /* vLLM's exception class names */
        {"BadRequestError", SW_OAI_ERR_INVALID},
        {"UnprocessableEntityError", SW_OAI_ERR_INVALID},
        {"NotFoundError", SW_OAI_ERR_NOT_FOUND},
        {"InternalServerError", SW_OAI_ERR_SERVER},
        {"NotImplementedError", SW_OAI_ERR_NOT_SUPPORTED},
        /* OpenAI's */
        {"rate_limit_exceeded", SW_OAI_ERR_RATE_LIMIT},
        {"insufficient_quota", SW_OAI_ERR_RATE_LIMIT},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(map); i++)
        if (!strcmp(t, map[i].type))
            return map[i].kind;
    return SW_OAI_ERR_UNKNOWN;
}

static bool camel_error(const char *t)
{
    size_t n = strlen(t);
    return n > 5 && isupper((unsigned char)t[0]) && !strcmp(t + n - 5, "Error");
}

static void detail_message(struct sw_openai_error *o, json_t *d)
{
    if (json_is_string(d)) {
        snprintf(o->message, sizeof(o->message), "%s", json_string_value(d));
        return;
    }
    /* FastAPI validation: [{"loc":[...],"msg":"...","type":"..."}] */
    size_t used = 0;
    size_t i;
    json_t *it;
    json_array_foreach(d, i, it)
    {
        const char *msg = json_string_value(json_object_get(it, "msg"));
        if (!msg || used >= sizeof(o->message) - 1)
            continue;
        int w =
            snprintf(o->message + used, sizeof(o->message) - used, "%s%s", used ? "; " : "", msg);
        if (w > 0)
            used += (size_t)w;
        if (!o->type[0])
            copy_str(o->type, sizeof(o->type), json_object_get(it, "type"));
    }
    if (used >= sizeof(o->message))
        o->message[sizeof(o->message) - 1] = '\0';
}

void sw__openai_error_from_json(json_t *root, long http_status, struct sw_openai_error *o)
{
    memset(o, 0, sizeof(*o));
    o->present = true;
    o->http_status = http_status;
    o->n_prompt_tokens = -1;
    o->n_ctx = -1;
    json_t *err = json_object_get(root, "error");
    json_t *src = NULL;
    if (json_is_object(err)) {
        src = err;
        json_t *code = json_object_get(err, "code");
        const char *type = json_string_value(json_object_get(err, "type"));
        if (type && camel_error(type))
            o->shape = SW_OAI_SHAPE_VLLM;
        else if (json_is_integer(code))
            o->shape = SW_OAI_SHAPE_LLAMACPP;
        else
            o->shape = SW_OAI_SHAPE_OPENAI;
    } else if (json_is_string(err)) {
        /* {"error": "text"} (some proxies) */
        o->shape = SW_OAI_SHAPE_OPENAI;
        snprintf(o->message, sizeof(o->message), "%s", json_string_value(err));
    } else if (json_object_get(root, "message") &&
               (json_object_get(root, "object") || json_object_get(root, "type"))) {
        src = root;
        o->shape = SW_OAI_SHAPE_FLAT;
    } else if (json_object_get(root, "detail")) {
        o->shape = SW_OAI_SHAPE_FASTAPI;
        detail_message(o, json_object_get(root, "detail"));
    } else {
        o->shape = SW_OAI_SHAPE_TEXT;
        char *s = sw_json_dumps(root, JSON_COMPACT);
        if (s) {
            snprintf(o->message, sizeof(o->message), "%s", s);
            sw_free(s);
        }
    }
    if (src) {
        copy_str(o->message, sizeof(o->message), json_object_get(src, "message"));
        copy_str(o->type, sizeof(o->type), json_object_get(src, "type"));
        copy_str(o->code, sizeof(o->code), json_object_get(src, "code"));
        copy_str(o->param, sizeof(o->param), json_object_get(src, "param"));
        json_t *np = json_object_get(src, "n_prompt_tokens");
        json_t *nc = json_object_get(src, "n_ctx");
        if (json_is_integer(np))
            o->n_prompt_tokens = json_integer_value(np);
        if (json_is_integer(nc))
            o->n_ctx = json_integer_value(nc);
        /* an integer code in a 200 stream stands for the status the server meant */
        if (!o->http_status && json_is_integer(json_object_get(src, "code")))
            o->http_status = (long)json_integer_value(json_object_get(src, "code"));
    }
    enum sw_openai_err_kind k = o->type[0] ? kind_from_type(o->type) : SW_OAI_ERR_UNKNOWN;
    if (!strcmp(o->code, "context_length_exceeded"))
        k = SW_OAI_ERR_CONTEXT;
    if (k == SW_OAI_ERR_UNKNOWN)
        k = kind_from_status(o->http_status);
    if ((k == SW_OAI_ERR_INVALID || k == SW_OAI_ERR_UNKNOWN) && says_context(o->message))
        k = SW_OAI_ERR_CONTEXT;
    o->kind = k;
    if (k == SW_OAI_ERR_CONTEXT)
        numbers_from_message(o);
}

void sw_openai_parse_error(const char *body, size_t len, long http_status,
                           struct sw_openai_error *out)
{
    json_error_t je;
    json_t *j = body && len ? json_loadb(body, len, 0, &je) : NULL;
    if (j && json_is_object(j)) {
        sw__openai_error_from_json(j, http_status, out);
        json_decref(j);
        return;
    }
    json_decref(j);
    memset(out, 0, sizeof(*out));
    out->present = true;
    out->http_status = http_status;
    out->shape = SW_OAI_SHAPE_TEXT;
    out->n_prompt_tokens = -1;
    out->n_ctx = -1;
    if (body && sw_sniff_kind(body, len) == SW_SNIFF_HTML)
        /* a reply, not a file: sw_sniff's wording is for a download */
        snprintf(out->message, sizeof(out->message),
                 "an HTML page, not the engine's JSON (a proxy's or the server's own error page)");
    else
        sw_sniff(body ? body : "", body ? len : 0, out->message, sizeof(out->message));
    out->kind = kind_from_status(http_status);
    if (out->kind == SW_OAI_ERR_INVALID && body && len) {
        /* a plain-text 400 (a proxy, an old engine) may still say what happened */
        char text[512];
        snprintf(text, sizeof(text), "%.*s", (int)SW_MIN(len, sizeof(text) - 1), body);
        if (says_context(text))
            out->kind = SW_OAI_ERR_CONTEXT;
    }
}

const char *sw_openai_err_kind_name(enum sw_openai_err_kind k)
{
    static const char *const names[] = {"unknown",     "context",       "invalid",
                                        "auth",        "not_found",     "rate_limit",
                                        "unavailable", "not_supported", "server"};
    return (unsigned)k < SW_ARRAY_LEN(names) ? names[k] : "unknown";
}

const char *sw_openai_err_shape_name(enum sw_openai_err_shape s)
{
    static const char *const names[] = {"none", "openai",  "llamacpp", "vllm",
                                        "flat", "fastapi", "text"};
    return (unsigned)s < SW_ARRAY_LEN(names) ? names[s] : "none";
}
