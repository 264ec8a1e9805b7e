/*
 * payload/download: fetch a manifest's files, verified, resumable, several at once: the run, step
 * by step, and its report.
 *
 * A run (sw_fetch_run) is: the setup (the HF cache's repository directory, or dest; the payload
 * directory the report names), what is there already (download_present.c: hashed, linked from the
 * HF cache, a wrong file removed), the plan (which files to transfer, resuming from the
 * .incomplete of each), the room for it (statvfs before the first byte), the transfers
 * (download_xfer.c), and the end: in the cache mode each snapshot link, then refs/<revision>,
 * and the run's error, the first file's failure or the unverified files nobody accepted.
 *
 * Nothing is reached through a symbolic link below the root (dest, or the cache's
 * models--org--name): directories are walked with O_NOFOLLOW from the root's descriptor
 * (payload/nofollow.c), and a link met on the way is refused with its path (the file fails;
 * nothing outside is read, appended to or removed).
 *
 * A file the manifest has no sha256 or git oid for (the Hub's ETag was neither) is "unverified":
 * its size and kind are all that can be checked. Unless the caller allows it, its bytes are kept
 * in the .incomplete and not renamed into place, and the fetch fails. An ETag never names a file:
 * in the HF cache such a file is fetched to blobs/unverified-<sha256 of commit and path>
 * .incomplete and, accepted, renamed to blobs/<sha256 of its bytes>.
 *
 * Hashing and writing happen on the loop's thread: at the rates a network delivers, SHA-256
 * (hundreds of MB/s per core with SHA-NI) is not the bottleneck; re-hashing files already
 * present is, and it runs in parallel through sw_payload_hash_files.
 *
 * What it does not do: retry (running again resumes), follow a moving branch (the URLs carry the
 * manifest's commit), hold locks against another process fetching the same blob.
 */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "payload/download_internal.h"

static const char *const state_names[SW_FETCH__N] = {"pending",    "present", "linked",
                                                     "downloaded", "planned", "failed"};

const char *sw_fetch_state_name(enum sw_fetch_state s)
{
    return (unsigned)s < SW_FETCH__N ? state_names[s] : "?";
}

bool sw__fetch_has_hash(const struct sw_payload_file *f)
{
    return f->sha256[0] || (f->git_oid && f->git_oid[0]);
}

const char *sw__fetch_rel(const struct sw__fetch *ft, const char *path)
{
    return path + ft->root_len + 1;
}

const char *sw__fetch_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void sw__fetch_fail(const struct sw__fetch *ft, struct sw_fetch_result *r, int rc, const char *fmt,
                    ...)
{
    r->state = SW_FETCH_FAILED;
    r->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    if (ft->tok)
        sw_redact(r->msg, ft->tok);
}

int sw__fetch_hash_fd(int fd, uint64_t len, EVP_MD_CTX *a, EVP_MD_CTX *b, const char *path,
                      struct sw_err *e)
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

/* The run's state, its report's rows (one per manifest file, in order), the cache's repository
 * directory and the payload directory the report names. */
