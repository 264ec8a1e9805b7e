/*
 * bench_serve_deploy: an open-loop stream of requests through `slipway serve` across a deploy of
 * the model's endpoint (`slipway deploy d --via-serve`), on both of serve's paths:
 *
 *   1. blue/green: the old and the new shape fit on the device together (8 + 9 GiB of a
 *      simulated 24 GiB device): the new boots beside the old, the route switches, the old
 *      drains and stops. Target (issue 32): 0 failed requests.
 *   2. stop-start: they do not (14 + 13 GiB): the old drains and stops, the new boots, and the
 *      requests that arrive meanwhile wait in serve's queue. Figures: 0 failed, and the queued
 *      wait p50/p99/max (serve's own measure, and the client's: scheduled send to first byte).
 *
 * The engine is slipway's simulator standing in for llama-server (`sim --engine llama.cpp`, a
 * load time of LOAD seconds, so a boot takes what a small model's does); the endpoint is started
 * by serve through `up`. Requests are sent on a fixed schedule (RATE a second, each on its own
 * connection, whatever the earlier ones do: open loop), streamed chat completions of 16 tokens;
 * a request is ok when its answer is a 200 ending in `data: [DONE]`. The deploy starts a third
 * of the way into the run.
 *
 * Usage: bench_serve_deploy [rate 50] [seconds 9] [load 2]
 */
#include "swllama.h"
#include "swtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REQ 20000

