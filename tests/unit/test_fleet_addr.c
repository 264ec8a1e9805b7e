/*
 * fleet/addr: the one endpoint address (sw_fleet_endpoint_addr). Each rule of the route is a
 * case: a local host's endpoint is direct; on an ssh host an endpoint bound to a loopback address
 * is reached through the host, one bound to every address at the host's address, one bound to
 * another address at that address; listen.route overrides; the engine's default port when none
 * is given (llama.cpp 8080, vLLM 8000, SGLang 30000), the bind address the renderers emit, and
 * IPv6 in brackets in the URL only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>

#include "swtest.h"

#include <string.h>

#define HEAD                                                                                       \
    "version: 1\n"                                                                                 \
    "hosts:\n"                                                                                     \
    "  here:\n"                                                                                    \
    "    transport: {kind: local}\n"                                                               \
    "    devices:\n"                                                                               \
    "      cpu: {kind: cpu, vendor: cpu}\n"                                                        \
    "  far:\n"                                                                                     \
    "    transport: {kind: ssh, address: 192.0.2.7, user: root}\n"                                 \
    "    devices:\n"                                                                               \
    "      cpu: {kind: cpu, vendor: cpu}\n"                                                        \
    "  far6:\n"                                                                                    \
    "    transport: {kind: ssh, address: 'fd00::7'}\n"                                             \
    "    devices:\n"                                                                               \
    "      cpu: {kind: cpu, vendor: cpu}\n"                                                        \
    "endpoints:\n"

static struct sw_fleet *load(const char *body)
{
    char text[4096];
    snprintf(text, sizeof(text), "%s%s", HEAD, body);
    struct sw_fleet *f = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_fleet_load_mem("addr.yaml", text, strlen(text), NULL, &f, &e))
        fail_msg("load: %s", e.msg);
    return f;
}

struct want {
    const char *ep;
    const char *bind;
    unsigned port;
    bool port_default;
    enum sw_fleet_route route;
    const char *url;
};

static void check(const struct sw_fleet *f, const struct want *w)
{
    struct sw_fleet_addr a;
    struct sw_err e;
    sw_err_clear(&e);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, w->ep);
    assert_non_null(ep);
    if (sw_fleet_endpoint_addr(ep, &a, &e))
        fail_msg("%s: %s", w->ep, e.msg);
    if (strcmp(a.bind, w->bind) || a.port != w->port || a.port_default != w->port_default ||
        a.route != w->route || strcmp(a.url, w->url))
        fail_msg("%s: got bind %s port %u%s route %s url %s (%s); want bind %s port %u route %s "
                 "url %s",
                 w->ep, a.bind, a.port, a.port_default ? " (default)" : "",
                 sw_fleet_route_name(a.route), a.url, a.why, w->bind, w->port,
                 sw_fleet_route_name(w->route), w->url);
    assert_non_null(a.why);
}

static void test_routes(void **state)
{
    (void)state;
    struct sw_fleet *f = load("  loop:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: 127.0.0.1:8080\n"
                              "  loop-default:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: {port: 8081}\n"
                              "  name:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: localhost:8082\n"
                              "  other-loop:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: 127.0.0.53:8083\n"
                              "  wild:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: 0.0.0.0:8084\n"
                              "  one:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: 10.0.0.9:8085\n"
                              "  bridge:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: {address: 10.88.0.2, port: 8086, route: host}\n"
                              "  tunnel:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: {address: 127.0.0.1, port: 8087, route: direct}\n"
                              "  local:\n"
                              "    host: here\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: 127.0.0.1:8088\n"
                              "  local-wild:\n"
                              "    host: here\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: 0.0.0.0:8089\n");
    static const struct want w[] = {
        {"loop", "127.0.0.1", 8080, false, SW_FLEET_ROUTE_HOST, "http://127.0.0.1:8080"},
        {"loop-default", "127.0.0.1", 8081, false, SW_FLEET_ROUTE_HOST, "http://127.0.0.1:8081"},
        {"name", "localhost", 8082, false, SW_FLEET_ROUTE_HOST, "http://127.0.0.1:8082"},
        {"other-loop", "127.0.0.53", 8083, false, SW_FLEET_ROUTE_HOST, "http://127.0.0.53:8083"},
        {"wild", "0.0.0.0", 8084, false, SW_FLEET_ROUTE_DIRECT, "http://192.0.2.7:8084"},
        {"one", "10.0.0.9", 8085, false, SW_FLEET_ROUTE_DIRECT, "http://10.0.0.9:8085"},
        {"bridge", "10.88.0.2", 8086, false, SW_FLEET_ROUTE_HOST, "http://10.88.0.2:8086"},
        {"tunnel", "127.0.0.1", 8087, false, SW_FLEET_ROUTE_DIRECT, "http://127.0.0.1:8087"},
        {"local", "127.0.0.1", 8088, false, SW_FLEET_ROUTE_DIRECT, "http://127.0.0.1:8088"},
        {"local-wild", "0.0.0.0", 8089, false, SW_FLEET_ROUTE_DIRECT, "http://127.0.0.1:8089"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(w); i++)
        check(f, &w[i]);
    sw_fleet_free(f);
}

/* No listen: the engine's own default port, and the address the renderer emits. */
static void test_engine_defaults(void **state)
{
    (void)state;
    struct sw_fleet *f = load("  l:\n"
                              "    host: far\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "  v:\n"
                              "    host: far\n"
                              "    engine: vllm\n"
                              "    payload: {path: /m}\n"
                              "  s:\n"
                              "    host: far\n"
                              "    engine: sglang\n"
                              "    payload: {path: /m}\n"
                              "  vc:\n"
                              "    host: far\n"
                              "    engine: vllm\n"
                              "    image: localhost/vllm:x\n"
                              "    runtime: podman\n"
                              "    payload: {path: /m}\n"
                              "  sc:\n"
                              "    host: far\n"
                              "    engine: sglang\n"
                              "    image: localhost/sglang:x\n"
                              "    runtime: podman\n"
                              "    payload: {path: /m}\n");
    static const struct want w[] = {
        {"l", "127.0.0.1", 8080, true, SW_FLEET_ROUTE_HOST, "http://127.0.0.1:8080"},
        {"v", "127.0.0.1", 8000, true, SW_FLEET_ROUTE_HOST, "http://127.0.0.1:8000"},
        {"s", "127.0.0.1", 30000, true, SW_FLEET_ROUTE_HOST, "http://127.0.0.1:30000"},
        /* in a container (host network) vLLM and SGLang bind every address */
        {"vc", "0.0.0.0", 8000, true, SW_FLEET_ROUTE_DIRECT, "http://192.0.2.7:8000"},
        {"sc", "0.0.0.0", 30000, true, SW_FLEET_ROUTE_DIRECT, "http://192.0.2.7:30000"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(w); i++)
        check(f, &w[i]);
    assert_int_equal(sw_fleet_engine_default_port(SW_FLEET_LLAMACPP), 8080);
    assert_int_equal(sw_fleet_engine_default_port(SW_FLEET_VLLM), 8000);
    assert_int_equal(sw_fleet_engine_default_port(SW_FLEET_SGLANG), 30000);
    sw_fleet_free(f);
}

static void test_ipv6(void **state)
{
    (void)state;
    struct sw_fleet *f = load("  v6-loop:\n"
                              "    host: far6\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: '[::1]:8090'\n"
                              "  v6-wild:\n"
                              "    host: far6\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: {address: '::', port: 8091}\n"
                              "  v6-local:\n"
                              "    host: here\n"
                              "    engine: llama.cpp\n"
                              "    payload: {path: /m.gguf}\n"
                              "    listen: {address: '::', port: 8092}\n");
    static const struct want w[] = {
        {"v6-loop", "::1", 8090, false, SW_FLEET_ROUTE_HOST, "http://[::1]:8090"},
        {"v6-wild", "::", 8091, false, SW_FLEET_ROUTE_DIRECT, "http://[fd00::7]:8091"},
        {"v6-local", "::", 8092, false, SW_FLEET_ROUTE_DIRECT, "http://[::1]:8092"},
    };
    for (size_t i = 0; i < SW_ARRAY_LEN(w); i++)
        check(f, &w[i]);
    sw_fleet_free(f);
}

static void test_classify(void **state)
{
    (void)state;
    static const char *const loop[] = {"127.0.0.1", "127.1.2.3", "::1",
                                       "[::1]",     "localhost", "::ffff:127.0.0.1"};
    static const char *const wild[] = {"0.0.0.0", "::", "[::]", "", "*"};
    static const char *const neither[] = {"10.0.0.1",    "192.0.2.7", "fd00::1",
                                          "example.com", "128.0.0.1", "::2"};
    for (size_t i = 0; i < SW_ARRAY_LEN(loop); i++) {
        assert_true(sw_fleet_addr_is_loopback(loop[i]));
        assert_false(sw_fleet_addr_is_wildcard(loop[i]));
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(wild); i++) {
        assert_true(sw_fleet_addr_is_wildcard(wild[i]));
        assert_false(sw_fleet_addr_is_loopback(wild[i]));
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(neither); i++) {
        assert_false(sw_fleet_addr_is_wildcard(neither[i]));
        assert_false(sw_fleet_addr_is_loopback(neither[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_engine_defaults),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_classify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
