/*
 * Internal to model/arch: the key source that arch_hparams.c reads, so that a GGUF header and a
 * JSON declaration go through the very same interpretation code.
 *
 * Keys are llama.cpp's GGUF metadata names WITHOUT the "<arch>." prefix ("block_count",
 * "attention.head_count_kv"); a key starting with '@' is a full key ("@general.name").
 */
#ifndef SW_ARCH_INTERNAL_H
#define SW_ARCH_INTERNAL_H

#include <slipway/arch.h>

struct sw__meta {
    const void *ctx;
    const char *arch;  /* general.architecture */
    const char *where; /* for errors */
    /* A scalar number (integers, floats and bools widen to double). SW_ENOENT when absent;
     * SW_EPARSE when the key holds an array or a string. */
    int (*num)(const void *ctx, const char *key, double *out);
    /* An array: *len gets its length; up to `n` elements are written to out (numbers widen; out may
     * be NULL to only ask the length). SW_ENOENT when absent, SW_EPARSE when it is a scalar. */
    int (*arr)(const void *ctx, const char *key, double *out, size_t n, size_t *len);
    /* A string (NULL-safe: *out stays NULL when absent). */
    int (*str)(const void *ctx, const char *key, const char **out);
};

/* Mirror of llama.cpp's load_hparams + load_arch_hparams over a key source. Fills everything but
 * weights; calls sw_arch_finalize. */
int sw__arch_from_meta(const struct sw__meta *m, struct sw_arch **out, struct sw_err *e);

/* True if the pinned llama.cpp knows this architecture name (llama-arch.cpp LLM_ARCH_NAMES and the
 * model factory in llama-model.cpp). */
bool sw__arch_known(const char *name);

/* The N of a "blk.N.*" tensor name, or -1. */
int sw__tensor_layer(const char *name);

enum sw__wrole {
    SW__W_EMBD,
    SW__W_OUTPUT,
    SW__W_ATTN,
    SW__W_FFN,
    SW__W_EXPERTS,
    SW__W_SSM,
    SW__W_NORM,
    SW__W_OTHER
};
void sw__weights_add(struct sw_arch_weights *w, enum sw__wrole role, uint64_t bytes);

#endif
