/*
 * Scalar values of the fleet file: strings, names, paths, counts, exact and approximate byte
 * sizes, rates, reals, booleans, ports, and quantities with units (profile constants and measured
 * facts). Each decoder reports its own error at the value's position, prefixed with its dotted
 * path, and records the position for sw_fleet_pos().
 *
 * Exact versus approximate bytes: a value handed to an engine (kv_cache_bytes) must be a whole
 * number of bytes (sw_parse_bytes refuses "0.1KiB"); a figure the operator read off a tool
 * (31.86GiB usable, ~1.4GiB for the projector) is a measurement and is rounded to the byte.
 * It does not know which field needs which (shape.c and the nouns say). Numbers and unit names
 * come from core (sw_number_scan, sw_unit_bytes, sw_unit_multiplier): one lexer, one table.
 *
 * Control characters: a value of the fleet reaches line-based files (the unit, where systemd
 * ends a line at CR as well as LF; the env file; the llama-swap and harness exports; the
 * Prometheus textfile; the Markdown report), so every scalar is refused when it holds one (C0
 * including tab, DEL, C1), at its position with its dotted path. Only free text (notes, sources,
 * a boot's text: SW__FT_TEXT) may hold LF and tab; its writers escape them.
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The first control character of s (C0, DEL, or a C1 code point U+0080..U+009F in UTF-8), LF
 * and tab allowed when lines; NULL when none. */
static const char *first_ctl(const char *s, bool lines)
{
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        if ((*u < 0x20 || *u == 0x7f) && !(lines && (*u == '\n' || *u == '\t')))
            return (const char *)u;
        if (*u == 0xc2 && u[1] >= 0x80 && u[1] < 0xa0)
            return (const char *)u;
    }
    return NULL;
}

static const char *scalar(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, bool lines)
{
    if (n->kind != SW__FLN_SCALAR) {
        sw__fleet_errp(c, n, "must be a single value, not a %s",
                       n->kind == SW__FLN_MAP ? "mapping" : "list");
        return NULL;
    }
    if (strlen(n->text) != n->len) {
        sw__fleet_errp(c, n, "holds a NUL character");
        return NULL;
    }
    const char *ctl = first_ctl(n->text, lines);
    if (ctl) {
        unsigned char u = (unsigned char)ctl[0];
        char name[32];
        if (u == '\r')
            snprintf(name, sizeof(name), "a carriage return (CR)");
        else if (u == '\n')
            snprintf(name, sizeof(name), "a line feed (LF)");
        else if (u == '\t')
            snprintf(name, sizeof(name), "a tab");
        else
            snprintf(name, sizeof(name), "U+%04X", u == 0xc2 ? (unsigned char)ctl[1] : u);
        size_t at = 1; /* in characters, as an editor counts them */
        for (const char *q = n->text; q < ctl; q++)
            at += ((unsigned char)*q & 0xc0) != 0x80;
        sw__fleet_errp(c, n,
                       "holds a control character, %s, at character %zu: slipway writes fleet "
                       "values into line-based files (a systemd unit ends a line at CR or LF, "
                       "and what follows becomes a line of its own)%s",
                       name, at,
                       lines ? "" : "; only notes and other free text may hold LF and tab");
        return NULL;
    }
    return n->text;
}

const char *sw__fleet_scalar(struct sw__fleet_ctx *c, const struct sw__fleet_node *n)
{
    return scalar(c, n, false);
}

int sw__fleet_typed_start(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                          struct sw_fleet_at *at, bool *set, bool *off, const char **t)
{
    *at = sw__fleet_at(n);
    sw__fleet_record(c, n);
    if (sw__fleet_node_is_null(n)) {
        *set = false;
        *off = true;
        return 0;
    }
    *t = scalar(c, n, false);
    return *t ? 1 : SW_EPARSE;
}

