/*
 * Whole-file reads with a ceiling, atomic writes (temp + fsync + rename), mkdir -p, and sniffing
 * what a buffer looks like for error messages about files that are not what their name says.
 */
#include <slipway/core.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sw_read_file(const char *path, size_t max, char **data, size_t *len, struct sw_err *e)
{
    int rc = 0;
    char *buf = NULL;
    struct stat st;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever (and a
     * read from it, or from a terminal, could too). Only regular files are read; the flag is
     * cleared once fstat has said so. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, path, 0, 0, "cannot open: %s",
                         strerror(errno));
    if (fstat(fd, &st) < 0) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = sw_err_at(e, SW_EINVAL, path, 0, 0, "is a directory, not a file");
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = sw_err_at(e, SW_EINVAL, path, 0, 0, "not a regular file (a %s); refusing to read it",
                       S_ISFIFO(st.st_mode)   ? "FIFO"
                       : S_ISCHR(st.st_mode)  ? "character device"
                       : S_ISBLK(st.st_mode)  ? "block device"
                       : S_ISSOCK(st.st_mode) ? "socket"
                                              : "special file");
        goto out;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        rc = sw_err_at(e, SW_EIO, path, 0, 0, "fcntl: %s", strerror(errno));
        goto out;
    }
    if ((uint64_t)st.st_size > max) {
        rc = sw_err_at(e, SW_ERANGE, path, 0, 0, "file is %lld bytes, more than the %zu allowed",
                       (long long)st.st_size, max);
        goto out;
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    size_t n = 0;
    buf = sw_malloc(cap);
    if (!buf) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory reading %s", path);
        goto out;
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max) {
                rc = sw_err_at(e, SW_ERANGE, path, 0, 0, "file is more than the %zu bytes allowed",
                               max);
                goto out;
            }
            size_t ncap = cap * 2 > max + 2 ? max + 2 : cap * 2;
            char *nb = sw_realloc(buf, ncap);
            if (!nb) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory reading %s", path);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = sw_err_at(e, SW_EIO, path, 0, 0, "read failed: %s", strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max) {
            rc =
                sw_err_at(e, SW_ERANGE, path, 0, 0, "file is more than the %zu bytes allowed", max);
            goto out;
        }
    }
    buf[n] = '\0';
    *data = buf;
    buf = NULL;
    if (len)
        *len = n;
out:
    sw_free(buf);
    close(fd);
    return rc;
}

int sw_atomic_open(struct sw_atomic *a, const char *path, struct sw_err *e)
{
    size_t plen = strlen(path);
    a->path = path;
    a->fd = -1;
    a->tmp = sw_malloc(plen + 16);
    if (!a->tmp)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    snprintf(a->tmp, plen + 16, "%s.tmp.XXXXXX", path);
    a->fd = mkstemp(a->tmp);
    if (a->fd < 0) {
        int rc =
            sw_err_at(e, SW_EIO, path, 0, 0, "cannot create a temporary file: %s", strerror(errno));
        sw_free(a->tmp);
        a->tmp = NULL;
        return rc;
    }
    return 0;
}

void sw_atomic_abort(struct sw_atomic *a)
{
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    if (a->tmp)
        unlink(a->tmp);
    sw_free(a->tmp);
    a->tmp = NULL;
}

int sw_atomic_commit(struct sw_atomic *a, int mode, struct sw_err *e)
{
    int rc = 0;
    if (fchmod(a->fd, (mode_t)mode) < 0 || fsync(a->fd) < 0)
        rc = sw_err_at(e, SW_EIO, a->path, 0, 0, "cannot finish the file: %s", strerror(errno));
    if (!rc) {
        int c = close(a->fd);
        a->fd = -1;
        if (c < 0)
            rc = sw_err_at(e, SW_EIO, a->path, 0, 0, "close failed: %s", strerror(errno));
    }
    if (!rc && rename(a->tmp, a->path) < 0)
        rc = sw_err_at(e, SW_EIO, a->path, 0, 0, "rename failed: %s", strerror(errno));
    if (rc) {
        sw_atomic_abort(a);
        return rc;
    }
    sw_free(a->tmp);
    a->tmp = NULL;
    return 0;
}

int sw_write_file_atomic(const char *path, const void *data, size_t len, int mode, struct sw_err *e)
{
    struct sw_atomic a;
    int rc = sw_atomic_open(&a, path, e);
    if (rc)
        return rc;
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(a.fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = sw_err_at(e, SW_EIO, path, 0, 0, "write failed: %s", strerror(errno));
            sw_atomic_abort(&a);
            return rc;
        }
        p += w;
        left -= (size_t)w;
    }
    return sw_atomic_commit(&a, mode, e);
}

int sw_mkdir_p(const char *path, int mode, struct sw_err *e)
{
    char *p = sw_strdup(path);
    if (!p)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST) {
                rc = sw_err_at(e, SW_EIO, p, 0, 0, "cannot create directory: %s", strerror(errno));
                break;
            }
            *s = c;
            if (!c)
                break;
        }
    }
    sw_free(p);
    return rc;
}

