/*
 * deploy/port: is host:port free before slipway starts an engine there, and if not, who holds it.
 *
 * The test is the real one: bind(2) the address (with SO_REUSEADDR, as servers do, so a
 * connection lingering in TIME_WAIT does not count). The holder is found from /proc/net/tcp{,6}
 * (the LISTEN socket's inode) and /proc/PID/fd (which process has that socket open); that part is
 * best effort: another user's processes are not readable without privileges.
 *
 * What it deliberately does not do: reserve the port (the engine binds it itself a moment later;
 * the engine's own "couldn't bind" is classified as port_in_use too).
 */
#include "deploy_internal.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The inode of a socket listening on `port` (any address), 0 if none found. */
static unsigned long listen_inode(unsigned port)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (size_t f = 0; f < SW_ARRAY_LEN(files); f++) {
        FILE *fp = fopen(files[f], "re");
        if (!fp)
            continue;
        char line[512];
        unsigned long found = 0;
        if (!fgets(line, sizeof(line), fp)) { /* header */
            fclose(fp);
            continue;
        }
        while (!found && fgets(line, sizeof(line), fp)) {
            /* "  0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0
             * 12345 ..." */
            char local[80], st[8];
            unsigned long inode = 0;
            char *colon;
            if (sscanf(line, "%*s %79s %*s %7s %*s %*s %*s %*s %*s %lu", local, st, &inode) != 3)
                continue;
            colon = strrchr(local, ':');
            if (!colon || strcmp(st, "0A"))
                continue;
            if (strtoul(colon + 1, NULL, 16) == port)
                found = inode;
        }
        fclose(fp);
        if (found)
            return found;
    }
    return 0;
}

/* The process holding socket inode `ino`: pid and its name. 0 if not found. */
static pid_t socket_owner(unsigned long ino, char *comm, size_t n)
{
    char want[64];
    snprintf(want, sizeof(want), "socket:[%lu]", ino);
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t owner = 0;
    struct dirent *de;
    while (!owner && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char fddir[64];
        snprintf(fddir, sizeof(fddir), "/proc/%ld/fd", pid);
        DIR *fds = opendir(fddir);
        if (!fds)
            continue;
        struct dirent *fe;
        while (!owner && (fe = readdir(fds))) {
            char link[320], target[64];
            if (fe->d_name[0] == '.')
                continue;
            snprintf(link, sizeof(link), "%s/%s", fddir, fe->d_name);
            ssize_t l = readlink(link, target, sizeof(target) - 1);
            if (l <= 0)
                continue;
            target[l] = '\0';
            if (!strcmp(target, want))
                owner = (pid_t)pid;
        }
        closedir(fds);
    }
    closedir(d);
    if (owner) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)owner);
        FILE *fp = fopen(path, "re");
        comm[0] = '\0';
        if (fp) {
            if (fgets(comm, (int)n, fp))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(fp);
        }
    }
    return owner;
}

int sw_port_check(const char *host, unsigned port, struct sw_err *e)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    if (!host || !*host || !strcmp(host, "localhost"))
        host = "127.0.0.1";
    if (port == 0 || port > 65535)
        return sw_err_set(e, SW_EINVAL, "port %u is not a TCP port", port);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        sl = sizeof(*a4);
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        sl = sizeof(*a6);
    } else {
        return sw_err_set(e, SW_EINVAL,
                          "host '%s' is not a numeric address (use 127.0.0.1, 0.0.0.0, ::1...)",
                          host);
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return sw_err_set(e, SW_EIO, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = bind(fd, (struct sockaddr *)&ss, sl);
    int err = errno;
    close(fd);
    if (rc == 0)
        return 0;
    if (err == EADDRINUSE) {
        char comm[64] = "";
        unsigned long ino = listen_inode(port);
        pid_t owner = ino ? socket_owner(ino, comm, sizeof(comm)) : 0;
        if (owner)
            return sw_err_set(e, SW_EBUSY, "%s:%u is already in use by pid %d (%s)", host, port,
                              (int)owner, comm[0] ? comm : "?");
        return sw_err_set(e, SW_EBUSY, "%s:%u is already in use", host, port);
    }
    if (err == EADDRNOTAVAIL)
        return sw_err_set(e, SW_EINVAL, "%s is not an address of this machine", host);
    if (err == EACCES)
        return sw_err_set(e, SW_EINVAL, "port %u needs privileges to bind", port);
    return sw_err_set(e, SW_EIO, "bind %s:%u: %s", host, port, strerror(err));
}
