/*
 * deploy/client: a fleet endpoint as a client on this machine reaches it (service.h): the one
 * place probe, bench and later clients turn an endpoint's name into what their requests need.
 *
 * What it deliberately does not do: send a request, or decide defaults a client has of its own
 * (probe's window and slots stay probe's).
 */
#include "deploy_internal.h"
#include "service_internal.h"

#include <slipway/engine.h>
#include <slipway/service.h>

#include <string.h>

int sw_service_client_open(const struct sw_fleet *f, const char *name, struct sw_service_client *c,
                           struct sw_err *e)
{
    memset(c, 0, sizeof(*c));
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    if (!ep)
        return sw_err_set(e, SW_ENOENT, "%s: no endpoint named '%s' (and it is not a URL)",
                          f->path ? f->path : "the fleet", name);
    c->ep = ep;
    c->model = ep->alias.v;
    c->engine = ep->engine ? sw_fleet_engine_name(ep->engine) : NULL;
    if (ep->api_key.kind != SW_FLEET_SECRET_NONE) {
        int rc = sw_engine_read_secret(&ep->api_key, "api_key", &c->api_key, e);
        if (rc)
            return rc;
    }
    return sw_host_route_open(&c->route, ep, NULL, 0, e);
}

void sw_service_client_close(struct sw_service_client *c)
{
    if (!c)
        return;
    sw_host_route_close(&c->route);
    if (c->api_key) {
        memset(c->api_key, 0, strlen(c->api_key));
        sw_free(c->api_key);
    }
    c->api_key = NULL;
}

int sw_service_client_health(const struct sw_service_client *c, unsigned timeout_ms)
{
    int status = 0;
    double ms = 0;
    if (c && c->ep)
        sw__svc_health(sw__svc_engine(c->ep), &c->route, c->api_key, timeout_ms, &status, &ms);
    return status;
}
