/*
 * The man pages' sources: one scdoc(5) source per verb, slipway-VERB.1.scd, and slipway.1.scd
 * (the index), generated from the CLI's own tables (cli.h's SW_VERBS and SW_SPECS, each verb's
 * synopsis, about, options, sub-verbs and examples) and written into a directory.
 * `slipway completion scdoc --out DIR` writes them; scripts/man.sh runs scdoc on them (the build's
 * `man` target, installed by `cmake --install`).
 *
 * What it does not do: know any verb (a new verb is documented without an edit here), or run
 * scdoc.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

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
    if (s->fleet)
        rc = sw_buf_printf(b, "*--fleet* _FILE_\n\t%s\n\n", sw_args_fleet_opt()->help);
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
    for (size_t i = 0; i < sw_cli_nverbs && !rc; i++) {
        rc = sw_buf_printf(b, "*%s*\n\t", sw_cli_verbs[i].name);
        if (!rc)
            rc = scd_line(b, sw_cli_verbs[i].summary);
        if (!rc)
            rc = sw_buf_printf(b, " (*slipway-%s*(1))\n\n", sw_cli_verbs[i].name);
    }
    if (!rc)
        rc = sw_buf_puts(b, "# EXIT STATUS\n\n0 success; 1 the work ran and found a failure; 2 "
                            "the input or the usage was unusable.\n");
    return rc;
}

int sw_cli_scdoc(const char *dir, json_t *written, struct sw_err *e)
{
    char path[4096];
    struct sw_buf b;
    int rc = sw_mkdir_p(dir, 0755, e);
    for (size_t i = 0; i <= sw_cli_nverbs && !rc; i++) {
        sw_buf_init(&b, 4u << 20);
        if (i == sw_cli_nverbs) {
            snprintf(path, sizeof(path), "%s/slipway.1.scd", dir);
            rc = gen_scd_index(&b);
        } else {
            snprintf(path, sizeof(path), "%s/slipway-%s.1.scd", dir, sw_cli_verbs[i].name);
            rc = gen_scd_verb(&b, sw_cli_verbs[i].name, sw_cli_verbs[i].summary,
                              sw_cli_spec(sw_cli_verbs[i].name));
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
