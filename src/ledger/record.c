/*
 * Recording: one function per kind of row. The public sw_ledger_record_* calls wrap the
 * sw__ledger_*_tx bodies in BEGIN IMMEDIATE .. COMMIT, so each record lands whole or not at all;
 * the importer runs many bodies inside one transaction of its own.
 *
 * Every input is checked before it reaches SQL (names, ranges, JSON shapes), every value is a
 * bound parameter, and the schema's CHECK and FOREIGN KEY constraints stand behind both.
 *
 * What it deliberately does not do: update or delete. A measurement, once recorded, stays; a
 * correction is a new row or a note.
 */
#include "ledger_internal.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define LABEL_MAX      128
#define LINE_MAX_BYTES 4096
#define TEXT_MAX       (64u * 1024u)
#define EXT_MAX        256

int sw__ledger_json_text(const char *what, const json_t *j, bool want_object, size_t max,
                         char **out, struct sw_err *e)
{
    *out = NULL;
    if (!j)
        return 0;
    if (want_object && !json_is_object(j))
        return sw_err_set(e, SW_EINVAL, "%s must be a JSON object", what);
    int rc = sw__json_canon_text(j, max, out, e);
    if (rc)
        sw_err_prefix(e, "%s", what);
    return rc;
}

static int check_word(const char *what, const char *s, const char *extra, size_t max,
                      struct sw_err *e)
{
    if (!s || !*s)
        return sw_err_set(e, SW_EINVAL, "%s is required", what);
    size_t len = strlen(s);
    if (len > max)
        return sw_err_set(e, SW_EINVAL, "%s is longer than %zu bytes", what, max);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr(extra, c))
            return sw_err_set(e, SW_EINVAL,
                              "%s '%.60s': character '%c' is not allowed "
                              "(letters, digits and \"%s\")",
                              what, s, isprint(c) ? c : '?', extra);
    }
    return 0;
}

static int check_ext(const char *ext, struct sw_err *e)
{
    return ext ? sw__check_label("ext_id", ext, EXT_MAX, true, e) : 0;
}

static int check_time(const char *what, int64_t t, struct sw_err *e)
{
    /* 0 = unknown; anything before 2000 or after 2200 is a unit mistake (ms? ns?) */
    if (t != 0 && (t < 946684800 || t > 7258118400LL))
        return sw_err_set(e, SW_EINVAL, "%s %lld is not unix seconds between 2000 and 2200", what,
                          (long long)t);
    return 0;
}

static bool is_word(const json_t *v)
{
    const char *s = json_string_value(v);
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* The failure object the boot-log parsers emit: {class, phase?, payload_kind?, message?,
 * line?} plus whatever figures the class carries. */
static int check_failure(const json_t *f, struct sw_err *e)
{
    if (!json_is_object(f))
        return sw_err_set(e, SW_EINVAL,
                          "failure must be a JSON object {class, phase, "
                          "payload_kind, message, line}");
    if (!is_word(json_object_get(f, "class")))
        return sw_err_set(e, SW_EINVAL,
                          "failure.class must be a lowercase word (oom, "
                          "bad_payload, compile_constraint, ...)");
    static const char *const words[] = {"phase", "payload_kind"};
    for (size_t i = 0; i < SW_ARRAY_LEN(words); i++) {
        json_t *v = json_object_get(f, words[i]);
        if (v && !json_is_null(v) && !is_word(v))
            return sw_err_set(e, SW_EINVAL, "failure.%s must be a lowercase word or null",
                              words[i]);
    }
    json_t *msg = json_object_get(f, "message");
    if (msg && !json_is_null(msg) && !json_is_string(msg))
        return sw_err_set(e, SW_EINVAL, "failure.message must be a string or null");
    json_t *line = json_object_get(f, "line");
    if (line && !json_is_null(line) && !json_is_string(line) &&
        !(json_is_integer(line) && json_integer_value(line) >= 0))
        return sw_err_set(e, SW_EINVAL,
                          "failure.line must be the log line (text) or its "
                          "number, or null");
    return 0;
}

static const char *norm_engine(const char *engine, char *buf, size_t n)
{
    return sw__shape_norm_word("engine", engine, buf, n) ? buf : NULL;
}

/* A boot the caller names must exist and, when an endpoint is given, belong to it. */
static int boot_row(struct sw_ledger *l, int64_t boot_id, int64_t endpoint_id, int64_t *shape_id,
                    struct sw_err *e)
{
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, LST_BOOT_EXISTS, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, boot_id);
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE) {
        rc = sw_err_set(e, SW_ENOENT, "no boot %lld in the ledger", (long long)boot_id);
    } else if (s != SQLITE_ROW) {
        rc = sw__ledger_dberr(l, e, s, "looking up a boot");
    } else {
        int64_t ep = sqlite3_column_int64(st, 0);
        if (shape_id)
            *shape_id = sqlite3_column_int64(st, 1); /* 0 when NULL */
        if (endpoint_id && ep != endpoint_id)
            rc = sw_err_set(e, SW_EINVAL, "boot %lld belongs to another endpoint",
                            (long long)boot_id);
    }
    sqlite3_reset(st);
    return rc;
}

