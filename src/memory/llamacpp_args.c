/*
 * memory/llamacpp_args: llama-server's command line, parsed the way the pinned llama.cpp parses it
 * (common/arg.cpp common_params_parser_init with LLAMA_EXAMPLE_SERVER, defaults from
 * common/common.h), for the flags that decide memory, as one flag table (memory.h): the rows the
 * adapter also renders (SW_LLAMACPP_RENDERED), the rows only read, and every other llama-server
 * flag known by name so its value can be skipped; the ones that could move memory and are not
 * modelled get a warning, the rest (sampling, HTTP, logging) are accepted silently.
 *
 * What it does not do: read LLAMA_ARG_* environment variables (the engine adapter renders flags),
 * or check that files exist.
 */
#include <slipway/memory.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static struct sw_llamacpp_args *args(void *t)
{
    return t;
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

static int64_t *i64_at(const struct sw_flag *f, void *t)
{
    return (int64_t *)((char *)t + f->at);
}

/* A whole number of at least the row's arg. */
static int read_int(const struct sw_flag *f, void *t, const char *flag, const char *v,
                    struct sw_err *e)
{
    return int_value(flag, v, f->arg, i64_at(f, t), e);
}

/* -c: a context of 0 given explicitly disables fit's context reduction */
static int read_ctx(const struct sw_flag *f, void *t, const char *flag, const char *v,
                    struct sw_err *e)
{
    int rc = int_value(flag, v, 0, &args(t)->n_ctx, e);
    args(t)->n_ctx_zero = !rc && args(t)->n_ctx == 0;
    return rc;
}

static int read_slots(const struct sw_flag *f, void *t, const char *flag, const char *v,
                      struct sw_err *e)
{
    int rc = int_value(flag, v, -2147483647, &args(t)->n_parallel, e);
    if (!rc && args(t)->n_parallel == 0)
        rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                       "%s: 0 is not a valid number of slots (-1 = auto)", flag);
    return rc;
}

static int read_unified(const struct sw_flag *f, void *t, const char *flag, const char *v,
                        struct sw_err *e)
{
    args(t)->kv_unified = f->arg != 0;
    args(t)->kv_unified_set = true;
    return 0;
}

/* -ctk/-ctv/-ctkd/-ctvd: a cache type llama-server accepts */
static int read_cache(const struct sw_flag *f, void *t, const char *flag, const char *v,
                      struct sw_err *e)
{
    int type = sw_kv_type_from_name(v);
    if (type < 0)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "%s: unsupported cache type '%s' (allowed: f32, f16, bf16, q8_0, q4_0, "
                         "q4_1, iq4_nl, q5_0, q5_1)",
                         flag, v);
    *(int *)((char *)t + f->at) = type;
    return 0;
}

/* -ngl/-ngld: auto (-1), all (-2) or a count */
static int read_layers(const struct sw_flag *f, void *t, const char *flag, const char *v,
                       struct sw_err *e)
{
    if (!strcmp(v, "auto")) {
        *i64_at(f, t) = -1;
        return 0;
    }
    if (!strcmp(v, "all")) {
        *i64_at(f, t) = -2;
        return 0;
    }
    return int_value(flag, v, -2147483647, i64_at(f, t), e);
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

static int read_fa(const struct sw_flag *f, void *t, const char *flag, const char *v,
                   struct sw_err *e)
{
    return fa_value(flag, v, &args(t)->flash_attn, e);
}

/* -fit on|off */
static int read_onoff(const struct sw_flag *f, void *t, const char *flag, const char *v,
                      struct sw_err *e)
{
    enum sw_llamacpp_fa x;
    if (fa_value(flag, v, &x, NULL) || x == SW_FA_AUTO)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: unknown value '%s' (want on or off)",
                         flag, v);
    *(bool *)((char *)t + f->at) = x == SW_FA_ON;
    return 0;
}

