/*
 * Real test hosts through scripts/testhost.sh (see swthost.h). The script does the work (rootfs,
 * nspawn, sshd, keys); this file parses what `up` prints, keeps a registry of hosts that are up so
 * they are stopped at exit or on a fatal signal, and runs commands on them over ssh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swthost.h"
#include "swllama.h"
#include "swtest.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SWTH_MAX 8

/* Names of hosts that are up, for the exit and signal paths: fixed storage, no allocation, so the
 * signal handler only reads it. */
static char reg_name[SWTH_MAX][32];
static volatile sig_atomic_t reg_used[SWTH_MAX];
static bool hooks_set;
static char script_path[4096];

static const char *script(void)
{
    if (!script_path[0])
        snprintf(script_path, sizeof(script_path), "%s", swt_src("scripts/testhost.sh"));
    return script_path;
}

/* fork + exec `testhost.sh down NAME` and wait: async-signal-safe (no stdio, no malloc). */
static void down_raw(const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        char *const argv[] = {script_path, "down", (char *)name, "--kill", NULL};
        execv(script_path, argv);
        _exit(127);
    }
    if (pid > 0) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
}

static void down_all(void)
{
    for (int i = 0; i < SWTH_MAX; i++)
        if (reg_used[i]) {
            down_raw(reg_name[i]);
            reg_used[i] = 0;
        }
}

static void on_signal(int sig)
{
    down_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void set_hooks(void)
{
    if (hooks_set)
        return;
    hooks_set = true;
    (void)script();
    atexit(down_all);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

static void reg_add(const char *name)
{
    for (int i = 0; i < SWTH_MAX; i++)
        if (reg_used[i] && !strcmp(reg_name[i], name))
            return;
    for (int i = 0; i < SWTH_MAX; i++)
        if (!reg_used[i]) {
            snprintf(reg_name[i], sizeof(reg_name[i]), "%s", name);
            reg_used[i] = 1;
            return;
        }
}

static void reg_del(const char *name)
{
    for (int i = 0; i < SWTH_MAX; i++)
        if (reg_used[i] && !strcmp(reg_name[i], name))
            reg_used[i] = 0;
}

static bool in_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    if (!path)
        path = "/usr/sbin:/usr/bin:/sbin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
        if (!access(buf, X_OK))
            return true;
        path += n;
        if (*path == ':')
            path++;
    }
    return false;
}

/* Runs the script with args; r filled as swt_run. */
static int run_script(struct swt_run *r, unsigned timeout_s, const char *a1, const char *a2,
                      const char *a3)
{
    const char *argv[] = {script(), a1, a2, a3, NULL};
    return swt_run(argv, NULL, timeout_s, r);
}

const char *swth_missing(void)
{
    static char why[1024];
    why[0] = '\0';
    if (geteuid() != 0) {
        snprintf(why, sizeof(why), "test hosts need root (systemd-nspawn)");
        return why;
    }
    const char *progs[] = {"systemd-nspawn", "nsenter", "ssh", "ssh-keygen", "mmdebstrap", "ip"};
    for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
        if (!in_path(progs[i])) {
            snprintf(why, sizeof(why), "%s is not installed (scripts/deps.sh)", progs[i]);
            return why;
        }
    struct swt_run r;
    if (run_script(&r, 30, "paths", NULL, NULL) || r.status) {
        snprintf(why, sizeof(why), "%s paths failed: %s", script(), r.err ? r.err : "");
        swt_run_free(&r);
        return why;
    }
    /* paths prints rootfs=TAR and llama=DIR (or llama= when not built) */
    const char *l = strstr(r.out, "llama=");
    if (!l || l[6] == '\n' || !l[6])
        snprintf(why, sizeof(why), "the pinned llama.cpp is not built (scripts/llama-build.sh)");
    swt_run_free(&r);
    return why;
}

