/*
 * memory/llamacpp_args: llama-server's command line, parsed the way the pinned llama.cpp parses it
 * (common/arg.cpp common_params_parser_init with LLAMA_EXAMPLE_SERVER, defaults from
 * common/common.h), for the flags that decide memory. Every other llama-server flag is known by
 * name so its value can be skipped; the ones that could move memory and are not modelled get a
 * warning, the rest (sampling, HTTP, logging) are accepted silently.
 *
 * What it does not do: read LLAMA_ARG_* environment variables (the engine adapter renders flags),
 * or check that files exist.
 */
#include <slipway/memory.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum fclass { F_SILENT, F_WARN };

struct flagdef {
    const char *name;
    bool value;
    enum fclass cls;
};

/* Known llama-server flags that slipway does not interpret (common/arg.cpp, server examples). */
static const struct flagdef others[] = {
    /* may change memory, not modelled */
    {"-ot", true, F_WARN},
    {"--override-tensor", true, F_WARN},
    {"-cmoe", false, F_WARN},
    {"--cpu-moe", false, F_WARN},
    {"-ncmoe", true, F_WARN},
    {"--n-cpu-moe", true, F_WARN},
    {"-ncffn", true, F_WARN},
    {"--n-cpu-ffn", true, F_WARN},
    {"-sm", true, F_WARN},
    {"--split-mode", true, F_WARN},
    {"-ts", true, F_WARN},
    {"--tensor-split", true, F_WARN},
    {"-mg", true, F_WARN},
    {"--main-gpu", true, F_WARN},
    {"-dev", true, F_WARN},
    {"--device", true, F_WARN},
    {"--rpc", true, F_WARN},
    {"-fitt", true, F_WARN},
    {"--fit-target", true, F_WARN},
    {"-fitc", true, F_WARN},
    {"--fit-ctx", true, F_WARN},
    {"--override-kv", true, F_WARN},
    {"--pooling", true, F_WARN},
    {"--rerank", false, F_WARN},
    {"--reranking", false, F_WARN},
    {"-bs", false, F_WARN},
    {"--backend-sampling", false, F_WARN},
    {"--no-host", false, F_WARN},
    {"--repack", false, F_WARN},
    {"-nr", false, F_WARN},
    {"--no-repack", false, F_WARN},
    {"--control-vector", true, F_WARN},
    {"--control-vector-scaled", true, F_WARN},
    {"--lora-init-without-apply", false, F_WARN},
    {"-lzm", true, F_WARN},
    {"--lazy-mode", true, F_WARN},
    {"-cram", true, F_WARN},
    {"--cache-ram", true, F_WARN},
    {"-devd", true, F_WARN},
    {"--spec-draft-device", true, F_WARN},
    {"--device-draft", true, F_WARN},
    {"-hf", true, F_WARN},
    {"-hfr", true, F_WARN},
    {"--hf-repo", true, F_WARN},
    {"-hff", true, F_WARN},
    {"--hf-file", true, F_WARN},
    {"-mu", true, F_WARN},
    {"--model-url", true, F_WARN},
    {"-dr", true, F_WARN},
    {"--docker-repo", true, F_WARN},
    {"-mmu", true, F_WARN},
    {"--mmproj-url", true, F_WARN},
    {"--mmproj-offload", false, F_WARN},
    {"--no-mmproj-offload", false, F_WARN},
    {"--numa", true, F_WARN},
    {"--rope-scaling", true, F_SILENT},
    {"--rope-scale", true, F_SILENT},
    {"--rope-freq-base", true, F_SILENT},
    {"--rope-freq-scale", true, F_SILENT},
    {"--yarn-orig-ctx", true, F_SILENT},
    {"--yarn-ext-factor", true, F_SILENT},
    {"--yarn-attn-factor", true, F_SILENT},
    {"--yarn-beta-slow", true, F_SILENT},
    {"--yarn-beta-fast", true, F_SILENT},
    {"--embd-gemma-default", false, F_WARN},
    {"--fim-qwen-1.5b-default", false, F_WARN},
    {"--fim-qwen-3b-default", false, F_WARN},
    {"--fim-qwen-7b-default", false, F_WARN},
    {"--fim-qwen-7b-spec", false, F_WARN},
    {"--fim-qwen-14b-spec", false, F_WARN},
    {"--fim-qwen-30b-default", false, F_WARN},
    {"--gpt-oss-20b-default", false, F_WARN},
    {"--gpt-oss-120b-default", false, F_WARN},
    {"--vision-gemma-4b-default", false, F_WARN},
    {"--vision-gemma-12b-default", false, F_WARN},
    {"--spec-default", false, F_WARN},
    {"--spec-draft-hf", true, F_WARN},
    {"-hfd", true, F_WARN},
    {"-hfrd", true, F_WARN},
    {"--hf-repo-draft", true, F_WARN},
    {"--spec-draft-n-min", true, F_SILENT},
    {"--models-dir", true, F_WARN},
    {"--models-preset", true, F_WARN},
    {"--models-max", true, F_WARN},
    {"--check-tensors", false, F_SILENT},
    {"--image-min-tokens", true, F_SILENT},
    {"--image-max-tokens", true, F_SILENT},
    {"--mtmd-batch-max-tokens", true, F_WARN},
    {"--no-mmproj", false, F_SILENT},
    {"--no-mmproj-auto", false, F_SILENT},
    {"--mmproj-auto", false, F_SILENT},
    /* no memory effect */
    {"-t", true, F_SILENT},
    {"--threads", true, F_SILENT},
    {"-tb", true, F_SILENT},
    {"--threads-batch", true, F_SILENT},
    {"-C", true, F_SILENT},
    {"--cpu-mask", true, F_SILENT},
    {"-Cr", true, F_SILENT},
    {"--cpu-range", true, F_SILENT},
    {"--cpu-strict", true, F_SILENT},
    {"--prio", true, F_SILENT},
    {"--poll", true, F_SILENT},
    {"-Cb", true, F_SILENT},
    {"--cpu-mask-batch", true, F_SILENT},
    {"-Crb", true, F_SILENT},
    {"--cpu-range-batch", true, F_SILENT},
    {"--cpu-strict-batch", true, F_SILENT},
    {"--prio-batch", true, F_SILENT},
    {"--poll-batch", true, F_SILENT},
    {"-lcs", true, F_SILENT},
    {"--lookup-cache-static", true, F_SILENT},
    {"-lcd", true, F_SILENT},
    {"--lookup-cache-dynamic", true, F_SILENT},
    {"-n", true, F_SILENT},
    {"--predict", true, F_SILENT},
    {"--n-predict", true, F_SILENT},
    {"--keep", true, F_SILENT},
    {"-ctxcp", true, F_SILENT},
    {"--ctx-checkpoints", true, F_SILENT},
    {"--swa-checkpoints", true, F_SILENT},
    {"-cms", true, F_SILENT},
    {"--checkpoint-min-step", true, F_SILENT},
    {"--cache-idle-slots", false, F_SILENT},
    {"--no-cache-idle-slots", false, F_SILENT},
    {"--context-shift", false, F_SILENT},
    {"--no-context-shift", false, F_SILENT},
    {"--perf", false, F_SILENT},
    {"--no-perf", false, F_SILENT},
    {"-e", false, F_SILENT},
    {"--escape", false, F_SILENT},
    {"--no-escape", false, F_SILENT},
    {"-r", true, F_SILENT},
    {"--reverse-prompt", true, F_SILENT},
    {"-sp", false, F_SILENT},
    {"--special", false, F_SILENT},
    {"--warmup", false, F_SILENT},
    {"--no-warmup", false, F_SILENT},
    {"--spm-infill", false, F_SILENT},
    {"--samplers", true, F_SILENT},
    {"-s", true, F_SILENT},
    {"--seed", true, F_SILENT},
    {"--sampler-seq", true, F_SILENT},
    {"--sampling-seq", true, F_SILENT},
    {"--ignore-eos", false, F_SILENT},
    {"--temp", true, F_SILENT},
    {"--temperature", true, F_SILENT},
    {"--top-k", true, F_SILENT},
    {"--top-p", true, F_SILENT},
    {"--min-p", true, F_SILENT},
    {"--top-nsigma", true, F_SILENT},
    {"--top-n-sigma", true, F_SILENT},
    {"--xtc-probability", true, F_SILENT},
    {"--xtc-threshold", true, F_SILENT},
    {"--typical", true, F_SILENT},
    {"--typical-p", true, F_SILENT},
    {"--repeat-last-n", true, F_SILENT},
    {"--repeat-penalty", true, F_SILENT},
    {"--presence-penalty", true, F_SILENT},
    {"--frequency-penalty", true, F_SILENT},
    {"--dry-multiplier", true, F_SILENT},
    {"--dry-base", true, F_SILENT},
    {"--dry-allowed-length", true, F_SILENT},
    {"--dry-penalty-last-n", true, F_SILENT},
    {"--dry-sequence-breaker", true, F_SILENT},
    {"--adaptive-target", true, F_SILENT},
    {"--adaptive-decay", true, F_SILENT},
    {"--dynatemp-range", true, F_SILENT},
    {"--dynatemp-exp", true, F_SILENT},
    {"--mirostat", true, F_SILENT},
    {"--mirostat-lr", true, F_SILENT},
    {"--mirostat-ent", true, F_SILENT},
    {"-l", true, F_SILENT},
    {"--logit-bias", true, F_SILENT},
    {"--grammar", true, F_SILENT},
    {"--grammar-file", true, F_SILENT},
    {"-j", true, F_SILENT},
    {"--json-schema", true, F_SILENT},
    {"-jf", true, F_SILENT},
    {"--json-schema-file", true, F_SILENT},
    {"-dt", true, F_SILENT},
    {"--defrag-thold", true, F_SILENT},
    {"-cb", false, F_SILENT},
    {"--cont-batching", false, F_SILENT},
    {"-nocb", false, F_SILENT},
    {"--no-cont-batching", false, F_SILENT},
    {"--video-fps", true, F_SILENT},
    {"--video-timestamp-interval", true, F_SILENT},
    {"--video-ffmpeg-dir", true, F_SILENT},
    {"--list-devices", false, F_SILENT},
    {"--op-offload", false, F_SILENT},
    {"--no-op-offload", false, F_SILENT},
    {"-a", true, F_SILENT},
    {"--alias", true, F_SILENT},
    {"--tags", true, F_SILENT},
    {"-hft", true, F_SILENT},
    {"--hf-token", true, F_SILENT},
    {"--embd-normalize", true, F_SILENT},
    {"--host", true, F_SILENT},
    {"--port", true, F_SILENT},
    {"--reuse-port", false, F_SILENT},
    {"--path", true, F_SILENT},
    {"--cors-origins", true, F_SILENT},
    {"--cors-methods", true, F_SILENT},
    {"--cors-headers", true, F_SILENT},
    {"--cors-credentials", false, F_SILENT},
    {"--no-cors-credentials", false, F_SILENT},
    {"--api-prefix", true, F_SILENT},
    {"--ui-config", true, F_SILENT},
    {"--webui-config", true, F_SILENT},
    {"--ui-config-file", true, F_SILENT},
    {"--webui-config-file", true, F_SILENT},
    {"--ui-mcp-proxy", false, F_SILENT},
    {"--webui-mcp-proxy", false, F_SILENT},
    {"--no-ui-mcp-proxy", false, F_SILENT},
    {"--no-webui-mcp-proxy", false, F_SILENT},
    {"--tools", true, F_SILENT},
    {"--tools-runtime", true, F_SILENT},
    {"--mcp-servers-config", true, F_SILENT},
    {"--mcp-servers-json", true, F_SILENT},
    {"-ag", false, F_SILENT},
    {"--agent", false, F_SILENT},
    {"-no-ag", false, F_SILENT},
    {"--no-agent", false, F_SILENT},
    {"--ui", false, F_SILENT},
    {"--webui", false, F_SILENT},
    {"--no-ui", false, F_SILENT},
    {"--no-webui", false, F_SILENT},
    {"--api-key", true, F_SILENT},
    {"--api-key-file", true, F_SILENT},
    {"--ssl-key-file", true, F_SILENT},
    {"--ssl-cert-file", true, F_SILENT},
    {"--chat-template-kwargs", true, F_SILENT},
    {"-to", true, F_SILENT},
    {"--timeout", true, F_SILENT},
    {"--sse-ping-interval", true, F_SILENT},
    {"--threads-http", true, F_SILENT},
    {"--cache-prompt", false, F_SILENT},
    {"--no-cache-prompt", false, F_SILENT},
    {"--cache-reuse", true, F_SILENT},
    {"--metrics", false, F_SILENT},
    {"--props", false, F_SILENT},
    {"--slots", false, F_SILENT},
    {"--no-slots", false, F_SILENT},
    {"--slot-save-path", true, F_SILENT},
    {"--media-path", true, F_SILENT},
    {"--models-autoload", false, F_SILENT},
    {"--no-models-autoload", false, F_SILENT},
    {"--jinja", false, F_SILENT},
    {"--no-jinja", false, F_SILENT},
    {"--reasoning-format", true, F_SILENT},
    {"-rea", true, F_SILENT},
    {"--reasoning", true, F_SILENT},
    {"--reasoning-effort", true, F_SILENT},
    {"--reasoning-budget", true, F_SILENT},
    {"--reasoning-budget-message", true, F_SILENT},
    {"--reasoning-preserve", false, F_SILENT},
    {"--no-reasoning-preserve", false, F_SILENT},
    {"--chat-template", true, F_SILENT},
    {"--chat-template-file", true, F_SILENT},
    {"--skip-chat-parsing", false, F_SILENT},
    {"--no-skip-chat-parsing", false, F_SILENT},
    {"--prefill-assistant", false, F_SILENT},
    {"--no-prefill-assistant", false, F_SILENT},
    {"-sps", true, F_SILENT},
    {"--slot-prompt-similarity", true, F_SILENT},
    {"--sleep-idle-seconds", true, F_SILENT},
    {"--log-disable", false, F_SILENT},
    {"--log-file", true, F_SILENT},
    {"--log-prompts-dir", true, F_SILENT},
    {"--log-colors", true, F_SILENT},
    {"-v", false, F_SILENT},
    {"--verbose", false, F_SILENT},
    {"--log-verbose", false, F_SILENT},
    {"-lv", true, F_SILENT},
    {"--verbosity", true, F_SILENT},
    {"--log-verbosity", true, F_SILENT},
    {"--log-prefix", false, F_SILENT},
    {"--no-log-prefix", false, F_SILENT},
    {"--log-timestamps", false, F_SILENT},
    {"--no-log-timestamps", false, F_SILENT},
    {"--spec-draft-threads", true, F_SILENT},
    {"-td", true, F_SILENT},
    {"--threads-draft", true, F_SILENT},
    {"--spec-draft-threads-batch", true, F_SILENT},
    {"-tbd", true, F_SILENT},
    {"--threads-batch-draft", true, F_SILENT},
    {"--spec-draft-p-split", true, F_SILENT},
    {"--draft-p-split", true, F_SILENT},
    {"--spec-draft-p-min", true, F_SILENT},
    {"--draft-p-min", true, F_SILENT},
    {"--spec-draft-backend-sampling", false, F_SILENT},
    {"--no-spec-draft-backend-sampling", false, F_SILENT},
    {"--spec-synth-len", true, F_SILENT},
    {"--spec-synth-rates", true, F_SILENT},
    {"--spec-ngram-mod-n-min", true, F_SILENT},
    {"--spec-ngram-mod-n-match", true, F_SILENT},
    {"--spec-ngram-simple-size-n", true, F_SILENT},
    {"--spec-ngram-simple-min-hits", true, F_SILENT},
    {"--spec-ngram-map-k-size-n", true, F_SILENT},
    {"--spec-ngram-map-k-min-hits", true, F_SILENT},
    {"--spec-ngram-map-k4v-size-n", true, F_SILENT},
    {"--spec-ngram-map-k4v-min-hits", true, F_SILENT},
    {"--spec-ngram-size-n", true, F_SILENT},
    {"--spec-ngram-min-hits", true, F_SILENT},
    {"--version", false, F_SILENT},
    {"-cl", false, F_SILENT},
    {"--cache-list", false, F_SILENT},
};

