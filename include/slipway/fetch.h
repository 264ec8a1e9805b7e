/*
 * fetch: getting a payload from the Hugging Face Hub (or anything laid out like it) onto disk,
 * verified. Part of the payload module (src/payload/); payload.h holds the manifest, the
 * sniffing and the verification this builds on.
 *
 *  - token (payload/token.c): the Hub token, only from HF_TOKEN or a token file nobody else can
 *    read; never from argv, never printed (sw_redact, core.h), never logged or stored.
 *  - hub (payload/hub.c): a manifest from the Hub's own answers: the file list of
 *    /api/models/{repo}/revision/{rev} (siblings), then a HEAD of /{repo}/resolve/{rev}/{file}
 *    per file without following the redirect, reading X-Repo-Commit, X-Linked-Size,
 *    X-Linked-Etag (the sha256 of an LFS file) and ETag (the git blob sha1 of a regular file).
 *    Every file must resolve to the same commit: a branch that moves meanwhile stops the fetch.
 *  - hfcache (payload/hfcache.c): the Hugging Face cache layout (models--org--name/blobs/<etag>,
 *    snapshots/<commit>/<path> -> ../../blobs/<etag>, refs/<revision>), so that what another
 *    tool downloaded is reused (after hashing it) and what slipway downloads is theirs too.
 *  - download (payload/download.c, the run; download_present.c, what is there already;
 *    download_xfer.c, the transfers): several files at once on one net loop (libcurl multi),
 *    no symbolic link followed below the destination (payload/nofollow.c),
 *    each written to <target>.incomplete while its sha256 is computed from the bytes as they
 *    arrive, resumed with Range after a cut (a server that answers 200 to a Range restarts the
 *    file from byte 0, and says so), renamed into place only when size and hash match. Free disk
 *    space is checked before the first byte.
 *  - fetch (payload/fetch.c, payload/target.c): all of it in one call, as `slipway fetch` runs
 *    it: a REPO or an ENDPOINT resolved, the token, the manifest (kept or the Hub's), the files.
 *
 * What it does not do: xet storage, uploads, repositories other than models, retries on its own
 * (a failed fetch leaves a resumable state; running it again resumes), deciding whether a
 * complete payload suits an engine (payload layout checks do).
 */
#ifndef SLIPWAY_FETCH_H
#define SLIPWAY_FETCH_H

#include <slipway/core.h>
#include <slipway/payload.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_net_loop;
struct sw_fleet;

/* =============================================================================================
 * Token
 */
#define SW_FETCH_TOKEN_MAX 1024

struct sw_fetch_token {
    char value[SW_FETCH_TOKEN_MAX]; /* "" when none; never print it */
    char source[512];               /* "HF_TOKEN" or the file's path; "" when none */
};

/*
 * The token: HF_TOKEN when set and not empty, else the file HF_TOKEN_PATH, else
 * $HF_HOME/token, else ~/.cache/huggingface/token. No token at all is not an error (value "").
 * A token file readable or writable by group or others, or not owned by the user, is refused
 * (SW_EINVAL, naming the file and its mode); so is a token holding a control character.
 */
int sw_fetch_token_load(struct sw_fetch_token *t, struct sw_err *e);
/* Wipe it. */
void sw_fetch_token_clear(struct sw_fetch_token *t);

/* =============================================================================================
 * Hub
 */

/* HF_ENDPOINT without a trailing slash, or "https://huggingface.co". Static storage. */
const char *sw_hub_endpoint(void);

struct sw_hub_opts {
    const char *endpoint;       /* NULL: sw_hub_endpoint() */
    const char *token;          /* NULL or "": anonymous */
    const char *const *include; /* NULL-terminated fnmatch globs on the path; NULL: every file */
    unsigned parallel;          /* HEADs at once; 0: 8 */
    struct sw_net_loop *loop;   /* NULL: a private one */
};

/*
 * Fill *out (initialised here) with the files of repo at revision (NULL: "main"), with sizes and
 * hashes from the Hub's headers, pinned to the commit the revision resolved to first. Errors:
 * SW_EHTTP (a refusal: 401/403 gated or private, 404 unknown repo/revision/file; the message
 * says which), SW_ENET, SW_EPARSE (an answer that is not the Hub's), SW_EMISMATCH (the revision
 * moved while the files were being listed: the message names both commits and how to pin),
 * SW_ENOENT (no file matches the include globs).
 */
int sw_hub_manifest(const char *repo, const char *revision, const struct sw_hub_opts *o,
                    struct sw_payload_manifest *out, struct sw_err *e);

