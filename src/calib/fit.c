/*
 * calib/fit: reads what the ledger recorded for an endpoint and hands each part to its fitter:
 * the boots that printed a KV pool (kv.c), the usage readings (budget.c), the boots that printed
 * an expert arena (arena.c). Boots are grouped into KV classes by what the law's free terms
 * depend on (engine, model, profile, KV dtypes, parallelism); max_model_len and the pool are the
 * geometry a class is fitted over.
 *
 * What it does not do: decide anything from the fit, or write to the ledger.
 */
#include "calib_internal.h"

#include <slipway/fleet.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t sw__calib_shape_int(const json_t *canon, const char *key, int64_t def)
{
    const json_t *v = json_object_get(canon, key);
    int64_t x;
    if (!json_is_number(v) || sw_json_int_range(v, INT64_MIN, INT64_MAX, NULL, key, &x, NULL))
        return def;
    return x;
}

const char *sw__calib_shape_str(const json_t *canon, const char *key)
{
    const char *s = json_string_value(json_object_get(canon, key));
    return s ? s : "";
}

const char *sw__calib_failure(const json_t *boot, const char *top, const char *inner)
{
    const char *v = json_string_value(json_object_get(boot, top));
    if (!v)
        v = json_string_value(json_object_get(json_object_get(boot, "failure"), inner));
    return v ? v : "";
}

json_t *sw__calib_canon(const json_t *shape, struct sw_err *e)
{
    json_t *c = NULL;
    if (!json_is_object(shape)) {
        sw_err_set(e, SW_EINVAL, "shape must be a JSON object");
        return NULL;
    }
    if (sw_ledger_shape_canon(shape, &c, NULL, NULL, e))
        return NULL;
    return c;
}

char *sw__calib_key(const json_t *canon, const char *const *drop)
{
    json_t *c = json_deep_copy(canon);
    if (!c)
        return NULL;
    for (size_t i = 0; drop && drop[i]; i++)
        json_object_del(c, drop[i]);
    char *t = sw_json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    if (!t)
        return NULL;
    char *r = sw_strdup(t);
    sw_free(t);
    return r;
}

/* What a KV class is: everything but the geometry (ctx), the slots (the law does not read them)
 * and the pool; and the figures that only move other budgets (mnbt, utilization, flags). */
static const char *const KV_DROP[] = {"ctx",      "slots",
                                      "kv_bytes", "kv_tokens",
                                      "mnbt",     "batch",
                                      "ubatch",   "gpu_memory_utilization",
                                      "flags",    "mem_fraction_static",
                                      NULL};

static void kv_label(const json_t *canon, char *out, size_t n)
{
    const char *k = sw__calib_shape_str(canon, "kv_dtype_k");
    const char *v = sw__calib_shape_str(canon, "kv_dtype_v");
    int64_t tp = sw__calib_shape_int(canon, "tp", 1);
    if (!strcmp(k, v))
        snprintf(out, n, "kv=%s tp=%lld", k[0] ? k : "default", (long long)tp);
    else
        snprintf(out, n, "kv=%s/%s tp=%lld", k, v, (long long)tp);
}

bool sw__calib_excluded(const struct sw_calib_opts *o, int64_t id)
{
    for (int i = 0; o && o->exclude && i < o->n_exclude; i++)
        if (o->exclude[i] == id)
            return true;
    return false;
}

