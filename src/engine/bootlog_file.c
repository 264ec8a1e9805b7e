/*
 * engine/bootlog_file: the files `slipway bootlog` reads around a boot log: the log itself, whole
 * and bounded (a file, or stdin), and a report or shape file, the object itself or the one it
 * holds under its key (as `plan --json` and `bootlog parse --json` print them).
 *
 * What it does not do: parse a log (each engine's bootlog), or record it (the ledger).
 */
#include "engine_internal.h"

#include <stdio.h>
#include <string.h>

int sw_engine_bootlog_read(const char *path, char **text, size_t *len, const char **where,
                           struct sw_err *e)
{
    *text = NULL;
    *len = 0;
    *where = path;
    if (strcmp(path, "-"))
        return sw_read_file(path, SW_BOOTLOG_MAX, text, len, e);
    struct sw_buf b;
    char chunk[65536];
    size_t n;
    int rc = 0;
    sw_buf_init(&b, SW_BOOTLOG_MAX);
    while (!rc && (n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        rc = sw_buf_append(&b, chunk, n);
    if (rc) {
        sw_buf_free(&b);
        return sw_err_set(e, rc, "<stdin>: larger than %u MiB", SW_BOOTLOG_MAX >> 20);
    }
    *len = b.len;
    *text = sw_buf_steal(&b);
    *where = "<stdin>";
    return 0;
}

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
