/*
 * payload/hfcache: the Hugging Face cache layout, as huggingface_hub writes it
 * (file_download.py: hf_hub_download and _create_symlink):
 *   <cache>/models--<org>--<name>/blobs/<etag>                  the bytes, once
 *   <cache>/models--<org>--<name>/blobs/<etag>.incomplete       a download in progress
 *   <cache>/models--<org>--<name>/snapshots/<commit>/<path>     a relative symlink to the blob
 *   <cache>/models--<org>--<name>/refs/<revision>               the commit a branch/tag named
 * The etag is the sha256 of an LFS file and the git blob sha1 of a regular one, so a blob's name
 * is its hash: a blob already there is hashed and reused rather than fetched again.
 *
 * Nothing under the repo directory is reached through a symbolic link (payload/nofollow.c): a
 * linked snapshots/<commit>/<dir> or refs/ is refused; a snapshot's file link is replaced (renamed
 * over), never followed. Only a hex hash ever names a blob.
 *
 * What it does not do: datasets/spaces, the .locks directory (one slipway process per payload;
 * huggingface_hub's locks are advisory files next to the blobs), cache pruning.
 */
#include <slipway/fetch.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "payload/payload_internal.h"

int sw_hfcache_dir(char *out, size_t n, struct sw_err *e)
{
    const char *c = getenv("HF_HUB_CACHE");
    int w;
    if (c && *c) {
        w = snprintf(out, n, "%s", c);
    } else {
        const char *home = getenv("HF_HOME");
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *h = getenv("HOME");
        if (home && *home)
            w = snprintf(out, n, "%s/hub", home);
        else if (xdg && *xdg)
            w = snprintf(out, n, "%s/huggingface/hub", xdg);
        else if (h && *h)
            w = snprintf(out, n, "%s/.cache/huggingface/hub", h);
        else
            return sw_err_set(e, SW_ENOENT,
                              "no HF_HUB_CACHE, HF_HOME or HOME: where is the cache? (--dest)");
    }
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "the cache path is too long");
    return 0;
}

int sw_hfcache_repo_dir(const char *cache, const char *repo, char *out, size_t n, struct sw_err *e)
{
    const char *slash = strchr(repo, '/');
    if (!slash || slash == repo || !slash[1] || strchr(slash + 1, '/') || strstr(repo, ".."))
        return sw_err_set(e, SW_EINVAL, "repo '%s' is not of the form namespace/name", repo);
    int w = snprintf(out, n, "%s/models--%.*s--%s", cache, (int)(slash - repo), repo, slash + 1);
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "the cache path for %s is too long", repo);
    return 0;
}

const char *sw_hfcache_blob_name(const struct sw_payload_file *f)
{
    if (f->sha256[0])
        return f->sha256;
    if (f->git_oid && f->git_oid[0])
        return f->git_oid;
    return NULL;
}

/* A blob's name: a sha256 or git sha1 in hex, nothing else ever becomes a file name here (an
 * ETag that is not one never reaches this: hub.c keeps only hex ones). */
int sw__hfcache_blob_target(const char *path, const char *blob, char *out, size_t n)
{
    /* from snapshots/<commit>/<a/b/file>: ../../ gets to the repo dir, plus one per level */
    size_t off = 0;
    for (const char *p = path; *p; p++) {
        if (*p != '/')
            continue;
        if (off + 3 >= n)
            return SW_ERANGE;
        memcpy(out + off, "../", 3);
        off += 3;
    }
    int w = snprintf(out + off, n - off, "../../blobs/%s", blob);
    return w < 0 || (size_t)w >= n - off ? SW_ERANGE : 0;
}

static bool blob_name_ok(const char *b)
{
    size_t n = b ? strlen(b) : 0;
    return n >= 1 && n <= SW_PAYLOAD_SHA256_HEX && strspn(b, "0123456789abcdef") == n;
}

