/*
 * The battery's behaviour checks: reasoning (which field carries it, or the inline form),
 * tool_calls (a declared tool with a required argument comes back as a parsable call), vision
 * (an image_url part with a generated solid-colour PNG; and the legacy top-level "images" field,
 * which some servers silently ignore: the model then invents a colour).
 *
 * What it deliberately does not do: coax a model that cannot (no tool-aware template, no
 * projector) into passing. For llama.cpp the reasoning check forces a <think> block with a GBNF
 * grammar, because what is being checked is the server's split, not the model's wisdom.
 */
#include "probe_internal.h"

#include <string.h>
#include <strings.h>

/* ---- reasoning ---- */

struct think_watch {
    struct sw_openai_result *res;
    uint64_t limit_chunks;
};

/* Stop as soon as the form is known: reasoning in a field, or a think tag in content. */
static int watch_think(void *ud, const struct sw_sse_event *ev)
{
    struct think_watch *w = ud;
    const struct sw_openai_result *r = w->res;
    if (r->reasoning.len > 16 || r->chunks > w->limit_chunks)
        return 1;
    if (r->content.len && memmem(r->content.data, r->content.len, "</think>", 8))
        return 1;
    return 0;
}

static void verdict_reasoning(struct sw_probe_result *r, const struct sw_openai_result *res,
                              const char *how)
{
    char q[128];
    /* finish classifies inline <think> when no field was used */
    const char *field = sw_openai_reasoning_field_name(res->reasoning_field);
    sw_json_set_str(r->data, "field", field);
    sw_json_set_str(r->data, "inline", sw_openai_think_name(res->think));
    if (res->reasoning_field != SW_OAI_REASONING_NONE && res->reasoning.len) {
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "%s: reasoning arrived in \"%s\" %s, apart from the content", how, field,
                      sw__probe_quote(res->reasoning.data, res->reasoning.len, 40, q, sizeof(q)));
    } else if (res->think == SW_OAI_THINK_DANGLING) {
        sw__probe_set(r, SW_PROBE_FAIL,
                      "reasoning lands in content with a dangling </think> and no reasoning field "
                      "(the server has no reasoning parser for this template)",
                      "%s: content holds %s then </think>", how,
                      sw__probe_quote(res->reasoning.data, res->reasoning.len, 40, q, sizeof(q)));
    } else if (res->think == SW_OAI_THINK_INLINE || res->think == SW_OAI_THINK_UNCLOSED) {
        sw__probe_set(r, SW_PROBE_FAIL,
                      "reasoning stays inline in content as <think>...</think> (the server does "
                      "not split it: llama-server --reasoning-format none, or no reasoning parser)",
                      "%s: content starts with <think> %s", how,
                      sw__probe_quote(res->reasoning.data, res->reasoning.len, 40, q, sizeof(q)));
    }
}

void sw__probe_reasoning(struct sw__probe *p, struct sw_probe_result *r)
{
    char d[512], q[128];
    struct sw_openai_result res;
    struct sw_net_resp resp;
    json_t *body;
    struct think_watch w = {&res, 0};
    if (p->eng == SW__ENG_LLAMACPP && p->tmpl_think == 0) {
        sw__probe_set(r, SW_PROBE_SKIP,
                      "the chat template has no reasoning block: not a reasoning model",
                      "/props chat_template has no <think>, [THINK] or channel markers");
        return;
    }
    if (p->eng == SW__ENG_LLAMACPP) {
        /* the server's split, whatever the model: force a short <think> block */
        body = sw__probe_chat(p, "Answer in one word: is the sky blue?", 48, true);
        sw_json_set_str(body, "grammar",
                        "root ::= \"<think>\" [a-z]{2,8} (\" \" [a-z]{2,8}){1,3} \"</think>\" "
                        "\" \" [a-z]{2,8}");
        sw_openai_result_init(&res, 0, 0);
        w.limit_chunks = 64;
        int rc = sw__probe_post(p, body, &res, &resp, watch_think, &w, 0);
        json_decref(body);
        sw_openai_finish(&res, NULL);
        if ((rc && resp.fail != SW_NET_ABORTED) || resp.status != 200) {
            sw__probe_set(r, SW_PROBE_FAIL, "no reply", "a stream with a <think> grammar: %s",
                          sw__probe_describe(&resp, d, sizeof(d)));
        } else {
            verdict_reasoning(r, &res, "a <think> block forced by a GBNF grammar");
            if (!r->evidence[0])
                sw__probe_set(
                    r, SW_PROBE_FAIL, "the forced <think> block is nowhere",
                    "a <think> grammar gave content %s and no reasoning",
                    sw__probe_quote(sw_buf_cstr(&res.content), res.content.len, 60, q, sizeof(q)));
        }
        sw_openai_result_free(&res);
        sw_net_resp_free(&resp);
        return;
    }
    /* other engines: ask a model that may think to do so, and look at the first tokens */
    body = sw__probe_chat(p, "Think it through briefly, then answer: what is 17 * 3?", 256, true);
    json_t *kw = json_pack("{s:b}", "enable_thinking", 1);
    sw_json_set_new(body, "chat_template_kwargs", kw);
    sw_openai_result_init(&res, 0, 0);
    w.limit_chunks = 200;
    int rc = sw__probe_post(p, body, &res, &resp, watch_think, &w, 0);
    json_decref(body);
    sw_openai_finish(&res, NULL);
    if ((rc && resp.fail != SW_NET_ABORTED) || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL, "no reply", "a reasoning question: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
    } else {
        verdict_reasoning(r, &res, "a question that invites thinking");
        if (!r->evidence[0])
            sw__probe_set(
                r, SW_PROBE_SKIP, "the model produced no reasoning",
                "%llu chunks, no reasoning field and no <think> in content %s",
                (unsigned long long)res.chunks,
                sw__probe_quote(sw_buf_cstr(&res.content), res.content.len, 60, q, sizeof(q)));
    }
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}

