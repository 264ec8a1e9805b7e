/*
 * slipway probe URL|ENDPOINT [--fleet FLEET.yaml] [--json] [--only CHECKS] [--worst-case]
 *                           [--model NAME] [--window N] [--slots N] [--engine E]
 *                           [--vision yes|no] [--api-key-env VAR] [--timeout S]
 *                           [--ready-wait S] [--deadline S] [--record] [--ledger PATH]
 *                           [--quiet]
 *
 * Run the live battery (see include/slipway/probe.h) against a URL, or against an endpoint of
 * the fleet: then the URL, served name, engine, slots, the window clients rely on (the harness's
 * contextWindow), whether a projector is declared, and the API key's reference come from the
 * fleet file. Flags override. A token is never taken from argv: --api-key-env names the variable.
 * --record writes the battery into the ledger (beside the fleet, or --ledger PATH).
 *
 * Exit: 0 every check passed or was skipped, 1 a check failed or the endpoint is unreachable or
 * silent, 2 unusable input.
 */
#include "cli.h"

#include <slipway/engine.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/probe.h>
#include <slipway/service.h>

#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"fleet", 0, "FLEET.yaml", 0, "the fleet ENDPOINT is in (default ./fleet.yaml)", NULL},
    {"only", 0, "CHECKS", 0,
     "run only these checks (comma-separated): readiness liveness models chat\n"
     "stream reasoning tool_calls vision metrics over_length concurrency speed worst_case",
     NULL},
    {"worst-case", 0, NULL, 0, "add worst_case: a full window on every slot at once", NULL},
    {"model", 0, "NAME", 0, "the served model name (default: the endpoint's alias)", NULL},
    {"window", 0, "N", 0, "the window clients rely on (default: the harness's contextWindow)",
     NULL},
    {"slots", 0, "N", 0, "the slots the endpoint serves at once", NULL},
    {"engine", 0, "ENGINE", 0, "llama.cpp, vllm or sglang (what /metrics and errors look like)",
     NULL},
    {"vision", 0, "yes|no", 0, "whether a projector is loaded (the vision check)", NULL},
    {"api-key-env", 0, "VAR", 0, "the environment variable holding the API key (never argv)", NULL},
    {"timeout", 0, "S", 0, "each request's timeout in seconds", NULL},
    {"ready-wait", 0, "S", 0, "how long readiness may take, in seconds", NULL},
    {"deadline", 0, "S", 0,
     "the whole battery's deadline in seconds (default 900); every wait is cut\nto what is left",
     NULL},
    {"record", 0, NULL, 0, "write the battery into the ledger", NULL},
    {"ledger", 0, "PATH", 0, "the ledger --record writes (default: beside the fleet)", NULL},
    {"quiet", 'q', NULL, 0, "no progress on stderr", NULL},
    {"svg", 0, "FILE", 0,
     "the speed check as a chart (decode and prefill tok/s by depth, client and\nserver)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway probe local --fleet examples/local.yaml",
    "slipway probe http://127.0.0.1:8080 --only readiness,liveness,chat --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_probe = {
    .name = "probe",
    .summary = "run the live battery against an endpoint: readiness to worst case, with evidence",
    .synopsis = "URL|ENDPOINT [--fleet FLEET.yaml] [--json] [--only CHECKS] [--worst-case]\n"
                "    [--model NAME] [--window N] [--slots N] [--engine llama.cpp|vllm|sglang]\n"
                "    [--vision yes|no] [--api-key-env VAR] [--timeout S] [--ready-wait S]\n"
                "    [--deadline S] [--record] [--ledger PATH] [--quiet] [--svg FILE]",
    .about =
        "ENDPOINT is a name in the fleet file (default ./fleet.yaml); URL is http(s)://...\n"
        "The fleet gives the URL, served name, engine, slots, window, projector and API key's\n"
        "reference; options override. Exit 0 every check passed or was skipped, 1 a check\n"
        "failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
};

struct opts {
    const char *target, *fleet, *only, *model, *engine, *vision, *key_env, *ledger;
    const char *window, *slots, *timeout, *ready, *svg, *deadline;
    bool json, worst, record, quiet, help;
};

