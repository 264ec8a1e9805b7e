/*
 * deploy (internal): helpers shared by the files of src/deploy.
 */
#ifndef SW_DEPLOY_INTERNAL_H
#define SW_DEPLOY_INTERNAL_H

#include <slipway/deploy.h>

/* Is any process of group pg alive (not a zombie)? Scans /proc: zombies count as dead because
 * an orphan's zombie may never be reaped (a container's PID 1 that does not wait). */
bool sw__proc_group_alive(pid_t pg);
/* Is this exact process (pid + start time) alive and not a zombie? ticks 0 = any. */
bool sw__proc_alive(pid_t pid, uint64_t ticks);

/*
 * The one proof before any signal to a recorded process: send sig to p->pid (through pidfd when
 * >= 0) and its group only when sw_pidfile_check says ALIVE (pid, boot, start time, exe, argv),
 * or, when the leader is dead, to its group while it has members (the leader's pid is reserved
 * until then, so no stranger can hold that group id). Returns whether anything was signalled.
 */
bool sw__signal_recorded(const struct sw_pidfile *p, int pidfd, int sig);
/* Have c's watchdog take the child's identity anew (as /proc shows it now) and remove the pid
 * file at path once it has stopped the child (deploy/supervisor). */
void sw__child_watch_record(struct sw_child *c, const char *path);

/*
 * One HTTP request through net on a private loop (deploy/http.c). *status 0 when nothing answered
 * (refused, reset, timeout). body may be NULL (GET). The response body is kept up to resp->max
 * bytes (resp may be NULL). The transfer is cancelled when *stop becomes set. Returns 0 when an
 * HTTP status was received, else net's code (SW_ENET, SW_ETIMEDOUT, SW_EINTR) with e set.
 */
int sw__http(const char *method, const char *url, const char *unix_socket, const char *body,
             const char *bearer, unsigned timeout_ms, volatile sig_atomic_t *stop, int *status,
             struct sw_buf *resp, struct sw_err *e);

#endif
