/*
 * bench_sim: how fast `slipway sim --firehose` streams, and how many streams it holds open.
 *
 *   1. throughput: the sim pinned to CPU 0 (one core: its one loop), this client on CPU 1; S
 *      streamed completions of T tokens each, all in flight at once; tokens/s = the token events
 *      received / the wall time from the first send to the last [DONE], and the sim's own CPU time
 *      (getrusage of the child) per token.
 *   2. open streams (a vLLM sim: llama.cpp refuses more than 256 sequences): C connections, each with a streamed completion in flight at the same time
 *      (every one has received its first token before any is allowed to finish: max_tokens is
 *      large and the client reads the first event of all C before draining them); then all read
 *      to [DONE]; any connect, HTTP or count error is reported.
 * The client is a plain epoll loop over non-blocking sockets, so
 * the measure is the sim's (it counts "data: " events). RLIMIT_NOFILE is raised to its hard limit (the sim raises its own).
 *
 * Usage: bench_sim MODEL.gguf [streams 8] [tokens 50000] [open 10000]
 * MODEL is any GGUF the llama.cpp law reads (the tests' tiny chat model).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    size_t sent, reqlen;
    long events;  /* "data: " events seen */
    int nl;       /* newlines at the end of the headers so far */
    bool headers; /* past the response headers */
    bool done;    /* [DONE] seen */
    bool failed;
    char tail[8]; /* the last 5 bytes, to find a marker across reads */
    size_t ntail;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

/* Start the sim (llama.cpp on MODEL; or, with model NULL, a vLLM sim of a Llama-3-8B-shaped
 * config.json on a large declared device: llama.cpp refuses past 256 sequences); its pid. */
