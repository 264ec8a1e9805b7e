/*
 * payload/download_xfer: the transfers of a fetch, several at once on one net loop.
 *
 * Each file goes to <target>.incomplete, written and hashed (SHA-256, and the git blob sha1 for a
 * regular file whose only hash is its git oid) as the bytes arrive in net's on_data, and is
 * renamed to <target> only when its size and hash match the manifest. A .incomplete found at
 * start is re-hashed and resumed with "Range: bytes=N-"; a 206 must start at N; a 200 means the
 * server ignored the Range: the file is truncated and restarted from byte 0, and the result says
 * so. The first bytes of a body that starts at 0 are sniffed (an HTML page, an LFS pointer, a JSON
 * error body is stopped at once). A transfer that is cut leaves its .incomplete (the bytes it holds
 * are the file's first bytes: resumable); bytes that are known bad (a hash mismatch, an HTML page,
 * an LFS pointer, more bytes than announced) are removed. Nothing that failed is ever at <target>.
 *
 * N transfers at once, the next one started from the previous one's on_done; the loop gives
 * connection reuse, the four timeouts, fail_on_status (an error page never reaches on_data) and a
 * token that is not sent to another host on a redirect. SIGINT/SIGTERM (stop_on_signal) cancel
 * what runs, each keeping its .incomplete, and start nothing more.
 *
 * What it does not do: decide what needs fetching (download_present.c), retry, or reach anything
 * below the root through a link (the .incomplete is opened with O_NOFOLLOW relative to its
 * directory's descriptor, renamed and removed relative to it).
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "payload/download_internal.h"

static int hashes_init(struct sw__fetch_job *j)
{
    if (!j->sha256)
        j->sha256 = EVP_MD_CTX_new();
    if (!j->sha256 || !EVP_DigestInit_ex(j->sha256, EVP_sha256(), NULL))
        return SW_ENOMEM;
    if (!j->f->sha256[0] && j->f->git_oid) {
        if (!j->sha1)
            j->sha1 = EVP_MD_CTX_new();
        if (!j->sha1 || sw__payload_git_blob_init(j->sha1, j->f->size))
            return SW_ENOMEM;
    }
    return 0;
}

static void hashes_update(struct sw__fetch_job *j, const void *p, size_t n)
{
    EVP_DigestUpdate(j->sha256, p, n);
    if (j->sha1)
        EVP_DigestUpdate(j->sha1, p, n);
}

static void hashes_free(struct sw__fetch_job *j)
{
    EVP_MD_CTX_free(j->sha256);
    EVP_MD_CTX_free(j->sha1);
    j->sha256 = j->sha1 = NULL;
}

static void finished(struct sw__fetch *ft, struct sw__fetch_job *j)
{
    if (ft->o->on_file)
        ft->o->on_file(ft->o->ud, j->res);
}

static int job_abort(struct sw__fetch_job *j, int rc, const char *fmt, ...) SW_PRINTF(3, 4);
static int job_abort(struct sw__fetch_job *j, int rc, const char *fmt, ...)
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
    struct sw__fetch_job *j = ud;
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

static int judge_head(struct sw__fetch_job *j)
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
    struct sw__fetch_job *j = ud;
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

static void start_more(struct sw__fetch *ft);

/* The .incomplete removed, relative to its directory (never through a link). */
static void unlink_tmp(struct sw__fetch_job *j)
{
    if (j->dfd >= 0)
        unlinkat(j->dfd, sw__fetch_base(j->tmp), 0);
}

static void job_close(struct sw__fetch_job *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->dfd >= 0)
        close(j->dfd);
    j->fd = j->dfd = -1;
    hashes_free(j);
}

/* The bytes received hash to what the manifest says (sha256, else the git blob sha1; with
 * neither, the body must at least be what its name says). Else the .incomplete is removed and
 * the job failed: false. */
