/*
 * engine/vllm: read a `vllm serve` command line verbatim into the law's options, and plan it.
 *
 * Flags are vLLM's own spellings (dashes or underscores, `--flag=value` or `--flag value`,
 * -tp/-pp/-dcp short forms). Flags that change no memory figure are accepted and listed as
 * ignored; a malformed value of a modelled flag is an error that names the flag.
 *
 * What it does not do: render argv for a fleet endpoint (that comes with the fleet module), or
 * validate flags vLLM would refuse for other reasons.
 */
#include <slipway/engine_vllm.h>
#include <slipway/vllm.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

/* vLLM's human-readable ints: k/m/g x1000, K/M/G x1024 (vllm/engine/arg_utils human_readable_int);
 * plain numbers, exponents and byte units through sw_parse_bytes. */
static int parse_int(const char *flag, const char *v, int64_t *out, struct sw_err *e)
{
    size_t n = strlen(v);
    if (n >= 2 && strchr("kmgKMG", v[n - 1]) && v[n - 2] >= '0' && v[n - 2] <= '9') {
        char buf[64];
        if (n >= sizeof(buf))
            goto bad;
        memcpy(buf, v, n - 1);
        buf[n - 1] = 0;
        double d;
        if (sw_parse_double(buf, &d, NULL) || d < 0)
            goto bad;
        char s = v[n - 1];
        double m = (s == 'k')   ? 1e3
                   : (s == 'm') ? 1e6
                   : (s == 'g') ? 1e9
                   : (s == 'K') ? 1024.0
                   : (s == 'M') ? 1048576.0
                                : 1073741824.0;
        double r = d * m;
        if (r != (double)(int64_t)r)
            goto bad;
        *out = (int64_t)r;
        return 0;
    }
    if (!strcmp(v, "-1")) {
        *out = -1;
        return 0;
    }
    uint64_t u;
    if (sw_parse_bytes(v, &u, NULL) == 0 && u <= (uint64_t)INT64_MAX) {
        *out = (int64_t)u;
        return 0;
    }
bad:
    return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: \"%s\" is not a whole number", flag, v);
}

static const char *const bool_flags[] = {
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enforce-eager",
    "--trust-remote-code",
    "--disable-hybrid-kv-cache-manager",
    "--enable-expert-parallel",
    "--disable-custom-all-reduce",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--enable-auto-tool-choice",
    "--disable-log-requests",
    "--disable-log-stats",
    "--enable-log-requests",
    "--no-enable-flashinfer-autotune",
    "--async-scheduling",
    "--no-async-scheduling",
    "--enable-lora",
    "--skip-tokenizer-init",
    "--enable-sleep-mode",
    "--expert-precise-memory",
    "--headless",
    "--enable-eplb",
    "--enable-dbo",
    "--disable-cascade-attn",
    "--enable-return-routed-experts",
    "--enable-force-include-usage",
    "--enable-prompt-tokens-details",
    "--disable-frontend-multiprocessing",
    "--enable-mfu-metrics",
    NULL,
};

static void note_ignored(char *ignored, size_t n, const char *flag)
{
    if (!ignored || !n)
        return;
    size_t l = strlen(ignored);
    if (strstr(ignored, flag))
        return;
    snprintf(ignored + l, n - l, "%s%s", l ? "," : "", flag);
}

static int set_str(char *dst, size_t n, const char *flag, const char *v, struct sw_err *e)
{
    if (strlen(v) >= n)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: value too long", flag);
    snprintf(dst, n, "%s", v);
    return 0;
}