static int add_kv_boot(struct sw_calib_fit *f, char keys[][512], const json_t *b,
                       const struct sw_calib_opts *o)
{
    const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
    const json_t *rep = json_object_get(b, "report");
    int64_t id = (int64_t)json_integer_value(json_object_get(b, "id"));
    const char *ext = json_string_value(json_object_get(b, "ext_id"));
    const json_t *tok = json_object_get(rep, "kv_cache_tokens");
    if (!json_is_object(canon) || !json_is_integer(tok) || sw__calib_excluded(o, id))
        return 0;
    const char *eng = sw__calib_shape_str(canon, "engine");
    if (strcmp(eng, "vllm") != 0)
        return 0;
    char *key = sw__calib_key(canon, KV_DROP);
    if (!key)
        return SW_ENOMEM;
    struct sw_calib_kv_fit *k = NULL;
    for (int i = 0; i < f->n_kv; i++)
        if (!strcmp(keys[i], key))
            k = &f->kv[i];
    if (!k) {
        if (f->n_kv >= SW_CALIB_MAX_CLASSES || strlen(key) >= 512) {
            sw_free(key);
            return 0;
        }
        snprintf(keys[f->n_kv], 512, "%s", key);
        k = &f->kv[f->n_kv++];
        memset(k, 0, sizeof(*k));
        kv_label(canon, k->klass, sizeof(k->klass));
        const char *kd = sw__calib_shape_str(canon, "kv_dtype_k");
        snprintf(k->kv_dtype, sizeof(k->kv_dtype), "%s", kd[0] ? kd : "auto");
        k->tp = sw__calib_shape_int(canon, "tp", 1);
    }
    sw_free(key);
    int64_t L = sw__calib_shape_int(canon, "ctx", 0);
    int64_t kvb = sw__calib_shape_int(canon, "kv_bytes", 0);
    if (L <= 0) {
        size_t n = strlen(k->skipped);
        snprintf(k->skipped + n, sizeof(k->skipped) - n, "%sboot #%lld (%s): no max_model_len",
                 n ? "; " : "", (long long)id, ext ? ext : "");
        k->n_skipped++;
        return 0;
    }
    /* A boot whose pool the engine sized (utilization) still says its token count is a whole
     * number of blocks: kept with kv_bytes 0, it constrains the structure, not the stride. */
    if (kvb < 0)
        kvb = 0;
    if (k->n_points >= SW_CALIB_MAX_POINTS)
        return 0;
    struct sw_calib_kv_point *p = &k->pts[k->n_points++];
    memset(p, 0, sizeof(*p));
    p->boot_id = id;
    snprintf(p->ext_id, sizeof(p->ext_id), "%s", ext ? ext : "");
    p->max_model_len = L;
    p->slots = sw__calib_shape_int(canon, "slots", 0);
    p->kv_bytes = (uint64_t)kvb;
    p->tokens = (int64_t)json_integer_value(tok);
    const json_t *conc = json_object_get(rep, "max_concurrency");
    if (json_is_number(conc) && json_number_value(conc) >= 0 && json_number_value(conc) < 1e9) {
        p->has_conc = true;
        p->conc = json_number_value(conc);
    }
    return 0;
}

static void note_kv(struct sw_calib_fit *f, const struct sw_calib_kv_fit *k)
{
    size_t n = strlen(f->notes);
    snprintf(f->notes + n, sizeof(f->notes) - n,
             "%sKV class %s: %d boot%s, none with a pinned pool (kv_bytes): not fitted",
             n ? "\n" : "", k->klass, k->n_points, k->n_points == 1 ? "" : "s");
}