static bool hash_matches(struct sw__fetch_job *j)
{
    struct sw_fetch_result *r = j->res;
    const struct sw_payload_file *f = j->f;
    unsigned char d[32];
    unsigned dl = 32;
    EVP_DigestFinal_ex(j->sha256, d, &dl);
    sw__payload_hex(d, 32, r->sha256);
    if (f->sha256[0] && strcmp(r->sha256, f->sha256) != 0) {
        unlink_tmp(j);
        sw__fetch_fail(j->ft, r, SW_EMISMATCH,
                       "sha256 mismatch for %s: the Hub announces %s, the %llu bytes received "
                       "hash to %s; removed (run again to fetch it anew)",
                       f->path, f->sha256, (unsigned long long)j->offset, r->sha256);
        return false;
    }
    if (!f->sha256[0] && j->sha1) {
        char oid[41];
        dl = 20;
        EVP_DigestFinal_ex(j->sha1, d, &dl);
        sw__payload_hex(d, 20, oid);
        if (strcasecmp(oid, f->git_oid) != 0) {
            unlink_tmp(j);
            sw__fetch_fail(j->ft, r, SW_EMISMATCH,
                           "git blob hash mismatch for %s: the Hub announces %s, the bytes hash "
                           "to %s; removed",
                           f->path, f->git_oid, oid);
            return false;
        }
    }
    if (!f->sha256[0] && !j->sha1) {
        /* no hash known: what the body is, is the only check left */
        struct sw_payload_sniff sn;
        struct sw_err se;
        if (sw_payload_sniff_file(j->tmp, &sn, &se) == SW_EMISMATCH) {
            unlink_tmp(j);
            sw__fetch_fail(j->ft, r, SW_EMISMATCH, "%s: %s; removed", f->path, sn.msg);
            return false;
        }
    }
    return true;
}

/* Size and hash judged; rename into place, or say why not. */
static void complete(struct sw__fetch_job *j)
{
    struct sw__fetch *ft = j->ft;
    struct sw_fetch_result *r = j->res;
    const struct sw_payload_file *f = j->f;
    if (!hash_matches(j))
        return;
    if (!sw__fetch_has_hash(f) && !ft->o->allow_unverified) {
        sw__fetch_fail(ft, r, SW_EMISMATCH,
                       "%s is unverified: the Hub gave no sha256 (X-Linked-Etag) or git oid (ETag) "
                       "to check its %llu bytes against, only their size and kind; they are kept "
                       "in %s, not put in place. Run again with --allow-unverified to accept them "
                       "(or pin its sha256 in a manifest)",
                       f->path, (unsigned long long)j->offset, j->tmp);
        return;
    }
    if (fsync(j->fd) != 0) {
        sw__fetch_fail(ft, r, SW_EIO, "fsync %s: %s", j->tmp, strerror(errno));
        return;
    }
    const char *blob = sw_hfcache_blob_name(f);
    if (ft->cache_mode && !blob) {
        /* accepted unverified: its blob is named by the sha256 of the bytes received */
        blob = r->sha256;
        char *bn = strrchr(r->target, '/'); /* blobs/unverified-<64 hex>: longer than the hash */
        memcpy(bn + 1, blob, SW_PAYLOAD_SHA256_HEX + 1);
    }
    if (renameat(j->dfd, sw__fetch_base(j->tmp), j->dfd, sw__fetch_base(r->target)) != 0) {
        sw__fetch_fail(ft, r, SW_EIO, "rename %s: %s", r->target, strerror(errno));
        return;
    }
    if (ft->cache_mode) {
        struct sw_err le;
        if (sw_hfcache_link(ft->repo_dir, ft->m->commit, f->path, blob, &le)) {
            sw__fetch_fail(ft, r, le.code, "%s", le.msg);
            return;
        }
    }
    r->state = SW_FETCH_DOWNLOADED;
    r->rc = 0;
}

