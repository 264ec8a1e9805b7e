/*
 * engine/vllm_plan: `slipway plan --engine vllm|sglang` in one library call: slipway's own fact
 * options, the engine's command line verbatim, an optional fork profile, and the JSON report.
 *
 * sw_engine_plan_endpoint: the same for a fleet endpoint (its shape, devices and profile as the
 * options, its config.json or inline `arch` as the model), for `slipway plan FLEET`.
 *
 * What it does not do: print (the CLI verb does), load the fleet, or guess a pool the engine sizes
 * at boot from a profiling run when the weights are not here (it says so and plans the price).
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/profile.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

#include <math.h>
#include <string.h>
#include <strings.h>

static int opt_bytes(const char *name, const char *v, uint64_t *out, struct sw_err *e)
{
    if (sw_parse_bytes(v, out, NULL))
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "%s: \"%s\" is not a byte count (e.g. 32622MiB, 6.1e9)", name, v);
    return 0;
}

/* out.arena = the fork's expert arena for this max_model_len and MNBT, when the profile has one. */
static void arena_json(const struct sw_fork_profile *prof, int64_t max_model_len, int64_t mnbt,
                       json_t *out)
{
    struct sw_arena a;
    if (sw_profile_arena(prof, max_model_len, mnbt, &a, NULL))
        return;
    json_t *j = json_object();
    sw_json_set_str(j, "profile", prof->name);
    sw_json_set_int(j, "arena_bytes", a.arena_bytes);
    sw_json_set_int(j, "slots", a.slots);
    sw_json_set_int(j, "reserve_bytes", (int64_t)a.reserve_bytes);
    sw_json_set_int(j, "overhead_bytes", (int64_t)a.overhead_bytes);
    sw_json_set_new(out, "arena", j);
}

int sw_engine_plan_cli(const char *engine, int optc, char **optv, int cmdc, char **cmdv,
                       json_t **out, struct sw_err *e)
{
    int rc = 0;
    bool vllm = !strcasecmp(engine, "vllm");
    bool sglang = !strcasecmp(engine, "sglang");
    struct sw_vllm_opts vo;
    struct sw_sglang_opts so;
    struct sw_fork_profile prof;
    bool have_prof = false;
    const char *prof_path = NULL;
    *out = NULL;
    if (!vllm && !sglang)
        return sw_err_set(e, SW_EINVAL, "engine '%s' has no law in engine/vllm (vllm, sglang)",
                          engine);
    sw_vllm_opts_init(&vo);
    sw_sglang_opts_init(&so);
    for (int i = 0; i < optc; i++) {
        const char *o = optv[i];
        if (i + 1 >= optc)
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s needs a value", o);
        const char *v = optv[++i];
        uint64_t b = 0;
        if (!strcmp(o, "--version")) {
            if (vllm && sw_vllm_version_parse(v, &vo.version))
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                                 "--version: \"%s\" is not current, legacy, v0 or 0.N", v);
        } else if (!strcmp(o, "--profile")) {
            prof_path = v;
        } else {
            rc = opt_bytes(o, v, &b, e);
            if (rc)
                return rc;
            if (!strcmp(o, "--gpu-memory"))
                vo.gpu_total_bytes = so.gpu_mem_bytes = b;
            else if (!strcmp(o, "--weights"))
                vo.weights_bytes = b;
            else if (!strcmp(o, "--activation"))
                vo.activation_peak_bytes = b;
            else if (!strcmp(o, "--non-torch"))
                vo.non_torch_bytes = b;
            else if (!strcmp(o, "--cudagraph"))
                vo.cudagraph_bytes = b;
            else if (!strcmp(o, "--pre-load-free"))
                so.pre_load_free_bytes = b;
            else if (!strcmp(o, "--post-load-avail"))
                so.post_load_avail_bytes = b;
            else
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "unknown plan option %s", o);
        }
    }
    if (prof_path) {
        char *text = NULL;
        size_t len = 0;
        rc = sw_read_file(prof_path, 1u << 20, &text, &len, e);
        if (!rc)
            rc = sw_profile_parse(text, len, prof_path, &prof, e);
        sw_free(text);
        if (rc)
            return rc;
        if (!sglang)
            sw_profile_apply_vllm(&prof, &vo);
        have_prof = true;
    }
    if (vllm) {
        struct sw_vllm_report *r = sw_malloc(sizeof(*r));
        if (!r)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        rc = sw_vllm_plan_argv(cmdc, cmdv, &vo, r, e);
        if (!rc) {
            *out = sw_vllm_report_json(r);
            if (*out && have_prof && prof.has_arena) {
                int64_t mnbt = 0;
                const char *dir;
                struct sw_vllm_opts o2 = vo;
                if (sw_vllm_parse_argv(cmdc, cmdv, &o2, &dir, NULL, 0, NULL) == 0)
                    mnbt = o2.max_num_batched_tokens;
                arena_json(&prof, r->max_model_len, mnbt, *out);
            }
        }
        sw_free(r);
    } else {
        struct sw_sglang_report r;
        rc = sw_sglang_plan_argv(cmdc, cmdv, &so, &r, e);
        if (!rc)
            *out = sw_sglang_report_json(&r);
    }
    if (!rc && !*out)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    return rc;
}

