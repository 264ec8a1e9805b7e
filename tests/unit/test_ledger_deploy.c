/*
 * The ledger's rollout record (src/ledger/deploy.c, deploy_read.c, tag.c; schema version 3):
 * a frozen version-2 file migrated forward, attempts and their steps, an attempt whose process
 * is killed with SIGKILL mid-step found interrupted by the next open, tag numbering per endpoint
 * per UTC day (the clock injected through created_at), exactly one last-good, a secret in the env
 * text never reaching the file, the known-bad rule a failed shape teaches refused by the real
 * `slipway check`, `slipway history` both views, and allocation-failure loops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swtest.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 2026-12-03T10:00:00Z and the next UTC day; 23:59:59 of the first day */
#define DAY1      1796292000LL
#define DAY1_LATE 1796342399LL
#define DAY2      1796378400LL

static int setup(void **state)
{
    *state = swl_fx_open("l.sqlite");
    return 0;
}

static int teardown(void **state)
{
    swl_fx_close(*state);
    return 0;
}

static const char SHAPE_A[] =
    "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"Qwen3-8B\",\"quant\":"
    "\"Q4_K_M\"},\"ctx\":16384,\"slots\":2,\"kv_dtype\":\"f16\"}";
static const char SHAPE_B[] =
    "{\"engine\":\"llama.cpp\",\"model\":{\"name\":\"Qwen3-8B\",\"quant\":"
    "\"Q4_K_M\"},\"ctx\":32768,\"slots\":2,\"kv_dtype\":\"q8_0\","
    "\"flags\":{\"swa_full\":true}}";

static int64_t sql_int(sqlite3 *db, const char *q)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The file's bytes hold needle (memmem: an SQLite file is full of NUL bytes). */
static bool bytes_have(const char *path, const char *needle)
{
    char *t = NULL;
    size_t n = 0;
    if (sw_read_file(path, 64u << 20, &t, &n, NULL))
        return false;
    bool yes = memmem(t, n, needle, strlen(needle)) != NULL;
    sw_free(t);
    return yes;
}

static int64_t lsql(struct sw_ledger *l, const char *q)
{
    return sql_int(l->db, q);
}

static void commit_tag(struct sw_ledger *l, const char *ep, const char *shape, int64_t at,
                       const char *payload, char name[SW_LEDGER_TAG_MAX])
{
    struct sw_err e;
    json_t *s = swl_json(shape), *p = swl_json(payload ? payload : "[]");
    struct sw_ledger_tag_new t = {.endpoint = ep, .shape = s, .payload = p, .created_at = at};
    if (sw_ledger_tag_commit(l, &t, name, NULL, &e))
        fail_msg("tag_commit: %s", e.msg);
    json_decref(s);
    json_decref(p);
}

/* ---------------------------------------------------------------------------------------------
 * Migration from a frozen version-2 file.
 */

/* The string member key of the i-th element of array a (NULL when absent). */
static const char *str_at(const json_t *a, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(a, i), key));
}

static void test_migrate_v2(void **state)
{
    struct swl_fx *f = *state;
    char p[4200], *sql = NULL;
    size_t n = 0;
    struct sw_err e;
    struct sw_ledger l;
    snprintf(p, sizeof(p), "%s/v2.sqlite", f->dir);
    if (sw_read_file(swt_src("tests/data/ledger/v2.sql"), 1 << 20, &sql, &n, &e))
        fail_msg("%s", e.msg);
    sqlite3 *db = NULL;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, 0, 0, &msg) != SQLITE_OK)
        fail_msg("v2.sql: %s", msg);
    assert_int_equal(sql_int(db, "PRAGMA user_version"), 2);
    sqlite3_close(db);
    sw_free(sql);

    struct sw_ledger_open_opts ro = {.readonly = true};
    assert_int_equal(sw_ledger_open(&l, p, &ro, &e), SW_EUNSUPPORTED);
    assert_non_null(strstr(e.msg, "needs migrating"));
    assert_int_equal(sw_ledger_open(&l, p, NULL, &e), 0);
    assert_int_equal(l.schema_version, SW_LEDGER_SCHEMA_VERSION);
    /* the version-2 rows are there */
    assert_int_equal(lsql(&l, "SELECT count(*) FROM boots"), 1);
    assert_int_equal(lsql(&l, "SELECT count(*) FROM battery_runs"), 1);
    assert_int_equal(lsql(&l, "SELECT count(*) FROM bench_runs"), 1);
    assert_int_equal(lsql(&l, "SELECT count(*) FROM rules"), 1);
    assert_int_equal(lsql(&l, "SELECT count(*) FROM usage"), 1);
    /* and version 3 works on them: a tag of the booted shape carries its measured figures */
    json_t *boot = NULL;
    assert_int_equal(sw_ledger_boot(&l, 1, &boot, &e), 0);
    json_t *shape = json_deep_copy(json_object_get(json_object_get(boot, "shape"), "canonical"));
    json_decref(boot);
    json_t *pay = swl_json("[]");
    char name[SW_LEDGER_TAG_MAX];
    struct sw_ledger_tag_new t = {
        .endpoint = "frank-small", .shape = shape, .payload = pay, .created_at = DAY1};
    assert_int_equal(sw_ledger_tag_commit(&l, &t, name, NULL, &e), 0);
    assert_string_equal(name, "frank-small-20261203-1");
    json_t *h = NULL;
    assert_int_equal(sw_ledger_history(&l, "frank-small", NULL, &h, &e), 0);
    json_t *m = json_object_get(json_array_get(json_object_get(h, "tags"), 0), "measured");
    assert_int_equal(json_integer_value(json_object_get(m, "boots")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "battery"), "runs")), 1);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(m, "battery"), "last"), "passed")),
                     2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "bench"), "runs")), 1);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(m, "usage"), "last"), "free_mib")),
                     4386);
    json_decref(h);
    json_decref(shape);
    json_decref(pay);
    sw_ledger_close(&l);

    /* the migrated file has exactly the schema of a fresh one */
    assert_true(swl_same_schema(p, f->path) > 20);
}

