/*
 * fleet/find: what a person typed, found: an endpoint by its name, with an error that helps them
 * when there is none (the fleet file, the name, and the names the fleet does have), and a fleet
 * file told from an endpoint's name on a command line (the CLI's did-you-mean).
 *
 * A name that is none gets the nearest one by edit distance ("did you mean frank-small?"), else
 * the list of the names the fleet has.
 *
 * What it does not do: pick the nearest name for the caller (it is only suggested), or look at
 * a file's contents to tell what it is.
 */
#include <slipway/fleet.h>

#include "fleet_internal.h"

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
    const char *cands[64];
    size_t nc = 0;
    for (size_t i = 0; i < f->n_endpoints && nc < SW_ARRAY_LEN(cands); i++)
        cands[nc++] = f->endpoints[i].name;
    const char *sug = sw__fleet_suggest(name, cands, nc);
    if (sug)
        return sw_err_set(e, SW_ENOENT, "no endpoint '%s' in %s: did you mean %s?", name, f->path,
                          sug);
    for (size_t i = 0; i < f->n_endpoints && o < sizeof(names); i++) {
        int w = snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", f->endpoints[i].name);
        if (w > 0)
            o += (size_t)w;
    }
    return sw_err_set(e, SW_ENOENT, "no endpoint '%s' in %s (it has: %s)", name, f->path,
                      f->n_endpoints ? names : "no endpoints");
}