void sw_llamacpp_args_init(struct sw_llamacpp_args *a)
{
    memset(a, 0, sizeof(*a));
    a->n_ctx = 0;          /* common_params::n_ctx */
    a->n_parallel = -1;    /* common_params_parser_init: server default is auto */
    a->n_batch = 2048;     /* common_params::n_batch */
    a->n_ubatch = 512;     /* common_params::n_ubatch */
    a->type_k = SW_KV_F16; /* common_params::cache_type_k */
    a->type_v = SW_KV_F16;
    a->flash_attn = SW_FA_AUTO; /* common_params::flash_attn_type */
    a->n_gpu_layers = -1;       /* auto */
    a->mmap = true;             /* load_mode auto = mmap */
    a->fit = true;              /* common_params::fit_params */
    a->spec_draft_n_max = 3;    /* common_params_speculative_draft::n_max */
    /* common_params_speculative_draft: cache_type_k/v f16, n_gpu_layers -1 */
    a->draft_type_k = SW_KV_F16;
    a->draft_type_v = SW_KV_F16;
    a->draft_n_gpu_layers = -1;
}

static void warn(struct sw_llamacpp_args *a, const char *fmt, ...) SW_PRINTF(2, 3);
static void warn(struct sw_llamacpp_args *a, const char *fmt, ...)
{
    va_list ap;
    if (a->n_warn >= SW_LLAMACPP_MAX_WARN)
        return;
    va_start(ap, fmt);
    vsnprintf(a->warn[a->n_warn], sizeof(a->warn[0]), fmt, ap);
    va_end(ap);
    a->n_warn++;
}

