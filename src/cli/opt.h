/*
 * The CLI's one option layer: every verb (and sub-verb) declares a table of its options and
 * its synopsis, and sw_args_parse reads argv against it. What it gives every verb alike:
 *   --name value, --name=value, -s value; repeatable options collected in order; `--` ends the
 *   options (the rest is positional, or a command line for verbs that take one);
 *   an unknown option, a missing value, a repeated single option or a stray argument is a usage
 *   error: ONE line on stderr naming the token, exit 2, and under --json (anywhere on the line)
 *   {"error": {...}} on stdout, the shape sw_cli_fail prints for every other error;
 *   --help / -h prints the usage, options and examples on stdout, exit 0;
 *   a verb that declares .fleet takes --fleet FILE as well (one spelling for every verb).
 * What a value means is the verb's, read through the typed values below (a duration, a size, a
 * number, a list) so every verb accepts and refuses the same spellings; anything else the verb
 * checks itself and reports with sw_args_usage, so it reads the same way.
 */
#ifndef SLIPWAY_CLI_OPT_H
#define SLIPWAY_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <slipway/core.h>

enum {
    SW_OPT_REPEAT = 1u << 0, /* may be given more than once; values kept in order */
    SW_OPT_HIDDEN = 1u << 1, /* accepted but not in --help (test hooks, refusals) */
    SW_OPT_REFUSE = 1u << 2, /* never accepted: its help text says why (a usage error) */
};

/* One option. The table ends with an entry whose name is NULL. */
struct sw_opt {
    const char *name;  /* long name without the dashes: "ledger" for --ledger */
    char short_name;   /* 'o' for -o, or 0 */
    const char *value; /* placeholder of its value ("PATH"); NULL: a flag without a value */
    unsigned flags;    /* SW_OPT_* */
    const char *help;  /* one line or several ('\n'); the placeholder's meaning, the default */
    const char *alias; /* a second long name that means the same ("local-dir"), or NULL */
};

/* A verb or a sub-verb. */
struct sw_cmd_spec {
    const char *name;     /* "check", "ledger list" */
    const char *summary;  /* one line, for the parent's and `slipway --help`'s list */
    const char *synopsis; /* what follows "slipway NAME" in the usage; forms separated by '\n' */
    const char *about;    /* a paragraph after the usage, or NULL */
    const struct sw_opt *opts; /* the table (--json and --help are implicit: every verb has them) */
    int max_args;              /* positional arguments accepted; -1 any number */
    bool command_line;         /* what follows `--` is a command line (kept in rest, not counted) */
    const char *const *examples;           /* NULL-terminated, each "slipway ..."; or NULL */
    const struct sw_cmd_spec *const *subs; /* sub-verbs (NULL-terminated), or NULL */
    bool hidden;                           /* a test hook: not in help nor in `help --list` */
    /* The verb acts on a fleet's endpoints: the parser accepts --fleet FILE (implicit, as --json
     * is, in help and completion too) into sw_args.fleet, and the verb resolves the fleet and
     * checks its ENDPOINT arguments with sw_cli_fleet (cli.h). */
    bool fleet;
};

#define SW_ARGS_MAX 256

/* What sw_args_parse read. Strings point into argv. */
struct sw_args {
    const struct sw_cmd_spec *spec;
    bool json; /* --json was on the line (errors print as JSON) */
    int n;     /* options seen, in the order given */
    struct {
        const struct sw_opt *opt;
        const char *val; /* NULL for a flag */
    } seen[SW_ARGS_MAX];
    int npos;
    const char *pos[SW_ARGS_MAX];
    int nrest; /* command_line verbs: argc/argv after `--` (0/NULL when none) */
    char **rest;
    const char *fleet; /* spec->fleet verbs: --fleet's value, or NULL (sw_cli_fleet resolves) */
};

/* Read argv (argv[0] is the verb's name) against s. True when the verb should run; false when it
 * must return *exit_code now: --help was printed (0) or a usage error was (2). */
bool sw_args_parse(const struct sw_cmd_spec *s, int argc, char **argv, struct sw_args *a,
                   int *exit_code);

