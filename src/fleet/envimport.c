/*
 * Importing an endpoint's values from the operator's KEY=VALUE env file, under the rule the
 * operator's serve scripts were fixed to follow (seed log: "The serve script now honors caller
 * environment overrides over the env file ... and defaults apply only when a value is unset, so an
 * explicit LLAMA_BIN='' is the error it reads as"):
 *
 *   the caller's environment  >  the env file  >  the value written in fleet.yaml (the default)
 *
 * An explicit empty value (in the environment or the file) is an error, unless the key is listed
 * under opt_out, where empty means "off" (MMPROJ_FILE= : text-only, no projector). A mapped key
 * found nowhere keeps the fleet.yaml value, with a warning (and a suggestion when a key of the
 * file is close: a typo in the mapping must not pass silently).
 *
 * Each imported value is decoded exactly as the YAML value would be, and keeps the position it
 * came from (env-file line:col, or "environment variable NAME"), so later errors point into the
 * env file.
 */
#include "fleet_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *real_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static int keep_envfile(struct sw__fleet_ctx *c, struct sw_fleet_envfile *ef)
{
    struct sw__fleet_priv *p = c->p;
    if (sw_grow(&p->envfiles, &p->cap_envfiles, p->n_envfiles, sizeof(*p->envfiles), SIZE_MAX)) {
        sw_fleet_envfile_free(ef);
        return sw__fleet_nomem(c);
    }
    p->envfiles[p->n_envfiles++] = ef;
    return 0;
}

static int read_file(struct sw__fleet_ctx *c, const char *path, char **data, size_t *len,
                     struct sw_err *e)
{
    if (c->opts && c->opts->read)
        return c->opts->read(c->opts->read_ctx, path, SW_FLEET_MAX_ENVFILE, data, len, e);
    return sw_read_file(path, SW_FLEET_MAX_ENVFILE, data, len, e);
}

/* A list of env-file keys (opt_out:, optional:). */
static int key_list(struct sw__fleet_ctx *c, const struct sw__fleet_node *n, const char *what,
                    const char ***out, size_t *count)
{
    int rc = 0;
    size_t s2 = sw__fleet_path_push(c, what);
    sw__fleet_record(c, n);
    if (n->kind != SW__FLN_SEQ) {
        rc = sw__fleet_errp(c, n, "must be a list of keys");
        goto out;
    }
    *out = sw_region_allocn(c->a, n->n ? n->n : 1, sizeof(**out));
    if (!*out) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    for (size_t i = 0; i < n->n; i++) {
        const char *t = sw__fleet_scalar(c, n->kids[i]);
        if (!t) {
            rc = SW_EPARSE;
            continue;
        }
        if (!sw__fleet_is_env_name(t)) {
            rc = sw__fleet_errp(c, n->kids[i], "'%s' is not an env-file key", t);
            continue;
        }
        (*out)[(*count)++] = t;
    }
out:
    sw__fleet_path_pop(c, s2);
    return rc;
}

struct entry {
    const struct sw__fleet_node *key;
    const char *target;
};

struct imports {
    struct entry *entries;
    size_t n;
};

static const char *import_key(struct sw__fleet_ctx *c, const struct sw__fleet_node *k, void *arg)
{
    (void)arg;
    if (strlen(k->text) == k->len && sw__fleet_is_env_name(k->text))
        return k->text;
    struct sw_fleet_at kat = sw__fleet_at(k);
    sw__fleet_err(c, &kat, "%s: '%s' is not an env-file key", c->path, k->text);
    return NULL;
}

