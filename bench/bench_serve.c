/*
 * bench_serve: what `slipway serve` adds in front of an engine, in one run, against the sim's
 * firehose (a vLLM sim: no pacing, every step free, so the engine is as fast as it gets and what
 * is measured is the front door):
 *
 *   1. added TTFT: R sequential streamed completions, each on a new connection, direct to the
 *      sim and through serve, in turn; TTFT = connect to the first "data: " event (the client's
 *      CLOCK_MONOTONIC); the p50 and p99 of each and their difference;
 *   2. passthrough at S streams x T tokens, all in flight at once, direct, through serve, and
 *      through a bare relay on serve's CPU (accept, connect, move bytes: the kernel's floor for
 *      any relay on loopback), each twice: with a raw client (reads bytes, counts "data: ") and
 *      with a parsing client (de-chunks, sw_sse, sw_openai_on_event on every event: what
 *      slipway's own bench does to each event). Per run: tokens/s at the client, the client's
 *      CPU per token (getrusage) and tokens per read(2), serve's (or the relay's) CPU time
 *      (/proc/PID/stat) per token and its share of the client's, and serve's tokens per
 *      CPU-second (passthrough tokens/s per core). Tokens are counted the same way in every run
 *      (the "data: " events less the finish event and [DONE]); the parsing client's chunk count
 *      is printed beside, as a check;
 *   3. idle connections: C connections to serve, each having had one GET /health answered and
 *      kept open (keep-alive); serve's VmRSS before and after, per connection.
 * The sim is pinned to CPU 0 and serve (and the bare relay) to CPU 1; the client is not pinned
 * (this machine has two cores: what is shared is said with the figures). Targets (issue 32):
 * <= 1 ms added TTFT p99, <= 25 % added CPU per token (serve's / the client's) at 1,000 streams,
 * >= 1M tokens/s per core, <= 16 KiB per idle connection; each printed beside its figure, the
 * CPU share against both clients. BENCH_SERVE_SLIPWAY=PATH runs another build's slipway as serve
 * (an A/B in one machine state; the sim stays this build's). BENCH_SERVE_LOOPS=N runs serve with
 * --loops N (unset: serve's default, the online CPUs; an older build without the option needs it
 * unset); BENCH_SERVE_UNPINNED=1 leaves serve unpinned (its loops may use both cores).
 *
 * Usage: bench_serve [streams 1000] [tokens 1000] [requests 300] [idle 1000]
 */
#include <slipway/core.h>
#include <slipway/openai.h>
#include <slipway/sse.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_dir[] = "/tmp/bench_serve.XXXXXX";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

