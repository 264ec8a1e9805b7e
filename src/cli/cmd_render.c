/*
 * slipway render ENDPOINT [FLEET.yaml] [--out DIR] [--json]
 *
 *   Render an endpoint as a systemd service (include/slipway/unit.h): the unit, its environment
 *   file and, for a container, the container's argv. The human view prints both files (secret
 *   values shown as ***); --out DIR writes NAME.service and NAME.env (0600, with the secrets)
 *   whole or not at all; --json prints {unit, files: [{name, mode, text}], engine_argv,
 *   container: {argv, stop, image, pinned} | null, timing, warnings}.
 *
 * Exit: 0 rendered, 1 the files could not be written, 2 unusable input (a broken fleet, an
 * unknown endpoint, an endpoint that cannot be rendered: a path outside its mounts...).
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/unit.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"out", 'o', "DIR", 0,
     "write NAME.service and NAME.env (mode 0600, with the secret values) into DIR", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway render frank-primary examples/operator.yaml",
    "slipway render frank-small examples/operator.yaml --out /tmp/units",
    "slipway render local examples/local.yaml --json",
    NULL,
};

const struct sw_cmd_spec sw_spec_render = {
    .name = "render",
    .summary = "render an endpoint as a systemd service: the unit, its env file, the container",
    .synopsis = "ENDPOINT [FLEET.yaml] [--out DIR] [--json]",
    .about = "Renders from the endpoint's plan (the one argv of its engine) and the fleet's\n"
             "runtime: (native, podman, docker) and service: settings. Secrets go only to the\n"
             "env file; printed text shows them as ***. The same fleet renders byte-identical\n"
             "files. FLEET.yaml defaults to ./fleet.yaml.\n"
             "Exit: 0 rendered, 1 the files could not be written, 2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
};

int sw_cmd_render(int argc, char **argv)
{
    struct sw_err e;
    struct sw_fleet *f = NULL;
    struct sw_unit_render r;
    json_t *out = NULL;
    int rc = SW_EXIT_OK;

    sw_err_clear(&e);
    memset(&r, 0, sizeof(r));
    struct sw_args a;
    if (!sw_args_parse(&sw_spec_render, argc, argv, &a, &rc))
        return rc;
    bool json = a.json;
    if (a.npos < 1)
        return sw_args_usage(&a, "name the ENDPOINT to render");
    const char *name = a.pos[0];
    const char *fleet_path = a.npos > 1 ? a.pos[1] : "fleet.yaml";
    const char *dir = sw_args_str(&a, "out");
    if (dir && !*dir)
        return sw_args_usage(&a, "--out: want a directory");

    if (sw_fleet_load(fleet_path, NULL, &f, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    if (!ep) {
        char names[1024] = "";
        size_t o = 0;
        for (size_t i = 0; i < f->n_endpoints && o < sizeof(names); i++) {
            int w =
                snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", f->endpoints[i].name);
            if (w > 0)
                o += (size_t)w;
        }
        sw_err_set(&e, SW_ENOENT, "%s: no endpoint '%s' (the fleet has: %s)", fleet_path, name,
                   names);
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (sw_unit_render_endpoint(f, ep, &r, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (dir && sw_unit_render_write(&r, dir, &e)) {
        e.code = SW_EIO; /* the render was fine: writing it failed */
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (json) {
        out = sw_unit_render_json(&r);
        if (out && dir)
            sw_json_set_str(out, "written", dir);
        if (!out) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        sw_json_print(stdout, out, true);
        goto out;
    }
    for (size_t i = 0; i < r.n_warnings; i++)
        fprintf(stderr, "slipway: warning: %s\n", r.warnings[i]);
    if (dir) {
        printf("wrote %s/%s (0644) and %s/%s (0600)\n", dir, r.service.name, dir, r.env.name);
        goto out;
    }
    printf("### %s (mode 0644)\n%s\n### %s (mode 0600, secrets shown as ***; install to %s)\n%s",
           r.service.name, r.service.shown, r.env.name, r.env_path, r.env.shown);
out:
    json_decref(out);
    sw_unit_render_free(&r);
    sw_fleet_free(f);
    return rc;
}
