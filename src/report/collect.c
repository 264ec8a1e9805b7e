/*
 * report/collect: the fleet document every view of the report and the Prometheus export read.
 * For each endpoint it takes the ONE plan as plan/ views it (sw_plan_view: the plan, its pool,
 * price, arena, band and per-device parts), the fleet's measured facts and the ledger's rows
 * (sw_ledger_export of that endpoint, sw_ledger_known_bad) and keeps, beside each figure, where it
 * came from.
 *
 * The budget per device (the view's parts; the readings are the report's):
 *   llama.cpp  KV, recurrent state and compute from the law; the rest of what a usage reading of
 *              THIS shape measured is "weights + other" (weights, projector, runtime), and the
 *              reading's free figure is the free; without a reading the fleet's non_kv_cost fact
 *              stands in, and without that the law's weights when the GGUF is here;
 *   vLLM fork  (a profile with an arena) weights, non-torch and graphs as the profile declares
 *              them, the pool (kv_cache_bytes) and the arena the fork sizes at this max_model_len;
 *              free = usable - those, the operator's own arithmetic;
 *   otherwise  what the law knows (the pool) and why the rest is unknown.
 *
 * What it deliberately does not do: judge (the gates do; `slipway check`), render text.
 */
#include "report_internal.h"

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/ledger.h>
#include <slipway/memory.h>
#include <slipway/plan.h>
#include <slipway/profile.h>
#include <slipway/vllm.h>

#include <math.h>
#include <string.h>

void sw__rep_put(json_t *o, const char *k, json_t *v, int *rc)
{
    if (*rc) {
        json_decref(v);
        return;
    }
    if (!v || json_object_set_new(o, k, v))
        *rc = SW_ENOMEM;
}

static json_t *jstr(const char *s)
{
    return s ? sw_json_text(s, strlen(s), NULL) : json_null();
}