static bool is(const char *arg, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(arg, *names))
            return true;
    return false;
}

static int int_value(const char *flag, const char *v, int64_t lo, int64_t *out, struct sw_err *e)
{
    int64_t x;
    if (sw_parse_i64(v, &x, NULL))
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: '%s' is not a whole number", flag, v);
    if (x < lo)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: %lld is out of range (min %lld)", flag,
                         (long long)x, (long long)lo);
    if (x > 2147483647)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: %lld does not fit an int", flag,
                         (long long)x);
    *out = x;
    return 0;
}

/* -ctk/-ctv/-ctkd/-ctvd: a cache type llama-server accepts */
static int cache_type_value(const char *flag, const char *v, int *out, struct sw_err *e)
{
    int t = sw_kv_type_from_name(v);
    if (t < 0)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "%s: unsupported cache type '%s' (allowed: f32, f16, bf16, q8_0, q4_0, "
                         "q4_1, iq4_nl, q5_0, q5_1)",
                         flag, v);
    *out = t;
    return 0;
}

/* -ngl/-ngld: auto (-1), all (-2) or a count */
static int layers_value(const char *flag, const char *v, int64_t *out, struct sw_err *e)
{
    if (!strcmp(v, "auto")) {
        *out = -1;
        return 0;
    }
    if (!strcmp(v, "all")) {
        *out = -2;
        return 0;
    }
    return int_value(flag, v, -2147483647, out, e);
}

