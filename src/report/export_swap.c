/*
 * report/export_swap: llama-swap configs, one per host (llama-swap starts its models on its own
 * machine), every engine: llama-server, vLLM and SGLang through the command lines the render runs
 * (a container's `podman run` in the foreground). Keys as llama-swap documents them: models.*.cmd
 * (required; split the way a shell splits it; ${PORT} is its per-model port), cmdStop, env (a
 * list of "NAME=value"), proxy, checkEndpoint, ttl (seconds idle before unloading; 0 never),
 * aliases; healthCheckTimeout at the top (seconds, minimum 15).
 *
 * What it deliberately does not do: write files (the CLI does, atomically), or put a secret's
 * value anywhere: a secret is named in a comment, to be set in llama-swap's own environment.
 */
#include "report_internal.h"

#include <slipway/engine.h>
#include <slipway/unit.h>

#include <string.h>

/* One argument as a POSIX shell word (llama-swap splits cmd the way a shell would). */
static int shword(struct sw_buf *b, const char *s)
{
    bool plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%",
                       *p) != NULL ||
                (*p == '$' && !strcmp(s, "${PORT}")) || (*p == '{' || *p == '}');
    if (plain)
        return sw_buf_puts(b, s);
    int rc = sw_buf_putc(b, '\'');
    for (; !rc && *s; s++)
        rc = *s == '\'' ? sw_buf_puts(b, "'\\''") : sw_buf_putc(b, *s);
    return rc ? rc : sw_buf_putc(b, '\'');
}

static bool literal_env(const struct sw_fleet_endpoint *ep, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t n = eq ? (size_t)(eq - kv) : strlen(kv);
    for (size_t i = 0; i < ep->n_env; i++)
        if (strlen(ep->env[i].name) == n && !strncmp(ep->env[i].name, kv, n))
            return ep->env[i].value != NULL && ep->env[i].secret.kind == SW_FLEET_SECRET_NONE;
    return false;
}

/* The devices an engine is pinned to: written, never a secret. */
static bool device_env(const char *kv)
{
    static const char *const names[] = {
        "CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES=", "ROCR_VISIBLE_DEVICES=",
        "GPU_DEVICE_ORDINAL=", "ONEAPI_DEVICE_SELECTOR="};
    for (size_t i = 0; i < SW_ARRAY_LEN(names); i++)
        if (!strncmp(kv, names[i], strlen(names[i])))
            return true;
    return false;
}

/* argv as one shell line, the engine's --port value as ${PORT}; a container run in the
 * foreground (-d dropped, --rm added) so llama-swap owns the process. */
static int cmd_line(struct sw_buf *c, char *const *argv, size_t argc, bool container)
{
    int rc = 0;
    bool first = true;
    for (size_t k = 0; k < argc && !rc; k++) {
        const char *a = argv[k];
        if (container && !strcmp(a, "-d"))
            a = "--rm";
        bool port = k > 0 && !strcmp(argv[k - 1], "--port");
        if (!first)
            rc = sw_buf_putc(c, ' ');
        first = false;
        if (!rc && !strncmp(a, "--port=", 7))
            rc = sw_buf_puts(c, "--port=${PORT}");
        else if (!rc)
            rc = shword(c, port ? "${PORT}" : a);
    }
    return rc;
}

/* The "NAME=VALUE" lines of a rendered env file. */
static int env_lines(const char *text, const struct sw_fleet_endpoint *ep, struct sw_buf *m,
                     bool *envs)
{
    int rc = 0;
    for (const char *p = text; p && *p && !rc;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char kv[4096];
        snprintf(kv, sizeof(kv), "%.*s", (int)(n < sizeof(kv) ? n : sizeof(kv) - 1), p);
        p += n + (nl ? 1 : 0);
        if (!kv[0] || kv[0] == '#' || !strchr(kv, '='))
            continue;
        if (!literal_env(ep, kv) && !device_env(kv)) {
            rc = sw_buf_printf(m,
                               "    # %.*s: not written here (a secret or derived value): set "
                               "it in llama-swap's environment\n",
                               (int)(strchr(kv, '=') - kv), kv);
            continue;
        }
        if (!*envs)
            rc = sw_buf_puts(m, "    env:\n");
        *envs = true;
        if (!rc)
            rc = sw_buf_puts(m, "      - ");
        if (!rc)
            rc = sw_buf_yaml_str(m, kv);
        if (!rc)
            rc = sw_buf_putc(m, '\n');
    }
    return rc;
}

