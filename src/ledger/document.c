/*
 * The ledger as one JSON document: what sw_ledger_export writes and sw_ledger_import reads back
 * (an export of another ledger, or a hand-written fixture such as the operator's measured boots,
 * tests/data/ledger/seed-boots.json). Its sections are tables: a section's rows are written and
 * read by the table's descriptor (tables.c: the keys in order, each value by its kind, where an
 * imported value lands in the record), plus what a descriptor cannot say (a boot's outcome must
 * agree with its failure, usage figures come with a unit, a note's subject is found by its kind).
 *
 * The import is one transaction; rows refer to each other by "ref" (or the exported "id"), and
 * every error names the row and key: "seed-boots.json: boots[3]: shape.kv_bytes: ...". A
 * document with a top-level "id" gives each row the external key "<id>:<kind>:<ref>", and a row
 * whose key is already in the ledger is skipped (its ref then points at the row recorded
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

/* Any record a section's rows land in. */
union rec {
    struct sw_ledger_boot boot;
    struct sw_ledger_usage usage;
    struct sw__battery_rec battery;
    struct sw__bench_rec bench;
    struct sw_ledger_rung rung;
    struct sw_ledger_rule_rec rule;
    struct sw__note_rec note;
};

/* A section of the document: a table's rows. */
struct section {
    const char *name;
    const struct sw__table *t;
    enum sw__lst list; /* the export's rows, ?1 an optional endpoint */
    const char *kind;  /* what its refs and ext_ids call a row: "boot" */
    bool named;        /* other rows refer to its rows by ref */
    enum sw__lst ext;  /* a row by ext_id */
    /* the whole row: endpoints and shapes; the others are read by their descriptor into r,
     * then record does what the descriptor does not say and records it */
    int (*one)(struct imp *m, const json_t *o);
    int (*record)(struct imp *m, const json_t *o, union rec *r, int64_t *id);
};

/* The error of the row being read: "boots[3]: message". */
static int ierr(struct imp *m, int code, const char *fmt, ...) SW_PRINTF(3, 4);
static int ierr(struct imp *m, int code, const char *fmt, ...)
{
    va_list ap;
    sw_err_clear(m->e);
    va_start(ap, fmt);
    sw_err_vset(m->e, code, fmt, ap);
    va_end(ap);
    sw_err_prefix(m->e, "%s", m->row);
    return code;
}

/* A key a row of table t takes: "ref", and the keys of its export and import. */
static bool table_key(const void *arg, const char *key)
{
    const struct sw__table *t = arg;
    if (!strcmp(key, "ref"))
        return true;
    for (size_t i = 0; i < t->ncols; i++)
        if ((t->cols[i].views & (SW__V_EXPORT | SW__V_IMPORT)) &&
            !strcmp(key, sw__col_key(&t->cols[i])))
            return true;
    return false;
}

/* Every key of o known (known(arg, key)), but for comments ("_comment", "_source"). */
static int check_keys(struct imp *m, const json_t *o, bool (*known)(const void *, const char *),
                      const void *arg)
{
    if (!json_is_object(o))
        return ierr(m, SW_EPARSE, "expected an object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        if (key[0] == '_') /* annotations for people */
            continue;
        if (!known(arg, key))
            return ierr(m, SW_EPARSE, "unknown key '%.60s'", key);
    }
    return 0;
}

/* o[k] when it is of the type (a string or an object); *out NULL when it is absent or null. */
static int get_typed(struct imp *m, const json_t *o, const char *k, json_type type,
                     const json_t **out)
{
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (json_typeof(v) != type)
        return ierr(m, SW_EPARSE, "%s must be %s", k,
                    type == JSON_STRING ? "a string" : "an object");
    *out = v;
    return 0;
}

