/*
 * model/gguf: the GGUF header reader (v2, v3), hardened against hostile files.
 *
 * It reads the header with bounded, buffered reads from a file descriptor (or from memory for the
 * fuzzer), never the tensor data: a model is up to hundreds of GB, its header a few MB. Before
 * anything is allocated, every count, string length and array count is checked against the bytes
 * that remain (with overflow checks), and the header as a whole may not exceed SW_GGUF_MAX_HEADER,
 * so a 40-byte file that claims 2^62 strings fails at once instead of asking for exabytes.
 * Everything a parse keeps lives in one arena (see gguf_internal.h).
 *
 * Checks beyond llama.cpp's own gguf.cpp: tensor dimensions must be > 0, tensor data must lie
 * inside the file and tensors may not overlap (llama.cpp instead requires the exact sequential
 * layout its writer produces; we accept any aligned, disjoint layout), and split sets are checked
 * for completeness and consistency whichever part is opened.
 *
 * Two relaxations a caller asks for: header_only accepts a file whose tensor data is absent (the
 * header alone was copied, or a download was cut inside the data) and says so; and a head held in
 * memory (sw_gguf_parse_head: the first bytes of a file read by ranges on another machine) is
 * parsed against the whole file's size, and when the header goes on past the bytes held the
 * reader says how far at least it goes, so the caller reads exactly that much more.
 *
 * What it does not do: read, map or validate tensor data, or interpret metadata (model/arch).
 */
#include <slipway/gguf.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/gguf_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host (GGUF files are little-endian)"
#endif

/* Names are limited as in ggml (GGML_MAX_NAME = 64 including the NUL). */
#define GGML_MAX_NAME          64
#define GGUF_DEFAULT_ALIGNMENT 32
/* The smallest a key/value or a tensor info can be in the file, used to bound counts before any
 * allocation: key length (8) + 1 key byte + type (4) + 1 value byte; name length (8) + 1 name
 * byte + n_dims (4) + type (4) + offset (8). */
#define MIN_KV_BYTES     14u
#define MIN_TENSOR_BYTES 25u
#define READ_BUF         (256u * 1024u)

/* ---------------------------------------------------------------------------------------------
 * Bounded reader over a file descriptor (buffered) or a memory block.
 */
struct rd {
    const uint8_t *mem; /* memory source, or NULL for fd */
    int fd;
    uint8_t *buf; /* fd window [boff, boff + blen) */
    size_t bcap;
    size_t blen;
    uint64_t boff;
    uint64_t off;     /* next byte to read */
    uint64_t size;    /* the file's size */
    uint64_t limit;   /* min(size, SW_GGUF_MAX_HEADER): where the header must end */
    uint64_t avail;   /* bytes held to read from: the file's, or a head's (<= size) */
    uint64_t rest;    /* the fewest header bytes that must follow the field being read */
    uint64_t need;    /* set when a head ends inside the header: the least it must hold */
    bool header_only; /* tensor data may be absent */
    const char *where;
    struct sw_err *e;
    /* what is being read, for error messages */
    const char *subj_kind;             /* "key", "tensor" or NULL */
    const char *subj;                  /* its name when known */
    int64_t subj_idx;                  /* its position */
    const struct sw_gguf_types *types; /* fork types declared to the reader, or NULL */
};

static int rd_fail(struct rd *r, int code, uint64_t at, const char *fmt, ...) SW_PRINTF(4, 5);

static int rd_fail(struct rd *r, int code, uint64_t at, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->subj_kind && r->subj)
        return sw_err_at_offset(r->e, code, r->where, (int64_t)at, "%s '%.200s': %s", r->subj_kind,
                                r->subj, msg);
    if (r->subj_kind)
        return sw_err_at_offset(r->e, code, r->where, (int64_t)at, "%s #%" PRId64 ": %s",
                                r->subj_kind, r->subj_idx, msg);
    return sw_err_at_offset(r->e, code, r->where, (int64_t)at, "%s", msg);
}

static uint64_t rd_left(const struct rd *r)
{
    return r->off < r->limit ? r->limit - r->off : 0;
}

/* Fail unless n more header bytes exist at r->off; `at` is the offset to report (the start of
 * the field that claimed them). `what` names the field. */
