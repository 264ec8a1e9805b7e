/*
 * slipway bench URL|ENDPOINT [--fleet FLEET.yaml] [--depth LIST] [--pp N] [--tg N] [--repeat N]
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
 * Exit: 0 the run ran and every check held, 1 a request failed (or was invalid), the cache
 * check failed, the
 * token counts disagreed with the engine's, the open-loop run was invalid (send lag) or, with
 * --emit-stamps, a token could not be matched to its emitter's stamp; 2 unusable input.
 */
#include "cli.h"

#include <slipway/bench.h>
#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/service.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"fleet", 0, "FLEET.yaml", 0, "the fleet ENDPOINT is in (default ./fleet.yaml)", NULL},
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
    .synopsis = "URL|ENDPOINT [--fleet FLEET.yaml] [--depth LIST] [--pp N] [--tg N] [--repeat N]\n"
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
};

static int count_opt(const char *flag, const char *v, uint64_t max, uint64_t *out, bool json)
{
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_parse_count(v, out, &e))
        return sw_cli_usage_json("bench", json, "%s: %s", flag, e.msg);
    if (*out > max) {
        return sw_cli_usage_json("bench", json, "%s: at most %llu", flag, (unsigned long long)max);
    }
    return 0;
}

/* "0,1k,4k": the list split on commas first (sw_parse_count reads "1,000" as one number). */
static int list_opt(const char *flag, const char *v, uint64_t max, int64_t *out, size_t *n,
                    bool json)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", v);
    *n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t x;
        if (*n >= SW_BENCH_MAX_POINTS)
            return sw_cli_usage_json("bench", json, "%s: more than %d values", flag,
                                     SW_BENCH_MAX_POINTS);
        int rc = count_opt(flag, t, max, &x, json);
        if (rc)
            return rc;
        out[(*n)++] = (int64_t)x;
    }
    if (!*n)
        return sw_cli_usage_json("bench", json, "%s %s: no value", flag, v);
    return 0;
}

static int dur_opt(const char *flag, const char *v, double *s, bool json)
{
    struct sw_err e;
    int64_t ms;
    sw_err_clear(&e);
    if (sw_parse_duration_ms(v, &ms, &e))
        return sw_cli_usage_json("bench", json, "%s: %s", flag, e.msg);
    if (ms <= 0 || ms > 86400000)
        return sw_cli_usage_json("bench", json, "%s %s: must be more than 0 and at most a day",
                                 flag, v);
    *s = (double)ms / 1000.0;
    return 0;
}

static int real_opt(const char *flag, const char *v, double *out, bool json)
{
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x <= 0)
        return sw_cli_usage_json("bench", json, "%s %s: a positive number", flag, v);
    *out = x;
    return 0;
}

/* "ttft=2s,tpot=50ms,e2e=30s" */
static int slo_opt(const char *v, struct sw_bench_opts *o, bool json)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        double s = 0;
        if (!eq)
            return sw_cli_usage_json("bench", json, "--slo %s: NAME=DURATION (ttft, tpot, e2e)", t);
        *eq = '\0';
        int rc = dur_opt("--slo", eq + 1, &s, json);
        if (rc)
            return rc;
        if (!strcmp(t, "ttft"))
            o->slo_ttft_s = s;
        else if (!strcmp(t, "tpot"))
            o->slo_tpot_s = s;
        else if (!strcmp(t, "e2e"))
            o->slo_e2e_s = s;
        else
            return sw_cli_usage_json("bench", json, "--slo %s: ttft, tpot or e2e", t);
    }
    return 0;
}