static int get_str(struct imp *m, const json_t *o, const char *k, const char **out)
{
    const json_t *v = NULL;
    int rc = get_typed(m, o, k, JSON_STRING, &v);
    *out = json_string_value(v);
    return rc;
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
    return get_typed(m, o, k, JSON_OBJECT, out);
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

/* ---------------------------------------------------------------------------------------------
 * A row by its table's descriptor.
 */

/* Each field that lands in the record, read by its kind; the ext_id is the one ext_of chose. A
 * row of a table whose endpoint is NOT NULL must name it. */
static int read_fields(struct imp *m, const struct sw__table *t, const json_t *o, union rec *r,
                       const char *ext)
{
    int rc = 0;
    const char **endpoint = NULL;
    for (size_t k = 0; k < t->ncols && !rc; k++) {
        const struct sw__col *c = &t->cols[k];
        if (!c->rec)
            continue;
        const char *key = sw__col_key(c);
        void *at = (char *)r + c->rec - 1;
        if (!strcmp(key, "ext_id")) {
            *(const char **)at = ext;
            continue;
        }
        switch (c->kind) {
        case SW__TIME:
            rc = get_time(m, o, key, at);
            break;
        case SW__INT:
            rc = get_i64(m, o, key, at);
            break;
        case SW__JSON:
        case SW__SHAPE:
            rc = get_obj(m, o, key, at);
            break;
        case SW__BOOT:
            rc = resolve(m, o, key, "boot", at);
            break;
        default: /* text, an endpoint's name */
            rc = get_str(m, o, key, at);
            break;
        }
        if (c->kind == SW__ENDPOINT && c->cons && strstr(c->cons, "NOT NULL"))
            endpoint = at;
    }
    if (!rc && endpoint && !*endpoint)
        rc = ierr(m, SW_EPARSE, "endpoint is required");
    return rc;
}

static int one_row(struct imp *m, const struct section *s, const json_t *o)
{
    union rec r;
    char ref[160], extbuf[512];
    const char *ext = NULL;
    int64_t id = 0, existing = 0;
    memset(&r, 0, sizeof(r));
    int rc = check_keys(m, o, table_key, s->t);
    if (!rc)
        rc = own_ref(m, o, ref, sizeof(ref));
    if (!rc)
        rc = ext_of(m, o, s->kind, ref, s->ext, extbuf, sizeof(extbuf), &ext, &existing);
    if (rc)
        return rc;
    if (existing) {
        m->st.skipped++;
        return s->named ? remember(m, s->kind, ref, existing) : 0;
    }
    rc = read_fields(m, s->t, o, &r, ext);
    if (!rc)
        rc = s->record(m, o, &r, &id);
    if (!rc && s->named)
        rc = remember(m, s->kind, ref, id);
    if (!rc)
        m->st.added++;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * What the descriptors do not say.
 */

static int one_endpoint(struct imp *m, const json_t *o)
{
    const char *name;
    int64_t id;
    char ref[160];
    int rc = check_keys(m, o, table_key, &sw__t_endpoints);
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
    const json_t *shape = NULL;
    const char *hash;
    char ref[160], got[SW_LEDGER_HASH_LEN + 1];
    int64_t id;
    int rc = check_keys(m, o, table_key, &sw__t_shapes);
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

/* A boot's outcome follows from its failure; a shape_hash given must be the shape's. */
static int record_boot(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    struct sw_ledger_boot *b = &r->boot;
    const char *outcome, *shape_hash;
    int rc = get_str(m, o, "outcome", &outcome);
    if (!rc)
        rc = get_str(m, o, "shape_hash", &shape_hash);
    if (rc)
        return rc;
    if (outcome && strcmp(outcome, b->failure ? "failed" : "ok"))
        return ierr(m, SW_EPARSE, "outcome '%s' but %s", outcome,
                    b->failure ? "a failure is given" : "no failure is given");
    if (shape_hash && b->shape) {
        char got[SW_LEDGER_HASH_LEN + 1];
        rc = sw_ledger_shape_canon(b->shape, NULL, NULL, got, m->e);
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
    return sw__ledger_boot_tx(m->l, b, id, m->e);
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

static bool given(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return v && !json_is_null(v);
}

/* Usage figures in MiB or with a unit; a reading without a time is of an unknown time. */
static int record_usage(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    struct sw_ledger_usage *u = &r->usage;
    int rc = mib_of(m, o, "used_mib", "used", &u->used_mib);
    if (!rc)
        rc = mib_of(m, o, "total_mib", "total", &u->total_mib);
    u->has_free = given(o, "free") || given(o, "free_mib");
    if (!rc && u->has_free)
        rc = mib_of(m, o, "free_mib", "free", &u->free_mib);
    if (!u->taken_at)
        u->taken_at = -1; /* a document carries history: no time given is an unknown time */
    return rc ? rc : sw__ledger_usage_tx(m->l, u, id, m->e);
}

/* The battery's checks are the row itself: {"checks": [...]}, tallies counted again. */
static int record_battery(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    r->battery.doc = o;
    return sw__ledger_battery_tx(m->l, &r->battery, id, m->e);
}

/* A rung's value only when it is an integer, its evidence only when an object. */
static int record_rung(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    struct sw_ledger_rung *g = &r->rung;
    const char *shape_hash;
    int rc = get_str(m, o, "shape_hash", &shape_hash);
    if (!rc && json_is_integer(json_object_get(o, "value"))) {
        g->has_value = true;
        rc = get_i64(m, o, "value", &g->value);
    }
    if (!rc && json_is_object(json_object_get(o, "evidence")))
        rc = get_obj(m, o, "evidence", &g->evidence);
    return rc ? rc : sw__ledger_rung_tx(m->l, g, id, m->e);
}

static bool shape_ref_missing(struct imp *m, const char *ref)
{
    char k[200];
    snprintf(k, sizeof(k), "shape:%.150s", ref);
    return json_object_get(m->refs, k) == NULL;
}

/* A note's subject by its kind: a ref, an endpoint's name, a shape's hash. */
static int record_note(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    struct sw__note_rec *n = &r->note;
    const char *kind = n->kind;
    if (!kind)
        return ierr(m, SW_EPARSE, "kind is required");
    json_t *subj = json_object_get(o, "subject");
    int rc = 0;
    if (!strcmp(kind, "endpoint") && json_is_string(subj)) {
        /* an endpoint note may name its endpoint */
        rc = sw__ledger_endpoint_tx(m->l, json_string_value(subj), false, &n->subject_id, m->e);
    } else if (!strcmp(kind, "shape") && json_is_string(subj) &&
               shape_ref_missing(m, json_string_value(subj))) {
        /* a shape note may give the shape's hash (or a unique prefix) instead of a ref */
        rc = sw_ledger_find_shape(m->l, json_string_value(subj), &n->subject_id, m->e);
    } else if (strcmp(kind, "ledger")) {
        rc = resolve(m, o, "subject", kind, &n->subject_id);
        if (!rc && !n->subject_id)
            rc = ierr(m, SW_EPARSE, "subject is required for a %s note", kind);
    }
    return rc ? rc : sw__ledger_note_tx(m->l, n, id, m->e);
}

static int record_bench(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    return sw__ledger_bench_tx(m->l, &r->bench, id, m->e);
}

static int record_rule(struct imp *m, const json_t *o, union rec *r, int64_t *id)
{
    return sw__ledger_rule_tx(m->l, &r->rule, id, m->e);
}

/* The sections in the order they are written and read: a row refers only to rows before it. */
static const struct section sections[] = {
    {"endpoints", &sw__t_endpoints, LST_ENDPOINT_LIST, .one = one_endpoint},
    {"shapes", &sw__t_shapes, LST_SHAPE_LIST, .one = one_shape},
    {"boots", &sw__t_boots, LST_BOOTS_EXPORT, "boot", true, LST_EXT_BOOT, NULL, record_boot},
    {"usage", &sw__t_usage, LST_USAGE_EXPORT, "usage", true, LST_EXT_USAGE, NULL, record_usage},
    {"battery_runs", &sw__t_battery_runs, LST_BATTERY_LIST, "battery", true, LST_EXT_BATTERY, NULL,
     record_battery},
    {"bench_runs", &sw__t_bench_runs, LST_BENCH_LIST, "bench", true, LST_EXT_BENCH, NULL,
     record_bench},
    {"ladder_rungs", &sw__t_ladder_rungs, LST_RUNG_LIST, "rung", true, LST_EXT_RUNG, NULL,
     record_rung},
    {"rules", &sw__t_rules, LST_RULES_EXPORT, "rule", true, LST_EXT_RULE, NULL, record_rule},
    {"notes", &sw__t_notes, LST_NOTE_LIST, "note", false, LST_EXT_NOTE, NULL, record_note},
};
static const size_t nsections = SW_ARRAY_LEN(sections);

/* ---------------------------------------------------------------------------------------------
 * The document.
 */

/* The export's header and the sections. */
static bool doc_key(const void *unused, const char *key)
{
    static const char *const head[] = {"id",
                                       "description",
                                       "source",
                                       "slipway_ledger_export",
                                       "schema_version",
                                       "canon_version",
                                       "exported_at",
                                       "endpoint"};
    for (size_t i = 0; i < SW_ARRAY_LEN(head); i++)
        if (!strcmp(key, head[i]))
            return true;
    for (size_t i = 0; i < nsections; i++)
        if (!strcmp(key, sections[i].name))
            return true;
    return false;
}

static int section(struct imp *m, const json_t *doc, const struct section *s)
{
    json_t *arr = json_object_get(doc, s->name);
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        snprintf(m->row, sizeof(m->row), "%s", s->name);
        return ierr(m, SW_EPARSE, "must be an array");
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *o = json_array_get(arr, i);
        snprintf(m->row, sizeof(m->row), "%s[%zu]", s->name, i);
        int rc = s->one ? s->one(m, o) : one_row(m, s, o);
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

/* The document's header, then its sections in one transaction. */
static int import_doc(struct imp *m, const json_t *doc)
{
    snprintf(m->row, sizeof(m->row), "document");
    int rc = check_keys(m, doc, doc_key, NULL);
    if (!rc)
        rc = get_str(m, doc, "id", &m->docid);
    if (!rc && m->docid)
        rc = sw__check_label("document id", m->docid, 128, false, m->e);
    json_t *cv = json_object_get(doc, "canon_version");
    if (!rc && cv && json_integer_value(cv) != SW_LEDGER_CANON_VERSION)
        rc = ierr(m, SW_EUNSUPPORTED,
                  "canon_version %lld; this slipway canonicalizes shapes "
                  "with version %d",
                  (long long)json_integer_value(cv), SW_LEDGER_CANON_VERSION);
    if (rc)
        return rc;
    m->refs = json_object();
    if (!m->refs)
        return sw_err_set(m->e, SW_ENOMEM, "out of memory");
    rc = sw__ledger_begin(m->l, m->e);
    if (rc)
        return rc;
    if (m->progress) {
        uint64_t total = 0;
        for (size_t i = 0; i < nsections; i++)
            total += json_array_size(json_object_get(doc, sections[i].name));
        m->progress->total = total;
    }
    for (size_t i = 0; i < nsections && !rc; i++)
        rc = section(m, doc, &sections[i]);
    if (m->progress)
        sw_progress_finish(m->progress);
    if (rc) {
        sw__ledger_rollback(m->l);
        return rc;
    }
    return sw__ledger_commit(m->l, m->e);
}

int sw_ledger_import(struct sw_ledger *l, const json_t *doc, const char *where,
                     struct sw_ledger_import_stats *st, struct sw_err *e)
{
    struct imp m = {.l = l, .e = e, .progress = st ? st->progress : NULL};
    int rc = import_doc(&m, doc);
    json_decref(m.refs);
    if (rc) {
        if (where && e)
            sw_err_prefix(e, "%s", where);
        return rc;
    }
    if (st) {
        st->added = m.st.added;
        st->skipped = m.st.skipped;
    }
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
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw__ledger_exec(l, "BEGIN", e);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    if (endpoint) {
        int64_t id;
        rc = sw__ledger_endpoint_tx(l, endpoint, false, &id, e);
    }
    for (size_t i = 0; i < nsections && !rc; i++) {
        json_t *part = NULL;
        rc = sw__ledger_list(l, sections[i].list, endpoint, &part, e);
        if (!rc)
            sw__put(doc, sections[i].name, part, &rc);
    }
    sw__ledger_rollback(l); /* a read: ending it is all this does */
    if (rc) {
        if (rc == SW_ENOMEM && (!e || e->code != SW_ENOMEM))
            sw_err_set(e, SW_ENOMEM, "out of memory");
        json_decref(doc);
        return rc;
    }
    *out = doc;
    return 0;
}
