/*
 * The ledger's tables, described once. One concept: each table of the current schema as a list
 * of its fields (the SQL columns, with their type, constraints and place in CREATE TABLE, and the
 * fields the JSON documents compute from them), in the order their keys stand in JSON; what
 * every other part derives from them:
 *   - the CREATE statements of a fresh ledger and of the reference schema every open compares
 *     a file with (sw__table_create; schema.c),
 *   - the SELECT column list of every row the queries turn into JSON (sw__table_select; sql.c),
 *     and the JSON of each row (query.c),
 *   - the keys the import accepts and where each value lands in its record (document.c),
 *   - what a read-write open runs for the table's owner (on_open; db.c runs them knowing none:
 *     deploy_attempts names the deploy journal's recovery of attempts whose process died).
 *
 * A field's kind says how its value moves between SQL and JSON; the SQL type follows from it.
 * Columns added by ALTER TABLE ADD COLUMN (`alter`: the version that added them) and a table
 * rebuilt under another name (`created_as`) are described as SQLite keeps them, so a fresh
 * ledger's schema is the one migrating an old file gives, byte for byte (test_ledger_tables.c).
 *
 * What it deliberately does not do: hold the migrations (schema.c keeps the frozen SQL of every
 * version), validate values (record.c), or run any SQL.
 */
#include "deploy_internal.h"

#include <stdio.h>
#include <string.h>

/* The documents a field is in. */
#define X   SW__V_EXPORT
#define IMP SW__V_IMPORT
#define L   SW__V_LIST
#define F   SW__V_FULL
#define OF  SW__V_OF
/* Where an imported value lands in its record. */
#define REC(type, field) (offsetof(type, field) + 1)

#define ENDPOINT_FK "NOT NULL REFERENCES endpoints(id)"

static const struct sw__col endpoints[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = X},
    {.name = "name",
     .kind = SW__TEXT,
     .col = 2,
     .cons = "NOT NULL UNIQUE CHECK(length(name) BETWEEN 1 AND 128)",
     .views = X},
    {.name = "created_at", .kind = SW__TIME, .col = 3, .cons = "NOT NULL", .views = X},
};

static const struct sw__col shapes[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = X},
    {.name = "hash",
     .kind = SW__TEXT,
     .col = 2,
     .cons = "NOT NULL UNIQUE CHECK(length(hash) = 64)",
     .views = X},
    {.name = "canon_version", .kind = SW__INT, .col = 3, .cons = "NOT NULL", .views = X},
    {.name = "canonical",
     .kind = SW__JSON,
     .col = 6,
     .cons = "NOT NULL CHECK(json_valid(canonical))",
     .views = X},
    {.name = "created_at", .kind = SW__TIME, .col = 5, .cons = "NOT NULL", .views = X},
    {.name = "engine", .kind = SW__TEXT, .col = 4, .cons = "NOT NULL"},
    /* the import reads the shape from "canonical" or "shape" */
    {.key = "shape", .kind = SW__JSON, .views = IMP},
};

