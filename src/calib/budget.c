/*
 * calib/budget: the non-KV cost of an endpoint's devices by subtraction (a usage reading minus
 * the law's KV for the reading's shape), and the budget of a shape from it.
 *
 * The operator's method, made mechanical: "the vision tower bills ~1.4 GiB, established by
 * subtracting two measured boots". Readings are grouped by everything in the shape except what
 * the KV law prices (ctx, slots, the pinned pool): readings with and without a projector are two
 * classes, and a budget never borrows one class's non-KV for another.
 *
 * What it does not do: split the non-KV into weights / compute / projector (only differences of
 * classes show those), or price a reading whose shape it cannot plan (skipped, with the reason).
 */
#include "calib_internal.h"

#include <slipway/arch.h>
#include <slipway/fleet.h>
#include <slipway/hf.h>
#include <slipway/memory.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MIB 1048576.0

int sw__calib_config_text(const struct sw_calib_opts *o, char **text, char *src, size_t srcn,
                          struct sw_err *e)
{
    *text = NULL;
    if (src && srcn)
        src[0] = 0;
    if (o && o->config_path && o->config_path[0]) {
        char path[4096];
        size_t n = strlen(o->config_path);
        /* a .json file as is; anything else is a model directory holding config.json */
        if (n >= 5 && !strcmp(o->config_path + n - 5, ".json"))
            snprintf(path, sizeof(path), "%s", o->config_path);
        else
            snprintf(path, sizeof(path), "%s%sconfig.json", o->config_path,
                     o->config_path[n - 1] == '/' ? "" : "/");
        size_t len = 0;
        int rc = sw_read_file(path, 4u << 20, text, &len, e);
        if (rc) {
            sw_err_prefix(e, "--config %s", o->config_path);
            return rc;
        }
        if (src)
            snprintf(src, srcn, "%s", path);
        return 0;
    }
    if (o && o->ep && o->ep->arch) {
        char *t = sw_json_dumps(o->ep->arch, JSON_COMPACT | JSON_SORT_KEYS);
        if (!t)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        *text = sw_strdup(t);
        sw_free(t);
        if (!*text)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        if (src)
            snprintf(src, srcn, "fleet endpoints.%s.arch", o->ep->name);
        return 0;
    }
    return 0;
}

static int arch_from_opts(const struct sw_calib_opts *o, struct sw_arch **arch, char *src,
                          size_t srcn, struct sw_err *e)
{
    char *text = NULL;
    struct sw_hf_config *c = NULL;
    int rc = sw__calib_config_text(o, &text, src, srcn, e);
    if (rc)
        goto out;
    if (!text) {
        rc = sw_err_set(e, SW_ENOENT,
                        "no architecture to price the KV with: give --config CONFIG.json or a "
                        "fleet endpoint with an inline `arch`");
        goto out;
    }
    c = sw_calloc(1, sizeof(*c));
    if (!c) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_hf_config_parse(text, strlen(text), src, c, e);
    if (rc)
        goto out;
    rc = sw_arch_from_hf(c, arch, e);
    if (rc)
        sw_err_prefix(e, "%s", src);
out:
    sw_free(c);
    sw_free(text);
    return rc;
}

