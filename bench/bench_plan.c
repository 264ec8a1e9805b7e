/*
 * bench_plan: planning a 10,000-tensor GGUF with llama.cpp's law: open + parse the header
 * (model/gguf), build the architecture (model/arch), run the law (memory/llamacpp).
 *
 * It writes a synthetic llama-architecture GGUF (512 layers, 10,000 tensors, a 128k-token
 * vocabulary in the header; the tensor data is a sparse hole) into a temporary directory, then
 * times N full plans and prints min and median. Usage: bench_plan [N] (default 30).
 */
#include <slipway/arch.h>
#include <slipway/gguf.h>
#include <slipway/memory.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wb {
    unsigned char *p;
    size_t n, cap;
};

static void put(struct wb *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap * 2 : 1 << 20;
        while (c < b->n + n)
            c *= 2;
        b->p = realloc(b->p, c);
        if (!b->p)
            abort();
        b->cap = c;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void u32(struct wb *b, uint32_t v)
{
    put(b, &v, 4);
}
static void u64(struct wb *b, uint64_t v)
{
    put(b, &v, 8);
}
static void str(struct wb *b, const char *s)
{
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_u32(struct wb *b, const char *k, uint32_t v)
{
    str(b, k);
    u32(b, 4);
    u32(b, v);
}
static void kv_str(struct wb *b, const char *k, const char *v)
{
    str(b, k);
    u32(b, 8);
    str(b, v);
}

struct tens {
    char name[64];
    uint32_t nd;
    uint64_t ne[2];
    uint32_t type;
};

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    const uint32_t L = 512, E = 4096, F = 14336, V = 128256, NT = 10000;
    int runs = argc > 1 ? atoi(argv[1]) : 30;
    struct wb b = {0};
    struct tens *t = calloc(NT, sizeof(*t));
    uint32_t n = 0;
    char dir[] = "/tmp/sw_bench_planXXXXXX", path[256];

    sw_core_init();
    if (!t || !mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/model.gguf", dir);

#define T2(nm, a, c, ty)                                                                           \
    do {                                                                                           \
        snprintf(t[n].name, sizeof(t[n].name), "%s", nm);                                          \
        t[n].nd = 2;                                                                               \
        t[n].ne[0] = a;                                                                            \
        t[n].ne[1] = c;                                                                            \
        t[n].type = ty;                                                                            \
        n++;                                                                                       \
    } while (0)
    char nm[64];
    T2("token_embd.weight", E, V, 8);
    T2("output.weight", E, V, 8);
    for (uint32_t il = 0; il < L && n < NT; il++) {
        static const char *w[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                  "ffn_gate", "ffn_up", "ffn_down"};
        static const uint64_t r[] = {4096, 1024, 1024, 4096, 14336, 14336, 4096};
        static const uint64_t c[] = {4096, 4096, 4096, 4096, 4096, 4096, 14336};
        for (int k = 0; k < 7; k++) {
            snprintf(nm, sizeof(nm), "blk.%u.%s.weight", il, w[k]);
            T2(nm, c[k], r[k], 8);
        }
        static const char *s[] = {"attn_norm.weight",   "ffn_norm.weight",    "attn_q.scale",
                                  "attn_k.scale",       "attn_v.scale",       "attn_output.scale",
                                  "ffn_gate.scale",     "ffn_up.scale",       "ffn_down.scale",
                                  "attn_q.input_scale", "attn_k.input_scale", "attn_v.input_scale"};
        for (int k = 0; k < 12 && n < NT; k++) {
            snprintf(nm, sizeof(nm), "blk.%u.%s", il, s[k]);
            T2(nm, k < 2 ? E : 1, 1, 0);
            t[n - 1].nd = 1;
        }
    }
    while (n < NT) {
        snprintf(nm, sizeof(nm), "blk.%u.ffn_gate.input_scale", n % L);
        T2(nm, 1, 1, 0);
        t[n - 1].nd = 1;
    }
    (void)F;

    /* header */
    put(&b, "GGUF", 4);
    u32(&b, 3);
    u64(&b, NT);
    u64(&b, 10);
    kv_str(&b, "general.architecture", "llama");
    kv_u32(&b, "llama.context_length", 131072);
    kv_u32(&b, "llama.embedding_length", E);
    kv_u32(&b, "llama.block_count", L);
    kv_u32(&b, "llama.feed_forward_length", F);
    kv_u32(&b, "llama.attention.head_count", 32);
    kv_u32(&b, "llama.attention.head_count_kv", 8);
    kv_u32(&b, "llama.vocab_size", V);
    kv_str(&b, "tokenizer.ggml.model", "gpt2");
    str(&b, "tokenizer.ggml.tokens");
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, V);
    for (uint32_t i = 0; i < V; i++) {
        snprintf(nm, sizeof(nm), "tok%u", i);
        str(&b, nm);
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < NT; i++) {
        uint64_t bytes;
        str(&b, t[i].name);
        u32(&b, t[i].nd);
        for (uint32_t d = 0; d < t[i].nd; d++)
            u64(&b, t[i].ne[d]);
        u32(&b, t[i].type);
        u64(&b, off);
        bytes = t[i].type == 8 ? t[i].ne[0] / 32 * 34 * (t[i].nd > 1 ? t[i].ne[1] : 1)
                               : t[i].ne[0] * (t[i].nd > 1 ? t[i].ne[1] : 1) * 4;
        off += (bytes + 31) / 32 * 32;
    }
    while (b.n % 32)
        put(&b, "", 1);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b.p, 1, b.n, f) != b.n || ftruncate(fileno(f), (off_t)(b.n + off)) != 0)
        return 1;
    fclose(f);

    const char *args_v[] = {"llama-server", "-m", path, "-c", "32768", "-np", "4"};
    struct sw_llamacpp_args args;
    struct sw_llamacpp_plan *plan = calloc(1, sizeof(*plan));
    double *ms = calloc((size_t)runs, sizeof(double));
    struct sw_err e;
    if (!plan || !ms)
        return 1;
    for (int r = 0; r < runs; r++) {
        struct sw_gguf *g = NULL;
        struct sw_arch *a = NULL;
        uint64_t t0 = sw_now_ns();
        sw_llamacpp_args_init(&args);
        if (sw_llamacpp_args_parse(&args, 7, args_v, &e) || sw_gguf_open(path, &g, &e) ||
            sw_arch_from_gguf(g, &a, &e) || sw_llamacpp_plan(a, &args, NULL, plan, &e)) {
            fprintf(stderr, "bench_plan: %s\n", e.msg);
            return 1;
        }
        ms[r] = (double)(sw_now_ns() - t0) / 1e6;
        sw_arch_free(a);
        sw_gguf_free(g);
    }
    qsort(ms, (size_t)runs, sizeof(double), cmp_d);
    printf("plan of a %u-tensor GGUF (%u layers, %u-token vocabulary, header %.1f MiB): "
           "min %.2f ms, median %.2f ms over %d runs\n",
           NT, L, V, (double)b.n / 1048576.0, ms[0], ms[runs / 2], runs);
    printf("  (KV line: %u cells, %u layers, %.2f MiB)\n", plan->report.kv[0].cells,
           plan->report.kv[0].layers,
           (double)(plan->report.kv[0].k_bytes + plan->report.kv[0].v_bytes) / 1048576.0);
    unlink(path);
    rmdir(dir);
    free(ms);
    free(plan);
    free(t);
    free(b.p);
    return 0;
}
