/*
 * bench counters: the engine's /metrics deltas over a run, from two pages (before, after) as
 * vLLM, SGLang and llama-server print them, set beside the client's sums. The vLLM pages carry
 * speculative decoding's per-position counters with the operator's figures (MTP acceptance 71%
 * at draft position 0, 44% at position 1: 1,000 drafts of 2 tokens, 710 and 440 accepted during
 * the run, on top of counts that were there before), two label sets (engines) summed, and the
 * prefix cache's lookups and hits. Absent counters are NaN, never 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "bench/bench_internal.h"

#include <math.h>
#include <string.h>

static void parse(const char *text, struct sw_openai_metrics *m)
{
    struct sw_err e;
    if (sw_openai_metrics_parse(text, strlen(text), m, &e))
        fail_msg("metrics: %s", e.msg);
}

/* A report whose one point says the client saw prompt / completion tokens. */
static void one_point(struct sw_bench_report *rep, struct sw_bench_point *pt, int64_t prompt,
                      int64_t completion)
{
    memset(rep, 0, sizeof(*rep));
    memset(pt, 0, sizeof(*pt));
    pt->tokens_in = prompt;
    pt->tokens_out = completion;
    rep->points = pt;
    rep->npoints = 1;
}

#define VLLM_PAGE(prompt, gen, q, h, drafts, dtok, acc, p0, p1)                                    \
    "# TYPE vllm:prompt_tokens_total counter\n"                                                    \
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} " #prompt "\n"                        \
    "vllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} 100\n"                                \
    "# TYPE vllm:generation_tokens_total counter\n"                                                \
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} " #gen "\n"                       \
    "# TYPE vllm:prefix_cache_queries_total counter\n"                                             \
    "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} " #q "\n"                      \
    "# TYPE vllm:prefix_cache_hits_total counter\n"                                                \
    "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} " #h "\n"                         \
    "# TYPE vllm:spec_decode_num_drafts_total counter\n"                                           \
    "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} " #drafts "\n"               \
    "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"                                     \
    "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} " #dtok "\n"           \
    "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"                                  \
    "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} " #acc "\n"         \
    "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"                          \
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","            \
    "position=\"0\"} " #p0 "\n"                                                                    \
    "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\","            \
    "position=\"1\"} " #p1 "\n"

static void test_vllm_deltas_and_spec_decode(void **state)
{
    (void)state;
    struct sw_openai_metrics before, after;
    parse(VLLM_PAGE(5000, 300, 5000, 1200, 50, 100, 60, 40, 20), &before);
    parse(VLLM_PAGE(9096, 2348, 9096, 1200, 1050, 2100, 1210, 750, 460), &after);
    struct sw_bench_report rep;
    struct sw_bench_point pt;
    one_point(&rep, &pt, 4096, 2048);
    sw__bench_counters(&before, &after, &rep);
    const struct sw_bench_counters *c = &rep.counters;
    assert_true(c->present);
    assert_string_equal(c->engine, "vllm");
    /* the second engine's 100 is on both pages: no change */
    assert_true(c->prompt_tokens == 4096);
    assert_true(c->generation_tokens == 2048);
    assert_true(c->counts_agree);
    assert_true(c->prefix_queries == 4096);
    assert_true(c->prefix_hits == 0);
    assert_true(c->spec_drafts == 1000);
    assert_true(c->spec_draft_tokens == 2000);
    assert_true(c->spec_accepted == 1150);
    assert_int_equal(c->spec_npos, 2);
    assert_true(fabs(c->spec_accept_pos[0] - 0.71) < 1e-12);
    assert_true(fabs(c->spec_accept_pos[1] - 0.44) < 1e-12);
    /* the JSON carries them */
    json_t *j = sw_bench_report_json(&rep, false);
    json_t *ec = json_object_get(j, "engine_counters");
    assert_true(json_is_true(json_object_get(ec, "counts_agree")));
    json_t *pos = json_object_get(json_object_get(ec, "spec_decode"), "acceptance_per_pos");
    assert_int_equal(json_array_size(pos), 2);
    assert_true(fabs(json_real_value(json_array_get(pos, 1)) - 0.44) < 1e-12);
    json_decref(j);

    /* one token more on the client's side: they differ */
    one_point(&rep, &pt, 4096, 2049);
    sw__bench_counters(&before, &after, &rep);
    assert_false(rep.counters.counts_agree);
    sw_openai_metrics_free(&before);
    sw_openai_metrics_free(&after);
}