const char *swth_podman_missing(void)
{
    static char why[1024];
    why[0] = '\0';
    const char *progs[] = {"podman", "runc"};
    for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
        if (!in_path(progs[i])) {
            snprintf(why, sizeof(why), "%s is not installed (scripts/deps.sh)", progs[i]);
            return why;
        }
    const char *argv[] = {"podman", "image", "exists", SWTH_IMAGE ":test", NULL};
    struct swt_run r;
    if (swt_run(argv, NULL, 60, &r) || r.status)
        snprintf(why, sizeof(why),
                 "image " SWTH_IMAGE ":test is not built (scripts/testhost.sh image)");
    swt_run_free(&r);
    return why;
}

void swth_image_digest(char *buf, size_t n)
{
    const char *argv[] = {"podman",           "image", "inspect", "--format", "{{.Digest}}",
                          SWTH_IMAGE ":test", NULL};
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    r.out[strcspn(r.out, "\n")] = '\0';
    assert_true(!strncmp(r.out, "sha256:", 7));
    snprintf(buf, n, "%s", r.out);
    swt_run_free(&r);
}

/* The value of "key=" at the start of a line of out, copied into dst. */
static bool field(const char *out, const char *key, char *dst, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            const char *v = p + kl + 1;
            size_t vl = strcspn(v, "\n");
            if (vl >= n)
                return false;
            memcpy(dst, v, vl);
            dst[vl] = '\0';
            return true;
        }
    }
    return false;
}

int swth_up(const char *name, const char *addr, const char *const *binds, struct swth_host *h)
{
    const char *argv[64];
    int n = 0;
    memset(h, 0, sizeof(*h));
    snprintf(h->name, sizeof(h->name), "%s", name);
    set_hooks();
    argv[n++] = script();
    argv[n++] = "up";
    argv[n++] = name;
    argv[n++] = addr;
    for (size_t i = 0; binds && binds[i] && n < 60; i++) {
        argv[n++] = "--bind-ro";
        argv[n++] = binds[i];
    }
    argv[n] = NULL;
    /* registered before the boot: a signal while it boots still takes it down */
    reg_add(name);
    struct swt_run r;
    int rc = swt_run(argv, NULL, 180, &r);
    if (rc || r.status) {
        fprintf(stderr, "swthost: %s up %s %s: exit %d\n%s%s", script(), name, addr, r.status,
                r.out ? r.out : "", r.err ? r.err : "");
        swt_run_free(&r);
        swth_down(h);
        return -1;
    }
    char num[64];
    bool ok = field(r.out, "addr", h->addr, sizeof(h->addr)) &&
              field(r.out, "gateway", h->gateway, sizeof(h->gateway)) &&
              field(r.out, "root", h->root, sizeof(h->root)) &&
              field(r.out, "key", h->key, sizeof(h->key)) &&
              field(r.out, "known_hosts", h->known_hosts, sizeof(h->known_hosts)) &&
              field(r.out, "known_hosts_line", h->known_hosts_line, sizeof(h->known_hosts_line));
    if (ok && field(r.out, "pid", num, sizeof(num)))
        h->pid = (pid_t)atol(num);
    if (ok && field(r.out, "leader", num, sizeof(num)))
        h->leader = (pid_t)atol(num);
    if (ok && field(r.out, "boot_ms", num, sizeof(num)))
        h->boot_ms = atol(num);
    if (!ok || h->pid <= 0) {
        fprintf(stderr, "swthost: cannot read what `up` printed:\n%s", r.out);
        swt_run_free(&r);
        swth_down(h);
        return -1;
    }
    swt_run_free(&r);
    h->up = true;
    return 0;
}

/* A test's host is disposable: `down --kill` (its PID 1 killed, no power-off, about 2 s less per
 * host); swth_down_graceful powers it off as an operator's `down` does. */
static int down_host(struct swth_host *h, bool graceful)
{
    if (!h->name[0])
        return 0;
    swth_mux_off(h); /* its session would hold a power-off */
    struct swt_run r;
    int rc = graceful ? run_script(&r, 60, "down", h->name, NULL)
                      : run_script(&r, 60, "down", h->name, "--kill");
    int st = rc ? -1 : r.status;
    if (st)
        fprintf(stderr, "swthost: %s down %s: exit %d\n%s", script(), h->name, st,
                r.err ? r.err : "");
    swt_run_free(&r);
    reg_del(h->name);
    h->up = false;
    return st;
}

