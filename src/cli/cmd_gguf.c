/*
 * slipway gguf inspect FILE [--json] [--tensors]
 *   What a GGUF holds: file facts, architecture summary, tensors by role and type with bytes,
 *   metadata (long arrays summarized). A file that is not a usable GGUF exits 2 with the reason.
 *   Only the header is read, so a file whose tensor data is absent (the header copied alone, a
 *   download cut inside the data) is shown, and said to be "header only".
 * slipway gguf synth --in X.gguf --vocab VOCAB.gguf --out Y.gguf [--ctx N] [--seed N] [--json]
 *   Turn a random-weight model from llama.cpp's test-llama-archs into one llama-server can chat
 *   with (see model/gguf_synth).
 */
#include "cli.h"

#include <slipway/gguf.h>

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

static const struct sw_opt inspect_opts[] = {
    {"tensors", 't', NULL, 0, "list every tensor (name, type, shape, bytes, role)", NULL},
    {0},
};

static const struct sw_opt synth_opts[] = {
    {"in", 'i', "MODEL.gguf", 0, "the random-weight model test-llama-archs wrote", NULL},
    {"vocab", 0, "VOCAB.gguf", 0, "the model whose vocabulary, tokenizer and template are grafted",
     NULL},
    {"out", 'o', "OUT.gguf", 0, "where the model is written", NULL},
    {"ctx", 'c', "N", 0, "the training context written (default 32768)", NULL},
    {"seed", 0, "N", 0, "the seed of the resized tensors' values", NULL},
    {"template", 0, "chatml|vocab", 0, "the chat template: ChatML, or the vocabulary model's",
     NULL},
    {"arch", 0, "ARCH", 0, "write the random base itself (gemma3; test-llama-archs cannot)", NULL},
    {"layers", 0, "N", 0, "(--arch) blocks (default 6)", NULL},
    {"embd", 0, "N", 0, "(--arch) embedding length", NULL},
    {"heads", 0, "N", 0, "(--arch) attention heads", NULL},
    {"kv-heads", 0, "N", 0, "(--arch) KV heads", NULL},
    {"head-dim", 0, "N", 0, "(--arch) head dimension", NULL},
    {"ff", 0, "N", 0, "(--arch) feed-forward length", NULL},
    {"swa", 0, "N", 0, "(--arch) sliding window (default 128)", NULL},
    {"swa-pattern", 0, "N", 0, "(--arch) every Nth layer full attention (default 6)", NULL},
    {0},
};

static const char *const inspect_examples[] = {
    "slipway gguf inspect model.gguf",
    "slipway gguf inspect model.gguf --tensors --json",
    NULL,
};

static const char *const synth_examples[] = {
    "slipway gguf synth --in llama-rand.gguf --vocab vocab-llama.gguf --out tiny.gguf --ctx 8192",
    "slipway gguf synth --arch gemma3 --vocab vocab-llama.gguf --out tiny-gemma3.gguf",
    NULL,
};

static const struct sw_cmd_spec spec_inspect = {
    .name = "gguf inspect",
    .summary = "metadata, tensors grouped by role with bytes, architecture summary",
    .synopsis = "FILE [--json] [--tensors]",
    .about = "A file that is not a usable GGUF exits 2 with the reason. Only the header is read:\n"
             "a file whose tensor data is absent (the header copied alone, a download cut inside\n"
             "the data) is shown and said to be \"header only\" (--json: \"header_only\": true).",
    .opts = inspect_opts,
    .max_args = 1,
    .examples = inspect_examples,
};

static const struct sw_cmd_spec spec_synth = {
    .name = "gguf synth",
    .summary = "synthesize a tiny chat-capable test model",
    .synopsis = "--in MODEL.gguf --vocab VOCAB.gguf --out OUT.gguf [--ctx N] [--seed N]\n"
                "    [--template chatml|vocab] [--json]\n"
                "--arch gemma3 [--layers N] [--embd N] [--heads N] [--kv-heads N] [--head-dim N]\n"
                "    [--ff N] [--swa N] [--swa-pattern N] --vocab VOCAB.gguf --out OUT.gguf ...",
    .about =
        "Graft a real vocabulary, tokenizer and chat template onto a random-weight model\n"
        "written by llama.cpp's test-llama-archs, resize the vocabulary-sized tensors, and set\n"
        "a long training context (default 32768). --arch gemma3 writes the random base itself\n"
        "(test-llama-archs cannot): 6 layers, window 128, every 6th layer full attention by\n"
        "default.",
    .opts = synth_opts,
    .max_args = 0,
    .examples = synth_examples,
};

