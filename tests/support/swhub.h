/*
 * swhub: a Hugging Face Hub look-alike served by a real nginx (Debian's nginx-light) on
 * 127.0.0.1, for the payload download tests.
 *
 * One repository per hub, at one commit. Laid out the way the Hub answers:
 *  - GET /api/models/{org}/{name}/revision/{rev}: {"id", "sha", "siblings": [{"rfilename"}]}
 *  - /{org}/{name}/resolve/{main|commit}/{file}: for an LFS file a 302 to a CDN-like URL
 *    (/cdn/<sha256>?X-Amz-Signature=...) carrying X-Repo-Commit, X-Linked-Size, X-Linked-Etag
 *    (the sha256, quoted) and ETag; for a regular file a 200 with the body, ETag = the git blob
 *    sha1 (quoted) and X-Repo-Commit.
 *  - /cdn/<sha256>: the bytes, with Range support (nginx's own).
 * Faults are set per file before swhub_start (or between a stop and the next start): see
 * enum swhub_fault. The access log (swhub_log_text) has one line per request:
 * "METHOD URI STATUS RANGE BYTES_SENT"; it never logs the Authorization header.
 *
 * What it does not do: everything the Hub does beyond those URLs (no /api/.../tree, no xet).
 * nginx is stopped by its PID (swhub_stop, or swhub_kill for a cut mid-transfer).
 */
#ifndef SWHUB_H
#define SWHUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum swhub_fault {
    SWHUB_OK = 0,
    SWHUB_403_HTML,    /* the CDN answers 403 with an HTML page (an expired signed URL) */
    SWHUB_500,         /* the CDN answers 500 */
    SWHUB_NO_RANGE,    /* the CDN ignores Range (max_ranges 0): 200 and the whole file */
    SWHUB_WRONG_SHA,   /* X-Linked-Etag announces a sha256 the bytes do not have */
    SWHUB_LFS_POINTER, /* the CDN serves the git-lfs pointer text instead of the content */
    SWHUB_SLOW,        /* the CDN sends at 256 KiB/s (for a cut in the middle) */
    SWHUB_TRUNCATED,   /* the CDN serves only the first half of the file */
    SWHUB_MOVED,       /* under "main" this file's X-Repo-Commit is another commit (the branch
                          moved); under the pinned commit it answers that commit */
    SWHUB_ETAG_OPAQUE, /* X-Linked-Etag and ETag are neither a sha256 nor a git oid (an S3-style
                          "<md5>-<parts>"): nothing to check the bytes against */
    SWHUB_ETAG_PATH,   /* X-Linked-Etag and ETag carry path characters ("../../escaped/x") */
};

struct swhub;

/* A hub for repo "org/name" at a 40-hex commit; NULL when nginx is not installed. */
struct swhub *swhub_new(const char *repo, const char *commit);
/* Add a file (copied). lfs: served through the CDN redirect with X-Linked-* headers. */
void swhub_file(struct swhub *h, const char *name, const void *data, size_t len, bool lfs);
void swhub_fault(struct swhub *h, const char *name, enum swhub_fault f);
/* Answer 401 unless "Authorization: Bearer <token>" is sent (a gated repository). */
void swhub_require_token(struct swhub *h, const char *token);
/* Write the config and files, start nginx, wait until it listens. 0 or -1. The port is kept
 * across restarts. */
int swhub_start(struct swhub *h);
/* SIGKILL nginx (connections die mid-transfer) / SIGTERM it; both wait for it. */
void swhub_kill(struct swhub *h);
void swhub_stop(struct swhub *h);
/* Stop and remove everything. Accepts NULL. */
void swhub_free(struct swhub *h);

const char *swhub_url(const struct swhub *h);          /* "http://127.0.0.1:PORT" */
const char *swhub_dir(const struct swhub *h);          /* its temporary directory */
const char *swhub_commit(const struct swhub *h);       /* the commit */
const char *swhub_other_commit(const struct swhub *h); /* the commit SWHUB_MOVED announces */
/* hex sha256 of a file's content (also the LFS etag); git blob sha1 for etag of a regular file */
const char *swhub_sha256(const struct swhub *h, const char *name);
const char *swhub_gitsha1(const struct swhub *h, const char *name);
pid_t swhub_pid(const struct swhub *h);
/* The access log so far (malloc'd; free it). */
char *swhub_log_text(const struct swhub *h);

/* A test's hub and its client side: a new hub (swhub_new) and a fresh directory *tmp (swt_tmpdir)
 * holding the HF cache (tmp/cache_name, into cache) and an empty HF home (tmp/hf-home, into
 * home). NULL when the hub cannot be made (nothing is left then). */
struct swhub *swhub_client(const char *repo, const char *commit, char **tmp, char *cache, size_t cn,
                           const char *cache_name, char *home, size_t hn);
/* A client's environment for h: HF_ENDPOINT, HF_HUB_CACHE and HF_HOME (no token file from the real
 * home), no token, no progress bars. */
void swhub_env(const struct swhub *h, const char *cache, const char *home);

/* A valid safetensors file of `total` bytes (one U8 tensor named `tensor`) whose data area is a
 * xorshift stream from `seed`: bytes nobody can tell from a real tensor by looking. malloc'd;
 * free with free(). */
unsigned char *swhub_safetensors(size_t total, uint32_t seed, const char *tensor);

#endif
