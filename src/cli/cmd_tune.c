/*
 * slipway tune ENDPOINT [--fleet FILE] --objective decode_tps@DEPTH|goodput[@DEPTH][:SLO]
 *              [--budget-boots N] [--repeats N] [--concurrency LIST | --max-concurrency N]
 *              [--tokens N] [--sim | --runner auto|local|sim|rollout] [--extra JSON]
 *              [--ledger PATH | --no-ledger] [--stop-running] [--dry-run] [--json] [--html OUT]
 *              [--apply]
 *
 *   Search the endpoint's declared knobs for a better objective (include/slipway/tune.h,
 *   docs/tune.md): candidates planned and gated before any boot, single-variable probes then
 *   combinations of the winners, noise from repeats, the best re-measured before it is crowned,
 *   every probe journaled in the ledger (a later run of the same space resumes).
 *
 * Exit: 0 the search ran (a winner or not), 1 interrupted or --apply failed, 2 unusable input.
 */
#include "cli.h"

#include <slipway/tune.h>

#include <stdlib.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"objective", 0, "OBJ", 0,
     "decode_tps@DEPTH (generated tok/s of wall time at DEPTH prompt tokens) or\n"
     "goodput[@DEPTH][:ttft=DUR,tpot=DUR,e2e=DUR] (requests/s within the SLOs; default\n"
     "tpot=100ms at depth 256)",
     NULL},
    {"budget-boots", 0, "N", 0, "at most N boots in the run, 1..1000 (default 16)", NULL},
    {"repeats", 0, "N", 0, "measurements per concurrency level, 2..16 (default 3)", NULL},
    {"max-concurrency", 0, "N", 0, "the load-side sweep's ceiling, 1..256 (default 8)", NULL},
    {"concurrency", 0, "LIST", 0,
     "the load to serve: measure at these levels only (1,4; at most 8 levels,\n"
     "each 1..256; clients past the slots queue). Default: 1, 2, 4... up to the slots",
     NULL},
    {"tokens", 0, "N", 0, "generated tokens per request, 1..65536 (default 64)", NULL},
    {"extra", 0, "JSON", 0,
     "an object whose keys are set in every bench request (a grammar, ...), as bench's", NULL},
    {"sim", 0, NULL, 0, "boot the simulator (slipway sim) instead of the engine", NULL},
    {"runner", 0, "R", 0,
     "how a probe boots: auto (default: local for a local llama.cpp endpoint, rollout\n"
     "for one on an ssh host, sim for vLLM), local, sim (as --sim), or rollout (a\n"
     "deploy on the endpoint's host: gates, battery, rollback; then benched there)",
     NULL},
    {"ledger", 0, "PATH", 0, "the journal (default: $SLIPWAY_LEDGER, else FLEET.ledger.sqlite)",
     NULL},
    {"no-ledger", 0, NULL, 0, "journal nothing and resume nothing (no ledger is opened)", NULL},
    {"stop-running", 0, NULL, 0,
     "local runner: stop the endpoint's own `slipway up` process first (without it,\n"
     "a running one refuses the run before any boot)",
     NULL},
    {"dry-run", 0, NULL, 0, "plan and gate every single-variable probe; boot nothing", NULL},
    {"html", 0, "OUT", 0, "also write the report as one self-contained HTML page", NULL},
    {"apply", 0, NULL, 0,
     "write a crowned winner into the fleet file (the values it spells; comments\n"
     "kept; checked by loading it again; atomic). Without it: the patch is shown",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway tune tiny --objective decode_tps@128 --budget-boots 8",
    "slipway tune frank-primary --fleet examples/operator.yaml --objective goodput:tpot=50ms "
    "--dry-run",
    NULL,
};

