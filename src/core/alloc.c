/*
 * The allocation wrapper. Every allocation in slipway goes through here so tests can fail the Nth
 * call (curl's torture mode) and check that every error path frees what it took.
 * It does not track live blocks: leak detection is ASan's job.
 */
#include <slipway/core.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long alloc_calls;
static atomic_long fail_at;            /* absolute call number that fails; 0 = none */
static _Thread_local long failed_here; /* allocations that returned NULL on this thread */

void sw_alloc_fail_at(long n)
{
    atomic_store(&fail_at, n > 0 ? atomic_load(&alloc_calls) + n : 0);
}

long sw_alloc_count(void)
{
    return atomic_load(&alloc_calls);
}

long sw_alloc_failures(void)
{
    return failed_here;
}

static bool should_fail(void)
{
    long n = atomic_fetch_add(&alloc_calls, 1) + 1;
    long f = atomic_load(&fail_at);
    if (f != 0 && n == f) {
        failed_here++;
        return true;
    }
    return false;
}

static void *counted(void *p)
{
    if (!p)
        failed_here++;
    return p;
}

void *sw_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return counted(malloc(n ? n : 1));
}

void *sw_calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    if (!count || !size)
        return counted(calloc(1, 1));
    return counted(calloc(count, size));
}

void *sw_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return counted(realloc(p, n ? n : 1));
}

void sw_free(void *p)
{
    free(p);
}

char *sw_strdup(const char *s)
{
    return s ? sw_strndup(s, strlen(s)) : NULL;
}

bool sw_str_in(const char *s, const char *const *list)
{
    for (size_t i = 0; s && list && list[i]; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

char *sw_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = sw_malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

int sw_grow(void *arr, size_t *cap, size_t n, size_t size, size_t max_n)
{
    void **pp = arr;
    if (n < *cap)
        return 0;
    if (n >= max_n)
        return SW_ERANGE;
    size_t nc = *cap ? *cap : 8;
    while (nc <= n)
        nc = nc > SIZE_MAX / 2 ? SIZE_MAX : nc * 2;
    if (nc > max_n)
        nc = max_n;
    uint64_t bytes;
    if (!sw_mul_ok(nc, size, &bytes) || bytes > SIZE_MAX)
        return SW_ENOMEM;
    void *q = sw_realloc(*pp, (size_t)bytes);
    if (!q)
        return SW_ENOMEM;
    *pp = q;
    *cap = nc;
    return 0;
}

bool sw_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

bool sw_add_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

void sw_core_init(void)
{
    json_set_alloc_funcs(sw_malloc, sw_free);
}
