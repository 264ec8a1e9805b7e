/*
 * host: the two transports. `local` executes the argv as it is. `ssh` runs the OpenSSH client
 * with the options that make it safe to use unattended (keys only, strict host keys, a master
 * connection reused, a connect timeout) and the argv single-quoted under coreutils `timeout`, so
 * a remote command outlives its deadline by at most a few seconds even when the connection is
 * gone. The ssh client's own failures (exit 255 with its words on stderr) are told apart from the
 * remote command's.
 */
#include "host_internal.h"

#include <stdio.h>
#include <string.h>

struct vec {
    char **v;
    size_t n, cap;
    int rc;
};

static void vec_add(struct vec *a, const char *s)
{
    if (a->rc)
        return;
    if (sw_grow(&a->v, &a->cap, a->n + 1, sizeof(*a->v), SIZE_MAX)) { /* and the NULL after */
        a->rc = SW_ENOMEM;
        return;
    }
    a->v[a->n] = sw_strdup(s);
    if (!a->v[a->n]) {
        a->rc = SW_ENOMEM;
        return;
    }
    a->v[++a->n] = NULL;
}

static void vec_addf(struct vec *a, const char *key, const char *s)
{
    char buf[2048];
    int w = snprintf(buf, sizeof(buf), "%s=%s", key, s);
    if (w < 0 || (size_t)w >= sizeof(buf)) {
        a->rc = a->rc ? a->rc : SW_ERANGE;
        return;
    }
    vec_add(a, buf);
}

static int vec_done(struct vec *a, char ***out, struct sw_err *e)
{
    if (a->rc) {
        sw__host_argv_free(a->v);
        return sw_err_set(e, a->rc, "building the command line: %s", sw_strerror(a->rc));
    }
    *out = a->v;
    return 0;
}

static int local_build(const struct sw_host *h, const char *const *argv, int64_t deadline_ms,
                       char ***out, struct sw_err *e)
{
    (void)h;
    (void)deadline_ms;
    struct vec a = {0};
    for (size_t i = 0; argv[i]; i++)
        vec_add(&a, argv[i]);
    return vec_done(&a, out, e);
}

static enum sw_host_fail local_classify(const struct sw_host *h, int code,
                                        const struct sw_host_result *r, char *why, size_t whyn)
{
    (void)h;
    (void)r;
    if (code == 0)
        return SW_HOST_OK;
    snprintf(why, whyn, "exited %d", code);
    return SW_HOST_EXIT;
}

const struct sw_host_ops sw__host_local = {"local", local_build, local_classify};

/* A path as one ssh_config value (`-o KEY=VALUE`): ssh splits the value into words and expands
 * %-tokens (%d, %u, %h ...) and ${VAR} in it, so the path is double-quoted, a backslash or a
 * double quote inside escaped, and % doubled; "${" has no escape in ssh, and a control character
 * would end the option, so both are refused (sw_host_open says so before anything runs). */
static int ssh_path_value(const char *key, const char *path, char *out, size_t n)
{
    size_t w = 0;
    int k = snprintf(out, n, "%s=\"", key);
    if (k < 0 || (size_t)k >= n)
        return SW_ERANGE;
    w = (size_t)k;
    for (const char *p = path; *p; p++) {
        char c = *p;
        if ((unsigned char)c < 0x20 || c == 0x7f || (c == '$' && p[1] == '{'))
            return SW_EINVAL;
        if (w + 3 >= n)
            return SW_ERANGE;
        if (c == '"' || c == '\\')
            out[w++] = '\\';
        else if (c == '%')
            out[w++] = '%';
        out[w++] = c;
    }
    if (w + 2 > n)
        return SW_ERANGE;
    out[w++] = '"';
    out[w] = '\0';
    return 0;
}

int sw__host_ssh_path_check(const char *what, const char *path, struct sw_err *e)
{
    char buf[2600];
    int rc = ssh_path_value("X", path, buf, sizeof(buf));
    if (rc == SW_EINVAL)
        return sw_err_set(e, SW_EINVAL,
                          "%s '%s': ssh would expand '${' in it (no escape exists) or a control "
                          "character would end the option; rename the file",
                          what, path);
    if (rc)
        return sw_err_set(e, rc, "%s is too long for an ssh option (%zu bytes)", what,
                          strlen(path));
    return 0;
}

