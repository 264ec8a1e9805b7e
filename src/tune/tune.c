/*
 * tune: the search (include/slipway/tune.h says what it is for).
 *
 * The space: the endpoint's declared knobs, each as a list of values (a set as given; a range as
 * its min, max and two points between, on its step, then refined around its best: refine()), the baseline's value read from the endpoint
 * (a shape field, an engine flag in `args`, an env variable). A candidate is the baseline with a
 * few knobs moved; its key ("batch_size=512 arg.--threads=4") names it in the journal.
 *
 * A candidate is judged on a fresh load of the fleet with its settings made on the endpoint
 * (sw_gate_set for shape fields; `args`/`env` replaced for arg./env. knobs): planned by
 * sw_plan_endpoint, gated by sw_gate_endpoint, and checked against every frozen setting (a guard:
 * nothing here moves one, and the check proves it per candidate). Only then is a boot spent.
 *
 * What it deliberately does not do: boot or measure (tune_probe.c), print (tune_report.c).
 */
#include "tune_internal.h"

#include <slipway/deploy.h>
#include <slipway/gate.h>
#include <slipway/ledger.h>
#include <slipway/rollout.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_KNOBS    24
#define MAX_VALUES   12
#define MAX_SETTINGS 8
#define MAX_CANDS    160

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

/* ---------------------------------------------------------------------------------------------
 * The objective.
 */

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
        if (!eq)
            return sw_err_set(e, SW_EINVAL,
                              "objective: SLO '%s' is not NAME=DURATION (ttft, tpot, e2e)", t);
        *eq = '\0';
        if (sw_parse_duration_ms(eq + 1, &ms, NULL) || ms <= 0)
            return sw_err_set(e, SW_EINVAL, "objective: SLO %s: '%s' is not a duration", t, eq + 1);
        if (!strcmp(t, "ttft"))
            o->slo_ttft_s = (double)ms / 1000;
        else if (!strcmp(t, "tpot"))
            o->slo_tpot_s = (double)ms / 1000;
        else if (!strcmp(t, "e2e"))
            o->slo_e2e_s = (double)ms / 1000;
        else
            return sw_err_set(e, SW_EINVAL, "objective: SLO '%s' is not ttft, tpot or e2e", t);
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
    if (!strncmp(s, "goodput", 7) && (!s[7] || s[7] == '@' || s[7] == ':')) {
        o->metric = SW_TUNE_GOODPUT;
        o->depth = 256;
        const char *p = s + 7;
        if (*p == '@') {
            const char *c = strchr(p, ':');
            size_t n = c ? (size_t)(c - p - 1) : strlen(p + 1);
            int rc = parse_depth(p + 1, n, &o->depth, e);
            if (rc)
                return rc;
            p = c ? c : p + 1 + n;
        }
        if (*p == ':') {
            int rc = parse_slos(p + 1, o, e);
            if (rc)
                return rc;
        } else if (*p) {
            return sw_err_set(e, SW_EINVAL, "objective: '%s': expected :SLO after goodput", s);
        }
        if (!o->slo_ttft_s && !o->slo_tpot_s && !o->slo_e2e_s)
            o->slo_tpot_s = 0.1; /* a stated default: 100 ms per output token */
        int n = snprintf(o->text, sizeof(o->text), "goodput@%lld:", (long long)o->depth);
        const char *sep = "";
        if (o->slo_ttft_s > 0)
            n += snprintf(o->text + n, sizeof(o->text) - (size_t)n, "%sttft=%.0fms", sep,
                          o->slo_ttft_s * 1000),
                sep = ",";
        if (o->slo_tpot_s > 0)
            n += snprintf(o->text + n, sizeof(o->text) - (size_t)n, "%stpot=%.0fms", sep,
                          o->slo_tpot_s * 1000),
                sep = ",";
        if (o->slo_e2e_s > 0)
            snprintf(o->text + n, sizeof(o->text) - (size_t)n, "%se2e=%.0fms", sep,
                     o->slo_e2e_s * 1000);
        return 0;
    }
    return sw_err_set(e, SW_EINVAL,
                      "objective '%s' is not decode_tps@DEPTH or goodput[@DEPTH][:SLO]", s);
}

/* ---------------------------------------------------------------------------------------------
 * The space.
 */

enum knob_kind { K_SHAPE, K_ARG, K_ENV, K_LOAD };

struct knob {
    const char *name; /* the fleet's (canonical) knob name */
    enum knob_kind kind;
    struct sw_fleet_at at;
    char values[MAX_VALUES][64];
    size_t nvalues;
    char baseline[64];        /* "" when the endpoint does not set it (the engine's default) */
    char kv[MAX_VALUES][160]; /* "name=value" for sw_gate_set (kept alive for the run) */
    bool is_range, is_real;   /* a range: refined around its best point (refine()) */
    double lo, hi, step;
    size_t ncoarse; /* values[0..ncoarse) are the declared ones; the rest were refined */
};

struct cand {
    int knob[MAX_SETTINGS];
    int value[MAX_SETTINGS];
    size_t n;
    char key[1024];
};

/* llama-server's short spellings of the flags people tune (an arg. knob names the long one). */
static const char *const flag_alias[][2] = {
    {"--threads", "-t"},        {"--threads-batch", "-tb"}, {"--parallel", "-np"},
    {"--batch-size", "-b"},     {"--ubatch-size", "-ub"},   {"--flash-attn", "-fa"},
    {"--ctx-size", "-c"},       {"--n-gpu-layers", "-ngl"}, {"--cache-type-k", "-ctk"},
    {"--cache-type-v", "-ctv"},
};

/* Flags and variables that would move the payload, its quantization or the image: frozen
 * always, whatever the fleet says. */
static const char *const always_frozen[] = {
    "arg.--model",        "arg.--hf-repo",
    "arg.--hf-file",      "arg.--model-url",
    "arg.--quantization", "arg.--dtype",
    "arg.--load-format",  "arg.--tokenizer",
    "arg.--revision",     "arg.--mmproj",
    "arg.--image",        "arg.--model-draft",
    "env.HF_MODEL",       NULL,
};

bool sw__tune_flag_is(const char *arg, const char *flag)
{
    if (!strcmp(arg, flag))
        return true;
    for (size_t i = 0; i < SW_ARRAY_LEN(flag_alias); i++)
        if (!strcmp(flag, flag_alias[i][0]) && !strcmp(arg, flag_alias[i][1]))
            return true;
    return false;
}

/* The value of flag in the endpoint's args ("" when absent; "on" for a flag given bare). */
void sw__tune_arg_value(const struct sw_fleet_endpoint *ep, const char *flag, char *out, size_t n)
{
    out[0] = '\0';
    size_t fl = strlen(flag);
    for (size_t i = 0; i < ep->n_args; i++) {
        const char *a = ep->args[i].v;
        if (!a)
            continue;
        if (!strncmp(a, flag, fl) && a[fl] == '=') {
            snprintf(out, n, "%s", a + fl + 1);
        } else if (sw__tune_flag_is(a, flag)) {
            const char *v = i + 1 < ep->n_args ? ep->args[i + 1].v : NULL;
            snprintf(out, n, "%s", v && v[0] != '-' ? v : "on");
        }
    }
}

void sw__tune_env_value(const struct sw_fleet_endpoint *ep, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < ep->n_env; i++)
        if (!strcmp(ep->env[i].name, name) && ep->env[i].value)
            snprintf(out, n, "%s", ep->env[i].value);
}

void sw__tune_fmt_value(const struct sw_fleet_value *v, char *out, size_t n)
{
    switch (v->type) {
    case SW_FLEET_V_COUNT:
    case SW_FLEET_V_BYTES:
        snprintf(out, n, "%llu", (unsigned long long)v->u);
        break;
    case SW_FLEET_V_REAL:
        snprintf(out, n, "%.6g", v->f);
        break;
    case SW_FLEET_V_BOOL:
        snprintf(out, n, "%s", v->b ? "true" : "false");
        break;
    default:
        snprintf(out, n, "%s", v->s ? v->s : "");
        break;
    }
}

static void add_value(struct knob *k, const char *v)
{
    for (size_t i = 0; i < k->nvalues; i++)
        if (!strcmp(k->values[i], v))
            return;
    if (k->nvalues < MAX_VALUES)
        snprintf(k->values[k->nvalues++], sizeof(k->values[0]), "%s", v);
}

