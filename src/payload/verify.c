/*
 * payload/verify: re-hash what is on disk against a manifest, in parallel across files.
 *
 * One worker thread per online core (never more than the files to hash), each takes the next
 * file from a shared counter (largest first, so one huge shard does not start last), reads it
 * through one bounded buffer and feeds OpenSSL's EVP SHA-256. The calling thread only waits and
 * reports progress, so a progress callback never runs concurrently with itself. A file whose only
 * hash in the manifest is a git oid (the Hub's non-LFS files) gets git's blob SHA-1 alongside.
 *
 * What it deliberately does not do: split one file across threads (SHA-256 is sequential within
 * a file; a payload is many shards), judge what a body looks like (sniff.c), or repair anything.
 */
#include <slipway/payload.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "payload/payload_internal.h"

/* ---------------------------------------------------------------------------------------------
 * SHA-256
 */
struct sw_payload_sha256 {
    EVP_MD_CTX *ctx;
};

int sw_payload_sha256_new(struct sw_payload_sha256 **out, struct sw_err *e)
{
    struct sw_payload_sha256 *h = sw_calloc(1, sizeof(*h));
    *out = NULL;
    if (!h)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        sw_payload_sha256_free(h);
        return sw_err_set(e, SW_ENOMEM, "cannot set up OpenSSL SHA-256");
    }
    *out = h;
    return 0;
}

int sw_payload_sha256_update(struct sw_payload_sha256 *h, const void *p, size_t n)
{
    return EVP_DigestUpdate(h->ctx, p, n) == 1 ? 0 : SW_EIO;
}

int sw_payload_sha256_final(struct sw_payload_sha256 *h, char hex[SW_PAYLOAD_SHA256_HEX + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(h->ctx, md, &len) != 1 || len != 32) {
        hex[0] = '\0';
        return SW_EIO;
    }
    sw__payload_hex(md, 32, hex);
    return 0;
}

int sw_payload_sha256_reset(struct sw_payload_sha256 *h)
{
    return EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1 ? 0 : SW_EIO;
}

void sw_payload_sha256_free(struct sw_payload_sha256 *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    sw_free(h);
}

/* Hash one open file through buf; adds to *progress as bytes arrive. sha1 (may be NULL), already
 * fed git's "blob <size>" header, gets the same bytes: the git oid of a non-LFS file. */
static int hash_fd(int fd, const char *path, struct sw_payload_sha256 *h, EVP_MD_CTX *sha1,
                   unsigned char *buf, size_t bufn, char hex[SW_PAYLOAD_SHA256_HEX + 1],
                   uint64_t *size, _Atomic uint64_t *progress, struct sw_err *e)
{
    uint64_t total = 0;
    int rc = sw_payload_sha256_reset(h);
    if (rc)
        return sw_err_set(e, rc, "%s: cannot reset SHA-256", path);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
        ssize_t r = read(fd, buf, bufn);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return sw_err_at(e, SW_EIO, path, 0, 0, "read failed after %llu bytes: %s",
                             (unsigned long long)total, strerror(errno));
        if (r == 0)
            break;
        if (sw_payload_sha256_update(h, buf, (size_t)r))
            return sw_err_at(e, SW_EIO, path, 0, 0, "SHA-256 update failed");
        if (sha1 && EVP_DigestUpdate(sha1, buf, (size_t)r) != 1)
            return sw_err_at(e, SW_EIO, path, 0, 0, "SHA-1 update failed");
        total += (uint64_t)r;
        if (progress)
            atomic_fetch_add(progress, (uint64_t)r);
    }
    if (sw_payload_sha256_final(h, hex))
        return sw_err_at(e, SW_EIO, path, 0, 0, "SHA-256 final failed");
    if (size)
        *size = total;
    return 0;
}

