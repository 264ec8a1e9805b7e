/*
 * payload/retire: a payload directory moved to a trash directory (`slipway retire`), but only
 * while no KEPT tag of the ledger still needs it, and never half.
 *
 * The paths are checked first (a directory, not /, a trash that is not inside it, a destination
 * that does not exist yet), then the ledger answers who needs it (sw_ledger_tags_needing: a tag
 * whose manifest names a path in it, the directory itself or one above it; asked for the path as
 * given and as resolved, since a tag may have recorded either). Within one filesystem the move is
 * one rename(2). Across filesystems it is a copy into a hidden partial directory beside the
 * destination (files, directories, symlinks; modes and times kept; each file fsynced), a
 * byte-for-byte verification of the copy against the source, a rename of the partial to its
 * name, and only then the removal of the source; any failure before the removal deletes the
 * partial copy and leaves the source as it was. The move is recorded in the ledger.
 *
 * The trees are walked with sw_payload_walk (payload/nofollow.c), which never follows a link:
 * a link is copied, verified and removed as a link.
 *
 * What it does not do: print, decide exit codes, or retire the tags themselves (the ledger's
 * sw_ledger_tag_retire); a move that fails after the source's removal began is reported, never
 * undone (the copy is whole by then).
 */
#include <slipway/ledger.h>
#include <slipway/payload.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BUF (1u << 20)

/* ---------------------------------------------------------------------------------------------
 * Counting, copying, verifying, removing a tree: visitors of sw_payload_walk.
 */

static int join(char *out, size_t n, const char *a, const char *b, struct sw_err *e)
{
    int w = snprintf(out, n, "%s/%s", a, b);
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "%s/%s: path too long", a, b);
    return 0;
}

/* dst_root joined with an entry's path relative to the walk's root. */
static int dst_of(char *out, size_t n, const char *dst_root, const struct sw_payload_walk_entry *x,
                  struct sw_err *e)
{
    if (!x->rel[0]) {
        int w = snprintf(out, n, "%s", dst_root);
        if (w < 0 || (size_t)w >= n)
            return sw_err_set(e, SW_ERANGE, "%s: path too long", dst_root);
        return 0;
    }
    return join(out, n, dst_root, x->rel, e);
}

static int unsupported(const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    return sw_err_at(e, SW_EUNSUPPORTED, x->path, 0, 0,
                     "neither a file, a directory nor a symlink: not moved");
}

static int count_visit(void *ud, const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    struct sw_payload_retire *r = ud;
    if (S_ISDIR(x->st->st_mode))
        return 0;
    if (!S_ISREG(x->st->st_mode) && !S_ISLNK(x->st->st_mode))
        return unsupported(x, e);
    r->files++;
    r->bytes += S_ISREG(x->st->st_mode) ? (int64_t)x->st->st_size : 0;
    return 0;
}

/* Every byte of src written to fd out (dst names it in errors). */
static int copy_bytes(int in, int out, const char *src, const char *dst, char *buf,
                      struct sw_err *e)
{
    for (;;) {
        ssize_t n = read(in, buf, COPY_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return sw_err_at(e, SW_EIO, src, 0, 0, "read: %s", strerror(errno));
        if (n == 0)
            return 0;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return sw_err_at(e, SW_EIO, dst, 0, 0, "write: %s",
                                 w < 0 ? strerror(errno) : "wrote nothing");
            off += w;
        }
    }
}

static int copy_file(const char *src, const char *dst, const struct stat *st, char *buf,
                     struct sw_err *e)
{
    int rc = 0;
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return sw_err_at(e, SW_EIO, src, 0, 0, "cannot open: %s", strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st->st_mode & 07777);
    if (out < 0) {
        rc = sw_err_at(e, SW_EIO, dst, 0, 0, "cannot create: %s", strerror(errno));
        close(in);
        return rc;
    }
    rc = copy_bytes(in, out, src, dst, buf, e);
    if (!rc && fsync(out))
        rc = sw_err_at(e, SW_EIO, dst, 0, 0, "fsync: %s", strerror(errno));
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    if (!rc)
        futimens(out, ts);
    if (close(out) && !rc)
        rc = sw_err_at(e, SW_EIO, dst, 0, 0, "close: %s", strerror(errno));
    close(in);
    return rc;
}

