/*
 * model/gguf_write: build a GGUF v3 (or v2) file from metadata and tensors, the way ggml lays one
 * out (ggml/src/gguf.cpp gguf_write_to_buf): header, key/values, tensor infos, padding to the
 * alignment, then each tensor's data padded to the alignment, in the order they were added.
 *
 * The writer owns copies of everything it is given (or borrows tensor data on request, or streams
 * it from another file at write time, so a big model is never held in memory). The file is written
 * to a temporary name beside the target, fsynced and renamed: readers see the old file or the new
 * one, never half of one. Values are checked when set (a u8 holding 300 is refused), names and
 * shapes when added, so write() fails only on I/O.
 *
 * What it does not do: quantize, or write big-endian files.
 */
#include <slipway/gguf.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/gguf_internal.h"

#define GGML_MAX_NAME 64

struct wkv {
    char *key;
    struct sw_gguf_value val; /* owned deep copy */
};

struct wtensor {
    char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[SW_GGUF_MAX_DIMS];
    uint64_t nbytes;
    const void *data; /* borrowed, or == owned */
    void *owned;
    char *src_path; /* or streamed from this file at src_off */
    uint64_t src_off;
};

struct sw_gguf_writer {
    uint32_t version;
    uint64_t alignment;
    struct wkv *kv;
    size_t n_kv, cap_kv;
    struct wtensor *t;
    size_t n_t, cap_t;
};

static void value_free(struct sw_gguf_value *v)
{
    if (v->type == SW_GGUF_STRING) {
        sw_free(v->as.str.s);
    } else if (v->type == SW_GGUF_ARRAY) {
        if (v->as.arr.elem == SW_GGUF_STRING && v->as.arr.v.str)
            for (uint64_t i = 0; i < v->as.arr.n; i++)
                sw_free(v->as.arr.v.str[i].s);
        sw_free(v->as.arr.v.u);
    }
    memset(v, 0, sizeof(*v));
}

int sw_gguf_writer_new(struct sw_gguf_writer **out, uint32_t version, uint64_t alignment)
{
    *out = NULL;
    if (version != 2 && version != 3)
        return SW_EINVAL;
    if (alignment == 0)
        alignment = 32;
    if ((alignment & (alignment - 1)) || alignment > UINT32_MAX)
        return SW_EINVAL;
    struct sw_gguf_writer *w = sw_calloc(1, sizeof(*w));
    if (!w)
        return SW_ENOMEM;
    w->version = version;
    w->alignment = alignment;
    *out = w;
    return 0;
}

void sw_gguf_writer_free(struct sw_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++) {
        sw_free(w->kv[i].key);
        value_free(&w->kv[i].val);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        sw_free(w->t[i].name);
        sw_free(w->t[i].owned);
        sw_free(w->t[i].src_path);
    }
    sw_free(w->kv);
    sw_free(w->t);
    sw_free(w);
}

/* Does an integer held widened fit the declared GGUF type? */
static bool fits(enum sw_gguf_type t, uint64_t u, int64_t i)
{
    switch (t) {
    case SW_GGUF_UINT8:
        return u <= UINT8_MAX;
    case SW_GGUF_UINT16:
        return u <= UINT16_MAX;
    case SW_GGUF_UINT32:
        return u <= UINT32_MAX;
    case SW_GGUF_INT8:
        return i >= INT8_MIN && i <= INT8_MAX;
    case SW_GGUF_INT16:
        return i >= INT16_MIN && i <= INT16_MAX;
    case SW_GGUF_INT32:
        return i >= INT32_MIN && i <= INT32_MAX;
    default:
        return true;
    }
}

static bool is_unsigned(enum sw_gguf_type t)
{
    return t == SW_GGUF_UINT8 || t == SW_GGUF_UINT16 || t == SW_GGUF_UINT32 || t == SW_GGUF_UINT64;
}

static bool is_float(enum sw_gguf_type t)
{
    return t == SW_GGUF_FLOAT32 || t == SW_GGUF_FLOAT64;
}