static int open_ro(const char *path, struct sw_err *e)
{
    /* O_NOATIME spares an inode write per file; only the owner (or root) may ask for it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, path, 0, 0, "cannot open: %s",
                         strerror(errno));
    return fd;
}

int sw_payload_sha256_file(const char *path, size_t buf_size, char hex[SW_PAYLOAD_SHA256_HEX + 1],
                           uint64_t *size, struct sw_err *e)
{
    struct sw_payload_sha256 *h = NULL;
    unsigned char *buf = NULL;
    size_t bufn = buf_size ? buf_size : SW_PAYLOAD_READ_BUF;
    int fd = -1;
    hex[0] = '\0';
    int rc = sw_payload_sha256_new(&h, e);
    if (rc)
        goto out;
    buf = sw_malloc(bufn);
    if (!buf) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    fd = open_ro(path, e);
    if (fd < 0) {
        rc = fd;
        goto out;
    }
    rc = hash_fd(fd, path, h, NULL, buf, bufn, hex, size, NULL, e);
out:
    if (fd >= 0)
        close(fd);
    sw_free(buf);
    sw_payload_sha256_free(h);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Paths and the directory walk
 */
int sw__payload_join(const char *root, const char *rel, char *out, size_t n, struct sw_err *e)
{
    int w = (root && *root) ? snprintf(out, n, "%s/%s", root, rel) : snprintf(out, n, "%s", rel);
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "path too long: %.200s/%.200s", root ? root : "", rel);
    return 0;
}

#define WALK_DEPTH 32

static int walk_dir(const char *root, char *rel, size_t rel_len, size_t rel_cap, int depth,
                    sw__payload_walk_fn fn, void *ud, struct sw_err *e)
{
    char full[4096];
    int rc = sw__payload_join(root, rel, full, sizeof(full), e);
    if (rc)
        return rc;
    DIR *d = opendir(rel_len ? full : root);
    if (!d)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, rel_len ? full : root, 0, 0,
                         "cannot open directory: %s", strerror(errno));
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, ".."))
            continue;
        size_t nl = strlen(nm);
        if (rel_len + 1 + nl + 1 > rel_cap)
            continue; /* deeper than any payload path may be: not ours to report */
        size_t save = rel_len;
        if (rel_len)
            rel[rel_len++] = '/';
        memcpy(rel + rel_len, nm, nl + 1);
        rel_len += nl;
        char fp[4096];
        struct stat lst, st;
        if (sw__payload_join(root, rel, fp, sizeof(fp), NULL) == 0 && lstat(fp, &lst) == 0) {
            bool is_link = S_ISLNK(lst.st_mode);
            int sr = is_link ? stat(fp, &st) : 0;
            if (!is_link)
                st = lst;
            if (sr == 0 && S_ISDIR(st.st_mode)) {
                if (!is_link && nm[0] != '.' && depth < WALK_DEPTH)
                    rc = walk_dir(root, rel, rel_len, rel_cap, depth + 1, fn, ud, e);
            } else if (sr == 0 && S_ISREG(st.st_mode)) {
                rc = fn(ud, rel, (uint64_t)st.st_size);
            } else {
                /* a dangling symlink (an HF cache blob that is gone), a fifo, a socket: report it
                 * as a file of size 0 so a manifest check finds it unreadable or unexpected */
                rc = fn(ud, rel, 0);
            }
        }
        rel_len = save;
        rel[rel_len] = '\0';
    }
    closedir(d);
    return rc;
}

int sw__payload_walk(const char *root, sw__payload_walk_fn fn, void *ud, struct sw_err *e)
{
    char rel[SW_PAYLOAD_MAX_PATH + 1];
    rel[0] = '\0';
    return walk_dir(root, rel, 0, sizeof(rel), 0, fn, ud, e);
}

/* ---------------------------------------------------------------------------------------------
 * The worker pool
 */
struct job {
    const char *rel;
    uint64_t size_hint; /* for ordering */
    bool git_oid;       /* also compute the git blob oid (a file whose only hash is its oid) */
    char *hex;          /* OUT, SW_PAYLOAD_SHA256_HEX + 1 */
    char oid[40 + 1];   /* OUT when git_oid: the git blob sha1, hex */
    uint64_t got;       /* OUT: bytes hashed */
    int rc;             /* OUT */
    char msg[256];      /* OUT */
};

