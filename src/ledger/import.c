/*
 * Importing a ledger document: an export of another ledger, or a hand-written fixture such as
 * the operator's measured boots (tests/data/ledger/seed-boots.json). The whole document is one
 * transaction; rows refer to each other by "ref" (or the exported "id"), and every error names
 * the row and key: "seed-boots.json: boots[3]: shape.kv_bytes: ...".
 *
 * A document with a top-level "id" gives each row the external key "<id>:<kind>:<ref>", and a
 * row whose key is already in the ledger is skipped (its ref then points at the row recorded
 * before), so importing the same document twice records it once.
 *
 * What it deliberately does not do: merge or update rows, or trust figures it can recompute
 * (shape hashes are recomputed and must match when given; battery tallies are recounted).
 */
#include "ledger_internal.h"

#include <stdlib.h>
#include <string.h>

struct imp {
    struct sw_ledger *l;
    struct sw_err *e;
    const char *docid;
    json_t *refs; /* "kind:ref" -> row id */
    struct sw_ledger_import_stats st;
    struct sw_progress *progress;
    uint64_t done;
    char row[96]; /* "boots[3]" */
};

static int ierr(struct imp *m, int code, const char *fmt, ...) SW_PRINTF(3, 4);
static int ierr(struct imp *m, int code, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_err_set(m->e, code, "%s: %s", m->row, msg);
}

static int check_keys(struct imp *m, const json_t *o, const char *const *allowed)
{
    if (!json_is_object(o))
        return ierr(m, SW_EPARSE, "expected an object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        if (key[0] == '_') /* "_comment", "_source": annotations for people */
            continue;
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(key, allowed[i]);
        if (!ok)
            return ierr(m, SW_EPARSE, "unknown key '%.60s'", key);
    }
    return 0;
}

static int get_str(struct imp *m, const json_t *o, const char *k, const char **out)
{
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ierr(m, SW_EPARSE, "%s must be a string", k);
    *out = json_string_value(v);
    return 0;
}

static int get_i64(struct imp *m, const json_t *o, const char *k, int64_t *out)
{
    json_t *v = json_object_get(o, k);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ierr(m, SW_EPARSE, "%s must be an integer >= 0", k);
    *out = json_integer_value(v);
    return 0;
}

static int get_time(struct imp *m, const json_t *o, const char *k, int64_t *out)
{
    int rc = sw__parse_time(json_object_get(o, k), out, m->e);
    if (rc)
        sw_err_prefix(m->e, "%s: %s", m->row, k);
    return rc;
}

static int get_obj(struct imp *m, const json_t *o, const char *k, const json_t **out)
{
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return ierr(m, SW_EPARSE, "%s must be an object", k);
    *out = v;
    return 0;
}

/* The row's own ref ("ref", else "id") as text; "" when it has none. */
static int own_ref(struct imp *m, const json_t *o, char *out, size_t n)
{
    json_t *r = json_object_get(o, "ref");
    if (!r || json_is_null(r))
        r = json_object_get(o, "id");
    out[0] = '\0';
    if (!r || json_is_null(r))
        return m->docid ? ierr(m, SW_EPARSE,
                               "a document with an \"id\" needs a \"ref\" on every "
                               "row (it names the row across imports)")
                        : 0;
    if (json_is_string(r) && json_string_length(r) > 0 && json_string_length(r) < n - 1)
        snprintf(out, n, "%s", json_string_value(r));
    else if (json_is_integer(r))
        snprintf(out, n, "%lld", (long long)json_integer_value(r));
    else
        return ierr(m, SW_EPARSE, "ref must be a short string or an integer");
    return 0;
}

/* Resolve a reference to a row of `kind` recorded earlier in this document. 0 = none given. */
static int resolve(struct imp *m, const json_t *o, const char *key, const char *kind, int64_t *id)
{
    json_t *r = json_object_get(o, key);
    char k[200];
    *id = 0;
    if (!r || json_is_null(r))
        return 0;
    if (json_is_string(r))
        snprintf(k, sizeof(k), "%s:%.150s", kind, json_string_value(r));
    else if (json_is_integer(r))
        snprintf(k, sizeof(k), "%s:%lld", kind, (long long)json_integer_value(r));
    else
        return ierr(m, SW_EPARSE, "%s must be a ref (string or integer)", key);
    json_t *v = json_object_get(m->refs, k);
    if (!v)
        return ierr(m, SW_ENOENT, "%s '%s' does not name a %s earlier in this document", key,
                    k + strlen(kind) + 1, kind);
    *id = json_integer_value(v);
    return 0;
}

