/*
 * ledger, against real SQLite files: opening (settings, refusals), migrations (a frozen v1 file
 * opened by current code, a future version refused), every record kind with its checks, queries,
 * export -> import round trip, atomic and idempotent imports, the seed fixture, busy handling,
 * and allocation-failure torture of the record and query paths (nothing half-recorded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/ledger.h>

#include <sqlite3.h>

#include "swledger.h"
#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int setup(void **state)
{
    *state = swl_fx_open("sub/dir/fleet.ledger.sqlite");
    return 0;
}

static int teardown(void **state)
{
    swl_fx_close(*state);
    return 0;
}

static int64_t count(struct sw_ledger *l, const char *table)
{
    json_t *c = NULL;
    struct sw_err e;
    if (sw_ledger_counts(l, &c, &e))
        fail_msg("counts: %s", e.msg);
    int64_t n = json_integer_value(json_object_get(c, table));
    json_decref(c);
    return n;
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const char *VLLM_SHAPE =
    "{\"engine\":\"vllm\",\"model\":{\"name\":\"Q\",\"quant\":\"fp8\"},\"tp\":2,\"ctx\":262144,"
    "\"slots\":3,\"kv_dtype\":\"fp8\",\"kv_bytes\":6100000000,\"mnbt\":2048}";

static int64_t boot(struct sw_ledger *l, const char *endpoint, const char *shape,
                    const char *report, const char *failure)
{
    json_t *s = shape ? swl_json(shape) : NULL, *r = report ? swl_json(report) : NULL;
    json_t *f = failure ? swl_json(failure) : NULL;
    struct sw_ledger_boot b = {.endpoint = endpoint,
                               .shape = s,
                               .engine = "vllm",
                               .engine_version = "0.30",
                               .started_at = 1790812800,
                               .ended_at = 1790813220,
                               .duration_ms = 420000,
                               .report = r,
                               .failure = f,
                               .source = "test",
                               .log_excerpt = "INFO booted\n"};
    if (s && json_is_string(json_object_get(s, "engine")))
        b.engine = json_string_value(json_object_get(s, "engine"));
    int64_t id = 0;
    struct sw_err e;
    if (sw_ledger_record_boot(l, &b, &id, &e))
        fail_msg("record_boot: %s", e.msg);
    json_decref(s);
    json_decref(r);
    json_decref(f);
    return id;
}

/* ---------------------------------------------------------------------------------------------
 */

static void test_open_settings(void **state)
{
    struct swl_fx *f = *state;
    assert_int_equal(f->l.schema_version, SW_LEDGER_SCHEMA_VERSION);
    /* the directory was created private */
    struct stat st;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/sub/dir", f->dir);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    sqlite3 *db = f->l.db;
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    assert_int_equal(sql_int(db, "PRAGMA synchronous"), 2); /* FULL */
    assert_int_equal(sql_int(db, "PRAGMA foreign_keys"), 1);
    assert_int_equal(sql_int(db, "PRAGMA user_version"), SW_LEDGER_SCHEMA_VERSION);
    assert_int_equal(sql_int(db, "PRAGMA application_id"), 0x534C5057);
    /* reopening an up-to-date file changes nothing and works read-only too */
    struct sw_ledger r;
    struct sw_err e;
    struct sw_ledger_open_opts ro = {.readonly = true};
    assert_int_equal(sw_ledger_open(&r, f->path, &ro, &e), 0);
    int64_t id;
    assert_int_equal(sw_ledger_endpoint_id(&r, "x", true, &id, &e), SW_ENOENT);
    sw_ledger_close(&r);
    sw_ledger_close(&r); /* twice is fine */
    bool ok = false;
    assert_int_equal(sw_ledger_verify(&f->l, &ok, &e), 0);
    assert_true(ok);
}

/* A zero-byte file is an uninitialised ledger: read-only says so and leaves it at 0 bytes,
 * read-write initialises it. A page of garbage is refused by a read-write open (quick_check),
 * naming the file, before anything is written. */
static void test_open_empty_and_corrupt(void **state)
{
    struct swl_fx *f = *state;
    struct sw_ledger l;
    struct sw_err e;
    struct stat st;
    char p[4096];
    struct sw_ledger_open_opts ro = {.readonly = true};

    snprintf(p, sizeof(p), "%s/empty.sqlite", f->dir);
    swt_write(p, "", 0);
    assert_int_equal(sw_ledger_open(&l, p, &ro, &e), SW_EDB);
    assert_string_equal(e.where, p);
    swt_has_all("e.msg", e.msg, "empty (0 bytes)", "uninitialised ledger", NULL);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), 0);
    sw_ledger_close(&l);
    assert_int_equal(sw_ledger_open(&l, p, &ro, &e), 0);
    sw_ledger_close(&l);

    snprintf(p, sizeof(p), "%s/corrupt.sqlite", f->dir);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), 0);
    for (int i = 0; i < 40; i++)
        boot(&l, "ep", VLLM_SHAPE, NULL, NULL);
    sw_ledger_close(&l);
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size >= 8 * 4096);
    FILE *fp = fopen(p, "r+b");
    assert_non_null(fp);
    char junk[4096];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(fseek(fp, 4 * 4096, SEEK_SET), 0);
    assert_int_equal(fwrite(junk, 1, sizeof(junk), fp), sizeof(junk));
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), SW_EDB);
    assert_string_equal(e.where, p);
    assert_non_null(strstr(e.msg, "corrupt (PRAGMA quick_check: "));
    assert_null(strstr(e.msg, "\n"));
    assert_null(l.db);
}

