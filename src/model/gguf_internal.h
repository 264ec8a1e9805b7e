/*
 * model/gguf internals shared by gguf.c (reader), gguf_arena.c (arena and name indexes),
 * gguf_types.c (type tables), gguf_get.c (lookups), gguf_json.c and gguf_write.c. Not a public
 * API.
 */
#ifndef SLIPWAY_GGUF_INTERNAL_H
#define SLIPWAY_GGUF_INTERNAL_H

#include <slipway/gguf.h>

/* A parse allocates everything it keeps (kv array, tensor array, strings, widened arrays, lookup
 * indexes) from a chunked arena: freeing a header is freeing a short list, an allocation failure
 * anywhere leaves nothing to unwind, and a 250k-token vocabulary costs a few dozen mallocs instead
 * of 250k. */
struct sw__chunk;
struct sw__arena {
    struct sw__chunk *head;
    uint64_t bytes; /* total handed out, for the header-memory ceiling */
};
void *sw__arena_alloc(struct sw__arena *a, size_t n);
void sw__arena_free(struct sw__arena *a);
/* Append b's chunks to a (b is left empty). */
void sw__arena_merge(struct sw__arena *a, struct sw__arena *b);

/* Open-addressing index of names (keys or tensor names) -> position + 1; 0 marks an empty slot. */
struct sw__index {
    uint32_t *slot;
    uint64_t cap; /* power of two */
};
uint64_t sw__hash(const char *s, size_t n);
/* An empty index for n names in the arena: 0 or SW_ENOMEM. */
int sw__index_init(struct sw__arena *a, struct sw__index *ix, uint64_t n);

struct sw_gguf_priv {
    struct sw__arena arena;
    struct sw__index kv_index;
    struct sw__index t_index;
    /* fork types the file was read with (in the arena); NULL when none were declared */
    struct sw_ggml_type *extra;
    size_t n_extra;
};

/* (Re)build both indexes over g->kv / g->tensors in g's arena. *dup is set to the position of the
 * first tensor whose name was already taken, or -1 (duplicate keys are not looked for: the reader
 * rejects them while parsing). */
int sw__gguf_build_index(struct sw_gguf *g, int64_t *dup);
/* Index kv[i] (tensors[i]) under its name unless the name is taken: -1 when it was indexed, else
 * the position of the entry that already has that name (the reader's duplicate check). */
int64_t sw__gguf_kv_index(struct sw_gguf *g, uint64_t i);
int64_t sw__gguf_tensor_index(struct sw_gguf *g, uint64_t i);
/* Position of a key / tensor name, or -1. */
int64_t sw__gguf_kv_pos(const struct sw_gguf *g, const char *key, size_t len);
int64_t sw__gguf_tensor_pos(const struct sw_gguf *g, const char *name, size_t len);

const char *sw__ggml_removed_name(uint32_t id);
uint32_t sw__ggml_type_count(void);
/* The stock type of id, else the one among extra[0..n) (a fork's declaration); NULL. */
const struct sw_ggml_type *sw__ggml_type_in(const struct sw_ggml_type *extra, size_t n,
                                            uint32_t id);
/* Keep the declared types x (may be NULL) with the header g, names copied into its arena. */
int sw__gguf_keep_types(struct sw_gguf *g, const struct sw_gguf_types *x, struct sw_err *e);

/* Bytes a scalar of this metadata type takes in the file; 0 for string/array/unknown. */
size_t sw__gguf_type_size(uint32_t t);

/* IEEE half from float, round to nearest even. */
uint16_t sw__f32_to_f16(float f);

#endif
