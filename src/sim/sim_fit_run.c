/*
 * sim fit run: `slipway sim fit` as one call (sim.h sw_sim_fit_run): the points gathered from
 * what it is given (a fleet endpoint's declared figures, a ledger's closed-loop bench runs, bench
 * --json files), each workload's runs pooled, the timing model fitted (sim_fit.c), and the fit
 * document made and written; and the fit file beside a fleet, read back over a sim's timing.
 *
 * What it does not do: the fit itself (sim_fit.c), or print (the CLI).
 */
#include "sim_internal.h"

#include <slipway/fleet.h>
#include <slipway/ledger.h>

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void sw_sim_fit_path(const char *fleet, const char *endpoint, char *out, size_t n)
{
    const char *slash = strrchr(fleet, '/');
    if (slash)
        snprintf(out, n, "%.*s/%s.sim-fit.json", (int)(slash - fleet), fleet, endpoint);
    else
        snprintf(out, n, "%s.sim-fit.json", endpoint);
}

int sw_sim_timing_beside(const char *fleet, const char *endpoint, unsigned keep,
                         struct sw_sim_timing *t, struct sw_err *e)
{
    char path[4200];
    struct stat st;
    struct sw_sim_timing fit = *t;
    sw_sim_fit_path(fleet, endpoint, path, sizeof(path));
    if (stat(path, &st) != 0)
        return 0;
    int rc = sw_sim_timing_load(path, &fit, e);
    if (rc)
        return rc;
    if (keep & SW_SIM_FIT_DECODE_BASE)
        fit.decode_base_us = t->decode_base_us;
    if (keep & SW_SIM_FIT_DECODE_SEQ)
        fit.decode_per_seq_us = t->decode_per_seq_us;
    if (keep & SW_SIM_FIT_DECODE_KV)
        fit.decode_per_kv_us = t->decode_per_kv_us;
    if (keep & SW_SIM_FIT_PREFILL_TOKEN)
        fit.prefill_per_token_us = t->prefill_per_token_us;
    *t = fit;
    return 0;
}

/* The closed-loop points of the ledger's bench runs (of one endpoint, or all). */
static int points_from_ledger(const char *path, const char *endpoint, struct sw_sim_point **pts,
                              size_t *n, struct sw_err *e)
{
    struct sw_ledger l;
    struct sw_ledger_open_opts lo = {.readonly = true};
    json_t *doc = NULL;
    int rc = sw_ledger_open(&l, path, &lo, e);
    if (!rc)
        rc = sw_ledger_export(&l, endpoint, &doc, e);
    const json_t *runs = json_object_get(doc, "bench_runs");
    for (size_t i = 0; !rc && i < json_array_size(runs); i++) {
        const json_t *r = json_array_get(runs, i);
        char src[96];
        snprintf(src, sizeof(src), "bench run %" PRId64,
                 (int64_t)json_integer_value(json_object_get(r, "id")));
        rc = sw_sim_points_from_bench(json_object_get(r, "results"), src, pts, n, e);
    }
    json_decref(doc);
    sw_ledger_close(&l);
    return rc;
}

static int points_from_file(const char *path, struct sw_sim_point **pts, size_t *n,
                            struct sw_err *e)
{
    json_t *doc = sw_json_load_file(path, 256u << 20, e);
    if (!doc)
        return e && e->code ? e->code : SW_EPARSE;
    int rc = sw_sim_points_from_bench(doc, path, pts, n, e);
    json_decref(doc);
    return rc;
}

