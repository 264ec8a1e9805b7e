/*
 * net + openai against the real llama-server of the pinned llama.cpp, serving a random-weight
 * model with a real tokenizer (made by `slipway gguf synth`, or the file named by
 * $SW_NET_LLAMA_MODEL). One loop for the whole test, as probe will use it:
 *  - /v1/models read through the parser: the alias and the per-slot window (-c 1024 -np 2: 512);
 *  - a streamed chat with include_usage: usage and llama.cpp's timings agree on the token count,
 *    the chunk records are in arrival order and inside the transfer, [DONE] came;
 *  - a non-streamed chat: the same fields;
 *  - two streams at once on the one loop with -np 2: they overlap in time;
 *  - kept-alive connections are reused (CURLINFO_NUM_CONNECTS 0 after the first requests);
 *  - a prompt longer than the slot window: HTTP 400, exceed_context_size_error, with
 *    n_prompt_tokens > n_ctx = 512;
 *  - /metrics parsed with llama.cpp's names, counting at least the tokens generated here;
 *  - a stream cancelled mid-way, after which the server still answers.
 * Skips (saying why) when llama.cpp is not built or no chat-capable model can be made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/net.h>
#include <slipway/openai.h>

#include "swllama.h"
#include "swtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fixture {
    char *dir;
    char model[4096];
    struct swl_server srv;
    struct sw_net_loop loop;
};

static char g_missing[8700]; /* what setup lacked, for swt_need */

static int setup(void **state)
{
    *state = NULL;
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f || swl_chat_dir(&f->dir, f->model, sizeof(f->model), g_missing, sizeof(g_missing))) {
        free(f);
        return 0;
    }
    const char *args[] = {"-c",      "1024",        "-np",     "2", "--metrics",
                          "--alias", "frank-small", "--jinja", NULL};
    if (swl_start(f->model, args, NULL, 180, &f->srv)) {
        swt_tmpdir_free(f->dir);
        free(f);
        return -1;
    }
    struct sw_err e;
    if (sw_net_loop_init(&f->loop, NULL, &e)) {
        swl_stop(&f->srv);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (!f)
        return 0;
    sw_net_loop_close(&f->loop);
    swl_stop(&f->srv);
    swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

static const char *url(struct fixture *f, const char *path)
{
    static char b[4][256];
    static int i;
    char *u = b[i++ % 4];
    snprintf(u, 256, "%s%s", f->srv.url, path);
    return u;
}

static char *chat_body(const char *user, int max_tokens, bool stream)
{
    struct sw_openai_chat c;
    sw_openai_chat_init(&c);
    json_t *msgs = json_array();
    json_array_append_new(msgs, sw_openai_msg("user", user));
    c.messages = msgs;
    c.max_tokens = max_tokens;
    c.stream = stream;
    c.include_usage = stream;
    c.temperature = 0;
    c.has_seed = true;
    c.seed = 11;
    struct sw_err e;
    char *s = sw_openai_chat_text(&c, NULL, &e);
    json_decref(msgs);
    assert_non_null(s);
    return s;
}

static void test_models(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(&f->loop, url(f, "/v1/models"), NULL, &r, &e), 0);
    assert_int_equal(r.status, 200);
    struct sw_openai_models m;
    assert_int_equal(sw_openai_parse_models(r.body.data, r.body.len, &m, &e), 0);
    const struct sw_openai_model *x = sw_openai_models_find(&m, "frank-small");
    assert_non_null(x);
    assert_string_equal(x->owned_by, "llamacpp");
    assert_int_equal(x->n_ctx, 512);
    assert_true(x->n_ctx_train > 0);
    sw_openai_models_free(&m);
    sw_net_resp_free(&r);
}

static void check_tokens(const struct sw_openai_result *r, int max_tokens)
{
    assert_true(r->usage.present);
    assert_true(r->timings.present);
    /* the server's two counts agree; chunks never outnumber tokens */
    assert_int_equal(r->usage.completion_tokens, r->timings.predicted_n);
    assert_true(r->usage.completion_tokens > 0 && r->usage.completion_tokens <= max_tokens);
    assert_true(r->usage.prompt_tokens > 0);
    assert_true(r->text_chunks <= (uint64_t)r->usage.completion_tokens);
    assert_true(r->timings.predicted_per_second > 0);
}

