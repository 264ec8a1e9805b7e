/*
 * plan/remote_cache: what was read of a model's files on their host, kept on this machine, so a
 * second plan asks the host for nothing but a stat.
 *
 * Where: $SLIPWAY_CACHE/remote-meta, else ~/.cache/slipway/remote-meta (where slipway keeps its
 * other caches: engine/llamacpp's pinned build, the test hosts' rootfs). The directory is made
 * 0700 and refused (the cache is then off, and every read goes to the host) when it is a link,
 * someone else's, or writable by others. Entries are opened relative to it with O_NOFOLLOW.
 *
 * One entry per (host, path), named by sha256("HOST\nPATH"): a first line of JSON {v, host, path,
 * kind, size, mtime, bytes, sha256}, then the bytes. It is used only when host, path, kind, size
 * and mtime are the ones the host's stat gives now and the bytes are as long as it says and hash
 * to its sha256; a file changed on the host (another size or mtime) is read again and its entry
 * replaced. Writes go to a fresh temporary name in the directory (O_EXCL: never through a link),
 * mode 0600, fsync, then rename over the entry.
 *
 * What it does not do: expire entries (one per file the plans asked about, a few MB at most each),
 * share between users, or read anything from the host (remote.c).
 */
#include "plan/remote_internal.h"

#include <slipway/payload.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_SUB  "remote-meta"
#define ENTRY_HEAD 8192 /* the first line's ceiling */
/* An entry holds at most a GGUF header's ceiling (the biggest thing read) and its first line. */
#define ENTRY_MAX (SW_GGUF_MAX_HEADER + ENTRY_HEAD)

int sw__rcache_path(char *out, size_t n, struct sw_err *e)
{
    const char *c = getenv("SLIPWAY_CACHE"), *home = getenv("HOME");
    int w;
    if (c && *c)
        w = snprintf(out, n, "%s/%s", c, CACHE_SUB);
    else if (home && *home)
        w = snprintf(out, n, "%s/.cache/slipway/%s", home, CACHE_SUB);
    else
        return sw_err_set(e, SW_ENOENT, "no cache directory: set SLIPWAY_CACHE or HOME");
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "the cache directory's path is too long");
    return 0;
}

void sw__rcache_open(struct sw__rcache *c)
{
    struct sw_err e;
    struct stat st;
    sw_err_clear(&e);
    memset(c, 0, sizeof(*c));
    c->dirfd = -1;
    if (sw__rcache_path(c->dir, sizeof(c->dir), &e) || sw_mkdir_p(c->dir, 0700, &e)) {
        snprintf(c->why, sizeof(c->why), "%.500s", e.msg);
        return;
    }
    int fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(c->why, sizeof(c->why), "%.400s: %s%s", c->dir, strerror(errno),
                 errno == ELOOP || errno == ENOTDIR ? " (a link is not followed)" : "");
        return;
    }
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        snprintf(c->why, sizeof(c->why), "%.400s is not a directory only you can write", c->dir);
        close(fd);
        return;
    }
    c->dirfd = fd;
}

void sw__rcache_close(struct sw__rcache *c)
{
    if (c->dirfd >= 0)
        close(c->dirfd);
    c->dirfd = -1;
}

/* sha256 of the bytes as 64 hex; SW_ENOMEM / SW_EIO. */
static int sha256_hex(const void *p, size_t n, char out[65])
{
    struct sw_payload_sha256 *h = NULL;
    int rc = sw_payload_sha256_new(&h, NULL);
    if (!rc)
        rc = sw_payload_sha256_update(h, p, n);
    if (!rc)
        rc = sw_payload_sha256_final(h, out);
    sw_payload_sha256_free(h);
    return rc;
}

int sw__rcache_name(const char *host, const char *path, char out[70])
{
    struct sw_payload_sha256 *h = NULL;
    char x[65];
    int rc = sw_payload_sha256_new(&h, NULL);
    if (!rc)
        rc = sw_payload_sha256_update(h, host, strlen(host));
    if (!rc)
        rc = sw_payload_sha256_update(h, "\n", 1);
    if (!rc)
        rc = sw_payload_sha256_update(h, path, strlen(path));
    if (!rc)
        rc = sw_payload_sha256_final(h, x);
    sw_payload_sha256_free(h);
    /* the name is only where to look: the entry's first line is compared whole */
    snprintf(out, 70, "%s.meta", rc ? "" : x);
    return rc;
}

