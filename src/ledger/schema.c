/*
 * The ledger's schema: the current one, made from the tables' descriptors (tables.c), and the
 * frozen migrations that bring an older file up to it. The file's PRAGMA user_version says which
 * version it holds. A fresh file gets the current schema in one step; an older one runs the
 * missing migrations. Each step is its own BEGIN IMMEDIATE transaction that re-reads the version
 * first (so two processes opening a fresh file at once apply each step exactly once) and sets
 * the new version inside the same transaction (user_version lives in the database header, which
 * is transactional). Every open then compares the file's schema with the current one.
 *
 * Rules for whoever adds version N+1: describe the change in tables.c (a column added by ALTER
 * TABLE carries `alter = N+1`) and append migration N+1 here; never edit a migration that has
 * shipped (real files were built by it; tests/data/ledger/v1.sql freezes version 1); keep the SQL
 * free of values other than the literal version number; end it with its own PRAGMA user_version.
 * test_ledger_tables.c proves that migrations 1..N leave the schema the descriptors make.
 *
 * Large columns (JSON documents, the log excerpt) come last in each table so SQLite reaches the
 * small ones without walking overflow pages.
 *
 * What it deliberately does not do: describe a column (tables.c), or touch a row.
 */
#include "ledger_internal.h"

#include <stdio.h>
#include <string.h>

/* 'SLPW': marks the file as a slipway ledger for `file(1)` and for our own open check. */
#define SW_LEDGER_APP_ID 0x534C5057

struct migration {
    int version;
    const char *what;
    const char *sql;
};

