/*
 * deploy/target: an endpoint named in a fleet file, as a client on this machine reaches it: the
 * file loaded and the endpoint's route opened (sw_service_client_open), held together so the
 * client's strings (its route, served name, key) live as long as it is used. bench and probe
 * start from here.
 *
 * What it deliberately does not do: take a URL (a client given one needs no fleet), or keep the
 * fleet any longer than the client.
 */
#include <slipway/fleet.h>
#include <slipway/service.h>

int sw_service_target_new(const char *fleet_path, const char *name, struct sw_service_target **out,
                          struct sw_err *e)
{
    struct sw_service_target *t = sw_calloc(1, sizeof(*t));
    *out = t;
    if (!t)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_fleet_load(fleet_path ? fleet_path : "fleet.yaml", NULL, &t->fleet, e);
    if (!rc)
        rc = sw_service_client_open(t->fleet, name, &t->client, e);
    return rc;
}

void sw_service_target_free(struct sw_service_target *t)
{
    if (!t)
        return;
    sw_service_client_close(&t->client);
    sw_fleet_free(t->fleet);
    sw_free(t);
}
