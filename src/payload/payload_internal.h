/*
 * payload internals shared across the files of src/payload: hex checks, the directory walk, the
 * safe-path join. Not a public API.
 */
#ifndef SW_PAYLOAD_INTERNAL_H
#define SW_PAYLOAD_INTERNAL_H

#include <slipway/payload.h>

/* s is exactly n hex digits (either case). */
bool sw__payload_hex_ok(const char *s, size_t n);

/* root + "/" + rel into out; SW_ERANGE when it does not fit. */
int sw__payload_join(const char *root, const char *rel, char *out, size_t n, struct sw_err *e);

/* Called for each regular file (symlinks to files followed) under a root, with its path relative
 * to the root and its size. Return nonzero to stop the walk (that value is returned). */
typedef int (*sw__payload_walk_fn)(void *ud, const char *rel, uint64_t size);
/* Walk root recursively (at most 32 levels): hidden directories (".git", ".cache", a download's
 * temporary directory) and symlinks to directories are skipped. SW_ENOENT/SW_EIO when root
 * cannot be opened. */
int sw__payload_walk(const char *root, sw__payload_walk_fn fn, void *ud, struct sw_err *e);

#endif
