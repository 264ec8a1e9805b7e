/*
 * amd-smi metric --mem-usage --json, amd-smi static --vram --json
 *
 * A list with one object per GPU, {"gpu": N, ...}; newer releases wrap it as {"gpu_data": [...]}.
 * metric --mem-usage gives "mem_usage": {"total_vram", "used_vram", "free_vram", ...}; static
 * --vram gives "vram": {"size", ...} (a total and no used figure). A figure is
 * {"value": N, "unit": "MB"} in newer releases, a plain number or a string "N MB" in older ones,
 * "N/A" when the driver has none. amd-smi's MB is 2^20 bytes (the library divides byte counts by
 * 1024*1024 and documents amdsmi_vram_usage_t's fields as "In MB"). Any other unit, a fraction,
 * or a GPU that prints both a mem_usage total and a vram size that disagree, is refused.
 */
#include "readings_internal.h"

#include <stdio.h>
#include <string.h>

#define TOOL "amd-smi"

/* One figure of gpu N at key path `what`; *has false for "N/A". */
static int figure(const json_t *x, const char *what, const char *where, bool *has, uint64_t *v,
                  struct sw_err *e)
{
    const json_t *num = x;
    const char *unit = NULL;
    if (json_is_object(x)) {
        num = json_object_get(x, "value");
        unit = json_string_value(json_object_get(x, "unit"));
        if (!num || !unit || json_object_size(x) != 2)
            return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                    "%s: an object that is not {\"value\": N, \"unit\": \"MB\"}",
                                    what);
    }
    if (json_is_string(num)) {
        const char *s = json_string_value(num);
        size_t n = json_string_length(num);
        if (!strcmp(s, "N/A")) {
            *has = false;
            return 0;
        }
        if (!unit && n > 3 && !memcmp(s + n - 3, " MB", 3)) {
            n -= 3;
            unit = "MB";
        }
        if (!unit)
            return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                    "%s: \"%.64s\" has no unit (\"N MB\")", what, s);
        if (strcmp(unit, "MB"))
            goto bad_unit;
        if (n && s[0] == '-')
            return sw__readings_err(e, SW_ERANGE, where, 0, TOOL, "%s: \"%.64s\" is negative", what,
                                    s);
        int rc = sw__readings_u64(s, n, SW__MIB, v);
        if (rc == -2)
            return sw__readings_err(e, SW_ERANGE, where, 0, TOOL,
                                    "%s: \"%.64s\" MB is more bytes than a device holds (2^63)",
                                    what, s);
        if (rc)
            return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                    "%s: \"%.64s\" is not a whole number of MB", what, s);
        *has = true;
        return 0;
    }
    if (unit && strcmp(unit, "MB"))
        goto bad_unit;
    if (json_is_integer(num)) {
        json_int_t i = json_integer_value(num);
        if (i < 0)
            return sw__readings_err(e, SW_ERANGE, where, 0, TOOL, "%s: %lld is negative", what,
                                    (long long)i);
        if ((uint64_t)i > SW_READINGS_MAX_BYTES / SW__MIB)
            return sw__readings_err(e, SW_ERANGE, where, 0, TOOL,
                                    "%s: %lld MB is more bytes than a device holds (2^63)", what,
                                    (long long)i);
        *v = (uint64_t)i * SW__MIB;
        *has = true;
        return 0;
    }
    return sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "%s: %s is not a whole number of MB",
                            what,
                            json_is_real(num)   ? "a fraction or exponent"
                            : json_is_null(num) ? "null"
                                                : "this value");
bad_unit:
    return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                            "%s: unit \"%.16s\": only MB (amd-smi's MiB) is read", what, unit);
}

static int optional(const json_t *obj, const char *key, const char *what, const char *where,
                    bool *has, uint64_t *v, struct sw_err *e)
{
    const json_t *x = json_object_get(obj, key);
    *has = false;
    return x ? figure(x, what, where, has, v, e) : 0;
}