/* ---------------------------------------------------------------------------------------------
 * Attempts and steps.
 */

static void test_attempt_steps(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    json_t *shape = swl_json(SHAPE_A), *shape_b = swl_json(SHAPE_B);
    char tag[SW_LEDGER_TAG_MAX];
    commit_tag(&f->l, "ep", SHAPE_A, DAY1, NULL, tag);

    int64_t a = 0, s1 = 0, s2 = 0, rule = 0;
    struct sw_ledger_attempt at = {
        .endpoint = "ep", .shape = shape_b, .from_tag = tag, .note = "try 32k"};
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a, &e), 0);
    assert_true(a > 0);
    /* one deploy per endpoint at a time */
    int64_t other = 0;
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &other, &e), SW_EBUSY);
    assert_non_null(strstr(e.msg, "still open"));
    /* from_tag must be the endpoint's */
    struct sw_ledger_attempt bad = {.endpoint = "ep2", .shape = shape_b, .from_tag = tag};
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &bad, &other, &e), SW_ENOENT);

    assert_int_equal(sw_ledger_deploy_step_begin(&f->l, a, "gate", &s1, &e), 0);
    json_t *d = swl_json("{\"gates\":7,\"failed\":0}");
    assert_int_equal(sw_ledger_deploy_step_end(&f->l, s1, "ok", d, NULL, &e), 0);
    json_decref(d);
    assert_int_equal(sw_ledger_deploy_step_end(&f->l, s1, "ok", NULL, NULL, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_deploy_step_begin(&f->l, a, "Bad Name", &s2, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_deploy_step_begin(&f->l, a, "start", &s2, &e), 0);
    assert_int_equal(sw_ledger_deploy_step_end(&f->l, s2, "failed", NULL, NULL, &e), 0);

    /* a committed verdict goes through the tag, not here */
    struct sw_ledger_attempt_end fin = {.outcome = "committed"};
    assert_int_equal(sw_ledger_deploy_finish(&f->l, a, &fin, &rule, &e), SW_EINVAL);
    json_t *ev = swl_json("{\"journal\":\"error while loading shared libraries: libcuda.so.1\","
                          "\"boot_failure\":{\"class\":\"missing_library\"},\"restarts\":3}");
    fin = (struct sw_ledger_attempt_end){.outcome = "rolled_back",
                                         .failure_class = "crash_loop",
                                         .evidence = ev,
                                         .downtime_ms = 4120};
    assert_int_equal(sw_ledger_deploy_finish(&f->l, a, &fin, &rule, &e), 0);
    assert_true(rule > 0);
    int64_t taught = rule;
    assert_int_equal(sw_ledger_deploy_finish(&f->l, a, &fin, &rule, &e), SW_EINVAL);
    json_decref(ev);

    json_t *g = NULL;
    assert_int_equal(sw_ledger_deploy_get(&f->l, a, &g, &e), 0);
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "rolled_back");
    assert_string_equal(json_string_value(json_object_get(g, "failure_class")), "crash_loop");
    assert_string_equal(json_string_value(json_object_get(g, "from_tag")), tag);
    assert_int_equal(json_integer_value(json_object_get(g, "downtime_ms")), 4120);
    assert_int_equal(json_integer_value(json_object_get(g, "rule_id")), taught);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(g, "evidence"), "restarts")), 3);
    json_t *steps = json_object_get(g, "steps");
    assert_int_equal(json_array_size(steps), 2);
    assert_string_equal(str_at(steps, 0, "name"), "gate");
    assert_string_equal(str_at(steps, 1, "outcome"), "failed");
    assert_true(json_integer_value(json_object_get(json_array_get(steps, 0), "ms")) >= 0);
    json_decref(g);
    assert_int_equal(sw_ledger_deploy_get(&f->l, 999, &g, &e), SW_ENOENT);

    /* the rule matches the failed shape and not the good one */
    json_t *kb = NULL;
    assert_int_equal(sw_ledger_known_bad(&f->l, "ep", &kb, &e), 0);
    json_t *rules = json_object_get(kb, "rules");
    assert_int_equal(json_array_size(rules), 1);
    const char *expr = str_at(rules, 0, "expr");
    bool hit = false;
    assert_int_equal(sw_ledger_rule_match(expr, shape_b, &hit, &e), 0);
    assert_true(hit);
    assert_int_equal(sw_ledger_rule_match(expr, shape, &hit, &e), 0);
    assert_false(hit);
    json_decref(kb);

    /* gate_refused and not_the_shape teach nothing */
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a, &e), 0);
    fin = (struct sw_ledger_attempt_end){
        .outcome = "gate_refused", .failure_class = "known_bad", .downtime_ms = 0};
    assert_int_equal(sw_ledger_deploy_finish(&f->l, a, &fin, &rule, &e), 0);
    assert_int_equal(rule, 0);
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a, &e), 0);
    fin = (struct sw_ledger_attempt_end){.outcome = "rolled_back",
                                         .failure_class = "ssh_dropped",
                                         .not_the_shape = true,
                                         .downtime_ms = -1};
    assert_int_equal(sw_ledger_deploy_finish(&f->l, a, &fin, &rule, &e), 0);
    assert_int_equal(rule, 0);
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM rules"), 1);

    /* a committed attempt: the tag and the verdict together */
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a, &e), 0);
    json_t *pay = swl_json("[]");
    struct sw_ledger_tag_new t = {.endpoint = "ep",
                                  .attempt_id = a,
                                  .shape = shape,
                                  .payload = pay,
                                  .created_at = DAY1,
                                  .downtime_ms = 900};
    /* the attempt deployed shape B: a tag of A for it is refused, whole */
    assert_int_equal(sw_ledger_tag_commit(&f->l, &t, tag, NULL, &e), SW_EINVAL);
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM tags"), 1);
    t.shape = shape_b;
    assert_int_equal(sw_ledger_tag_commit(&f->l, &t, tag, NULL, &e), 0);
    assert_string_equal(tag, "ep-20261203-2");
    assert_int_equal(sw_ledger_deploy_get(&f->l, a, &g, &e), 0);
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "committed");
    assert_string_equal(json_string_value(json_object_get(g, "tag")), tag);
    assert_true(json_is_null(json_object_get(g, "failure_class")));
    json_decref(g);
    /* a step recorded whole after the attempt ended (serve's figures around a rollout) */
    d = swl_json("{\"path\":\"rollout\",\"queued\":{\"requests\":3}}");
    assert_int_equal(sw_ledger_deploy_step_record(&f->l, a, "serve", "ok", d, NULL, &e), 0);
    assert_int_equal(sw_ledger_deploy_step_record(&f->l, a, "serve", "done", d, NULL, &e),
                     SW_EINVAL);
    assert_int_equal(sw_ledger_deploy_step_record(&f->l, a, "Serve", "ok", d, NULL, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_deploy_step_record(&f->l, 999, "serve", "ok", d, NULL, &e),
                     SW_ENOENT);
    json_decref(d);
    assert_int_equal(sw_ledger_deploy_get(&f->l, a, &g, &e), 0);
    steps = json_object_get(g, "steps");
    assert_int_equal(json_array_size(steps), 1);
    assert_string_equal(str_at(steps, 0, "name"), "serve");
    assert_string_equal(str_at(steps, 0, "outcome"), "ok");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(steps, 0), "seq")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(steps, 0), "detail"), "path")),
                        "rollout");
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "committed");
    json_decref(g);
    json_t *list = NULL;
    assert_int_equal(sw_ledger_deploy_list(&f->l, "ep", 0, &list, &e), 0);
    assert_int_equal(json_array_size(list), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(list, 0), "id")), a);
    json_decref(list);
    json_decref(pay);
    json_decref(shape);
    json_decref(shape_b);
}