static json_t *jint(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* ---------------------------------------------------------------------------------------------
 * The window: slots, tokens per conversation, the pool.
 */
int sw__rep_window(const struct sw_fleet_endpoint *ep, const struct sw_plan *p, bool planned,
                   struct sw__rep_window *w)
{
    memset(w, 0, sizeof(*w));
    if (planned && p->llamacpp) {
        w->slots = p->llamacpp->n_slots;
        w->window = p->llamacpp->n_ctx_slot;
        w->pool = p->llamacpp->report.n_ctx;
        w->shared = p->llamacpp->report.kv_unified;
        w->source = w->shared ? "the plan: one pool shared by the slots (llama.cpp n_ctx_seq)"
                              : "the plan: pool / slots, these slots cannot share a cache "
                                "(llama.cpp n_ctx_seq)";
        return 0;
    }
    if (planned && p->vllm) {
        w->slots = p->vllm_opts && p->vllm_opts->max_num_seqs > 0
                       ? (uint64_t)p->vllm_opts->max_num_seqs
                       : 0;
        w->window = p->vllm->max_model_len > 0 ? (uint64_t)p->vllm->max_model_len : 0;
        w->pool =
            p->pool_sized && p->vllm->kv_cache_tokens > 0 ? (uint64_t)p->vllm->kv_cache_tokens : 0;
        w->shared = true;
        w->source = "the plan: max_model_len (one request window; the pool is shared)";
        return 0;
    }
    if (ep->shape.max_model_len.set) {
        w->window = ep->shape.max_model_len.v;
        w->slots = ep->shape.seqs.set ? ep->shape.seqs.v : 0;
        w->pool = ep->shape.max_total_tokens.set ? ep->shape.max_total_tokens.v : 0;
        w->shared = true;
        w->source = "the fleet's shape.max_model_len (no law planned this endpoint)";
        return 0;
    }
    return SW_ENOENT;
}

/* ---------------------------------------------------------------------------------------------
 * The budget.
 */
static int add_part(json_t *parts, const char *part, uint64_t bytes, const char *how)
{
    json_t *x = json_pack("{s:s,s:I,s:s}", "part", part, "bytes", (json_int_t)bytes, "how", how);
    if (!x || json_array_append_new(parts, x))
        return SW_ENOMEM;
    return 0;
}

static uint64_t parts_sum(const json_t *parts)
{
    uint64_t s = 0;
    size_t i;
    json_t *x;
    json_array_foreach(parts, i, x) s += (uint64_t)json_integer_value(json_object_get(x, "bytes"));
    return s;
}

/* The newest usage reading of this shape (canonical) on the device (one-device endpoints take
 * any device name: the tools name cards their own way). Borrowed from rows, or NULL. */
static const json_t *reading_for(const json_t *usage, const json_t *canon,
                                 const struct sw_fleet_endpoint *ep, const char *dev)
{
    const json_t *best = NULL;
    size_t i;
    json_t *u;
    json_array_foreach(usage, i, u)
    {
        const json_t *s = json_object_get(u, "shape");
        if (!s || !canon || !sw_gate_same_shape(s, canon))
            continue;
        const char *d = json_string_value(json_object_get(u, "device"));
        if (ep->n_devices > 1 && (!d || strcmp(d, dev)))
            continue;
        best = u;
    }
    return best;
}

/* A device of the budget: its name and kind, and its (empty) parts. NULL *d: out of memory;
 * else the puts' rc, which the caller carries on (every later step checks it). */
static int device_open(const struct sw_fleet_device *fd, json_t **d, json_t **parts)
{
    int rc = 0;
    *d = json_object();
    *parts = json_array();
    if (!*d || !*parts) {
        json_decref(*d);
        json_decref(*parts);
        *d = *parts = NULL;
        return SW_ENOMEM;
    }
    sw__rep_put(*d, "name", jstr(fd->name), &rc);
    sw__rep_put(*d, "kind", jstr(fd->kind.v), &rc);
    return rc;
}

/* The device's parts, capacity, usable, band (the plan view's) and free, appended to devs; d is
 * released when rc (the caller's so far) or this fails. */
static int device_close(json_t *devs, json_t *d, json_t *parts, const struct sw_plan_view *v,
                        uint64_t capacity, uint64_t usable, bool has_free, uint64_t free_b,
                        const char *free_how, int rc)
{
    uint64_t bmin = v->band_min, bmax = v->band_max;
    sw__rep_put(d, "parts", parts, &rc);
    sw__rep_put(d, "capacity", jint(capacity), &rc);
    sw__rep_put(d, "usable", jint(usable), &rc);
    sw__rep_put(d, "band", json_pack("{s:I,s:I}", "min", (json_int_t)bmin, "max", (json_int_t)bmax),
                &rc);
    sw__rep_put(d, "free", has_free ? jint(free_b) : json_null(), &rc);
    sw__rep_put(d, "free_how", jstr(free_how), &rc);
    sw__rep_put(d, "in_band",
                has_free ? json_boolean(free_b >= bmin && free_b <= bmax) : json_null(), &rc);
    if (!rc && json_array_append_new(devs, d))
        rc = SW_ENOMEM;
    else if (rc)
        json_decref(d);
    return rc;
}

static int budget_llamacpp(const struct sw_fleet_endpoint *ep, const struct sw_plan_view *v,
                           const json_t *usage, const json_t *canon, json_t *devs)
{
    const struct sw_llamacpp_plan *lp = v->lp;
    int rc = 0;
    for (int i = 0; i < v->n_dev && !rc; i++) {
        const struct sw_plan_view_dev *x = &v->dev[i];
        const struct sw_fleet_device *fd = x->dev;
        if (strcmp(x->law_name, fd->name))
            continue; /* llama.cpp's "CPU" is shown under the fleet's name only */
        json_t *d, *parts;
        rc = device_open(fd, &d, &parts);
        if (!d)
            return rc;
        uint64_t cap = x->capacity;
        uint64_t compute = x->compute;
        const json_t *r = reading_for(usage, canon, ep, fd->name);
        const struct sw_fleet_fact *nk = v->non_kv;
        bool has_free = false;
        uint64_t free_b = 0;
        const char *free_how = NULL;
        if (!rc)
            rc = add_part(parts, "kv", x->kv, "the law (llama.cpp's KV cache lines)");
        if (!rc && x->rec)
            rc = add_part(parts, "state", x->rec, "the law (recurrent state)");
        if (!rc && compute)
            rc = add_part(parts, "compute", compute, "the law's compute-buffer estimate");
        if (!rc && r) {
            uint64_t used = (uint64_t)json_integer_value(json_object_get(r, "used_mib")) * SW_MIB;
            uint64_t total = (uint64_t)json_integer_value(json_object_get(r, "total_mib")) * SW_MIB;
            const json_t *fr = json_object_get(r, "free_mib");
            uint64_t law = x->kv + x->rec + compute;
            rc = add_part(parts, "weights", used > law ? used - law : 0,
                          "measured used minus the law's KV, state and compute (weights, "
                          "projector, runtime)");
            free_b = json_is_integer(fr) ? (uint64_t)json_integer_value(fr) * SW_MIB
                                         : (total > used ? total - used : 0);
            has_free = true;
            free_how = json_is_integer(fr) ? "the reading's free figure"
                                           : "the reading's total minus used";
            if (total)
                cap = total;
            sw__rep_put(d, "measured",
                        json_pack("{s:I,s:I,s:o,s:O,s:O}", "used", (json_int_t)used, "total",
                                  (json_int_t)total, "free",
                                  json_is_integer(fr)
                                      ? json_integer(json_integer_value(fr) * (json_int_t)SW_MIB)
                                      : json_null(),
                                  "source", json_object_get(r, "source"), "usage_id",
                                  json_object_get(r, "id")),
                        &rc);
        } else if (!rc && nk) {
            uint64_t nkv = (uint64_t)llround(nk->q.value);
            rc = add_part(parts, "weights", nkv > compute ? nkv - compute : nkv,
                          "the fleet's measured non-KV cost minus the law's compute");
            uint64_t sum = parts_sum(parts);
            has_free = cap > 0;
            free_b = cap > sum ? cap - sum : 0;
            free_how = "capacity minus the parts (no usage reading of this shape)";
            sw__rep_put(d, "measured", json_null(), &rc);
        } else if (!rc) {
            if (lp->report.model_known)
                rc = add_part(parts, "weights", x->weights, "the law (the GGUF's tensors)");
            has_free = cap > 0 && lp->report.model_known;
            uint64_t sum = parts_sum(parts);
            free_b = cap > sum ? cap - sum : 0;
            free_how = has_free ? "capacity minus the law's parts"
                                : "unknown: no usage reading of this shape, no non_kv_cost fact "
                                  "and the GGUF is not on this machine";
            sw__rep_put(d, "measured", json_null(), &rc);
        }
        uint64_t sum = parts_sum(parts);
        sw__rep_put(d, "reserved",
                    has_free && cap > sum + free_b ? jint(cap - sum - free_b) : jint(0), &rc);
        rc = device_close(devs, d, parts, v, cap, cap, has_free, free_b, free_how, rc);
    }
    return rc;
}

/* The fork's arena at this max_model_len and MNBT, as the view holds it (sw_plan_view). */
static int budget_vllm(const struct sw_fleet_endpoint *ep, const struct sw_plan_view *v,
                       json_t *devs, const char **why)
{
    const struct sw_plan *p = &v->plan;
    const struct sw_fork_profile prof = v->prof;
    const struct sw_arena ar = v->arena;
    bool fork = v->has_arena;
    int rc = 0;
    if (!fork)
        *why = "vLLM sizes weights, activations and graphs at boot: only the pool is planned "
               "(record a usage reading, or declare a fork profile)";
    for (size_t k = 0; k < ep->n_devices && !rc; k++) {
        const struct sw_fleet_device *fd = ep->devices[k];
        json_t *d, *parts;
        rc = device_open(fd, &d, &parts);
        if (!d)
            return rc;
        uint64_t cap = sw_fleet_device_capacity(fd);
        uint64_t usable = fork && prof.usable     ? prof.usable
                          : fd->memory_usable.set ? fd->memory_usable.v
                                                  : cap;
        if (!rc && fork)
            rc = add_part(parts, "weights", prof.weights, "the profile (read at boot)");
        if (!rc && p->pool_sized)
            rc = add_part(parts, "kv", p->vllm->available_kv_bytes,
                          p->pool_pinned ? "the pinned pool (kv_cache_bytes, per rank)"
                                         : "the law's pool");
        if (!rc && fork && prof.graphs)
            rc = add_part(parts, "compute", prof.graphs, "the profile's CUDA graphs");
        if (!rc && fork && ar.arena_bytes > 0) {
            rc = add_part(parts, "arena", (uint64_t)ar.arena_bytes,
                          "the fork's expert arena at this max_model_len and MNBT");
            sw__rep_put(d, "arena_slots", json_integer((json_int_t)ar.slots), &rc);
            sw__rep_put(d, "arena_slot_bytes", json_integer((json_int_t)prof.slot), &rc);
        }
        if (!rc && fork && prof.non_torch)
            rc = add_part(parts, "other", prof.non_torch, "the profile's non-torch memory");
        uint64_t sum = parts_sum(parts);
        bool has_free = fork && p->pool_sized;
        sw__rep_put(d, "measured", json_null(), &rc);
        sw__rep_put(d, "reserved", jint(cap > usable ? cap - usable : 0), &rc);
        rc = device_close(devs, d, parts, v, cap, usable, has_free, usable > sum ? usable - sum : 0,
                          has_free ? "usable minus the parts (activations come out of it)" : *why,
                          rc);
    }
    return rc;
}

static int budget(const struct sw_fleet_endpoint *ep, const struct sw_plan_view *v,
                  const char *plan_why, const json_t *usage, const json_t *canon, json_t **out)
{
    const struct sw_plan *p = &v->plan;
    bool planned = v->ok;
    int rc = 0;
    const char *why = NULL;
    json_t *b = json_object(), *devs = json_array();
    if (!b || !devs) {
        json_decref(b);
        json_decref(devs);
        return SW_ENOMEM;
    }
    if (!planned)
        why = plan_why;
    else if (p->llamacpp)
        rc = budget_llamacpp(ep, v, usage, canon, devs);
    else if (p->vllm)
        rc = budget_vllm(ep, v, devs, &why);
    else
        why = "no memory law for this engine in the plan";
    sw__rep_put(b, "devices", devs, &rc);
    sw__rep_put(b, "why", jstr(why), &rc);
    if (rc) {
        json_decref(b);
        return rc;
    }
    *out = b;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Measured speed, the battery, known-bad shapes, what changed.
 */
static const json_t *boot_row(const json_t *boots, json_int_t id)
{
    size_t i;
    json_t *b;
    json_array_foreach(boots, i,
                       b) if (json_integer_value(json_object_get(b, "id")) == id) return b;
    return NULL;
}

/* A number of a bench result: a plain number, or a spread's median ({n, median, ...}). */
static json_t *median_of(const json_t *v)
{
    if (json_is_number(v))
        return json_deep_copy(v);
    const json_t *m = json_object_get(v, "median");
    return json_is_number(m) ? json_deep_copy(m) : json_null();
}

static int grid_row(json_t *grid, const json_t *run, bool dep, json_t *depth, json_t *conc,
                    json_t *decode, json_t *summed, json_t *prefill)
{
    json_t *x = json_pack("{s:O,s:o,s:o,s:o,s:o,s:o,s:b}", "run", json_object_get(run, "id"),
                          "depth", depth ? depth : json_null(), "concurrency",
                          conc ? conc : json_null(), "decode_tok_s", decode ? decode : json_null(),
                          "summed_decode_tok_s", summed ? summed : json_null(), "prefill_tok_s",
                          prefill ? prefill : json_null(), "deployed_shape", dep);
    if (!x || json_array_append_new(grid, x))
        return SW_ENOMEM;
    return 0;
}

/* The run's points as rows of depth x concurrency: `slipway bench --record` writes results
 * {points: [{depth, concurrency, decode_tps: {median}, summed_decode_tps, prefill_tps}]}; a
 * run transcribed from the operator's notes has params {context_tokens: [...], streams} and
 * results {decode_tok_s: [...] | N, prefill_tok_s: ...}. */
static int grid_rows(json_t *grid, const json_t *run, bool dep)
{
    const json_t *params = json_object_get(run, "params");
    const json_t *res = json_object_get(run, "results");
    const json_t *points = json_object_get(res, "points");
    int rc = 0;
    size_t i;
    json_t *pt;
    if (json_is_array(points)) {
        json_array_foreach(points, i, pt)
        {
            const json_t *d = json_object_get(pt, "depth"), *c = json_object_get(pt, "concurrency");
            rc = grid_row(grid, run, dep, json_is_integer(d) ? json_deep_copy(d) : NULL,
                          json_is_integer(c) ? json_deep_copy(c) : NULL,
                          median_of(json_object_get(pt, "decode_tps")),
                          median_of(json_object_get(pt, "summed_decode_tps")),
                          median_of(json_object_get(pt, "prefill_tps")));
            if (rc)
                return rc;
        }
        return 0;
    }
    const json_t *ctx = json_object_get(params, "context_tokens");
    const json_t *streams = json_object_get(params, "streams");
    const json_t *dec = json_object_get(res, "decode_tok_s");
    const json_t *pre = json_object_get(res, "prefill_tok_s");
    size_t n = json_is_array(ctx) ? json_array_size(ctx) : 1;
    for (i = 0; i < n && !rc; i++) {
        const json_t *d = json_is_array(ctx) ? json_array_get(ctx, i) : ctx;
        const json_t *dv = json_is_array(dec) ? json_array_get(dec, i) : dec;
        const json_t *pv = json_is_array(pre) ? json_array_get(pre, i) : pre;
        if (!json_is_number(dv) && !json_is_number(pv))
            continue;
        rc = grid_row(grid, run, dep, json_is_integer(d) ? json_deep_copy(d) : NULL,
                      json_is_integer(streams) ? json_deep_copy(streams) : NULL,
                      json_is_number(dv) ? json_deep_copy(dv) : NULL, NULL,
                      json_is_number(pv) ? json_deep_copy(pv) : NULL);
    }
    return rc;
}

/* The head figures of a run with points: decode and prefill at its lowest concurrency, by depth
 * (one number when one depth), and those depths. */
static int head_points(const json_t *grid, const json_t *run, json_t **dec, json_t **pre,
                       json_t **ctx)
{
    json_int_t run_id = json_integer_value(json_object_get(run, "id")), cmin = -1;
    size_t i;
    json_t *r;
    json_array_foreach(grid, i, r)
    {
        json_int_t c = json_integer_value(json_object_get(r, "concurrency"));
        if (json_integer_value(json_object_get(r, "run")) == run_id && (cmin < 0 || c < cmin))
            cmin = c;
    }
    *dec = json_array();
    *pre = json_array();
    *ctx = json_array();
    if (!*dec || !*pre || !*ctx)
        return SW_ENOMEM;
    json_array_foreach(grid, i, r)
    {
        if (json_integer_value(json_object_get(r, "run")) != run_id ||
            json_integer_value(json_object_get(r, "concurrency")) != cmin)
            continue;
        if (json_array_append(*dec, json_object_get(r, "decode_tok_s")) ||
            json_array_append(*pre, json_object_get(r, "prefill_tok_s")) ||
            json_array_append(*ctx, json_object_get(r, "depth")))
            return SW_ENOMEM;
    }
    if (json_array_size(*dec) == 1) {
        json_t *d1 = json_incref(json_array_get(*dec, 0)),
               *p1 = json_incref(json_array_get(*pre, 0));
        json_decref(*dec);
        json_decref(*pre);
        *dec = d1;
        *pre = p1;
    }
    return 0;
}

static int measured(const struct sw_fleet_endpoint *ep, const json_t *led, const json_t *canon,
                    json_t **out)
{
    int rc = 0;
    json_t *m = json_object(), *runs = json_array(), *grid = json_array();
    json_t *hdec = NULL, *hpre = NULL, *hctx = NULL;
    const json_t *head = NULL;
    bool head_deployed = false;
    if (!m || !runs || !grid) {
        json_decref(m);
        json_decref(runs);
        json_decref(grid);
        return SW_ENOMEM;
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(led, "bench_runs"), i, r)
    {
        const json_t *b =
            boot_row(json_object_get(led, "boots"), json_integer_value(json_object_get(r, "boot")));
        /* the boot's shape, else the shape `slipway bench --record` put in the params */
        const json_t *bs = b ? json_object_get(b, "shape")
                             : json_object_get(json_object_get(r, "params"), "shape");
        bool dep = json_is_object(bs) && canon && sw_gate_same_shape(bs, canon);
        json_t *x =
            json_pack("{s:O,s:O,s:O,s:O,s:b}", "id", json_object_get(r, "id"), "params",
                      json_object_get(r, "params"), "results", json_object_get(r, "results"),
                      "boot", json_object_get(r, "boot"), "deployed_shape", dep);
        if (!x || json_array_append_new(runs, x)) {
            rc = SW_ENOMEM;
            break;
        }
        rc = grid_rows(grid, r, dep);
        if (rc)
            break;
        if (dep || !head_deployed) {
            head = r;
            head_deployed = dep;
        }
    }
    const json_t *res = head ? json_object_get(head, "results") : NULL;
    const json_t *dec = json_object_get(res, "decode_tok_s");
    const json_t *pre = json_object_get(res, "prefill_tok_s");
    const json_t *ctx =
        head ? json_object_get(json_object_get(head, "params"), "context_tokens") : NULL;
    if (!rc && json_is_array(json_object_get(res, "points"))) {
        rc = head_points(grid, head, &hdec, &hpre, &hctx);
        dec = hdec;
        pre = hpre;
        ctx = hctx;
    }
    const struct sw_fleet_fact *fd = sw_fleet_endpoint_fact(ep, "decode");
    const struct sw_fleet_fact *fp = sw_fleet_endpoint_fact(ep, "prefill");
    char src[160];
    if (head)
        snprintf(src, sizeof(src), "ledger bench run #%lld%s",
                 (long long)json_integer_value(json_object_get(head, "id")),
                 head_deployed ? " (the deployed shape)" : " (another shape)");
    else
        snprintf(src, sizeof(src), "%s", fd || fp ? "the fleet's measured facts" : "none");
    sw__rep_put(m, "decode_tok_s",
                dec  ? json_deep_copy(dec)
                : fd ? json_real(fd->q.value)
                     : json_null(),
                &rc);
    sw__rep_put(m, "prefill_tok_s",
                pre  ? json_deep_copy(pre)
                : fp ? json_real(fp->q.value)
                     : json_null(),
                &rc);
    sw__rep_put(m, "context_tokens", ctx ? json_deep_copy(ctx) : json_null(), &rc);
    sw__rep_put(m, "source", jstr(src), &rc);
    sw__rep_put(m, "run", head ? json_deep_copy(json_object_get(head, "id")) : json_null(), &rc);
    sw__rep_put(m, "runs", runs, &rc);
    sw__rep_put(m, "grid", grid, &rc);
    json_decref(hdec);
    json_decref(hpre);
    json_decref(hctx);
    if (rc) {
        json_decref(m);
        return rc;
    }
    *out = m;
    return 0;
}

static json_t *battery(const json_t *led)
{
    const json_t *runs = json_object_get(led, "battery_runs");
    size_t n = json_array_size(runs);
    if (!n)
        return json_null();
    const json_t *r = json_array_get(runs, n - 1);
    json_int_t failed = json_integer_value(json_object_get(r, "failed"));
    json_t *failing = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(r, "checks"), i, c)
    {
        const char *st = json_string_value(json_object_get(c, "status"));
        if (failing && st && !strcmp(st, "fail"))
            json_array_append(failing, json_object_get(c, "name"));
    }
    if (!failing)
        return NULL;
    return json_pack("{s:O,s:O,s:s,s:O,s:O,s:O,s:O,s:o}", "id", json_object_get(r, "id"),
                     "started_at", json_object_get(r, "started_at"), "verdict",
                     failed > 0 ? "fail" : "pass", "passed", json_object_get(r, "passed"), "failed",
                     json_object_get(r, "failed"), "skipped", json_object_get(r, "skipped"), "url",
                     json_object_get(r, "url"), "failing", failing);
}

static int add_bad(json_t *arr, const char *what, const char *why, const char *source)
{
    json_t *x = json_pack("{s:o,s:o,s:s}", "what", jstr(what), "why", jstr(why), "source", source);
    if (!x || json_array_append_new(arr, x))
        return SW_ENOMEM;
    return 0;
}

static int known_bad(struct sw_ledger *l, const struct sw_fleet_endpoint *ep, json_t **out,
                     struct sw_err *e)
{
    int rc = 0;
    json_t *arr = json_array(), *kb = NULL;
    char what[512], why[768];
    if (!arr)
        return SW_ENOMEM;
    for (size_t i = 0; i < ep->n_known_bad && !rc; i++) {
        const struct sw_fleet_rule *r = &ep->known_bad[i];
        snprintf(why, sizeof(why), "%s%s%s", r->failure ? r->failure : "", r->text ? ": " : "",
                 r->text ? r->text : "");
        rc = add_bad(arr, r->expr_text, why, "fleet known_bad");
    }
    for (size_t i = 0; i < ep->n_boots && !rc; i++) {
        const struct sw_fleet_boot *b = &ep->boots[i];
        if (!b->outcome || (strcmp(b->outcome, "failed") && strcmp(b->outcome, "rejected")))
            continue;
        /* the fields this boot set (the rest is the endpoint's shape) */
        json_t *js = sw_fleet_shape_to_json(&b->shape);
        char *t =
            js ? sw_json_dumps(js, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6)) : NULL;
        json_decref(js);
        if (!t) {
            rc = SW_ENOMEM;
            break;
        }
        snprintf(what, sizeof(what), "%s", t);
        sw_free(t);
        snprintf(why, sizeof(why), "%s%s%s%s", b->outcome, b->failure ? " (" : "",
                 b->failure ? b->failure : "", b->failure ? ")" : "");
        if (b->text || b->note)
            snprintf(why + strlen(why), sizeof(why) - strlen(why), ": %s",
                     b->text ? b->text : b->note);
        rc = add_bad(arr, what, why, "fleet boots");
    }
    if (!rc && l) {
        rc = sw_ledger_known_bad(l, ep->name, &kb, e);
        if (rc == SW_ENOENT) {
            rc = 0;
            kb = NULL;
        }
    }
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(kb, "shapes"), i, x)
    {
        if (rc)
            break;
        if (json_integer_value(json_object_get(x, "failed")) <= 0)
            continue;
        sw_ledger_shape_summary(json_object_get(x, "canonical"), what, sizeof(what));
        const json_t *f0 =
            json_object_get(json_array_get(json_object_get(x, "failures"), 0), "failure");
        const char *cls = json_string_value(json_object_get(f0, "class"));
        const char *ph = json_string_value(json_object_get(f0, "phase"));
        const char *msg = json_string_value(json_object_get(f0, "message"));
        snprintf(why, sizeof(why), "%s%s%s%s%s (%lld failed, %lld ok)", cls ? cls : "failed",
                 ph ? " at " : "", ph ? ph : "", msg ? ": " : "", msg ? msg : "",
                 (long long)json_integer_value(json_object_get(x, "failed")),
                 (long long)json_integer_value(json_object_get(x, "ok")));
        rc = add_bad(arr, what, why, "ledger boots");
    }
    json_array_foreach(json_object_get(kb, "rules"), i, x)
    {
        if (rc)
            break;
        rc = add_bad(arr, json_string_value(json_object_get(x, "expr")),
                     json_string_value(json_object_get(x, "reason")), "ledger rule");
    }
    json_decref(kb);
    if (rc) {
        json_decref(arr);
        return rc == SW_ENOMEM && e && !e->code ? sw_err_set(e, rc, "out of memory") : rc;
    }
    *out = arr;
    return 0;
}