static void test_open_refusals(void **state)
{
    struct swl_fx *f = *state;
    struct sw_ledger l;
    struct sw_err e;
    char p[4096];
    struct sw_ledger_open_opts nocreate = {.create = false};

    snprintf(p, sizeof(p), "%s/missing.sqlite", f->dir);
    assert_int_equal(sw_ledger_open(&l, p, &nocreate, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "no ledger here"));
    struct stat st;
    assert_int_not_equal(stat(p, &st), 0); /* not created */

    assert_int_equal(sw_ledger_open(&l, f->dir, NULL, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "directory"));

    /* a 403 page saved where the ledger should be */
    snprintf(p, sizeof(p), "%s/html.sqlite", f->dir);
    const char *html = "<!DOCTYPE html><html><body>403 Forbidden</body></html>\n";
    swt_write_str(p, html);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), SW_EDB);
    swt_has_all("e.msg", e.msg, "not an SQLite database", "HTML", NULL);
    char *back = NULL;
    size_t n = 0;
    assert_int_equal(sw_read_file(p, 1 << 20, &back, &n, &e), 0);
    assert_string_equal(back, html); /* untouched */
    sw_free(back);

    /* someone else's database */
    snprintf(p, sizeof(p), "%s/other.sqlite", f->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", 0, 0, 0),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "not a slipway ledger"));
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM sqlite_schema"), 1);
    sqlite3_close(db);

    /* a ledger from a newer slipway: refused, left exactly as it was */
    snprintf(p, sizeof(p), "%s/future.sqlite", f->dir);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), 0);
    boot(&l, "ep", VLLM_SHAPE, NULL, NULL);
    sw_ledger_close(&l);
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    char fut[64];
    snprintf(fut, sizeof(fut), "PRAGMA user_version = %d", SW_LEDGER_SCHEMA_VERSION + 1);
    assert_int_equal(sqlite3_exec(db, fut, 0, 0, 0), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), SW_EUNSUPPORTED);
    snprintf(fut, sizeof(fut), "schema version %d is newer", SW_LEDGER_SCHEMA_VERSION + 1);
    assert_non_null(strstr(e.msg, fut));
    char cur[16];
    snprintf(cur, sizeof(cur), "(%d)", SW_LEDGER_SCHEMA_VERSION);
    assert_non_null(strstr(e.msg, cur));
    assert_non_null(strstr(e.msg, "not changed"));
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sql_int(db, "PRAGMA user_version"), SW_LEDGER_SCHEMA_VERSION + 1);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM boots"), 1);
    sqlite3_close(db);

    /* a schema edited by hand (here: a trigger) is refused before anything runs on it */
    snprintf(p, sizeof(p), "%s/edited.sqlite", f->dir);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), 0);
    sw_ledger_close(&l);
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TRIGGER t AFTER INSERT ON boots BEGIN "
                                  "DELETE FROM boots; END;",
                                  0, 0, 0),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "unexpected trigger"));
}

/* Load the frozen version-1 file and open it with this code. */
static void load_v1(const char *path)
{
    char *sql = NULL;
    size_t n = 0;
    struct sw_err e;
    if (sw_read_file(swt_src("tests/data/ledger/v1.sql"), 1 << 20, &sql, &n, &e))
        fail_msg("%s", e.msg);
    sqlite3 *db = NULL;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, 0, 0, &msg) != SQLITE_OK)
        fail_msg("v1.sql: %s", msg);
    assert_int_equal(sql_int(db, "PRAGMA user_version"), 1);
    sqlite3_close(db);
    sw_free(sql);
}

static void test_migrate_v1(void **state)
{
    struct swl_fx *f = *state;
    char p[4096];
    struct sw_ledger l;
    struct sw_err e;
    snprintf(p, sizeof(p), "%s/v1.sqlite", f->dir);
    load_v1(p);

    /* read-only cannot migrate, and says how */
    struct sw_ledger_open_opts ro = {.readonly = true};
    assert_int_equal(sw_ledger_open(&l, p, &ro, &e), SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "needs migrating"));

    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), 0);
    assert_int_equal(l.schema_version, SW_LEDGER_SCHEMA_VERSION);
    /* the version-1 rows are all there */
    assert_int_equal(count(&l, "boots"), 2);
    assert_int_equal(count(&l, "usage"), 2);
    assert_int_equal(count(&l, "notes"), 2);
    json_t *b = NULL;
    assert_int_equal(sw_ledger_boot(&l, 1, &b, &e), 0);
    assert_string_equal(json_string_value(json_object_get(b, "engine_version")), "b6000");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "report"), "n_ctx")),
                     524288);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(b, "notes"), 0), "text")),
        "a v1 note");
    json_t *u = json_array_get(json_object_get(b, "usage"), 0);
    assert_int_equal(json_integer_value(json_object_get(u, "free_mib")), 4386);
    json_decref(b);
    /* what version 2 added works on the migrated file */
    json_t *doc = swl_json("{\"checks\":[{\"name\":\"readiness\",\"status\":\"pass\",\"ms\":3}]}");
    int64_t run = 0, rule = 0, note = 0;
    assert_int_equal(sw_ledger_record_battery(&l, "frank-small", 1, NULL, 0, doc, &run, &e), 0);
    json_decref(doc);
    struct sw_ledger_rule_rec r = {
        .endpoint = "frank-small", .expr = "slots == 2", .reason = "test", .boot_id = 1};
    assert_int_equal(sw_ledger_record_rule(&l, &r, &rule, &e), 0);
    assert_int_equal(sw_ledger_record_note(&l, "rule", rule, "widened note kinds", NULL, &note, &e),
                     0);
    assert_true(note > 2); /* ids continue after the copied notes */
    sw_ledger_close(&l);

    /* a migrated file has exactly the schema of a fresh one (open checks it every time; here
     * explicitly, row by row) */
    assert_true(swl_same_schema(p, f->path) > 15);
}

