/*
 * A terminal progress bar: bar (or a counter when the total is unknown), rate and ETA, redrawn at
 * most ten times a second on stderr, and only when stderr is a terminal unless forced.
 */
#include <slipway/core.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sw_progress_init(struct sw_progress *p, const char *label, const char *unit, uint64_t total)
{
    memset(p, 0, sizeof(*p));
    p->label = label ? label : "";
    p->unit = unit ? unit : "";
    p->total = total;
    p->t0 = sw_now_s();
    p->last_draw = 0;
    p->out = stderr;
    p->enabled = isatty(STDERR_FILENO) && !getenv("SLIPWAY_NO_PROGRESS");
}

void sw_progress_force(struct sw_progress *p, bool enabled, FILE *out)
{
    p->enabled = enabled;
    if (out)
        p->out = out;
}

static void fmt_amount(const struct sw_progress *p, double v, char *out, size_t n)
{
    if (!strcmp(p->unit, "B"))
        sw_fmt_bytes((uint64_t)v, out, n);
    else
        snprintf(out, n, "%.0f%s%s", v, p->unit[0] ? " " : "", p->unit);
}

static void draw(struct sw_progress *p, bool final)
{
    double now = sw_now_s();
    double el = now - p->t0;
    double rate = el > 0 ? (double)p->done / el : 0;
    char done[32], tot[32], rt[32], eta[32] = "";
    fmt_amount(p, (double)p->done, done, sizeof(done));
    fmt_amount(p, rate, rt, sizeof(rt));
    if (p->total) {
        int width = 30;
        double frac = (double)p->done / (double)p->total;
        if (frac > 1)
            frac = 1;
        int fill = (int)(frac * width);
        char bar[64];
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '-';
        bar[width] = '\0';
        fmt_amount(p, (double)p->total, tot, sizeof(tot));
        if (!final && rate > 0 && p->done < p->total) {
            double left = (double)(p->total - p->done) / rate;
            snprintf(eta, sizeof(eta), " ETA %dm%02ds", (int)(left / 60), (int)left % 60);
        }
        fprintf(p->out, "\r%s [%s] %3.0f%% %s/%s %s/s%s\x1b[K", p->label, bar, frac * 100, done,
                tot, rt, eta);
    } else {
        fprintf(p->out, "\r%s %s %s/s %.1fs\x1b[K", p->label, done, rt, el);
    }
    if (final)
        fputc('\n', p->out);
    fflush(p->out);
    p->last_draw = now;
}

void sw_progress_update(struct sw_progress *p, uint64_t done)
{
    p->done = done;
    if (!p->enabled)
        return;
    if (sw_now_s() - p->last_draw < 0.1)
        return;
    draw(p, false);
}

void sw_progress_finish(struct sw_progress *p)
{
    if (p->enabled)
        draw(p, true);
}
