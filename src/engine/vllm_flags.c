/*
 * engine/vllm_flags: vLLM's command line as one flag table (memory.h "Engine command lines as
 * flag tables"): each flag's spellings (dashes or underscores, `--flag=value` or `--flag value`,
 * -tp/-pp/-dcp/-pcp/-q short forms), the reader that fills the law's options (struct
 * sw_vllm_opts) or what the line says beyond them (struct sw_engine_argv), and how the adapter
 * renders it from a fleet endpoint (vllm_render.c), in the order it renders them. Flags that
 * change no memory figure are accepted and listed as not modelled; a malformed value of a
 * modelled flag is an error that names the flag.
 *
 * What it does not do: plan (vllm_argv.c), render the command's program and model (vllm_render.c),
 * or validate flags vLLM would refuse for other reasons.
 */
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/vllm.h>

#include "vllm_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

static struct sw_vllm_opts *opts(void *t)
{
    return t;
}

/* A whole number as vLLM reads one, bounded by the row's arg: 1, > 0; 1024, 1..1024 ranks. */
static int read_int(const struct sw_flag *f, void *t, const char *flag, const char *v,
                    struct sw_err *e)
{
    int64_t n = 0;
    int rc = parse_int(flag, v, &n, e);
    if (!rc && f->arg == 1024 && (n < 1 || n > 1024))
        rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "%s must be 1..1024 (got %s)", flag, v);
    else if (!rc && f->arg == 1 && n <= 0)
        rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "%s must be > 0", flag);
    if (!rc)
        sw_flag_put(f, t, n);
    return rc;
}

static int read_max_model_len(const struct sw_flag *f, void *t, const char *flag, const char *v,
                              struct sw_err *e)
{
    int64_t n = 0;
    int rc = parse_int(flag, v, &n, e);
    if (!rc && n == -1)
        rc = sw_err_at(e, SW_EUNSUPPORTED, "<argv>", 0, 0,
                       "--max-model-len -1 (auto-fit) is not modelled: give a length");
    else if (!rc && n <= 0)
        rc = sw_err_at(e, SW_ERANGE, "<argv>", 0, 0, "--max-model-len must be > 0");
    opts(t)->max_model_len = n;
    return rc;
}

static int read_utilization(const struct sw_flag *f, void *t, const char *flag, const char *v,
                            struct sw_err *e)
{
    double d = 0;
    int rc = 0;
    if (sw_parse_double(v, &d, NULL) || d <= 0 || d > 1)
        rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                       "--gpu-memory-utilization must be in (0, 1] (got %s)", v);
    opts(t)->gpu_memory_utilization = d;
    return rc;
}

static int read_mamba_mode(const struct sw_flag *f, void *t, const char *flag, const char *v,
                           struct sw_err *e)
{
    if (!strcmp(v, "none"))
        opts(t)->mamba_cache_mode = SW_MAMBA_NONE;
    else if (!strcmp(v, "align"))
        opts(t)->mamba_cache_mode = SW_MAMBA_ALIGN;
    else if (!strcmp(v, "all"))
        opts(t)->mamba_cache_mode = SW_MAMBA_ALL;
    else
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0,
                         "--mamba-cache-mode must be none, align or all (got %s)", v);
    return 0;
}

static int read_spec_config(const struct sw_flag *f, void *t, const char *flag, const char *v,
                            struct sw_err *e)
{
    struct sw_vllm_opts *o = t;
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

static int read_spec_model(const struct sw_flag *f, void *t, const char *flag, const char *v,
                           struct sw_err *e)
{
    int rc = sw_flag_copy(f, t, flag, v, e);
    if (!rc && !opts(t)->spec_method[0])
        snprintf(opts(t)->spec_method, sizeof(opts(t)->spec_method), "draft_model");
    return rc;
}

/* The revision of a Hub payload (a local path has none). */
static int write_revision(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                          struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = ((const struct sw__hf_render *)ctx)->ep;
    if (!ep->payload.repo.v || !ep->payload.revision.v || ep->payload.path.v)
        return 0;
    return sw_buf_puts(out, ep->payload.revision.v) ? SW_ENOMEM : 1;
}

/* spec_decode as vLLM's JSON: the method ("draft" is draft_model), the tokens, the draft's
 * directory as the engine sees it. */
static int write_spec_config(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                             struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = ((const struct sw__hf_render *)ctx)->ep;
    const struct sw_fleet_shape *s = &ep->shape;
    char draft[4096];
    int rc = 0;
    if (!s->spec_method.v)
        return 0;
    json_t *j = json_object();
    const char *m = !strcmp(s->spec_method.v, "draft") ? "draft_model" : s->spec_method.v;
    sw_json_set_str(j, "method", m);
    if (s->spec_tokens.set)
        sw_json_set_int(j, "num_speculative_tokens", (int64_t)s->spec_tokens.v);
    if (ep->payload.draft.v) {
        rc = ep->payload.draft.v[0] == '/' || ep->payload.draft.v[0] == '~'
                 ? sw__engine_path(ep, ep->payload.draft.v, &ep->payload.draft.at, draft,
                                   sizeof(draft), e)
                 : (snprintf(draft, sizeof(draft), "%s", ep->payload.draft.v), 0);
        if (rc) {
            json_decref(j);
            return rc;
        }
        sw_json_set_str(j, "model", draft);
    }
    char *txt = sw_json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!txt)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_buf_puts(out, txt) ? SW_ENOMEM : 1;
    sw_free(txt);
    return rc;
}

