/*
 * engine/vllm_plan: `slipway plan --engine vllm|sglang` in one library call: slipway's own fact
 * options, the engine's command line verbatim, an optional fork profile, and the JSON report.
 * A fleet endpoint is planned by plan/ (sw_plan_endpoint).
 *
 * What it does not do: print (the CLI verb does) or load a fleet.
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/profile.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

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
