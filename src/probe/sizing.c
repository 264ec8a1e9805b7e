/*
 * probe/sizing: a prompt of an exact number of tokens, as the endpoint counts them. A filler's
 * density differs fourfold between vocabularies (the llama SPM test vocabulary splits every
 * digit: 1,152 tokens came out of a filler meant for 512), so a check that must fill a window
 * measures instead of guessing:
 *   llama-server: POST /apply-template with the request's messages (the text its chat template
 *     makes, generation prompt included), then POST /tokenize of that text with add_special and
 *     parse_special on: the count its chat endpoint will see, without running the model;
 *   vLLM: POST /tokenize with the messages (its ChatCompletion tokenize request): `count`;
 *   any other engine, or one whose endpoints refuse: a one-token chat request per round, read
 *     from usage.prompt_tokens (a prefill each), said in the note.
 * Between counts the filler's length in bytes moves by the density the last two counts showed,
 * so it converges in a few round trips; at most SIZE_ROUNDS counts (SIZE_ROUNDS_USAGE when each
 * is a prefill).
 *
 * What it does not do: tokenize on this side (the engine's tokenizer is the only exact one), or
 * cut a token sequence and detokenize it (a detokenized prefix does not always tokenize back to
 * the same count; whole filler units do).
 */
#include "probe_internal.h"

#include <stdlib.h>
#include <string.h>

#define SIZE_ROUNDS       8
#define SIZE_ROUNDS_USAGE 4

int64_t sw__probe_size_margin(int64_t target)
{
    /* a filler unit ("river 1234 ") is up to ~7 tokens on a vocabulary that splits digits: half
     * of it, or 1 % of a long prompt */
    return SW_MAX((int64_t)8, target / 100);
}

void sw__probe_sized_free(struct sw__probe_sized *s)
{
    if (!s)
        return;
    sw_free(s->prompt);
    memset(s, 0, sizeof(*s));
}

static json_t *user_messages(const char *prompt)
{
    json_t *msgs = json_array();
    if (msgs && json_array_append_new(msgs, sw_openai_msg("user", prompt))) {
        json_decref(msgs);
        return NULL;
    }
    return msgs;
}

/* POST body to path, buffered; 0 with resp->status 200 and a JSON object in *out (new ref). */
static int post_json(struct sw__probe *p, const char *path, json_t *body, json_t **out, char *why,
                     size_t whyn)
{
    struct sw_net_req q;
    struct sw_net_resp resp;
    char d[400];
    *out = NULL;
    char *text = body ? sw_json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        snprintf(why, whyn, "out of memory");
        return SW_ENOMEM;
    }
    sw__probe_req(p, &q, 0);
    q.url = sw__probe_url(p, path);
    q.body = text;
    q.body_len = strlen(text);
    int rc = sw_net_request(&p->loop, &q, &resp, NULL);
    sw_free(text);
    sw__probe_scrub_resp(p, &resp);
    if (rc || resp.status != 200) {
        snprintf(why, whyn, "POST %s: %s", path, sw__probe_describe(&resp, d, sizeof(d)));
        sw_net_resp_free(&resp);
        return rc ? rc : SW_EHTTP;
    }
    *out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
    sw_net_resp_free(&resp);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        snprintf(why, whyn, "POST %s: the reply is not a JSON object", path);
        return SW_EPARSE;
    }
    return 0;
}

