/*
 * slipway sim ENDPOINT [--fleet FILE] [options]
 * slipway sim --engine llama.cpp|vllm [options] -- ENGINE ARGV...
 *
 *   An engine stand-in (slipway/sim.h): boots with the engine's boot-log lines carrying the law's
 *   numbers (on stderr), serves the engine's HTTP surface on --listen, and fails like the engine
 *   for a payload that does not resolve or a shape past the device memory. The plan is
 *   sw_plan_endpoint's (a fleet endpoint, or llama-server's verbatim command line) or the vLLM
 *   law's (sw_engine_plan_argv): the same laws as `slipway plan`.
 *
 * stdout: the bound port, first line (with --json: {"port": N, "url": "http://..."}).
 * Exit: the engine's status (0 after SIGTERM; llama-server and vLLM exit 1 on a boot failure);
 * 2 unusable input (a bad flag, a plan the law cannot make).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/sim.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"engine", 0, "ENGINE", 0,
     "llama.cpp, vllm or sglang: the engine whose command line follows --", NULL},
    {"listen", 0, "ADDR", 0,
     "HOST:PORT to serve on (default: the engine command line's --host/--port, else\n"
     "127.0.0.1:0: a free port)",
     NULL},
    {"ready-file", 0, "FILE", 0, "write the bound port there once bound", NULL},
    {"alias", 0, "NAME", 0, "the served model name (default: the engine's)", NULL},
    {"seed", 0, "N", 0, "the generated text's seed (default 0)", NULL},
    {"load-time", 0, "DURATION", 0,
     "how long the model loads (default: payload bytes / --load-rate)", NULL},
    {"load-rate", 0, "BYTES", 0, "bytes loaded per second (default 2GiB)", NULL},
    {"device-memory", 0, "BYTES", 0,
     "the device's memory (default: the fleet device's); a shape past it fails at boot", NULL},
    {"weights", 0, "BYTES", 0,
     "(vllm, sglang) the weights' bytes as loaded (sglang: with --device-memory, the free memory "
     "around the load)",
     NULL},
    {"max-tokens", 0, "N", 0, "tokens generated when a request gives no max_tokens (16)", NULL},
    {"reasoning", 0, NULL, 0, "the model thinks: the first half of a chat reply is reasoning",
     NULL},
    {"tools", 0, NULL, 0, "the model calls tools: a request declaring tools gets a call", NULL},
    {"runtime-oom-tokens", 0, "N", 0,
     "the first request with prompt + max_tokens past N kills the engine its way", NULL},
    {"prefill-us", 0, "US", 0, "timing: prefill cost per prompt token (default 50)", NULL},
    {"decode-base-us", 0, "US", 0, "timing: decode step base cost (default 2000)", NULL},
    {"decode-seq-us", 0, "US", 0, "timing: decode step cost per running sequence (default 200)",
     NULL},
    {"decode-kv-us", 0, "US", 0, "timing: decode step cost per 1000 KV tokens held (default 1)",
     NULL},
    {"ledger", 0, "PATH", 0,
     "(vllm fleet endpoint) the recorded boots the headroom model is fitted on: the boot fails "
     "where it predicts",
     NULL},
    {"no-ledger", 0, NULL, 0,
     "read and write no ledger (the default: no headroom fit; not with --ledger)", NULL},
    {"set", 0, "KEY=VALUE", SW_OPT_REPEAT,
     "a variant of ENDPOINT's shape, as `slipway check --set` (slots=3, max_model_len=241664)",
     NULL},
    {"max-batched-tokens", 0, "N", 0,
     "a step's token budget, prompts past it prefilled in chunks (default: the engine's:\n"
     "llama.cpp -b, vLLM --max-num-batched-tokens or 2048)",
     NULL},
    {"timing", 0, "FILE", 0,
     "the timing model from a fit file (`slipway sim fit --out`); a fleet endpoint's\n"
     "ENDPOINT.sim-fit.json beside the fleet file is read when present",
     NULL},
    {"firehose", 0, NULL, 0, "no pacing: every step takes no time (for measuring clients)", NULL},
    {"threads", 0, "N", 0,
     "N event loops (one per core) on the port (SO_REUSEPORT), each its own scheduler", NULL},
    {"emit-stamps", 0, NULL, 0,
     "every streamed chunk carries sim_emit_ns, its CLOCK_MONOTONIC write instant", NULL},
    {"spec-accept", 0, "R0,R1,...", 0,
     "speculative decoding: a draft of as many tokens per decode step, position k kept with\n"
     "probability Rk (non-increasing, 0..1): 1 + kept tokens a step, the engine's counters",
     NULL},
    {"fault", 0, "KIND[:ARG]", SW_OPT_REPEAT,
     "a fault set once the engine serves, as POST /sim/fault would: jitter:5ms, stall:2s,\n"
     "reset:TOKENS[xCOUNT], crash[:COUNT], http_500[:COUNT], dead_generation, hang,\n"
     "oom_next_request, exit0 (docs/sim.md, \"Faults\")",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway sim local --fleet examples/local.yaml",
    "slipway sim --engine llama.cpp --load-time 2s -- llama-server -m model.gguf -c 8192 -np 2",
    "slipway sim --engine vllm --device-memory 24GiB --weights 16GiB -- vllm serve MODEL_DIR "
    "--max-model-len 32768",
    "slipway sim --engine sglang -- python -m sglang.launch_server --model-path MODEL_DIR "
    "--context-length 32768 --max-total-tokens 200000 --enable-metrics",
    "slipway sim frank-primary --fleet examples/operator.yaml --ledger seed.sqlite --set "
    "max_model_len=245760",
    NULL,
};

const struct sw_cmd_spec sw_spec_sim = {
    .name = "sim",
    .summary = "an engine stand-in driven by the plan's law: boots, serves and fails like it",
    .synopsis = "ENDPOINT [--fleet FILE] [--listen ADDR] [--ready-file FILE] [--load-time D]\n"
                "    [--device-memory BYTES] [--seed N] [timing options]\n"
                "--engine llama.cpp|vllm|sglang [options] -- ENGINE ARGV...\n"
                "fit [ENDPOINT] [--fleet FILE] [--ledger DB] [--bench FILE] [--out FILE]",
    .about =
        "Boots like the engine: its boot-log lines with the law's numbers on stderr (`slipway\n"
        "bootlog parse` reads them, `bootlog diff` matches them to `plan`), a load time with\n"
        "/health 503 (llama.cpp), and the engine's failure and exit status for a payload that\n"
        "does not resolve or a shape past the device memory. Then serves /health, /v1/models,\n"
        "/v1/chat/completions, /v1/completions (SSE or not), /metrics, and llama.cpp's /props\n"
        "and /slots, with slots and an admission queue stepping on a timing model.\n"
        "The bound port is stdout's first line. SIGTERM stops it (exit 0).",
    .opts = opts,
    .max_args = 1,
    .command_line = true,
    .examples = examples,
    .fleet = true,
};

static int bytes_opt(const struct sw_args *a, const char *name, uint64_t *out)
{
    const char *v = sw_args_str(a, name);
    if (v && sw_parse_bytes(v, out, NULL))
        return sw_args_usage(a, "--%s: \"%s\" is not a byte count (e.g. 24GiB)", name, v);
    return 0;
}

static int double_opt(const struct sw_args *a, const char *name, double *out)
{
    const char *v = sw_args_str(a, name);
    if (v && (sw_parse_double(v, out, NULL) || *out < 0))
        return sw_args_usage(a, "--%s: \"%s\" is not a number of microseconds", name, v);
    return 0;
}

static int read_config(const struct sw_args *a, struct sw_sim_config *c)
{
    int code;
    const char *v;
    sw_sim_config_init(c);
    c->listen = sw_args_str(a, "listen");
    c->ready_file = sw_args_str(a, "ready-file");
    c->alias = sw_args_str(a, "alias");
    c->reasoning = sw_args_flag(a, "reasoning");
    c->announce_json = a->json;
    c->tools = sw_args_flag(a, "tools");
    v = sw_args_str(a, "seed");
    if (v && sw_parse_u64(v, &c->seed, NULL))
        return sw_args_usage(a, "--seed: \"%s\" is not a number", v);
    v = sw_args_str(a, "load-time");
    if (v && sw_parse_duration_ms(v, &c->load_ms, NULL))
        return sw_args_usage(a, "--load-time: \"%s\" is not a duration (e.g. 2s, 500ms)", v);
    v = sw_args_str(a, "max-tokens");
    if (v && (sw_parse_i64(v, &c->max_tokens_default, NULL) || c->max_tokens_default < 1))
        return sw_args_usage(a, "--max-tokens: \"%s\" is not a count >= 1", v);
    v = sw_args_str(a, "threads");
    int64_t th = 1;
    if (v && (sw_parse_i64(v, &th, NULL) || th < 1 || th > 256))
        return sw_args_usage(a, "--threads: \"%s\" is not a count in 1..256", v);
    c->threads = (int)th;
    v = sw_args_str(a, "max-batched-tokens");
    if (v && (sw_parse_i64(v, &c->batch_tokens, NULL) || c->batch_tokens < 1))
        return sw_args_usage(a, "--max-batched-tokens: \"%s\" is not a count >= 1", v);
    v = sw_args_str(a, "runtime-oom-tokens");
    if (v && (sw_parse_i64(v, &c->runtime_oom_tokens, NULL) || c->runtime_oom_tokens < 1))
        return sw_args_usage(a, "--runtime-oom-tokens: \"%s\" is not a count >= 1", v);
    v = sw_args_str(a, "spec-accept");
    if (v) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", v);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            double r = 0;
            if (c->n_spec >= SW_SIM_SPEC_MAX || sw_parse_double(t, &r, NULL) || !(r >= 0) ||
                r > 1 || (c->n_spec && r > c->spec_accept[c->n_spec - 1]))
                return sw_args_usage(a,
                                     "--spec-accept: \"%s\" is not up to %d rates in 0..1, each "
                                     "at most the one before",
                                     v, SW_SIM_SPEC_MAX);
            c->spec_accept[c->n_spec++] = r;
        }
        if (!c->n_spec)
            return sw_args_usage(a, "--spec-accept: no rate in \"%s\"", v);
    }
    int nf = sw_args_count(a, "fault");
    if (nf > SW_SIM_MAX_FAULTS)
        return sw_args_usage(a, "--fault: at most %d", SW_SIM_MAX_FAULTS);
    for (int i = 0; i < nf; i++) {
        struct sw_err e;
        char m[600];
        sw_err_clear(&e);
        if (sw_sim_fault_parse(sw_args_nth(a, "fault", i), &c->faults[i], &e))
            return sw_args_usage(a, "--%s", sw_err_format(&e, m, sizeof(m)));
    }
    c->n_faults = nf;
    c->firehose = sw_args_flag(a, "firehose");
    c->emit_stamps = sw_args_flag(a, "emit-stamps");
    v = sw_args_str(a, "timing");
    if (v) {
        struct sw_err e;
        sw_err_clear(&e);
        if (sw_sim_timing_load(v, &c->timing, &e))
            return sw_cli_fail(&e, a->json);
    }
    code = bytes_opt(a, "load-rate", &c->load_rate);
    if (!code)
        code = bytes_opt(a, "device-memory", &c->device_memory);
    if (!code)
        code = double_opt(a, "prefill-us", &c->timing.prefill_per_token_us);
    if (!code)
        code = double_opt(a, "decode-base-us", &c->timing.decode_base_us);
    if (!code)
        code = double_opt(a, "decode-seq-us", &c->timing.decode_per_seq_us);
    if (!code)
        code = double_opt(a, "decode-kv-us", &c->timing.decode_per_kv_us);
    return code;
}

/* Run a made sim (rc: its maker's; its error in e), free it: the engine's exit status. */
static int run(int rc, struct sw_sim *s, struct sw_err *e, bool json)
{
    int status = 1;
    if (rc)
        status = sw_cli_fail(e, json);
    else if (sw_sim_run(s, &status, e))
        status = sw_cli_fail(e, false);
    sw_sim_free(s);
    return status;
}

