/*
 * bench/target: an endpoint of a fleet as bench measures it (`slipway bench ENDPOINT`): the
 * route a client on this machine takes to it (through its host when it listens on the host's
 * loopback: deploy's service client), its served name, its engine, its API key from where the
 * fleet says, and the decode roofline from its plan and its devices' bandwidth.
 *
 * What it does not do: take a key from argv, or fail a run for want of a roofline (the run goes
 * on without one and says why). The route and the key are deploy's (sw_service_target_new).
 */
#include <slipway/bench.h>
#include <slipway/plan.h>
#include <slipway/service.h>

#include <stdio.h>
#include <string.h>

/* The decode roofline from the endpoint's plan; roof_why says why there is none. */
static void roofline(struct sw_bench_target *t, struct sw_bench_opts *o)
{
    struct sw_plan plan;
    struct sw_err pe;
    sw_err_clear(&pe);
    memset(&plan, 0, sizeof(plan));
    int rc = sw_plan_endpoint(t->fleet, t->ep, NULL, &plan, &pe);
    if (!rc)
        rc = sw_bench_roof_from_plan(&plan, &t->roof, &pe);
    if (rc)
        snprintf(t->roof_why, sizeof(t->roof_why), "%.290s", pe.msg);
    else
        o->roof = &t->roof;
    o->roof_why = t->roof_why;
    sw_plan_free(&plan);
}

int sw_bench_target_open(const char *fleet_path, const char *name, struct sw_bench_opts *o,
                         struct sw_bench_target *t, struct sw_err *e)
{
    memset(t, 0, sizeof(*t));
    int rc = sw_service_target_new(fleet_path, name, &t->svc, e);
    if (!rc) {
        const struct sw_service_client *sc = &t->svc->client;
        t->fleet = t->svc->fleet;
        t->ep = sc->ep;
        o->url = sc->route.url;
        o->unix_socket = sc->route.unix_socket;
        o->model = sc->model;
        o->engine = sc->engine;
        o->api_key = sc->api_key;
        roofline(t, o);
    }
    return rc;
}

void sw_bench_target_close(struct sw_bench_target *t)
{
    if (t) {
        sw_service_target_free(t->svc);
        t->svc = NULL;
        t->fleet = NULL;
        t->ep = NULL;
    }
}