static int rd_need_at(struct rd *r, uint64_t n, uint64_t at, const char *what)
{
    if (n <= rd_left(r)) {
        if (r->off + n <= r->avail)
            return 0;
        /* a head read by ranges: the header goes on past the bytes held. Say how far at least
         * (this field, then the fewest bytes the fields still to come take), never past where
         * the header must end */
        uint64_t need = r->off + n;
        if (!sw_add_ok(need, r->rest, &need) || need > r->limit)
            need = r->limit;
        r->need = need;
        return rd_fail(r, SW_ETRUNC, at,
                       "%s: the header goes on past the %" PRIu64 " bytes held (at least %" PRIu64
                       " of the %" PRIu64 "-byte file)",
                       what, r->avail, need, r->size);
    }
    uint64_t in_file = r->size - SW_MIN(r->off, r->size);
    if (n <= in_file)
        return rd_fail(r, SW_ERANGE, at,
                       "%s would take the header past %" PRIu64 " MiB, more than any real GGUF "
                       "header (slipway stops there)",
                       what, (uint64_t)(SW_GGUF_MAX_HEADER / SW_MIB));
    /* past the end of the file: absurd (hostile) or plausibly a cut-short download */
    if (n > r->size && n > SW_GGUF_MAX_HEADER)
        return rd_fail(r, SW_ERANGE, at,
                       "%s claims %" PRIu64 " bytes, more than the whole file (%" PRIu64 " bytes)",
                       what, n, r->size);
    return rd_fail(r, SW_ETRUNC, at,
                   "file ends inside %s (%" PRIu64 " bytes needed, %" PRIu64 " left of %" PRIu64
                   "): truncated",
                   what, n, in_file, r->size);
}

static int rd_need(struct rd *r, uint64_t n, const char *what)
{
    return rd_need_at(r, n, r->off, what);
}

static int rd_pread(struct rd *r, void *dst, size_t n, uint64_t at, size_t *got)
{
    *got = 0;
    while (*got < n) {
        ssize_t k = pread(r->fd, (char *)dst + *got, n - *got, (off_t)(at + *got));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return sw_err_at_offset(r->e, SW_EIO, r->where, (int64_t)(at + *got), "read failed: %s",
                                    strerror(errno));
        }
        if (k == 0)
            break;
        *got += (size_t)k;
    }
    return 0;
}

static int rd_read(struct rd *r, void *dst, size_t n, const char *what)
{
    int rc = rd_need(r, n, what);
    if (rc)
        return rc;
    if (r->mem) {
        memcpy(dst, r->mem + r->off, n);
        r->off += n;
        return 0;
    }
    uint8_t *d = dst;
    while (n) {
        if (r->off >= r->boff && r->off < r->boff + r->blen) {
            size_t at = (size_t)(r->off - r->boff);
            size_t k = SW_MIN(n, r->blen - at);
            memcpy(d, r->buf + at, k);
            d += k;
            n -= k;
            r->off += k;
            continue;
        }
        size_t got = 0;
        if (n >= r->bcap) {
            rc = rd_pread(r, d, n, r->off, &got);
            if (rc)
                return rc;
            if (got < n)
                goto shrank;
            r->off += n;
            return 0;
        }
        rc = rd_pread(r, r->buf, r->bcap, r->off, &got);
        if (rc)
            return rc;
        if (!got)
            goto shrank;
        r->boff = r->off;
        r->blen = got;
    }
    return 0;
shrank:
    return sw_err_at_offset(r->e, SW_ETRUNC, r->where, (int64_t)r->off,
                            "the file got shorter while being read (%s)", what);
}

static int rd_u32(struct rd *r, uint32_t *v, const char *what)
{
    return rd_read(r, v, 4, what);
}

static int rd_u64(struct rd *r, uint64_t *v, const char *what)
{
    return rd_read(r, v, 8, what);
}

