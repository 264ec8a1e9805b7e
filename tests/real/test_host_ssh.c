/*
 * host over a REAL sshd on 127.0.0.1: this test generates a host key and a client key
 * (ssh-keygen), writes its own sshd_config (keys only, its own authorized_keys and pid file) and
 * runs /usr/sbin/sshd -D -e on a free port; the OpenSSH client is the one slipway uses. Cases:
 * run and exit codes, hostile argv through the remote shell byte for byte, the deadline (and no
 * remote process left), atomic copy with its mode and nothing left on failure, a changed and an
 * unknown host key refused, refused keys, nothing listening and a peer that never speaks, one
 * ControlMaster connection reused, facts; then `slipway hosts check` on a fleet naming this sshd:
 * green, and red with the gap named when a payload is missing or the host is unreachable.
 * Every sshd started here is killed at the end, also when a case fails (group teardown and
 * atexit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/host.h>
#include <slipway/net.h>

#include "swhttpd.h"
#include "swtest.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SSHD "/usr/sbin/sshd"

struct sshd {
    pid_t pid;
    int port;
    char log[4200];
};

static char *dir;
static struct sshd main_sshd, other_sshd;
static char client_key[4200], other_key[4200], known_hosts[4200], empty_known[4200];
static char image_tag[128]; /* removed at teardown when a case left it */