static int parse(int argc, char **argv, struct opts *o)
{
    struct sw_args a;
    int rc;
    memset(o, 0, sizeof(*o));
    if (!sw_args_parse(&sw_spec_probe, argc, argv, &a, &rc)) {
        o->help = rc == SW_EXIT_OK;
        return rc;
    }
    o->json = a.json;
    o->worst = sw_args_flag(&a, "worst-case");
    o->record = sw_args_flag(&a, "record");
    o->quiet = sw_args_flag(&a, "quiet");
    o->fleet = sw_args_str(&a, "fleet");
    o->only = sw_args_str(&a, "only");
    o->model = sw_args_str(&a, "model");
    o->engine = sw_args_str(&a, "engine");
    o->vision = sw_args_str(&a, "vision");
    o->key_env = sw_args_str(&a, "api-key-env");
    o->ledger = sw_args_str(&a, "ledger");
    o->window = sw_args_str(&a, "window");
    o->slots = sw_args_str(&a, "slots");
    o->timeout = sw_args_str(&a, "timeout");
    o->ready = sw_args_str(&a, "ready-wait");
    o->deadline = sw_args_str(&a, "deadline");
    o->svg = sw_args_str(&a, "svg");
    o->target = a.npos ? a.pos[0] : NULL;
    return 0;
}

static int num(const char *flag, const char *v, uint64_t *out, bool json)
{
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_parse_count(v, out, &e))
        return sw_cli_usage_json("probe", json, "%s: %s", flag, e.msg);
    return 0;
}

/* A duration flag (seconds, or with a unit) as milliseconds, at most a day. */
/* A duration option (a bare number is seconds; ms, s, m, h): at most a day, at least min_ms. */
static int dur(const char *flag, const char *v, int64_t min_ms, unsigned *ms, bool json)
{
    struct sw_err e;
    int64_t x;
    sw_err_clear(&e);
    if (sw_parse_duration_ms(v, &x, &e))
        return sw_cli_usage_json("probe", json, "%s: %s", flag, e.msg);
    if (x > 86400000)
        return sw_cli_usage_json("probe", json, "%s %s: more than a day (86400 s)", flag, v);
    if (x < min_ms)
        return sw_cli_usage_json("probe", json, "%s %s: less than %lld ms", flag, v,
                                 (long long)min_ms);
    *ms = (unsigned)x;
    return 0;
}

/* Fill the target from a fleet endpoint: its route (through its host when it listens on the
 * host's loopback), served name, engine, key, slots, window and vision. */
static int from_fleet(const struct opts *o, struct sw_fleet **fp, struct sw_probe_target *t,
                      struct sw_service_client *sc, char **key, struct sw_err *e)
{
    int rc = sw_fleet_load(o->fleet ? o->fleet : "fleet.yaml", NULL, fp, e);
    if (!rc)
        rc = sw_service_client_open(*fp, o->target, sc, e);
    if (rc)
        return rc;
    const struct sw_fleet_endpoint *ep = sc->ep;
    t->url = sc->route.url;
    t->unix_socket = sc->route.unix_socket;
    t->via = sc->route.via;
    t->model = sc->model;
    t->engine = sc->engine;
    if (ep->shape.seqs.set)
        t->slots = (int)ep->shape.seqs.v;
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(*fp, ep);
    if (cw && cw->set)
        t->window = (int64_t)cw->v;
    else if (ep->shape.max_model_len.set)
        t->window = (int64_t)ep->shape.max_model_len.v;
    if (ep->payload.mmproj.off)
        t->vision = 0;
    else if (ep->payload.mmproj.v)
        t->vision = 1;
    if (!o->key_env) {
        *key = sc->api_key;
        sc->api_key = NULL;
    }
    return 0;
}

