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
#define LX  (L | X)
#define FX  (F | X)
#define LFX (L | F | X)
#define OFX (OF | X)
#define LI  (L | IMP)
#define LFI (L | F | IMP)
/* Where an imported value lands in its record (0: nowhere). */
#define REC(type, field) (offsetof(type, field) + 1)

/* The fields, one a line. A column: its name (its JSON key too), kind, place in CREATE TABLE,
 * constraints ("": none), the documents it is in, where the import puts it. */
#define COL(name_, kind_, col_, cons_, views_, rec_)                                               \
    {                                                                                              \
        .name = name_, .kind = SW__##kind_, .col = col_, .cons = cons_, .views = views_,           \
        .rec = rec_                                                                                \
    }
/* A column whose JSON key is not its name. */
#define KEYED(key_, name_, kind_, col_, cons_, views_, rec_)                                       \
    {                                                                                              \
        .key = key_, .name = name_, .kind = SW__##kind_, .col = col_, .cons = cons_,               \
        .views = views_, .rec = rec_                                                               \
    }
/* A column that version alter_'s ALTER TABLE ADD COLUMN added. */
#define ADDED(alter_, name_, kind_, col_, cons_, views_, rec_)                                     \
    {                                                                                              \
        .alter = alter_, .name = name_, .kind = SW__##kind_, .col = col_, .cons = cons_,           \
        .views = views_, .rec = rec_                                                               \
    }
/* A field no column holds: computed by SQL over t (the row), e (its endpoint), s (its shape). */
#define CALC(key_, kind_, expr_, views_)                                                           \
    {                                                                                              \
        .key = key_, .kind = SW__##kind_, .expr = expr_, .views = views_                           \
    }
/* A key only the import reads. */
#define DOC(key_, kind_, rec_)                                                                     \
    {                                                                                              \
        .key = key_, .kind = SW__##kind_, .views = IMP, .rec = rec_                                \
    }
/* The rows of another table under this one: the statement lists them by this row's id. */
#define ROWS(key_, stmt_, views_)                                                                  \
    {                                                                                              \
        .key = key_, .kind = SW__ROWS, .rows = stmt_, .views = views_                              \
    }

/* The constraints too long for a row, as SQLite keeps them (their line breaks are the
 * migrations'). */
#define BOOTS_DURATION_MS "CHECK(duration_ms IS NULL OR duration_ms >= 0)"
#define BOOTS_PREDICTED   "CHECK(predicted IS NULL OR json_valid(predicted))"
#define BOOTS_LOG_EXCERPT "CHECK(log_excerpt IS NULL OR length(CAST(log_excerpt AS BLOB)) <= 65536)"
#define USAGE_FREE_MIB                                                                             \
    "CHECK(free_mib IS NULL OR (free_mib >= 0 AND\n"                                               \
    "                                              free_mib + used_mib <= total_mib))"
#define LADDER_RUNGS_OUTCOME "NOT NULL CHECK(outcome IN ('pass', 'fail', 'refused'))"
#define NOTES_KIND                                                                                 \
    "NOT NULL CHECK(kind IN ('ledger', 'endpoint', 'shape', 'boot', 'usage',\n"                    \
    "                                    'battery', 'bench', 'rung', 'rule'))"
#define DEPLOY_ATTEMPTS_OUTCOME                                                                    \
    "CHECK(outcome IS NULL OR outcome IN ('committed', 'rolled_back',\n"                           \
    "                     'rollback_failed', 'gate_refused', 'interrupted'))"
#define DEPLOY_STEPS_OUTCOME                                                                       \
    "CHECK(outcome IS NULL OR outcome IN ('ok', 'failed', 'skipped',\n"                            \
    "                     'interrupted'))"
#define TUNE_RUNS_OUTCOME                                                                          \
    "CHECK(outcome IS NULL OR outcome IN ('crowned', 'no_winner', 'budget',\n"                     \
    "                     'interrupted'))"
