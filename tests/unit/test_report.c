/*
 * report: the operator's fleet (examples/operator.yaml) with the seed ledger imported
 * (tests/data/ledger/seed-boots.json) must give back the operator's own facts from data:
 * frank-small's pool 540,672, 180,224 per conversation, 21,684 used / 2,441 free of 24,576 MiB,
 * 106.8 tok/s decode, 3,814 t/s prefill; frank-primary's deployed shape (3 x 200,704, fp8,
 * 398,658 tokens, the 14.87 GiB arena). The harness export gives 180,224 for frank-small and
 * flags the 216,269-token compaction request. The llama-swap export is parsed back with libfyaml
 * and held to llama-swap's documented keys; the Prometheus text is read by a small exposition
 * parser (names, HELP/TYPE before samples, families together, label escapes, values).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/report.h>

#include <ctype.h>
#include <libfyaml.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fx {
    char *dir;
    struct sw_fleet *f;
    struct sw_ledger l;
};

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    struct sw_err e;
    sw_err_clear(&e);
    x->dir = swt_tmpdir();
    x->f = swt_fleet("examples/operator.yaml");
    if (sw_ledger_open(&x->l, swt_join(x->dir, "seed.sqlite"), NULL, &e))
        fail_msg("ledger: %s", e.msg);
    json_t *doc = sw_json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 8u << 20, &e);
    assert_non_null(doc);
    struct sw_ledger_import_stats st = {0};
    if (sw_ledger_import(&x->l, doc, "seed-boots.json", &st, &e))
        fail_msg("import: %s", e.msg);
    json_decref(doc);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    sw_ledger_close(&x->l);
    sw_fleet_free(x->f);
    swt_tmpdir_free(x->dir);
    free(x);
    return 0;
}

static const json_t *endpoint(const json_t *arr, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(
        arr, i, x) if (!strcmp(json_string_value(json_object_get(x, "name")), name)) return x;
    fail_msg("no endpoint %s", name);
    return NULL;
}

static const json_t *part(const json_t *dev, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(
        json_object_get(dev, "parts"), i,
        x) if (!strcmp(json_string_value(json_object_get(x, "part")), name)) return x;
    return NULL;
}

#define JI(o, k) json_integer_value(json_object_get((o), (k)))

static void test_harness(void **state)
{
    struct fx *x = *state;
    struct sw_err e;
    json_t *h = NULL;
    sw_err_clear(&e);
    struct sw_report_opts o = {.ledger = &x->l};
    assert_int_equal(sw_export_harness(x->f, &o, &h, &e), 0);
    const json_t *small = endpoint(json_object_get(h, "endpoints"), "frank-small");
    assert_int_equal(JI(small, "contextWindow"), 180224);
    assert_true(json_is_true(json_object_get(small, "matches")));
    const json_t *c = json_object_get(h, "compaction");
    assert_string_equal(json_string_value(json_object_get(c, "endpoint")), "frank-small");
    assert_int_equal(JI(c, "window"), 180224);
    const json_t *r0 = json_array_get(json_object_get(c, "requests"), 0);
    assert_int_equal(JI(r0, "context_window"), 262144);
    assert_int_equal(JI(r0, "starts_at"), 183501);
    assert_int_equal(JI(r0, "request_tokens"), 216269);
    assert_true(json_is_false(json_object_get(r0, "fits")));
    const json_t *r1 = json_array_get(json_object_get(c, "requests"), 1);
    assert_int_equal(JI(r1, "request_tokens"), 158925);
    assert_true(json_is_true(json_object_get(r1, "fits")));
    assert_true(json_is_false(json_object_get(h, "ok")));
    /* frank-primary's deployed max_model_len (200,704, from its env file) is below the
     * harness's 262,144: the export says so */
    const json_t *pri = endpoint(json_object_get(h, "endpoints"), "frank-primary");
    assert_int_equal(JI(pri, "contextWindow"), 200704);
    assert_true(json_is_false(json_object_get(pri, "fits")));
    const json_t *tools = json_object_get(pri, "tools");
    assert_true(json_is_true(json_object_get(tools, "enabled")));
    assert_string_equal(json_string_value(json_object_get(tools, "parser")), "qwen3_xml");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(pri, "reasoning"), "parser")), "qwen3");
    json_decref(h);
}

