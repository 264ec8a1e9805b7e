/*
 * model/hf: safetensors headers and model.safetensors.index.json.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the data
 * area. Hostile input is the normal case: N is checked against the file size and a ceiling before
 * a byte of the header is read or allocated; every tensor's dtype, shape and offsets are checked
 * (shape product x element size must equal the byte range, ranges must lie inside the data area,
 * must not overlap and must leave no hole, as the format requires). An HTML page, a git-lfs
 * pointer or a JSON error body saved under a .safetensors name is named for what it looks like.
 *
 * What it does not do: read or hash tensor data (payload/ verifies bytes), interpret tensor names
 * (that is the architecture's business).
 */
#include <slipway/hf.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    unsigned bits;
} dtypes[SW_ST__N] = {
    [SW_ST_BOOL] = {"BOOL", 8},       [SW_ST_U8] = {"U8", 8},
    [SW_ST_I8] = {"I8", 8},           [SW_ST_F8_E4M3] = {"F8_E4M3", 8},
    [SW_ST_F8_E5M2] = {"F8_E5M2", 8}, [SW_ST_F8_E8M0] = {"F8_E8M0", 8},
    [SW_ST_F4] = {"F4", 4},           [SW_ST_I16] = {"I16", 16},
    [SW_ST_U16] = {"U16", 16},        [SW_ST_F16] = {"F16", 16},
    [SW_ST_BF16] = {"BF16", 16},      [SW_ST_I32] = {"I32", 32},
    [SW_ST_U32] = {"U32", 32},        [SW_ST_F32] = {"F32", 32},
    [SW_ST_I64] = {"I64", 64},        [SW_ST_U64] = {"U64", 64},
    [SW_ST_F64] = {"F64", 64},
};

const char *sw_st_dtype_name(enum sw_st_dtype d)
{
    return (unsigned)d < SW_ST__N ? dtypes[d].name : "?";
}

static int dtype_from(const char *s, enum sw_st_dtype *out)
{
    for (int i = 0; i < SW_ST__N; i++)
        if (!strcmp(s, dtypes[i].name)) {
            *out = (enum sw_st_dtype)i;
            return 0;
        }
    return -1;
}

void sw_st_file_free(struct sw_st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_tensors; i++)
        sw_free(f->tensors[i].name);
    sw_free(f->tensors);
    memset(f, 0, sizeof(*f));
}

/* Byte offset in the file of a tensor's key inside the header, for error messages. */
static int64_t key_offset(const char *json, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i + nl + 2 <= len; i++) {
        if (json[i] == '"' && memcmp(json + i + 1, name, nl) == 0 && json[i + 1 + nl] == '"')
            return 8 + (int64_t)i;
    }
    return 8;
}

