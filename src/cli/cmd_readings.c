/*
 * slipway readings [--tool nvidia-smi|rocm-smi|amd-smi|llama.cpp] [FILE|-] [--json]
 *                  [--record --fleet FLEET --endpoint NAME [--ledger DB]]
 *
 * Read a device memory tool's output (a file, or stdin), print the readings in exact bytes, and
 * with --record write them into the ledger as usage rows of the endpoint's matching devices. The
 * tool is told from the text unless given; an output that could be either is refused. A reading
 * that matches none of the endpoint's devices (or lacks a figure) is a warning on stderr (and in
 * the JSON), never dropped silently.
 *
 * Exit: 0 printed (or recorded at least one row), 1 nothing could be recorded or the ledger
 * failed, 2 unusable input (malformed output, unknown tool, missing options).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/readings.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"tool", 0, "TOOL", 0,
     "nvidia-smi, rocm-smi, amd-smi or llama.cpp (its log's memory breakdown table)\n"
     "(default: told from the text)",
     NULL},
    {"record", 0, NULL, 0, "record the readings in the ledger as usage rows", NULL},
    {"fleet", 0, "FLEET.yaml", 0, "the fleet whose endpoint the readings are of (--record)", NULL},
    {"endpoint", 0, "NAME", 0, "the endpoint the readings are of (--record)", NULL},
    {"ledger", 0, "PATH", 0, "the ledger (default: beside the fleet file)", NULL},
    {"no-ledger", 0, NULL, 0,
     "read and write no ledger (the readings are only shown; not with --record)", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway readings smi.csv",
    "nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total,memory.free --format=csv | "
    "slipway readings -",
    "rocm-smi --showmeminfo vram --json | slipway readings --tool rocm-smi --record --fleet "
    "fleet.yaml --endpoint frank-primary",
    NULL,
};

const struct sw_cmd_spec sw_spec_readings = {
    .name = "readings",
    .summary = "device memory used/total from nvidia-smi, rocm-smi, amd-smi output; --record it",
    .synopsis = "[--tool TOOL] [FILE|-] [--json]\n"
                "[--tool TOOL] [FILE|-] --record --fleet FLEET.yaml --endpoint NAME "
                "[--ledger PATH] [--json]",
    .about = "FILE is what the tool printed ('-' or none: stdin):\n"
             "  nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total,memory.free "
             "--format=csv\n"
             "  rocm-smi --showmeminfo vram --json\n"
             "  amd-smi metric --mem-usage --json   (or amd-smi static --vram --json)\n"
             "  a llama-server log holding its \"memory breakdown [MiB]\" table\n"
             "Figures are exact bytes (nvidia-smi's MiB and amd-smi's MB are 2^20 bytes).\n"
             "--record matches each reading to the endpoint's device of the same vendor and\n"
             "index; one that matches none is a warning. Exit: 0 done, 1 nothing recorded or\n"
             "the ledger failed, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
};

/* A figure in MiB as a column: "21,684" or "21,684.24" (truncated, never rounded up); "-" when
 * the tool did not print it. */
static void put_mib(bool has, uint64_t bytes)
{
    char whole[32], out[48];
    if (!has)
        snprintf(out, sizeof(out), "-");
    else if (bytes & 0xfffff)
        snprintf(out, sizeof(out), "%s.%02u", sw_fmt_count(bytes >> 20, whole, sizeof(whole)),
                 (unsigned)(((bytes & 0xfffff) * 100) >> 20));
    else
        snprintf(out, sizeof(out), "%s", sw_fmt_count(bytes >> 20, whole, sizeof(whole)));
    printf("  %12s", out);
}

static void print_readings(const struct sw_readings *rs, const char *src)
{
    printf("%s: %zu device%s (%s)\n", sw_readings_tool_name(rs->tool), rs->n, rs->n == 1 ? "" : "s",
           src);
    printf("%5s  %-6s  %-28s  %12s  %12s  %12s  %s\n", "INDEX", "VENDOR", "NAME", "USED MiB",
           "TOTAL MiB", "FREE MiB", "UUID / BUS");
    for (size_t i = 0; i < rs->n; i++) {
        const struct sw_reading *r = &rs->r[i];
        printf("%5llu  %-6s  %-28.28s", (unsigned long long)r->index, r->vendor,
               r->name[0] ? r->name : "-");
        put_mib(r->has_used, r->used_bytes);
        put_mib(r->has_total, r->total_bytes);
        put_mib(r->has_free, r->free_bytes);
        printf("  %s%s%s\n", r->uuid[0] || r->bus_id[0] ? r->uuid : "-",
               r->uuid[0] && r->bus_id[0] ? " " : "", r->bus_id);
    }
}

