/*
 * engine/sglang_flags: SGLang's command line as one flag table (memory.h "Engine command lines as
 * flag tables"): each flag's spellings (dashes or underscores, `--flag=value` or `--flag value`),
 * the reader that fills the law's options (struct sw_sglang_opts) or what the line says beyond
 * them (struct sw_engine_argv), and how the adapter renders it from a fleet endpoint
 * (vllm_render.c), in the order it renders them. Flags that change no memory figure are accepted
 * and listed as not modelled; the server's address and name are no memory flags and are not.
 *
 * What it does not do: plan (sglang.c), render the command's program (vllm_render.c), or the
 * router / PD-disaggregation processes' flags.
 */
#include <slipway/engine_sglang.h>
#include <slipway/fleet.h>
#include <slipway/sglang.h>

#include "vllm_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A count (no sign) into the row's int or int64 field. */
static int read_count(const struct sw_flag *f, void *t, const char *flag, const char *v,
                      struct sw_err *e)
{
    uint64_t u;
    if (sw_parse_count(v, &u, NULL) || u > (uint64_t)INT64_MAX)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: \"%s\" is not a whole number", flag, v);
    sw_flag_put(f, t, (int64_t)u);
    return 0;
}

/* A number >= 0; with the row's arg, a fraction in (0, 1) (--mem-fraction-static). */
static int read_number(const struct sw_flag *f, void *t, const char *flag, const char *v,
                       struct sw_err *e)
{
    double *d = (double *)((char *)t + f->at);
    if (sw_parse_double(v, d, NULL) || *d < 0)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: \"%s\" is not a number", flag, v);
    if (f->arg && (*d <= 0 || *d >= 1))
        return sw_err_at(e, SW_ERANGE, "<argv>", 0, 0,
                         "--mem-fraction-static must be in (0, 1) (got %s)", v);
    return 0;
}

static int write_model(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                       struct sw_err *e)
{
    return sw_buf_puts(out, ((const struct sw__hf_render *)ctx)->model) ? SW_ENOMEM : 1;
}

/* spec_decode.method as SGLang's algorithm: mtp is NEXTN, a draft model STANDALONE */
static int write_algorithm(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                           struct sw_err *e)
{
    const char *m = ((const struct sw__hf_render *)ctx)->ep->shape.spec_method.v;
    if (!m)
        return 0;
    const char *a = !strcmp(m, "mtp")      ? "NEXTN"
                    : !strcmp(m, "eagle")  ? "EAGLE"
                    : !strcmp(m, "eagle3") ? "EAGLE3"
                    : !strcmp(m, "ngram")  ? "NGRAM"
                                           : "STANDALONE";
    return sw_buf_puts(out, a) ? SW_ENOMEM : 1;
}

/* spec_decode.tokens, with its algorithm only */
static int write_draft_tokens(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                              struct sw_err *e)
{
    const struct sw_fleet_shape *s = &((const struct sw__hf_render *)ctx)->ep->shape;
    if (!s->spec_method.v || !s->spec_tokens.set)
        return 0;
    return sw_buf_printf(out, "%llu", (unsigned long long)s->spec_tokens.v) ? SW_ENOMEM : 1;
}

#define OPT(field)                                                                                 \
    .at = offsetof(struct sw_sglang_opts, field),                                                  \
    .size = sizeof(((struct sw_sglang_opts *)0)->field)
#define LINE(field) .at = offsetof(struct sw_engine_argv, field), .bits = SW_FLAG_LINE
#define FROM(field) .from = offsetof(struct sw_fleet_endpoint, field)
#define U64(field)  .write = SW_FLAG_W_FLEET_U64, FROM(shape.field)
#define COUNT       .value = true, .read = read_count, .type = SW_FLAG_I64
#define RANKS       .value = true, .read = read_count, .type = SW_FLAG_INT
#define DTYPE       .value = true, .read = sw_flag_clip, .type = SW_FLAG_CHARS
#define TEXT        .value = true, .read = sw_flag_text, .type = SW_FLAG_TEXT
#define FN(fn)      .write = SW_FLAG_W_FN, .wfn = (fn)
/* a switch the law does not model */
#define NOTED .bits = SW_FLAG_NOTE

