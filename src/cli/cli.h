/*
 * Shared by the CLI verbs (src/cli/cmd_*.c): the verb signature, the verbs' list, and the one
 * place where errors become text on stderr and exit codes. Options are read by opt.h's layer.
 *
 * Exit codes for every verb: 0 success, 1 the work ran and found a failure (a gate failed, a
 * check failed, a boot failed), 2 the input or the usage was unusable.
 */
#ifndef SLIPWAY_CLI_H
#define SLIPWAY_CLI_H

#include <slipway/core.h>

#include "opt.h"

#include <signal.h>
#include <stdbool.h>

#define SW_EXIT_OK    0
#define SW_EXIT_FAIL  1
#define SW_EXIT_USAGE 2

/* Each verb: argv[0] is the verb name. Returns an exit code. */
typedef int (*sw_cmd_fn)(int argc, char **argv);

struct sw_cmd {
    const char *name;
    sw_cmd_fn fn;
    const char *summary;
};

/* The verbs: add one line here and one cmd_<verb>.c defining sw_cmd_<verb>. Keep alphabetical. */
#define SW_VERBS(X)                                                                                \
    X(apply, "converge the whole fleet to its file: gated, in parallel by host, idempotent")       \
    X(bench, "measure decode and prefill: depth sweep, concurrency, open-loop arrivals")           \
    X(bootlog, "read an engine's boot log: its report and failure; diff predicted vs printed")     \
    X(calibrate, "fit an endpoint's law terms from its recorded boots; predict with intervals")    \
    X(check, "run the gates on a fleet's endpoints before a boot: band, pool, window, known-bad")  \
    X(completion, "bash/zsh completion and scdoc man page sources, from the CLI tables")           \
    X(deploy, "roll an endpoint's shape out on its host, proven, or roll back to the old one")     \
    X(diff, "per host, what `apply` would change and why: unit and env lines, payloads, state")    \
    X(down, "stop an endpoint `up` started (checks the pid still names that process)")             \
    X(export, "write the fleet for the tools around it: harness, llama-swap, prometheus")          \
    X(fetch, "download a payload from the Hub, verified and resumable; or --verify-only one")      \
    X(fleet, "show or check a fleet file (hosts, devices, endpoints, shapes)")                     \
    X(gguf, "inspect a GGUF model file; synthesize tiny chat-capable test models")                 \
    X(history, "an endpoint's tags: shapes, measured figures, last-good, retired, restorable")     \
    X(hosts, "reach the fleet's hosts: systemd, podman, engine binaries or images, payloads")      \
    X(import, "write a fleet from what already runs: units, env files, command lines")             \
    X(install, "install an endpoint's rendered service on its host; --start and prove it serves")  \
    X(ladder, "the largest max_model_len/ctx/slots/KV that boots and survives, in few boots")      \
    X(ledger, "the record of boots, usage readings, batteries, benches and rules")                 \
    X(lint, "lint a systemd unit: stop timeout, start limits, Restart, paths, digest, secrets")    \
    X(logs, "an endpoint's journal from its host, failure lines classified inline")                \
    X(plan, "predict an engine's boot (memory lines, budget per device) from its command line")    \
    X(probe, "run the live battery against an endpoint: readiness to worst case, with evidence")   \
    X(readings, "device memory used/total from nvidia-smi, rocm-smi, amd-smi output; --record it") \
    X(render, "render an endpoint as a systemd service: the unit, its env file, the container")    \
    X(report, "the fleet as people read it: Markdown, one HTML page, JSON; from fleet + ledger")   \
    X(retire, "move a payload directory to a trash dir, refused while a kept tag needs it")        \
    X(rollback, "put an endpoint's last-good files back on its host and prove it serves")          \
    X(serve, "one OpenAI-compatible front door: models admitted by their planned memory")          \
    X(sim, "an engine stand-in driven by the plan's law: boots, serves and fails like it")         \
    X(status, "each endpoint on its host now: unit state, shape vs render, health, liveness")      \
    X(tune, "search an endpoint's declared knobs for a better objective, in few boots")            \
    X(up, "boot a local endpoint supervised, prove it serves, diff predicted vs printed")          \
    X(version, "print the version")                                                                \
    X(watch, "keep the fleet serving: prove, restart, roll back, alert, schedule, metrics")

