/*
 * engine/vllm_render: argv + environment for a fleet endpoint served by vLLM or SGLang.
 *
 * Paths: the payload is a path on the endpoint's host. When the endpoint runs in a container
 * (image set), the engine sees the container's side of a mount, so the path is translated through
 * the payload's mounts (the longest one it lies under, in lexical form: `..` cannot climb out of a
 * mount; the engine gets the lexical form); a path no mount covers is an error at
 * its fleet position, because handing the host path to the container is exactly the crash loop
 * the operator lived through (vLLM: "Repo id must be in the form namespace/repo_name").
 * Secrets: only in the environment (VLLM_API_KEY from the endpoint's api_key reference, resolved
 * at render time from the caller's environment or a file); never on argv. SGLang reads its key
 * only from argv, so an SGLang endpoint with an api_key is refused.
 *
 * The flags are the rows of vLLM's and SGLang's flag tables (vllm_flags.c, sglang_flags.c),
 * rendered in their order after the program and the model.
 *
 * What it does not do: wrap the argv in podman/systemd (deploy/), or decide the shape (plan/tune).
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

#include "engine_internal.h"
#include "vllm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The secret's value: the named variable of the caller's environment, or the file's content
 * without its trailing newline. Wiped and freed by the caller. */
static int secret_value(const struct sw_fleet_secret *s, char **out, struct sw_err *e)
{
    *out = NULL;
    if (s->kind == SW_FLEET_SECRET_ENV) {
        const char *v = getenv(s->ref);
        if (!v || !*v)
            return sw_fleet_err_at(e, SW_ENOENT, &s->at,
                                   "secret: environment variable %s is not set", s->ref);
        *out = sw_strdup(v);
    } else if (s->kind == SW_FLEET_SECRET_FILE) {
        size_t len = 0;
        int rc = sw_read_file(s->ref, 64 * 1024, out, &len, e);
        if (rc)
            return rc;
        while (len && ((*out)[len - 1] == '\n' || (*out)[len - 1] == '\r'))
            (*out)[--len] = 0;
    } else {
        return 0;
    }
    return *out ? 0 : SW_ENOMEM;
}

/* Host path -> what the engine sees. */
int sw__engine_path(const struct sw_fleet_endpoint *ep, const char *host_path,
                    const struct sw_fleet_at *at, char *out, size_t n, struct sw_err *e)
{
    if (!ep->image.v) {
        snprintf(out, n, "%s", host_path);
        return 0;
    }
    const struct sw_fleet_mount *best = NULL;
    size_t bl = 0;
    for (size_t i = 0; i < ep->payload.n_mounts; i++) {
        const struct sw_fleet_mount *m = &ep->payload.mounts[i];
        size_t l = sw_path_within(host_path, m->host_path, NULL, 0); /* lexical: no `..` out */
        if (l > bl) {
            best = m;
            bl = l;
        }
    }
    if (!best)
        return sw_fleet_err_at(e, SW_EINVAL, at,
                               "%s is a host path that no mount of this container covers: the "
                               "engine would not find it (vLLM/transformers then fail with \"Repo "
                               "id must be in the form ...\"); add a payload mount",
                               host_path);
    if (!sw_path_rebase(host_path, best->host_path, best->container_path, out, n))
        return sw_err_set(e, SW_ERANGE, "path too long");
    return 0;
}

static int model_arg(const struct sw_fleet_endpoint *ep, char *out, size_t n, struct sw_err *e)
{
    if (ep->payload.path.v)
        return sw__engine_path(ep, ep->payload.path.v, &ep->payload.path.at, out, n, e);
    if (ep->payload.repo.v) {
        snprintf(out, n, "%s", ep->payload.repo.v);
        return 0;
    }
    return sw_fleet_err_at(e, SW_EINVAL, &ep->at, "endpoint %s: payload has neither path nor repo",
                           ep->name);
}

