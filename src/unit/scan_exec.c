/*
 * What a service runs: each Exec assignment split into a command (its prefixes -@+!: read), and
 * each command (or each simple command of its `sh -c '...'`) looked at for a podman/docker `run`
 * (scan_container.c), the engine it starts (scan_engine.c), the `stop -t` grace of an ExecStop,
 * and a `podman wait` that is the service's main process.
 *
 * It does not follow scripts other than an inline `sh -c`, or judge what it finds (the laws do).
 */
#include "scan_internal.h"

#include <ctype.h>
#include <string.h>

static const char *const exec_keys[] = {"ExecStartPre", "ExecStart",  "ExecStartPost", "ExecStop",
                                        "ExecStopPost", "ExecReload", "ExecCondition", NULL};

bool sw__scan_is_exec(const char *k)
{
    for (size_t i = 0; exec_keys[i]; i++)
        if (!strcmp(k, exec_keys[i]))
            return true;
    return false;
}

int sw__scan_cmd(struct sw__scan *s, const struct sw_unit_entry *en)
{
    struct sw_unit *u = s->u;
    const char *v = en->value;
    unsigned prefix = 0;
    for (;; v++) {
        if (*v == '-')
            prefix |= SW_UNIT_EXEC_IGNORE;
        else if (*v == '@')
            prefix |= SW_UNIT_EXEC_ARGV0;
        else if (*v == '+')
            prefix |= SW_UNIT_EXEC_FULLPRIV;
        else if (*v == '!')
            prefix |= SW_UNIT_EXEC_NOAMBIENT;
        else if (*v == ':')
            prefix |= SW_UNIT_EXEC_NOENV;
        else
            break;
    }
    struct sw__words w = {0}, raw = {0};
    int rc = sw__scan_split(s, v, SW__SPLIT_SYSTEMD, !(prefix & SW_UNIT_EXEC_NOENV), &w);
    if (!rc)
        rc = sw__scan_split(s, v, SW__SPLIT_SYSTEMD, false, &raw);
    if (rc)
        return rc;
    if ((prefix & SW_UNIT_EXEC_ARGV0) && w.n >= 2) {
        memmove(w.v + 1, w.v + 2, (w.n - 1) * sizeof(char *));
        w.n--;
    }
    if (w.n == 0)
        return 0;
    rc = sw_region_grow(s->a, &u->cmds, &s->cap_cmds, u->n_cmds, sizeof(*u->cmds),
                        SW__SCAN_COUNT_MAX);
    if (rc)
        return rc;
    struct sw_unit_cmd *c = &u->cmds[u->n_cmds++];
    c->key = en->key;
    c->line = en->line;
    c->prefix = prefix;
    c->argv = w.v;
    c->argc = w.n;
    c->raw = raw.v;
    c->n_raw = raw.n;
    return 0;
}

static bool is_tool(const char *a)
{
    const char *b = sw__scan_base(a);
    return !strcmp(b, "podman") || !strcmp(b, "docker");
}

static bool is_shell(const char *a)
{
    const char *b = sw__scan_base(a);
    return !strcmp(b, "sh") || !strcmp(b, "bash") || !strcmp(b, "dash");
}

static int stop_grace(struct sw__scan *s, char **argv, size_t argc, int line)
{
    struct sw_unit *u = s->u;
    int64_t t = -1;
    for (size_t i = 2; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!strcmp(a, "-t") || !strcmp(a, "--time") || !strcmp(a, "--timeout"))
            val = i + 1 < argc ? argv[++i] : NULL;
        else if (sw__scan_prefix(a, "--time="))
            val = a + 7;
        else if (sw__scan_prefix(a, "--timeout="))
            val = a + 10;
        else if (sw__scan_prefix(a, "-t=") ||
                 (sw__scan_prefix(a, "-t") && isdigit((unsigned char)a[2])))
            val = a + 2 + (a[2] == '=');
        if (val && sw_parse_i64(val, &t, NULL))
            t = -1;
    }
    char how[96];
    if (t >= 0)
        snprintf(how, sizeof(how), "%s stop -t %lld", sw__scan_base(argv[0]), (long long)t);
    else {
        t = 10;
        snprintf(how, sizeof(how), "%s stop without -t: its default 10 s", sw__scan_base(argv[0]));
    }
    if (t > u->stop_grace_s) {
        u->stop_grace_s = t;
        u->stop_grace_line = line;
        snprintf(u->stop_grace_how, sizeof(u->stop_grace_how), "%s", how);
    }
    return 0;
}

static int scan_simple(struct sw__scan *s, const struct sw_unit_cmd *c, char **argv, size_t argc,
                       bool via_shell, bool last)
{
    int rc;
    if (argc && !strcmp(argv[0], "exec")) {
        argv++;
        argc--;
    }
    if (!argc)
        return 0;
    bool start = !strcmp(c->key, "ExecStart");
    if (is_tool(argv[0]) && argc >= 2) {
        size_t i = 1;
        if (!strcmp(argv[1], "container") && argc >= 3)
            i = 2;
        if (!strcmp(argv[i], "run") && (start || !strcmp(c->key, "ExecStartPre"))) {
            rc = sw__scan_run(s, argv, argc, i, c->key, c->line, via_shell);
            if (rc)
                return rc;
            if (s->u->ctr.line != c->line || !s->u->ctr.argv)
                return 0;
            if (!s->u->ctr.entrypoint)
                return sw__scan_engine(s, (char **)s->u->ctr.argv, s->u->ctr.argc, s->u->ctr.image,
                                       c->line);
            /* --entrypoint=PROGRAM IMAGE ARGS: the engine's command line is PROGRAM ARGS */
            size_t n = s->u->ctr.argc + 1;
            char **ev = sw_malloc(n * sizeof(*ev));
            if (!ev)
                return sw_err_set(s->e, SW_ENOMEM, "out of memory");
            ev[0] = (char *)s->u->ctr.entrypoint;
            for (size_t k = 1; k < n; k++)
                ev[k] = (char *)s->u->ctr.argv[k - 1];
            rc = sw__scan_engine(s, ev, n, s->u->ctr.image, c->line);
            sw_free(ev);
            return rc;
        }
        if (!strcmp(argv[i], "wait") && start && last) {
            s->u->wait_line = c->line;
            return 0;
        }
        if (!strcmp(argv[i], "stop") && !strcmp(c->key, "ExecStop"))
            return stop_grace(s, argv + (i - 1), argc - (i - 1), c->line);
        return 0;
    }
    if (start)
        return sw__scan_engine(s, argv, argc, NULL, c->line);
    return 0;
}

int sw__scan_exec(struct sw__scan *s, const struct sw_unit_cmd *c)
{
    if (c->argc >= 3 && is_shell(c->argv[0]) && !strcmp(c->argv[1], "-c")) {
        struct sw__words w = {0};
        int rc = sw__scan_split(s, c->argv[2], SW__SPLIT_SHELL, true, &w);
        if (rc || w.n == 0)
            return rc;
        size_t st = 0;
        for (size_t i = 0; i <= w.n; i++) {
            if (i < w.n && w.v[i][0] != '\1')
                continue;
            /* the last simple command is the main process when the shell execs it */
            rc = scan_simple(s, c, w.v + st, i - st, true, i == w.n);
            if (rc)
                return rc;
            st = i + 1;
        }
        return 0;
    }
    return scan_simple(s, c, c->argv, c->argc, false, true);
}
