/*
 * Tags: a shape that proved itself on an endpoint, kept with what it takes to bring it back (the
 * secret-free rendered unit and env file, the payload manifest, the image digest). Named
 * ENDPOINT-YYYYMMDD-N (N counts the endpoint's tags of that UTC day). Exactly one tag of an
 * endpoint is its last-good (a partial unique index holds "at most one"; every call that moves
 * the flag sets the new one in the transaction that clears the old). Older tags stay kept as
 * rollback targets until retired with a reason; a kept tag's payload paths must stay where they
 * are (sw_ledger_tags_needing, `slipway retire`). Payload moves are recorded here too.
 *
 * What it deliberately does not do: write files on a host, restore a tag, or look at the disk
 * (whether a tag's payload is present is the caller's callback: sw_ledger_history).
 */
#include "deploy_internal.h"

#include <string.h>
#include <time.h>

#define TAG_TEXT_MAX  (1024u * 1024u)
#define MANIFEST_MAX  100000
#define MANIFEST_PATH 4096

/* ---------------------------------------------------------------------------------------------
 * A stored JSON document as JSON (deploy_read.c too): NULL on a failure (out of memory, or text
 * that does not parse); the other column readers are query.c's sw__col_*.
 */

json_t *sw__dep_col_json(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    if (!t)
        return json_null();
    return json_loadb(t, (size_t)sqlite3_column_bytes(st, i), JSON_DECODE_ANY, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Validation and redaction.
 */

static bool secret_key(const char *k, size_t n)
{
    char up[128];
    if (n >= sizeof(up))
        n = sizeof(up) - 1;
    for (size_t i = 0; i < n; i++)
        up[i] = (char)(k[i] >= 'a' && k[i] <= 'z' ? k[i] - 'a' + 'A' : k[i]);
    up[n] = '\0';
    /* the unit lint's words: HF_TOKEN, *_API_KEY, *SECRET*, *PASSWORD*; not MAX_TOKENS */
    bool token = n >= 5 && !strcmp(up + n - 5, "TOKEN");
    bool access = n >= 10 && !strcmp(up + n - 10, "ACCESS_KEY");
    return token || access || strstr(up, "API_KEY") || strstr(up, "APIKEY") ||
           strstr(up, "SECRET") || strstr(up, "PASSWORD") || strstr(up, "PASSWD");
}

/* An env file with every secret-named key's value replaced by "***" (in place: the value only
 * shrinks). Lines: KEY=VALUE, optionally `export `, spaces around. */
static void redact_env(char *text)
{
    char *line = text;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        char *end = nl ? nl : line + strlen(line);
        char *k = line;
        while (k < end && (*k == ' ' || *k == '\t'))
            k++;
        if (end - k > 7 && !strncmp(k, "export ", 7))
            k += 7;
        char *eq = memchr(k, '=', (size_t)(end - k));
        if (eq && *k != '#') {
            size_t kn = (size_t)(eq - k);
            while (kn && (k[kn - 1] == ' ' || k[kn - 1] == '\t'))
                kn--;
            char *v = eq + 1;
            bool already = end - v == 3 && !strncmp(v, "***", 3);
            if (secret_key(k, kn) && end > v && !already) {
                size_t tail = strlen(end);
                memcpy(v, "***", 3);
                memmove(v + 3, end, tail + 1);
                end = v + 3;
            }
        }
        line = *end ? end + 1 : NULL;
    }
}

static bool is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return false;
    return true;
}

static int check_manifest(const json_t *m, struct sw_err *e)
{
    if (!json_is_array(m))
        return sw_err_set(e, SW_EINVAL,
                          "tag: payload must be an array of {path, size, sha256} (empty for none)");
    if (json_array_size(m) > MANIFEST_MAX)
        return sw_err_set(e, SW_ERANGE, "tag: payload has more than %d entries", MANIFEST_MAX);
    size_t i;
    const json_t *x;
    json_array_foreach(m, i, x)
    {
        const char *p = json_string_value(json_object_get(x, "path"));
        const json_t *size = json_object_get(x, "size");
        const json_t *sha = json_object_get(x, "sha256");
        if (!json_is_object(x) || !p || p[0] != '/' || strlen(p) >= MANIFEST_PATH ||
            !sw__utf8_valid(p, strlen(p)))
            return sw_err_set(e, SW_EINVAL, "tag: payload[%zu].path must be an absolute path", i);
        if (!json_is_integer(size) || json_integer_value(size) < 0)
            return sw_err_set(e, SW_EINVAL, "tag: payload[%zu].size must be bytes (>= 0)", i);
        if (sha && !json_is_null(sha) && !is_hex64(json_string_value(sha)))
            return sw_err_set(e, SW_EINVAL,
                              "tag: payload[%zu].sha256 must be 64 lowercase hex digits or null",
                              i);
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)x, k, v)
        {
            if (strcmp(k, "path") && strcmp(k, "size") && strcmp(k, "sha256"))
                return sw_err_set(e, SW_EINVAL, "tag: payload[%zu]: unknown key '%s'", i, k);
        }
    }
    return 0;
}

