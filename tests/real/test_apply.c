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

#include "swrollout.h"
#include "swthost.h"
#include "swtest.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct swro_site site_a = {"sw-ap-a", "169.254.38.2", "ap-a", "a1"};
static const struct swro_site site_b = {"sw-ap-b", "169.254.39.2", "ap-b", "b1"};

#define N_EP 6
static const char *const names[N_EP] = {"a1", "a2", "a3", "b1", "b2", "b3"};

struct fx {
    struct swro a, b;
    /* per endpoint, the shape the next fleet file gives it */
    int ctx[N_EP];
    bool default_port[N_EP]; /* `listen: {address: 127.0.0.1}`: the engine's default 8080 */
    char mem_a[32];          /* ap-a's cpu0 memory_total */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    for (int i = 0; i < N_EP; i++)
        f->ctx[i] = 512;
    snprintf(f->mem_a, sizeof(f->mem_a), "8GiB");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f) {
        swro_close(&f->a);
        swro_close(&f->b);
        free(f);
    }
    return 0;
}

static const struct swth_host *host_of(const struct fx *f, int i)
{
    return i < 3 ? &f->a.h : &f->b.h;
}

/* Each host: cpu0 (the first two endpoints) and cpu1 (the third). */
static void write_fleet(struct fx *f)
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
    for (int i = 0; i < N_EP; i++) {
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
                      names[i], i < 3 ? "ap-a" : "ap-b", listen, i % 3 == 2 ? "cpu1" : "cpu0",
                      names[i], f->ctx[i]);
    }
    assert_true(n > 0 && (size_t)n < sizeof(text));
    swt_write_str(f->a.fleet, text);
}

/* slipway VERB --fleet FLEET --json ARGS...: the document, the exit in *status. */
static json_t *run(struct fx *f, int *status, const char *verb, ...) __attribute__((sentinel));
static json_t *run(struct fx *f, int *status, const char *verb, ...)
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = swt_bin();
    argv[n++] = verb;
    argv[n++] = "--fleet";
    argv[n++] = f->a.fleet;
    argv[n++] = "--json";
    va_list ap;
    va_start(ap, verb);
    for (const char *a = va_arg(ap, const char *); a && n < 31; a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 900, &r), 0);
    *status = r.status;
    json_t *j = swt_json_out(&r);
    if (!j)
        fail_msg("%s: exit %d, no JSON: %s %s", verb, r.status, r.out, r.err);
    swt_run_free(&r);
    return j;
}

static const json_t *item(const json_t *doc, const char *name)
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

static void print_doc(const char *what, const json_t *doc)
{
    print_message("%s:\n", what);
    for (int i = 0; i < N_EP; i++) {
        const json_t *it = item(doc, names[i]);
        print_message(
            "  %s %-9s %-13s %s\n", names[i], swro_str(it, "action"), swro_str(it, "outcome"),
            swro_str(it, "outcome")[0] ? swro_str(it, "outcome_why") : swro_str(it, "why"));
    }
}

/* `slipway diff`: each endpoint's action is want[i] ("" skips it); its exit. */
static int diff_says(struct fx *f, const char *what, const char *const want[N_EP])
{
    int st = 0;
    json_t *j = run(f, &st, "diff", NULL);
    print_doc(what, j);
    for (int i = 0; i < N_EP; i++)
        if (want[i][0] && strcmp(swro_str(item(j, names[i]), "action"), want[i]))
            fail_msg("%s: %s is %s, want %s (%s)", what, names[i],
                     swro_str(item(j, names[i]), "action"), want[i],
                     swro_str(item(j, names[i]), "why"));
    json_decref(j);
    return st;
}

/* apply with the short battery: the document (exit in *st). */
static json_t *apply(struct fx *f, int *st, const char *what)
{
    json_t *j = run(f, st, "apply", "--no-worst-case", "--probe-only", "readiness,liveness", NULL);
    print_doc(what, j);
    return j;
}

