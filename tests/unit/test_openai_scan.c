/*
 * openai chunk scanner: the allocation-free reading of a chat.completion.chunk must fold a
 * stream exactly as jansson does. Every stream of fuzz/corpus/openai_scan (the recorded and
 * synthetic streams of tests/data/openai, and edge cases: escapes, surrogate pairs, raw UTF-8,
 * numbers jansson types or refuses, duplicate keys, trailing bytes, tool calls, errors, the text
 * ceiling) is fed event by event to two results, one with the scanner and one with
 * json_only; the return codes, the deltas and the folds (sw_openai_result_diff) must agree after
 * every chunk. The usual chunks must actually take the scanner (a test that only ever fell back
 * would prove nothing), and with the buffers grown, a scanned chunk allocates nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/openai.h>
#include <slipway/sse.h>

#include "swtest.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pair {
    struct sw_openai_result fast, slow;
    const char *file;
    uint64_t events;
};

static int on_event(void *ud, const struct sw_sse_event *ev)
{
    struct pair *p = ud;
    struct sw_openai_delta a, b;
    struct sw_err ea, eb;
    p->events++;
    int ra = sw_openai_feed_chunk(&p->fast, ev->data, ev->data_len, ev->t_ns, &a, &ea);
    int rb = sw_openai_feed_chunk(&p->slow, ev->data, ev->data_len, ev->t_ns, &b, &eb);
    if (ra != rb)
        fail_msg("%s event %llu: rc %d (scanner) vs %d (jansson)", p->file,
                 (unsigned long long)p->events, ra, rb);
    if (!ra) {
        assert_int_equal(a.content_len, b.content_len);
        assert_int_equal(a.reasoning_len, b.reasoning_len);
        if (a.content_len)
            assert_memory_equal(a.content, b.content, a.content_len);
        if (a.reasoning_len)
            assert_memory_equal(a.reasoning, b.reasoning, a.reasoning_len);
        assert_true((a.finish_reason == NULL) == (b.finish_reason == NULL));
        if (a.finish_reason)
            assert_string_equal(a.finish_reason, b.finish_reason);
        assert_int_equal(a.tool_deltas, b.tool_deltas);
        assert_true(a.usage == b.usage && a.timings == b.timings && a.done == b.done &&
                    a.error == b.error);
    }
    char why[256];
    if (sw_openai_result_diff(&p->fast, &p->slow, why, sizeof(why)))
        fail_msg("%s event %llu: %s", p->file, (unsigned long long)p->events, why);
    return 0; /* go on past an error: every event is compared */
}

/* Fold one stream both ways; returns the chunks the scanner took (of *chunks). */
static uint64_t fold_both(const char *path, size_t text_max, uint64_t *chunks)
{
    char *buf = NULL;
    size_t n = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(path, 1 << 20, &buf, &n, &e), 0);
    struct pair p;
    memset(&p, 0, sizeof(p));
    p.file = path;
    sw_openai_result_init(&p.fast, text_max, 0);
    sw_openai_result_init(&p.slow, text_max, 0);
    p.slow.json_only = true;
    struct sw_sse sse;
    sw_sse_init(&sse, 0, 0, on_event, NULL, &p);
    assert_int_equal(sw_sse_feed(&sse, buf, n, 1, &e), 0);
    sw_sse_close(&sse);
    assert_int_equal(sw_openai_finish(&p.fast, &e), sw_openai_finish(&p.slow, &e));
    char why[256];
    if (sw_openai_result_diff(&p.fast, &p.slow, why, sizeof(why)))
        fail_msg("%s after finish: %s", path, why);
    assert_int_equal(p.slow.scanned, 0);
    uint64_t scanned = p.fast.scanned;
    *chunks = p.fast.chunks;
    sw_openai_result_free(&p.fast);
    sw_openai_result_free(&p.slow);
    sw_free(buf);
    return scanned;
}

static void test_corpus_both_ways(void **state)
{
    (void)state;
    const char *dir = swt_src("fuzz/corpus/openai_scan");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    size_t files = 0;
    uint64_t scanned = 0, chunks = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        uint64_t c, s;
        /* the default ceiling, and a small one so the text limit is crossed both ways */
        s = fold_both(path, 0, &c);
        scanned += s;
        chunks += c;
        fold_both(path, 64, &c);
        files++;
    }
    closedir(d);
    assert_true(files >= 20);
    print_message("%zu streams: %llu of %llu chunks scanned\n", files, (unsigned long long)scanned,
                  (unsigned long long)chunks);
    assert_true(scanned > chunks / 2);
}

