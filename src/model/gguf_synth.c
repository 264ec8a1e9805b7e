/*
 * model/gguf_synth: turn a random-weight model written by llama.cpp's test-llama-archs (a
 * placeholder "no_vocab" tokenizer of 128 empty tokens, a 256-token training context) into a
 * model llama-server can load and chat with: the real tokenizer of a vocabulary GGUF (the bundle's
 * models/ggml-vocab-*.gguf) is grafted on, with its chat template (or a ChatML one when it has
 * none), every vocabulary-sized tensor (token_embd, output, ...) is resized to the new vocabulary
 * (existing rows kept, new rows filled with small deterministic pseudo-random values like
 * test-llama-archs' own N(0, 0.01)), and <arch>.context_length is set to a long training context
 * (with learned absolute position tables resized to it).
 * Everything else is kept as it was; unchanged tensors are streamed from the input.
 *
 * What it does not do: make the weights mean anything (answers are noise), resize quantized
 * tensors, or touch a model that already has real weights beyond what is asked.
 */
#include <slipway/gguf.h>

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "model/gguf_internal.h"

/* A minimal ChatML template, for vocabularies that ship none. */
static const char chatml[] =
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

const char *sw_gguf_synth_chatml(void)
{
    return chatml;
}

/* ---- deterministic noise ---- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* N(0, sigma) by Box-Muller from two uniforms in (0, 1]. */
static float noise(uint64_t *s, float sigma)
{
    double u1 = ((double)(splitmix(s) >> 11) + 1.0) / 9007199254740992.0;
    double u2 = ((double)(splitmix(s) >> 11) + 1.0) / 9007199254740992.0;
    return (float)(sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* IEEE half from float, round to nearest even (values here are small and finite). */
uint16_t sw__f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t man = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) /* inf / nan */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* may carry into the exponent, which is right */
    return (uint16_t)(sign | h);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- the graft ---- */

static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

static bool vocab_sized_name(const char *n)
{
    return starts(n, "token_embd.") || starts(n, "output.") ||
           !strcmp(n, "per_layer_token_embd.weight");
}

static int read_at(const char *path, uint64_t off, void *dst, size_t n, struct sw_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sw_err_at(e, SW_EIO, path, 0, 0, "cannot open for reading tensor data");
    int rc = 0;
    if (fseeko(f, (off_t)off, SEEK_SET) || fread(dst, 1, n, f) != n)
        rc = sw_err_at_offset(e, SW_ETRUNC, path, (int64_t)off,
                              "cannot read %zu bytes of tensor data", n);
    fclose(f);
    return rc;
}

/* Build the resized data of tensor t: dimension d goes from old_n to new_n. */
static int resize_tensor(const struct sw_gguf *in, const struct sw_gguf_tensor *t, uint32_t d,
                         uint64_t new_n, uint64_t seed, void **out, uint64_t ne_out[4],
                         struct sw_err *e)
{
    size_t es = t->type == 0 ? 4 : 2; /* f32, or f16/bf16 */
    uint64_t inner = 1, outer = 1;
    for (uint32_t k = 0; k < d; k++)
        inner *= t->ne[k];
    for (uint32_t k = d + 1; k < SW_GGUF_MAX_DIMS; k++)
        outer *= t->ne[k];
    uint64_t old_n = t->ne[d];
    uint64_t total;
    if (!sw_mul_ok(inner, new_n, &total) || !sw_mul_ok(total, outer, &total) ||
        !sw_mul_ok(total, es, &total) || total > (uint64_t)SIZE_MAX)
        return sw_err_set(e, SW_ERANGE, "tensor '%s' would be too large", t->name.s);
    uint8_t *old = sw_malloc((size_t)t->nbytes ? (size_t)t->nbytes : 1);
    uint8_t *buf = sw_malloc((size_t)total ? (size_t)total : 1);
    int rc = 0;
    if (!old || !buf) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory resizing '%s'", t->name.s);
        goto out;
    }
    rc = read_at(in->path, in->data_offset + t->offset, old, (size_t)t->nbytes, e);
    if (rc)
        goto out;
    /* new rows differ per architecture and tensor, and repeat for a seed */
    const char *arch = sw_gguf_arch(in);
    uint64_t s = seed ^ sw__hash(t->name.s, (size_t)t->name.len) ^
                 (arch ? sw__hash(arch, strlen(arch)) * 31 : 0);
    uint64_t keep = SW_MIN(old_n, new_n);
    for (uint64_t o = 0; o < outer; o++) {
        uint8_t *dst = buf + (size_t)(o * new_n * inner * es);
        const uint8_t *src = old + (size_t)(o * old_n * inner * es);
        memcpy(dst, src, (size_t)(keep * inner * es));
        for (uint64_t i = keep * inner; i < new_n * inner; i++) {
            float v = noise(&s, 0.01f);
            if (t->type == 0) {
                memcpy(dst + i * 4, &v, 4);
            } else {
                uint16_t h = t->type == 1 ? sw__f32_to_f16(v) : f32_to_bf16(v);
                memcpy(dst + i * 2, &h, 2);
            }
        }
    }
    for (uint32_t k = 0; k < SW_GGUF_MAX_DIMS; k++)
        ne_out[k] = t->ne[k];
    ne_out[d] = new_n;
    *out = buf;
    buf = NULL;
out:
    sw_free(old);
    sw_free(buf);
    return rc;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ---- random base models slipway writes itself (architectures test-llama-archs cannot) ---- */

static int add_noise_tensor(struct sw_gguf_writer *w, uint64_t *s, const char *name,
                            uint32_t n_dims, const uint64_t *ne, float mean)
{
    uint64_t n = 1;
    for (uint32_t k = 0; k < n_dims; k++)
        n *= ne[k];
    float *d = sw_malloc((size_t)n * sizeof(float));
    if (!d)
        return SW_ENOMEM;
    for (uint64_t i = 0; i < n; i++)
        d[i] = mean + noise(s, 0.01f);
    int rc = sw_gguf_writer_add_tensor(w, name, 0, n_dims, ne, d, false);
    sw_free(d);
    return rc;
}

void sw_gguf_base_defaults(struct sw_gguf_base_opts *b)
{
    if (!b->n_layer)
        b->n_layer = 6;
    if (!b->n_embd)
        b->n_embd = 256;
    if (!b->n_head)
        b->n_head = 4;
    if (!b->n_head_kv)
        b->n_head_kv = 2;
    if (!b->head_dim)
        b->head_dim = 64;
    if (!b->n_ff)
        b->n_ff = 512;
    if (!b->swa)
        b->swa = 128;
    if (!b->swa_pattern)
        b->swa_pattern = 6;
}

/* gemma3, from the pinned llama.cpp: keys read by llama_model_base::load_hparams and
 * llama_model_gemma3::load_arch_hparams (src/models/gemma3.cpp), tensors created by
 * llama_model_gemma3::load_arch_tensors (names from LLM_TENSOR_NAMES in src/llama-arch.cpp).
 * The output projection is tied to token_embd, as in the released models. */
static int write_gemma3(const struct sw_gguf_base_opts *b, const char *path, struct sw_err *e)
{
    struct sw_gguf_writer *w = NULL;
    uint64_t s = b->seed ^ 0x67656d6d6133ull;
    const uint64_t n_vocab = 128, n_ctx = 256;
    const uint64_t E = b->n_embd, q = (uint64_t)b->head_dim * b->n_head,
                   kv = (uint64_t)b->head_dim * b->n_head_kv, F = b->n_ff, D = b->head_dim;
    int rc = sw_gguf_writer_new(&w, 3, 32);
    if (rc)
        return sw_err_set(e, rc, "out of memory");
    static const struct {
        const char *key;
        int which;
    } u32s[] = {{"gemma3.context_length", 0},
                {"gemma3.embedding_length", 1},
                {"gemma3.block_count", 2},
                {"gemma3.feed_forward_length", 3},
                {"gemma3.attention.head_count", 4},
                {"gemma3.attention.head_count_kv", 5},
                {"gemma3.attention.key_length", 6},
                {"gemma3.attention.value_length", 6},
                {"gemma3.attention.sliding_window", 7},
                {"gemma3.attention.sliding_window_pattern", 8},
                {"gemma3.vocab_size", 9}};
    const uint64_t vals[] = {n_ctx, E,      b->n_layer,     F,      b->n_head, b->n_head_kv,
                             D,     b->swa, b->swa_pattern, n_vocab};
    rc = sw_gguf_writer_set_str(w, "general.architecture", "gemma3");
    if (!rc)
        rc = sw_gguf_writer_set_str(w, "general.name", "slipway synth gemma3");
    for (size_t i = 0; !rc && i < SW_ARRAY_LEN(u32s); i++)
        rc = sw_gguf_writer_set_u32(w, u32s[i].key, (uint32_t)vals[u32s[i].which]);
    if (!rc)
        rc = sw_gguf_writer_set_f32(w, "gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
    if (!rc)
        rc = sw_gguf_writer_set_f32(w, "gemma3.rope.freq_base", 1000000.0f);
    if (!rc)
        rc = sw_gguf_writer_set_f32(w, "gemma3.rope.freq_base_swa", 10000.0f);
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "general.file_type", 0);
    if (!rc)
        rc = add_noise_tensor(w, &s, "token_embd.weight", 2, (uint64_t[]){E, n_vocab}, 0);
    if (!rc)
        rc = add_noise_tensor(w, &s, "output_norm.weight", 1, (uint64_t[]){E}, 1);
    char n[64];
#define T(fmt, nd, mean, ...)                                                                      \
    do {                                                                                           \
        snprintf(n, sizeof(n), fmt, l);                                                            \
        if (!rc)                                                                                   \
            rc = add_noise_tensor(w, &s, n, nd, (uint64_t[]){__VA_ARGS__}, mean);                  \
    } while (0)
    for (uint32_t l = 0; !rc && l < b->n_layer; l++) {
        T("blk.%u.attn_norm.weight", 1, 1, E);
        T("blk.%u.attn_q.weight", 2, 0, E, q);
        T("blk.%u.attn_k.weight", 2, 0, E, kv);
        T("blk.%u.attn_v.weight", 2, 0, E, kv);
        T("blk.%u.attn_output.weight", 2, 0, q, E);
        T("blk.%u.post_attention_norm.weight", 1, 1, E);
        T("blk.%u.attn_k_norm.weight", 1, 1, D);
        T("blk.%u.attn_q_norm.weight", 1, 1, D);
        T("blk.%u.ffn_norm.weight", 1, 1, E);
        T("blk.%u.ffn_gate.weight", 2, 0, E, F);
        T("blk.%u.ffn_up.weight", 2, 0, E, F);
        T("blk.%u.ffn_down.weight", 2, 0, F, E);
        T("blk.%u.post_ffw_norm.weight", 1, 1, E);
    }
#undef T
    if (rc)
        rc = sw_err_set(e, rc, "building the gemma3 base model: %s", sw_strerror(rc));
    else
        rc = sw_gguf_writer_write(w, path, e);
    sw_gguf_writer_free(w);
    return rc;
}

int sw_gguf_synth_base(const struct sw_gguf_base_opts *bo, const char *path, struct sw_err *e)
{
    struct sw_gguf_base_opts b = *bo;
    sw_gguf_base_defaults(&b);
    if (!b.arch || strcmp(b.arch, "gemma3"))
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "slipway writes base models only for gemma3 (got '%s'); use "
                          "test-llama-archs -a ARCH -o DIR for the others",
                          b.arch ? b.arch : "");
    if (b.n_layer > 512 || b.n_embd > 16384 || b.n_head > 256 || b.n_head_kv > b.n_head ||
        b.n_head % b.n_head_kv || b.head_dim > 1024 || b.n_ff > 65536)
        return sw_err_set(e, SW_ERANGE,
                          "gemma3 shape out of range (layers %u, embd %u, heads %u/%u, "
                          "head dim %u, ff %u)",
                          b.n_layer, b.n_embd, b.n_head, b.n_head_kv, b.head_dim, b.n_ff);
    return write_gemma3(&b, path, e);
}

