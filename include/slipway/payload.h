/*
 * payload: what a model payload must be before an engine is allowed near it.
 *
 *  - manifest (payload/manifest.c): the files of a payload with their size and sha256, pinned to
 *    a repository revision. Filled from the Hub's headers by a download, or read from a manifest
 *    file kept beside the fleet (sw_payload_manifest_default_path), or written from a directory
 *    known to be good.
 *  - sniff (payload/sniff.c): is a file's body what its name says? A .gguf must parse as GGUF, a
 *    .safetensors must carry a sane header, a .json must be JSON; an HTML page, a git-lfs pointer
 *    or a JSON error body ({"error": "..."} as the Hub sends it) is named for what it is, with its
 *    first bytes quoted safely. Works on the first bytes alone (while a download streams) or on
 *    a whole file.
 *  - layout (payload/layout.c): is the set complete? Shards of model.safetensors.index.json,
 *    GGUF split sets, the projector when vision is promised, a draft model in either of its two
 *    shapes, and MTP layers a config declares but the weights do not ship.
 *  - verify (payload/verify.c): re-hash what is on disk against a manifest, in parallel across
 *    files (OpenSSL EVP SHA-256, one worker per core, bounded read buffers).
 *  - check (payload/check.c, payload/target.c): the three above over one payload, a directory
 *    or an endpoint's through its fleet, as `slipway fetch --verify-only` reports them.
 *  - retire (payload/retire.c): a payload directory moved to a trash directory while no kept
 *    tag of the ledger needs it, by rename or by copy + verify + remove, never half.
 *
 * What it does not do: talk HTTP or know the Hub's URLs (the download code fills a manifest and
 * calls in here), interpret tensors beyond their names (model/), decide what an engine is given
 * (gate/ asks sw_payload_mtp_check).
 */
#ifndef SLIPWAY_PAYLOAD_H
#define SLIPWAY_PAYLOAD_H

#include <slipway/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_fleet;

/* =============================================================================================
 * Manifest
 */

#define SW_PAYLOAD_SHA256_HEX 64 /* characters of a sha256 in hex */
#define SW_PAYLOAD_MAX_FILES  100000
#define SW_PAYLOAD_MAX_PATH   1024 /* bytes of a file's relative path */
/* A manifest file larger than this is refused (100k files x ~200 bytes of JSON each). */
#define SW_PAYLOAD_MANIFEST_MAX (64u << 20)

/* One file of a payload. */
struct sw_payload_file {
    char *path;    /* relative to the payload root, '/'-separated; never absolute, no "..",
                          no "." or empty component (checked by sw_payload_path_ok) */
    uint64_t size; /* bytes; meaningful only when size_known */
    bool size_known;
    char sha256[SW_PAYLOAD_SHA256_HEX + 1]; /* lowercase hex, "" when unknown (the Hub gives a
                                               sha256 only for LFS files: X-Linked-Etag) */
    bool lfs;      /* stored in git-lfs on the Hub (a pointer in git, the bytes elsewhere) */
    char *git_oid; /* the git blob sha1 (40 hex) of a non-LFS file when known, else NULL */
};

/* The files of one payload. Owns everything it points to. Paths are unique. */
struct sw_payload_manifest {
    char *repo;     /* Hugging Face "namespace/name", NULL for a local directory */
    char *revision; /* what was asked for: branch, tag or commit; NULL when unknown */
    char *commit;   /* the commit it resolved to (40 hex, X-Repo-Commit); NULL when unknown */
    struct sw_payload_file *files;
    size_t n_files;
    size_t cap; /* private */
};

void sw_payload_manifest_init(struct sw_payload_manifest *m);
void sw_payload_manifest_free(struct sw_payload_manifest *m); /* accepts NULL; leaves it init */
/* Set repo / revision / commit (copied; NULL clears). commit must be 40 hex (SW_EINVAL). */
int sw_payload_manifest_set(struct sw_payload_manifest *m, const char *repo, const char *revision,
                            const char *commit, struct sw_err *e);