static int parse_spec_config(struct sw_vllm_opts *o, const char *v, struct sw_err *e)
{
    struct sw_err je;
    sw_err_clear(&je);
    json_t *j = sw_json_parse(v, strlen(v), "--speculative-config", &je);
    int rc = 0;
    if (!j || !json_is_object(j)) {
        rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "--speculative-config: not a JSON object (%s)",
                       j ? "got another JSON value" : je.msg);
        goto out;
    }
    json_t *m = json_object_get(j, "method");
    json_t *n = json_object_get(j, "num_speculative_tokens");
    json_t *md = json_object_get(j, "model");
    if (m && json_is_string(m))
        snprintf(o->spec_method, sizeof(o->spec_method), "%s", json_string_value(m));
    if (n) {
        if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > 64) {
            rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                           "--speculative-config: num_speculative_tokens must be 0..64");
            goto out;
        }
        o->num_speculative_tokens = json_integer_value(n);
    }
    if (md && json_is_string(md)) {
        if (strlen(json_string_value(md)) >= sizeof(o->spec_model)) {
            rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "--speculative-config: model too long");
            goto out;
        }
        snprintf(o->spec_model, sizeof(o->spec_model), "%s", json_string_value(md));
        if (!o->spec_method[0])
            snprintf(o->spec_method, sizeof(o->spec_method), "draft_model");
    }
out:
    json_decref(j);
    return rc;
}

