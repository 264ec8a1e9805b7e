/*
 * Real tier: `slipway diff` and `slipway apply` over a fleet of two real test hosts (systemd +
 * sshd, each with a network of its own: sw-ap-a at 169.254.38.2, sw-ap-b at 169.254.39.2), three
 * native llama-server endpoints on each, every engine bound to its host's own 127.0.0.1 (so
 * slipway reaches them through the host), two of each host's endpoints sharing one device. In
 * order, with `diff` before and after each step:
 *   (a) apply from nothing: all six install and serve;
 *   (b) apply again: nothing restarts (each unit's NRestarts and MainPID unchanged);
 *   (c) one shape changed: only that endpoint restarts;
 *   (d) a co-tenancy overcommit (the device's memory_total cut below what its two endpoints
 *       take, each of them also changed) and (e) a port collision (two endpoints on the engines'
 *       default port) are refused before anything moves: exit 1, the refused endpoints not
 *       attempted, their units untouched;
 *   (f) apply SIGKILLed after its first stop: the next apply converges and a diff shows nothing.
 * Both hosts come down in the teardown, also when a check fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swapply.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void print_doc(const char *what, const json_t *doc)
{
    print_message("%s:\n", what);
    for (int i = 0; i < SWAP_N_EP; i++) {
        const json_t *it = swap_item(doc, swap_names[i]);
        print_message(
            "  %s %-9s %-13s %s\n", swap_names[i], swro_str(it, "action"), swro_str(it, "outcome"),
            swro_str(it, "outcome")[0] ? swro_str(it, "outcome_why") : swro_str(it, "why"));
    }
}

/* `slipway diff`: each endpoint's action is want[i] ("" skips it); its exit. */
static int diff_says(struct swap_fx *f, const char *what, const char *const want[SWAP_N_EP])
{
    int st = 0;
    json_t *j = swap_run(f, &st, "diff", NULL);
    print_doc(what, j);
    for (int i = 0; i < SWAP_N_EP; i++)
        if (want[i][0] && strcmp(swro_str(swap_item(j, swap_names[i]), "action"), want[i]))
            fail_msg("%s: %s is %s, want %s (%s)", what, swap_names[i],
                     swro_str(swap_item(j, swap_names[i]), "action"), want[i],
                     swro_str(swap_item(j, swap_names[i]), "why"));
    json_decref(j);
    return st;
}

/* apply with the short battery: the document (exit in *st). */
static json_t *apply(struct swap_fx *f, int *st, const char *what)
{
    json_t *j =
        swap_run(f, st, "apply", "--no-worst-case", "--probe-only", "readiness,liveness", NULL);
    print_doc(what, j);
    return j;
}

/* Every endpoint but those in `moved` (a bit each) kept its MainPID and NRestarts. */
static void kept(const struct swap_unitstate a[SWAP_N_EP], const struct swap_unitstate b[SWAP_N_EP],
                 unsigned moved)
{
    for (int i = 0; i < SWAP_N_EP; i++) {
        bool same = !strcmp(a[i].pid, b[i].pid) && !strcmp(a[i].restarts, b[i].restarts);
        if (moved & (1u << i)) {
            if (same)
                fail_msg("%s did not restart (MainPID %s)", swap_names[i], a[i].pid);
        } else if (!same) {
            fail_msg("%s restarted: MainPID %s -> %s, NRestarts %s -> %s", swap_names[i], a[i].pid,
                     b[i].pid, a[i].restarts, b[i].restarts);
        }
    }
}

static void all_serve(const struct swap_fx *f)
{
    for (int i = 0; i < SWAP_N_EP; i++)
        if (!f->default_port[i] &&
            !swro_generates_on(swap_host_of(f, i), "127.0.0.1", 18100 + i, 60))
            fail_msg("%s does not serve a generation on its host", swap_names[i]);
}

static void must_outcomes(const json_t *j, const char *const want[SWAP_N_EP])
{
    for (int i = 0; i < SWAP_N_EP; i++)
        if (want[i][0] && strcmp(swro_str(swap_item(j, swap_names[i]), "outcome"), want[i]))
            fail_msg("%s: outcome %s, want %s: %s", swap_names[i],
                     swro_str(swap_item(j, swap_names[i]), "outcome"), want[i],
                     swro_str(swap_item(j, swap_names[i]), "outcome_why"));
}

static bool unit_has(const struct swap_fx *f, int i, const char *needle)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "grep -c -- '%s' /etc/systemd/system/slipway-%s.service || true",
             needle, swap_names[i]);
    char *out = swth_must(swap_host_of(f, i), cmd);
    bool has = atoi(out) > 0;
    free(out);
    return has;
}

/* apply without --json, SIGKILLed at its first "stop " progress line. */
static void apply_killed(struct swap_fx *f)
{
    swt_slipway_kill_at("stop ", true, "apply", "--fleet", f->a.fleet, "--no-worst-case",
                        "--probe-only", "readiness,liveness", NULL);
}

/* The fleet as set now written and applied: a refusal (exit 1) leaving these outcomes. The JSON;
 * json_decref it. */
static json_t *apply_refused(struct swap_fx *f, const char *what,
                             const char *const outcomes[SWAP_N_EP])
{
    int st = 0;
    swap_write_fleet(f);
    json_t *j = apply(f, &st, what);
    assert_int_equal(st, 1);
    must_outcomes(j, outcomes);
    return j;
}

