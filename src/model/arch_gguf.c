/*
 * model/arch_gguf: the architecture of a parsed GGUF header: metadata through arch_hparams.c (the
 * llama.cpp reading), tensors into weight bytes by role, per layer, and the span llama.cpp maps.
 *
 * The mapped span mirrors llama_model_loader::get_mapping_range (src/llama-model-loader.cpp): per
 * file, from the lowest tensor offset to the highest offset + size among the tensors the model
 * loads. Archs whose loaders skip the NextN/MTP tensors unless MTP decoding is asked for
 * (TENSOR_SKIP in src/models/<arch>.cpp) leave those tensors out of the span.
 *
 * What it does not do: parse the file (model/gguf) or size memory (memory/).
 */
#include "arch_internal.h"

#include <slipway/gguf.h>

#include <stdio.h>
#include <string.h>

struct gsrc {
    const struct sw_gguf *g;
    const char *arch;
};

static const struct sw_gguf_kv *gfind(const struct gsrc *s, const char *key)
{
    char full[320];
    if (key[0] == '@')
        return sw_gguf_find(s->g, key + 1);
    snprintf(full, sizeof(full), "%s.%s", s->arch, key);
    return sw_gguf_find(s->g, full);
}

static int widen(enum sw_gguf_type t, const struct sw_gguf_value *v, double *out)
{
    switch (t) {
    case SW_GGUF_UINT8:
    case SW_GGUF_UINT16:
    case SW_GGUF_UINT32:
    case SW_GGUF_UINT64:
        *out = (double)v->as.u;
        return 0;
    case SW_GGUF_INT8:
    case SW_GGUF_INT16:
    case SW_GGUF_INT32:
    case SW_GGUF_INT64:
        *out = (double)v->as.i;
        return 0;
    case SW_GGUF_FLOAT32:
    case SW_GGUF_FLOAT64:
        *out = v->as.f;
        return 0;
    case SW_GGUF_BOOL:
        *out = v->as.b ? 1 : 0;
        return 0;
    default:
        return SW_EPARSE;
    }
}

static int g_num(const void *ctx, const char *key, double *out)
{
    const struct sw_gguf_kv *kv = gfind(ctx, key);
    if (!kv)
        return SW_ENOENT;
    return widen(kv->val.type, &kv->val, out);
}

static int g_arr(const void *ctx, const char *key, double *out, size_t n, size_t *len)
{
    const struct sw_gguf_kv *kv = gfind(ctx, key);
    if (!kv)
        return SW_ENOENT;
    if (kv->val.type != SW_GGUF_ARRAY)
        return SW_EPARSE;
    *len = (size_t)kv->val.as.arr.n;
    if (!out)
        return 0;
    for (size_t i = 0; i < *len && i < n; i++) {
        switch (kv->val.as.arr.elem) {
        case SW_GGUF_UINT8:
        case SW_GGUF_UINT16:
        case SW_GGUF_UINT32:
        case SW_GGUF_UINT64:
            out[i] = (double)kv->val.as.arr.v.u[i];
            break;
        case SW_GGUF_INT8:
        case SW_GGUF_INT16:
        case SW_GGUF_INT32:
        case SW_GGUF_INT64:
            out[i] = (double)kv->val.as.arr.v.i[i];
            break;
        case SW_GGUF_FLOAT32:
        case SW_GGUF_FLOAT64:
            out[i] = kv->val.as.arr.v.f[i];
            break;
        case SW_GGUF_BOOL:
            out[i] = kv->val.as.arr.v.b[i] ? 1 : 0;
            break;
        default:
            return SW_EPARSE;
        }
    }
    return 0;
}

static int g_str(const void *ctx, const char *key, const char **out)
{
    const struct sw_gguf_kv *kv = gfind(ctx, key);
    *out = NULL;
    if (!kv || kv->val.type != SW_GGUF_STRING)
        return SW_ENOENT;
    *out = kv->val.as.str.s;
    return 0;
}