static void stop_sshd(struct sshd *s)
{
    if (s->pid <= 0)
        return;
    kill(-s->pid, SIGTERM);
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            s->pid = 0;
            break;
        }
        usleep(20000);
    }
    if (s->pid > 0) {
        kill(-s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
}

static void stop_all(void)
{
    stop_sshd(&main_sshd);
    stop_sshd(&other_sshd);
}

static bool run_ok(const char *const *argv)
{
    struct swt_run r;
    if (swt_run(argv, NULL, 60, &r) != 0)
        return false;
    bool ok = r.status == 0;
    if (!ok)
        fprintf(stderr, "%s: %s%s\n", argv[0], r.out, r.err);
    swt_run_free(&r);
    return ok;
}

static bool keygen(const char *path)
{
    unlink(path);
    char pub[4300];
    snprintf(pub, sizeof(pub), "%s.pub", path);
    unlink(pub);
    const char *argv[] = {"ssh-keygen", "-q",           "-t", "ed25519", "-N", "",
                          "-C",         "slipway-test", "-f", path,      NULL};
    return run_ok(argv);
}

static char *read_all(const char *path)
{
    char *d = NULL;
    size_t n;
    struct sw_err e;
    if (sw_read_file(path, 1 << 20, &d, &n, &e))
        fail_msg("%s", e.msg);
    return d;
}

/* Start sshd with host key `hostkey` on a free port; its stderr (the log) in dir/NAME.log. */
static bool start_sshd(struct sshd *s, const char *name, const char *hostkey)
{
    char conf[4200], pidf[4200], auth[4200];
    s->port = swt_free_port();
    snprintf(conf, sizeof(conf), "%s/%s_config", dir, name);
    snprintf(pidf, sizeof(pidf), "%s/%s.pid", dir, name);
    snprintf(auth, sizeof(auth), "%s/authorized_keys", dir);
    snprintf(s->log, sizeof(s->log), "%s/%s.log", dir, name);
    char text[8192];
    snprintf(text, sizeof(text),
             "Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s\n"
             "AuthorizedKeysFile %s\nStrictModes no\nPubkeyAuthentication yes\n"
             "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
             "PermitRootLogin prohibit-password\nLogLevel VERBOSE\nMaxSessions 50\n"
             "MaxStartups 50\n",
             s->port, hostkey, pidf, auth);
    swt_write_str(conf, text);
    /* sshd's privilege separation directory */
    mkdir("/run/sshd", 0755);
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        execl(SSHD, SSHD, "-D", "-e", "-f", conf, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    s->pid = pid;
    for (int i = 0; i < 250; i++) {
        if (swt_port_open(s->port))
            return true;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            s->pid = 0;
            char *l = read_all(s->log);
            fprintf(stderr, "sshd exited: %s\n", l);
            sw_free(l);
            return false;
        }
        usleep(20000);
    }
    return false;
}

static int setup(void **state)
{
    swt_need(access(SSHD, X_OK) == 0, "%s (openssh-server)", SSHD);
    swt_need(access("/usr/bin/ssh", X_OK) == 0, "/usr/bin/ssh (openssh-client)");
    swt_need(geteuid() == 0, "root (sshd must start as root to log a user in)");
    dir = swt_tmpdir();
    atexit(stop_all);
    char hostkey[4200], hostkey2[4200], auth[4200], line[8192];
    snprintf(hostkey, sizeof(hostkey), "%s/host_key", dir);
    snprintf(hostkey2, sizeof(hostkey2), "%s/host_key_new", dir);
    snprintf(client_key, sizeof(client_key), "%s/client_key", dir);
    snprintf(other_key, sizeof(other_key), "%s/other_key", dir);
    snprintf(auth, sizeof(auth), "%s/authorized_keys", dir);
    snprintf(known_hosts, sizeof(known_hosts), "%s/known_hosts", dir);
    snprintf(empty_known, sizeof(empty_known), "%s/empty_known_hosts", dir);
    if (!keygen(hostkey) || !keygen(hostkey2) || !keygen(client_key) || !keygen(other_key))
        return -1;
    char pub[4300];
    snprintf(pub, sizeof(pub), "%s.pub", client_key);
    char *cpub = read_all(pub);
    swt_write_str(auth, cpub);
    sw_free(cpub);
    swt_write_str(empty_known, "");
    if (!start_sshd(&main_sshd, "sshd", hostkey))
        return -1;
    /* a second sshd presenting a NEW host key, while known_hosts keeps the old one for its
     * address: the "host key changed" case (a reinstalled host, or someone in between) */
    if (!start_sshd(&other_sshd, "sshd2", hostkey2)) {
        stop_all();
        return -1;
    }
    snprintf(pub, sizeof(pub), "%s.pub", hostkey);
    char *hpub = read_all(pub);
    snprintf(line, sizeof(line), "[127.0.0.1]:%d %s[127.0.0.1]:%d %s", main_sshd.port, hpub,
             other_sshd.port, hpub);
    sw_free(hpub);
    swt_write_str(known_hosts, line);
    return 0;
}

static int teardown(void **state)
{
    stop_all();
    if (image_tag[0]) {
        const char *rmi[] = {"podman", "rmi", "-f", image_tag, NULL};
        struct swt_run r;
        if (swt_run(rmi, NULL, 60, &r) == 0)
            swt_run_free(&r);
    }
    swt_tmpdir_free(dir);
    return 0;
}

/* A host on the main sshd, its control sockets in dir/<ctl>. */
static void open_ssh(struct sw_host *h, const char *ctl, int port, const char *key, const char *kh)
{
    char cdir[4300];
    snprintf(cdir, sizeof(cdir), "%s/%s", dir, ctl);
    struct sw_host_cfg c = {.name = "testhost",
                            .kind = SW_HOST_KIND_SSH,
                            .address = "127.0.0.1",
                            .port = (unsigned)port,
                            .user = "root",
                            .identity_file = key,
                            .known_hosts = kh,
                            .connect_timeout_s = 3,
                            .control_dir = cdir};
    struct sw_err e;
    if (sw_host_open(h, &c, &e))
        fail_msg("open: %s", e.msg);
}

static void test_run_and_exit(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c1", main_sshd.port, client_key, known_hosts);
    const char *echo[] = {"echo", "hello", "over", "ssh", NULL};
    int rc = sw_host_run(&h, echo, NULL, &r, &e);
    if (rc)
        fail_msg("%s / %s", e.msg, r.err);
    assert_int_equal(r.fail, SW_HOST_OK);
    assert_string_equal(r.out, "hello over ssh\n");
    sw_host_result_free(&r);
    const char *ex[] = {"sh", "-c", "echo bad >&2; exit 42", NULL};
    assert_int_equal(sw_host_run(&h, ex, NULL, &r, &e), SW_ECHILD);
    assert_int_equal(r.fail, SW_HOST_EXIT);
    assert_int_equal(r.exit_code, 42);
    assert_string_equal(r.err, "bad\n");
    sw_host_result_free(&r);
    /* a remote 255 without ssh's words is the command's own exit code */
    const char *ex255[] = {"sh", "-c", "exit 255", NULL};
    assert_int_equal(sw_host_run(&h, ex255, NULL, &r, &e), SW_ECHILD);
    assert_int_equal(r.fail, SW_HOST_EXIT);
    assert_int_equal(r.exit_code, 255);
    sw_host_result_free(&r);
    sw_host_disconnect(&h);
}

/* Paths given to ssh stay literal: a known_hosts and a key in a directory whose name has a
 * space and %-tokens (ssh would split the option value at the space and expand %d to the home
 * directory); a "${" (which ssh expands with no escape) is refused before anything runs. */
static void test_paths_literal(void **state)
{
    (void)state;
    char odd[4300], kh[4400], key[4400], cmd[9000];
    snprintf(odd, sizeof(odd), "%s/odd place %%d %%u 'q\"", dir);
    assert_int_equal(mkdir(odd, 0700), 0);
    snprintf(kh, sizeof(kh), "%s/known hosts", odd);
    snprintf(key, sizeof(key), "%s/client key", odd);
    char *t = read_all(known_hosts);
    swt_write_str(kh, t);
    sw_free(t);
    t = read_all(client_key);
    swt_write_str(key, t);
    sw_free(t);
    assert_int_equal(chmod(key, 0600), 0);
    (void)cmd;
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c-odd", main_sshd.port, key, kh);
    const char *echo[] = {"echo", "literal", NULL};
    int rc = sw_host_run(&h, echo, NULL, &r, &e);
    if (rc)
        fail_msg("a path with a space and %%-tokens: %s / %s", e.msg, r.err);
    assert_string_equal(r.out, "literal\n");
    sw_host_result_free(&r);
    sw_host_disconnect(&h);

    /* ${VAR} cannot be kept literal: refused at open, naming the option */
    char bad[4400];
    snprintf(bad, sizeof(bad), "%s/${HOME}/known_hosts", dir);
    struct sw_host_cfg c = {.name = "dollar",
                            .kind = SW_HOST_KIND_SSH,
                            .address = "127.0.0.1",
                            .port = (unsigned)main_sshd.port,
                            .known_hosts = bad};
    sw_err_clear(&e);
    assert_int_equal(sw_host_open(&h, &c, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "known_hosts"));
    assert_non_null(strstr(e.msg, "${"));
}

/* The route through a host: an endpoint bound to the host's loopback is reached through a forward
 * on the host's ssh master, a unix socket in slipway's private directory (0600); the server sees
 * the Host it would see on its own machine; closing the route cancels the forward and removes
 * the socket. (The sshd here runs on this machine; test_route_decoy proves it across a network
 * of the host's own.) */
static void test_route_forward(void **state)
{
    (void)state;
    struct swh *srv = swh_start();
    swh_reply(srv, "GET", "/health", 200, NULL, "{\"status\":\"ok\"}");
    char run[4300], text[16384];
    snprintf(run, sizeof(run), "%s/run", dir);
    setenv("SLIPWAY_RUN_DIR", run, 1);
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n"
             "  h:\n"
             "    transport: {kind: ssh, address: 127.0.0.1, port: %d, user: root,\n"
             "                identity_file: %s, known_hosts: %s}\n"
             "    devices: {cpu: {kind: cpu, vendor: cpu}}\n"
             "endpoints:\n"
             "  e:\n"
             "    host: h\n"
             "    engine: llama.cpp\n"
             "    payload: {path: /m.gguf}\n"
             "    listen: 127.0.0.1:%d\n",
             main_sshd.port, client_key, known_hosts, swh_port(srv));
    struct sw_fleet *f = NULL;
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_fleet_load_mem("route.yaml", text, strlen(text), NULL, &f, &e))
        fail_msg("fleet: %s", e.msg);
    struct sw_host_route rt;
    int rc = sw_host_route_open(&rt, sw_fleet_endpoint(f, "e"), NULL, 10000, &e);
    if (rc)
        fail_msg("route: %s", e.msg);
    assert_int_equal(rt.addr.route, SW_FLEET_ROUTE_HOST);
    assert_non_null(strstr(rt.via, "127.0.0.1"));
    struct stat st;
    assert_int_equal(lstat(rt.unix_socket, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0077, 0);
    /* again: the same forward, no error */
    assert_int_equal(sw_host_route_refresh(&rt, 10000, &e), 0);
    char url[400];
    snprintf(url, sizeof(url), "%s/health", rt.url);
    struct sw_net_req q = {.unix_socket = rt.unix_socket, .total_ms = 10000};
    struct sw_net_resp resp;
    memset(&resp, 0, sizeof(resp));
    rc = sw_net_get(NULL, url, &q, &resp, &e);
    if (rc)
        fail_msg("GET through the forward: %s", e.msg);
    assert_int_equal(resp.status, 200);
    sw_net_resp_free(&resp);
    struct swh_request rq;
    assert_true(swh_last_request(srv, "/health", &rq));
    char hosth[128], want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", swh_port(srv));
    assert_non_null(swh_request_header(&rq, "Host", hosth, sizeof(hosth)));
    assert_string_equal(hosth, want);
    swh_request_free(&rq);
    char sock[sizeof(rt.unix_socket)];
    snprintf(sock, sizeof(sock), "%s", rt.unix_socket);
    sw_host_route_close(&rt);
    assert_int_not_equal(lstat(sock, &st), 0);
    sw_host_route_close(&rt); /* twice is safe */
    sw_fleet_free(f);
    swh_stop(srv);
    unsetenv("SLIPWAY_RUN_DIR");
}

