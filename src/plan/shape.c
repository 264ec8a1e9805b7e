/*
 * plan/shape: the ledger shape (docs/ledger.md) of an endpoint, and of a llama.cpp boot, built in
 * one place: from the fleet's vocabulary for an endpoint (what the gates look up among recorded
 * boots), and from the plan's argv as the law read it plus what the engine printed for a boot
 * (what `slipway up --record` stores). llama-server's defaults come from the law's argv reader
 * (sw_llamacpp_args_init), never from a caller's own table.
 *
 * What it deliberately does not do: canonicalize (ledger/canon does, through
 * sw_ledger_shape_canon) or compare shapes (gate: sw_gate_same_shape).
 */
#include <slipway/memory.h>
#include <slipway/plan.h>

#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

/* The model's name: the GGUF stem without ".gguf" and without a trailing "-<quant>" when the
 * payload declares its quantization ("MiMo-9B-Q5_K_M.gguf" + Q5_K_M -> "MiMo-9B"), else the
 * checkpoint directory's name. */
static void model_name(const struct sw_fleet_endpoint *ep, char *out, size_t n)
{
    const struct sw_fleet_payload *p = &ep->payload;
    const char *q = p->quantization.v;
    out[0] = '\0';
    if (p->gguf.v) {
        snprintf(out, n, "%s", base_name(p->gguf.v));
        size_t l = strlen(out);
        if (l > 5 && !strcasecmp(out + l - 5, ".gguf"))
            out[l -= 5] = '\0';
        size_t ql = q ? strlen(q) : 0;
        if (ql && l > ql + 1 && !strcasecmp(out + l - ql, q) &&
            (out[l - ql - 1] == '-' || out[l - ql - 1] == '.' || out[l - ql - 1] == '_'))
            out[l - ql - 1] = '\0';
    } else if (p->path.v) {
        const char *b = base_name(p->path.v);
        snprintf(out, n, "%s", *b ? b : p->path.v);
    } else if (p->repo.v) {
        snprintf(out, n, "%s", p->repo.v);
    }
    if (!out[0])
        snprintf(out, n, "%s", ep->alias.v ? ep->alias.v : ep->name);
}

static int set_u(json_t *o, const char *k, const struct sw_fleet_u64 *u)
{
    return u->set && u->v != SW_FLEET_ALL ? sw_json_set_int(o, k, (int64_t)u->v) : 0;
}

json_t *sw_plan_shape(const struct sw_fleet_endpoint *ep)
{
    const struct sw_fleet_shape *s = &ep->shape;
    json_t *o = json_object(), *model = json_object(), *flags = json_object();
    char name[512];
    int rc = 0;
    if (!o || !model || !flags)
        goto fail;
    rc |= sw_json_set_str(o, "engine", sw_fleet_engine_name(ep->engine));
    if (ep->profile)
        rc |= sw_json_set_str(o, "engine_profile", ep->profile->name);
    model_name(ep, name, sizeof(name));
    rc |= sw_json_set_str(model, "name", name);
    if (ep->payload.quantization.v)
        rc |= sw_json_set_str(model, "quant", ep->payload.quantization.v);
    rc |= sw_json_set_new(o, "model", model);
    model = NULL;
    if (ep->engine == SW_FLEET_LLAMACPP) {
        rc |= set_u(o, "ctx", &s->ctx_size);
        /* llama-server's default cache type, made explicit as `slipway up` records it */
        rc |= sw_json_set_str(o, "kv_dtype_k", s->cache_type_k.v ? s->cache_type_k.v : "f16");
        rc |= sw_json_set_str(o, "kv_dtype_v", s->cache_type_v.v ? s->cache_type_v.v : "f16");
    } else {
        rc |= set_u(o, "ctx", &s->max_model_len);
        if (s->kv_cache_dtype.v)
            rc |= sw_json_set_str(o, "kv_dtype", s->kv_cache_dtype.v);
        rc |= set_u(o, "kv_bytes", &s->kv_cache_bytes);
        rc |= set_u(o, "kv_tokens", &s->max_total_tokens);
        rc |= set_u(o, "mnbt", &s->max_num_batched_tokens);
        rc |= set_u(o, "tp", &s->tensor_parallel);
        rc |= set_u(o, "pp", &s->pipeline_parallel);
        if (s->gpu_memory_utilization.set)
            rc |= sw_json_set_real(o, "gpu_memory_utilization", s->gpu_memory_utilization.v);
        if (s->mem_fraction_static.set)
            rc |= sw_json_set_real(o, "mem_fraction_static", s->mem_fraction_static.v);
    }
    rc |= set_u(o, "slots", &s->seqs);
    if (ep->payload.mmproj.v)
        rc |= sw_json_set_new(flags, "mmproj",
                              json_pack("{s:s}", "name", base_name(ep->payload.mmproj.v)));
    if (s->spec_method.v) {
        json_t *sp = json_pack("{s:s}", "method", s->spec_method.v);
        if (sp && s->spec_tokens.set)
            sw_json_set_int(sp, "tokens", (int64_t)s->spec_tokens.v);
        rc |= sw_json_set_new(flags, "speculative", sp);
    }
    /* a fork flag that moves memory (the arena's overhead: memory/profile headroom) */
    for (size_t i = 0; i < ep->n_args; i++)
        if (ep->args[i].v && !strcmp(ep->args[i].v, "--expert-precise-memory"))
            rc |= sw_json_set_bool(flags, "expert_precise_memory", true);
    if (json_object_size(flags))
        rc |= sw_json_set_new(o, "flags", flags);
    else
        json_decref(flags);
    flags = NULL;
    if (rc)
        goto fail;
    return o;
fail:
    json_decref(o);
    json_decref(model);
    json_decref(flags);
    return NULL;
}

