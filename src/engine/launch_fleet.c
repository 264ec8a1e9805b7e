/*
 * engine/launch_fleet: a fleet endpoint (fleet.yaml) as an engine-neutral launch.
 *
 * Paths in a fleet file are paths on the endpoint's host; for a local host "~/" becomes $HOME and
 * a relative gguf/mmproj/draft is relative to payload.path. Secrets are references: the name of
 * an environment variable of slipway or a file; their values are read here and only ever go to
 * the engine's environment (the adapters render api_key into it, never into argv).
 *
 * What it deliberately does not do: check that files exist (deploy's preflight does, where the
 * engine runs), decide defaults the engine has (an unset knob stays unset), or handle remote
 * hosts.
 */
#include "engine_internal.h"

#include <slipway/fleet.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct store {
    char **strs;
    size_t n, cap;
    const char **args;
    const char **env;
    size_t n_env;
};

static const char *keep(struct store *s, char *p)
{
    if (!p)
        return NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **v = sw_realloc(s->strs, cap * sizeof(*v));
        if (!v) {
            sw_free(p);
            return NULL;
        }
        s->strs = v;
        s->cap = cap;
    }
    s->strs[s->n++] = p;
    return p;
}

/* "~/x" -> "$HOME/x"; a relative path under base (when base is a directory path). */
static char *resolve(const char *p, const char *base)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    int rc = 0;
    if (p[0] == '~' && (p[1] == '/' || !p[1])) {
        const char *home = getenv("HOME");
        rc = sw_buf_puts(&b, home && *home ? home : "/");
        if (!rc)
            rc = sw_buf_puts(&b, p + 1);
    } else if (p[0] != '/' && base && *base) {
        char *bb = resolve(base, NULL);
        if (!bb) {
            sw_buf_free(&b);
            return NULL;
        }
        rc = sw_buf_printf(&b, "%s/%s", bb, p);
        sw_free(bb);
    } else {
        rc = sw_buf_puts(&b, p);
    }
    if (rc) {
        sw_buf_free(&b);
        return NULL;
    }
    return sw_buf_steal(&b);
}

int sw_engine_read_secret(const struct sw_fleet_secret *s, const char *what, char **out,
                          struct sw_err *e)
{
    *out = NULL;
    if (s->kind == SW_FLEET_SECRET_ENV) {
        const char *v = getenv(s->ref);
        if (!v || !*v)
            return sw_fleet_err_at(e, SW_EINVAL, &s->at,
                                   "%s: the environment variable %s is not set", what, s->ref);
        *out = sw_strdup(v);
    } else if (s->kind == SW_FLEET_SECRET_FILE) {
        char *path = resolve(s->ref, NULL), *text = NULL;
        size_t n = 0;
        struct sw_err fe;
        int rc = path ? sw_read_file(path, 1 << 16, &text, &n, &fe) : SW_ENOMEM;
        sw_free(path);
        if (rc)
            return sw_fleet_err_at(e, rc, &s->at, "%s: cannot read %s: %s", what, s->ref,
                                   rc == SW_ENOMEM ? "out of memory" : fe.msg);
        text[strcspn(text, "\r\n")] = '\0';
        if (!*text) {
            sw_free(text);
            return sw_fleet_err_at(e, SW_EINVAL, &s->at, "%s: %s is empty", what, s->ref);
        }
        *out = text;
    } else {
        return 0;
    }
    return *out ? 0 : sw_err_set(e, SW_ENOMEM, "out of memory");
}

void sw_engine_launch_free(struct sw_engine_launch *l)
{
    if (!l)
        return;
    struct store *s = l->priv;
    if (s) {
        for (size_t i = 0; i < s->n; i++) {
            /* secrets: wipe before freeing */
            memset(s->strs[i], 0, strlen(s->strs[i]));
            sw_free(s->strs[i]);
        }
        sw_free(s->strs);
        sw_free(s->args);
        sw_free(s->env);
        sw_free(s);
    }
    memset(l, 0, sizeof(*l));
}

int sw_engine_launch_from_fleet(const struct sw_fleet_endpoint *ep, struct sw_engine_launch *l,
                                struct sw_err *e)
{
    int rc = 0;
    memset(l, 0, sizeof(*l));
    l->swa_full = l->kv_unified = -1;
    l->n_gpu_layers = -1;
    l->verbosity = -1;
    struct store *s = sw_calloc(1, sizeof(*s));
    if (!s)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    l->priv = s;

