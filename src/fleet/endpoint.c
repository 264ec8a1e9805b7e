/*
 * Endpoints of a fleet file: engine, payload, listen address, args, env, knobs, frozen
 * settings, free-memory band, inline architecture. Everything that names another object (host,
 * devices, profile) is kept as text in struct sw__fleet_ep_raw and resolved by validate.c.
 *
 * Not here: measured facts and boots (facts.c), known-bad rules (rules.c), env-file imports
 * (envimport.c, envtarget.c).
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Endpoints: everything that names another object is kept as text here and resolved later.
 */
struct sw__fleet_ep_raw *sw__fleet_raw_of(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep)
{
    return &c->raw[ep - c->f->endpoints];
}

struct namelist {
    struct sw_fleet_str *names;
    size_t *n;
    enum sw__fleet_ft ft;
};

static int dec_listed_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *item, void *arg)
{
    struct namelist *nl = arg;
    struct sw_fleet_str *s = &nl->names[*nl->n];
    struct sw__fleet_spec sp = SW__SPEC(nl->ft);
    memset(s, 0, sizeof(*s));
    int r = sw__fleet_dec_str(c, item, &sp, s);
    if (r)
        return r;
    if (!s->v)
        return sw__fleet_errp(c, item, "must not be null");
    (*nl->n)++;
    return 0;
}

static int dec_namelist(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                        struct sw_fleet_str **out, size_t *n, enum sw__fleet_ft ft)
{
    sw__fleet_record(c, v);
    if (v->kind == SW__FLN_SCALAR && !sw__fleet_node_is_null(v)) {
        /* one name without brackets */
        *out = sw_region_alloc(c->a, sizeof(**out));
        if (!*out)
            return sw__fleet_nomem(c);
        struct sw__fleet_spec sp = SW__SPEC(ft);
        int rc = sw__fleet_dec_str(c, v, &sp, &(*out)[0]);
        if (!rc && (*out)[0].v)
            *n = 1; /* counted only when it holds a name: later passes read every counted one */
        return rc;
    }
    if (sw__fleet_node_is_null(v))
        return 0;
    *out = sw__fleet_alloc_each(c, v, sizeof(**out));
    if (!*out)
        return sw__fleet_nomem(c);
    struct namelist nl = {*out, n, ft};
    return sw__fleet_walk_seq(c, v, dec_listed_name, &nl);
}

static int ep_host(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                   const struct sw__fleet_fdef *d)
{
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
    (void)d;
    return sw__fleet_dec_str(c, v, &sp, &sw__fleet_raw_of(c, obj)->host);
}

static int ep_devices(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    struct sw__fleet_ep_raw *r = sw__fleet_raw_of(c, obj);
    (void)d;
    r->devices_given = true;
    return dec_namelist(c, v, &r->devices, &r->n_devices, SW__FT_NAME);
}

static int ep_engine(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    struct sw__fleet_spec sp = SW__SPECC(sw__fleet_engine_names);
    (void)d;
    struct sw__fleet_ep_raw *r = sw__fleet_raw_of(c, ep);
    int rc = sw__fleet_dec_str(c, v, &sp, &r->engine);
    if (!rc && r->engine.v) {
        ep->engine = sw__fleet_engine_of(r->engine.v);
        ep->engine_at = r->engine.at;
    }
    return rc;
}

static int ep_profile(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_NAME);
    (void)d;
    return sw__fleet_dec_str(c, v, &sp, &sw__fleet_raw_of(c, obj)->profile);
}

static int ep_image(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
    (void)d;
    int rc = sw__fleet_dec_str(c, v, &sp, &ep->image);
    if (rc || !ep->image.v)
        return rc;
    const char *t = ep->image.v;
    for (const char *p = t; *p; p++)
        if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20)
            return sw__fleet_errp(c, v, "'%s' is not an image reference (no spaces)", t);
    const char *at = strstr(t, "@sha256:");
    if (at) {
        const char *hex = at + 8;
        size_t n = strlen(hex);
        bool ok = n == 64;
        for (size_t i = 0; ok && i < n; i++)
            ok = isxdigit((unsigned char)hex[i]) && !isupper((unsigned char)hex[i]);
        if (!ok)
            return sw__fleet_errp(c, v,
                                  "digest of '%s' must be sha256: and 64 lowercase hex digits", t);
        ep->image_pinned = true;
    }
    return 0;
}

static const struct sw__fleet_fdef listen_defs[] = {
    {"address",
     {"host"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_endpoint, listen_address)},
    {"port",
     {0},
     sw__fleet_dec_u64f,
     SW__SPEC(SW__FT_PORT),
     offsetof(struct sw_fleet_endpoint, listen_port)},
    {"route",
     {0},
     sw__fleet_dec_strf,
     SW__SPECC(sw__fleet_route_words),
     offsetof(struct sw_fleet_endpoint, listen_route)},
};