struct unitstate {
    char pid[32], restarts[32];
};

static void read_units(const struct fx *f, struct unitstate u[N_EP])
{
    for (int i = 0; i < N_EP; i++) {
        char unit[64];
        snprintf(unit, sizeof(unit), "slipway-%s.service", names[i]);
        swth_show(host_of(f, i), unit, "MainPID", u[i].pid, sizeof(u[i].pid));
        swth_show(host_of(f, i), unit, "NRestarts", u[i].restarts, sizeof(u[i].restarts));
    }
}

/* Every endpoint but those in `moved` (a bit each) kept its MainPID and NRestarts. */
static void kept(const struct unitstate a[N_EP], const struct unitstate b[N_EP], unsigned moved)
{
    for (int i = 0; i < N_EP; i++) {
        bool same = !strcmp(a[i].pid, b[i].pid) && !strcmp(a[i].restarts, b[i].restarts);
        if (moved & (1u << i)) {
            if (same)
                fail_msg("%s did not restart (MainPID %s)", names[i], a[i].pid);
        } else if (!same) {
            fail_msg("%s restarted: MainPID %s -> %s, NRestarts %s -> %s", names[i], a[i].pid,
                     b[i].pid, a[i].restarts, b[i].restarts);
        }
    }
}

static void all_serve(const struct fx *f)
{
    for (int i = 0; i < N_EP; i++)
        if (!f->default_port[i] && !swro_generates_on(host_of(f, i), "127.0.0.1", 18100 + i, 60))
            fail_msg("%s does not serve a generation on its host", names[i]);
}

static void must_outcomes(const json_t *j, const char *const want[N_EP])
{
    for (int i = 0; i < N_EP; i++)
        if (want[i][0] && strcmp(swro_str(item(j, names[i]), "outcome"), want[i]))
            fail_msg("%s: outcome %s, want %s: %s", names[i],
                     swro_str(item(j, names[i]), "outcome"), want[i],
                     swro_str(item(j, names[i]), "outcome_why"));
}

static bool unit_has(const struct fx *f, int i, const char *needle)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "grep -c -- '%s' /etc/systemd/system/slipway-%s.service || true",
             needle, names[i]);
    char *out = swth_must(host_of(f, i), cmd);
    bool has = atoi(out) > 0;
    free(out);
    return has;
}

/* apply without --json, SIGKILLed at its first "stop " progress line. */
static void apply_killed(struct fx *f)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(swt_bin(), swt_bin(), "apply", "--fleet", f->a.fleet, "--no-worst-case",
              "--probe-only", "readiness,liveness", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[2048];
    bool stopped = false;
    while (fgets(line, sizeof(line), in)) {
        if (strstr(line, "stop ")) {
            print_message("killing apply at: %s", line);
            stopped = true;
            kill(pid, SIGKILL);
            break;
        }
    }
    fclose(in);
    int ws = 0;
    waitpid(pid, &ws, 0);
    assert_true(stopped);
    assert_true(WIFSIGNALED(ws));
}