static int cmp_begin(const void *a, const void *b)
{
    const struct sw_st_tensor *x = *(const struct sw_st_tensor *const *)a;
    const struct sw_st_tensor *y = *(const struct sw_st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int get_u64(json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* One header being read: its text (for the byte offsets errors name) and the data area's size
 * when the file size is known. */
struct hdr {
    const char *json;
    size_t len;
    const char *where;
    bool bounded;        /* the file size is known: data must fill the data area exactly */
    uint64_t data_avail; /* bytes after the header, when bounded */
};

/* __metadata__ (optional): an object of strings. */
static int check_metadata(const struct hdr *h, const json_t *meta, struct sw_err *e)
{
    if (!json_is_object(meta))
        return sw_err_at_offset(e, SW_EPARSE, h->where, key_offset(h->json, h->len, "__metadata__"),
                                "__metadata__ must be an object of strings");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)meta, k, v)
    {
        if (!json_is_string(v))
            return sw_err_at_offset(e, SW_EPARSE, h->where, key_offset(h->json, h->len, k),
                                    "__metadata__.%s must be a string", k);
    }
    return 0;
}

/* One tensor entry into ts: a known dtype, a shape of at most SW_ST_MAX_DIMS non-negative dims
 * whose product does not overflow, data_offsets [begin, end] spanning exactly shape x dtype bytes
 * (*bytes), inside the data area when it is known. */
static int read_tensor(const struct hdr *h, const char *name, const json_t *t,
                       struct sw_st_tensor *ts, uint64_t *bytes, struct sw_err *e)
{
    int64_t at = key_offset(h->json, h->len, name);
    const char *where = h->where;
    if (!json_is_object(t))
        return sw_err_at_offset(e, SW_EPARSE, where, at, "tensor \"%s\": not an object", name);
    json_t *dt = json_object_get(t, "dtype");
    json_t *sh = json_object_get(t, "shape");
    json_t *off = json_object_get(t, "data_offsets");
    if (!dt || !json_is_string(dt) || dtype_from(json_string_value(dt), &ts->dtype))
        return sw_err_at_offset(e, SW_EPARSE, where, at, "tensor \"%s\": %s dtype%s%s", name,
                                dt && json_is_string(dt) ? "unknown" : "missing or non-string",
                                dt && json_is_string(dt) ? " " : "",
                                dt && json_is_string(dt) ? json_string_value(dt) : "");
    if (!sh || !json_is_array(sh) || json_array_size(sh) > SW_ST_MAX_DIMS)
        return sw_err_at_offset(e, SW_EPARSE, where, at,
                                "tensor \"%s\": shape must be an array of at most %d dims", name,
                                SW_ST_MAX_DIMS);
    uint64_t elems = 1;
    ts->ndim = (int)json_array_size(sh);
    for (int d = 0; d < ts->ndim; d++) {
        if (get_u64(json_array_get(sh, (size_t)d), &ts->shape[d]))
            return sw_err_at_offset(e, SW_EPARSE, where, at,
                                    "tensor \"%s\": shape[%d] is not a non-negative integer", name,
                                    d);
        if (!sw_mul_ok(elems, ts->shape[d], &elems))
            return sw_err_at_offset(e, SW_ERANGE, where, at,
                                    "tensor \"%s\": shape product overflows", name);
    }
    if (!off || !json_is_array(off) || json_array_size(off) != 2 ||
        get_u64(json_array_get(off, 0), &ts->begin) || get_u64(json_array_get(off, 1), &ts->end) ||
        ts->begin > ts->end)
        return sw_err_at_offset(
            e, SW_EPARSE, where, at,
            "tensor \"%s\": data_offsets must be [begin, end] with begin <= end", name);
    uint64_t bits;
    if (!sw_mul_ok(elems, dtypes[ts->dtype].bits, &bits))
        return sw_err_at_offset(e, SW_ERANGE, where, at, "tensor \"%s\": size overflows", name);
    *bytes = (bits + 7) / 8;
    if (*bytes != ts->end - ts->begin)
        return sw_err_at_offset(e, SW_EPARSE, where, at,
                                "tensor \"%s\": shape x %s = %llu bytes but data_offsets span "
                                "%llu",
                                name, dtypes[ts->dtype].name, (unsigned long long)*bytes,
                                (unsigned long long)(ts->end - ts->begin));
    if (h->bounded && ts->end > h->data_avail)
        return sw_err_at_offset(e, SW_ETRUNC, where, at,
                                "tensor \"%s\": data ends at %llu, past the data area (%llu "
                                "bytes; file truncated?)",
                                name, (unsigned long long)ts->end,
                                (unsigned long long)h->data_avail);
    return 0;
}

/* The tensors' data, in offset order, neither overlaps nor leaves a hole, and (file size known)
 * ends where the file does. */
static int check_contiguous(const struct hdr *h, const struct sw_st_file *out,
                            struct sw_st_tensor **order, struct sw_err *e)
{
    qsort(order, out->n_tensors, sizeof(*order), cmp_begin);
    uint64_t pos = 0;
    for (size_t i = 0; i < out->n_tensors; i++) {
        struct sw_st_tensor *ts = order[i];
        if (ts->begin < pos)
            return sw_err_at_offset(e, SW_EPARSE, h->where, key_offset(h->json, h->len, ts->name),
                                    "tensor \"%s\": data [%llu, %llu) overlaps the previous tensor",
                                    ts->name, (unsigned long long)ts->begin,
                                    (unsigned long long)ts->end);
        if (ts->begin > pos)
            return sw_err_at_offset(e, SW_EPARSE, h->where, key_offset(h->json, h->len, ts->name),
                                    "tensor \"%s\": hole of %llu bytes before its data", ts->name,
                                    (unsigned long long)(ts->begin - pos));
        pos = ts->end;
    }
    if (h->bounded && out->data_len != h->data_avail)
        return sw_err_at_offset(e, SW_EPARSE, h->where, (int64_t)(8 + h->len + out->data_len),
                                "%llu bytes after the last tensor's data (file is %llu bytes, "
                                "header describes %llu)",
                                (unsigned long long)(h->data_avail - out->data_len),
                                (unsigned long long)out->file_size,
                                (unsigned long long)(8 + h->len + out->data_len));
    return 0;
}

/* Every tensor of the header (n of them, __metadata__ aside) into out, in the header's order. */
static int read_tensors(const struct hdr *h, const json_t *root, size_t n, struct sw_st_file *out,
                        struct sw_st_tensor **order, struct sw_err *e)
{
    const char *name;
    json_t *t;
    json_object_foreach((json_t *)root, name, t)
    {
        if (!strcmp(name, "__metadata__"))
            continue;
        struct sw_st_tensor *ts = &out->tensors[out->n_tensors];
        uint64_t bytes = 0;
        if (out->n_tensors >= n)
            return sw_err_at_offset(e, SW_EPARSE, h->where, 8, "more tensors than counted");
        int rc = read_tensor(h, name, t, ts, &bytes, e);
        if (rc)
            return rc;
        ts->name = sw_strdup(name);
        if (!ts->name)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        order[out->n_tensors] = ts;
        out->n_tensors++;
        out->bytes_by_dtype[ts->dtype] += bytes;
        if (ts->end > out->data_len)
            out->data_len = ts->end;
    }
    return 0;
}

int sw_st_parse_header(const char *json, size_t len, uint64_t file_size, const char *where,
                       struct sw_st_file *out, struct sw_err *e)
{
    int rc = 0;
    struct sw_st_tensor **order = NULL;
    json_t *root = NULL;
    memset(out, 0, sizeof(*out));
    if (!where)
        where = "<safetensors>";
    struct hdr h = {.json = json, .len = len, .where = where, .bounded = file_size > 0};
    out->header_len = len;
    out->file_size = file_size;
    if (len == 0 || json[0] != '{') {
        char what[96];
        sw_sniff(json, len, what, sizeof(what));
        return sw_err_at_offset(e, SW_EPARSE, where, 8,
                                "safetensors header is not a JSON object (looks like %s)", what);
    }
    struct sw_err je;
    sw_err_clear(&je);
    root = sw_json_parse(json, len, where, &je);
    if (!root) {
        return sw_err_at_offset(e, je.code == SW_ENOMEM ? SW_ENOMEM : SW_EPARSE, where, 8,
                                "safetensors header: %s", je.msg);
    }
    if (!json_is_object(root)) {
        rc = sw_err_at_offset(e, SW_EPARSE, where, 8, "safetensors header is not a JSON object");
        goto out;
    }
    if (h.bounded) {
        if (file_size < 8 + (uint64_t)len) {
            rc = sw_err_at_offset(e, SW_ETRUNC, where, 0,
                                  "header length %zu exceeds the file (%llu bytes)", len,
                                  (unsigned long long)file_size);
            goto out;
        }
        h.data_avail = file_size - 8 - len;
    }
    size_t n = json_object_size(root);
    json_t *meta = json_object_get(root, "__metadata__");
    if (meta) {
        rc = check_metadata(&h, meta, e);
        if (rc)
            goto out;
        n--;
    }
    /* Each tensor entry is at least ~40 bytes of JSON: a count that the header cannot hold is
     * caught by the parser already; n is bounded by len here. */
    if (n > len / 16 + 1) {
        rc = sw_err_at_offset(e, SW_ERANGE, where, 8, "too many tensors for the header size");
        goto out;
    }
    out->tensors = sw_calloc(n ? n : 1, sizeof(*out->tensors));
    order = sw_calloc(n ? n : 1, sizeof(*order));
    if (!out->tensors || !order) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = read_tensors(&h, root, n, out, order, e);
    if (rc)
        goto out;
    rc = check_contiguous(&h, out, order, e);
out:
    sw_free(order);
    json_decref(root);
    if (rc)
        sw_st_file_free(out);
    return rc;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int check_prefix(const unsigned char *p, size_t avail, uint64_t file_size, const char *where,
                        uint64_t *n, struct sw_err *e)
{
    if (file_size < 8 || avail < 8) {
        char what[96];
        sw_sniff(p, avail, what, sizeof(what));
        return sw_err_at_offset(e, SW_ETRUNC, where, 0,
                                "%llu bytes: too short for a safetensors file (looks like %s)",
                                (unsigned long long)file_size, what);
    }
    *n = le64(p);
    if (*n > file_size - 8 || *n > SW_ST_HEADER_CEILING) {
        char what[96];
        sw_sniff(p, avail < 64 ? avail : 64, what, sizeof(what));
        return sw_err_at_offset(
            e, *n > file_size - 8 ? SW_ETRUNC : SW_ERANGE, where, 0,
            "header length %llu %s (file %llu bytes; looks like %s)", (unsigned long long)*n,
            *n > file_size - 8 ? "exceeds the file" : "exceeds the 100 MiB ceiling",
            (unsigned long long)file_size, what);
    }
    return 0;
}

int sw_st_header_len(const void *prefix, size_t avail, uint64_t file_size, const char *where,
                     uint64_t *n, struct sw_err *e)
{
    return check_prefix(prefix, avail, file_size, where, n, e);
}

int sw_st_parse_buffer(const void *buf, size_t size, const char *where, struct sw_st_file *out,
                       struct sw_err *e)
{
    uint64_t n;
    memset(out, 0, sizeof(*out));
    int rc = check_prefix(buf, size, size, where, &n, e);
    if (rc)
        return rc;
    return sw_st_parse_header((const char *)buf + 8, (size_t)n, size, where, out, e);
}

int sw_st_read(const char *path, struct sw_st_file *out, struct sw_err *e)
{
    int rc = 0;
    char *hdr = NULL;
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, path, 0, 0, "cannot open: %s",
                         strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "stat: %s", strerror(errno));
        goto out;
    }
    unsigned char pre[64];
    ssize_t got = pread(fd, pre, sizeof(pre), 0);
    if (got < 0) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "read: %s", strerror(errno));
        goto out;
    }
    uint64_t n;
    rc = check_prefix(pre, (size_t)got, (uint64_t)st.st_size, path, &n, e);
    if (rc)
        goto out;
    hdr = sw_malloc(n ? (size_t)n : 1);
    if (!hdr) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory reading a %llu-byte header",
                        (unsigned long long)n);
        goto out;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, hdr + done, (size_t)n - done, 8 + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = sw_err_at_offset(e, SW_ETRUNC, path, 8 + (int64_t)done, "header cut short");
            goto out;
        }
        done += (size_t)r;
    }
    rc = sw_st_parse_header(hdr, (size_t)n, (uint64_t)st.st_size, path, out, e);