const struct sw__fleet_fdef *sw__fleet_listen_def(const char *name)
{
    return sw__fleet_find_def(listen_defs, SW_ARRAY_LEN(listen_defs), name);
}

static int ep_listen(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct sw__fleet_fdef *d)
{
    (void)d;
    if (v->kind == SW__FLN_SCALAR && !sw__fleet_node_is_null(v)) {
        /* "127.0.0.1:8080" */
        const char *t = sw__fleet_scalar(c, v);
        if (!t)
            return SW_EPARSE;
        const char *colon = strrchr(t, ':');
        if (!colon || colon == t || !colon[1])
            return sw__fleet_errp(c, v, "'%s' must be ADDRESS:PORT or {address, port}", t);
        struct sw_fleet_endpoint *ep = obj;
        sw__fleet_record(c, v);
        char *addr = sw_region_strndup(c->a, t, (size_t)(colon - t));
        if (!addr)
            return sw__fleet_nomem(c);
        struct sw_err e;
        sw_err_clear(&e);
        uint64_t port;
        if (sw_parse_count(colon + 1, &port, &e) || port < 1 || port > 65535)
            return sw__fleet_errp(c, v, "port in '%s' must be 1..65535", t);
        ep->listen_address.v = addr;
        ep->listen_address.at = sw__fleet_at(v);
        ep->listen_port.v = port;
        ep->listen_port.set = true;
        ep->listen_port.at = sw__fleet_at(v);
        size_t s = sw__fleet_path_push(c, "address");
        sw__fleet_record(c, v);
        sw__fleet_path_pop(c, s);
        s = sw__fleet_path_push(c, "port");
        sw__fleet_record(c, v);
        sw__fleet_path_pop(c, s);
        return 0;
    }
    return sw__fleet_dec_map(c, v, obj, listen_defs, SW_ARRAY_LEN(listen_defs), "listen");
}

static int ep_api_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    (void)d;
    return sw__fleet_dec_secret_ref(c, v, &((struct sw_fleet_endpoint *)obj)->api_key, "API key");
}

struct mount_dec {
    struct sw_fleet_str host, container;
    struct sw_fleet_bool readonly;
};

static const struct sw__fleet_fdef mount_defs[] = {
    {"host", {0}, sw__fleet_dec_strf, SW__SPEC(SW__FT_PATH), offsetof(struct mount_dec, host)},
    {"container",
     {0},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_PATH),
     offsetof(struct mount_dec, container)},
    {"readonly", {0}, sw__fleet_dec_boolf, SW__SPEC(0), offsetof(struct mount_dec, readonly)},
};

static int dec_mount(struct sw__fleet_ctx *c, const struct sw__fleet_node *m, void *arg)
{
    struct sw_fleet_payload *p = arg;
    struct sw_fleet_mount *mt = &p->mounts[p->n_mounts];
    memset(mt, 0, sizeof(*mt));
    mt->at = sw__fleet_at(m);
    sw__fleet_record(c, m);
    int r = 0;
    struct mount_dec mv;
    memset(&mv, 0, sizeof(mv));
    if (m->kind == SW__FLN_SCALAR) {
        /* "HOST:CONTAINER[:ro]" as podman and docker spell it */
        const char *t = sw__fleet_scalar(c, m);
        if (!t) {
            r = SW_EPARSE;
        } else {
            const char *c1 = strchr(t, ':');
            const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c1 || (c2 && strcmp(c2, ":ro") && strcmp(c2, ":rw"))) {
                r = sw__fleet_errp(c, m, "'%s' must be HOST_PATH:CONTAINER_PATH[:ro]", t);
            } else {
                char *h = sw_region_strndup(c->a, t, (size_t)(c1 - t));
                char *ct =
                    sw_region_strndup(c->a, c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1));
                if (!h || !ct)
                    return sw__fleet_nomem(c);
                if ((h[0] != '/' && strncmp(h, "~/", 2)) || ct[0] != '/')
                    r = sw__fleet_errp(c, m, "'%s': both paths must be absolute", t);
                mv.host.v = h;
                mv.container.v = ct;
                mv.readonly.v = c2 && !strcmp(c2, ":ro");
            }
        }
    } else if (m->kind == SW__FLN_MAP) {
        r = sw__fleet_dec_map(c, m, &mv, mount_defs, SW_ARRAY_LEN(mount_defs), "mount");
        if (!r && mv.container.v && mv.container.v[0] == '~')
            r = sw__fleet_errp(c, m, "container path must be absolute");
        if (!r && (!mv.host.v || !mv.container.v))
            r = sw__fleet_errp(c, m, "needs host: and container: paths");
    } else {
        r = sw__fleet_errp(c, m, "must be HOST:CONTAINER or {host, container}");
    }
    if (r)
        return r;
    mt->host_path = mv.host.v;
    mt->container_path = mv.container.v;
    mt->readonly = mv.readonly.v;
    p->n_mounts++;
    return 0;
}

