/*
 * The shape vocabulary: one table naming every setting that changes an endpoint's memory or
 * throughput, its accepted spellings (an engine's own flag names are aliases), its type and
 * bounds, and the engines it applies to. The loader, knobs, known-bad rules, env-file imports and
 * (later) tune all go through this table, so a name means the same thing everywhere.
 *
 * Done here: decoding a `shape:` mapping, reading/writing a field by name, overlaying shapes,
 * matching known-bad rules. Not done here: deciding whether a shape fits (memory, gates) or how a
 * field becomes a flag (engine).
 */
#include "fleet_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define L   SW_FLEET_ENG_BIT(SW_FLEET_LLAMACPP)
#define V   SW_FLEET_ENG_BIT(SW_FLEET_VLLM)
#define S   SW_FLEET_ENG_BIT(SW_FLEET_SGLANG)
#define ALL (L | V | S)
/* clang-format off */
#define AL(...) {__VA_ARGS__, NULL}
#define NOAL {NULL}
/* clang-format on */

static const char *const kv_dtypes[] = {"auto",    "bfloat16",   "bf16",     "float16",
                                        "fp16",    "fp8",        "fp8_e4m3", "fp8_e5m2",
                                        "fp8_inc", "fp8_ds_mla", "fp4_e2m1", NULL};
static const char *const ggml_types[] = {"f32",  "f16",  "bf16", "q8_0",   "q4_0",
                                         "q4_1", "q5_0", "q5_1", "iq4_nl", NULL};
static const char *const on_off_auto[] = {"on", "off", "auto", NULL};

