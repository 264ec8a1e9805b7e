/*
 * Files nothing can inject into (issue 27), against the real binary: a unit whose ExecStop names
 * a stop grace past int64 milliseconds. Each case failed before its fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOUND_S 60 /* a run that blocks is killed after this long (status 137) */

static char *dir;

static int setup(void **state)
{
    (void)state;
    dir = swt_tmpdir();
    unsetenv("SLIPWAY_LEDGER");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    swt_tmpdir_free(dir);
    return 0;
}

static void run_argv(const char *const *argv, struct swt_run *r)
{
    assert_int_equal(swt_run(argv, NULL, BOUND_S, r), 0);
    if (r->status == 128 + 9)
        fail_msg("%s %s ... did not finish within %d s (blocked)\nstderr: %.2000s", argv[0],
                 argv[1], BOUND_S, r->err);
}

/* `slipway lint --no-verify path`; the output must not carry a sanitizer's report. */
static void lint(const char *path, struct swt_run *r)
{
    const char *argv[] = {swt_bin(), "lint", "--no-verify", path, NULL};
    run_argv(argv, r);
    if (strstr(r->err, "runtime error") || strstr(r->err, "Sanitizer"))
        fail_msg("lint %s: %s", path, r->err);
}

/* Every needle (NULL-terminated) is in the text. */
static void has_all(const char *what, const char *text, ...)
{
    va_list ap;
    va_start(ap, text);
    for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
        if (!strstr(text, n))
            fail_msg("%s does not say '%s':\n%s", what, n, text);
    va_end(ap);
}

/* Defect 5: `podman stop -t 3262585074549260287` overflowed stop_grace_s * 1000 (UBSan: signed
 * integer overflow); the wrapped product was negative, so the finding was lost. */
static void test_lint_huge_stop_grace(void **state)
{
    (void)state;
    const char *unit = swt_join(dir, "huge-grace.service");
    swt_write_str(unit, "# found by fuzz_unit_scan\n"
                        "[Unit]\n"
                        "Description=a grace past int64 milliseconds\n"
                        "[Service]\n"
                        "ExecStart=/usr/bin/podman run --rm --name g -v /srv/m:/models "
                        "docker.io/vllm/vllm-openai@sha256:"
                        "4f1ca1d3c1b0a8fd0f2b8d6b1d0e5c9a7b3e2f1a0c9d8e7f6a5b4c3d2e1f0a9b "
                        "--model /models/x\n"
                        "ExecStop=/usr/bin/podman stop -t 3262585074549260287 g\n"
                        "Restart=always\n"
                        "TimeoutStopSec=3y\n");
    struct swt_run r;
    lint(unit, &r);
    assert_int_equal(r.status, 1);
    has_all("lint", r.out, "huge-grace.service:8: stop-timeout: TimeoutStopSec=3y (line 8)",
            "`podman stop -t 3262585074549260287` (line 6)", "1 finding", NULL);
    swt_run_free(&r);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lint_huge_stop_grace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