int sw_calib_fit(struct sw_ledger *l, const char *endpoint, const struct sw_calib_opts *opts,
                 struct sw_calib_fit **out, struct sw_err *e)
{
    int rc = 0;
    json_t *boots = NULL, *usage = NULL;
    struct sw_calib_fit *f = NULL;
    char(*keys)[512] = NULL;
    struct sw_calib_opts o = {0};
    char *cfg = NULL;
    *out = NULL;
    if (opts)
        o = *opts;
    if (!endpoint || !endpoint[0])
        return sw_err_set(e, SW_EINVAL, "no endpoint named");
    int64_t eid = 0;
    rc = sw_ledger_endpoint_id(l, endpoint, false, &eid, e);
    if (rc)
        goto out;
    f = sw_calloc(1, sizeof(*f));
    keys = sw_calloc(SW_CALIB_MAX_CLASSES, sizeof(*keys));
    if (!f || !keys) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    snprintf(f->endpoint, sizeof(f->endpoint), "%s", endpoint);
    rc = sw_ledger_boots(l, &(struct sw_ledger_query){.endpoint = endpoint, .full = true}, &boots,
                         e);
    if (rc)
        goto out;
    f->n_boots = (int)json_array_size(boots);
    size_t i;
    json_t *b;
    json_array_foreach(boots, i, b)
    {
        if (!f->engine[0]) {
            const char *en = json_string_value(json_object_get(b, "engine"));
            if (en)
                snprintf(f->engine, sizeof(f->engine), "%s", en);
        }
        if (add_kv_boot(f, keys, b, &o)) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
    }
    char src[512] = "";
    rc = sw__calib_config_text(&o, &cfg, src, sizeof(src), e);
    if (rc)
        goto out;
    int nk = f->n_kv;
    f->n_kv = 0;
    for (int k = 0; k < nk; k++) {
        struct sw_calib_kv_fit *kf = &f->kv[k];
        int pinned = 0;
        for (int j = 0; j < kf->n_points; j++)
            pinned += kf->pts[j].kv_bytes > 0;
        if (!pinned) {
            note_kv(f, kf);
            continue;
        }
        if (f->n_kv != k)
            f->kv[f->n_kv] = *kf;
        kf = &f->kv[f->n_kv++];
        rc = sw_calib_kv_fit(kf, cfg, o.max_state_blocks, o.max_attn_groups, e);
        if (rc)
            goto out;
        if (kf->model.have)
            snprintf(kf->model.source, sizeof(kf->model.source), "%s", src);
    }
    f->joint_bytes_lo = f->joint_blocks_lo = INT64_MIN;
    f->joint_bytes_hi = f->joint_blocks_hi = INT64_MAX;
    for (int k = 0; k < f->n_kv; k++) {
        const struct sw_calib_kv_model *m = &f->kv[k].model;
        if (!f->kv[k].consistent || !m->explained)
            continue;
        f->joint_classes++;
        f->joint_bytes_lo = SW_MAX(f->joint_bytes_lo, m->extra_bytes_lo);
        f->joint_bytes_hi = SW_MIN(f->joint_bytes_hi, m->extra_bytes_hi);
        f->joint_blocks_lo = SW_MAX(f->joint_blocks_lo, m->extra_blocks_lo);
        f->joint_blocks_hi = SW_MIN(f->joint_blocks_hi, m->extra_blocks_hi);
    }
    f->joint_agree = f->joint_classes > 0 && f->joint_bytes_lo <= f->joint_bytes_hi &&
                     f->joint_blocks_lo <= f->joint_blocks_hi;
    /* the export carries each reading's canonical shape (usage_list gives only its hash) */
    rc = sw_ledger_export(l, endpoint, &usage, e);
    if (rc)
        goto out;
    rc = sw__calib_nonkv_fit(f, json_object_get(usage, "usage"), &o, e);
    if (rc)
        goto out;
    rc = sw__calib_arena_fit(f, boots, &o, e);
    if (rc)
        goto out;
    rc = sw__calib_headroom_fit(f, boots, &o, e);
    if (rc)
        goto out;
    sw_calib_sglang_gather(NULL, NULL, boots, json_object_get(usage, "usage"), f->sglang.obs,
                           SW_CALIB_SG_MAX, &f->sglang.n);
    f->sglang.have = f->sglang.n > 0;
    sw__calib_contexts(f, boots, &o);
    *out = f;
    f = NULL;
out:
    sw_free(cfg);
    sw_free(keys);
    sw_calib_fit_free(f);
    json_decref(boots);
    json_decref(usage);
    return rc;
}

void sw_calib_fit_free(struct sw_calib_fit *f)
{
    if (!f)
        return;
    for (int i = 0; i < SW_CALIB_MAX_CLASSES; i++)
        sw_calib_kv_fit_release(&f->kv[i]);
    sw_free(f);
}

const struct sw_calib_kv_fit *sw_calib_kv_class(const struct sw_calib_fit *f, const json_t *shape)
{
    char lab[128];
    json_t *c = sw__calib_canon(shape, NULL);
    if (!c)
        return NULL;
    kv_label(c, lab, sizeof(lab));
    json_decref(c);
    for (int i = 0; i < f->n_kv; i++)
        if (!strcmp(f->kv[i].klass, lab))
            return &f->kv[i];
    return NULL;
}
