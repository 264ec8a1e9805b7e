/*
 * slipway openai: the OpenAI-compatible API as the engines slipway runs actually speak it
 * (llama.cpp's llama-server, vLLM, SGLang), on top of net.h and sse.h.
 *
 *  - Requests: chat completions with text and image_url content parts, tools + tool_choice,
 *    stream + stream_options.include_usage, max_tokens, temperature, seed, response_format and
 *    llama-server's `grammar` passed through as given.
 *  - Responses: a non-streamed body or a stream of chunks folded into one `struct
 *    sw_openai_result`: content; reasoning from `reasoning_content` (llama.cpp, older vLLM) or
 *    `reasoning` (newer vLLM), recording which field carried it; inline <think>...</think> split
 *    out of the content when the server did not split it (and saying so); tool_calls deltas
 *    assembled into whole calls whose arguments are then JSON-validated; finish_reason; usage;
 *    llama.cpp's `timings`; an error object sent inside the stream.
 *  - Token counting for benchmarks: a chunk is not a token (speculative decoding sends several
 *    per chunk). The result keeps one small record per chunk (arrival time, bytes of content and
 *    reasoning, flags) and the server's usage/timings separately, so a caller (probe's speed check) can count tokens from
 *    usage and time them from the records.
 *  - Error bodies in each engine's shape, classified (context too long, unavailable, ...), with
 *    the prompt length and window when the engine says them.
 *  - /v1/models (ids, aliases, owned_by, llama.cpp's meta n_ctx / n_ctx_train, vLLM's
 *    max_model_len) and the Prometheus text format of /metrics (llamacpp:*, vllm:* including
 *    spec-decode acceptance per position, sglang:*).
 *
 * Every parser takes untrusted bytes: lengths and counts are bounded, malformed input is an
 * SW_EPARSE naming the chunk or line, never a crash.
 *
 * What it deliberately does not do: tokenize, retry, or decide what a reply means for a check
 * (probe does); it does not send anything itself (net.h does).
 */
#ifndef SLIPWAY_OPENAI_H
#define SLIPWAY_OPENAI_H

#include <slipway/core.h>
#include <slipway/sse.h>

