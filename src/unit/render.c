/*
 * unit/render: an endpoint's systemd service and environment file, from its one plan
 * (include/slipway/unit.h says what is rendered and why). Each relationship the operator learnt
 * the hard way is rendered with its reason as a comment line in the unit:
 *   - StartLimitIntervalSec/StartLimitBurst in [Unit] (in [Service] systemd ignores them and
 *     logs "Unknown key" on every load);
 *   - Restart from the engine's exit behaviour (vLLM's API server exits 0 when its engine dies;
 *     `podman wait` exits 0 whatever the container did);
 *   - TimeoutStopSec above `podman stop -t` plus a margin and above the engine's drain
 *     (systemd's 90 s default cut a 120 s grace short and logged every stop as failed);
 *   - the engine's paths in the container's view; secrets only in the env file.
 *
 * What it does not do: lint, install, start (unit_lint.h, deploy).
 */
#include "render_internal.h"

#include <slipway/engine.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define STOP_MARGIN_MS  10000u /* a stop timeout must exceed the grace by at least this */
#define STOP_DEFAULT_MS 60000u /* the default adds this to the grace (native: to the drain) */
#define START_PULL_MS   900000u

static int warn(struct sw_unit_render *r, const char *fmt, ...) SW_PRINTF(2, 3);
static int warn(struct sw_unit_render *r, const char *fmt, ...)
{
    char t[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof(t), fmt, ap);
    va_end(ap);
    char **w = sw_realloc(r->warnings, (r->n_warnings + 1) * sizeof(*w));
    if (!w)
        return SW_ENOMEM;
    r->warnings = w;
    w[r->n_warnings] = sw_strdup(t);
    if (!w[r->n_warnings])
        return SW_ENOMEM;
    r->n_warnings++;
    return 0;
}

/* "180" for whole seconds, "1500ms" otherwise: what systemd's time settings read. */
static const char *sd_time(uint64_t ms, char *out, size_t n)
{
    if (ms % 1000)
        snprintf(out, n, "%llums", (unsigned long long)ms);
    else
        snprintf(out, n, "%llu", (unsigned long long)(ms / 1000));
    return out;
}

/* One Exec*= line. `spec` (may be NULL) is the one argument written as is: the env file's path,
 * whose %h systemd must expand (every other '%' is doubled). */
static int exec_line(struct sw_buf *b, const char *key, const char *prefix, char *const *argv,
                     size_t argc, const char *spec)
{
    int rc = sw_buf_printf(b, "%s=%s", key, prefix);
    for (size_t i = 0; i < argc && !rc; i++) {
        if (i)
            rc = sw_buf_putc(b, ' ');
        if (!rc && spec && !strcmp(argv[i], spec))
            rc = sw_buf_puts(b, spec);
        else if (!rc)
            rc = sw__unit_exec_quote(b, argv[i]);
    }
    if (!rc)
        rc = sw_buf_putc(b, '\n');
    return rc;
}

/* A value both systemd's EnvironmentFile= and podman's --env-file read verbatim. */
static bool env_value_plain(const char *v)
{
    size_t n = strlen(v);
    if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        return false;
    if (n && (v[0] == '"' || v[0] == '\''))
        return false;
    return !strpbrk(v, "\n\r\\$");
}

/* Is "NAME=VALUE" of the plan's env a literal of the fleet (else it is a secret's value)? */
static bool env_literal(const struct sw_fleet_endpoint *ep, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        return false;
    for (size_t i = 0; i < ep->n_env; i++) {
        const struct sw_fleet_envvar *v = &ep->env[i];
        if (v->secret.kind == SW_FLEET_SECRET_NONE && v->value &&
            strlen(v->name) == (size_t)(eq - kv) && !strncmp(v->name, kv, (size_t)(eq - kv)) &&
            !strcmp(v->value, eq + 1))
            return true;
    }
    return false;
}

