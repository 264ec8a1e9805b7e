/*
 * probe/chart: the speed check as an SVG people can put side by side: decode and prefill tok/s
 * at each context depth, as the client measured them and as the server's own timings say.
 *
 * Input is the report document (sw_probe_report_json, or a battery read back from the ledger),
 * so a chart can be drawn from any recorded run, not only the live one.
 */
#include <slipway/probe.h>

#include <math.h>
#include <string.h>

#define MAXD 16

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A panel of two series by prompt tokens, both axes from zero. */
static struct sw_chart lines(const char *title, const char *y_label, const char *note,
                             struct sw_chart_series *series)
{
    return (struct sw_chart){.kind = SW_CHART_LINES,
                             .title = title,
                             .note = note,
                             .x_label = "prompt tokens",
                             .y_label = y_label,
                             .series = series,
                             .n_series = 2,
                             .y_from_zero = true,
                             .x_from_zero = true};
}

int sw_probe_speed_svg(const json_t *doc, const char *path, struct sw_err *e)
{
    const json_t *speed = NULL, *c;
    size_t i;
    json_array_foreach(json_object_get(doc, "checks"), i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && !strcmp(n, "speed"))
            speed = c;
    }
    if (!speed)
        return sw_err_set(e, SW_ENOENT, "no speed check in this battery (ran with --only?)");
    const json_t *depths = json_object_get(json_object_get(speed, "data"), "depths");
    size_t n = json_array_size(depths);
    if (n == 0) {
        const char *why = json_string_value(json_object_get(speed, "reason"));
        return sw_err_set(e, SW_ENOENT, "the speed check measured no depth (%s: %s)",
                          json_string_value(json_object_get(speed, "status")),
                          why ? why : "no reason given");
    }
    if (n > MAXD)
        n = MAXD;
    double x[MAXD], dc[MAXD], ds[MAXD], pc[MAXD], ps[MAXD];
    for (i = 0; i < n; i++) {
        const json_t *d = json_array_get(depths, i);
        x[i] = num(d, "prompt_tokens");
        dc[i] = num(d, "decode_tps");
        ds[i] = num(d, "server_decode_tps");
        pc[i] = num(d, "prefill_tps");
        ps[i] = num(d, "server_prefill_tps");
    }
    const char *model = json_string_value(json_object_get(doc, "model"));
    const char *url = json_string_value(json_object_get(doc, "url"));
    char note[512];
    snprintf(note, sizeof(note), "%s%s%s", model ? model : "", model && url ? " at " : "",
             url ? url : "");
    struct sw_chart_series dec[] = {{.name = "client", .n = n, .x = x, .y = dc},
                                    {.name = "server (timings)", .n = n, .x = x, .y = ds}};
    struct sw_chart_series pre[] = {{.name = "client", .n = n, .x = x, .y = pc},
                                    {.name = "server (timings)", .n = n, .x = x, .y = ps}};
    struct sw_chart charts[2] = {
        lines("decode tok/s by context depth", "decode tok/s", note, dec),
        lines("prefill tok/s by context depth", "prefill tok/s", note, pre),
    };
    return sw_chart_write_svg(charts, 2, path, e);
}
