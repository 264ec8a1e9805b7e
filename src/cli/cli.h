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
    X(bench, "measure decode and prefill: depth sweep, concurrency, open-loop arrivals")           \
    X(bootlog, "read an engine's boot log: its report and failure; diff predicted vs printed")     \
    X(calibrate, "fit an endpoint's law terms from its recorded boots; predict with intervals")    \
    X(check, "run the gates on a fleet's endpoints before a boot: band, pool, window, known-bad")  \
    X(completion, "bash/zsh completion and scdoc man page sources, from the CLI tables")           \
    X(deploy, "roll an endpoint's shape out on its host, proven, or roll back to the old one")     \
    X(down, "stop an endpoint `up` started (checks the pid still names that process)")             \
    X(export, "write the fleet for the tools around it: harness, llama-swap, prometheus")          \
    X(fetch, "download a payload from the Hub, verified and resumable; or --verify-only one")      \
    X(fleet, "show or check a fleet file (hosts, devices, endpoints, shapes)")                     \
    X(gguf, "inspect a GGUF model file; synthesize tiny chat-capable test models")                 \
    X(history, "an endpoint's tags: shapes, measured figures, last-good, retired, restorable")     \
    X(hosts, "reach the fleet's hosts: systemd, podman, engine binaries or images, payloads")      \
    X(install, "install an endpoint's rendered service on its host; --start and prove it serves")  \
    X(ladder, "the largest max_model_len/ctx/slots/KV that boots and survives, in few boots")      \
    X(ledger, "the record of boots, usage readings, batteries, benches and rules")                 \
    X(lint, "lint a systemd unit: stop timeout, start limits, Restart, paths, digest, secrets")    \
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
    X(version, "print the version")

#define SW_DECL(name, summary) int sw_cmd_##name(int argc, char **argv);
SW_VERBS(SW_DECL)
#undef SW_DECL

/* `slipway bench compare A B` (cmd_bench_compare.c), handed over by sw_cmd_bench. */
int sw__cmd_bench_compare(int argc, char **argv);

/* The verbs whose options the table-driven layer (opt.h) reads: each defines sw_spec_<verb>,
 * which `slipway help --list` and `slipway help VERB` use. A verb missing here is listed as not
 * converted. */
#define SW_SPECS(X)                                                                                \
    X(bench)                                                                                       \
    X(bootlog)                                                                                     \
    X(calibrate)                                                                                   \
    X(check)                                                                                       \
    X(completion)                                                                                  \
    X(deploy)                                                                                      \
    X(down)                                                                                        \
    X(export)                                                                                      \
    X(fetch)                                                                                       \
    X(fleet)                                                                                       \
    X(gguf)                                                                                        \
    X(history)                                                                                     \
    X(hosts)                                                                                       \
    X(install)                                                                                     \
    X(ladder)                                                                                      \
    X(ledger)                                                                                      \
    X(lint)                                                                                        \
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
    X(version)

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
/* Print a usage error and return SW_EXIT_USAGE. */
int sw_cli_usage(const char *verb, const char *fmt, ...) SW_PRINTF(2, 3);
/* --api-key-env VAR: *key from the environment variable VAR names (a key never comes from argv);
 * left alone when the option is absent. 0, or the exit code of the error printed (VAR unset). */
int sw_cli_key_env(const struct sw_args *a, const char **key);
/* True when argv[i] equals any of the given spellings (NULL-terminated list). */
bool sw_cli_is(const char *arg, const char *a, const char *b);
/* Exit code for an error code: input errors (parse, range, inval, noent, unsupported) give 2. */
int sw_cli_exit_for(int code);

#endif
