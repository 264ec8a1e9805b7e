/*
 * Unit parsing and formatting. Parsing is exact decimal arithmetic (no floating point), so
 * "3.15e9" is 3150000000 and "1.5GiB" is 1610612736, and a value that is not a whole number of
 * bytes or tokens is an error rather than a silent rounding.
 */
#include <slipway/core.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct suffix {
    const char *s;
    uint64_t mult;
};

/* Byte units: a number of bytes, spelled with its unit. */
static const struct suffix byte_units[] = {
    {"B", 1ull},           {"KiB", 1ull << 10},      {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},   {"kB", 1000ull},          {"KB", 1000ull},     {"MB", 1000000ull},
    {"GB", 1000000000ull}, {"TB", 1000000000000ull},
};

/* Multipliers of a count or a quantity ("180k tokens", "176Ki"). */
static const struct suffix multipliers[] = {
    {"Ki", 1ull << 10}, {"Mi", 1ull << 20}, {"Gi", 1ull << 30},   {"k", 1000ull},
    {"K", 1000ull},     {"M", 1000000ull},  {"G", 1000000000ull},
};

/* Byte sizes also take the bare multipliers, up to T, as Kubernetes reads them ("24Gi"). */
static const struct suffix byte_only_multipliers[] = {{"Ti", 1ull << 40}, {"T", 1000000000000ull}};

static uint64_t find_suffix(const struct suffix *tab, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(tab[i].s) == len && !memcmp(tab[i].s, s, len))
            return tab[i].mult;
    return 0;
}

uint64_t sw_unit_bytes(const char *s, size_t n)
{
    return find_suffix(byte_units, SW_ARRAY_LEN(byte_units), s, n);
}

uint64_t sw_unit_multiplier(const char *s, size_t n)
{
    return find_suffix(multipliers, SW_ARRAY_LEN(multipliers), s, n);
}

static uint64_t byte_suffix(const char *s, size_t n)
{
    uint64_t m = sw_unit_bytes(s, n);
    if (!m)
        m = sw_unit_multiplier(s, n);
    if (!m)
        m = find_suffix(byte_only_multipliers, SW_ARRAY_LEN(byte_only_multipliers), s, n);
    return m;
}

int sw_number_scan(const char *s, bool sign, struct sw_number *out)
{
    const char *p = s;
    char buf[128]; /* the number without separators, for strtod */
    size_t j = 0;
    bool fits = true;
    memset(out, 0, sizeof(*out));
#define PUT(ch)                                                                                    \
    do {                                                                                           \
        if (j + 1 < sizeof(buf))                                                                   \
            buf[j++] = (ch);                                                                       \
        else                                                                                       \
            fits = false;                                                                          \
    } while (0)
    if (sign && (*p == '+' || *p == '-')) {
        out->negative = *p == '-';
        PUT(*p);
        p++;
    }
    int digits = 0;
    bool seen_dot = false;
    while (*p) {
        if (isdigit((unsigned char)*p)) {
            unsigned d = (unsigned)(*p - '0');
            if (out->overflow || out->mant > (UINT64_MAX - d) / 10) {
                /* more digits than 64 bits hold: only trailing zeros keep the value exact */
                if (d != 0)
                    out->overflow = true;
                else if (!seen_dot)
                    out->exp10++;
            } else {
                out->mant = out->mant * 10 + d;
                if (seen_dot)
                    out->exp10--;
            }
            digits++;
            PUT(*p);
            p++;
        } else if ((*p == ',' || *p == '_') && digits > 0 && !seen_dot &&
                   isdigit((unsigned char)p[1])) {
            p++;
        } else if (*p == '.' && !seen_dot) {
            seen_dot = true;
            PUT(*p);
            p++;
        } else {
            break;
        }
    }
    if (!digits)
        return 0;
    if ((*p == 'e' || *p == 'E') &&
        (isdigit((unsigned char)p[1]) ||
         ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
        PUT(*p);
        p++;
        int esign = 1;
        if (*p == '+' || *p == '-') {
            esign = *p == '-' ? -1 : 1;
            PUT(*p);
            p++;
        }
        int x = 0;
        while (isdigit((unsigned char)*p)) {
            if (x > 1000)
                out->exp_huge = true;
            else
                x = x * 10 + (*p - '0');
            PUT(*p);
            p++;
        }
        out->exp10 += esign * x;
    }
#undef PUT
    buf[j] = '\0';
    if (fits) {
        char *end = NULL;
        errno = 0;
        double v = strtod(buf, &end);
        out->real_ok = end && !*end && isfinite(v);
        out->real = out->real_ok ? v : 0.0;
    }
    out->len = (size_t)(p - s);
    return (int)out->len;
}

static int parse_with_suffix(const char *what, const char *s,
                             uint64_t (*unit)(const char *, size_t), uint64_t *out,
                             struct sw_err *e)
{
    if (!s)
        return sw_err_set(e, SW_EINVAL, "%s: no value", what);
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-')
        return sw_err_set(e, SW_ERANGE, "%s '%s' must not be negative", what, s);
    if (*s == '+')
        s++;
    struct sw_number num;
    sw_number_scan(s, false, &num);
    if (num.len && num.overflow)
        return sw_err_set(e, SW_ERANGE, "%s '%s' is too large", what, s);
    if (!num.len || num.exp_huge)
        return sw_err_set(e, SW_EPARSE, "%s '%s' is not a number", what, s);
    uint64_t mant = num.mant;
    int exp10 = num.exp10;
    const char *suf = s + num.len;
    while (isspace((unsigned char)*suf))
        suf++;
    size_t slen = strlen(suf);
    while (slen && isspace((unsigned char)suf[slen - 1]))
        slen--;
    uint64_t mult = slen ? unit(suf, slen) : 1;
    if (!mult)
        return sw_err_set(e, SW_EPARSE, "%s '%s': unknown unit '%.*s'", what, s, (int)slen, suf);
    unsigned __int128 v = (unsigned __int128)mant * mult;
    while (exp10 > 0) {
        v *= 10;
        exp10--;
        if (v > UINT64_MAX)
            return sw_err_set(e, SW_ERANGE, "%s '%s' is too large", what, s);
    }
    while (exp10 < 0) {
        if (v % 10 != 0)
            return sw_err_set(e, SW_ERANGE, "%s '%s' is not a whole number", what, s);
        v /= 10;
        exp10++;
    }
    if (v > UINT64_MAX)
        return sw_err_set(e, SW_ERANGE, "%s '%s' is too large", what, s);
    *out = (uint64_t)v;
    return 0;
}

int sw_parse_bytes(const char *s, uint64_t *out, struct sw_err *e)
{
    return parse_with_suffix("byte size", s, byte_suffix, out, e);
}

int sw_parse_count(const char *s, uint64_t *out, struct sw_err *e)
{
    return parse_with_suffix("count", s, sw_unit_multiplier, out, e);
}

/* Durations, in milliseconds per unit. */
static const struct suffix duration_suffixes[] = {
    {"ms", 1ull}, {"s", 1000ull}, {"m", 60000ull}, {"min", 60000ull}, {"h", 3600000ull},
};

static uint64_t duration_unit(const char *s, size_t n)
{
    return find_suffix(duration_suffixes, SW_ARRAY_LEN(duration_suffixes), s, n);
}

int sw_parse_duration_ms(const char *s, int64_t *ms, struct sw_err *e)
{
    char buf[128];
    uint64_t v;
    if (!s)
        return sw_err_set(e, SW_EINVAL, "duration: no value");
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= sizeof(buf) - 2)
        return sw_err_set(e, SW_ERANGE, "duration '%.40s...' is too long", s);
    /* a bare number is seconds */
    snprintf(buf, sizeof(buf), "%.*s%s", (int)n, s,
             n && isalpha((unsigned char)s[n - 1]) ? "" : "s");
    int rc = parse_with_suffix("duration", buf, duration_unit, &v, e);
    if (rc)
        return rc;
    if (v > (uint64_t)INT64_MAX)
        return sw_err_set(e, SW_ERANGE, "duration '%s' is too large (more than %" PRId64 " ms)", s,
                          INT64_MAX);
    *ms = (int64_t)v;
    return 0;
}