/* ---------------------------------------------------------------------------------------------
 * slipway sim fit
 */
static const struct sw_opt fit_opts[] = {
    {"endpoint", 0, "NAME", SW_OPT_REFUSE,
     "the endpoint goes first: slipway sim fit ENDPOINT [--fleet FILE]", NULL},
    {"ledger", 0, "PATH", 0, "read the endpoint's `slipway bench` runs from this ledger", NULL},
    {"no-ledger", 0, NULL, 0,
     "read and write no ledger (the default: fit --bench files or the fleet's figures)", NULL},
    {"bench", 0, "FILE", SW_OPT_REPEAT, "a `slipway bench --json` document (repeatable)", NULL},
    {"slots", 0, "N", 0, "the engine's slots (default: the highest concurrency measured)", NULL},
    {"max-batched-tokens", 0, "N", 0,
     "a step's token budget (default 2048: llama.cpp's -b; vLLM's max_num_batched_tokens)", NULL},
    {"out", 0, "FILE", 0,
     "write the fit there (default with a fleet and ENDPOINT: ENDPOINT.sim-fit.json beside\n"
     "the fleet file, which `slipway sim ENDPOINT` reads)",
     NULL},
    {0},
};

static const char *const fit_examples[] = {
    "slipway sim fit local --ledger fleet.ledger.sqlite --out local.sim-fit.json",
    "slipway sim fit frank-primary --fleet examples/operator.yaml",
    "slipway sim fit --bench run.json --json",
    NULL,
};

