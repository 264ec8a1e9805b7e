/*
 * slipway rollback ENDPOINT [--fleet FILE] [--to TAG] [--deadline DUR]
 *                  [--ledger PATH | --no-ledger] [--json]
 *
 *   Put an endpoint's saved set back by hand (include/slipway/rollout.h): the last-good set the
 *   last committed deploy left on the host (or the rollback set when there is none), or the set
 *   of TAG; daemon-reload, restart, and prove it serves (readiness, one-token generation). The
 *   time the endpoint did not serve is measured. The ledger is only read: a deploy's commit cut
 *   off between its halves is settled by what it says (rollout/commit.c).
 *
 * Exit: 0 it serves, 1 it did not (the unit is then stopped), 2 unusable input (fleet, endpoint,
 * no saved set on the host, a bad option).
 */
#include "cli.h"
#include "cmd_rollout.h"

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"to", 0, "TAG", 0, "the tag's saved set (ENDPOINT-YYYYMMDD-N) instead of the last-good", NULL},
    {"deadline", 0, "DUR", 0, "the boot's bound to readiness (default 10m)", NULL},
    {"ledger", 0, "PATH", 0,
     "the ledger, read to settle a cut-off commit (default: $SLIPWAY_LEDGER, else "
     "FLEET.ledger.sqlite)",
     NULL},
    {"no-ledger", 0, NULL, 0, "no ledger: a commit cut off between its halves is left as it is",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway rollback frank-small --fleet examples/operator.yaml",
    "slipway rollback local --to local-20261203-1",
    NULL,
};

const struct sw_cmd_spec sw_spec_rollback = {
    .name = "rollback",
    .summary = "put an endpoint's last-good files back on its host and prove it serves",
    .synopsis = "ENDPOINT [--fleet FILE] [--to TAG] [--deadline DUR] [--ledger PATH | --no-ledger] "
                "[--json]",
    .about = "Restores the saved unit and env files over the live ones, daemon-reload, restart,\n"
             "readiness, one-token generation. Holds the endpoint's deploy lock on the host.\n"
             "Exit: 0 it serves, 1 it did not (the unit is stopped), 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
    .fleet = true,
};

int sw_cmd_rollback(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    const struct sw_fleet_endpoint *ep = NULL;
    struct sw_rollout_result res;
    struct sw_ledger led;
    bool have_ledger = false;
    int rc = SW_EXIT_OK;

    sw_err_clear(&e);
    memset(&res, 0, sizeof(res));
    memset(&led, 0, sizeof(led));
    struct sw_args a;
    if (!sw_args_parse(&sw_spec_rollback, argc, argv, &a, &rc))
        return rc;
    if (a.npos < 1)
        return sw_cli_need_endpoint(&a, " to roll back");
    struct sw_rollout_opts o = {0};
    o.to_tag = sw_args_str(&a, "to");
    if (o.to_tag && (!o.to_tag[0] || strchr(o.to_tag, '/')))
        return sw_args_usage(&a, "--to %s: want a tag name (ENDPOINT-YYYYMMDD-N)", o.to_tag);
    rc = sw_args_duration(&a, "deadline", 1, INT64_MAX, &o.deadline_ms);
    if (rc)
        return rc;
    if (sw_args_str(&a, "ledger") && sw_args_flag(&a, "no-ledger"))
        return sw_args_usage(&a, "--ledger and --no-ledger: choose one");
    if (!a.json)
        o.progress = stdout;
    if (sw__cli_rollout_endpoint(&a, "rollback", &f, &ep, &rc) ||
        sw__cli_rollout_ledger(&a, f, false, &led, &have_ledger, &o, &rc))
        goto out;
    if (sw_rollout_rollback(f, ep, &o, &res, &e)) {
        rc = sw_cli_fail(&e, a.json);
        goto out;
    }
    rc = sw__cli_rollout_finish(&res, a.json);
out:
    sw_rollout_result_free(&res);
    if (have_ledger)
        sw_ledger_close(&led);
    sw_fleet_free(f);
    return rc;
}
