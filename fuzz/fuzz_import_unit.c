/*
 * Fuzz the unit import (sw_import_unit_text): any bytes must import or fail cleanly, and an
 * import that succeeds must give a fleet text (sw_import_fleet_text) that is NUL-free and names
 * its endpoint. The input is a unit; after a line holding only "%%ENV%%", the rest is its
 * EnvironmentFile.
 */
#include <slipway/import.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t ulen = size, elen = 0;
    char *env = NULL;
    char *mark = memmem(s, size, "\n%%ENV%%\n", 9);
    if (mark) {
        ulen = (size_t)(mark - s) + 1;
        env = mark + 9;
        elen = size - (size_t)(env - s);
    }
    struct sw_import im;
    struct sw_err e;
    struct sw_import_opts o = {.host = "box"};
    sw_import_init(&im);
    if (sw_import_unit_text(&im, "fuzz.service", s, ulen, env ? "fuzz.env" : NULL, env, elen, &o,
                            &e) == 0) {
        char *text = NULL;
        if (sw_import_fleet_text(&im, NULL, &text, &e) == 0) {
            if (!text || !strstr(text, "endpoints:"))
                abort();
            sw_free(text);
        }
        json_decref(sw_import_json(&im));
    }
    sw_import_free(&im);
    free(s);
    return 0;
}