static void test_hostile_argv(void **state)
{
    const char *words[] = {"printf",
                           "%s\\0",
                           "two words",
                           "it's",
                           "'",
                           "\"dq\"",
                           "$(touch /tmp/slipway-ssh-pwned)",
                           "`touch /tmp/slipway-ssh-pwned`",
                           "$HOME",
                           "a\nb\n",
                           "back\\slash",
                           "; exit 3",
                           "*",
                           "",
                           "-e",
                           NULL};
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c1", main_sshd.port, client_key, known_hosts);
    int rc = sw_host_run(&h, words, NULL, &r, &e);
    if (rc)
        fail_msg("%s / %s", e.msg, r.err);
    size_t off = 0;
    /* printf's format "%s\0" (written here as the two characters \ and 0) repeats per word */
    for (size_t i = 2; words[i]; i++) {
        assert_true(off <= r.out_len);
        assert_string_equal(r.out + off, words[i]);
        off += strlen(words[i]) + 1;
    }
    assert_int_equal(off, r.out_len);
    assert_int_equal(access("/tmp/slipway-ssh-pwned", F_OK), -1);
    sw_host_result_free(&r);
    sw_host_disconnect(&h);
}

static void test_deadline(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c1", main_sshd.port, client_key, known_hosts);
    const char *argv[] = {"sleep", "103.25", NULL};
    struct sw_host_run_opts o = {.deadline_ms = 1500};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), SW_ETIMEDOUT);
    assert_int_equal(r.fail, SW_HOST_DEADLINE);
    assert_true(r.seconds < 10);
    sw_host_result_free(&r);
    /* the remote side ends it too (timeout -k, 2 s past the deadline): nothing survives */
    int left = 1;
    for (int i = 0; i < 300 && left; i++) {
        left = swt_survivors("103.25", false, NULL);
        if (left)
            usleep(50000);
    }
    assert_int_equal(swt_survivors("103.25", true, NULL), 0);
    sw_host_disconnect(&h);
}

