/*
 * serve's admission law (sw_serve_admit) on claims per device: fits beside, evicts the least
 * recently used (or the lowest priority) idle endpoint, never a pinned one nor one with requests
 * in flight (then it waits), refuses what does not fit alone with the figure; and the fleet's
 * `serve:` key read and checked, and a vLLM endpoint's claim (its utilization x the device).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <slipway/serve.h>

#include "serve/serve_internal.h"
#include <stdio.h>

#include <string.h>

#define GIB (1024ull * 1024 * 1024)

static struct sw_fleet_device g0 = {.name = "g0"}, g1 = {.name = "g1"};

static struct sw_serve_claim claim1(const struct sw_fleet_device *d, uint64_t gib)
{
    struct sw_serve_claim c = {.n = 1};
    c.dev[0] = d;
    c.bytes[0] = gib * GIB;
    c.capacity[0] = 24 * GIB;
    snprintf(c.how, sizeof(c.how), "test");
    return c;
}

static struct sw_serve_tenant tenant(const char *name, const struct sw_serve_claim *c,
                                     enum sw_serve_state s, uint64_t last)
{
    return (struct sw_serve_tenant){
        .name = name, .claim = c, .state = s, .last_ns = last, .can_stop = true};
}

static void test_fits_beside(void **state)
{
    (void)state;
    struct sw_serve_claim a = claim1(&g0, 6), b = claim1(&g0, 6), c = claim1(&g0, 8);
    struct sw_serve_tenant ts[] = {tenant("a", &a, SW_SERVE_RUNNING, 1),
                                   tenant("b", &b, SW_SERVE_RUNNING, 2),
                                   tenant("c", &c, SW_SERVE_STOPPED, 0)};
    struct sw_serve_decision d;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_FITS);
    assert_non_null(strstr(d.text, "claim 8589934592 B"));
    assert_non_null(strstr(d.text, "held 12884901888 B"));
}

/* A deploy through serve reloads the fleet: the new shape's claim names the reloaded fleet's
 * device, the others the first load's; one device by its name (and its host's). */
static void test_reloaded_device(void **state)
{
    (void)state;
    static struct sw_fleet_device g0_again = {.name = "g0"};
    struct sw_serve_claim old = claim1(&g0, 14), next = claim1(&g0_again, 13),
                          small = claim1(&g0_again, 9);
    struct sw_serve_tenant ts[] = {tenant("d", &old, SW_SERVE_RUNNING, 1),
                                   tenant("d (new shape)", &next, SW_SERVE_STOPPED, 0)};
    ts[0].inflight = 1;
    struct sw_serve_decision d;
    sw_serve_admit(ts, 2, 1, &d);
    assert_int_equal(d.verdict, SW_SERVE_WAIT); /* 14 + 13 > 24 on the one device */
    assert_non_null(strstr(d.text, "held 15032385536 B"));
    ts[1].claim = &small;
    sw_serve_admit(ts, 2, 1, &d);
    assert_int_equal(d.verdict, SW_SERVE_FITS); /* 14 + 9 */
    assert_non_null(strstr(d.text, "held 15032385536 B"));
}

/* A stop-start deploy holds, per device, the larger of its old and new claims until its boot
 * ends (serve/admit.c sw__serve_claim_max): another start is not admitted into the new shape's
 * room while the old drains. A device only one of them names is added. */
static void test_claim_max(void **state)
{
    (void)state;
    static struct sw_fleet_device g0_again = {.name = "g0"};
    struct sw_serve_claim held = claim1(&g0, 8), next = claim1(&g0_again, 13);
    next.n = 2;
    next.dev[1] = &g1;
    next.bytes[1] = 2 * GIB;
    next.capacity[1] = 24 * GIB;
    sw__serve_claim_max(&held, &next);
    assert_int_equal(held.n, 2);
    assert_true(held.dev[0] == &g0);
    assert_int_equal(held.bytes[0], 13 * GIB);
    assert_true(held.dev[1] == &g1);
    assert_int_equal(held.bytes[1], 2 * GIB);
    struct sw_serve_claim other = claim1(&g0, 12);
    struct sw_serve_tenant ts[] = {tenant("d", &held, SW_SERVE_STOPPING, 1),
                                   tenant("o", &other, SW_SERVE_STOPPED, 0)};
    struct sw_serve_decision d;
    sw_serve_admit(ts, 2, 1, &d); /* 13 + 12 > 24: it waits (8 + 12 would have fit) */
    assert_int_equal(d.verdict, SW_SERVE_WAIT);
    assert_non_null(strstr(d.text, "held 13958643712 B"));
    struct sw_serve_claim smaller = claim1(&g0_again, 5);
    sw__serve_claim_max(&held, &smaller); /* a smaller claim changes nothing */
    assert_int_equal(held.bytes[0], 13 * GIB);
}

static void test_evicts_lru(void **state)
{
    (void)state;
    struct sw_serve_claim a = claim1(&g0, 10), b = claim1(&g0, 10), c = claim1(&g0, 10);
    struct sw_serve_tenant ts[] = {tenant("a", &a, SW_SERVE_RUNNING, 200),
                                   tenant("b", &b, SW_SERVE_RUNNING, 100),
                                   tenant("c", &c, SW_SERVE_STOPPED, 0)};
    struct sw_serve_decision d;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_EVICT);
    assert_int_equal(d.n_victims, 1);
    assert_int_equal(d.victims[0], 1); /* b: used longest ago */
    assert_non_null(strstr(d.text, "c evicts b (lru"));
    /* under priority, a's lower priority goes first whatever its use */
    ts[0].by_priority = ts[1].by_priority = true;
    ts[0].priority = 1;
    ts[1].priority = 5;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_EVICT);
    assert_int_equal(d.victims[0], 0);
}

