/*
 * tune's report for people: the table (`slipway tune`) and one self-contained HTML page
 * (`--html`: inline CSS, the chart as inline SVG from core's chart, no script, no fetch).
 *
 * What it deliberately does not do: decide anything; every figure comes from the report JSON
 * sw_tune_run returned.
 */
#include "tune_internal.h"

#include <math.h>
#include <string.h>

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void fmt_num(double v, const char *unit, char *out, size_t n)
{
    if (isfinite(v))
        snprintf(out, n, "%.2f%s", v, unit);
    else
        snprintf(out, n, "-");
}

static void fmt_pct(double v, char *out, size_t n)
{
    if (isfinite(v))
        snprintf(out, n, "%+.1f%%", v * 100);
    else
        snprintf(out, n, "-");
}

/* What a probe's row says in its last column. */
static void probe_note(const json_t *p, char *out, size_t n)
{
    const char *oc = str(p, "outcome");
    if (!strcmp(oc, "rejected")) {
        const char *line = NULL;
        size_t i;
        const json_t *g;
        json_array_foreach(json_object_get(p, "gates"), i, g)
        {
            if (!line && !json_is_true(json_object_get(g, "inherited")))
                line = json_string_value(json_object_get(g, "line"));
        }
        snprintf(out, n, "gate %s: %s", str(p, "gate"), line ? line : str(p, "why"));
    } else if (!strcmp(oc, "measured") && json_array_size(json_object_get(p, "mixes"))) {
        /* per request mix: its figure at its best level */
        size_t used = 0, i;
        const json_t *mx;
        out[0] = '\0';
        json_array_foreach(json_object_get(p, "mixes"), i, mx)
        {
            if (used < n)
                used += (size_t)snprintf(out + used, n - used, "%smix %s: %.2f at c%lld",
                                         i ? ", " : "", str(mx, "mix"), num(mx, "score"),
                                         (long long)num(mx, "concurrency"));
        }
    } else if (!strcmp(oc, "measured"))
        snprintf(out, n, "concurrency %lld%s", (long long)num(p, "concurrency"),
                 json_is_true(json_object_get(p, "resumed")) ? ", from the journal" : "");
    else
        snprintf(out, n, "%s", str(p, "why"));
}

void sw_tune_print(FILE *f, const json_t *rep)
{
    char a[64], b[64], c[64], note[600];
    fprintf(f, "tune %s: %s (%s, %s)\n", str(rep, "endpoint"), str(rep, "objective"),
            str(rep, "engine"), str(rep, "boot"));
    const json_t *knobs = json_object_get(rep, "knobs");
    size_t i;
    const json_t *k;
    json_array_foreach(knobs, i, k)
    {
        fprintf(f, "  knob %-22s %-5s baseline %-10s values", str(k, "name"), str(k, "kind"),
                str(k, "baseline"));
        size_t j;
        const json_t *v;
        json_array_foreach(json_object_get(k, "values"), j, v)
            fprintf(f, " %s", json_string_value(v));
        if (json_array_size(json_object_get(k, "refined"))) {
            fprintf(f, ", refined");
            json_array_foreach(json_object_get(k, "refined"), j, v)
                fprintf(f, " %s", json_string_value(v));
        }
        if (!strcmp(str(k, "kind"), "load") && !json_array_size(json_object_get(k, "values")))
            fprintf(f, " 1, 2, 4... up to the slots (inside each boot)");
        fputc('\n', f);
    }
    fprintf(f, "  frozen:");
    json_array_foreach(json_object_get(rep, "frozen"), i, k)
        fprintf(f, " %s", json_string_value(k));
    fputc('\n', f);
    fprintf(f, "\n  %-4s %-9s %-12s %-44s %10s %7s %8s  %s\n", "seq", "phase", "outcome",
            "candidate", "score", "noise", "gain", "");
    const json_t *p;
    json_array_foreach(json_object_get(rep, "probes"), i, p)
    {
        fmt_num(num(p, "score"), "", a, sizeof(a));
        fmt_pct(num(p, "noise"), b, sizeof(b));
        fmt_pct(num(p, "gain"), c, sizeof(c));
        probe_note(p, note, sizeof(note));
        const json_t *sq = json_object_get(p, "seq");
        char seq[16];
        snprintf(seq, sizeof(seq), "%s", sq ? "" : "-");
        if (sq)
            snprintf(seq, sizeof(seq), "%lld", (long long)json_integer_value(sq));
        fprintf(f, "  %-4s %-9s %-12s %-44.44s %10s %7s %8s  %.120s\n", seq, str(p, "phase"),
                str(p, "outcome"), str(p, "candidate"), a, b[0] == '+' ? b + 1 : b, c, note);
    }
    fputc('\n', f);
    const json_t *w = json_object_get(rep, "winner");
    if (json_is_object(w)) {
        const json_t *again = json_object_get(w, "remeasured");
        const json_t *fresh = json_object_get(w, "rebaseline");
        fmt_pct(num(w, "gain"), a, sizeof(a));
        fmt_pct(num(w, "remeasured_gain"), b, sizeof(b));
        fmt_pct(isfinite(num(w, "remeasured_noise")) ? num(w, "remeasured_noise")
                                                     : fmax(num(rep, "noise"), num(w, "noise")),
                c, sizeof(c));
        fprintf(f, "  winner: %s  %s against the first baseline\n", str(w, "candidate"), a);
        char d[64], g[64];
        fmt_num(num(again, "score"), "", d, sizeof(d));
        fmt_num(num(fresh, "score"), "", g, sizeof(g));
        fprintf(f,
                "  re-measured on new boots, interleaved: winner %s against baseline %s: %s "
                "(noise %s)\n",
                d, g, b, c[0] == '+' ? c + 1 : c);
        fprintf(f, "  put in the fleet file:");
        const char *kn;
        const json_t *kv;
        json_object_foreach((json_t *)json_object_get(rep, "apply"), kn, kv)
            fprintf(f, " %s: %s", kn, json_string_value(kv));
        fputc('\n', f);
    } else {
        fprintf(f, "  no winner (%s): nothing beat the baseline by more than its noise%s\n",
                str(rep, "outcome"),
                !strcmp(str(rep, "outcome"), "dry_run") ? " (dry run: nothing booted)" : "");
    }
    const json_t *ru = json_object_get(rep, "runner_up");
    if (json_is_object(ru)) {
        fmt_pct(num(ru, "gain"), a, sizeof(a));
        fprintf(f, "  runner-up: %s  %s\n", str(ru, "candidate"), a);
    }
    fprintf(f, "  boots %lld of %lld, rejected before booting %lld, baseline noise %s\n",
            (long long)json_integer_value(json_object_get(rep, "boots")),
            (long long)json_integer_value(json_object_get(rep, "budget_boots")),
            (long long)json_integer_value(json_object_get(rep, "rejected")),
            (fmt_pct(num(rep, "noise"), a, sizeof(a)), a[0] == '+' ? a + 1 : a));
    if (json_is_integer(json_object_get(rep, "run")))
        fprintf(f, "  journal: run %lld in %s%s\n",
                (long long)json_integer_value(json_object_get(rep, "run")), str(rep, "ledger"),
                json_is_true(json_object_get(rep, "resumed")) ? " (resumed)" : "");
    const json_t *h = json_object_get(rep, "host"); /* the rollout runner's last word */
    if (json_is_object(h))
        fprintf(f, "  host left on the %s shape (tag %s)%s%s%s\n", str(h, "shape"),
                json_is_string(json_object_get(h, "tag")) ? str(h, "tag") : "none",
                json_is_true(json_object_get(h, "restored")) ? ", put back" : "",
                json_object_get(h, "why") ? ": the put-back failed: " : "", str(h, "why"));
}

