/*
 * Reading the ledger back as JSON: boots (summaries or in full, with their shapes, usage
 * readings and notes, which is what calibrate consumes), usage readings, what the gates refuse
 * (shapes that failed, known-bad rules), bench runs, ladder rungs, shapes by hash, row counts.
 * A row becomes JSON by its table's descriptor (tables.c): the view's fields in order, each by
 * its kind, from the columns the derived SELECT returns in the same order; the export document
 * (document.c) lists its sections through the same rows. Multi-statement reads run inside one
 * read transaction so they see one snapshot even while another process records.
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

static int oom(struct sw_err *e)
{
    return sw_err_set(e, SW_ENOMEM, "out of memory");
}

/* rc as the caller returns it: an allocation failure not yet said in e is said now. */
static int said(int rc, struct sw_err *e)
{
    return rc == SW_ENOMEM && (!e || e->code != SW_ENOMEM) ? oom(e) : rc;
}

/* ---------------------------------------------------------------------------------------------
 * Columns as JSON (shared with the rollout's readers: deploy_read.c, tag.c, unitobs.c).
 */

json_t *sw__col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    /* a ledger is a file anyone may have edited: what is not UTF-8 is repaired, not lost */
    return t ? sw_json_text((const char *)t, (size_t)sqlite3_column_bytes(st, i), NULL)
             : json_null();
}

json_t *sw__col_int(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null()
                                                     : json_integer(sqlite3_column_int64(st, i));
}

json_t *sw__col_num(sqlite3_stmt *st, int i)
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

json_t *sw__col_time(sqlite3_stmt *st, int i, int64_t div)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    char buf[40];
    return json_string(sw_fmt_time(sqlite3_column_int64(st, i) / div, buf, sizeof(buf)));
}

int sw__put(json_t *o, const char *k, json_t *v, int *rc)
{
    if (*rc)
        json_decref(v);
    else if (!v || json_object_set_new(o, k, v))
        *rc = SW_ENOMEM;
    return *rc;
}

int sw__col_json(struct sw_ledger *l, sqlite3_stmt *st, int i, json_t **out, struct sw_err *e)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    if (!t) {
        *out = json_null();
        return *out ? 0 : oom(e);
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
        return oom(e);
    return sw_err_at(e, SW_EDB, l->path, 0, 0, "a stored JSON column does not parse: %s", je.text);
}

/* ---------------------------------------------------------------------------------------------
 * Rows by their descriptors.
 */

/* The shape of a listing: {id, hash}, in full with its canonical form; null without a shape. The
 * export's is the canonical form alone. *i: the next result column. */
static int shape_json(struct sw_ledger *l, sqlite3_stmt *st, unsigned view, int *i, json_t **v,
                      struct sw_err *e)
{
    int at = *i;
    if (view == SW__V_EXPORT) {
        *i += 1;
        return sw__col_json(l, st, at, v, e);
    }
    *i += view == SW__V_FULL ? 3 : 2;
    if (sqlite3_column_type(st, at) == SQLITE_NULL) {
        *v = json_null();
        return 0;
    }
    int rc = 0;
    json_t *canon = NULL;
    json_t *sh = json_pack("{s:I,s:s}", "id", (json_int_t)sqlite3_column_int64(st, at), "hash",
                           (const char *)sqlite3_column_text(st, at + 1));
    if (sh && view == SW__V_FULL) {
        rc = sw__col_json(l, st, at + 2, &canon, e);
        sw__put(sh, "canonical", canon, &rc);
    }
    if (rc) {
        json_decref(sh);
        return rc;
    }
    *v = sh;
    return 0;
}

static int summary_json(struct sw_ledger *l, sqlite3_stmt *st, int at, json_t **v, struct sw_err *e)
{
    json_t *canon = NULL;
    char sum[256];
    int rc = sw__col_json(l, st, at, &canon, e);
    if (rc)
        return rc;
    *v = json_string(sw_ledger_shape_summary(canon, sum, sizeof(sum)));
    json_decref(canon);
    return 0;
}

/* The rows a SW__ROWS field lists under the row whose id is `id`. */
static int rows_under(struct sw_ledger *l, enum sw__lst which, int64_t id, json_t **v,
                      struct sw_err *e)
{
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    return sw__ledger_collect(l, which, st, v, e);
}

/* One field's value from the result columns at *i (advanced past them). *v NULL: out of
 * memory. */
static int field_json(struct sw_ledger *l, sqlite3_stmt *st, const struct sw__col *c, unsigned view,
                      int *i, json_t **v, struct sw_err *e)
{
    int at = *i;
    if (c->kind == SW__SHAPE)
        return shape_json(l, st, view, i, v, e);
    *i += 1;
    switch (c->kind) {
    case SW__TEXT:
    case SW__ENDPOINT:
        *v = sw__col_str(st, at);
        return 0;
    case SW__TIME:
        *v = sw__col_time(st, at, 1);
        return 0;
    case SW__NUM:
    case SW__REAL:
        *v = sw__col_num(st, at);
        return 0;
    case SW__BOOL:
        *v = json_boolean(sqlite3_column_int(st, at) != 0);
        return 0;
    case SW__JSON:
        return sw__col_json(l, st, at, v, e);
    case SW__SUMMARY:
        return summary_json(l, st, at, v, e);
    case SW__ROWS:
        return rows_under(l, c->rows, sqlite3_column_int64(st, at), v, e);
    default: /* the integers: ids, counts, milliseconds, references */
        *v = sw__col_int(st, at);
        return 0;
    }
}

