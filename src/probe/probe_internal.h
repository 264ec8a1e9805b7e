/*
 * Internal to src/probe: the battery's shared state and the helpers every check uses.
 */
#ifndef SW_PROBE_INTERNAL_H
#define SW_PROBE_INTERNAL_H

#include <slipway/net.h>
#include <slipway/openai.h>
#include <slipway/probe.h>

enum sw__probe_engine { SW__ENG_UNKNOWN = 0, SW__ENG_LLAMACPP, SW__ENG_VLLM, SW__ENG_SGLANG };

struct sw__probe {
    const struct sw_probe_target *t;
    struct sw_probe_report *rep;
    struct sw_net_loop loop; /* one loop for the whole battery: connections are reused */
    char base[512];          /* scheme://host:port[/prefix], no trailing slash, no /v1 */
    unsigned timeout_ms;
    enum sw__probe_engine eng;
    char model[256];  /* sent as "model"; "" leaves it out */
    int64_t window;   /* the window clients rely on (given, else reported) */
    int64_t reported; /* the window the server reports, 0 unknown */
    int slots;
    int vision;
    int tmpl_tools; /* llama-server /props chat_template_caps.supports_tools: 1, 0, -1 unknown */
    int tmpl_think; /* its chat template has a reasoning block (<think>...): 1, 0, -1 unknown */
    double bytes_per_token; /* of filler prompts, as the endpoint counted them; 0 unknown */
    bool unreachable;       /* nothing listens, or it stays silent: later checks are skipped */
    char unreachable_why[256];
    uint64_t deadline_ns; /* CLOCK_MONOTONIC end of the battery */
    unsigned deadline_ms;
};

/* A buffered reply's ceiling (raw bytes: nothing is decoded). */
#define SW__PROBE_BODY_MAX (64u * 1024u * 1024u)

/* Milliseconds left of the battery's deadline; 0 when it passed. */
unsigned sw__probe_left_ms(const struct sw__probe *p);
/* A failed request that got no byte back because the server stayed silent (it timed out; a
 * refused or reset connection is not silence). */
bool sw__probe_silent(const struct sw_net_resp *resp);
/* Mark the endpoint unusable for every later check, with the reason (printf-style). */
void sw__probe_give_up(struct sw__probe *p, const char *fmt, ...) SW_PRINTF(2, 3);
/* The API key out of what a reply brought (its body, message and header values), and out of a
 * folded reply (text, reasoning, error message, tool arguments), before anything quotes them
 * and could cut the key in half. */
void sw__probe_scrub_resp(const struct sw__probe *p, struct sw_net_resp *resp);
void sw__probe_scrub_res(const struct sw__probe *p, struct sw_openai_result *res);
/* Set data[key] to a server's text, repaired to well-formed UTF-8 (the replaced bytes are added
 * to data.invalid_utf8_replaced). */
void sw__probe_data_str(struct sw_probe_result *r, const char *key, const char *s);
/* "" or a note that the reply came with a Content-Encoding nobody asked for, which is not
 * decoded (and the raw ceiling that bounds it). */
const char *sw__probe_encoding_note(const struct sw_net_resp *resp, char *out, size_t n);

/* base + path, in a static rotating buffer. */
const char *sw__probe_url(struct sw__probe *p, const char *path);
/* A request template with the bearer token and the timeouts. */
void sw__probe_req(struct sw__probe *p, struct sw_net_req *q, unsigned total_ms);
/* GET path, buffered (bounded). Returns the transport rc; resp always initialised. */
int sw__probe_get(struct sw__probe *p, const char *path, struct sw_net_resp *resp);
/* A chat request body: one user message, temperature 0, a seed, the model name. New ref. */
json_t *sw__probe_chat(struct sw__probe *p, const char *user, int max_tokens, bool stream);
/* POST a chat body; streamed when "stream" is true in it (folded into res through SSE), else
 * parsed as a whole reply when the status is 200. on_event (may be NULL) sees each event first
 * and may stop the stream (return non-zero). Returns the transport rc. */
int sw__probe_post(struct sw__probe *p, json_t *body, struct sw_openai_result *res,
                   struct sw_net_resp *resp, sw_sse_event_fn on_event, void *ud, unsigned total_ms);
