/*
 * slipway version [--json]
 */
#include "cli.h"

#include <string.h>

#ifndef SW_VERSION
#define SW_VERSION "0.1.0"
#endif

int sw_cmd_version(int argc, char **argv)
{
    bool json = argc > 1 && !strcmp(argv[1], "--json");
    if (json) {
        json_t *j = json_pack("{s:s}", "version", SW_VERSION);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        printf("slipway %s\n", SW_VERSION);
    }
    return SW_EXIT_OK;
}
