/* ladder's internals shared by its files (src/tune/ladder*.c). */
#ifndef SLIPWAY_TUNE_LADDER_INTERNAL_H
#define SLIPWAY_TUNE_LADDER_INTERNAL_H

#include <slipway/ladder.h>

struct sw_fleet_endpoint;

/* Set the knob's value on the endpoint (sw_gate_set with the knob's shape field). */
int sw__ladder_set(struct sw_fleet_endpoint *ep, enum sw_ladder_knob k, int64_t v,
                   struct sw_err *e);

#endif