#define TUNE_PROBES_PHASE "NOT NULL CHECK(phase IN ('baseline', 'single', 'combo', 'remeasure'))"
#define TUNE_PROBES_OUTCOME                                                                        \
    "NOT NULL CHECK(outcome IN ('rejected', 'boot_failed', 'bench_failed',\n"                      \
    "                     'measured'))"
#define ENDPOINT_FK "NOT NULL REFERENCES endpoints(id)"

static const struct sw__col endpoints[] = {
    COL("id", ID, 1, "PRIMARY KEY", X, 0),
    COL("name", TEXT, 2, "NOT NULL UNIQUE CHECK(length(name) BETWEEN 1 AND 128)", X, 0),
    COL("created_at", TIME, 3, "NOT NULL", X, 0),
};

static const struct sw__col shapes[] = {
    COL("id", ID, 1, "PRIMARY KEY", X, 0),
    COL("hash", TEXT, 2, "NOT NULL UNIQUE CHECK(length(hash) = 64)", X, 0),
    COL("canon_version", INT, 3, "NOT NULL", X, 0),
    COL("canonical", JSON, 6, "NOT NULL CHECK(json_valid(canonical))", X, 0),
    COL("created_at", TIME, 5, "NOT NULL", X, 0),
    COL("engine", TEXT, 4, "NOT NULL", 0, 0),
    /* the import reads the shape from "canonical" or "shape" */
    DOC("shape", JSON, 0),
};

