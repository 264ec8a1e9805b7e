/*
 * plan/inputs: a fleet endpoint as the laws' inputs, for sw_plan_endpoint: vLLM's options from its
 * shape, engine_version, device and profile; its architecture as a Hugging Face config (the
 * checkpoint's config.json when the payload is here, else the one on its ssh host, read over the
 * transport and cached (remote_model.c), else the inline `arch`); llama.cpp's device environment.
 * One place for every engine's fleet -> law inputs.
 *
 * What it does not do: load the fleet (fleet/), plan (plan.c), or turn a fleet profile into a
 * fork profile (memory/profile_fleet, which calib shares).
 */
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/profile.h>

#include "plan/remote_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sw_vllm_opts_from_endpoint(const struct sw_fleet_endpoint *ep, struct sw_vllm_opts *o,
                               struct sw_err *e)
{
    const struct sw_fleet_shape *s = &ep->shape;
    sw_vllm_opts_init(o);
    if (ep->engine_version.v && sw_vllm_version_parse(ep->engine_version.v, &o->version))
        return sw_fleet_err_at(e, SW_EINVAL, &ep->engine_version.at,
                               "engine_version \"%s\": not current, legacy, v0 or 0.N",
                               ep->engine_version.v);
    if (s->tensor_parallel.set)
        o->tp = (int)s->tensor_parallel.v;
    if (s->pipeline_parallel.set)
        o->pp = (int)s->pipeline_parallel.v;
    if (s->decode_context_parallel.set)
        o->dcp = (int)s->decode_context_parallel.v;
    if (s->kv_cache_dtype.v)
        snprintf(o->kv_cache_dtype, sizeof(o->kv_cache_dtype), "%s", s->kv_cache_dtype.v);
    if (s->max_model_len.set)
        o->max_model_len = (int64_t)s->max_model_len.v;
    if (s->seqs.set)
        o->max_num_seqs = (int64_t)s->seqs.v;
    if (s->max_num_batched_tokens.set)
        o->max_num_batched_tokens = (int64_t)s->max_num_batched_tokens.v;
    if (s->kv_cache_bytes.set)
        o->kv_cache_memory_bytes = s->kv_cache_bytes.v;
    if (s->gpu_memory_utilization.set)
        o->gpu_memory_utilization = s->gpu_memory_utilization.v;
    if (s->block_size.set)
        o->block_size = (int64_t)s->block_size.v;
    if (s->prefix_caching.set)
        o->enable_prefix_caching = s->prefix_caching.v;
    if (s->spec_method.v) {
        snprintf(o->spec_method, sizeof(o->spec_method), "%s",
                 !strcmp(s->spec_method.v, "draft") ? "draft_model" : s->spec_method.v);
        o->num_speculative_tokens = s->spec_tokens.set ? (int64_t)s->spec_tokens.v : 1;
    }
    if (ep->n_devices > 0 && ep->devices[0]) {
        const struct sw_fleet_device *d = ep->devices[0];
        o->gpu_total_bytes = d->memory_total.set ? d->memory_total.v : d->memory_usable.v;
    }
    if (ep->profile) {
        struct sw_fork_profile p;
        int rc = sw_profile_from_fleet(ep->profile, &p, e);
        if (rc)
            return rc;
        sw_profile_apply_vllm(&p, o);
    }
    return 0;
}

int sw_endpoint_hf_config(const struct sw_fleet_endpoint *ep, struct sw_hf_config *c, char *src,
                          size_t srcn, struct sw_err *e)
{
    return sw_endpoint_hf_config_read(ep, c, src, srcn, NULL, e);
}

/* config.json on the endpoint's host: 0 read (src "HOST:PATH"), SW_ENOENT-like codes when the
 * host does not give it (why in rd), a parse error for one that is there but wrong. */
