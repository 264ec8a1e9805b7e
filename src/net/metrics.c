/*
 * Parsing a Prometheus text-format page (exposition format 0.0.4, what llama-server, vLLM and
 * SGLang serve on /metrics) into samples with their labels, plus the family types from "# TYPE".
 * Then small readers on top: a sample by name and label, a sum over label sets, which engine's
 * names the page uses, and vLLM's spec-decode acceptance per draft position.
 *
 * Bounded: a line of at most SW_OAI_METRIC_LINE_MAX bytes, SW_OAI_LABELS_MAX labels per sample,
 * SW_OAI_SAMPLES_MAX samples. Errors name the line and column.
 *
 * What it deliberately does not do: OpenMetrics exemplars, histograms as objects (buckets stay
 * plain samples named *_bucket with an "le" label), or any rate computation across scrapes.
 */
#include <slipway/openai.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void sw_openai_metrics_free(struct sw_openai_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        struct sw_openai_sample *s = &m->v[i];
        sw_free(s->name);
        for (size_t k = 0; k < s->nlabels; k++) {
            sw_free(s->labels[k].name);
            sw_free(s->labels[k].value);
        }
        sw_free(s->labels);
    }
    sw_free(m->v);
    for (size_t i = 0; i < m->nfam; i++) {
        sw_free(m->fam[i].name);
        sw_free(m->fam[i].type);
    }
    sw_free(m->fam);
    memset(m, 0, sizeof(*m));
}

struct cur {
    const char *p, *end, *line0;
    int line;
    struct sw_err *e;
};

static int perr(struct cur *c, const char *fmt, ...) SW_PRINTF(2, 3);
static int perr(struct cur *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sw_err_at(c->e, SW_EPARSE, "/metrics", c->line, (int)(c->p - c->line0) + 1, "%s", msg);
}

static void skip_ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static bool name_char(char ch, bool first, bool colon)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_')
        return true;
    if (colon && ch == ':')
        return true;
    return !first && ch >= '0' && ch <= '9';
}

/* A metric (colon allowed) or label name; NULL and an error when there is none. */
static char *read_name(struct cur *c, bool colon, const char *what)
{
    const char *s = c->p;
    while (c->p < c->end && name_char(*c->p, c->p == s, colon))
        c->p++;
    if (c->p == s) {
        perr(c, "expected a %s", what);
        return NULL;
    }
    char *n = sw_strndup(s, (size_t)(c->p - s));
    if (!n)
        sw_err_set(c->e, SW_ENOMEM, "out of memory");
    return n;
}

static char *read_label_value(struct cur *c)
{
    if (c->p >= c->end || *c->p != '"') {
        perr(c, "expected %s", "'\"' opening a label value");
        return NULL;
    }
    c->p++;
    struct sw_buf b;
    sw_buf_init(&b, SW_OAI_METRIC_LINE_MAX);
    int rc = 0;
    while (c->p < c->end && *c->p != '"' && !rc) {
        char ch = *c->p++;
        if (ch == '\\') {
            if (c->p >= c->end)
                break;
            char esc = *c->p++;
            ch = esc == 'n' ? '\n' : esc; /* \\ and \" stand for themselves */
        }
        rc = sw_buf_putc(&b, ch);
    }
    if (rc) {
        sw_buf_free(&b);
        sw_err_set(c->e, rc, "out of memory");
        return NULL;
    }
    if (c->p >= c->end) {
        sw_buf_free(&b);
        perr(c, "%s", "unterminated label value");
        return NULL;
    }
    c->p++;
    char *v = sw_buf_steal(&b);
    if (!v)
        sw_err_set(c->e, SW_ENOMEM, "out of memory");
    return v;
}

static int parse_value(struct cur *c, double *out)
{
    const char *s = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t')
        c->p++;
    size_t n = (size_t)(c->p - s);
    char tok[64];
    if (n == 0 || n >= sizeof(tok)) {
        c->p = s;
        return perr(c, "%s", "expected a sample value");
    }
    memcpy(tok, s, n);
    tok[n] = '\0';
    if (!strcmp(tok, "NaN") || !strcmp(tok, "nan")) {
        *out = NAN;
        return 0;
    }
    if (!strcmp(tok, "+Inf") || !strcmp(tok, "Inf") || !strcmp(tok, "inf")) {
        *out = INFINITY;
        return 0;
    }
    if (!strcmp(tok, "-Inf") || !strcmp(tok, "-inf")) {
        *out = -INFINITY;
        return 0;
    }
    char *endp = NULL;
    double v = strtod(tok, &endp);
    if (!endp || *endp || endp == tok ||
        (tok[0] != '-' && tok[0] != '+' && tok[0] != '.' && (tok[0] < '0' || tok[0] > '9'))) {
        c->p = s;
        return perr(c, "not a number: %s", tok);
    }
    *out = v;
    return 0;
}

