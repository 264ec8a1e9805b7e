/*
 * Internal to the ledger's deploy records (deploy.c, deploy_read.c, tag.c): statement and text
 * helpers, the owner of an open attempt, and the in-transaction pieces they share. Not a public
 * header: src/ledger/ only.
 */
#ifndef SLIPWAY_LEDGER_DEPLOY_INTERNAL_H
#define SLIPWAY_LEDGER_DEPLOY_INTERNAL_H

#include "ledger_internal.h"

/* Who runs an open attempt. */
struct sw__dep_owner {
    char host[256];
    char boot[64]; /* /proc/sys/kernel/random/boot_id */
    int64_t pid;
    int64_t start; /* the pid's start time (clock ticks after boot), tells a reused pid */
};

/* Wall clock, unix milliseconds. */
int64_t sw__wall_ms(void);
/* Prepare a one-off statement (finalized by sw__dep_done or the caller). */
int sw__dep_prepare(struct sw_ledger *l, const char *sql, sqlite3_stmt **st, struct sw_err *e);
/* Step a write to its end and finalize it. */
int sw__dep_done(struct sw_ledger *l, sqlite3_stmt *st, const char *what, struct sw_err *e);
/* A lowercase word [a-z0-9_], 1..max bytes. */
bool sw__dep_word(const char *s, size_t max);
/* j serialized for storage with each secret (NULL-ended list, may be NULL) redacted. */
int sw__dep_json(const char *what, const json_t *j, bool want_object, const char *const *secrets,
                 char **out, struct sw_err *e);
/* text copied (UTF-8 repaired, at most max bytes) with each secret redacted; sw_free. */
int sw__dep_text(const char *what, const char *text, size_t max, const char *const *secrets,
                 char **out, struct sw_err *e);
void sw__dep_owner_self(struct sw__dep_owner *o);
/* 1 running, 0 gone, -1 cannot tell (another host); why says which. */
int sw__dep_owner_alive(const struct sw__dep_owner *o, char *why, size_t whyn);
/* In a write transaction: mark stale open attempts (of endpoint, or all) interrupted. */
int sw__dep_recover_tx(struct sw_ledger *l, const char *endpoint, int64_t *marked,
                       struct sw_err *e);
/* The on-open hook of deploy_attempts (tables.c): recover stale attempts, when there are any. */
void sw__dep_on_open(struct sw_ledger *l);
/* Is any attempt open (no write lock taken)? */
int sw__dep_any_open(struct sw_ledger *l, bool *any, struct sw_err *e);
int sw__dep_attempt_row(struct sw_ledger *l, int64_t attempt, int64_t *endpoint_id,
                        int64_t *shape_id, bool *open, struct sw_err *e);
/* The known-bad rule expression of an exact canonical shape (sw_free). */
int sw__dep_shape_expr(const json_t *canonical, char **out, struct sw_err *e);

/* tag.c: a stored JSON column (NULL on failure), a tag row as JSON, whole-component path
 * overlap. The other column readers and put are query.c's (ledger_internal.h). */
json_t *sw__dep_col_json(sqlite3_stmt *st, int i);
int sw__dep_tag_row(sqlite3_stmt *st, bool full, json_t **out);
bool sw__dep_path_overlap(const char *a, const char *b);

#endif
