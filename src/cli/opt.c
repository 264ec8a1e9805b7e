/*
 * The CLI's option layer (opt.h): argv read against a verb's table, usage errors as one line
 * (and JSON under --json), --help from the same table. It knows nothing of any verb.
 */
#include "opt.h"

#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool sw_args_wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--json"))
            return true;
    return false;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

static int vusage(const char *verb, bool json, const char *fmt, va_list ap) SW_PRINTF(3, 0);

static int vusage(const char *verb, bool json, const char *fmt, va_list ap)
{
    struct sw_err e;
    char line[2048];
    sw_err_clear(&e);
    sw_err_vset(&e, SW_EINVAL, fmt, ap);
    snprintf(e.where, sizeof(e.where), "slipway%s%s", *verb ? " " : "", verb);
    if (json) {
        json_t *j = json_object();
        if (j && !sw_json_set_new(j, "error", sw_err_to_json(&e)))
            sw_json_print(stdout, j, true);
        json_decref(j);
    }
    /* one line: what and where to look; the newline in a message would make it two */
    for (char *c = e.msg; *c; c++)
        if (*c == '\n')
            *c = ' ';
    fprintf(stderr, "%s (slipway %s%s--help)\n", sw_err_format(&e, line, sizeof(line)), verb,
            *verb ? " " : "");
    return SW_EXIT_USAGE;
}

int sw_cli_usage_json(const char *verb, bool json, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vusage(verb, json, fmt, ap);
    va_end(ap);
    return rc;
}

int sw_args_usage(const struct sw_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vusage(a->spec->name, a->json, fmt, ap);
    va_end(ap);
    return rc;
}

static const struct sw_opt json_opt = {"json", 0, NULL, 0, "machine-readable output (errors too)",
                                       NULL};
/* Every .fleet verb's --fleet (cli.h's sw_cli_fleet resolves it and says where it came from). */
static const struct sw_opt fleet_opt = {
    "fleet", 0, "FILE", 0, "the fleet file (default: $SLIPWAY_FLEET, else ./fleet.yaml)", NULL};

const struct sw_opt *sw_args_fleet_opt(void)
{
    return &fleet_opt;
}

/* The option a token names ("--name", "--name=v", "-s"); *inline_val set for "--name=v". */
static const struct sw_opt *find(const struct sw_cmd_spec *s, const char *tok,
                                 const char **inline_val)
{
    *inline_val = NULL;
    if (tok[1] != '-') {
        if (!tok[1] || tok[2])
            return NULL;
        for (const struct sw_opt *o = s->opts; o && o->name; o++)
            if (o->short_name && o->short_name == tok[1])
                return o;
        return NULL;
    }
    const char *name = tok + 2;
    const char *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    if (eq)
        *inline_val = eq + 1;
    if (n == 4 && !strncmp(name, "json", 4))
        return &json_opt;
    if (s->fleet && n == 5 && !strncmp(name, "fleet", 5))
        return &fleet_opt;
    for (const struct sw_opt *o = s->opts; o && o->name; o++)
        if ((strlen(o->name) == n && !strncmp(o->name, name, n)) ||
            (o->alias && strlen(o->alias) == n && !strncmp(o->alias, name, n)))
            return o;
    return NULL;
}

bool sw_args_is_path(const char *w)
{
    size_t n = strlen(w);
    return strchr(w, '/') || (n > 5 && !strcmp(w + n - 5, ".yaml")) ||
           (n > 4 && !strcmp(w + n - 4, ".yml"));
}

int sw_args_not_endpoint(const struct sw_args *a, const char *w)
{
    struct stat st;
    if (!stat(w, &st) && !S_ISDIR(st.st_mode))
        return sw_args_usage(a, "'%s' is a file: did you mean --fleet %s?", w, w);
    return sw_args_usage(a,
                         "'%s' is a file name, not an endpoint (and there is no such file): the "
                         "fleet goes in --fleet FILE",
                         w);
}

/* One more positional argument: 0, or the usage error's exit code when the verb takes no more. */
static int add_pos(struct sw_args *a, const char *t)
{
    if (a->spec->max_args >= 0 && a->npos >= a->spec->max_args) {
        /* the old order (`render ENDPOINT FLEET.yaml`, `check FLEET.yaml ENDPOINT`): the file
         * is what does not belong */
        for (int i = 0; a->spec->fleet && i <= a->npos; i++) {
            const char *w = i < a->npos ? a->pos[i] : t;
            if (sw_args_is_path(w))
                return sw_args_not_endpoint(a, w);
        }
        return sw_args_usage(a, "unexpected argument '%s'", t);
    }
    if (a->npos >= SW_ARGS_MAX)
        return sw_args_usage(a, "more than %d arguments", SW_ARGS_MAX);
    a->pos[a->npos++] = t;
    return 0;
}

