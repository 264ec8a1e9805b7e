/*
 * engine/llamacpp_diff: a predicted llama.cpp report (slipway plan) against a printed one
 * (slipway bootlog parse), field by field.
 *
 * Tolerance exists only where the print demands it, and each field says which:
 *   - counts, types and flags (n_ctx, cells, layers, seqs, streams, k_type, swa...) are printed
 *     exactly and compared exactly;
 *   - KV and recurrent sizes are printed as `%7.2f MiB` of a float (llama-kv-cache.cpp,
 *     llama-memory-recurrent.cpp): the printed value stands for +-0.005 MiB (5,243 B) plus the
 *     float's own rounding (size x 2^-24);
 *   - model and output buffers are printed as `%8.2f MiB` of a double, one line per device:
 *     +-0.005 MiB per line summed;
 *   - the compute buffer has no closed formula in llama.cpp (it is whatever ggml-alloc reserves
 *     for the worst-case graph), so it is reported with its error and never counted as a
 *     mismatch.
 * When the printed side carries its `precision` object (bootlog parse prints one), those
 * tolerances are used; otherwise the defaults above.
 *
 * What it deliberately does not do: decide which fields a plan must predict (a field the plan
 * leaves null is "not_predicted", not a mismatch) or compare anything but the report.
 */
#include "engine_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define HALF_CENTI_MIB 5243 /* ceil(0.005 * 2^20) */

enum kind { K_INT, K_BOOL, K_STR, K_BYTES_F, K_BYTES_D, K_ESTIMATE };

struct dx {
    json_t *fields;
    int mismatches;
    int rc;
    const char *prefix; /* "" for the main model, "draft." for the draft's context */
};

static const json_t *report_of(const json_t *doc)
{
    const json_t *r = json_object_get(doc, "report");
    return json_is_object(r) ? r : doc;
}

static bool present(const json_t *v)
{
    return v && !json_is_null(v);
}

static void add(struct dx *d, const char *field, const json_t *pred, const json_t *got, enum kind k,
                int64_t tol_in)
{
    if (d->rc || (!present(pred) && !present(got)))
        return;
    json_t *f = json_object();
    if (!f || json_array_append_new(d->fields, f)) {
        d->rc = SW_ENOMEM;
        return;
    }
    const char *verdict = "match";
    const char *note = NULL;
    char nbuf[160];
    int64_t tol = 0;
    char name[96];
    snprintf(name, sizeof(name), "%s%s", d->prefix, field);
    int rc = sw_json_set_str(f, "field", name);
    rc |= sw_json_set_new(f, "predicted", present(pred) ? json_deep_copy(pred) : json_null());
    rc |= sw_json_set_new(f, "printed", present(got) ? json_deep_copy(got) : json_null());

    switch (k) {
    case K_INT:
    case K_BOOL:
    case K_STR:
        note = "printed exactly";
        break;
    case K_BYTES_F:
        note = "printed as %.2f MiB of a float: +-0.005 MiB plus float rounding";
        break;
    case K_BYTES_D:
        note = "printed as %.2f MiB per device line: +-0.005 MiB per line";
        break;
    case K_ESTIMATE:
        note = "no closed formula in llama.cpp: an estimate, reported, never a mismatch";
        break;
    }
    if (!present(got)) {
        verdict = "not_printed";
    } else if (!present(pred)) {
        verdict = "not_predicted";
    } else if (k == K_STR) {
        const char *a = json_string_value(pred), *b = json_string_value(got);
        if (!a || !b || strcmp(a, b))
            verdict = "mismatch";
    } else if (k == K_BOOL) {
        if (!json_is_boolean(pred) || !json_is_boolean(got) ||
            json_is_true(pred) != json_is_true(got))
            verdict = "mismatch";
    } else {
        if (!json_is_integer(pred) || !json_is_integer(got)) {
            verdict = "mismatch";
        } else {
            int64_t a = json_integer_value(pred), b = json_integer_value(got);
            int64_t delta = b - a;
            rc |= sw_json_set_int(f, "delta", delta);
            if (k == K_BYTES_F || k == K_BYTES_D) {
                tol = tol_in >= 0 ? tol_in : HALF_CENTI_MIB + (k == K_BYTES_F ? (b >> 24) + 1 : 0);
                if (llabs(delta) > tol)
                    verdict = "mismatch";
            } else if (k == K_ESTIMATE) {
                verdict = "estimate";
                if (a > 0) {
                    snprintf(nbuf, sizeof(nbuf),
                             "no closed formula in llama.cpp: estimate off by %+.1f%% "
                             "(reported, never a mismatch)",
                             100.0 * (double)delta / (double)a);
                    note = nbuf;
                }
            } else if (delta) {
                verdict = "mismatch";
            }
        }
    }
    rc |= sw_json_set_int(f, "tolerance", tol);
    rc |= sw_json_set_str(f, "verdict", verdict);
    rc |= sw_json_set_str(f, "note", note);
    if (rc)
        d->rc = SW_ENOMEM;
    if (!strcmp(verdict, "mismatch"))
        d->mismatches++;
}

