/*
 * sim's boot lines, without a loop or a socket: for declared architectures (the real-boot points
 * in tests/data/llamacpp: a dense llama with q8_0 caches, gpt-oss's iSWA pair, Qwen3.5's hybrid
 * with recurrent state) and devices (a CPU build; two GPUs), the lines the sim would print are
 * read back by llama.cpp's boot-log parser and diffed against the law's report with zero
 * mismatches; a device too small for the KV fails at kv_alloc with the engine's lines, one too
 * small for the compute buffer at compute_alloc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/arch.h>
#include <slipway/engine.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/sim.h>

#include "sim/sim_internal.h"
#include "swtest.h"

#include <stdlib.h>
#include <string.h>

struct boot {
    struct sw_sim *sim;
    struct sw_plan plan;
    struct sw_bootlog_report rep;
    struct sw_boot_status st;
    char model[4200];
};

/* The sim of a point's arch and argv (its -m replaced by an existing file) on env. */
static void boot_point(const char *point, const struct sw_llamacpp_env *env, uint64_t override,
                       struct boot *b)
{
    struct sw_err e;
    sw_err_clear(&e);
    memset(b, 0, sizeof(*b));
    json_t *pt = sw_json_load_file(swt_src(point), 1u << 20, &e);
    assert_non_null(pt);
    struct sw_arch *arch = NULL;
    assert_int_equal(sw_arch_from_json(json_object_get(pt, "arch"), point, &arch, &e), 0);
    /* any file that is there: the sim only asks whether the payload resolves */
    snprintf(b->model, sizeof(b->model), "%s", swt_src(point));
    const char *argv[40];
    int n = 0;
    argv[n++] = "llama-server";
    json_t *a = json_object_get(pt, "argv");
    for (size_t i = 0; i < json_array_size(a) && n < 38; i++) {
        const char *v = json_string_value(json_array_get(a, i));
        argv[n++] =
            i > 0 && !strcmp(json_string_value(json_array_get(a, i - 1)), "-m") ? b->model : v;
    }
    b->plan.args = calloc(1, sizeof(*b->plan.args));
    b->plan.llamacpp = calloc(1, sizeof(*b->plan.llamacpp));
    sw_llamacpp_args_init(b->plan.args);
    assert_int_equal(sw_llamacpp_args_parse(b->plan.args, n, argv, &e), 0);
    assert_int_equal(sw_llamacpp_plan(arch, b->plan.args, env, b->plan.llamacpp, &e), 0);
    struct sw_sim_config c;
    sw_sim_config_init(&c);
    c.device_memory = override;
    assert_int_equal(sw_sim_new_llamacpp(&b->plan, 0, &c, &b->sim, &e), 0);
    /* what the sim prints, in order */
    struct sw_buf all;
    sw_buf_init(&all, 1u << 22);
    sw_buf_puts(&all, sw_buf_cstr(&b->sim->boot_early));
    sw_buf_puts(&all, sw_buf_cstr(&b->sim->boot_mem));
    sw_buf_puts(&all, sw_buf_cstr(&b->sim->boot_tail));
    assert_int_equal(sw_engine_llamacpp_bootlog(sw_buf_cstr(&all), all.len, NULL, &b->rep, &b->st),
                     0);
    sw_buf_free(&all);
    sw_arch_free(arch);
    json_decref(pt);
}

static void boot_free(struct boot *b)
{
    sw_sim_free(b->sim);
    free(b->plan.args);
    free(b->plan.llamacpp);
}

static void assert_matches_law(struct boot *b)
{
    assert_true(b->st.booted);
    assert_false(b->st.failed);
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    json_t *pred = sw_llamacpp_report_to_json(&b->plan.llamacpp->report);
    json_t *printed = sw_engine_llamacpp_report_json(&b->rep);
    json_t *prec = sw_engine_llamacpp_precision_json(&b->rep);
    json_t *d = NULL;
    assert_int_equal(eng->diff(pred, printed, prec, &d, NULL), 0);
    if (!json_is_true(json_object_get(d, "match"))) {
        char *t = json_dumps(d, JSON_INDENT(1));
        print_message("%s\n", t);
        free(t);
    }
    assert_true(json_is_true(json_object_get(d, "match")));
    assert_int_equal(json_integer_value(json_object_get(d, "mismatches")), 0);
    json_decref(d);
    json_decref(pred);
    json_decref(printed);
    json_decref(prec);
}

static void test_points_cpu(void **state)
{
    (void)state;
    static const char *const points[] = {
        "tests/data/llamacpp/point_llama31_8b_q8kv.json",
        "tests/data/llamacpp/point_gptoss20b_metal.json",
        "tests/data/llamacpp/point_qwen35_32l_4seq.json",
    };
    struct sw_llamacpp_env env;
    memset(&env, 0, sizeof(env));
    for (size_t i = 0; i < SW_ARRAY_LEN(points); i++) {
        struct boot b;
        boot_point(points[i], &env, 0, &b);
        assert_matches_law(&b);
        if (strstr(points[i], "gptoss"))
            assert_int_equal(b.rep.n_kv, 2); /* the iSWA pair */
        if (strstr(points[i], "qwen35"))
            assert_true(b.rep.has_recurrent);
        boot_free(&b);
    }
}