struct pool {
    const char *root;
    struct job **jobs;
    size_t n;
    size_t bufn;
    atomic_size_t next;
    _Atomic uint64_t done_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned finished;
};

void sw__payload_hex(const unsigned char *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

int sw__payload_git_blob_init(EVP_MD_CTX *c, uint64_t size)
{
    char pre[48];
    int n = snprintf(pre, sizeof(pre), "blob %llu", (unsigned long long)size);
    if (EVP_DigestInit_ex(c, EVP_sha1(), NULL) != 1 ||
        EVP_DigestUpdate(c, pre, (size_t)n + 1) != 1) /* the header's NUL is hashed too */
        return SW_EIO;
    return 0;
}

/* git's blob oid is the SHA-1 of "blob <size>\0" and the bytes: start one for an open file. */
static int git_blob_start(int fd, const char *path, EVP_MD_CTX **out, struct sw_err *e)
{
    struct stat st;
    *out = NULL;
    if (fstat(fd, &st) < 0)
        return sw_err_at(e, SW_EIO, path, 0, 0, "cannot stat: %s", strerror(errno));
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c)
        return sw_err_set(e, SW_ENOMEM, "out of memory for SHA-1");
    if (sw__payload_git_blob_init(c, (uint64_t)st.st_size)) {
        EVP_MD_CTX_free(c);
        return sw_err_at(e, SW_EIO, path, 0, 0, "cannot set up SHA-1");
    }
    *out = c;
    return 0;
}

static int git_blob_final(EVP_MD_CTX *c, const char *path, char oid[40 + 1], struct sw_err *e)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(c, md, &len) != 1 || len != 20)
        return sw_err_at(e, SW_EIO, path, 0, 0, "SHA-1 final failed");
    sw__payload_hex(md, 20, oid);
    return 0;
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    struct sw_payload_sha256 *h = NULL;
    unsigned char *buf = sw_malloc(p->bufn);
    struct sw_err e;
    int setup = buf ? sw_payload_sha256_new(&h, NULL) : SW_ENOMEM;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        struct job *j = p->jobs[i];
        sw_err_clear(&e);
        if (setup) {
            j->rc = SW_ENOMEM;
            snprintf(j->msg, sizeof(j->msg), "out of memory for a hashing worker");
            continue;
        }
        char full[4096];
        j->rc = sw__payload_join(p->root, j->rel, full, sizeof(full), &e);
        int fd = j->rc ? -1 : open_ro(full, &e);
        if (!j->rc && fd < 0)
            j->rc = fd;
        EVP_MD_CTX *sha1 = NULL;
        if (!j->rc && j->git_oid) {
            j->rc = git_blob_start(fd, full, &sha1, &e);
            if (j->rc)
                close(fd);
        }
        if (!j->rc) {
            j->rc = hash_fd(fd, full, h, sha1, buf, p->bufn, j->hex, &j->got, &p->done_bytes, &e);
            close(fd);
        }
        if (!j->rc && sha1)
            j->rc = git_blob_final(sha1, full, j->oid, &e);
        EVP_MD_CTX_free(sha1);
        if (j->rc)
            snprintf(j->msg, sizeof(j->msg), "%.250s", e.msg);
    }
    sw_payload_sha256_free(h);
    sw_free(buf);
    pthread_mutex_lock(&p->mu);
    p->finished++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int cmp_job_size(const void *a, const void *b)
{
    const struct job *x = *(const struct job *const *)a, *y = *(const struct job *const *)b;
    if (x->size_hint != y->size_hint)
        return x->size_hint > y->size_hint ? -1 : 1;
    return strcmp(x->rel, y->rel);
}

static unsigned pick_threads(const struct sw_verify_opts *o, size_t n)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned t = o && o->threads ? o->threads : (cores > 0 ? (unsigned)cores : 1);
    if (t > 256)
        t = 256;
    if ((size_t)t > n)
        t = (unsigned)(n ? n : 1);
    return t;
}

