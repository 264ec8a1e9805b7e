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
 *
 * Also what the ledger's unit tests share: a ledger in a fresh directory (swl_fx_open), the seed
 * imported (swl_import_seed), test JSON (swl_json) and the schema comparison of the migration
 * tests (swl_same_schema).
 */
#ifndef SWLEDGER_H
#define SWLEDGER_H

#include <slipway/core.h>
#include <slipway/ledger.h>

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

/* A test's ledger: its fresh temporary directory, its path there, the open ledger. */
struct swl_fx {
    char *dir;
    char path[4096];
    struct sw_ledger l;
};
/* Open a new ledger at DIR/rel in a fresh temporary directory (rel may name directories: open
 * makes them); fails the test on error. swl_fx_close closes it and removes the directory. */
struct swl_fx *swl_fx_open(const char *rel);
void swl_fx_close(struct swl_fx *f);
/* tests/data/ledger/seed-boots.json (the seed fleet's recorded boots) imported into l under the
 * source name `source`; fails the test on error. Returns the rows added. */
int64_t swl_import_seed(struct sw_ledger *l, const char *source);
/* The seed as a ladder knew it before the night ladder: tests/data/ledger/seed-boots.json without
 * that night's four boots (ladder-262144, ladder-245760, ladder-237568, bf16-3x241664) and with
 * no ladder rungs. json_decref it. */
json_t *swl_seed_before_night(void);
/* `slipway ledger import tests/data/ledger/seed-boots.json --ledger path` (the CLI, as an operator
 * does it); fails the test unless it exits 0. */
void swl_cli_import_seed(const char *path);
/* The test's JSON text parsed (any value); fails the test naming a bad one. json_decref it. */
json_t *swl_json(const char *text);

/*
 * The ledgers at paths a and b have the same schema (every table, index and trigger: type, name
 * and SQL, in order of type and name); fails the test naming the first difference. Returns the
 * number of schema rows compared. Include after <cmocka.h>.
 */
int swl_same_schema(const char *a, const char *b);

/* The newest deploy attempt of endpoint in the ledger at path (read-only), as
 * sw_ledger_deploy_get gives it (json_decref), its step named step's detail in *detail (a
 * borrowed reference; NULL when it has none). Fails the test when the ledger cannot be read or
 * holds no attempt of endpoint. */
json_t *swl_last_attempt(const char *path, const char *endpoint, const char *step,
                         const json_t **detail);

#endif