static int setup(struct sw__fetch *ft, const struct sw_payload_manifest *m,
                 const struct sw_fetch_opts *o, struct sw_fetch_report *out, struct sw_err *e)
{
    int rc;
    ft->m = m;
    ft->o = o;
    ft->rep = out;
    ft->ep = o->endpoint ? o->endpoint : sw_hub_endpoint();
    ft->tok = o->token && *o->token ? o->token : NULL;
    ft->parallel = o->parallel ? o->parallel : 4;
    ft->cache_mode = o->dest == NULL;
    if (!m->repo || !m->commit)
        return sw_err_set(e, SW_EINVAL, "the manifest names no %s: cannot fetch",
                          m->repo ? "commit (pin a revision)" : "repository");
    out->files = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*out->files));
    ft->jobs = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*ft->jobs));
    ft->queue = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*ft->queue));
    if (!out->files || !ft->jobs || !ft->queue)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    out->n_files = m->n_files;
    char cache[PATH_MAX] = "";
    if (o->cache) {
        snprintf(cache, sizeof(cache), "%s", o->cache);
    } else {
        rc = sw_hfcache_dir(cache, sizeof(cache), ft->cache_mode ? e : NULL);
        if (rc && ft->cache_mode)
            return rc;
        if (rc)
            cache[0] = '\0';
    }
    if (cache[0]) {
        rc = sw_hfcache_repo_dir(cache, m->repo, ft->repo_dir, sizeof(ft->repo_dir), e);
        if (rc)
            return rc;
    }
    int dw = ft->cache_mode
                 ? snprintf(out->dir, sizeof(out->dir), "%s/snapshots/%s", ft->repo_dir, m->commit)
                 : snprintf(out->dir, sizeof(out->dir), "%s", o->dest);
    if (dw < 0 || (size_t)dw >= sizeof(out->dir))
        return sw_err_set(e, SW_ERANGE, "the payload directory's path is too long");
    ft->root = ft->cache_mode ? ft->repo_dir : o->dest;
    ft->root_len = strlen(ft->root);
    out->unverified_allowed = o->allow_unverified;
    for (size_t i = 0; i < m->n_files; i++) {
        const struct sw_payload_file *f = &m->files[i];
        out->files[i].file = f;
        out->files[i].unverified = !sw__fetch_has_hash(f);
        if (f->size_known)
            out->bytes_total += f->size;
    }
    return 0;
}

/* Every file still PENDING queued for a transfer, resuming from its .incomplete (one longer
 * than the file is not a prefix of it: removed); the bytes still needed. */
static void plan(struct sw__fetch *ft)
{
    const struct sw_payload_manifest *m = ft->m;
    struct sw_fetch_report *out = ft->rep;
    for (size_t i = 0; i < m->n_files; i++) {
        struct sw_fetch_result *r = &out->files[i];
        const struct sw_payload_file *f = r->file;
        if (r->state != SW_FETCH_PENDING) {
            r->had = 0; /* resumed from nothing: it is not fetched */
            continue;
        }
        struct sw__fetch_job *j = &ft->jobs[i];
        j->ft = ft;
        j->res = r;
        j->f = f;
        j->fd = -1;
        j->dfd = -1;
        snprintf(j->tmp, sizeof(j->tmp), "%s.incomplete", r->target);
        r->rc = sw_hub_resolve_url(ft->ep, m->repo, m->commit, f->path, j->url, sizeof(j->url));
        if (r->rc) {
            r->state = SW_FETCH_FAILED;
            snprintf(r->msg, sizeof(r->msg), "%s: %s", f->path,
                     r->rc == SW_ENOMEM ? "out of memory" : "the URL is too long");
            continue;
        }
        uint64_t had = r->had; /* inspect()ed, through no link */
        if (f->size_known && had > f->size) {
            if (!ft->o->dry_run) /* longer than the file: not a prefix of it */
                sw__nf_unlink(ft->root, sw__fetch_rel(ft, j->tmp));
            had = 0;
        }
        r->had = had;
        if (f->size_known)
            out->bytes_needed += f->size - had;
        ft->queue[ft->nq++] = j;
    }
}

/* The free space where the files go, against the bytes still needed: SW_EIO (every queued file
 * failed with the same words) when they do not fit. */
