/*
 * slipway hosts check [FLEET.yaml] [--host NAME] [--deadline DUR] [--json]
 *
 *   Reach each host of a fleet (include/slipway/host.h: local, or ssh with strict host keys) and
 *   say what its endpoints need that it lacks: systemd (installed, and its manager answering
 *   for the endpoints' service scope), the engine binary or the image (by
 *   digest, in podman, else docker), the payload directory; and show the free disk of the
 *   payload's filesystem, memory, GPU device nodes and driver tools. Each host gets its own
 *   deadline: an unreachable host is reported within it, never waited on.
 *
 * Exit: 0 every host reached with nothing missing, 1 a gap (each named), 2 unusable input.
 */
#include "cli.h"

#include <slipway/gate.h>

#include <slipway/fleet.h>
#include <slipway/host.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct sw_opt check_opts[] = {
    {"host", 0, "NAME", 0, "only this host", NULL},
    {"deadline", 0, "DUR", 0, "per host: reach it and read its facts within DUR (default 20s)",
     NULL},
    {0},
};

static const char *const check_examples[] = {
    "slipway hosts check examples/operator.yaml",
    "slipway hosts check fleet.yaml --host dankserver --deadline 10s --json",
    NULL,
};

static const struct sw_cmd_spec spec_check = {
    .name = "hosts check",
    .summary = "reach each host; systemd, podman, engine binaries or images, payloads, free disk",
    .synopsis = "[FLEET.yaml] [--host NAME] [--deadline DUR] [--json]",
    .about = "Per host: reached (transport, time), systemd and podman versions, whether the\n"
             "systemd manager answers (a manager that does not is a gap), and per endpoint\n"
             "on it: the engine binary (`binary`) or image (by digest) present, the payload\n"
             "present, free disk on the payload's filesystem. ssh hosts are reached with the\n"
             "user's ~/.ssh/config, keys only, and host keys checked strictly against the\n"
             "fleet's known_hosts (or the user's): an unknown or changed key is a gap.\n"
             "FLEET.yaml defaults to ./fleet.yaml.\n"
             "Exit: 0 no gap, 1 a gap (each named), 2 unusable input.",
    .opts = check_opts,
    .max_args = 1,
    .examples = check_examples,
};

static const struct sw_opt no_opts[] = {{0}};
static const struct sw_cmd_spec *const subs[] = {&spec_check, NULL};

const struct sw_cmd_spec sw_spec_hosts = {
    .name = "hosts",
    .summary = "check the fleet's hosts: reachable, systemd/podman, binaries, images, payloads",
    .synopsis = "check [FLEET.yaml] [--host NAME] [--deadline DUR] [--json]",
    .opts = no_opts,
    .max_args = -1,
    .subs = subs,
};

struct gaps {
    json_t *arr;
    size_t n;
};

static void gap(struct gaps *g, const char *fmt, ...) SW_PRINTF(2, 3);
static void gap(struct gaps *g, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_array_append_new(g->arr, json_string(buf));
    g->n++;
}

static int64_t left_ms(uint64_t t0, int64_t deadline_ms)
{
    int64_t used = (int64_t)((sw_now_ns() - t0) / 1000000ull);
    return used >= deadline_ms ? 1 : deadline_ms - used;
}

/* The paths a host is asked about: per endpoint its binary and payload path (index per
 * endpoint into paths, -1 when none). */
struct ask {
    const struct sw_fleet_endpoint *ep;
    int bin, pay;
};

static json_t *manager_json(const struct sw_host_manager *m)
{
    if (!m->asked)
        return json_null();
    json_t *o = json_object();
    sw_json_set_bool(o, "reached", m->reached);
    if (!m->reached)
        sw_json_set_str(o, "said", m->said);
    return o;
}

static json_t *managers_json(const struct sw_host_facts *facts)
{
    json_t *o = json_object();
    sw_json_set_new(o, "system", manager_json(&facts->systemd_system));
    sw_json_set_new(o, "user", manager_json(&facts->systemd_user));
    return o;
}

/* The managers the host's endpoints' units need (each endpoint's service scope; the system
 * manager for a host with none, the scope a unit has by default) must answer: `systemctl
 * --version` alone answers where PID 1 is not systemd or the bus is gone, and no unit can start
 * there. */
static void manager_gaps(const struct sw_fleet *f, const struct sw_fleet_host *fh,
                         const struct sw_host_facts *facts, struct gaps *g)
{
    bool need_system = true, need_user = false, any = false;
    for (size_t i = 0; i < f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (ep->host != fh || !ep->enabled)
            continue;
        if (!any)
            need_system = false;
        any = true;
        if (ep->service.scope == SW_FLEET_SCOPE_USER)
            need_user = true;
        else
            need_system = true;
    }
    const struct {
        bool need;
        const struct sw_host_manager *m;
        const char *what;
    } ms[] = {{need_system, &facts->systemd_system, "systemd"},
              {need_user, &facts->systemd_user, "systemd user manager (systemctl --user)"}};
    for (size_t i = 0; i < SW_ARRAY_LEN(ms); i++)
        if (ms[i].need && ms[i].m->asked && !ms[i].m->reached)
            gap(g, "%s: %s not reachable: %s (endpoints run as systemd services)", fh->name,
                ms[i].what, ms[i].m->said);
}

