/*
 * payload/patch: verify an engine patch against the pinned image's file. The base is hashed in
 * place; `patch -p1` runs on a copy of it in a private temporary tree (mkdtemp, removed on every
 * path), with no shell, no prompt (--batch, stdin /dev/null) and no backup files, and the copy is
 * hashed. The seed's record: "base 008eeaa2... -> patched bc9913a1..., apply-verified against the
 * pinned image (patch -p1 reproduces the sha256 and matches the mounted file)".
 *
 * What it does not do: fetch the file out of an image, or patch anything in place.
 */
#define _XOPEN_SOURCE 700
#include <slipway/payload.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *sw_payload_patch_verdict_name(enum sw_payload_patch_verdict v)
{
    switch (v) {
    case SW_PATCH_OK:
        return "ok";
    case SW_PATCH_BASE_DRIFTED:
        return "base_drifted";
    case SW_PATCH_DOES_NOT_APPLY:
        return "does_not_apply";
    case SW_PATCH_WRONG_RESULT:
        return "wrong_result";
    }
    return "?";
}

static bool hex64(const char *s)
{
    if (!s || strlen(s) != SW_PAYLOAD_SHA256_HEX)
        return false;
    for (const char *q = s; *q; q++)
        if (!isxdigit((unsigned char)*q))
            return false;
    return true;
}

/* Relative, not empty, no "." or ".." component, no empty component. */
static bool safe_rel(const char *f)
{
    if (!f || !f[0] || f[0] == '/' || strlen(f) >= PATH_MAX / 2)
        return false;
    for (const char *c = f; *c;) {
        const char *end = strchr(c, '/');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += n + (end ? 1 : 0);
        if (end && !*c)
            return false; /* a trailing slash names a directory */
    }
    return true;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* mkdir -p of the directories of rel under root. */
static int make_dirs(const char *root, const char *rel, struct sw_err *e)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%s", root, rel);
    if (n < 0 || (size_t)n >= sizeof(path))
        return sw_err_set(e, SW_EINVAL, "%s: path too long", rel);
    for (char *q = path + strlen(root) + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(path, 0700) && errno != EEXIST) {
            int err = errno;
            *q = '/';
            return sw_err_set(e, SW_EIO, "%s: cannot create: %s", path, strerror(err));
        }
        *q = '/';
    }
    return 0;
}

static int copy_file(const char *from, const char *to, struct sw_err *e)
{
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
    char buf[65536];
    if (in < 0)
        return sw_err_set(e, errno == ENOENT ? SW_ENOENT : SW_EIO, "%s: cannot open: %s", from,
                          strerror(errno));
    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        rc = sw_err_set(e, SW_EIO, "%s: cannot create: %s", to, strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t k = read(in, buf, sizeof(buf));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: read: %s", from, strerror(errno));
            goto out;
        }
        if (k == 0)
            break;
        for (ssize_t w = 0; w < k;) {
            ssize_t x = write(out, buf + w, (size_t)(k - w));
            if (x < 0 && errno == EINTR)
                continue;
            if (x < 0) {
                rc = sw_err_set(e, SW_EIO, "%s: write: %s", to, strerror(errno));
                goto out;
            }
            w += x;
        }
    }
out:
    if (out >= 0)
        close(out);
    close(in);
    return rc;
}

/* Run patch -p1 in dir on the patch file; *status its exit status (-1 if it did not exit);
 * its output (first bytes) into out. */
static int run_patch(const char *dir, const char *patch, int *status, char *out, size_t outn,
                     struct sw_err *e)
{
    int pfd[2];
    out[0] = '\0';
    if (pipe2(pfd, O_CLOEXEC))
        return sw_err_set(e, SW_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return sw_err_set(e, SW_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        const char *argv[] = {"patch", "-p1", "--batch", "--forward", "-d",
                              dir,     "-i",  patch,     "-s",        "--no-backup-if-mismatch",
                              NULL};
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    char sink[4096];
    for (;;) {
        ssize_t k =
            read(pfd[0], n + 1 < outn ? out + n : sink, n + 1 < outn ? outn - 1 - n : sizeof(sink));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        if (n + 1 < outn)
            n += (size_t)k;
    }
    out[n] = '\0';
    close(pfd[0]);
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return sw_err_set(e, SW_EIO, "waitpid: %s", strerror(errno));
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (*status == 127)
        return sw_err_set(e, SW_EIO, "cannot run `patch` (is GNU patch installed?)");
    /* one line of patch's words is enough for a verdict line */
    for (char *q = out; *q; q++)
        if (*q == '\n' && q[1])
            *q = ' ';
    n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
    return 0;
}

int sw_payload_patch_verify(const char *base_file, const struct sw_payload_patch *p,
                            struct sw_payload_patch_result *r, struct sw_err *e)
{
    char tmpl[PATH_MAX], copy[PATH_MAX], patch_abs[PATH_MAX];
    bool made = false;
    int rc = 0, status = 0;

    memset(r, 0, sizeof(*r));
    if (!p || !base_file)
        return sw_err_set(e, SW_EINVAL, "nothing to verify");
    if (!hex64(p->base_sha256) || !hex64(p->patched_sha256))
        return sw_err_set(e, SW_EINVAL, "%s: base and patched sha256 must be 64 hex digits",
                          p->patch ? p->patch : "patch");
    if (!safe_rel(p->file))
        return sw_err_set(e, SW_EINVAL,
                          "%s: file \"%s\" must be a relative path inside the image, with no "
                          "\"..\"",
                          p->patch ? p->patch : "patch", p->file ? p->file : "");
    if (!p->patch || !realpath(p->patch, patch_abs))
        return sw_err_set(e, SW_ENOENT, "%s: the patch is not on this machine",
                          p->patch ? p->patch : "(no patch)");
    rc = sw_payload_sha256_file(base_file, 0, r->base_sha256, NULL, e);
    if (rc)
        return rc;
    if (strcasecmp(r->base_sha256, p->base_sha256)) {
        r->verdict = SW_PATCH_BASE_DRIFTED;
        return 0;
    }
    const char *td = getenv("TMPDIR");
    snprintf(tmpl, sizeof(tmpl), "%s/slipway-patch-XXXXXX", td && td[0] == '/' ? td : "/tmp");
    if (!mkdtemp(tmpl))
        return sw_err_set(e, SW_EIO, "%s: cannot create: %s", tmpl, strerror(errno));
    made = true;
    rc = make_dirs(tmpl, p->file, e);
    if (rc)
        goto out;
    snprintf(copy, sizeof(copy), "%s/%s", tmpl, p->file);
    rc = copy_file(base_file, copy, e);
    if (rc)
        goto out;
    rc = run_patch(tmpl, patch_abs, &status, r->detail, sizeof(r->detail), e);
    if (rc)
        goto out;
    if (status != 0) {
        r->verdict = SW_PATCH_DOES_NOT_APPLY;
        goto out;
    }
    r->detail[0] = '\0';
    rc = sw_payload_sha256_file(copy, 0, r->patched_sha256, NULL, e);
    if (rc)
        goto out;
    r->verdict =
        strcasecmp(r->patched_sha256, p->patched_sha256) ? SW_PATCH_WRONG_RESULT : SW_PATCH_OK;
out:
    if (made)
        nftw(tmpl, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