#define BOOT(f) REC(struct sw_ledger_boot, f)
static const struct sw__col boots[] = {
    COL("id", ID, 1, "PRIMARY KEY", LFX, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, LFX, BOOT(endpoint)),
    KEYED("shape", "shape_id", SHAPE, 3, "REFERENCES shapes(id)", LFX, BOOT(shape)),
    CALC("shape_hash", TEXT, "s.hash", X),
    CALC("shape_summary", SUMMARY, "s.canonical", LFI),
    COL("engine", TEXT, 4, "NOT NULL", LFX, BOOT(engine)),
    COL("engine_version", TEXT, 5, "", LFX, BOOT(engine_version)),
    COL("started_at", TIME, 6, "", LFX, BOOT(started_at)),
    COL("ended_at", TIME, 7, "", LFX, BOOT(ended_at)),
    COL("duration_ms", INT, 8, BOOTS_DURATION_MS, LFX, BOOT(duration_ms)),
    COL("outcome", TEXT, 9, "NOT NULL CHECK(outcome IN ('ok', 'failed'))", LFX, 0),
    COL("failure_class", TEXT, 10, "", LFX, 0),
    COL("failure_phase", TEXT, 11, "", LFX, 0),
    CALC("kv_cache_tokens", NUM, "json_extract(t.report, '$.kv_cache_tokens')", L),
    CALC("max_concurrency", NUM, "json_extract(t.report, '$.max_concurrency')", L),
    COL("source", TEXT, 13, "", LFX, BOOT(source)),
    COL("predicted", JSON, 16, BOOTS_PREDICTED, FX, BOOT(predicted)),
    COL("report", JSON, 17, "CHECK(report IS NULL OR json_valid(report))", FX, BOOT(report)),
    COL("failure", JSON, 18, "CHECK(failure IS NULL OR json_valid(failure))", FX, BOOT(failure)),
    COL("log_path", TEXT, 12, "", FX, BOOT(log_path)),
    COL("log_excerpt", TEXT, 19, BOOTS_LOG_EXCERPT, FX, BOOT(log_excerpt)),
    COL("source_line", TEXT, 14, "", FX, BOOT(source_line)),
    COL("recorded_at", TIME, 15, "NOT NULL", FX, 0),
    ADDED(2, "ext_id", TEXT, 20, "", FX, BOOT(ext_id)),
    ROWS("usage", LST_USAGE_OF_BOOT, F),
    ROWS("notes", LST_NOTES_OF_BOOT, F),
    /* the import attaches a note to the boot */
    DOC("note", TEXT, BOOT(note)),
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
    COL("id", ID, 1, "PRIMARY KEY", LX, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, LX, USAGE(endpoint)),
    KEYED("boot", "boot_id", BOOT, 3, "REFERENCES boots(id)", LX, USAGE(boot_id)),
    KEYED("shape", "shape_id", SHAPE, 4, "REFERENCES shapes(id)", LX, USAGE(shape)),
    COL("device", TEXT, 5, "NOT NULL CHECK(length(device) >= 1)", LX, USAGE(device)),
    /* the import reads the figures as integers (*_mib) or with a unit (used, total, free) */
    COL("used_mib", INT, 6, "NOT NULL CHECK(used_mib >= 0)", LX, 0),
    COL("total_mib", INT, 7, "NOT NULL CHECK(total_mib > 0 AND used_mib <= total_mib)", LX, 0),
    COL("free_mib", INT, 8, USAGE_FREE_MIB, X, 0),
    /* a listing gives the tool's free figure when it was read, else total - used */
    CALC("free_mib", INT, "coalesce(t.free_mib, t.total_mib - t.used_mib)", L),
    CALC("free_read", BOOL, "t.free_mib IS NOT NULL", LI),
    COL("source", TEXT, 9, "NOT NULL", LX, USAGE(source)),
    COL("taken_at", TIME, 10, "", LX, USAGE(taken_at)),
    COL("note", TEXT, 11, "", LX, USAGE(note)),
    COL("source_line", TEXT, 12, "", LX, USAGE(source_line)),
    ADDED(2, "ext_id", TEXT, 14, "", X, USAGE(ext_id)),
    COL("recorded_at", TIME, 13, "NOT NULL", IMP, 0),
    DOC("used", TEXT, 0),
    DOC("total", TEXT, 0),
    DOC("free", TEXT, 0),
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
    COL("id", ID, 1, "PRIMARY KEY", X, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, X, RUN(endpoint)),
    KEYED("boot", "boot_id", BOOT, 3, "REFERENCES boots(id)", X, RUN(boot_id)),
    COL("url", TEXT, 4, "", X, RUN(url)),
    COL("started_at", TIME, 5, "", X, RUN(started_at)),
    /* the import counts these again from the checks */
    COL("ms", INT, 6, "", X, 0),
    COL("passed", INT, 7, "NOT NULL", X, 0),
    COL("failed", INT, 8, "NOT NULL", X, 0),
    COL("skipped", INT, 9, "NOT NULL", X, 0),
    COL("ext_id", TEXT, 10, "UNIQUE", X, RUN(ext_id)),
    COL("recorded_at", TIME, 11, "NOT NULL", X, 0),
    ROWS("checks", LST_CHECKS_OF, X),
};
static const struct sw__index battery_runs_indexes[] = {
    {.sql = "CREATE INDEX battery_runs_endpoint ON battery_runs(endpoint_id, id)"},
    {0},
};

static const struct sw__col battery_checks[] = {
    COL("name", TEXT, 4, "NOT NULL", X, 0),
    COL("status", TEXT, 5, "NOT NULL CHECK(status IN ('pass', 'fail', 'skip'))", X, 0),
    COL("evidence", JSON, 8, "CHECK(evidence IS NULL OR json_valid(evidence))", X, 0),
    COL("reason", TEXT, 6, "", X, 0),
    COL("ms", INT, 7, "", X, 0),
    COL("id", ID, 1, "PRIMARY KEY", 0, 0),
    COL("run_id", REF, 2, "NOT NULL REFERENCES battery_runs(id)", 0, 0),
    COL("seq", INT, 3, "NOT NULL", 0, 0),
};
static const char *const battery_checks_checks[] = {"UNIQUE(run_id, seq)", NULL};