static void test_stream_and_reply(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    char *body = chat_body("Count to five.", 16, true);
    struct sw_openai_result res;
    sw_openai_result_init(&res, 0, 0);
    struct sw_net_req q = {.url = url(f, "/v1/chat/completions"),
                           .body = body,
                           .body_len = strlen(body),
                           .first_byte_ms = 120000,
                           .idle_ms = 60000,
                           .on_event = sw_openai_on_event,
                           .ud = &res};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(&f->loop, &q, &r, &e), 0);
    assert_int_equal(sw_openai_finish(&res, &e), 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(sw_net_resp_header(&r, "content-type"), "text/event-stream"));
    assert_true(res.done);
    check_tokens(&res, 16);
    assert_string_equal(res.model, "frank-small");
    for (size_t i = 0; i < res.nrecs; i++) {
        assert_true(res.recs[i].t_ns >= r.t.first_body && res.recs[i].t_ns <= r.t.done);
        if (i)
            assert_true(res.recs[i].t_ns >= res.recs[i - 1].t_ns);
    }
    assert_true(res.t_first_text >= r.t.first_byte);
    sw_openai_result_free(&res);
    sw_net_resp_free(&r);
    sw_free(body);
    /* not streamed */
    body = chat_body("Count to five.", 16, false);
    assert_int_equal(sw_net_post_json(&f->loop, url(f, "/v1/chat/completions"), body, strlen(body),
                                      NULL, &r, &e),
                     0);
    assert_int_equal(r.status, 200);
    /* the pinned llama-server closes the connection after a streamed reply although it sends
     * "Keep-Alive: timeout=5, max=100" (curl finds it dead and reconnects), so this request may
     * have opened one; after a plain reply the connection is kept */
    long after_stream = r.new_connections;
    assert_true(after_stream <= 1);
    sw_openai_result_init(&res, 0, 0);
    assert_int_equal(sw_openai_parse_response(&res, r.body.data, r.body.len, &e), 0);
    check_tokens(&res, 16);
    assert_true(res.finish_reason[0]);
    sw_openai_result_free(&res);
    sw_net_resp_free(&r);
    sw_free(body);
    assert_int_equal(sw_net_get(&f->loop, url(f, "/health"), NULL, &r, &e), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.new_connections, 0); /* kept alive after a plain reply, reused */
    sw_net_resp_free(&r);
}

struct par {
    struct sw_net_xfer x;
    struct sw_openai_result r;
};

static void test_parallel_streams(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    char *body = chat_body("Write a long list of fruits.", 24, true);
    struct par p[2];
    struct sw_err e;
    for (int i = 0; i < 2; i++) {
        sw_net_xfer_init(&p[i].x);
        sw_openai_result_init(&p[i].r, 0, 0);
        p[i].x.req.url = url(f, "/v1/chat/completions");
        p[i].x.req.body = body;
        p[i].x.req.body_len = strlen(body);
        p[i].x.req.idle_ms = 60000;
        p[i].x.req.on_event = sw_openai_on_event;
        p[i].x.req.ud = &p[i].r;
        assert_int_equal(sw_net_start(&f->loop, &p[i].x, &e), 0);
    }
    assert_int_equal(sw_net_loop_run(&f->loop), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(p[i].x.resp.rc, 0);
        assert_int_equal(sw_openai_finish(&p[i].r, &e), 0);
        check_tokens(&p[i].r, 24);
    }
    /* two slots: each stream had text before the other one ended */
    assert_true(p[0].r.t_first_chunk < p[1].r.t_last_chunk);
    assert_true(p[1].r.t_first_chunk < p[0].r.t_last_chunk);
    for (int i = 0; i < 2; i++) {
        sw_openai_result_free(&p[i].r);
        sw_net_xfer_close(&p[i].x);
    }
    sw_free(body);
}

