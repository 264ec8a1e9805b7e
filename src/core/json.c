/*
 * Thin helpers over jansson: printing, parsing with positions, and setters that check for OOM.
 */
#include <slipway/core.h>

#include <string.h>

int sw_json_print(FILE *f, const json_t *j, bool pretty)
{
    size_t flags = JSON_ENCODE_ANY | (pretty ? JSON_INDENT(2) : JSON_COMPACT);
    char *s = json_dumps(j, flags | JSON_REAL_PRECISION(12));
    if (!s)
        return SW_ENOMEM;
    fputs(s, f);
    fputc('\n', f);
    free(s); /* jansson's own allocation: json_set_alloc_funcs routes it to sw_free == free */
    return ferror(f) ? SW_EIO : 0;
}

json_t *sw_json_parse(const char *text, size_t len, const char *where, struct sw_err *e)
{
    json_error_t je;
    long failed = sw_alloc_failures();
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
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

int sw_json_set_new(json_t *obj, const char *key, json_t *val)
{
    if (!val)
        return SW_ENOMEM;
    return json_object_set_new(obj, key, val) ? SW_ENOMEM : 0;
}

int sw_json_set_str(json_t *obj, const char *key, const char *val)
{
    return sw_json_set_new(obj, key, val ? json_string(val) : json_null());
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
