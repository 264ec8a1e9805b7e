/*
 * Clocks. Intervals always come from CLOCK_MONOTONIC; the wall clock is for labels only.
 */
#include <slipway/core.h>

#include <errno.h>
#include <time.h>

uint64_t sw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double sw_now_s(void)
{
    return (double)sw_now_ns() / 1e9;
}

int64_t sw_wall_unix(void)
{
    return (int64_t)time(NULL);
}

const char *sw_fmt_time(int64_t unix_s, char *out, size_t n)
{
    struct tm tm;
    time_t t = (time_t)unix_s;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

void sw_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}
