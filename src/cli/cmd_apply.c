/*
 * slipway diff  [ENDPOINT...] [--fleet FILE] [--deadline DUR] [--json]
 * slipway apply [ENDPOINT...] [--fleet FILE] [--dry-run] [--parallel N] [--deadline DUR]
 *               [--no-worst-case] [--probe-only CHECKS] [--boot-deadline DUR]
 *               [--ledger PATH | --no-ledger] [--note TEXT] [--json]
 *
 *   The whole fleet converging to its file (include/slipway/apply.h, docs/apply.md): `diff` is
 *   the survey (per host, what apply would change and why; touches nothing); `apply` is the
 *   survey, the fleet's gates, then the run (hosts in parallel, each endpoint through the gated
 *   rollout). Both verbs share the survey's printing here.
 *
 * Exit: diff 0 nothing to change, 1 something would change (or is refused, or its host could
 * not be reached), 2 usage; apply 0 every selected endpoint converged or was already as the
 * fleet says, 1 anything else (refused, unreachable, rolled back, failed), 2 usage.
 */
#include "cli.h"

#include <slipway/apply.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sw_opt diff_opts[] = {
    {"deadline", 0, "DUR", 0, "per host: everything asked of it within DUR (default 20s)", NULL},
    {0},
};

static const struct sw_opt apply_opts[] = {
    {"dry-run", 'n', NULL, 0, "the survey and the fleet's gates only: say what would run", NULL},
    {"parallel", 0, "N", 0, "hosts at once (default: every host)", NULL},
    {"deadline", 0, "DUR", 0, "per host: the survey's questions within DUR (default 20s)", NULL},
    {"boot-deadline", 0, "DUR", 0, "each deploy's boot bound to readiness (default: deploy's)",
     NULL},
    {"no-worst-case", 0, NULL, 0, "leave the probe's worst_case check out of each deploy", NULL},
    {"probe-only", 0, "CHECKS", 0, "each deploy's battery, comma-separated (default: all)", NULL},
    {"ledger", 0, "PATH", 0, "the ledger (default: $SLIPWAY_LEDGER, else beside the fleet)", NULL},
    {"no-ledger", 0, NULL, 0, "record nothing", NULL},
    {"note", 0, "TEXT", 0, "the operator's note for every deploy of the run", NULL},
    {0},
};

static const char *const diff_examples[] = {
    "slipway diff --fleet examples/operator.yaml",
    "slipway diff frank-small frank-primary --fleet fleet.yaml --json",
    NULL,
};

static const char *const apply_examples[] = {
    "slipway apply --fleet fleet.yaml --dry-run",
    "slipway apply --fleet fleet.yaml --parallel 2",
    "slipway apply frank-small --fleet fleet.yaml --no-worst-case",
    NULL,
};

const struct sw_cmd_spec sw_spec_diff = {
    .name = "diff",
    .summary = "per host, what `apply` would change and why: unit and env lines, payloads, state",
    .synopsis = "[ENDPOINT...] [--fleet FILE] [--deadline DUR] [--json]",
    .about = "Renders and plans every selected endpoint here, then asks every host at once (a\n"
             "thread each, within --deadline) for the installed unit and environment file, the\n"
             "unit's state and the payload's paths. Each endpoint: unchanged, install, change\n"
             "(each differing line: installed -> rendered, secrets as ***), start, stop\n"
             "(enabled: false), absent or unknown (its host not reached). The fleet's gates\n"
             "(device co-tenancy, ports) are shown as apply would refuse them. Touches nothing.\n"
             "Exit: 0 nothing to change, 1 something would change or cannot, 2 usage.",
    .opts = diff_opts,
    .max_args = -1,
    .fleet = true,
    .examples = diff_examples,
};

const struct sw_cmd_spec sw_spec_apply = {
    .name = "apply",
    .summary = "converge the whole fleet to its file: gated, in parallel by host, idempotent",
    .synopsis = "[ENDPOINT...] [--fleet FILE] [--dry-run] [--parallel N] [--deadline DUR]\n"
                "    [--boot-deadline DUR] [--no-worst-case] [--probe-only CHECKS]\n"
                "    [--ledger PATH | --no-ledger] [--note TEXT] [--json]",
    .about = "The survey of `slipway diff`, then the fleet's gates (the planned device memory of\n"
             "every enabled endpoint on a device against the device; two endpoints on one\n"
             "address:port; unreachable hosts): a refusal names every endpoint involved and\n"
             "those are not attempted. Then hosts in parallel; on a host the endpoints that\n"
             "stop first, a device's restarting endpoints all stopped before any starts, and\n"
             "each endpoint through the gated rollout of `slipway deploy` with its rollback; a\n"
             "failure ends its device's queue. An endpoint already as rendered and active is\n"
             "never touched: a second apply restarts nothing.\n"
             "Exit: 0 all converged or unchanged, 1 anything refused, failed or not attempted.",
    .opts = apply_opts,
    .max_args = -1,
    .fleet = true,
    .examples = apply_examples,
};