static const struct migration migrations[] = {
    {1, "endpoints, shapes, boots, device usage, notes",
     "PRAGMA application_id = 1397510231;\n"
     "CREATE TABLE endpoints(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  name TEXT NOT NULL UNIQUE CHECK(length(name) BETWEEN 1 AND 128),\n"
     "  created_at INTEGER NOT NULL\n"
     ");\n"
     "CREATE TABLE shapes(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  hash TEXT NOT NULL UNIQUE CHECK(length(hash) = 64),\n"
     "  canon_version INTEGER NOT NULL,\n"
     "  engine TEXT NOT NULL,\n"
     "  created_at INTEGER NOT NULL,\n"
     "  canonical TEXT NOT NULL CHECK(json_valid(canonical))\n"
     ");\n"
     "CREATE TABLE boots(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  shape_id INTEGER REFERENCES shapes(id),\n"
     "  engine TEXT NOT NULL,\n"
     "  engine_version TEXT,\n"
     "  started_at INTEGER,\n"
     "  ended_at INTEGER,\n"
     "  duration_ms INTEGER CHECK(duration_ms IS NULL OR duration_ms >= 0),\n"
     "  outcome TEXT NOT NULL CHECK(outcome IN ('ok', 'failed')),\n"
     "  failure_class TEXT,\n"
     "  failure_phase TEXT,\n"
     "  log_path TEXT,\n"
     "  source TEXT,\n"
     "  source_line TEXT,\n"
     "  recorded_at INTEGER NOT NULL,\n"
     "  predicted TEXT CHECK(predicted IS NULL OR json_valid(predicted)),\n"
     "  report TEXT CHECK(report IS NULL OR json_valid(report)),\n"
     "  failure TEXT CHECK(failure IS NULL OR json_valid(failure)),\n"
     "  log_excerpt TEXT CHECK(log_excerpt IS NULL OR length(CAST(log_excerpt AS BLOB)) <= "
     "65536),\n"
     "  CHECK((outcome = 'failed') = (failure IS NOT NULL)),\n"
     "  CHECK((failure IS NULL) = (failure_class IS NULL))\n"
     ");\n"
     "CREATE INDEX boots_endpoint ON boots(endpoint_id, id);\n"
     "CREATE INDEX boots_shape ON boots(shape_id);\n"
     "CREATE TABLE usage(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  boot_id INTEGER REFERENCES boots(id),\n"
     "  shape_id INTEGER REFERENCES shapes(id),\n"
     "  device TEXT NOT NULL CHECK(length(device) >= 1),\n"
     "  used_mib INTEGER NOT NULL CHECK(used_mib >= 0),\n"
     "  total_mib INTEGER NOT NULL CHECK(total_mib > 0 AND used_mib <= total_mib),\n"
     "  free_mib INTEGER CHECK(free_mib IS NULL OR (free_mib >= 0 AND\n"
     "                                              free_mib + used_mib <= total_mib)),\n"
     "  source TEXT NOT NULL,\n"
     "  taken_at INTEGER,\n"
     "  note TEXT,\n"
     "  source_line TEXT,\n"
     "  recorded_at INTEGER NOT NULL\n"
     ");\n"
     "CREATE INDEX usage_endpoint ON usage(endpoint_id, id);\n"
     "CREATE INDEX usage_boot ON usage(boot_id);\n"
     "CREATE INDEX usage_shape ON usage(shape_id);\n"
     "CREATE TABLE notes(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  kind TEXT NOT NULL CHECK(kind IN ('ledger', 'endpoint', 'shape', 'boot', 'usage')),\n"
     "  subject_id INTEGER,\n"
     "  text TEXT NOT NULL,\n"
     "  author TEXT,\n"
     "  created_at INTEGER NOT NULL\n"
     ");\n"
     "CREATE INDEX notes_subject ON notes(kind, subject_id);\n"
     "PRAGMA user_version = 1;\n"},

    /* Version 2 adds what the later stages record (probe batteries, bench runs, ladder rungs,
     * known-bad rules), external keys for idempotent imports, and widens the note subjects.
     * SQLite cannot alter a CHECK constraint, so notes is rebuilt (create, copy, drop, rename:
     * the procedure of SQLite's "ALTER TABLE" page); nothing references notes by foreign key. */
    {2, "battery runs, bench runs, ladder rungs, known-bad rules, external ids",
     "ALTER TABLE boots ADD COLUMN ext_id TEXT;\n"
     "CREATE UNIQUE INDEX boots_ext_id ON boots(ext_id) WHERE ext_id IS NOT NULL;\n"
     "ALTER TABLE usage ADD COLUMN ext_id TEXT;\n"
     "CREATE UNIQUE INDEX usage_ext_id ON usage(ext_id) WHERE ext_id IS NOT NULL;\n"
     "CREATE TABLE battery_runs(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  boot_id INTEGER REFERENCES boots(id),\n"
     "  url TEXT,\n"
     "  started_at INTEGER,\n"
     "  ms INTEGER,\n"
     "  passed INTEGER NOT NULL,\n"
     "  failed INTEGER NOT NULL,\n"
     "  skipped INTEGER NOT NULL,\n"
     "  ext_id TEXT UNIQUE,\n"
     "  recorded_at INTEGER NOT NULL\n"
     ");\n"
     "CREATE INDEX battery_runs_endpoint ON battery_runs(endpoint_id, id);\n"
     "CREATE TABLE battery_checks(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  run_id INTEGER NOT NULL REFERENCES battery_runs(id),\n"
     "  seq INTEGER NOT NULL,\n"
     "  name TEXT NOT NULL,\n"
     "  status TEXT NOT NULL CHECK(status IN ('pass', 'fail', 'skip')),\n"
     "  reason TEXT,\n"
     "  ms INTEGER,\n"
     "  evidence TEXT CHECK(evidence IS NULL OR json_valid(evidence)),\n"
     "  UNIQUE(run_id, seq)\n"
     ");\n"
     "CREATE TABLE bench_runs(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  boot_id INTEGER REFERENCES boots(id),\n"
     "  started_at INTEGER,\n"
     "  chart_path TEXT,\n"
     "  source_line TEXT,\n"
     "  ext_id TEXT UNIQUE,\n"
     "  recorded_at INTEGER NOT NULL,\n"
     "  params TEXT NOT NULL CHECK(json_valid(params)),\n"
     "  results TEXT NOT NULL CHECK(json_valid(results))\n"
     ");\n"
     "CREATE INDEX bench_runs_endpoint ON bench_runs(endpoint_id, id);\n"
     "CREATE TABLE ladder_rungs(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  ladder TEXT NOT NULL CHECK(length(ladder) >= 1),\n"
     "  rung INTEGER NOT NULL CHECK(rung >= 1),\n"
     "  shape_id INTEGER NOT NULL REFERENCES shapes(id),\n"
     "  boot_id INTEGER REFERENCES boots(id),\n"
     "  outcome TEXT NOT NULL CHECK(outcome IN ('pass', 'fail', 'refused')),\n"
     "  note TEXT,\n"
     "  source_line TEXT,\n"
     "  ext_id TEXT UNIQUE,\n"
     "  recorded_at INTEGER NOT NULL,\n"
     "  UNIQUE(endpoint_id, ladder, rung)\n"
     ");\n"
     "CREATE TABLE rules(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER REFERENCES endpoints(id),\n"
     "  expr TEXT NOT NULL CHECK(length(expr) >= 1),\n"
     "  reason TEXT NOT NULL CHECK(length(reason) >= 1),\n"
     "  boot_id INTEGER REFERENCES boots(id),\n"
     "  source TEXT,\n"
     "  source_line TEXT,\n"
     "  ext_id TEXT UNIQUE,\n"
     "  created_at INTEGER NOT NULL,\n"
     "  failure TEXT CHECK(failure IS NULL OR json_valid(failure))\n"
     ");\n"
     "CREATE INDEX rules_endpoint ON rules(endpoint_id);\n"
     "CREATE TABLE notes_v2(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  kind TEXT NOT NULL CHECK(kind IN ('ledger', 'endpoint', 'shape', 'boot', 'usage',\n"
     "                                    'battery', 'bench', 'rung', 'rule')),\n"
     "  subject_id INTEGER,\n"
     "  text TEXT NOT NULL,\n"
     "  author TEXT,\n"
     "  created_at INTEGER NOT NULL,\n"
     "  ext_id TEXT UNIQUE\n"
     ");\n"
     "INSERT INTO notes_v2(id, kind, subject_id, text, author, created_at)\n"
     "  SELECT id, kind, subject_id, text, author, created_at FROM notes;\n"
     "DROP TABLE notes;\n"
     "ALTER TABLE notes_v2 RENAME TO notes;\n"
     "CREATE INDEX notes_subject ON notes(kind, subject_id);\n"
     "PRAGMA user_version = 2;\n"},

    /* Version 3: the rollout's record. Deploy attempts with their steps (each written as it
     * happens; one open attempt per endpoint), tags (a committed shape with its secret-free
     * rendered files and payload manifest; exactly one last-good per endpoint once it has a tag)
     * and payload moves (slipway retire). */
    {3, "deploy attempts and steps, tags, payload moves",
     "CREATE TABLE tags(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  name TEXT NOT NULL UNIQUE CHECK(length(name) BETWEEN 12 AND 160),\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  day TEXT NOT NULL CHECK(length(day) = 8),\n"
     "  seq INTEGER NOT NULL CHECK(seq >= 1),\n"
     "  shape_id INTEGER NOT NULL REFERENCES shapes(id),\n"
     "  attempt_id INTEGER REFERENCES deploy_attempts(id),\n"
     "  image TEXT,\n"
     "  created_at INTEGER NOT NULL,\n"
     "  note TEXT,\n"
     "  last_good INTEGER NOT NULL DEFAULT 0 CHECK(last_good IN (0, 1)),\n"
     "  retired_at INTEGER,\n"
     "  retired_why TEXT,\n"
     "  unit_name TEXT,\n"
     "  env_name TEXT,\n"
     "  unit_text TEXT,\n"
     "  env_text TEXT,\n"
     "  payload TEXT NOT NULL CHECK(json_valid(payload)),\n"
     "  UNIQUE(endpoint_id, day, seq),\n"
     "  CHECK((retired_at IS NULL) = (retired_why IS NULL)),\n"
     "  CHECK(NOT (last_good = 1 AND retired_at IS NOT NULL))\n"
     ");\n"
     "CREATE UNIQUE INDEX tags_last_good ON tags(endpoint_id) WHERE last_good = 1;\n"
     "CREATE INDEX tags_shape ON tags(shape_id);\n"
     "CREATE TABLE deploy_attempts(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  shape_id INTEGER NOT NULL REFERENCES shapes(id),\n"
     "  from_tag TEXT,\n"
     "  started_ms INTEGER NOT NULL,\n"
     "  ended_ms INTEGER,\n"
     "  outcome TEXT CHECK(outcome IS NULL OR outcome IN ('committed', 'rolled_back',\n"
     "                     'rollback_failed', 'gate_refused', 'interrupted')),\n"
     "  failure_class TEXT,\n"
     "  downtime_ms INTEGER CHECK(downtime_ms IS NULL OR downtime_ms >= 0),\n"
     "  tag_id INTEGER REFERENCES tags(id),\n"
     "  rule_id INTEGER REFERENCES rules(id),\n"
     "  owner_host TEXT,\n"
     "  owner_boot TEXT,\n"
     "  owner_pid INTEGER,\n"
     "  owner_start INTEGER,\n"
     "  note TEXT,\n"
     "  evidence TEXT CHECK(evidence IS NULL OR json_valid(evidence)),\n"
     "  CHECK((outcome IS NULL) = (ended_ms IS NULL)),\n"
     "  CHECK((failure_class IS NULL) = (outcome IS NULL OR outcome = 'committed')),\n"
     "  CHECK((tag_id IS NOT NULL) = (outcome IS 'committed'))\n"
     ");\n"
     "CREATE INDEX deploy_attempts_endpoint ON deploy_attempts(endpoint_id, id);\n"
     "CREATE UNIQUE INDEX deploy_attempts_open ON deploy_attempts(endpoint_id)\n"
     "  WHERE ended_ms IS NULL;\n"
     "CREATE TABLE deploy_steps(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  attempt_id INTEGER NOT NULL REFERENCES deploy_attempts(id),\n"
     "  seq INTEGER NOT NULL CHECK(seq >= 1),\n"
     "  name TEXT NOT NULL CHECK(length(name) BETWEEN 1 AND 64),\n"
     "  started_ms INTEGER NOT NULL,\n"
     "  ended_ms INTEGER,\n"
     "  outcome TEXT CHECK(outcome IS NULL OR outcome IN ('ok', 'failed', 'skipped',\n"
     "                     'interrupted')),\n"
     "  detail TEXT CHECK(detail IS NULL OR json_valid(detail)),\n"
     "  CHECK((outcome IS NULL) = (ended_ms IS NULL)),\n"
     "  UNIQUE(attempt_id, seq)\n"
     ");\n"
     "CREATE TABLE payload_moves(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  from_path TEXT NOT NULL CHECK(length(from_path) >= 1),\n"
     "  to_path TEXT NOT NULL CHECK(length(to_path) >= 1),\n"
     "  method TEXT NOT NULL CHECK(method IN ('rename', 'copy')),\n"
     "  bytes INTEGER CHECK(bytes IS NULL OR bytes >= 0),\n"
     "  files INTEGER CHECK(files IS NULL OR files >= 0),\n"
     "  moved_at INTEGER NOT NULL,\n"
     "  note TEXT\n"
     ");\n"
     "PRAGMA user_version = 3;\n"},

    /* Version 4: a bench run's shape summary in a column of its own (the endpoint's planned
     * shape as sw_ledger_shape_summary prints it, from params.shape when the run recorded one),
     * so runs can be listed and compared by shape without opening their documents. */
    {4, "bench_runs.shape",
     "ALTER TABLE bench_runs ADD COLUMN shape TEXT;\n"
     "PRAGMA user_version = 4;\n"},

    /* Version 5: the tuner's journal (slipway tune). A run per endpoint, objective and search
     * space (open until it ends: a later `tune` of the same space resumes it), and every probe
     * in the order it was decided: rejected by a gate before any boot, booted and measured, or
     * failed; each with its evidence. */
    {5, "tune runs and probes",
     "CREATE TABLE tune_runs(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  objective TEXT NOT NULL CHECK(length(objective) BETWEEN 1 AND 160),\n"
     "  space TEXT NOT NULL CHECK(length(space) BETWEEN 1 AND 160),\n"
     "  started_ms INTEGER NOT NULL,\n"
     "  ended_ms INTEGER,\n"
     "  outcome TEXT CHECK(outcome IS NULL OR outcome IN ('crowned', 'no_winner', 'budget',\n"
     "                     'interrupted')),\n"
     "  result TEXT CHECK(result IS NULL OR json_valid(result)),\n"
     "  CHECK((outcome IS NULL) = (ended_ms IS NULL))\n"
     ");\n"
     "CREATE INDEX tune_runs_endpoint ON tune_runs(endpoint_id, id);\n"
     "CREATE TABLE tune_probes(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  run_id INTEGER NOT NULL REFERENCES tune_runs(id),\n"
     "  seq INTEGER NOT NULL CHECK(seq >= 1),\n"
     "  phase TEXT NOT NULL CHECK(phase IN ('baseline', 'single', 'combo', 'remeasure')),\n"
     "  candidate TEXT NOT NULL CHECK(length(candidate) BETWEEN 1 AND 2048),\n"
     "  outcome TEXT NOT NULL CHECK(outcome IN ('rejected', 'boot_failed', 'bench_failed',\n"
     "                     'measured')),\n"
     "  gate TEXT,\n"
     "  score REAL,\n"
     "  noise REAL,\n"
     "  recorded_ms INTEGER NOT NULL,\n"
     "  evidence TEXT NOT NULL CHECK(json_valid(evidence)),\n"
     "  CHECK((outcome = 'rejected') = (gate IS NOT NULL)),\n"
     "  UNIQUE(run_id, seq)\n"
     ");\n"
     "PRAGMA user_version = 5;\n"},

    /* Version 6: what a `slipway ladder` rung needs to be resumed and read back without parsing
     * its shape: the knob it moved, the value it tried, the failure class that moved the ladder
     * (capture_oom, kv_refused, runtime_oom, compile, ...) and the evidence (the prediction
     * before the rung, the bounds after it, the engine's figures). */
    {6, "ladder rungs: knob, value, class, evidence",
     "ALTER TABLE ladder_rungs ADD COLUMN knob TEXT;\n"
     "ALTER TABLE ladder_rungs ADD COLUMN value INTEGER;\n"
     "ALTER TABLE ladder_rungs ADD COLUMN class TEXT;\n"
     "ALTER TABLE ladder_rungs ADD COLUMN evidence TEXT\n"
     "  CHECK(evidence IS NULL OR json_valid(evidence));\n"
     "CREATE INDEX ladder_rungs_run ON ladder_rungs(endpoint_id, ladder, rung);\n"
     "PRAGMA user_version = 6;\n"},

    /* Version 7: the endpoint's systemd unit as `slipway status --record` saw it between deploys
     * (a deploy's own watch is in deploy_attempts): NRestarts counts the automatic restarts
     * since the unit was last started on purpose (systemd flushes it on an explicit start), so a
     * rising count with the same deploy is a crash loop nobody watched. One row per look. */
    {7, "unit observations (status --record)",
     "CREATE TABLE unit_observations(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  observed_ms INTEGER NOT NULL,\n"
     "  host TEXT NOT NULL CHECK(length(host) BETWEEN 1 AND 256),\n"
     "  unit TEXT NOT NULL CHECK(length(unit) BETWEEN 1 AND 256),\n"
     "  active TEXT NOT NULL CHECK(length(active) BETWEEN 1 AND 32),\n"
     "  sub TEXT CHECK(sub IS NULL OR length(sub) <= 32),\n"
     "  result TEXT CHECK(result IS NULL OR length(result) <= 32),\n"
     "  n_restarts INTEGER NOT NULL CHECK(n_restarts >= 0),\n"
     "  main_pid INTEGER CHECK(main_pid IS NULL OR main_pid >= 0),\n"
     "  since TEXT CHECK(since IS NULL OR length(since) <= 64)\n"
     ");\n"
     "CREATE INDEX unit_observations_endpoint ON unit_observations(endpoint_id, id);\n"
     "PRAGMA user_version = 7;\n"},

    /* Version 8: what `slipway watch` saw and did between commands: one row per change of an
     * endpoint's state (an observation), per action it took (restart, rollback, a refusal) and
     * per alert and scheduled job. action_key is UNIQUE: an action is keyed by the endpoint and
     * the state change it answers, so a watch restarted after a crash cannot take it twice. */
    {8, "watch events (slipway watch)",
     "CREATE TABLE watch_events(\n"
     "  id INTEGER PRIMARY KEY,\n"
     "  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),\n"
     "  observed_ms INTEGER NOT NULL,\n"
     "  kind TEXT NOT NULL CHECK(kind IN ('observation', 'action', 'alert', 'job')),\n"
     "  state TEXT NOT NULL CHECK(length(state) BETWEEN 1 AND 32),\n"
     "  action TEXT CHECK(action IS NULL OR length(action) <= 64),\n"
     "  action_key TEXT UNIQUE CHECK(action_key IS NULL OR length(action_key) <= 256),\n"
     "  outcome TEXT CHECK(outcome IS NULL OR length(outcome) <= 64),\n"
     "  evidence TEXT CHECK(evidence IS NULL OR json_valid(evidence))\n"
     ");\n"
     "CREATE INDEX watch_events_endpoint ON watch_events(endpoint_id, id);\n"
     "PRAGMA user_version = 8;\n"},
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == SW_LEDGER_SCHEMA_VERSION,
               "one migration per schema version");