static int gpu(const json_t *g, size_t i, const char *where, struct sw_readings *out,
               struct sw_err *e)
{
    char what[96];
    if (!json_is_object(g))
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "[%zu] is not an object", i);
    const json_t *gi = json_object_get(g, "gpu");
    if (!json_is_integer(gi) || json_integer_value(gi) < 0 || json_integer_value(gi) > UINT32_MAX)
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                "[%zu]: \"gpu\" is %s, not a device index", i,
                                gi ? "not a whole number >= 0" : "missing");
    const json_t *mem = json_object_get(g, "mem_usage");
    const json_t *vram = json_object_get(g, "vram");
    if ((mem && !json_is_object(mem)) || (vram && !json_is_object(vram)))
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "gpu %lld: %s is not an object",
                                (long long)json_integer_value(gi),
                                mem && !json_is_object(mem) ? "mem_usage" : "vram");
    if (!mem && !vram)
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                "gpu %lld: neither mem_usage (metric --mem-usage) nor vram "
                                "(static --vram)",
                                (long long)json_integer_value(gi));
    struct sw_reading *r;
    int rc = sw__readings_push(out, where, TOOL, &r, e);
    if (rc)
        return rc;
    r->vendor = "amd";
    r->index = (uint64_t)json_integer_value(gi);
    snprintf(r->origin, sizeof(r->origin), "gpu %llu", (unsigned long long)r->index);
    const json_t *bdf = json_object_get(g, "bdf");
    if (json_is_string(bdf))
        sw__readings_copy(r->bus_id, sizeof(r->bus_id), json_string_value(bdf),
                          json_string_length(bdf));
    if (mem) {
        const struct {
            const char *key;
            bool *has;
            uint64_t *v;
        } f[] = {{"total_vram", &r->has_total, &r->total_bytes},
                 {"used_vram", &r->has_used, &r->used_bytes},
                 {"free_vram", &r->has_free, &r->free_bytes}};
        for (size_t k = 0; k < SW_ARRAY_LEN(f); k++) {
            snprintf(what, sizeof(what), "gpu %llu: mem_usage.%s", (unsigned long long)r->index,
                     f[k].key);
            if (k < 2 && !json_object_get(mem, f[k].key))
                return sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "%s missing", what);
            rc = optional(mem, f[k].key, what, where, f[k].has, f[k].v, e);
            if (rc)
                return rc;
        }
    }
    if (vram) {
        bool has = false;
        uint64_t size = 0;
        snprintf(what, sizeof(what), "gpu %llu: vram.size", (unsigned long long)r->index);
        if (!json_object_get(vram, "size"))
            return sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "%s missing", what);
        rc = optional(vram, "size", what, where, &has, &size, e);
        if (rc)
            return rc;
        if (has && r->has_total && size != r->total_bytes)
            return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                    "%s %llu bytes and mem_usage.total_vram %llu disagree: which "
                                    "is the device's?",
                                    what, (unsigned long long)size,
                                    (unsigned long long)r->total_bytes);
        if (has && !r->has_total) {
            r->has_total = true;
            r->total_bytes = size;
        }
        const json_t *type = json_object_get(vram, "type");
        if (json_is_string(type) && !r->name[0])
            snprintf(r->name, sizeof(r->name), "%.40s VRAM",
                     json_string_value(type)); /* "GDDR6 VRAM": static names no product */
    }
    return 0;
}

int sw_readings_amd_smi(const char *text, size_t len, const char *where, struct sw_readings *out,
                        struct sw_err *e)
{
    json_t *j = NULL;
    int rc = sw__readings_json(out, SW_READINGS_AMD_SMI, text, len, where, TOOL, &j, e);
    if (rc)
        goto out;
    const json_t *list = j;
    if (json_is_object(j)) {
        list = json_object_get(j, "gpu_data");
        if (!list || json_object_size(j) != 1)
            list = NULL;
    }
    if (!json_is_array(list)) {
        rc = sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                              "not a list of GPUs ([{\"gpu\": 0, ...}] or {\"gpu_data\": [...]}): "
                              "the wrong tool or command?");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(list); i++) {
        rc = gpu(json_array_get(list, i), i, where, out, e);
        if (rc)
            goto out;
    }
out:
    json_decref(j);
    return sw__readings_close(out, rc, NULL, where, TOOL, e);
}