/* A verb with sub-verbs: find the sub-verb (the first positional; the parent's own options may
 * come before it and are handed on to the sub-verb) and parse its line with the sub's table.
 * True with *sub and *a set when the sub-verb should run; false when *exit_code must be returned
 * (help printed, no or an unknown sub-verb, a usage error). */
bool sw_args_parse_sub(const struct sw_cmd_spec *parent, int argc, char **argv,
                       const struct sw_cmd_spec **sub, struct sw_args *a, int *exit_code);

/* The value of option `name` (its last one), or NULL when not given. */
const char *sw_args_str(const struct sw_args *a, const char *name);
/* True when the flag (or valued option) `name` was given. */
bool sw_args_flag(const struct sw_args *a, const char *name);
/* How many times `name` was given, and its i-th value (a repeatable option, in order). */
int sw_args_count(const struct sw_args *a, const char *name);
const char *sw_args_nth(const struct sw_args *a, const char *name, int i);

/*
 * Typed values. Each reads option `name` when it was given and leaves *out as it was when not; a
 * value it does not accept is a usage error in one shape per type, printed as sw_args_usage does
 * (its exit code, 2, is returned; 0 otherwise):
 *   duration  "90s", "5m", "1500ms", "2h"; a bare number is seconds (sw_parse_duration_ms)
 *             --NAME: want a duration from MIN to MAX, got 'V'
 *   size      "600MiB", "2GiB", "3.15e9" (sw_parse_bytes)
 *             --NAME: want a size from MIN to MAX (600MiB, 2GiB), got 'V'
 *   number    a whole number: "4096", "4k", "200,704" (sw_parse_count)
 *             --NAME: want a whole number from MIN to MAX, got 'V'
 *   real      a decimal number above a floor: "2", "0.5", "1e3"
 *             --NAME: want a number above ABOVE and at most MAX, got 'V'
 *   list      numbers separated by commas: "0,1k,4k" (each as `number`), at most cap of them
 *             --NAME: want a list of at most CAP whole numbers, each from MIN to MAX, got 'V'
 * An upper bound of INT64_MAX or more (INFINITY for real) is not named in the message.
 */
int sw_args_duration(const struct sw_args *a, const char *name, int64_t min_ms, int64_t max_ms,
                     int64_t *out);
int sw_args_size(const struct sw_args *a, const char *name, uint64_t min, uint64_t max,
                 uint64_t *out);
int sw_args_number(const struct sw_args *a, const char *name, uint64_t min, uint64_t max,
                   uint64_t *out);
int sw_args_real(const struct sw_args *a, const char *name, double above, double max, double *out);
int sw_args_list(const struct sw_args *a, const char *name, uint64_t min, uint64_t max,
                 int64_t *out, size_t cap, size_t *n);

/* A usage error found after parsing (a bad value, options that exclude each other): one line on
 * stderr, {"error": ...} on stdout under --json. Returns SW_EXIT_USAGE. */
int sw_args_usage(const struct sw_args *a, const char *fmt, ...) SW_PRINTF(2, 3);
/* The same, before a table is at hand (main's dispatch): `verb` names who speaks. */
int sw_cli_usage_json(const char *verb, bool json, const char *fmt, ...) SW_PRINTF(3, 4);

/* The --fleet FILE a .fleet verb takes without listing it (for help, completion and man pages). */
const struct sw_opt *sw_args_fleet_opt(void);
/* Does a word on the line name a file (a path, or a name ending in .yaml/.yml) rather than an
 * endpoint? Endpoint names have neither. */
bool sw_args_is_path(const char *w);
/* The usage error for such a word where an ENDPOINT goes: "'F' is a file: did you mean
 * --fleet F?" (or that there is no such file either). Returns SW_EXIT_USAGE. */
int sw_args_not_endpoint(const struct sw_args *a, const char *w);

/* The usage, options and examples of s on f. */
void sw_args_help(const struct sw_cmd_spec *s, FILE *f);
/* True when argv (up to a `--`) holds --json. */
bool sw_args_wants_json(int argc, char **argv);

#endif