static int pragma_int(struct sw_ledger *l, const char *sql, int *v, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(l->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    int ret = rc == SQLITE_OK ? 0 : sw__ledger_dberr(l, e, rc, sql);
    sqlite3_finalize(st);
    return ret;
}

int sw__ledger_user_version(struct sw_ledger *l, int *v, struct sw_err *e)
{
    return pragma_int(l, "PRAGMA user_version", v, e);
}

/* A version-0 file is ours to initialize only when it is empty: refuse someone else's database
 * rather than add tables to it. */
static int check_foreign(struct sw_ledger *l, struct sw_err *e)
{
    int app = 0, tables = 0;
    int rc = pragma_int(l, "PRAGMA application_id", &app, e);
    if (rc)
        return rc;
    rc = pragma_int(l, "SELECT count(*) FROM sqlite_schema", &tables, e);
    if (rc)
        return rc;
    if (app != 0 && app != SW_LEDGER_APP_ID)
        return sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                         "not a slipway ledger (application_id 0x%08x); left untouched",
                         (unsigned)app);
    if (app == 0 && tables > 0)
        return sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                         "an SQLite database with %d schema objects that is not a slipway "
                         "ledger; left untouched",
                         tables);
    return 0;
}

/* Run one statement of the current schema. */
static int run(sqlite3 *db, const char *sql, char **msg)
{
    return sqlite3_exec(db, sql, NULL, NULL, msg);
}

