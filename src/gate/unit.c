/*
 * gate/unit: the `unit` gate of `slipway check`: the endpoint's systemd service as `slipway render`
 * writes it, parsed back by the one unit scanner and held to the unit laws (unit/lint). A render
 * that fails (a path outside every container mount, a `~` path) fails the gate with the render's
 * words; a lint error fails it; lint warnings pass with the warnings in the evidence.
 *
 * `systemd-analyze verify` runs only for an endpoint on a local host (it checks that every Exec
 * binary exists, which is true only where the unit will run); a remote endpoint is verified when it
 * is installed.
 */
#include "gate_internal.h"

#include <slipway/unit.h>
#include <slipway/unit_lint.h>

#include <string.h>

int sw__gate_unit(struct sw__gate_run *r, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    struct sw_unit_render ur;
    struct sw_unit *u = NULL;
    struct sw_unit_report rep = {0};
    struct sw_err le;
    char eb[1200];
    json_t *g = NULL;
    int rc = 0;

    memset(&ur, 0, sizeof(ur));
    sw_err_clear(&le);
    if (!ep->enabled) {
        g = sw__gate_add(r, "unit", SW_GATE_SKIP, "%s is retired (enabled: false): no unit",
                         ep->name);
        goto out;
    }
    rc = sw_unit_render_endpoint(r->f, ep, &ur, &le);
    if (rc) {
        if (le.code == SW_ENOMEM) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        rc = 0;
        g = sw__gate_add(r, "unit", SW_GATE_FAIL, "the unit cannot be rendered: %s",
                         sw_err_format(&le, eb, sizeof(eb)));
        if (g)
            sw__gate_fix(g, "see `slipway render %s`", ep->name);
        goto out;
    }
    sw_err_clear(&le);
    rc = sw_unit_parse(ur.service.text, ur.service.len, ur.service.name, ur.env.text, &u, &le);
    if (rc) {
        rc = sw_err_set(e, le.code, "%s: the rendered unit does not parse back: %s", ep->name,
                        sw_err_format(&le, eb, sizeof(eb)));
        goto out;
    }
    struct sw_unit_lint_opts lo = {0};
    lo.verify = ep->host && ep->host->transport == SW_FLEET_LOCAL;
    rc = sw_unit_lint(u, &lo, &rep, &le);
    if (rc) {
        rc = sw_err_set(e, le.code, "%s: unit lint: %s", ep->name,
                        sw_err_format(&le, eb, sizeof(eb)));
        goto out;
    }
    size_t errors = 0, warnings = 0;
    const struct sw_unit_finding *first = NULL;
    for (size_t i = 0; i < rep.n; i++) {
        if (rep.v[i].severity == SW_UNIT_ERROR) {
            if (!errors)
                first = &rep.v[i];
            errors++;
        } else {
            warnings++;
        }
    }
    if (errors)
        g = sw__gate_add(r, "unit", SW_GATE_FAIL, "%s:%d: %s: %s%s", ur.service.name, first->line,
                         first->law, first->msg, errors > 1 ? " (and more: see evidence)" : "");
    else
        g = sw__gate_add(r, "unit", SW_GATE_PASS, "%s (%s%s): every unit law holds%s%s",
                         ur.service.name, sw_fleet_runtime_name(ur.runtime),
                         ur.image ? ", image pinned by digest" : "",
                         warnings ? "; warnings in evidence" : "",
                         lo.verify ? "; systemd-analyze verify is silent" : "");
    if (!g) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    sw__gate_str(g, "unit", ur.service.name);
    sw__gate_num(g, "findings", (double)rep.n);
    sw__gate_num(g, "stop_timeout_s", (double)ur.timing.stop_timeout_ms / 1000.0);
    if (ur.timing.stop_grace_ms)
        sw__gate_num(g, "stop_grace_s", (double)ur.timing.stop_grace_ms / 1000.0);
    for (size_t i = 0; i < rep.n; i++)
        sw__gate_evidence(g, json_pack("{s:s,s:s,s:i,s:s}", "law", rep.v[i].law, "severity",
                                       rep.v[i].severity == SW_UNIT_ERROR ? "error" : "warning",
                                       "line", rep.v[i].line, "msg", rep.v[i].msg));
    if (errors && !strcmp(first->law, SW_UNIT_LAW_IMAGE))
        sw__gate_fix(g,
                     "pin image: as NAME@sha256:<digest> in the fleet (`podman images --digests` "
                     "on %s gives it)",
                     ep->host ? ep->host->name : "the host");
    else if (errors)
        sw__gate_fix(g, "see `slipway render %s --lint`", ep->name);
out:
    sw_unit_report_free(&rep);
    sw_unit_free(u);
    sw_unit_render_free(&ur);
    return rc;
}