static int one_model(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep, struct sw_buf *m,
                     struct sw_err *e)
{
    struct sw_unit_render r;
    struct sw_err re;
    sw_err_clear(&re);
    memset(&r, 0, sizeof(r));
    int rc = sw_unit_render_endpoint(f, ep, &r, &re);
    if (rc == SW_ENOMEM) {
        sw_unit_render_free(&r);
        return sw_err_set(e, rc, "out of memory");
    }
    struct sw_plan p;
    memset(&p, 0, sizeof(p));
    bool container = !rc && r.container_argc > 0;
    if (rc) {
        /* the render needs what this machine may not have (a secret): the plan's argv */
        struct sw_err pe;
        sw_err_clear(&pe);
        int prc = sw_plan_endpoint(f, ep, NULL, &p, &pe);
        if (prc == SW_ENOMEM || !p.cmd.argc) {
            sw_plan_free(&p);
            sw_unit_render_free(&r);
            return sw_err_set(e, prc ? prc : SW_EINVAL, "%s: no command line to export: %s",
                              ep->name, rc ? re.msg : pe.msg);
        }
    }
    struct sw_buf c;
    sw_buf_init(&c, 1u << 20);
    rc = sw_buf_printf(m, "  %s:\n", ep->name);
    if (!rc && p.cmd.argc)
        rc = sw_buf_printf(m,
                           "    # the plan's command line: the render needs what is not here "
                           "(%s)\n",
                           re.msg);
    if (!rc)
        rc = container    ? cmd_line(&c, r.container_argv, r.container_argc, true)
             : p.cmd.argc ? cmd_line(&c, p.cmd.argv, p.cmd.argc, false)
                          : cmd_line(&c, r.engine_argv, r.engine_argc, false);
    if (!rc)
        rc = sw_buf_puts(m, "    cmd: ");
    if (!rc)
        rc = sw_buf_yaml_str(m, sw_buf_cstr(&c));
    if (!rc && container && r.stop_argc) {
        sw_buf_reset(&c);
        rc = cmd_line(&c, r.stop_argv, r.stop_argc, false);
        if (!rc)
            rc = sw_buf_puts(m, "\n    cmdStop: ");
        if (!rc)
            rc = sw_buf_yaml_str(m, sw_buf_cstr(&c));
    }
    sw_buf_free(&c);
    if (!rc)
        rc = sw_buf_puts(m, "\n    proxy: \"http://127.0.0.1:${PORT}\"\n"
                            "    checkEndpoint: /health\n    ttl: 0\n");
    if (!rc && ep->alias.v && strcmp(ep->alias.v, ep->name)) {
        rc = sw_buf_puts(m, "    aliases:\n      - ");
        if (!rc)
            rc = sw_buf_yaml_str(m, ep->alias.v);
        if (!rc)
            rc = sw_buf_putc(m, '\n');
    }
    bool envs = false;
    if (!rc && !p.cmd.argc)
        rc = env_lines(r.env.text, ep, m, &envs);
    for (size_t k = 0; k < p.cmd.envc && !rc; k++) {
        char line[4096];
        snprintf(line, sizeof(line), "%s\n", p.cmd.env[k]);
        rc = env_lines(line, ep, m, &envs);
    }
    sw_plan_free(&p);
    sw_unit_render_free(&r);
    if (rc && e && !e->code)
        sw_err_set(e, rc, "out of memory");
    return rc;
}

int sw_export_llama_swap_host(const struct sw_fleet *f, const char *host,
                              const struct sw_report_opts *o, struct sw_buf *out, struct sw_err *e)
{
    int rc = 0;
    int64_t slowest = 0;
    size_t n = 0;
    struct sw_buf m;
    sw_buf_init(&m, 16u << 20);
    for (size_t i = 0; i < f->n_endpoints && !rc; i++) {
        const struct sw_fleet_endpoint *ep = &f->endpoints[i];
        if (!ep->enabled || !ep->host || strcmp(ep->host->name, host))
            continue;
        int64_t ms = 0;
        rc = sw_report_boot_ms(o ? o->ledger : NULL, ep->name, &ms, e);
        if (ms > slowest)
            slowest = ms;
        if (!rc)
            rc = one_model(f, ep, &m, e);
        n++;
    }
    if (!rc) {
        /* the slowest measured boot with half again as margin; llama-swap's own default (120 s)
         * is shorter than a cold load of a large model, hence a stated 300 without a measurement */
        int64_t secs = slowest > 0 ? (slowest * 3 / 2 + 999) / 1000 : 300;
        if (secs < 15)
            secs = 15; /* llama-swap's documented minimum */
        rc = sw_buf_puts(out, "# llama-swap config for host ");
        if (!rc)
            rc = sw_buf_line(out, host);
        if (!rc)
            rc = sw_buf_puts(out, ", written by slipway from ");
        if (!rc)
            rc = sw_buf_line(out, f->path ? f->path : "(fleet)");
        if (!rc)
            rc = sw_buf_printf(out,
                               "; do not edit by hand:\n"
                               "# `slipway export llama-swap` writes it again from the fleet.\n"
                               "# healthCheckTimeout: %s\n"
                               "healthCheckTimeout: %lld\n"
                               "models:%s\n",
                               slowest > 0 ? "1.5 x the slowest measured boot in the ledger"
                                           : "no boot time measured in the ledger: a stated 300 s",
                               (long long)secs, n ? "" : " {}");
        if (!rc)
            rc = sw_buf_append(out, m.data ? m.data : "", m.len);
    }
    sw_buf_free(&m);
    if (rc && e && !e->code)
        sw_err_set(e, rc, "out of memory");
    return rc;
}

int sw_export_llama_swap(const struct sw_fleet *f, const struct sw_report_opts *o,
                         struct sw_buf *out, struct sw_err *e)
{
    int rc = 0;
    size_t docs = 0;
    for (size_t h = 0; h < f->n_hosts && !rc; h++) {
        bool any = false;
        for (size_t i = 0; i < f->n_endpoints; i++)
            any |= f->endpoints[i].enabled && f->endpoints[i].host == &f->hosts[h];
        if (!any)
            continue;
        if (docs++)
            rc = sw_buf_puts(out, "---\n");
        if (!rc)
            rc = sw_export_llama_swap_host(f, f->hosts[h].name, o, out, e);
    }
    if (!rc && !docs)
        rc = sw_buf_puts(out, "# no enabled endpoint in the fleet\nmodels: {}\n");
    return rc;
}
