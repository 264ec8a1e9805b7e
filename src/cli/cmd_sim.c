/*
 * slipway sim ENDPOINT [FLEET.yaml] [options]
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

#include <slipway/calib.h>
#include <slipway/engine.h>
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/hf.h>
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/sim.h>
#include <slipway/vllm.h>

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

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
    "slipway sim local examples/local.yaml",
    "slipway sim --engine llama.cpp --load-time 2s -- llama-server -m model.gguf -c 8192 -np 2",
    "slipway sim --engine vllm --device-memory 24GiB --weights 16GiB -- vllm serve MODEL_DIR "
    "--max-model-len 32768",
    "slipway sim --engine sglang -- python -m sglang.launch_server --model-path MODEL_DIR "
    "--context-length 32768 --max-total-tokens 200000 --enable-metrics",
    "slipway sim frank-primary examples/operator.yaml --ledger seed.sqlite --set "
    "max_model_len=245760",
    NULL,
};

const struct sw_cmd_spec sw_spec_sim = {
    .name = "sim",
    .summary = "an engine stand-in driven by the plan's law: boots, serves and fails like it",
    .synopsis = "ENDPOINT [FLEET.yaml] [--listen ADDR] [--ready-file FILE] [--load-time D]\n"
                "    [--device-memory BYTES] [--seed N] [timing options]\n"
                "--engine llama.cpp|vllm|sglang [options] -- ENGINE ARGV...\n"
                "fit [FLEET.yaml] [--endpoint E] [--ledger DB] [--bench FILE] [--out FILE]",
    .about =
        "Boots like the engine: its boot-log lines with the law's numbers on stderr (`slipway\n"
        "bootlog parse` reads them, `bootlog diff` matches them to `plan`), a load time with\n"
        "/health 503 (llama.cpp), and the engine's failure and exit status for a payload that\n"
        "does not resolve or a shape past the device memory. Then serves /health, /v1/models,\n"
        "/v1/chat/completions, /v1/completions (SSE or not), /metrics, and llama.cpp's /props\n"
        "and /slots, with slots and an admission queue stepping on a timing model.\n"
        "The bound port is stdout's first line. SIGTERM stops it (exit 0).",
    .opts = opts,
    .max_args = 2,
    .command_line = true,
    .examples = examples,
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

/* Run a made sim; the exit code is the engine's. */
static int run(struct sw_sim *s, bool json)
{
    struct sw_err e;
    int status = 1;
    sw_err_clear(&e);
    (void)json; /* the config carries it: the port line as JSON */
    if (sw_sim_run(s, &status, &e))
        return sw_cli_fail(&e, false);
    return status;
}

/* The value of FLAG in the engine's command line (`FLAG V` or `FLAG=V`), or NULL. */
static const char *argv_value(const struct sw_args *a, const char *flag)
{
    size_t n = strlen(flag);
    for (int i = 0; i < a->nrest; i++) {
        if (!strcmp(a->rest[i], flag) && i + 1 < a->nrest)
            return a->rest[i + 1];
        if (!strncmp(a->rest[i], flag, n) && a->rest[i][n] == '=')
            return a->rest[i] + n + 1;
    }
    return NULL;
}

/* Where the engine's command line says it listens (--host, --port), when --listen is not
 * given: the sim serves there, as the engine would. */
static void listen_from_argv(const struct sw_args *a, struct sw_sim_config *c)
{
    static char addr[300];
    const char *host = argv_value(a, "--host"), *port = argv_value(a, "--port");
    if (c->listen || (!host && !port))
        return;
    snprintf(addr, sizeof(addr), "%s:%s", host ? host : "127.0.0.1", port ? port : "0");
    c->listen = addr;
}

/* What vLLM's and SGLang's command lines share: the served name and the listen address from the
 * argv (when not given as the sim's own options), then the law's plan of the argv. A plan the
 * law cannot make for a payload that is not there is NULL (the sim fails the boot as the engine
 * does); for one that is there, the error. Returns 0, or the exit code. */
