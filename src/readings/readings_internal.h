/*
 * What the readings parsers share: the growing array, the checks every tool's output passes
 * (unique indexes, used and free within total), decimal figures with overflow checks, and errors
 * that name the tool.
 */
#ifndef SLIPWAY_READINGS_INTERNAL_H
#define SLIPWAY_READINGS_INTERNAL_H

#include <slipway/readings.h>

#include <stdarg.h>

#define SW__MIB 1048576u

/* Set e: code, where (NULL = none), line (0 = none), message "TOOL: fmt...". Returns code. */
int sw__readings_err(struct sw_err *e, int code, const char *where, int line, const char *tool,
                     const char *fmt, ...) SW_PRINTF(6, 7);

/* A new zeroed reading at the end of rs (SW_EPARSE past SW_READINGS_MAX, SW_ENOMEM). */
int sw__readings_push(struct sw_readings *rs, const char *where, const char *tool,
                      struct sw_reading **slot, struct sw_err *e);

/* Sort by index; refuse a repeated index, used > total, free > total. */
int sw__readings_finish(struct sw_readings *rs, const char *where, struct sw_err *e);

/* s[0..n) is 1..20 decimal digits with a value <= SW_READINGS_MAX_BYTES (after times `scale`).
 * 0, or -1 (not digits) or -2 (too large). */
int sw__readings_u64(const char *s, size_t n, uint64_t scale, uint64_t *v);

/* A JSON tool output parsed, out reset to an empty set of that tool: text[0..len) at most
 * SW_READINGS_MAX_INPUT bytes (SW_EINVAL) and JSON (the parser's error, prefixed "TOOL: not
 * JSON"). *j: json_decref. */
int sw__readings_json(struct sw_readings *out, enum sw_readings_tool kind, const char *text,
                      size_t len, const char *where, const char *tool, json_t **j,
                      struct sw_err *e);

/* The end of every parse: rc as the reading left it; with none (no row was read: why), that
 * error; then sw__readings_finish. On any error out is freed. Returns the result. */
int sw__readings_close(struct sw_readings *out, int rc, const char *none, const char *where,
                       const char *tool, struct sw_err *e);

/* Copy s[0..n) to dst (size dn) with a NUL; false when it does not fit. Control bytes refused. */
bool sw__readings_copy(char *dst, size_t dn, const char *s, size_t n);

#endif