static void test_record_and_query_boots(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    int64_t b1 = boot(&f->l, "frank-primary", VLLM_SHAPE,
                      "{\"kv_cache_tokens\":792069,\"max_concurrency\":3.02}", NULL);
    /* the same shape written another way is the same shape row */
    int64_t b2 = boot(&f->l, "frank-primary",
                      "{\"engine\":\"vllm\",\"model\":{\"quant\":\"FP8\",\"name\":\"Q\"},"
                      "\"tensor_parallel_size\":2,\"max_model_len\":\"256Ki\",\"seqs\":3,"
                      "\"kv_cache_dtype\":\"fp8\",\"kv_bytes\":6.1e9,"
                      "\"max_num_batched_tokens\":2048}",
                      NULL, "{\"class\":\"oom\",\"phase\":\"graph_capture\",\"line\":412}");
    int64_t b3 = boot(&f->l, "frank-small", NULL, NULL, NULL);
    assert_true(b1 < b2 && b2 < b3);
    assert_int_equal(count(&f->l, "shapes"), 1);
    assert_int_equal(count(&f->l, "endpoints"), 2);

    json_t *all = NULL;
    struct sw_ledger_query q = {.endpoint = "frank-primary"};
    assert_int_equal(sw_ledger_boots(&f->l, &q, &all, &e), 0);
    assert_int_equal(json_array_size(all), 2);
    json_t *s0 = json_array_get(all, 0);
    assert_int_equal(json_integer_value(json_object_get(s0, "id")), b1);
    assert_int_equal(json_integer_value(json_object_get(s0, "kv_cache_tokens")), 792069);
    assert_string_equal(json_string_value(json_object_get(s0, "outcome")), "ok");
    assert_null(json_object_get(s0, "report")); /* summaries stay small */
    json_t *s1 = json_array_get(all, 1);
    assert_string_equal(json_string_value(json_object_get(s1, "failure_class")), "oom");
    assert_string_equal(json_string_value(json_object_get(s1, "failure_phase")), "graph_capture");
    json_decref(all);

    /* what calibrate reads: every boot of an endpoint in full, with shape and figures */
    q.full = true;
    q.newest_first = true;
    assert_int_equal(sw_ledger_boots(&f->l, &q, &all, &e), 0);
    json_t *full = json_array_get(all, 1);
    assert_int_equal(json_integer_value(json_object_get(full, "id")), b1);
    json_t *canon = json_object_get(json_object_get(full, "shape"), "canonical");
    assert_int_equal(json_integer_value(json_object_get(canon, "ctx")), 262144);
    assert_int_equal(json_integer_value(json_object_get(canon, "kv_bytes")), 6100000000LL);
    assert_true(json_real_value(
                    json_object_get(json_object_get(full, "report"), "max_concurrency")) == 3.02);
    assert_string_equal(json_string_value(json_object_get(full, "started_at")),
                        "2026-10-01T00:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(full, "duration_ms")), 420000);
    json_decref(all);

    q = (struct sw_ledger_query){.outcome = "failed"};
    assert_int_equal(sw_ledger_boots(&f->l, &q, &all, &e), 0);
    assert_int_equal(json_array_size(all), 1);
    json_decref(all);
    q = (struct sw_ledger_query){.limit = 1, .newest_first = true};
    assert_int_equal(sw_ledger_boots(&f->l, &q, &all, &e), 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 0), "id")), b3);
    json_decref(all);
    q = (struct sw_ledger_query){.outcome = "maybe"};
    assert_int_equal(sw_ledger_boots(&f->l, &q, &all, &e), SW_EINVAL);

    json_t *one = NULL;
    assert_int_equal(sw_ledger_boot(&f->l, 999, &one, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "no boot 999"));
}

static void test_boot_checks(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    json_t *shape = swl_json(VLLM_SHAPE);
    json_t *arr = swl_json("[1]");
    json_t *noclass = swl_json("{\"phase\":\"load\"}");
    json_t *badphase = swl_json("{\"class\":\"oom\",\"phase\":\"Load Phase\"}");
    struct sw_ledger_boot b = {.endpoint = "ep", .engine = "llama.cpp", .shape = shape};
    int64_t id;
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "engine 'llama.cpp' but its shape says 'vllm'"));
    b = (struct sw_ledger_boot){.endpoint = "ep", .engine = "vllm", .report = arr};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "report must be a JSON object"));
    b = (struct sw_ledger_boot){.endpoint = "ep", .engine = "vllm", .failure = noclass};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "failure.class"));
    b.failure = badphase;
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    b = (struct sw_ledger_boot){.endpoint = "bad name", .engine = "vllm"};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "endpoint name"));
    b = (struct sw_ledger_boot){.endpoint = "ep", .engine = "vllm", .started_at = 1790812800000};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "unix seconds"));
    b = (struct sw_ledger_boot){
        .endpoint = "ep", .engine = "vllm", .started_at = 1790812800, .ended_at = 1790812700};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EINVAL);
    /* a JSON document past the ceiling is refused, not truncated */
    json_t *huge = json_object();
    char *big = malloc(SW_LEDGER_JSON_MAX + 10);
    memset(big, 'x', SW_LEDGER_JSON_MAX + 9);
    big[SW_LEDGER_JSON_MAX + 9] = '\0';
    json_object_set_new(huge, "x", json_string(big));
    free(big);
    b = (struct sw_ledger_boot){.endpoint = "ep", .engine = "vllm", .report = huge};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_ERANGE);
    assert_non_null(strstr(e.msg, "report"));
    json_decref(huge);
    /* ext_id twice */
    b = (struct sw_ledger_boot){.endpoint = "ep", .engine = "vllm", .ext_id = "k1"};
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), 0);
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), SW_EEXIST);
    /* none of the refused boots left anything behind: one boot, one endpoint */
    assert_int_equal(count(&f->l, "boots"), 1);
    assert_int_equal(count(&f->l, "endpoints"), 1);
    assert_int_equal(count(&f->l, "shapes"), 0);
    json_decref(shape);
    json_decref(arr);
    json_decref(noclass);
    json_decref(badphase);
}

static void test_log_excerpt_stored(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    size_t n = 200000;
    char *log = malloc(n);
    for (size_t i = 0; i < n; i++)
        log[i] = i % 80 == 79 ? '\n' : 'a' + (char)(i % 26);
    memcpy(log, "llama-server build 1234\n", 24);
    static const char tail[] = "\n\xff\xfe bad bytes and a NUL \0 here: OOM\n";
    memcpy(log + n - sizeof(tail) + 1, tail, sizeof(tail) - 1);
    struct sw_ledger_boot b = {
        .endpoint = "ep", .engine = "llama.cpp", .log_excerpt = log, .log_len = n};
    int64_t id;
    assert_int_equal(sw_ledger_record_boot(&f->l, &b, &id, &e), 0);
    free(log);
    json_t *o = NULL;
    assert_int_equal(sw_ledger_boot(&f->l, id, &o, &e), 0);
    const char *ex = json_string_value(json_object_get(o, "log_excerpt"));
    assert_non_null(ex);
    assert_true(strlen(ex) <= SW_LEDGER_EXCERPT_MAX);
    assert_memory_equal(ex, "llama-server build 1234\n", 24);
    assert_non_null(
        strstr(ex, "\xef\xbf\xbd\xef\xbf\xbd bad bytes and a NUL \xef\xbf\xbd here: OOM"));
    assert_non_null(strstr(ex, "elided"));
    json_decref(o);
}

