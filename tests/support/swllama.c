/*
 * llama-server start/stop/talk helpers for real-tier tests (see swllama.h). Plain POSIX sockets
 * and processes; no libcurl so the helper has nothing to initialize.
 */
#include "swllama.h"
#include "swtest.h"

#include <jansson.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SW_SOURCE_DIR
#define SW_SOURCE_DIR "."
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static char llama_dir[4096];
static int llama_state; /* 0 unknown, 1 built, -1 not built */

static char missing[8600];

const char *swl_missing(void)
{
    swl_llama_dir();
    return missing;
}

const char *swl_llama_dir(void)
{
    if (llama_state)
        return llama_state > 0 ? llama_dir : NULL;
    llama_state = -1;
    const char *env = getenv("SW_LLAMA_DIR");
    if (env && *env) {
        snprintf(llama_dir, sizeof(llama_dir), "%s", env);
    } else {
        const char *src = getenv("SW_SOURCE_DIR");
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "'%s/scripts/llama-build.sh' --print-dir 2>/dev/null",
                 src && *src ? src : SW_SOURCE_DIR);
        FILE *p = popen(cmd, "r");
        if (!p) {
            snprintf(missing, sizeof(missing), "llama-server: cannot run %s", cmd);
            return NULL;
        }
        if (!fgets(llama_dir, sizeof(llama_dir), p))
            llama_dir[0] = '\0';
        int st = pclose(p);
        llama_dir[strcspn(llama_dir, "\n")] = '\0';
        if (st != 0 || !llama_dir[0]) {
            snprintf(missing, sizeof(missing),
                     "llama-server: the pinned llama.cpp is not built (scripts/llama-build.sh "
                     "--print-dir found no cache; run scripts/llama-build.sh or set SW_LLAMA_DIR)");
            fprintf(stderr, "swllama: %s\n", missing);
            return NULL;
        }
    }
    char bin[4200];
    snprintf(bin, sizeof(bin), "%s/bin/llama-server", llama_dir);
    if (access(bin, X_OK)) {
        snprintf(missing, sizeof(missing), "llama-server: %s is not an executable (%s%s)", bin,
                 env && *env ? "SW_LLAMA_DIR=" : "cache ", llama_dir);
        fprintf(stderr, "swllama: %s\n", missing);
        return NULL;
    }
    llama_state = 1;
    return llama_dir;
}

int swl_chat_model(const char *dir, char *out, size_t n, char *why, size_t why_n)
{
    char scratch[8];
    struct swt_run r;
    char in[4200];
    if (!why) {
        why = scratch;
        why_n = sizeof(scratch);
    }
    const char *env = getenv("SW_NET_LLAMA_MODEL");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return 0;
    }
    const char *archs[] = {swl_bin("test-llama-archs"), "-a", "llama", "-s", "7", "-o", dir, NULL};
    if (!archs[0]) {
        snprintf(why, why_n, "%s", swl_missing());
        return -1;
    }
    if (swt_run(archs, NULL, 120, &r) || r.status) {
        snprintf(why, why_n, "test-llama-archs -a llama failed (%d): %.300s", r.status,
                 r.err ? r.err : "");
        swt_run_free(&r);
        return -1;
    }
    swt_run_free(&r);
    snprintf(in, sizeof(in), "%s/llama-dense.gguf", dir);
    snprintf(out, n, "%s/chat.gguf", dir);
    swt_slipway(&r, "gguf", "synth", "--in", in, "--vocab",
                swl_model_file("ggml-vocab-llama-spm.gguf"), "--out", out, "--seed", "7", NULL);
    int st = r.status;
    if (st)
        snprintf(why, why_n, "`slipway gguf synth` failed (exit %d): %.300s", st,
                 r.err ? r.err : "");
    swt_run_free(&r);
    return st ? -1 : 0;
}

int swl_chat_dir(char **dir, char *model, size_t n, char *why, size_t why_n)
{
    *dir = NULL;
    snprintf(why, why_n, "%s", swl_missing());
    if (!swl_llama_dir())
        return -1;
    *dir = swt_tmpdir();
    if (swl_chat_model(*dir, model, n, why, why_n)) {
        swt_tmpdir_free(*dir);
        *dir = NULL;
        return -1;
    }
    return 0;
}

static char rot[8][4300];
static int rot_i;

const char *swl_bin(const char *name)
{
    if (!swl_llama_dir())
        return NULL;
    char *b = rot[rot_i++ % 8];
    snprintf(b, sizeof(rot[0]), "%s/bin/%s", llama_dir, name);
    return b;
}

const char *swl_model_file(const char *name)
{
    if (!swl_llama_dir())
        return NULL;
    char *b = rot[rot_i++ % 8];
    snprintf(b, sizeof(rot[0]), "%s/src/models/%s", llama_dir, name);
    return b;
}

char *swl_tail(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("(no log)");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)n ? size - (long)n : 0;
    fseek(f, from, SEEK_SET);
    char *b = malloc(n + 1);
    size_t k = b ? fread(b, 1, n, f) : 0;
    fclose(f);
    if (!b)
        return NULL;
    b[k] = '\0';
    return b;
}

