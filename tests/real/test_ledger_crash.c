/*
 * The ledger under real processes: a recorder in a process of its own (tests/support/swledger.c,
 * which records in a loop through the library and writes every id right after its commit
 * returned; it was the hidden `slipway ledger _record-loop` verb), readers through the binary.
 *   - kill -9 at a random point, several times over one file: reopen, integrity_check ok, every
 *     printed (committed) row present, no half record anywhere;
 *   - two recorders at once for a few seconds, a reader beside them: both exit 0 (no SQLITE_BUSY
 *     surfaced), every printed row present, the counts add up.
 * Processes are stopped by PID; loops are bounded by count or time, never by a speed threshold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/ledger.h>

#include <sqlite3.h>

#include "swledger.h"
#include "swtest.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct child {
    pid_t pid;
    int out; /* read end of its stdout */
    char buf[65536];
    size_t len; /* bytes in buf not yet split into lines */
    /* ids printed so far */
    int64_t *boots, *batteries, *usages;
    size_t nb, nr, nu, cap;
};

static void spawn(struct child *c, const char *ledger, const char *endpoint, int64_t seconds)
{
    memset(c, 0, sizeof(*c));
    c->pid = swl_spawn_record_loop(ledger, endpoint, seconds, &c->out);
    assert_true(c->pid > 0);
    c->cap = 1024;
    c->boots = calloc(c->cap, sizeof(int64_t));
    c->batteries = calloc(c->cap, sizeof(int64_t));
    c->usages = calloc(c->cap, sizeof(int64_t));
}

static void push(int64_t **arr, size_t *n, size_t *cap, int64_t v)
{
    (void)cap;
    if (*n % 1024 == 0 && *n)
        *arr = realloc(*arr, (*n + 1024) * sizeof(int64_t));
    (*arr)[(*n)++] = v;
}

/* Read what is there (waiting up to ms); returns the number of complete lines taken, -1 at EOF. */
static int read_lines(struct child *c, int ms)
{
    struct pollfd pf = {c->out, POLLIN, 0};
    int r = poll(&pf, 1, ms);
    if (r <= 0)
        return 0;
    ssize_t n = read(c->out, c->buf + c->len, sizeof(c->buf) - c->len - 1);
    if (n <= 0)
        return -1;
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
    int lines = 0;
    char *start = c->buf, *nl;
    while ((nl = strchr(start, '\n'))) {
        *nl = '\0';
        long long id = 0;
        if (sscanf(start, "boot %lld", &id) == 1)
            push(&c->boots, &c->nb, &c->cap, id);
        else if (sscanf(start, "battery %lld", &id) == 1)
            push(&c->batteries, &c->nr, &c->cap, id);
        else if (sscanf(start, "usage %lld", &id) == 1)
            push(&c->usages, &c->nu, &c->cap, id);
        else
            fail_msg("unexpected line from the recorder: '%s'", start);
        lines++;
        start = nl + 1;
    }
    c->len -= (size_t)(start - c->buf);
    memmove(c->buf, start, c->len);
    return lines;
}

static int wait_child(struct child *c)
{
    int st = 0;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(c->out);
    return st;
}

static void free_child(struct child *c)
{
    free(c->boots);
    free(c->batteries);
    free(c->usages);
}

static int64_t q1(sqlite3 *db, const char *sql, int64_t arg)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, arg);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Everything a child printed is in the ledger, whole. */
static void check_committed(struct sw_ledger *l, const struct child *c)
{
    for (size_t i = 0; i < c->nb; i++) {
        if (q1(l->db, "SELECT count(*) FROM boots WHERE id = ?1", c->boots[i]) != 1)
            fail_msg("boot %lld was committed (printed) but is missing", (long long)c->boots[i]);
    }
    for (size_t i = 0; i < c->nr; i++) {
        if (q1(l->db, "SELECT count(*) FROM battery_checks WHERE run_id = ?1", c->batteries[i]) !=
            5)
            fail_msg("battery run %lld is missing or partial", (long long)c->batteries[i]);
    }
    for (size_t i = 0; i < c->nu; i++) {
        if (q1(l->db, "SELECT count(*) FROM usage WHERE id = ?1", c->usages[i]) != 1)
            fail_msg("usage %lld was committed (printed) but is missing", (long long)c->usages[i]);
    }
}

/* No half record anywhere in the file: every battery run has its 5 checks, every boot its note,
 * every failed boot its failure, integrity and foreign keys hold. */
static void check_whole(struct sw_ledger *l)
{
    bool ok = false;
    struct sw_err e;
    assert_int_equal(sw_ledger_verify(l, &ok, &e), 0);
    if (!ok)
        fail_msg("verify: %s", e.msg);
    assert_int_equal(q1(l->db,
                        "SELECT count(*) FROM battery_runs r WHERE (SELECT count(*) FROM "
                        "battery_checks c WHERE c.run_id = r.id) <> 5 AND ?1",
                        1),
                     0);
    assert_int_equal(q1(l->db,
                        "SELECT count(*) FROM boots b WHERE (SELECT count(*) FROM notes n "
                        "WHERE n.kind = 'boot' AND n.subject_id = b.id) <> 1 AND ?1",
                        1),
                     0);
    assert_int_equal(q1(l->db,
                        "SELECT count(*) FROM boots WHERE outcome = 'failed' AND "
                        "json_extract(failure, '$.class') IS NOT 'oom' AND ?1",
                        1),
                     0);
}