static int hf_engine_plan(const char *engine, const struct sw_args *a, struct sw_sim_config *c,
                          const struct sw_engine_plan_facts *facts, const char *dir, json_t **plan)
{
    struct sw_err e;
    sw_err_clear(&e);
    *plan = NULL;
    if (!c->alias)
        c->alias = argv_value(a, "--served-model-name");
    listen_from_argv(a, c);
    if (sw_engine_plan_argv(engine, facts, a->nrest, a->rest, plan, &e)) {
        json_decref(*plan);
        *plan = NULL;
        if (!sw_sim_payload_missing(dir))
            return sw_cli_fail(&e, a->json);
    }
    return 0;
}

/* Run the sim a maker returned rc for (its error in e), free it: the engine's exit status. */
static int run_made(int rc, struct sw_sim *s, struct sw_err *e, bool json)
{
    rc = rc ? sw_cli_fail(e, json) : run(s, json);
    sw_sim_free(s);
    return rc;
}

static int sim_vllm_argv(const struct sw_args *a, struct sw_sim_config *c)
{
    struct sw_engine_plan_facts facts;
    struct sw_vllm_opts o;
    const char *dir = NULL;
    json_t *plan = NULL;
    struct sw_sim *s = NULL;
    struct sw_err e;
    int rc;

    sw_err_clear(&e);
    memset(&facts, 0, sizeof(facts));
    facts.gpu_memory = c->device_memory;
    rc = bytes_opt(a, "weights", &facts.weights);
    if (rc)
        return rc;
    /* the adapter's parser: the model directory and max_num_seqs */
    for (int i = 0; i < a->nrest; i++) /* vLLM's tool parser: "auto" tool choice works */
        c->tools |= !strcmp(a->rest[i], "--enable-auto-tool-choice");
    sw_vllm_opts_init(&o);
    if (sw_vllm_parse_argv(a->nrest, a->rest, &o, &dir, NULL, 0, &e))
        return sw_cli_fail(&e, a->json);
    rc = hf_engine_plan("vllm", a, c, &facts, dir, &plan);
    if (rc)
        return rc;
    if (!c->batch_tokens && o.max_num_batched_tokens > 0)
        c->batch_tokens = o.max_num_batched_tokens;
    rc = sw_sim_new_vllm(plan, dir, o.max_num_seqs, c, &s, &e);
    json_decref(plan);
    return run_made(rc, s, &e, a->json);
}

/* SGLang's request window: the one given (--context-length, a fleet shape's max_model_len), else
 * the model's max_position_embeddings; 0 when neither is known (the sim refuses that). */
static int64_t sglang_window(const char *dir, int64_t given)
{
    struct sw_hf_config hc;
    if (given > 0 || sw_sim_payload_missing(dir))
        return given;
    memset(&hc, 0, sizeof(hc));
    return sw_hf_config_load(dir, &hc, NULL) == 0 ? hc.max_position_embeddings : 0;
}

/* `--engine sglang -- python -m sglang.launch_server --model-path DIR ...`: the law's plan, the
 * window from --context-length or the model's max_position_embeddings. */
static int sim_sglang_argv(const struct sw_args *a, struct sw_sim_config *c)
{
    struct sw_engine_plan_facts facts;
    struct sw_sglang_opts o;
    const char *dir = NULL;
    json_t *plan = NULL;
    struct sw_sim *s = NULL;
    struct sw_err e;
    int rc;

    sw_err_clear(&e);
    memset(&facts, 0, sizeof(facts));
    facts.gpu_memory = c->device_memory;
    /* the free memory around the load, as SGLang measures it: the device's before, less the
     * weights after (the pool is then the law's autofit unless the argv pins it) */
    rc = bytes_opt(a, "weights", &facts.weights);
    if (rc)
        return rc;
    if (facts.weights && !c->device_memory)
        return sw_args_usage(a,
                             "--weights needs --device-memory (SGLang sizes its pool from both)");
    if (facts.weights && facts.weights >= c->device_memory)
        return sw_args_usage(
            a, "--weights is not below --device-memory: nothing is left to load into");
    if (facts.weights) {
        facts.pre_load_free = c->device_memory;
        facts.post_load_avail = c->device_memory - facts.weights;
    }
    sw_sglang_opts_init(&o);
    if (sw_sglang_parse_argv(a->nrest, a->rest, &o, &dir, NULL, 0, &e))
        return sw_cli_fail(&e, a->json);
    rc = hf_engine_plan("sglang", a, c, &facts, dir, &plan);
    if (rc)
        return rc;
    int64_t window = sglang_window(dir, o.context_length);
    bool metrics = false;
    for (int i = 0; i < a->nrest; i++)
        metrics |= !strcmp(a->rest[i], "--enable-metrics");
    if (!c->batch_tokens && o.chunked_prefill_size > 0)
        c->batch_tokens = o.chunked_prefill_size;
    rc = sw_sim_new_sglang(plan, dir, window, o.max_running_requests, metrics, c, &s, &e);
    json_decref(plan);
    return run_made(rc, s, &e, a->json);
}

