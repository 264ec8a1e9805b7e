/*
 * Headless Chromium for the page tests (bench --html, report --html): find it on PATH, load a
 * page into a screenshot or its DOM, and read console errors from its log.
 */
#ifndef SWCHROME_H
#define SWCHROME_H

#include <stdbool.h>
#include <stddef.h>

#include "swtest.h"

/* The first executable `prog` on PATH (else /usr/bin:/bin) into out; false when none. */
bool swc_which(const char *prog, char *out, size_t n);

/* Load file `html` in headless Chromium `bin` (profile under `dir`, a window `height` px tall):
 * the DOM on r->out when `dom`, else a screenshot written to `png`. Bounded: 120 s. */
void swc_load(const char *bin, const char *dir, bool dom, const char *html, const char *png,
              int height, struct swt_run *r);

/* An uncaught exception or a console message in Chromium's log (r->err). */
bool swc_console_error(const char *err);

/* Screenshot `html` into `png` (swc_load) and require that Chromium exited 0, logged no console
 * error (the failure names `what`) and wrote a PNG of more than 1,000 bytes. Include after
 * <cmocka.h>. */
void swc_render_png(const char *bin, const char *dir, const char *html, const char *png, int height,
                    const char *what);

/* The control of a page test: a page with a script error, loaded in `bin` (files under dir, a
 * window `height` px tall), must show a console error (else the tests could not see one). */
void swc_control(const char *bin, const char *dir, int height);

#endif