/* X(name, aliases, ft, vtype, engines, choices, min, max, fmin, fmax, member, doc, instead) */
#define SHAPE_FIELDS(X)                                                                            \
    X("ctx_size", AL("ctx", "n_ctx", "c"), SW__FT_COUNT, COUNT, L, NULL, 0, 0, 0, 0, ctx_size,     \
      "llama.cpp -c: KV cells across all slots (0 = the model's training context)",                \
      "vLLM and SGLang size a request with max_model_len")                                         \
    X("max_model_len", AL("context_length", "maxlen"), SW__FT_COUNT, COUNT, V | S, NULL, 1, 0, 0,  \
      0, max_model_len, "tokens per request (vLLM --max-model-len, SGLang --context-length)",      \
      "llama.cpp sizes all slots together with ctx_size")                                          \
    X("seqs", AL("parallel", "max_num_seqs", "max_running_requests", "slots", "np"), SW__FT_COUNT, \
      COUNT, ALL, NULL, 1, 0, 0, 0, seqs,                                                          \
      "concurrent sequences (llama.cpp -np, vLLM --max-num-seqs, SGLang --max-running-requests)",  \
      NULL)                                                                                        \
    X("kv_cache_dtype", NOAL, SW__FT_CHOICE, STR, V | S, kv_dtypes, 0, 0, 0, 0, kv_cache_dtype,    \
      "KV cache dtype (vLLM/SGLang --kv-cache-dtype)",                                             \
      "llama.cpp takes cache_type_k and cache_type_v")                                             \
    X("cache_type_k", AL("ctk", "type_k"), SW__FT_CHOICE, STR, L, ggml_types, 0, 0, 0, 0,          \
      cache_type_k, "llama.cpp -ctk", "vLLM and SGLang take kv_cache_dtype")                       \
    X("cache_type_v", AL("ctv", "type_v"), SW__FT_CHOICE, STR, L, ggml_types, 0, 0, 0, 0,          \
      cache_type_v, "llama.cpp -ctv (quantized V needs flash attention)",                          \
      "vLLM and SGLang take kv_cache_dtype")                                                       \
    X("kv_cache_bytes", AL("kv_cache_memory_bytes", "kv_bytes"), SW__FT_BYTES, BYTES, V, NULL, 1,  \
      0, 0, 0, kv_cache_bytes, "vLLM --kv-cache-memory-bytes, per rank, whole bytes",              \
      "SGLang pins its pool with max_total_tokens; llama.cpp with ctx_size")                       \
    X("max_total_tokens", NOAL, SW__FT_COUNT, COUNT, S, NULL, 1, 0, 0, 0, max_total_tokens,        \
      "SGLang --max-total-tokens: the pinned KV pool",                                             \
      "vLLM pins its pool with kv_cache_bytes; llama.cpp with ctx_size")                           \
    X("max_num_batched_tokens", AL("mnbt"), SW__FT_COUNT, COUNT, V, NULL, 1, 0, 0, 0,              \
      max_num_batched_tokens, "vLLM --max-num-batched-tokens",                                     \
      "llama.cpp batches with batch_size/ubatch_size")                                             \
    X("batch_size", AL("batch", "n_batch", "b"), SW__FT_COUNT, COUNT, L, NULL, 1, 0, 0, 0,         \
      batch_size, "llama.cpp -b: logical batch", "vLLM batches with max_num_batched_tokens")       \
    X("ubatch_size", AL("ubatch", "n_ubatch", "ub"), SW__FT_COUNT, COUNT, L, NULL, 1, 0, 0, 0,     \
      ubatch_size, "llama.cpp -ub: physical batch", "vLLM batches with max_num_batched_tokens")    \
    X("flash_attn", AL("fa", "flash_attention"), SW__FT_CHOICE, STR, L, on_off_auto, 0, 0, 0, 0,   \
      flash_attn, "llama.cpp -fa on|off|auto", "vLLM and SGLang pick their attention backend")     \
    X("swa_full", NOAL, SW__FT_BOOL, BOOL, L, NULL, 0, 0, 0, 0, swa_full,                          \
      "llama.cpp --swa-full: full-size cache for sliding-window layers", NULL)                     \
    X("kv_unified", AL("kvu"), SW__FT_BOOL, BOOL, L, NULL, 0, 0, 0, 0, kv_unified,                 \
      "llama.cpp -kvu: one KV buffer shared by all slots", NULL)                                   \
    X("n_gpu_layers", AL("ngl", "gpu_layers"), SW__FT_NGL, COUNT, L, NULL, 0, 0, 0, 0,             \
      n_gpu_layers, "llama.cpp -ngl: layers offloaded (a count or all)", NULL)                     \
    X("gpu_memory_utilization", AL("gpu_util"), SW__FT_REAL, REAL, V, NULL, 0, 0, 0, 1,            \
      gpu_memory_utilization, "vLLM --gpu-memory-utilization, in (0, 1]",                          \
      "SGLang's is mem_fraction_static")                                                           \
    X("mem_fraction_static", NOAL, SW__FT_REAL, REAL, S, NULL, 0, 0, 0, 1, mem_fraction_static,    \
      "SGLang --mem-fraction-static, in (0, 1]", "vLLM's is gpu_memory_utilization")               \
    X("tensor_parallel", AL("tensor_parallel_size", "tp"), SW__FT_COUNT, COUNT, V | S, NULL, 1,    \
      4096, 0, 0, tensor_parallel, "ranks a layer is split over (--tensor-parallel-size)", NULL)   \
    X("pipeline_parallel", AL("pipeline_parallel_size", "pp"), SW__FT_COUNT, COUNT, V | S, NULL,   \
      1, 4096, 0, 0, pipeline_parallel, "pipeline stages (--pipeline-parallel-size)", NULL)        \
    X("decode_context_parallel", AL("decode_context_parallel_size", "dcp"), SW__FT_COUNT, COUNT,   \
      V, NULL, 1, 4096, 0, 0, decode_context_parallel,                                             \
      "vLLM --decode-context-parallel-size (reuses TP ranks)", NULL)                               \
    X("block_size", NOAL, SW__FT_COUNT, COUNT, V, NULL, 1, 0, 0, 0, block_size,                    \
      "vLLM --block-size: tokens per KV page", NULL)                                               \
    X("prefix_caching", AL("enable_prefix_caching"), SW__FT_BOOL, BOOL, V, NULL, 0, 0, 0, 0,       \
      prefix_caching, "vLLM --enable-prefix-caching", NULL)                                        \
    X("enforce_eager", NOAL, SW__FT_BOOL, BOOL, V, NULL, 0, 0, 0, 0, enforce_eager,                \
      "vLLM --enforce-eager: no CUDA graphs", NULL)                                                \
    X("max_mamba_cache_size", AL("mamba_slots"), SW__FT_COUNT, COUNT, S, NULL, 1, 0, 0, 0,         \
      max_mamba_cache_size, "SGLang --max-mamba-cache-size: recurrent-state slots", NULL)          \
    X("spec_decode.method", NOAL, SW__FT_WORD, STR, ALL, NULL, 0, 0, 0, 0, spec_method,            \
      "speculative decoding method: mtp, eagle, eagle3, draft, ngram, ...", NULL)                  \
    X("spec_decode.tokens", AL("spec_decode.num_speculative_tokens", "spec_decode.draft_max"),     \
      SW__FT_COUNT, COUNT, ALL, NULL, 0, 0, 0, 0, spec_tokens,                                     \
      "draft tokens per step (vLLM num_speculative_tokens, llama.cpp --draft-max)", NULL)          \
    X("spec_decode.draft_min", NOAL, SW__FT_COUNT, COUNT, L, NULL, 0, 0, 0, 0, spec_draft_min,     \
      "llama.cpp --draft-min", NULL)

