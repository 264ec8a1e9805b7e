/*
 * What `slipway deploy` and `slipway rollback` share: the endpoint lookup, the ledger and the
 * result's views.
 */
#ifndef SLIPWAY_CMD_ROLLOUT_H
#define SLIPWAY_CMD_ROLLOUT_H

#include "opt.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/rollout.h>

/* Load the fleet (sw_cli_fleet: --fleet, $SLIPWAY_FLEET, ./fleet.yaml) and find ENDPOINT
 * (a->pos[0]); on failure the error is printed, *rc set and -1 returned. */
int sw__cli_rollout_endpoint(const struct sw_args *a, const char *verb, struct sw_fleet **f,
                             const struct sw_fleet_endpoint **ep, int *rc);
/* The ledger (--ledger PATH, else $SLIPWAY_LEDGER, else beside the fleet; none with
 * --no-ledger or when the default is absent) opened into led, read-write when write, and put in
 * o (o->record = write); on failure the error is printed, *rc set and -1 returned. */
int sw__cli_rollout_ledger(const struct sw_args *a, const struct sw_fleet *f, bool write,
                           struct sw_ledger *led, bool *have, struct sw_rollout_opts *o, int *rc);
/* The human view of a result. */
void sw__cli_rollout_print(const struct sw_rollout_result *r);
/* Print (human or --json) and return the exit code: 0 committed / dry run / restored, else 1. */
int sw__cli_rollout_finish(const struct sw_rollout_result *r, bool json);

#endif
