/*
 * bench: the histogram and spreads, the arrival generator's moments, the synthetic prompts, the
 * per-request measurement on chunk schedules built by hand, and whole runs against a controlled
 * HTTP server on 127.0.0.1 (swhttpd) that streams a known schedule of chunks:
 *  - multi-token chunks counted as tokens (the engine's per-chunk count), not as chunks;
 *  - reasoning tokens counted, TTFT at the first reasoning token and TTFC at the first content;
 *  - no per-chunk count: the final usage is the count, and per-token gaps are not invented;
 *  - a stalling server behind one connection: requests wait in the client, so the latency from
 *    the intended send is larger than from the actual send; the send lag is computed, and a bound
 *    no client can meet marks the run invalid;
 *  - the engine's count disagreeing with its usage is reported;
 *  - the bounds a server's claims must keep (sw_bench_check), one by one.
 * No timing thresholds: only orderings that the server's sleeps guarantee.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/bench.h>

#include "swhttpd.h"
#include "swtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_hist(void **state)
{
    (void)state;
    struct sw_bench_hist h, g;
    sw_bench_hist_init(&h);
    sw_bench_hist_init(&g);
    assert_int_equal(sw_bench_hist_quantile(&h, 0.5), 0);
    /* 1..1000 ms */
    for (uint64_t i = 1; i <= 1000; i++)
        sw_bench_hist_add(i <= 500 ? &h : &g, i * 1000000u);
    sw_bench_hist_merge(&h, &g);
    assert_int_equal(h.n, 1000);
    assert_int_equal(h.min_ns, 1000000u);
    assert_int_equal(h.max_ns, 1000000000u);
    /* within one bucket (1/32) of the exact quantile, never below it */
    uint64_t p50 = sw_bench_hist_quantile(&h, 0.5), p99 = sw_bench_hist_quantile(&h, 0.99);
    assert_true(p50 >= 500000000u && p50 <= 500000000u + 500000000u / 32 + 1);
    assert_true(p99 >= 990000000u && p99 <= 990000000u + 990000000u / 32 + 1);
    assert_int_equal(sw_bench_hist_quantile(&h, 1.0), 1000000000u);
    /* sub-microsecond and huge values land somewhere and keep min/max exact */
    sw_bench_hist_add(&h, 0);
    sw_bench_hist_add(&h, 500);
    sw_bench_hist_add(&h, UINT64_MAX / 2);
    assert_int_equal(h.min_ns, 0);
    assert_int_equal(h.max_ns, UINT64_MAX / 2);
    double cx[SW_BENCH_HIST_NBINS], cy[SW_BENCH_HIST_NBINS];
    size_t nc = sw_bench_hist_cdf(&h, cx, cy, SW_BENCH_HIST_NBINS);
    assert_true(nc > 2);
    assert_true(cy[nc - 1] == 1.0 && cx[nc - 1] == (double)(UINT64_MAX / 2) / 1e6);
    for (size_t i = 1; i < nc; i++)
        assert_true(cx[i] >= cx[i - 1] && cy[i] > cy[i - 1]);
    json_t *j = sw_bench_hist_json(&h);
    assert_int_equal(json_integer_value(json_object_get(j, "n")), 1003);
    json_decref(j);

    struct sw_bench_spread s;
    double v[] = {5, 1, NAN, 3, 2, 4};
    sw_bench_spread(v, 6, &s);
    assert_int_equal(s.n, 5);
    assert_true(s.median == 3 && s.min == 1 && s.max == 5 && s.q1 == 2 && s.q3 == 4);
    sw_bench_spread(v, 0, &s);
    assert_int_equal(s.n, 0);
    assert_true(isnan(s.median));
}

