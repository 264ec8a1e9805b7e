/*
 * An endpoint's `runtime:` (how the engine runs on its host: native, podman, docker, with the
 * container's shm size, stop grace, extra devices and run arguments) and `service:` (the systemd
 * unit around it: name, scope, restart and stop timings, start limits, OOM score, user).
 *
 * Decoded here and checked against each other in sw__fleet_check_runtime (after the whole
 * endpoint is read: the default runtime depends on `image:`). What a unit finally says (the
 * per-engine defaults, the relationships between the timings and the engine's drain) is the
 * renderer's (src/unit), which reports at the positions kept here.
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <string.h>

static const char *const runtime_words[] = {"native", "podman", "docker", NULL};
static const char *const scope_words[] = {"system", "user", NULL};

const char *sw_fleet_runtime_name(enum sw_fleet_runtime_kind k)
{
    switch (k) {
    case SW_FLEET_RUNTIME_NATIVE:
        return "native";
    case SW_FLEET_RUNTIME_PODMAN:
        return "podman";
    case SW_FLEET_RUNTIME_DOCKER:
        return "docker";
    }
    return "?";
}

static enum sw_fleet_runtime_kind runtime_of(const char *w)
{
    return !strcmp(w, "podman")   ? SW_FLEET_RUNTIME_PODMAN
           : !strcmp(w, "docker") ? SW_FLEET_RUNTIME_DOCKER
                                  : SW_FLEET_RUNTIME_NATIVE;
}

/* A duration ("120s", "2min", "500ms", a bare number of seconds) into a u64 of milliseconds. */
static int dec_duration(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                        struct sw_fleet_u64 *out, bool whole_seconds)
{
    struct sw_fleet_at at;
    bool set, off;
    const char *t = NULL;
    int k = sw__fleet_typed_start(c, v, &at, &set, &off, &t);
    if (k <= 0)
        return k; /* null: the engine's default */
    struct sw_err e;
    sw_err_clear(&e);
    int64_t ms = 0;
    if (sw_parse_duration_ms(t, &ms, &e) || ms < 0)
        return sw__fleet_errp(c, v, "'%s' is not a duration (like 120s, 2min, 500ms)", t);
    if (whole_seconds && ms % 1000)
        return sw__fleet_errp(c, v,
                              "'%s' must be whole seconds (podman/docker stop -t counts "
                              "seconds)",
                              t);
    out->v = (uint64_t)ms;
    out->set = true;
    out->at = at;
    return 0;
}

static int dec_stop_grace(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d)
{
    (void)d;
    return dec_duration(c, v, &((struct sw_fleet_runtime *)obj)->stop_grace_ms, true);
}

static int dec_rt_kind(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_runtime *rt = obj;
    struct sw_fleet_str s = {0};
    int rc = sw__fleet_dec_str(c, v, &d->spec, &s);
    if (!rc && s.v) {
        rt->kind = runtime_of(s.v);
        rt->at = s.at;
    }
    return rc;
}

/* A device for the container: a /dev path (optionally HOST:CONTAINER[:perms]) or a CDI name
 * (vendor.com/class=name). */
static int dec_rt_device(struct sw__fleet_ctx *c, const struct sw__fleet_node *item, void *arg)
{
    struct sw_fleet_runtime *rt = arg;
    struct sw_fleet_str *s = &rt->devices[rt->n_devices];
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
    memset(s, 0, sizeof(*s));
    int rc = sw__fleet_dec_str(c, item, &sp, s);
    if (rc || !s->v)
        return rc ? rc : sw__fleet_errp(c, item, "must not be null");
    const char *t = s->v;
    const char *eq = strchr(t, '=');
    const char *sl = strchr(t, '/');
    bool cdi = t[0] != '/' && eq && sl && sl < eq && eq[1];
    bool dev = !strncmp(t, "/dev/", 5);
    for (const char *p = t; *p; p++)
        if (isspace((unsigned char)*p))
            dev = cdi = false;
    if (!cdi && !dev)
        return sw__fleet_errp(c, item,
                              "'%s' is neither a /dev path nor a CDI device name "
                              "(vendor.com/class=name)",
                              t);
    rt->n_devices++;
    return 0;
}