static int check_scalar(enum sw_gguf_type t, const struct sw_gguf_value *v, int64_t idx)
{
    uint64_t u = 0;
    int64_t i = 0;
    if (is_unsigned(t))
        u = idx < 0 ? v->as.u : v->as.arr.v.u[idx];
    else if (!is_float(t) && t != SW_GGUF_BOOL && t != SW_GGUF_STRING)
        i = idx < 0 ? v->as.i : v->as.arr.v.i[idx];
    return fits(t, u, i) ? 0 : SW_ERANGE;
}

static int value_copy(struct sw_gguf_value *d, const struct sw_gguf_value *s)
{
    memset(d, 0, sizeof(*d));
    if ((unsigned)s->type >= SW_GGUF__NTYPES)
        return SW_EINVAL;
    if (s->type == SW_GGUF_STRING) {
        d->type = s->type;
        d->as.str.len = s->as.str.len;
        d->as.str.s = sw_malloc((size_t)s->as.str.len + 1);
        if (!d->as.str.s)
            return SW_ENOMEM;
        if (s->as.str.len)
            memcpy(d->as.str.s, s->as.str.s, (size_t)s->as.str.len);
        d->as.str.s[s->as.str.len] = '\0';
        return 0;
    }
    if (s->type != SW_GGUF_ARRAY) {
        int rc = check_scalar(s->type, s, -1);
        if (rc)
            return rc;
        *d = *s;
        return 0;
    }
    enum sw_gguf_type et = s->as.arr.elem;
    if ((unsigned)et >= SW_GGUF__NTYPES || et == SW_GGUF_ARRAY)
        return SW_EINVAL;
    uint64_t n = s->as.arr.n;
    size_t slot = et == SW_GGUF_STRING ? sizeof(struct sw_gguf_str)
                  : et == SW_GGUF_BOOL ? sizeof(bool)
                                       : 8;
    if (n > SIZE_MAX / slot)
        return SW_ERANGE;
    for (uint64_t i = 0; et != SW_GGUF_STRING && i < n; i++)
        if (check_scalar(et, s, (int64_t)i))
            return SW_ERANGE;
    d->type = SW_GGUF_ARRAY;
    d->as.arr.elem = et;
    d->as.arr.v.u = sw_calloc(n ? (size_t)n : 1, slot);
    if (!d->as.arr.v.u)
        return SW_ENOMEM;
    d->as.arr.n = n;
    if (et != SW_GGUF_STRING) {
        if (n)
            memcpy(d->as.arr.v.u, s->as.arr.v.u, (size_t)n * slot);
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        const struct sw_gguf_str *ss = &s->as.arr.v.str[i];
        struct sw_gguf_str *ds = &d->as.arr.v.str[i];
        ds->s = sw_malloc((size_t)ss->len + 1);
        if (!ds->s) {
            value_free(d);
            return SW_ENOMEM;
        }
        if (ss->len)
            memcpy(ds->s, ss->s, (size_t)ss->len);
        ds->s[ss->len] = '\0';
        ds->len = ss->len;
    }
    return 0;
}

static struct wkv *find_kv(struct sw_gguf_writer *w, const char *key)
{
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key))
            return &w->kv[i];
    return NULL;
}