static void test_arrivals(void **state)
{
    (void)state;
    enum sw_bench_arrival k;
    double cv;
    struct sw_err e;
    assert_int_equal(sw_bench_arrival_parse("constant", &k, &cv, &e), 0);
    assert_int_equal(k, SW_BENCH_ARRIVAL_CONSTANT);
    assert_int_equal(sw_bench_arrival_parse("gamma:2.5", &k, &cv, &e), 0);
    assert_true(k == SW_BENCH_ARRIVAL_GAMMA && cv == 2.5);
    assert_int_equal(sw_bench_arrival_parse("gamma:0", &k, &cv, &e), SW_EINVAL);
    assert_int_equal(sw_bench_arrival_parse("gamma:x", &k, &cv, &e), SW_EINVAL);
    assert_int_equal(sw_bench_arrival_parse("bursty", &k, &cv, &e), SW_EINVAL);
    struct sw_bench_rng r1, r2;
    sw_bench_rng_seed(&r1, 42);
    sw_bench_rng_seed(&r2, 42);
    for (int i = 0; i < 100; i++)
        assert_true(sw_bench_rng_next(&r1) == sw_bench_rng_next(&r2));
    assert_true(sw_bench_arrival_gap(SW_BENCH_ARRIVAL_CONSTANT, 0, 4.0, &r1) == 0.25);
    /* sample moments of 200k gaps: mean 1/rate, CV 1 (Poisson) or cv (gamma); the bounds are
     * many standard errors wide, and the seed is fixed, so this is deterministic */
    struct {
        enum sw_bench_arrival k;
        double cv;
    } cases[] = {{SW_BENCH_ARRIVAL_POISSON, 1.0},
                 {SW_BENCH_ARRIVAL_GAMMA, 2.0},
                 {SW_BENCH_ARRIVAL_GAMMA, 0.5}};
    for (size_t c = 0; c < SW_ARRAY_LEN(cases); c++) {
        sw_bench_rng_seed(&r1, 7);
        double sum = 0, sq = 0;
        const int n = 200000;
        for (int i = 0; i < n; i++) {
            double g = sw_bench_arrival_gap(cases[c].k, cases[c].cv, 10.0, &r1);
            assert_true(g > 0);
            sum += g;
            sq += g * g;
        }
        double mean = sum / n, sd = sqrt(sq / n - mean * mean);
        assert_true(fabs(mean - 0.1) < 0.1 * 0.03);
        assert_true(fabs(sd / mean - cases[c].cv) < cases[c].cv * 0.05);
    }
}

static void test_prompt(void **state)
{
    (void)state;
    size_t l1 = 0, l2 = 0;
    char *a = sw_bench_prompt(11, 50, &l1), *b = sw_bench_prompt(12, 50, &l2), *c;
    assert_non_null(a);
    assert_non_null(b);
    assert_true(!strncmp(a, "[nonce 11] ", 11));
    /* the nonce is at the start: the prompts differ within their first bytes */
    assert_true(strncmp(a, b, 8) == 0 && a[8] != b[8]);
    c = sw_bench_prompt(11, 50, NULL);
    assert_string_equal(a, c);
    size_t words = 1;
    for (const char *p = a; *p; p++)
        words += *p == ' ';
    assert_int_equal(words, 2 + 50 + 3); /* "[nonce", "11]", 50 words, "Continue the list." */
    sw_free(a);
    sw_free(b);
    sw_free(c);
}

/* ---- measurement on hand-built schedules ---- */

static void feed(struct sw_openai_result *r, const char *chunk, uint64_t t_ms, int64_t *cum,
                 double *srv_ms)
{
    struct sw_openai_delta d;
    size_t before = r->nrecs;
    assert_int_equal(sw_openai_feed_chunk(r, chunk, strlen(chunk), t_ms * 1000000u, &d, NULL), 0);
    if (r->nrecs == before + 1) {
        cum[before] = d.timings ? r->timings.predicted_n : -1;
        srv_ms[before] = d.timings ? r->timings.predicted_ms : NAN;
    }
}

#define TIM(n, ms, tps)                                                                            \
    "\"timings\":{\"cache_n\":0,\"prompt_n\":10,\"prompt_ms\":5,\"prompt_per_second\":2000,"       \
    "\"predicted_n\":" #n ",\"predicted_ms\":" #ms ",\"predicted_per_second\":" #tps "}"