/* The current schema from the descriptors (tables.c), as migrations 1..N leave it, in the order
 * they made it: version by version, the indexes a version added to older tables, then the tables
 * it created with their own indexes (sqlite3's .schema lists a file's objects in that order). */
static int create_current(sqlite3 *db, char **msg)
{
    char sql[8192];
    int src = run(db, "PRAGMA application_id = 1397510231", msg);
    for (int v = 1; src == SQLITE_OK && v <= SW_LEDGER_SCHEMA_VERSION; v++) {
        for (size_t i = 0; src == SQLITE_OK && sw__ledger_tables[i]; i++) {
            const struct sw__index *x = sw__ledger_tables[i]->indexes;
            for (; src == SQLITE_OK && x && x->sql; x++)
                if (x->alter == v)
                    src = run(db, x->sql, msg);
        }
        for (size_t i = 0; src == SQLITE_OK && sw__ledger_tables[i]; i++) {
            const struct sw__table *t = sw__ledger_tables[i];
            if (t->version != v)
                continue;
            if (sw__table_create(t, sql, sizeof(sql)))
                return SQLITE_TOOBIG;
            src = run(db, sql, msg);
            for (const struct sw__index *x = t->indexes; src == SQLITE_OK && x && x->sql; x++)
                if (!x->alter)
                    src = run(db, x->sql, msg);
        }
    }
    if (src != SQLITE_OK)
        return src;
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", SW_LEDGER_SCHEMA_VERSION);
    return run(db, sql, msg);
}

