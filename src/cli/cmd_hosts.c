/*
 * slipway hosts check [--fleet FILE] [--host NAME] [--deadline DUR] [--json]
 *
 *   Reach each host of a fleet (include/slipway/host.h: local, or ssh with strict host keys) and
 *   say what its endpoints need that it lacks: systemd (installed, and its manager answering
 *   for the endpoints' service scope), the engine binary or the image (by
 *   digest, in podman, else docker), the payload directory; and show the free disk of the
 *   payload's filesystem, memory, GPU device nodes and driver tools. Each host gets its own
 *   deadline: an unreachable host is reported within it, never waited on. The check is the
 *   gate's (sw_gate_host); this file reads the options and prints.
 *
 * Exit: 0 every host reached with nothing missing, 1 a gap (each named), 2 unusable input.
 */
#include "cli.h"

#include <slipway/fleet.h>
#include <slipway/gate.h>

#include <stdio.h>
#include <string.h>

static const struct sw_opt check_opts[] = {
    {"host", 0, "NAME", 0, "only this host", NULL},
    {"deadline", 0, "DUR", 0, "per host: reach it and read its facts within DUR (default 20s)",
     NULL},
    {0},
};

static const char *const check_examples[] = {
    "slipway hosts check --fleet examples/operator.yaml",
    "slipway hosts check --host dankserver --deadline 10s --json",
    NULL,
};

static const struct sw_cmd_spec spec_check = {
    .name = "hosts check",
    .summary = "reach each host; systemd, podman, engine binaries or images, payloads, free disk",
    .synopsis = "[--fleet FILE] [--host NAME] [--deadline DUR] [--json]",
    .about = "Per host: reached (transport, time), systemd and podman versions, whether the\n"
             "systemd manager answers (a manager that does not is a gap), and per endpoint\n"
             "on it: the engine binary (`binary`) or image (by digest) present, the payload\n"
             "present, free disk on the payload's filesystem. ssh hosts are reached with the\n"
             "user's ~/.ssh/config, keys only, and host keys checked strictly against the\n"
             "fleet's known_hosts (or the user's): an unknown or changed key is a gap.\n"
             "The fleet: --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml.\n"
             "Exit: 0 no gap, 1 a gap (each named), 2 unusable input.",
    .opts = check_opts,
    .max_args = 0,
    .examples = check_examples,
    .fleet = true,
};

static const struct sw_opt no_opts[] = {{0}};
static const struct sw_cmd_spec *const subs[] = {&spec_check, NULL};

const struct sw_cmd_spec sw_spec_hosts = {
    .name = "hosts",
    .summary = "check the fleet's hosts: reachable, systemd/podman, binaries, images, payloads",
    .synopsis = "check [--fleet FILE] [--host NAME] [--deadline DUR] [--json]",
    .opts = no_opts,
    .max_args = -1,
    .subs = subs,
    .fleet = true,
};

