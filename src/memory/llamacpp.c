/*
 * memory/llamacpp: the llama.cpp (llama-server) memory law, for the pinned llama.cpp 80fb11a.
 *
 * From a normalized architecture and llama-server's parsed flags it predicts what llama-server
 * prints at boot. One function per printed figure; each names the llama.cpp code it mirrors:
 *
 *   server_params        tools/server/server.cpp main(), server-context.cpp server_output_limits
 *   fit_context          common/fit.cpp common_params_fit_impl (step 1 and 2: the context only)
 *   context_params       src/llama-context.cpp llama_context::llama_context (n_ctx, n_ctx_seq ...)
 *   output_buffer_bytes  src/llama-context.cpp llama_context::output_reserve
 *   create_memory        src/llama-model.cpp llama_model::create_memory (which memory module)
 *   kv_cache             src/llama-kv-cache.cpp llama_kv_cache::llama_kv_cache (one KV line)
 *   kv_cache_iswa        src/llama-kv-cache-iswa.cpp (the non-SWA and SWA lines)
 *   memory_recurrent     src/llama-memory-recurrent.cpp (the RS line)
 *   model_buffers        src/llama-model.cpp llama_model_base::load_tensors (model buffers)
 *   n_ctx_slot           tools/server/server-context.cpp server_context::n_ctx_slot
 *
 * The compute buffer is estimated (llamacpp_compute.c). What it does not do: the memory modules
 * of the sparse-attention archs (DSA, MSA, DeepSeek-V4, the qwen4exp indexer), draft/MTP contexts,
 * projectors, CPU weight repacking, and --fit's layer moving (only its context reduction).
 */
#include <slipway/memory.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LLAMA_MAX_SEQ 256 /* src/llama-cparams.h */
#define MIB           (1024ull * 1024ull)

/* ---------------------------------------------------------------------------------------------
 * Cache types: ggml's block sizes (ggml/src/ggml.c type_traits) for common/arg.cpp kv_cache_types.
 */
struct kvt {
    int id;
    const char *name;
    uint32_t blck, size;
};
static const struct kvt kv_types[] = {
    {SW_KV_F32, "f32", 1, 4},         {SW_KV_F16, "f16", 1, 2},     {SW_KV_BF16, "bf16", 1, 2},
    {SW_KV_Q8_0, "q8_0", 32, 34},     {SW_KV_Q4_0, "q4_0", 32, 18}, {SW_KV_Q4_1, "q4_1", 32, 20},
    {SW_KV_IQ4_NL, "iq4_nl", 32, 18}, {SW_KV_Q5_0, "q5_0", 32, 22}, {SW_KV_Q5_1, "q5_1", 32, 24},
};

static const struct kvt *kvt_of(int id)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(kv_types); i++)
        if (kv_types[i].id == id)
            return &kv_types[i];
    return NULL;
}

const char *sw_kv_type_name(int type)
{
    const struct kvt *t = kvt_of(type);
    return t ? t->name : NULL;
}

int sw_kv_type_from_name(const char *name)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(kv_types); i++)
        if (!strcmp(kv_types[i].name, name))
            return kv_types[i].id;
    return -1;
}

int sw_kv_row_size(int type, uint64_t n, uint64_t *out)
{
    const struct kvt *t = kvt_of(type);
    if (!t || n % t->blck)
        return SW_EINVAL;
    *out = n / t->blck * t->size;
    return 0;
}

static bool is_quantized(int type)
{
    const struct kvt *t = kvt_of(type);
    return t && t->blck > 1;
}

#define GGML_PAD(x, n) (((x) + (n)-1) / (n) * (n))

/* ---------------------------------------------------------------------------------------------
 * Which memory module an arch is given (llama_model::create_memory; llama-arch.cpp lists).
 */
