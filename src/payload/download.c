/*
 * payload/download: fetch a manifest's files, verified, resumable, several at once.
 *
 * Each file goes to <target>.incomplete (target: dest/<path>, or the HF cache's blobs/<etag>),
 * written and hashed (SHA-256, and the git blob sha1 for a regular file whose only hash is its
 * git oid) as the bytes arrive in net's on_data, and is renamed to <target> only when its size
 * and hash match the manifest. A .incomplete found at start is re-hashed and resumed with
 * "Range: bytes=N-"; a 206 must start at N; a 200 means the server ignored the Range: the file
 * is truncated and restarted from byte 0, and the result says so. A transfer that is cut leaves
 * its .incomplete (the bytes it holds are the file's first bytes: resumable); bytes that are
 * known bad (a hash mismatch, an HTML page, an LFS pointer, more bytes than announced) are
 * removed. Nothing that failed is ever at <target>.
 *
 * The transfers share one net loop (libcurl multi on libevent, net.h): N at once, the next one
 * started from the previous one's on_done; the loop gives connection reuse, the four timeouts,
 * fail_on_status (an error page never reaches on_data) and a token that is not sent to another
 * host on a redirect. Hashing and writing happen on the loop's thread: at the rates a network
 * delivers, SHA-256 (hundreds of MB/s per core with SHA-NI) is not the bottleneck; re-hashing
 * files already present is, and it runs in parallel through sw_payload_hash_files.
 *
 * Nothing is reached through a symbolic link below the root (dest, or the cache's
 * models--org--name): directories are walked with O_NOFOLLOW from the root's descriptor
 * (payload/nofollow.c), the .incomplete is opened with O_NOFOLLOW relative to its directory's
 * descriptor, renamed and removed relative to it, and a link met on the way is refused with its
 * path (the file fails; nothing outside is read, appended to or removed).
 *
 * A file the manifest has no sha256 or git oid for (the Hub's ETag was neither) is "unverified":
 * its size and kind are all that can be checked. Unless the caller allows it, its bytes are kept
 * in the .incomplete and not renamed into place, and the fetch fails. An ETag never names a file:
 * in the HF cache such a file is fetched to blobs/unverified-<sha256 of commit and path>
 * .incomplete and, accepted, renamed to blobs/<sha256 of its bytes>.
 *
 * What it does not do: retry (running again resumes), follow a moving branch (the URLs carry the
 * manifest's commit), hold locks against another process fetching the same blob.
 */
#include <slipway/fetch.h>
#include <slipway/net.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "payload/payload_internal.h"

static const char *const state_names[SW_FETCH__N] = {"pending",    "present", "linked",
                                                     "downloaded", "planned", "failed"};

const char *sw_fetch_state_name(enum sw_fetch_state s)
{
    return (unsigned)s < SW_FETCH__N ? state_names[s] : "?";
}

struct fetch;

struct job {
    struct fetch *ft;
    int dfd; /* the directory of the .incomplete and the target, opened without links */
    struct sw_fetch_result *res;
    const struct sw_payload_file *f;
    char tmp[PATH_MAX + 16];
    char url[4096];
    char range[64];
    const char *hdrs[2];
    int fd;
    EVP_MD_CTX *sha256;
    EVP_MD_CTX *sha1; /* git blob sha1, when the file's only hash is its git oid */
    uint64_t offset;  /* bytes in the .incomplete now */
    uint64_t asked;   /* the Range start asked for */
    char head[SW_PAYLOAD_SNIFF_HEAD];
    size_t head_n;
    bool head_judged;
    bool from_zero; /* this transfer's bytes start at 0: the head is the file's head */
    bool bad_bytes; /* what is in the .incomplete must not be kept */
    int abort_rc;
    char abort_msg[1024];
    struct sw_net_xfer x;
};

struct fetch {
    const struct sw_payload_manifest *m;
    const struct sw_fetch_opts *o;
    struct sw_fetch_report *rep;
    struct sw_net_loop loop;
    struct job **queue;
    size_t nq, next, running, parallel;
    char repo_dir[PATH_MAX];
    const char *root; /* dest, or repo_dir: nothing below it is reached through a link */
    size_t root_len;
    bool cache_mode;
    const char *ep;
    const char *tok;
    struct sw_progress prog;
    uint64_t progress_done;
    int interrupted; /* the signal that stopped the fetch, 0 when none */
    struct event *sig[2];
};

static void tohex(const unsigned char *d, unsigned n, char *out)
{
    static const char h[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        out[2 * i] = h[d[i] >> 4];
        out[2 * i + 1] = h[d[i] & 15];
    }
    out[2 * n] = '\0';
}

/* A hash to check the bytes against: without one a file can only be unverified. */
static bool has_hash(const struct sw_payload_file *f)
{
    return f->sha256[0] || (f->git_oid && f->git_oid[0]);
}