/*
 * Add a file. size < 0 means unknown; sha256 NULL or "" means unknown, else 64 hex digits (any
 * case, stored lowercase); git_oid NULL or 40 hex. The path must pass sw_payload_path_ok.
 * SW_EEXIST for a path already there, SW_EINVAL for a bad path/hash, SW_ERANGE past
 * SW_PAYLOAD_MAX_FILES. On success *out (may be NULL) points at the stored entry, valid until the
 * next add.
 */
int sw_payload_manifest_add(struct sw_payload_manifest *m, const char *path, int64_t size,
                            const char *sha256, bool lfs, const char *git_oid,
                            struct sw_payload_file **out, struct sw_err *e);
/* The entry for a path, NULL when absent. */
struct sw_payload_file *sw_payload_manifest_find(const struct sw_payload_manifest *m,
                                                 const char *path);
/* Sort the files by path (what save does, so a manifest diffs well). */
void sw_payload_manifest_sort(struct sw_payload_manifest *m);
/* Sum of the known sizes; *unknown (may be NULL) gets the count of files of unknown size. */
uint64_t sw_payload_manifest_bytes(const struct sw_payload_manifest *m, size_t *unknown);

/*
 * The manifest file format (docs/payload.md):
 *   {"format": "slipway-payload-manifest", "version": 1,
 *    "repo": "Qwen/Qwen3-8B", "revision": "main", "commit": "<40 hex>",
 *    "files": [{"path": "model-00001-of-00005.safetensors", "size": 3996250744,
 *               "sha256": "<64 hex>", "lfs": true}, {"path": "config.json", "size": 728,
 *               "git_oid": "<40 hex>"}, ...]}
 * Unknown keys are errors (a typo must not silently drop a check). Errors name file:line:col.
 */
int sw_payload_manifest_from_json(const json_t *j, const char *where,
                                  struct sw_payload_manifest *out, struct sw_err *e);
/* New reference, files sorted by path; NULL on OOM. */
json_t *sw_payload_manifest_to_json(const struct sw_payload_manifest *m);
/* Load a manifest file (at most SW_PAYLOAD_MANIFEST_MAX bytes). *out is initialised here; on
 * error it is left empty. */
int sw_payload_manifest_load(const char *path, struct sw_payload_manifest *out, struct sw_err *e);
/* Write atomically (temp + fsync + rename), mode 0644. */
int sw_payload_manifest_save(const char *path, const struct sw_payload_manifest *m,
                             struct sw_err *e);
/*
 * Where an endpoint's manifest is kept beside its fleet: for fleet "ops/fleet.yaml" and endpoint
 * "qwen-a" it is "ops/fleet.manifests/qwen-a.json" (the .yaml/.yml suffix dropped, as the ledger
 * does). SW_EINVAL for an endpoint name that cannot be a file name, SW_ERANGE if it does not fit.
 */
int sw_payload_manifest_default_path(const char *fleet_path, const char *endpoint, char *out,
                                     size_t n, struct sw_err *e);
/* A relative payload path that is safe to join to a root: not empty, not absolute, no "." or ".."
 * component, no empty component, no backslash, no control byte, < SW_PAYLOAD_MAX_PATH. */
bool sw_payload_path_ok(const char *path);

/* =============================================================================================
 * SHA-256 (OpenSSL EVP underneath). Incremental, for hash-while-streaming.
 */
struct sw_payload_sha256; /* opaque */
int sw_payload_sha256_new(struct sw_payload_sha256 **out, struct sw_err *e);
int sw_payload_sha256_update(struct sw_payload_sha256 *h, const void *p, size_t n);
/* Writes 64 lowercase hex + NUL into hex; the context may then be reused after _reset. */
int sw_payload_sha256_final(struct sw_payload_sha256 *h, char hex[SW_PAYLOAD_SHA256_HEX + 1]);
int sw_payload_sha256_reset(struct sw_payload_sha256 *h);
void sw_payload_sha256_free(struct sw_payload_sha256 *h);
/* Hash a whole file with a bounded buffer (buf_size 0 = SW_PAYLOAD_READ_BUF); *size (may be NULL)
 * gets the bytes read. SW_ENOENT when absent, SW_EIO on a read error. */
int sw_payload_sha256_file(const char *path, size_t buf_size, char hex[SW_PAYLOAD_SHA256_HEX + 1],
                           uint64_t *size, struct sw_err *e);
