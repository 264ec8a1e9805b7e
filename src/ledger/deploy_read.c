/*
 * Reading the rollout's record back: deploy attempts with their steps, and an endpoint's history
 * (its tags, newest first, each with what the ledger measured of its shape on that endpoint and
 * whether it can be restored). Reads run in one read transaction, so they see one snapshot while
 * a deploy records.
 *
 * What it deliberately does not do: look at a host (restorability is the caller's callback) or
 * write (a stale open attempt is reported as interrupted here; sw_ledger_deploy_recover marks it).
 */
#include "deploy_internal.h"

#include <string.h>

#define HISTORY_ATTEMPTS 20

static const char SQL_ATTEMPTS[] =
    "SELECT a.id, e.name, s.hash, s.canonical, a.from_tag, t.name, a.started_ms, a.ended_ms, "
    "a.outcome, a.failure_class, a.downtime_ms, a.rule_id, a.note, a.evidence, a.owner_host, "
    "a.owner_boot, a.owner_pid, a.owner_start "
    "FROM deploy_attempts a JOIN endpoints e ON e.id = a.endpoint_id "
    "JOIN shapes s ON s.id = a.shape_id LEFT JOIN tags t ON t.id = a.tag_id "
    "WHERE (?1 IS NULL OR a.id = ?1) AND (?2 IS NULL OR e.name = ?2) "
    "ORDER BY a.id DESC LIMIT ?3";

static const char SQL_STEPS[] = "SELECT seq, name, started_ms, ended_ms, outcome, detail "
                                "FROM deploy_steps WHERE attempt_id = ?1 ORDER BY seq";

static json_t *ms_between(sqlite3_stmt *st, int a, int b)
{
    if (sqlite3_column_type(st, a) == SQLITE_NULL || sqlite3_column_type(st, b) == SQLITE_NULL)
        return json_null();
    return json_integer(sqlite3_column_int64(st, b) - sqlite3_column_int64(st, a));
}

static int steps_of(struct sw_ledger *l, int64_t attempt, bool open_alive, json_t **out,
                    struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    int rc = sw__dep_prepare(l, SQL_STEPS, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, attempt);
    json_t *arr = json_array();
    if (!arr)
        rc = SW_ENOMEM;
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        int orc = o ? 0 : SW_ENOMEM;
        bool open = sqlite3_column_type(st, 3) == SQLITE_NULL;
        sw__put(o, "seq", sw__col_int(st, 0), &orc);
        sw__put(o, "name", sw__col_str(st, 1), &orc);
        sw__put(o, "started_ms", sw__col_int(st, 2), &orc);
        sw__put(o, "ended_ms", sw__col_int(st, 3), &orc);
        sw__put(o, "ms", ms_between(st, 2, 3), &orc);
        sw__put(o, "outcome",
                open ? json_string(open_alive ? "running" : "interrupted") : sw__col_str(st, 4),
                &orc);
        sw__put(o, "detail", sw__dep_col_json(st, 5), &orc);
        if (orc) {
            json_decref(o);
            rc = SW_ENOMEM;
        } else if (json_array_append_new(arr, o)) {
            rc = SW_ENOMEM;
        }
    }
    sqlite3_finalize(st);
    if (rc) {
        json_decref(arr);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (s != SQLITE_DONE) {
        json_decref(arr);
        return sw__ledger_dberr(l, e, s, "reading deploy steps");
    }
    *out = arr;
    return 0;
}