static const struct sw_cmd_spec spec_fit = {
    .name = "sim fit",
    .summary = "fit the sim's timing model to bench runs or the operator's figures",
    .synopsis = "[ENDPOINT] [--fleet FILE] [--ledger DB] [--bench FILE]... [--slots N]\n"
                "    [--out FILE] [--json]",
    .about = "Fits the timing model (decode step cost by batch and KV depth, prefill cost per\n"
             "token and by depth; docs/sim.md) so that the sim's scheduler shows what was\n"
             "measured: the closed-loop points of `slipway bench` runs (from the ledger or a\n"
             "--json file), or the endpoint's declared figures (measured: decode_..._ctxN,\n"
             "prefill_..._ctxN in tok/s). Prints each figure beside the sim's prediction.\n"
             "The fleet (--fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml when it is\n"
             "there) gives ENDPOINT's declared figures; without one, the ledger's runs alone.\n"
             "Exit 0 fitted, 1 no usable figure or the ledger could not be read, 2 bad input.",
    .opts = fit_opts,
    .max_args = 1,
    .examples = fit_examples,
    .fleet = true,
};

static void fit_print(const json_t *doc, const char *out)
{
    const json_t *t = json_object_get(doc, "timing");
    printf("timing model (%d figures, worst %.1f%%, rms %.1f%%):\n",
           (int)json_integer_value(json_object_get(doc, "figures")),
           json_number_value(json_object_get(doc, "max_err_pct")),
           json_number_value(json_object_get(doc, "rms_err_pct")));
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)t, k, v)
    {
        bool fitted = false;
        const json_t *f = json_object_get(doc, "fitted");
        for (size_t i = 0; i < json_array_size(f); i++)
            fitted |= !strcmp(json_string_value(json_array_get(f, i)), k);
        printf("  %-22s %12.3f%s\n", k, json_number_value(v), fitted ? "" : "  (kept)");
    }
    printf("%-28s %7s %4s %9s %9s %9s %9s\n", "source", "depth", "conc", "decode", "sim", "prefill",
           "sim");
    const json_t *a = json_object_get(doc, "points");
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *p = json_array_get(a, i);
        char f[4][32];
        const char *keys[4] = {"decode_tps", "decode_sim_tps", "prefill_tps", "prefill_sim_tps"};
        for (int j = 0; j < 4; j++) {
            const json_t *x = json_object_get(p, keys[j]);
            if (json_is_number(x))
                snprintf(f[j], sizeof(f[j]), "%.*f", j < 2 ? 2 : 1, json_number_value(x));
            else
                snprintf(f[j], sizeof(f[j]), "-");
        }
        printf("%-28.28s %7" PRId64 " %4d %9s %9s %9s %9s\n",
               json_string_value(json_object_get(p, "source")),
               (int64_t)json_integer_value(json_object_get(p, "depth")),
               (int)json_integer_value(json_object_get(p, "concurrency")), f[0], f[1], f[2], f[3]);
    }
    if (out)
        printf("written to %s\n", out);
}

