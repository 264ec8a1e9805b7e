/*
 * What a tune run is asked, read from text: the objective (`decode_tps@DEPTH`,
 * `goodput[@DEPTH][:SLO]`), the runner's name, and the options' defaults.
 *
 * What it deliberately does not do: measure an objective (tune_probe.c), or decide which runner
 * an endpoint is given (tune.c).
 */
#include <slipway/tune.h>

#include <string.h>

int sw_tune_runner_parse(const char *s, enum sw_tune_boot *b)
{
    static const char *const names[] = {"auto", "local", "sim", "rollout"};
    for (size_t i = 0; s && i < SW_ARRAY_LEN(names); i++)
        if (!strcmp(s, names[i])) {
            *b = (enum sw_tune_boot)i;
            return 0;
        }
    return SW_EINVAL;
}

void sw_tune_opts_init(struct sw_tune_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->budget_boots = 16;
    o->repeats = 3;
    o->max_concurrency = 8;
    o->tokens = 64;
}

/* The objective. */

static int parse_depth(const char *s, size_t n, int64_t *out, struct sw_err *e)
{
    char buf[32];
    uint64_t v = 0;
    if (!n || n >= sizeof(buf))
        return sw_err_set(e, SW_EINVAL, "objective: depth '%.*s' is not a token count", (int)n, s);
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (sw_parse_count(buf, &v, NULL) || v > (1u << 24))
        return sw_err_set(e, SW_EINVAL, "objective: depth '%s' is not a token count (0..16M)", buf);
    *out = (int64_t)v;
    return 0;
}

/* The SLOs an objective may state, in the order its text names them. */
static const char *const slo_names[] = {"ttft", "tpot", "e2e"};

static double *slo_field(struct sw_tune_objective *o, size_t i)
{
    double *f[] = {&o->slo_ttft_s, &o->slo_tpot_s, &o->slo_e2e_s};
    return f[i];
}

static int parse_slos(const char *s, struct sw_tune_objective *o, struct sw_err *e)
{
    char buf[128];
    if (strlen(s) >= sizeof(buf))
        return sw_err_set(e, SW_EINVAL, "objective: SLO list too long");
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        int64_t ms = 0;
        size_t i = 0;
        if (!eq)
            return sw_err_set(e, SW_EINVAL,
                              "objective: SLO '%s' is not NAME=DURATION (ttft, tpot, e2e)", t);
        *eq = '\0';
        if (sw_parse_duration_ms(eq + 1, &ms, NULL) || ms <= 0)
            return sw_err_set(e, SW_EINVAL, "objective: SLO %s: '%s' is not a duration", t, eq + 1);
        while (i < SW_ARRAY_LEN(slo_names) && strcmp(t, slo_names[i]))
            i++;
        if (i == SW_ARRAY_LEN(slo_names))
            return sw_err_set(e, SW_EINVAL, "objective: SLO '%s' is not ttft, tpot or e2e", t);
        *slo_field(o, i) = (double)ms / 1000;
    }
    return 0;
}

/* "goodput[@DEPTH][:SLO]" after its name (p), into o with its canonical text. */
static int parse_goodput(const char *s, const char *p, struct sw_tune_objective *o,
                         struct sw_err *e)
{
    int rc = 0;
    o->metric = SW_TUNE_GOODPUT;
    o->depth = 256;
    if (*p == '@') {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p - 1) : strlen(p + 1);
        rc = parse_depth(p + 1, n, &o->depth, e);
        if (rc)
            return rc;
        p = c ? c : p + 1 + n;
    }
    if (*p == ':')
        rc = parse_slos(p + 1, o, e);
    else if (*p)
        rc = sw_err_set(e, SW_EINVAL, "objective: '%s': expected :SLO after goodput", s);
    if (rc)
        return rc;
    if (!o->slo_ttft_s && !o->slo_tpot_s && !o->slo_e2e_s)
        o->slo_tpot_s = 0.1; /* a stated default: 100 ms per output token */
    size_t n = (size_t)snprintf(o->text, sizeof(o->text), "goodput@%lld:", (long long)o->depth);
    const char *sep = "";
    for (size_t i = 0; i < SW_ARRAY_LEN(slo_names) && n < sizeof(o->text); i++) {
        double v = *slo_field(o, i);
        if (!(v > 0))
            continue;
        n += (size_t)snprintf(o->text + n, sizeof(o->text) - n, "%s%s=%.0fms", sep, slo_names[i],
                              v * 1000);
        sep = ",";
    }
    return 0;
}

int sw_tune_objective_parse(const char *s, struct sw_tune_objective *o, struct sw_err *e)
{
    memset(o, 0, sizeof(*o));
    if (!s)
        return sw_err_set(e, SW_EINVAL, "objective: missing (decode_tps@DEPTH or goodput[:SLO])");
    if (!strncmp(s, "decode_tps@", 11)) {
        o->metric = SW_TUNE_DECODE_TPS;
        int rc = parse_depth(s + 11, strlen(s + 11), &o->depth, e);
        if (rc)
            return rc;
        snprintf(o->text, sizeof(o->text), "decode_tps@%lld", (long long)o->depth);
        return 0;
    }
    if (!strncmp(s, "goodput", 7) && (!s[7] || s[7] == '@' || s[7] == ':'))
        return parse_goodput(s, s + 7, o, e);
    return sw_err_set(e, SW_EINVAL,
                      "objective '%s' is not decode_tps@DEPTH or goodput[@DEPTH][:SLO]", s);
}