/* "YYYYMMDD" of a unix time, UTC. */
static int utc_day(int64_t t, char out[9], struct sw_err *e)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(out, 9, "%Y%m%d", &tm) != 8)
        return sw_err_set(e, SW_EINVAL, "tag: created_at %lld is not a time", (long long)t);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Commit.
 */

struct tag_texts {
    char *unit, *env, *note, *payload;
};

static void texts_free(struct tag_texts *x)
{
    sw_free(x->unit);
    if (x->env) /* it held an env file: wipe before freeing */
        memset(x->env, 0, strlen(x->env));
    sw_free(x->env);
    sw_free(x->note);
    sw_free(x->payload);
}

static int tag_commit_tx(struct sw_ledger *l, const struct sw_ledger_tag_new *t,
                         const struct tag_texts *x, const char *day, int64_t created,
                         char *name_out, int64_t *id, struct sw_err *e)
{
    int64_t endpoint_id = 0, shape_id = 0, seq = 0;
    sqlite3_stmt *st = NULL;
    int rc = sw__ledger_endpoint_tx(l, t->endpoint, true, &endpoint_id, e);
    if (!rc)
        rc = sw__ledger_shape_tx(l, t->shape, &shape_id, NULL, e);
    if (rc)
        return rc;
    if (t->attempt_id) {
        int64_t a_ep = 0, a_shape = 0;
        bool open = false;
        rc = sw__dep_attempt_row(l, t->attempt_id, &a_ep, &a_shape, &open, e);
        if (rc)
            return rc;
        if (!open)
            return sw_err_set(e, SW_EINVAL, "tag: deploy attempt #%lld is already finished",
                              (long long)t->attempt_id);
        if (a_ep != endpoint_id || a_shape != shape_id)
            return sw_err_set(e, SW_EINVAL,
                              "tag: deploy attempt #%lld deployed another endpoint or shape",
                              (long long)t->attempt_id);
    }
    rc = sw__dep_prepare(l,
                         "SELECT coalesce(max(seq), 0) + 1 FROM tags "
                         "WHERE endpoint_id = ?1 AND day = ?2",
                         &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, endpoint_id);
    sw__bind_text(st, 2, day);
    if (sqlite3_step(st) == SQLITE_ROW)
        seq = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (seq < 1)
        return sw__ledger_dberr(l, e, SQLITE_ERROR, "numbering a tag");
    char name[SW_LEDGER_TAG_MAX];
    int w = snprintf(name, sizeof(name), "%s-%s-%lld", t->endpoint, day, (long long)seq);
    if (w < 0 || (size_t)w >= sizeof(name))
        return sw_err_set(e, SW_ERANGE, "tag: name too long");
    rc = sw__dep_prepare(
        l, "UPDATE tags SET last_good = 0 WHERE endpoint_id = ?1 AND last_good = 1", &st, e);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, endpoint_id);
    rc = sw__dep_done(l, st, "moving the last-good flag", e);
    if (rc)
        return rc;
    rc = sw__dep_prepare(l,
                         "INSERT INTO tags(name, endpoint_id, day, seq, shape_id, attempt_id, "
                         "image, created_at, note, last_good, unit_name, env_name, unit_text, "
                         "env_text, payload) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?11, ?12, ?13, ?14)",
                         &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, name);
    sqlite3_bind_int64(st, 2, endpoint_id);
    sw__bind_text(st, 3, day);
    sqlite3_bind_int64(st, 4, seq);
    sqlite3_bind_int64(st, 5, shape_id);
    sw__bind_i64(st, 6, t->attempt_id, t->attempt_id == 0);
    sw__bind_text(st, 7, t->image);
    sqlite3_bind_int64(st, 8, created);
    sw__bind_text(st, 9, x->note);
    sw__bind_text(st, 10, t->unit_name);
    sw__bind_text(st, 11, t->env_name);
    sw__bind_text(st, 12, x->unit);
    sw__bind_text(st, 13, x->env);
    sw__bind_text(st, 14, x->payload);
    rc = sw__dep_done(l, st, "recording a tag", e);
    if (rc)
        return rc;
    int64_t tag_id = sqlite3_last_insert_rowid(l->db);
    if (t->attempt_id) {
        rc = sw__dep_prepare(l,
                             "UPDATE deploy_attempts SET ended_ms = max(?2, started_ms), "
                             "outcome = 'committed', failure_class = NULL, tag_id = ?3, "
                             "downtime_ms = ?4 WHERE id = ?1",
                             &st, e);
        if (rc)
            return rc;
        sqlite3_bind_int64(st, 1, t->attempt_id);
        sqlite3_bind_int64(st, 2, sw__wall_ms());
        sqlite3_bind_int64(st, 3, tag_id);
        sw__bind_i64(st, 4, t->downtime_ms, t->downtime_ms < 0);
        rc = sw__dep_done(l, st, "committing a deploy attempt", e);
        if (rc)
            return rc;
    }
    if (name_out)
        snprintf(name_out, SW_LEDGER_TAG_MAX, "%s", name);
    if (id)
        *id = tag_id;
    return 0;
}