out:
    sw_free(hdr);
    close(fd);
    return rc;
}

void sw_st_index_free(struct sw_st_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n_shards; i++)
        sw_free(ix->shards[i].file);
    sw_free(ix->shards);
    memset(ix, 0, sizeof(*ix));
}

static bool safe_name(const char *s)
{
    if (!*s || s[0] == '/' || strstr(s, ".."))
        return false;
    return strlen(s) < 1024;
}

/* The index's weight map as shards (file names, tensors mapped to each) and metadata.total_size,
 * nothing read from the shards. */
static int index_from_json(json_t *root, const char *path, struct sw_st_index *ix, struct sw_err *e)
{
    int rc = 0;
    json_t *wm = json_object_get(root, "weight_map");
    if (!json_is_object(root) || !wm || !json_is_object(wm)) {
        rc = sw_err_at(e, SW_EPARSE, path, 1, 1, "no weight_map object");
        goto out;
    }
    json_t *meta = json_object_get(root, "metadata");
    if (meta && json_is_object(meta)) {
        json_t *ts = json_object_get(meta, "total_size");
        int64_t total = 0;
        if (ts && !json_is_null(ts)) {
            rc = sw_json_int_range(ts, 0, INT64_MAX, path, "metadata.total_size", &total, e);
            if (rc)
                goto out;
        }
        ix->total_size = (uint64_t)total;
    }
    size_t cap = json_object_size(wm);
    ix->shards = sw_calloc(cap ? cap : 1, sizeof(*ix->shards));
    if (!ix->shards) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    const char *tname;
    json_t *f;
    json_object_foreach(wm, tname, f)
    {
        if (!json_is_string(f) || !safe_name(json_string_value(f))) {
            rc =
                sw_err_at(e, SW_EPARSE, path, 0, 0,
                          "weight_map[\"%s\"] must name a shard file in the same directory", tname);
            goto out;
        }
        const char *fn = json_string_value(f);
        size_t k;
        for (k = 0; k < ix->n_shards; k++)
            if (!strcmp(ix->shards[k].file, fn))
                break;
        if (k == ix->n_shards) {
            ix->shards[k].file = sw_strdup(fn);
            if (!ix->shards[k].file) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
                goto out;
            }
            ix->n_shards++;
        }
        ix->shards[k].n_tensors++;
        ix->n_tensors++;
    }
