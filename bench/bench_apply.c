/*
 * bench_apply: what `slipway apply` costs when there is nothing to do, on two real test hosts
 * (the fixture of tests/real/test_apply.c: 2 hosts x 3 llama-server endpoints, each host with a
 * network of its own). One apply deploys the six; then ROUNDS no-change applies, each timed from
 * the outside; each run's JSON gives every host's own time (its thread's questions). Printed: the
 * median wall time, the median of the slowest host's time and of the hosts' sum, and wall /
 * slowest and wall / sum: hosts asked at once put the wall near the slowest host, not the sum.
 *
 * Needs what the real tests need (root, systemd-nspawn, the test hosts' rootfs, the pinned
 * llama.cpp build): scripts/testhost.sh says what is missing. Not run by ctest (no thresholds);
 * run it by hand: build/bench/bench_apply [ROUNDS] (default 5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swapply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rounds = 5;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ROUNDS no-change applies; the medians printed. */
static void measure(struct swap_fx *f, const char *label)
{
    double wall[64], slow[64], sum[64];
    for (int r = 0; r < rounds; r++) {
        int st = 0;
        double t0 = now_s();
        json_t *j = swap_run(f, &st, "apply", NULL);
        wall[r] = now_s() - t0;
        assert_int_equal(st, 0);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(j, "outcomes"), "left")), SWAP_N_EP);
        slow[r] = sum[r] = 0;
        size_t i;
        const json_t *h;
        json_array_foreach(json_object_get(j, "hosts"), i, h)
        {
            double s = json_real_value(json_object_get(h, "seconds"));
            sum[r] += s;
            if (s > slow[r])
                slow[r] = s;
        }
        json_decref(j);
    }
    double w = median(wall, rounds), s = median(slow, rounds), t = median(sum, rounds);
    printf("%-22s wall %6.3f s   slowest host %6.3f s   hosts' sum %6.3f s   wall/slowest %.2f"
           "   wall/sum %.2f   (median of %d)\n",
           label, w, s, t, w / s, w / t, rounds);
}

static void bench(void **state)
{
    struct swap_fx *f = *state;
    swap_up(f);
    swap_write_fleet(f);
    int st = 0;
    double t0 = now_s();
    json_t *j =
        swap_run(f, &st, "apply", "--no-worst-case", "--probe-only", "readiness,liveness", NULL);
    printf("apply from nothing (6 endpoints, 2 hosts): %.1f s, exit %d\n", now_s() - t0, st);
    assert_int_equal(st, 0);
    json_decref(j);
    measure(f, "no change, 2 hosts");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (rounds < 1 || rounds > 64)
        rounds = 5;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(bench, swap_setup, swap_teardown),
    };
    return cmocka_run_group_tests(tests, swth_group_setup, swth_group_teardown);
}