static int dec_rt_devices(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                          const struct sw__fleet_fdef *d)
{
    struct sw_fleet_runtime *rt = obj;
    (void)d;
    return sw__fleet_seq_into(c, v, &rt->devices, sizeof(*rt->devices), dec_rt_device, rt);
}

static int dec_rt_arg(struct sw__fleet_ctx *c, const struct sw__fleet_node *item, void *arg)
{
    struct sw_fleet_runtime *rt = arg;
    struct sw_fleet_str *s = &rt->args[rt->n_args];
    memset(s, 0, sizeof(*s));
    const char *t = sw__fleet_scalar(c, item);
    if (!t)
        return SW_EPARSE;
    sw__fleet_record(c, item);
    s->v = sw_region_strdup(c->a, t);
    s->at = sw__fleet_at(item);
    if (!s->v)
        return sw__fleet_nomem(c);
    const char *eq = strchr(t, '=');
    bool secret_flag = !strncmp(t, "--", 2) && sw__fleet_looks_secret_name(t + 2);
    if (sw__fleet_looks_secret_value(t) || (secret_flag && eq && eq[1]) ||
        (eq && sw__fleet_looks_secret_name(t) && eq[1]))
        return sw__fleet_errp(c, item,
                              "puts a secret on the container's command line, where every user "
                              "of the host can read it: give it as an env: reference");
    rt->n_args++;
    return 0;
}

static int dec_rt_args(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_runtime *rt = obj;
    (void)d;
    return sw__fleet_seq_into(c, v, &rt->args, sizeof(*rt->args), dec_rt_arg, rt);
}

static const struct sw__fleet_fdef runtime_defs[] = {
    {"kind", {0}, dec_rt_kind, SW__SPECC(runtime_words), 0},
    {"shm_size",
     {"shm"},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_BYTES, 1, 0),
     offsetof(struct sw_fleet_runtime, shm_size)},
    {"stop_grace", {"stop_timeout"}, dec_stop_grace, SW__SPEC(0), 0},
    {"devices", {0}, dec_rt_devices, SW__SPEC(0), 0},
    {"args", {"run_args"}, dec_rt_args, SW__SPEC(0), 0},
};

int sw__fleet_ep_runtime(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    struct sw_fleet_runtime *rt = &ep->runtime;
    (void)d;
    if (v->kind == SW__FLN_SCALAR) {
        struct sw__fleet_spec sp = SW__SPECC(runtime_words);
        struct sw_fleet_str s = {0};
        int rc = sw__fleet_dec_str(c, v, &sp, &s);
        if (!rc && s.v) {
            rt->kind = runtime_of(s.v);
            rt->at = s.at;
        }
        return rc;
    }
    int rc = sw__fleet_dec_map(c, v, rt, runtime_defs, SW_ARRAY_LEN(runtime_defs), "runtime");
    if (!rc && !rt->kind)
        rc = sw__fleet_errp(c, v, "needs kind: native, podman or docker");
    if (!rt->at.file)
        rt->at = sw__fleet_at(v);
    return rc;
}

/* ------------------------------------------------------------------------------------------- */

static int dec_svc_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct sw__fleet_fdef *d)
{
    struct sw_fleet_service *sv = obj;
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
    (void)d;
    int rc = sw__fleet_dec_str(c, v, &sp, &sv->name);
    if (rc || !sv->name.v)
        return rc;
    const char *t = sv->name.v;
    size_t n = strlen(t);
    bool ok = n > 0 && n <= 200;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)t[i]) || strchr(":-_.\\", t[i]);
    if (!ok)
        return sw__fleet_errp(c, v,
                              "'%s' is not a systemd unit name (letters, digits, ':', '-', '_', "
                              "'.', at most 200)",
                              t);
    if (n > 8 && !strcmp(t + n - 8, ".service"))
        return sw__fleet_errp(c, v, "'%s': give the name without '.service'", t);
    return 0;
}

static int dec_svc_scope(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d)
{
    struct sw_fleet_service *sv = obj;
    struct sw_fleet_str s = {0};
    int rc = sw__fleet_dec_str(c, v, &d->spec, &s);
    if (!rc && s.v) {
        sv->scope = !strcmp(s.v, "user") ? SW_FLEET_SCOPE_USER : SW_FLEET_SCOPE_SYSTEM;
        sv->scope_at = s.at;
    }
    return rc;
}

