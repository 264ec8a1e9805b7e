/*
 * swledger: the ledger's synthetic load (see swledger.h). The records are the ones the hidden
 * `slipway ledger _record-loop` verb wrote before it left the binary: the same shapes, reports,
 * failures, batteries and readings, so the crash tests exercise the same paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swledger.h"
#include "swtest.h"

#include <slipway/ledger.h>

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One "KIND N\n" line in one write, as soon as the commit returned. */
static int say(int fd, const char *kind, int64_t id, struct sw_err *e)
{
    char line[64];
    int n = snprintf(line, sizeof(line), "%s %lld\n", kind, (long long)id);
    if (write(fd, line, (size_t)n) != n)
        return sw_err_set(e, SW_EIO, "writing the %s id", kind);
    return 0;
}

/* Round i: a boot (failed every fifth), its battery and a usage reading. */
static int one_round(struct sw_ledger *l, const char *ep, int64_t i, const char *excerpt, int fd,
                     struct sw_err *e)
{
    int rc = 0;
    int64_t boot = 0, run = 0, use = 0;
    json_t *shape = json_pack("{s:s,s:{s:s},s:I,s:i,s:s}", "engine", "llama.cpp", "model", "name",
                              "loop.gguf", "ctx", (json_int_t)(4096 * (1 + i % 7)), "slots",
                              1 + (int)(i % 3), "kv_dtype", "f16");
    json_t *report =
        json_pack("{s:I,s:f,s:[i,i,i]}", "kv_cache_tokens", (json_int_t)(4096 * (1 + i % 7)),
                  "max_concurrency", 1.5, "layers", 1, 2, 3);
    json_t *failure = i % 5 == 4 ? json_pack("{s:s,s:s,s:s}", "class", "oom", "phase", "kv_alloc",
                                             "message", "loop failure")
                                 : NULL;
    json_t *battery = json_pack(
        "{s:[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},"
        "{s:s,s:s,s:s,s:i}]}",
        "checks", "name", "readiness", "status", "pass", "evidence", "200", "ms", 1, "name",
        "liveness", "status", "pass", "evidence", "1 token", "ms", 2, "name", "models", "status",
        "pass", "evidence", "alias", "ms", 3, "name", "chat", "status", "fail", "evidence", "x",
        "ms", 4, "name", "vision", "status", "skip", "evidence", "none", "ms", 5);
    /* what a boot of llama.cpp reports, every fifth one failed */
    struct sw_ledger_boot b = {.endpoint = ep,
                               .engine = "llama.cpp",
                               .engine_version = "b0000",
                               .source = "_record-loop",
                               .note = "loop note",
                               .shape = shape,
                               .report = report,
                               .failure = failure,
                               .log_excerpt = excerpt,
                               .started_at = sw_wall_unix(),
                               .duration_ms = i};
    struct sw_ledger_usage u = {.endpoint = ep,
                                .device = "cpu0",
                                .used_mib = (uint64_t)i % 1000,
                                .total_mib = 1000,
                                .source = "_record-loop"};
    if (!shape || !report || !battery || (i % 5 == 4 && !failure)) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_ledger_record_boot(l, &b, &boot, e);
    if (rc)
        goto out;
    rc = say(fd, "boot", boot, e);
    if (rc)
        goto out;
    rc = sw_ledger_record_battery(l, ep, boot, "http://127.0.0.1:1", 0, battery, &run, e);
    if (rc)
        goto out;
    rc = say(fd, "battery", run, e);
    if (rc)
        goto out;
    u.boot_id = boot;
    rc = sw_ledger_record_usage(l, &u, &use, e);
    if (rc)
        goto out;
    rc = say(fd, "usage", use, e);
out:
    json_decref(shape);
    json_decref(report);
    json_decref(failure);
    json_decref(battery);
    return rc;
}

int swl_record_loop(const char *path, const char *endpoint, int64_t count, int64_t seconds, int fd,
                    struct sw_err *e)
{
    struct sw_ledger l;
    const char *ep = endpoint ? endpoint : "loop";
    int rc = sw_ledger_open(&l, path, NULL, e);
    if (rc)
        return rc;
    double until = seconds ? sw_now_s() + (double)seconds : 0;
    int64_t max = count ? count : (seconds ? INT64_MAX : 100);
    char excerpt[4096];
    for (size_t i = 0; i + 80 < sizeof(excerpt); i += 80)
        snprintf(excerpt + i, sizeof(excerpt) - i, "%-79s\n",
                 "llama_kv_cache: size = 272.00 MiB (4096 cells, 32 layers, 1/1 seqs)");
    for (int64_t i = 0; !rc && i < max && (!until || sw_now_s() < until); i++)
        rc = one_round(&l, ep, i, excerpt, fd, e);
    sw_ledger_close(&l);
    return rc;
}

