/*
 * payload/download_present: what a fetch finds already there, before it transfers a byte.
 *
 * Each file of the manifest gets its target (dest/<path>, or the HF cache's blobs/<hash>; for a
 * file with no hash to name its blob, blobs/unverified-<sha256 of commit and path>) and is looked
 * at through no link below the root: a regular file at the target, else (cache mode) the blob an
 * earlier accepted unverified download's snapshot link names, else (dest mode) the HF cache's blob
 * of that hash. Those candidates are hashed together (sw_payload_hash_files, one file per core;
 * a file whose only hash is its git oid is hashed here, sequentially): a right one is PRESENT, or
 * LINKED into dest (a hard link, else a copy renamed into place); a wrong one where the payload's
 * file goes is removed, since it must not reach an engine. A .incomplete found is measured
 * (r->had) for the transfer to resume.
 *
 * What it does not do: transfer anything (download_xfer.c), or follow a link to find a file (a
 * link where a file should be fails that file, naming it).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "payload/download_internal.h"

/* A file found: where its bytes are and what they must hash to. */
struct cand {
    size_t i;
    char path[PATH_MAX];                  /* where the bytes are */
    bool from_cache;                      /* an HF cache blob to link into dest */
    char want[SW_PAYLOAD_SHA256_HEX + 1]; /* the sha256 they must have: the manifest's, or for an
                                             unverified blob the one that names it */
};

