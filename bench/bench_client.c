/*
 * bench_client: what `slipway bench` itself costs per streamed token, beside `curl -N` consuming
 * the very same stream (the floor any HTTP client pays: it only copies bytes).
 *
 * A server thread in this process answers every POST with one llama-server-shaped stream of N
 * chunks (one token each, timings in every chunk, usage at the end), written one chunk per
 * write() as llama-server does, as fast as the socket takes them. Measured:
 *   - sw_bench_run over R requests (prompts from a file, so no calibration request): the CPU time
 *     of the thread that runs the event loop (CLOCK_THREAD_CPUTIME_ID), per token;
 *   - `curl -N -s -o /dev/null` over the same R requests: each child's user+system time (wait4),
 *     per token, with the cost of an empty request (curl's own start-up) subtracted.
 *   - the chunk fold alone, on this stream's chunk: sw_openai_feed_chunk with the scanner and with
 *     json_only (jansson for every chunk, as before the scanner), CPU per chunk.
 * Usage: bench_client [tokens-per-stream, default 20000] [requests, default 5]
 */
#include <slipway/bench.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_listen;
static long g_tokens;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read one request (headers + Content-Length body); 0, or -1 when the peer went away. */
static int read_request(int fd, long *tokens)
{
    char buf[65536];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "content-length:");
        size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
        while (n < want && n < sizeof(buf) - 1) {
            r = read(fd, buf + n, sizeof(buf) - 1 - n);
            if (r <= 0)
                return -1;
            n += (size_t)r;
        }
        buf[n] = '\0';
        /* "max_tokens":0 (curl's empty request) asks for no token */
        *tokens = strstr(buf, "\"max_tokens\":0") ? 0 : g_tokens;
        return 0;
    }
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(g_listen, NULL, NULL);
        if (c < 0)
            return NULL;
        long tokens = 0;
        while (!read_request(c, &tokens)) {
            const char *head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
            if (write_all(c, head, strlen(head)))
                break;
            char ev[1024], ch[1100];
            int bad = 0;
            for (long i = 1; i <= tokens + 1 && !bad; i++) {
                int n;
                if (i <= tokens)
                    n = snprintf(ev, sizeof(ev),
                                 "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,"
                                 "\"delta\":{\"content\":\" word\"}}],\"created\":1764700000,"
                                 "\"id\":\"chatcmpl-bench\",\"model\":\"m\",\"object\":"
                                 "\"chat.completion.chunk\",\"timings\":{\"cache_n\":0,"
                                 "\"prompt_n\":10,\"prompt_ms\":1.0,\"prompt_per_second\":10000,"
                                 "\"predicted_n\":%ld,\"predicted_ms\":%ld.0,"
                                 "\"predicted_per_second\":1000}}\n\n",
                                 i, i);
                else
                    n = snprintf(ev, sizeof(ev),
                                 "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
                                 "\"completion_tokens\":%ld,\"total_tokens\":%ld},\"timings\":{"
                                 "\"cache_n\":0,\"prompt_n\":10,\"prompt_ms\":1.0,"
                                 "\"predicted_n\":%ld,\"predicted_ms\":%ld.0}}\n\ndata: [DONE]\n\n",
                                 tokens, tokens + 10, tokens, tokens);
                int m = snprintf(ch, sizeof(ch), "%x\r\n%s\r\n", n, ev);
                bad = write_all(c, ch, (size_t)m);
            }
            if (bad || write_all(c, "0\r\n\r\n", 5))
                break;
        }
        close(c);
    }
}

/* CPU seconds per chunk of folding n copies of one chunk payload, through jansson or not. */
static double fold_cpu(const char *chunk, long n, bool json_only)
{
    struct sw_openai_result r;
    struct sw_openai_delta d;
    struct sw_err e;
    sw_openai_result_init(&r, 1u << 30, 16);
    r.json_only = json_only;
    size_t len = strlen(chunk);
    double c0 = cpu_now();
    for (long i = 0; i < n; i++)
        if (sw_openai_feed_chunk(&r, chunk, len, (uint64_t)i + 1, &d, &e))
            break;
    double c = cpu_now() - c0;
    sw_openai_result_free(&r);
    return c / (double)n;
}