static int fa_value(const char *flag, const char *v, enum sw_llamacpp_fa *out, struct sw_err *e)
{
    /* common_arg_utils::is_truthy / is_falsey / is_autoy */
    if (!strcmp(v, "on") || !strcmp(v, "enabled") || !strcmp(v, "true") || !strcmp(v, "1"))
        *out = SW_FA_ON;
    else if (!strcmp(v, "off") || !strcmp(v, "disabled") || !strcmp(v, "false") || !strcmp(v, "0"))
        *out = SW_FA_OFF;
    else if (!strcmp(v, "auto") || !strcmp(v, "-1"))
        *out = SW_FA_AUTO;
    else
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "%s: unknown value '%s' (want on, off or auto)", flag, v);
    return 0;
}

static int on_off(const char *flag, const char *v, bool *out, struct sw_err *e)
{
    enum sw_llamacpp_fa x;
    if (fa_value(flag, v, &x, NULL) || x == SW_FA_AUTO)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: unknown value '%s' (want on or off)",
                         flag, v);
    *out = x == SW_FA_ON;
    return 0;
}

static int copy_path(const char *flag, const char *v, char *dst, size_t n, struct sw_err *e)
{
    size_t l = strlen(v);
    if (l == 0 || l >= n)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: bad path", flag);
    memcpy(dst, v, l + 1);
    return 0;
}