static int remember(struct imp *m, const char *kind, const char *ref, int64_t id)
{
    if (!ref[0])
        return 0;
    char k[200];
    snprintf(k, sizeof(k), "%s:%.150s", kind, ref);
    if (json_object_get(m->refs, k))
        return ierr(m, SW_EPARSE, "ref '%s' is used by two %s rows", ref, kind);
    if (json_object_set_new(m->refs, k, json_integer(id)))
        return sw_err_set(m->e, SW_ENOMEM, "out of memory");
    return 0;
}

/* The row's ext_id: its own, or "<docid>:<kind>:<ref>". If the ledger has it already, *existing
 * receives that row's id. */
static int ext_of(struct imp *m, const json_t *o, const char *kind, const char *ref,
                  enum sw__lst find, char *out, size_t n, const char **ext, int64_t *existing)
{
    const char *own = NULL;
    int rc = get_str(m, o, "ext_id", &own);
    if (rc)
        return rc;
    *ext = NULL;
    *existing = 0;
    if (own) {
        snprintf(out, n, "%s", own);
        *ext = out;
    } else if (m->docid) {
        int w = snprintf(out, n, "%s:%s:%s", m->docid, kind, ref);
        if (w < 0 || (size_t)w >= n)
            return ierr(m, SW_EPARSE, "document id + ref are too long");
        *ext = out;
    }
    if (*ext) {
        rc = sw__ledger_ext_find(m->l, find, *ext, existing, m->e);
        if (rc)
            return rc;
    }
    return 0;
}