int sw_out_dir(const char *dir, struct sw_err *e)
{
    struct stat st;
    if (!stat(dir, &st)) {
        if (!S_ISDIR(st.st_mode))
            return sw_err_at(e, SW_EINVAL, dir, 0, 0,
                             "exists and is not a directory: nothing can be written into it");
        return 0;
    }
    if (errno != ENOENT)
        return sw_err_at(e, SW_EIO, dir, 0, 0, "cannot use it as the output directory: %s",
                         strerror(errno));
    /* the parent: everything before the last component (trailing slashes ignored) */
    char parent[4096];
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    while (n > 0 && dir[n - 1] != '/')
        n--;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= sizeof(parent))
        return sw_err_at(e, SW_ERANGE, dir, 0, 0, "path too long");
    if (n == 0)
        snprintf(parent, sizeof(parent), ".");
    else
        snprintf(parent, sizeof(parent), "%.*s", (int)n, dir);
    if (stat(parent, &st) || !S_ISDIR(st.st_mode))
        return sw_err_at(e, SW_ENOENT, dir, 0, 0,
                         "no such directory, and its parent %s is not one either: the output "
                         "directory must exist (mkdir -p %s)",
                         parent, dir);
    return sw_err_at(e, SW_ENOENT, dir, 0, 0,
                     "no such directory (its parent %s exists): the output directory must exist, "
                     "so a mistyped path writes nothing (mkdir %s)",
                     parent, dir);
}

static bool starts_ci(const unsigned char *p, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    if (n < l)
        return false;
    for (size_t i = 0; i < l; i++)
        if (tolower(p[i]) != tolower((unsigned char)lit[i]))
            return false;
    return true;
}

/* The leading bytes after a UTF-8 BOM and blanks: where a text format's first token is. */
static const unsigned char *skip_lead(const unsigned char *p, size_t n, size_t *m)
{
    size_t i = 0;
    if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
        i = 3;
    while (i < n && isspace(p[i]))
        i++;
    *m = n - i;
    return p + i;
}

enum sw_sniff_kind sw_sniff_kind(const void *vp, size_t n)
{
    const unsigned char *p = vp;
    size_t m;
    const unsigned char *q = skip_lead(p, n, &m);
    if (n == 0)
        return SW_SNIFF_EMPTY;
    if (n >= 4 && !memcmp(p, "GGUF", 4))
        return SW_SNIFF_GGUF;
    if (starts_ci(q, m, "version https://git-lfs"))
        return SW_SNIFF_LFS;
    if (starts_ci(q, m, "<!doctype html") || starts_ci(q, m, "<html") || starts_ci(q, m, "<head") ||
        starts_ci(q, m, "<body"))
        return SW_SNIFF_HTML;
    if (starts_ci(q, m, "<?xml"))
        return SW_SNIFF_XML;
    if (m && (q[0] == '{' || q[0] == '['))
        return SW_SNIFF_JSON;
    size_t printable = 0, k;
    for (k = 0; k < n && k < 64; k++)
        if (isprint(p[k]) || isspace(p[k]))
            printable++;
    return printable == k ? SW_SNIFF_TEXT : SW_SNIFF_BINARY;
}

const char *sw_sniff(const void *vp, size_t n, char *out, size_t outn)
{
    const unsigned char *p = vp;
    size_t m, k;
    const unsigned char *q = skip_lead(p, n, &m);
    switch (sw_sniff_kind(p, n)) {
    case SW_SNIFF_EMPTY:
        snprintf(out, outn, "empty (0 bytes)");
        break;
    case SW_SNIFF_GGUF:
        snprintf(out, outn, "a GGUF header");
        break;
    case SW_SNIFF_LFS:
        snprintf(out, outn, "a git-lfs pointer (the real file was never downloaded)");
        break;
    case SW_SNIFF_HTML:
        snprintf(out, outn, "an HTML page (an error or login page saved as the file?)");
        break;
    case SW_SNIFF_XML:
        snprintf(out, outn, "an XML document (a cloud storage error body?)");
        break;
    case SW_SNIFF_JSON: {
        char tmp[61];
        for (k = 0; k < m && k < 60 && q[k] != '\n'; k++)
            tmp[k] = isprint(q[k]) ? (char)q[k] : '.';
        tmp[k] = '\0';
        snprintf(out, outn, "a JSON %s (an API error body?) starting \"%s\"",
                 q[0] == '{' ? "object" : "array", tmp);
        break;
    }
    case SW_SNIFF_TEXT: {
        char tmp[41];
        size_t t = 0;
        for (k = 0; k < n && t < 40; k++)
            tmp[t++] = isprint(p[k]) ? (char)p[k] : ' ';
        tmp[t] = '\0';
        snprintf(out, outn, "text starting \"%s\"", tmp);
        break;
    }
    case SW_SNIFF_BINARY: {
        char hex[3 * 8 + 1];
        size_t t = 0;
        for (k = 0; k < n && k < 8; k++)
            t += (size_t)snprintf(hex + t, sizeof(hex) - t, "%02x ", p[k]);
        if (t)
            hex[t - 1] = '\0';
        snprintf(out, outn, "binary data starting %s", hex);
        break;
    }
    }
    return out;
}