/* ---------------------------------------------------------------------------------------------
 * A deploy killed mid-step.
 */

static void test_interrupted_by_kill(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the child: a deploy that gets as far as stopping the old unit */
        struct sw_ledger l;
        struct sw_err ce;
        close(pfd[0]);
        json_t *s = json_loads(SHAPE_B, 0, NULL);
        struct sw_ledger_attempt at = {.endpoint = "killed", .shape = s};
        int64_t a = 0, st = 0;
        if (sw_ledger_open(&l, f->path, NULL, &ce) || sw_ledger_deploy_begin(&l, &at, &a, &ce) ||
            sw_ledger_deploy_step_begin(&l, a, "plan", &st, &ce) ||
            sw_ledger_deploy_step_end(&l, st, "ok", NULL, NULL, &ce) ||
            sw_ledger_deploy_step_begin(&l, a, "stop", &st, &ce))
            _exit(3);
        char one = 'x';
        if (write(pfd[1], &one, 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    close(pfd[1]);
    char got = 0;
    assert_int_equal(read(pfd[0], &got, 1), 1);
    close(pfd[0]);

    /* while it lives: running, its endpoint locked, nothing to recover */
    json_t *g = NULL;
    assert_int_equal(sw_ledger_deploy_get(&f->l, 1, &g, &e), 0);
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "running");
    json_decref(g);
    json_t *s = swl_json(SHAPE_B);
    struct sw_ledger_attempt at = {.endpoint = "killed", .shape = s};
    int64_t a2 = 0, marked = -1;
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a2, &e), SW_EBUSY);
    assert_int_equal(sw_ledger_deploy_recover(&f->l, NULL, &marked, &e), 0);
    assert_int_equal(marked, 0);

    kill(pid, SIGKILL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* a read-only reader sees it interrupted (not yet marked) */
    struct sw_ledger ro;
    struct sw_ledger_open_opts roo = {.readonly = true};
    assert_int_equal(sw_ledger_open(&ro, f->path, &roo, &e), 0);
    assert_int_equal(sw_ledger_deploy_get(&ro, 1, &g, &e), 0);
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "interrupted");
    assert_false(json_is_true(json_object_get(g, "recovered")));
    json_decref(g);
    sw_ledger_close(&ro);

    /* the next read-write open marks it */
    struct sw_ledger rw;
    assert_int_equal(sw_ledger_open(&rw, f->path, NULL, &e), 0);
    assert_int_equal(sw_ledger_deploy_get(&rw, 1, &g, &e), 0);
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "interrupted");
    assert_true(json_is_true(json_object_get(g, "recovered")));
    assert_string_equal(json_string_value(json_object_get(g, "failure_class")), "interrupted");
    json_t *ev = json_object_get(g, "evidence");
    assert_string_equal(json_string_value(json_object_get(ev, "last_step")), "stop");
    assert_non_null(strstr(json_string_value(json_object_get(ev, "reason")), "gone"));
    json_t *steps = json_object_get(g, "steps");
    assert_int_equal(json_array_size(steps), 2);
    assert_string_equal(str_at(steps, 0, "outcome"), "ok");
    assert_string_equal(str_at(steps, 1, "outcome"), "interrupted");
    json_decref(g);
    assert_int_equal(lsql(&rw, "SELECT count(*) FROM deploy_attempts WHERE ended_ms IS NULL"), 0);
    /* and the endpoint is free again */
    assert_int_equal(sw_ledger_deploy_begin(&rw, &at, &a2, &e), 0);
    assert_int_equal(sw_ledger_deploy_recover(&rw, "killed", &marked, &e), 0);
    assert_int_equal(marked, 0); /* ours is alive */
    sw_ledger_close(&rw);
    json_decref(s);
}