/* ---- HTTP over a plain socket ---- */

static int connect_local(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n, double deadline)
{
    while (n) {
        struct pollfd pf = {fd, POLLOUT, 0};
        int ms = (int)((deadline - now_s()) * 1000);
        if (ms <= 0 || poll(&pf, 1, ms) <= 0)
            return -1;
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Decode a chunked body in place; returns the new length. */
static size_t dechunk(char *b, size_t n)
{
    size_t in = 0, out = 0;
    while (in < n) {
        char *end;
        unsigned long len = strtoul(b + in, &end, 16);
        char *nl = strstr(b + in, "\r\n");
        if (!nl || end == b + in)
            break;
        in = (size_t)(nl - b) + 2;
        if (len == 0 || in + len > n)
            break;
        memmove(b + out, b + in, len);
        out += len;
        in += len + 2;
    }
    b[out] = '\0';
    return out;
}

int swl_http(int port, const char *method, const char *path, const char *json_body,
             unsigned timeout_s, int *status, char **body)
{
    double deadline = now_s() + timeout_s;
    *status = 0;
    if (body)
        *body = NULL;
    int fd = connect_local(port);
    if (fd < 0)
        return -1;
    size_t blen = json_body ? strlen(json_body) : 0;
    char head[1024];
    int hn = snprintf(head, sizeof(head),
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, port, blen);
    if (send_all(fd, head, (size_t)hn, deadline) ||
        send_all(fd, json_body ? json_body : "", blen, deadline)) {
        close(fd);
        return -1;
    }
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    int rc = -1;
    while (buf) {
        if (n + 4096 > cap) {
            if (cap > (64u << 20))
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int ms = (int)((deadline - now_s()) * 1000);
        if (ms <= 0 || poll(&pf, 1, ms) <= 0)
            break;
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0) {
            rc = r == 0 ? 0 : -1;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (rc || !buf) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    if (sscanf(buf, "HTTP/%*s %d", status) != 1) {
        free(buf);
        return -1;
    }
    char *sep = strstr(buf, "\r\n\r\n");
    size_t off = sep ? (size_t)(sep - buf) + 4 : n;
    bool chunked = false;
    if (sep) {
        *sep = '\0'; /* headers alone, for the search */
        chunked = strcasestr(buf, "\r\ntransfer-encoding: chunked") != NULL;
    }
    memmove(buf, buf + off, n - off + 1);
    if (chunked)
        dechunk(buf, n - off);
    if (body)
        *body = buf;
    else
        free(buf);
    return 0;
}

/* One chat request; 1 = the server could not parse a random model's output as its chat format
 * (worth another try with another seed), 0 = answered, -1 = failed. */
static int chat_once(const struct swl_server *s, const char *user, int max_tokens, int seed,
                     double temperature, unsigned timeout_s, char **content)
{
    json_t *req =
        json_pack("{s:[{s:s,s:s}],s:i,s:f,s:i}", "messages", "role", "user", "content", user,
                  "max_tokens", max_tokens, "temperature", temperature, "seed", seed);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text)
        return -1;
    int status = 0;
    char *body = NULL;
    int rc = swl_http(s->port, "POST", "/v1/chat/completions", text, timeout_s, &status, &body);
    free(text);
    if (rc || status != 200) {
        bool parse = status == 500 && body && strstr(body, "does not match the expected");
        fprintf(stderr, "swllama: chat: status %d, body: %.300s%s\n", status, body ? body : "",
                parse ? " (retrying with another prompt)" : "");
        free(body);
        return parse ? 1 : -1;
    }
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    free(body);
    json_t *msg = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
    const char *c = json_string_value(json_object_get(msg, "content"));
    /* a reasoning template may put the text in reasoning_content; any text is an answer */
    if (!c)
        c = json_string_value(json_object_get(msg, "reasoning_content"));
    if (msg && !c && json_is_null(json_object_get(msg, "content")))
        c = "";
    if (c)
        *content = strdup(c);
    json_decref(j);
    return *content ? 0 : -1;
}

int swl_chat(const struct swl_server *s, const char *user, int max_tokens, unsigned timeout_s,
             char **content)
{
    /* A random-weight model emits arbitrary tokens, which llama-server's chat-format parser
     * sometimes rejects (HTTP 500 "does not match the expected ... format", e.g. a lone byte
     * token that is not UTF-8). That is the model, not the server. Greedy decoding repeats the
     * same first token whatever the prompt (the generation prompt ends the same way), so the
     * retries sample (temperature 1) with other seeds. */
    static const char *const alt[] = {NULL, "Hi", "Tell me a story.", "1 2 3", "Why?", "ok"};
    *content = NULL;
    for (int i = 0; i < 6; i++) {
        int rc = chat_once(s, alt[i] ? alt[i] : user, max_tokens, i + 1, i ? 1.0 : 0.0, timeout_s,
                           content);
        if (rc <= 0)
            return rc;
    }
    return -1;
}

/* ---- process ---- */

static bool reap(struct swl_server *s, int flags)
{
    int st;
    pid_t r = waitpid(s->pid, &st, flags);
    if (r == s->pid) {
        s->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        s->pid = 0;
        return true;
    }
    return false;
}

void swl_stop(struct swl_server *s)
{
    if (s->pid > 0) {
        kill(-s->pid, SIGTERM);
        double deadline = now_s() + 10;
        while (s->pid > 0 && now_s() < deadline) {
            if (!reap(s, WNOHANG))
                sleep_ms(10); /* a boot-heavy test stops hundreds of servers: wait in small steps */
        }
        if (s->pid > 0) {
            kill(-s->pid, SIGKILL);
            reap(s, 0);
        }
    }
    if (s->own_log && s->log[0]) {
        unlink(s->log);
        s->own_log = false;
    }
}

void swl_keep_log(struct swl_server *s)
{
    s->own_log = false;
}

/* After a 200 from /health: whether it was this server's and its log is written up to there.
 * llama-server logs "model loaded" right after it turns ready, through a logging thread of its
 * own: on a loaded machine that thread can lag the answer, and a test reading the log at the 200
 * found none of the memory lines in it (CI, three tests at a time). And a port another process
 * took between swt_free_port and this server's bind answers 200 for a server that then exits
 * ("couldn't bind"): only this server's log says "model loaded". 0 when it is there, -2 when the
 * server exited, -3 at the deadline. */
static int own_ready(struct swl_server *s, double deadline)
{
    do {
        char *tail = swl_tail(s->log, 16384);
        bool loaded = tail && strstr(tail, "model loaded");
        free(tail);
        if (loaded)
            return 0;
        if (reap(s, WNOHANG))
            return -2;
        sleep_ms(10);
    } while (now_s() < deadline);
    return -3;
}

static int start_once(const char *model, const char *const *extra, const char *log_path,
                      double deadline, struct swl_server *s)
{
    const char *bin = swl_bin("llama-server");
    if (!bin)
        return -1;
    s->port = swt_free_port();
    if (s->port < 0)
        return -1;
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    char port[16];
    snprintf(port, sizeof(port), "%d", s->port);
    const char *argv[128];
    int k = 0;
    argv[k++] = bin;
    argv[k++] = "-m";
    argv[k++] = model;
    argv[k++] = "--host";
    argv[k++] = "127.0.0.1";
    argv[k++] = "--port";
    argv[k++] = port;
    for (int i = 0; extra && extra[i] && k < 126; i++)
        argv[k++] = extra[i];
    argv[k] = NULL;

    int logfd;
    if (log_path) {
        snprintf(s->log, sizeof(s->log), "%s", log_path);
        logfd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        s->own_log = false;
    } else {
        snprintf(s->log, sizeof(s->log), "/tmp/swllama-%d-XXXXXX", s->port);
        logfd = mkstemp(s->log);
        s->own_log = true;
    }
    if (logfd < 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(logfd);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* if the test dies (a ctest timeout kills it), llama-server goes with it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid); /* also from the parent, so kill(-pid) works at once */
    close(logfd);
    s->pid = pid;
    s->exit_status = -1;
    while (now_s() < deadline) {
        if (reap(s, WNOHANG))
            return -2; /* exited while loading */
        int status = 0;
        if (!swl_http(s->port, "GET", "/health", NULL, 5, &status, NULL) && status == 200)
            return own_ready(s, deadline);
        /* small steps: a tiny model boots in a fifth of a second and a boot-heavy test starts
         * hundreds of servers (100 ms steps waited about 50 ms a boot, some 18 s over
         * test_llamacpp_law's 369); a poll before the server listens is a refused connect */
        sleep_ms(10);
    }
    return -3;
}

int swl_start(const char *model, const char *const *extra_args, const char *log_path,
              unsigned timeout_s, struct swl_server *s)
{
    memset(s, 0, sizeof(*s));
    s->exit_status = -1;
    double deadline = now_s() + timeout_s;
    for (int attempt = 0; attempt < 3; attempt++) {
        int rc = start_once(model, extra_args, log_path, deadline, s);
        if (rc == 0)
            return 0;
        char *tail = s->log[0] ? swl_tail(s->log, 3000) : NULL;
        bool busy =
            tail && (strstr(tail, "ouldn't bind") || strstr(tail, "address already in use") ||
                     strstr(tail, "Address already in use"));
        if (rc == -2 && busy && attempt < 2) {
            free(tail);
            swl_stop(s);
            continue;
        }
        fprintf(stderr, "swllama: llama-server %s for %s (exit %d); log %s ends:\n%s\n",
                rc == -2   ? "exited while loading"
                : rc == -3 ? "did not become healthy in time"
                           : "could not be started",
                model, s->exit_status, s->log, tail ? tail : "");
        free(tail);
        bool own = s->own_log;
        s->own_log = false; /* keep the log of a failed start for the caller */
        swl_stop(s);
        s->own_log = own;
        return -1;
    }
    return -1;
}