/* Does the file at path hold f's bytes? *ok false with why in msg when not. */
static int check_file(const char *path, const struct sw_payload_file *f, bool *ok, char sha_out[65],
                      char *msg, size_t msgn, struct sw_err *e)
{
    *ok = false;
    sha_out[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    int rc = 0;
    EVP_MD_CTX *a = EVP_MD_CTX_new(), *b = NULL;
    if (fstat(fd, &st) != 0 || !a) {
        rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (f->size_known && (uint64_t)st.st_size != f->size) {
        snprintf(msg, msgn, "%s is %llu bytes, the manifest says %llu", path,
                 (unsigned long long)st.st_size, (unsigned long long)f->size);
        goto out;
    }
    EVP_DigestInit_ex(a, EVP_sha256(), NULL);
    if (!f->sha256[0] && f->git_oid) {
        b = EVP_MD_CTX_new();
        if (!b || sw__payload_git_blob_init(b, (uint64_t)st.st_size)) {
            rc = sw_err_set(e, SW_ENOMEM, "%s: cannot set up SHA-1", path);
            goto out;
        }
    }
    rc = sw__fetch_hash_fd(fd, (uint64_t)st.st_size, a, b, path, e);
    if (rc)
        goto out;
    unsigned char d[32];
    unsigned dl = 32;
    EVP_DigestFinal_ex(a, d, &dl);
    sw__payload_hex(d, 32, sha_out);
    if (f->sha256[0]) {
        *ok = !strcmp(sha_out, f->sha256);
        if (!*ok)
            snprintf(msg, msgn, "%s hashes to sha256 %s, the manifest says %s", path, sha_out,
                     f->sha256);
    } else if (b) {
        char oid[41];
        dl = 20;
        EVP_DigestFinal_ex(b, d, &dl);
        sw__payload_hex(d, 20, oid);
        *ok = !strcasecmp(oid, f->git_oid);
        if (!*ok)
            snprintf(msg, msgn, "%s hashes to git blob %s, the manifest says %s", path, oid,
                     f->git_oid);
    } else {
        *ok = true; /* nothing to compare with: the size (if known) is all there is */
    }
out:
    EVP_MD_CTX_free(a);
    EVP_MD_CTX_free(b);
    close(fd);
    return rc;
}

/* blobs/unverified-<sha256 of "slipway-unverified\n<commit>\n<path>">: a name of our own for a
 * file with no hash to name its blob (an ETag never names a file), until the bytes are in and
 * their sha256 names it. */
static int unverified_blob(const struct sw__fetch *ft, const struct sw_payload_file *f,
                           char key[80], struct sw_err *e)
{
    unsigned char d[32];
    unsigned dl = 32;
    char hx[65];
    struct sw_buf b;
    sw_buf_init(&b, 2 * SW_PAYLOAD_MAX_PATH);
    int brc = sw_buf_printf(&b, "slipway-unverified\n%s\n%s", ft->m->commit, f->path);
    if (!brc && EVP_Digest(sw_buf_cstr(&b), b.len, d, &dl, EVP_sha256(), NULL) != 1)
        brc = SW_ENOMEM;
    sw_buf_free(&b);
    if (brc)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    sw__payload_hex(d, 32, hx);
    snprintf(key, 80, "unverified-%s", hx);
    return 0;
}

static int target_of(const struct sw__fetch *ft, const struct sw_payload_file *f, char *out,
                     size_t n, struct sw_err *e)
{
    int w;
    if (ft->cache_mode) {
        const char *blob = sw_hfcache_blob_name(f);
        char key[80];
        if (!blob) {
            int rc = unverified_blob(ft, f, key, e);
            if (rc)
                return rc;
            blob = key;
        }
        w = snprintf(out, n, "%s/blobs/%s", ft->repo_dir, blob);
    } else {
        w = snprintf(out, n, "%s/%s", ft->o->dest, f->path);
    }
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "%s: path too long", f->path);
    return 0;
}

/* A regular file at path (under root) through no link: 0, SW_ENOENT when absent, an error
 * naming it when it is a link (on the way or itself) or not a regular file. */
static int regular_at(const struct sw__fetch *ft, const char *path, struct stat *st,
                      struct sw_err *e)
{
    int rc = sw__nf_lstat(ft->root, sw__fetch_rel(ft, path), path, st, e);
    if (rc == 0 && !S_ISREG(st->st_mode))
        return sw_err_set(e, SW_EIO, "%s is not a regular file", path);
    return rc;
}

/* What is at r's target, looked at through no link below the root: *there when a regular file
 * is, r->had the size of a regular .incomplete. A link at either or on the way, or something
 * that is not a regular file, is an error naming it. A missing directory is no file. */
static int inspect(const struct sw__fetch *ft, struct sw_fetch_result *r, bool *there,
                   struct sw_err *e)
{
    char tmp[sizeof(r->target) + 16];
    struct stat st;
    *there = false;
    r->had = 0;
    int rc = regular_at(ft, r->target, &st, e);
    if (rc && rc != SW_ENOENT)
        return rc;
    *there = rc == 0;
    snprintf(tmp, sizeof(tmp), "%s.incomplete", r->target);
    rc = regular_at(ft, tmp, &st, e);
    if (rc && rc != SW_ENOENT)
        return rc;
    if (rc == 0)
        r->had = (uint64_t)st.st_size;
    return 0;
}

/* The blob an unverified file's snapshot link names when it is the link this file writes,
 * "<one ../ per level>../../blobs/<64 hex>" (the sha256 of the bytes it was given): 0 with hex,
 * else SW_ENOENT. The link is read, never followed. */
static int snapshot_blob(const struct sw__fetch *ft, const struct sw_payload_file *f,
                         char hex[SW_PAYLOAD_SHA256_HEX + 1])
{
    char rel[PATH_MAX], want[PATH_MAX], have[PATH_MAX];
    int dfd;
    const char *base;
    struct sw_err e;
    int w = snprintf(rel, sizeof(rel), "snapshots/%s/%s", ft->m->commit, f->path);
    if (w < 0 || (size_t)w >= sizeof(rel) ||
        sw__nf_parent(ft->repo_dir, rel, false, &dfd, &base, &e))
        return SW_ENOENT;
    ssize_t n = readlinkat(dfd, base, have, sizeof(have) - 1);
    close(dfd);
    if (n < 0)
        return SW_ENOENT;
    have[n] = '\0';
    if (sw__hfcache_blob_target(f->path, "", want, sizeof(want)))
        return SW_ENOENT;
    size_t wl = strlen(want);
    if (strncmp(have, want, wl) != 0 || strlen(have + wl) != SW_PAYLOAD_SHA256_HEX ||
        strspn(have + wl, "0123456789abcdef") != SW_PAYLOAD_SHA256_HEX)
        return SW_ENOENT;
    memcpy(hex, have + wl, SW_PAYLOAD_SHA256_HEX + 1);
    return 0;
}

/* The cache's blobs/<name> as a candidate for f, when it is a regular file (a blob reached
 * through a link is not the cache's: not used) of f's size. */
static bool blob_candidate(const struct sw__fetch *ft, const struct sw_payload_file *f,
                           const char *name, struct cand *c)
{
    char bp[PATH_MAX];
    struct stat st;
    struct sw_err be;
    int bw = snprintf(bp, sizeof(bp), "%s/blobs/%s", ft->repo_dir, name);
    if (bw <= 0 || (size_t)bw >= sizeof(bp) ||
        sw__nf_lstat(ft->repo_dir, bp + strlen(ft->repo_dir) + 1, bp, &st, &be) != 0 ||
        !S_ISREG(st.st_mode) || (f->size_known && (uint64_t)st.st_size != f->size))
        return false;
    snprintf(c->path, sizeof(c->path), "%s", bp);
    return true;
}

/* File i's target, and what of it is there already: true with *c filled when there is a
 * candidate to hash. A target that cannot be looked at fails the file. */
static bool candidate_of(struct sw__fetch *ft, size_t i, struct cand *c)
{
    const struct sw_payload_file *f = &ft->m->files[i];
    struct sw_fetch_result *r = &ft->rep->files[i];
    struct sw_err te;
    bool there = false;
    memset(c, 0, sizeof(*c));
    c->i = i;
    if (target_of(ft, f, r->target, sizeof(r->target), &te) || inspect(ft, r, &there, &te)) {
        sw__fetch_fail(ft, r, te.code, "%s", te.msg);
        return false;
    }
    if (there) {
        snprintf(c->path, sizeof(c->path), "%s", r->target);
        snprintf(c->want, sizeof(c->want), "%s", f->sha256);
        return true;
    }
    char hx[SW_PAYLOAD_SHA256_HEX + 1];
    if (ft->cache_mode && r->unverified && snapshot_blob(ft, f, hx) == 0) {
        /* fetched (and accepted) before: its blob is named by the sha256 of its bytes */
        if (!blob_candidate(ft, f, hx, c))
            return false;
        snprintf(c->want, sizeof(c->want), "%s", hx);
        return true;
    }
    const char *blob = sw_hfcache_blob_name(f);
    if (ft->cache_mode || !ft->repo_dir[0] || !blob || !blob_candidate(ft, f, blob, c))
        return false;
    c->from_cache = true;
    snprintf(c->want, sizeof(c->want), "%s", f->sha256);
    return true;
}

/* A blob from the HF cache into dest (to, under the root): a hard link when both are on one file
 * system, else a copy through a temporary file renamed into place; no link followed below the
 * root. */
static int link_or_copy(const struct sw__fetch *ft, const char *from, const char *to,
                        struct sw_err *e)
{
    int dfd = -1, in = -1, out = -1;
    const char *base;
    char tmp[NAME_MAX + 1] = "";
    char *buf = NULL;
    int rc = sw__nf_parent(ft->root, sw__fetch_rel(ft, to), true, &dfd, &base, e);
    if (rc)
        return rc;
    rc = sw__nf_sibling(base, ".slipway-copy", to, tmp, e);
    if (rc)
        goto out;
    unlinkat(dfd, tmp, 0);
    if (linkat(AT_FDCWD, from, dfd, tmp, 0) == 0) {
        if (renameat(dfd, tmp, dfd, base) != 0)
            rc = sw_err_set(e, SW_EIO, "rename %s: %s", to, strerror(errno));
        goto out;
    }
    in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    buf = sw_malloc(SW_PAYLOAD_READ_BUF);
    if (in < 0 || out < 0 || !buf) {
        rc = sw_err_set(e, SW_EIO, "copy %s: %s", from, strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t r = read(in, buf, SW_PAYLOAD_READ_BUF);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = sw_err_set(e, SW_EIO, "read %s: %s", from, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        for (ssize_t w = 0; w < r;) {
            ssize_t k = write(out, buf + w, (size_t)(r - w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                rc = sw_err_set(e, SW_EIO, "write %s.slipway-copy: %s", to, strerror(errno));
                goto out;
            }
            w += k;
        }
    }
    if (fsync(out) != 0 || renameat(dfd, tmp, dfd, base) != 0)
        rc = sw_err_set(e, SW_EIO, "%s: %s", to, strerror(errno));
out:
    sw_free(buf);
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (rc && tmp[0])
        unlinkat(dfd, tmp, 0);
    close(dfd);
    return rc;
}

/* A candidate whose bytes are right (got: their sha256): PRESENT, or LINKED into dest. */
static void accept_found(struct sw__fetch *ft, const struct cand *c, const char *got)
{
    const struct sw_payload_file *f = &ft->m->files[c->i];
    struct sw_fetch_result *r = &ft->rep->files[c->i];
    snprintf(r->sha256, sizeof(r->sha256), "%s", got);
    if (c->from_cache) {
        struct sw_err le;
        if (!ft->o->dry_run && link_or_copy(ft, c->path, r->target, &le)) {
            sw__fetch_fail(ft, r, le.code, "%s", le.msg);
            return;
        }
        r->state = SW_FETCH_LINKED;
        snprintf(r->msg, sizeof(r->msg), "found in the HF cache (%s)", c->path);
    } else {
        r->state = SW_FETCH_PRESENT;
        if (!f->sha256[0] && c->want[0]) /* an unverified file's blob */
            snprintf(r->target, sizeof(r->target), "%s", c->path);
    }
    if (r->unverified && c->want[0])
        snprintf(r->msg, sizeof(r->msg),
                 "unverified: accepted before (--allow-unverified); its bytes still hash to the "
                 "name of its blob");
    else if (r->unverified)
        snprintf(r->msg, sizeof(r->msg),
                 "unverified: no sha256 or git oid to check it against, only its size");
}

/* Judge one candidate: hashed is its sha256 from the parallel pass, or NULL to hash it here. */
static void judge_found(struct sw__fetch *ft, const struct cand *c, const char *hashed)
{
    const struct sw_payload_file *f = &ft->m->files[c->i];
    struct sw_fetch_result *r = &ft->rep->files[c->i];
    bool ok = false;
    char got[65] = "", why[900] = "";
    if (hashed) {
        snprintf(got, sizeof(got), "%s", hashed);
        ok = !strcmp(got, c->want);
        if (!ok)
            snprintf(why, sizeof(why), "%s hashes to sha256 %s, %s %s", c->path, got,
                     f->sha256[0] ? "the manifest says" : "its name says", c->want);
    } else {
        struct sw_err ce;
        if (check_file(c->path, f, &ok, got, why, sizeof(why), &ce)) {
            ok = false;
            snprintf(why, sizeof(why), "%.880s", ce.msg);
        }
    }
    if (ok) {
        accept_found(ft, c, got);
    } else if (!c->from_cache) {
        /* a wrong file where the payload's file goes must not stay there */
        if (!ft->o->dry_run)
            sw__nf_unlink(ft->root, sw__fetch_rel(ft, c->path));
        snprintf(r->msg, sizeof(r->msg), "%s: %s", ft->o->dry_run ? "wrong" : "removed", why);
        sw_log(SW_LOG_WARN, "%s", r->msg);
    }
}

/* Hash the candidates: those with a sha256 to match in parallel (one per core), git-oid ones
 * (and any the parallel pass could not read) one by one; then judge each. */
static int hash_candidates(struct sw__fetch *ft, const struct cand *cand, size_t ncand,
                           struct sw_err *e)
{
    size_t n = ncand ? ncand : 1;
    const char **paths = sw_calloc(n, sizeof(*paths));
    char(*sha)[SW_PAYLOAD_SHA256_HEX + 1] = sw_calloc(n, sizeof(*sha));
    uint64_t *sizes = sw_calloc(n, sizeof(*sizes));
    size_t *slot = sw_calloc(n, sizeof(*slot)); /* candidate -> its place in paths, or n */
    size_t np = 0;
    int rc = 0;
    if (!paths || !sha || !sizes || !slot) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t c = 0; c < ncand; c++) {
        const struct sw_payload_file *f = &ft->m->files[cand[c].i];
        struct stat st;
        slot[c] = n;
        if (cand[c].want[0] && stat(cand[c].path, &st) == 0 &&
            (!f->size_known || (uint64_t)st.st_size == f->size)) {
            paths[np] = cand[c].path; /* absolute: root "" */
            slot[c] = np++;
        }
    }
    struct sw_verify_opts vo = {0};
    struct sw_err he;
    bool hashed = np == 0 || sw_payload_hash_files("", paths, np, &vo, sha, sizes, &he) == 0;
    for (size_t c = 0; c < ncand; c++)
        judge_found(ft, &cand[c], slot[c] < np && hashed ? sha[slot[c]] : NULL);
out:
    sw_free(paths);
    sw_free(sha);
    sw_free(sizes);
    sw_free(slot);
    return rc;
}

int sw__fetch_present(struct sw__fetch *ft, struct sw_err *e)
{
    const struct sw_payload_manifest *m = ft->m;
    size_t ncand = 0;
    struct cand *cand = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*cand));
    if (!cand)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->n_files; i++)
        if (candidate_of(ft, i, &cand[ncand]))
            ncand++;
    int rc = hash_candidates(ft, cand, ncand, e);
    sw_free(cand);
    return rc;
}