static void test_never_pinned_nor_busy(void **state)
{
    (void)state;
    struct sw_serve_claim a = claim1(&g0, 10), b = claim1(&g0, 10), c = claim1(&g0, 10);
    struct sw_serve_tenant ts[] = {tenant("a", &a, SW_SERVE_RUNNING, 1),
                                   tenant("b", &b, SW_SERVE_RUNNING, 2),
                                   tenant("c", &c, SW_SERVE_STOPPED, 0)};
    ts[0].pinned = true;
    ts[1].inflight = 1;
    struct sw_serve_decision d;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_WAIT);
    assert_int_equal(d.n_victims, 0);
    assert_non_null(strstr(d.text, "a (running, pinned"));
    assert_non_null(strstr(d.text, "b (running, 1 in flight)"));
    /* b idle again: b goes, a stays */
    ts[1].inflight = 0;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_EVICT);
    assert_int_equal(d.n_victims, 1);
    assert_int_equal(d.victims[0], 1);
    /* one starting holds its memory too: wait for it */
    ts[1].state = SW_SERVE_STARTING;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_WAIT);
}

static void test_other_device_untouched(void **state)
{
    (void)state;
    struct sw_serve_claim a = claim1(&g1, 20), b = claim1(&g0, 20), c = claim1(&g0, 10);
    struct sw_serve_tenant ts[] = {tenant("a", &a, SW_SERVE_RUNNING, 1),
                                   tenant("b", &b, SW_SERVE_RUNNING, 2),
                                   tenant("c", &c, SW_SERVE_STOPPED, 0)};
    struct sw_serve_decision d;
    sw_serve_admit(ts, 3, 2, &d);
    assert_int_equal(d.verdict, SW_SERVE_EVICT);
    assert_int_equal(d.n_victims, 1);
    assert_int_equal(d.victims[0], 1); /* a is on another device: never a victim */
}

static void test_too_big_alone(void **state)
{
    (void)state;
    struct sw_serve_claim c = claim1(&g0, 30);
    struct sw_serve_tenant ts[] = {tenant("big", &c, SW_SERVE_STOPPED, 0)};
    struct sw_serve_decision d;
    sw_serve_admit(ts, 1, 0, &d);
    assert_int_equal(d.verdict, SW_SERVE_NEVER);
    assert_int_equal(d.need, 30 * GIB);
    assert_int_equal(d.capacity, 24 * GIB);
    assert_non_null(strstr(d.text, "needs 32212254720 B (30.00 GiB) of 25769803776 B"));
}

static const char fleet_text[] =
    "hosts:\n"
    "  box:\n"
    "    transport: local\n"
    "    devices:\n"
    "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\n"
    "endpoints:\n"
    "  v:\n"
    "    host: box\n"
    "    devices: [g0]\n"
    "    engine: vllm\n"
    "    listen: 127.0.0.1:18000\n"
    "    payload: {path: /nonexistent/model}\n"
    "    arch: {architectures: [LlamaForCausalLM], model_type: llama, hidden_size: 2048,\n"
    "           num_attention_heads: 16, num_key_value_heads: 4, num_hidden_layers: 16,\n"
    "           intermediate_size: 8192, vocab_size: 32000, max_position_embeddings: 8192,\n"
    "           torch_dtype: bfloat16}\n"
    "    shape: {max_model_len: 8192, seqs: 4, gpu_memory_utilization: 0.5}\n"
    "    serve: {policy: priority, idle_ttl: 90s, pinned: true, priority: 7}\n";

static void test_fleet_serve_key(void **state)
{
    (void)state;
    struct sw_fleet *f = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_fleet_load_mem("fleet.yaml", fleet_text, strlen(fleet_text), NULL, &f, &e);
    if (rc)
        print_message("%s\n", e.msg);
    assert_int_equal(rc, 0);
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, "v");
    assert_non_null(ep);
    assert_string_equal(ep->serve.policy, "priority");
    assert_int_equal(ep->serve.idle_ttl_ms.v, 90000);
    assert_true(ep->serve.pinned.v);
    assert_int_equal(ep->serve.priority.v, 7);
    struct sw_serve_claim c;
    rc = sw_serve_claim(ep, &c, &e);
    if (rc)
        print_message("%s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.bytes[0], 12 * GIB); /* 0.5 x 24 GiB: what vLLM takes */
    assert_non_null(strstr(c.how, "gpu_memory_utilization 0.50"));
    sw_fleet_free(f);
    /* a policy that is not one */
    char bad[sizeof(fleet_text) + 16];
    snprintf(bad, sizeof(bad), "%s", fleet_text);
    char *p = strstr(bad, "policy: priority");
    memcpy(p, "policy: fifo    ", 16);
    rc = sw_fleet_load_mem("fleet.yaml", bad, strlen(bad), NULL, &f, &e);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(e.msg, "fifo"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_beside),
        cmocka_unit_test(test_evicts_lru),
        cmocka_unit_test(test_reloaded_device),
        cmocka_unit_test(test_never_pinned_nor_busy),
        cmocka_unit_test(test_other_device_untouched),
        cmocka_unit_test(test_too_big_alone),
        cmocka_unit_test(test_fleet_serve_key),
        cmocka_unit_test(test_claim_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
