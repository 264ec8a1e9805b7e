/*
 * slipway retire PAYLOAD_DIR --to TRASH_DIR [FLEET.yaml] [--ledger PATH] [--dry-run] [--json]
 *
 *   Move a payload directory out of the way, but only when no KEPT tag (not retired, of any
 *   endpoint: sw_ledger_tags_needing) still needs it: a tag whose manifest names a path in it,
 *   the directory itself, or a directory above it is a rollback path that must keep resolving.
 *   Refused: exit 1, every such tag named with the paths it needs; nothing moves.
 *
 *   The move is TRASH_DIR/<basename>. Within one filesystem it is one rename(2). Across
 *   filesystems it is a copy into a hidden partial directory beside the destination (files,
 *   directories, symlinks; modes and times kept; each file fsynced), a byte-for-byte
 *   verification of the copy against the source, a rename of the partial to its name, and only
 *   then the removal of the source. Any failure before the removal deletes the partial copy and
 *   leaves the source as it was: nothing half-moved. The move is recorded in the ledger
 *   (payload_moves). --dry-run checks and says what it would do, and moves nothing.
 *
 * Exit: 0 moved (or would move), 1 refused (a kept tag needs it) or the move failed, 2 unusable
 * input (no such directory, a destination that exists, a trash inside the payload).
 */
#include "cli.h"

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

static const struct sw_opt opts[] = {
    {"to", 0, "TRASH_DIR", 0, "where the payload directory goes (created when missing)", NULL},
    {"ledger", 0, "PATH", 0,
     "the ledger (default: $SLIPWAY_LEDGER, else beside FLEET, else ~/.local/share/slipway)", NULL},
    {"dry-run", 0, NULL, 0, "check and say what would happen; move nothing", NULL},
    {0},
};

static const char *const examples[] = {
    "slipway retire /models/old-qwen --to /models/.trash examples/operator.yaml",
    "slipway retire /models/old-qwen --to /mnt/cold/trash --ledger fleet.ledger.sqlite --dry-run",
    NULL,
};

const struct sw_cmd_spec sw_spec_retire = {
    .name = "retire",
    .summary = "move a payload directory to a trash dir, refused while a kept tag needs it",
    .synopsis = "PAYLOAD_DIR --to TRASH_DIR [FLEET.yaml] [--ledger PATH] [--dry-run] [--json]",
    .about = "Refuses (exit 1, naming each tag and the paths it needs) while any kept tag of\n"
             "the ledger has a payload path in PAYLOAD_DIR (or PAYLOAD_DIR itself, or above\n"
             "it): retire those tags first (they are rollback targets). Otherwise moves it to\n"
             "TRASH_DIR/<name>: a rename within a filesystem; across filesystems a copy, a\n"
             "byte-for-byte verification, then the removal of the source (a failure before\n"
             "that leaves the source untouched and no partial copy). The move is recorded in\n"
             "the ledger. Exit: 0 moved, 1 refused or failed, 2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
};

struct tally {
    int64_t files;
    int64_t bytes;
};

/* ---------------------------------------------------------------------------------------------
 * Counting, copying, verifying, removing a tree: visitors of sw_payload_walk (payload/nofollow.c,
 * which never follows a link: a link is copied as a link).
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
    struct tally *t = ud;
    if (S_ISDIR(x->st->st_mode))
        return 0;
    if (!S_ISREG(x->st->st_mode) && !S_ISLNK(x->st->st_mode))
        return unsupported(x, e);
    t->files++;
    t->bytes += S_ISREG(x->st->st_mode) ? (int64_t)x->st->st_size : 0;
    return 0;
}

static int count_tree(const char *path, struct tally *t, struct sw_err *e)
{
    return sw_payload_walk(path, NULL, count_visit, t, e);
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
    for (;;) {
        ssize_t n = read(in, buf, COPY_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sw_err_at(e, SW_EIO, src, 0, 0, "read: %s", strerror(errno));
            break;
        }
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = sw_err_at(e, SW_EIO, dst, 0, 0, "write: %s",
                               w < 0 ? strerror(errno) : "wrote nothing");
                break;
            }
            off += w;
        }
        if (rc)
            break;
    }
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

/* A copy or a verification: the tree under the walk's root against the one under dst. */
struct pair {
    const char *dst;
    char *buf; /* COPY_BUF bytes */
};

