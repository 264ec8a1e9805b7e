/*
 * The cheap path for one streamed chat.completion.chunk: a bounded scanner that reads the few
 * fields a delta chunk carries (id, model, system_fingerprint, choices[0].index / delta.role /
 * content / reasoning / reasoning_content / finish_reason, usage, timings) straight from the
 * bytes, without building a tree and without allocating. Parsing every chunk with jansson was
 * 72% of the client's CPU per streamed token (callgrind, bench/bench_client.c).
 *
 * It is a recogniser, not a second JSON parser: anything outside the usual shape, or any input
 * on which it cannot be sure to agree with jansson (sw_json_parse: JSON_DECODE_ANY |
 * JSON_REJECT_DUPLICATES), makes it answer -1 and the caller takes the full jansson path. So
 * it validates what it accepts exactly as jansson does: strict UTF-8 (no overlong form, no
 * surrogate, nothing past U+10FFFF), the escapes JSON has, no control byte in a string, no
 * \u0000 (jansson refuses it without JSON_ALLOW_NUL), numbers of jansson's grammar (an integer
 * token past 18 digits or a real that overflows is left to jansson, which refuses the latter),
 * no duplicate key in any object, nothing but white space after the document.
 * tests/unit/test_openai_scan.c and fuzz/fuzz_openai_scan.c feed the same chunks both ways and
 * compare the results.
 *
 * What it deliberately does not do: tool-call deltas, error objects, logprobs objects, more than
 * one choice, keys with escapes, objects or arrays under keys it does not know (all -> jansson).
 */
#include "openai_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KEYS_MAX 32 /* keys per object remembered for the duplicate check */
#define NUM_MAX  64 /* bytes of a real number token */

struct cur {
    const char *p, *end;
};

static void ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int peek(const struct cur *c)
{
    return c->p < c->end ? (unsigned char)*c->p : -1;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned ch = (unsigned char)p[i], d;
        if (ch >= '0' && ch <= '9')
            d = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            d = ch - 'A' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* Length of a valid UTF-8 sequence at p (n bytes remain), 0 when invalid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static size_t cp_len(unsigned cp)
{
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* At an escape's backslash: its code point and its length in the input. -1: jansson refuses it
 * or it is \u0000. */
static int escape_at(const char *p, const char *end, unsigned *cp, size_t *in)
{
    if (end - p < 2)
        return -1;
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
        *cp = (unsigned char)p[1];
        break;
    case 'b':
        *cp = '\b';
        break;
    case 'f':
        *cp = '\f';
        break;
    case 'n':
        *cp = '\n';
        break;
    case 'r':
        *cp = '\r';
        break;
    case 't':
        *cp = '\t';
        break;
    case 'u': {
        unsigned u, lo;
        if (end - p < 6 || hex4(p + 2, &u) || u == 0 || (u >= 0xDC00 && u <= 0xDFFF))
            return -1;
        if (u >= 0xD800 && u <= 0xDBFF) {
            if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, &lo) || lo < 0xDC00 ||
                lo > 0xDFFF)
                return -1;
            *cp = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            *in = 12;
            return 0;
        }
        *cp = u;
        *in = 6;
        return 0;
    }
    default:
        return -1;
    }
    *in = 2;
    return 0;
}

/* Bytes that stand for themselves in a JSON string: printable ASCII but the quote and the
 * backslash (0x7F included: jansson takes it as it is). */