static void test_over_length(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    for (int i = 0; i < 400; i++)
        sw_buf_puts(&b, "lorem ipsum dolor sit amet ");
    char *body = chat_body(sw_buf_cstr(&b), 8, true);
    sw_buf_free(&b);
    struct sw_openai_result res;
    sw_openai_result_init(&res, 0, 0);
    struct sw_net_req q = {.url = url(f, "/v1/chat/completions"),
                           .body = body,
                           .body_len = strlen(body),
                           .on_event = sw_openai_on_event,
                           .ud = &res};
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_request(&f->loop, &q, &r, &e), 0);
    assert_int_equal(r.status, 400);
    assert_int_equal(res.chunks, 0);
    struct sw_openai_error oe;
    sw_openai_parse_error(r.body.data, r.body.len, r.status, &oe);
    assert_int_equal(oe.shape, SW_OAI_SHAPE_LLAMACPP);
    assert_int_equal(oe.kind, SW_OAI_ERR_CONTEXT);
    assert_string_equal(oe.type, "exceed_context_size_error");
    assert_int_equal(oe.n_ctx, 512);
    assert_true(oe.n_prompt_tokens > oe.n_ctx);
    sw_openai_result_free(&res);
    sw_net_resp_free(&r);
    sw_free(body);
}

static int cancel_after_two(void *ud, const struct sw_sse_event *ev)
{
    struct par *p = ud;
    int rc = sw_openai_on_event(&p->r, ev);
    if (!rc && p->r.chunks == 2)
        sw_net_cancel(&p->x);
    return rc;
}

static void test_cancel_then_alive(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    char *body = chat_body("Tell a long story.", 200, true);
    struct par p;
    struct sw_err e;
    sw_net_xfer_init(&p.x);
    sw_openai_result_init(&p.r, 0, 0);
    p.x.req.url = url(f, "/v1/chat/completions");
    p.x.req.body = body;
    p.x.req.body_len = strlen(body);
    p.x.req.on_event = cancel_after_two;
    p.x.req.ud = &p;
    assert_int_equal(sw_net_start(&f->loop, &p.x, &e), 0);
    assert_int_equal(sw_net_loop_run(&f->loop), 0);
    assert_int_equal(p.x.resp.fail, SW_NET_CANCELLED);
    assert_int_equal(p.r.chunks, 2);
    sw_openai_result_free(&p.r);
    sw_net_xfer_close(&p.x);
    sw_free(body);
    /* the server dropped the request and still serves */
    body = chat_body("Hi.", 4, false);
    struct sw_net_resp r;
    struct sw_net_req tmpl = {.total_ms = 120000};
    assert_int_equal(sw_net_post_json(&f->loop, url(f, "/v1/chat/completions"), body, strlen(body),
                                      &tmpl, &r, &e),
                     0);
    assert_int_equal(r.status, 200);
    sw_net_resp_free(&r);
    sw_free(body);
}

static void test_metrics(void **state)
{
    struct fixture *f = *state;
    swt_need(f != NULL, "%s", g_missing);
    struct sw_net_resp r;
    struct sw_err e;
    assert_int_equal(sw_net_get(&f->loop, url(f, "/metrics"), NULL, &r, &e), 0);
    assert_int_equal(r.status, 200);
    struct sw_openai_metrics m;
    assert_int_equal(sw_openai_metrics_parse(r.body.data, r.body.len, &m, &e), 0);
    assert_int_equal(sw_openai_metrics_engine(&m), SW_OAI_ENGINE_LLAMACPP);
    double predicted = sw_openai_metrics_sum(&m, "llamacpp:tokens_predicted_total");
    assert_false(isnan(predicted));
    assert_true(predicted >= 16); /* at least the first chat's tokens */
    assert_non_null(sw_openai_metrics_type(&m, "llamacpp:tokens_predicted_total"));
    double rates[4];
    size_t npos;
    assert_int_equal(sw_openai_metrics_spec_accept(&m, rates, 4, &npos), SW_ENOENT);
    sw_openai_metrics_free(&m);
    sw_net_resp_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_stream_and_reply),
        cmocka_unit_test(test_parallel_streams),
        cmocka_unit_test(test_over_length),
        cmocka_unit_test(test_cancel_then_alive),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests_name("net_llama", tests, setup, teardown);
}
