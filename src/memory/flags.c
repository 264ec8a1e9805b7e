/*
 * memory/flags: an engine's command line read through its flag table (memory.h, "Engine command
 * lines as flag tables"). One walker for every engine: it splits each word into a flag and its
 * value the way the engine's parser does (llama-server's own, or Python's argparse as vLLM and
 * SGLang use it), finds the flag's row, takes its value, and lets the row's reader fill the field.
 * The readers every table shares are here too.
 *
 * What it deliberately does not do: know an engine (its table and dialect say everything), check
 * what a command line requires (a model: the engine's parser does), or render (engine/argv.c).
 */
#include <slipway/memory.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The longest flag llama-server splits at '=' (a longer "--x=v" is looked up whole), and the
 * longest an argparse engine takes ("flag too long" past it). */
#define LLAMA_FLAG_MAX    64
#define ARGPARSE_FLAG_MAX 128

static bool spelled(const char *names, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = names; *p;) {
        size_t l = strcspn(p, "|");
        if (l == n && !memcmp(p, name, n))
            return true;
        p += l + (p[l] == '|');
    }
    return false;
}

const struct sw_flag *sw_flags_find(const struct sw_flag_table *t, const char *name)
{
    for (size_t i = 0; i < t->n_rows; i++)
        if (spelled(t->rows[i].names, name))
            return &t->rows[i];
    return NULL;
}

const char *sw_flag_name(const struct sw_flag *f, char *out, size_t n)
{
    snprintf(out, n, "%.*s", (int)strcspn(f->names, "|"), f->names);
    return out;
}

void *sw_flag_field(const struct sw_flag *f, void *target, void *line)
{
    return (char *)(f->bits & SW_FLAG_LINE ? line : target) + f->at;
}

void sw_flag_put(const struct sw_flag *f, void *t, int64_t n)
{
    void *p = (char *)t + f->at;
    if (f->type == SW_FLAG_INT)
        *(int *)p = (int)n;
    else if (f->type == SW_FLAG_U64)
        *(uint64_t *)p = (uint64_t)n;
    else
        *(int64_t *)p = n;
}

void sw_flags_defaults(const struct sw_flag_table *t, void *target)
{
    for (size_t i = 0; i < t->n_rows; i++) {
        const struct sw_flag *f = &t->rows[i];
        void *p = (char *)target + f->at;
        if (!f->has_dflt || f->bits & SW_FLAG_LINE)
            continue;
        if (f->type == SW_FLAG_I64)
            *(int64_t *)p = f->dflt;
        else if (f->type == SW_FLAG_INT)
            *(int *)p = (int)f->dflt;
        else if (f->type == SW_FLAG_BOOL)
            *(bool *)p = f->dflt != 0;
    }
}

int sw_flag_set(const struct sw_flag *f, void *t, const char *flag, const char *v, struct sw_err *e)
{
    bool on = !v || !strcasecmp(v, "true");
    bool x = on ? f->arg != 0 : f->arg == 0;
    if (f->type == SW_FLAG_INT)
        *(int *)((char *)t + f->at) = x;
    else
        *(bool *)((char *)t + f->at) = x;
    return 0;
}

int sw_flag_text(const struct sw_flag *f, void *t, const char *flag, const char *v,
                 struct sw_err *e)
{
    *(const char **)((char *)t + f->at) = v;
    return 0;
}

int sw_flag_copy(const struct sw_flag *f, void *t, const char *flag, const char *v,
                 struct sw_err *e)
{
    if (strlen(v) >= f->size)
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: value too long", flag);
    snprintf((char *)t + f->at, f->size, "%s", v);
    return 0;
}

int sw_flag_clip(const struct sw_flag *f, void *t, const char *flag, const char *v,
                 struct sw_err *e)
{
    snprintf((char *)t + f->at, f->size, "%.*s", (int)f->size - 1, v);
    return 0;
}

/* Note flag among those not modelled: once, unless `each` (a name already in the list, even as a
 * part of another, is not added again). */
static void note(char *noted, size_t n, const char *flag, bool each)
{
    if (!noted || !n)
        return;
    size_t l = strlen(noted);
    if (!each && strstr(noted, flag))
        return;
    snprintf(noted + l, n - l, "%s%s", l ? "," : "", flag);
}