/* --spec-type: a comma-separated list of common_speculative_type names (common/speculative.cpp
 * common_speculative_type_from_name_map); n-gram lengths are their defaults (common/common.h). */
static int spec_type(struct sw_llamacpp_args *a, const char *t, struct sw_err *e)
{
    int64_t ng = 0;
    if (!strcmp(t, "none"))
        return 0;
    if (!strcmp(t, "draft-mtp") || !strcmp(t, "draft-eagle3") || !strcmp(t, "draft-dflash") ||
        !strcmp(t, "draft-dspark")) {
        a->spec_rs = true;
        a->spec_draft = true;
        warn(a, "--spec-type %s: the draft/MTP context and its own KV lines are not modelled", t);
        return 0;
    }
    if (!strcmp(t, "draft-simple")) {
        a->spec_draft = true; /* the draft model's context is priced with -md */
        return 0;
    }
    if (!strcmp(t, "ngram-simple") || !strcmp(t, "ngram-map-k") || !strcmp(t, "ngram-map-k4v"))
        ng = 48; /* common_params_speculative_ngram_map::size_m */
    else if (!strcmp(t, "ngram-mod"))
        ng = 64; /* common_params_speculative_ngram_mod::n_max */
    else if (!strcmp(t, "ngram-cache"))
        ng = 8;
    else
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "--spec-type: unknown type '%s'", t);
    if (ng > a->spec_ngram_max)
        a->spec_ngram_max = ng;
    return 0;
}