static int check_room(struct sw__fetch *ft, struct sw_err *e)
{
    struct sw_fetch_report *out = ft->rep;
    char dir[sizeof(ft->queue[0]->tmp)];
    snprintf(dir, sizeof(dir), "%s", ft->queue[0]->tmp);
    if (!ft->o->dry_run) {
        /* made now so that statvfs sees the right file system; a refusal (a link on the way) is
         * the file's own failure, said when it starts */
        int dfd;
        const char *base;
        int rc = sw__nf_parent(ft->root, sw__fetch_rel(ft, dir), true, &dfd, &base, e);
        if (rc == 0)
            close(dfd);
        else if (rc == SW_ENOMEM)
            return rc; /* out of memory is the run's failure, not one file's */
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
    if (out->bytes_needed <= out->disk_free)
        return 0;
    char need[32], fr[32];
    int rc = sw_err_set(e, SW_EIO,
                        "not enough disk space in %s: %s to fetch (%zu files), %s free; nothing "
                        "was fetched",
                        dir, sw_fmt_bytes(out->bytes_needed, need, sizeof(need)), ft->nq,
                        sw_fmt_bytes(out->disk_free, fr, sizeof(fr)));
    for (size_t q = 0; q < ft->nq; q++) {
        ft->queue[q]->res->state = SW_FETCH_FAILED;
        ft->queue[q]->res->rc = SW_EIO;
        snprintf(ft->queue[q]->res->msg, sizeof(ft->queue[q]->res->msg), "%s",
                 e ? e->msg : "no space");
    }
    return rc;
}

/* The end of a run: in the cache mode every file in place gets its snapshot link; the counts;
 * the run's error (the first failure, or unverified files not accepted); then refs/<revision>. */
static int finish(struct sw__fetch *ft, struct sw_err *e)
{
    const struct sw_payload_manifest *m = ft->m;
    const struct sw_fetch_opts *o = ft->o;
    struct sw_fetch_report *out = ft->rep;
    const struct sw_fetch_result *first = NULL;
    int rc = 0;
    for (size_t i = 0; i < m->n_files; i++) {
        struct sw_fetch_result *r = &out->files[i];
        if (ft->cache_mode && !o->dry_run &&
            (r->state == SW_FETCH_PRESENT || r->state == SW_FETCH_LINKED)) {
            struct sw_err le;
            const char *blob = sw_hfcache_blob_name(r->file);
            if (sw_hfcache_link(ft->repo_dir, m->commit, r->file->path,
                                blob ? blob : sw__fetch_base(r->target), &le))
                sw__fetch_fail(ft, r, le.code, "%s", le.msg);
        }
        out->count[r->state]++;
        if (r->unverified)
            out->unverified++;
        if (r->state == SW_FETCH_FAILED && !first)
            first = r;
    }
    if (first) {
        rc = first->rc ? first->rc : SW_EIO;
        if (out->count[SW_FETCH_FAILED] == 1)
            sw_err_set(e, rc, "%s", first->msg);
        else
            sw_err_set(e, rc, "%zu of %zu files failed; first: %s", out->count[SW_FETCH_FAILED],
                       m->n_files, first->msg);
        return rc;
    }
    if (out->unverified && !o->allow_unverified) {
        /* in place from an earlier run (or, dry, planned): nothing can check their bytes */
        const char *p = "";
        for (size_t i = 0; i < m->n_files && !p[0]; i++)
            if (out->files[i].unverified)
                p = out->files[i].file->path;
        return sw_err_set(e, SW_EMISMATCH,
                          "%zu file%s unverified (%s%s): the Hub gave no sha256 or git oid to "
                          "check %s against; run with --allow-unverified to accept %s",
                          out->unverified, out->unverified == 1 ? " is" : "s are", p,
                          out->unverified > 1 ? ", ..." : "", out->unverified == 1 ? "it" : "them",
                          out->unverified == 1 ? "it" : "them");
    }
    if (ft->cache_mode && !o->dry_run && m->revision && strcmp(m->revision, m->commit) != 0)
        rc = sw_hfcache_write_ref(ft->repo_dir, m->revision, m->commit, e);
    return rc;
}

int sw_fetch_run(const struct sw_payload_manifest *m, const struct sw_fetch_opts *o,
                 struct sw_fetch_report *out, struct sw_err *e)
{
    int rc = 0;
    struct sw__fetch ft;
    double t0 = sw_now_s();
    memset(&ft, 0, sizeof(ft));
    memset(out, 0, sizeof(*out));
    rc = setup(&ft, m, o, out, e);
    if (rc)
        goto out;
    rc = sw__fetch_present(&ft, e);
    if (rc)
        goto out;
    plan(&ft);
    if (ft.nq) {
        rc = check_room(&ft, e);
        if (rc)
            goto out;
    }
    if (o->dry_run) {
        for (size_t q = 0; q < ft.nq; q++)
            ft.queue[q]->res->state = SW_FETCH_PLANNED;
        ft.nq = 0;
    } else if (ft.nq) {
        rc = sw__fetch_transfer(&ft, e);
        if (rc)
            goto out;
    }
    rc = finish(&ft, e);
out:
    sw__fetch_transfer_close(&ft);
    sw_free(ft.jobs);
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
