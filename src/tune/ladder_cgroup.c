/*
 * A memory cgroup of its own for one ladder rung (the local runner's `--memory-max`): created
 * under this process's own cgroup (cgroup v1's memory controller: memory.limit_in_bytes and
 * memsw; v2: memory.max and swap.max 0, so there is no swap to hide in), read for its peak and
 * its OOM kills after the rung, and removed.
 *
 * What it deliberately does not do: put a process in it (deploy's supervisor writes the engine's
 * pid into cgroup.procs), or touch any cgroup it did not create.
 */
#include "ladder_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int read_u64(const char *path, const char *key, uint64_t *v)
{
    char *t = NULL;
    size_t n = 0;
    if (sw_read_file(path, 1 << 16, &t, &n, NULL))
        return -1;
    int rc = -1;
    const char *p = t;
    if (key) {
        size_t kl = strlen(key);
        for (p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (!strncmp(p, key, kl) && p[kl] == ' ') {
                p += kl + 1;
                break;
            }
    }
    if (p && *p >= '0' && *p <= '9') {
        *v = strtoull(p, NULL, 10);
        rc = 0;
    }
    sw_free(t);
    return rc;
}

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = write(fd, s, strlen(s));
    int err = errno;
    close(fd);
    errno = err;
    return k == (ssize_t)strlen(s) ? 0 : -1;
}

int sw__ladder_cg_create(uint64_t limit, struct sw__ladder_cg *g, struct sw_err *e)
{
    char *t = NULL;
    size_t n = 0;
    struct stat sb;
    memset(g, 0, sizeof(*g));
    int rc = sw_read_file("/proc/self/cgroup", 1 << 16, &t, &n, e);
    if (rc)
        return rc;
    char base[4096] = "";
    g->v2 = stat("/sys/fs/cgroup/cgroup.controllers", &sb) == 0;
    for (char *p = t; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        char *c1 = strchr(p, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 && c2) {
            *c2 = 0;
            const char *ctl = c1 + 1;
            bool mem = false;
            for (const char *q = ctl; *q;) {
                size_t l = strcspn(q, ",");
                mem |= l == 6 && !strncmp(q, "memory", 6);
                q += l + (q[l] == ',');
            }
            if (g->v2 && !*ctl)
                snprintf(base, sizeof(base), "/sys/fs/cgroup%s", c2 + 1);
            else if (!g->v2 && mem)
                snprintf(base, sizeof(base), "/sys/fs/cgroup/memory%s", c2 + 1);
        }
        p = nl ? nl + 1 : NULL;
    }
    sw_free(t);
    if (!base[0])
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "/proc/self/cgroup: no memory cgroup for this process (a memory limit "
                          "needs cgroup v1's memory controller or cgroup v2)");
    snprintf(g->dir, sizeof(g->dir), "%s/slipway-ladder-%d-%u", base, (int)getpid(),
             sw__ladder_next_seq());
    if (mkdir(g->dir, 0700))
        return sw_err_set(e, SW_EIO, "%s: %s (a memory limit needs a writable cgroup)", g->dir,
                          strerror(errno));
    char path[4300], v[32];
    snprintf(v, sizeof(v), "%" PRIu64, limit);
    snprintf(path, sizeof(path), "%s/%s", g->dir, g->v2 ? "memory.max" : "memory.limit_in_bytes");
    if (write_str(path, v)) {
        rc = sw_err_set(e, SW_EIO, "%s: %s", path, strerror(errno));
        rmdir(g->dir);
        g->dir[0] = 0;
        return rc;
    }
    /* no swap to hide in: the limit is the memory the engine has */
    snprintf(path, sizeof(path), "%s/%s", g->dir,
             g->v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes");
    if (write_str(path, g->v2 ? "0" : v)) {
        /* absent without swap accounting: nothing to bound */
    }
    return 0;
}

uint64_t sw__ladder_cg_peak(const struct sw__ladder_cg *g)
{
    char path[4300];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "%s/%s", g->dir,
             g->v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    return read_u64(path, NULL, &v) ? 0 : v;
}

uint64_t sw__ladder_cg_ooms(const struct sw__ladder_cg *g)
{
    char path[4300];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "%s/%s", g->dir, g->v2 ? "memory.events" : "memory.oom_control");
    return read_u64(path, "oom_kill", &v) ? 0 : v;
}

void sw__ladder_cg_remove(struct sw__ladder_cg *g)
{
    if (!g->dir[0])
        return;
    /* the engine was reaped; its group empties as the kernel lets go of it */
    for (int i = 0; i < 100 && rmdir(g->dir) && errno == EBUSY; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    g->dir[0] = 0;
}