int sw_ledger_tag_commit(struct sw_ledger *l, const struct sw_ledger_tag_new *t,
                         char name[SW_LEDGER_TAG_MAX], int64_t *id, struct sw_err *e)
{
    struct tag_texts x = {0};
    char day[9];
    if (name)
        name[0] = '\0';
    if (id)
        *id = 0;
    if (!t || !t->endpoint || !t->shape || !t->payload)
        return sw_err_set(e, SW_EINVAL, "tag: endpoint, shape and payload are required");
    int64_t created = t->created_at > 0 ? t->created_at : sw_wall_unix();
    int rc = utc_day(created, day, e);
    if (!rc)
        rc = check_manifest(t->payload, e);
    if (!rc && t->image)
        rc = sw__check_label("tag: image", t->image, 512, false, e);
    if (!rc && t->unit_name)
        rc = sw__check_label("tag: unit_name", t->unit_name, 255, false, e);
    if (!rc && t->env_name)
        rc = sw__check_label("tag: env_name", t->env_name, 255, false, e);
    if (!rc)
        rc = sw__dep_text("tag: unit", t->unit_text, TAG_TEXT_MAX, t->secrets, &x.unit, e);
    if (!rc)
        rc = sw__dep_text("tag: env file", t->env_text, TAG_TEXT_MAX, t->secrets, &x.env, e);
    if (!rc && x.env)
        redact_env(x.env);
    if (!rc)
        rc = sw__dep_text("tag: note", t->note, 64u * 1024u, t->secrets, &x.note, e);
    if (!rc)
        rc = sw__ledger_json_text("tag: payload", t->payload, false, SW_LEDGER_JSON_MAX, &x.payload,
                                  e);
    if (!rc)
        rc = sw__ledger_begin(l, e);
    if (rc) {
        texts_free(&x);
        return rc;
    }
    rc = tag_commit_tx(l, t, &x, day, created, name, id, e);
    if (rc)
        sw__ledger_rollback(l);
    else
        rc = sw__ledger_commit(l, e);
    if (rc && name)
        name[0] = '\0';
    if (rc && id)
        *id = 0;
    texts_free(&x);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Reading tags.
 */

#define TAG_COLS                                                                                   \
    "t.id, t.name, e.name, t.day, t.seq, s.hash, s.canonical, t.attempt_id, t.image, "             \
    "t.created_at, t.note, t.last_good, t.retired_at, t.retired_why, t.payload, t.unit_name, "     \
    "t.env_name, t.unit_text, t.env_text "
#define TAG_FROM                                                                                   \
    "FROM tags t JOIN endpoints e ON e.id = t.endpoint_id JOIN shapes s ON s.id = t.shape_id "

int sw__dep_tag_row(sqlite3_stmt *st, bool full, json_t **out)
{
    int rc = 0;
    json_t *o = json_object();
    if (!o)
        return SW_ENOMEM;
    json_t *canon = sw__dep_col_json(st, 6);
    char sum[512] = "";
    if (canon)
        sw_ledger_shape_summary(canon, sum, sizeof(sum));
    bool last_good = sqlite3_column_int(st, 11) != 0;
    bool retired = sqlite3_column_type(st, 12) != SQLITE_NULL;
    sw__put(o, "id", sw__col_int(st, 0), &rc);
    sw__put(o, "name", sw__col_str(st, 1), &rc);
    sw__put(o, "endpoint", sw__col_str(st, 2), &rc);
    sw__put(o, "day", sw__col_str(st, 3), &rc);
    sw__put(o, "n", sw__col_int(st, 4), &rc);
    sw__put(o, "shape_hash", sw__col_str(st, 5), &rc);
    sw__put(o, "shape", canon, &rc);
    sw__put(o, "summary", json_string(sum), &rc);
    sw__put(o, "attempt", sw__col_int(st, 7), &rc);
    sw__put(o, "image", sw__col_str(st, 8), &rc);
    sw__put(o, "created", sw__col_time(st, 9, 1), &rc);
    sw__put(o, "note", sw__col_str(st, 10), &rc);
    sw__put(o, "last_good", json_boolean(last_good), &rc);
    sw__put(o, "kept", json_boolean(!retired), &rc);
    sw__put(o, "retired", sw__col_time(st, 12, 1), &rc);
    sw__put(o, "retired_why", sw__col_str(st, 13), &rc);
    sw__put(o, "payload", sw__dep_col_json(st, 14), &rc);
    if (full) {
        json_t *files = json_array();
        for (int k = 0; files && k < 2; k++) {
            if (sqlite3_column_type(st, 17 + k) == SQLITE_NULL)
                continue;
            json_t *f = json_object();
            int frc = 0;
            if (!f || json_array_append_new(files, f)) {
                json_decref(files);
                files = NULL;
                break;
            }
            sw__put(f, "name", sw__col_str(st, 15 + k), &frc);
            sw__put(f, "kind", json_string(k ? "env" : "unit"), &frc);
            sw__put(f, "text", sw__col_str(st, 17 + k), &frc);
            if (frc) {
                json_decref(files);
                files = NULL;
            }
        }
        sw__put(o, "files", files, &rc);
    }
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return 0;
}

/* Rows of a tag query into an array (or the single row when one). */
static int tag_query(struct sw_ledger *l, const char *sql, const char *arg, bool full, bool one,
                     json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    json_t *arr = NULL;
    *out = NULL;
    int rc = sw__dep_prepare(l, sql, &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, arg);
    arr = json_array();
    if (!arr)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *row = NULL;
        if (sw__dep_tag_row(st, full, &row) || json_array_append_new(arr, row))
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (!rc && s != SQLITE_DONE)
        rc = sw__ledger_dberr(l, e, s, "reading tags");
    sqlite3_finalize(st);
    if (!rc && one) {
        if (!json_array_size(arr)) {
            rc = sw_err_set(e, SW_ENOENT, "no tag %s in the ledger", arg ? arg : "");
        } else {
            *out = json_incref(json_array_get(arr, 0));
        }
        json_decref(arr);
        return rc;
    }
    if (rc)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}

int sw_ledger_tag_get(struct sw_ledger *l, const char *name, json_t **out, struct sw_err *e)
{
    if (!name)
        return sw_err_set(e, SW_EINVAL, "tag: no name given");
    return tag_query(l, "SELECT " TAG_COLS TAG_FROM "WHERE t.name = ?1", name, true, true, out, e);
}

int sw_ledger_tag_list(struct sw_ledger *l, const char *endpoint, bool full, json_t **out,
                       struct sw_err *e)
{
    return tag_query(l,
                     "SELECT " TAG_COLS TAG_FROM "WHERE ?1 IS NULL OR e.name = ?1 "
                     "ORDER BY t.id DESC",
                     endpoint, full, false, out, e);
}

int sw_ledger_tag_last_good(struct sw_ledger *l, const char *endpoint, json_t **out,
                            struct sw_err *e)
{
    if (!endpoint)
        return sw_err_set(e, SW_EINVAL, "tag: no endpoint given");
    int rc = tag_query(l, "SELECT " TAG_COLS TAG_FROM "WHERE e.name = ?1 AND t.last_good = 1",
                       endpoint, true, true, out, e);
    if (rc == SW_ENOENT)
        sw_err_set(e, SW_ENOENT, "%s has no last-good tag (nothing committed yet)", endpoint);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Moving the flag, retiring.
 */

static int tag_state(struct sw_ledger *l, const char *name, int64_t *id, int64_t *endpoint_id,
                     bool *last_good, bool *retired, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    int rc = sw__dep_prepare(l,
                             "SELECT id, endpoint_id, last_good, retired_at IS NOT NULL FROM tags "
                             "WHERE name = ?1",
                             &st, e);
    if (rc)
        return rc;
    sw__bind_text(st, 1, name);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        *endpoint_id = sqlite3_column_int64(st, 1);
        *last_good = sqlite3_column_int(st, 2) != 0;
        *retired = sqlite3_column_int(st, 3) != 0;
    } else if (s == SQLITE_DONE) {
        rc = sw_err_set(e, SW_ENOENT, "no tag %s in the ledger", name);
    } else {
        rc = sw__ledger_dberr(l, e, s, "reading a tag");
    }
    sqlite3_finalize(st);
    return rc;
}

int sw_ledger_tag_set_last_good(struct sw_ledger *l, const char *name, struct sw_err *e)
{
    int64_t id = 0, ep = 0;
    bool lg = false, retired = false;
    sqlite3_stmt *st = NULL;
    if (!name)
        return sw_err_set(e, SW_EINVAL, "tag: no name given");
    int rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    rc = tag_state(l, name, &id, &ep, &lg, &retired, e);
    if (!rc && retired)
        rc = sw_err_set(e, SW_EINVAL, "tag %s is retired: it cannot be the last-good", name);
    if (!rc && !lg) {
        rc = sw__dep_prepare(l, "UPDATE tags SET last_good = 0 WHERE endpoint_id = ?1", &st, e);
        if (!rc) {
            sqlite3_bind_int64(st, 1, ep);
            rc = sw__dep_done(l, st, "moving the last-good flag", e);
        }
        if (!rc)
            rc = sw__dep_prepare(l, "UPDATE tags SET last_good = 1 WHERE id = ?1", &st, e);
        if (!rc) {
            sqlite3_bind_int64(st, 1, id);
            rc = sw__dep_done(l, st, "moving the last-good flag", e);
        }
    }
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

int sw_ledger_tag_retire(struct sw_ledger *l, const char *name, const char *why, int64_t at,
                         struct sw_err *e)
{
    int64_t id = 0, ep = 0;
    bool lg = false, retired = false;
    sqlite3_stmt *st = NULL;
    char *w = NULL;
    if (!name)
        return sw_err_set(e, SW_EINVAL, "tag: no name given");
    if (!why || !*why)
        return sw_err_set(e, SW_EINVAL, "retiring %s: say why", name);
    int rc = sw__dep_text("retire: why", why, 64u * 1024u, NULL, &w, e);
    if (rc)
        return rc;
    rc = sw__ledger_begin(l, e);
    if (rc) {
        sw_free(w);
        return rc;
    }
    rc = tag_state(l, name, &id, &ep, &lg, &retired, e);
    if (!rc && lg)
        rc = sw_err_set(e, SW_EINVAL,
                        "tag %s is the last-good of its endpoint: commit or choose another "
                        "last-good before retiring it",
                        name);
    if (!rc && retired)
        rc = sw_err_set(e, SW_EINVAL, "tag %s is already retired", name);
    if (!rc)
        rc = sw__dep_prepare(l, "UPDATE tags SET retired_at = ?2, retired_why = ?3 WHERE id = ?1",
                             &st, e);
    if (!rc) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, at > 0 ? at : sw_wall_unix());
        sw__bind_text(st, 3, w);
        rc = sw__dep_done(l, st, "retiring a tag", e);
    }
    sw_free(w);
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

/* ---------------------------------------------------------------------------------------------
 * Payloads: who needs a path, and moves.
 */

/* Length of p without trailing slashes (the root keeps its one). */
static size_t trimmed(const char *p)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        n--;
    return n;
}