int sw_gguf_writer_set(struct sw_gguf_writer *w, const char *key, const struct sw_gguf_value *v)
{
    if (!w || !key || !*key || !v)
        return SW_EINVAL;
    if (!strcmp(key, "general.alignment")) {
        /* ggml insists on a u32 power of two; the writer's alignment follows it */
        if (v->type != SW_GGUF_UINT32 || !v->as.u || (v->as.u & (v->as.u - 1)))
            return SW_EINVAL;
    }
    struct sw_gguf_value copy;
    int rc = value_copy(&copy, v);
    if (rc)
        return rc;
    struct wkv *kv = find_kv(w, key);
    if (kv) {
        value_free(&kv->val);
        kv->val = copy;
    } else {
        if (w->n_kv == w->cap_kv) {
            size_t cap = w->cap_kv ? w->cap_kv * 2 : 32;
            struct wkv *nk = sw_realloc(w->kv, cap * sizeof(*nk));
            if (!nk) {
                value_free(&copy);
                return SW_ENOMEM;
            }
            w->kv = nk;
            w->cap_kv = cap;
        }
        char *k = sw_strdup(key);
        if (!k) {
            value_free(&copy);
            return SW_ENOMEM;
        }
        w->kv[w->n_kv].key = k;
        w->kv[w->n_kv].val = copy;
        w->n_kv++;
    }
    if (!strcmp(key, "general.alignment"))
        w->alignment = v->as.u;
    return 0;
}

int sw_gguf_writer_set_u32(struct sw_gguf_writer *w, const char *key, uint32_t v)
{
    struct sw_gguf_value x = {.type = SW_GGUF_UINT32, .as.u = v};
    return sw_gguf_writer_set(w, key, &x);
}

int sw_gguf_writer_set_u64(struct sw_gguf_writer *w, const char *key, uint64_t v)
{
    struct sw_gguf_value x = {.type = SW_GGUF_UINT64, .as.u = v};
    return sw_gguf_writer_set(w, key, &x);
}

int sw_gguf_writer_set_i32(struct sw_gguf_writer *w, const char *key, int32_t v)
{
    struct sw_gguf_value x = {.type = SW_GGUF_INT32, .as.i = v};
    return sw_gguf_writer_set(w, key, &x);
}

int sw_gguf_writer_set_f32(struct sw_gguf_writer *w, const char *key, float v)
{
    struct sw_gguf_value x = {.type = SW_GGUF_FLOAT32, .as.f = v};
    return sw_gguf_writer_set(w, key, &x);
}

int sw_gguf_writer_set_bool(struct sw_gguf_writer *w, const char *key, bool v)
{
    struct sw_gguf_value x = {.type = SW_GGUF_BOOL, .as.b = v};
    return sw_gguf_writer_set(w, key, &x);
}

int sw_gguf_writer_set_str(struct sw_gguf_writer *w, const char *key, const char *v)
{
    if (!v)
        return SW_EINVAL;
    struct sw_gguf_value x = {.type = SW_GGUF_STRING};
    x.as.str.s = (char *)v;
    x.as.str.len = strlen(v);
    return sw_gguf_writer_set(w, key, &x);
}

int sw_gguf_writer_remove(struct sw_gguf_writer *w, const char *key)
{
    struct wkv *kv = w && key ? find_kv(w, key) : NULL;
    if (!kv)
        return SW_ENOENT;
    sw_free(kv->key);
    value_free(&kv->val);
    size_t i = (size_t)(kv - w->kv);
    memmove(&w->kv[i], &w->kv[i + 1], (w->n_kv - i - 1) * sizeof(*w->kv));
    w->n_kv--;
    if (!strcmp(key, "general.alignment"))
        w->alignment = 32;
    return 0;
}

int sw_gguf_writer_copy_kv(struct sw_gguf_writer *w, const struct sw_gguf *g)
{
    for (uint64_t i = 0; i < g->n_kv; i++) {
        /* keys with NUL bytes cannot be named through this API */
        if (strlen(g->kv[i].key.s) != g->kv[i].key.len)
            return SW_EINVAL;
        int rc = sw_gguf_writer_set(w, g->kv[i].key.s, &g->kv[i].val);
        if (rc)
            return rc;
    }
    return 0;
}

size_t sw_gguf_writer_n_kv(const struct sw_gguf_writer *w)
{
    return w ? w->n_kv : 0;
}