/* Archs whose MTP/NextN tensors are created with TENSOR_SKIP unless MTP is loaded. */
static bool skips_nextn(const char *arch)
{
    static const char *const list[] = {
        "bailingmoe2", "bailingmoe3", "cohere2moe",  "deepseek2", "deepseek32", "deepseek4",
        "dots3note",   "exaone-moe",  "exaone4",     "glm-dsa",   "glm4moe",    "glm4",
        "hy_v3",       "kimi-k3",     "kimi-linear", "mimo2",     "nemotron_h", "nemotron_h_moe",
        "qwen35",      "qwen35moe",   "qwen3next",   "step35",    "mistral4",
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(list); i++)
        if (!strcmp(list[i], arch))
            return true;
    return false;
}

static enum sw__wrole role_of(enum sw_gguf_role r)
{
    switch (r) {
    case SW_GGUF_ROLE_TOKEN_EMBD:
        return SW__W_EMBD;
    case SW_GGUF_ROLE_OUTPUT:
        return SW__W_OUTPUT;
    case SW_GGUF_ROLE_ATTENTION:
        return SW__W_ATTN;
    case SW_GGUF_ROLE_FFN:
        return SW__W_FFN;
    case SW_GGUF_ROLE_EXPERTS:
        return SW__W_EXPERTS;
    case SW_GGUF_ROLE_SSM:
        return SW__W_SSM;
    case SW_GGUF_ROLE_NORMS:
        return SW__W_NORM;
    default:
        return SW__W_OTHER;
    }
}

int sw_arch_from_gguf(const struct sw_gguf *g, struct sw_arch **out, struct sw_err *e)
{
    const char *arch = NULL;
    struct sw_arch *a = NULL;
    uint64_t *first = NULL, *last = NULL;
    int rc;

    *out = NULL;
    if (sw_gguf_get_str(g, "general.architecture", &arch) || !arch)
        return sw_err_set(e, SW_EPARSE, "%s: no general.architecture key",
                          g->path ? g->path : "<gguf>");
    struct gsrc src = {g, arch};
    struct sw__meta m = {&src, arch, g->path ? g->path : "<gguf>", g_num, g_arr, g_str};
    rc = sw__arch_from_meta(&m, &a, e);
    if (rc)
        return rc;
    a->source = SW_ARCH_SRC_GGUF;

    int nfiles = g->n_splits > 0 ? g->n_splits : 1;
    first = sw_calloc((size_t)nfiles, sizeof(*first));
    last = sw_calloc((size_t)nfiles, sizeof(*last));
    if (!first || !last) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (int f = 0; f < nfiles; f++)
        first[f] = UINT64_MAX;

    bool skip = skips_nextn(arch);
    uint32_t trunk = a->n_layer - a->n_layer_nextn;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct sw_gguf_tensor *t = &g->tensors[i];
        const char *name = t->name.s ? t->name.s : "";
        int layer = sw__tensor_layer(name);
        enum sw__wrole role = role_of(sw_gguf_tensor_role(name));
        bool loaded = !(skip && layer >= 0 && (uint32_t)layer >= trunk);
        if (!loaded)
            continue;
        sw__weights_add(&a->weights, role, t->nbytes);
        if (layer >= 0 && (uint32_t)layer < a->n_layer)
            a->layers[layer].weight_bytes += t->nbytes;
        int f = t->split >= 0 && t->split < nfiles ? t->split : 0;
        if (t->offset < first[f])
            first[f] = t->offset;
        if (t->offset + t->nbytes > last[f])
            last[f] = t->offset + t->nbytes;
    }
    for (int f = 0; f < nfiles; f++)
        if (first[f] != UINT64_MAX && last[f] > first[f])
            a->weights.mapped += last[f] - first[f];
    a->weights.known = true;
    rc = sw_arch_finalize(a, e);
    if (rc)
        goto out;
    *out = a;
    a = NULL;
out:
    sw_free(first);
    sw_free(last);
    sw_arch_free(a);
    return rc;
}
