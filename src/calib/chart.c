/*
 * calib/chart: a calibration as an SVG: per KV class, every fitted boot's printed token count
 * beside what the fit gives for it, then each prediction with its interval, so a reader sees at
 * a glance how wide an extrapolation across geometry is.
 *
 * Input is the document `slipway calibrate --json` prints (sw_calib_fit_json plus
 * "predictions"), so a saved fit (--save) can be charted later too.
 */
#include <slipway/calib.h>

#include <math.h>
#include <string.h>

#define MAXC 12 /* categories per panel */
#define MAXP 4  /* panels (KV classes) */

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A token count, or NaN for the "unknown" the fit writes as a negative number. */
static double tokens(const json_t *o, const char *k)
{
    double v = num(o, k);
    return v >= 0 ? v : NAN;
}

/* 6100000000 -> "6.1e9 B", 0 or unknown -> "pool not pinned" */
static void pool(double b, char *out, size_t n)
{
    if (!(b > 0)) {
        snprintf(out, n, "pool not pinned");
        return;
    }
    int ex = (int)floor(log10(b));
    snprintf(out, n, "%.3ge%d B", b / pow(10, ex), ex);
}

struct panel {
    char title[160], note[256];
    char label[MAXC][48];
    const char *cat[MAXC];
    double printed[MAXC], fit[MAXC], lo[MAXC], hi[MAXC];
    size_t n;
    struct sw_chart_series se[2];
};

int sw_calib_svg(const json_t *doc, const char *path, struct sw_err *e)
{
    struct panel *pn = sw_calloc(MAXP, sizeof(*pn));
    struct sw_chart ch[MAXP];
    size_t np = 0, i, j;
    const json_t *k, *b, *p;
    int rc;
    if (!pn)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    json_array_foreach(json_object_get(doc, "kv"), i, k)
    {
        if (np == MAXP)
            break;
        const char *klass = json_string_value(json_object_get(k, "class"));
        struct panel *P = &pn[np];
        json_array_foreach(json_object_get(k, "boots"), j, b)
        {
            if (P->n == MAXC)
                break;
            char g[32];
            pool(num(b, "kv_bytes"), g, sizeof(g));
            snprintf(P->label[P->n], sizeof(P->label[0]), "#%lld %lldx%lld\n%s",
                     (long long)num(b, "boot"), (long long)num(b, "slots"),
                     (long long)num(b, "max_model_len"), g);
            P->printed[P->n] = tokens(b, "printed_tokens");
            P->fit[P->n] = tokens(b, "fit_tokens");
            P->lo[P->n] = P->hi[P->n] = NAN;
            P->n++;
        }
        json_array_foreach(json_object_get(doc, "predictions"), j, p)
        {
            const char *pc = json_string_value(json_object_get(p, "class"));
            if (P->n == MAXC || !pc || !klass || strcmp(pc, klass))
                continue;
            const json_t *t = json_object_get(p, "tokens");
            char g[32];
            pool(num(p, "kv_bytes"), g, sizeof(g));
            snprintf(P->label[P->n], sizeof(P->label[0]), "%s %lld\n%s",
                     json_is_true(json_object_get(p, "extrapolated")) ? "EXTRAP." : "predict",
                     (long long)num(p, "max_model_len"), g);
            P->printed[P->n] = NAN;
            P->fit[P->n] = tokens(t, "point");
            P->lo[P->n] = tokens(t, "lo");
            P->hi[P->n] = tokens(t, "hi");
            P->n++;
        }
        if (!P->n)
            continue;
        for (j = 0; j < P->n; j++)
            P->cat[j] = P->label[j];
        char geo[160] = "";
        size_t used = 0;
        const json_t *L;
        size_t li;
        json_array_foreach(json_object_get(json_object_get(k, "geometry"), "max_model_len"), li, L)
        {
            int w = snprintf(geo + used, sizeof(geo) - used, "%s%lld", li ? ", " : "",
                             (long long)json_integer_value(L));
            if (w < 0 || (size_t)w >= sizeof(geo) - used)
                break;
            used += (size_t)w;
        }
        snprintf(P->title, sizeof(P->title), "%s: %s KV class %s",
                 json_string_value(json_object_get(doc, "endpoint"))
                     ? json_string_value(json_object_get(doc, "endpoint"))
                     : "calibration",
                 json_string_value(json_object_get(doc, "engine"))
                     ? json_string_value(json_object_get(doc, "engine"))
                     : "",
                 klass ? klass : "?");
        snprintf(P->note, sizeof(P->note),
                 "%lld solutions; fitted on max_model_len %s; whiskers: every solution's "
                 "prediction",
                 (long long)num(k, "solutions"), geo[0] ? geo : "?");
        P->se[0] = (struct sw_chart_series){.name = "printed", .n = P->n, .y = P->printed};
        P->se[1] = (struct sw_chart_series){
            .name = "fit / prediction", .n = P->n, .y = P->fit, .lo = P->lo, .hi = P->hi};
        ch[np] = (struct sw_chart){.kind = SW_CHART_BARS,
                                   .title = P->title,
                                   .note = P->note,
                                   .x_label = "boot (#id, seqs x max_model_len, pool) or "
                                              "prediction (max_model_len, pool)",
                                   .y_label = "GPU KV cache tokens",
                                   .categories = P->cat,
                                   .n_categories = P->n,
                                   .series = P->se,
                                   .n_series = 2,
                                   .y_from_zero = true};
        np++;
    }
    if (!np)
        rc = sw_err_set(e, SW_ENOENT, "no KV class with boots to chart (%s)",
                        json_string_value(json_object_get(doc, "endpoint"))
                            ? json_string_value(json_object_get(doc, "endpoint"))
                            : "?");
    else
        rc = sw_chart_write_svg(ch, np, path, e);
    sw_free(pn);
    return rc;
}
