/*
 * model/hf: config.json reader. Normalises the fields that differ between model families (layer
 * pattern keys, mamba/GDN dimension names, MTP layer counts, dtype key renames) into one struct,
 * reading a VLM's text_config first and the top level second.
 *
 * What it does not do: decide what an engine allocates for these layers (memory/), or validate
 * that a model is coherent beyond what a memory law needs (a head count of 0 is refused; an odd
 * intermediate size is not).
 */
#include <slipway/hf.h>

#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const kind_names[SW_HF_LAYER__N] = {
    "full", "sliding", "chunked", "linear", "mamba", "mamba2", "shortconv", "mla", "none",
};

const char *sw_hf_layer_kind_name(enum sw_hf_layer_kind k)
{
    if ((unsigned)k >= SW_HF_LAYER__N)
        return "?";
    return kind_names[k];
}

unsigned sw_hf_dtype_size(const char *n)
{
    if (!n || !*n)
        return 0;
    static const struct {
        const char *name;
        unsigned size;
    } t[] = {
        {"float32", 4},  {"fp32", 4},    {"float", 4},   {"F32", 4},           {"float16", 2},
        {"fp16", 2},     {"half", 2},    {"F16", 2},     {"bfloat16", 2},      {"bf16", 2},
        {"BF16", 2},     {"float64", 8}, {"F64", 8},     {"fp8", 1},           {"fp8_e4m3", 1},
        {"fp8_e5m2", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
        {"int8", 1},     {"uint8", 1},   {"fp8_inc", 1}, {"fp8_ds_mla", 1},    {"auto", 0},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(t); i++)
        if (strcasecmp(n, t[i].name) == 0)
            return t[i].size;
    return 0;
}

/* Look a key up in the text config first, then the top level. */
struct two {
    json_t *text;
    json_t *top;
};

static json_t *get(const struct two *c, const char *key)
{
    json_t *v = NULL;
    if (c->text)
        v = json_object_get(c->text, key);
    if (!v && c->top)
        v = json_object_get(c->top, key);
    if (v && json_is_null(v))
        return NULL;
    return v;
}

/* An integer field: accepts JSON integers and integral reals; anything else is an error. */
static int get_int(const struct two *c, const char *where, const char *key, int64_t *out,
                   struct sw_err *e)
{
    json_t *v = get(c, key);
    if (!v)
        return 0;
    return sw_json_int_range(v, 0, 1ll << 40, where, key, out, e);
}

static void get_str(const struct two *c, const char *key, char *out, size_t n)
{
    json_t *v = get(c, key);
    if (v && json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
}

static enum sw_hf_layer_kind kind_from_string(const char *s, const char *model_type, bool *ok)
{
    *ok = true;
    if (!strcmp(s, "full_attention") || !strcmp(s, "attention") || !strcmp(s, "global") ||
        !strcmp(s, "full") || !strcmp(s, "hybrid"))
        return SW_HF_LAYER_FULL;
    if (!strcmp(s, "sliding_attention") || !strcmp(s, "sliding_window") || !strcmp(s, "local") ||
        !strcmp(s, "sliding"))
        return SW_HF_LAYER_SLIDING;
    if (!strcmp(s, "chunked_attention"))
        return SW_HF_LAYER_CHUNKED;
    if (!strcmp(s, "linear_attention"))
        return SW_HF_LAYER_LINEAR;
    if (!strcmp(s, "mamba") || !strcmp(s, "mamba2"))
        return (strstr(model_type, "mamba2") || strstr(model_type, "nemotron") ||
                strstr(model_type, "granite") || strstr(model_type, "falcon_h1") ||
                !strcmp(s, "mamba2"))
                   ? SW_HF_LAYER_MAMBA2
                   : SW_HF_LAYER_MAMBA;
    if (!strcmp(s, "conv") || !strcmp(s, "short_conv"))
        return SW_HF_LAYER_SHORTCONV;
    *ok = false;
    return SW_HF_LAYER_NONE;
}

static int read_layer_pattern(const struct two *c, const char *where, struct sw_hf_config *o,
                              struct sw_err *e)
{
    int64_t n = o->num_hidden_layers;
    json_t *lt = get(c, "layer_types");
    json_t *lbt = get(c, "layers_block_type");
    json_t *hop = get(c, "hybrid_override_pattern");
    json_t *nrl = get(c, "no_rope_layers");
    bool use_swa = true;
    json_t *usw = get(c, "use_sliding_window");
    if (usw && json_is_boolean(usw))
        use_swa = json_is_true(usw);

    enum sw_hf_layer_kind deflt = SW_HF_LAYER_FULL;
    if (!strcmp(o->model_type, "mamba") || !strcmp(o->model_type, "falcon_mamba"))
        deflt = SW_HF_LAYER_MAMBA;
    else if (!strcmp(o->model_type, "mamba2"))
        deflt = SW_HF_LAYER_MAMBA2;
    for (int64_t i = 0; i < n; i++)
        o->layer_kind[i] = deflt;

    json_t *list = lt ? lt : lbt;
    if (list) {
        if (!json_is_array(list))
            return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s must be an array",
                             lt ? "layer_types" : "layers_block_type");
        size_t len = json_array_size(list);
        if ((int64_t)len < n)
            return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s has %zu entries for %lld layers",
                             lt ? "layer_types" : "layers_block_type", len, (long long)n);
        for (int64_t i = 0; i < n; i++) {
            json_t *s = json_array_get(list, (size_t)i);
            bool ok;
            if (!json_is_string(s))
                return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s[%lld] must be a string",
                                 lt ? "layer_types" : "layers_block_type", (long long)i);
            o->layer_kind[i] = kind_from_string(json_string_value(s), o->model_type, &ok);
            if (!ok)
                return sw_err_at(
                    e, SW_EUNSUPPORTED, where, 0, 0, "%s[%lld]: unknown layer type \"%s\"",
                    lt ? "layer_types" : "layers_block_type", (long long)i, json_string_value(s));
        }
        o->layer_types_given = true;
    } else if (hop && json_is_string(hop)) {
        /* nemotron_h: M = mamba2, * = attention, - = MLP, E = MoE (no cache). */
        const char *p = json_string_value(hop);
        if ((int64_t)strlen(p) < n)
            return sw_err_at(e, SW_EPARSE, where, 0, 0,
                             "hybrid_override_pattern has %zu characters for %lld layers",
                             strlen(p), (long long)n);
        for (int64_t i = 0; i < n; i++) {
            switch (p[i]) {
            case 'M':
                o->layer_kind[i] = SW_HF_LAYER_MAMBA2;
                break;
            case '*':
                o->layer_kind[i] = SW_HF_LAYER_FULL;
                break;
            case '-':
            case 'E':
                o->layer_kind[i] = SW_HF_LAYER_NONE;
                break;
            default:
                return sw_err_at(e, SW_EPARSE, where, 0, 0,
                                 "hybrid_override_pattern[%lld]: unknown symbol '%c'", (long long)i,
                                 p[i]);
            }
        }
        o->layer_types_given = true;
    } else if (o->full_attention_interval > 0) {
        for (int64_t i = 0; i < n; i++)
            o->layer_kind[i] =
                ((i + 1) % o->full_attention_interval == 0) ? SW_HF_LAYER_FULL : SW_HF_LAYER_LINEAR;
    } else if (o->attention_chunk_size > 0 && nrl && json_is_array(nrl)) {
        /* llama4: no_rope_layers[i] == 0 marks a global NoPE layer; the rest are chunked. */
        for (int64_t i = 0; i < n && (size_t)i < json_array_size(nrl); i++) {
            json_t *v = json_array_get(nrl, (size_t)i);
            o->layer_kind[i] = (json_is_integer(v) && json_integer_value(v) == 0)
                                   ? SW_HF_LAYER_FULL
                                   : SW_HF_LAYER_CHUNKED;
        }
    } else if (o->sliding_window > 0 && use_swa) {
        if (o->sliding_window_pattern > 0) {
            for (int64_t i = 0; i < n; i++)
                o->layer_kind[i] = ((i + 1) % o->sliding_window_pattern == 0) ? SW_HF_LAYER_FULL
                                                                              : SW_HF_LAYER_SLIDING;
        } else if (!strcmp(o->model_type, "gemma2") || !strcmp(o->model_type, "gpt_oss")) {
            for (int64_t i = 0; i < n; i++)
                o->layer_kind[i] = (i % 2 == 0) ? SW_HF_LAYER_SLIDING : SW_HF_LAYER_FULL;
        } else {
            for (int64_t i = 0; i < n; i++)
                o->layer_kind[i] = SW_HF_LAYER_SLIDING;
        }
    }
    /* jamba style period/offset. */
    int64_t period = 0, offset = 0;
    int rc = get_int(c, where, "attn_layer_period", &period, e);
    if (!rc)
        rc = get_int(c, where, "attn_layer_offset", &offset, e);
    if (rc)
        return rc;
    if (!list && period > 0) {
        for (int64_t i = 0; i < n; i++)
            o->layer_kind[i] = (i % period == offset) ? SW_HF_LAYER_FULL : SW_HF_LAYER_MAMBA;
    }
    if (!use_swa || o->sliding_window == 0) {
        for (int64_t i = 0; i < n; i++)
            if (o->layer_kind[i] == SW_HF_LAYER_SLIDING && !o->layer_types_given)
                o->layer_kind[i] = SW_HF_LAYER_FULL;
    }
    if (o->kv_lora_rank > 0) {
        for (int64_t i = 0; i < n; i++)
            if (o->layer_kind[i] == SW_HF_LAYER_FULL)
                o->layer_kind[i] = SW_HF_LAYER_MLA;
    }
    return 0;
}

