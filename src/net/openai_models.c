/*
 * Parsing /v1/models: the ids (and llama-server's aliases) an endpoint serves and the context
 * lengths it reports: llama-server's meta.n_ctx (the per-slot window) and meta.n_ctx_train
 * (tools/server/server-context.cpp get_res_model_info), vLLM's and SGLang's max_model_len.
 *
 * What it deliberately does not do: decide which model is "the" model (probe compares against
 * the fleet's promised alias).
 */
#include <slipway/openai.h>

#include <string.h>

/* A server's number as an integer; anything not a whole number in int64_t's range is unknown. */
static int64_t int_or(json_t *v, int64_t dflt)
{
    int64_t x;
    if (!json_is_number(v) || sw_json_int_range(v, INT64_MIN, INT64_MAX, NULL, "n", &x, NULL))
        return dflt;
    return x;
}

static char *dup_str(json_t *v)
{
    return json_is_string(v) ? sw_strdup(json_string_value(v)) : NULL;
}

void sw_openai_models_free(struct sw_openai_models *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        struct sw_openai_model *x = &m->v[i];
        sw_free(x->id);
        sw_free(x->owned_by);
        sw_free(x->root);
        for (size_t k = 0; k < x->naliases; k++)
            sw_free(x->aliases[k]);
        sw_free(x->aliases);
    }
    sw_free(m->v);
    m->v = NULL;
    m->n = 0;
}

static int read_model(struct sw_openai_model *x, json_t *o, size_t i, struct sw_err *e)
{
    memset(x, 0, sizeof(*x));
    x->n_ctx = x->n_ctx_train = x->max_model_len = -1;
    x->n_params = x->size = x->n_vocab = x->n_embd = -1;
    json_t *id = json_object_get(o, "id");
    if (!json_is_string(id))
        return sw_err_set(e, SW_EPARSE, "/v1/models: data[%zu] has no string \"id\"", i);
    x->id = dup_str(id);
    if (!x->id)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    json_t *ob = json_object_get(o, "owned_by");
    json_t *root = json_object_get(o, "root");
    x->owned_by = dup_str(ob);
    x->root = dup_str(root);
    if ((json_is_string(ob) && !x->owned_by) || (json_is_string(root) && !x->root))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    x->created = int_or(json_object_get(o, "created"), 0);
    x->max_model_len = int_or(json_object_get(o, "max_model_len"), -1);
    json_t *meta = json_object_get(o, "meta");
    if (json_is_object(meta)) {
        x->n_ctx = int_or(json_object_get(meta, "n_ctx"), -1);
        x->n_ctx_train = int_or(json_object_get(meta, "n_ctx_train"), -1);
        x->n_params = int_or(json_object_get(meta, "n_params"), -1);
        x->size = int_or(json_object_get(meta, "size"), -1);
        x->n_vocab = int_or(json_object_get(meta, "n_vocab"), -1);
        x->n_embd = int_or(json_object_get(meta, "n_embd"), -1);
    }
    json_t *al = json_object_get(o, "aliases");
    if (json_is_array(al) && json_array_size(al)) {
        size_t na = SW_MIN(json_array_size(al), (size_t)256);
        x->aliases = sw_calloc(na, sizeof(*x->aliases));
        if (!x->aliases)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        for (size_t k = 0; k < na; k++) {
            json_t *a = json_array_get(al, k);
            if (!json_is_string(a))
                continue;
            x->aliases[x->naliases] = dup_str(a);
            if (!x->aliases[x->naliases])
                return sw_err_set(e, SW_ENOMEM, "out of memory");
            x->naliases++;
        }
    }
    return 0;
}

int sw_openai_parse_models(const char *body, size_t len, struct sw_openai_models *out,
                           struct sw_err *e)
{
    memset(out, 0, sizeof(*out));
    json_t *j = sw_json_parse(body, len, "/v1/models", e);
    if (!j)
        return SW_EPARSE;
    int rc = 0;
    json_t *data = json_object_get(j, "data");
    if (!json_is_array(data)) {
        rc = sw_err_set(e, SW_EPARSE, "/v1/models: no \"data\" array in the reply");
        goto out;
    }
    size_t n = json_array_size(data);
    if (n > SW_OAI_MODELS_MAX) {
        rc = sw_err_set(e, SW_ERANGE, "/v1/models lists %zu models (at most %u read)", n,
                        SW_OAI_MODELS_MAX);
        goto out;
    }
    if (n) {
        out->v = sw_calloc(n, sizeof(*out->v));
        if (!out->v) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(data, i);
        if (!json_is_object(o)) {
            rc = sw_err_set(e, SW_EPARSE, "/v1/models: data[%zu] is not an object", i);
            goto out;
        }
        rc = read_model(&out->v[i], o, i, e);
        out->n = i + 1; /* so free releases a half-read entry too */
        if (rc)
            goto out;
    }
out:
    json_decref(j);
    if (rc)
        sw_openai_models_free(out);
    return rc;
}

const struct sw_openai_model *sw_openai_models_find(const struct sw_openai_models *m,
                                                    const char *name)
{
    for (size_t i = 0; i < m->n; i++) {
        if (!strcmp(m->v[i].id, name))
            return &m->v[i];
        for (size_t k = 0; k < m->v[i].naliases; k++)
            if (!strcmp(m->v[i].aliases[k], name))
                return &m->v[i];
    }
    return NULL;
}
