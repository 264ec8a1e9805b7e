/*
 * Leveled logging to stderr. The level comes from SLIPWAY_LOG the first time it is needed.
 */
#include <slipway/core.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int level = -1;

void sw_log_set_level(enum sw_log_level lvl)
{
    atomic_store(&level, (int)lvl);
}

enum sw_log_level sw_log_get_level(void)
{
    int l = atomic_load(&level);
    if (l < 0) {
        const char *s = getenv("SLIPWAY_LOG");
        l = SW_LOG_WARN;
        if (s && !strcmp(s, "error"))
            l = SW_LOG_ERROR;
        else if (s && !strcmp(s, "info"))
            l = SW_LOG_INFO;
        else if (s && !strcmp(s, "debug"))
            l = SW_LOG_DEBUG;
        atomic_store(&level, l);
    }
    return (enum sw_log_level)l;
}

void sw_log(enum sw_log_level lvl, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    if ((int)lvl > (int)sw_log_get_level())
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "slipway: %s: %s\n", tags[lvl], line);
}
