/*
 * openai: request building and the parsers for replies, streams, error bodies, /v1/models and
 * /metrics.
 *
 * Data-driven: every tests/data/openai/NAME.case.json names its kind, where its bytes came from
 * ("recorded: ..." from a real engine, or "synthetic: ..." when hand-written to hit an edge) and
 * the expected fields; its input is the sibling file NAME.<ext>. Streams are fed through the SSE
 * parser whole, cut at every byte boundary, and one byte at a time; every way must give the same
 * result. Streams also go over real HTTP (tests/support/swhttpd, in small pieces) through
 * net's on_event, and must fold to the same result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/net.h>
#include <slipway/openai.h>

#include "swhttpd.h"
#include "swtest.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *rc_name(int rc)
{
    switch (rc) {
    case 0:
        return "ok";
    case SW_EPARSE:
        return "SW_EPARSE";
    case SW_EHTTP:
        return "SW_EHTTP";
    case SW_ERANGE:
        return "SW_ERANGE";
    case SW_ENOENT:
        return "SW_ENOENT";
    case SW_ETRUNC:
        return "SW_ETRUNC";
    default:
        return sw_strerror(rc);
    }
}

/* ---- folding a stream ---- */

struct fold {
    struct sw_openai_result r;
    int rc;
};

static void fold_split(const char *buf, size_t n, const size_t *cuts, size_t ncuts, struct fold *f)
{
    struct sw_sse p;
    struct sw_err e;
    sw_openai_result_init(&f->r, 0, 0);
    sw_sse_init(&p, 0, 0, sw_openai_on_event, NULL, &f->r);
    size_t prev = 0;
    int rc = 0;
    for (size_t k = 0; k <= ncuts && !rc; k++) {
        size_t to = k < ncuts ? cuts[k] : n;
        rc = sw_sse_feed(&p, buf + prev, to - prev, 100 + k, &e);
        prev = to;
    }
    if (!rc)
        rc = sw_openai_finish(&f->r, &e);
    f->rc = rc;
    sw_sse_close(&p);
}

static void expect_str(const char *why, const char *field, json_t *want, const char *got,
                       size_t got_len)
{
    if (!want)
        return;
    const char *w = json_string_value(want);
    if (!w || strlen(w) != got_len || memcmp(w, got, got_len)) {
        print_error("%s: %s: expected \"%s\", got \"%.*s\"\n", why, field, w ? w : "(?)",
                    (int)got_len, got);
        fail();
    }
}

static void expect_int(const char *why, const char *field, json_t *want, int64_t got)
{
    if (!want)
        return;
    if (json_integer_value(want) != got) {
        print_error("%s: %s: expected %lld, got %lld\n", why, field,
                    (long long)json_integer_value(want), (long long)got);
        fail();
    }
}

static void expect_real(const char *why, const char *field, json_t *want, double got)
{
    if (!want)
        return;
    double w = json_number_value(want);
    if (fabs(w - got) > 1e-9 * SW_MAX(1.0, fabs(w))) {
        print_error("%s: %s: expected %g, got %g\n", why, field, w, got);
        fail();
    }
}

