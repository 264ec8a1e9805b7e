/*
 * slipway plan --engine llama.cpp [--json] [--arch DECL.json] [--gpu NAME=BYTES ...]
 *              [--host-memory BYTES] -- llama-server -m FILE.gguf [llama-server flags]
 * slipway plan [ENDPOINT...] [--fleet FILE] [--json]
 *
 *   Predict what llama-server prints at boot for that command line (memory/llamacpp) and show the
 *   memory budget per device. The GGUF header is read for the architecture and weight bytes; with
 *   --arch a declared architecture (slipway/arch.h, sw_arch_from_json) replaces the file, for a
 *   payload that is not on this machine. A fleet endpoint's `arch` may use llama.cpp's keys
 *   ({"arch": ...}) or config.json's (model_type, num_hidden_layers, ...: sw_arch_from_hf).
 *
 *   A fleet file plans every endpoint, a disabled one (enabled: false, kept for the record) too:
 *   its section says so and its verdict does not move the exit.
 *
 * Exit: 0 planned; 1 planned but it does not fit a declared device; 2 unusable input (bad flag or
 * value, unreadable model, an architecture or memory module slipway does not model).
 */
#include "cli.h"

#include <slipway/arch.h>
#include <slipway/engine.h>
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/vllm.h>

#include <string.h>

/* The options of the vLLM/SGLang law, read into struct sw_engine_plan_facts (law_facts). */
static const char *const law_opts[] = {"version",   "profile",       "gpu-memory",
                                       "weights",   "activation",    "non-torch",
                                       "cudagraph", "pre-load-free", "post-load-avail"};

