/*
 * Fuzz the SSE parser: the input is a 4-byte header (limits and a split seed) and a stream. The
 * stream is parsed whole and again in pseudo-random pieces; both runs must dispatch the same
 * events and end the same way (a difference aborts: that is a finding, not just a crash).
 */
#include <slipway/sse.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct digest {
    uint64_t h;
    uint64_t n;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int on_event(void *ud, const struct sw_sse_event *ev)
{
    struct digest *d = ud;
    d->h = fnv(d->h, ev->type, strlen(ev->type) + 1);
    d->h = fnv(d->h, ev->data, ev->data_len);
    d->h = fnv(d->h, &ev->data_len, sizeof(ev->data_len));
    d->h = fnv(d->h, ev->id, strlen(ev->id) + 1);
    d->h = fnv(d->h, &ev->done, sizeof(ev->done));
    if (ev->data[ev->data_len] != '\0')
        abort(); /* data is NUL-terminated */
    d->n++;
    return 0;
}

static int on_comment(void *ud, const char *text, size_t len, uint64_t t)
{
    struct digest *d = ud;
    d->h = fnv(d->h, text, len);
    return 0;
}

static int run(const uint8_t *s, size_t n, size_t line_max, size_t event_max, uint32_t seed,
               struct digest *d, int64_t *retry)
{
    struct sw_sse p;
    struct sw_err e;
    d->h = 1469598103934665603ull;
    d->n = 0;
    sw_sse_init(&p, line_max, event_max, on_event, on_comment, d);
    int rc = 0;
    size_t i = 0;
    while (i < n && !rc) {
        size_t piece = n - i;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            piece = SW_MIN(piece, (size_t)(seed >> 16) % 17 + 1);
        }
        rc = sw_sse_feed(&p, s + i, piece, i, &e);
        i += piece;
    }
    if (!rc)
        rc = sw_sse_finish(&p, &e);
    *retry = sw_sse_retry_ms(&p);
    sw_sse_close(&p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    size_t line_max = data[0] ? data[0] : 0; /* 0: the default */
    size_t event_max = data[1] ? data[1] * 4u : 0;
    uint32_t seed = (uint32_t)data[2] << 8 | data[3];
    struct digest a, b;
    int64_t ra, rb;
    int rc1 = run(data + 4, size - 4, line_max, event_max, 0, &a, &ra);
    int rc2 = run(data + 4, size - 4, line_max, event_max, seed | 1, &b, &rb);
    if (rc1 != rc2 || a.h != b.h || a.n != b.n || ra != rb)
        abort();
    return 0;
}