#define BOOT(f) REC(struct sw_ledger_boot, f)
static const struct sw__col boots[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = L | F | X},
    {.name = "endpoint_id",
     .kind = SW__ENDPOINT,
     .col = 2,
     .cons = ENDPOINT_FK,
     .key = "endpoint",
     .views = L | F | X,
     .rec = BOOT(endpoint)},
    {.name = "shape_id",
     .kind = SW__SHAPE,
     .col = 3,
     .cons = "REFERENCES shapes(id)",
     .key = "shape",
     .views = L | F | X,
     .rec = BOOT(shape)},
    {.key = "shape_hash", .kind = SW__TEXT, .expr = "s.hash", .views = X},
    {.key = "shape_summary", .kind = SW__SUMMARY, .expr = "s.canonical", .views = L | F | IMP},
    {.name = "engine",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL",
     .views = L | F | X,
     .rec = BOOT(engine)},
    {.name = "engine_version",
     .kind = SW__TEXT,
     .col = 5,
     .views = L | F | X,
     .rec = BOOT(engine_version)},
    {.name = "started_at", .kind = SW__TIME, .col = 6, .views = L | F | X, .rec = BOOT(started_at)},
    {.name = "ended_at", .kind = SW__TIME, .col = 7, .views = L | F | X, .rec = BOOT(ended_at)},
    {.name = "duration_ms",
     .kind = SW__INT,
     .col = 8,
     .cons = "CHECK(duration_ms IS NULL OR duration_ms >= 0)",
     .views = L | F | X,
     .rec = BOOT(duration_ms)},
    {.name = "outcome",
     .kind = SW__TEXT,
     .col = 9,
     .cons = "NOT NULL CHECK(outcome IN ('ok', 'failed'))",
     .views = L | F | X},
    {.name = "failure_class", .kind = SW__TEXT, .col = 10, .views = L | F | X},
    {.name = "failure_phase", .kind = SW__TEXT, .col = 11, .views = L | F | X},
    {.key = "kv_cache_tokens",
     .kind = SW__NUM,
     .expr = "json_extract(t.report, '$.kv_cache_tokens')",
     .views = L},
    {.key = "max_concurrency",
     .kind = SW__NUM,
     .expr = "json_extract(t.report, '$.max_concurrency')",
     .views = L},
    {.name = "source", .kind = SW__TEXT, .col = 13, .views = L | F | X, .rec = BOOT(source)},
    {.name = "predicted",
     .kind = SW__JSON,
     .col = 16,
     .cons = "CHECK(predicted IS NULL OR json_valid(predicted))",
     .views = F | X,
     .rec = BOOT(predicted)},
    {.name = "report",
     .kind = SW__JSON,
     .col = 17,
     .cons = "CHECK(report IS NULL OR json_valid(report))",
     .views = F | X,
     .rec = BOOT(report)},
    {.name = "failure",
     .kind = SW__JSON,
     .col = 18,
     .cons = "CHECK(failure IS NULL OR json_valid(failure))",
     .views = F | X,
     .rec = BOOT(failure)},
    {.name = "log_path", .kind = SW__TEXT, .col = 12, .views = F | X, .rec = BOOT(log_path)},
    {.name = "log_excerpt",
     .kind = SW__TEXT,
     .col = 19,
     .cons = "CHECK(log_excerpt IS NULL OR length(CAST(log_excerpt AS BLOB)) <= 65536)",
     .views = F | X,
     .rec = BOOT(log_excerpt)},
    {.name = "source_line", .kind = SW__TEXT, .col = 14, .views = F | X, .rec = BOOT(source_line)},
    {.name = "recorded_at", .kind = SW__TIME, .col = 15, .cons = "NOT NULL", .views = F | X},
    {.name = "ext_id",
     .kind = SW__TEXT,
     .col = 20,
     .alter = 2,
     .views = F | X,
     .rec = BOOT(ext_id)},
    {.key = "usage", .kind = SW__ROWS, .rows = LST_USAGE_OF_BOOT, .views = F},
    {.key = "notes", .kind = SW__ROWS, .rows = LST_NOTES_OF_BOOT, .views = F},
    /* the import attaches a note to the boot */
    {.key = "note", .kind = SW__TEXT, .views = IMP, .rec = BOOT(note)},
};
static const char *const boots_checks[] = {
    "CHECK((outcome = 'failed') = (failure IS NOT NULL))",
    "CHECK((failure IS NULL) = (failure_class IS NULL))",
    NULL,
};
static const struct sw__index boots_indexes[] = {
    {.sql = "CREATE INDEX boots_endpoint ON boots(endpoint_id, id)"},
    {.sql = "CREATE INDEX boots_shape ON boots(shape_id)"},
    {.sql = "CREATE UNIQUE INDEX boots_ext_id ON boots(ext_id) WHERE ext_id IS NOT NULL",
     .alter = 2},
    {0},
};

#define USAGE(f) REC(struct sw_ledger_usage, f)
static const struct sw__col usage[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = L | X},
    {.name = "endpoint_id",
     .kind = SW__ENDPOINT,
     .col = 2,
     .cons = ENDPOINT_FK,
     .key = "endpoint",
     .views = L | X,
     .rec = USAGE(endpoint)},
    {.name = "boot_id",
     .kind = SW__BOOT,
     .col = 3,
     .cons = "REFERENCES boots(id)",
     .key = "boot",
     .views = L | X,
     .rec = USAGE(boot_id)},
    {.name = "shape_id",
     .kind = SW__SHAPE,
     .col = 4,
     .cons = "REFERENCES shapes(id)",
     .key = "shape",
     .views = L | X,
     .rec = USAGE(shape)},
    {.name = "device",
     .kind = SW__TEXT,
     .col = 5,
     .cons = "NOT NULL CHECK(length(device) >= 1)",
     .views = L | X,
     .rec = USAGE(device)},
    /* the import reads the figures as integers (*_mib) or with a unit (used, total, free) */
    {.name = "used_mib",
     .kind = SW__INT,
     .col = 6,
     .cons = "NOT NULL CHECK(used_mib >= 0)",
     .views = L | X},
    {.name = "total_mib",
     .kind = SW__INT,
     .col = 7,
     .cons = "NOT NULL CHECK(total_mib > 0 AND used_mib <= total_mib)",
     .views = L | X},
    {.name = "free_mib",
     .kind = SW__INT,
     .col = 8,
     .cons = "CHECK(free_mib IS NULL OR (free_mib >= 0 AND\n"
             "                                              free_mib + used_mib <= total_mib))",
     .views = X},
    /* a listing gives the tool's free figure when it was read, else total - used */
    {.key = "free_mib",
     .kind = SW__INT,
     .expr = "coalesce(t.free_mib, t.total_mib - t.used_mib)",
     .views = L},
    {.key = "free_read", .kind = SW__BOOL, .expr = "t.free_mib IS NOT NULL", .views = L | IMP},
    {.name = "source",
     .kind = SW__TEXT,
     .col = 9,
     .cons = "NOT NULL",
     .views = L | X,
     .rec = USAGE(source)},
    {.name = "taken_at", .kind = SW__TIME, .col = 10, .views = L | X, .rec = USAGE(taken_at)},
    {.name = "note", .kind = SW__TEXT, .col = 11, .views = L | X, .rec = USAGE(note)},
    {.name = "source_line", .kind = SW__TEXT, .col = 12, .views = L | X, .rec = USAGE(source_line)},
    {.name = "ext_id", .kind = SW__TEXT, .col = 14, .alter = 2, .views = X, .rec = USAGE(ext_id)},
    {.name = "recorded_at", .kind = SW__TIME, .col = 13, .cons = "NOT NULL", .views = IMP},
    {.key = "used", .kind = SW__TEXT, .views = IMP},
    {.key = "total", .kind = SW__TEXT, .views = IMP},
    {.key = "free", .kind = SW__TEXT, .views = IMP},
};
static const struct sw__index usage_indexes[] = {
    {.sql = "CREATE INDEX usage_endpoint ON usage(endpoint_id, id)"},
    {.sql = "CREATE INDEX usage_boot ON usage(boot_id)"},
    {.sql = "CREATE INDEX usage_shape ON usage(shape_id)"},
    {.sql = "CREATE UNIQUE INDEX usage_ext_id ON usage(ext_id) WHERE ext_id IS NOT NULL",
     .alter = 2},
    {0},
};