/* path (root/rel) relative to the fetch's root */
static const char *rel_of(const struct fetch *ft, const char *path)
{
    return path + ft->root_len + 1;
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* lstat of root/rel, no link followed below root (path names it in messages). */
static int nf_lstat(const char *root, const char *rel, const char *path, struct stat *st,
                    struct sw_err *e)
{
    int dfd;
    const char *base;
    int rc = sw__nf_parent(root, rel, false, &dfd, &base, e);
    if (rc)
        return rc;
    rc = sw__nf_stat(dfd, base, path, st, e);
    close(dfd);
    return rc;
}

/* Remove path (under the root) when it is there, through no link. */
static void unlink_under(struct fetch *ft, const char *path)
{
    int dfd;
    const char *base;
    struct sw_err ue;
    if (sw__nf_parent(ft->root, rel_of(ft, path), false, &dfd, &base, &ue))
        return;
    unlinkat(dfd, base, 0);
    close(dfd);
}

static void redact(struct fetch *ft, char *s)
{
    if (ft->tok)
        sw_redact(s, ft->tok);
}

static int hashes_init(struct job *j)
{
    if (!j->sha256)
        j->sha256 = EVP_MD_CTX_new();
    if (!j->sha256 || !EVP_DigestInit_ex(j->sha256, EVP_sha256(), NULL))
        return SW_ENOMEM;
    if (!j->f->sha256[0] && j->f->git_oid) {
        if (!j->sha1)
            j->sha1 = EVP_MD_CTX_new();
        if (!j->sha1 || !EVP_DigestInit_ex(j->sha1, EVP_sha1(), NULL))
            return SW_ENOMEM;
        char pre[48];
        int n = snprintf(pre, sizeof(pre), "blob %llu", (unsigned long long)j->f->size);
        EVP_DigestUpdate(j->sha1, pre, (size_t)n + 1); /* git hashes the header's NUL too */
    }
    return 0;
}

static void hashes_update(struct job *j, const void *p, size_t n)
{
    EVP_DigestUpdate(j->sha256, p, n);
    if (j->sha1)
        EVP_DigestUpdate(j->sha1, p, n);
}

static void hashes_free(struct job *j)
{
    EVP_MD_CTX_free(j->sha256);
    EVP_MD_CTX_free(j->sha1);
    j->sha256 = j->sha1 = NULL;
}

/* The sha256 (and git sha1) of a file on disk, sequentially: for the small regular files whose
 * only hash is their git oid, and for a .incomplete's prefix. */
static int hash_fd(int fd, uint64_t len, EVP_MD_CTX *a, EVP_MD_CTX *b, struct sw_err *e,
                   const char *path)
{
    size_t bufn = SW_PAYLOAD_READ_BUF;
    char *buf = sw_malloc(bufn);
    if (!buf)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    uint64_t off = 0;
    int rc = 0;
    while (off < len) {
        size_t want = (size_t)SW_MIN((uint64_t)bufn, len - off);
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = sw_err_set(e, SW_EIO, "%s: read at %llu: %s", path, (unsigned long long)off,
                            r < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        EVP_DigestUpdate(a, buf, (size_t)r);
        if (b)
            EVP_DigestUpdate(b, buf, (size_t)r);
        off += (uint64_t)r;
    }
    sw_free(buf);
    return rc;
}

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
        EVP_DigestInit_ex(b, EVP_sha1(), NULL);
        char pre[48];
        int n = snprintf(pre, sizeof(pre), "blob %llu", (unsigned long long)st.st_size);
        EVP_DigestUpdate(b, pre, (size_t)n + 1);
    }
    rc = hash_fd(fd, (uint64_t)st.st_size, a, b, e, path);
    if (rc)
        goto out;
    unsigned char d[32];
    unsigned dl = 32;
    EVP_DigestFinal_ex(a, d, &dl);
    tohex(d, 32, sha_out);
    if (f->sha256[0]) {
        *ok = !strcmp(sha_out, f->sha256);
        if (!*ok)
            snprintf(msg, msgn, "%s hashes to sha256 %s, the manifest says %s", path, sha_out,
                     f->sha256);
    } else if (b) {
        char oid[41];
        dl = 20;
        EVP_DigestFinal_ex(b, d, &dl);
        tohex(d, 20, oid);
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

static int target_of(struct fetch *ft, const struct sw_payload_file *f, char *out, size_t n,
                     struct sw_err *e)
{
    int w;
    if (ft->cache_mode) {
        const char *blob = sw_hfcache_blob_name(f);
        char key[80];
        if (!blob) {
            /* no hash to name its blob (an ETag never names a file): a name of our own, from
             * the commit and the path, until the bytes are in and their sha256 names it */
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
            tohex(d, 32, hx);
            snprintf(key, sizeof(key), "unverified-%s", hx);
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

/* A blob from the HF cache into dest (to, under the root): a hard link when both are on one file
 * system, else a copy through a temporary file renamed into place; no link followed below the
 * root. */
static int link_or_copy(struct fetch *ft, const char *from, const char *to, struct sw_err *e)
{
    int dfd = -1, in = -1, out = -1;
    const char *base;
    char tmp[NAME_MAX + 1] = "";
    char *buf = NULL;
    int rc = sw__nf_parent(ft->root, rel_of(ft, to), true, &dfd, &base, e);
    if (rc)
        return rc;
    if (strlen(base) + sizeof(".slipway-copy") > sizeof(tmp)) {
        rc = sw_err_set(e, SW_ERANGE, "%s: file name too long", to);
        goto out;
    }
    snprintf(tmp, sizeof(tmp), "%s.slipway-copy", base);
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

static void fail_job(struct job *j, int rc, const char *fmt, ...) SW_PRINTF(3, 4);
static void fail_job(struct job *j, int rc, const char *fmt, ...)
{
    struct sw_fetch_result *r = j->res;
    r->state = SW_FETCH_FAILED;
    r->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    redact(j->ft, r->msg);
}

static void finished(struct fetch *ft, struct job *j)
{
    if (ft->o->on_file)
        ft->o->on_file(ft->o->ud, j->res);
}

/* ------------------------------------------------------------------------------------------- */

static int job_abort(struct job *j, int rc, const char *fmt, ...) SW_PRINTF(3, 4);
static int job_abort(struct job *j, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->abort_msg, sizeof(j->abort_msg), fmt, ap);
    va_end(ap);
    j->abort_rc = rc;
    return rc;
}

static int on_head(void *ud, struct sw_net_xfer *x)
{
    struct job *j = ud;
    long st = x->resp.status;
    if (st >= 400)
        return 0; /* fail_on_status ends it with the error body kept for the message */
    const char *xc = sw_net_resp_header(&x->resp, "x-repo-commit");
    if (xc && j->ft->m->commit && strcasecmp(xc, j->ft->m->commit) != 0)
        return job_abort(j, SW_EMISMATCH,
                         "the server answered %s for commit %s with commit %.40s: nothing "
                         "written",
                         j->f->path, j->ft->m->commit, xc);
    if (st == 206) {
        const char *cr = sw_net_resp_header(&x->resp, "content-range");
        unsigned long long s = 0;
        if (!cr || sscanf(cr, "bytes %llu-", &s) != 1 || s != j->asked)
            return job_abort(j, SW_EHTTP,
                             "asked for bytes %llu- of %s, the server sent Content-Range "
                             "\"%.80s\": the partial file is kept; run again",
                             (unsigned long long)j->asked, j->f->path, cr ? cr : "(none)");
        j->from_zero = j->asked == 0;
        return 0;
    }
    if (st != 200)
        return job_abort(j, SW_EHTTP, "HTTP %ld for %s: not the file", st, j->f->path);
    if (j->asked > 0) {
        /* the server ignored the Range: its bytes start at 0 */
        j->res->range_ignored = true;
        if (ftruncate(j->fd, 0) != 0)
            return job_abort(j, SW_EIO, "truncate %s: %s", j->tmp, strerror(errno));
        if (hashes_init(j))
            return job_abort(j, SW_ENOMEM, "out of memory");
        j->ft->progress_done -= SW_MIN(j->ft->progress_done, j->res->fetched);
        j->offset = 0;
        j->res->fetched = 0;
        snprintf(j->res->msg, sizeof(j->res->msg),
                 "the server ignored Range (200 instead of 206 for bytes %llu-): restarted "
                 "%s from byte 0",
                 (unsigned long long)j->asked, j->f->path);
        sw_log(SW_LOG_WARN, "%s", j->res->msg);
    }
    j->from_zero = true;
    return 0;
}

static int judge_head(struct job *j)
{
    j->head_judged = true;
    struct sw_payload_sniff sn;
    struct sw_err se;
    sw_err_clear(&se);
    uint64_t size = j->f->size_known ? j->f->size : 0;
    if (sw_payload_sniff_head(j->f->path, j->head, j->head_n, size, &sn, &se) == SW_EMISMATCH) {
        j->bad_bytes = true;
        return job_abort(j, SW_EMISMATCH, "the server sent %s for %s: %s",
                         sw_payload_body_name(sn.body), j->f->path, sn.msg);
    }
    return 0;
}

static int on_data(void *ud, struct sw_net_xfer *x, const char *p, size_t n, uint64_t t)
{
    struct job *j = ud;
    if (j->f->size_known && j->offset + n > j->f->size) {
        j->bad_bytes = true;
        return job_abort(j, SW_EMISMATCH,
                         "the server sends more than the %llu bytes announced for %s: removed",
                         (unsigned long long)j->f->size, j->f->path);
    }
    if (j->from_zero && !j->head_judged && j->head_n < sizeof(j->head)) {
        size_t k = SW_MIN(n, sizeof(j->head) - j->head_n);
        memcpy(j->head + j->head_n, p, k);
        j->head_n += k;
        uint64_t want = sizeof(j->head);
        if (j->f->size_known && j->f->size < want)
            want = j->f->size;
        if (j->head_n >= want) {
            int rc = judge_head(j);
            if (rc)
                return rc;
        }
    }
    size_t w = 0;
    while (w < n) {
        ssize_t k = pwrite(j->fd, p + w, n - w, (off_t)(j->offset + w));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int err = errno;
            bool full = err == ENOSPC || err == EFBIG || err == EDQUOT;
            /* only whole pieces count: the partial file ends where the hash ends */
            if (ftruncate(j->fd, (off_t)j->offset) != 0) {
                /* nothing more to do: a resume re-hashes whatever is there */
            }
            return job_abort(j, SW_EIO,
                             "%s writing %s at byte %llu (%s): the %llu bytes before it are "
                             "kept in %s; %s",
                             full ? "no room on disk" : "cannot write", j->f->path,
                             (unsigned long long)j->offset, strerror(err),
                             (unsigned long long)j->offset, j->tmp,
                             full ? "free some space (or lift the file size limit) and run "
                                    "again to resume"
                                  : "run again to resume");
        }
        w += (size_t)k;
    }
    hashes_update(j, p, n);
    j->offset += n;
    j->res->fetched += n;
    j->ft->rep->bytes_fetched += n;
    j->ft->progress_done += n;
    sw_progress_update(&j->ft->prog, j->ft->progress_done);
    return 0;
}

static void start_more(struct fetch *ft);

/* The .incomplete removed, relative to its directory (never through a link). */
static void unlink_tmp(struct job *j)
{
    if (j->dfd >= 0)
        unlinkat(j->dfd, base_of(j->tmp), 0);
}

static void job_close(struct job *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->dfd >= 0)
        close(j->dfd);
    j->fd = j->dfd = -1;
    hashes_free(j);
}

/* Size and hash judged; rename into place, or say why not. */
static void complete(struct job *j)
{
    struct fetch *ft = j->ft;
    struct sw_fetch_result *r = j->res;
    const struct sw_payload_file *f = j->f;
    unsigned char d[32];
    unsigned dl = 32;
    EVP_DigestFinal_ex(j->sha256, d, &dl);
    tohex(d, 32, r->sha256);
    if (f->sha256[0] && strcmp(r->sha256, f->sha256) != 0) {
        unlink_tmp(j);
        fail_job(j, SW_EMISMATCH,
                 "sha256 mismatch for %s: the Hub announces %s, the %llu bytes received hash "
                 "to %s; removed (run again to fetch it anew)",
                 f->path, f->sha256, (unsigned long long)j->offset, r->sha256);
        return;
    }
    if (!f->sha256[0] && j->sha1) {
        char oid[41];
        dl = 20;
        EVP_DigestFinal_ex(j->sha1, d, &dl);
        tohex(d, 20, oid);
        if (strcasecmp(oid, f->git_oid) != 0) {
            unlink_tmp(j);
            fail_job(j, SW_EMISMATCH,
                     "git blob hash mismatch for %s: the Hub announces %s, the bytes hash to "
                     "%s; removed",
                     f->path, f->git_oid, oid);
            return;
        }
    }
    if (!f->sha256[0] && !j->sha1) {
        /* no hash known: what the body is, is the only check left */
        struct sw_payload_sniff sn;
        struct sw_err se;
        if (sw_payload_sniff_file(j->tmp, &sn, &se) == SW_EMISMATCH) {
            unlink_tmp(j);
            fail_job(j, SW_EMISMATCH, "%s: %s; removed", f->path, sn.msg);
            return;
        }
    }
    if (!has_hash(f) && !ft->o->allow_unverified) {
        fail_job(j, SW_EMISMATCH,
                 "%s is unverified: the Hub gave no sha256 (X-Linked-Etag) or git oid (ETag) to "
                 "check its %llu bytes against, only their size and kind; they are kept in %s, "
                 "not put in place. Run again with --allow-unverified to accept them (or pin "
                 "its sha256 in a manifest)",
                 f->path, (unsigned long long)j->offset, j->tmp);
        return;
    }
    if (fsync(j->fd) != 0) {
        fail_job(j, SW_EIO, "fsync %s: %s", j->tmp, strerror(errno));
        return;
    }
    const char *blob = sw_hfcache_blob_name(f);
    if (ft->cache_mode && !blob) {
        /* accepted unverified: its blob is named by the sha256 of the bytes received */
        blob = r->sha256;
        char *bn = strrchr(r->target, '/'); /* blobs/unverified-<64 hex>: longer than the hash */
        memcpy(bn + 1, blob, SW_PAYLOAD_SHA256_HEX + 1);
    }
    if (renameat(j->dfd, base_of(j->tmp), j->dfd, base_of(r->target)) != 0) {
        fail_job(j, SW_EIO, "rename %s: %s", r->target, strerror(errno));
        return;
    }
    if (ft->cache_mode) {
        struct sw_err le;
        if (sw_hfcache_link(ft->repo_dir, ft->m->commit, f->path, blob, &le)) {
            fail_job(j, le.code, "%s", le.msg);
            return;
        }
    }
    r->state = SW_FETCH_DOWNLOADED;
    r->rc = 0;
}

static void on_done(void *ud, struct sw_net_xfer *x)
{
    struct job *j = ud;
    struct fetch *ft = j->ft;
    struct sw_fetch_result *r = j->res;
    const struct sw_payload_file *f = j->f;
    ft->running--;
    if (!x->resp.rc && j->from_zero && !j->head_judged && j->head_n > 0)
        judge_head(j); /* a body shorter than the sniff window */
    char url[512];
    sw_net_redact_url(j->url, url, sizeof(url));
    if (j->abort_rc) {
        if (j->bad_bytes || j->offset == 0)
            unlink_tmp(j);
        fail_job(j, j->abort_rc, "%s", j->abort_msg);
    } else if (x->resp.rc && x->resp.fail == SW_NET_CANCELLED && ft->interrupted) {
        if (j->offset == 0)
            unlink_tmp(j);
        fail_job(j, SW_EINTR, "%s: interrupted (%s) after %llu of %llu bytes%s%s%s", f->path,
                 strsignal(ft->interrupted), (unsigned long long)j->offset,
                 (unsigned long long)f->size, j->offset ? "; kept in " : "",
                 j->offset ? j->tmp : "", j->offset ? ": run again to resume" : "");
    } else if (x->resp.rc && x->resp.fail == SW_NET_HTTP_STATUS) {
        char sn[200];
        sw_payload_quote(x->resp.body.data ? x->resp.body.data : "", x->resp.body.len, 120, sn,
                         sizeof(sn));
        if (x->resp.status == 416)
            unlink_tmp(j); /* our partial is not a prefix the server recognises: start over */
        else if (j->offset == 0)
            unlink_tmp(j);
        fail_job(j, SW_EHTTP, "%s: %s (from %s)%s%s", f->path, x->resp.err.msg,
                 x->resp.err.where[0] ? x->resp.err.where : url,
                 j->offset ? "; the bytes received before are kept: run again to resume" : "",
                 x->resp.status == 416 ? "; the partial file was removed" : "");
    } else if (x->resp.rc) {
        fail_job(j, x->resp.rc,
                 "%s: the transfer was cut after %llu of %llu bytes (%s: %s); the %llu bytes are "
                 "kept in %s: run again to resume",
                 f->path, (unsigned long long)j->offset, (unsigned long long)f->size,
                 sw_net_fail_name(x->resp.fail), x->resp.err.msg, (unsigned long long)j->offset,
                 j->tmp);
    } else if (f->size_known && j->offset < f->size) {
        fail_job(j, SW_ETRUNC,
                 "%s: the server sent %llu of %llu bytes and said that was all; the %llu bytes "
                 "are kept in %s: run again to resume",
                 f->path, (unsigned long long)j->offset, (unsigned long long)f->size,
                 (unsigned long long)j->offset, j->tmp);
    } else {
        complete(j);
    }
    job_close(j);
    if (r->state == SW_FETCH_FAILED)
        sw_log(SW_LOG_INFO, "%s", r->msg);
    finished(ft, j);
    start_more(ft);
}

/* Open the .incomplete, re-hash what it holds, and either finish (it is whole) or start. */
static void begin(struct fetch *ft, struct job *j)
{
    struct sw_err e;
    sw_err_clear(&e);
    const struct sw_payload_file *f = j->f;
    const char *base;
    int rc = sw__nf_parent(ft->root, rel_of(ft, j->tmp), true, &j->dfd, &base, &e);
    if (rc) {
        fail_job(j, rc, "%s", e.msg);
        finished(ft, j);
        return;
    }
    j->fd = openat(j->dfd, base, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        if (errno == ELOOP) {
            rc = sw__nf_refuse_link(j->dfd, base, j->tmp, &e);
            fail_job(j, rc, "%s", e.msg);
        } else {
            fail_job(j, SW_EIO, "%s: %s", j->tmp, strerror(errno));
        }
        goto fail;
    }
    if (hashes_init(j)) {
        fail_job(j, SW_ENOMEM, "out of memory");
        goto fail;
    }
    struct stat st;
    if (fstat(j->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fail_job(j, SW_EIO, "%s: not a regular file", j->tmp);
        goto fail;
    }
    j->offset = (uint64_t)st.st_size;
    if (j->offset && hash_fd(j->fd, j->offset, j->sha256, j->sha1, &e, j->tmp)) {
        fail_job(j, e.code, "%s", e.msg);
        goto fail;
    }
    j->res->had = j->offset;
    if (f->size_known && j->offset == f->size) {
        complete(j); /* a previous run got every byte and stopped before the rename */
        job_close(j);
        finished(ft, j);
        return;
    }
    sw_net_xfer_init(&j->x);
    j->asked = j->offset;
    if (j->asked) {
        snprintf(j->range, sizeof(j->range), "Range: bytes=%llu-", (unsigned long long)j->asked);
        j->hdrs[0] = j->range;
        j->hdrs[1] = NULL;
        j->x.req.headers = j->hdrs;
    }
    j->x.req.url = j->url;
    j->x.req.bearer = ft->tok;
    j->x.req.max_redirects = 10;
    j->x.req.fail_on_status = true;
    j->x.req.idle_ms = 120000; /* a stalled transfer fails (resumable) instead of hanging */
    j->x.req.on_head = on_head;
    j->x.req.on_data = on_data;
    j->x.req.on_done = on_done;
    j->x.req.ud = j;
    rc = sw_net_start(&ft->loop, &j->x, &e);
    if (rc) {
        fail_job(j, rc, "%s", e.msg);
        goto fail;
    }
    ft->running++;
    return;
fail:
    job_close(j);
    finished(ft, j);
}

/* SIGINT / SIGTERM: cancel what runs (each keeps its .incomplete), start nothing more. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct fetch *ft = arg;
    (void)what;
    ft->interrupted = (int)sig;
    for (size_t i = 0; i < ft->next; i++)
        if (ft->queue[i]->x.state == SW_NET_RUNNING)
            sw_net_cancel(&ft->queue[i]->x);
}

static void start_more(struct fetch *ft)
{
    while (!ft->interrupted && ft->running < ft->parallel && ft->next < ft->nq)
        begin(ft, ft->queue[ft->next++]);
}

/* ------------------------------------------------------------------------------------------- */

/* What is at r's target, looked at through no link below the root: *there when a regular file
 * is, r->had the size of a regular .incomplete. A link at either or on the way, or something
 * that is not a regular file, is an error naming it. A missing directory is no file. */
static int inspect(struct fetch *ft, struct sw_fetch_result *r, bool *there, struct sw_err *e)
{
    char tmp[sizeof(r->target) + 16];
    struct stat st;
    *there = false;
    r->had = 0;
    int rc = nf_lstat(ft->root, rel_of(ft, r->target), r->target, &st, e);
    if (rc == 0 && !S_ISREG(st.st_mode))
        return sw_err_set(e, SW_EIO, "%s is not a regular file", r->target);
    if (rc && rc != SW_ENOENT)
        return rc;
    *there = rc == 0;
    snprintf(tmp, sizeof(tmp), "%s.incomplete", r->target);
    rc = nf_lstat(ft->root, rel_of(ft, tmp), tmp, &st, e);
    if (rc == 0 && !S_ISREG(st.st_mode))
        return sw_err_set(e, SW_EIO, "%s is not a regular file", tmp);
    if (rc && rc != SW_ENOENT)
        return rc;
    if (rc == 0)
        r->had = (uint64_t)st.st_size;
    return 0;
}

struct cand {
    size_t i;
    char path[PATH_MAX];                  /* where the bytes are */
    bool from_cache;                      /* an HF cache blob to link into dest */
    char want[SW_PAYLOAD_SHA256_HEX + 1]; /* the sha256 they must have: the manifest's, or for an
                                             unverified blob the one that names it */
};

/* The blob an unverified file's snapshot link names when it is the link this file writes,
 * "<one ../ per level>../../blobs/<64 hex>" (the sha256 of the bytes it was given): 0 with hex,
 * else SW_ENOENT. The link is read, never followed. */
static int snapshot_blob(struct fetch *ft, const struct sw_payload_file *f,
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
    size_t off = 0;
    want[0] = '\0';
    for (const char *p = f->path; *p && off < sizeof(want) - 4; p++)
        if (*p == '/')
            off += (size_t)snprintf(want + off, sizeof(want) - off, "../");
    snprintf(want + off, sizeof(want) - off, "../../blobs/");
    size_t wl = strlen(want);
    if (strncmp(have, want, wl) != 0 || strlen(have + wl) != SW_PAYLOAD_SHA256_HEX ||
        strspn(have + wl, "0123456789abcdef") != SW_PAYLOAD_SHA256_HEX)
        return SW_ENOENT;
    memcpy(hex, have + wl, SW_PAYLOAD_SHA256_HEX + 1);
    return 0;
}

int sw_fetch_run(const struct sw_payload_manifest *m, const struct sw_fetch_opts *o,
                 struct sw_fetch_report *out, struct sw_err *e)
{
    int rc = 0;
    struct fetch ft;
    memset(&ft, 0, sizeof(ft));
    memset(out, 0, sizeof(*out));
    struct job *jobs = NULL;
    bool loop_ok = false;
    double t0 = sw_now_s();
    ft.m = m;
    ft.o = o;
    ft.rep = out;
    ft.ep = o->endpoint ? o->endpoint : sw_hub_endpoint();
    ft.tok = o->token && *o->token ? o->token : NULL;
    ft.parallel = o->parallel ? o->parallel : 4;
    ft.cache_mode = o->dest == NULL;

    if (!m->repo || !m->commit) {
        rc = sw_err_set(e, SW_EINVAL, "the manifest names no %s: cannot fetch",
                        m->repo ? "commit (pin a revision)" : "repository");
        goto out;
    }
    out->files = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*out->files));
    jobs = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*jobs));
    ft.queue = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*ft.queue));
    if (!out->files || !jobs || !ft.queue) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    out->n_files = m->n_files;
    char cache[PATH_MAX] = "";
    if (o->cache) {
        snprintf(cache, sizeof(cache), "%s", o->cache);
    } else {
        rc = sw_hfcache_dir(cache, sizeof(cache), ft.cache_mode ? e : NULL);
        if (rc && ft.cache_mode)
            goto out;
        if (rc)
            cache[0] = '\0';
        rc = 0;
    }
    if (cache[0]) {
        rc = sw_hfcache_repo_dir(cache, m->repo, ft.repo_dir, sizeof(ft.repo_dir), e);
        if (rc)
            goto out;
    }
    int dw = ft.cache_mode
                 ? snprintf(out->dir, sizeof(out->dir), "%s/snapshots/%s", ft.repo_dir, m->commit)
                 : snprintf(out->dir, sizeof(out->dir), "%s", o->dest);
    if (dw < 0 || (size_t)dw >= sizeof(out->dir)) {
        rc = sw_err_set(e, SW_ERANGE, "the payload directory's path is too long");
        goto out;
    }
    ft.root = ft.cache_mode ? ft.repo_dir : o->dest;
    ft.root_len = strlen(ft.root);
    out->unverified_allowed = o->allow_unverified;

    /* what is already there */
    size_t ncand = 0;
    struct cand *cand = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*cand));
    if (!cand) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->n_files; i++) {
        const struct sw_payload_file *f = &m->files[i];
        struct sw_fetch_result *r = &out->files[i];
        r->file = f;
        r->unverified = !has_hash(f);
        if (f->size_known)
            out->bytes_total += f->size;
        struct sw_err te;
        bool there = false;
        if (target_of(&ft, f, r->target, sizeof(r->target), &te) || inspect(&ft, r, &there, &te)) {
            r->state = SW_FETCH_FAILED;
            r->rc = te.code;
            snprintf(r->msg, sizeof(r->msg), "%s", te.msg);
            redact(&ft, r->msg);
            continue;
        }
        struct stat st;
        if (there) {
            cand[ncand].i = i;
            snprintf(cand[ncand].path, sizeof(cand[ncand].path), "%s", r->target);
            snprintf(cand[ncand].want, sizeof(cand[ncand].want), "%s", f->sha256);
            ncand++;
            continue;
        }
        char hx[SW_PAYLOAD_SHA256_HEX + 1];
        if (ft.cache_mode && r->unverified && snapshot_blob(&ft, f, hx) == 0) {
            /* fetched (and accepted) before: its blob is named by the sha256 of its bytes */
            char bp[PATH_MAX];
            struct sw_err be;
            int bw = snprintf(bp, sizeof(bp), "%s/blobs/%s", ft.repo_dir, hx);
            if (bw > 0 && (size_t)bw < sizeof(bp) &&
                nf_lstat(ft.repo_dir, bp + strlen(ft.repo_dir) + 1, bp, &st, &be) == 0 &&
                S_ISREG(st.st_mode) && (!f->size_known || (uint64_t)st.st_size == f->size)) {
                cand[ncand].i = i;
                snprintf(cand[ncand].path, sizeof(cand[ncand].path), "%s", bp);
                snprintf(cand[ncand].want, sizeof(cand[ncand].want), "%s", hx);
                ncand++;
            }
            continue;
        }
        const char *blob = sw_hfcache_blob_name(f);
        if (!ft.cache_mode && ft.repo_dir[0] && blob) {
            char bp[PATH_MAX];
            int bw = snprintf(bp, sizeof(bp), "%s/blobs/%s", ft.repo_dir, blob);
            struct sw_err be;
            /* a blob reached through a link is not the cache's: not used */
            if (bw > 0 && (size_t)bw < sizeof(bp) &&
                nf_lstat(ft.repo_dir, bp + strlen(ft.repo_dir) + 1, bp, &st, &be) == 0 &&
                S_ISREG(st.st_mode) && (!f->size_known || (uint64_t)st.st_size == f->size)) {
                cand[ncand].i = i;
                cand[ncand].from_cache = true;
                snprintf(cand[ncand].path, sizeof(cand[ncand].path), "%s", bp);
                snprintf(cand[ncand].want, sizeof(cand[ncand].want), "%s", f->sha256);
                ncand++;
            }
        }
    }
    /* hash them: files with a sha256 in parallel (one per core), git-oid ones here */
    {
        const char **paths = sw_calloc(ncand ? ncand : 1, sizeof(*paths));
        char(*sha)[SW_PAYLOAD_SHA256_HEX + 1] = sw_calloc(ncand ? ncand : 1, sizeof(*sha));
        uint64_t *sizes = sw_calloc(ncand ? ncand : 1, sizeof(*sizes));
        size_t *which = sw_calloc(ncand ? ncand : 1, sizeof(*which));
        size_t np = 0;
        if (!paths || !sha || !sizes || !which) {
            sw_free(paths);
            sw_free(sha);
            sw_free(sizes);
            sw_free(which);
            sw_free(cand);
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t c = 0; c < ncand; c++) {
            const struct sw_payload_file *f = &m->files[cand[c].i];
            struct stat st;
            if (cand[c].want[0] && stat(cand[c].path, &st) == 0 &&
                (!f->size_known || (uint64_t)st.st_size == f->size)) {
                paths[np] = cand[c].path; /* absolute: root "" */
                which[np++] = c;
            }
        }
        struct sw_verify_opts vo = {0};
        struct sw_err he;
        bool hashed = np == 0 || sw_payload_hash_files("", paths, np, &vo, sha, sizes, &he) == 0;
        for (size_t c = 0; c < ncand; c++) {
            size_t i = cand[c].i;
            const struct sw_payload_file *f = &m->files[i];
            struct sw_fetch_result *r = &out->files[i];
            bool ok = false;
            char got[65] = "", why[900] = "";
            size_t k = 0;
            while (k < np && which[k] != c)
                k++;
            if (k < np && hashed) {
                snprintf(got, sizeof(got), "%s", sha[k]);
                ok = !strcmp(got, cand[c].want);
                if (!ok)
                    snprintf(why, sizeof(why), "%s hashes to sha256 %s, %s %s", cand[c].path, got,
                             f->sha256[0] ? "the manifest says" : "its name says", cand[c].want);
            } else {
                struct sw_err ce;
                if (check_file(cand[c].path, f, &ok, got, why, sizeof(why), &ce)) {
                    ok = false;
                    snprintf(why, sizeof(why), "%.880s", ce.msg);
                }
            }
            if (ok) {
                snprintf(r->sha256, sizeof(r->sha256), "%s", got);
                if (cand[c].from_cache) {
                    struct sw_err le;
                    if (!o->dry_run && link_or_copy(&ft, cand[c].path, r->target, &le)) {
                        r->state = SW_FETCH_FAILED;
                        r->rc = le.code;
                        snprintf(r->msg, sizeof(r->msg), "%s", le.msg);
                        continue;
                    }
                    r->state = SW_FETCH_LINKED;
                    snprintf(r->msg, sizeof(r->msg), "found in the HF cache (%s)", cand[c].path);
                } else {
                    r->state = SW_FETCH_PRESENT;
                    if (!f->sha256[0] && cand[c].want[0]) /* an unverified file's blob */
                        snprintf(r->target, sizeof(r->target), "%s", cand[c].path);
                }
                if (r->unverified && cand[c].want[0])
                    snprintf(r->msg, sizeof(r->msg),
                             "unverified: accepted before (--allow-unverified); its bytes still "
                             "hash to the name of its blob");
                else if (r->unverified)
                    snprintf(r->msg, sizeof(r->msg),
                             "unverified: no sha256 or git oid to check it against, only its "
                             "size");
            } else if (!cand[c].from_cache) {
                /* a wrong file where the payload's file goes must not stay there */
                if (!o->dry_run)
                    unlink_under(&ft, cand[c].path);
                snprintf(r->msg, sizeof(r->msg), "%s: %s", o->dry_run ? "wrong" : "removed", why);
                sw_log(SW_LOG_WARN, "%s", r->msg);
            }
        }
        sw_free(paths);
        sw_free(sha);
        sw_free(sizes);
        sw_free(which);
        sw_free(cand);
    }

    /* what must be fetched, and the room for it */
    for (size_t i = 0; i < m->n_files; i++) {
        struct sw_fetch_result *r = &out->files[i];
        const struct sw_payload_file *f = r->file;
        if (r->state != SW_FETCH_PENDING) {
            r->had = 0; /* resumed from nothing: it is not fetched */
            continue;
        }
        struct job *j = &jobs[i];
        j->ft = &ft;
        j->res = r;
        j->f = f;
        j->fd = -1;
        j->dfd = -1;
        snprintf(j->tmp, sizeof(j->tmp), "%s.incomplete", r->target);
        r->rc = sw_hub_resolve_url(ft.ep, m->repo, m->commit, f->path, j->url, sizeof(j->url));
        if (r->rc) {
            r->state = SW_FETCH_FAILED;
            snprintf(r->msg, sizeof(r->msg), "%s: %s", f->path,
                     r->rc == SW_ENOMEM ? "out of memory" : "the URL is too long");
            continue;
        }
        uint64_t had = r->had; /* inspect()ed, through no link */
        if (f->size_known && had > f->size) {
            if (!o->dry_run)
                unlink_under(&ft, j->tmp); /* longer than the file: not a prefix of it */
            had = 0;
        }
        r->had = had;
        if (f->size_known)
            out->bytes_needed += f->size - had;
        ft.queue[ft.nq++] = j;
    }
    if (ft.nq) {
        char dir[sizeof(ft.queue[0]->tmp)];
        snprintf(dir, sizeof(dir), "%s", ft.queue[0]->tmp);
        if (!o->dry_run) {
            /* made now so that statvfs sees the right file system; a refusal (a link on the
             * way) is the file's own failure, said when it starts */
            int dfd;
            const char *base;
            rc = sw__nf_parent(ft.root, rel_of(&ft, dir), true, &dfd, &base, e);
            if (rc == 0)
                close(dfd);
            else if (rc == SW_ENOMEM)
                goto out; /* out of memory is the run's failure, not one file's */
            rc = 0;
        }
        /* the nearest existing directory up the path decides the file system */
        char *s = strrchr(dir, '/');
        if (s)
            *s = '\0';
        struct statvfs vf;
        while (statvfs(dir, &vf) != 0) {
            s = strrchr(dir, '/');
            if (!s || s == dir) {
                snprintf(dir, sizeof(dir), "/");
                if (statvfs(dir, &vf) != 0)
                    memset(&vf, 0, sizeof(vf));
                break;
            }
            *s = '\0';
        }
        out->disk_free = (uint64_t)vf.f_bavail * (uint64_t)vf.f_frsize;
        if (out->bytes_needed > out->disk_free) {
            char need[32], fr[32];
            rc = sw_err_set(e, SW_EIO,
                            "not enough disk space in %s: %s to fetch (%zu files), %s free; "
                            "nothing was fetched",
                            dir, sw_fmt_bytes(out->bytes_needed, need, sizeof(need)), ft.nq,
                            sw_fmt_bytes(out->disk_free, fr, sizeof(fr)));
            for (size_t q = 0; q < ft.nq; q++) {
                ft.queue[q]->res->state = SW_FETCH_FAILED;
                ft.queue[q]->res->rc = SW_EIO;
                snprintf(ft.queue[q]->res->msg, sizeof(ft.queue[q]->res->msg), "%s",
                         e ? e->msg : "no space");
            }
            goto out;
        }
    }
    if (o->dry_run) {
        for (size_t q = 0; q < ft.nq; q++)
            ft.queue[q]->res->state = SW_FETCH_PLANNED;
        ft.nq = 0;
    } else if (ft.nq) {
        rc = sw_net_loop_init(&ft.loop, NULL, e);
        if (rc)
            goto out;
        loop_ok = true;
        sw_progress_init(&ft.prog, "fetch", "B", out->bytes_needed);
        if (!o->progress)
            sw_progress_force(&ft.prog, false, NULL);
        if (o->stop_on_signal) {
            struct event_base *base = sw_net_loop_base(&ft.loop);
            ft.sig[0] = evsignal_new(base, SIGINT, on_signal, &ft);
            ft.sig[1] = evsignal_new(base, SIGTERM, on_signal, &ft);
            for (int k = 0; k < 2; k++)
                if (ft.sig[k])
                    event_add(ft.sig[k], NULL);
        }
        start_more(&ft);
        while (sw_net_loop_active(&ft.loop) > 0)
            sw_net_loop_run(&ft.loop);
        for (size_t q = ft.next; q < ft.nq; q++) {
            struct sw_fetch_result *r = ft.queue[q]->res;
            r->state = SW_FETCH_FAILED;
            r->rc = SW_EINTR;
            snprintf(r->msg, sizeof(r->msg), "%s: interrupted before it started", r->file->path);
        }
        sw_progress_update(&ft.prog, ft.progress_done);
        if (o->progress && ft.prog.enabled)
            sw_progress_finish(&ft.prog);
    }
    /* the snapshot's links, then the ref */
    bool all_ok = true;
    const struct sw_fetch_result *first = NULL;
    for (size_t i = 0; i < m->n_files; i++) {
        struct sw_fetch_result *r = &out->files[i];
        if (ft.cache_mode && !o->dry_run &&
            (r->state == SW_FETCH_PRESENT || r->state == SW_FETCH_LINKED)) {
            struct sw_err le;
            const char *blob = sw_hfcache_blob_name(r->file);
            if (sw_hfcache_link(ft.repo_dir, m->commit, r->file->path,
                                blob ? blob : base_of(r->target), &le)) {
                r->state = SW_FETCH_FAILED;
                r->rc = le.code;
                snprintf(r->msg, sizeof(r->msg), "%s", le.msg);
            }
        }
        out->count[r->state]++;
        if (r->unverified)
            out->unverified++;
        if (r->state == SW_FETCH_FAILED && all_ok) {
            first = r;
            all_ok = false;
        }
    }
    if (first) {
        rc = first->rc ? first->rc : SW_EIO;
        if (out->count[SW_FETCH_FAILED] == 1)
            sw_err_set(e, rc, "%s", first->msg);
        else
            sw_err_set(e, rc, "%zu of %zu files failed; first: %s", out->count[SW_FETCH_FAILED],
                       m->n_files, first->msg);
    } else if (out->unverified && !o->allow_unverified) {
        /* in place from an earlier run (or, dry, planned): nothing can check their bytes */
        const char *p = "";
        for (size_t i = 0; i < m->n_files && !p[0]; i++)
            if (out->files[i].unverified)
                p = out->files[i].file->path;
        rc = sw_err_set(e, SW_EMISMATCH,
                        "%zu file%s unverified (%s%s): the Hub gave no sha256 or git oid to "
                        "check %s against; run with --allow-unverified to accept %s",
                        out->unverified, out->unverified == 1 ? " is" : "s are", p,
                        out->unverified > 1 ? ", ..." : "", out->unverified == 1 ? "it" : "them",
                        out->unverified == 1 ? "it" : "them");
    }
    if (!rc && all_ok && ft.cache_mode && !o->dry_run && m->revision &&
        strcmp(m->revision, m->commit) != 0) {
        rc = sw_hfcache_write_ref(ft.repo_dir, m->revision, m->commit, e);
    }