int sw__ledger_build_schema(sqlite3 *db, int version, bool from_migrations, char **msg)
{
    if (!from_migrations && version == SW_LEDGER_SCHEMA_VERSION)
        return create_current(db, msg);
    int src = SQLITE_OK;
    for (size_t i = 0; src == SQLITE_OK && i < SW_ARRAY_LEN(migrations); i++)
        if (migrations[i].version <= version)
            src = sqlite3_exec(db, migrations[i].sql, NULL, NULL, msg);
    return src;
}

/* One step from version `from` to `to`: migration m, or (m NULL) the current schema made fresh. */
static int apply_step(struct sw_ledger *l, int from, int to, const struct migration *m,
                      struct sw_err *e)
{
    const char *what = m ? m->what : "the current schema";
    int rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    int v = 0;
    rc = sw__ledger_user_version(l, &v, e);
    if (rc)
        goto out;
    if (v >= to) /* another process got here first */
        goto out;
    if (v != from) {
        rc = sw_err_at(e, SW_EDB, l->path, 0, 0,
                       "schema version %d, expected %d before "
                       "migration %d",
                       v, from, to);
        goto out;
    }
    if (v == 0) {
        rc = check_foreign(l, e);
        if (rc)
            goto out;
    }
    char *msg = NULL;
    int src = m ? sqlite3_exec(l->db, m->sql, NULL, NULL, &msg) : create_current(l->db, &msg);
    if (src != SQLITE_OK) {
        rc = sw_err_at(e, src == SQLITE_BUSY ? SW_EBUSY : SW_EDB, l->path, 0, 0,
                       "migration %d (%s) failed: %s; the file was left at version %d", to, what,
                       msg ? msg : sqlite3_errstr(src), v);
        sqlite3_free(msg);
        goto out;
    }
    rc = sw__ledger_user_version(l, &v, e);
    if (!rc && v != to)
        rc = sw_err_at(e, SW_EDB, l->path, 0, 0, "migration %d did not set its version", to);
    if (rc)
        goto out;
    rc = sw__ledger_commit(l, e);
    if (!rc)
        sw_log(SW_LOG_INFO, "ledger %s: schema migrated to version %d (%s)", l->path, to, what);
    return rc;
out:
    if (rc)
        sw__ledger_rollback(l);
    else
        rc = sw__ledger_commit(l, e);
    return rc;
}