/* Rows of the endpoint's ledger recorded at or after since. */
static int changes(const json_t *led, int64_t since, json_t **out)
{
    static const char *const kinds[] = {"boots",        "usage", "battery_runs", "bench_runs",
                                        "ladder_rungs", "rules", "notes"};
    static const char *const when[] = {"recorded_at", "created_at", "started_at", "taken_at"};
    json_t *arr = json_array();
    if (!arr)
        return SW_ENOMEM;
    for (size_t k = 0; k < SW_ARRAY_LEN(kinds); k++) {
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(led, kinds[k]), i, r)
        {
            const char *t = NULL;
            for (size_t w = 0; w < SW_ARRAY_LEN(when) && !t; w++)
                t = json_string_value(json_object_get(r, when[w]));
            int64_t at = 0;
            if (!t || sw_ledger_parse_time(t, &at, NULL) || at < since)
                continue;
            json_t *x = json_pack("{s:s,s:O,s:s}", "kind", kinds[k], "id", json_object_get(r, "id"),
                                  "at", t);
            if (!x || json_array_append_new(arr, x)) {
                json_decref(arr);
                return SW_ENOMEM;
            }
        }
    }
    *out = arr;
    return 0;
}

/* The endpoint's ledger rows (an empty document when the ledger has never heard of it). */
int sw__rep_ledger_rows(struct sw_ledger *l, const char *name, json_t **out, struct sw_err *e)
{
    *out = NULL;
    if (l) {
        struct sw_err le;
        sw_err_clear(&le);
        int rc = sw_ledger_export(l, name, out, &le);
        if (rc && rc != SW_ENOENT) {
            if (e)
                *e = le;
            return rc;
        }
    }
    if (!*out)
        *out = json_object();
    return *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
}

