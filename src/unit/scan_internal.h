/*
 * Internals of the unit scanner shared by its files: the parse state and its notes, and one entry
 * per room: scan_lines.c (systemd's lines: sections and assignments), scan_split.c (words as
 * systemd and the shell split them), scan_env.c (the unit's environment), scan_exec.c (the Exec
 * lines and what each simple command is), scan_container.c (`podman run`/`docker run`),
 * scan_engine.c (the engine and the paths it receives); scan.c holds the entry points.
 */
#ifndef SLIPWAY_UNIT_SCAN_INTERNAL_H
#define SLIPWAY_UNIT_SCAN_INTERNAL_H

#include "lint_internal.h"

#define SW__SCAN_LINE_MAX  (64u * 1024u) /* a logical line, a word */
#define SW__SCAN_COUNT_MAX 65536u        /* assignments, commands, words, paths, mounts... */

/* A scan on its way: the unit being filled (in its region) and the lists' capacities. */
struct sw__scan {
    struct sw_unit *u;
    struct sw_region *a;
    struct sw_err *e;
    size_t cap_entries, cap_cmds, cap_notes, cap_env, cap_paths;
    size_t cap_mounts, cap_devices, cap_cenv, cap_cenvf;
};

/* A list of words being built, NULL-terminated. */
struct sw__words {
    char **v;
    size_t n, cap;
};

/* Append a copy of p[0..n) to w; 0, SW_ERANGE or SW_ENOMEM. */
int sw__scan_word(struct sw__scan *s, struct sw__words *w, const char *p, size_t n);
/* A note (what systemd does with a line) or a warning note, at a unit position. */
int sw__scan_note(struct sw__scan *s, int line, const char *fmt, ...) SW_PRINTF(3, 4);
int sw__scan_warn(struct sw__scan *s, int line, const char *fmt, ...) SW_PRINTF(3, 4);
/* Append val to the list arr of n elements (capacity cap) in the scan's region; returns the
 * error from the enclosing function (which declares int rc). */
#define SW__SCAN_PUSH(arr, n, cap, val)                                                            \
    do {                                                                                           \
        rc = sw_region_grow(s->a, &(arr), &(cap), (n), sizeof(*(arr)), SW__SCAN_COUNT_MAX);        \
        if (rc)                                                                                    \
            return rc;                                                                             \
        (arr)[(n)++] = (val);                                                                      \
    } while (0)

/* systemd's whitespace. */
bool sw__scan_ws(char c);
/* The file name of a path ("podman" of "/usr/bin/podman"). */
const char *sw__scan_base(const char *p);
/* s starts with p. */
bool sw__scan_prefix(const char *s, const char *p);

/* scan_lines.c: the sections and assignments of one part (the unit or a drop-in). */
int sw__scan_lines(struct sw__scan *s, size_t part, const char *text, size_t len);

/* scan_split.c: split p into words. SW__SPLIT_SYSTEMD: quotes anywhere, C escapes, `$VAR` /
 * `${VAR}` when expand; SW__SPLIT_SHELL: POSIX sh (single quotes literal; `;`, `&&`, `||`, `|`,
 * `&` become their own words, marked by a leading '\1'). */
enum { SW__SPLIT_SYSTEMD = 0, SW__SPLIT_SHELL = 1 };
int sw__scan_split(struct sw__scan *s, const char *p, int mode, bool expand, struct sw__words *w);

/* scan_env.c: the value of name[0..n) in the unit's environment (the last assignment), or NULL;
 * the environment gathered from Environment= and the environment file. */
const char *sw__scan_env_get(const struct sw_unit *u, const char *name, size_t n);
int sw__scan_env(struct sw__scan *s, const char *env_file);

/* scan_exec.c: an Exec key; one Exec assignment split into a command; what a command runs. */
bool sw__scan_is_exec(const char *k);
int sw__scan_cmd(struct sw__scan *s, const struct sw_unit_entry *en);
int sw__scan_exec(struct sw__scan *s, const struct sw_unit_cmd *c);

/* scan_container.c: argv[i] is `run` of a podman/docker command line. */
int sw__scan_run(struct sw__scan *s, char **argv, size_t argc, size_t i, const char *key, int line,
                 bool via_shell);

/* scan_engine.c: the engine in argv[0..argc) and the paths it receives. */
int sw__scan_engine(struct sw__scan *s, char **argv, size_t argc, const char *image, int line);

#endif
