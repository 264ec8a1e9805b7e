/*
 * Test helpers (see swtest.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/deploy.h>
#include <slipway/fleet.h>
#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/plan.h>
#include <slipway/sglang.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char rot[8][4096];
static int rot_i;

static char *next_buf(void)
{
    return rot[rot_i++ % 8];
}

bool swt_ci(void)
{
    const char *ci = getenv("CI");
    return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

void swt_need(bool have, const char *what_fmt, ...)
{
    char what[1024];
    va_list ap;
    if (have)
        return;
    va_start(ap, what_fmt);
    vsnprintf(what, sizeof(what), what_fmt, ap);
    va_end(ap);
    if (swt_ci())
        fail_msg("missing under CI=%s (a skip would pass having tested nothing): %s", getenv("CI"),
                 what);
    print_message("missing: %s; skipped (under CI=true this fails)\n", what);
    skip();
}

int swt_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = -1;
    if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
        !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

bool swt_port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

/* One run of `run` with the kth allocation failing (0 = none); *used gets its allocations. */
static int torture_once(int (*run)(void *arg), void *arg, long k, long *used)
{
    sw_alloc_fail_at(0);
    long before = sw_alloc_count();
    sw_alloc_fail_at(k);
    int rc = run(arg);
    *used = sw_alloc_count() - before;
    sw_alloc_fail_at(0);
    return rc;
}

long swt_torture(const char *name, int (*run)(void *arg), void *arg, int want)
{
    long n = 0, used = 0;
    int rc = torture_once(run, arg, 0, &n);
    if (rc)
        fail_msg("%s: the run with no failure injected returned %s", name, sw_strerror(rc));
    if (n < 1)
        fail_msg("%s: allocates nothing, so there is nothing to torture", name);
    for (long k = 1; k <= n; k++) {
        rc = torture_once(run, arg, k, &used);
        if (used < k)
            fail_msg("%s: failing allocation %ld of %ld was never reached (%ld made)", name, k, n,
                     used);
        if (rc != want)
            fail_msg("%s: allocation %ld of %ld failed and the run returned %s, want %s", name, k,
                     n, rc ? sw_strerror(rc) : "0 (success)", sw_strerror(want));
    }
    rc = torture_once(run, arg, n + 1, &used);
    if (rc || used != n)
        fail_msg("%s: after the torture a clean run returned %d with %ld allocations (first: %ld)",
                 name, rc, used, n);
    return n;
}

static const char *envdir(const char *var, const char *fallback)
{
    const char *v = getenv(var);
    return v && *v ? v : fallback;
}

const char *swt_src(const char *rel)
{
    char *b = next_buf();
    snprintf(b, 4096, "%s/%s", envdir("SW_SOURCE_DIR", SW_SOURCE_DIR), rel);
    return b;
}

struct sw_fleet *swt_fleet(const char *rel)
{
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    struct sw_err e;
    if (sw_fleet_load(swt_src(rel), &fo, &f, &e))
        fail_msg("%s: %s", rel, e.msg);
    return f;
}

