/*
 * model/gguf_get: typed lookups over a parsed GGUF header: keys, "<arch>.<suffix>" keys, per-layer
 * values that llama.cpp accepts as a scalar or an n_layer array, tensors by name.
 *
 * Integer getters are lenient about the stored width and signedness (a converter may write a count
 * as u32, i32 or u64) but strict about meaning: a negative value never becomes a huge unsigned one,
 * a float never becomes an integer, and a scalar getter never reads an array.
 *
 * What it does not do: defaults. A missing key is SW_ENOENT; the caller (model/arch, following
 * llama.cpp's loader) decides whether that is an error.
 */
#include <slipway/gguf.h>

#include <inttypes.h>
#include <string.h>

#include "model/gguf_internal.h"

static bool is_uns(enum sw_gguf_type t)
{
    return t == SW_GGUF_UINT8 || t == SW_GGUF_UINT16 || t == SW_GGUF_UINT32 || t == SW_GGUF_UINT64;
}

static bool is_sig(enum sw_gguf_type t)
{
    return t == SW_GGUF_INT8 || t == SW_GGUF_INT16 || t == SW_GGUF_INT32 || t == SW_GGUF_INT64;
}

static bool is_flt(enum sw_gguf_type t)
{
    return t == SW_GGUF_FLOAT32 || t == SW_GGUF_FLOAT64;
}

const struct sw_gguf_kv *sw_gguf_find(const struct sw_gguf *g, const char *key)
{
    if (!g || !key)
        return NULL;
    int64_t i = sw__gguf_kv_pos(g, key, strlen(key));
    return i < 0 ? NULL : &g->kv[i];
}

const struct sw_gguf_tensor *sw_gguf_tensor(const struct sw_gguf *g, const char *name)
{
    if (!g || !name)
        return NULL;
    int64_t i = sw__gguf_tensor_pos(g, name, strlen(name));
    return i < 0 ? NULL : &g->tensors[i];
}