#define RUN(f) REC(struct sw__battery_rec, f)
static const struct sw__col battery_runs[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = X},
    {.name = "endpoint_id",
     .kind = SW__ENDPOINT,
     .col = 2,
     .cons = ENDPOINT_FK,
     .key = "endpoint",
     .views = X,
     .rec = RUN(endpoint)},
    {.name = "boot_id",
     .kind = SW__BOOT,
     .col = 3,
     .cons = "REFERENCES boots(id)",
     .key = "boot",
     .views = X,
     .rec = RUN(boot_id)},
    {.name = "url", .kind = SW__TEXT, .col = 4, .views = X, .rec = RUN(url)},
    {.name = "started_at", .kind = SW__TIME, .col = 5, .views = X, .rec = RUN(started_at)},
    /* the import counts these again from the checks */
    {.name = "ms", .kind = SW__INT, .col = 6, .views = X},
    {.name = "passed", .kind = SW__INT, .col = 7, .cons = "NOT NULL", .views = X},
    {.name = "failed", .kind = SW__INT, .col = 8, .cons = "NOT NULL", .views = X},
    {.name = "skipped", .kind = SW__INT, .col = 9, .cons = "NOT NULL", .views = X},
    {.name = "ext_id",
     .kind = SW__TEXT,
     .col = 10,
     .cons = "UNIQUE",
     .views = X,
     .rec = RUN(ext_id)},
    {.name = "recorded_at", .kind = SW__TIME, .col = 11, .cons = "NOT NULL", .views = X},
    {.key = "checks", .kind = SW__ROWS, .rows = LST_CHECKS_OF, .views = X},
};
static const struct sw__index battery_runs_indexes[] = {
    {.sql = "CREATE INDEX battery_runs_endpoint ON battery_runs(endpoint_id, id)"},
    {0},
};

static const struct sw__col battery_checks[] = {
    {.name = "name", .kind = SW__TEXT, .col = 4, .cons = "NOT NULL", .views = X},
    {.name = "status",
     .kind = SW__TEXT,
     .col = 5,
     .cons = "NOT NULL CHECK(status IN ('pass', 'fail', 'skip'))",
     .views = X},
    {.name = "evidence",
     .kind = SW__JSON,
     .col = 8,
     .cons = "CHECK(evidence IS NULL OR json_valid(evidence))",
     .views = X},
    {.name = "reason", .kind = SW__TEXT, .col = 6, .views = X},
    {.name = "ms", .kind = SW__INT, .col = 7, .views = X},
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "run_id", .kind = SW__REF, .col = 2, .cons = "NOT NULL REFERENCES battery_runs(id)"},
    {.name = "seq", .kind = SW__INT, .col = 3, .cons = "NOT NULL"},
};
static const char *const battery_checks_checks[] = {"UNIQUE(run_id, seq)", NULL};

#define BENCH(f) REC(struct sw__bench_rec, f)
static const struct sw__col bench_runs[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = F | X},
    {.name = "endpoint_id",
     .kind = SW__ENDPOINT,
     .col = 2,
     .cons = ENDPOINT_FK,
     .key = "endpoint",
     .views = F | X,
     .rec = BENCH(endpoint)},
    {.name = "boot_id",
     .kind = SW__BOOT,
     .col = 3,
     .cons = "REFERENCES boots(id)",
     .key = "boot",
     .views = F | X,
     .rec = BENCH(boot_id)},
    {.name = "started_at", .kind = SW__TIME, .col = 4, .views = F | X, .rec = BENCH(started_at)},
    {.name = "params",
     .kind = SW__JSON,
     .col = 9,
     .cons = "NOT NULL CHECK(json_valid(params))",
     .views = F | X,
     .rec = BENCH(params)},
    {.name = "results",
     .kind = SW__JSON,
     .col = 10,
     .cons = "NOT NULL CHECK(json_valid(results))",
     .views = F | X,
     .rec = BENCH(results)},
    {.name = "chart_path", .kind = SW__TEXT, .col = 5, .views = F | X, .rec = BENCH(chart_path)},
    {.name = "source_line", .kind = SW__TEXT, .col = 6, .views = F | X, .rec = BENCH(source_line)},
    {.name = "ext_id",
     .kind = SW__TEXT,
     .col = 7,
     .cons = "UNIQUE",
     .views = F | X,
     .rec = BENCH(ext_id)},
    {.name = "recorded_at", .kind = SW__TIME, .col = 8, .cons = "NOT NULL", .views = F | X},
    /* the planned shape's summary (not exported: the import derives it from params.shape) */
    {.name = "shape", .kind = SW__TEXT, .col = 11, .alter = 4, .views = F},
};
static const struct sw__index bench_runs_indexes[] = {
    {.sql = "CREATE INDEX bench_runs_endpoint ON bench_runs(endpoint_id, id)"},
    {0},
};