#define SW_PAYLOAD_READ_BUF (1u << 20)

/* =============================================================================================
 * Engine patches (payload/patch.c): an operator's patch to a file of a pinned image, recorded
 * with the sha256 of the file it was made against and the sha256 `patch -p1` must produce.
 * Verification hashes the base file, applies the patch with `patch -p1` to a COPY of it in a
 * private temporary tree (the base is never written), and hashes the result. What it does not
 * do: fetch the image's file (the caller gives its path on this machine), or edit anything.
 */
struct sw_payload_patch {
    const char *file;           /* the patched file inside the tree -p1 strips to ("vllm/x.py"):
                                   relative, no ".." component */
    const char *patch;          /* the patch (unified diff with a/ b/ prefixes) on this machine */
    const char *base_sha256;    /* 64 hex: the file the patch was made against */
    const char *patched_sha256; /* 64 hex: what patch -p1 must reproduce */
};
enum sw_payload_patch_verdict {
    SW_PATCH_OK = 0,         /* the base is the recorded one and patching it reproduces the hash */
    SW_PATCH_BASE_DRIFTED,   /* the base file is not the one the patch was recorded against */
    SW_PATCH_DOES_NOT_APPLY, /* patch -p1 refused (a hunk failed, or it was already applied) */
    SW_PATCH_WRONG_RESULT,   /* it applied, but the result's sha256 is not the recorded one */
};
struct sw_payload_patch_result {
    enum sw_payload_patch_verdict verdict;
    char base_sha256[SW_PAYLOAD_SHA256_HEX + 1];    /* of the base file as found */
    char patched_sha256[SW_PAYLOAD_SHA256_HEX + 1]; /* of the patched copy, "" if not patched */
    char detail[512]; /* patch's own words when it refused (first lines), else "" */
};
/* Verify `p` against the base file at `base_file` (the pinned image's copy of p->file). Returns 0
 * when the verification ran, whatever its verdict; SW_EINVAL for a malformed record (a hash that
 * is not 64 hex, an absolute or escaping file), SW_ENOENT for a missing base or patch, SW_EIO when
 * `patch` cannot be run. Nothing is left behind. */
int sw_payload_patch_verify(const char *base_file, const struct sw_payload_patch *p,
                            struct sw_payload_patch_result *r, struct sw_err *e);
const char *sw_payload_patch_verdict_name(enum sw_payload_patch_verdict v);

/* =============================================================================================
 * Sniffing: is the body what the name says?
 */

/* What a file should be, from its name ("ftype": engine.h owns enum sw_payload_kind, the class
 * of a bad payload an engine reported). */
enum sw_payload_ftype {
    SW_PAYLOAD_FT_OTHER = 0,   /* tokenizer.model, *.txt, *.jinja ...: only "not a stand-in" */
    SW_PAYLOAD_FT_SAFETENSORS, /* *.safetensors */
    SW_PAYLOAD_FT_GGUF,        /* *.gguf */
    SW_PAYLOAD_FT_JSON,        /* *.json: config.json, tokenizer.json, the index ... */
    SW_PAYLOAD_FT_DOC          /* *.md, *.html, *.htm: anything goes */
};
enum sw_payload_ftype sw_payload_ftype_of(const char *path);
const char *sw_payload_ftype_name(enum sw_payload_ftype k);

/* The verdict on a body. */
enum sw_payload_body {
    SW_PAYLOAD_BODY_OK = 0,      /* looks right (as far as was checked) */
    SW_PAYLOAD_BODY_EMPTY,       /* 0 bytes */
    SW_PAYLOAD_BODY_HTML,        /* an HTML page: a 403/404/login page saved as the file */
    SW_PAYLOAD_BODY_LFS_POINTER, /* a git-lfs pointer: the real bytes were never fetched */
    SW_PAYLOAD_BODY_JSON_ERROR,  /* a JSON error body, e.g. {"error": "Repository not found"} */
    SW_PAYLOAD_BODY_XML,         /* an XML document: a cloud storage error body */
    SW_PAYLOAD_BODY_TRUNCATED,   /* the right kind, cut short (header or data past the end) */
    SW_PAYLOAD_BODY_MALFORMED,   /* the right magic but a header that does not parse or is
                                   insane (bad length, offsets outside the file ...) */
    SW_PAYLOAD_BODY_WRONG_KIND,  /* something else altogether (binary or text of another kind) */
    SW_PAYLOAD_BODY__N
};
const char *sw_payload_body_name(enum sw_payload_body b); /* "ok", "html", "lfs_pointer" ... */