/* A range as at most four points: min, a third and two thirds of the way (on the step), max. */
static void range_values(const struct sw_fleet_knob *kb, struct knob *k)
{
    char buf[64];
    struct sw_fleet_value v = kb->min;
    if (kb->type == SW_FLEET_V_REAL) {
        for (int i = 0; i <= 3; i++) {
            v.f = kb->min.f + (kb->max.f - kb->min.f) * i / 3.0;
            sw__tune_fmt_value(&v, buf, sizeof(buf));
            add_value(k, buf);
        }
        return;
    }
    uint64_t lo = kb->min.u, hi = kb->max.u;
    uint64_t step = kb->step.set && kb->step.u ? kb->step.u : 1;
    for (int i = 0; i <= 3; i++) {
        uint64_t x = lo + (uint64_t)((double)(hi - lo) * i / 3.0);
        x = lo + (x - lo) / step * step;
        if (i == 3)
            x = hi;
        v.u = x;
        sw__tune_fmt_value(&v, buf, sizeof(buf));
        add_value(k, buf);
    }
}

static int build_space(const struct sw_fleet_endpoint *ep, struct knob *ks, size_t *nk,
                       struct sw__tune_mix *mixes, size_t *nmix, struct sw_err *e)
{
    *nk = 0;
    *nmix = 0;
    for (size_t i = 0; i < ep->n_knobs; i++) {
        const struct sw_fleet_knob *kb = &ep->knobs[i];
        for (size_t a = 0; always_frozen[a]; a++)
            if (!strcmp(kb->name, always_frozen[a]))
                return sw_fleet_err_at(e, SW_EINVAL, &kb->at,
                                       "%s: knob %s would move the payload, its quantization or "
                                       "the image, which tune never moves (frozen always)",
                                       ep->name, kb->name);
        if (sw_fleet_endpoint_frozen(ep, kb->name))
            continue; /* the loader refuses both; never move a frozen one */
        if (*nk >= MAX_KNOBS)
            return sw_fleet_err_at(e, SW_ERANGE, &kb->at, "%s: more than %d knobs to tune",
                                   ep->name, MAX_KNOBS);
        struct knob *k = &ks[(*nk)++];
        memset(k, 0, sizeof(*k));
        k->name = kb->name;
        k->at = kb->at;
        if (!strcmp(kb->name, "load.mix")) {
            /* the load side: swept inside every boot, never a candidate */
            k->kind = K_LOAD;
            snprintf(k->baseline, sizeof(k->baseline), "(every mix, each boot)");
            if (kb->n_values > SW__TUNE_MAX_MIXES)
                return sw_fleet_err_at(e, SW_ERANGE, &kb->at,
                                       "%s: load.mix lists %zu mixes; at most %d (each is "
                                       "measured at every level in every boot)",
                                       ep->name, kb->n_values, SW__TUNE_MAX_MIXES);
            for (size_t j = 0; j < kb->n_values; j++) {
                struct sw_err me;
                sw_err_clear(&me);
                if (sw__tune_mix_parse(kb->values[j].s, &mixes[*nmix], &me))
                    return sw_fleet_err_at(e, SW_EINVAL,
                                           kb->values[j].at.file ? &kb->values[j].at : &kb->at,
                                           "%s: %s", ep->name, me.msg);
                for (size_t q = 0; q < *nmix; q++)
                    if (!strcmp(mixes[q].name, mixes[*nmix].name))
                        return sw_fleet_err_at(e, SW_EINVAL, &kb->values[j].at,
                                               "%s: load.mix lists %s twice", ep->name,
                                               mixes[q].name);
                add_value(k, mixes[*nmix].name);
                (*nmix)++;
            }
        } else if (!strncmp(kb->name, "arg.", 4)) {
            k->kind = K_ARG;
            sw__tune_arg_value(ep, kb->name + 4, k->baseline, sizeof(k->baseline));
        } else if (!strncmp(kb->name, "env.", 4)) {
            k->kind = K_ENV;
            sw__tune_env_value(ep, kb->name + 4, k->baseline, sizeof(k->baseline));
        } else {
            struct sw_fleet_value v;
            k->kind = K_SHAPE;
            if (sw_fleet_shape_get(&ep->shape, kb->name, &v) == 0 && v.set)
                sw__tune_fmt_value(&v, k->baseline, sizeof(k->baseline));
        }
        if (kb->is_range) {
            range_values(kb, k);
            k->is_range = true;
            k->is_real = kb->type == SW_FLEET_V_REAL;
            k->lo = k->is_real ? kb->min.f : (double)kb->min.u;
            k->hi = k->is_real ? kb->max.f : (double)kb->max.u;
            k->step = k->is_real ? 0 : kb->step.set && kb->step.u ? (double)kb->step.u : 1;
        } else {
            char buf[64];
            for (size_t j = 0; j < kb->n_values; j++) {
                sw__tune_fmt_value(&kb->values[j], buf, sizeof(buf));
                add_value(k, buf);
            }
        }
        for (size_t j = 0; j < k->nvalues; j++)
            snprintf(k->kv[j], sizeof(k->kv[j]), "%s=%s", k->name, k->values[j]);
        k->ncoarse = k->nvalues;
    }
    return 0;
}

static void cand_key(const struct knob *ks, struct cand *c)
{
    /* settings in knob order, so a combination has one key whatever order it was built in */
    for (size_t i = 1; i < c->n; i++)
        for (size_t j = i; j > 0 && c->knob[j - 1] > c->knob[j]; j--) {
            int t = c->knob[j];
            c->knob[j] = c->knob[j - 1];
            c->knob[j - 1] = t;
            t = c->value[j];
            c->value[j] = c->value[j - 1];
            c->value[j - 1] = t;
        }
    size_t n = 0;
    c->key[0] = '\0';
    if (!c->n)
        snprintf(c->key, sizeof(c->key), "baseline");
    for (size_t i = 0; i < c->n && n < sizeof(c->key); i++)
        n += (size_t)snprintf(c->key + n, sizeof(c->key) - n, "%s%s", i ? " " : "",
                              ks[c->knob[i]].kv[c->value[i]]);
}

/* ---------------------------------------------------------------------------------------------
 * A candidate made on a fresh load of the fleet.
 */

struct made {
    struct sw_fleet *f;
    struct sw_fleet_endpoint *ep;
    struct sw_fleet_str *args; /* ours, when an arg. knob moved */
    struct sw_fleet_envvar *env;
    char *strs[MAX_SETTINGS * 2];
    size_t nstrs;
    struct sw_plan plan;
    bool planned;
    int plan_rc;
};

static void made_free(struct made *m)
{
    if (m->planned)
        sw_plan_free(&m->plan);
    sw_fleet_free(m->f);
    sw_free(m->args);
    sw_free(m->env);
    for (size_t i = 0; i < m->nstrs; i++)
        sw_free(m->strs[i]);
    memset(m, 0, sizeof(*m));
}

static const char *keep(struct made *m, const char *s)
{
    if (m->nstrs >= SW_ARRAY_LEN(m->strs))
        return NULL;
    char *d = sw_strdup(s);
    if (d)
        m->strs[m->nstrs++] = d;
    return d;
}