/* Read a GGUF string (u64 length + bytes) into the arena, NUL-terminated. */
static int rd_str(struct rd *r, struct sw__arena *a, struct sw_gguf_str *out, const char *what)
{
    uint64_t len;
    uint64_t at = r->off;
    int rc = rd_u64(r, &len, what);
    if (rc)
        return rc;
    rc = rd_need_at(r, len, at, what);
    if (rc)
        return rc;
    out->s = sw__arena_alloc(a, (size_t)len + 1);
    if (!out->s)
        return sw_err_set(r->e, SW_ENOMEM, "out of memory reading %s", r->where);
    rc = rd_read(r, out->s, (size_t)len, what);
    if (rc)
        return rc;
    out->s[len] = '\0';
    out->len = len;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Header parse
 */
static int check_arena(struct rd *r, struct sw__arena *a)
{
    if (a->bytes > SW_GGUF_MAX_HEADER_MEM)
        return rd_fail(r, SW_ERANGE, r->off,
                       "the header would need more than %" PRIu64
                       " MiB of memory once parsed; no real GGUF header does",
                       (uint64_t)(SW_GGUF_MAX_HEADER_MEM / SW_MIB));
    return 0;
}

static void widen(enum sw_gguf_type t, const uint8_t *p, struct sw_gguf_value *v, uint64_t i,
                  bool array)
{
    uint64_t u = 0;
    int64_t s = 0;
    double f = 0;
    bool b = false;
    switch (t) {
    case SW_GGUF_UINT8:
        u = p[0];
        break;
    case SW_GGUF_INT8:
        s = (int8_t)p[0];
        break;
    case SW_GGUF_UINT16: {
        uint16_t x;
        memcpy(&x, p, 2);
        u = x;
        break;
    }
    case SW_GGUF_INT16: {
        int16_t x;
        memcpy(&x, p, 2);
        s = x;
        break;
    }
    case SW_GGUF_UINT32: {
        uint32_t x;
        memcpy(&x, p, 4);
        u = x;
        break;
    }
    case SW_GGUF_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        s = x;
        break;
    }
    case SW_GGUF_FLOAT32: {
        float x;
        memcpy(&x, p, 4);
        f = x;
        break;
    }
    case SW_GGUF_BOOL:
        b = p[0] != 0;
        break;
    case SW_GGUF_UINT64:
        memcpy(&u, p, 8);
        break;
    case SW_GGUF_INT64:
        memcpy(&s, p, 8);
        break;
    case SW_GGUF_FLOAT64:
        memcpy(&f, p, 8);
        break;
    default:
        break;
    }
    bool is_u =
        t == SW_GGUF_UINT8 || t == SW_GGUF_UINT16 || t == SW_GGUF_UINT32 || t == SW_GGUF_UINT64;
    bool is_f = t == SW_GGUF_FLOAT32 || t == SW_GGUF_FLOAT64;
    if (!array) {
        if (t == SW_GGUF_BOOL)
            v->as.b = b;
        else if (is_u)
            v->as.u = u;
        else if (is_f)
            v->as.f = f;
        else
            v->as.i = s;
        return;
    }
    if (t == SW_GGUF_BOOL)
        v->as.arr.v.b[i] = b;
    else if (is_u)
        v->as.arr.v.u[i] = u;
    else if (is_f)
        v->as.arr.v.f[i] = f;
    else
        v->as.arr.v.i[i] = s;
}

static int read_array(struct rd *r, struct sw__arena *a, struct sw_gguf_value *v)
{
    uint32_t et;
    uint64_t n;
    uint64_t at = r->off;
    int rc = rd_u32(r, &et, "array element type");
    if (rc)
        return rc;
    if (et == SW_GGUF_ARRAY)
        return rd_fail(r, SW_EPARSE, at, "nested arrays are not allowed in GGUF metadata");
    if (et >= SW_GGUF__NTYPES)
        return rd_fail(r, SW_EPARSE, at, "array element type %" PRIu32 " is not a GGUF type", et);
    at = r->off;
    rc = rd_u64(r, &n, "array count");
    if (rc)
        return rc;
    v->as.arr.elem = (enum sw_gguf_type)et;
    v->as.arr.n = n;
    size_t esz = sw__gguf_type_size(et);
    uint64_t min_bytes;
    /* every string element takes at least its 8-byte length */
    if (!sw_mul_ok(n, esz ? esz : 8, &min_bytes))
        return rd_fail(r, SW_ERANGE, at, "array of %" PRIu64 " %s overflows 64-bit sizes", n,
                       sw_gguf_type_name((enum sw_gguf_type)et));
    if (min_bytes > rd_left(r)) {
        char what[96];
        snprintf(what, sizeof(what), "array of %" PRIu64 " %s", n,
                 sw_gguf_type_name((enum sw_gguf_type)et));
        return rd_need_at(r, min_bytes, at, what);
    }
    size_t slot = et == SW_GGUF_STRING ? sizeof(struct sw_gguf_str)
                  : et == SW_GGUF_BOOL ? sizeof(bool)
                                       : 8;
    /* n <= header size / 1, so n * 16 cannot overflow */
    void *arr = sw__arena_alloc(a, (size_t)(n * slot));
    if (!arr)
        return sw_err_set(r->e, SW_ENOMEM, "out of memory reading %s", r->where);
    rc = check_arena(r, a);
    if (rc)
        return rc;
    v->as.arr.v.u = arr; /* the union members alias the same pointer */
    if (et == SW_GGUF_STRING) {
        struct sw_gguf_str *s = arr;
        uint64_t after = r->rest; /* what follows the array */
        for (uint64_t i = 0; i < n; i++) {
            s[i].s = NULL;
            s[i].len = 0;
        }
        for (uint64_t i = 0; i < n; i++) {
            /* the strings still to come take their 8-byte lengths at least (n * 8 fits: it
             * was checked against the bytes left above) */
            r->rest = after + (n - i - 1) * 8;
            rc = rd_str(r, a, &s[i], "array string");
            if (rc)
                return rc;
            if ((i & 4095) == 4095) {
                rc = check_arena(r, a);
                if (rc)
                    return rc;
            }
        }
        r->rest = after;
        return check_arena(r, a);
    }
    uint8_t tmp[4096];
    uint64_t per = sizeof(tmp) / esz;
    uint64_t after = r->rest;
    for (uint64_t i = 0; i < n;) {
        uint64_t k = SW_MIN(per, n - i);
        r->rest = after + (n - i - k) * esz;
        rc = rd_read(r, tmp, (size_t)(k * esz), "array elements");
        if (rc)
            return rc;
        for (uint64_t j = 0; j < k; j++)
            widen((enum sw_gguf_type)et, tmp + j * esz, v, i + j, true);
        i += k;
    }
    r->rest = after;
    return 0;
}