static void vec_add_path(struct vec *a, const char *key, const char *path)
{
    char buf[2600];
    if (a->rc)
        return;
    int rc = ssh_path_value(key, path, buf, sizeof(buf));
    if (rc) {
        a->rc = rc;
        return;
    }
    vec_add(a, "-o");
    vec_add(a, buf);
}

/* The options every ssh invocation of this host carries (the master's and -O's too). */
static void ssh_opts(const struct sw_host *h, struct vec *a)
{
    char num[32];
    vec_add(a, h->ssh_binary);
    vec_add(a, "-o");
    vec_add(a, "BatchMode=yes");
    vec_add(a, "-o");
    vec_add(a, "StrictHostKeyChecking=yes");
    vec_add(a, "-o");
    vec_add(a, "PasswordAuthentication=no");
    vec_add(a, "-o");
    vec_add(a, "KbdInteractiveAuthentication=no");
    vec_add(a, "-o");
    snprintf(num, sizeof(num), "ConnectTimeout=%u", h->connect_timeout_s);
    vec_add(a, num);
    /* a peer that stops answering is noticed in about 3 x 5 s, not at TCP's hours */
    vec_add(a, "-o");
    vec_add(a, "ServerAliveInterval=5");
    vec_add(a, "-o");
    vec_add(a, "ServerAliveCountMax=3");
    vec_add(a, "-o");
    vec_add(a, "ControlMaster=auto");
    vec_add(a, "-o");
    vec_addf(a, "ControlPath", h->control_path);
    vec_add(a, "-o");
    vec_add(a, "ControlPersist=60");
    /* a forward's local socket (host/route) replaces one a dead master left behind */
    vec_add(a, "-o");
    vec_add(a, "StreamLocalBindUnlink=yes");
    if (h->known_hosts[0]) {
        vec_add_path(a, "UserKnownHostsFile", h->known_hosts);
        /* the fleet's file is the one authority for its hosts */
        vec_add(a, "-o");
        vec_add(a, "GlobalKnownHostsFile=/dev/null");
    }
    if (h->identity_file[0]) {
        vec_add_path(a, "IdentityFile", h->identity_file);
        vec_add(a, "-o");
        vec_add(a, "IdentitiesOnly=yes");
    }
    if (h->port) {
        snprintf(num, sizeof(num), "%u", h->port);
        vec_add(a, "-p");
        vec_add(a, num);
    }
    if (h->user[0]) {
        vec_add(a, "-l");
        vec_add(a, h->user);
    }
}

static int ssh_build(const struct sw_host *h, const char *const *argv, int64_t deadline_ms,
                     char ***out, struct sw_err *e)
{
    struct vec a = {0};
    struct sw_buf cmd;
    sw_buf_init(&cmd, 1u << 20);
    ssh_opts(h, &a);
    vec_add(&a, "-T");
    vec_add(&a, "--");
    vec_add(&a, h->address);
    /* the remote side ends the command 2 s after our deadline (KILL 2 s later still): a command
     * whose connection was cut does not run on */
    int rc = sw_buf_printf(&cmd, "timeout -k 2 %lld ", (long long)(deadline_ms + 999) / 1000 + 2);
    if (!rc)
        rc = sw_host_quote_argv(argv, &cmd);
    if (rc) {
        sw_buf_free(&cmd);
        sw__host_argv_free(a.v);
        return sw_err_set(e, rc, "host %s: the command line is too long", h->name);
    }
    vec_add(&a, sw_buf_cstr(&cmd));
    sw_buf_free(&cmd);
    return vec_done(&a, out, e);
}

static bool has(const struct sw_host_result *r, const char *needle)
{
    return r->err && strstr(r->err, needle) != NULL;
}