static void test_measure(void **state)
{
    (void)state;
    struct sw_openai_result r;
    int64_t cum[16];
    double sms[16];
    sw_openai_result_init(&r, 0, 0);
    /* intended 1000 ms, sent 1001; role at 1050; reasoning x1 at 1100 (server 0.001 ms),
     * reasoning x2 at 1120, content x3 in one chunk at 1150, content x1 at 1160; usage at 1170 */
    feed(&r, "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}", 1050, cum, sms);
    feed(&r,
         "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Hm\"}}]," TIM(1, 0.001,
                                                                                      0) "}",
         1100, cum, sms);
    feed(&r,
         "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"m ok\"}}]," TIM(3, 20,
                                                                                        100) "}",
         1120, cum, sms);
    feed(&r,
         "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"one two three\"}}]," TIM(6, 50,
                                                                                       100) "}",
         1150, cum, sms);
    feed(&r, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"}}]," TIM(7, 60, 100) "}",
         1160, cum, sms);
    feed(&r,
         "{\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":7,"
         "\"total_tokens\":17}," TIM(7, 60, 100) "}",
         1170, cum, sms);
    struct sw_bench_sample s;
    memset(&s, 0, sizeof(s));
    s.t_intended = 1000000000u;
    s.t_issued = 1000500000u;
    s.t_sent = 1001000000u;
    s.t_end = 1171000000u;
    struct sw_bench_hist it, ic;
    sw_bench_hist_init(&it);
    sw_bench_hist_init(&ic);
    sw_bench_measure(&s, &r, cum, sms, &it, &ic);
    assert_int_equal(s.count_src, SW_BENCH_COUNT_PER_CHUNK);
    assert_int_equal(s.completion_tokens, 7);
    assert_int_equal(s.reasoning_tokens, 3); /* reasoning tokens counted */
    assert_int_equal(s.token_chunks, 4);     /* 4 chunks brought 7 tokens */
    assert_int_equal(s.multi_chunks, 2);
    assert_int_equal(s.first_chunk_tokens, 1);
    assert_int_equal(s.t_first_token, 1100000000u); /* reasoning is a token */
    assert_int_equal(s.t_first_content, 1150000000u);
    assert_int_equal(s.t_last_token, 1160000000u); /* not the usage chunk */
    assert_true(fabs(s.ttft_s - 0.100) < 1e-9);
    assert_true(fabs(s.ttft_sent_s - 0.099) < 1e-9);
    assert_true(fabs(s.ttfc_s - 0.150) < 1e-9);
    assert_true(fabs(s.send_lag_s - 0.0005) < 1e-9);
    assert_true(fabs(s.queue_s - 0.0005) < 1e-9);
    assert_true(fabs(s.decode_span_s - 0.060) < 1e-9);
    assert_true(fabs(s.decode_tps - 6 / 0.060) < 1e-6); /* 6 tokens after the first, 60 ms */
    assert_true(fabs(s.tpot_s - 0.010) < 1e-9);
    assert_true(fabs(s.prefill_tps - 10 / 0.099) < 1e-6);
    /* per token: 6 values (3 gaps + 3 zeros: tokens that came with another); per chunk: 3 */
    assert_int_equal(it.n, 6);
    assert_int_equal(it.min_ns, 0);
    assert_int_equal(ic.n, 3);
    assert_int_equal(ic.min_ns, 10000000u);
    assert_int_equal(ic.max_ns, 30000000u);
    /* the engine: 100 tok/s = 6 steps over its 60 ms, the same span as ours: no difference */
    assert_true(s.srv && s.counts_agree);
    assert_true(fabs(s.span_diff_ms) < 1e-6);
    assert_true(fabs(s.decode_diff_pct) < 1e-6);
    /* arrival - server time: 1100-0.001, 1120-20, 1150-50, 1160-60 -> spread 0.001 */
    assert_true(fabs(s.delivery_spread_ms - 0.001) < 1e-6);

    /* the same stream without per-chunk counts: the total from usage, no per-token gaps */
    struct sw_bench_hist it2;
    sw_bench_hist_init(&it2);
    memset(&s, 0, sizeof(s));
    s.t_intended = s.t_issued = s.t_sent = 1000000000u;
    sw_bench_measure(&s, &r, NULL, NULL, &it2, NULL);
    assert_int_equal(s.count_src, SW_BENCH_COUNT_FINAL);
    assert_int_equal(s.completion_tokens, 7);
    assert_int_equal(s.token_chunks, 4);
    assert_int_equal(s.first_chunk_tokens, 1);
    assert_int_equal(it2.n, 0); /* 4 chunks for 7 tokens: which token came when is unknown */
    assert_int_equal(s.reasoning_tokens, -1); /* reasoning came, its count did not */
    sw_openai_result_free(&r);

    /* no count at all: chunks, flagged as such */
    sw_openai_result_init(&r, 0, 0);
    feed(&r, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}", 10, cum, sms);
    feed(&r, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}", 20, cum, sms);
    memset(&s, 0, sizeof(s));
    s.t_intended = s.t_sent = 1000000u;
    sw_bench_measure(&s, &r, cum, sms, NULL, NULL);
    assert_int_equal(s.count_src, SW_BENCH_COUNT_CHUNKS);
    assert_int_equal(s.completion_tokens, 2);
    assert_false(s.srv);
    sw_openai_result_free(&r);
}