static void test_apply_converges(void **state)
{
    struct swap_fx *f = *state;
    swap_up(f);
    swap_write_fleet(f);
    static const char *const all_install[SWAP_N_EP] = {"install", "install", "install",
                                                       "install", "install", "install"};
    static const char *const all_unchanged[SWAP_N_EP] = {"unchanged", "unchanged", "unchanged",
                                                         "unchanged", "unchanged", "unchanged"};
    static const char *const all_converged[SWAP_N_EP] = {"converged", "converged", "converged",
                                                         "converged", "converged", "converged"};
    static const char *const all_left[SWAP_N_EP] = {"left", "left", "left", "left", "left", "left"};
    assert_int_equal(diff_says(f, "(a) diff from nothing", all_install), 1);

    /* (a) from nothing */
    int st = 0;
    json_t *j = apply(f, &st, "(a) apply from nothing");
    must_outcomes(j, all_converged);
    assert_int_equal(st, 0);
    json_decref(j);
    all_serve(f);
    assert_int_equal(diff_says(f, "(a) diff after", all_unchanged), 0);

    /* (b) twice: nothing restarts */
    struct swap_unitstate u0[SWAP_N_EP], u1[SWAP_N_EP];
    swap_read_units(f, u0);
    j = apply(f, &st, "(b) apply again");
    must_outcomes(j, all_left);
    assert_int_equal(st, 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "outcomes"), "left")),
                     SWAP_N_EP);
    json_decref(j);
    swap_read_units(f, u1);
    kept(u0, u1, 0);

    /* (c) one shape changed: only it restarts */
    f->ctx[0] = 1024;
    swap_write_fleet(f);
    static const char *const one_change[SWAP_N_EP] = {"change",    "unchanged", "unchanged",
                                                      "unchanged", "unchanged", "unchanged"};
    assert_int_equal(diff_says(f, "(c) diff, a1 changed", one_change), 1);
    j = swap_run(f, &st, "diff", NULL);
    const json_t *ch = json_object_get(swap_item(j, "a1"), "changes");
    assert_true(json_array_size(ch) >= 1);
    bool named = false;
    size_t k;
    const json_t *c;
    json_array_foreach(ch, k, c)
    {
        named |= strstr(swro_str(c, "installed"), "-c 512") &&
                 strstr(swro_str(c, "rendered"), "-c 1024");
    }
    assert_true(named);
    json_decref(j);
    j = apply(f, &st, "(c) apply one change");
    static const char *const one_conv[SWAP_N_EP] = {"converged", "left", "left",
                                                    "left",      "left", "left"};
    must_outcomes(j, one_conv);
    assert_int_equal(st, 0);
    json_decref(j);
    swap_read_units(f, u0);
    kept(u1, u0, 1u << 0);
    assert_true(unit_has(f, 0, "-c 1024"));
    assert_int_equal(diff_says(f, "(c) diff after", all_unchanged), 0);

    /* (d) co-tenancy: cpu0 of ap-a cut below what a1 and a2 take together; both changed */
    j = swap_run(f, &st, "diff", NULL);
    double a1 = json_real_value(
        json_object_get(json_array_get(json_object_get(swap_item(j, "a1"), "claims"), 0), "bytes"));
    double a2 = json_real_value(
        json_object_get(json_array_get(json_object_get(swap_item(j, "a2"), "claims"), 0), "bytes"));
    json_decref(j);
    assert_true(a1 > 0 && a2 > 0);
    snprintf(f->mem_a, sizeof(f->mem_a), "%.0fMiB", (a1 + a2) / 1048576.0 - 2);
    f->ctx[0] = 768;
    f->ctx[1] = 768;
    static const char *const cot[SWAP_N_EP] = {"not_attempted", "not_attempted", "left",
                                               "left",          "left",          "left"};
    j = apply_refused(f, "(d) apply over a co-tenancy overcommit", cot);
    assert_true(json_is_true(json_object_get(swap_item(j, "a1"), "refused")));
    assert_non_null(strstr(swro_str(swap_item(j, "a2"), "refused_why"), "co-tenancy"));
    assert_non_null(strstr(swro_str(swap_item(j, "a2"), "refused_why"), "a1"));
    assert_string_equal(swro_str(json_array_get(json_object_get(j, "refusals"), 0), "gate"),
                        "cotenancy");
    json_decref(j);
    swap_read_units(f, u1);
    kept(u0, u1, 0);
    assert_true(unit_has(f, 0, "-c 1024"));

    /* (e) a port collision: b2 and b3 on the engine's default port of one address */
    snprintf(f->mem_a, sizeof(f->mem_a), "8GiB");
    f->ctx[0] = 1024;
    f->ctx[1] = 512;
    f->default_port[4] = f->default_port[5] = true;
    static const char *const port[SWAP_N_EP] = {"left", "left",          "left",
                                                "left", "not_attempted", "not_attempted"};
    j = apply_refused(f, "(e) apply over a port collision", port);
    assert_non_null(strstr(swro_str(swap_item(j, "b3"), "refused_why"), "8080"));
    json_decref(j);
    swap_read_units(f, u0);
    kept(u1, u0, 0);
    f->default_port[4] = f->default_port[5] = false;

    /* (f) killed half-way: the next apply converges */
    f->ctx[2] = 1024;
    f->ctx[3] = 1024;
    f->ctx[4] = 1024;
    swap_write_fleet(f);
    apply_killed(f);
    j = apply(f, &st, "(f) apply after the kill");
    assert_int_equal(st, 0);
    static const char *const conv_or_left[SWAP_N_EP] = {"", "", "", "", "", ""};
    must_outcomes(j, conv_or_left);
    json_decref(j);
    all_serve(f);
    assert_int_equal(diff_says(f, "(f) diff after", all_unchanged), 0);
    for (int i = 2; i <= 4; i++)
        assert_true(unit_has(f, i, "-c 1024"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_apply_converges, swap_setup, swap_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