static bool dir_has_prefix(const char *d, const char *prefix)
{
    DIR *dd = opendir(d);
    struct dirent *de;
    bool found = false;
    if (!dd)
        return false;
    while ((de = readdir(dd)))
        found |= !strncmp(de->d_name, prefix, strlen(prefix));
    closedir(dd);
    return found;
}

static void test_copy(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    struct stat st;
    open_ssh(&h, "c1", main_sshd.port, client_key, known_hosts);
    char src[4300], out[4300], dst[4300];
    snprintf(src, sizeof(src), "%s/copy-src", dir);
    snprintf(out, sizeof(out), "%s/remote", dir);
    snprintf(dst, sizeof(dst), "%s/remote/frank.service", dir);
    assert_int_equal(mkdir(out, 0755), 0);
    /* bytes a shell or a terminal could mangle: NUL, CR, quotes, a line without its newline */
    static const char data[] = "a\0b\r\n'\"$(x)`y`\n\xff\xfe end";
    swt_write(src, data, sizeof(data) - 1);
    int rc = sw_host_copy(&h, src, dst, 0751, 20000, &r, &e);
    if (rc)
        fail_msg("%s / %s", e.msg, r.err);
    sw_host_result_free(&r);
    assert_true(swt_file_is(dst, data, sizeof(data) - 1));
    assert_int_equal(stat(dst, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0751);
    assert_false(dir_has_prefix(out, ".slipway-copy"));
    /* the target is a non-empty directory: the rename fails, nothing is left behind */
    char blocked[4400], keep[4500];
    snprintf(blocked, sizeof(blocked), "%s/blocked", out);
    snprintf(keep, sizeof(keep), "%s/keep", blocked);
    assert_int_equal(mkdir(blocked, 0755), 0);
    swt_write_str(keep, "keep");
    assert_int_not_equal(sw_host_copy(&h, src, blocked, 0644, 20000, &r, &e), 0);
    assert_int_equal(r.fail, SW_HOST_EXIT);
    sw_host_result_free(&r);
    assert_true(swt_file_is(keep, "keep", 4));
    assert_false(dir_has_prefix(out, ".slipway-copy"));
    /* a directory where nothing can be created (procfs) */
    assert_int_not_equal(sw_host_copy(&h, src, "/proc/slipway-ssh-copy", 0644, 20000, &r, &e), 0);
    assert_int_equal(r.fail, SW_HOST_EXIT);
    sw_host_result_free(&r);
    sw_host_disconnect(&h);
}

static void test_hostkey_changed(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c2", other_sshd.port, client_key, known_hosts);
    const char *argv[] = {"true", NULL};
    struct sw_host_run_opts o = {.deadline_ms = 15000};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), SW_EMISMATCH);
    assert_int_equal(r.fail, SW_HOST_HOSTKEY);
    assert_non_null(strstr(e.msg, "CHANGED"));
    assert_non_null(strstr(e.msg, "testhost"));
    assert_non_null(strstr(e.msg, known_hosts));
    sw_host_result_free(&r);
    /* and the known_hosts file was not rewritten */
    assert_true(swt_file_has(known_hosts, "[127.0.0.1]"));
    sw_host_disconnect(&h);
}