/* Several processes begin a deploy of one endpoint at once: exactly one gets it. An open
 * attempt owned by another host is left alone by recovery. */
static void test_one_deploy_at_a_time(void **state)
{
    struct swl_fx *f = *state;
    enum { N = 4 };
    pid_t kids[N];
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            struct sw_ledger l;
            struct sw_err ce;
            close(pfd[0]);
            json_t *sh = json_loads(SHAPE_A, 0, NULL);
            struct sw_ledger_attempt at = {.endpoint = "race", .shape = sh};
            int64_t a = 0;
            int rc = sw_ledger_open(&l, f->path, NULL, &ce);
            if (!rc)
                rc = sw_ledger_deploy_begin(&l, &at, &a, &ce);
            signed char c = (signed char)rc;
            if (write(pfd[1], &c, 1) != 1)
                _exit(4);
            for (;;)
                pause(); /* the winner's attempt stays open while it lives */
        }
    }
    close(pfd[1]);
    int won = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        signed char c = 0;
        assert_int_equal(read(pfd[0], &c, 1), 1);
        won += c == 0;
        busy += c == SW_EBUSY;
    }
    close(pfd[0]);
    for (int i = 0; i < N; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    assert_int_equal(won, 1);
    assert_int_equal(busy, N - 1);
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM deploy_attempts"), 1);

    /* the winner is dead now; pretend it ran on another host: recovery cannot tell, leaves it */
    assert_int_equal(
        sqlite3_exec(f->l.db, "UPDATE deploy_attempts SET owner_host = 'elsewhere'", 0, 0, 0),
        SQLITE_OK);
    struct sw_err e;
    int64_t marked = -1;
    assert_int_equal(sw_ledger_deploy_recover(&f->l, NULL, &marked, &e), 0);
    assert_int_equal(marked, 0);
    json_t *g = NULL;
    assert_int_equal(sw_ledger_deploy_get(&f->l, 1, &g, &e), 0);
    assert_string_equal(json_string_value(json_object_get(g, "outcome")), "running");
    json_decref(g);
    /* back on this host, it is found dead */
    assert_int_equal(sqlite3_exec(f->l.db, "UPDATE deploy_attempts SET owner_host = NULL", 0, 0, 0),
                     SQLITE_OK);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(f->l.db, "UPDATE deploy_attempts SET owner_host = ?1", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_text(st, 1, host, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(sw_ledger_deploy_recover(&f->l, "race", &marked, &e), 0);
    assert_int_equal(marked, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Tags: numbering, last-good, retiring, who needs a path.
 */

static void test_tags(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    char n[SW_LEDGER_TAG_MAX];
    commit_tag(&f->l, "a", SHAPE_A, DAY1, "[{\"path\":\"/m/qwen/x.gguf\",\"size\":10}]", n);
    assert_string_equal(n, "a-20261203-1");
    commit_tag(&f->l, "a", SHAPE_B, DAY1_LATE, "[{\"path\":\"/m/qwen2/y.gguf\",\"size\":5}]", n);
    assert_string_equal(n, "a-20261203-2");
    commit_tag(&f->l, "b", SHAPE_A, DAY1, NULL, n);
    assert_string_equal(n, "b-20261203-1");
    commit_tag(&f->l, "a", SHAPE_A, DAY2, NULL, n);
    assert_string_equal(n, "a-20261204-1");
    commit_tag(&f->l, "a", SHAPE_A, DAY2 + 60, NULL, n);
    assert_string_equal(n, "a-20261204-2");

    /* exactly one last-good per endpoint; the rest kept */
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM tags t JOIN endpoints e ON "
                                 "e.id = t.endpoint_id WHERE e.name = 'a' AND last_good = 1"),
                     1);
    json_t *lg = NULL;
    assert_int_equal(sw_ledger_tag_last_good(&f->l, "a", &lg, &e), 0);
    assert_string_equal(json_string_value(json_object_get(lg, "name")), "a-20261204-2");
    json_decref(lg);
    assert_int_equal(sw_ledger_tag_last_good(&f->l, "nobody", &lg, &e), SW_ENOENT);

    /* a rollback by hand to a kept tag moves the flag */
    assert_int_equal(sw_ledger_tag_set_last_good(&f->l, "a-20261203-1", &e), 0);
    assert_int_equal(sw_ledger_tag_last_good(&f->l, "a", &lg, &e), 0);
    assert_string_equal(json_string_value(json_object_get(lg, "name")), "a-20261203-1");
    json_decref(lg);
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM tags WHERE last_good = 1"), 2);

    /* retiring: not the last-good, not twice, with a reason */
    assert_int_equal(sw_ledger_tag_retire(&f->l, "a-20261203-1", "old", 0, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "last-good"));
    assert_int_equal(sw_ledger_tag_retire(&f->l, "a-20261203-2", "", 0, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_tag_retire(&f->l, "a-20261203-2", "32k never held", DAY2, &e), 0);
    assert_int_equal(sw_ledger_tag_retire(&f->l, "a-20261203-2", "again", 0, &e), SW_EINVAL);
    assert_int_equal(sw_ledger_tag_set_last_good(&f->l, "a-20261203-2", &e), SW_EINVAL);
    assert_int_equal(sw_ledger_tag_retire(&f->l, "a-1999", "x", 0, &e), SW_ENOENT);
    json_t *t = NULL;
    assert_int_equal(sw_ledger_tag_get(&f->l, "a-20261203-2", &t, &e), 0);
    assert_false(json_is_true(json_object_get(t, "kept")));
    assert_string_equal(json_string_value(json_object_get(t, "retired_why")), "32k never held");
    assert_string_equal(json_string_value(json_object_get(t, "retired")), "2026-12-04T10:00:00Z");
    json_decref(t);

    /* who needs a path: whole components, above and below */
    json_t *need = NULL;
    assert_int_equal(sw_ledger_tags_needing(&f->l, "/m/qwen", &need, &e), 0);
    assert_int_equal(json_array_size(need), 1);
    assert_string_equal(str_at(need, 0, "tag"), "a-20261203-1");
    json_decref(need);
    assert_int_equal(sw_ledger_tags_needing(&f->l, "/m/qwen/x.gguf", &need, &e), 0);
    assert_int_equal(json_array_size(need), 1);
    json_decref(need);
    assert_int_equal(sw_ledger_tags_needing(&f->l, "/m", &need, &e), 0);
    assert_int_equal(json_array_size(need), 1); /* qwen2's tag is retired */
    json_decref(need);
    assert_int_equal(sw_ledger_tags_needing(&f->l, "/m/qwen2", &need, &e), 0);
    assert_int_equal(json_array_size(need), 0);
    json_decref(need);
    assert_int_equal(sw_ledger_tags_needing(&f->l, "/m/qwe", &need, &e), 0);
    assert_int_equal(json_array_size(need), 0);
    json_decref(need);

    /* a bad manifest is refused whole */
    json_t *s = swl_json(SHAPE_A), *bad = swl_json("[{\"path\":\"relative/x\",\"size\":1}]");
    struct sw_ledger_tag_new tn = {.endpoint = "a", .shape = s, .payload = bad};
    assert_int_equal(sw_ledger_tag_commit(&f->l, &tn, n, NULL, &e), SW_EINVAL);
    assert_string_equal(n, "");
    json_decref(bad);
    bad = swl_json("[{\"path\":\"/x\",\"size\":1,\"sha256\":\"zz\"}]");
    tn.payload = bad;
    assert_int_equal(sw_ledger_tag_commit(&f->l, &tn, n, NULL, &e), SW_EINVAL);
    json_decref(bad);
    json_decref(s);
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM tags"), 5);

    json_t *list = NULL;
    assert_int_equal(sw_ledger_tag_list(&f->l, "a", false, &list, &e), 0);
    assert_int_equal(json_array_size(list), 4);
    assert_string_equal(str_at(list, 0, "name"), "a-20261204-2");
    json_decref(list);

    /* moves */
    int64_t mid = 0;
    assert_int_equal(
        sw_ledger_record_move(&f->l, "/m/qwen2", "/trash/qwen2", "copy", 5, 1, NULL, &mid, &e), 0);
    json_t *moves = NULL;
    assert_int_equal(sw_ledger_moves(&f->l, &moves, &e), 0);
    assert_int_equal(json_array_size(moves), 1);
    assert_string_equal(str_at(moves, 0, "method"), "copy");
    json_decref(moves);
}

/* ---------------------------------------------------------------------------------------------
 * Secrets never land in the file.
 */

static void test_redaction(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    static const char token[] = "hf_SeCrEtToKeN0123456789abcdef";
    static const char apikey[] = "sk-live-9f8e7d6c5b4a";
    static const char other[] = "pa55-w0rd-by-caller";
    char env[1024], unit[1024], note[256];
    snprintf(env, sizeof(env),
             "HF_TOKEN=%s\nLLAMA_API_KEY=\"%s\"\nMAX_TOKENS=4096\nCUDA_VISIBLE_DEVICES=0\n"
             "EXTRA=%s\n",
             token, apikey, other);
    snprintf(unit, sizeof(unit),
             "[Service]\nEnvironmentFile=/etc/slipway/x.env\nExecStart=/bin/llama-server "
             "--alias %s\n",
             other);
    snprintf(note, sizeof(note), "deployed with %s", other);
    const char *secrets[] = {other, NULL};
    json_t *s = swl_json(SHAPE_A), *pay = swl_json("[]");
    json_t *ev = json_pack("{s:s}", "journal", other);
    struct sw_ledger_attempt at = {.endpoint = "sec", .shape = s, .secrets = secrets, .note = note};
    int64_t a = 0, st = 0;
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a, &e), 0);
    assert_int_equal(sw_ledger_deploy_step_begin(&f->l, a, "render", &st, &e), 0);
    assert_int_equal(sw_ledger_deploy_step_end(&f->l, st, "ok", ev, secrets, &e), 0);
    struct sw_ledger_tag_new t = {.endpoint = "sec",
                                  .attempt_id = a,
                                  .shape = s,
                                  .unit_name = "slipway-sec.service",
                                  .unit_text = unit,
                                  .env_name = "slipway-sec.env",
                                  .env_text = env,
                                  .payload = pay,
                                  .note = note,
                                  .secrets = secrets};
    char name[SW_LEDGER_TAG_MAX];
    assert_int_equal(sw_ledger_tag_commit(&f->l, &t, name, NULL, &e), 0);
    json_t *g = NULL;
    assert_int_equal(sw_ledger_tag_get(&f->l, name, &g, &e), 0);
    json_t *files = json_object_get(g, "files");
    assert_int_equal(json_array_size(files), 2);
    const char *envs = str_at(files, 1, "text");
    swt_has_all("envs", envs, "HF_TOKEN=***\n", "LLAMA_API_KEY=***\n", "MAX_TOKENS=4096\n",
                "EXTRA=***\n", NULL);
    assert_non_null(strstr(str_at(files, 0, "text"), "--alias ***"));
    json_decref(g);
    sw_ledger_close(&f->l);

    /* the bytes of the file and its log */
    char wal[4200];
    snprintf(wal, sizeof(wal), "%s-wal", f->path);
    const char *const needles[] = {token, apikey, other, "SeCrEt", NULL};
    for (int i = 0; needles[i]; i++) {
        assert_false(bytes_have(f->path, needles[i]));
        assert_false(bytes_have(wal, needles[i]));
    }
    /* the search can find what is there: the redacted line and the variable kept */
    assert_true(bytes_have(f->path, "HF_TOKEN=***") || bytes_have(wal, "HF_TOKEN=***"));
    assert_true(bytes_have(f->path, "MAX_TOKENS=4096") || bytes_have(wal, "MAX_TOKENS=4096"));
    assert_int_equal(sw_ledger_open(&f->l, f->path, NULL, &e), 0);
    json_decref(s);
    json_decref(pay);
    json_decref(ev);
}

/* ---------------------------------------------------------------------------------------------
 * The failed shape teaches: the real `slipway check` refuses it next time.
 */

static const json_t *known_bad_gate(const json_t *out)
{
    const json_t *gs =
        json_object_get(json_array_get(json_object_get(out, "endpoints"), 0), "gates");
    const json_t *fail = NULL, *any = NULL;
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (strcmp(json_string_value(json_object_get(g, "gate")), "known_bad"))
            continue;
        any = g;
        if (!strcmp(json_string_value(json_object_get(g, "verdict")), "fail"))
            fail = g;
    }
    return fail ? fail : any;
}