struct sw_payload_sniff {
    enum sw_payload_ftype ftype;
    enum sw_payload_body body;
    char head[160]; /* the first bytes, quoted safely (sw_payload_quote), without quotes */
    char msg[768];  /* why, when body != OK: "an HTML page (an error or login page saved as the
                         file?), not a safetensors file; it starts \"<!DOCTYPE html>...\"" */
    uint64_t size;  /* the file size the check used (0 when unknown) */
    bool complete;  /* the whole structure was checked, not only the first bytes */
};

/* Bytes a head check wants at most (a safetensors length prefix + enough JSON to see an object,
 * a GGUF magic, an LFS pointer, an HTML doctype). More is fine and is used. */
#define SW_PAYLOAD_SNIFF_HEAD 4096

/*
 * Judge the first bytes of a body (a download's first chunk, or a file's head). `file_size` is
 * the size the body will have (Content-Length, X-Linked-Size) or 0 when unknown: a safetensors
 * header length is checked against it. Returns 0 when the head is plausible (out->body OK,
 * out->complete false), SW_EMISMATCH when it is not (out->body says which, e gets out->msg
 * with `where` as its place).
 */
int sw_payload_sniff_head(const char *where, const void *buf, size_t n, uint64_t file_size,
                          struct sw_payload_sniff *out, struct sw_err *e);
/*
 * Judge a whole file on disk: the head as above, then the full structure (GGUF header parsed by
 * model/gguf with this one file only, safetensors header by model/hf with its size law, JSON
 * parsed). 0 when right, SW_EMISMATCH when not (out and e say why), SW_ENOENT/SW_EIO when it
 * cannot be read.
 */
int sw_payload_sniff_file(const char *path, struct sw_payload_sniff *out, struct sw_err *e);
/* The same judgement on a whole file held in memory (the fuzz entry point): `name` decides the
 * kind. */
int sw_payload_sniff_mem(const char *name, const void *buf, size_t n, struct sw_payload_sniff *out,
                         struct sw_err *e);

/* Quote up to max bytes of p into out as printable ASCII: printable bytes as they are, \" \\ \n
 * \r \t escaped, anything else \xNN; "..." appended when cut. Always NUL-terminates. */
const char *sw_payload_quote(const void *p, size_t n, size_t max, char *out, size_t outn);

/* =============================================================================================
 * Layout completeness
 */

enum sw_payload_format {
    SW_PAYLOAD_FMT_NONE = 0,          /* no weights found */
    SW_PAYLOAD_FMT_SAFETENSORS,       /* one model.safetensors (or a few unindexed files) */
    SW_PAYLOAD_FMT_SAFETENSORS_INDEX, /* model.safetensors.index.json + shards */
    SW_PAYLOAD_FMT_GGUF,              /* one .gguf */
    SW_PAYLOAD_FMT_GGUF_SPLIT         /* a <prefix>-0000N-of-0000M.gguf set */
};
const char *sw_payload_format_name(enum sw_payload_format f);

enum sw_payload_issue_kind {
    SW_PAYLOAD_ISSUE_NO_WEIGHTS,      /* nothing to load */
    SW_PAYLOAD_ISSUE_INDEX,           /* the index itself is malformed */
    SW_PAYLOAD_ISSUE_SHARD_MISSING,   /* named by the index, absent */
    SW_PAYLOAD_ISSUE_SHARD_SIZE,      /* size != 8 + header + largest data end */
    SW_PAYLOAD_ISSUE_SHARD_BAD,       /* body rejected by sniffing, or tensors it should hold */
    SW_PAYLOAD_ISSUE_GGUF_SPLIT,      /* a split set incomplete or inconsistent */
    SW_PAYLOAD_ISSUE_GGUF_BAD,        /* a GGUF that does not parse */
    SW_PAYLOAD_ISSUE_PROJECTOR,       /* vision promised, no (valid) projector */
    SW_PAYLOAD_ISSUE_MTP_NOT_SHIPPED, /* config declares MTP/nextn layers, weights hold none */
    SW_PAYLOAD_ISSUE_CONFIG,          /* config.json missing or unreadable where it is needed */
    SW_PAYLOAD_ISSUE__N
};
const char *sw_payload_issue_name(enum sw_payload_issue_kind k); /* "shard_missing" ... */

