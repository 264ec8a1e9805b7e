/*
 * service (module deploy): an endpoint as an installed systemd service on its host.
 *
 *   sw_deploy_install: the one render of the endpoint (unit.h), its lint (unit_lint.h; an error
 *     refuses the install before the host is touched), the host opened (host.h), the unit staged
 *     in a private directory ON THE HOST and `systemd-analyze verify`ed there (the binaries the
 *     unit names exist there, not here), the unit and its environment file copied atomically to
 *     the scope's places (system: /etc/systemd/system/NAME.service and the render's env_path;
 *     user: ~/.config/systemd/user and the env_path with %h as the remote $HOME), daemon-reload,
 *     and with `start` the unit started and waited on (bounded) until it is active, /health
 *     answers 200 and a one-token generation comes back. Every step is timed.
 *   sw_deploy_status: per endpoint, what its host says now: the unit's state, the installed unit
 *     and environment file read back and compared line by line with what the fleet renders now,
 *     /health and a one-token liveness, and device memory from the vendor tool the host has
 *     (readings.h). Each host is bounded by its own deadline: an unreachable host is reported as
 *     such, never waited on past it.
 *
 * What it deliberately does not do: stop a live unit before a new one is proven, keep a last-good
 * shape or roll back (a gated deploy does that on top of these), enable units at boot, or print
 * anything (the CLI does).
 */
#ifndef SLIPWAY_SERVICE_H
#define SLIPWAY_SERVICE_H

#include <slipway/core.h>
#include <slipway/fleet.h>
#include <slipway/host.h>
#include <slipway/ledger.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_unit_render;

/* One timed step of an install ("render", "lint", "open", "verify", "copy", "daemon-reload",
 * "start", "active", "health", "liveness"). */
struct sw_install_step {
    const char *name; /* static */
    bool ok;
    double seconds;
    char detail[512]; /* what it did or why it failed (never a secret) */
};

#define SW_INSTALL_MAX_STEPS 16

struct sw_install_opts {
    bool start;                /* start the unit and wait until it serves */
    int64_t deadline_ms;       /* each host operation (0: 60 s) */
    unsigned serve_timeout_ms; /* start -> serving (0: 300 s) */
    /* With start: the device readings taken once it serves are recorded here (NULL: read and
     * shown, not recorded). */
    struct sw_ledger *ledger;
    /* Called as each step ends (may be NULL). */
    void (*on_step)(void *ctx, const struct sw_install_step *s);
    void *ctx;
};

struct sw_install_result {
    char endpoint[128];
    char host[128];
    char transport[512]; /* sw_host_describe */
    char unit[256];      /* NAME.service */
    bool user;           /* --user scope */
    char unit_path[1024];
    char env_path[1024];
    struct sw_install_step steps[SW_INSTALL_MAX_STEPS];
    size_t n_steps;
    json_t *findings; /* lint and verify findings: [{law, severity, line, message}]; never NULL
                         after a call that got past the render */
    bool refused;     /* a lint or verify error: nothing was written on the host */
    bool installed, started, active, serving;
    char url[320];     /* http://ADDR:PORT the endpoint answers on (as its host sees it when
                        * route is "host") */
    char route[16];    /* "direct" or "host" (sw_fleet_endpoint_addr) */
    char via[300];     /* route "host": the ssh connection the proofs went through */
    int health_status; /* last /health status, 0 nothing answered */
    char liveness[512];
    char journal[2048]; /* the unit's last journal lines when the start or a proof failed */
    uint64_t n_restarts;
    json_t *readings; /* {tool|null, note?, readings?, recorded?} once it served; else NULL */
    double render_to_serving_s; /* 0 unless serving */
    double total_s;
};

/*
 * Install endpoint `ep` of fleet f on its host (and start it when o->start). 0: installed (and
 * serving with start). SW_EGATE: the render's lint or the host's verify found an error
 * (r->refused; nothing written on the host); SW_ENET/SW_EMISMATCH/SW_ETIMEDOUT...: the host
 * could not be reached or an operation failed (e names host and step); SW_ECHILD: started but
 * not serving within serve_timeout_ms (the unit is left as systemd has it; the steps say which
 * proof failed). r is always filled; free with sw_install_result_free. e may be NULL.
 */
int sw_deploy_install(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                      const struct sw_install_opts *o, struct sw_install_result *r,
                      struct sw_err *e);
void sw_install_result_free(struct sw_install_result *r);

struct sw_readings;
/*
 * Device memory on host h as its vendor tool reads it (nvidia-smi, rocm-smi or amd-smi, whichever
 * sw_host_facts finds there), parsed into rs (free with sw_readings_free; rs->n 0 when nothing
 * was read). tool receives the tool's name ("" when the host has none), note why nothing was
 * read ("no device tool on this host") or the error's words. where names the host in errors.
 * Returns 0 (a host without a tool too) or the error.
 */
int sw_service_devices(struct sw_host *h, const char *where, int64_t deadline_ms,
                       struct sw_readings *rs, char *tool, size_t tn, char *note, size_t nn);
/* {"endpoint", "host", "transport", "unit", "scope", "unit_path", "env_path", "steps": [{name,
 * ok, seconds, detail}], "findings", "refused", "installed", "started", "serving", "url",
 * "route", "via", "health", "liveness", "journal", "restarts", "render_to_serving_s", "total_s"}. New reference. */