static void check_result(const char *why, json_t *x, const struct sw_openai_result *r, int rc)
{
    expect_str(why, "rc", json_object_get(x, "rc"), rc_name(rc), strlen(rc_name(rc)));
    expect_str(why, "content", json_object_get(x, "content"), sw_buf_cstr(&r->content),
               r->content.len);
    expect_str(why, "reasoning", json_object_get(x, "reasoning"), sw_buf_cstr(&r->reasoning),
               r->reasoning.len);
    const char *rf = sw_openai_reasoning_field_name(r->reasoning_field);
    expect_str(why, "reasoning_field", json_object_get(x, "reasoning_field"), rf, strlen(rf));
    const char *th = sw_openai_think_name(r->think);
    expect_str(why, "think", json_object_get(x, "think"), th, strlen(th));
    expect_str(why, "finish_reason", json_object_get(x, "finish_reason"), r->finish_reason,
               strlen(r->finish_reason));
    expect_str(why, "model", json_object_get(x, "model"), r->model, strlen(r->model));
    expect_int(why, "chunks", json_object_get(x, "chunks"), (int64_t)r->chunks);
    expect_int(why, "text_chunks", json_object_get(x, "text_chunks"), (int64_t)r->text_chunks);
    json_t *done = json_object_get(x, "done");
    if (done && json_is_true(done) != r->done) {
        print_error("%s: done: expected %d\n", why, json_is_true(done));
        fail();
    }
    json_t *u = json_object_get(x, "usage");
    if (u) {
        assert_true(r->usage.present);
        expect_int(why, "usage.prompt_tokens", json_object_get(u, "prompt_tokens"),
                   r->usage.prompt_tokens);
        expect_int(why, "usage.completion_tokens", json_object_get(u, "completion_tokens"),
                   r->usage.completion_tokens);
        expect_int(why, "usage.total_tokens", json_object_get(u, "total_tokens"),
                   r->usage.total_tokens);
    }
    json_t *t = json_object_get(x, "timings");
    if (t) {
        assert_true(r->timings.present);
        expect_int(why, "timings.prompt_n", json_object_get(t, "prompt_n"), r->timings.prompt_n);
        expect_int(why, "timings.predicted_n", json_object_get(t, "predicted_n"),
                   r->timings.predicted_n);
        expect_real(why, "timings.predicted_per_second", json_object_get(t, "predicted_per_second"),
                    r->timings.predicted_per_second);
    }
    json_t *tc = json_object_get(x, "tool_calls");
    if (tc) {
        if (json_array_size(tc) != r->ntool_calls) {
            print_error("%s: expected %zu tool calls, got %zu\n", why, json_array_size(tc),
                        r->ntool_calls);
            fail();
        }
        for (size_t i = 0; i < r->ntool_calls; i++) {
            json_t *w = json_array_get(tc, i);
            const struct sw_openai_tool_call *c = &r->tool_calls[i];
            expect_int(why, "tool.index", json_object_get(w, "index"), c->index);
            if (json_object_get(w, "id"))
                expect_str(why, "tool.id", json_object_get(w, "id"), c->id ? c->id : "",
                           c->id ? strlen(c->id) : 0);
            expect_str(why, "tool.name", json_object_get(w, "name"), c->name ? c->name : "",
                       c->name ? strlen(c->name) : 0);
            expect_str(why, "tool.arguments", json_object_get(w, "arguments"),
                       sw_buf_cstr(&c->args), c->args.len);
            json_t *v = json_object_get(w, "valid");
            if (v && json_is_true(v) != c->args_valid) {
                print_error("%s: tool %zu valid: expected %d (%s)\n", why, i, json_is_true(v),
                            c->args_error);
                fail();
            }
        }
    }
    json_t *er = json_object_get(x, "error");
    if (er) {
        assert_true(r->error.present);
        const char *k = sw_openai_err_kind_name(r->error.kind);
        const char *s = sw_openai_err_shape_name(r->error.shape);
        expect_str(why, "error.kind", json_object_get(er, "kind"), k, strlen(k));
        expect_str(why, "error.shape", json_object_get(er, "shape"), s, strlen(s));
        expect_str(why, "error.type", json_object_get(er, "type"), r->error.type,
                   strlen(r->error.type));
    }
    json_t *em = json_object_get(x, "errmsg");
    char full[2048];
    sw_err_format(&r->err, full, sizeof(full));
    if (em && !strstr(full, json_string_value(em))) {
        print_error("%s: error message \"%s\" lacks \"%s\"\n", why, full, json_string_value(em));
        fail();
    }
}

