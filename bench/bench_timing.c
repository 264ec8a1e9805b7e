/*
 * bench_timing: slipway bench's timing error against an emitter whose send times are known.
 *
 * The emitter stamps every chunk with "sim_emit_ns", its CLOCK_MONOTONIC send instant on this
 * host; sw_bench_run with emit_stamps matches each received token to the stamp of the chunk that
 * brought it (the chunk's engine count, timings.predicted_n, says which tokens those are) and
 * histograms arrival - emit per token: everything between the emitter's send and the instant
 * the client stamped the bytes (loopback TCP, the wake-up, the client's own loop draining the
 * other streams' bytes first). Printed per stream count: p50 / p99 / p99.9 / max, the tokens
 * matched, chunks without a stamp and stamps that cannot be their chunk's (both must be 0).
 *
 * Two emitters:
 *   - own (default): a child process with one epoll loop. Every step (--step-us, default 20 ms:
 *     a 50 tok/s decode) it writes one token chunk to every stream in flight, in one burst as an
 *     engine's batched decode step does, llama-server-shaped (timings in every chunk). The stamp
 *     is read immediately before the chunk is formatted and written (write() on loopback TCP
 *     hands the bytes to the receiving socket within the call), so it IS the send instant. A
 *     stream whose socket is full gets the rest on EPOLLOUT: then the stamp is earlier than the
 *     write, and the delay is the client's (it did not drain its socket).
 *     --stagger: each stream on its own phase within the step (a timerfd, nanosecond deadlines),
 *     as independent servers would send: the client sees one chunk at a time, not a burst of N
 *     it must drain (with a burst of N the last stream's token waits for the N - 1 before it
 *     however fast the client is: p99 ~ the client's time for 0.99 x N chunks).
 *   - --sim: `slipway sim --emit-stamps` (a vLLM sim, --max-num-seqs 1024, the step cost set to
 *     --step-us whatever the batch). The sim stamps a chunk when it hands it to libevent's
 *     output buffer; the write comes after the whole step's chunks are formatted, so at 1,000
 *     streams its stamps run ahead of the sends by the step's formatting time (measured, not
 *     the client's).
 * The emitter's own figures are printed from its side: steps, and how long a step's burst took
 * to write (the spread of send instants within one step).
 *
 * Usage: bench_timing [--sim | --stagger] [--pin] [--streams 1,100,1000] [--tokens N (200)]
 *                     [--step-us US (20000)] [--threads N (1): the client's event loops]
 * --pin: the emitter on CPU 0, the client on CPU 1 (not exclusive on a shared machine).
 * Exit 0 when every point matched every token, 1 otherwise.
 */
#include <slipway/bench.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_of(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl)) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* ---- the emitter (own) ---- */

struct econn {
    int fd;
    char in[16384];
    size_t nin;
    bool streaming;
    long want, n;
    uint64_t t_first;
    char *out; /* bytes a full socket did not take yet */
    size_t nout, outcap;
    uint64_t due;   /* --stagger: this stream's next token */
    uint64_t phase; /* --stagger: its offset within the step */
};

static volatile sig_atomic_t g_stop;
static int g_ep;

static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void out_add(struct econn *c, const char *p, size_t n)
{
    if (c->nout + n > c->outcap) {
        size_t cap = (c->nout + n) * 2;
        char *o = realloc(c->out, cap);
        if (!o)
            _exit(3);
        c->out = o;
        c->outcap = cap;
    }
    memcpy(c->out + c->nout, p, n);
    c->nout += n;
}

