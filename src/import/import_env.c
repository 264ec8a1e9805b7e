/*
 * import_env: the operator's env files and bare command lines.
 *
 * An env file alone (MAXLEN, SEQS, KV_BYTES, MNBT, CTX_SIZE, PARALLEL, MMPROJ_FILE, ...) becomes
 * an endpoint that imports it through env_file.map: a key whose name is a shape field or one of
 * its aliases (the fleet's own vocabulary: MAXLEN is max_model_len, KV_BYTES kv_cache_bytes, MNBT
 * max_num_batched_tokens, PARALLEL seqs) is mapped; MMPROJ_FILE is the projector (empty: the
 * documented text-only opt-out); a secret is never mapped; every other key is a note.
 *
 * A command line is handed to the unit scanner as the ExecStart of a one-line unit (so the engine
 * is recognised exactly as a unit's is), then imported as a unit's command line.
 *
 * What it does not do: parse env files or command lines itself.
 */
#include "import_internal.h"

#include <slipway/unit_lint.h>

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *engine_of(const struct sw_fleet_envfile *ef, const char *given)
{
    if (given)
        return !strcmp(given, "llama-server") ? "llama.cpp" : given;
    bool l = false, v = false;
    for (size_t i = 0; i < ef->n_vars; i++) {
        const char *k = ef->vars[i].key;
        if (!strcmp(k, "CTX_SIZE") || !strcmp(k, "PARALLEL") || !strcmp(k, "MMPROJ_FILE") ||
            !strcmp(k, "NGL"))
            l = true;
        if (!strcmp(k, "MAXLEN") || !strcmp(k, "KV_BYTES") || !strcmp(k, "MNBT"))
            v = true;
    }
    return l && !v ? "llama.cpp" : v && !l ? "vllm" : NULL;
}

int sw_import_env(struct sw_import *im, const char *path, const struct sw_import_opts *o,
                  struct sw_err *e)
{
    static const struct sw_import_opts none;
    if (!o)
        o = &none;
    struct sw_fleet_envfile *ef = NULL;
    int rc = sw_fleet_envfile_load(path, sw_fleet_no_environ, NULL, &ef, e);
    if (rc)
        return rc;
    const char *engine = engine_of(ef, o->engine);
    if (!engine ||
        (strcmp(engine, "llama.cpp") && strcmp(engine, "vllm") && strcmp(engine, "sglang"))) {
        rc = sw_err_at(e, SW_EINVAL, path, 0, 0,
                       "%s: which engine reads it is not in the file: say --engine "
                       "llama.cpp|vllm|sglang",
                       path);
        goto out;
    }
    char stem[240];
    const char *b = strrchr(path, '/');
    snprintf(stem, sizeof(stem), "%s", b ? b + 1 : path);
    char *dot = strstr(stem, ".env");
    if (dot)
        *dot = 0;
    struct sw__imp_ep *ep = sw__imp_ep_new(im, o->endpoint ? o->endpoint : stem, e);
    if (!ep) {
        rc = e ? e->code : SW_ENOMEM;
        goto out;
    }
    ep->engine = engine;
    unsigned bit = !strcmp(engine, "llama.cpp") ? SW_FLEET_ENG_BIT(SW_FLEET_LLAMACPP)
                   : !strcmp(engine, "vllm")    ? SW_FLEET_ENG_BIT(SW_FLEET_VLLM)
                                                : SW_FLEET_ENG_BIT(SW_FLEET_SGLANG);
    if (o->host)
        rc = sw__imp_set_str(im, ep, "host", o->host, "--host");
    if (!rc)
        rc = sw__imp_set_str(im, ep, "engine", engine,
                             o->engine ? "--engine" : "the keys of the file");
    bool mapped = false;
    for (size_t i = 0; i < ef->n_vars && !rc; i++) {
        const struct sw_fleet_envfile_var *v = &ef->vars[i];
        const char *w = sw__imp_printf(im, "%s:%d", path, v->line);
        if (!w) {
            rc = SW_ENOMEM;
            break;
        }
        if (sw_fleet_looks_secret(v->key, v->value) || strstr(v->key, "KEY") ||
            strstr(v->key, "PASS")) {
            rc = sw__imp_note(im, w,
                              "%s: a secret; it stays in this file (reference it: env: {%s: "
                              "{from_env: %s}})",
                              v->key, v->key, v->key);
            continue;
        }
        char low[128];
        size_t k = 0;
        for (; v->key[k] && k + 1 < sizeof(low); k++)
            low[k] = (char)tolower((unsigned char)v->key[k]);
        low[k] = 0;
        const struct sw_fleet_field *f = sw_fleet_shape_field(low);
        const char *target = NULL;
        if (f && (f->engines & bit))
            target = sw__imp_printf(im, "shape.%s", f->name);
        else if (!strcmp(v->key, "MMPROJ_FILE") && !strcmp(engine, "llama.cpp"))
            target = "payload.mmproj";
        if (!target) {
            rc = sw__imp_note(im, w,
                              f ? "%s: %s does not apply to %s; not imported"
                                : "%s: not a setting the fleet names%s%s; not imported",
                              v->key, f ? f->name : "", f ? engine : "");
            continue;
        }
        char key[160];
        snprintf(key, sizeof(key), "env_file.map.%s", v->key);
        rc = sw__imp_set(im, ep, key, target, sw__imp_printf(im, "%s %s=%s", w, v->key, v->value));
        if (!rc && !*v->value)
            rc = sw__imp_set_str(im, ep, "env_file.opt_out[]", v->key,
                                 sw__imp_printf(im, "%s: empty means off", w));
        mapped = true;
    }
    if (!rc && mapped) {
        char abs[PATH_MAX];
        const char *p = realpath(path, abs) ? abs : path;
        rc = sw__imp_set_str(im, ep, "env_file.path", p, "import env");
    }
    if (!rc)
        rc = sw__imp_emit(im);
    if (rc == SW_ENOMEM || rc == SW_ERANGE)
        rc = sw_err_set(e, rc, "out of memory");
out:
    sw_fleet_envfile_free(ef);
    return rc;
}

