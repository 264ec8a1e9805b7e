/*
 * calibrate's orchestration (sw_calib_run): the fleet, the ledger, the fit, then what was asked
 * of it (predictions, needs, a budget, a note in the ledger), as one document. It prints nothing
 * and writes no file: the caller shows the result, saves it, charts it.
 */
#include <slipway/calib.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>

#include <string.h>

void sw_calib_result_free(struct sw_calib_result *r)
{
    if (!r)
        return;
    sw_calib_fit_free(r->fit);
    json_decref(r->doc);
    r->fit = NULL;
    r->doc = NULL;
}

/* A prediction for a context no fitted boot ran in warns, as one across geometry does. */
static void context_warn(json_t *pj, const struct sw_calib_request *rq,
                         const struct sw_calib_fit *fit)
{
    char w[512], all[1024];
    if (!rq->context || !sw_calib_context_warning(fit, rq->context, w, sizeof(w)))
        return;
    const char *w0 = json_string_value(json_object_get(pj, "warning"));
    snprintf(all, sizeof(all), "%s%s%s", w0 ? w0 : "", w0 ? "; " : "", w);
    sw_json_set_str(pj, "warning", all);
    sw_json_set_bool(pj, "extrapolated", true);
}

/* The contexts of the fitted boots, and the offset of each from the first (free memory at KV
 * allocation), where boots of one shape bound it. */
static json_t *contexts(struct sw_ledger *l, const struct sw_calib_fit *fit)
{
    json_t *a = json_array();
    for (int k = 0; a && k < fit->n_ctx; k++) {
        json_t *c =
            json_pack("{s:s,s:i}", "label", fit->ctx[k].label, "boots", fit->ctx[k].n_boots);
        double lo, hi;
        bool ls, hs;
        char basis[512];
        if (c && k > 0 &&
            !sw_calib_context_offset(l, fit->endpoint, fit->ctx[0].label, fit->ctx[k].label, &lo,
                                     &ls, &hi, &hs, basis, sizeof(basis), NULL)) {
            json_t *o = json_pack("{s:s,s:s}", "from", fit->ctx[0].label, "basis", basis);
            if (o && ls)
                sw_json_set_real(o, "free_at_kv_alloc_lo_bytes", lo);
            if (o && hs)
                sw_json_set_real(o, "free_at_kv_alloc_hi_bytes", hi);
            sw_json_set_new(c, "offset", o);
        }
        json_array_append_new(a, c);
    }
    return a;
}

static json_t *predictions(const struct sw_calib_request *rq, const struct sw_calib_fit *fit)
{
    json_t *preds = json_array();
    for (int i = 0; preds && i < rq->n_predict; i++) {
        for (int k = 0; k < fit->n_kv; k++) {
            struct sw_calib_kv_pred p;
            if (sw_calib_kv_predict(&fit->kv[k], rq->predict_len[i], rq->predict_kv[i], &p, NULL))
                continue;
            json_t *pj = sw_calib_kv_pred_json(&p);
            sw_json_set_str(pj, "class", fit->kv[k].klass);
            sw_json_set_str(pj, "point_from",
                            fit->kv[k].chosen >= 0 ? "the model's structure (config)"
                                                   : "the middle of the interval");
            sw_json_set_int(pj, "max_model_len", rq->predict_len[i]);
            sw_json_set_int(pj, "kv_bytes", (int64_t)rq->predict_kv[i]);
            context_warn(pj, rq, fit);
            json_array_append_new(preds, pj);
        }
        if (fit->arena.consistent) {
            struct sw_calib_range s;
            if (!sw_calib_arena_predict(&fit->arena, rq->predict_len[i], &s, NULL))
                json_array_append_new(preds,
                                      json_pack("{s:s,s:I,s:{s:I,s:I},s:b}", "class", "arena",
                                                "max_model_len", (json_int_t)rq->predict_len[i],
                                                "slots", "lo", (json_int_t)s.lo, "hi",
                                                (json_int_t)s.hi, "extrapolated", s.extrapolated));
        }
    }
    return preds;
}