static int set_arg(struct made *m, const char *flag, const char *value, struct sw_err *e)
{
    struct sw_fleet_endpoint *ep = m->ep;
    struct sw_fleet_str *a = sw_malloc((ep->n_args + 2) * sizeof(*a));
    if (!a)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    size_t n = 0;
    size_t fl = strlen(flag);
    for (size_t i = 0; i < ep->n_args; i++) {
        const char *s = ep->args[i].v;
        if (s && !strncmp(s, flag, fl) && s[fl] == '=')
            continue;
        if (s && sw__tune_flag_is(s, flag)) {
            const char *v = i + 1 < ep->n_args ? ep->args[i + 1].v : NULL;
            if (v && v[0] != '-')
                i++;
            continue;
        }
        a[n++] = ep->args[i];
    }
    const char *f = keep(m, flag), *v = keep(m, value);
    if (!f || !v) {
        sw_free(a);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    memset(&a[n], 0, 2 * sizeof(*a));
    a[n++].v = f;
    a[n++].v = v;
    sw_free(m->args);
    m->args = a;
    ep->args = a;
    ep->n_args = n;
    return 0;
}

static int set_env(struct made *m, const char *name, const char *value, struct sw_err *e)
{
    struct sw_fleet_endpoint *ep = m->ep;
    struct sw_fleet_envvar *v = sw_malloc((ep->n_env + 1) * sizeof(*v));
    if (!v)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < ep->n_env; i++)
        if (strcmp(ep->env[i].name, name))
            v[n++] = ep->env[i];
    memset(&v[n], 0, sizeof(v[n]));
    v[n].name = keep(m, name);
    v[n].value = keep(m, value);
    if (!v[n].name || !v[n].value) {
        sw_free(v);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    n++;
    sw_free(m->env);
    m->env = v;
    ep->env = v;
    ep->n_env = n;
    return 0;
}

static int make(const struct sw_tune_opts *o, struct knob *ks, const struct cand *c, struct made *m,
                struct sw_err *e)
{
    memset(m, 0, sizeof(*m));
    int rc = sw_fleet_load(o->fleet, NULL, &m->f, e);
    if (rc)
        return rc;
    m->ep = (struct sw_fleet_endpoint *)sw_fleet_endpoint(m->f, o->endpoint);
    if (!m->ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", o->fleet, o->endpoint);
    for (size_t i = 0; i < c->n; i++) {
        struct knob *k = &ks[c->knob[i]];
        const char *v = k->values[c->value[i]];
        if (k->kind == K_ARG)
            rc = set_arg(m, k->name + 4, v, e);
        else if (k->kind == K_ENV)
            rc = set_env(m, k->name + 4, v, e);
        else
            rc = sw_gate_set(m->ep, k->kv[c->value[i]], e);
        if (rc)
            return rc;
    }
    return 0;
}

/* Every frozen setting of the candidate equals the baseline's: NULL, or the first that moved. */
static const char *frozen_moved(const struct sw_fleet_endpoint *base,
                                const struct sw_fleet_endpoint *ep)
{
    char a[256], b[256];
    for (size_t i = 0; i < base->n_frozen; i++) {
        const char *nm = base->frozen[i].name;
        a[0] = b[0] = '\0';
        if (!strncmp(nm, "arg.", 4)) {
            sw__tune_arg_value(base, nm + 4, a, sizeof(a));
            sw__tune_arg_value(ep, nm + 4, b, sizeof(b));
        } else if (!strncmp(nm, "env.", 4)) {
            sw__tune_env_value(base, nm + 4, a, sizeof(a));
            sw__tune_env_value(ep, nm + 4, b, sizeof(b));
        } else {
            struct sw_fleet_value va, vb;
            if (sw_fleet_shape_get(&base->shape, nm, &va) == 0 &&
                sw_fleet_shape_get(&ep->shape, nm, &vb) == 0) {
                if (va.set)
                    sw__tune_fmt_value(&va, a, sizeof(a));
                if (vb.set)
                    sw__tune_fmt_value(&vb, b, sizeof(b));
            }
        }
        if (strcmp(a, b))
            return nm;
    }
    /* frozen always */
    const struct sw_fleet_str *pairs[][2] = {
        {&base->payload.path, &ep->payload.path},
        {&base->payload.gguf, &ep->payload.gguf},
        {&base->payload.quantization, &ep->payload.quantization},
        {&base->image, &ep->image},
    };
    static const char *const names[] = {"payload", "payload", "quantization", "image"};
    for (size_t i = 0; i < SW_ARRAY_LEN(pairs); i++) {
        const char *x = pairs[i][0]->v, *y = pairs[i][1]->v;
        if ((!x) != (!y) || (x && strcmp(x, y)))
            return names[i];
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The run.
 */

struct run {
    const struct sw_tune_opts *o;
    enum sw_tune_boot boot;
    struct knob ks[MAX_KNOBS];
    size_t nk;
    struct sw_fleet *base_f;
    const struct sw_fleet_endpoint *base;
    struct sw_ledger ledger;
    bool have_ledger;
    int64_t run_id;
    json_t *prior; /* probes of a resumed run */
    int seq;
    int boots, rejected;
    json_t *probes;     /* the report's list */
    json_t *base_gates; /* the baseline's gate verdicts */
    char run_dir[4096];
    double base_score, base_noise;
    bool have_base;
    bool interrupted;
    bool budget_hit;  /* a candidate that passed its gates was left unbooted */
    int refine_round; /* the probes judged now refine a range (their "refine" round), or 0 */
    struct sw__tune_mix mixes[SW__TUNE_MAX_MIXES]; /* load.mix: swept inside every boot */
    size_t nmix;
};

static void note(struct run *r, const char *fmt, ...) SW_PRINTF(2, 3);
static void note(struct run *r, const char *fmt, ...)
{
    if (!r->o->progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("tune: ", r->o->progress);
    vfprintf(r->o->progress, fmt, ap);
    fputc('\n', r->o->progress);
    va_end(ap);
    fflush(r->o->progress);
}

static json_t *settings_json(const struct run *r, const struct cand *c)
{
    json_t *s = json_object();
    for (size_t i = 0; s && i < c->n; i++)
        json_object_set_new(s, r->ks[c->knob[i]].name,
                            json_string(r->ks[c->knob[i]].values[c->value[i]]));
    return s;
}

/* The baseline's verdict of a gate (matched by name and device), or NULL. */
static const json_t *base_gate(const json_t *base, const json_t *g)
{
    const char *nm = json_string_value(json_object_get(g, "gate"));
    const char *dev = json_string_value(json_object_get(json_object_get(g, "numbers"), "device"));
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(base, "gates"), i, x)
    {
        const char *bn = json_string_value(json_object_get(x, "gate"));
        const char *bd =
            json_string_value(json_object_get(json_object_get(x, "numbers"), "device"));
        if (bn && nm && !strcmp(bn, nm) && (!dev || (bd && !strcmp(bd, dev))))
            return x;
    }
    return NULL;
}

/* Is the candidate worse than the baseline on a gate both fail? The figure each gate states
 * (higher is better): the pool's concurrency, the window's tokens. A gate without one is not. */
static bool worse_than_base(const json_t *g, const json_t *b)
{
    static const char *const figure[][2] = {{"pool", "max_concurrency"}, {"window", "window"}};
    const char *nm = json_string_value(json_object_get(g, "gate"));
    for (size_t i = 0; nm && i < SW_ARRAY_LEN(figure); i++) {
        if (strcmp(nm, figure[i][0]))
            continue;
        const json_t *x = json_object_get(json_object_get(g, "numbers"), figure[i][1]);
        const json_t *y = json_object_get(json_object_get(b, "numbers"), figure[i][1]);
        if (json_is_number(x) && json_is_number(y))
            return json_number_value(x) < json_number_value(y) * (1 - 1e-9);
    }
    return false;
}

/*
 * The gates that reject a candidate, "band,pool" (empty when none). A gate the baseline fails
 * too is inherited, not the candidate's doing: it rejects only when the candidate is worse on
 * the figure that gate states (a smaller pool concurrency, a shorter window). base NULL: every
 * failing gate rejects (the baseline itself).
 */
static void failed_gates(const json_t *g, const json_t *base, char *out, size_t n, json_t **list)
{
    out[0] = '\0';
    size_t used = 0;
    *list = json_array();
    const json_t *gs = json_object_get(g, "gates");
    size_t i;
    const json_t *x;
    json_array_foreach(gs, i, x)
    {
        const char *v = json_string_value(json_object_get(x, "verdict"));
        const char *nm = json_string_value(json_object_get(x, "gate"));
        if (!v || strcmp(v, "fail") || !nm)
            continue;
        const json_t *b = base ? base_gate(base, x) : NULL;
        const char *bv = b ? json_string_value(json_object_get(b, "verdict")) : NULL;
        bool inherited = bv && !strcmp(bv, "fail") && !worse_than_base(x, b);
        json_array_append_new(*list, json_pack("{s:s, s:s?, s:b}", "gate", nm, "line",
                                               json_string_value(json_object_get(x, "line")),
                                               "inherited", inherited));
        if (inherited)
            continue;
        bool dup = false;
        for (const char *q = strstr(out, nm); q && !dup; q = strstr(q + 1, nm))
            dup = (q == out || q[-1] == ',') && (q[strlen(nm)] == ',' || !q[strlen(nm)]);
        if (!dup && used < n)
            used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "," : "", nm);
    }
}

static const json_t *prior_probe(const struct run *r, const char *key, const char *phase)
{
    size_t i;
    const json_t *p, *hit = NULL;
    json_array_foreach(r->prior, i, p)
    {
        const char *k = json_string_value(json_object_get(p, "candidate"));
        const char *ph = json_string_value(json_object_get(p, "phase"));
        if (k && ph && !strcmp(k, key) && !strcmp(ph, phase))
            hit = p;
    }
    return hit;
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int record(struct run *r, json_t *p, struct sw_err *e)
{
    if (!r->have_ledger || r->o->dry_run)
        return 0;
    /* the journal's phases are the schema's: the baseline booted again before a winner's
     * re-measure is a re-measure (of the candidate "baseline"); its evidence says "rebase" */
    const char *ph = json_string_value(json_object_get(p, "phase"));
    json_t *jph = json_string(ph && !strcmp(ph, "rebase") ? "remeasure" : ph ? ph : "");
    json_t *rec =
        json_pack("{s:O, s:o, s:O, s:O, s:O?, s:O?, s:O?, s:O}", "seq", json_object_get(p, "seq"),
                  "phase", jph, "candidate", json_object_get(p, "candidate"), "outcome",
                  json_object_get(p, "outcome"), "gate", json_object_get(p, "gate"), "score",
                  json_object_get(p, "score"), "noise", json_object_get(p, "noise"), "evidence", p);
    if (!rec)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_ledger_tune_probe(&r->ledger, r->run_id, rec, e);
    json_decref(rec);
    return rc;
}

/*
 * Judge one candidate: reuse a probe the journal already decided, else plan + gate (+ frozen
 * guard); a rejected candidate is recorded and never booted; with `boot` set and the budget
 * allowing, boot and measure it. *out (borrowed from r->probes, may be NULL when nothing was
 * decided: dry run of a passing candidate or no budget) receives the probe.
 */
static int judge(struct run *r, struct cand *c, const char *phase, bool boot, json_t **out,
                 struct sw_err *e)
{
    struct made m;
    json_t *p = NULL, *gate_json = NULL;
    int rc;
    *out = NULL;
    cand_key(r->ks, c);
    const json_t *prev = prior_probe(r, c->key, phase);
    if (prev && !c->n && !r->base_gates) {
        /* a resumed baseline: its gates are still what candidates are held against */
        rc = make(r->o, r->ks, c, &m, e);
        if (!rc) {
            struct sw_gate_opts go;
            memset(&go, 0, sizeof(go));
            go.ledger = r->have_ledger ? &r->ledger : NULL;
            if (sw_gate_endpoint(m.f, m.ep, &go, &r->base_gates, NULL))
                r->base_gates = NULL;
        }
        made_free(&m);
        if (rc)
            return rc;
    }
    if (prev && strcmp(phase, "remeasure") && strcmp(phase, "rebase")) {
        json_t *ev = json_deep_copy(json_object_get(prev, "evidence"));
        if (!ev)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        json_object_set_new(ev, "resumed", json_true());
        json_array_append_new(r->probes, ev);
        const char *oc = json_string_value(json_object_get(ev, "outcome"));
        if (oc && !strcmp(oc, "rejected"))
            r->rejected++;
        note(r, "%s %s: %s (from the journal)", phase, c->key, oc ? oc : "?");
        *out = ev;
        return 0;
    }

    rc = make(r->o, r->ks, c, &m, e);
    if (rc)
        goto out;
    p = json_pack("{s:i, s:s, s:s, s:o}", "seq", r->seq + 1, "phase", phase, "candidate", c->key,
                  "settings", settings_json(r, c));
    if (!p) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (r->refine_round)
        json_object_set_new(p, "refine", json_integer(r->refine_round));
    char gates[256] = "";
    json_t *glist = NULL;
    struct sw_err pe;
    sw_err_clear(&pe);
    const char *moved = frozen_moved(r->base, m.ep);
    json_object_set_new(p, "frozen_values",
                        json_pack("{s:s?, s:s?, s:s?, s:s?}", "image", m.ep->image.v, "payload",
                                  m.ep->payload.path.v, "gguf", m.ep->payload.gguf.v,
                                  "quantization", m.ep->payload.quantization.v));
    m.plan_rc = sw_plan_endpoint(m.f, m.ep, NULL, &m.plan, &pe);
    m.planned = true;
    if (m.plan.cmd.argc) {
        struct sw_buf b;
        sw_buf_init(&b, 1 << 16);
        sw_engine_cmd_format(&m.plan.cmd, &b);
        json_object_set_new(p, "argv", json_string(sw_buf_cstr(&b)));
        sw_buf_free(&b);
    }
    if (moved) {
        snprintf(gates, sizeof(gates), "frozen");
        json_object_set_new(p, "why", json_sprintf("would move frozen %s", moved));
    } else if (m.plan_rc) {
        snprintf(gates, sizeof(gates), "plan");
        json_object_set_new(p, "why", json_string(pe.msg));
    } else {
        struct sw_gate_opts go;
        memset(&go, 0, sizeof(go));
        go.ledger = r->have_ledger ? &r->ledger : NULL;
        struct sw_err ge;
        sw_err_clear(&ge);
        rc = sw_gate_endpoint(m.f, m.ep, &go, &gate_json, &ge);
        if (rc) {
            snprintf(gates, sizeof(gates), "check");
            json_object_set_new(p, "why", json_string(ge.msg));
            rc = 0;
        } else {
            bool is_base = !c->n;
            failed_gates(gate_json, is_base ? NULL : r->base_gates, gates, sizeof(gates), &glist);
            if (glist)
                json_object_set_new(p, "gates", glist);
            if (is_base) {
                /* the baseline is measured whatever its gates say (it is what runs now); the
                 * gates it fails are inherited by every candidate */
                if (!strcmp(phase, "baseline")) {
                    json_decref(r->base_gates);
                    r->base_gates = json_incref(gate_json);
                }
                if (gates[0])
                    json_object_set_new(p, "baseline_fails", json_string(gates));
                gates[0] = '\0';
            }
        }
    }
    if (gates[0]) {
        r->rejected++;
        r->seq++;
        json_object_set_new(p, "outcome", json_string("rejected"));
        json_object_set_new(p, "gate", json_string(gates));
        const char *line = json_string_value(json_object_get(p, "why"));
        size_t gi;
        const json_t *gx;
        json_array_foreach(json_object_get(p, "gates"), gi, gx)
        {
            if (!json_is_true(json_object_get(gx, "inherited")) &&
                json_string_value(json_object_get(gx, "line")))
                line = json_string_value(json_object_get(gx, "line"));
        }
        note(r, "%s %s: rejected by %s before any boot: %.300s", phase, c->key, gates,
             line ? line : "");
        rc = record(r, p, e);
        if (rc)
            goto out;
        json_array_append(r->probes, p);
        *out = p;
        goto out;
    }
    if (!boot || r->o->dry_run) {
        json_object_set_new(p, "outcome", json_string("planned"));
        json_object_del(p, "seq");
        if (r->o->dry_run) {
            json_array_append(r->probes, p);
            *out = p;
        }
        goto out;
    }
    int budget = r->o->budget_boots > 0 ? r->o->budget_boots : 16;
    if (r->boots >= budget) {
        r->budget_hit = true;
        note(r, "%s %s: not booted, the budget of %d boots is spent", phase, c->key, budget);
        goto out;
    }
    int slots = m.ep->shape.seqs.set ? (int)m.ep->shape.seqs.v : 1;
    if (m.ep->engine == SW_FLEET_VLLM && !m.ep->shape.seqs.set)
        slots = 256;
    struct sw__tune_measure me;
    note(r, "%s %s: booting (%d of %d)", phase, c->key, r->boots + 1, budget);
    int pr = sw__tune_probe(r->o, r->boot, r->run_dir, m.f, r->have_ledger ? &r->ledger : NULL,
                            m.ep, &m.plan, slots, r->mixes, r->nmix, r->seq + 1, &me, e);
    if (pr < 0) {
        if (pr == SW_EINTR)
            r->interrupted = true;
        rc = pr;
        goto out;
    }
    r->boots++;
    r->seq++;
    json_object_set_new(p, "log", json_string(me.log));
    json_object_set_new(p, "boot_s", jnum(me.boot_s));
    if (me.deployed)
        json_object_set_new(p, "deploy",
                            json_pack("{s:s, s:I, s:s, s:s, s:b}", "outcome", me.deploy_outcome,
                                      "attempt", (json_int_t)me.deploy_attempt, "tag",
                                      me.deploy_tag, "fail_class", me.deploy_class, "serving",
                                      me.deploy_serving));
    if (pr == SW__TUNE_BOOT_FAILED || pr == SW__TUNE_BENCH_FAILED) {
        json_object_set_new(
            p, "outcome", json_string(pr == SW__TUNE_BOOT_FAILED ? "boot_failed" : "bench_failed"));
        json_object_set_new(p, "why", json_string(me.why));
        note(r, "%s %s: %s: %s", phase, c->key,
             pr == SW__TUNE_BOOT_FAILED ? "boot failed" : "bench failed", me.why);
    } else {
        json_t *levels = json_array(), *mixes = r->nmix ? json_array() : NULL;
        for (size_t mi = 0; mi < me.nmix; mi++) {
            for (size_t li = 0; li < me.nlevels; li++) {
                json_t *reps = json_array();
                for (size_t k = 0; k < me.nv[mi][li]; k++)
                    json_array_append_new(reps, jnum(me.v[mi][li][k]));
                json_t *lv = json_pack("{s:i, s:o, s:o}", "concurrency", me.levels[li], "median",
                                       jnum(me.median[mi][li]), "repeats", reps);
                if (lv && r->nmix)
                    json_object_set_new(lv, "mix", json_string(r->mixes[mi].name));
                json_array_append_new(levels, lv);
            }
            if (mixes)
                json_array_append_new(
                    mixes, json_pack("{s:s, s:I, s:I, s:o, s:o, s:i}", "mix", r->mixes[mi].name,
                                     "depth", (json_int_t)r->mixes[mi].depth, "tokens",
                                     (json_int_t)r->mixes[mi].tokens, "score",
                                     jnum(me.mix_score[mi]), "noise", jnum(me.mix_noise[mi]),
                                     "concurrency", me.levels[me.mix_best[mi]]));
        }
        if (mixes)
            json_object_set_new(p, "mixes", mixes);
        json_object_set_new(p, "outcome", json_string("measured"));
        json_object_set_new(p, "score", jnum(me.score));
        json_object_set_new(p, "noise", jnum(me.noise));
        json_object_set_new(p, "concurrency", json_integer(me.levels[me.best]));
        json_object_set_new(p, "levels", levels);
        if (r->have_base && r->base_score > 0)
            json_object_set_new(p, "gain", jnum((me.score - r->base_score) / r->base_score));
        char reps[256];
        size_t rn = 0;
        reps[0] = '\0';
        for (size_t mi = 0; mi < me.nmix; mi++)
            for (size_t li = 0; li < me.nlevels; li++)
                for (size_t k = 0; k < me.nv[mi][li] && rn < sizeof(reps); k++)
                    rn += (size_t)snprintf(reps + rn, sizeof(reps) - rn, "%s%.1f",
                                           k ? " " : (li || mi ? " | " : ""), me.v[mi][li][k]);
        note(r, "%s %s: %.2f (noise %.1f%%, concurrency %d; repeats per level: %s)", phase, c->key,
             me.score, me.noise * 100, me.levels[me.best], reps);
    }
    rc = record(r, p, e);
    if (rc)
        goto out;
    json_array_append(r->probes, p);
    *out = p;
out:
    json_decref(p);
    json_decref(gate_json);
    made_free(&m);
    return rc;
}

static bool measured(const json_t *p)
{
    const char *oc = json_string_value(json_object_get(p, "outcome"));
    return p && oc && !strcmp(oc, "measured") && isfinite(num(p, "score"));
}

/* The gain of p over the baseline and whether it clears the noise (the larger of the two). */
static bool wins(const struct run *r, const json_t *p, double *gain)
{
    *gain = NAN;
    if (!measured(p) || !r->have_base || !(r->base_score > 0))
        return false;
    double s = num(p, "score"), n = num(p, "noise");
    *gain = (s - r->base_score) / r->base_score;
    double noise = r->base_noise;
    if (isfinite(n) && n > noise)
        noise = n;
    return *gain > noise;
}

/* The re-measure's verdict: the winner booted again against the baseline booted again just
 * before it (same conditions, interleaved), its gain over that fresh baseline, which must
 * exceed every noise the run measured for either (the first baseline's, the fresh one's, the
 * winner's first and second). */
static bool holds(const struct run *r, const json_t *fresh, const json_t *first,
                  const json_t *again, double *gain, double *noise)
{
    *gain = NAN;
    *noise = NAN;
    if (!measured(fresh) || !measured(again) || !(num(fresh, "score") > 0))
        return false;
    *gain = (num(again, "score") - num(fresh, "score")) / num(fresh, "score");
    double n = r->base_noise;
    const json_t *ps[] = {fresh, first, again};
    for (size_t i = 0; i < SW_ARRAY_LEN(ps); i++) {
        double x = num(ps[i], "noise");
        if (isfinite(x) && x > n)
            n = x;
    }
    *noise = n;
    return *gain > n;
}

static json_t *space_json(const struct run *r)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < r->nk; i++) {
        const struct knob *k = &r->ks[i];
        json_t *vals = json_array(), *ref = json_array();
        for (size_t j = 0; j < k->nvalues; j++)
            json_array_append_new(j < k->ncoarse ? vals : ref, json_string(k->values[j]));
        json_t *kj =
            json_pack("{s:s, s:o, s:s, s:s, s:s}", "name", k->name, "values", vals, "baseline",
                      k->baseline[0] ? k->baseline : "(engine default)", "kind",
                      k->kind == K_LOAD ? "load" : "boot", "at", k->at.file ? k->at.file : "");
        if (kj && k->is_range) {
            json_object_set_new(
                kj, "range",
                json_pack("{s:f, s:f, s:f}", "min", k->lo, "max", k->hi, "step", k->step));
            json_object_set(kj, "refined", ref);
        }
        json_decref(ref);
        json_array_append_new(a, kj);
    }
    json_t *lv = json_array();
    for (size_t i = 0; lv && i < r->o->n_levels && i < SW_ARRAY_LEN(r->o->levels); i++)
        json_array_append_new(lv, json_sprintf("%d", r->o->levels[i]));
    json_array_append_new(a, json_pack("{s:s, s:o, s:s, s:s}", "name", "concurrency", "values",
                                       lv ? lv : json_array(), "baseline", "1", "kind", "load"));
    return a;
}

static void space_key(const struct run *r, char *out, size_t n)
{
    /* FNV-1a over what makes two runs comparable: knobs, values, baseline, measure settings */
    uint64_t h = 1469598103934665603ull;
    char buf[128];
#define MIX(s)                                                                                     \
    for (const char *q_ = (s); *q_; q_++)                                                          \
        h = (h ^ (unsigned char)*q_) * 1099511628211ull;
    for (size_t i = 0; i < r->nk; i++) {
        MIX(r->ks[i].name);
        MIX("|");
        MIX(r->ks[i].baseline);
        for (size_t j = 0; j < r->ks[i].nvalues; j++) {
            MIX(",");
            MIX(r->ks[i].values[j]);
        }
        MIX(";");
    }
    snprintf(buf, sizeof(buf), "%d/%d/%lld/%d", r->o->repeats, r->o->max_concurrency,
             (long long)r->o->tokens, (int)r->boot);
    MIX(buf);
    for (size_t i = 0; i < r->o->n_levels && i < SW_ARRAY_LEN(r->o->levels); i++) {
        snprintf(buf, sizeof(buf), "c%d", r->o->levels[i]);
        MIX(buf);
    }
#undef MIX
    snprintf(out, n, "%zu knobs, fnv %016llx", r->nk, (unsigned long long)h);
}

static int open_ledger(struct run *r, char *path, size_t n, struct sw_err *e)
{
    struct sw_ledger_open_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.create = !r->o->dry_run;
    lo.readonly = r->o->dry_run;
    /* a dry run with nothing recorded yet: the gates run without ledger evidence */
    return sw_ledger_open_for(&r->ledger, r->o->ledger, r->o->fleet, &lo,
                              r->o->dry_run ? SW_LEDGER_MAY_BE_ABSENT : SW_LEDGER_MUST_EXIST,
                              &r->have_ledger, path, n, e);
}

/* The candidate a probe's settings ({knob: value}) name. */
static void cand_from_settings(const struct run *r, const json_t *st, struct cand *c)
{
    memset(c, 0, sizeof(*c));
    const char *kn;
    const json_t *kv;
    json_object_foreach((json_t *)st, kn, kv)
    {
        const char *val = json_string_value(kv);
        for (size_t k = 0; val && k < r->nk; k++) {
            if (strcmp(r->ks[k].name, kn))
                continue;
            for (size_t v = 0; v < r->ks[k].nvalues; v++)
                if (!strcmp(r->ks[k].values[v], val) && c->n < MAX_SETTINGS) {
                    c->knob[c->n] = (int)k;
                    c->value[c->n++] = (int)v;
                }
        }
    }
}

/* The single probe of knob k at value v (from this run or the journal), or NULL. */
static const json_t *single_of(const struct run *r, size_t k, size_t v)
{
    size_t i;
    const json_t *x;
    json_array_foreach(r->probes, i, x)
    {
        const char *ph = json_string_value(json_object_get(x, "phase"));
        const char *key = json_string_value(json_object_get(x, "candidate"));
        if (ph && key && !strcmp(ph, "single") && !strcmp(key, r->ks[k].kv[v]))
            return x;
    }
    return NULL;
}

/*
 * Range knobs refined around their best point: after the coarse points (the single probes), up
 * to two rounds, each probing the midpoints (on the step) between the best measured point (the
 * baseline's value included) and its tried neighbours; a refined point is a single probe like
 * the others (planned and gated before its boot, journaled, resumed), within the budget less
 * the two boots kept for the re-measure.
 */
static int refine(struct run *r, int budget, struct sw_err *e)
{
    int rc = 0;
    for (int round = 1; round <= 2; round++) {
        for (size_t k = 0; k < r->nk; k++) {
            struct knob *kn = &r->ks[k];
            if (!kn->is_range)
                continue;
            double xs[MAX_VALUES + 1], sc[MAX_VALUES + 1];
            size_t n = 0;
            char *end = NULL;
            double bx = kn->baseline[0] ? strtod(kn->baseline, &end) : NAN;
            if (end && !*end && isfinite(bx) && r->have_base) {
                xs[n] = bx;
                sc[n++] = r->base_score;
            }
            for (size_t v = 0; v < kn->nvalues; v++) {
                if (!strcmp(kn->values[v], kn->baseline))
                    continue;
                const json_t *p = single_of(r, k, v);
                if (!p)
                    continue; /* not tried (the budget) */
                xs[n] = strtod(kn->values[v], NULL);
                sc[n++] = measured(p) ? num(p, "score") : NAN;
            }
            double pts[2];
            size_t np = sw__tune_refine(kn->lo, kn->hi, kn->step, kn->is_real, xs, sc, n, pts);
            for (size_t i = 0; i < np; i++) {
                char buf[64];
                if (kn->is_real)
                    snprintf(buf, sizeof(buf), "%.6g", pts[i]);
                else
                    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)llround(pts[i]));
                bool known = false;
                for (size_t v = 0; v < kn->nvalues; v++)
                    known |= !strcmp(kn->values[v], buf);
                if (known || !strcmp(buf, kn->baseline) || kn->nvalues >= MAX_VALUES)
                    continue;
                if (r->boots >= budget - 2) {
                    r->budget_hit = true;
                    return 0;
                }
                size_t v = kn->nvalues;
                add_value(kn, buf);
                snprintf(kn->kv[v], sizeof(kn->kv[v]), "%s=%s", kn->name, buf);
                struct cand c;
                memset(&c, 0, sizeof(c));
                c.knob[0] = (int)k;
                c.value[0] = (int)v;
                c.n = 1;
                json_t *p = NULL;
                note(r, "refine %s (round %d): around its best point so far", kn->kv[v], round);
                r->refine_round = round;
                rc = judge(r, &c, "single", true, &p, e);
                r->refine_round = 0;
                if (rc)
                    return rc;
            }
        }
    }
    return rc;
}