static const unsigned char plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static int scan_string(struct cur *c, struct sw__scan_val *v)
{
    const char *p = c->p + 1; /* past the opening quote */
    size_t dec = 0;
    bool esc = false;
    for (;;) {
        const char *run = p;
        while (p < c->end && plain[(unsigned char)*p])
            p++;
        dec += (size_t)(p - run);
        if (p >= c->end)
            return -1;
        unsigned char ch = (unsigned char)*p;
        if (ch == '"')
            break;
        if (ch == '\\') {
            unsigned cp;
            size_t in;
            if (escape_at(p, c->end, &cp, &in))
                return -1;
            p += in;
            dec += cp_len(cp);
            esc = true;
        } else if (ch < 0x20) {
            return -1;
        } else if (ch < 0x80) {
            p++;
            dec++;
        } else {
            size_t n = utf8_len((const unsigned char *)p, (size_t)(c->end - p));
            if (!n)
                return -1;
            p += n;
            dec += n;
        }
    }
    v->k = SW__V_STR;
    v->p = c->p + 1;
    v->raw = (size_t)(p - v->p);
    v->dec = dec;
    v->esc = esc;
    c->p = p + 1;
    return 0;
}

/*
 * A real written as at most 15 digits with a point and no exponent ("7.25", "-0.5"): the digits
 * as an integer are exact in a double (< 2^53), so is 10^k for k <= 22, and one IEEE division
 * is correctly rounded: the same double strtod gives (Clinger's fast path). Else false.
 */
static bool fast_real(const char *s, const char *end, double *out)
{
    static const double p10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    bool neg = *s == '-';
    const char *p = s + neg;
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (; p < end; p++) {
        if (*p == '.') {
            frac = 0;
            continue;
        }
        if (*p < '0' || *p > '9')
            return false;
        m = m * 10 + (uint64_t)(*p - '0');
        digits++;
        if (frac >= 0)
            frac++;
    }
    if (digits > 15 || frac < 0)
        return false;
    double d = (double)m / p10[frac];
    /* -0.0 as strtod has it */
    *out = neg ? -d : d;
    return true;
}

static int scan_number(struct cur *c, struct sw__scan_val *v)
{
    const char *s = c->p, *p = c->p;
    if (p < c->end && *p == '-')
        p++;
    if (p >= c->end)
        return -1;
    if (*p == '0') {
        p++;
        if (p < c->end && *p >= '0' && *p <= '9')
            return -1;
    } else if (*p >= '1' && *p <= '9') {
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return -1;
    }
    bool is_int = true;
    if (p < c->end && *p == '.') {
        is_int = false;
        p++;
        if (p >= c->end || *p < '0' || *p > '9')
            return -1;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        is_int = false;
        p++;
        if (p < c->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= c->end || *p < '0' || *p > '9')
            return -1;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    size_t n = (size_t)(p - s);
    v->k = SW__V_NUM;
    v->is_int = is_int;
    if (is_int) {
        const char *d = s + (*s == '-');
        if (p - d > 18) /* past what int64 surely holds: jansson decides (it may refuse) */
            return -1;
        int64_t x = 0;
        for (; d < p; d++)
            x = x * 10 + (*d - '0');
        v->i = *s == '-' ? -x : x;
    } else {
        if (fast_real(s, p, &v->d)) {
            c->p = p;
            return 0;
        }
        char buf[NUM_MAX];
        if (n >= sizeof(buf))
            return -1;
        memcpy(buf, s, n);
        buf[n] = '\0';
        double x = strtod(buf, NULL);
        if (isinf(x)) /* jansson: "real number overflow" */
            return -1;
        v->d = x;
    }
    c->p = p;
    return 0;
}

static int literal(struct cur *c, const char *word, size_t n)
{
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n))
        return -1;
    c->p += n;
    return 0;
}

/* A scalar value into v (NULL: validated and dropped). An object or array is -1. */
static int scan_scalar(struct cur *c, struct sw__scan_val *v)
{
    struct sw__scan_val tmp;
    if (!v)
        v = &tmp;
    memset(v, 0, sizeof(*v));
    switch (peek(c)) {
    case '"':
        return scan_string(c, v);
    case 'n':
        v->k = SW__V_NULL;
        return literal(c, "null", 4);
    case 't':
        v->k = SW__V_BOOL;
        return literal(c, "true", 4);
    case 'f':
        v->k = SW__V_BOOL;
        return literal(c, "false", 5);
    default:
        return scan_number(c, v);
    }
}