#define BENCH(f) REC(struct sw__bench_rec, f)
static const struct sw__col bench_runs[] = {
    COL("id", ID, 1, "PRIMARY KEY", FX, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, FX, BENCH(endpoint)),
    KEYED("boot", "boot_id", BOOT, 3, "REFERENCES boots(id)", FX, BENCH(boot_id)),
    COL("started_at", TIME, 4, "", FX, BENCH(started_at)),
    COL("params", JSON, 9, "NOT NULL CHECK(json_valid(params))", FX, BENCH(params)),
    COL("results", JSON, 10, "NOT NULL CHECK(json_valid(results))", FX, BENCH(results)),
    COL("chart_path", TEXT, 5, "", FX, BENCH(chart_path)),
    COL("source_line", TEXT, 6, "", FX, BENCH(source_line)),
    COL("ext_id", TEXT, 7, "UNIQUE", FX, BENCH(ext_id)),
    COL("recorded_at", TIME, 8, "NOT NULL", FX, 0),
    /* the planned shape's summary (not exported: the import derives it from params.shape) */
    ADDED(4, "shape", TEXT, 11, "", F, 0),
};
static const struct sw__index bench_runs_indexes[] = {
    {.sql = "CREATE INDEX bench_runs_endpoint ON bench_runs(endpoint_id, id)"},
    {0},
};

#define RUNG(f) REC(struct sw_ledger_rung, f)
static const struct sw__col ladder_rungs[] = {
    COL("id", ID, 1, "PRIMARY KEY", X, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, X, RUNG(endpoint)),
    COL("ladder", TEXT, 3, "NOT NULL CHECK(length(ladder) >= 1)", X, RUNG(ladder)),
    COL("rung", INT, 4, "NOT NULL CHECK(rung >= 1)", X, RUNG(rung)),
    CALC("shape_hash", TEXT, "s.hash", X),
    KEYED("shape", "shape_id", SHAPE, 5, "NOT NULL REFERENCES shapes(id)", X, RUNG(shape)),
    KEYED("boot", "boot_id", BOOT, 6, "REFERENCES boots(id)", X, RUNG(boot_id)),
    COL("outcome", TEXT, 7, LADDER_RUNGS_OUTCOME, X, RUNG(outcome)),
    COL("note", TEXT, 8, "", X, RUNG(note)),
    COL("source_line", TEXT, 9, "", X, RUNG(source_line)),
    COL("ext_id", TEXT, 10, "UNIQUE", X, RUNG(ext_id)),
    COL("recorded_at", TIME, 11, "NOT NULL", X, 0),
    ADDED(6, "knob", TEXT, 12, "", X, RUNG(knob)),
    /* the import takes a value only when it is an integer, evidence only when an object */
    ADDED(6, "value", INT, 13, "", X, 0),
    ADDED(6, "class", TEXT, 14, "", X, RUNG(klass)),
    ADDED(6, "evidence", JSON, 15, "\n  CHECK(evidence IS NULL OR json_valid(evidence))", X, 0),
};
static const char *const ladder_rungs_checks[] = {"UNIQUE(endpoint_id, ladder, rung)", NULL};
static const struct sw__index ladder_rungs_indexes[] = {
    {.sql = "CREATE INDEX ladder_rungs_run ON ladder_rungs(endpoint_id, ladder, rung)", .alter = 6},
    {0},
};

#define RULE(f) REC(struct sw_ledger_rule_rec, f)
static const struct sw__col rules[] = {
    COL("id", ID, 1, "PRIMARY KEY", LX, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, "REFERENCES endpoints(id)", LX, RULE(endpoint)),
    COL("expr", TEXT, 3, "NOT NULL CHECK(length(expr) >= 1)", LX, RULE(expr)),
    COL("reason", TEXT, 4, "NOT NULL CHECK(length(reason) >= 1)", LX, RULE(reason)),
    COL("failure", JSON, 10, "CHECK(failure IS NULL OR json_valid(failure))", LX, RULE(failure)),
    KEYED("boot", "boot_id", BOOT, 5, "REFERENCES boots(id)", LX, RULE(boot_id)),
    COL("source", TEXT, 6, "", LX, RULE(source)),
    COL("source_line", TEXT, 7, "", LX, RULE(source_line)),
    COL("created_at", TIME, 9, "NOT NULL", LX, 0),
    COL("ext_id", TEXT, 8, "UNIQUE", X, RULE(ext_id)),
};
static const struct sw__index rules_indexes[] = {
    {.sql = "CREATE INDEX rules_endpoint ON rules(endpoint_id)"},
    {0},
};

