/*
 * payload internals shared across the files of src/payload: hex checks and hex digests, git's
 * blob hash, the directory walk, the safe-path join. Not a public API.
 */
#ifndef SW_PAYLOAD_INTERNAL_H
#define SW_PAYLOAD_INTERNAL_H

#include <slipway/fetch.h>
#include <slipway/payload.h>

#include <openssl/evp.h>

/* s is exactly n hex digits (either case). */
bool sw__payload_hex_ok(const char *s, size_t n);
/* path matches one of the NULL-terminated fnmatch globs (NULL or none: every path does). */
bool sw__payload_included(const char *path, const char *const *globs);
/* The n bytes of a digest as 2n lowercase hex digits and a NUL into out. */
void sw__payload_hex(const unsigned char *d, size_t n, char *out);
/* Start git's blob hash of `size` bytes in c: SHA-1 over "blob <size>", its NUL, then the bytes
 * (the caller feeds those). 0, or SW_EIO when OpenSSL refuses. */
int sw__payload_git_blob_init(EVP_MD_CTX *c, uint64_t size);

/* root + "/" + rel into out; SW_ERANGE when it does not fit. */
int sw__payload_join(const char *root, const char *rel, char *out, size_t n, struct sw_err *e);

/* Called for each regular file (symlinks to files followed) under a root, with its path relative
 * to the root and its size. Return nonzero to stop the walk (that value is returned). */
typedef int (*sw__payload_walk_fn)(void *ud, const char *rel, uint64_t size);
/* Walk root recursively (at most 32 levels): hidden directories (".git", ".cache", a download's
 * temporary directory) and symlinks to directories are skipped. SW_ENOENT/SW_EIO when root
 * cannot be opened. */
int sw__payload_walk(const char *root, sw__payload_walk_fn fn, void *ud, struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * nofollow (payload/nofollow.c): under a root, no symbolic link is followed.
 */
struct stat;

/* Open the directory root (links in root itself are followed: the caller named it), creating it
 * and its parents first when create. *fd: close it. SW_ENOENT when absent. */
int sw__nf_root(const char *root, bool create, int *fd, struct sw_err *e);
/* The directory rel ("" or "a/b", no "." or "..") under dirfd, whose path is `where` (for
 * messages): each component opened with O_NOFOLLOW | O_DIRECTORY, made (0755) when create and
 * missing. A component that is a symbolic link: SW_EINVAL naming its path and target; a missing
 * one (not create): SW_ENOENT. *fd: a new descriptor, close it. */
int sw__nf_dir(int dirfd, const char *where, const char *rel, bool create, int *fd,
               struct sw_err *e);
/* The directory of the file rel under root (sw__nf_root + sw__nf_dir); *base points into rel at
 * its last component. */
int sw__nf_parent(const char *root, const char *rel, bool create, int *dirfd, const char **base,
                  struct sw_err *e);
/* fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW): 0, SW_ENOENT when absent, SW_EINVAL for a symbolic
 * link (sw__nf_refuse_link), SW_EIO otherwise. path names it in messages. */
int sw__nf_stat(int dirfd, const char *name, const char *path, struct stat *st, struct sw_err *e);
/* The refusal of the link name in dirfd (path for the message): SW_EINVAL, its target quoted. */
int sw__nf_refuse_link(int dirfd, const char *name, const char *path, struct sw_err *e);
/* lstat of root/rel with no link followed below root (sw__nf_parent + sw__nf_stat); path names
 * it in messages. */
int sw__nf_lstat(const char *root, const char *rel, const char *path, struct stat *st,
                 struct sw_err *e);
/* Remove root/rel when it is there, through no link (nothing said when it cannot be). */
void sw__nf_unlink(const char *root, const char *rel);
/* The name of a temporary file beside base: base + suffix into out (NAME_MAX + 1 bytes);
 * SW_ERANGE naming path when it is longer than a file name may be. */
int sw__nf_sibling(const char *base, const char *suffix, const char *path, char *out,
                   struct sw_err *e);

/* ---------------------------------------------------------------------------------------------
 * hfcache (payload/hfcache.c)
 */
/* What snapshots/<commit>/<path> links to: one "../" per directory level of path, then
 * "../../blobs/<blob>" (blob "" gives the prefix every blob of that file shares). SW_ERANGE
 * when it does not fit out. */
int sw__hfcache_blob_target(const char *path, const char *blob, char *out, size_t n);

/* ---------------------------------------------------------------------------------------------
 * target (payload/target.c): where a payload is, from a directory, a repo or a fleet's endpoint.
 */

/* What a download fetches from where to where. Strings not held here are the caller's or the
 * fleet's. */
struct sw__fetch_target {
    const char *repo;
    const char *revision;       /* NULL: the manifest's, else main */
    const char *const *include; /* NULL: every file */
    char dest[4096];            /* "": the HF cache */
    char manifest[4096];        /* "": ask the Hub */
    bool manifest_default;      /* the fleet's default place: its absence means "ask the Hub" */
    const char *endpoint;
    const char *globs[SW_FETCH_MAX_INCLUDE + 1];
};

/* The files to check: target a directory (without a fleet), else an ENDPOINT of the fleet
 * (NULL: ./fleet.yaml), loaded into *fleet (the caller frees it, also on error). */
int sw__payload_target_local(const char *target, const char *fleet_path, const char *manifest,
                             struct sw_fleet **fleet, struct sw_payload_target *t,
                             struct sw_err *e);
/* What to fetch: o->target a Hub repository (namespace/name), else an ENDPOINT whose payload
 * names it; *fleet as above. */
int sw__payload_target_hub(const struct sw_fetch_payload_opts *o, struct sw_fleet **fleet,
                           struct sw__fetch_target *t, struct sw_err *e);

#endif
