/*
 * slipway: size, launch, prove and tune self-hosted LLM endpoints.
 * The dispatcher: `slipway <verb> [args]`. Each verb lives in its own src/cli/cmd_<verb>.c and uses
 * only the public headers under include/slipway/.
 */
#include "cli.h"

#include <string.h>

static const struct sw_cmd cmds[] = {
#define SW_ROW(name, summary) {#name, sw_cmd_##name, summary},
    SW_VERBS(SW_ROW)
#undef SW_ROW
};

static void usage(FILE *f)
{
    fprintf(f, "usage: slipway <command> [args]   (slipway <command> --help for its options)\n\n");
    for (size_t i = 0; i < SW_ARRAY_LEN(cmds); i++)
        fprintf(f, "  %-12s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\nEvery command takes --json for machine-readable output.\n"
               "Exit status: 0 ok, 1 the work found a failure, 2 unusable input or usage.\n");
}

int main(int argc, char **argv)
{
    sw_core_init();
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    if (sw_cli_is(argv[1], "-h", "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return SW_EXIT_OK;
    }
    if (sw_cli_is(argv[1], "--version", NULL))
        argv[1] = "version";
    for (size_t i = 0; i < SW_ARRAY_LEN(cmds); i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "slipway: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return SW_EXIT_USAGE;
}