#define NOTE(f) REC(struct sw__note_rec, f)
static const struct sw__col notes[] = {
    COL("id", ID, 1, "PRIMARY KEY", OFX, 0),
    COL("kind", TEXT, 2, NOTES_KIND, X, NOTE(kind)),
    /* the import resolves it by the kind (a ref, an endpoint's name, a shape's hash) */
    KEYED("subject", "subject_id", REF, 3, "", X, 0),
    COL("text", TEXT, 4, "NOT NULL", OFX, NOTE(text)),
    COL("author", TEXT, 5, "", OFX, NOTE(author)),
    COL("ext_id", TEXT, 7, "UNIQUE", X, NOTE(ext_id)),
    COL("created_at", TIME, 6, "NOT NULL", OFX, 0),
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
    COL("id", ID, 1, "PRIMARY KEY", 0, 0),
    COL("name", TEXT, 2, "NOT NULL UNIQUE CHECK(length(name) BETWEEN 12 AND 160)", 0, 0),
    COL("endpoint_id", ENDPOINT, 3, ENDPOINT_FK, 0, 0),
    COL("day", TEXT, 4, "NOT NULL CHECK(length(day) = 8)", 0, 0),
    COL("seq", INT, 5, "NOT NULL CHECK(seq >= 1)", 0, 0),
    COL("shape_id", SHAPE, 6, "NOT NULL REFERENCES shapes(id)", 0, 0),
    COL("attempt_id", REF, 7, "REFERENCES deploy_attempts(id)", 0, 0),
    COL("image", TEXT, 8, "", 0, 0),
    COL("created_at", TIME, 9, "NOT NULL", 0, 0),
    COL("note", TEXT, 10, "", 0, 0),
    COL("last_good", INT, 11, "NOT NULL DEFAULT 0 CHECK(last_good IN (0, 1))", 0, 0),
    COL("retired_at", TIME, 12, "", 0, 0),
    COL("retired_why", TEXT, 13, "", 0, 0),
    COL("unit_name", TEXT, 14, "", 0, 0),
    COL("env_name", TEXT, 15, "", 0, 0),
    COL("unit_text", TEXT, 16, "", 0, 0),
    COL("env_text", TEXT, 17, "", 0, 0),
    COL("payload", JSON, 18, "NOT NULL CHECK(json_valid(payload))", 0, 0),
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
    COL("id", ID, 1, "PRIMARY KEY", 0, 0),
    COL("endpoint_id", ENDPOINT, 2, ENDPOINT_FK, 0, 0),
    COL("shape_id", SHAPE, 3, "NOT NULL REFERENCES shapes(id)", 0, 0),
    COL("from_tag", TEXT, 4, "", 0, 0),
    COL("started_ms", MS, 5, "NOT NULL", 0, 0),
    COL("ended_ms", MS, 6, "", 0, 0),
    COL("outcome", TEXT, 7, DEPLOY_ATTEMPTS_OUTCOME, 0, 0),
    COL("failure_class", TEXT, 8, "", 0, 0),
    COL("downtime_ms", INT, 9, "CHECK(downtime_ms IS NULL OR downtime_ms >= 0)", 0, 0),
    COL("tag_id", REF, 10, "REFERENCES tags(id)", 0, 0),
    COL("rule_id", REF, 11, "REFERENCES rules(id)", 0, 0),
    COL("owner_host", TEXT, 12, "", 0, 0),
    COL("owner_boot", TEXT, 13, "", 0, 0),
    COL("owner_pid", INT, 14, "", 0, 0),
    COL("owner_start", INT, 15, "", 0, 0),
    COL("note", TEXT, 16, "", 0, 0),
    COL("evidence", JSON, 17, "CHECK(evidence IS NULL OR json_valid(evidence))", 0, 0),
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
    COL("id", ID, 1, "PRIMARY KEY", 0, 0),
    COL("attempt_id", REF, 2, "NOT NULL REFERENCES deploy_attempts(id)", 0, 0),
    COL("seq", INT, 3, "NOT NULL CHECK(seq >= 1)", 0, 0),
    COL("name", TEXT, 4, "NOT NULL CHECK(length(name) BETWEEN 1 AND 64)", 0, 0),
    COL("started_ms", MS, 5, "NOT NULL", 0, 0),
    COL("ended_ms", MS, 6, "", 0, 0),
    COL("outcome", TEXT, 7, DEPLOY_STEPS_OUTCOME, 0, 0),
    COL("detail", JSON, 8, "CHECK(detail IS NULL OR json_valid(detail))", 0, 0),
};
static const char *const deploy_steps_checks[] = {
    "CHECK((outcome IS NULL) = (ended_ms IS NULL))",
    "UNIQUE(attempt_id, seq)",
    NULL,
};