static void print_host(const json_t *o)
{
    const json_t *gaps = json_object_get(o, "gaps");
    char a[32], b[32];
    const char *name = json_string_value(json_object_get(o, "host"));
    const char *tr = json_string_value(json_object_get(o, "transport"));
    double secs = json_real_value(json_object_get(o, "seconds"));
    if (!json_is_true(json_object_get(o, "reached"))) {
        printf("== %s (%s): NOT REACHED after %.2f s\n", name, tr, secs);
    } else {
        printf("== %s (%s): reached in %.2f s\n", name, tr, secs);
        const json_t *mem = json_object_get(o, "memory");
        const json_t *gpu = json_object_get(o, "gpus");
        const char *pv = json_string_value(json_object_get(o, "podman"));
        const char *dv = json_string_value(json_object_get(o, "docker"));
        printf("   systemd %lld, podman %s, docker %s; memory %s available of %s\n",
               (long long)json_integer_value(json_object_get(o, "systemd")), pv ? pv : "-",
               dv ? dv : "-",
               sw_fmt_bytes((uint64_t)json_integer_value(json_object_get(mem, "available")), a,
                            sizeof(a)),
               sw_fmt_bytes((uint64_t)json_integer_value(json_object_get(mem, "total")), b,
                            sizeof(b)));
        printf("   gpus: /dev/kfd %s, %lld render node(s), %lld nvidia node(s); tools:",
               json_is_true(json_object_get(gpu, "kfd")) ? "yes" : "no",
               (long long)json_integer_value(json_object_get(gpu, "dri_render_nodes")),
               (long long)json_integer_value(json_object_get(gpu, "nvidia_nodes")));
        const json_t *tools = json_object_get(gpu, "tools");
        for (size_t i = 0; i < json_array_size(tools); i++)
            printf(" %s", json_string_value(json_array_get(tools, i)));
        printf("%s\n", json_array_size(tools) ? "" : " none");
        size_t i;
        const json_t *ep;
        json_array_foreach(json_object_get(o, "endpoints"), i, ep)
        {
            const json_t *bj = json_object_get(ep, "binary");
            const json_t *ij = json_object_get(ep, "image");
            const json_t *pj = json_object_get(ep, "payload");
            printf("   %s:", json_string_value(json_object_get(ep, "endpoint")));
            if (bj)
                printf(" binary %s %s;", json_string_value(json_object_get(bj, "path")),
                       json_is_true(json_object_get(bj, "present")) ? "present" : "MISSING");
            if (ij)
                printf(" image %s %s;", json_string_value(json_object_get(ij, "ref")),
                       json_is_true(json_object_get(ij, "present")) ? "present" : "MISSING");
            if (pj)
                printf(" payload %s %s, %s free on %s",
                       json_string_value(json_object_get(pj, "path")),
                       json_is_true(json_object_get(pj, "present")) ? "present" : "MISSING",
                       sw_fmt_bytes((uint64_t)json_integer_value(json_object_get(pj, "free")), a,
                                    sizeof(a)),
                       json_string_value(json_object_get(pj, "filesystem"))
                           ? json_string_value(json_object_get(pj, "filesystem"))
                           : "?");
            printf("\n");
            size_t k;
            const json_t *xj;
            json_array_foreach(json_object_get(ep, "patches"), k, xj)
                printf("     patch %s: %s\n", json_string_value(json_object_get(xj, "verdict")),
                       json_string_value(json_object_get(xj, "line")));
        }
    }
    for (size_t i = 0; i < json_array_size(gaps); i++)
        printf("   GAP %s\n", json_string_value(json_array_get(gaps, i)));
    printf("\n");
}

int sw_cmd_hosts(int argc, char **argv)
{
    const struct sw_cmd_spec *sub;
    struct sw_args a;
    int rc;
    struct sw_err e;
    struct sw_fleet *f = NULL;
    json_t *out = NULL, *hosts = NULL;
    if (!sw_args_parse_sub(&sw_spec_hosts, argc, argv, &sub, &a, &rc))
        return rc;
    bool json = a.json;
    struct sw_cli_fleet fl;
    rc = sw_cli_fleet(&a, 0, 0, &fl);
    if (rc)
        return rc;
    const char *path = fl.path;
    const char *only = sw_args_str(&a, "host");
    int64_t deadline_ms = 20000;
    sw_err_clear(&e);
    rc = sw_args_duration(&a, "deadline", 100, 3600000, &deadline_ms);
    if (rc)
        return rc;
    if (sw_fleet_load(path, NULL, &f, &e))
        return sw_cli_fail(&e, json);
    if (only && !sw_fleet_host(f, only)) {
        sw_err_set(&e, SW_ENOENT, "%s: no host '%s'", path, only);
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    out = json_object();
    hosts = json_array();
    if (!out || !hosts) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    size_t n_gaps = 0;
    for (size_t i = 0; i < f->n_hosts; i++) {
        const struct sw_fleet_host *fh = &f->hosts[i];
        if (only && strcmp(only, fh->name))
            continue;
        json_t *o = NULL;
        size_t g = 0;
        if (sw_gate_host(f, fh, deadline_ms, &o, &g, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        if (!json)
            print_host(o);
        n_gaps += g;
        json_array_append_new(hosts, o);
    }
    sw_json_set_str(out, "fleet", path);
    sw_json_set_str(out, "verdict", n_gaps ? "fail" : "pass");
    sw_json_set_int(out, "gaps", (int64_t)n_gaps);
    sw_json_set_new(out, "hosts", hosts);
    hosts = NULL;
    if (json)
        sw_json_print(stdout, out, true);
    else
        printf("hosts check: %s\n", n_gaps ? "gaps found (exit 1)" : "every host ready");
    rc = n_gaps ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    json_decref(out);
    json_decref(hosts);
    sw_fleet_free(f);
    return rc;
}