int sw_calib_llamacpp_kv(const json_t *shape, const struct sw_calib_opts *opts, double *kv_mib,
                         char *how, size_t how_n, struct sw_err *e)
{
    struct sw_arch *arch = NULL;
    struct sw_llamacpp_plan *p = NULL;
    json_t *canon = NULL;
    char src[512] = "";
    int rc = 0;
    canon = sw__calib_canon(shape, e);
    if (!canon)
        return e ? e->code : SW_EINVAL;
    int64_t ctx = sw__calib_shape_int(canon, "ctx", 0);
    int64_t slots = sw__calib_shape_int(canon, "slots", 1);
    if (ctx <= 0) {
        rc = sw_err_set(e, SW_EINVAL, "shape has no ctx (llama.cpp -c): the KV cannot be priced");
        goto out;
    }
    rc = arch_from_opts(opts, &arch, src, sizeof(src), e);
    if (rc)
        goto out;
    struct sw_llamacpp_args a;
    sw_llamacpp_args_init(&a);
    char cbuf[32], nbuf[32];
    snprintf(cbuf, sizeof(cbuf), "%lld", (long long)ctx);
    snprintf(nbuf, sizeof(nbuf), "%lld", (long long)slots);
    const char *argv[24];
    int argc = 0;
    argv[argc++] = "llama-server";
    argv[argc++] = "-m"; /* the law reads the arch, never the file */
    argv[argc++] = "model.gguf";
    argv[argc++] = "-c";
    argv[argc++] = cbuf;
    argv[argc++] = "-np";
    argv[argc++] = nbuf;
    const char *k = sw__calib_shape_str(canon, "kv_dtype_k");
    const char *v = sw__calib_shape_str(canon, "kv_dtype_v");
    if (k[0]) {
        argv[argc++] = "-ctk";
        argv[argc++] = k;
    }
    if (v[0]) {
        argv[argc++] = "-ctv";
        argv[argc++] = v;
    }
    const json_t *flags = json_object_get(canon, "flags");
    if (json_is_true(json_object_get(flags, "swa_full")))
        argv[argc++] = "--swa-full";
    if (json_is_true(json_object_get(flags, "kv_unified")))
        argv[argc++] = "-kvu";
    rc = sw_llamacpp_args_parse(&a, argc, argv, e);
    if (rc)
        goto out;
    p = sw_calloc(1, sizeof(*p));
    if (!p) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_llamacpp_plan(arch, &a, NULL, p, e);
    if (rc)
        goto out;
    uint64_t kv = 0;
    for (uint32_t i = 0; i < p->report.n_kv && i < SW_LLAMACPP_MAX_KV; i++)
        kv += p->report.kv[i].k_bytes + p->report.kv[i].v_bytes;
    uint64_t rec = 0;
    if (p->report.has_recurrent)
        rec = p->report.recurrent.r_bytes + p->report.recurrent.s_bytes;
    *kv_mib = (double)(kv + rec) / MIB;
    if (how)
        snprintf(how, how_n, "memory/llamacpp over %s: KV %.2f + recurrent %.2f MiB", src,
                 (double)kv / MIB, (double)rec / MIB);
out:
    sw_free(p);
    sw_arch_free(arch);
    json_decref(canon);
    return rc;
}

/* KV (MiB, per device) the law prices for a shape: llama.cpp's caches, vLLM's pinned pool. */
static int shape_kv(const json_t *canon, const struct sw_calib_opts *o, double *kv, char *how,
                    size_t how_n, struct sw_err *e)
{
    const char *eng = sw__calib_shape_str(canon, "engine");
    if (!strcmp(eng, "llama.cpp"))
        return sw_calib_llamacpp_kv(canon, o, kv, how, how_n, e);
    if (!strcmp(eng, "vllm") || !strcmp(eng, "sglang")) {
        int64_t b = sw__calib_shape_int(canon, "kv_bytes", -1);
        if (b <= 0)
            return sw_err_set(e, SW_EUNSUPPORTED,
                              "%s shape without a pinned pool (kv_bytes): its KV was sized by the "
                              "engine and not recorded",
                              eng);
        *kv = (double)b / MIB;
        snprintf(how, how_n, "the pinned pool (kv_bytes per rank)");
        return 0;
    }
    return sw_err_set(e, SW_EUNSUPPORTED, "engine '%s': no KV law to subtract", eng);
}

static const char *const NONKV_DROP[] = {"ctx", "slots", "kv_bytes", "kv_tokens", NULL};

static void note_add(struct sw_calib_fit *f, const char *fmt, ...) SW_PRINTF(2, 3);
static void note_add(struct sw_calib_fit *f, const char *fmt, ...)
{
    size_t n = strlen(f->notes);
    if (n + 4 >= sizeof(f->notes))
        return;
    if (n)
        f->notes[n++] = '\n', f->notes[n] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->notes + n, sizeof(f->notes) - n, fmt, ap);
    va_end(ap);
}