#define RUNG(f) REC(struct sw_ledger_rung, f)
static const struct sw__col ladder_rungs[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = X},
    {.name = "endpoint_id",
     .kind = SW__ENDPOINT,
     .col = 2,
     .cons = ENDPOINT_FK,
     .key = "endpoint",
     .views = X,
     .rec = RUNG(endpoint)},
    {.name = "ladder",
     .kind = SW__TEXT,
     .col = 3,
     .cons = "NOT NULL CHECK(length(ladder) >= 1)",
     .views = X,
     .rec = RUNG(ladder)},
    {.name = "rung",
     .kind = SW__INT,
     .col = 4,
     .cons = "NOT NULL CHECK(rung >= 1)",
     .views = X,
     .rec = RUNG(rung)},
    {.key = "shape_hash", .kind = SW__TEXT, .expr = "s.hash", .views = X},
    {.name = "shape_id",
     .kind = SW__SHAPE,
     .col = 5,
     .cons = "NOT NULL REFERENCES shapes(id)",
     .key = "shape",
     .views = X,
     .rec = RUNG(shape)},
    {.name = "boot_id",
     .kind = SW__BOOT,
     .col = 6,
     .cons = "REFERENCES boots(id)",
     .key = "boot",
     .views = X,
     .rec = RUNG(boot_id)},
    {.name = "outcome",
     .kind = SW__TEXT,
     .col = 7,
     .cons = "NOT NULL CHECK(outcome IN ('pass', 'fail', 'refused'))",
     .views = X,
     .rec = RUNG(outcome)},
    {.name = "note", .kind = SW__TEXT, .col = 8, .views = X, .rec = RUNG(note)},
    {.name = "source_line", .kind = SW__TEXT, .col = 9, .views = X, .rec = RUNG(source_line)},
    {.name = "ext_id",
     .kind = SW__TEXT,
     .col = 10,
     .cons = "UNIQUE",
     .views = X,
     .rec = RUNG(ext_id)},
    {.name = "recorded_at", .kind = SW__TIME, .col = 11, .cons = "NOT NULL", .views = X},
    {.name = "knob", .kind = SW__TEXT, .col = 12, .alter = 6, .views = X, .rec = RUNG(knob)},
    /* the import takes a value only when it is an integer, evidence only when an object */
    {.name = "value", .kind = SW__INT, .col = 13, .alter = 6, .views = X},
    {.name = "class", .kind = SW__TEXT, .col = 14, .alter = 6, .views = X, .rec = RUNG(klass)},
    {.name = "evidence",
     .kind = SW__JSON,
     .col = 15,
     .alter = 6,
     .cons = "\n  CHECK(evidence IS NULL OR json_valid(evidence))",
     .views = X},
};
static const char *const ladder_rungs_checks[] = {"UNIQUE(endpoint_id, ladder, rung)", NULL};
static const struct sw__index ladder_rungs_indexes[] = {
    {.sql = "CREATE INDEX ladder_rungs_run ON ladder_rungs(endpoint_id, ladder, rung)", .alter = 6},
    {0},
};

#define RULE(f) REC(struct sw_ledger_rule_rec, f)
static const struct sw__col rules[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = L | X},
    {.name = "endpoint_id",
     .kind = SW__ENDPOINT,
     .col = 2,
     .cons = "REFERENCES endpoints(id)",
     .key = "endpoint",
     .views = L | X,
     .rec = RULE(endpoint)},
    {.name = "expr",
     .kind = SW__TEXT,
     .col = 3,
     .cons = "NOT NULL CHECK(length(expr) >= 1)",
     .views = L | X,
     .rec = RULE(expr)},
    {.name = "reason",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL CHECK(length(reason) >= 1)",
     .views = L | X,
     .rec = RULE(reason)},
    {.name = "failure",
     .kind = SW__JSON,
     .col = 10,
     .cons = "CHECK(failure IS NULL OR json_valid(failure))",
     .views = L | X,
     .rec = RULE(failure)},
    {.name = "boot_id",
     .kind = SW__BOOT,
     .col = 5,
     .cons = "REFERENCES boots(id)",
     .key = "boot",
     .views = L | X,
     .rec = RULE(boot_id)},
    {.name = "source", .kind = SW__TEXT, .col = 6, .views = L | X, .rec = RULE(source)},
    {.name = "source_line", .kind = SW__TEXT, .col = 7, .views = L | X, .rec = RULE(source_line)},
    {.name = "created_at", .kind = SW__TIME, .col = 9, .cons = "NOT NULL", .views = L | X},
    {.name = "ext_id",
     .kind = SW__TEXT,
     .col = 8,
     .cons = "UNIQUE",
     .views = X,
     .rec = RULE(ext_id)},
};
static const struct sw__index rules_indexes[] = {
    {.sql = "CREATE INDEX rules_endpoint ON rules(endpoint_id)"},
    {0},
};