static int copy_link(const char *src, const char *dst, struct sw_err *e)
{
    char target[PATH_MAX];
    ssize_t n = readlink(src, target, sizeof(target) - 1);
    if (n < 0)
        return sw_err_at(e, SW_EIO, src, 0, 0, "readlink: %s", strerror(errno));
    target[n] = '\0';
    if (symlink(target, dst))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "symlink: %s", strerror(errno));
    return 0;
}

/* One entry of the source copied to dst (a directory's mode and times once its entries are in). */
static int copy_entry(const struct sw_payload_walk_entry *x, const char *dst, char *buf,
                      struct sw_err *e)
{
    const struct stat *st = x->st;
    if (x->post) {
        /* its entries are in: now its mode and times */
        if (chmod(dst, st->st_mode & 07777))
            return sw_err_at(e, SW_EIO, dst, 0, 0, "chmod: %s", strerror(errno));
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW);
        return 0;
    }
    if (S_ISREG(st->st_mode))
        return copy_file(x->path, dst, st, buf, e);
    if (S_ISLNK(st->st_mode))
        return copy_link(x->path, dst, e);
    if (!S_ISDIR(st->st_mode))
        return unsupported(x, e);
    if (mkdir(dst, 0700))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "mkdir: %s", strerror(errno));
    return 0;
}

/* Read up to n bytes, however many reads it takes; fewer only at the end of the file. */
static ssize_t read_full(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* The bytes of fa and fb are the same, to the end of both (a and b name them in errors). */
static int same_fds(int fa, int fb, const char *a, const char *b, char *buf, struct sw_err *e)
{
    char *bb = buf + COPY_BUF / 2;
    for (;;) {
        ssize_t na = read(fa, buf, COPY_BUF / 2);
        if (na < 0 && errno == EINTR)
            continue;
        if (na < 0)
            return sw_err_at(e, SW_EIO, a, 0, 0, "read: %s", strerror(errno));
        ssize_t got = read_full(fb, bb, (size_t)na);
        if (got != na || memcmp(buf, bb, (size_t)na))
            return sw_err_at(e, SW_EIO, b, 0, 0, "the copy differs from %s", a);
        if (na == 0) {
            char one;
            if (read(fb, &one, 1) != 0)
                return sw_err_at(e, SW_EIO, b, 0, 0, "the copy is longer than %s", a);
            return 0;
        }
    }
}

static int same_bytes(const char *a, const char *b, char *buf, struct sw_err *e)
{
    int fa = open(a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fa < 0)
        return sw_err_at(e, SW_EIO, a, 0, 0, "cannot open: %s", strerror(errno));
    int fb = open(b, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int rc = fb < 0 ? sw_err_at(e, SW_EIO, b, 0, 0, "cannot open: %s", strerror(errno))
                    : same_fds(fa, fb, a, b, buf, e);
    if (fb >= 0)
        close(fb);
    close(fa);
    return rc;
}

/* A directory of the copy holds as many entries as its source (the walk met each of them). */
static int same_entries(const char *dst, const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    size_t n_dst = 0;
    DIR *dir = opendir(dst);
    struct dirent *de;
    if (!dir)
        return sw_err_at(e, SW_EIO, dst, 0, 0, "cannot open: %s", strerror(errno));
    while ((de = readdir(dir)))
        n_dst += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(dir);
    if (x->n_entries != n_dst)
        return sw_err_at(e, SW_EIO, dst, 0, 0, "the copy has %zu entries, %s has %zu", n_dst,
                         x->path, x->n_entries);
    return 0;
}

/* The copy holds what the source holds: every entry, its type, size, bytes and link target, and
 * nothing more. */
static int verify_entry(const struct sw_payload_walk_entry *x, const char *dst, char *buf,
                        struct sw_err *e)
{
    const struct stat *s = x->st;
    if (x->post)
        return same_entries(dst, x, e);
    struct stat d;
    if (lstat(dst, &d))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "missing from the copy: %s", strerror(errno));
    if ((s->st_mode & S_IFMT) != (d.st_mode & S_IFMT) ||
        (S_ISREG(s->st_mode) && s->st_size != d.st_size))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "the copy differs from %s (type or size)", x->path);
    if (S_ISREG(s->st_mode))
        return same_bytes(x->path, dst, buf, e);
    if (S_ISLNK(s->st_mode)) {
        char ta[PATH_MAX], tb[PATH_MAX];
        ssize_t na = readlink(x->path, ta, sizeof(ta) - 1), nb = readlink(dst, tb, sizeof(tb) - 1);
        if (na < 0 || nb < 0 || na != nb || memcmp(ta, tb, (size_t)na))
            return sw_err_at(e, SW_EIO, dst, 0, 0, "the copied link differs from %s", x->path);
    }
    return 0;
}