/* Hash jobs in parallel. Per-job errors stay in the jobs; the return is for the pool itself. */
static int run_pool(const char *root, struct job **jobs, size_t n, const struct sw_verify_opts *o,
                    unsigned *threads_used, struct sw_err *e)
{
    struct pool p;
    pthread_t tid[256];
    unsigned started = 0;
    int rc = 0;
    memset(&p, 0, sizeof(p));
    p.root = root;
    p.jobs = jobs;
    p.n = n;
    p.bufn = o && o->buf_size ? o->buf_size : SW_PAYLOAD_READ_BUF;
    atomic_init(&p.next, 0);
    atomic_init(&p.done_bytes, 0);
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += jobs[i]->size_hint;
    qsort(jobs, n, sizeof(*jobs), cmp_job_size);
    if (o && o->progress) /* before any byte: a rate measured from here is honest */
        o->progress(o->progress_ud, 0, total);
    unsigned want = pick_threads(o, n);
    for (unsigned i = 0; i < want; i++) {
        if (pthread_create(&tid[i], NULL, worker, &p) != 0)
            break;
        started++;
    }
    if (!started && n) {
        rc = sw_err_set(e, SW_EIO, "cannot start a hashing thread");
        goto out;
    }
    pthread_mutex_lock(&p.mu);
    while (p.finished < started) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p.cv, &p.mu, &ts);
        if (o && o->progress && p.finished < started) {
            pthread_mutex_unlock(&p.mu);
            o->progress(o->progress_ud, atomic_load(&p.done_bytes), total);
            pthread_mutex_lock(&p.mu);
        }
    }
    pthread_mutex_unlock(&p.mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (o && o->progress)
        o->progress(o->progress_ud, atomic_load(&p.done_bytes), total);
out:
    if (threads_used)
        *threads_used = started;
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    return rc;
}

int sw_payload_hash_files(const char *root, const char *const *paths, size_t n,
                          const struct sw_verify_opts *o, char (*sha256)[SW_PAYLOAD_SHA256_HEX + 1],
                          uint64_t *sizes, struct sw_err *e)
{
    int rc = 0;
    struct job *jobs = sw_calloc(n ? n : 1, sizeof(*jobs));
    struct job **order = sw_calloc(n ? n : 1, sizeof(*order));
    if (!jobs || !order) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        char full[4096];
        struct stat st;
        jobs[i].rel = paths[i];
        jobs[i].hex = sha256[i];
        sha256[i][0] = '\0';
        if (sw__payload_join(root, paths[i], full, sizeof(full), NULL) == 0 && stat(full, &st) == 0)
            jobs[i].size_hint = (uint64_t)st.st_size;
        order[i] = &jobs[i];
    }
    rc = run_pool(root, order, n, o, NULL, e);
    for (size_t i = 0; !rc && i < n; i++) {
        if (jobs[i].rc) {
            rc = sw_err_set(e, jobs[i].rc, "%s", jobs[i].msg);
            break;
        }
        if (sizes)
            sizes[i] = jobs[i].got;
    }
out:
    sw_free(order);
    sw_free(jobs);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Verification against a manifest
 */
static const char *const status_names[SW_VERIFY__N] = {
    [SW_VERIFY_OK] = "ok",
    [SW_VERIFY_WRONG_SIZE] = "wrong_size",
    [SW_VERIFY_WRONG_HASH] = "wrong_hash",
    [SW_VERIFY_MISSING] = "missing",
    [SW_VERIFY_UNEXPECTED] = "unexpected",
    [SW_VERIFY_UNREADABLE] = "unreadable",
};

const char *sw_verify_status_name(enum sw_verify_status s)
{
    return (unsigned)s < SW_VERIFY__N ? status_names[s] : "?";
}

void sw_verify_report_free(struct sw_verify_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_files; i++)
        sw_free(r->files[i].path);
    sw_free(r->files);
    memset(r, 0, sizeof(*r));
}

bool sw_verify_ok(const struct sw_verify_report *r)
{
    return r->count[SW_VERIFY_OK] == r->n_files;
}

struct collect {
    const struct sw_payload_manifest *m;
    const struct sw_verify_opts *o;
    struct sw_verify_report *r;
    size_t cap;
    struct sw_err *e;
};