static void run_stream(const char *name, const char *buf, size_t n, json_t *x)
{
    struct fold f;
    char why[256];
    snprintf(why, sizeof(why), "%s (whole)", name);
    fold_split(buf, n, NULL, 0, &f);
    check_result(why, x, &f.r, f.rc);
    sw_openai_result_free(&f.r);
    for (size_t k = 0; k <= n; k++) {
        fold_split(buf, n, &k, 1, &f);
        snprintf(why, sizeof(why), "%s (cut at %zu)", name, k);
        check_result(why, x, &f.r, f.rc);
        sw_openai_result_free(&f.r);
    }
    size_t *cuts = malloc((n + 1) * sizeof(*cuts));
    for (size_t k = 0; k < n; k++)
        cuts[k] = k + 1;
    fold_split(buf, n, cuts, n ? n - 1 : 0, &f);
    snprintf(why, sizeof(why), "%s (byte by byte)", name);
    check_result(why, x, &f.r, f.rc);
    /* per-chunk records: one per parsed chunk, times in order */
    if (f.rc == 0) {
        assert_int_equal(f.r.nrecs, f.r.chunks);
        uint64_t text = 0;
        for (size_t i = 0; i < f.r.nrecs; i++) {
            if (i)
                assert_true(f.r.recs[i].t_ns >= f.r.recs[i - 1].t_ns);
            if (f.r.recs[i].content_bytes || f.r.recs[i].reasoning_bytes)
                text++;
        }
        assert_int_equal(text, f.r.text_chunks);
    }
    sw_openai_result_free(&f.r);
    free(cuts);
}

static void run_response(const char *name, const char *buf, size_t n, json_t *x)
{
    struct sw_openai_result r;
    struct sw_err e;
    sw_openai_result_init(&r, 0, 0);
    int rc = sw_openai_parse_response(&r, buf, n, &e);
    check_result(name, x, &r, rc);
    sw_openai_result_free(&r);
}

static void run_error(const char *name, const char *buf, size_t n, json_t *c, json_t *x)
{
    struct sw_openai_error o;
    sw_openai_parse_error(buf, n, (long)json_integer_value(json_object_get(c, "status")), &o);
    assert_true(o.present);
    const char *k = sw_openai_err_kind_name(o.kind);
    const char *s = sw_openai_err_shape_name(o.shape);
    expect_str(name, "kind", json_object_get(x, "kind"), k, strlen(k));
    expect_str(name, "shape", json_object_get(x, "shape"), s, strlen(s));
    expect_str(name, "type", json_object_get(x, "type"), o.type, strlen(o.type));
    expect_str(name, "code", json_object_get(x, "code"), o.code, strlen(o.code));
    expect_str(name, "message", json_object_get(x, "message"), o.message, strlen(o.message));
    expect_int(name, "n_ctx", json_object_get(x, "n_ctx"), o.n_ctx);
    expect_int(name, "n_prompt_tokens", json_object_get(x, "n_prompt_tokens"), o.n_prompt_tokens);
    json_t *has = json_object_get(x, "message_has");
    if (has && !strstr(o.message, json_string_value(has))) {
        print_error("%s: message \"%s\" lacks \"%s\"\n", name, o.message, json_string_value(has));
        fail();
    }
}

static void run_models(const char *name, const char *buf, size_t n, json_t *x)
{
    struct sw_openai_models m;
    struct sw_err e;
    int rc = sw_openai_parse_models(buf, n, &m, &e);
    expect_str(name, "rc", json_object_get(x, "rc"), rc_name(rc), strlen(rc_name(rc)));
    if (rc) {
        assert_int_equal(m.n, 0);
        return;
    }
    expect_int(name, "n", json_object_get(x, "n"), (int64_t)m.n);
    json_t *ms = json_object_get(x, "models");
    for (size_t i = 0; i < json_array_size(ms) && i < m.n; i++) {
        json_t *w = json_array_get(ms, i);
        const struct sw_openai_model *g = &m.v[i];
        expect_str(name, "id", json_object_get(w, "id"), g->id, strlen(g->id));
        if (json_object_get(w, "owned_by"))
            expect_str(name, "owned_by", json_object_get(w, "owned_by"), g->owned_by,
                       strlen(g->owned_by));
        if (json_object_get(w, "root"))
            expect_str(name, "root", json_object_get(w, "root"), g->root, strlen(g->root));
        expect_int(name, "max_model_len", json_object_get(w, "max_model_len"), g->max_model_len);
        expect_int(name, "n_ctx", json_object_get(w, "n_ctx"), g->n_ctx);
        expect_int(name, "n_ctx_train", json_object_get(w, "n_ctx_train"), g->n_ctx_train);
        json_t *al = json_object_get(w, "alias");
        if (al)
            assert_ptr_equal(sw_openai_models_find(&m, json_string_value(al)), g);
        assert_ptr_equal(sw_openai_models_find(&m, g->id), g);
    }
    sw_openai_models_free(&m);
}