#define SVC_DURATION(fn, field)                                                                    \
    static int fn(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,              \
                  const struct sw__fleet_fdef *d)                                                  \
    {                                                                                              \
        (void)d;                                                                                   \
        return dec_duration(c, v, &((struct sw_fleet_service *)obj)->field, false);                \
    }
SVC_DURATION(dec_svc_restart, restart_sec_ms)
SVC_DURATION(dec_svc_stop, stop_timeout_ms)
SVC_DURATION(dec_svc_interval, start_limit_interval_ms)
#undef SVC_DURATION

static int dec_svc_oom(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_service *sv = obj;
    (void)d;
    sw__fleet_record(c, v);
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    struct sw_err e;
    sw_err_clear(&e);
    int64_t x = 0;
    if (sw_parse_i64(t, &x, &e) || x < -1000 || x > 1000)
        return sw__fleet_errp(c, v, "'%s' must be a whole number in -1000..1000", t);
    sv->oom_score_adjust.v = x;
    sv->oom_score_adjust.set = true;
    sv->oom_score_adjust.at = sw__fleet_at(v);
    return 0;
}

static int dec_svc_user(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct sw__fleet_fdef *d)
{
    struct sw_fleet_service *sv = obj;
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
    (void)d;
    int rc = sw__fleet_dec_str(c, v, &sp, &sv->user);
    if (rc || !sv->user.v)
        return rc;
    const char *t = sv->user.v;
    bool ok = (isalpha((unsigned char)t[0]) || t[0] == '_') && strlen(t) <= 32;
    for (const char *p = t; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.';
    if (!ok) {
        sv->user.v = NULL; /* reported once, here */
        return sw__fleet_errp(c, v, "'%s' is not a user name", t);
    }
    return 0;
}

static const struct sw__fleet_fdef service_defs[] = {
    {"name", {"unit"}, dec_svc_name, SW__SPEC(0), 0},
    {"scope", {0}, dec_svc_scope, SW__SPECC(scope_words), 0},
    {"restart_sec", {0}, dec_svc_restart, SW__SPEC(0), 0},
    {"stop_timeout", {"timeout_stop_sec"}, dec_svc_stop, SW__SPEC(0), 0},
    {"start_limit_burst",
     {0},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_COUNT, 1, 1000000),
     offsetof(struct sw_fleet_service, start_limit_burst)},
    {"start_limit_interval", {"start_limit_interval_sec"}, dec_svc_interval, SW__SPEC(0), 0},
    {"oom_score_adjust", {0}, dec_svc_oom, SW__SPEC(0), 0},
    {"user", {0}, dec_svc_user, SW__SPEC(0), 0},
    {"memory_max",
     {"memory_limit"},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_BYTES_APPROX, 1u << 20, 0),
     offsetof(struct sw_fleet_service, memory_max)},
};

int sw__fleet_ep_service(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    ep->service.at = sw__fleet_at(v);
    return sw__fleet_dec_map(c, v, &ep->service, service_defs, SW_ARRAY_LEN(service_defs),
                             "service");
}

/* serve: {policy: lru|priority, idle_ttl: D, pinned: B, priority: N} (docs/serve.md) */
static const char *const serve_policies[] = {"lru", "priority", NULL};

static int dec_serve_ttl(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d)
{
    (void)d;
    return dec_duration(c, v, &((struct sw_fleet_serve *)obj)->idle_ttl_ms, false);
}

static int dec_serve_policy(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                            const struct sw__fleet_fdef *d)
{
    struct sw_fleet_str s = {0};
    int rc = sw__fleet_dec_str(c, v, &d->spec, &s);
    if (!rc && s.v)
        ((struct sw_fleet_serve *)obj)->policy = s.v;
    return rc;
}

static const struct sw__fleet_fdef serve_defs[] = {
    {"policy", {0}, dec_serve_policy, SW__SPECC(serve_policies), 0},
    {"idle_ttl", {0}, dec_serve_ttl, SW__SPEC(0), 0},
    {"pinned",
     {0},
     sw__fleet_dec_boolf,
     SW__SPEC(SW__FT_BOOL),
     offsetof(struct sw_fleet_serve, pinned)},
    {"priority",
     {0},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_COUNT, 0, 1000),
     offsetof(struct sw_fleet_serve, priority)},
};