/* A prompt of roughly `tokens` tokens: filler words and numbers, with a nonce up front so no
 * prefix cache can serve it, sized with the bytes-per-token the endpoint's tokenizer showed so
 * far (4 until measured). `tail` (may be NULL) is appended. sw_free it; *len gets its length. */
char *sw__probe_filler(struct sw__probe *p, size_t tokens, unsigned nonce, const char *tail,
                       size_t *len);
/* The same filler by its length: at least `bytes` bytes of filler (whole units), then tail. */
char *sw__probe_filler_bytes(struct sw__probe *p, size_t bytes, unsigned nonce, const char *tail,
                             size_t *len);
/* A filler prompt of len bytes came back as prompt_tokens: learn the tokenizer's density. */
void sw__probe_learn(struct sw__probe *p, size_t len, int64_t prompt_tokens);

/* A prompt sized to a token count as the endpoint counts it (src/probe/sizing.c). */
enum sw__probe_size_how { SW__SIZE_USAGE = 0, SW__SIZE_LLAMACPP, SW__SIZE_VLLM };
struct sw__probe_sized {
    char *prompt; /* one user message's text (sw__probe_sized_free) */
    size_t len;
    int64_t target, margin;
    int64_t tokens; /* the chat request's prompt tokens, as `tokenizer` counted them */
    int rounds;     /* counts asked for */
    enum sw__probe_size_how tokenizer;
    char note[400]; /* why the tokenizer endpoint was not used, "" when it was */
    char why[700];  /* why it did not land within the margin, or failed; "" when it did */
};
/* The margin a sized prompt may miss its target by: max(8, target / 100) tokens. */
int64_t sw__probe_size_margin(int64_t target);
/* Size a filler (nonce, tail as sw__probe_filler) to `target` prompt tokens of a chat request
 * with it as the one user message. 0 with s->prompt set (the closest found: s->why says it when
 * it is off by more than the margin), else an error with s->why. Free s either way. */
int sw__probe_size_prompt(struct sw__probe *p, int64_t target, unsigned nonce, const char *tail,
                          struct sw__probe_sized *s);
void sw__probe_sized_free(struct sw__probe_sized *s);
/* "llama-server /apply-template + /tokenize", "vLLM /tokenize", "usage.prompt_tokens ...". */
const char *sw__probe_size_by(const struct sw__probe_sized *s);
/* usage.prompt_tokens of a one-token, non-streamed request with prompt as the user message. */
int sw__probe_usage_tokens(struct sw__probe *p, const char *prompt, int64_t *n, char *why,
                           size_t whyn);

/* Record the outcome. evidence is printf-style; reason may be NULL. */
void sw__probe_set(struct sw_probe_result *r, enum sw_probe_status st, const char *reason,
                   const char *fmt, ...) SW_PRINTF(4, 5);
/* A one-line description of a failed transfer or an error reply (status, kind, message). */
const char *sw__probe_describe(const struct sw_net_resp *resp, char *out, size_t n);
/* The error body of a reply, classified. */
void sw__probe_error_of(const struct sw_net_resp *resp, struct sw_openai_error *oe);
/* Is the endpoint alive right now: one-token generation; evidence into out. */
bool sw__probe_alive(struct sw__probe *p, char *out, size_t n);
/* Seconds as "1.23 s" / "45 ms". */
const char *sw__probe_dur(uint64_t ns, char *out, size_t n);
/* The first n bytes of s[0..len) as a printable one-line quote in out (outn bytes, >= 8): a
 * newline as \n, other control bytes as '?', "..." when cut. Returns out ("" when outn < 8). */
const char *sw__probe_quote(const char *s, size_t len, size_t n, char *out, size_t outn);

/* The checks. */
void sw__probe_readiness(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_liveness(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_models(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_chat_check(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_stream(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_reasoning(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_tool_calls(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_vision(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_metrics(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_over_length(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_concurrency(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_speed(struct sw__probe *p, struct sw_probe_result *r);
void sw__probe_worst_case(struct sw__probe *p, struct sw_probe_result *r);

#endif
