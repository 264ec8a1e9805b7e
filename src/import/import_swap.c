/*
 * import_swap: a llama-swap config into endpoints. Its YAML is read by the fleet's hardened
 * reader (sw_fleet_yaml_read); each model's `cmd` becomes the ExecStart of a one-line unit
 * (`sh -c CMD`, as llama-swap runs a command line the way a shell splits it) and is imported by
 * the unit import, so llama-server, vLLM and SGLang, native or in podman/docker run, are read
 * exactly as in a unit. Facts about llama-swap's configuration (keys, the ${PORT} and ${MODEL_ID}
 * macros, `macros:`, comment lines in a multi-line cmd) are from its documentation.
 *
 * What it does not do: carry llama-swap's own scheduling (ttl, groups, swap, exclusive) into the
 * fleet, which has no such settings: each is a note.
 */
#include "import_internal.h"

#include <slipway/unit_lint.h>

#include <stdio.h>
#include <string.h>

static const char *const model_keys_noted[] = {"name",
                                               "description",
                                               "proxy",
                                               "checkEndpoint",
                                               "aliases",
                                               "cmdStop",
                                               "unlisted",
                                               "useModelName",
                                               "filters",
                                               "macros",
                                               "metadata",
                                               "concurrencyLimit",
                                               "sendLoadingState",
                                               NULL};

/* cmd with its comment lines dropped, line continuations joined, macros expanded. */
static int expand_cmd(struct sw_buf *b, const char *cmd, const char *model,
                      const struct sw_fleet_ynode *gm, const struct sw_fleet_ynode *mm)
{
    int rc = 0;
    const char *p = cmd;
    while (*p && !rc) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        size_t s = 0;
        while (s < n && (p[s] == ' ' || p[s] == '\t'))
            s++;
        if (s < n && p[s] != '#') {
            size_t e = n;
            while (e > s && (p[e - 1] == ' ' || p[e - 1] == '\t'))
                e--;
            bool cont = e > s && p[e - 1] == '\\';
            rc = sw_buf_append(b, p + s, e - s - (cont ? 1 : 0));
            if (!rc)
                rc = sw_buf_putc(b, ' ');
        }
        p += n + (nl ? 1 : 0);
    }
    if (rc)
        return rc;
    /* macros: ${PORT} is the fleet's, ${MODEL_ID} the model's ID, the rest from macros: */
    char *t = sw_buf_steal(b);
    if (!t)
        return SW_ENOMEM;
    sw_buf_reset(b);
    for (const char *q = t; *q && !rc;) {
        if (q[0] == '$' && q[1] == '{') {
            const char *end = strchr(q, '}');
            if (end) {
                char name[128];
                snprintf(name, sizeof(name), "%.*s", (int)(end - q - 2), q + 2);
                const char *v = NULL;
                if (!strcmp(name, "PORT"))
                    v = SW__IMP_PORT_MARK;
                else if (!strcmp(name, "MODEL_ID"))
                    v = model;
                else {
                    v = sw_fleet_ynode_str(sw_fleet_ynode_get(mm, name));
                    if (!v)
                        v = sw_fleet_ynode_str(sw_fleet_ynode_get(gm, name));
                }
                if (v) {
                    rc = sw_buf_puts(b, v);
                    q = end + 1;
                    continue;
                }
            }
        }
        rc = sw_buf_putc(b, *q++);
    }
    sw_free(t);
    return rc;
}

/* The unit llama-swap's model amounts to: its env, then `sh -c CMD`. */
static int unit_text(struct sw_buf *u, const char *cmd, const struct sw_fleet_ynode *env)
{
    int rc = sw_buf_puts(u, "[Service]\n");
    for (size_t i = 0; i < sw_fleet_ynode_len(env) && !rc; i++) {
        const char *kv = sw_fleet_ynode_str(sw_fleet_ynode_at(env, i, NULL));
        if (!kv || !strchr(kv, '=') || strpbrk(kv, "\n\r"))
            continue;
        rc = sw_buf_puts(u, "Environment=\"");
        for (const char *c = kv; *c && !rc; c++)
            rc = (*c == '"' || *c == '\\') ? sw_buf_printf(u, "\\%c", *c) : sw_buf_putc(u, *c);
        if (!rc)
            rc = sw_buf_puts(u, "\"\n");
    }
    if (!rc)
        rc = sw_buf_puts(u, "ExecStart=:/bin/sh -c \"");
    for (const char *c = cmd; *c && !rc; c++)
        rc = (*c == '"' || *c == '\\') ? sw_buf_printf(u, "\\%c", *c) : sw_buf_putc(u, *c);
    return rc ? rc : sw_buf_puts(u, "\"\n");
}

int sw_import_llama_swap(struct sw_import *im, const char *path, const struct sw_import_opts *o,
                         struct sw_err *e)
{
    char *text = NULL;
    size_t len = 0;
    int rc = sw_read_file(path, 16u << 20, &text, &len, e);
    if (!rc)
        rc = sw_import_llama_swap_text(im, path, text, len, o, e);
    sw_free(text);
    return rc;
}

