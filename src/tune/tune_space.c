/*
 * tune's search space: the endpoint's declared knobs, each as a list of values (a set as given;
 * a range as its min, max and two points between, on its step, later refined around its best),
 * the baseline's value of each as the endpoint says it (a shape field, an engine flag in `args`,
 * an env variable), and a candidate's key ("batch_size=512 arg.--threads=4"), which names it in
 * the journal. The space's own name in the journal is a hash of all of it with the measure's
 * settings, so only a run over the same space resumes another.
 *
 * What it deliberately does not do: make a candidate on the endpoint (tune_candidate.c), or
 * decide which candidates are tried (tune_search.c).
 */
#include "tune_run_internal.h"

#include <string.h>

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

size_t sw__tune_arg_find(const struct sw_fleet_endpoint *ep, const char *flag, size_t from,
                         bool *joined)
{
    size_t fl = strlen(flag);
    for (size_t i = from; i < ep->n_args; i++) {
        const char *a = ep->args[i].v;
        if (!a)
            continue;
        *joined = !strncmp(a, flag, fl) && a[fl] == '=';
        if (*joined || sw__tune_flag_is(a, flag))
            return i;
    }
    return ep->n_args;
}

/* The value of flag in the endpoint's args ("" when absent; "on" for a flag given bare). */
void sw__tune_arg_value(const struct sw_fleet_endpoint *ep, const char *flag, char *out, size_t n)
{
    bool joined = false;
    out[0] = '\0';
    for (size_t i = sw__tune_arg_find(ep, flag, 0, &joined); i < ep->n_args;
         i = sw__tune_arg_find(ep, flag, i + 1, &joined)) {
        if (joined) {
            snprintf(out, n, "%s", ep->args[i].v + strlen(flag) + 1);
            continue;
        }
        const char *v = i + 1 < ep->n_args ? ep->args[i + 1].v : NULL;
        snprintf(out, n, "%s", v && v[0] != '-' ? v : "on");
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

void sw__tune_knob_add(struct sw__tune_knob *k, const char *v)
{
    for (size_t i = 0; i < k->nvalues; i++)
        if (!strcmp(k->values[i], v))
            return;
    if (k->nvalues >= SW__TUNE_MAX_VALUES)
        return;
    snprintf(k->values[k->nvalues], sizeof(k->values[0]), "%s", v);
    snprintf(k->kv[k->nvalues], sizeof(k->kv[0]), "%s=%s", k->name, v);
    k->nvalues++;
}

/* A range as at most four points: min, a third and two thirds of the way (on the step), max. */
static void range_values(const struct sw_fleet_knob *kb, struct sw__tune_knob *k)
{
    char buf[64];
    struct sw_fleet_value v = kb->min;
    if (kb->type == SW_FLEET_V_REAL) {
        for (int i = 0; i <= 3; i++) {
            v.f = kb->min.f + (kb->max.f - kb->min.f) * i / 3.0;
            sw__tune_fmt_value(&v, buf, sizeof(buf));
            sw__tune_knob_add(k, buf);
        }
    } else {
        uint64_t lo = kb->min.u, hi = kb->max.u;
        uint64_t step = kb->step.set && kb->step.u ? kb->step.u : 1;
        for (int i = 0; i <= 3; i++) {
            uint64_t x = lo + (uint64_t)((double)(hi - lo) * i / 3.0);
            x = lo + (x - lo) / step * step;
            if (i == 3)
                x = hi;
            v.u = x;
            sw__tune_fmt_value(&v, buf, sizeof(buf));
            sw__tune_knob_add(k, buf);
        }
    }
    k->is_range = true;
    k->is_real = kb->type == SW_FLEET_V_REAL;
    k->lo = k->is_real ? kb->min.f : (double)kb->min.u;
    k->hi = k->is_real ? kb->max.f : (double)kb->max.u;
    k->step = k->is_real ? 0 : kb->step.set && kb->step.u ? (double)kb->step.u : 1;
}

/* The load side (`load.mix`): swept inside every boot, never a candidate. Its mixes into r. */
static int load_mixes(struct sw__tune_run *r, const struct sw_fleet_knob *kb,
                      struct sw__tune_knob *k, struct sw_err *e)
{
    const char *ep = r->base->name;
    k->kind = SW__TUNE_LOAD;
    snprintf(k->baseline, sizeof(k->baseline), "(every mix, each boot)");
    if (kb->n_values > SW__TUNE_MAX_MIXES)
        return sw_fleet_err_at(e, SW_ERANGE, &kb->at,
                               "%s: load.mix lists %zu mixes; at most %d (each is measured at "
                               "every level in every boot)",
                               ep, kb->n_values, SW__TUNE_MAX_MIXES);
    for (size_t j = 0; j < kb->n_values; j++) {
        struct sw__tune_mix *mx = &r->mixes[r->nmix];
        struct sw_err me;
        sw_err_clear(&me);
        if (sw__tune_mix_parse(kb->values[j].s, mx, &me))
            return sw_fleet_err_at(e, SW_EINVAL,
                                   kb->values[j].at.file ? &kb->values[j].at : &kb->at, "%s: %s",
                                   ep, me.msg);
        for (size_t q = 0; q < r->nmix; q++)
            if (!strcmp(r->mixes[q].name, mx->name))
                return sw_fleet_err_at(e, SW_EINVAL, &kb->values[j].at,
                                       "%s: load.mix lists %s twice", ep, r->mixes[q].name);
        sw__tune_knob_add(k, mx->name);
        r->nmix++;
    }
    return 0;
}

/* One declared knob into k: its kind, the baseline's value and its values. */
static int knob_of(struct sw__tune_run *r, const struct sw_fleet_knob *kb, struct sw__tune_knob *k,
                   struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->base;
    memset(k, 0, sizeof(*k));
    k->name = kb->name;
    k->at = kb->at;
    if (!strcmp(kb->name, "load.mix")) {
        int rc = load_mixes(r, kb, k, e);
        if (rc)
            return rc;
    } else if (!strncmp(kb->name, "arg.", 4)) {
        k->kind = SW__TUNE_ARG;
        sw__tune_arg_value(ep, kb->name + 4, k->baseline, sizeof(k->baseline));
    } else if (!strncmp(kb->name, "env.", 4)) {
        k->kind = SW__TUNE_ENV;
        sw__tune_env_value(ep, kb->name + 4, k->baseline, sizeof(k->baseline));
    } else {
        struct sw_fleet_value v;
        k->kind = SW__TUNE_SHAPE;
        if (sw_fleet_shape_get(&ep->shape, kb->name, &v) == 0 && v.set)
            sw__tune_fmt_value(&v, k->baseline, sizeof(k->baseline));
    }
    if (kb->is_range) {
        range_values(kb, k);
    } else {
        char buf[64];
        for (size_t j = 0; j < kb->n_values; j++) {
            sw__tune_fmt_value(&kb->values[j], buf, sizeof(buf));
            sw__tune_knob_add(k, buf);
        }
    }
    k->ncoarse = k->nvalues;
    return 0;
}

int sw__tune_space_build(struct sw__tune_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->base;
    r->nk = 0;
    r->nmix = 0;
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
        if (r->nk >= SW__TUNE_MAX_KNOBS)
            return sw_fleet_err_at(e, SW_ERANGE, &kb->at, "%s: more than %d knobs to tune",
                                   ep->name, SW__TUNE_MAX_KNOBS);
        int rc = knob_of(r, kb, &r->ks[r->nk++], e);
        if (rc)
            return rc;
    }
    return 0;
}

void sw__tune_cand_single(struct sw__tune_cand *c, size_t k, size_t v)
{
    memset(c, 0, sizeof(*c));
    c->knob[0] = (int)k;
    c->value[0] = (int)v;
    c->n = 1;
}

json_t *sw__tune_cand_settings(const struct sw__tune_run *r, const struct sw__tune_cand *c)
{
    json_t *s = json_object();
    for (size_t i = 0; s && i < c->n; i++)
        json_object_set_new(s, r->ks[c->knob[i]].name,
                            json_string(r->ks[c->knob[i]].values[c->value[i]]));
    return s;
}

void sw__tune_cand_key(const struct sw__tune_knob *ks, struct sw__tune_cand *c)
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

json_t *sw__tune_space_json(const struct sw__tune_run *r)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < r->nk; i++) {
        const struct sw__tune_knob *k = &r->ks[i];
        json_t *vals = json_array(), *ref = json_array();
        for (size_t j = 0; j < k->nvalues; j++)
            json_array_append_new(j < k->ncoarse ? vals : ref, json_string(k->values[j]));
        json_t *kj = json_pack("{s:s, s:o, s:s, s:s, s:s}", "name", k->name, "values", vals,
                               "baseline", k->baseline[0] ? k->baseline : "(engine default)",
                               "kind", k->kind == SW__TUNE_LOAD ? "load" : "boot", "at",
                               k->at.file ? k->at.file : "");
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

/* FNV-1a of s into *h. */
static void fnv(uint64_t *h, const char *s)
{
    for (; *s; s++)
        *h = (*h ^ (unsigned char)*s) * 1099511628211ull;
}

void sw__tune_space_key(const struct sw__tune_run *r, char *out, size_t n)
{
    /* FNV-1a over what makes two runs comparable: knobs, values, baseline, measure settings */
    uint64_t h = 1469598103934665603ull;
    char buf[128];
    for (size_t i = 0; i < r->nk; i++) {
        fnv(&h, r->ks[i].name);
        fnv(&h, "|");
        fnv(&h, r->ks[i].baseline);
        for (size_t j = 0; j < r->ks[i].nvalues; j++) {
            fnv(&h, ",");
            fnv(&h, r->ks[i].values[j]);
        }
        fnv(&h, ";");
    }
    snprintf(buf, sizeof(buf), "%d/%d/%lld/%d", r->o->repeats, r->o->max_concurrency,
             (long long)r->o->tokens, (int)r->boot);
    fnv(&h, buf);
    for (size_t i = 0; i < r->o->n_levels && i < SW_ARRAY_LEN(r->o->levels); i++) {
        snprintf(buf, sizeof(buf), "c%d", r->o->levels[i]);
        fnv(&h, buf);
    }
    snprintf(out, n, "%zu knobs, fnv %016llx", r->nk, (unsigned long long)h);
}