/* Lines that only a sized pool prints; dropped when the pool is sized at boot by profiling and
 * slipway cannot know what the profile leaves. */
static bool pool_line(const char *s)
{
    return strstr(s, "Available KV cache memory") || strstr(s, "GPU KV cache size") ||
           strstr(s, "# GPU blocks") || strstr(s, "Maximum concurrency") ||
           strstr(s, "ValueError: one request");
}

int sw_engine_plan_endpoint(const struct sw_fleet_endpoint *ep, json_t **out, struct sw_err *e)
{
    struct sw_vllm_opts o;
    struct sw_fork_profile prof;
    struct sw_hf_config *c = NULL;
    struct sw_vllm_report *r = NULL;
    char src[700], warn[1024] = "";
    bool pinned, sized = true;
    int rc;

    *out = NULL;
    if (ep->engine != SW_FLEET_VLLM)
        return sw_err_set(e, SW_EINVAL,
                          "%s: planning a %s endpoint from a fleet is not wired; give its "
                          "command line: slipway plan --engine %s -- ...",
                          ep->name, sw_fleet_engine_name(ep->engine),
                          sw_fleet_engine_name(ep->engine));
    rc = sw_vllm_opts_from_endpoint(ep, &o, e);
    if (rc)
        return rc;
    c = sw_calloc(1, sizeof(*c));
    r = sw_calloc(1, sizeof(*r));
    if (!c || !r) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto done;
    }
    rc = sw_endpoint_hf_config(ep, c, src, sizeof(src), e);
    if (rc)
        goto done;
    pinned = o.kv_cache_memory_bytes > 0;
    if (!pinned) {
        sw_vllm_weights_from_dir(&o, ep->payload.path.v);
        if (!o.gpu_total_bytes || !o.weights_bytes) {
            /* The engine sizes the pool from what its profiling run leaves; without the
             * weights here that is unknowable offline. The per-request block arithmetic does
             * not depend on the pool: plan it against a stand-in and report only that. */
            sized = false;
            o.kv_cache_memory_bytes = 1ull << 30;
            snprintf(warn, sizeof(warn),
                     "the pool is sized at boot (gpu_memory_utilization x device - weights - "
                     "activation - non-torch%s) and %s: only the per-request price is planned; "
                     "pin kv_cache_bytes or record a boot and run `slipway calibrate`",
                     o.version == SW_VLLM_CURRENT ? " - CUDA graphs" : "",
                     o.gpu_total_bytes ? "the weights are not on this machine"
                                       : "the device declares no memory");
        }
    }
    rc = sw_vllm_plan(c, &o, r, e);
    if (rc)
        goto done;
    json_t *j = sw_vllm_report_json(r);
    if (!j) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto done;
    }
    json_t *rep = json_object_get(j, "report");
    sw_json_set_str(j, "endpoint", ep->name);
    sw_json_set_str(j, "config", src);
    sw_json_set_bool(rep, "pool_sized", sized);
    if (!sized) {
        static const char *const drop[] = {"kv_cache_tokens",
                                           "max_concurrency",
                                           "max_concurrency_exact",
                                           "num_gpu_blocks",
                                           "available_kv_bytes",
                                           "available_from_flag",
                                           "fits",
                                           "estimated_max_model_len"};
        for (size_t k = 0; k < SW_ARRAY_LEN(drop); k++)
            json_object_del(rep, drop[k]);
        json_t *lines = json_object_get(j, "lines");
        for (size_t k = json_array_size(lines); k-- > 0;)
            if (pool_line(json_string_value(json_array_get(lines, k))))
                json_array_remove(lines, k);
    }
    /* The price of THIS geometry: whole blocks per request, over max_model_len. */
    if (r->max_model_len > 0 && r->num_gpu_blocks > 0 && r->available_kv_bytes > 0) {
        double block = (double)(r->available_kv_bytes / (uint64_t)r->num_gpu_blocks);
        sw_json_set_real(
            rep, "bytes_per_token",
            round((double)r->blocks_per_request * block / (double)r->max_model_len * 10.0) / 10.0);
    }
    if (ep->profile) {
        rc = sw_profile_from_fleet(ep->profile, &prof, e);
        if (rc) {
            json_decref(j);
            goto done;
        }
        if (!prof.extra_attn_bytes_per_token && !prof.extra_mamba_blocks)
            snprintf(warn + strlen(warn), sizeof(warn) - strlen(warn),
                     "%sprofile %s declares no KV-law terms (extra bytes per token, extra state "
                     "blocks): the stock law's figures; `slipway calibrate` fits them from "
                     "recorded boots",
                     warn[0] ? "; " : "", prof.name);
        if (prof.has_arena)
            arena_json(&prof, r->max_model_len, o.max_num_batched_tokens, j);
    }
    if (warn[0]) {
        const char *w0 = json_string_value(json_object_get(j, "warnings"));
        char all[2048];
        snprintf(all, sizeof(all), "%s%s%s", w0 ? w0 : "", w0 ? "; " : "", warn);
        sw_json_set_str(j, "warnings", all);
    }
    *out = j;
done:
    sw_free(c);
    sw_free(r);
    return rc;
}
