/*
 * model/gguf_arena: where a parsed GGUF header keeps what it holds. One chunked arena per header
 * (the kv and tensor arrays, every string, widened arrays, the indexes), so freeing a header is
 * freeing a short list and an allocation failure anywhere leaves nothing to unwind; and the
 * open-addressing hash indexes over its key and tensor names, by which the reader finds a
 * duplicate while parsing and the getters find a name.
 *
 * What it does not do: bound what a file may claim (the reader checks every length against the
 * bytes left before it asks for memory, and the header's memory against SW_GGUF_MAX_HEADER_MEM
 * through a->bytes), or free single allocations.
 */
#include <slipway/gguf.h>

#include <stddef.h>
#include <string.h>

#include "model/gguf_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Arena
 */
struct sw__chunk {
    struct sw__chunk *next;
    size_t used;
    size_t cap;
    max_align_t data[];
};

#define CHUNK_MIN (64u * 1024u)

void *sw__arena_alloc(struct sw__arena *a, size_t n)
{
    n = (n + 15u) & ~(size_t)15u;
    if (!n)
        n = 16;
    struct sw__chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
        if (cap > SIZE_MAX - sizeof(*c))
            return NULL;
        struct sw__chunk *nc = sw_malloc(sizeof(*nc) + cap);
        if (!nc)
            return NULL;
        nc->used = 0;
        nc->cap = cap;
        /* a big block gets its own chunk behind the current one, so the current one keeps
         * serving small strings */
        if (c && n > CHUNK_MIN) {
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->bytes += n;
    return p;
}

void sw__arena_free(struct sw__arena *a)
{
    if (!a)
        return;
    struct sw__chunk *c = a->head;
    while (c) {
        struct sw__chunk *n = c->next;
        sw_free(c);
        c = n;
    }
    a->head = NULL;
    a->bytes = 0;
}

void sw__arena_merge(struct sw__arena *a, struct sw__arena *b)
{
    if (!b->head)
        return;
    struct sw__chunk *t = b->head;
    while (t->next)
        t = t->next;
    /* keep a's head (the chunk with free room) first */
    if (a->head) {
        t->next = a->head->next;
        a->head->next = b->head;
    } else {
        a->head = b->head;
    }
    a->bytes += b->bytes;
    b->head = NULL;
    b->bytes = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Name index
 */
uint64_t sw__hash(const char *s, size_t n)
{
    /* FNV-1a, then a final mix so the low bits (the slot) depend on every byte */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

int sw__index_init(struct sw__arena *a, struct sw__index *ix, uint64_t n)
{
    uint64_t cap = 16;
    while (cap < n * 2)
        cap <<= 1;
    ix->slot = sw__arena_alloc(a, (size_t)cap * sizeof(uint32_t));
    if (!ix->slot)
        return SW_ENOMEM;
    memset(ix->slot, 0, (size_t)cap * sizeof(uint32_t));
    ix->cap = cap;
    return 0;
}

/* Find `name` among strs[] through the index; returns the position or -1. If absent and `insert`
 * is given, stores `insert` (a position) in the free slot. */
static int64_t index_probe(const struct sw__index *ix,
                           const struct sw_gguf_str *(*at)(const void *, uint64_t),
                           const void *base, const char *name, size_t len, int64_t insert)
{
    if (!ix->cap)
        return -1;
    uint64_t mask = ix->cap - 1;
    for (uint64_t h = sw__hash(name, len) & mask;; h = (h + 1) & mask) {
        uint32_t v = ix->slot[h];
        if (!v) {
            if (insert >= 0)
                ix->slot[h] = (uint32_t)insert + 1;
            return -1;
        }
        const struct sw_gguf_str *s = at(base, v - 1);
        if (s->len == len && !memcmp(s->s, name, len))
            return (int64_t)v - 1;
    }
}

static const struct sw_gguf_str *kv_name_at(const void *base, uint64_t i)
{
    return &((const struct sw_gguf_kv *)base)[i].key;
}

static const struct sw_gguf_str *tensor_name_at(const void *base, uint64_t i)
{
    return &((const struct sw_gguf_tensor *)base)[i].name;
}

int64_t sw__gguf_kv_pos(const struct sw_gguf *g, const char *key, size_t len)
{
    if (!g || !g->priv)
        return -1;
    return index_probe(&g->priv->kv_index, kv_name_at, g->kv, key, len, -1);
}

int64_t sw__gguf_tensor_pos(const struct sw_gguf *g, const char *name, size_t len)
{
    if (!g || !g->priv)
        return -1;
    return index_probe(&g->priv->t_index, tensor_name_at, g->tensors, name, len, -1);
}

int64_t sw__gguf_kv_index(struct sw_gguf *g, uint64_t i)
{
    return index_probe(&g->priv->kv_index, kv_name_at, g->kv, g->kv[i].key.s,
                       (size_t)g->kv[i].key.len, (int64_t)i);
}

int64_t sw__gguf_tensor_index(struct sw_gguf *g, uint64_t i)
{
    return index_probe(&g->priv->t_index, tensor_name_at, g->tensors, g->tensors[i].name.s,
                       (size_t)g->tensors[i].name.len, (int64_t)i);
}

int sw__gguf_build_index(struct sw_gguf *g, int64_t *dup)
{
    struct sw_gguf_priv *p = g->priv;
    *dup = -1;
    if (sw__index_init(&p->arena, &p->kv_index, g->n_kv) ||
        sw__index_init(&p->arena, &p->t_index, g->n_tensors))
        return SW_ENOMEM;
    for (uint64_t i = 0; i < g->n_kv; i++)
        sw__gguf_kv_index(g, i);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if (sw__gguf_tensor_index(g, i) >= 0 && *dup < 0)
            *dup = (int64_t)i;
    }
    return 0;
}