uint64_t sw_gguf_tensor_nelements(const struct sw_gguf_tensor *t)
{
    /* the reader checked that this product stays below 2^63 */
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

int sw_gguf_array_elem(const struct sw_gguf_value *v, uint64_t i, struct sw_gguf_value *out)
{
    memset(out, 0, sizeof(*out));
    if (v->type != SW_GGUF_ARRAY)
        return SW_EINVAL;
    if (i >= v->as.arr.n)
        return SW_ERANGE;
    out->type = v->as.arr.elem;
    if (out->type == SW_GGUF_STRING)
        out->as.str = v->as.arr.v.str[i];
    else if (out->type == SW_GGUF_BOOL)
        out->as.b = v->as.arr.v.b[i];
    else if (is_flt(out->type))
        out->as.f = v->as.arr.v.f[i];
    else if (is_uns(out->type))
        out->as.u = v->as.arr.v.u[i];
    else
        out->as.i = v->as.arr.v.i[i];
    return 0;
}

/* Element i of an array value (or the scalar when i < 0) as u64 / i64 / f64. */
static int elem_u64(const struct sw_gguf_value *v, int64_t i, uint64_t *out)
{
    enum sw_gguf_type t = i < 0 ? v->type : v->as.arr.elem;
    if (t == SW_GGUF_BOOL) {
        *out = (i < 0 ? v->as.b : v->as.arr.v.b[i]) ? 1 : 0;
        return 0;
    }
    if (is_uns(t)) {
        *out = i < 0 ? v->as.u : v->as.arr.v.u[i];
        return 0;
    }
    if (is_sig(t)) {
        int64_t s = i < 0 ? v->as.i : v->as.arr.v.i[i];
        if (s < 0)
            return SW_ERANGE;
        *out = (uint64_t)s;
        return 0;
    }
    return SW_EPARSE;
}

static int elem_f64(const struct sw_gguf_value *v, int64_t i, double *out)
{
    enum sw_gguf_type t = i < 0 ? v->type : v->as.arr.elem;
    if (is_flt(t)) {
        *out = i < 0 ? v->as.f : v->as.arr.v.f[i];
        return 0;
    }
    if (is_uns(t)) {
        *out = (double)(i < 0 ? v->as.u : v->as.arr.v.u[i]);
        return 0;
    }
    if (is_sig(t)) {
        *out = (double)(i < 0 ? v->as.i : v->as.arr.v.i[i]);
        return 0;
    }
    return SW_EPARSE;
}

int sw_gguf_get_u64(const struct sw_gguf *g, const char *key, uint64_t *out)
{
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return SW_ENOENT;
    if (kv->val.type == SW_GGUF_ARRAY)
        return SW_EPARSE;
    return elem_u64(&kv->val, -1, out);
}

int sw_gguf_get_i64(const struct sw_gguf *g, const char *key, int64_t *out)
{
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return SW_ENOENT;
    const struct sw_gguf_value *v = &kv->val;
    if (is_sig(v->type)) {
        *out = v->as.i;
        return 0;
    }
    if (is_uns(v->type)) {
        if (v->as.u > (uint64_t)INT64_MAX)
            return SW_ERANGE;
        *out = (int64_t)v->as.u;
        return 0;
    }
    if (v->type == SW_GGUF_BOOL) {
        *out = v->as.b;
        return 0;
    }
    return SW_EPARSE;
}

int sw_gguf_get_f64(const struct sw_gguf *g, const char *key, double *out)
{
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return SW_ENOENT;
    if (kv->val.type == SW_GGUF_ARRAY)
        return SW_EPARSE;
    return elem_f64(&kv->val, -1, out);
}

int sw_gguf_get_bool(const struct sw_gguf *g, const char *key, bool *out)
{
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return SW_ENOENT;
    if (kv->val.type != SW_GGUF_BOOL)
        return SW_EPARSE;
    *out = kv->val.as.b;
    return 0;
}

int sw_gguf_get_str(const struct sw_gguf *g, const char *key, const char **out)
{
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return SW_ENOENT;
    if (kv->val.type != SW_GGUF_STRING)
        return SW_EPARSE;
    *out = kv->val.as.str.s;
    return 0;
}

const char *sw_gguf_arch(const struct sw_gguf *g)
{
    const char *a = NULL;
    if (sw_gguf_get_str(g, "general.architecture", &a))
        return NULL;
    return a;
}

int sw_gguf_arch_key(const struct sw_gguf *g, const char *suffix, char *out, size_t n)
{
    const char *a = sw_gguf_arch(g);
    if (!a)
        return SW_ENOENT;
    int k = snprintf(out, n, "%s.%s", a, suffix);
    if (k < 0 || (size_t)k >= n)
        return SW_ERANGE;
    return 0;
}

int sw_gguf_arch_u64(const struct sw_gguf *g, const char *suffix, uint64_t *out)
{
    char key[256];
    int rc = sw_gguf_arch_key(g, suffix, key, sizeof(key));
    return rc ? rc : sw_gguf_get_u64(g, key, out);
}

int sw_gguf_arch_f64(const struct sw_gguf *g, const char *suffix, double *out)
{
    char key[256];
    int rc = sw_gguf_arch_key(g, suffix, key, sizeof(key));
    return rc ? rc : sw_gguf_get_f64(g, key, out);
}

/* llama.cpp's llama_model_loader::get_key_or_arr: "<arch>.<suffix>" as a scalar (broadcast to n
 * layers) or an array of exactly n elements; *arr says which. */
static int per_layer_value(const struct sw_gguf *g, const char *suffix, size_t n,
                           const struct sw_gguf_value **out, bool *arr)
{
    char key[256];
    int rc = sw_gguf_arch_key(g, suffix, key, sizeof(key));
    if (rc)
        return rc;
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return SW_ENOENT;
    *out = &kv->val;
    *arr = kv->val.type == SW_GGUF_ARRAY;
    return *arr && kv->val.as.arr.n != n ? SW_EPARSE : 0;
}

int sw_gguf_arch_per_layer(const struct sw_gguf *g, const char *suffix, uint64_t *out, size_t n)
{
    const struct sw_gguf_value *v;
    bool arr;
    int rc = per_layer_value(g, suffix, n, &v, &arr);
    if (rc || arr) {
        for (size_t i = 0; !rc && i < n; i++)
            rc = elem_u64(v, (int64_t)i, &out[i]);
        return rc;
    }
    uint64_t x;
    rc = elem_u64(v, -1, &x);
    for (size_t i = 0; !rc && i < n; i++)
        out[i] = x;
    return rc;
}

int sw_gguf_arch_per_layer_f64(const struct sw_gguf *g, const char *suffix, double *out, size_t n)
{
    const struct sw_gguf_value *v;
    bool arr;
    int rc = per_layer_value(g, suffix, n, &v, &arr);
    if (rc || arr) {
        for (size_t i = 0; !rc && i < n; i++)
            rc = elem_f64(v, (int64_t)i, &out[i]);
        return rc;
    }
    double x;
    rc = elem_f64(v, -1, &x);
    for (size_t i = 0; !rc && i < n; i++)
        out[i] = x;
    return rc;
}

int sw_gguf_key_err(const struct sw_gguf *g, const char *key, const char *expected, int rc,
                    struct sw_err *e)
{
    const char *where = g && g->path ? g->path : "<gguf>";
    if (!rc)
        return 0;
    if (!expected)
        expected = "another type";
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv || rc == SW_ENOENT)
        return sw_err_at(e, rc, where, 0, 0, "key '%s' not found", key);
    const struct sw_gguf_value *v = &kv->val;
    if (v->type == SW_GGUF_ARRAY)
        return sw_err_at_offset(e, rc, where, (int64_t)kv->offset,
                                "key '%s' is an array of %" PRIu64 " %s, expected %s%s", key,
                                v->as.arr.n, sw_gguf_type_name(v->as.arr.elem), expected,
                                rc == SW_ERANGE ? " (a value is out of range)" : "");
    if (rc == SW_ERANGE)
        return sw_err_at_offset(e, rc, where, (int64_t)kv->offset,
                                "key '%s' (%s) holds a value out of range for %s", key,
                                sw_gguf_type_name(v->type), expected);
    return sw_err_at_offset(e, rc, where, (int64_t)kv->offset, "key '%s' is %s, expected %s", key,
                            sw_gguf_type_name(v->type), expected);
}
