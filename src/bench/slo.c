/*
 * bench/slo: the SLOs a run declares for goodput (`--slo ttft=2s,tpot=50ms,e2e=30s`): read from
 * text, written back as text for the report, and held against one request.
 *
 * What it does not do: choose an SLO (none is declared unless asked), or judge a run by them
 * (goodput counts the good requests; nothing fails).
 */
#include <slipway/bench.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One NAME=DURATION item (NUL-terminated, its '=' at eq) into o. */
static int slo_item(char *t, char *eq, struct sw_bench_opts *o, struct sw_err *e)
{
    const struct {
        const char *name;
        double *s;
    } names[] = {{"ttft", &o->slo_ttft_s}, {"tpot", &o->slo_tpot_s}, {"e2e", &o->slo_e2e_s}};
    int64_t ms;
    struct sw_err pe;
    *eq = '\0';
    if (sw_parse_duration_ms(eq + 1, &ms, &pe))
        return sw_err_set(e, SW_EINVAL, "--slo: %s", pe.msg);
    if (ms <= 0 || ms > 86400000)
        return sw_err_set(e, SW_EINVAL, "--slo %s: must be more than 0 and at most a day", eq + 1);
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++) {
        if (!strcmp(t, names[i].name)) {
            *names[i].s = (double)ms / 1000.0;
            return 0;
        }
    }
    return sw_err_set(e, SW_EINVAL, "--slo %s: ttft, tpot or e2e", t);
}

int sw_bench_slo_parse(const char *s, struct sw_bench_opts *o, struct sw_err *e)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            return sw_err_set(e, SW_EINVAL, "--slo %s: NAME=DURATION (ttft, tpot, e2e)", t);
        int rc = slo_item(t, eq, o, e);
        if (rc)
            return rc;
    }
    return 0;
}

void sw_bench_slo_text(const struct sw_bench_opts *o, char *out, size_t n)
{
    char a[40] = "", b[40] = "", c[40] = "";
    if (o->slo_ttft_s > 0)
        snprintf(a, sizeof(a), "ttft<=%gms ", o->slo_ttft_s * 1e3);
    if (o->slo_tpot_s > 0)
        snprintf(b, sizeof(b), "tpot<=%gms ", o->slo_tpot_s * 1e3);
    if (o->slo_e2e_s > 0)
        snprintf(c, sizeof(c), "e2e<=%gms ", o->slo_e2e_s * 1e3);
    snprintf(out, n, "%s%s%s", a, b, c);
    size_t l = strlen(out);
    if (l)
        out[l - 1] = '\0';
}

bool sw_bench_slo_good(const struct sw_bench_opts *o, const struct sw_bench_sample *s)
{
    return !s->rc && (!(o->slo_ttft_s > 0) || s->ttft_s <= o->slo_ttft_s) &&
           (!(o->slo_tpot_s > 0) || (isfinite(s->tpot_s) && s->tpot_s <= o->slo_tpot_s)) &&
           (!(o->slo_e2e_s > 0) || s->e2e_s <= o->slo_e2e_s);
}