json_t *sw_plan_boot_shape(const struct sw_plan *p, const json_t *printed)
{
    const struct sw_llamacpp_args *a = p->args;
    json_t *s = NULL, *m = NULL, *flags = NULL;
    struct stat st;
    int rc = 0;
    if (!a)
        return NULL;
    s = json_object();
    m = json_object();
    flags = json_object();
    if (!s || !m || !flags)
        goto fail;
    rc |= sw_json_set_str(s, "engine", "llama.cpp");
    rc |= sw_json_set_str(m, "name", base_name(a->model));
    rc |= sw_json_set_str(m, "file", a->model);
    if (stat(a->model, &st) == 0 && st.st_size > 0)
        rc |= sw_json_set_int(m, "size", st.st_size);
    rc |= sw_json_set_new(s, "model", m);
    m = NULL;
    /* what the engine printed wins over what it was asked (an -np auto, a -c 0) */
    const json_t *n_ctx = json_object_get(printed, "n_ctx");
    const json_t *n_seq = json_object_get(printed, "n_seq_max");
    if (a->n_ctx > 0)
        rc |= sw_json_set_int(s, "ctx", a->n_ctx);
    else if (json_is_integer(n_ctx))
        rc |= sw_json_set_new(s, "ctx", json_deep_copy(n_ctx));
    if (json_is_integer(n_seq))
        rc |= sw_json_set_new(s, "slots", json_deep_copy(n_seq));
    else if (a->n_parallel > 0)
        rc |= sw_json_set_int(s, "slots", a->n_parallel);
    const json_t *kv0 = json_array_get(json_object_get(printed, "kv_caches"), 0);
    const char *k = json_string_value(json_object_get(kv0, "k_type"));
    const char *vt = json_string_value(json_object_get(kv0, "v_type"));
    rc |= sw_json_set_str(s, "kv_dtype_k", k ? k : sw_kv_type_name(a->type_k));
    rc |= sw_json_set_str(s, "kv_dtype_v", vt ? vt : sw_kv_type_name(a->type_v));
    rc |= sw_json_set_int(s, "batch", a->n_batch);
    rc |= sw_json_set_int(s, "ubatch", a->n_ubatch);
    if (a->n_gpu_layers >= 0)
        rc |= sw_json_set_int(s, "gpu_layers", a->n_gpu_layers);
    else if (a->n_gpu_layers == -2)
        rc |= sw_json_set_str(s, "gpu_layers", "all");
    const json_t *unified = json_object_get(printed, "kv_unified");
    if (json_is_boolean(unified))
        rc |= sw_json_set_new(flags, "kv_unified", json_deep_copy(unified));
    rc |= sw_json_set_str(flags, "flash_attn",
                          a->flash_attn == SW_FA_ON    ? "on"
                          : a->flash_attn == SW_FA_OFF ? "off"
                                                       : "auto");
    rc |= sw_json_set_bool(flags, "swa_full", a->swa_full);
    if (a->mmproj[0])
        rc |= sw_json_set_str(flags, "mmproj", a->mmproj);
    rc |= sw_json_set_new(s, "flags", flags);
    flags = NULL;
    if (rc)
        goto fail;
    return s;
fail:
    json_decref(s);
    json_decref(m);
    json_decref(flags);
    return NULL;
}