static void test_usage(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    int64_t b =
        boot(&f->l, "frank-small",
             "{\"engine\":\"llama.cpp\",\"model\":\"m\",\"ctx\":540672,\"slots\":3}", NULL, NULL);
    struct sw_ledger_usage u = {.endpoint = "frank-small",
                                .boot_id = b,
                                .device = "CUDA0",
                                .used_mib = 21684,
                                .total_mib = 24576,
                                .has_free = true,
                                .free_mib = 2441,
                                .source = "nvidia-smi",
                                .note = "deployed"};
    int64_t u1, u2;
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, &u1, &e), 0);
    /* by shape, no boot; time unknown */
    json_t *shape =
        swl_json("{\"engine\":\"llama.cpp\",\"model\":\"m\",\"ctx\":589824,\"slots\":3}");
    u = (struct sw_ledger_usage){.endpoint = "frank-small",
                                 .shape = shape,
                                 .device = "CUDA0",
                                 .used_mib = 22972,
                                 .total_mib = 24576,
                                 .source = "by hand",
                                 .taken_at = -1};
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, &u2, &e), 0);
    /* refusals */
    u.used_mib = 30000;
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, NULL, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "more than total"));
    u.used_mib = 22972;
    u.has_free = true;
    u.free_mib = 2000;
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, NULL, &e), SW_EINVAL);
    u.has_free = false;
    u.boot_id = b; /* a shape that is not the boot's */
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, NULL, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "not the shape of boot"));
    u.shape = NULL;
    u.boot_id = 777;
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, NULL, &e), SW_ENOENT);
    u.boot_id = b;
    u.endpoint = "frank-primary"; /* the boot is frank-small's */
    assert_int_equal(sw_ledger_record_usage(&f->l, &u, NULL, &e), SW_EINVAL);
    json_decref(shape);

    json_t *list = NULL;
    struct sw_ledger_query q = {.endpoint = "frank-small"};
    assert_int_equal(sw_ledger_usage_list(&f->l, &q, &list, &e), 0);
    assert_int_equal(json_array_size(list), 2);
    json_t *r1 = json_array_get(list, 0), *r2 = json_array_get(list, 1);
    assert_int_equal(json_integer_value(json_object_get(r1, "free_mib")), 2441);
    assert_true(json_is_true(json_object_get(r1, "free_read")));
    assert_non_null(json_object_get(json_object_get(r1, "shape"), "hash")); /* from the boot */
    assert_int_equal(json_integer_value(json_object_get(r2, "free_mib")), 24576 - 22972);
    assert_true(json_is_false(json_object_get(r2, "free_read")));
    assert_true(json_is_null(json_object_get(r2, "taken_at")));
    json_decref(list);
    /* usage rides along in the boot */
    json_t *o = NULL;
    assert_int_equal(sw_ledger_boot(&f->l, b, &o, &e), 0);
    assert_int_equal(json_array_size(json_object_get(o, "usage")), 1);
    json_decref(o);
}

static void test_battery_bench_rung_rule_note(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    int64_t b = boot(&f->l, "ep", VLLM_SHAPE, NULL, "{\"class\":\"compile_constraint\"}");
    json_t *doc =
        swl_json("{\"checks\":[{\"name\":\"readiness\",\"status\":\"pass\",\"evidence\":"
                 "\"503 then 200\",\"ms\":812.4},{\"name\":\"vision\",\"status\":\"skip\","
                 "\"reason\":\"no projector\"},{\"name\":\"chat\",\"status\":\"fail\","
                 "\"evidence\":{\"http\":500}}]}");
    int64_t run;
    assert_int_equal(
        sw_ledger_record_battery(&f->l, "ep", b, "http://127.0.0.1:8080", 0, doc, &run, &e), 0);
    json_decref(doc);
    doc = swl_json("{\"checks\":[{\"name\":\"readiness\",\"status\":\"maybe\"}]}");
    assert_int_equal(sw_ledger_record_battery(&f->l, "ep", b, NULL, 0, doc, NULL, &e), SW_EINVAL);
    json_decref(doc);
    doc = swl_json("{\"checks\":[{\"name\":\"ok\",\"status\":\"pass\"},{\"name\":\"Bad Name\","
                   "\"status\":\"pass\"}]}");
    assert_int_equal(sw_ledger_record_battery(&f->l, "ep", b, NULL, 0, doc, NULL, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "checks[1]"));
    json_decref(doc);
    assert_int_equal(count(&f->l, "battery_runs"), 1);
    assert_int_equal(count(&f->l, "battery_checks"), 3);

    json_t *p = swl_json("{\"streams\":1}"),
           *r = swl_json("{\"decode_tok_s\":[39.38,38.79,36.42]}");
    int64_t bench;
    assert_int_equal(
        sw_ledger_record_bench(&f->l, "ep", b, 0, p, r, "/tmp/c.svg", NULL, &bench, &e), 0);
    assert_int_equal(sw_ledger_record_bench(&f->l, "ep", b, 0, NULL, r, NULL, NULL, NULL, &e),
                     SW_EINVAL);
    json_decref(p);
    json_decref(r);

    json_t *shape = swl_json(VLLM_SHAPE),
           *other = swl_json("{\"engine\":\"vllm\",\"model\":\"x\"}");
    struct sw_ledger_rung rg = {.endpoint = "ep",
                                .ladder = "night",
                                .rung = 1,
                                .shape = shape,
                                .boot_id = b,
                                .outcome = "fail"};
    int64_t rung;
    assert_int_equal(sw_ledger_record_rung(&f->l, &rg, &rung, &e), 0);
    assert_int_equal(sw_ledger_record_rung(&f->l, &rg, NULL, &e), SW_EEXIST);
    rg.rung = 2;
    rg.shape = other;
    assert_int_equal(sw_ledger_record_rung(&f->l, &rg, NULL, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "different shape"));
    rg.boot_id = 0;
    rg.outcome = "refused";
    assert_int_equal(sw_ledger_record_rung(&f->l, &rg, NULL, &e), 0);
    rg.outcome = "meh";
    rg.rung = 3;
    assert_int_equal(sw_ledger_record_rung(&f->l, &rg, NULL, &e), SW_EINVAL);
    json_decref(shape);
    json_decref(other);

    json_t *failure =
        swl_json("{\"class\":\"compile_constraint\",\"message\":\"Constraints violated\"}");
    struct sw_ledger_rule_rec rr = {.endpoint = "ep",
                                    .expr = "slots == 2",
                                    .reason = "SEQS 2",
                                    .failure = failure,
                                    .boot_id = b,
                                    .source = "bisection"};
    int64_t rule, global;
    assert_int_equal(sw_ledger_record_rule(&f->l, &rr, &rule, &e), 0);
    rr.expr = "slots =< 2";
    assert_int_equal(sw_ledger_record_rule(&f->l, &rr, NULL, &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "rule"));
    rr = (struct sw_ledger_rule_rec){.expr = "model.quant == q8_0_rocmfpx && engine != llama.cpp",
                                     .reason = "fork-only quant type"};
    assert_int_equal(sw_ledger_record_rule(&f->l, &rr, &global, &e), 0);
    json_decref(failure);

    int64_t note;
    assert_int_equal(
        sw_ledger_record_note(&f->l, "bench", bench, "chart looks off", "me", &note, &e), 0);
    assert_int_equal(sw_ledger_record_note(&f->l, "rung", rung, "7 minutes", NULL, NULL, &e), 0);
    assert_int_equal(sw_ledger_record_note(&f->l, "ledger", 0, "line1\nline2", NULL, NULL, &e), 0);
    assert_int_equal(sw_ledger_record_note(&f->l, "boot", 4242, "x", NULL, NULL, &e), SW_ENOENT);
    assert_int_equal(sw_ledger_record_note(&f->l, "planet", 1, "x", NULL, NULL, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_record_note(&f->l, "ledger", 0, "", NULL, NULL, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_record_note(&f->l, "ledger", 0, "bell\a", NULL, NULL, &e),
                     SW_EINVAL);

    /* what the gates read */
    json_t *kb = NULL;
    assert_int_equal(sw_ledger_known_bad(&f->l, "ep", &kb, &e), 0);
    json_t *shapes = json_object_get(kb, "shapes"), *rules = json_object_get(kb, "rules");
    assert_int_equal(json_array_size(shapes), 1);
    json_t *s0 = json_array_get(shapes, 0);
    assert_int_equal(json_integer_value(json_object_get(s0, "failed")), 1);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(s0, "failures"), 0), "failure"),
            "class")),
        "compile_constraint");
    assert_int_equal(json_array_size(rules), 2); /* the endpoint's and the global one */
    json_decref(kb);
    assert_int_equal(sw_ledger_known_bad(&f->l, "other", &kb, &e), 0);
    assert_int_equal(json_array_size(json_object_get(kb, "shapes")), 0);
    assert_int_equal(json_array_size(json_object_get(kb, "rules")), 1); /* global only */
    json_decref(kb);
}