/* k is the key NAME (a string literal: its length is known at compile time) */
#define KEY_IS(k, NAME) ((k)->raw == sizeof(NAME) - 1 && !memcmp((k)->p, NAME, sizeof(NAME) - 1))

/* One member's value, at c->p; must consume it. -1: not for the scanner. */
typedef int (*member_fn)(struct cur *c, const struct sw__scan_val *key, struct sw__scan *s);

static int scan_object(struct cur *c, member_fn fn, struct sw__scan *s)
{
    struct sw__scan_val keys[KEYS_MAX];
    size_t nkeys = 0;
    c->p++; /* '{' */
    ws(c);
    if (peek(c) == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        ws(c);
        if (peek(c) != '"' || nkeys == KEYS_MAX)
            return -1;
        struct sw__scan_val *k = &keys[nkeys];
        if (scan_string(c, k) || k->esc)
            return -1;
        for (size_t i = 0; i < nkeys; i++)
            if (keys[i].raw == k->raw && keys[i].p[0] == k->p[0] &&
                !memcmp(keys[i].p, k->p, k->raw))
                return -1; /* jansson refuses duplicates */
        nkeys++;
        ws(c);
        if (peek(c) != ':')
            return -1;
        c->p++;
        ws(c);
        if (fn(c, k, s))
            return -1;
        ws(c);
        int ch = peek(c);
        c->p++;
        if (ch == '}')
            return 0;
        if (ch != ',')
            return -1;
    }
}

static int details_ptd(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    return scan_scalar(c, KEY_IS(k, "cached_tokens") ? &s->cached_tokens : NULL);
}

static int details_ctd(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    return scan_scalar(c, KEY_IS(k, "reasoning_tokens") ? &s->reasoning_tokens : NULL);
}

static int usage_member(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    if (KEY_IS(k, "prompt_tokens"))
        return scan_scalar(c, &s->prompt_tokens);
    if (KEY_IS(k, "completion_tokens"))
        return scan_scalar(c, &s->completion_tokens);
    if (KEY_IS(k, "total_tokens"))
        return scan_scalar(c, &s->total_tokens);
    if (peek(c) == '{' && KEY_IS(k, "prompt_tokens_details")) {
        s->ptd_obj = true;
        return scan_object(c, details_ptd, s);
    }
    if (peek(c) == '{' && KEY_IS(k, "completion_tokens_details")) {
        s->ctd_obj = true;
        return scan_object(c, details_ctd, s);
    }
    return scan_scalar(c, NULL);
}

static int timings_member(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    static const struct {
        const char *name;
        size_t len, off;
    } f[] = {
        {"cache_n", 7, offsetof(struct sw__scan, cache_n)},
        {"prompt_n", 8, offsetof(struct sw__scan, prompt_n)},
        {"predicted_n", 11, offsetof(struct sw__scan, predicted_n)},
        {"prompt_ms", 9, offsetof(struct sw__scan, prompt_ms)},
        {"prompt_per_token_ms", 19, offsetof(struct sw__scan, prompt_per_token_ms)},
        {"prompt_per_second", 17, offsetof(struct sw__scan, prompt_per_second)},
        {"predicted_ms", 12, offsetof(struct sw__scan, predicted_ms)},
        {"predicted_per_token_ms", 22, offsetof(struct sw__scan, predicted_per_token_ms)},
        {"predicted_per_second", 20, offsetof(struct sw__scan, predicted_per_second)},
        {"draft_n", 7, offsetof(struct sw__scan, draft_n)},
        {"draft_n_accepted", 16, offsetof(struct sw__scan, draft_n_accepted)},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(f); i++)
        if (k->raw == f[i].len && !memcmp(k->p, f[i].name, f[i].len))
            return scan_scalar(c, (struct sw__scan_val *)(void *)((char *)s + f[i].off));
    return scan_scalar(c, NULL);
}