static const struct sw_flag rows[] = {
    /* rendered, in this order, after the program */
    {"--model-path|--model", TEXT, LINE(model_dir), FN(write_model)},
    {"--host", TEXT, LINE(host), FN(sw__hf_write_host)},
    {"--port", TEXT, LINE(port), FN(sw__hf_write_port)},
    {"--served-model-name", TEXT, LINE(served_name), .write = SW_FLAG_W_FLEET_STR, FROM(alias)},
    {"--tp-size|--tp|--tensor-parallel-size", RANKS, OPT(tp), U64(tensor_parallel)},
    {"--pp-size|--pipeline-parallel-size", RANKS, OPT(pp), U64(pipeline_parallel)},
    {"--context-length", COUNT, OPT(context_length), U64(max_model_len)},
    {"--max-running-requests", COUNT, OPT(max_running_requests), U64(seqs)},
    {"--kv-cache-dtype", DTYPE, OPT(kv_cache_dtype), .write = SW_FLAG_W_FLEET_STR,
     FROM(shape.kv_cache_dtype)},
    {"--max-total-tokens", COUNT, OPT(max_total_tokens), U64(max_total_tokens)},
    {"--mem-fraction-static", .value = true, .read = read_number, .type = SW_FLAG_F64, .arg = 1,
     OPT(mem_fraction_static), .write = SW_FLAG_W_FLEET_F64, FROM(shape.mem_fraction_static)},
    {"--max-mamba-cache-size", COUNT, OPT(max_mamba_cache_size), U64(max_mamba_cache_size)},
    {"--speculative-algorithm", DTYPE, OPT(speculative_algorithm), FN(write_algorithm)},
    {"--speculative-num-draft-tokens", COUNT, OPT(spec_num_draft_tokens), FN(write_draft_tokens)},

    /* read, never rendered */
    {"--api-key", .value = true}, /* a secret: never rendered (render refuses an api_key) */
    {"--dp-size|--dp", RANKS, OPT(dp)},
    {"--dtype", DTYPE, OPT(dtype)},
    {"--mamba-ssm-dtype", DTYPE, OPT(mamba_ssm_dtype)},
    {"--mamba-full-memory-ratio", .value = true, .read = read_number, .type = SW_FLAG_F64,
     OPT(mamba_full_memory_ratio)},
    {"--page-size", COUNT, OPT(page_size)},
    {"--chunked-prefill-size", COUNT, OPT(chunked_prefill_size)},
    {"--cuda-graph-max-bs", COUNT, OPT(cuda_graph_max_bs)},
    {"--speculative-num-steps", COUNT, OPT(spec_num_steps)},
    {"--speculative-eagle-topk", COUNT, OPT(spec_eagle_topk)},
    {"--disable-radix-cache", .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 1,
     OPT(disable_radix_cache)},
    {"--enable-dp-attention", .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 1,
     OPT(enable_dp_attention)},
    /* SGLang serves /metrics only with it */
    {"--enable-metrics", .read = sw_flag_set, .type = SW_FLAG_BOOL, .arg = 1,
     .at = offsetof(struct sw_engine_argv, metrics), .bits = SW_FLAG_LINE | SW_FLAG_NOTE},
    {"--trust-remote-code", NOTED},
    {"--disable-cuda-graph", NOTED},
    {"--enable-torch-compile", NOTED},
    {"--skip-server-warmup", NOTED},
    {"--enable-mixed-chunk", NOTED},
    {"--disable-overlap-schedule", NOTED},
    {"--enable-memory-saver", NOTED},
    {"--disable-custom-all-reduce", NOTED},
    {"--enable-piecewise-cuda-graph", NOTED},
    {"--log-requests", NOTED},
    {"--enable-hierarchical-cache", NOTED},
    {"--disable-chunked-prefix-cache", NOTED},
};

/* "python[3] -m sglang.launch_server" or "sglang [serve]": before the flags */
static int skip_launcher(int argc, const char *const *argv)
{
    if (argc < 1 || strcmp(argv[0], "sglang"))
        return sw__hf_skip_python(argc, argv, 0);
    return argc > 1 && !strcmp(argv[1], "serve") ? 2 : 1;
}

const struct sw_flag_table sw_sglang_flags = {
    .rows = rows,
    .n_rows = SW_ARRAY_LEN(rows),
    .dialect = SW_FLAGS_ARGPARSE | SW_FLAGS_SWITCH_ANY | SW_FLAGS_NOTE_SWITCH,
    .skip = skip_launcher,
};

#define USAGE "python -m sglang.launch_server --model-path DIR"

int sw_sglang_read_argv(int argc, char **argv, struct sw_sglang_opts *o,
                        struct sw_engine_argv *line, char *ignored, size_t ignored_n,
                        struct sw_err *e)
{
    return sw__hf_read(&sw_sglang_flags, argc, argv, o, line, ignored, ignored_n, USAGE, e);
}

int sw_sglang_read_cmd(const struct sw_engine_cmd *c, struct sw_sglang_opts *o,
                       struct sw_engine_argv *line, struct sw_err *e)
{
    /* the endpoint's own binary is a program the launcher's words do not name */
    size_t skip = c->argc > 0 && strcmp(c->argv[0], "python3") && strcmp(c->argv[0], "python") &&
                  strcmp(c->argv[0], "sglang");
    return sw_sglang_read_argv((int)(c->argc - skip), c->argv + skip, o, line, NULL, 0, e);
}

int sw_sglang_parse_argv(int argc, char **argv, struct sw_sglang_opts *o, const char **model_dir,
                         char *ignored, size_t ignored_n, struct sw_err *e)
{
    return sw__hf_model_dir(&sw_sglang_flags, argc, argv, o, model_dir, ignored, ignored_n, USAGE,
                            e);
}