static int record(const char *path, const char *endpoint, const struct sw_fleet_endpoint *ep,
                  const struct sw_bench_opts *o, json_t *doc, const char *svg, int64_t started,
                  int64_t *id, struct sw_err *e)
{
    json_t *params = json_object();
    /* the endpoint's shape and its hash (the ledger's canonical form), so a run is compared
     * with runs of the same shape */
    json_t *shape = ep ? sw_plan_shape(ep) : NULL;
    json_t *canon = NULL;
    char hash[SW_LEDGER_HASH_LEN + 1];
    if (shape && !sw_ledger_shape_canon(shape, &canon, NULL, hash, NULL)) {
        sw_json_set_new(params, "shape", canon);
        sw_json_set_str(params, "shape_hash", hash);
    }
    json_decref(shape);
    json_t *d = json_array(), *c = json_array();
    for (size_t i = 0; i < o->ndepths; i++)
        json_array_append_new(d, json_integer(o->depths[i]));
    for (size_t i = 0; i < o->nconc; i++)
        json_array_append_new(c, json_integer(o->conc[i]));
    sw_json_set_new(params, "depths", d);
    sw_json_set_new(params, "concurrency", c);
    sw_json_set_int(params, "tg", o->tg);
    sw_json_set_int(params, "pp", o->pp);
    sw_json_set_int(params, "repeat", o->repeat);
    sw_json_set_bool(params, "cache_prompt", o->cache_prompt);
    sw_json_set_bool(params, "reuse_prompt", o->reuse_prompt);
    sw_json_set_bool(params, "open_loop", o->mode == SW_BENCH_OPEN);
    if (o->mode == SW_BENCH_OPEN) {
        sw_json_set_real(params, "rate", o->rate);
        sw_json_set_real(params, "duration_s", o->duration_s);
        sw_json_set_int(params, "seed", (int64_t)o->seed);
    }
    if (o->prompts_file)
        sw_json_set_str(params, "prompts", o->prompts_file);
    struct sw_ledger led;
    memset(&led, 0, sizeof(led));
    int rc = sw_ledger_open(&led, path, NULL, e);
    if (!rc)
        rc = sw_ledger_record_bench(&led, endpoint, 0, started, params, doc, svg, NULL, id, e);
    sw_ledger_close(&led);
    json_decref(params);
    return rc;
}

