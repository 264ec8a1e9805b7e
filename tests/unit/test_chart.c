/*
 * core/chart: the SVG a line or bar chart becomes, counted element by element; gaps, whiskers,
 * escaping, nice ticks; refused inputs; the file written whole or not at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/core.h>

#include "swtest.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_lines(void **state)
{
    (void)state;
    const double x[] = {512, 2048, 8192, 16384};
    const double client[] = {699.0, 650.5, NAN, 400.25};
    const double server[] = {695.0, 640.0, 520.0, 390.0};
    const double lo[] = {690, 630, 510, 380}, hi[] = {700, 650, 530, 400};
    struct sw_chart_series se[] = {
        {.name = "client", .n = 4, .x = x, .y = client},
        {.name = "server <timings> & co", .n = 4, .x = x, .y = server, .lo = lo, .hi = hi},
    };
    struct sw_chart c = {.kind = SW_CHART_LINES,
                         .title = "decode tok/s \"by depth\"",
                         .x_label = "context depth (tokens)",
                         .y_label = "tok/s",
                         .series = se,
                         .n_series = 2,
                         .y_from_zero = true};
    struct sw_buf b;
    struct sw_err e;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), 0);
    const char *s = sw_buf_cstr(&b);
    assert_true(strncmp(s, "<?xml", 5) == 0);
    assert_int_equal(count(s, "<svg "), 1);
    assert_non_null(strstr(s, "</svg>\n"));
    assert_int_equal(s[b.len - 1], '\n');
    /* the NaN breaks the client's line in two; the server's is one */
    assert_int_equal(count(s, "<polyline"), 3);
    /* 3 + 4 points, each with its value */
    assert_int_equal(count(s, "<circle"), 7);
    assert_non_null(strstr(s, "client: 400.25</title>"));
    /* 4 whiskers */
    assert_int_equal(count(s, "<path d=\"M"), 4);
    /* escaped text, never raw markup from a name */
    swt_has_all("s", s, "server &lt;timings&gt; &amp; co", "decode tok/s &quot;by depth&quot;",
                NULL);
    assert_null(strstr(s, "<timings>"));
    /* nice ticks: y from 0 in steps of 200 to 800, x in thousands with separators */
    swt_has_all("s", s, ">800</text>", ">0</text>", NULL);
    assert_non_null(strstr(s, ">15,000</text>")); /* 512..16,384 in steps of 5,000 */
    assert_non_null(strstr(s, ">20,000</text>"));
    sw_buf_free(&b);
}

/* Fractional ticks across zero: computed by index, so 0 prints as 0.0, never -0.0 or 1e-17. */
static void test_ticks_across_zero(void **state)
{
    (void)state;
    const double x[] = {0, 1, 2}, y[] = {-0.3, 0.05, 0.3};
    struct sw_chart_series se = {.name = "s", .n = 3, .x = x, .y = y};
    struct sw_chart c = {.kind = SW_CHART_LINES, .title = "t", .series = &se, .n_series = 1};
    struct sw_buf b;
    struct sw_err e;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), 0);
    const char *s = sw_buf_cstr(&b);
    assert_non_null(strstr(s, ">0.0</text>"));
    assert_non_null(strstr(s, ">-0.4</text>")); /* -0.3..0.3 in steps of 0.2 */
    assert_non_null(strstr(s, ">0.4</text>"));
    assert_null(strstr(s, ">-0.0</text>"));
    assert_null(strstr(s, "e-1"));
    sw_buf_free(&b);
}

static void test_bars_and_panels(void **state)
{
    (void)state;
    const char *cats[] = {"sha256sum", "OpenSSL single", "parallel\n2 workers"};
    const double mbs[] = {320.2, 1541.9, 2875.6};
    const double tgt[] = {NAN, NAN, 2775.5};
    struct sw_chart_series se[] = {{.name = "MB/s", .n = 3, .y = mbs},
                                   {.name = "target", .n = 3, .y = tgt}};
    struct sw_chart c[2] = {{.kind = SW_CHART_BARS,
                             .title = "verify",
                             .note = "8 x 256 MiB",
                             .x_label = "",
                             .y_label = "MB/s",
                             .categories = cats,
                             .n_categories = 3,
                             .series = se,
                             .n_series = 2},
                            {.kind = SW_CHART_BARS,
                             .title = "second panel",
                             .categories = cats,
                             .n_categories = 3,
                             .series = se,
                             .n_series = 1}};
    struct sw_buf b;
    struct sw_err e;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_chart_svg(c, 2, &b, &e), 0);
    const char *s = sw_buf_cstr(&b);
    /* two panels: the height is two panels and a legend row */
    assert_non_null(strstr(s, "height=\"682\""));
    /* bars: 4 in the first panel (NaN targets drawn as nothing), 3 in the second */
    assert_int_equal(count(s, "<title>MB/s: "), 6);
    assert_int_equal(count(s, "<title>target: "), 1);
    assert_non_null(strstr(s, "<title>MB/s: 2875.60</title>"));
    assert_int_equal(count(s, ">OpenSSL single</tspan>"), 2);
    assert_non_null(strstr(s, "8 x 256 MiB"));
    /* a two-line category: one tspan per line, the second below the first */
    assert_int_equal(count(s, ">parallel</tspan><tspan"), 2);
    assert_int_equal(count(s, ">2 workers</tspan>"), 2);
    sw_buf_free(&b);
}