static int read_value(struct rd *r, struct sw__arena *a, struct sw_gguf_value *v)
{
    uint32_t t;
    uint64_t at = r->off;
    int rc = rd_u32(r, &t, "value type");
    if (rc)
        return rc;
    if (t >= SW_GGUF__NTYPES)
        return rd_fail(r, SW_EPARSE, at, "value type %" PRIu32 " is not a GGUF type (0..12)", t);
    v->type = (enum sw_gguf_type)t;
    if (t == SW_GGUF_ARRAY)
        return read_array(r, a, v);
    if (t == SW_GGUF_STRING)
        return rd_str(r, a, &v->as.str, "string value");
    uint8_t tmp[8];
    rc = rd_read(r, tmp, sw__gguf_type_size(t), "value");
    if (rc)
        return rc;
    widen((enum sw_gguf_type)t, tmp, v, 0, false);
    return 0;
}

static int read_tensor_info(struct rd *r, struct sw_gguf *g, uint64_t i, uint64_t *info_off)
{
    struct sw__arena *a = &g->priv->arena;
    struct sw_gguf_tensor *t = &g->tensors[i];
    uint64_t at = r->off;
    *info_off = at;
    r->subj_kind = "tensor";
    r->subj = NULL;
    r->subj_idx = (int64_t)i;
    int rc = rd_str(r, a, &t->name, "tensor name");
    if (rc)
        return rc;
    if (t->name.len == 0)
        return rd_fail(r, SW_EPARSE, at, "empty tensor name");
    r->subj = t->name.s;
    if (t->name.len >= GGML_MAX_NAME)
        return rd_fail(r, SW_EPARSE, at, "tensor name is %" PRIu64 " bytes; ggml allows at most %d",
                       t->name.len, GGML_MAX_NAME - 1);
    if (memchr(t->name.s, '\0', (size_t)t->name.len))
        return rd_fail(r, SW_EPARSE, at, "tensor name contains a NUL byte");
    int64_t dup = sw__gguf_tensor_index(g, i);
    if (dup >= 0)
        return rd_fail(r, SW_EPARSE, at,
                       "duplicate tensor name (tensors #%" PRId64 " and #%" PRIu64 ")", dup, i);
    uint64_t dims_at = r->off;
    rc = rd_u32(r, &t->n_dims, "tensor dimension count");
    if (rc)
        return rc;
    if (t->n_dims > SW_GGUF_MAX_DIMS)
        return rd_fail(r, SW_EPARSE, dims_at, "%" PRIu32 " dimensions; ggml allows at most %d",
                       t->n_dims, SW_GGUF_MAX_DIMS);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < SW_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d >= t->n_dims)
            continue;
        uint64_t ne_at = r->off;
        rc = rd_u64(r, &t->ne[d], "tensor dimension");
        if (rc)
            return rc;
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
            return rd_fail(r, SW_EPARSE, ne_at,
                           "dimension %" PRIu32 " is %" PRId64
                           "; it must be a positive element count",
                           d, (int64_t)t->ne[d]);
        if (!sw_mul_ok(nel, t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return rd_fail(r, SW_ERANGE, ne_at,
                           "shape overflows: the element count passes 2^63 at dimension %" PRIu32,
                           d);
    }
    uint64_t type_at = r->off;
    rc = rd_u32(r, &t->type, "tensor type");
    if (rc)
        return rc;
    const struct sw_ggml_type *ty =
        sw__ggml_type_in(r->types ? r->types->types : NULL, r->types ? r->types->n : 0, t->type);
    if (!ty) {
        const char *old = sw__ggml_removed_name(t->type);
        if (old)
            return rd_fail(r, SW_EUNSUPPORTED, type_at,
                           "type %" PRIu32 " (%s) was removed from GGUF files by ggml; "
                           "requantize the model",
                           t->type, old);
        return rd_fail(r, SW_EPARSE, type_at,
                       "type %" PRIu32 " is not a ggml type (the pinned ggml knows 0..%" PRIu32
                       ")%s%s; if a fork build reads it, declare it in the endpoint's fork "
                       "profile: gguf_types: [{id: %" PRIu32
                       ", name: NAME, block_size: N, type_size: M}] (elements and bytes per "
                       "block, from the fork's ggml type traits)",
                       t->type, sw__ggml_type_count() - 1,
                       r->types && r->types->declared_by ? " nor declared by " : "",
                       r->types && r->types->declared_by ? r->types->declared_by : "", t->type);
    }
    if (t->ne[0] % ty->blck)
        return rd_fail(r, SW_EPARSE, type_at,
                       "row of %" PRIu64
                       " elements is not a multiple of the %s block size %" PRIu32,
                       t->ne[0], ty->name, ty->blck);
    uint64_t row, nbytes = 0;
    if (!sw_mul_ok(t->ne[0] / ty->blck, ty->size, &row) || !sw_mul_ok(row, nel / t->ne[0], &nbytes))
        return rd_fail(r, SW_ERANGE, type_at, "size in bytes overflows 64 bits");
    t->nbytes = nbytes;
    rc = rd_u64(r, &t->offset, "tensor data offset");
    if (rc)
        return rc;
    t->split = 0;
    return 0;
}

