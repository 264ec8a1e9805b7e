/*
 * Internal to the ledger module: the prepared-statement table, transaction and error helpers,
 * the canonical JSON writer and the "in a transaction already" record functions that the public
 * record calls and the importer share. Not a public header: src/ledger/ only.
 */
#ifndef SLIPWAY_LEDGER_INTERNAL_H
#define SLIPWAY_LEDGER_INTERNAL_H

#include <slipway/ledger.h>

#include <sqlite3.h>

/* Every statement the module runs, all with bound parameters (sql.c holds the text). */
enum sw__lst {
    LST_ENDPOINT_GET,
    LST_ENDPOINT_INS,
    LST_ENDPOINT_NAME,
    LST_SHAPE_GET,
    LST_SHAPE_INS,
    LST_SHAPE_PREFIX,
    LST_BOOT_INS,
    LST_BOOT_EXISTS,
    LST_USAGE_INS,
    LST_BATTERY_INS,
    LST_CHECK_INS,
    LST_BENCH_INS,
    LST_RUNG_INS,
    LST_RULE_INS,
    LST_NOTE_INS,
    LST_EXT_BOOT,
    LST_EXT_USAGE,
    LST_EXT_BATTERY,
    LST_EXT_BENCH,
    LST_EXT_RUNG,
    LST_EXT_RULE,
    LST_EXT_NOTE,
    LST_EXISTS_ENDPOINT,
    LST_EXISTS_SHAPE,
    LST_EXISTS_USAGE,
    LST_EXISTS_BATTERY,
    LST_EXISTS_BENCH,
    LST_EXISTS_RUNG,
    LST_EXISTS_RULE,
    LST_BOOTS_ASC,  /* summary columns, oldest first */
    LST_BOOTS_DESC, /* summary columns, newest first */
    LST_BOOTS_FULL_ASC,
    LST_BOOTS_FULL_DESC,
    LST_BOOT_ONE,
    LST_USAGE_LIST,
    LST_USAGE_OF_BOOT,
    LST_NOTES_OF,
    LST_BAD_SHAPES,
    LST_BAD_FAILURES,
    LST_RULES,
    LST_BATTERY_LIST,
    LST_CHECKS_OF,
    LST_BENCH_LIST,
    LST_BENCH_ONE,
    LST_BENCH_OF_SHAPE,
    LST_RUNG_LIST,
    LST_NOTE_LIST,
    LST_ENDPOINT_LIST,
    LST_SHAPE_LIST,
    LST_COUNTS,
    LST_JSON_VALID,
    LST__N
};

extern const char *const sw__ledger_sql[LST__N];

/* The statement, reset and with its bindings cleared, prepared on first use. */
int sw__ledger_stmt(struct sw_ledger *l, enum sw__lst which, sqlite3_stmt **out, struct sw_err *e);
/* Turn an SQLite result into an SW_E* code + message "ledger PATH: what: sqlite's message". */
int sw__ledger_dberr(struct sw_ledger *l, struct sw_err *e, int rc, const char *what);
/* BEGIN IMMEDIATE (waits on the busy timeout) / COMMIT / ROLLBACK (never fails visibly). */
int sw__ledger_begin(struct sw_ledger *l, struct sw_err *e);
int sw__ledger_commit(struct sw_ledger *l, struct sw_err *e);
void sw__ledger_rollback(struct sw_ledger *l);
/* Run a parameterless statement (pragmas, transaction control). */
int sw__ledger_exec(struct sw_ledger *l, const char *sql, struct sw_err *e);

/* Bind helpers: NULL string / flagged integer become SQL NULL. Text is copied by SQLite. */
int sw__bind_text(sqlite3_stmt *st, int i, const char *s);
int sw__bind_i64(sqlite3_stmt *st, int i, int64_t v, bool is_null);
/* Step a statement expected to finish (INSERT): SQLITE_DONE -> 0. */
int sw__ledger_step_done(struct sw_ledger *l, sqlite3_stmt *st, const char *what, struct sw_err *e);

/* Schema (schema.c). */
int sw__ledger_migrate(struct sw_ledger *l, int target, struct sw_err *e);
int sw__ledger_user_version(struct sw_ledger *l, int *v, struct sw_err *e);

