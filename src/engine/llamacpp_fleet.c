/*
 * engine/llamacpp_fleet: plan a llama.cpp fleet endpoint the one way both `slipway plan FLEET`
 * and the gates do it. The adapter renders the endpoint's argv and the law's parser reads it back
 * (so planning a fleet and planning the rendered command agree); the architecture comes from the
 * GGUF when it is on this machine, else from the endpoint's `arch` (llama.cpp keys with "arch",
 * or a config.json-like object naming model_type); the devices from the fleet.
 *
 * What it does not do: judge the plan (the caller holds it to memory, bands, windows).
 */
#include <slipway/arch.h>
#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/memory.h>
#include <slipway/profile.h>

#include <string.h>
#include <unistd.h>

/* A config.json-style declaration, normalized; llama.cpp lays out memory by model family, so the
 * declaration must name it. */
static int arch_from_hf_decl(const struct sw_fleet_endpoint *ep, struct sw_arch **out,
                             struct sw_err *e)
{
    struct sw_hf_config *c = sw_calloc(1, sizeof(*c));
    char where[600];
    int rc;

    if (!c)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_endpoint_hf_config(ep, c, where, sizeof(where), e);
    if (rc)
        goto out;
    if (!c->model_type[0]) {
        rc = sw_err_set(e, SW_EINVAL,
                        "%s: a config.json-style declaration needs model_type (e.g. qwen3_5, "
                        "qwen3_next, llama): llama.cpp lays out memory by model family",
                        where);
        goto out;
    }
    rc = sw_arch_from_hf(c, out, e);
    if (rc)
        sw_err_prefix(e, "%s", where);
out:
    sw_free(c);
    return rc;
}

int sw_llamacpp_plan_endpoint(const struct sw_fleet_endpoint *ep, struct sw_llamacpp_args *args,
                              struct sw_llamacpp_plan *plan, struct sw_arch **arch_out,
                              struct sw_err *e)
{
    struct sw_engine_launch l;
    struct sw_engine_cmd cmd = {0};
    struct sw_llamacpp_env env;
    struct sw_gguf *g = NULL;
    struct sw_arch *a = NULL;
    const struct sw_engine *eng = sw_engine_find("llama.cpp");
    int rc;

    memset(&l, 0, sizeof(l));
    *arch_out = NULL;
    if (!eng)
        return sw_err_set(e, SW_EUNSUPPORTED, "no llama.cpp engine adapter");
    rc = sw_engine_launch_from_fleet(ep, &l, e);
    if (rc)
        return rc;
    rc = eng->render(&l, &cmd, e);
    if (rc)
        goto out;
    sw_llamacpp_args_init(args);
    rc = sw_llamacpp_args_parse(args, (int)cmd.argc, (const char *const *)cmd.argv, e);
    if (rc)
        goto out;
    if (access(args->model, R_OK) == 0) {
        rc = sw_gguf_open(args->model, &g, e);
        if (rc || (rc = sw_arch_from_gguf(g, &a, e)))
            goto out;
    } else if (ep->arch && json_object_get(ep->arch, "arch")) {
        rc = sw_arch_from_json(ep->arch, ep->arch_at.file ? ep->arch_at.file : "arch", &a, e);
        if (rc)
            goto out;
    } else if (ep->arch) {
        rc = arch_from_hf_decl(ep, &a, e);
        if (rc)
            goto out;
    } else {
        rc = sw_err_set(e, SW_ENOENT, "%s: %s is not on this machine and no `arch` is declared",
                        ep->name, args->model);
        goto out;
    }
    sw_llamacpp_env_from_endpoint(ep, &env);
    rc = sw_llamacpp_plan(a, args, &env, plan, e);
    if (rc)
        goto out;
    *arch_out = a;
    a = NULL;
out:
    sw_arch_free(a);
    sw_gguf_free(g);
    sw_engine_cmd_free(&cmd);
    sw_engine_launch_free(&l);
    return rc;
}