struct sw_payload_issue {
    enum sw_payload_issue_kind kind;
    char file[256]; /* the file concerned, relative to the directory, "" when none */
    char msg[768];
};

/* What to expect. Zero-initialise; every field is optional. */
struct sw_payload_layout_opts {
    const char *gguf;   /* the GGUF to check (relative to dir or absolute); NULL: the layout is
                           found (index, model.safetensors, *.safetensors, a lone *.gguf) */
    const char *mmproj; /* the projector GGUF (relative to dir or absolute) */
    bool vision;        /* vision promised: a projector (GGUF) or vision weights (safetensors)
                           must be there */
    bool draft;         /* the directory is a draft model (a model.safetensors or an index with
                           shards; anything else is an issue) */
};

/* MTP / nextn (multi-token prediction) heads: declared vs shipped. */
struct sw_payload_mtp {
    int64_t declared;  /* layers the config declares: num_nextn_predict_layers,
                             mtp_num_hidden_layers; GGUF: <arch>.nextn_predict_layers */
    uint64_t tensors;  /* weights that belong to those layers (see sw_payload_is_mtp_tensor) */
    bool weights_read; /* every weight header was read (false: tensors is a lower bound) */
    char source[256];  /* where `declared` came from: "config.json: num_nextn_predict_layers" */
};

struct sw_payload_layout {
    enum sw_payload_format format;
    size_t n_weight_files; /* shards / split parts / files */
    uint64_t weight_bytes; /* on disk, of the weight files */
    uint64_t n_tensors;    /* tensors over the weight files read */
    bool has_projector;    /* a projector GGUF parsed, or vision tensors in the weights */
    struct sw_payload_mtp mtp;
    struct sw_payload_issue *issues;
    size_t n_issues;
};

/*
 * Check a payload directory (or a single .gguf / .safetensors file). Problems found are issues in
 * *out (return 0); only unusable input (dir unreadable, OOM) is an error. Free with
 * sw_payload_layout_free.
 */
int sw_payload_layout_check(const char *dir, const struct sw_payload_layout_opts *o,
                            struct sw_payload_layout *out, struct sw_err *e);
void sw_payload_layout_free(struct sw_payload_layout *l);
json_t *sw_payload_layout_to_json(const struct sw_payload_layout *l); /* new reference */

/*
 * Does this checkpoint really ship its MTP / draft tensors? `path` is a Hugging Face directory
 * (config.json + safetensors) or a .gguf (any part of a split set). Fills *out; returns 0, or an
 * error when neither config nor weights can be read. A checkpoint ships MTP when
 * sw_payload_ships_mtp(out): declared > 0 and tensors > 0. Spec-decode flags (MTP / nextn) must
 * not be rendered for one that declares layers but ships none.
 */
int sw_payload_mtp_check(const char *path, struct sw_payload_mtp *out, struct sw_err *e);
bool sw_payload_ships_mtp(const struct sw_payload_mtp *m);
/* Is this weight name part of an MTP/nextn head? Hugging Face: "mtp.*", "model.mtp.*",
 * "model.mtp_layers.*", or "model.layers.N.*" with N >= num_hidden_layers (DeepSeek-V3 and GLM
 * put the nextn layers after the decoder layers); pass num_hidden_layers < 0 to skip that rule.
 * GGUF: "blk.N.nextn.*". */
bool sw_payload_is_mtp_tensor(const char *name, int64_t num_hidden_layers);

/* =============================================================================================
 * Verification
 */

