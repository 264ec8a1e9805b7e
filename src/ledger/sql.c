/*
 * Every SQL statement the ledger runs after the schema exists, in one place so a reviewer can
 * check the rule at a glance: values only ever arrive as bound parameters (?N), never as text
 * pasted into SQL. Optional filters use the `(?N IS NULL OR col = ?N)` form so each statement
 * stays one fixed string.
 *
 * It deliberately holds no schema (schema.c) and no logic.
 */
#include "ledger_internal.h"

_Static_assert(LST__N <= SW__LEDGER_NSTMT, "grow SW__LEDGER_NSTMT in ledger.h");

/* The boot columns every boot query returns, in the order query.c reads them. The summary
 * statements stop before the large documents: SQLite computes every result column of a row when
 * it steps, so a summary that listed them would read each excerpt's overflow pages for nothing. */
#define BOOT_COLS_SUM                                                                              \
    "b.id, e.name, b.shape_id, s.hash, s.canonical, b.engine, b.engine_version, b.started_at, "    \
    "b.ended_at, b.duration_ms, b.outcome, b.failure_class, b.failure_phase, b.log_path, "         \
    "b.source, b.source_line, b.recorded_at, b.ext_id, "                                           \
    "json_extract(b.report, '$.kv_cache_tokens'), json_extract(b.report, '$.max_concurrency') "
#define BOOT_COLS BOOT_COLS_SUM ", b.predicted, b.report, b.failure, b.log_excerpt "
#define BOOT_FROM                                                                                  \
    "FROM boots b JOIN endpoints e ON e.id = b.endpoint_id "                                       \
    "LEFT JOIN shapes s ON s.id = b.shape_id "
/* ?1 endpoint name, ?2 outcome, ?3 shape id, ?4 limit (-1 = none). Two orders, two statements:
 * ORDER BY rowid (either way) needs no sort, where one statement with ORDER BY CASE made SQLite
 * sort every row, documents and all, through a temporary b-tree (3.4 s for 10,000 boots). */
#define BOOT_WHERE                                                                                 \
    "WHERE (?1 IS NULL OR b.endpoint_id = (SELECT id FROM endpoints WHERE name = ?1)) "            \
    "AND (?2 IS NULL OR b.outcome = ?2) AND (?3 IS NULL OR b.shape_id = ?3) "

/* The endpoint's id for an optional endpoint-name filter ?1. */
#define EP_ID "(SELECT id FROM endpoints WHERE name = ?1)"