static int add_family(struct sw_openai_metrics *m, struct cur *c)
{
    /* "# TYPE name type" (c->p after "TYPE") */
    skip_ws(c);
    char *name = read_name(c, true, "metric name after # TYPE");
    if (!name)
        return c->e ? c->e->code : SW_EPARSE;
    skip_ws(c);
    const char *t = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t')
        c->p++;
    char *type = sw_strndup(t, (size_t)(c->p - t));
    if (m->nfam >= SW_OAI_SAMPLES_MAX) {
        sw_free(name);
        sw_free(type);
        return sw_err_set(c->e, SW_ERANGE, "more than %u metric families", SW_OAI_SAMPLES_MAX);
    }
    struct sw_openai_family *nf = type ? sw_realloc(m->fam, (m->nfam + 1) * sizeof(*nf)) : NULL;
    if (!nf) {
        sw_free(name);
        sw_free(type);
        return sw_err_set(c->e, SW_ENOMEM, "out of memory");
    }
    m->fam = nf;
    m->fam[m->nfam].name = name;
    m->fam[m->nfam].type = type;
    m->nfam++;
    return 0;
}

static void free_sample(struct sw_openai_sample *s)
{
    sw_free(s->name);
    for (size_t k = 0; k < s->nlabels; k++) {
        sw_free(s->labels[k].name);
        sw_free(s->labels[k].value);
    }
    sw_free(s->labels);
}

static int parse_sample(struct sw_openai_metrics *m, struct cur *c, size_t *cap)
{
    struct sw_openai_sample s;
    memset(&s, 0, sizeof(s));
    int rc = 0;
    s.name = read_name(c, true, "metric name");
    if (!s.name)
        return c->e ? c->e->code : SW_EPARSE;
    skip_ws(c);
    if (c->p < c->end && *c->p == '{') {
        c->p++;
        for (;;) {
            skip_ws(c);
            if (c->p < c->end && *c->p == '}') {
                c->p++;
                break;
            }
            if (s.nlabels >= SW_OAI_LABELS_MAX) {
                rc = sw_err_at(c->e, SW_ERANGE, "/metrics", c->line, 1,
                               "more than %u labels on one sample", SW_OAI_LABELS_MAX);
                goto fail;
            }
            struct sw_openai_label *nl = sw_realloc(s.labels, (s.nlabels + 1) * sizeof(*nl));
            if (!nl) {
                rc = sw_err_set(c->e, SW_ENOMEM, "out of memory");
                goto fail;
            }
            s.labels = nl;
            struct sw_openai_label *l = &s.labels[s.nlabels];
            l->value = NULL;
            l->name = read_name(c, false, "label name");
            if (!l->name) {
                rc = c->e ? c->e->code : SW_EPARSE;
                goto fail;
            }
            s.nlabels++;
            skip_ws(c);
            if (c->p >= c->end || *c->p != '=') {
                rc = perr(c, "expected %s", "'=' after a label name");
                goto fail;
            }
            c->p++;
            skip_ws(c);
            l->value = read_label_value(c);
            if (!l->value) {
                rc = c->e ? c->e->code : SW_EPARSE;
                goto fail;
            }
            skip_ws(c);
            if (c->p < c->end && *c->p == ',') {
                c->p++;
                continue;
            }
            if (c->p < c->end && *c->p == '}') {
                c->p++;
                break;
            }
            rc = perr(c, "expected %s", "',' or '}' after a label");
            goto fail;
        }
    }
    skip_ws(c);
    rc = parse_value(c, &s.value);
    if (rc)
        goto fail;
    skip_ws(c);
    if (c->p < c->end) {
        const char *t = c->p;
        while (c->p < c->end && *c->p != ' ' && *c->p != '\t')
            c->p++;
        char tok[32];
        size_t n = (size_t)(c->p - t);
        if (n >= sizeof(tok)) {
            c->p = t;
            rc = perr(c, "%s", "timestamp too long");
            goto fail;
        }
        memcpy(tok, t, n);
        tok[n] = '\0';
        if (sw_parse_i64(tok, &s.ts_ms, NULL)) {
            c->p = t;
            rc = perr(c, "bad timestamp %s", tok);
            goto fail;
        }
        s.has_ts = true;
        skip_ws(c);
        if (c->p < c->end) {
            rc = perr(c, "%s", "unexpected text after the timestamp");
            goto fail;
        }
    }
    if (m->n >= SW_OAI_SAMPLES_MAX) {
        rc = sw_err_set(c->e, SW_ERANGE, "more than %u samples", SW_OAI_SAMPLES_MAX);
        goto fail;
    }
    if (sw_grow(&m->v, cap, m->n, sizeof(*m->v), SIZE_MAX)) {
        rc = sw_err_set(c->e, SW_ENOMEM, "out of memory");
        goto fail;
    }
    m->v[m->n++] = s;
    return 0;
fail:
    free_sample(&s);
    return rc ? rc : SW_EPARSE;
}