static void test_sglang_and_llamacpp(void **state)
{
    (void)state;
    struct sw_openai_metrics before, after;
    parse("# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{model_name=\"m\"}"
          " 10\n# TYPE sglang:generation_tokens_total counter\n"
          "sglang:generation_tokens_total{model_name=\"m\"} 5\n"
          "# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{model_name=\"m\"}"
          " 0\n",
          &before);
    parse("# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{model_name=\"m\"}"
          " 1010\n# TYPE sglang:generation_tokens_total counter\n"
          "sglang:generation_tokens_total{model_name=\"m\"} 205\n"
          "# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{model_name=\"m\"}"
          " 64\n",
          &after);
    struct sw_bench_report rep;
    struct sw_bench_point pt;
    one_point(&rep, &pt, 1000, 200);
    sw__bench_counters(&before, &after, &rep);
    assert_string_equal(rep.counters.engine, "sglang");
    assert_true(rep.counters.counts_agree);
    assert_true(rep.counters.prefix_hits == 64);
    assert_true(rep.counters.prefix_queries == 1000);
    assert_true(isnan(rep.counters.spec_drafts));
    assert_true(isnan(rep.counters.spec_accept_length)); /* no spec gauges: none claimed */
    sw_openai_metrics_free(&before);
    sw_openai_metrics_free(&after);

    /* speculative decoding: SGLang's two gauges, one per tp rank, averaged (MTP 3 steps: 2.9
     * tokens kept a step on one rank, 2.7 on the other; 0.63 and 0.57 of the drafts) */
    parse("# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total 0\n", &before);
    parse("# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total 1000\n"
          "# TYPE sglang:spec_accept_length gauge\n"
          "sglang:spec_accept_length{model_name=\"m\",tp_rank=\"0\"} 2.9\n"
          "sglang:spec_accept_length{model_name=\"m\",tp_rank=\"1\"} 2.7\n"
          "# TYPE sglang:spec_accept_rate gauge\n"
          "sglang:spec_accept_rate{model_name=\"m\",tp_rank=\"0\"} 0.63\n"
          "sglang:spec_accept_rate{model_name=\"m\",tp_rank=\"1\"} 0.57\n",
          &after);
    one_point(&rep, &pt, 1000, 0);
    sw__bench_counters(&before, &after, &rep);
    assert_true(fabs(rep.counters.spec_accept_length - 2.8) < 1e-12);
    assert_true(fabs(rep.counters.spec_accept_rate - 0.60) < 1e-12);
    json_t *j = sw_bench_report_json(&rep, false);
    json_t *sd = json_object_get(json_object_get(j, "engine_counters"), "spec_decode");
    assert_true(fabs(json_real_value(json_object_get(sd, "accept_length")) - 2.8) < 1e-12);
    assert_true(json_is_null(json_object_get(sd, "acceptance_per_pos")));
    json_decref(j);
    char *txt = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&txt, &tlen);
    sw_bench_report_print(mf, &rep);
    fclose(mf);
    assert_non_null(strstr(txt, "2.80 tokens kept a verify step, acceptance 60.0%"));
    free(txt);
    sw_openai_metrics_free(&before);
    sw_openai_metrics_free(&after);

    parse("# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 7\n"
          "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 3\n",
          &before);
    parse("# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 107\n"
          "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 53\n",
          &after);
    one_point(&rep, &pt, 100, 50);
    pt.failed = 1;
    sw__bench_counters(&before, &after, &rep);
    assert_string_equal(rep.counters.engine, "llamacpp");
    assert_true(rep.counters.prompt_tokens == 100 && rep.counters.generation_tokens == 50);
    assert_false(rep.counters.counts_agree); /* a request failed: not claimed */
    assert_true(isnan(rep.counters.prefix_hits));
    sw_openai_metrics_free(&before);
    sw_openai_metrics_free(&after);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_deltas_and_spec_decode),
        cmocka_unit_test(test_sglang_and_llamacpp),
    };
    return cmocka_run_group_tests_name("bench_counters", tests, NULL, NULL);
}