static void test_apply_converges(void **state)
{
    struct fx *f = *state;
    swro_up(&f->a, &site_a);
    swro_up(&f->b, &site_b);
    write_fleet(f);
    static const char *const all_install[N_EP] = {"install", "install", "install",
                                                  "install", "install", "install"};
    static const char *const all_unchanged[N_EP] = {"unchanged", "unchanged", "unchanged",
                                                    "unchanged", "unchanged", "unchanged"};
    static const char *const all_converged[N_EP] = {"converged", "converged", "converged",
                                                    "converged", "converged", "converged"};
    static const char *const all_left[N_EP] = {"left", "left", "left", "left", "left", "left"};
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
    struct unitstate u0[N_EP], u1[N_EP];
    read_units(f, u0);
    j = apply(f, &st, "(b) apply again");
    must_outcomes(j, all_left);
    assert_int_equal(st, 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "outcomes"), "left")),
                     N_EP);
    json_decref(j);
    read_units(f, u1);
    kept(u0, u1, 0);

    /* (c) one shape changed: only it restarts */
    f->ctx[0] = 1024;
    write_fleet(f);
    static const char *const one_change[N_EP] = {"change",    "unchanged", "unchanged",
                                                 "unchanged", "unchanged", "unchanged"};
    assert_int_equal(diff_says(f, "(c) diff, a1 changed", one_change), 1);
    j = run(f, &st, "diff", NULL);
    const json_t *ch = json_object_get(item(j, "a1"), "changes");
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
    static const char *const one_conv[N_EP] = {"converged", "left", "left", "left", "left", "left"};
    must_outcomes(j, one_conv);
    assert_int_equal(st, 0);
    json_decref(j);
    read_units(f, u0);
    kept(u1, u0, 1u << 0);
    assert_true(unit_has(f, 0, "-c 1024"));
    assert_int_equal(diff_says(f, "(c) diff after", all_unchanged), 0);

    /* (d) co-tenancy: cpu0 of ap-a cut below what a1 and a2 take together; both changed */
    j = run(f, &st, "diff", NULL);
    double a1 = json_real_value(
        json_object_get(json_array_get(json_object_get(item(j, "a1"), "claims"), 0), "bytes"));
    double a2 = json_real_value(
        json_object_get(json_array_get(json_object_get(item(j, "a2"), "claims"), 0), "bytes"));
    json_decref(j);
    assert_true(a1 > 0 && a2 > 0);
    snprintf(f->mem_a, sizeof(f->mem_a), "%.0fMiB", (a1 + a2) / 1048576.0 - 2);
    f->ctx[0] = 768;
    f->ctx[1] = 768;
    write_fleet(f);
    j = apply(f, &st, "(d) apply over a co-tenancy overcommit");
    assert_int_equal(st, 1);
    static const char *const cot[N_EP] = {"not_attempted", "not_attempted", "left",
                                          "left",          "left",          "left"};
    must_outcomes(j, cot);
    assert_true(json_is_true(json_object_get(item(j, "a1"), "refused")));
    assert_non_null(strstr(swro_str(item(j, "a2"), "refused_why"), "co-tenancy"));
    assert_non_null(strstr(swro_str(item(j, "a2"), "refused_why"), "a1"));
    assert_string_equal(swro_str(json_array_get(json_object_get(j, "refusals"), 0), "gate"),
                        "cotenancy");
    json_decref(j);
    read_units(f, u1);
    kept(u0, u1, 0);
    assert_true(unit_has(f, 0, "-c 1024"));

    /* (e) a port collision: b2 and b3 on the engine's default port of one address */
    snprintf(f->mem_a, sizeof(f->mem_a), "8GiB");
    f->ctx[0] = 1024;
    f->ctx[1] = 512;
    f->default_port[4] = f->default_port[5] = true;
    write_fleet(f);
    j = apply(f, &st, "(e) apply over a port collision");
    assert_int_equal(st, 1);
    static const char *const port[N_EP] = {"left", "left",          "left",
                                           "left", "not_attempted", "not_attempted"};
    must_outcomes(j, port);
    assert_non_null(strstr(swro_str(item(j, "b3"), "refused_why"), "8080"));
    json_decref(j);
    read_units(f, u0);
    kept(u1, u0, 0);
    f->default_port[4] = f->default_port[5] = false;

    /* (f) killed half-way: the next apply converges */
    f->ctx[2] = 1024;
    f->ctx[3] = 1024;
    f->ctx[4] = 1024;
    write_fleet(f);
    apply_killed(f);
    j = apply(f, &st, "(f) apply after the kill");
    assert_int_equal(st, 0);
    static const char *const conv_or_left[N_EP] = {"", "", "", "", "", ""};
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
        cmocka_unit_test_setup_teardown(test_apply_converges, setup, teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
