/*
 * core/chart: small SVG charts for results people compare (probe speeds at context depths, a
 * calibration's intervals against printed boots, benchmark rates).
 *
 * A chart is one or more panels stacked vertically, each a line chart (numeric x, points joined
 * per series, optional lo..hi whiskers) or a grouped bar chart (categories on x, optional
 * whiskers). Axes get "nice" ticks (1, 2, 5 x 10^k); a non-finite value is a gap, not a point.
 * Every piece of text is XML-escaped. The file is written through sw_write_file_atomic: a reader
 * sees the old chart or the new one, never half of one.
 *
 * What it deliberately does not do: logarithmic axes, stacked bars, interactivity, or fonts
 * beyond the viewer's sans-serif.
 */
#include <slipway/core.h>

#include <math.h>
#include <string.h>

#define W        760.0
#define PANEL_H  330.0
#define ML       84.0 /* left margin: y tick labels and the y label */
#define MR       24.0
#define MT       44.0 /* title */
#define MB       74.0 /* x tick labels (two lines), x label, legend */
#define LEGEND_H 22.0

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

static int esc(struct sw_buf *b, const char *s)
{
    int rc = 0;
    for (; s && *s && !rc; s++) {
        switch (*s) {
        case '&':
            rc = sw_buf_printf(b, "&amp;");
            break;
        case '<':
            rc = sw_buf_printf(b, "&lt;");
            break;
        case '>':
            rc = sw_buf_printf(b, "&gt;");
            break;
        case '"':
            rc = sw_buf_printf(b, "&quot;");
            break;
        default:
            /* control characters are not allowed in XML 1.0 text */
            rc = sw_buf_append(b, (unsigned char)*s < 0x20 ? " " : s, 1);
        }
    }
    return rc;
}

/* A tick step of 1, 2 or 5 x 10^k giving about `want` intervals over span. */
static double nice_step(double span, int want)
{
    if (!(span > 0) || !isfinite(span))
        return 1;
    double raw = span / want, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* 12,345 / 1.5 / 0.25 / 3.2e+09: short and readable. */
static void tick_label(double v, double step, char *out, size_t n)
{
    double a = fabs(v);
    if (a >= 1e7 || (a > 0 && a < 1e-3)) {
        snprintf(out, n, "%.3g", v);
    } else if (step >= 1 && fabs(v - round(v)) < 1e-9) {
        long long x = llround(v);
        char d[32];
        snprintf(d, sizeof(d), "%lld", x < 0 ? -x : x);
        size_t len = strlen(d), o = 0;
        if (x < 0 && o + 1 < n)
            out[o++] = '-';
        for (size_t i = 0; i < len && o + 2 < n; i++) {
            if (i && (len - i) % 3 == 0)
                out[o++] = ',';
            out[o++] = d[i];
        }
        out[o] = '\0';
    } else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step));
        snprintf(out, n, "%.*f", dec > 6 ? 6 : dec, v);
    }
}

/* The i-th tick from lo: by index, not by accumulating the step (no drift, no "-0.0"). */
static double tick(double lo, double step, long i)
{
    double v = lo + (double)i * step;
    return fabs(v) < step * 1e-9 ? 0 : v;
}

struct range {
    double lo, hi;
    bool any;
};

static void widen(struct range *r, double v)
{
    if (!isfinite(v))
        return;
    if (!r->any) {
        r->lo = r->hi = v;
        r->any = true;
        return;
    }
    if (v < r->lo)
        r->lo = v;
    if (v > r->hi)
        r->hi = v;
}

/* The axis over [r.lo, r.hi] (from zero when asked), padded to whole ticks. */
static void axis(struct range r, bool from_zero, double *lo, double *hi, double *step)
{
    if (from_zero) {
        if (r.lo > 0)
            r.lo = 0;
        if (r.hi < 0)
            r.hi = 0;
    }
    if (r.hi - r.lo <= 0) {
        double pad = r.hi != 0 ? fabs(r.hi) * 0.1 : 1;
        r.lo -= from_zero && r.lo == 0 ? 0 : pad;
        r.hi += pad;
    }
    *step = nice_step(r.hi - r.lo, 5);
    *lo = floor(r.lo / *step) * *step;
    *hi = ceil(r.hi / *step) * *step;
    if (*hi - *lo < *step)
        *hi = *lo + *step;
}

