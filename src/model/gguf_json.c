/*
 * model/gguf_json: the summary of a parsed GGUF that `slipway gguf inspect` prints: file facts,
 * an architecture summary, metadata (long arrays summarized), tensors grouped by role and by ggml
 * type with bytes, and optionally every tensor. Also the tensor-role classifier, by llama.cpp's
 * tensor naming (src/llama-arch.cpp LLM_TENSOR_NAMES: "blk.%d.attn_q", "token_embd", ...).
 *
 * What it does not do: interpret the architecture (model/arch does that); the summary only echoes
 * keys that are there.
 */
#include <slipway/gguf.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/gguf_internal.h"

static const char *const roles[SW_GGUF__NROLES] = {
    "token_embd", "output", "attention", "ffn", "experts", "ssm", "norms", "vision", "other",
};

const char *sw_gguf_role_name(enum sw_gguf_role r)
{
    return (unsigned)r < SW_GGUF__NROLES ? roles[r] : "other";
}

static bool has(const char *s, const char *needle)
{
    return strstr(s, needle) != NULL;
}

static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

enum sw_gguf_role sw_gguf_tensor_role(const char *name)
{
    if (!name)
        return SW_GGUF_ROLE_OTHER;
    if (starts(name, "v.") || starts(name, "mm.") || starts(name, "mm_") || starts(name, "a.") ||
        starts(name, "vision") || starts(name, "resampler"))
        return SW_GGUF_ROLE_VISION;
    if (starts(name, "token_embd_norm") || starts(name, "output_norm"))
        return SW_GGUF_ROLE_NORMS;
    if (starts(name, "token_embd.") || starts(name, "per_layer_token_embd") ||
        starts(name, "position_embd") || starts(name, "token_types"))
        return SW_GGUF_ROLE_TOKEN_EMBD;
    if (starts(name, "output.") || starts(name, "cls.output"))
        return SW_GGUF_ROLE_OUTPUT;
    if (!starts(name, "blk."))
        return SW_GGUF_ROLE_OTHER;
    const char *rest = strchr(name + 4, '.');
    rest = rest ? rest + 1 : name;
    if (starts(rest, "vis_"))
        return SW_GGUF_ROLE_VISION;
    if (has(rest, "norm"))
        return SW_GGUF_ROLE_NORMS;
    if (has(rest, "_exps") || has(rest, "_shexp") || has(rest, "_chexps") ||
        starts(rest, "ffn_gate_inp") || starts(rest, "exp_probs") || starts(rest, "ffn_routed"))
        return SW_GGUF_ROLE_EXPERTS;
    if (starts(rest, "ssm_") || starts(rest, "shortconv") || starts(rest, "time_mix") ||
        starts(rest, "channel_mix") || has(rest, "conv1d"))
        return SW_GGUF_ROLE_SSM;
    if (starts(rest, "attn") || starts(rest, "indexer"))
        return SW_GGUF_ROLE_ATTENTION;
    if (starts(rest, "ffn"))
        return SW_GGUF_ROLE_FFN;
    return SW_GGUF_ROLE_OTHER;
}

static const char *const ftypes[] = {
    [0] = "all F32",  [1] = "F16",      [2] = "Q4_0",       [3] = "Q4_1",    [7] = "Q8_0",
    [8] = "Q5_0",     [9] = "Q5_1",     [10] = "Q2_K",      [11] = "Q3_K_S", [12] = "Q3_K_M",
    [13] = "Q3_K_L",  [14] = "Q4_K_S",  [15] = "Q4_K_M",    [16] = "Q5_K_S", [17] = "Q5_K_M",
    [18] = "Q6_K",    [19] = "IQ2_XXS", [20] = "IQ2_XS",    [21] = "Q2_K_S", [22] = "IQ3_XS",
    [23] = "IQ3_XXS", [24] = "IQ1_S",   [25] = "IQ4_NL",    [26] = "IQ3_S",  [27] = "IQ3_M",
    [28] = "IQ2_S",   [29] = "IQ2_M",   [30] = "IQ4_XS",    [31] = "IQ1_M",  [32] = "BF16",
    [36] = "TQ1_0",   [37] = "TQ2_0",   [38] = "MXFP4_MOE", [39] = "NVFP4",  [40] = "Q1_0",
    [41] = "Q2_0",
};