const struct sw_cmd_spec sw_spec_tune = {
    .name = "tune",
    .summary = "search an endpoint's declared knobs for a better objective, in few boots",
    .synopsis =
        "ENDPOINT [--fleet FILE] --objective decode_tps@DEPTH|goodput[:SLO]\n"
        "    [--budget-boots N] [--repeats N] [--concurrency LIST | --max-concurrency N]\n"
        "    [--tokens N] [--sim | --runner R] [--extra JSON] [--ledger PATH | --no-ledger]\n"
        "    [--stop-running] [--dry-run] [--json] [--html OUT] [--apply]",
    .about = "Moves only the knobs the fleet declares (knobs:), never a frozen one; the payload,\n"
             "its quantization and the image are frozen always. Every candidate is planned and\n"
             "gated (slipway check) before a boot is spent; a rejected one is listed with its\n"
             "gate. Single-variable probes first, then combinations of the winners; concurrency\n"
             "is swept inside each boot. A candidate wins only when its gain exceeds the noise\n"
             "(the spread of the repeats), and is re-measured before it is crowned. A local\n"
             "llama.cpp endpoint boots here; a vLLM endpoint (or --sim) boots the simulator; an\n"
             "endpoint on an ssh host (or --runner rollout) is deployed there, probe by probe.\n"
             "--apply writes a crowned winner into the fleet file.\n"
             "Exit: 0 ran, 1 interrupted (or --apply could not place it), 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

int sw_cmd_tune(int argc, char **argv)
{
    struct sw_args a;
    struct sw_tune_opts o;
    struct sw_err e;
    json_t *rep = NULL;
    int rc = 0;
    if (!sw_args_parse(&sw_spec_tune, argc, argv, &a, &rc))
        return rc;
    sw_err_clear(&e);
    sw_tune_opts_init(&o);
    if (a.npos < 1)
        return sw_cli_need_endpoint(&a, " to tune");
    o.endpoint = a.pos[0];
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    o.fleet = fl.path;
    const char *obj = sw_args_str(&a, "objective");
    if (!obj)
        return sw_args_usage(&a, "--objective is required (decode_tps@DEPTH or goodput[:SLO])");
    if (sw_tune_objective_parse(obj, &o.objective, &e))
        return sw_args_usage(&a, "%s", e.msg);
    uint64_t boots = 0, repeats = 0, conc = 0, tokens = 0;
    int64_t levels[SW_ARRAY_LEN(o.levels)];
    rc = sw_args_number(&a, "budget-boots", 1, 1000, &boots);
    if (!rc)
        rc = sw_args_number(&a, "repeats", 2, 16, &repeats);
    if (!rc)
        rc = sw_args_number(&a, "max-concurrency", 1, 256, &conc);
    if (!rc)
        rc = sw_args_number(&a, "tokens", 1, 65536, &tokens);
    if (!rc)
        rc = sw_args_list(&a, "concurrency", 1, 256, levels, SW_ARRAY_LEN(levels), &o.n_levels);
    if (rc)
        return rc;
    if (boots)
        o.budget_boots = (int)boots;
    if (repeats)
        o.repeats = (int)repeats;
    if (conc)
        o.max_concurrency = (int)conc;
    if (tokens)
        o.tokens = (long)tokens;
    for (size_t i = 0; i < o.n_levels; i++)
        o.levels[i] = (int)levels[i];
    json_t *extra = NULL;
    const char *xs = sw_args_str(&a, "extra");
    if (xs) {
        extra = sw_json_parse(xs, strlen(xs), "--extra", &e);
        if (!extra || !json_is_object(extra)) {
            json_decref(extra);
            return sw_args_usage(&a, "--extra: %s", extra ? "not a JSON object" : e.msg);
        }
        o.extra = extra;
    }
    o.boot = sw_args_flag(&a, "sim") ? SW_TUNE_BOOT_SIM : SW_TUNE_BOOT_AUTO;
    const char *rs = sw_args_str(&a, "runner");
    if (rs) {
        enum sw_tune_boot b = SW_TUNE_BOOT_AUTO;
        if (sw_tune_runner_parse(rs, &b)) {
            json_decref(extra);
            return sw_args_usage(&a, "--runner: auto, local, sim or rollout, not '%s'", rs);
        }
        if (sw_args_flag(&a, "sim") && b != SW_TUNE_BOOT_SIM) {
            json_decref(extra);
            return sw_args_usage(&a, "--sim and --runner %s disagree", rs);
        }
        o.boot = b;
    }
    o.ledger = sw_args_str(&a, "ledger");
    o.no_ledger = sw_args_flag(&a, "no-ledger");
    o.stop_running = sw_args_flag(&a, "stop-running");
    if (o.no_ledger && o.ledger) {
        json_decref(extra);
        return sw_args_usage(&a, "--ledger and --no-ledger together");
    }
    o.dry_run = sw_args_flag(&a, "dry-run");
    o.progress = stderr;
    o.stop = &sw_cli_stop;
    sw_cli_catch_stop(false);
    rc = sw_tune_run(&o, &rep, &e);
    sw_cli_release_stop();
    json_decref(extra);
    if (rc)
        return sw_cli_fail(&e, a.json);
    /* the winner as a patch of the fleet file; written with --apply */
    bool apply_failed = false;
    const json_t *apply = json_object_get(rep, "apply");
    const char *oc0 = json_string_value(json_object_get(rep, "outcome"));
    if (oc0 && !strcmp(oc0, "crowned") && json_object_size(apply)) {
        struct sw_buf d;
        struct sw_err pe;
        sw_err_clear(&pe);
        sw_buf_init(&d, 1 << 20);
        bool write = sw_args_flag(&a, "apply");
        int prc = sw_tune_apply(o.fleet, o.endpoint, apply, !write, &d, &pe);
        json_object_set_new(rep, "fleet_patch", prc ? json_null() : json_string(sw_buf_cstr(&d)));
        json_object_set_new(rep, "applied", json_boolean(write && !prc));
        if (prc)
            json_object_set_new(rep, "fleet_patch_why", json_string(pe.msg));
        sw_buf_free(&d);
        apply_failed = write && prc; /* the report is still shown; the exit says it */
    } else if (sw_args_flag(&a, "apply")) {
        json_object_set_new(rep, "applied", json_false());
    }
    const char *html = sw_args_str(&a, "html");
    if (html && sw_tune_html(rep, html, &e)) {
        json_decref(rep);
        return sw_cli_fail(&e, a.json);
    }
    if (a.json)
        sw_json_print(stdout, rep, true);
    else {
        sw_tune_print(stdout, rep);
        const char *fp = json_string_value(json_object_get(rep, "fleet_patch"));
        if (fp)
            printf("  %s %s:\n%s",
                   json_is_true(json_object_get(rep, "applied"))
                       ? "written into"
                       : "the patch of (--apply writes it)",
                   o.fleet, fp);
        else if (json_object_get(rep, "fleet_patch_why"))
            printf("  not placed in %s: %s\n", o.fleet,
                   json_string_value(json_object_get(rep, "fleet_patch_why")));
        else if (json_is_false(json_object_get(rep, "applied")))
            printf("  nothing applied: no winner was crowned\n");
    }
    const char *oc = json_string_value(json_object_get(rep, "outcome"));
    rc = (oc && !strcmp(oc, "interrupted")) || apply_failed ? SW_EXIT_FAIL : SW_EXIT_OK;
    json_decref(rep);
    return rc;
}