enum sw_verify_status {
    SW_VERIFY_OK = 0,     /* size and (when the manifest has one) sha256 or git oid match;
                             without either the file is also `unverified` */
    SW_VERIFY_WRONG_SIZE, /* size differs from the manifest (not hashed) */
    SW_VERIFY_WRONG_HASH, /* size matches, sha256 (or git oid) differs */
    SW_VERIFY_MISSING,    /* in the manifest, not on disk */
    SW_VERIFY_UNEXPECTED, /* on disk, not in the manifest */
    SW_VERIFY_UNREADABLE, /* exists but cannot be read (permissions, I/O error, not a file) */
    SW_VERIFY__N
};
const char *sw_verify_status_name(enum sw_verify_status s); /* "ok", "wrong_size" ... */

struct sw_verify_file {
    char *path; /* relative to the root */
    enum sw_verify_status status;
    bool hashed;        /* sha256 holds what is on disk */
    bool hash_expected; /* the manifest had a sha256 for it */
    bool unverified;    /* OK on its size alone: the manifest has no sha256 or git oid for it */
    uint64_t size;      /* on disk (0 when missing) */
    uint64_t want_size; /* from the manifest (0 when unknown or unexpected) */
    char sha256[SW_PAYLOAD_SHA256_HEX + 1];      /* on disk, "" when not hashed */
    char want_sha256[SW_PAYLOAD_SHA256_HEX + 1]; /* from the manifest, "" when unknown */
    char git_oid[40 + 1];      /* git blob sha1 on disk, when that is the manifest's only hash */
    char want_git_oid[40 + 1]; /* from the manifest when it has no sha256, else "" */
    char msg[256];             /* the I/O error for UNREADABLE, "" otherwise */
};

struct sw_verify_report {
    struct sw_verify_file *files; /* manifest files in path order, then unexpected ones */
    size_t n_files;
    size_t count[SW_VERIFY__N];
    size_t unverified; /* files OK on their size alone (counted in count[SW_VERIFY_OK] too) */
    uint64_t bytes_hashed;
    double seconds;   /* wall time of the hashing */
    unsigned threads; /* workers used */
};

/* Called on the calling thread, at most ~10 times a second, while workers hash. */
typedef void (*sw_verify_progress_fn)(void *ud, uint64_t done, uint64_t total);

struct sw_verify_opts {
    unsigned threads;   /* 0: one per online core, never more than the files to hash */
    size_t buf_size;    /* per-worker read buffer; 0: SW_PAYLOAD_READ_BUF */
    bool hash_all;      /* hash files the manifest has no sha256 for (and unexpected ones),
                               so their hash can be reported or pinned */
    bool no_unexpected; /* do not walk the directory for files not in the manifest */
    /* Files under the root never reported as unexpected (besides .git/, .cache/ and the
     * manifest itself when it lies under the root): a NULL-terminated list of relative paths. */
    const char *const *ignore;
    sw_verify_progress_fn progress;
    void *progress_ud;
};

/*
 * Verify the files under `root` against manifest m: each file of the manifest is stat'ed; one of
 * the right size with a known sha256 (or, without one, a git oid) is hashed (in parallel, one
 * file per worker); one with neither is OK on its size alone and marked unverified; files under
 * root not in the manifest are UNEXPECTED (hidden dot-directories skipped). Returns 0 when the
 * verification ran (whatever it found: see report->count), an error when it could not run (root
 * unreadable, OOM, no thread). Free with sw_verify_report_free.
 */
int sw_payload_verify(const char *root, const struct sw_payload_manifest *m,
                      const struct sw_verify_opts *o, struct sw_verify_report *out,
                      struct sw_err *e);
/* Hash a list of files (relative to root) in parallel: the engine under sw_payload_verify, and
 * what the bench measures. sha256[i] receives each hash, sizes[i] (may be NULL) the bytes; a
 * file that cannot be read fails the whole call. */
int sw_payload_hash_files(const char *root, const char *const *paths, size_t n,
                          const struct sw_verify_opts *o, char (*sha256)[SW_PAYLOAD_SHA256_HEX + 1],
                          uint64_t *sizes, struct sw_err *e);
/* Every file OK (an unverified one included: whether that is accepted is the caller's call,
 * `fetch --allow-unverified`). */
bool sw_verify_ok(const struct sw_verify_report *r);
void sw_verify_report_free(struct sw_verify_report *r);
json_t *sw_verify_report_to_json(const struct sw_verify_report *r); /* new reference */
/* A manifest of the files under root as they are (sizes; sha256 of each when hash is set),
 * hidden dot-directories skipped. For pinning a directory known to be good. */