/* One synthesis: its inputs, the writer and what the result says. */
struct synth {
    const struct sw_gguf_synth_opts *o;
    struct sw_gguf_synth_result *r;
    struct sw_gguf *in, *voc;
    struct sw_gguf_writer *w;
    uint64_t ctx;     /* the training context written */
    uint64_t old_n;   /* the input's vocabulary */
    uint64_t new_n;   /* the vocabulary grafted */
    uint64_t old_ctx; /* the input's training context, 0 when it has none */
};

/* A writer call that failed (it sets no error of its own). */
static int writer_failed(struct sw_err *e, int rc)
{
    return sw_err_set(e, rc, "synth: %s", rc == SW_ENOMEM ? "out of memory" : sw_strerror(rc));
}

/* The input model and the vocabulary, opened: one file each, the input with an architecture. */
static int open_inputs(struct synth *s, struct sw_err *e)
{
    const struct sw_gguf_synth_opts *o = s->o;
    s->ctx = o->ctx ? o->ctx : SW_GGUF_SYNTH_DEFAULT_CTX;
    if (s->ctx > UINT32_MAX)
        return sw_err_set(e, SW_ERANGE, "context length %llu does not fit llama.cpp's u32",
                          (unsigned long long)s->ctx);
    int rc = sw_gguf_open(o->in, &s->in, e);
    if (rc)
        return rc;
    rc = sw_gguf_open(o->vocab, &s->voc, e);
    if (rc)
        return rc;
    if (s->in->n_splits > 1)
        return sw_err_at(e, SW_EUNSUPPORTED, o->in, 0, 0, "split models are not synthesized");
    const char *arch = sw_gguf_arch(s->in);
    if (!arch)
        return sw_err_at(e, SW_EPARSE, o->in, 0, 0, "has no general.architecture");
    snprintf(s->r->arch, sizeof(s->r->arch), "%s", arch);
    return 0;
}