static int env_file(struct sw_unit_render *r, const struct sw_fleet *f,
                    const struct sw_engine_cmd *cmd, const struct sw__unit_strv *devenv,
                    struct sw__unit_strv *secrets, struct sw_err *e)
{
    struct sw_buf t, s;
    sw_buf_init(&t, 1 << 20);
    sw_buf_init(&s, 1 << 20);
    /* the fleet file's path is any bytes a file name may hold: escaped, never a line of its own
     * (an LF in it would give EnvironmentFile= a NAME=value) */
    int rc = sw_buf_printf(&t, "# slipway render: the environment of endpoint %s (", r->ep->name);
    if (!rc)
        rc = sw_buf_line(&t, f && f->path ? f->path : "(fleet)");
    if (!rc)
        rc = sw_buf_puts(&t, "). Mode 0600: it may hold secrets.\n");
    if (!rc)
        rc = sw_buf_puts(&s, sw_buf_cstr(&t));
    for (size_t pass = 0; pass < 2 && !rc; pass++) {
        char *const *v = pass ? cmd->env : devenv->v;
        size_t n = pass ? cmd->envc : devenv->n;
        for (size_t i = 0; i < n && !rc; i++) {
            const char *kv = v[i];
            const char *eq = strchr(kv, '=');
            if (!eq || eq == kv) {
                rc = sw_err_set(e, SW_EINVAL, "endpoints.%s: the plan's environment holds '%s'",
                                r->ep->name, kv);
                break;
            }
            bool secret = pass && !env_literal(r->ep, kv);
            if (!env_value_plain(eq + 1)) {
                rc = sw_fleet_err_at(e, SW_EINVAL, &r->ep->at,
                                     "endpoints.%s: environment variable %.*s has a value "
                                     "(quotes, a backslash, '$', a newline or edge blanks) that "
                                     "systemd's EnvironmentFile and podman's --env-file do not "
                                     "both read verbatim",
                                     r->ep->name, (int)(eq - kv), kv);
                break;
            }
            rc = sw_buf_printf(&t, "%s\n", kv);
            if (!rc)
                rc = secret ? sw_buf_printf(&s, "%.*s=***\n", (int)(eq - kv), kv)
                            : sw_buf_printf(&s, "%s\n", kv);
            if (!rc && secret && eq[1])
                sw__unit_strv_push(secrets, eq + 1);
            if (!rc)
                rc = secrets->rc;
        }
    }
    if (!rc) {
        r->env.len = t.len;
        r->env.text = sw_buf_steal(&t);
        r->env.shown = sw_buf_steal(&s);
        r->env.mode = 0600;
        snprintf(r->env.name, sizeof(r->env.name), "%s.env", r->name);
        if (!r->env.text || !r->env.shown)
            rc = SW_ENOMEM;
    }
    if (t.data)
        memset(t.data, 0, t.len);
    sw_buf_free(&t);
    sw_buf_free(&s);
    return rc;
}

static bool has_gpu(const struct sw_fleet_endpoint *ep)
{
    for (size_t i = 0; i < ep->n_devices; i++)
        if (!ep->devices[i]->vendor.v || strcmp(ep->devices[i]->vendor.v, "cpu"))
            return true;
    return false;
}

/* The numbers: the fleet's service:/runtime: over the engine's defaults, relationships checked
 * at the fleet positions. */
