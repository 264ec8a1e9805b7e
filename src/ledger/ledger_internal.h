/*
 * Internal to the ledger module: the prepared-statement table, the tables' descriptors,
 * transaction and error helpers, the canonical JSON writer and the "in a transaction already"
 * record functions that the public record calls and the importer share. Not a public header:
 * src/ledger/ only.
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
    LST_BOOTS_EXPORT,
    LST_BOOT_ONE,
    LST_USAGE_LIST,
    LST_USAGE_EXPORT,
    LST_USAGE_OF_BOOT,
    LST_NOTES_OF_BOOT,
    LST_BAD_SHAPES,
    LST_BAD_FAILURES,
    LST_RULES,
    LST_RULES_EXPORT,
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
    LST_MOVES,
    LST_UNIT_OBS,
    LST_WATCH,
    LST__N
};

extern const char *const sw__ledger_sql[LST__N];

/* ---------------------------------------------------------------------------------------------
 * The tables, described once (tables.c). Each table is a list of fields in the order their keys
 * stand in JSON: its SQL columns (type from the kind, constraints, place in CREATE TABLE) and the
 * fields the documents compute. The CREATE statements, the SELECT lists and the JSON of the rows
 * (query.c), and the keys and records of the import (document.c) are derived from them.
 */

/* How a value moves between SQL and JSON. A column's SQL type follows from it. */
enum sw__kind {
    SW__ID,       /* INTEGER PRIMARY KEY: the row's id */
    SW__INT,      /* INTEGER: an integer, or null */
    SW__REAL,     /* REAL: a number, or null */
    SW__NUM,      /* computed: an integer or a real as SQLite typed it, else null */
    SW__BOOL,     /* computed: an SQL truth value as true or false */
    SW__TEXT,     /* TEXT: a string (what is not UTF-8 is repaired), or null */
    SW__TIME,     /* INTEGER unix seconds: an ISO-8601 UTC string, or null */
    SW__MS,       /* INTEGER unix milliseconds */
    SW__JSON,     /* TEXT holding a JSON document: the document itself */
    SW__ENDPOINT, /* INTEGER endpoints.id: the endpoint's name */
    SW__SHAPE,    /* INTEGER shapes.id: the canonical shape (export), {id, hash} (listing),
                     {id, hash, canonical} (in full); null when there is none */
    SW__SUMMARY,  /* computed from the shape: its one-line summary */
    SW__BOOT,     /* INTEGER boots.id: the boot's id; in a document, a boot's ref */
    SW__REF,      /* INTEGER: another row's id */
    SW__ROWS,     /* computed: the rows of another table under this one (an array) */
};

/* The documents a field is in. */
enum {
    SW__V_EXPORT = 1, /* sw_ledger_export's rows, which the import reads back */
    SW__V_IMPORT = 2, /* a key the import accepts though the export does not write it */
    SW__V_LIST = 4,   /* a listing: boot summaries, usage readings, rules */
    SW__V_FULL = 8,   /* one row in full: a boot, a bench run */
    SW__V_OF = 16,    /* under another row: a boot's notes */
};

struct sw__col {
    const char *name; /* the SQL column; NULL: a field that is no column */
    enum sw__kind kind;
    int col;           /* its place in CREATE TABLE, 1..; 0 for a field that is no column */
    const char *cons;  /* constraints after the type as SQLite keeps them; "" or NULL: none */
    int alter;         /* the schema version whose ALTER TABLE ADD COLUMN added it; 0: created */
    const char *key;   /* its JSON key; NULL: the column's name */
    unsigned views;    /* the documents it is in (SW__V_*); 0: only the schema's */
    const char *expr;  /* a computed field's SQL, over t (the row), e (its endpoint) and s (its
                          shape) */
    enum sw__lst rows; /* SW__ROWS: the statement that lists them, ?1 this row's id */
    size_t rec;        /* the import: offset + 1 of the record field it lands in; 0: none */
};

/* An index; one added to a table that existed already carries the version that added it. */
struct sw__index {
    const char *sql; /* its CREATE INDEX statement */
    int alter;       /* 0: made with its table */
};

struct sw__table {
    const char *name;
    int version;                /* the schema version that created it (as it is now) */
    const char *created_as;     /* the name in its CREATE TABLE as SQLite keeps it; NULL: name */
    const struct sw__col *cols; /* in the order of the JSON keys */
    size_t ncols;
    const char *const *checks;            /* table constraints in order, NULL-ended; NULL: none */
    const struct sw__index *indexes;      /* ended by a NULL sql; NULL: none */
    void (*on_open)(struct sw_ledger *l); /* its owner's part of a read-write open (a failure
                                             is logged, never fatal) */
};

extern const struct sw__table sw__t_endpoints, sw__t_shapes, sw__t_boots, sw__t_usage,
    sw__t_battery_runs, sw__t_battery_checks, sw__t_bench_runs, sw__t_ladder_rungs, sw__t_rules,
    sw__t_notes, sw__t_tags, sw__t_deploy_attempts, sw__t_deploy_steps, sw__t_payload_moves,
    sw__t_tune_runs, sw__t_tune_probes, sw__t_unit_observations, sw__t_watch_events;
/* Every table of the current schema, NULL-ended. */
extern const struct sw__table *const sw__ledger_tables[];

/* The field's JSON key. */
const char *sw__col_key(const struct sw__col *c);
/* Its CREATE TABLE statement as sqlite_schema keeps it, into out (n bytes); SW_ERANGE when it
 * does not fit. */