/* The vocabulary grafted (a real tokenizer with a token list), the input's own (its token list,
 * else <arch>.vocab_size, else token_embd), and the training contexts. */
static int read_sizes(struct synth *s, struct sw_err *e)
{
    const struct sw_gguf_synth_opts *o = s->o;
    struct sw_gguf_synth_result *r = s->r;
    const struct sw_gguf_kv *vt = sw_gguf_find(s->voc, "tokenizer.ggml.tokens");
    const char *vmodel = NULL;
    if (!vt || vt->val.type != SW_GGUF_ARRAY || vt->val.as.arr.elem != SW_GGUF_STRING ||
        !vt->val.as.arr.n || sw_gguf_get_str(s->voc, "tokenizer.ggml.model", &vmodel))
        return sw_err_at(e, SW_EPARSE, o->vocab, 0, 0,
                         "is not a vocabulary: it needs tokenizer.ggml.model and a non-empty "
                         "tokenizer.ggml.tokens string array");
    if (!strcmp(vmodel, "no_vocab") || !strcmp(vmodel, "none"))
        return sw_err_at(e, SW_EPARSE, o->vocab, 0, 0,
                         "is not a vocabulary: its tokenizer.ggml.model is '%s' (a placeholder)",
                         vmodel);
    s->new_n = vt->val.as.arr.n;
    if (s->new_n > UINT32_MAX)
        return sw_err_at(e, SW_ERANGE, o->vocab, 0, 0, "vocabulary too large");
    const struct sw_gguf_kv *it = sw_gguf_find(s->in, "tokenizer.ggml.tokens");
    const struct sw_gguf_tensor *emb = sw_gguf_tensor(s->in, "token_embd.weight");
    if (it && it->val.type == SW_GGUF_ARRAY)
        s->old_n = it->val.as.arr.n;
    else if (sw_gguf_arch_u64(s->in, "vocab_size", &s->old_n) && emb)
        s->old_n = emb->ne[emb->n_dims ? emb->n_dims - 1 : 0];
    if (!s->old_n)
        return sw_err_at(e, SW_EPARSE, o->in, 0, 0, "cannot tell its vocabulary size");
    r->n_vocab_old = s->old_n;
    r->n_vocab_new = s->new_n;
    snprintf(r->tokenizer, sizeof(r->tokenizer), "%s", vmodel);
    sw_gguf_arch_u64(s->in, "context_length", &s->old_ctx);
    r->ctx_old = s->old_ctx;
    r->ctx_new = s->ctx;
    return 0;
}