/* The current row of a statement derived from t's view, as JSON. */
static int row_json(struct sw_ledger *l, sqlite3_stmt *st, const struct sw__table *t, unsigned view,
                    json_t **out, struct sw_err *e)
{
    int rc = 0, i = 0;
    json_t *o = json_object();
    if (!o)
        return oom(e);
    for (size_t k = 0; k < t->ncols && !rc; k++) {
        const struct sw__col *c = &t->cols[k];
        json_t *v = NULL;
        if (!(c->views & view))
            continue;
        rc = field_json(l, st, c, view, &i, &v, e);
        if (!rc)
            sw__put(o, sw__col_key(c), v, &rc);
    }
    if (rc) {
        json_decref(o);
        return said(rc, e);
    }
    *out = o;
    return 0;
}

int sw__ledger_collect(struct sw_ledger *l, enum sw__lst which, sqlite3_stmt *st, json_t **out,
                       struct sw_err *e)
{
    const struct sw__rows *r = &sw__ledger_rows[which];
    json_t *arr = json_array();
    int rc = arr ? 0 : oom(e);
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = NULL;
        rc = row_json(l, st, r->table, r->view, &o, e);
        if (!rc && json_array_append_new(arr, o))
            rc = oom(e);
    }
    if (!rc && s != SQLITE_DONE) {
        char what[64];
        snprintf(what, sizeof(what), "reading %s", r->table->name);
        rc = sw__ledger_dberr(l, e, s, what);
    }
    sqlite3_reset(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

int sw__ledger_list(struct sw_ledger *l, enum sw__lst which, const char *endpoint, json_t **out,
                    struct sw_err *e)
{
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, endpoint);
    return sw__ledger_collect(l, which, st, out, e);
}

/* The one row of a statement whose ?1 is an id; SW_ENOENT "no <what> ID in the ledger". */
static int one_row(struct sw_ledger *l, enum sw__lst which, int64_t id, const char *what,
                   json_t **out, struct sw_err *e)
{
    const struct sw__rows *r = &sw__ledger_rows[which];
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        rc = row_json(l, st, r->table, r->view, out, e);
    else if (s == SQLITE_DONE)
        rc =
            sw_err_at(e, SW_ENOENT, l->path, 0, 0, "no %s %lld in the ledger", what, (long long)id);
    else
        rc = sw__ledger_dberr(l, e, s, "reading the ledger");
    sqlite3_reset(st);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * The queries.
 */

int sw_ledger_boots(struct sw_ledger *l, const struct sw_ledger_query *q, json_t **out,
                    struct sw_err *e)
{
    static const struct sw_ledger_query all = {0};
    *out = NULL;
    if (!q)
        q = &all;
    if (q->outcome && strcmp(q->outcome, "ok") && strcmp(q->outcome, "failed"))
        return sw_err_set(e, SW_EINVAL, "outcome filter must be ok or failed");
    enum sw__lst which = q->full ? (q->newest_first ? LST_BOOTS_FULL_DESC : LST_BOOTS_FULL_ASC)
                                 : (q->newest_first ? LST_BOOTS_DESC : LST_BOOTS_ASC);
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, which, &st, e);
    if (!rc) {
        sw__bind_text(st, 1, q->endpoint);
        sw__bind_text(st, 2, q->outcome);
        sw__bind_i64(st, 3, q->shape_id, q->shape_id == 0);
        sqlite3_bind_int64(st, 4, q->limit > 0 ? q->limit : -1);
        rc = sw__ledger_collect(l, which, st, out, e);
    }
    read_end(l);
    return rc;
}

int sw_ledger_boot(struct sw_ledger *l, int64_t id, json_t **out, struct sw_err *e)
{
    *out = NULL;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    rc = one_row(l, LST_BOOT_ONE, id, "boot", out, e);
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
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_USAGE_LIST, &st, e);
    if (!rc) {
        sw__bind_text(st, 1, q->endpoint);
        sw__bind_i64(st, 2, q->shape_id, q->shape_id == 0);
        sqlite3_bind_null(st, 3);
        sqlite3_bind_int64(st, 4, q->limit > 0 ? q->limit : -1);
        rc = sw__ledger_collect(l, LST_USAGE_LIST, st, out, e);
    }
    read_end(l);
    return rc;
}

/* One failed shape of an endpoint: {shape_id, hash, canonical, endpoint, failed, ok, failures:
 * [{boot, started_at, failure}]} (LST_BAD_SHAPES columns). */