static int record(const struct sw_args *a, const struct sw_readings *rs, json_t *doc, bool json)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_ledger l;
    struct sw_readings_outcome *out = NULL;
    char path[4096];
    size_t n = 0;
    int rc, ex = SW_EXIT_OK;
    const char *fleet = sw_args_str(a, "fleet"), *name = sw_args_str(a, "endpoint");
    const char *ledger = sw_args_str(a, "ledger");
    memset(&l, 0, sizeof(l));
    sw_err_clear(&e);
    rc = sw_fleet_load(fleet, NULL, &f, &e);
    if (rc)
        return sw_cli_fail(&e, json);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    if (!ep) {
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint named '%s'", fleet, name);
        ex = sw_cli_fail(&e, json);
        goto out;
    }
    out = sw_calloc(rs->n, sizeof(*out));
    if (!out) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        goto fail;
    }
    bool opened;
    rc = sw_ledger_open_for(&l, ledger, fleet, NULL, SW_LEDGER_MUST_EXIST, &opened, path,
                            sizeof(path), &e);
    if (!rc)
        rc = sw_readings_record(&l, ep, rs, NULL, out, &n, &e);
    sw_ledger_close(&l);
    json_t *rows = json_array(), *warns = json_array();
    for (size_t i = 0; i < rs->n; i++) {
        if (out[i].warning[0]) {
            if (!json)
                fprintf(stderr, "slipway readings: warning: %s\n", out[i].warning);
            json_array_append_new(warns, json_string(out[i].warning));
        }
        if (!out[i].usage_id)
            continue;
        json_t *x = json_object();
        sw_json_set_int(x, "index", (int64_t)rs->r[i].index);
        sw_json_set_str(x, "device", out[i].device->name);
        sw_json_set_int(x, "usage_id", out[i].usage_id);
        json_array_append_new(rows, x);
        if (!json)
            printf("recorded usage #%lld: %s %s (%s %s index %llu)\n", (long long)out[i].usage_id,
                   ep->name, out[i].device->name, rs->r[i].tool, rs->r[i].vendor,
                   (unsigned long long)rs->r[i].index);
    }
    sw_json_set_str(doc, "ledger", path);
    sw_json_set_str(doc, "endpoint", ep->name);
    sw_json_set_new(doc, "recorded", rows);
    sw_json_set_new(doc, "warnings", warns);
    if (rc) {
        if (json)
            sw_json_set_new(doc, "error", sw_err_to_json(&e));
        else
            fprintf(stderr, "slipway readings: %s\n", e.msg);
        ex = SW_EXIT_FAIL;
    } else if (!n) {
        if (!json)
            fprintf(stderr, "slipway readings: nothing recorded for %s in %s\n", ep->name, path);
        ex = SW_EXIT_FAIL;
    } else if (!json) {
        printf("%zu reading%s recorded in %s\n", n, n == 1 ? "" : "s", path);
    }
    if (json)
        sw_json_print(stdout, doc, true);
    goto out;
fail:
    ex = sw_cli_fail(&e, json);
out:
    sw_free(out);
    sw_fleet_free(f);
    return ex;
}

int sw_cmd_readings(int argc, char **argv)
{
    struct sw_args a;
    int ex;
    if (!sw_args_parse(&sw_spec_readings, argc, argv, &a, &ex))
        return ex;
    static const char *const uses[] = {"record", "ledger", NULL};
    ex = sw_cli_no_ledger(&a, uses);
    if (ex)
        return ex;
    bool json = a.json, rec = sw_args_flag(&a, "record");
    enum sw_readings_tool tool = SW_READINGS_AUTO;
    struct sw_err e;
    sw_err_clear(&e);
    const char *tname = sw_args_str(&a, "tool");
    if (tname && sw_readings_tool_from_name(tname, &tool, &e))
        return sw_args_usage(&a, "%s", e.msg);
    if (rec && (!sw_args_str(&a, "fleet") || !sw_args_str(&a, "endpoint")))
        return sw_args_usage(&a, "--record needs --fleet and --endpoint");
    if (!rec &&
        (sw_args_str(&a, "fleet") || sw_args_str(&a, "endpoint") || sw_args_str(&a, "ledger")))
        return sw_args_usage(&a, "--fleet, --endpoint and --ledger go with --record");
    const char *path = a.npos ? a.pos[0] : "-";
    const char *src = strcmp(path, "-") ? path : "<stdin>";
    struct sw_readings rs;
    int rc = sw_readings_load(tool, path, &rs, &e);
    if (rc)
        return sw_cli_fail(&e, json);
    json_t *doc = sw_readings_json(&rs);
    if (!doc) {
        sw_readings_free(&rs);
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        return sw_cli_fail(&e, json);
    }
    sw_json_set_str(doc, "source", src);
    if (!json)
        print_readings(&rs, src);
    if (rec) {
        ex = record(&a, &rs, doc, json);
    } else {
        if (json)
            sw_json_print(stdout, doc, true);
        ex = SW_EXIT_OK;
    }
    json_decref(doc);
    sw_readings_free(&rs);
    return ex;
}