/* The model's own keys minus its placeholder tokenizer, then the vocabulary's tokenizer keys in
 * their order (its chat template unless ChatML is forced or it has none). */
static int write_tokenizer(struct synth *s)
{
    int rc;
    for (uint64_t i = 0; i < s->in->n_kv; i++) {
        const struct sw_gguf_kv *kv = &s->in->kv[i];
        if (starts(kv->key.s, "tokenizer.") || strlen(kv->key.s) != kv->key.len)
            continue;
        rc = sw_gguf_writer_set(s->w, kv->key.s, &kv->val);
        if (rc)
            return rc;
    }
    bool has_template = false;
    for (uint64_t i = 0; i < s->voc->n_kv; i++) {
        const struct sw_gguf_kv *kv = &s->voc->kv[i];
        if (!starts(kv->key.s, "tokenizer.") || strlen(kv->key.s) != kv->key.len)
            continue;
        if (!strcmp(kv->key.s, "tokenizer.chat_template")) {
            if (s->o->force_chatml || kv->val.type != SW_GGUF_STRING)
                continue;
            has_template = true;
        }
        rc = sw_gguf_writer_set(s->w, kv->key.s, &kv->val);
        if (rc)
            return rc;
    }
    if (!has_template) {
        rc = sw_gguf_writer_set_str(s->w, "tokenizer.chat_template", chatml);
        if (rc)
            return rc;
    }
    snprintf(s->r->template_source, sizeof(s->r->template_source), "%s",
             has_template ? "vocab" : "chatml");
    return 0;
}

