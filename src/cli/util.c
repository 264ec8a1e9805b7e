/*
 * CLI-wide helpers: error printing and exit-code policy, the signals that stop a long run, and the
 * one fleet resolution of the verbs that act on a fleet's endpoints (sw_cli_fleet).
 */
#include "cli.h"

#include <slipway/fleet.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>
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

int sw_cli_no_ledger(const struct sw_args *a, const char *const *uses)
{
    if (!sw_args_flag(a, "no-ledger"))
        return 0;
    for (const char *const *u = uses; u && *u; u++)
        if (sw_args_flag(a, *u))
            return sw_args_usage(a,
                                 "--no-ledger and --%s together: --no-ledger reads and writes "
                                 "no ledger",
                                 *u);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The fleet a verb acts on (cli.h, "The one grammar").
 */

static bool is_file(const char *path)
{
    struct stat st;
    return path && !stat(path, &st) && !S_ISDIR(st.st_mode);
}

static bool looks_like_path(const char *w)
{
    return sw_args_is_path(w);
}

/* The fleet file when --fleet is not given: $SLIPWAY_FLEET, else "fleet.yaml". */
static const char *fallback(enum sw_cli_fleet_from *from)
{
    const char *env = getenv(SW_CLI_FLEET_ENV_VAR);
    *from = env && *env ? SW_CLI_FLEET_ENV : SW_CLI_FLEET_DEFAULT;
    return *from == SW_CLI_FLEET_ENV ? env : "fleet.yaml";
}

/* --fleet NAME with no file NAME: when NAME is an endpoint of the fleet the verb would read
 * without the flag, say so. The usage error's exit code. */
static int fleet_not_file(const struct sw_args *a)
{
    enum sw_cli_fleet_from from;
    const char *path = fallback(&from);
    struct sw_fleet *f = NULL;
    struct sw_err e;
    bool ep = false;
    if (!looks_like_path(a->fleet) && is_file(path) && !sw_fleet_load(path, NULL, &f, &e))
        ep = sw_fleet_endpoint(f, a->fleet) != NULL;
    sw_fleet_free(f);
    if (ep)
        return sw_args_usage(a,
                             "--fleet '%s': no such file; '%s' is an endpoint of %s%s: did you "
                             "mean slipway %s %s?",
                             a->fleet, a->fleet, from == SW_CLI_FLEET_DEFAULT ? "./" : "", path,
                             a->spec->name, a->fleet);
    return sw_args_usage(a, "--fleet '%s': no such file (--fleet names the fleet file%s)", a->fleet,
                         looks_like_path(a->fleet) ? "" : "; an endpoint goes first");
}

int sw_cli_need_endpoint(const struct sw_args *a, const char *what)
{
    if (a->fleet && !is_file(a->fleet))
        return fleet_not_file(a);
    return sw_args_usage(a, "name the ENDPOINT%s", what ? what : "");
}

int sw_cli_fleet(const struct sw_args *a, int first, unsigned flags, struct sw_cli_fleet *out)
{
    static bool said; /* the note on where the fleet came from: once per process */
    struct sw_err e;
    sw_err_clear(&e);
    memset(out, 0, sizeof(*out));
    first = SW_MIN(SW_MAX(first, 0), a->npos);
    out->endpoints = a->pos + first;
    out->n_endpoints = a->npos - first;
    for (int i = 0; i < out->n_endpoints; i++) {
        if (looks_like_path(out->endpoints[i]))
            return sw_args_not_endpoint(a, out->endpoints[i]);
    }
    if (a->fleet) {
        out->path = a->fleet;
        out->from = SW_CLI_FLEET_FLAG;
        if (!is_file(a->fleet))
            return fleet_not_file(a);
    } else {
        out->path = fallback(&out->from);
        if (!is_file(out->path)) {
            if (flags & SW_CLI_FLEET_OPTIONAL) {
                out->path = NULL;
                out->from = SW_CLI_FLEET_NONE;
                return 0;
            }
            if (out->from == SW_CLI_FLEET_ENV)
                sw_err_set(&e, SW_ENOENT, "$%s names '%s': no such file (or give --fleet FILE)",
                           SW_CLI_FLEET_ENV_VAR, out->path);
            else
                sw_err_set(&e, SW_ENOENT,
                           "no fleet file: ./fleet.yaml is not here (give --fleet FILE, or set "
                           "$%s)",
                           SW_CLI_FLEET_ENV_VAR);
            return sw_cli_fail(&e, a->json);
        }
        if (!said && !a->json && !(flags & SW_CLI_FLEET_QUIET))
            fprintf(stderr, "fleet: %s%s (%s)\n", out->from == SW_CLI_FLEET_DEFAULT ? "./" : "",
                    out->path,
                    out->from == SW_CLI_FLEET_DEFAULT ? "default" : "from $" SW_CLI_FLEET_ENV_VAR);
        said = true;
    }
    if (!out->n_endpoints && !(flags & SW_CLI_FLEET_LOAD))
        return 0;
    struct sw_fleet *f = NULL;
    if (sw_fleet_load(out->path, NULL, &f, &e))
        return sw_cli_fail(&e, a->json);
    for (int i = 0; i < out->n_endpoints; i++) {
        const struct sw_fleet_endpoint *ep;
        if (sw_fleet_find_endpoint(f, out->endpoints[i], &ep, &e)) {
            sw_fleet_free(f);
            return sw_cli_fail(&e, a->json);
        }
    }
    if (flags & SW_CLI_FLEET_LOAD)
        out->fleet = f;
    else
        sw_fleet_free(f);
    return 0;
}

int sw_cli_watch_paths(const struct sw_args *a, const char *fleet_path, char *exe, char *fleet,
                       char *ledger, const char **ledger_out)
{
    struct sw_err e;
    const char *lp = sw_args_str(a, "ledger");
    sw_err_clear(&e);
    ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX - 1);
    exe[n > 0 ? n : 0] = '\0';
    *ledger_out = NULL;
    if (!realpath(fleet_path, fleet)) {
        sw_err_set(&e, SW_ENOENT, "%s: %s", fleet_path, strerror(errno));
        return sw_cli_fail(&e, a->json);
    }
    if (!lp)
        return 0;
    if (!realpath(lp, ledger)) {
        /* not there yet (watch creates it): its directory's real path and its name */
        char dir[PATH_MAX], copy[PATH_MAX];
        snprintf(copy, sizeof(copy), "%s", lp);
        char *slash = strrchr(copy, '/');
        const char *base = slash ? slash + 1 : copy;
        if (slash)
            *slash = '\0';
        if (errno != ENOENT || !*base || !realpath(slash ? (copy[0] ? copy : "/") : ".", dir) ||
            (size_t)snprintf(ledger, PATH_MAX, "%s/%s", strcmp(dir, "/") ? dir : "", base) >=
                PATH_MAX) {
            sw_err_set(&e, SW_ENOENT, "%s: %s", lp, strerror(errno ? errno : ENAMETOOLONG));
            return sw_cli_fail(&e, a->json);
        }
    }
    *ledger_out = ledger;
    return 0;
}
