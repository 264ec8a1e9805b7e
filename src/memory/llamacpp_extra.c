/*
 * memory/llamacpp_extra: what llama-server loads beside the main model, priced as lines of the
 * same budget: the draft model of speculative decoding (-md: a second model and a second
 * context) and the multimodal projector (--mmproj: a CLIP/mtmd model and its encoder's compute).
 *
 * The draft: tools/server/server-context.cpp load_model (has_draft) builds the draft's params
 * with common_base_params_to_speculative (common/speculative.cpp): the target's params with the
 * draft's model, devices, n_gpu_layers (-ngld) and cache types (-ctkd/-ctvd), n_outputs_max =
 * n_parallel with one output per sequence; common_speculative_init_result then gives the draft
 * context the target's n_ctx and n_rs_seq 0. So the draft context is the same law run over the
 * draft's architecture with those parameters; its lines are added to the target's devices.
 *
 * The projector: mtmd (tools/mtmd) loads the projector's tensors on the first GPU (use_gpu is on
 * by default) and reserves the vision encoder's graph for its largest image; that compute buffer
 * depends on the encoder's image size and patches, which slipway does not read from the
 * projector's GGUF: it is taken declared or measured, else left at 0 and said by the caller.
 *
 * What it does not do: fit's layer moving for the draft (common_fit_extra_model), an MTP context
 * over the target's own nextn layers (--spec-type draft-mtp without -md), the encoder's graph.
 */
#include <slipway/memory.h>

#include <stdio.h>
#include <string.h>

/* The device a draft or projector's weights land on: the first GPU when there is one and the
 * layers are offloaded, else the CPU (dev[0]). */
static int first_dev(const struct sw_llamacpp_plan *p, const struct sw_llamacpp_env *env,
                     int64_t ngl)
{
    return env && env->n_gpu > 0 && ngl != 0 && p->n_dev > 1 ? 1 : 0;
}

int sw_llamacpp_plan_draft(struct sw_llamacpp_plan *p, const struct sw_arch *draft,
                           uint64_t weights_bytes, const struct sw_llamacpp_args *args,
                           const struct sw_llamacpp_env *env, const char *from, struct sw_err *e)
{
    struct sw_llamacpp_args *da = sw_malloc(sizeof(*da));
    struct sw_llamacpp_plan *dp = sw_malloc(sizeof(*dp));
    int rc = 0;

    if (!da || !dp) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    /* common_base_params_to_speculative: the target's params with the draft's own */
    *da = *args;
    snprintf(da->model, sizeof(da->model), "%s", args->draft);
    da->mmproj[0] = da->draft[0] = '\0';
    da->type_k = args->draft_type_k;
    da->type_v = args->draft_type_v;
    da->n_gpu_layers = args->draft_n_gpu_layers;
    da->embedding = false;
    /* n_outputs_max = n_parallel, one output per sequence: no draft length in the outputs */
    da->spec_rs = da->spec_draft = false;
    da->spec_ngram_max = da->spec_n_max = 0;
    /* common_speculative_init_result: cparams.n_ctx = llama_n_ctx(ctx_tgt), n_rs_seq = 0 */
    da->n_ctx = p->report.n_ctx;
    da->n_ctx_zero = false;
    da->kv_unified_per_slot = 0;
    da->fit = false;
    da->n_warn = 0;
    rc = sw_llamacpp_plan(draft, da, env, dp, e);
    if (rc) {
        sw_err_prefix(e, "the draft model (-md %s)", args->draft);
        goto out;
    }
    bool own_weights = dp->report.model_known && dp->report.model_bytes > 0;
    for (int d = 0; d < p->n_dev && d < dp->n_dev; d++) {
        struct sw_llamacpp_device *x = &p->dev[d];
        const struct sw_llamacpp_device *y = &dp->dev[d];
        x->draft_weights = own_weights ? y->weights : 0;
        x->draft_kv = y->kv + y->recurrent;
        x->draft_compute = y->compute + y->output;
    }
    if (!own_weights && weights_bytes)
        p->dev[first_dev(p, env, args->draft_n_gpu_layers)].draft_weights = weights_bytes;
    for (int d = 0; d < p->n_dev; d++) {
        struct sw_llamacpp_device *x = &p->dev[d];
        x->total = x->weights + x->kv + x->recurrent + x->compute + x->output + x->draft_weights +
                   x->draft_kv + x->draft_compute + x->projector_weights + x->projector_compute;
    }
    p->draft = dp->report;
    p->has_draft = true;
    snprintf(p->draft_from, sizeof(p->draft_from), "%s", from ? from : "");
    for (int i = 0; i < dp->n_warn && p->n_warn < (int)SW_ARRAY_LEN(p->warn); i++)
        if (!strstr(dp->warn[i], "declares no weights")) /* the caller says it, named */
            snprintf(p->warn[p->n_warn++], sizeof(p->warn[0]), "draft: %.190s", dp->warn[i]);
out:
    sw_free(da);
    sw_free(dp);
    return rc;
}

void sw_llamacpp_plan_draft_weights(struct sw_llamacpp_plan *p, uint64_t weights_bytes,
                                    const struct sw_llamacpp_args *args,
                                    const struct sw_llamacpp_env *env, const char *from)
{
    struct sw_llamacpp_device *x = &p->dev[first_dev(p, env, args->draft_n_gpu_layers)];
    x->draft_weights += weights_bytes;
    x->total += weights_bytes;
    p->has_draft = true;
    snprintf(p->draft_from, sizeof(p->draft_from), "%s", from ? from : "");
}

void sw_llamacpp_plan_projector(struct sw_llamacpp_plan *p, uint64_t weights_bytes,
                                uint64_t compute_bytes, const struct sw_llamacpp_env *env,
                                const char *from)
{
    struct sw_llamacpp_device *x = &p->dev[first_dev(p, env, 1)];
    x->projector_weights += weights_bytes;
    x->projector_compute += compute_bytes;
    x->total += weights_bytes + compute_bytes;
    p->has_projector = true;
    snprintf(p->projector_from, sizeof(p->projector_from), "%s", from ? from : "");
}