static void test_collect_facts(void **state)
{
    struct fx *x = *state;
    struct sw_err e;
    json_t *doc = NULL;
    sw_err_clear(&e);
    struct sw_report_opts o = {.ledger = &x->l};
    assert_int_equal(sw_report_collect(x->f, &o, &doc, &e), 0);
    const json_t *eps = json_object_get(doc, "endpoints");

    const json_t *s = endpoint(eps, "frank-small");
    const json_t *w = json_object_get(s, "window");
    assert_int_equal(JI(w, "pool_tokens"), 540672);
    assert_int_equal(JI(w, "per_conversation"), 180224);
    assert_int_equal(JI(w, "slots"), 3);
    const json_t *dev = json_array_get(json_object_get(json_object_get(s, "budget"), "devices"), 0);
    assert_string_equal(json_string_value(json_object_get(dev, "name")), "cuda-24g");
    const json_t *m = json_object_get(dev, "measured");
    assert_int_equal(JI(m, "used"), 21684LL << 20);
    assert_int_equal(JI(m, "free"), 2441LL << 20);
    assert_int_equal(JI(m, "total"), 24576LL << 20);
    assert_int_equal(JI(dev, "free"), 2441LL << 20);
    assert_true(json_is_true(json_object_get(dev, "in_band")));
    /* the law's KV for 540,672 cells of K f16 + V q8_0 over 8 layers: 12,936 MiB */
    assert_int_equal(JI(part(dev, "kv"), "bytes"), 12936LL << 20);
    const json_t *meas = json_object_get(s, "measured");
    assert_true(json_real_value(json_object_get(meas, "decode_tok_s")) == 106.8);
    assert_int_equal(json_number_value(json_object_get(meas, "prefill_tok_s")), 3814);

    const json_t *p = endpoint(eps, "frank-primary");
    const char *sum = json_string_value(json_object_get(p, "shape_summary"));
    assert_non_null(strstr(sum, "tp=2 ctx=200,704 slots=3 mnbt=1,024 kv=fp8"));
    w = json_object_get(p, "window");
    assert_int_equal(JI(w, "pool_tokens"), 398658);
    assert_int_equal(JI(w, "per_conversation"), 200704);
    dev = json_array_get(json_object_get(json_object_get(p, "budget"), "devices"), 0);
    /* the fork's arena at this shape: 14.87 GiB (6,496 slots of 2.34375 MiB) */
    int64_t arena = JI(part(dev, "arena"), "bytes");
    assert_int_equal(arena / 2457600LL, 6496);
    assert_int_equal(JI(part(dev, "kv"), "bytes"), 3150000000LL);
    /* known-bad: the ledger's rule and the fleet's */
    const json_t *kb = json_object_get(p, "known_bad");
    bool rule = false;
    size_t i;
    json_t *k;
    json_array_foreach(kb, i, k) rule |=
        !strcmp(json_string_value(json_object_get(k, "what")), "slots == 2");
    assert_true(rule);
    /* the seed ledger has no deploy tags and no attempts: said, not made up */
    const json_t *tg = json_object_get(p, "tags");
    assert_int_equal(JI(tg, "count"), 0);
    assert_true(json_is_null(json_object_get(tg, "last_good")));
    assert_int_equal(JI(json_object_get(p, "restarts"), "attempts"), 0);
    /* frank-primary's bf16 run: three depths at one stream, "another shape" */
    const json_t *grid = json_object_get(json_object_get(p, "measured"), "grid");
    assert_int_equal(json_array_size(grid), 3);
    assert_int_equal(JI(json_array_get(grid, 2), "depth"), 4064);
    assert_int_equal(JI(json_array_get(grid, 2), "concurrency"), 1);
    assert_true(json_real_value(json_object_get(json_array_get(grid, 2), "decode_tok_s")) == 36.42);
    assert_true(json_is_false(json_object_get(json_array_get(grid, 2), "deployed_shape")));

    /* the Markdown carries the same facts as text */
    struct sw_buf b;
    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_report_markdown(doc, &b, &e), 0);
    const char *md = sw_buf_cstr(&b);
    assert_non_null(strstr(md, "pool 540,672 tokens, 180,224 per conversation x 3 slots"));
    assert_non_null(strstr(md, "21,684 used / 2,441 free of 24,576 MiB"));
    assert_non_null(strstr(md, "106.8 tok/s decode, 3,814 t/s prefill"));
    assert_non_null(strstr(md, "216,269 tokens DO NOT FIT one window of 180,224"));
    assert_non_null(strstr(md, "none: no deploy of this endpoint committed a tag"));
    assert_non_null(strstr(md, "| #2 | 4,064 | 1 | 36.42 | - | - | another shape |"));
    /* frank-primary's deployed figures, as the operator's log has them */
    assert_non_null(strstr(md, "pool 398,658 tokens (1.99x of a full request), 200,704 per "
                               "conversation x 3 slots"));
    assert_non_null(
        strstr(md, "**expert arena on r9700-0**: 14.87 GiB / 6,496 slots of 2.344 MiB"));
    sw_buf_free(&b);

    /* the HTML: one page, an inline <svg> per endpoint with a device budget, no network */
    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_report_html(doc, &b, &e), 0);
    const char *html = sw_buf_cstr(&b);
    size_t svgs = 0;
    for (const char *q = html; (q = strstr(q, "<svg ")); q++)
        svgs++;
    /* four budgets (frank-primary, frank-small, frank-large, frank-large-rocmfpx) and
     * frank-primary's decode by context depth */
    assert_int_equal(svgs, 5);
    assert_non_null(strstr(html, "frank-primary: measured speed by context depth"));
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "href="));
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<link"));
    sw_buf_free(&b);
    json_decref(doc);
}

/* ---------------------------------------------------------------------------------------------
 * llama-swap: parsed back, held to its documented keys.
 */
static bool in(const char *k, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(k, *set))
            return true;
    return false;
}