static int dec_mounts(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    struct sw_fleet_payload *p = obj;
    (void)d;
    return sw__fleet_seq_into(c, v, &p->mounts, sizeof(*p->mounts), dec_mount, p);
}

static int dec_files(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct sw__fleet_fdef *d)
{
    struct sw_fleet_payload *p = obj;
    (void)d;
    return dec_namelist(c, v, &p->files, &p->n_files, SW__FT_LPATH);
}

static int dec_repo(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct sw__fleet_fdef *d)
{
    struct sw_fleet_str *out = (struct sw_fleet_str *)((char *)obj + d->off);
    int rc = sw__fleet_dec_str(c, v, &d->spec, out);
    if (rc || !out->v)
        return rc;
    /* The engine says "Repo id must be in the form namespace/repo_name" seven minutes into a
     * boot; say it now. */
    const char *t = out->v;
    const char *slash = strchr(t, '/');
    bool ok = slash && slash != t && slash[1] && !strchr(slash + 1, '/');
    for (const char *p = t; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '/' || *p == '-' || *p == '_' || *p == '.';
    if (!ok)
        return sw__fleet_errp(c, v,
                              "'%s' is not a Hugging Face repo id: it must be namespace/name (a "
                              "local directory goes under path:)",
                              t);
    return 0;
}

static const struct sw__fleet_fdef payload_defs[] = {
    {"path",
     {"dir", "model"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_PATH),
     offsetof(struct sw_fleet_payload, path)},
    {"repo", {"hf_repo"}, dec_repo, SW__SPEC(SW__FT_STR), offsetof(struct sw_fleet_payload, repo)},
    {"revision",
     {"rev"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_WORD),
     offsetof(struct sw_fleet_payload, revision)},
    {"files", {"globs"}, dec_files, SW__SPEC(0), 0},
    {"shards",
     {0},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_COUNT, 1, 0),
     offsetof(struct sw_fleet_payload, shards)},
    {"gguf",
     {"gguf_file"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_LPATH),
     offsetof(struct sw_fleet_payload, gguf)},
    {"mmproj",
     {"projector"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_LPATH),
     offsetof(struct sw_fleet_payload, mmproj)},
    {"draft",
     {"draft_model"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_LPATH),
     offsetof(struct sw_fleet_payload, draft)},
    {"quantization",
     {"quant", "dtype"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_payload, quantization)},
    {"mounts", {0}, dec_mounts, SW__SPEC(0), 0},
};

void sw__fleet_payload_source(struct sw_fleet_payload *p)
{
    p->source = p->path.v   ? SW_FLEET_PAYLOAD_LOCAL
                : p->repo.v ? SW_FLEET_PAYLOAD_HF
                            : SW_FLEET_PAYLOAD_NONE;
}

const struct sw__fleet_fdef *sw__fleet_payload_def(const char *name)
{
    return sw__fleet_find_def(payload_defs, SW_ARRAY_LEN(payload_defs), name);
}

static int ep_payload(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    int rc =
        sw__fleet_dec_map(c, v, &ep->payload, payload_defs, SW_ARRAY_LEN(payload_defs), "payload");
    sw__fleet_payload_source(&ep->payload);
    return rc;
}

static int ep_shape(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct sw__fleet_fdef *d)
{
    (void)d;
    return sw__fleet_dec_shape(c, v, &((struct sw_fleet_endpoint *)obj)->shape);
}

static int dec_arg(struct sw__fleet_ctx *c, const struct sw__fleet_node *a, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    struct sw_fleet_str *s = &ep->args[ep->n_args];
    memset(s, 0, sizeof(*s));
    int r = 0;
    /* an argument may be any scalar (a number, a JSON string); kept as written */
    const char *t = sw__fleet_scalar(c, a);
    if (!t) {
        r = SW_EPARSE;
    } else {
        s->v = sw_region_strdup(c->a, t);
        s->at = sw__fleet_at(a);
        sw__fleet_record(c, a);
        if (!s->v)
            return sw__fleet_nomem(c);
        /* A token on a command line is readable by every user of the host (ps, /proc). */
        const char *prev = ep->n_args ? ep->args[ep->n_args - 1].v : NULL;
        bool flag_secret = !strncmp(t, "--", 2) && sw__fleet_looks_secret_name(t + 2) &&
                           strchr(t, '=') && strchr(t, '=')[1];
        bool after_secret_flag = prev && !strncmp(prev, "--", 2) && !strchr(prev, '=') &&
                                 sw__fleet_looks_secret_name(prev + 2);
        if (sw__fleet_looks_secret_value(t) || flag_secret || after_secret_flag)
            r = sw__fleet_errp(c, a,
                               "puts a secret on the engine's command line, where every user "
                               "of the host can read it: pass it by reference (api_key: "
                               "{from_env: NAME}, or env: {NAME: {from_env: NAME}})");
    }
    if (r)
        return r;
    ep->n_args++;
    return 0;
}

