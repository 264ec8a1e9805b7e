/*
 * slipway import unit FILE... | env FILE | llama-swap CONFIG | argv -- COMMAND... [--into FLEET] [--out FILE]
 *                [--name NAME] [--host HOST] [--env-file FILE] [--engine E] [--json]
 *
 * Writes the fleet the operator already runs: every value with a comment naming where it came
 * from, secrets left in their env file, and what could not be imported said line by line. With
 * --into the endpoints merge into that fleet (in place, or into --out); with neither the fleet is
 * printed and nothing is written. Nothing is written unless the result loads as a fleet.
 * Exit: 0 imported, 1 the fleet could not be written, 2 unusable input (a line-numbered error).
 */
#include "cli.h"

#include <slipway/import.h>

#include <libgen.h>
#include <stdio.h>
#include <string.h>

static const struct sw_opt opts[] = {
    {"into", 0, "FLEET", 0, "merge into this fleet file (written in place unless --out)", NULL},
    {"out", 'o', "FILE", 0, "write the fleet here (temp file + rename)", NULL},
    {"name", 0, "NAME", 0, "the endpoint's name (default: the unit's or env file's name)", NULL},
    {"host", 0, "HOST", 0, "the fleet host the engine runs on", NULL},
    {"env-file", 0, "FILE", 0, "a local copy of the unit's EnvironmentFile", NULL},
    {"engine", 0, "ENGINE", 0, "import env: the engine that reads the file", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway import unit /etc/systemd/system/frank-primary.service --into fleet.yaml",
    "slipway import unit frank-small.service --env-file frank-small.env --out fleet.yaml",
    "slipway import env frank-primary.env --engine vllm",
    "slipway import host dankserver --into fleet.yaml",
    "slipway import llama-swap /etc/llama-swap/config.yaml --host gpubox --out fleet.yaml",
    "slipway import argv -- llama-server -m /models/m.gguf -c 8192 -np 2",
    NULL,
};

const struct sw_cmd_spec sw_spec_import = {
    .name = "import",
    .summary = "write a fleet from what already runs: units, env files, command lines",
    .synopsis = "unit FILE...|env FILE|host HOST --into FLEET|llama-swap CONFIG|argv -- COMMAND... "
                "[--into FLEET] [--out FILE] "
                "[--name NAME] [--host HOST] [--env-file FILE] [--engine E] [--json]",
    .about = "Every value carries a comment naming where it came from (file:line). A value of\n"
             "the unit's env file is imported through env_file.map (the file stays the place to\n"
             "edit it); a secret never enters the fleet (it stays in its env file, referenced as\n"
             "{from_env: NAME}). What cannot be imported is listed, line by line.\n"
             "--into merges: a new endpoint is appended, an existing one keeps every key the\n"
             "import does not write. Nothing is written unless the result loads as a fleet.\n"
             "Exit: 0 imported, 1 the file could not be written, 2 unusable input.",
    .opts = opts,
    .max_args = -1,
    .command_line = true,
    .examples = examples,
};

int sw_cmd_import(int argc, char **argv)
{
    struct sw_args a;
    int code;
    if (!sw_args_parse(&sw_spec_import, argc, argv, &a, &code))
        return code;
    if (a.npos < 1)
        return sw_args_usage(&a, "say what to import: unit FILE..., env FILE or argv -- COMMAND");
    const char *kind = a.pos[0];
    const char *into = sw_args_str(&a, "into"), *outp = sw_args_str(&a, "out");
    const char *target = outp ? outp : into;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", target ? target : ".");
    struct sw_import_opts o = {
        .endpoint = sw_args_str(&a, "name"),
        .host = sw_args_str(&a, "host"),
        .env_file = sw_args_str(&a, "env-file"),
        .engine = sw_args_str(&a, "engine"),
        .out_dir = target ? dirname(dir) : ".",
    };
    struct sw_import im;
    struct sw_err e;
    sw_err_clear(&e);
    sw_import_init(&im);
    int rc = 0;
    if (!strcmp(kind, "unit")) {
        if (a.npos < 2) {
            sw_import_free(&im);
            return sw_args_usage(&a, "import unit: give one or more unit files");
        }
        if (a.npos > 2 && o.endpoint) {
            sw_import_free(&im);
            return sw_args_usage(&a, "--name names one endpoint: import one unit with it");
        }
        for (int i = 1; i < a.npos && !rc; i++)
            rc = sw_import_unit(&im, a.pos[i], &o, &e);
    } else if (!strcmp(kind, "env")) {
        if (a.npos != 2) {
            sw_import_free(&im);
            return sw_args_usage(&a, "import env: give one env file");
        }
        rc = sw_import_env(&im, a.pos[1], &o, &e);
    } else if (!strcmp(kind, "argv")) {
        if (a.nrest < 1) {
            sw_import_free(&im);
            return sw_args_usage(&a, "import argv: give the command line after --");
        }
        rc = sw_import_argv(&im, a.nrest, a.rest, &o, &e);
    } else if (!strcmp(kind, "host")) {
        if (a.npos != 2 || !into) {
            sw_import_free(&im);
            return sw_args_usage(&a, "import host: give one host of the --into fleet");
        }
        o.host = a.pos[1];
        rc = sw_import_host(&im, into, a.pos[1], &o, &e);
    } else if (!strcmp(kind, "llama-swap")) {
        if (a.npos != 2) {
            sw_import_free(&im);
            return sw_args_usage(&a, "import llama-swap: give one config file");
        }
        rc = sw_import_llama_swap(&im, a.pos[1], &o, &e);
    } else {
        sw_import_free(&im);
        return sw_args_usage(&a, "unknown import '%s' (unit, env, host, argv, llama-swap)", kind);
    }
    if (rc) {
        sw_import_free(&im);
        return sw_cli_fail(&e, a.json);
    }
    char *text = NULL;
    if (target)
        rc = sw_import_write(&im, into, target, &e);
    else
        rc = sw_import_fleet_text(&im, NULL, &text, &e);
    if (rc) {
        sw_free(text);
        sw_import_free(&im);
        int x = sw_cli_fail(&e, a.json);
        return rc == SW_EIO ? SW_EXIT_FAIL : x;
    }
    size_t nd = 0;
    if (target) {
        /* render(import(unit)) against the unit: each difference is a note */
        struct sw_err re;
        sw_err_clear(&re);
        if (sw_import_roundtrip(&im, target, &nd, &re))
            fprintf(stderr, "slipway: round trip not checked: %s\n", re.msg);
    }
    if (a.json) {
        json_t *j = sw_import_json(&im);
        if (j && target)
            sw_json_set_int(j, "roundtrip_differences", (json_int_t)nd);
        if (j && target)
            sw_json_set_str(j, "written", target);
        if (j && text)
            sw_json_set_str(j, "fleet", text);
        sw_json_print(stdout, j, true);
        json_decref(j);
    } else {
        if (text)
            fputs(text, stdout);
        FILE *f = text ? stderr : stdout;
        if (target) {
            fprintf(f, "%s: %s endpoint%s", target, into && !outp ? "merged" : "wrote",
                    im.n_names == 1 ? "" : "s");
            for (size_t i = 0; i < im.n_names; i++)
                fprintf(f, "%s %s", i ? "," : "", im.names[i]);
            fputc('\n', f);
        }
        if (im.n_notes)
            fprintf(f, "not imported, or changed on the way (%zu):\n", im.n_notes);
        for (size_t i = 0; i < im.n_notes; i++)
            fprintf(f, "  %s: %s\n", im.notes[i].where, im.notes[i].msg);
    }
    sw_free(text);
    sw_import_free(&im);
    return SW_EXIT_OK;
}