static int64_t prec_at(const json_t *precision, const char *path1, size_t idx, const char *key)
{
    const json_t *p = precision ? json_object_get(precision, path1) : NULL;
    if (p && json_is_array(p))
        p = json_array_get(p, idx);
    if (p && key)
        p = json_object_get(p, key);
    return json_is_integer(p) ? json_integer_value(p) : -1;
}

static void kv_entry(struct dx *d, const json_t *a, const json_t *b, size_t i,
                     const json_t *precision)
{
    static const struct {
        const char *key;
        enum kind k;
    } keys[] = {
        {"cells", K_INT},   {"layers", K_INT},      {"seqs", K_INT},
        {"streams", K_INT}, {"swa", K_BOOL},        {"k_type", K_STR},
        {"v_type", K_STR},  {"k_bytes", K_BYTES_F}, {"v_bytes", K_BYTES_F},
    };
    for (size_t j = 0; j < SW_ARRAY_LEN(keys); j++) {
        char name[64];
        snprintf(name, sizeof(name), "kv_caches[%zu].%s", i, keys[j].key);
        int64_t tol = keys[j].k == K_BYTES_F ? prec_at(precision, "kv_caches", i, keys[j].key) : 0;
        add(d, name, a ? json_object_get(a, keys[j].key) : NULL,
            b ? json_object_get(b, keys[j].key) : NULL, keys[j].k, tol);
    }
}