static const struct sw_cmd_spec *const subs[] = {&spec_inspect, &spec_synth, NULL};

static const struct sw_opt no_opts[] = {{0}};

const struct sw_cmd_spec sw_spec_gguf = {
    .name = "gguf",
    .summary = "inspect a GGUF model file; synthesize tiny chat-capable test models",
    .opts = no_opts,
    .max_args = -1,
    .subs = subs,
};

/* A metadata value on one line for people: strings quoted and cut, arrays as [type x n] head. */
static void put_value(FILE *f, const struct sw_gguf_value *v, int width)
{
    char buf[64];
    switch (v->type) {
    case SW_GGUF_STRING: {
        uint64_t n = v->as.str.len;
        fputc('"', f);
        for (uint64_t i = 0; i < n && i < (uint64_t)width; i++) {
            unsigned char c = (unsigned char)v->as.str.s[i];
            if (c == '\n')
                fputs("\\n", f);
            else if (c == '\t')
                fputs("\\t", f);
            else if (c < 0x20 || c == 0x7f)
                fputc('.', f);
            else
                fputc(c, f);
        }
        fputc('"', f);
        if (n > (uint64_t)width)
            fprintf(f, "... (%s chars)", sw_fmt_count(n, buf, sizeof(buf)));
        return;
    }
    case SW_GGUF_ARRAY: {
        fprintf(f, "[%s x %s]", sw_gguf_type_name(v->as.arr.elem),
                sw_fmt_count(v->as.arr.n, buf, sizeof(buf)));
        uint64_t show = SW_MIN(v->as.arr.n, v->as.arr.elem == SW_GGUF_STRING ? 4u : 8u);
        for (uint64_t i = 0; i < show; i++) {
            struct sw_gguf_value e;
            sw_gguf_array_elem(v, i, &e);
            fputs(i ? ", " : " ", f);
            put_value(f, &e, 16);
        }
        if (v->as.arr.n > show)
            fputs(", ...", f);
        return;
    }
    case SW_GGUF_BOOL:
        fputs(v->as.b ? "true" : "false", f);
        return;
    case SW_GGUF_FLOAT32:
    case SW_GGUF_FLOAT64:
        fprintf(f, "%g", v->as.f);
        return;
    case SW_GGUF_UINT8:
    case SW_GGUF_UINT16:
    case SW_GGUF_UINT32:
    case SW_GGUF_UINT64:
        fprintf(f, "%" PRIu64, v->as.u);
        return;
    default:
        fprintf(f, "%" PRId64, v->as.i);
        return;
    }
}

static void put_arch_field(FILE *f, const struct sw_gguf *g, const char *label, const char *suffix)
{
    char key[256];
    const struct sw_gguf_kv *kv = NULL;
    if (!sw_gguf_arch_key(g, suffix, key, sizeof(key)))
        kv = sw_gguf_find(g, key);
    if (!kv)
        return;
    fprintf(f, "  %-22s ", label);
    put_value(f, &kv->val, 60);
    fputc('\n', f);
}