static int sim_llamacpp(const struct sw_fleet_endpoint *ep, const struct sw_args *a,
                        struct sw_sim_config *c)
{
    struct sw_plan_overrides ov;
    struct sw_plan pl;
    struct sw_sim *s = NULL;
    struct sw_llamacpp_env env;
    struct sw_err e;
    sw_err_clear(&e);
    memset(&ov, 0, sizeof(ov));
    memset(&env, 0, sizeof(env));
    if (!ep) {
        ov.argv = (const char *const *)a->rest;
        ov.argc = (size_t)a->nrest;
        /* a CPU build's host memory, as `plan --host-memory`: the law's budget and --fit */
        env.host_memory = c->device_memory;
        ov.llamacpp_env = &env;
    }
    int prc = sw_plan_endpoint(NULL, ep, &ov, &pl, &e);
    /* a payload on the endpoint's host resolves where the engine runs */
    if (ep && sw_plan_payload_on_host(&pl, ep, &e)) {
        sw_plan_free(&pl);
        return sw_cli_fail(&e, a->json);
    }
    int rc = sw_sim_new_llamacpp(&pl, prc, c, &s, &e);
    sw_plan_free(&pl);
    if (rc)
        return sw_cli_fail(&e, a->json);
    rc = run(s, a->json);
    sw_sim_free(s);
    return rc;
}

/* The capture transient's "Tried to allocate" when no capture death printed one. */
#define CAPTURE_TRIED_DEFAULT (64ull << 20)
/* vLLM captures CUDA graphs for batches up to 512 tokens by default: a longer step runs eager and
 * allocates, which is what dies first when nothing is free after the boot. */
#define RUNTIME_EAGER_TOKENS 512

/* How the boot of a vLLM fleet endpoint ends: a declared compile constraint, else the headroom
 * model fitted on the ledger's boots. An engine-sized pool the model predicts is pinned on the
 * endpoint so the law prints its tokens. */
