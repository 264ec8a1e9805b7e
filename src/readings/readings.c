/*
 * Readings: what every tool's parser shares, telling the tools apart, and the JSON view.
 * The parsers themselves are one file per tool (nvidia_smi.c, rocm_smi.c, amd_smi.c); recording
 * into the ledger is record.c. Nothing here runs a tool.
 */
#include "readings_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

const char *sw_readings_tool_name(enum sw_readings_tool t)
{
    switch (t) {
    case SW_READINGS_NVIDIA_SMI:
        return "nvidia-smi";
    case SW_READINGS_ROCM_SMI:
        return "rocm-smi";
    case SW_READINGS_AMD_SMI:
        return "amd-smi";
    case SW_READINGS_LLAMACPP:
        return "llama.cpp";
    default:
        return "auto";
    }
}

int sw_readings_tool_from_name(const char *name, enum sw_readings_tool *t, struct sw_err *e)
{
    static const enum sw_readings_tool all[] = {SW_READINGS_NVIDIA_SMI, SW_READINGS_ROCM_SMI,
                                                SW_READINGS_AMD_SMI, SW_READINGS_LLAMACPP};
    for (size_t i = 0; name && i < SW_ARRAY_LEN(all); i++) {
        if (!strcmp(name, sw_readings_tool_name(all[i]))) {
            *t = all[i];
            return 0;
        }
    }
    return sw_err_set(e, SW_EINVAL, "unknown tool '%s': nvidia-smi, rocm-smi, amd-smi or llama.cpp",
                      name ? name : "");
}

int sw__readings_err(struct sw_err *e, int code, const char *where, int line, const char *tool,
                     const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (where)
        return sw_err_at(e, code, where, line, line ? 1 : 0, "%s: %s", tool, msg);
    if (line)
        return sw_err_set(e, code, "%s: line %d: %s", tool, line, msg);
    return sw_err_set(e, code, "%s: %s", tool, msg);
}

int sw__readings_push(struct sw_readings *rs, const char *where, const char *tool,
                      struct sw_reading **slot, struct sw_err *e)
{
    if (rs->n >= SW_READINGS_MAX)
        return sw__readings_err(e, SW_EPARSE, where, 0, tool, "more than %d devices",
                                SW_READINGS_MAX);
    /* grow by doubling: at most 9 reallocations up to the ceiling */
    size_t n = rs->n;
    if (!(n & (n - 1)) || !n) {
        size_t cap = n ? n * 2 : 1;
        struct sw_reading *r = sw_realloc(rs->r, cap * sizeof(*r));
        if (!r)
            return sw_err_set(e, SW_ENOMEM, "%s: out of memory", tool);
        rs->r = r;
    }
    *slot = &rs->r[rs->n++];
    memset(*slot, 0, sizeof(**slot));
    (*slot)->tool = tool;
    return 0;
}

static int by_index(const void *a, const void *b)
{
    const struct sw_reading *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

int sw__readings_finish(struct sw_readings *rs, const char *where, struct sw_err *e)
{
    const char *tool = sw_readings_tool_name(rs->tool);
    if (!rs->n)
        return sw__readings_err(e, SW_EPARSE, where, 0, tool, "no device in the output");
    for (size_t i = 0; i < rs->n; i++) {
        const struct sw_reading *r = &rs->r[i];
        if (r->has_used && r->has_total && r->used_bytes > r->total_bytes)
            return sw__readings_err(
                e, SW_ERANGE, where, r->line, tool, "%s: used %llu bytes is more than total %llu",
                r->origin, (unsigned long long)r->used_bytes, (unsigned long long)r->total_bytes);
        if (r->has_free && r->has_total && r->free_bytes > r->total_bytes)
            return sw__readings_err(
                e, SW_ERANGE, where, r->line, tool, "%s: free %llu bytes is more than total %llu",
                r->origin, (unsigned long long)r->free_bytes, (unsigned long long)r->total_bytes);
    }
    qsort(rs->r, rs->n, sizeof(*rs->r), by_index);
    for (size_t i = 1; i < rs->n; i++)
        if (rs->r[i].index == rs->r[i - 1].index)
            return sw__readings_err(e, SW_EPARSE, where, rs->r[i].line, tool,
                                    "device index %llu printed twice (%s; %s)",
                                    (unsigned long long)rs->r[i].index, rs->r[i - 1].origin,
                                    rs->r[i].origin);
    return 0;
}

int sw__readings_u64(const char *s, size_t n, uint64_t scale, uint64_t *v)
{
    if (!n || n > 20)
        return n ? -2 : -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -2;
        x = x * 10 + d;
    }
    if (scale > 1 && x > SW_READINGS_MAX_BYTES / scale)
        return -2;
    x *= scale ? scale : 1;
    if (x > SW_READINGS_MAX_BYTES)
        return -2;
    *v = x;
    return 0;
}

int sw__readings_json(struct sw_readings *out, enum sw_readings_tool kind, const char *text,
                      size_t len, const char *where, const char *tool, json_t **j, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    out->tool = kind;
    *j = NULL;
    if ((!text && len) || len > SW_READINGS_MAX_INPUT)
        return sw__readings_err(e, SW_EINVAL, where, 0, tool, "%zu bytes: no text or more than %u",
                                len, SW_READINGS_MAX_INPUT);
    *j = sw_json_parse(text ? text : "", len, where ? where : tool, e);
    if (*j)
        return 0;
    int rc = e ? e->code : SW_EPARSE;
    if (e && rc != SW_ENOMEM)
        sw_err_prefix(e, "%s: not JSON", tool);
    return rc;
}

