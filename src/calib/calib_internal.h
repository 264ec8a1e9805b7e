/*
 * calib internals shared across the files of src/calib: shape field access and the per-file entry points
 * of sw_calib_fit. Not a public API.
 */
#ifndef SW_CALIB_INTERNAL_H
#define SW_CALIB_INTERNAL_H

#include <slipway/calib.h>
#include <slipway/ledger.h>

/* An integer field of a canonical shape; def when absent or not an integer. */
int64_t sw__calib_shape_int(const json_t *canon, const char *key, int64_t def);
/* A string field of a canonical shape; "" when absent. */
const char *sw__calib_shape_str(const json_t *canon, const char *key);
/* A boot's failure field: its top-level `top` ("failure_class"), else failure.`inner` ("class");
 * "" when neither. */
const char *sw__calib_failure(const json_t *boot, const char *top, const char *inner);
/* The canonical form of a raw or canonical shape (new reference), or NULL with e set. */
json_t *sw__calib_canon(const json_t *shape, struct sw_err *e);
/* The shape without the keys listed (NULL-terminated), serialized sorted and compact; sw_free. */
char *sw__calib_key(const json_t *canon, const char *const *drop);

/* Is boot `id` left out by the options? */
bool sw__calib_excluded(const struct sw_calib_opts *o, int64_t id);
/* context.c: the contexts of the fitted boots into f->ctx */
void sw__calib_contexts(struct sw_calib_fit *f, const json_t *boots, const struct sw_calib_opts *o);
/* Load the config.json text the options point at (path or directory), or the endpoint's inline
 * arch; *text NULL (and 0) when there is none. sw_free the text. *src names where from. */
int sw__calib_config_text(const struct sw_calib_opts *o, char **text, char *src, size_t srcn,
                          struct sw_err *e);

/* Non-KV classes from the endpoint's usage readings (budget.c). */
int sw__calib_nonkv_fit(struct sw_calib_fit *f, const json_t *usage, const struct sw_calib_opts *o,
                        struct sw_err *e);
/* Arena from the boots that printed slots (arena.c). */
int sw__calib_arena_fit(struct sw_calib_fit *f, const json_t *boots, const struct sw_calib_opts *o,
                        struct sw_err *e);

/* Headroom coefficients from the boots' outcomes (headroom.c); after the KV classes are fitted
 * (an engine-sized pool is read back from its printed tokens through them). */
int sw__calib_headroom_fit(struct sw_calib_fit *f, const json_t *boots,
                           const struct sw_calib_opts *o, struct sw_err *e);

#endif