static int bad_shape(struct sw_ledger *l, sqlite3_stmt *st, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *fst;
    json_t *canon = NULL, *fails = json_array(), *o = json_object();
    int rc = fails && o ? 0 : SW_ENOMEM;
    if (!rc)
        rc = sw__col_json(l, st, 2, &canon, e);
    sw__put(o, "shape_id", sw__col_int(st, 0), &rc);
    sw__put(o, "hash", sw__col_str(st, 1), &rc);
    sw__put(o, "canonical", canon, &rc);
    sw__put(o, "endpoint", sw__col_str(st, 3), &rc);
    sw__put(o, "failed", sw__col_int(st, 5), &rc);
    sw__put(o, "ok", sw__col_int(st, 6), &rc);
    if (!rc)
        rc = sw__ledger_stmt(l, LST_BAD_FAILURES, &fst, e);
    if (!rc) {
        sqlite3_bind_int64(fst, 1, sqlite3_column_int64(st, 0));
        sqlite3_bind_int64(fst, 2, sqlite3_column_int64(st, 4));
        int fs;
        while (!rc && (fs = sqlite3_step(fst)) == SQLITE_ROW) {
            json_t *f = NULL, *fo = json_object();
            if (!fo)
                rc = SW_ENOMEM;
            if (!rc)
                rc = sw__col_json(l, fst, 1, &f, e);
            sw__put(fo, "boot", sw__col_int(fst, 0), &rc);
            sw__put(fo, "started_at", sw__col_time(fst, 2, 1), &rc);
            sw__put(fo, "failure", f, &rc);
            if (!rc && json_array_append_new(fails, fo))
                rc = SW_ENOMEM;
            else if (rc)
                json_decref(fo);
        }
        if (!rc && fs != SQLITE_DONE)
            rc = sw__ledger_dberr(l, e, fs, "reading failures");
        sqlite3_reset(fst);
    }
    sw__put(o, "failures", fails, &rc);
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

static int known_bad(struct sw_ledger *l, const char *endpoint, json_t *doc, struct sw_err *e)
{
    sqlite3_stmt *st;
    json_t *shapes = json_array(), *rules = NULL;
    int rc = shapes ? 0 : SW_ENOMEM, s = SQLITE_DONE;
    if (!rc)
        rc = sw__ledger_stmt(l, LST_BAD_SHAPES, &st, e);
    if (rc) {
        json_decref(shapes);
        return rc;
    }
    sw__bind_text(st, 1, endpoint);
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = NULL;
        rc = bad_shape(l, st, &o, e);
        if (!rc && json_array_append_new(shapes, o))
            rc = SW_ENOMEM;
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading failed shapes");
    sqlite3_reset(st);
    if (!rc)
        rc = sw__ledger_list(l, LST_RULES, endpoint, &rules, e);
    sw__put(doc, "shapes", shapes, &rc);
    sw__put(doc, "rules", rules, &rc);
    return rc;
}

int sw_ledger_known_bad(struct sw_ledger *l, const char *endpoint, json_t **out, struct sw_err *e)
{
    *out = NULL;
    json_t *doc = json_object();
    if (!doc)
        return oom(e);
    int rc = read_begin(l, e);
    if (!rc) {
        rc = known_bad(l, endpoint, doc, e);
        read_end(l);
    }
    if (rc) {
        json_decref(doc);
        return said(rc, e);
    }
    *out = doc;
    return 0;
}

int sw_ledger_bench_run(struct sw_ledger *l, int64_t id, json_t **out, struct sw_err *e)
{
    *out = NULL;
    int rc = read_begin(l, e);
    if (rc)
        return rc;
    rc = one_row(l, LST_BENCH_ONE, id, "bench run", out, e);
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
    rc = sw__ledger_list(l, LST_RUNG_LIST, endpoint, &all, e);
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

int sw_ledger_find_shape(struct sw_ledger *l, const char *h, int64_t *id, struct sw_err *e)
{
    *id = 0;
    size_t n = h ? strlen(h) : 0;
    if (n < 6 || n > SW_LEDGER_HASH_LEN)
        return sw_err_set(e, SW_EINVAL, "a shape hash is 6 to 64 hex digits");
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", h[i]))
            return sw_err_set(e, SW_EINVAL, "'%s' is not a lowercase hex shape hash", h);
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, LST_SHAPE_PREFIX, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, h);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            rc = sw_err_set(e, SW_EINVAL, "shape hash prefix '%s' is ambiguous: give more digits",
                            h);
        else if (s != SQLITE_DONE)
            rc = sw__ledger_dberr(l, e, s, "looking up a shape");
    } else if (s == SQLITE_DONE) {
        rc = sw_err_set(e, SW_ENOENT, "no shape %s in the ledger", h);
    } else {
        rc = sw__ledger_dberr(l, e, s, "looking up a shape");
    }
    sqlite3_reset(st);
    if (rc)
        *id = 0;
    return rc;
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
        sw__put(o, names[i], json_integer(sqlite3_column_int64(st, i)), &rc);
    sqlite3_reset(st);
    if (!o || rc) {
        json_decref(o);
        return oom(e);
    }
    *out = o;
    return 0;
}