/* ---- against a controlled server ---- */

struct fx {
    char *dir;
    char prompts[4200];
};

static void fx_init(struct fx *f)
{
    f->dir = swt_tmpdir();
    snprintf(f->prompts, sizeof(f->prompts), "%s", swt_join(f->dir, "p.jsonl"));
    swt_write_str(f->prompts, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n");
}

/* An SSE reply written piece by piece with sleeps between (the schedule). */
static void sse_script(struct swh *s, const char *const *events, unsigned ms)
{
    swh_sse(s, "/v1/chat/completions", events, ms);
}

static void opts_for(struct sw_bench_opts *o, struct swh *s, struct fx *f)
{
    sw_bench_opts_init(o);
    o->url = swh_url(s, "");
    o->prompts_file = f->prompts;
    o->tg = 8;
    o->repeat = 2;
    o->timeout_ms = 20000;
}

static int torture_json(void *arg)
{
    json_t *j = sw_bench_report_json(arg, true);
    if (!j)
        return SW_ENOMEM;
    json_decref(j);
    return 0;
}

static const char *g_csv;

static int torture_csv(void *arg)
{
    return sw_bench_report_csv(arg, g_csv, NULL);
}

static int torture_prompt(void *arg)
{
    (void)arg;
    char *p = sw_bench_prompt(7, 40, NULL);
    if (!p)
        return SW_ENOMEM;
    sw_free(p);
    return 0;
}

static void test_multi_token_chunks(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct swh *s = swh_start();
    const char *ev[] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]," TIM(1, 0.001,
                                                                                0) "}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b c d\"}}]," TIM(4, 30,
                                                                                    100) "}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"e f\"}}]," TIM(6, 50,
                                                                                  100) "}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":6,"
        "\"total_tokens\":16}," TIM(6, 50, 100) "}\n\ndata: [DONE]\n\n",
        NULL};
    sse_script(s, ev, 20);
    struct sw_bench_opts o;
    opts_for(&o, s, &f);
    /* a TPOT no stream with 20 ms between chunks can meet: no request is good */
    o.slo_ttft_s = 3600;
    o.slo_tpot_s = 1e-9;
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    assert_int_equal(rep.npoints, 1);
    assert_int_equal(rep.points[0].good, 0);
    assert_true(rep.points[0].goodput_rps == 0);
    assert_non_null(strstr(rep.slo, "tpot<="));
    struct sw_bench_point *pt = &rep.points[0];
    assert_int_equal(pt->nsamples, 2);
    assert_int_equal(pt->failed, 0);
    assert_true(pt->counts_agree);
    for (size_t i = 0; i < pt->nsamples; i++) {
        struct sw_bench_sample *x = &pt->samples[i];
        assert_int_equal(x->completion_tokens, 6);
        assert_int_equal(x->token_chunks, 3); /* three chunks, six tokens */
        assert_int_equal(x->multi_chunks, 2);
        assert_int_equal(x->count_src, SW_BENCH_COUNT_PER_CHUNK);
        assert_int_equal(x->prompt_tokens, 10);
        assert_int_equal(x->cached_tokens, 0);
    }
    assert_int_equal(pt->itl_tok.n, 2 * 5); /* five tokens after the first, per request */
    assert_int_equal(pt->itl_chunk.n, 2 * 2);
    assert_true(rep.cache_verified);
    /* the request asked what a llama.cpp bench must ask */
    struct swh_request rq;
    assert_true(swh_last_request(s, "/v1/chat/completions", &rq));
    swt_has_all("rq.body", rq.body, "\"timings_per_token\":true", "\"cache_prompt\":false",
                "\"include_usage\":true", NULL);
    swh_request_free(&rq);
    char csv[4200];
    snprintf(csv, sizeof(csv), "%s", swt_join(f.dir, "r.csv"));
    assert_int_equal(sw_bench_report_csv(&rep, csv, &e), 0);
    assert_true(swt_file_has(csv, "depth,concurrency,index,ok,"));
    assert_true(swt_file_has(csv, ",6,0,0,per_chunk,"));
    /* every allocation failure of the report's JSON, CSV and a prompt is a clean SW_ENOMEM */
    g_csv = csv;
    swt_torture("sw_bench_report_json", torture_json, &rep, SW_ENOMEM);
    swt_torture("sw_bench_report_csv", torture_csv, &rep, SW_ENOMEM);
    swt_torture("sw_bench_prompt", torture_prompt, NULL, SW_ENOMEM);
    json_t *j = sw_bench_report_json(&rep, true);
    json_t *p0 = json_array_get(json_object_get(j, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(p0, "completion_tokens")), 12);
    json_decref(j);
    sw_bench_report_free(&rep);
    swh_stop(s);
    swt_tmpdir_free(f.dir);
}