/* The integer fields, each under every name a family gives it (the first one present wins);
 * mamba2 describes its SSM with num_heads and head_dim. */
static int read_ints(const struct two *c, const char *where, struct sw_hf_config *o,
                     struct sw_err *e)
{
    static const struct {
        const char *key;
        size_t off;
    } ints[] = {
#define F(k, f) {k, offsetof(struct sw_hf_config, f)}
        F("num_hidden_layers", num_hidden_layers),
        F("n_layer", num_hidden_layers),
        F("num_layers", num_hidden_layers),
        F("hidden_size", hidden_size),
        F("d_model", hidden_size),
        F("n_embd", hidden_size),
        F("num_attention_heads", num_attention_heads),
        F("n_head", num_attention_heads),
        F("num_key_value_heads", num_key_value_heads),
        F("head_dim", head_dim),
        F("vocab_size", vocab_size),
        F("max_position_embeddings", max_position_embeddings),
        F("intermediate_size", intermediate_size),
        F("sliding_window", sliding_window),
        F("sliding_window_pattern", sliding_window_pattern),
        F("full_attention_interval", full_attention_interval),
        F("attention_chunk_size", attention_chunk_size),
        F("linear_num_key_heads", linear_num_key_heads),
        F("linear_num_value_heads", linear_num_value_heads),
        F("linear_key_head_dim", linear_key_head_dim),
        F("linear_value_head_dim", linear_value_head_dim),
        F("linear_conv_kernel_dim", linear_conv_kernel_dim),
        F("state_size", mamba_d_state),
        F("ssm_state_size", mamba_d_state),
        F("mamba_d_state", mamba_d_state),
        F("conv_kernel", mamba_d_conv),
        F("mamba_d_conv", mamba_d_conv),
        F("d_conv", mamba_d_conv),
        F("expand", mamba_expand),
        F("mamba_expand", mamba_expand),
        F("n_groups", mamba_n_groups),
        F("mamba_n_groups", mamba_n_groups),
        F("mamba_n_heads", mamba_num_heads),
        F("mamba_head_dim", mamba_head_dim),
        F("mamba_d_head", mamba_head_dim),
        F("mamba_d_ssm", mamba_d_inner),
        F("mamba_intermediate_size", mamba_d_inner),
        F("conv_L_cache", conv_L_cache),
        F("kv_lora_rank", kv_lora_rank),
        F("qk_rope_head_dim", qk_rope_head_dim),
        F("qk_nope_head_dim", qk_nope_head_dim),
        F("v_head_dim", v_head_dim),
        F("q_lora_rank", q_lora_rank),
        F("num_nextn_predict_layers", num_nextn_predict_layers),
        F("mtp_num_hidden_layers", num_nextn_predict_layers),
        F("num_experts", num_experts),
        F("num_local_experts", num_experts),
        F("n_routed_experts", num_experts),
        F("num_experts_per_tok", num_experts_per_tok),
        F("moe_intermediate_size", moe_intermediate_size),
        F("encoder_layers", encoder_layers),
        F("num_kv_shared_layers", num_kv_shared_layers),
#undef F
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(ints); i++) {
        int64_t *dst = (int64_t *)((char *)o + ints[i].off);
        int64_t v = -1;
        int rc = get_int(c, where, ints[i].key, &v, e);
        if (rc)
            return rc;
        if (v >= 0 && *dst == 0)
            *dst = v;
    }
    /* mamba2 / nemotron_h: num_heads + head_dim describe the SSM when the model is mamba-only. */
    if (!strcmp(o->model_type, "mamba2")) {
        int64_t v = 0;
        int rc = get_int(c, where, "num_heads", &v, e);
        if (rc)
            return rc;
        o->mamba_num_heads = v;
        o->mamba_head_dim = o->head_dim;
        o->head_dim = 0;
    }
    return 0;
}

