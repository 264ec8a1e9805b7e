/*
 * The fixture the rollout real tests share (tests/real/test_rollout*.c): one test host
 * (swthost.h: a network of its own) with the tiny chat model bound read-only at /models, a fleet
 * file in a temporary directory (the ledger lands beside it) naming one native llama-server
 * endpoint on that host, bound to the host's own 127.0.0.1 as the operator's are (so slipway
 * reaches it through the host) unless the test binds it to every address,
 * `slipway VERB ... --json` run against it, and the checks every one of those tests makes of the
 * live unit (it serves a generation, its unit file holds a flag, nothing is left staged). Commands
 * on the host go through swthost (swth_must, swth_show).
 *
 * What a test does with the host (its faults, meters, limiters) stays in the test. The model is
 * made once per test group (swth_group_setup / swth_group_teardown as cmocka's group fixtures);
 * each test brings its own host up (swro_up) and takes it down (swro_close from its teardown;
 * swthost's exit and signal hooks take it down too when a test dies), or shares the group's one
 * host (swro_up_shared), which each test finds with no trace of slipway on it.
 *
 * Usage:
 *     static const struct swro_site site = {"sw-ro-a", "169.254.22.2", "ro-a", "ro"};
 *     struct swro r = {0};
 *     swro_up(&r, &site);
 *     swro_write_fleet(&r, &(struct swro_fleet){.ctx = 512});
 *     swro_must_commit(&r, "baseline");
 *     assert_true(swro_serves(&r));
 *     swro_close(&r);
 */
#ifndef SWROLLOUT_H
#define SWROLLOUT_H

#include "swthost.h"
#include "swtest.h"

#include <stdbool.h>
#include <stddef.h>

/* Where a test's endpoint lives. */
struct swro_site {
    const char *host;       /* the test host's name (scripts/testhost.sh): "sw-ro-a" */
    const char *addr;       /* its address (a network of its own): "169.254.22.2" */
    const char *fleet_host; /* the host's name in the fleet file: "ro-a" */
    const char *endpoint;   /* the endpoint's name: "ro" (its unit: slipway-ro.service) */
};

struct swro {
    struct swth_host h;
    char *dir;        /* temporary: the fleet file, the ledger beside it, the test's own files */
    char fleet[4200]; /* dir/fleet.yaml */
    char addr[32];
    char listen[64]; /* what the engine binds on the host (swro_write_fleet): "127.0.0.1" */
    char fleet_host[32];
    char endpoint[32];
    char unit[64];       /* slipway-ENDPOINT.service */
    int port;            /* the endpoint's listen port on addr */
    unsigned deadline_s; /* each swro_run's bound; swro_up sets 600 */
};

/* The endpoint of the fleet swro_write_fleet writes: native llama-server, one sequence, no GPU
 * layers, restart_sec 1s, alias ENDPOINT-tiny. */
struct swro_fleet {
    int ctx;             /* shape.ctx_size */
    const char *binary;  /* NULL: /opt/llama/bin/llama-server */
    const char *payload; /* NULL: /models/chat.gguf */
    const char *shape;   /* more shape lines (6-space indented), NULL for none */
    const char *service; /* more service lines (6-space indented), NULL for none */
    const char *extra;   /* endpoint lines (4-space indented), NULL for none; an `args:` among
                          * them replaces the default `args: [--metrics]` */
    const char *listen;  /* the engine's bind address; NULL: 127.0.0.1, the host's own loopback
                          * (slipway goes through the host); "0.0.0.0": reached at the host's
                          * address */
};

/* cmocka test fixtures for a test whose state is a bare struct swro (calloc'd / closed, freed). */
int swro_setup(void **state);
int swro_teardown(void **state);

/* The host up with the model bound at /models (swt_need first: the host's prerequisites and the
 * model), r's paths ready and a free port picked. Fails the test when the host does not boot. */
void swro_up(struct swro *r, const struct swro_site *site);
/* swro_up with one more read-only bind ("PATH:DEST"; NULL: none). */
void swro_up_binds(struct swro *r, const struct swro_site *site, const char *more);
/* The host down and the temporary directory removed. Safe on a fixture never brought up, and
 * twice. Does not free r. */
void swro_close(struct swro *r);

/* One host for the cases of a test binary that allow it: the first swro_up_shared boots the
 * site's host (swro_up), makes the tests' own ssh calls to it share one connection
 * (swth_mux_on) and keeps it; each later one removes what slipway left on it (its units,
 * env files, rollout state, locks: as a fresh host is for slipway), or boots it again when that
 * fails, then readies r as swro_up does. swro_shared_teardown is the cases' cmocka teardown (r's
 * directory removed, r freed, the host kept); swro_group_teardown the group's (the host down,
 * then swth_group_teardown). */
void swro_up_shared(struct swro *r, const struct swro_site *site);
/* swro_up_shared with one more read-only bind when it boots the host ("PATH:DEST"; NULL: none):
 * PATH must outlast the host (remove it after swro_group_teardown). */
void swro_up_shared_binds(struct swro *r, const struct swro_site *site, const char *more);
int swro_shared_teardown(void **state);
int swro_group_teardown(void **state);

/* The fleet file's head: version, the one host (ssh, the test host's key and known_hosts) with
 * one device line (`NAME: {...}`), then "endpoints:". snprintf's return. */
int swro_fleet_head(const struct swro *r, const char *device, char *out, size_t n);
/* Write r->fleet: one host (ssh, the test host's key and known_hosts), one endpoint as spec says. */
void swro_write_fleet(struct swro *r, const struct swro_fleet *spec);

/* slipway VERB ENDPOINT --fleet FLEET --json ARGS... (NULL-terminated),
 * bounded by r->deadline_s: its parsed stdout (json_decref), its exit in *status; its stderr
 * printed when it wrote any. */
json_t *swro_run(struct swro *r, int *status, const char *verb, ...) __attribute__((sentinel));
/* A deploy with the short battery (no worst case; readiness, liveness, models, chat) must commit:
 * else the test fails with its steps, class, message and journal, `what` naming it. */
void swro_must_commit(struct swro *r, const char *what);
/* The steps of a result, one line each. */
void swro_print_steps(const json_t *j);
/* j's string member k, "" when absent. */
const char *swro_str(const json_t *j, const char *k);

/* ADDR:PORT answers the engine's own one-token chat request with 200 within timeout_s, asked
 * from this machine. */
bool swro_generates(const char *addr, int port, unsigned timeout_s);
/* The same asked ON host h (curl there, over ssh): for an engine bound to the host's loopback. */
bool swro_generates_on(const struct swth_host *h, const char *addr, int port, unsigned timeout_s);
/* The endpoint serves a generation where it listens (60 s bound): on the host when it is bound
 * to the host's loopback, else from here. */
bool swro_serves(const struct swro *r);
/* The live unit file holds needle. */
bool swro_live_has(const struct swro *r, const char *needle);
/* No staged file (*.new), copy temporary (.slipway-copy*) or rollback file (*.rb) beside the live
 * unit and env files; else the test fails listing them. */
void swro_nothing_staged(const struct swro *r);

struct swh;
/* The end of a test that kept a decoy on this machine's 127.0.0.1 at a port of the host's
 * (swhttpd.h) and gave slipway SLIPWAY_RUN_DIR=run_dir: the decoy was asked nothing, no forward
 * socket (NAME.fPID.N beside the ssh masters, host/route) is left there; the decoy stopped and
 * SLIPWAY_RUN_DIR unset. */
void swro_nothing_left_here(struct swh *decoy, const char *run_dir);

#endif