int sw_import_llama_swap_text(struct sw_import *im, const char *path, const char *text, size_t len,
                              const struct sw_import_opts *o, struct sw_err *e)
{
    static const struct sw_import_opts none;
    if (!o)
        o = &none;
    struct sw_fleet_ydoc *d = NULL;
    struct sw_buf cmd, unit;
    sw_buf_init(&cmd, 1u << 20);
    sw_buf_init(&unit, 1u << 20);
    struct sw__imp *p = sw__imp(im);
    if (!p)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    int rc = sw_fleet_yaml_read(path, text, len, &d, e);
    if (rc)
        goto out;
    const struct sw_fleet_ynode *root = sw_fleet_ydoc_root(d);
    const struct sw_fleet_ynode *models = sw_fleet_ynode_get(root, "models");
    if (sw_fleet_ynode_kind(root) != SW_FLEET_Y_MAP ||
        sw_fleet_ynode_kind(models) != SW_FLEET_Y_MAP) {
        int line = sw_fleet_ynode_line(models ? models : root);
        rc = sw_err_at(e, SW_EPARSE, path, line ? line : 1, 0,
                       "not a llama-swap config: it wants a `models:` mapping of model IDs");
        goto out;
    }
    const struct sw_fleet_ynode *gm = sw_fleet_ynode_get(root, "macros");
    for (size_t i = 0; i < sw_fleet_ynode_len(root) && !rc; i++) {
        const char *k;
        const struct sw_fleet_ynode *v = sw_fleet_ynode_at(root, i, &k);
        if (k && strcmp(k, "models") && strcmp(k, "macros") && strcmp(k, "groups"))
            rc = sw__imp_note(im, sw__imp_printf(im, "%s:%d", path, sw_fleet_ynode_line(v)),
                              "%s: llama-swap's own setting; not a fleet setting", k);
    }
    for (size_t i = 0; i < sw_fleet_ynode_len(models) && !rc; i++) {
        const char *id;
        const struct sw_fleet_ynode *m = sw_fleet_ynode_at(models, i, &id);
        const struct sw_fleet_ynode *c = sw_fleet_ynode_get(m, "cmd");
        if (!id || sw_fleet_ynode_kind(m) != SW_FLEET_Y_MAP || !sw_fleet_ynode_str(c)) {
            rc = sw_err_at(e, SW_EPARSE, path, sw_fleet_ynode_line(m), 0,
                           "models.%s: a model wants `cmd:` (its command line)", id ? id : "?");
            goto out;
        }
        const char *w = sw__imp_printf(im, "%s:%d", path, sw_fleet_ynode_line(c));
        if (!w) {
            rc = SW_ENOMEM;
            break;
        }
        sw_buf_reset(&cmd);
        sw_buf_reset(&unit);
        rc = expand_cmd(&cmd, sw_fleet_ynode_str(c), id, gm, sw_fleet_ynode_get(m, "macros"));
        if (!rc)
            rc = unit_text(&unit, sw_buf_cstr(&cmd), sw_fleet_ynode_get(m, "env"));
        if (rc)
            break;
        struct sw_import_opts mo = *o;
        mo.endpoint = id;
        mo.env_file = NULL;
        p->where_override = w;
        struct sw_err me;
        sw_err_clear(&me);
        rc = sw_import_unit_text(im, path, sw_buf_cstr(&unit), unit.len, NULL, NULL, 0, &mo, &me);
        p->where_override = NULL;
        if (rc) {
            rc = sw_err_at(e, rc, path, sw_fleet_ynode_line(c), 0, "models.%s.cmd: %s", id, me.msg);
            goto out;
        }
        for (size_t k = 0; k < sw_fleet_ynode_len(m) && !rc; k++) {
            const char *key;
            const struct sw_fleet_ynode *v = sw_fleet_ynode_at(m, k, &key);
            const char *kw = sw__imp_printf(im, "%s:%d", path, sw_fleet_ynode_line(v));
            if (!key || !strcmp(key, "cmd") || !strcmp(key, "env"))
                continue;
            if (!strcmp(key, "ttl"))
                rc = sw__imp_note(im, kw,
                                  "models.%s.ttl %s: llama-swap unloads the model after that many "
                                  "idle seconds; the fleet keeps an endpoint up (not imported)",
                                  id, sw_fleet_ynode_str(v) ? sw_fleet_ynode_str(v) : "?");
            else {
                bool known = false;
                for (size_t q = 0; model_keys_noted[q]; q++)
                    known |= !strcmp(model_keys_noted[q], key);
                rc = sw__imp_note(im, kw, "models.%s.%s: %s; not imported", id, key,
                                  known ? "llama-swap's own setting"
                                        : "not a key llama-swap documents");
            }
        }
    }
    const struct sw_fleet_ynode *groups = sw_fleet_ynode_get(root, "groups");
    for (size_t i = 0; i < sw_fleet_ynode_len(groups) && !rc; i++) {
        const char *g;
        const struct sw_fleet_ynode *gv = sw_fleet_ynode_at(groups, i, &g);
        const struct sw_fleet_ynode *mem = sw_fleet_ynode_get(gv, "members");
        for (size_t k = 0; k < sw_fleet_ynode_len(mem) && !rc; k++) {
            const char *id = sw_fleet_ynode_str(sw_fleet_ynode_at(mem, k, NULL));
            if (!id || !sw_fleet_ynode_get(models, id)) {
                rc = sw_err_at(e, SW_EPARSE, path, sw_fleet_ynode_line(mem), 0,
                               "groups.%s.members: '%s' is not a model of this config", g ? g : "?",
                               id ? id : "?");
                goto out;
            }
        }
        rc = sw__imp_note(im, sw__imp_printf(im, "%s:%d", path, sw_fleet_ynode_line(gv)),
                          "group %s (%zu members): each member is an endpoint of its own; "
                          "llama-swap's swap/exclusive/persistent rules are not fleet settings",
                          g ? g : "?", sw_fleet_ynode_len(mem));
    }
    if (!rc)
        rc = sw__imp_emit(im);
    if (rc == SW_ENOMEM || rc == SW_ERANGE)
        rc = sw_err_set(e, rc, "out of memory");
out:
    sw_fleet_ydoc_free(d);
    sw_buf_free(&cmd);
    sw_buf_free(&unit);
    return rc;
}