static int spec_types(struct sw_llamacpp_args *a, const char *v, struct sw_err *e)
{
    char t[64];
    while (*v) {
        size_t l = strcspn(v, ",");
        if (l >= sizeof(t))
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "--spec-type: bad list '%s'", v);
        memcpy(t, v, l);
        t[l] = '\0';
        if (l) {
            int rc = spec_type(a, t, e);
            if (rc)
                return rc;
        }
        v += l;
        if (*v == ',')
            v++;
    }
    return 0;
}

int sw_llamacpp_args_parse(struct sw_llamacpp_args *a, int argc, const char *const *argv,
                           struct sw_err *e)
{
    static const char *const M[] = {"-m", "--model", NULL};
    static const char *const C[] = {"-c", "--ctx-size", NULL};
    static const char *const NP[] = {"-np", "--parallel", NULL};
    static const char *const KVU[] = {"-kvu", "--kv-unified", NULL};
    static const char *const NKVU[] = {"-no-kvu", "--no-kv-unified", NULL};
    static const char *const CTK[] = {"-ctk", "--cache-type-k", NULL};
    static const char *const CTV[] = {"-ctv", "--cache-type-v", NULL};
    static const char *const FA[] = {"-fa", "--flash-attn", NULL};
    static const char *const B[] = {"-b", "--batch-size", NULL};
    static const char *const UB[] = {"-ub", "--ubatch-size", NULL};
    static const char *const NGL[] = {"-ngl", "--gpu-layers", "--n-gpu-layers", NULL};
    static const char *const MM[] = {"-mm", "--mmproj", NULL};
    static const char *const MD[] = {"-md", "--model-draft", "--spec-draft-model", NULL};
    static const char *const CTKD[] = {"-ctkd", "--spec-draft-type-k", "--cache-type-k-draft",
                                       NULL};
    static const char *const CTVD[] = {"-ctvd", "--spec-draft-type-v", "--cache-type-v-draft",
                                       NULL};
    static const char *const NGLD[] = {"-ngld", "--spec-draft-ngl", "--gpu-layers-draft",
                                       "--n-gpu-layers-draft", NULL};
    static const char *const NKVO[] = {"-nkvo", "--no-kv-offload", NULL};
    static const char *const KVO[] = {"-kvo", "--kv-offload", NULL};
    static const char *const EMB[] = {"--embedding", "--embeddings", NULL};
    static const char *const FIT[] = {"-fit", "--fit", NULL};
    static const char *const LM[] = {"-lm", "--load-mode", NULL};
    int i = 0;
    int rc = 0;

