/*
 * calib/context: how the engine ran, as the boots recorded it (include/slipway/calib.h,
 * "Calibration contexts"). A label per boot, the contexts a fit covered, the warning for a
 * prediction outside them, and the offset of the free memory at KV allocation between two
 * contexts from boots of one shape (the seed: "The rootless bench probe had booted the same
 * numbers; the root unit's pinned-expert path holds ~0.8 GiB/rank more").
 *
 * What it does not do: split the laws' fits by context (the KV price and the arena do not depend
 * on who ran the engine), or move a prediction by the offset: it says it.
 */
#include "calib_internal.h"

#include <slipway/ledger.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB 1073741824.0

const char *sw_calib_context_label(const json_t *shape, char *out, size_t n)
{
    const json_t *c = json_object_get(json_object_get(shape, "flags"), "context");
    out[0] = '\0';
    if (json_is_string(c)) {
        snprintf(out, n, "%s", json_string_value(c));
    } else if (json_is_object(c)) {
        /* members in key order: the ledger's canonical form sorts them, a raw shape may not */
        const char *keys[16];
        size_t nk = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)c, k, v)
        {
            if (nk < SW_ARRAY_LEN(keys))
                keys[nk++] = k;
        }
        for (size_t i = 1; i < nk; i++)
            for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
                const char *t = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = t;
            }
        size_t o = 0;
        for (size_t i = 0; i < nk && o < n; i++) {
            const json_t *x = json_object_get(c, keys[i]);
            char val[96];
            if (json_is_string(x))
                snprintf(val, sizeof(val), "%s", json_string_value(x));
            else if (json_is_boolean(x))
                snprintf(val, sizeof(val), "%s", json_is_true(x) ? "yes" : "no");
            else if (json_is_number(x))
                snprintf(val, sizeof(val), "%g", json_number_value(x));
            else
                continue;
            int w = snprintf(out + o, n - o, "%s%s=%s", o ? " " : "", keys[i], val);
            if (w < 0)
                break;
            o += (size_t)w;
        }
    }
    return out;
}

void sw__calib_contexts(struct sw_calib_fit *f, const json_t *boots, const struct sw_calib_opts *o)
{
    size_t i;
    json_t *b;
    f->n_ctx = 0;
    json_array_foreach(boots, i, b)
    {
        int64_t id = (int64_t)json_integer_value(json_object_get(b, "id"));
        if (sw__calib_excluded(o, id))
            continue;
        char lab[192];
        sw_calib_context_label(json_object_get(json_object_get(b, "shape"), "canonical"), lab,
                               sizeof(lab));
        struct sw_calib_ctx *c = NULL;
        for (int k = 0; k < f->n_ctx; k++)
            if (!strcmp(f->ctx[k].label, lab))
                c = &f->ctx[k];
        if (!c) {
            if (f->n_ctx >= SW_CALIB_MAX_CTX)
                continue;
            c = &f->ctx[f->n_ctx++];
            memset(c, 0, sizeof(*c));
            snprintf(c->label, sizeof(c->label), "%s", lab);
        }
        if (c->n_boots < SW_CALIB_MAX_POINTS)
            c->boot_ids[c->n_boots] = id;
        c->n_boots++;
    }
}

bool sw_calib_context_warning(const struct sw_calib_fit *f, const char *asked, char *warn, size_t n)
{
    char fitted[512] = "";
    size_t o = 0;
    const char *a = asked ? asked : "";
    warn[0] = '\0';
    for (int k = 0; k < f->n_ctx; k++) {
        if (!strcmp(f->ctx[k].label, a))
            return false;
        int w = snprintf(fitted + o, sizeof(fitted) - o, "%s%s", o ? "; " : "",
                         f->ctx[k].label[0] ? f->ctx[k].label : "unrecorded");
        if (w > 0 && (size_t)w < sizeof(fitted) - o)
            o += (size_t)w;
    }
    if (!f->n_ctx)
        return false;
    snprintf(warn, n,
             "EXTRAPOLATES across context: %s was not fitted (fitted: %s); what is free when the "
             "pool is allocated depends on how the engine runs",
             a[0] ? a : "unrecorded", fitted);
    return true;
}

/* The shape of a boot without its context, for "the same numbers". New reference or NULL. */
static json_t *bare_shape(const json_t *b)
{
    json_t *c = json_deep_copy(json_object_get(json_object_get(b, "shape"), "canonical"));
    json_t *fl = json_object_get(c, "flags");
    if (fl) {
        json_object_del(fl, "context");
        if (!json_object_size(fl))
            json_object_del(c, "flags");
    }
    return c;
}