static void test_llama_swap(void **state)
{
    struct fx *x = *state;
    struct sw_err e;
    struct sw_buf b;
    sw_err_clear(&e);
    sw_buf_init(&b, 16u << 20);
    struct sw_report_opts o = {.ledger = &x->l};
    /* one config per host: Dankclaw's first here (frank-large-rocmfpx's command line), then
     * dankserver's below */
    assert_int_equal(sw_export_llama_swap_host(x->f, "Dankclaw", &o, &b, &e), 0);
    struct fy_document *fyd = fy_document_build_from_string(NULL, sw_buf_cstr(&b), b.len);
    assert_non_null(fyd);
    struct fy_node *root = fy_document_root(fyd);
    assert_true(fy_node_is_mapping(root));
    /* llama-swap's documented top-level keys (README / config.example.yaml) */
    static const char *const top[] = {"healthCheckTimeout",
                                      "logLevel",
                                      "metricsMaxInMemory",
                                      "startPort",
                                      "macros",
                                      "models",
                                      "groups",
                                      "hooks",
                                      "includeAliasesInList",
                                      "logRequests",
                                      NULL};
    static const char *const model[] = {"cmd",
                                        "cmdStop",
                                        "proxy",
                                        "aliases",
                                        "env",
                                        "checkEndpoint",
                                        "ttl",
                                        "useModelName",
                                        "filters",
                                        "unlisted",
                                        "concurrencyLimit",
                                        "macros",
                                        "name",
                                        "description",
                                        "metadata",
                                        NULL};
    void *it = NULL;
    struct fy_node_pair *pr;
    while ((pr = fy_node_mapping_iterate(root, &it)))
        assert_true(in(fy_node_get_scalar0(fy_node_pair_key(pr)), top));
    struct fy_node *hct = fy_node_by_path(root, "/healthCheckTimeout", FY_NT, FYNWF_DONT_FOLLOW);
    assert_string_equal(fy_node_get_scalar0(hct), "300"); /* no boot time in the seed ledger */
    struct fy_node *models = fy_node_by_path(root, "/models", FY_NT, FYNWF_DONT_FOLLOW);
    assert_true(fy_node_is_mapping(models));
    /* every engine on Dankclaw: frank-large (vLLM in podman) and frank-large-rocmfpx */
    assert_int_equal(fy_node_mapping_item_count(models), 2);
    const char *fxcmd = fy_node_get_scalar0(fy_node_mapping_lookup_by_string(
        fy_node_mapping_lookup_by_string(models, "frank-large-rocmfpx", FY_NT), "cmd", FY_NT));
    assert_non_null(fxcmd);
    assert_non_null(strstr(fxcmd, "-c 262144 -np 1 -ctk f16 -ctv f16"));
    struct fy_node *fl = fy_node_mapping_lookup_by_string(models, "frank-large", FY_NT);
    const char *flcmd = fy_node_get_scalar0(fy_node_mapping_lookup_by_string(fl, "cmd", FY_NT));
    assert_non_null(strstr(flcmd, "podman run --rm "));
    assert_non_null(strstr(flcmd, " serve /models/"));
    assert_non_null(strstr(flcmd, "--port ${PORT}"));
    assert_non_null(fy_node_mapping_lookup_by_string(fl, "cmdStop", FY_NT));
    it = NULL;
    while ((pr = fy_node_mapping_iterate(fl, &it)))
        assert_true(in(fy_node_get_scalar0(fy_node_pair_key(pr)), model));
    fy_document_destroy(fyd);
    sw_buf_reset(&b);
    assert_int_equal(sw_export_llama_swap_host(x->f, "dankserver", &o, &b, &e), 0);
    fyd = fy_document_build_from_string(NULL, sw_buf_cstr(&b), b.len);
    assert_non_null(fyd);
    root = fy_document_root(fyd);
    models = fy_node_by_path(root, "/models", FY_NT, FYNWF_DONT_FOLLOW);
    /* frank-primary (vLLM) and frank-small; frank-primary-sglang is retired (enabled: false) */
    assert_int_equal(fy_node_mapping_item_count(models), 2);
    /* the devices each engine is pinned to, kept as llama-swap's env */
    assert_non_null(strstr(sw_buf_cstr(&b), "- \"HIP_VISIBLE_DEVICES=0,1\""));
    assert_non_null(strstr(sw_buf_cstr(&b), "- \"CUDA_VISIBLE_DEVICES=0\""));
    struct fy_node *m = fy_node_mapping_lookup_by_string(models, "frank-small", FY_NT);
    assert_non_null(m);
    it = NULL;
    while ((pr = fy_node_mapping_iterate(m, &it)))
        assert_true(in(fy_node_get_scalar0(fy_node_pair_key(pr)), model));
    const char *cmd = fy_node_get_scalar0(fy_node_mapping_lookup_by_string(m, "cmd", FY_NT));
    assert_non_null(strstr(cmd, "llama-server "));
    assert_non_null(strstr(cmd, "--port ${PORT}"));
    assert_non_null(strstr(cmd, "-c 540672 -np 3"));
    assert_string_equal(
        fy_node_get_scalar0(fy_node_mapping_lookup_by_string(m, "checkEndpoint", FY_NT)),
        "/health");
    assert_string_equal(fy_node_get_scalar0(fy_node_mapping_lookup_by_string(m, "proxy", FY_NT)),
                        "http://127.0.0.1:${PORT}");
    fy_document_destroy(fyd);
    sw_buf_free(&b);

    /* a measured boot sizes the timeout: 1.5 x 400 s */
    json_t *shape = json_pack("{s:s,s:{s:s},s:i,s:i}", "engine", "llama.cpp", "model", "name",
                              "MiMo-V2.6-Distill-Qwen-9B", "ctx", 540672, "slots", 3);
    struct sw_ledger_boot bt = {.endpoint = "frank-small",
                                .engine = "llama.cpp",
                                .shape = shape,
                                .duration_ms = 400000,
                                .source = "test"};
    if (sw_ledger_record_boot(&x->l, &bt, NULL, &e))
        fail_msg("record: %s", e.msg);
    json_decref(shape);
    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_export_llama_swap(x->f, &o, &b, &e), 0);
    assert_non_null(strstr(sw_buf_cstr(&b), "\nhealthCheckTimeout: 600\n"));
    sw_buf_free(&b);
}

