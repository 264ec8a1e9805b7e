/*
 * report/render: the fleet document (collect.c) as people read it: Markdown for the operator's
 * docs, one self-contained HTML page (inline CSS and SVG: no script, no font, no network), and
 * the budget of an endpoint as stacked bars, one per device, the free-memory band drawn over
 * each bar where the used memory must end.
 *
 * Every figure printed is one of the document's, formatted; nothing is computed here but sums
 * for the layout.
 *
 * What it deliberately does not do: decide anything (a figure outside its band is shown as such,
 * the gates judge it), fetch or embed anything outside the page.
 */
#include "report_internal.h"

#include <inttypes.h>
#include <string.h>

int sw__rep_esc(struct sw_buf *b, const char *s)
{
    return sw_buf_html(b, s, s ? strlen(s) : 0);
}

static const char *js(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int64_t ji(const json_t *o, const char *k)
{
    return (int64_t)json_integer_value(json_object_get(o, k));
}

/* "21,684" MiB of a byte count, rounded to the nearest MiB. */
static const char *mib(int64_t bytes, char *out, size_t n)
{
    return sw_fmt_count(bytes > 0 ? ((uint64_t)bytes + SW_MIB / 2) >> 20 : 0, out, n);
}

/* "106.8" / "3,814": a rate as measured (whole numbers with separators). */
static const char *rate(const json_t *v, char *out, size_t n)
{
    if (json_is_array(v)) {
        size_t o = 0, i;
        json_t *x;
        out[0] = 0;
        json_array_foreach(v, i, x)
        {
            char t[32];
            int w = snprintf(out + o, n - o, "%s%s", i ? " / " : "", rate(x, t, sizeof(t)));
            if (w < 0 || (size_t)w >= n - o)
                break;
            o += (size_t)w;
        }
        return out;
    }
    if (!json_is_number(v))
        return snprintf(out, n, "-"), out;
    double d = json_number_value(v);
    if (d == (double)(int64_t)d && d >= 0)
        return sw_fmt_count((uint64_t)d, out, n);
    snprintf(out, n, "%.6g", d); /* as measured: 106.8, 39.38 */
    return out;
}

static const char *const parts[] = {"weights", "kv", "state", "compute", "arena", "other"};
static const char *const colors[] = {"#4e79a7", "#f28e2b", "#e15759",
                                     "#76b7b2", "#59a14f", "#b07aa1"};
static const char *const part_label[] = {"weights", "KV", "state", "compute", "arena", "other"};

static int64_t part_bytes(const json_t *dev, const char *part)
{
    size_t i;
    json_t *p;
    int64_t s = 0;
    json_array_foreach(json_object_get(dev, "parts"), i, p)
    {
        const char *n = js(p, "part");
        if (n && !strcmp(n, part))
            s += ji(p, "bytes");
    }
    return s;
}

/* ---------------------------------------------------------------------------------------------
 * SVG
 */
int sw_report_budget_svg(const json_t *ep, struct sw_buf *b, struct sw_err *e)
{
    const json_t *devs = json_object_get(json_object_get(ep, "budget"), "devices");
    size_t nd = json_array_size(devs);
    const double W = 760, L = 110, R = 20, BAR = 26, GAP = 22, TOP = 30;
    char t1[32], t2[32], t3[32];
    int rc = 0;
    if (!nd)
        return sw_err_set(e, SW_EINVAL, "%s: no device budget to draw",
                          js(ep, "name") ? js(ep, "name") : "?");
    double H = TOP + (double)nd * (BAR + GAP) + 40;
    rc = sw_buf_printf(b,
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"budget\" "
                       "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                       "font-family=\"sans-serif\" font-size=\"12\" role=\"img\">"
                       "<title>",
                       W, H, W, H);
    if (!rc)
        rc = sw__rep_esc(b, js(ep, "name"));
    if (!rc)
        rc = sw_buf_printf(b, ": budget per device (MiB)</title>"
                              "<text x=\"4\" y=\"16\" font-weight=\"bold\">");
    if (!rc)
        rc = sw__rep_esc(b, js(ep, "name"));
    if (!rc)
        rc = sw_buf_puts(b, ": budget per device, MiB (the band: where the used memory must "
                            "end)</text>");
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d)
    {
        if (rc)
            break;
        double cap = (double)ji(d, "capacity");
        if (!(cap > 0))
            continue;
        double y = TOP + (double)i * (BAR + GAP), x = L, sc = (W - L - R) / cap;
        rc = sw_buf_printf(b, "<text x=\"4\" y=\"%.1f\">", y + BAR / 2 + 4);
        if (!rc)
            rc = sw__rep_esc(b, js(d, "name"));
        if (!rc)
            rc = sw_buf_printf(b,
                               "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                               "fill=\"#eeeeee\" stroke=\"#999\"/>",
                               L, y, W - L - R, BAR);
        for (size_t k = 0; k < SW_ARRAY_LEN(parts) && !rc; k++) {
            int64_t v = part_bytes(d, parts[k]);
            if (v <= 0)
                continue;
            double w = (double)v * sc;
            rc = sw_buf_printf(b,
                               "<rect class=\"part\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                               "height=\"%.1f\" fill=\"%s\"><title>%s %s MiB</title></rect>",
                               x, y, w, BAR, colors[k], part_label[k], mib(v, t1, sizeof(t1)));
            if (!rc && w > 44)
                rc = sw_buf_printf(b,
                                   "<text x=\"%.1f\" y=\"%.1f\" fill=\"#fff\" font-size=\"10\">"
                                   "%s</text>",
                                   x + 3, y + BAR / 2 + 4, part_label[k]);
            x += w;
        }
        const json_t *band = json_object_get(d, "band");
        double bmin = (double)ji(band, "min"), bmax = (double)ji(band, "max");
        double usable = (double)ji(d, "usable");
        if (!(usable > 0))
            usable = cap;
        /* the used memory must end between usable - max and usable - min */
        double bx0 = L + (usable - bmax) * sc, bx1 = L + (usable - bmin) * sc;
        if (!rc && bx1 > bx0)
            rc = sw_buf_printf(b,
                               "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                               "height=\"%.1f\" fill=\"none\" stroke=\"#000\" "
                               "stroke-dasharray=\"4 3\"><title>band: %s..%s MiB free</title>"
                               "</rect>",
                               bx0, y - 3, bx1 - bx0, BAR + 6, mib((int64_t)bmin, t1, sizeof(t1)),
                               mib((int64_t)bmax, t2, sizeof(t2)));
        const json_t *fr = json_object_get(d, "free");
        if (!rc)
            rc = sw_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", L, y + BAR + 14);
        if (!rc && json_is_integer(fr))
            rc =
                sw_buf_printf(b, "free %s of %s MiB%s", mib(ji(d, "free"), t1, sizeof(t1)),
                              mib((int64_t)cap, t2, sizeof(t2)),
                              json_is_true(json_object_get(d, "in_band"))    ? " (inside the band)"
                              : json_is_false(json_object_get(d, "in_band")) ? " (OUTSIDE the band)"
                                                                             : "");
        else if (!rc)
            rc = sw_buf_printf(b, "free: unknown; capacity %s MiB",
                               mib((int64_t)cap, t3, sizeof(t3)));
        if (!rc)
            rc = sw_buf_puts(b, "</text>");
    }
    /* legend */
    double lx = L, ly = H - 14;
    for (size_t k = 0; k < SW_ARRAY_LEN(parts) && !rc; k++) {
        rc = sw_buf_printf(b,
                           "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                           "<text x=\"%.1f\" y=\"%.1f\">%s</text>",
                           lx, ly - 9, colors[k], lx + 13, ly, part_label[k]);
        lx += 80;
    }
    if (!rc)
        rc = sw_buf_printf(b,
                           "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" "
                           "fill=\"none\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>"
                           "<text x=\"%.1f\" y=\"%.1f\">band</text></svg>",
                           lx, ly - 9, lx + 17, ly);
    return rc ? sw_err_set(e, rc, "out of memory drawing the budget") : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Text shared by both views: one endpoint's lines.
 */
struct view {
    struct sw_buf *b;
    bool html;
};

/* A cell or inline text, from the fleet, the ledger or a server: HTML-escaped, or Markdown with
 * HTML and Markdown's own characters escaped and line breaks made spaces (sw_buf_md: a ledger
 * note holding <script> or <img onerror=...> stays text in a Markdown viewer too). */
static int txt(struct view *v, const char *s)
{
    if (!s)
        s = "-";
    if (v->html)
        return sw__rep_esc(v->b, s);
    return sw_buf_md(v->b, s, strlen(s));
}

static int put(struct view *v, const char *s)
{
    return sw_buf_puts(v->b, s);
}

static int h2(struct view *v, const char *title, const char *sub)
{
    int rc = put(v, v->html ? "<h2>" : "\n## ");
    if (!rc)
        rc = txt(v, title);
    if (!rc && sub) {
        rc = put(v, " (");
        if (!rc)
            rc = txt(v, sub);
        if (!rc)
            rc = put(v, ")");
    }
    return rc ? rc : put(v, v->html ? "</h2>\n" : "\n\n");
}

static int h3(struct view *v, const char *title)
{
    int rc = put(v, v->html ? "<h3>" : "\n### ");
    if (!rc)
        rc = txt(v, title);
    return rc ? rc : put(v, v->html ? "</h3>\n" : "\n\n");
}

/* A "- key: value" line (an <li>). */
static int item(struct view *v, const char *key, const char *val)
{
    int rc = put(v, v->html ? "<li><b>" : "- **");
    if (!rc)
        rc = txt(v, key);
    if (!rc)
        rc = put(v, v->html ? "</b>: " : "**: ");
    if (!rc)
        rc = txt(v, val);
    return rc ? rc : put(v, v->html ? "</li>\n" : "\n");
}

static int row(struct view *v, const char *const *cells, size_t n, bool head)
{
    int rc = put(v, v->html ? "<tr>" : "|");
    for (size_t i = 0; i < n && !rc; i++) {
        rc = put(v, v->html ? (head ? "<th>" : "<td>") : " ");
        if (!rc)
            rc = txt(v, cells[i]);
        if (!rc)
            rc = put(v, v->html ? (head ? "</th>" : "</td>") : " |");
    }
    if (!rc)
        rc = put(v, v->html ? "</tr>\n" : "\n");
    if (!rc && head && !v->html) {
        rc = put(v, "|");
        for (size_t i = 0; i < n && !rc; i++)
            rc = put(v, "---|");
        if (!rc)
            rc = put(v, "\n");
    }
    return rc;
}

/* A table begun with its head row. */
static int table_open(struct view *v, const char *const *head, size_t n)
{
    int rc = v->html ? put(v, "<table>\n") : 0;
    return rc ? rc : row(v, head, n, true);
}

static int table_close(struct view *v)
{
    return put(v, v->html ? "</table>\n" : "\n");
}

static int budget_table(struct view *v, const json_t *ep)
{
    const json_t *bud = json_object_get(ep, "budget");
    const json_t *devs = json_object_get(bud, "devices");
    char c[12][48];
    const char *cells[12];
    int rc = h3(v, "Budget per device (MiB)");
    if (!rc && v->html && json_array_size(devs)) {
        rc = sw_report_budget_svg(ep, v->b, NULL);
        if (!rc)
            rc = put(v, "\n");
    }
    if (!rc && !json_array_size(devs)) {
        rc = put(v, v->html ? "<p>" : "");
        if (!rc)
            rc = txt(v, js(bud, "why") ? js(bud, "why") : "no device budget");
        return rc ? rc : put(v, v->html ? "</p>\n" : "\n");
    }
    static const char *const head[] = {"device", "capacity", "weights", "KV",
                                       "state",  "compute",  "arena",   "other",
                                       "free",   "band",     "in band", "free is"};
    if (!rc)
        rc = table_open(v, head, 12);
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d)
    {
        if (rc)
            break;
        const json_t *band = json_object_get(d, "band"), *ib = json_object_get(d, "in_band");
        char b1[24], b2[24];
        cells[0] = js(d, "name");
        cells[1] = mib(ji(d, "capacity"), c[1], sizeof(c[1]));
        for (size_t k = 0; k < SW_ARRAY_LEN(parts); k++) {
            int64_t x = part_bytes(d, parts[k]);
            cells[2 + k] = x > 0 ? mib(x, c[2 + k], sizeof(c[2 + k])) : "-";
        }
        cells[8] =
            json_is_integer(json_object_get(d, "free")) ? mib(ji(d, "free"), c[8], 48) : "unknown";
        snprintf(c[9], sizeof(c[9]), "%s..%s", mib(ji(band, "min"), b1, sizeof(b1)),
                 mib(ji(band, "max"), b2, sizeof(b2)));
        cells[9] = c[9];
        cells[10] = json_is_true(ib) ? "yes" : json_is_false(ib) ? "NO" : "-";
        cells[11] = js(d, "free_how");
        rc = row(v, cells, 12, false);
    }
    if (!rc)
        rc = table_close(v);
    json_array_foreach(devs, i, d)
    {
        if (rc || !json_is_integer(json_object_get(d, "arena_slots")))
            continue;
        char line[256], key[96], a[32];
        double gib = (double)part_bytes(d, "arena") / (double)SW_GIB;
        snprintf(line, sizeof(line), "%.2f GiB / %s slots of %.3f MiB", gib,
                 sw_fmt_count((uint64_t)ji(d, "arena_slots"), a, sizeof(a)),
                 (double)ji(d, "arena_slot_bytes") / (double)SW_MIB);
        snprintf(key, sizeof(key), "expert arena on %s", js(d, "name") ? js(d, "name") : "?");
        rc = put(v, v->html ? "<ul>" : "");
        if (!rc)
            rc = item(v, key, line);
        if (!rc)
            rc = put(v, v->html ? "</ul>\n" : "");
    }
    json_array_foreach(devs, i, d)
    {
        const json_t *m = json_object_get(d, "measured");
        if (rc || !json_is_object(m))
            continue;
        char line[256], a[32], b[32], cc[32];
        snprintf(line, sizeof(line), "%s used / %s free of %s MiB (usage reading #%lld, %s)",
                 mib(ji(m, "used"), a, sizeof(a)),
                 json_is_integer(json_object_get(m, "free")) ? mib(ji(m, "free"), b, sizeof(b))
                                                             : "-",
                 mib(ji(m, "total"), cc, sizeof(cc)), (long long)ji(m, "usage_id"),
                 js(m, "source") ? js(m, "source") : "?");
        char key[96];
        snprintf(key, sizeof(key), "measured on %s", js(d, "name") ? js(d, "name") : "?");
        rc = put(v, v->html ? "<ul>" : "");
        if (!rc)
            rc = item(v, key, line);
        if (!rc)
            rc = put(v, v->html ? "</ul>\n" : "");
    }
    return rc;
}