static int timing(struct sw_unit_render *r, const struct sw__unit_defaults *d, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_fleet_service *sv = &ep->service;
    const struct sw_fleet_runtime *rt = &ep->runtime;
    struct sw_unit_timing *t = &r->timing;
    bool container = r->runtime != SW_FLEET_RUNTIME_NATIVE;
    t->drain_ms = d->drain_ms;
    t->restart_always = d->restart_always || container;
    if (container)
        t->stop_grace_ms = rt->stop_grace_ms.set ? rt->stop_grace_ms.v : d->drain_ms + 30000;
    uint64_t floor = container ? t->stop_grace_ms : t->drain_ms;
    t->stop_timeout_ms = sv->stop_timeout_ms.set ? sv->stop_timeout_ms.v : floor + STOP_DEFAULT_MS;
    if (container && rt->stop_grace_ms.set && rt->stop_grace_ms.v < d->drain_ms) {
        int rc =
            warn(r,
                 "runtime.stop_grace %llus is below %s's drain (%llus): `%s stop` may "
                 "kill the engine before it finishes what it serves",
                 (unsigned long long)(rt->stop_grace_ms.v / 1000), sw_fleet_engine_name(ep->engine),
                 (unsigned long long)(d->drain_ms / 1000), sw_fleet_runtime_name(r->runtime));
        if (rc)
            return rc;
    }
    if (sv->stop_timeout_ms.set) {
        if (container && t->stop_timeout_ms < t->stop_grace_ms + STOP_MARGIN_MS)
            return sw_fleet_err_at(
                e, SW_EINVAL, &sv->stop_timeout_ms.at,
                "endpoints.%s.service.stop_timeout %llus must exceed the container's stop grace "
                "(`%s stop -t %llu`) by at least %us: systemd would cut the graceful stop short "
                "and log it as failed",
                ep->name, (unsigned long long)(t->stop_timeout_ms / 1000),
                sw_fleet_runtime_name(r->runtime), (unsigned long long)(t->stop_grace_ms / 1000),
                STOP_MARGIN_MS / 1000);
        if (t->stop_timeout_ms <= t->drain_ms)
            return sw_fleet_err_at(e, SW_EINVAL, &sv->stop_timeout_ms.at,
                                   "endpoints.%s.service.stop_timeout %llus must exceed %s's "
                                   "drain (%llus)",
                                   ep->name, (unsigned long long)(t->stop_timeout_ms / 1000),
                                   sw_fleet_engine_name(ep->engine),
                                   (unsigned long long)(t->drain_ms / 1000));
    }
    bool gpu = has_gpu(ep);
    t->restart_sec_ms = sv->restart_sec_ms.set ? sv->restart_sec_ms.v
                        : gpu                  ? d->restart_gpu_ms
                                               : 5000;
    if (gpu && sv->restart_sec_ms.set && sv->restart_sec_ms.v < 5000) {
        int rc = warn(r,
                      "service.restart_sec %llums: a GPU engine's memory may not be released "
                      "yet when the next boot allocates",
                      (unsigned long long)sv->restart_sec_ms.v);
        if (rc)
            return rc;
    }
    t->start_timeout_ms = container ? START_PULL_MS : 0;
    t->start_limit_interval_ms =
        sv->start_limit_interval_ms.set ? sv->start_limit_interval_ms.v : 0;
    t->start_limit_burst = sv->start_limit_burst.set ? sv->start_limit_burst.v : 5;
    t->memory_max = sv->memory_max.set ? sv->memory_max.v : 0;
    if (sv->oom_score_adjust.set) {
        t->oom_set = true;
        t->oom_score_adjust = sv->oom_score_adjust.v;
    } else if (r->scope == SW_FLEET_SCOPE_SYSTEM) {
        t->oom_set = true;
        t->oom_score_adjust = -500; /* the operator's: the endpoint outlives its neighbours */
    }
    return 0;
}