/* Strip what an import legitimately changes (row ids, record times) before comparing exports. */
static void strip(json_t *j)
{
    static const char *const drop[] = {"id",   "created_at", "recorded_at", "exported_at",
                                       "boot", "subject",    NULL};
    if (json_is_object(j)) {
        for (size_t i = 0; drop[i]; i++)
            json_object_del(j, drop[i]);
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) strip(v);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) strip(v);
    }
}

static void test_export_import_round_trip(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    struct sw_ledger_import_stats st = {0};
    json_t *seed = json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 0, NULL);
    assert_non_null(seed);
    assert_int_equal(sw_ledger_import(&f->l, seed, "seed-boots.json", &st, &e), 0);
    /* add what the seed lacks: a battery and a ledger note */
    json_t *doc = swl_json("{\"checks\":[{\"name\":\"liveness\",\"status\":\"pass\",\"evidence\":"
                           "\"1 token\"}]}");
    assert_int_equal(sw_ledger_record_battery(&f->l, "frank-small", 16, NULL, 0, doc, NULL, &e), 0);
    json_decref(doc);
    assert_int_equal(sw_ledger_record_note(&f->l, "ledger", 0, "general", NULL, NULL, &e), 0);

    json_t *x1 = NULL, *x2 = NULL;
    assert_int_equal(sw_ledger_export(&f->l, NULL, &x1, &e), 0);
    char p[4096];
    snprintf(p, sizeof(p), "%s/copy.sqlite", f->dir);
    struct sw_ledger c;
    assert_int_equal(sw_ledger_open(&c, p, NULL, &e), 0);
    if (sw_ledger_import(&c, x1, "export", &st, &e))
        fail_msg("import of an export: %s", e.msg);
    assert_int_equal(sw_ledger_export(&c, NULL, &x2, &e), 0);
    sw_ledger_close(&c);
    /* references survive as the same structure: compare boots by position */
    strip(x1);
    strip(x2);
    if (!json_equal(x1, x2)) {
        char *a = json_dumps(x1, JSON_INDENT(1) | JSON_SORT_KEYS);
        char *b = json_dumps(x2, JSON_INDENT(1) | JSON_SORT_KEYS);
        size_t i = 0;
        while (a[i] && a[i] == b[i])
            i++;
        fail_msg("export -> import -> export differs near: ...%.200s\n---\n...%.200s",
                 a + (i > 100 ? i - 100 : 0), b + (i > 100 ? i - 100 : 0));
    }
    json_decref(x1);
    json_decref(x2);
    json_decref(seed);

    /* an endpoint-filtered export holds only that endpoint's rows */
    assert_int_equal(sw_ledger_export(&f->l, "frank-small", &x1, &e), 0);
    assert_int_equal(json_array_size(json_object_get(x1, "boots")), 3);
    assert_int_equal(json_array_size(json_object_get(x1, "usage")), 3);
    assert_int_equal(json_array_size(json_object_get(x1, "rules")), 0);
    assert_int_equal(json_array_size(json_object_get(x1, "notes")), 5); /* 2 + one per boot */
    json_decref(x1);
    assert_int_equal(sw_ledger_export(&f->l, "nobody", &x1, &e), SW_ENOENT);
}

