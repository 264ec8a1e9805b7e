/*
 * payload/token: the Hub token, from the environment (HF_TOKEN) or a file only its owner can
 * read, the places huggingface_hub looks (HF_TOKEN_PATH, $HF_HOME/token,
 * ~/.cache/huggingface/token). A token on a command line is readable by every user of the host
 * (/proc/PID/cmdline), so there is no flag for it.
 *
 * What it does not do: log in, validate the token with the Hub, or print it: sw_redact
 * exists so that nothing the token could reach (a server's error body echoing a header, a curl
 * message) is shown with it.
 */
#include <slipway/fetch.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int token_path(char *out, size_t n)
{
    const char *p = getenv("HF_TOKEN_PATH");
    if (p && *p)
        return snprintf(out, n, "%s", p) < (int)n ? 0 : SW_ERANGE;
    const char *home = getenv("HF_HOME");
    if (home && *home)
        return snprintf(out, n, "%s/token", home) < (int)n ? 0 : SW_ERANGE;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg)
        return snprintf(out, n, "%s/huggingface/token", xdg) < (int)n ? 0 : SW_ERANGE;
    const char *h = getenv("HOME");
    if (!h || !*h)
        return SW_ENOENT;
    return snprintf(out, n, "%s/.cache/huggingface/token", h) < (int)n ? 0 : SW_ERANGE;
}

/* Trim surrounding whitespace (a file ends with a newline); refuse control bytes inside, which
 * would break the header line (and could smuggle another header). */
static int clean(char *v, const char *source, struct sw_err *e)
{
    size_t n = strlen(v);
    while (n && (v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        v[--n] = '\0';
    size_t s = 0;
    while (v[s] == ' ' || v[s] == '\t')
        s++;
    if (s)
        memmove(v, v + s, n - s + 1);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return sw_err_set(e, SW_EINVAL,
                              "the token from %s holds a control character: refusing it", source);
    return 0;
}

int sw_fetch_token_load(struct sw_fetch_token *t, struct sw_err *e)
{
    int rc = 0;
    int fd = -1;
    memset(t, 0, sizeof(*t));
    const char *env = getenv("HF_TOKEN");
    if (env && *env) {
        if (strlen(env) >= sizeof(t->value))
            return sw_err_set(e, SW_ERANGE, "HF_TOKEN is longer than %zu bytes",
                              sizeof(t->value) - 1);
        snprintf(t->value, sizeof(t->value), "%s", env);
        snprintf(t->source, sizeof(t->source), "HF_TOKEN");
        rc = clean(t->value, "HF_TOKEN", e);
        goto out;
    }
    char path[512];
    if (token_path(path, sizeof(path)))
        return 0; /* nowhere to look: anonymous */
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        if (errno == ELOOP)
            return sw_err_set(e, SW_EINVAL,
                              "%s: the token file is a symbolic link: refusing it (whoever can "
                              "change the link chooses the token sent)",
                              path);
        return sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = sw_err_set(e, SW_EINVAL, "%s: the token file is not a regular file", path);
        goto out;
    }
    if (st.st_uid != geteuid()) {
        rc = sw_err_set(e, SW_EINVAL,
                        "%s: the token file belongs to uid %u, not to you (uid %u): refusing it",
                        path, (unsigned)st.st_uid, (unsigned)geteuid());
        goto out;
    }
    if (st.st_mode & 077) {
        rc = sw_err_set(e, SW_EINVAL,
                        "%s: the token file has mode %04o: group or others may read it; "
                        "run `chmod 600 %s` (refusing a token others can read)",
                        path, (unsigned)(st.st_mode & 07777), path);
        goto out;
    }
    if (st.st_size >= (off_t)sizeof(t->value)) {
        rc = sw_err_set(e, SW_ERANGE, "%s: the token file is %lld bytes: not a token", path,
                        (long long)st.st_size);
        goto out;
    }
    size_t got = 0;
    while (got < sizeof(t->value) - 1) {
        ssize_t r = read(fd, t->value + got, sizeof(t->value) - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    t->value[got] = '\0';
    snprintf(t->source, sizeof(t->source), "%s", path);
    rc = clean(t->value, path, e);
out:
    if (fd >= 0)
        close(fd);
    if (rc)
        sw_fetch_token_clear(t);
    return rc;
}

void sw_fetch_token_clear(struct sw_fetch_token *t)
{
    if (!t)
        return;
    volatile char *p = t->value;
    for (size_t i = 0; i < sizeof(t->value); i++)
        p[i] = 0;
    t->source[0] = '\0';
}
