/*
 * host/route: the way to an endpoint's HTTP server, direct or through its host's ssh connection
 * (include/slipway/host.h says why and how). The forward is a unix socket next to the host's
 * ControlMaster socket, so it lives in the same private directory and is named after the same
 * connection; the process id and a counter keep two routes (two verbs, two threads) apart.
 *
 * What it deliberately does not do: pick a TCP port on this machine (a port could be taken
 * between the pick and the bind, and any local user could connect to it), or keep a forward
 * after the route is closed.
 */
#include "host_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_uint route_seq;

static bool is_socket(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* The master running (a `true` on the host starts it when none runs), then the forward asked
 * of it; the socket must exist afterwards. */
static int forward(struct sw_host_route *r, int64_t deadline_ms, struct sw_err *e)
{
    char d[400];
    sw_host_describe(r->h, d, sizeof(d));
    struct sw_host_result hr;
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms ? deadline_ms : 30000};
    static const char *const t[] = {"true", NULL};
    int rc = sw_host_run(r->h, t, &o, &hr, e);
    sw_host_result_free(&hr);
    if (rc) {
        sw_err_prefix(e, "the way to %s through %s", r->url, d);
        return rc;
    }
    rc = sw__host_ssh_control(r->h, "forward", r->spec, &hr);
    if (rc) {
        size_t n = strcspn(hr.err ? hr.err : "", "\n");
        rc = sw_err_set(e, SW_ENET, "%s: ssh would not forward %s to %s:%u on the host: %.*s", d,
                        r->unix_socket, r->addr.connect, r->addr.port, (int)SW_MIN(n, 400u),
                        hr.err ? hr.err : "");
        sw_host_result_free(&hr);
        return rc;
    }
    sw_host_result_free(&hr);
    if (!is_socket(r->unix_socket))
        return sw_err_set(e, SW_ENET, "%s: ssh said it forwards %s, but no socket is there", d,
                          r->unix_socket);
    r->fwd_open = true;
    return 0;
}

int sw_host_route_open(struct sw_host_route *r, const struct sw_fleet_endpoint *ep,
                       struct sw_host *h, int64_t deadline_ms, struct sw_err *e)
{
    memset(r, 0, sizeof(*r));
    int rc = sw_fleet_endpoint_addr(ep, &r->addr, e);
    if (rc)
        return rc;
    snprintf(r->url, sizeof(r->url), "%s", r->addr.url);
    if (r->addr.route != SW_FLEET_ROUTE_HOST)
        return 0;
    if (!ep->host)
        return sw_err_set(e, SW_EINVAL, "endpoint %s has no host to route through", ep->name);
    if (h) {
        r->h = h;
    } else {
        rc = sw_host_open_fleet(&r->own, ep->host, 0, e);
        if (rc)
            return rc;
        r->own_open = true;
        r->h = &r->own;
    }
    if (r->h->kind != SW_HOST_KIND_SSH)
        return sw_err_set(e, SW_EINVAL, "endpoint %s: a route through host %s needs ssh", ep->name,
                          r->h->name);
    char d[300];
    snprintf(r->via, sizeof(r->via), "%s", sw_host_describe(r->h, d, sizeof(d)));
    unsigned seq = atomic_fetch_add(&route_seq, 1);
    int w = snprintf(r->unix_socket, sizeof(r->unix_socket), "%s.f%ld.%u", r->h->control_path,
                     (long)getpid(), seq);
    if (w < 0 || (size_t)w >= sizeof(r->unix_socket))
        return sw_err_set(e, SW_EINVAL,
                          "endpoint %s: the forward's socket beside %s would be too long for a "
                          "unix socket (set SLIPWAY_RUN_DIR to a shorter directory)",
                          ep->name, r->h->control_path);
    if (strchr(r->unix_socket, ':'))
        return sw_err_set(e, SW_EINVAL,
                          "endpoint %s: the forward's socket %s holds ':', which ssh's -L reads "
                          "as a separator (set SLIPWAY_RUN_DIR to a directory without one)",
                          ep->name, r->unix_socket);
    bool v6 = strchr(r->addr.connect, ':') != NULL;
    snprintf(r->spec, sizeof(r->spec), "%s:%s%s%s:%u", r->unix_socket, v6 ? "[" : "",
             r->addr.connect, v6 ? "]" : "", r->addr.port);
    /* a socket a killed process left under this name */
    if (is_socket(r->unix_socket))
        unlink(r->unix_socket);
    return forward(r, deadline_ms, e);
}

int sw_host_route_refresh(struct sw_host_route *r, int64_t deadline_ms, struct sw_err *e)
{
    if (!r->unix_socket[0] || !r->h)
        return 0;
    return forward(r, deadline_ms, e);
}

void sw_host_route_close(struct sw_host_route *r)
{
    if (r->fwd_open && r->h) {
        struct sw_host_result hr;
        sw__host_ssh_control(r->h, "cancel", r->spec, &hr);
        sw_host_result_free(&hr);
    }
    if (r->unix_socket[0] && is_socket(r->unix_socket))
        unlink(r->unix_socket);
    r->fwd_open = false;
    if (r->own_open)
        r->own_open = false; /* the master stays for ControlPersist; nothing else to free */
    r->h = NULL;
}

const char *sw_host_route_describe(const struct sw_host_route *r, char *out, size_t n)
{
    if (r->addr.route == SW_FLEET_ROUTE_HOST)
        snprintf(out, n, "%s on its host (through %s)", r->url, r->via[0] ? r->via : "ssh");
    else
        snprintf(out, n, "%s", r->url);
    return out;
}
