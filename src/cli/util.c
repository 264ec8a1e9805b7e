/*
 * CLI-wide helpers: error printing and exit-code policy, and the signals that stop a long run.
 */
#include "cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
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

void sw_cli_print_waiver(FILE *out, int indent, const json_t *g)
{
    const json_t *w = json_object_get(g, "waiver");
    if (!w)
        return;
    fprintf(out, "%*swaived: \"%s\" (until %s; %s:%lld)\n", indent, "",
            json_string_value(json_object_get(w, "reason")),
            json_string_value(json_object_get(w, "until")),
            json_string_value(json_object_get(w, "file")),
            (long long)json_integer_value(json_object_get(w, "line")));
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

int sw_cli_key_env(const struct sw_args *a, const char **key)
{
    const char *var = sw_args_str(a, "api-key-env");
    if (!var)
        return 0;
    const char *k = getenv(var);
    if (!k || !*k) {
        struct sw_err e;
        sw_err_set(&e, SW_ENOENT, "--api-key-env: %s is not set", var);
        return sw_cli_fail(&e, a->json);
    }
    *key = k;
    return 0;
}

bool sw_cli_is(const char *arg, const char *a, const char *b)
{
    return (a && !strcmp(arg, a)) || (b && !strcmp(arg, b));
}

volatile sig_atomic_t sw_cli_stop;
volatile sig_atomic_t sw_cli_stop_signal;

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved[SW_ARRAY_LEN(stop_signals)];
static size_t n_saved;

static void on_stop(int sig)
{
    sw_cli_stop = 1;
    sw_cli_stop_signal = sig;
}

void sw_cli_catch_stop(bool hup)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    n_saved = hup ? 3 : 2;
    for (size_t i = 0; i < n_saved; i++)
        sigaction(stop_signals[i], &sa, &saved[i]);
}

void sw_cli_release_stop(void)
{
    for (size_t i = 0; i < n_saved; i++)
        sigaction(stop_signals[i], &saved[i], NULL);
    n_saved = 0;
}