static int add_tensor(struct sw_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                      const uint64_t *ne, struct wtensor **out)
{
    if (!w || !name || !*name || strlen(name) >= GGML_MAX_NAME || n_dims > SW_GGUF_MAX_DIMS ||
        (n_dims && !ne))
        return SW_EINVAL;
    const struct sw_ggml_type *ty = sw_ggml_type(type);
    if (!ty)
        return SW_EINVAL;
    struct wtensor t = {.type = type, .n_dims = n_dims};
    uint64_t nel = 1;
    for (uint32_t d = 0; d < SW_GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (!t.ne[d] || t.ne[d] > (uint64_t)INT64_MAX || !sw_mul_ok(nel, t.ne[d], &nel) ||
            nel > (uint64_t)INT64_MAX)
            return SW_ERANGE;
    }
    uint64_t row;
    int rc = sw_ggml_row_size(type, t.ne[0], &row);
    if (rc)
        return rc == SW_EPARSE ? SW_EINVAL : rc;
    if (!sw_mul_ok(row, nel / t.ne[0], &t.nbytes) || t.nbytes > SIZE_MAX)
        return SW_ERANGE;
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? w->cap_t * 2 : 64;
        struct wtensor *nt = sw_realloc(w->t, cap * sizeof(*nt));
        if (!nt)
            return SW_ENOMEM;
        w->t = nt;
        w->cap_t = cap;
    }
    t.name = sw_strdup(name);
    if (!t.name)
        return SW_ENOMEM;
    w->t[w->n_t] = t;
    *out = &w->t[w->n_t];
    return 0;
}

int sw_gguf_writer_add_tensor(struct sw_gguf_writer *w, const char *name, uint32_t type,
                              uint32_t n_dims, const uint64_t *ne, const void *data, bool borrow)
{
    struct wtensor *t;
    int rc = add_tensor(w, name, type, n_dims, ne, &t);
    if (rc)
        return rc;
    if (!data) {
        sw_free(t->name);
        return SW_EINVAL;
    }
    if (borrow) {
        t->data = data;
    } else {
        t->owned = sw_malloc((size_t)t->nbytes);
        if (!t->owned) {
            sw_free(t->name);
            return SW_ENOMEM;
        }
        memcpy(t->owned, data, (size_t)t->nbytes);
        t->data = t->owned;
    }
    w->n_t++;
    return 0;
}

int sw_gguf_writer_add_tensor_from_file(struct sw_gguf_writer *w, const char *name, uint32_t type,
                                        uint32_t n_dims, const uint64_t *ne, const char *path,
                                        uint64_t offset)
{
    struct wtensor *t;
    if (!path)
        return SW_EINVAL;
    int rc = add_tensor(w, name, type, n_dims, ne, &t);
    if (rc)
        return rc;
    t->src_path = sw_strdup(path);
    if (!t->src_path) {
        sw_free(t->name);
        return SW_ENOMEM;
    }
    t->src_off = offset;
    w->n_t++;
    return 0;
}