static int known_bad_table(struct view *v, const json_t *ep)
{
    const json_t *kb = json_object_get(ep, "known_bad");
    int rc = h3(v, "Known-bad shapes");
    if (!rc && !json_array_size(kb))
        return put(v, v->html ? "<p>none recorded</p>\n" : "none recorded\n");
    static const char *const head[] = {"shape", "why", "from"};
    if (!rc)
        rc = table_open(v, head, 3);
    size_t i;
    json_t *x;
    json_array_foreach(kb, i, x)
    {
        if (rc)
            break;
        const char *cells[3] = {js(x, "what"), js(x, "why"), js(x, "source")};
        rc = row(v, cells, 3, false);
    }
    return rc ? rc : table_close(v);
}

/* "; WAIVED until DATE (FILE:LINE): REASON" after a line the fleet waives (EXPIRED when past). */
static void waived_note(char *line, size_t n, const json_t *w)
{
    size_t l = strlen(line);
    if (!json_is_object(w) || l >= n)
        return;
    snprintf(line + l, n - l, "; %s until %s (%s:%lld): %s",
             json_is_true(json_object_get(w, "expired")) ? "WAIVER EXPIRED" : "WAIVED",
             js(w, "until") ? js(w, "until") : "", js(w, "file") ? js(w, "file") : "",
             (long long)ji(w, "line"), js(w, "reason") ? js(w, "reason") : "");
}