static int ep_args(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                   const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    return sw__fleet_seq_into(c, v, &ep->args, sizeof(*ep->args), dec_arg, ep);
}

static const char *env_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, void *arg)
{
    (void)arg;
    if (strlen(k->text) == k->len && sw__fleet_is_env_name(k->text))
        return k->text;
    struct sw_fleet_at at = sw__fleet_at(k);
    sw__fleet_err(c, &at, "%s: '%s' is not an environment variable name", c->path, k->text);
    return NULL;
}

static int dec_envvar(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                      const struct sw__fleet_node *val, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    struct sw_fleet_envvar *ev = &ep->env[ep->n_env];
    memset(ev, 0, sizeof(*ev));
    ev->name = sw_region_strdup(c->a, k->text);
    if (!ev->name)
        return sw__fleet_nomem(c);
    ev->at = sw__fleet_at(val);
    int r = 0;
    if (val->kind == SW__FLN_MAP) {
        r = sw__fleet_dec_secret_ref(c, val, &ev->secret, "secret");
    } else {
        struct sw_fleet_str s = {0};
        struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
        if (val->kind == SW__FLN_SCALAR && val->len == 0 && !val->plain) {
            /* VAR: "" is a deliberate empty value */
            sw__fleet_record(c, val);
            s.v = "";
        } else {
            r = sw__fleet_dec_str(c, val, &sp, &s);
        }
        if (!r && !s.v)
            r = sw__fleet_errp(c, val, "needs a value (\"\" for an empty one)");
        if (!r && *s.v &&
            (sw__fleet_looks_secret_name(k->text) || sw__fleet_looks_secret_value(s.v)))
            r = sw__fleet_errp(c, val,
                               "is a literal secret: give it by reference, {from_env: %s} or "
                               "{from_file: PATH}, never written in the fleet file",
                               k->text);
        ev->value = s.v;
    }
    if (!r)
        ep->n_env++;
    return r;
}

static int ep_env(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                  const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw__fleet_walk w = {.key = env_key, .fn = dec_envvar, .arg = ep};
    return sw__fleet_map_into(c, v, &ep->env, sizeof(*ep->env), &w);
}

static int ep_env_file(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    (void)d;
    sw__fleet_record(c, v);
    sw__fleet_raw_of(c, obj)->env_file = v; /* imported after the whole file is decoded */
    return 0;
}

/* Knob names: a shape field (canonical name returned), env.NAME, arg.--flag, or load.mix (the
 * request mix `slipway tune` sweeps inside a boot: a set of DEPTH/TOKENS, docs/tune.md). */
static const char *knob_name(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                             const struct sw_fleet_field **field)
{
    const char *t = k->text;
    *field = NULL;
    if (strlen(t) != k->len)
        return NULL;
    if (!strcmp(t, "load.mix"))
        return t;
    if (!strncmp(t, "env.", 4) && sw__fleet_is_env_name(t + 4))
        return t;
    if (!strncmp(t, "arg.--", 6) && t[6]) {
        for (const char *p = t + 6; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
                return NULL;
        return t;
    }
    *field = sw_fleet_shape_field(t);
    return *field ? (*field)->name : NULL;
}

static int unknown_knob(struct sw__fleet_ctx *c, const struct sw__fleet_node *k)
{
    const char *sug = sw__fleet_near_field(k->text);
    struct sw_fleet_at at = sw__fleet_at(k);
    return sw__fleet_err(c, &at, "%s: '%s' is not a shape field, env.NAME or arg.--flag%s%s%s",
                         c->path, k->text, sug ? " (did you mean '" : "", sug ? sug : "",
                         sug ? "'?)" : "");
}

static struct sw__fleet_spec field_spec(const struct sw_fleet_field *f)
{
    if (f)
        return sw__fleet_shape_slot(f)->spec;
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_STR);
    return sp;
}