/* sw_ledger_moves lists them (tag.c) */
static const struct sw__col payload_moves[] = {
    COL("id", ID, 1, "PRIMARY KEY", L, 0),
    KEYED("from", "from_path", TEXT, 2, "NOT NULL CHECK(length(from_path) >= 1)", L, 0),
    KEYED("to", "to_path", TEXT, 3, "NOT NULL CHECK(length(to_path) >= 1)", L, 0),
    COL("method", TEXT, 4, "NOT NULL CHECK(method IN ('rename', 'copy'))", L, 0),
    COL("bytes", INT, 5, "CHECK(bytes IS NULL OR bytes >= 0)", L, 0),
    COL("files", INT, 6, "CHECK(files IS NULL OR files >= 0)", L, 0),
    KEYED("moved", "moved_at", TIME, 7, "NOT NULL", L, 0),
    COL("note", TEXT, 8, "", L, 0),
};

static const struct sw__col tune_runs[] = {
    COL("id", ID, 1, "PRIMARY KEY", 0, 0),
    COL("endpoint_id", ENDPOINT, 2, ENDPOINT_FK, 0, 0),
    COL("objective", TEXT, 3, "NOT NULL CHECK(length(objective) BETWEEN 1 AND 160)", 0, 0),
    COL("space", TEXT, 4, "NOT NULL CHECK(length(space) BETWEEN 1 AND 160)", 0, 0),
    COL("started_ms", MS, 5, "NOT NULL", 0, 0),
    COL("ended_ms", MS, 6, "", 0, 0),
    COL("outcome", TEXT, 7, TUNE_RUNS_OUTCOME, 0, 0),
    COL("result", JSON, 8, "CHECK(result IS NULL OR json_valid(result))", 0, 0),
};
static const char *const tune_runs_checks[] = {"CHECK((outcome IS NULL) = (ended_ms IS NULL))",
                                               NULL};
static const struct sw__index tune_runs_indexes[] = {
    {.sql = "CREATE INDEX tune_runs_endpoint ON tune_runs(endpoint_id, id)"},
    {0},
};