static int remote_config(const struct sw_fleet_endpoint *ep, struct sw_hf_config *c, char *src,
                         size_t srcn, struct sw_plan_model_read *rd, struct sw_err *e)
{
    struct sw__remote r;
    char path[4096], *text = NULL;
    size_t len = 0;
    int rc;
    if ((size_t)snprintf(path, sizeof(path), "%s/config.json", ep->payload.path.v) >= sizeof(path))
        return sw_err_set(e, SW_ERANGE, "%s: payload.path is too long", ep->name);
    snprintf(rd->path, sizeof(rd->path), "%s", ep->payload.path.v);
    rc = sw__remote_begin(&r, ep, rd, e);
    if (!rc)
        rc = sw__remote_file(&r, path, SW_HF_CONFIG_CEILING, &text, &len, e);
    if (!rc) {
        char where[1200];
        snprintf(where, sizeof(where), "%s:%.1000s", ep->host->name, path);
        rc = sw_hf_config_parse(text, len, where, c, e);
        if (!rc && src && srcn)
            snprintf(src, srcn, "%s", where);
        rd->found = rc == 0;
    }
    sw__remote_end(&r);
    sw_free(text);
    return rc;
}

/* Is rc a failure to get the file from the host (so a declared arch may stand in), rather than a
 * file that is there and wrong? */
static bool host_did_not_give(int rc)
{
    return rc == SW_ENOENT || rc == SW_ENET || rc == SW_EMISMATCH || rc == SW_ETIMEDOUT ||
           rc == SW_ECHILD || rc == SW_EIO || rc == SW_EINVAL;
}

int sw_endpoint_hf_config_read(const struct sw_fleet_endpoint *ep, struct sw_hf_config *c,
                               char *src, size_t srcn, struct sw_plan_model_read *rd,
                               struct sw_err *e)
{
    const char *dir = ep->payload.path.v;
    char path[4096], host_why[800] = "";
    struct sw_plan_model_read own;
    if (dir && dir[0] == '/' &&
        (size_t)snprintf(path, sizeof(path), "%s/config.json", dir) < sizeof(path) &&
        access(path, R_OK) == 0) {
        if (src && srcn)
            snprintf(src, srcn, "%s", path);
        return sw_hf_config_load(path, c, e);
    }
    /* llama.cpp's payload is a GGUF: its config.json-like `arch` is a declaration only */
    if (ep->engine != SW_FLEET_LLAMACPP && sw__remote_applies(ep)) {
        struct sw_err re;
        sw_err_clear(&re);
        if (!rd) {
            memset(&own, 0, sizeof(own));
            rd = &own;
        }
        int rc = remote_config(ep, c, src, srcn, rd, &re);
        if (!rc)
            return 0;
        if (!host_did_not_give(rc)) {
            if (e)
                *e = re;
            return rc;
        }
        sw__remote_note_why(rd, &re);
        snprintf(host_why, sizeof(host_why), " (%s: %.700s)", ep->host->name, rd->why);
    }
    if (!ep->arch)
        return sw_err_set(e, SW_ENOENT,
                          "%s: the checkpoint's config.json is not on this machine%s%s and the "
                          "endpoint declares no `arch`",
                          ep->name, host_why[0] ? " nor could it be read on its host" : "",
                          host_why);
    char where[600];
    if (ep->arch_at.file)
        snprintf(where, sizeof(where), "%s:%u:%u: %s: arch", ep->arch_at.file,
                 (unsigned)ep->arch_at.line, (unsigned)ep->arch_at.col, ep->name);
    else
        snprintf(where, sizeof(where), "%s: arch", ep->name);
    if (src && srcn)
        snprintf(src, srcn, "%s", where);
    char *t = sw_json_dumps(ep->arch, JSON_COMPACT);
    if (!t)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_hf_config_parse(t, strlen(t), where, c, e);
    sw_free(t);
    return rc;
}

void sw_llamacpp_env_from_endpoint(const struct sw_fleet_endpoint *ep, struct sw_llamacpp_env *env)
{
    memset(env, 0, sizeof(*env));
    for (size_t d = 0; d < ep->n_devices; d++) {
        const struct sw_fleet_device *dev = ep->devices[d];
        if (!dev)
            continue;
        uint64_t mem = dev->memory_usable.set ? dev->memory_usable.v
                                              : (dev->memory_total.set ? dev->memory_total.v : 0);
        if (dev->vendor.v && !strcmp(dev->vendor.v, "cpu")) {
            env->host_memory = mem;
        } else if (env->n_gpu < SW_LLAMACPP_MAX_DEV - 1) {
            snprintf(env->gpu_name[env->n_gpu], sizeof(env->gpu_name[0]), "%s", dev->name);
            env->gpu_memory[env->n_gpu] = mem;
            env->n_gpu++;
        }
    }
}