int sw_hfcache_link(const char *repo_dir, const char *commit, const char *path, const char *blob,
                    struct sw_err *e)
{
    char link[PATH_MAX], target[PATH_MAX], tmp[NAME_MAX + 1], dir[PATH_MAX];
    int rc = 0, rfd = -1, dfd = -1;
    if (!commit || !sw__payload_hex_ok(commit, 40))
        return sw_err_set(e, SW_EINVAL, "commit \"%.80s\" is not 40 hex digits",
                          commit ? commit : "");
    if (!blob_name_ok(blob))
        return sw_err_set(e, SW_EINVAL, "%s: blob name \"%.80s\" is not a hex hash", path,
                          blob ? blob : "");
    if (!sw_payload_path_ok(path))
        return sw_err_set(e, SW_EINVAL, "\"%.200s\" is not a safe relative path", path);
    if (snprintf(link, sizeof(link), "%s/snapshots/%s/%s", repo_dir, commit, path) >=
        (int)sizeof(link))
        return sw_err_set(e, SW_ERANGE, "path too long: %s", path);
    if (sw__hfcache_blob_target(path, blob, target, sizeof(target)))
        return sw_err_set(e, SW_ERANGE, "path too long: %s", path);
    /* snapshots/<commit>/<dirs of path>, no link followed on the way */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    snprintf(dir, sizeof(dir), "snapshots/%s%s%.*s", commit, slash ? "/" : "",
             slash ? (int)(slash - path) : 0, path);
    rc = sw__nf_sibling(base, ".slipway-link", link, tmp, e);
    if (rc)
        return rc;
    rc = sw__nf_root(repo_dir, true, &rfd, e);
    if (rc)
        goto out;
    rc = sw__nf_dir(rfd, repo_dir, dir, true, &dfd, e);
    if (rc)
        goto out;
    char have[PATH_MAX];
    ssize_t hl = readlinkat(dfd, base, have, sizeof(have) - 1);
    if (hl >= 0) {
        have[hl] = '\0';
        if (!strcmp(have, target))
            goto out;
    }
    /* a new link beside it, renamed over (the old link is replaced, never followed): the
     * snapshot never lacks the file meanwhile */
    unlinkat(dfd, tmp, 0);
    if (symlinkat(target, dfd, tmp) != 0) {
        rc = sw_err_set(e, SW_EIO, "symlink %s.slipway-link: %s", link, strerror(errno));
        goto out;
    }
    if (renameat(dfd, tmp, dfd, base) != 0) {
        rc = sw_err_set(e, SW_EIO, "rename %s: %s", link, strerror(errno));
        unlinkat(dfd, tmp, 0);
    }
out:
    if (dfd >= 0)
        close(dfd);
    if (rfd >= 0)
        close(rfd);
    return rc;
}

int sw_hfcache_write_ref(const char *repo_dir, const char *revision, const char *commit,
                         struct sw_err *e)
{
    char p[PATH_MAX], rel[PATH_MAX], tmp[NAME_MAX + 1];
    int rc = 0, dfd = -1, fd = -1;
    const char *base = NULL;
    if (strstr(revision, "..") || revision[0] == '/' || !sw_payload_path_ok(revision))
        return sw_err_set(e, SW_EINVAL, "revision '%s' cannot name a ref file", revision);
    if (snprintf(p, sizeof(p), "%s/refs/%s", repo_dir, revision) >= (int)sizeof(p) ||
        snprintf(rel, sizeof(rel), "refs/%s", revision) >= (int)sizeof(rel))
        return sw_err_set(e, SW_ERANGE, "path too long");
    rc = sw__nf_parent(repo_dir, rel, true, &dfd, &base, e);
    if (rc)
        return rc;
    rc = sw__nf_sibling(base, ".slipway-tmp", p, tmp, e);
    if (rc)
        goto out;
    unlinkat(dfd, tmp, 0);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    /* huggingface_hub writes the bare commit, no newline */
    size_t n = strlen(commit);
    if (fd < 0 || write(fd, commit, n) != (ssize_t)n || fsync(fd) != 0) {
        rc = sw_err_set(e, SW_EIO, "write %s: %s", p, strerror(errno));
        unlinkat(dfd, tmp, 0);
        goto out;
    }
    if (renameat(dfd, tmp, dfd, base) != 0) {
        rc = sw_err_set(e, SW_EIO, "rename %s: %s", p, strerror(errno));
        unlinkat(dfd, tmp, 0);
    }
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

int sw_hfcache_read_ref(const char *repo_dir, const char *revision, char commit[41],
                        struct sw_err *e)
{
    char p[PATH_MAX];
    if (strstr(revision, "..") || revision[0] == '/')
        return sw_err_set(e, SW_EINVAL, "revision '%s' cannot name a ref file", revision);
    if (snprintf(p, sizeof(p), "%s/refs/%s", repo_dir, revision) >= (int)sizeof(p))
        return sw_err_set(e, SW_ERANGE, "path too long");
    char *d = NULL;
    size_t len = 0;
    int rc = sw_read_file(p, 128, &d, &len, e);
    if (rc)
        return rc;
    while (len && (d[len - 1] == '\n' || d[len - 1] == ' '))
        d[--len] = '\0';
    if (len != 40 || strspn(d, "0123456789abcdef") != 40) {
        rc = sw_err_set(e, SW_EPARSE, "%s: not a commit", p);
    } else {
        memcpy(commit, d, 41);
    }
    sw_free(d);
    return rc;
}