static int search(struct run *r, json_t *rep, struct sw_err *e)
{
    int rc;
    struct cand c;
    json_t *p = NULL;

    /* the baseline: measured whatever its gates say (it is what runs now) */
    memset(&c, 0, sizeof(c));
    rc = judge(r, &c, "baseline", true, &p, e);
    if (rc)
        return rc;
    if (p && json_object_get(p, "baseline_fails"))
        note(r,
             "the baseline fails %s; a candidate is rejected only by a gate it fails anew or "
             "fails worse",
             json_string_value(json_object_get(p, "baseline_fails")));
    if (measured(p)) {
        r->have_base = true;
        r->base_score = num(p, "score");
        r->base_noise = num(p, "noise");
        if (!isfinite(r->base_noise))
            r->base_noise = 0;
        json_object_set(rep, "baseline", p);
    } else if (!r->o->dry_run) {
        json_object_set_new(rep, "outcome",
                            json_string(r->interrupted ? "interrupted" : "no_winner"));
        if (p)
            json_object_set(rep, "baseline", p);
        return 0;
    }

    /* single-variable probes: every candidate planned and gated before the first boot */
    struct cand singles[MAX_CANDS];
    size_t ns = 0;
    for (size_t k = 0; k < r->nk; k++)
        for (size_t v = 0; v < r->ks[k].nvalues && ns < MAX_CANDS; v++) {
            if (r->ks[k].kind == K_LOAD || !strcmp(r->ks[k].values[v], r->ks[k].baseline))
                continue;
            memset(&singles[ns], 0, sizeof(singles[ns]));
            singles[ns].knob[0] = (int)k;
            singles[ns].value[0] = (int)v;
            singles[ns].n = 1;
            ns++;
        }
    bool pass[MAX_CANDS];
    for (size_t i = 0; i < ns; i++) {
        rc = judge(r, &singles[i], "single", false, &p, e);
        if (rc)
            return rc;
        /* NULL or "planned": passed its gates and not decided yet (a probe the journal already
         * decided is in r->probes and is not booted again) */
        const char *oc = p ? json_string_value(json_object_get(p, "outcome")) : NULL;
        pass[i] = !oc || !strcmp(oc, "planned");
    }
    if (r->o->dry_run)
        return 0;
    int budget = r->o->budget_boots > 0 ? r->o->budget_boots : 16;
    for (size_t i = 0; i < ns; i++) {
        if (!pass[i])
            continue;
        if (r->boots >= budget - 2) {
            r->budget_hit = true;
            break; /* two boots kept for the re-measure: the baseline's and the winner's */
        }
        rc = judge(r, &singles[i], "single", true, &p, e);
        if (rc)
            return rc;
    }
    if (!r->budget_hit) {
        rc = refine(r, budget, e);
        if (rc)
            return rc;
    }
    double best_gain[MAX_KNOBS];
    int best_val[MAX_KNOBS];
    for (size_t k = 0; k < r->nk; k++) {
        best_gain[k] = NAN;
        best_val[k] = -1;
    }
    {
        size_t i;
        const json_t *x;
        json_array_foreach(r->probes, i, x)
        {
            double g;
            struct cand sc;
            const char *ph = json_string_value(json_object_get(x, "phase"));
            if (!ph || strcmp(ph, "single") || !wins(r, x, &g))
                continue;
            cand_from_settings(r, json_object_get(x, "settings"), &sc);
            if (sc.n != 1)
                continue;
            int k = sc.knob[0];
            if (!isfinite(best_gain[k]) || g > best_gain[k]) {
                best_gain[k] = g;
                best_val[k] = sc.value[0];
            }
        }
    }

    /* combinations of the winners: all of them, then pairs */
    int won[MAX_KNOBS];
    size_t nw = 0;
    for (size_t k = 0; k < r->nk; k++)
        if (best_val[k] >= 0)
            won[nw++] = (int)k;
    struct cand combos[MAX_CANDS];
    size_t nc = 0;
    if (nw >= 2) {
        memset(&combos[nc], 0, sizeof(combos[nc]));
        for (size_t i = 0; i < nw && i < MAX_SETTINGS; i++) {
            combos[nc].knob[i] = won[i];
            combos[nc].value[i] = best_val[won[i]];
            combos[nc].n++;
        }
        nc++;
    }
    if (nw >= 3)
        for (size_t i = 0; i < nw; i++)
            for (size_t j = i + 1; j < nw && nc < MAX_CANDS; j++) {
                memset(&combos[nc], 0, sizeof(combos[nc]));
                combos[nc].knob[0] = won[i];
                combos[nc].value[0] = best_val[won[i]];
                combos[nc].knob[1] = won[j];
                combos[nc].value[1] = best_val[won[j]];
                combos[nc].n = 2;
                nc++;
            }
    bool cpass[MAX_CANDS];
    for (size_t i = 0; i < nc; i++) {
        rc = judge(r, &combos[i], "combo", false, &p, e);
        if (rc)
            return rc;
        const char *oc = p ? json_string_value(json_object_get(p, "outcome")) : NULL;
        cpass[i] = !oc || !strcmp(oc, "planned");
    }
    for (size_t i = 0; i < nc; i++) {
        if (!cpass[i])
            continue;
        if (r->boots >= budget - 4) { /* four boots kept: a winner that does not hold on
                                       * re-measure has a runner-up (two boots each) */
            r->budget_hit = true;
            break;
        }
        rc = judge(r, &combos[i], "combo", true, &p, e);
        if (rc)
            return rc;
    }

    /* rank the winners; re-measure the best before crowning it (then the runner-up) */
    const json_t *rank[2 * MAX_CANDS];
    size_t nr = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(r->probes, i, x)
    {
        double g;
        const char *ph = json_string_value(json_object_get(x, "phase"));
        if (ph && (!strcmp(ph, "single") || !strcmp(ph, "combo")) && wins(r, x, &g) &&
            nr < SW_ARRAY_LEN(rank))
            rank[nr++] = x;
    }
    for (size_t a = 1; a < nr; a++)
        for (size_t b = a; b > 0 && num(rank[b - 1], "score") < num(rank[b], "score"); b--) {
            const json_t *t = rank[b];
            rank[b] = rank[b - 1];
            rank[b - 1] = t;
        }
    const char *outcome = r->budget_hit ? "budget" : "no_winner";
    for (size_t a = 0; a < nr; a++) {
        if (r->boots + 2 > budget) {
            outcome = "budget";
            break;
        }
        /* the baseline again, then the candidate again from its settings: two boots back to
         * back under the same conditions, the gain crowned the one between them (the first
         * baseline was measured minutes or hours earlier, on a machine that may have changed) */
        struct cand base_c, rc_c;
        memset(&base_c, 0, sizeof(base_c));
        json_t *fresh = NULL, *again = NULL;
        rc = judge(r, &base_c, "rebase", true, &fresh, e);
        if (rc)
            return rc;
        if (!measured(fresh)) {
            note(r, "the baseline did not measure again (%s): nothing can be crowned against it",
                 fresh ? json_string_value(json_object_get(fresh, "outcome")) : "not booted");
            break;
        }
        cand_from_settings(r, json_object_get(rank[a], "settings"), &rc_c);
        rc = judge(r, &rc_c, "remeasure", true, &again, e);
        if (rc)
            return rc;
        double g, gn;
        bool held = holds(r, fresh, rank[a], again, &g, &gn);
        if (again && measured(again))
            json_object_set_new(again, "gain_fresh", jnum(g));
        if (held) {
            json_t *w = json_deep_copy(rank[a]);
            json_object_set(w, "remeasured", again);
            json_object_set(w, "rebaseline", fresh);
            json_object_set_new(w, "remeasured_gain", jnum(g));
            json_object_set_new(w, "remeasured_noise", jnum(gn));
            json_object_set_new(w, "remeasured_gain_first", jnum(num(again, "gain")));
            json_object_set_new(rep, "winner", w);
            json_object_set(rep, "apply", json_object_get(rank[a], "settings"));
            outcome = "crowned";
            for (size_t b = 0; b < nr; b++)
                if (b != a) {
                    json_object_set_new(rep, "runner_up", json_deep_copy(rank[b]));
                    break;
                }
            break;
        }
        note(r,
             "%s did not hold on re-measure: %+.1f%% over the fresh baseline (%.2f against "
             "%.2f), noise %.1f%%",
             json_string_value(json_object_get(rank[a], "candidate")), g * 100, num(again, "score"),
             num(fresh, "score"), gn * 100);
    }
    if (!json_object_get(rep, "runner_up")) {
        /* without a crowned winner: the best measured candidate, for the record */
        const json_t *best = NULL;
        json_array_foreach(r->probes, i, x)
        {
            const char *ph = json_string_value(json_object_get(x, "phase"));
            if (!ph || !strcmp(ph, "baseline") || !strcmp(ph, "remeasure") ||
                !strcmp(ph, "rebase") || !measured(x))
                continue;
            const json_t *w = json_object_get(rep, "winner");
            if (w && !strcmp(json_string_value(json_object_get(w, "candidate")),
                             json_string_value(json_object_get(x, "candidate"))))
                continue;
            if (!best || num(x, "score") > num(best, "score"))
                best = x;
        }
        if (best)
            json_object_set_new(rep, "runner_up", json_deep_copy(best));
    }
    json_object_set_new(rep, "outcome", json_string(outcome));
    return 0;
}