bool sw_args_parse(const struct sw_cmd_spec *s, int argc, char **argv, struct sw_args *a,
                   int *exit_code)
{
    memset(a, 0, sizeof(*a));
    a->spec = s;
    a->json = sw_args_wants_json(argc, argv);
    *exit_code = SW_EXIT_OK;
    if (wants_help(argc, argv)) {
        sw_args_help(s, stdout);
        return false;
    }
    for (int i = 1; i < argc; i++) {
        const char *t = argv[i];
        if (!strcmp(t, "--")) {
            if (s->command_line) {
                a->nrest = argc - i - 1;
                a->rest = a->nrest ? argv + i + 1 : NULL;
                break;
            }
            while (++i < argc) {
                *exit_code = add_pos(a, argv[i]);
                if (*exit_code)
                    return false;
            }
            break;
        }
        if (t[0] != '-' || !t[1]) {
            *exit_code = add_pos(a, t);
            if (*exit_code)
                return false;
            continue;
        }
        const char *val;
        const struct sw_opt *o = find(s, t, &val);
        if (!o) {
            *exit_code = sw_args_usage(a, "unknown option '%s'", t);
            return false;
        }
        if (o->flags & SW_OPT_REFUSE) {
            *exit_code = sw_args_usage(a, "there is no --%s: %s", o->name, o->help);
            return false;
        }
        if (!o->value && val) {
            *exit_code = sw_args_usage(a, "--%s takes no value (got '%s')", o->name, t);
            return false;
        }
        if (o->value && !val) {
            if (i + 1 >= argc) {
                *exit_code = sw_args_usage(a, "%s needs a value (%s)", t, o->value);
                return false;
            }
            val = argv[++i];
        }
        if (o != &json_opt && !(o->flags & SW_OPT_REPEAT) && sw_args_flag(a, o->name)) {
            *exit_code = sw_args_usage(a, "--%s given twice", o->name);
            return false;
        }
        if (a->n >= SW_ARGS_MAX) {
            *exit_code = sw_args_usage(a, "more than %d options", SW_ARGS_MAX);
            return false;
        }
        a->seen[a->n].opt = o;
        a->seen[a->n++].val = val;
        if (o == &fleet_opt)
            a->fleet = val;
    }
    return true;
}

/* The index of the first positional of argv (a parent's options and their values skipped), or
 * argc when there is none; -1 after printing a usage error. */
static int find_sub(const struct sw_cmd_spec *parent, int argc, char **argv, bool json)
{
    for (int i = 1; i < argc; i++) {
        const char *t = argv[i];
        if (!strcmp(t, "--"))
            return i + 1 < argc ? i + 1 : argc;
        if (t[0] != '-' || !t[1])
            return i;
        if (!strcmp(t, "--help") || !strcmp(t, "-h"))
            continue;
        const char *val;
        const struct sw_opt *o = find(parent, t, &val);
        if (!o)
            return sw_cli_usage_json(parent->name, json, "unknown option '%s'", t), -1;
        if (o->value && !val)
            i++;
    }
    return argc;
}

/* "usage: slipway NAME form": a line of the synopsis that starts with a space continues the
 * form above it, any other line is another form of the verb. */
static void put_synopsis(FILE *f, const char *lead, const struct sw_cmd_spec *s)
{
    fprintf(f, "%s slipway %s ", lead, s->name);
    for (const char *c = s->synopsis ? s->synopsis : ""; *c; c++) {
        if (*c == '\n' && c[1] == ' ')
            fprintf(f, "\n       ");
        else if (*c == '\n')
            fprintf(f, "\n       slipway %s ", s->name);
        else
            fputc(*c, f);
    }
    fputc('\n', f);
}