    const struct sw_fleet_payload *p = &ep->payload;
    const char *base = p->path.v;
    if (p->gguf.v) {
        l->model = keep(s, resolve(p->gguf.v, base));
    } else if (p->path.v) {
        l->model = keep(s, resolve(p->path.v, NULL));
    } else {
        rc = sw_fleet_err_at(e, SW_EINVAL, &ep->at,
                             "endpoint %s: no local model file (payload.path or payload.gguf)",
                             ep->name);
        goto fail;
    }
    if (p->mmproj.v && !p->mmproj.off)
        l->mmproj = keep(s, resolve(p->mmproj.v, base));
    if (p->draft.v)
        l->draft = keep(s, resolve(p->draft.v, base));
    if (!l->model || (p->mmproj.v && !p->mmproj.off && !l->mmproj) || (p->draft.v && !l->draft))
        goto oom;
    l->binary = ep->binary.v ? keep(s, resolve(ep->binary.v, NULL)) : NULL;
    if (ep->binary.v && !l->binary)
        goto oom;
    l->alias = ep->alias.v;
    /* the one address (fleet/addr): the engine's default port made explicit */
    struct sw_fleet_addr fa;
    rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        goto fail;
    if (fa.port == 0 || fa.port > 65535) {
        rc = sw_fleet_err_at(e, SW_EINVAL, &ep->listen_port.at, "port %u is not a TCP port",
                             fa.port);
        goto fail;
    }
    l->host = keep(s, sw_strdup(fa.bind));
    if (!l->host)
        goto oom;
    l->port = fa.port;

    const struct sw_fleet_shape *sh = &ep->shape;
    if (sh->ctx_size.set)
        l->ctx_size = sh->ctx_size.v;
    if (sh->seqs.set)
        l->parallel = sh->seqs.v;
    l->cache_type_k = sh->cache_type_k.v;
    l->cache_type_v = sh->cache_type_v.v;
    l->flash_attn = sh->flash_attn.v;
    if (sh->batch_size.set)
        l->batch = sh->batch_size.v;
    if (sh->ubatch_size.set)
        l->ubatch = sh->ubatch_size.v;
    if (sh->swa_full.set)
        l->swa_full = sh->swa_full.v;
    if (sh->kv_unified.set)
        l->kv_unified = sh->kv_unified.v;
    if (sh->n_gpu_layers.set)
        l->n_gpu_layers = sh->n_gpu_layers.v == SW_FLEET_ALL || sh->n_gpu_layers.v > INT64_MAX
                              ? INT64_MAX
                              : (int64_t)sh->n_gpu_layers.v;

    /* args: the endpoint's verbatim, plus the draft lengths of spec_decode */
    size_t nargs = ep->n_args + 4;
    s->args = sw_calloc(nargs, sizeof(*s->args));
    if (!s->args)
        goto oom;
    size_t na = 0;
    for (size_t i = 0; i < ep->n_args; i++)
        s->args[na++] = ep->args[i].v;
    char num[32];
    if (sh->spec_tokens.set && l->draft) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)sh->spec_tokens.v);
        s->args[na++] = "--spec-draft-n-max";
        s->args[na] = keep(s, sw_strdup(num));
        if (!s->args[na++])
            goto oom;
    }
    if (sh->spec_draft_min.set && l->draft) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)sh->spec_draft_min.v);
        s->args[na++] = "--spec-draft-n-min";
        s->args[na] = keep(s, sw_strdup(num));
        if (!s->args[na++])
            goto oom;
    }
    l->extra_args = s->args;
    l->n_extra_args = na;

    s->env = sw_calloc(ep->n_env + 1, sizeof(*s->env));
    if (!s->env)
        goto oom;
    for (size_t i = 0; i < ep->n_env; i++) {
        const struct sw_fleet_envvar *v = &ep->env[i];
        char *val = NULL;
        char what[160];
        snprintf(what, sizeof(what), "env %s", v->name);
        if (v->secret.kind != SW_FLEET_SECRET_NONE) {
            rc = sw_engine_read_secret(&v->secret, what, &val, e);
            if (rc)
                goto fail;
        }
        const char *value = val ? val : (v->value ? v->value : "");
        size_t n = strlen(v->name) + strlen(value) + 2;
        char *kv = sw_malloc(n);
        if (kv)
            snprintf(kv, n, "%s=%s", v->name, value);
        if (val) {
            memset(val, 0, strlen(val));
            sw_free(val);
        }
        if (!kv || !keep(s, kv))
            goto oom;
        s->env[s->n_env++] = kv;
    }
    l->env = s->env;
    l->n_env = s->n_env;

    if (ep->api_key.kind != SW_FLEET_SECRET_NONE) {
        char *key = NULL;
        rc = sw_engine_read_secret(&ep->api_key, "api_key", &key, e);
        if (rc)
            goto fail;
        if (!keep(s, key))
            goto oom;
        l->api_key = key;
    }
    return 0;
oom:
    rc = sw_err_set(e, SW_ENOMEM, "out of memory");
fail:
    sw_engine_launch_free(l);
    return rc;
}

int sw__llamacpp_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                                 struct sw_err *e)
{
    struct sw_engine_launch l;
    memset(out, 0, sizeof(*out));
    int rc = sw_engine_launch_from_fleet(ep, &l, e);
    if (rc)
        return rc;
    rc = sw_engine_llamacpp_render(&l, out, e);
    sw_engine_launch_free(&l);
    return rc;
}
