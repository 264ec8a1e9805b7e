/*
 * swledger: a synthetic load on the ledger for the crash and concurrency tests. It records, in a
 * loop, a boot (with its note; every fifth one failed), a probe battery of 5 checks under it and
 * a usage reading, each its own transaction through the public record calls, and writes
 * "boot N", "battery N", "usage N" on a file descriptor right after each commit returned. A test
 * runs it in a process of its own and kills that process with SIGKILL wherever it likes: every
 * id written is committed. (It was `slipway ledger _record-loop`, a hidden verb of the shipped
 * binary; a load generator belongs to the tests.)
 *
 * What it deliberately does not do: check anything (the test reads the ledger afterwards), or
 * run in the test's own process (a kill must not take the test with it).
 */
#ifndef SWLEDGER_H
#define SWLEDGER_H

#include <slipway/core.h>

#include <stdint.h>
#include <sys/types.h>

/*
 * Record in a loop into the ledger at `path` (created when missing) for `endpoint`: `count`
 * rounds (0: 100, or unbounded when `seconds` is given), stopping after `seconds` (0: no limit).
 * Each id goes to `fd` as one write(2) of "boot N\n", "battery N\n" or "usage N\n".
 */
int swl_record_loop(const char *path, const char *endpoint, int64_t count, int64_t seconds, int fd,
                    struct sw_err *e);

/*
 * Fork a child that runs swl_record_loop with its ids on a pipe and its stderr on /dev/null (an
 * error exits 1 with the message there; success exits 0). *out receives the pipe's read end
 * (the caller closes it); returns the child's pid, -1 when fork or pipe failed.
 */
pid_t swl_spawn_record_loop(const char *path, const char *endpoint, int64_t seconds, int *out);

#endif
