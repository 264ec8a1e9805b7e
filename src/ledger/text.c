/*
 * Small text helpers for what the ledger stores: UTF-8 checking and repair (a log excerpt may
 * hold any bytes, but what we store must read back as JSON strings), the bounded log excerpt,
 * timestamps and memory figures in, and label checks.
 *
 * What it deliberately does not do: no locale, no normalization forms; bytes in, bytes out.
 */
#include "ledger_internal.h"

#include <ctype.h>
#include <string.h>
#include <time.h>

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates, <= U+10FFFF),
 * or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

bool sw__utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

int sw__utf8_repair(const char *s, size_t n, char **out, size_t *outn)
{
    static const char repl[] = "\xEF\xBF\xBD";
    const unsigned char *p = (const unsigned char *)s;
    uint64_t cap;
    *out = NULL;
    if (!sw_mul_ok(n, 3, &cap) || !sw_add_ok(cap, 1, &cap) || cap > SIZE_MAX)
        return SW_ERANGE;
    char *d = sw_malloc((size_t)cap);
    if (!d)
        return SW_ENOMEM;
    size_t o = 0, i = 0;
    while (i < n) {
        size_t k = p[i] ? utf8_seq(p + i, n - i) : 0;
        if (k) {
            memcpy(d + o, p + i, k);
            o += k;
            i += k;
        } else {
            memcpy(d + o, repl, 3);
            o += 3;
            i++;
        }
    }
    d[o] = '\0';
    *out = d;
    if (outn)
        *outn = o;
    return 0;
}

/* Where to cut so that [0, at) ends on a line boundary if one is near, and never inside a UTF-8
 * sequence. */
static size_t cut_back(const char *s, size_t at, size_t slack)
{
    for (size_t i = at; i > 0 && at - i < slack; i--)
        if (s[i - 1] == '\n')
            return i;
    while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80)
        at--;
    return at;
}

static size_t cut_forward(const char *s, size_t n, size_t at, size_t slack)
{
    for (size_t i = at; i < n && i - at < slack; i++)
        if (s[i] == '\n')
            return i + 1;
    while (at < n && ((unsigned char)s[at] & 0xC0) == 0x80)
        at++;
    return at;
}

int sw__log_excerpt(const char *s, size_t n, size_t max, char **out)
{
    /* Repair first (a replacement can triple a byte), then cut the repaired text: the head keeps
     * the engine's version and argument lines, the tail keeps the failure. */
    char *fixed = NULL;
    size_t fn = 0;
    *out = NULL;
    int rc = sw__utf8_repair(s, n, &fixed, &fn);
    if (rc)
        return rc;
    if (fn <= max) {
        *out = fixed;
        return 0;
    }
    char marker[96];
    int mw =
        snprintf(marker, sizeof(marker), "\n[... slipway: %zu bytes of the log elided ...]\n", fn);
    size_t mlen = (size_t)mw;
    size_t room = max > mlen ? max - mlen : 0;
    size_t head = cut_back(fixed, room / 4, 2048);
    size_t tail_from = cut_forward(fixed, fn, fn - (room - head), 2048);
    if (tail_from < head)
        tail_from = head;
    size_t tail = fn - tail_from;
    char *d = sw_malloc(head + mlen + tail + 1);
    if (!d) {
        sw_free(fixed);
        return SW_ENOMEM;
    }
    memcpy(d, fixed, head);
    memcpy(d + head, marker, mlen);
    memcpy(d + head + mlen, fixed + tail_from, tail);
    d[head + mlen + tail] = '\0';
    sw_free(fixed);
    *out = d;
    return 0;
}

static bool digits(const char *s, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return true;
}