const char *const sw__ledger_sql[LST__N] = {
    [LST_ENDPOINT_GET] = "SELECT id FROM endpoints WHERE name = ?1",
    [LST_ENDPOINT_INS] = "INSERT INTO endpoints(name, created_at) VALUES(?1, ?2)",
    [LST_ENDPOINT_NAME] = "SELECT name FROM endpoints WHERE id = ?1",
    [LST_SHAPE_GET] = "SELECT id FROM shapes WHERE hash = ?1",
    [LST_SHAPE_INS] = "INSERT INTO shapes(hash, canon_version, canonical, engine, created_at) "
                      "VALUES(?1, ?2, ?3, ?4, ?5)",
    /* substr, not LIKE: a prefix with % or _ in it must not turn into a pattern */
    [LST_SHAPE_PREFIX] = "SELECT id, hash FROM shapes WHERE substr(hash, 1, length(?1)) = ?1 "
                         "ORDER BY id LIMIT 2",
    [LST_BOOT_INS] =
        "INSERT INTO boots(endpoint_id, shape_id, engine, engine_version, started_at, ended_at, "
        "duration_ms, outcome, failure_class, failure_phase, log_path, source, source_line, "
        "recorded_at, predicted, report, failure, log_excerpt, ext_id) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
        "?19)",
    [LST_BOOT_EXISTS] = "SELECT endpoint_id, shape_id FROM boots WHERE id = ?1",
    [LST_USAGE_INS] =
        "INSERT INTO usage(endpoint_id, boot_id, shape_id, device, used_mib, total_mib, source, "
        "taken_at, note, source_line, recorded_at, ext_id, free_mib) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [LST_BATTERY_INS] =
        "INSERT INTO battery_runs(endpoint_id, boot_id, url, started_at, ms, passed, failed, "
        "skipped, ext_id, recorded_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [LST_CHECK_INS] = "INSERT INTO battery_checks(run_id, seq, name, status, evidence, reason, "
                      "ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [LST_BENCH_INS] =
        "INSERT INTO bench_runs(endpoint_id, boot_id, started_at, params, results, chart_path, "
        "source_line, ext_id, recorded_at, shape) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [LST_RUNG_INS] =
        "INSERT INTO ladder_rungs(endpoint_id, ladder, rung, shape_id, boot_id, outcome, note, "
        "source_line, ext_id, recorded_at, knob, value, class, evidence) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [LST_RULE_INS] = "INSERT INTO rules(endpoint_id, expr, reason, failure, boot_id, source, "
                     "source_line, ext_id, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [LST_NOTE_INS] = "INSERT INTO notes(kind, subject_id, text, author, ext_id, created_at) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [LST_EXT_BOOT] = "SELECT id FROM boots WHERE ext_id = ?1",
    [LST_EXT_USAGE] = "SELECT id FROM usage WHERE ext_id = ?1",
    [LST_EXT_BATTERY] = "SELECT id FROM battery_runs WHERE ext_id = ?1",
    [LST_EXT_BENCH] = "SELECT id FROM bench_runs WHERE ext_id = ?1",
    [LST_EXT_RUNG] = "SELECT id FROM ladder_rungs WHERE ext_id = ?1",
    [LST_EXT_RULE] = "SELECT id FROM rules WHERE ext_id = ?1",
    [LST_EXT_NOTE] = "SELECT id FROM notes WHERE ext_id = ?1",
    [LST_EXISTS_ENDPOINT] = "SELECT 1 FROM endpoints WHERE id = ?1",
    [LST_EXISTS_SHAPE] = "SELECT 1 FROM shapes WHERE id = ?1",
    [LST_EXISTS_USAGE] = "SELECT 1 FROM usage WHERE id = ?1",
    [LST_EXISTS_BATTERY] = "SELECT 1 FROM battery_runs WHERE id = ?1",
    [LST_EXISTS_BENCH] = "SELECT 1 FROM bench_runs WHERE id = ?1",
    [LST_EXISTS_RUNG] = "SELECT 1 FROM ladder_rungs WHERE id = ?1",
    [LST_EXISTS_RULE] = "SELECT 1 FROM rules WHERE id = ?1",
    [LST_BOOTS_ASC] = "SELECT " BOOT_COLS_SUM BOOT_FROM BOOT_WHERE "ORDER BY b.id LIMIT ?4",
    [LST_BOOTS_DESC] = "SELECT " BOOT_COLS_SUM BOOT_FROM BOOT_WHERE "ORDER BY b.id DESC LIMIT ?4",
    [LST_BOOTS_FULL_ASC] = "SELECT " BOOT_COLS BOOT_FROM BOOT_WHERE "ORDER BY b.id LIMIT ?4",
    [LST_BOOTS_FULL_DESC] = "SELECT " BOOT_COLS BOOT_FROM BOOT_WHERE "ORDER BY b.id DESC LIMIT ?4",
    [LST_BOOT_ONE] = "SELECT " BOOT_COLS BOOT_FROM "WHERE b.id = ?1",
    /* ?1 endpoint name, ?2 shape id, ?3 boot id, ?4 limit */
    [LST_USAGE_LIST] =
        "SELECT u.id, e.name, u.boot_id, u.shape_id, s.hash, s.canonical, u.device, u.used_mib, "
        "u.total_mib, u.source, u.taken_at, u.note, u.source_line, u.recorded_at, u.ext_id, "
        "u.free_mib "
        "FROM usage u JOIN endpoints e ON e.id = u.endpoint_id "
        "LEFT JOIN shapes s ON s.id = u.shape_id "
        "WHERE (?1 IS NULL OR u.endpoint_id = " EP_ID ") AND (?2 IS NULL OR u.shape_id = ?2) "
        "AND (?3 IS NULL OR u.boot_id = ?3) ORDER BY u.id LIMIT ?4",
    /* the same columns for one boot's readings, by index (the optional-filter form above
     * cannot use one, and this runs once per boot in a full listing) */
    [LST_USAGE_OF_BOOT] =
        "SELECT u.id, e.name, u.boot_id, u.shape_id, s.hash, s.canonical, u.device, u.used_mib, "
        "u.total_mib, u.source, u.taken_at, u.note, u.source_line, u.recorded_at, u.ext_id, "
        "u.free_mib "
        "FROM usage u JOIN endpoints e ON e.id = u.endpoint_id "
        "LEFT JOIN shapes s ON s.id = u.shape_id WHERE u.boot_id = ?1 ORDER BY u.id",
    [LST_NOTES_OF] = "SELECT id, kind, subject_id, text, author, ext_id, created_at FROM notes "
                     "WHERE kind = ?1 AND subject_id IS ?2 ORDER BY id",
    [LST_BAD_SHAPES] =
        "SELECT s.id, s.hash, s.canonical, e.name, e.id, SUM(b.outcome = 'failed'), "
        "SUM(b.outcome = 'ok') FROM boots b JOIN shapes s ON s.id = b.shape_id "
        "JOIN endpoints e ON e.id = b.endpoint_id "
        "WHERE (?1 IS NULL OR b.endpoint_id = " EP_ID ") "
        "GROUP BY s.id, e.id HAVING SUM(b.outcome = 'failed') > 0 ORDER BY s.id, e.id",
    [LST_BAD_FAILURES] = "SELECT id, failure, started_at FROM boots "
                         "WHERE shape_id = ?1 AND endpoint_id = ?2 AND outcome = 'failed' "
                         "ORDER BY id",
    [LST_RULES] = "SELECT r.id, e.name, r.expr, r.reason, r.failure, r.boot_id, r.source, "
                  "r.source_line, r.created_at, r.ext_id FROM rules r "
                  "LEFT JOIN endpoints e ON e.id = r.endpoint_id "
                  "WHERE (?1 IS NULL OR r.endpoint_id IS NULL OR r.endpoint_id = " EP_ID ") "
                  "ORDER BY r.id",
    [LST_BATTERY_LIST] =
        "SELECT r.id, e.name, r.boot_id, r.url, r.started_at, r.ms, r.passed, r.failed, "
        "r.skipped, r.ext_id, r.recorded_at FROM battery_runs r "
        "JOIN endpoints e ON e.id = r.endpoint_id "
        "WHERE (?1 IS NULL OR r.endpoint_id = " EP_ID ") ORDER BY r.id",
    [LST_CHECKS_OF] = "SELECT seq, name, status, evidence, reason, ms FROM battery_checks "
                      "WHERE run_id = ?1 ORDER BY seq",
    [LST_BENCH_LIST] =
        "SELECT r.id, e.name, r.boot_id, r.started_at, r.params, r.results, r.chart_path, "
        "r.source_line, r.ext_id, r.recorded_at FROM bench_runs r "
        "JOIN endpoints e ON e.id = r.endpoint_id "
        "WHERE (?1 IS NULL OR r.endpoint_id = " EP_ID ") ORDER BY r.id",
    [LST_BENCH_ONE] =
        "SELECT r.id, e.name, r.boot_id, r.started_at, r.params, r.results, r.chart_path, "
        "r.source_line, r.ext_id, r.recorded_at, r.shape FROM bench_runs r "
        "JOIN endpoints e ON e.id = r.endpoint_id WHERE r.id = ?1",
    /* ?1 endpoint name, ?2 shape hash: the endpoint's latest run of that shape */
    [LST_BENCH_OF_SHAPE] = "SELECT r.id FROM bench_runs r WHERE r.endpoint_id = " EP_ID " "
                           "AND json_extract(r.params, '$.shape_hash') = ?2 "
                           "ORDER BY r.id DESC LIMIT 1",
    [LST_RUNG_LIST] =
        "SELECT r.id, e.name, r.ladder, r.rung, s.hash, s.canonical, r.boot_id, r.outcome, "
        "r.note, r.source_line, r.ext_id, r.recorded_at, r.shape_id, r.knob, r.value, r.class, "
        "r.evidence FROM ladder_rungs r "
        "JOIN endpoints e ON e.id = r.endpoint_id JOIN shapes s ON s.id = r.shape_id "
        "WHERE (?1 IS NULL OR r.endpoint_id = " EP_ID ") ORDER BY r.id",
    /* With an endpoint filter a note goes with the endpoint its subject belongs to; a shape's
     * note goes with every endpoint that booted, measured or laddered the shape. */
    [LST_NOTE_LIST] =
        "SELECT n.id, n.kind, n.subject_id, n.text, n.author, n.ext_id, n.created_at FROM notes n "
        "WHERE ?1 IS NULL OR " EP_ID " = CASE n.kind "
        "WHEN 'endpoint' THEN n.subject_id "
        "WHEN 'boot' THEN (SELECT endpoint_id FROM boots WHERE id = n.subject_id) "
        "WHEN 'usage' THEN (SELECT endpoint_id FROM usage WHERE id = n.subject_id) "
        "WHEN 'battery' THEN (SELECT endpoint_id FROM battery_runs WHERE id = n.subject_id) "
        "WHEN 'bench' THEN (SELECT endpoint_id FROM bench_runs WHERE id = n.subject_id) "
        "WHEN 'rung' THEN (SELECT endpoint_id FROM ladder_rungs WHERE id = n.subject_id) "
        "WHEN 'rule' THEN (SELECT endpoint_id FROM rules WHERE id = n.subject_id) "
        "WHEN 'shape' THEN (SELECT x.endpoint_id FROM (SELECT endpoint_id, shape_id FROM boots "
        "UNION SELECT endpoint_id, shape_id FROM usage UNION SELECT endpoint_id, shape_id FROM "
        "ladder_rungs) x WHERE x.shape_id = n.subject_id AND x.endpoint_id = " EP_ID ") "
        "ELSE NULL END ORDER BY n.id",
    [LST_ENDPOINT_LIST] = "SELECT id, name, created_at FROM endpoints "
                          "WHERE ?1 IS NULL OR name = ?1 ORDER BY id",
    [LST_SHAPE_LIST] =
        "SELECT id, hash, canon_version, canonical, created_at FROM shapes "
        "WHERE ?1 IS NULL OR id IN (SELECT shape_id FROM boots WHERE endpoint_id = " EP_ID
        " UNION SELECT shape_id FROM usage WHERE endpoint_id = " EP_ID
        " UNION SELECT shape_id FROM ladder_rungs WHERE endpoint_id = " EP_ID ") ORDER BY id",
    [LST_COUNTS] = "SELECT (SELECT count(*) FROM endpoints), (SELECT count(*) FROM shapes), "
                   "(SELECT count(*) FROM boots), (SELECT count(*) FROM usage), "
                   "(SELECT count(*) FROM battery_runs), (SELECT count(*) FROM battery_checks), "
                   "(SELECT count(*) FROM bench_runs), (SELECT count(*) FROM ladder_rungs), "
                   "(SELECT count(*) FROM rules), (SELECT count(*) FROM notes)",
    [LST_JSON_VALID] = "SELECT json_valid(?1)",
};
