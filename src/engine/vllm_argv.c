/*
 * engine/vllm_argv: a `vllm serve` command line, read through vLLM's flag table
 * (vllm_flags.c), planned by the law: the model's config.json and the draft's, the weights from
 * the safetensors when no fact gives them.
 *
 * What it does not do: read flags (vllm_flags.c), render argv for a fleet endpoint
 * (vllm_render.c), or validate flags vLLM would refuse for other reasons.
 */
#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

void sw_vllm_weights_from_dir(struct sw_vllm_opts *o, const char *dir)
{
    uint64_t wb = 0;
    if (o->kv_cache_memory_bytes || o->weights_bytes || !dir ||
        sw_hf_weight_bytes(dir, &wb, NULL) != 0)
        return;
    o->weights_bytes = wb / (uint64_t)(o->tp > 0 ? o->tp : 1) / (uint64_t)(o->pp > 0 ? o->pp : 1);
}

int sw_vllm_plan_argv(int argc, char **argv, const struct sw_vllm_opts *facts,
                      struct sw_vllm_report *r, struct sw_err *e)
{
    int rc = 0;
    struct sw_vllm_opts o;
    const char *dir = NULL;
    struct sw_hf_config *cfg = sw_calloc(1, sizeof(*cfg));
    struct sw_hf_config *draft = sw_calloc(1, sizeof(*draft));
    if (!cfg || !draft) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (facts)
        o = *facts;
    else
        sw_vllm_opts_init(&o);
    char ignored[1024];
    rc = sw_vllm_parse_argv(argc, argv, &o, &dir, ignored, sizeof(ignored), e);
    if (rc)
        goto out;
    rc = sw_hf_config_load(dir, cfg, e);
    if (rc)
        goto out;
    bool mtp = !strcmp(o.spec_method, "mtp") || strstr(o.spec_method, "mtp");
    if (o.spec_model[0] && mtp) {
        /* MTP from a separate checkpoint: its MTP layers join the pool (memory/vllm); a config
         * that cannot be read leaves the target's own MTP layers counted */
        char cp[1100];
        snprintf(cp, sizeof(cp), "%s/config.json", o.spec_model);
        if (access(cp, R_OK) == 0 && sw_hf_config_load(o.spec_model, draft, NULL) == 0)
            o.draft = draft;
    } else if (o.spec_model[0] && strcmp(o.spec_method, "ngram")) {
        rc = sw_hf_config_load(o.spec_model, draft, e);
        if (rc) {
            sw_err_prefix(e, "speculative draft model");
            goto out;
        }
        o.draft = draft;
    }
    if (o.gpu_total_bytes)
        sw_vllm_weights_from_dir(&o, dir);
    rc = sw_vllm_plan(cfg, &o, r, e);
    if (!rc && ignored[0])
        snprintf(r->warnings, sizeof(r->warnings), "flags not modelled: %.900s", ignored);
out:
    sw_free(cfg);
    sw_free(draft);
    return rc;
}
