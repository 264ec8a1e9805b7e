/*
 * unit/render_container: what a render needs beyond the unit's text: the engine's argv in the
 * container's view (every path argument through the payload mounts), the device environment and
 * the devices per vendor, and the `podman run` / `docker run` argv. Also the small shared pieces
 * (argv building, systemd's quoting, the per-engine defaults).
 *
 * It never builds the engine's argv: that is plan.cmd (the engine adapter's one builder). It
 * translates the paths in it, the way the operator's serve script did once it learnt that a
 * container sees the models tree at /models (51 restarts of "Repo id must be in the form
 * namespace/repo_name").
 */
#include "render_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sw__unit_strv_push(struct sw__unit_strv *s, const char *a)
{
    if (s->rc)
        return;
    char **v = sw_realloc(s->v, (s->n + 2) * sizeof(*v));
    if (!v) {
        s->rc = SW_ENOMEM;
        return;
    }
    s->v = v;
    v[s->n] = sw_strdup(a);
    if (!v[s->n]) {
        v[s->n] = NULL;
        s->rc = SW_ENOMEM;
        return;
    }
    v[++s->n] = NULL;
}

void sw__unit_strv_pushf(struct sw__unit_strv *s, const char *fmt, ...)
{
    char t[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t, sizeof(t), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(t)) {
        if (!s->rc)
            s->rc = SW_ERANGE;
        return;
    }
    sw__unit_strv_push(s, t);
}

void sw__unit_strv_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        sw_free(v[i]);
    sw_free(v);
}

int sw__unit_exec_quote(struct sw_buf *b, const char *arg)
{
    if (!strcmp(arg, ";"))
        return sw_buf_puts(b, "\\;");
    bool quote = !*arg;
    for (const char *p = arg; *p; p++)
        if (strchr(" \"'\\", *p) || (unsigned char)*p < 0x20 || *p == 0x7f)
            quote = true;
    int rc = quote ? sw_buf_putc(b, '"') : 0;
    for (const char *p = arg; *p && !rc; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n' || c == '\r' || c == '\t') {
            rc = sw_buf_puts(b, c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t");
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            rc = sw_buf_printf(b, "\\x%02x", c);
            continue;
        }
        if (c == '%' || c == '$')
            rc = sw_buf_putc(b, *p);
        else if (quote && (c == '"' || c == '\\'))
            rc = sw_buf_putc(b, '\\');
        if (!rc)
            rc = sw_buf_putc(b, *p);
    }
    if (!rc && quote)
        rc = sw_buf_putc(b, '"');
    return rc;
}

/* Why each engine restarts as it does (the comment above Restart=). */
static const char why_llamacpp[] = "llama-server exits non-zero (or by a signal) when it fails, "
                                   "and 0 only when asked to stop";
static const char why_vllm[] = "vLLM's API server exits 0 when its engine core dies (it drains, "
                               "then 'Deactivated successfully'): on-failure would never fire";
static const char why_sglang[] = "an SGLang server whose scheduler dies is not known to exit "
                                 "non-zero: always is the one setting that brings it back";

/* Per engine (llama.cpp and the default, vLLM, SGLang): the drain after SIGTERM, RestartSec on a
 * GPU, /dev/shm, Restart= and why. vLLM: the operator's unit, `podman stop -t 120` and 180 s to
 * stop, "cover the engine's drain with margin" (the API server finishes what it serves, then
 * tears down its engine core and workers); vLLM's and SGLang's tensor-parallel workers exchange
 * through /dev/shm. */
static const struct sw__unit_defaults engine_defaults[] = {
    /* drain_ms, restart_gpu_ms, shm_bytes, restart_why, restart_always */
    {15000, 10000, 1ull << 30, why_llamacpp, false},
    {90000, 30000, 16ull << 30, why_vllm, true},
    {90000, 30000, 16ull << 30, why_sglang, true},
};

void sw__unit_defaults(enum sw_fleet_engine eng, struct sw__unit_defaults *d)
{
    *d = engine_defaults[eng == SW_FLEET_VLLM ? 1 : eng == SW_FLEET_SGLANG ? 2 : 0];
}

const char *sw__unit_runtime_path(enum sw_fleet_runtime_kind k)
{
    return k == SW_FLEET_RUNTIME_DOCKER ? "/usr/bin/docker" : "/usr/bin/podman";
}

static void mounts_text(const struct sw_fleet_endpoint *ep, char *out, size_t n)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < ep->payload.n_mounts && o < n; i++) {
        const struct sw_fleet_mount *m = &ep->payload.mounts[i];
        int w =
            snprintf(out + o, n - o, "%s%s -> %s", i ? ", " : "", m->host_path, m->container_path);
        if (w > 0)
            o += (size_t)w;
    }
    if (!ep->payload.n_mounts)
        snprintf(out, n, "none");
}

/* A path the engine receives, in the container's view, in lexical form (what was checked is what
 * the engine gets: `/models/../etc` lies under no mount of /models). vLLM and SGLang's adapters
 * already translate (their argv holds container paths); llama.cpp's hands host paths. Either way
 * the result must lie inside a mount. */