json_t *sw_install_result_json(const struct sw_install_result *r);

/* ---------------------------------------------------------------------------------------------
 * Status.
 */
struct sw_status_opts {
    int64_t deadline_ms;      /* per host, everything asked of it (0: 20 s) */
    unsigned http_timeout_ms; /* /health and the liveness generation each (0: 10 s, capped
                                     by what is left of the host's deadline) */
    const char *only;         /* one endpoint by name; NULL: every enabled endpoint */
    /* true: the device tool is neither looked for nor run (its facts cost a dozen commands on
     * the host); "devices" is {tool: null, note}. watch reads devices on every Nth look. */
    bool skip_devices;
};

/*
 * The status of endpoints of f: a JSON object
 *   {"endpoints": [{"endpoint", "host", "transport", "reached", "unreachable" (the failure
 *     class when not reached: "unreachable", "auth", "hostkey", "deadline", ...), "error",
 *     "unit": {name, scope, load, active, sub, result, restarts, main_pid, since},
 *     "shape": {"as_rendered": bool, "installed": bool, "drift": [{file, line, installed,
 *     rendered}]}, "url", "route" ("direct" | "host"), "via", "health": {status, ms},
 *     "liveness": {ok, ms, detail},
 *     "devices": {tool, readings} | {tool: null, note}, "serving": bool, "seconds",
 *     on a local host also "process": the `slipway up` record {supervisor:
 *     "up", pid_file, verdict, why, pid, pgid, since, exe, url, log} when there is one, and
 *     "supervisor": "up" when it names its process now: the endpoint is then reported from the
 *     process (no "unit"; "shape" its argv against what `up` would launch now) and serves when
 *     /health is 200 and a token comes back}],
 *    "serving": N, "total": N}
 * into *out (new reference). Secret values of the environment file never appear (drift lines
 * of a secret show ***). 0 when the status could be gathered (whatever it says); SW_ENOENT for
 * an unknown `only`; SW_ENOMEM. *n_serving / *n_total (may be NULL) count the endpoints.
 */
int sw_deploy_status(const struct sw_fleet *f, const struct sw_status_opts *o, json_t **out,
                     size_t *n_serving, size_t *n_total, struct sw_err *e);

/*
 * `status --record` (deploy/status_record.c): one unit observation per endpoint of doc (what
 * sw_deploy_status returned) whose unit systemd described, into the ledger (`ledger`, else beside
 * fleet_path; it must exist). Each endpoint gains "recorded": ROW or "not_recorded": why (host
 * not reached, unit not described, not installed); doc gains "ledger": PATH. *n counts the rows.
 * Errors: the ledger's.
 */
int sw_deploy_status_record(json_t *doc, const char *ledger, const char *fleet_path, size_t *n,
                            struct sw_err *e);

/*
 * Installed against rendered, setting by setting (what `status` calls drift and `diff` a change):
 * blank lines and comments are not the shape (a render names its fleet file in one); every other
 * line is compared in order. Each differing line goes into `drift` (a JSON array) as {file, line,
 * rendered_line, installed, rendered}, a value whose key reads as a secret (or that the render
 * shows as one) as ***, at most 20 of them. env: the texts are an environment file. Returns how
 * many lines differ.
 */
size_t sw_service_drift(const struct sw_unit_render *ur, bool env, const char *file,
                        const char *installed, size_t ilen, const char *rendered, size_t rlen,
                        json_t *drift);

/* ---------------------------------------------------------------------------------------------
 * An endpoint as a client on this machine reaches it (probe, bench, and every later client of a
 * fleet endpoint): its route opened (host/route: direct, or through its host when it listens on
 * the host's loopback), its served name, its engine and its API key read from where the fleet
 * says (never from argv).
 */
struct sw_service_client {
    const struct sw_fleet_endpoint *ep;
    struct sw_host_route route; /* route.url and route.unix_socket go to net */
    const char *model;          /* the alias clients name, NULL when none (borrowed: the fleet) */
    const char *engine;         /* "llama.cpp", "vllm", "sglang" */
    char *api_key;              /* NULL when none; wiped and freed by close */
};
/* Find endpoint `name` in f and open its route. SW_ENOENT naming the fleet file when there is
 * no such endpoint; the route's or the secret's error otherwise. c is always safe to close. */
int sw_service_client_open(const struct sw_fleet *f, const char *name, struct sw_service_client *c,
                           struct sw_err *e);
void sw_service_client_close(struct sw_service_client *c);
/* The engine's health path asked through c's route (install's and status's request,
 * service_probe.c), bounded by timeout_ms: its HTTP status, 0 when nothing answered. */
int sw_service_client_health(const struct sw_service_client *c, unsigned timeout_ms);

/* The same for an endpoint named in a fleet file (deploy/target.c): fleet_path (NULL:
 * ./fleet.yaml) loaded and kept as long as the client. *out is set even after an error, and is
 * freed with sw_service_target_free (which closes the client and wipes its key). */
struct sw_service_target {
    struct sw_fleet *fleet;
    struct sw_service_client client;
};
int sw_service_target_new(const char *fleet_path, const char *name, struct sw_service_target **out,
                          struct sw_err *e);
void sw_service_target_free(struct sw_service_target *t);

#ifdef __cplusplus
}
#endif
#endif