static void test_two_gpus(void **state)
{
    (void)state;
    struct sw_llamacpp_env env;
    memset(&env, 0, sizeof(env));
    env.n_gpu = 2;
    snprintf(env.gpu_name[0], sizeof(env.gpu_name[0]), "CUDA0");
    snprintf(env.gpu_name[1], sizeof(env.gpu_name[1]), "CUDA1");
    env.gpu_memory[0] = env.gpu_memory[1] = 24ull << 30;
    struct boot b;
    boot_point("tests/data/llamacpp/point_llama31_8b_q8kv.json", &env, 0, &b);
    assert_matches_law(&b);
    assert_non_null(strstr(sw_buf_cstr(&b.sim->boot_mem), "CUDA1 KV buffer size"));
    boot_free(&b);
}

static void test_oom_phases(void **state)
{
    (void)state;
    struct sw_llamacpp_env env;
    memset(&env, 0, sizeof(env));
    struct boot b;
    /* gpt-oss at 131072 cells: its KV alone is past 1 GiB */
    boot_point("tests/data/llamacpp/point_gptoss20b_metal.json", &env, 1ull << 30, &b);
    assert_true(b.st.failed);
    assert_int_equal(b.st.failure.cls, SW_BOOT_OOM);
    assert_int_equal(b.st.failure.phase, SW_PHASE_KV_ALLOC);
    assert_true(b.sim->boot_fails);
    assert_int_equal(b.sim->fail_status, 1);
    uint64_t kv = b.plan.llamacpp->dev[0].kv + b.plan.llamacpp->dev[0].recurrent +
                  b.plan.llamacpp->dev[0].output;
    uint64_t compute = b.plan.llamacpp->dev[0].compute;
    boot_free(&b);
    /* room for the caches, not for the compute buffer */
    boot_point("tests/data/llamacpp/point_gptoss20b_metal.json", &env, kv + compute / 2, &b);
    assert_true(b.st.failed);
    assert_int_equal(b.st.failure.cls, SW_BOOT_OOM);
    assert_int_equal(b.st.failure.phase, SW_PHASE_COMPUTE_ALLOC);
    assert_int_equal(b.rep.n_kv, 2); /* the caches were printed before the failure */
    boot_free(&b);
}

/* A fault as --fault spells it and as POST /sim/fault does: the same struct, the same checks;
 * every refusal names the spec or the member. */
static void test_fault_specs(void **state)
{
    (void)state;
    struct sw_sim_fault f, g;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_sim_fault_parse("jitter:5ms", &f, &e), 0);
    assert_int_equal(f.kind, SW_SIM_FAULT_JITTER);
    assert_int_equal(f.ms, 5);
    assert_int_equal(sw_sim_fault_parse("stall:2s", &f, &e), 0);
    assert_int_equal(f.ms, 2000);
    assert_int_equal(sw_sim_fault_parse("reset:12x3", &f, &e), 0);
    assert_int_equal(f.kind, SW_SIM_FAULT_RESET);
    assert_int_equal(f.after, 12);
    assert_int_equal(f.count, 3);
    assert_int_equal(sw_sim_fault_parse("reset:7", &f, &e), 0);
    assert_int_equal(f.count, 1);
    assert_int_equal(sw_sim_fault_parse("crash", &f, &e), 0);
    assert_int_equal(f.count, 1);
    assert_int_equal(sw_sim_fault_parse("http_500:4", &f, &e), 0);
    assert_int_equal(f.count, 4);
    assert_int_equal(sw_sim_fault_parse("dead_generation", &f, &e), 0);
    assert_string_equal(sw_sim_fault_name(f.kind), "dead_generation");

    const char *bad[] = {"",         "melt",     "jitter",  "jitter:0ms", "jitter:fast",
                         "stall:2h", "reset",    "reset:0", "reset:3x0",  "reset:3x",
                         "crash:0",  "crash:-1", "hang:1",  "http_500:x", "none:now"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sw_err_clear(&e);
        assert_int_not_equal(sw_sim_fault_parse(bad[i], &f, &e), 0);
        assert_true(strlen(e.msg) > 0);
    }
    sw_err_clear(&e);
    sw_sim_fault_parse("melt", &f, &e);
    swt_has_all("e.msg", e.msg, "\"melt\"", "reset:TOKENS", NULL);

    /* JSON: the same fault; a member of the wrong type is named */
    json_t *o = json_pack("{s:s,s:i,s:i}", "kind", "reset", "after", 12, "count", 3);
    assert_int_equal(sw_sim_fault_from_json(o, &g, &e), 0);
    json_decref(o);
    assert_int_equal(sw_sim_fault_parse("reset:12x3", &f, &e), 0);
    assert_memory_equal(&f, &g, sizeof(f));
    o = json_pack("{s:s,s:s}", "kind", "stall", "ms", "500");
    sw_err_clear(&e);
    assert_int_not_equal(sw_sim_fault_from_json(o, &g, &e), 0);
    assert_non_null(strstr(e.msg, "\"ms\""));
    json_decref(o);
    o = json_pack("{s:s}", "kind", "stall");
    assert_int_not_equal(sw_sim_fault_from_json(o, &g, &e), 0);
    json_decref(o);
    assert_int_not_equal(sw_sim_fault_from_json(NULL, &g, &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points_cpu),
        cmocka_unit_test(test_two_gpus),
        cmocka_unit_test(test_oom_phases),
        cmocka_unit_test(test_fault_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