/* The file's schema must be exactly what version v is in an empty database (the current one:
 * what the descriptors make): no extra tables, indexes, triggers or views, no edited definitions.
 * This is what lets the ledger trust its schema (CHECK constraints call json_valid) even for a
 * file someone handed us, and it also proves on every open that a migrated file equals a fresh
 * one. */
static int check_schema(struct sw_ledger *l, int v, struct sw_err *e)
{
    static const char q[] = "SELECT type, name, tbl_name, sql FROM sqlite_schema "
                            "ORDER BY type, name";
    sqlite3 *ref = NULL;
    sqlite3_stmt *a = NULL, *b = NULL;
    int rc = 0;
    int src = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL);
    if (src == SQLITE_OK)
        src = sw__ledger_build_schema(ref, v, false, NULL);
    if (src == SQLITE_OK)
        src = sqlite3_prepare_v2(ref, q, -1, &a, NULL);
    if (src != SQLITE_OK) {
        rc = sw_err_at(e, SW_EDB, l->path, 0, 0, "building the reference schema: %s",
                       ref ? sqlite3_errmsg(ref) : sqlite3_errstr(src));
        goto out;
    }
    src = sqlite3_prepare_v2(l->db, q, -1, &b, NULL);
    if (src != SQLITE_OK) {
        rc = sw__ledger_dberr(l, e, src, "reading the schema");
        goto out;
    }
    for (;;) {
        int ra = sqlite3_step(a), rb = sqlite3_step(b);
        if (ra == SQLITE_DONE && rb == SQLITE_DONE)
            break;
        if (ra != SQLITE_ROW && ra != SQLITE_DONE) {
            rc = sw_err_at(e, SW_EDB, l->path, 0, 0, "reading the reference schema");
            break;
        }
        if (rb != SQLITE_ROW && rb != SQLITE_DONE) {
            rc = sw__ledger_dberr(l, e, rb, "reading the schema");
            break;
        }
        bool same = ra == rb;
        for (int c = 0; same && c < 4; c++) {
            const char *x = (const char *)sqlite3_column_text(a, c);
            const char *y = (const char *)sqlite3_column_text(b, c);
            same = (!x && !y) || (x && y && !strcmp(x, y));
        }
        if (!same) {
            sqlite3_stmt *odd = rb == SQLITE_ROW ? b : a;
            rc = sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                           "the ledger's schema is not what slipway's migrations 1..%d create "
                           "(%s %s %s '%s'); it was edited by hand or by another program. "
                           "Refusing to use it: export from a copy, or remove the change",
                           v, rb == SQLITE_ROW ? "unexpected" : "missing",
                           (const char *)sqlite3_column_text(odd, 0),
                           rb == SQLITE_ROW && ra == SQLITE_ROW ? "(differs)" : "",
                           (const char *)sqlite3_column_text(odd, 1));
            break;
        }
    }