/* Layers and heads a memory law can use: layers 1..SW_HF_MAX_LAYERS, attention heads unless the
 * model has no attention, KV heads and head dims defaulted as transformers does. */
static int check_heads(const char *where, struct sw_hf_config *o, struct sw_err *e)
{
    if (o->num_hidden_layers <= 0)
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "num_hidden_layers is missing or 0%s",
                         o->is_vlm ? " (looked in text_config and the top level)" : "");
    if (o->num_hidden_layers > SW_HF_MAX_LAYERS)
        return sw_err_at(e, SW_ERANGE, where, 0, 0, "num_hidden_layers %lld exceeds %d",
                         (long long)o->num_hidden_layers, SW_HF_MAX_LAYERS);
    bool attn_free = !strcmp(o->model_type, "mamba") || !strcmp(o->model_type, "mamba2") ||
                     !strcmp(o->model_type, "falcon_mamba");
    if (!attn_free && o->num_attention_heads <= 0 && o->kv_lora_rank <= 0)
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "num_attention_heads is missing or 0");
    if (o->num_key_value_heads == 0)
        o->num_key_value_heads = o->num_attention_heads;
    if (o->head_dim == 0 && o->num_attention_heads > 0 && o->hidden_size > 0)
        o->head_dim = o->hidden_size / o->num_attention_heads;
    o->head_dim_v = o->head_dim;
    if (o->num_key_value_heads > o->num_attention_heads && o->num_attention_heads > 0)
        return sw_err_at(e, SW_ERANGE, where, 0, 0,
                         "num_key_value_heads (%lld) exceeds num_attention_heads (%lld)",
                         (long long)o->num_key_value_heads, (long long)o->num_attention_heads);
    return 0;
}