#define NOTE(f) REC(struct sw__note_rec, f)
static const struct sw__col notes[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY", .views = OF | X},
    {.name = "kind",
     .kind = SW__TEXT,
     .col = 2,
     .cons = "NOT NULL CHECK(kind IN ('ledger', 'endpoint', 'shape', 'boot', 'usage',\n"
             "                                    'battery', 'bench', 'rung', 'rule'))",
     .views = X,
     .rec = NOTE(kind)},
    /* the import resolves it by the kind (a ref, an endpoint's name, a shape's hash) */
    {.name = "subject_id", .kind = SW__REF, .col = 3, .key = "subject", .views = X},
    {.name = "text",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL",
     .views = OF | X,
     .rec = NOTE(text)},
    {.name = "author", .kind = SW__TEXT, .col = 5, .views = OF | X, .rec = NOTE(author)},
    {.name = "ext_id",
     .kind = SW__TEXT,
     .col = 7,
     .cons = "UNIQUE",
     .views = X,
     .rec = NOTE(ext_id)},
    {.name = "created_at", .kind = SW__TIME, .col = 6, .cons = "NOT NULL", .views = OF | X},
};
static const struct sw__index notes_indexes[] = {
    {.sql = "CREATE INDEX notes_subject ON notes(kind, subject_id)"},
    {0},
};

/* ---------------------------------------------------------------------------------------------
 * The rollout's record, the tuner's journal and the unit observations: read by their own code
 * (deploy_read.c, tag.c, tune.c, unitobs.c), so only their columns are described here.
 */

static const struct sw__col tags[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "name",
     .kind = SW__TEXT,
     .col = 2,
     .cons = "NOT NULL UNIQUE CHECK(length(name) BETWEEN 12 AND 160)"},
    {.name = "endpoint_id", .kind = SW__ENDPOINT, .col = 3, .cons = ENDPOINT_FK},
    {.name = "day", .kind = SW__TEXT, .col = 4, .cons = "NOT NULL CHECK(length(day) = 8)"},
    {.name = "seq", .kind = SW__INT, .col = 5, .cons = "NOT NULL CHECK(seq >= 1)"},
    {.name = "shape_id", .kind = SW__SHAPE, .col = 6, .cons = "NOT NULL REFERENCES shapes(id)"},
    {.name = "attempt_id", .kind = SW__REF, .col = 7, .cons = "REFERENCES deploy_attempts(id)"},
    {.name = "image", .kind = SW__TEXT, .col = 8},
    {.name = "created_at", .kind = SW__TIME, .col = 9, .cons = "NOT NULL"},
    {.name = "note", .kind = SW__TEXT, .col = 10},
    {.name = "last_good",
     .kind = SW__INT,
     .col = 11,
     .cons = "NOT NULL DEFAULT 0 CHECK(last_good IN (0, 1))"},
    {.name = "retired_at", .kind = SW__TIME, .col = 12},
    {.name = "retired_why", .kind = SW__TEXT, .col = 13},
    {.name = "unit_name", .kind = SW__TEXT, .col = 14},
    {.name = "env_name", .kind = SW__TEXT, .col = 15},
    {.name = "unit_text", .kind = SW__TEXT, .col = 16},
    {.name = "env_text", .kind = SW__TEXT, .col = 17},
    {.name = "payload", .kind = SW__JSON, .col = 18, .cons = "NOT NULL CHECK(json_valid(payload))"},
};
static const char *const tags_checks[] = {
    "UNIQUE(endpoint_id, day, seq)",
    "CHECK((retired_at IS NULL) = (retired_why IS NULL))",
    "CHECK(NOT (last_good = 1 AND retired_at IS NOT NULL))",
    NULL,
};
static const struct sw__index tags_indexes[] = {
    {.sql = "CREATE UNIQUE INDEX tags_last_good ON tags(endpoint_id) WHERE last_good = 1"},
    {.sql = "CREATE INDEX tags_shape ON tags(shape_id)"},
    {0},
};

static const struct sw__col deploy_attempts[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "endpoint_id", .kind = SW__ENDPOINT, .col = 2, .cons = ENDPOINT_FK},
    {.name = "shape_id", .kind = SW__SHAPE, .col = 3, .cons = "NOT NULL REFERENCES shapes(id)"},
    {.name = "from_tag", .kind = SW__TEXT, .col = 4},
    {.name = "started_ms", .kind = SW__MS, .col = 5, .cons = "NOT NULL"},
    {.name = "ended_ms", .kind = SW__MS, .col = 6},
    {.name = "outcome",
     .kind = SW__TEXT,
     .col = 7,
     .cons = "CHECK(outcome IS NULL OR outcome IN ('committed', 'rolled_back',\n"
             "                     'rollback_failed', 'gate_refused', 'interrupted'))"},
    {.name = "failure_class", .kind = SW__TEXT, .col = 8},
    {.name = "downtime_ms",
     .kind = SW__INT,
     .col = 9,
     .cons = "CHECK(downtime_ms IS NULL OR downtime_ms >= 0)"},
    {.name = "tag_id", .kind = SW__REF, .col = 10, .cons = "REFERENCES tags(id)"},
    {.name = "rule_id", .kind = SW__REF, .col = 11, .cons = "REFERENCES rules(id)"},
    {.name = "owner_host", .kind = SW__TEXT, .col = 12},
    {.name = "owner_boot", .kind = SW__TEXT, .col = 13},
    {.name = "owner_pid", .kind = SW__INT, .col = 14},
    {.name = "owner_start", .kind = SW__INT, .col = 15},
    {.name = "note", .kind = SW__TEXT, .col = 16},
    {.name = "evidence",
     .kind = SW__JSON,
     .col = 17,
     .cons = "CHECK(evidence IS NULL OR json_valid(evidence))"},
};
static const char *const deploy_attempts_checks[] = {
    "CHECK((outcome IS NULL) = (ended_ms IS NULL))",
    "CHECK((failure_class IS NULL) = (outcome IS NULL OR outcome = 'committed'))",
    "CHECK((tag_id IS NOT NULL) = (outcome IS 'committed'))",
    NULL,
};
static const struct sw__index deploy_attempts_indexes[] = {
    {.sql = "CREATE INDEX deploy_attempts_endpoint ON deploy_attempts(endpoint_id, id)"},
    {.sql = "CREATE UNIQUE INDEX deploy_attempts_open ON deploy_attempts(endpoint_id)\n"
            "  WHERE ended_ms IS NULL"},
    {0},
};

