/*
 * gate/check: `slipway check` over a fleet (sw_gate_check_open / _next / _doc / _close): load the
 * fleet (fleet check's validation: a fleet with a mistake is unusable input), find the endpoint
 * asked for (naming the fleet's endpoints when it is not there), apply the --set overrides to it
 * (keeping the shape as the fleet file gives it, for the arena gate), open the ledger read-only
 * (an explicit one must be usable; the default beside the fleet may be absent), then run every
 * gate on each endpoint in turn (the one asked for, else every enabled one) and keep the results
 * for the document --json prints.
 *
 * What it deliberately does not do: print (the CLI renders each result as it comes, so what was
 * judged before an unusable endpoint is still shown), or write the ledger.
 */
#include "gate_internal.h"

#include <string.h>

/* The endpoint asked for, or SW_ENOENT naming the ones the fleet has. */
static int find_target(struct sw_gate_check *c, struct sw_err *e)
{
    struct sw_fleet *f = c->fleet;
    char names[1024] = "";
    size_t o = 0;
    c->target = (struct sw_fleet_endpoint *)sw_fleet_endpoint(f, c->opts.endpoint);
    if (c->target)
        return 0;
    for (size_t i = 0; i < f->n_endpoints && o < sizeof(names); i++) {
        int w = snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", f->endpoints[i].name);
        if (w > 0)
            o += (size_t)w;
    }
    return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s' (the fleet has: %s)", c->opts.fleet_path,
                      c->opts.endpoint, names);
}

/* The ledger: read-only; an explicit path must be usable, the default may be absent. */
static int open_ledger(struct sw_gate_check *c, struct sw_err *e)
{
    struct sw_ledger_open_opts oo = {.readonly = true};
    if (c->opts.no_ledger)
        return 0;
    int rc = sw_ledger_open_for(&c->ledger, c->opts.ledger_path, c->opts.fleet_path, &oo,
                                SW_LEDGER_DEFAULT_MAY_BE_ABSENT, &c->have_ledger, c->ledger_at,
                                sizeof(c->ledger_at), e);
    if (rc) {
        /* a ledger that cannot be read is unusable input, whatever the database said */
        sw_err_prefix(e, "the ledger");
        c->ledger_failed = true;
        return rc;
    }
    c->ledger_absent = !c->have_ledger;
    return 0;
}

int sw_gate_check_open(struct sw_gate_check *c, const struct sw_gate_check_opts *o,
                       struct sw_err *e)
{
    int rc;
    memset(c, 0, sizeof(*c));
    c->opts = *o;
    c->results = json_array();
    if (!c->results)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    rc = sw_fleet_load(o->fleet_path, NULL, &c->fleet, e);
    if (!rc && o->endpoint)
        rc = find_target(c, e);
    if (rc)
        return rc;
    if (c->target)
        c->before = c->target->shape;
    for (size_t i = 0; i < o->n_sets; i++) {
        rc = sw_gate_set(c->target, o->sets[i], e);
        if (rc)
            return rc;
    }
    return open_ledger(c, e);
}

int sw_gate_check_next(struct sw_gate_check *c, const json_t **result, struct sw_err *e)
{
    struct sw_gate_opts go = {.ledger = c->have_ledger ? &c->ledger : NULL,
                              .pool_margin = c->opts.margin,
                              .before = c->opts.n_sets ? &c->before : NULL};
    *result = NULL;
    while (c->next < c->fleet->n_endpoints) {
        const struct sw_fleet_endpoint *ep = &c->fleet->endpoints[c->next++];
        json_t *r = NULL;
        if (c->target ? ep != c->target : !ep->enabled)
            continue;
        int rc = sw_gate_endpoint(c->fleet, ep, &go, &r, e);
        if (rc)
            return rc;
        c->failed |= !strcmp(json_string_value(json_object_get(r, "verdict")), "fail");
        if (json_array_append_new(c->results, r))
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        *result = r;
        return 0;
    }
    return 0;
}

json_t *sw_gate_check_doc(const struct sw_gate_check *c)
{
    json_t *out = json_object();
    if (!out)
        return NULL;
    sw_json_set_str(out, "fleet", c->opts.fleet_path);
    if (c->have_ledger)
        sw_json_set_str(out, "ledger", c->ledger_at);
    else
        sw_json_set_new(out, "ledger", json_null());
    if (c->opts.n_sets) {
        json_t *sa = json_array();
        for (size_t i = 0; sa && i < c->opts.n_sets; i++)
            json_array_append_new(sa, json_string(c->opts.sets[i]));
        sw_json_set_new(out, "set", sa);
    }
    sw_json_set_str(out, "verdict", c->failed ? "fail" : "pass");
    sw_json_set_new(out, "endpoints", json_incref(c->results));
    return out;
}

void sw_gate_check_close(struct sw_gate_check *c)
{
    json_decref(c->results);
    sw_ledger_close(&c->ledger);
    sw_fleet_free(c->fleet);
    memset(c, 0, sizeof(*c));
}