static void run_metrics(const char *name, const char *buf, size_t n, json_t *x)
{
    struct sw_openai_metrics m;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_openai_metrics_parse(buf, n, &m, &e);
    expect_str(name, "rc", json_object_get(x, "rc"), rc_name(rc), strlen(rc_name(rc)));
    if (rc) {
        expect_int(name, "line", json_object_get(x, "line"), e.line);
        return;
    }
    expect_int(name, "n", json_object_get(x, "n"), (int64_t)m.n);
    const char *g = sw_openai_engine_name(sw_openai_metrics_engine(&m));
    expect_str(name, "engine", json_object_get(x, "engine"), g, strlen(g));
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(x, "sum"), k, v)
        expect_real(name, k, v, sw_openai_metrics_sum(&m, k));
    json_object_foreach(json_object_get(x, "type"), k, v)
    {
        const char *t = sw_openai_metrics_type(&m, k);
        assert_non_null(t);
        expect_str(name, k, v, t, strlen(t));
    }
    json_t *sa = json_object_get(x, "spec_accept");
    double rates[8];
    size_t npos = 0;
    int src = sw_openai_metrics_spec_accept(&m, rates, 8, &npos);
    if (sa) {
        assert_int_equal(src, 0);
        assert_int_equal(npos, json_array_size(sa));
        for (size_t i = 0; i < npos; i++)
            expect_real(name, "spec_accept", json_array_get(sa, i), rates[i]);
    }
    json_t *srcx = json_object_get(x, "spec_rc");
    if (srcx)
        expect_str(name, "spec_rc", srcx, rc_name(src), strlen(rc_name(src)));
    json_t *lb = json_object_get(x, "label");
    if (lb) {
        const struct sw_openai_sample *s =
            sw_openai_metrics_get(&m, json_string_value(json_object_get(lb, "name")),
                                  json_string_value(json_object_get(lb, "label")), NULL);
        assert_non_null(s);
        const char *lv = sw_openai_sample_label(s, json_string_value(json_object_get(lb, "label")));
        expect_str(name, "label", json_object_get(lb, "value"), lv, strlen(lv));
    }
    sw_openai_metrics_free(&m);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The input file of a case: NAME.<ext> next to NAME.case.json. */
static char *input_of(const char *dir, const char *stem)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *found = NULL;
    size_t sl = strlen(stem);
    while ((de = readdir(d)) != NULL) {
        if (!strncmp(de->d_name, stem, sl) && de->d_name[sl] == '.' &&
            strcmp(de->d_name + sl, ".case.json") && strcmp(de->d_name + sl, ".request.json")) {
            found = malloc(strlen(dir) + strlen(de->d_name) + 2);
            sprintf(found, "%s/%s", dir, de->d_name);
            break;
        }
    }
    closedir(d);
    return found;
}