/* ---------------------------------------------------------------------------------------------
 * One endpoint.
 */
static int endpoint_doc(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                        const struct sw_report_opts *o, json_t **out, struct sw_err *e)
{
    struct sw_plan_view v;
    struct sw__rep_window w;
    json_t *d = json_object(), *led = NULL, *canon = NULL, *x = NULL;
    char hash[SW_LEDGER_HASH_LEN + 1] = "", sum[256] = "", why[640] = "";
    int rc = 0;
    memset(&v, 0, sizeof(v));
    if (!d)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (sw_plan_view(ep, &v, NULL)) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    const struct sw_plan *pl = &v.plan;
    bool planned = v.ok;
    if (!planned)
        sw_err_format(&v.err, why, sizeof(why));
    if (pl->shape) {
        struct sw_err ce;
        sw_err_clear(&ce);
        if (!sw_ledger_shape_canon(pl->shape, &canon, NULL, hash, &ce))
            sw_ledger_shape_summary(canon, sum, sizeof(sum));
        else if (ce.code == SW_ENOMEM) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
    } else if (planned) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory"); /* a plan always has its shape */
        goto out;
    }
    rc = sw__rep_ledger_rows(o ? o->ledger : NULL, ep->name, &led, e);
    if (rc)
        goto out;

    sw__rep_put(d, "name", jstr(ep->name), &rc);
    sw__rep_put(d, "host", jstr(ep->host ? ep->host->name : NULL), &rc);
    sw__rep_put(d, "engine", jstr(sw_fleet_engine_name(ep->engine)), &rc);
    sw__rep_put(d, "engine_version", jstr(ep->engine_version.v), &rc);
    sw__rep_put(d, "enabled", json_boolean(ep->enabled), &rc);
    sw__rep_put(d, "image", jstr(ep->image.v), &rc);
    sw__rep_put(d, "payload",
                json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "path", jstr(ep->payload.path.v), "repo",
                          jstr(ep->payload.repo.v), "revision", jstr(ep->payload.revision.v),
                          "quant", jstr(ep->payload.quantization.v), "gguf",
                          jstr(ep->payload.gguf.v), "mmproj", jstr(ep->payload.mmproj.v)),
                &rc);
    sw__rep_put(d, "shape", canon ? json_incref(canon) : json_null(), &rc);
    sw__rep_put(d, "shape_summary", jstr(sum[0] ? sum : NULL), &rc);
    sw__rep_put(d, "shape_hash", jstr(hash[0] ? hash : NULL), &rc);
    sw__rep_put(d, "plan_error", jstr(planned ? NULL : why), &rc);
    if (!sw__rep_window(ep, pl, planned, &w))
        sw__rep_put(d, "window",
                    json_pack("{s:I,s:I,s:o,s:b,s:s,s:o}", "slots", (json_int_t)w.slots,
                              "per_conversation", (json_int_t)w.window, "pool_tokens",
                              w.pool ? jint(w.pool) : json_null(), "shared", w.shared, "source",
                              w.source, "concurrency",
                              planned && pl->vllm && w.pool && pl->vllm->max_concurrency > 0
                                  ? json_real(pl->vllm->max_concurrency)
                                  : json_null()),
                    &rc);
    else
        sw__rep_put(d, "window", json_null(), &rc);
    if (!rc)
        rc = budget(ep, &v, why, json_object_get(led, "usage"), canon, &x);
    sw__rep_put(d, "budget", x, &rc);
    x = NULL;
    if (!rc)
        rc = measured(ep, led, canon, &x);
    sw__rep_put(d, "measured", x, &rc);
    x = NULL;
    sw__rep_put(d, "battery", battery(led), &rc);
    if (!rc)
        rc = known_bad(o ? o->ledger : NULL, ep, &x, e);
    sw__rep_put(d, "known_bad", x, &rc);
    x = NULL;
    if (!rc)
        rc = sw__rep_harness_endpoint(f, ep, pl, planned, &x);
    sw__rep_put(d, "harness", x, &rc);
    x = NULL;
    if (!rc)
        rc = sw__rep_tags(o ? o->ledger : NULL, ep, &x, e);
    sw__rep_put(d, "tags", x, &rc);
    x = NULL;
    if (!rc)
        rc = sw__rep_restarts(o ? o->ledger : NULL, ep->name, &x, e);
    sw__rep_put(d, "restarts", x, &rc);
    x = NULL;
    if (!rc)
        rc = sw__rep_watch(o ? o->ledger : NULL, ep->name, &x, e);
    sw__rep_put(d, "watch", x, &rc);
    x = NULL;
    sw__rep_put(d, "boots_recorded", jint(json_array_size(json_object_get(led, "boots"))), &rc);
    if (!rc && o && o->since > 0) {
        rc = changes(led, o->since, &x);
        sw__rep_put(d, "changes", x, &rc);
        x = NULL;
    }