/* Quantization: the method and whether KV scales ship with the checkpoint. */
static void read_quant(const json_t *root, const struct two *c, struct sw_hf_config *o)
{
    json_t *qc = json_object_get(root, "quantization_config");
    if (!qc && c->text)
        qc = json_object_get(c->text, "quantization_config");
    if (!qc || !json_is_object(qc))
        return;
    json_t *m = json_object_get(qc, "quant_method");
    if (m && json_is_string(m))
        snprintf(o->quant_method, sizeof(o->quant_method), "%s", json_string_value(m));
    json_t *kvs = json_object_get(qc, "kv_cache_scheme");
    json_t *kva = json_object_get(qc, "kv_cache_quant_algo");
    if (kvs && json_is_object(kvs)) {
        o->has_kv_scales = true;
        json_t *t = json_object_get(kvs, "type");
        json_t *nb = json_object_get(kvs, "num_bits");
        if (t && json_is_string(t) && !strcmp(json_string_value(t), "float") && nb &&
            json_is_integer(nb) && json_integer_value(nb) == 8)
            snprintf(o->kv_cache_quant, sizeof(o->kv_cache_quant), "fp8");
        else if (t && json_is_string(t))
            snprintf(o->kv_cache_quant, sizeof(o->kv_cache_quant), "%s%lld", json_string_value(t),
                     nb && json_is_integer(nb) ? (long long)json_integer_value(nb) : 0ll);
    } else if (kva && json_is_string(kva)) {
        o->has_kv_scales = true;
        snprintf(o->kv_cache_quant, sizeof(o->kv_cache_quant), "%s", json_string_value(kva));
    }
}