int swth_down(struct swth_host *h)
{
    return down_host(h, false);
}

int swth_down_graceful(struct swth_host *h)
{
    return down_host(h, true);
}

void swth_mux_on(struct swth_host *h)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", h->known_hosts);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    /* a unix socket's path holds at most 107 bytes: longer, the host keeps a connection a call */
    if (slash && strlen(dir) + sizeof("/mux") <= 108)
        snprintf(h->mux, sizeof(h->mux), "%s/mux", dir);
}

void swth_mux_off(struct swth_host *h)
{
    if (!h->mux[0])
        return;
    char cp[4300], dest[64];
    snprintf(cp, sizeof(cp), "ControlPath=%s", h->mux);
    snprintf(dest, sizeof(dest), "root@%s", h->addr);
    const char *argv[] = {"ssh", "-F",   "/dev/null", "-o", cp, "-o", "LogLevel=QUIET",
                          "-O",  "exit", dest,        NULL};
    struct swt_run r;
    if (!swt_run(argv, NULL, 10, &r))
        swt_run_free(&r);
    h->mux[0] = '\0';
}

int swth_ssh(const struct swth_host *h, const char *cmd, const char *stdin_text,
             unsigned deadline_s, struct swt_run *r)
{
    char idopt[4200], khopt[4200], dest[64], cp[4300];
    snprintf(idopt, sizeof(idopt), "IdentityFile=%s", h->key);
    snprintf(khopt, sizeof(khopt), "UserKnownHostsFile=%s", h->known_hosts);
    snprintf(dest, sizeof(dest), "root@%s", h->addr);
    snprintf(cp, sizeof(cp), "ControlPath=%s", h->mux);
    /* with a shared connection (swth_mux_on): the first call leaves its master behind for the
     * others, which dies 60 s after its last session or once the host stops answering */
    const char *mux[] = {"-o", "ControlMaster=auto",    "-o", cp,
                         "-o", "ControlPersist=60",     "-o", "ServerAliveInterval=2",
                         "-o", "ServerAliveCountMax=3", NULL};
    const char *argv[40] = {"ssh",
                            "-F",
                            "/dev/null",
                            "-o",
                            idopt,
                            "-o",
                            "IdentitiesOnly=yes",
                            "-o",
                            "BatchMode=yes",
                            "-o",
                            "StrictHostKeyChecking=yes",
                            "-o",
                            khopt,
                            "-o",
                            "GlobalKnownHostsFile=/dev/null",
                            "-o",
                            "ConnectTimeout=5",
                            "-o",
                            "LogLevel=ERROR"};
    int n = 0;
    while (argv[n])
        n++;
    for (int i = 0; h->mux[0] && mux[i]; i++)
        argv[n++] = mux[i];
    argv[n++] = dest;
    argv[n++] = cmd;
    argv[n] = NULL;
    return swt_run(argv, stdin_text ? stdin_text : "", deadline_s, r);
}

int swth_put(const struct swth_host *h, const char *path, const char *text)
{
    char cmd[8400];
    snprintf(cmd, sizeof(cmd),
             "set -e; mkdir -p \"$(dirname '%s')\"; t=$(mktemp '%s.XXXXXX'); cat >\"$t\"; "
             "chmod 0644 \"$t\"; mv \"$t\" '%s'",
             path, path, path);
    struct swt_run r;
    int rc = swth_ssh(h, cmd, text, 30, &r);
    if (!rc && r.status) {
        fprintf(stderr, "swthost: writing %s on %s: exit %d: %s", path, h->name, r.status, r.err);
        rc = -1;
    }
    swt_run_free(&r);
    return rc;
}