static int copy_visit(void *ud, const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    const struct pair *p = ud;
    const struct stat *st = x->st;
    char dst[PATH_MAX];
    int rc = dst_of(dst, sizeof(dst), p->dst, x, e);
    if (rc)
        return rc;
    if (x->post) {
        /* its entries are in: now its mode and times */
        if (chmod(dst, st->st_mode & 07777))
            return sw_err_at(e, SW_EIO, dst, 0, 0, "chmod: %s", strerror(errno));
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW);
        return 0;
    }
    if (S_ISREG(st->st_mode))
        return copy_file(x->path, dst, st, p->buf, e);
    if (S_ISLNK(st->st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(x->path, target, sizeof(target) - 1);
        if (n < 0)
            return sw_err_at(e, SW_EIO, x->path, 0, 0, "readlink: %s", strerror(errno));
        target[n] = '\0';
        if (symlink(target, dst))
            return sw_err_at(e, SW_EIO, dst, 0, 0, "symlink: %s", strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st->st_mode))
        return unsupported(x, e);
    if (mkdir(dst, 0700))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "mkdir: %s", strerror(errno));
    return 0;
}

static int copy_tree(const char *src, const char *dst, char *buf, struct sw_err *e)
{
    struct pair p = {.dst = dst, .buf = buf};
    struct sw_payload_walk_opts o = {.post = true};
    return sw_payload_walk(src, &o, copy_visit, &p, e);
}

static int same_bytes(const char *a, const char *b, char *buf, struct sw_err *e)
{
    int rc = 0;
    int fa = open(a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int fb = open(b, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fa < 0 || fb < 0) {
        rc = sw_err_at(e, SW_EIO, fa < 0 ? a : b, 0, 0, "cannot open: %s", strerror(errno));
        goto out;
    }
    char *bb = buf + COPY_BUF / 2;
    for (;;) {
        ssize_t na = read(fa, buf, COPY_BUF / 2);
        if (na < 0 && errno == EINTR)
            continue;
        if (na < 0) {
            rc = sw_err_at(e, SW_EIO, a, 0, 0, "read: %s", strerror(errno));
            break;
        }
        ssize_t got = 0;
        while (got < na) {
            ssize_t nb = read(fb, bb + got, (size_t)(na - got));
            if (nb < 0 && errno == EINTR)
                continue;
            if (nb <= 0)
                break;
            got += nb;
        }
        if (got != na || memcmp(buf, bb, (size_t)na)) {
            rc = sw_err_at(e, SW_EIO, b, 0, 0, "the copy differs from %s", a);
            break;
        }
        if (na == 0) {
            char one;
            if (read(fb, &one, 1) != 0)
                rc = sw_err_at(e, SW_EIO, b, 0, 0, "the copy is longer than %s", a);
            break;
        }
    }
out:
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return rc;
}

/* The copy holds what the source holds: every entry, its type, size, bytes and link target, and
 * nothing more. */
static int verify_visit(void *ud, const struct sw_payload_walk_entry *x, struct sw_err *e)
{
    const struct pair *p = ud;
    const struct stat *s = x->st;
    char dst[PATH_MAX];
    int rc = dst_of(dst, sizeof(dst), p->dst, x, e);
    if (rc)
        return rc;
    if (x->post) {
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
    struct stat d;
    if (lstat(dst, &d))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "missing from the copy: %s", strerror(errno));
    if ((s->st_mode & S_IFMT) != (d.st_mode & S_IFMT) ||
        (S_ISREG(s->st_mode) && s->st_size != d.st_size))
        return sw_err_at(e, SW_EIO, dst, 0, 0, "the copy differs from %s (type or size)", x->path);
    if (S_ISREG(s->st_mode))
        return same_bytes(x->path, dst, p->buf, e);
    if (S_ISLNK(s->st_mode)) {
        char ta[PATH_MAX], tb[PATH_MAX];
        ssize_t na = readlink(x->path, ta, sizeof(ta) - 1), nb = readlink(dst, tb, sizeof(tb) - 1);
        if (na < 0 || nb < 0 || na != nb || memcmp(ta, tb, (size_t)na))
            return sw_err_at(e, SW_EIO, dst, 0, 0, "the copied link differs from %s", x->path);
    }
    return 0;
}

static int verify_tree(const char *src, const char *dst, char *buf, struct sw_err *e)
{
    struct pair p = {.dst = dst, .buf = buf};
    struct sw_payload_walk_opts o = {.post = true};
    return sw_payload_walk(src, &o, verify_visit, &p, e);
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
    int rc = copy_tree(src, partial, buf, e);
    if (!rc)
        rc = verify_tree(src, partial, buf, e);
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
 * The verb.
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

/* Add the tags needing `path` to `needed` (by tag name, without duplicates). */
static int add_needing(struct sw_ledger *led, const char *path, json_t *needed, struct sw_err *e)
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
        json_array_foreach(needed, k, have)
        {
            dup |= json_equal(json_object_get(have, "tag"), json_object_get(t, "tag"));
        }
        if (!dup)
            json_array_append(needed, t);
    }
    json_decref(arr);
    return 0;
}