struct span {
    uint64_t start;
    uint64_t end;
    uint64_t idx;
};

static int span_cmp(const void *pa, const void *pb)
{
    const struct span *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Tensor data: aligned, inside the file, disjoint. Reading the header only, data past the end of
 * the file is allowed and marks the header header_only; the rest is checked all the same. */
static int check_layout(struct rd *r, struct sw_gguf *g, const uint64_t *info_off)
{
    int rc = 0;
    struct span *sp = NULL;
    r->subj_kind = "tensor";
    if (g->n_tensors == 0)
        return 0;
    if (g->data_offset > r->size && !r->header_only) {
        r->subj_kind = NULL;
        return rd_fail(r, SW_ETRUNC, r->size,
                       "file ends at byte %" PRIu64 " before its tensor data starts (byte %" PRIu64
                       "): truncated",
                       r->size, g->data_offset);
    }
    uint64_t room = g->data_offset < r->size ? r->size - g->data_offset : 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct sw_gguf_tensor *t = &g->tensors[i];
        uint64_t end;
        r->subj = t->name.s;
        if (t->offset % g->alignment)
            return rd_fail(r, SW_EPARSE, info_off[i],
                           "data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                           t->offset, g->alignment);
        if (t->offset > room || t->nbytes > room - t->offset) {
            if (!r->header_only)
                return rd_fail(r, SW_ETRUNC, info_off[i],
                               "data [%" PRIu64 ", +%" PRIu64 ") at file byte %" PRIu64
                               " ends past the end of the file (%" PRIu64
                               " bytes): truncated or corrupt",
                               t->offset, t->nbytes,
                               t->offset <= UINT64_MAX - g->data_offset ? g->data_offset + t->offset
                                                                        : UINT64_MAX,
                               r->size);
            /* absent data still has a place in 64-bit file offsets */
            if (!sw_add_ok(t->offset, t->nbytes, &end) || !sw_add_ok(end, g->data_offset, &end))
                return rd_fail(r, SW_ERANGE, info_off[i],
                               "data [%" PRIu64 ", +%" PRIu64 ") ends past 2^64", t->offset,
                               t->nbytes);
            g->header_only = true;
        }
        if (!sw_add_ok(g->tensor_bytes, t->nbytes, &g->tensor_bytes))
            return rd_fail(r, SW_ERANGE, info_off[i], "total tensor bytes overflow");
    }
    sp = sw_malloc((size_t)g->n_tensors * sizeof(*sp));
    if (!sp)
        return sw_err_set(r->e, SW_ENOMEM, "out of memory checking %s", r->where);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        sp[i].start = g->tensors[i].offset;
        sp[i].end = g->tensors[i].offset + g->tensors[i].nbytes;
        sp[i].idx = i;
    }
    qsort(sp, (size_t)g->n_tensors, sizeof(*sp), span_cmp);
    for (uint64_t i = 1; i < g->n_tensors; i++) {
        if (sp[i].start < sp[i - 1].end) {
            const struct sw_gguf_tensor *a = &g->tensors[sp[i - 1].idx];
            r->subj = g->tensors[sp[i].idx].name.s;
            rc = rd_fail(r, SW_EPARSE, info_off[sp[i].idx],
                         "data [%" PRIu64 ", %" PRIu64 ") overlaps tensor '%s' [%" PRIu64
                         ", %" PRIu64 ")",
                         sp[i].start, sp[i].end, a->name.s, sp[i - 1].start, sp[i - 1].end);
            break;
        }
    }
    sw_free(sp);
    return rc;
}

