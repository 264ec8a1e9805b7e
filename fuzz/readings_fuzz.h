/*
 * The one body of the readings parsers' fuzz harnesses (fuzz_readings_*.c): any bytes parse or are
 * refused with a message naming the tool; what parses holds at least one device, unique sorted
 * indexes, used and free within total, byte counts within SW_READINGS_MAX_BYTES, a ledger usage
 * that adds up, and a JSON view.
 */
#ifndef SW_FUZZ_READINGS_H
#define SW_FUZZ_READINGS_H

#include <slipway/readings.h>

#include <stdlib.h>
#include <string.h>

typedef int (*sw_readings_parse_fn)(const char *text, size_t len, const char *where,
                                    struct sw_readings *out, struct sw_err *e);

static inline int sw_fuzz_readings(sw_readings_parse_fn parse, const char *tool,
                                   const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    struct sw_readings rs;
    struct sw_err e;
    sw_err_clear(&e);
    if (parse((const char *)data, size, "fuzz", &rs, &e)) {
        if (!strstr(e.msg, tool) || rs.n || rs.r)
            abort(); /* every refusal names the tool, and leaves nothing behind */
        return 0;
    }
    if (!rs.n || rs.n > SW_READINGS_MAX)
        abort();
    for (size_t i = 0; i < rs.n; i++) {
        const struct sw_reading *r = &rs.r[i];
        if (i && r->index <= rs.r[i - 1].index)
            abort();
        if (r->used_bytes > SW_READINGS_MAX_BYTES || r->total_bytes > SW_READINGS_MAX_BYTES ||
            r->free_bytes > SW_READINGS_MAX_BYTES)
            abort();
        if (r->has_used && r->has_total && r->used_bytes > r->total_bytes)
            abort();
        if (r->has_free && r->has_total && r->free_bytes > r->total_bytes)
            abort();
        if (strlen(r->uuid) >= sizeof(r->uuid) || strlen(r->name) >= sizeof(r->name) ||
            strlen(r->bus_id) >= sizeof(r->bus_id) || strlen(r->origin) >= sizeof(r->origin))
            abort();
        struct sw_ledger_usage u;
        if (!sw_readings_to_usage(r, &u, &e) &&
            (u.used_mib > u.total_mib || (u.has_free && u.free_mib > u.total_mib - u.used_mib)))
            abort();
    }
    json_t *j = sw_readings_json(&rs);
    if (!j)
        abort();
    json_decref(j);
    sw_readings_free(&rs);
    return 0;
}

#endif
