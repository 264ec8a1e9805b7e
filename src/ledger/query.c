/*
 * Reading the ledger back as JSON: boots (summaries or in full, with their shapes, usage
 * readings and notes, which is what calibrate consumes), usage readings, what the gates refuse
 * (shapes that failed, known-bad rules), row counts, and the full export that sw_ledger_import
 * reads back. Multi-statement reads run inside one read transaction so they see one snapshot
 * even while another process records.
 *
 * What it deliberately does not do: interpret reports (the engine adapters own their fields) or
 * decide anything.
 */
#include "ledger_internal.h"

#include <string.h>

static int read_begin(struct sw_ledger *l, struct sw_err *e)
{
    return sw__ledger_exec(l, "BEGIN", e);
}

static void read_end(struct sw_ledger *l)
{
    sw__ledger_rollback(l); /* nothing was written: ending the read is all it does */
}

static json_t *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    /* a ledger is a file anyone may have edited: what is not UTF-8 is repaired, not lost */
    return t ? sw_json_text((const char *)t, (size_t)sqlite3_column_bytes(st, i), NULL)
             : json_null();
}

static json_t *col_int(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null()
                                                     : json_integer(sqlite3_column_int64(st, i));
}

static json_t *col_num(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    default:
        return json_null();
    }
}

static json_t *col_time(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    char buf[40];
    return json_string(sw_fmt_time(sqlite3_column_int64(st, i), buf, sizeof(buf)));
}

/* Parse a stored JSON column; NULL column -> JSON null. */
static int col_json(struct sw_ledger *l, sqlite3_stmt *st, int i, json_t **out, struct sw_err *e)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    if (!t) {
        *out = json_null();
        return *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    json_error_t je;
    *out = json_loadb(t, (size_t)sqlite3_column_bytes(st, i), JSON_DECODE_ANY, &je);
    if (*out)
        return 0;
    /* Stored JSON passed json_valid on the way in, and jansson reports some allocation failures
     * as syntax errors: ask SQLite whether the text is valid to tell out-of-memory (valid text)
     * from a damaged file (invalid text). */
    sqlite3_stmt *v;
    int rc = sw__ledger_stmt(l, LST_JSON_VALID, &v, e);
    if (rc)
        return rc;
    sqlite3_bind_text(v, 1, t, sqlite3_column_bytes(st, i), SQLITE_STATIC);
    bool valid = sqlite3_step(v) == SQLITE_ROW && sqlite3_column_int(v, 0) == 1;
    sqlite3_reset(v);
    sqlite3_clear_bindings(v);
    if (valid)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return sw_err_at(e, SW_EDB, l->path, 0, 0, "a stored JSON column does not parse: %s", je.text);
}

/* Build an object from (key, new reference) pairs; any NULL value means out of memory. */
static int put(json_t *o, const char *k, json_t *v, int *rc)
{
    if (*rc)
        json_decref(v);
    else if (!v || json_object_set_new(o, k, v))
        *rc = SW_ENOMEM;
    return *rc;
}

static int oom(struct sw_err *e)
{
    return sw_err_set(e, SW_ENOMEM, "out of memory");
}