static int points_from_fleet(const char *path, const char *endpoint, struct sw_sim_point **pts,
                             size_t *n, struct sw_err *e)
{
    struct sw_fleet *f = NULL;
    int rc = sw_fleet_load(path, NULL, &f, e);
    const struct sw_fleet_endpoint *ep = rc ? NULL : sw_fleet_endpoint(f, endpoint);
    if (!rc && !ep)
        rc = sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", path, endpoint);
    if (!rc)
        rc = sw_sim_points_from_fleet(ep, pts, n, e);
    sw_fleet_free(f);
    return rc;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* A point with the sim's figures beside the measured ones. */
static json_t *point_json(const struct sw_sim_fit *fit, const struct sw_sim_point *p, int slots,
                          int64_t budget)
{
    double d, pf;
    sw_sim_predict(&fit->timing, slots, budget, p, &d, &pf);
    bool hd = isfinite(p->decode_tps) && p->decode_tps > 0;
    bool hp = isfinite(p->prefill_tps) && p->prefill_tps > 0;
    return json_pack("{s:s,s:I,s:i,s:i,s:f,s:I,s:o,s:o,s:o,s:o}", "source", p->source, "depth",
                     (json_int_t)p->depth, "concurrency", p->concurrency, "repeat", p->repeat,
                     "prompt_tokens", p->prompt_tokens, "tg", (json_int_t)p->tg, "decode_tps",
                     num_or_null(hd ? p->decode_tps : NAN), "decode_sim_tps",
                     num_or_null(hd ? d : NAN), "prefill_tps",
                     num_or_null(hp ? p->prefill_tps : NAN), "prefill_sim_tps",
                     num_or_null(hp ? pf : NAN));
}

static json_t *fit_doc(const struct sw_sim_fit *fit, const struct sw_sim_point *pts, size_t n,
                       int slots, int64_t budget)
{
    /* struct sw_sim_timing's fields, in the order of the SW_SIM_FIT_* bits */
    static const char *const names[] = {
        "decode_base_us",  "decode_per_seq_us", "decode_per_kv_us", "prefill_per_token_us",
        "prefill_base_us", "prefill_per_kv_us", "prefill_step_us",  "prefill_batch_share"};
    json_t *doc = json_object();
    json_t *fitted = json_array();
    json_t *a = json_array();
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++)
        if (fit->fitted & (1u << i))
            json_array_append_new(fitted, json_string(names[i]));
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, point_json(fit, &pts[i], slots, budget));
    sw_json_set_new(doc, "timing", sw_sim_timing_json(&fit->timing));
    sw_json_set_new(doc, "fitted", fitted);
    sw_json_set_int(doc, "slots", slots);
    sw_json_set_int(doc, "max_batched_tokens", budget);
    sw_json_set_int(doc, "figures", (int64_t)fit->n_targets);
    sw_json_set_new(doc, "max_err_pct", num_or_null(fit->max_err_pct));
    sw_json_set_new(doc, "rms_err_pct", num_or_null(fit->rms_err_pct));
    sw_json_set_new(doc, "points", a);
    return doc;
}

/* The points of everything the request names, in its order: fleet, ledger, bench files. */
static int gather(const struct sw_sim_fit_req *q, struct sw_sim_point **pts, size_t *n,
                  struct sw_err *e)
{
    int rc = 0;
    if (q->fleet)
        rc = points_from_fleet(q->fleet, q->endpoint, pts, n, e);
    if (!rc && q->ledger)
        rc = points_from_ledger(q->ledger, q->endpoint, pts, n, e);
    for (size_t i = 0; !rc && i < q->n_bench; i++)
        rc = points_from_file(q->bench[i], pts, n, e);
    if (!rc && !*n)
        rc = sw_err_set(e, SW_ENOENT,
                        "no figure to fit: no closed-loop bench point%s%s and no measured "
                        "decode_*ctxN / prefill_*ctxN fact",
                        q->endpoint ? " for " : "", q->endpoint ? q->endpoint : "");
    return rc;
}

int sw_sim_fit_run(const struct sw_sim_fit_req *q, json_t **doc, struct sw_err *e)
{
    struct sw_sim_point *pts = NULL;
    struct sw_sim_fit fit;
    size_t n = 0;
    int64_t slots = q->slots;
    char out[4200] = "";
    *doc = NULL;
    if (q->out)
        snprintf(out, sizeof(out), "%s", q->out);
    else if (q->fleet)
        sw_sim_fit_path(q->fleet, q->endpoint, out, sizeof(out));
    int rc = gather(q, &pts, &n, e);
    if (rc)
        goto out;
    sw_sim_points_pool(pts, &n); /* a workload measured in several runs: its medians */
    if (!slots)                  /* the highest concurrency measured */
        for (size_t i = 0; i < n; i++)
            slots = SW_MAX(slots, (int64_t)pts[i].concurrency);
    rc = sw_sim_fit(pts, n, (int)slots, q->batch_tokens, NULL, &fit, e);
    if (rc)
        goto out;
    *doc = fit_doc(&fit, pts, n, (int)slots, q->batch_tokens);
    if (!*doc) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (out[0]) {
        char *txt = json_dumps(*doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        rc = txt ? sw_write_file_atomic(out, txt, strlen(txt), 0644, e)
                 : sw_err_set(e, SW_ENOMEM, "out of memory");
        free(txt);
        if (!rc)
            sw_json_set_str(*doc, "out", out);
    }
out:
    if (rc) {
        json_decref(*doc);
        *doc = NULL;
    }
    sw_free(pts);
    return rc;
}
