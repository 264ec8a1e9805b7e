/*
 * The ledger by hand: what `slipway ledger` asks of it, one call per sub-verb. Each call finds
 * and opens the ledger the command names (sw_ledger_open_for: --ledger, else beside --fleet,
 * $SLIPWAY_LEDGER, XDG), does one thing, closes the file and hands back the answer for the CLI
 * to print. A reading call opens read-only and answers a missing file as an empty ledger (or,
 * where there is nothing to answer, as the missing file it is); a recording call creates it.
 *
 * What it deliberately does not do: read options or print (src/cli/cmd_ledger.c does both), or
 * hold any logic of its own that the record, query and document calls underneath already have.
 */
#include "ledger_internal.h"

#include <string.h>

/* Open the ledger `at` names: read-write (created when missing), or read-only, where a missing
 * file is at->missing when absent_ok and SW_ENOENT otherwise. l is closeable either way. */
static int open_at(struct sw_ledger_at *at, struct sw_ledger *l, bool write, bool absent_ok,
                   struct sw_err *e)
{
    struct sw_ledger_open_opts oo = {.create = write, .readonly = !write};
    bool opened = false;
    memset(l, 0, sizeof(*l));
    at->missing = false;
    at->schema_version = 0;
    int rc = sw_ledger_open_for(l, at->ledger, at->fleet, &oo,
                                absent_ok ? SW_LEDGER_MAY_BE_ABSENT : SW_LEDGER_MUST_EXIST, &opened,
                                at->path, sizeof(at->path), e);
    at->missing = !rc && !opened;
    if (opened)
        at->schema_version = l->schema_version;
    return rc;
}

/* {"ledger": path, key: rows}, rows consumed. */
static int answer(const struct sw_ledger_at *at, const char *key, json_t *rows, json_t **out,
                  struct sw_err *e)
{
    *out = json_pack("{s:s,s:o}", "ledger", at->path, key, rows);
    return *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
}

/* A listing: {"ledger": path, key: query's rows}, empty for a missing ledger. check_endpoint: an
 * endpoint the ledger does not know is SW_ENOENT rather than no rows. */
static int listing(struct sw_ledger_at *at, const char *key,
                   int (*query)(struct sw_ledger *, const struct sw_ledger_query *, json_t **,
                                struct sw_err *),
                   const struct sw_ledger_query *q, bool check_endpoint, json_t **out,
                   struct sw_err *e)
{
    struct sw_ledger l;
    json_t *rows = NULL;
    *out = NULL;
    int rc = open_at(at, &l, false, true, e);
    if (rc)
        return rc;
    if (at->missing)
        return answer(at, key, json_array(), out, e);
    if (check_endpoint && q && q->endpoint) {
        int64_t id;
        rc = sw_ledger_endpoint_id(&l, q->endpoint, false, &id, e);
    }
    if (!rc)
        rc = query(&l, q, &rows, e);
    sw_ledger_close(&l);
    return rc ? rc : answer(at, key, rows, out, e);
}

int sw_ledger_at_list(struct sw_ledger_at *at, const struct sw_ledger_query *q, json_t **out,
                      struct sw_err *e)
{
    return listing(at, "boots", sw_ledger_boots, q, true, out, e);
}

int sw_ledger_at_show(struct sw_ledger_at *at, int64_t id, json_t **out, struct sw_err *e)
{
    struct sw_ledger l;
    *out = NULL;
    int rc = open_at(at, &l, false, false, e);
    if (!rc)
        rc = sw_ledger_boot(&l, id, out, e);
    sw_ledger_close(&l);
    return rc;
}

int sw_ledger_at_export(struct sw_ledger_at *at, const char *endpoint, const char *file,
                        json_t **out, struct sw_err *e)
{
    struct sw_ledger l;
    json_t *doc = NULL;
    *out = NULL;
    int rc = open_at(at, &l, false, false, e);
    if (!rc)
        rc = sw_ledger_export(&l, endpoint, &doc, e);
    sw_ledger_close(&l);
    if (rc || !file) {
        *out = doc;
        return rc;
    }
    char *s = sw_json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    if (!s)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_write_file_atomic(file, s, strlen(s), 0644, e);
    sw_free(s);
    return rc;
}

int sw_ledger_at_import(struct sw_ledger_at *at, const char *file,
                        struct sw_ledger_import_stats *st, struct sw_err *e)
{
    struct sw_ledger l;
    /* read before the ledger is opened: a document that does not load creates no ledger */
    json_t *doc = sw_json_load_file(file, 64u << 20, e);
    if (!doc)
        return e && e->code ? e->code : SW_EIO;
    int rc = open_at(at, &l, true, false, e);
    if (!rc)
        rc = sw_ledger_import(&l, doc, file, st, e);
    sw_ledger_close(&l);
    json_decref(doc);
    return rc;
}