/* One word split into the flag as the engine names it and its "=value" (NULL when none). */
struct word {
    char name[ARGPARSE_FLAG_MAX];
    const char *flag; /* name, or the word itself when llama-server does not split it */
    const char *v;
};

static int split(const struct sw_flag_table *t, const char *w, struct word *out, struct sw_err *e)
{
    out->v = NULL;
    out->flag = w;
    if (!(t->dialect & SW_FLAGS_ARGPARSE)) {
        const char *eq = w[0] == '-' && w[1] == '-' ? strchr(w, '=') : NULL;
        if (eq && (size_t)(eq - w) < LLAMA_FLAG_MAX) {
            memcpy(out->name, w, (size_t)(eq - w));
            out->name[eq - w] = '\0';
            out->flag = out->name;
            out->v = eq + 1;
        }
        return 0;
    }
    const char *eq = strchr(w, '=');
    size_t fl = eq ? (size_t)(eq - w) : strlen(w);
    if (fl >= sizeof(out->name))
        return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "flag too long");
    memcpy(out->name, w, fl);
    out->name[fl] = '\0';
    for (char *p = out->name + 2; *p; p++)
        if (*p == '_')
            *p = '-';
    out->flag = out->name;
    out->v = eq ? eq + 1 : NULL;
    return 0;
}

/* A switch given "=value": what the dialect makes of it. Nonzero: refused. */
static int switch_value(const struct sw_flag_table *t, const char *flag, const char **v,
                        struct sw_err *e)
{
    if (!*v || !(t->dialect & SW_FLAGS_ARGPARSE))
        return 0; /* llama-server refuses it after the switch's action (sw_flags_parse) */
    if (t->dialect & SW_FLAGS_SWITCH_ANY) {
        *v = NULL;
        return 0;
    }
    if (t->dialect & SW_FLAGS_SWITCH_BOOL && (!strcasecmp(*v, "true") || !strcasecmp(*v, "false")))
        return 0;
    return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s takes no value", flag);
}

int sw_flags_parse(const struct sw_flag_table *t, void *target, void *line, int argc,
                   const char *const *argv, char *noted, size_t noted_n, struct sw_err *e)
{
    bool ap = t->dialect & SW_FLAGS_ARGPARSE;
    int i = t->skip ? t->skip(argc, argv) : 0;
    int rc = 0;
    if (noted && noted_n)
        noted[0] = '\0';
    for (; i < argc; i++) {
        const char *w = argv[i];
        struct word wd;
        char first[ARGPARSE_FLAG_MAX];
        if (ap && w[0] != '-') {
            if (!t->positional)
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "unexpected argument \"%s\"", w);
            rc = t->positional(line, w, e);
            if (rc)
                return rc;
            continue;
        }
        rc = split(t, w, &wd, e);
        if (rc)
            return rc;
        const struct sw_flag *f = sw_flags_find(t, wd.flag);
        const char *flag = wd.flag, *v = wd.v;
        if (f && ap && flag[1] != '-')
            flag = sw_flag_name(f, first, sizeof(first)); /* -tp: --tensor-parallel-size */
        if (!f && !ap)
            return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: %s", flag, t->unknown);
        if (f && !f->value) {
            rc = switch_value(t, flag, &v, e);
            if (!rc && f->read)
                rc = f->read(f, f->bits & SW_FLAG_LINE ? line : target, flag, v, e);
            if (rc)
                return rc;
            if (v && !ap)
                return sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: takes no value", flag);
            if (f->bits & SW_FLAG_NOTE)
                note(noted, noted_n, flag, t->dialect & SW_FLAGS_NOTE_SWITCH);
            continue;
        }
        if (!v) {
            if (i + 1 >= argc)
                return ap ? sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s needs a value", flag)
                          : sw_err_at(e, SW_EINVAL, "<argv>", 0, 0, "%s: expects a value", flag);
            v = argv[++i];
        }
        if (f && f->read) {
            rc = f->read(f, f->bits & SW_FLAG_LINE ? line : target, flag, v, e);
            if (rc)
                return rc;
        }
        if (!f || f->bits & SW_FLAG_NOTE)
            note(noted, noted_n, flag, false);
    }
    return 0;
}
