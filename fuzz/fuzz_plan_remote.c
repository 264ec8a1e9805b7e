/*
 * Fuzz plan/remote's parsers of what an endpoint's host prints when its model's files are read
 * there: a stat line ("SIZE MTIME MODE" or "-") and the ranges reply (per range a stat line, then
 * exactly the range's bytes). The first byte picks the parser; any bytes must parse or be refused,
 * never read past the input, and what parsed must be what was asked: each range as long as its
 * file's size allows, and a stat's mtime a NUL-terminated string.
 */
#include <slipway/core.h>

#include "plan/remote_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool init;
    if (!init) {
        sw_core_init();
        init = true;
    }
    if (!size)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct sw_err e;
    if (data[0] % 2 == 0) {
        struct sw__rfile f;
        if (sw__remote_parse_stat(text, len, &f, &e) == 0 &&
            (!memchr(f.mtime, 0, sizeof(f.mtime)) || (f.exists && !f.mtime[0])))
            abort();
        return 0;
    }
    /* two ranges of two files as a reader would ask them */
    struct sw__rrange rg[2] = {
        {.path = "/m/a", .off = 0, .count = 16},
        {.path = "/m/b", .off = 8, .count = 1u << 20},
    };
    rg[0].want = (struct sw__rfile){.exists = true, .regular = true, .size = 10};
    snprintf(rg[0].want.mtime, sizeof(rg[0].want.mtime), "1.5");
    rg[1].want = (struct sw__rfile){.exists = true, .regular = true, .size = 12};
    snprintf(rg[1].want.mtime, sizeof(rg[1].want.mtime), "2.5");
    if (sw__remote_parse_ranges(text, len, rg, 2, "fuzz", &e) == 0 &&
        (rg[0].len != 10 || rg[1].len != 4))
        abort();
    for (int i = 0; i < 2; i++)
        sw_free(rg[i].data);
    return 0;
}