/* ---------------------------------------------------------------------------------------------
 * Prometheus: a small reader of the text exposition format (0.0.4).
 */
static bool metric_name(const char *s, size_t n)
{
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
            return false;
    return true;
}

/* Parse the whole text; fails the test on the first violation. Returns the number of samples. */
static int expo_check(const char *text, char names[][128], int max_names)
{
    int nfam = 0, samples = 0;
    char cur[128] = "", help[128] = "", type[128] = "";
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl); /* every line ends with \n */
        size_t n = (size_t)(nl - p);
        char line[4096];
        assert_true(n < sizeof(line));
        memcpy(line, p, n);
        line[n] = 0;
        p = nl + 1;
        if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
            char *nm = line + 7, *sp = strchr(nm, ' ');
            assert_non_null(sp);
            assert_true(metric_name(nm, (size_t)(sp - nm)));
            *sp = 0;
            if (line[2] == 'H') {
                for (int i = 0; i < nfam; i++)
                    assert_string_not_equal(names[i], nm); /* a family appears once */
                assert_true(nfam < max_names);
                snprintf(names[nfam++], 128, "%s", nm);
                snprintf(help, sizeof(help), "%s", nm);
            } else {
                assert_string_equal(help, nm); /* TYPE follows its HELP */
                assert_true(!strcmp(sp + 1, "gauge") || !strcmp(sp + 1, "counter"));
                snprintf(type, sizeof(type), "%s", nm);
                snprintf(cur, sizeof(cur), "%s", nm);
            }
            continue;
        }
        assert_true(line[0] != '#' && line[0] != 0);
        /* a sample: name{labels} value */
        size_t k = strcspn(line, "{ ");
        assert_true(metric_name(line, k));
        char nm[128];
        snprintf(nm, sizeof(nm), "%.*s", (int)k, line);
        assert_string_equal(nm, cur); /* samples of one family together, after HELP/TYPE */
        assert_string_equal(type, cur);
        const char *q = line + k;
        if (*q == '{') {
            q++;
            while (*q != '}') {
                size_t ln = strcspn(q, "=");
                assert_true(metric_name(q, ln) && !memchr(q, ':', ln));
                q += ln;
                assert_true(q[0] == '=' && q[1] == '"');
                q += 2;
                while (*q != '"') {
                    assert_true(*q != 0 && *q != '\n');
                    if (*q == '\\') {
                        assert_true(q[1] == '\\' || q[1] == '"' || q[1] == 'n');
                        q++;
                    }
                    q++;
                }
                q++;
                if (*q == ',')
                    q++;
                else
                    assert_int_equal(*q, '}');
            }
            q++;
        }
        assert_int_equal(*q, ' ');
        char *end;
        strtod(q + 1, &end);
        assert_true(end != q + 1 && *end == 0);
        samples++;
    }
    return samples;
}

static void test_prometheus(void **state)
{
    struct fx *x = *state;
    struct sw_err e;
    json_t *doc = NULL;
    struct sw_buf b;
    char names[64][128];
    sw_err_clear(&e);
    struct sw_report_opts o = {.ledger = &x->l};
    assert_int_equal(sw_report_collect(x->f, &o, &doc, &e), 0);
    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_export_prometheus(doc, &b, &e), 0);
    const char *t = sw_buf_cstr(&b);
    assert_true(expo_check(t, names, 64) > 20);
    assert_non_null(
        strstr(t, "\nslipway_endpoint_window_tokens{endpoint=\"frank-small\"} 180224\n"));
    assert_non_null(strstr(t, "\nslipway_endpoint_pool_tokens{endpoint=\"frank-small\"} 540672\n"));
    assert_non_null(
        strstr(t, "\nslipway_bench_decode_tokens_per_second{endpoint=\"frank-small\"} 106.8"));
    assert_non_null(strstr(
        t,
        "\nslipway_budget_free_bytes{endpoint=\"frank-small\",device=\"cuda-24g\"} 2559574016\n"));
    sw_buf_free(&b);
    json_decref(doc);

    /* label values are escaped: a backslash, a quote and a newline */
    doc = json_pack("{s:[{s:s,s:s,s:b}]}", "endpoints", "name", "a\"b\\c\nd", "engine", "x",
                    "enabled", true);
    sw_buf_init(&b, 1u << 20);
    assert_int_equal(sw_export_prometheus(doc, &b, &e), 0);
    t = sw_buf_cstr(&b);
    assert_non_null(strstr(t, "endpoint=\"a\\\"b\\\\c\\nd\""));
    expo_check(t, names, 64);
    sw_buf_free(&b);
    json_decref(doc);
}