/* The sizes: vocabulary and training context (yarn's original length follows it, so the model
 * reads as trained at that length rather than scaled up from 256), and what was grafted. */
static int write_sizes(struct synth *s)
{
    char key[256];
    int rc = sw_gguf_arch_key(s->in, "vocab_size", key, sizeof(key));
    if (!rc)
        rc = sw_gguf_writer_set_u32(s->w, key, (uint32_t)s->new_n);
    if (!rc)
        rc = sw_gguf_arch_key(s->in, "context_length", key, sizeof(key));
    if (!rc)
        rc = sw_gguf_writer_set_u32(s->w, key, (uint32_t)s->ctx);
    if (!rc)
        rc = sw_gguf_arch_key(s->in, "rope.scaling.original_context_length", key, sizeof(key));
    if (!rc && sw_gguf_find(s->in, key))
        rc = sw_gguf_writer_set_u32(s->w, key, (uint32_t)s->ctx);
    if (!rc)
        rc = sw_gguf_writer_set_str(s->w, "slipway.synth.vocab", base_name(s->o->vocab));
    if (!rc)
        rc = sw_gguf_writer_set_u64(s->w, "slipway.synth.seed", s->o->seed);
    return rc;
}

/* One tensor: vocabulary-sized tensors follow the vocabulary; learned absolute positions (gpt2,
 * mpt, starcoder: position_embd, one row per trained position) follow the context. The resized
 * dimension is the last one of the old size; any other tensor is streamed from the input. */
static int write_tensor(struct synth *s, const struct sw_gguf_tensor *t, struct sw_err *e)
{
    struct sw_gguf_synth_result *r = s->r;
    uint64_t from = 0, to = 0;
    if (vocab_sized_name(t->name.s)) {
        from = s->old_n;
        to = s->new_n;
    } else if (starts(t->name.s, "position_embd.") && s->old_ctx) {
        from = s->old_ctx;
        to = s->ctx;
    }
    int d = -1;
    for (int k = (int)t->n_dims - 1; from && k >= 0 && d < 0; k--)
        if (t->ne[k] == from)
            d = k;
    int rc;
    if (d < 0 || from == to) {
        rc = sw_gguf_writer_add_tensor_from_file(s->w, t->name.s, t->type, t->n_dims, t->ne,
                                                 s->in->path, s->in->data_offset + t->offset);
        return rc ? writer_failed(e, rc) : 0;
    }
    if (t->type != 0 && t->type != 1 && t->type != 30) {
        const struct sw_ggml_type *ty = sw_ggml_type(t->type);
        return sw_err_at(e, SW_EUNSUPPORTED, s->o->in, 0, 0,
                         "tensor '%s' is %s; only f32/f16/bf16 tensors are resized", t->name.s,
                         ty ? ty->name : "?");
    }
    void *data = NULL;
    uint64_t ne[4];
    rc = resize_tensor(s->in, t, (uint32_t)d, to, s->o->seed, &data, ne, e);
    if (rc)
        return rc;
    rc = sw_gguf_writer_add_tensor(s->w, t->name.s, t->type, t->n_dims, ne, data, false);
    sw_free(data);
    if (rc)
        return writer_failed(e, rc);
    if (r->n_resized < SW_ARRAY_LEN(r->resized))
        snprintf(r->resized[r->n_resized], sizeof(r->resized[0]), "%s", t->name.s);
    r->n_resized++;
    return 0;
}