/* A process's CPU seconds (utime + stime) from /proc/PID/stat. */
static double proc_cpu(pid_t pid)
{
    char p[64], buf[2048];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *q = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (q)
        sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long proc_rss_kib(pid_t pid)
{
    char p[64], line[256];
    snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long kib = 0;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

static int count_fds(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(p);
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n - 2;
}

static double self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* argv on cpu, stdout to out_path (its first line: the port), stderr to /dev/null. */
static pid_t spawn(const char *const *argv, int cpu, const char *out_path)
{
    pid_t pid = fork();
    if (pid == 0) {
        pin(cpu);
        int ofd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int nul = open("/dev/null", O_WRONLY);
        dup2(ofd, 1);
        dup2(nul, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_port(const char *path)
{
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(path, "r");
        int port = 0;
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (port > 0)
            return port;
        usleep(50000);
    }
    return -1;
}

static int connect_to(int port, bool nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static int make_req(char *req, size_t n, long tokens)
{
    char body[256];
    int blen =
        snprintf(body, sizeof(body),
                 "{\"model\":\"fh\",\"prompt\":\"go\",\"max_tokens\":%ld,\"stream\":true}", tokens);
    return snprintf(req, n,
                    "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                    "application/json\r\nContent-Length: %d\r\n\r\n%s",
                    blen, body);
}

/* ---------------------------------------------------------------------------------------------
 * 1. TTFT, sequential.
 */
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double ttft_one(int port)
{
    char req[512], buf[8192];
    int rl = make_req(req, sizeof(req), 4);
    double t0 = now_s();
    int fd = connect_to(port, false);
    if (fd < 0 || write(fd, req, (size_t)rl) != rl) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    double t = -1;
    size_t have = 0;
    char acc[16384];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r <= 0)
            break;
        if (t < 0) {
            size_t k = have + (size_t)r < sizeof(acc) ? (size_t)r : sizeof(acc) - have - 1;
            memcpy(acc + have, buf, k);
            have += k;
            acc[have] = 0;
            if (memmem(acc, have, "data: ", 6))
                t = now_s() - t0;
        }
        if (memmem(buf, (size_t)r, "[DONE]", 6))
            break;
    }
    close(fd);
    return t;
}

static void ttft(int port, int n, double *p50, double *p99, int *bad)
{
    double *v = calloc((size_t)n, sizeof(double));
    int k = 0;
    for (int i = 0; i < n; i++) {
        double t = ttft_one(port);
        if (t < 0)
            (*bad)++;
        else
            v[k++] = t;
    }
    qsort(v, (size_t)k, sizeof(double), cmp_d);
    *p50 = k ? v[k / 2] : 0;
    *p99 = k ? v[(size_t)((k - 1) * 0.99)] : 0;
    free(v);
}

/* ---------------------------------------------------------------------------------------------
 * 2. Streams, all in flight at once (as bench_sim's run).
 */
/* A client that parses every event as slipway's bench does (src/bench: sw_sse, then
 * sw_openai_on_event on each event's JSON), after the HTTP head and the chunked framing. */
struct parser {
    int state; /* 0 head, 1 chunk size, 2 chunk data, 3 the CRLF after it, 4 done */
    char head_tail[4];
    size_t size;
    struct sw_sse sse;
    struct sw_openai_result res;
};

struct conn {
    int fd;
    size_t sent;
    long events;
    bool done, failed;
    char tail[8];
    size_t ntail;
    struct parser *ps; /* NULL: the raw client (counts "data: " and nothing more) */
};

static void parse_feed(struct parser *ps, const char *p, size_t n)
{
    uint64_t t = sw_now_ns();
    const char *end = p + n;
    while (p < end && ps->state != 4) {
        switch (ps->state) {
        case 0: /* the head ends at CRLF CRLF */
            memmove(ps->head_tail, ps->head_tail + 1, 3);
            ps->head_tail[3] = *p++;
            if (!memcmp(ps->head_tail, "\r\n\r\n", 4))
                ps->state = 1;
            break;
        case 1:
            if (*p == '\n')
                ps->state = ps->size ? 2 : 4;
            else if (isxdigit((unsigned char)*p))
                ps->size = ps->size * 16 + (size_t)(isdigit((unsigned char)*p)
                                                        ? *p - '0'
                                                        : (tolower((unsigned char)*p) - 'a' + 10));
            p++;
            break;
        case 2: {
            size_t k = (size_t)(end - p) < ps->size ? (size_t)(end - p) : ps->size;
            sw_sse_feed(&ps->sse, p, k, t, NULL);
            p += k;
            ps->size -= k;
            if (!ps->size)
                ps->state = 3;
            break;
        }
        case 3:
            if (*p++ == '\n')
                ps->state = 1;
            break;
        }
    }
}

static long count(const char *carry, size_t nc, const char *p, size_t n, const char *needle,
                  size_t k)
{
    long hits = 0;
    char edge[16];
    size_t m = n < k - 1 ? n : k - 1;
    memcpy(edge, carry, nc);
    memcpy(edge + nc, p, m);
    for (size_t i = 0; i + k <= nc + m; i++)
        hits += i < nc && !memcmp(edge + i, needle, k);
    for (const char *q = p; (q = memmem(q, n - (size_t)(q - p), needle, k)); q++)
        hits++;
    return hits;
}

static void feed(struct conn *c, const char *p, size_t n)
{
    if (c->ps)
        parse_feed(c->ps, p, n);
    c->events += count(c->tail, c->ntail, p, n, "data: ", 6);
    if (count(c->tail, c->ntail, p, n, "[DONE]", 6))
        c->done = true;
    size_t keep = n < 5 ? n : 5;
    if (c->ntail + keep > 5) {
        size_t drop = c->ntail + keep - 5;
        memmove(c->tail, c->tail + drop, c->ntail - drop);
        c->ntail -= drop;
    }
    memcpy(c->tail + c->ntail, p + n - keep, keep);
    c->ntail += keep;
}

/* S streams at once; the raw client, or the parsing one when `parse`. *reads: read(2)s that
 * returned bytes; *chunks: the chunks the parsing client folded (0 when raw). */
static int streams(int port, int n, long tokens, bool parse, long *events, long *reads,
                   long *chunks, double *secs)
{
    char req[512];
    int rlen = make_req(req, sizeof(req), tokens);
    struct conn *cs = calloc((size_t)n, sizeof(*cs));
    int ep = epoll_create1(EPOLL_CLOEXEC), failed = 0, open_ = 0;
    *reads = 0;
    static char buf[1 << 16];
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (parse) {
            cs[i].ps = calloc(1, sizeof(*cs[i].ps));
            if (cs[i].ps) {
                sw_sse_init(&cs[i].ps->sse, 0, 0, sw_openai_on_event, NULL, &cs[i].ps->res);
                sw_openai_result_init(&cs[i].ps->res, 0, 0);
            }
        }
        cs[i].fd = connect_to(port, true);
        if (cs[i].fd < 0) {
            cs[i].failed = true;
            failed++;
            continue;
        }
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
        open_++;
    }
    struct epoll_event evs[512];
    double deadline = t0 + 600;
    while (open_ > 0 && now_s() < deadline) {
        int k = epoll_wait(ep, evs, 512, 1000);
        for (int j = 0; j < k; j++) {
            struct conn *c = &cs[evs[j].data.u32];
            if (c->sent < (size_t)rlen && (evs[j].events & EPOLLOUT)) {
                ssize_t w = write(c->fd, req + c->sent, (size_t)rlen - c->sent);
                if (w > 0)
                    c->sent += (size_t)w;
                if (c->sent == (size_t)rlen) {
                    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = evs[j].data.u32};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (!(evs[j].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                continue;
            ssize_t r = read(c->fd, buf, sizeof(buf));
            if (r > 0) {
                (*reads)++;
                feed(c, buf, (size_t)r);
            }
            if (r == 0 || (r < 0 && errno != EAGAIN) || c->done) {
                if (!c->done) {
                    c->failed = true;
                    failed++;
                }
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                open_--;
            }
        }
    }
    *secs = now_s() - t0;
    *events = 0;
    *chunks = 0;
    for (int i = 0; i < n; i++) {
        if (cs[i].ps) {
            *chunks += (long)cs[i].ps->res.chunks;
            sw_sse_close(&cs[i].ps->sse);
            sw_openai_result_free(&cs[i].ps->res);
            free(cs[i].ps);
        }
        if (!cs[i].failed)
            *events += cs[i].events - 2; /* not the finish event nor [DONE] */
        if (cs[i].fd >= 0) {
            close(cs[i].fd);
            failed++;
        }
    }
    close(ep);
    free(cs);
    return failed;
}

/* ---------------------------------------------------------------------------------------------
 * The floor: a bare relay (accept, connect to the engine, move bytes both ways; no HTTP, no
 * framing, no events counted), pinned where serve is. What a relay on loopback costs the kernel
 * alone: serve's figure minus this one is serve's own.
 */
static void bare_relay(int lfd, int up_port)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    static int peer[1 << 16];
    static char buf[1 << 16];
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[512];
    for (;;) {
        int k = epoll_wait(ep, evs, 512, -1);
        for (int j = 0; j < k; j++) {
            int fd = evs[j].data.fd;
            if (fd == lfd) {
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                int u = c >= 0 ? connect_to(up_port, false) : -1;
                if (u < 0 || c >= (1 << 16) || u >= (1 << 16)) {
                    if (c >= 0)
                        close(c);
                    if (u >= 0)
                        close(u);
                    continue;
                }
                int one = 1;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                peer[c] = u;
                peer[u] = c;
                struct epoll_event e1 = {.events = EPOLLIN, .data.fd = c};
                struct epoll_event e2 = {.events = EPOLLIN, .data.fd = u};
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &e1);
                epoll_ctl(ep, EPOLL_CTL_ADD, u, &e2);
                continue;
            }
            ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (r < 0 && errno == EAGAIN)
                continue;
            if (r > 0 && send(peer[fd], buf, (size_t)r, MSG_NOSIGNAL) == r)
                continue;
            close(peer[fd]); /* closes drop both from the epoll set */
            close(fd);
        }
    }
}

static pid_t spawn_relay(int cpu, int up_port, int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4096) ||
        getsockname(lfd, (struct sockaddr *)&a, &al))
        return -1;
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid == 0) {
        pin(cpu);
        bare_relay(lfd, up_port);
        _exit(0);
    }
    close(lfd);
    return pid;
}