int sw_import_argv(struct sw_import *im, int argc, char **argv, const struct sw_import_opts *o,
                   struct sw_err *e)
{
    if (argc < 1)
        return sw_err_set(e, SW_EINVAL, "import argv: no command line after --");
    /* the line as the ExecStart of a one-line unit: ':' turns systemd's $VAR expansion off, each
     * word double-quoted with \ and " escaped */
    struct sw_buf b;
    sw_buf_init(&b, SW_UNIT_TEXT_MAX);
    int rc = sw_buf_puts(&b, "[Service]\nExecStart=:");
    for (int i = 0; i < argc && !rc; i++) {
        if (strpbrk(argv[i], "\n\r")) {
            sw_buf_free(&b);
            return sw_err_set(e, SW_EINVAL, "<argv>: word %d holds a line break", i + 1);
        }
        rc = sw_buf_puts(&b, i ? " \"" : "\"");
        for (const char *c = argv[i]; *c && !rc; c++)
            rc = (*c == '"' || *c == '\\') ? sw_buf_printf(&b, "\\%c", *c) : sw_buf_putc(&b, *c);
        if (!rc)
            rc = sw_buf_putc(&b, '"');
    }
    if (!rc)
        rc = sw_buf_putc(&b, '\n');
    if (rc) {
        sw_buf_free(&b);
        return sw_err_set(e, rc, "out of memory");
    }
    struct sw_import_opts oo = o ? *o : (struct sw_import_opts){0};
    char name[160];
    if (!oo.endpoint) {
        /* --alias / --served-model-name when given, else the engine's program */
        for (int i = 0; i + 1 < argc; i++)
            if (!strcmp(argv[i], "--alias") || !strcmp(argv[i], "-a") ||
                !strcmp(argv[i], "--served-model-name"))
                oo.endpoint = argv[i + 1];
        for (int i = 0; i < argc && !oo.endpoint; i++)
            if (!strncmp(argv[i], "sglang.", 7) || !strncmp(argv[i], "vllm.", 5)) {
                snprintf(name, sizeof(name), "%.*s", argv[i][0] == 's' ? 6 : 4, argv[i]);
                oo.endpoint = name;
            }
        if (!oo.endpoint) {
            const char *s = strrchr(argv[0], '/');
            snprintf(name, sizeof(name), "%s", s ? s + 1 : argv[0]);
            oo.endpoint = name;
        }
    }
    rc = sw_import_unit_text(im, "<argv>", sw_buf_cstr(&b), b.len, NULL, NULL, 0, &oo, e);
    sw_buf_free(&b);
    return rc;
}