static int exists(struct sw_ledger *l, enum sw__lst which, int64_t id, bool *yes, struct sw_err *e)
{
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int s = sqlite3_step(st);
    *yes = s == SQLITE_ROW;
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "looking up a row");
    sqlite3_reset(st);
    return rc;
}

static int insert(struct sw_ledger *l, sqlite3_stmt *st, const char *what, const char *ext_id,
                  int64_t *id, struct sw_err *e)
{
    int s = sqlite3_step(st);
    int rc = 0;
    if (s == SQLITE_DONE) {
        if (id)
            *id = sqlite3_last_insert_rowid(l->db);
    } else if ((s == SQLITE_CONSTRAINT_UNIQUE) && ext_id) {
        rc = sw_err_at(e, SW_EEXIST, l->path, 0, 0, "%s with ext_id '%s' is already recorded", what,
                       ext_id);
    } else {
        rc = sw__ledger_dberr(l, e, s, what);
    }
    sqlite3_reset(st);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 */

int sw__ledger_endpoint_tx(struct sw_ledger *l, const char *name, bool create, int64_t *id,
                           struct sw_err *e)
{
    int rc = check_word("endpoint name", name, "._:@/-", LABEL_MAX, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_ENDPOINT_GET, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, name);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        return 0;
    }
    sqlite3_reset(st);
    if (s != SQLITE_DONE)
        return sw__ledger_dberr(l, e, s, "looking up an endpoint");
    if (!create)
        return sw_err_at(e, SW_ENOENT, l->path, 0, 0, "no endpoint '%s' in the ledger", name);
    rc = sw__ledger_stmt(l, LST_ENDPOINT_INS, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, name);
    sqlite3_bind_int64(st, 2, sw_wall_unix());
    return insert(l, st, "endpoint", NULL, id, e);
}

/* Get or insert a shape row; engine (may be NULL) receives the canonical engine name. */
static int shape_row(struct sw_ledger *l, const json_t *shape, int64_t *id,
                     char hash[SW_LEDGER_HASH_LEN + 1], char *engine, size_t engine_n,
                     struct sw_err *e)
{
    json_t *canon = NULL;
    char *text = NULL;
    char h[SW_LEDGER_HASH_LEN + 1];
    int rc = sw_ledger_shape_canon(shape, &canon, &text, h, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_SHAPE_GET, &st, e);
    if (rc)
        goto out;
    sw__bind_text(st, 1, h);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        goto out;
    }
    sqlite3_reset(st);
    if (s != SQLITE_DONE) {
        rc = sw__ledger_dberr(l, e, s, "looking up a shape");
        goto out;
    }
    rc = sw__ledger_stmt(l, LST_SHAPE_INS, &st, e);
    if (rc)
        goto out;
    sw__bind_text(st, 1, h);
    sqlite3_bind_int(st, 2, SW_LEDGER_CANON_VERSION);
    sw__bind_text(st, 3, text);
    sw__bind_text(st, 4, json_string_value(json_object_get(canon, "engine")));
    sqlite3_bind_int64(st, 5, sw_wall_unix());
    rc = insert(l, st, "shape", NULL, id, e);
out:
    if (!rc && hash)
        memcpy(hash, h, sizeof(h));
    if (!rc && engine)
        snprintf(engine, engine_n, "%s", json_string_value(json_object_get(canon, "engine")));
    json_decref(canon);
    sw_free(text);
    return rc;
}

int sw__ledger_shape_tx(struct sw_ledger *l, const json_t *shape, int64_t *id,
                        char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e)
{
    return shape_row(l, shape, id, hash, NULL, 0, e);
}