static int read_path(const struct sw_flag *f, void *t, const char *flag, const char *v,
                     struct sw_err *e)
{
    size_t l = strlen(v);
    if (l == 0 || l >= f->size)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: bad path", flag);
    memcpy((char *)t + f->at, v, l + 1);
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

static int read_spec_types(const struct sw_flag *f, void *t, const char *flag, const char *v,
                           struct sw_err *e)
{
    char type[64];
    while (*v) {
        size_t l = strcspn(v, ",");
        if (l >= sizeof(type))
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "--spec-type: bad list '%s'", v);
        memcpy(type, v, l);
        type[l] = '\0';
        if (l) {
            int rc = spec_type(args(t), type, e);
            if (rc)
                return rc;
        }
        v += l;
        if (*v == ',')
            v++;
    }
    return 0;
}

/* An n-gram draft length: read, and taken at its default (common/common.h) all the same. */
static int read_ngram(const struct sw_flag *f, void *t, const char *flag, const char *v,
                      struct sw_err *e)
{
    int64_t x;
    int rc = int_value(flag, v, 0, &x, e);
    if (!rc)
        warn(args(t), "%s: the n-gram draft length is taken at its default", flag);
    return rc;
}

static int read_removed(const struct sw_flag *f, void *t, const char *flag, const char *v,
                        struct sw_err *e)
{
    return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                     "%s: removed in this llama-server (use --spec-draft-n-max)", flag);
}

/* -lm: load_mode none / mlock / dio copy tensors into buffers; the mmap modes map them */
static int read_load_mode(const struct sw_flag *f, void *t, const char *flag, const char *v,
                          struct sw_err *e)
{
    if (!strcmp(v, "auto") || !strcmp(v, "mmap") || !strcmp(v, "mmap+mlock"))
        args(t)->mmap = true;
    else if (!strcmp(v, "none") || !strcmp(v, "mlock") || !strcmp(v, "dio"))
        args(t)->mmap = false;
    else
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: invalid value '%s'", flag, v);
    return 0;
}

static int read_warn(const struct sw_flag *f, void *t, const char *flag, const char *v,
                     struct sw_err *e)
{
    warn(args(t), "%s: not modelled by slipway's llama.cpp law", flag);
    return 0;
}

/* The readers' kinds, as the rows name them. */
#define RD_path     .value = true, .read = read_path, .type = SW_FLAG_CHARS
#define RD_text     .value = true, .read = sw_flag_text, .type = SW_FLAG_TEXT
#define RD_ctx      .value = true, .read = read_ctx, .type = SW_FLAG_I64
#define RD_slots    .value = true, .read = read_slots, .type = SW_FLAG_I64
#define RD_unified  .read = read_unified, .type = SW_FLAG_BOOL, .arg = 1
#define RD_split    .read = read_unified, .type = SW_FLAG_BOOL, .arg = 0
#define RD_cache    .value = true, .read = read_cache, .type = SW_FLAG_INT
#define RD_fa       .value = true, .read = read_fa, .type = SW_FLAG_INT
#define RD_min0     .value = true, .read = read_int, .type = SW_FLAG_I64, .arg = 0
#define RD_min1     .value = true, .read = read_int, .type = SW_FLAG_I64, .arg = 1
#define RD_on       .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 1
#define RD_off      .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 0
#define RD_layers   .value = true, .read = read_layers, .type = SW_FLAG_I64
#define RD_onoff    .value = true, .read = read_onoff, .type = SW_FLAG_BOOL
#define RD_loadmode .value = true, .read = read_load_mode, .type = SW_FLAG_BOOL
#define RD_spec     .value = true, .read = read_spec_types
#define RD_ngram    .value = true, .read = read_ngram
#define RD_removed  .read = read_removed

#define AT(field)                                                                                  \
    .at = offsetof(struct sw_llamacpp_args, field),                                                \
    .size = sizeof(((struct sw_llamacpp_args *)0)->field)