out:
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    sqlite3_close(ref);
    return rc;
}

int sw__ledger_migrate(struct sw_ledger *l, int target, struct sw_err *e)
{
    int v = 0;
    int rc = sw__ledger_user_version(l, &v, e);
    if (rc)
        return rc;
    if (v != 0) {
        int app = 0;
        rc = pragma_int(l, "PRAGMA application_id", &app, e);
        if (rc)
            return rc;
        if (app != SW_LEDGER_APP_ID)
            return sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                             "not a slipway ledger (application_id 0x%08x, user_version %d); "
                             "left untouched",
                             (unsigned)app, v);
    }
    if (v > SW_LEDGER_SCHEMA_VERSION)
        return sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                         "ledger schema version %d is newer than this slipway understands (%d); "
                         "use a newer slipway. The file was not changed",
                         v, SW_LEDGER_SCHEMA_VERSION);
    if (v < 0)
        return sw_err_at(e, SW_EDB, l->path, 0, 0, "ledger schema version %d is invalid", v);
    if (v < target && l->readonly)
        return sw_err_at(e, SW_EUNSUPPORTED, l->path, 0, 0,
                         "ledger schema version %d needs migrating to %d; open it once "
                         "read-write (any recording command does)",
                         v, SW_LEDGER_SCHEMA_VERSION);
    if (v == 0 && target == SW_LEDGER_SCHEMA_VERSION) {
        rc = apply_step(l, 0, target, NULL, e);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(migrations); i++) {
        const struct migration *m = &migrations[i];
        int now = 0;
        if (m->version > target)
            break;
        rc = sw__ledger_user_version(l, &now, e);
        if (rc)
            return rc;
        if (m->version <= now)
            continue;
        rc = apply_step(l, m->version - 1, m->version, m, e);
        if (rc)
            return rc;
    }
    rc = sw__ledger_user_version(l, &v, e);
    if (rc)
        return rc;
    if (!l->readonly && v != target)
        return sw_err_at(e, SW_EDB, l->path, 0, 0, "schema version %d after migrating to %d", v,
                         target);
    if (v > 0) {
        rc = check_schema(l, v, e);
        if (rc)
            return rc;
    }
    l->schema_version = v;
    return 0;
}