/* One leg of the passthrough: S streams to port; the client's CPU, and pid's (0: none). */
struct leg {
    long ev, rd, ck;
    double secs, cli, proc;
    int bad;
};

static void leg_run(int port, pid_t pid, int n, long tokens, bool parse, struct leg *l)
{
    double p0 = pid > 0 ? proc_cpu(pid) : 0, c0 = self_cpu();
    l->bad = streams(port, n, tokens, parse, &l->ev, &l->rd, &l->ck, &l->secs);
    l->cli = self_cpu() - c0;
    l->proc = pid > 0 ? proc_cpu(pid) - p0 : 0;
}

static double per_token(double secs, long ev)
{
    return ev ? secs * 1e9 / (double)ev : 0;
}

/* ---------------------------------------------------------------------------------------------
 * 3. Idle keep-alive connections.
 */
static int idle(int port, int n, int *fds)
{
    static const char req[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    int ok = 0;
    for (int i = 0; i < n; i++) {
        fds[i] = connect_to(port, false);
        if (fds[i] < 0 || write(fds[i], req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
            continue;
        char buf[1024];
        struct pollfd pf = {.fd = fds[i], .events = POLLIN};
        if (poll(&pf, 1, 5000) == 1 && read(fds[i], buf, sizeof(buf)) > 0)
            ok++;
    }
    return ok;
}

int main(int argc, char **argv)
{
    int n_streams = argc > 1 ? atoi(argv[1]) : 1000;
    long tokens = argc > 2 ? atol(argv[2]) : 1000;
    int n_req = argc > 3 ? atoi(argv[3]) : 300;
    int n_idle = argc > 4 ? atoi(argv[4]) : 1000;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!mkdtemp(g_dir))
        return 1;
    char cfgdir[128], path[256], simout[256], servout[256], fleet[256];
    snprintf(cfgdir, sizeof(cfgdir), "%s/model", g_dir);
    mkdir(cfgdir, 0755);
    snprintf(path, sizeof(path), "%s/config.json", cfgdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fputs("{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","
          "\"hidden_size\":4096,\"num_hidden_layers\":32,\"num_attention_heads\":32,"
          "\"num_key_value_heads\":8,\"head_dim\":128,\"intermediate_size\":14336,"
          "\"max_position_embeddings\":131072,\"vocab_size\":128256,\"torch_dtype\":\"bfloat16\"}",
          f);
    fclose(f);
    /* the engine: a vLLM firehose sim on CPU 0 */
    char seqs[32], window[32];
    snprintf(seqs, sizeof(seqs), "%d", n_streams + 16);
    snprintf(window, sizeof(window), "%ld", tokens + 64 > 4096 ? tokens + 64 : 4096);
    snprintf(simout, sizeof(simout), "%s/sim.out", g_dir);
    const char *sim_argv[] = {SW_BUILD_DIR "/slipway",
                              "sim",
                              "--firehose",
                              "--load-time",
                              "0s",
                              "--engine",
                              "vllm",
                              "--device-memory",
                              "640GiB",
                              "--weights",
                              "16GiB",
                              "--",
                              "vllm",
                              "serve",
                              cfgdir,
                              "--served-model-name",
                              "fh",
                              "--max-model-len",
                              window,
                              "--max-num-seqs",
                              seqs,
                              "--max-num-batched-tokens",
                              "65536",
                              NULL};
    pid_t sim = spawn(sim_argv, 0, simout);
    int sport = wait_port(simout);
    if (sport <= 0) {
        fprintf(stderr, "bench_serve: the sim did not start\n");
        return 1;
    }
    /* the front door: serve on CPU 1, the sim as a running endpoint */
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", g_dir);
    f = fopen(fleet, "w");
    if (!f)
        return 1;
    fprintf(f,
            "version: 1\nhosts:\n  box:\n    transport: local\n    devices:\n"
            "      g0: {kind: gpu, vendor: nvidia, memory_total: 640GiB}\n"
            "endpoints:\n  fh:\n    host: box\n    devices: [g0]\n    engine: vllm\n"
            "    listen: 127.0.0.1:%d\n    alias: fh\n    payload: {path: %s}\n"
            "    shape: {max_model_len: %s, seqs: %d}\n",
            sport, cfgdir, window, n_streams + 16);
    fclose(f);
    char ready[256];
    snprintf(ready, sizeof(ready), "%s/serve.port", g_dir);
    snprintf(servout, sizeof(servout), "%s/serve.out", g_dir);
    /* BENCH_SERVE_SLIPWAY: another build's slipway as serve (an A/B in one machine state) */
    const char *serve_bin = getenv("BENCH_SERVE_SLIPWAY");
    const char *loops = getenv("BENCH_SERVE_LOOPS");
    const char *serve_argv[] = {serve_bin && *serve_bin ? serve_bin : SW_BUILD_DIR "/slipway",
                                "serve",
                                "--fleet",
                                fleet,
                                "--listen",
                                "127.0.0.1:0",
                                "--ready-file",
                                ready,
                                loops && *loops ? "--loops" : NULL,
                                loops,
                                NULL};
    const char *unpinned = getenv("BENCH_SERVE_UNPINNED");
    bool pinned = !(unpinned && *unpinned == '1');
    pid_t srv = spawn(serve_argv, pinned ? 1 : -1, servout);
    int vport = wait_port(ready);
    if (vport <= 0) {
        fprintf(stderr, "bench_serve: serve did not start\n");
        kill(sim, SIGTERM);
        return 1;
    }
    double la[3] = {0};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
            la[0] = la[1] = la[2] = 0;
        fclose(lf);
    }
    printf("bench_serve: sim (vLLM firehose) on CPU 0 at :%d, serve %s at :%d (--loops %s); the "
           "client unpinned (2 cores: the client shares one); load average %.2f %.2f %.2f\n",
           sport, pinned ? "on CPU 1" : "unpinned", vport, loops && *loops ? loops : "default",
           la[0], la[1], la[2]);

    /* 1. TTFT */
    int bad = 0;
    double d50, d99, s50, s99;
    ttft(sport, 20, &d50, &d99, &bad); /* warm both paths */
    ttft(vport, 20, &s50, &s99, &bad);
    bad = 0;
    ttft(sport, n_req, &d50, &d99, &bad);
    ttft(vport, n_req, &s50, &s99, &bad);
    printf("TTFT, %d sequential streamed requests each (connect -> first event):\n"
           "  direct p50 %.3f ms p99 %.3f ms; through serve p50 %.3f ms p99 %.3f ms\n"
           "  added p99 %.3f ms (target <= 1 ms: %s); %d failed\n",
           n_req, d50 * 1e3, d99 * 1e3, s50 * 1e3, s99 * 1e3, (s99 - d99) * 1e3,
           s99 - d99 <= 0.001 ? "met" : "NOT met", bad);

    /* 3. idle connections (before the streams: their freed heap would hide the growth) */
    int *fds = calloc((size_t)n_idle, sizeof(int));
    long rss0 = proc_rss_kib(srv);
    int ok = idle(vport, n_idle, fds);
    usleep(200000);
    long rss1 = proc_rss_kib(srv);
    int nfd = count_fds(srv);
    double per = ok ? (double)(rss1 - rss0) * 1024.0 / ok : 0;
    printf("idle keep-alive connections: %d open (each answered one GET /health; serve holds %d "
           "descriptors); serve VmRSS %ld -> %ld KiB: %.0f B per connection (target <= 16 KiB: "
           "%s)\n",
           ok, nfd, rss0, rss1, per, per <= 16384 ? "met" : "NOT met");
    for (int i = 0; i < n_idle; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);

    /* 2. passthrough, with the raw client and with the parsing one; the bare relay on serve's
     * CPU for the floor */
    int rport = 0;
    pid_t relay = spawn_relay(1, sport, &rport);
    if (relay <= 0) {
        fprintf(stderr, "bench_serve: the bare relay did not start\n");
        return 1;
    }
    const char *kind[2] = {"raw client (reads bytes, counts \"data: \")",
                           "parsing client (each event's JSON, as slipway's bench)"};
    int bad_st = 0;
    for (int pz = 0; pz < 2; pz++) {
        struct leg d, s, r;
        leg_run(sport, 0, n_streams, tokens, pz, &d);
        leg_run(vport, srv, n_streams, tokens, pz, &s);
        leg_run(rport, relay, n_streams, tokens, pz, &r);
        double sv_ns = per_token(s.proc, s.ev), cli_ns = per_token(s.cli, s.ev);
        double rl_ns = per_token(r.proc, r.ev), clr_ns = per_token(r.cli, r.ev);
        printf("%d streams x %ld tokens, all in flight, %s:\n"
               "  direct: %ld tokens in %.2f s = %.0f tokens/s, client CPU %.0f ns/token, %.1f "
               "tokens a read, %d failed\n"
               "  through serve: %ld tokens in %.2f s = %.0f tokens/s, client CPU %.0f ns/token, "
               "%.1f tokens a read, %d failed\n",
               n_streams, tokens, kind[pz], d.ev, d.secs, (double)d.ev / d.secs,
               per_token(d.cli, d.ev), d.rd ? (double)d.ev / (double)d.rd : 0, d.bad, s.ev, s.secs,
               (double)s.ev / s.secs, cli_ns, s.rd ? (double)s.ev / (double)s.rd : 0, s.bad);
        if (pz)
            printf("  chunks parsed: %ld direct, %ld through serve (+1 a stream: the finish "
                   "chunk; [DONE] is not one)\n",
                   d.ck, s.ck);
        printf("  serve CPU %.2f s = %.0f ns/token = %.0f%% of this client's (target <= 25%%: "
               "%s)\n"
               "  passthrough per core: %.0f tokens per serve CPU-second (target >= 1M: %s)\n",
               s.proc, sv_ns, cli_ns > 0 ? 100 * sv_ns / cli_ns : 0,
               s.proc > 0 && cli_ns > 0 && sv_ns <= 0.25 * cli_ns ? "met" : "NOT met",
               s.proc > 0 ? (double)s.ev / s.proc : 0,
               s.proc > 0 && (double)s.ev / s.proc >= 1e6 ? "met" : "NOT met");
        printf("  the floor, a bare relay (no HTTP) where serve runs: %ld tokens in %.2f s, relay "
               "CPU %.0f ns/token = %.0f%% of this client's (%.0f ns/token, %.1f tokens a read), "
               "%d failed; serve above it: %.0f ns/token\n",
               r.ev, r.secs, rl_ns, clr_ns > 0 ? 100 * rl_ns / clr_ns : 0, clr_ns,
               r.rd ? (double)r.ev / (double)r.rd : 0, r.bad, sv_ns - rl_ns);
        bad_st += d.bad + s.bad + r.bad;
    }

    int st;
    kill(relay, SIGKILL);
    waitpid(relay, &st, 0);
    kill(srv, SIGTERM);
    waitpid(srv, &st, 0);
    kill(sim, SIGTERM);
    waitpid(sim, &st, 0);
    unlink(path);
    rmdir(cfgdir);
    unlink(simout);
    unlink(servout);
    unlink(ready);
    unlink(fleet);
    rmdir(g_dir);
    return bad || bad_st ? 1 : 0;
}