/* ---- tool calls ---- */

void sw__probe_tool_calls(struct sw__probe *p, struct sw_probe_result *r)
{
    char d[512], q[160];
    if (p->eng == SW__ENG_LLAMACPP && p->tmpl_tools == 0) {
        sw__probe_set(r, SW_PROBE_SKIP,
                      "the chat template cannot express tool calls (llama-server needs --jinja and "
                      "a tool-aware template)",
                      "/props chat_template_caps.supports_tools is false");
        return;
    }
    json_t *body =
        sw__probe_chat(p, "What is the weather in Paris right now? Use the tool.", 128, true);
    json_t *params =
        json_pack("{s:s,s:{s:{s:s,s:s}},s:[s]}", "type", "object", "properties", "city", "type",
                  "string", "description", "the city name", "required", "city");
    json_t *tools = json_array();
    json_array_append_new(tools,
                          sw_openai_tool("get_weather", "Current weather for a city", params));
    sw_json_set_new(body, "tools", tools);
    sw_json_set_str(body, "tool_choice", "required");
    struct sw_openai_result res;
    struct sw_net_resp resp;
    sw_openai_result_init(&res, 0, 0);
    int rc = sw__probe_post(p, body, &res, &resp, NULL, NULL, 0);
    json_decref(body);
    sw_json_set_int(r->data, "calls", (int64_t)res.ntool_calls);
    if (rc && res.err.code) {
        char m[1200];
        sw__probe_set(r, SW_PROBE_FAIL, "the stream is not usable", "%s",
                      sw_err_format(&res.err, m, sizeof(m)));
    } else if (rc || resp.status != 200) {
        sw__probe_set(r, SW_PROBE_FAIL, "no tool call", "tool_choice required: %s",
                      sw__probe_describe(&resp, d, sizeof(d)));
    } else if (!res.ntool_calls) {
        sw__probe_set(
            r, SW_PROBE_FAIL, "no tool call came back although tool_choice was required",
            "%lld tokens (finish %s), content %s",
            (long long)(res.usage.present ? res.usage.completion_tokens : -1),
            res.finish_reason[0] ? res.finish_reason : "?",
            sw__probe_quote(sw_buf_cstr(&res.content), res.content.len, 60, q, sizeof(q)));
    } else {
        const struct sw_openai_tool_call *c = &res.tool_calls[0];
        json_t *args = c->args_valid ? json_loadb(c->args.data, c->args.len, 0, NULL) : NULL;
        json_t *city = json_object_get(args, "city");
        sw_json_set_str(r->data, "name", c->name);
        sw_json_set_str(r->data, "arguments", sw_buf_cstr(&c->args));
        sw__probe_quote(sw_buf_cstr(&c->args), c->args.len, 80, q, sizeof(q));
        if (!c->name || strcmp(c->name, "get_weather"))
            sw__probe_set(r, SW_PROBE_FAIL, "the call names a tool that was not declared",
                          "a call to %s(%s)", c->name ? c->name : "(no name)", q);
        else if (!c->args_valid)
            sw__probe_set(r, SW_PROBE_FAIL, "the arguments are not a JSON object",
                          "get_weather(%s): %s", q, c->args_error);
        else if (!json_is_string(city))
            sw__probe_set(r, SW_PROBE_FAIL, "the required argument is missing",
                          "get_weather(%s) has no string \"city\"", q);
        else
            sw__probe_set(
                r, SW_PROBE_PASS, NULL, "get_weather(%s) assembled from %llu chunks%s, finish %s",
                q, (unsigned long long)res.chunks, res.ntool_calls > 1 ? " (and more calls)" : "",
                res.finish_reason[0] ? res.finish_reason : "?");
        json_decref(args);
    }
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
}

