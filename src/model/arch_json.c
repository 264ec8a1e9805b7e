/*
 * model/arch_json: an architecture DECLARED in JSON (a fleet file's endpoint whose payload is not on
 * this machine, a data-driven test case), read through the same llama.cpp interpretation as a GGUF.
 *
 * The format is llama.cpp's GGUF metadata, flattened and without the "<arch>." prefix (see
 * include/slipway/arch.h and docs/llamacpp-law.md): {"arch": "qwen35", "block_count": 32, ...}.
 * A key may also carry the prefix ("qwen35.block_count"). Extras: "name", "vocab_size",
 * "weights" ({"total": N} or per role: embd, output, attn, ffn, experts, ssm, norm, other, and
 * "mapped" for the memory-mapped span).
 *
 * What it does not do: check that the declaration matches any real file.
 */
#include "arch_internal.h"

#include <stdio.h>
#include <string.h>

struct jsrc {
    const json_t *obj;
    const char *arch;
};

static const json_t *lookup(const struct jsrc *s, const char *key)
{
    char full[256];
    const json_t *v;
    if (key[0] == '@') {
        if (!strcmp(key, "@general.name"))
            return json_object_get(s->obj, "name");
        return NULL; /* tokenizer etc. are not declared */
    }
    v = json_object_get(s->obj, key);
    if (v)
        return v;
    snprintf(full, sizeof(full), "%s.%s", s->arch, key);
    return json_object_get(s->obj, full);
}

static int scalar(const json_t *v, double *out)
{
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else if (json_is_boolean(v))
        *out = json_is_true(v) ? 1 : 0;
    else
        return SW_EPARSE;
    return 0;
}

static int j_num(const void *ctx, const char *key, double *out)
{
    const json_t *v = lookup(ctx, key);
    if (!v || json_is_null(v))
        return SW_ENOENT;
    return scalar(v, out);
}

static int j_arr(const void *ctx, const char *key, double *out, size_t n, size_t *len)
{
    const json_t *v = lookup(ctx, key);
    if (!v || json_is_null(v))
        return SW_ENOENT;
    if (!json_is_array(v))
        return SW_EPARSE;
    *len = json_array_size(v);
    for (size_t i = 0; out && i < *len && i < n; i++) {
        if (scalar(json_array_get(v, i), &out[i]))
            return SW_EPARSE;
    }
    return 0;
}

static int j_str(const void *ctx, const char *key, const char **out)
{
    const json_t *v = lookup(ctx, key);
    *out = NULL;
    if (!v || !json_is_string(v))
        return SW_ENOENT;
    *out = json_string_value(v);
    return 0;
}

static int weight_field(const json_t *w, const char *k, uint64_t *out, const char *where,
                        struct sw_err *e)
{
    const json_t *v = json_object_get(w, k);
    if (!v)
        return 0;
    if (json_is_number(v)) {
        char key[64];
        int64_t x;
        snprintf(key, sizeof(key), "weights.%s", k);
        int rc = sw_json_int_range(v, 0, INT64_MAX, where, key, &x, e);
        if (rc)
            return rc;
        *out = (uint64_t)x;
        return 0;
    }
    if (json_is_string(v))
        return sw_parse_bytes(json_string_value(v), out, e);
    return sw_err_set(e, SW_EPARSE, "%s: weights.%s must be a byte count", where, k);
}

int sw_arch_from_json(const json_t *decl, const char *where, struct sw_arch **out, struct sw_err *e)
{
    struct sw_arch *a = NULL;
    int rc;
    const json_t *arch;

    *out = NULL;
    if (!where)
        where = "<declaration>";
    if (!json_is_object(decl))
        return sw_err_set(e, SW_EPARSE, "%s: an architecture declaration must be an object", where);
    arch = json_object_get(decl, "arch");
    if (!json_is_string(arch))
        return sw_err_set(e, SW_EPARSE,
                          "%s: the declaration needs \"arch\" (llama.cpp's name, "
                          "e.g. \"qwen35\")",
                          where);
    struct jsrc src = {decl, json_string_value(arch)};
    struct sw__meta m = {&src, src.arch, where, j_num, j_arr, j_str};
    rc = sw__arch_from_meta(&m, &a, e);
    if (rc)
        return rc;
    a->source = SW_ARCH_SRC_JSON;

    const json_t *w = json_object_get(decl, "weights");
    if (w && !json_is_null(w)) {
        struct sw_arch_weights *x = &a->weights;
        if (!json_is_object(w)) {
            rc = sw_err_set(e, SW_EPARSE, "%s: \"weights\" must be an object", where);
            goto out;
        }
        const struct {
            const char *key;
            uint64_t *out;
        } f[] = {{"embd", &x->embd}, {"output", &x->output},   {"attn", &x->attn},
                 {"ffn", &x->ffn},   {"experts", &x->experts}, {"ssm", &x->ssm},
                 {"norm", &x->norm}, {"other", &x->other},     {"mapped", &x->mapped}};
        for (size_t i = 0; i < SW_ARRAY_LEN(f); i++) {
            rc = weight_field(w, f[i].key, f[i].out, where, e);
            if (rc)
                goto out;
        }
        uint64_t total = 0;
        rc = weight_field(w, "total", &total, where, e);
        if (rc)
            goto out;
        x->known = true;
        rc = sw_arch_finalize(a, e);
        if (rc)
            goto out;
        if (total && !x->total)
            x->total = total;
        if (!x->mapped)
            x->mapped = x->total;
    }
    *out = a;
    a = NULL;
    rc = 0;
out:
    sw_arch_free(a);
    return rc;
}
