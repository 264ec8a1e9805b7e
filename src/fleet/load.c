/*
 * Loading a fleet file: YAML tree -> typed fleet, in three passes.
 *   1. decode: every key of hosts, profiles, endpoints and harness against its schema; unknown
 *      keys (with a suggestion), wrong types and bad units are reported and decoding goes on, so
 *      one run shows every mistake;
 *   2. import: env files named by endpoints, under the operator's override rule (envimport.c);
 *   3. resolve and check: names to pointers (hosts, devices, profiles, endpoints) and the rules
 *      that need the whole endpoint (a setting that does not apply to its engine, ranks versus
 *      devices, a payload outside every container mount, knobs outside their range...).
 * Any error in any pass: everything is freed and nothing is returned.
 *
 * Not done here: anything about whether a shape fits (memory, gates) or how it is launched.
 */
#include "fleet_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * The load.
 */

/* alert:, schedule: (lists for `slipway watch`), kept as JSON with where they were written. */
static void keep_list(struct sw__fleet_ctx *c, const struct sw__fleet_node *v, json_t **out,
                      struct sw_fleet_at *at)
{
    sw__fleet_record(c, v);
    *at = sw__fleet_at(v);
    if (!sw__fleet_want_seq(c, v))
        return;
    struct sw_err e;
    sw_err_clear(&e);
    json_t *j = sw__fleet_node_to_json(v, &e);
    if (!j) {
        if (e.code == SW_ENOMEM)
            sw__fleet_nomem(c);
        else
            sw__fleet_err_from(c, v, &e);
        return;
    }
    if (!sw__fleet_keep_json(c, j))
        *out = j;
}
static int cmp_pos(const void *a, const void *b)
{
    const struct sw__fleet_posent *x = a, *y = b;
    int r = strcmp(x->path, y->path);
    if (r)
        return r;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *sw_fleet_no_environ(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return NULL;
}

void sw_fleet_free(struct sw_fleet *f)
{
    if (!f)
        return;
    struct sw__fleet_priv *p = f->priv;
    if (p) {
        for (size_t i = 0; i < p->n_json; i++)
            json_decref(p->json[i]);
        sw_free(p->json);
        for (size_t i = 0; i < p->n_rules; i++)
            sw_rule_free(p->rules[i]);
        sw_free(p->rules);
        for (size_t i = 0; i < p->n_envfiles; i++)
            sw_fleet_envfile_free(p->envfiles[i]);
        sw_free(p->envfiles);
        sw_free(p->pos);
        sw_free(p->warn);
        sw_region_free(&p->arena);
        sw_free(p);
    }
    sw_free(f);
}

static int load(const char *name, const char *text, size_t len, const struct sw_fleet_opts *opts,
                struct sw_fleet **out, struct sw_err *e)
{
    int rc = 0;
    *out = NULL;
    sw_err_clear(e);
    struct sw_fleet *f = sw_calloc(1, sizeof(*f));
    struct sw__fleet_priv *p = f ? sw_calloc(1, sizeof(*p)) : NULL;
    struct sw__fleet_ctx cx;
    memset(&cx, 0, sizeof(cx));
    struct sw__fleet_ctx *c = &cx;
    struct sw__fleet_harness_raw hr;
    memset(&hr, 0, sizeof(hr));
    if (!f || !p) {
        sw_free(f);
        sw_free(p);
        return sw_err_at(e, SW_ENOMEM, name, 0, 0, "out of memory loading the fleet");
    }
    f->priv = p;
    /* a fleet's whole tree and values stay well under 64x its text */
    sw_region_init(&p->arena, 64u * SW_FLEET_MAX_FILE + (1u << 20));
    c->f = f;
    c->p = p;
    c->a = &p->arena;
    c->opts = opts;
    c->max_errors = opts && opts->max_errors > 0 ? opts->max_errors : 50;
    c->first = e;
    c->file = sw_region_strdup(c->a, name);
    if (!c->file) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    f->path = c->file;
    const char *slash = strrchr(c->file, '/');
    c->dir = slash ? sw_region_strndup(c->a, c->file, (size_t)(slash - c->file + 1)) : "";
    if (!c->dir) {
        rc = sw__fleet_nomem(c);
        goto out;
    }
    if (len > SW_FLEET_MAX_FILE) {
        struct sw_fleet_at at = {.file = c->file};
        rc = sw__fleet_err(c, &at, "is larger than %u bytes: not a fleet file", SW_FLEET_MAX_FILE);
        goto out;
    }
    c->src = text;
    c->src_len = len;
    struct sw__fleet_node *root = NULL;
    struct sw_err ye;
    sw_err_clear(&ye);
    rc = sw__fleet_yaml_parse(c->a, c->file, text, len, &root, &ye);
    if (rc) {
        if (rc == SW_ENOMEM) {
            sw__fleet_nomem(c);
        } else {
            struct sw_fleet_at at = {.file = c->file, .line = ye.line, .col = ye.col};
            sw__fleet_err(c, &at, "%s", ye.msg);
        }
        goto out;
    }
    if (!root || sw__fleet_node_is_null(root)) {
        struct sw_fleet_at at = {.file = c->file, .line = 1, .col = 1};
        rc = sw__fleet_err(c, &at, "the fleet file is empty: it needs hosts: and endpoints:");
        goto out;
    }
    if (!sw__fleet_want_map(c, root)) {
        rc = SW_EPARSE;
        goto out;
    }
    /* pass 1: decode; hosts and profiles before endpoints whatever the order in the file */
    static const char *const top[] = {"version", "hosts", "profiles", "endpoints",
                                      "harness", "alert", "schedule"};
    for (size_t i = 0; i < root->n && !c->oom; i++) {
        const struct sw__fleet_node *k = root->kids[2 * i];
        bool known = false;
        for (size_t t = 0; t < SW_ARRAY_LEN(top); t++)
            known |= !strcmp(top[t], k->text) && strlen(k->text) == k->len;
        /* "x-..." keys are a place for YAML anchors (docker-compose's convention): the key says
         * it is not for slipway, so ignoring it hides nothing */
        if (!known && strncmp(k->text, "x-", 2))
            sw__fleet_unknown_key(c, k, "fleet", top, SW_ARRAY_LEN(top));
    }
    for (size_t t = 0; t < SW_ARRAY_LEN(top) && !c->oom; t++) {
        const struct sw__fleet_node *v = sw__fleet_map_get(root, top[t]);
        if (!v)
            continue;
        size_t saved = sw__fleet_path_push(c, top[t]);
        if (t == 0) {
            struct sw__fleet_spec sp = SW__SPECN(SW__FT_COUNT, 1, 1);
            sw__fleet_dec_u64(c, v, &sp, &f->version);
        } else if (t == 1) {
            sw__fleet_dec_hosts(c, v);
        } else if (t == 2) {
            sw__fleet_dec_profiles(c, v);
        } else if (t == 3) {
            sw__fleet_dec_endpoints(c, v);
        } else if (t == 4) {
            sw__fleet_dec_harness(c, v, &hr);
        } else if (t == 5) {
            keep_list(c, v, &f->alert, &f->alert_at);
        } else {
            keep_list(c, v, &f->schedule, &f->schedule_at);
        }
        sw__fleet_path_pop(c, saved);
    }
    if (!c->oom && !sw__fleet_map_get(root, "endpoints") && !sw__fleet_map_get(root, "hosts")) {
        struct sw_fleet_at at = sw__fleet_at(root);
        sw__fleet_err(c, &at, "the fleet file declares no hosts: and no endpoints:");
    }
    /* pass 2: env-file imports (their values replace the defaults written in the file) */
    for (size_t i = 0; i < f->n_endpoints && !c->oom; i++) {
        struct sw__fleet_ep_raw *raw = &cx.raw[i];
        if (!raw->env_file)
            continue;
        char base[200];
        snprintf(base, sizeof(base), "endpoints.%s", f->endpoints[i].name);
        size_t saved = sw__fleet_path_push(c, base);
        sw__fleet_import_env(c, &f->endpoints[i], raw->env_file);
        sw__fleet_path_pop(c, saved);
    }
    /* pass 3: resolve and check */
    for (size_t i = 0; i < f->n_endpoints && !c->oom; i++)
        sw__fleet_check_endpoint(c, &f->endpoints[i], &cx.raw[i]);
    if (!c->oom)
        sw__fleet_check_fleet(c, &hr);

    if (c->nerr) {
        rc = c->first_code ? c->first_code : SW_EPARSE;
        if (c->nerr > 1 && e && rc != SW_ENOMEM) {
            char more[64];
            snprintf(more, sizeof(more), " (and %d more error%s)", c->nerr - 1,
                     c->nerr == 2 ? "" : "s");
            size_t ml = strlen(e->msg);
            if (ml + strlen(more) < sizeof(e->msg))
                memcpy(e->msg + ml, more, strlen(more) + 1);
        }
        goto out;
    }
    qsort(p->pos, p->n_pos, sizeof(*p->pos), cmp_pos);
    f->warnings = p->warn;
    f->n_warnings = p->n_warn;
    *out = f;
    return 0;
out:
    if (!rc)
        rc = SW_EPARSE;
    sw_fleet_free(f);
    return rc;
}

int sw_fleet_load_mem(const char *name, const char *text, size_t len,
                      const struct sw_fleet_opts *opts, struct sw_fleet **out, struct sw_err *e)
{
    if (!out)
        return sw_err_set(e, SW_EINVAL, "sw_fleet_load_mem: no output");
    return load(name ? name : "<fleet>", text ? text : "", text ? len : 0, opts, out, e);
}

int sw_fleet_load(const char *path, const struct sw_fleet_opts *opts, struct sw_fleet **out,
                  struct sw_err *e)
{
    if (!out)
        return sw_err_set(e, SW_EINVAL, "sw_fleet_load: no output");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, SW_FLEET_MAX_FILE, &text, &len, e);
    if (rc) {
        if (opts && opts->on_error)
            opts->on_error(opts->on_error_ctx, e);
        return rc;
    }
    rc = load(path, text, len, opts, out, e);
    sw_free(text);
    return rc;
}
