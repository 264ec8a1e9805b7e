/*
 * The region (an arena): one owner for many small allocations (a parsed fleet and its YAML tree,
 * a scanned unit), freed in one call. It makes a parser all-or-nothing without per-object
 * cleanup paths, and its ceiling, set at init, bounds what a hostile input can make us allocate.
 *
 * It does not shrink, reuse or move allocations, and it never frees one alone.
 */
#include <slipway/core.h>

#include <string.h>

struct sw__region_chunk {
    struct sw__region_chunk *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
};

#define CHUNK_MIN (16u * 1024u)

void sw_region_init(struct sw_region *a, size_t max)
{
    a->head = NULL;
    a->total = 0;
    a->used = 0;
    a->max = max;
}

/* A chunk of at least need bytes, counted against the ceiling; NULL when over it or OOM. */
static struct sw__region_chunk *chunk_new(struct sw_region *a, size_t need)
{
    size_t size = need > CHUNK_MIN ? need : CHUNK_MIN;
    if (size > a->max || a->total > a->max - size ||
        size > SIZE_MAX - sizeof(struct sw__region_chunk))
        return NULL;
    struct sw__region_chunk *c = sw_malloc(sizeof(*c) + size);
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
    return c;
}

void *sw_region_alloc(struct sw_region *a, size_t n)
{
    size_t need = (n + 15u) & ~(size_t)15u;
    if (need < n)
        return NULL;
    if (!need)
        need = 16; /* every allocation its own address */
    struct sw__region_chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        c = chunk_new(a, need);
        if (!c)
            return NULL;
    }
    void *p = c->data + c->used;
    c->used += need;
    a->used += need;
    memset(p, 0, n);
    return p;
}

void *sw_region_allocn(struct sw_region *a, size_t count, size_t size)
{
    uint64_t n;
    if (!sw_mul_ok(count, size, &n) || n > SIZE_MAX)
        return NULL;
    return sw_region_alloc(a, (size_t)n);
}

char *sw_region_strndup(struct sw_region *a, const char *s, size_t n)
{
    if (!s || n == SIZE_MAX)
        return NULL;
    char *d = sw_region_alloc(a, n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *sw_region_strdup(struct sw_region *a, const char *s)
{
    return s ? sw_region_strndup(a, s, strlen(s)) : NULL;
}

char *sw_region_printf(struct sw_region *a, const char *fmt, ...)
{
    char tmp[256]; /* most texts fit: formatted once */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    char *d = n < 0 ? NULL : sw_region_alloc(a, (size_t)n + 1);
    if (!d || (size_t)n < sizeof(tmp))
        return d ? memcpy(d, tmp, (size_t)n + 1) : NULL;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

int sw_region_grow(struct sw_region *a, void *p, size_t *cap, size_t n, size_t size, size_t max_n)
{
    void **pp = p;
    if (n < *cap)
        return 0;
    if (n >= max_n)
        return SW_ERANGE;
    size_t nc = *cap ? *cap * 2 : 8;
    if (nc > max_n)
        nc = max_n;
    void *q = sw_region_allocn(a, nc, size);
    if (!q)
        return SW_ENOMEM;
    if (*pp && *cap)
        memcpy(q, *pp, *cap * size);
    *pp = q;
    *cap = nc;
    return 0;
}

void sw_region_free(struct sw_region *a)
{
    if (!a)
        return;
    while (a->head) {
        struct sw__region_chunk *c = a->head;
        a->head = c->next;
        sw_free(c);
    }
    a->total = a->used = 0;
}
