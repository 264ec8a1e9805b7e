/*
 * bench_gguf: how long does reading a big GGUF header take?
 *
 * Writes a synthetic model with slipway's writer: 10,000 tensors (llama-style names, q4_K/f32
 * shapes kept tiny so the file stays small: the header is what is measured), a 152k-token
 * vocabulary with scores, token types and merges (a header of realistic size), then parses it
 * again and again with sw_gguf_open and reports min/median wall time and throughput.
 *
 *     build/bench/bench_gguf [--tensors N] [--vocab N] [--repeats R] [--keep FILE] [--json]
 *
 * Planning from the parsed header (memory/llamacpp) is measured by its own bench.
 */
#include <slipway/gguf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int build(const char *path, uint64_t n_tensors, uint64_t n_vocab, struct sw_err *e)
{
    struct sw_gguf_writer *w = NULL;
    int rc = sw_gguf_writer_new(&w, 3, 32);
    if (rc)
        return sw_err_set(e, rc, "writer");
    uint64_t per_layer = 9; /* attn q k v o, ffn gate up down, 2 norms */
    uint64_t layers = (n_tensors - 3) / per_layer + 1;
    rc = sw_gguf_writer_set_str(w, "general.architecture", "llama");
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "llama.block_count", (uint32_t)layers);
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "llama.context_length", 131072);
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "llama.embedding_length", 256);
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "llama.attention.head_count", 4);
    if (!rc)
        rc = sw_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 1);
    if (!rc)
        rc = sw_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    struct sw_gguf_str *tok = calloc(n_vocab, sizeof(*tok));
    double *scores = calloc(n_vocab, sizeof(double));
    int64_t *types = calloc(n_vocab, sizeof(int64_t));
    char *pool = malloc(n_vocab * 24);
    if (!tok || !scores || !types || !pool) {
        rc = SW_ENOMEM;
        goto out;
    }
    for (uint64_t i = 0; i < n_vocab; i++) {
        tok[i].s = pool + i * 24;
        tok[i].len = (uint64_t)snprintf(tok[i].s, 24, "\xc4\xa0tok%llu", (unsigned long long)i);
        scores[i] = -(double)i;
        types[i] = 1;
    }
    struct sw_gguf_value v = {.type = SW_GGUF_ARRAY};
    v.as.arr.n = n_vocab;
    v.as.arr.elem = SW_GGUF_STRING;
    v.as.arr.v.str = tok;
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.tokens", &v);
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.merges", &v);
    v.as.arr.elem = SW_GGUF_FLOAT32;
    v.as.arr.v.f = scores;
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.scores", &v);
    v.as.arr.elem = SW_GGUF_INT32;
    v.as.arr.v.i = types;
    if (!rc)
        rc = sw_gguf_writer_set(w, "tokenizer.ggml.token_type", &v);

    static uint8_t data[144 * 2];
    static const char *const names[] = {"attn_q",      "attn_k",    "attn_v",
                                        "attn_output", "ffn_gate",  "ffn_up",
                                        "ffn_down",    "attn_norm", "ffn_norm"};
    char name[64];
    uint64_t added = 0;
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "token_embd.weight", 12, 2, (uint64_t[]){256, 2}, data,
                                       true);
    for (uint64_t l = 0; !rc && added + 3 < n_tensors; l++) {
        for (uint64_t k = 0; !rc && k < per_layer && added + 3 < n_tensors; k++, added++) {
            snprintf(name, sizeof(name), "blk.%llu.%s.weight", (unsigned long long)l, names[k]);
            if (k >= 7)
                rc = sw_gguf_writer_add_tensor(w, name, 0, 1, (uint64_t[]){64}, data, true);
            else
                rc = sw_gguf_writer_add_tensor(w, name, 12, 2, (uint64_t[]){256, 2}, data, true);
        }
    }
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "output_norm.weight", 0, 1, (uint64_t[]){64}, data, true);
    if (!rc)
        rc = sw_gguf_writer_add_tensor(w, "output.weight", 12, 2, (uint64_t[]){256, 2}, data, true);
    if (!rc)
        rc = sw_gguf_writer_write(w, path, e);
    else
        sw_err_set(e, rc, "building the synthetic model");