int sw_payload_manifest_scan(const char *root, bool hash, const struct sw_verify_opts *o,
                             struct sw_payload_manifest *out, struct sw_err *e);

/* =============================================================================================
 * The payload check (`slipway fetch --verify-only`; payload/check.c, payload/target.c): a payload
 * directory, or an endpoint's payload found through its fleet, checked three ways: verified
 * against its manifest (or, without one, listed), every body sniffed, and the layout (and a local
 * draft's) checked. Unverified files are problems unless allowed.
 */

/* Where a payload to check is. Strings not held here point into the fleet. */
struct sw_payload_target {
    char root[4096];           /* the payload directory */
    char manifest[4096];       /* the manifest, "" when none */
    bool manifest_default;     /* the fleet's default place: its absence is not an error */
    const char *endpoint;      /* NULL for a directory */
    const char *gguf, *mmproj; /* the endpoint's model and projector files, when named */
    bool vision;               /* a projector is promised (payload.mmproj, not off) */
    bool file_only;            /* payload.path names one file in a directory it may share with other
                         models: only the payload's own files are looked at, none "unexpected" */
    char draft[4096];          /* a local draft model directory, "" when none */
};

struct sw_payload_check_opts {
    const char *target;         /* a directory, or an ENDPOINT of the fleet */
    const char *fleet;          /* NULL: a directory target is that directory, else ./fleet.yaml */
    const char *manifest;       /* NULL: an ENDPOINT's FLEET.manifests/ENDPOINT.json */
    const char *write_manifest; /* pin what was found there when nothing is wrong (hashes all) */
    bool hash_all;              /* sw_verify_opts.hash_all */
    bool allow_unverified;      /* files no hash vouches for are not problems (still reported) */
    unsigned threads;           /* hashing threads; 0: one per core */
    bool progress;              /* a progress bar while hashing (sw_progress: on a terminal) */
};

/* A file whose body is not what its name says. */
struct sw_payload_bad_body {
    char *path; /* relative to the root */
    struct sw_payload_sniff sniff;
};

/* What a check found. Free with sw_payload_check_free. */
struct sw_payload_check {
    struct sw_payload_target target;
    bool have_manifest;
    struct sw_verify_report verify;   /* with a manifest */
    struct sw_payload_manifest files; /* without one: the files there (hashed with hash_all) */
    struct sw_payload_bad_body *bodies;
    size_t n_bodies;
    struct sw_payload_layout layout;
    struct sw_payload_layout draft; /* when have_draft */
    bool have_draft;
    bool problems;          /* anything wrong, or unverified files not allowed */
    char not_written[1024]; /* why write_manifest was not written, "" otherwise */
    struct sw_fleet *fleet; /* private: what the target's strings point into */
};

/*
 * Check the payload o names. 0 when the check ran, whatever it found (out->problems); an error
 * for unusable input (no such directory or endpoint, a malformed manifest) or when it could not
 * run (OOM, a manifest that cannot be written).
 */
int sw_payload_check(const struct sw_payload_check_opts *o, struct sw_payload_check *out,
                     struct sw_err *e);
void sw_payload_check_free(struct sw_payload_check *c); /* accepts NULL */
/* {root, endpoint, manifest, verify, bodies, files (without a manifest), layout, draft,
 * unverified, verified (with a manifest), ok}. New reference, NULL on OOM. */
json_t *sw_payload_check_to_json(const struct sw_payload_check *c);

/* =============================================================================================
 * Walking a tree without following links (payload/nofollow.c)
 */

struct stat;

/* The deepest directory a walk enters below its root; one deeper is SW_ERANGE. */
#define SW_PAYLOAD_WALK_DEPTH 64

/* One entry of a walk, as the visitor sees it (valid only during the call). */
struct sw_payload_walk_entry {
    const char *path;      /* root/rel (the root itself as given) */
    const char *rel;       /* relative to the root, "" for the root */
    const struct stat *st; /* as lstat(2) saw it: a symbolic link is itself, never followed */
    int depth;             /* 0 for the root */
    bool post;             /* a directory seen again after all its entries (opts.post) */
    size_t n_entries;      /* when post: the entries it held, "." and ".." not counted */
};

