/*
 * slipway history ENDPOINT [--fleet FILE] [--ledger PATH] [--json]
 *
 *   The endpoint's tags, newest first (include/slipway/ledger.h, sw_ledger_history): each with
 *   its shape, what the ledger measured of that shape on the endpoint (boots, battery, bench,
 *   usage), when and why it was retired, which one is last-good, and whether it can be restored
 *   (its payload paths, at their recorded sizes, and its image are on the host:
 *   sw_host_restore_present, the one check `slipway report` uses too). The check looks at this
 *   machine's filesystem (and podman's store) when the fleet says the endpoint's host is local,
 *   and at the host's over ssh when it is an ssh host ("not checked" when it cannot be reached).
 *   Then the last deploy attempts.
 *
 * Exit: 0 printed, 1 the ledger could not be read, 2 unusable input (no such endpoint in the
 * ledger, a broken fleet, an unknown endpoint in the fleet).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/host.h>
#include <slipway/ledger.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"ledger", 0, "PATH", 0,
     "the ledger (default: $SLIPWAY_LEDGER, else beside the fleet, else ~/.local/share/slipway)",
     NULL},
    {"no-ledger", 0, NULL, SW_OPT_REFUSE,
     "history shows the ledger's tags: without a ledger there is nothing to show", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway history frank-primary --fleet examples/operator.yaml",
    "slipway history frank-small --ledger fleet.ledger.sqlite --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_history = {
    .name = "history",
    .summary = "an endpoint's tags: shapes, measured figures, last-good, retired, restorable",
    .synopsis = "ENDPOINT [--fleet FILE] [--ledger PATH] [--json]",
    .about = "Lists the endpoint's tags (ENDPOINT-YYYYMMDD-N, newest first) with their shapes,\n"
             "what the ledger measured of each shape on the endpoint, which one is last-good,\n"
             "when and why each was retired, and whether each can be restored: its payload\n"
             "paths (at their recorded sizes) and image are on the host. That is checked here\n"
             "when the fleet says the endpoint's host is local, over ssh when it is an ssh host\n"
             "(\"not checked\" when it cannot be reached, or when there is no fleet: no --fleet,\n"
             "no $SLIPWAY_FLEET and no ./fleet.yaml). Each payload file's sha256 as the\n"
             "deploy read it on the host is shown.\n"
             "Then the endpoint's last deploy attempts. The ledger is opened read-only.\n"
             "Exit: 0 printed, 1 the ledger could not be read, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

static void print_measured(const json_t *m)
{
    json_int_t boots = json_integer_value(json_object_get(m, "boots"));
    const json_t *bat = json_object_get(m, "battery");
    const json_t *ben = json_object_get(m, "bench");
    const json_t *use = json_object_get(m, "usage");
    printf("      measured: %lld boots (%lld ok, %lld failed)", (long long)boots,
           (long long)json_integer_value(json_object_get(m, "boots_ok")),
           (long long)json_integer_value(json_object_get(m, "boots_failed")));
    const json_t *kv = json_object_get(m, "kv_cache_tokens");
    if (json_is_number(kv))
        printf(", kv_cache_tokens %.0f", json_number_value(kv));
    const json_t *mc = json_object_get(m, "max_concurrency");
    if (json_is_number(mc))
        printf(", max_concurrency %.2f", json_number_value(mc));
    const json_t *lb = json_object_get(bat, "last");
    printf("; battery %lld runs", (long long)json_integer_value(json_object_get(bat, "runs")));
    if (json_is_object(lb))
        printf(" (last: %lld pass, %lld fail, %lld skip)",
               (long long)json_integer_value(json_object_get(lb, "passed")),
               (long long)json_integer_value(json_object_get(lb, "failed")),
               (long long)json_integer_value(json_object_get(lb, "skipped")));
    printf("; bench %lld runs", (long long)json_integer_value(json_object_get(ben, "runs")));
    const json_t *lu = json_object_get(use, "last");
    if (json_is_object(lu))
        printf("; last reading %s %lld/%lld MiB", json_string_value(json_object_get(lu, "device")),
               (long long)json_integer_value(json_object_get(lu, "used_mib")),
               (long long)json_integer_value(json_object_get(lu, "total_mib")));
    printf("\n");
}

static void print_history(const json_t *h, const char *lpath)
{
    const json_t *tags = json_object_get(h, "tags");
    const json_t *lg = json_object_get(h, "last_good");
    printf("history of %s (ledger %s): %zu tags, last-good %s\n",
           json_string_value(json_object_get(h, "endpoint")), lpath, json_array_size(tags),
           json_is_string(lg) ? json_string_value(lg) : "none");
    size_t i;
    const json_t *t;
    json_array_foreach(tags, i, t)
    {
        bool last_good = json_is_true(json_object_get(t, "last_good"));
        bool kept = json_is_true(json_object_get(t, "kept"));
        const json_t *r = json_object_get(t, "restorable");
        printf("%s %-30s %-9s %s  %s [%.12s]\n", last_good ? "*" : " ",
               json_string_value(json_object_get(t, "name")),
               last_good ? "last-good" : (kept ? "kept" : "retired"),
               json_string_value(json_object_get(t, "created")),
               json_string_value(json_object_get(t, "summary")),
               json_string_value(json_object_get(t, "shape_hash")));
        const char *note = json_string_value(json_object_get(t, "note"));
        if (note)
            printf("      note: %s\n", note);
        const char *image = json_string_value(json_object_get(t, "image"));
        const json_t *pl = json_object_get(t, "payload");
        printf("      payload: %zu paths%s%s\n", json_array_size(pl), image ? "; image " : "",
               image ? image : "");
        size_t pi;
        const json_t *pe;
        json_array_foreach(pl, pi, pe)
        {
            if (pi == 3) {
                printf("        ... and %zu more\n", json_array_size(pl) - 3);
                break;
            }
            const char *sha = json_string_value(json_object_get(pe, "sha256"));
            printf("        %s %lld bytes, sha256 %s\n",
                   json_string_value(json_object_get(pe, "path")),
                   (long long)json_integer_value(json_object_get(pe, "size")),
                   sha ? sha : "not hashed");
        }
        print_measured(json_object_get(t, "measured"));
        if (!kept)
            printf("      retired %s: %s\n", json_string_value(json_object_get(t, "retired")),
                   json_string_value(json_object_get(t, "retired_why")));
        printf("      restorable: %s (%s)\n",
               json_is_null(r) ? "unknown" : (json_is_true(r) ? "yes" : "NO"),
               json_string_value(json_object_get(t, "restorable_why")));
        const json_t *missing = json_object_get(t, "missing");
        size_t k;
        const json_t *m;
        json_array_foreach(missing, k, m)
        {
            printf("        missing: %s\n", json_string_value(m));
        }
    }
    const json_t *att = json_object_get(h, "attempts");
    if (json_array_size(att))
        printf("deploy attempts (newest first):\n");
    json_array_foreach(att, i, t)
    {
        const json_t *dt = json_object_get(t, "downtime_ms");
        const char *cls = json_string_value(json_object_get(t, "failure_class"));
        const char *tag = json_string_value(json_object_get(t, "tag"));
        printf("  #%lld %s %-15s", (long long)json_integer_value(json_object_get(t, "id")),
               json_string_value(json_object_get(t, "started")),
               json_string_value(json_object_get(t, "outcome")));
        if (cls)
            printf(" %s", cls);
        if (tag)
            printf(" -> %s", tag);
        if (json_is_integer(dt))
            printf(", did not serve for %lld ms", (long long)json_integer_value(dt));
        if (json_is_integer(json_object_get(t, "rule_id")))
            printf(" (known-bad rule #%lld)",
                   (long long)json_integer_value(json_object_get(t, "rule_id")));
        printf(", %zu steps\n", json_array_size(json_object_get(t, "steps")));
        const char *note = json_string_value(json_object_get(t, "note"));
        if (note)
            printf("      note: %s\n", note);
    }
}

int sw_cmd_history(int argc, char **argv)
{
    struct sw_err e;
    struct sw_args a;
    struct sw_ledger led;
    struct sw_fleet *f = NULL;
    struct sw_host_restore_check rc_check;
    json_t *h = NULL;
    char lpath[4096];
    int rc = SW_EXIT_OK;
    sw_err_clear(&e);
    memset(&led, 0, sizeof(led));
    memset(&rc_check, 0, sizeof(rc_check));
    if (!sw_args_parse(&sw_spec_history, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    if (a.npos < 1)
        return sw_cli_need_endpoint(&a, NULL);
    const char *endpoint = a.pos[0];
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, SW_CLI_FLEET_OPTIONAL, &fl);
    if (rc)
        return rc;
    const char *fleet_path = fl.path;
    const char *ledger_path = sw_args_str(&a, "ledger");

    struct sw_ledger_history_opts ho = {.unchecked = "not checked (no fleet given: the "
                                                     "endpoint's host is unknown)"};
    const struct sw_fleet_endpoint *ep = NULL;
    if (fleet_path) {
        if (sw_fleet_load(fleet_path, NULL, &f, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        ep = sw_fleet_endpoint(f, endpoint);
        if (!ep) {
            sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s'", fleet_path, endpoint);
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        ho.unchecked = NULL; /* sw_host_restore_check_open says why not, when it cannot */
    }
    struct sw_ledger_open_opts oo = {.readonly = true};
    bool opened;
    if (sw_ledger_open_for(&led, ledger_path, fleet_path, &oo, SW_LEDGER_MUST_EXIST, &opened, lpath,
                           sizeof(lpath), &e)) {
        sw_err_prefix(&e, "the ledger");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (!ho.unchecked) {
        ho.unchecked = sw_host_restore_check_open(&rc_check, ep);
        ho.present_sized = ho.unchecked ? NULL : sw_host_restore_present;
        ho.ctx = &rc_check;
    }
    if (sw_ledger_history(&led, endpoint, &ho, &h, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    sw_json_set_str(h, "ledger", lpath);
    if (json)
        sw_json_print(stdout, h, true);
    else
        print_history(h, lpath);
out:
    json_decref(h);
    sw_ledger_close(&led);
    sw_host_restore_check_close(&rc_check);
    sw_fleet_free(f);
    return rc;
}
