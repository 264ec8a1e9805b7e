/*
 * sim endpoint: a sim made from a fleet endpoint (sim.h sw_sim_new_endpoint): its plan
 * (sw_plan_endpoint), its alias and step budget, and for each engine what the sim needs beyond
 * the plan: a vLLM endpoint's boot end (sim_headroom.c), an SGLang endpoint's window and whether
 * its rendered command line serves /metrics.
 *
 * What it does not do: load the fleet or vary the endpoint's shape (the caller: `slipway sim
 * --set`), or a verbatim command line (sim_argv.c).
 */
#include "sim_internal.h"

#include <slipway/engine_sglang.h>
#include <slipway/fleet.h>
#include <slipway/plan.h>

#include <string.h>

static int llamacpp(const struct sw_fleet_endpoint *ep, const struct sw_sim_config *c,
                    struct sw_sim **out, struct sw_err *e)
{
    struct sw_plan_overrides ov;
    struct sw_plan pl;
    memset(&ov, 0, sizeof(ov));
    int prc = sw_plan_endpoint(NULL, ep, &ov, &pl, e);
    /* a payload on the endpoint's host resolves where the engine runs */
    int rc = sw_plan_payload_on_host(&pl, ep, e);
    if (!rc)
        rc = sw_sim_new_llamacpp(&pl, prc, c, out, e);
    sw_plan_free(&pl);
    return rc;
}

static int vllm(const struct sw_fleet *f, struct sw_fleet_endpoint *ep, const char *ledger,
                struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e)
{
    struct sw_sim_vllm_boot boot;
    struct sw_plan pl;
    const char *dir = ep->payload.path.v;
    int rc = sw__sim_vllm_boot(ep, ledger, c, &boot, e);
    if (rc)
        return rc;
    struct sw_err pe;
    sw_err_clear(&pe);
    int prc = sw_plan_endpoint(f, ep, NULL, &pl, &pe);
    /* the payload found on the endpoint's host (plan.h sw_plan_payload_on_host) is there */
    rc = sw_plan_payload_on_host(&pl, ep, e);
    if (!rc && prc && (!sw_sim_payload_missing(dir) || pl.model_read.found)) {
        rc = prc; /* the law could not run on a payload that is there: say why */
        if (e)
            *e = pe;
    } else if (!rc) {
        rc = sw_sim_new_vllm_boot(prc ? NULL : pl.engine_plan, dir,
                                  ep->shape.seqs.set ? (int64_t)ep->shape.seqs.v : 0, &boot, c, out,
                                  e);
    }
    sw_plan_free(&pl);
    return rc;
}

/* SGLang serves /metrics only with --enable-metrics: the endpoint's args may carry it */
static bool serves_metrics(const struct sw_fleet_endpoint *ep)
{
    struct sw_engine_cmd cmd;
    struct sw_engine_argv line;
    struct sw_sglang_opts o;
    bool metrics = false;
    sw_sglang_opts_init(&o);
    if (sw_sglang_render_endpoint(ep, &cmd, NULL) == 0) {
        metrics = sw_sglang_read_cmd(&cmd, &o, &line, NULL) == 0 && line.metrics;
        sw_engine_cmd_free(&cmd);
    }
    return metrics;
}

static int sglang(const struct sw_fleet *f, struct sw_fleet_endpoint *ep, struct sw_sim_config *c,
                  struct sw_sim **out, struct sw_err *e)
{
    struct sw_plan pl;
    const char *dir = ep->payload.path.v;
    struct sw_err pe;
    sw_err_clear(&pe);
    int prc = sw_plan_endpoint(f, ep, NULL, &pl, &pe);
    int rc = sw_plan_payload_on_host(&pl, ep, e);
    if (rc)
        goto out;
    bool missing = sw_sim_payload_missing(dir) && !pl.model_read.found;
    rc = prc;
    if (rc && !missing) {
        if (e)
            *e = pe;
        goto out;
    }
    int64_t window = sw__sim_sglang_window(
        dir, ep->shape.max_model_len.set ? (int64_t)ep->shape.max_model_len.v : 0);
    if (window < 1 && !rc) /* the model's window, as the plan read it on the host */
        window = json_integer_value(
            json_object_get(json_object_get(pl.engine_plan, "report"), "context_length"));
    rc = sw_sim_new_sglang(rc ? NULL : pl.engine_plan, dir, window,
                           ep->shape.seqs.set ? (int64_t)ep->shape.seqs.v : 0, serves_metrics(ep),
                           c, out, e);
out:
    sw_plan_free(&pl);
    return rc;
}

int sw_sim_new_endpoint(const struct sw_fleet *f, struct sw_fleet_endpoint *ep, const char *ledger,
                        const struct sw_sim_config *c, struct sw_sim **out, struct sw_err *e)
{
    struct sw_sim_config cc = *c;
    *out = NULL;
    if (ep->engine == SW_FLEET_LLAMACPP)
        return llamacpp(ep, &cc, out, e);
    if (ep->engine != SW_FLEET_VLLM && ep->engine != SW_FLEET_SGLANG)
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s: the sim has no %s engine yet (llama.cpp, vllm, sglang)", ep->name,
                          sw_fleet_engine_name(ep->engine));
    if (!cc.alias && ep->alias.v)
        cc.alias = ep->alias.v;
    if (!cc.batch_tokens && ep->shape.max_num_batched_tokens.set)
        cc.batch_tokens = (int64_t)ep->shape.max_num_batched_tokens.v;
    if (ep->engine == SW_FLEET_VLLM)
        return vllm(f, ep, ledger, &cc, out, e);
    return sglang(f, ep, &cc, out, e);
}