static json_t *key_json(const struct sw__rkey *k, size_t len, const char *sha)
{
    return json_pack("{s:i,s:s,s:s,s:s,s:I,s:s,s:I,s:s}", "v", 1, "host", k->host, "path", k->path,
                     "kind", k->kind, "size", (json_int_t)k->f->size, "mtime", k->f->mtime, "bytes",
                     (json_int_t)len, "sha256", sha);
}

static bool str_is(const json_t *o, const char *key, const char *want)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && !strcmp(s, want);
}

int sw__rcache_get(struct sw__rcache *c, const struct sw__rkey *k, char **data, size_t *len,
                   char sha256[65])
{
    char name[70], *buf = NULL, got[65];
    struct stat st;
    json_t *head = NULL;
    int rc = SW_ENOENT;
    *data = NULL;
    *len = 0;
    if (c->dirfd < 0)
        return SW_ENOENT;
    if (sw__rcache_name(k->host, k->path, name))
        return SW_ENOMEM;
    int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return SW_ENOENT;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size < 2 ||
        (uint64_t)st.st_size > ENTRY_MAX)
        goto out;
    size_t n = (size_t)st.st_size, got_n = 0;
    buf = sw_malloc(n + 1);
    if (!buf) {
        rc = SW_ENOMEM;
        goto out;
    }
    while (got_n < n) {
        ssize_t r = read(fd, buf + got_n, n - got_n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            goto out;
        got_n += (size_t)r;
    }
    buf[n] = '\0';
    const char *nl = memchr(buf, '\n', SW_MIN(n, (size_t)ENTRY_HEAD));
    if (!nl)
        goto out;
    head = sw_json_parse(buf, (size_t)(nl - buf), name, NULL);
    size_t body = n - (size_t)(nl - buf) - 1;
    json_int_t v = json_integer_value(json_object_get(head, "v"));
    json_int_t size = json_integer_value(json_object_get(head, "size"));
    json_int_t bytes = json_integer_value(json_object_get(head, "bytes"));
    if (!head || v != 1 || !str_is(head, "host", k->host) || !str_is(head, "path", k->path) ||
        !str_is(head, "kind", k->kind) || !str_is(head, "mtime", k->f->mtime) || size < 0 ||
        (uint64_t)size != k->f->size || bytes < 0 || (uint64_t)bytes != body)
        goto out;
    const char *want = json_string_value(json_object_get(head, "sha256"));
    memmove(buf, nl + 1, body);
    buf[body] = '\0';
    if (!want || sha256_hex(buf, body, got) || strcmp(got, want))
        goto out;
    snprintf(sha256, 65, "%s", got);
    *data = buf;
    *len = body;
    buf = NULL;
    rc = 0;
out:
    json_decref(head);
    sw_free(buf);
    close(fd);
    return rc;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *s = p;
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int sw__rcache_put(struct sw__rcache *c, const struct sw__rkey *k, const void *data, size_t len,
                   struct sw_err *e)
{
    char name[70], tmp[96] = "", sha[65];
    char *line = NULL;
    json_t *head = NULL;
    int fd = -1, rc = 0;
    bool made = false;
    if (c->dirfd < 0)
        return 0;
    rc = sw__rcache_name(k->host, k->path, name);
    if (!rc)
        rc = sha256_hex(data, len, sha);
    if (rc)
        return sw_err_set(e, rc, "hashing %s for the cache failed", k->path);
    head = key_json(k, len, sha);
    line = head ? sw_json_dumps(head, JSON_COMPACT) : NULL;
    if (!line) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    /* a fresh name: O_EXCL never opens what is there, a link included */
    for (int i = 0; i < 100 && fd < 0; i++) {
        snprintf(tmp, sizeof(tmp), ".%.16s.%ld.%d.tmp", name, (long)getpid(), i);
        fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    made = fd >= 0;
    if (fd < 0) {
        rc = sw_err_set(e, SW_EIO, "%s: cannot create a cache entry: %s", c->dir, strerror(errno));
        goto out;
    }
    if (write_all(fd, line, strlen(line)) || write_all(fd, "\n", 1) || write_all(fd, data, len) ||
        fsync(fd) < 0) {
        rc = sw_err_set(e, SW_EIO, "%s: writing a cache entry failed: %s", c->dir, strerror(errno));
        goto out;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = sw_err_set(e, SW_EIO, "%s: writing a cache entry failed: %s", c->dir, strerror(errno));
        goto out;
    }
    fd = -1;
    if (renameat(c->dirfd, tmp, c->dirfd, name) < 0)
        rc = sw_err_set(e, SW_EIO, "%s: cannot rename a cache entry: %s", c->dir, strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    if (rc && made)
        unlinkat(c->dirfd, tmp, 0);
    sw_free(line);
    json_decref(head);
    return rc;
}
