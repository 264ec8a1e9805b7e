/*
 * Thin helpers over jansson: printing, parsing with positions, setters that check for OOM, and
 * a struct written from a table of its members (sw_json_put_fields).
 */
#include <slipway/core.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

char *sw_json_dumps(const json_t *j, size_t flags)
{
    return json_dumps(j, flags);
}

int sw_json_print(FILE *f, const json_t *j, bool pretty)
{
    size_t flags = JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
    char *s = sw_json_dumps(j, flags | JSON_REAL_PRECISION(12));
    if (!s)
        return SW_ENOMEM;
    fputs(s, f);
    fputc('\n', f);
    sw_free(s);
    return ferror(f) ? SW_EIO : 0;
}

json_t *sw_json_parse(const char *text, size_t len, const char *where, struct sw_err *e)
{
    json_error_t je;
    long failed = sw_alloc_failures();
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (j && sw_alloc_failures() != failed) {
        /* jansson's lexer drops a byte it could not save (lex_save ignores its buffer's
         * failure) and still returns a document: a string could be cut short. Not trusted. */
        json_decref(j);
        sw_err_set(e, SW_ENOMEM, "%s: out of memory parsing JSON", where);
        return NULL;
    }
    if (!j) {
        /* jansson reports most of its allocation failures as parse errors; say which it was */
        if (sw_alloc_failures() != failed || json_error_code(&je) == json_error_out_of_memory)
            sw_err_set(e, SW_ENOMEM, "%s: out of memory parsing JSON", where);
        else if (je.line > 0)
            sw_err_at(e, SW_EPARSE, where, je.line, je.column > 0 ? je.column : 1,
                      "invalid JSON: %s", je.text);
        else
            sw_err_at_offset(e, SW_EPARSE, where, (int64_t)je.position, "invalid JSON: %s",
                             je.text);
    }
    return j;
}

json_t *sw_json_load_file(const char *path, size_t max, struct sw_err *e)
{
    char *data = NULL;
    size_t len = 0;
    if (sw_read_file(path, max, &data, &len, e))
        return NULL;
    json_t *j = sw_json_parse(data, len, path, e);
    sw_free(data);
    return j;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return "a string";
    case JSON_ARRAY:
        return "an array";
    case JSON_OBJECT:
        return "an object";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    default:
        return "a number";
    }
}

int sw_json_int_range(const json_t *v, int64_t min, int64_t max, const char *where, const char *key,
                      int64_t *out, struct sw_err *e)
{
    int64_t x;
    if (!where)
        where = "<json>";
    if (!v)
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s: missing (an integer is expected)", key);
    if (json_is_integer(v)) {
        x = (int64_t)json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        /* -2^63 is exact as a double and 2^63 is the first double past INT64_MAX: inside
         * [-2^63, 2^63) the conversion is defined. NaN fails every comparison. */
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
            return sw_err_at(e, SW_ERANGE, where, 0, 0, "%s is %g, outside [%lld, %lld]", key, d,
                             (long long)min, (long long)max);
        if (d != floor(d))
            return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s must be a whole number (got %g)", key,
                             d);
        x = (int64_t)d;
    } else {
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s must be an integer (got %s)", key,
                         json_kind(v));
    }
    if (x < min || x > max)
        return sw_err_at(e, SW_ERANGE, where, 0, 0, "%s is %lld, outside [%lld, %lld]", key,
                         (long long)x, (long long)min, (long long)max);
    *out = x;
    return 0;
}

int sw_json_set_new(json_t *obj, const char *key, json_t *val)
{
    if (!val)
        return SW_ENOMEM;
    return json_object_set_new(obj, key, val) ? SW_ENOMEM : 0;
}

