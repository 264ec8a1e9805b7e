/*
 * slipway completion bash|zsh|scdoc [--out PATH] [--json]
 *
 *   Shell completion and the man pages' sources, generated from the CLI's own tables (cli.h's
 *   SW_VERBS and SW_SPECS, each verb's sw_spec_<verb> with its options, sub-verbs, synopsis,
 *   about and examples), so a new verb or option is completed and documented without an edit
 *   here:
 *     bash   a completion script: verbs, sub-verbs, each one's options (--json and --help too),
 *            file names after an option that takes a value, and at a positional word the
 *            endpoint names of the fleet file on the line (else ./fleet.yaml, read with
 *            `slipway fleet show`) for verbs whose synopsis takes an ENDPOINT;
 *     zsh    the same through zsh's bashcompinit (a file to source from ~/.zshrc);
 *     scdoc  one scdoc(5) source per verb, slipway-VERB.1.scd, and slipway.1.scd (the index),
 *            into the directory --out names; scripts/man.sh runs scdoc on them (the build's `man`
 *            target, installed by `cmake --install`).
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
             "names for an option's value, endpoint names from the fleet file on the line).\n"
             "scdoc writes slipway.1.scd and one slipway-VERB.1.scd per verb into DIR, for\n"
             "scdoc(1) to turn into man pages (scripts/man.sh).\n"
             "Exit: 0 written, 1 a file could not be written, 2 unusable input.",
    .opts = opts,
    .max_args = 1,
    .examples = examples,
};

static const struct {
    const char *name, *summary;
} verbs[] = {
#define SW_ROW(name, summary) {#name, summary},
    SW_VERBS(SW_ROW)
#undef SW_ROW
};

static const struct sw_cmd_spec *const specs[] = {
#define SW_SPEC_ROW(name) &sw_spec_##name,
    SW_SPECS(SW_SPEC_ROW)
#undef SW_SPEC_ROW
};

static const struct sw_cmd_spec *spec_of(const char *verb)
{
    for (size_t i = 0; i < SW_ARRAY_LEN(specs); i++)
        if (!strcmp(specs[i]->name, verb))
            return specs[i];
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * bash (zsh reads the same through bashcompinit)
 */

/* The option words of s: --name, --alias, -x, and the implicit --json --help. valued: only
 * those that take a value. */
static int opt_words(struct sw_buf *b, const struct sw_cmd_spec *s, bool valued)
{
    int rc = 0;
    for (const struct sw_opt *o = s ? s->opts : NULL; o && o->name && !rc; o++) {
        if (valued && !o->value)
            continue;
        rc = sw_buf_printf(b, " --%s", o->name);
        if (!rc && o->alias)
            rc = sw_buf_printf(b, " --%s", o->alias);
        if (!rc && o->short_name)
            rc = sw_buf_printf(b, " -%c", o->short_name);
    }
    if (!rc && !valued)
        rc = sw_buf_puts(b, " --json --help");
    return rc;
}

/* One `case` arm per verb and sub-verb: KEY) echo 'WORDS' ;; */
static int case_arms(struct sw_buf *b, int what)
{
    int rc = 0;
    for (size_t i = 0; i < SW_ARRAY_LEN(verbs) && !rc; i++) {
        const struct sw_cmd_spec *s = spec_of(verbs[i].name);
        if (what == 2) { /* sub-verbs */
            if (!s || !s->subs)
                continue;
            rc = sw_buf_printf(b, "    %s) echo '", verbs[i].name);
            for (const struct sw_cmd_spec *const *u = s->subs; *u && !rc; u++)
                if (!(*u)->hidden)
                    rc = sw_buf_printf(b, "%s%s", u == s->subs ? "" : " ",
                                       strchr((*u)->name, ' ') ? strchr((*u)->name, ' ') + 1
                                                               : (*u)->name);
            if (!rc)
                rc = sw_buf_puts(b, "' ;;\n");
            continue;
        }
        if (what == 3) { /* verbs that take an ENDPOINT */
            bool ep = s && s->synopsis && strstr(s->synopsis, "ENDPOINT");
            for (const struct sw_cmd_spec *const *u = s ? s->subs : NULL; u && *u; u++)
                ep |= (*u)->synopsis && strstr((*u)->synopsis, "ENDPOINT");
            if (ep)
                rc = sw_buf_printf(b, " %s", verbs[i].name);
            continue;
        }
        rc = sw_buf_printf(b, "    '%s') echo '", verbs[i].name);
        if (!rc)
            rc = opt_words(b, s, what == 1);
        if (!rc)
            rc = sw_buf_puts(b, "' ;;\n");
        for (const struct sw_cmd_spec *const *u = s ? s->subs : NULL; u && *u && !rc; u++) {
            if ((*u)->hidden)
                continue;
            rc = sw_buf_printf(b, "    '%s') echo '", (*u)->name);
            if (!rc)
                rc = opt_words(b, *u, what == 1);
            if (!rc)
                rc = sw_buf_puts(b, "' ;;\n");
        }
    }
    return rc;
}