static int container_path(const struct sw_fleet_endpoint *ep, const char *p, char *out, size_t n,
                          struct sw_err *e)
{
    const struct sw_fleet_mount *best_c = NULL, *best_h = NULL;
    size_t lc = 0, lh = 0;
    for (size_t i = 0; i < ep->payload.n_mounts; i++) {
        const struct sw_fleet_mount *m = &ep->payload.mounts[i];
        size_t l = sw_path_within(p, m->container_path, NULL, 0);
        if (l > lc) {
            best_c = m;
            lc = l;
        }
        l = sw_path_within(p, m->host_path, NULL, 0);
        if (l > lh) {
            best_h = m;
            lh = l;
        }
    }
    bool host_first = ep->engine == SW_FLEET_LLAMACPP;
    if (best_h && (host_first || !best_c)) {
        if (!sw_path_rebase(p, best_h->host_path, best_h->container_path, out, n))
            return sw_err_set(e, SW_ERANGE, "path too long: %s", p);
        return 0;
    }
    if (best_c) {
        if (sw_path_lexical(p, out, n))
            return sw_err_set(e, SW_ERANGE, "path too long: %s", p);
        return 0;
    }
    char ms[1024];
    mounts_text(ep, ms, sizeof(ms));
    const struct sw_fleet_at *at = ep->payload.n_mounts ? &ep->payload.mounts[0].at : &ep->at;
    return sw_fleet_err_at(e, SW_EINVAL, at,
                           "endpoints.%s: the engine receives %s, which is outside every mount "
                           "of its container (mounts: %s): inside the container the path does "
                           "not exist; add a payload mount that covers it",
                           ep->name, p, ms);
}

int sw__unit_engine_argv(const struct sw_fleet_endpoint *ep, const struct sw_engine_cmd *cmd,
                         struct sw__unit_strv *out, struct sw_err *e)
{
    bool container = ep->runtime.kind != SW_FLEET_RUNTIME_NATIVE;
    for (size_t i = 0; i < ep->payload.n_mounts; i++) {
        const struct sw_fleet_mount *m = &ep->payload.mounts[i];
        if (container && m->host_path[0] == '~')
            return sw_fleet_err_at(e, SW_EINVAL, &m->at,
                                   "endpoints.%s: mount %s: neither systemd nor %s expands '~'; "
                                   "give the absolute path on the host",
                                   ep->name, m->host_path, sw_fleet_runtime_name(ep->runtime.kind));
    }
    for (size_t i = 0; i < cmd->argc && !out->rc; i++) {
        const char *a = cmd->argv[i];
        const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
        const char *val = eq ? eq + 1 : a;
        size_t plen = eq ? (size_t)(eq + 1 - a) : 0;
        if (val[0] == '~' && (val[1] == '/' || !val[1]))
            return sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                                   "endpoints.%s: the engine receives %s: systemd does not "
                                   "expand '~'; give the absolute path on %s",
                                   ep->name, a, ep->host ? ep->host->name : "the host");
        if (!container || i == 0 || val[0] != '/') {
            sw__unit_strv_push(out, a);
            continue;
        }
        char p[4096];
        int rc = container_path(ep, val, p, sizeof(p), e);
        if (rc)
            return rc;
        sw__unit_strv_pushf(out, "%.*s%s", (int)plen, a, p);
    }
    return out->rc;
}

static bool env_has(const struct sw_engine_cmd *cmd, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < cmd->envc; i++)
        if (!strncmp(cmd->env[i], name, n) && cmd->env[i][n] == '=')
            return true;
    return false;
}

/* Each device's ordinal for the engine: its declared index, else its position on the host. */
static uint64_t device_index(const struct sw_fleet_device *d)
{
    if (d->index.set)
        return d->index.v;
    return d->host ? (uint64_t)(d - d->host->devices) : 0;
}

static bool vendor_is(const struct sw_fleet_device *d, const char *v)
{
    return d->vendor.v && !strcmp(d->vendor.v, v);
}

/* "0,1" of the endpoint's devices of one vendor; false when it has none. */
static bool index_list(const struct sw_fleet_endpoint *ep, const char *vendor, char *out, size_t n)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < ep->n_devices && o < n; i++) {
        if (!vendor_is(ep->devices[i], vendor))
            continue;
        int w = snprintf(out + o, n - o, "%s%llu", o ? "," : "",
                         (unsigned long long)device_index(ep->devices[i]));
        if (w > 0)
            o += (size_t)w;
    }
    return o > 0;
}

int sw__unit_device_env(const struct sw_fleet_endpoint *ep, enum sw_fleet_runtime_kind rt,
                        const struct sw_engine_cmd *cmd, struct sw__unit_strv *out)
{
    char l[512];
    /* /dev/kfd + /dev/dri give a container every AMD GPU of the host: HIP_VISIBLE_DEVICES picks
     * the endpoint's (same ordinals inside and out). */
    if (index_list(ep, "amd", l, sizeof(l)) && !env_has(cmd, "HIP_VISIBLE_DEVICES"))
        sw__unit_strv_pushf(out, "HIP_VISIBLE_DEVICES=%s", l);
    /* A CDI or --gpus container sees only its GPUs, numbered from 0: no variable there. */
    if (rt == SW_FLEET_RUNTIME_NATIVE && index_list(ep, "nvidia", l, sizeof(l)) &&
        !env_has(cmd, "CUDA_VISIBLE_DEVICES"))
        sw__unit_strv_pushf(out, "CUDA_VISIBLE_DEVICES=%s", l);
    return out->rc;
}

