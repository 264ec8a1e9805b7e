/*
 * A byte-level GGUF builder for tests: writes exactly the bytes it is told to, so a test can make
 * a valid file and then break it in one precise place (a length, a count, a dimension, an offset).
 * Deliberately independent of slipway's own writer (gguf_write), so the reader is not tested only
 * against what our own writer believes GGUF is.
 */
#ifndef TEST_GGUF_BUILD_H
#define TEST_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gb {
    uint8_t *p;
    size_t n;
    size_t cap;
};

static inline void gb_put(struct gb *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        b->p = realloc(b->p, c);
        if (!b->p)
            abort();
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static inline void gb_u8(struct gb *b, uint8_t v)
{
    gb_put(b, &v, 1);
}
static inline void gb_u32(struct gb *b, uint32_t v)
{
    gb_put(b, &v, 4);
}
static inline void gb_u64(struct gb *b, uint64_t v)
{
    gb_put(b, &v, 8);
}
static inline void gb_strn(struct gb *b, const char *s, size_t n)
{
    gb_u64(b, n);
    gb_put(b, s, n);
}
static inline void gb_str(struct gb *b, const char *s)
{
    gb_strn(b, s, strlen(s));
}
static inline void gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_put(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}
static inline void gb_kv_u32(struct gb *b, const char *k, uint32_t v)
{
    gb_str(b, k);
    gb_u32(b, 4);
    gb_u32(b, v);
}
static inline void gb_kv_u16(struct gb *b, const char *k, uint16_t v)
{
    gb_str(b, k);
    gb_u32(b, 2);
    gb_put(b, &v, 2);
}
static inline void gb_kv_i32(struct gb *b, const char *k, int32_t v)
{
    gb_str(b, k);
    gb_u32(b, 5);
    gb_put(b, &v, 4);
}
static inline void gb_kv_str(struct gb *b, const char *k, const char *v)
{
    gb_str(b, k);
    gb_u32(b, 8);
    gb_str(b, v);
}
static inline void gb_tensor(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                             uint32_t type, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        gb_u64(b, ne[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}
static inline void gb_pad(struct gb *b, size_t align)
{
    while (b->n % align)
        gb_u8(b, 0);
}
static inline void gb_zeros(struct gb *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gb_u8(b, (uint8_t)(i * 7));
}
static inline void gb_free(struct gb *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

#endif