static void print_item(const struct sw_apply_item *it, bool ran)
{
    printf("  %-22s %-9s", it->ep->name, sw_apply_action_name(it->action));
    if (it->refused)
        printf(" REFUSED");
    if (ran)
        printf(" -> %s", sw_apply_outcome_name(it->outcome));
    fputs("  ", stdout);
    sw_fput_term(stdout, ran && it->outcome_why[0] ? it->outcome_why : it->why, 0);
    if (ran && it->seconds > 0)
        printf(" (%.1f s)", it->seconds);
    putchar('\n');
    for (size_t c = 0; c < it->n_claims; c++) {
        char b[32];
        printf("      takes %s of %s when it runs (%s)\n",
               sw_fmt_bytes((uint64_t)it->claims[c].bytes, b, sizeof(b)), it->claims[c].dev->name,
               it->claims[c].how);
    }
    size_t i;
    const json_t *d;
    json_array_foreach(it->changes, i, d)
    {
        const char *in = json_string_value(json_object_get(d, "installed"));
        const char *re = json_string_value(json_object_get(d, "rendered"));
        printf("      %s:%lld\n        - ", sw_json_str(d, "file", ""),
               (long long)json_integer_value(json_object_get(d, "line")));
        sw_fput_term(stdout, in ? in : "(none)", 0);
        fputs("\n        + ", stdout);
        sw_fput_term(stdout, re ? re : "(none)", 0);
        putchar('\n');
    }
    json_array_foreach(it->missing, i, d)
    {
        fputs("      missing on the host: ", stdout);
        sw_fput_term(stdout, json_string_value(d), 0);
        putchar('\n');
    }
    if (it->refused) {
        fputs("      refused: ", stdout);
        sw_fput_term(stdout, it->refused_why, 0);
        putchar('\n');
    }
    if (it->plan_why[0]) {
        fputs("      plan: ", stdout);
        sw_fput_term(stdout, it->plan_why, 0);
        putchar('\n');
    }
}

static void print_survey(const struct sw_apply_survey *s, bool ran)
{
    for (size_t h = 0; h < s->n_hosts; h++) {
        const struct sw_apply_host *hr = &s->hosts[h];
        printf("host %s (%s): ", hr->fh->name, hr->transport);
        if (hr->reached) {
            printf("reached in %.2f s\n", hr->seconds);
        } else {
            fputs("NOT REACHED: ", stdout);
            sw_fput_term(stdout, hr->err, 0);
            putchar('\n');
        }
        for (size_t i = 0; i < s->n; i++)
            if (s->items[i].host == h)
                print_item(&s->items[i], ran);
    }
    size_t i;
    const json_t *r;
    json_array_foreach(s->refusals, i, r)
    {
        fputs("fleet gate ", stdout);
        sw_fput_term(stdout, sw_json_str(r, "line", ""), 0);
        putchar('\n');
    }
    size_t a[8], o[8];
    sw_apply_count(s, a, o);
    size_t restart = a[SW_APPLY_INSTALL] + a[SW_APPLY_CHANGE] + a[SW_APPLY_START];
    printf("%zu endpoint(s): %zu unchanged, %zu install, %zu change, %zu start, %zu stop, "
           "%zu absent, %zu unknown; %zu refused by the fleet's gates; %zu would restart\n",
           s->n, a[SW_APPLY_UNCHANGED], a[SW_APPLY_INSTALL], a[SW_APPLY_CHANGE], a[SW_APPLY_START],
           a[SW_APPLY_STOP], a[SW_APPLY_ABSENT], a[SW_APPLY_UNKNOWN],
           (size_t)json_array_size(s->refusals), restart);
    if (ran)
        printf("apply: %zu converged, %zu left as they were, %zu rolled back, %zu failed, "
               "%zu not attempted (%.1f s)\n",
               o[SW_APPLY_CONVERGED], o[SW_APPLY_LEFT], o[SW_APPLY_ROLLED_BACK], o[SW_APPLY_FAILED],
               o[SW_APPLY_NOT_ATTEMPTED], s->seconds);
}

/* The survey's endpoints that would do something, are refused or unknown. */
static size_t pending(const struct sw_apply_survey *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->items[i].refused ||
             (s->items[i].action != SW_APPLY_UNCHANGED && s->items[i].action != SW_APPLY_ABSENT);
    return n;
}

/* What both verbs hold: their arguments, the options, the fleet and its path, the survey. */
struct verb {
    struct sw_args a;
    struct sw_apply_opts o;
    struct sw_apply_survey s;
    struct sw_fleet *f;
    struct sw_err e;
    const char *only[SW_ARGS_MAX + 1];
    const char *path;
};

/* The verb's arguments parsed (false with *rc set when it is done: help, or a usage error), the
 * rest zeroed. */
static bool parse(const struct sw_cmd_spec *spec, int argc, char **argv, struct verb *v, int *rc)
{
    memset(v, 0, sizeof(*v));
    sw_err_clear(&v->e);
    return sw_args_parse(spec, argc, argv, &v->a, rc);
}