static void test_hostkey_unknown(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c3", main_sshd.port, client_key, empty_known);
    const char *argv[] = {"true", NULL};
    struct sw_host_run_opts o = {.deadline_ms = 15000};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), SW_EMISMATCH);
    assert_int_equal(r.fail, SW_HOST_HOSTKEY);
    assert_non_null(strstr(e.msg, "not known"));
    assert_non_null(strstr(e.msg, empty_known));
    sw_host_result_free(&r);
    /* never accepted on first use: the file is still empty */
    assert_true(swt_file_is(empty_known, "", 0));
    sw_host_disconnect(&h);
}

static void test_auth_refused(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    open_ssh(&h, "c4", main_sshd.port, other_key, known_hosts);
    const char *argv[] = {"true", NULL};
    struct sw_host_run_opts o = {.deadline_ms = 15000};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), SW_ENET);
    assert_int_equal(r.fail, SW_HOST_AUTH);
    assert_non_null(strstr(e.msg, "authentication refused"));
    sw_host_result_free(&r);
    sw_host_disconnect(&h);
}

static void test_unreachable(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    /* nothing listening */
    int port = swt_free_port();
    open_ssh(&h, "c5", port, client_key, known_hosts);
    const char *argv[] = {"true", NULL};
    struct sw_host_run_opts o = {.deadline_ms = 10000};
    assert_int_equal(sw_host_run(&h, argv, &o, &r, &e), SW_ENET);
    assert_int_equal(r.fail, SW_HOST_UNREACHABLE);
    assert_non_null(strstr(e.msg, "refused"));
    sw_host_result_free(&r);

    /* a peer that accepts and never speaks: the connect timeout (3 s) or the deadline ends it */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    open_ssh(&h, "c6", ntohs(sa.sin_port), client_key, known_hosts);
    o.deadline_ms = 8000;
    int rc = sw_host_run(&h, argv, &o, &r, &e);
    assert_true(rc == SW_ENET || rc == SW_ETIMEDOUT);
    assert_true(r.fail == SW_HOST_UNREACHABLE || r.fail == SW_HOST_DEADLINE);
    assert_true(r.seconds < 8.0 + 2.0);
    fprintf(stderr, "blackhole: %s after %.1f s: %s\n", sw_host_fail_name(r.fail), r.seconds,
            e.msg);
    sw_host_result_free(&r);
    close(fd);
}