int sw_ledger_at_usage(struct sw_ledger_at *at, const struct sw_ledger_query *q, json_t **out,
                       struct sw_err *e)
{
    return listing(at, "usage", sw_ledger_usage_list, q, false, out, e);
}

int sw_ledger_at_add_usage(struct sw_ledger_at *at, struct sw_ledger_usage *u,
                           const char *shape_hash, int64_t *id, bool *new_endpoint,
                           struct sw_err *e)
{
    struct sw_ledger l;
    *new_endpoint = false;
    int rc = open_at(at, &l, true, false, e);
    if (!rc && shape_hash)
        rc = sw_ledger_find_shape(&l, shape_hash, &u->shape_id, e);
    if (!rc) {
        int64_t ep;
        struct sw_err e2;
        *new_endpoint = sw_ledger_endpoint_id(&l, u->endpoint, false, &ep, &e2) == SW_ENOENT;
        rc = sw_ledger_record_usage(&l, u, id, e);
    }
    sw_ledger_close(&l);
    return rc;
}

int sw_ledger_at_note(struct sw_ledger_at *at, struct sw_ledger_note_on *on, const char *text,
                      const char *author, int64_t *id, struct sw_err *e)
{
    struct sw_ledger l;
    if (!on->kind)
        on->kind = "ledger";
    int rc = open_at(at, &l, true, false, e);
    if (!rc && on->endpoint) {
        on->kind = "endpoint";
        rc = sw_ledger_endpoint_id(&l, on->endpoint, false, &on->subject, e);
    }
    if (!rc && on->shape) {
        on->kind = "shape";
        rc = sw_ledger_find_shape(&l, on->shape, &on->subject, e);
    }
    if (!rc)
        rc = sw_ledger_record_note(&l, on->kind, on->subject, text, author, id, e);
    sw_ledger_close(&l);
    return rc;
}

int sw_ledger_at_rules(struct sw_ledger_at *at, const char *endpoint, json_t **out,
                       struct sw_err *e)
{
    struct sw_ledger l;
    *out = NULL;
    int rc = open_at(at, &l, false, true, e);
    if (rc)
        return rc;
    if (at->missing) {
        *out = json_pack("{s:[],s:[]}", "shapes", "rules");
        return *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    rc = sw_ledger_known_bad(&l, endpoint, out, e);
    sw_ledger_close(&l);
    return rc;
}

int sw_ledger_at_add_rule(struct sw_ledger_at *at, const struct sw_ledger_rule_rec *r, int64_t *id,
                          struct sw_err *e)
{
    struct sw_ledger l;
    struct sw_ledger_rule_rec rule = *r;
    json_t *boot = NULL;
    int rc = open_at(at, &l, true, false, e);
    if (!rc && r->boot_id && !r->failure) {
        /* the failure that taught the rule is the boot's own */
        rc = sw_ledger_boot(&l, r->boot_id, &boot, e);
        const json_t *f = json_object_get(boot, "failure");
        if (!rc && !json_is_null(f))
            rule.failure = f;
    }
    if (!rc)
        rc = sw_ledger_record_rule(&l, &rule, id, e);
    sw_ledger_close(&l);
    json_decref(boot);
    return rc;
}

int sw_ledger_at_verify(struct sw_ledger_at *at, bool check, json_t **out, struct sw_err *e)
{
    struct sw_ledger l;
    struct sw_err problem;
    bool ok = false;
    json_t *counts = NULL;
    *out = NULL;
    sw_err_clear(&problem);
    int rc = open_at(at, &l, false, true, e);
    if (rc)
        return rc;
    if (!at->missing && check)
        rc = sw_ledger_verify(&l, &ok, &problem);
    if (rc && e)
        *e = problem;
    if (!rc && !at->missing)
        rc = sw_ledger_counts(&l, &counts, e);
    sw_ledger_close(&l);
    if (rc)
        return rc;
    json_t *j = json_pack("{s:s,s:b,s:i}", "ledger", at->path, "exists", !at->missing,
                          "schema_version", at->schema_version);
    int prc = j ? 0 : SW_ENOMEM;
    if (check && !at->missing) {
        sw__put(j, "ok", json_boolean(ok), &prc);
        if (!ok)
            sw__put(j, "problem", sw_json_text(problem.msg, strlen(problem.msg), NULL), &prc);
    }
    if (counts)
        sw__put(j, "rows", counts, &prc);
    if (prc) {
        json_decref(j);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    *out = j;
    return 0;
}