static int gen_bash(struct sw_buf *b, bool zsh)
{
    int rc = sw_buf_printf(b,
                           "# %s completion for slipway, generated by `slipway completion %s` "
                           "from the CLI's tables: do not edit, generate it again.\n",
                           zsh ? "zsh" : "bash", zsh ? "zsh" : "bash");
    /* zsh: the bash function through zsh's bash emulation; source this file from ~/.zshrc */
    if (!rc && zsh)
        rc = sw_buf_puts(b, "autoload -U +X compinit && compinit -u\n"
                            "autoload -U +X bashcompinit && bashcompinit\n");
    if (!rc)
        rc = sw_buf_puts(b, "_slipway_verbs='help");
    for (size_t i = 0; i < SW_ARRAY_LEN(verbs) && !rc; i++)
        rc = sw_buf_printf(b, " %s", verbs[i].name);
    if (!rc)
        rc = sw_buf_puts(b, "'\n_slipway_endpoint_verbs='");
    if (!rc)
        rc = case_arms(b, 3);
    if (!rc)
        rc = sw_buf_puts(b, " '\n_slipway_opts() {\n  case \"$1\" in\n");
    if (!rc)
        rc = case_arms(b, 0);
    if (!rc)
        rc = sw_buf_puts(b, "  esac\n}\n_slipway_valued() {\n  case \"$1\" in\n");
    if (!rc)
        rc = case_arms(b, 1);
    if (!rc)
        rc = sw_buf_puts(b, "  esac\n}\n_slipway_subs() {\n  case \"$1\" in\n");
    if (!rc)
        rc = case_arms(b, 2);
    if (!rc)
        rc = sw_buf_puts(
            b, "  esac\n}\n"
               "# The endpoint names of a fleet file, as `slipway fleet show` prints them.\n"
               "_slipway_endpoints() {\n"
               "  [ -r \"$1\" ] || return 0\n"
               "  \"${COMP_WORDS[0]}\" fleet show \"$1\" 2>/dev/null |\n"
               "    sed -n 's/^endpoint \\([^: ]*\\)[: ].*/\\1/p'\n"
               "}\n"
               "_slipway() {\n"
               "  # zsh (bashcompinit): index COMP_WORDS from 0, as bash does\n"
               "  [ -n \"${ZSH_VERSION-}\" ] && setopt localoptions ksharrays\n"
               "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
               "  local verb key subs w i fleet=fleet.yaml\n"
               "  COMPREPLY=()\n"
               "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
               "    COMPREPLY=($(compgen -W \"$_slipway_verbs\" -- \"$cur\"))\n"
               "    return 0\n"
               "  fi\n"
               "  verb=${COMP_WORDS[1]}\n"
               "  if [ \"$verb\" = help ]; then\n"
               "    COMPREPLY=($(compgen -W \"$_slipway_verbs --list --json\" -- \"$cur\"))\n"
               "    return 0\n"
               "  fi\n"
               "  key=$verb\n"
               "  subs=$(_slipway_subs \"$verb\")\n"
               "  for ((i = 2; i < COMP_CWORD; i++)); do\n"
               "    w=${COMP_WORDS[i]}\n"
               "    case \"$w\" in *.yaml | *.yml) fleet=$w ;; esac\n"
               "    if [ -n \"$subs\" ] && [ \"$key\" = \"$verb\" ]; then\n"
               "      case \" $subs \" in *\" $w \"*) key=\"$verb $w\" ;; esac\n"
               "    fi\n"
               "  done\n"
               "  case \" $(_slipway_valued \"$key\") \" in\n"
               "    *\" $prev \"*)\n"
               "      [ \"${prev#--}\" != \"$prev\" ] && COMPREPLY=($(compgen -f -- \"$cur\"))\n"
               "      return 0 ;;\n"
               "  esac\n"
               "  if [ \"${cur#-}\" != \"$cur\" ]; then\n"
               "    COMPREPLY=($(compgen -W \"$(_slipway_opts \"$key\")\" -- \"$cur\"))\n"
               "    return 0\n"
               "  fi\n"
               "  if [ -n \"$subs\" ] && [ \"$key\" = \"$verb\" ]; then\n"
               "    COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
               "    return 0\n"
               "  fi\n"
               "  case \" $_slipway_endpoint_verbs \" in\n"
               "    *\" $verb \"*) COMPREPLY=($(compgen -W \"$(_slipway_endpoints \"$fleet\")\" -- "
               "\"$cur\")) ;;\n"
               "  esac\n"
               "  COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
               "  return 0\n"
               "}\n"
               "complete -o filenames -F _slipway slipway\n");
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * scdoc(5) sources
 */

/* Text as one scdoc paragraph line: the source's line breaks joined with a space (troff fills
 * the paragraph anyway, and a continuation line beginning with troff's ' or . would be read as
 * a request), scdoc's markup characters escaped (*, _, \\, and a leading #, -, . , ' or `:
 * a heading, a list, troff, a literal block). */
static int scd_line(struct sw_buf *b, const char *s)
{
    int rc = 0;
    bool bol = true;
    for (; s && *s && !rc; s++) {
        if (*s == '\n') {
            while (s[1] == ' ' || s[1] == '\n')
                s++;
            rc = bol ? 0 : sw_buf_putc(b, ' ');
            continue;
        }
        if (bol && (*s == '#' || *s == '-' || *s == '.' || *s == '\'' || *s == '`'))
            rc = sw_buf_putc(b, '\\');
        bol = false;
        if (!rc && (*s == '*' || *s == '_' || *s == '\\'))
            rc = sw_buf_putc(b, '\\');
        if (!rc)
            rc = sw_buf_putc(b, *s == '\t' ? ' ' : *s);
    }
    return rc;
}

/* Each form of the synopsis as "*slipway NAME* FORM"; a form's continuation line (indented in
 * the table) joins its form. */
static int scd_synopsis(struct sw_buf *b, const struct sw_cmd_spec *s)
{
    int rc = 0;
    const char *p = s->synopsis ? s->synopsis : "";
    if (!*p && s->subs)
        return 0; /* the sub-verbs' forms follow */
    bool first = true;
    do {
        size_t n = strcspn(p, "\n");
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)n, p);
        bool cont = !first && (*p == ' ' || *p == '\t');
        if (cont)
            rc = sw_buf_putc(b, ' ');
        else
            rc = sw_buf_printf(b, "%s*slipway %s* ", first ? "" : "\n\n", s->name);
        if (!rc)
            rc = scd_line(b, line + strspn(line, " \t"));
        first = false;
        p += n;
        if (*p)
            p++;
    } while (*p && !rc);
    return rc ? rc : sw_buf_puts(b, "\n\n");
}