/* user+system seconds of one `curl -N` run against url with body. */
static double curl_cpu(const char *url, const char *body)
{
    pid_t p = fork();
    if (p == 0) {
        execlp("curl", "curl", "-N", "-s", "-o", "/dev/null", "-H",
               "Content-Type: application/json", "--data-binary", body, url, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (p < 0 || wait4(p, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "bench_client: curl failed (is it installed?)\n");
        exit(1);
    }
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    sw_core_init();
    g_tokens = argc > 1 ? atol(argv[1]) : 20000;
    int reqs = argc > 2 ? atoi(argv[2]) : 5;
    if (g_tokens < 2 || reqs < 1)
        return 2;
    g_listen = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (bind(g_listen, (struct sockaddr *)&a, sizeof(a)) || listen(g_listen, 64) ||
        getsockname(g_listen, (struct sockaddr *)&a, &al))
        return 1;
    pthread_t th;
    pthread_create(&th, NULL, serve, NULL);
    char url[64], chat[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(chat, sizeof(chat), "%s/v1/chat/completions", url);
    char tmpl[] = "/tmp/bench_client_XXXXXX";
    int fd = mkstemp(tmpl);
    const char *line = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n";
    if (fd < 0 || write_all(fd, line, strlen(line)))
        return 1;
    close(fd);

    struct sw_bench_opts o;
    sw_bench_opts_init(&o);
    o.url = url;
    o.prompts_file = tmpl;
    o.tg = g_tokens;
    o.repeat = reqs;
    struct sw_bench_report rep;
    struct sw_err e;
    double c0 = cpu_now();
    int rc = sw_bench_run(&o, &rep, &e);
    double ours = cpu_now() - c0;
    unlink(tmpl);
    if (rc) {
        fprintf(stderr, "bench_client: %s\n", e.msg);
        return 1;
    }
    long tokens = rep.points[0].tokens_out;
    bool agree = rep.points[0].counts_agree && rep.points[0].failed == 0;
    sw_bench_report_free(&rep);

    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";
    const char *empty = "{\"max_tokens\":0}";
    double base = 0, theirs = 0;
    for (int i = 0; i < reqs; i++) {
        base += curl_cpu(chat, empty);
        theirs += curl_cpu(chat, body);
    }
    double curl_net = theirs - base;
    printf("stream: %ld tokens x %d requests (%ld tokens, counts %s)\n", g_tokens, reqs, tokens,
           agree ? "exact" : "WRONG");
    printf("slipway bench: %.3f s CPU, %.0f ns per token (SSE, chunk scan, counters, "
           "histograms)\n",
           ours, ours / (double)tokens * 1e9);
    printf("curl -N:       %.3f s CPU (%.3f s of it start-up), %.0f ns per token\n", theirs, base,
           curl_net / (double)tokens * 1e9);
    printf("ratio: %.2fx curl -N\n", curl_net > 0 ? ours / curl_net : 0.0);
    const char *chunk = "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":"
                        "\" word\"}}],\"created\":1764700000,\"id\":\"chatcmpl-bench\",\"model\":"
                        "\"m\",\"object\":\"chat.completion.chunk\",\"timings\":{\"cache_n\":0,"
                        "\"prompt_n\":10,\"prompt_ms\":1.0,\"prompt_per_second\":10000,"
                        "\"predicted_n\":7,\"predicted_ms\":7.0,\"predicted_per_second\":1000}}";
    double scan = fold_cpu(chunk, 200000, false), full = fold_cpu(chunk, 200000, true);
    printf("chunk fold alone: %.0f ns with the scanner, %.0f ns through jansson (%.1fx)\n",
           scan * 1e9, full * 1e9, scan > 0 ? full / scan : 0.0);
    close(g_listen);
    return agree ? 0 : 1;
}