static int section(struct imp *m, const json_t *doc, const char *name,
                   int (*one)(struct imp *, const json_t *))
{
    json_t *arr = json_object_get(doc, name);
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        snprintf(m->row, sizeof(m->row), "%s", name);
        return ierr(m, SW_EPARSE, "must be an array");
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        snprintf(m->row, sizeof(m->row), "%s[%zu]", name, i);
        int rc = one(m, json_array_get(arr, i));
        if (m->progress)
            sw_progress_update(m->progress, ++m->done);
        if (rc) {
            if (!strstr(m->e ? m->e->msg : "", m->row))
                sw_err_prefix(m->e, "%s", m->row);
            return rc;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 */

static int one_endpoint(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id", "ref", "name", "created_at", NULL};
    const char *name;
    int64_t id;
    char ref[160];
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = get_str(m, o, "name", &name);
    if (!rc && !name)
        rc = ierr(m, SW_EPARSE, "name is required");
    if (!rc) {
        const char *save = m->docid;
        m->docid = NULL; /* endpoints are keyed by name, never need a ref */
        rc = own_ref(m, o, ref, sizeof(ref));
        m->docid = save;
    }
    if (!rc)
        rc = sw__ledger_endpoint_tx(m->l, name, true, &id, m->e);
    if (!rc)
        rc = remember(m, "endpoint", ref, id);
    return rc;
}

static int one_shape(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id",    "ref",        "hash",          "canonical",
                                       "shape", "created_at", "canon_version", NULL};
    const json_t *shape = NULL;
    const char *hash;
    char ref[160], got[SW_LEDGER_HASH_LEN + 1];
    int64_t id;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = get_obj(m, o, json_object_get(o, "canonical") ? "canonical" : "shape", &shape);
    if (!rc && !shape)
        rc = ierr(m, SW_EPARSE, "canonical (the shape) is required");
    if (!rc)
        rc = get_str(m, o, "hash", &hash);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = sw__ledger_shape_tx(m->l, shape, &id, got, m->e);
    if (!rc && hash && strcmp(hash, got))
        rc = ierr(m, SW_EMISMATCH,
                  "hash %.12s... does not match the shape (canonical hash "
                  "%.12s...): edited row, or another canonicalization version",
                  hash, got);
    if (!rc)
        rc = remember(m, "shape", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static int one_boot(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id",
                                       "ref",
                                       "endpoint",
                                       "shape",
                                       "shape_hash",
                                       "engine",
                                       "engine_version",
                                       "started_at",
                                       "ended_at",
                                       "duration_ms",
                                       "outcome",
                                       "failure_class",
                                       "failure_phase",
                                       "predicted",
                                       "report",
                                       "failure",
                                       "log_excerpt",
                                       "log_path",
                                       "source",
                                       "source_line",
                                       "note",
                                       "recorded_at",
                                       "ext_id",
                                       "shape_summary",
                                       NULL};
    struct sw_ledger_boot b = {0};
    char ref[160], extbuf[512];
    const char *outcome, *shape_hash;
    int64_t id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, "boot", ref, LST_EXT_BOOT, extbuf, sizeof(extbuf), &b.ext_id, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return remember(m, "boot", ref, existing);
    }
    rc = get_str(m, o, "endpoint", &b.endpoint);
    if (!rc)
        rc = get_obj(m, o, "shape", &b.shape);
    if (!rc)
        rc = get_str(m, o, "shape_hash", &shape_hash);
    if (!rc)
        rc = get_str(m, o, "engine", &b.engine);
    if (!rc)
        rc = get_str(m, o, "engine_version", &b.engine_version);
    if (!rc)
        rc = get_time(m, o, "started_at", &b.started_at);
    if (!rc)
        rc = get_time(m, o, "ended_at", &b.ended_at);
    if (!rc)
        rc = get_i64(m, o, "duration_ms", &b.duration_ms);
    if (!rc)
        rc = get_obj(m, o, "predicted", &b.predicted);
    if (!rc)
        rc = get_obj(m, o, "report", &b.report);
    if (!rc)
        rc = get_obj(m, o, "failure", &b.failure);
    if (!rc)
        rc = get_str(m, o, "log_excerpt", &b.log_excerpt);
    if (!rc)
        rc = get_str(m, o, "log_path", &b.log_path);
    if (!rc)
        rc = get_str(m, o, "source", &b.source);
    if (!rc)
        rc = get_str(m, o, "source_line", &b.source_line);
    if (!rc)
        rc = get_str(m, o, "note", &b.note);
    if (!rc)
        rc = get_str(m, o, "outcome", &outcome);
    if (rc)
        return rc;
    if (!b.endpoint)
        return ierr(m, SW_EPARSE, "endpoint is required");
    if (outcome && strcmp(outcome, b.failure ? "failed" : "ok"))
        return ierr(m, SW_EPARSE, "outcome '%s' but %s", outcome,
                    b.failure ? "a failure is given" : "no failure is given");
    if (shape_hash && b.shape) {
        char got[SW_LEDGER_HASH_LEN + 1];
        rc = sw_ledger_shape_canon(b.shape, NULL, NULL, got, m->e);
        if (rc) {
            sw_err_prefix(m->e, "%s", m->row);
            return rc;
        }
        if (strcmp(got, shape_hash))
            return ierr(m, SW_EMISMATCH,
                        "shape_hash %.12s... does not match the shape "
                        "(%.12s...)",
                        shape_hash, got);
    }
    rc = sw__ledger_boot_tx(m->l, &b, &id, m->e);
    if (!rc)
        rc = remember(m, "boot", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static int mib_of(struct imp *m, const json_t *o, const char *mib_key, const char *unit_key,
                  uint64_t *out)
{
    json_t *v = json_object_get(o, mib_key);
    json_t *u = json_object_get(o, unit_key);
    if (v && u)
        return ierr(m, SW_EPARSE, "give %s or %s, not both", mib_key, unit_key);
    if (v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return ierr(m, SW_EPARSE, "%s must be an integer >= 0", mib_key);
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (!u || !json_is_string(u))
        return ierr(m, SW_EPARSE, "%s (\"21,684 MiB\") or %s is required", unit_key, mib_key);
    int rc = sw_ledger_parse_mib(json_string_value(u), out, m->e);
    if (rc)
        sw_err_prefix(m->e, "%s: %s", m->row, unit_key);
    return rc;
}

static int one_usage(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {
        "id",       "ref",      "endpoint",    "boot",   "shape",       "device",    "used",
        "total",    "used_mib", "total_mib",   "free",   "free_mib",    "free_read", "source",
        "taken_at", "note",     "source_line", "ext_id", "recorded_at", NULL};
    struct sw_ledger_usage u = {0};
    char ref[160], extbuf[512];
    int64_t id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc =
            ext_of(m, o, "usage", ref, LST_EXT_USAGE, extbuf, sizeof(extbuf), &u.ext_id, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return remember(m, "usage", ref, existing);
    }
    rc = get_str(m, o, "endpoint", &u.endpoint);
    if (!rc)
        rc = resolve(m, o, "boot", "boot", &u.boot_id);
    if (!rc)
        rc = get_obj(m, o, "shape", &u.shape);
    if (!rc)
        rc = get_str(m, o, "device", &u.device);
    if (!rc)
        rc = mib_of(m, o, "used_mib", "used", &u.used_mib);
    if (!rc)
        rc = mib_of(m, o, "total_mib", "total", &u.total_mib);
    u.has_free = (json_object_get(o, "free") && !json_is_null(json_object_get(o, "free"))) ||
                 (json_object_get(o, "free_mib") && !json_is_null(json_object_get(o, "free_mib")));
    if (!rc && u.has_free)
        rc = mib_of(m, o, "free_mib", "free", &u.free_mib);
    if (!rc)
        rc = get_str(m, o, "source", &u.source);
    if (!rc)
        rc = get_time(m, o, "taken_at", &u.taken_at);
    if (!rc && !u.taken_at)
        u.taken_at = -1; /* a document carries history: no time given is an unknown time */
    if (!rc)
        rc = get_str(m, o, "note", &u.note);
    if (!rc)
        rc = get_str(m, o, "source_line", &u.source_line);
    if (rc)
        return rc;
    if (!u.endpoint)
        return ierr(m, SW_EPARSE, "endpoint is required");
    rc = sw__ledger_usage_tx(m->l, &u, &id, m->e);
    if (!rc)
        rc = remember(m, "usage", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static int one_battery(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id",         "ref",    "endpoint",    "boot",   "url",
                                       "started_at", "ms",     "checks",      "passed", "failed",
                                       "skipped",    "ext_id", "recorded_at", NULL};
    const char *endpoint, *url, *ext;
    char ref[160], extbuf[512];
    int64_t boot = 0, started = 0, id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, "battery", ref, LST_EXT_BATTERY, extbuf, sizeof(extbuf), &ext, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return remember(m, "battery", ref, existing);
    }
    rc = get_str(m, o, "endpoint", &endpoint);
    if (!rc)
        rc = resolve(m, o, "boot", "boot", &boot);
    if (!rc)
        rc = get_str(m, o, "url", &url);
    if (!rc)
        rc = get_time(m, o, "started_at", &started);
    if (rc)
        return rc;
    if (!endpoint)
        return ierr(m, SW_EPARSE, "endpoint is required");
    rc = sw__ledger_battery_tx(m->l, endpoint, boot, url, started, o, ext, &id, m->e);
    if (!rc)
        rc = remember(m, "battery", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static int one_bench(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id",          "ref",    "endpoint",    "boot",
                                       "started_at",  "params", "results",     "chart_path",
                                       "source_line", "ext_id", "recorded_at", NULL};
    const char *endpoint, *chart, *line, *ext;
    const json_t *params, *results;
    char ref[160], extbuf[512];
    int64_t boot = 0, started = 0, id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, "bench", ref, LST_EXT_BENCH, extbuf, sizeof(extbuf), &ext, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return remember(m, "bench", ref, existing);
    }
    rc = get_str(m, o, "endpoint", &endpoint);
    if (!rc)
        rc = resolve(m, o, "boot", "boot", &boot);
    if (!rc)
        rc = get_time(m, o, "started_at", &started);
    if (!rc)
        rc = get_obj(m, o, "params", &params);
    if (!rc)
        rc = get_obj(m, o, "results", &results);
    if (!rc)
        rc = get_str(m, o, "chart_path", &chart);
    if (!rc)
        rc = get_str(m, o, "source_line", &line);
    if (rc)
        return rc;
    if (!endpoint)
        return ierr(m, SW_EPARSE, "endpoint is required");
    rc = sw__ledger_bench_tx(m->l, endpoint, boot, started, params, results, chart, line, ext, &id,
                             m->e);
    if (!rc)
        rc = remember(m, "bench", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static int one_rung(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {
        "id",          "ref",  "endpoint", "ladder", "rung",        "shape",
        "shape_hash",  "boot", "outcome",  "note",   "source_line", "ext_id",
        "recorded_at", "knob", "value",    "class",  "evidence",    NULL};
    struct sw_ledger_rung r = {0};
    const char *shape_hash;
    char ref[160], extbuf[512];
    int64_t id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, "rung", ref, LST_EXT_RUNG, extbuf, sizeof(extbuf), &r.ext_id, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return remember(m, "rung", ref, existing);
    }
    rc = get_str(m, o, "endpoint", &r.endpoint);
    if (!rc)
        rc = get_str(m, o, "ladder", &r.ladder);
    if (!rc)
        rc = get_i64(m, o, "rung", &r.rung);
    if (!rc)
        rc = get_obj(m, o, "shape", &r.shape);
    if (!rc)
        rc = get_str(m, o, "shape_hash", &shape_hash);
    if (!rc)
        rc = resolve(m, o, "boot", "boot", &r.boot_id);
    if (!rc)
        rc = get_str(m, o, "outcome", &r.outcome);
    if (!rc)
        rc = get_str(m, o, "note", &r.note);
    if (!rc)
        rc = get_str(m, o, "source_line", &r.source_line);
    if (!rc)
        rc = get_str(m, o, "knob", &r.knob);
    if (!rc)
        rc = get_str(m, o, "class", &r.klass);
    if (!rc && json_is_integer(json_object_get(o, "value"))) {
        r.has_value = true;
        rc = get_i64(m, o, "value", &r.value);
    }
    if (!rc && json_is_object(json_object_get(o, "evidence")))
        rc = get_obj(m, o, "evidence", &r.evidence);
    if (rc)
        return rc;
    if (!r.endpoint)
        return ierr(m, SW_EPARSE, "endpoint is required");
    rc = sw__ledger_rung_tx(m->l, &r, &id, m->e);
    if (!rc)
        rc = remember(m, "rung", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static int one_rule(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id",          "ref",     "endpoint",   "expr",
                                       "reason",      "failure", "boot",       "source",
                                       "source_line", "ext_id",  "created_at", NULL};
    struct sw_ledger_rule_rec r = {0};
    char ref[160], extbuf[512];
    int64_t id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, "rule", ref, LST_EXT_RULE, extbuf, sizeof(extbuf), &r.ext_id, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return remember(m, "rule", ref, existing);
    }
    rc = get_str(m, o, "endpoint", &r.endpoint);
    if (!rc)
        rc = get_str(m, o, "expr", &r.expr);
    if (!rc)
        rc = get_str(m, o, "reason", &r.reason);
    if (!rc)
        rc = get_obj(m, o, "failure", &r.failure);
    if (!rc)
        rc = resolve(m, o, "boot", "boot", &r.boot_id);
    if (!rc)
        rc = get_str(m, o, "source", &r.source);
    if (!rc)
        rc = get_str(m, o, "source_line", &r.source_line);
    if (rc)
        return rc;
    rc = sw__ledger_rule_tx(m->l, &r, &id, m->e);
    if (!rc)
        rc = remember(m, "rule", ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

static bool shape_ref_missing(struct imp *m, const char *ref)
{
    char k[200];
    snprintf(k, sizeof(k), "shape:%.150s", ref);
    return json_object_get(m->refs, k) == NULL;
}

static int one_note(struct imp *m, const json_t *o)
{
    static const char *const keys[] = {"id",     "ref",    "kind",       "subject", "text",
                                       "author", "ext_id", "created_at", NULL};
    const char *kind, *text, *author, *ext;
    char ref[160], extbuf[512];
    int64_t subject = 0, id = 0, existing = 0;
    int rc = check_keys(m, o, keys);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, "note", ref, LST_EXT_NOTE, extbuf, sizeof(extbuf), &ext, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return 0;
    }
    rc = get_str(m, o, "kind", &kind);
    if (!rc)
        rc = get_str(m, o, "text", &text);
    if (!rc)
        rc = get_str(m, o, "author", &author);
    if (rc)
        return rc;
    if (!kind)
        return ierr(m, SW_EPARSE, "kind is required");
    json_t *subj = json_object_get(o, "subject");
    if (!strcmp(kind, "endpoint") && json_is_string(subj)) {
        /* an endpoint note may name its endpoint */
        rc = sw__ledger_endpoint_tx(m->l, json_string_value(subj), false, &subject, m->e);
    } else if (!strcmp(kind, "shape") && json_is_string(subj) &&
               shape_ref_missing(m, json_string_value(subj))) {
        /* a shape note may give the shape's hash (or a unique prefix) instead of a ref */
        rc = sw_ledger_find_shape(m->l, json_string_value(subj), &subject, m->e);
    } else if (strcmp(kind, "ledger")) {
        rc = resolve(m, o, "subject", kind, &subject);
        if (!rc && !subject)
            rc = ierr(m, SW_EPARSE, "subject is required for a %s note", kind);
    }
    if (rc)
        return rc;
    rc = sw__ledger_note_tx(m->l, kind, subject, text, author, ext, &id, m->e);
    if (!rc)
        m->st.added++;
    return rc;
}

int sw_ledger_import(struct sw_ledger *l, const json_t *doc, const char *where,
                     struct sw_ledger_import_stats *st, struct sw_err *e)
{
    static const char *const top[] = {"id",
                                      "description",
                                      "source",
                                      "slipway_ledger_export",
                                      "schema_version",
                                      "canon_version",
                                      "exported_at",
                                      "endpoint",
                                      "endpoints",
                                      "shapes",
                                      "boots",
                                      "usage",
                                      "battery_runs",
                                      "bench_runs",
                                      "ladder_rungs",
                                      "rules",
                                      "notes",
                                      NULL};
    struct imp m = {.l = l, .e = e, .progress = st ? st->progress : NULL};
    snprintf(m.row, sizeof(m.row), "document");
    int rc = check_keys(&m, doc, top);
    if (!rc)
        rc = get_str(&m, doc, "id", &m.docid);
    if (!rc && m.docid)
        rc = sw__check_label("document id", m.docid, 128, false, e);
    json_t *cv = json_object_get(doc, "canon_version");
    if (!rc && cv && json_integer_value(cv) != SW_LEDGER_CANON_VERSION)
        rc = ierr(&m, SW_EUNSUPPORTED,
                  "canon_version %lld; this slipway canonicalizes shapes "
                  "with version %d",
                  (long long)json_integer_value(cv), SW_LEDGER_CANON_VERSION);
    if (rc)
        goto fail;
    m.refs = json_object();
    if (!m.refs) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto fail;
    }
    rc = sw__ledger_begin(l, e);
    if (rc)
        goto fail;
    static const struct {
        const char *name;
        int (*one)(struct imp *, const json_t *);
    } sections[] = {
        {"endpoints", one_endpoint}, {"shapes", one_shape},         {"boots", one_boot},
        {"usage", one_usage},        {"battery_runs", one_battery}, {"bench_runs", one_bench},
        {"ladder_rungs", one_rung},  {"rules", one_rule},           {"notes", one_note},
    };
    if (m.progress) {
        uint64_t total = 0;
        for (size_t i = 0; i < SW_ARRAY_LEN(sections); i++)
            total += json_array_size(json_object_get(doc, sections[i].name));
        m.progress->total = total;
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(sections) && !rc; i++)
        rc = section(&m, doc, sections[i].name, sections[i].one);
    if (m.progress)
        sw_progress_finish(m.progress);
    if (rc) {
        sw__ledger_rollback(l);
        goto fail;
    }
    rc = sw__ledger_commit(l, e);
    if (rc)
        goto fail;
    json_decref(m.refs);
    if (st) {
        st->added = m.st.added;
        st->skipped = m.st.skipped;
    }
    return 0;
fail:
    json_decref(m.refs);
    if (where && e)
        sw_err_prefix(e, "%s", where);
    return rc;
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

int sw_ledger_parse_mib(const char *s, uint64_t *mib, struct sw_err *e)
{
    uint64_t bytes = 0;
    size_t len = s ? strlen(s) : 0;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (!len)
        return sw_err_set(e, SW_EINVAL, "no memory figure given");
    if (s[len - 1] >= '0' && s[len - 1] <= '9')
        return sw_err_set(e, SW_EINVAL,
                          "'%s' has no unit: write %sMiB (as nvidia-smi and "
                          "rocm-smi print it) or give GiB/bytes with a unit",
                          s, s);
    int rc = sw_parse_bytes(s, &bytes, e);
    if (rc)
        return rc;
    if (bytes % SW_MIB)
        return sw_err_set(e, SW_EINVAL, "'%s' is not a whole number of MiB", s);
    *mib = bytes / SW_MIB;
    return 0;
}