static void test_data_cases(void **state)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", swt_src("tests/data/openai"));
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[1024];
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 10 && !strcmp(de->d_name + l - 10, ".case.json") && nn < SW_ARRAY_LEN(names))
            names[nn++] = strndup(de->d_name, l - 10);
    }
    closedir(d);
    qsort(names, nn, sizeof(*names), cmp_str);
    assert_true(nn >= 20);
    for (size_t i = 0; i < nn; i++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s.case.json", dir, names[i]);
        json_error_t je;
        json_t *c = json_load_file(path, 0, &je);
        if (!c)
            fail_msg("%s: %s", path, je.text);
        const char *src = json_string_value(json_object_get(c, "source"));
        assert_non_null(src);
        assert_true(!strncmp(src, "synthetic", 9) || !strncmp(src, "recorded", 8));
        char *in = input_of(dir, names[i]);
        if (!in)
            fail_msg("%s: no input file", names[i]);
        char *buf = NULL;
        size_t n = 0;
        struct sw_err e;
        assert_int_equal(sw_read_file(in, 64u << 20, &buf, &n, &e), 0);
        const char *kind = json_string_value(json_object_get(c, "kind"));
        json_t *x = json_object_get(c, "expect");
        assert_non_null(kind);
        assert_non_null(x);
        if (!strcmp(kind, "stream"))
            run_stream(names[i], buf, n, x);
        else if (!strcmp(kind, "response"))
            run_response(names[i], buf, n, x);
        else if (!strcmp(kind, "error"))
            run_error(names[i], buf, n, c, x);
        else if (!strcmp(kind, "models"))
            run_models(names[i], buf, n, x);
        else if (!strcmp(kind, "metrics"))
            run_metrics(names[i], buf, n, x);
        else
            fail_msg("%s: unknown kind %s", names[i], kind);
        sw_free(buf);
        free(in);
        json_decref(c);
        free(names[i]);
    }
}

/* ---- over real HTTP ---- */

static void stream_over_http(struct swh *s, const char *file, size_t piece, int want_rc,
                             struct sw_openai_result *r, struct sw_net_resp *resp)
{
    swh_sse_file(s, "/v1/chat/completions", file, piece, 0);
    sw_openai_result_init(r, 0, 0);
    struct sw_net_req q = {.url = swh_url(s, "/v1/chat/completions"),
                           .body = "{}",
                           .body_len = 2,
                           .idle_ms = 5000,
                           .on_event = sw_openai_on_event,
                           .ud = r};
    struct sw_err e;
    int rc = sw_net_request(NULL, &q, resp, &e);
    assert_int_equal(rc, want_rc);
    if (!rc)
        assert_int_equal(sw_openai_finish(r, &e), 0);
}

/* A recorded stream folds the same from the file and over HTTP in small pieces. */
static void same_over_http(const char *name, size_t piece)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "tests/data/openai/%s.sse", name);
    char *buf = NULL;
    size_t n = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(swt_src(rel), 1 << 20, &buf, &n, &e), 0);
    struct fold f;
    fold_split(buf, n, NULL, 0, &f);
    assert_int_equal(f.rc, 0);
    struct swh *s = swh_start();
    struct sw_openai_result r;
    struct sw_net_resp resp;
    stream_over_http(s, swt_src(rel), piece, 0, &r, &resp);
    assert_string_equal(sw_buf_cstr(&r.content), sw_buf_cstr(&f.r.content));
    assert_string_equal(sw_buf_cstr(&r.reasoning), sw_buf_cstr(&f.r.reasoning));
    assert_int_equal(r.think, f.r.think);
    assert_int_equal(r.chunks, f.r.chunks);
    assert_int_equal(r.ntool_calls, f.r.ntool_calls);
    for (size_t i = 0; i < r.ntool_calls; i++)
        assert_string_equal(sw_buf_cstr(&r.tool_calls[i].args),
                            sw_buf_cstr(&f.r.tool_calls[i].args));
    assert_int_equal(r.usage.completion_tokens, f.r.usage.completion_tokens);
    assert_int_equal(r.timings.predicted_n, f.r.timings.predicted_n);
    assert_true(r.done);
    sw_openai_result_free(&r);
    sw_openai_result_free(&f.r);
    sw_net_resp_free(&resp);
    swh_stop(s);
    sw_free(buf);
}

