/*
 * The draft model's context (-md) against the real pinned llama-server: the plan prices the draft
 * as a second model and a second context (common_base_params_to_speculative), and llama-server
 * prints that context's own lines after the target's. The draft here is the chat model itself,
 * with -ctkd/-ctvd q8_0 and two slots, so the draft's KV line differs from the target's (its
 * cache types) while its cells and slots are the target's:
 *   target: llama_kv_cache ... (4096 cells, L layers, 2/2 seqs), K (f16) ..., V (f16) ...
 *   draft:  llama_kv_cache ... (4096 cells, L layers, 2/2 seqs), K (q8_0) ..., V (q8_0) ...
 * The second KV line, the second model buffer and the second output buffer llama-server prints
 * must equal the plan's draft report to the printed digit. The compute buffer is an estimate and
 * is not compared. Skips (fails under CI) when the pinned llama.cpp is not built.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/memory.h>
#include <slipway/plan.h>

#include "swllama.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The n-th (0-based) line of the log that contains needle, copied into out; false if none. */
static bool nth_line(const char *path, const char *needle, int nth, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    bool found = false;
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, needle) && nth-- == 0) {
            snprintf(out, n, "%s", line);
            found = true;
            break;
        }
    fclose(f);
    return found;
}

static void test_draft_context(void **state)
{
    char *dir;
    char model[4096], why[512] = "", line[4096];
    struct swl_server s;
    struct sw_plan p;
    struct sw_err e;
    struct sw_buf want;
    (void)state;
    sw_core_init();
    swt_need(swl_llama_dir() != NULL, "%s", swl_missing());
    if (!swl_llama_dir())
        return;
    dir = swt_tmpdir();
    assert_non_null(dir);
    if (swl_chat_model(dir, model, sizeof(model), why, sizeof(why)))
        fail_msg("chat model: %s", why);

    const char *argv[] = {"llama-server", "-m", model,   "-md",  model,   "-c",  "4096",
                          "-np",          "2",  "-ctkd", "q8_0", "-ctvd", "q8_0"};
    struct sw_plan_overrides ov = {.argv = argv, .argc = SW_ARRAY_LEN(argv)};
    sw_err_clear(&e);
    if (sw_plan_endpoint(NULL, NULL, &ov, &p, &e))
        fail_msg("plan: %s", e.msg);
    const struct sw_llamacpp_plan *lp = p.llamacpp;
    assert_true(lp->has_draft);
    assert_int_equal(lp->draft.n_ctx, 4096);
    assert_int_equal(lp->draft.n_seq_max, 2);
    assert_int_equal(lp->draft.kv[0].k_type, SW_KV_Q8_0);

    const char *extra[] = {"-md",  model,   "-c",   "4096", "-np", "2", "-ctkd",
                           "q8_0", "-ctvd", "q8_0", "-lv",  "4",   NULL};
    char logp[4096];
    snprintf(logp, sizeof(logp), "%s", swt_join(dir, "server.log"));
    if (swl_start(model, extra, logp, 120, &s))
        fail_msg("llama-server did not start (log %s)", s.log);
    swl_stop(&s);

    sw_buf_init(&want, 1 << 16);
    /* the second KV line is the draft context's */
    assert_int_equal(sw_llamacpp_kv_line(&want, "", &lp->draft.kv[0]), 0);
    if (!nth_line(s.log, "llama_kv_cache: size =", 1, line, sizeof(line)))
        fail_msg("no second llama_kv_cache line in %s", s.log);
    char *nl = strchr(sw_buf_cstr(&want), '\n');
    if (nl)
        *nl = '\0';
    if (!strstr(line, sw_buf_cstr(&want)))
        fail_msg("draft KV line:\n  printed: %s  planned: %s", line, sw_buf_cstr(&want));
    /* its model buffer (the draft's weights) and output buffer, as llama.cpp prints MiB */
    char mib[32], pat[96];
    snprintf(pat, sizeof(pat), "model buffer size = %8s MiB",
             sw_llamacpp_mib_d(lp->draft.model_bytes, mib, sizeof(mib)));
    assert_true(nth_line(s.log, "model buffer size", 1, line, sizeof(line)));
    if (!strstr(line, pat))
        fail_msg("draft model buffer:\n  printed: %s  planned: %s", line, pat);
    snprintf(pat, sizeof(pat), "output buffer size = %8s MiB",
             sw_llamacpp_mib_d(lp->draft.output_bytes, mib, sizeof(mib)));
    assert_true(nth_line(s.log, "output buffer size", 1, line, sizeof(line)));
    if (!strstr(line, pat))
        fail_msg("draft output buffer:\n  printed: %s  planned: %s", line, pat);
    /* and the budget names them: the draft's KV and weights are in the CPU's total */
    const struct sw_llamacpp_device *c = &lp->dev[0];
    assert_true(c->draft_kv == lp->draft.kv[0].k_bytes + lp->draft.kv[0].v_bytes);
    assert_true(c->draft_weights == lp->draft.model_bytes);
    assert_true(c->total == c->weights + c->kv + c->recurrent + c->compute + c->output +
                                c->draft_weights + c->draft_kv + c->draft_compute);

    /* the same through the CLI: bootlog parse reads the draft's context after "loading draft
     * model" into its own report, and bootlog diff holds every field of it against the plan's
     * draft report (draft.*), exactly where the print is exact */
    struct swt_run r;
    char pred[4200], printed[4200];
    snprintf(pred, sizeof(pred), "%s", swt_join(dir, "pred.json"));
    snprintf(printed, sizeof(printed), "%s", swt_join(dir, "printed.json"));
    swt_slipway(&r, "plan", "--json", "--engine", "llama.cpp", "--", "llama-server", "-m", model,
                "-md", model, "-c", "4096", "-np", "2", "-ctkd", "q8_0", "-ctvd", "q8_0", NULL);
    assert_int_equal(r.status, 0);
    swt_write_str(pred, r.out);
    swt_run_free(&r);
    swt_slipway(&r, "bootlog", "parse", s.log, "--model", model, "--json", NULL);
    assert_int_equal(r.status, 0);
    swt_write_str(printed, r.out);
    swt_run_free(&r);
    swt_slipway(&r, "bootlog", "diff", pred, printed, "--json", NULL);
    json_t *d = swt_json_out(&r);
    if (r.status)
        print_message("%s\n", r.out);
    assert_int_equal(r.status, 0);
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 0);
    int draft_fields = 0;
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(d, "fields"), i, f)
    {
        const char *name = json_string_value(json_object_get(f, "field"));
        const char *v = json_string_value(json_object_get(f, "verdict"));
        if (strncmp(name, "draft.", 6))
            continue;
        draft_fields++;
        if (strcmp(v, "match") && strcmp(v, "estimate"))
            fail_msg("%s: %s", name, v);
        if (!strcmp(name, "draft.kv_caches[0].k_type"))
            assert_string_equal(json_string_value(json_object_get(f, "printed")), "q8_0");
    }
    assert_true(draft_fields >= 15);
    json_decref(d);
    swt_run_free(&r);

    sw_buf_free(&want);
    sw_plan_free(&p);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draft_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
