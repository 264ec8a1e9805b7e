/*
 * fleet/addr: where an endpoint answers, the one function every verb asks (include/slipway/
 * fleet.h says the route rule). It reads only the fleet: the engine's default port and bind
 * address, the listen section, the host's transport and address.
 *
 * What it deliberately does not do: reach anything. Opening the way through a host (the ssh
 * forward) is host/route's job; this only says which way it is.
 */
#include "fleet_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

const char *const sw__fleet_route_words[] = {"direct", "host", NULL};

const char *sw_fleet_route_name(enum sw_fleet_route r)
{
    return r == SW_FLEET_ROUTE_HOST ? "host" : "direct";
}

unsigned sw_fleet_engine_default_port(enum sw_fleet_engine e)
{
    switch (e) {
    case SW_FLEET_LLAMACPP:
        return 8080; /* llama-server's --port default */
    case SW_FLEET_VLLM:
        return 8000; /* vllm serve's --port default */
    case SW_FLEET_SGLANG:
        return 30000; /* sglang.launch_server's --port default */
    case SW_FLEET_ENGINE_NONE:
        break;
    }
    return 0;
}

/* text without the brackets of "[::1]" into out. */
static void unbracket(const char *text, char *out, size_t n)
{
    size_t l = strlen(text);
    if (l >= 2 && text[0] == '[' && text[l - 1] == ']')
        snprintf(out, n, "%.*s", (int)(l - 2), text + 1);
    else
        snprintf(out, n, "%s", text);
}

bool sw_fleet_addr_is_loopback(const char *text)
{
    char a[256];
    struct in_addr v4;
    struct in6_addr v6;
    if (!text)
        return false;
    unbracket(text, a, sizeof(a));
    if (!strcmp(a, "localhost"))
        return true;
    if (inet_pton(AF_INET, a, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, a, &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

bool sw_fleet_addr_is_wildcard(const char *text)
{
    char a[256];
    struct in_addr v4;
    struct in6_addr v6;
    if (!text || !text[0] || !strcmp(text, "*"))
        return true;
    unbracket(text, a, sizeof(a));
    if (inet_pton(AF_INET, a, &v4) == 1)
        return v4.s_addr == htonl(INADDR_ANY);
    if (inet_pton(AF_INET6, a, &v6) == 1)
        return IN6_IS_ADDR_UNSPECIFIED(&v6);
    return false;
}

/* What the engine binds when listen.address is absent: llama-server and SGLang default to
 * 127.0.0.1 themselves and slipway renders that; vLLM's own default is every address, which
 * slipway narrows to 127.0.0.1 natively. In a container (host network) the engine binds every
 * address, the container's own loopback being the host's. */
static const char *default_bind(const struct sw_fleet_endpoint *ep)
{
    if (ep->engine != SW_FLEET_LLAMACPP && ep->image.v)
        return "0.0.0.0";
    return "127.0.0.1";
}

int sw_fleet_endpoint_addr(const struct sw_fleet_endpoint *ep, struct sw_fleet_addr *a,
                           struct sw_err *e)
{
    memset(a, 0, sizeof(*a));
    const char *bind = ep->listen_address.v ? ep->listen_address.v : default_bind(ep);
    if (strlen(bind) >= sizeof(a->bind))
        return sw_fleet_err_at(e, SW_EINVAL, &ep->listen_address.at,
                               "endpoints.%s.listen.address is too long (%zu bytes)", ep->name,
                               strlen(bind));
    unbracket(bind, a->bind, sizeof(a->bind));
    a->port_default = !ep->listen_port.set;
    a->port = ep->listen_port.set ? (unsigned)ep->listen_port.v
                                  : sw_fleet_engine_default_port(ep->engine);

    const struct sw_fleet_host *h = ep->host;
    bool ssh = h && h->transport == SW_FLEET_SSH;
    const char *hostaddr = ssh ? h->address.v : NULL;
    if (ssh && (!hostaddr || !hostaddr[0]))
        return sw_fleet_err_at(e, SW_EINVAL, &h->at, "host %s: an ssh host needs an address",
                               h->name);

    const char *connect = a->bind;
    a->route = SW_FLEET_ROUTE_DIRECT;
    bool wildcard = sw_fleet_addr_is_wildcard(a->bind);
    if (!ssh) {
        a->why = "the endpoint runs on this machine";
        if (wildcard)
            connect = strchr(a->bind, ':') ? "::1" : "127.0.0.1";
    } else if (ep->listen_route.v) {
        bool host = !strcmp(ep->listen_route.v, "host");
        a->route = host ? SW_FLEET_ROUTE_HOST : SW_FLEET_ROUTE_DIRECT;
        a->why = host ? "listen.route: host" : "listen.route: direct";
        if (wildcard)
            connect = host ? (strchr(a->bind, ':') ? "::1" : "127.0.0.1") : hostaddr;
    } else if (wildcard) {
        a->why = "bound to every address: reached at the host's address";
        connect = hostaddr;
    } else if (sw_fleet_addr_is_loopback(a->bind)) {
        a->route = SW_FLEET_ROUTE_HOST;
        a->why = "bound to the host's loopback: reached through the host's ssh connection";
    } else {
        a->why = "bound to one address of the host: reached at that address";
    }
    if (!strcmp(connect, "localhost"))
        connect = "127.0.0.1";
    char c[256];
    unbracket(connect, c, sizeof(c));
    snprintf(a->connect, sizeof(a->connect), "%s", c);
    bool v6 = strchr(a->connect, ':') != NULL;
    int w = snprintf(a->url, sizeof(a->url), "http://%s%s%s:%u", v6 ? "[" : "", a->connect,
                     v6 ? "]" : "", a->port);
    if (w < 0 || (size_t)w >= sizeof(a->url))
        return sw_fleet_err_at(e, SW_EINVAL, &ep->at, "endpoint %s: its address is too long",
                               ep->name);
    return 0;
}