static const struct sw__col deploy_steps[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "attempt_id",
     .kind = SW__REF,
     .col = 2,
     .cons = "NOT NULL REFERENCES deploy_attempts(id)"},
    {.name = "seq", .kind = SW__INT, .col = 3, .cons = "NOT NULL CHECK(seq >= 1)"},
    {.name = "name",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL CHECK(length(name) BETWEEN 1 AND 64)"},
    {.name = "started_ms", .kind = SW__MS, .col = 5, .cons = "NOT NULL"},
    {.name = "ended_ms", .kind = SW__MS, .col = 6},
    {.name = "outcome",
     .kind = SW__TEXT,
     .col = 7,
     .cons = "CHECK(outcome IS NULL OR outcome IN ('ok', 'failed', 'skipped',\n"
             "                     'interrupted'))"},
    {.name = "detail",
     .kind = SW__JSON,
     .col = 8,
     .cons = "CHECK(detail IS NULL OR json_valid(detail))"},
};
static const char *const deploy_steps_checks[] = {
    "CHECK((outcome IS NULL) = (ended_ms IS NULL))",
    "UNIQUE(attempt_id, seq)",
    NULL,
};

static const struct sw__col payload_moves[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "from_path",
     .kind = SW__TEXT,
     .col = 2,
     .cons = "NOT NULL CHECK(length(from_path) >= 1)"},
    {.name = "to_path", .kind = SW__TEXT, .col = 3, .cons = "NOT NULL CHECK(length(to_path) >= 1)"},
    {.name = "method",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL CHECK(method IN ('rename', 'copy'))"},
    {.name = "bytes", .kind = SW__INT, .col = 5, .cons = "CHECK(bytes IS NULL OR bytes >= 0)"},
    {.name = "files", .kind = SW__INT, .col = 6, .cons = "CHECK(files IS NULL OR files >= 0)"},
    {.name = "moved_at", .kind = SW__TIME, .col = 7, .cons = "NOT NULL"},
    {.name = "note", .kind = SW__TEXT, .col = 8},
};

static const struct sw__col tune_runs[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "endpoint_id", .kind = SW__ENDPOINT, .col = 2, .cons = ENDPOINT_FK},
    {.name = "objective",
     .kind = SW__TEXT,
     .col = 3,
     .cons = "NOT NULL CHECK(length(objective) BETWEEN 1 AND 160)"},
    {.name = "space",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL CHECK(length(space) BETWEEN 1 AND 160)"},
    {.name = "started_ms", .kind = SW__MS, .col = 5, .cons = "NOT NULL"},
    {.name = "ended_ms", .kind = SW__MS, .col = 6},
    {.name = "outcome",
     .kind = SW__TEXT,
     .col = 7,
     .cons = "CHECK(outcome IS NULL OR outcome IN ('crowned', 'no_winner', 'budget',\n"
             "                     'interrupted'))"},
    {.name = "result",
     .kind = SW__JSON,
     .col = 8,
     .cons = "CHECK(result IS NULL OR json_valid(result))"},
};
static const char *const tune_runs_checks[] = {"CHECK((outcome IS NULL) = (ended_ms IS NULL))",
                                               NULL};
static const struct sw__index tune_runs_indexes[] = {
    {.sql = "CREATE INDEX tune_runs_endpoint ON tune_runs(endpoint_id, id)"},
    {0},
};