static void test_check_refuses_failed_shape(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    struct sw_fleet *fl = NULL;
    const char *fleet = swt_src("examples/local.yaml");
    assert_int_equal(sw_fleet_load(fleet, NULL, &fl, &e), 0);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(fl, "local");
    assert_non_null(ep);
    json_t *shape = sw_plan_shape(ep);
    assert_non_null(shape);

    struct swt_run r;
    assert_int_equal(
        swt_slipway(&r, "check", "--fleet", fleet, "local", "--ledger", f->path, "--json", NULL),
        0);
    json_t *out = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(known_bad_gate(out), "verdict")), "pass");
    json_decref(out);
    swt_run_free(&r);

    int64_t a = 0, rule = 0;
    struct sw_ledger_attempt at = {.endpoint = "local", .shape = shape};
    assert_int_equal(sw_ledger_deploy_begin(&f->l, &at, &a, &e), 0);
    json_t *ev = swl_json("{\"probe_check\":{\"name\":\"worst_case\",\"status\":\"fail\"}}");
    struct sw_ledger_attempt_end fin = {.outcome = "rolled_back",
                                        .failure_class = "worst_case",
                                        .evidence = ev,
                                        .downtime_ms = 2500,
                                        .note = "died on the longest prompt"};
    assert_int_equal(sw_ledger_deploy_finish(&f->l, a, &fin, &rule, &e), 0);
    assert_true(rule > 0);
    json_decref(ev);

    assert_int_equal(
        swt_slipway(&r, "check", "--fleet", fleet, "local", "--ledger", f->path, "--json", NULL),
        0);
    assert_int_equal(r.status, 1);
    out = swt_json_out(&r);
    const json_t *g = known_bad_gate(out);
    assert_string_equal(json_string_value(json_object_get(g, "verdict")), "fail");
    assert_non_null(strstr(json_string_value(json_object_get(g, "line")), "worst_case"));
    assert_non_null(strstr(json_string_value(json_object_get(g, "line")), "deploy attempt #"));
    json_decref(out);
    swt_run_free(&r);

    /* another shape of the same endpoint (--set) is not refused by it */
    assert_int_equal(swt_slipway(&r, "check", "--fleet", fleet, "local", "--ledger", f->path,
                                 "--set", "ctx_size=4096", "--json", NULL),
                     0);
    out = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(known_bad_gate(out), "verdict")), "pass");
    json_decref(out);
    swt_run_free(&r);
    json_decref(shape);
    sw_fleet_free(fl);
}