/* The rollout runner leaves the host on a shape a probe committed: the crowned winner's (its
 * re-measure), else the baseline's (its latest committed deploy). When the last committed deploy
 * was another candidate's, that shape's saved set is put back (sw_rollout_rollback to its tag).
 * An interrupted run puts nothing back. The report's "host": {tag, shape: crowned | baseline |
 * last_committed, restored, why}. */
static const char *deploy_tag(const json_t *p)
{
    const json_t *d = json_object_get(p, "deploy");
    const char *oc = json_string_value(json_object_get(d, "outcome"));
    const char *tag = json_string_value(json_object_get(d, "tag"));
    return oc && !strcmp(oc, "committed") && tag && tag[0] ? tag : NULL;
}

static void settle_host(struct run *r, json_t *rep)
{
    const char *last = NULL, *base = NULL, *want = NULL, *shape = "baseline";
    size_t i;
    json_t *x;
    json_array_foreach(r->probes, i, x)
    {
        const char *t = deploy_tag(x);
        if (!t)
            continue;
        last = t;
        if (!strcmp(json_string_value(json_object_get(x, "candidate")), "baseline"))
            base = t;
    }
    const char *oc = json_string_value(json_object_get(rep, "outcome"));
    const json_t *w = json_object_get(rep, "winner");
    if (oc && !strcmp(oc, "crowned") && w) {
        want = deploy_tag(json_object_get(w, "remeasured"));
        if (!want)
            want = deploy_tag(w);
        shape = "crowned";
    } else {
        want = base;
    }
    json_t *h = json_object();
    if (!h)
        return;
    if (!want) {
        want = last;
        shape = "last_committed";
    }
    json_object_set_new(h, "shape", json_string(shape));
    json_object_set_new(h, "tag", want ? json_string(want) : json_null());
    json_object_set_new(h, "restored", json_false());
    if (want && last && strcmp(want, last) && oc && !strcmp(oc, "interrupted")) {
        /* stopped by the operator: no further deploy; the host stays as the last one left it */
        json_object_set_new(h, "shape", json_string("last_committed"));
        json_object_set_new(h, "tag", json_string(last));
        json_object_set_new(h, "why", json_string("interrupted: not put back"));
    } else if (want && last && strcmp(want, last)) {
        struct sw_rollout_opts ro;
        struct sw_rollout_result rr;
        struct sw_err e;
        memset(&ro, 0, sizeof(ro));
        sw_err_clear(&e);
        ro.ledger = r->have_ledger ? &r->ledger : NULL;
        ro.record = r->have_ledger;
        ro.to_tag = want;
        ro.note = "slipway tune: back to the chosen shape";
        note(r, "host %s: putting back %s (%s) over %s", r->base->host->name, want, shape, last);
        int rc = sw_rollout_rollback(r->base_f, r->base, &ro, &rr, &e);
        if (rc)
            json_object_set_new(h, "why", json_string(e.msg));
        else if (rr.outcome != SW_ROLLOUT_RESTORED)
            json_object_set_new(h, "why",
                                json_sprintf("%s (%s): %s", sw_rollout_outcome_name(rr.outcome),
                                             rr.fail_class, rr.fail_msg));
        else
            json_object_set_new(h, "restored", json_true());
        if (rc || rr.outcome != SW_ROLLOUT_RESTORED) {
            /* still on the last committed shape (or what the rollback left) */
            json_object_set_new(h, "shape", json_string("last_committed"));
            json_object_set_new(h, "tag", json_string(last));
        }
        sw_rollout_result_free(&rr);
    }
    json_object_set_new(rep, "host", h);
}