static json_t *check_host(const struct sw_fleet *f, const struct sw_fleet_host *fh,
                          int64_t deadline_ms, struct gaps *g)
{
    struct sw_host h;
    struct sw_host_facts facts;
    struct sw_err e;
    char desc[512];
    const char *paths[200];
    struct ask asks[100];
    size_t np = 0, na = 0;
    uint64_t t0 = sw_now_ns();
    json_t *o = json_object();
    json_t *eps = json_array();
    memset(&facts, 0, sizeof(facts));
    sw_err_clear(&e);
    sw_json_set_str(o, "host", fh->name);

    for (size_t i = 0; i < f->n_endpoints && na < SW_ARRAY_LEN(asks); i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (ep->host != fh || !ep->enabled)
            continue;
        struct ask *a = &asks[na++];
        a->ep = ep;
        a->bin = a->pay = -1;
        if (ep->binary.v && np < SW_ARRAY_LEN(paths)) {
            a->bin = (int)np;
            paths[np++] = ep->binary.v;
        }
        if (ep->payload.path.v && np < SW_ARRAY_LEN(paths)) {
            a->pay = (int)np;
            paths[np++] = ep->payload.path.v;
        }
    }

    unsigned ct = (unsigned)SW_MAX(1, SW_MIN(5, deadline_ms / 2000));
    int rc = sw_host_open_fleet(&h, fh, ct, &e);
    if (rc) {
        sw_json_set_str(o, "transport", fh->transport == SW_FLEET_SSH ? "ssh" : "local");
        sw_json_set_bool(o, "reached", false);
        sw_json_set_str(o, "error", e.msg);
        gap(g, "%s: cannot be reached: %s", fh->name, e.msg);
        goto out;
    }
    sw_json_set_str(o, "transport", sw_host_describe(&h, desc, sizeof(desc)));
    rc = sw_host_facts(&h, paths, np, deadline_ms, &facts, &e);
    sw_json_set_real(o, "seconds", (double)(sw_now_ns() - t0) / 1e9);
    if (rc) {
        sw_json_set_bool(o, "reached", false);
        sw_json_set_str(o, "error", e.msg);
        gap(g, "%s", e.msg);
        goto out;
    }
    sw_json_set_bool(o, "reached", true);
    sw_json_set_str(o, "kernel", facts.kernel);
    if (facts.systemd_version)
        sw_json_set_int(o, "systemd", facts.systemd_version);
    else
        sw_json_set_new(o, "systemd", json_null());
    sw_json_set_new(o, "podman",
                    facts.podman_version[0] ? json_string(facts.podman_version) : json_null());
    sw_json_set_new(o, "docker",
                    facts.docker_version[0] ? json_string(facts.docker_version) : json_null());
    json_t *mem = json_object();
    sw_json_set_int(mem, "total", (int64_t)facts.mem_total);
    sw_json_set_int(mem, "available", (int64_t)facts.mem_available);
    sw_json_set_new(o, "memory", mem);
    json_t *gpu = json_object(), *tools = json_array();
    sw_json_set_bool(gpu, "kfd", facts.dev_kfd);
    sw_json_set_int(gpu, "dri_render_nodes", (int64_t)facts.n_dri);
    sw_json_set_int(gpu, "nvidia_nodes", (int64_t)facts.n_nvidia);
    if (facts.nvidia_smi)
        json_array_append_new(tools, json_string("nvidia-smi"));
    if (facts.rocm_smi)
        json_array_append_new(tools, json_string("rocm-smi"));
    if (facts.amd_smi)
        json_array_append_new(tools, json_string("amd-smi"));
    sw_json_set_new(gpu, "tools", tools);
    sw_json_set_new(o, "gpus", gpu);
    sw_json_set_new(o, "systemd_manager", managers_json(&facts));
    if (!facts.systemd_version)
        gap(g, "%s: systemd: systemctl not found (endpoints run as systemd services)", fh->name);
    else
        manager_gaps(f, fh, &facts, g);

    for (size_t i = 0; i < na; i++) {
        const struct sw_fleet_endpoint *ep = asks[i].ep;
        json_t *je = json_object();
        sw_json_set_str(je, "endpoint", ep->name);
        if (asks[i].bin >= 0) {
            const struct sw_host_path *p = &facts.paths[asks[i].bin];
            json_t *b = json_object();
            sw_json_set_str(b, "path", p->path);
            sw_json_set_bool(b, "present", p->exists && p->is_exec);
            if (p->resolved)
                sw_json_set_str(b, "resolved", p->resolved);
            sw_json_set_new(je, "binary", b);
            if (!p->exists)
                gap(g, "%s: endpoint %s: engine binary %s not found", fh->name, ep->name, p->path);
            else if (!p->is_exec)
                gap(g, "%s: endpoint %s: engine binary %s is not an executable file", fh->name,
                    ep->name, p->path);
        }
        if (ep->image.v) {
            json_t *im = json_object();
            sw_json_set_str(im, "ref", ep->image.v);
            sw_json_set_bool(im, "pinned", ep->image_pinned);
            const char *rt = facts.podman_version[0]   ? "podman"
                             : facts.docker_version[0] ? "docker"
                                                       : NULL;
            bool present = false;
            if (!ep->image_pinned) {
                gap(g, "%s: endpoint %s: image %s is not pinned by digest (name@sha256:...)",
                    fh->name, ep->name, ep->image.v);
            } else if (!rt) {
                gap(g, "%s: endpoint %s: runs image %s but neither podman nor docker is installed",
                    fh->name, ep->name, ep->image.v);
            } else {
                struct sw_err ie;
                int irc = sw_host_image_present(&h, rt, ep->image.v, left_ms(t0, deadline_ms),
                                                &present, &ie);
                sw_json_set_str(im, "runtime", rt);
                if (irc)
                    gap(g, "%s: endpoint %s: image %s: %s", fh->name, ep->name, ep->image.v,
                        ie.msg);
                else if (!present)
                    gap(g, "%s: endpoint %s: image %s not present in %s", fh->name, ep->name,
                        ep->image.v, rt);
            }
            sw_json_set_bool(im, "present", present);
            sw_json_set_new(je, "image", im);
        }
        if (asks[i].pay >= 0) {
            const struct sw_host_path *p = &facts.paths[asks[i].pay];
            json_t *pj = json_object();
            sw_json_set_str(pj, "path", p->path);
            sw_json_set_bool(pj, "present", p->exists);
            sw_json_set_int(pj, "free", (int64_t)p->fs_avail);
            sw_json_set_int(pj, "filesystem_size", (int64_t)p->fs_size);
            if (p->fs_target)
                sw_json_set_str(pj, "filesystem", p->fs_target);
            sw_json_set_new(je, "payload", pj);
            if (!p->exists)
                gap(g, "%s: endpoint %s: payload %s not found", fh->name, ep->name, p->path);
        }
        /* engine patches against the host's base file: the same verification as check's
         * patches gate (gate sw_gate_patch), over this host's transport */
        json_t *pa = ep->n_patches ? json_array() : NULL;
        for (size_t k = 0; k < ep->n_patches && pa; k++) {
            struct sw_gate_patch_result pr;
            struct sw_err pe;
            sw_err_clear(&pe);
            if (sw_gate_patch(&ep->patches[k], &h, left_ms(t0, deadline_ms), &pr, &pe)) {
                gap(g, "%s: endpoint %s: %s", fh->name, ep->name, pe.msg);
                continue;
            }
            json_t *pj = json_pack("{s:s,s:s,s:s,s:s}", "file", ep->patches[k].file, "patch",
                                   ep->patches[k].patch, "verdict",
                                   sw_gate_verdict_name(pr.verdict), "line", pr.line);
            if (pj && pr.detail[0])
                sw_json_set_str(pj, "detail", pr.detail);
            json_array_append_new(pa, pj);
            if (pr.verdict == SW_GATE_FAIL)
                gap(g, "%s: endpoint %s: patch %s", fh->name, ep->name, pr.line);
        }
        if (pa)
            sw_json_set_new(je, "patches", pa);
        json_array_append_new(eps, je);
    }
out:
    sw_json_set_new(o, "endpoints", eps);
    sw_host_facts_free(&facts);
    return o;
}

static void print_host(const json_t *o, const json_t *gaps)
{
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
    const char *path = a.npos ? a.pos[0] : "fleet.yaml";
    const char *only = sw_args_str(&a, "host");
    const char *dl = sw_args_str(&a, "deadline");
    int64_t deadline_ms = 20000;
    sw_err_clear(&e);
    if (dl &&
        (sw_parse_duration_ms(dl, &deadline_ms, &e) || deadline_ms < 100 || deadline_ms > 3600000))
        return sw_args_usage(&a, "--deadline: want a duration from 100ms to 1h, got '%s'", dl);
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
        struct gaps g = {.arr = json_array()};
        json_t *o = check_host(f, fh, deadline_ms, &g);
        if (!o || !g.arr) {
            json_decref(o);
            json_decref(g.arr);
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        if (!json)
            print_host(o, g.arr);
        sw_json_set_new(o, "gaps", g.arr);
        sw_json_set_str(o, "verdict", g.n ? "fail" : "pass");
        n_gaps += g.n;
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