static void test_http_streams(void **state)
{
    /* real llama-server transcripts, replayed byte for byte in odd-sized pieces */
    same_over_http("llama_tool_stream", 7);
    same_over_http("llama_think_inline_stream", 13);
    same_over_http("llama_stream_usage", 1);
    struct swh *s = swh_start();
    struct sw_openai_result r;
    struct sw_net_resp resp;
    /* a whole stream in 5-byte pieces: the same fold as from the file */
    stream_over_http(s, swt_src("tests/data/openai/tool_call_deltas.sse"), 5, 0, &r, &resp);
    assert_int_equal(resp.status, 200);
    assert_int_equal(r.ntool_calls, 2);
    assert_string_equal(r.tool_calls[1].name, "get_time");
    assert_true(r.tool_calls[0].args_valid);
    assert_true(r.done);
    assert_int_equal(r.usage.completion_tokens, 21);
    /* the chunk times are the arrival times: inside the transfer */
    for (size_t i = 0; i < r.nrecs; i++) {
        assert_true(r.recs[i].t_ns >= resp.t.first_body);
        assert_true(r.recs[i].t_ns <= resp.t.done);
    }
    sw_openai_result_free(&r);
    sw_net_resp_free(&resp);
    /* data: that is not JSON stops the transfer with a parse error naming the chunk */
    swh_stop(s);
    s = swh_start();
    stream_over_http(s, swt_src("tests/data/openai/not_json.sse"), 7, SW_EPARSE, &r, &resp);
    assert_int_equal(resp.fail, SW_NET_ABORTED);
    assert_int_equal(r.err.code, SW_EPARSE);
    char full[2048];
    assert_non_null(strstr(sw_err_format(&r.err, full, sizeof(full)), "stream chunk 2"));
    assert_string_equal(sw_buf_cstr(&r.content), "ok");
    sw_openai_result_free(&r);
    sw_net_resp_free(&resp);
    /* invalid UTF-8 likewise */
    swh_stop(s);
    s = swh_start();
    stream_over_http(s, swt_src("tests/data/openai/invalid_utf8.sse"), 3, SW_EPARSE, &r, &resp);
    assert_int_equal(r.err.code, SW_EPARSE);
    sw_openai_result_free(&r);
    sw_net_resp_free(&resp);
    /* an error object inside the stream */
    swh_stop(s);
    s = swh_start();
    stream_over_http(s, swt_src("tests/data/openai/stream_error.sse"), 11, SW_EHTTP, &r, &resp);
    assert_true(r.error.present);
    assert_int_equal(r.error.kind, SW_OAI_ERR_SERVER);
    sw_openai_result_free(&r);
    sw_net_resp_free(&resp);
    /* a 400 to a streaming request is not parsed as events: its body is kept for the caller */
    swh_stop(s);
    s = swh_start();
    swh_reply(s, "POST", "/v1/chat/completions", 400, NULL,
              "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context "
              "size, try increasing it\",\"type\":\"exceed_context_size_error\","
              "\"n_prompt_tokens\":5000,\"n_ctx\":4096}}");
    sw_openai_result_init(&r, 0, 0);
    struct sw_net_req q = {.url = swh_url(s, "/v1/chat/completions"),
                           .body = "{}",
                           .body_len = 2,
                           .on_event = sw_openai_on_event,
                           .ud = &r};
    struct sw_err e;
    assert_int_equal(sw_net_request(NULL, &q, &resp, &e), 0);
    assert_int_equal(resp.status, 400);
    assert_int_equal(r.chunks, 0);
    struct sw_openai_error oe;
    sw_openai_parse_error(resp.body.data, resp.body.len, resp.status, &oe);
    assert_int_equal(oe.kind, SW_OAI_ERR_CONTEXT);
    assert_int_equal(oe.shape, SW_OAI_SHAPE_LLAMACPP);
    assert_int_equal(oe.n_prompt_tokens, 5000);
    assert_int_equal(oe.n_ctx, 4096);
    sw_openai_result_free(&r);
    sw_net_resp_free(&resp);
    swh_stop(s);
}

/* ---- requests ---- */

