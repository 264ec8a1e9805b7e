/*
 * nvidia-smi --query-gpu=...,memory.used,memory.total,memory.free --format=csv[,noheader][,nounits]
 *
 * The CSV nvidia-smi prints: fields separated by ", ", no quoting (GPU names hold no comma), one
 * line per GPU. With a header, columns are found by their query names (`memory.used [MiB]`: the
 * bracket is the unit, which must be MiB); without one, the order slipway queries is assumed:
 * index, uuid, name, memory.used, memory.total[, memory.free]. A value is `20190 MiB` (or `20190`
 * under nounits); `[N/A]` and `[Not Supported]` mean the driver has no figure. Anything else is
 * refused with its line: a driver error printed instead of CSV reads as a line that is not a row.
 */
#include "readings_internal.h"

#include <string.h>

#define TOOL "nvidia-smi"

enum col { C_INDEX, C_UUID, C_NAME, C_BUS, C_USED, C_TOTAL, C_FREE, C_OTHER };
static const char *const col_names[] = {"index",       "uuid",         "name",       "pci.bus_id",
                                        "memory.used", "memory.total", "memory.free"};

#define MAX_COLS 64

struct field {
    const char *p;
    size_t n;
};

static void trim(struct field *f)
{
    while (f->n && (*f->p == ' ' || *f->p == '\t')) {
        f->p++;
        f->n--;
    }
    while (f->n && (f->p[f->n - 1] == ' ' || f->p[f->n - 1] == '\t' || f->p[f->n - 1] == '\r'))
        f->n--;
}

/* Split line[0..n) at commas. Returns the field count, or MAX_COLS + 1 when there are more. */
static size_t split(const char *line, size_t n, struct field *f)
{
    size_t k = 0;
    const char *s = line, *end = line + n;
    for (;;) {
        const char *c = memchr(s, ',', (size_t)(end - s));
        if (k == MAX_COLS)
            return MAX_COLS + 1;
        f[k].p = s;
        f[k].n = (size_t)((c ? c : end) - s);
        trim(&f[k]);
        k++;
        if (!c)
            return k;
        s = c + 1;
    }
}

static bool is(const struct field *f, const char *s)
{
    return f->n == strlen(s) && !memcmp(f->p, s, f->n);
}

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

/* A memory figure: "20190 MiB", "20190" (unit from the header or MiB), "[N/A]". */
static int memory(const struct field *f, const char *col, const char *where, int line, bool *has,
                  uint64_t *v, struct sw_err *e)
{
    if (is(f, "[N/A]") || is(f, "[Not Supported]") || is(f, "N/A")) {
        *has = false;
        return 0;
    }
    size_t n = f->n;
    if (n > 4 && !memcmp(f->p + n - 4, " MiB", 4))
        n -= 4;
    if (n && f->p[0] == '-')
        return sw__readings_err(e, SW_ERANGE, where, line, TOOL, "%s: \"%.*s\" is negative", col,
                                (int)(f->n > 64 ? 64 : f->n), f->p);
    int rc = sw__readings_u64(f->p, n, SW__MIB, v);
    if (rc == -2)
        return sw__readings_err(e, SW_ERANGE, where, line, TOOL,
                                "%s: \"%.*s\" MiB is more bytes than a device holds (2^63)", col,
                                (int)(f->n > 64 ? 64 : f->n), f->p);
    if (rc)
        return sw__readings_err(e, SW_EPARSE, where, line, TOOL,
                                "%s: \"%.*s\" is not a number of MiB (nor [N/A])", col,
                                (int)(f->n > 64 ? 64 : f->n), f->p);
    *has = true;
    return 0;
}

/* The header's columns: pos[c] is the field index of column c, or -1. */
static int header(const struct field *f, size_t nf, const char *where, int *pos, struct sw_err *e)
{
    for (int c = 0; c < C_OTHER; c++)
        pos[c] = -1;
    for (size_t i = 0; i < nf; i++) {
        struct field name = f[i];
        const char *br = memchr(name.p, '[', name.n);
        if (br) {
            struct field unit = {br + 1, (size_t)(name.p + name.n - br - 1)};
            if (!unit.n || unit.p[unit.n - 1] != ']')
                return sw__readings_err(e, SW_EPARSE, where, 1, TOOL,
                                        "header column %zu: \"%.*s\": unclosed [unit]", i + 1,
                                        (int)(name.n > 64 ? 64 : name.n), name.p);
            unit.n--;
            name.n = (size_t)(br - name.p);
            trim(&name);
            bool mem = name.n > 7 && !memcmp(name.p, "memory.", 7);
            if (mem && !is(&unit, "MiB"))
                return sw__readings_err(e, SW_EPARSE, where, 1, TOOL,
                                        "header column %zu: %.*s in [%.*s]: only MiB is read",
                                        i + 1, (int)name.n, name.p,
                                        (int)(unit.n > 16 ? 16 : unit.n), unit.p);
        }
        for (int c = 0; c < C_OTHER; c++) {
            if (!is(&name, col_names[c]))
                continue;
            if (pos[c] >= 0)
                return sw__readings_err(e, SW_EPARSE, where, 1, TOOL,
                                        "header: column %s twice (%d and %zu)", col_names[c],
                                        pos[c] + 1, i + 1);
            pos[c] = (int)i;
        }
    }
    if (pos[C_INDEX] < 0 || pos[C_USED] < 0 || pos[C_TOTAL] < 0)
        return sw__readings_err(e, SW_EPARSE, where, 1, TOOL,
                                "header lacks %s: query index, memory.used and memory.total",
                                pos[C_INDEX] < 0  ? "index"
                                : pos[C_USED] < 0 ? "memory.used"
                                                  : "memory.total");
    return 0;
}