static void class_label(const json_t *canon, char *out, size_t n)
{
    json_t *c = json_deep_copy(canon);
    if (!c) {
        snprintf(out, n, "?");
        return;
    }
    for (size_t i = 0; NONKV_DROP[i]; i++)
        json_object_del(c, NONKV_DROP[i]);
    sw_ledger_shape_summary(c, out, n);
    json_decref(c);
}

int sw__calib_nonkv_fit(struct sw_calib_fit *f, const json_t *usage, const struct sw_calib_opts *o,
                        struct sw_err *e)
{
    size_t i;
    json_t *u;
    json_array_foreach(usage, i, u)
    {
        const json_t *shape = json_object_get(u, "shape");
        if (json_is_object(json_object_get(shape, "canonical")))
            shape = json_object_get(shape, "canonical");
        int64_t uid = (int64_t)json_integer_value(json_object_get(u, "id"));
        if (!json_is_object(shape)) {
            note_add(f, "usage #%lld: no shape, so no KV to subtract", (long long)uid);
            continue;
        }
        double kv = 0;
        char how[160] = "";
        struct sw_err e2 = {0};
        if (shape_kv(shape, o, &kv, how, sizeof(how), &e2)) {
            note_add(f, "usage #%lld: not priced: %s", (long long)uid, e2.msg);
            continue;
        }
        char *key = sw__calib_key(shape, NONKV_DROP);
        if (!key)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        const char *dev = json_string_value(json_object_get(u, "device"));
        if (!dev)
            dev = "?";
        struct sw_calib_nonkv *c = NULL;
        for (int k = 0; k < f->n_nonkv; k++)
            if (!strcmp(f->nonkv[k].key, key) && !strcmp(f->nonkv[k].device, dev))
                c = &f->nonkv[k];
        if (!c) {
            if (f->n_nonkv >= SW_CALIB_MAX_NONKV || strlen(key) >= sizeof(c->key)) {
                note_add(f, "usage #%lld: too many kinds of shape, not used", (long long)uid);
                sw_free(key);
                continue;
            }
            c = &f->nonkv[f->n_nonkv++];
            memset(c, 0, sizeof(*c));
            snprintf(c->key, sizeof(c->key), "%s", key);
            snprintf(c->device, sizeof(c->device), "%s", dev);
            class_label(shape, c->label, sizeof(c->label));
            snprintf(c->kv_source, sizeof(c->kv_source), "%s", how);
        }
        sw_free(key);
        if (c->n >= SW_CALIB_MAX_READ) {
            note_add(f, "usage #%lld: class full, not used", (long long)uid);
            continue;
        }
        struct sw_calib_nonkv_read *r = &c->r[c->n++];
        memset(r, 0, sizeof(*r));
        r->usage_id = uid;
        r->boot_id = (int64_t)json_integer_value(json_object_get(u, "boot"));
        snprintf(r->device, sizeof(r->device), "%s", dev);
        sw_ledger_shape_summary(shape, r->shape, sizeof(r->shape));
        r->ctx = sw__calib_shape_int(shape, "ctx", 0);
        r->slots = sw__calib_shape_int(shape, "slots", 1);
        r->used_mib = (uint64_t)json_integer_value(json_object_get(u, "used_mib"));
        r->total_mib = (uint64_t)json_integer_value(json_object_get(u, "total_mib"));
        r->free_read = json_is_true(json_object_get(u, "free_read")) ||
                       json_is_integer(json_object_get(u, "free_mib"));
        const json_t *fr = json_object_get(u, "free_mib");
        r->free_mib =
            json_is_integer(fr) ? (uint64_t)json_integer_value(fr) : r->total_mib - r->used_mib;
        if (json_is_false(json_object_get(u, "free_read")))
            r->free_read = false;
        r->kv_mib = kv;
        r->non_kv_mib = (double)r->used_mib - kv;
    }
    for (int k = 0; k < f->n_nonkv; k++) {
        struct sw_calib_nonkv *c = &f->nonkv[k];
        double sum = 0;
        c->lo = INFINITY;
        c->hi = -INFINITY;
        c->reserve_lo = INFINITY;
        c->reserve_hi = -INFINITY;
        c->ctx_lo = INT64_MAX;
        c->ctx_hi = 0;
        for (int j = 0; j < c->n; j++) {
            const struct sw_calib_nonkv_read *r = &c->r[j];
            sum += r->non_kv_mib;
            c->lo = fmin(c->lo, r->non_kv_mib);
            c->hi = fmax(c->hi, r->non_kv_mib);
            if (r->ctx < c->ctx_lo)
                c->ctx_lo = r->ctx;
            if (r->ctx > c->ctx_hi)
                c->ctx_hi = r->ctx;
            if (r->free_read) {
                double res = (double)r->total_mib - (double)r->used_mib - (double)r->free_mib;
                c->reserve_lo = fmin(c->reserve_lo, res);
                c->reserve_hi = fmax(c->reserve_hi, res);
            }
        }
        c->mean = c->n ? sum / c->n : 0;
        if (c->reserve_lo > c->reserve_hi)
            c->reserve_lo = c->reserve_hi = 0;
    }
    return 0;
}