static void test_reasoning_and_final_counts(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct swh *s = swh_start();
    /* an engine without per-chunk counts (vLLM-like), reasoning first, usage at the end */
    const char *ev[] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"Let\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\" me\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Yes\"}}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,"
        "\"total_tokens\":8,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n"
        "data: [DONE]\n\n",
        NULL};
    sse_script(s, ev, 20);
    struct sw_bench_opts o;
    opts_for(&o, s, &f);
    o.engine = "vllm";
    o.repeat = 1;
    o.slo_ttft_s = 3600; /* met by any request that succeeds within the test's bounds */
    struct sw_bench_report rep;
    assert_int_equal(sw_bench_run(&o, &rep, NULL), 0);
    struct sw_bench_sample *x = &rep.points[0].samples[0];
    assert_int_equal(x->rc, 0);
    assert_true(x->good);
    assert_int_equal(rep.points[0].good, 1);
    assert_int_equal(x->count_src, SW_BENCH_COUNT_FINAL);
    assert_int_equal(x->completion_tokens, 3);
    assert_int_equal(x->reasoning_tokens, 2);
    /* the first token is the reasoning one; the first content came after the server's sleeps */
    assert_true(x->t_first_token > 0 && x->t_first_content > x->t_first_token);
    assert_true(x->ttfc_s > x->ttft_s);
    /* three chunks, three tokens: one each, so per-token gaps are known */
    assert_int_equal(rep.points[0].itl_tok.n, 2);
    /* vLLM is asked for usage in every chunk; llama.cpp's fields are not sent */
    struct swh_request rq;
    assert_true(swh_last_request(s, "/v1/chat/completions", &rq));
    assert_non_null(strstr(rq.body, "\"continuous_usage_stats\":true"));
    assert_null(strstr(rq.body, "timings_per_token"));
    swh_request_free(&rq);
    /* no cache counter came: the check says so rather than passing */
    assert_false(rep.cache_verified);
    assert_non_null(strstr(rep.cache_why, "unverified"));
    sw_bench_report_free(&rep);
    swh_stop(s);
    swt_tmpdir_free(f.dir);
}

static void test_counts_disagree(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct swh *s = swh_start();
    /* per-chunk counts add up to 2, usage says 3 */
    const char *ev[] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]," TIM(1, 0.001,
                                                                                0) "}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]," TIM(2, 10, 100) "}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,"
        "\"total_tokens\":8}," TIM(2, 10, 100) "}\n\ndata: [DONE]\n\n",
        NULL};
    sse_script(s, ev, 5);
    struct sw_bench_opts o;
    opts_for(&o, s, &f);
    o.repeat = 1;
    struct sw_bench_report rep;
    assert_int_equal(sw_bench_run(&o, &rep, NULL), 0);
    assert_false(rep.points[0].counts_agree);
    assert_false(rep.points[0].samples[0].counts_agree);
    sw_bench_report_free(&rep);
    swh_stop(s);
    swt_tmpdir_free(f.dir);
}