/* Why a transfer ended without its bytes, in the job's result (the bytes that are good kept). */
static void transfer_failed(struct sw__fetch_job *j, struct sw_net_xfer *x)
{
    struct sw__fetch *ft = j->ft;
    const struct sw_payload_file *f = j->f;
    char url[512];
    sw_net_redact_url(j->url, url, sizeof(url));
    if (j->abort_rc) {
        if (j->bad_bytes || j->offset == 0)
            unlink_tmp(j);
        sw__fetch_fail(ft, j->res, j->abort_rc, "%s", j->abort_msg);
    } else if (x->resp.fail == SW_NET_CANCELLED && ft->interrupted) {
        if (j->offset == 0)
            unlink_tmp(j);
        sw__fetch_fail(ft, j->res, SW_EINTR, "%s: interrupted (%s) after %llu of %llu bytes%s%s%s",
                       f->path, strsignal(ft->interrupted), (unsigned long long)j->offset,
                       (unsigned long long)f->size, j->offset ? "; kept in " : "",
                       j->offset ? j->tmp : "", j->offset ? ": run again to resume" : "");
    } else if (x->resp.fail == SW_NET_HTTP_STATUS) {
        if (x->resp.status == 416)
            unlink_tmp(j); /* our partial is not a prefix the server recognises: start over */
        else if (j->offset == 0)
            unlink_tmp(j);
        sw__fetch_fail(ft, j->res, SW_EHTTP, "%s: %s (from %s)%s%s", f->path, x->resp.err.msg,
                       x->resp.err.where[0] ? x->resp.err.where : url,
                       j->offset ? "; the bytes received before are kept: run again to resume" : "",
                       x->resp.status == 416 ? "; the partial file was removed" : "");
    } else {
        sw__fetch_fail(ft, j->res, x->resp.rc,
                       "%s: the transfer was cut after %llu of %llu bytes (%s: %s); the %llu "
                       "bytes are kept in %s: run again to resume",
                       f->path, (unsigned long long)j->offset, (unsigned long long)f->size,
                       sw_net_fail_name(x->resp.fail), x->resp.err.msg,
                       (unsigned long long)j->offset, j->tmp);
    }
}

static void on_done(void *ud, struct sw_net_xfer *x)
{
    struct sw__fetch_job *j = ud;
    struct sw__fetch *ft = j->ft;
    struct sw_fetch_result *r = j->res;
    const struct sw_payload_file *f = j->f;
    ft->running--;
    if (!x->resp.rc && j->from_zero && !j->head_judged && j->head_n > 0)
        judge_head(j); /* a body shorter than the sniff window */
    if (j->abort_rc || x->resp.rc)
        transfer_failed(j, x);
    else if (f->size_known && j->offset < f->size)
        sw__fetch_fail(ft, r, SW_ETRUNC,
                       "%s: the server sent %llu of %llu bytes and said that was all; the %llu "
                       "bytes are kept in %s: run again to resume",
                       f->path, (unsigned long long)j->offset, (unsigned long long)f->size,
                       (unsigned long long)j->offset, j->tmp);
    else
        complete(j);
    job_close(j);
    if (r->state == SW_FETCH_FAILED)
        sw_log(SW_LOG_INFO, "%s", r->msg);
    finished(ft, j);
    start_more(ft);
}

