/*
 * A tune candidate made: the fleet loaded afresh and the candidate's settings made on its
 * endpoint (sw_gate_set for shape fields; the flag's value in `args` and the variable in `env`
 * replaced for arg. and env. knobs), so its plan and its gates read exactly what would boot. And
 * the guard every candidate passes: no frozen setting moved (nothing here moves one; the check
 * proves it per candidate).
 *
 * What it deliberately does not do: plan, gate or boot the candidate (tune_judge.c).
 */
#include "tune_run_internal.h"

#include <slipway/gate.h>

#include <string.h>

void sw__tune_made_free(struct sw__tune_made *m)
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

static const char *keep(struct sw__tune_made *m, const char *s)
{
    if (m->nstrs >= SW_ARRAY_LEN(m->strs))
        return NULL;
    char *d = sw_strdup(s);
    if (d)
        m->strs[m->nstrs++] = d;
    return d;
}

/* The endpoint's args with every spelling of flag dropped (with its value), then flag and value
 * added. */
static int set_arg(struct sw__tune_made *m, const char *flag, const char *value, struct sw_err *e)
{
    struct sw_fleet_endpoint *ep = m->ep;
    const char *f = keep(m, flag), *v = keep(m, value);
    struct sw_fleet_str *a = f && v ? sw_malloc((ep->n_args + 2) * sizeof(*a)) : NULL;
    if (!a)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    size_t n = 0;
    bool joined = false;
    size_t at = sw__tune_arg_find(ep, flag, 0, &joined);
    for (size_t i = 0; i < ep->n_args; i++) {
        if (i != at) {
            a[n++] = ep->args[i];
            continue;
        }
        const char *next = i + 1 < ep->n_args ? ep->args[i + 1].v : NULL;
        if (!joined && next && next[0] != '-')
            i++;
        at = sw__tune_arg_find(ep, flag, i + 1, &joined);
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

static int set_env(struct sw__tune_made *m, const char *name, const char *value, struct sw_err *e)
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

int sw__tune_make(const struct sw__tune_run *r, const struct sw__tune_cand *c,
                  struct sw__tune_made *m, struct sw_err *e)
{
    const struct sw_tune_opts *o = r->o;
    memset(m, 0, sizeof(*m));
    int rc = sw_fleet_load(o->fleet, NULL, &m->f, e);
    if (rc)
        return rc;
    m->ep = (struct sw_fleet_endpoint *)sw_fleet_endpoint(m->f, o->endpoint);
    if (!m->ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s'", o->fleet, o->endpoint);
    for (size_t i = 0; i < c->n; i++) {
        const struct sw__tune_knob *k = &r->ks[c->knob[i]];
        const char *v = k->values[c->value[i]];
        if (k->kind == SW__TUNE_ARG)
            rc = set_arg(m, k->name + 4, v, e);
        else if (k->kind == SW__TUNE_ENV)
            rc = set_env(m, k->name + 4, v, e);
        else
            rc = sw_gate_set(m->ep, k->kv[c->value[i]], e);
        if (rc)
            return rc;
    }
    return 0;
}

const char *sw__tune_frozen_moved(const struct sw_fleet_endpoint *base,
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