static const struct sw__col tune_probes[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "run_id", .kind = SW__REF, .col = 2, .cons = "NOT NULL REFERENCES tune_runs(id)"},
    {.name = "seq", .kind = SW__INT, .col = 3, .cons = "NOT NULL CHECK(seq >= 1)"},
    {.name = "phase",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL CHECK(phase IN ('baseline', 'single', 'combo', 'remeasure'))"},
    {.name = "candidate",
     .kind = SW__TEXT,
     .col = 5,
     .cons = "NOT NULL CHECK(length(candidate) BETWEEN 1 AND 2048)"},
    {.name = "outcome",
     .kind = SW__TEXT,
     .col = 6,
     .cons = "NOT NULL CHECK(outcome IN ('rejected', 'boot_failed', 'bench_failed',\n"
             "                     'measured'))"},
    {.name = "gate", .kind = SW__TEXT, .col = 7},
    {.name = "score", .kind = SW__REAL, .col = 8},
    {.name = "noise", .kind = SW__REAL, .col = 9},
    {.name = "recorded_ms", .kind = SW__MS, .col = 10, .cons = "NOT NULL"},
    {.name = "evidence",
     .kind = SW__JSON,
     .col = 11,
     .cons = "NOT NULL CHECK(json_valid(evidence))"},
};
static const char *const tune_probes_checks[] = {
    "CHECK((outcome = 'rejected') = (gate IS NOT NULL))",
    "UNIQUE(run_id, seq)",
    NULL,
};

static const struct sw__col unit_observations[] = {
    {.name = "id", .kind = SW__ID, .col = 1, .cons = "PRIMARY KEY"},
    {.name = "endpoint_id", .kind = SW__ENDPOINT, .col = 2, .cons = ENDPOINT_FK},
    {.name = "observed_ms", .kind = SW__MS, .col = 3, .cons = "NOT NULL"},
    {.name = "host",
     .kind = SW__TEXT,
     .col = 4,
     .cons = "NOT NULL CHECK(length(host) BETWEEN 1 AND 256)"},
    {.name = "unit",
     .kind = SW__TEXT,
     .col = 5,
     .cons = "NOT NULL CHECK(length(unit) BETWEEN 1 AND 256)"},
    {.name = "active",
     .kind = SW__TEXT,
     .col = 6,
     .cons = "NOT NULL CHECK(length(active) BETWEEN 1 AND 32)"},
    {.name = "sub", .kind = SW__TEXT, .col = 7, .cons = "CHECK(sub IS NULL OR length(sub) <= 32)"},
    {.name = "result",
     .kind = SW__TEXT,
     .col = 8,
     .cons = "CHECK(result IS NULL OR length(result) <= 32)"},
    {.name = "n_restarts", .kind = SW__INT, .col = 9, .cons = "NOT NULL CHECK(n_restarts >= 0)"},
    {.name = "main_pid",
     .kind = SW__INT,
     .col = 10,
     .cons = "CHECK(main_pid IS NULL OR main_pid >= 0)"},
    {.name = "since",
     .kind = SW__TEXT,
     .col = 11,
     .cons = "CHECK(since IS NULL OR length(since) <= 64)"},
};
static const struct sw__index unit_observations_indexes[] = {
    {.sql = "CREATE INDEX unit_observations_endpoint ON unit_observations(endpoint_id, id)"},
    {0},
};

#define TABLE(var, ...)                                                                            \
    const struct sw__table sw__t_##var = {                                                         \
        .name = #var, .cols = var, .ncols = SW_ARRAY_LEN(var), __VA_ARGS__}

TABLE(endpoints, .version = 1);
TABLE(shapes, .version = 1);
TABLE(boots, .version = 1, .checks = boots_checks, .indexes = boots_indexes);
TABLE(usage, .version = 1, .indexes = usage_indexes);
TABLE(battery_runs, .version = 2, .indexes = battery_runs_indexes);
TABLE(battery_checks, .version = 2, .checks = battery_checks_checks);
TABLE(bench_runs, .version = 2, .indexes = bench_runs_indexes);
TABLE(ladder_rungs, .version = 2, .checks = ladder_rungs_checks, .indexes = ladder_rungs_indexes);
TABLE(rules, .version = 2, .indexes = rules_indexes);
/* created by version 1, rebuilt by version 2 as notes_v2 and renamed: SQLite keeps the new name
 * quoted */
TABLE(notes, .version = 2, .created_as = "\"notes\"", .indexes = notes_indexes);
TABLE(tags, .version = 3, .checks = tags_checks, .indexes = tags_indexes);
/* a deploy whose process died left its attempt open: its owner marks it on every read-write
 * open (deploy.c) */
TABLE(deploy_attempts, .version = 3, .checks = deploy_attempts_checks,
      .indexes = deploy_attempts_indexes, .on_open = sw__dep_on_open);
TABLE(deploy_steps, .version = 3, .checks = deploy_steps_checks);
TABLE(payload_moves, .version = 3);
TABLE(tune_runs, .version = 5, .checks = tune_runs_checks, .indexes = tune_runs_indexes);
TABLE(tune_probes, .version = 5, .checks = tune_probes_checks);
TABLE(unit_observations, .version = 7, .indexes = unit_observations_indexes);

const struct sw__table *const sw__ledger_tables[] = {
    &sw__t_endpoints,
    &sw__t_shapes,
    &sw__t_boots,
    &sw__t_usage,
    &sw__t_battery_runs,
    &sw__t_battery_checks,
    &sw__t_bench_runs,
    &sw__t_ladder_rungs,
    &sw__t_rules,
    &sw__t_notes,
    &sw__t_tags,
    &sw__t_deploy_attempts,
    &sw__t_deploy_steps,
    &sw__t_payload_moves,
    &sw__t_tune_runs,
    &sw__t_tune_probes,
    &sw__t_unit_observations,
    NULL,
};

/* ---------------------------------------------------------------------------------------------
 * What is derived.
 */