static void help_subs(const struct sw_cmd_spec *parent, FILE *f)
{
    fprintf(f, "usage: slipway %s <command> [options]   (slipway %s <command> --help)\n\n",
            parent->name, parent->name);
    if (parent->about)
        fprintf(f, "%s\n\n", parent->about);
    for (const struct sw_cmd_spec *const *s = parent->subs; *s; s++)
        if (!(*s)->hidden)
            fprintf(f, "  %-10s %s\n", strchr((*s)->name, ' ') + 1, (*s)->summary);
    fputc('\n', f);
    for (const struct sw_cmd_spec *const *s = parent->subs; *s; s++) {
        if ((*s)->hidden)
            continue;
        put_synopsis(f, s == parent->subs ? "usage:" : "      ", *s);
    }
}

bool sw_args_parse_sub(const struct sw_cmd_spec *parent, int argc, char **argv,
                       const struct sw_cmd_spec **sub, struct sw_args *a, int *exit_code)
{
    bool json = sw_args_wants_json(argc, argv);
    *sub = NULL;
    *exit_code = SW_EXIT_USAGE;
    int k = find_sub(parent, argc, argv, json);
    if (k < 0)
        return false;
    if (k >= argc) {
        if (wants_help(argc, argv)) {
            help_subs(parent, stdout);
            *exit_code = SW_EXIT_OK;
            return false;
        }
        *exit_code = sw_cli_usage_json(parent->name, json, "which command?");
        return false;
    }
    for (const struct sw_cmd_spec *const *s = parent->subs; *s; s++)
        if (!strcmp(strchr((*s)->name, ' ') + 1, argv[k]))
            *sub = *s;
    if (!*sub) {
        if (!strcmp(argv[k], "help")) { /* `slipway ledger help` */
            help_subs(parent, stdout);
            *exit_code = SW_EXIT_OK;
            return false;
        }
        *exit_code = sw_cli_usage_json(parent->name, json, "unknown command '%s'", argv[k]);
        return false;
    }
    /* the sub-verb's line: its name, then the parent's options given before it, then the rest */
    char **v = sw_calloc((size_t)argc, sizeof(*v));
    if (!v) {
        *exit_code = sw_cli_usage_json(parent->name, json, "out of memory");
        return false;
    }
    int n = 0;
    v[n++] = argv[k];
    for (int i = 1; i < argc; i++)
        if (i != k)
            v[n++] = argv[i];
    bool go = sw_args_parse(*sub, n, v, a, exit_code);
    /* a holds argv's strings, not v: only a command line (rest) points into v; its tail is
     * argv's own tail in the same order */
    if (go && a->nrest)
        a->rest = argv + (argc - a->nrest);
    sw_free(v);
    return go;
}

static const struct sw_opt *lookup(const struct sw_args *a, const char *name)
{
    if (!strcmp(name, "json"))
        return &json_opt;
    if (a->spec->fleet && !strcmp(name, "fleet"))
        return &fleet_opt;
    for (const struct sw_opt *o = a->spec->opts; o && o->name; o++)
        if (!strcmp(o->name, name))
            return o;
    /* a name the verb's own table lacks is the verb's bug: say so loudly, once */
    fprintf(stderr, "slipway %s: internal error: no option --%s in its table\n", a->spec->name,
            name);
    abort();
}

const char *sw_args_str(const struct sw_args *a, const char *name)
{
    const struct sw_opt *o = lookup(a, name);
    const char *v = NULL;
    for (int i = 0; i < a->n; i++)
        if (a->seen[i].opt == o)
            v = a->seen[i].val;
    return v;
}

bool sw_args_flag(const struct sw_args *a, const char *name)
{
    return sw_args_count(a, name) > 0;
}

int sw_args_count(const struct sw_args *a, const char *name)
{
    const struct sw_opt *o = lookup(a, name);
    int n = 0;
    for (int i = 0; i < a->n; i++)
        n += a->seen[i].opt == o;
    return n;
}

