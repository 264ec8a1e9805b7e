/*
 * rocm-smi --showmeminfo vram --json
 *
 * One object per card, keyed "cardN" (N is rocm-smi's device index), each holding the VRAM
 * figures in bytes as decimal strings: "VRAM Total Memory (B)" and "VRAM Total Used Memory (B)".
 * Other keys a card may carry when more --show flags were given ("Card series", "PCI Bus", ...)
 * are read when useful and otherwise ignored; a top-level "system" object (driver version) is
 * ignored. Any other top-level key, a card without both figures, or a figure that is not a
 * whole number of bytes is refused, naming the card and the key. rocm-smi prints no free figure.
 */
#include "readings_internal.h"

#include <stdio.h>
#include <string.h>

#define TOOL "rocm-smi"

static const char K_TOTAL[] = "VRAM Total Memory (B)";
static const char K_USED[] = "VRAM Total Used Memory (B)";

/* "cardN", N without leading zeros: the index, or -1. */
static int64_t card_index(const char *k)
{
    uint64_t v;
    size_t n = strlen(k);
    if (n < 5 || strncmp(k, "card", 4) || (k[4] == '0' && n > 5))
        return -1;
    if (sw__readings_u64(k + 4, n - 4, 1, &v) || v > UINT32_MAX)
        return -1;
    return (int64_t)v;
}

static int figure(const json_t *card, const char *ck, const char *key, const char *where, bool *has,
                  uint64_t *v, struct sw_err *e)
{
    const json_t *x = json_object_get(card, key);
    if (!x)
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "%s: \"%s\" missing", ck, key);
    if (json_is_integer(x)) {
        if (json_integer_value(x) < 0)
            return sw__readings_err(e, SW_ERANGE, where, 0, TOOL, "%s: \"%s\": %lld is negative",
                                    ck, key, (long long)json_integer_value(x));
        *v = (uint64_t)json_integer_value(x);
        *has = true;
        return 0;
    }
    const char *s = json_string_value(x);
    if (!s)
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                "%s: \"%s\" is not a number of bytes (a string of digits)", ck,
                                key);
    if (!strcmp(s, "N/A")) {
        *has = false;
        return 0;
    }
    size_t n = json_string_length(x);
    if (n && s[0] == '-')
        return sw__readings_err(e, SW_ERANGE, where, 0, TOOL, "%s: \"%s\": \"%.64s\" is negative",
                                ck, key, s);
    int rc = sw__readings_u64(s, n, 1, v);
    if (rc == -2)
        return sw__readings_err(e, SW_ERANGE, where, 0, TOOL,
                                "%s: \"%s\": \"%.64s\" is more bytes than a device holds (2^63)",
                                ck, key, s);
    if (rc)
        return sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                "%s: \"%s\": \"%.64s\" is not a whole number of bytes", ck, key, s);
    *has = true;
    return 0;
}

static void text(const json_t *card, const char *const *keys, char *dst, size_t dn)
{
    for (; *keys; keys++) {
        const json_t *x = json_object_get(card, *keys);
        if (json_is_string(x) &&
            sw__readings_copy(dst, dn, json_string_value(x), json_string_length(x)))
            return;
    }
    dst[0] = 0;
}

int sw_readings_rocm_smi(const char *text_, size_t len, const char *where, struct sw_readings *out,
                         struct sw_err *e)
{
    static const char *const name_keys[] = {"Card series", "Card Series", "Card model",
                                            "Card Model", NULL};
    static const char *const bus_keys[] = {"PCI Bus", NULL};
    static const char *const uuid_keys[] = {"Unique ID", NULL};
    json_t *j = NULL;
    int rc = sw__readings_json(out, SW_READINGS_ROCM_SMI, text_, len, where, TOOL, &j, e);
    if (rc)
        goto out;
    if (!json_is_object(j)) {
        rc = sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                              "not an object of cards ({\"card0\": {...}}): the wrong tool or "
                              "command?");
        goto out;
    }
    const char *k;
    json_t *card;
    json_object_foreach(j, k, card)
    {
        if (!strcmp(k, "system"))
            continue;
        int64_t idx = card_index(k);
        if (idx < 0) {
            rc = sw__readings_err(e, SW_EPARSE, where, 0, TOOL,
                                  "key \"%.64s\" is not a card (cardN) nor \"system\"", k);
            goto out;
        }
        if (!json_is_object(card)) {
            rc = sw__readings_err(e, SW_EPARSE, where, 0, TOOL, "%s is not an object", k);
            goto out;
        }
        struct sw_reading *r;
        rc = sw__readings_push(out, where, TOOL, &r, e);
        if (rc)
            goto out;
        r->vendor = "amd";
        r->index = (uint64_t)idx;
        snprintf(r->origin, sizeof(r->origin), "%s", k);
        rc = figure(card, k, K_TOTAL, where, &r->has_total, &r->total_bytes, e);
        if (!rc)
            rc = figure(card, k, K_USED, where, &r->has_used, &r->used_bytes, e);
        if (rc)
            goto out;
        text(card, name_keys, r->name, sizeof(r->name));
        text(card, bus_keys, r->bus_id, sizeof(r->bus_id));
        text(card, uuid_keys, r->uuid, sizeof(r->uuid));
    }
out:
    json_decref(j);
    return sw__readings_close(out, rc, NULL, where, TOOL, e);
}