#define OPT(field)                                                                                 \
    .at = offsetof(struct sw_vllm_opts, field), .size = sizeof(((struct sw_vllm_opts *)0)->field)
#define LINE(field) .at = offsetof(struct sw_engine_argv, field)
#define FROM(field) .from = offsetof(struct sw_fleet_endpoint, field)
#define INT64       .value = true, .read = read_int, .type = SW_FLAG_I64
#define RANKS       .value = true, .read = read_int, .type = SW_FLAG_INT, .arg = 1024
#define DTYPE       .value = true, .read = sw_flag_copy, .type = SW_FLAG_CHARS
#define TEXT        .value = true, .read = sw_flag_text, .type = SW_FLAG_TEXT
#define U64(field)  .write = SW_FLAG_W_FLEET_U64, FROM(shape.field)
/* a switch the law does not model */
#define NOTED .bits = SW_FLAG_NOTE

static const struct sw_flag rows[] = {
    /* rendered, in this order, after `vllm serve MODEL` */
    {"--revision", .value = true, .bits = SW_FLAG_NOTE, .write = SW_FLAG_W_FN,
     .wfn = write_revision},
    {"--host", TEXT, LINE(host), .bits = SW_FLAG_LINE | SW_FLAG_NOTE, .write = SW_FLAG_W_FN,
     .wfn = sw__hf_write_host},
    {"--port", TEXT, LINE(port), .bits = SW_FLAG_LINE | SW_FLAG_NOTE, .write = SW_FLAG_W_FN,
     .wfn = sw__hf_write_port},
    {"--served-model-name", TEXT, LINE(served_name), .bits = SW_FLAG_LINE | SW_FLAG_NOTE,
     .write = SW_FLAG_W_FLEET_STR, FROM(alias)},
    {"--tensor-parallel-size|-tp", RANKS, OPT(tp), U64(tensor_parallel)},
    {"--pipeline-parallel-size|-pp", RANKS, OPT(pp), U64(pipeline_parallel)},
    {"--decode-context-parallel-size|-dcp", RANKS, OPT(dcp), U64(decode_context_parallel)},
    {"--max-model-len", .value = true, .read = read_max_model_len, .type = SW_FLAG_I64,
     OPT(max_model_len), U64(max_model_len)},
    {"--max-num-seqs", INT64, OPT(max_num_seqs), U64(seqs)},
    {"--max-num-batched-tokens", INT64, OPT(max_num_batched_tokens), U64(max_num_batched_tokens)},
    {"--kv-cache-dtype", DTYPE, OPT(kv_cache_dtype), .write = SW_FLAG_W_FLEET_STR,
     FROM(shape.kv_cache_dtype)},
    {"--kv-cache-memory-bytes|--kv-cache-memory", .value = true, .read = read_int,
     .type = SW_FLAG_U64, .arg = 1, OPT(kv_cache_memory_bytes), U64(kv_cache_bytes)},
    {"--gpu-memory-utilization", .value = true, .read = read_utilization, .type = SW_FLAG_F64,
     OPT(gpu_memory_utilization), .write = SW_FLAG_W_FLEET_F64, FROM(shape.gpu_memory_utilization)},
    {"--block-size", INT64, .arg = 1, OPT(block_size), U64(block_size)},
    {"--enable-prefix-caching", .read = sw_flag_set, .type = SW_FLAG_INT, .arg = 1,
     OPT(enable_prefix_caching), .write = SW_FLAG_W_FLEET_IS, FROM(shape.prefix_caching)},
    {"--no-enable-prefix-caching", .read = sw_flag_set, .type = SW_FLAG_INT, .arg = 0,
     OPT(enable_prefix_caching), .write = SW_FLAG_W_FLEET_IS, FROM(shape.prefix_caching)},
    {"--enforce-eager", .bits = SW_FLAG_NOTE, .arg = 1, .write = SW_FLAG_W_FLEET_IS,
     FROM(shape.enforce_eager)},
    {"--speculative-config", .value = true, .read = read_spec_config, .write = SW_FLAG_W_FN,
     .wfn = write_spec_config},

    /* read, never rendered */
    {"--model", TEXT, LINE(model_dir), .bits = SW_FLAG_LINE},
    {"--prefill-context-parallel-size|-pcp", RANKS, OPT(pcp)},
    {"--num-gpu-blocks-override", INT64, OPT(num_gpu_blocks_override)},
    {"--dtype", DTYPE, OPT(dtype)},
    {"--mamba-cache-dtype", DTYPE, OPT(mamba_cache_dtype)},
    {"--mamba-ssm-cache-dtype", DTYPE, OPT(mamba_ssm_cache_dtype)},
    {"--mamba-cache-mode", .value = true, .read = read_mamba_mode, .type = SW_FLAG_INT,
     OPT(mamba_cache_mode)},
    {"--num-speculative-tokens", INT64, OPT(num_speculative_tokens)},
    {"--speculative-model", .value = true, .read = read_spec_model, .type = SW_FLAG_CHARS,
     OPT(spec_model)},
    {"--disable-hybrid-kv-cache-manager", .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 1,
     OPT(disable_hybrid_kv_cache_manager)},
    /* vLLM's tool parser: "auto" tool choice works */
    {"--enable-auto-tool-choice", .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 1,
     LINE(auto_tool_choice), .bits = SW_FLAG_LINE | SW_FLAG_NOTE},
    {"--quantization|-q", .value = true, .bits = SW_FLAG_NOTE},
    {"--trust-remote-code", NOTED},
    {"--enable-expert-parallel", NOTED},
    {"--disable-custom-all-reduce", NOTED},
    {"--enable-chunked-prefill", NOTED},
    {"--no-enable-chunked-prefill", NOTED},
    {"--disable-log-requests", NOTED},
    {"--disable-log-stats", NOTED},
    {"--enable-log-requests", NOTED},
    {"--no-enable-flashinfer-autotune", NOTED},
    {"--async-scheduling", NOTED},
    {"--no-async-scheduling", NOTED},
    {"--enable-lora", NOTED},
    {"--skip-tokenizer-init", NOTED},
    {"--enable-sleep-mode", NOTED},
    {"--expert-precise-memory", NOTED},
    {"--headless", NOTED},
    {"--enable-eplb", NOTED},
    {"--enable-dbo", NOTED},
    {"--disable-cascade-attn", NOTED},
    {"--enable-return-routed-experts", NOTED},
    {"--enable-force-include-usage", NOTED},
    {"--enable-prompt-tokens-details", NOTED},
    {"--disable-frontend-multiprocessing", NOTED},
    {"--enable-mfu-metrics", NOTED},
};