static const struct sw_opt opts[] = {
    {"engine", 0, "ENGINE", 0, "llama.cpp, vllm or sglang: the law that plans the command line",
     NULL},
    {"arch", 0, "DECL.json", 0, "(llama.cpp) declare the architecture instead of reading the GGUF",
     NULL},
    {"gpu", 0, "NAME=BYTES", SW_OPT_REPEAT,
     "(llama.cpp) a GPU with this much free memory; layers follow -ngl", NULL},
    {"host-memory", 0, "BYTES", 0,
     "(llama.cpp) host memory of a CPU-only build (enables --fit's context cut)", NULL},
    {"version", 0, "V", 0, "(vllm) the engine's version: current, legacy, v0 or 0.N", NULL},
    {"profile", 0, "P.json", 0, "(vllm, sglang) a fork profile: its constants and arena", NULL},
    {"gpu-memory", 0, "BYTES", 0, "(vllm, sglang) the GPU's total memory", NULL},
    {"weights", 0, "BYTES", 0, "(vllm) the weights' bytes as loaded", NULL},
    {"activation", 0, "BYTES", 0, "(vllm) the profiled activation peak", NULL},
    {"non-torch", 0, "BYTES", 0, "(vllm) memory outside torch (NCCL, CUDA context)", NULL},
    {"cudagraph", 0, "BYTES", 0, "(vllm) the CUDA graphs' memory", NULL},
    {"pre-load-free", 0, "BYTES", 0, "(sglang) free memory before the weights load", NULL},
    {"post-load-avail", 0, "BYTES", 0, "(sglang) memory available after the weights load", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway plan --fleet examples/local.yaml",
    "slipway plan frank-primary frank-small --fleet examples/operator.yaml --json",
    "slipway plan --engine llama.cpp --gpu CUDA0=24GiB -- llama-server -m model.gguf -c 32768 "
    "-np 2 -ngl 99",
    "slipway plan --engine vllm --gpu-memory 32GiB --json -- vllm serve MODEL_DIR "
    "--max-model-len 65536",
    NULL,
};

const struct sw_cmd_spec sw_spec_plan = {
    .name = "plan",
    .summary = "predict an engine's boot (memory lines, budget per device) from its command line",
    .synopsis = "--engine llama.cpp [--json] [--arch DECL.json] [--gpu NAME=BYTES ...]\n"
                "    [--host-memory BYTES] -- llama-server -m FILE.gguf [llama-server flags]\n"
                "[ENDPOINT...] [--fleet FILE] [--json]\n"
                "--engine vllm|sglang [--json] [--version V] [--profile P.json]\n"
                "    [--gpu-memory B] [--weights B] [--activation B] [--non-torch B]\n"
                "    [--cudagraph B] [--pre-load-free B] [--post-load-avail B]\n"
                "    -- vllm serve MODEL_DIR [vLLM flags]\n"
                "     | python -m sglang.launch_server --model-path DIR [flags]",
    .about =
        "llama.cpp: predicts llama-server's boot lines (n_ctx, each llama_kv_cache line, the\n"
        "llama_memory_recurrent line, model/output/compute buffers) from its own flags and\n"
        "prints the memory budget per device; --json prints {\"report\": ..., \"budget\": ...,\n"
        "\"warnings\": [...]}.\n"
        "Without --engine, the fleet (--fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml)\n"
        "plans each endpoint (or each ENDPOINT) from the argv the engine adapter renders, with "
        "the\n"
        "endpoint's devices; the architecture comes from the GGUF when it is on this\n"
        "machine, else from the endpoint's `arch` when it is a llama.cpp declaration. A\n"
        "disabled endpoint (enabled: false) is planned too, marked so; its verdict does not\n"
        "move the exit.\n"
        "vLLM / SGLang: predicts vLLM's \"GPU KV cache size\" and \"Maximum concurrency\"\n"
        "lines (or SGLang's pool line) from MODEL_DIR/config.json (docs/vllm-law.md,\n"
        "docs/sglang-law.md).",
    .opts = opts,
    .max_args = -1,
    .command_line = true,
    .examples = examples,
    .fleet = true,
};

/* The human view of a vLLM/SGLang plan object: the lines the engine would print, the per-request
 * price, the fork's arena; warnings to `warn` (stderr for a single plan, stdout in a fleet's). */
static void print_vllm_sglang(const json_t *out, FILE *warn)
{
    const json_t *rep = json_object_get(out, "report");
    printf("%s (%s)\n", json_string_value(json_object_get(out, "engine")),
           json_string_value(json_object_get(rep, "engine_version")));
    json_t *lines = json_object_get(out, "lines");
    for (size_t k = 0; k < json_array_size(lines); k++)
        printf("  %s\n", json_string_value(json_array_get(lines, k)));
    json_t *bpr = json_object_get(rep, "blocks_per_request");
    if (json_is_integer(bpr))
        printf("  per request: %lld blocks of %lld tokens (%lld B pages x group of %lld)%s\n",
               (long long)json_integer_value(bpr),
               (long long)json_integer_value(json_object_get(rep, "block_size")),
               (long long)json_integer_value(json_object_get(rep, "page_bytes")),
               (long long)json_integer_value(json_object_get(rep, "group_size")),
               json_is_false(json_object_get(rep, "pool_sized")) ? "; pool sized at boot" : "");
    json_t *bpt = json_object_get(rep, "bytes_per_token");
    if (json_is_number(bpt))
        printf("  price of this geometry: %.1f B/token at max_model_len %lld\n",
               json_number_value(bpt),
               (long long)json_integer_value(json_object_get(rep, "max_model_len")));
    json_t *arena = json_object_get(out, "arena");
    if (arena)
        printf("  arena (%s): %.2f GiB / %lld slots\n",
               json_string_value(json_object_get(arena, "profile")),
               (double)json_integer_value(json_object_get(arena, "arena_bytes")) / SW_GIB,
               (long long)json_integer_value(json_object_get(arena, "slots")));
    const char *w = json_string_value(json_object_get(out, "warnings"));
    if (w)
        fprintf(warn, "%s%s\n", warn == stderr ? "slipway plan: " : "  note: ", w);
}

/* The facts of the vLLM/SGLang law from their options. 0, or the usage error's exit code (the
 * option named). */
static int law_facts(const struct sw_args *a, bool vllm, struct sw_engine_plan_facts *f)
{
    memset(f, 0, sizeof(*f));
    const struct {
        const char *name;
        uint64_t *dst;
    } bytes[] = {
        {"gpu-memory", &f->gpu_memory},
        {"weights", &f->weights},
        {"activation", &f->activation},
        {"non-torch", &f->non_torch},
        {"cudagraph", &f->cudagraph},
        {"pre-load-free", &f->pre_load_free},
        {"post-load-avail", &f->post_load_avail},
    };
    const char *v = sw_args_str(a, "version");
    /* SGLang's law has no version rule: the option is accepted and unused */
    if (v && vllm && sw_vllm_version_parse(v, &f->version))
        return sw_args_usage(a, "--version: \"%s\" is not current, legacy, v0 or 0.N", v);
    f->profile_path = sw_args_str(a, "profile");
    for (size_t k = 0; k < SW_ARRAY_LEN(bytes); k++) {
        v = sw_args_str(a, bytes[k].name);
        if (v && sw_parse_bytes(v, bytes[k].dst, NULL))
            return sw_args_usage(a, "--%s: \"%s\" is not a byte count (e.g. 32622MiB, 6.1e9)",
                                 bytes[k].name, v);
    }
    return 0;
}

/* vLLM / SGLang: the law lives in the library (engine/vllm_plan.c); this reads the facts and
 * dispatches. */
static int plan_vllm_sglang(const struct sw_args *a)
{
    bool json = a->json;
    const char *engine = sw_args_str(a, "engine");
    struct sw_engine_plan_facts facts;
    struct sw_err e;
    sw_err_clear(&e);
    if (a->npos)
        return sw_args_usage(a, "unexpected argument '%s' (the command line goes after --)",
                             a->pos[0]);
    if (a->fleet)
        return sw_args_usage(a, "--fleet goes with ENDPOINTs, not with --engine's command line");
    if (sw_args_flag(a, "arch") || sw_args_flag(a, "gpu") || sw_args_flag(a, "host-memory"))
        return sw_args_usage(a, "--arch, --gpu and --host-memory are llama.cpp's: vLLM and SGLang "
                                "take --gpu-memory, --weights ...");
    if (a->nrest < 1)
        return sw_args_usage(a, "give the engine's command line after --");
    int code = law_facts(a, !strcmp(engine, "vllm"), &facts);
    if (code)
        return code;
    json_t *out = NULL;
    if (sw_engine_plan_argv(engine, &facts, a->nrest, a->rest, &out, &e))
        return sw_cli_fail(&e, json);
    json_t *rep = json_object_get(out, "report");
    int rc = json_is_false(json_object_get(rep, "fits")) ? SW_EXIT_FAIL : SW_EXIT_OK;
    if (json)
        sw_json_print(stdout, out, true);
    else
        print_vllm_sglang(out, stderr);
    json_decref(out);
    return rc;
}

static const char *mib(uint64_t b, char *out, size_t n)
{
    snprintf(out, n, "%.2f", (double)b / 1024.0 / 1024.0);
    return out;
}

static void print_human(const struct sw_arch *a, const struct sw_llamacpp_plan *p,
                        const struct sw_llamacpp_args *args)
{
    char b[7][32];
    struct sw_buf lines;
    const struct sw_llamacpp_report *r = &p->report;

    printf("llama-server (llama.cpp 80fb11a): %s", a->name);
    if (a->model_name[0])
        printf(" \"%s\"", a->model_name);
    printf(", %u layers", a->n_layer);
    if (a->n_attn_layers != a->n_layer || a->n_recr_layers)
        printf(" (%u with KV, %u sliding-window, %u recurrent)", a->n_attn_layers, a->n_swa_layers,
               a->n_recr_layers);
    printf("\n  model: %s\n", args->model);
    printf("  n_ctx %u, n_ctx_seq %u, n_seq_max %u, kv_unified %s; %u slots of %u tokens; "
           "flash attention %s\n\n",
           r->n_ctx, r->n_ctx_seq, r->n_seq_max, r->kv_unified ? "true" : "false", p->n_slots,
           p->n_ctx_slot,
           p->flash_attn ? (args->flash_attn == SW_FA_AUTO ? "auto (on)" : "on") : "off");

    printf("predicted boot lines:\n");
    sw_buf_init(&lines, 1 << 20);
    if (sw_llamacpp_print_lines(r, &lines) == 0) {
        const char *s = sw_buf_cstr(&lines);
        while (*s) {
            const char *nl = strchr(s, '\n');
            size_t n = nl ? (size_t)(nl - s) : strlen(s);
            printf("  %.*s\n", (int)n, s);
            s += n + (nl ? 1 : 0);
        }
    }
    sw_buf_free(&lines);

    printf("\nbudget (MiB):\n");
    printf("  %-10s %12s %12s %12s %12s %10s %12s %12s\n", "device", "weights", "KV", "recurrent",
           "compute*", "output", "total", "free");
    uint64_t t[6] = {0};
    bool no_weights = p->report.model_bytes == 0;
    for (int d = 0; d < p->n_dev; d++) {
        const struct sw_llamacpp_device *x = &p->dev[d];
        char fr[48] = "-";
        if (x->memory && no_weights && x->kv) {
            snprintf(fr, sizeof(fr), "? (weights)"); /* a free figure without weights misleads */
        } else if (x->memory) {
            if (x->memory >= x->total)
                mib(x->memory - x->total, fr, sizeof(fr));
            else
                snprintf(fr, sizeof(fr), "-%s", mib(x->total - x->memory, b[6], sizeof(b[6])));
        }
        printf("  %-10s %12s %12s %12s %12s %10s %12s %12s\n", x->name, mib(x->weights, b[0], 32),
               mib(x->kv, b[1], 32), mib(x->recurrent, b[2], 32), mib(x->compute, b[3], 32),
               mib(x->output, b[4], 32), mib(x->total, b[5], 32), fr);
        t[0] += x->weights;
        t[1] += x->kv;
        t[2] += x->recurrent;
        t[3] += x->compute;
        t[4] += x->output;
        t[5] += x->total;
    }
    if (p->n_dev > 1)
        printf("  %-10s %12s %12s %12s %12s %10s %12s\n", "all", mib(t[0], b[0], 32),
               mib(t[1], b[1], 32), mib(t[2], b[2], 32), mib(t[3], b[3], 32), mib(t[4], b[4], 32),
               mib(t[5], b[5], 32));
    if (p->has_draft || p->has_projector) {
        /* the draft model and the projector, named as lines of the budget (in total above) */
        printf("  beside the main model (in total):\n");
        printf("  %-10s %14s %12s %14s %12s %18s\n", "device", "draft weights", "draft KV",
               "draft compute", "projector", "projector compute");
        for (int d = 0; d < p->n_dev; d++) {
            const struct sw_llamacpp_device *x = &p->dev[d];
            if (!x->draft_weights && !x->draft_kv && !x->draft_compute && !x->projector_weights &&
                !x->projector_compute)
                continue;
            printf("  %-10s %14s %12s %14s %12s %18s\n", x->name, mib(x->draft_weights, b[0], 32),
                   mib(x->draft_kv, b[1], 32), mib(x->draft_compute, b[2], 32),
                   mib(x->projector_weights, b[3], 32), mib(x->projector_compute, b[4], 32));
        }
        if (p->has_draft) {
            const struct sw_llamacpp_report *dr = &p->draft;
            printf("  draft (%s):", p->draft_from);
            for (uint32_t i = 0; i < dr->n_kv && i < SW_LLAMACPP_MAX_KV; i++)
                printf(" KV %u cells x %u layers, K %s + V %s;", dr->kv[i].cells, dr->kv[i].layers,
                       sw_kv_type_name(dr->kv[i].k_type) ? sw_kv_type_name(dr->kv[i].k_type) : "?",
                       sw_kv_type_name(dr->kv[i].v_type) ? sw_kv_type_name(dr->kv[i].v_type) : "?");
            if (dr->has_recurrent)
                printf(" recurrent %u cells;", dr->recurrent.cells);
            printf(" compute %s MiB (estimate)\n", mib(dr->compute_bytes, b[0], 32));
        }
        if (p->has_projector)
            printf("  projector (%s)\n", p->projector_from);
    }
    printf("  * compute is an estimate: %s\n", p->compute_method);
    if (p->n_warn) {
        printf("\nwarnings:\n");
        for (int i = 0; i < p->n_warn; i++)
            printf("  - %s\n", p->warn[i]);
    }
}

/* The budget with the non-KV cost the operator measured (a fleet fact, sw_plan_fact_budget): the
 * law's KV and recurrent state plus that figure, against the device and the endpoint's band. */
static void print_fact_budget(const struct sw_plan_view *v, const struct sw_plan_fact_budget *b)
{
    const double M = 1024.0 * 1024.0;
    const struct sw_plan_view_dev *d = b->dev;
    printf("\nwith the measured non-KV cost (fact %s", b->fact->name);
    if (b->fact->source)
        printf(": %s", b->fact->source);
    printf("):\n  %s: KV %.2f + recurrent %.2f + non-KV %.2f", d->law_name,
           (double)(int64_t)d->kv / M, (double)(int64_t)d->rec / M,
           (double)(int64_t)b->fact->q.value / M);
    if (b->draft > 0)
        printf(" + draft %.2f", (double)(int64_t)b->draft / M);
    printf(" = %.2f of %.2f MiB: %.2f MiB free", (double)(int64_t)d->used / M,
           (double)(int64_t)d->capacity / M, (double)(int64_t)d->free / M);
    if (b->band)
        printf(", %s the %.0f..%.0f MiB band", b->in_band ? "inside" : "OUTSIDE",
               (double)(int64_t)v->band_min / M, (double)(int64_t)v->band_max / M);
    printf("\n  (`slipway check` holds it against recorded boots and the calibrated budget)\n");
}

/* An endpoint the law could not plan: its error, and the exit it moves (vLLM, llama.cpp, SGLang
 * only: an engine without a fleet law is said, not failed). */
static void show_cannot(const struct sw_fleet_endpoint *ep, const struct sw_err *e, bool counts,
                        const char *mark, json_t *eps, int *rc)
{
    char buf[2048];
    if (*rc == SW_EXIT_OK && counts &&
        (ep->engine == SW_FLEET_VLLM || ep->engine == SW_FLEET_LLAMACPP ||
         ep->engine == SW_FLEET_SGLANG))
        *rc = sw_cli_exit_for(e->code);
    if (eps) {
        json_t *x = json_pack("{s:s,s:s,s:o}", "endpoint", ep->name, "engine",
                              sw_fleet_engine_name(ep->engine), "error", sw_err_to_json(e));
        if (x && !ep->enabled)
            sw_json_set_bool(x, "enabled", false);
        json_array_append_new(eps, x);
    } else
        printf("== %s (%s%s): cannot plan: %s\n\n", ep->name, sw_fleet_engine_name(ep->engine),
               mark, sw_err_format(e, buf, sizeof(buf)));
}

/* What was read of the model on its host (plan.h struct sw_plan_model_read), one line. */
static void print_model_read(const struct sw_plan_model_read *m)
{
    char a[64], b[64];
    if (!m->asked)
        return;
    if (!m->found) {
        printf("  model not read on %s: %s\n", m->host, m->why);
        return;
    }
    printf("  model read on %s (%s): %s%s, header %s; %s transferred over %u command%s, %u "
           "file%s from the cache\n",
           m->host, m->via, m->path, m->header_only ? " (header only)" : "",
           sw_fmt_bytes(m->header_bytes, b, sizeof(b)), sw_fmt_bytes(m->bytes, a, sizeof(a)),
           m->commands, m->commands == 1 ? "" : "s", m->files_cached,
           m->files_cached == 1 ? "" : "s");
}

/* A vLLM or SGLang endpoint: the engine's plan object, across nodes when the fleet says so. */
static void show_engine_plan(const struct sw_fleet_endpoint *ep, const struct sw_plan *pl,
                             bool counts, const char *mark, json_t *eps, int *rc)
{
    json_t *vo = pl->engine_plan;
    uint64_t nn = sw_fleet_endpoint_nodes(ep);
    if (nn > 1)
        sw_json_set_new(vo, "nodes",
                        json_pack("{s:I,s:I,s:I}", "count", (json_int_t)nn, "gpus_per_node",
                                  (json_int_t)ep->n_devices, "world",
                                  (json_int_t)(nn * ep->n_devices)));
    if (json_is_false(json_object_get(json_object_get(vo, "report"), "fits")) &&
        *rc == SW_EXIT_OK && counts)
        *rc = SW_EXIT_FAIL;
    if (eps) {
        if (!ep->enabled)
            sw_json_set_bool(vo, "enabled", false);
        json_array_append(eps, vo);
        return;
    }
    printf("== %s (%s%s, config from %s)\n", ep->name, sw_fleet_engine_name(ep->engine), mark,
           json_string_value(json_object_get(vo, "config")));
    print_vllm_sglang(vo, stdout);
    print_model_read(&pl->model_read);
    if (nn > 1)
        printf("  across %llu nodes x %zu GPUs (world %llu): the budget is per GPU, "
               "the same on every node\n",
               (unsigned long long)nn, ep->n_devices, (unsigned long long)(nn * ep->n_devices));
    printf("\n");
}

/* A llama.cpp endpoint: the law's breakdown, and the budget by its measured non-KV fact. */
static void show_llamacpp(const struct sw_fleet_endpoint *ep, const struct sw_plan_view *v,
                          bool counts, const char *mark, json_t *eps, int *rc)
{
    const struct sw_plan *pl = &v->plan;
    struct sw_plan_fact_budget fb;
    bool fits = sw_plan_llamacpp_fits(pl->llamacpp);
    bool have_fb = sw_plan_fact_budget(v, &fb) == 0;
    if (!fits && *rc == SW_EXIT_OK && counts)
        *rc = SW_EXIT_FAIL;
    if (have_fb && fb.band && !fb.in_band && *rc == SW_EXIT_OK && counts)
        *rc = SW_EXIT_FAIL;
    if (eps) {
        json_t *j = sw_llamacpp_plan_to_json(pl->llamacpp);
        if (j) {
            sw_json_set_str(j, "endpoint", ep->name);
            sw_json_set_str(j, "engine", "llama.cpp");
            sw_json_set_bool(j, "fits", fits);
            if (!ep->enabled)
                sw_json_set_bool(j, "enabled", false);
            sw_json_set_new(j, "arch", sw_arch_to_json(pl->arch));
            if (have_fb)
                sw_json_set_new(j, "measured_budget", sw_plan_fact_budget_json(v, &fb));
            if (pl->model_read.asked)
                sw_json_set_new(j, "model_read", sw_plan_model_read_json(&pl->model_read));
            json_array_append_new(eps, j);
        }
        return;
    }
    printf("== %s (llama.cpp%s)\n", ep->name, mark);
    print_model_read(&pl->model_read);
    print_human(pl->arch, pl->llamacpp, pl->args);
    if (have_fb)
        print_fact_budget(v, &fb);
    if (!fits)
        printf("\nDOES NOT FIT: a device's total exceeds its declared memory\n");
    printf("\n");
}

/* Is ep one of the n names asked for (all when n is 0)? */
static bool asked(const struct sw_fleet_endpoint *ep, const struct sw_cli_fleet *fl)
{
    for (int i = 0; i < fl->n_endpoints; i++)
        if (!strcmp(ep->name, fl->endpoints[i]))
            return true;
    return fl->n_endpoints == 0;
}

static int plan_fleet(const struct sw_cli_fleet *fl, bool json)
{
    const char *path = fl->path;
    bool only = fl->n_endpoints > 0;
    struct sw_fleet *f = NULL;
    struct sw_err e;
    json_t *out = json ? json_object() : NULL, *eps = json ? json_array() : NULL;
    int rc = SW_EXIT_OK, n = 0;

    sw_err_clear(&e);
    if (json && (!out || !eps)) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        rc = sw_cli_fail(&e, json);
        goto done;
    }
    if (sw_fleet_load(path, NULL, &f, &e)) {
        rc = sw_cli_fail(&e, json);
        goto done;
    }
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        struct sw_plan_view v;
        /* a disabled endpoint is planned for the record: marked, and its verdict does not move
         * the exit unless it is the one asked for */
        bool counts = only || ep->enabled;
        const char *mark = ep->enabled ? "" : ", disabled: kept for the record";
        if (!asked(ep, fl))
            continue;
        n++;
        sw_err_clear(&e);
        if (sw_plan_view(ep, &v, &e))
            show_cannot(ep, &e, counts, mark, eps, &rc);
        else if (!v.ok)
            show_cannot(ep, &v.err, counts, mark, eps, &rc);
        else if (ep->engine != SW_FLEET_LLAMACPP)
            show_engine_plan(ep, &v.plan, counts, mark, eps, &rc);
        else
            show_llamacpp(ep, &v, counts, mark, eps, &rc);
        sw_plan_view_free(&v);
    }
    if (json) {
        sw_json_set_str(out, "fleet", path);
        sw_json_set_new(out, "endpoints", eps);
        eps = NULL;
        sw_json_print(stdout, out, true);
    } else if (n == 0) {
        printf("%s: no endpoint\n", path);
    }