bool sw__fleet_want_map(struct sw__fleet_ctx *c, const struct sw__fleet_node *n)
{
    if (n->kind == SW__FLN_MAP)
        return true;
    sw__fleet_errp(c, n, "must be a mapping (key: value lines), not %s",
                   n->kind == SW__FLN_SEQ      ? "a list"
                   : sw__fleet_node_is_null(n) ? "empty"
                                               : "a single value");
    return false;
}

bool sw__fleet_want_seq(struct sw__fleet_ctx *c, const struct sw__fleet_node *n)
{
    if (n->kind == SW__FLN_SEQ)
        return true;
    sw__fleet_errp(c, n, "must be a list, not %s",
                   n->kind == SW__FLN_MAP ? "a mapping" : "a single value");
    return false;
}

static bool is_name(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 64 || !isalnum((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static bool is_word(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return false;
    return true;
}

static int list_choices(const char *const *ch, char *out, size_t n)
{
    size_t j = 0;
    out[0] = '\0';
    for (size_t i = 0; ch[i] && j + 1 < n; i++) {
        int w = snprintf(out + j, n - j, "%s%s", i ? ", " : "", ch[i]);
        if (w < 0 || (size_t)w >= n - j)
            break;
        j += (size_t)w;
    }
    return 0;
}

int sw__fleet_dec_str(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                      const struct sw__fleet_spec *s, struct sw_fleet_str *out)
{
    out->at = sw__fleet_at(n);
    sw__fleet_record(c, n);
    if (sw__fleet_node_is_null(n)) {
        out->v = NULL;
        out->off = true;
        return 0;
    }
    const char *t = scalar(c, n, s->ft == SW__FT_TEXT);
    if (!t)
        return SW_EPARSE;
    if (!*t)
        return sw__fleet_errp(c, n, "must not be empty (write null to turn it off)");
    switch (s->ft) {
    case SW__FT_NAME:
        if (!is_name(t))
            return sw__fleet_errp(c, n,
                                  "'%s' is not a name: use letters, digits, '-' and '_' (at most "
                                  "64, starting with a letter or digit)",
                                  t);
        break;
    case SW__FT_WORD:
        if (!is_word(t))
            return sw__fleet_errp(c, n, "'%s' must be one word (letters, digits, '_', '-', '.')",
                                  t);
        break;
    case SW__FT_CHOICE: {
        for (size_t i = 0; s->choices[i]; i++) {
            if (!strcmp(s->choices[i], t)) {
                out->v = s->choices[i];
                out->off = false;
                return 0;
            }
        }
        size_t nc = 0;
        while (s->choices[nc])
            nc++;
        const char *sug = sw__fleet_suggest(t, s->choices, nc);
        char list[400];
        list_choices(s->choices, list, sizeof(list));
        if (sug)
            return sw__fleet_errp(c, n, "'%s' is not one of %s (did you mean '%s'?)", t, list, sug);
        return sw__fleet_errp(c, n, "'%s' is not one of %s", t, list);
    }
    case SW__FT_PATH:
        if (t[0] != '/' && strcmp(t, "~") && strncmp(t, "~/", 2))
            return sw__fleet_errp(c, n,
                                  "'%s' must be an absolute path (or start with ~/): it is a path "
                                  "on the endpoint's host, where no working directory is known",
                                  t);
        break;
    case SW__FT_LPATH:
        break;
    default:
        break;
    }
    out->v = sw_region_strdup(c->a, t);
    if (!out->v)
        return sw__fleet_nomem(c);
    out->off = false;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Quantities.
 */
/* Canonical word: byte units -> "B" (with scale), token spellings -> "token", seconds -> "s". */
static const char *canon_word(const char *w, size_t n, double *scale)
{
    *scale = 1.0;
    uint64_t bytes = sw_unit_bytes(w, n);
    if (bytes) {
        *scale = (double)bytes; /* powers of 1000 and 1024 up to T: exact in a double */
        return "B";
    }
    static const char *const tokens[] = {"t", "tok", "toks", "token", "tokens"};
    for (size_t i = 0; i < SW_ARRAY_LEN(tokens); i++)
        if (strlen(tokens[i]) == n && !memcmp(tokens[i], w, n))
            return "token";
    static const char *const secs[] = {"s", "sec", "secs", "second", "seconds"};
    for (size_t i = 0; i < SW_ARRAY_LEN(secs); i++)
        if (strlen(secs[i]) == n && !memcmp(secs[i], w, n))
            return "s";
    return NULL;
}

/* A signed number at s (sw_number_scan) as a double; returns characters used or -1. */
static int read_number(const char *s, double *out)
{
    struct sw_number num;
    if (!sw_number_scan(s, true, &num) || !num.real_ok)
        return -1;
    *out = num.real;
    return (int)num.len;
}

/* One unit side: "[<number>] <word>"; returns the canonical word in out. */
static int unit_side(const char *s, size_t n, double *value, bool numerator, char *out, size_t outn,
                     struct sw_err *e)
{
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    out[0] = '\0';
    if (!n)
        return numerator ? 0 : sw_err_set(e, SW_EPARSE, "nothing after '/'");
    if (!numerator && isdigit((unsigned char)*s)) {
        char tmp[64];
        size_t k = 0;
        while (k < n && k + 1 < sizeof(tmp) && (isdigit((unsigned char)s[k]) || s[k] == '.'))
            k++;
        memcpy(tmp, s, k);
        tmp[k] = '\0';
        double d;
        if (read_number(tmp, &d) != (int)k || d <= 0)
            return sw_err_set(e, SW_EPARSE, "bad count '%s' after '/'", tmp);
        *value /= d;
        s += k;
        n -= k;
        while (n && isspace((unsigned char)*s)) {
            s++;
            n--;
        }
        if (!n)
            return sw_err_set(e, SW_EPARSE, "a unit must follow the count after '/'");
    }
    for (size_t i = 0; i < n; i++)
        if (!isalpha((unsigned char)s[i]) && s[i] != '%')
            return sw_err_set(e, SW_EPARSE, "'%.*s' is not a unit (one word, like B, GiB, token)",
                              (int)n, s);
    double scale;
    const char *cw = canon_word(s, n, &scale);
    if (numerator)
        *value *= scale;
    else
        *value /= scale;
    if (cw)
        snprintf(out, outn, "%s", cw);
    else
        snprintf(out, outn, "%.*s", (int)n, s);
    return 0;
}

int sw_fleet_parse_qty(const char *s, double *value, char *unit, size_t unitn, struct sw_err *e)
{
    if (!s)
        return sw_err_set(e, SW_EINVAL, "no quantity");
    while (isspace((unsigned char)*s))
        s++;
    double v;
    int used = read_number(s, &v);
    if (used < 0)
        return sw_err_set(e, SW_EPARSE, "'%s' does not start with a number", s);
    const char *p = s + used;
    /* an attached multiplier ("180k tokens"), unless it starts a byte unit ("180kB") */
    size_t ml = 0;
    while (p[ml] && !isspace((unsigned char)p[ml]) && p[ml] != '/')
        ml++;
    uint64_t mult = sw_unit_multiplier(p, ml);
    if (mult) {
        v *= (double)mult;
        p += ml;
    }
    /* "per" is '/' spelled out, as people write it ("0.22 GiB per 1024 tokens") */
    char rest[256];
    size_t rl = strlen(p);
    if (rl >= sizeof(rest))
        return sw_err_set(e, SW_ERANGE, "quantity '%s' is too long", s);
    memcpy(rest, p, rl + 1);
    char *per = strstr(rest, " per ");
    char *slash = strchr(rest, '/');
    size_t nlen = rl, dpos = 0;
    bool has_den = false;
    if (slash) {
        nlen = (size_t)(slash - rest);
        dpos = nlen + 1;
        has_den = true;
    } else if (per) {
        nlen = (size_t)(per - rest);
        dpos = nlen + 5;
        has_den = true;
    }
    char num[64], den[64];
    int rc = unit_side(rest, nlen, &v, true, num, sizeof(num), e);
    if (rc)
        return rc;
    den[0] = '\0';
    if (has_den) {
        if (strchr(rest + dpos, '/'))
            return sw_err_set(e, SW_EPARSE, "quantity '%s' has more than one '/'", s);
        rc = unit_side(rest + dpos, rl - dpos, &v, false, den, sizeof(den), e);
        if (rc)
            return rc;
        if (!num[0])
            snprintf(num, sizeof(num), "1");
    }
    if (!isfinite(v))
        return sw_err_set(e, SW_ERANGE, "quantity '%s' is out of range", s);
    *value = v;
    if (unit && unitn)
        snprintf(unit, unitn, "%s%s%s", num, den[0] ? "/" : "", den);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Numbers.
 */
int sw__fleet_dec_u64(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                      const struct sw__fleet_spec *s, struct sw_fleet_u64 *out)
{
    const char *t = NULL;
    int k = sw__fleet_typed_start(c, n, &out->at, &out->set, &out->off, &t);
    if (k <= 0)
        return k;
    struct sw_err e;
    sw_err_clear(&e);
    uint64_t v = 0;
    int rc = 0;
    switch (s->ft) {
    case SW__FT_BYTES:
        rc = sw_parse_bytes(t, &v, &e);
        break;
    case SW__FT_BYTES_APPROX:
    case SW__FT_RATE: {
        double d;
        char unit[64];
        rc = sw_fleet_parse_qty(t, &d, unit, sizeof(unit), &e);
        if (rc)
            break;
        const char *want = s->ft == SW__FT_RATE ? "B/s" : "B";
        if (strcmp(unit, want) && !(s->ft == SW__FT_BYTES_APPROX && !unit[0]))
            return sw__fleet_errp(c, n, "'%s' must be %s (got unit '%s')", t,
                                  s->ft == SW__FT_RATE ? "bytes per second, like 644GB/s"
                                                       : "a byte size, like 24GiB or 31.86GiB",
                                  unit[0] ? unit : "none");
        if (d < 0 || d >= 18446744073709551615.0)
            return sw__fleet_errp(c, n, "'%s' is out of range", t);
        v = (uint64_t)llround(d);
        break;
    }
    case SW__FT_NGL:
        if (!strcmp(t, "all")) {
            v = SW_FLEET_ALL;
            break;
        }
        rc = sw_parse_count(t, &v, &e);
        break;
    case SW__FT_PORT:
        rc = sw_parse_count(t, &v, &e);
        if (!rc && (v < 1 || v > 65535))
            return sw__fleet_errp(c, n, "must be a port in 1..65535 (got %s)", t);
        break;
    default:
        rc = sw_parse_count(t, &v, &e);
        break;
    }
    if (rc) {
        if (rc == SW_ENOMEM)
            return sw__fleet_nomem(c);
        return sw__fleet_errp(c, n, "%s", e.msg);
    }
    if (v != SW_FLEET_ALL || s->ft != SW__FT_NGL) {
        if (v < s->min)
            return sw__fleet_errp(c, n, "must be >= %llu (got %s)", (unsigned long long)s->min, t);
        if (s->max && v > s->max)
            return sw__fleet_errp(c, n, "must be <= %llu (got %s)", (unsigned long long)s->max, t);
    }
    out->v = v;
    out->set = true;
    out->off = false;
    return 0;
}

int sw__fleet_dec_f64(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                      const struct sw__fleet_spec *s, struct sw_fleet_f64 *out)
{
    const char *t = NULL;
    int k = sw__fleet_typed_start(c, n, &out->at, &out->set, &out->off, &t);
    if (k <= 0)
        return k;
    struct sw_err e;
    sw_err_clear(&e);
    double d;
    char unit[64];
    int rc = sw_fleet_parse_qty(t, &d, unit, sizeof(unit), &e);
    if (rc)
        return sw__fleet_errp(c, n, "%s", e.msg);
    if (unit[0] && strcmp(unit, "%"))
        return sw__fleet_errp(c, n, "'%s' must be a plain number (got unit '%s')", t, unit);
    if (!strcmp(unit, "%"))
        d /= 100.0;
    if (s->fmin_open ? d <= s->fmin : d < s->fmin)
        return sw__fleet_errp(c, n, "must be %s %g (got %s)", s->fmin_open ? ">" : ">=", s->fmin,
                              t);
    if (d > s->fmax)
        return sw__fleet_errp(c, n, "must be <= %g (got %s)", s->fmax, t);
    out->v = d;
    out->set = true;
    out->off = false;
    return 0;
}

int sw__fleet_dec_bool(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                       struct sw_fleet_bool *out)
{
    const char *t = NULL;
    int k = sw__fleet_typed_start(c, n, &out->at, &out->set, &out->off, &t);
    if (k <= 0)
        return k;
    if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE"))
        out->v = true;
    else if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE"))
        out->v = false;
    else
        return sw__fleet_errp(c, n, "must be true or false (got '%s')", t);
    out->set = true;
    out->off = false;
    return 0;
}

int sw__fleet_dec_value(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                        enum sw_fleet_vtype t, const struct sw__fleet_spec *s,
                        struct sw_fleet_value *out)
{
    memset(out, 0, sizeof(*out));
    out->type = t;
    int rc = 0;
    switch (t) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES: {
        struct sw_fleet_u64 u = {0};
        rc = sw__fleet_dec_u64(c, n, s, &u);
        out->u = u.v;
        out->set = u.set;
        out->at = u.at;
        break;
    }
    case SW_FLEET_V_REAL: {
        struct sw_fleet_f64 f = {0};
        rc = sw__fleet_dec_f64(c, n, s, &f);
        out->f = f.v;
        out->set = f.set;
        out->at = f.at;
        break;
    }
    case SW_FLEET_V_BOOL: {
        struct sw_fleet_bool b = {0};
        rc = sw__fleet_dec_bool(c, n, &b);
        out->b = b.v;
        out->set = b.set;
        out->at = b.at;
        break;
    }
    case SW_FLEET_V_STR: {
        struct sw_fleet_str str = {0};
        rc = sw__fleet_dec_str(c, n, s, &str);
        out->s = str.v;
        out->set = str.v != NULL;
        out->at = str.at;
        break;
    }
    }
    if (!rc && !out->set)
        return sw__fleet_errp(c, n, "needs a value here, not null");
    return rc;
}

int sw__fleet_unknown_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *key,
                          const char *what, const char *const *known, size_t n)
{
    struct sw_fleet_at at = sw__fleet_at(key);
    const char *sug = sw__fleet_suggest(key->text, known, n);
    const char *where = c->plen ? c->path : "the top level";
    if (sug)
        return sw__fleet_err(c, &at, "unknown key '%s' in %s (did you mean '%s'?)", key->text,
                             where, sug);
    char list[600];
    size_t j = 0;
    list[0] = '\0';
    for (size_t i = 0; i < n && j + 1 < sizeof(list); i++) {
        if (!known[i])
            continue;
        int w = snprintf(list + j, sizeof(list) - j, "%s%s", j ? ", " : "", known[i]);
        if (w < 0 || (size_t)w >= sizeof(list) - j) {
            list[j] = '\0';
            break;
        }
        j += (size_t)w;
    }
    (void)what;
    return sw__fleet_err(c, &at, "unknown key '%s' in %s (known: %s)", key->text, where, list);
}