/* The names: model_type, the first architecture, torch_dtype (or dtype). */
static void read_names(const json_t *root, const struct two *c, struct sw_hf_config *o)
{
    get_str(c, "model_type", o->model_type, sizeof(o->model_type));
    json_t *arch = json_object_get(root, "architectures");
    if (arch && json_is_array(arch) && json_array_size(arch) > 0 &&
        json_is_string(json_array_get(arch, 0)))
        snprintf(o->architecture, sizeof(o->architecture), "%s",
                 json_string_value(json_array_get(arch, 0)));
    get_str(c, "torch_dtype", o->torch_dtype, sizeof(o->torch_dtype));
    if (!o->torch_dtype[0])
        get_str(c, "dtype", o->torch_dtype, sizeof(o->torch_dtype));
}

/* The SSM state dtype; encoder-only families (no causal KV cache in any engine); tied
 * embeddings. */
static void read_flags(const struct two *c, struct sw_hf_config *o)
{
    get_str(c, "mamba_ssm_dtype", o->mamba_ssm_dtype, sizeof(o->mamba_ssm_dtype));
    static const char *const enc[] = {"bert",       "roberta",    "xlm-roberta", "modernbert",
                                      "nomic_bert", "distilbert", "electra",     NULL};
    if (sw_str_in(o->model_type, enc))
        o->encoder_only = true;
    if (!o->mamba_ssm_dtype[0])
        get_str(c, "ssm_state_dtype", o->mamba_ssm_dtype, sizeof(o->mamba_ssm_dtype));
    json_t *tie = get(c, "tie_word_embeddings");
    o->tie_word_embeddings = tie && json_is_true(tie);
}

int sw_hf_config_parse(const char *text, size_t len, const char *where, struct sw_hf_config *o,
                       struct sw_err *e)
{
    int rc = 0;
    if (!where)
        where = "config.json";
    memset(o, 0, sizeof(*o));
    json_t *root = sw_json_parse(text, len, where, e);
    if (!root)
        return e ? e->code : SW_EPARSE;
    struct two c = {NULL, root};
    if (!json_is_object(root)) {
        rc = sw_err_at(e, SW_EPARSE, where, 1, 1, "config.json must be a JSON object");
        goto out;
    }
    json_t *tc = json_object_get(root, "text_config");
    if (!tc)
        tc = json_object_get(root, "language_config");
    if (!tc)
        tc = json_object_get(root, "llm_config");
    if (tc && json_is_object(tc)) {
        c.text = tc;
        o->is_vlm = true;
    }
    read_names(root, &c, o);
    rc = read_ints(&c, where, o, e);
    if (rc)
        goto out;
    read_flags(&c, o);
    rc = check_heads(where, o, e);
    if (rc)
        goto out;
    read_quant(root, &c, o);
    rc = read_layer_pattern(&c, where, o, e);
out:
    json_decref(root);
    return rc;
}

int sw_hf_config_load(const char *path, struct sw_hf_config *out, struct sw_err *e)
{
    char buf[4096];
    struct stat st;
    const char *p = path;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(buf, sizeof(buf), "%s/config.json", path);
        p = buf;
    }
    char *data = NULL;
    size_t len = 0;
    int rc = sw_read_file(p, SW_HF_CONFIG_CEILING, &data, &len, e);
    if (rc)
        return rc;
    rc = sw_hf_config_parse(data, len, p, out, e);
    sw_free(data);
    return rc;
}

int64_t sw_hf_count_kind(const struct sw_hf_config *c, enum sw_hf_layer_kind k)
{
    int64_t n = 0;
    for (int64_t i = 0; i < c->num_hidden_layers && i < SW_HF_MAX_LAYERS; i++)
        if (c->layer_kind[i] == k)
            n++;
    return n;
}
