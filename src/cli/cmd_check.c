/*
 * slipway check [ENDPOINT] [--fleet FILE] [--ledger PATH | --no-ledger] [--set KEY=VALUE ...]
 *               [--margin F] [--json]
 *
 *   Run the gates (include/slipway/gate.h, docs/check.md) on every enabled endpoint of a fleet, or
 *   on the one named, before a boot is spent on it: free-memory band, pool floor, expert arena,
 *   per-slot window and compaction, known-bad shapes and rules, payload consistency. Loading the
 *   fleet is `fleet check`'s validation: a fleet with a mistake is unusable input.
 *
 *   This file reads the options, runs gate/check.c's sw_gate_check_open / _next / _doc (the
 *   fleet, the --set overrides, the ledger, every gate on each endpoint) and prints each result.
 *
 * Exit: 0 every gate passed (or skipped, with its reason), 1 a gate failed, 2 unusable input
 * (missing or broken fleet, unknown endpoint, a ledger that cannot be read, a bad --set).
 */
#include "cli.h"

#include <slipway/gate.h>
#include <slipway/ledger.h>

#include <string.h>

#define MAX_SETS 64

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0, "the ledger (default: $SLIPWAY_LEDGER, else FLEET.ledger.sqlite)",
     NULL},
    {"no-ledger", 0, NULL, 0, "no ledger evidence", NULL},
    {"set", 0, "KEY=VALUE", SW_OPT_REPEAT,
     "try a variant of ENDPOINT's shape: slots=3, ctx=196608,\n"
     "max_model_len=241664, kv_cache_bytes=11.3e9, mmproj=null ...",
     NULL},
    {"margin", 0, "F", 0, "the pool must hold SEQS x MAXLEN x (1 + F) (default 0)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway check --fleet examples/local.yaml",
    "slipway check frank-primary --fleet examples/operator.yaml --set slots=3 --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_check = {
    .name = "check",
    .summary = "run the gates on a fleet's endpoints before a boot: band, pool, window, known-bad",
    .synopsis = "[ENDPOINT] [--fleet FILE] [--ledger PATH | --no-ledger] [--set KEY=VALUE ...]\n"
                "    [--margin F] [--json]",
    .about = "Runs the gates on each enabled endpoint (or ENDPOINT) before a boot is spent:\n"
             "  band       free memory per device after the boot, inside free_band (2..3 GiB)\n"
             "  pool       the KV pool holds SEQS x MAXLEN at this geometry's price\n"
             "  arena      (fork profiles) the expert arena at this MAXLEN\n"
             "  headroom   (fork profiles) free memory at graph capture and for the pool vs the\n"
             "             transient needs fitted from the recorded boots (slipway calibrate)\n"
             "  window     per-slot window vs the client's contextWindow, and compaction\n"
             "  known_bad  shapes that failed before, known-bad rules (ledger and fleet)\n"
             "  payload    spec-decode flags vs MTP tensors, the projector (when files are here)\n"
             "The fleet is --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml. The ledger is\n"
             "--ledger PATH, else $SLIPWAY_LEDGER, else beside the fleet file\n"
             "(FLEET.ledger.sqlite), read-only.\n"
             "A failure the fleet waives (waive: [{gate, reason, until}]) is WAIVED, not failed;\n"
             "an expired or unmatched waiver is unusable input.\n"
             "Exit: 0 all gates pass, 1 a gate failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

static void print_endpoint(const json_t *r)
{
    const char *name = json_string_value(json_object_get(r, "endpoint"));
    char sum[512];
    sw_ledger_shape_summary(json_object_get(r, "shape"), sum, sizeof(sum));
    printf("== %s (%s): %s [shape %.12s]\n", name, json_string_value(json_object_get(r, "engine")),
           sum, json_string_value(json_object_get(r, "shape_hash")));
    const char *law = json_string_value(json_object_get(r, "law"));
    if (law)
        printf("   law: cannot run: %s\n", law);
    const json_t *gs = json_object_get(r, "gates");
    size_t nf = 0, ns = 0, nw = 0;
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        const char *v = json_string_value(json_object_get(g, "verdict"));
        const char *fix = json_string_value(json_object_get(g, "fix"));
        char up[8];
        snprintf(up, sizeof(up), "%s", v);
        for (char *c = up; *c; c++)
            *c = (char)(*c - 'a' + 'A');
        nf += !strcmp(v, "fail");
        ns += !strcmp(v, "skip");
        nw += !strcmp(v, "waived");
        /* WAIVED is wider than the others: the gate's column gives it back */
        printf("   %-4s %-*s %s\n", up, strlen(up) > 4 ? 7 : 9,
               json_string_value(json_object_get(g, "gate")),
               json_string_value(json_object_get(g, "line")));
        sw_cli_print_waiver(stdout, 18, g);
        if (fix && !strcmp(v, "fail"))
            printf("   %-4s %-9s fix: %s\n", "", "", fix);
        const json_t *ev = json_object_get(g, "evidence");
        for (size_t k = 0; k < json_array_size(ev); k++) {
            const char *note = json_string_value(json_object_get(json_array_get(ev, k), "note"));
            if (note && json_object_size(json_array_get(ev, k)) <= 3 &&
                !json_object_get(json_array_get(ev, k), "outcome"))
                printf("   %-4s %-9s note: %s\n", "", "", note);
        }
    }
    char waived[48] = "";
    if (nw)
        snprintf(waived, sizeof(waived), ", %zu waived", nw);
    printf("   verdict: %s (%zu gates: %zu failed%s, %zu skipped)\n\n",
           nf ? "REJECTED" : "accepted", json_array_size(gs), nf, waived, ns);
}