static int service_text(struct sw_unit_render *r, const struct sw_fleet *f,
                        const struct sw__unit_defaults *d)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    const struct sw_unit_timing *t = &r->timing;
    bool container = r->runtime != SW_FLEET_RUNTIME_NATIVE;
    bool user = r->scope == SW_FLEET_SCOPE_USER;
    const char *rt = sw_fleet_runtime_name(r->runtime);
    char a[32], b2[32];
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    int rc = sw_buf_printf(&b, "# slipway render: endpoint %s of ", ep->name);
    rc = rc ? rc : sw_buf_line(&b, f && f->path ? f->path : "(fleet)");
    rc = rc ? rc
            : sw_buf_puts(&b, ". Change the fleet file and render again rather than editing "
                              "this.\n");
    rc = rc ? rc : sw_buf_puts(&b, "[Unit]\n");
    rc = rc ? rc
            : sw_buf_printf(&b, "Description=slipway endpoint %s (%s, %s%s%s)\n", ep->name,
                            sw_fleet_engine_name(ep->engine), rt, ep->host ? ", host " : "",
                            ep->host ? ep->host->name : "");
    if (!user)
        rc =
            rc ? rc : sw_buf_puts(&b, "After=network-online.target\nWants=network-online.target\n");
    else
        rc = rc ? rc
                : sw_buf_puts(&b, "# A user manager has no network-online.target: none is "
                                  "waited for.\n");
    rc = rc ? rc
            : sw_buf_puts(&b, "# Start limits are [Unit] settings (in [Service] systemd ignores "
                              "them and logs \"Unknown key\"). An interval of 0 never stops "
                              "restarting.\n");
    rc = rc ? rc
            : sw_buf_printf(&b, "StartLimitIntervalSec=%s\nStartLimitBurst=%llu\n",
                            sd_time(t->start_limit_interval_ms, a, sizeof(a)),
                            (unsigned long long)t->start_limit_burst);
    rc = rc ? rc : sw_buf_puts(&b, "\n[Service]\nType=exec\n");
    rc = rc ? rc : sw_buf_printf(&b, "EnvironmentFile=%s\n", r->env_path);
    if (ep->service.user.v)
        rc = rc ? rc : sw_buf_printf(&b, "User=%s\n", ep->service.user.v);
    if (container && d->restart_always)
        rc = rc ? rc
                : sw_buf_printf(&b,
                                "# Restart=always: %s; and the main process `%s wait` exits 0 "
                                "whatever the container did.\n",
                                d->restart_why, rt);
    else if (container)
        rc = rc ? rc
                : sw_buf_printf(&b,
                                "# Restart=always: the main process `%s wait` exits 0 whatever "
                                "the container did (%s).\n",
                                rt, d->restart_why);
    else
        rc = rc ? rc
                : sw_buf_printf(&b, "# Restart=%s: %s.\n",
                                t->restart_always ? "always" : "on-failure", d->restart_why);
    rc = rc ? rc : sw_buf_printf(&b, "Restart=%s\n", t->restart_always ? "always" : "on-failure");
    rc = rc ? rc
            : sw_buf_printf(&b,
                            "# RestartSec: time for the driver to release a dead engine's device "
                            "memory before the next boot allocates.\nRestartSec=%s\n",
                            sd_time(t->restart_sec_ms, a, sizeof(a)));
    if (container)
        rc = rc ? rc
                : sw_buf_printf(&b,
                                "# TimeoutStopSec %s > `%s stop -t %llu` + %us, and > %s's drain "
                                "(%llus): a stop is never cut short and logged as failed.\n",
                                sd_time(t->stop_timeout_ms, a, sizeof(a)), rt,
                                (unsigned long long)(t->stop_grace_ms / 1000),
                                STOP_MARGIN_MS / 1000, sw_fleet_engine_name(ep->engine),
                                (unsigned long long)(t->drain_ms / 1000));
    else
        rc = rc ? rc
                : sw_buf_printf(&b, "# TimeoutStopSec %s > %s's drain after SIGTERM (%llus).\n",
                                sd_time(t->stop_timeout_ms, a, sizeof(a)),
                                sw_fleet_engine_name(ep->engine),
                                (unsigned long long)(t->drain_ms / 1000));
    rc = rc ? rc
            : sw_buf_printf(&b, "TimeoutStopSec=%s\n", sd_time(t->stop_timeout_ms, a, sizeof(a)));
    if (container)
        rc = rc ? rc
                : sw_buf_printf(&b,
                                "# TimeoutStartSec covers `%s run` pulling the image.\n"
                                "TimeoutStartSec=%s\n",
                                rt, sd_time(t->start_timeout_ms, b2, sizeof(b2)));
    rc = rc ? rc
            : sw_buf_puts(&b, "# KillMode=mixed: SIGTERM to the main process only (it drains), "
                              "SIGKILL to what is left at the timeout.\nKillMode=mixed\n");
    if (t->oom_set)
        rc = rc ? rc : sw_buf_printf(&b, "OOMScoreAdjust=%lld\n", (long long)t->oom_score_adjust);
    if (t->memory_max)
        rc = rc ? rc
                : sw_buf_printf(&b,
                                "# MemoryMax: the kernel's OOM killer ends the engine when it "
                                "passes %s (Result=oom-kill); a worst-case request that grows it "
                                "past this fails the deploy, not the host.\nMemoryMax=%llu\n",
                                sw_fmt_bytes(t->memory_max, a, sizeof(a)),
                                (unsigned long long)t->memory_max);
    if (!container)
        rc = rc ? rc : sw_buf_puts(&b, "LimitNOFILE=65536\n");
    /* a user manager cannot raise its hard memlock limit: the unit would fail to start */
    if (!container && !user)
        rc = rc ? rc : sw_buf_puts(&b, "LimitMEMLOCK=infinity\n");
    if (container) {
        const char *prog = sw__unit_runtime_path(r->runtime);
        char *rm[] = {(char *)prog, "rm", "-f", r->name};
        char *wt[] = {(char *)prog, "wait", r->name};
        rc = rc ? rc
                : sw_buf_puts(&b, "# A container of an earlier run would block the name: "
                                  "removed first (a failure is ignored).\n");
        rc = rc ? rc : exec_line(&b, "ExecStartPre", "-", rm, 4, NULL);
        rc = rc ? rc
                : exec_line(&b, "ExecStartPre", "", r->container_argv, r->container_argc,
                            r->env_path);
        rc = rc ? rc
                : sw_buf_printf(&b,
                                "# The main process waits on the container (the operator's "
                                "`exec %s wait`): its death ends the service and trips the "
                                "restart.\n",
                                rt);
        rc = rc ? rc : exec_line(&b, "ExecStart", "", wt, 3, NULL);
        rc = rc ? rc : exec_line(&b, "ExecStop", "", r->stop_argv, r->stop_argc, NULL);
        rc = rc ? rc : exec_line(&b, "ExecStopPost", "-", rm, 4, NULL);
    } else {
        rc = rc ? rc : exec_line(&b, "ExecStart", "", r->engine_argv, r->engine_argc, NULL);
    }
    rc = rc ? rc
            : sw_buf_printf(&b, "\n[Install]\nWantedBy=%s\n",
                            user ? "default.target" : "multi-user.target");
    if (!rc) {
        r->service.len = b.len;
        r->service.text = sw_buf_steal(&b);
        r->service.shown = r->service.text ? sw_strdup(r->service.text) : NULL;
        r->service.mode = 0644;
        snprintf(r->service.name, sizeof(r->service.name), "%s.service", r->name);
        if (!r->service.text || !r->service.shown)
            rc = SW_ENOMEM;
    }
    sw_buf_free(&b);
    return rc;
}