static char *g_dir;
static char g_model[4096];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *path_in(const char *name)
{
    static char out[4][4300];
    static int i;
    i = (i + 1) % 4;
    snprintf(out[i], sizeof(out[i]), "%s/%s", g_dir, name);
    return out[i];
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_serve_deploy: cannot write %s\n", path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* The fleet: endpoint d, the sim as llama-server on g0 (24 GiB), on port, its measured non-KV
 * cost nonkv and ctx_size ctx. */
static void write_fleet(int port, const char *nonkv, int ctx)
{
    char text[8192];
    snprintf(text, sizeof(text),
             "version: 1\nhosts:\n  box:\n    transport: local\n    devices:\n"
             "      g0: {kind: gpu, vendor: nvidia, memory_total: 24GiB}\nendpoints:\n"
             "  d:\n    host: box\n    devices: [g0]\n    engine: llama.cpp\n"
             "    binary: %s\n    listen: 127.0.0.1:%d\n    alias: d-model\n"
             "    payload: {path: %s, quantization: f32}\n"
             "    shape: {ctx_size: %d, seqs: 2, n_gpu_layers: all}\n    measured:\n"
             "      non_kv_cost: {value: %s, device: g0, source: bench_serve_deploy}\n",
             path_in("llama-sim"), port, g_model, ctx, nonkv);
    write_file(path_in("fleet.yaml"), text);
}

static pid_t spawn(const char *const *argv, const char *out, const char *const *env)
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void stop_pid(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        usleep(50000);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---------------------------------------------------------------------------------------------
 * The open-loop client.
 */
struct req {
    int fd;
    double t_sched, t_first, t_done;
    bool ok, done;
    char head[16];
    size_t got;
    char tail[64]; /* the answer's last bytes: [DONE] */
};

static struct req g_req[MAX_REQ];
static char g_wire[1024];
static int g_wire_len;

static int open_conn(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static void req_end(int ep, struct req *r, bool ok)
{
    if (r->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, r->fd, NULL);
        close(r->fd);
    }
    r->fd = -1;
    r->done = true;
    r->t_done = now_s();
    r->ok = ok && !strncmp(r->head, "HTTP/1.1 200", 12) && strstr(r->tail, "[DONE]");
}

static void on_io(int ep, struct req *r, uint32_t ev)
{
    if (ev & EPOLLOUT) {
        ssize_t w = write(r->fd, g_wire, (size_t)g_wire_len); /* small: one write */
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = r};
        if (w != g_wire_len) {
            req_end(ep, r, false);
            return;
        }
        epoll_ctl(ep, EPOLL_CTL_MOD, r->fd, &e);
        return;
    }
    char buf[16384];
    for (;;) {
        ssize_t n = read(r->fd, buf, sizeof(buf));
        if (n > 0) {
            if (!r->got)
                r->t_first = now_s();
            for (ssize_t i = 0; i < n; i++) {
                if (r->got + (size_t)i < sizeof(r->head) - 1)
                    r->head[r->got + (size_t)i] = buf[i];
            }
            r->got += (size_t)n;
            char tmp[128]; /* the last bytes so far: [DONE] and the chunked end follow it */
            size_t ol = strlen(r->tail), k = (size_t)n < 63 ? (size_t)n : 63;
            memcpy(tmp, r->tail, ol);
            memcpy(tmp + ol, buf + n - (ssize_t)k, k);
            size_t tl = ol + k, st = tl > 63 ? tl - 63 : 0;
            memcpy(r->tail, tmp + st, tl - st);
            r->tail[tl - st] = 0;
            continue;
        }
        if (n == 0)
            req_end(ep, r, true);
        else if (errno != EAGAIN)
            req_end(ep, r, false);
        return;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---------------------------------------------------------------------------------------------
 * One path: serve, d running, the open-loop stream, the deploy a third of the way in.
 */
static int run_path(const char *label, const char *old_nonkv, const char *new_nonkv, double rate,
                    double secs)
{
    int port = swt_free_port();
    write_fleet(port, old_nonkv, 1024);
    write_file(path_in("clients.env"), "admin=sk-admin-bench-0123\nclient=sk-client-bench-0123\n");
    char run_env[4400];
    snprintf(run_env, sizeof(run_env), "SLIPWAY_RUN_DIR=%s", path_in("run"));
    mkdir(path_in("run"), 0700);
    const char *env[] = {run_env, NULL};
    unlink(path_in("serve.port"));
    const char *sargv[] = {swt_bin(),
                           "serve",
                           "--fleet",
                           path_in("fleet.yaml"),
                           "--listen",
                           "127.0.0.1:0",
                           "--ready-file",
                           path_in("serve.port"),
                           "--keys",
                           path_in("clients.env"),
                           "--queue",
                           "100000",
                           "--grace",
                           "2s",
                           NULL};
    char slog[4400];
    snprintf(slog, sizeof(slog), "%s/serve-%s.log", g_dir, label);
    pid_t serve = spawn(sargv, slog, env);
    int sport = 0;
    for (int i = 0; i < 600 && sport <= 0; i++) {
        FILE *f = fopen(path_in("serve.port"), "r");
        if (f) {
            if (fscanf(f, "%d", &sport) != 1)
                sport = 0;
            fclose(f);
        }
        if (sport <= 0)
            usleep(50000);
    }
    if (sport <= 0) {
        fprintf(stderr, "bench_serve_deploy: serve did not listen (%s)\n", slog);
        stop_pid(serve);
        return 1;
    }
    char body[512];
    int bl = snprintf(body, sizeof(body),
                      "{\"model\": \"d-model\", \"messages\": [{\"role\": \"user\", \"content\": "
                      "\"hello\"}], \"max_tokens\": 16, \"stream\": true}");
    g_wire_len = snprintf(g_wire, sizeof(g_wire),
                          "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                          "Authorization: Bearer sk-client-bench-0123\r\nContent-Type: "
                          "application/json\r\nContent-Length: %d\r\n\r\n%s",
                          bl, body);
    int ep = epoll_create1(0);
    /* the first request starts d (serve's `up`); the stream begins once it answered */
    int n = (int)(rate * secs);
    if (n > MAX_REQ)
        n = MAX_REQ;
    memset(g_req, 0, sizeof(g_req));
    for (int i = 0; i < n; i++)
        g_req[i].fd = -1;
    struct req warm = {.fd = open_conn(sport)};
    struct epoll_event e0 = {.events = EPOLLOUT, .data.ptr = &warm};
    epoll_ctl(ep, EPOLL_CTL_ADD, warm.fd, &e0);
    double wend = now_s() + 120;
    while (!warm.done && now_s() < wend) {
        struct epoll_event evs[8];
        int k = epoll_wait(ep, evs, 8, 100);
        for (int i = 0; i < k; i++)
            on_io(ep, evs[i].data.ptr, evs[i].events);
    }
    if (!warm.ok) {
        fprintf(stderr, "bench_serve_deploy: the first request failed (%s)\n", slog);
        stop_pid(serve);
        return 1;
    }
    char url[64], dout[4400], key[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", sport);
    snprintf(dout, sizeof(dout), "%s/deploy-%s.json", g_dir, label);
    snprintf(key, sizeof(key), "SLIPWAY_SERVE_KEY=sk-admin-bench-0123");
    const char *dargv[] = {swt_bin(),     "deploy", "d",      "--fleet", path_in("fleet.yaml"),
                           "--via-serve", url,      "--json", NULL};
    const char *denv[] = {run_env, key, NULL};
    pid_t deploy = 0;
    double t0 = now_s(), t_deploy = 0, t_deployed = 0;
    int sent = 0, live = 0;
    while (sent < n || live > 0 || (deploy > 0 && !t_deployed)) {
        double t = now_s() - t0;
        while (sent < n && t >= sent / rate) {
            struct req *r = &g_req[sent];
            r->t_sched = t0 + sent / rate;
            r->fd = open_conn(sport);
            struct epoll_event e = {.events = EPOLLOUT, .data.ptr = r};
            if (r->fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, r->fd, &e))
                req_end(ep, r, false);
            else
                live++;
            sent++;
        }
        if (!deploy && t >= secs / 3) {
            write_fleet(port, new_nonkv, 2048);
            t_deploy = now_s();
            deploy = spawn(dargv, dout, denv);
        }
        if (deploy > 0 && !t_deployed && waitpid(deploy, NULL, WNOHANG) == deploy)
            t_deployed = now_s();
        if (t > secs + 180) /* a bound on the stragglers */
            break;
        struct epoll_event evs[256];
        int k = epoll_wait(ep, evs, 256, 2);
        for (int i = 0; i < k; i++) {
            struct req *r = evs[i].data.ptr;
            on_io(ep, r, evs[i].events);
            if (r->done && r != &warm)
                live--;
        }
    }
    close(ep);
    /* the figures */
    int failed = 0, in_window = 0;
    static double lat[MAX_REQ];
    int nl = 0;
    for (int i = 0; i < n; i++) {
        struct req *r = &g_req[i];
        failed += !r->ok;
        if (r->t_sched >= t_deploy && r->t_sched <= t_deployed) {
            in_window++;
            if (r->ok)
                lat[nl++] = r->t_first - r->t_sched;
        }
    }
    qsort(lat, (size_t)nl, sizeof(double), cmp_double);
    json_error_t je;
    json_t *d = json_load_file(dout, 0, &je);
    const json_t *q = json_object_get(d, "queued");
    printf("%s: %d requests at %.0f/s over %.1f s; deploy %s in %.2f s (serve: %s)\n", label, n,
           rate, secs, json_is_true(json_object_get(d, "ok")) ? "ok" : "FAILED",
           t_deployed - t_deploy, json_string_value(json_object_get(d, "path")));
    printf("  failed requests: %d (target 0)\n", failed);
    printf("  requests sent while the deploy ran: %d; the client's time to the first byte p50 "
           "%.3f s, p99 %.3f s, max %.3f s\n",
           in_window, nl ? lat[(nl - 1) / 2] : 0, nl ? lat[(int)((nl - 1) * 0.99)] : 0,
           nl ? lat[nl - 1] : 0);
    printf(
        "  serve: %lld queued, wait p50 %.3f s, p99 %.3f s, max %.3f s; switched after %.2f s; "
        "drained %.3f s; %lld answered, %lld failed during the deploy\n",
        (long long)json_integer_value(json_object_get(q, "requests")),
        json_real_value(json_object_get(q, "wait_p50_s")),
        json_real_value(json_object_get(q, "wait_p99_s")),
        json_real_value(json_object_get(q, "wait_max_s")),
        json_real_value(json_object_get(d, "switched_after_s")),
        json_real_value(json_object_get(d, "drained_s")),
        (long long)json_integer_value(json_object_get(json_object_get(d, "requests"), "answered")),
        (long long)json_integer_value(json_object_get(json_object_get(d, "requests"), "failed")));
    printf("  decision: %s\n", json_string_value(json_object_get(d, "decision")));
    int bad = !d || !json_is_true(json_object_get(d, "ok")) || failed;
    json_decref(d);
    stop_pid(serve);
    return bad;
}

int main(int argc, char **argv)
{
    double rate = argc > 1 ? atof(argv[1]) : 50;
    double secs = argc > 2 ? atof(argv[2]) : 9;
    const char *load = argc > 3 ? argv[3] : "2";
    if (rate <= 0 || secs <= 0 || rate * secs > MAX_REQ) {
        fprintf(stderr, "usage: bench_serve_deploy [rate 50] [seconds 9] [load 2] (rate x "
                        "seconds <= 20000)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char why[512];
    if (!swl_llama_dir()) {
        fprintf(stderr, "bench_serve_deploy: %s\n", swl_missing());
        return 1;
    }
    g_dir = swt_tmpdir();
    if (swl_chat_model(g_dir, g_model, sizeof(g_model), why, sizeof(why))) {
        fprintf(stderr, "bench_serve_deploy: no chat model: %s\n", why);
        return 1;
    }
    char text[8192];
    snprintf(text, sizeof(text),
             "#!/bin/sh\n# slipway's simulator standing in for llama-server\n"
             "exec %s sim --engine llama.cpp --device-memory 24GiB --load-time %ss "
             "-- llama-server \"$@\"\n",
             swt_bin(), load);
    write_file(path_in("llama-sim"), text);
    chmod(path_in("llama-sim"), 0755);
    int bad = run_path("blue-green", "8GiB", "9GiB", rate, secs);
    char run[4400];
    snprintf(run, sizeof(run), "rm -rf %s/run", g_dir);
    if (system(run))
        bad = 1;
    bad |= run_path("stop-start", "14GiB", "13GiB", rate, secs);
    if (!getenv("SW_KEEP"))
        swt_tmpdir_free(g_dir);
    else
        printf("kept %s\n", g_dir);
    return bad;
}