static void test_open_loop_stall(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct swh *s = swh_start();
    /* every reply's token chunk is held 150 ms; the client has one connection and asks
     * for one request every 30 ms: from the second request on, each waits in the client for the
     * one before it, so its latency from the intended send exceeds the one from the actual send
     * by that wait, whatever the machine's speed */
    const char *ev[] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]," TIM(1, 0.001,
                                                                                0) "}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,"
        "\"total_tokens\":6}," TIM(1, 0.001, 0) "}\n\ndata: [DONE]\n\n",
        NULL};
    sse_script(s, ev, 150);
    struct sw_bench_opts o;
    opts_for(&o, s, &f);
    o.mode = SW_BENCH_OPEN;
    o.rate = 1000.0 / 30;
    o.arrival = SW_BENCH_ARRIVAL_CONSTANT;
    o.duration_s = 0.12; /* intended sends at 0, 30, 60, 90 ms */
    o.connections = 1;
    o.max_lag_ms = 1e-6; /* no client meets this: the run must be marked invalid */
    struct sw_bench_report rep;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_bench_run(&o, &rep, &e), 0);
    struct sw_bench_point *pt = &rep.points[0];
    assert_int_equal(pt->nsamples, 4);
    assert_int_equal(pt->failed, 0);
    for (size_t i = 0; i < pt->nsamples; i++) {
        struct sw_bench_sample *x = &pt->samples[i];
        assert_true(x->t_issued >= x->t_intended);
        assert_true(isfinite(x->send_lag_s) && x->send_lag_s >= 0);
        assert_true(x->ttft_s >= x->ttft_sent_s);
        if (i > 0) {
            /* sent only once the previous reply's token came (>= 150 ms after it was sent),
             * although meant 30 ms after it */
            assert_true(x->t_sent >= pt->samples[i - 1].t_first_token);
            assert_true(x->queue_s > 0);
            assert_true(x->e2e_s > x->e2e_sent_s);
        }
    }
    assert_true(sw_bench_hist_quantile(&pt->e2e, 1.0) > sw_bench_hist_quantile(&pt->e2e_sent, 1.0));
    assert_true(rep.invalid);
    assert_non_null(strstr(rep.invalid_why, "INVALID"));
    assert_true(rep.rate_achieved < rep.rate_asked);
    char svg[4200];
    snprintf(svg, sizeof(svg), "%s", swt_join(f.dir, "open.svg"));
    int svg_rc = sw_bench_report_svg(&rep, svg, &e);
    if (svg_rc)
        print_message("svg: %s\n", e.msg);
    assert_int_equal(svg_rc, 0);
    assert_true(swt_file_has(svg, "latency CDF (open loop)"));
    assert_true(swt_file_has(svg, "E2E from the intended send"));
    json_t *j = sw_bench_report_json(&rep, false);
    assert_false(json_is_true(json_object_get(json_object_get(j, "open_loop"), "valid")));
    json_decref(j);
    sw_bench_report_free(&rep);
    swh_stop(s);
    swt_tmpdir_free(f.dir);
}

/* --threads 2 in open loop: the one schedule a single loop keeps (same seed, same intended
 * instants relative to the start), its arrivals dealt over two loops; the samples gathered in
 * intended order, each with its own send lag, every request once. 20 constant arrivals 5 ms
 * apart; the server answers each in a few ms. */