const char *sw__col_key(const struct sw__col *c)
{
    return c->key ? c->key : c->name;
}

static const char *sql_type(enum sw__kind k)
{
    switch (k) {
    case SW__REAL:
        return "REAL";
    case SW__TEXT:
    case SW__JSON:
        return "TEXT";
    default:
        return "INTEGER";
    }
}

/* Append to out (n bytes, NUL-terminated); false when it does not fit. */
static bool add(char *out, size_t n, size_t *len, const char *a, const char *b)
{
    int w = snprintf(out + *len, n - *len, "%s%s", a, b ? b : "");
    if (w < 0 || (size_t)w >= n - *len)
        return false;
    *len += (size_t)w;
    return true;
}

/* "name TYPE constraints": a constraint SQLite keeps on a line of its own brings its newline. */
static bool add_column(char *out, size_t n, size_t *len, const struct sw__col *c)
{
    bool ok = add(out, n, len, c->name, " ") && add(out, n, len, sql_type(c->kind), NULL);
    if (ok && c->cons)
        ok = add(out, n, len, c->cons[0] == '\n' ? "" : " ", c->cons);
    return ok;
}

static const struct sw__col *column_at(const struct sw__table *t, int col)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (t->cols[i].name && t->cols[i].col == col)
            return &t->cols[i];
    return NULL;
}

/*
 * The CREATE TABLE statement as SQLite keeps it in sqlite_schema: the columns of the table's
 * CREATE one per line, then what ALTER TABLE ADD COLUMN appended (SQLite writes ", column" right
 * after the last column: before the table's constraints when it has some, else after the last
 * line), then the table constraints.
 */
int sw__table_create(const struct sw__table *t, char *out, size_t n)
{
    size_t len = 0;
    bool ok = add(out, n, &len, "CREATE TABLE ", t->created_as ? t->created_as : t->name) &&
              add(out, n, &len, "(", NULL);
    bool first = true, altered = false;
    for (int col = 1; ok; col++) {
        const struct sw__col *c = column_at(t, col);
        if (!c)
            break;
        if (c->alter) {
            bool lead = !altered && !t->checks;
            ok = add(out, n, &len, lead ? "\n, " : ", ", NULL) && add_column(out, n, &len, c);
            altered = true;
            continue;
        }
        ok = add(out, n, &len, first ? "\n  " : ",\n  ", NULL) && add_column(out, n, &len, c);
        first = false;
    }
    for (size_t i = 0; ok && t->checks && t->checks[i]; i++)
        ok = add(out, n, &len, ",\n  ", t->checks[i]);
    if (ok)
        ok = add(out, n, &len, altered && !t->checks ? ")" : "\n)", NULL);
    return ok ? 0 : SW_ERANGE;
}

/* The join a kind needs, JOIN when the column is NOT NULL (a LEFT JOIN keeps rows without). */
static bool add_join(char *out, size_t n, size_t *len, const struct sw__col *c)
{
    bool inner = c->cons && strstr(c->cons, "NOT NULL");
    const char *tbl = c->kind == SW__ENDPOINT ? "endpoints e ON e.id" : "shapes s ON s.id";
    return add(out, n, len, inner ? " JOIN " : " LEFT JOIN ", tbl) &&
           add(out, n, len, " = t.", c->name);
}

/* The result columns one field reads (query.c reads them in the same order). */
static bool add_select(char *out, size_t n, size_t *len, const struct sw__col *c, unsigned view)
{
    if (c->expr)
        return add(out, n, len, c->expr, NULL);
    switch (c->kind) {
    case SW__ENDPOINT:
        return add(out, n, len, "e.name", NULL);
    case SW__SHAPE:
        if (view == SW__V_EXPORT)
            return add(out, n, len, "s.canonical", NULL);
        return add(out, n, len, "t.", c->name) &&
               add(out, n, len, view == SW__V_FULL ? ", s.hash, s.canonical" : ", s.hash", NULL);
    case SW__ROWS:
        return add(out, n, len, "t.id", NULL);
    default:
        return add(out, n, len, "t.", c->name);
    }
}

int sw__table_select(const struct sw__table *t, unsigned view, char *out, size_t n)
{
    size_t len = 0;
    const struct sw__col *ep = NULL, *shape = NULL;
    bool ok = add(out, n, &len, "SELECT ", NULL);
    int k = 0;
    for (size_t i = 0; ok && i < t->ncols; i++) {
        const struct sw__col *c = &t->cols[i];
        if (!(c->views & view))
            continue;
        if (c->kind == SW__ENDPOINT)
            ep = c;
        if (c->kind == SW__SHAPE)
            shape = c;
        ok = add(out, n, &len, k++ ? ", " : "", NULL) && add_select(out, n, &len, c, view);
    }
    ok = ok && add(out, n, &len, " FROM ", t->name) && add(out, n, &len, " t", NULL);
    if (ok && ep)
        ok = add_join(out, n, &len, ep);
    if (ok && shape)
        ok = add_join(out, n, &len, shape);
    return ok && k ? 0 : SW_ERANGE;
}

void sw__ledger_tables_on_open(struct sw_ledger *l)
{
    for (size_t i = 0; sw__ledger_tables[i]; i++)
        if (sw__ledger_tables[i]->on_open)
            sw__ledger_tables[i]->on_open(l);
}