/* llama.h enum llama_ftype (general.file_type) */
const char *sw_gguf_ftype_name(uint64_t ft)
{
    if (ft < SW_ARRAY_LEN(ftypes) && ftypes[ft])
        return ftypes[ft];
    return NULL;
}

/* ------------------------------------------------------------------------------------------- */

/* A JSON string from file bytes: they may hold NULs or invalid UTF-8, which jansson refuses;
 * such bytes become U+FFFD (sw_json_text). */
static json_t *jstr(const char *s, uint64_t len)
{
    return sw_json_text(s, (size_t)len, NULL); /* the reader bounded len by the file's size */
}

static int set_bytes(json_t *o, const char *key, const char *s)
{
    return sw_json_set_new(o, key, s ? jstr(s, strlen(s)) : json_null());
}

static json_t *jreal(double f)
{
    if (isnan(f))
        return json_string("nan");
    if (isinf(f))
        return json_string(f > 0 ? "inf" : "-inf");
    return json_real(f);
}

static json_t *ju64(uint64_t u)
{
    if (u > (uint64_t)INT64_MAX) {
        char b[32];
        snprintf(b, sizeof(b), "%llu", (unsigned long long)u);
        return json_string(b);
    }
    return json_integer((json_int_t)u);
}

static json_t *elem_json(const struct sw_gguf_value *v, uint64_t i)
{
    struct sw_gguf_value x;
    if (sw_gguf_array_elem(v, i, &x))
        return NULL;
    return sw_gguf_value_to_json(&x, 0); /* a scalar: max_elems is not used */
}

json_t *sw_gguf_value_to_json(const struct sw_gguf_value *v, uint64_t max_elems)
{
    switch (v->type) {
    case SW_GGUF_STRING:
        return jstr(v->as.str.s, v->as.str.len);
    case SW_GGUF_BOOL:
        return json_boolean(v->as.b);
    case SW_GGUF_FLOAT32:
    case SW_GGUF_FLOAT64:
        return jreal(v->as.f);
    case SW_GGUF_UINT8:
    case SW_GGUF_UINT16:
    case SW_GGUF_UINT32:
    case SW_GGUF_UINT64:
        return ju64(v->as.u);
    case SW_GGUF_ARRAY:
        break;
    default:
        return json_integer(v->as.i);
    }
    uint64_t n = v->as.arr.n;
    bool summarize = n > max_elems;
    json_t *list = json_array();
    if (!list)
        return NULL;
    for (uint64_t i = 0; i < n && i < (summarize ? 8 : max_elems); i++) {
        if (json_array_append_new(list, elem_json(v, i))) {
            json_decref(list);
            return NULL;
        }
    }
    if (!summarize)
        return list;
    json_t *o = json_object();
    int rc = o ? 0 : SW_ENOMEM;
    if (!rc)
        rc = sw_json_set_str(o, "type", "array");
    if (!rc)
        rc = sw_json_set_str(o, "elem", sw_gguf_type_name(v->as.arr.elem));
    if (!rc)
        rc = sw_json_set_new(o, "count", ju64(n));
    if (!rc) {
        rc = sw_json_set_new(o, "first", list); /* steals list, on failure too */
        list = NULL;
    }
    if (rc) {
        /* list was leaked here when an earlier key failed (found once jstr stopped hiding out
         * of memory behind a retry) */
        json_decref(list);
        json_decref(o);
        return NULL;
    }
    return o;
}

static int add_key(json_t *o, const struct sw_gguf *g, const char *name, const char *suffix)
{
    char key[256];
    if (sw_gguf_arch_key(g, suffix, key, sizeof(key)))
        return 0;
    const struct sw_gguf_kv *kv = sw_gguf_find(g, key);
    if (!kv)
        return 0;
    return sw_json_set_new(o, name, sw_gguf_value_to_json(&kv->val, 16));
}