static int not_gguf(struct rd *r, const uint8_t *head, size_t n)
{
    char what[256];
    sw_sniff(head, n, what, sizeof(what));
    if (n == 0)
        return sw_err_at_offset(r->e, SW_EPARSE, r->where, 0,
                                "not a GGUF file: it is empty (0 bytes)");
    if (n < 4 && !memcmp(head, "GGUF", n))
        return sw_err_at_offset(r->e, SW_ETRUNC, r->where, (int64_t)n,
                                "truncated GGUF file: only %zu bytes", n);
    return sw_err_at_offset(r->e, SW_EPARSE, r->where, 0, "not a GGUF file: it looks like %s",
                            what);
}

/* Magic and version: anything but GGUF v2/v3 is said for what it is (a sniffed stand-in, v1, a
 * big-endian file, an unknown version). */
static int read_preamble(struct rd *r, struct sw_gguf *g)
{
    /* anything else is sniffed, so an HTML page or a git-lfs pointer saved as .gguf says what it
     * is */
    uint8_t head[64] = {0};
    size_t hn = (size_t)SW_MIN(r->size, sizeof(head));
    if (hn) {
        int rc = rd_read(r, head, hn, "magic");
        if (rc)
            return rc;
        r->off = 0;
    }
    if (hn < 4 || memcmp(head, "GGUF", 4))
        return not_gguf(r, head, hn);
    r->off = 4;
    uint32_t version;
    int rc = rd_u32(r, &version, "version");
    if (rc)
        return rc;
    if (version == 1)
        return sw_err_at_offset(r->e, SW_EUNSUPPORTED, r->where, 4,
                                "GGUF version 1 is no longer supported (llama.cpp dropped it too); "
                                "reconvert the model");
    if (version && (version & 0xFFFFu) == 0)
        return sw_err_at_offset(r->e, SW_EUNSUPPORTED, r->where, 4,
                                "GGUF version field 0x%08" PRIx32
                                " looks byte-swapped: a big-endian GGUF; only little-endian files "
                                "are supported",
                                version);
    if (version != 2 && version != 3)
        return sw_err_at_offset(r->e, SW_EUNSUPPORTED, r->where, 4,
                                "GGUF version %" PRIu32 " is not supported (2 and 3 are)", version);
    g->version = version;
    return 0;
}

/* The tensor and key counts, bounded by the bytes that remain before anything is allocated, then
 * the arrays and indexes they size (*info_off: where each tensor info starts, sw_free it). */
static int read_counts(struct rd *r, struct sw_gguf *g, uint64_t **info_off)
{
    uint64_t nt_at = r->off;
    int rc = rd_u64(r, &g->n_tensors, "tensor count");
    if (rc)
        return rc;
    rc = rd_u64(r, &g->n_kv, "metadata count");
    if (rc)
        return rc;
    uint64_t need_kv, need_t, need;
    if (!sw_mul_ok(g->n_kv, MIN_KV_BYTES, &need_kv) ||
        !sw_mul_ok(g->n_tensors, MIN_TENSOR_BYTES, &need_t) || !sw_add_ok(need_kv, need_t, &need) ||
        need > rd_left(r)) {
        bool absurd = !sw_mul_ok(g->n_kv, MIN_KV_BYTES, &need_kv) ||
                      !sw_mul_ok(g->n_tensors, MIN_TENSOR_BYTES, &need_t) ||
                      !sw_add_ok(need_kv, need_t, &need) || need > SW_GGUF_MAX_HEADER;
        return sw_err_at_offset(
            r->e, absurd ? SW_ERANGE : SW_ETRUNC, r->where, (int64_t)nt_at,
            "header claims %" PRIu64 " tensors and %" PRIu64
            " metadata keys, which cannot fit in the %" PRIu64 " bytes that remain%s",
            g->n_tensors, g->n_kv, rd_left(r), absurd ? "" : " (truncated file?)");
    }
    struct sw__arena *a = &g->priv->arena;
    g->kv = sw__arena_alloc(a, (size_t)(g->n_kv ? g->n_kv : 1) * sizeof(*g->kv));
    g->tensors =
        sw__arena_alloc(a, (size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(*g->tensors));
    *info_off = sw_malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(**info_off));
    if (!g->kv || !g->tensors || !*info_off || sw__index_init(a, &g->priv->kv_index, g->n_kv) ||
        sw__index_init(a, &g->priv->t_index, g->n_tensors))
        return sw_err_set(r->e, SW_ENOMEM, "out of memory reading %s", r->where);
    memset(g->kv, 0, (size_t)g->n_kv * sizeof(*g->kv));
    memset(g->tensors, 0, (size_t)g->n_tensors * sizeof(*g->tensors));
    return 0;
}