static int harness_lines(struct view *v, const json_t *ep)
{
    const json_t *h = json_object_get(ep, "harness");
    char line[512], a[32], b[32], c[32], d[32];
    int rc = h3(v, "Harness contract");
    if (!rc)
        rc = put(v, v->html ? "<ul>\n" : "");
    const json_t *cw = json_object_get(h, "contextWindow"),
                 *conf = json_object_get(h, "configured");
    if (json_is_integer(cw))
        snprintf(line, sizeof(line), "%s tokens (%s)%s%s%s",
                 sw_fmt_count((uint64_t)json_integer_value(cw), a, sizeof(a)),
                 js(h, "window_source") ? js(h, "window_source") : "",
                 json_is_integer(conf) ? "; the harness is configured with " : "",
                 json_is_integer(conf)
                     ? sw_fmt_count((uint64_t)json_integer_value(conf), b, sizeof(b))
                     : "",
                 !json_is_integer(conf) ? "; the harness configures no window for it"
                 : json_is_true(json_object_get(h, "matches")) ? ": matches"
                 : json_is_true(json_object_get(h, "fits"))    ? ": fits, but is smaller"
                                                               : ": EXCEEDS the window (HTTP 400)");
    else
        snprintf(line, sizeof(line), "unknown (%s)",
                 js(h, "window_source") ? js(h, "window_source") : "");
    waived_note(line, sizeof(line), json_object_get(h, "waiver"));
    if (!rc)
        rc = item(v, "contextWindow", line);
    static const char *const kinds[] = {"reasoning", "tools"};
    for (size_t k = 0; k < 2 && !rc; k++) {
        const json_t *s = json_object_get(h, kinds[k]);
        if (!json_is_object(s))
            continue;
        snprintf(line, sizeof(line), "%s%s%s (%s)",
                 json_is_true(json_object_get(s, "enabled")) ? "on" : "off",
                 js(s, "parser") ? ", parser " : "", js(s, "parser") ? js(s, "parser") : "",
                 js(s, "flag") ? js(s, "flag") : "");
        rc = item(v, kinds[k], line);
    }
    const json_t *comp = json_object_get(h, "compaction");
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(comp, "requests"), i, q)
    {
        if (rc)
            break;
        snprintf(line, sizeof(line),
                 "%s x %.2f + %s summary budget = %s tokens %s one window of %s",
                 sw_fmt_count((uint64_t)ji(q, "context_window"), a, sizeof(a)),
                 json_number_value(json_object_get(comp, "ratio")),
                 sw_fmt_count((uint64_t)ji(comp, "summary_budget"), b, sizeof(b)),
                 sw_fmt_count((uint64_t)ji(q, "request_tokens"), c, sizeof(c)),
                 json_is_true(json_object_get(q, "fits")) ? "fit" : "DO NOT FIT",
                 sw_fmt_count((uint64_t)ji(comp, "window"), d, sizeof(d)));
        waived_note(line, sizeof(line), json_object_get(q, "waiver"));
        rc = item(v, "compaction request", line);
    }
    return rc ? rc : put(v, v->html ? "</ul>\n" : "");
}