static int attempt_row(struct sw_ledger *l, sqlite3_stmt *st, json_t **out, struct sw_err *e)
{
    int rc = 0;
    json_t *o = json_object();
    if (!o)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int64_t id = sqlite3_column_int64(st, 0);
    bool open = sqlite3_column_type(st, 8) == SQLITE_NULL;
    bool alive = false;
    char why[256] = "";
    if (open) {
        struct sw__dep_owner ow;
        memset(&ow, 0, sizeof(ow));
        const char *h = (const char *)sqlite3_column_text(st, 14);
        const char *b = (const char *)sqlite3_column_text(st, 15);
        snprintf(ow.host, sizeof(ow.host), "%s", h ? h : "");
        snprintf(ow.boot, sizeof(ow.boot), "%s", b ? b : "");
        ow.pid = sqlite3_column_int64(st, 16);
        ow.start = sqlite3_column_int64(st, 17);
        /* another host: cannot tell, so it is reported as running */
        alive = sw__dep_owner_alive(&ow, why, sizeof(why)) != 0;
    }
    const char *outcome = open ? (alive ? "running" : "interrupted") : NULL;
    sw__put(o, "id", json_integer(id), &rc);
    sw__put(o, "endpoint", sw__col_str(st, 1), &rc);
    sw__put(o, "shape_hash", sw__col_str(st, 2), &rc);
    sw__put(o, "shape", sw__dep_col_json(st, 3), &rc);
    sw__put(o, "from_tag", sw__col_str(st, 4), &rc);
    sw__put(o, "tag", sw__col_str(st, 5), &rc);
    sw__put(o, "started", sw__col_time(st, 6, 1000), &rc);
    sw__put(o, "ended", sw__col_time(st, 7, 1000), &rc);
    sw__put(o, "started_ms", sw__col_int(st, 6), &rc);
    sw__put(o, "ended_ms", sw__col_int(st, 7), &rc);
    sw__put(o, "ms", ms_between(st, 6, 7), &rc);
    sw__put(o, "outcome", outcome ? json_string(outcome) : sw__col_str(st, 8), &rc);
    /* recovered: false for a stale open attempt not yet marked (a read-only reader) */
    sw__put(o, "recovered", json_boolean(!(open && !alive)), &rc);
    sw__put(o, "failure_class", open && !alive ? json_string("interrupted") : sw__col_str(st, 9),
            &rc);
    sw__put(o, "downtime_ms", sw__col_int(st, 10), &rc);
    sw__put(o, "rule_id", sw__col_int(st, 11), &rc);
    sw__put(o, "note", sw__col_str(st, 12), &rc);
    sw__put(o, "evidence",
            open && !alive ? json_pack("{s:s}", "reason", why) : sw__dep_col_json(st, 13), &rc);
    json_t *owner = json_object();
    int orc = owner ? 0 : SW_ENOMEM;
    sw__put(owner, "host", sw__col_str(st, 14), &orc);
    sw__put(owner, "pid", sw__col_int(st, 16), &orc);
    if (orc) {
        json_decref(owner);
        owner = NULL;
    }
    sw__put(o, "owner", owner, &rc);
    if (rc) {
        json_decref(o);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    json_t *steps = NULL;
    rc = steps_of(l, id, alive, &steps, e);
    if (!rc && json_object_set_new(o, "steps", steps))
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

static int attempts(struct sw_ledger *l, int64_t id, const char *endpoint, int64_t limit,
                    json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    int rc = sw__dep_prepare(l, SQL_ATTEMPTS, &st, e);
    if (rc)
        return rc;
    sw__bind_i64(st, 1, id, id == 0);
    sw__bind_text(st, 2, endpoint);
    sqlite3_bind_int64(st, 3, limit > 0 ? limit : -1);
    json_t *arr = json_array();
    if (!arr)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = NULL;
        rc = attempt_row(l, st, &row, e);
        if (!rc && json_array_append_new(arr, row))
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading deploy attempts");
    sqlite3_finalize(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* A read snapshot around body. */
#define IN_READ(l, e, body)                                                                        \
    do {                                                                                           \
        int rc_ = sw__ledger_exec((l), "BEGIN", (e));                                              \
        if (rc_)                                                                                   \
            return rc_;                                                                            \
        rc_ = (body);                                                                              \
        sw__ledger_rollback(l);                                                                    \
        return rc_;                                                                                \
    } while (0)

static int deploy_get(struct sw_ledger *l, int64_t attempt, json_t **out, struct sw_err *e)
{
    json_t *arr = NULL;
    int rc = attempts(l, attempt, NULL, 1, &arr, e);
    if (rc)
        return rc;
    if (!json_array_size(arr)) {
        json_decref(arr);
        return sw_err_set(e, SW_ENOENT, "no deploy attempt #%lld in the ledger",
                          (long long)attempt);
    }
    *out = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    return 0;
}

int sw_ledger_deploy_get(struct sw_ledger *l, int64_t attempt, json_t **out, struct sw_err *e)
{
    *out = NULL;
    if (attempt <= 0)
        return sw_err_set(e, SW_ENOENT, "no deploy attempt #%lld in the ledger",
                          (long long)attempt);
    IN_READ(l, e, deploy_get(l, attempt, out, e));
}

int sw_ledger_deploy_list(struct sw_ledger *l, const char *endpoint, int64_t limit, json_t **out,
                          struct sw_err *e)
{
    *out = NULL;
    IN_READ(l, e, attempts(l, 0, endpoint, limit, out, e));
}

/* ---------------------------------------------------------------------------------------------
 * History.
 */

/* ?1 endpoint id, ?2 shape id. */
static const char SQL_MEASURED[] =
    "SELECT (SELECT count(*) FROM boots WHERE endpoint_id = ?1 AND shape_id = ?2), "
    "(SELECT count(*) FROM boots WHERE endpoint_id = ?1 AND shape_id = ?2 AND outcome = 'ok'), "
    "(SELECT count(*) FROM boots WHERE endpoint_id = ?1 AND shape_id = ?2 "
    " AND outcome = 'failed'), "
    "(SELECT json_extract(report, '$.kv_cache_tokens') FROM boots WHERE endpoint_id = ?1 "
    " AND shape_id = ?2 AND outcome = 'ok' ORDER BY id DESC LIMIT 1), "
    "(SELECT json_extract(report, '$.max_concurrency') FROM boots WHERE endpoint_id = ?1 "
    " AND shape_id = ?2 AND outcome = 'ok' ORDER BY id DESC LIMIT 1), "
    "(SELECT count(*) FROM battery_runs r JOIN boots b ON b.id = r.boot_id "
    " WHERE b.endpoint_id = ?1 AND b.shape_id = ?2), "
    "(SELECT count(*) FROM bench_runs r JOIN boots b ON b.id = r.boot_id "
    " WHERE b.endpoint_id = ?1 AND b.shape_id = ?2), "
    "(SELECT count(*) FROM usage WHERE endpoint_id = ?1 AND shape_id = ?2)";
static const char SQL_LAST_BATTERY[] =
    "SELECT r.passed, r.failed, r.skipped, r.started_at FROM battery_runs r "
    "JOIN boots b ON b.id = r.boot_id WHERE b.endpoint_id = ?1 AND b.shape_id = ?2 "
    "ORDER BY r.id DESC LIMIT 1";
static const char SQL_LAST_BENCH[] =
    "SELECT r.params, r.results, r.started_at FROM bench_runs r "
    "JOIN boots b ON b.id = r.boot_id WHERE b.endpoint_id = ?1 AND b.shape_id = ?2 "
    "ORDER BY r.id DESC LIMIT 1";
static const char SQL_LAST_USAGE[] =
    "SELECT device, used_mib, total_mib, free_mib, taken_at FROM usage "
    "WHERE endpoint_id = ?1 AND shape_id = ?2 ORDER BY id DESC LIMIT 1";

/* Run a "last row" query into an object of the named columns (JSON null when no row). */
static int last_row(struct sw_ledger *l, const char *sql, int64_t ep, int64_t shape,
                    const char *const *names, const char *kinds, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    int rc = sw__dep_prepare(l, sql, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    sqlite3_bind_int64(st, 2, shape);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        json_t *o = json_object();
        int orc = o ? 0 : SW_ENOMEM;
        for (int i = 0; names[i]; i++) {
            json_t *v = kinds[i] == 'j'   ? sw__dep_col_json(st, i)
                        : kinds[i] == 't' ? sw__col_time(st, i, 1)
                        : kinds[i] == 's' ? sw__col_str(st, i)
                                          : sw__col_num(st, i);
            sw__put(o, names[i], v, &orc);
        }
        if (orc) {
            json_decref(o);
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        } else {
            *out = o;
        }
    } else if (s == SQLITE_DONE) {
        *out = json_null();
    } else {
        rc = sw__ledger_dberr(l, e, s, "reading measured figures");
    }
    sqlite3_finalize(st);
    return rc;
}

static int measured(struct sw_ledger *l, int64_t ep, int64_t shape, json_t **out, struct sw_err *e)
{
    static const char *const bat[] = {"passed", "failed", "skipped", "when", NULL};
    static const char *const ben[] = {"params", "results", "when", NULL};
    static const char *const use[] = {"device", "used_mib", "total_mib", "free_mib", "when", NULL};
    sqlite3_stmt *st = NULL;
    json_t *o = NULL, *lb = NULL, *lbe = NULL, *lu = NULL;
    *out = NULL;
    int rc = sw__dep_prepare(l, SQL_MEASURED, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    sqlite3_bind_int64(st, 2, shape);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        rc = sw__ledger_dberr(l, e, s, "reading measured figures");
        sqlite3_finalize(st);
        return rc;
    }
    rc = last_row(l, SQL_LAST_BATTERY, ep, shape, bat, "nnnt", &lb, e);
    if (!rc)
        rc = last_row(l, SQL_LAST_BENCH, ep, shape, ben, "jjt", &lbe, e);
    if (!rc)
        rc = last_row(l, SQL_LAST_USAGE, ep, shape, use, "snnnt", &lu, e);
    if (rc) {
        sqlite3_finalize(st);
        json_decref(lb);
        json_decref(lbe);
        return rc;
    }
    int orc = 0;
    o = json_object();
    json_t *b = json_object(), *be = json_object(), *u = json_object();
    if (!o)
        orc = SW_ENOMEM;
    sw__put(o, "boots", sw__col_num(st, 0), &orc);
    sw__put(o, "boots_ok", sw__col_num(st, 1), &orc);
    sw__put(o, "boots_failed", sw__col_num(st, 2), &orc);
    sw__put(o, "kv_cache_tokens", sw__col_num(st, 3), &orc);
    sw__put(o, "max_concurrency", sw__col_num(st, 4), &orc);
    int brc = b ? 0 : SW_ENOMEM, berc = be ? 0 : SW_ENOMEM, urc = u ? 0 : SW_ENOMEM;
    sw__put(b, "runs", sw__col_num(st, 5), &brc);
    sw__put(b, "last", lb, &brc);
    sw__put(be, "runs", sw__col_num(st, 6), &berc);
    sw__put(be, "last", lbe, &berc);
    sw__put(u, "readings", sw__col_num(st, 7), &urc);
    sw__put(u, "last", lu, &urc);
    sqlite3_finalize(st);
    if (brc) {
        json_decref(b);
        b = NULL;
    }
    if (berc) {
        json_decref(be);
        be = NULL;
    }
    if (urc) {
        json_decref(u);
        u = NULL;
    }
    sw__put(o, "battery", b, &orc);
    sw__put(o, "bench", be, &orc);
    sw__put(o, "usage", u, &orc);
    if (orc) {
        json_decref(o);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    *out = o;
    return 0;
}

/* Ask the caller's callback (the sized one when set) whether what is there. */
static int ask(const struct sw_ledger_history_opts *o, const char *kind, const char *what,
               int64_t size, bool *here, struct sw_err *e)
{
    if (o->present_sized)
        return o->present_sized(o->ctx, kind, what, size, here, e);
    return o->present(o->ctx, kind, what, here, e);
}

/* restorable / missing / restorable_why of one tag through the caller's callback. */
static int restorable(const struct sw_ledger_history_opts *o, json_t *tag, struct sw_err *e)
{
    int rc = 0;
    if (!o || (!o->present && !o->present_sized)) {
        sw__put(tag, "restorable", json_null(), &rc);
        sw__put(tag, "missing", json_array(), &rc);
        sw__put(tag, "restorable_why",
                json_string(o && o->unchecked ? o->unchecked : "not checked"), &rc);
        return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
    }
    json_t *missing = json_array();
    if (!missing)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    struct sw_err pe;
    sw_err_clear(&pe);
    bool unknown = false;
    const json_t *payload = json_object_get(tag, "payload");
    size_t i;
    const json_t *x;
    json_array_foreach(payload, i, x)
    {
        const char *p = json_string_value(json_object_get(x, "path"));
        bool here = false;
        if (!p)
            continue;
        const json_t *sz = json_object_get(x, "size");
        if (ask(o, "path", p, json_is_integer(sz) ? (int64_t)json_integer_value(sz) : -1, &here,
                &pe)) {
            unknown = true;
            break;
        }
        if (!here && json_array_append_new(missing, json_string(p)))
            rc = SW_ENOMEM;
    }
    const char *image = json_string_value(json_object_get(tag, "image"));
    if (!unknown && !rc && image) {
        bool here = false;
        if (ask(o, "image", image, -1, &here, &pe))
            unknown = true;
        else if (!here && json_array_append_new(missing, json_string(image)))
            rc = SW_ENOMEM;
    }
    char why[1200];
    if (unknown)
        snprintf(why, sizeof(why), "not checked: %s", pe.msg);
    else if (json_array_size(missing))
        snprintf(why, sizeof(why), "%zu of its payload paths or its image are not on the host",
                 json_array_size(missing));
    else
        snprintf(why, sizeof(why), "its payload%s is on the host", image ? " and image" : "");
    sw__put(tag, "restorable", unknown ? json_null() : json_boolean(json_array_size(missing) == 0),
            &rc);
    sw__put(tag, "missing", missing, &rc);
    sw__put(tag, "restorable_why", json_string(why), &rc);
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
}

static int history(struct sw_ledger *l, const char *endpoint,
                   const struct sw_ledger_history_opts *o, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    json_t *res = NULL, *tags = NULL, *att = NULL;
    json_t *last_good = NULL;
    int64_t ep = 0;
    int rc = sw__ledger_endpoint_tx(l, endpoint, false, &ep, e);
    if (rc)
        return rc;
    rc = sw__dep_prepare(l,
                         "SELECT t.id, t.name, e.name, t.day, t.seq, s.hash, s.canonical, "
                         "t.attempt_id, t.image, t.created_at, t.note, t.last_good, t.retired_at, "
                         "t.retired_why, t.payload, t.unit_name, t.env_name, t.unit_text, "
                         "t.env_text, t.shape_id FROM tags t "
                         "JOIN endpoints e ON e.id = t.endpoint_id "
                         "JOIN shapes s ON s.id = t.shape_id WHERE t.endpoint_id = ?1 "
                         "ORDER BY t.id DESC",
                         &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, ep);
    tags = json_array();
    if (!tags)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *t = NULL, *m = NULL;
        if (sw__dep_tag_row(st, false, &t)) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            break;
        }
        if (json_array_append_new(tags, t)) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            break;
        }
        if (sqlite3_column_int(st, 11) && !last_good) {
            last_good = sw__col_str(st, 1);
            if (!last_good) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
                break;
            }
        }
        rc = measured(l, ep, sqlite3_column_int64(st, 19), &m, e);
        if (!rc && json_object_set_new(t, "measured", m))
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        if (!rc)
            rc = restorable(o, t, e);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading tags");
    sqlite3_finalize(st);
    if (!rc)
        rc = attempts(l, 0, endpoint, HISTORY_ATTEMPTS, &att, e);
    if (!rc) {
        int orc = 0;
        res = json_object();
        if (!res)
            orc = SW_ENOMEM;
        sw__put(res, "endpoint", json_string(endpoint), &orc);
        sw__put(res, "last_good", last_good ? last_good : json_null(), &orc);
        last_good = NULL;
        sw__put(res, "tags", tags, &orc);
        tags = NULL;
        sw__put(res, "attempts", att, &orc);
        att = NULL;
        if (orc) {
            json_decref(res);
            res = NULL;
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        }
    }
    json_decref(tags);
    json_decref(att);
    json_decref(last_good);
    if (!rc)
        *out = res;
    return rc;
}

int sw_ledger_history(struct sw_ledger *l, const char *endpoint,
                      const struct sw_ledger_history_opts *o, json_t **out, struct sw_err *e)
{
    *out = NULL;
    if (!endpoint)
        return sw_err_set(e, SW_EINVAL, "history: no endpoint given");
    IN_READ(l, e, history(l, endpoint, o, out, e));
}