/* Open the .incomplete and re-hash what it holds: 0, or the job failed. */
static int open_incomplete(struct sw__fetch *ft, struct sw__fetch_job *j)
{
    struct sw_err e;
    const char *base;
    sw_err_clear(&e);
    int rc = sw__nf_parent(ft->root, sw__fetch_rel(ft, j->tmp), true, &j->dfd, &base, &e);
    if (rc) {
        sw__fetch_fail(ft, j->res, rc, "%s", e.msg);
        return rc;
    }
    j->fd = openat(j->dfd, base, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        if (errno == ELOOP) {
            rc = sw__nf_refuse_link(j->dfd, base, j->tmp, &e);
            sw__fetch_fail(ft, j->res, rc, "%s", e.msg);
            return rc;
        }
        sw__fetch_fail(ft, j->res, SW_EIO, "%s: %s", j->tmp, strerror(errno));
        return SW_EIO;
    }
    if (hashes_init(j)) {
        sw__fetch_fail(ft, j->res, SW_ENOMEM, "out of memory");
        return SW_ENOMEM;
    }
    struct stat st;
    if (fstat(j->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        sw__fetch_fail(ft, j->res, SW_EIO, "%s: not a regular file", j->tmp);
        return SW_EIO;
    }
    j->offset = (uint64_t)st.st_size;
    if (j->offset && sw__fetch_hash_fd(j->fd, j->offset, j->sha256, j->sha1, j->tmp, &e)) {
        sw__fetch_fail(ft, j->res, e.code, "%s", e.msg);
        return e.code;
    }
    j->res->had = j->offset;
    return 0;
}

/* Open the .incomplete, re-hash what it holds, and either finish (it is whole) or start. */
static void begin(struct sw__fetch *ft, struct sw__fetch_job *j)
{
    struct sw_err e;
    const struct sw_payload_file *f = j->f;
    if (open_incomplete(ft, j))
        goto fail;
    if (f->size_known && j->offset == f->size) {
        complete(j); /* a previous run got every byte and stopped before the rename */
        goto fail;
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
    sw_err_clear(&e);
    int rc = sw_net_start(&ft->loop, &j->x, &e);
    if (rc) {
        sw__fetch_fail(ft, j->res, rc, "%s", e.msg);
        goto fail;
    }
    ft->running++;
    return;
fail: /* or done without a transfer */
    job_close(j);
    finished(ft, j);
}

/* SIGINT / SIGTERM: cancel what runs (each keeps its .incomplete), start nothing more. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct sw__fetch *ft = arg;
    (void)what;
    ft->interrupted = (int)sig;
    for (size_t i = 0; i < ft->next; i++)
        if (ft->queue[i]->x.state == SW_NET_RUNNING)
            sw_net_cancel(&ft->queue[i]->x);
}

static void start_more(struct sw__fetch *ft)
{
    while (!ft->interrupted && ft->running < ft->parallel && ft->next < ft->nq)
        begin(ft, ft->queue[ft->next++]);
}

int sw__fetch_transfer(struct sw__fetch *ft, struct sw_err *e)
{
    const struct sw_fetch_opts *o = ft->o;
    int rc = sw_net_loop_init(&ft->loop, NULL, e);
    if (rc)
        return rc;
    ft->loop_ok = true;
    sw_progress_init(&ft->prog, "fetch", "B", ft->rep->bytes_needed);
    if (!o->progress)
        sw_progress_force(&ft->prog, false, NULL);
    if (o->stop_on_signal) {
        struct event_base *base = sw_net_loop_base(&ft->loop);
        ft->sig[0] = evsignal_new(base, SIGINT, on_signal, ft);
        ft->sig[1] = evsignal_new(base, SIGTERM, on_signal, ft);
        for (int k = 0; k < 2; k++)
            if (ft->sig[k])
                event_add(ft->sig[k], NULL);
    }
    start_more(ft);
    while (sw_net_loop_active(&ft->loop) > 0)
        sw_net_loop_run(&ft->loop);
    for (size_t q = ft->next; q < ft->nq; q++) {
        struct sw_fetch_result *r = ft->queue[q]->res;
        r->state = SW_FETCH_FAILED;
        r->rc = SW_EINTR;
        snprintf(r->msg, sizeof(r->msg), "%s: interrupted before it started", r->file->path);
    }
    sw_progress_update(&ft->prog, ft->progress_done);
    if (o->progress && ft->prog.enabled)
        sw_progress_finish(&ft->prog);
    return 0;
}

void sw__fetch_transfer_close(struct sw__fetch *ft)
{
    for (int k = 0; k < 2; k++)
        if (ft->sig[k])
            event_free(ft->sig[k]);
    if (ft->loop_ok)
        sw_net_loop_close(&ft->loop);
    for (size_t i = 0; ft->jobs && i < ft->m->n_files; i++) {
        struct sw__fetch_job *j = &ft->jobs[i];
        if (j->ft) {
            job_close(j);
            sw_net_xfer_close(&j->x);
        }
        hashes_free(j);
    }
}