int sw__ledger_note_tx(struct sw_ledger *l, const struct sw__note_rec *n, int64_t *id,
                       struct sw_err *e)
{
    const char *kind = n->kind, *text = n->text, *author = n->author, *ext_id = n->ext_id;
    int64_t subject_id = n->subject_id;
    static const struct {
        const char *kind;
        enum sw__lst exists;
    } kinds[] = {
        {"ledger", LST__N},          {"endpoint", LST_EXISTS_ENDPOINT},
        {"shape", LST_EXISTS_SHAPE}, {"boot", LST_BOOT_EXISTS},
        {"usage", LST_EXISTS_USAGE}, {"battery", LST_EXISTS_BATTERY},
        {"bench", LST_EXISTS_BENCH}, {"rung", LST_EXISTS_RUNG},
        {"rule", LST_EXISTS_RULE},
    };
    size_t k = 0;
    while (k < SW_ARRAY_LEN(kinds) && (!kind || strcmp(kind, kinds[k].kind)))
        k++;
    if (k == SW_ARRAY_LEN(kinds))
        return sw_err_set(e, SW_EINVAL,
                          "note subject '%s' is not one of ledger, endpoint, "
                          "shape, boot, usage, battery, bench, rung, rule",
                          kind ? kind : "");
    int rc = sw__check_text("note text", text, TEXT_MAX, true, e);
    if (!rc && author)
        rc = sw__check_label("note author", author, LABEL_MAX, true, e);
    if (!rc)
        rc = check_ext(ext_id, e);
    if (rc)
        return rc;
    if (kinds[k].exists == LST__N) {
        if (subject_id)
            return sw_err_set(e, SW_EINVAL, "a ledger note has no subject id");
    } else {
        bool yes = false;
        if (subject_id <= 0)
            return sw_err_set(e, SW_EINVAL, "a %s note needs the %s's id", kind, kind);
        rc = exists(l, kinds[k].exists, subject_id, &yes, e);
        if (rc)
            return rc;
        if (!yes)
            return sw_err_set(e, SW_ENOENT, "no %s %lld in the ledger", kind,
                              (long long)subject_id);
    }
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_NOTE_INS, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, kinds[k].kind);
    sw__bind_i64(st, 2, subject_id, subject_id == 0);
    sw__bind_text(st, 3, text);
    sw__bind_text(st, 4, author);
    sw__bind_text(st, 5, ext_id);
    sqlite3_bind_int64(st, 6, sw_wall_unix());
    return insert(l, st, "note", ext_id, id, e);
}

int sw__ledger_boot_tx(struct sw_ledger *l, const struct sw_ledger_boot *b, int64_t *id,
                       struct sw_err *e)
{
    char *predicted = NULL, *report = NULL, *failure = NULL, *excerpt = NULL;
    char engbuf[72];
    const char *engine = NULL;
    int64_t endpoint_id = 0, shape_id = 0, boot_id = 0;
    int rc = 0;

    if (b->engine)
        engine = norm_engine(b->engine, engbuf, sizeof(engbuf));
    if (!engine || check_word("engine", engine, "._-", 64, NULL)) {
        rc = sw_err_set(e, SW_EINVAL, "boot: engine is required (llama.cpp, vllm, sglang, ...)");
        goto out;
    }
    if (b->engine_version)
        rc = sw__check_label("boot: engine_version", b->engine_version, LABEL_MAX, true, e);
    if (!rc)
        rc = check_time("boot: started_at", b->started_at, e);
    if (!rc)
        rc = check_time("boot: ended_at", b->ended_at, e);
    if (!rc && b->started_at && b->ended_at && b->ended_at < b->started_at)
        rc = sw_err_set(e, SW_EINVAL, "boot: ended_at is before started_at");
    if (!rc && b->log_path)
        rc = sw__check_text("boot: log_path", b->log_path, LINE_MAX_BYTES, false, e);
    if (!rc && b->source)
        rc = sw__check_text("boot: source", b->source, LABEL_MAX, false, e);
    if (!rc)
        rc = sw__check_text("boot: source_line", b->source_line, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = check_ext(b->ext_id, e);
    if (!rc && b->failure)
        rc = check_failure(b->failure, e);
    if (!rc)
        rc = sw__ledger_json_text("boot: predicted", b->predicted, true, SW_LEDGER_JSON_MAX,
                                  &predicted, e);
    if (!rc)
        rc = sw__ledger_json_text("boot: report", b->report, true, SW_LEDGER_JSON_MAX, &report, e);
    if (!rc)
        rc = sw__ledger_json_text("boot: failure", b->failure, true, 64u * 1024u, &failure, e);
    if (!rc && b->log_excerpt) {
        size_t n = b->log_len ? b->log_len : strlen(b->log_excerpt);
        rc = sw__log_excerpt(b->log_excerpt, n, SW_LEDGER_EXCERPT_MAX, &excerpt);
        if (rc)
            sw_err_set(e, rc, "boot: log excerpt: %s", sw_strerror(rc));
    }
    if (rc)
        goto out;

    rc = sw__ledger_endpoint_tx(l, b->endpoint, true, &endpoint_id, e);
    if (rc)
        goto out;
    if (b->shape) {
        char se[72];
        rc = shape_row(l, b->shape, &shape_id, NULL, se, sizeof(se), e);
        if (!rc && strcmp(se, engine))
            rc = sw_err_set(e, SW_EINVAL, "boot: engine '%s' but its shape says '%s'", engine, se);
        if (rc)
            goto out;
    }
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_BOOT_INS, &st, e);
    if (rc)
        goto out;
    const json_t *f = b->failure;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sw__bind_i64(st, 2, shape_id, shape_id == 0);
    sw__bind_text(st, 3, engine);
    sw__bind_text(st, 4, b->engine_version);
    sw__bind_i64(st, 5, b->started_at, b->started_at == 0);
    sw__bind_i64(st, 6, b->ended_at, b->ended_at == 0);
    sw__bind_i64(st, 7, b->duration_ms, b->duration_ms < 0);
    sw__bind_text(st, 8, f ? "failed" : "ok");
    sw__bind_text(st, 9, f ? json_string_value(json_object_get(f, "class")) : NULL);
    sw__bind_text(st, 10, f ? json_string_value(json_object_get(f, "phase")) : NULL);
    sw__bind_text(st, 11, b->log_path);
    sw__bind_text(st, 12, b->source);
    sw__bind_text(st, 13, b->source_line);
    sqlite3_bind_int64(st, 14, sw_wall_unix());
    sw__bind_text(st, 15, predicted);
    sw__bind_text(st, 16, report);
    sw__bind_text(st, 17, failure);
    sw__bind_text(st, 18, excerpt);
    sw__bind_text(st, 19, b->ext_id);
    rc = insert(l, st, "boot", b->ext_id, &boot_id, e);
    if (rc)
        goto out;
    if (b->note && *b->note)
        rc = sw__ledger_note_tx(
            l,
            &(struct sw__note_rec){
                .kind = "boot", .subject_id = boot_id, .text = b->note, .author = b->source},
            NULL, e);
    if (!rc && id)
        *id = boot_id;
out:
    sw_free(predicted);
    sw_free(report);
    sw_free(failure);
    sw_free(excerpt);
    return rc;
}