static int check(const struct sw_chart *c, struct sw_err *e)
{
    if (!c->n_series || !c->series)
        return sw_err_set(e, SW_EINVAL, "chart \"%s\": no series", c->title ? c->title : "");
    if (c->n_series > SW_ARRAY_LEN(palette))
        return sw_err_set(e, SW_ERANGE, "chart \"%s\": %zu series, at most %zu",
                          c->title ? c->title : "", c->n_series, SW_ARRAY_LEN(palette));
    if (c->kind == SW_CHART_BARS && (!c->n_categories || !c->categories))
        return sw_err_set(e, SW_EINVAL, "chart \"%s\": bars need categories",
                          c->title ? c->title : "");
    bool any = false;
    for (size_t s = 0; s < c->n_series; s++) {
        const struct sw_chart_series *se = &c->series[s];
        if (se->n && !se->y)
            return sw_err_set(e, SW_EINVAL, "chart \"%s\": series %zu has no y values",
                              c->title ? c->title : "", s);
        if (c->kind == SW_CHART_LINES && se->n && !se->x)
            return sw_err_set(e, SW_EINVAL, "chart \"%s\": series %zu has no x values",
                              c->title ? c->title : "", s);
        if (c->kind == SW_CHART_BARS && se->n > c->n_categories)
            return sw_err_set(e, SW_ERANGE,
                              "chart \"%s\": series %zu has %zu values for %zu "
                              "categories",
                              c->title ? c->title : "", s, se->n, c->n_categories);
        for (size_t i = 0; i < se->n; i++)
            if (isfinite(se->y[i]) && (c->kind == SW_CHART_BARS || isfinite(se->x[i])))
                any = true;
    }
    if (!any)
        return sw_err_set(e, SW_EINVAL, "chart \"%s\": no finite value to draw",
                          c->title ? c->title : "");
    return 0;
}

/* A panel's frame: the plot area in pixels and the axes over it. */
struct frame {
    const struct sw_chart *c;
    double top;
    double pl, pr, pt, pb; /* plot area: left, right, top, bottom */
    double x0, x1, xs, y0, y1, ys;
};

static double px(const struct frame *f, double v)
{
    return f->pl + (v - f->x0) / (f->x1 - f->x0) * (f->pr - f->pl);
}

static double py(const struct frame *f, double v)
{
    return f->pb - (v - f->y0) / (f->y1 - f->y0) * (f->pb - f->pt);
}

/* The axes over every finite value (whiskers too) of the panel at top. */
static void frame_of(const struct sw_chart *c, double top, struct frame *f)
{
    struct range xr = {0}, yr = {0};
    for (size_t s = 0; s < c->n_series; s++) {
        const struct sw_chart_series *se = &c->series[s];
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->y[i]))
                continue;
            if (c->kind == SW_CHART_LINES) {
                if (!isfinite(se->x[i]))
                    continue;
                widen(&xr, se->x[i]);
            }
            widen(&yr, se->y[i]);
            if (se->lo)
                widen(&yr, se->lo[i]);
            if (se->hi)
                widen(&yr, se->hi[i]);
        }
    }
    f->c = c;
    f->top = top;
    f->x0 = 0;
    f->x1 = 1;
    f->xs = 1;
    axis(yr, c->y_from_zero || c->kind == SW_CHART_BARS, &f->y0, &f->y1, &f->ys);
    if (c->kind == SW_CHART_LINES)
        axis(xr, c->x_from_zero, &f->x0, &f->x1, &f->xs);
    f->pl = ML;
    f->pr = W - MR;
    f->pt = top + MT;
    f->pb = top + PANEL_H - MB;
}

/* The title and the note above the plot. */
static int draw_title(const struct frame *f, struct sw_buf *b)
{
    const struct sw_chart *c = f->c;
    int rc = 0;
    rc |= sw_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" font-weight=\"bold\">",
                        f->pl, f->top + 24);
    rc |= esc(b, c->title);
    rc |= sw_buf_printf(b, "</text>\n");
    if (c->note) {
        rc |= sw_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">", f->pl,
                            f->top + 38);
        rc |= esc(b, c->note);
        rc |= sw_buf_printf(b, "</text>\n");
    }
    return rc;
}

/* The ticks of one axis with their labels: the y grid across the plot, or the x marks below it. */
static int draw_ticks(const struct frame *f, bool x, struct sw_buf *b)
{
    double lo = x ? f->x0 : f->y0, hi = x ? f->x1 : f->y1, step = x ? f->xs : f->ys;
    int rc = 0;
    char t[64];
    for (long i = 0, n = lround((hi - lo) / step); i <= n; i++) {
        double v = tick(lo, step, i);
        tick_label(v, step, t, sizeof(t));
        if (x)
            rc |= sw_buf_printf(b,
                                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                "stroke=\"#333\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                                "font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                                px(f, v), f->pb, px(f, v), f->pb + 4, px(f, v), f->pb + 18, t);
        else
            rc |= sw_buf_printf(b,
                                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
                                "text-anchor=\"end\">%s</text>\n",
                                f->pl, py(f, v), f->pr, py(f, v), f->pl - 6, py(f, v) + 4, t);
    }
    return rc;
}