int sw__parse_time(const json_t *j, int64_t *out, struct sw_err *e)
{
    *out = 0;
    if (!j || json_is_null(j))
        return 0;
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        if (v < 0)
            return sw_err_set(e, SW_EINVAL, "a time must not be negative");
        *out = v;
        return 0;
    }
    if (!json_is_string(j))
        return sw_err_set(e, SW_EINVAL, "a time is an ISO-8601 UTC string or unix seconds");
    const char *s = json_string_value(j);
    size_t len = strlen(s);
    int y, mo, d, h = 0, mi = 0, se = 0;
    bool ok = len >= 10 && digits(s, 4, &y) && s[4] == '-' && digits(s + 5, 2, &mo) &&
              s[7] == '-' && digits(s + 8, 2, &d);
    if (ok && len > 10) {
        ok = (len == 20 || len == 19) && (s[10] == 'T' || s[10] == ' ') && digits(s + 11, 2, &h) &&
             s[13] == ':' && digits(s + 14, 2, &mi) && s[16] == ':' && digits(s + 17, 2, &se) &&
             (len == 19 || s[19] == 'Z');
    }
    if (!ok || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return sw_err_set(e, SW_EINVAL,
                          "'%.40s' is not a time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC)", s);
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = se};
    time_t t = timegm(&tm);
    if (t < 0)
        return sw_err_set(e, SW_EINVAL, "'%.40s' is before 1970", s);
    *out = (int64_t)t;
    return 0;
}

/* s: at most max bytes of valid UTF-8 with no control character, except tab, newline and CR in
 * free text; a label holds none, nor a space unless allow_space. */
static int check_chars(const char *what, const char *s, size_t max, bool text, bool allow_space,
                       struct sw_err *e)
{
    size_t len = strlen(s);
    if (len > max)
        return sw_err_set(e, SW_EINVAL, "%s is longer than %zu bytes", what, max);
    if (!sw__utf8_valid(s, len))
        return sw_err_set(e, SW_EINVAL, "%s is not valid UTF-8", what);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ctl = c < 0x20 || c == 0x7f;
        if (text && (c == '\n' || c == '\t' || c == '\r'))
            continue;
        if (text && ctl)
            return sw_err_set(e, SW_EINVAL, "%s holds control character 0x%02x", what, c);
        if (ctl || (!allow_space && c == ' '))
            return sw_err_set(e, SW_EINVAL, "%s '%.60s' holds a %s", what, s,
                              c == ' ' ? "space" : "control character");
    }
    return 0;
}

int sw__check_label(const char *what, const char *s, size_t max, bool allow_space, struct sw_err *e)
{
    if (!s || !*s)
        return sw_err_set(e, SW_EINVAL, "%s is required", what);
    return check_chars(what, s, max, false, allow_space, e);
}

int sw__check_text(const char *what, const char *s, size_t max, bool required, struct sw_err *e)
{
    if (!s || !*s)
        return required ? sw_err_set(e, SW_EINVAL, "%s is required", what) : 0;
    return check_chars(what, s, max, true, true, e);
}

int sw_ledger_parse_time(const char *s, int64_t *out, struct sw_err *e)
{
    int64_t v;
    *out = 0;
    if (!s || !*s)
        return sw_err_set(e, SW_EINVAL, "no time given");
    if (!sw_parse_i64(s, &v, NULL)) {
        json_t *j = json_integer(v);
        int rc = j ? sw__parse_time(j, out, e) : sw_err_set(e, SW_ENOMEM, "out of memory");
        json_decref(j);
        return rc;
    }
    json_t *j = json_string(s);
    if (!j)
        return sw_err_set(e, SW_EINVAL, "time is not valid UTF-8");
    int rc = sw__parse_time(j, out, e);
    json_decref(j);
    return rc;
}

int sw_ledger_parse_mib(const char *s, uint64_t *mib, struct sw_err *e)
{
    uint64_t bytes = 0;
    size_t len = s ? strlen(s) : 0;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (!len)
        return sw_err_set(e, SW_EINVAL, "no memory figure given");
    if (s[len - 1] >= '0' && s[len - 1] <= '9')
        return sw_err_set(e, SW_EINVAL,
                          "'%s' has no unit: write %sMiB (as nvidia-smi and "
                          "rocm-smi print it) or give GiB/bytes with a unit",
                          s, s);
    int rc = sw_parse_bytes(s, &bytes, e);
    if (rc)
        return rc;
    if (bytes % SW_MIB)
        return sw_err_set(e, SW_EINVAL, "'%s' is not a whole number of MiB", s);
    *mib = bytes / SW_MIB;
    return 0;
}
