/*
 * engine/bootlog_file: the files `slipway bootlog record` reads beside a boot log: a report or a
 * shape, the object itself or the one it holds under its key (as `plan --json` and `bootlog parse
 * --json` print them).
 *
 * What it does not do: read or parse the log (the verb, each engine's bootlog), or record it (the
 * ledger).
 */
#include "engine_internal.h"

json_t *sw_engine_json_inner(const char *path, const char *key, struct sw_err *e)
{
    json_t *j = sw_json_load_file(path, 16u << 20, e);
    json_t *in = json_object_get(j, key);
    if (json_is_object(in)) {
        json_incref(in);
        json_decref(j);
        return in;
    }
    return j;
}