/* The y grid with its labels, the two axis lines and the axis labels. */
static int draw_axes(const struct frame *f, struct sw_buf *b)
{
    int rc = draw_ticks(f, false, b);
    rc |= sw_buf_printf(b,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n"
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
                        f->pl, f->pb, f->pr, f->pb, f->pl, f->pt, f->pl, f->pb);
    rc |= sw_buf_printf(b,
                        "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"12\" "
                        "text-anchor=\"middle\">",
                        16.0, (f->pt + f->pb) / 2);
    rc |= esc(b, f->c->y_label);
    rc |= sw_buf_printf(b,
                        "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                        "text-anchor=\"middle\">",
                        (f->pl + f->pr) / 2, f->pb + 48);
    rc |= esc(b, f->c->x_label);
    rc |= sw_buf_printf(b, "</text>\n");
    return rc;
}

/* LINES: the x ticks, and a polyline per run of finite points of each series (a gap breaks the
 * line; every other series dashed, so lines that coincide stay both visible). */
static int draw_lines(const struct frame *f, struct sw_buf *b)
{
    const struct sw_chart *c = f->c;
    int rc = draw_ticks(f, true, b);
    for (size_t s = 0; s < c->n_series && !rc; s++) {
        const struct sw_chart_series *se = &c->series[s];
        bool open = false;
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i])) {
                if (open)
                    rc |= sw_buf_printf(b, "\"/>\n");
                open = false;
                continue;
            }
            if (!open)
                rc |= sw_buf_printf(b,
                                    "<polyline fill=\"none\" stroke-width=\"2\" "
                                    "stroke=\"%s\"%s points=\"",
                                    palette[s], s % 2 ? " stroke-dasharray=\"7 4\"" : "");
            rc |=
                sw_buf_printf(b, "%s%.1f,%.1f", open ? " " : "", px(f, se->x[i]), py(f, se->y[i]));
            open = true;
        }
        if (open)
            rc |= sw_buf_printf(b, "\"/>\n");
    }
    return rc;
}

/* A category's label under its bars: its lines (split at '\n', at most 3) stacked. */
static int draw_category(const struct frame *f, const char *lab, double cx, struct sw_buf *b)
{
    int rc = sw_buf_printf(b, "<text font-size=\"11\" text-anchor=\"middle\">");
    struct sw_lines it;
    sw_lines_init(&it, lab, strlen(lab), SIZE_MAX, 0);
    for (int line = 0; line < 3; line++) {
        /* an empty label, or one ending in LF, still draws its (empty) last line */
        struct sw_line ln = {"", 0, false};
        (void)sw_lines_next(&it, &ln);
        char part[256];
        snprintf(part, sizeof(part), "%.*s", (int)(ln.len < 255 ? ln.len : 255), ln.s);
        rc |= sw_buf_printf(b, "<tspan x=\"%.1f\" y=\"%.1f\">", cx, f->pb + 16 + 12 * line);
        rc |= esc(b, part);
        rc |= sw_buf_printf(b, "</tspan>");
        if (!ln.lf)
            break;
    }
    rc |= sw_buf_printf(b, "</text>\n");
    return rc;
}

/* BARS: per category its label and a bar per series, from zero (or the axis end nearest it). */
static int draw_bars(const struct frame *f, struct sw_buf *b)
{
    const struct sw_chart *c = f->c;
    size_t nc = c->n_categories, ns = c->n_series;
    double slot = (f->pr - f->pl) / (double)nc, bw = slot * 0.8 / (double)ns;
    int rc = 0;
    char t[64];
    for (size_t k = 0; k < nc; k++) {
        double cx = f->pl + slot * ((double)k + 0.5);
        rc |= draw_category(f, c->categories[k] ? c->categories[k] : "", cx, b);
        for (size_t s = 0; s < ns; s++) {
            const struct sw_chart_series *se = &c->series[s];
            if (k >= se->n || !isfinite(se->y[k]))
                continue;
            double x = f->pl + slot * (double)k + slot * 0.1 + bw * (double)s;
            double yv = py(f, se->y[k]), yz = py(f, f->y0 > 0 ? f->y0 : (f->y1 < 0 ? f->y1 : 0));
            rc |= sw_buf_printf(b,
                                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                "fill=\"%s\"><title>",
                                x, yv < yz ? yv : yz, bw * 0.92, fabs(yz - yv), palette[s]);
            rc |= esc(b, se->name);
            tick_label(se->y[k], 0.01, t, sizeof(t));
            rc |= sw_buf_printf(b, ": %s</title></rect>\n", t);
        }
    }
    return rc;
}

