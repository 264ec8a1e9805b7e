/*
 * slipway's private run directory, for modules below deploy (host keeps its ssh control sockets
 * there). The rule (sw_run_dir_path, which deploy's sw_deploy_run_dir uses too): an environment
 * override, the XDG runtime directory, else a directory under HOME; never a predictable shared
 * /tmp name, and a directory someone else can write is refused rather than repaired.
 */
#include <slipway/core.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sw_run_dir_path(char *out, size_t n, struct sw_err *e)
{
    const char *d = getenv("SLIPWAY_RUN_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *home = getenv("HOME");
    int w;
    if (d && *d) {
        w = snprintf(out, n, "%s", d);
    } else if (xdg && *xdg) {
        w = snprintf(out, n, "%s/slipway", xdg);
    } else {
        if (!home || !*home) {
            struct passwd *pw = getpwuid(geteuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home || !*home)
            return sw_err_set(e, SW_ENOENT,
                              "no run directory: set SLIPWAY_RUN_DIR (or XDG_RUNTIME_DIR or "
                              "HOME) to a directory only you can write");
        w = snprintf(out, n, "%s/.local/state/slipway/run", home);
    }
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "run directory path too long");
    return 0;
}

int sw_run_dir_create(char *out, size_t n, struct sw_err *e)
{
    int rc = sw_run_dir_path(out, n, e);
    return rc ? rc : sw_mkdir_p(out, 0700, e);
}

int sw_run_dir(char *out, size_t n, struct sw_err *e)
{
    struct stat st;
    int rc = sw_run_dir_create(out, n, e);
    if (rc)
        return rc;
    if (lstat(out, &st) < 0)
        return sw_err_set(e, SW_EIO, "%s: cannot stat: %s", out, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sw_err_set(e, SW_EIO, "%s is not a directory (a symbolic link?); refusing it", out);
    if (st.st_uid != geteuid())
        return sw_err_set(e, SW_EIO, "%s is owned by uid %u, not by you (uid %u); refusing it", out,
                          (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & 022)
        return sw_err_set(e, SW_EIO, "%s has mode %04o: writable by others; refusing it", out,
                          (unsigned)(st.st_mode & 07777));
    return 0;
}