static json_t *arch_json(const struct sw_gguf *g)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    const char *s;
    uint64_t ft;
    int rc = set_bytes(o, "architecture", sw_gguf_arch(g));
    if (!rc && !sw_gguf_get_str(g, "general.name", &s))
        rc = set_bytes(o, "name", s);
    static const char *const keys[][2] = {
        {"block_count", "block_count"},
        {"context_length", "context_length"},
        {"embedding_length", "embedding_length"},
        {"feed_forward_length", "feed_forward_length"},
        {"head_count", "attention.head_count"},
        {"head_count_kv", "attention.head_count_kv"},
        {"key_length", "attention.key_length"},
        {"value_length", "attention.value_length"},
        {"sliding_window", "attention.sliding_window"},
        {"expert_count", "expert_count"},
        {"expert_used_count", "expert_used_count"},
        {"ssm_state_size", "ssm.state_size"},
        {"ssm_inner_size", "ssm.inner_size"},
        {"vocab_size", "vocab_size"},
    };
    for (size_t i = 0; !rc && i < SW_ARRAY_LEN(keys); i++)
        rc = add_key(o, g, keys[i][0], keys[i][1]);
    const struct sw_gguf_kv *tok = sw_gguf_find(g, "tokenizer.ggml.tokens");
    if (!rc && tok && tok->val.type == SW_GGUF_ARRAY)
        rc = sw_json_set_new(o, "n_vocab", ju64(tok->val.as.arr.n));
    if (!rc && !sw_gguf_get_u64(g, "general.file_type", &ft)) {
        rc = sw_json_set_new(o, "file_type", ju64(ft));
        if (!rc)
            rc = sw_json_set_str(o, "file_type_name", sw_gguf_ftype_name(ft));
    }
    if (!rc)
        rc = sw_json_set_new(o, "weight_bytes", ju64(g->tensor_bytes));
    if (!rc)
        rc = sw_json_set_bool(o, "chat_template", sw_gguf_find(g, "tokenizer.chat_template"));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int sw_gguf_role_totals(const struct sw_gguf *g, uint64_t count[SW_GGUF__NROLES],
                        uint64_t bytes[SW_GGUF__NROLES])
{
    for (int r = 0; r < SW_GGUF__NROLES; r++)
        count[r] = bytes[r] = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        enum sw_gguf_role r = sw_gguf_tensor_role(g->tensors[i].name.s);
        count[r]++;
        bytes[r] += g->tensors[i].nbytes;
    }
    return 0;
}

void sw_gguf_type_totals(const struct sw_gguf *g, uint32_t type, uint64_t *count, uint64_t *bytes)
{
    *count = *bytes = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].type == type) {
            (*count)++;
            *bytes += g->tensors[i].nbytes;
        }
}

