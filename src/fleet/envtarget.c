/*
 * Env-file import targets: the endpoint fields an env-file key may set (shape.*, payload.*,
 * listen.*, binary, image, alias, engine_version, env.NAME), decoded exactly as the YAML value
 * would be (same types, units and checks).
 *
 * Not here: reading env files (envfile.c) or the override rule (envimport.c).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Import targets: the endpoint fields an env-file key may set, decoded exactly as the YAML value
 * would be (same types, units and checks).
 */
static const char *const scalar_payload[] = {"path", "repo",   "revision", "shards",
                                             "gguf", "mmproj", "draft",    "quantization"};
static const char *const scalar_endpoint[] = {"binary", "image", "alias", "engine_version"};

const char *sw__fleet_target_canon(const char *t, struct sw_region *a)
{
    if (!strncmp(t, "shape.", 6)) {
        const struct sw_fleet_field *f = sw_fleet_shape_field(t + 6);
        return f ? sw_region_printf(a, "shape.%s", f->name) : NULL;
    }
    if (!strncmp(t, "payload.", 8)) {
        for (size_t i = 0; i < SW_ARRAY_LEN(scalar_payload); i++)
            if (!strcmp(t + 8, scalar_payload[i]))
                return t;
        return NULL;
    }
    if (!strcmp(t, "listen.port") || !strcmp(t, "listen.address"))
        return t;
    for (size_t i = 0; i < SW_ARRAY_LEN(scalar_endpoint); i++)
        if (!strcmp(t, scalar_endpoint[i]))
            return t;
    if (!strncmp(t, "env.", 4) && sw__fleet_is_env_name(t + 4))
        return t;
    return NULL;
}

/* Every target spelled out, for suggestions. */
size_t sw__fleet_target_names(const char **out, size_t max)
{
    static char buf[64][48];
    size_t n = 0, nf;
    const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
    for (size_t i = 0; i < nf && n < max && n < SW_ARRAY_LEN(buf); i++) {
        snprintf(buf[n], sizeof(buf[n]), "shape.%s", fs[i].name);
        out[n] = buf[n];
        n++;
    }
    for (size_t i = 0; i < SW_ARRAY_LEN(scalar_payload) && n < max && n < SW_ARRAY_LEN(buf); i++) {
        snprintf(buf[n], sizeof(buf[n]), "payload.%s", scalar_payload[i]);
        out[n] = buf[n];
        n++;
    }
    static const char *const rest[] = {"listen.port", "listen.address", "binary",
                                       "image",       "alias",          "engine_version"};
    for (size_t i = 0; i < SW_ARRAY_LEN(rest) && n < max; i++)
        out[n++] = rest[i];
    return n;
}

int sw__fleet_dec_target(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep, const char *target,
                         const struct sw__fleet_node *n)
{
    if (!strncmp(target, "shape.", 6)) {
        const struct sw_fleet_field *f = sw_fleet_shape_field(target + 6);
        return f ? sw__fleet_dec_shape_field(c, n, f, &ep->shape) : SW_EINVAL;
    }
    if (!strncmp(target, "payload.", 8)) {
        const struct sw__fleet_fdef *d = sw__fleet_payload_def(target + 8);
        if (!d)
            return SW_EINVAL;
        int rc = d->dec(c, n, &ep->payload, d);
        sw__fleet_payload_source(&ep->payload);
        return rc;
    }
    if (!strncmp(target, "listen.", 7)) {
        const struct sw__fleet_fdef *d = sw__fleet_listen_def(target + 7);
        return d ? d->dec(c, n, ep, d) : SW_EINVAL;
    }
    if (!strncmp(target, "env.", 4)) {
        const char *name = target + 4;
        if (sw__fleet_node_is_null(n))
            return 0; /* opted out: the variable is not passed */
        const char *t = sw__fleet_scalar(c, n);
        if (!t)
            return SW_EPARSE;
        sw__fleet_record(c, n);
        if (sw__fleet_looks_secret_name(name) || sw__fleet_looks_secret_value(t))
            return sw__fleet_errp(c, n,
                                  "would copy a secret into the fleet: reference it instead, env: "
                                  "{%s: {from_env: %s}}",
                                  name, name);
        char *val = sw_region_strdup(c->a, t);
        if (!val)
            return sw__fleet_nomem(c);
        for (size_t i = 0; i < ep->n_env; i++) {
            if (!strcmp(ep->env[i].name, name)) {
                ep->env[i].value = val;
                memset(&ep->env[i].secret, 0, sizeof(ep->env[i].secret));
                ep->env[i].at = sw__fleet_at(n);
                return 0;
            }
        }
        struct sw_fleet_envvar *nv = sw_region_allocn(c->a, ep->n_env + 1, sizeof(*nv));
        char *nm = sw_region_strdup(c->a, name);
        if (!nv || !nm)
            return sw__fleet_nomem(c);
        if (ep->n_env)
            memcpy(nv, ep->env, ep->n_env * sizeof(*nv));
        nv[ep->n_env].name = nm;
        nv[ep->n_env].value = val;
        nv[ep->n_env].at = sw__fleet_at(n);
        ep->env = nv;
        ep->n_env++;
        return 0;
    }
    const struct sw__fleet_fdef *d = sw__fleet_endpoint_def(target);
    return d ? d->dec(c, n, ep, d) : SW_EINVAL;
}

/* Whether a target currently holds a value written in the fleet file (the default). */
bool sw__fleet_target_has_default(struct sw_fleet_endpoint *ep, const char *target,
                                  struct sw_fleet_at *at)
{
    if (!strncmp(target, "shape.", 6)) {
        struct sw_fleet_value v;
        if (sw_fleet_shape_get(&ep->shape, target + 6, &v))
            return false;
        *at = v.at;
        return v.set;
    }
    const struct sw_fleet_str *s = NULL;
    const struct sw_fleet_u64 *u = NULL;
    if (!strcmp(target, "payload.path"))
        s = &ep->payload.path;
    else if (!strcmp(target, "payload.repo"))
        s = &ep->payload.repo;
    else if (!strcmp(target, "payload.revision"))
        s = &ep->payload.revision;
    else if (!strcmp(target, "payload.gguf"))
        s = &ep->payload.gguf;
    else if (!strcmp(target, "payload.mmproj"))
        s = &ep->payload.mmproj;
    else if (!strcmp(target, "payload.draft"))
        s = &ep->payload.draft;
    else if (!strcmp(target, "payload.quantization"))
        s = &ep->payload.quantization;
    else if (!strcmp(target, "payload.shards"))
        u = &ep->payload.shards;
    else if (!strcmp(target, "listen.port"))
        u = &ep->listen_port;
    else if (!strcmp(target, "listen.address"))
        s = &ep->listen_address;
    else if (!strcmp(target, "binary"))
        s = &ep->binary;
    else if (!strcmp(target, "image"))
        s = &ep->image;
    else if (!strcmp(target, "alias"))
        s = &ep->alias;
    else if (!strcmp(target, "engine_version"))
        s = &ep->engine_version;
    else if (!strncmp(target, "env.", 4)) {
        for (size_t i = 0; i < ep->n_env; i++) {
            if (!strcmp(ep->env[i].name, target + 4)) {
                *at = ep->env[i].at;
                return true;
            }
        }
        return false;
    }
    if (s) {
        *at = s->at;
        return s->v != NULL;
    }
    if (u) {
        *at = u->at;
        return u->set;
    }
    return false;
}