/* Read back what was written: the output must be a valid GGUF with the new vocabulary; an
 * unverified output is not left behind. */
static int read_back(struct synth *s, struct sw_err *e)
{
    struct sw_gguf *chk = NULL;
    int rc = sw_gguf_open(s->o->out, &chk, e);
    if (rc) {
        unlink(s->o->out);
        sw_err_prefix(e, "synthesized file does not read back");
        return rc;
    }
    s->r->out_bytes = chk->file_size;
    s->r->weight_bytes = chk->tensor_bytes;
    sw_gguf_free(chk);
    return 0;
}

/* The graft itself, once the input exists: metadata, tensors, the file, read back. */
static int graft(struct synth *s, struct sw_err *e)
{
    int rc = open_inputs(s, e);
    if (rc)
        return rc;
    rc = read_sizes(s, e);
    if (rc)
        return rc;
    rc = sw_gguf_writer_new(&s->w, 3, s->in->alignment);
    if (!rc)
        rc = write_tokenizer(s);
    if (!rc)
        rc = write_sizes(s);
    if (rc)
        return writer_failed(e, rc);
    for (uint64_t i = 0; i < s->in->n_tensors; i++) {
        rc = write_tensor(s, &s->in->tensors[i], e);
        if (rc)
            return rc;
    }
    if (!s->r->n_resized && s->old_n != s->new_n)
        return sw_err_at(e, SW_EPARSE, s->o->in, 0, 0,
                         "no vocabulary-sized tensor (token_embd.weight with %llu rows) to resize",
                         (unsigned long long)s->old_n);
    s->r->n_tensors = s->in->n_tensors;
    rc = sw_gguf_writer_write(s->w, s->o->out, e);
    if (rc)
        return rc;
    return read_back(s, e);
}

int sw_gguf_synth(const struct sw_gguf_synth_opts *o, struct sw_gguf_synth_result *r,
                  struct sw_err *e)
{
    struct synth s;
    int rc = 0;
    memset(r, 0, sizeof(*r));
    memset(&s, 0, sizeof(s));
    sw_err_clear(e);
    char *base_path = NULL;
    if (!o || (!o->in && !o->base) || !o->vocab || !o->out)
        return sw_err_set(e, SW_EINVAL,
                          "synth needs an input model (or a base architecture), a vocabulary "
                          "and an output");
    struct sw_gguf_synth_opts oo = *o;
    if (!o->in) {
        /* write the random base beside the output, then graft onto it like any other input */
        size_t n = strlen(o->out) + 16;
        base_path = sw_malloc(n);
        if (!base_path)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        snprintf(base_path, n, "%s.base.tmp", o->out);
        rc = sw_gguf_synth_base(o->base, base_path, e);
        if (rc) {
            sw_free(base_path);
            return rc;
        }
        oo.in = base_path;
    }
    s.o = &oo;
    s.r = r;
    rc = graft(&s, e);
    sw_gguf_writer_free(s.w);
    sw_gguf_free(s.in);
    sw_gguf_free(s.voc);
    if (base_path) {
        unlink(base_path);
        sw_free(base_path);
    }
    return rc;
}

json_t *sw_gguf_synth_result_json(const struct sw_gguf_synth_opts *o,
                                  const struct sw_gguf_synth_result *r)
{
    json_t *res = json_array();
    for (size_t i = 0; res && i < r->n_resized && i < SW_ARRAY_LEN(r->resized); i++)
        if (json_array_append_new(res, json_string(r->resized[i]))) {
            json_decref(res);
            res = NULL;
        }
    json_t *j = json_pack(
        "{s:s, s:s?, s:s, s:s, s:{s:I, s:I}, s:{s:I, s:I}, s:s, s:s, s:o, s:I, "
        "s:I, s:I}",
        "out", o->out, "in", o->in, "vocab", o->vocab, "arch", r->arch, "n_vocab", "from",
        (json_int_t)r->n_vocab_old, "to", (json_int_t)r->n_vocab_new, "context_length", "from",
        (json_int_t)r->ctx_old, "to", (json_int_t)r->ctx_new, "tokenizer", r->tokenizer,
        "chat_template", r->template_source, "resized", res, "tensors", (json_int_t)r->n_tensors,
        "weight_bytes", (json_int_t)r->weight_bytes, "file_bytes", (json_int_t)r->out_bytes);
    return j;
}