static int delta_member(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    if (KEY_IS(k, "content"))
        return scan_scalar(c, &s->content);
    if (KEY_IS(k, "role"))
        return scan_scalar(c, &s->role);
    if (KEY_IS(k, "reasoning_content"))
        return scan_scalar(c, &s->reasoning_content);
    if (KEY_IS(k, "reasoning"))
        return scan_scalar(c, &s->reasoning);
    if (peek(c) == '[' && KEY_IS(k, "tool_calls")) {
        /* an empty list is nothing; a tool call delta is jansson's */
        c->p++;
        ws(c);
        if (peek(c) != ']')
            return -1;
        c->p++;
        return 0;
    }
    return scan_scalar(c, NULL);
}

static int choice_member(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    if (KEY_IS(k, "index"))
        return scan_scalar(c, &s->index);
    if (KEY_IS(k, "finish_reason"))
        return scan_scalar(c, &s->finish);
    if (peek(c) == '{' && KEY_IS(k, "delta")) {
        s->delta_obj = true;
        return scan_object(c, delta_member, s);
    }
    return scan_scalar(c, NULL);
}

static int top_member(struct cur *c, const struct sw__scan_val *k, struct sw__scan *s)
{
    if (KEY_IS(k, "error"))
        return -1;
    if (KEY_IS(k, "id"))
        return scan_scalar(c, &s->id);
    if (KEY_IS(k, "model"))
        return scan_scalar(c, &s->model);
    if (KEY_IS(k, "system_fingerprint"))
        return scan_scalar(c, &s->fp);
    if (peek(c) == '[' && KEY_IS(k, "choices")) {
        c->p++;
        ws(c);
        if (peek(c) == ']') {
            c->p++;
            return 0;
        }
        if (peek(c) != '{' || scan_object(c, choice_member, s))
            return -1;
        s->nchoices = 1;
        ws(c);
        if (peek(c) != ']') /* a second choice: jansson's */
            return -1;
        c->p++;
        return 0;
    }
    if (peek(c) == '{' && KEY_IS(k, "usage")) {
        s->usage_obj = true;
        return scan_object(c, usage_member, s);
    }
    if (peek(c) == '{' && KEY_IS(k, "timings")) {
        s->timings_obj = true;
        return scan_object(c, timings_member, s);
    }
    return scan_scalar(c, NULL);
}

int sw__openai_scan_chunk(const char *data, size_t len, struct sw__scan *s)
{
    struct cur c = {data, data + len};
    memset(s, 0, sizeof(*s));
    ws(&c);
    if (peek(&c) != '{' || scan_object(&c, top_member, s))
        return -1;
    ws(&c);
    return c.p == c.end ? 0 : -1;
}

static size_t put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | cp >> 12);
        d[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | cp >> 18);
    d[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

void sw__openai_scan_decode(const struct sw__scan_val *v, char *dst)
{
    if (!v->esc) {
        memcpy(dst, v->p, v->raw);
        return;
    }
    const char *p = v->p, *end = v->p + v->raw;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t run = bs ? (size_t)(bs - p) : (size_t)(end - p);
        memcpy(dst, p, run);
        dst += run;
        p += run;
        if (!bs)
            break;
        unsigned cp = 0;
        size_t in = 2;
        escape_at(p, end, &cp, &in); /* validated by the scan */
        dst += put_utf8(dst, cp);
        p += in;
    }
}

int64_t sw__scan_int_or(const struct sw__scan_val *v, int64_t dflt)
{
    if (v->k != SW__V_NUM)
        return dflt;
    if (v->is_int)
        return v->i;
    /* sw_json_int_range on a real: whole numbers inside [-2^63, 2^63) */
    if (!(v->d >= -9223372036854775808.0 && v->d < 9223372036854775808.0) || v->d != floor(v->d))
        return dflt;
    return (int64_t)v->d;
}

double sw__scan_real_or(const struct sw__scan_val *v, double dflt)
{
    if (v->k != SW__V_NUM)
        return dflt;
    return v->is_int ? (double)v->i : v->d;
}