static pid_t start_sim(const char *model, int slots, int64_t window, int *port)
{
    static char vdir[] = "/tmp/bench_sim_vllm.XXXXXX";
    char cfg[200];
    if (!model) {
        if (!mkdtemp(vdir))
            return -1;
        snprintf(cfg, sizeof(cfg), "%s/config.json", vdir);
        FILE *f = fopen(cfg, "w");
        if (!f)
            return -1;
        fputs("{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","
              "\"hidden_size\":4096,\"num_hidden_layers\":32,\"num_attention_heads\":32,"
              "\"num_key_value_heads\":8,\"head_dim\":128,\"intermediate_size\":14336,"
              "\"max_position_embeddings\":131072,\"vocab_size\":128256,"
              "\"torch_dtype\":\"bfloat16\"}",
              f);
        fclose(f);
    }
    char np[32], ctx[64], out[] = "/tmp/bench_sim.XXXXXX";
    int ofd = mkstemp(out);
    if (ofd < 0)
        return -1;
    snprintf(np, sizeof(np), "%d", slots);
    snprintf(ctx, sizeof(ctx), "%lld", (long long)window * slots);
    pid_t pid = fork();
    if (pid == 0) {
        pin(0);
        dup2(ofd, 1);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        if (model)
            execl(SW_BUILD_DIR "/slipway", "slipway", "sim", "--firehose", "--load-time", "0s",
                  "--engine", "llama.cpp", "--", "llama-server", "-m", model, "-np", np, "-c", ctx,
                  "-b", "65536", (char *)NULL);
        else
            execl(SW_BUILD_DIR "/slipway", "slipway", "sim", "--firehose", "--load-time", "0s",
                  "--engine", "vllm", "--device-memory", "640GiB", "--weights", "16GiB", "--",
                  "vllm", "serve", vdir, "--max-model-len", "4096", "--max-num-seqs", np,
                  "--max-num-batched-tokens", "65536", (char *)NULL);
        _exit(127);
    }
    *port = 0;
    for (int i = 0; i < 300 && *port <= 0; i++) {
        char buf[64] = "";
        ssize_t n = pread(ofd, buf, sizeof(buf) - 1, 0);
        if (n > 0 && atoi(buf) > 0)
            *port = atoi(buf);
        else
            usleep(50000);
    }
    close(ofd);
    unlink(out);
    if (!model) {
        unlink(cfg);
        rmdir(vdir);
    }
    usleep(300000); /* the load time is 0: /health is up at once */
    return pid;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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

/* Occurrences of needle (len k) in the carry (the last k-1 bytes before) joined to p. */
static long count(const char *carry, size_t nc, const char *p, size_t n, const char *needle,
                  size_t k)
{
    long hits = 0;
    char edge[16];
    size_t m = n < k - 1 ? n : k - 1;
    memcpy(edge, carry, nc);
    memcpy(edge + nc, p, m);
    for (size_t i = 0; i + k <= nc + m; i++) /* the ones that straddle the boundary */
        hits += i < nc && !memcmp(edge + i, needle, k);
    for (const char *q = p; (q = memmem(q, n - (size_t)(q - p), needle, k)); q++)
        hits++;
    return hits;
}

/* Feed bytes of a stream: count its "data: " events, find [DONE]. */
static void feed(struct conn *c, const char *p, size_t n)
{
    while (!c->headers && n) {
        c->nl = *p == '\n' ? c->nl + 1 : (*p == '\r' ? c->nl : 0);
        c->headers = c->nl == 2;
        p++;
        n--;
    }
    if (!n)
        return;
    /* the chunked encoding's size lines are not events: only "data: " counts */
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

/*
 * Run n streams of `tokens` each on port. With hold, no stream is read past its first event
 * until every one has one (all open at once). Returns the failures; *events the token events.
 */
static int run(int port, int n, long tokens, bool hold, long *events, double *secs)
{
    char body[256], req[512];
    int blen = snprintf(body, sizeof(body),
                        "{\"prompt\":\"go\",\"max_tokens\":%ld,\"stream\":true}", tokens);
    int rlen = snprintf(req, sizeof(req),
                        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                        "application/json\r\nContent-Length: %d\r\n\r\n%s",
                        blen, body);
    struct conn *cs = calloc((size_t)n, sizeof(*cs));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int failed = 0, open_ = 0, first = 0;
    static char buf[1 << 16];
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        cs[i].fd = connect_to(port);
        cs[i].reqlen = (size_t)rlen;
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
            if (c->sent < c->reqlen && (evs[j].events & EPOLLOUT)) {
                ssize_t w = write(c->fd, req + c->sent, c->reqlen - c->sent);
                if (w > 0)
                    c->sent += (size_t)w;
                if (c->sent == c->reqlen) {
                    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = evs[j].data.u32};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (!(evs[j].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                continue;
            if (hold && first < n - failed && c->events >= 1)
                continue; /* all open before any is drained */
            ssize_t r = read(c->fd, buf, hold && first < n - failed ? 512 : sizeof(buf));
            if (r > 0) {
                long before = c->events;
                feed(c, buf, (size_t)r);
                if (before == 0 && c->events >= 1)
                    first++;
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
    for (int i = 0; i < n; i++) {
        /* the token events: all but the finish event and [DONE] (a completion has no role) */
        if (!cs[i].failed)
            *events += cs[i].events - 2;
        if (!cs[i].failed && cs[i].events - 2 != tokens)
            failed++;
        if (cs[i].fd >= 0) {
            close(cs[i].fd);
            failed++;
        }
    }
    if (hold)
        printf("  all %d streams had their first token before any was drained: %s\n", n,
               first == n ? "yes" : "NO");
    close(ep);
    free(cs);
    return failed;
}

static void stop(pid_t pid, double *cpu)
{
    struct rusage ru;
    int st;
    kill(pid, SIGTERM);
    wait4(pid, &st, 0, &ru);
    *cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sim MODEL.gguf [streams 8] [tokens 50000] [open 10000]\n");
        return 2;
    }
    const char *model = argv[1];
    int streams = argc > 2 ? atoi(argv[2]) : 8;
    long tokens = argc > 3 ? atol(argv[3]) : 50000;
    int nopen = argc > 4 ? atoi(argv[4]) : 10000;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    pin(1);

    int port;
    double secs, cpu;
    long events;
    pid_t pid = start_sim(model, streams, tokens + 64, &port);
    if (pid < 0 || port <= 0) {
        fprintf(stderr, "bench_sim: the sim did not start\n");
        return 1;
    }
    int bad = run(port, streams, tokens, false, &events, &secs);
    stop(pid, &cpu);
    printf("firehose, one core: %d streams x %ld tokens: %ld token events in %.2f s = %.0f "
           "tokens/s; sim CPU %.2f s = %.0f ns/token; %d failed\n",
           streams, tokens, events, secs, (double)events / secs, cpu, cpu * 1e9 / (double)events,
           bad);

    if (nopen <= 0)
        return bad ? 1 : 0;
    pid = start_sim(NULL, nopen, 256, &port);
    if (pid < 0 || port <= 0) {
        fprintf(stderr, "bench_sim: the sim did not start\n");
        return 1;
    }
    int bad2 = run(port, nopen, 100, true, &events, &secs);
    stop(pid, &cpu);
    printf("open streams: %d concurrent, 100 tokens each: %ld token events in %.2f s; %d failed\n",
           nopen, events, secs, bad2);
    return bad || bad2 ? 1 : 0;
}