static int row(const struct field *f, size_t nf, const int *pos, const char *line, size_t len,
               const char *where, int ln, struct sw_readings *rs, struct sw_err *e)
{
    struct sw_reading *r;
    int rc = sw__readings_push(rs, where, TOOL, &r, e);
    if (rc)
        return rc;
    (void)nf;
    r->vendor = "nvidia";
    r->line = ln;
    sw_utf8_repair(line, len, r->origin, sizeof(r->origin), NULL);
    const struct field *idx = &f[pos[C_INDEX]];
    if (sw__readings_u64(idx->p, idx->n, 1, &r->index) || r->index > UINT32_MAX)
        return sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                "index: \"%.*s\" is not a device index",
                                (int)(idx->n > 64 ? 64 : idx->n), idx->p);
    static const struct {
        enum col c;
        size_t off, n;
    } strs[] = {
        {C_UUID, offsetof(struct sw_reading, uuid), sizeof(((struct sw_reading *)0)->uuid)},
        {C_NAME, offsetof(struct sw_reading, name), sizeof(((struct sw_reading *)0)->name)},
        {C_BUS, offsetof(struct sw_reading, bus_id), sizeof(((struct sw_reading *)0)->bus_id)},
    };
    for (size_t k = 0; k < SW_ARRAY_LEN(strs); k++) {
        if (pos[strs[k].c] < 0)
            continue;
        const struct field *s = &f[pos[strs[k].c]];
        if (is(s, "[N/A]") || is(s, "[Not Supported]"))
            continue;
        if (!sw__readings_copy((char *)r + strs[k].off, strs[k].n, s->p, s->n))
            return sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                    "%s: longer than %zu bytes, or not text", col_names[strs[k].c],
                                    strs[k].n - 1);
    }
    rc = memory(&f[pos[C_USED]], "memory.used", where, ln, &r->has_used, &r->used_bytes, e);
    if (!rc)
        rc = memory(&f[pos[C_TOTAL]], "memory.total", where, ln, &r->has_total, &r->total_bytes, e);
    if (!rc && pos[C_FREE] >= 0)
        rc = memory(&f[pos[C_FREE]], "memory.free", where, ln, &r->has_free, &r->free_bytes, e);
    return rc;
}

int sw_readings_nvidia_smi(const char *text, size_t len, const char *where, struct sw_readings *out,
                           struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    out->tool = SW_READINGS_NVIDIA_SMI;
    if (!text && len)
        return sw__readings_err(e, SW_EINVAL, where, 0, TOOL, "no text");
    if (len > SW_READINGS_MAX_INPUT)
        return sw__readings_err(e, SW_EINVAL, where, 0, TOOL, "%zu bytes: more than %u", len,
                                SW_READINGS_MAX_INPUT);
    struct field f[MAX_COLS];
    int pos[C_OTHER];
    int ncols = 0; /* fields a row must have; 0 until the first line decides */
    int rc = 0;
    const char *p = text ? text : "";
    size_t bom = len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3) ? 3 : 0;
    struct sw_lines it;
    struct sw_line l;
    sw_lines_init(&it, p + bom, len - bom, SIZE_MAX, SW_LINES_CRLF);
    while (sw_lines_next(&it, &l)) {
        const char *line = l.s;
        size_t n = l.len;
        int ln = it.no;
        if (blank(line, n))
            continue;
        if (memchr(line, '\0', n)) {
            rc = sw__readings_err(e, SW_EPARSE, where, ln, TOOL, "a NUL byte: not text");
            goto out;
        }
        size_t nf = split(line, n, f);
        if (nf > MAX_COLS) {
            rc = sw__readings_err(e, SW_EPARSE, where, ln, TOOL, "more than %d columns", MAX_COLS);
            goto out;
        }
        if (!ncols) {
            bool has_header = false;
            for (size_t i = 0; i < nf; i++)
                has_header |= f[i].n >= 7 && !memcmp(f[i].p, "memory.", 7);
            if (has_header) {
                rc = header(f, nf, where, pos, e);
                if (rc)
                    goto out;
                ncols = (int)nf;
                continue;
            }
            /* noheader: the order slipway queries */
            if (nf != 5 && nf != 6) {
                rc = sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                      "%zu field%s and no header: expected index, uuid, name, "
                                      "memory.used, memory.total[, memory.free] (\"%.*s\")",
                                      nf, nf == 1 ? "" : "s", (int)(n > 80 ? 80 : n), line);
                goto out;
            }
            for (int c = 0; c < C_OTHER; c++)
                pos[c] = -1;
            pos[C_INDEX] = 0, pos[C_UUID] = 1, pos[C_NAME] = 2, pos[C_USED] = 3, pos[C_TOTAL] = 4;
            if (nf == 6)
                pos[C_FREE] = 5;
            ncols = (int)nf;
        }
        if ((int)nf != ncols) {
            rc = sw__readings_err(e, SW_EPARSE, where, ln, TOOL,
                                  "%zu field%s where %s has %d (a truncated or foreign line: "
                                  "\"%.*s\")",
                                  nf, nf == 1 ? "" : "s", ln > 1 ? "the first line" : "a row",
                                  ncols, (int)(n > 80 ? 80 : n), line);
            goto out;
        }
        rc = row(f, nf, pos, line, n, where, ln, out, e);
        if (rc)
            goto out;
    }
out:
    return sw__readings_close(out, rc, ncols ? NULL : "empty output: no header, no GPU", where,
                              TOOL, e);
}