static void print_human(FILE *f, const struct sw_gguf *g, bool tensors)
{
    char a[64], b[64], c[64], d[64];
    fprintf(f,
            "%s: GGUF v%" PRIu32 ", %s, %s tensors, %s metadata keys, alignment %" PRIu64
            ", data at byte %s",
            g->path, g->version, sw_fmt_bytes(g->file_size, a, sizeof(a)),
            sw_fmt_count(g->n_tensors, b, sizeof(b)), sw_fmt_count(g->n_kv, c, sizeof(c)),
            g->alignment, sw_fmt_count(g->data_offset, d, sizeof(d)));
    if (g->n_splits > 1)
        fprintf(f, " (split set of %d files)", g->n_splits);
    if (g->header_only)
        fprintf(f, ", header only (the tensor data is not in the file)");
    fputc('\n', f);

    const char *arch = sw_gguf_arch(g);
    const char *name = NULL;
    sw_gguf_get_str(g, "general.name", &name);
    fprintf(f, "\narchitecture             %s%s%s%s\n", arch ? arch : "(none)", name ? "  \"" : "",
            name ? name : "", name ? "\"" : "");
    static const char *const fields[][2] = {
        {"blocks", "block_count"},
        {"context (training)", "context_length"},
        {"embedding", "embedding_length"},
        {"feed-forward", "feed_forward_length"},
        {"attention heads", "attention.head_count"},
        {"kv heads", "attention.head_count_kv"},
        {"key length", "attention.key_length"},
        {"value length", "attention.value_length"},
        {"sliding window", "attention.sliding_window"},
        {"experts", "expert_count"},
        {"experts used", "expert_used_count"},
        {"ssm state", "ssm.state_size"},
        {"ssm inner", "ssm.inner_size"},
        {"vocab size", "vocab_size"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(fields); i++)
        put_arch_field(f, g, fields[i][0], fields[i][1]);
    uint64_t ft;
    if (!sw_gguf_get_u64(g, "general.file_type", &ft)) {
        const char *n = sw_gguf_ftype_name(ft);
        fprintf(f, "  %-22s %s (%" PRIu64 ")\n", "file type", n ? n : "unknown", ft);
    }
    const struct sw_gguf_kv *tok = sw_gguf_find(g, "tokenizer.ggml.tokens");
    if (tok && tok->val.type == SW_GGUF_ARRAY)
        fprintf(f, "  %-22s %s tokens, chat template %s\n", "vocabulary",
                sw_fmt_count(tok->val.as.arr.n, a, sizeof(a)),
                sw_gguf_find(g, "tokenizer.chat_template") ? "yes" : "no");
    else
        fprintf(f, "  %-22s none\n", "vocabulary");
    fprintf(f, "  %-22s %s\n", "weights", sw_fmt_bytes(g->tensor_bytes, a, sizeof(a)));

    uint64_t cnt[SW_GGUF__NROLES], bytes[SW_GGUF__NROLES];
    sw_gguf_role_totals(g, cnt, bytes);
    fprintf(f, "\n%-24s %8s %14s %7s\n", "tensors by role", "count", "bytes", "share");
    for (int r = 0; r < SW_GGUF__NROLES; r++) {
        if (!cnt[r])
            continue;
        double share = g->tensor_bytes ? 100.0 * (double)bytes[r] / (double)g->tensor_bytes : 0;
        fprintf(f, "  %-22s %8s %14s %6.1f%%\n", sw_gguf_role_name((enum sw_gguf_role)r),
                sw_fmt_count(cnt[r], a, sizeof(a)), sw_fmt_bytes(bytes[r], b, sizeof(b)), share);
    }
    fprintf(f, "  %-22s %8s %14s\n", "total", sw_fmt_count(g->n_tensors, a, sizeof(a)),
            sw_fmt_bytes(g->tensor_bytes, b, sizeof(b)));

    fprintf(f, "\n%-24s %8s %14s\n", "tensors by type", "count", "bytes");
    for (size_t k = 0; k < sw_ggml_type_count_known(); k++) {
        const struct sw_ggml_type *ty = sw_ggml_type_at(k);
        uint64_t n, by;
        sw_gguf_type_totals(g, ty->id, &n, &by);
        if (n)
            fprintf(f, "  %-22s %8s %14s\n", ty->name, sw_fmt_count(n, a, sizeof(a)),
                    sw_fmt_bytes(by, b, sizeof(b)));
    }

    fprintf(f, "\nmetadata (%s keys)\n", sw_fmt_count(g->n_kv, a, sizeof(a)));
    for (uint64_t i = 0; i < g->n_kv; i++) {
        fprintf(f, "  %-44s %-7s ", g->kv[i].key.s, sw_gguf_type_name(g->kv[i].val.type));
        put_value(f, &g->kv[i].val, 60);
        fputc('\n', f);
    }

    if (!tensors)
        return;
    fprintf(f, "\ntensors\n");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const struct sw_gguf_tensor *t = &g->tensors[i];
        const struct sw_ggml_type *ty = sw_gguf_type(g, t->type);
        char shape[96];
        int n = 0;
        for (uint32_t k = 0; k < t->n_dims && n < (int)sizeof(shape); k++)
            n += snprintf(shape + n, sizeof(shape) - (size_t)n, "%s%" PRIu64, k ? " x " : "",
                          t->ne[k]);
        if (!t->n_dims)
            snprintf(shape, sizeof(shape), "scalar");
        fprintf(f, "  %-40s %-8s %-26s %12s  %s", t->name.s, ty ? ty->name : "?", shape,
                sw_fmt_bytes(t->nbytes, a, sizeof(a)),
                sw_gguf_role_name(sw_gguf_tensor_role(t->name.s)));
        if (g->n_splits > 1)
            fprintf(f, " part %d", t->split + 1);
        fputc('\n', f);
    }
}

