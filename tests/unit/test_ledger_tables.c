/*
 * The ledger's tables described once (src/ledger/tables.c): the schema the descriptors make is,
 * byte for byte and in the same order, what the frozen migrations 1..N leave; every statement
 * derived from a table's view prepares, and a boots summary selects none of their documents; the
 * descriptors hold together (columns numbered 1..n once each, added columns after the created
 * ones, a key once per document, a field the SELECT reads is a column or has an expression);
 * the only on-open hook is the deploy journal's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/ledger.h>

#include "ledger/deploy_internal.h"
#include "swtest.h"

#include <string.h>

/* sqlite_schema of a schema built in memory, one line per object in creation order. */
static char *schema_of(bool from_migrations)
{
    sqlite3 *db = NULL;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    int src = sw__ledger_build_schema(db, SW_LEDGER_SCHEMA_VERSION, from_migrations, &msg);
    if (src != SQLITE_OK)
        fail_msg("building the schema (%s): %s", from_migrations ? "migrations" : "descriptors",
                 msg ? msg : sqlite3_errstr(src));
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    static const char objects[] = "SELECT type, name, tbl_name, coalesce(sql, '-') "
                                  "FROM sqlite_schema ORDER BY rowid";
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, objects, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        assert_int_equal(sw_buf_printf(&b, "%s %s %s %s\n", sqlite3_column_text(st, 0),
                                       sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
                                       sqlite3_column_text(st, 3)),
                         0);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sw_buf_printf(&b, "application_id %d\n", sqlite3_column_int(st, 0)), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return sw_buf_steal(&b);
}

static void test_descriptors_make_the_migrated_schema(void **state)
{
    char *fresh = schema_of(false);
    char *migrated = schema_of(true);
    if (strcmp(fresh, migrated))
        fail_msg("the descriptors' schema differs from migrations 1..%d:\n--- descriptors\n%s\n"
                 "--- migrations\n%s",
                 SW_LEDGER_SCHEMA_VERSION, fresh, migrated);
    assert_non_null(strstr(fresh, "CREATE TABLE \"notes\"("));
    sw_free(fresh);
    sw_free(migrated);
}

static void test_descriptors_hold_together(void **state)
{
    size_t tables = 0;
    for (size_t i = 0; sw__ledger_tables[i]; i++, tables++) {
        const struct sw__table *t = sw__ledger_tables[i];
        int ncols = 0, last_created = 0, first_added = 0;
        for (size_t k = 0; k < t->ncols; k++)
            ncols += t->cols[k].name != NULL;
        for (int col = 1; col <= ncols; col++) {
            int found = 0;
            for (size_t k = 0; k < t->ncols; k++) {
                const struct sw__col *c = &t->cols[k];
                if (!c->name || c->col != col)
                    continue;
                found++;
                if (c->alter && !first_added)
                    first_added = col;
                if (!c->alter)
                    last_created = col;
            }
            if (found != 1)
                fail_msg("%s: column %d is described %d times", t->name, col, found);
        }
        if (first_added && first_added < last_created)
            fail_msg("%s: a column added by ALTER TABLE stands before a created one", t->name);
        const unsigned views[] = {SW__V_EXPORT, SW__V_LIST, SW__V_FULL, SW__V_OF};
        for (size_t v = 0; v < SW_ARRAY_LEN(views); v++) {
            for (size_t k = 0; k < t->ncols; k++) {
                const struct sw__col *c = &t->cols[k];
                if (!(c->views & views[v]))
                    continue;
                if (!c->name && !c->expr && c->kind != SW__ROWS)
                    fail_msg("%s.%s: in a view but neither a column nor computed", t->name,
                             sw__col_key(c));
                for (size_t j = k + 1; j < t->ncols; j++)
                    if ((t->cols[j].views & views[v]) &&
                        !strcmp(sw__col_key(c), sw__col_key(&t->cols[j])))
                        fail_msg("%s: key %s twice in one document", t->name, sw__col_key(c));
            }
        }
    }
    assert_int_equal(tables, 18);
}

static void test_every_statement_prepares(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_ledger l;
    struct sw_err e;
    assert_int_equal(sw_ledger_open(&l, swt_join(dir, "l.sqlite"), NULL, &e), 0);
    for (int i = 0; i < LST__N; i++) {
        sqlite3_stmt *st = NULL;
        if (sw__ledger_stmt(&l, (enum sw__lst)i, &st, &e))
            fail_msg("statement %d: %s", i, e.msg);
    }
    sw_ledger_close(&l);
    swt_tmpdir_free(dir);
}

/* The statements derived from a view: a summary of boots reads none of their documents (SQLite
 * computes every result column of a row, so listing them would read each excerpt's overflow
 * pages); the joins follow the columns (NOT NULL: JOIN, else LEFT JOIN). */
static void test_derived_statements(void **state)
{
    char buf[4096];
    const char *sum = sw__ledger_sql_text(LST_BOOTS_ASC, buf, sizeof(buf));
    assert_non_null(sum);
    assert_non_null(strstr(sum, "json_extract(t.report, '$.kv_cache_tokens')"));
    const char *docs[] = {", t.report,",      ", t.predicted,",      ", t.failure,",
                          ", t.log_excerpt,", ", t.report FROM",     ", t.predicted FROM",
                          ", t.failure FROM", ", t.log_excerpt FROM"};
    for (size_t i = 0; i < SW_ARRAY_LEN(docs); i++)
        if (strstr(sum, docs[i]))
            fail_msg("the boots summary selects %s: %s", docs[i], sum);
    const char *usage = sw__ledger_sql_text(LST_USAGE_LIST, buf, sizeof(buf));
    assert_non_null(strstr(usage, " JOIN endpoints e ON e.id = t.endpoint_id"));
    assert_null(strstr(usage, "LEFT JOIN endpoints"));
    assert_non_null(strstr(usage, " LEFT JOIN shapes s ON s.id = t.shape_id"));
    const char *rules = sw__ledger_sql_text(LST_RULES, buf, sizeof(buf));
    assert_non_null(strstr(rules, " LEFT JOIN endpoints e ON e.id = t.endpoint_id"));
    char tiny[32];
    assert_null(sw__ledger_sql_text(LST_BOOTS_FULL_ASC, tiny, sizeof(tiny)));
}

/* The generic open names no table's upkeep: it runs the hooks the descriptors name, and the one
 * there is the deploy journal's (that a read-write open recovers through it and a read-only one
 * does not is test_ledger_deploy.c's test_interrupted_by_kill). */
static void test_on_open_hooks(void **state)
{
    int hooked = 0;
    for (size_t i = 0; sw__ledger_tables[i]; i++) {
        if (!sw__ledger_tables[i]->on_open)
            continue;
        hooked++;
        assert_string_equal(sw__ledger_tables[i]->name, "deploy_attempts");
        assert_true(sw__ledger_tables[i]->on_open == sw__dep_on_open);
    }
    assert_int_equal(hooked, 1);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptors_make_the_migrated_schema),
        cmocka_unit_test(test_descriptors_hold_together),
        cmocka_unit_test(test_every_statement_prepares),
        cmocka_unit_test(test_derived_statements),
        cmocka_unit_test(test_on_open_hooks),
    };
    return cmocka_run_group_tests_name("ledger_tables", tests, NULL, NULL);
}