pid_t swl_spawn_record_loop(const char *path, const char *endpoint, int64_t seconds, int *out)
{
    int p[2];
    if (pipe(p))
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        struct sw_err e;
        close(p[0]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        sw_err_clear(&e);
        int rc = swl_record_loop(path, endpoint, 0, seconds, p[1], &e);
        if (rc)
            dprintf(2, "record loop: %s\n", e.msg);
        _exit(rc ? 1 : 0);
    }
    close(p[1]);
    *out = p[0];
    return pid;
}

void swl_cli_import_seed(const char *path)
{
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "ledger", "import",
                                 swt_src("tests/data/ledger/seed-boots.json"), "--ledger", path,
                                 NULL),
                     0);
    if (r.status)
        fail_msg("ledger import of the seed into %s exited %d: %s", path, r.status, r.err);
    swt_run_free(&r);
}

json_t *swl_seed_before_night(void)
{
    static const char *const night[] = {"ladder-262144", "ladder-245760", "ladder-237568",
                                        "bf16-3x241664"};
    struct sw_err e;
    json_t *seed = sw_json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 1 << 24, &e);
    if (!seed)
        fail_msg("%s", e.msg);
    json_t *all = json_object_get(seed, "boots");
    for (size_t i = json_array_size(all); i-- > 0;) {
        const char *ref = json_string_value(json_object_get(json_array_get(all, i), "ref"));
        for (size_t k = 0; ref && k < SW_ARRAY_LEN(night); k++)
            if (!strcmp(ref, night[k])) {
                json_array_remove(all, i);
                break;
            }
    }
    json_object_set_new(seed, "ladder_rungs", json_array());
    return seed;
}
int swl_same_schema(const char *a_path, const char *b_path)
{
    sqlite3 *a = NULL, *b = NULL;
    assert_int_equal(sqlite3_open(a_path, &a), SQLITE_OK);
    assert_int_equal(sqlite3_open(b_path, &b), SQLITE_OK);
    sqlite3_stmt *sa, *sb;
    const char *q = "SELECT type, name, sql FROM sqlite_schema ORDER BY type, name";
    assert_int_equal(sqlite3_prepare_v2(a, q, -1, &sa, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(b, q, -1, &sb, NULL), SQLITE_OK);
    int rows = 0;
    for (;;) {
        int ra = sqlite3_step(sa), rb = sqlite3_step(sb);
        assert_int_equal(ra, rb);
        if (ra != SQLITE_ROW)
            break;
        rows++;
        for (int c = 0; c < 3; c++) {
            const char *x = (const char *)sqlite3_column_text(sa, c);
            const char *y = (const char *)sqlite3_column_text(sb, c);
            if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
                fail_msg("schema differs: %s vs %s", x ? x : "NULL", y ? y : "NULL");
        }
    }
    sqlite3_finalize(sa);
    sqlite3_finalize(sb);
    sqlite3_close(a);
    sqlite3_close(b);
    return rows;
}

struct swl_fx *swl_fx_open(const char *rel)
{
    struct swl_fx *f = calloc(1, sizeof(*f));
    struct sw_err e;
    assert_non_null(f);
    f->dir = swt_tmpdir();
    snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, rel);
    if (sw_ledger_open(&f->l, f->path, NULL, &e))
        fail_msg("open %s: %s", f->path, e.msg);
    return f;
}

void swl_fx_close(struct swl_fx *f)
{
    sw_ledger_close(&f->l);
    swt_tmpdir_free(f->dir);
    free(f);
}

json_t *swl_json(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, text);
    return j;
}

int64_t swl_import_seed(struct sw_ledger *l, const char *source)
{
    struct sw_err e;
    struct sw_ledger_import_stats st = {0};
    json_t *seed = json_load_file(swt_src("tests/data/ledger/seed-boots.json"), 0, NULL);
    assert_non_null(seed);
    if (sw_ledger_import(l, seed, source, &st, &e))
        fail_msg("import of the seed: %s", e.msg);
    json_decref(seed);
    return st.added;
}

json_t *swl_last_attempt(const char *path, const char *endpoint, const char *step,
                         const json_t **detail)
{
    struct sw_ledger l;
    struct sw_err e;
    sw_err_clear(&e);
    struct sw_ledger_open_opts oo = {.readonly = true};
    if (sw_ledger_open(&l, path, &oo, &e))
        fail_msg("the ledger %s: %s", path, e.msg);
    json_t *list = NULL;
    int rc = sw_ledger_deploy_list(&l, endpoint, 1, &list, &e);
    sw_ledger_close(&l);
    if (rc)
        fail_msg("%s's attempts: %s", endpoint, e.msg);
    if (json_array_size(list) != 1)
        fail_msg("the ledger %s holds no attempt of %s", path, endpoint);
    json_t *a = json_incref(json_array_get(list, 0));
    json_decref(list);
    size_t i;
    const json_t *st;
    *detail = NULL;
    json_array_foreach(json_object_get(a, "steps"), i, st)
    {
        if (!strcmp(json_string_value(json_object_get(st, "name")), step))
            *detail = json_object_get(st, "detail");
    }
    return a;
}
