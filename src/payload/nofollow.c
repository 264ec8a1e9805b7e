/*
 * payload/nofollow: directories and files under a root, reached without following a symbolic
 * link, for everything a download writes, renames or removes (payload/download*.c) and for the
 * HF cache layout (payload/hfcache.c).
 *
 * The root (a --dest directory, an HF cache's models--org--name) is the caller's to name and may
 * itself be reached through links. Below it every component is opened with
 * O_NOFOLLOW | O_DIRECTORY relative to its parent's descriptor (openat, mkdirat, fstatat with
 * AT_SYMLINK_NOFOLLOW), and the files themselves are opened, renamed and removed relative to the
 * descriptor of their directory. So a link planted inside the tree (a linked subdirectory, a
 * linked .incomplete, a linked target) is refused, naming its path and where it points, instead
 * of being read, appended to or removed through.
 *
 * sw_payload_walk visits a tree the same way: lstat(2) for every entry, a link visited as a link
 * and never descended (slipway retire copies, verifies and removes payload trees with it).
 *
 * What it does not do: resolve a link and accept it when it stays inside (refusing is simpler
 * to reason about; the HF cache's own snapshot links are never followed, only replaced), or
 * protect against whoever can rename directories above the root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "payload/payload_internal.h"

int sw__nf_refuse_link(int dirfd, const char *name, const char *path, struct sw_err *e)
{
    char to[PATH_MAX];
    ssize_t n = readlinkat(dirfd, name, to, sizeof(to) - 1);
    if (n < 0)
        n = 0;
    to[n] = '\0';
    char q[400];
    sw_payload_quote(to, (size_t)n, 300, q, sizeof(q));
    return sw_err_set(e, SW_EINVAL,
                      "%s is a symbolic link (to %s): slipway does not follow links inside the "
                      "directory it writes (it would read or write outside it); remove the link",
                      path, q);
}

int sw__nf_root(const char *root, bool create, int *out, struct sw_err *e)
{
    *out = -1;
    if (create) {
        int rc = sw_mkdir_p(root, 0755, e);
        if (rc)
            return rc;
    }
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sw_err_set(e, errno == ENOENT ? SW_ENOENT : SW_EIO, "%s: %s", root, strerror(errno));
    *out = fd;
    return 0;
}

int sw__nf_dir(int dirfd, const char *where, const char *rel, bool create, int *out,
               struct sw_err *e)
{
    char path[PATH_MAX];
    int pw = snprintf(path, sizeof(path), "%s", where);
    *out = -1;
    if (pw < 0 || (size_t)pw >= sizeof(path))
        return sw_err_set(e, SW_ERANGE, "%.200s...: path too long", where);
    size_t pl = (size_t)pw;
    int fd = dup(dirfd);
    int rc = 0;
    if (fd < 0)
        return sw_err_set(e, SW_EIO, "%s: %s", where, strerror(errno));
    for (const char *p = rel; *p;) {
        const char *s = strchr(p, '/');
        size_t n = s ? (size_t)(s - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.')) {
            rc = sw_err_set(e, SW_EINVAL, "%s: \"%.*s\" is not a directory name", where, (int)n, p);
            goto out;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int w = snprintf(path + pl, sizeof(path) - pl, "/%s", comp);
        if (w < 0 || (size_t)w >= sizeof(path) - pl) {
            rc = sw_err_set(e, SW_ERANGE, "%s/%s: path too long", where, rel);
            goto out;
        }
        pl += (size_t)w;
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, comp, 0755) != 0 && errno != EEXIST) {
                rc = sw_err_set(e, SW_EIO, "mkdir %s: %s", path, strerror(errno));
                goto out;
            }
            next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0) {
            int err = errno;
            struct stat st;
            if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                rc = sw__nf_refuse_link(fd, comp, path, e);
            else
                rc = sw_err_set(e, err == ENOENT ? SW_ENOENT : SW_EIO, "%s: %s", path,
                                strerror(err));
            goto out;
        }
        close(fd);
        fd = next;
        p += n;
        if (*p == '/')
            p++;
    }
out:
    if (rc) {
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

int sw__nf_parent(const char *root, const char *rel, bool create, int *dirfd, const char **base,
                  struct sw_err *e)
{
    char dir[PATH_MAX];
    *dirfd = -1;
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    size_t dn = slash ? (size_t)(slash - rel) : 0;
    if (dn >= sizeof(dir))
        return sw_err_set(e, SW_ERANGE, "%s/%s: path too long", root, rel);
    memcpy(dir, rel, dn);
    dir[dn] = '\0';
    int rfd;
    int rc = sw__nf_root(root, create, &rfd, e);
    if (rc)
        return rc;
    rc = sw__nf_dir(rfd, root, dir, create, dirfd, e);
    close(rfd);
    return rc;
}

int sw__nf_stat(int dirfd, const char *name, const char *path, struct stat *st, struct sw_err *e)
{
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) != 0)
        return sw_err_set(e, errno == ENOENT ? SW_ENOENT : SW_EIO, "%s: %s", path, strerror(errno));
    if (S_ISLNK(st->st_mode))
        return sw__nf_refuse_link(dirfd, name, path, e);
    return 0;
}

int sw__nf_lstat(const char *root, const char *rel, const char *path, struct stat *st,
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

void sw__nf_unlink(const char *root, const char *rel)
{
    int dfd;
    const char *base;
    struct sw_err ue;
    if (sw__nf_parent(root, rel, false, &dfd, &base, &ue))
        return;
    unlinkat(dfd, base, 0);
    close(dfd);
}

int sw__nf_sibling(const char *base, const char *suffix, const char *path, char *out,
                   struct sw_err *e)
{
    size_t bl = strlen(base), sl = strlen(suffix);
    if (bl + sl + 1 > NAME_MAX + 1)
        return sw_err_set(e, SW_ERANGE, "%s: file name too long", path);
    memcpy(out, base, bl);
    memcpy(out + bl, suffix, sl + 1);
    return 0;
}

struct walk {
    const struct sw_payload_walk_opts *o;
    size_t root_len;
    sw_payload_walk_fn fn;
    void *ud;
};

static int walk_entry(const struct walk *w, const char *path, int depth, struct sw_err *e)
{
    struct stat st;
    if (lstat(path, &st)) {
        if (errno == ENOENT && w->o->missing_ok)
            return 0;
        return sw_err_at(e, SW_EIO, path, 0, 0, "cannot stat: %s", strerror(errno));
    }
    bool dir = S_ISDIR(st.st_mode);
    if (dir && depth > SW_PAYLOAD_WALK_DEPTH)
        return sw_err_at(e, SW_ERANGE, path, 0, 0, "nested deeper than %d", SW_PAYLOAD_WALK_DEPTH);
    struct sw_payload_walk_entry x = {
        .path = path,
        .rel = depth ? path + w->root_len + 1 : "",
        .st = &st,
        .depth = depth,
    };
    int rc = w->fn(w->ud, &x, e);
    if (rc || !dir)
        return rc;
    DIR *d = opendir(path);
    if (!d)
        return sw_err_at(e, SW_EIO, path, 0, 0, "cannot open: %s", strerror(errno));
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        x.n_entries++;
        char sub[PATH_MAX];
        int n = snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(sub))
            rc = sw_err_set(e, SW_ERANGE, "%s/%s: path too long", path, de->d_name);
        else
            rc = walk_entry(w, sub, depth + 1, e);
    }
    closedir(d);
    if (rc || !w->o->post)
        return rc;
    x.post = true;
    return w->fn(w->ud, &x, e);
}

int sw_payload_walk(const char *root, const struct sw_payload_walk_opts *opts,
                    sw_payload_walk_fn fn, void *ud, struct sw_err *e)
{
    static const struct sw_payload_walk_opts none = {0};
    struct walk w = {.o = opts ? opts : &none, .root_len = strlen(root), .fn = fn, .ud = ud};
    return walk_entry(&w, root, 0, e);
}
