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
 * What it does not do: wrap the argv in podman/systemd (deploy/), or decide the shape (plan/tune).
 */
#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/fleet.h>
#include <slipway/sglang.h>
#include <slipway/vllm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct argvb {
    struct sw_engine_cmd *c;
    int rc;
};

static void add(struct argvb *b, const char *s)
{
    if (b->rc)
        return;
    char **a = sw_realloc(b->c->argv, (b->c->argc + 2) * sizeof(char *));
    if (!a) {
        b->rc = SW_ENOMEM;
        return;
    }
    b->c->argv = a;
    a[b->c->argc] = sw_strdup(s);
    if (!a[b->c->argc]) {
        b->rc = SW_ENOMEM;
        return;
    }
    a[++b->c->argc] = NULL;
}

static void addu(struct argvb *b, const char *flag, uint64_t v)
{
    char n[32];
    snprintf(n, sizeof(n), "%llu", (unsigned long long)v);
    add(b, flag);
    add(b, n);
}

static int add_env(struct sw_engine_cmd *c, const char *name, const char *value)
{
    char **a = sw_realloc(c->env, (c->envc + 2) * sizeof(char *));
    if (!a)
        return SW_ENOMEM;
    c->env = a;
    size_t n = strlen(name) + strlen(value) + 2;
    a[c->envc] = sw_malloc(n);
    if (!a[c->envc])
        return SW_ENOMEM;
    snprintf(a[c->envc], n, "%s=%s", name, value);
    a[++c->envc] = NULL;
    return 0;
}

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
static int engine_path(const struct sw_fleet_endpoint *ep, const char *host_path,
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
        return engine_path(ep, ep->payload.path.v, &ep->payload.path.at, out, n, e);
    if (ep->payload.repo.v) {
        snprintf(out, n, "%s", ep->payload.repo.v);
        return 0;
    }
    return sw_fleet_err_at(e, SW_EINVAL, &ep->at, "endpoint %s: payload has neither path nor repo",
                           ep->name);
}

static int common_env(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *c, struct sw_err *e)
{
    for (size_t i = 0; i < ep->n_env; i++) {
        const struct sw_fleet_envvar *v = &ep->env[i];
        char *val = NULL;
        int rc = 0;
        if (v->secret.kind != SW_FLEET_SECRET_NONE)
            rc = secret_value(&v->secret, &val, e);
        if (!rc)
            rc = add_env(c, v->name, val ? val : (v->value ? v->value : ""));
        if (val) {
            memset(val, 0, strlen(val));
            sw_free(val);
        }
        if (rc)
            return rc;
    }
    return 0;
}

int sw_vllm_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                            struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    struct argvb b = {out, 0};
    char model[4096], draft[4096];
    struct sw_fleet_addr fa;
    int rc = model_arg(ep, model, sizeof(model), e);
    if (!rc)
        rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        return rc;
    const struct sw_fleet_shape *s = &ep->shape;
    add(&b, ep->binary.v ? ep->binary.v : "vllm");
    add(&b, "serve");
    add(&b, model);
    if (ep->payload.repo.v && ep->payload.revision.v && !ep->payload.path.v) {
        add(&b, "--revision");
        add(&b, ep->payload.revision.v);
    }
    add(&b, "--host");
    add(&b, fa.bind);
    addu(&b, "--port", fa.port);
    if (ep->alias.v) {
        add(&b, "--served-model-name");
        add(&b, ep->alias.v);
    }
    if (s->tensor_parallel.set)
        addu(&b, "--tensor-parallel-size", s->tensor_parallel.v);
    if (s->pipeline_parallel.set)
        addu(&b, "--pipeline-parallel-size", s->pipeline_parallel.v);
    if (s->decode_context_parallel.set)
        addu(&b, "--decode-context-parallel-size", s->decode_context_parallel.v);
    if (s->max_model_len.set)
        addu(&b, "--max-model-len", s->max_model_len.v);
    if (s->seqs.set)
        addu(&b, "--max-num-seqs", s->seqs.v);
    if (s->max_num_batched_tokens.set)
        addu(&b, "--max-num-batched-tokens", s->max_num_batched_tokens.v);
    if (s->kv_cache_dtype.v) {
        add(&b, "--kv-cache-dtype");
        add(&b, s->kv_cache_dtype.v);
    }
    if (s->kv_cache_bytes.set)
        addu(&b, "--kv-cache-memory-bytes", s->kv_cache_bytes.v);
    if (s->gpu_memory_utilization.set) {
        char u[32];
        snprintf(u, sizeof(u), "%g", s->gpu_memory_utilization.v);
        add(&b, "--gpu-memory-utilization");
        add(&b, u);
    }
    if (s->block_size.set)
        addu(&b, "--block-size", s->block_size.v);
    if (s->prefix_caching.set)
        add(&b, s->prefix_caching.v ? "--enable-prefix-caching" : "--no-enable-prefix-caching");
    if (s->enforce_eager.set && s->enforce_eager.v)
        add(&b, "--enforce-eager");
    if (s->spec_method.v) {
        json_t *j = json_object();
        const char *m = !strcmp(s->spec_method.v, "draft") ? "draft_model" : s->spec_method.v;
        sw_json_set_str(j, "method", m);
        if (s->spec_tokens.set)
            sw_json_set_int(j, "num_speculative_tokens", (int64_t)s->spec_tokens.v);
        if (ep->payload.draft.v) {
            rc = ep->payload.draft.v[0] == '/' || ep->payload.draft.v[0] == '~'
                     ? engine_path(ep, ep->payload.draft.v, &ep->payload.draft.at, draft,
                                   sizeof(draft), e)
                     : (snprintf(draft, sizeof(draft), "%s", ep->payload.draft.v), 0);
            if (rc) {
                json_decref(j);
                sw_engine_cmd_free(out);
                return rc;
            }
            sw_json_set_str(j, "model", draft);
        }
        char *txt = sw_json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        if (!txt) {
            sw_engine_cmd_free(out);
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        }
        add(&b, "--speculative-config");
        add(&b, txt);
        sw_free(txt);
    }
    for (size_t i = 0; i < ep->n_args; i++)
        if (ep->args[i].v)
            add(&b, ep->args[i].v);
    rc = b.rc;
    if (!rc)
        rc = common_env(ep, out, e);
    if (!rc && ep->api_key.kind != SW_FLEET_SECRET_NONE) {
        char *key = NULL;
        rc = secret_value(&ep->api_key, &key, e);
        if (!rc)
            rc = add_env(out, "VLLM_API_KEY", key);
        if (key) {
            memset(key, 0, strlen(key));
            sw_free(key);
        }
    }
    if (rc) {
        sw_engine_cmd_free(out);
        if (rc == SW_ENOMEM)
            sw_err_set(e, SW_ENOMEM, "out of memory rendering %s", ep->name);
        return rc;
    }
    return 0;
}