/* A rendered row (memory.h); a row's default; a known flag that takes a value (skipped) or is a
 * switch; a known flag that may move memory, warned about. */
#define ROW(n, rd, field, d, wr, src)                                                              \
    {.names = (n), RD_##rd, AT(field), .dflt = (d), .has_dflt = (d) != SW_FLAG_NODEF},
#define DEFAULT(d) .dflt = (d), .has_dflt = true
#define VALUE      .value = true
#define SWITCH     .value = false
#define WARNED     .read = read_warn

static const struct sw_flag rows[] = {
    SW_LLAMACPP_RENDERED(ROW)
    /* read, never rendered */
    {"--kv-unified-per-slot", RD_min0, AT(kv_unified_per_slot)},
    /* common_params_speculative_draft: cache_type_k/v f16, n_gpu_layers -1 (auto) */
    {"-ctkd|--spec-draft-type-k|--cache-type-k-draft", RD_cache, AT(draft_type_k),
     DEFAULT(SW_KV_F16)},
    {"-ctvd|--spec-draft-type-v|--cache-type-v-draft", RD_cache, AT(draft_type_v),
     DEFAULT(SW_KV_F16)},
    {"-ngld|--spec-draft-ngl|--gpu-layers-draft|--n-gpu-layers-draft", RD_layers,
     AT(draft_n_gpu_layers), DEFAULT(-1)},
    {"--spec-type", RD_spec},
    /* common_params_speculative_draft::n_max */
    {"--spec-draft-n-max", RD_min0, AT(spec_draft_n_max), DEFAULT(3)},
    {"--spec-ngram-mod-n-max|--spec-ngram-simple-size-m|--spec-ngram-map-k-size-m|"
     "--spec-ngram-map-k4v-size-m|--spec-ngram-size-m",
     RD_ngram},
    {"--draft|--draft-n|--draft-max|--draft-min|--draft-n-min", RD_removed},
    {"-nkvo|--no-kv-offload", RD_on, AT(no_kv_offload)},
    {"-kvo|--kv-offload", RD_off, AT(no_kv_offload)},
    {"--embedding|--embeddings", RD_on, AT(embedding)},
    /* common_params::fit_params */
    {"-fit|--fit", RD_onoff, AT(fit), DEFAULT(1)},
    /* load_mode none / mlock / dio: tensors are copied into buffers; auto = mmap */
    {"--no-mmap|--mlock|-dio|--direct-io", RD_off, AT(mmap)},
    {"--mmap|-ndio|--no-direct-io", RD_on, AT(mmap), DEFAULT(1)},
    {"-lm|--load-mode", RD_loadmode, AT(mmap)},
    {"--metrics", RD_on, AT(metrics)},

    /* known llama-server flags that slipway does not interpret (common/arg.cpp, server
     * examples); may change memory, not modelled: */
    {"-ot|--override-tensor", VALUE, WARNED},
    {"-cmoe|--cpu-moe", WARNED},
    {"-ncmoe|--n-cpu-moe", VALUE, WARNED},
    {"-ncffn|--n-cpu-ffn", VALUE, WARNED},
    {"-sm|--split-mode", VALUE, WARNED},
    {"-ts|--tensor-split", VALUE, WARNED},
    {"-mg|--main-gpu", VALUE, WARNED},
    {"-dev|--device", VALUE, WARNED},
    {"--rpc", VALUE, WARNED},
    {"-fitt|--fit-target", VALUE, WARNED},
    {"-fitc|--fit-ctx", VALUE, WARNED},
    {"--override-kv", VALUE, WARNED},
    {"--pooling", VALUE, WARNED},
    {"--rerank|--reranking", WARNED},
    {"-bs|--backend-sampling", WARNED},
    {"--no-host", WARNED},
    {"--repack", WARNED},
    {"-nr|--no-repack", WARNED},
    {"--control-vector", VALUE, WARNED},
    {"--control-vector-scaled", VALUE, WARNED},
    {"--lora-init-without-apply", WARNED},
    {"-lzm|--lazy-mode", VALUE, WARNED},
    {"-cram|--cache-ram", VALUE, WARNED},
    {"-devd|--spec-draft-device|--device-draft", VALUE, WARNED},
    {"-hf|-hfr|--hf-repo", VALUE, WARNED},
    {"-hff|--hf-file", VALUE, WARNED},
    {"-mu|--model-url", VALUE, WARNED},
    {"-dr|--docker-repo", VALUE, WARNED},
    {"-mmu|--mmproj-url", VALUE, WARNED},
    {"--mmproj-offload", WARNED},
    {"--no-mmproj-offload", WARNED},
    {"--numa", VALUE, WARNED},
    {"--rope-scaling", VALUE},
    {"--rope-scale", VALUE},
    {"--rope-freq-base", VALUE},
    {"--rope-freq-scale", VALUE},
    {"--yarn-orig-ctx", VALUE},
    {"--yarn-ext-factor", VALUE},
    {"--yarn-attn-factor", VALUE},
    {"--yarn-beta-slow", VALUE},
    {"--yarn-beta-fast", VALUE},
    {"--embd-gemma-default", WARNED},
    {"--fim-qwen-1.5b-default", WARNED},
    {"--fim-qwen-3b-default", WARNED},
    {"--fim-qwen-7b-default", WARNED},
    {"--fim-qwen-7b-spec", WARNED},
    {"--fim-qwen-14b-spec", WARNED},
    {"--fim-qwen-30b-default", WARNED},
    {"--gpt-oss-20b-default", WARNED},
    {"--gpt-oss-120b-default", WARNED},
    {"--vision-gemma-4b-default", WARNED},
    {"--vision-gemma-12b-default", WARNED},
    {"--spec-default", WARNED},
    {"--spec-draft-hf|-hfd|-hfrd|--hf-repo-draft", VALUE, WARNED},
    {"--spec-draft-n-min", VALUE},
    {"--models-dir", VALUE, WARNED},
    {"--models-preset", VALUE, WARNED},
    {"--models-max", VALUE, WARNED},
    {"--check-tensors", SWITCH},
    {"--image-min-tokens", VALUE},
    {"--image-max-tokens", VALUE},
    {"--mtmd-batch-max-tokens", VALUE, WARNED},
    {"--no-mmproj", SWITCH},
    {"--no-mmproj-auto", SWITCH},
    {"--mmproj-auto", SWITCH},
    /* no memory effect: */
    {"-tb|--threads-batch", VALUE},
    {"-C|--cpu-mask", VALUE},
    {"-Cr|--cpu-range", VALUE},
    {"--cpu-strict", VALUE},
    {"--prio", VALUE},
    {"--poll", VALUE},
    {"-Cb|--cpu-mask-batch", VALUE},
    {"-Crb|--cpu-range-batch", VALUE},
    {"--cpu-strict-batch", VALUE},
    {"--prio-batch", VALUE},
    {"--poll-batch", VALUE},
    {"-lcs|--lookup-cache-static", VALUE},
    {"-lcd|--lookup-cache-dynamic", VALUE},
    {"-n|--predict|--n-predict", VALUE},
    {"--keep", VALUE},
    {"-ctxcp|--ctx-checkpoints|--swa-checkpoints", VALUE},
    {"-cms|--checkpoint-min-step", VALUE},
    {"--cache-idle-slots", SWITCH},
    {"--no-cache-idle-slots", SWITCH},
    {"--context-shift", SWITCH},
    {"--no-context-shift", SWITCH},
    {"--perf", SWITCH},
    {"--no-perf", SWITCH},
    {"-e|--escape", SWITCH},
    {"--no-escape", SWITCH},
    {"-r|--reverse-prompt", VALUE},
    {"-sp|--special", SWITCH},
    {"--warmup", SWITCH},
    {"--no-warmup", SWITCH},
    {"--spm-infill", SWITCH},
    {"--samplers", VALUE},
    {"-s|--seed", VALUE},
    {"--sampler-seq|--sampling-seq", VALUE},
    {"--ignore-eos", SWITCH},
    {"--temp|--temperature", VALUE},
    {"--top-k", VALUE},
    {"--top-p", VALUE},
    {"--min-p", VALUE},
    {"--top-nsigma|--top-n-sigma", VALUE},
    {"--xtc-probability", VALUE},
    {"--xtc-threshold", VALUE},
    {"--typical|--typical-p", VALUE},
    {"--repeat-last-n", VALUE},
    {"--repeat-penalty", VALUE},
    {"--presence-penalty", VALUE},
    {"--frequency-penalty", VALUE},
    {"--dry-multiplier", VALUE},
    {"--dry-base", VALUE},
    {"--dry-allowed-length", VALUE},
    {"--dry-penalty-last-n", VALUE},
    {"--dry-sequence-breaker", VALUE},
    {"--adaptive-target", VALUE},
    {"--adaptive-decay", VALUE},
    {"--dynatemp-range", VALUE},
    {"--dynatemp-exp", VALUE},
    {"--mirostat", VALUE},
    {"--mirostat-lr", VALUE},
    {"--mirostat-ent", VALUE},
    {"-l|--logit-bias", VALUE},
    {"--grammar", VALUE},
    {"--grammar-file", VALUE},
    {"-j|--json-schema", VALUE},
    {"-jf|--json-schema-file", VALUE},
    {"-dt|--defrag-thold", VALUE},
    {"-cb|--cont-batching", SWITCH},
    {"-nocb|--no-cont-batching", SWITCH},
    {"--video-fps", VALUE},
    {"--video-timestamp-interval", VALUE},
    {"--video-ffmpeg-dir", VALUE},
    {"--list-devices", SWITCH},
    {"--op-offload", SWITCH},
    {"--no-op-offload", SWITCH},
    {"--tags", VALUE},
    {"-hft|--hf-token", VALUE},
    {"--embd-normalize", VALUE},
    {"--reuse-port", SWITCH},
    {"--path", VALUE},
    {"--cors-origins", VALUE},
    {"--cors-methods", VALUE},
    {"--cors-headers", VALUE},
    {"--cors-credentials", SWITCH},
    {"--no-cors-credentials", SWITCH},
    {"--api-prefix", VALUE},
    {"--ui-config|--webui-config", VALUE},
    {"--ui-config-file|--webui-config-file", VALUE},
    {"--ui-mcp-proxy|--webui-mcp-proxy", SWITCH},
    {"--no-ui-mcp-proxy|--no-webui-mcp-proxy", SWITCH},
    {"--tools", VALUE},
    {"--tools-runtime", VALUE},
    {"--mcp-servers-config", VALUE},
    {"--mcp-servers-json", VALUE},
    {"-ag|--agent", SWITCH},
    {"-no-ag|--no-agent", SWITCH},
    {"--ui|--webui", SWITCH},
    {"--no-ui|--no-webui", SWITCH},
    {"--api-key", VALUE},
    {"--api-key-file", VALUE},
    {"--ssl-key-file", VALUE},
    {"--ssl-cert-file", VALUE},
    {"--chat-template-kwargs", VALUE},
    {"-to|--timeout", VALUE},
    {"--sse-ping-interval", VALUE},
    {"--threads-http", VALUE},
    {"--cache-prompt", SWITCH},
    {"--no-cache-prompt", SWITCH},
    {"--cache-reuse", VALUE},
    {"--props", SWITCH},
    {"--slots", SWITCH},
    {"--no-slots", SWITCH},
    {"--slot-save-path", VALUE},
    {"--media-path", VALUE},
    {"--models-autoload", SWITCH},
    {"--no-models-autoload", SWITCH},
    {"--jinja", SWITCH},
    {"--no-jinja", SWITCH},
    {"--reasoning-format", VALUE},
    {"-rea|--reasoning", VALUE},
    {"--reasoning-effort", VALUE},
    {"--reasoning-budget", VALUE},
    {"--reasoning-budget-message", VALUE},
    {"--reasoning-preserve", SWITCH},
    {"--no-reasoning-preserve", SWITCH},
    {"--chat-template", VALUE},
    {"--chat-template-file", VALUE},
    {"--skip-chat-parsing", SWITCH},
    {"--no-skip-chat-parsing", SWITCH},
    {"--prefill-assistant", SWITCH},
    {"--no-prefill-assistant", SWITCH},
    {"-sps|--slot-prompt-similarity", VALUE},
    {"--sleep-idle-seconds", VALUE},
    {"--log-disable", SWITCH},
    {"--log-file", VALUE},
    {"--log-prompts-dir", VALUE},
    {"--log-colors", VALUE},
    {"-v|--verbose|--log-verbose", SWITCH},
    {"--log-prefix", SWITCH},
    {"--no-log-prefix", SWITCH},
    {"--log-timestamps", SWITCH},
    {"--no-log-timestamps", SWITCH},
    {"--spec-draft-threads|-td|--threads-draft", VALUE},
    {"--spec-draft-threads-batch|-tbd|--threads-batch-draft", VALUE},
    {"--spec-draft-p-split|--draft-p-split", VALUE},
    {"--spec-draft-p-min|--draft-p-min", VALUE},
    {"--spec-draft-backend-sampling", SWITCH},
    {"--no-spec-draft-backend-sampling", SWITCH},
    {"--spec-synth-len", VALUE},
    {"--spec-synth-rates", VALUE},
    {"--spec-ngram-mod-n-min", VALUE},
    {"--spec-ngram-mod-n-match", VALUE},
    {"--spec-ngram-simple-size-n", VALUE},
    {"--spec-ngram-simple-min-hits", VALUE},
    {"--spec-ngram-map-k-size-n", VALUE},
    {"--spec-ngram-map-k-min-hits", VALUE},
    {"--spec-ngram-map-k4v-size-n", VALUE},
    {"--spec-ngram-map-k4v-min-hits", VALUE},
    {"--spec-ngram-size-n", VALUE},
    {"--spec-ngram-min-hits", VALUE},
    {"--version", SWITCH},
    {"-cl|--cache-list", SWITCH},
};

/* argv[0] is the program when it is not a flag */
static int skip_program(int argc, const char *const *argv)
{
    return argc > 0 && argv[0] && argv[0][0] != '-';
}

const struct sw_flag_table sw_llamacpp_flags = {
    .rows = rows,
    .n_rows = SW_ARRAY_LEN(rows),
    .unknown = "not a flag of the pinned llama-server (80fb11a)",
    .skip = skip_program,
};

void sw_llamacpp_args_init(struct sw_llamacpp_args *a)
{
    memset(a, 0, sizeof(*a));
    sw_flags_defaults(&sw_llamacpp_flags, a);
}

int sw_llamacpp_args_parse(struct sw_llamacpp_args *a, int argc, const char *const *argv,
                           struct sw_err *e)
{
    int rc = sw_flags_parse(&sw_llamacpp_flags, a, NULL, argc, argv, NULL, 0, e);
    if (rc)
        return rc;
    /* common_speculative_n_max: draft lengths depend on --spec-draft-n-max wherever it appeared */
    a->spec_n_max = a->spec_ngram_max;
    if (a->spec_draft && a->spec_draft_n_max > a->spec_n_max)
        a->spec_n_max = a->spec_draft_n_max;
    if (!a->model[0])
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "no model: llama-server needs -m FILE.gguf");
    return 0;
}