int sw__readings_close(struct sw_readings *out, int rc, const char *none, const char *where,
                       const char *tool, struct sw_err *e)
{
    if (!rc && none)
        rc = sw__readings_err(e, SW_EPARSE, where, 0, tool, "%s", none);
    if (!rc)
        rc = sw__readings_finish(out, where, e);
    if (rc)
        sw_readings_free(out);
    return rc;
}

bool sw__readings_copy(char *dst, size_t dn, const char *s, size_t n)
{
    if (n >= dn)
        return false;
    for (size_t i = 0; i < n;) {
        size_t k = sw_utf8_seq((const unsigned char *)s + i, n - i);
        if (!k || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
        i += k;
    }
    memcpy(dst, s, n);
    dst[n] = 0;
    return true;
}

void sw_readings_free(struct sw_readings *rs)
{
    if (!rs)
        return;
    sw_free(rs->r);
    rs->r = NULL;
    rs->n = 0;
}

/* A JSON document's first byte after blanks and a BOM. */
static const char *skip_blank(const char *p, const char *end)
{
    if (end - p >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
        p += 3;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

static bool is_card_key(const char *k)
{
    if (strncmp(k, "card", 4) || !k[4])
        return false;
    for (const char *p = k + 4; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

int sw_readings_detect(const char *text, size_t len, const char *where, enum sw_readings_tool *t,
                       struct sw_err *e)
{
    const char *w = where ? where : "readings";
    if (!text && len)
        return sw_err_set(e, SW_EINVAL, "%s: no text", w);
    if (len > SW_READINGS_MAX_LOG)
        return sw_err_set(e, SW_EINVAL, "%s: %zu bytes, more than any tool's output (%u)", w, len,
                          SW_READINGS_MAX_LOG);
    if (text && memmem(text, len, "memory breakdown [MiB]", 22)) {
        *t = SW_READINGS_LLAMACPP;
        return 0;
    }
    const char *p = skip_blank(text ? text : "", (text ? text : "") + len);
    if (p == (text ? text : "") + len)
        return sw_err_set(e, SW_EPARSE, "%s: empty: cannot tell which tool printed it", w);
    if (*p != '{' && *p != '[') {
        *t = SW_READINGS_NVIDIA_SMI; /* the only text (CSV) output read */
        return 0;
    }
    json_t *j = sw_json_parse(text, len, w, e);
    if (!j)
        return e ? e->code : SW_EPARSE;
    bool cards = false, gpus = false;
    if (json_is_array(j)) {
        gpus = true;
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (is_card_key(k))
                cards = true;
            if (!strcmp(k, "gpu_data"))
                gpus = true;
        }
    }
    json_decref(j);
    if (cards == gpus)
        return sw_err_set(e, SW_EPARSE,
                          "%s: JSON %s: cannot tell which tool printed it (give the tool: "
                          "rocm-smi prints cardN keys, amd-smi a list of {\"gpu\": N})",
                          w, cards ? "in both rocm-smi's and amd-smi's shape" : "of neither shape");
    *t = cards ? SW_READINGS_ROCM_SMI : SW_READINGS_AMD_SMI;
    return 0;
}

int sw_readings_parse(enum sw_readings_tool tool, const char *text, size_t len, const char *where,
                      struct sw_readings *out, struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    if (tool == SW_READINGS_AUTO) {
        int rc = sw_readings_detect(text, len, where, &tool, e);
        if (rc)
            return rc;
    }
    switch (tool) {
    case SW_READINGS_NVIDIA_SMI:
        return sw_readings_nvidia_smi(text, len, where, out, e);
    case SW_READINGS_ROCM_SMI:
        return sw_readings_rocm_smi(text, len, where, out, e);
    case SW_READINGS_AMD_SMI:
        return sw_readings_amd_smi(text, len, where, out, e);
    case SW_READINGS_LLAMACPP:
        return sw_readings_llamacpp(text, len, where, out, e);
    default:
        return sw_err_set(e, SW_EINVAL, "readings: unknown tool %d", (int)tool);
    }
}

/* A reading as JSON: a name it lacks is null, and a figure the tool did not print. */
#define F(kind, m, fl) SW_JSON_M(kind, struct sw_reading, m, fl)
#define FIGURE(m, has) SW_JSON_ROW_IF(#m, SW_JK_U64, struct sw_reading, m, SW_JF_NULL, has)
/* clang-format off */
static const struct sw_json_field reading_fields[] = {
    F(SW_JK_STR, vendor, 0), F(SW_JK_STR, tool, 0), F(SW_JK_U64, index, 0),
    F(SW_JK_CHARS, uuid, SW_JF_NULL), F(SW_JK_CHARS, bus_id, SW_JF_NULL),
    F(SW_JK_CHARS, name, SW_JF_NULL), FIGURE(used_bytes, has_used), FIGURE(total_bytes, has_total),
    FIGURE(free_bytes, has_free), F(SW_JK_CHARS, origin, 0),
};
/* clang-format on */

json_t *sw_readings_json(const struct sw_readings *rs)
{
    json_t *o = json_object();
    json_t *arr = json_array();
    if (sw_json_set_new(o, "readings", arr) ||
        sw_json_set_str(o, "tool", sw_readings_tool_name(rs->tool)))
        goto oom;
    for (size_t i = 0; i < rs->n; i++) {
        const struct sw_reading *r = &rs->r[i];
        json_t *x = json_object();
        if (!x || json_array_append_new(arr, x))
            goto oom;
        if (sw_json_put_fields(x, reading_fields, SW_ARRAY_LEN(reading_fields), r))
            goto oom;
    }
    return o;
oom:
    json_decref(o);
    return NULL;
}
