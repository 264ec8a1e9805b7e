/*
 * slipway bench compare RUN_A RUN_B [--ledger PATH | --fleet FLEET.yaml] [--json]
 *
 * Two bench runs recorded in the ledger (`slipway bench ... --ledger PATH` prints "recorded as
 * bench N"; a tag names its endpoint's latest run of the tag's shape), compared point by point:
 * per metric A, B, the difference and whether it exceeds the noise of the repeats
 * (sw_bench_compare_runs, bench/ledger.c; docs/bench.md). Reached from `slipway bench compare`
 * (cmd_bench.c hands the line over), so it is not a verb of its own.
 *
 * Exit: 0 no metric is worse beyond the noise, 1 one is, 2 unusable input (or no such run).
 */
#include "cli.h"

#include <slipway/bench.h>

#include <stdio.h>

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0, "the ledger the runs are in", NULL},
    {"no-ledger", 0, NULL, SW_OPT_REFUSE, "bench compare reads two runs from the ledger", NULL},
    {"fleet", 0, "FLEET.yaml", 0, "its fleet file's ledger (default ./fleet.yaml's)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway bench compare 3 7 --ledger fleet.ledger.sqlite",
    "slipway bench compare 3 7 --fleet fleet.yaml --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_bench_compare = {
    .name = "bench compare",
    .summary = "compare two recorded bench runs: differences against the noise of the repeats",
    .synopsis =
        "RUN_A RUN_B [--ledger PATH | --fleet FLEET.yaml] [--json]   (RUN: a bench id, or a "
        "tag)",
    .about = "Per point both runs measured (same depth and concurrency), per metric: A, B, B - A\n"
             "and whether it exceeds the noise (half of each run's range of its requests,\n"
             "summed). Exit 0 no metric is worse beyond the noise, 1 one is, 2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
    .hidden = true,
};

static void print_run(const char *label, const json_t *r)
{
    const char *shape = json_string_value(json_object_get(r, "shape"));
    printf("%s: bench %" JSON_INTEGER_FORMAT " of %s%s%s\n", label,
           json_integer_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "endpoint")), shape ? ", shape " : "",
           shape ? shape : "");
}

static void print_val(const json_t *v)
{
    char b[64];
    if (json_is_object(v)) {
        double med = json_number_value(json_object_get(v, "median"));
        double lo = json_number_value(json_object_get(v, "min"));
        double hi = json_number_value(json_object_get(v, "max"));
        snprintf(b, sizeof(b), "%.2f [%.2f..%.2f]", med, lo, hi);
    } else if (json_is_number(v)) {
        snprintf(b, sizeof(b), "%.2f", json_number_value(v));
    } else {
        snprintf(b, sizeof(b), "-");
    }
    printf(" %-24s", b);
}

static void print_cmp(const json_t *cmp)
{
    size_t i, k;
    const json_t *p, *m;
    json_array_foreach(json_object_get(cmp, "points"), i, p)
    {
        const json_t *d = json_object_get(p, "depth");
        if (json_is_integer(d))
            printf("\ndepth %" JSON_INTEGER_FORMAT, json_integer_value(d));
        else
            printf("\nprompts file");
        printf(", concurrency %" JSON_INTEGER_FORMAT "\n",
               json_integer_value(json_object_get(p, "concurrency")));
        printf("  %-22s %-24s %-24s %-20s %s\n", "metric", "A", "B", "B - A", "noise: verdict");
        json_array_foreach(json_object_get(p, "metrics"), k, m)
        {
            printf("  %-22s", json_string_value(json_object_get(m, "metric")));
            print_val(json_object_get(m, "a"));
            print_val(json_object_get(m, "b"));
            char b[64];
            const json_t *pct = json_object_get(m, "diff_pct");
            if (json_is_number(pct))
                snprintf(b, sizeof(b), "%+.2f (%+.1f%%)",
                         json_number_value(json_object_get(m, "diff")), json_number_value(pct));
            else
                snprintf(b, sizeof(b), "%+.2f", json_number_value(json_object_get(m, "diff")));
            printf(" %-20s", b);
            const json_t *noise = json_object_get(m, "noise");
            if (json_is_number(noise))
                printf(" +-%.2f: ", json_number_value(noise));
            else
                printf(" ");
            printf("%s\n", json_string_value(json_object_get(m, "verdict")));
        }
    }
    const char *sides[] = {"only_a", "only_b"};
    for (size_t s = 0; s < 2; s++) {
        json_array_foreach(json_object_get(cmp, sides[s]), i, p)
        {
            const json_t *d = json_object_get(p, "depth");
            printf("only in %s: depth %s%" JSON_INTEGER_FORMAT ", concurrency %" JSON_INTEGER_FORMAT
                   "\n",
                   s ? "B" : "A", json_is_integer(d) ? "" : "(file) ",
                   json_is_integer(d) ? json_integer_value(d) : 0,
                   json_integer_value(json_object_get(p, "concurrency")));
        }
    }
    printf("\n%" JSON_INTEGER_FORMAT " better, %" JSON_INTEGER_FORMAT " worse beyond the noise\n",
           json_integer_value(json_object_get(cmp, "better")),
           json_integer_value(json_object_get(cmp, "worse")));
}

int sw__cmd_bench_compare(int argc, char **argv)
{
    struct sw_args a;
    struct sw_err e;
    json_t *cmp = NULL;
    int rc;
    if (!sw_args_parse(&sw_spec_bench_compare, argc, argv, &a, &rc))
        return rc;
    if (a.npos != 2)
        return sw_args_usage(&a, "which two runs? (bench ids or tags)");
    sw_err_clear(&e);
    if (sw_bench_compare_runs(sw_args_str(&a, "ledger"), sw_args_str(&a, "fleet"), a.pos, &cmp, &e))
        return sw_cli_fail(&e, a.json);
    if (a.json) {
        sw_json_print(stdout, cmp, true);
    } else {
        print_run("A", json_object_get(cmp, "a"));
        print_run("B", json_object_get(cmp, "b"));
        print_cmp(cmp);
    }
    rc = json_integer_value(json_object_get(cmp, "worse")) > 0 ? SW_EXIT_FAIL : SW_EXIT_OK;
    json_decref(cmp);
    return rc;
}
