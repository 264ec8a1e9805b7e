/*
 * Headless Chromium for the page tests (swchrome.h): finds the browser, runs it on a page with a
 * bounded deadline, and reads back the screenshot, the DOM and the console errors it logged.
 * What it does not do: judge a page (each test asserts what its page must show).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swchrome.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool swc_which(const char *prog, char *out, size_t n)
{
    const char *path = getenv("PATH");
    char buf[8192];
    snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, n, "%s/%s", d, prog);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

void swc_load(const char *bin, const char *dir, bool dom, const char *html, const char *png,
              int height, struct swt_run *r)
{
    char url[4300], shot[4300], prof[4300], win[64];
    snprintf(url, sizeof(url), "file://%s", html);
    snprintf(shot, sizeof(shot), "--screenshot=%s", png ? png : "");
    snprintf(prof, sizeof(prof), "--user-data-dir=%s/chromium-profile", dir);
    snprintf(win, sizeof(win), "--window-size=1200,%d", height);
    const char *argv[] = {bin,
                          "--headless",
                          "--no-sandbox",
                          "--disable-gpu",
                          "--no-first-run",
                          "--disable-extensions",
                          prof,
                          "--enable-logging=stderr",
                          "--v=0",
                          "--virtual-time-budget=3000",
                          win,
                          dom ? "--dump-dom" : shot,
                          url,
                          NULL};
    swt_run(argv, NULL, 120, r);
}

bool swc_console_error(const char *err)
{
    return err &&
           (strstr(err, "Uncaught") || strstr(err, ":CONSOLE(") || strstr(err, "console.error"));
}

void swc_render_png(const char *bin, const char *dir, const char *html, const char *png, int height,
                    const char *what)
{
    struct swt_run r;
    swc_load(bin, dir, false, html, png, height, &r);
    assert_int_equal(r.status, 0);
    if (swc_console_error(r.err))
        fail_msg("console error rendering %s: %s", what, r.err);
    swt_run_free(&r);
    char *data = NULL;
    size_t len = 0;
    struct sw_err e;
    assert_int_equal(sw_read_file(png, 64u << 20, &data, &len, &e), 0);
    assert_true(len > 1000 && !memcmp(data, "\x89PNG\r\n\x1a\n", 8));
    sw_free(data);
}

void swc_control(const char *bin, const char *dir, int height)
{
    char bad[4300], png[4300];
    struct swt_run r;
    snprintf(bad, sizeof(bad), "%s/bad.html", dir);
    swt_write_str(bad, "<!DOCTYPE html><html><body><p>x</p><script>no_such_function();"
                       "</script></body></html>\n");
    snprintf(png, sizeof(png), "%s/bad.png", dir);
    swc_load(bin, dir, false, bad, png, height, &r);
    if (!swc_console_error(r.err))
        fail_msg("the control page's script error is not in Chromium's log:\n%.2000s", r.err);
    swt_run_free(&r);
}