static int dec_knob(struct sw__fleet_ctx *c, const struct sw__fleet_node *v,
                    struct sw_fleet_knob *kb, const struct sw_fleet_field *f)
{
    enum sw_fleet_vtype t = f ? f->type : SW_FLEET_V_STR;
    struct sw__fleet_spec sp = field_spec(f);
    kb->type = t;
    sw__fleet_record(c, v);
    int rc = 0;
    if (v->kind == SW__FLN_SEQ) {
        kb->values = sw__fleet_alloc_each(c, v, sizeof(*kb->values));
        if (!kb->values)
            return sw__fleet_nomem(c);
        if (!v->n)
            return sw__fleet_errp(c, v, "lists no values");
        for (size_t i = 0; i < v->n && !c->oom; i++) {
            size_t saved = sw__fleet_path_index(c, i);
            int r = sw__fleet_dec_value(c, v->kids[i], t, &sp, &kb->values[kb->n_values]);
            sw__fleet_path_pop(c, saved);
            if (r)
                rc = r;
            else
                kb->n_values++;
        }
        return c->oom ? SW_ENOMEM : rc;
    }
    if (t == SW_FLEET_V_STR || t == SW_FLEET_V_BOOL) {
        if (v->kind == SW__FLN_MAP)
            return sw__fleet_errp(c, v, "is a %s setting: list its values, [a, b]",
                                  t == SW_FLEET_V_BOOL ? "true/false" : "named");
    }
    const struct sw__fleet_node *mn = NULL, *mx = NULL, *st = NULL;
    if (v->kind == SW__FLN_MAP) {
        for (size_t i = 0; i < v->n; i++) {
            const struct sw__fleet_node *k = v->kids[2 * i];
            if (!strcmp(k->text, "min"))
                mn = v->kids[2 * i + 1];
            else if (!strcmp(k->text, "max"))
                mx = v->kids[2 * i + 1];
            else if (!strcmp(k->text, "step"))
                st = v->kids[2 * i + 1];
            else {
                static const char *const known[] = {"min", "max", "step"};
                rc = sw__fleet_unknown_key(c, k, "knob", known, 3);
            }
        }
        if (rc)
            return rc;
        if (!mn || !mx)
            return sw__fleet_errp(c, v, "needs min: and max: (or a list of values)");
    } else if (v->kind == SW__FLN_SCALAR) {
        return sw__fleet_errp(c, v, "must be {min: A, max: B[, step: S]} or a list of values");
    }
    kb->is_range = true;
    size_t saved = sw__fleet_path_push(c, "min");
    int r1 = sw__fleet_dec_value(c, mn, t, &sp, &kb->min);
    sw__fleet_path_pop(c, saved);
    saved = sw__fleet_path_push(c, "max");
    int r2 = sw__fleet_dec_value(c, mx, t, &sp, &kb->max);
    sw__fleet_path_pop(c, saved);
    int r3 = 0;
    if (st) {
        saved = sw__fleet_path_push(c, "step");
        struct sw__fleet_spec ssp = sp;
        ssp.min = 1;
        ssp.max = 0;
        ssp.fmin = 0;
        ssp.fmin_open = true;
        r3 = sw__fleet_dec_value(c, st, t, &ssp, &kb->step);
        sw__fleet_path_pop(c, saved);
    }
    if (r1 || r2 || r3)
        return r1 ? r1 : r2 ? r2 : r3;
    bool bad = (t == SW_FLEET_V_REAL) ? kb->min.f > kb->max.f : kb->min.u > kb->max.u;
    if (bad)
        return sw__fleet_errp(c, v, "min is above max");
    return 0;
}

/* A knob's key: its canonical name, unless unknown or named twice (reported). */
static const char *knob_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, void *arg)
{
    const struct sw_fleet_endpoint *ep = arg;
    const struct sw_fleet_field *f;
    const char *nm = knob_name(c, k, &f);
    if (!nm) {
        unknown_knob(c, k);
        return NULL;
    }
    for (size_t j = 0; j < ep->n_knobs; j++) {
        if (!strcmp(ep->knobs[j].name, nm)) {
            struct sw_fleet_at at = sw__fleet_at(k);
            sw__fleet_err(c, &at, "%s: '%s' names knob %s again (already at line %d)", c->path,
                          k->text, nm, ep->knobs[j].at.line);
            return NULL;
        }
    }
    return nm;
}

static int dec_knob_pair(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                         const struct sw__fleet_node *v, void *arg)
{
    struct sw_fleet_endpoint *ep = arg;
    const struct sw_fleet_field *f;
    const char *nm = knob_name(c, k, &f);
    struct sw_fleet_knob *kb = &ep->knobs[ep->n_knobs];
    memset(kb, 0, sizeof(*kb));
    kb->name = sw_region_strdup(c->a, nm);
    if (!kb->name)
        return sw__fleet_nomem(c);
    kb->at = sw__fleet_at(k);
    int r = dec_knob(c, v, kb, f);
    if (!r)
        ep->n_knobs++;
    return r;
}

static int ep_knobs(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw__fleet_walk w = {.key = knob_key, .fn = dec_knob_pair, .arg = ep};
    return sw__fleet_map_into(c, v, &ep->knobs, sizeof(*ep->knobs), &w);
}