static int count_accepted(void)
{
    char *l = read_all(main_sshd.log);
    int n = 0;
    for (const char *p = l; (p = strstr(p, "Accepted publickey")); p++)
        n++;
    sw_free(l);
    return n;
}

static void test_control_master_reused(void **state)
{
    struct sw_host h;
    struct sw_host_result r;
    struct sw_err e;
    struct stat st;
    open_ssh(&h, "c7", main_sshd.port, client_key, known_hosts);
    assert_int_equal(sw_host_master_pid(&h), 0);
    int before = count_accepted();
    const char *argv[] = {"echo", "one", NULL};
    assert_int_equal(sw_host_run(&h, argv, NULL, &r, &e), 0);
    sw_host_result_free(&r);
    assert_int_equal(stat(h.control_path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    pid_t m1 = sw_host_master_pid(&h);
    assert_true(m1 > 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sw_host_run(&h, argv, NULL, &r, &e), 0);
        assert_string_equal(r.out, "one\n");
        sw_host_result_free(&r);
    }
    /* four commands, one master, one authentication on the server */
    assert_int_equal(sw_host_master_pid(&h), m1);
    assert_int_equal(count_accepted() - before, 1);
    sw_host_disconnect(&h);
    for (int i = 0; i < 100 && stat(h.control_path, &st) == 0; i++)
        usleep(20000);
    assert_int_equal(stat(h.control_path, &st), -1);
}

static void test_facts(void **state)
{
    struct sw_host h;
    struct sw_host_facts f;
    struct sw_err e;
    open_ssh(&h, "c1", main_sshd.port, client_key, known_hosts);
    char missing[4300];
    snprintf(missing, sizeof(missing), "%s/not/here", dir);
    const char *paths[] = {dir, missing, "sh"};
    int rc = sw_host_facts(&h, paths, 3, 20000, &f, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_true(f.mem_total > 0 && f.mem_available <= f.mem_total);
    assert_true(f.systemd_version > 200);
    assert_true(f.paths[0].exists && f.paths[0].is_dir && f.paths[0].fs_size > 0);
    assert_false(f.paths[1].exists);
    assert_int_equal(f.paths[1].fs_size, f.paths[0].fs_size);
    assert_true(f.paths[2].is_exec && f.paths[2].resolved);
    sw_host_facts_free(&f);
    sw_host_disconnect(&h);
}

static void write_fleet(const char *path, int port, const char *payload, const char *image)
{
    char text[16384];
    int w = snprintf(text, sizeof(text),
                     "version: 1\n"
                     "hosts:\n"
                     "  testhost:\n"
                     "    transport: {kind: ssh, address: 127.0.0.1, port: %d, user: root,\n"
                     "                identity_file: %s, known_hosts: %s}\n"
                     "    devices:\n"
                     "      cpu: {kind: cpu, vendor: cpu}\n"
                     "endpoints:\n"
                     "  native:\n"
                     "    host: testhost\n"
                     "    engine: llama.cpp\n"
                     "    binary: /bin/sh\n"
                     "    listen: 127.0.0.1:18080\n"
                     "    payload:\n"
                     "      path: %s\n",
                     port, client_key, known_hosts, payload);
    if (image)
        snprintf(text + w, sizeof(text) - (size_t)w,
                 "  boxed:\n"
                 "    host: testhost\n"
                 "    engine: llama.cpp\n"
                 "    image: %s\n"
                 "    listen: 127.0.0.1:18081\n"
                 "    payload:\n"
                 "      path: %s\n",
                 image, payload);
    swt_write_str(path, text);
}

/* A tiny local image (an empty filesystem) and its reference by digest, in *ref. */
static bool make_image(const char *tag, char *ref, size_t n)
{
    char tar[4300];
    struct swt_run r;
    snprintf(tar, sizeof(tar), "%s/empty.tar", dir);
    const char *mk[] = {"tar", "cf", tar, "--files-from", "/dev/null", NULL};
    if (!run_ok(mk))
        return false;
    const char *imp[] = {"podman", "import", "-q", tar, tag, NULL};
    if (!run_ok(imp))
        return false;
    const char *insp[] = {"podman", "image", "inspect", "--format", "{{.Digest}}", tag, NULL};
    if (swt_run(insp, NULL, 60, &r) != 0)
        return false;
    bool ok = r.status == 0 && !strncmp(r.out, "sha256:", 7);
    r.out[strcspn(r.out, "\n")] = '\0';
    snprintf(ref, n, "localhost/slipway-hosts-check-test@%s", r.out);
    swt_run_free(&r);
    return ok;
}

/* Does this machine's systemd manager answer? (the sshd here logs into this machine) */
static bool manager_answers(void)
{
    const char *show[] = {"systemctl", "show", "--property=Version", "--value", NULL};
    struct swt_run r;
    if (swt_run(show, NULL, 60, &r) != 0)
        return false;
    bool ok = r.status == 0;
    swt_run_free(&r);
    return ok;
}

static void test_hosts_check_cli(void **state)
{
    char fleet[4300], models[4300], ctl[4300];
    struct swt_run r;
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    snprintf(models, sizeof(models), "%s/models", dir);
    snprintf(ctl, sizeof(ctl), "%s/cli-run", dir);
    setenv("SLIPWAY_RUN_DIR", ctl, 1);
    assert_int_equal(mkdir(models, 0755), 0);
    swt_need(access("/usr/bin/podman", X_OK) == 0, "podman (an endpoint's image by digest)");
    char image[512], *tag = image_tag;
    snprintf(image_tag, sizeof(image_tag), "localhost/slipway-hosts-check-test:%d", (int)getpid());
    assert_true(make_image(tag, image, sizeof(image)));
    write_fleet(fleet, main_sshd.port, models, image);
    /* green, unless this machine's systemd manager does not answer (a container whose PID 1 is
     * not systemd): no unit could start here, so that is then the one gap, and everything else
     * is checked as on a machine with one */
    bool manager = manager_answers();
    assert_int_equal(swt_slipway(&r, "hosts", "check", "--fleet", fleet, "--json", NULL), 0);
    if (r.status != (manager ? 0 : 1))
        fail_msg("hosts check (systemd manager %s): %s %s", manager ? "answers" : "absent", r.out,
                 r.err);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")),
                        manager ? "pass" : "fail");
    json_t *h0 = json_array_get(json_object_get(j, "hosts"), 0);
    if (!manager) {
        json_t *gaps = json_object_get(h0, "gaps");
        assert_int_equal(json_array_size(gaps), 1);
        assert_non_null(strstr(json_string_value(json_array_get(gaps, 0)),
                               "testhost: systemd not reachable: "));
    }
    assert_true(json_is_true(json_object_get(h0, "reached")));
    assert_non_null(strstr(json_string_value(json_object_get(h0, "transport")), "ssh root@"));
    assert_true(json_integer_value(json_object_get(h0, "systemd")) > 200);
    json_t *ep = json_array_get(json_object_get(h0, "endpoints"), 0);
    assert_true(json_is_true(json_object_get(json_object_get(ep, "payload"), "present")));
    assert_true(json_integer_value(json_object_get(json_object_get(ep, "payload"), "free")) > 0);
    assert_true(json_is_true(json_object_get(json_object_get(ep, "binary"), "present")));
    ep = json_array_get(json_object_get(h0, "endpoints"), 1);
    assert_true(json_is_true(json_object_get(json_object_get(ep, "image"), "present")));
    json_decref(j);
    swt_run_free(&r);

    /* the image gone (same digest, removed from the store): exit 1, the gap names it */
    const char *rmi[] = {"podman", "rmi", "-f", tag, NULL};
    assert_true(run_ok(rmi));
    assert_int_equal(swt_slipway(&r, "hosts", "check", "--fleet", fleet, NULL), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "GAP testhost: endpoint boxed: image localhost/"));
    assert_non_null(strstr(r.out, "not present in podman"));
    swt_run_free(&r);
    write_fleet(fleet, main_sshd.port, models, NULL);

    /* the payload directory missing: exit 1, the gap named */
    assert_int_equal(rmdir(models), 0);
    assert_int_equal(swt_slipway(&r, "hosts", "check", "--fleet", fleet, NULL), 0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "GAP testhost: endpoint native: payload"));
    assert_non_null(strstr(r.out, "not found"));
    swt_run_free(&r);

    /* the host unreachable: reported within the deadline, exit 1 */
    write_fleet(fleet, swt_free_port(), models, NULL);
    assert_int_equal(
        swt_slipway(&r, "hosts", "check", "--fleet", fleet, "--deadline", "5s", "--json", NULL), 0);
    assert_int_equal(r.status, 1);
    j = swt_json_out(&r);
    h0 = json_array_get(json_object_get(j, "hosts"), 0);
    assert_false(json_is_true(json_object_get(h0, "reached")));
    assert_non_null(
        strstr(json_string_value(json_array_get(json_object_get(h0, "gaps"), 0)), "unreachable"));
    json_decref(j);
    swt_run_free(&r);
    unsetenv("SLIPWAY_RUN_DIR");
    /* the CLI left its master running (ControlPersist, for the next command): end it here, the
     * same host opened with the CLI's control directory names the same socket */
    struct sw_host h;
    open_ssh(&h, "cli-run/ssh", main_sshd.port, client_key, known_hosts);
    assert_true(sw_host_master_pid(&h) > 0);
    sw_host_disconnect(&h);
    assert_int_equal(sw_host_master_pid(&h), 0);
}

int main(void)
{
    sw_core_init();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_and_exit),
        cmocka_unit_test(test_paths_literal),
        cmocka_unit_test(test_route_forward),
        cmocka_unit_test(test_hostile_argv),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_hostkey_changed),
        cmocka_unit_test(test_hostkey_unknown),
        cmocka_unit_test(test_auth_refused),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_control_master_reused),
        cmocka_unit_test(test_facts),
        cmocka_unit_test(test_hosts_check_cli),
    };
    return cmocka_run_group_tests_name("host_ssh", tests, setup, teardown);
}