static const struct sw__col tune_probes[] = {
    COL("id", ID, 1, "PRIMARY KEY", 0, 0),
    COL("run_id", REF, 2, "NOT NULL REFERENCES tune_runs(id)", 0, 0),
    COL("seq", INT, 3, "NOT NULL CHECK(seq >= 1)", 0, 0),
    COL("phase", TEXT, 4, TUNE_PROBES_PHASE, 0, 0),
    COL("candidate", TEXT, 5, "NOT NULL CHECK(length(candidate) BETWEEN 1 AND 2048)", 0, 0),
    COL("outcome", TEXT, 6, TUNE_PROBES_OUTCOME, 0, 0),
    COL("gate", TEXT, 7, "", 0, 0),
    COL("score", REAL, 8, "", 0, 0),
    COL("noise", REAL, 9, "", 0, 0),
    COL("recorded_ms", MS, 10, "NOT NULL", 0, 0),
    COL("evidence", JSON, 11, "NOT NULL CHECK(json_valid(evidence))", 0, 0),
};
static const char *const tune_probes_checks[] = {
    "CHECK((outcome = 'rejected') = (gate IS NOT NULL))",
    "UNIQUE(run_id, seq)",
    NULL,
};

/* sw_ledger_unit_obs_list lists them, newest first (unitobs.c) */
static const struct sw__col unit_observations[] = {
    COL("id", ID, 1, "PRIMARY KEY", L, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, L, 0),
    COL("host", TEXT, 4, "NOT NULL CHECK(length(host) BETWEEN 1 AND 256)", L, 0),
    COL("unit", TEXT, 5, "NOT NULL CHECK(length(unit) BETWEEN 1 AND 256)", L, 0),
    COL("active", TEXT, 6, "NOT NULL CHECK(length(active) BETWEEN 1 AND 32)", L, 0),
    COL("sub", TEXT, 7, "CHECK(sub IS NULL OR length(sub) <= 32)", L, 0),
    COL("result", TEXT, 8, "CHECK(result IS NULL OR length(result) <= 32)", L, 0),
    COL("n_restarts", INT, 9, "NOT NULL CHECK(n_restarts >= 0)", L, 0),
    COL("main_pid", INT, 10, "CHECK(main_pid IS NULL OR main_pid >= 0)", L, 0),
    COL("since", TEXT, 11, "CHECK(since IS NULL OR length(since) <= 64)", L, 0),
    CALC("observed", TIME, "t.observed_ms / 1000", L),
    COL("observed_ms", MS, 3, "NOT NULL", L, 0),
};
static const struct sw__index unit_observations_indexes[] = {
    {.sql = "CREATE INDEX unit_observations_endpoint ON unit_observations(endpoint_id, id)"},
    {0},
};

/* sw_ledger_watch_list lists them, newest first (watch.c) */
static const struct sw__col watch_events[] = {
    COL("id", ID, 1, "PRIMARY KEY", L, 0),
    KEYED("endpoint", "endpoint_id", ENDPOINT, 2, ENDPOINT_FK, L, 0),
    COL("kind", TEXT, 4, "NOT NULL CHECK(kind IN ('observation', 'action', 'alert', 'job'))", L, 0),
    COL("state", TEXT, 5, "NOT NULL CHECK(length(state) BETWEEN 1 AND 32)", L, 0),
    COL("action", TEXT, 6, "CHECK(action IS NULL OR length(action) <= 64)", L, 0),
    COL("action_key", TEXT, 7, "UNIQUE CHECK(action_key IS NULL OR length(action_key) <= 256)", L,
        0),
    COL("outcome", TEXT, 8, "CHECK(outcome IS NULL OR length(outcome) <= 64)", L, 0),
    CALC("observed", TIME, "t.observed_ms / 1000", L),
    COL("observed_ms", MS, 3, "NOT NULL", L, 0),
    COL("evidence", JSON, 9, "CHECK(evidence IS NULL OR json_valid(evidence))", L, 0),
};
static const struct sw__index watch_events_indexes[] = {
    {.sql = "CREATE INDEX watch_events_endpoint ON watch_events(endpoint_id, id)"},
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
TABLE(watch_events, .version = 8, .indexes = watch_events_indexes);

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
    &sw__t_watch_events,
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
    if (ok && c->cons && c->cons[0])
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