done:
    json_decref(out);
    json_decref(eps);
    sw_fleet_free(f);
    return rc;
}

int sw_cmd_plan(int argc, char **argv)
{
    bool json = false;
    const char *engine = NULL;
    struct sw_llamacpp_env env;
    struct sw_plan_cmdline pc;
    struct sw_err e;
    int rc = SW_EXIT_OK;

    sw_err_clear(&e);
    memset(&env, 0, sizeof(env));
    memset(&pc, 0, sizeof(pc));
    struct sw_args a;
    if (!sw_args_parse(&sw_spec_plan, argc, argv, &a, &rc))
        return rc;
    json = a.json;
    engine = sw_args_str(&a, "engine");
    if (engine && (!strcmp(engine, "vllm") || !strcmp(engine, "sglang")))
        return plan_vllm_sglang(&a);
    for (size_t k = 0; k < SW_ARRAY_LEN(law_opts); k++)
        if (sw_args_flag(&a, law_opts[k]))
            return sw_args_usage(&a, "--%s is for --engine vllm or sglang", law_opts[k]);
    for (int k = 0; k < sw_args_count(&a, "gpu"); k++)
        if (sw_plan_parse_gpu(sw_args_nth(&a, "gpu", k), &env, &e))
            return sw_cli_fail(&e, json);
    const char *hm = sw_args_str(&a, "host-memory");
    if (hm && sw_parse_bytes(hm, &env.host_memory, &e)) {
        sw_err_prefix(&e, "--host-memory");
        return sw_cli_fail(&e, json);
    }
    if (!engine && a.nrest)
        return sw_args_usage(&a, "--engine is required with a command line (llama.cpp, vllm, "
                                 "sglang)");
    if (!engine) {
        struct sw_cli_fleet fl;
        rc = sw_cli_fleet(&a, 0, 0, &fl);
        return rc ? rc : plan_fleet(&fl, json);
    }
    if (a.npos)
        return sw_args_usage(&a, "unexpected argument '%s' (the command line goes after --)",
                             a.pos[0]);
    if (a.fleet)
        return sw_args_usage(&a, "--fleet goes with ENDPOINTs, not with --engine's command line");
    if (strcmp(engine, "llama.cpp") && strcmp(engine, "llamacpp") && strcmp(engine, "llama-server"))
        return sw_args_usage(&a, "engine '%s' has no law here (llama.cpp, vllm, sglang)", engine);
    if (a.nrest < 1)
        return sw_args_usage(&a, "give llama-server's command line after --");

    if (sw_plan_llamacpp_cmdline(a.nrest, (const char *const *)a.rest, sw_args_str(&a, "arch"),
                                 &env, &pc, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    rc = pc.fits ? SW_EXIT_OK : SW_EXIT_FAIL;
    if (json) {
        json_t *j = sw_llamacpp_plan_to_json(pc.plan);
        if (j) {
            sw_json_set_new(j, "arch", sw_arch_to_json(pc.arch));
            sw_json_set_bool(j, "fits", pc.fits);
        }
        if (!j || sw_json_print(stdout, j, true)) {
            json_decref(j);
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, false);
            goto out;
        }
        json_decref(j);
    } else {
        print_human(pc.arch, pc.plan, pc.args);
        if (!pc.fits)
            printf("\nDOES NOT FIT: a device's total exceeds its declared memory\n");
    }
out:
    sw_plan_cmdline_free(&pc);
    return rc;
}