/* A copy or a verification: the tree under the walk's root against the one under dst. */
struct pair {
    const char *dst;
    char *buf; /* COPY_BUF bytes */
    int (*entry)(const struct sw_payload_walk_entry *x, const char *dst, char *buf,
                 struct sw_err *e);
};

static int pair_visit(void *ud, const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    const struct pair *p = ud;
    char dst[PATH_MAX];
    int rc = dst_of(dst, sizeof(dst), p->dst, x, e);
    return rc ? rc : p->entry(x, dst, p->buf, e);
}

/* Files and links unlinked on the way down, each directory removed on the way back up. */
static int remove_visit(void *ud, const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    (void)ud;
    if (!S_ISDIR(x->st->st_mode)) {
        if (unlink(x->path))
            return sw_err_at(e, SW_EIO, x->path, 0, 0, "cannot remove: %s", strerror(errno));
        return 0;
    }
    if (x->post && rmdir(x->path))
        return sw_err_at(e, SW_EIO, x->path, 0, 0, "cannot remove: %s", strerror(errno));
    return 0;
}

/* The tree at path removed; nothing there is not an error. */
static int remove_tree(const char *path, struct sw_err *e)
{
    struct sw_payload_walk_opts o = {.post = true, .missing_ok = true};
    return sw_payload_walk(path, &o, remove_visit, NULL, e);
}

static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Copy src to dst across filesystems: into a partial beside dst, verified, then renamed. On
 * failure the partial is removed and src is untouched. */