int sw_cmd_probe(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o);
    if (rc || o.help)
        return rc;
    if (!o.target)
        return sw_cli_usage_json("probe", o.json, "which URL or endpoint?");
    struct sw_probe_target t;
    memset(&t, 0, sizeof(t));
    t.vision = -1;
    struct sw_fleet *fleet = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_service_client sc;
    memset(&sc, 0, sizeof(sc));
    char *key = NULL;
    struct sw_probe_report rep;
    memset(&rep, 0, sizeof(rep));
    int exit_code = SW_EXIT_OK;
    if (strstr(o.target, "://")) {
        t.url = o.target;
    } else {
        rc = from_fleet(&o, &fleet, &t, &sc, &key, &e);
        if (rc) {
            exit_code = sw_cli_fail(&e, o.json);
            goto out;
        }
    }
    uint64_t v;
    if (o.model)
        t.model = o.model;
    if (o.engine)
        t.engine = o.engine;
    if (o.window) {
        exit_code = num("--window", o.window, &v, o.json);
        if (exit_code)
            goto out;
        t.window = (int64_t)v;
    }
    if (o.slots) {
        exit_code = num("--slots", o.slots, &v, o.json);
        if (exit_code)
            goto out;
        t.slots = (int)SW_MIN(v, 100000);
    }
    if (o.timeout) {
        exit_code = dur("--timeout", o.timeout, 0, &t.timeout_ms, o.json);
        if (exit_code)
            goto out;
    }
    if (o.ready) {
        exit_code = dur("--ready-wait", o.ready, 0, &t.ready_ms, o.json);
        if (exit_code)
            goto out;
    }
    if (o.deadline) {
        exit_code = dur("--deadline", o.deadline, 1000, &t.deadline_ms, o.json);
        if (exit_code)
            goto out;
    }
    if (o.vision) {
        if (!strcmp(o.vision, "yes"))
            t.vision = 1;
        else if (!strcmp(o.vision, "no"))
            t.vision = 0;
        else {
            exit_code = sw_cli_usage_json("probe", o.json, "--vision takes yes or no");
            goto out;
        }
    }
    if (o.key_env) {
        const char *k = getenv(o.key_env);
        if (!k || !*k) {
            sw_err_set(&e, SW_ENOENT, "--api-key-env: %s is not set", o.key_env);
            exit_code = sw_cli_fail(&e, o.json);
            goto out;
        }
        sw_free(key);
        key = sw_strdup(k);
    }
    t.api_key = key;
    t.only = o.only;
    t.worst_case = o.worst;
    t.progress = o.quiet || o.json ? NULL : stderr;
    int64_t started = sw_wall_unix();
    rc = sw_probe_run(&t, &rep, &e);
    if (rc) {
        exit_code = sw_cli_fail(&e, o.json);
        goto out;
    }
    json_t *doc = sw_probe_report_json(&rep);
    if (!doc) {
        /* nothing printed must never read as success */
        sw_err_set(&e, SW_ENOMEM, "probe: the report could not be built (out of memory)");
        exit_code = sw_cli_fail(&e, o.json);
        goto out;
    }
    if (o.json) {
        sw_json_print(stdout, doc, true);
    } else {
        sw_probe_report_print(stdout, &rep);
    }
    if (o.record && doc) {
        char path[4096];
        struct sw_ledger led;
        memset(&led, 0, sizeof(led));
        int64_t id = 0;
        bool opened;
        rc = sw_ledger_open_for(&led, o.ledger, fleet ? fleet->path : o.fleet, NULL,
                                SW_LEDGER_MUST_EXIST, &opened, path, sizeof(path), &e);
        if (!rc)
            rc = sw_ledger_record_battery(&led, fleet ? o.target : NULL, 0, rep.url, started, doc,
                                          &id, &e);
        sw_ledger_close(&led);
        if (rc) {
            char m[1200];
            fprintf(stderr, "slipway probe: not recorded: %s\n", sw_err_format(&e, m, sizeof(m)));
        } else if (!o.json) {
            printf("recorded as battery %lld in %s\n", (long long)id, path);
        }
    }
    /* every check skipped because nothing answers is not a success either */
    exit_code = rep.failed || rep.gave_up[0] ? SW_EXIT_FAIL : SW_EXIT_OK;
    if (o.svg) {
        char m[1200];
        sw_err_clear(&e);
        if (!doc || sw_probe_speed_svg(doc, o.svg, &e)) {
            fprintf(stderr, "slipway probe: --svg %s: %s\n", o.svg,
                    doc ? sw_err_format(&e, m, sizeof(m)) : "out of memory");
            if (exit_code == SW_EXIT_OK)
                exit_code = SW_EXIT_FAIL;
        } else if (!o.json) {
            printf("speed chart: %s\n", o.svg);
        }
    }
    json_decref(doc);
out:
    sw_probe_report_free(&rep);
    if (key) {
        memset(key, 0, strlen(key));
        sw_free(key);
    }
    sw_service_client_close(&sc);
    sw_fleet_free(fleet);
    return exit_code;
}
