/*
 * Internal to src/net's OpenAI files: the error classifier shared by the response parser (an
 * error object inside a stream) and sw_openai_parse_error (an error body), and the chunk scanner
 * (openai_scan.c) whose findings openai_resp.c applies. Not public.
 */
#ifndef SW_OPENAI_INTERNAL_H
#define SW_OPENAI_INTERNAL_H

#include <slipway/openai.h>

/* Fill *o from a parsed JSON object that holds an error in any known shape. */
void sw__openai_error_from_json(json_t *root, long http_status, struct sw_openai_error *o);

/* ---- the chunk scanner ---- */

enum sw__scan_kind { SW__V_ABSENT = 0, SW__V_NULL, SW__V_BOOL, SW__V_NUM, SW__V_STR };

/* A JSON scalar as the scanner saw it. A string is the raw span between its quotes (validated:
 * UTF-8, escapes, no control byte, no \u0000) and its decoded length. A number is an integer
 * token (is_int, i) or a real one (d), as jansson would have typed it. */
struct sw__scan_val {
    enum sw__scan_kind k;
    const char *p;
    size_t raw, dec;
    bool esc;
    bool is_int;
    int64_t i;
    double d;
};

/* What a chat.completion.chunk of the usual shape carries (the fields apply_object reads). */
struct sw__scan {
    struct sw__scan_val id, model, fp;
    int nchoices; /* 0 or 1 */
    struct sw__scan_val index;
    bool delta_obj;
    struct sw__scan_val role, content, reasoning, reasoning_content, finish;
    bool usage_obj, ptd_obj, ctd_obj;
    struct sw__scan_val prompt_tokens, completion_tokens, total_tokens, cached_tokens,
        reasoning_tokens;
    bool timings_obj;
    struct sw__scan_val cache_n, prompt_n, predicted_n, prompt_ms, prompt_per_token_ms,
        prompt_per_second, predicted_ms, predicted_per_token_ms, predicted_per_second, draft_n,
        draft_n_accepted;
};

/*
 * Scan one chunk payload without allocating. 0: *s describes it completely and jansson would
 * have parsed the same document to the same values. -1: anything else (invalid JSON, an error
 * object, tool calls, several choices, a nested value where a scalar is usual, a duplicate key,
 * a number jansson would refuse or a string it would reject): the caller parses it with jansson.
 */
int sw__openai_scan_chunk(const char *data, size_t len, struct sw__scan *s);
/* Decode a scanned string (k == SW__V_STR) into dst, which has room for v->dec bytes. */
void sw__openai_scan_decode(const struct sw__scan_val *v, char *dst);
/* jansson's view of a scanned value, as int_or / real_or in openai_resp.c read a json_t. */
int64_t sw__scan_int_or(const struct sw__scan_val *v, int64_t dflt);
double sw__scan_real_or(const struct sw__scan_val *v, double dflt);

#endif