/* Send what is pending then p (n bytes); what the socket does not take waits for EPOLLOUT. */
static void send_bytes(struct econn *c, const char *p, size_t n)
{
    if (c->nout) {
        out_add(c, p, n);
        return;
    }
    while (n) {
        ssize_t w = write(c->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            if (errno != EAGAIN)
                return; /* the peer went away: its close comes as an event */
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    if (n) {
        out_add(c, p, n);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
}

/* One SSE event as one HTTP chunk, the stamp read last before the write. */
static void send_event(struct econn *c, const char *fmt_head, long k, bool final)
{
    char ev[1024], ch[1100];
    uint64_t t = mono_ns();
    if (!c->t_first && k > 0)
        c->t_first = t;
    double ms = c->t_first ? (double)(t - c->t_first) / 1e6 : 0.0;
    int n;
    if (final)
        n = snprintf(ev, sizeof(ev),
                     "data: {%s,\"usage\":{\"completion_tokens\":%ld,\"prompt_tokens\":10,"
                     "\"total_tokens\":%ld},\"timings\":{\"cache_n\":0,\"prompt_n\":10,"
                     "\"prompt_ms\":1.0,\"prompt_per_second\":10000,\"predicted_n\":%ld,"
                     "\"predicted_ms\":%.3f,\"predicted_per_second\":%.3f},\"sim_emit_ns\":%llu}"
                     "\n\ndata: [DONE]\n\n",
                     fmt_head, k, k + 10, k, ms, ms > 0 ? (double)(k - 1) * 1e3 / ms : 0.0,
                     (unsigned long long)t);
    else
        n = snprintf(ev, sizeof(ev),
                     "data: {%s,\"timings\":{\"cache_n\":0,\"prompt_n\":10,\"prompt_ms\":1.0,"
                     "\"prompt_per_second\":10000,\"predicted_n\":%ld,\"predicted_ms\":%.3f,"
                     "\"predicted_per_second\":%.3f},\"sim_emit_ns\":%llu}\n\n",
                     fmt_head, k, ms, ms > 0 ? (double)(k - 1) * 1e3 / ms : 0.0,
                     (unsigned long long)t);
    int m = snprintf(ch, sizeof(ch), "%x\r\n%.*s\r\n%s", n, n, ev, final ? "0\r\n\r\n" : "");
    send_bytes(c, ch, (size_t)m);
}

#define HEAD_COMMON                                                                                \
    "\"created\":1764700000,\"id\":\"chatcmpl-timing\",\"model\":\"m\",\"object\":"                \
    "\"chat.completion.chunk\""

/* A whole request in c->in: answer it; 1 when one was taken. */
static int take_request(struct econn *c)
{
    c->in[c->nin] = '\0';
    char *end = strstr(c->in, "\r\n\r\n");
    if (!end)
        return 0;
    const char *cl = strcasestr(c->in, "content-length:");
    size_t len = (size_t)(end + 4 - c->in) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
    if (c->nin < len)
        return 0;
    if (!strncmp(c->in, "GET ", 4)) {
        const char *nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        send_bytes(c, nf, strlen(nf));
    } else {
        const char *mt = strstr(c->in, "\"max_tokens\":");
        c->want = mt ? strtol(mt + 13, NULL, 10) : 16;
        c->n = 0;
        c->t_first = 0;
        c->streaming = true;
        const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";
        send_bytes(c, head, strlen(head));
        send_event(c,
                   "\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":"
                   "\"assistant\",\"content\":null}}]," HEAD_COMMON,
                   0, false);
    }
    memmove(c->in, c->in + len, c->nin - len);
    c->nin -= len;
    return 1;
}

static void econn_close(struct econn **all, size_t *nall, struct econn *c)
{
    epoll_ctl(g_ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    for (size_t i = 0; i < *nall; i++)
        if (all[i] == c) {
            all[i] = all[--*nall];
            break;
        }
    free(c->out);
    free(c);
}

/* One decode step of one stream: its next token, or its end (then its next request, if one is
 * already in). */
static void step_stream(struct econn *c)
{
    c->n++;
    if (c->n <= c->want) {
        send_event(c,
                   "\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
                   "{\"content\":\" tok\"}}]," HEAD_COMMON,
                   c->n, false);
        return;
    }
    send_event(c,
               "\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":"
               "{}}]," HEAD_COMMON,
               c->want, true);
    c->streaming = false;
    while (take_request(c))
        if (c->streaming)
            break;
}

/* Streams in flight. */
static size_t streaming(struct econn **all, size_t nall)
{
    size_t n = 0;
    for (size_t i = 0; i < nall; i++)
        n += all[i]->streaming;
    return n;
}

static int emitter(int lfd, int ctl, long step_us, bool stagger, int report_fd)
{
    signal(SIGTERM, on_term);
    g_ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(g_ep, EPOLL_CTL_ADD, lfd, &lev);
    static struct econn *all[MAX_CONNS];
    size_t nall = 0;
    uint64_t next = mono_ns() + (uint64_t)step_us * 1000u;
    uint64_t steps = 0, burst_max = 0, late_max = 0, accepted = 0;
    int tfd = -1;
    if (stagger) {
        /* a timer with nanosecond resolution (epoll_wait's is a millisecond) */
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &tfd};
        epoll_ctl(g_ep, EPOLL_CTL_ADD, tfd, &tev);
        next = UINT64_MAX;
    }
    double burst_sum = 0;
    static struct epoll_event evs[1024];
    /* the parent says how many streams the next point opens (a line "N"): no token goes out
     * until that many are in, so the connection storm of a point's start (1,000 connects) is
     * not in the figure, only the steady stream */
    long hold = 0;
    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = &ctl};
    epoll_ctl(g_ep, EPOLL_CTL_ADD, ctl, &cev);
    while (!g_stop) {
        uint64_t now = mono_ns();
        int wait_ms = stagger ? -1 : now >= next ? 0 : (int)((next - now + 999999) / 1000000);
        int k = epoll_wait(g_ep, evs, 1024, wait_ms);
        for (int i = 0; i < k; i++) {
            struct econn *c = evs[i].data.ptr;
            if (evs[i].data.ptr == &ctl) {
                char b[32];
                ssize_t r = read(ctl, b, sizeof(b) - 1);
                if (r <= 0)
                    return 0; /* the parent is gone */
                b[r] = '\0';
                hold = atol(b);
                continue;
            }
            if (evs[i].data.ptr == &tfd) {
                uint64_t x;
                if (read(tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
                    return 1;
                continue;
            }
            if (!c) {
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0)
                        break;
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    struct econn *nc = calloc(1, sizeof(*nc));
                    if (!nc || nall >= MAX_CONNS) {
                        close(fd);
                        free(nc);
                        continue;
                    }
                    nc->fd = fd;
                    /* phases spread evenly for any count: the golden ratio's fractions */
                    double frac = fmod((double)(++accepted) * 0.6180339887498949, 1.0);
                    nc->phase = (uint64_t)(frac * (double)step_us * 1000.0) + 1;
                    all[nall++] = nc;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            if (evs[i].events & EPOLLOUT && c->nout) {
                ssize_t w = write(c->fd, c->out, c->nout);
                if (w > 0) {
                    memmove(c->out, c->out + w, c->nout - (size_t)w);
                    c->nout -= (size_t)w;
                }
                if (!c->nout) {
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                ssize_t r = read(c->fd, c->in + c->nin, sizeof(c->in) - 1 - c->nin);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    econn_close(all, &nall, c);
                    continue;
                }
                if (r > 0)
                    c->nin += (size_t)r;
                while (!c->streaming && take_request(c))
                    ;
            }
        }
        now = mono_ns();
        if (hold > 0 && streaming(all, nall) < (size_t)hold)
            continue;
        if (hold > 0) {
            hold = 0;
            next = now + (uint64_t)step_us * 1000u;
        }
        if (stagger) {
            /* every stream on its own phase: the streams due now, then the timer for the next */
            uint64_t first = UINT64_MAX;
            for (size_t i = 0; i < nall; i++) {
                struct econn *c = all[i];
                if (!c->streaming)
                    continue;
                if (!c->due)
                    c->due = now + c->phase;
                if (c->due <= now) {
                    late_max = now - c->due > late_max ? now - c->due : late_max;
                    c->due += (uint64_t)step_us * 1000u;
                    if (c->due < now)
                        c->due = now + (uint64_t)step_us * 1000u;
                    step_stream(c);
                    if (!c->streaming)
                        c->due = 0;
                    steps++;
                }
                if (c->streaming && c->due && c->due < first)
                    first = c->due;
            }
            struct itimerspec its = {{0, 0}, {0, 0}};
            if (first != UINT64_MAX) {
                its.it_value.tv_sec = (time_t)(first / 1000000000u);
                its.it_value.tv_nsec = (long)(first % 1000000000u);
            }
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
            next = UINT64_MAX;
            continue;
        }
        if (now < next)
            continue;
        /* a decode step: one token to every stream in flight, in one burst */
        late_max = now - next > late_max ? now - next : late_max;
        next += (uint64_t)step_us * 1000u;
        if (next < now)
            next = now + (uint64_t)step_us * 1000u; /* a step missed is skipped, not bunched */
        uint64_t b0 = mono_ns();
        bool any = false;
        for (size_t i = 0; i < nall; i++) {
            struct econn *c = all[i];
            if (!c->streaming)
                continue;
            any = true;
            step_stream(c);
        }
        if (any) {
            uint64_t b = mono_ns() - b0;
            steps++;
            burst_sum += (double)b;
            burst_max = b > burst_max ? b : burst_max;
        }
    }
    char line[256];
    if (stagger) {
        int n = snprintf(line, sizeof(line),
                         "emitter: %llu tokens on staggered phases, a token late on its phase "
                         "by up to %.3f ms\n",
                         (unsigned long long)steps, (double)late_max / 1e6);
        return write(report_fd, line, (size_t)n) < 0;
    }
    int n = snprintf(line, sizeof(line),
                     "emitter: %llu steps, burst (first to last send of a step) mean %.3f ms max "
                     "%.3f ms, step start late by up to %.3f ms\n",
                     (unsigned long long)steps, steps ? burst_sum / (double)steps / 1e6 : 0.0,
                     (double)burst_max / 1e6, (double)late_max / 1e6);
    if (write(report_fd, line, (size_t)n) < 0)
        return 1;
    return 0;
}

/* ---- the sim as the emitter ---- */

static pid_t start_sim(long step_us, int *port, char *vdir)
{
    char cfg[200], base[32], out[] = "/tmp/bench_timing.XXXXXX";
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
    int ofd = mkstemp(out);
    if (ofd < 0)
        return -1;
    snprintf(base, sizeof(base), "%ld", step_us);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(ofd, 1);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        execl(SW_BUILD_DIR "/slipway", "slipway", "sim", "--emit-stamps", "--load-time", "0s",
              "--engine", "vllm", "--device-memory", "640GiB", "--weights", "16GiB",
              "--decode-base-us", base, "--decode-seq-us", "0", "--decode-kv-us", "0",
              "--prefill-us", "0", "--", "vllm", "serve", vdir, "--max-model-len", "4096",
              "--max-num-seqs", "1024", "--max-num-batched-tokens", "65536", (char *)NULL);
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
    unlink(cfg);
    usleep(300000);
    return pid;
}

/* ---- the client ---- */

int main(int argc, char **argv)
{
    sw_core_init();
    bool sim = false, pinned = false, stagger = false;
    long tokens = 200, step_us = 20000;
    int threads = 1;
    int streams[16] = {1, 100, 1000};
    size_t nstreams = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sim")) {
            sim = true;
        } else if (!strcmp(argv[i], "--stagger")) {
            stagger = true;
        } else if (!strcmp(argv[i], "--pin")) {
            pinned = true;
        } else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) {
            tokens = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--step-us") && i + 1 < argc) {
            step_us = atol(argv[++i]);
        } else if (!strcmp(argv[i], "--streams") && i + 1 < argc) {
            nstreams = 0;
            for (char *p = argv[++i]; *p && nstreams < 16;) {
                streams[nstreams++] = (int)strtol(p, &p, 10);
                if (*p == ',')
                    p++;
            }
        } else {
            fprintf(stderr, "usage: bench_timing [--sim] [--stagger] [--pin] [--streams LIST] "
                            "[--tokens N] [--step-us US] [--threads N]\n");
            return 2;
        }
    }
    if (tokens < 2 || step_us < 100)
        return 2;
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i] < 1 || streams[i] > (sim ? 1024 : MAX_CONNS - 16))
            return 2;
    raise_nofile();
    int port = 0, rep_pipe[2] = {-1, -1}, ctl[2] = {-1, -1};
    pid_t child;
    char vdir[] = "/tmp/bench_timing_vllm.XXXXXX";
    if (sim) {
        child = start_sim(step_us, &port, vdir);
        if (child < 0 || port <= 0) {
            fprintf(stderr, "bench_timing: the sim did not start (built? %s/slipway)\n",
                    SW_BUILD_DIR);
            return 1;
        }
    } else {
        int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof(a);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4096) ||
            getsockname(lfd, (struct sockaddr *)&a, &al) || pipe(rep_pipe) || pipe(ctl))
            return 1;
        port = ntohs(a.sin_port);
        child = fork();
        if (child == 0) {
            close(rep_pipe[0]);
            close(ctl[1]);
            if (pinned)
                pin(0);
            _exit(emitter(lfd, ctl[0], step_us, stagger, rep_pipe[1]));
        }
        close(lfd);
        close(rep_pipe[1]);
        close(ctl[0]);
    }
    if (pinned)
        pin(1);
    char url[64], tmpl[] = "/tmp/bench_timing_XXXXXX";
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    int fd = mkstemp(tmpl);
    const char *line = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n";
    if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        return 1;
    close(fd);

    if (sim && stagger)
        return 2;
    printf("emitter: %s, one token per stream every %.3f ms (%.0f tok/s a stream, %s), %ld "
           "tokens a stream%s\n",
           sim ? "slipway sim --emit-stamps (vllm)" : "own epoll loop, stamped at the write",
           (double)step_us / 1e3, 1e6 / (double)step_us,
           stagger ? "each stream on its own phase" : "every stream in one burst a step", tokens,
           pinned ? "; emitter on CPU 0, client on CPU 1" : "");
    printf("%8s %9s %9s %9s %9s %9s %9s %8s %8s %12s %6s\n", "streams", "tokens", "p50 ms",
           "p99 ms", "p99.9 ms", "max ms", "mean ms", "unstamp", "bad", "client ns/tok", "loop%");
    bool all_ok = true;
    for (size_t i = 0; i < nstreams; i++) {
        struct sw_bench_opts o;
        sw_bench_opts_init(&o);
        o.url = url;
        o.engine = sim ? "vllm" : "llama.cpp";
        o.prompts_file = tmpl;
        o.tg = tokens;
        o.repeat = 1;
        o.conc[0] = streams[i];
        o.nconc = 1;
        o.emit_stamps = true;
        o.engine_metrics = false;
        o.threads = threads;
        if (ctl[1] >= 0) {
            char b[32];
            int bl = snprintf(b, sizeof(b), "%d\n", streams[i]);
            if (write(ctl[1], b, (size_t)bl) != bl)
                return 1;
        }
        struct sw_bench_report rep;
        struct sw_err e;
        int rc = sw_bench_run(&o, &rep, &e);
        if (rc) {
            fprintf(stderr, "bench_timing: %d streams: %s\n", streams[i], e.msg);
            all_ok = false;
            continue;
        }
        const struct sw_bench_point *pt = &rep.points[0];
        const struct sw_bench_hist *h = &pt->emit;
        bool ok = pt->failed == 0 && pt->emit_missing == 0 && pt->emit_bad == 0 &&
                  pt->emit_matched == pt->tokens_out &&
                  pt->tokens_out == (int64_t)streams[i] * tokens;
        all_ok = all_ok && ok;
        printf("%8d %9lld %9.3f %9.3f %9.3f %9.3f %9.3f %8lld %8lld %12.0f %6.1f%s\n", streams[i],
               (long long)pt->emit_matched, (double)sw_bench_hist_quantile(h, 0.5) / 1e6,
               (double)sw_bench_hist_quantile(h, 0.99) / 1e6,
               (double)sw_bench_hist_quantile(h, 0.999) / 1e6, (double)h->max_ns / 1e6,
               h->n ? h->sum_ns / (double)h->n / 1e6 : NAN, (long long)pt->emit_missing,
               (long long)pt->emit_bad,
               pt->tokens_out ? pt->client_cpu_s / (double)pt->tokens_out * 1e9 : 0,
               pt->client_wall_s > 0 ? 100.0 * pt->client_cpu_s / pt->client_wall_s / threads : 0.0,
               ok ? "" : "  INCOMPLETE");
        if (pt->failed)
            printf("         %zu of %zu requests failed: %s\n", pt->failed, pt->nsamples,
                   pt->samples[0].error);
        sw_bench_report_free(&rep);
        fflush(stdout);
    }
    unlink(tmpl);
    kill(child, SIGTERM);
    int st = 0;
    waitpid(child, &st, 0);
    if (!sim) {
        char buf[512];
        ssize_t n = read(rep_pipe[0], buf, sizeof(buf) - 1);
        if (n > 0) {
            buf[n] = '\0';
            fputs(buf, stdout);
        }
        close(rep_pipe[0]);
    } else {
        rmdir(vdir);
    }
    printf("emitter CPU %.2f s, load average: ", cpu_of(RUSAGE_CHILDREN));
    FILE *la = fopen("/proc/loadavg", "r");
    char l[128] = "";
    if (la && fgets(l, sizeof(l), la))
        fputs(l, stdout);
    if (la)
        fclose(la);
    return all_ok ? 0 : 1;
}