/* ---- vision ---- */

static bool names_colour(const struct sw_openai_result *res, const char *colour)
{
    const char *t = res->content.len ? res->content.data : sw_buf_cstr(&res->reasoning);
    return strcasestr(t, colour) != NULL;
}

void sw__probe_vision(struct sw__probe *p, struct sw_probe_result *r)
{
    if (p->vision == 0) {
        sw__probe_set(r, SW_PROBE_SKIP,
                      p->t->vision == 0 ? "the fleet declares no vision for this endpoint"
                                        : "the endpoint declares no vision input",
                      "%s",
                      p->t->vision == 0 ? "vision: declared absent"
                                        : "/props modalities.vision is false (no --mmproj)");
        return;
    }
    static const struct {
        const char *name;
        unsigned char rgb[3];
    } colours[] = {{"red", {220, 20, 20}}, {"green", {20, 180, 40}}, {"blue", {20, 40, 220}}};
    size_t pick = (size_t)(sw_now_ns() / 1000) % SW_ARRAY_LEN(colours);
    const char *colour = colours[pick].name;
    size_t plen = 0;
    unsigned char *png = sw_probe_png_solid(64, 64, colours[pick].rgb[0], colours[pick].rgb[1],
                                            colours[pick].rgb[2], &plen);
    char *url = png ? sw_openai_data_url("image/png", png, plen) : NULL;
    char d[512], q[128], q2[128];
    if (!url) {
        sw_free(png);
        sw__probe_set(r, SW_PROBE_FAIL, "out of memory", "could not make the test image");
        return;
    }
    sw_json_set_str(r->data, "colour", colour);
    json_t *body = sw__probe_chat(p, "", 16, false);
    json_t *msg = sw_openai_msg_parts("user");
    sw_openai_part_text(msg, "What colour is this image? Answer with one word.");
    sw_openai_part_image_url(msg, url, NULL);
    json_t *msgs = json_array();
    json_array_append_new(msgs, msg);
    sw_json_set_new(body, "messages", msgs);
    struct sw_openai_result res;
    struct sw_net_resp resp;
    sw_openai_result_init(&res, 0, 0);
    int rc = sw__probe_post(p, body, &res, &resp, NULL, NULL, 0);
    json_decref(body);
    if (rc || resp.status != 200 || res.err.code) {
        struct sw_openai_error oe;
        sw__probe_error_of(&resp, &oe);
        bool refused = !rc && resp.status >= 400 && resp.status < 500;
        sw__probe_set(r, refused && p->vision < 0 ? SW_PROBE_SKIP : SW_PROBE_FAIL,
                      refused && p->vision < 0 ? "the endpoint refuses images" : "no answer",
                      "an image_url part: %s", sw__probe_describe(&resp, d, sizeof(d)));
        goto out;
    }
    bool ok = names_colour(&res, colour);
    sw__probe_quote(sw_buf_cstr(&res.content), res.content.len, 40, q, sizeof(q));
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
    /* the legacy field: same picture, no content part, a top-level "images" array */
    body = sw__probe_chat(p, "What colour is the attached image? Answer with one word.", 16, false);
    json_t *imgs = json_array();
    json_array_append_new(imgs, json_string(strchr(url, ',') + 1));
    sw_json_set_new(body, "images", imgs);
    sw_openai_result_init(&res, 0, 0);
    rc = sw__probe_post(p, body, &res, &resp, NULL, NULL, 0);
    json_decref(body);
    bool legacy = !rc && resp.status == 200 && names_colour(&res, colour);
    sw__probe_quote(sw_buf_cstr(&res.content), res.content.len, 40, q2, sizeof(q2));
    sw_json_set_bool(r->data, "image_url_named", ok);
    sw_json_set_bool(r->data, "legacy_images_ignored", !legacy);
    if (ok)
        sw__probe_set(r, SW_PROBE_PASS, NULL,
                      "a %s 64x64 PNG as image_url: answer %s; the legacy top-level \"images\" "
                      "field %s (answer %s)",
                      colour, q, legacy ? "works too" : "is silently ignored", q2);
    else
        sw__probe_set(r, SW_PROBE_FAIL, "the answer does not name the colour of the image",
                      "a %s 64x64 PNG as image_url: answer %s; legacy \"images\": answer %s",
                      colour, q, q2);
out:
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
    sw_free(url);
    sw_free(png);
}