static void human_bytes(uint64_t v, char *out, size_t n)
{
    if (v && !(v % (1ull << 30)))
        snprintf(out, n, "%llug", (unsigned long long)(v >> 30));
    else if (v && !(v % (1ull << 20)))
        snprintf(out, n, "%llum", (unsigned long long)(v >> 20));
    else if (v && !(v % 1024))
        snprintf(out, n, "%lluk", (unsigned long long)(v >> 10));
    else
        snprintf(out, n, "%llub", (unsigned long long)v);
}

int sw__unit_container_argv(struct sw_unit_render *r, const struct sw__unit_strv *engine,
                            uint64_t shm_bytes, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = r->ep;
    bool docker = r->runtime == SW_FLEET_RUNTIME_DOCKER;
    struct sw__unit_strv s = {0};
    char t[64];
    (void)e;
    sw__unit_strv_push(&s, sw__unit_runtime_path(r->runtime));
    sw__unit_strv_push(&s, "run");
    sw__unit_strv_push(&s, "-d");
    sw__unit_strv_push(&s, "--name");
    sw__unit_strv_push(&s, r->name);
    /* the engine's environment (secrets included) from the env file, never from this line */
    sw__unit_strv_push(&s, "--env-file");
    sw__unit_strv_push(&s, r->env_path);
    /* the engine's own listen address and port, as on a native host */
    sw__unit_strv_push(&s, "--network=host");
    /* the engine's output in the journal (the operator read crashes there, not `podman logs`) */
    sw__unit_strv_push(&s, "--log-driver=journald");
    human_bytes(shm_bytes, t, sizeof(t));
    sw__unit_strv_pushf(&s, "--shm-size=%s", t);
    /* pinned host memory for the engine's transfers; a rootless (user) container may not raise
     * its hard memlock limit, so it keeps the user's */
    if (r->scope != SW_FLEET_SCOPE_USER)
        sw__unit_strv_push(&s, "--ulimit=memlock=-1:-1");
    sw__unit_strv_push(&s, "--ulimit=nofile=65536:65536");
    bool amd = false, intel = false;
    char nv[512];
    for (size_t i = 0; i < ep->n_devices; i++) {
        amd = amd || vendor_is(ep->devices[i], "amd");
        intel = intel || vendor_is(ep->devices[i], "intel");
    }
    if (amd) {
        /* ROCm: the compute interface and the render nodes, and the group that may open them */
        sw__unit_strv_push(&s, "--device=/dev/kfd");
        sw__unit_strv_push(&s, "--device=/dev/dri");
        /* rootless: the user's own groups (video, render) pass through as they are */
        sw__unit_strv_push(&s, r->scope == SW_FLEET_SCOPE_USER ? "--group-add=keep-groups"
                                                               : "--group-add=video");
    } else if (intel) {
        sw__unit_strv_push(&s, "--device=/dev/dri");
    }
    if (index_list(ep, "nvidia", nv, sizeof(nv))) {
        if (docker) {
            /* --gpus reads a CSV field: several devices need the value quoted */
            if (strchr(nv, ','))
                sw__unit_strv_pushf(&s, "--gpus=\"device=%s\"", nv);
            else
                sw__unit_strv_pushf(&s, "--gpus=device=%s", nv);
        } else {
            for (size_t i = 0; i < ep->n_devices; i++)
                if (vendor_is(ep->devices[i], "nvidia"))
                    sw__unit_strv_pushf(&s, "--device=nvidia.com/gpu=%llu",
                                        (unsigned long long)device_index(ep->devices[i]));
        }
    }
    for (size_t i = 0; i < ep->runtime.n_devices; i++)
        sw__unit_strv_pushf(&s, "--device=%s", ep->runtime.devices[i].v);
    for (size_t i = 0; i < ep->payload.n_mounts; i++) {
        const struct sw_fleet_mount *m = &ep->payload.mounts[i];
        sw__unit_strv_pushf(&s, "--volume=%s:%s%s", m->host_path, m->container_path,
                            m->readonly ? ":ro" : "");
    }
    for (size_t i = 0; i < ep->runtime.n_args; i++)
        sw__unit_strv_push(&s, ep->runtime.args[i].v);
    /* the engine's program inside the image, whatever the image's own entrypoint is */
    if (engine->n)
        sw__unit_strv_pushf(&s, "--entrypoint=%s", engine->v[0]);
    sw__unit_strv_push(&s, ep->image.v);
    for (size_t i = 1; i < engine->n; i++)
        sw__unit_strv_push(&s, engine->v[i]);
    if (s.rc) {
        sw__unit_strv_free(s.v, s.n);
        return s.rc;
    }
    r->container_argv = s.v;
    r->container_argc = s.n;
    return 0;
}