/* ---------------------------------------------------------------------------------------------
 * slipway history: both views.
 */

static void test_history_cli(void **state)
{
    struct swl_fx *f = *state;
    struct sw_err e;
    char pay[4300], n[SW_LEDGER_TAG_MAX];
    /* one payload present (the fixture), one gone */
    snprintf(pay, sizeof(pay), "[{\"path\":\"%s\",\"size\":%d,\"sha256\":null}]",
             swt_src("examples/local.yaml"), 0);
    json_t *p = swl_json(pay);
    FILE *fp = fopen(swt_src("examples/local.yaml"), "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    json_object_set_new(json_array_get(p, 0), "size", json_integer(ftell(fp)));
    fclose(fp);
    json_t *s = swl_json(SHAPE_A),
           *gone = swl_json("[{\"path\":\"/nonexistent/slipway/old.gguf\",\"size\":1}]");
    /* the oldest: the fixture's path at another size (a file since overwritten): judged by ITS
     * manifest, not by the newer tag's size for the same path */
    json_t *stale = json_deep_copy(p);
    json_object_set_new(
        json_array_get(stale, 0), "size",
        json_integer(json_integer_value(json_object_get(json_array_get(p, 0), "size")) + 1));
    struct sw_ledger_tag_new t = {
        .endpoint = "local", .shape = s, .payload = stale, .created_at = DAY1, .note = "stale"};
    assert_int_equal(sw_ledger_tag_commit(&f->l, &t, n, NULL, &e), 0);
    json_decref(stale);
    t.payload = gone;
    t.note = "first";
    assert_int_equal(sw_ledger_tag_commit(&f->l, &t, n, NULL, &e), 0);
    t.payload = p;
    t.created_at = DAY2;
    t.note = "second";
    assert_int_equal(sw_ledger_tag_commit(&f->l, &t, n, NULL, &e), 0);
    json_decref(s);
    json_decref(p);
    json_decref(gone);

    struct swt_run r;
    const char *fleet = swt_src("examples/local.yaml");
    assert_int_equal(
        swt_slipway(&r, "history", "local", "--fleet", fleet, "--ledger", f->path, "--json", NULL),
        0);
    assert_int_equal(r.status, 0);
    json_t *out = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(out, "last_good")), "local-20261204-1");
    json_t *tags = json_object_get(out, "tags");
    assert_int_equal(json_array_size(tags), 3);
    assert_true(json_is_false(json_object_get(json_array_get(tags, 2), "restorable")));
    assert_true(json_is_true(json_object_get(json_array_get(tags, 0), "restorable")));
    assert_true(json_is_false(json_object_get(json_array_get(tags, 1), "restorable")));
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(json_array_get(tags, 1), "missing"), 0)),
        "/nonexistent/slipway/old.gguf");
    json_decref(out);
    swt_run_free(&r);

    /* human view */
    assert_int_equal(
        swt_slipway(&r, "history", "local", "--fleet", fleet, "--ledger", f->path, NULL), 0);
    swt_out_has(&r, 0, "* local-20261204-1", "last-good", "restorable: NO",
                "missing: /nonexistent/slipway/old.gguf", "restorable: yes", NULL);

    /* no fleet: not checked */
    assert_int_equal(swt_slipway(&r, "history", "local", "--ledger", f->path, "--json", NULL), 0);
    out = swt_json_out(&r);
    assert_true(json_is_null(
        json_object_get(json_array_get(json_object_get(out, "tags"), 0), "restorable")));
    json_decref(out);
    swt_run_free(&r);

    /* a remote host: not checked (nothing here is looked at, nothing is reached) */
    char remote[4300];
    snprintf(remote, sizeof(remote), "%s/remote.yaml", f->dir);
    swt_write_str(remote, "version: 1\n"
                          "hosts:\n"
                          "  far:\n"
                          "    transport: {kind: ssh, address: far.invalid, user: op}\n"
                          "    devices:\n"
                          "      cpu: {kind: cpu, vendor: cpu}\n"
                          "endpoints:\n"
                          "  local:\n"
                          "    host: far\n"
                          "    engine: llama.cpp\n"
                          "    listen: 127.0.0.1:18080\n"
                          "    payload:\n"
                          "      path: /models/x.gguf\n"
                          "    shape:\n"
                          "      ctx_size: 8192\n");
    assert_int_equal(
        swt_slipway(&r, "history", "local", "--fleet", remote, "--ledger", f->path, "--json", NULL),
        0);
    assert_int_equal(r.status, 0);
    out = swt_json_out(&r);
    json_t *t0 = json_array_get(json_object_get(out, "tags"), 0);
    assert_true(json_is_null(json_object_get(t0, "restorable")));
    /* an ssh host is looked at over ssh: this one cannot be reached, so not checked, and why */
    const char *why = json_string_value(json_object_get(t0, "restorable_why"));
    assert_non_null(why);
    swt_has_all("why", why, "not checked", "far.invalid", NULL);
    json_decref(out);
    swt_run_free(&r);

    /* a retired tag says when and why */
    assert_int_equal(sw_ledger_tag_retire(&f->l, "local-20261203-1", "payload deleted", DAY2, &e),
                     0);
    assert_int_equal(swt_slipway(&r, "history", "local", "--ledger", f->path, NULL), 0);
    swt_has_all("stdout", r.out, "retired 2026-12-04T10:00:00Z: payload deleted",
                "not checked (no fleet given", NULL);
    swt_run_free(&r);
    /* an endpoint the ledger does not know: unusable input */
    swt_slipway_exits(2, "history", "nobody", "--ledger", f->path, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Allocation failures: nothing recorded, nothing leaked.
 */

struct tort {
    struct sw_ledger *l;
    int n;
};

static int run_deploy(void *arg)
{
    struct tort *t = arg;
    struct sw_err e;
    char ep[64];
    snprintf(ep, sizeof(ep), "tort-%04d", t->n++);
    json_t *s = json_loads(SHAPE_B, 0, NULL);
    json_t *ev = json_loads("{\"journal\":\"x\",\"boot_failure\":{\"class\":\"oom\"}}", 0, NULL);
    json_t *pay = json_loads("[{\"path\":\"/m/a.gguf\",\"size\":3}]", 0, NULL);
    int rc = s && ev && pay ? 0 : SW_ENOMEM;
    int64_t a = 0, st = 0, rule = 0;
    struct sw_ledger_attempt at = {.endpoint = ep, .shape = s, .note = "n"};
    if (!rc)
        rc = sw_ledger_deploy_begin(t->l, &at, &a, &e);
    if (!rc)
        rc = sw_ledger_deploy_step_begin(t->l, a, "start", &st, &e);
    if (!rc)
        rc = sw_ledger_deploy_step_end(t->l, st, "failed", ev, NULL, &e);
    struct sw_ledger_attempt_end fin = {
        .outcome = "rolled_back", .failure_class = "oom", .evidence = ev, .downtime_ms = 5};
    if (!rc)
        rc = sw_ledger_deploy_finish(t->l, a, &fin, &rule, &e);
    struct sw_ledger_tag_new tn = {.endpoint = ep,
                                   .shape = s,
                                   .payload = pay,
                                   .env_text = "HF_TOKEN=abcdefgh\n",
                                   .unit_text = "[Service]\n"};
    char name[SW_LEDGER_TAG_MAX];
    if (!rc)
        rc = sw_ledger_tag_commit(t->l, &tn, name, NULL, &e);
    json_t *h = NULL;
    if (!rc)
        rc = sw_ledger_history(t->l, ep, NULL, &h, &e);
    json_decref(h);
    json_decref(s);
    json_decref(ev);
    json_decref(pay);
    return rc;
}

static void test_torture(void **state)
{
    struct swl_fx *f = *state;
    struct tort t = {.l = &f->l};
    long n = swt_torture("deploy + tag + history", run_deploy, &t, SW_ENOMEM);
    assert_true(n > 10);
    /* every endpoint that got a tag has exactly one last-good */
    assert_int_equal(lsql(&f->l, "SELECT count(*) FROM (SELECT endpoint_id FROM tags GROUP BY "
                                 "endpoint_id HAVING sum(last_good) != 1)"),
                     0);
    struct sw_err e;
    bool ok = false;
    assert_int_equal(sw_ledger_verify(&f->l, &ok, &e), 0);
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attempt_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_by_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_deploy_at_a_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_refuses_failed_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_cli, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torture, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
