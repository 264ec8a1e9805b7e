/*
 * Every SQL statement the ledger runs after the schema exists, in one place so a reviewer can
 * check the rule at a glance: values only ever arrive as bound parameters (?N), never as text
 * pasted into SQL. Optional filters use the `(?N IS NULL OR col = ?N)` form so each statement
 * stays one fixed string. The statements that read rows as JSON are a table's view (its SELECT
 * list, derived from the descriptors in tables.c, the row aliased t) and the tail written here.
 *
 * It deliberately holds no schema (schema.c, tables.c) and no logic.
 */
#include "ledger_internal.h"

#include <stdio.h>
#include <string.h>

_Static_assert(LST__N <= SW__LEDGER_NSTMT, "grow SW__LEDGER_NSTMT in ledger.h");

/* ?1 endpoint name, ?2 outcome, ?3 shape id, ?4 limit (-1 = none). Two orders, two statements:
 * ORDER BY rowid (either way) needs no sort, where one statement with ORDER BY CASE made SQLite
 * sort every row, documents and all, through a temporary b-tree (3.4 s for 10,000 boots). The
 * summary view stops before the large documents: SQLite computes every result column of a row
 * when it steps, so a summary that listed them would read each excerpt's overflow pages for
 * nothing. */
#define BOOT_WHERE                                                                                 \
    "WHERE (?1 IS NULL OR t.endpoint_id = (SELECT id FROM endpoints WHERE name = ?1)) "            \
    "AND (?2 IS NULL OR t.outcome = ?2) AND (?3 IS NULL OR t.shape_id = ?3) "

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
    [LST_BAD_SHAPES] =
        "SELECT s.id, s.hash, s.canonical, e.name, e.id, SUM(b.outcome = 'failed'), "
        "SUM(b.outcome = 'ok') FROM boots b JOIN shapes s ON s.id = b.shape_id "
        "JOIN endpoints e ON e.id = b.endpoint_id "
        "WHERE (?1 IS NULL OR b.endpoint_id = " EP_ID ") "
        "GROUP BY s.id, e.id HAVING SUM(b.outcome = 'failed') > 0 ORDER BY s.id, e.id",
    [LST_BAD_FAILURES] = "SELECT id, failure, started_at FROM boots "
                         "WHERE shape_id = ?1 AND endpoint_id = ?2 AND outcome = 'failed' "
                         "ORDER BY id",
    /* ?1 endpoint name, ?2 shape hash: the endpoint's latest run of that shape */
    [LST_BENCH_OF_SHAPE] = "SELECT r.id FROM bench_runs r WHERE r.endpoint_id = " EP_ID " "
                           "AND json_extract(r.params, '$.shape_hash') = ?2 "
                           "ORDER BY r.id DESC LIMIT 1",
    [LST_COUNTS] = "SELECT (SELECT count(*) FROM endpoints), (SELECT count(*) FROM shapes), "
                   "(SELECT count(*) FROM boots), (SELECT count(*) FROM usage), "
                   "(SELECT count(*) FROM battery_runs), (SELECT count(*) FROM battery_checks), "
                   "(SELECT count(*) FROM bench_runs), (SELECT count(*) FROM ladder_rungs), "
                   "(SELECT count(*) FROM rules), (SELECT count(*) FROM notes)",
    [LST_JSON_VALID] = "SELECT json_valid(?1)",
};

/* ?1 endpoint name, ?2 shape id, ?3 boot id, ?4 limit */
#define USAGE_WHERE                                                                                \
    "WHERE (?1 IS NULL OR t.endpoint_id = " EP_ID ") AND (?2 IS NULL OR t.shape_id = ?2) "         \
    "AND (?3 IS NULL OR t.boot_id = ?3) ORDER BY t.id"
/* ?1 endpoint name */
#define EP_WHERE "WHERE (?1 IS NULL OR t.endpoint_id = " EP_ID ") ORDER BY t.id"
#define RULE_WHERE                                                                                 \
    "WHERE (?1 IS NULL OR t.endpoint_id IS NULL OR t.endpoint_id = " EP_ID ") ORDER BY t.id"

#define B(view, tail)                                                                              \
    {                                                                                              \
        &sw__t_boots, SW__V_##view, tail                                                           \
    }