static const char *const frozen_words[] = {"image",          "binary",  "engine",
                                           "engine_version", "profile", "payload",
                                           "quantization",   "alias",   NULL};

static int ep_frozen(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                     const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    struct sw_fleet_str *names = NULL;
    size_t n = 0;
    int rc = dec_namelist(c, v, &names, &n, SW__FT_LPATH);
    if (rc)
        return rc;
    ep->frozen = sw_region_allocn(c->a, n ? n : 1, sizeof(*ep->frozen));
    if (!ep->frozen)
        return sw__fleet_nomem(c);
    for (size_t i = 0; i < n; i++) {
        const char *t = names[i].v;
        const char *canon = NULL;
        for (size_t w = 0; frozen_words[w] && !canon; w++)
            if (!strcmp(frozen_words[w], t))
                canon = frozen_words[w];
        if (!canon && ((!strncmp(t, "env.", 4) && sw__fleet_is_env_name(t + 4)) ||
                       (!strncmp(t, "arg.--", 6) && t[6])))
            canon = t;
        if (!canon) {
            const struct sw_fleet_field *f = sw_fleet_shape_field(t);
            canon = f ? f->name : NULL;
        }
        if (!canon) {
            const char *known[80];
            size_t nk = 0;
            for (size_t w = 0; frozen_words[w]; w++)
                known[nk++] = frozen_words[w];
            size_t nf;
            const struct sw_fleet_field *fs = sw_fleet_shape_fields(&nf);
            for (size_t q = 0; q < nf && nk < SW_ARRAY_LEN(known); q++)
                known[nk++] = fs[q].name;
            const char *sug = sw__fleet_suggest(t, known, nk);
            rc = sw__fleet_err(c, &names[i].at,
                               "%s: '%s' is not something that can be frozen (a shape field, "
                               "image, binary, engine, profile, payload, quantization, alias, "
                               "env.NAME, arg.--flag)%s%s%s",
                               c->path, t, sug ? "; did you mean '" : "", sug ? sug : "",
                               sug ? "'?" : "");
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < ep->n_frozen && !dup; j++)
            dup = !strcmp(ep->frozen[j].name, canon);
        if (dup) {
            rc = sw__fleet_err(c, &names[i].at, "%s: '%s' is listed twice", c->path, t);
            continue;
        }
        ep->frozen[ep->n_frozen].name = canon;
        ep->frozen[ep->n_frozen].at = names[i].at;
        ep->n_frozen++;
    }
    return rc;
}

static int ep_free_band(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                        const struct sw__fleet_fdef *d)
{
    struct sw_fleet_band *b = &((struct sw_fleet_endpoint *)obj)->free_band;
    (void)d;
    struct sw__fleet_spec sp = SW__SPEC(SW__FT_BYTES_APPROX);
    b->at = sw__fleet_at(v);
    sw__fleet_record(c, v);
    int rc = 0;
    if (v->kind == SW__FLN_SCALAR) {
        /* "2GiB..3GiB" */
        const char *t = sw__fleet_scalar(c, v);
        if (!t)
            return SW_EPARSE;
        const char *dots = strstr(t, "..");
        if (!dots)
            return sw__fleet_errp(c, v, "'%s' must be MIN..MAX (like 2GiB..3GiB) or {min, max}", t);
        struct sw__fleet_node lo = *v, hi = *v;
        char *l = sw_region_strndup(c->a, t, (size_t)(dots - t));
        char *h = sw_region_strdup(c->a, dots + 2);
        if (!l || !h)
            return sw__fleet_nomem(c);
        lo.text = l;
        lo.len = strlen(l);
        lo.plain = false;
        hi.text = h;
        hi.len = strlen(h);
        hi.plain = false;
        size_t saved = sw__fleet_path_push(c, "min");
        rc = sw__fleet_dec_u64(c, &lo, &sp, &b->min);
        sw__fleet_path_pop(c, saved);
        saved = sw__fleet_path_push(c, "max");
        int r2 = sw__fleet_dec_u64(c, &hi, &sp, &b->max);
        sw__fleet_path_pop(c, saved);
        if (r2)
            rc = r2;
    } else {
        static const struct sw__fleet_fdef defs[] = {
            {"min",
             {0},
             sw__fleet_dec_u64f,
             SW__SPEC(SW__FT_BYTES_APPROX),
             offsetof(struct sw_fleet_band, min)},
            {"max",
             {0},
             sw__fleet_dec_u64f,
             SW__SPEC(SW__FT_BYTES_APPROX),
             offsetof(struct sw_fleet_band, max)},
        };
        rc = sw__fleet_dec_map(c, v, b, defs, SW_ARRAY_LEN(defs), "free_band");
    }
    if (rc)
        return rc;
    if (!b->min.set || !b->max.set)
        return sw__fleet_errp(c, v, "needs both min and max");
    if (b->min.v > b->max.v)
        return sw__fleet_errp(c, v, "min (%llu B) is above max (%llu B)",
                              (unsigned long long)b->min.v, (unsigned long long)b->max.v);
    return 0;
}