static int notes_of(struct sw_ledger *l, const char *kind, int64_t id, json_t **out,
                    struct sw_err *e)
{
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, LST_NOTES_OF, &st, e);
    if (rc)
        return rc;
    json_t *arr = json_array();
    if (!arr)
        return oom(e);
    sw__bind_text(st, 1, kind);
    sqlite3_bind_int64(st, 2, id);
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *n = json_object();
        if (!n) {
            rc = oom(e);
            break;
        }
        put(n, "id", col_int(st, 0), &rc);
        put(n, "text", col_str(st, 3), &rc);
        put(n, "author", col_str(st, 4), &rc);
        put(n, "created_at", col_time(st, 6), &rc);
        if (rc)
            json_decref(n);
        else if (json_array_append_new(arr, n)) /* takes n even when it fails */
            rc = SW_ENOMEM;
        if (rc)
            oom(e);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading notes");
    sqlite3_reset(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* One usage row (LST_USAGE_LIST columns) as JSON. */
static int usage_row(struct sw_ledger *l, sqlite3_stmt *st, bool for_export, json_t **out,
                     struct sw_err *e)
{
    int rc = 0;
    json_t *u = json_object();
    if (!u)
        return oom(e);
    put(u, "id", col_int(st, 0), &rc);
    put(u, "endpoint", col_str(st, 1), &rc);
    put(u, "boot", col_int(st, 2), &rc);
    if (for_export) {
        json_t *canon = NULL;
        if (!rc)
            rc = col_json(l, st, 5, &canon, e);
        put(u, "shape", canon, &rc);
    } else {
        json_t *sh = sqlite3_column_type(st, 3) == SQLITE_NULL
                         ? json_null()
                         : json_pack("{s:I,s:s}", "id", (json_int_t)sqlite3_column_int64(st, 3),
                                     "hash", (const char *)sqlite3_column_text(st, 4));
        put(u, "shape", sh, &rc);
    }
    put(u, "device", col_str(st, 6), &rc);
    put(u, "used_mib", col_int(st, 7), &rc);
    put(u, "total_mib", col_int(st, 8), &rc);
    /* free as the tool printed it when it was read, else total - used */
    bool read = sqlite3_column_type(st, 15) != SQLITE_NULL;
    if (for_export)
        put(u, "free_mib", col_int(st, 15), &rc);
    else
        put(u, "free_mib",
            json_integer(read ? sqlite3_column_int64(st, 15)
                              : sqlite3_column_int64(st, 8) - sqlite3_column_int64(st, 7)),
            &rc);
    if (!for_export)
        put(u, "free_read", json_boolean(read), &rc);
    put(u, "source", col_str(st, 9), &rc);
    put(u, "taken_at", col_time(st, 10), &rc);
    put(u, "note", col_str(st, 11), &rc);
    put(u, "source_line", col_str(st, 12), &rc);
    if (for_export)
        put(u, "ext_id", col_str(st, 14), &rc);
    if (rc) {
        json_decref(u);
        return rc == SW_ENOMEM ? oom(e) : rc;
    }
    *out = u;
    return 0;
}

static int usage_query(struct sw_ledger *l, const char *endpoint, int64_t shape_id, int64_t boot_id,
                       int64_t limit, bool for_export, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st;
    bool of_boot = boot_id && !endpoint && !shape_id && limit <= 0;
    int rc = sw__ledger_stmt(l, of_boot ? LST_USAGE_OF_BOOT : LST_USAGE_LIST, &st, e);
    if (rc)
        return rc;
    json_t *arr = json_array();
    if (!arr)
        return oom(e);
    if (of_boot) {
        sqlite3_bind_int64(st, 1, boot_id);
    } else {
        sw__bind_text(st, 1, endpoint);
        sw__bind_i64(st, 2, shape_id, shape_id == 0);
        sw__bind_i64(st, 3, boot_id, boot_id == 0);
        sqlite3_bind_int64(st, 4, limit > 0 ? limit : -1);
    }
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *u = NULL;
        rc = usage_row(l, st, for_export, &u, e);
        if (!rc && json_array_append_new(arr, u))
            rc = oom(e);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading usage");
    sqlite3_reset(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

/* One boot row (BOOT_COLS) as JSON. */
static int boot_row(struct sw_ledger *l, sqlite3_stmt *st, int mode, json_t **out, struct sw_err *e)
{
    enum { SUMMARY = 0, FULL = 1, EXPORT = 2 };
    int rc = 0;
    json_t *b = json_object();
    json_t *canon = NULL;
    if (!b)
        return oom(e);
    int64_t id = sqlite3_column_int64(st, 0);
    rc = col_json(l, st, 4, &canon, e);
    if (rc)
        goto out;
    put(b, "id", json_integer(id), &rc);
    put(b, "endpoint", col_str(st, 1), &rc);
    if (mode == EXPORT) {
        put(b, "shape", json_incref(canon), &rc);
        put(b, "shape_hash", col_str(st, 3), &rc);
    } else if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
        put(b, "shape", json_null(), &rc);
    } else {
        json_t *sh = json_pack("{s:I,s:s}", "id", (json_int_t)sqlite3_column_int64(st, 2), "hash",
                               (const char *)sqlite3_column_text(st, 3));
        if (sh && mode == FULL)
            put(sh, "canonical", json_incref(canon), &rc);
        put(b, "shape", sh, &rc);
    }
    if (mode != EXPORT) {
        char sum[256];
        put(b, "shape_summary", json_string(sw_ledger_shape_summary(canon, sum, sizeof(sum))), &rc);
    }
    put(b, "engine", col_str(st, 5), &rc);
    put(b, "engine_version", col_str(st, 6), &rc);
    put(b, "started_at", col_time(st, 7), &rc);
    put(b, "ended_at", col_time(st, 8), &rc);
    put(b, "duration_ms", col_int(st, 9), &rc);
    put(b, "outcome", col_str(st, 10), &rc);
    put(b, "failure_class", col_str(st, 11), &rc);
    put(b, "failure_phase", col_str(st, 12), &rc);
    if (mode == SUMMARY) {
        put(b, "kv_cache_tokens", col_num(st, 18), &rc);
        put(b, "max_concurrency", col_num(st, 19), &rc);
    }
    put(b, "source", col_str(st, 14), &rc);
    if (rc)
        goto out;
    if (mode != SUMMARY) {
        static const char *const docs[] = {"predicted", "report", "failure"};
        for (int i = 0; i < 3 && !rc; i++) {
            json_t *j = NULL;
            rc = col_json(l, st, 20 + i, &j, e);
            if (!rc)
                put(b, docs[i], j, &rc);
        }
        put(b, "log_path", col_str(st, 13), &rc);
        put(b, "log_excerpt", col_str(st, 23), &rc);
        put(b, "source_line", col_str(st, 15), &rc);
        put(b, "recorded_at", col_time(st, 16), &rc);
        put(b, "ext_id", col_str(st, 17), &rc);
    }
    if (rc)
        goto out;
    if (mode == FULL) {
        json_t *u = NULL, *n = NULL;
        rc = usage_query(l, NULL, 0, id, 0, false, &u, e);
        if (!rc)
            put(b, "usage", u, &rc);
        if (!rc)
            rc = notes_of(l, "boot", id, &n, e);
        if (!rc)
            put(b, "notes", n, &rc);
    }
out:
    json_decref(canon);
    if (rc) {
        json_decref(b);
        return rc == SW_ENOMEM && (!e || e->code != SW_ENOMEM) ? oom(e) : rc;
    }
    *out = b;
    return 0;
}

static int boots_query(struct sw_ledger *l, const struct sw_ledger_query *q, int mode, json_t **out,
                       struct sw_err *e)
{
    static const struct sw_ledger_query all = {0};
    if (!q)
        q = &all;
    if (q->outcome && strcmp(q->outcome, "ok") && strcmp(q->outcome, "failed"))
        return sw_err_set(e, SW_EINVAL, "outcome filter must be ok or failed");
    sqlite3_stmt *st;
    enum sw__lst which = mode == 0 ? (q->newest_first ? LST_BOOTS_DESC : LST_BOOTS_ASC)
                                   : (q->newest_first ? LST_BOOTS_FULL_DESC : LST_BOOTS_FULL_ASC);
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    json_t *arr = json_array();
    if (!arr)
        return oom(e);
    sw__bind_text(st, 1, q->endpoint);
    sw__bind_text(st, 2, q->outcome);
    sw__bind_i64(st, 3, q->shape_id, q->shape_id == 0);
    sqlite3_bind_int64(st, 4, q->limit > 0 ? q->limit : -1);
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *b = NULL;
        rc = boot_row(l, st, mode, &b, e);
        if (!rc && json_array_append_new(arr, b))
            rc = oom(e);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading boots");
    sqlite3_reset(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

int sw_ledger_boots(struct sw_ledger *l, const struct sw_ledger_query *q, json_t **out,
                    struct sw_err *e)
{
    *out = NULL;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    rc = boots_query(l, q, q && q->full ? 1 : 0, out, e);
    read_end(l);
    return rc;
}

int sw_ledger_boot(struct sw_ledger *l, int64_t id, json_t **out, struct sw_err *e)
{
    *out = NULL;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_BOOT_ONE, &st, e);
    if (rc)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        rc = boot_row(l, st, 1, out, e);
    else if (s == SQLITE_DONE)
        rc = sw_err_at(e, SW_ENOENT, l->path, 0, 0, "no boot %lld in the ledger", (long long)id);
    else
        rc = sw__ledger_dberr(l, e, s, "reading a boot");
    sqlite3_reset(st);
out:
    read_end(l);
    return rc;
}

int sw_ledger_usage_list(struct sw_ledger *l, const struct sw_ledger_query *q, json_t **out,
                         struct sw_err *e)
{
    static const struct sw_ledger_query all = {0};
    if (!q)
        q = &all;
    *out = NULL;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    rc = usage_query(l, q->endpoint, q->shape_id, 0, q->limit, false, out, e);
    read_end(l);
    return rc;
}

static int rule_row(struct sw_ledger *l, sqlite3_stmt *st, bool for_export, json_t **out,
                    struct sw_err *e)
{
    int rc = 0;
    json_t *f = NULL;
    json_t *r = json_object();
    if (!r)
        return oom(e);
    rc = col_json(l, st, 4, &f, e);
    put(r, "id", col_int(st, 0), &rc);
    put(r, "endpoint", col_str(st, 1), &rc);
    put(r, "expr", col_str(st, 2), &rc);
    put(r, "reason", col_str(st, 3), &rc);
    put(r, "failure", f, &rc);
    put(r, "boot", col_int(st, 5), &rc);
    put(r, "source", col_str(st, 6), &rc);
    put(r, "source_line", col_str(st, 7), &rc);
    put(r, "created_at", col_time(st, 8), &rc);
    if (for_export)
        put(r, "ext_id", col_str(st, 9), &rc);
    if (rc) {
        json_decref(r);
        return rc == SW_ENOMEM ? oom(e) : rc;
    }
    *out = r;
    return 0;
}

/* Run a list statement whose ?1 is an optional endpoint name; row() turns each row into JSON. */
static int list(struct sw_ledger *l, enum sw__lst which, const char *endpoint,
                int (*row)(struct sw_ledger *, sqlite3_stmt *, bool, json_t **, struct sw_err *),
                bool for_export, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    json_t *arr = json_array();
    if (!arr)
        return oom(e);
    sw__bind_text(st, 1, endpoint);
    int s;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *r = NULL;
        rc = row(l, st, for_export, &r, e);
        if (!rc && json_array_append_new(arr, r))
            rc = oom(e);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading the ledger");
    sqlite3_reset(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

int sw_ledger_known_bad(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e)
{
    *out = NULL;
    json_t *doc = json_object();
    json_t *shapes = json_array();
    json_t *rules = NULL;
    sqlite3_stmt *st, *fst;
    int rc = 0, s;
    if (!doc || !shapes) {
        rc = oom(e);
        goto done;
    }
    rc = read_begin(l, e);
    if (rc)
        goto done;
    rc = sw__ledger_stmt(l, LST_BAD_SHAPES, &st, e);
    if (rc)
        goto out;
    sw__bind_text(st, 1, endpoint);
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *canon = NULL, *fails = json_array(), *o = json_object();
        if (!fails || !o)
            rc = oom(e);
        if (!rc)
            rc = col_json(l, st, 2, &canon, e);
        put(o, "shape_id", col_int(st, 0), &rc);
        put(o, "hash", col_str(st, 1), &rc);
        put(o, "canonical", canon, &rc);
        put(o, "endpoint", col_str(st, 3), &rc);
        put(o, "failed", col_int(st, 5), &rc);
        put(o, "ok", col_int(st, 6), &rc);
        if (!rc)
            rc = sw__ledger_stmt(l, LST_BAD_FAILURES, &fst, e);
        if (!rc) {
            sqlite3_bind_int64(fst, 1, sqlite3_column_int64(st, 0));
            sqlite3_bind_int64(fst, 2, sqlite3_column_int64(st, 4));
            int fs;
            while (!rc && (fs = sqlite3_step(fst)) == SQLITE_ROW) {
                json_t *f = NULL, *fo = json_object();
                if (!fo)
                    rc = oom(e);
                if (!rc)
                    rc = col_json(l, fst, 1, &f, e);
                put(fo, "boot", col_int(fst, 0), &rc);
                put(fo, "started_at", col_time(fst, 2), &rc);
                put(fo, "failure", f, &rc);
                if (!rc && json_array_append_new(fails, fo))
                    rc = SW_ENOMEM;
                else if (rc)
                    json_decref(fo);
            }
            if (!rc && fs != SQLITE_DONE)
                rc = sw__ledger_dberr(l, e, fs, "reading failures");
            sqlite3_reset(fst);
        }
        put(o, "failures", fails, &rc);
        if (!rc && json_array_append_new(shapes, o))
            rc = SW_ENOMEM;
        else if (rc)
            json_decref(o);
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading failed shapes");
    sqlite3_reset(st);
    if (!rc)
        rc = list(l, LST_RULES, endpoint, rule_row, false, &rules, e);
out:
    read_end(l);
done:
    if (!rc) {
        /* set_new takes its value even when it fails */
        bool bad = json_object_set_new(doc, "shapes", shapes) != 0;
        bad = json_object_set_new(doc, "rules", rules) != 0 || bad;
        shapes = rules = NULL;
        if (bad)
            rc = SW_ENOMEM;
    }
    if (rc) {
        if (rc == SW_ENOMEM && (!e || e->code != SW_ENOMEM))
            oom(e);
        json_decref(doc);
        json_decref(shapes);
        json_decref(rules);
        return rc;
    }
    *out = doc;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Export.
 */

static int endpoint_row(struct sw_ledger *l, sqlite3_stmt *st, bool x, json_t **out,
                        struct sw_err *e)
{
    int rc = 0;
    json_t *o = json_object();
    if (!o)
        return oom(e);
    put(o, "id", col_int(st, 0), &rc);
    put(o, "name", col_str(st, 1), &rc);
    put(o, "created_at", col_time(st, 2), &rc);
    if (rc) {
        json_decref(o);
        return oom(e);
    }
    *out = o;
    return 0;
}

static int shape_row(struct sw_ledger *l, sqlite3_stmt *st, bool x, json_t **out, struct sw_err *e)
{
    int rc = 0;
    json_t *canon = NULL;
    json_t *o = json_object();
    if (!o)
        return oom(e);
    rc = col_json(l, st, 3, &canon, e);
    put(o, "id", col_int(st, 0), &rc);
    put(o, "hash", col_str(st, 1), &rc);
    put(o, "canon_version", col_int(st, 2), &rc);
    put(o, "canonical", canon, &rc);
    put(o, "created_at", col_time(st, 4), &rc);
    if (rc) {
        json_decref(o);
        return rc == SW_ENOMEM ? oom(e) : rc;
    }
    *out = o;
    return 0;
}

static int battery_row(struct sw_ledger *l, sqlite3_stmt *st, bool x, json_t **out,
                       struct sw_err *e)
{
    int rc = 0;
    json_t *o = json_object();
    json_t *checks = json_array();
    if (!o || !checks) {
        json_decref(o);
        json_decref(checks);
        return oom(e);
    }
    put(o, "id", col_int(st, 0), &rc);
    put(o, "endpoint", col_str(st, 1), &rc);
    put(o, "boot", col_int(st, 2), &rc);
    put(o, "url", col_str(st, 3), &rc);
    put(o, "started_at", col_time(st, 4), &rc);
    put(o, "ms", col_int(st, 5), &rc);
    put(o, "passed", col_int(st, 6), &rc);
    put(o, "failed", col_int(st, 7), &rc);
    put(o, "skipped", col_int(st, 8), &rc);
    put(o, "ext_id", col_str(st, 9), &rc);
    put(o, "recorded_at", col_time(st, 10), &rc);
    sqlite3_stmt *cst;
    if (!rc)
        rc = sw__ledger_stmt(l, LST_CHECKS_OF, &cst, e);
    if (!rc) {
        sqlite3_bind_int64(cst, 1, sqlite3_column_int64(st, 0));
        int s;
        while (!rc && (s = sqlite3_step(cst)) == SQLITE_ROW) {
            json_t *ev = NULL, *c = json_object();
            if (!c)
                rc = SW_ENOMEM;
            if (!rc)
                rc = col_json(l, cst, 3, &ev, e);
            put(c, "name", col_str(cst, 1), &rc);
            put(c, "status", col_str(cst, 2), &rc);
            put(c, "evidence", ev, &rc);
            put(c, "reason", col_str(cst, 4), &rc);
            put(c, "ms", col_int(cst, 5), &rc);
            if (!rc && json_array_append_new(checks, c))
                rc = SW_ENOMEM;
            else if (rc)
                json_decref(c);
        }
        if (!rc && s != SQLITE_DONE)
            rc = sw__ledger_dberr(l, e, s, "reading battery checks");
        sqlite3_reset(cst);
    }
    put(o, "checks", checks, &rc);
    if (rc) {
        json_decref(o);
        return rc == SW_ENOMEM && (!e || e->code != SW_ENOMEM) ? oom(e) : rc;
    }
    *out = o;
    return 0;
}

static int bench_row(struct sw_ledger *l, sqlite3_stmt *st, bool x, json_t **out, struct sw_err *e)
{
    int rc = 0;
    json_t *p = NULL, *r = NULL;
    json_t *o = json_object();
    if (!o)
        return oom(e);
    rc = col_json(l, st, 4, &p, e);
    if (!rc)
        rc = col_json(l, st, 5, &r, e);
    put(o, "id", col_int(st, 0), &rc);
    put(o, "endpoint", col_str(st, 1), &rc);
    put(o, "boot", col_int(st, 2), &rc);
    put(o, "started_at", col_time(st, 3), &rc);
    put(o, "params", p, &rc);
    put(o, "results", r, &rc);
    put(o, "chart_path", col_str(st, 6), &rc);
    put(o, "source_line", col_str(st, 7), &rc);
    put(o, "ext_id", col_str(st, 8), &rc);
    put(o, "recorded_at", col_time(st, 9), &rc);
    if (sqlite3_column_count(st) > 10) /* LST_BENCH_ONE: the shape column (not exported) */
        put(o, "shape", col_str(st, 10), &rc);
    if (rc) {
        json_decref(o);
        return rc == SW_ENOMEM ? oom(e) : rc;
    }
    *out = o;
    return 0;
}

int sw_ledger_bench_run(struct sw_ledger *l, int64_t id, json_t **out, struct sw_err *e)
{
    *out = NULL;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_BENCH_ONE, &st, e);
    if (rc)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        rc = bench_row(l, st, false, out, e);
    else if (s == SQLITE_DONE)
        rc = sw_err_at(e, SW_ENOENT, l->path, 0, 0, "no bench run %lld in the ledger",
                       (long long)id);
    else
        rc = sw__ledger_dberr(l, e, s, "reading a bench run");
    sqlite3_reset(st);
out:
    read_end(l);
    return rc;
}

int sw_ledger_bench_of_shape(struct sw_ledger *l, const char *endpoint, const char *shape_hash,
                             int64_t *id, struct sw_err *e)
{
    *id = 0;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_BENCH_OF_SHAPE, &st, e);
    if (rc)
        goto out;
    sw__bind_text(st, 1, endpoint);
    sw__bind_text(st, 2, shape_hash);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    else if (s == SQLITE_DONE)
        rc = sw_err_at(e, SW_ENOENT, l->path, 0, 0, "no bench run of shape %.12s on %s",
                       shape_hash ? shape_hash : "(none)", endpoint ? endpoint : "(none)");
    else
        rc = sw__ledger_dberr(l, e, s, "reading bench runs");
    sqlite3_reset(st);
out:
    read_end(l);
    return rc;
}

static int rung_row(struct sw_ledger *l, sqlite3_stmt *st, bool x, json_t **out, struct sw_err *e)
{
    int rc = 0;
    json_t *canon = NULL;
    json_t *o = json_object();
    if (!o)
        return oom(e);
    rc = col_json(l, st, 5, &canon, e);
    put(o, "id", col_int(st, 0), &rc);
    put(o, "endpoint", col_str(st, 1), &rc);
    put(o, "ladder", col_str(st, 2), &rc);
    put(o, "rung", col_int(st, 3), &rc);
    put(o, "shape_hash", col_str(st, 4), &rc);
    put(o, "shape", canon, &rc);
    put(o, "boot", col_int(st, 6), &rc);
    put(o, "outcome", col_str(st, 7), &rc);
    put(o, "note", col_str(st, 8), &rc);
    put(o, "source_line", col_str(st, 9), &rc);
    put(o, "ext_id", col_str(st, 10), &rc);
    put(o, "recorded_at", col_time(st, 11), &rc);
    json_t *ev = NULL;
    if (!rc)
        rc = col_json(l, st, 16, &ev, e);
    put(o, "knob", col_str(st, 13), &rc);
    put(o, "value", col_int(st, 14), &rc);
    put(o, "class", col_str(st, 15), &rc);
    put(o, "evidence", ev, &rc);
    if (rc) {
        json_decref(o);
        return rc == SW_ENOMEM ? oom(e) : rc;
    }
    *out = o;
    return 0;
}

int sw_ledger_rungs(struct sw_ledger *l, const char *endpoint, const char *ladder, json_t **out,
                    struct sw_err *e)
{
    *out = NULL;
    if (!endpoint || !ladder)
        return sw_err_set(e, SW_EINVAL, "rungs: endpoint and ladder are required");
    json_t *all = NULL;
    json_t *mine = json_array();
    if (!mine)
        return oom(e);
    int rc = read_begin(l, e);
    if (rc) {
        json_decref(mine);
        return rc;
    }
    rc = list(l, LST_RUNG_LIST, endpoint, rung_row, false, &all, e);
    read_end(l);
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
    {
        const char *lab = json_string_value(json_object_get(r, "ladder"));
        if (!rc && lab && !strcmp(lab, ladder) && json_array_append(mine, r))
            rc = oom(e);
    }
    json_decref(all);
    if (rc) {
        json_decref(mine);
        return rc;
    }
    *out = mine;
    return 0;
}

static int note_row(struct sw_ledger *l, sqlite3_stmt *st, bool x, json_t **out, struct sw_err *e)
{
    int rc = 0;
    json_t *o = json_object();
    if (!o)
        return oom(e);
    put(o, "id", col_int(st, 0), &rc);
    put(o, "kind", col_str(st, 1), &rc);
    put(o, "subject", col_int(st, 2), &rc);
    put(o, "text", col_str(st, 3), &rc);
    put(o, "author", col_str(st, 4), &rc);
    put(o, "ext_id", col_str(st, 5), &rc);
    put(o, "created_at", col_time(st, 6), &rc);
    if (rc) {
        json_decref(o);
        return oom(e);
    }
    *out = o;
    return 0;
}

int sw_ledger_export(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e)
{
    *out = NULL;
    char now[40];
    json_t *doc =
        json_pack("{s:i,s:i,s:i,s:s,s:s?}", "slipway_ledger_export", 1, "schema_version",
                  l->schema_version, "canon_version", SW_LEDGER_CANON_VERSION, "exported_at",
                  sw_fmt_time(sw_wall_unix(), now, sizeof(now)), "endpoint", endpoint);
    if (!doc)
        return oom(e);
    int rc = read_begin(l, e);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    if (endpoint) {
        int64_t id;
        rc = sw__ledger_endpoint_tx(l, endpoint, false, &id, e);
    }
    json_t *part = NULL;
    if (!rc)
        rc = list(l, LST_ENDPOINT_LIST, endpoint, endpoint_row, true, &part, e);
    if (!rc)
        put(doc, "endpoints", part, &rc);
    if (!rc)
        rc = list(l, LST_SHAPE_LIST, endpoint, shape_row, true, &part, e);
    if (!rc)
        put(doc, "shapes", part, &rc);
    if (!rc) {
        struct sw_ledger_query q = {.endpoint = endpoint};
        rc = boots_query(l, &q, 2, &part, e);
    }
    if (!rc)
        put(doc, "boots", part, &rc);
    if (!rc)
        rc = usage_query(l, endpoint, 0, 0, 0, true, &part, e);
    if (!rc)
        put(doc, "usage", part, &rc);
    if (!rc)
        rc = list(l, LST_BATTERY_LIST, endpoint, battery_row, true, &part, e);
    if (!rc)
        put(doc, "battery_runs", part, &rc);
    if (!rc)
        rc = list(l, LST_BENCH_LIST, endpoint, bench_row, true, &part, e);
    if (!rc)
        put(doc, "bench_runs", part, &rc);
    if (!rc)
        rc = list(l, LST_RUNG_LIST, endpoint, rung_row, true, &part, e);
    if (!rc)
        put(doc, "ladder_rungs", part, &rc);
    if (!rc)
        rc = list(l, LST_RULES, endpoint, rule_row, true, &part, e);
    if (!rc)
        put(doc, "rules", part, &rc);
    if (!rc)
        rc = list(l, LST_NOTE_LIST, endpoint, note_row, true, &part, e);
    if (!rc)
        put(doc, "notes", part, &rc);
    read_end(l);
    if (rc) {
        if (rc == SW_ENOMEM && (!e || e->code != SW_ENOMEM))
            oom(e);
        json_decref(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

int sw_ledger_counts(struct sw_ledger *l, json_t **out, struct sw_err *e)
{
    static const char *const names[] = {
        "endpoints",      "shapes",     "boots",        "usage", "battery_runs",
        "battery_checks", "bench_runs", "ladder_rungs", "rules", "notes"};
    *out = NULL;
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, LST_COUNTS, &st, e);
    if (rc)
        return rc;
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW) {
        rc = sw__ledger_dberr(l, e, s, "counting rows");
        sqlite3_reset(st);
        return rc;
    }
    json_t *o = json_object();
    for (int i = 0; o && i < (int)SW_ARRAY_LEN(names) && !rc; i++)
        put(o, names[i], json_integer(sqlite3_column_int64(st, i)), &rc);
    sqlite3_reset(st);
    if (!o || rc) {
        json_decref(o);
        return oom(e);
    }
    *out = o;
    return 0;
}