/* ---------------------------------------------------------------------------------------------
 * Allocation failures: every one is SW_ENOMEM and leaks nothing (ASan builds check the leaks).
 */
struct tort {
    const struct sw_fleet *f;
    json_t *doc;
};

static int t_collect(void *arg)
{
    struct tort *t = arg;
    json_t *d = NULL;
    int rc = sw_report_collect(t->f, NULL, &d, NULL);
    json_decref(d);
    return rc;
}

static int t_harness(void *arg)
{
    struct tort *t = arg;
    json_t *d = NULL;
    int rc = sw_export_harness(t->f, NULL, &d, NULL);
    json_decref(d);
    return rc;
}

static int t_views(void *arg)
{
    struct tort *t = arg;
    struct sw_buf b;
    sw_buf_init(&b, 64u << 20);
    int rc = sw_report_markdown(t->doc, &b, NULL);
    if (!rc)
        rc = sw_report_html(t->doc, &b, NULL);
    if (!rc)
        rc = sw_export_prometheus(t->doc, &b, NULL);
    sw_buf_free(&b);
    return rc;
}

static int t_llama_swap(void *arg)
{
    struct tort *t = arg;
    struct sw_buf b;
    sw_buf_init(&b, 64u << 20);
    int rc = sw_export_llama_swap(t->f, NULL, &b, NULL);
    sw_buf_free(&b);
    return rc;
}

static void test_torture(void **state)
{
    struct fx *x = *state;
    struct sw_err e;
    struct tort t = {.f = x->f};
    sw_err_clear(&e);
    struct sw_report_opts o = {.ledger = &x->l};
    assert_int_equal(sw_report_collect(x->f, &o, &t.doc, &e), 0);
    swt_torture("report views", t_views, &t, SW_ENOMEM);
    json_decref(t.doc);
    /* collect and the exports over a fleet whose plans fail only for want of memory; the
     * operator's vLLM plan reports some allocation failures as a parse error of its inline
     * architecture (plan/inputs.c), which the report then shows as a plan error: not a report
     * bug, so that fleet is not tortured here */
    struct sw_fleet *lf = NULL;
    lf = swt_fleet("examples/local.yaml");
    t.f = lf;
    swt_torture("sw_report_collect", t_collect, &t, SW_ENOMEM);
    swt_torture("sw_export_harness", t_harness, &t, SW_ENOMEM);
    swt_torture("sw_export_llama_swap", t_llama_swap, &t, SW_ENOMEM);
    sw_fleet_free(lf);
}

/* ---------------------------------------------------------------------------------------------
 * Deploy tags and restarts: a ledger holding tags of the local fleet's endpoint, whose payloads
 * are files here; one was retired from disk, and one path was overwritten at another size (the
 * newer tag records the new size, the older one the old), so those tags cannot be restored (the
 * check `slipway history` prints, against each tag's own manifest). A deploy attempt that crash-looped gives the restarts;
 * a recorded bench sweep gives decode/prefill by depth and concurrency.
 */
static void tag_at(struct sw_ledger *l, const char *shape, const char *path, int64_t size,
                   int64_t at, char name[SW_LEDGER_TAG_MAX])
{
    struct sw_err e;
    sw_err_clear(&e);
    json_t *s = json_loads(shape, 0, NULL);
    json_t *p = json_pack("[{s:s,s:I,s:n}]", "path", path, "size", (json_int_t)size, "sha256");
    struct sw_ledger_tag_new t = {.endpoint = "local", .shape = s, .payload = p, .created_at = at};
    if (sw_ledger_tag_commit(l, &t, name, NULL, &e))
        fail_msg("tag_commit: %s", e.msg);
    json_decref(s);
    json_decref(p);
}

static const json_t *tag_named(const json_t *arr, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(
        arr, i, x) if (!strcmp(json_string_value(json_object_get(x, "name")), name)) return x;
    fail_msg("no tag %s", name);
    return NULL;
}

