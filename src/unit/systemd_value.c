/*
 * Values as systemd reads them where the unit laws compare or check them: a time span
 * (systemd.time(7): "90", "1min 30s", "1.5h", "500ms", "infinity"; several parts summed, a
 * fraction to the microsecond) and a size (its parse_size: bytes with an optional K/M/G/T/P/E
 * suffix, a fraction, a percentage, or infinity).
 *
 * Not slipway's own durations and sizes, which core reads (sw_parse_duration_ms, sw_parse_bytes):
 * these are systemd's grammars, read as it reads them, for the unit files it reads.
 */
#include "scan_internal.h"

#include <ctype.h>
#include <string.h>

/* w[0..n) is one of the space-separated words. */
static bool spelled(const char *words, const char *w, size_t n)
{
    for (const char *p = words; *p;) {
        size_t l = strcspn(p, " ");
        if (l == n && !strncmp(p, w, n))
            return true;
        p += l + (p[l] == ' ');
    }
    return false;
}

int sw_unit_timespan_ms(const char *s, int64_t *ms)
{
    /* systemd.time(7)'s units, each with its spellings */
    static const struct {
        const char *words; /* space-separated */
        int64_t us;
    } units[] = {{"usec us", 1},
                 {"msec ms", 1000},
                 {"seconds second sec s", 1000000},
                 {"minutes minute min m", 60000000},
                 {"months month M", 2629800000000},
                 {"hours hour hr h", 3600000000},
                 {"days day d", 86400000000},
                 {"weeks week w", 604800000000},
                 {"years year y", 31557600000000}};
    while (*s && sw__scan_ws(*s))
        s++;
    if (!strcmp(s, "infinity")) {
        *ms = INT64_MAX;
        return 0;
    }
    int64_t total_us = 0;
    bool any = false;
    while (*s) {
        while (*s && sw__scan_ws(*s))
            s++;
        if (!*s)
            break;
        if (!isdigit((unsigned char)*s))
            return SW_EPARSE;
        int64_t v = 0;
        while (isdigit((unsigned char)*s)) {
            if (v > INT64_MAX / 10 - 10)
                return SW_EPARSE;
            v = v * 10 + (*s++ - '0');
        }
        int64_t frac_num = 0, frac_den = 1;
        if (*s == '.') {
            s++;
            while (isdigit((unsigned char)*s)) {
                if (frac_den < 1000000) {
                    frac_num = frac_num * 10 + (*s - '0');
                    frac_den *= 10;
                }
                s++;
            }
        }
        while (*s && sw__scan_ws(*s))
            s++;
        int64_t mult = 1000000; /* a bare number is seconds */
        size_t ul = 0;
        while (isalpha((unsigned char)s[ul]))
            ul++;
        if (ul) {
            mult = 0;
            for (size_t k = 0; k < SW_ARRAY_LEN(units) && !mult; k++)
                if (spelled(units[k].words, s, ul))
                    mult = units[k].us;
            if (!mult)
                return SW_EPARSE;
            s += ul;
        }
        /* the fraction is below one unit (frac_num < frac_den), so it cannot overflow; the
         * whole part must leave room for it ("292271.999999y" passed v <= INT64_MAX / mult) */
        int64_t frac = (mult / frac_den) * frac_num;
        if (v > (INT64_MAX - frac) / mult)
            return SW_EPARSE;
        int64_t add = v * mult + frac;
        if (total_us > INT64_MAX - add)
            return SW_EPARSE;
        total_us += add;
        any = true;
    }
    if (!any)
        return SW_EPARSE;
    *ms = total_us / 1000;
    return 0;
}

bool sw__unit_size_ok(const char *v)
{
    if (!strcmp(v, "infinity"))
        return true;
    const char *p = v;
    while (isdigit((unsigned char)*p))
        p++;
    if (p == v)
        return false;
    if (*p == '.' && isdigit((unsigned char)p[1])) { /* systemd's parse_size takes fractions */
        p++;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return !*p || (!p[1] && strchr("KMGTPE%", *p));
}
