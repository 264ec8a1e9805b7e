/*
 * Fuzz the llama-swap import (sw_import_llama_swap_text): any bytes must import or fail cleanly
 * (a line-numbered error), and a successful import's fleet text must name every endpoint.
 */
#include <slipway/import.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_import im;
    struct sw_err e;
    struct sw_import_opts o = {.host = "box"};
    sw_import_init(&im);
    if (sw_import_llama_swap_text(&im, "fuzz.yaml", (const char *)data, size, &o, &e) == 0) {
        char *text = NULL;
        if (im.n_names && sw_import_fleet_text(&im, NULL, &text, &e) == 0) {
            for (size_t i = 0; i < im.n_names; i++)
                if (!strstr(text, im.names[i]))
                    abort();
            sw_free(text);
        }
    } else if (e.code == 0) {
        abort(); /* a failure always says why */
    }
    sw_import_free(&im);
    return 0;
}