static int sim_fit(int argc, char **argv)
{
    struct sw_args a;
    struct sw_err e;
    json_t *doc = NULL;
    int rc = 0;
    sw_err_clear(&e);
    if (!sw_args_parse(&spec_fit, argc, argv, &a, &rc))
        return rc;
    static const char *const uses[] = {"ledger", NULL};
    rc = sw_cli_no_ledger(&a, uses);
    if (rc)
        return rc;
    int nb = sw_args_count(&a, "bench");
    struct sw_cli_fleet fl = {0};
    /* a fleet only with an ENDPOINT (its figures); the ledger's and the files' runs need none */
    if (a.npos || a.fleet) {
        rc = sw_cli_fleet(&a, 0, SW_CLI_FLEET_OPTIONAL, &fl);
        if (rc)
            return rc;
    }
    struct sw_sim_fit_req q = {
        .fleet = fl.path,
        .endpoint = a.npos ? a.pos[0] : NULL,
        .ledger = sw_args_str(&a, "ledger"),
        .batch_tokens = 2048,
        .out = sw_args_str(&a, "out"),
    };
    const char *v = sw_args_str(&a, "slots");
    if (v && (sw_parse_i64(v, &q.slots, NULL) || q.slots < 1 || q.slots > 4096))
        return sw_args_usage(&a, "--slots: \"%s\" is not a count in 1..4096", v);
    v = sw_args_str(&a, "max-batched-tokens");
    if (v && (sw_parse_i64(v, &q.batch_tokens, NULL) || q.batch_tokens < 1))
        return sw_args_usage(&a, "--max-batched-tokens: \"%s\" is not a count >= 1", v);
    if (q.fleet && !q.endpoint)
        return sw_args_usage(&a, "a fleet's figures are an endpoint's: name the ENDPOINT");
    if (!q.fleet && !q.ledger && !nb)
        return sw_args_usage(&a, "nothing to fit: give ENDPOINT with a fleet, --ledger or --bench");
    const char **bench = sw_calloc((size_t)nb + 1, sizeof(*bench));
    for (int i = 0; bench && i < nb; i++)
        bench[q.n_bench++] = sw_args_nth(&a, "bench", i);
    q.bench = bench;
    rc = bench ? sw_sim_fit_run(&q, &doc, &e) : sw_err_set(&e, SW_ENOMEM, "out of memory");
    sw_free(bench);
    if (rc)
        return sw_cli_fail(&e, a.json);
    if (a.json) {
        char *txt = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (txt)
            printf("%s\n", txt);
        free(txt);
    } else {
        fit_print(doc, json_string_value(json_object_get(doc, "out")));
    }
    json_decref(doc);
    return 0;
}

