/*
 * slipway completion bash|zsh|scdoc [--out PATH] [--json]
 *
 *   Shell completion and the man pages' sources, generated from the CLI's own tables (cli.h's
 *   SW_VERBS and SW_SPECS, each verb's sw_spec_<verb> with its options, sub-verbs, synopsis,
 *   about and examples), so a new verb or option is completed and documented without an edit
 *   here:
 *     bash   a completion script: verbs, sub-verbs, each one's options (--json and --help too),
 *            file names after an option that takes a value, and at a positional word the
 *            endpoint names of the fleet (--fleet FILE on the line, else $SLIPWAY_FLEET,
 *            else ./fleet.yaml, read with `slipway fleet names`) for verbs whose synopsis
 *            takes an ENDPOINT;
 *     zsh    the same through zsh's bashcompinit (a file to source from ~/.zshrc);
 *     scdoc  one scdoc(5) source per verb, slipway-VERB.1.scd, and slipway.1.scd (the index),
 *            into the directory --out names; scripts/man.sh runs scdoc on them (the build's `man`
 *            target, installed by `cmake --install`).
 *   The generators are complete.c and scdoc.c; this file reads the options and writes.
 *
 * Exit: 0 written, 1 a file could not be written, 2 unusable input.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"out", 'o', "PATH", 0,
     "bash/zsh: write the script to PATH atomically; scdoc: the directory for the .scd files\n"
     "(required for scdoc, created if missing)",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway completion bash > /etc/bash_completion.d/slipway",
    "source <(slipway completion bash)",
    "slipway completion zsh --out ~/.zsh/completions/_slipway",
    "slipway completion scdoc --out build/man && scripts/man.sh build/man",
    NULL,
};

const struct sw_cmd_spec sw_spec_completion = {
    .name = "completion",
    .summary = "bash/zsh completion and scdoc man page sources, from the CLI tables",
    .synopsis = "bash|zsh [--out FILE] [--json]\nscdoc --out DIR [--json]",
    .about = "Generated from the verbs' own option tables, so every verb and option is\n"
             "covered. bash/zsh print a completion script (verbs, sub-verbs, options, file\n"
             "names for an option's value, endpoint names from the fleet: --fleet on the line,\n"
             "else $SLIPWAY_FLEET, else ./fleet.yaml).\n"
             "scdoc writes slipway.1.scd and one slipway-VERB.1.scd per verb into DIR, for\n"
             "scdoc(1) to turn into man pages (scripts/man.sh).\n"
             "Exit: 0 written, 1 a file could not be written, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
};

int sw_cmd_completion(int argc, char **argv)
{
    struct sw_args a;
    struct sw_err e;
    struct sw_buf b;
    int rc;
    if (!sw_args_parse(&sw_spec_completion, argc, argv, &a, &rc))
        return rc;
    sw_err_clear(&e);
    const char *what = a.npos ? a.pos[0] : NULL, *out = sw_args_str(&a, "out");
    if (!what)
        return sw_args_usage(&a, "which one: bash, zsh or scdoc?");
    bool bash = !strcmp(what, "bash"), zsh = !strcmp(what, "zsh"), scd = !strcmp(what, "scdoc");
    if (!bash && !zsh && !scd)
        return sw_args_usage(&a, "want bash, zsh or scdoc, got '%s'", what);
    if (out && !*out)
        return sw_args_usage(&a, "--out: want a path");
    if (scd) {
        if (!out)
            return sw_args_usage(&a, "scdoc writes one file per verb: name the directory (--out)");
        json_t *written = json_array();
        rc = sw_cli_scdoc(out, written, &e);
        if (rc) {
            json_decref(written);
            return sw_cli_fail(&e, a.json);
        }
        if (a.json) {
            json_t *j = json_pack("{s:s,s:o}", "kind", "scdoc", "written", written);
            sw_json_print(stdout, j, true);
            json_decref(j);
        } else {
            printf("wrote %zu scdoc sources into %s\n", json_array_size(written), out);
            json_decref(written);
        }
        return SW_EXIT_OK;
    }
    sw_buf_init(&b, 4u << 20);
    rc = sw_cli_bash_completion(&b, zsh);
    if (rc) {
        sw_err_set(&e, rc, "out of memory writing the completion script");
        sw_buf_free(&b);
        return sw_cli_fail(&e, a.json);
    }
    if (out && sw_write_file_atomic(out, b.data, b.len, 0644, &e)) {
        sw_buf_free(&b);
        return sw_cli_fail(&e, a.json);
    }
    if (a.json) {
        json_t *j = out ? json_pack("{s:s,s:s}", "kind", what, "written", out)
                        : json_pack("{s:s,s:s%}", "kind", what, "text", b.data, b.len);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else if (!out) {
        fwrite(b.data, 1, b.len, stdout);
    }
    sw_buf_free(&b);
    return SW_EXIT_OK;
}