/* a equals b, or one is under the other, by whole path components. */
bool sw__dep_path_overlap(const char *a, const char *b)
{
    size_t an = trimmed(a), bn = trimmed(b);
    size_t m = an < bn ? an : bn;
    if (strncmp(a, b, m))
        return false;
    if (an == bn)
        return true;
    const char *longer = an > bn ? a : b;
    /* the shorter one is "/" (everything is under it) or ends at a component boundary */
    return m == 1 ? longer[0] == '/' : longer[m] == '/';
}

int sw_ledger_tags_needing(struct sw_ledger *l, const char *path, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    json_t *arr = NULL;
    *out = NULL;
    if (!path || path[0] != '/')
        return sw_err_set(e, SW_EINVAL, "tags needing a path: give an absolute path");
    int rc = sw__dep_prepare(l,
                             "SELECT t.name, e.name, t.last_good, t.payload FROM tags t "
                             "JOIN endpoints e ON e.id = t.endpoint_id "
                             "WHERE t.retired_at IS NULL ORDER BY t.id",
                             &st, e);
    if (rc)
        return rc;
    arr = json_array();
    if (!arr)
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    int s = SQLITE_DONE;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *payload = sw__dep_col_json(st, 3);
        json_t *paths = json_array();
        if (!payload || !paths) {
            json_decref(payload);
            json_decref(paths);
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            break;
        }
        size_t i;
        json_t *x;
        json_array_foreach(payload, i, x)
        {
            const char *p = json_string_value(json_object_get(x, "path"));
            if (p && sw__dep_path_overlap(p, path) && json_array_append_new(paths, json_string(p)))
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        }
        json_decref(payload);
        if (!rc && json_array_size(paths)) {
            json_t *row = json_object();
            int orc = row ? 0 : SW_ENOMEM;
            sw__put(row, "tag", sw__col_str(st, 0), &orc);
            sw__put(row, "endpoint", sw__col_str(st, 1), &orc);
            sw__put(row, "last_good", json_boolean(sqlite3_column_int(st, 2) != 0), &orc);
            sw__put(row, "paths", paths, &orc);
            paths = NULL;
            if (orc) {
                json_decref(row);
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            } else if (json_array_append_new(arr, row)) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            }
        }
        json_decref(paths);
    }
    if (!rc && s != SQLITE_DONE && s != SQLITE_ROW)
        rc = sw__ledger_dberr(l, e, s, "reading tags");
    sqlite3_finalize(st);
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

