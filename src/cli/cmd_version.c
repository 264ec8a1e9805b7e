/*
 * slipway version [--json]
 */
#include "cli.h"

#include <string.h>

#ifndef SW_VERSION
#define SW_VERSION "0.1.0"
#endif

static const struct sw_opt opts[] = {{0}};

static const char *const examples[] = {"slipway version --json", NULL};

const struct sw_cmd_spec sw_spec_version = {
    .name = "version",
    .summary = "print the version",
    .synopsis = "[--json]",
    .opts = opts,
    .max_args = 0,
    .examples = examples,
};

int sw_cmd_version(int argc, char **argv)
{
    struct sw_args a;
    int rc;
    if (!sw_args_parse(&sw_spec_version, argc, argv, &a, &rc))
        return rc;
    if (a.json) {
        json_t *j = json_pack("{s:s}", "version", SW_VERSION);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        printf("slipway %s\n", SW_VERSION);
    }
    return SW_EXIT_OK;
}
