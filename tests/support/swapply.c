/*
 * The apply fixture (swapply.h): two test hosts, six endpoints, the fleet written from a few
 * fields, `slipway VERB --fleet` run against it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swapply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct swro_site site_a = {"sw-ap-a", "169.254.38.2", "ap-a", "a1"};
static const struct swro_site site_b = {"sw-ap-b", "169.254.39.2", "ap-b", "b1"};

const char *const swap_names[SWAP_N_EP] = {"a1", "a2", "a3", "b1", "b2", "b3"};

int swap_setup(void **state)
{
    struct swap_fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    for (int i = 0; i < SWAP_N_EP; i++)
        f->ctx[i] = 512;
    snprintf(f->mem_a, sizeof(f->mem_a), "8GiB");
    *state = f;
    return 0;
}

int swap_teardown(void **state)
{
    struct swap_fx *f = *state;
    if (f) {
        swro_close(&f->a);
        swro_close(&f->b);
        free(f);
    }
    return 0;
}

void swap_up(struct swap_fx *f)
{
    swro_up(&f->a, &site_a);
    swro_up(&f->b, &site_b);
    /* every step reads each unit's MainPID and NRestarts: a dozen short commands over one
     * connection a host (swth_mux_on; swro_close's swth_down ends it) */
    swth_mux_on(&f->a.h);
    swth_mux_on(&f->b.h);
}

const struct swth_host *swap_host_of(const struct swap_fx *f, int i)
{
    return i < 3 ? &f->a.h : &f->b.h;
}

void swap_write_fleet(struct swap_fx *f)
{
    char text[16384];
    int n = snprintf(text, sizeof(text), "version: 1\nhosts:\n");
    const struct swro *hs[2] = {&f->a, &f->b};
    for (int h = 0; h < 2; h++)
        n += snprintf(text + n, sizeof(text) - (size_t)n,
                      "  %s:\n"
                      "    transport: {kind: ssh, address: %s, user: root, identity_file: %s, "
                      "known_hosts: %s}\n"
                      "    devices:\n"
                      "      cpu0: {kind: cpu, vendor: cpu, memory_total: %s}\n"
                      "      cpu1: {kind: cpu, vendor: cpu, memory_total: 8GiB}\n",
                      hs[h]->fleet_host, hs[h]->addr, hs[h]->h.key, hs[h]->h.known_hosts,
                      h == 0 ? f->mem_a : "8GiB");
    n += snprintf(text + n, sizeof(text) - (size_t)n, "endpoints:\n");
    for (int i = 0; i < SWAP_N_EP; i++) {
        char listen[64];
        if (f->default_port[i])
            snprintf(listen, sizeof(listen), "{address: 127.0.0.1}");
        else
            snprintf(listen, sizeof(listen), "127.0.0.1:%d", 18100 + i);
        n += snprintf(text + n, sizeof(text) - (size_t)n,
                      "  %s:\n"
                      "    host: %s\n"
                      "    engine: llama.cpp\n"
                      "    binary: /opt/llama/bin/llama-server\n"
                      "    runtime: native\n"
                      "    listen: %s\n"
                      "    devices: [%s]\n"
                      "    alias: %s-tiny\n"
                      "    payload: {path: /models/chat.gguf, quantization: f32}\n"
                      "    shape: {ctx_size: %d, seqs: 1, n_gpu_layers: 0}\n"
                      "    service: {restart_sec: 1s}\n"
                      "    args: [--metrics]\n",
                      swap_names[i], i < 3 ? "ap-a" : "ap-b", listen, i % 3 == 2 ? "cpu1" : "cpu0",
                      swap_names[i], f->ctx[i]);
    }
    assert_true(n > 0 && (size_t)n < sizeof(text));
    swt_write_str(f->a.fleet, text);
}

json_t *swap_run(struct swap_fx *f, int *status, const char *verb, ...)
{
    const char *argv[32] = {swt_bin(), verb, "--fleet", f->a.fleet, "--json"};
    va_list ap;
    va_start(ap, verb);
    swt_argv_va(argv, 5, 32, ap);
    va_end(ap);
    return swt_run_json(argv, 900, status);
}

const json_t *swap_item(const json_t *doc, const char *name)
{
    size_t h, i;
    const json_t *ho, *ep;
    json_array_foreach(json_object_get(doc, "hosts"), h, ho)
    {
        json_array_foreach(json_object_get(ho, "endpoints"), i, ep)
        {
            if (!strcmp(swro_str(ep, "endpoint"), name))
                return ep;
        }
    }
    fail_msg("no endpoint %s in the document", name);
    return NULL;
}

void swap_read_units(const struct swap_fx *f, struct swap_unitstate u[SWAP_N_EP])
{
    for (int i = 0; i < SWAP_N_EP; i++) {
        char unit[64];
        snprintf(unit, sizeof(unit), "slipway-%s.service", swap_names[i]);
        swth_show(swap_host_of(f, i), unit, "MainPID", u[i].pid, sizeof(u[i].pid));
        swth_show(swap_host_of(f, i), unit, "NRestarts", u[i].restarts, sizeof(u[i].restarts));
    }
}
