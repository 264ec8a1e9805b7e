/*
 * probe/target: an endpoint of a fleet as the battery reaches it (`slipway probe ENDPOINT`): its
 * route (through its host when it listens on the host's loopback: deploy's service client), its
 * served name, engine and API key from where the fleet says, and what the fleet promises its
 * clients: the slots, the window they rely on (the harness's contextWindow, else the
 * max_model_len) and whether a projector is loaded.
 *
 * What it does not do: take a key from argv, or discover what the fleet does not say (the
 * battery asks the endpoint itself for that). The route and the key are deploy's
 * (sw_service_target_new).
 */
#include <slipway/fleet.h>
#include <slipway/probe.h>
#include <slipway/service.h>

#include <string.h>

/* What the fleet promises the endpoint's clients. */
static void promises(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                     struct sw_probe_target *t)
{
    if (ep->shape.seqs.set)
        t->slots = (int)ep->shape.seqs.v;
    const struct sw_fleet_u64 *cw = sw_fleet_client_window(f, ep);
    if (cw && cw->set)
        t->window = (int64_t)cw->v;
    else if (ep->shape.max_model_len.set)
        t->window = (int64_t)ep->shape.max_model_len.v;
    if (ep->payload.mmproj.off)
        t->vision = 0;
    else if (ep->payload.mmproj.v)
        t->vision = 1;
}

int sw_probe_target_open(const char *fleet_path, const char *name, struct sw_probe_target *t,
                         struct sw_probe_endpoint *pe, struct sw_err *e)
{
    memset(pe, 0, sizeof(*pe));
    int rc = sw_service_target_new(fleet_path, name, &pe->svc, e);
    if (rc)
        return rc;
    const struct sw_service_client *sc = &pe->svc->client;
    pe->fleet = pe->svc->fleet;
    promises(pe->fleet, sc->ep, t);
    t->url = sc->route.url;
    t->unix_socket = sc->route.unix_socket;
    t->via = sc->route.via;
    t->model = sc->model;
    t->engine = sc->engine;
    t->api_key = sc->api_key;
    return 0;
}

void sw_probe_target_close(struct sw_probe_endpoint *pe)
{
    if (!pe)
        return;
    sw_service_target_free(pe->svc);
    memset(pe, 0, sizeof(*pe));
}