static void test_build_request(void **state)
{
    struct sw_openai_chat c;
    struct sw_err e;
    sw_openai_chat_init(&c);
    assert_null(sw_openai_chat_json(&c, &e)); /* no messages */
    assert_int_equal(e.code, SW_EINVAL);
    json_t *msgs = json_array();
    json_array_append_new(msgs, sw_openai_msg("system", "Be brief."));
    json_t *u = sw_openai_msg_parts("user");
    assert_int_equal(sw_openai_part_text(u, "What colour is this?"), 0);
    unsigned char png[] = {0x89, 'P', 'N', 'G'};
    char *url = sw_openai_data_url("image/png", png, sizeof(png));
    assert_string_equal(url, "data:image/png;base64,iVBORw==");
    assert_int_equal(sw_openai_part_image_url(u, url, "low"), 0);
    sw_free(url);
    json_array_append_new(msgs, u);
    assert_int_equal(sw_openai_part_text(json_array_get(msgs, 0), "x"), SW_EINVAL);
    json_t *params = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", "city",
                               "type", "string", "required", "city");
    json_t *tools = json_array();
    json_array_append_new(tools, sw_openai_tool("get_weather", "Weather of a city", params));
    c.model = "frank-small";
    c.messages = msgs;
    c.tools = tools;
    c.tool_choice = json_string("required");
    c.stream = true;
    c.include_usage = true;
    c.max_tokens = 64;
    c.temperature = 0;
    c.has_seed = true;
    c.seed = 42;
    c.grammar = "root ::= \"<think>\" [a-z ]* \"</think>\" .*";
    c.extra = json_pack("{s:{s:b}}", "chat_template_kwargs", "enable_thinking", 1);
    size_t len = 0;
    char *txt = sw_openai_chat_text(&c, &len, &e);
    assert_non_null(txt);
    assert_int_equal(strlen(txt), len);
    json_t *j = json_loads(txt, 0, NULL);
    sw_free(txt);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "model")), "frank-small");
    assert_true(json_is_true(json_object_get(j, "stream")));
    assert_true(
        json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")));
    assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 64);
    assert_int_equal(json_integer_value(json_object_get(j, "seed")), 42);
    assert_true(json_number_value(json_object_get(j, "temperature")) == 0.0);
    assert_null(json_object_get(j, "top_p")); /* unset stays out */
    assert_string_equal(json_string_value(json_object_get(j, "tool_choice")), "required");
    json_t *part = json_array_get(
        json_object_get(json_array_get(json_object_get(j, "messages"), 1), "content"), 1);
    assert_string_equal(json_string_value(json_object_get(part, "type")), "image_url");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(part, "image_url"), "detail")), "low");
    json_t *fn = json_object_get(json_array_get(json_object_get(j, "tools"), 0), "function");
    assert_string_equal(json_string_value(json_object_get(fn, "name")), "get_weather");
    assert_non_null(json_object_get(j, "grammar"));
    assert_true(json_is_true(
        json_object_get(json_object_get(j, "chat_template_kwargs"), "enable_thinking")));
    json_decref(j);
    json_decref(msgs);
    json_decref(tools);
    json_decref(c.tool_choice);
    json_decref(c.extra);
}

static void test_base64(void **state)
{
    /* RFC 4648 section 10 test vectors */
    static const char *const v[][2] = {{"", ""},
                                       {"f", "Zg=="},
                                       {"fo", "Zm8="},
                                       {"foo", "Zm9v"},
                                       {"foob", "Zm9vYg=="},
                                       {"fooba", "Zm9vYmE="},
                                       {"foobar", "Zm9vYmFy"}};
    for (size_t i = 0; i < SW_ARRAY_LEN(v); i++) {
        char *u = sw_openai_data_url("text/plain", v[i][0], strlen(v[i][0]));
        assert_non_null(u);
        assert_string_equal(u + strlen("data:text/plain;base64,"), v[i][1]);
        sw_free(u);
    }
}