int sw__fleet_ep_serve(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    ep->serve.at = sw__fleet_at(v);
    return sw__fleet_dec_map(c, v, &ep->serve, serve_defs, SW_ARRAY_LEN(serve_defs), "serve");
}

/* ------------------------------------------------------------------------------------------- */

void sw__fleet_check_runtime(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                             const char *where)
{
    struct sw_fleet_runtime *rt = &ep->runtime;
    struct sw_fleet_service *sv = &ep->service;
    if (!rt->kind)
        rt->kind = ep->image.v ? SW_FLEET_RUNTIME_PODMAN : SW_FLEET_RUNTIME_NATIVE;
    bool container = rt->kind != SW_FLEET_RUNTIME_NATIVE;
    if (container && !ep->image.v)
        sw__fleet_err(c, &rt->at,
                      "%s.runtime: %s runs a container: the endpoint needs an image:", where,
                      sw_fleet_runtime_name(rt->kind));
    if (!container && ep->image.v && rt->at.file)
        sw__fleet_err(c, &rt->at,
                      "%s.runtime: native, but the endpoint names image %s (line %d): a unit "
                      "would silently ignore it; drop the image or run it in podman/docker",
                      where, ep->image.v, ep->image.at.line);
    if (!container) {
        const struct sw_fleet_at *at = rt->shm_size.set        ? &rt->shm_size.at
                                       : rt->stop_grace_ms.set ? &rt->stop_grace_ms.at
                                       : rt->n_devices         ? &rt->devices[0].at
                                       : rt->n_args            ? &rt->args[0].at
                                                               : NULL;
        if (at)
            sw__fleet_err(c, at,
                          "%s.runtime: shm_size, stop_grace, devices and args are a container's; "
                          "this endpoint runs native",
                          where);
    }
    if (!sv->scope)
        sv->scope = SW_FLEET_SCOPE_SYSTEM;
    if (!sv->name.v) {
        sv->name.v = sw_region_printf(c->a, "slipway-%s", ep->name);
        if (!sv->name.v)
            sw__fleet_nomem(c);
    }
    if (sv->scope == SW_FLEET_SCOPE_USER && sv->user.v)
        sw__fleet_err(c, &sv->user.at,
                      "%s.service.user: a user service runs as its manager's user; User= is "
                      "for scope: system",
                      where);
    if (sv->scope == SW_FLEET_SCOPE_USER && sv->oom_score_adjust.set && sv->oom_score_adjust.v < 0)
        sw__fleet_err(c, &sv->oom_score_adjust.at,
                      "%s.service.oom_score_adjust %lld: a user manager may not lower the OOM "
                      "score (the unit would fail to start); use scope: system or a value >= 0",
                      where, (long long)sv->oom_score_adjust.v);
    if (container && sv->stop_timeout_ms.set && rt->stop_grace_ms.set &&
        sv->stop_timeout_ms.v <= rt->stop_grace_ms.v)
        sw__fleet_err(c, &sv->stop_timeout_ms.at,
                      "%s.service.stop_timeout %llus must be above runtime.stop_grace %llus (line "
                      "%d): systemd would kill `%s stop -t %llu` before its grace ends and log "
                      "every stop as failed",
                      where, (unsigned long long)(sv->stop_timeout_ms.v / 1000),
                      (unsigned long long)(rt->stop_grace_ms.v / 1000), rt->stop_grace_ms.at.line,
                      sw_fleet_runtime_name(rt->kind),
                      (unsigned long long)(rt->stop_grace_ms.v / 1000));
    /* with podman's systemd cgroup manager the container runs in a libpod-*.scope of its own:
     * the unit's MemoryMax= would bound only `podman wait`, not the engine */
    if (container && sv->memory_max.set)
        sw__fleet_err(c, &sv->memory_max.at,
                      "%s.service.memory_max: the unit's MemoryMax= does not reach a %s "
                      "container (its processes live in the runtime's own cgroup); give the "
                      "container its limit in runtime.args, e.g. [--memory=%llu]",
                      where, sw_fleet_runtime_name(rt->kind), (unsigned long long)sv->memory_max.v);
}