const char *sw_args_nth(const struct sw_args *a, const char *name, int k)
{
    const struct sw_opt *o = lookup(a, name);
    for (int i = 0; i < a->n; i++)
        if (a->seen[i].opt == o && k-- == 0)
            return a->seen[i].val;
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Typed values.
 */

/* " from LO to HI" (both named), " of at least LO" (no upper bound) or "" (neither bound). */
static void range(char *out, size_t n, bool has_lo, const char *lo, bool has_hi, const char *hi)
{
    if (has_hi)
        snprintf(out, n, " from %s to %s", lo, hi);
    else if (has_lo)
        snprintf(out, n, " of at least %s", lo);
    else
        out[0] = '\0';
}

/* 100 -> "100ms", 90000 -> "90s", 3600000 -> "1h": the largest unit that holds it whole. */
static const char *fmt_ms(int64_t ms, char *out, size_t n)
{
    static const struct {
        int64_t ms;
        const char *unit;
    } units[] = {{3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
    size_t i = 0;
    while (i + 1 < SW_ARRAY_LEN(units) && (ms == 0 ? units[i].ms != 1000 : ms % units[i].ms))
        i++;
    snprintf(out, n, "%lld%s", (long long)(ms / units[i].ms), units[i].unit);
    return out;
}

/* One kind of typed value: how it is read, how a bound is written, what it is called. */
struct kind {
    const char *what; /* "a duration" */
    const char *hint; /* after the range: " (600MiB, 2GiB)", or "" */
    int (*parse)(const char *v, uint64_t *out);
    const char *(*fmt)(uint64_t v, char *out, size_t n);
};

static int parse_ms(const char *v, uint64_t *out)
{
    int64_t ms;
    int rc = sw_parse_duration_ms(v, &ms, NULL);
    if (rc || ms < 0)
        return rc ? rc : -1;
    *out = (uint64_t)ms;
    return 0;
}

static const char *fmt_ms_u(uint64_t v, char *out, size_t n)
{
    return fmt_ms(v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v, out, n);
}

static int parse_bytes(const char *v, uint64_t *out)
{
    return sw_parse_bytes(v, out, NULL);
}

static int parse_count(const char *v, uint64_t *out)
{
    return sw_parse_count(v, out, NULL);
}

static const char *fmt_u64(uint64_t v, char *out, size_t n)
{
    snprintf(out, n, "%llu", (unsigned long long)v);
    return out;
}

static const struct kind k_duration = {"a duration", "", parse_ms, fmt_ms_u};
static const struct kind k_size = {"a size", " (600MiB, 2GiB)", parse_bytes, sw_fmt_bytes};
static const struct kind k_number = {"a whole number", "", parse_count, fmt_u64};

/* v read as k within [min, max]: 0; SW_ERANGE past max (or too large to read), -1 below min,
 * else the parser's error. */
static int within(const struct kind *k, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
    int rc = k->parse(v, out);
    if (rc)
        return rc;
    return *out > max ? SW_ERANGE : *out < min ? -1 : 0;
}

/* " from MIN to MAX" as k writes them (an upper bound of INT64_MAX or more is not named). */
static void k_range(const struct kind *k, char *out, size_t n, uint64_t min, uint64_t max)
{
    char lo[32], hi[32];
    range(out, n, min > 0, k->fmt(min, lo, sizeof(lo)), max < (uint64_t)INT64_MAX,
          k->fmt(max, hi, sizeof(hi)));
}

/* Option `name` read as k: *got and *out set when it was given and accepted; its usage error's
 * exit code when it was given and refused; else 0. */
static int typed(const struct sw_args *a, const char *name, const struct kind *k, uint64_t min,
                 uint64_t max, uint64_t *out, bool *got)
{
    const char *v = sw_args_str(a, name);
    char r[80];
    *got = false;
    if (!v)
        return 0;
    int rc = within(k, v, min, max, out);
    *got = !rc;
    if (*got)
        return 0;
    k_range(k, r, sizeof(r), min, max);
    return sw_args_usage(a, "--%s: '%s' is %s: want %s%s%s", name, v,
                         rc == SW_ERANGE ? "too large"
                         : rc == -1      ? "too small"
                                         : "not valid",
                         k->what, r, k->hint);
}

int sw_args_duration(const struct sw_args *a, const char *name, int64_t min_ms, int64_t max_ms,
                     int64_t *out)
{
    uint64_t x = 0;
    bool got;
    int rc = typed(a, name, &k_duration, (uint64_t)min_ms, (uint64_t)max_ms, &x, &got);
    if (got)
        *out = (int64_t)x;
    return rc;
}

int sw_args_size(const struct sw_args *a, const char *name, uint64_t min, uint64_t max,
                 uint64_t *out)
{
    bool got;
    return typed(a, name, &k_size, min, max, out, &got);
}

int sw_args_number(const struct sw_args *a, const char *name, uint64_t min, uint64_t max,
                   uint64_t *out)
{
    bool got;
    return typed(a, name, &k_number, min, max, out, &got);
}

int sw_args_real(const struct sw_args *a, const char *name, double above, double max, double *out)
{
    const char *v = sw_args_str(a, name);
    double x;
    char r[80] = "";
    if (!v)
        return 0;
    if (!sw_parse_double(v, &x, NULL) && x > above && x <= max) {
        *out = x;
        return 0;
    }
    if (isfinite(max))
        snprintf(r, sizeof(r), " above %g and at most %g", above, max);
    else
        snprintf(r, sizeof(r), " above %g", above);
    return sw_args_usage(a, "--%s: want a number%s, got '%s'", name, r, v);
}

int sw_args_list(const struct sw_args *a, const char *name, uint64_t min, uint64_t max,
                 int64_t *out, size_t cap, size_t *n)
{
    const char *v = sw_args_str(a, name);
    int64_t got[SW_ARGS_MAX];
    size_t k = 0;
    bool ok = true;
    char r[80];
    if (!v)
        return 0;
    /* split on commas first: sw_parse_count reads "1,000" as one number */
    for (const char *p = v; ok;) {
        size_t len = strcspn(p, ",");
        char item[64];
        uint64_t x;
        ok = len > 0 && len < sizeof(item) && k < cap && k < SW_ARRAY_LEN(got);
        if (ok) {
            snprintf(item, sizeof(item), "%.*s", (int)len, p);
            ok = within(&k_number, item, min, max, &x) == 0;
            got[k++] = (int64_t)x;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    if (ok) {
        memcpy(out, got, k * sizeof(*out));
        *n = k;
        return 0;
    }
    k_range(&k_number, r, sizeof(r), min, max);
    return sw_args_usage(a, "--%s: want a list of at most %zu whole numbers%s%s, got '%s'", name,
                         cap, r[0] ? ", each" : "", r, v);
}

/* "  -o, --output FILE", or "  --ledger PATH" when there is no short name. */
static int opt_head(const struct sw_opt *o, char *buf, size_t n)
{
    char sh[8] = "";
    if (o->short_name)
        snprintf(sh, sizeof(sh), "-%c, ", o->short_name);
    return snprintf(buf, n, "  %s--%s%s%s", sh, o->name, o->value ? " " : "",
                    o->value ? o->value : "");
}

static void help_line(FILE *f, const char *head, int width, const char *help, const char *extra)
{
    fprintf(f, "%-*s  ", width, head);
    for (const char *c = help; *c; c++) {
        if (*c == '\n')
            fprintf(f, "\n%-*s  ", width, "");
        else
            fputc(*c, f);
    }
    fprintf(f, "%s\n", extra);
}

void sw_args_help(const struct sw_cmd_spec *s, FILE *f)
{
    if (s->subs) {
        help_subs(s, f);
        return;
    }
    put_synopsis(f, "usage:", s);
    if (s->summary)
        fprintf(f, "\n%s\n", s->summary);
    if (s->about)
        fprintf(f, "\n%s\n", s->about);
    int width = 0;
    char head[128];
    for (const struct sw_opt *o = s->opts; o && o->name; o++)
        if (!(o->flags & (SW_OPT_HIDDEN | SW_OPT_REFUSE)))
            width = SW_MAX(width, opt_head(o, head, sizeof(head)));
    if (s->fleet)
        width = SW_MAX(width, opt_head(&fleet_opt, head, sizeof(head)));
    width = SW_MIN(SW_MAX(width, 12), 30);
    fprintf(f, "\noptions:\n");
    if (s->fleet) {
        opt_head(&fleet_opt, head, sizeof(head));
        help_line(f, head, width, fleet_opt.help, "");
    }
    for (const struct sw_opt *o = s->opts; o && o->name; o++) {
        if (o->flags & (SW_OPT_HIDDEN | SW_OPT_REFUSE))
            continue;
        char extra[160] = "";
        opt_head(o, head, sizeof(head));
        if (o->alias)
            snprintf(extra, sizeof(extra), " (also --%s)", o->alias);
        if (o->flags & SW_OPT_REPEAT)
            snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " (repeatable)");
        if ((int)strlen(head) > width) {
            fprintf(f, "%s\n", head);
            help_line(f, "", width, o->help, extra);
        } else {
            help_line(f, head, width, o->help, extra);
        }
    }
    help_line(f, "  --json", width, json_opt.help, "");
    help_line(f, "  -h, --help", width, "this help", "");
    if (s->examples && s->examples[0]) {
        fprintf(f, "\nexamples:\n");
        for (const char *const *x = s->examples; *x; x++)
            fprintf(f, "  %s\n", *x);
    }
}