static int scd_options(struct sw_buf *b, const struct sw_cmd_spec *s)
{
    int rc = 0;
    for (const struct sw_opt *o = s->opts; o && o->name && !rc; o++) {
        rc = sw_buf_printf(b, "*--%s*", o->name);
        if (!rc && o->alias)
            rc = sw_buf_printf(b, ", *--%s*", o->alias);
        if (!rc && o->short_name)
            rc = sw_buf_printf(b, ", *-%c*", o->short_name);
        if (!rc && o->value) {
            rc = sw_buf_puts(b, " _");
            if (!rc)
                rc = scd_line(b, o->value);
            if (!rc)
                rc = sw_buf_putc(b, '_');
        }
        if (!rc)
            rc = sw_buf_puts(b, "\n");
        /* the help, indented by one tab: the option's paragraph */
        if (!rc)
            rc = sw_buf_putc(b, '\t');
        if (!rc)
            rc = scd_line(b, o->help ? o->help : "");
        if (!rc)
            rc = sw_buf_putc(b, '\n');
        if (!rc)
            rc = sw_buf_putc(b, '\n');
    }
    if (!rc)
        rc = sw_buf_puts(b, "*--json*\n\tprint the result (or the error) as JSON on stdout\n\n"
                            "*--help*, *-h*\n\tprint the usage and exit 0\n\n");
    return rc;
}

static int scd_examples(struct sw_buf *b, const struct sw_cmd_spec *s)
{
    int rc = 0;
    for (const char *const *x = s->examples; x && *x && !rc; x++) {
        rc = sw_buf_puts(b, "\t");
        if (!rc)
            rc = scd_line(b, *x);
        if (!rc)
            rc = sw_buf_puts(b, "\n\n");
    }
    return rc;
}