/* "https://host/org/name/resolve/<rev>/<path>" with the path percent-encoded. 0, SW_ERANGE (longer
 * than out) or SW_ENOMEM. */
int sw_hub_resolve_url(const char *endpoint, const char *repo, const char *rev, const char *path,
                       char *out, size_t n);

/* =============================================================================================
 * Hugging Face cache layout
 */

/* HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub. */
int sw_hfcache_dir(char *out, size_t n, struct sw_err *e);
/* <cache>/models--org--name */
int sw_hfcache_repo_dir(const char *cache, const char *repo, char *out, size_t n, struct sw_err *e);
/* The name of a file's blob: its sha256 (LFS) or git blob sha1; NULL when neither is known. */
const char *sw_hfcache_blob_name(const struct sw_payload_file *f);
/* snapshots/<commit>/<path> -> ../../blobs/<blob> (with one more ../ per directory level),
 * creating directories; an existing link is replaced (renamed over, never followed). No link
 * below repo_dir is followed: a linked directory on the way is SW_EINVAL naming it. blob must be
 * lowercase hex (a hash: never an ETag as such), commit 40 hex, path sw_payload_path_ok. */
int sw_hfcache_link(const char *repo_dir, const char *commit, const char *path, const char *blob,
                    struct sw_err *e);
/* refs/<revision> := commit (atomically; no link below repo_dir followed). */
int sw_hfcache_write_ref(const char *repo_dir, const char *revision, const char *commit,
                         struct sw_err *e);
/* The commit refs/<revision> names: 0, or SW_ENOENT. */
int sw_hfcache_read_ref(const char *repo_dir, const char *revision, char commit[41],
                        struct sw_err *e);

/* =============================================================================================
 * Download
 */

enum sw_fetch_state {
    SW_FETCH_PENDING = 0,
    SW_FETCH_PRESENT,    /* already in place; hashed and right */
    SW_FETCH_LINKED,     /* found in the HF cache (another tool's download), hashed, linked */
    SW_FETCH_DOWNLOADED, /* fetched (maybe resumed), size and hash checked, renamed into place */
    SW_FETCH_PLANNED,    /* --dry-run: would be fetched */
    SW_FETCH_FAILED,     /* see msg; a resumable .incomplete may be left (never the file) */
    SW_FETCH__N
};
const char *sw_fetch_state_name(enum sw_fetch_state s); /* "present", "linked", ... */

struct sw_fetch_result {
    const struct sw_payload_file *file; /* the manifest's entry */
    enum sw_fetch_state state;
    char target[4096];  /* where the file is (or would be) */
    uint64_t had;       /* bytes of a .incomplete found at start (resumed from) */
    uint64_t fetched;   /* bytes received */
    bool range_ignored; /* the server answered 200 to a Range: restarted from 0 */
    bool unverified;    /* no sha256 or git oid to check it against (the Hub's ETag was
                           neither): only its size and kind are known good. Not put in place
                           (FAILED, its bytes kept in the .incomplete) unless allowed */
    char sha256[SW_PAYLOAD_SHA256_HEX + 1]; /* of the bytes hashed: those in place, or for a
                                               mismatch those received ("" when not hashed) */
    int rc;                                 /* 0 or SW_E* for FAILED */
    char msg[1024];                         /* what happened, for FAILED and notable events */
};

/* Called on the loop's thread when one file reached its end state (for line-per-file output). */
typedef void (*sw_fetch_file_fn)(void *ud, const struct sw_fetch_result *r);

struct sw_fetch_opts {
    const char *endpoint;  /* NULL: sw_hub_endpoint() */
    const char *token;     /* NULL or "": anonymous */
    const char *dest;      /* a plain directory (files at dest/<path>); NULL: the HF cache */
    const char *cache;     /* the HF cache root; NULL: sw_hfcache_dir() */
    unsigned parallel;     /* files at once; 0: 4 */
    bool dry_run;          /* decide what would be fetched (hashing what is present), fetch none */
    bool progress;         /* draw a progress bar (on a terminal) */
    bool stop_on_signal;   /* SIGINT/SIGTERM while transferring cancel the transfers (their
                             .incomplete kept, resumable; SW_EINTR) instead of killing us */
    bool allow_unverified; /* accept files nothing can verify (in the HF cache their blob is
                              named by the sha256 of the bytes received) */
    sw_fetch_file_fn on_file;
    void *ud;
};