/* llama-server: the chat template's text, then its tokens. */
static int count_llamacpp(struct sw__probe *p, const char *prompt, int64_t *n, char *why,
                          size_t whyn)
{
    json_t *reply = NULL, *b = json_object();
    if (b)
        sw_json_set_new(b, "messages", user_messages(prompt));
    int rc = post_json(p, "/apply-template", b, &reply, why, whyn);
    if (rc)
        return rc;
    const char *templated = json_string_value(json_object_get(reply, "prompt"));
    if (!templated) {
        json_decref(reply);
        snprintf(why, whyn, "POST /apply-template: no \"prompt\" in the reply");
        return SW_EPARSE;
    }
    b = json_object();
    if (b) {
        sw_json_set_str(b, "content", templated);
        sw_json_set_bool(b, "add_special", true);
        sw_json_set_bool(b, "parse_special", true);
    }
    json_decref(reply);
    rc = post_json(p, "/tokenize", b, &reply, why, whyn);
    if (rc)
        return rc;
    const json_t *toks = json_object_get(reply, "tokens");
    if (!json_is_array(toks)) {
        json_decref(reply);
        snprintf(why, whyn, "POST /tokenize: no \"tokens\" array in the reply");
        return SW_EPARSE;
    }
    *n = (int64_t)json_array_size(toks);
    json_decref(reply);
    return 0;
}

/* vLLM: /tokenize takes the chat messages and applies the template itself. */
static int count_vllm(struct sw__probe *p, const char *prompt, int64_t *n, char *why, size_t whyn)
{
    json_t *reply = NULL, *b = json_object();
    if (b) {
        if (p->model[0])
            sw_json_set_str(b, "model", p->model);
        sw_json_set_new(b, "messages", user_messages(prompt));
        sw_json_set_bool(b, "add_generation_prompt", true);
    }
    int rc = post_json(p, "/tokenize", b, &reply, why, whyn);
    if (rc)
        return rc;
    const json_t *c = json_object_get(reply, "count");
    if (!json_is_integer(c)) {
        json_decref(reply);
        snprintf(why, whyn, "POST /tokenize: no integer \"count\" in the reply");
        return SW_EPARSE;
    }
    *n = (int64_t)json_integer_value(c);
    json_decref(reply);
    return 0;
}

int sw__probe_usage_tokens(struct sw__probe *p, const char *prompt, int64_t *n, char *why,
                           size_t whyn)
{
    json_t *b = sw__probe_chat(p, prompt, 1, false);
    if (b && p->eng == SW__ENG_LLAMACPP)
        sw_json_set_bool(b, "cache_prompt", false);
    struct sw_openai_result res;
    struct sw_net_resp resp;
    char d[512];
    sw_openai_result_init(&res, 0, 0);
    int rc = sw__probe_post(p, b, &res, &resp, NULL, NULL, 0);
    json_decref(b);
    *n = res.usage.present ? res.usage.prompt_tokens : 0;
    if (rc || resp.status != 200 || *n <= 0) {
        snprintf(why, whyn, "a one-token request: %s%s", sw__probe_describe(&resp, d, sizeof(d)),
                 !rc && resp.status == 200 ? " without usage.prompt_tokens" : "");
        rc = rc ? rc : SW_EHTTP;
    }
    sw_openai_result_free(&res);
    sw_net_resp_free(&resp);
    return rc;
}

/* The engine's count of one user message holding prompt. */
static int count(struct sw__probe *p, struct sw__probe_sized *s, const char *prompt, int64_t *n,
                 char *why, size_t whyn)
{
    s->rounds++;
    if (s->tokenizer == SW__SIZE_LLAMACPP)
        return count_llamacpp(p, prompt, n, why, whyn);
    if (s->tokenizer == SW__SIZE_VLLM)
        return count_vllm(p, prompt, n, why, whyn);
    return sw__probe_usage_tokens(p, prompt, n, why, whyn);
}