/* An architecture map (arch, draft_arch), kept as JSON with where it was written. */
static int read_arch(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, json_t **out,
                     struct sw_fleet_at *at)
{
    sw__fleet_record(c, v);
    *at = sw__fleet_at(v);
    if (!sw__fleet_want_map(c, v))
        return SW_EPARSE;
    struct sw_err e;
    sw_err_clear(&e);
    json_t *j = sw__fleet_node_to_json(v, &e);
    if (!j)
        return e.code == SW_ENOMEM ? sw__fleet_nomem(c) : sw__fleet_err_from(c, v, &e);
    int rc = sw__fleet_keep_json(c, j);
    if (!rc)
        *out = j;
    return rc;
}

static int ep_arch(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                   const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    return read_arch(c, v, &ep->arch, &ep->arch_at);
}

/* draft_arch: the draft model's architecture, read like `arch` */
static int ep_draft_arch(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                         const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    return read_arch(c, v, &ep->draft_arch, &ep->draft_arch_at);
}

/* watch: the supervisor's policy, kept as JSON with where it was written (src/watch reads it) */
static int ep_watch(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                    const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    (void)d;
    return read_arch(c, v, &ep->watch, &ep->watch_at);
}

static int dec_enabled(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                       const struct sw__fleet_fdef *d)
{
    struct sw_fleet_bool b = {0};
    (void)d;
    int rc = sw__fleet_dec_bool(c, v, &b);
    if (!rc && b.set)
        ((struct sw_fleet_endpoint *)obj)->enabled = b.v;
    return rc;
}

/* patches: [{file, patch, base_sha256, patched_sha256, base?}] */
static int ep_patches(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, void *obj,
                      const struct sw__fleet_fdef *d)
{
    struct sw_fleet_endpoint *ep = obj;
    static const char *const keys[] = {"file", "patch", "base", "base_sha256", "patched_sha256"};
    (void)d;
    sw__fleet_record(c, v);
    if (v->kind != SW__FLN_SEQ || v->n == 0 || v->n > 256)
        return sw__fleet_errp(c, v,
                              "patches must be a list of {file, patch, base_sha256, "
                              "patched_sha256}");
    ep->patches = sw_region_allocn(c->a, v->n, sizeof(*ep->patches));
    if (!ep->patches)
        return sw__fleet_nomem(c);
    for (size_t i = 0; i < v->n; i++) {
        const struct sw__fleet_node *m = v->kids[i];
        struct sw_fleet_patch *p = &ep->patches[i];
        const char **dst[] = {&p->file, &p->patch, &p->base, &p->base_sha256, &p->patched_sha256};
        if (m->kind != SW__FLN_MAP)
            return sw__fleet_errp(c, m,
                                  "entry %zu must be {file, patch, base_sha256, "
                                  "patched_sha256}",
                                  i);
        p->at = sw__fleet_at(m);
        for (size_t k = 0; k < m->n; k++) {
            const struct sw__fleet_node *kn = m->kids[2 * k], *vn = m->kids[2 * k + 1];
            size_t q = 0;
            while (q < SW_ARRAY_LEN(keys) && (!kn->text || strcmp(kn->text, keys[q])))
                q++;
            if (q == SW_ARRAY_LEN(keys))
                return sw__fleet_errp(c, kn,
                                      "entry %zu: unknown key '%s' (file, patch, base, "
                                      "base_sha256, patched_sha256)",
                                      i, kn->text ? kn->text : "");
            if (vn->kind != SW__FLN_SCALAR || !vn->text || !vn->text[0])
                return sw__fleet_errp(c, vn, "entry %zu: %s must be a string", i, keys[q]);
            bool hash = q >= 3;
            size_t l = strlen(vn->text);
            bool hex = l == 64;
            for (size_t x = 0; hash && hex && x < l; x++)
                hex = isxdigit((unsigned char)vn->text[x]) != 0;
            if (hash && !hex)
                return sw__fleet_errp(c, vn,
                                      "entry %zu: %s must be a sha256 (64 hex digits): a "
                                      "prefix cannot verify a file",
                                      i, keys[q]);
            *dst[q] = sw_region_strdup(c->a, vn->text);
            if (!*dst[q])
                return sw__fleet_nomem(c);
        }
        if (!p->file || !p->patch || !p->base_sha256 || !p->patched_sha256)
            return sw__fleet_errp(c, m,
                                  "entry %zu needs file, patch, base_sha256 and "
                                  "patched_sha256",
                                  i);
    }
    ep->n_patches = v->n;
    return 0;
}

