/*
 * llama.cpp's own device memory print: the table common_memory_breakdown_print (older builds:
 * llama_memory_breakdown_print) writes to the log when a context is freed:
 *
 *   ...: | memory breakdown [MiB] | total   free    self   model   context   compute    unaccounted |
 *   ...: |   - CUDA0 (RTX 4090)   | 24080 = 3890 + (19646 = 17500 +  1536 +     610) +         543 |
 *   ...: |   - Host               |                  1234 =  1000 +   200 +      34                |
 *
 * A device row holds total and free as ggml_backend_dev_memory reported them, each floored to
 * whole MiB; used is total - free (so it is known to within 1 MiB, not exactly). The backend
 * name gives vendor and index: CUDAn is nvidia's CUDA ordinal n, ROCmn (HIP) amd's. Other
 * backends (Vulkan, Metal, SYCL) do not say whose device they drive: refused, naming the row.
 * The Host row and other buffer rows are not devices and are skipped. A log with several tables
 * (several contexts, or restarts) gives the last one. The boot-log parsers in engine/ read the
 * engine's buffers, not these device figures: this is the only reader of the table.
 */
#include "readings_internal.h"

#include <stdio.h>
#include <string.h>

#define TOOL "llama.cpp"

static const char HEADER[] = "| memory breakdown [MiB]";
static const char ROW[] = "memory_breakdown_print: |";

static const char *find(const char *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (p[i] == needle[0] && !memcmp(p + i, needle, k))
            return p + i;
    return NULL;
}

static const char *skip_sp(const char *p, const char *end)
{
    while (p < end && *p == ' ')
        p++;
    return p;
}

/* Digits at *p (no sign); advances *p. 0, or -1 / -2 as sw__readings_u64. */
static int number(const char **p, const char *end, uint64_t *v)
{
    const char *s = skip_sp(*p, end), *q = s;
    while (q < end && *q >= '0' && *q <= '9')
        q++;
    int rc = sw__readings_u64(s, (size_t)(q - s), SW__MIB, v);
    if (!rc)
        *p = q;
    return rc;
}

static bool lit(const char **p, const char *end, char c)
{
    const char *s = skip_sp(*p, end);
    if (s >= end || *s != c)
        return false;
    *p = s + 1;
    return true;
}

static int row(const char *line, size_t n, const char *at, const char *where, int ln,
               struct sw_readings *rs, struct sw_err *e)
{
    const char *end = line + n, *p = skip_sp(at + strlen(ROW), end);
    if (end - p < 2 || p[0] != '-' || p[1] != ' ')
        return 0; /* not a device row */
    p = skip_sp(p + 2, end);
    const char *name = p;
    while (p < end && *p != ' ' && *p != '|')
        p++;
    size_t nn = (size_t)(p - name);
    if (nn == 4 && !memcmp(name, "Host", 4))
        return 0;
    const char *vendor = NULL;
    size_t pre = 0;
    if (nn >= 4 && !memcmp(name, "CUDA", 4))
        vendor = "nvidia", pre = 4;
    else if (nn >= 4 && !memcmp(name, "ROCm", 4))
        vendor = "amd", pre = 4;
    /* the numbers: after the row's second '|', "T = F + (S = ...) + U |" */
    const char *bar = memchr(p, '|', (size_t)(end - p));
    if (!bar)
        return sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                "memory breakdown row %.*s: no '|' before its figures",
                                (int)(nn > 40 ? 40 : nn), name);
    const char *q = bar + 1;
    uint64_t total, free_b;
    int rc = number(&q, end, &total);
    if (!rc && !lit(&q, end, '='))
        rc = -1;
    if (!rc)
        rc = number(&q, end, &free_b);
    if (!rc && (!lit(&q, end, '+') || !lit(&q, end, '(')))
        rc = -3; /* "self = model + ..." without the device's total and free: not a device */
    if (rc == -3)
        return 0;
    if (rc)
        return sw__readings_err(e, rc == -2 ? SW_ERANGE : SW_EPARSE, where, ln, TOOL,
                                "memory breakdown row %.*s: %s", (int)(nn > 40 ? 40 : nn), name,
                                rc == -2 ? "a figure of more bytes than a device holds (2^63)"
                                         : "not \"total = free + (self = ...) + unaccounted\"");
    if (!vendor)
        return sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                "memory breakdown row %.*s: whose device is it? (CUDAn and ROCmn "
                                "name their vendor; this backend does not)",
                                (int)(nn > 40 ? 40 : nn), name);
    struct sw_reading *r;
    rc = sw__readings_push(rs, where, TOOL, &r, e);
    if (rc)
        return rc;
    r->vendor = vendor;
    r->line = ln;
    if (sw__readings_u64(name + pre, nn - pre, 1, &r->index) || r->index > UINT32_MAX)
        return sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                "memory breakdown row %.*s: no device number after %.*s",
                                (int)(nn > 40 ? 40 : nn), name, (int)pre, name);
    /* "(RTX 4090)": the description, vendor prefix stripped by llama.cpp */
    const char *lp = memchr(name + nn, '(', (size_t)(bar - name - nn));
    const char *rp = lp ? memchr(lp, ')', (size_t)(bar - lp)) : NULL;
    if (lp && rp)
        sw__readings_copy(r->name, sizeof(r->name), lp + 1, (size_t)(rp - lp - 1));
    sw_utf8_repair(line, n, r->origin, sizeof(r->origin), NULL);
    if (free_b > total)
        return sw__readings_err(e, SW_ERANGE, where, ln, TOOL,
                                "memory breakdown row %.*s: free %llu MiB is more than total %llu",
                                (int)(nn > 40 ? 40 : nn), name, (unsigned long long)(free_b >> 20),
                                (unsigned long long)(total >> 20));
    r->has_total = r->has_free = r->has_used = true;
    r->total_bytes = total;
    r->free_bytes = free_b;
    r->used_bytes = total - free_b;
    return 0;
}

int sw_readings_llamacpp(const char *text, size_t len, const char *where, struct sw_readings *out,
                         struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    out->tool = SW_READINGS_LLAMACPP;
    if ((!text && len) || len > SW_READINGS_MAX_LOG)
        return sw__readings_err(e, SW_EINVAL, where, 0, TOOL, "%zu bytes: no text or more than %u",
                                len, SW_READINGS_MAX_LOG);
    int rc = 0;
    bool table = false, seen = false;
    struct sw_lines it;
    struct sw_line l;
    sw_lines_init(&it, text, len, SIZE_MAX, SW_LINES_CRLF);
    while (sw_lines_next(&it, &l)) {
        if (find(l.s, l.len, HEADER)) {
            sw_readings_free(out); /* a later table wins */
            table = seen = true;
            continue;
        }
        const char *at = table ? find(l.s, l.len, ROW) : NULL;
        if (!at) {
            table = false; /* the table's rows are consecutive */
            continue;
        }
        rc = row(l.s, l.len, at, where, it.no, out, e);
        if (rc)
            goto out;
    }
out:
    return sw__readings_close(out, rc,
                              seen ? NULL
                                   : "no memory breakdown table (\"memory breakdown [MiB]\"): "
                                     "llama.cpp prints it when the server stops",
                              where, TOOL, e);
}