#define PUB(nm, al, ft, vt, eng, ch, mn, mx, fmn, fmx, mem, doc, inst)                             \
    {nm, al, SW_FLEET_V_##vt, eng, ch, doc, inst},
static const struct sw_fleet_field fields[] = {SHAPE_FIELDS(PUB)};
#undef PUB

#define SLOT(nm, al, ft, vt, eng, ch, mn, mx, fmn, fmx, mem, doc, inst)                            \
    {{ft, ch, mn, mx, fmn, fmx, ft == SW__FT_REAL}, offsetof(struct sw_fleet_shape, mem)},
static const struct sw__fleet_shape_slot slots[] = {SHAPE_FIELDS(SLOT)};
#undef SLOT

_Static_assert(SW_ARRAY_LEN(fields) == SW_ARRAY_LEN(slots), "shape tables out of step");

const struct sw_fleet_field *sw_fleet_shape_fields(size_t *n)
{
    if (n)
        *n = SW_ARRAY_LEN(fields);
    return fields;
}

const struct sw_fleet_field *sw_fleet_shape_field(const char *name)
{
    if (!name)
        return NULL;
    if (!strncmp(name, "shape.", 6))
        name += 6;
    for (size_t i = 0; i < SW_ARRAY_LEN(fields); i++) {
        if (!strcmp(fields[i].name, name))
            return &fields[i];
        for (size_t k = 0; k < SW_ARRAY_LEN(fields[i].aliases) && fields[i].aliases[k]; k++)
            if (!strcmp(fields[i].aliases[k], name))
                return &fields[i];
    }
    return NULL;
}

const struct sw__fleet_shape_slot *sw__fleet_shape_slot(const struct sw_fleet_field *f)
{
    return &slots[f - fields];
}

void *sw__fleet_shape_ptr(struct sw_fleet_shape *s, const struct sw_fleet_field *f)
{
    return (char *)s + slots[f - fields].off;
}

const void *sw__fleet_shape_cptr(const struct sw_fleet_shape *s, const struct sw_fleet_field *f)
{
    return (const char *)s + slots[f - fields].off;
}

/* Every storage type starts its own way; this reads `at` and "given at all" uniformly. */
static const struct sw_fleet_at *field_at(const struct sw_fleet_shape *s,
                                          const struct sw_fleet_field *f, bool *given)
{
    const void *p = sw__fleet_shape_cptr(s, f);
    switch (f->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES: {
        const struct sw_fleet_u64 *u = p;
        *given = u->set || u->off;
        return &u->at;
    }
    case SW_FLEET_V_REAL: {
        const struct sw_fleet_f64 *d = p;
        *given = d->set || d->off;
        return &d->at;
    }
    case SW_FLEET_V_BOOL: {
        const struct sw_fleet_bool *b = p;
        *given = b->set || b->off;
        return &b->at;
    }
    case SW_FLEET_V_STR: {
        const struct sw_fleet_str *str = p;
        *given = str->v || str->off;
        return &str->at;
    }
    }
    *given = false;
    return NULL;
}

int sw__fleet_dec_shape_field(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                              const struct sw_fleet_field *f, struct sw_fleet_shape *s)
{
    const struct sw__fleet_shape_slot *sl = sw__fleet_shape_slot(f);
    void *p = sw__fleet_shape_ptr(s, f);
    switch (f->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES:
        return sw__fleet_dec_u64(c, n, &sl->spec, p);
    case SW_FLEET_V_REAL:
        return sw__fleet_dec_f64(c, n, &sl->spec, p);
    case SW_FLEET_V_BOOL:
        return sw__fleet_dec_bool(c, n, p);
    case SW_FLEET_V_STR:
        if (f->choices == on_off_auto && n->kind == SW__FLN_SCALAR && n->plain &&
            (!strcmp(n->text, "true") || !strcmp(n->text, "false"))) {
            /* flash_attn: true/false read as on/off, which is what anyone writing them means */
            struct sw_fleet_str *str = p;
            str->v = !strcmp(n->text, "true") ? "on" : "off";
            str->off = false;
            str->at = sw__fleet_at(n);
            sw__fleet_record(c, n);
            return 0;
        }
        return sw__fleet_dec_str(c, n, &sl->spec, p);
    }
    return SW_EINVAL;
}

static int shape_keys(const char *prefix, const char **out, size_t max)
{
    size_t k = 0;
    size_t pl = prefix ? strlen(prefix) : 0;
    for (size_t i = 0; i < SW_ARRAY_LEN(fields) && k < max; i++) {
        const char *nm = fields[i].name;
        bool nested = strchr(nm, '.') != NULL;
        if (prefix ? strncmp(nm, prefix, pl) : nested)
            continue;
        out[k++] = nm + pl;
        for (size_t a = 0; a < SW_ARRAY_LEN(fields[i].aliases) && fields[i].aliases[a] && k < max;
             a++)
            out[k++] = fields[i].aliases[a] + pl;
    }
    if (!prefix && k < max)
        out[k++] = "spec_decode";
    return (int)k;
}

static int dec_shape_map(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                         struct sw_fleet_shape *s, const char *prefix)
{
    int rc = 0;
    if (!sw__fleet_want_map(c, n))
        return SW_EPARSE;
    for (size_t i = 0; i < n->n && !c->oom; i++) {
        const struct sw__fleet_node *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
        if (!prefix && !strcmp(k->text, "spec_decode")) {
            size_t saved = sw__fleet_path_push(c, "spec_decode");
            sw__fleet_record(c, v);
            int r = dec_shape_map(c, v, s, "spec_decode.");
            sw__fleet_path_pop(c, saved);
            if (r)
                rc = r;
            continue;
        }
        char full[128];
        snprintf(full, sizeof(full), "%s%s", prefix ? prefix : "", k->text);
        const struct sw_fleet_field *f =
            strlen(k->text) == k->len && !strchr(k->text, '.') ? sw_fleet_shape_field(full) : NULL;
        if (!f) {
            const char *known[200];
            int nk = shape_keys(prefix, known, SW_ARRAY_LEN(known));
            rc = sw__fleet_unknown_key(c, k, "shape", known, (size_t)nk);
            continue;
        }
        bool given = false;
        const struct sw_fleet_at *prev = field_at(s, f, &given);
        if (given || (prev && prev->file)) {
            struct sw_fleet_at at = sw__fleet_at(k);
            rc = sw__fleet_err(
                c, &at, "%s: '%s' sets %s again (already set at line %d): say it once",
                c->plen ? c->path : "shape", k->text, f->name, prev ? prev->line : 0);
            continue;
        }
        /* positions are recorded under the canonical name, whatever the spelling */
        size_t saved = sw__fleet_path_push(c, f->name + (prefix ? strlen(prefix) : 0));
        int r = sw__fleet_dec_shape_field(c, v, f, s);
        sw__fleet_path_pop(c, saved);
        if (r)
            rc = r;
    }
    return c->oom ? SW_ENOMEM : rc;
}

int sw__fleet_dec_shape(struct sw__fleet_ctx *c, const struct sw__fleet_node *n,
                        struct sw_fleet_shape *s)
{
    sw__fleet_record(c, n);
    return dec_shape_map(c, n, s, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Reading and writing by name.
 */
int sw_fleet_shape_get(const struct sw_fleet_shape *s, const char *field,
                       struct sw_fleet_value *out)
{
    const struct sw_fleet_field *f = sw_fleet_shape_field(field);
    memset(out, 0, sizeof(*out));
    if (!f)
        return SW_ENOENT;
    const void *p = sw__fleet_shape_cptr(s, f);
    out->type = f->type;
    switch (f->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES: {
        const struct sw_fleet_u64 *u = p;
        out->u = u->v;
        out->set = u->set;
        out->at = u->at;
        break;
    }
    case SW_FLEET_V_REAL: {
        const struct sw_fleet_f64 *d = p;
        out->f = d->v;
        out->set = d->set;
        out->at = d->at;
        break;
    }
    case SW_FLEET_V_BOOL: {
        const struct sw_fleet_bool *b = p;
        out->b = b->v;
        out->set = b->set;
        out->at = b->at;
        break;
    }
    case SW_FLEET_V_STR: {
        const struct sw_fleet_str *str = p;
        out->s = str->v;
        out->set = str->v != NULL;
        out->at = str->at;
        break;
    }
    }
    return 0;
}

int sw_fleet_shape_set(struct sw_fleet_shape *s, const char *field, const struct sw_fleet_value *v,
                       struct sw_err *e)
{
    const struct sw_fleet_field *f = sw_fleet_shape_field(field);
    if (!f)
        return sw_err_set(e, SW_ENOENT, "'%s' is not a shape field", field ? field : "(null)");
    bool num = f->type == SW_FLEET_V_COUNT || f->type == SW_FLEET_V_BYTES;
    bool vnum = v->type == SW_FLEET_V_COUNT || v->type == SW_FLEET_V_BYTES;
    if (f->type != v->type && !(num && vnum))
        return sw_err_set(e, SW_EINVAL, "%s takes a different type of value", f->name);
    void *p = sw__fleet_shape_ptr(s, f);
    const struct sw__fleet_shape_slot *sl = sw__fleet_shape_slot(f);
    switch (f->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES: {
        struct sw_fleet_u64 *u = p;
        if (v->set && (v->u < sl->spec.min || (sl->spec.max && v->u > sl->spec.max)) &&
            !(sl->spec.ft == SW__FT_NGL && v->u == SW_FLEET_ALL))
            return sw_err_set(e, SW_ERANGE, "%s = %llu is out of range", f->name,
                              (unsigned long long)v->u);
        u->v = v->u;
        u->set = v->set;
        u->off = !v->set;
        u->at = v->at;
        break;
    }
    case SW_FLEET_V_REAL: {
        struct sw_fleet_f64 *d = p;
        if (v->set && (!(v->f > sl->spec.fmin) || v->f > sl->spec.fmax))
            return sw_err_set(e, SW_ERANGE, "%s = %g is out of range", f->name, v->f);
        d->v = v->f;
        d->set = v->set;
        d->off = !v->set;
        d->at = v->at;
        break;
    }
    case SW_FLEET_V_BOOL: {
        struct sw_fleet_bool *b = p;
        b->v = v->b;
        b->set = v->set;
        b->off = !v->set;
        b->at = v->at;
        break;
    }
    case SW_FLEET_V_STR: {
        struct sw_fleet_str *str = p;
        const char *val = v->set ? v->s : NULL;
        if (val && f->choices) {
            const char *hit = NULL;
            for (size_t i = 0; f->choices[i] && !hit; i++)
                if (!strcmp(f->choices[i], val))
                    hit = f->choices[i];
            if (!hit)
                return sw_err_set(e, SW_EINVAL, "%s: '%s' is not an allowed value", f->name, val);
            val = hit;
        }
        str->v = val;
        str->off = !val;
        str->at = v->at;
        break;
    }
    }
    return 0;
}

void sw_fleet_shape_overlay(struct sw_fleet_shape *dst, const struct sw_fleet_shape *delta)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(fields); i++) {
        bool given = false;
        field_at(delta, &fields[i], &given);
        if (!given)
            continue;
        size_t sz = 0;
        switch (fields[i].type) {
        case SW_FLEET_V_COUNT:
        case SW_FLEET_V_BYTES:
            sz = sizeof(struct sw_fleet_u64);
            break;
        case SW_FLEET_V_REAL:
            sz = sizeof(struct sw_fleet_f64);
            break;
        case SW_FLEET_V_BOOL:
            sz = sizeof(struct sw_fleet_bool);
            break;
        case SW_FLEET_V_STR:
            sz = sizeof(struct sw_fleet_str);
            break;
        }
        memcpy(sw__fleet_shape_ptr(dst, &fields[i]), sw__fleet_shape_cptr(delta, &fields[i]), sz);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Known-bad rules.
 */
const char *sw_fleet_op_name(enum sw_fleet_op op)
{
    static const char *const names[] = {"==", "!=", "<", "<=", ">", ">=", "in"};
    return (unsigned)op < SW_ARRAY_LEN(names) ? names[op] : "?";
}

/* The rule vocabulary of a shape: field names (aliases resolved) and their typed values. */
static int rule_key(void *ctx, const char *text, size_t n, char *out, size_t outn, char *msg,
                    size_t msgn)
{
    char name[128];
    (void)ctx;
    snprintf(name, sizeof(name), "%.*s", (int)n, text);
    const struct sw_fleet_field *f = n < sizeof(name) ? sw_fleet_shape_field(name) : NULL;
    if (!f) {
        snprintf(msg, msgn, "'%s' is not a shape field", name);
        return -1;
    }
    snprintf(out, outn, "%s", f->name);
    return 0;
}

static bool rule_get(void *ctx, const void *subject, const char *key, struct sw_rule_value *out,
                     char *tmp, size_t tmpn)
{
    struct sw_fleet_value v;
    (void)ctx;
    (void)tmp;
    (void)tmpn;
    if (sw_fleet_shape_get(subject, key, &v) || !v.set)
        return false; /* an unset field never matches */
    switch (v.type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES:
        if (v.u > (uint64_t)INT64_MAX) { /* "all" layers */
            out->type = SW_RULE_REAL;
            out->d = (double)v.u;
        } else {
            out->type = SW_RULE_INT;
            out->i = (int64_t)v.u;
        }
        return true;
    case SW_FLEET_V_REAL:
        out->type = SW_RULE_REAL;
        out->d = v.f;
        return true;
    case SW_FLEET_V_BOOL:
        out->type = SW_RULE_BOOL;
        out->b = v.b;
        return true;
    case SW_FLEET_V_STR:
        out->type = SW_RULE_STR;
        out->s = v.s ? v.s : "";
        return true;
    }
    return false;
}

const struct sw_rule_vocab sw_fleet_rule_vocab = {
    .key = rule_key, .get = rule_get, .keys_hint = "a shape field"};

bool sw_fleet_rule_matches(const struct sw_fleet_rule *r, const struct sw_fleet_shape *s)
{
    return r && s && r->expr && sw_rule_eval(r->expr, s);
}
