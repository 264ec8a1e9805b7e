/*
 * sim argv: a sim made from an engine's own command line, verbatim (sim.h sw_sim_new_argv). The
 * line is read through the engine's flag table (the law's reader for llama.cpp, the adapter's for
 * vLLM and SGLang): the plan comes from it, and so do where the sim serves, the name it serves
 * under, and what the engine's flags turn on (vLLM's auto tool choice, SGLang's /metrics, a
 * step's budget).
 *
 * What it does not do: read the command line itself (the tables do), or a fleet endpoint
 * (sim_endpoint.c).
 */
#include "sim_internal.h"

#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/memory.h>
#include <slipway/plan.h>

#include <string.h>

/* llama-server's line: the plan of sw_plan_endpoint over it, the address it names */
static int llamacpp(int argc, char **argv, const struct sw_sim_config *c, struct sw_sim **out,
                    struct sw_err *e)
{
    struct sw_plan_overrides ov;
    struct sw_llamacpp_env env;
    struct sw_plan pl;
    memset(&ov, 0, sizeof(ov));
    memset(&env, 0, sizeof(env));
    ov.argv = (const char *const *)argv;
    ov.argc = (size_t)argc;
    /* a CPU build's host memory, as `plan --host-memory`: the law's budget and --fit */
    env.host_memory = c->device_memory;
    ov.llamacpp_env = &env;
    int prc = sw_plan_endpoint(NULL, NULL, &ov, &pl, e);
    int rc = sw_sim_new_llamacpp(&pl, prc, c, out, e);
    if (!rc)
        sw__sim_listen(*out, pl.args->host, pl.args->port);
    sw_plan_free(&pl);
    return rc;
}

/* The law's plan of a vLLM or SGLang line: NULL when the law cannot plan for a payload that is
 * not there (the sim fails the boot as the engine does); an error for one that is. */
static int hf_plan(const char *engine, const struct sw_engine_plan_facts *facts, int argc,
                   char **argv, const char *dir, json_t **plan, struct sw_err *e)
{
    *plan = NULL;
    int rc = sw_engine_plan_argv(engine, facts, argc, argv, plan, e);
    if (!rc)
        return 0;
    json_decref(*plan);
    *plan = NULL;
    return sw_sim_payload_missing(dir) ? 0 : rc;
}

/* vLLM's or SGLang's line: read through the engine's table, planned by its law (with the free
 * memory around the load, for SGLang, as it measures it: the device's before, less the weights
 * after; the pool is then the law's autofit unless the line pins it). */
static int hf(bool sglang, int argc, char **argv, uint64_t weights, struct sw_sim_config *c,
              struct sw_sim **out, struct sw_err *e)
{
    struct sw_engine_plan_facts facts = {.gpu_memory = c->device_memory, .weights = weights};
    struct sw_engine_argv line;
    struct sw_vllm_opts vo;
    struct sw_sglang_opts so;
    json_t *plan = NULL;
    int64_t budget, seqs;
    int rc;
    if (sglang && weights && weights < c->device_memory) {
        facts.pre_load_free = c->device_memory;
        facts.post_load_avail = c->device_memory - weights;
    }
    sw_vllm_opts_init(&vo);
    sw_sglang_opts_init(&so);
    rc = sglang ? sw_sglang_read_argv(argc, argv, &so, &line, NULL, 0, e)
                : sw_vllm_read_argv(argc, argv, &vo, &line, NULL, 0, e);
    if (!rc)
        rc = hf_plan(sglang ? "sglang" : "vllm", &facts, argc, argv, line.model_dir, &plan, e);
    if (rc)
        return rc;
    budget = sglang ? so.chunked_prefill_size : vo.max_num_batched_tokens;
    seqs = sglang ? so.max_running_requests : vo.max_num_seqs;
    c->tools |= line.auto_tool_choice; /* vLLM's tool parser: "auto" tool choice works */
    if (!c->alias)
        c->alias = line.served_name;
    if (!c->batch_tokens && budget > 0)
        c->batch_tokens = budget;
    rc = sglang ? sw_sim_new_sglang(plan, line.model_dir,
                                    sw__sim_sglang_window(line.model_dir, so.context_length), seqs,
                                    line.metrics, c, out, e)
                : sw_sim_new_vllm(plan, line.model_dir, seqs, c, out, e);
    if (!rc)
        sw__sim_listen(*out, line.host, line.port);
    json_decref(plan);
    return rc;
}

int sw_sim_new_argv(const char *engine, int argc, char **argv, uint64_t weights,
                    const struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e)
{
    struct sw_sim_config cc = *c;
    *out = NULL;
    if (!strcmp(engine, "vllm") || !strcmp(engine, "sglang"))
        return hf(!strcmp(engine, "sglang"), argc, argv, weights, &cc, out, e);
    if (!strcmp(engine, "llama.cpp") || !strcmp(engine, "llamacpp") ||
        !strcmp(engine, "llama-server"))
        return llamacpp(argc, argv, &cc, out, e);
    return sw_err_set(e, SW_EUNSUPPORTED, "engine '%s' has no sim here (llama.cpp, vllm, sglang)",
                      engine);
}