static void test_import_atomic_and_idempotent(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    struct sw_ledger_import_stats st = {0};
    json_t *bad =
        swl_json("{\"id\":\"t\",\"boots\":[{\"ref\":\"a\",\"endpoint\":\"ep\",\"engine\":"
                 "\"vllm\"},{\"ref\":\"b\",\"endpoint\":\"ep\",\"engine\":\"vllm\",\"shape\":"
                 "{\"engine\":\"vllm\",\"model\":\"m\",\"kv_bytes\":\"6.1GiB\"}}]}");
    assert_int_equal(sw_ledger_import(&f->l, bad, "bad.json", &st, &e), SW_EINVAL);
    swt_has_all("e.msg", e.msg, "bad.json", "boots[1]", "shape.kv_bytes", NULL);
    assert_int_equal(count(&f->l, "boots"), 0); /* the first row went with the failure */
    assert_int_equal(count(&f->l, "endpoints"), 0);
    json_decref(bad);

    static const char *const refused[][2] = {
        {"{\"boots\":[{\"endpoint\":\"ep\",\"engine\":\"vllm\",\"colour\":1}]}",
         "unknown key 'colour'"},
        {"{\"usage\":[{\"endpoint\":\"ep\",\"device\":\"d\",\"used\":\"1 MiB\",\"total\":\"2 MiB\","
         "\"source\":\"x\",\"boot\":\"nope\"}]}",
         "does not name a boot"},
        {"{\"usage\":[{\"endpoint\":\"ep\",\"device\":\"d\",\"used\":\"100\",\"total\":\"2 MiB\","
         "\"source\":\"x\"}]}",
         "no unit"},
        {"{\"id\":\"x\",\"boots\":[{\"endpoint\":\"ep\",\"engine\":\"vllm\"}]}", "needs a \"ref\""},
        {"{\"boots\":[{\"endpoint\":\"ep\",\"engine\":\"vllm\",\"outcome\":\"failed\"}]}",
         "outcome 'failed'"},
        {"{\"boots\":[{\"endpoint\":\"ep\",\"engine\":\"vllm\",\"shape\":{\"engine\":\"vllm\","
         "\"model\":\"m\"},\"shape_hash\":\"00\"}]}",
         "does not match"},
        {"{\"canon_version\":9}", "canon_version 9"},
        {"{\"boots\":{}}", "must be an array"},
        {"{\"rules\":[{\"expr\":\"slots ==\",\"reason\":\"r\"}]}", "expected a value"},
        {"{\"notes\":[{\"kind\":\"boot\",\"text\":\"t\"}]}", "subject is required"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(refused); i++) {
        json_t *d = swl_json(refused[i][0]);
        sw_err_clear(&e);
        assert_int_not_equal(sw_ledger_import(&f->l, d, "doc", &st, &e), 0);
        if (!strstr(e.msg, refused[i][1]))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, refused[i][1]);
        json_decref(d);
    }
    assert_int_equal(count(&f->l, "boots"), 0);

    json_t *seed = json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 0, NULL);
    assert_int_equal(sw_ledger_import(&f->l, seed, "seed", &st, &e), 0);
    int64_t added = st.added;
    assert_true(added > 30);
    assert_int_equal(st.skipped, 0);
    assert_int_equal(sw_ledger_import(&f->l, seed, "seed", &st, &e), 0);
    assert_int_equal(st.added, 0);
    assert_int_equal(st.skipped, added);
    assert_int_equal(count(&f->l, "boots"), 18);
    json_decref(seed);
}

/* The seed: what calibrate and the gates will read back. */
static void test_seed_fixture(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    struct sw_ledger_import_stats st = {0};
    json_t *seed = json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 0, NULL);
    assert_int_equal(sw_ledger_import(&f->l, seed, "seed", &st, &e), 0);

    /* every quoted line is really in seed-fleet.md, at the line it names (whitespace folded) */
    char *md = NULL;
    size_t mdn = 0;
    if (sw_read_file(swt_shared("data/seed-fleet.md"), 1 << 20, &md, &mdn, &e)) {
        /* ../shared is beside the integration checkout, not beside every worktree */
        print_message("seed-fleet.md not found (%s): quotes not checked here\n", e.msg);
        md = sw_strdup("");
    }
    static const char *const sections[] = {"boots", "usage", "bench_runs", "ladder_rungs", "rules"};
    int quotes = 0;
    for (size_t s = 0; s < SW_ARRAY_LEN(sections); s++) {
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(seed, sections[s]), i, row)
        {
            const char *q = json_string_value(json_object_get(row, "source_line"));
            if (!q || strncmp(q, "seed-fleet.md:", 14))
                fail_msg("%s[%zu] quotes no seed-fleet.md line", sections[s], i);
            char *end;
            long ln = strtol(q + 14, &end, 10);
            assert_true(ln > 0 && end[0] == ':' && end[1] == ' ');
            /* the file from line ln, four lines of it, whitespace folded; and the quote */
            if (!*md)
                continue;
            const char *p = md;
            for (long k = 1; k < ln && p; k++) {
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
            }
            assert_non_null(p);
            char win[4096], quote[4096];
            size_t w = 0, qn = 0;
            int lines = 0;
            for (; *p && lines < 4 && w + 1 < sizeof(win); p++) {
                char c = *p == '\n' ? ' ' : *p;
                lines += *p == '\n';
                if (c == ' ' && w && win[w - 1] == ' ')
                    continue;
                win[w++] = c;
            }
            win[w] = '\0';
            for (const char *t = end + 2; *t && qn + 1 < sizeof(quote); t++) {
                if (*t == ' ' && qn && quote[qn - 1] == ' ')
                    continue;
                quote[qn++] = *t;
            }
            quote[qn] = '\0';
            if (!strstr(win, quote))
                fail_msg("%s[%zu]: quote not found at seed-fleet.md:%ld:\n%s\n%s", sections[s], i,
                         ln, quote, win);
            quotes++;
        }
    }
    assert_true(!*md || quotes >= 26);
    sw_free(md);

    /* frank-primary's four fp8 KV pool points, with the printed figures calibration fits */
    json_t *boots = NULL;
    struct sw_ledger_query q = {.endpoint = "frank-primary", .full = true};
    assert_int_equal(sw_ledger_boots(&f->l, &q, &boots, &e), 0);
    static const struct {
        int64_t ctx, slots, kv_bytes, tokens;
        double conc;
    } pts[] = {
        {262144, 4, 8311013376LL, 1079582, 0},
        {262144, 5, 10388766720LL, 1350182, 5.15},
        {262144, 3, 6100000000LL, 792069, 3.02},
        {200704, 3, 3150000000LL, 398658, 1.99},
    };
    int found = 0;
    size_t i;
    json_t *b;
    json_array_foreach(boots, i, b)
    {
        json_t *c = json_object_get(json_object_get(b, "shape"), "canonical");
        if (!c || strcmp(json_string_value(json_object_get(c, "kv_dtype_k")), "fp8"))
            continue;
        json_t *rep = json_object_get(b, "report");
        for (size_t k = 0; k < SW_ARRAY_LEN(pts); k++) {
            if (json_integer_value(json_object_get(c, "ctx")) != pts[k].ctx ||
                json_integer_value(json_object_get(c, "slots")) != pts[k].slots)
                continue;
            assert_int_equal(json_integer_value(json_object_get(c, "kv_bytes")), pts[k].kv_bytes);
            assert_int_equal(json_integer_value(json_object_get(rep, "kv_cache_tokens")),
                             pts[k].tokens);
            if (pts[k].conc > 0)
                assert_true(json_real_value(json_object_get(rep, "max_concurrency")) ==
                            pts[k].conc);
            assert_int_equal(json_integer_value(json_object_get(c, "tp")), 2);
            found++;
        }
    }
    assert_int_equal(found, 4);
    json_decref(boots);

    /* frank-small's readings, free as the operator read it */
    json_t *usage = NULL;
    q = (struct sw_ledger_query){.endpoint = "frank-small"};
    assert_int_equal(sw_ledger_usage_list(&f->l, &q, &usage, &e), 0);
    assert_int_equal(json_array_size(usage), 3);
    static const int64_t used[] = {20190, 22972, 21684}, freem[] = {4386, 1153, 2441};
    json_array_foreach(usage, i, b)
    {
        assert_int_equal(json_integer_value(json_object_get(b, "used_mib")), used[i]);
        assert_int_equal(json_integer_value(json_object_get(b, "total_mib")), 24576);
        assert_int_equal(json_integer_value(json_object_get(b, "free_mib")), freem[i]);
        assert_non_null(json_object_get(json_object_get(b, "shape"), "hash"));
    }
    json_decref(usage);

    /* the gates: SEQS 2 refused by rule, with its compile failure; 6 x 241664 fp8 failed */
    json_t *kb = NULL;
    assert_int_equal(sw_ledger_known_bad(&f->l, "frank-primary", &kb, &e), 0);
    json_t *rule = json_array_get(json_object_get(kb, "rules"), 0);
    assert_string_equal(json_string_value(json_object_get(rule, "expr")), "slots == 2");
    json_t *fail = json_object_get(rule, "failure");
    assert_string_equal(json_string_value(json_object_get(fail, "class")), "compile_constraint");
    assert_non_null(strstr(json_string_value(json_object_get(fail, "message")),
                           "Constraints violated (L['query_start_loc'].size()[0])!"));
    bool hit = false;
    json_t *plan =
        swl_json("{\"engine\":\"vllm\",\"engine_profile\":\"tiered-expert-offload\","
                 "\"model\":{\"name\":\"Qwen3.8-Flash-Next-Uncensored-FP8\",\"quant\":\"fp8\"},"
                 "\"tp\":2,\"max_model_len\":200704,\"max_num_seqs\":2,\"kv_dtype\":\"fp8\"}");
    assert_int_equal(
        sw_ledger_rule_match(json_string_value(json_object_get(rule, "expr")), plan, &hit, &e), 0);
    assert_true(hit);
    json_decref(plan);
    char want[SW_LEDGER_HASH_LEN + 1];
    json_t *six =
        swl_json("{\"engine\":\"vllm\",\"engine_profile\":\"tiered-expert-offload\","
                 "\"model\":{\"name\":\"Qwen3.8-Flash-Next-Uncensored-FP8\",\"quant\":\"fp8\"},"
                 "\"tp\":2,\"ctx\":241664,\"slots\":6,\"kv_dtype\":\"fp8\"}");
    assert_int_equal(sw_ledger_shape_canon(six, NULL, NULL, want, &e), 0);
    json_decref(six);
    bool six_found = false;
    json_array_foreach(json_object_get(kb, "shapes"), i, b) six_found =
        six_found || !strcmp(json_string_value(json_object_get(b, "hash")), want);
    assert_true(six_found);
    json_decref(kb);
    json_decref(seed);
}