static int cmd_inspect(const struct sw_args *a)
{
    bool json = a->json, tensors = sw_args_flag(a, "tensors");
    if (!a->npos)
        return sw_args_usage(a, "missing FILE");
    const char *path = a->pos[0];
    struct sw_gguf *g = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    const struct sw_gguf_read_opts ho = {.header_only = true};
    int rc = sw_gguf_open_opts(path, &ho, &g, &e);
    if (rc)
        return sw_cli_fail(&e, json);
    int code = SW_EXIT_OK;
    if (json) {
        json_t *j = sw_gguf_to_json(g, tensors);
        if (!j) {
            sw_err_set(&e, SW_ENOMEM, "out of memory building the JSON summary");
            code = sw_cli_fail(&e, json);
        } else {
            sw_json_print(stdout, j, true);
            json_decref(j);
        }
    } else {
        print_human(stdout, g, tensors);
    }
    sw_gguf_free(g);
    return code;
}

static int cmd_synth(const struct sw_args *args)
{
    struct sw_gguf_synth_opts o = {0};
    struct sw_gguf_base_opts base = {0};
    bool json = args->json;
    struct sw_err e;
    sw_err_clear(&e);
    o.in = sw_args_str(args, "in");
    o.vocab = sw_args_str(args, "vocab");
    o.out = sw_args_str(args, "out");
    base.arch = sw_args_str(args, "arch");
    const char *v = sw_args_str(args, "ctx");
    if (v && (sw_parse_count(v, &o.ctx, &e) || o.ctx == 0))
        return sw_args_usage(args, "--ctx: '%s' is not a positive count", v);
    v = sw_args_str(args, "seed");
    if (v && sw_parse_u64(v, &o.seed, &e))
        return sw_args_usage(args, "--seed: '%s' is not a number", v);
    v = sw_args_str(args, "template");
    if (v && !strcmp(v, "chatml"))
        o.force_chatml = true;
    else if (v && strcmp(v, "vocab"))
        return sw_args_usage(args, "--template is chatml or vocab (got '%s')", v);
    const struct {
        const char *name;
        uint32_t *field;
    } dims[] = {{"layers", &base.n_layer},    {"embd", &base.n_embd},
                {"heads", &base.n_head},      {"kv-heads", &base.n_head_kv},
                {"head-dim", &base.head_dim}, {"ff", &base.n_ff},
                {"swa", &base.swa},           {"swa-pattern", &base.swa_pattern}};
    for (size_t i = 0; i < SW_ARRAY_LEN(dims); i++) {
        uint64_t n;
        v = sw_args_str(args, dims[i].name);
        if (!v)
            continue;
        if (sw_parse_count(v, &n, &e) || n == 0 || n > UINT32_MAX)
            return sw_args_usage(args, "--%s: '%s' is not a positive count", dims[i].name, v);
        *dims[i].field = (uint32_t)n;
    }
    if (o.in && base.arch)
        return sw_args_usage(args, "--in and --arch exclude each other");
    if ((!o.in && !base.arch) || !o.vocab || !o.out)
        return sw_args_usage(args, "--in (or --arch), --vocab and --out are required");
    if (base.arch) {
        base.seed = o.seed;
        o.base = &base;
    }
    struct sw_gguf_synth_result r;
    int rc = sw_gguf_synth(&o, &r, &e);
    if (rc)
        return sw_cli_fail(&e, json);
    if (json) {
        json_t *j = sw_gguf_synth_result_json(&o, &r);
        if (!j) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            return sw_cli_fail(&e, json);
        }
        sw_json_print(stdout, j, true);
        json_decref(j);
        return SW_EXIT_OK;
    }
    char a[64], b[64], c[64], d[64];
    printf("%s: %s model, vocabulary %s -> %s tokens (%s tokenizer, chat template from %s), "
           "training context %s -> %s\n",
           o.out, r.arch, sw_fmt_count(r.n_vocab_old, a, sizeof(a)),
           sw_fmt_count(r.n_vocab_new, b, sizeof(b)), r.tokenizer, r.template_source,
           sw_fmt_count(r.ctx_old, c, sizeof(c)), sw_fmt_count(r.ctx_new, d, sizeof(d)));
    printf("  resized:");
    for (size_t i = 0; i < r.n_resized && i < SW_ARRAY_LEN(r.resized); i++)
        printf(" %s", r.resized[i]);
    printf("\n  %s tensors, weights %s, file %s\n", sw_fmt_count(r.n_tensors, a, sizeof(a)),
           sw_fmt_bytes(r.weight_bytes, b, sizeof(b)), sw_fmt_bytes(r.out_bytes, c, sizeof(c)));
    return SW_EXIT_OK;
}

int sw_cmd_gguf(int argc, char **argv)
{
    const struct sw_cmd_spec *sub;
    struct sw_args a;
    int rc;
    if (!sw_args_parse_sub(&sw_spec_gguf, argc, argv, &sub, &a, &rc))
        return rc;
    return sub == &spec_inspect ? cmd_inspect(&a) : cmd_synth(&a);
}