int sw_openai_metrics_parse(const char *text, size_t len, struct sw_openai_metrics *out,
                            struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    struct sw_err local;
    if (!e)
        e = &local;
    sw_err_clear(e);
    size_t cap = 0;
    int rc = 0;
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, text, len, SW_OAI_METRIC_LINE_MAX, SW_LINES_CRLF);
    while (!rc && sw_lines_next(&it, &ln)) {
        struct cur c = {.p = ln.s, .end = ln.s + ln.len, .line0 = ln.s, .line = it.no, .e = e};
        skip_ws(&c);
        if (c.p < c.end && *c.p == '#') {
            c.p++;
            skip_ws(&c);
            if (c.end - c.p >= 5 && !memcmp(c.p, "TYPE", 4) && (c.p[4] == ' ' || c.p[4] == '\t')) {
                c.p += 4;
                rc = add_family(out, &c);
            }
            /* HELP and other comments carry nothing we use */
        } else if (c.p < c.end) {
            rc = parse_sample(out, &c, &cap);
        }
    }
    if (!rc && it.over)
        rc = sw_err_at(e, SW_ERANGE, "/metrics", it.no, 1, "a line longer than %u bytes",
                       SW_OAI_METRIC_LINE_MAX);
    if (rc)
        sw_openai_metrics_free(out);
    return rc;
}

const char *sw_openai_sample_label(const struct sw_openai_sample *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return NULL;
}

const struct sw_openai_sample *sw_openai_metrics_get(const struct sw_openai_metrics *m,
                                                     const char *name, const char *label,
                                                     const char *value)
{
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->v[i].name, name))
            continue;
        if (!label)
            return &m->v[i];
        const char *v = sw_openai_sample_label(&m->v[i], label);
        if (v && (!value || !strcmp(v, value)))
            return &m->v[i];
    }
    return NULL;
}

double sw_openai_metrics_sum(const struct sw_openai_metrics *m, const char *name)
{
    double sum = 0;
    bool any = false;
    for (size_t i = 0; i < m->n; i++) {
        if (!strcmp(m->v[i].name, name)) {
            sum += m->v[i].value;
            any = true;
        }
    }
    return any ? sum : NAN;
}

const char *sw_openai_metrics_type(const struct sw_openai_metrics *m, const char *name)
{
    for (size_t i = 0; i < m->nfam; i++)
        if (!strcmp(m->fam[i].name, name))
            return m->fam[i].type;
    return NULL;
}

enum sw_openai_engine sw_openai_metrics_engine(const struct sw_openai_metrics *m)
{
    static const char *const prefix[] = {NULL, "llamacpp:", "vllm:", "sglang:"};
    size_t count[4] = {0};
    for (size_t i = 0; i < m->n; i++)
        for (int g = 1; g < 4; g++)
            if (!strncmp(m->v[i].name, prefix[g], strlen(prefix[g])))
                count[g]++;
    int best = 0;
    for (int g = 1; g < 4; g++)
        if (count[g] > count[best])
            best = g;
    return (enum sw_openai_engine)best;
}

const char *sw_openai_engine_name(enum sw_openai_engine g)
{
    static const char *const names[] = {"unknown", "llamacpp", "vllm", "sglang"};
    return (unsigned)g < SW_ARRAY_LEN(names) ? names[g] : "unknown";
}

int sw_openai_metrics_spec_accept(const struct sw_openai_metrics *m, double *rates, size_t max,
                                  size_t *npos)
{
    *npos = 0;
    /* prometheus_client exposes a Counter named X as X_total */
    double drafts = sw_openai_metrics_sum(m, "vllm:spec_decode_num_drafts_total");
    const char *per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
    if (isnan(drafts)) {
        drafts = sw_openai_metrics_sum(m, "vllm:spec_decode_num_drafts");
        per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos";
    }
    if (isnan(drafts) || drafts <= 0)
        return SW_ENOENT;
    for (size_t i = 0; i < max; i++)
        rates[i] = 0;
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->v[i].name, per_pos))
            continue;
        const char *pos = sw_openai_sample_label(&m->v[i], "position");
        uint64_t p = 0;
        if (!pos || sw_parse_u64(pos, &p, NULL) || p >= max || p > 1024)
            continue;
        rates[p] += m->v[i].value;
        if (p + 1 > n)
            n = (size_t)p + 1;
    }
    if (!n)
        return SW_ENOENT;
    for (size_t i = 0; i < n; i++)
        rates[i] /= drafts;
    *npos = n;
    return 0;
}