int sw_parse_i64(const char *s, int64_t *out, struct sw_err *e)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s))
        return sw_err_set(e, SW_EPARSE, "'%s' is not an integer", s ? s : "");
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return sw_err_set(e, SW_EPARSE, "'%s' is not an integer", s);
    if (errno == ERANGE)
        return sw_err_set(e, SW_ERANGE, "'%s' is out of range", s);
    *out = v;
    return 0;
}

int sw_parse_u64(const char *s, uint64_t *out, struct sw_err *e)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return sw_err_set(e, SW_EPARSE, "'%s' is not a non-negative integer", s ? s : "");
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return sw_err_set(e, SW_EPARSE, "'%s' is not a non-negative integer", s);
    if (errno == ERANGE)
        return sw_err_set(e, SW_ERANGE, "'%s' is out of range", s);
    *out = v;
    return 0;
}

int sw_parse_double(const char *s, double *out, struct sw_err *e)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s))
        return sw_err_set(e, SW_EPARSE, "'%s' is not a number", s ? s : "");
    errno = 0;
    double v = strtod(s, &end);
    if (*end)
        return sw_err_set(e, SW_EPARSE, "'%s' is not a number", s);
    if (errno == ERANGE || !isfinite(v))
        return sw_err_set(e, SW_ERANGE, "'%s' is out of range", s);
    *out = v;
    return 0;
}

const char *sw_fmt_count(uint64_t v, char *out, size_t n)
{
    char tmp[32];
    char rev[48];
    int len = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
    int r = 0;
    for (int i = len - 1, k = 0; i >= 0; i--, k++) {
        if (k && k % 3 == 0)
            rev[r++] = ',';
        rev[r++] = tmp[i];
    }
    size_t j = 0;
    for (int i = r - 1; i >= 0 && j + 1 < n; i--)
        out[j++] = rev[i];
    if (n)
        out[j < n ? j : n - 1] = '\0';
    return out;
}

const char *sw_fmt_bytes(uint64_t v, char *out, size_t n)
{
    if (v < 1024)
        snprintf(out, n, "%" PRIu64 " B", v);
    else if (v < SW_MIB)
        snprintf(out, n, "%.1f KiB", (double)v / 1024.0);
    else if (v < SW_GIB)
        snprintf(out, n, "%.1f MiB", (double)v / (double)SW_MIB);
    else
        snprintf(out, n, "%.2f GiB", (double)v / (double)SW_GIB);
    return out;
}

const char *sw_fmt_mib(uint64_t v, char *out, size_t n)
{
    snprintf(out, n, "%.2f", (double)v / (double)SW_MIB);
    return out;
}