size_t sw_gguf_writer_n_tensors(const struct sw_gguf_writer *w)
{
    return w ? w->n_t : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Serialization
 */
static int put(struct sw_buf *b, const void *p, size_t n)
{
    return sw_buf_append(b, p, n);
}

static int put_u32(struct sw_buf *b, uint32_t v)
{
    return put(b, &v, 4);
}

static int put_u64(struct sw_buf *b, uint64_t v)
{
    return put(b, &v, 8);
}

static int put_str(struct sw_buf *b, const char *s, uint64_t len)
{
    int rc = put_u64(b, len);
    return rc ? rc : put(b, s, (size_t)len);
}

/* One scalar of type t, narrowed from its widened form. */
static int put_scalar(struct sw_buf *b, enum sw_gguf_type t, uint64_t u, int64_t i, double f,
                      bool bo)
{
    switch (t) {
    case SW_GGUF_UINT8: {
        uint8_t x = (uint8_t)u;
        return put(b, &x, 1);
    }
    case SW_GGUF_INT8: {
        int8_t x = (int8_t)i;
        return put(b, &x, 1);
    }
    case SW_GGUF_UINT16: {
        uint16_t x = (uint16_t)u;
        return put(b, &x, 2);
    }
    case SW_GGUF_INT16: {
        int16_t x = (int16_t)i;
        return put(b, &x, 2);
    }
    case SW_GGUF_UINT32:
        return put_u32(b, (uint32_t)u);
    case SW_GGUF_INT32: {
        int32_t x = (int32_t)i;
        return put(b, &x, 4);
    }
    case SW_GGUF_FLOAT32: {
        float x = (float)f;
        return put(b, &x, 4);
    }
    case SW_GGUF_BOOL: {
        uint8_t x = bo ? 1 : 0;
        return put(b, &x, 1);
    }
    case SW_GGUF_UINT64:
        return put_u64(b, u);
    case SW_GGUF_INT64:
        return put(b, &i, 8);
    case SW_GGUF_FLOAT64:
        return put(b, &f, 8);
    default:
        return SW_EINVAL;
    }
}

static int put_value(struct sw_buf *b, const struct sw_gguf_value *v)
{
    int rc = put_u32(b, (uint32_t)v->type);
    if (rc)
        return rc;
    if (v->type == SW_GGUF_STRING)
        return put_str(b, v->as.str.s, v->as.str.len);
    /* read only the union member that the type says is live */
    if (v->type == SW_GGUF_BOOL)
        return put_scalar(b, v->type, 0, 0, 0, v->as.b);
    if (is_unsigned(v->type))
        return put_scalar(b, v->type, v->as.u, 0, 0, false);
    if (is_float(v->type))
        return put_scalar(b, v->type, 0, 0, v->as.f, false);
    if (v->type != SW_GGUF_ARRAY)
        return put_scalar(b, v->type, 0, v->as.i, 0, false);
    enum sw_gguf_type et = v->as.arr.elem;
    rc = put_u32(b, (uint32_t)et);
    if (!rc)
        rc = put_u64(b, v->as.arr.n);
    for (uint64_t k = 0; !rc && k < v->as.arr.n; k++) {
        if (et == SW_GGUF_STRING)
            rc = put_str(b, v->as.arr.v.str[k].s, v->as.arr.v.str[k].len);
        else if (et == SW_GGUF_BOOL)
            rc = put_scalar(b, et, 0, 0, 0, v->as.arr.v.b[k]);
        else if (is_unsigned(et))
            rc = put_scalar(b, et, v->as.arr.v.u[k], 0, 0, false);
        else if (is_float(et))
            rc = put_scalar(b, et, 0, 0, v->as.arr.v.f[k], false);
        else
            rc = put_scalar(b, et, 0, v->as.arr.v.i[k], 0, false);
    }
    return rc;
}

static uint64_t pad_to(uint64_t n, uint64_t a)
{
    return (n + a - 1) / a * a;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp((*(const struct wtensor *const *)a)->name,
                  (*(const struct wtensor *const *)b)->name);
}

static int write_all(int fd, const void *p, size_t n, const char *path, struct sw_err *e)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return sw_err_at(e, SW_EIO, path, 0, 0, "write failed: %s", strerror(errno));
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int copy_from(int fd, const struct wtensor *t, const char *path, struct sw_err *e)
{
    int rc = 0;
    int in = open(t->src_path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, t->src_path, 0, 0,
                         "cannot open (data of tensor '%s'): %s", t->name, strerror(errno));
    char *buf = sw_malloc(1u << 20);
    if (!buf) {
        close(in);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    uint64_t left = t->nbytes, at = t->src_off;
    while (left && !rc) {
        size_t want = (size_t)SW_MIN(left, (uint64_t)(1u << 20));
        ssize_t k = pread(in, buf, want, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            rc = sw_err_at_offset(e, k < 0 ? SW_EIO : SW_ETRUNC, t->src_path, (int64_t)at,
                                  "cannot read the data of tensor '%s'%s%s", t->name,
                                  k < 0 ? ": " : " (file too short)", k < 0 ? strerror(errno) : "");
            break;
        }
        rc = write_all(fd, buf, (size_t)k, path, e);
        left -= (uint64_t)k;
        at += (uint64_t)k;
    }
    sw_free(buf);
    close(in);
    return rc;
}

int sw_gguf_writer_write(struct sw_gguf_writer *w, const char *path, struct sw_err *e)
{
    int rc = 0;
    struct sw_atomic at;
    struct wtensor **sorted = NULL;
    struct sw_buf b;
    static const uint8_t zeros[64];
    sw_buf_init(&b, (size_t)SW_GGUF_MAX_HEADER);
    sw_err_clear(e);
    if (!w || !path)
        return sw_err_set(e, SW_EINVAL, "gguf writer: no writer or no path");

    /* tensor names must be unique (checked here, once, in O(n log n)) */
    if (w->n_t) {
        sorted = sw_malloc(w->n_t * sizeof(*sorted));
        if (!sorted) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < w->n_t; i++)
            sorted[i] = &w->t[i];
        qsort(sorted, w->n_t, sizeof(*sorted), name_cmp);
        for (size_t i = 1; i < w->n_t; i++)
            if (!strcmp(sorted[i]->name, sorted[i - 1]->name)) {
                rc =
                    sw_err_at(e, SW_EINVAL, path, 0, 0, "tensor '%s' added twice", sorted[i]->name);
                goto out;
            }
    }
    /* the alignment key is written when the alignment is not ggml's default (or was set) */
    if (w->alignment != 32 && !find_kv(w, "general.alignment")) {
        rc = sw_gguf_writer_set_u32(w, "general.alignment", (uint32_t)w->alignment);
        if (rc) {
            rc = sw_err_set(e, rc, "out of memory");
            goto out;
        }
    }

    rc = put(&b, "GGUF", 4);
    if (!rc)
        rc = put_u32(&b, w->version);
    if (!rc)
        rc = put_u64(&b, w->n_t);
    if (!rc)
        rc = put_u64(&b, w->n_kv);
    for (size_t i = 0; !rc && i < w->n_kv; i++) {
        rc = put_str(&b, w->kv[i].key, strlen(w->kv[i].key));
        if (!rc)
            rc = put_value(&b, &w->kv[i].val);
    }
    uint64_t off = 0;
    for (size_t i = 0; !rc && i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        rc = put_str(&b, t->name, strlen(t->name));
        if (!rc)
            rc = put_u32(&b, t->n_dims);
        for (uint32_t d = 0; !rc && d < t->n_dims; d++)
            rc = put_u64(&b, t->ne[d]);
        if (!rc)
            rc = put_u32(&b, t->type);
        if (!rc)
            rc = put_u64(&b, off);
        off += pad_to(t->nbytes, w->alignment);
    }
    /* ggml pads the header only when tensor data follows */
    while (!rc && w->n_t && b.len % w->alignment)
        rc = put(&b, zeros, (size_t)SW_MIN(w->alignment - b.len % w->alignment, sizeof(zeros)));
    if (rc) {
        rc = sw_err_at(e, rc, path, 0, 0,
                       rc == SW_ERANGE ? "header larger than the reader's ceiling"
                                       : "out of memory building the header");
        goto out;
    }

    rc = sw_atomic_open(&at, path, e);
    if (rc)
        goto out;
    rc = write_all(at.fd, b.data, b.len, path, e);
    for (size_t i = 0; !rc && i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        rc = t->src_path ? copy_from(at.fd, t, path, e)
                         : write_all(at.fd, t->data, (size_t)t->nbytes, path, e);
        uint64_t pad = pad_to(t->nbytes, w->alignment) - t->nbytes;
        while (!rc && pad) {
            size_t k = (size_t)SW_MIN(pad, (uint64_t)sizeof(zeros));
            rc = write_all(at.fd, zeros, k, path, e);
            pad -= k;
        }
    }
    if (rc)
        sw_atomic_abort(&at);
    else
        rc = sw_atomic_commit(&at, 0644, e);
out:
    sw_free(sorted);
    sw_buf_free(&b);
    return rc;
}