/* Every field of report a (predicted) against b (printed) into d. */
static void diff_report(struct dx *d, const json_t *a, const json_t *b, const json_t *precision)
{
    add(d, "n_ctx", json_object_get(a, "n_ctx"), json_object_get(b, "n_ctx"), K_INT, 0);
    add(d, "n_ctx_seq", json_object_get(a, "n_ctx_seq"), json_object_get(b, "n_ctx_seq"), K_INT, 0);
    add(d, "n_seq_max", json_object_get(a, "n_seq_max"), json_object_get(b, "n_seq_max"), K_INT, 0);
    add(d, "kv_unified", json_object_get(a, "kv_unified"), json_object_get(b, "kv_unified"), K_BOOL,
        0);

    const json_t *ka = json_object_get(a, "kv_caches"), *kb = json_object_get(b, "kv_caches");
    if (json_is_array(ka) || json_is_array(kb)) {
        size_t na = json_array_size(ka), nb = json_array_size(kb);
        json_t *ja = json_is_array(ka) ? json_integer((json_int_t)na) : NULL;
        json_t *jb = json_is_array(kb) ? json_integer((json_int_t)nb) : NULL;
        add(d, "kv_caches.count", ja, jb, K_INT, 0);
        json_decref(ja);
        json_decref(jb);
        for (size_t i = 0; i < SW_MAX(na, nb); i++)
            kv_entry(d, json_array_get(ka, i), json_array_get(kb, i), i, precision);
    }

    const json_t *ra = json_object_get(a, "recurrent"), *rb = json_object_get(b, "recurrent");
    if (json_object_get(a, "recurrent") || json_object_get(b, "recurrent")) {
        json_t *pa = json_boolean(json_is_object(ra)), *pb = json_boolean(json_is_object(rb));
        /* present vs absent is itself a field: a hybrid predicted as dense is a mismatch */
        if (json_object_get(a, "recurrent") && json_object_get(b, "recurrent"))
            add(d, "recurrent.present", pa, pb, K_BOOL, 0);
        json_decref(pa);
        json_decref(pb);
        if (json_is_object(ra) || json_is_object(rb)) {
            add(d, "recurrent.cells", json_object_get(ra, "cells"), json_object_get(rb, "cells"),
                K_INT, 0);
            add(d, "recurrent.layers", json_object_get(ra, "layers"), json_object_get(rb, "layers"),
                K_INT, 0);
            const json_t *rp = precision ? json_object_get(precision, "recurrent") : NULL;
            const json_t *tr = rp ? json_object_get(rp, "r_bytes") : NULL;
            const json_t *ts = rp ? json_object_get(rp, "s_bytes") : NULL;
            add(d, "recurrent.r_bytes", json_object_get(ra, "r_bytes"),
                json_object_get(rb, "r_bytes"), K_BYTES_F,
                json_is_integer(tr) ? json_integer_value(tr) : -1);
            add(d, "recurrent.s_bytes", json_object_get(ra, "s_bytes"),
                json_object_get(rb, "s_bytes"), K_BYTES_F,
                json_is_integer(ts) ? json_integer_value(ts) : -1);
        }
    }

    add(d, "model_bytes", json_object_get(a, "model_bytes"), json_object_get(b, "model_bytes"),
        K_BYTES_D, prec_at(precision, "model_bytes", 0, NULL));
    add(d, "output_bytes", json_object_get(a, "output_bytes"), json_object_get(b, "output_bytes"),
        K_BYTES_D, prec_at(precision, "output_bytes", 0, NULL));
    add(d, "compute_bytes", json_object_get(a, "compute_bytes"),
        json_object_get(b, "compute_bytes"), K_ESTIMATE, 0);
}

int sw__llamacpp_diff(const json_t *predicted, const json_t *printed, const json_t *precision,
                      json_t **out, struct sw_err *e)
{
    struct dx d = {json_array(), 0, 0, ""};
    json_t *o = NULL;
    *out = NULL;
    if (!d.fields)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (!json_is_object(predicted) || !json_is_object(printed)) {
        json_decref(d.fields);
        return sw_err_set(e, SW_EPARSE, "a report must be a JSON object");
    }
    const json_t *a = report_of(predicted), *b = report_of(printed);
    if (!precision)
        precision = json_object_get(printed, "precision");
    diff_report(&d, a, b, precision);
    /* the draft model's own context (-md): the plan's draft report against the one bootlog
     * parse read after "loading draft model", under "draft." */
    const json_t *da = json_object_get(predicted, "draft"), *db = json_object_get(printed, "draft");
    if (json_is_object(da) || json_is_object(db)) {
        d.prefix = "draft.";
        diff_report(&d, json_is_object(da) ? report_of(da) : NULL,
                    json_is_object(db) ? report_of(db) : NULL, json_object_get(db, "precision"));
    }

    if (d.rc)
        goto oom;
    o = json_object();
    if (!o || sw_json_set_bool(o, "match", d.mismatches == 0) ||
        sw_json_set_int(o, "mismatches", d.mismatches))
        goto oom;
    int rc = sw_json_set_new(o, "fields", d.fields); /* steals, even on failure */
    d.fields = NULL;
    if (rc)
        goto oom;
    *out = o;
    return 0;
oom:
    json_decref(d.fields);
    json_decref(o);
    return sw_err_set(e, SW_ENOMEM, "out of memory");
}
