/*
 * slipway bench ENDPOINT|URL [--fleet FILE] [--depth LIST] [--pp N] [--tg N] [--repeat N]
 *                           [--concurrency LIST] [--rate R --arrival A --duration D --seed S
 *                           --max-lag MS] [--prompts FILE.jsonl] [--cache-prompt]
 *                           [--reuse-prompt] [--expect-hit] [--svg FILE] [--html FILE]
 *                           [--ledger PATH]
 *                           [--samples] [--json] [--quiet]
 *
 * Measure an endpoint's decode and prefill (include/slipway/bench.h; docs/bench.md defines
 * every figure). ENDPOINT is a name in the fleet file: its URL, served name and API key's
 * reference come from there. --ledger records the run (parameters and results) in that ledger,
 * unless a request was invalid (the server's figures cannot be: sw_bench_check).
 *
 * slipway bench compare RUN_A RUN_B [--ledger PATH | --fleet FLEET.yaml] [--json]
 * (cmd_bench_compare.c).
 *
 * The endpoint's route, key and roofline are bench/target.c's, the recording bench/ledger.c's,
 * the verdict sw_bench_report_held; this file reads the options into struct sw_bench_opts and
 * prints.
 *
 * Exit: 0 the run ran and every check held, 1 a request failed (or was invalid), the cache
 * check failed, the token counts disagreed with the engine's, the open-loop run was invalid
 * (send lag) or, with --emit-stamps, a token could not be matched to its emitter's stamp; 2
 * unusable input.
 */
#include "cli.h"

#include <slipway/bench.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"model", 0, "NAME", 0, "the served model name (default: the endpoint's alias)", NULL},
    {"engine", 0, "ENGINE", 0,
     "llama.cpp (default: cache_prompt and timings_per_token are sent), vllm,\nsglang or openai",
     NULL},
    {"api-key-env", 0, "VAR", 0, "the environment variable holding the API key (never argv)", NULL},
    {"depth", 0, "LIST", 0, "prompt depths in tokens, comma-separated: 0,1k,4k (default: --pp)",
     NULL},
    {"pp", 0, "N", 0, "prompt tokens when no --depth is given (default 512)", NULL},
    {"tg", 0, "N", 0, "tokens to generate per request (default 128; ignore_eos is sent)", NULL},
    {"repeat", 0, "N", 0, "requests per stream at each point (default 3)", NULL},
    {"concurrency", 0, "LIST", 0, "closed-loop streams in flight, comma-separated: 1,2,4", NULL},
    {"rate", 0, "R", 0, "open loop: requests per second (the schedule is kept whatever the server)",
     NULL},
    {"arrival", 0, "KIND", 0, "open loop: constant, poisson (default) or gamma:CV", NULL},
    {"duration", 0, "D", 0, "open loop: how long requests are sent (default 30s)", NULL},
    {"seed", 0, "S", 0, "open loop: the arrival generator's seed (default 1)", NULL},
    {"max-lag", 0, "MS", 0, "open loop: p99 send lag above this marks the run invalid (default 10)",
     NULL},
    {"prompts", 0, "FILE", 0, "a JSONL file of chat requests instead of synthetic prompts", NULL},
    {"cache-prompt", 0, NULL, 0,
     "let the engine use its prompt cache (llama.cpp cache_prompt:true)", NULL},
    {"reuse-prompt", 0, NULL, 0, "one prompt for every request of a point (no per-request nonce)",
     NULL},
    {"expect-hit", 0, NULL, 0, "the cache check expects hits (default: it expects none)", NULL},
    {"reset-cache", 0, NULL, 0,
     "reset the engine's prefix cache first: vLLM POST /reset_prefix_cache,\nSGLang POST "
     "/flush_cache",
     NULL},
    {"no-engine-metrics", 0, NULL, 0, "do not read the engine's /metrics before and after", NULL},
    {"emit-stamps", 0, NULL, 0,
     "read the emitter's send instant from every chunk (`slipway sim --emit-stamps`):\n"
     "the client's timing error, arrival - emit, per token",
     NULL},
    {"eos", 0, NULL, 0,
     "let the model stop at its end of sequence (ignore_eos is not sent; --tg\nis then a ceiling)",
     NULL},
    {"extra", 0, "JSON", 0,
     "an object whose keys are added to every request last, e.g.\n'{\"grammar\":\"root ::= [a-z "
     "]+\"}'",
     NULL},
    {"threads", 0, "N", 0,
     "one event loop a thread (default 1): closed loop, a point's streams split over them;\n"
     "open loop, the one schedule's arrivals dealt round-robin",
     NULL},
    {"connections", 0, "N", 0,
     "at most N connections (default: as many as needed); open-loop requests\npast them wait in "
     "the client",
     NULL},
    {"slo", 0, "LIST", 0,
     "declared SLOs for goodput, from the intended send: ttft=2s,tpot=50ms,e2e=30s", NULL},
    {"timeout", 0, "S", 0, "each request's timeout (default 600s)", NULL},
    {"svg", 0, "FILE", 0, "decode tok/s by depth and by concurrency, as SVG", NULL},
    {"csv", 0, "FILE", 0, "every request's figures as CSV, one row each", NULL},
    {"html", 0, "FILE", 0, "one self-contained page: the table and the charts (inline SVG)", NULL},
    {"ledger", 0, "PATH", 0, "record the run in this ledger", NULL},
    {"no-ledger", 0, NULL, 0,
     "read and write no ledger (the default: nothing recorded; not with --ledger)", NULL},
    {"samples", 0, NULL, 0, "with --json: every request's figures too", NULL},
    {"quiet", 'q', NULL, 0, "no progress on stderr", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway bench http://127.0.0.1:8080 --depth 0,1k,4k --tg 128 --repeat 5",
    "slipway bench local --fleet examples/local.yaml --concurrency 1,2,4 --depth 4k",
    "slipway bench http://127.0.0.1:8080 --rate 2 --arrival gamma:2 --duration 60s --seed 7",
    NULL,
};

