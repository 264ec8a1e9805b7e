/*
 * CLI-wide helpers: error printing and exit-code policy.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

int sw_cli_exit_for(int code)
{
    switch (code) {
    case SW_OK:
        return SW_EXIT_OK;
    case SW_EPARSE:
    case SW_ERANGE:
    case SW_EINVAL:
    case SW_ENOENT:
    case SW_EUNSUPPORTED:
    case SW_ETRUNC:
        return SW_EXIT_USAGE;
    default:
        return SW_EXIT_FAIL;
    }
}

int sw_cli_fail(const struct sw_err *e, bool json)
{
    char buf[2048];
    if (json) {
        json_t *j = json_object();
        if (j && !sw_json_set_new(j, "error", sw_err_to_json(e)))
            sw_json_print(stdout, j, true);
        json_decref(j);
    }
    fprintf(stderr, "slipway: %s\n", sw_err_format(e, buf, sizeof(buf)));
    return sw_cli_exit_for(e ? e->code : SW_EINVAL);
}

int sw_cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "slipway %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see: slipway %s --help)\n", verb);
    return SW_EXIT_USAGE;
}

bool sw_cli_is(const char *arg, const char *a, const char *b)
{
    return (a && !strcmp(arg, a)) || (b && !strcmp(arg, b));
}
