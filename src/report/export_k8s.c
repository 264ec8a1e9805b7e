/*
 * report/export_k8s: an endpoint as Kubernetes objects for kubectl (`slipway render --target
 * k8s`), only once the gates pass (a shape `slipway check` rejects is not rendered; a failure the
 * fleet waives passes, and the document's "waivers" says which), with the
 * startupProbe sized from the slowest boot the ledger measured (sw_report_boot_ms), and the
 * objects as YAML. The objects themselves are unit's (sw_unit_render_k8s).
 *
 * What it does not do: write the file (the CLI writes what this returns, atomically), or apply
 * anything to a cluster.
 */
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/report.h>
#include <slipway/unit_k8s.h>

#include <stdio.h>
#include <string.h>

/* The workload (Deployment or LeaderWorkerSet) carries what it was let through on:
 * slipway.dev/waivers: "GATE until DATE (FILE:LINE): REASON; ...", for whoever reads the cluster. */
static int annotate_waivers(const json_t *objects, const json_t *waivers)
{
    char text[4096];
    size_t o = 0, i;
    const json_t *w, *obj;
    text[0] = '\0';
    json_array_foreach(waivers, i, w)
    {
        int n = snprintf(text + o, sizeof(text) - o, "%s%s until %s (%s:%lld): %s", i ? "; " : "",
                         json_string_value(json_object_get(w, "gate")),
                         json_string_value(json_object_get(w, "until")),
                         json_string_value(json_object_get(w, "file")),
                         (long long)json_integer_value(json_object_get(w, "line")),
                         json_string_value(json_object_get(w, "reason")));
        if (n < 0 || (size_t)n >= sizeof(text) - o)
            break;
        o += (size_t)n;
    }
    json_array_foreach(objects, i, obj)
    {
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        json_t *md = json_object_get(obj, "metadata");
        if (!kind || !md || (strcmp(kind, "Deployment") && strcmp(kind, "LeaderWorkerSet")))
            continue;
        json_t *an = json_object_get(md, "annotations");
        if (!an) {
            an = json_object();
            if (!an || sw_json_set_new(md, "annotations", an))
                return SW_ENOMEM;
        }
        if (sw_json_set_str(an, "slipway.dev/waivers", text))
            return SW_ENOMEM;
    }
    return 0;
}

int sw_export_k8s(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                  const struct sw_report_opts *o, unsigned nodes, struct sw_export_k8s *out,
                  struct sw_err *e)
{
    struct sw_gate_opts go = {.ledger = o ? o->ledger : NULL};
    out->check = out->doc = NULL;
    out->rejected = false;
    out->name[0] = '\0';
    int rc = sw_gate_endpoint(f, ep, &go, &out->check, e);
    if (rc)
        return rc;
    const char *v = json_string_value(json_object_get(out->check, "verdict"));
    out->rejected = !v || strcmp(v, "pass");
    if (out->rejected)
        return 0;
    /* the slowest measured boot sizes the startupProbe; a ledger that cannot say is no boot */
    struct sw_k8s_opts ko = {.nodes = nodes};
    sw_report_boot_ms(go.ledger, ep->name, &ko.boot_ms, NULL);
    rc = sw_unit_render_k8s(f, ep, &ko, &out->doc, e);
    if (rc)
        return rc;
    /* what the gates let through on the operator's word (gate.h sw_gate_waive) */
    json_t *wv = json_object_get(out->check, "waivers");
    if (sw_json_set_new(out->doc, "waivers", wv ? json_incref(wv) : json_array()))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    const json_t *objects = json_object_get(out->doc, "objects");
    if (json_array_size(wv) && annotate_waivers(objects, wv))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (sw_unit_k8s_yaml(objects, out->yaml))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    const char *nm = json_string_value(
        json_object_get(json_object_get(json_array_get(objects, 0), "metadata"), "name"));
    snprintf(out->name, sizeof(out->name), "%s", nm ? nm : ep->name);
    return 0;
}
