/*
 * bench_sse: throughput of the SSE parser on one core, in MB/s and events/s, fed in 16 KiB reads
 * (curl's default receive buffer), over
 *   1. a realistic OpenAI stream: many small chat.completion.chunk events, one token each, in
 *      llama-server's field order (or the bytes of a recorded stream given as argv[1]);
 *   2. large events: 64 KiB data lines;
 *   3. the same stream as 1 folded by the OpenAI layer too (SSE + JSON per chunk), for scale.
 * Rates are per second of the thread's CPU time (one core's figure even on a loaded machine), with
 * the wall-clock MB/s beside them.
 * Usage: bench_sse [recorded-stream.sse] [CPU-seconds-per-case, default 1]
 */
#include <slipway/openai.h>
#include <slipway/sse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int count_event(void *ud, const struct sw_sse_event *ev)
{
    (*(uint64_t *)ud)++;
    return 0;
}

static char *realistic(size_t events, size_t *len)
{
    static const char *const words[] = {" the",   " model",    " answers", " with", " a",
                                        " short", " sentence", ".",        " It",   " streams"};
    size_t cap = events * 320 + 64;
    char *b = malloc(cap);
    size_t n = 0;
    for (size_t i = 0; i < events; i++) {
        n += (size_t)snprintf(
            b + n, cap - n,
            "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":"
            "\"%s\"}}],\"created\":1764700000,\"id\":\"chatcmpl-Xq3vQ0mWbq9cP1kS2uR4tN6yZ8aB7dE5"
            "\",\"model\":\"frank-small\",\"system_fingerprint\":\"b1-80fb11a\",\"object\":"
            "\"chat.completion.chunk\"}\n\n",
            words[i % 10]);
    }
    n += (size_t)snprintf(b + n, cap - n, "data: [DONE]\n\n");
    *len = n;
    return b;
}

static char *large(size_t events, size_t line, size_t *len)
{
    size_t cap = events * (line + 16);
    char *b = malloc(cap);
    size_t n = 0;
    for (size_t i = 0; i < events; i++) {
        memcpy(b + n, "data: ", 6);
        n += 6;
        memset(b + n, 'a' + (int)(i % 26), line);
        n += line;
        memcpy(b + n, "\n\n", 2);
        n += 2;
    }
    *len = n;
    return b;
}

struct run {
    double mb_s, ev_s; /* per second of this thread's CPU time: one core's rate */
    double wall_mb_s;  /* per wall-clock second (lower on a shared, loaded machine) */
    uint64_t events_per_pass;
};

/* CPU time of this thread: the rate per core whatever else the machine runs. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct run measure(const char *buf, size_t len, double seconds, bool fold)
{
    const size_t piece = 16384;
    uint64_t events = 0, bytes = 0, passes = 0;
    double t0 = sw_now_s(), t = t0, c0 = cpu_s();
    while (cpu_s() - c0 < seconds) {
        struct sw_sse p;
        struct sw_openai_result r;
        uint64_t ev = 0;
        if (fold) {
            sw_openai_result_init(&r, 0, 0);
            sw_sse_init(&p, 0, 0, sw_openai_on_event, NULL, &r);
        } else {
            sw_sse_init(&p, 0, 0, count_event, NULL, &ev);
        }
        for (size_t i = 0; i < len; i += piece) {
            size_t n = SW_MIN(piece, len - i);
            if (sw_sse_feed(&p, buf + i, n, sw_now_ns(), NULL)) {
                fprintf(stderr, "bench_sse: the parser stopped at byte %zu\n", i);
                exit(1);
            }
        }
        events += sw_sse_events(&p);
        bytes += len;
        passes++;
        sw_sse_close(&p);
        if (fold)
            sw_openai_result_free(&r);
        t = sw_now_s();
    }
    double dt = t - t0, dc = cpu_s() - c0;
    struct run out = {bytes / dc / 1e6, events / dc, bytes / dt / 1e6,
                      passes ? events / passes : 0};
    return out;
}

int main(int argc, char **argv)
{
    sw_core_init();
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    if (seconds <= 0)
        seconds = 1.0;
    size_t len1 = 0, len2 = 0;
    char *s1 = NULL;
    const char *what1 = "realistic OpenAI stream (generated, 5000 one-token chunks)";
    if (argc > 1) {
        struct sw_err e;
        char *rec = NULL;
        size_t rl = 0;
        if (sw_read_file(argv[1], 256u << 20, &rec, &rl, &e)) {
            char m[1024];
            fprintf(stderr, "bench_sse: %s\n", sw_err_format(&e, m, sizeof(m)));
            return 2;
        }
        /* repeat the recording to ~1 MB so one pass is not dominated by setup */
        size_t reps = rl ? (1000000 / rl) + 1 : 1;
        s1 = malloc(rl * reps + 1);
        for (size_t i = 0; i < reps; i++)
            memcpy(s1 + i * rl, rec, rl);
        len1 = rl * reps;
        sw_free(rec);
        what1 = "recorded stream (repeated)";
    } else {
        s1 = realistic(5000, &len1);
    }
    char *s2 = large(64, 65536, &len2);
    struct run a = measure(s1, len1, seconds, false);
    struct run b = measure(s2, len2, seconds, false);
    struct run c = measure(s1, len1, seconds, true);
    printf("bench_sse (one core, 16 KiB reads, %.1f s of CPU per case; rates per CPU second, "
           "wall-clock MB/s in brackets)\n",
           seconds);
    printf("  %-58s %8.1f MB/s %12.0f events/s  (%.0f B/event) [%.1f]\n", what1, a.mb_s, a.ev_s,
           a.events_per_pass ? (double)len1 / a.events_per_pass : 0.0, a.wall_mb_s);
    printf("  %-58s %8.1f MB/s %12.0f events/s  (%.0f B/event) [%.1f]\n",
           "large events (64 KiB data)", b.mb_s, b.ev_s,
           b.events_per_pass ? (double)len2 / b.events_per_pass : 0.0, b.wall_mb_s);
    printf("  %-58s %8.1f MB/s %12.0f events/s  [%.1f]\n",
           "same stream folded by openai (SSE + JSON)", c.mb_s, c.ev_s, c.wall_mb_s);
    free(s1);
    free(s2);
    return 0;
}
