/*
 * Internals of the unit lint shared by scan.c, lint.c, lint_file.c and lint_verify.c: the arena
 * every parsed unit lives in, and the report's append and sort.
 */
#ifndef SLIPWAY_UNIT_LINT_INTERNAL_H
#define SLIPWAY_UNIT_LINT_INTERNAL_H

#include <slipway/unit_lint.h>

/* A bump allocator: blocks from sw_malloc, all freed at once. */
struct sw__uarena {
    struct sw__ublk *head;
};
void *sw__ua_alloc(struct sw__uarena *a, size_t n);
char *sw__ua_strndup(struct sw__uarena *a, const char *s, size_t n);
char *sw__ua_strdup(struct sw__uarena *a, const char *s);
/* Grow the array *p (of *cap elements of size sz) to hold at least n+1; 0 or SW_ENOMEM. */
int sw__ua_grow(struct sw__uarena *a, void *p, size_t *cap, size_t n, size_t sz);
void sw__ua_free(struct sw__uarena *a);

/* Append a finding (msg formatted); 0 or SW_ENOMEM. */
int sw__unit_add(struct sw_unit_report *r, const char *law, enum sw_unit_severity sev, int line,
                 const char *fmt, ...) SW_PRINTF(5, 6);

/* Sort the findings by position, stable (the laws' order within a line). */
void sw__unit_sort(struct sw_unit_report *r);

/* The verify step (lint_verify.c). */
int sw__unit_verify(const struct sw_unit *u, const struct sw_unit_lint_opts *o,
                    struct sw_unit_report *r, struct sw_err *e);

#endif
