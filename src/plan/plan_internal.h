/*
 * plan's own wiring between its files (plan.c: sw_plan_endpoint and the llama.cpp and SGLang
 * planners; plan_vllm.c: the vLLM planner). Not a public API: the plan is public as struct
 * sw_plan (plan.h).
 */
#ifndef SLIPWAY_PLAN_INTERNAL_H
#define SLIPWAY_PLAN_INTERNAL_H

#include <slipway/fleet.h>
#include <slipway/plan.h>

#include <stdint.h>

/* A declared fact in bytes (measured: NAME: {value: 918166048 B}); 0 when absent or not bytes. */
uint64_t sw__plan_fact_bytes(const struct sw_fleet_endpoint *ep, const char *name);

/* vLLM's plan of ep into p (plan_vllm.c): the vLLM branch of sw_plan_endpoint. */
int sw__plan_vllm(const struct sw_fleet_endpoint *ep, struct sw_plan *p, struct sw_err *e);

#endif
