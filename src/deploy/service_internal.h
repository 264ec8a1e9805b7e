/*
 * deploy (internal): what sw_deploy_install and sw_deploy_status share: where an installed
 * endpoint answers, its bearer, the two HTTP proofs (health, a one-token generation), the unit's
 * paths on its host.
 */
#ifndef SW_SERVICE_INTERNAL_H
#define SW_SERVICE_INTERNAL_H

#include <slipway/engine.h>
#include <slipway/service.h>
#include <slipway/unit.h>

/* The API key the rendered environment gives the engine (a *_API_KEY line), "" when none. Wipe
 * out after use. */
void sw__svc_bearer(const struct sw_unit_render *r, char *out, size_t n);
/* The same from an environment file's text (the one installed on the host). */
void sw__svc_bearer_text(const char *text, size_t len, char *out, size_t n);
/* The engine adapter of the endpoint (NULL when none). */
const struct sw_engine *sw__svc_engine(const struct sw_fleet_endpoint *ep);

/* GET URL/health through the route (host/route: direct, or the forward to the endpoint's host):
 * *status 0 when nothing answered; *ms its time. */
struct sw_host_route;
void sw__svc_health(const struct sw_engine *eng, const struct sw_host_route *rt, const char *bearer,
                    unsigned timeout_ms, int *status, double *ms);
/* POST the engine's one-token generation. true when HTTP 200 with >= 1 completion token; detail
 * says what came back (never the bearer). */
bool sw__svc_liveness(const struct sw_engine *eng, const struct sw_host_route *rt,
                      const char *bearer, unsigned timeout_ms, char *detail, size_t n, double *ms);

/* Where the unit and its environment file live on the host: home is the remote $HOME (needed
 * for the user scope and a %h in env_path). */
int sw__svc_paths(const struct sw_unit_render *r, const char *home, char *unit_path, size_t un,
                  char *env_path, size_t en, struct sw_err *e);

/* Device memory on the host: its vendor tool (nvidia-smi, rocm-smi, amd-smi) run and parsed into
 * rs (sw_readings_free). tool gets the tool's name ("" when the host has none: 0 returned, note
 * "no device tool on this host"); note says why nothing was read when it fails. devices.c */
struct sw_readings;
int sw__svc_devices(struct sw_host *h, const char *where, int64_t deadline_ms,
                    struct sw_readings *rs, char *tool, size_t tn, char *note, size_t nn);

/* A local endpoint's `slipway up` record as status reports it (status_up.c): process {supervisor:
 * "up", pid_file, verdict (alive, gone, reused, mismatch, refused), why, pid, pgid, since,
 * started_unix, exe, url, log, detached} or NULL when there is no record; shape (alive only) the
 * running argv against the one `up` would launch now, in status's shape form. alive: the record
 * names its process now. Free with sw__status_up_free. SW_ENOMEM only. */
struct sw__status_up {
    bool alive;
    json_t *process, *shape;
};
int sw__status_up_read(const struct sw_fleet_endpoint *ep, struct sw__status_up *out);
void sw__status_up_free(struct sw__status_up *u);

/* Milliseconds left of a budget that started at t0 (sw_now_ns); at least 1. */
int64_t sw__svc_left_ms(uint64_t t0, int64_t budget_ms);

#endif