int sw_cmd_bench(int argc, char **argv)
{
    struct sw_args a;
    int rc;
    /* `bench compare A B`: two recorded runs (a URL has "://"; name an endpoint called compare
     * by its URL) */
    if (argc > 1 && !strcmp(argv[1], "compare"))
        return sw__cmd_bench_compare(argc - 1, argv + 1);
    if (!sw_args_parse(&sw_spec_bench, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    const char *target = a.npos ? a.pos[0] : NULL;
    if (!target)
        return sw_cli_usage_json("bench", json, "which URL or endpoint?");
    struct sw_bench_opts o;
    sw_bench_opts_init(&o);
    struct sw_fleet *fleet = NULL;
    struct sw_bench_report rep;
    memset(&rep, 0, sizeof(rep));
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_service_client sc;
    memset(&sc, 0, sizeof(sc));
    char *key = NULL;
    json_t *doc = NULL, *extra = NULL;
    const struct sw_fleet_endpoint *ep = NULL;
    struct sw_bench_roof roof;
    char roof_why[300] = "";
    int exit_code = SW_EXIT_OK;
    const char *v;
    uint64_t x;
    if (strstr(target, "://")) {
        o.url = target;
    } else {
        /* the endpoint as a client reaches it: through its host when it listens on the
         * host's loopback */
        const char *fp = sw_args_str(&a, "fleet");
        rc = sw_fleet_load(fp ? fp : "fleet.yaml", NULL, &fleet, &e);
        if (!rc)
            rc = sw_service_client_open(fleet, target, &sc, &e);
        if (rc) {
            exit_code = sw_cli_fail(&e, json);
            goto out;
        }
        ep = sc.ep;
        key = sc.api_key;
        sc.api_key = NULL;
        o.url = sc.route.url;
        o.unix_socket = sc.route.unix_socket;
        o.model = sc.model;
        o.engine = sc.engine;
        /* the decode roofline from the endpoint's plan and its devices' bandwidth */
        struct sw_plan plan;
        struct sw_err pe;
        sw_err_clear(&pe);
        memset(&plan, 0, sizeof(plan));
        int prc = sw_plan_endpoint(fleet, ep, NULL, &plan, &pe);
        if (!prc)
            prc = sw_bench_roof_from_plan(&plan, &roof, &pe);
        if (prc)
            snprintf(roof_why, sizeof(roof_why), "%.290s", pe.msg);
        else
            o.roof = &roof;
        o.roof_why = roof_why;
        sw_plan_free(&plan);
    }
    v = sw_args_str(&a, "model");
    if (v)
        o.model = v;
    v = sw_args_str(&a, "engine");
    if (v) {
        if (strcmp(v, "llama.cpp") && strcmp(v, "vllm") && strcmp(v, "sglang") &&
            strcmp(v, "openai")) {
            exit_code = sw_cli_usage_json("bench", json,
                                          "--engine %s: llama.cpp, vllm, sglang or openai", v);
            goto out;
        }
        o.engine = v;
    }
    v = sw_args_str(&a, "depth");
    if (v) {
        exit_code = list_opt("--depth", v, 100000000u, o.depths, &o.ndepths, json);
        if (exit_code)
            goto out;
    }
    v = sw_args_str(&a, "concurrency");
    if (v) {
        int64_t cl[SW_BENCH_MAX_POINTS];
        exit_code = list_opt("--concurrency", v, 4096, cl, &o.nconc, json);
        if (exit_code)
            goto out;
        for (size_t i = 0; i < o.nconc; i++) {
            if (cl[i] < 1) {
                exit_code = sw_cli_usage_json("bench", json,
                                              "--concurrency %s: every level must be >= 1", v);
                goto out;
            }
            o.conc[i] = (int)cl[i];
        }
    }
    v = sw_args_str(&a, "pp");
    if (v) {
        exit_code = count_opt("--pp", v, 100000000u, &x, json);
        if (exit_code)
            goto out;
        o.pp = (int64_t)x;
    }
    v = sw_args_str(&a, "tg");
    if (v) {
        exit_code = count_opt("--tg", v, 1000000u, &x, json);
        if (exit_code)
            goto out;
        o.tg = (int64_t)x;
    }
    v = sw_args_str(&a, "repeat");
    if (v) {
        exit_code = count_opt("--repeat", v, 100000u, &x, json);
        if (exit_code)
            goto out;
        o.repeat = (int)x;
    }
    v = sw_args_str(&a, "rate");
    if (v) {
        exit_code = real_opt("--rate", v, &o.rate, json);
        if (exit_code)
            goto out;
        o.mode = SW_BENCH_OPEN;
    }
    v = sw_args_str(&a, "arrival");
    if (v) {
        if (sw_bench_arrival_parse(v, &o.arrival, &o.cv, &e)) {
            exit_code = sw_cli_usage_json("bench", json, "%s", e.msg);
            goto out;
        }
    }
    v = sw_args_str(&a, "duration");
    if (v) {
        exit_code = dur_opt("--duration", v, &o.duration_s, json);
        if (exit_code)
            goto out;
    }
    v = sw_args_str(&a, "seed");
    if (v) {
        exit_code = count_opt("--seed", v, UINT64_MAX, &x, json);
        if (exit_code)
            goto out;
        o.seed = x;
    }
    v = sw_args_str(&a, "max-lag");
    if (v) {
        exit_code = real_opt("--max-lag", v, &o.max_lag_ms, json);
        if (exit_code)
            goto out;
    }
    v = sw_args_str(&a, "connections");
    if (v) {
        exit_code = count_opt("--connections", v, 100000u, &x, json);
        if (exit_code)
            goto out;
        o.connections = (long)x;
    }
    v = sw_args_str(&a, "threads");
    if (v) {
        exit_code = count_opt("--threads", v, 256u, &x, json);
        if (exit_code)
            goto out;
        if (x < 1) {
            exit_code = sw_cli_usage_json("bench", json, "--threads %s: 1..256", v);
            goto out;
        }
        o.threads = (int)x;
    }
    v = sw_args_str(&a, "slo");
    if (v) {
        exit_code = slo_opt(v, &o, json);
        if (exit_code)
            goto out;
    }
    v = sw_args_str(&a, "timeout");
    if (v) {
        double s;
        exit_code = dur_opt("--timeout", v, &s, json);
        if (exit_code)
            goto out;
        o.timeout_ms = (unsigned)(s * 1000);
    }
    if (o.mode == SW_BENCH_OPEN && (o.nconc || sw_args_str(&a, "repeat"))) {
        exit_code = sw_cli_usage_json("bench", json,
                                      "--rate is open loop: --concurrency and --repeat are "
                                      "closed-loop options");
        goto out;
    }
    if (o.mode == SW_BENCH_OPEN && o.ndepths > 1) {
        exit_code = sw_cli_usage_json("bench", json, "--rate runs one depth (got %s)",
                                      sw_args_str(&a, "depth"));
        goto out;
    }
    o.prompts_file = sw_args_str(&a, "prompts");
    if (o.prompts_file && (o.ndepths || sw_args_str(&a, "pp"))) {
        exit_code = sw_cli_usage_json("bench", json,
                                      "--prompts sends the file's requests: --depth and --pp do "
                                      "not apply");
        goto out;
    }
    o.cache_prompt = sw_args_flag(&a, "cache-prompt");
    o.reuse_prompt = sw_args_flag(&a, "reuse-prompt");
    o.expect_hit = sw_args_flag(&a, "expect-hit");
    o.reset_cache = sw_args_flag(&a, "reset-cache");
    o.engine_metrics = !sw_args_flag(&a, "no-engine-metrics");
    o.emit_stamps = sw_args_flag(&a, "emit-stamps");
    o.ignore_eos = !sw_args_flag(&a, "eos");
    v = sw_args_str(&a, "extra");
    if (v) {
        extra = sw_json_parse(v, strlen(v), "--extra", &e);
        if (!extra || !json_is_object(extra)) {
            exit_code = sw_cli_usage_json("bench", json, "--extra: %s",
                                          extra ? "not a JSON object" : e.msg);
            goto out;
        }
        o.extra = extra;
    }
    v = sw_args_str(&a, "api-key-env");
    if (v) {
        const char *k = getenv(v);
        if (!k || !*k) {
            sw_err_set(&e, SW_ENOENT, "--api-key-env: %s is not set", v);
            exit_code = sw_cli_fail(&e, json);
            goto out;
        }
        sw_free(key);
        key = sw_strdup(k);
    }
    o.api_key = key;
    o.progress = json || sw_args_flag(&a, "quiet") ? NULL : stderr;
    int64_t started = sw_wall_unix();
    rc = sw_bench_run(&o, &rep, &e);
    if (rc) {
        exit_code = sw_cli_fail(&e, json);
        goto out;
    }
    doc = sw_bench_report_json(&rep, sw_args_flag(&a, "samples"));
    if (!doc) {
        sw_err_set(&e, SW_ENOMEM, "bench: the report could not be built (out of memory)");
        exit_code = sw_cli_fail(&e, json);
        goto out;
    }
    const char *svg = sw_args_str(&a, "svg");
    if (svg) {
        sw_err_clear(&e);
        if (sw_bench_report_svg(&rep, svg, &e)) {
            char m[1200];
            fprintf(stderr, "slipway bench: --svg %s: %s\n", svg, sw_err_format(&e, m, sizeof(m)));
            exit_code = SW_EXIT_FAIL;
            svg = NULL;
        }
    }
    const char *html = sw_args_str(&a, "html");
    if (html) {
        sw_err_clear(&e);
        if (sw_bench_report_html(&rep, html, &e)) {
            char m[1200];
            fprintf(stderr, "slipway bench: --html %s: %s\n", html,
                    sw_err_format(&e, m, sizeof(m)));
            exit_code = SW_EXIT_FAIL;
            html = NULL;
        }
    }
    const char *csv = sw_args_str(&a, "csv");
    if (csv) {
        sw_err_clear(&e);
        if (sw_bench_report_csv(&rep, csv, &e)) {
            char m[1200];
            fprintf(stderr, "slipway bench: --csv %s: %s\n", csv, sw_err_format(&e, m, sizeof(m)));
            exit_code = SW_EXIT_FAIL;
            csv = NULL;
        }
    }
    const char *ledger = sw_args_str(&a, "ledger");
    int64_t id = 0;
    size_t invalid = 0;
    for (size_t i = 0; i < rep.npoints; i++)
        invalid += rep.points[i].invalid;
    if (ledger && invalid) {
        /* a server that claims what cannot be is not believed about the rest of the run: the
         * ledger feeds compare and the sim's fit */
        char why[160];
        snprintf(why, sizeof(why), "%zu request%s reported figures that cannot be (marked invalid)",
                 invalid, invalid == 1 ? "" : "s");
        fprintf(stderr, "slipway bench: not recorded in %s: %s\n", ledger, why);
        sw_json_set_str(doc, "ledger_not_recorded", why);
        exit_code = SW_EXIT_FAIL;
    } else if (ledger) {
        sw_err_clear(&e);
        if (record(ledger, fleet ? target : rep.url, ep, &o, doc, svg, started, &id, &e)) {
            char m[1200];
            fprintf(stderr, "slipway bench: not recorded: %s\n", sw_err_format(&e, m, sizeof(m)));
            exit_code = SW_EXIT_FAIL;
        } else {
            sw_json_set_int(doc, "ledger_id", id);
        }
    }
    if (json) {
        sw_json_print(stdout, doc, true);
    } else {
        sw_bench_report_print(stdout, &rep);
        if (svg)
            printf("chart: %s\n", svg);
        if (html)
            printf("page: %s\n", html);
        if (csv)
            printf("csv: %s\n", csv);
        if (ledger && id)
            printf("recorded as bench %lld in %s\n", (long long)id, ledger);
    }
    bool bad = rep.invalid || !rep.cache_verified;
    for (size_t i = 0; i < rep.npoints; i++)
        bad = bad || rep.points[i].failed || !rep.points[i].counts_agree ||
              (o.emit_stamps && (rep.points[i].emit_missing || rep.points[i].emit_bad ||
                                 rep.points[i].emit_matched != rep.points[i].tokens_out));
    if (bad)
        exit_code = SW_EXIT_FAIL;
out:
    json_decref(doc);
    json_decref(extra);
    sw_bench_report_free(&rep);
    if (key) {
        memset(key, 0, strlen(key));
        sw_free(key);
    }
    sw_service_client_close(&sc);
    sw_fleet_free(fleet);
    return exit_code;
}