static void test_records_and_tokens(void **state)
{
    /* chunk records are bounded: past recs_max they are counted as dropped, never an error */
    struct sw_openai_result r;
    struct sw_err e;
    sw_openai_result_init(&r, 0, 3);
    const char *c = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}";
    for (int i = 0; i < 5; i++)
        assert_int_equal(sw_openai_feed_chunk(&r, c, strlen(c), 10 + (uint64_t)i, NULL, &e), 0);
    assert_int_equal(r.nrecs, 3);
    assert_int_equal(r.recs_dropped, 2);
    assert_int_equal(r.text_chunks, 5);
    assert_int_equal(r.t_first_text, 10);
    assert_int_equal(r.t_last_chunk, 14);
    assert_string_equal(sw_buf_cstr(&r.content), "ababababab");
    sw_openai_result_free(&r);
    /* a text ceiling is a clean SW_ERANGE */
    sw_openai_result_init(&r, 5, 0);
    assert_int_equal(sw_openai_feed_chunk(&r, c, strlen(c), 1, NULL, &e), 0);
    assert_int_equal(sw_openai_feed_chunk(&r, c, strlen(c), 2, NULL, &e), 0);
    assert_int_equal(sw_openai_feed_chunk(&r, c, strlen(c), 3, NULL, &e), SW_ERANGE);
    sw_openai_result_free(&r);
    /* the delta view */
    struct sw_openai_delta d;
    sw_openai_result_init(&r, 0, 0);
    const char *c2 = "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"hm\"},"
                     "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,"
                     "\"completion_tokens\":2,\"total_tokens\":3}}";
    assert_int_equal(sw_openai_feed_chunk(&r, c2, strlen(c2), 5, &d, &e), 0);
    assert_int_equal(d.reasoning_len, 2);
    assert_string_equal(d.finish_reason, "stop");
    assert_true(d.usage);
    assert_int_equal(r.recs[0].flags, SW_OAI_CHUNK_FINISH | SW_OAI_CHUNK_USAGE);
    assert_int_equal(sw_openai_feed_chunk(&r, "[DONE]", 6, 6, &d, &e), 0);
    assert_true(d.done);
    assert_true(r.done);
    assert_int_equal(sw_openai_feed_chunk(&r, "[1,2]", 5, 7, &d, &e), SW_EPARSE);
    sw_openai_result_free(&r);
}

static void test_alloc_failures(void **state)
{
    char *buf = NULL;
    size_t n = 0;
    struct sw_err e;
    assert_int_equal(
        sw_read_file(swt_src("tests/data/openai/tool_call_deltas.sse"), 1 << 20, &buf, &n, &e), 0);
    const char *prom = "# TYPE a counter\na{x=\"1\",y=\"2\"} 3\nb 4\n";
    const char *models = "{\"data\":[{\"id\":\"m\",\"owned_by\":\"o\",\"aliases\":[\"a\",\"b\"],"
                         "\"meta\":{\"n_ctx\":4}}]}";
    for (long k = 1; k < 200; k++) {
        struct fold f;
        sw_alloc_fail_at(k);
        fold_split(buf, n, NULL, 0, &f);
        sw_alloc_fail_at(0);
        assert_true(f.rc == 0 || f.rc == SW_ENOMEM || f.rc == SW_EPARSE);
        sw_openai_result_free(&f.r);
        struct sw_openai_metrics m;
        sw_alloc_fail_at(k);
        int rc = sw_openai_metrics_parse(prom, strlen(prom), &m, &e);
        sw_alloc_fail_at(0);
        assert_true(rc == 0 || rc == SW_ENOMEM);
        if (!rc)
            assert_int_equal(m.n, 2);
        sw_openai_metrics_free(&m);
        struct sw_openai_models ms;
        sw_alloc_fail_at(k);
        rc = sw_openai_parse_models(models, strlen(models), &ms, &e);
        sw_alloc_fail_at(0);
        assert_true(rc == 0 || rc == SW_ENOMEM || rc == SW_EPARSE);
        if (!rc)
            assert_int_equal(ms.v[0].naliases, 2);
        sw_openai_models_free(&ms);
    }
    sw_free(buf);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_cases),         cmocka_unit_test(test_http_streams),
        cmocka_unit_test(test_build_request),      cmocka_unit_test(test_base64),
        cmocka_unit_test(test_records_and_tokens), cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests_name("openai", tests, NULL, NULL);
}
