/*
 * The fleet's storage arena: one owner for every string, array and struct a loaded fleet (and its
 * YAML tree) points to, freed in one call. It makes the loader all-or-nothing without per-object
 * cleanup paths, and its ceiling bounds what a hostile file can make us allocate.
 * It does not shrink, reuse or move allocations.
 */
#include "fleet_internal.h"

#include <string.h>

struct sw__fleet_chunk {
    struct sw__fleet_chunk *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

#define CHUNK_MIN (16u * 1024u)

void sw__fleet_arena_init(struct sw__fleet_arena *a, size_t max)
{
    a->head = NULL;
    a->total = 0;
    a->max = max;
}

void *sw__fleet_alloc(struct sw__fleet_arena *a, size_t n)
{
    size_t need = (n + 15u) & ~(size_t)15u;
    if (need < n)
        return NULL;
    struct sw__fleet_chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t size = need > CHUNK_MIN ? need : CHUNK_MIN;
        if (size > a->max || a->total > a->max - size)
            return NULL;
        c = sw_malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        a->total += size;
        if (a->head && size == need) {
            /* a big allocation: keep the current chunk in front for the small ones */
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += need;
    memset(p, 0, n);
    return p;
}

void *sw__fleet_allocn(struct sw__fleet_arena *a, size_t count, size_t size)
{
    uint64_t n;
    if (!sw_mul_ok(count, size, &n) || n > SIZE_MAX)
        return NULL;
    return sw__fleet_alloc(a, (size_t)n);
}

char *sw__fleet_strndup(struct sw__fleet_arena *a, const char *s, size_t n)
{
    if (!s)
        return NULL;
    if (n == SIZE_MAX)
        return NULL;
    char *d = sw__fleet_alloc(a, n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *sw__fleet_strdup(struct sw__fleet_arena *a, const char *s)
{
    return s ? sw__fleet_strndup(a, s, strlen(s)) : NULL;
}

char *sw__fleet_printf(struct sw__fleet_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *d = sw__fleet_alloc(a, (size_t)n + 1);
    if (!d)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

void sw__fleet_arena_free(struct sw__fleet_arena *a)
{
    struct sw__fleet_chunk *c = a->head;
    while (c) {
        struct sw__fleet_chunk *next = c->next;
        sw_free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}