/* ---------------------------------------------------------------------------------------------
 * HTML.
 */

static int esc(struct sw_buf *b, const char *s)
{
    return sw_buf_html(b, s, s ? strlen(s) : 0);
}

#define MAX_BARS 64

static int chart(const json_t *rep, struct sw_buf *b, struct sw_err *e)
{
    const char *cats[MAX_BARS];
    char names[MAX_BARS][48];
    double y[MAX_BARS], lo[MAX_BARS], hi[MAX_BARS];
    size_t n = 0, i;
    const json_t *p;
    json_array_foreach(json_object_get(rep, "probes"), i, p)
    {
        if (strcmp(str(p, "outcome"), "measured") || n >= MAX_BARS)
            continue;
        const json_t *reps = NULL;
        double mn = INFINITY, mx = -INFINITY;
        size_t li;
        const json_t *lv;
        /* the spread of the best level's repeats (a score over several request mixes, their
         * geometric mean, has no whiskers) */
        json_array_foreach(json_object_get(p, "levels"), li, lv)
        {
            if (num(lv, "concurrency") != num(p, "concurrency") || json_object_get(p, "mixes"))
                continue;
            reps = json_object_get(lv, "repeats");
        }
        size_t ri;
        const json_t *rv;
        json_array_foreach(reps, ri, rv)
        {
            if (!json_is_number(rv))
                continue;
            double v = json_number_value(rv);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        snprintf(names[n], sizeof(names[n]), "%lld %.40s",
                 (long long)json_integer_value(json_object_get(p, "seq")), str(p, "candidate"));
        cats[n] = names[n];
        y[n] = num(p, "score");
        lo[n] = isfinite(mn) ? mn : y[n];
        hi[n] = isfinite(mx) ? mx : y[n];
        n++;
    }
    if (!n)
        return sw_buf_puts(b, "<p>No probe was measured.</p>\n");
    struct sw_chart_series s = {.name = str(rep, "objective"), .n = n, .y = y, .lo = lo, .hi = hi};
    struct sw_chart c;
    memset(&c, 0, sizeof(c));
    c.kind = SW_CHART_BARS;
    c.title = "objective per measured probe (median, whiskers: min..max of the repeats)";
    c.note = "a candidate wins only when its gain over the baseline exceeds the noise";
    c.y_label = str(rep, "objective");
    c.categories = cats;
    c.n_categories = n;
    c.series = &s;
    c.n_series = 1;
    c.y_from_zero = true;
    return sw_chart_svg(&c, 1, b, e);
}

int sw_tune_html(const json_t *rep, const char *path, struct sw_err *e)
{
    struct sw_buf b;
    char a[64], c[64], d[64], note[600];
    sw_buf_init(&b, 16u << 20);
    int rc = sw_buf_puts(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tune ");
    rc = rc ? rc : esc(&b, str(rep, "endpoint"));
    rc = rc ? rc
            : sw_buf_puts(&b, "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:"
                              "1100px}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
                              "padding:3px 8px;font-size:13px}th{background:#eee}.rejected{color:"
                              "#a33}.measured{color:#262}.win{font-weight:bold}</style></head>"
                              "<body>\n<h1>tune ");
    rc = rc ? rc : esc(&b, str(rep, "endpoint"));
    rc = rc ? rc : sw_buf_puts(&b, ": ");
    rc = rc ? rc : esc(&b, str(rep, "objective"));
    rc = rc ? rc : sw_buf_puts(&b, "</h1>\n");
    const json_t *w = json_object_get(rep, "winner");
    if (!rc && json_is_object(w)) {
        fmt_pct(num(w, "gain"), a, sizeof(a));
        fmt_pct(num(w, "remeasured_gain"), c, sizeof(c));
        fmt_pct(isfinite(num(w, "remeasured_noise")) ? num(w, "remeasured_noise")
                                                     : fmax(num(rep, "noise"), num(w, "noise")),
                d, sizeof(d));
        char ws[64], bs[64];
        fmt_num(num(json_object_get(w, "remeasured"), "score"), "", ws, sizeof(ws));
        fmt_num(num(json_object_get(w, "rebaseline"), "score"), "", bs, sizeof(bs));
        rc = sw_buf_puts(&b, "<p class=\"win\">Winner: ");
        rc = rc ? rc : esc(&b, str(w, "candidate"));
        rc = rc ? rc
                : sw_buf_printf(&b,
                                " &mdash; gain %s against the first baseline; re-measured on new "
                                "boots, interleaved: %s against a fresh baseline of %s, %s, "
                                "noise %s</p>\n",
                                a, ws, bs, c, d + (d[0] == '+'));
    } else if (!rc) {
        rc = sw_buf_printf(&b, "<p class=\"win\">No winner (%s).</p>\n", str(rep, "outcome"));
    }
    const json_t *ru = json_object_get(rep, "runner_up");
    if (!rc && json_is_object(ru)) {
        fmt_pct(num(ru, "gain"), a, sizeof(a));
        rc = sw_buf_puts(&b, "<p>Runner-up: ");
        rc = rc ? rc : esc(&b, str(ru, "candidate"));
        rc = rc ? rc : sw_buf_printf(&b, " &mdash; gain %s</p>\n", a);
    }
    rc = rc ? rc
            : sw_buf_printf(&b, "<p>Boots %lld of %lld; rejected before booting %lld; frozen: ",
                            (long long)json_integer_value(json_object_get(rep, "boots")),
                            (long long)json_integer_value(json_object_get(rep, "budget_boots")),
                            (long long)json_integer_value(json_object_get(rep, "rejected")));
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(rep, "frozen"), i, p)
    {
        rc = rc ? rc : esc(&b, json_string_value(p));
        rc = rc ? rc : sw_buf_puts(&b, "; ");
    }
    rc = rc ? rc : sw_buf_puts(&b, "</p>\n");
    rc = rc ? rc : chart(rep, &b, e);
    rc = rc ? rc
            : sw_buf_puts(&b, "\n<table><tr><th>seq</th><th>phase</th><th>candidate</th><th>"
                              "outcome</th><th>score</th><th>noise</th><th>gain</th><th>"
                              "evidence</th></tr>\n");
    json_array_foreach(json_object_get(rep, "probes"), i, p)
    {
        if (rc)
            break;
        fmt_num(num(p, "score"), "", a, sizeof(a));
        fmt_pct(num(p, "noise"), c, sizeof(c));
        fmt_pct(num(p, "gain"), d, sizeof(d));
        probe_note(p, note, sizeof(note));
        rc = sw_buf_printf(&b, "<tr class=\"%s\"><td>%lld</td><td>%s</td><td>", str(p, "outcome"),
                           (long long)json_integer_value(json_object_get(p, "seq")),
                           str(p, "phase"));
        rc = rc ? rc : esc(&b, str(p, "candidate"));
        rc = rc ? rc
                : sw_buf_printf(&b, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>",
                                str(p, "outcome"), a, c + (c[0] == '+'), d);
        rc = rc ? rc : esc(&b, note);
        rc = rc ? rc : sw_buf_puts(&b, "</td></tr>\n");
    }
    rc = rc ? rc : sw_buf_puts(&b, "</table>\n</body></html>\n");
    if (rc && (!e || !e->msg[0]))
        sw_err_set(e, rc, "tune: the HTML page does not fit");
    if (!rc)
        rc = sw_write_file_atomic(path, b.data, b.len, 0644, e);
    sw_buf_free(&b);
    return rc;
}