static int copy_move(const char *src, const char *trash, const char *dst, struct sw_err *e)
{
    char partial[PATH_MAX];
    const char *base = strrchr(src, '/') + 1;
    int w = snprintf(partial, sizeof(partial), "%s/.%s.slipway-partial-%ld", trash, base,
                     (long)getpid());
    if (w < 0 || (size_t)w >= sizeof(partial))
        return sw_err_set(e, SW_ERANGE, "%s: path too long", trash);
    char *buf = sw_malloc(COPY_BUF);
    if (!buf)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    struct pair copy = {.dst = partial, .buf = buf, .entry = copy_entry};
    struct pair verify = {.dst = partial, .buf = buf, .entry = verify_entry};
    struct sw_payload_walk_opts o = {.post = true};
    int rc = sw_payload_walk(src, &o, pair_visit, &copy, e);
    if (!rc)
        rc = sw_payload_walk(src, &o, pair_visit, &verify, e);
    if (!rc && rename(partial, dst))
        rc = sw_err_at(e, SW_EIO, dst, 0, 0, "rename from %s: %s", partial, strerror(errno));
    if (!rc)
        fsync_dir(trash);
    sw_free(buf);
    if (rc) {
        struct sw_err ce;
        sw_err_clear(&ce);
        if (remove_tree(partial, &ce))
            sw_err_prefix(e, "(and the partial copy could not be removed: %s)", ce.msg);
        sw_err_prefix(e, "nothing was moved");
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * The checks before anything moves.
 */

/* path made absolute and lexically clean (no ., .., //, trailing /); no symlinks resolved. */
static int absolute(const char *in, char *out, size_t n, struct sw_err *e)
{
    char tmp[PATH_MAX];
    if (in[0] == '/') {
        snprintf(tmp, sizeof(tmp), "%s", in);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            return sw_err_set(e, SW_EIO, "getcwd: %s", strerror(errno));
        if (snprintf(tmp, sizeof(tmp), "%s/%s", cwd, in) >= (int)sizeof(tmp))
            return sw_err_set(e, SW_ERANGE, "%s: path too long", in);
    }
    size_t o = 0;
    out[0] = '\0';
    char *save = NULL;
    for (char *seg = strtok_r(tmp, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (!strcmp(seg, "."))
            continue;
        if (!strcmp(seg, "..")) {
            char *slash = strrchr(out, '/');
            o = slash ? (size_t)(slash - out) : 0;
            out[o] = '\0';
            continue;
        }
        int w = snprintf(out + o, n - o, "/%s", seg);
        if (w < 0 || (size_t)w >= n - o)
            return sw_err_set(e, SW_ERANGE, "%s: path too long", in);
        o += (size_t)w;
    }
    if (!o)
        snprintf(out, n, "/");
    return 0;
}

/* Is path (or, while it does not exist yet, its nearest existing parent) on device dev? */
static bool same_device(const char *path, dev_t dev)
{
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof(p), "%s", path);
    for (;;) {
        if (stat(p, &st) == 0)
            return st.st_dev == dev;
        char *slash = strrchr(p, '/');
        if (!slash)
            return false;
        if (slash == p) {
            p[1] = '\0';
            return stat(p, &st) == 0 && st.st_dev == dev;
        }
        *slash = '\0';
    }
}

/* The payload directory and the trash: both absolute, the payload resolved, the destination
 * named and free. */
static int check_paths(const char *payload_dir, const char *trash_dir, struct sw_payload_retire *r,
                       struct stat *st, struct sw_err *e)
{
    char src[PATH_MAX], trash_real[PATH_MAX];
    struct stat tst;
    int rc = absolute(payload_dir, src, sizeof(src), e);
    if (!rc)
        rc = absolute(trash_dir, r->trash, sizeof(r->trash), e);
    if (rc)
        return rc;
    snprintf(r->given, sizeof(r->given), "%s", src);
    if (stat(src, st) || !S_ISDIR(st->st_mode))
        return sw_err_at(e, SW_ENOENT, src, 0, 0,
                         "not a directory (a payload directory to retire)");
    if (!realpath(src, r->payload))
        return sw_err_at(e, SW_EIO, src, 0, 0, "realpath: %s", strerror(errno));
    if (!strcmp(src, "/") || !strcmp(r->payload, "/"))
        return sw_err_set(e, SW_EINVAL, "refusing to retire /");
    r->trash_exists = stat(r->trash, &tst) == 0;
    if (r->trash_exists && !S_ISDIR(tst.st_mode))
        return sw_err_at(e, SW_EINVAL, r->trash, 0, 0, "--to: not a directory");
    snprintf(trash_real, sizeof(trash_real), "%s", r->trash);
    if (r->trash_exists && !realpath(r->trash, trash_real))
        snprintf(trash_real, sizeof(trash_real), "%s", r->trash);
    size_t rl = strlen(r->payload);
    if (!strncmp(trash_real, r->payload, rl) && (trash_real[rl] == '/' || trash_real[rl] == '\0'))
        return sw_err_at(e, SW_EINVAL, r->trash, 0, 0, "--to: the trash is inside %s", r->payload);
    snprintf(r->to, sizeof(r->to), "%s/%s", trash_real, strrchr(r->payload, '/') + 1);
    if (lstat(r->to, &tst) == 0)
        return sw_err_at(e, SW_EEXIST, r->to, 0, 0,
                         "already exists in the trash: nothing was moved");
    return 0;
}

/* Add the tags needing `path` to r->needed_by (by tag name, without duplicates). */
static int add_needing(struct sw_ledger *led, const char *path, struct sw_payload_retire *r,
                       struct sw_err *e)
{
    json_t *arr = NULL;
    int rc = sw_ledger_tags_needing(led, path, &arr, e);
    if (rc)
        return rc;
    size_t i, k;
    json_t *t, *have;
    json_array_foreach(arr, i, t)
    {
        bool dup = false;
        json_array_foreach(r->needed_by, k, have)
        {
            dup |= json_equal(json_object_get(have, "tag"), json_object_get(t, "tag"));
        }
        if (!dup)
            json_array_append(r->needed_by, t);
    }
    json_decref(arr);
    return 0;
}

/* Who still needs it (the path as given and as resolved: a tag may have recorded either), what
 * it holds, and how it would move. */
static int survey(struct sw_ledger *led, struct sw_payload_retire *r, const struct stat *st,
                  struct sw_err *e)
{
    r->needed_by = json_array();
    if (!r->needed_by)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = add_needing(led, r->given, r, e);
    if (!rc)
        rc = add_needing(led, r->payload, r, e);
    if (!rc)
        rc = sw_payload_walk(r->payload, NULL, count_visit, r, e);
    r->method = same_device(r->trash, st->st_dev) ? "rename" : "copy";
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * The move.
 */

/* Within one filesystem a rename (a trash on another one after all: a copy); across them a copy,
 * verified, then the source removed. */
static int move(struct sw_payload_retire *r, const struct stat *st, struct sw_err *e)
{
    struct stat tst;
    int rc = r->trash_exists ? 0 : sw_mkdir_p(r->trash, 0755, e);
    if (rc)
        return rc;
    if (stat(r->trash, &tst) == 0)
        r->method = tst.st_dev == st->st_dev ? "rename" : "copy";
    if (!strcmp(r->method, "rename")) {
        if (rename(r->payload, r->to) == 0) {
            fsync_dir(r->trash);
            return 0;
        }
        if (errno != EXDEV)
            return sw_err_at(e, SW_EIO, r->payload, 0, 0, "rename to %s: %s; nothing was moved",
                             r->to, strerror(errno));
        r->method = "copy";
    }
    rc = copy_move(r->payload, r->trash, r->to, e);
    if (rc)
        return rc;
    rc = remove_tree(r->payload, e);
    if (rc)
        sw_err_prefix(e,
                      "copied and verified to %s, but removing the source failed (the copy is "
                      "whole; remove what is left by hand)",
                      r->to);
    return rc;
}

int sw_payload_retire(const char *payload_dir, const char *trash_dir,
                      const struct sw_payload_retire_opts *o, struct sw_payload_retire *r,
                      struct sw_err *e)
{
    struct sw_ledger led;
    struct stat st;
    bool opened = false;
    memset(r, 0, sizeof(*r));
    memset(&led, 0, sizeof(led));
    int rc = check_paths(payload_dir, trash_dir, r, &st, e);
    if (rc)
        return rc;
    /* never created: no ledger, no answer */
    struct sw_ledger_open_opts oo = {.readonly = o->dry_run};
    rc = sw_ledger_open_for(&led, o->ledger, o->fleet, &oo, SW_LEDGER_MUST_EXIST, &opened,
                            r->ledger, sizeof(r->ledger), e);
    if (rc) {
        sw_err_prefix(e, "the ledger");
        goto out;
    }
    rc = survey(&led, r, &st, e);
    if (rc || json_array_size(r->needed_by) || o->dry_run)
        goto out;
    rc = move(r, &st, e);
    if (rc)
        goto out;
    r->moved = true;
    rc = sw_ledger_record_move(&led, r->payload, r->to, r->method, r->bytes, r->files, o->note,
                               &r->move_id, e);
    if (rc)
        sw_err_prefix(e, "moved %s to %s, but recording the move failed", r->payload, r->to);
out:
    sw_ledger_close(&led);
    return rc;
}