/* `slipway sim ENDPOINT [--fleet FILE]`: the endpoint's shape (varied by --set), its fit beside the fleet
 * file under the timing given on the line. */
static int sim_fleet(const struct sw_args *a, struct sw_sim_config *c)
{
    /* the timing options, as the SW_SIM_FIT_* bits of their terms */
    static const struct {
        const char *opt;
        unsigned bit;
    } timing[] = {{"decode-base-us", SW_SIM_FIT_DECODE_BASE},
                  {"decode-seq-us", SW_SIM_FIT_DECODE_SEQ},
                  {"decode-kv-us", SW_SIM_FIT_DECODE_KV},
                  {"prefill-us", SW_SIM_FIT_PREFILL_TOKEN}};
    const char *name = a->pos[0];
    struct sw_cli_fleet fl;
    int frc = sw_cli_fleet(a, 0, 0, &fl);
    if (frc)
        return frc;
    const char *path = fl.path;
    struct sw_fleet *f = NULL;
    struct sw_sim *s = NULL;
    struct sw_err e;
    unsigned given = 0;
    int rc;
    sw_err_clear(&e);
    if (sw_fleet_load(path, NULL, &f, &e))
        return sw_cli_fail(&e, a->json);
    struct sw_fleet_endpoint *ep = (struct sw_fleet_endpoint *)sw_fleet_endpoint(f, name);
    for (size_t i = 0; i < SW_ARRAY_LEN(timing); i++)
        given |= sw_args_flag(a, timing[i].opt) ? timing[i].bit : 0;
    rc = ep ? 0 : sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", path, name);
    for (int i = 0; !rc && i < sw_args_count(a, "set"); i++)
        rc = sw_gate_set(ep, sw_args_nth(a, "set", i), &e);
    if (!rc && !sw_args_str(a, "timing"))
        rc = sw_sim_timing_beside(path, name, given, &c->timing, &e);
    if (!rc)
        rc = sw_sim_new_endpoint(f, ep, sw_args_str(a, "ledger"), c, &s, &e);
    rc = run(rc, s, &e, a->json);
    sw_fleet_free(f);
    return rc;
}