out:
    free(tok);
    free(scores);
    free(types);
    free(pool);
    sw_gguf_writer_free(w);
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t n_tensors = 10000, n_vocab = 152064, repeats = 30;
    const char *keep = NULL;
    bool json = false;
    sw_core_init();
    for (int i = 1; i < argc; i++) {
        struct sw_err pe;
        if (!strcmp(argv[i], "--tensors") && i + 1 < argc)
            sw_parse_count(argv[++i], &n_tensors, &pe);
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc)
            sw_parse_count(argv[++i], &n_vocab, &pe);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            sw_parse_count(argv[++i], &repeats, &pe);
        else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
            keep = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else {
            fprintf(stderr, "usage: bench_gguf [--tensors N] [--vocab N] [--repeats R] "
                            "[--keep FILE] [--json]\n");
            return 2;
        }
    }
    if (n_tensors < 4 || !repeats || repeats > 100000) {
        fprintf(stderr, "bench_gguf: need --tensors >= 4 and 1..100000 repeats\n");
        return 2;
    }
    char tmpl[] = "/tmp/bench_gguf.XXXXXX";
    const char *path = keep;
    char tmppath[64];
    if (!path) {
        int fd = mkstemp(tmpl);
        if (fd < 0)
            return 1;
        close(fd);
        snprintf(tmppath, sizeof(tmppath), "%s", tmpl);
        path = tmppath;
    }
    struct sw_err e;
    double t0 = sw_now_s();
    if (build(path, n_tensors, n_vocab, &e)) {
        char b[2048];
        fprintf(stderr, "bench_gguf: %s\n", sw_err_format(&e, b, sizeof(b)));
        return 1;
    }
    double t_write = sw_now_s() - t0;
    uint64_t *ns = calloc(repeats, sizeof(uint64_t));
    uint64_t header = 0, file_size = 0, got_tensors = 0;
    for (uint64_t r = 0; r < repeats; r++) {
        struct sw_gguf *g = NULL;
        uint64_t a = sw_now_ns();
        int rc = sw_gguf_open(path, &g, &e);
        ns[r] = sw_now_ns() - a;
        if (rc) {
            fprintf(stderr, "bench_gguf: parse failed: %s\n", e.msg);
            return 1;
        }
        header = g->data_offset;
        file_size = g->file_size;
        got_tensors = g->n_tensors;
        sw_gguf_free(g);
    }
    qsort(ns, repeats, sizeof(*ns), cmp_u64);
    double min_ms = (double)ns[0] / 1e6, med_ms = (double)ns[repeats / 2] / 1e6;
    double mbps = (double)header / (1 << 20) / (med_ms / 1e3);
    double tps = (double)got_tensors / (med_ms / 1e3);
    if (json) {
        printf("{\"tensors\": %llu, \"vocab\": %llu, \"header_bytes\": %llu, \"file_bytes\": %llu, "
               "\"repeats\": %llu, \"parse_ms_min\": %.3f, \"parse_ms_median\": %.3f, "
               "\"header_mib_per_s\": %.1f, \"tensors_per_s\": %.0f, \"write_s\": %.3f}\n",
               (unsigned long long)got_tensors, (unsigned long long)n_vocab,
               (unsigned long long)header, (unsigned long long)file_size,
               (unsigned long long)repeats, min_ms, med_ms, mbps, tps, t_write);
    } else {
        char hb[64], fb[64];
        printf("GGUF header parse: %llu tensors, %llu-token vocabulary (+merges), header %s, "
               "file %s\n",
               (unsigned long long)got_tensors, (unsigned long long)n_vocab,
               sw_fmt_bytes(header, hb, sizeof(hb)), sw_fmt_bytes(file_size, fb, sizeof(fb)));
        printf("  sw_gguf_open x%llu: min %.3f ms, median %.3f ms  (%.0f MiB/s of header, "
               "%.0f tensors/s)\n",
               (unsigned long long)repeats, min_ms, med_ms, mbps, tps);
        printf("  (writing it took %.3f s)\n", t_write);
    }
    free(ns);
    if (!keep)
        unlink(path);
    return 0;
}
