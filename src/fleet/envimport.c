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
    if (p->n_envfiles == p->cap_envfiles) {
        size_t cap = p->cap_envfiles ? p->cap_envfiles * 2 : 4;
        struct sw_fleet_envfile **n = sw_realloc(p->envfiles, cap * sizeof(*n));
        if (!n) {
            sw_fleet_envfile_free(ef);
            return sw__fleet_nomem(c);
        }
        p->envfiles = n;
        p->cap_envfiles = cap;
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

int sw__fleet_import_env(struct sw__fleet_ctx *c, struct sw_fleet_endpoint *ep,
                         const struct sw__fleet_node *decl)
{
    int rc = 0;
    size_t saved = sw__fleet_path_push(c, "env_file");
    const struct sw__fleet_node *pathn = NULL, *mapn = NULL, *optn = NULL, *optionaln = NULL;
    sw_fleet_getenv_fn genv = c->opts && c->opts->getenv ? c->opts->getenv : real_getenv;
    void *genv_ctx = c->opts ? c->opts->getenv_ctx : NULL;
    struct entry *entries = NULL;
    size_t n_entries = 0;
    const char **optouts = NULL, **optional = NULL;
    size_t n_opt = 0, n_optional = 0;
    char *text = NULL;

    if (decl->kind == SW__FLN_SCALAR) {
        pathn = decl;
    } else if (decl->kind == SW__FLN_MAP) {
        for (size_t i = 0; i < decl->n; i++) {
            const struct sw__fleet_node *k = decl->kids[2 * i], *v = decl->kids[2 * i + 1];
            if (!strcmp(k->text, "path"))
                pathn = v;
            else if (!strcmp(k->text, "map"))
                mapn = v;
            else if (!strcmp(k->text, "opt_out"))
                optn = v;
            else if (!strcmp(k->text, "optional"))
                optionaln = v;
            else {
                static const char *const known[] = {"path", "map", "opt_out", "optional"};
                rc = sw__fleet_unknown_key(c, k, "env_file", known, 4);
            }
        }
    } else {
        rc = sw__fleet_errp(c, decl, "must be a path or {path, map, opt_out}");
        goto out;
    }
    if (!pathn) {
        rc = sw__fleet_errp(c, decl, "needs path: the env file to import");
        goto out;
    }
    /* the path, relative to the fleet file's directory */
    size_t s2 = sw__fleet_path_push(c, "path");
    struct sw_fleet_str ps = {0};
    struct sw__fleet_spec lp = {.ft = SW__FT_LPATH};
    int r = sw__fleet_dec_str(c, pathn, &lp, &ps);
    sw__fleet_path_pop(c, s2);
    if (r || !ps.v) {
        rc = r ? r : sw__fleet_errp(c, pathn, "needs a path");
        goto out;
    }
    const char *full = ps.v;
    if (ps.v[0] == '~' && (ps.v[1] == '/' || !ps.v[1])) {
        const char *home = getenv("HOME");
        full = sw_region_printf(c->a, "%s%s", home ? home : "", ps.v + 1);
    } else if (ps.v[0] != '/' && c->dir[0]) {
        full = sw_region_printf(c->a, "%s%s", c->dir, ps.v);
    }
    if (!full) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    /* opt-outs and optional keys first, so the map can be checked against them */
    if (optn && key_list(c, optn, "opt_out", &optouts, &n_opt))
        rc = SW_EPARSE;
    if (optionaln && key_list(c, optionaln, "optional", &optional, &n_optional))
        rc = SW_EPARSE;
    if (c->oom)
        goto out;
    if (mapn) {
        s2 = sw__fleet_path_push(c, "map");
        struct imports im = {.n = 0};
        im.entries = sw_region_allocn(c->a, mapn->n ? mapn->n : 1, sizeof(*im.entries));
        if (!im.entries) {
            sw__fleet_path_pop(c, s2);
            rc = sw__fleet_nomem(c);
            goto out;
        }
        struct sw__fleet_walk w = {.key = import_key, .fn = dec_import, .arg = &im};
        r = sw__fleet_walk(c, mapn, &w);
        if (r)
            rc = r;
        entries = im.entries;
        n_entries = im.n;
        sw__fleet_path_pop(c, s2);
    }
    for (size_t i = 0; i < n_opt + n_optional; i++) {
        const char *k = i < n_opt ? optouts[i] : optional[i - n_opt];
        bool mapped = false;
        for (size_t j = 0; j < n_entries && !mapped; j++)
            mapped = !strcmp(entries[j].key->text, k);
        if (!mapped) {
            const struct sw__fleet_node *ln = i < n_opt ? optn : optionaln;
            struct sw_fleet_at at = sw__fleet_at(ln);
            rc = sw__fleet_err(c, &at, "%s.%s lists %s, which map: does not import", c->path,
                               i < n_opt ? "opt_out" : "optional", k);
        }
    }
    if (rc || c->oom)
        goto out;

    /* read and parse the env file */
    size_t len = 0;
    struct sw_err e;
    sw_err_clear(&e);
    r = read_file(c, full, &text, &len, &e);
    if (r) {
        if (r == SW_ENOMEM) {
            rc = sw__fleet_nomem(c);
            goto out;
        }
        rc = sw__fleet_errp(c, pathn, "cannot be imported: %s: %s", full, e.msg);
        goto out;
    }
    struct sw_fleet_envfile *ef = NULL;
    sw_err_clear(&e);
    r = sw__fleet_envfile_parse(full, text, len, genv, genv_ctx, &ef, &e);
    if (r) {
        if (r == SW_ENOMEM) {
            rc = sw__fleet_nomem(c);
        } else {
            char *where = sw_region_strdup(c->a, e.where);
            struct sw_fleet_at at = {.file = where ? where : c->file, .line = e.line, .col = e.col};
            rc = sw__fleet_err(c, &at, "%s", e.msg);
        }
        goto out;
    }
    rc = keep_envfile(c, ef);
    if (rc)
        goto out;
    ep->env_file = ef;

    /* apply the rule to every mapped key */
    ep->imports = sw_region_allocn(c->a, n_entries ? n_entries : 1, sizeof(*ep->imports));
    if (!ep->imports) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    /* values land on the endpoint's own fields: endpoints.X.shape.seqs, not under env_file */
    sw__fleet_path_pop(c, saved);
    for (size_t i = 0; i < n_entries && !c->oom; i++) {
        const char *key = entries[i].key->text;
        const char *target = entries[i].target;
        struct sw_fleet_import *im = &ep->imports[ep->n_imports];
        im->key = key;
        im->field = target;
        const char *cv = genv(genv_ctx, key);
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
            if (!syn.file) {
                rc = sw__fleet_nomem(c);
                goto out;
            }
            val = cv;
            im->from = SW_FLEET_FROM_ENVIRON;
        } else if (fv) {
            syn.file = ef->path;
            syn.line = fv->line;
            syn.col = fv->col;
            val = fv->value;
            im->from = SW_FLEET_FROM_FILE;
        } else {
            struct sw_fleet_at at = {0};
            bool def = sw__fleet_target_has_default(ep, target, &at);
            bool expected = false;
            for (size_t j = 0; j < n_optional && !expected; j++)
                expected = !strcmp(optional[j], key);
            im->from = SW_FLEET_FROM_DEFAULT;
            im->value = NULL;
            im->at = at;
            ep->n_imports++;
            if (expected)
                continue; /* declared optional: its absence is the normal case */
            const char *names[256];
            size_t nn = 0;
            for (size_t j = 0; j < ef->n_vars && nn < SW_ARRAY_LEN(names); j++)
                names[nn++] = ef->vars[j].key;
            const char *sug = sw__fleet_suggest(key, names, nn);
            struct sw_fleet_at kat = sw__fleet_at(entries[i].key);
            sw__fleet_warn(c, &kat,
                           "%s.env_file.map.%s: %s is set neither in %s nor in the environment; "
                           "%s %s%s%s%s",
                           c->path, key, key, ef->path, target,
                           def ? "keeps its fleet-file value" : "stays unset",
                           sug ? " (did you mean " : "", sug ? sug : "", sug ? "?)" : "");
            continue;
        }
        syn.text = sw_region_strdup(c->a, val);
        if (!syn.text) {
            rc = sw__fleet_nomem(c);
            goto out;
        }
        syn.len = strlen(syn.text);
        im->value = syn.text;
        im->at = sw__fleet_at(&syn);
        bool optout = false;
        for (size_t j = 0; j < n_opt && !optout; j++)
            optout = !strcmp(optouts[j], key);
        size_t s3 = sw__fleet_path_push(c, target);
        if (!*val && !optout) {
            struct sw_fleet_at at = sw__fleet_at(&syn);
            rc = sw__fleet_err(c, &at,
                               "%s is set but empty %s: an explicit empty value is an error (list "
                               "%s under endpoints.%s.env_file.opt_out if empty means off)",
                               key, cv ? "in the environment" : "in the env file", key, ep->name);
            sw__fleet_path_pop(c, s3);
            continue;
        }
        /* empty + opt-out: a plain empty scalar is what every decoder reads as "off" */
        syn.plain = !*val;
        r = sw__fleet_dec_target(c, ep, target, &syn);
        sw__fleet_path_pop(c, s3);
        if (r) {
            rc = r;
            continue;
        }
        ep->n_imports++;
    }
out:
    sw_free(text);
    sw__fleet_path_pop(c, saved);
    return c->oom ? SW_ENOMEM : rc;
}