/* Decode (and prefill) by context depth, one series per bench run and concurrency that measured
 * several depths (the document's grid), as one core line chart inlined in the page (its XML
 * declaration dropped). 0 and nothing drawn when no run and concurrency has two depths. */
static int speed_chart(struct view *v, const json_t *ep)
{
    enum { MAXS = 8, MAXP = 64 };
    struct sw_chart_series ser[MAXS];
    double xs[MAXS][MAXP], ys[MAXS][MAXP];
    char names[MAXS][80];
    size_t ns = 0;
    const json_t *grid = json_object_get(json_object_get(ep, "measured"), "grid");
    static const char *const keys[] = {"decode_tok_s", "prefill_tok_s"};
    size_t i, j;
    json_t *r, *q;
    json_array_foreach(grid, i, r)
    {
        json_int_t run = ji(r, "run"), conc = ji(r, "concurrency");
        bool first = true;
        /* the first row of its (run, concurrency) starts the group */
        json_array_foreach(grid, j, q)
        {
            if (j >= i)
                break;
            if (ji(q, "run") == run && ji(q, "concurrency") == conc)
                first = false;
        }
        for (size_t k = 0; first && k < 2 && ns < MAXS; k++) {
            size_t n = 0;
            json_array_foreach(grid, j, q)
            {
                const json_t *y = json_object_get(q, keys[k]);
                if (ji(q, "run") != run || ji(q, "concurrency") != conc || !json_is_number(y) ||
                    !json_is_integer(json_object_get(q, "depth")) || n >= MAXP)
                    continue;
                xs[ns][n] = (double)ji(q, "depth");
                ys[ns][n] = json_number_value(y);
                n++;
            }
            if (n < 2)
                continue;
            snprintf(names[ns], sizeof(names[ns]), "run #%lld x%lld %s%s", (long long)run,
                     (long long)conc, k ? "prefill" : "decode",
                     json_is_true(json_object_get(r, "deployed_shape")) ? "" : " (another shape)");
            ser[ns] = (struct sw_chart_series){.name = names[ns], .n = n, .x = xs[ns], .y = ys[ns]};
            ns++;
        }
    }
    if (!ns || !v->html)
        return 0;
    char title[192];
    snprintf(title, sizeof(title), "%s: measured speed by context depth (ledger bench runs)",
             js(ep, "name") ? js(ep, "name") : "?");
    struct sw_chart c = {.kind = SW_CHART_LINES,
                         .title = title,
                         .x_label = "context tokens",
                         .y_label = "tokens per second",
                         .series = ser,
                         .n_series = ns,
                         .y_from_zero = true};
    struct sw_buf svg;
    sw_buf_init(&svg, 8u << 20);
    int rc = sw_chart_svg(&c, 1, &svg, NULL);
    if (!rc) {
        const char *t = sw_buf_cstr(&svg), *start = strstr(t, "<svg");
        rc = start ? sw_buf_puts(v->b, start) : SW_EINVAL;
    }
    sw_buf_free(&svg);
    return rc == SW_EINVAL ? 0 : rc; /* nothing finite to draw: no chart */
}

