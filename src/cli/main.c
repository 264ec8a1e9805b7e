/*
 * slipway: size, launch, prove and tune self-hosted LLM endpoints.
 * The dispatcher: `slipway <verb> [args]`. Each verb lives in its own src/cli/cmd_<verb>.c and uses
 * only the public headers under include/slipway/; its options are a table read by opt.c.
 * `slipway help VERB [SUB]` is `slipway VERB [SUB] --help`; `slipway help --list [--json]` lists
 * every verb and sub-verb with its options (the CLI conformance test iterates it).
 */
#include "cli.h"

#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: slipway <command> [args]   (slipway <command> --help for its options)\n\n");
    for (size_t i = 0; i < sw_cli_nverbs; i++)
        fprintf(f, "  %-12s %s\n", sw_cli_verbs[i].name, sw_cli_verbs[i].summary);
    fprintf(f, "\nA command on a fleet's endpoints: slipway COMMAND [ENDPOINT...] [--fleet FILE];\n"
               "the fleet is --fleet FILE, else $SLIPWAY_FLEET, else ./fleet.yaml.\n"
               "Every command takes --json for machine-readable output (usage errors too).\n"
               "slipway help COMMAND is slipway COMMAND --help; slipway help --list lists every\n"
               "command and sub-command.\n"
               "Exit status: 0 ok, 1 the work found a failure, 2 unusable input or usage.\n");
}

static json_t *spec_json(const char *name, const char *summary, const struct sw_cmd_spec *s)
{
    json_t *j = json_object(), *opts = json_array();
    if (!j || !opts || sw_json_set_str(j, "name", name) || sw_json_set_str(j, "summary", summary) ||
        sw_json_set_bool(j, "converted", s != NULL)) {
        json_decref(j);
        json_decref(opts);
        return NULL;
    }
    if (s && s->fleet) /* the implicit --fleet FILE first, as --help shows it */
        json_array_append_new(
            opts, json_pack("{s:s,s:s,s:b}", "name", "fleet", "value", "FILE", "repeatable", 0));
    for (const struct sw_opt *o = s ? s->opts : NULL; o && o->name; o++) {
        if (o->flags & (SW_OPT_HIDDEN | SW_OPT_REFUSE))
            continue;
        json_t *oj = json_pack("{s:s,s:s?,s:b}", "name", o->name, "value", o->value, "repeatable",
                               (o->flags & SW_OPT_REPEAT) != 0);
        if (oj && o->short_name) {
            char sh[3] = {'-', o->short_name, 0};
            sw_json_set_str(oj, "short", sh);
        }
        if (oj)
            json_array_append_new(opts, oj);
    }
    sw_json_set_new(j, "options", opts);
    if (s) {
        sw_json_set_int(j, "max_args", s->max_args);
        sw_json_set_bool(j, "command_line", s->command_line);
        sw_json_set_bool(j, "has_subcommands", s->subs != NULL);
        sw_json_set_bool(j, "fleet", s->fleet);
    }
    return j;
}

/* `slipway help --list [--json]`: every verb, then each sub-verb as "verb sub". */
static int list(bool json)
{
    json_t *all = json ? json_array() : NULL;
    for (size_t i = 0; i < sw_cli_nverbs; i++) {
        const struct sw_cmd_spec *s = sw_cli_spec(sw_cli_verbs[i].name);
        if (json)
            json_array_append_new(all, spec_json(sw_cli_verbs[i].name, sw_cli_verbs[i].summary, s));
        else
            printf("%s\n", sw_cli_verbs[i].name);
        for (const struct sw_cmd_spec *const *sub = s ? s->subs : NULL; sub && *sub; sub++) {
            if ((*sub)->hidden)
                continue;
            if (json)
                json_array_append_new(all, spec_json((*sub)->name, (*sub)->summary, *sub));
            else
                printf("%s\n", (*sub)->name);
        }
    }
    if (json) {
        json_t *j = json_pack("{s:o}", "verbs", all);
        sw_json_print(stdout, j, true);
        json_decref(j);
    }
    return SW_EXIT_OK;
}

/* `slipway help [--list] [--json] [VERB [SUB]]` */
static int help(int argc, char **argv)
{
    bool json = false, want_list = false;
    const char *words[2] = {NULL, NULL};
    int nw = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--list"))
            want_list = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            continue;
        else if (argv[i][0] == '-' && argv[i][1])
            return sw_cli_usage_json("help", json, "unknown option '%s'", argv[i]);
        else if (nw < 2)
            words[nw++] = argv[i];
        else
            return sw_cli_usage_json("help", json, "unexpected argument '%s'", argv[i]);
    }
    if (want_list && nw)
        return sw_cli_usage_json("help", json, "--list lists every command: name none");
    if (want_list)
        return list(json);
    if (!nw) {
        usage(stdout);
        return SW_EXIT_OK;
    }
    const struct sw_cmd *c = sw_cli_verb(words[0]);
    if (!c)
        return sw_cli_usage_json("help", json, "unknown command '%s'", words[0]);
    char *v[4] = {(char *)words[0], NULL, NULL, NULL};
    int n = 1;
    if (words[1])
        v[n++] = (char *)words[1];
    v[n++] = "--help";
    return c->fn(n, v);
}

int main(int argc, char **argv)
{
    sw_core_init();
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    if (sw_cli_is(argv[1], "-h", "--help"))
        return help(1, argv);
    if (!strcmp(argv[1], "help"))
        return help(argc - 1, argv + 1);
    if (sw_cli_is(argv[1], "--version", NULL))
        argv[1] = "version";
    const struct sw_cmd *c = sw_cli_verb(argv[1]);
    if (c)
        return c->fn(argc - 1, argv + 1);
    return sw_cli_usage_json("", sw_args_wants_json(argc, argv), "unknown %s '%s'",
                             argv[1][0] == '-' ? "option" : "command", argv[1]);
}