int sw_unit_render_endpoint(const struct sw_fleet *f, const struct sw_fleet_endpoint *ep,
                            struct sw_unit_render *out, struct sw_err *e)
{
    struct sw_plan plan;
    struct sw_err pe;
    struct sw__unit_strv eng = {0}, devenv = {0}, secrets = {0}, stop = {0};
    struct sw__unit_defaults d;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    memset(&plan, 0, sizeof(plan));
    sw_err_clear(&pe);
    if (!ep)
        return sw_err_set(e, SW_EINVAL, "no endpoint to render");
    out->ep = ep;
    out->runtime = ep->runtime.kind ? ep->runtime.kind : SW_FLEET_RUNTIME_NATIVE;
    out->scope = ep->service.scope ? ep->service.scope : SW_FLEET_SCOPE_SYSTEM;
    out->image = ep->image.v;
    out->image_pinned = ep->image_pinned;
    bool container = out->runtime != SW_FLEET_RUNTIME_NATIVE;
    if ((size_t)snprintf(out->name, sizeof(out->name), "%s",
                         ep->service.name.v ? ep->service.name.v : ep->name) >= sizeof(out->name))
        return sw_err_set(e, SW_ERANGE, "endpoints.%s: unit name too long", ep->name);
    if (out->scope == SW_FLEET_SCOPE_USER)
        snprintf(out->env_path, sizeof(out->env_path), "%%h/.config/slipway/%s.env", out->name);
    else
        snprintf(out->env_path, sizeof(out->env_path), "/etc/slipway/%s.env", out->name);
    if (container && !ep->image.v)
        return sw_fleet_err_at(e, SW_EINVAL, &ep->runtime.at,
                               "endpoints.%s: runtime %s needs an image", ep->name,
                               sw_fleet_runtime_name(out->runtime));