int sw__ledger_usage_tx(struct sw_ledger *l, const struct sw_ledger_usage *u, int64_t *id,
                        struct sw_err *e)
{
    int64_t endpoint_id = 0, shape_id = u->shape_id, boot_shape = 0;
    int rc = sw__check_label("usage: device", u->device, LABEL_MAX, true, e);
    if (!rc)
        rc = sw__check_label("usage: source", u->source, LABEL_MAX, true, e);
    if (!rc && u->total_mib == 0)
        rc = sw_err_set(e, SW_EINVAL, "usage: total must be more than 0 MiB");
    if (!rc && (u->total_mib > (1ull << 40) || u->used_mib > u->total_mib))
        rc = sw_err_set(e, SW_EINVAL, "usage: used %llu MiB is more than total %llu MiB",
                        (unsigned long long)u->used_mib, (unsigned long long)u->total_mib);
    if (!rc && u->has_free && u->free_mib > u->total_mib - u->used_mib)
        rc = sw_err_set(e, SW_EINVAL,
                        "usage: used %llu + free %llu MiB is more than total %llu "
                        "MiB",
                        (unsigned long long)u->used_mib, (unsigned long long)u->free_mib,
                        (unsigned long long)u->total_mib);
    if (!rc && u->taken_at > 0)
        rc = check_time("usage: taken_at", u->taken_at, e);
    if (!rc)
        rc = sw__check_text("usage: note", u->note, TEXT_MAX, false, e);
    if (!rc)
        rc = sw__check_text("usage: source_line", u->source_line, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = check_ext(u->ext_id, e);
    if (!rc)
        rc = sw__ledger_endpoint_tx(l, u->endpoint, true, &endpoint_id, e);
    if (rc)
        return rc;
    if (u->boot_id) {
        rc = boot_row(l, u->boot_id, endpoint_id, &boot_shape, e);
        if (rc)
            return rc;
    }
    if (u->shape) {
        rc = sw__ledger_shape_tx(l, u->shape, &shape_id, NULL, e);
        if (rc)
            return rc;
    } else if (shape_id) {
        bool yes = false;
        rc = exists(l, LST_EXISTS_SHAPE, shape_id, &yes, e);
        if (rc)
            return rc;
        if (!yes)
            return sw_err_set(e, SW_ENOENT, "usage: no shape %lld in the ledger",
                              (long long)shape_id);
    }
    if (boot_shape && shape_id && boot_shape != shape_id)
        return sw_err_set(e, SW_EINVAL, "usage: the shape given is not the shape of boot %lld",
                          (long long)u->boot_id);
    if (!shape_id)
        shape_id = boot_shape;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_USAGE_INS, &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sw__bind_i64(st, 2, u->boot_id, u->boot_id == 0);
    sw__bind_i64(st, 3, shape_id, shape_id == 0);
    sw__bind_text(st, 4, u->device);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)u->used_mib);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)u->total_mib);
    sw__bind_text(st, 7, u->source);
    sw__bind_i64(st, 8, u->taken_at ? u->taken_at : sw_wall_unix(), u->taken_at < 0);
    sw__bind_text(st, 9, u->note && *u->note ? u->note : NULL);
    sw__bind_text(st, 10, u->source_line);
    sqlite3_bind_int64(st, 11, sw_wall_unix());
    sw__bind_text(st, 12, u->ext_id);
    sw__bind_i64(st, 13, (int64_t)u->free_mib, !u->has_free);
    return insert(l, st, "usage reading", u->ext_id, id, e);
}

