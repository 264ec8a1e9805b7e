/*
 * Fuzz the chunk scanner against jansson: the input is an SSE stream of chat.completion.chunk
 * payloads. Every event is fed to two results, one through the scanner (with jansson for what
 * it leaves), one through jansson only; the return codes, the deltas and the folds must agree
 * after every chunk (a difference aborts: that is a finding, not just a crash). The whole input
 * is also fed as one chunk payload both ways, so arbitrary JSON reaches the scanner directly.
 * The text ceiling is small, so the content and reasoning limits are exercised too.
 */
#include <slipway/openai.h>
#include <slipway/sse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct pair {
    struct sw_openai_result fast, slow;
};

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_openai_scan: the scanner and jansson disagree: %s\n", what);
    abort();
}

static bool same_text(const char *a, size_t an, const char *b, size_t bn)
{
    return an == bn && (!an || !memcmp(a, b, an));
}

static int feed_both(struct pair *p, const char *data, size_t len, uint64_t t)
{
    struct sw_openai_delta a, b;
    struct sw_err ea, eb;
    int ra = sw_openai_feed_chunk(&p->fast, data, len, t, &a, &ea);
    int rb = sw_openai_feed_chunk(&p->slow, data, len, t, &b, &eb);
    if (ra != rb)
        fail("return code");
    if (!ra) {
        if (!same_text(a.content, a.content_len, b.content, b.content_len) ||
            !same_text(a.reasoning, a.reasoning_len, b.reasoning, b.reasoning_len))
            fail("delta text");
        if ((a.finish_reason == NULL) != (b.finish_reason == NULL) ||
            (a.finish_reason && strcmp(a.finish_reason, b.finish_reason)))
            fail("delta finish_reason");
        if (a.tool_deltas != b.tool_deltas || a.usage != b.usage || a.timings != b.timings ||
            a.done != b.done || a.error != b.error)
            fail("delta flags");
    }
    char why[256];
    if (sw_openai_result_diff(&p->fast, &p->slow, why, sizeof(why)))
        fail(why);
    return ra;
}

static int on_event(void *ud, const struct sw_sse_event *ev)
{
    feed_both(ud, ev->data, ev->data_len, ev->t_ns);
    return 0; /* go on past an error: every event is compared */
}

static void pair_init(struct pair *p)
{
    sw_openai_result_init(&p->fast, 4096, 64);
    sw_openai_result_init(&p->slow, 4096, 64);
    p->slow.json_only = true;
}

static void pair_end(struct pair *p)
{
    struct sw_err e;
    if (sw_openai_finish(&p->fast, &e) != sw_openai_finish(&p->slow, &e))
        fail("finish");
    char why[256];
    if (sw_openai_result_diff(&p->fast, &p->slow, why, sizeof(why)))
        fail(why);
    if (p->slow.scanned)
        fail("json_only took the scanner");
    sw_openai_result_free(&p->fast);
    sw_openai_result_free(&p->slow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    struct pair p;
    struct sw_sse sse;
    struct sw_err e;
    pair_init(&p);
    sw_sse_init(&sse, 65536, 65536, on_event, NULL, &p);
    sw_sse_feed(&sse, (const char *)data, size, 1, &e);
    sw_sse_close(&sse);
    pair_end(&p);

    pair_init(&p);
    feed_both(&p, (const char *)data, size, 7);
    pair_end(&p);
    return 0;
}