static void test_default_path(void **state)
{
    char out[4096];
    struct sw_err e;
    setenv("SLIPWAY_LEDGER", "/x/y.sqlite", 1);
    assert_int_equal(sw_ledger_default_path("/a/fleet.yaml", out, sizeof(out), &e), 0);
    assert_string_equal(out, "/x/y.sqlite");
    unsetenv("SLIPWAY_LEDGER");
    assert_int_equal(sw_ledger_default_path("/a/fleet.yaml", out, sizeof(out), &e), 0);
    assert_string_equal(out, "/a/fleet.ledger.sqlite");
    assert_int_equal(sw_ledger_default_path("prod.yml", out, sizeof(out), &e), 0);
    assert_string_equal(out, "prod.ledger.sqlite");
    assert_int_equal(sw_ledger_default_path("/a.b/fleet", out, sizeof(out), &e), 0);
    assert_string_equal(out, "/a.b/fleet.ledger.sqlite");
    setenv("XDG_DATA_HOME", "/xdg", 1);
    assert_int_equal(sw_ledger_default_path(NULL, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/xdg/slipway/ledger.sqlite");
    setenv("XDG_DATA_HOME", "relative", 1); /* ignored, as the spec says */
    setenv("HOME", "/home/op", 1);
    assert_int_equal(sw_ledger_default_path(NULL, out, sizeof(out), &e), 0);
    assert_string_equal(out, "/home/op/.local/share/slipway/ledger.sqlite");
    unsetenv("XDG_DATA_HOME");
    assert_int_equal(sw_ledger_default_path("/a/fleet.yaml", out, 8, &e), SW_ERANGE);
}

/* The ledger a command opens: the explicit path, else $SLIPWAY_LEDGER, else beside the fleet; a
 * missing one is an error, or not, as the caller allows: a default one may be absent, a named one
 * (a path, or the environment) must exist unless anything may be absent. */
static void test_open_for(void **state)
{
    struct swl_fx *f = *state;
    struct sw_ledger l;
    struct sw_err e;
    char path[4096], fleet[4200], got[4096];
    bool opened = true;
    struct sw_ledger_open_opts ro = {.readonly = true};
    snprintf(fleet, sizeof(fleet), "%s/none/fleet.yaml", f->dir);
    snprintf(path, sizeof(path), "%s/none/fleet.ledger.sqlite", f->dir);
    unsetenv("SLIPWAY_LEDGER");
    /* beside the fleet, missing: allowed by default-may-be-absent and may-be-absent */
    assert_int_equal(sw_ledger_open_for(&l, NULL, fleet, &ro, SW_LEDGER_DEFAULT_MAY_BE_ABSENT,
                                        &opened, got, sizeof(got), &e),
                     0);
    assert_false(opened);
    assert_string_equal(got, path);
    assert_int_equal(sw_ledger_open_for(&l, NULL, fleet, &ro, SW_LEDGER_MUST_EXIST, &opened, got,
                                        sizeof(got), &e),
                     SW_ENOENT);
    assert_false(opened);
    /* named, missing: only may-be-absent lets it go */
    assert_int_equal(sw_ledger_open_for(&l, path, NULL, &ro, SW_LEDGER_DEFAULT_MAY_BE_ABSENT,
                                        &opened, got, sizeof(got), &e),
                     SW_ENOENT);
    assert_int_equal(sw_ledger_open_for(&l, path, NULL, &ro, SW_LEDGER_MAY_BE_ABSENT, &opened, got,
                                        sizeof(got), &e),
                     0);
    assert_false(opened);
    setenv("SLIPWAY_LEDGER", path, 1);
    assert_int_equal(sw_ledger_open_for(&l, NULL, fleet, &ro, SW_LEDGER_DEFAULT_MAY_BE_ABSENT,
                                        &opened, got, sizeof(got), &e),
                     SW_ENOENT);
    assert_non_null(strstr(e.msg, "no ledger here"));
    /* the environment names the fixture's ledger: it opens */
    setenv("SLIPWAY_LEDGER", f->path, 1);
    assert_int_equal(sw_ledger_open_for(&l, NULL, fleet, &ro, SW_LEDGER_MUST_EXIST, &opened, got,
                                        sizeof(got), &e),
                     0);
    assert_true(opened);
    assert_string_equal(got, f->path);
    sw_ledger_close(&l);
    unsetenv("SLIPWAY_LEDGER");
    /* an explicit path too long for the buffer */
    assert_int_equal(
        sw_ledger_open_for(&l, f->path, NULL, &ro, SW_LEDGER_MUST_EXIST, &opened, got, 4, &e),
        SW_EINVAL);
    assert_false(opened);
}

/* A second writer that finds the lock held past its busy timeout gets SW_EBUSY with a clear
 * message, records nothing, and succeeds once the lock is free. */
static void test_busy(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", 0, 0, 0), SQLITE_OK);
    struct sw_ledger l2;
    struct sw_ledger_open_opts o = {.create = true, .busy_timeout_ms = 200};
    assert_int_equal(sw_ledger_open(&l2, f->path, &o, &e), 0);
    struct sw_ledger_boot b = {.endpoint = "ep", .engine = "vllm"};
    assert_int_equal(sw_ledger_record_boot(&l2, &b, NULL, &e), SW_EBUSY);
    assert_non_null(strstr(e.msg, "write lock"));
    assert_int_equal(sqlite3_exec(other, "COMMIT", 0, 0, 0), SQLITE_OK);
    sqlite3_close(other);
    int64_t id = 0;
    assert_int_equal(sw_ledger_record_boot(&l2, &b, &id, &e), 0);
    assert_int_equal(id, 1);
    sw_ledger_close(&l2);
}

/* Allocation failures in our code (JSON, canonicalization, excerpts; SQLite's own allocator is
 * not ours to fail) end in SW_ENOMEM with nothing recorded, never in half a record. */
static void test_alloc_failure_records_nothing(void **state)
{
    struct swl_fx *f = *state;
    json_t *shape = swl_json(VLLM_SHAPE);
    json_t *report =
        swl_json("{\"kv_cache_tokens\":792069,\"max_concurrency\":3.02,\"groups\":[{\"a\":1},"
                 "{\"b\":[1,2,3]}]}");
    json_t *failure = swl_json("{\"class\":\"oom\",\"phase\":\"runtime\",\"message\":\"x\"}");
    json_t *battery =
        swl_json("{\"checks\":[{\"name\":\"a\",\"status\":\"pass\",\"evidence\":{\"x\":1}},"
                 "{\"name\":\"b\",\"status\":\"fail\",\"evidence\":[1,\"2\"]}]}");
    char *log = malloc(70000);
    memset(log, 'z', 69999);
    log[69999] = '\0';
    int64_t boots = 0, runs = 0;
    int ooms = 0;
    for (long k = 1; k < 2000; k++) {
        struct sw_err e;
        struct sw_ledger_boot b = {.endpoint = "ep",
                                   .shape = shape,
                                   .engine = "vllm",
                                   .report = report,
                                   .predicted = report,
                                   .failure = failure,
                                   .log_excerpt = log,
                                   .note = "n"};
        long before = sw_alloc_count();
        sw_alloc_fail_at(k);
        int rc = sw_ledger_record_boot(&f->l, &b, NULL, &e);
        int rc2 = rc ? rc : sw_ledger_record_battery(&f->l, "ep", 0, NULL, 0, battery, NULL, &e);
        long used = sw_alloc_count() - before;
        sw_alloc_fail_at(0);
        boots += rc == 0;
        runs += rc2 == 0;
        if (rc && rc != SW_ENOMEM)
            fail_msg("allocation %ld: %s", k, e.msg);
        if (rc2 && rc2 != SW_ENOMEM)
            fail_msg("allocation %ld (battery): %s", k, e.msg);
        ooms += rc != 0 || rc2 != 0;
        if (count(&f->l, "boots") != boots || count(&f->l, "battery_runs") != runs ||
            count(&f->l, "notes") != boots || count(&f->l, "battery_checks") != 2 * runs)
            fail_msg("allocation %ld left a partial record", k);
        if (!rc && !rc2 && used < k)
            break;
    }
    assert_true(ooms > 5);
    /* and the queries: SW_ENOMEM or the full answer */
    for (long k = 1; k < 5000; k++) {
        struct sw_err e;
        json_t *x = NULL;
        long before = sw_alloc_count();
        sw_alloc_fail_at(k);
        int rc = sw_ledger_export(&f->l, NULL, &x, &e);
        if (!rc) {
            struct sw_ledger_query q = {.full = true};
            json_t *y = NULL;
            rc = sw_ledger_boots(&f->l, &q, &y, &e);
            json_decref(y);
        }
        if (!rc) {
            json_t *y = NULL;
            rc = sw_ledger_known_bad(&f->l, NULL, &y, &e);
            json_decref(y);
        }
        long used = sw_alloc_count() - before;
        sw_alloc_fail_at(0);
        json_decref(x);
        if (rc && rc != SW_ENOMEM)
            fail_msg("query allocation %ld: %s", k, e.msg);
        if (!rc && used < k)
            break;
    }
    free(log);
    json_decref(shape);
    json_decref(report);
    json_decref(failure);
    json_decref(battery);
}

int main(void)
{
    sw_core_init();
    unsetenv("SLIPWAY_LEDGER");
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_open_settings),
        T(test_open_empty_and_corrupt),
        T(test_open_refusals),
        T(test_migrate_v1),
        T(test_record_and_query_boots),
        T(test_boot_checks),
        T(test_log_excerpt_stored),
        T(test_usage),
        T(test_battery_bench_rung_rule_note),
        T(test_export_import_round_trip),
        T(test_import_atomic_and_idempotent),
        T(test_seed_fixture),
        cmocka_unit_test(test_default_path),
        T(test_open_for),
        T(test_busy),
        T(test_alloc_failure_records_nothing),
    };
    return cmocka_run_group_tests_name("ledger", tests, NULL, NULL);
}