int swth_wait(const struct swth_host *h, const char *cmd, unsigned deadline_s, struct swt_run *r)
{
    time_t end = time(NULL) + (time_t)deadline_s;
    struct swt_run tmp;
    for (;;) {
        int rc = swth_ssh(h, cmd, NULL, 20, &tmp);
        bool ok = !rc && tmp.status == 0;
        if (ok || time(NULL) >= end) {
            if (r)
                *r = tmp;
            else
                swt_run_free(&tmp);
            return ok ? 0 : -1;
        }
        swt_run_free(&tmp);
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int swth_left(const char *name)
{
    struct swt_run r;
    int left = 0;
    if (run_script(&r, 30, "list", NULL, NULL))
        return -1;
    size_t nl = strlen(name);
    for (const char *p = r.out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, nl) && p[nl] == ' ')
            left++;
    swt_run_free(&r);
    return left;
}

char *swth_must(const struct swth_host *h, const char *cmd)
{
    struct swt_run r;
    assert_int_equal(swth_ssh(h, cmd, NULL, 60, &r), 0);
    if (r.status)
        fail_msg("%s: `%s` exited %d: %s%s", h->name, cmd, r.status, r.out, r.err);
    char *out = r.out;
    r.out = NULL;
    swt_run_free(&r);
    return out;
}

void swth_show(const struct swth_host *h, const char *unit, const char *prop, char *buf, size_t n)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "systemctl show -p %s --value %s", prop, unit);
    char *out = swth_must(h, cmd);
    out[strcspn(out, "\n")] = '\0';
    snprintf(buf, n, "%s", out);
    free(out);
}

void swth_model(char *dir, size_t dn, char *model, size_t mn, char *missing, size_t xn)
{
    char *d = swt_tmpdir();
    snprintf(dir, dn, "%s", d);
    free(d);
    model[0] = '\0';
    if (!swl_llama_dir()) {
        snprintf(missing, xn, "%s", swl_missing());
        return;
    }
    if (swl_chat_model(dir, model, mn, missing, xn))
        model[0] = '\0';
    /* the hosts' processes run as root but read it through a bind mount: make it readable */
    chmod(dir, 0755);
    if (model[0])
        chmod(model, 0644);
}

struct swth_group_model swth_gm;

int swth_group_setup(void **state)
{
    (void)state;
    swth_model(swth_gm.dir, sizeof(swth_gm.dir), swth_gm.model, sizeof(swth_gm.model),
               swth_gm.missing, sizeof(swth_gm.missing));
    return 0;
}

int swth_group_teardown(void **state)
{
    (void)state;
    if (swth_gm.dir[0])
        swt_tmpdir_free(strdup(swth_gm.dir));
    swth_gm.dir[0] = '\0';
    swth_gm.model[0] = '\0';
    return 0;
}

void swth_end_masters(const char *run_dir)
{
    pid_t pid = 0;
    for (int i = 0; i < 50 && swt_survivors(run_dir, false, &pid); i++) {
        kill(pid, SIGTERM);
        usleep(100 * 1000);
    }
}

int swth_fx_setup(void **state)
{
    struct swth_fx *f = calloc(1, sizeof(*f));
    *state = f;
    return f ? 0 : -1;
}

int swth_fx_teardown(void **state)
{
    struct swth_fx *f = *state;
    swth_down(&f->h);
    if (f->dir)
        swt_tmpdir_free(f->dir);
    free(f);
    return 0;
}

void swth_fx_up(struct swth_fx *f, const char *name, const char *addr, const char *const *binds,
                const char *led_name)
{
    swt_need(swth_missing()[0] == '\0', "%s", swth_missing());
    swt_need(swth_gm.model[0] != '\0', "no chat model: %s", swth_gm.missing);
    assert_int_equal(swth_up(name, addr, binds, &f->h), 0);
    print_message("host %s up at %s in %ld ms\n", name, addr, f->h.boot_ms);
    f->dir = swt_tmpdir();
    snprintf(f->fleet, sizeof(f->fleet), "%s", swt_join(f->dir, "fleet.yaml"));
    snprintf(f->led, sizeof(f->led), "%s", swt_join(f->dir, led_name));
    f->port = swt_free_port();
}