const struct sw__rows sw__ledger_rows[LST__N] = {
    [LST_BOOTS_ASC] = B(LIST, BOOT_WHERE "ORDER BY t.id LIMIT ?4"),
    [LST_BOOTS_DESC] = B(LIST, BOOT_WHERE "ORDER BY t.id DESC LIMIT ?4"),
    [LST_BOOTS_FULL_ASC] = B(FULL, BOOT_WHERE "ORDER BY t.id LIMIT ?4"),
    [LST_BOOTS_FULL_DESC] = B(FULL, BOOT_WHERE "ORDER BY t.id DESC LIMIT ?4"),
    [LST_BOOTS_EXPORT] = B(EXPORT, BOOT_WHERE "ORDER BY t.id"),
    [LST_BOOT_ONE] = B(FULL, "WHERE t.id = ?1"),
    [LST_USAGE_LIST] = {&sw__t_usage, SW__V_LIST, USAGE_WHERE " LIMIT ?4"},
    [LST_USAGE_EXPORT] = {&sw__t_usage, SW__V_EXPORT, USAGE_WHERE},
    /* one boot's readings, by index (the optional-filter form above cannot use one, and this
     * runs once per boot in a full listing) */
    [LST_USAGE_OF_BOOT] = {&sw__t_usage, SW__V_LIST, "WHERE t.boot_id = ?1 ORDER BY t.id"},
    [LST_NOTES_OF_BOOT] = {&sw__t_notes, SW__V_OF,
                           "WHERE t.kind = 'boot' AND t.subject_id IS ?1 ORDER BY t.id"},
    [LST_RULES] = {&sw__t_rules, SW__V_LIST, RULE_WHERE},
    [LST_RULES_EXPORT] = {&sw__t_rules, SW__V_EXPORT, RULE_WHERE},
    [LST_BATTERY_LIST] = {&sw__t_battery_runs, SW__V_EXPORT, EP_WHERE},
    [LST_CHECKS_OF] = {&sw__t_battery_checks, SW__V_EXPORT, "WHERE t.run_id = ?1 ORDER BY t.seq"},
    [LST_BENCH_LIST] = {&sw__t_bench_runs, SW__V_EXPORT, EP_WHERE},
    [LST_BENCH_ONE] = {&sw__t_bench_runs, SW__V_FULL, "WHERE t.id = ?1"},
    [LST_RUNG_LIST] = {&sw__t_ladder_rungs, SW__V_EXPORT, EP_WHERE},
    /* With an endpoint filter a note goes with the endpoint its subject belongs to; a shape's
     * note goes with every endpoint that booted, measured or laddered the shape. */
    [LST_NOTE_LIST] =
        {&sw__t_notes, SW__V_EXPORT,
         "WHERE ?1 IS NULL OR " EP_ID " = CASE t.kind "
         "WHEN 'endpoint' THEN t.subject_id "
         "WHEN 'boot' THEN (SELECT endpoint_id FROM boots WHERE id = t.subject_id) "
         "WHEN 'usage' THEN (SELECT endpoint_id FROM usage WHERE id = t.subject_id) "
         "WHEN 'battery' THEN (SELECT endpoint_id FROM battery_runs WHERE id = t.subject_id) "
         "WHEN 'bench' THEN (SELECT endpoint_id FROM bench_runs WHERE id = t.subject_id) "
         "WHEN 'rung' THEN (SELECT endpoint_id FROM ladder_rungs WHERE id = t.subject_id) "
         "WHEN 'rule' THEN (SELECT endpoint_id FROM rules WHERE id = t.subject_id) "
         "WHEN 'shape' THEN (SELECT x.endpoint_id FROM (SELECT endpoint_id, shape_id FROM boots "
         "UNION SELECT endpoint_id, shape_id FROM usage UNION SELECT endpoint_id, shape_id FROM "
         "ladder_rungs) x WHERE x.shape_id = t.subject_id AND x.endpoint_id = " EP_ID ") "
         "ELSE NULL END ORDER BY t.id"},
    [LST_MOVES] = {&sw__t_payload_moves, SW__V_LIST, "ORDER BY t.id"},
    /* ?1 endpoint name or NULL, ?2 limit (-1 all) */
    [LST_UNIT_OBS] = {&sw__t_unit_observations, SW__V_LIST,
                      "WHERE ?1 IS NULL OR e.name = ?1 ORDER BY t.id DESC LIMIT ?2"},
    /* ?1 endpoint name or NULL, ?2 kind or NULL, ?3 limit (-1 all) */
    [LST_WATCH] = {&sw__t_watch_events, SW__V_LIST,
                   "WHERE (?1 IS NULL OR e.name = ?1) AND (?2 IS NULL OR t.kind = ?2) "
                   "ORDER BY t.id DESC LIMIT ?3"},
    [LST_ENDPOINT_LIST] = {&sw__t_endpoints, SW__V_EXPORT,
                           "WHERE ?1 IS NULL OR t.name = ?1 ORDER BY t.id"},
    [LST_SHAPE_LIST] =
        {&sw__t_shapes, SW__V_EXPORT,
         "WHERE ?1 IS NULL OR t.id IN (SELECT shape_id FROM boots WHERE endpoint_id = " EP_ID
         " UNION SELECT shape_id FROM usage WHERE endpoint_id = " EP_ID
         " UNION SELECT shape_id FROM ladder_rungs WHERE endpoint_id = " EP_ID ") ORDER BY t.id"},
};

const char *sw__ledger_sql_text(enum sw__lst which, char *buf, size_t n)
{
    const struct sw__rows *r = &sw__ledger_rows[which];
    if (!r->table)
        return sw__ledger_sql[which];
    if (sw__table_select(r->table, r->view, buf, n))
        return NULL;
    size_t len = strlen(buf);
    int w = snprintf(buf + len, n - len, " %s", r->tail);
    return w < 0 || (size_t)w >= n - len ? NULL : buf;
}