int sw__probe_size_prompt(struct sw__probe *p, int64_t target, unsigned nonce, const char *tail,
                          struct sw__probe_sized *s)
{
    char why[600] = "";
    memset(s, 0, sizeof(*s));
    s->target = target;
    s->margin = sw__probe_size_margin(target);
    s->tokenizer = p->eng == SW__ENG_LLAMACPP ? SW__SIZE_LLAMACPP
                   : p->eng == SW__ENG_VLLM   ? SW__SIZE_VLLM
                                              : SW__SIZE_USAGE;
    if (s->tokenizer == SW__SIZE_USAGE)
        snprintf(s->note, sizeof(s->note),
                 "no tokenizer endpoint known for engine %s: sized by the usage of one-token "
                 "requests (a prefill each)",
                 p->eng == SW__ENG_SGLANG ? "sglang" : "(unknown)");
    double bpt = p->bytes_per_token > 0 ? p->bytes_per_token : 4.0;
    size_t want = (size_t)((double)target * bpt), tl = tail ? strlen(tail) : 0;
    size_t prev_len = 0;
    int64_t prev_n = 0, best_n = 0;
    char *best = NULL;
    size_t best_len = 0;
    int rc = 0;
    for (int round = 0;; round++) {
        int max_rounds = s->tokenizer == SW__SIZE_USAGE ? SIZE_ROUNDS_USAGE : SIZE_ROUNDS;
        size_t len = 0;
        char *prompt = sw__probe_filler_bytes(p, want > tl ? want - tl : 0, nonce, tail, &len);
        if (!prompt) {
            rc = SW_ENOMEM;
            snprintf(why, sizeof(why), "out of memory");
            break;
        }
        int64_t n = 0;
        rc = count(p, s, prompt, &n, why, sizeof(why));
        if (rc && s->tokenizer != SW__SIZE_USAGE && round == 0) {
            /* the engine's tokenizer endpoints refused: fall back, and say so */
            snprintf(s->note, sizeof(s->note),
                     "the tokenizer endpoint failed (%.300s): sized by the usage of one-token "
                     "requests (a prefill each)",
                     why);
            s->tokenizer = SW__SIZE_USAGE;
            rc = count(p, s, prompt, &n, why, sizeof(why));
        }
        if (rc) {
            sw_free(prompt);
            break;
        }
        sw__probe_learn(p, len, n);
        int64_t off = n - target;
        /* the closest so far, preferring one that is not longer than the target */
        bool better = !best || (llabs(off) < llabs(best_n - target)) ||
                      (llabs(off) == llabs(best_n - target) && off < 0);
        if (better) {
            sw_free(best);
            best = prompt;
            best_len = len;
            best_n = n;
        } else {
            sw_free(prompt);
        }
        if (llabs(off) <= s->margin / 2 || s->rounds >= max_rounds)
            break;
        /* the next length from the density between the last two counts (the template's own
         * tokens cancel out), else from this one */
        double d = (double)len / (double)SW_MAX(n, (int64_t)1);
        if (round > 0 && n != prev_n && len != prev_len)
            d = ((double)len - (double)prev_len) / (double)(n - prev_n);
        if (d <= 0.05 || d > 64)
            d = (double)len / (double)SW_MAX(n, (int64_t)1);
        double next = (double)len - (double)off * d;
        prev_len = len;
        prev_n = n;
        size_t nw = next <= (double)tl + 16 ? tl + 16 : (size_t)next;
        if (nw == want)
            nw = off > 0 ? want - SW_MIN(want, (size_t)8) : want + 8;
        want = nw;
    }
    if (!best) {
        snprintf(s->why, sizeof(s->why), "%s", why);
        return rc ? rc : SW_EINVAL;
    }
    s->prompt = best;
    s->len = best_len;
    s->tokens = best_n;
    if (llabs(best_n - target) > s->margin)
        snprintf(s->why, sizeof(s->why), "%lld tokens after %d counts (target %lld +- %lld)%s%s",
                 (long long)best_n, s->rounds, (long long)target, (long long)s->margin,
                 why[0] ? "; " : "", why);
    return 0;
}

const char *sw__probe_size_by(const struct sw__probe_sized *s)
{
    switch (s->tokenizer) {
    case SW__SIZE_LLAMACPP:
        return "llama-server /apply-template + /tokenize";
    case SW__SIZE_VLLM:
        return "vLLM /tokenize";
    default:
        return "usage.prompt_tokens of one-token requests";
    }
}