static void test_tags(void **state)
{
    (void)state;
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_ledger l;
    json_t *doc = NULL;
    char t0[SW_LEDGER_TAG_MAX], t1[SW_LEDGER_TAG_MAX], t2[SW_LEDGER_TAG_MAX], t3[SW_LEDGER_TAG_MAX];
    sw_err_clear(&e);
    char *dir = swt_tmpdir();
    char *kept = strdup(swt_join(dir, "kept.gguf"));
    char *gone = strdup(swt_join(dir, "retired.gguf"));
    swt_write_str(kept, "12345");
    f = swt_fleet("examples/local.yaml");
    assert_int_equal(sw_ledger_open(&l, swt_join(dir, "tags.sqlite"), NULL, &e), 0);
    int64_t day = 1790000000; /* 2026-09-21 */
    tag_at(&l,
           "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\",\"quant\":\"f32\"},\"ctx\":4096,"
           "\"slots\":1}",
           gone, 5, day, t0);
    tag_at(&l,
           "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\",\"quant\":\"f32\"},\"ctx\":8192,"
           "\"slots\":2}",
           gone, 5, day + 60, t1);
    tag_at(&l,
           "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\",\"quant\":\"f32\"},\"ctx\":8192,"
           "\"slots\":4}",
           kept, 999, day + 120, t2); /* the same path at another size: since overwritten */
    tag_at(&l,
           "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\",\"quant\":\"f32\"},\"ctx\":8192,"
           "\"slots\":2}",
           kept, 5, day + 180, t3);
    assert_int_equal(sw_ledger_tag_retire(&l, t0, "payload moved to cold storage", day + 200, &e),
                     0);

    /* a deploy that crash-looped: systemd restarted the unit 3 times before the rollback */
    json_t *shape = json_loads("{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"tiny\",\"quant\":"
                               "\"f32\"},\"ctx\":16384,\"slots\":2}",
                               0, NULL);
    struct sw_ledger_attempt at = {.endpoint = "local", .shape = shape, .from_tag = t3};
    int64_t aid = 0;
    assert_int_equal(sw_ledger_deploy_begin(&l, &at, &aid, &e), 0);
    json_t *ev = json_pack("{s:{s:s,s:i}}", "boot_failure", "class", "crash_loop", "n_restarts", 3);
    struct sw_ledger_attempt_end fin = {.outcome = "rolled_back",
                                        .failure_class = "crash_loop",
                                        .evidence = ev,
                                        .downtime_ms = 4000,
                                        .not_the_shape = true};
    assert_int_equal(sw_ledger_deploy_finish(&l, aid, &fin, NULL, &e), 0);
    json_decref(ev);
    json_decref(shape);

    /* a bench sweep as `slipway bench --record` writes it: 2 depths x 2 concurrencies */
    json_t *params = json_pack("{s:[i,i],s:[i,i]}", "depths", 0, 4096, "concurrency", 1, 4);
    json_t *res = json_pack(
        "{s:[{s:i,s:i,s:{s:f},s:f,s:{s:f}},{s:i,s:i,s:{s:f},s:f,s:{s:f}},"
        "{s:i,s:i,s:{s:f},s:f,s:{s:f}},{s:i,s:i,s:{s:f},s:f,s:{s:f}}]}",
        "points", "depth", 0, "concurrency", 1, "decode_tps", "median", 50.5, "summed_decode_tps",
        50.5, "prefill_tps", "median", 900.0, "depth", 4096, "concurrency", 1, "decode_tps",
        "median", 44.25, "summed_decode_tps", 44.25, "prefill_tps", "median", 1800.0, "depth", 0,
        "concurrency", 4, "decode_tps", "median", 30.0, "summed_decode_tps", 118.0, "prefill_tps",
        "median", 700.0, "depth", 4096, "concurrency", 4, "decode_tps", "median", 25.0,
        "summed_decode_tps", 97.5, "prefill_tps", "median", 1500.0);
    int64_t bid = 0;
    assert_int_equal(
        sw_ledger_record_bench(&l, "local", 0, day + 300, params, res, NULL, NULL, &bid, &e), 0);
    json_decref(params);
    json_decref(res);

    /* between deploys: two looks of `slipway status --record`, one before the deploy above (7
     * restarts of the old unit) and one after it (2); the newest is the one reported */
    struct sw_ledger_unit_obs uo = {.endpoint = "local",
                                    .host = "localhost",
                                    .unit = "slipway-local.service",
                                    .active = "activating",
                                    .sub = "auto-restart",
                                    .result = "exit-code",
                                    .n_restarts = 7,
                                    .main_pid = -1,
                                    .observed_ms = (day + 250) * 1000};
    int64_t oid1 = 0, oid2 = 0;
    assert_int_equal(sw_ledger_record_unit_obs(&l, &uo, &oid1, &e), 0);
    uo.active = "active";
    uo.sub = "running";
    uo.result = "success";
    uo.n_restarts = 2;
    uo.main_pid = 4242;
    uo.since = "Thu 2026-12-03 21:00:00 UTC";
    uo.observed_ms = ((int64_t)time(NULL) + 5) * 1000;
    assert_int_equal(sw_ledger_record_unit_obs(&l, &uo, &oid2, &e), 0);
    assert_true(oid2 > oid1);
    uo.unit = "bad\nunit"; /* a control character is refused, nothing written */
    assert_int_equal(sw_ledger_record_unit_obs(&l, &uo, NULL, &e), SW_EINVAL);
    json_t *obs = NULL;
    assert_int_equal(sw_ledger_unit_obs_list(&l, "local", 0, &obs, &e), 0);
    assert_int_equal(json_array_size(obs), 2);
    assert_int_equal(JI(json_array_get(obs, 0), "id"), oid2); /* newest first */
    assert_int_equal(JI(json_array_get(obs, 0), "main_pid"), 4242);
    assert_true(json_is_null(json_object_get(json_array_get(obs, 1), "main_pid")));
    json_decref(obs);

    struct sw_report_opts o = {.ledger = &l};
    assert_int_equal(sw_report_collect(f, &o, &doc, &e), 0);
    const json_t *ep = endpoint(json_object_get(doc, "endpoints"), "local");
    const json_t *tags = json_object_get(ep, "tags");
    assert_int_equal(JI(tags, "count"), 4);
    assert_true(json_is_true(json_object_get(tags, "checked")));
    const json_t *lg = json_object_get(tags, "last_good");
    assert_string_equal(json_string_value(json_object_get(lg, "name")), t3);
    assert_true(json_is_true(json_object_get(lg, "restorable")));
    const json_t *rb = json_object_get(tags, "rollback");
    assert_int_equal(json_array_size(rb), 2);
    const json_t *x1 = tag_named(rb, t1), *x2 = tag_named(rb, t2);
    assert_true(json_is_false(json_object_get(x1, "restorable")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(x1, "missing"), 0)), gone);
    assert_true(json_is_false(json_object_get(x2, "restorable"))); /* 5 bytes, 999 recorded */
    assert_int_equal(JI(tags, "unrestorable"), 2);
    const json_t *ret = json_object_get(tags, "retired");
    assert_int_equal(json_array_size(ret), 1);
    assert_string_equal(json_string_value(json_object_get(tag_named(ret, t0), "retired_why")),
                        "payload moved to cold storage");

    const json_t *rs = json_object_get(ep, "restarts");
    assert_int_equal(JI(rs, "attempts"), 1);
    assert_int_equal(JI(rs, "crash_loops"), 1);
    assert_int_equal(JI(rs, "restarts_seen"), 3);
    assert_int_equal(JI(json_object_get(rs, "last"), "attempt"), aid);
    const json_t *bt = json_object_get(rs, "between_deploys");
    assert_int_equal(JI(bt, "observation"), oid2);
    assert_int_equal(JI(bt, "n_restarts"), 2);
    assert_true(json_is_true(json_object_get(bt, "after_last_deploy")));

    const json_t *m = json_object_get(ep, "measured");
    assert_int_equal(json_array_size(json_object_get(m, "grid")), 4);
    /* the head figures: the lowest concurrency, by depth */
    assert_true(json_real_value(json_array_get(json_object_get(m, "decode_tok_s"), 1)) == 44.25);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(m, "context_tokens"), 1)),
                     4096);

    struct sw_buf b;
    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_report_markdown(doc, &b, &e), 0);
    const char *md = sw_buf_cstr(&b);
    char want[512];
    snprintf(want, sizeof(want),
             "last-good %s; 2 rollback tags, 2 of the kept tags CANNOT be "
             "restored",
             t3);
    assert_non_null(strstr(md, want));
    snprintf(want, sizeof(want), "| %s | rollback |", t1);
    assert_non_null(strstr(md, want));
    assert_non_null(strstr(md, "| NO | 1 of its payload paths or its image are not on the host; "
                               "missing: "));
    assert_non_null(strstr(md, "retired "));
    assert_non_null(strstr(md, "3 seen by 1 deploy attempt (1 crash loop, 1 rolled back)"));
    snprintf(want, sizeof(want), "between deploys: NRestarts 2 at the last look (status #%lld at ",
             (long long)oid2);
    assert_non_null(strstr(md, want));
    assert_non_null(strstr(md, "active/running)"));
    assert_non_null(strstr(md, "| #1 | 4,096 | 4 | 25 | 97.5 | 1,500 |"));
    sw_buf_free(&b);

    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_report_html(doc, &b, &e), 0);
    const char *html = sw_buf_cstr(&b);
    snprintf(want, sizeof(want), "<tr><td>%s</td><td>rollback</td>", t1);
    assert_non_null(strstr(html, want));
    assert_non_null(strstr(html, "local: measured speed by context depth"));
    assert_non_null(strstr(html, "run #1 x4 decode"));
    sw_buf_free(&b);

    sw_buf_init(&b, 16u << 20);
    assert_int_equal(sw_export_prometheus(doc, &b, &e), 0);
    const char *t = sw_buf_cstr(&b);
    char names[64][128];
    expo_check(t, names, 64);
    assert_non_null(strstr(t, "\nslipway_deploy_restarts{endpoint=\"local\"} 3\n"));
    assert_non_null(strstr(t, "\nslipway_deploy_crash_loops{endpoint=\"local\"} 1\n"));
    assert_non_null(strstr(t, "\nslipway_unit_restarts{endpoint=\"local\"} 2\n"));
    snprintf(want, sizeof(want),
             "\nslipway_unit_observed_timestamp_seconds{endpoint=\"local\"} %lld\n",
             (long long)(uo.observed_ms / 1000));
    assert_non_null(strstr(t, want));
    snprintf(want, sizeof(want),
             "\nslipway_tag_restorable{endpoint=\"local\",tag=\"%s\",role="
             "\"rollback\"} 0\n",
             t1);
    assert_non_null(strstr(t, want));
    snprintf(want, sizeof(want),
             "\nslipway_tag_restorable{endpoint=\"local\",tag=\"%s\",role="
             "\"last_good\"} 1\n",
             t3);
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "\nslipway_bench_point_decode_tokens_per_second{endpoint=\"local\","
                              "depth=\"4096\",concurrency=\"4\"} 25\n"));
    sw_buf_free(&b);
    json_decref(doc);

    /* the views survive allocation failures over this document too (collect over a ledger is
     * not tortured: jansson absorbs some allocation failures inside json_loadb of a ledger row,
     * so a run can succeed with one injected) */
    struct tort tt = {.f = f};
    assert_int_equal(sw_report_collect(f, &o, &tt.doc, &e), 0);
    swt_torture("report views (tags)", t_views, &tt, SW_ENOMEM);
    json_decref(tt.doc);
    sw_ledger_close(&l);
    sw_fleet_free(f);
    free(kept);
    free(gone);
    swt_tmpdir_free(dir);
}