json_t *sw_json_text(const char *s, size_t len, size_t *replaced)
{
    if (replaced)
        *replaced = 0;
    json_t *j = json_stringn(s ? s : "", s ? len : 0);
    if (j || !s)
        return j; /* NULL here: out of memory */
    /* jansson refuses what is not UTF-8 and says so with the NULL it gives when out of memory:
     * tell them apart (jansson takes a NUL), and repair only what is not UTF-8. A bad byte grows
     * to 3 (U+FFFD); a length that cannot be tripled cannot be held. */
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t k = u[i] ? sw_utf8_seq(u + i, len - i) : 1;
        if (!k)
            break;
        i += k;
    }
    if (i == len || len > (SIZE_MAX - 1) / 3)
        return NULL; /* well-formed: that NULL was out of memory */
    char *fixed = sw_malloc(len * 3 + 1);
    if (!fixed)
        return NULL;
    size_t n = sw_utf8_repair(s, len, fixed, len * 3 + 1, replaced);
    j = json_stringn(fixed, n);
    sw_free(fixed);
    return j;
}

int sw_json_set_str(json_t *obj, const char *key, const char *val)
{
    return sw_json_set_new(obj, key, val ? sw_json_text(val, strlen(val), NULL) : json_null());
}

int sw_json_set_int(json_t *obj, const char *key, int64_t val)
{
    return sw_json_set_new(obj, key, json_integer((json_int_t)val));
}

int sw_json_set_real(json_t *obj, const char *key, double val)
{
    return sw_json_set_new(obj, key, json_real(val));
}

int sw_json_set_bool(json_t *obj, const char *key, bool val)
{
    return sw_json_set_new(obj, key, json_boolean(val));
}

static bool field_empty(const struct sw_json_field *f, const void *obj)
{
    const char *p = (const char *)obj + f->off;
    if (f->flags & SW_JF_HAS)
        return !*(const bool *)((const char *)obj + f->has_off);
    switch (f->kind) {
    case SW_JK_CHARS:
        return !p[0];
    case SW_JK_STR:
        return !*(const char *const *)p;
    case SW_JK_BOOL:
        return !*(const bool *)p;
    case SW_JK_INT:
        return !*(const int *)p;
    case SW_JK_I64:
        return !*(const int64_t *)p;
    case SW_JK_U64:
        return !*(const uint64_t *)p;
    case SW_JK_DOUBLE:
        return *(const double *)p == 0;
    case SW_JK_JSON:
        return !*(json_t *const *)p;
    case SW_JK_FN:
        return false;
    }
    return false;
}

static int put_field(json_t *o, const struct sw_json_field *f, const void *obj)
{
    const char *p = (const char *)obj + f->off;
    switch (f->kind) {
    case SW_JK_CHARS:
        return sw_json_set_str(o, f->key, p);
    case SW_JK_STR:
        return sw_json_set_str(o, f->key, *(const char *const *)p);
    case SW_JK_BOOL:
        return sw_json_set_bool(o, f->key, *(const bool *)p);
    case SW_JK_INT:
        return sw_json_set_int(o, f->key, *(const int *)p);
    case SW_JK_I64:
        return sw_json_set_int(o, f->key, *(const int64_t *)p);
    case SW_JK_U64:
        return sw_json_set_int(o, f->key, (int64_t) * (const uint64_t *)p);
    case SW_JK_DOUBLE:
        return sw_json_set_real(o, f->key, *(const double *)p);
    case SW_JK_JSON: {
        json_t *j = *(json_t *const *)p;
        return sw_json_set_new(o, f->key, j ? json_incref(j) : json_null());
    }
    case SW_JK_FN:
        return f->fn(o, f->key, obj);
    }
    return 0;
}

int sw_json_put_fields(json_t *o, const struct sw_json_field *t, size_t n, const void *obj)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sw_json_field *f = &t[i];
        if ((f->flags & (SW_JF_OMIT | SW_JF_NULL)) && field_empty(f, obj)) {
            if (f->flags & SW_JF_NULL)
                rc |= sw_json_set_new(o, f->key, json_null());
            continue;
        }
        rc |= put_field(o, f, obj);
    }
    return rc ? SW_ENOMEM : 0;
}