/* The key/values: no empty or duplicate key, the header's memory checked after each. */
static int read_kvs(struct rd *r, struct sw_gguf *g)
{
    struct sw__arena *a = &g->priv->arena;
    /* each entry is indexed only once its key is read, so the index (which looks entries up by
     * position) never sees a half-read entry */
    for (uint64_t i = 0; i < g->n_kv; i++) {
        struct sw_gguf_kv *kv = &g->kv[i];
        /* the entries still to come (the counts were checked against the bytes left) */
        r->rest = (g->n_kv - i - 1) * MIN_KV_BYTES + g->n_tensors * MIN_TENSOR_BYTES;
        kv->offset = r->off;
        r->subj_kind = "key";
        r->subj = NULL;
        r->subj_idx = (int64_t)i;
        int rc = rd_str(r, a, &kv->key, "key");
        if (rc)
            return rc;
        if (!kv->key.len)
            return rd_fail(r, SW_EPARSE, kv->offset, "empty key");
        r->subj = kv->key.s;
        int64_t dup = sw__gguf_kv_index(g, i);
        if (dup >= 0)
            return rd_fail(r, SW_EPARSE, kv->offset, "duplicate key (first at byte %" PRIu64 ")",
                           g->kv[dup].offset);
        rc = read_value(r, a, &kv->val);
        if (rc)
            return rc;
        rc = check_arena(r, a);
        if (rc)
            return rc;
    }
    r->subj_kind = NULL;
    return 0;
}

/* general.alignment: a u32 nonzero power of two, 32 when absent. */
static int read_alignment(struct rd *r, struct sw_gguf *g)
{
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t ai = sw__gguf_kv_pos(g, "general.alignment", strlen("general.alignment"));
    if (ai < 0)
        return 0;
    const struct sw_gguf_kv *kv = &g->kv[ai];
    if (kv->val.type != SW_GGUF_UINT32)
        return sw_err_at_offset(r->e, SW_EPARSE, r->where, (int64_t)kv->offset,
                                "general.alignment must be u32 (it is %s)",
                                sw_gguf_type_name(kv->val.type));
    uint64_t al = kv->val.as.u;
    if (al == 0 || (al & (al - 1)))
        return sw_err_at_offset(
            r->e, SW_EPARSE, r->where, (int64_t)kv->offset,
            "general.alignment is %" PRIu64 "; it must be a nonzero power of two", al);
    g->alignment = al;
    return 0;
}

/* The tensor infos, then where the data section starts (the next multiple of the alignment: ggml
 * pads only when there are tensors, see gguf_init_from_reader) and the data's layout. */
static int read_tensors(struct rd *r, struct sw_gguf *g, uint64_t *info_off)
{
    int rc;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        r->rest = (g->n_tensors - i - 1) * MIN_TENSOR_BYTES;
        rc = read_tensor_info(r, g, i, &info_off[i]);
        if (rc)
            return rc;
    }
    r->subj_kind = NULL;
    r->rest = 0;
    g->data_offset = r->off;
    if (g->n_tensors) {
        uint64_t pad = (g->alignment - r->off % g->alignment) % g->alignment;
        g->data_offset = r->off + pad;
    }
    rc = check_layout(r, g, info_off);
    if (rc)
        return rc;
    r->subj_kind = NULL;
    return 0;
}

static int parse(struct rd *r, struct sw_gguf **out)
{
    int rc = 0;
    uint64_t *info_off = NULL;
    struct sw_gguf *g = sw_calloc(1, sizeof(*g));
    if (!g)
        return sw_err_set(r->e, SW_ENOMEM, "out of memory reading %s", r->where);
    g->priv = sw_calloc(1, sizeof(*g->priv));
    if (!g->priv) {
        rc = sw_err_set(r->e, SW_ENOMEM, "out of memory reading %s", r->where);
        goto out;
    }
    g->n_splits = 1;
    g->file_size = r->size;
    rc = read_preamble(r, g);
    if (rc)
        goto out;
    rc = read_counts(r, g, &info_off);
    if (rc)
        goto out;
    rc = read_kvs(r, g);
    if (rc)
        goto out;
    rc = read_alignment(r, g);
    if (rc)
        goto out;
    rc = read_tensors(r, g, info_off);
    if (rc)
        goto out;
    *out = g;
    g = NULL;
out:
    sw_free(info_off);
    sw_gguf_free(g);
    return rc;
}

