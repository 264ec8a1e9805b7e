/*
 * gate/hosts: a fleet host checked for what its endpoints need before any of them is installed
 * there (`slipway hosts check`, include/slipway/gate.h sw_gate_host): the host reached over its
 * transport within its own deadline, its facts (host.h sw_host_facts: systemd and the managers
 * its endpoints' units need, podman/docker, memory, GPU device nodes and driver tools), and per
 * enabled endpoint on it the engine binary, the image (pinned by digest, present in the host's
 * runtime), the payload directory (present, the free disk of its filesystem) and each engine
 * patch against the host's base file (sw_gate_patch, the verification `check` runs). Every
 * missing thing is one gap line naming the host, the endpoint and what is missing.
 *
 * What it does not do: change anything on the host, wait past the deadline for an unreachable
 * host, or print (the CLI prints the document this returns).
 */
#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/host.h>

#include <stdarg.h>
#include <string.h>

/* The paths a host is asked about: per endpoint its binary and payload path (index into paths,
 * -1 when none). */
struct ask {
    const struct sw_fleet_endpoint *ep;
    int bin, pay;
};

struct check {
    const struct sw_fleet *f;
    const struct sw_fleet_host *fh;
    int64_t deadline_ms;
    uint64_t t0;
    struct sw_host h;
    struct sw_host_facts facts;
    json_t *gaps;
    size_t n_gaps;
    const char *paths[200];
    size_t np;
    struct ask asks[100];
    size_t na;
};

static void gap(struct check *c, const char *fmt, ...) SW_PRINTF(2, 3);
static void gap(struct check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *line = json_vsprintf(fmt, ap);
    va_end(ap);
    json_array_append_new(c->gaps, line);
    c->n_gaps++;
}

/* What is left of the host's deadline (at least 1 ms). */
static int64_t left_ms(const struct check *c)
{
    int64_t used = (int64_t)((sw_now_ns() - c->t0) / 1000000ull);
    return used >= c->deadline_ms ? 1 : c->deadline_ms - used;
}

/* The host's enabled endpoints, and the binary and payload path each needs asked about. */
static void collect_asks(struct check *c)
{
    for (size_t i = 0; i < c->f->n_endpoints && c->na < SW_ARRAY_LEN(c->asks); i++) {
        const struct sw_fleet_endpoint *ep = &c->f->endpoints[i];
        if (ep->host != c->fh || !ep->enabled)
            continue;
        struct ask *a = &c->asks[c->na++];
        a->ep = ep;
        a->bin = a->pay = -1;
        if (ep->binary.v && c->np < SW_ARRAY_LEN(c->paths)) {
            a->bin = (int)c->np;
            c->paths[c->np++] = ep->binary.v;
        }
        if (ep->payload.path.v && c->np < SW_ARRAY_LEN(c->paths)) {
            a->pay = (int)c->np;
            c->paths[c->np++] = ep->payload.path.v;
        }
    }
}

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

/* The host's facts into o: kernel, systemd, podman, docker, memory, gpus, systemd_manager. */
static void facts_json(json_t *o, const struct sw_host_facts *facts)
{
    sw_json_set_str(o, "kernel", facts->kernel);
    if (facts->systemd_version)
        sw_json_set_int(o, "systemd", facts->systemd_version);
    else
        sw_json_set_new(o, "systemd", json_null());
    sw_json_set_new(o, "podman",
                    facts->podman_version[0] ? json_string(facts->podman_version) : json_null());
    sw_json_set_new(o, "docker",
                    facts->docker_version[0] ? json_string(facts->docker_version) : json_null());
    json_t *mem = json_object();
    sw_json_set_int(mem, "total", (int64_t)facts->mem_total);
    sw_json_set_int(mem, "available", (int64_t)facts->mem_available);
    sw_json_set_new(o, "memory", mem);
    json_t *gpu = json_object(), *tools = json_array();
    sw_json_set_bool(gpu, "kfd", facts->dev_kfd);
    sw_json_set_int(gpu, "dri_render_nodes", (int64_t)facts->n_dri);
    sw_json_set_int(gpu, "nvidia_nodes", (int64_t)facts->n_nvidia);
    if (facts->nvidia_smi)
        json_array_append_new(tools, json_string("nvidia-smi"));
    if (facts->rocm_smi)
        json_array_append_new(tools, json_string("rocm-smi"));
    if (facts->amd_smi)
        json_array_append_new(tools, json_string("amd-smi"));
    sw_json_set_new(gpu, "tools", tools);
    sw_json_set_new(o, "gpus", gpu);
    json_t *mgr = json_object();
    sw_json_set_new(mgr, "system", manager_json(&facts->systemd_system));
    sw_json_set_new(mgr, "user", manager_json(&facts->systemd_user));
    sw_json_set_new(o, "systemd_manager", mgr);
}