out:
    if (rc)
        sw_st_index_free(ix);
    return rc;
}

int sw_st_index_parse(const char *text, size_t len, const char *where, struct sw_st_index *ix,
                      struct sw_err *e)
{
    memset(ix, 0, sizeof(*ix));
    if (len > SW_ST_INDEX_CEILING)
        return sw_err_at(e, SW_ERANGE, where, 0, 0, "%zu bytes: an index is at most %llu", len,
                         (unsigned long long)SW_ST_INDEX_CEILING);
    json_t *root = sw_json_parse(text, len, where, e);
    if (!root)
        return e ? e->code : SW_EPARSE;
    int rc = index_from_json(root, where, ix, e);
    json_decref(root);
    return rc;
}

int sw_st_index_load(const char *dir, struct sw_st_index *ix, struct sw_err *e)
{
    int rc = 0;
    char path[4096];
    const char *tname;
    json_t *f;
    memset(ix, 0, sizeof(*ix));
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    json_t *root = sw_json_load_file(path, SW_ST_INDEX_CEILING, e);
    if (!root)
        return e ? e->code : SW_EPARSE;
    rc = index_from_json(root, path, ix, e);
    if (rc)
        goto out;
    json_t *wm = json_object_get(root, "weight_map");
    ix->complete = ix->n_shards > 0;
    for (size_t k = 0; k < ix->n_shards; k++) {
        struct sw_st_shard *s = &ix->shards[k];
        char sp[4096];
        snprintf(sp, sizeof(sp), "%s/%s", dir, s->file);
        struct stat st;
        if (stat(sp, &st) < 0) {
            snprintf(s->problem, sizeof(s->problem), "missing");
            ix->complete = false;
            continue;
        }
        s->present = true;
        s->size = (uint64_t)st.st_size;
        struct sw_st_file sf;
        struct sw_err se;
        sw_err_clear(&se);
        int r = sw_st_read(sp, &sf, &se);
        if (r) {
            snprintf(s->problem, sizeof(s->problem), "%.200s", se.msg);
            ix->complete = false;
            continue;
        }
        /* Every tensor the index maps to this shard must be in its header. */
        json_object_foreach(wm, tname, f)
        {
            if (strcmp(json_string_value(f), s->file))
                continue;
            bool found = false;
            for (size_t i = 0; i < sf.n_tensors && !found; i++)
                found = !strcmp(sf.tensors[i].name, tname);
            if (!found) {
                ix->missing_tensors++;
                ix->complete = false;
                if (!s->problem[0])
                    snprintf(s->problem, sizeof(s->problem),
                             "tensor %.120s is mapped here but absent from the header", tname);
            }
        }
        if (s->size != 8 + sf.header_len + sf.data_len) {
            snprintf(s->problem, sizeof(s->problem), "size %llu != 8 + header %llu + data %llu",
                     (unsigned long long)s->size, (unsigned long long)sf.header_len,
                     (unsigned long long)sf.data_len);
            ix->complete = false;
        } else if (!s->problem[0]) {
            s->complete = true;
        }
        for (int d = 0; d < SW_ST__N; d++)
            ix->bytes_by_dtype[d] += sf.bytes_by_dtype[d];
        ix->weight_bytes += sf.data_len;
        sw_st_file_free(&sf);
    }
out:
    json_decref(root);
    if (rc)
        sw_st_index_free(ix);
    return rc;
}

int sw_hf_weight_bytes(const char *dir, uint64_t *bytes, struct sw_err *e)
{
    char p[4096];
    struct stat st;
    *bytes = 0;
    snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
    if (stat(p, &st) == 0) {
        struct sw_st_index ix;
        int rc = sw_st_index_load(dir, &ix, e);
        if (rc)
            return rc;
        *bytes = ix.weight_bytes;
        sw_st_index_free(&ix);
        return 0;
    }
    DIR *d = opendir(dir);
    if (!d)
        return sw_err_at(e, SW_ENOENT, dir, 0, 0, "cannot open directory: %s", strerror(errno));
    int rc = 0, found = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 12 || strcmp(de->d_name + l - 12, ".safetensors"))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        struct sw_st_file f;
        rc = sw_st_read(p, &f, e);
        if (rc)
            break;
        *bytes += f.data_len;
        found++;
        sw_st_file_free(&f);
    }
    closedir(d);
    if (!rc && !found)
        rc = sw_err_at(e, SW_ENOENT, dir, 0, 0, "no safetensors weights here");
    return rc;
}