static void test_open_loop_threads(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct swh *s = swh_start();
    const char *ev[] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]," TIM(1, 0.001,
                                                                                0) "}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]," TIM(2, 0.001,
                                                                                0) "}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
        "\"total_tokens\":7}," TIM(2, 0.001, 0) "}\n\ndata: [DONE]\n\n",
        NULL};
    /* 2 ms before each of the three chunks: the 5 ms of prompt the timings claim fit in the
     * reply's time (a server's time past the client's is refused: sw_bench_check) */
    sse_script(s, ev, 2);
    uint64_t rel[2][20];
    for (int run = 0; run < 2; run++) {
        struct sw_bench_opts o;
        opts_for(&o, s, &f);
        o.mode = SW_BENCH_OPEN;
        o.rate = 200;
        o.arrival = SW_BENCH_ARRIVAL_CONSTANT;
        o.duration_s = 0.1;
        o.max_lag_ms = 1000;
        o.threads = run ? 2 : 1;
        struct sw_bench_report rep;
        struct sw_err e;
        sw_err_clear(&e);
        if (sw_bench_run(&o, &rep, &e))
            fail_msg("run: %s", e.msg);
        struct sw_bench_point *pt = &rep.points[0];
        assert_int_equal(pt->threads, run ? 2 : 1);
        assert_int_equal(pt->nsamples, 20);
        assert_int_equal(pt->failed, 0);
        assert_int_equal(pt->lag.n, 20);
        assert_int_equal(pt->itl_tok.n, 20);
        for (size_t i = 0; i < 20; i++) {
            const struct sw_bench_sample *x = &pt->samples[i];
            assert_int_equal(x->index, i);
            assert_true(x->t_issued >= x->t_intended);
            assert_true(isfinite(x->send_lag_s) && x->send_lag_s >= 0);
            assert_int_equal(x->completion_tokens, 2);
            rel[run][i] = x->t_intended - pt->samples[0].t_intended;
            if (i)
                assert_true(x->t_intended > pt->samples[i - 1].t_intended);
        }
        json_t *j = sw_bench_report_json(&rep, false);
        json_t *cl = json_object_get(json_array_get(json_object_get(j, "points"), 0), "client");
        assert_int_equal(json_integer_value(json_object_get(cl, "threads")), run ? 2 : 1);
        json_decref(j);
        sw_bench_report_free(&rep);
    }
    /* the same intended instants, to the nanosecond, on one loop or two */
    for (size_t i = 0; i < 20; i++)
        assert_true(rel[0][i] == rel[1][i]);
    assert_true(rel[0][19] > 94000000ull && rel[0][19] < 96000000ull);
    swh_stop(s);
    swt_tmpdir_free(f.dir);
}

/* sw_bench_check's bounds one by one, on claims set by hand; the whole path through the binary
 * is tests/real/test_hostile_bench.c. */