static int vllm_boot(struct sw_fleet_endpoint *ep, const char *ledger_path, struct sw_sim_config *c,
                     struct sw_sim_vllm_boot *boot, struct sw_err *e)
{
    struct sw_ledger led;
    struct sw_calib_fit *fit = NULL;
    json_t *raw = NULL, *canon = NULL;
    int rc = 0;
    memset(boot, 0, sizeof(*boot));
    memset(&led, 0, sizeof(led));
    for (size_t i = 0; i < ep->n_known_bad; i++) {
        const struct sw_fleet_rule *r = &ep->known_bad[i];
        if (r->failure && !strcmp(r->failure, "compile_constraint") &&
            sw_fleet_rule_matches(r, &ep->shape)) {
            boot->fault = SW_SIM_VLLM_COMPILE;
            boot->text = r->text;
            return 0;
        }
    }
    if (!ledger_path || !ep->profile)
        return 0;
    struct sw_ledger_open_opts oo = {.readonly = true};
    rc = sw_ledger_open(&led, ledger_path, &oo, e);
    if (rc)
        return rc;
    struct sw_calib_opts co = {.ep = ep};
    rc = sw_calib_fit(&led, ep->name, &co, &fit, e);
    if (rc)
        goto out;
    if (!fit->headroom.have || !fit->headroom.consistent)
        goto out;
    raw = sw_plan_shape(ep);
    if (!raw) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_ledger_shape_canon(raw, &canon, NULL, NULL, e);
    if (rc)
        goto out;
    struct sw_headroom_shape hs;
    const char *kv = "auto";
    if (sw_calib_headroom_shape(canon, &hs, &kv))
        goto out;
    struct sw_calib_hr_pred pr;
    rc = sw_calib_headroom_predict(fit, &hs, kv, &pr, e);
    if (rc)
        goto out;
    const struct sw_calib_headroom *h = &fit->headroom;
    boot->total_bytes = h->prof.usable;
    enum sw_calib_hr_verdict v = pr.verdict;
    if (v == SW_CALIB_HR_CAPTURE_RISK) {
        /* the engine does one thing: the interval's middle decides (the gate refuses it) */
        double need =
            pr.need_hi_set && isfinite(pr.need_lo) ? (pr.need_lo + pr.need_hi) / 2 : pr.need_lo;
        v = (pr.free_lo + pr.free_hi) / 2 < need ? SW_CALIB_HR_CAPTURE_FAILS : SW_CALIB_HR_FITS;
    }
    switch (v) {
    case SW_CALIB_HR_KV_FAILS:
        boot->fault = SW_SIM_VLLM_KV_OOM;
        boot->tried_bytes = (uint64_t)pr.kv_ask;
        boot->free_bytes = (uint64_t)((pr.kv_free_lo + pr.kv_free_hi) / 2);
        break;
    case SW_CALIB_HR_CAPTURE_FAILS: {
        boot->fault = SW_SIM_VLLM_CAPTURE_OOM;
        uint64_t t = h->capture_tried_bytes;
        for (int i = 0; pr.auto_pool && i < h->n_pools; i++)
            if (h->pools[i].tried_bytes && !strcmp(h->pools[i].kv_dtype, kv) &&
                h->pools[i].seqs == hs.seqs)
                t = h->pools[i].tried_bytes;
        boot->tried_bytes = t ? t : CAPTURE_TRIED_DEFAULT;
        boot->free_bytes = 0;
        break;
    }
    case SW_CALIB_HR_RUNTIME_FAILS:
        if (!c->runtime_oom_tokens)
            c->runtime_oom_tokens = RUNTIME_EAGER_TOKENS;
        if (!c->device_memory)
            c->device_memory = h->prof.usable;
        break;
    default:
        break;
    }
    if (pr.auto_pool && v != SW_CALIB_HR_UNKNOWN && pr.pool_point > 0) {
        ep->shape.kv_cache_bytes.set = true;
        ep->shape.kv_cache_bytes.v = (uint64_t)pr.pool_point;
    }
out:
    json_decref(canon);
    json_decref(raw);
    sw_calib_fit_free(fit);
    sw_ledger_close(&led);
    return rc;
}

static int sim_vllm_fleet(struct sw_fleet *f, struct sw_fleet_endpoint *ep, const struct sw_args *a,
                          struct sw_sim_config *c)
{
    struct sw_plan pl;
    struct sw_sim *s = NULL;
    struct sw_sim_vllm_boot boot;
    struct sw_err e;
    int rc;
    sw_err_clear(&e);
    memset(&pl, 0, sizeof(pl));
    if (!c->alias && ep->alias.v)
        c->alias = ep->alias.v;
    if (vllm_boot(ep, sw_args_str(a, "ledger"), c, &boot, &e))
        return sw_cli_fail(&e, a->json);
    if (!c->batch_tokens && ep->shape.max_num_batched_tokens.set)
        c->batch_tokens = (int64_t)ep->shape.max_num_batched_tokens.v;
    int prc = sw_plan_endpoint(f, ep, NULL, &pl, &e);
    const char *dir = ep->payload.path.v;
    struct sw_err he;
    sw_err_clear(&he);
    if (sw_plan_payload_on_host(&pl, ep, &he)) {
        rc = sw_cli_fail(&he, a->json);
    } else if (prc && (!sw_sim_payload_missing(dir) || pl.model_read.found)) {
        rc = sw_cli_fail(&e, a->json);
    } else {
        rc = sw_sim_new_vllm_boot(prc ? NULL : pl.engine_plan, dir,
                                  ep->shape.seqs.set ? (int64_t)ep->shape.seqs.v : 0, &boot, c, &s,
                                  &e);
        rc = rc ? sw_cli_fail(&e, a->json) : run(s, a->json);
    }
    sw_sim_free(s);
    sw_plan_free(&pl);
    return rc;
}

/* An SGLang fleet endpoint: the fleet plan's law, the shape's window and request cap, the
 * rendered command line's --enable-metrics. */
