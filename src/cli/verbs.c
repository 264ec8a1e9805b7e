/*
 * The verbs' tables, once: each verb's entry and summary (cli.h's SW_VERBS) and its option table
 * (SW_SPECS), for the dispatcher, `slipway help` and the generators of the completion script and
 * the man pages.
 *
 * What it does not do: parse anything (opt.c does), or hold a verb's own table (cmd_<verb>.c).
 */
#include "cli.h"

#include <string.h>

const struct sw_cmd sw_cli_verbs[] = {
#define SW_ROW(name, summary) {#name, sw_cmd_##name, summary},
    SW_VERBS(SW_ROW)
#undef SW_ROW
};

const size_t sw_cli_nverbs = SW_ARRAY_LEN(sw_cli_verbs);

static const struct sw_cmd_spec *const specs[] = {
#define SW_SPEC_ROW(name) &sw_spec_##name,
    SW_SPECS(SW_SPEC_ROW)
#undef SW_SPEC_ROW
};

const struct sw_cmd_spec *sw_cli_spec(const char *verb)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(specs); i++)
        if (!strcmp(specs[i]->name, verb))
            return specs[i];
    return NULL;
}

const struct sw_cmd *sw_cli_verb(const char *name)
{
    for (size_t i = 0; i < sw_cli_nverbs; i++)
        if (!strcmp(name, sw_cli_verbs[i].name))
            return &sw_cli_verbs[i];
    return NULL;
}