struct sw_fetch_report {
    struct sw_fetch_result *files; /* one per manifest file, in manifest order */
    size_t n_files;
    size_t count[SW_FETCH__N];
    uint64_t bytes_total;    /* the payload's size */
    uint64_t bytes_needed;   /* what had to be fetched at start */
    uint64_t bytes_fetched;  /* received */
    uint64_t disk_free;      /* free bytes where the files go, at start */
    size_t unverified;       /* files with no hash to check (sw_fetch_result.unverified) */
    bool unverified_allowed; /* the caller accepted them (sw_fetch_opts.allow_unverified) */
    char dir[4096];          /* the payload directory: dest, or the snapshot of the commit */
    double seconds;
};

/*
 * Fetch every file of m (which must carry repo and commit; sizes and hashes from the Hub or a
 * manifest file). Returns 0 when every file is in place and verified (or, with dry_run, the plan
 * was made), SW_EMISMATCH / SW_EHTTP / SW_ENET / SW_EIO ... for the first failure while
 * *out says per file; SW_EIO before any transfer when the disk lacks the space; SW_EMISMATCH
 * when a file is unverified and allow_unverified is not set.
 * Nothing below the destination (dest, or the cache's models--org--name) is reached through a
 * symbolic link: a link met there fails its file (SW_EINVAL, naming the link).
 * Free with sw_fetch_report_free.
 */
int sw_fetch_run(const struct sw_payload_manifest *m, const struct sw_fetch_opts *o,
                 struct sw_fetch_report *out, struct sw_err *e);
void sw_fetch_report_free(struct sw_fetch_report *r);
json_t *sw_fetch_report_to_json(const struct sw_fetch_report *r); /* new reference */

/* =============================================================================================
 * A payload fetched as `slipway fetch` fetches it (payload/fetch.c, payload/target.c): the target
 * resolved (a Hub repository, or an ENDPOINT of a fleet whose payload names repo, revision, files
 * and path), the token loaded (sw_fetch_token_load), the manifest (the one kept beside the fleet
 * or named, narrowed to the include globs; else the Hub's, sw_hub_manifest), saved when asked,
 * then sw_fetch_run. Every message has the token redacted.
 */
#define SW_FETCH_MAX_INCLUDE 64 /* include globs, given or from the payload's files */

struct sw_fetch_payload_opts {
    const char *target;         /* REPO (namespace/name) or ENDPOINT */
    const char *fleet;          /* the ENDPOINT's fleet; NULL: ./fleet.yaml */
    const char *revision;       /* NULL: the payload's, else the manifest's, else main */
    const char *const *include; /* NULL-terminated globs (at most SW_FETCH_MAX_INCLUDE); NULL:
                                   the payload's files, else every file */
    const char *dest;           /* a plain directory; NULL: the payload's path for an ENDPOINT
                                   (on this host only), else the HF cache */
    const char *manifest;       /* NULL: the ENDPOINT's FLEET.manifests/ENDPOINT.json when it
                                   exists, else the Hub is asked */
    const char *write_manifest; /* save the manifest used, pinned, here before fetching */
    unsigned jobs;              /* sw_fetch_opts.parallel */
    bool dry_run;
    bool progress;
    bool allow_unverified;
    sw_fetch_file_fn on_file;
    void *ud;
};

/* What a fetch found and did. The fleet is held for `endpoint`: free with sw_fetch_payload_free. */
struct sw_fetch_payload {
    struct sw_payload_manifest manifest; /* what was fetched (repo, revision, commit, files) */
    struct sw_fetch_report report;       /* per file; n_files 0 when the run was not reached */
    const char *endpoint;                /* the ENDPOINT, NULL for a REPO */
    bool dry_run;
    bool hub_failed;        /* the error is the Hub's answer (a refusal, a moved revision, the
                             network) while listing: a failure found, not unusable input */
    struct sw_fleet *fleet; /* private */
};

/*
 * Fetch the payload o names. 0 when every file is in place and verified (or, dry, the plan was
 * made). An error before the run (unusable input, the Hub's refusal: out->hub_failed) leaves
 * out->report empty; an error of the run (sw_fetch_run's) comes with out->report per file.
 */
int sw_fetch_payload(const struct sw_fetch_payload_opts *o, struct sw_fetch_payload *out,
                     struct sw_err *e);
void sw_fetch_payload_free(struct sw_fetch_payload *p); /* accepts NULL */
/* sw_fetch_report_to_json with repo, revision, commit, endpoint, dry_run and, when err is not
 * NULL, the run's error. New reference, NULL on OOM. */
json_t *sw_fetch_payload_to_json(const struct sw_fetch_payload *p, const struct sw_err *err);

#ifdef __cplusplus
}
#endif
#endif
