/*
 * fleet/find: what a person typed, found: an endpoint by its name, with an error that helps them
 * when there is none (the fleet file, the name, and the names the fleet does have), and a fleet
 * file told from an endpoint's name on a command line (`slipway down FLEET.yaml | NAME`).
 *
 * What it does not do: guess (no prefix or nearest-name match; the names are listed instead), or
 * look at a file's contents to tell what it is.
 */
#include <slipway/fleet.h>

#include <stdio.h>
#include <string.h>

bool sw_fleet_is_file_name(const char *arg)
{
    size_t n = strlen(arg);
    return (n > 5 && !strcmp(arg + n - 5, ".yaml")) || (n > 4 && !strcmp(arg + n - 4, ".yml"));
}

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