int sw__hf_skip_python(int argc, const char *const *argv, int i)
{
    if (i < argc && (!strcmp(argv[i], "python") || !strncmp(argv[i], "python3", 7))) {
        i++;
        if (i + 1 < argc && !strcmp(argv[i], "-m"))
            i += 2;
    }
    return i;
}

/* "vllm serve", ".../vllm", "python[3] -m vllm.entrypoints.openai.api_server": before the flags */
static int skip_launcher(int argc, const char *const *argv)
{
    int i = 0;
    if (i < argc && (!strcmp(argv[i], "vllm") || strstr(argv[i], "/vllm")))
        i++;
    if (i < argc && !strcmp(argv[i], "serve"))
        i++;
    return sw__hf_skip_python(argc, argv, i);
}

/* `vllm serve DIR`: the first word that is not a flag is the model directory */
static int model_word(void *line, const char *word, struct sw_err *e)
{
    struct sw_engine_argv *l = line;
    if (l->model_dir)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "unexpected argument \"%s\"", word);
    l->model_dir = word;
    return 0;
}

const struct sw_flag_table sw_vllm_flags = {
    .rows = rows,
    .n_rows = SW_ARRAY_LEN(rows),
    .dialect = SW_FLAGS_ARGPARSE | SW_FLAGS_SWITCH_BOOL,
    .skip = skip_launcher,
    .positional = model_word,
};

int sw__hf_read(const struct sw_flag_table *t, int argc, char **argv, void *o,
                struct sw_engine_argv *line, char *ignored, size_t ignored_n, const char *usage,
                struct sw_err *e)
{
    memset(line, 0, sizeof(*line));
    int rc = sw_flags_parse(t, o, line, argc, (const char *const *)argv, ignored, ignored_n, e);
    if (!rc && !line->model_dir)
        rc = sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "no model: expected %s", usage);
    return rc;
}

int sw__hf_model_dir(const struct sw_flag_table *t, int argc, char **argv, void *o,
                     const char **model_dir, char *ignored, size_t ignored_n, const char *usage,
                     struct sw_err *e)
{
    struct sw_engine_argv line;
    int rc = sw__hf_read(t, argc, argv, o, &line, ignored, ignored_n, usage, e);
    *model_dir = line.model_dir;
    return rc;
}

#define USAGE "`vllm serve MODEL_DIR [flags]` or --model DIR"

int sw_vllm_read_argv(int argc, char **argv, struct sw_vllm_opts *o, struct sw_engine_argv *line,
                      char *ignored, size_t ignored_n, struct sw_err *e)
{
    return sw__hf_read(&sw_vllm_flags, argc, argv, o, line, ignored, ignored_n, USAGE, e);
}

int sw_vllm_parse_argv(int argc, char **argv, struct sw_vllm_opts *o, const char **model_dir,
                       char *ignored, size_t ignored_n, struct sw_err *e)
{
    return sw__hf_model_dir(&sw_vllm_flags, argc, argv, o, model_dir, ignored, ignored_n, USAGE, e);
}