static int common_env(const struct sw_fleet_endpoint *ep, struct sw__list *env, struct sw_err *e)
{
    for (size_t i = 0; i < ep->n_env; i++) {
        const struct sw_fleet_envvar *v = &ep->env[i];
        char *val = NULL;
        int rc = 0;
        if (v->secret.kind != SW_FLEET_SECRET_NONE)
            rc = secret_value(&v->secret, &val, e);
        if (!rc) {
            sw__list_push_env(env, v->name, val ? val : (v->value ? v->value : ""));
            rc = env->rc;
        }
        if (val) {
            memset(val, 0, strlen(val));
            sw_free(val);
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* The program and its model, then the table's rows, then the endpoint's args verbatim; the
 * environment: the endpoint's, and vLLM's key. */
static int render(const struct sw_fleet_endpoint *ep, const struct sw_flag_table *t,
                  struct sw__hf_render *ctx, struct sw__list *a, struct sw__list *env,
                  struct sw_err *e)
{
    int rc = sw__argv_render(t, ep, ctx, a, e);
    for (size_t i = 0; !rc && i < ep->n_args; i++)
        if (ep->args[i].v)
            sw__list_push(a, ep->args[i].v);
    if (!rc)
        rc = a->rc;
    if (!rc)
        rc = common_env(ep, env, e);
    if (!rc && t == &sw_vllm_flags && ep->api_key.kind != SW_FLEET_SECRET_NONE) {
        char *key = NULL;
        rc = secret_value(&ep->api_key, &key, e);
        if (!rc) {
            sw__list_push_env(env, "VLLM_API_KEY", key);
            rc = env->rc;
        }
        if (key) {
            memset(key, 0, strlen(key));
            sw_free(key);
        }
    }
    return rc;
}

int sw__hf_write_host(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                      struct sw_err *e)
{
    return sw_buf_puts(out, ((const struct sw__hf_render *)ctx)->bind) ? SW_ENOMEM : 1;
}

int sw__hf_write_port(const struct sw_flag *f, const void *ctx, struct sw_buf *out,
                      struct sw_err *e)
{
    return sw_buf_printf(out, "%u", ((const struct sw__hf_render *)ctx)->port) ? SW_ENOMEM : 1;
}

/* The render's context: the model as the engine sees it, the one address. */
static int context(const struct sw_fleet_endpoint *ep, struct sw__hf_render *ctx, struct sw_err *e)
{
    struct sw_fleet_addr fa;
    memset(ctx, 0, sizeof(*ctx));
    ctx->ep = ep;
    int rc = model_arg(ep, ctx->model, sizeof(ctx->model), e);
    if (!rc)
        rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        return rc;
    snprintf(ctx->bind, sizeof(ctx->bind), "%s", fa.bind);
    ctx->port = fa.port;
    return 0;
}

int sw_vllm_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                            struct sw_err *e)
{
    struct sw__hf_render ctx;
    struct sw__list a = {0}, env = {0};
    memset(out, 0, sizeof(*out));
    int rc = context(ep, &ctx, e);
    if (rc)
        return rc;
    sw__list_push(&a, ep->binary.v ? ep->binary.v : "vllm");
    sw__list_push(&a, "serve");
    sw__list_push(&a, ctx.model);
    rc = render(ep, &sw_vllm_flags, &ctx, &a, &env, e);
    if (rc) {
        sw__list_free(&a);
        sw__list_free(&env);
        if (rc == SW_ENOMEM)
            sw_err_set(e, SW_ENOMEM, "out of memory rendering %s", ep->name);
        return rc;
    }
    return sw__cmd_take(out, &a, &env);
}

int sw_sglang_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                              struct sw_err *e)
{
    struct sw__hf_render ctx;
    struct sw__list a = {0}, env = {0};
    memset(out, 0, sizeof(*out));
    if (ep->api_key.kind != SW_FLEET_SECRET_NONE)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->api_key.at,
                               "SGLang reads its API key only from --api-key (argv): slipway does "
                               "not put secrets on a command line; front it with a proxy");
    int rc = context(ep, &ctx, e);
    if (rc)
        return rc;
    if (ep->binary.v) {
        sw__list_push(&a, ep->binary.v);
    } else {
        sw__list_push(&a, "python3");
        sw__list_push(&a, "-m");
        sw__list_push(&a, "sglang.launch_server");
    }
    rc = render(ep, &sw_sglang_flags, &ctx, &a, &env, e);
    if (rc) {
        sw__list_free(&a);
        sw__list_free(&env);
        return rc;
    }
    return sw__cmd_take(out, &a, &env);
}