/* One point of a LINES series: its circle with the value as a tooltip, and its label above. */
static int draw_point(const struct frame *f, size_t s, size_t i, double x, struct sw_buf *b)
{
    const struct sw_chart_series *se = &f->c->series[s];
    char t[64];
    int rc = 0;
    tick_label(se->y[i], 0.01, t, sizeof(t));
    rc |= sw_buf_printf(b,
                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\">"
                        "<title>",
                        x, py(f, se->y[i]), palette[s]);
    rc |= esc(b, se->name);
    rc |= sw_buf_printf(b, ": %s</title></circle>\n", t);
    if (se->labels && se->labels[i] && se->labels[i][0]) {
        rc |= sw_buf_printf(b,
                            "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" "
                            "font-size=\"11\" text-anchor=\"middle\" fill=\"%s\">",
                            x, py(f, se->y[i]) - 8, palette[s]);
        rc |= esc(b, se->labels[i]);
        rc |= sw_buf_printf(b, "</text>\n");
    }
    return rc;
}

/* Whiskers (both kinds) and points (lines). */
static int draw_marks(const struct frame *f, struct sw_buf *b)
{
    const struct sw_chart *c = f->c;
    int rc = 0;
    for (size_t s = 0; s < c->n_series && !rc; s++) {
        const struct sw_chart_series *se = &c->series[s];
        for (size_t i = 0; i < se->n; i++) {
            if (!isfinite(se->y[i]))
                continue;
            double x;
            if (c->kind == SW_CHART_LINES) {
                if (!isfinite(se->x[i]))
                    continue;
                x = px(f, se->x[i]);
            } else {
                double slot = (f->pr - f->pl) / (double)c->n_categories;
                double bw = slot * 0.8 / (double)c->n_series;
                x = f->pl + slot * (double)i + slot * 0.1 + bw * ((double)s + 0.46);
            }
            if (se->lo && se->hi && isfinite(se->lo[i]) && isfinite(se->hi[i]))
                rc |= sw_buf_printf(b,
                                    "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fh10M%.1f %.1fh10\" "
                                    "stroke=\"%s\" stroke-width=\"1.5\" fill=\"none\"/>\n",
                                    x, py(f, se->lo[i]), py(f, se->hi[i]), x - 5, py(f, se->lo[i]),
                                    x - 5, py(f, se->hi[i]),
                                    c->kind == SW_CHART_BARS ? "#000" : palette[s]);
            if (c->kind == SW_CHART_LINES)
                rc |= draw_point(f, s, i, x, b);
        }
    }
    return rc;
}

static int draw_legend(const struct frame *f, struct sw_buf *b)
{
    const struct sw_chart *c = f->c;
    int rc = 0;
    double lx = f->pl;
    for (size_t s = 0; s < c->n_series; s++) {
        rc |= sw_buf_printf(b,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
                            "fill=\"%s\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
                            lx, f->pb + 55, palette[s], lx + 16, f->pb + 65);
        rc |= esc(b, c->series[s].name);
        rc |= sw_buf_printf(b, "</text>\n");
        lx += 30 + 7.0 * (double)strlen(c->series[s].name ? c->series[s].name : "");
    }
    return rc;
}

static int panel(const struct sw_chart *c, double top, struct sw_buf *b)
{
    struct frame f;
    frame_of(c, top, &f);
    int rc = draw_title(&f, b);
    rc |= draw_axes(&f, b);
    rc |= c->kind == SW_CHART_LINES ? draw_lines(&f, b) : draw_bars(&f, b);
    if (!rc)
        rc |= draw_marks(&f, b);
    rc |= draw_legend(&f, b);
    return rc ? SW_ENOMEM : 0;
}

int sw_chart_svg(const struct sw_chart *charts, size_t n, struct sw_buf *out, struct sw_err *e)
{
    if (!n || !charts)
        return sw_err_set(e, SW_EINVAL, "no chart to draw");
    for (size_t i = 0; i < n; i++) {
        int rc = check(&charts[i], e);
        if (rc)
            return rc;
    }
    double h = PANEL_H * (double)n + LEGEND_H;
    int rc = sw_buf_printf(out,
                           "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                           "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                           "font-family=\"sans-serif\">\n"
                           "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
                           W, h, W, h);
    for (size_t i = 0; i < n && !rc; i++)
        rc = panel(&charts[i], PANEL_H * (double)i, out);
    if (!rc)
        rc = sw_buf_printf(out, "</svg>\n");
    return rc ? sw_err_set(e, SW_ENOMEM, "out of memory drawing a chart") : 0;
}

int sw_chart_write_svg(const struct sw_chart *charts, size_t n, const char *path, struct sw_err *e)
{
    struct sw_buf b;
    sw_buf_init(&b, 16u << 20);
    int rc = sw_chart_svg(charts, n, &b, e);
    if (!rc)
        rc = sw_write_file_atomic(path, b.data, b.len, 0644, e);
    sw_buf_free(&b);
    return rc;
}