int sw_ledger_record_move(struct sw_ledger *l, const char *from, const char *to, const char *method,
                          int64_t bytes, int64_t files, const char *note, int64_t *id,
                          struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    if (id)
        *id = 0;
    if (!from || !*from || !to || !*to)
        return sw_err_set(e, SW_EINVAL, "move: from and to are required");
    if (!method || (strcmp(method, "rename") && strcmp(method, "copy")))
        return sw_err_set(e, SW_EINVAL, "move: method must be rename or copy");
    int rc = sw__check_label("move: from", from, 4096, true, e);
    if (!rc)
        rc = sw__check_label("move: to", to, 4096, true, e);
    if (!rc && note)
        rc = sw__check_label("move: note", note, 4096, true, e);
    if (!rc)
        rc = sw__ledger_begin(l, e);
    if (rc)
        return rc;
    rc = sw__dep_prepare(l,
                         "INSERT INTO payload_moves(from_path, to_path, method, bytes, files, "
                         "moved_at, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                         &st, e);
    if (!rc) {
        sw__bind_text(st, 1, from);
        sw__bind_text(st, 2, to);
        sw__bind_text(st, 3, method);
        sw__bind_i64(st, 4, bytes, bytes < 0);
        sw__bind_i64(st, 5, files, files < 0);
        sqlite3_bind_int64(st, 6, sw_wall_unix());
        sw__bind_text(st, 7, note);
        rc = sw__dep_done(l, st, "recording a move", e);
    }
    if (!rc && id)
        *id = sqlite3_last_insert_rowid(l->db);
    if (rc) {
        sw__ledger_rollback(l);
        return rc;
    }
    return sw__ledger_commit(l, e);
}

int sw_ledger_moves(struct sw_ledger *l, json_t **out, struct sw_err *e)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    /* the rows as payload_moves' descriptor lists them (tables.c) */
    int rc = sw__ledger_stmt(l, LST_MOVES, &st, e);
    return rc ? rc : sw__ledger_collect(l, LST_MOVES, st, out, e);
}