static int check_ms(const json_t *v, int64_t *ms)
{
    *ms = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e12)
        return SW_EINVAL;
    *ms = (int64_t)llround(json_number_value(v));
    return 0;
}

int sw__ledger_battery_tx(struct sw_ledger *l, const struct sw__battery_rec *r, int64_t *id,
                          struct sw_err *e)
{
    const char *endpoint = r->endpoint, *url = r->url, *ext_id = r->ext_id;
    int64_t boot_id = r->boot_id, started_at = r->started_at;
    const json_t *doc = r->doc;
    int64_t endpoint_id = 0, run_id = 0;
    const json_t *checks = json_object_get(doc, "checks");
    if (!json_is_object(doc) || !json_is_array(checks))
        return sw_err_set(e, SW_EINVAL,
                          "battery: expected {\"checks\": [...]} as slipway probe "
                          "--json prints it");
    size_t n = json_array_size(checks);
    if (n > 1000)
        return sw_err_set(e, SW_EINVAL, "battery: %zu checks is more than 1000", n);
    int64_t passed = 0, failed = 0, skipped = 0, total_ms = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(checks, i);
        const char *status = json_string_value(json_object_get(c, "status"));
        int64_t ms;
        if (!json_is_object(c) || !is_word(json_object_get(c, "name")))
            return sw_err_set(e, SW_EINVAL, "battery: checks[%zu].name must be a lowercase word",
                              i);
        if (!status || (strcmp(status, "pass") && strcmp(status, "fail") && strcmp(status, "skip")))
            return sw_err_set(e, SW_EINVAL,
                              "battery: checks[%zu].status must be pass, fail or "
                              "skip",
                              i);
        const json_t *reason = json_object_get(c, "reason");
        if (reason && !json_is_null(reason) && !json_is_string(reason))
            return sw_err_set(e, SW_EINVAL, "battery: checks[%zu].reason must be a string", i);
        if (check_ms(json_object_get(c, "ms"), &ms))
            return sw_err_set(e, SW_EINVAL, "battery: checks[%zu].ms must be a number >= 0", i);
        passed += status[0] == 'p';
        failed += status[0] == 'f';
        skipped += status[0] == 's';
        total_ms += ms > 0 ? ms : 0;
    }
    int rc = check_time("battery: started_at", started_at, e);
    if (!rc && url)
        rc = sw__check_text("battery: url", url, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = check_ext(ext_id, e);
    if (!rc)
        rc = sw__ledger_endpoint_tx(l, endpoint, true, &endpoint_id, e);
    if (!rc && boot_id)
        rc = boot_row(l, boot_id, endpoint_id, NULL, e);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_BATTERY_INS, &st, e);
    if (rc)
        return rc;
    int64_t doc_ms;
    if (check_ms(json_object_get(doc, "ms"), &doc_ms) || doc_ms < 0)
        doc_ms = total_ms;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sw__bind_i64(st, 2, boot_id, boot_id == 0);
    sw__bind_text(st, 3, url);
    sw__bind_i64(st, 4, started_at, started_at == 0);
    sqlite3_bind_int64(st, 5, doc_ms);
    sqlite3_bind_int64(st, 6, passed);
    sqlite3_bind_int64(st, 7, failed);
    sqlite3_bind_int64(st, 8, skipped);
    sw__bind_text(st, 9, ext_id);
    sqlite3_bind_int64(st, 10, sw_wall_unix());
    rc = insert(l, st, "battery run", ext_id, &run_id, e);
    for (size_t i = 0; i < n && !rc; i++) {
        const json_t *c = json_array_get(checks, i);
        char *evidence = NULL;
        int64_t ms;
        check_ms(json_object_get(c, "ms"), &ms);
        const json_t *ev = json_object_get(c, "evidence");
        if (ev && json_is_null(ev))
            ev = NULL;
        rc = sw__ledger_json_text("battery: evidence", ev, false, SW_LEDGER_JSON_MAX, &evidence, e);
        if (rc)
            break;
        rc = sw__ledger_stmt(l, LST_CHECK_INS, &st, e);
        if (!rc) {
            sqlite3_bind_int64(st, 1, run_id);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)i + 1);
            sw__bind_text(st, 3, json_string_value(json_object_get(c, "name")));
            sw__bind_text(st, 4, json_string_value(json_object_get(c, "status")));
            sw__bind_text(st, 5, evidence);
            sw__bind_text(st, 6, json_string_value(json_object_get(c, "reason")));
            sw__bind_i64(st, 7, ms, ms < 0);
            rc = insert(l, st, "battery check", NULL, NULL, e);
        }
        sw_free(evidence);
    }
    if (!rc && id)
        *id = run_id;
    return rc;
}