static const struct sw__fleet_fdef endpoint_defs[] = {
    {"enabled", {0}, dec_enabled, SW__SPEC(SW__FT_BOOL), 0},
    {"host", {0}, ep_host, SW__SPEC(0), 0},
    {"devices", {0}, ep_devices, SW__SPEC(0), 0},
    {"engine", {0}, ep_engine, SW__SPEC(0), 0},
    {"engine_version",
     {0},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_endpoint, engine_version)},
    {"profile", {"engine_profile"}, ep_profile, SW__SPEC(0), 0},
    {"binary",
     {"bin"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_PATH),
     offsetof(struct sw_fleet_endpoint, binary)},
    {"image", {"container_image"}, ep_image, SW__SPEC(0), 0},
    {"listen", {0}, ep_listen, SW__SPEC(0), 0},
    {"alias",
     {"served_model_name"},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_STR),
     offsetof(struct sw_fleet_endpoint, alias)},
    {"api_key", {0}, ep_api_key, SW__SPEC(0), 0},
    {"runtime", {0}, sw__fleet_ep_runtime, SW__SPEC(0), 0},
    {"service", {"unit"}, sw__fleet_ep_service, SW__SPEC(0), 0},
    {"serve", {0}, sw__fleet_ep_serve, SW__SPEC(0), 0},
    {"payload", {0}, ep_payload, SW__SPEC(0), 0},
    {"shape", {0}, ep_shape, SW__SPEC(0), 0},
    {"args", {"extra_args"}, ep_args, SW__SPEC(0), 0},
    {"env", {"environment"}, ep_env, SW__SPEC(0), 0},
    {"env_file", {0}, ep_env_file, SW__SPEC(0), 0},
    {"knobs", {"movable"}, ep_knobs, SW__SPEC(0), 0},
    {"frozen", {0}, ep_frozen, SW__SPEC(0), 0},
    {"free_band", {0}, ep_free_band, SW__SPEC(0), 0},
    {"measured", {"facts"}, sw__fleet_ep_measured, SW__SPEC(0), 0},
    {"boots", {0}, sw__fleet_ep_boots, SW__SPEC(0), 0},
    {"known_bad", {0}, sw__fleet_ep_known_bad, SW__SPEC(0), 0},
    {"patches", {0}, ep_patches, SW__SPEC(0), 0},
    {"waive", {"waivers"}, sw__fleet_ep_waive, SW__SPEC(0), 0},
    {"contract", {0}, sw__fleet_ep_contract, SW__SPEC(0), 0},
    {"arch", {"architecture"}, ep_arch, SW__SPEC(0), 0},
    {"draft_arch", {"draft_architecture"}, ep_draft_arch, SW__SPEC(0), 0},
    {"note",
     {0},
     sw__fleet_dec_strf,
     SW__SPEC(SW__FT_TEXT),
     offsetof(struct sw_fleet_endpoint, note)},
    {"nodes",
     {0},
     sw__fleet_dec_u64f,
     SW__SPECN(SW__FT_COUNT, 1, 1024),
     offsetof(struct sw_fleet_endpoint, nodes)},
    {"watch", {0}, ep_watch, SW__SPEC(0), 0},
};

static int dec_endpoint(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                        const struct sw__fleet_node *ev, void *arg)
{
    struct sw_fleet *f = c->f;
    (void)arg;
    struct sw_fleet_endpoint *ep = &f->endpoints[f->n_endpoints++];
    ep->name = sw_region_strdup(c->a, k->text);
    if (!ep->name)
        return sw__fleet_nomem(c);
    ep->at = sw__fleet_at(k);
    ep->enabled = true;
    return sw__fleet_dec_map(c, ev, ep, endpoint_defs, SW_ARRAY_LEN(endpoint_defs), "endpoint");
}

int sw__fleet_dec_endpoints(struct sw__fleet_ctx *c, const struct sw__fleet_node *v)
{
    struct sw_fleet *f = c->f;
    int rc =
        sw__fleet_alloc_pair(c, v, &f->endpoints, sizeof(*f->endpoints), &c->raw, sizeof(*c->raw));
    if (rc)
        return rc;
    struct sw__fleet_walk w = {.what = "endpoint", .fn = dec_endpoint};
    return sw__fleet_walk(c, v, &w);
}

const struct sw__fleet_fdef *sw__fleet_endpoint_def(const char *name)
{
    return sw__fleet_find_def(endpoint_defs, SW_ARRAY_LEN(endpoint_defs), name);
}

uint64_t sw_fleet_endpoint_nodes(const struct sw_fleet_endpoint *ep)
{
    return ep && ep->nodes.set && ep->nodes.v > 1 ? ep->nodes.v : 1;
}