static int push_file(struct sw_verify_report *r, size_t *cap, const char *rel,
                     struct sw_verify_file **out, struct sw_err *e)
{
    if (r->n_files == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct sw_verify_file *nf = sw_realloc(r->files, nc * sizeof(*nf));
        if (!nf)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        r->files = nf;
        *cap = nc;
    }
    struct sw_verify_file *f = &r->files[r->n_files];
    memset(f, 0, sizeof(*f));
    f->path = sw_strdup(rel);
    if (!f->path)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    r->n_files++;
    *out = f;
    return 0;
}

static bool ignored(const struct sw_verify_opts *o, const char *rel)
{
    if (!o || !o->ignore)
        return false;
    for (size_t i = 0; o->ignore[i]; i++)
        if (!strcmp(o->ignore[i], rel))
            return true;
    return false;
}

static int on_unexpected(void *ud, const char *rel, uint64_t size)
{
    struct collect *c = ud;
    if (sw_payload_manifest_find(c->m, rel) || ignored(c->o, rel))
        return 0;
    struct sw_verify_file *f;
    int rc = push_file(c->r, &c->cap, rel, &f, c->e);
    if (rc)
        return rc;
    f->status = SW_VERIFY_UNEXPECTED;
    f->size = size;
    return 0;
}

static int cmp_vfile(const void *a, const void *b)
{
    return strcmp(((const struct sw_verify_file *)a)->path,
                  ((const struct sw_verify_file *)b)->path);
}

