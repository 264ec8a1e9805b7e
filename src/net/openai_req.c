/*
 * Building OpenAI chat-completions requests: messages with text and image_url content parts,
 * tools, and the knobs the battery and the load generator set. Values the caller leaves unset
 * stay out of the JSON so the engine's own defaults apply.
 *
 * What it deliberately does not do: validate the tools' JSON schemas or the grammar (the engine
 * does, and its verdict is the evidence), or send anything.
 */
#include <slipway/openai.h>

#include <math.h>
#include <string.h>

void sw_openai_chat_init(struct sw_openai_chat *c)
{
    memset(c, 0, sizeof(*c));
    c->max_tokens = -1;
    c->temperature = NAN;
    c->top_p = NAN;
}

json_t *sw_openai_chat_json(const struct sw_openai_chat *c, struct sw_err *e)
{
    json_t *j = json_object();
    int rc = 0;
    if (!j)
        goto oom;
    if (!c->messages || !json_is_array(c->messages)) {
        sw_err_set(e, SW_EINVAL, "a chat request needs an array of messages");
        json_decref(j);
        return NULL;
    }
    if (c->model)
        rc |= sw_json_set_str(j, "model", c->model);
    rc |= json_object_set(j, "messages", c->messages) ? SW_ENOMEM : 0;
    if (c->tools)
        rc |= json_object_set(j, "tools", c->tools) ? SW_ENOMEM : 0;
    if (c->tool_choice)
        rc |= json_object_set(j, "tool_choice", c->tool_choice) ? SW_ENOMEM : 0;
    if (c->stream) {
        rc |= sw_json_set_bool(j, "stream", true);
        if (c->include_usage) {
            json_t *so = json_object();
            rc |= sw_json_set_bool(so, "include_usage", true);
            rc |= sw_json_set_new(j, "stream_options", so);
        }
    }
    if (c->max_tokens >= 0)
        rc |= sw_json_set_int(j, "max_tokens", c->max_tokens);
    if (!isnan(c->temperature))
        rc |= sw_json_set_real(j, "temperature", c->temperature);
    if (!isnan(c->top_p))
        rc |= sw_json_set_real(j, "top_p", c->top_p);
    if (c->has_seed)
        rc |= sw_json_set_int(j, "seed", c->seed);
    if (c->response_format)
        rc |= json_object_set(j, "response_format", c->response_format) ? SW_ENOMEM : 0;
    if (c->grammar)
        rc |= sw_json_set_str(j, "grammar", c->grammar);
    if (c->extra) {
        if (!json_is_object(c->extra)) {
            sw_err_set(e, SW_EINVAL, "extra request fields must be a JSON object");
            json_decref(j);
            return NULL;
        }
        rc |= json_object_update(j, c->extra) ? SW_ENOMEM : 0;
    }
    if (rc)
        goto oom;
    return j;
oom:
    json_decref(j);
    sw_err_set(e, SW_ENOMEM, "out of memory building a chat request");
    return NULL;
}

char *sw_openai_chat_text(const struct sw_openai_chat *c, size_t *len, struct sw_err *e)
{
    json_t *j = sw_openai_chat_json(c, e);
    if (!j)
        return NULL;
    char *s = sw_json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!s) {
        sw_err_set(e, SW_ENOMEM, "out of memory writing a chat request");
        return NULL;
    }
    if (len)
        *len = strlen(s);
    return s; /* jansson allocates through sw_malloc (sw_core_init) */
}

json_t *sw_openai_msg(const char *role, const char *text)
{
    json_t *m = json_object();
    if (!m || sw_json_set_str(m, "role", role) || sw_json_set_str(m, "content", text)) {
        json_decref(m);
        return NULL;
    }
    return m;
}

json_t *sw_openai_msg_parts(const char *role)
{
    json_t *m = json_object();
    if (!m || sw_json_set_str(m, "role", role) || sw_json_set_new(m, "content", json_array())) {
        json_decref(m);
        return NULL;
    }
    return m;
}

static int append_part(json_t *msg, json_t *part)
{
    json_t *arr = json_object_get(msg, "content");
    if (!part)
        return SW_ENOMEM;
    if (!json_is_array(arr)) {
        json_decref(part);
        return SW_EINVAL;
    }
    return json_array_append_new(arr, part) ? SW_ENOMEM : 0;
}

int sw_openai_part_text(json_t *msg, const char *text)
{
    json_t *p = json_object();
    if (!p || sw_json_set_str(p, "type", "text") || sw_json_set_str(p, "text", text)) {
        json_decref(p);
        return SW_ENOMEM;
    }
    return append_part(msg, p);
}

int sw_openai_part_image_url(json_t *msg, const char *url, const char *detail)
{
    json_t *p = json_object();
    json_t *iu = json_object();
    int rc = 0;
    if (!p || !iu) {
        json_decref(p);
        json_decref(iu);
        return SW_ENOMEM;
    }
    rc |= sw_json_set_str(iu, "url", url);
    if (detail)
        rc |= sw_json_set_str(iu, "detail", detail);
    rc |= sw_json_set_str(p, "type", "image_url");
    rc |= sw_json_set_new(p, "image_url", iu);
    if (rc) {
        json_decref(p);
        return SW_ENOMEM;
    }
    return append_part(msg, p);
}

char *sw_openai_data_url(const char *mime, const void *bytes, size_t n)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (!mime || n > 64u * 1024u * 1024u)
        return NULL;
    size_t head = strlen(mime) + 13; /* "data:" + mime + ";base64," */
    size_t body = (n + 2) / 3 * 4;
    char *out = sw_malloc(head + body + 1);
    if (!out)
        return NULL;
    int h = snprintf(out, head + 1, "data:%s;base64,", mime);
    char *o = out + h;
    const unsigned char *p = bytes;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = tbl[v >> 6 & 63];
        *o++ = tbl[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = i + 1 < n ? tbl[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

json_t *sw_openai_tool(const char *name, const char *description, json_t *parameters)
{
    json_t *t = json_object();
    json_t *f = json_object();
    int rc = 0;
    if (!t || !f) {
        json_decref(t);
        json_decref(f);
        json_decref(parameters);
        return NULL;
    }
    rc |= sw_json_set_str(f, "name", name);
    if (description)
        rc |= sw_json_set_str(f, "description", description);
    if (parameters)
        rc |= sw_json_set_new(f, "parameters", parameters);
    rc |= sw_json_set_str(t, "type", "function");
    rc |= sw_json_set_new(t, "function", f);
    if (rc) {
        json_decref(t);
        return NULL;
    }
    return t;
}