#ifdef __cplusplus
extern "C" {
#endif

/* =============================================================================================
 * Requests
 */

/* A chat-completions request. Pointers are borrowed (not freed by slipway). Unset numeric fields
 * (negative counts, NaN reals) are left out of the JSON, so the server's defaults apply. */
struct sw_openai_chat {
    const char *model;   /* NULL: left out (llama-server serves its one model) */
    json_t *messages;    /* array; build with sw_openai_msg* */
    json_t *tools;       /* array of tools, passed through */
    json_t *tool_choice; /* "auto" / "required" / "none" string, or an object */
    bool stream;
    bool include_usage; /* stream_options.include_usage (only with stream) */
    int64_t max_tokens; /* < 0: left out */
    double temperature; /* NaN: left out */
    double top_p;       /* NaN: left out */
    bool has_seed;
    int64_t seed;
    json_t *response_format; /* passed through as given */
    const char *grammar;     /* llama-server's GBNF "grammar" field, passed through */
    json_t *extra;           /* object whose keys are set last (chat_template_kwargs, ...) */
};

void sw_openai_chat_init(struct sw_openai_chat *c);
/* The request as JSON (new reference) or NULL with e set. */
json_t *sw_openai_chat_json(const struct sw_openai_chat *c, struct sw_err *e);
/* The request as compact JSON text (sw_free it), length in *len. NULL with e set. */
char *sw_openai_chat_text(const struct sw_openai_chat *c, size_t *len, struct sw_err *e);

/* {"role": role, "content": text}. New reference or NULL (OOM). */
json_t *sw_openai_msg(const char *role, const char *text);
/* {"role": role, "content": []} to fill with parts. */
json_t *sw_openai_msg_parts(const char *role);
/* Append {"type":"text","text":...} / {"type":"image_url","image_url":{"url":...[,"detail"]}}. */
int sw_openai_part_text(json_t *msg, const char *text);
int sw_openai_part_image_url(json_t *msg, const char *url, const char *detail);
/* "data:MIME;base64,...", sw_free it. NULL on OOM or when n is absurd (> 64 MiB). */
char *sw_openai_data_url(const char *mime, const void *bytes, size_t n);
/* {"type":"function","function":{"name","description","parameters"}}; steals parameters. */
json_t *sw_openai_tool(const char *name, const char *description, json_t *parameters);

/* =============================================================================================
 * Error bodies
 */

enum sw_openai_err_shape {
    SW_OAI_SHAPE_NONE = 0,
    SW_OAI_SHAPE_OPENAI,   /* {"error":{"message","type","code":string|null,"param"}} */
    SW_OAI_SHAPE_LLAMACPP, /* {"error":{"code":int,"message","type":"..._error"[,n_prompt_tokens,
                            * n_ctx]}} (server-common.cpp format_error_response) */
    SW_OAI_SHAPE_VLLM,     /* {"error":{"message","type":"BadRequestError","param","code":int}} */
    SW_OAI_SHAPE_FLAT,     /* {"object":"error","message","type","param","code"} (older vLLM,
                            * SGLang) */
    SW_OAI_SHAPE_FASTAPI,  /* {"detail": "..." | [{"loc","msg","type"}...]} */
    SW_OAI_SHAPE_TEXT      /* not JSON, or JSON of no known shape: message is a sniff of it */
};

enum sw_openai_err_kind {
    SW_OAI_ERR_UNKNOWN = 0,
    SW_OAI_ERR_CONTEXT,       /* the prompt (plus max_tokens) does not fit the window */
    SW_OAI_ERR_INVALID,       /* another bad request (400 / 422) */
    SW_OAI_ERR_AUTH,          /* 401 / 403 */
    SW_OAI_ERR_NOT_FOUND,     /* 404: unknown model or route */
    SW_OAI_ERR_RATE_LIMIT,    /* 429 */
    SW_OAI_ERR_UNAVAILABLE,   /* 503: loading, sleeping, overloaded */
    SW_OAI_ERR_NOT_SUPPORTED, /* 501 */
    SW_OAI_ERR_SERVER         /* another 5xx */
};

struct sw_openai_error {
    bool present;
    long http_status; /* 0 when the error came inside a 200 stream */
    enum sw_openai_err_shape shape;
    enum sw_openai_err_kind kind;
    char type[64];
    char code[64]; /* an integer code is written in decimal */
    char param[64];
    char message[512];
    int64_t n_prompt_tokens; /* -1 unknown; llama-server's field, or read from vLLM/SGLang text */
    int64_t n_ctx;           /* -1 unknown; the window the engine compared against */
};

/* Classify an error body (any status). Never fails: unknown bodies give SW_OAI_SHAPE_TEXT. */
void sw_openai_parse_error(const char *body, size_t len, long http_status,
                           struct sw_openai_error *out);
const char *sw_openai_err_kind_name(enum sw_openai_err_kind k);   /* "context", ... */
const char *sw_openai_err_shape_name(enum sw_openai_err_shape s); /* "llamacpp", ... */

/* =============================================================================================
 * Responses (non-streamed and streamed, folded into one result)
 */

enum sw_openai_reasoning_field {
    SW_OAI_REASONING_NONE = 0,
    SW_OAI_REASONING_CONTENT = 1, /* "reasoning_content": llama.cpp, older vLLM, SGLang */
    SW_OAI_REASONING_FIELD = 2,   /* "reasoning": newer vLLM */
    SW_OAI_REASONING_BOTH = 3     /* both fields were seen */
};

enum sw_openai_think {
    SW_OAI_THINK_NONE = 0,
    SW_OAI_THINK_INLINE,   /* "<think>...</think>" at the start of content, split out here */
    SW_OAI_THINK_DANGLING, /* only "...</think>" in content (the template opened the block) */
    SW_OAI_THINK_UNCLOSED  /* "<think>" never closed: all of content was reasoning */
};

struct sw_openai_tool_call {
    int index;
    char *id;           /* may be NULL */
    char *type;         /* "function" usually; may be NULL */
    char *name;         /* may be NULL when the server never sent one */
    struct sw_buf args; /* arguments text, concatenated from the deltas */
    bool args_valid;    /* set by finish: args is a JSON object */
    char args_error[160];
};

struct sw_openai_usage {
    bool present;
    int64_t prompt_tokens, completion_tokens, total_tokens;
    int64_t cached_tokens;    /* prompt_tokens_details.cached_tokens, -1 unknown */
    int64_t reasoning_tokens; /* completion_tokens_details.reasoning_tokens, -1 unknown */
};

/* llama-server's "timings" (server-common.cpp server_slot_stats::to_json). -1 / NaN unknown. */
struct sw_openai_timings {
    bool present;
    int64_t cache_n, prompt_n, predicted_n;
    double prompt_ms, prompt_per_token_ms, prompt_per_second;
    double predicted_ms, predicted_per_token_ms, predicted_per_second;
    int64_t draft_n, draft_n_accepted;
};

/* What one streamed chunk carried, when it arrived. */
enum {
    SW_OAI_CHUNK_ROLE = 1,    /* delta.role */
    SW_OAI_CHUNK_FINISH = 2,  /* a finish_reason */
    SW_OAI_CHUNK_USAGE = 4,   /* a usage object */
    SW_OAI_CHUNK_TIMINGS = 8, /* a timings object */
    SW_OAI_CHUNK_TOOL = 16,   /* tool_calls deltas */
    SW_OAI_CHUNK_ERROR = 32   /* an error object */
};
struct sw_openai_chunk_rec {
    uint64_t t_ns;            /* arrival time of the read that completed the event */
    uint32_t content_bytes;   /* bytes of delta.content */
    uint32_t reasoning_bytes; /* bytes of delta.reasoning / reasoning_content */
    uint32_t flags;           /* SW_OAI_CHUNK_* */
    uint32_t pad;
};

/* The pieces of the latest chunk; pointers valid until the next feed. */
struct sw_openai_delta {
    const char *content;
    size_t content_len;
    const char *reasoning;
    size_t reasoning_len;
    int tool_deltas;
    const char *finish_reason; /* NULL when none */
    bool usage, timings, done, error;
};

/* Ceilings (0 in init: these defaults). */
#define SW_OAI_TEXT_MAX_DEFAULT (16u * 1024u * 1024u) /* content, reasoning */
#define SW_OAI_ARGS_MAX         (1024u * 1024u)       /* one tool call's arguments */
#define SW_OAI_TOOL_CALLS_MAX   128u
#define SW_OAI_RECS_MAX_DEFAULT (1u << 20) /* chunk records kept */

struct sw_openai_result {
    char id[128], model[256], system_fingerprint[128], role[32];
    struct sw_buf content;
    struct sw_buf reasoning;
    enum sw_openai_reasoning_field reasoning_field;
    enum sw_openai_think think;
    struct sw_openai_tool_call *tool_calls;
    size_t ntool_calls;
    char finish_reason[32];
    struct sw_openai_usage usage;
    struct sw_openai_timings timings;
    struct sw_openai_error error; /* an error object inside a 200 reply or stream */
    bool streamed;
    bool done;            /* the [DONE] sentinel came */
    bool finished;        /* sw_openai_finish ran */
    uint64_t chunks;      /* chunks parsed (the [DONE] event is not one) */
    uint64_t text_chunks; /* chunks that carried content or reasoning */
    uint64_t t_first_chunk, t_first_text, t_last_chunk; /* 0 when none */
    struct sw_openai_chunk_rec *recs; /* one per chunk, up to recs_max (then recs_dropped++) */
    size_t nrecs, recs_cap, recs_max;
    uint64_t recs_dropped;
    bool json_only;   /* every chunk through jansson, none through the scanner (tests compare) */
    uint64_t scanned; /* chunks the scanner took (the rest went through jansson) */
    size_t text_max;
    struct sw_err err; /* the first parse error, for callbacks that cannot return it */
    json_t *cur;       /* private: the latest chunk, kept alive for the delta's pointers */
};

/* text_max / recs_max of 0 take the defaults. */
void sw_openai_result_init(struct sw_openai_result *r, size_t text_max, size_t recs_max);
void sw_openai_result_free(struct sw_openai_result *r);

/* A whole non-streamed chat.completion body (status 200). Runs finish. An {"error":...} body is
 * classified into r->error and returns SW_EHTTP. */
int sw_openai_parse_response(struct sw_openai_result *r, const char *body, size_t len,
                             struct sw_err *e);
/*
 * One SSE data payload of a stream (chat.completion.chunk), arrived at t_ns. "[DONE]" sets
 * r->done. A chunk of the usual shape is read by an allocation-free scanner; anything else (and
 * every chunk when r->json_only) by jansson, with the same result either way. An error object sets r->error and returns SW_EHTTP; data that is not a JSON object is
 * SW_EPARSE naming the chunk. delta may be NULL.
 */
int sw_openai_feed_chunk(struct sw_openai_result *r, const char *data, size_t len, uint64_t t_ns,
                         struct sw_openai_delta *delta, struct sw_err *e);
/* The stream ended: split inline <think>, validate tool-call arguments. Idempotent. 0 or
 * SW_ENOMEM (invalid arguments are reported per call, not as an error). */
int sw_openai_finish(struct sw_openai_result *r, struct sw_err *e);
/*
 * An sw_sse_event_fn: pass it as net's on_event with ud = a struct sw_openai_result. It feeds
 * every event to sw_openai_feed_chunk; on a parse or in-stream error it stores the detail in
 * r->err and returns the code, which stops the transfer.
 */
int sw_openai_on_event(void *ud, const struct sw_sse_event *ev);

/* 0 when a and b hold the same fold (text, tool calls, usage, timings, error, counters, chunk
 * records; NaN equals NaN); otherwise 1 and the first difference named in why. The tests and
 * the fuzz harness compare the scanner's fold with jansson's with it. */
int sw_openai_result_diff(const struct sw_openai_result *a, const struct sw_openai_result *b,
                          char *why, size_t why_len);

const char *sw_openai_reasoning_field_name(enum sw_openai_reasoning_field f); /* "reasoning"...*/
const char *sw_openai_think_name(enum sw_openai_think t);                     /* "inline" ... */

/* =============================================================================================
 * /v1/models
 */

struct sw_openai_model {
    char *id;
    char *owned_by; /* may be NULL */
    char *root;     /* vLLM: the served path; may be NULL */
    char **aliases; /* llama-server --alias list */
    size_t naliases;
    int64_t created;
    int64_t n_ctx;         /* llama-server meta.n_ctx (the per-slot window); -1 unknown */
    int64_t n_ctx_train;   /* llama-server meta.n_ctx_train; -1 unknown */
    int64_t max_model_len; /* vLLM / SGLang; -1 unknown */
    int64_t n_params, size, n_vocab, n_embd; /* llama-server meta; -1 unknown */
};

struct sw_openai_models {
    struct sw_openai_model *v;
    size_t n;
};

#define SW_OAI_MODELS_MAX 4096u

int sw_openai_parse_models(const char *body, size_t len, struct sw_openai_models *out,
                           struct sw_err *e);
void sw_openai_models_free(struct sw_openai_models *m);
/* By id or by alias; NULL when absent. */
const struct sw_openai_model *sw_openai_models_find(const struct sw_openai_models *m,
                                                    const char *name);

/* =============================================================================================
 * /metrics (Prometheus text exposition format 0.0.4)
 */

struct sw_openai_label {
    char *name;
    char *value;
};

struct sw_openai_sample {
    char *name;
    struct sw_openai_label *labels;
    size_t nlabels;
    double value; /* NaN and +-Inf allowed */
    bool has_ts;
    int64_t ts_ms;
};

struct sw_openai_family {
    char *name;
    char *type; /* counter, gauge, histogram, summary, untyped */
};

struct sw_openai_metrics {
    struct sw_openai_sample *v;
    size_t n;
    struct sw_openai_family *fam;
    size_t nfam;
};

#define SW_OAI_SAMPLES_MAX     200000u
#define SW_OAI_LABELS_MAX      64u
#define SW_OAI_METRIC_LINE_MAX (64u * 1024u)

enum sw_openai_engine {
    SW_OAI_ENGINE_UNKNOWN = 0,
    SW_OAI_ENGINE_LLAMACPP,
    SW_OAI_ENGINE_VLLM,
    SW_OAI_ENGINE_SGLANG
};

int sw_openai_metrics_parse(const char *text, size_t len, struct sw_openai_metrics *out,
                            struct sw_err *e);
void sw_openai_metrics_free(struct sw_openai_metrics *m);
/* First sample named name whose label `label` equals `value` (label NULL: any). */
const struct sw_openai_sample *sw_openai_metrics_get(const struct sw_openai_metrics *m,
                                                     const char *name, const char *label,
                                                     const char *value);
/* Sum of every sample named name (all label sets); NaN when there is none. */
double sw_openai_metrics_sum(const struct sw_openai_metrics *m, const char *name);
/* "# TYPE" of a family, or NULL. */
const char *sw_openai_metrics_type(const struct sw_openai_metrics *m, const char *name);
/* Value of a label of a sample, or NULL. */
const char *sw_openai_sample_label(const struct sw_openai_sample *s, const char *name);
/* Which engine's names the page uses (the prefix of most samples). */
enum sw_openai_engine sw_openai_metrics_engine(const struct sw_openai_metrics *m);
const char *sw_openai_engine_name(enum sw_openai_engine g);
/*
 * vLLM speculative decoding, per draft position: accepted_per_pos[pos] / drafts, summed over
 * engines (vllm:spec_decode_num_accepted_tokens_per_pos_total{position=} over
 * vllm:spec_decode_num_drafts_total; see vllm/v1/spec_decode/metrics.py SpecDecodingProm).
 * Writes up to max rates into rates, the number of positions into *npos. SW_ENOENT when the page
 * has no spec-decode counters or no draft yet.
 */
int sw_openai_metrics_spec_accept(const struct sw_openai_metrics *m, double *rates, size_t max,
                                  size_t *npos);

#ifdef __cplusplus
}
#endif
#endif