struct sockaddr_in swt_loopback(int port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

struct sw_fleet *swt_fleet_text(const char *name, const char *text)
{
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    struct sw_err e;
    sw_err_clear(&e);
    if (sw_fleet_load_mem(name, text, strlen(text), &fo, &f, &e))
        fail_msg("%s: %s", name, e.msg);
    return f;
}

static struct sw_fleet *operator_fleet;

int swt_operator_setup(void **state)
{
    (void)state;
    sw_core_init();
    operator_fleet = swt_fleet("examples/operator.yaml");
    return 0;
}

int swt_operator_teardown(void **state)
{
    (void)state;
    sw_fleet_free(operator_fleet);
    operator_fleet = NULL;
    return 0;
}

struct sw_fleet *swt_operator(void)
{
    assert_non_null(operator_fleet);
    return operator_fleet;
}

struct sw_gguf *swt_gguf_open(const char *path)
{
    struct sw_gguf *g = NULL;
    struct sw_err e;
    char buf[2048];
    if (sw_gguf_open(path, &g, &e))
        fail_msg("%s", sw_err_format(&e, buf, sizeof(buf)));
    return g;
}

uint64_t swt_gguf_u64(const struct sw_gguf *g, const char *suffix)
{
    uint64_t v = 0;
    if (sw_gguf_arch_u64(g, suffix, &v))
        fail_msg("the GGUF has no %s", suffix);
    return v;
}

void swt_plan(const struct sw_fleet *f, const char *name, struct sw_plan *p)
{
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    struct sw_err e;
    if (!ep)
        fail_msg("no endpoint %s", name);
    if (sw_plan_endpoint(f, ep, NULL, p, &e))
        fail_msg("plan %s: %s", name, e.msg);
}

void swt_sglang_law(struct sw_fleet *f, const char *name, struct sw_sglang_opts *o,
                    struct sw_hf_config *c)
{
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(f, name);
    struct sw_plan p;
    struct sw_err e;
    swt_plan(f, name, &p);
    assert_non_null(p.sglang_opts);
    *o = *p.sglang_opts;
    sw_plan_free(&p);
    if (sw_endpoint_hf_config(ep, c, NULL, 0, &e))
        fail_msg("%s: %s", name, e.msg);
}

char *swt_operator_local(const char *root)
{
    char path[4200], to[4400];
    snprintf(path, sizeof(path), "%s/models", root);
    if (mkdir(path, 0755) && errno != EEXIST)
        fail_msg("mkdir %s: %s", path, strerror(errno));
    snprintf(path, sizeof(path), "%s/models/primary", root);
    if (mkdir(path, 0755) && errno != EEXIST)
        fail_msg("mkdir %s: %s", path, strerror(errno));
    swt_copy(swt_src("tests/data/vllm/models/frank-primary-inferred/config.json"),
             swt_join(path, "config.json"));
    char *op = swt_slurp(swt_src("examples/operator.yaml"));
    snprintf(to, sizeof(to), "      path: %s\n", path);
    char *a =
        swt_replace1(op, "      path: /home/dank/models/Qwen3.8-Flash-Next-Uncensored-FP8\n", to);
    snprintf(to, sizeof(to), "        - {host: %s/models, container: /models, readonly: true}",
             root);
    char *b = swt_replace1(
        a, "        - {host: /home/dank/models, container: /models, readonly: true}", to);
    free(op);
    free(a);
    return b;
}

char *swt_slurp(const char *path)
{
    char *t = NULL;
    size_t n = 0;
    struct sw_err e;
    if (sw_read_file(path, 64u << 20, &t, &n, &e))
        fail_msg("%s: %s", path, e.msg);
    return t;
}

void swt_copy(const char *from, const char *to)
{
    char *t = NULL;
    size_t n = 0;
    struct sw_err e;
    if (sw_read_file(from, 64u << 20, &t, &n, &e))
        fail_msg("%s: %s", from, e.msg);
    swt_write(to, t, n);
    sw_free(t);
}

char *swt_replace1(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("'%s' is not in the text", from);
    size_t n = strlen(text) + strlen(to) + 1;
    char *o = malloc(n);
    assert_non_null(o);
    snprintf(o, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return o;
}

void swt_has_all(const char *what, const char *text, ...)
{
    va_list ap;
    va_start(ap, text);
    for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
        if (!strstr(text, n))
            fail_msg("%s does not say '%s':\n%s", what, n, text);
    va_end(ap);
}

void swt_out_has(struct swt_run *r, int want, ...)
{
    if (r->status != want)
        fail_msg("exited %d (wanted %d):\n%.3000s\n%.2000s", r->status, want, r->out, r->err);
    va_list ap;
    va_start(ap, want);
    for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
        if (!strstr(r->out, n))
            fail_msg("stdout does not say '%s':\n%.3000s\nstderr: %.2000s", n, r->out, r->err);
    va_end(ap);
    swt_run_free(r);
}

void swt_noise(void *buf, size_t n, unsigned seed)
{
    unsigned char *b = buf;
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

const char *swt_shared(const char *rel)
{
    char *b = next_buf();
    snprintf(b, 4096, "%s/%s", envdir("SW_SHARED_DIR", SW_SOURCE_DIR "/../shared"), rel);
    return b;
}

const char *swt_build(const char *rel)
{
    char *b = next_buf();
    snprintf(b, 4096, "%s/%s", envdir("SW_BUILD_DIR", SW_BUILD_DIR), rel);
    return b;
}

const char *swt_bin(void)
{
    return envdir("SW_BIN", SW_BUILD_DIR "/slipway");
}

char *swt_tmpdir(void)
{
    char tmpl[] = "/tmp/swtest.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void swt_tmpdir_free(char *dir)
{
    if (!dir)
        return;
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

const char *swt_join(const char *dir, const char *name)
{
    char *b = next_buf();
    snprintf(b, 4096, "%s/%s", dir, name);
    return b;
}

void swt_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len)
        assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void swt_write_str(const char *path, const char *s)
{
    swt_write(path, s, strlen(s));
}

static int drain(int fd, char **buf, size_t *len, size_t *cap)
{
    char tmp[65536];
    ssize_t n = read(fd, tmp, sizeof(tmp));
    if (n <= 0)
        return n == 0 || errno != EINTR ? -1 : 0;
    if (*len + (size_t)n + 1 > *cap) {
        size_t nc = (*cap ? *cap * 2 : 65536);
        while (nc < *len + (size_t)n + 1)
            nc *= 2;
        if (nc > 64u << 20)
            return 0; /* keep reading, drop the excess */
        *buf = realloc(*buf, nc);
        *cap = nc;
    }
    memcpy(*buf + *len, tmp, (size_t)n);
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return 0;
}

int swt_run(const char *const *argv, const char *stdin_text, unsigned timeout_s, struct swt_run *r)
{
    int in[2], out[2], err[2];
    memset(r, 0, sizeof(*r));
    if (pipe(in) || pipe(out) || pipe(err))
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        if (strchr(argv[0], '/'))
            execv(argv[0], (char *const *)argv);
        else
            execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (stdin_text) {
        signal(SIGPIPE, SIG_IGN);
        size_t left = strlen(stdin_text);
        const char *p = stdin_text;
        while (left) {
            ssize_t w = write(in[1], p, left);
            if (w <= 0)
                break;
            p += w;
            left -= (size_t)w;
        }
    }
    close(in[1]);
    size_t olen = 0, ocap = 0, elen = 0, ecap = 0;
    bool oopen = true, eopen = true;
    double deadline = sw_now_s() + (timeout_s ? timeout_s : 600);
    bool killed = false;
    while (oopen || eopen) {
        struct pollfd pf[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        int n = poll(pf, 2, 200);
        if (n < 0 && errno != EINTR)
            break;
        if (oopen && (pf[0].revents & (POLLIN | POLLHUP)))
            oopen = drain(out[0], &r->out, &olen, &ocap) == 0;
        if (eopen && (pf[1].revents & (POLLIN | POLLHUP)))
            eopen = drain(err[0], &r->err, &elen, &ecap) == 0;
        if (!killed && sw_now_s() > deadline) {
            kill(pid, SIGKILL);
            killed = true;
        }
    }
    close(out[0]);
    close(err[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (!r->out)
        r->out = strdup("");
    if (!r->err)
        r->err = strdup("");
    return 0;
}

size_t swt_argv_va(const char **argv, size_t n, size_t max, va_list ap)
{
    for (const char *a = va_arg(ap, const char *); a && n + 1 < max; a = va_arg(ap, const char *))
        argv[n++] = a;
    argv[n] = NULL;
    return n;
}

int swt_slipway(struct swt_run *r, ...)
{
    const char *argv[128] = {swt_bin()};
    va_list ap;
    va_start(ap, r);
    swt_argv_va(argv, 1, 128, ap);
    va_end(ap);
    return swt_run(argv, NULL, 600, r);
}

void swt_slipway_exits(int want, ...)
{
    const char *argv[128] = {swt_bin()};
    va_list ap;
    va_start(ap, want);
    swt_argv_va(argv, 1, 128, ap);
    va_end(ap);
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, 600, &r), 0);
    if (r.status != want)
        fail_msg("slipway %s %s exited %d (wanted %d):\n%.3000s\n%.2000s", argv[1],
                 argv[1] && argv[2] ? argv[2] : "", r.status, want, r.out, r.err);
    swt_run_free(&r);
}

void swt_run_free(struct swt_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

json_t *swt_json_out(const struct swt_run *r)
{
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    if (!j)
        fail_msg("stdout is not JSON (%s): %.400s\nstderr: %.400s", je.text, r->out, r->err);
    return j;
}

const json_t *swt_json_find(const json_t *arr, const char *key, const char *value)
{
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e)
    {
        const char *v = json_string_value(json_object_get(e, key));
        if (v && !strcmp(v, value))
            return e;
    }
    fail_msg("no element with %s \"%s\"", key, value);
    return NULL;
}

int swt_wait_exit(pid_t pid, unsigned timeout_s)
{
    int st = 0;
    for (unsigned i = 0; i < timeout_s * 100; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        sw_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    fail_msg("pid %d did not exit within %u s", (int)pid, timeout_s);
    return -1;
}

void swt_run_bounded(const char *const *argv, unsigned bound_s, struct swt_run *r)
{
    assert_int_equal(swt_run(argv, NULL, bound_s, r), 0);
    if (r->status == 128 + 9)
        fail_msg("%s %s ... did not finish within %u s (blocked)\nstderr: %.2000s", argv[0],
                 argv[1] ? argv[1] : "", bound_s, r->err);
}

int swt_tmpdir_setup(void **state, char **dir)
{
    char *d = swt_tmpdir();
    unsetenv("SLIPWAY_LEDGER");
    *state = d;
    if (dir)
        *dir = d;
    return 0;
}

int swt_tmpdir_teardown(void **state)
{
    swt_tmpdir_free(*state);
    *state = NULL;
    return 0;
}

void swt_slipway_kill_at(const char *needle, int anywhere, ...)
{
    const char *argv[64] = {swt_bin()};
    va_list ap;
    va_start(ap, anywhere);
    swt_argv_va(argv, 1, 64, ap);
    va_end(ap);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    assert_non_null(in);
    char line[2048];
    bool stopped = false;
    while (fgets(line, sizeof(line), in)) {
        if (anywhere ? strstr(line, needle) != NULL : !strncmp(line, needle, strlen(needle))) {
            print_message("killing slipway %s at: %s", argv[1], line);
            stopped = true;
            kill(pid, SIGKILL);
            break;
        }
    }
    fclose(in);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (!stopped)
        fail_msg("slipway %s never printed '%s'", argv[1], needle);
    assert_true(WIFSIGNALED(ws));
}

int swt_spawn_announced(const char *what, const char *const *argv, const char *out, const char *log,
                        pid_t *pid)
{
    *pid = swt_spawn(argv, out, log, NULL);
    assert_true(*pid > 0);
    bool exited = false;
    int port = swt_announced_port(out, *pid, 30000, &exited);
    if (exited || port <= 0) {
        if (exited)
            *pid = 0;
        char *t = NULL;
        size_t n = 0;
        struct sw_err e;
        sw_read_file(log, 64u << 20, &t, &n, &e);
        fail_msg("%s %s without serving (log %s): %s", what,
                 exited ? "exited" : "announced no port", log,
                 t ? (n > 3000 ? t + n - 3000 : t) : "");
    }
    return port;
}

int swt_survivors(const char *mark, bool print, pid_t *one)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || pid == getpid())
            continue;
        struct sw_proc_id id;
        if (sw_proc_identify((pid_t)pid, &id, NULL) || id.state == 'Z' || id.state == 'X')
            continue;
        char cmd[8192];
        if (sw_proc_cmdline((pid_t)pid, cmd, sizeof(cmd)) || !strstr(cmd, mark))
            continue;
        if (print)
            fprintf(stderr, "  survivor: pid %ld state %c: %.200s\n", pid, id.state, cmd);
        if (one)
            *one = (pid_t)pid;
        n++;
    }
    closedir(d);
    return n;
}

bool swt_file_is(const char *path, const void *data, size_t n)
{
    char *d = NULL;
    size_t len = 0;
    if (sw_read_file(path, 64u << 20, &d, &len, NULL))
        return false;
    bool ok = len == n && memcmp(d, data, n) == 0;
    sw_free(d);
    return ok;
}

bool swt_file_has(const char *path, const char *needle)
{
    char *t = NULL;
    size_t n;
    if (sw_read_file(path, 64u << 20, &t, &n, NULL))
        return false;
    bool yes = strstr(t, needle) != NULL;
    sw_free(t);
    return yes;
}

pid_t swt_spawn(const char *const *argv, const char *out_path, const char *err_path,
                const char *const *env)
{
    /* emptied here, before the child runs: a caller polling out_path for what the child prints
     * (swt_announced_port) never reads what an earlier child left there */
    int t = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (t >= 0)
        close(t);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int l = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || l < 0)
            _exit(127);
        dup2(o, 1);
        dup2(l, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid > 0)
        setpgid(pid, pid); /* also from the parent, so kill(-pid) works at once */
    return pid;
}

int swt_announced_port(const char *out_path, pid_t pid, unsigned timeout_ms, bool *exited)
{
    if (exited)
        *exited = false;
    for (unsigned waited = 0;; waited += 100) {
        FILE *fp = fopen(out_path, "r");
        int port = 0;
        if (fp && fscanf(fp, "%d", &port) != 1)
            port = 0;
        if (fp)
            fclose(fp);
        if (port > 0)
            return port;
        int st;
        if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
            if (exited)
                *exited = true;
            return 0;
        }
        if (waited >= timeout_ms)
            return 0;
        usleep(100000);
    }
}

int swt_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *de = readdir(d); de; de = readdir(d))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

json_t *swt_run_json(const char *const *argv, unsigned timeout_s, int *status)
{
    struct swt_run r;
    assert_int_equal(swt_run(argv, NULL, timeout_s, &r), 0);
    *status = r.status;
    if (r.err && r.err[0])
        print_message("stderr: %s\n", r.err);
    json_t *j = swt_json_out(&r);
    swt_run_free(&r);
    return j;
}

json_t *swt_slipway_json(struct swt_run *r, int want, ...)
{
    const char *argv[32] = {swt_bin()};
    va_list ap;
    va_start(ap, want);
    swt_argv_va(argv, 1, 32, ap);
    va_end(ap);
    assert_int_equal(swt_run(argv, NULL, 300, r), 0);
    if (r->status != want)
        fail_msg("slipway %s %s exited %d (wanted %d):\n%.3000s\n%.2000s", argv[1], argv[2],
                 r->status, want, r->out, r->err);
    return swt_json_out(r);
}