/* The managers the host's endpoints' units need (each endpoint's service scope; the system
 * manager for a host with none, the scope a unit has by default) must answer: `systemctl
 * --version` alone answers where PID 1 is not systemd or the bus is gone, and no unit can start
 * there. */
static void manager_gaps(struct check *c)
{
    bool need_system = true, need_user = false, any = false;
    for (size_t i = 0; i < c->f->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep = &c->f->endpoints[i];
        if (ep->host != c->fh || !ep->enabled)
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
    } ms[] = {{need_system, &c->facts.systemd_system, "systemd"},
              {need_user, &c->facts.systemd_user, "systemd user manager (systemctl --user)"}};
    for (size_t i = 0; i < SW_ARRAY_LEN(ms); i++)
        if (ms[i].need && ms[i].m->asked && !ms[i].m->reached)
            gap(c, "%s: %s not reachable: %s (endpoints run as systemd services)", c->fh->name,
                ms[i].what, ms[i].m->said);
}

/* Reach the host and read its facts: true when it answered (o says so either way). */
static bool reach(struct check *c, json_t *o)
{
    struct sw_err e;
    char desc[512];
    sw_err_clear(&e);
    unsigned ct = (unsigned)SW_MAX(1, SW_MIN(5, c->deadline_ms / 2000));
    if (sw_host_open_fleet(&c->h, c->fh, ct, &e)) {
        sw_json_set_str(o, "transport", c->fh->transport == SW_FLEET_SSH ? "ssh" : "local");
        sw_json_set_bool(o, "reached", false);
        sw_json_set_str(o, "error", e.msg);
        gap(c, "%s: cannot be reached: %s", c->fh->name, e.msg);
        return false;
    }
    sw_json_set_str(o, "transport", sw_host_describe(&c->h, desc, sizeof(desc)));
    int rc = sw_host_facts(&c->h, c->paths, c->np, c->deadline_ms, &c->facts, &e);
    sw_json_set_real(o, "seconds", (double)(sw_now_ns() - c->t0) / 1e9);
    if (rc) {
        sw_json_set_bool(o, "reached", false);
        sw_json_set_str(o, "error", e.msg);
        gap(c, "%s", e.msg);
        return false;
    }
    sw_json_set_bool(o, "reached", true);
    return true;
}

static void binary_json(struct check *c, const struct sw_fleet_endpoint *ep, int at, json_t *je)
{
    const struct sw_host_path *p = &c->facts.paths[at];
    json_t *b = json_object();
    sw_json_set_str(b, "path", p->path);
    sw_json_set_bool(b, "present", p->exists && p->is_exec);
    if (p->resolved)
        sw_json_set_str(b, "resolved", p->resolved);
    sw_json_set_new(je, "binary", b);
    if (!p->exists)
        gap(c, "%s: endpoint %s: engine binary %s not found", c->fh->name, ep->name, p->path);
    else if (!p->is_exec)
        gap(c, "%s: endpoint %s: engine binary %s is not an executable file", c->fh->name, ep->name,
            p->path);
}

/* The image: pinned by digest, and present in the host's runtime (podman, else docker). */
static void image_json(struct check *c, const struct sw_fleet_endpoint *ep, json_t *je)
{
    const char *host = c->fh->name, *ref = ep->image.v;
    json_t *im = json_object();
    sw_json_set_str(im, "ref", ref);
    sw_json_set_bool(im, "pinned", ep->image_pinned);
    const char *rt = c->facts.podman_version[0]   ? "podman"
                     : c->facts.docker_version[0] ? "docker"
                                                  : NULL;
    bool present = false;
    if (!ep->image_pinned) {
        gap(c, "%s: endpoint %s: image %s is not pinned by digest (name@sha256:...)", host,
            ep->name, ref);
    } else if (!rt) {
        gap(c, "%s: endpoint %s: runs image %s but neither podman nor docker is installed", host,
            ep->name, ref);
    } else {
        struct sw_err ie;
        int irc = sw_host_image_present(&c->h, rt, ref, left_ms(c), &present, &ie);
        sw_json_set_str(im, "runtime", rt);
        if (irc)
            gap(c, "%s: endpoint %s: image %s: %s", host, ep->name, ref, ie.msg);
        else if (!present)
            gap(c, "%s: endpoint %s: image %s not present in %s", host, ep->name, ref, rt);
    }
    sw_json_set_bool(im, "present", present);
    sw_json_set_new(je, "image", im);
}

