/*
 * slipway probe ENDPOINT|URL [--fleet FILE] [--json] [--only CHECKS] [--worst-case]
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
 * The endpoint's route and promises are probe/target.c's, the recording probe/record.c's; this
 * file reads the options into struct sw_probe_target and prints.
 *
 * Exit: 0 every check passed or was skipped, 1 a check failed or the endpoint is unreachable or
 * silent, 2 unusable input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/probe.h>

#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
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
    {"no-ledger", 0, NULL, 0,
     "read and write no ledger (the battery is not recorded; not with --record)", NULL},
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
    .synopsis = "ENDPOINT|URL [--fleet FILE] [--json] [--only CHECKS] [--worst-case]\n"
                "    [--model NAME] [--window N] [--slots N] [--engine llama.cpp|vllm|sglang]\n"
                "    [--vision yes|no] [--api-key-env VAR] [--timeout S] [--ready-wait S]\n"
                "    [--deadline S] [--record] [--ledger PATH] [--quiet] [--svg FILE]",
    .about =
        "ENDPOINT is a name in the fleet (--fleet FILE, else $SLIPWAY_FLEET, else\n"
        "./fleet.yaml); URL is http(s)://...\n"
        "The fleet gives the URL, served name, engine, slots, window, projector and API key's\n"
        "reference; options override. Exit 0 every check passed or was skipped, 1 a check\n"
        "failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

/* The options into t (the fleet's figures already in it; options override them): 0, or the exit
 * code to return (a usage error printed). */
static int read_opts(const struct sw_args *a, struct sw_probe_target *t)
{
    uint64_t window = (uint64_t)t->window, slots = (uint64_t)t->slots;
    int64_t timeout = t->timeout_ms, ready = t->ready_ms, deadline = t->deadline_ms;
    const char *vision = sw_args_str(a, "vision");
    if (sw_args_str(a, "model"))
        t->model = sw_args_str(a, "model");
    if (sw_args_str(a, "engine"))
        t->engine = sw_args_str(a, "engine");
    int rc = sw_args_number(a, "window", 0, UINT64_MAX, &window);
    if (!rc)
        rc = sw_args_number(a, "slots", 0, UINT64_MAX, &slots);
    if (!rc)
        rc = sw_args_duration(a, "timeout", 0, 86400000, &timeout);
    if (!rc)
        rc = sw_args_duration(a, "ready-wait", 0, 86400000, &ready);
    if (!rc)
        rc = sw_args_duration(a, "deadline", 1000, 86400000, &deadline);
    if (rc)
        return rc;
    t->window = (int64_t)window;
    if (sw_args_str(a, "slots"))
        t->slots = (int)SW_MIN(slots, 100000);
    t->timeout_ms = (unsigned)timeout;
    t->ready_ms = (unsigned)ready;
    t->deadline_ms = (unsigned)deadline;
    if (vision && strcmp(vision, "yes") && strcmp(vision, "no"))
        return sw_args_usage(a, "--vision takes yes or no");
    if (vision)
        t->vision = !strcmp(vision, "yes");
    rc = sw_cli_key_env(a, &t->api_key);
    if (rc)
        return rc;
    t->only = sw_args_str(a, "only");
    t->worst_case = sw_args_flag(a, "worst-case");
    t->progress = sw_args_flag(a, "quiet") || a->json ? NULL : stderr;
    return 0;
}

/* --record: the battery into the ledger; a failure is said, not fatal. */
static void record(const struct sw_args *a, const struct sw_probe_endpoint *pe,
                   const struct sw_probe_report *rep, int64_t started, const json_t *doc)
{
    struct sw_err e;
    char path[4096], m[1200];
    int64_t id = 0;
    sw_err_clear(&e);
    if (sw_probe_record(
            sw_args_str(a, "ledger"), pe->fleet ? pe->fleet->path : sw_args_str(a, "fleet"),
            pe->fleet ? a->pos[0] : NULL, rep, started, doc, &id, path, sizeof(path), &e))
        fprintf(stderr, "slipway probe: not recorded: %s\n", sw_err_format(&e, m, sizeof(m)));
    else if (!a->json)
        printf("recorded as battery %lld in %s\n", (long long)id, path);
}

/* --svg: the speed check as a chart; exit 1 when it could not be written. */
static int speed_svg(const struct sw_args *a, const json_t *doc, const char *svg)
{
    struct sw_err e;
    char m[1200];
    sw_err_clear(&e);
    if (sw_probe_speed_svg(doc, svg, &e)) {
        fprintf(stderr, "slipway probe: --svg %s: %s\n", svg, sw_err_format(&e, m, sizeof(m)));
        return SW_EXIT_FAIL;
    }
    if (!a->json)
        printf("speed chart: %s\n", svg);
    return SW_EXIT_OK;
}

int sw_cmd_probe(int argc, char **argv)
{
    struct sw_args a;
    struct sw_probe_target t;
    struct sw_probe_endpoint pe;
    struct sw_probe_report rep;
    struct sw_err e;
    json_t *doc = NULL;
    int rc, exit_code = SW_EXIT_OK;
    if (!sw_args_parse(&sw_spec_probe, argc, argv, &a, &rc))
        return rc;
    static const char *const uses[] = {"record", "ledger", NULL};
    rc = sw_cli_no_ledger(&a, uses);
    if (rc)
        return rc;
    if (!a.npos)
        return sw_cli_need_endpoint(&a, " (or a URL)");
    memset(&t, 0, sizeof(t));
    memset(&pe, 0, sizeof(pe));
    memset(&rep, 0, sizeof(rep));
    t.vision = -1;
    sw_err_clear(&e);
    if (strstr(a.pos[0], "://")) {
        t.url = a.pos[0];
    } else {
        struct sw_cli_fleet fl;
        exit_code = sw_cli_fleet(&a, 0, 0, &fl);
        if (exit_code)
            goto out;
        if (sw_probe_target_open(fl.path, a.pos[0], &t, &pe, &e)) {
            exit_code = sw_cli_fail(&e, a.json);
            goto out;
        }
    }
    exit_code = read_opts(&a, &t);
    if (exit_code)
        goto out;
    int64_t started = sw_wall_unix();
    if (sw_probe_run(&t, &rep, &e)) {
        exit_code = sw_cli_fail(&e, a.json);
        goto out;
    }
    doc = sw_probe_report_json(&rep);
    if (!doc) {
        /* nothing printed must never read as success */
        sw_err_set(&e, SW_ENOMEM, "probe: the report could not be built (out of memory)");
        exit_code = sw_cli_fail(&e, a.json);
        goto out;
    }
    if (a.json)
        sw_json_print(stdout, doc, true);
    else
        sw_probe_report_print(stdout, &rep);
    if (sw_args_flag(&a, "record"))
        record(&a, &pe, &rep, started, doc);
    /* every check skipped because nothing answers is not a success either */
    exit_code = rep.failed || rep.gave_up[0] ? SW_EXIT_FAIL : SW_EXIT_OK;
    if (sw_args_str(&a, "svg") && speed_svg(&a, doc, sw_args_str(&a, "svg")))
        exit_code = SW_EXIT_FAIL;
out:
    json_decref(doc);
    sw_probe_report_free(&rep);
    sw_probe_target_close(&pe);
    return exit_code;
}