/* One `KEY: target` of map:, checked against the targets and the keys already mapped. */
static int dec_import(struct sw__fleet_ctx *c, const struct sw__fleet_node *k,
                      const struct sw__fleet_node *v, void *arg)
{
    struct imports *im = arg;
    const char *t = sw__fleet_scalar(c, v);
    if (!t)
        return SW_EPARSE;
    const char *canon = sw__fleet_target_canon(t, c->a);
    if (!canon) {
        const char *names[96];
        size_t nn = sw__fleet_target_names(names, SW_ARRAY_LEN(names));
        const char *sug = sw__fleet_suggest(t, names, nn);
        return sw__fleet_errp(c, v,
                              "'%s' is not a field an env file can set (shape.FIELD, "
                              "payload.path|repo|revision|gguf|mmproj|draft|..., "
                              "listen.port, binary, image, alias, env.NAME)%s%s%s",
                              t, sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
    }
    for (size_t j = 0; j < im->n; j++)
        if (!strcmp(im->entries[j].target, canon))
            return sw__fleet_errp(c, v, "%s is already imported from %s (line %d)", canon,
                                  im->entries[j].key->text, im->entries[j].key->line);
    sw__fleet_record(c, v);
    im->entries[im->n].key = k;
    im->entries[im->n].target = canon;
    im->n++;
    return 0;
}

/* An env_file: declaration as the import reads it. */
struct envdecl {
    const struct sw__fleet_node *path, *map, *opt_out, *optional;
    const char *full; /* the file, relative paths from the fleet file's directory (arena) */
    struct entry *entries;
    size_t n_entries;
    const char **opt_keys, **optional_keys;
    size_t n_opt, n_optional;
    sw_fleet_getenv_fn genv;
    void *genv_ctx;
};

/* env_file: as a path, or as {path, map, opt_out, optional}, into d. Returns an unknown key's
 * error (the rest is still read); d->path stays NULL, with the error reported, when there is no
 * path to import. */
static int decl_parts(struct sw__fleet_ctx *c, const struct sw__fleet_node *decl, struct envdecl *d)
{
    int rc = 0;
    if (decl->kind == SW__FLN_SCALAR) {
        d->path = decl;
        return 0;
    }
    if (decl->kind != SW__FLN_MAP)
        return sw__fleet_errp(c, decl, "must be a path or {path, map, opt_out}");
    for (size_t i = 0; i < decl->n; i++) {
        const struct sw__fleet_node *k = decl->kids[2 * i], *v = decl->kids[2 * i + 1];
        if (!strcmp(k->text, "path"))
            d->path = v;
        else if (!strcmp(k->text, "map"))
            d->map = v;
        else if (!strcmp(k->text, "opt_out"))
            d->opt_out = v;
        else if (!strcmp(k->text, "optional"))
            d->optional = v;
        else {
            static const char *const known[] = {"path", "map", "opt_out", "optional"};
            rc = sw__fleet_unknown_key(c, k, "env_file", known, 4);
        }
    }
    if (!d->path)
        return sw__fleet_errp(c, decl, "needs path: the env file to import");
    return rc;
}

/* path: decoded, and made the file to read (~/ from $HOME, a relative path from the fleet file's
 * directory) into d->full. */
static int decl_file(struct sw__fleet_ctx *c, struct envdecl *d)
{
    size_t s2 = sw__fleet_path_push(c, "path");
    struct sw_fleet_str ps = {0};
    struct sw__fleet_spec lp = {.ft = SW__FT_LPATH};
    int r = sw__fleet_dec_str(c, d->path, &lp, &ps);
    sw__fleet_path_pop(c, s2);
    if (r || !ps.v)
        return r ? r : sw__fleet_errp(c, d->path, "needs a path");
    d->full = ps.v;
    if (ps.v[0] == '~' && (ps.v[1] == '/' || !ps.v[1])) {
        const char *home = getenv("HOME");
        d->full = sw_region_printf(c->a, "%s%s", home ? home : "", ps.v + 1);
    } else if (ps.v[0] != '/' && c->dir[0]) {
        d->full = sw_region_printf(c->a, "%s%s", c->dir, ps.v);
    }
    return d->full ? 0 : sw__fleet_nomem(c);
}

/* opt_out:, optional: and map:, each key of the first two mapped by the third. Returns the last
 * error met (every one is reported); out of memory shows in c->oom. */
static int decl_lists(struct sw__fleet_ctx *c, struct envdecl *d)
{
    int rc = 0;
    /* opt-outs and optional keys first, so the map can be checked against them */
    if (d->opt_out && key_list(c, d->opt_out, "opt_out", &d->opt_keys, &d->n_opt))
        rc = SW_EPARSE;
    if (d->optional && key_list(c, d->optional, "optional", &d->optional_keys, &d->n_optional))
        rc = SW_EPARSE;
    if (c->oom)
        return rc;
    if (d->map) {
        size_t s2 = sw__fleet_path_push(c, "map");
        struct imports im = {.n = 0};
        im.entries = sw_region_allocn(c->a, d->map->n ? d->map->n : 1, sizeof(*im.entries));
        if (!im.entries) {
            sw__fleet_path_pop(c, s2);
            return sw__fleet_nomem(c);
        }
        struct sw__fleet_walk w = {.key = import_key, .fn = dec_import, .arg = &im};
        int r = sw__fleet_walk(c, d->map, &w);
        if (r)
            rc = r;
        d->entries = im.entries;
        d->n_entries = im.n;
        sw__fleet_path_pop(c, s2);
    }
    for (size_t i = 0; i < d->n_opt + d->n_optional; i++) {
        const char *k = i < d->n_opt ? d->opt_keys[i] : d->optional_keys[i - d->n_opt];
        bool mapped = false;
        for (size_t j = 0; j < d->n_entries && !mapped; j++)
            mapped = !strcmp(d->entries[j].key->text, k);
        if (!mapped) {
            const struct sw__fleet_node *ln = i < d->n_opt ? d->opt_out : d->optional;
            struct sw_fleet_at at = sw__fleet_at(ln);
            rc = sw__fleet_err(c, &at, "%s.%s lists %s, which map: does not import", c->path,
                               i < d->n_opt ? "opt_out" : "optional", k);
        }
    }
    return rc;
}

/* The env file read and parsed, kept by the fleet: *out. Its errors point into it. */
static int read_envfile(struct sw__fleet_ctx *c, const struct envdecl *d,
                        struct sw_fleet_envfile **out)
{
    char *text = NULL;
    size_t len = 0;
    struct sw_err e;
    sw_err_clear(&e);
    int r = read_file(c, d->full, &text, &len, &e);
    if (r) {
        if (r == SW_ENOMEM)
            return sw__fleet_nomem(c);
        return sw__fleet_errp(c, d->path, "cannot be imported: %s: %s", d->full, e.msg);
    }
    struct sw_fleet_envfile *ef = NULL;
    sw_err_clear(&e);
    r = sw__fleet_envfile_parse(d->full, text, len, d->genv, d->genv_ctx, &ef, &e);
    sw_free(text);
    if (r) {
        if (r == SW_ENOMEM)
            return sw__fleet_nomem(c);
        char *where = sw_region_strdup(c->a, e.where);
        struct sw_fleet_at at = {.file = where ? where : c->file, .line = e.line, .col = e.col};
        return sw__fleet_err(c, &at, "%s", e.msg);
    }
    r = keep_envfile(c, ef);
    if (!r)
        *out = ef;
    return r;
}

static bool listed(const char *const *keys, size_t n, const char *key)
{
    for (size_t j = 0; j < n; j++)
        if (!strcmp(keys[j], key))
            return true;
    return false;
}

/* A mapped key set neither in the environment nor in the file: the fleet file's value stays,
 * with a warning unless the key is declared optional. */
static void import_missing(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                           const struct envdecl *d, const struct sw_fleet_envfile *ef,
                           const struct entry *en, struct sw_fleet_import *im)
{
    const char *key = en->key->text;
    struct sw_fleet_at at = {0};
    bool def = sw__fleet_target_has_default(ep, en->target, &at);
    im->from = SW_FLEET_FROM_DEFAULT;
    im->value = NULL;
    im->at = at;
    ep->n_imports++;
    if (listed(d->optional_keys, d->n_optional, key))
        return; /* declared optional: its absence is the normal case */
    const char *names[256];
    size_t nn = 0;
    for (size_t j = 0; j < ef->n_vars && nn < SW_ARRAY_LEN(names); j++)
        names[nn++] = ef->vars[j].key;
    const char *sug = sw__fleet_suggest(key, names, nn);
    struct sw_fleet_at kat = sw__fleet_at(en->key);
    sw__fleet_warn(c, &kat,
                   "%s.env_file.map.%s: %s is set neither in %s nor in the environment; "
                   "%s %s%s%s%s",
                   c->path, key, key, ef->path, en->target,
                   def ? "keeps its fleet-file value" : "stays unset", sug ? " (did you mean " : "",
                   sug ? sug : "", sug ? "?)" : "");
}

/* One mapped key under the rule: the environment, else the file, else the fleet file's value;
 * the value decoded as its field's YAML would be, at the place it came from. */
static int import_one(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                      const struct envdecl *d, const struct sw_fleet_envfile *ef,
                      const struct entry *en)
{
    const char *key = en->key->text;
    struct sw_fleet_import *im = &ep->imports[ep->n_imports];
    im->key = key;
    im->field = en->target;
    const char *cv = d->genv(d->genv_ctx, key);
    const struct sw_fleet_envfile_var *fv = sw_fleet_envfile_get(ef, key);
    struct sw__fleet_node syn;
    memset(&syn, 0, sizeof(syn));
    syn.kind = SW__FLN_SCALAR;
    syn.weight = 1;
    syn.height = 1;
    const char *val;
    if (cv) {
        /* "environment variable SEQS: endpoints.x.shape.seqs must be >= 1 (got 0)" */
        syn.file = sw_region_printf(c->a, "environment variable %s", key);
        if (!syn.file)
            return sw__fleet_nomem(c);
        val = cv;
        im->from = SW_FLEET_FROM_ENVIRON;
    } else if (fv) {
        syn.file = ef->path;
        syn.line = fv->line;
        syn.col = fv->col;
        val = fv->value;
        im->from = SW_FLEET_FROM_FILE;
    } else {
        import_missing(c, ep, d, ef, en, im);
        return 0;
    }
    syn.text = sw_region_strdup(c->a, val);
    if (!syn.text)
        return sw__fleet_nomem(c);
    syn.len = strlen(syn.text);
    im->value = syn.text;
    im->at = sw__fleet_at(&syn);
    bool optout = listed(d->opt_keys, d->n_opt, key);
    size_t s3 = sw__fleet_path_push(c, en->target);
    if (!*val && !optout) {
        struct sw_fleet_at at = sw__fleet_at(&syn);
        int rc = sw__fleet_err(c, &at,
                               "%s is set but empty %s: an explicit empty value is an error (list "
                               "%s under endpoints.%s.env_file.opt_out if empty means off)",
                               key, cv ? "in the environment" : "in the env file", key, ep->name);
        sw__fleet_path_pop(c, s3);
        return rc;
    }
    /* empty + opt-out: a plain empty scalar is what every decoder reads as "off" */
    syn.plain = !*val;
    int r = sw__fleet_dec_target(c, ep, en->target, &syn);
    sw__fleet_path_pop(c, s3);
    if (!r)
        ep->n_imports++;
    return r;
}

int sw__fleet_import_env(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                         const struct sw__fleet_node *decl)
{
    size_t saved = sw__fleet_path_push(c, "env_file");
    struct envdecl d = {
        .genv = c->opts && c->opts->getenv ? c->opts->getenv : real_getenv,
        .genv_ctx = c->opts ? c->opts->getenv_ctx : NULL,
    };
    struct sw_fleet_envfile *ef = NULL;
    int rc = decl_parts(c, decl, &d);
    if (!d.path)
        goto out;
    int r = decl_file(c, &d);
    if (r) {
        rc = r;
        goto out;
    }
    r = decl_lists(c, &d);
    if (r)
        rc = r;
    if (rc || c->oom)
        goto out;
    rc = read_envfile(c, &d, &ef);
    if (rc)
        goto out;
    ep->env_file = ef;
    ep->imports = sw_region_allocn(c->a, d.n_entries ? d.n_entries : 1, sizeof(*ep->imports));
    if (!ep->imports) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    /* values land on the endpoint's own fields: endpoints.X.shape.seqs, not under env_file */
    sw__fleet_path_pop(c, saved);
    for (size_t i = 0; i < d.n_entries && !c->oom; i++) {
        r = import_one(c, ep, &d, ef, &d.entries[i]);
        if (r)
            rc = r;
    }
out:
    sw__fleet_path_pop(c, saved);
    return c->oom ? SW_ENOMEM : rc;
}
