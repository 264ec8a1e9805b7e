/*
 * bench/ledger: bench runs in the ledger. A run is recorded with its parameters (the workload,
 * and the endpoint's canonical shape and its hash so a run is compared with runs of the same
 * shape), its --json document and its chart; two recorded runs are read back by id or by tag
 * (the latest run of the tag's endpoint and shape) and compared (sw_bench_compare).
 *
 * What it does not do: record a run whose figures cannot be (the caller asks
 * sw_bench_report_invalid first: the ledger feeds compare and the sim's fit), or judge a
 * comparison (the document says better, worse or within the noise).
 */
#include <slipway/bench.h>
#include <slipway/fleet.h>
#include <slipway/ledger.h>
#include <slipway/plan.h>

#include <stdlib.h>
#include <string.h>

/* The parameters a run is recorded with. New reference. */
static json_t *params_json(const struct sw_fleet_endpoint *ep, const struct sw_bench_opts *o)
{
    json_t *params = json_object();
    /* the endpoint's shape and its hash (the ledger's canonical form), so a run is compared
     * with runs of the same shape */
    json_t *shape = ep ? sw_plan_shape(ep) : NULL;
    json_t *canon = NULL;
    char hash[SW_LEDGER_HASH_LEN + 1];
    if (shape && !sw_ledger_shape_canon(shape, &canon, NULL, hash, NULL)) {
        sw_json_set_new(params, "shape", canon);
        sw_json_set_str(params, "shape_hash", hash);
    }
    json_decref(shape);
    json_t *d = json_array(), *c = json_array();
    for (size_t i = 0; i < o->ndepths; i++)
        json_array_append_new(d, json_integer(o->depths[i]));
    for (size_t i = 0; i < o->nconc; i++)
        json_array_append_new(c, json_integer(o->conc[i]));
    sw_json_set_new(params, "depths", d);
    sw_json_set_new(params, "concurrency", c);
    sw_json_set_int(params, "tg", o->tg);
    sw_json_set_int(params, "pp", o->pp);
    sw_json_set_int(params, "repeat", o->repeat);
    sw_json_set_bool(params, "cache_prompt", o->cache_prompt);
    sw_json_set_bool(params, "reuse_prompt", o->reuse_prompt);
    sw_json_set_bool(params, "open_loop", o->mode == SW_BENCH_OPEN);
    if (o->mode == SW_BENCH_OPEN) {
        sw_json_set_real(params, "rate", o->rate);
        sw_json_set_real(params, "duration_s", o->duration_s);
        sw_json_set_int(params, "seed", (int64_t)o->seed);
    }
    if (o->prompts_file)
        sw_json_set_str(params, "prompts", o->prompts_file);
    return params;
}

int sw_bench_record(const char *ledger, const char *endpoint, const struct sw_fleet_endpoint *ep,
                    const struct sw_bench_opts *o, const json_t *doc, const char *svg,
                    int64_t started, int64_t *id, struct sw_err *e)
{
    json_t *params = params_json(ep, o);
    struct sw_ledger led;
    memset(&led, 0, sizeof(led));
    int rc = sw_ledger_open(&led, ledger, NULL, e);
    if (!rc)
        rc = sw_ledger_record_bench(&led, endpoint, 0, started, params, doc, svg, NULL, id, e);
    sw_ledger_close(&led);
    json_decref(params);
    return rc;
}

/* A whole positive number: a bench id. */
static bool is_id(const char *s, int64_t *id)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v <= 0)
        return false;
    *id = v;
    return true;
}

/* RUN: a bench id, or a tag: the latest run of the tag's endpoint and shape. */
static int resolve(struct sw_ledger *l, const char *arg, int64_t *id, struct sw_err *e)
{
    if (is_id(arg, id))
        return 0;
    json_t *tag = NULL;
    int rc = sw_ledger_tag_get(l, arg, &tag, e);
    if (rc) {
        if (rc == SW_ENOENT)
            sw_err_set(e, SW_ENOENT, "'%s' is neither a bench run id nor a tag in %s", arg,
                       l->path);
        return rc;
    }
    rc = sw_ledger_bench_of_shape(l, json_string_value(json_object_get(tag, "endpoint")),
                                  json_string_value(json_object_get(tag, "shape_hash")), id, e);
    if (rc)
        sw_err_prefix(e, "tag %s", arg);
    json_decref(tag);
    return rc;
}

/* {id, endpoint, shape, started_at} of a run read back. New reference. */
static json_t *run_json(int64_t id, const json_t *run)
{
    json_t *o = json_object();
    json_t *shape = json_object_get(run, "shape");
    sw_json_set_new(o, "id", json_integer(id));
    sw_json_set_new(o, "endpoint", json_incref(json_object_get(run, "endpoint")));
    sw_json_set_new(o, "shape", shape ? json_incref(shape) : json_null());
    sw_json_set_new(o, "started_at", json_incref(json_object_get(run, "started_at")));
    return o;
}

int sw_bench_compare_runs(const char *ledger, const char *fleet_path, const char *const runs[2],
                          json_t **out, struct sw_err *e)
{
    char path[4096];
    struct sw_ledger_open_opts ro = {.readonly = true};
    struct sw_ledger l;
    json_t *run[2] = {NULL, NULL};
    int64_t ids[2];
    bool opened;
    *out = NULL;
    int rc = sw_ledger_open_for(&l, ledger, fleet_path ? fleet_path : "fleet.yaml", &ro,
                                SW_LEDGER_MUST_EXIST, &opened, path, sizeof(path), e);
    if (rc)
        return rc;
    for (int i = 0; i < 2 && !rc; i++)
        rc = resolve(&l, runs[i], &ids[i], e);
    for (int i = 0; i < 2 && !rc; i++)
        rc = sw_ledger_bench_run(&l, ids[i], &run[i], e);
    sw_ledger_close(&l);
    if (!rc) {
        *out = sw_bench_compare(json_object_get(run[0], "results"),
                                json_object_get(run[1], "results"), e);
        rc = *out ? 0 : SW_EINVAL;
    }
    if (!rc) {
        sw_json_set_new(*out, "a", run_json(ids[0], run[0]));
        sw_json_set_new(*out, "b", run_json(ids[1], run[1]));
    }
    json_decref(run[0]);
    json_decref(run[1]);
    return rc;
}