    /* the one plan: its argv/env is what the unit runs */
    long failed = sw_alloc_failures();
    int prc = sw_plan_endpoint(f, ep, NULL, &plan, &pe);
    /* the plan's law may report its own out-of-memory as a parse error (jansson says "invalid
     * JSON"), or not at all (a vLLM plan returns 0 after some failed allocations): an allocation
     * that failed meanwhile decides */
    if (sw_alloc_failures() != failed)
        prc = SW_ENOMEM;
    if (prc == SW_ENOMEM || !plan.cmd.argc) {
        if (prc && (prc == SW_ENOMEM || !plan.cmd_why[0])) {
            rc = prc;
            if (e)
                *e = pe;
        } else {
            rc = sw_err_set(e, prc ? prc : SW_EUNSUPPORTED,
                            "endpoints.%s: the plan has no command line%s%s", ep->name,
                            plan.cmd_why[0] ? ": " : "", plan.cmd_why);
        }
        goto out;
    }
    sw__unit_defaults(ep->engine, &d);
    rc = timing(out, &d, e);
    if (rc)
        goto out;
    rc = sw__unit_engine_argv(ep, &plan.cmd, &eng, e);
    if (rc)
        goto out;
    if (!container && eng.n && !strcmp(eng.v[0], "llama-server") && !ep->binary.v && ep->host &&
        ep->host->transport == SW_FLEET_LOCAL) {
        /* a local endpoint without `binary:` runs what `slipway up` would run here */
        char bin[4096];
        if (sw_engine_llamacpp_find_server(bin, sizeof(bin), NULL)) {
            char *dup = sw_strdup(bin);
            if (!dup) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
                goto out;
            }
            sw_free(eng.v[0]);
            eng.v[0] = dup;
        }
    }
    if (!container && eng.n && eng.v[0][0] != '/') {
        rc = warn(out,
                  "the engine's program '%s' is not an absolute path: systemd looks it up "
                  "in its own search path, not the operator's $PATH",
                  eng.v[0]);
        if (rc)
            goto out;
    }
    if (container && !ep->image_pinned) {
        rc = warn(out,
                  "image %s is not pinned by digest: the unit runs whatever the tag names "
                  "at the next pull; pin it as NAME@sha256:<digest>",
                  ep->image.v);
        if (rc)
            goto out;
    }
    rc = sw__unit_device_env(ep, out->runtime, &plan.cmd, &devenv);
    if (rc)
        goto out;
    rc = env_file(out, f, &plan.cmd, &devenv, &secrets, e);
    if (rc)
        goto out;
    if (container) {
        uint64_t shm = ep->runtime.shm_size.set ? ep->runtime.shm_size.v : d.shm_bytes;
        rc = sw__unit_container_argv(out, &eng, shm, e);
        if (rc)
            goto out;
        sw__unit_strv_push(&stop, sw__unit_runtime_path(out->runtime));
        sw__unit_strv_push(&stop, "stop");
        sw__unit_strv_push(&stop, "-t");
        sw__unit_strv_pushf(&stop, "%llu", (unsigned long long)(out->timing.stop_grace_ms / 1000));
        sw__unit_strv_push(&stop, out->name);
        if (stop.rc) {
            rc = stop.rc;
            goto out;
        }
        out->stop_argv = stop.v;
        out->stop_argc = stop.n;
        stop.v = NULL;
        stop.n = 0;
    }
    out->engine_argv = eng.v;
    out->engine_argc = eng.n;
    eng.v = NULL;
    eng.n = 0;
    rc = service_text(out, f, &d);
    if (rc)
        goto out;
    /* The guarantee, checked rather than assumed: no secret value in the unit's text. */
    for (size_t i = 0; i < secrets.n; i++) {
        if (strlen(secrets.v[i]) >= SW_REDACT_MIN && strstr(out->service.text, secrets.v[i])) {
            rc = sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                                 "endpoints.%s: a secret of the environment would appear in the "
                                 "unit's command lines; refusing to render it",
                                 ep->name);
            goto out;
        }
    }
out:
    for (size_t i = 0; i < secrets.n; i++)
        memset(secrets.v[i], 0, strlen(secrets.v[i]));
    sw__unit_strv_free(secrets.v, secrets.n);
    sw__unit_strv_free(eng.v, eng.n);
    sw__unit_strv_free(devenv.v, devenv.n);
    sw__unit_strv_free(stop.v, stop.n);
    sw_plan_free(&plan);
    if (rc == SW_ENOMEM && e && !e->msg[0])
        sw_err_set(e, rc, "out of memory rendering endpoint %s", ep->name);
    return rc;
}

static void file_free(struct sw_unit_file *f)
{
    if (f->text)
        memset(f->text, 0, f->len);
    sw_free(f->text);
    sw_free(f->shown);
    memset(f, 0, sizeof(*f));
}

void sw_unit_render_free(struct sw_unit_render *r)
{
    if (!r)
        return;
    file_free(&r->service);
    file_free(&r->env);
    sw__unit_strv_free(r->engine_argv, r->engine_argc);
    sw__unit_strv_free(r->container_argv, r->container_argc);
    sw__unit_strv_free(r->stop_argv, r->stop_argc);
    sw__unit_strv_free(r->warnings, r->n_warnings);
    memset(r, 0, sizeof(*r));
}
