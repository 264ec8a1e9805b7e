/*
 * host's internals: the transport table and the helpers its operation files share.
 */
#ifndef SLIPWAY_HOST_INTERNAL_H
#define SLIPWAY_HOST_INTERNAL_H

#include <slipway/host.h>

/* A transport: how a command argv becomes the local argv that runs it, and what a finished
 * run's status means. */
struct sw_host_ops {
    const char *name;
    /* The local argv (sw_malloc'd vector of sw_malloc'd strings, NULL-terminated) for argv. */
    int (*build)(const struct sw_host *h, const char *const *argv, int64_t deadline_ms, char ***out,
                 struct sw_err *e);
    /* Classify a run that exited with `code` (r->err holds its stderr). */
    enum sw_host_fail (*classify)(const struct sw_host *h, int code, const struct sw_host_result *r,
                                  char *why, size_t whyn);
};

extern const struct sw_host_ops sw__host_local;
extern const struct sw_host_ops sw__host_ssh;

void sw__host_argv_free(char **v);
/* ssh -O CMD [-L FORWARD] against h's master, run here with a 5 s deadline: its status, its
 * stderr in r (always filled: free it). */
int sw__host_ssh_control(struct sw_host *h, const char *cmd, const char *forward,
                         struct sw_host_result *r);
/* Can `path` be given to ssh as an option value literally (no "${", no control character)?
 * SW_EINVAL naming `what` when not. */
int sw__host_ssh_path_check(const char *what, const char *path, struct sw_err *e);
/* The deadline an operation gets when the caller passed 0. */
#define SW__HOST_DEADLINE_MS 30000

#endif