static void test_kill9_mid_record(void **state)
{
    char *dir = swt_tmpdir();
    char path[4096];
    snprintf(path, sizeof(path), "%s/kill.sqlite", dir);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    print_message("kill -9 test: seed %u\n", seed);
    srand(seed);
    int64_t total_boots = 0;
    for (int round = 0; round < 6; round++) {
        struct child c;
        spawn(&c, path, "kill", 120);
        /* let it commit a random number of records, then kill it within a few ms, which lands
         * anywhere: inside a transaction, inside a WAL write, between two records */
        int target = 1 + rand() % 120;
        int got = 0;
        double deadline = sw_now_s() + 60;
        while (got < target && sw_now_s() < deadline) {
            int n = read_lines(&c, 100);
            if (n < 0)
                fail_msg("the recorder exited early");
            got += n;
        }
        assert_true(got >= target);
        struct timespec ts = {0, (long)(rand() % 3000) * 1000L};
        nanosleep(&ts, NULL);
        assert_int_equal(kill(c.pid, SIGKILL), 0);
        /* what it printed before dying is committed too */
        while (read_lines(&c, 50) >= 0)
            ;
        int st = wait_child(&c);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

        struct sw_ledger l;
        struct sw_err e;
        if (sw_ledger_open(&l, path, NULL, &e))
            fail_msg("reopen after kill -9 (round %d): %s", round, e.msg);
        check_committed(&l, &c);
        check_whole(&l);
        /* at most one record (the one being printed) committed beyond what was printed */
        int64_t max_boot = q1(l.db, "SELECT coalesce(max(id), 0) FROM boots WHERE ?1", 1);
        assert_true(c.nb > 0);
        assert_true(max_boot <= c.boots[c.nb - 1] + 1);
        total_boots = max_boot;
        sw_ledger_close(&l);
        free_child(&c);
    }
    print_message("kill -9 test: %lld boots over 6 kills\n", (long long)total_boots);
    swt_tmpdir_free(dir);
}

static void test_two_recorders(void **state)
{
    char *dir = swt_tmpdir();
    char path[4096];
    snprintf(path, sizeof(path), "%s/two.sqlite", dir);
    struct child a, b;
    /* both start on a file that does not exist yet: creation and migration race too */
    spawn(&a, path, "alpha", 3);
    spawn(&b, path, "beta", 3);
    bool a_open = true, b_open = true;
    int readers = 0;
    while (a_open || b_open) {
        if (a_open && read_lines(&a, 20) < 0)
            a_open = false;
        if (b_open && read_lines(&b, 20) < 0)
            b_open = false;
        if (readers < 5 && (a.nb > 0 || b.nb > 0)) {
            /* a reader beside the two writers */
            struct swt_run r;
            assert_int_equal(
                swt_slipway(&r, "ledger", "--ledger", path, "list", "--json", "--limit", "3", NULL),
                0);
            if (r.status != 0)
                fail_msg("reader failed: %s", r.err);
            json_decref(swt_json_out(&r));
            swt_run_free(&r);
            readers++;
        }
    }
    int sa = wait_child(&a), sb = wait_child(&b);
    if (!WIFEXITED(sa) || WEXITSTATUS(sa) != 0 || !WIFEXITED(sb) || WEXITSTATUS(sb) != 0)
        fail_msg("a recorder failed (status %d, %d): SQLITE_BUSY or worse surfaced", sa, sb);
    assert_true(a.nb > 0 && b.nb > 0);
    print_message("two recorders: %zu + %zu boots, %zu + %zu batteries, %zu + %zu readings, "
                  "%d reads beside them\n",
                  a.nb, b.nb, a.nr, b.nr, a.nu, b.nu, readers);

    struct sw_ledger l;
    struct sw_err e;
    assert_int_equal(sw_ledger_open(&l, path, NULL, &e), 0);
    check_committed(&l, &a);
    check_committed(&l, &b);
    check_whole(&l);
    assert_int_equal(q1(l.db, "SELECT count(*) FROM boots WHERE ?1", 1), (int64_t)(a.nb + b.nb));
    assert_int_equal(q1(l.db, "SELECT count(*) FROM battery_runs WHERE ?1", 1),
                     (int64_t)(a.nr + b.nr));
    assert_int_equal(q1(l.db, "SELECT count(*) FROM usage WHERE ?1", 1), (int64_t)(a.nu + b.nu));
    assert_int_equal(q1(l.db,
                        "SELECT count(*) FROM boots b JOIN endpoints e ON e.id = "
                        "b.endpoint_id WHERE e.name = 'alpha' AND ?1",
                        1),
                     (int64_t)a.nb);
    sw_ledger_close(&l);
    free_child(&a);
    free_child(&b);
    swt_tmpdir_free(dir);
}

int main(void)
{
    sw_core_init();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_mid_record),
        cmocka_unit_test(test_two_recorders),
    };
    return cmocka_run_group_tests_name("ledger_crash", tests, NULL, NULL);
}