static void payload_json(struct check *c, const struct sw_fleet_endpoint *ep, int at, json_t *je)
{
    const struct sw_host_path *p = &c->facts.paths[at];
    json_t *pj = json_object();
    sw_json_set_str(pj, "path", p->path);
    sw_json_set_bool(pj, "present", p->exists);
    sw_json_set_int(pj, "free", (int64_t)p->fs_avail);
    sw_json_set_int(pj, "filesystem_size", (int64_t)p->fs_size);
    if (p->fs_target)
        sw_json_set_str(pj, "filesystem", p->fs_target);
    sw_json_set_new(je, "payload", pj);
    if (!p->exists)
        gap(c, "%s: endpoint %s: payload %s not found", c->fh->name, ep->name, p->path);
}

/* Engine patches against the host's base file: the same verification as check's patches gate,
 * over this host's transport. */
static void patches_json(struct check *c, const struct sw_fleet_endpoint *ep, json_t *je)
{
    json_t *pa = ep->n_patches ? json_array() : NULL;
    for (size_t k = 0; k < ep->n_patches && pa; k++) {
        struct sw_gate_patch_result pr;
        struct sw_err pe;
        sw_err_clear(&pe);
        if (sw_gate_patch(&ep->patches[k], &c->h, left_ms(c), &pr, &pe)) {
            gap(c, "%s: endpoint %s: %s", c->fh->name, ep->name, pe.msg);
            continue;
        }
        json_t *pj = json_pack("{s:s,s:s,s:s,s:s}", "file", ep->patches[k].file, "patch",
                               ep->patches[k].patch, "verdict", sw_gate_verdict_name(pr.verdict),
                               "line", pr.line);
        if (pj && pr.detail[0])
            sw_json_set_str(pj, "detail", pr.detail);
        json_array_append_new(pa, pj);
        if (pr.verdict == SW_GATE_FAIL)
            gap(c, "%s: endpoint %s: patch %s", c->fh->name, ep->name, pr.line);
    }
    if (pa)
        sw_json_set_new(je, "patches", pa);
}

static json_t *endpoint_json(struct check *c, const struct ask *a)
{
    json_t *je = json_object();
    sw_json_set_str(je, "endpoint", a->ep->name);
    if (a->bin >= 0)
        binary_json(c, a->ep, a->bin, je);
    if (a->ep->image.v)
        image_json(c, a->ep, je);
    if (a->pay >= 0)
        payload_json(c, a->ep, a->pay, je);
    patches_json(c, a->ep, je);
    return je;
}

int sw_gate_host(const struct sw_fleet *f, const struct sw_fleet_host *fh, int64_t deadline_ms,
                 json_t **out, size_t *n_gaps, struct sw_err *e)
{
    struct check *c = sw_calloc(1, sizeof(*c));
    json_t *o = json_object(), *eps = json_array();
    *out = NULL;
    *n_gaps = 0;
    if (c)
        c->gaps = json_array();
    if (!c || !o || !eps || !c->gaps) {
        json_decref(o);
        json_decref(eps);
        if (c)
            json_decref(c->gaps);
        sw_free(c);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    c->f = f;
    c->fh = fh;
    c->deadline_ms = deadline_ms;
    c->t0 = sw_now_ns();
    sw_json_set_str(o, "host", fh->name);
    collect_asks(c);
    if (reach(c, o)) {
        facts_json(o, &c->facts);
        if (!c->facts.systemd_version)
            gap(c, "%s: systemd: systemctl not found (endpoints run as systemd services)",
                fh->name);
        else
            manager_gaps(c);
        for (size_t i = 0; i < c->na; i++)
            json_array_append_new(eps, endpoint_json(c, &c->asks[i]));
    }
    sw_json_set_new(o, "endpoints", eps);
    sw_json_set_new(o, "gaps", c->gaps);
    sw_json_set_str(o, "verdict", c->n_gaps ? "fail" : "pass");
    *n_gaps = c->n_gaps;
    sw_host_facts_free(&c->facts);
    sw_free(c);
    *out = o;
    return 0;
}