int sw_cmd_retire(int argc, char **argv)
{
    struct sw_err e;
    struct sw_args a;
    struct sw_ledger led;
    json_t *out = NULL, *needed = NULL;
    char src[PATH_MAX], real[PATH_MAX], trash[PATH_MAX], dst[PATH_MAX + 256], lpath[4096];
    int rc = SW_EXIT_OK;
    sw_err_clear(&e);
    memset(&led, 0, sizeof(led));
    if (!sw_args_parse(&sw_spec_retire, argc, argv, &a, &rc))
        return rc;
    bool json = a.json, dry = sw_args_flag(&a, "dry-run");
    const char *to = sw_args_str(&a, "to");
    if (a.npos < 1)
        return sw_args_usage(&a, "name the PAYLOAD_DIR to retire");
    if (!to)
        return sw_args_usage(&a, "--to TRASH_DIR is required");
    const char *fleet_path = a.npos > 1 ? a.pos[1] : NULL;
    const char *ledger_path = sw_args_str(&a, "ledger");

    struct stat st, tst;
    if (absolute(a.pos[0], src, sizeof(src), &e) || absolute(to, trash, sizeof(trash), &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (stat(src, &st) || !S_ISDIR(st.st_mode)) {
        sw_err_at(&e, SW_ENOENT, src, 0, 0, "not a directory (a payload directory to retire)");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (!realpath(src, real)) {
        sw_err_at(&e, SW_EIO, src, 0, 0, "realpath: %s", strerror(errno));
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (!strcmp(src, "/") || !strcmp(real, "/")) {
        sw_err_set(&e, SW_EINVAL, "refusing to retire /");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    char trash_real[PATH_MAX];
    bool trash_exists = stat(trash, &tst) == 0;
    if (trash_exists && !S_ISDIR(tst.st_mode)) {
        sw_err_at(&e, SW_EINVAL, trash, 0, 0, "--to: not a directory");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    snprintf(trash_real, sizeof(trash_real), "%s", trash);
    if (trash_exists && !realpath(trash, trash_real))
        snprintf(trash_real, sizeof(trash_real), "%s", trash);
    size_t rl = strlen(real);
    if (!strncmp(trash_real, real, rl) && (trash_real[rl] == '/' || trash_real[rl] == '\0')) {
        sw_err_at(&e, SW_EINVAL, trash, 0, 0, "--to: the trash is inside %s", real);
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    snprintf(dst, sizeof(dst), "%s/%s", trash_real, strrchr(real, '/') + 1);
    if (lstat(dst, &tst) == 0) {
        sw_err_at(&e, SW_EEXIST, dst, 0, 0, "already exists in the trash: nothing was moved");
        rc = sw_cli_fail(&e, json);
        rc = SW_EXIT_USAGE;
        goto out;
    }

    /* who still needs it */
    struct sw_ledger_open_opts oo = {.readonly = dry}; /* never created: no ledger, no answer */
    bool opened;
    if (sw_ledger_open_for(&led, ledger_path, fleet_path, &oo, SW_LEDGER_MUST_EXIST, &opened, lpath,
                           sizeof(lpath), &e)) {
        sw_err_prefix(&e, "the ledger");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    needed = json_array();
    out = json_object();
    if (!needed || !out) {
        sw_err_set(&e, SW_ENOMEM, "out of memory");
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    /* the path as given and as resolved: a tag may have recorded either */
    if (add_needing(&led, src, needed, &e) || add_needing(&led, real, needed, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    struct tally t = {0};
    if (count_tree(real, &t, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    const char *method = same_device(trash, st.st_dev) ? "rename" : "copy";
    sw_json_set_str(out, "payload", real);
    sw_json_set_str(out, "to", dst);
    sw_json_set_str(out, "ledger", lpath);
    sw_json_set_bool(out, "dry_run", dry);
    sw_json_set_str(out, "method", method);
    sw_json_set_int(out, "files", t.files);
    sw_json_set_int(out, "bytes", t.bytes);
    sw_json_set_new(out, "needed_by", json_incref(needed));

    if (json_array_size(needed)) {
        sw_json_set_bool(out, "moved", false);
        if (json) {
            sw_json_print(stdout, out, true);
        } else {
            printf("refused: %zu kept tag%s still need%s %s (retire %s first):\n",
                   json_array_size(needed), json_array_size(needed) == 1 ? "" : "s",
                   json_array_size(needed) == 1 ? "s" : "", real,
                   json_array_size(needed) == 1 ? "it" : "them");
            size_t i, k;
            json_t *x, *p;
            json_array_foreach(needed, i, x)
            {
                printf("  %s (endpoint %s%s):", json_string_value(json_object_get(x, "tag")),
                       json_string_value(json_object_get(x, "endpoint")),
                       json_is_true(json_object_get(x, "last_good")) ? ", its last-good" : "");
                json_array_foreach(json_object_get(x, "paths"), k, p)
                {
                    printf(" %s", json_string_value(p));
                }
                printf("\n");
            }
        }
        fprintf(stderr, "slipway: retire: refused: %zu kept tag(s) need %s; nothing was moved\n",
                json_array_size(needed), real);
        rc = SW_EXIT_FAIL;
        goto out;
    }
    if (dry) {
        sw_json_set_bool(out, "moved", false);
        if (json)
            sw_json_print(stdout, out, true);
        else
            printf("would move %s -> %s (%s, %lld files, %lld bytes); no kept tag needs it "
                   "(dry run: nothing moved)\n",
                   real, dst, method, (long long)t.files, (long long)t.bytes);
        goto out;
    }
    if (!trash_exists && sw_mkdir_p(trash, 0755, &e)) {
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    if (stat(trash, &tst) == 0)
        method = tst.st_dev == st.st_dev ? "rename" : "copy";
    if (!strcmp(method, "rename")) {
        if (rename(real, dst)) {
            if (errno != EXDEV) {
                sw_err_at(&e, SW_EIO, real, 0, 0, "rename to %s: %s; nothing was moved", dst,
                          strerror(errno));
                rc = sw_cli_fail(&e, json);
                goto out;
            }
            method = "copy";
        } else {
            fsync_dir(trash);
        }
    }
    if (!strcmp(method, "copy")) {
        if (copy_move(real, trash, dst, &e)) {
            rc = sw_cli_fail(&e, json);
            goto out;
        }
        if (remove_tree(real, &e)) {
            sw_err_prefix(&e,
                          "copied and verified to %s, but removing the source failed (the copy "
                          "is whole; remove what is left by hand)",
                          dst);
            rc = sw_cli_fail(&e, json);
            goto out;
        }
    }
    sw_json_set_str(out, "method", method);
    sw_json_set_bool(out, "moved", true);
    int64_t move_id = 0;
    if (sw_ledger_record_move(&led, real, dst, method, t.bytes, t.files, "slipway retire", &move_id,
                              &e)) {
        sw_err_prefix(&e, "moved %s to %s, but recording the move failed", real, dst);
        rc = sw_cli_fail(&e, json);
        goto out;
    }
    sw_json_set_int(out, "move_id", move_id);
    if (json)
        sw_json_print(stdout, out, true);
    else
        printf("moved %s -> %s (%s, %lld files, %lld bytes); recorded as move #%lld in %s\n", real,
               dst, method, (long long)t.files, (long long)t.bytes, (long long)move_id, lpath);
out:
    json_decref(out);
    json_decref(needed);
    sw_ledger_close(&led);
    return rc;
}