static void test_bounds(void **state)
{
    (void)state;
    struct sw_openai_result r;
    struct sw_err e;
    int64_t cum[3] = {1, 2, 3};
    struct sw_bench_seen a = {.max_tokens = 8,
                              .body_bytes = 200,
                              .text_only = true,
                              .elapsed_ms = 50,
                              .cum = cum,
                              .ncum = 3};
    sw_openai_result_init(&r, 0, 0);
    r.usage.present = r.timings.present = true;
    r.usage.prompt_tokens = 16;
    r.usage.completion_tokens = 3;
    r.usage.total_tokens = 19;
    r.timings.prompt_n = 16;
    r.timings.cache_n = 0;
    r.timings.predicted_n = 3;
    r.timings.prompt_ms = 5;
    r.timings.predicted_ms = 40;
    r.timings.prompt_per_second = 3200;
    r.timings.predicted_per_second = 50;
    assert_int_equal(sw_bench_check(&r, &a, &e), 0);
    struct sw_openai_result x;
#define REFUSED(what, field, value)                                                                \
    do {                                                                                           \
        x = r;                                                                                     \
        x.field = value;                                                                           \
        sw_err_clear(&e);                                                                          \
        assert_int_equal(sw_bench_check(&x, &a, &e), SW_ERANGE);                                   \
        if (!strstr(e.msg, what))                                                                  \
            fail_msg("%s: '%s'", #field, e.msg);                                                   \
    } while (0)
    REFUSED("usage.completion_tokens 9 > the 8 tokens asked", usage.completion_tokens, 9);
    REFUSED("timings.predicted_n 1000000000000000 >", timings.predicted_n, 1000000000000000);
    REFUSED("usage.prompt_tokens is -7", usage.prompt_tokens, -7);
    REFUSED("timings.prompt_ms is -0.5", timings.prompt_ms, -0.5);
    REFUSED("timings.predicted_per_second is inf", timings.predicted_per_second, INFINITY);
    REFUSED("4297 prompt tokens from a body of 200 bytes", usage.prompt_tokens, 4297);
    REFUSED("17 cached prompt tokens of 16", usage.cached_tokens, 17);
    REFUSED("4 reasoning tokens of 3", usage.reasoning_tokens, 4);
    REFUSED("timings.predicted_per_second 2e+06", timings.predicted_per_second, 2e6);
    REFUSED("timings.prompt_per_second 1e+09", timings.prompt_per_second, 1e9);
    REFUSED("= 52.000 ms, the request took 50.000 ms", timings.predicted_ms, 47);
    x = r;
    x.timings.draft_n = 4;
    x.timings.draft_n_accepted = 5;
    assert_int_equal(sw_bench_check(&x, &a, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "5 accepted of 4 drafted tokens"));
    /* within the bounds: -1 is "not sent"; the prompt's own bytes plus the template's; the
     * clock's slack; a rate over one token means nothing */
    x = r;
    x.usage.cached_tokens = x.usage.reasoning_tokens = -1;
    x.usage.prompt_tokens = 4296;
    x.timings.predicted_ms = 45.5;
    assert_int_equal(sw_bench_check(&x, &a, &e), 0);
    x = r;
    x.timings.predicted_n = 1;
    x.timings.predicted_per_second = 1e300;
    x.usage.completion_tokens = 1;
    assert_int_equal(sw_bench_check(&x, &a, &e), 0);
    /* a chunk's running count past the ceiling */
    int64_t wild[3] = {1, 1000000, 3};
    struct sw_bench_seen b = a;
    b.cum = wild;
    assert_int_equal(sw_bench_check(&r, &b, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "a chunk's running count 1000000 > the 8 tokens asked"));
    /* an image part: its prompt tokens are not bounded by the body's bytes */
    b = a;
    b.text_only = false;
    x = r;
    x.usage.prompt_tokens = 100000;
    assert_int_equal(sw_bench_check(&x, &b, &e), 0);
    /* no ceiling asked: the decode ceiling over the client's time (50 ms: 50,001 tokens) */
    b = a;
    b.max_tokens = -1;
    b.cum = NULL;
    x = r;
    x.usage.completion_tokens = x.timings.predicted_n = 50001;
    assert_int_equal(sw_bench_check(&x, &b, &e), 0);
    x.usage.completion_tokens = 50002;
    assert_int_equal(sw_bench_check(&x, &b, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "usage.completion_tokens 50002 in 50.000 ms (past 1e+06"));
#undef REFUSED
    sw_openai_result_free(&r);
}

static void test_failures_and_usage(void **state)
{
    (void)state;
    struct sw_bench_opts o;
    struct sw_bench_report rep;
    struct sw_err e;
    sw_bench_opts_init(&o);
    o.url = "http://127.0.0.1:1";
    o.tg = 0;
    assert_int_equal(sw_bench_run(&o, &rep, &e), SW_EINVAL);
    o.tg = 4;
    o.conc[0] = 0;
    o.nconc = 1;
    assert_int_equal(sw_bench_run(&o, &rep, &e), SW_EINVAL);
    /* nothing listens: an error naming the connection, no report */
    o.nconc = 0;
    int port = swt_free_port();
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    o.url = url;
    sw_err_clear(&e);
    assert_true(sw_bench_run(&o, &rep, &e) != 0);
    assert_true(strlen(e.msg) > 0);
    sw_bench_report_free(&rep);
    /* a server that answers 500 to everything */
    struct fx f;
    fx_init(&f);
    struct swh *s = swh_start();
    swh_reply(s, "POST", "/v1/chat/completions", 500, NULL,
              "{\"error\":{\"code\":500,\"message\":\"boom\",\"type\":\"server_error\"}}");
    opts_for(&o, s, &f);
    sw_err_clear(&e);
    assert_true(sw_bench_run(&o, &rep, &e) != 0);
    assert_non_null(strstr(e.msg, "boom"));
    sw_bench_report_free(&rep);
    swh_stop(s);
    swt_tmpdir_free(f.dir);

    /* the CLI: usage errors exit 2 */
    struct swt_run r;
    swt_slipway_exits(2, "bench", "http://127.0.0.1:1", "--depth", "1k,x", NULL);
    swt_slipway_exits(2, "bench", "http://127.0.0.1:1", "--rate", "2", "--concurrency", "2", NULL);
    swt_slipway(&r, "bench", "http://127.0.0.1:1", "--arrival", "gamma:-1", "--json", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.out, "\"error\""));
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hist),
        cmocka_unit_test(test_arrivals),
        cmocka_unit_test(test_prompt),
        cmocka_unit_test(test_measure),
        cmocka_unit_test(test_multi_token_chunks),
        cmocka_unit_test(test_reasoning_and_final_counts),
        cmocka_unit_test(test_counts_disagree),
        cmocka_unit_test(test_open_loop_stall),
        cmocka_unit_test(test_open_loop_threads),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_failures_and_usage),
    };
    return cmocka_run_group_tests_name("bench", tests, NULL, NULL);
}