#define SW_DECL(name, summary) int sw_cmd_##name(int argc, char **argv);
SW_VERBS(SW_DECL)
#undef SW_DECL

/* `slipway bench compare A B` (cmd_bench_compare.c), handed over by sw_cmd_bench. */
int sw__cmd_bench_compare(int argc, char **argv);

/* The verbs whose options the table-driven layer (opt.h) reads: each defines sw_spec_<verb>,
 * which `slipway help --list` and `slipway help VERB` use. A verb missing here is listed as not
 * converted. */
#define SW_SPECS(X)                                                                                \
    X(apply)                                                                                       \
    X(bench)                                                                                       \
    X(bootlog)                                                                                     \
    X(calibrate)                                                                                   \
    X(check)                                                                                       \
    X(completion)                                                                                  \
    X(deploy)                                                                                      \
    X(diff)                                                                                        \
    X(down)                                                                                        \
    X(export)                                                                                      \
    X(fetch)                                                                                       \
    X(fleet)                                                                                       \
    X(gguf)                                                                                        \
    X(history)                                                                                     \
    X(hosts)                                                                                       \
    X(import)                                                                                      \
    X(install)                                                                                     \
    X(ladder)                                                                                      \
    X(ledger)                                                                                      \
    X(lint)                                                                                        \
    X(logs)                                                                                        \
    X(plan)                                                                                        \
    X(probe)                                                                                       \
    X(readings)                                                                                    \
    X(render)                                                                                      \
    X(report)                                                                                      \
    X(retire)                                                                                      \
    X(rollback)                                                                                    \
    X(serve)                                                                                       \
    X(sim)                                                                                         \
    X(status)                                                                                      \
    X(tune)                                                                                        \
    X(up)                                                                                          \
    X(version)                                                                                     \
    X(watch)

#define SW_SPEC_DECL(name) extern const struct sw_cmd_spec sw_spec_##name;
SW_SPECS(SW_SPEC_DECL)
#undef SW_SPEC_DECL

/* The verbs in SW_VERBS order (verbs.c), a verb by name (NULL: none), and a verb's option table
 * (NULL: not in SW_SPECS). */
extern const struct sw_cmd sw_cli_verbs[];
extern const size_t sw_cli_nverbs;
const struct sw_cmd *sw_cli_verb(const char *name);
const struct sw_cmd_spec *sw_cli_spec(const char *verb);

/* The bash completion script from the tables, appended to b (complete.c); zsh: the same through
 * bashcompinit. 0 or SW_ENOMEM. */
int sw_cli_bash_completion(struct sw_buf *b, bool zsh);
/* slipway.1.scd and one slipway-VERB.1.scd per verb from the tables, written into dir (created
 * when missing; scdoc.c); each path appended to written. */
int sw_cli_scdoc(const char *dir, json_t *written, struct sw_err *e);

/* Ctrl-C and SIGTERM (and SIGHUP with hup) set sw_cli_stop, the flag a long library call polls
 * (deploy's and tune's `stop`), and sw_cli_stop_signal to the signal; sw_cli_release_stop puts
 * the actions before back (util.c). */
extern volatile sig_atomic_t sw_cli_stop;
extern volatile sig_atomic_t sw_cli_stop_signal;
void sw_cli_catch_stop(bool hup);
void sw_cli_release_stop(void);

/* Print "slipway: <formatted error>" on stderr, or the error as JSON on stdout when json is set.
 * Returns the exit code that fits the error (2 for input errors, 1 otherwise). */
int sw_cli_fail(const struct sw_err *e, bool json);
/* A gate result's waiver (gate.h sw_gate_waive), when it has one, as one line indented by
 * `indent` spaces: `waived: "REASON" (until DATE; FILE:LINE)`. Nothing when it has none. */
void sw_cli_print_waiver(FILE *out, int indent, const json_t *gate_result);
/* Print a usage error and return SW_EXIT_USAGE. */
int sw_cli_usage(const char *verb, const char *fmt, ...) SW_PRINTF(2, 3);
/* --api-key-env VAR: *key from the environment variable VAR names (a key never comes from argv);
 * left alone when the option is absent. 0, or the exit code of the error printed (VAR unset). */