int sw_vllm_parse_argv(int argc, char **argv, struct sw_vllm_opts *o, const char **model_dir,
                       char *ignored, size_t ignored_n, struct sw_err *e)
{
    int i = 0;
    *model_dir = NULL;
    if (ignored && ignored_n)
        ignored[0] = 0;
    /* Accept "vllm serve DIR", "python -m vllm.entrypoints.openai.api_server", or bare flags. */
    if (i < argc && (!strcmp(argv[i], "vllm") || strstr(argv[i], "/vllm")))
        i++;
    if (i < argc && !strcmp(argv[i], "serve"))
        i++;
    if (i < argc && (!strcmp(argv[i], "python") || !strncmp(argv[i], "python3", 7))) {
        i++;
        if (i + 1 < argc && !strcmp(argv[i], "-m"))
            i += 2;
    }
    if (i < argc && argv[i][0] != '-')
        *model_dir = argv[i++];
    for (; i < argc; i++) {
        char flag[128];
        const char *a = argv[i];
        const char *val = NULL;
        if (a[0] != '-') {
            if (!*model_dir) {
                *model_dir = a;
                continue;
            }
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "unexpected argument \"%s\"", a);
        }
        const char *eq = strchr(a, '=');
        size_t fl = eq ? (size_t)(eq - a) : strlen(a);
        if (fl >= sizeof(flag))
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "flag too long");
        memcpy(flag, a, fl);
        flag[fl] = 0;
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        if (eq)
            val = eq + 1;
        /* short forms */
        if (!strcmp(flag, "-tp"))
            snprintf(flag, sizeof(flag), "--tensor-parallel-size");
        else if (!strcmp(flag, "-pp"))
            snprintf(flag, sizeof(flag), "--pipeline-parallel-size");
        else if (!strcmp(flag, "-dcp"))
            snprintf(flag, sizeof(flag), "--decode-context-parallel-size");
        else if (!strcmp(flag, "-pcp"))
            snprintf(flag, sizeof(flag), "--prefill-context-parallel-size");
        else if (!strcmp(flag, "-q"))
            snprintf(flag, sizeof(flag), "--quantization");
        if (sw_str_in(flag, bool_flags)) {
            if (val && strcasecmp(val, "true") && strcasecmp(val, "false"))
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s takes no value", flag);
            bool on = !val || !strcasecmp(val, "true");
            if (!strcmp(flag, "--enable-prefix-caching"))
                o->enable_prefix_caching = on;
            else if (!strcmp(flag, "--no-enable-prefix-caching"))
                o->enable_prefix_caching = !on;
            else if (!strcmp(flag, "--disable-hybrid-kv-cache-manager"))
                o->disable_hybrid_kv_cache_manager = on;
            else
                note_ignored(ignored, ignored_n, flag);
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s needs a value", flag);
            val = argv[++i];
        }
        int64_t n = 0;
        int rc = 0;
        if (!strcmp(flag, "--model")) {
            *model_dir = val;
        } else if (!strcmp(flag, "--tensor-parallel-size") ||
                   !strcmp(flag, "--pipeline-parallel-size") ||
                   !strcmp(flag, "--decode-context-parallel-size") ||
                   !strcmp(flag, "--prefill-context-parallel-size")) {
            rc = parse_int(flag, val, &n, e);
            if (!rc && (n < 1 || n > 1024))
                rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "%s must be 1..1024 (got %s)", flag,
                               val);
            if (!rc) {
                int *dst = flag[2] == 't'                     ? &o->tp
                           : flag[2] == 'p' && flag[3] == 'i' ? &o->pp
                           : flag[2] == 'd'                   ? &o->dcp
                                                              : &o->pcp;
                *dst = (int)n;
            }
        } else if (!strcmp(flag, "--max-model-len")) {
            rc = parse_int(flag, val, &n, e);
            if (!rc && n == -1)
                rc = sw_err_at(e, SW_EUNSUPPORTED, "<argv>", 0, 0,
                               "--max-model-len -1 (auto-fit) is not modelled: give a length");
            else if (!rc && n <= 0)
                rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "--max-model-len must be > 0");
            o->max_model_len = n;
        } else if (!strcmp(flag, "--max-num-seqs")) {
            rc = parse_int(flag, val, &o->max_num_seqs, e);
        } else if (!strcmp(flag, "--max-num-batched-tokens")) {
            rc = parse_int(flag, val, &o->max_num_batched_tokens, e);
        } else if (!strcmp(flag, "--block-size")) {
            rc = parse_int(flag, val, &o->block_size, e);
            if (!rc && o->block_size <= 0)
                rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "--block-size must be > 0");
        } else if (!strcmp(flag, "--num-gpu-blocks-override")) {
            rc = parse_int(flag, val, &o->num_gpu_blocks_override, e);
        } else if (!strcmp(flag, "--kv-cache-memory-bytes") || !strcmp(flag, "--kv-cache-memory")) {
            rc = parse_int(flag, val, &n, e);
            if (!rc && n <= 0)
                rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "%s must be > 0", flag);
            o->kv_cache_memory_bytes = (uint64_t)n;
        } else if (!strcmp(flag, "--gpu-memory-utilization")) {
            double d;
            if (sw_parse_double(val, &d, NULL) || d <= 0 || d > 1)
                rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                               "--gpu-memory-utilization must be in (0, 1] (got %s)", val);
            o->gpu_memory_utilization = d;
        } else if (!strcmp(flag, "--kv-cache-dtype")) {
            rc = set_str(o->kv_cache_dtype, sizeof(o->kv_cache_dtype), flag, val, e);
        } else if (!strcmp(flag, "--dtype")) {
            rc = set_str(o->dtype, sizeof(o->dtype), flag, val, e);
        } else if (!strcmp(flag, "--mamba-cache-dtype")) {
            rc = set_str(o->mamba_cache_dtype, sizeof(o->mamba_cache_dtype), flag, val, e);
        } else if (!strcmp(flag, "--mamba-ssm-cache-dtype")) {
            rc = set_str(o->mamba_ssm_cache_dtype, sizeof(o->mamba_ssm_cache_dtype), flag, val, e);
        } else if (!strcmp(flag, "--mamba-cache-mode")) {
            if (!strcmp(val, "none"))
                o->mamba_cache_mode = SW_MAMBA_NONE;
            else if (!strcmp(val, "align"))
                o->mamba_cache_mode = SW_MAMBA_ALIGN;
            else if (!strcmp(val, "all"))
                o->mamba_cache_mode = SW_MAMBA_ALL;
            else
                rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                               "--mamba-cache-mode must be none, align or all (got %s)", val);
        } else if (!strcmp(flag, "--speculative-config")) {
            rc = parse_spec_config(o, val, e);
        } else if (!strcmp(flag, "--num-speculative-tokens")) {
            rc = parse_int(flag, val, &o->num_speculative_tokens, e);
        } else if (!strcmp(flag, "--speculative-model")) {
            rc = set_str(o->spec_model, sizeof(o->spec_model), flag, val, e);
            if (!rc && !o->spec_method[0])
                snprintf(o->spec_method, sizeof(o->spec_method), "draft_model");
        } else {
            note_ignored(ignored, ignored_n, flag);
        }
        if (rc)
            return rc;
    }
    if (!*model_dir)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "no model: expected `vllm serve MODEL_DIR [flags]` or --model DIR");
    return 0;
}

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
