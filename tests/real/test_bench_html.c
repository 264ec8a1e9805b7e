/*
 * slipway bench --html, opened in headless Chromium (Debian's chromium). A real bench run (the
 * slipway binary over HTTP on 127.0.0.1 against swhttpd streaming a known schedule) with a
 * concurrency sweep writes its page; Chromium screenshots it (a PNG comes out), logs no console
 * error or uncaught exception, and in the DOM it built shows the panels (decode by depth,
 * decode by concurrency, the roofline) as inline <svg>, each with its drawn series (polylines and points),
 * and the run's table; the same server benched as a fleet endpoint with a declared bandwidth
 * adds the roofline panel (its measured point labelled with its % of the ceiling, the ceiling
 * line). A page with a deliberate script error is run first, so the console
 * detector is shown to catch one. Nothing on the page refers to the network (no src/href to
 * http). Chromium is a prerequisite (swt_need): skipped without it, failed under CI.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swhttpd.h"
#include "swchrome.h"
#include "swtest.h"

#include <slipway/core.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *q = hay; (q = strstr(q, needle)); q++)
        n++;
    return n;
}

static void test_bench_html_in_chromium(void **state)
{
    (void)state;
    char bin[4200], html[4300], png[4300], prompts[4300];
    struct swt_run r;
    swt_need(swc_which("chromium", bin, sizeof(bin)),
             "chromium (apt-get install chromium; scripts/deps.sh) to render the bench page");
    char *dir = swt_tmpdir();

    /* the control: a page with a script error is caught */
    swc_control(bin, dir, 2000);

    struct swh *s = swh_start();
    swh_sse(s, "/v1/chat/completions", swh_llama_stream(3), 5);
    snprintf(prompts, sizeof(prompts), "%s/p.jsonl", dir);
    swt_write_str(prompts, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n");
    snprintf(html, sizeof(html), "%s/bench.html", dir);
    swt_slipway(&r, "bench", swh_url(s, ""), "--prompts", prompts, "--tg", "3", "--repeat", "2",
                "--concurrency", "1,2", "--html", html, "-q", NULL);
    if (r.status)
        fail_msg("bench: %s%s", r.out, r.err);
    assert_non_null(strstr(r.out, "page: "));
    swt_run_free(&r);
    /* the same server as a vLLM fleet endpoint whose device declares a bandwidth and whose arch
     * declares its weights: the page gets the roofline panel */
    int port = 0;
    assert_int_equal(sscanf(swh_url(s, ""), "http://127.0.0.1:%d", &port), 1);
    char fleet[4300], yaml[2048];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    snprintf(
        yaml, sizeof(yaml),
        SWT_FLEET_HERE_GPU(
            "100GB/s") "endpoints:\n"
                       "  roofed:\n"
                       "    host: here\n"
                       "    devices: [g0]\n"
                       "    engine: vllm\n"
                       "    listen: 127.0.0.1:%d\n"
                       "    payload: {path: /nonexistent/m}\n"
                       "    shape: {max_model_len: 4096, kv_cache_bytes: 1GiB, seqs: 2}\n"
                       "    arch: {model_type: llama, hidden_size: 1024, num_hidden_layers: 8,\n"
                       "           num_attention_heads: 8, num_key_value_heads: 2, head_dim: 128,\n"
                       "           vocab_size: 32000, torch_dtype: bfloat16,\n"
                       "           max_position_embeddings: 4096,\n"
                       "           weights: {embd: 65536000, output: 65536000, total: "
                       "400000000}}\n",
        port);
    swt_write_str(fleet, yaml);
    snprintf(html, sizeof(html), "%s/bench-roof.html", dir);
    swt_slipway(&r, "bench", "roofed", "--fleet", fleet, "--prompts", prompts, "--tg", "3",
                "--repeat", "2", "--concurrency", "1,2", "--no-engine-metrics", "--html", html,
                "-q", NULL);
    swh_stop(s);
    if (r.status)
        fail_msg("bench roofed: %s%s", r.out, r.err);
    assert_non_null(strstr(r.out, "roofline: "));
    swt_run_free(&r);
    /* self-contained: nothing fetched */
    assert_false(swt_file_has(html, "src=\"http"));
    assert_false(swt_file_has(html, "href=\"http"));
    assert_false(swt_file_has(html, "<script"));

    snprintf(png, sizeof(png), "%s/bench.png", dir);
    swc_render_png(bin, dir, html, png, 2000, "the bench page");

    swc_load(bin, dir, true, html, png, 2000, &r);
    assert_int_equal(r.status, 0);
    /* the three panels, each an <svg> Chromium parsed as SVG, each with drawn series */
    assert_int_equal(count(r.out, "<svg "), 3);
    assert_non_null(strstr(r.out, "decode tok/s by context depth"));
    assert_non_null(strstr(r.out, "decode tok/s by concurrency (first depth)"));
    assert_true(count(r.out, "<polyline") >= 2 + 1); /* summed + per stream; 2 conc series */
    assert_true(count(r.out, "<circle") >= 4);
    assert_non_null(strstr(r.out, "<pre id=\"table\">"));
    assert_non_null(strstr(r.out, "decode tok/s med[min..max]"));
    /* the roofline panel: the measured point with its % label, the ceiling line */
    assert_non_null(strstr(r.out, "decode roofline by context depth"));
    assert_non_null(strstr(r.out, "ceiling: bandwidth / bytes a token"));
    assert_int_equal(count(r.out, "class=\"label\""), 1);
    assert_non_null(strstr(r.out, "% of the ceiling"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bench_html_in_chromium),
    };
    return cmocka_run_group_tests_name("bench_html", tests, NULL, NULL);
}