out:
    for (int k = 0; k < 2; k++)
        if (ft.sig[k])
            event_free(ft.sig[k]);
    if (loop_ok)
        sw_net_loop_close(&ft.loop);
    if (jobs) {
        for (size_t i = 0; i < m->n_files; i++) {
            if (jobs[i].ft)
                job_close(&jobs[i]);
            hashes_free(&jobs[i]);
            if (jobs[i].ft)
                sw_net_xfer_close(&jobs[i].x);
        }
    }
    sw_free(jobs);
    sw_free(ft.queue);
    out->seconds = sw_now_s() - t0;
    if (rc && e && ft.tok)
        sw_redact(e->msg, ft.tok);
    return rc;
}

void sw_fetch_report_free(struct sw_fetch_report *r)
{
    if (!r)
        return;
    sw_free(r->files);
    memset(r, 0, sizeof(*r));
}

json_t *sw_fetch_report_to_json(const struct sw_fetch_report *r)
{
    json_t *o = json_object();
    json_t *files = json_array();
    json_t *counts = json_object();
    if (!o || !files || !counts) {
        json_decref(o);
        json_decref(files);
        json_decref(counts);
        return NULL;
    }
    sw_json_set_str(o, "dir", r->dir);
    sw_json_set_bool(
        o, "ok", r->count[SW_FETCH_FAILED] == 0 && (r->unverified == 0 || r->unverified_allowed));
    sw_json_set_int(o, "unverified", (int64_t)r->unverified);
    sw_json_set_bool(o, "verified", r->unverified == 0);
    sw_json_set_int(o, "bytes_total", (int64_t)r->bytes_total);
    sw_json_set_int(o, "bytes_needed", (int64_t)r->bytes_needed);
    sw_json_set_int(o, "bytes_fetched", (int64_t)r->bytes_fetched);
    sw_json_set_int(o, "disk_free", (int64_t)r->disk_free);
    sw_json_set_real(o, "seconds", r->seconds);
    for (int s = SW_FETCH_PRESENT; s < SW_FETCH__N; s++)
        sw_json_set_int(counts, sw_fetch_state_name((enum sw_fetch_state)s), (int64_t)r->count[s]);
    sw_json_set_new(o, "counts", counts);
    for (size_t i = 0; i < r->n_files; i++) {
        const struct sw_fetch_result *f = &r->files[i];
        json_t *j = json_object();
        if (!j)
            break;
        sw_json_set_str(j, "path", f->file ? f->file->path : "");
        if (f->file && f->file->size_known)
            sw_json_set_int(j, "size", (int64_t)f->file->size);
        sw_json_set_str(j, "state", sw_fetch_state_name(f->state));
        sw_json_set_str(j, "target", f->target);
        bool in_place = f->state == SW_FETCH_PRESENT || f->state == SW_FETCH_LINKED ||
                        f->state == SW_FETCH_DOWNLOADED;
        if (in_place && f->sha256[0])
            sw_json_set_str(j, "sha256", f->sha256); /* of the bytes in place */
        if (f->file && f->file->sha256[0])
            sw_json_set_str(j, "want_sha256", f->file->sha256);
        if (f->had)
            sw_json_set_int(j, "resumed_from", (int64_t)f->had);
        sw_json_set_int(j, "fetched", (int64_t)f->fetched);
        if (f->range_ignored)
            sw_json_set_bool(j, "range_ignored", true);
        if (f->unverified)
            sw_json_set_bool(j, "unverified", true);
        if (f->msg[0])
            sw_json_set_str(j, "message", f->msg);
        if (f->rc)
            sw_json_set_str(j, "error", sw_strerror(f->rc));
        json_array_append_new(files, j);
    }
    sw_json_set_new(o, "files", files);
    return o;
}