    if (argc > 0 && argv[0] && argv[0][0] != '-')
        i = 1; /* the program name */
    for (; i < argc; i++) {
        const char *f = argv[i];
        const char *v = NULL;
        bool takes = false;
        char flagbuf[64];

        /* --flag=value */
        const char *eq = f[0] == '-' && f[1] == '-' ? strchr(f, '=') : NULL;
        if (eq && (size_t)(eq - f) < sizeof(flagbuf)) {
            memcpy(flagbuf, f, (size_t)(eq - f));
            flagbuf[eq - f] = '\0';
            f = flagbuf;
            v = eq + 1;
        }

#define NEXT()                                                                                     \
    do {                                                                                           \
        takes = true;                                                                              \
        if (!v) {                                                                                  \
            if (i + 1 >= argc)                                                                     \
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: expects a value", f);          \
            v = argv[++i];                                                                         \
        }                                                                                          \
    } while (0)

        if (is(f, M)) {
            NEXT();
            rc = copy_path(f, v, a->model, sizeof(a->model), e);
        } else if (is(f, C)) {
            NEXT();
            rc = int_value(f, v, 0, &a->n_ctx, e);
            a->n_ctx_zero = !rc && a->n_ctx == 0;
        } else if (is(f, NP)) {
            NEXT();
            rc = int_value(f, v, -2147483647, &a->n_parallel, e);
            if (!rc && a->n_parallel == 0)
                rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                               "%s: 0 is not a valid number of slots (-1 = auto)", f);
        } else if (is(f, KVU)) {
            a->kv_unified = true;
            a->kv_unified_set = true;
        } else if (is(f, NKVU)) {
            a->kv_unified = false;
            a->kv_unified_set = true;
        } else if (!strcmp(f, "--kv-unified-per-slot")) {
            NEXT();
            rc = int_value(f, v, 0, &a->kv_unified_per_slot, e);
        } else if (is(f, CTK) || is(f, CTV)) {
            NEXT();
            rc = cache_type_value(f, v, is(f, CTK) ? &a->type_k : &a->type_v, e);
        } else if (is(f, FA)) {
            NEXT();
            rc = fa_value(f, v, &a->flash_attn, e);
        } else if (!strcmp(f, "--swa-full")) {
            a->swa_full = true;
        } else if (is(f, B)) {
            NEXT();
            rc = int_value(f, v, 1, &a->n_batch, e);
        } else if (is(f, UB)) {
            NEXT();
            rc = int_value(f, v, 1, &a->n_ubatch, e);
        } else if (is(f, NGL)) {
            NEXT();
            rc = layers_value(f, v, &a->n_gpu_layers, e);
        } else if (is(f, MM)) {
            NEXT();
            rc = copy_path(f, v, a->mmproj, sizeof(a->mmproj), e);
            /* priced by the plan (sw_llamacpp_plan_projector), from its file or declared */
        } else if (is(f, MD)) {
            NEXT();
            rc = copy_path(f, v, a->draft, sizeof(a->draft), e);
            /* -md alone enables no speculative type (common_speculative_n_max stays 0), but the
             * server loads the draft model and its context all the same (server_context::load_model
             * has_draft); priced by sw_llamacpp_plan_draft */
        } else if (is(f, CTKD) || is(f, CTVD)) {
            NEXT();
            rc = cache_type_value(f, v, is(f, CTKD) ? &a->draft_type_k : &a->draft_type_v, e);
        } else if (is(f, NGLD)) {
            NEXT();
            rc = layers_value(f, v, &a->draft_n_gpu_layers, e);
        } else if (!strcmp(f, "--spec-type")) {
            NEXT();
            rc = spec_types(a, v, e);
        } else if (!strcmp(f, "--spec-draft-n-max")) {
            NEXT();
            rc = int_value(f, v, 0, &a->spec_draft_n_max, e);
        } else if (!strcmp(f, "--spec-ngram-mod-n-max") ||
                   !strcmp(f, "--spec-ngram-simple-size-m") ||
                   !strcmp(f, "--spec-ngram-map-k-size-m") ||
                   !strcmp(f, "--spec-ngram-map-k4v-size-m") || !strcmp(f, "--spec-ngram-size-m")) {
            NEXT();
            int64_t x;
            rc = int_value(f, v, 0, &x, e);
            if (!rc)
                warn(a, "%s: the n-gram draft length is taken at its default", f);
        } else if (!strcmp(f, "--draft") || !strcmp(f, "--draft-n") || !strcmp(f, "--draft-max") ||
                   !strcmp(f, "--draft-min") || !strcmp(f, "--draft-n-min")) {
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                             "%s: removed in this llama-server (use --spec-draft-n-max)", f);
        } else if (is(f, NKVO)) {
            a->no_kv_offload = true;
        } else if (is(f, KVO)) {
            a->no_kv_offload = false;
        } else if (is(f, EMB)) {
            a->embedding = true;
        } else if (is(f, FIT)) {
            NEXT();
            rc = on_off(f, v, &a->fit, e);
        } else if (!strcmp(f, "--no-mmap") || !strcmp(f, "--mlock") || !strcmp(f, "-dio") ||
                   !strcmp(f, "--direct-io")) {
            a->mmap = false; /* load_mode none / mlock / dio: tensors are copied into buffers */
        } else if (!strcmp(f, "--mmap") || !strcmp(f, "-ndio") || !strcmp(f, "--no-direct-io")) {
            a->mmap = true;
        } else if (is(f, LM)) {
            NEXT();
            if (!strcmp(v, "auto") || !strcmp(v, "mmap") || !strcmp(v, "mmap+mlock"))
                a->mmap = true;
            else if (!strcmp(v, "none") || !strcmp(v, "mlock") || !strcmp(v, "dio"))
                a->mmap = false;
            else
                rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: invalid value '%s'", f, v);
        } else {
            const struct flagdef *d = NULL;
            for (size_t k = 0; k < SW_ARRAY_LEN(others); k++)
                if (!strcmp(others[k].name, f)) {
                    d = &others[k];
                    break;
                }
            if (!d)
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                                 "%s: not a flag of the pinned llama-server (80fb11a)", f);
            if (d->value)
                NEXT();
            if (d->cls == F_WARN)
                warn(a, "%s: not modelled by slipway's llama.cpp law", f);
        }
        if (rc)
            return rc;
        if (v && !takes)
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: takes no value", f);
#undef NEXT
    }
    /* common_speculative_n_max: draft lengths depend on --spec-draft-n-max wherever it appeared */
    a->spec_n_max = a->spec_ngram_max;
    if (a->spec_draft && a->spec_draft_n_max > a->spec_n_max)
        a->spec_n_max = a->spec_draft_n_max;
    if (!a->model[0])
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "no model: llama-server needs -m FILE.gguf");
    return 0;
}
