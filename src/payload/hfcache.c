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
 * What it does not do: datasets/spaces, the .locks directory (one slipway process per payload;
 * huggingface_hub's locks are advisory files next to the blobs), cache pruning.
 */
#include <slipway/fetch.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int parent_dirs(const char *path, struct sw_err *e)
{
    char d[PATH_MAX];
    if (snprintf(d, sizeof(d), "%s", path) >= (int)sizeof(d))
        return sw_err_set(e, SW_ERANGE, "path too long: %s", path);
    char *s = strrchr(d, '/');
    if (!s)
        return 0;
    *s = '\0';
    return sw_mkdir_p(d, 0755, e);
}

int sw_hfcache_link(const char *repo_dir, const char *commit, const char *path, const char *blob,
                    struct sw_err *e)
{
    char link[PATH_MAX], target[PATH_MAX], tmp[PATH_MAX + 32];
    int rc = 0;
    if (snprintf(link, sizeof(link), "%s/snapshots/%s/%s", repo_dir, commit, path) >=
        (int)sizeof(link))
        return sw_err_set(e, SW_ERANGE, "path too long: %s", path);
    /* from snapshots/<commit>/<a/b/file>: ../../ gets to the repo dir, plus one per level */
    size_t off = 0;
    target[0] = '\0';
    for (const char *p = path; *p; p++)
        if (*p == '/')
            off += (size_t)snprintf(target + off, sizeof(target) - off, "../");
    snprintf(target + off, sizeof(target) - off, "../../blobs/%s", blob);
    rc = parent_dirs(link, e);
    if (rc)
        return rc;
    char have[PATH_MAX];
    ssize_t hl = readlink(link, have, sizeof(have) - 1);
    if (hl >= 0) {
        have[hl] = '\0';
        if (!strcmp(have, target))
            return 0;
    }
    /* a new link beside it, renamed over: the snapshot never lacks the file meanwhile */
    snprintf(tmp, sizeof(tmp), "%s.slipway-link", link);
    unlink(tmp);
    if (symlink(target, tmp) != 0)
        return sw_err_set(e, SW_EIO, "symlink %s: %s", tmp, strerror(errno));
    if (rename(tmp, link) != 0) {
        rc = sw_err_set(e, SW_EIO, "rename %s: %s", link, strerror(errno));
        unlink(tmp);
    }
    return rc;
}

int sw_hfcache_write_ref(const char *repo_dir, const char *revision, const char *commit,
                         struct sw_err *e)
{
    char p[PATH_MAX];
    if (strstr(revision, "..") || revision[0] == '/')
        return sw_err_set(e, SW_EINVAL, "revision '%s' cannot name a ref file", revision);
    if (snprintf(p, sizeof(p), "%s/refs/%s", repo_dir, revision) >= (int)sizeof(p))
        return sw_err_set(e, SW_ERANGE, "path too long");
    int rc = parent_dirs(p, e);
    if (rc)
        return rc;
    /* huggingface_hub writes the bare commit, no newline */
    return sw_write_file_atomic(p, commit, strlen(commit), 0644, e);
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