/* The tags in one line: the last-good, how many rollback tags, how many cannot be restored. */
static const char *tags_line(const json_t *ep, char *line, size_t n)
{
    const json_t *t = json_object_get(ep, "tags");
    if (!json_is_object(t)) {
        snprintf(line, n, "unknown: no ledger");
        return line;
    }
    const json_t *lg = json_object_get(t, "last_good");
    size_t nrb = json_array_size(json_object_get(t, "rollback"));
    if (!ji(t, "count")) {
        snprintf(line, n, "none: no deploy of this endpoint committed a tag");
        return line;
    }
    snprintf(line, n,
             "last-good %s; %zu rollback tag%s, %lld of the kept tags CANNOT be restored%s%s",
             js(lg, "name") ? js(lg, "name") : "none", nrb, nrb == 1 ? "" : "s",
             (long long)ji(t, "unrestorable"), js(t, "unchecked_why") ? "; restorability " : "",
             js(t, "unchecked_why") ? js(t, "unchecked_why") : "");
    return line;
}

static const char *restarts_line(const json_t *ep, char *line, size_t n)
{
    const json_t *r = json_object_get(ep, "restarts");
    if (!json_is_object(r)) {
        snprintf(line, n, "unknown: no ledger");
        return line;
    }
    const json_t *last = json_object_get(r, "last");
    char tail[160] = "";
    if (json_is_object(last))
        snprintf(tail, sizeof(tail), "; last in attempt #%lld at %s",
                 (long long)ji(last, "attempt"), js(last, "at") ? js(last, "at") : "?");
    const json_t *bt = json_object_get(r, "between_deploys");
    char between[240];
    if (json_is_object(bt))
        snprintf(between, sizeof(between),
                 "; between deploys: NRestarts %lld at the last look (status #%lld at %s, %s/%s%s)",
                 (long long)ji(bt, "n_restarts"), (long long)ji(bt, "observation"),
                 js(bt, "observed") ? js(bt, "observed") : "?",
                 js(bt, "active") ? js(bt, "active") : "?", js(bt, "sub") ? js(bt, "sub") : "?",
                 json_is_false(json_object_get(bt, "after_last_deploy"))
                     ? "; before the last deploy"
                     : "");
    else
        snprintf(between, sizeof(between),
                 "; between deploys: never looked (`slipway status --record`)");
    snprintf(line, n,
             "%lld seen by %lld deploy attempt%s (%lld crash loop%s, %lld rolled back)%s%s",
             (long long)ji(r, "restarts_seen"), (long long)ji(r, "attempts"),
             ji(r, "attempts") == 1 ? "" : "s", (long long)ji(r, "crash_loops"),
             ji(r, "crash_loops") == 1 ? "" : "s", (long long)ji(r, "rolled_back"), tail, between);
    return line;
}