static json_t *tensor_json(const struct sw_gguf *g, const struct sw_gguf_tensor *t)
{
    const struct sw_ggml_type *ty = sw_gguf_type(g, t->type);
    json_t *shape = json_array();
    json_t *o = json_object();
    int rc = !shape || !o;
    for (uint32_t d = 0; !rc && d < t->n_dims; d++)
        rc = json_array_append_new(shape, ju64(t->ne[d]));
    if (!rc)
        rc = sw_json_set_new(o, "name", jstr(t->name.s, t->name.len));
    if (!rc)
        rc = sw_json_set_str(o, "type", ty ? ty->name : "?");
    if (!rc)
        rc = sw_json_set_str(o, "role", sw_gguf_role_name(sw_gguf_tensor_role(t->name.s)));
    if (!rc) {
        rc = sw_json_set_new(o, "shape", shape);
        shape = NULL;
    }
    if (!rc)
        rc = sw_json_set_new(o, "bytes", ju64(t->nbytes));
    if (!rc)
        rc = sw_json_set_new(o, "offset", ju64(t->offset));
    if (!rc)
        rc = sw_json_set_int(o, "split", t->split);
    json_decref(shape);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sw_gguf_to_json(const struct sw_gguf *g, bool all_tensors)
{
    json_t *o = json_object();
    json_t *meta = json_object();
    json_t *rl = json_array();
    json_t *tl = json_array();
    int rc = !o || !meta || !rl || !tl;
    if (!rc)
        rc = set_bytes(o, "path", g->path);
    if (!rc)
        rc = sw_json_set_int(o, "version", g->version);
    if (!rc)
        rc = sw_json_set_new(o, "file_size", ju64(g->file_size));
    if (!rc)
        rc = sw_json_set_int(o, "n_splits", g->n_splits);
    if (!rc)
        rc = sw_json_set_new(o, "alignment", ju64(g->alignment));
    if (!rc)
        rc = sw_json_set_new(o, "data_offset", ju64(g->data_offset));
    if (!rc)
        rc = sw_json_set_new(o, "n_kv", ju64(g->n_kv));
    if (!rc)
        rc = sw_json_set_new(o, "n_tensors", ju64(g->n_tensors));
    if (!rc)
        rc = sw_json_set_new(o, "tensor_bytes", ju64(g->tensor_bytes));
    if (!rc)
        rc = sw_json_set_bool(o, "header_only", g->header_only);
    if (!rc)
        rc = sw_json_set_new(o, "arch", arch_json(g));
    for (uint64_t i = 0; !rc && i < g->n_kv; i++) {
        json_t *v = sw_gguf_value_to_json(&g->kv[i].val, 32);
        /* keys may hold bytes jansson refuses as object keys; they are shown sanitized */
        json_t *k = jstr(g->kv[i].key.s, g->kv[i].key.len);
        rc = !v || !k || json_object_set_new(meta, json_string_value(k), v);
        if (rc && !k)
            json_decref(v);
        json_decref(k);
    }
    if (!rc) {
        rc = sw_json_set_new(o, "metadata", meta);
        meta = NULL;
    }
    uint64_t cnt[SW_GGUF__NROLES], bytes[SW_GGUF__NROLES];
    sw_gguf_role_totals(g, cnt, bytes);
    for (int r = 0; !rc && r < SW_GGUF__NROLES; r++) {
        if (!cnt[r])
            continue;
        json_t *x = json_object();
        rc = !x || sw_json_set_str(x, "role", roles[r]) ||
             sw_json_set_new(x, "tensors", ju64(cnt[r])) ||
             sw_json_set_new(x, "bytes", ju64(bytes[r]));
        if (!rc)
            rc = json_array_append(rl, x);
        json_decref(x);
    }
    if (!rc) {
        rc = sw_json_set_new(o, "roles", rl);
        rl = NULL;
    }
    /* bytes per ggml type */
    json_t *types = json_array();
    rc = rc || !types;
    for (size_t k = 0; !rc && k < sw_ggml_type_count_known(); k++) {
        const struct sw_ggml_type *ty = sw_ggml_type_at(k);
        uint64_t c, b;
        sw_gguf_type_totals(g, ty->id, &c, &b);
        if (!c)
            continue;
        json_t *x = json_object();
        rc = !x || sw_json_set_str(x, "type", ty->name) || sw_json_set_new(x, "tensors", ju64(c)) ||
             sw_json_set_new(x, "bytes", ju64(b));
        if (!rc)
            rc = json_array_append(types, x);
        json_decref(x);
    }
    if (!rc) {
        rc = sw_json_set_new(o, "types", types);
        types = NULL;
    }
    json_decref(types);
    for (uint64_t i = 0; !rc && all_tensors && i < g->n_tensors; i++)
        rc = json_array_append_new(tl, tensor_json(g, &g->tensors[i]));
    if (!rc && all_tensors) {
        rc = sw_json_set_new(o, "tensors", tl);
        tl = NULL;
    }
    json_decref(meta);
    json_decref(rl);
    json_decref(tl);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}