int sw_cli_key_env(const struct sw_args *a, const char **key);
/*
 * The one grammar of the verbs that act on a fleet's endpoints (docs/cli.md, "One grammar"):
 *   slipway VERB [ENDPOINT...] [--fleet FILE]
 * The verb's spec declares .fleet = true (opt.h: the parser takes --fleet FILE into a->fleet);
 * the verb then calls sw_cli_fleet once, before anything else reads the fleet:
 *   the fleet file   --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml; when it is not the
 *                    flag, the human view says where it came from on stderr, once per process
 *                    ("fleet: ./fleet.yaml (default)", "fleet: X (from $SLIPWAY_FLEET)");
 *                    a file that is not there is an error naming where the name came from;
 *   the endpoints    a->pos[first..npos): each must be an endpoint of that fleet. A file name
 *                    where an endpoint goes ("'examples/operator.yaml' is a file: did you mean
 *                    --fleet examples/operator.yaml?"), an endpoint name where the file goes
 *                    (--fleet frank-small), and an unknown name ("no endpoint 'frank-smal' in
 *                    FLEET: did you mean frank-small?", else the names it has) are refused.
 * Returns 0 with *out filled, or the exit code of the error it printed (2 for all the above;
 * the fleet's own load error as sw_cli_fail gives it). Under --json errors print as JSON.
 */
struct sw_fleet;
enum sw_cli_fleet_from {
    SW_CLI_FLEET_NONE,    /* SW_CLI_FLEET_OPTIONAL and no fleet anywhere: path is NULL */
    SW_CLI_FLEET_FLAG,    /* --fleet FILE */
    SW_CLI_FLEET_ENV,     /* $SLIPWAY_FLEET */
    SW_CLI_FLEET_DEFAULT, /* ./fleet.yaml */
};
enum {
    SW_CLI_FLEET_LOAD = 1u << 0,     /* keep the loaded fleet in out->fleet (the caller frees) */
    SW_CLI_FLEET_OPTIONAL = 1u << 1, /* no flag, no $SLIPWAY_FLEET and no ./fleet.yaml: no fleet
                                      * (from NONE), not an error */
    SW_CLI_FLEET_QUIET = 1u << 2,    /* no note on where the fleet came from (errors still print) */
};
struct sw_cli_fleet {
    const char *path; /* the fleet file as the verb opens it ("fleet.yaml" for the default) */
    enum sw_cli_fleet_from from;
    struct sw_fleet *fleet;       /* SW_CLI_FLEET_LOAD: the fleet, else NULL */
    const char *const *endpoints; /* the ENDPOINT arguments: a->pos + first */
    int n_endpoints;
};
int sw_cli_fleet(const struct sw_args *a, int first, unsigned flags, struct sw_cli_fleet *out);
/* A verb that needs an ENDPOINT and got none: the usage error "name the ENDPOINT<what>", or,
 * when --fleet names no file but an endpoint, the did-you-mean sw_cli_fleet gives. Returns
 * SW_EXIT_USAGE (printed). */
int sw_cli_need_endpoint(const struct sw_args *a, const char *what);
/* --no-ledger, on every verb that has --ledger: read and write no ledger. Against the options
 * that would use one (uses: NULL-terminated, e.g. "ledger", "record"): 0, or the usage error's
 * exit code when one of them is given with it. A verb whose input IS the ledger (history,
 * calibrate, retire's kept tags...) refuses --no-ledger in its table instead, saying why. */
int sw_cli_no_ledger(const struct sw_args *a, const char *const *uses);

/* render --watch / install --watch: this slipway (/proc/self/exe), the fleet and the ledger
 * (--ledger, NULL when not given; one not there yet by its directory's real path) as absolute
 * paths, each PATH_MAX long. 0, or the exit code of the error printed. */
int sw_cli_watch_paths(const struct sw_args *a, const char *fleet_path, char *exe, char *fleet,
                       char *ledger, const char **ledger_out);

/* The environment variable that names the default fleet file. */
#define SW_CLI_FLEET_ENV_VAR "SLIPWAY_FLEET"

/* True when argv[i] equals any of the given spellings (NULL-terminated list). */
bool sw_cli_is(const char *arg, const char *a, const char *b);
/* Exit code for an error code: input errors (parse, range, inval, noent, unsupported) give 2. */
int sw_cli_exit_for(int code);

#endif