/* watch's account in one line: the state now and since when, and what it did. */
static const char *watch_line(const json_t *ep, char *line, size_t n)
{
    const json_t *w = json_object_get(ep, "watch");
    if (!json_is_object(w)) {
        snprintf(line, n, "unknown: no ledger");
        return line;
    }
    if (!ji(w, "rows")) {
        snprintf(line, n, "never watched (`slipway watch`)");
        return line;
    }
    const json_t *al = json_object_get(w, "alerts"), *jb = json_object_get(w, "jobs");
    snprintf(line, n,
             "%s since %s; %lld change%s of state, %lld restart%s, %lld rollback%s, %lld "
             "refusal%s; alerts %lld delivered, %lld failed; jobs %lld (%lld not ok, %lld missed)",
             js(w, "state") ? js(w, "state") : "no state recorded",
             js(w, "since") ? js(w, "since") : "?", (long long)ji(w, "changes"),
             ji(w, "changes") == 1 ? "" : "s", (long long)ji(w, "restarts"),
             ji(w, "restarts") == 1 ? "" : "s", (long long)ji(w, "rollbacks"),
             ji(w, "rollbacks") == 1 ? "" : "s", (long long)ji(w, "refused"),
             ji(w, "refused") == 1 ? "" : "s", (long long)ji(al, "delivered"),
             (long long)ji(al, "failed"), (long long)ji(jb, "runs"), (long long)ji(jb, "not_ok"),
             (long long)ji(jb, "missed"));
    return line;
}

/* watch's newest rows: changes of state, restarts, rollbacks, alerts, jobs. */
static int watch_table(struct view *v, const json_t *ep)
{
    const json_t *hist = json_object_get(json_object_get(ep, "watch"), "history");
    if (!json_array_size(hist))
        return 0;
    int rc = h3(v, "Status history (slipway watch, newest first)");
    /* each column is the row's string field of the same name; "-" where it has none */
    static const char *const head[] = {"at", "kind", "state", "action", "outcome", "detail"};
    rc = rc ? rc : table_open(v, head, 6);
    for (size_t i = 0; !rc && i < json_array_size(hist); i++) {
        const json_t *x = json_array_get(hist, i);
        const char *cells[6];
        for (size_t k = 0; k < 6; k++)
            cells[k] = js(x, head[k]) ? js(x, head[k]) : "-";
        rc = row(v, cells, 6, false);
    }
    return rc ? rc : table_close(v);
}

/* One row per tag: the last-good first, then the rollback tags, then the retired ones. */
static int tags_table(struct view *v, const json_t *ep)
{
    const json_t *t = json_object_get(ep, "tags");
    if (!json_is_object(t) || !ji(t, "count"))
        return 0;
    int rc = h3(v, "Tags (last-good, rollback)");
    static const char *const head[] = {"tag", "role", "created", "shape", "restorable", "why"};
    if (!rc)
        rc = table_open(v, head, 6);
    const json_t *groups[3] = {json_object_get(t, "last_good"), json_object_get(t, "rollback"),
                               json_object_get(t, "retired")};
    for (size_t g = 0; g < 3 && !rc; g++) {
        size_t n = g ? json_array_size(groups[g]) : json_is_object(groups[0]) ? 1 : 0;
        for (size_t i = 0; i < n && !rc; i++) {
            const json_t *x = g ? json_array_get(groups[g], i) : groups[0];
            const json_t *r = json_object_get(x, "restorable");
            char why[1024], shape[320];
            snprintf(shape, sizeof(shape), "%s [%.12s]", js(x, "summary") ? js(x, "summary") : "-",
                     js(x, "shape_hash") ? js(x, "shape_hash") : "");
            size_t o = (size_t)snprintf(why, sizeof(why), "%s",
                                        js(x, "restorable_why") ? js(x, "restorable_why") : "");
            size_t k;
            const json_t *m;
            json_array_foreach(json_object_get(x, "missing"), k, m)
            {
                if (o >= sizeof(why))
                    break;
                o += (size_t)snprintf(why + o, sizeof(why) - o, "%s%s", k ? ", " : "; missing: ",
                                      json_string_value(m) ? json_string_value(m) : "?");
            }
            if (g == 2 && o < sizeof(why))
                snprintf(why + o, sizeof(why) - o, "; retired %s: %s",
                         js(x, "retired") ? js(x, "retired") : "?",
                         js(x, "retired_why") ? js(x, "retired_why") : "?");
            const char *cells[6] = {js(x, "name"),
                                    g == 0 ? "last-good" : g == 1 ? "rollback" : "retired",
                                    js(x, "created"),
                                    shape,
                                    json_is_null(r) ? "unknown" : json_is_true(r) ? "yes" : "NO",
                                    why};
            rc = row(v, cells, 6, false);
        }
    }
    return rc ? rc : table_close(v);
}