static int gen_scd_verb(struct sw_buf *b, const char *name, const char *summary,
                        const struct sw_cmd_spec *s)
{
    int rc = sw_buf_printf(b, "slipway-%s(1)\n\n# NAME\n\nslipway-%s - ", name, name);
    if (!rc)
        rc = scd_line(b, summary);
    if (!rc)
        rc = sw_buf_puts(b, "\n\n# SYNOPSIS\n\n");
    if (!rc && s)
        rc = scd_synopsis(b, s);
    for (const struct sw_cmd_spec *const *u = s ? s->subs : NULL; u && *u && !rc; u++)
        if (!(*u)->hidden)
            rc = scd_synopsis(b, *u);
    if (!rc && s && s->about) {
        rc = sw_buf_puts(b, "# DESCRIPTION\n\n");
        if (!rc)
            rc = scd_line(b, s->about);
        if (!rc)
            rc = sw_buf_puts(b, "\n\n");
    }
    if (!rc && s) {
        rc = sw_buf_puts(b, "# OPTIONS\n\n");
        if (!rc)
            rc = scd_options(b, s);
    }
    for (const struct sw_cmd_spec *const *u = s ? s->subs : NULL; u && *u && !rc; u++) {
        if ((*u)->hidden)
            continue;
        rc = sw_buf_printf(b, "# slipway %s\n\n", (*u)->name);
        if (!rc)
            rc = scd_line(b, (*u)->summary ? (*u)->summary : "");
        if (!rc)
            rc = sw_buf_puts(b, "\n\n");
        if (!rc && (*u)->about) {
            rc = scd_line(b, (*u)->about);
            if (!rc)
                rc = sw_buf_puts(b, "\n\n");
        }
        if (!rc)
            rc = scd_options(b, *u);
        if (!rc && (*u)->examples) {
            rc = sw_buf_puts(b, "Examples:\n\n");
            if (!rc)
                rc = scd_examples(b, *u);
        }
    }
    if (!rc && s && s->examples) {
        rc = sw_buf_puts(b, "# EXAMPLES\n\n");
        if (!rc)
            rc = scd_examples(b, s);
    }
    if (!rc)
        rc = sw_buf_puts(b, "# EXIT STATUS\n\n0 success; 1 the work ran and found a failure (a "
                            "gate, a check, a boot); 2 the input or the usage was unusable.\n\n"
                            "# SEE ALSO\n\n*slipway*(1)\n");
    return rc;
}

static int gen_scd_index(struct sw_buf *b)
{
    int rc = sw_buf_puts(b, "slipway(1)\n\n# NAME\n\nslipway - size, launch, prove and tune "
                            "self-hosted LLM endpoints\n\n# SYNOPSIS\n\n*slipway* _COMMAND_ "
                            "[_ARGS_]\n\n*slipway help* _COMMAND_\n\n# COMMANDS\n\n");
    for (size_t i = 0; i < SW_ARRAY_LEN(verbs) && !rc; i++) {
        rc = sw_buf_printf(b, "*%s*\n\t", verbs[i].name);
        if (!rc)
            rc = scd_line(b, verbs[i].summary);
        if (!rc)
            rc = sw_buf_printf(b, " (*slipway-%s*(1))\n\n", verbs[i].name);
    }
    if (!rc)
        rc = sw_buf_puts(b, "# EXIT STATUS\n\n0 success; 1 the work ran and found a failure; 2 "
                            "the input or the usage was unusable.\n");
    return rc;
}

static int write_scd(const char *dir, json_t *written, struct sw_err *e)
{
    char path[4096];
    struct sw_buf b;
    int rc = sw_mkdir_p(dir, 0755, e);
    for (size_t i = 0; i <= SW_ARRAY_LEN(verbs) && !rc; i++) {
        sw_buf_init(&b, 4u << 20);
        if (i == SW_ARRAY_LEN(verbs)) {
            snprintf(path, sizeof(path), "%s/slipway.1.scd", dir);
            rc = gen_scd_index(&b);
        } else {
            snprintf(path, sizeof(path), "%s/slipway-%s.1.scd", dir, verbs[i].name);
            rc = gen_scd_verb(&b, verbs[i].name, verbs[i].summary, spec_of(verbs[i].name));
        }
        if (rc)
            sw_err_set(e, rc, "out of memory writing %s", path);
        else
            rc = sw_write_file_atomic(path, b.data, b.len, 0644, e);
        if (!rc)
            json_array_append_new(written, json_string(path));
        sw_buf_free(&b);
    }
    return rc;
}

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
        rc = write_scd(out, written, &e);
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
    rc = gen_bash(&b, zsh);
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