enum memkind { MEM_NONE, MEM_KV, MEM_RECURRENT, MEM_HYBRID, MEM_UNSUPPORTED };

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], name))
            return true;
    return false;
}
#define IN(name, ...)                                                                              \
    in_list(name, (const char *const[]){__VA_ARGS__},                                              \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static enum memkind memory_kind(const char *arch, const char **why)
{
    *why = NULL;
    /* create_memory: res = nullptr for encoders and diffusion models */
    if (IN(arch, "bert", "jina-bert-v2", "jina-bert-v3", "nomic-bert", "nomic-bert-moe", "neo-bert",
           "eurobert", "wavtokenizer-dec", "modern-bert", "gemma-embedding", "dream", "llada",
           "llada-moe", "rnd1"))
        return MEM_NONE;
    if (IN(arch, "minimax-m3")) {
        *why = "its MSA KV cache (llama_kv_cache_msa)";
        return MEM_UNSUPPORTED;
    }
    if (IN(arch, "glm-dsa", "deepseek32", "dots3note")) {
        *why = "its DSA KV cache with the lightning indexer (llama_kv_cache_dsa)";
        return MEM_UNSUPPORTED;
    }
    if (IN(arch, "deepseek4")) {
        *why = "its DeepSeek-V4 compressed KV cache (llama_kv_cache_dsv4)";
        return MEM_UNSUPPORTED;
    }
    if (IN(arch, "qwen4exp")) {
        *why = "its hybrid memory with an indexer cache (llama_memory_hybrid_idx)";
        return MEM_UNSUPPORTED;
    }
    if (IN(arch, "gemma4-assistant", "eagle3", "dflash")) {
        *why = "a draft head that only runs attached to a target model's context";
        return MEM_UNSUPPORTED;
    }
    if (IN(arch, "t5", "t5encoder")) {
        *why = "the encoder-decoder layout";
        return MEM_UNSUPPORTED;
    }
    /* llm_arch_is_recurrent */
    if (IN(arch, "mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"))
        return MEM_RECURRENT;
    /* llm_arch_is_hybrid */
    if (IN(arch, "jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
           "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "qwen35",
           "qwen35moe", "minimax-01"))
        return MEM_HYBRID;
    return MEM_KV;
}

/* llm_arch_supports_rs_rollback (src/llama-arch.cpp) */
static bool supports_rs_rollback(const char *arch)
{
    return IN(arch, "qwen35", "qwen35moe", "qwen4exp", "deepseek4", "nemotron_h", "nemotron_h_moe",
              "lfm2", "lfm2moe", "bailingmoe3");
}

/* Layers a KV cache holds: create_memory's filters. Hybrids of the qwen3next family keep their
 * NextN layers out of the main context; so do the plain archs listed below when they have them. */
static bool nextn_outside_kv(const char *arch)
{
    return IN(arch, "qwen3next", "qwen35", "qwen35moe", "minimax-01", "step35", "hy_v3", "mimo2");
}

static bool layer_is_swa(const struct sw_arch_layer *L)
{
    return L->attn == SW_ATTN_SWA || L->attn == SW_ATTN_CHUNKED || L->attn == SW_ATTN_SYMMETRIC;
}

static bool kv_filter(const struct sw_arch *a, uint32_t il)
{
    const struct sw_arch_layer *L = &a->layers[il];
    if (L->attn == SW_ATTN_NONE || !L->has_kv)
        return false;
    if (L->nextn && nextn_outside_kv(a->name))
        return false;
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * The working state of one prediction.
 */
struct law {
    const struct sw_arch *a;
    const struct sw_llamacpp_args *args;
    const struct sw_llamacpp_env *env;
    struct sw_llamacpp_plan *p;
    struct sw_err *e;
    /* server and context parameters */
    int64_t n_parallel;
    bool kv_unified;
    int64_t n_ctx_param; /* what reaches llama_context (0 = training context) */
    int64_t n_batch_param, n_ubatch_param;
    int64_t n_outputs_max_param;
    uint32_t n_seq_max, n_rs_seq, n_ctx, n_ctx_seq, n_batch, n_ubatch, n_outputs_max;
    enum sw_llamacpp_fa fa; /* after llama_init_from_model's adjustments */
    bool flash_attn;        /* cparams.flash_attn as create_memory sees it: auto counts as on */
    int ngl;                /* resolved GPU layers */
};

static void pwarn(struct sw_llamacpp_plan *p, const char *fmt, ...) SW_PRINTF(2, 3);
static void pwarn(struct sw_llamacpp_plan *p, const char *fmt, ...)
{
    va_list ap;
    if (p->n_warn >= (int)SW_ARRAY_LEN(p->warn))
        return;
    va_start(ap, fmt);
    vsnprintf(p->warn[p->n_warn], sizeof(p->warn[0]), fmt, ap);
    va_end(ap);
    p->n_warn++;
}

/* tools/server/server.cpp main() and server-context.cpp load_model: the server's own rules. */
static int server_params(struct law *w)
{
    const struct sw_llamacpp_args *g = w->args;
    w->n_parallel = g->n_parallel;
    w->kv_unified = g->kv_unified;
    w->n_ctx_param = g->n_ctx;
    w->n_batch_param = g->n_batch;
    w->n_ubatch_param = g->n_ubatch;

    /* embeddings need the whole input in one ubatch */
    if (g->embedding && w->n_batch_param > w->n_ubatch_param)
        w->n_batch_param = w->n_ubatch_param;
    /* "n_parallel is set to auto, using n_parallel = 4 and kv_unified = true" */
    if (w->n_parallel < 0) {
        w->n_parallel = 4;
        if (g->kv_unified_set && !g->kv_unified)
            pwarn(w->p, "-no-kvu has no effect without -np: auto slots force a unified KV cache");
        w->kv_unified = true;
    }
    /* --kv-unified-per-slot sizes the pool unless -c pinned it */
    if (g->kv_unified_per_slot > 0 && g->n_ctx == 0 && !g->n_ctx_zero)
        w->n_ctx_param = w->n_parallel * g->kv_unified_per_slot;

    /* server_output_limits: embeddings/pooling read every token, generation one per sequence
     * plus the draft (common_speculative_get_output_limits) */
    if (g->embedding) {
        w->n_outputs_max_param = w->n_batch_param;
    } else {
        int64_t per_seq = 1 + (g->spec_n_max > 0 ? g->spec_n_max : 0);
        int64_t total = w->n_parallel * per_seq;
        if (total > w->n_batch_param)
            total = w->n_batch_param;
        w->n_outputs_max_param = total < 1 ? 1 : total;
    }
    return 0;
}

/* src/llama-context.cpp llama_init_from_model: the checks and flash-attention overrides made
 * before the context exists (a refusal here means no memory line is printed at all). */
static int init_from_model(struct law *w)
{
    const struct sw_arch *a = w->a;
    const struct sw_llamacpp_args *g = w->args;
    uint32_t trunk = a->n_layer - a->n_layer_nextn;

    w->fa = g->flash_attn;
    if (w->fa != SW_FA_OFF && !strcmp(a->name, "grok")) {
        pwarn(w->p, "flash attention is not compatible with Grok: llama.cpp forces it off");
        w->fa = SW_FA_OFF;
    }
    if (a->mla.on && g->type_k != g->type_v)
        return sw_err_set(w->e, SW_EINVAL,
                          "-ctk %s -ctv %s: llama.cpp refuses different K and V cache types for "
                          "an MLA model",
                          sw_kv_type_name(g->type_k), sw_kv_type_name(g->type_v));
    if (is_quantized(g->type_v) && w->fa != SW_FA_ON) {
        if (w->fa == SW_FA_AUTO)
            w->fa = SW_FA_ON; /* "enabling flash_attn since it is required for quantized V cache" */
        else
            return sw_err_set(w->e, SW_EINVAL,
                              "-ctv %s needs flash attention: llama-server refuses to start with "
                              "-fa off (\"quantized V cache requires flash_attn to be enabled\")",
                              sw_kv_type_name(g->type_v));
    }
    for (int kv = 0; kv < 2 && w->fa != SW_FA_OFF; kv++) {
        int t = kv ? g->type_v : g->type_k;
        const struct kvt *tt = kvt_of(t);
        if (!is_quantized(t))
            continue;
        for (uint32_t il = 0; il < trunk; il++) {
            uint32_t hd = kv ? a->layers[il].head_dim_v : a->layers[il].head_dim_k;
            if (hd % tt->blck)
                return sw_err_set(w->e, SW_EINVAL,
                                  "-ct%c %s: its block of %u does not divide the head size %u of "
                                  "layer %u; llama-server refuses to start",
                                  kv ? 'v' : 'k', tt->name, tt->blck, hd, il);
        }
    }
    return 0;
}

/* src/llama-context.cpp llama_context::llama_context: the context's own arithmetic. */
static int context_params(struct law *w, int64_t n_ctx_param)
{
    const struct sw_arch *a = w->a;
    uint64_t n_ctx;

    w->n_seq_max = w->n_parallel < 1 ? 1 : (uint32_t)w->n_parallel;
    if (w->n_seq_max > LLAMA_MAX_SEQ)
        return sw_err_set(w->e, SW_EINVAL,
                          "-np %u: llama.cpp refuses more than %d sequences (n_seq_max)",
                          w->n_seq_max, LLAMA_MAX_SEQ);
    w->n_rs_seq = w->args->spec_rs ? (uint32_t)w->args->spec_draft_n_max : 0;
    if (w->n_rs_seq && !supports_rs_rollback(a->name))
        w->n_rs_seq = 0;

    n_ctx = n_ctx_param == 0 ? a->n_ctx_train : (uint64_t)n_ctx_param;
    if (n_ctx == 0)
        return sw_err_set(w->e, SW_EINVAL, "the model's training context is 0 and -c is not set");
    /* with causal attention the batch is capped by the context (before padding) */
    uint64_t n_batch =
        a->causal && n_ctx < (uint64_t)w->n_batch_param ? n_ctx : (uint64_t)w->n_batch_param;
    uint64_t n_ubatch = w->n_ubatch_param == 0 ? n_batch : (uint64_t)w->n_ubatch_param;
    if (n_ubatch > n_batch)
        n_ubatch = n_batch;
    w->n_batch = (uint32_t)n_batch;
    w->n_ubatch = (uint32_t)n_ubatch;
    w->n_outputs_max = w->n_outputs_max_param == 0 ? w->n_batch : (uint32_t)w->n_outputs_max_param;

    /* "ref: https://github.com/ggml-org/llama.cpp/pull/17046": pad to 256 */
    n_ctx = GGML_PAD(n_ctx, 256);
    if (n_ctx > 0xffffffffull)
        return sw_err_set(w->e, SW_ERANGE, "n_ctx %llu does not fit llama.cpp's uint32",
                          (unsigned long long)n_ctx);
    if (w->kv_unified) {
        w->n_ctx_seq = (uint32_t)n_ctx;
    } else {
        uint64_t seq = GGML_PAD(n_ctx / w->n_seq_max, 256);
        if (seq == 0)
            return sw_err_set(w->e, SW_EINVAL, "n_ctx_seq == 0");
        if (n_ctx != seq * w->n_seq_max)
            n_ctx = seq * w->n_seq_max; /* "n_ctx is not divisible by n_seq_max - rounding" */
        if (n_ctx > 0xffffffffull)
            return sw_err_set(w->e, SW_ERANGE, "n_ctx too large");
        w->n_ctx_seq = (uint32_t)seq;
    }
    w->n_ctx = (uint32_t)n_ctx;
    /* create_memory runs before the flash-attention probe: auto counts as enabled */
    w->flash_attn = w->fa != SW_FA_OFF;
    return 0;
}

/* llama_context::output_reserve: logits for max(n_seq_max, n_outputs) rows (the first call asks
 * n_seq_max), plus embeddings when --embedding. Host buffer, exact size. */
static uint64_t output_buffer_bytes(const struct law *w)
{
    uint64_t rows = w->n_seq_max;
    uint64_t logits = w->a->n_vocab * rows;
    uint64_t embd = w->args->embedding ? (uint64_t)w->a->n_embd * rows : 0;
    return (logits + embd) * 4;
}

/* ---------------------------------------------------------------------------------------------
 * Memory modules.
 */
/* Device of a layer (llama_model_base::load_tensors get_layer_buft_list); -1 = CPU. */
static int layer_device(const struct law *w, uint32_t il)
{
    if (!w->env || w->env->n_gpu == 0 || w->ngl <= 0)
        return -1;
    int n_layer_all = (int)w->a->n_layer;
    int i_gpu_start = n_layer_all + 1 - w->ngl;
    if (i_gpu_start < 0)
        i_gpu_start = 0;
    int act = w->ngl < n_layer_all + 1 ? w->ngl : n_layer_all + 1;
    if ((int)il < i_gpu_start || (int)il - i_gpu_start >= act)
        return -1;
    /* split by free memory (default tensor_split), cumulative fractions, std::upper_bound */
    double sum = 0, cum[SW_LLAMACPP_MAX_DEV];
    for (int d = 0; d < w->env->n_gpu; d++)
        sum += (double)w->env->gpu_memory[d];
    double acc = 0;
    for (int d = 0; d < w->env->n_gpu; d++) {
        acc += sum > 0 ? (double)w->env->gpu_memory[d] / sum : 1.0 / w->env->n_gpu;
        cum[d] = acc;
    }
    float x = (float)(il - i_gpu_start) / (float)act;
    for (int d = 0; d < w->env->n_gpu; d++)
        if ((float)cum[d] > x)
            return d;
    return w->env->n_gpu - 1;
}

static int dev_slot(const struct law *w, int gpu)
{
    /* plan->dev[0] is CPU; GPUs follow */
    (void)w;
    return gpu < 0 ? 0 : gpu + 1;
}

/* src/llama-kv-cache.cpp llama_kv_cache::llama_kv_cache: one cache, one printed line.
 * K is [n_embd_k_gqa(il), kv_size, n_stream] per layer; V likewise (padded to the widest layer when
 * V is stored transposed, i.e. without flash attention); MLA stores no V. */
static int kv_cache(struct law *w, uint32_t kv_size, bool swa_part, bool only_swa_split,
                    bool want_swa)
{
    const struct sw_arch *a = w->a;
    struct sw_llamacpp_report *r = &w->p->report;
    struct sw_llamacpp_kv *kv;
    uint32_t n_stream = w->kv_unified ? 1 : w->n_seq_max;
    bool v_trans = !w->flash_attn;
    uint64_t v_max = 0;

    if (r->n_kv >= SW_LLAMACPP_MAX_KV)
        return sw_err_set(w->e, SW_ERANGE, "too many KV caches");
    kv = &r->kv[r->n_kv++];
    memset(kv, 0, sizeof(*kv));
    kv->cells = kv_size;
    kv->seqs = w->n_seq_max;
    kv->streams = n_stream;
    kv->k_type = w->args->type_k;
    kv->v_type = w->args->type_v;
    kv->swa = swa_part;

    /* llama_hparams::n_embd_v_gqa_max over every layer */
    for (uint32_t il = 0; il < a->n_layer; il++) {
        uint64_t v = (uint64_t)a->layers[il].n_head_kv * a->layers[il].head_dim_v;
        if (v > v_max)
            v_max = v;
    }
    for (uint32_t il = 0; il < a->n_layer; il++) {
        const struct sw_arch_layer *L = &a->layers[il];
        if (!kv_filter(a, il))
            continue;
        if (only_swa_split && layer_is_swa(L) != want_swa)
            continue;
        uint64_t krow, vrow = 0;
        uint64_t vw = a->mla.on ? 0 : (v_trans ? v_max : L->v_width);
        if (sw_kv_row_size(kv->k_type, L->k_width, &krow))
            return sw_err_set(w->e, SW_EINVAL,
                              "layer %u: K rows of %llu elements are not a multiple of %s's "
                              "block (ggml would abort)",
                              il, (unsigned long long)L->k_width, sw_kv_type_name(kv->k_type));
        if (!a->mla.on && sw_kv_row_size(kv->v_type, vw, &vrow))
            return sw_err_set(w->e, SW_EINVAL,
                              "layer %u: V rows of %llu elements are not a multiple of %s's "
                              "block (ggml would abort)",
                              il, (unsigned long long)vw, sw_kv_type_name(kv->v_type));
        uint64_t kb = krow * kv_size * n_stream, vb = vrow * kv_size * n_stream;
        kv->k_bytes += kb;
        kv->v_bytes += vb;
        kv->layers++;
        int d = w->args->no_kv_offload ? -1 : layer_device(w, il);
        w->p->dev[dev_slot(w, d)].kv += kb + vb;
    }
    return 0;
}

/* src/llama-kv-cache-iswa.cpp: the full-attention cache, then the SWA cache of
 * GGML_PAD(min(size_base, n_swa * (unified ? n_seq_max : 1) + n_ubatch), 256) cells, or the full
 * size with --swa-full. */
static int kv_cache_iswa(struct law *w)
{
    uint32_t size_base = w->n_ctx_seq;
    uint64_t want = (uint64_t)w->a->n_swa * (w->kv_unified ? w->n_seq_max : 1) + w->n_ubatch;
    uint64_t size_swa = want < size_base ? want : size_base;
    int rc;
    size_swa = GGML_PAD(size_swa, 256);
    if (w->args->swa_full)
        size_swa = size_base;
    rc = kv_cache(w, size_base, false, true, false);
    if (rc)
        return rc;
    return kv_cache(w, (uint32_t)size_swa, true, true, true);
}

/* src/llama-memory-recurrent.cpp: max(1, n_seq_max) cells, each with 1 + n_rs_seq rows of
 * n_embd_r (R) and n_embd_s (S) f32 per recurrent trunk layer. The printed layer count is the
 * trunk (hparams.n_layer()), not the number of recurrent layers. */
static int memory_recurrent(struct law *w)
{
    const struct sw_arch *a = w->a;
    struct sw_llamacpp_recurrent *rec = &w->p->report.recurrent;
    uint32_t trunk = a->n_layer - a->n_layer_nextn;
    uint32_t cells = w->n_seq_max > 1 ? w->n_seq_max : 1;
    uint64_t rows = (uint64_t)cells * (1 + w->n_rs_seq);

    w->p->report.has_recurrent = true;
    memset(rec, 0, sizeof(*rec));
    rec->cells = cells;
    rec->layers = trunk;
    rec->seqs = w->n_seq_max;
    rec->rs_seq = w->n_rs_seq;
    for (uint32_t il = 0; il < trunk; il++) {
        if (a->layers[il].recr == SW_RECR_NONE)
            continue;
        uint64_t rb = a->ssm.n_embd_r * rows * 4, sb = a->ssm.n_embd_s * rows * 4;
        rec->r_bytes += rb;
        rec->s_bytes += sb;
        int d = w->args->no_kv_offload ? -1 : layer_device(w, il);
        w->p->dev[dev_slot(w, d)].recurrent += rb + sb;
    }
    return 0;
}

/* llama_model::create_memory: which caches, in the order they are built (and printed). */
static int create_memory(struct law *w)
{
    const char *why = NULL;
    enum memkind k = memory_kind(w->a->name, &why);
    bool swa = w->a->swa_kind != SW_ATTN_NONE && w->a->n_swa_layers > 0;
    int rc;

    /* llama_memory_hybrid* and iswa assert the swa type matches the layer flags; an arch whose
     * window is declared but whose pattern makes no layer local still goes through iswa */
    if (w->a->swa_kind != SW_ATTN_NONE)
        swa = true;
    w->p->report.n_kv = 0;
    w->p->report.has_recurrent = false;
    switch (k) {
    case MEM_UNSUPPORTED:
        return sw_err_set(w->e, SW_EUNSUPPORTED, "architecture '%s': slipway does not model %s",
                          w->a->name, why);
    case MEM_NONE:
        return 0;
    case MEM_RECURRENT:
        return memory_recurrent(w);
    case MEM_HYBRID:
        /* llama_memory_hybrid(_iswa): the attention cache first, then the recurrent one */
        rc = swa ? kv_cache_iswa(w) : kv_cache(w, w->n_ctx_seq, false, false, false);
        if (rc)
            return rc;
        return memory_recurrent(w);
    case MEM_KV:
        if (swa)
            return kv_cache_iswa(w);
        return kv_cache(w, w->n_ctx_seq, false, false, false);
    }
    return 0;
}

/* llama_model_base::load_tensors: the model buffers. With mmap (the default) on the CPU, the
 * buffer is the file span llama_model_loader::get_mapping_range covers; tensors offloaded to a GPU
 * are copied into device buffers. Weight repacking (CPU_REPACK) is not modelled. */
static void model_buffers(struct law *w)
{
    const struct sw_arch *a = w->a;
    struct sw_llamacpp_plan *p = w->p;
    uint64_t gpu = 0;

    if (!a->weights.known)
        return;
    for (uint32_t il = 0; il < a->n_layer; il++) {
        int d = layer_device(w, il);
        if (d >= 0) {
            p->dev[dev_slot(w, d)].weights += a->layers[il].weight_bytes;
            gpu += a->layers[il].weight_bytes;
        }
    }
    int dout = layer_device(w, a->n_layer);
    if (dout >= 0) {
        p->dev[dev_slot(w, dout)].weights += a->weights.output;
        gpu += a->weights.output;
    }
    uint64_t host = a->weights.mapped ? a->weights.mapped : a->weights.total;
    host = host > gpu ? host - gpu : 0;
    p->dev[0].weights += host;
    p->report.model_bytes = host + gpu;
    p->report.model_known = true;
}

/* server_context::n_ctx_slot: the per-slot window, capped by the training context. */
static uint32_t n_ctx_slot(const struct law *w)
{
    int64_t res = w->n_ctx_seq;
    if (w->args->kv_unified_per_slot > 0 && w->args->kv_unified_per_slot < res)
        res = w->args->kv_unified_per_slot;
    if (w->a->n_ctx_train < res)
        res = w->a->n_ctx_train;
    return (uint32_t)res;
}

/* One full prediction at a given n_ctx parameter (the fit loop runs it more than once). */
static int predict(struct law *w, int64_t n_ctx_param)
{
    struct sw_llamacpp_plan *p = w->p;
    int rc;

    memset(&p->report, 0, sizeof(p->report));
    for (int d = 0; d < SW_LLAMACPP_MAX_DEV; d++) {
        p->dev[d].weights = p->dev[d].kv = p->dev[d].recurrent = 0;
        p->dev[d].compute = p->dev[d].output = p->dev[d].total = 0;
    }
    rc = context_params(w, n_ctx_param);
    if (rc)
        return rc;
    struct sw_llamacpp_report *r = &p->report;
    r->n_ctx = w->n_ctx;
    r->n_ctx_seq = w->n_ctx_seq;
    r->n_seq_max = w->n_seq_max;
    r->kv_unified = w->kv_unified;
    r->n_batch = w->n_batch;
    r->n_ubatch = w->n_ubatch;
    r->output_bytes = output_buffer_bytes(w);
    p->dev[0].output = r->output_bytes;
    rc = create_memory(w);
    if (rc)
        return rc;
    model_buffers(w);

    /* sched_reserve: worst case n_tokens = min(n_ctx, n_ubatch), n_outputs = min(that, n_outputs_max) */
    uint32_t n_tokens = w->n_ctx < w->n_ubatch ? w->n_ctx : w->n_ubatch;
    uint32_t n_outputs = n_tokens < w->n_outputs_max ? n_tokens : w->n_outputs_max;
    r->compute_bytes = sw_llamacpp_compute_estimate(w->a, r, n_tokens, n_outputs, w->flash_attn);
    r->compute_known = true;
    int cdev = (w->env && w->env->n_gpu > 0 && w->ngl > 0) ? 1 : 0;
    p->dev[cdev].compute = r->compute_bytes;

    for (int d = 0; d < p->n_dev; d++) {
        struct sw_llamacpp_device *x = &p->dev[d];
        x->total = x->weights + x->kv + x->recurrent + x->compute + x->output;
    }
    return 0;
}

static uint64_t plan_total(const struct sw_llamacpp_plan *p)
{
    uint64_t t = 0;
    for (int d = 0; d < p->n_dev; d++)
        t += p->dev[d].total;
    return t;
}

/* common/fit.cpp common_params_fit_impl, the context part: an unset context becomes
 * n_ctx_train x streams; when that does not leave the 1 GiB margin, the context shrinks linearly
 * between that and 4096 x streams, rounded down to 256 x streams. */
static int fit_context(struct law *w, int64_t *n_ctx_param)
{
    const uint64_t margin = 1024ull * MIB; /* common_params::fit_params_target */
    uint32_t n_streams = w->kv_unified ? 1 : (w->n_parallel > 1 ? (uint32_t)w->n_parallel : 1);
    bool n_ctx_auto = *n_ctx_param == 0;
    uint64_t n_ctx_max = (uint64_t)w->a->n_ctx_train * n_streams;
    uint64_t n_ctx_min = w->args->n_ctx_zero ? 0xffffffffull : 4096ull * n_streams;
    int rc;

    if (n_ctx_max > 0xffffffffull)
        n_ctx_max = 0xffffffffull;
    if (n_ctx_min > 0xffffffffull)
        n_ctx_min = 0xffffffffull;
    if (!n_ctx_auto)
        return 0;
    *n_ctx_param = (int64_t)n_ctx_max;

    uint64_t free_mem = 0;
    if (w->env && w->env->n_gpu > 0)
        for (int d = 0; d < w->env->n_gpu; d++)
            free_mem += w->env->gpu_memory[d];
    else if (w->env)
        free_mem = w->env->host_memory;
    if (!free_mem)
        return 0; /* unknown memory: no reduction can be predicted */
    rc = predict(w, *n_ctx_param);
    if (rc)
        return rc;
    uint64_t used = plan_total(w->p);
    if (w->env->n_gpu > 0)
        used -= w->p->dev[0].total; /* devices only */
    if (used + margin <= free_mem)
        return 0;
    if (!(n_ctx_max > n_ctx_min))
        return 0;
    rc = predict(w, (int64_t)n_ctx_min);
    if (rc)
        return rc;
    uint64_t used_min = plan_total(w->p);
    if (w->env->n_gpu > 0)
        used_min -= w->p->dev[0].total;
    uint64_t target = free_mem > margin ? free_mem - margin : 0;
    uint64_t n_ctx = n_ctx_min;
    if (target > used_min && used > used_min) {
        n_ctx += (n_ctx_max - n_ctx_min) * (target - used_min) / (used - used_min);
        uint64_t align = 256ull * n_streams;
        n_ctx = n_ctx - n_ctx % align;
        if (n_ctx < n_ctx_min)
            n_ctx = n_ctx_min;
    } else {
        pwarn(w->p, "--fit: even the minimum context (%llu) leaves less than 1 GiB free",
              (unsigned long long)n_ctx_min);
    }
    pwarn(w->p,
          "--fit: context reduced from %llu to %llu to leave 1 GiB free (an estimate: it "
          "uses the compute-buffer estimate)",
          (unsigned long long)n_ctx_max, (unsigned long long)n_ctx);
    *n_ctx_param = (int64_t)n_ctx;
    return 0;
}

int sw_llamacpp_plan(const struct sw_arch *arch, const struct sw_llamacpp_args *args,
                     const struct sw_llamacpp_env *env, struct sw_llamacpp_plan *out,
                     struct sw_err *e)
{
    struct law w;
    int rc;
    int64_t n_ctx_param;

    memset(out, 0, sizeof(*out));
    memset(&w, 0, sizeof(w));
    w.a = arch;
    w.args = args;
    w.env = env;
    w.p = out;
    w.e = e;

    /* devices: CPU first, then the GPUs */
    out->n_dev = 1;
    snprintf(out->dev[0].name, sizeof(out->dev[0].name), "CPU");
    if (env) {
        out->dev[0].memory = env->n_gpu ? 0 : env->host_memory;
        for (int d = 0; d < env->n_gpu && d + 1 < SW_LLAMACPP_MAX_DEV; d++) {
            snprintf(out->dev[d + 1].name, sizeof(out->dev[0].name), "%s",
                     env->gpu_name[d][0] ? env->gpu_name[d] : "GPU");
            out->dev[d + 1].memory = env->gpu_memory[d];
            out->n_dev++;
        }
    }
    /* -ngl: auto and all offload every layer (+ output) when there is a GPU; fit's layer moving
     * is not modelled */
    w.ngl = 0;
    if (env && env->n_gpu > 0) {
        if (args->n_gpu_layers < 0)
            w.ngl = (int)arch->n_layer + 1;
        else
            w.ngl = (int)args->n_gpu_layers;
    } else if (args->n_gpu_layers > 0) {
        pwarn(out, "-ngl %lld: no GPU declared, everything stays on the CPU",
              (long long)args->n_gpu_layers);
    }

    for (int i = 0; i < args->n_warn; i++)
        pwarn(out, "%s", args->warn[i]);

    rc = server_params(&w);
    if (rc)
        return rc;
    rc = init_from_model(&w);
    if (rc)
        return rc;
    n_ctx_param = w.n_ctx_param;
    if (args->fit) {
        rc = fit_context(&w, &n_ctx_param);
        if (rc)
            return rc;
    }
    rc = predict(&w, n_ctx_param);
    if (rc)
        return rc;

    out->n_slots = (uint32_t)w.n_parallel;
    out->n_ctx_slot = n_ctx_slot(&w);
    out->flash_attn = w.flash_attn;
    snprintf(out->compute_method, sizeof(out->compute_method), "%s", sw_llamacpp_compute_method);

    if (w.n_ctx_seq > arch->n_ctx_train)
        pwarn(out, "n_ctx_seq (%u) > n_ctx_train (%u): slots are capped at %u tokens", w.n_ctx_seq,
              arch->n_ctx_train, out->n_ctx_slot);
    if (!arch->weights.known)
        pwarn(out, "the architecture declares no weights: model bytes unknown");
    if (args->fit && args->n_ctx == 0 && !args->n_ctx_zero &&
        !(env && (env->n_gpu || env->host_memory)))
        pwarn(out, "-c not set: --fit may shrink the context to the device's free memory (not "
                   "known here); the plan assumes it fits");
    return 0;
}