int sw_cmd_check(int argc, char **argv)
{
    struct sw_gate_check_opts o = {0};
    const char *sets[MAX_SETS];
    struct sw_gate_check c;
    const json_t *r = NULL;
    json_t *out = NULL;
    struct sw_err e;
    int rc = SW_EXIT_OK;

    sw_err_clear(&e);
    memset(&c, 0, sizeof(c));
    struct sw_args a;
    if (!sw_args_parse(&sw_spec_check, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    o.no_ledger = sw_args_flag(&a, "no-ledger");
    o.ledger_path = sw_args_str(&a, "ledger");
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    o.fleet_path = fl.path;
    o.endpoint = fl.n_endpoints ? fl.endpoints[0] : NULL;
    o.n_sets = (size_t)sw_args_count(&a, "set");
    if (o.n_sets > MAX_SETS)
        return sw_args_usage(&a, "at most %d --set", MAX_SETS);
    for (size_t i = 0; i < o.n_sets; i++)
        sets[i] = sw_args_nth(&a, "set", (int)i);
    o.sets = sets;
    const char *mv = sw_args_str(&a, "margin");
    if (mv && (sw_parse_double(mv, &o.margin, &e) || o.margin < 0 || o.margin > 10))
        return sw_args_usage(&a, "--margin: want a fraction >= 0, got '%s'", mv);
    if (o.n_sets && !o.endpoint)
        return sw_args_usage(&a, "--set changes one endpoint's shape: name the ENDPOINT");
    if (o.no_ledger && o.ledger_path)
        return sw_args_usage(&a, "--ledger and --no-ledger together");

    if (sw_gate_check_open(&c, &o, &e)) {
        rc = sw_cli_fail(&e, json);
        if (c.ledger_failed)
            rc = SW_EXIT_USAGE;
        goto out;
    }
    if (c.ledger_absent && !json)
        printf("(no ledger at %s: ledger evidence is skipped)\n\n", c.ledger_at);
    size_t n = 0;
    for (;;) {
        rc = sw_gate_check_next(&c, &r, &e);
        if (rc || !r)
            break;
        n++;
        if (!json)
            print_endpoint(r);
    }
    if (rc) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    out = sw_gate_check_doc(&c);
    if (!out) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (json)
        sw_json_print(stdout, out, true);
    else if (n == 0)
        printf("%s: no enabled endpoint\n", o.fleet_path);
    else
        printf("check: %s\n", c.failed ? "a gate failed (exit 1)" : "every gate passed");
    rc = c.failed ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    json_decref(out);
    sw_gate_check_close(&c);
    return rc;
}