int sw_sglang_render_endpoint(const struct sw_fleet_endpoint *ep, struct sw_engine_cmd *out,
                              struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    if (ep->api_key.kind != SW_FLEET_SECRET_NONE)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->api_key.at,
                               "SGLang reads its API key only from --api-key (argv): slipway does "
                               "not put secrets on a command line; front it with a proxy");
    struct argvb b = {out, 0};
    char model[4096];
    struct sw_fleet_addr fa;
    int rc = model_arg(ep, model, sizeof(model), e);
    if (!rc)
        rc = sw_fleet_endpoint_addr(ep, &fa, e);
    if (rc)
        return rc;
    const struct sw_fleet_shape *s = &ep->shape;
    if (ep->binary.v) {
        add(&b, ep->binary.v);
    } else {
        add(&b, "python3");
        add(&b, "-m");
        add(&b, "sglang.launch_server");
    }
    add(&b, "--model-path");
    add(&b, model);
    add(&b, "--host");
    add(&b, fa.bind);
    addu(&b, "--port", fa.port);
    if (ep->alias.v) {
        add(&b, "--served-model-name");
        add(&b, ep->alias.v);
    }
    if (s->tensor_parallel.set)
        addu(&b, "--tp-size", s->tensor_parallel.v);
    if (s->pipeline_parallel.set)
        addu(&b, "--pp-size", s->pipeline_parallel.v);
    if (s->max_model_len.set)
        addu(&b, "--context-length", s->max_model_len.v);
    if (s->seqs.set)
        addu(&b, "--max-running-requests", s->seqs.v);
    if (s->kv_cache_dtype.v) {
        add(&b, "--kv-cache-dtype");
        add(&b, s->kv_cache_dtype.v);
    }
    if (s->max_total_tokens.set)
        addu(&b, "--max-total-tokens", s->max_total_tokens.v);
    if (s->mem_fraction_static.set) {
        char u[32];
        snprintf(u, sizeof(u), "%g", s->mem_fraction_static.v);
        add(&b, "--mem-fraction-static");
        add(&b, u);
    }
    if (s->max_mamba_cache_size.set)
        addu(&b, "--max-mamba-cache-size", s->max_mamba_cache_size.v);
    if (s->spec_method.v) {
        const char *m = !strcmp(s->spec_method.v, "mtp")      ? "NEXTN"
                        : !strcmp(s->spec_method.v, "eagle")  ? "EAGLE"
                        : !strcmp(s->spec_method.v, "eagle3") ? "EAGLE3"
                        : !strcmp(s->spec_method.v, "ngram")  ? "NGRAM"
                                                              : "STANDALONE";
        add(&b, "--speculative-algorithm");
        add(&b, m);
        if (s->spec_tokens.set)
            addu(&b, "--speculative-num-draft-tokens", s->spec_tokens.v);
    }
    for (size_t i = 0; i < ep->n_args; i++)
        if (ep->args[i].v)
            add(&b, ep->args[i].v);
    rc = b.rc;
    if (!rc)
        rc = common_env(ep, out, e);
    if (rc) {
        sw_engine_cmd_free(out);
        return rc;
    }
    return 0;
}