static int sim_sglang_fleet(struct sw_fleet *f, struct sw_fleet_endpoint *ep,
                            const struct sw_args *a, struct sw_sim_config *c)
{
    struct sw_plan pl;
    struct sw_engine_cmd cmd;
    struct sw_sim *s = NULL;
    struct sw_err e;
    int rc;
    sw_err_clear(&e);
    memset(&pl, 0, sizeof(pl));
    memset(&cmd, 0, sizeof(cmd));
    if (!c->alias && ep->alias.v)
        c->alias = ep->alias.v;
    if (!c->batch_tokens && ep->shape.max_num_batched_tokens.set)
        c->batch_tokens = (int64_t)ep->shape.max_num_batched_tokens.v;
    const char *dir = ep->payload.path.v;
    int prc = sw_plan_endpoint(f, ep, NULL, &pl, &e);
    struct sw_err he;
    sw_err_clear(&he);
    if (sw_plan_payload_on_host(&pl, ep, &he)) {
        rc = sw_cli_fail(&he, a->json);
        goto out;
    }
    bool missing = sw_sim_payload_missing(dir) && !pl.model_read.found;
    if (prc && !missing) {
        rc = sw_cli_fail(&e, a->json);
        goto out;
    }
    int64_t window =
        sglang_window(dir, ep->shape.max_model_len.set ? (int64_t)ep->shape.max_model_len.v : 0);
    if (window < 1 && !prc) /* the model's window, as the plan read it on the host */
        window = json_integer_value(
            json_object_get(json_object_get(pl.engine_plan, "report"), "context_length"));
    bool metrics = false;
    if (sw_sglang_render_endpoint(ep, &cmd, &e) == 0)
        for (size_t i = 0; i < cmd.argc; i++)
            metrics |= !strcmp(cmd.argv[i], "--enable-metrics");
    sw_err_clear(&e);
    rc = sw_sim_new_sglang(prc ? NULL : pl.engine_plan, dir, window,
                           ep->shape.seqs.set ? (int64_t)ep->shape.seqs.v : 0, metrics, c, &s, &e);
    rc = rc ? sw_cli_fail(&e, a->json) : run(s, a->json);
out:
    sw_sim_free(s);
    sw_engine_cmd_free(&cmd);
    sw_plan_free(&pl);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * slipway sim fit
 */
static const struct sw_opt fit_opts[] = {
    {"endpoint", 0, "NAME", 0,
     "the endpoint: its bench runs in the ledger, its declared figures in FLEET", NULL},
    {"ledger", 0, "PATH", 0, "read the endpoint's `slipway bench` runs from this ledger", NULL},
    {"bench", 0, "FILE", SW_OPT_REPEAT, "a `slipway bench --json` document (repeatable)", NULL},
    {"slots", 0, "N", 0, "the engine's slots (default: the highest concurrency measured)", NULL},
    {"max-batched-tokens", 0, "N", 0,
     "a step's token budget (default 2048: llama.cpp's -b; vLLM's max_num_batched_tokens)", NULL},
    {"out", 0, "FILE", 0,
     "write the fit there (default with FLEET and --endpoint: ENDPOINT.sim-fit.json beside\n"
     "the fleet file, which `slipway sim ENDPOINT FLEET` reads)",
     NULL},
    {0},
};

static const char *const fit_examples[] = {
    "slipway sim fit --ledger fleet.ledger.sqlite --endpoint local --out local.sim-fit.json",
    "slipway sim fit examples/operator.yaml --endpoint frank-primary",
    "slipway sim fit --bench run.json --json",
    NULL,
};

static const struct sw_cmd_spec spec_fit = {
    .name = "sim fit",
    .summary = "fit the sim's timing model to bench runs or the operator's figures",
    .synopsis = "[FLEET.yaml] [--endpoint E] [--ledger DB] [--bench FILE]... [--slots N]\n"
                "    [--out FILE] [--json]",
    .about = "Fits the timing model (decode step cost by batch and KV depth, prefill cost per\n"
             "token and by depth; docs/sim.md) so that the sim's scheduler shows what was\n"
             "measured: the closed-loop points of `slipway bench` runs (from the ledger or a\n"
             "--json file), or the endpoint's declared figures (measured: decode_..._ctxN,\n"
             "prefill_..._ctxN in tok/s). Prints each figure beside the sim's prediction.\n"
             "Exit 0 fitted, 1 no usable figure or the ledger could not be read, 2 bad input.",
    .opts = fit_opts,
    .max_args = 1,
    .examples = fit_examples,
};

/* DIR/ENDPOINT.sim-fit.json for DIR/fleet.yaml */
static void fit_path_beside(const char *fleet, const char *endpoint, char *out, size_t n)
{
    const char *slash = strrchr(fleet, '/');
    if (slash)
        snprintf(out, n, "%.*s/%s.sim-fit.json", (int)(slash - fleet), fleet, endpoint);
    else
        snprintf(out, n, "%s.sim-fit.json", endpoint);
}

static int fit_from_ledger(const char *path, const char *endpoint, struct sw_sim_point **pts,
                           size_t *n, struct sw_err *e)
{
    struct sw_ledger l;
    struct sw_ledger_open_opts lo = {.readonly = true};
    json_t *doc = NULL;
    int rc = sw_ledger_open(&l, path, &lo, e);
    if (!rc)
        rc = sw_ledger_export(&l, endpoint, &doc, e);
    const json_t *runs = json_object_get(doc, "bench_runs");
    for (size_t i = 0; !rc && i < json_array_size(runs); i++) {
        const json_t *r = json_array_get(runs, i);
        char src[96];
        snprintf(src, sizeof(src), "bench run %" PRId64,
                 (int64_t)json_integer_value(json_object_get(r, "id")));
        rc = sw_sim_points_from_bench(json_object_get(r, "results"), src, pts, n, e);
    }
    json_decref(doc);
    sw_ledger_close(&l);
    return rc;
}

static int fit_from_file(const char *path, struct sw_sim_point **pts, size_t *n, struct sw_err *e)
{
    char *txt = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, 256u << 20, &txt, &len, e);
    if (rc)
        return rc;
    json_t *doc = sw_json_parse(txt, len, path, e);
    sw_free(txt);
    if (!doc)
        return SW_EPARSE;
    rc = sw_sim_points_from_bench(doc, path, pts, n, e);
    json_decref(doc);
    return rc;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *fit_doc(const struct sw_sim_fit *fit, const struct sw_sim_point *pts, size_t n,
                       int slots, int64_t budget)
{
    static const char *const names[] = {
        "decode_base_us",  "decode_per_seq_us", "decode_per_kv_us", "prefill_per_token_us",
        "prefill_base_us", "prefill_per_kv_us", "prefill_step_us",  "prefill_batch_share"};
    json_t *doc = json_object();
    json_t *fitted = json_array();
    json_t *a = json_array();
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++)
        if (fit->fitted & (1u << i))
            json_array_append_new(fitted, json_string(names[i]));
    for (size_t i = 0; i < n; i++) {
        double d, p;
        sw_sim_predict(&fit->timing, slots, budget, &pts[i], &d, &p);
        bool hd = isfinite(pts[i].decode_tps) && pts[i].decode_tps > 0;
        bool hp = isfinite(pts[i].prefill_tps) && pts[i].prefill_tps > 0;
        json_array_append_new(
            a, json_pack("{s:s,s:I,s:i,s:i,s:f,s:I,s:o,s:o,s:o,s:o}", "source", pts[i].source,
                         "depth", (json_int_t)pts[i].depth, "concurrency", pts[i].concurrency,
                         "repeat", pts[i].repeat, "prompt_tokens", pts[i].prompt_tokens, "tg",
                         (json_int_t)pts[i].tg, "decode_tps",
                         num_or_null(hd ? pts[i].decode_tps : NAN), "decode_sim_tps",
                         num_or_null(hd ? d : NAN), "prefill_tps",
                         num_or_null(hp ? pts[i].prefill_tps : NAN), "prefill_sim_tps",
                         num_or_null(hp ? p : NAN)));
    }
    sw_json_set_new(doc, "timing", sw_sim_timing_json(&fit->timing));
    sw_json_set_new(doc, "fitted", fitted);
    sw_json_set_int(doc, "slots", slots);
    sw_json_set_int(doc, "max_batched_tokens", budget);
    sw_json_set_int(doc, "figures", (int64_t)fit->n_targets);
    sw_json_set_new(doc, "max_err_pct", num_or_null(fit->max_err_pct));
    sw_json_set_new(doc, "rms_err_pct", num_or_null(fit->rms_err_pct));
    sw_json_set_new(doc, "points", a);
    return doc;
}

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
    struct sw_sim_point *pts = NULL;
    size_t n = 0;
    struct sw_fleet *f = NULL;
    json_t *doc = NULL;
    char out[4200] = "";
    int rc = 0;
    sw_err_clear(&e);
    if (!sw_args_parse(&spec_fit, argc, argv, &a, &rc))
        return rc;
    const char *endpoint = sw_args_str(&a, "endpoint");
    const char *ledger = sw_args_str(&a, "ledger");
    const char *fleet = a.npos ? a.pos[0] : NULL;
    int64_t slots = 0;
    const char *v = sw_args_str(&a, "slots");
    if (v && (sw_parse_i64(v, &slots, NULL) || slots < 1 || slots > 4096))
        return sw_args_usage(&a, "--slots: \"%s\" is not a count in 1..4096", v);
    int64_t budget = 2048;
    v = sw_args_str(&a, "max-batched-tokens");
    if (v && (sw_parse_i64(v, &budget, NULL) || budget < 1))
        return sw_args_usage(&a, "--max-batched-tokens: \"%s\" is not a count >= 1", v);
    if (fleet && !endpoint)
        return sw_args_usage(&a, "a fleet's figures are an endpoint's: give --endpoint");
    if (!fleet && !ledger && !sw_args_count(&a, "bench"))
        return sw_args_usage(&a, "nothing to fit: give FLEET, --ledger or --bench");
    if (sw_args_str(&a, "out"))
        snprintf(out, sizeof(out), "%s", sw_args_str(&a, "out"));
    else if (fleet)
        fit_path_beside(fleet, endpoint, out, sizeof(out));
    if (fleet) {
        rc = sw_fleet_load(fleet, NULL, &f, &e);
        const struct sw_fleet_endpoint *ep = rc ? NULL : sw_fleet_endpoint(f, endpoint);
        if (!rc && !ep)
            rc = sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", fleet, endpoint);
        if (!rc)
            rc = sw_sim_points_from_fleet(ep, &pts, &n, &e);
    }
    if (!rc && ledger)
        rc = fit_from_ledger(ledger, endpoint, &pts, &n, &e);
    for (int i = 0; !rc && i < sw_args_count(&a, "bench"); i++)
        rc = fit_from_file(sw_args_nth(&a, "bench", i), &pts, &n, &e);
    if (rc)
        goto out;
    if (!n) {
        rc = sw_err_set(&e, SW_ENOENT,
                        "no figure to fit: no closed-loop bench point%s%s and no measured "
                        "decode_*ctxN / prefill_*ctxN fact",
                        endpoint ? " for " : "", endpoint ? endpoint : "");
        goto out;
    }
    sw_sim_points_pool(pts, &n); /* a workload measured in several runs: its medians */
    if (!slots)
        for (size_t i = 0; i < n; i++)
            slots = SW_MAX(slots, (int64_t)pts[i].concurrency);
    struct sw_sim_fit fit;
    rc = sw_sim_fit(pts, n, (int)slots, budget, NULL, &fit, &e);
    if (rc)
        goto out;
    doc = fit_doc(&fit, pts, n, (int)slots, budget);
    if (!doc) {
        rc = sw_err_set(&e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (out[0]) {
        char *txt = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        rc = txt ? sw_write_file_atomic(out, txt, strlen(txt), 0644, &e)
                 : sw_err_set(&e, SW_ENOMEM, "out of memory");
        free(txt);
        if (rc)
            goto out;
        sw_json_set_str(doc, "out", out);
    }
    if (a.json) {
        char *txt = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (txt)
            printf("%s\n", txt);
        free(txt);
    } else {
        fit_print(doc, out[0] ? out : NULL);
    }
out:
    json_decref(doc);
    sw_free(pts);
    sw_fleet_free(f);
    return rc ? sw_cli_fail(&e, a.json) : 0;
}

static int sim_fleet(const struct sw_args *a, struct sw_sim_config *c)
{
    const char *name = a->pos[0];
    const char *path = a->npos > 1 ? a->pos[1] : "fleet.yaml";
    struct sw_fleet *f = NULL;
    struct sw_err e;
    int rc;
    sw_err_clear(&e);
    if (sw_fleet_load(path, NULL, &f, &e))
        return sw_cli_fail(&e, a->json);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    int ns = sw_args_count(a, "set");
    for (int i = 0; ep && i < ns; i++)
        if (sw_gate_set((struct sw_fleet_endpoint *)ep, sw_args_nth(a, "set", i), &e)) {
            sw_fleet_free(f);
            return sw_cli_fail(&e, a->json);
        }
    char fit[4200];
    struct stat st;
    fit_path_beside(path, name, fit, sizeof(fit));
    if (ep && !sw_args_str(a, "timing") && stat(fit, &st) == 0) {
        /* the endpoint's fit, then any timing option given on the line over it */
        struct sw_sim_timing t = c->timing;
        if (sw_sim_timing_load(fit, &t, &e)) {
            rc = sw_cli_fail(&e, a->json);
            sw_fleet_free(f);
            return rc;
        }
        struct sw_sim_config d;
        sw_sim_config_init(&d);
        static const char *const names[] = {"decode-base-us", "decode-seq-us", "decode-kv-us",
                                            "prefill-us"};
        double *from_line[] = {&c->timing.decode_base_us, &c->timing.decode_per_seq_us,
                               &c->timing.decode_per_kv_us, &c->timing.prefill_per_token_us};
        double *fitted[] = {&t.decode_base_us, &t.decode_per_seq_us, &t.decode_per_kv_us,
                            &t.prefill_per_token_us};
        for (size_t i = 0; i < SW_ARRAY_LEN(names); i++)
            if (sw_args_flag(a, names[i]))
                *fitted[i] = *from_line[i];
        c->timing = t;
    }
    if (!ep) {
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", path, name);
        rc = sw_cli_fail(&e, a->json);
    } else if (ep->engine == SW_FLEET_LLAMACPP) {
        rc = sim_llamacpp(ep, a, c);
    } else if (ep->engine == SW_FLEET_VLLM) {
        rc = sim_vllm_fleet(f, (struct sw_fleet_endpoint *)ep, a, c);
    } else if (ep->engine == SW_FLEET_SGLANG) {
        rc = sim_sglang_fleet(f, (struct sw_fleet_endpoint *)ep, a, c);
    } else {
        sw_err_set(&e, SW_EUNSUPPORTED,
                   "%s: the sim has no %s engine yet (llama.cpp, vllm, sglang)", name,
                   sw_fleet_engine_name(ep->engine));
        rc = sw_cli_fail(&e, a->json);
    }
    sw_fleet_free(f);
    return rc;
}

int sw_cmd_sim(int argc, char **argv)
{
    struct sw_args a;
    struct sw_sim_config c;
    int rc = 0;
    if (argc > 1 && !strcmp(argv[1], "fit"))
        return sim_fit(argc - 1, argv + 1);
    if (!sw_args_parse(&sw_spec_sim, argc, argv, &a, &rc))
        return rc;
    rc = read_config(&a, &c);
    if (rc)
        return rc;
    const char *engine = sw_args_str(&a, "engine");
    if (!engine) {
        if (a.npos < 1)
            return sw_args_usage(&a, "give ENDPOINT [FLEET.yaml], or --engine E -- ARGV");
        if (a.nrest)
            return sw_args_usage(&a, "a fleet endpoint takes no command line after --");
        return sim_fleet(&a, &c);
    }
    if (a.npos)
        return sw_args_usage(&a, "unexpected argument '%s' (the command line goes after --)",
                             a.pos[0]);
    if (a.nrest < 1)
        return sw_args_usage(&a, "give the engine's command line after --");
    if (sw_args_flag(&a, "weights") && strcmp(engine, "vllm") && strcmp(engine, "sglang"))
        return sw_args_usage(&a, "--weights is for --engine vllm or sglang");
    if (!strcmp(engine, "vllm"))
        return sim_vllm_argv(&a, &c);
    if (!strcmp(engine, "sglang"))
        return sim_sglang_argv(&a, &c);
    if (!strcmp(engine, "llama.cpp") || !strcmp(engine, "llamacpp") ||
        !strcmp(engine, "llama-server")) {
        listen_from_argv(&a, &c);
        return sim_llamacpp(NULL, &a, &c);
    }
    return sw_args_usage(&a, "engine '%s' has no sim here (llama.cpp, vllm, sglang)", engine);
}