/* Options both verbs read, the fleet loaded and the names checked. */
static int begin(struct verb *v)
{
    int64_t dl = 20000;
    int rc = sw_args_duration(&v->a, "deadline", 100, 3600000, &dl);
    if (rc)
        return rc;
    v->o.deadline_ms = dl;
    struct sw_cli_fleet fl;
    if ((rc = sw_cli_fleet(&v->a, 0, SW_CLI_FLEET_LOAD, &fl)))
        return rc;
    v->path = fl.path;
    v->f = fl.fleet;
    for (int i = 0; i < fl.n_endpoints; i++)
        v->only[i] = fl.endpoints[i];
    v->only[fl.n_endpoints] = NULL;
    v->o.only = fl.n_endpoints ? v->only : NULL;
    return 0;
}

/* The survey; a failure printed (its exit code returned). */
static int survey(struct verb *v)
{
    if (sw_apply_survey(v->f, &v->o, &v->s, &v->e))
        return sw_cli_fail(&v->e, v->a.json);
    return 0;
}

static void verb_free(struct verb *v)
{
    sw_apply_survey_free(&v->s);
    sw_fleet_free(v->f);
}

int sw_cmd_diff(int argc, char **argv)
{
    struct verb v;
    int rc;
    if (!parse(&sw_spec_diff, argc, argv, &v, &rc))
        return rc;
    if ((rc = begin(&v)) || (rc = survey(&v)))
        goto out;
    if (v.a.json) {
        json_t *doc = sw_apply_survey_json(&v.s, false);
        sw_json_set_str(doc, "fleet", v.path);
        sw_json_print(stdout, doc, true);
        json_decref(doc);
    } else {
        print_survey(&v.s, false);
    }
    rc = pending(&v.s) ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    verb_free(&v);
    return rc;
}

int sw_cmd_apply(int argc, char **argv)
{
    struct verb v;
    int rc;
    if (!parse(&sw_spec_apply, argc, argv, &v, &rc))
        return rc;
    char lpath[4096];
    uint64_t par = 0;
    int64_t boot = 0;
    const char *ledger = sw_args_str(&v.a, "ledger");
    bool no_ledger = sw_args_flag(&v.a, "no-ledger");
    if (ledger && no_ledger)
        return sw_args_usage(&v.a, "--ledger and --no-ledger: choose one");
    if ((rc = sw_args_number(&v.a, "parallel", 1, 256, &par)) ||
        (rc = sw_args_duration(&v.a, "boot-deadline", 1000, 24 * 3600000LL, &boot)))
        return rc;
    v.o.parallel = (unsigned)par;
    v.o.boot_ms = boot;
    v.o.worst_case = !sw_args_flag(&v.a, "no-worst-case");
    v.o.probe_only = sw_args_str(&v.a, "probe-only");
    v.o.note = sw_args_str(&v.a, "note");
    bool dry = sw_args_flag(&v.a, "dry-run");
    if ((rc = begin(&v)))
        goto out;
    if (!no_ledger && !dry) {
        if (!ledger && !(ledger = getenv("SLIPWAY_LEDGER"))) {
            if (sw_ledger_default_path(v.path, lpath, sizeof(lpath), &v.e)) {
                rc = sw_cli_fail(&v.e, v.a.json);
                goto out;
            }
            ledger = lpath;
        }
        v.o.ledger_path = ledger;
    }
    if ((rc = survey(&v)))
        goto out;
    if (!dry) {
        if (!v.a.json) {
            print_survey(&v.s, false);
            v.o.progress = stdout;
            fflush(stdout);
        }
        sw_cli_catch_stop(false);
        rc = sw_apply_run(v.f, &v.s, &v.o, &v.e);
        sw_cli_release_stop();
        if (rc) {
            rc = sw_cli_fail(&v.e, v.a.json);
            goto out;
        }
    }
    if (v.a.json) {
        json_t *doc = sw_apply_survey_json(&v.s, !dry);
        sw_json_set_str(doc, "fleet", v.path);
        sw_json_set_bool(doc, "dry_run", dry);
        if (v.o.ledger_path)
            sw_json_set_str(doc, "ledger", v.o.ledger_path);
        sw_json_print(stdout, doc, true);
        json_decref(doc);
    } else {
        if (!dry)
            puts("--");
        print_survey(&v.s, !dry);
    }
    size_t act[8], oc[8];
    sw_apply_count(&v.s, act, oc);
    if (dry)
        rc = json_array_size(v.s.refusals) || act[SW_APPLY_UNKNOWN] ? SW_EXIT_FAIL : SW_EXIT_OK;
    else
        rc = oc[SW_APPLY_CONVERGED] + oc[SW_APPLY_LEFT] == v.s.n ? SW_EXIT_OK : SW_EXIT_FAIL;
out:
    verb_free(&v);
    return rc;
}