/* watch's status history (the ledger's watch_events) in the report: the state now and since
 * when, the counts, the newest rows in words, in the document and the Markdown and HTML views. */
static void test_watch_history(void **state)
{
    struct fx *x = *state;
    struct sw_err e;
    sw_err_clear(&e);
    int64_t t = 1796000000000; /* 2026-11-30 */
    struct {
        const char *kind, *state, *action, *key, *outcome, *why;
    } rows[] = {
        {"observation", "serving", NULL, NULL, NULL, "serves as rendered"},
        {"observation", "dead_generation", NULL, NULL, NULL, "/health 200, generation timed out"},
        {"alert", "dead_generation", NULL, "a1", "delivered", NULL},
        {"action", "dead_generation", "restart", "r1", "started", "restart 1"},
        {"action", "dead_generation", "restart", NULL, "ok", "restarted in 1.2 s"},
        {"observation", "crash_loop", NULL, NULL, NULL, "NRestarts 3 -> 5"},
        {"action", "crash_loop", "rollback", "b1", "started", "to last-good"},
        {"action", "crash_loop", "rollback", NULL, "ok", "rolled back to frank-small@3"},
        {"observation", "serving", NULL, NULL, NULL, "serves as rendered"},
        {"job", "finished", "night-ladder", NULL, "ok", NULL},
        {"job", "missed", "night-ladder", NULL, "missed", "watch was down for the whole window"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(rows); i++) {
        json_t *ev = json_object();
        if (rows[i].why)
            sw_json_set_str(ev, strcmp(rows[i].kind, "observation") ? "detail" : "why",
                            rows[i].why);
        else if (!strcmp(rows[i].kind, "alert"))
            json_object_set_new(ev, "delivered", json_integer(1)),
                json_object_set_new(ev, "hooks", json_integer(1));
        struct sw_ledger_watch_event le = {.endpoint = "frank-small",
                                           .kind = rows[i].kind,
                                           .state = rows[i].state,
                                           .action = rows[i].action,
                                           .action_key = rows[i].key,
                                           .outcome = rows[i].outcome,
                                           .evidence = ev,
                                           .observed_ms = t + (int64_t)i * 60000};
        assert_int_equal(sw_ledger_record_watch(&x->l, &le, NULL, &e), 0);
        json_decref(ev);
    }
    json_t *doc = NULL;
    struct sw_report_opts o = {.ledger = &x->l};
    assert_int_equal(sw_report_collect(x->f, &o, &doc, &e), 0);
    const json_t *w =
        json_object_get(endpoint(json_object_get(doc, "endpoints"), "frank-small"), "watch");
    assert_string_equal(json_string_value(json_object_get(w, "state")), "serving");
    assert_int_equal(JI(w, "changes"), 4);
    assert_int_equal(JI(w, "restarts"), 1);
    assert_int_equal(JI(w, "rollbacks"), 1);
    assert_int_equal(JI(json_object_get(w, "alerts"), "delivered"), 1);
    assert_int_equal(JI(json_object_get(w, "jobs"), "runs"), 2);
    assert_int_equal(JI(json_object_get(w, "jobs"), "missed"), 1);
    const json_t *h = json_object_get(w, "history");
    /* newest first, the claims ("started") folded into their outcomes */
    assert_int_equal(json_array_size(h), 9);
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 0), "outcome")),
                        "missed");
    assert_string_equal(json_string_value(json_object_get(json_array_get(h, 3), "detail")),
                        "rolled back to frank-small@3");
    /* another endpoint was never watched */
    const json_t *w2 =
        json_object_get(endpoint(json_object_get(doc, "endpoints"), "frank-primary"), "watch");
    assert_int_equal(JI(w2, "rows"), 0);
    struct sw_buf b;
    sw_buf_init(&b, 1u << 22);
    assert_int_equal(sw_report_markdown(doc, &b, &e), 0);
    const char *md = sw_buf_cstr(&b);
    assert_non_null(strstr(md, "serving since "));
    assert_non_null(strstr(md, "4 changes of state, 1 restart, 1 rollback, 0 refusals; alerts 1 "
                               "delivered, 0 failed; jobs 2 (0 not ok, 1 missed)"));
    assert_non_null(strstr(md, "Status history (slipway watch, newest first)"));
    assert_non_null(strstr(md, "/health 200, generation timed out"));
    assert_non_null(strstr(md, "never watched"));
    sw_buf_free(&b);
    sw_buf_init(&b, 1u << 22);
    assert_int_equal(sw_report_html(doc, &b, &e), 0);
    assert_non_null(strstr(sw_buf_cstr(&b), "<td>rolled back to frank-small@3</td>"));
    sw_buf_free(&b);
    json_decref(doc);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_harness, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_facts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_llama_swap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prometheus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torture, setup, teardown),
        cmocka_unit_test(test_tags),
        cmocka_unit_test_setup_teardown(test_watch_history, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