/* Two values "alike" for a budget: equal, or one side silent. A flag set to false is the flag
 * absent. Objects compare key by key the same way (a projector named on one side and sized on
 * the other is the same projector as long as what both say agrees). */
static bool alike(const json_t *a, const json_t *b, bool *silent)
{
    if (!a || !b) {
        const json_t *x = a ? a : b;
        if (x && !json_is_false(x))
            *silent = true;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            if (!alike(v, json_object_get(b, k), silent))
                return false;
        }
        json_object_foreach((json_t *)b, k, v)
        {
            if (!json_object_get(a, k) && !json_is_false(v))
                *silent = true;
        }
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* Does a reading class (its key: canonical shape minus ctx/slots/pool) cover this shape? The
 * engine, the KV dtypes and the parallelism must be said on both sides and agree; elsewhere a
 * key one side does not state is not a difference (a fleet-made shape names the model by its
 * file, a hand reading by its name), and *silent says the match leaned on that. A flag present
 * on one side and absent (or false) on the other IS a difference: a projector is not optional. */
/* The model, within one endpoint: what changes the weights' bytes (content hash, quant, size)
 * must agree where both sides say it; names, repos and files are labels that differ between a
 * hand reading ("MiMo-9B") and a fleet-made shape (the GGUF file): a difference there leans. */
static bool model_alike(const json_t *a, const json_t *b, bool *silent)
{
    static const char *const hard[] = {"sha256", "quant", "size"};
    if (!json_is_object(a) || !json_is_object(b))
        return alike(a, b, silent);
    for (size_t i = 0; i < SW_ARRAY_LEN(hard); i++) {
        const json_t *x = json_object_get(a, hard[i]), *y = json_object_get(b, hard[i]);
        if (x && y && !json_equal((json_t *)x, (json_t *)y))
            return false;
    }
    if (!json_equal((json_t *)a, (json_t *)b))
        *silent = true;
    return true;
}

static bool covers(const char *key, const json_t *asked, bool *silent)
{
    json_t *r = json_loads(key, 0, NULL);
    bool ok = r != NULL;
    static const char *const strict[] = {"engine", "kv_dtype_k", "kv_dtype_v",    "tp",
                                         "pp",     "dp",         "engine_profile"};
    for (size_t i = 0; ok && i < SW_ARRAY_LEN(strict); i++) {
        const json_t *a = json_object_get(r, strict[i]), *b = json_object_get(asked, strict[i]);
        ok = (!a && !b) || (a && b && json_equal((json_t *)a, (json_t *)b));
    }
    const json_t *fa = json_object_get(r, "flags"), *fb = json_object_get(asked, "flags");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)fa, k, v)
    {
        if (ok && !json_is_false(v) && !json_object_get(fb, k))
            ok = false;
    }
    json_object_foreach((json_t *)fb, k, v)
    {
        if (ok && !json_is_false(v) && !json_object_get(fa, k))
            ok = false;
    }
    json_object_foreach((json_t *)asked, k, v)
    {
        bool skip = false;
        for (size_t i = 0; NONKV_DROP[i]; i++)
            skip |= !strcmp(k, NONKV_DROP[i]);
        if (ok && !skip && !strcmp(k, "model"))
            ok = model_alike(json_object_get(r, k), v, silent);
        else if (ok && !skip && !alike(json_object_get(r, k), v, silent))
            ok = false;
    }
    json_object_foreach(r, k, v)
    {
        if (ok && !json_object_get(asked, k) && !json_is_false(v))
            *silent = true;
    }
    json_decref(r);
    return ok;
}