/* A header just parsed (*out) gets its path and the declared types; on OOM it is freed. */
static int keep(struct sw_gguf **out, const char *path, const struct sw_gguf_types *x,
                struct sw_err *e)
{
    (*out)->path = sw_strdup(path);
    if ((*out)->path && !sw__gguf_keep_types(*out, x, e))
        return 0;
    sw_gguf_free(*out);
    *out = NULL;
    return sw_err_set(e, SW_ENOMEM, "out of memory");
}

static void rd_init(struct rd *r, const char *where, struct sw_err *e)
{
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->where = where;
    r->e = e;
}

int sw_gguf_parse_mem(const void *buf, size_t size, const char *where, struct sw_gguf **out,
                      struct sw_err *e)
{
    return sw_gguf_parse_mem_types(buf, size, where, NULL, out, e);
}

int sw_gguf_parse_mem_types(const void *buf, size_t size, const char *where,
                            const struct sw_gguf_types *x, struct sw_gguf **out, struct sw_err *e)
{
    struct sw_gguf_read_opts o = {.types = x};
    return sw_gguf_parse_head(buf, size, size, where, &o, NULL, out, e);
}

int sw_gguf_parse_head(const void *buf, size_t n, uint64_t file_size, const char *where,
                       const struct sw_gguf_read_opts *o, uint64_t *need, struct sw_gguf **out,
                       struct sw_err *e)
{
    struct rd r;
    int rc;
    *out = NULL;
    if (need)
        *need = 0;
    sw_err_clear(e);
    rc = sw_gguf_types_check(o ? o->types : NULL, e);
    if (rc)
        return rc;
    rd_init(&r, where ? where : "<memory>", e);
    r.types = o ? o->types : NULL;
    r.header_only = o && o->header_only;
    r.mem = buf ? buf : (const void *)"";
    r.size = buf ? file_size : 0;
    r.avail = SW_MIN((uint64_t)(buf ? n : 0), r.size);
    r.limit = SW_MIN(r.size, (uint64_t)SW_GGUF_MAX_HEADER);
    rc = parse(&r, out);
    if (rc) {
        if (need && rc == SW_ETRUNC && r.need > r.avail)
            *need = r.need;
        return rc;
    }
    return keep(out, r.where, r.types, e);
}

int sw_gguf_open_single(const char *path, struct sw_gguf **out, struct sw_err *e)
{
    return sw_gguf_open_single_types(path, NULL, out, e);
}

int sw_gguf_open_single_types(const char *path, const struct sw_gguf_types *x, struct sw_gguf **out,
                              struct sw_err *e)
{
    struct sw_gguf_read_opts o = {.types = x};
    return sw_gguf_open_single_opts(path, &o, out, e);
}

int sw_gguf_open_single_opts(const char *path, const struct sw_gguf_read_opts *o,
                             struct sw_gguf **out, struct sw_err *e)
{
    struct rd r;
    struct stat st;
    int rc = 0;
    *out = NULL;
    sw_err_clear(e);
    rc = sw_gguf_types_check(o ? o->types : NULL, e);
    if (rc)
        return rc;
    rd_init(&r, path, e);
    r.types = o ? o->types : NULL;
    r.header_only = o && o->header_only;
    r.fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r.fd < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, path, 0, 0, "cannot open: %s",
                         strerror(errno));
    if (fstat(r.fd, &st) < 0) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = sw_err_at(e, SW_EINVAL, path, 0, 0, "is a directory, not a GGUF file");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = sw_err_at(e, SW_EINVAL, path, 0, 0,
                       "is not a regular file (the reader needs the file size)");
        goto out;
    }
    r.size = (uint64_t)st.st_size;
    r.avail = r.size;
    r.limit = SW_MIN(r.size, (uint64_t)SW_GGUF_MAX_HEADER);
    r.bcap = (size_t)SW_MIN(r.size ? r.size : 1, (uint64_t)READ_BUF);
    r.buf = sw_malloc(r.bcap);
    if (!r.buf) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory reading %s", path);
        goto out;
    }
    rc = parse(&r, out);
    if (rc)
        goto out;
    rc = keep(out, path, r.types, e);
out:
    sw_free(r.buf);
    close(r.fd);
    return rc;
}

void sw_gguf_free(struct sw_gguf *g)
{
    if (!g)
        return;
    if (g->priv) {
        sw__arena_free(&g->priv->arena);
        sw_free(g->priv);
    }
    sw_free(g->path);
    sw_free(g);
}