int sw_cmd_sim(int argc, char **argv)
{
    struct sw_args a;
    struct sw_sim_config c;
    struct sw_sim *s = NULL;
    struct sw_err e;
    uint64_t weights = 0;
    int rc = 0;
    if (argc > 1 && !strcmp(argv[1], "fit"))
        return sim_fit(argc - 1, argv + 1);
    if (!sw_args_parse(&sw_spec_sim, argc, argv, &a, &rc))
        return rc;
    static const char *const uses[] = {"ledger", NULL};
    rc = sw_cli_no_ledger(&a, uses);
    if (rc)
        return rc;
    rc = read_config(&a, &c);
    if (rc)
        return rc;
    const char *engine = sw_args_str(&a, "engine");
    if (!engine) {
        if (a.npos < 1)
            return sw_args_usage(&a, "give ENDPOINT [--fleet FILE], or --engine E -- ARGV");
        if (a.nrest)
            return sw_args_usage(&a, "a fleet endpoint takes no command line after --");
        return sim_fleet(&a, &c);
    }
    if (a.npos)
        return sw_args_usage(&a, "unexpected argument '%s' (the command line goes after --)",
                             a.pos[0]);
    if (a.fleet)
        return sw_args_usage(&a, "--fleet goes with an ENDPOINT, not with --engine's command line");
    if (a.nrest < 1)
        return sw_args_usage(&a, "give the engine's command line after --");
    bool hf = !strcmp(engine, "vllm") || !strcmp(engine, "sglang");
    if (sw_args_flag(&a, "weights") && !hf)
        return sw_args_usage(&a, "--weights is for --engine vllm or sglang");
    rc = bytes_opt(&a, "weights", &weights);
    if (rc)
        return rc;
    if (!strcmp(engine, "sglang") && weights && !c.device_memory)
        return sw_args_usage(&a,
                             "--weights needs --device-memory (SGLang sizes its pool from both)");
    if (!strcmp(engine, "sglang") && weights && weights >= c.device_memory)
        return sw_args_usage(
            &a, "--weights is not below --device-memory: nothing is left to load into");
    if (!hf && strcmp(engine, "llama.cpp") && strcmp(engine, "llamacpp") &&
        strcmp(engine, "llama-server"))
        return sw_args_usage(&a, "engine '%s' has no sim here (llama.cpp, vllm, sglang)", engine);
    sw_err_clear(&e);
    rc = sw_sim_new_argv(engine, a.nrest, a.rest, weights, &c, &s, &e);
    return run(rc, s, &e, a.json);
}