const struct sw_cmd_spec sw_spec_bench = {
    .name = "bench",
    .summary = "measure decode and prefill: depth sweep, concurrency, open-loop arrivals",
    .synopsis = "ENDPOINT|URL [--fleet FILE] [--depth LIST] [--pp N] [--tg N] [--repeat N]\n"
                "    [--concurrency LIST] [--rate R [--arrival KIND] [--duration D] [--seed S]\n"
                "    [--max-lag MS]] [--prompts FILE] [--cache-prompt] [--reuse-prompt]\n"
                "    [--expect-hit] [--reset-cache] [--no-engine-metrics] [--eos] [--extra JSON]\n"
                "    [--connections N] [--threads N] [--emit-stamps]\n"
                "    [--slo LIST] [--svg FILE] [--html FILE] [--csv FILE] [--ledger PATH]\n"
                "    [--samples] [--json] [--quiet]\n"
                "compare RUN_A RUN_B [--ledger PATH | --fleet FLEET.yaml] [--json]",
    .about = "Tokens are counted from the engine's own counters, never from chunks; latencies\n"
             "are timed from the intended send (the uncorrected figure beside them); the\n"
             "engine's timings are shown beside the client's with the difference; the prompt\n"
             "cache is verified from the engine's cache counters. docs/bench.md defines every\n"
             "figure. Exit 0 all checks held, 1 a request failed or a check did not hold\n"
             "(cache, token counts, send lag), 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

/* The points: depths, concurrency levels, tokens, repeats; 0 or the usage error's exit code. */
static int read_points(const struct sw_args *a, struct sw_bench_opts *o)
{
    int64_t conc[SW_BENCH_MAX_POINTS];
    uint64_t pp = (uint64_t)o->pp, tg = (uint64_t)o->tg, repeat = (uint64_t)o->repeat;
    int rc = sw_args_list(a, "depth", 0, 100000000u, o->depths, SW_BENCH_MAX_POINTS, &o->ndepths);
    if (!rc)
        rc = sw_args_list(a, "concurrency", 1, 4096, conc, SW_BENCH_MAX_POINTS, &o->nconc);
    if (!rc)
        rc = sw_args_number(a, "pp", 0, 100000000u, &pp);
    if (!rc)
        rc = sw_args_number(a, "tg", 0, 1000000u, &tg);
    if (!rc)
        rc = sw_args_number(a, "repeat", 0, 100000u, &repeat);
    for (size_t i = 0; i < o->nconc; i++)
        o->conc[i] = (int)conc[i];
    o->pp = (int64_t)pp;
    o->tg = (int64_t)tg;
    o->repeat = (int)repeat;
    return rc;
}

/* The open loop: --rate (which makes the run one), --arrival, --duration, --seed, --max-lag. */
static int read_open_loop(const struct sw_args *a, struct sw_bench_opts *o)
{
    struct sw_err e;
    int64_t ms = 0;
    const char *arrival = sw_args_str(a, "arrival");
    int rc = sw_args_real(a, "rate", 0, INFINITY, &o->rate);
    if (!rc && sw_args_str(a, "rate"))
        o->mode = SW_BENCH_OPEN;
    if (!rc && arrival && sw_bench_arrival_parse(arrival, &o->arrival, &o->cv, &e))
        rc = sw_args_usage(a, "%s", e.msg);
    if (!rc)
        rc = sw_args_duration(a, "duration", 1, 86400000, &ms);
    if (!rc && ms)
        o->duration_s = (double)ms / 1000.0;
    if (!rc)
        rc = sw_args_number(a, "seed", 0, UINT64_MAX, &o->seed);
    if (!rc)
        rc = sw_args_real(a, "max-lag", 0, INFINITY, &o->max_lag_ms);
    return rc;
}

/* The client: connections, threads, SLOs, the request timeout. */
static int read_client(const struct sw_args *a, struct sw_bench_opts *o)
{
    struct sw_err e;
    uint64_t conns = (uint64_t)o->connections, threads = 1;
    int64_t timeout_ms = 0;
    const char *slo = sw_args_str(a, "slo");
    int rc = sw_args_number(a, "connections", 0, 100000u, &conns);
    if (!rc)
        rc = sw_args_number(a, "threads", 1, 256u, &threads);
    if (!rc && sw_args_str(a, "threads"))
        o->threads = (int)threads;
    if (!rc && slo && sw_bench_slo_parse(slo, o, &e))
        rc = sw_args_usage(a, "%s", e.msg);
    if (!rc)
        rc = sw_args_duration(a, "timeout", 1, 86400000, &timeout_ms);
    o->connections = (long)conns;
    o->timeout_ms = (unsigned)timeout_ms;
    return rc;
}

/* What each request asks: --prompts, the cache and EOS flags, --extra (*extra: the parsed
 * object, the caller's to free). */
static int read_requests(const struct sw_args *a, struct sw_bench_opts *o, json_t **extra)
{
    struct sw_err e;
    const char *x = sw_args_str(a, "extra");
    o->prompts_file = sw_args_str(a, "prompts");
    o->cache_prompt = sw_args_flag(a, "cache-prompt");
    o->reuse_prompt = sw_args_flag(a, "reuse-prompt");
    o->expect_hit = sw_args_flag(a, "expect-hit");
    o->reset_cache = sw_args_flag(a, "reset-cache");
    o->engine_metrics = !sw_args_flag(a, "no-engine-metrics");
    o->emit_stamps = sw_args_flag(a, "emit-stamps");
    o->ignore_eos = !sw_args_flag(a, "eos");
    if (!x)
        return 0;
    *extra = sw_json_parse(x, strlen(x), "--extra", &e);
    if (!*extra || !json_is_object(*extra))
        return sw_args_usage(a, "--extra: %s", *extra ? "not a JSON object" : e.msg);
    o->extra = *extra;
    return 0;
}

/* Every option into o (the endpoint's route already in it): 0, or the exit code to return. */
static int read_opts(const struct sw_args *a, struct sw_bench_opts *o, json_t **extra)
{
    const char *engine = sw_args_str(a, "engine");
    if (sw_args_str(a, "model"))
        o->model = sw_args_str(a, "model");
    if (engine && strcmp(engine, "llama.cpp") && strcmp(engine, "vllm") &&
        strcmp(engine, "sglang") && strcmp(engine, "openai"))
        return sw_args_usage(a, "--engine %s: llama.cpp, vllm, sglang or openai", engine);
    if (engine)
        o->engine = engine;
    static int (*const readers[])(const struct sw_args *, struct sw_bench_opts *) = {
        read_points, read_open_loop, read_client};
    int rc = 0;
    for (size_t i = 0; i < SW_ARRAY_LEN(readers) && !rc; i++)
        rc = readers[i](a, o);
    if (rc)
        return rc;
    if (o->mode == SW_BENCH_OPEN && (o->nconc || sw_args_str(a, "repeat")))
        return sw_args_usage(a, "--rate is open loop: --concurrency and --repeat are closed-loop "
                                "options");
    if (o->mode == SW_BENCH_OPEN && o->ndepths > 1)
        return sw_args_usage(a, "--rate runs one depth (got %s)", sw_args_str(a, "depth"));
    if (sw_args_str(a, "prompts") && (o->ndepths || sw_args_str(a, "pp")))
        return sw_args_usage(a, "--prompts sends the file's requests: --depth and --pp do not "
                                "apply");
    rc = read_requests(a, o, extra);
    if (rc)
        return rc;
    rc = sw_cli_key_env(a, &o->api_key);
    if (rc)
        return rc;
    o->progress = a->json || sw_args_flag(a, "quiet") ? NULL : stderr;
    return 0;
}

/* --svg, --html, --csv: each written, or its failure said (and the name dropped); exit 1 when
 * one failed. */
static int write_files(const struct sw_args *a, const struct sw_bench_report *rep,
                       const char *names[3])
{
    static const char *const flag[3] = {"svg", "html", "csv"};
    int (*const write[3])(const struct sw_bench_report *, const char *, struct sw_err *) = {
        sw_bench_report_svg, sw_bench_report_html, sw_bench_report_csv};
    int rc = SW_EXIT_OK;
    for (size_t i = 0; i < 3; i++) {
        struct sw_err e;
        char m[1200];
        sw_err_clear(&e);
        names[i] = sw_args_str(a, flag[i]);
        if (names[i] && write[i](rep, names[i], &e)) {
            fprintf(stderr, "slipway bench: --%s %s: %s\n", flag[i], names[i],
                    sw_err_format(&e, m, sizeof(m)));
            rc = SW_EXIT_FAIL;
            names[i] = NULL;
        }
    }
    return rc;
}

/* --ledger: the run recorded (*id), unless a request reported figures that cannot be (a server
 * that claims what cannot be is not believed about the rest of the run: the ledger feeds compare
 * and the sim's fit). Exit 1 when not recorded. */
static int record(const char *ledger, const char *endpoint, const struct sw_bench_target *t,
                  const struct sw_bench_opts *o, const struct sw_bench_report *rep, json_t *doc,
                  const char *svg, int64_t started, int64_t *id)
{
    struct sw_err e;
    char m[1200];
    size_t invalid = sw_bench_report_invalid(rep);
    sw_err_clear(&e);
    if (invalid) {
        char why[160];
        snprintf(why, sizeof(why), "%zu request%s reported figures that cannot be (marked invalid)",
                 invalid, invalid == 1 ? "" : "s");
        fprintf(stderr, "slipway bench: not recorded in %s: %s\n", ledger, why);
        sw_json_set_str(doc, "ledger_not_recorded", why);
        return SW_EXIT_FAIL;
    }
    if (sw_bench_record(ledger, endpoint, t->ep, o, doc, svg, started, id, &e)) {
        fprintf(stderr, "slipway bench: not recorded: %s\n", sw_err_format(&e, m, sizeof(m)));
        return SW_EXIT_FAIL;
    }
    sw_json_set_int(doc, "ledger_id", *id);
    return SW_EXIT_OK;
}

static void print_human(const struct sw_bench_report *rep, const char *const files[3],
                        const char *ledger, int64_t id)
{
    static const char *const what[3] = {"chart", "page", "csv"};
    sw_bench_report_print(stdout, rep);
    for (size_t i = 0; i < 3; i++)
        if (files[i])
            printf("%s: %s\n", what[i], files[i]);
    if (ledger && id)
        printf("recorded as bench %lld in %s\n", (long long)id, ledger);
}

int sw_cmd_bench(int argc, char **argv)
{
    struct sw_args a;
    struct sw_bench_opts o;
    struct sw_bench_target t;
    struct sw_bench_report rep;
    struct sw_err e;
    json_t *doc = NULL, *extra = NULL;
    const char *files[3] = {NULL, NULL, NULL};
    int64_t id = 0;
    int rc, exit_code = SW_EXIT_OK;
    /* `bench compare A B`: two recorded runs (a URL has "://"; name an endpoint called compare
     * by its URL) */
    if (argc > 1 && !strcmp(argv[1], "compare"))
        return sw__cmd_bench_compare(argc - 1, argv + 1);
    if (!sw_args_parse(&sw_spec_bench, argc, argv, &a, &rc))
        return rc;
    static const char *const uses[] = {"ledger", NULL};
    rc = sw_cli_no_ledger(&a, uses);
    if (rc)
        return rc;
    const char *target = a.npos ? a.pos[0] : NULL;
    if (!target)
        return sw_cli_need_endpoint(&a, " (or a URL)");
    sw_bench_opts_init(&o);
    memset(&t, 0, sizeof(t));
    memset(&rep, 0, sizeof(rep));
    sw_err_clear(&e);
    bool by_url = strstr(target, "://") != NULL;
    if (by_url) {
        o.url = target;
    } else {
        struct sw_cli_fleet fl;
        exit_code = sw_cli_fleet(&a, 0, 0, &fl);
        if (exit_code)
            goto out;
        if (sw_bench_target_open(fl.path, target, &o, &t, &e)) {
            exit_code = sw_cli_fail(&e, a.json);
            goto out;
        }
    }
    exit_code = read_opts(&a, &o, &extra);
    if (exit_code)
        goto out;
    int64_t started = sw_wall_unix();
    if (sw_bench_run(&o, &rep, &e)) {
        exit_code = sw_cli_fail(&e, a.json);
        goto out;
    }
    doc = sw_bench_report_json(&rep, sw_args_flag(&a, "samples"));
    if (!doc) {
        sw_err_set(&e, SW_ENOMEM, "bench: the report could not be built (out of memory)");
        exit_code = sw_cli_fail(&e, a.json);
        goto out;
    }
    exit_code = write_files(&a, &rep, files);
    const char *ledger = sw_args_str(&a, "ledger");
    if (ledger &&
        record(ledger, by_url ? rep.url : target, &t, &o, &rep, doc, files[0], started, &id))
        exit_code = SW_EXIT_FAIL;
    if (a.json)
        sw_json_print(stdout, doc, true);
    else
        print_human(&rep, files, ledger, id);
    if (!sw_bench_report_held(&rep, o.emit_stamps))
        exit_code = SW_EXIT_FAIL;
out:
    json_decref(doc);
    json_decref(extra);
    sw_bench_report_free(&rep);
    sw_bench_target_close(&t);
    return exit_code;
}