out:
    if (rc && e && !e->code)
        sw_err_set(e, rc, "%s: %s", ep->name, rc == SW_ENOMEM ? "out of memory" : "report failed");
    json_decref(canon);
    json_decref(led);
    sw_plan_view_free(&v);
    if (rc) {
        json_decref(d);
        return rc;
    }
    *out = d;
    return 0;
}

int sw_report_collect(const struct sw_fleet *f, const struct sw_report_opts *o, json_t **out,
                      struct sw_err *e)
{
    int rc = 0;
    char t[32];
    json_t *doc = json_object(), *eps = json_array();
    *out = NULL;
    if (!doc || !eps) {
        json_decref(doc);
        json_decref(eps);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    sw__rep_put(doc, "fleet", jstr(f->path), &rc);
    sw__rep_put(doc, "ledger", jstr(o && o->ledger ? o->ledger->path : NULL), &rc);
    sw__rep_put(doc, "since",
                o && o->since > 0 ? jstr(sw_fmt_time(o->since, t, sizeof(t))) : json_null(), &rc);
    for (size_t i = 0; i < f->n_endpoints && !rc; i++) {
        json_t *d = NULL;
        rc = endpoint_doc(f, &f->endpoints[i], o, &d, e);
        if (!rc && json_array_append_new(eps, d))
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    sw__rep_put(doc, "endpoints", eps, &rc);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    *out = doc;
    return 0;
}
