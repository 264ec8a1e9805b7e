/*
 * unit: an endpoint as a systemd service on its host. From the endpoint's one plan
 * (sw_plan_endpoint: plan.cmd is the engine's argv/env, never rebuilt here) and the fleet's
 * `runtime:` and `service:` it renders
 *   - NAME.service: [Unit] with the start limits (StartLimitIntervalSec/Burst belong there, not
 *     in [Service]), [Service] with Restart from the engine's exit behaviour, RestartSec long
 *     enough for the device memory to be released, TimeoutStopSec above the container's stop
 *     grace and the engine's drain, OOMScoreAdjust, KillMode; a container runs as
 *     `podman rm -f` + `podman run -d --name NAME ...` (ExecStartPre) under `podman wait NAME`
 *     (the main process, so a container death trips the restart);
 *   - NAME.env: the engine's environment (KEY=VALUE, mode 0600), the only place secrets go;
 *   - for a container, its `podman run` argv: devices per vendor, shm size, ulimits, the payload
 *     mounts, and every path the engine receives in the container's view (a path no mount covers
 *     is an error naming it and the mounts).
 * Renders are deterministic: the same fleet (and the same secret values) gives byte-identical
 * files.
 *
 * Layer: plan -> unit -> gate, deploy, cli.
 * What it deliberately does not do: lint a unit (unit_lint.h), install or start it on a host
 * (deploy), read the host (it renders what the fleet says).
 */
#ifndef SLIPWAY_UNIT_H
#define SLIPWAY_UNIT_H

#include <slipway/core.h>
#include <slipway/fleet.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One rendered file. text carries secret values (write it only to the file, mode 0600 for the
 * env file); shown is the same text with every secret value replaced by "***" (print that). */
struct sw_unit_file {
    char name[256]; /* "slipway-frank-primary.service" */
    int mode;       /* 0644 for the unit, 0600 for the env file */
    char *text;
    size_t len;
    char *shown;
};

/* The numbers the unit was rendered with, for a reader that checks relationships (lint, gates)
 * without parsing the text. Durations in milliseconds. */
struct sw_unit_timing {
    uint64_t restart_sec_ms;
    uint64_t stop_timeout_ms;  /* TimeoutStopSec */
    uint64_t stop_grace_ms;    /* `podman stop -t`; 0 for native */
    uint64_t drain_ms;         /* the engine's drain after SIGTERM (slipway's table) */
    uint64_t start_timeout_ms; /* TimeoutStartSec; 0: infinity */
    uint64_t start_limit_interval_ms;
    uint64_t start_limit_burst;
    int64_t oom_score_adjust;
    bool oom_set;        /* OOMScoreAdjust= rendered */
    bool restart_always; /* Restart=always (else on-failure) */
    uint64_t memory_max; /* MemoryMax= in bytes; 0: not rendered (no limit) */
};

struct sw_unit_render {
    const struct sw_fleet_endpoint *ep;
    enum sw_fleet_runtime_kind runtime;
    enum sw_fleet_scope scope;
    char name[240];     /* unit name without ".service" (also the container's name) */
    char env_path[512]; /* where EnvironmentFile= points on the host (may hold %h) */
    struct sw_unit_file service;
    struct sw_unit_file env;
    struct sw_unit_timing timing;
    /* The engine's argv as the unit runs it (a container's paths translated); NULL-ended. */
    char **engine_argv;
    size_t engine_argc;
    /* Containers only (NULL/0 for native): `podman run -d ...` and `podman stop -t N NAME`,
     * each NULL-ended, argv[0] the runtime's absolute path. */
    char **container_argv;
    size_t container_argc;
    char **stop_argv;
    size_t stop_argc;
    const char *image;
    bool image_pinned;
    /* Advice that does not stop the render ("image ... is not pinned by digest"). */
    char **warnings;
    size_t n_warnings;
};

/*
 * Render one endpoint of a loaded fleet (f may be NULL: names in the header comment then say
 * "(fleet)"). Calls sw_plan_endpoint and renders from plan.cmd; a plan whose law cannot run
 * still renders when its argv is there. Errors (SW_EINVAL/SW_EUNSUPPORTED with the fleet
 * position): an argv the plan could not render (e.g. a secret that cannot be read here), a path
 * outside every mount of a container, a container runtime without an image, a stop timeout not
 * above the grace, a `~/` path in a system unit, an environment value neither systemd nor podman
 * reads verbatim. On success *out is complete; free with sw_unit_render_free (also after a
 * failure: it is then zeroed or partial).
 */
int sw_unit_render_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                            struct sw_unit_render *out, struct sw_err *e);
/* Wipes the secret-carrying texts before freeing. NULL is fine. */
void sw_unit_render_free(struct sw_unit_render *r);

/*
 * {"unit": NAME, "runtime", "scope", "files": [{name, mode, text}] (text redacted: shown),
 * "engine_argv": [...], "container": {argv, stop, image, pinned} or null, "timing": {...},
 * "warnings": [...]}. New reference, NULL on OOM.
 */
json_t *sw_unit_render_json(const struct sw_unit_render *r);

/*
 * Write NAME.service (0644) and NAME.env (0600, with the secret values) into dir: each through a
 * temporary file in dir, fsync, then renamed; the directory is fsynced. Nothing is left behind
 * on failure (a missing or read-only dir, a full disk): temporaries are removed and no rename
 * happens until both files are written. Errors name the path.
 */
int sw_unit_render_write(const struct sw_unit_render *r, const char *dir, struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
