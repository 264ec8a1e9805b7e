/*
 * The fixture test_apply and bench_apply share: two test hosts (swthost.h: sw-ap-a at
 * 169.254.38.2, sw-ap-b at 169.254.39.2, each with a network of its own) with the tiny chat model
 * bound at /models, and a fleet of three native llama-server endpoints on each (a1 a2 a3 on
 * ap-a, b1 b2 b3 on ap-b), bound to the host's own 127.0.0.1 (ports 18100+i), the first two of
 * each host on device cpu0 and the third on cpu1. A test sets each endpoint's ctx (and whether it
 * takes llama-server's default port) and ap-a's cpu0 memory_total, then writes the fleet.
 *
 * Usage (cmocka group fixtures swth_group_setup / swth_group_teardown make the model):
 *     struct swap_fx *f = ...swap_setup...;
 *     swap_up(f);
 *     swap_write_fleet(f);
 *     json_t *j = swap_run(f, &st, "apply", "--no-worst-case", NULL);
 */
#ifndef SWAPPLY_H
#define SWAPPLY_H

#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <stdbool.h>

#define SWAP_N_EP 6
extern const char *const swap_names[SWAP_N_EP];

struct swap_fx {
    struct swro a, b;
    int ctx[SWAP_N_EP];           /* each endpoint's ctx_size (setup: 512) */
    bool default_port[SWAP_N_EP]; /* `listen: {address: 127.0.0.1}`: the engine's 8080 */
    char mem_a[32];               /* ap-a's cpu0 memory_total (setup: 8GiB) */
};

/* cmocka fixtures: a calloc'd swap_fx (ctx 512, 8GiB); both hosts down and freed. */
int swap_setup(void **state);
int swap_teardown(void **state);
/* Both hosts up (the test fails when one does not boot). */
void swap_up(struct swap_fx *f);
/* The host endpoint i lives on. */
const struct swth_host *swap_host_of(const struct swap_fx *f, int i);
/* f->a.fleet written from f's fields. */
void swap_write_fleet(struct swap_fx *f);
/* slipway VERB --fleet FLEET --json ARGS... (NULL-terminated), bounded by 900 s: the document
 * (the test fails when there is none), the exit in *status. */
json_t *swap_run(struct swap_fx *f, int *status, const char *verb, ...) __attribute__((sentinel));
/* The endpoint `name` of a diff/apply document (the test fails when it is not there). */
const json_t *swap_item(const json_t *doc, const char *name);

/* Each unit's MainPID and NRestarts, read on its host. */
struct swap_unitstate {
    char pid[32], restarts[32];
};
void swap_read_units(const struct swap_fx *f, struct swap_unitstate u[SWAP_N_EP]);

#endif
