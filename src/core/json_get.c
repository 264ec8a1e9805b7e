/*
 * core/json_get: reading a value out of a JSON document that may not hold it, for the readers of
 * documents the library builds (status, report, tune) and of rows a ledger gave back.
 *
 * What it does not do: say why a value is missing (a reader that must know uses
 * sw_json_int_range, which names the key).
 */
#include <slipway/core.h>

const char *sw_json_str(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}