/* The shape column: the summary of params.shape (canonicalized again: a document from elsewhere
 * may carry a shape in any accepted spelling); "" (NULL in the column) when the run recorded
 * none or one the canonical form refuses (the run is still worth keeping; its params say it). */
static void bench_shape(const json_t *params, char *out, size_t n)
{
    const json_t *shape = json_object_get(params, "shape");
    json_t *canon = NULL;
    out[0] = '\0';
    if (!json_is_object(shape) || sw_ledger_shape_canon(shape, &canon, NULL, NULL, NULL))
        return;
    sw_ledger_shape_summary(canon, out, n);
    json_decref(canon);
}

int sw__ledger_bench_tx(struct sw_ledger *l, const struct sw__bench_rec *b, int64_t *id,
                        struct sw_err *e)
{
    const char *endpoint = b->endpoint, *chart_path = b->chart_path;
    const char *source_line = b->source_line, *ext_id = b->ext_id;
    const json_t *params = b->params, *results = b->results;
    int64_t boot_id = b->boot_id, started_at = b->started_at;
    char *p = NULL, *r = NULL;
    char shape[256] = "";
    int64_t endpoint_id = 0;
    int rc = 0;
    if (!params || !results) {
        rc = sw_err_set(e, SW_EINVAL, "bench: parameters and results are required");
        goto out;
    }
    rc = sw__ledger_json_text("bench: params", params, true, SW_LEDGER_JSON_MAX, &p, e);
    if (!rc)
        rc = sw__ledger_json_text("bench: results", results, true, SW_LEDGER_JSON_MAX, &r, e);
    if (!rc)
        rc = check_time("bench: started_at", started_at, e);
    if (!rc)
        rc = sw__check_text("bench: chart_path", chart_path, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = sw__check_text("bench: source_line", source_line, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = check_ext(ext_id, e);
    if (!rc)
        bench_shape(params, shape, sizeof(shape));
    if (!rc)
        rc = sw__ledger_endpoint_tx(l, endpoint, true, &endpoint_id, e);
    if (!rc && boot_id)
        rc = boot_row(l, boot_id, endpoint_id, NULL, e);
    if (rc)
        goto out;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_BENCH_INS, &st, e);
    if (rc)
        goto out;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sw__bind_i64(st, 2, boot_id, boot_id == 0);
    sw__bind_i64(st, 3, started_at, started_at == 0);
    sw__bind_text(st, 4, p);
    sw__bind_text(st, 5, r);
    sw__bind_text(st, 6, chart_path);
    sw__bind_text(st, 7, source_line);
    sw__bind_text(st, 8, ext_id);
    sqlite3_bind_int64(st, 9, sw_wall_unix());
    sw__bind_text(st, 10, shape[0] ? shape : NULL);
    rc = insert(l, st, "bench run", ext_id, id, e);
out:
    sw_free(p);
    sw_free(r);
    return rc;
}

int sw__ledger_rung_tx(struct sw_ledger *l, const struct sw_ledger_rung *r, int64_t *id,
                       struct sw_err *e)
{
    int64_t endpoint_id = 0, shape_id = 0, boot_shape = 0;
    const char *o = r->outcome;
    int rc = sw__check_label("rung: ladder", r->ladder, LABEL_MAX, true, e);
    if (!rc && (!o || (strcmp(o, "pass") && strcmp(o, "fail") && strcmp(o, "refused"))))
        rc = sw_err_set(e, SW_EINVAL, "rung: outcome must be pass, fail or refused");
    if (!rc && (r->rung < 1 || r->rung > 100000))
        rc = sw_err_set(e, SW_EINVAL, "rung: number must be 1 or more");
    if (!rc && !r->shape)
        rc = sw_err_set(e, SW_EINVAL, "rung: the shape is required");
    if (!rc)
        rc = sw__check_text("rung: note", r->note, TEXT_MAX, false, e);
    if (!rc)
        rc = sw__check_text("rung: source_line", r->source_line, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = check_ext(r->ext_id, e);
    if (!rc)
        rc = sw__ledger_endpoint_tx(l, r->endpoint, true, &endpoint_id, e);
    if (!rc)
        rc = sw__ledger_shape_tx(l, r->shape, &shape_id, NULL, e);
    if (!rc && r->boot_id)
        rc = boot_row(l, r->boot_id, endpoint_id, &boot_shape, e);
    if (rc)
        return rc;
    if (r->boot_id && boot_shape != shape_id)
        return sw_err_set(e, SW_EINVAL, "rung: boot %lld ran a different shape",
                          (long long)r->boot_id);
    if (r->evidence && !json_is_object(r->evidence))
        return sw_err_set(e, SW_EINVAL, "rung: evidence must be an object");
    if (r->knob)
        rc = sw__check_label("rung: knob", r->knob, LABEL_MAX, false, e);
    if (!rc && r->klass)
        rc = sw__check_label("rung: class", r->klass, LABEL_MAX, false, e);
    char *evidence = NULL;
    if (!rc)
        rc = sw__ledger_json_text("rung: evidence", r->evidence, false, SW_LEDGER_JSON_MAX,
                                  &evidence, e);
    sqlite3_stmt *st;
    if (!rc)
        rc = sw__ledger_stmt(l, LST_RUNG_INS, &st, e);
    if (rc) {
        sw_free(evidence);
        return rc;
    }
    sqlite3_bind_int64(st, 1, endpoint_id);
    sw__bind_text(st, 2, r->ladder);
    sqlite3_bind_int64(st, 3, r->rung);
    sqlite3_bind_int64(st, 4, shape_id);
    sw__bind_i64(st, 5, r->boot_id, r->boot_id == 0);
    sw__bind_text(st, 6, o);
    sw__bind_text(st, 7, r->note && *r->note ? r->note : NULL);
    sw__bind_text(st, 8, r->source_line);
    sw__bind_text(st, 9, r->ext_id);
    sqlite3_bind_int64(st, 10, sw_wall_unix());
    sw__bind_text(st, 11, r->knob);
    sw__bind_i64(st, 12, r->value, !r->has_value);
    sw__bind_text(st, 13, r->klass);
    sw__bind_text(st, 14, evidence);
    rc = insert(l, st, "ladder rung", r->ext_id, id, e);
    sw_free(evidence);
    if (rc == SW_EEXIST)
        sw_err_set(e, rc, "rung %lld of ladder '%s' for '%s' (or ext_id %s) is already recorded",
                   (long long)r->rung, r->ladder, r->endpoint, r->ext_id ? r->ext_id : "-");
    return rc;
}

int sw__ledger_rule_tx(struct sw_ledger *l, const struct sw_ledger_rule_rec *r, int64_t *id,
                       struct sw_err *e)
{
    int64_t endpoint_id = 0;
    char *failure = NULL;
    struct sw_ledger_rule *parsed = NULL;
    int rc = sw__check_text("rule: reason", r->reason, TEXT_MAX, true, e);
    if (!rc)
        rc = sw_ledger_rule_parse(r->expr, &parsed, e);
    if (rc)
        sw_err_prefix(e, "rule");
    if (!rc && r->failure)
        rc = check_failure(r->failure, e);
    if (!rc)
        rc = sw__ledger_json_text("rule: failure", r->failure, true, 64u * 1024u, &failure, e);
    if (!rc && r->source)
        rc = sw__check_text("rule: source", r->source, LABEL_MAX, false, e);
    if (!rc)
        rc = sw__check_text("rule: source_line", r->source_line, LINE_MAX_BYTES, false, e);
    if (!rc)
        rc = check_ext(r->ext_id, e);
    if (!rc && r->endpoint)
        rc = sw__ledger_endpoint_tx(l, r->endpoint, true, &endpoint_id, e);
    if (!rc && r->boot_id)
        rc = boot_row(l, r->boot_id, endpoint_id, NULL, e);
    if (rc)
        goto out;
    sqlite3_stmt *st;
    rc = sw__ledger_stmt(l, LST_RULE_INS, &st, e);
    if (rc)
        goto out;
    sw__bind_i64(st, 1, endpoint_id, endpoint_id == 0);
    sw__bind_text(st, 2, r->expr);
    sw__bind_text(st, 3, r->reason);
    sw__bind_text(st, 4, failure);
    sw__bind_i64(st, 5, r->boot_id, r->boot_id == 0);
    sw__bind_text(st, 6, r->source);
    sw__bind_text(st, 7, r->source_line);
    sw__bind_text(st, 8, r->ext_id);
    sqlite3_bind_int64(st, 9, sw_wall_unix());
    rc = insert(l, st, "rule", r->ext_id, id, e);
out:
    sw_ledger_rule_free(parsed);
    sw_free(failure);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * The public calls: one transaction each.
 */

#define IN_TX(l, e, body)                                                                          \
    do {                                                                                           \
        int rc_ = sw__ledger_begin((l), (e));                                                      \
        if (rc_)                                                                                   \
            return rc_;                                                                            \
        rc_ = (body);                                                                              \
        if (rc_) {                                                                                 \
            sw__ledger_rollback(l);                                                                \
            return rc_;                                                                            \
        }                                                                                          \
        return sw__ledger_commit((l), (e));                                                        \
    } while (0)

int sw_ledger_endpoint_id(struct sw_ledger *l, const char *name, bool create, int64_t *id,
                          struct sw_err *e)
{
    if (!create || l->readonly)
        return sw__ledger_endpoint_tx(l, name, false, id, e);
    IN_TX(l, e, sw__ledger_endpoint_tx(l, name, true, id, e));
}

int sw_ledger_record_shape(struct sw_ledger *l, const json_t *shape, int64_t *id,
                           char hash[SW_LEDGER_HASH_LEN + 1], struct sw_err *e)
{
    int64_t tmp;
    IN_TX(l, e, sw__ledger_shape_tx(l, shape, id ? id : &tmp, hash, e));
}

int sw_ledger_record_boot(struct sw_ledger *l, const struct sw_ledger_boot *b, int64_t *id,
                          struct sw_err *e)
{
    if (!b)
        return sw_err_set(e, SW_EINVAL, "no boot given");
    IN_TX(l, e, sw__ledger_boot_tx(l, b, id, e));
}

int sw_ledger_record_usage(struct sw_ledger *l, const struct sw_ledger_usage *u, int64_t *id,
                           struct sw_err *e)
{
    if (!u)
        return sw_err_set(e, SW_EINVAL, "no usage reading given");
    IN_TX(l, e, sw__ledger_usage_tx(l, u, id, e));
}

int sw_ledger_record_battery(struct sw_ledger *l, const char *endpoint, int64_t boot_id,
                             const char *url, int64_t started_at, const json_t *doc, int64_t *id,
                             struct sw_err *e)
{
    struct sw__battery_rec r = {
        .endpoint = endpoint, .boot_id = boot_id, .url = url, .started_at = started_at, .doc = doc};
    IN_TX(l, e, sw__ledger_battery_tx(l, &r, id, e));
}

int sw_ledger_record_bench(struct sw_ledger *l, const char *endpoint, int64_t boot_id,
                           int64_t started_at, const json_t *params, const json_t *results,
                           const char *chart_path, const char *source_line, int64_t *id,
                           struct sw_err *e)
{
    struct sw__bench_rec b = {.endpoint = endpoint,
                              .boot_id = boot_id,
                              .started_at = started_at,
                              .params = params,
                              .results = results,
                              .chart_path = chart_path,
                              .source_line = source_line};
    IN_TX(l, e, sw__ledger_bench_tx(l, &b, id, e));
}

int sw_ledger_record_rung(struct sw_ledger *l, const struct sw_ledger_rung *r, int64_t *id,
                          struct sw_err *e)
{
    if (!r)
        return sw_err_set(e, SW_EINVAL, "no rung given");
    IN_TX(l, e, sw__ledger_rung_tx(l, r, id, e));
}

int sw_ledger_record_rule(struct sw_ledger *l, const struct sw_ledger_rule_rec *r, int64_t *id,
                          struct sw_err *e)
{
    if (!r)
        return sw_err_set(e, SW_EINVAL, "no rule given");
    IN_TX(l, e, sw__ledger_rule_tx(l, r, id, e));
}

int sw_ledger_record_note(struct sw_ledger *l, const char *kind, int64_t subject_id,
                          const char *text, const char *author, int64_t *id, struct sw_err *e)
{
    struct sw__note_rec n = {
        .kind = kind, .subject_id = subject_id, .text = text, .author = author};
    IN_TX(l, e, sw__ledger_note_tx(l, &n, id, e));
}

int sw__ledger_ext_find(struct sw_ledger *l, enum sw__lst which, const char *ext_id, int64_t *id,
                        struct sw_err *e)
{
    *id = 0;
    if (!ext_id)
        return 0;
    sqlite3_stmt *st;
    int rc = sw__ledger_stmt(l, which, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, ext_id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    else if (s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "looking up an ext_id");
    sqlite3_reset(st);
    return rc;
}
