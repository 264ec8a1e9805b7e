/*
 * fleet/find: an endpoint looked up by the name a person typed, with an error that helps them
 * when there is none: the fleet file, the name, and the names the fleet does have.
 *
 * What it does not do: guess (no prefix or nearest-name match; the names are listed instead).
 */
#include <slipway/fleet.h>

#include <stdio.h>

int sw_fleet_find_endpoint(const struct sw_fleet *f, const char *name,
                           const struct sw_fleet_endpoint **ep, struct sw_err *e)
{
    char names[1024] = "";
    size_t o = 0;
    *ep = sw_fleet_endpoint(f, name);
    if (*ep)
        return 0;
    for (size_t i = 0; i < f->n_endpoints && o < sizeof(names); i++) {
        int w = snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", f->endpoints[i].name);
        if (w > 0)
            o += (size_t)w;
    }
    return sw_err_set(e, SW_ENOENT, "%s: no endpoint '%s' (the fleet has: %s)", f->path, name,
                      names);
}