int sw_calib_budget(const struct sw_calib_fit *f, const json_t *shape,
                    const struct sw_calib_opts *opts, struct sw_calib_budget *out, struct sw_err *e)
{
    int rc = 0;
    char *key = NULL;
    json_t *canon = NULL;
    memset(out, 0, sizeof(*out));
    canon = sw__calib_canon(shape, e);
    if (!canon)
        return e ? e->code : SW_EINVAL;
    key = sw__calib_key(canon, NONKV_DROP);
    if (!key) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    int64_t ctx = sw__calib_shape_int(canon, "ctx", 0);
    int64_t slots = sw__calib_shape_int(canon, "slots", 1);
    double kv = 0;
    char how[160];
    bool kv_done = false;
    /* the classes that cover this shape: exact ones first; else those that do while one side is
     * silent somewhere, one per device at most */
    bool use[SW_CALIB_MAX_NONKV] = {0};
    bool any_exact = false, leaned = false;
    for (int k = 0; k < f->n_nonkv; k++)
        if (!strcmp(f->nonkv[k].key, key))
            use[k] = any_exact = true;
    if (!any_exact) {
        for (int k = 0; k < f->n_nonkv; k++) {
            bool silent = false;
            if (!covers(f->nonkv[k].key, canon, &silent))
                continue;
            for (int j = 0; j < k; j++)
                if (use[j] && !strcmp(f->nonkv[j].device, f->nonkv[k].device)) {
                    rc = sw_err_set(e, SW_EINVAL,
                                    "%s: the shape matches two kinds of reading on %s (%s; %s): "
                                    "say which (model quant, flags)",
                                    f->endpoint, f->nonkv[k].device, f->nonkv[j].label,
                                    f->nonkv[k].label);
                    goto out;
                }
            use[k] = true;
            leaned |= silent;
        }
    }
    for (int k = 0; k < f->n_nonkv; k++) {
        const struct sw_calib_nonkv *c = &f->nonkv[k];
        if (!use[k])
            continue;
        if (out->n_dev >= SW_CALIB_MAX_DEV)
            break;
        if (!kv_done) {
            rc = shape_kv(canon, opts, &kv, how, sizeof(how), e);
            if (rc)
                goto out;
            kv_done = true;
        }
        struct sw_calib_device *d = &out->dev[out->n_dev++];
        snprintf(d->device, sizeof(d->device), "%s", c->device);
        d->total_mib = c->n ? c->r[0].total_mib : 0;
        d->kv_mib = kv;
        d->n_readings = c->n;
        for (int j = 0; j < c->n && j < SW_CALIB_MAX_READ; j++)
            d->reading_ids[j] = c->r[j].usage_id;
        /* the exact shape was read: the reading is the answer */
        const struct sw_calib_nonkv_read *m = NULL;
        for (int j = 0; j < c->n; j++)
            if (c->r[j].ctx == ctx && c->r[j].slots == slots && fabs(c->r[j].kv_mib - kv) < 1e-6)
                m = &c->r[j];
        if (m) {
            d->measured = true;
            d->non_kv_mib = d->non_kv_lo = d->non_kv_hi = m->non_kv_mib;
            d->used_mib = d->used_lo = d->used_hi = (double)m->used_mib;
            d->free_mib = d->free_lo = d->free_hi = (double)m->free_mib;
            d->reserve_mib = (double)m->total_mib - (double)m->used_mib - (double)m->free_mib;
            snprintf(d->basis, sizeof(d->basis), "measured: usage #%lld (%s), %llu used / %llu MiB",
                     (long long)m->usage_id, m->shape, (unsigned long long)m->used_mib,
                     (unsigned long long)m->total_mib);
            continue;
        }
        double lo = c->lo, hi = c->hi;
        bool outside = ctx < c->ctx_lo || ctx > c->ctx_hi;
        if (outside && c->n >= 2 && c->ctx_hi > c->ctx_lo) {
            /* Outside the readings' ctx: the non-KV may drift with ctx (compute buffers size
             * with the context); extend the interval along the readings' own trend. */
            const struct sw_calib_nonkv_read *a = NULL, *b = NULL;
            for (int j = 0; j < c->n; j++) {
                if (!a || c->r[j].ctx < a->ctx)
                    a = &c->r[j];
                if (!b || c->r[j].ctx > b->ctx)
                    b = &c->r[j];
            }
            double slope = (b->non_kv_mib - a->non_kv_mib) / (double)(b->ctx - a->ctx);
            double lin = a->non_kv_mib + slope * (double)(ctx - a->ctx);
            lo = fmin(lo, lin);
            hi = fmax(hi, lin);
        }
        d->non_kv_mib = c->mean;
        d->non_kv_lo = lo;
        d->non_kv_hi = hi;
        d->used_mib = c->mean + kv;
        d->used_lo = lo + kv;
        d->used_hi = hi + kv;
        d->reserve_mib = (c->reserve_lo + c->reserve_hi) / 2;
        d->free_mib = (double)d->total_mib - d->used_mib - d->reserve_mib;
        d->free_lo = (double)d->total_mib - d->used_hi - c->reserve_hi;
        d->free_hi = (double)d->total_mib - d->used_lo - c->reserve_lo;
        snprintf(d->basis, sizeof(d->basis),
                 "non-KV %.1f MiB (%.1f..%.1f over %d reading%s of %s) + KV %.1f MiB (%s)", c->mean,
                 lo, hi, c->n, c->n == 1 ? "" : "s", c->label, kv, how);
        size_t wl = strlen(out->warning);
        if (outside) {
            out->extrapolated = true;
            snprintf(out->warning + wl, sizeof(out->warning) - wl,
                     "%sctx %lld is outside the readings' %lld..%lld on %s: extrapolated",
                     wl ? "; " : "", (long long)ctx, (long long)c->ctx_lo, (long long)c->ctx_hi,
                     c->device);
        } else if (c->n == 1) {
            snprintf(out->warning + wl, sizeof(out->warning) - wl,
                     "%sone reading on %s: the non-KV cost has no measured spread", wl ? "; " : "",
                     c->device);
        }
    }
    if (out->n_dev && leaned) {
        size_t wl = strlen(out->warning);
        snprintf(out->warning + wl, sizeof(out->warning) - wl,
                 "%smatched readings whose shapes leave out keys this one states (or the other "
                 "way): assumed alike",
                 wl ? "; " : "");
    }
    if (!out->n_dev) {
        char have[384] = "";
        size_t hl = 0;
        for (int k = 0; k < f->n_nonkv && hl + 8 < sizeof(have); k++)
            hl += (size_t)snprintf(have + hl, sizeof(have) - hl, "%s[%s] %s", k ? "; " : "",
                                   f->nonkv[k].device, f->nonkv[k].label);
        char lab[160];
        class_label(canon, lab, sizeof(lab));
        rc = sw_err_set(e, SW_ENOENT,
                        "%s: no usage reading of a shape like this (%s); readings exist for: %s",
                        f->endpoint, lab, hl ? have : "none");
    }
out:
    sw_free(key);
    json_decref(canon);
    return rc;
}