/* The boot ran in the context labelled `label` (sw_calib_context_label of its shape). */
static bool in_context(const json_t *boot, const char *label)
{
    char l[192];
    sw_calib_context_label(json_object_get(json_object_get(boot, "shape"), "canonical"), l,
                           sizeof(l));
    return !strcmp(l, label);
}

/* A boot's state at KV allocation: 1 got past it (ask = its pool), 2 failed there with the free
 * memory printed (free), 0 neither. */
static int at_kv_alloc(const json_t *b, double *free_b, double *ask)
{
    const json_t *fail = json_object_get(b, "failure");
    const char *fc = sw__calib_failure(b, "failure_class", "class");
    const char *ph = sw__calib_failure(b, "failure_phase", "phase");
    const json_t *canon = json_object_get(json_object_get(b, "shape"), "canonical");
    int64_t kvb = sw__calib_shape_int(canon, "kv_bytes", 0);
    const json_t *tg = json_object_get(fail, "tried_gib");
    *ask = json_is_number(tg) ? json_number_value(tg) * GIB : (double)kvb;
    if (!fc[0])
        return *ask > 0 ? 1 : 0; /* booted: the pool was allocated */
    if (strcmp(fc, "oom") || !ph[0])
        return 0;
    if (!strcmp(ph, "graph_capture") || !strcmp(ph, "runtime"))
        return *ask > 0 ? 1 : 0; /* died after the pool was allocated */
    if (!strcmp(ph, "kv_alloc")) {
        const json_t *fg = json_object_get(fail, "free_gib");
        if (!json_is_number(fg))
            return 0;
        *free_b = json_number_value(fg) * GIB;
        return 2;
    }
    return 0;
}

int sw_calib_context_offset(struct sw_ledger *l, const char *endpoint, const char *a, const char *b,
                            double *lo, bool *lo_set, double *hi, bool *hi_set, char *basis,
                            size_t basis_n, struct sw_err *e)
{
    json_t *boots = NULL;
    int rc;
    *lo_set = *hi_set = false;
    *lo = -INFINITY;
    *hi = INFINITY;
    basis[0] = '\0';
    rc = sw_ledger_boots(l, &(struct sw_ledger_query){.endpoint = endpoint, .full = true}, &boots,
                         e);
    if (rc)
        return rc;
    size_t i, j;
    json_t *x, *y;
    size_t o = 0;
    json_array_foreach(boots, i, x)
    {
        if (!in_context(x, a))
            continue;
        json_t *sx = bare_shape(x);
        json_array_foreach(boots, j, y)
        {
            if (!in_context(y, b))
                continue;
            json_t *sy = bare_shape(y);
            bool same = sx && sy && json_equal(sx, sy);
            json_decref(sy);
            if (!same)
                continue;
            double fx = 0, fy = 0, ax = 0, ay = 0;
            int kx = at_kv_alloc(x, &fx, &ax), ky = at_kv_alloc(y, &fy, &ay);
            double l0 = -INFINITY, h0 = INFINITY;
            if (kx == 2 && ky == 1) /* b had at least its ask free; a printed fx */
                l0 = ay - fx - 0.005 * GIB;
            else if (kx == 1 && ky == 2)
                h0 = fy - ax + 0.005 * GIB;
            else if (kx == 2 && ky == 2) {
                l0 = fy - fx - 0.01 * GIB;
                h0 = fy - fx + 0.01 * GIB;
            } else {
                continue;
            }
            if (l0 > *lo) {
                *lo = l0;
                *lo_set = true;
            }
            if (h0 < *hi) {
                *hi = h0;
                *hi_set = true;
            }
            int w = snprintf(
                basis + o, basis_n - o, "%sboot #%lld (%s) %s, boot #%lld (%s) %s", o ? "; " : "",
                (long long)json_integer_value(json_object_get(x, "id")), a[0] ? a : "unrecorded",
                kx == 2 ? "failed at KV allocation" : "got past KV allocation",
                (long long)json_integer_value(json_object_get(y, "id")), b[0] ? b : "unrecorded",
                ky == 2 ? "failed at KV allocation" : "got past KV allocation");
            if (w > 0 && (size_t)w < basis_n - o)
                o += (size_t)w;
        }
        json_decref(sx);
    }
    json_decref(boots);
    if (!*lo_set && !*hi_set)
        return sw_err_set(e, SW_ENOENT,
                          "%s: no boots of one shape in contexts '%s' and '%s' bound the free "
                          "memory at KV allocation",
                          endpoint, a, b);
    return 0;
}