/* Canonical JSON text (canon.c): sorted keys, no whitespace, shortest round-trip reals,
 * minimal escapes. Fails (SW_EINVAL) on invalid UTF-8 and on depth > 64. */
int sw__json_canon_write(struct sw_buf *b, const json_t *j, struct sw_err *e);
/* The same into a new string (sw_free), bounded by max bytes (SW_ERANGE beyond). */
int sw__json_canon_text(const json_t *j, size_t max, char **out, struct sw_err *e);
/* SHA-256 hex of bytes. */
int sw__sha256_hex(const void *p, size_t n, char out[SW_LEDGER_HASH_LEN + 1]);
/* Map a top-level shape key or alias ("max_num_seqs") to its canonical name, NULL if unknown. */
const char *sw__shape_key(const char *name);
/* Normalize a word for a canonical key the way canonicalization does (engine and dtype
 * spellings) into out; false when the key has no such normalization or the word does not fit.
 * Allocates nothing. */
bool sw__shape_norm_word(const char *key, const char *s, char *out, size_t n);
/* Flag name normalization: strip leading '-', lowercase, '-' -> '_'. Into out (n bytes). */
int sw__flag_name(const char *in, char *out, size_t n);

/* Text helpers (text.c). */
/* Copy with invalid UTF-8 sequences and NUL bytes replaced by U+FFFD. *out sw_free. */
int sw__utf8_repair(const char *s, size_t n, char **out, size_t *outn);
bool sw__utf8_valid(const char *s, size_t n);
/* The excerpt kept of a log: whole when it fits, else head + marker + tail, <= max bytes. */
int sw__log_excerpt(const char *s, size_t n, size_t max, char **out);
/* "2026-10-01T13:27:17Z", "2026-10-01" or an integer -> unix seconds. */
int sw__parse_time(const json_t *j, int64_t *out, struct sw_err *e);
/* Check a short identifier-like field: 1..max bytes, printable UTF-8, no control chars. */
int sw__check_label(const char *what, const char *s, size_t max, bool allow_space,
                    struct sw_err *e);

/* The in-transaction bodies of the public record calls (record.c). */
int sw__ledger_endpoint_tx(struct sw_ledger *l, const char *name, bool create, int64_t *id,
                           struct sw_err *e);
int sw__ledger_shape_tx(struct sw_ledger *l, const json_t *shape, int64_t *id,
                        char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e);
int sw__ledger_boot_tx(struct sw_ledger *l, const struct sw_ledger_boot *b, int64_t *id,
                       struct sw_err *e);
int sw__ledger_usage_tx(struct sw_ledger *l, const struct sw_ledger_usage *u, int64_t *id,
                        struct sw_err *e);
int sw__ledger_battery_tx(struct sw_ledger *l, const char *endpoint, int64_t boot_id,
                          const char *url, int64_t started_at, const json_t *doc,
                          const char *ext_id, int64_t *id, struct sw_err *e);
int sw__ledger_bench_tx(struct sw_ledger *l, const char *endpoint, int64_t boot_id,
                        int64_t started_at, const json_t *params, const json_t *results,
                        const char *chart_path, const char *source_line, const char *ext_id,
                        int64_t *id, struct sw_err *e);
int sw__ledger_rung_tx(struct sw_ledger *l, const struct sw_ledger_rung *r, int64_t *id,
                       struct sw_err *e);
int sw__ledger_rule_tx(struct sw_ledger *l, const struct sw_ledger_rule_rec *r, int64_t *id,
                       struct sw_err *e);
int sw__ledger_note_tx(struct sw_ledger *l, const char *kind, int64_t subject_id, const char *text,
                       const char *author, const char *ext_id, int64_t *id, struct sw_err *e);
/* Find a row by ext_id: *id 0 when absent. */
int sw__ledger_ext_find(struct sw_ledger *l, enum sw__lst which, const char *ext_id, int64_t *id,
                        struct sw_err *e);

/* Serialize a JSON value for storage (canonical text, bounded); NULL -> *out NULL. */
int sw__ledger_json_text(const char *what, const json_t *j, bool want_object, size_t max,
                         char **out, struct sw_err *e);

#endif