int sw_tune_run(const struct sw_tune_opts *o, json_t **out, struct sw_err *e)
{
    struct run *r = NULL;
    json_t *rep = NULL;
    char lpath[4096] = "";
    int rc;
    *out = NULL;
    if (!o || !o->fleet || !o->endpoint)
        return sw_err_set(e, SW_EINVAL, "tune: a fleet and an endpoint are required");
    if (!o->objective.metric)
        return sw_err_set(e, SW_EINVAL, "tune: an objective is required");
    r = sw_malloc(sizeof(*r));
    if (!r)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    memset(r, 0, sizeof(*r));
    r->o = o;
    r->probes = json_array();
    rep = json_object();
    if (!r->probes || !rep) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw_fleet_load(o->fleet, NULL, &r->base_f, e);
    if (rc)
        goto out;
    r->base = sw_fleet_endpoint(r->base_f, o->endpoint);
    if (!r->base) {
        rc = sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", o->fleet, o->endpoint);
        goto out;
    }
    r->boot = o->boot;
    if (r->boot == SW_TUNE_BOOT_AUTO) {
        if (r->base->engine == SW_FLEET_VLLM)
            r->boot = SW_TUNE_BOOT_SIM;
        else if (r->base->engine == SW_FLEET_LLAMACPP &&
                 (!r->base->host || r->base->host->transport == SW_FLEET_LOCAL))
            r->boot = SW_TUNE_BOOT_LOCAL;
        else if (r->base->host && r->base->host->transport == SW_FLEET_SSH)
            r->boot = SW_TUNE_BOOT_ROLLOUT;
        else {
            rc = sw_fleet_err_at(e, SW_EUNSUPPORTED, &r->base->engine_at,
                                 "endpoint %s: tune boots a local llama.cpp endpoint, or "
                                 "simulates (--sim); %s on host %s has no boot path here yet",
                                 r->base->name, sw_fleet_engine_name(r->base->engine),
                                 r->base->host ? r->base->host->name : "?");
            goto out;
        }
    }
    if (r->boot == SW_TUNE_BOOT_ROLLOUT && !r->base->host) {
        rc = sw_fleet_err_at(e, SW_EINVAL, &r->base->at,
                             "endpoint %s: the rollout runner deploys on the endpoint's host; "
                             "it has none",
                             r->base->name);
        goto out;
    }
    if (r->boot == SW_TUNE_BOOT_LOCAL && r->base->engine != SW_FLEET_LLAMACPP) {
        rc = sw_fleet_err_at(e, SW_EUNSUPPORTED, &r->base->engine_at,
                             "endpoint %s: only llama.cpp boots locally; use --sim", r->base->name);
        goto out;
    }
    rc = build_space(r->base, r->ks, &r->nk, r->mixes, &r->nmix, e);
    if (rc)
        goto out;
    if (!r->nk || (r->nmix && r->nk == 1)) {
        rc = sw_fleet_err_at(e, SW_EINVAL, &r->base->at,
                             "endpoint %s declares no knobs to tune (knobs: in the fleet file)",
                             r->base->name);
        goto out;
    }
    if (o->run_dir)
        snprintf(r->run_dir, sizeof(r->run_dir), "%s", o->run_dir);
    else if (!o->dry_run) {
        rc = sw_deploy_run_dir(r->run_dir, sizeof(r->run_dir), e);
        if (rc)
            goto out;
    }
    rc = open_ledger(r, lpath, sizeof(lpath), e);
    if (rc)
        goto out;
    char space[160];
    space_key(r, space, sizeof(space));
    bool resumed = false;
    if (r->have_ledger && !o->dry_run) {
        rc = sw_ledger_tune_begin(&r->ledger, r->base->name, o->objective.text, space, &r->run_id,
                                  &resumed, e);
        if (!rc)
            rc = sw_ledger_tune_probes(&r->ledger, r->run_id, &r->prior, e);
        if (rc)
            goto out;
        size_t i;
        const json_t *x;
        json_array_foreach(r->prior, i, x)
        {
            int s = (int)json_integer_value(json_object_get(x, "seq"));
            const char *oc = json_string_value(json_object_get(x, "outcome"));
            if (s > r->seq)
                r->seq = s;
            if (oc && strcmp(oc, "rejected"))
                r->boots++;
        }
        if (resumed)
            note(r, "resuming run %lld: %zu probes decided, %d boots spent", (long long)r->run_id,
                 json_array_size(r->prior), r->boots);
    }
    json_t *frozen = json_array();
    for (size_t i = 0; i < r->base->n_frozen; i++)
        json_array_append_new(frozen, json_string(r->base->frozen[i].name));
    for (const char *const *w = (const char *const[]){"payload", "quantization", "image", NULL}; *w;
         w++)
        if (!sw_fleet_endpoint_frozen(r->base, *w))
            json_array_append_new(frozen, json_sprintf("%s (always)", *w));
    json_object_set_new(rep, "endpoint", json_string(r->base->name));
    json_object_set_new(rep, "fleet", json_string(o->fleet));
    json_object_set_new(rep, "objective", json_string(o->objective.text));
    json_object_set_new(rep, "engine", json_string(sw_fleet_engine_name(r->base->engine)));
    json_object_set_new(rep, "boot",
                        json_string(r->boot == SW_TUNE_BOOT_SIM       ? "sim"
                                    : r->boot == SW_TUNE_BOOT_ROLLOUT ? "rollout"
                                                                      : "local"));
    json_object_set_new(rep, "dry_run", json_boolean(o->dry_run));
    json_object_set_new(rep, "ledger", lpath[0] ? json_string(lpath) : json_null());
    json_object_set_new(rep, "run", r->run_id ? json_integer(r->run_id) : json_null());
    json_object_set_new(rep, "resumed", json_boolean(resumed));
    json_object_set_new(rep, "space", json_string(space));
    json_object_set_new(rep, "knobs", space_json(r));
    json_object_set_new(rep, "frozen", frozen);
    json_object_set_new(rep, "budget_boots",
                        json_integer(o->budget_boots > 0 ? o->budget_boots : 16));

    rc = search(r, rep, e);
    json_object_set_new(rep, "knobs", space_json(r)); /* with the points refined */
    if (rc == SW_EINTR || r->interrupted) {
        rc = 0;
        json_object_set_new(rep, "outcome", json_string("interrupted"));
    }
    if (rc)
        goto out;
    if (o->dry_run)
        json_object_set_new(rep, "outcome", json_string("dry_run"));
    if (r->boot == SW_TUNE_BOOT_ROLLOUT && !o->dry_run)
        settle_host(r, rep);
    json_object_set_new(rep, "boots", json_integer(r->boots));
    json_object_set_new(rep, "rejected", json_integer(r->rejected));
    json_object_set_new(rep, "noise", r->have_base ? jnum(r->base_noise) : json_null());
    json_object_set(rep, "probes", r->probes);
    if (!json_object_get(rep, "winner"))
        json_object_set_new(rep, "winner", json_null());
    if (!json_object_get(rep, "runner_up"))
        json_object_set_new(rep, "runner_up", json_null());
    if (r->have_ledger && !o->dry_run) {
        const char *oc = json_string_value(json_object_get(rep, "outcome"));
        json_t *apply = json_object_get(rep, "apply");
        json_t *res =
            json_pack("{s:O, s:O, s:O, s:O}", "winner", json_object_get(rep, "winner"), "apply",
                      apply ? apply : json_null(), "boots", json_object_get(rep, "boots"),
                      "rejected", json_object_get(rep, "rejected"));
        /* an interrupted run, or one whose budget ran out, stays open: the next `tune` of the
         * same space resumes it (with a larger --budget-boots) */
        if (strcmp(oc, "interrupted") && strcmp(oc, "budget"))
            rc = sw_ledger_tune_finish(&r->ledger, r->run_id, oc, res, e);
        json_decref(res);
        if (rc)
            goto out;
    }
    *out = rep;
    rep = NULL;
out:
    json_decref(rep);
    if (r) {
        json_decref(r->probes);
        json_decref(r->prior);
        json_decref(r->base_gates);
        if (r->have_ledger)
            sw_ledger_close(&r->ledger);
        sw_fleet_free(r->base_f);
        sw_free(r);
    }
    return rc;
}