int sw_payload_verify(const char *root, const struct sw_payload_manifest *m,
                      const struct sw_verify_opts *o, struct sw_verify_report *r, struct sw_err *e)
{
    int rc = 0;
    struct job *jobs = NULL, **order = NULL;
    char(*hex)[SW_PAYLOAD_SHA256_HEX + 1] = NULL;
    size_t *which = NULL;
    size_t nj = 0;
    struct collect c = {.m = m, .o = o, .r = r, .cap = 0, .e = e};
    memset(r, 0, sizeof(*r));
    struct stat rst;
    if (stat(root, &rst) < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, root, 0, 0, "cannot stat: %s",
                         strerror(errno));
    if (!S_ISDIR(rst.st_mode))
        return sw_err_at(e, SW_EINVAL, root, 0, 0, "not a directory");
    for (size_t i = 0; i < m->n_files; i++) {
        const struct sw_payload_file *mf = &m->files[i];
        struct sw_verify_file *f;
        rc = push_file(r, &c.cap, mf->path, &f, e);
        if (rc)
            goto out;
        f->want_size = mf->size_known ? mf->size : 0;
        f->hash_expected = mf->sha256[0] != '\0';
        memcpy(f->want_sha256, mf->sha256, sizeof(f->want_sha256));
        if (!f->hash_expected && mf->git_oid)
            snprintf(f->want_git_oid, sizeof(f->want_git_oid), "%s", mf->git_oid);
        char full[4096];
        struct stat st;
        if (sw__payload_join(root, mf->path, full, sizeof(full), NULL)) {
            f->status = SW_VERIFY_UNREADABLE;
            snprintf(f->msg, sizeof(f->msg), "path too long");
            continue;
        }
        if (stat(full, &st) < 0) {
            int err = errno;
            struct stat lst;
            if (err == ENOENT && lstat(full, &lst) == 0) {
                f->status = SW_VERIFY_UNREADABLE;
                snprintf(f->msg, sizeof(f->msg), "a symlink to a file that is gone");
            } else {
                f->status =
                    err == ENOENT || err == ENOTDIR ? SW_VERIFY_MISSING : SW_VERIFY_UNREADABLE;
                if (f->status == SW_VERIFY_UNREADABLE)
                    snprintf(f->msg, sizeof(f->msg), "%s", strerror(err));
            }
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            f->status = SW_VERIFY_UNREADABLE;
            snprintf(f->msg, sizeof(f->msg), "not a regular file");
            continue;
        }
        f->size = (uint64_t)st.st_size;
        if (mf->size_known && f->size != mf->size) {
            f->status = SW_VERIFY_WRONG_SIZE;
            continue;
        }
        f->status = SW_VERIFY_OK; /* until the hash says otherwise */
    }
    size_t n_manifest = r->n_files;
    if (!(o && o->no_unexpected)) {
        rc = sw__payload_walk(root, on_unexpected, &c, e);
        if (rc)
            goto out;
    }
    /* what to hash */
    jobs = sw_calloc(r->n_files ? r->n_files : 1, sizeof(*jobs));
    order = sw_calloc(r->n_files ? r->n_files : 1, sizeof(*order));
    hex = sw_calloc(r->n_files ? r->n_files : 1, sizeof(*hex));
    which = sw_calloc(r->n_files ? r->n_files : 1, sizeof(*which));
    if (!jobs || !order || !hex || !which) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < r->n_files; i++) {
        struct sw_verify_file *f = &r->files[i];
        bool want = (i < n_manifest && f->status == SW_VERIFY_OK &&
                     (f->hash_expected || f->want_git_oid[0] || (o && o->hash_all))) ||
                    (i >= n_manifest && o && o->hash_all);
        if (!want)
            continue;
        jobs[nj].rel = f->path;
        jobs[nj].git_oid = i < n_manifest && f->want_git_oid[0];
        jobs[nj].size_hint = f->size;
        jobs[nj].hex = hex[nj];
        order[nj] = &jobs[nj];
        which[nj] = i;
        nj++;
    }
    double t0 = sw_now_s();
    rc = run_pool(root, order, nj, o, &r->threads, e);
    r->seconds = sw_now_s() - t0;
    for (size_t k = 0; !rc && k < nj; k++) {
        struct sw_verify_file *f = &r->files[which[k]];
        struct job *j = &jobs[k];
        if (j->rc == SW_ENOMEM) {
            /* slipway's memory, not the file's fault: calling it unreadable would be a lie */
            rc = sw_err_set(e, SW_ENOMEM, "%s: %s", f->path, j->msg);
            break;
        }
        if (j->rc) {
            f->status = j->rc == SW_ENOENT && which[k] < n_manifest ? SW_VERIFY_MISSING
                                                                    : SW_VERIFY_UNREADABLE;
            snprintf(f->msg, sizeof(f->msg), "%s", j->msg);
            continue;
        }
        r->bytes_hashed += j->got;
        f->hashed = true;
        memcpy(f->sha256, j->hex, sizeof(f->sha256));
        if (which[k] >= n_manifest)
            continue;
        if (j->got != f->size) {
            /* it changed under us (still being written?) */
            f->size = j->got;
            if (f->want_size != j->got && m->files[which[k]].size_known) {
                f->status = SW_VERIFY_WRONG_SIZE;
                continue;
            }
        }
        if (j->git_oid)
            memcpy(f->git_oid, j->oid, sizeof(f->git_oid));
        if (f->hash_expected && strcmp(f->sha256, f->want_sha256))
            f->status = SW_VERIFY_WRONG_HASH;
        else if (j->git_oid && strcmp(f->git_oid, f->want_git_oid))
            f->status = SW_VERIFY_WRONG_HASH;
    }
    if (rc)
        goto out;
    qsort(r->files, n_manifest, sizeof(*r->files), cmp_vfile);
    if (r->n_files > n_manifest)
        qsort(r->files + n_manifest, r->n_files - n_manifest, sizeof(*r->files), cmp_vfile);
    for (size_t i = 0; i < r->n_files; i++) {
        struct sw_verify_file *f = &r->files[i];
        r->count[f->status]++;
        /* right size, but nothing to check its bytes against: said so, never plain "ok" */
        f->unverified =
            i < n_manifest && f->status == SW_VERIFY_OK && !f->hash_expected && !f->want_git_oid[0];
        r->unverified += f->unverified;
    }
out:
    sw_free(which);
    sw_free(hex);
    sw_free(order);
    sw_free(jobs);
    if (rc)
        sw_verify_report_free(r);
    return rc;
}