int sw__table_create(const struct sw__table *t, char *out, size_t n);
/* "SELECT <the fields of view> FROM <table> t [JOIN endpoints e] [JOIN shapes s]" into out. */
int sw__table_select(const struct sw__table *t, unsigned view, char *out, size_t n);
/* Run every table's on-open hook (a read-write open, after the migrations). */
void sw__ledger_tables_on_open(struct sw_ledger *l);

/* A derived statement: the SELECT of a table's view, then its tail (WHERE, ORDER BY) over t. */
struct sw__rows {
    const struct sw__table *table;
    unsigned view;
    const char *tail;
};
/* Indexed by enum sw__lst; .table NULL for the statements sw__ledger_sql holds whole (sql.c). */
extern const struct sw__rows sw__ledger_rows[LST__N];
/* The text of a statement: sw__ledger_sql's, or a derived one written into buf (n bytes); NULL
 * when it does not fit. */
const char *sw__ledger_sql_text(enum sw__lst which, char *buf, size_t n);

/* Columns as JSON (query.c): a NULL column is JSON null, any other result NULL is out of memory.
 * Text that is not UTF-8 is repaired; a time is unix seconds * div as ISO-8601. */
json_t *sw__col_str(sqlite3_stmt *st, int i);
json_t *sw__col_int(sqlite3_stmt *st, int i);
json_t *sw__col_num(sqlite3_stmt *st, int i);
json_t *sw__col_time(sqlite3_stmt *st, int i, int64_t div);
/* A stored JSON document: SW_ENOMEM, or SW_EDB when the text does not parse (a damaged file). */
int sw__col_json(struct sw_ledger *l, sqlite3_stmt *st, int i, json_t **out, struct sw_err *e);
/* Set o[k] = v (consumed either way) unless *rc is set; a NULL v or a failure sets SW_ENOMEM. */
int sw__put(json_t *o, const char *k, json_t *v, int *rc);
/* Step a derived statement (bound) to its end: its rows as a new array, the statement reset. */
int sw__ledger_collect(struct sw_ledger *l, enum sw__lst which, sqlite3_stmt *st, json_t **out,
                       struct sw_err *e);
/* The rows of a derived statement whose ?1 is an optional endpoint name, as a new array. */
int sw__ledger_list(struct sw_ledger *l, enum sw__lst which, const char *endpoint, json_t **out,
                    struct sw_err *e);

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
/* Version `version` of the schema into an empty database: the current one from the descriptors,
 * or (from_migrations, or an older version) by running migrations 1..version. An SQLite result
 * code; *msg (may be NULL) as sqlite3_exec gives it. */
int sw__ledger_build_schema(sqlite3 *db, int version, bool from_migrations, char **msg);

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
/* Check free text: at most max bytes of valid UTF-8, no control characters but tab, newline and
 * CR; empty is an error only when required. */
int sw__check_text(const char *what, const char *s, size_t max, bool required, struct sw_err *e);

/* The in-transaction bodies of the public record calls (record.c). */
int sw__ledger_endpoint_tx(struct sw_ledger *l, const char *name, bool create, int64_t *id,
                           struct sw_err *e);
int sw__ledger_shape_tx(struct sw_ledger *l, const json_t *shape, int64_t *id,
                        char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e);
int sw__ledger_boot_tx(struct sw_ledger *l, const struct sw_ledger_boot *b, int64_t *id,
                       struct sw_err *e);
int sw__ledger_usage_tx(struct sw_ledger *l, const struct sw_ledger_usage *u, int64_t *id,
                        struct sw_err *e);
/* A battery run as sw_ledger_record_battery takes it (doc: {"checks": [...]}), with an ext_id. */
struct sw__battery_rec {
    const char *endpoint;
    int64_t boot_id;
    const char *url;
    int64_t started_at;
    const json_t *doc;
    const char *ext_id;
};
int sw__ledger_battery_tx(struct sw_ledger *l, const struct sw__battery_rec *r, int64_t *id,
                          struct sw_err *e);
/* A bench run as sw_ledger_record_bench takes it, with an ext_id. */
struct sw__bench_rec {
    const char *endpoint;
    int64_t boot_id;
    int64_t started_at;
    const json_t *params;
    const json_t *results;
    const char *chart_path;
    const char *source_line;
    const char *ext_id;
};
int sw__ledger_bench_tx(struct sw_ledger *l, const struct sw__bench_rec *r, int64_t *id,
                        struct sw_err *e);
int sw__ledger_rung_tx(struct sw_ledger *l, const struct sw_ledger_rung *r, int64_t *id,
                       struct sw_err *e);
int sw__ledger_rule_tx(struct sw_ledger *l, const struct sw_ledger_rule_rec *r, int64_t *id,
                       struct sw_err *e);
/* A note as sw_ledger_record_note takes it, with an ext_id. */
struct sw__note_rec {
    const char *kind;
    int64_t subject_id;
    const char *text;
    const char *author;
    const char *ext_id;
};
int sw__ledger_note_tx(struct sw_ledger *l, const struct sw__note_rec *n, int64_t *id,
                       struct sw_err *e);
/* Find a row by ext_id: *id 0 when absent. */
int sw__ledger_ext_find(struct sw_ledger *l, enum sw__lst which, const char *ext_id, int64_t *id,
                        struct sw_err *e);

/* Serialize a JSON value for storage (canonical text, bounded); NULL -> *out NULL. */
int sw__ledger_json_text(const char *what, const json_t *j, bool want_object, size_t max,
                         char **out, struct sw_err *e);

#endif