/* The recorded llama-server streams take the scanner for every chunk. */
static void test_recorded_streams_scanned(void **state)
{
    (void)state;
    const char *names[] = {"llama_stream_plain.sse", "llama_stream_usage.sse",
                           "llama_think_stream.sse", "vllm_reasoning_field.sse"};
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", swt_src("tests/data/openai"), names[i]);
        uint64_t chunks;
        uint64_t s = fold_both(path, 0, &chunks);
        if (s != chunks)
            fail_msg("%s: %llu of %llu chunks scanned", names[i], (unsigned long long)s,
                     (unsigned long long)chunks);
    }
}

static void feed(struct sw_openai_result *r, const char *c)
{
    struct sw_err e;
    assert_int_equal(sw_openai_feed_chunk(r, c, strlen(c), 5, NULL, &e), 0);
}

static void test_decoding(void **state)
{
    (void)state;
    struct sw_openai_result r;
    sw_openai_result_init(&r, 0, 0);
    feed(&r, "{\"id\":\"i\\u00e9\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
             "\"content\":\"a\\nb\\t\\\"q\\\" \\\\ \\/ \\ud83d\\ude00 \xc3\xa9\"}}]}");
    feed(&r, "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"r\"},"
             "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,"
             "\"total_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":1}},"
             "\"timings\":{\"predicted_n\":2,\"predicted_ms\":1.5,\"prompt_n\":2.0}}");
    assert_int_equal(r.scanned, 2);
    assert_string_equal(r.id, "i\xc3\xa9");
    assert_string_equal(r.role, "assistant");
    assert_string_equal(sw_buf_cstr(&r.content), "a\nb\t\"q\" \\ / \xf0\x9f\x98\x80 \xc3\xa9");
    assert_string_equal(sw_buf_cstr(&r.reasoning), "r");
    assert_int_equal(r.reasoning_field, SW_OAI_REASONING_CONTENT);
    assert_string_equal(r.finish_reason, "stop");
    assert_int_equal(r.usage.cached_tokens, 1);
    assert_int_equal(r.usage.reasoning_tokens, -1);
    assert_int_equal(r.timings.predicted_n, 2);
    assert_int_equal(r.timings.prompt_n, 2);
    assert_true(r.timings.predicted_ms == 1.5);
    assert_int_equal(r.timings.cache_n, -1);
    assert_int_equal(r.text_chunks, 2);
    assert_int_equal(r.recs[0].flags, SW_OAI_CHUNK_ROLE);
    assert_int_equal(r.recs[1].flags,
                     SW_OAI_CHUNK_FINISH | SW_OAI_CHUNK_USAGE | SW_OAI_CHUNK_TIMINGS);
    /* a tool call delta is jansson's */
    feed(&r, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\","
             "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}");
    assert_int_equal(r.scanned, 2);
    assert_int_equal(r.ntool_calls, 1);
    sw_openai_result_free(&r);
}

/* Once the text buffer and the records have grown, a scanned chunk allocates nothing. */
static void test_no_allocation(void **state)
{
    (void)state;
    struct sw_openai_result r;
    sw_openai_result_init(&r, 0, 0);
    const char *c = "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":"
                    "\" word\"}}],\"created\":1764700000,\"id\":\"chatcmpl-bench\",\"model\":\"m\","
                    "\"object\":\"chat.completion.chunk\",\"timings\":{\"cache_n\":0,\"prompt_n\":"
                    "10,\"prompt_ms\":1.0,\"prompt_per_second\":10000,\"predicted_n\":7,"
                    "\"predicted_ms\":7.0,\"predicted_per_second\":1000}}";
    int fed = 0;
    do {
        feed(&r, c);
        fed++;
    } while (r.content.cap - r.content.len < 64 || r.recs_cap - r.nrecs < 16);
    long before = sw_alloc_count();
    for (int i = 0; i < 10; i++)
        feed(&r, c);
    assert_int_equal(sw_alloc_count(), before);
    assert_int_equal(r.scanned, fed + 10);
    assert_int_equal(r.content.len, (size_t)(fed + 10) * 5);
    sw_openai_result_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_both_ways),
        cmocka_unit_test(test_recorded_streams_scanned),
        cmocka_unit_test(test_decoding),
        cmocka_unit_test(test_no_allocation),
    };
    return cmocka_run_group_tests_name("openai_scan", tests, NULL, NULL);
}