static void test_refused(void **state)
{
    (void)state;
    struct sw_buf b;
    struct sw_err e;
    const double nan3[] = {NAN, NAN, INFINITY}, x[] = {1, 2, 3}, y[] = {1, 2, 3};
    struct sw_chart_series none = {.name = "n", .n = 3, .x = x, .y = nan3};
    struct sw_chart c = {.kind = SW_CHART_LINES, .title = "empty", .series = &none, .n_series = 1};
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "\"empty\": no finite value"));
    c.n_series = 0;
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), SW_EINVAL);
    struct sw_chart_series many[9];
    for (int i = 0; i < 9; i++)
        many[i] = (struct sw_chart_series){.name = "s", .n = 3, .x = x, .y = y};
    c.series = many;
    c.n_series = 9;
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), SW_ERANGE);
    c.kind = SW_CHART_BARS;
    c.n_series = 1;
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), SW_EINVAL); /* bars need categories */
    const char *one[] = {"a"};
    c.categories = one;
    c.n_categories = 1;
    assert_int_equal(sw_chart_svg(&c, 1, &b, &e), SW_ERANGE); /* 3 values, 1 category */
    struct sw_chart_series nox = {.name = "n", .n = 3, .y = y};
    struct sw_chart l = {.kind = SW_CHART_LINES, .title = "t", .series = &nox, .n_series = 1};
    assert_int_equal(sw_chart_svg(&l, 1, &b, &e), SW_EINVAL); /* lines need x */
    assert_int_equal(sw_chart_svg(NULL, 0, &b, &e), SW_EINVAL);
    assert_int_equal(b.len, 0); /* nothing appended by a refused chart */
    sw_buf_free(&b);

    /* a buffer too small: out of memory, said */
    struct sw_chart_series ok = {.name = "ok", .n = 3, .x = x, .y = y};
    l.series = &ok;
    sw_buf_init(&b, 256);
    assert_int_equal(sw_chart_svg(&l, 1, &b, &e), SW_ENOMEM);
    sw_buf_free(&b);
}

static void test_write(void **state)
{
    (void)state;
    char *dir = swt_tmpdir();
    const double x[] = {1, 2}, y[] = {3, 4};
    struct sw_chart_series se = {.name = "s", .n = 2, .x = x, .y = y};
    struct sw_chart c = {.kind = SW_CHART_LINES, .title = "t", .series = &se, .n_series = 1};
    struct sw_err e;
    char path[4200];
    snprintf(path, sizeof(path), "%s/c.svg", dir);
    assert_int_equal(sw_chart_write_svg(&c, 1, path, &e), 0);
    char *text = NULL;
    size_t n = 0;
    assert_int_equal(sw_read_file(path, 1 << 20, &text, &n, &e), 0);
    assert_non_null(strstr(text, "</svg>"));
    sw_free(text);
    /* a refused chart leaves the old file as it was */
    struct sw_chart bad = c;
    bad.n_series = 0;
    struct stat st0, st1;
    assert_int_equal(stat(path, &st0), 0);
    assert_int_not_equal(sw_chart_write_svg(&bad, 1, path, &e), 0);
    assert_int_equal(stat(path, &st1), 0);
    assert_int_equal(st0.st_size, st1.st_size);
    /* a directory that does not exist: an error naming it, no file */
    snprintf(path, sizeof(path), "%s/missing/c.svg", dir);
    assert_int_not_equal(sw_chart_write_svg(&c, 1, path, &e), 0);
    assert_int_equal(access(path, F_OK), -1);
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),           cmocka_unit_test(test_ticks_across_zero),
        cmocka_unit_test(test_bars_and_panels), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_write),
    };
    sw_core_init();
    return cmocka_run_group_tests_name("chart", tests, NULL, NULL);
}
