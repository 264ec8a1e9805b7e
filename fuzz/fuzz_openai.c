/*
 * Fuzz the OpenAI-side parsers with one harness: the first byte picks the parser (a stream fed
 * through the SSE parser, one chunk payload, a whole reply, an error body, /v1/models, /metrics),
 * the rest is the input. Every parser must return a code and free everything; results are also
 * checked for their invariants (records never exceed chunks, metrics lookups stay in bounds).
 */
#include <slipway/openai.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_result(struct sw_openai_result *r)
{
    if (r->nrecs > r->chunks || r->text_chunks > r->chunks)
        abort();
    if (r->content.len > r->text_max || r->reasoning.len > r->text_max)
        abort();
    for (size_t i = 0; i < r->ntool_calls; i++)
        if (r->tool_calls[i].args.len > SW_OAI_ARGS_MAX)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    struct sw_err e;
    switch (data[0] % 6) {
    case 0: {
        struct sw_openai_result r;
        struct sw_sse p;
        sw_openai_result_init(&r, 4096, 64);
        sw_sse_init(&p, 8192, 8192, sw_openai_on_event, NULL, &r);
        size_t cut = n ? (data[0] * 7u) % n : 0;
        int rc = sw_sse_feed(&p, s, cut, 1, &e);
        if (!rc)
            rc = sw_sse_feed(&p, s + cut, n - cut, 2, &e);
        if (!rc)
            sw_openai_finish(&r, &e);
        check_result(&r);
        sw_sse_close(&p);
        sw_openai_result_free(&r);
        break;
    }
    case 1: {
        struct sw_openai_result r;
        struct sw_openai_delta d;
        sw_openai_result_init(&r, 0, 0);
        sw_openai_feed_chunk(&r, s, n, 1, &d, &e);
        if (d.content && d.content_len)
            (void)d.content[d.content_len - 1];
        sw_openai_finish(&r, &e);
        check_result(&r);
        sw_openai_result_free(&r);
        break;
    }
    case 2: {
        struct sw_openai_result r;
        sw_openai_result_init(&r, 0, 0);
        sw_openai_parse_response(&r, s, n, &e);
        check_result(&r);
        sw_openai_result_free(&r);
        break;
    }
    case 3: {
        struct sw_openai_error o;
        sw_openai_parse_error(s, n, 400 + data[0] % 200, &o);
        if (strnlen(o.message, sizeof(o.message)) == sizeof(o.message))
            abort();
        break;
    }
    case 4: {
        struct sw_openai_models m;
        if (!sw_openai_parse_models(s, n, &m, &e) && m.n)
            sw_openai_models_find(&m, m.v[m.n - 1].id);
        sw_openai_models_free(&m);
        break;
    }
    case 5: {
        struct sw_openai_metrics m;
        if (!sw_openai_metrics_parse(s, n, &m, &e)) {
            double rates[8];
            size_t npos;
            sw_openai_metrics_spec_accept(&m, rates, 8, &npos);
            if (npos > 8)
                abort();
            sw_openai_metrics_engine(&m);
            if (m.n)
                sw_openai_metrics_sum(&m, m.v[0].name);
        }
        sw_openai_metrics_free(&m);
        break;
    }
    }
    return 0;
}
