/*
 * engine/vllm_plan: `slipway plan --engine vllm|sglang` in one library call: the facts the CLI
 * read from its options, the engine's command line verbatim, an optional fork profile, and the
 * JSON report.
 * A fleet endpoint is planned by plan/ (sw_plan_endpoint).
 *
 * What it does not do: read slipway's own options (the CLI verb does, into struct
 * sw_engine_plan_facts), print, or load a fleet.
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

int sw_engine_plan_argv(const char *engine, const struct sw_engine_plan_facts *f, int cmdc,
                        char **cmdv, json_t **out, struct sw_err *e)
{
    int rc = 0;
    bool vllm = !strcasecmp(engine, "vllm");
    bool sglang = !strcasecmp(engine, "sglang");
    struct sw_engine_plan_facts none;
    struct sw_vllm_opts vo;
    struct sw_sglang_opts so;
    struct sw_fork_profile prof;
    bool have_prof = false;
    *out = NULL;
    if (!vllm && !sglang)
        return sw_err_set(e, SW_EINVAL, "engine '%s' has no law in engine/vllm (vllm, sglang)",
                          engine);
    if (!f) {
        memset(&none, 0, sizeof(none));
        f = &none;
    }
    const char *prof_path = f->profile_path;
    sw_vllm_opts_init(&vo);
    sw_sglang_opts_init(&so);
    vo.version = f->version;
    vo.gpu_total_bytes = so.gpu_mem_bytes = f->gpu_memory;
    vo.weights_bytes = f->weights;
    vo.activation_peak_bytes = f->activation;
    vo.non_torch_bytes = f->non_torch;
    vo.cudagraph_bytes = f->cudagraph;
    so.pre_load_free_bytes = f->pre_load_free;
    so.post_load_avail_bytes = f->post_load_avail;
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
                sw_profile_arena_json(&prof, r->max_model_len, mnbt, *out);
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