/* Returns 0 to go on; anything else stops the walk and is what sw_payload_walk returns (with e
 * set by the visitor). */
typedef int (*sw_payload_walk_fn)(void *ud, const struct sw_payload_walk_entry *x,
                                  struct sw_err *e);

struct sw_payload_walk_opts {
    bool post;       /* visit each directory a second time, after its entries */
    bool missing_ok; /* an entry (the root too) gone before it was stat'ed is skipped, not an
                        error (a removal racing with another) */
};

/*
 * Walk root depth-first in readdir order: each entry visited before its directory's next entry,
 * a directory before its entries (and after them too with opts.post). Symbolic links are visited
 * as links and never descended; anything else (a socket, a device) is visited as what it is:
 * whether to accept it is the visitor's call. The visitor may remove the entry it is given (a
 * removal walks with post and removes each directory there, once empty). opts may be
 * NULL. Errors name the path: SW_EIO (cannot stat / open: the system's words), SW_ERANGE (a path
 * longer than PATH_MAX, a directory deeper than SW_PAYLOAD_WALK_DEPTH), or the visitor's.
 */
int sw_payload_walk(const char *root, const struct sw_payload_walk_opts *opts,
                    sw_payload_walk_fn fn, void *ud, struct sw_err *e);

/* =============================================================================================
 * Retiring a payload directory (payload/retire.c)
 */

#define SW_PAYLOAD_RETIRE_PATH 4096

struct sw_payload_retire_opts {
    const char *ledger; /* the ledger (NULL: $SLIPWAY_LEDGER, else beside fleet, else the default);
                           it must exist: no ledger, no answer */
    const char *fleet;  /* the fleet file the default ledger sits beside, or NULL */
    bool dry_run;       /* check and survey; move nothing (the ledger opened read-only) */
    const char *note;   /* the ledger's note of the move ("slipway retire") */
};

/* What a retirement found and did. Strings are its own; needed_by is the caller's (json_decref,
 * after an error too). */
struct sw_payload_retire {
    char given[SW_PAYLOAD_RETIRE_PATH];    /* PAYLOAD_DIR absolute and lexically clean */
    char payload[SW_PAYLOAD_RETIRE_PATH];  /* ... with its links resolved: what moves */
    char trash[SW_PAYLOAD_RETIRE_PATH];    /* TRASH_DIR absolute */
    char to[SW_PAYLOAD_RETIRE_PATH + 256]; /* the trash's real path / the payload's name */
    char ledger[SW_PAYLOAD_RETIRE_PATH];   /* the ledger asked (and written) */
    bool trash_exists;                     /* before the move (it is created when missing) */
    const char *method;                    /* "rename" (one filesystem) or "copy" */
    int64_t files, bytes;                  /* files and links; bytes of the files */
    json_t *needed_by; /* the kept tags that need it: [{tag, endpoint, last_good, paths, ...}]
                          (sw_ledger_tags_needing); not empty: refused, nothing moved */
    bool moved;
    int64_t move_id; /* the ledger's payload_moves row */
};

/*
 * Move payload_dir to trash_dir/<its name> unless a kept tag needs it (r->needed_by not empty:
 * returns 0, nothing moved) or o->dry_run (0, nothing moved): one rename(2) within a filesystem,
 * else a copy into a hidden partial beside the destination, verified byte for byte, renamed, and
 * only then the source removed; then the move recorded in the ledger. A failure before the
 * removal leaves the source as it was and no partial copy ("nothing was moved" in e).
 * Errors: SW_ENOENT (not a directory), SW_EINVAL (/, a trash that is not a directory or is
 * inside the payload), SW_EEXIST (the destination exists), SW_ERANGE (a path too long),
 * SW_EUNSUPPORTED (an entry that is neither file, directory nor link), SW_EIO, the ledger's.
 */
int sw_payload_retire(const char *payload_dir, const char *trash_dir,
                      const struct sw_payload_retire_opts *o, struct sw_payload_retire *r,
                      struct sw_err *e);

#ifdef __cplusplus
}
#endif
#endif
