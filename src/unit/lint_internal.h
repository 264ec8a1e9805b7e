/*
 * Internals of the unit lint shared by scan.c, lint.c, lint_file.c and lint_verify.c: the ceiling
 * of the region every parsed unit lives in, and the report's append and sort.
 */
#ifndef SLIPWAY_UNIT_LINT_INTERNAL_H
#define SLIPWAY_UNIT_LINT_INTERNAL_H

#include <slipway/unit_lint.h>

/* Every parsed unit lives in one core region of this ceiling (struct sw_unit's arena_): above what
 * the largest unit the scanner takes (SW_UNIT_PARTS_MAX parts of SW_UNIT_TEXT_MAX bytes) needs,
 * far below what `$VAR` splitting could make a hostile one take (65,536 words of 64 KiB). */
#define SW__UNIT_REGION_MAX (512u << 20)

/* Append a finding (msg formatted); 0 or SW_ENOMEM. */
int sw__unit_add(struct sw_unit_report *r, const char *law, enum sw_unit_severity sev, int line,
                 const char *fmt, ...) SW_PRINTF(5, 6);

/* Sort the findings by position, stable (the laws' order within a line). */
void sw__unit_sort(struct sw_unit_report *r);

/* A size systemd's parse_size reads (MemoryMax= and the like): digits with an optional fraction
 * and one K/M/G/T/P/E suffix, a percentage, or infinity (systemd_value.c). */
bool sw__unit_size_ok(const char *v);

/* The verify step (lint_verify.c). */
int sw__unit_verify(const struct sw_unit *u, const struct sw_unit_lint_opts *o,
                    struct sw_unit_report *r, struct sw_err *e);

#endif