/* Decode and prefill by depth and concurrency, one row per measured point (docs/report.md). */
static int speed_table(struct view *v, const json_t *ep)
{
    const json_t *grid = json_object_get(json_object_get(ep, "measured"), "grid");
    if (!json_array_size(grid))
        return 0;
    int rc = h3(v, "Measured speed by depth and concurrency (ledger bench runs)");
    static const char *const head[] = {"run",          "depth (tokens)",      "concurrency",
                                       "decode tok/s", "summed decode tok/s", "prefill t/s",
                                       "shape"};
    if (!rc)
        rc = table_open(v, head, 7);
    size_t i;
    json_t *x;
    json_array_foreach(grid, i, x)
    {
        if (rc)
            break;
        char a[32], b[32], c[32], d[32], f[32], g[32];
        const json_t *dp = json_object_get(x, "depth"), *cc = json_object_get(x, "concurrency");
        snprintf(a, sizeof(a), "#%lld", (long long)ji(x, "run"));
        if (json_is_integer(dp))
            sw_fmt_count((uint64_t)json_integer_value(dp), b, sizeof(b));
        else
            snprintf(b, sizeof(b), "-");
        if (json_is_integer(cc))
            snprintf(c, sizeof(c), "%lld", (long long)json_integer_value(cc));
        else
            snprintf(c, sizeof(c), "-");
        const char *cells[7] = {
            a,
            b,
            c,
            rate(json_object_get(x, "decode_tok_s"), d, sizeof(d)),
            rate(json_object_get(x, "summed_decode_tok_s"), f, sizeof(f)),
            rate(json_object_get(x, "prefill_tok_s"), g, sizeof(g)),
            json_is_true(json_object_get(x, "deployed_shape")) ? "deployed" : "another shape"};
        rc = row(v, cells, 7, false);
    }
    return rc ? rc : table_close(v);
}

static int endpoint_view(struct view *v, const json_t *ep)
{
    char line[1024], sub[256], a[32], b[32], c[32];
    const json_t *w = json_object_get(ep, "window"), *m = json_object_get(ep, "measured");
    const json_t *pay = json_object_get(ep, "payload"), *bat = json_object_get(ep, "battery");
    snprintf(sub, sizeof(sub), "%s on %s%s", js(ep, "engine") ? js(ep, "engine") : "?",
             js(ep, "host") ? js(ep, "host") : "?",
             json_is_true(json_object_get(ep, "enabled")) ? "" : "; disabled, kept for the record");
    int rc = put(v, v->html ? "<section class=\"endpoint\">\n" : "");
    if (!rc)
        rc = h2(v, js(ep, "name"), sub);
    if (!rc)
        rc = put(v, v->html ? "<ul>\n" : "");
    snprintf(line, sizeof(line), "%s%s%s (quant %s; revision %s)",
             js(pay, "path")   ? js(pay, "path")
             : js(pay, "repo") ? js(pay, "repo")
                               : "-",
             js(pay, "gguf") ? "/" : "", js(pay, "gguf") ? js(pay, "gguf") : "",
             js(pay, "quant") ? js(pay, "quant") : "-",
             js(pay, "revision") ? js(pay, "revision") : "not pinned");
    if (!rc)
        rc = item(v, "payload", line);
    if (!rc && js(ep, "image"))
        rc = item(v, "image", js(ep, "image"));
    snprintf(line, sizeof(line), "%s [%.12s]",
             js(ep, "shape_summary") ? js(ep, "shape_summary") : "-",
             js(ep, "shape_hash") ? js(ep, "shape_hash") : "");
    if (!rc)
        rc = item(v, "shape", line);
    if (!rc && js(ep, "plan_error"))
        rc = item(v, "plan", js(ep, "plan_error"));
    if (json_is_object(w)) {
        char conc[48] = "";
        if (json_is_number(json_object_get(w, "concurrency")))
            snprintf(conc, sizeof(conc), " (%.2fx of a full request)",
                     json_number_value(json_object_get(w, "concurrency")));
        snprintf(line, sizeof(line), "pool %s tokens%s, %s per conversation x %s slots (%s)",
                 json_is_integer(json_object_get(w, "pool_tokens"))
                     ? sw_fmt_count((uint64_t)ji(w, "pool_tokens"), a, sizeof(a))
                     : "unknown",
                 conc, sw_fmt_count((uint64_t)ji(w, "per_conversation"), b, sizeof(b)),
                 sw_fmt_count((uint64_t)ji(w, "slots"), c, sizeof(c)), js(w, "source"));
        if (!rc)
            rc = item(v, "window", line);
    }
    char r1[128], r2[128], ctx[128];
    snprintf(line, sizeof(line), "%s tok/s decode%s%s%s, %s t/s prefill (%s)",
             rate(json_object_get(m, "decode_tok_s"), r1, sizeof(r1)),
             json_is_array(json_object_get(m, "context_tokens")) ? " at " : "",
             json_is_array(json_object_get(m, "context_tokens"))
                 ? rate(json_object_get(m, "context_tokens"), ctx, sizeof(ctx))
                 : "",
             json_is_array(json_object_get(m, "context_tokens")) ? " tokens of context" : "",
             rate(json_object_get(m, "prefill_tok_s"), r2, sizeof(r2)), js(m, "source"));
    if (!rc)
        rc = item(v, "measured", line);
    if (json_is_object(bat))
        snprintf(line, sizeof(line), "%s (%lld passed, %lld failed, %lld skipped; run #%lld at %s)",
                 js(bat, "verdict"), (long long)ji(bat, "passed"), (long long)ji(bat, "failed"),
                 (long long)ji(bat, "skipped"), (long long)ji(bat, "id"),
                 js(bat, "started_at") ? js(bat, "started_at") : "an unrecorded time");
    else
        snprintf(line, sizeof(line), "none recorded in the ledger");
    if (!rc)
        rc = item(v, "last battery", line);
    if (!rc)
        rc = item(v, "tags (last-good, rollback)", tags_line(ep, line, sizeof(line)));
    if (!rc)
        rc = item(v, "restarts", restarts_line(ep, line, sizeof(line)));
    if (!rc)
        rc = item(v, "watch", watch_line(ep, line, sizeof(line)));
    if (!rc)
        rc = put(v, v->html ? "</ul>\n" : "");
    if (!rc)
        rc = speed_chart(v, ep);
    if (!rc)
        rc = speed_table(v, ep);
    if (!rc)
        rc = budget_table(v, ep);
    if (!rc)
        rc = tags_table(v, ep);
    if (!rc)
        rc = watch_table(v, ep);
    if (!rc)
        rc = known_bad_table(v, ep);
    if (!rc)
        rc = harness_lines(v, ep);
    const json_t *ch = json_object_get(ep, "changes");
    if (!rc && json_is_array(ch)) {
        rc = h3(v, "Changed since");
        if (!rc)
            rc = put(v, v->html ? "<ul>\n" : "");
        size_t i;
        json_t *x;
        json_array_foreach(ch, i, x)
        {
            if (rc)
                break;
            snprintf(line, sizeof(line), "%s #%lld", js(x, "kind"), (long long)ji(x, "id"));
            rc = item(v, js(x, "at"), line);
        }
        if (!rc && !json_array_size(ch))
            rc = item(v, "nothing", "no ledger row recorded since then");
        if (!rc)
            rc = put(v, v->html ? "</ul>\n" : "");
    }
    if (!rc && v->html)
        rc = put(v, "</section>\n");
    return rc;
}