static enum sw_host_fail ssh_classify(const struct sw_host *h, int code,
                                      const struct sw_host_result *r, char *why, size_t whyn)
{
    char d[512];
    sw_host_describe(h, d, sizeof(d));
    const char *kh = h->known_hosts[0] ? h->known_hosts : "~/.ssh/known_hosts";
    if (code == 0)
        return SW_HOST_OK;
    /* a remote command may exit 255 too: only ssh's own words make it ssh's failure */
    if (code == 255) {
        if (has(r, "REMOTE HOST IDENTIFICATION HAS CHANGED") ||
            has(r, "Host key for") /* "Host key for X has changed" */) {
            snprintf(why, whyn,
                     "%s: the host key CHANGED: it does not match the one in %s; refused (if "
                     "the host was reinstalled, check its new key and replace the old one with "
                     "ssh-keygen -R)",
                     d, kh);
            return SW_HOST_HOSTKEY;
        }
        if (has(r, "Host key verification failed") || has(r, "host key is known") ||
            has(r, "No matching host key")) {
            snprintf(why, whyn,
                     "%s: the host key is not known in %s; refused (slipway never accepts a "
                     "key on first use: add the host's key to that file)",
                     d, kh);
            return SW_HOST_HOSTKEY;
        }
        if (has(r, "Permission denied") || has(r, "Too many authentication failures") ||
            has(r, "no more authentication methods")) {
            snprintf(why, whyn, "%s: authentication refused (keys only, BatchMode)%s%s", d,
                     h->identity_file[0] ? "; key " : "", h->identity_file);
            return SW_HOST_AUTH;
        }
        static const char *const net[] = {
            "Connection refused",
            "Connection timed out",
            "timed out",
            "No route to host",
            "Network is unreachable",
            "Could not resolve hostname",
            "Name or service not known",
            "Connection closed",
            "Connection reset",
            "kex_exchange_identification",
            "banner exchange",
            "ssh_exchange_identification",
            "Broken pipe",
            "Control socket connect",
            "ssh: connect to host",
        };
        for (size_t i = 0; i < SW_ARRAY_LEN(net); i++) {
            if (has(r, net[i])) {
                /* the line that says it (a warning may come first) */
                const char *ls = strstr(r->err, net[i]);
                while (ls > r->err && ls[-1] != '\n')
                    ls--;
                char line[400];
                size_t n = strcspn(ls, "\r\n");
                snprintf(line, sizeof(line), "%.*s", (int)SW_MIN(n, sizeof(line) - 1), ls);
                snprintf(why, whyn, "%s: unreachable: %s", d, line);
                return SW_HOST_UNREACHABLE;
            }
        }
    }
    snprintf(why, whyn, "exited %d", code);
    return SW_HOST_EXIT;
}

const struct sw_host_ops sw__host_ssh = {"ssh", ssh_build, ssh_classify};

int sw__host_ssh_control(struct sw_host *h, const char *cmd, const char *forward,
                         struct sw_host_result *r)
{
    struct vec a = {0};
    ssh_opts(h, &a);
    vec_add(&a, "-O");
    vec_add(&a, cmd);
    if (forward) {
        vec_add(&a, "-L");
        vec_add(&a, forward);
    }
    vec_add(&a, "--");
    vec_add(&a, h->address);
    char **lv = NULL;
    if (vec_done(&a, &lv, NULL)) {
        memset(r, 0, sizeof(*r));
        r->exit_code = -1;
        r->fail = SW_HOST_LOCAL;
        return SW_ENOMEM;
    }
    /* run the ssh binary as a local command */
    struct sw_host local = *h;
    local.ops = &sw__host_local;
    struct sw_host_run_opts o = {.deadline_ms = 5000, .max_out = 4096};
    int rc = sw_host_run(&local, (const char *const *)lv, &o, r, NULL);
    sw__host_argv_free(lv);
    return rc;
}

void sw_host_disconnect(struct sw_host *h)
{
    struct sw_host_result r;
    if (h->kind != SW_HOST_KIND_SSH)
        return;
    sw__host_ssh_control(h, "exit", NULL, &r);
    sw_host_result_free(&r);
}

pid_t sw_host_master_pid(struct sw_host *h)
{
    struct sw_host_result r;
    pid_t pid = 0;
    if (h->kind != SW_HOST_KIND_SSH)
        return 0;
    if (sw__host_ssh_control(h, "check", NULL, &r) == 0) {
        /* "Master running (pid=1234)" */
        const char *p = strstr(r.err, "pid=");
        if (!p)
            p = strstr(r.out, "pid=");
        long v = 0;
        if (p && sscanf(p + 4, "%ld", &v) == 1 && v > 0)
            pid = (pid_t)v;
    }
    sw_host_result_free(&r);
    return pid;
}
