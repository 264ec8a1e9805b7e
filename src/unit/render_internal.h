/*
 * unit/render internals shared by src/unit/render*.c: a growable NULL-ended argv, systemd's
 * command-line quoting, and the container part of a render (its argv, the paths the engine
 * receives in the container's view). Nothing here is visible outside src/unit/render*.c.
 */
#ifndef SW_UNIT_RENDER_INTERNAL_H
#define SW_UNIT_RENDER_INTERNAL_H

#include <slipway/plan.h>
#include <slipway/unit.h>

/* A NULL-ended argv of sw_malloc'd strings; the first failure sticks in rc. */
struct sw__unit_strv {
    char **v;
    size_t n;
    int rc;
};
void sw__unit_strv_push(struct sw__unit_strv *s, const char *a);
void sw__unit_strv_pushf(struct sw__unit_strv *s, const char *fmt, ...) SW_PRINTF(2, 3);
void sw__unit_strv_free(char **v, size_t n);

/* Append one argument to an Exec*= line as systemd reads it: '%' doubled (specifiers), '$'
 * doubled (variable expansion), quoted with "..." when it holds blanks, quotes, backslashes,
 * control characters or is empty, a lone ";" escaped. A control character is written as the C
 * escape systemd's unquoting reads back (\n, \r, \t, \xNN), never raw: systemd ends a unit's
 * line at a CR as well as an LF. The one escaper of a value in a unit's command line. */
int sw__unit_exec_quote(struct sw_buf *b, const char *arg);

/* The per-engine numbers a render starts from (the fleet's service:/runtime: override them). */
struct sw__unit_defaults {
    uint64_t drain_ms;
    uint64_t restart_gpu_ms;
    uint64_t shm_bytes;
    const char *restart_why; /* the comment above Restart= */
    bool restart_always;
};
void sw__unit_defaults(enum sw_fleet_engine eng, struct sw__unit_defaults *d);

/* The engine argv in the unit's view: for a container, every path argument translated through
 * the payload mounts (an error naming the path and the mounts when none covers it); for native,
 * as the plan gave it. `~` is refused in both (systemd and podman expand neither). */
int sw__unit_engine_argv(const struct sw_fleet_endpoint *ep, const struct sw_engine_cmd *cmd,
                         struct sw__unit_strv *out, struct sw_err *e);

/* The device environment (HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES) the endpoint's devices need
 * in this runtime, as "NAME=VALUE" strings, skipping names the plan's env already sets. */
int sw__unit_device_env(const struct sw_fleet_endpoint *ep, enum sw_fleet_runtime_kind rt,
                        const struct sw_engine_cmd *cmd, struct sw__unit_strv *out);

/* `podman run -d --name NAME ...` (or docker) for the render r: argv of r->container_argv. */
int sw__unit_container_argv(struct sw_unit_render *r, const struct sw__unit_strv *engine,
                            uint64_t shm_bytes, struct sw_err *e);

/* The runtime's program: "/usr/bin/podman", "/usr/bin/docker". */
const char *sw__unit_runtime_path(enum sw_fleet_runtime_kind k);

#endif