static int views(const json_t *doc, struct view *v)
{
    int rc = 0;
    size_t i;
    json_t *ep;
    json_array_foreach(json_object_get(doc, "endpoints"), i, ep)
    {
        rc = endpoint_view(v, ep);
        if (rc)
            break;
    }
    return rc;
}

int sw_report_markdown(const json_t *doc, struct sw_buf *out, struct sw_err *e)
{
    struct view v = {out, false};
    int rc = sw_buf_puts(out, "# Fleet report: ");
    if (!rc)
        rc = txt(&v, js(doc, "fleet"));
    if (!rc)
        rc = sw_buf_puts(out, "\n\nWritten by `slipway report` from the fleet file, each "
                              "endpoint's plan and the ledger (");
    if (!rc)
        rc = txt(&v, js(doc, "ledger") ? js(doc, "ledger") : "no ledger");
    if (!rc && js(doc, "since")) {
        rc = sw_buf_puts(out, "; changes since ");
        if (!rc)
            rc = txt(&v, js(doc, "since"));
    }
    if (!rc)
        rc = sw_buf_puts(out, "). Do not edit: run it again.\n");
    if (!rc)
        rc = views(doc, &v);
    return rc ? sw_err_set(e, rc, "out of memory writing the report") : 0;
}

int sw_report_html(const json_t *doc, struct sw_buf *out, struct sw_err *e)
{
    struct view v = {out, true};
    int rc = sw_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                              "<title>Fleet report</title><style>"
                              "body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}"
                              "table{border-collapse:collapse;margin:.5em 0}"
                              "td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px;"
                              "text-align:left;vertical-align:top}"
                              "td{overflow-wrap:anywhere}th{background:#f2f2f2}section{border-top:"
                              "2px solid #444;margin-top:2em}"
                              "</style></head><body>\n<h1>Fleet report: ");
    if (!rc)
        rc = txt(&v, js(doc, "fleet"));
    if (!rc)
        rc = sw_buf_puts(out, "</h1>\n<p>Written by <code>slipway report</code> from the fleet "
                              "file, each endpoint's plan and the ledger (");
    if (!rc)
        rc = txt(&v, js(doc, "ledger") ? js(doc, "ledger") : "no ledger");
    if (!rc)
        rc = sw_buf_puts(out, ").</p>\n");
    if (!rc)
        rc = views(doc, &v);
    if (!rc)
        rc = sw_buf_puts(out, "</body></html>\n");
    return rc ? sw_err_set(e, rc, "out of memory writing the report") : 0;
}
