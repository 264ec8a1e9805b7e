/*
 * slipway ladder ENDPOINT [--fleet FILE] [--knob K] [--max-boots N] [--dry-run] [--label NAME]
 *                [--runner auto|sim|local|rollout] [--memory-max BYTES] [--min V --max V --step V]
 *                [--ledger PATH | --no-ledger] [--boot-timeout DUR] [--probe-timeout DUR] [--json]
 *
 *   The largest value of one knob that boots and survives the worst-case request, in few boots
 *   (include/slipway/ladder.h, docs/ladder.md). A line per rung on stderr as it runs; the table
 *   (or --json) on stdout at the end.
 *
 * Exit: 0 an answer was proven, 1 none (every rung failed, or a failure not about size stopped
 * it), 2 unusable input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ladder.h>
#include <slipway/ledger.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct sw_opt opts[] = {
    {"knob", 0, "K", 0,
     "max_model_len | ctx_size | slots | kv_cache_bytes (default: ctx_size for\n"
     "llama.cpp, max_model_len otherwise)",
     NULL},
    {"max-boots", 0, "N", 0, "boots this run may spend (default 8)", NULL},
    {"dry-run", 0, NULL, 0, "the prediction and the first rung: nothing booted or written", NULL},
    {"label", 0, "NAME", 0,
     "the run's name in the ledger (default ENDPOINT/KNOB): a run of the same\n"
     "label continues from its recorded rungs",
     NULL},
    {"runner", 0, "R", 0,
     "auto | sim | local | rollout (default auto: rollout when the endpoint has a\n"
     "host, else the sim)",
     NULL},
    {"memory-max", 0, "BYTES", 0,
     "local runner: the engine's memory cgroup limit (e.g. 600MiB); also the law's\n"
     "capacity",
     NULL},
    {"min", 0, "V", 0, "the grid's low end (default: the fleet knob's min)", NULL},
    {"max", 0, "V", 0, "the grid's high end (default: the fleet knob's max)", NULL},
    {"step", 0, "V", 0,
     "the grid's step (default: the fleet knob's step, else the engine's\n"
     "granularity: 4096 max_model_len, 256 ctx_size, 1 slot, 256 MiB)",
     NULL},
    {"set", 0, "KEY=VALUE", SW_OPT_REPEAT,
     "a variant of ENDPOINT's shape the ladder runs on (kv_cache_bytes=null,\n"
     "gpu_memory_utilization=0.98 ...), as `check --set`",
     NULL},
    {"sim-ledger", 0, "PATH", 0,
     "sim runner: the ledger the sim's headroom model is fitted on (the simulated\n"
     "hardware; `slipway sim --ledger`)",
     NULL},
    {"ledger", 0, "PATH", 0, "the ledger (default: $SLIPWAY_LEDGER, else FLEET.ledger.sqlite)",
     NULL},
    {"no-ledger", 0, NULL, 0, "record nothing and resume nothing", NULL},
    {"stop-running", 0, NULL, 0,
     "local runner: stop the endpoint's own `slipway up` process first (without it,\n"
     "a running one refuses the run before any boot)",
     NULL},
    {"boot-timeout", 0, "DUR", 0, "one boot's bound (default 10m)", NULL},
    {"probe-timeout", 0, "DUR", 0, "the worst-case request's bound (default 5m)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway ladder frank-primary --fleet examples/operator.yaml --dry-run",
    "slipway ladder frank-primary --runner sim --max-boots 3 --json",
    "slipway ladder small --runner local --memory-max 600MiB",
    NULL,
};

const struct sw_cmd_spec sw_spec_ladder = {
    .name = "ladder",
    .summary = "the largest max_model_len/ctx/slots/KV that boots and survives, in few boots",
    .synopsis = "ENDPOINT [--fleet FILE] [--knob K] [--max-boots N] [--dry-run] [--label NAME]\n"
                "    [--set KEY=VALUE ...] [--runner auto|sim|local|rollout] [--sim-ledger PATH]\n"
                "    [--memory-max BYTES]\n"
                "    [--min V] [--max V] [--step V] [--ledger PATH | --no-ledger]\n"
                "    [--stop-running] [--boot-timeout DUR] [--probe-timeout DUR] [--json]",
    .about = "Finds the largest value of one knob that boots AND survives the worst-case\n"
             "request. Starts from the memory law's prediction and its interval; each rung\n"
             "halves what is left between the largest value that passed and the smallest\n"
             "that failed, on the engine's grid; a value `check` refuses costs no boot; a\n"
             "compile constraint skips that value only; the law is recalibrated after every\n"
             "boot. Every rung goes to the ledger (ladder_rungs) as it happens, and a rerun\n"
             "of the same --label continues from them. Progress on stderr.\n"
             "Exit: 0 an answer was proven, 1 none, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

int sw_cmd_ladder(int argc, char **argv)
{
    struct sw_args a;
    struct sw_ladder_opts o;
    struct sw_ladder_result *r = NULL;
    struct sw_fleet *f = NULL;
    struct sw_ledger led;
    bool have_ledger = false;
    struct sw_err e;
    char lpath[4096] = "";
    int rc = 0;
    sw_err_clear(&e);
    memset(&led, 0, sizeof(led));
    memset(&o, 0, sizeof(o));
    if (!sw_args_parse(&sw_spec_ladder, argc, argv, &a, &rc))
        return rc;
    if (a.npos < 1)
        return sw_cli_need_endpoint(&a, NULL);
    const char *name = a.pos[0];
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    const char *fleet_path = fl.path;
    const char *ks = sw_args_str(&a, "knob");
    if (ks && sw_ladder_knob_parse(ks, &o.knob))
        return sw_args_usage(&a,
                             "--knob: max_model_len, ctx_size, slots or kv_cache_bytes, "
                             "not '%s'",
                             ks);
    const char *rs = sw_args_str(&a, "runner");
    if (rs && sw_ladder_runner_parse(rs, &o.runner))
        return sw_args_usage(&a, "--runner: auto, sim, local or rollout, not '%s'", rs);
    uint64_t mb = 0, lo = 0, hi = 0, step = 0;
    rc = sw_args_size(&a, "memory-max", 1, UINT64_MAX, &o.memory_max);
    if (!rc)
        rc = sw_args_number(&a, "max-boots", 1, 1000, &mb);
    if (!rc)
        rc = sw_args_size(&a, "min", 1, INT64_MAX, &lo);
    if (!rc)
        rc = sw_args_size(&a, "max", 1, INT64_MAX, &hi);
    if (!rc)
        rc = sw_args_size(&a, "step", 1, INT64_MAX, &step);
    if (!rc)
        rc = sw_args_duration(&a, "boot-timeout", 1, INT64_MAX, &o.boot_timeout_ms);
    if (!rc)
        rc = sw_args_duration(&a, "probe-timeout", 1, INT64_MAX, &o.probe_ms);
    if (rc)
        return rc;
    o.min = (int64_t)lo;
    o.max = (int64_t)hi;
    o.step = (int64_t)step;
    int n_sets = sw_args_count(&a, "set");
    if (n_sets > 64)
        return sw_args_usage(&a, "at most 64 --set");
    const char *sets[64];
    for (int i = 0; i < n_sets; i++)
        sets[i] = sw_args_nth(&a, "set", i);
    o.sets = sets;
    o.n_sets = n_sets;
    o.sim_ledger = sw_args_str(&a, "sim-ledger");
    /* the sim runner runs this very binary's `sim` verb */
    char exe[4096];
    ssize_t xl = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (xl > 0) {
        exe[xl] = 0;
        o.sim_exe = exe;
    }
    o.max_boots = (int)mb;
    o.dry_run = sw_args_flag(&a, "dry-run");
    o.label = sw_args_str(&a, "label");
    o.stop_running = sw_args_flag(&a, "stop-running");
    const char *ledger_path = sw_args_str(&a, "ledger");
    bool no_ledger = sw_args_flag(&a, "no-ledger");
    if (no_ledger && ledger_path)
        return sw_args_usage(&a, "--ledger and --no-ledger together");
    if (o.label && !*o.label)
        return sw_args_usage(&a, "--label: empty");

    if (sw_fleet_load(fleet_path, NULL, &f, &e)) {
        rc = sw_cli_fail(&e, a.json);
        goto out;
    }
    struct sw_fleet_endpoint *ep = (struct sw_fleet_endpoint *)sw_fleet_endpoint(f, name);
    if (!ep) {
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", fleet_path, name);
        rc = sw_cli_fail(&e, a.json);
        goto out;
    }
    if (!ks)
        o.knob = ep->engine == SW_FLEET_LLAMACPP ? SW_LADDER_CTX_SIZE : SW_LADDER_MAX_MODEL_LEN;
    if (!no_ledger) {
        /* a dry run reads what earlier rungs proved and writes nothing */
        struct sw_ledger_open_opts oo = {.create = !o.dry_run, .readonly = o.dry_run};
        int lrc = sw_ledger_open_for(&led, ledger_path, fleet_path, &oo,
                                     o.dry_run ? SW_LEDGER_MAY_BE_ABSENT : SW_LEDGER_MUST_EXIST,
                                     &have_ledger, lpath, sizeof(lpath), &e);
        if (lrc) {
            sw_err_prefix(&e, "the ledger");
            rc = sw_cli_fail(&e, a.json);
            goto out;
        }
        if (have_ledger)
            o.ledger = &led;
        else
            lpath[0] = '\0';
    }
    o.progress = stderr;
    r = sw_malloc(sizeof(*r));
    if (!r) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        rc = sw_cli_fail(&e, a.json);
        goto out;
    }
    if (sw_ladder_run(f, ep, &o, r, &e)) {
        rc = sw_cli_fail(&e, a.json);
        goto out;
    }
    if (a.json) {
        json_t *j = sw_ladder_result_json(r);
        if (!j) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, a.json);
            goto out;
        }
        if (lpath[0])
            sw_json_set_str(j, "ledger", lpath);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        sw_ladder_result_print(stdout, r);
        if (lpath[0] && !o.dry_run)
            printf("rungs recorded in %s (ladder '%s')\n", lpath, r->label);
    }
    rc = o.dry_run || r->answer >= 0 ? SW_EXIT_OK : SW_EXIT_FAIL;
out:
    sw_free(r);
    if (have_ledger)
        sw_ledger_close(&led);
    sw_fleet_free(f);
    return rc;
}