static json_t *needs(const struct sw_calib_request *rq, const struct sw_calib_fit *fit)
{
    json_t *a = json_array();
    for (int i = 0; a && i < rq->n_need; i++)
        for (int k = 0; k < fit->n_kv; k++) {
            uint64_t nlo, nhi;
            bool ex;
            if (sw_calib_kv_need(&fit->kv[k], rq->need_len[i], rq->need_seqs[i], &nlo, &nhi, &ex,
                                 NULL))
                continue;
            json_array_append_new(
                a, json_pack("{s:s,s:I,s:I,s:I,s:I,s:b}", "class", fit->kv[k].klass, "seqs",
                             (json_int_t)rq->need_seqs[i], "max_model_len",
                             (json_int_t)rq->need_len[i], "kv_bytes_lo", (json_int_t)nlo,
                             "kv_bytes_hi", (json_int_t)nhi, "extrapolated", ex));
        }
    return a;
}

int sw_calib_run(const struct sw_calib_request *rq, struct sw_calib_result *out, struct sw_err *e)
{
    struct sw_fleet *fleet = NULL;
    struct sw_ledger l;
    json_t *shape = NULL;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    memset(&l, 0, sizeof(l));
    if (!rq->endpoint)
        return sw_err_set(e, SW_EINVAL, "which endpoint?");
    struct sw_calib_opts co = {.config_path = rq->config_path,
                               .max_state_blocks = rq->max_state_blocks,
                               .exclude = rq->exclude,
                               .n_exclude = rq->n_exclude};
    if (rq->fleet_path) {
        rc = sw_fleet_load(rq->fleet_path, NULL, &fleet, e);
        if (rc)
            goto out;
        co.ep = sw_fleet_endpoint(fleet, rq->endpoint);
        if (!co.ep) {
            rc = sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s' in the fleet", rq->fleet_path,
                            rq->endpoint);
            goto out;
        }
    }
    struct sw_ledger_open_opts lo = {.create = false, .readonly = !rq->record};
    bool opened;
    rc = sw_ledger_open_for(&l, rq->ledger_path, rq->fleet_path, &lo, SW_LEDGER_MUST_EXIST, &opened,
                            out->ledger_path, sizeof(out->ledger_path), e);
    if (rc) {
        sw_err_prefix(e, "ledger %s", out->ledger_path);
        goto out;
    }
    rc = sw_calib_fit(&l, rq->endpoint, &co, &out->fit, e);
    if (rc) {
        if (rc == SW_ENOENT)
            sw_err_prefix(e, "ledger %s: endpoint '%s' has no record", out->ledger_path,
                          rq->endpoint);
        goto out;
    }
    const struct sw_calib_fit *fit = out->fit;
    out->nothing = !fit->n_kv && !fit->n_nonkv && !(fit->arena.have && fit->arena.consistent);
    for (int i = 0; i < fit->n_kv; i++)
        out->inconsistent |= !fit->kv[i].consistent;
    out->inconsistent |= fit->arena.have && !fit->arena.consistent && !fit->arena.one_geometry &&
                         fit->arena.slot_hi > 0;
    out->doc = sw_calib_fit_json(fit);
    if (!out->doc || sw_json_set_new(out->doc, "predictions", predictions(rq, fit)) ||
        sw_json_set_new(out->doc, "needs", needs(rq, fit)) ||
        sw_json_set_new(out->doc, "contexts", contexts(&l, fit))) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (rq->budget_path) {
        struct sw_calib_budget b;
        shape = sw_json_load_file(rq->budget_path, 1u << 20, e);
        if (!shape) {
            rc = e && e->code ? e->code : SW_EIO;
            goto out;
        }
        rc = sw_calib_budget(fit, shape, &co, &b, e);
        if (rc)
            goto out;
        sw_json_set_new(out->doc, "budget", sw_calib_budget_json(&b));
    }
    if (rq->record && !out->nothing) {
        /* the fit as a note on the endpoint: the ledger keeps what was concluded, and when */
        char text[8192];
        int64_t eid = 0;
        sw_calib_fit_summary(fit, text, sizeof(text));
        rc = sw_ledger_endpoint_id(&l, rq->endpoint, false, &eid, e);
        if (!rc)
            rc = sw_ledger_record_note(&l, "endpoint", eid, text, "slipway calibrate",
                                       &out->note_id, e);
        if (rc)
            goto out;
    }
out:
    json_decref(shape);
    sw_ledger_close(&l);
    sw_fleet_free(fleet);
    return rc;
}