json_t *sw_verify_report_to_json(const struct sw_verify_report *r)
{
    json_t *j = json_object(), *files = json_array(), *counts = json_object();
    if (!j || !files || !counts)
        goto fail;
    for (int s = 0; s < SW_VERIFY__N; s++)
        if (sw_json_set_int(counts, status_names[s], (int64_t)r->count[s]))
            goto fail;
    for (size_t i = 0; i < r->n_files; i++) {
        const struct sw_verify_file *f = &r->files[i];
        json_t *fj = json_object();
        if (!fj || json_array_append_new(files, fj))
            goto fail;
        if (sw_json_set_str(fj, "path", f->path) ||
            sw_json_set_str(fj, "status", status_names[f->status]) ||
            (f->status != SW_VERIFY_MISSING && sw_json_set_int(fj, "size", (int64_t)f->size)) ||
            (f->status != SW_VERIFY_UNEXPECTED && f->want_size &&
             sw_json_set_int(fj, "expected_size", (int64_t)f->want_size)) ||
            (f->hashed && sw_json_set_str(fj, "sha256", f->sha256)) ||
            (f->want_sha256[0] && sw_json_set_str(fj, "expected_sha256", f->want_sha256)) ||
            (f->git_oid[0] && sw_json_set_str(fj, "git_oid", f->git_oid)) ||
            (f->want_git_oid[0] && sw_json_set_str(fj, "expected_git_oid", f->want_git_oid)) ||
            (f->unverified && sw_json_set_bool(fj, "unverified", true)) ||
            (f->msg[0] && sw_json_set_str(fj, "message", f->msg)))
            goto fail;
    }
    if (sw_json_set_bool(j, "ok", sw_verify_ok(r)) ||
        sw_json_set_int(j, "unverified", (int64_t)r->unverified) ||
        sw_json_set_bool(j, "verified", r->unverified == 0) || sw_json_set_new(j, "counts", counts))
        goto fail_nocounts;
    counts = NULL;
    if (sw_json_set_int(j, "bytes_hashed", (int64_t)r->bytes_hashed) ||
        sw_json_set_real(j, "seconds", r->seconds) ||
        sw_json_set_int(j, "threads", (int64_t)r->threads) || sw_json_set_new(j, "files", files))
        goto fail_nofiles;
    return j;
fail:
    json_decref(counts);
fail_nocounts:
    json_decref(files);
fail_nofiles:
    json_decref(j);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Scan: a manifest of a directory as it is
 */
struct scan {
    struct sw_payload_manifest *m;
    const struct sw_verify_opts *o;
    struct sw_err *e;
};

static int on_scan(void *ud, const char *rel, uint64_t size)
{
    struct scan *s = ud;
    if (ignored(s->o, rel))
        return 0;
    return sw_payload_manifest_add(s->m, rel, (int64_t)size, NULL, false, NULL, NULL, s->e);
}

int sw_payload_manifest_scan(const char *root, bool hash, const struct sw_verify_opts *o,
                             struct sw_payload_manifest *out, struct sw_err *e)
{
    struct scan s = {.m = out, .o = o, .e = e};
    const char **paths = NULL;
    char(*hex)[SW_PAYLOAD_SHA256_HEX + 1] = NULL;
    uint64_t *sizes = NULL;
    sw_payload_manifest_init(out);
    int rc = sw__payload_walk(root, on_scan, &s, e);
    if (rc || !hash || !out->n_files)
        goto out;
    size_t n = out->n_files;
    paths = sw_calloc(n, sizeof(*paths));
    hex = sw_calloc(n, sizeof(*hex));
    sizes = sw_calloc(n, sizeof(*sizes));
    if (!paths || !hex || !sizes) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        paths[i] = out->files[i].path;
    rc = sw_payload_hash_files(root, paths, n, o, hex, sizes, e);
    for (size_t i = 0; !rc && i < n; i++) {
        memcpy(out->files[i].sha256, hex[i], sizeof(out->files[i].sha256));
        out->files[i].size = sizes[i];
    }
out:
    sw_free(sizes);
    sw_free(hex);
    sw_free(paths);
    if (rc)
        sw_payload_manifest_free(out);
    else
        sw_payload_manifest_sort(out);
    return rc;
}
