/*
 * import_argv: an engine command line into an endpoint. The engine's own parser reads the line
 * first (a malformed value is refused there, naming the flag); then each word is walked through
 * the engine's flag table (memory.h "Engine command lines as flag tables": which spellings a flag
 * has, whether it takes a value) and lands where the fleet says that setting lives: the model
 * and its projector/draft in payload (a container path carried back to the host through the
 * mounts), --host/--port in listen, the served name in alias, a shape setting under shape (the
 * flag's spellings are the shape vocabulary's aliases), a key as a reference, and everything
 * else verbatim in args. A value read from the env file (traced by its marker) is imported
 * through env_file.map instead of being copied.
 *
 * What it does not do: parse a flag itself (the tables say what a flag is), decide what a value
 * means for memory (plan does), or copy a secret.
 */
#include "import_internal.h"

#include <slipway/engine_sglang.h>
#include <slipway/engine_vllm.h>
#include <slipway/memory.h>
#include <slipway/unit_lint.h>

#include <string.h>

const char *sw__imp_engine_name(int unit_engine)
{
    switch (unit_engine) {
    case SW_UNIT_ENGINE_LLAMACPP:
        return "llama.cpp";
    case SW_UNIT_ENGINE_VLLM:
        return "vllm";
    case SW_UNIT_ENGINE_SGLANG:
        return "sglang";
    default:
        return NULL;
    }
}

const char *sw__imp_host_path(struct sw_import *im, const struct sw__imp_ep *ep, const char *p)
{
    for (size_t i = 0; i < ep->n_mnt; i++) {
        const char *c = ep->mnt_cont[i];
        size_t n = strlen(c);
        while (n > 1 && c[n - 1] == '/')
            n--;
        if (!strncmp(p, c, n) && (p[n] == '/' || !p[n]))
            return sw__imp_printf(im, "%s%s", ep->mnt_host[i], p + n);
    }
    return NULL;
}

/* The env variable a word is exactly the marker of (its index), or -1; *partial when a marker is
 * only part of it. */
static long marker_var(const struct sw__imp_ep *ep, const char *raw, bool *partial)
{
    *partial = false;
    if (!raw)
        return -1;
    const char *m = strstr(raw, SW__IMP_MARK_OPEN);
    if (!m)
        return -1;
    const char *name = m + strlen(SW__IMP_MARK_OPEN);
    const char *end = strchr(name, SW__IMP_MARK_CLOSE);
    if (!end)
        return -1;
    size_t n = (size_t)(end - name);
    long at = -1;
    for (size_t i = 0; i < ep->n_vars; i++)
        if (strlen(ep->vars[i].name) == n && !strncmp(ep->vars[i].name, name, n))
            at = (long)i;
    if (m != raw || end[1])
        *partial = true;
    return at;
}

/* A flag that carries a secret: --api-key, --hf-token, --password... (not --max-tokens). */
static bool secret_flag(const char *name)
{
    size_t n = strlen(name);
    return strstr(name, "api-key") || strstr(name, "api_key") ||
           (n >= 5 && !strcmp(name + n - 5, "token")) || strstr(name, "password") ||
           strstr(name, "secret");
}

/* The shape field one of the row's spellings names, for this engine; *val_false for a --no-
 * spelling of a switch. */
static const struct sw_fleet_field *shape_of(const struct sw_flag *row, const char *given,
                                             unsigned eng_bit, bool *val_false)
{
    *val_false = false;
    char names[256];
    snprintf(names, sizeof(names), "%s|%s", row ? row->names : given, given);
    for (char *tok = names, *next; tok && *tok; tok = next) {
        next = strchr(tok, '|');
        if (next)
            *next++ = 0;
        char key[128];
        size_t k = 0;
        const char *s = tok;
        while (*s == '-')
            s++;
        bool neg = !strncmp(s, "no-", 3) || !strncmp(s, "no_", 3);
        for (; *s && k + 1 < sizeof(key); s++)
            key[k++] = *s == '-' ? '_' : *s;
        key[k] = 0;
        const char *try[2] = {key, neg ? key + 3 : NULL};
        for (size_t t = 0; t < 2; t++) {
            if (!try[t])
                continue;
            const struct sw_fleet_field *f = sw_fleet_shape_field(try[t]);
            if (f && (f->engines & eng_bit) && (t == 0 || f->type == SW_FLEET_V_BOOL)) {
                *val_false = t == 1;
                return f;
            }
        }
    }
    return NULL;
}

static int validate(const char *engine, size_t argc, const char *const *argv, const char *where,
                    struct sw_err *e)
{
    struct sw_err sub;
    sw_err_clear(&sub);
    int rc = 0;
    char ignored[4096];
    if (!strcmp(engine, "llama.cpp")) {
        struct sw_llamacpp_args a;
        sw_llamacpp_args_init(&a);
        rc = sw_llamacpp_args_parse(&a, (int)argc, argv, &sub);
    } else if (!strcmp(engine, "vllm")) {
        struct sw_vllm_opts o;
        struct sw_engine_argv line;
        memset(&o, 0, sizeof(o));
        memset(&line, 0, sizeof(line));
        rc = sw_vllm_read_argv((int)argc, (char **)argv, &o, &line, ignored, sizeof(ignored), &sub);
    } else {
        struct sw_sglang_opts o;
        struct sw_engine_argv line;
        memset(&o, 0, sizeof(o));
        memset(&line, 0, sizeof(line));
        rc = sw_sglang_read_argv((int)argc, (char **)argv, &o, &line, ignored, sizeof(ignored),
                                 &sub);
    }
    if (rc && rc != SW_ENOMEM)
        return sw_err_set(e, rc, "%s: %s", where, sub.msg);
    return rc == SW_ENOMEM ? sw_err_set(e, rc, "out of memory") : 0;
}

/* Where the model flag puts its path: llama.cpp's -m is a file (payload.path its directory,
 * payload.gguf its name), vLLM's and SGLang's a directory (or a Hub id: payload.repo). */
static int set_model(struct sw_import *im, struct sw__imp_ep *ep, const char *role,
                     const char *path, const char *from)
{
    const char *host = ep->n_mnt ? sw__imp_host_path(im, ep, path) : path;
    if (!host) {
        int rc = sw__imp_note(im, from,
                              "%s %s: no mount of the container holds it; written as the "
                              "container sees it (payload paths are the host's)",
                              role, path);
        if (rc)
            return rc;
        host = path;
    }
    if (!strcmp(role, "model") && !strcmp(ep->engine, "llama.cpp")) {
        const char *slash = strrchr(host, '/');
        if (slash && slash != host) {
            char *dir = sw__imp_printf(im, "%.*s", (int)(slash - host), host);
            if (!dir)
                return SW_ENOMEM;
            int rc = sw__imp_set_str(im, ep, "payload.path", dir, from);
            return rc ? rc : sw__imp_set_str(im, ep, "payload.gguf", slash + 1, from);
        }
        return sw__imp_set_str(im, ep, "payload.gguf", host, from);
    }
    if (!strcmp(role, "model")) {
        if (host[0] != '/' && host[0] != '~' && host[0] != '.' && strchr(host, '/'))
            return sw__imp_set_str(im, ep, "payload.repo", host, from);
        return sw__imp_set_str(im, ep, "payload.path", host, from);
    }
    return sw__imp_set_str(im, ep, role, host, from);
}

/* The command line checked by the engine's own parser first, as the engine would get it (its
 * launcher, then argv from arg0). */
static int validate_launched(const struct sw__imp_ep *ep, const char *const *argv, size_t argc,
                             size_t arg0, const char *where, struct sw_err *e)
{
    /* the engine's own parser first, on the line as the engine would get it */
    const char *launch[3] = {"llama-server", NULL, NULL};
    size_t nl = 1;
    if (!strcmp(ep->engine, "vllm")) {
        launch[0] = "vllm";
        launch[1] = "serve";
        nl = 2;
    } else if (!strcmp(ep->engine, "sglang")) {
        launch[0] = "python3";
        launch[1] = "-m";
        launch[2] = "sglang.launch_server";
        nl = 3;
    }
    size_t vn = nl + (argc - arg0);
    const char **v = sw_calloc(vn + 1, sizeof(*v));
    if (!v)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < nl; i++)
        v[i] = launch[i];
    for (size_t i = arg0; i < argc; i++)
        v[nl + i - arg0] = argv[i];
    int rc = validate(ep->engine, vn, v, where, e);
    sw_free(v);
    return rc;
}

/* A secret on the command line: a reference (from_env, from_file), never the value, and a note
 * saying where the value stays. */
static int import_secret(struct sw_import *im, struct sw__imp_ep *ep, const char *first,
                         const char *val, long var, bool partial, const char *from,
                         const char *where)
{
    int rc = 0;
    if (strstr(first, "api-key-file") && val)
        return sw__imp_set(im, ep, "api_key",
                           sw__imp_printf(im, "{from_file: %s}", sw__imp_yaml(im, val)), from);
    const char *ref = var >= 0 && !partial            ? ep->vars[var].name
                      : !strcmp(ep->engine, "vllm")   ? "VLLM_API_KEY"
                      : !strcmp(ep->engine, "sglang") ? "SGLANG_API_KEY"
                                                      : "LLAMA_API_KEY";
    if (strstr(first, "api-key"))
        rc = sw__imp_set(im, ep, "api_key", sw__imp_printf(im, "{from_env: %s}", ref),
                         var >= 0 ? from : where);
    if (!rc)
        rc = sw__imp_note(
            im, where,
            var >= 0 && !partial
                ? "%s: a secret; its value stays in %s (%s), the fleet reads it from the "
                  "environment (from_env)"
                : "%s: a secret written on the command line (readable by every user of "
                  "the host): not copied; put it in an env file as %s and export it",
            first, var >= 0 && !partial ? ep->env_where : ref,
            var >= 0 && !partial ? ep->vars[var].name : "");
    return rc;
}

/* Is `first` one of the payload's flags: -m/--model/--model-path, --mmproj, -md? */
static bool payload_flag(const char *first)
{
    return !strcmp(first, "-m") || !strcmp(first, "--model") || !strcmp(first, "--model-path") ||
           !strcmp(first, "--mmproj") || !strcmp(first, "-md");
}

/* A payload flag into payload.path/repo, payload.mmproj or payload.draft; a native engine's
 * projector or draft from the env file through env_file.map. */
static int import_payload(struct sw_import *im, struct sw__imp_ep *ep, const char *first,
                          const char *val, long var, bool partial, const char *from)
{
    if (!strcmp(first, "-m") || !strcmp(first, "--model") || !strcmp(first, "--model-path"))
        return set_model(im, ep, "model", val ? val : "", from);
    if ((!strcmp(first, "--mmproj") || !strcmp(first, "-md")) && var >= 0 && !partial &&
        !ep->n_mnt) {
        /* a native engine's projector or draft from the env file: imported from it */
        return sw__imp_set(im, ep, sw__imp_printf(im, "env_file.map.%s", ep->vars[var].name),
                           !strcmp(first, "-md") ? "payload.draft" : "payload.mmproj", from);
    }
    if (!strcmp(first, "--mmproj"))
        return set_model(im, ep, "payload.mmproj", val ? val : "", from);
    return set_model(im, ep, "payload.draft", val ? val : "", from); /* -md */
}

int sw__imp_argv(struct sw_import *im, struct sw__imp_ep *ep, const char *const *argv, size_t argc,
                 size_t arg0, const char *const *raw, const char *where, struct sw_err *e)
{
    const struct sw_flag_table *t = !strcmp(ep->engine, "llama.cpp") ? &sw_llamacpp_flags
                                    : !strcmp(ep->engine, "vllm")    ? &sw_vllm_flags
                                                                     : &sw_sglang_flags;
    unsigned eng_bit = !strcmp(ep->engine, "llama.cpp") ? SW_FLEET_ENG_BIT(SW_FLEET_LLAMACPP)
                       : !strcmp(ep->engine, "vllm")    ? SW_FLEET_ENG_BIT(SW_FLEET_VLLM)
                                                        : SW_FLEET_ENG_BIT(SW_FLEET_SGLANG);
    bool argparse = (t->dialect & SW_FLAGS_ARGPARSE) != 0;
    int rc = validate_launched(ep, argv, argc, arg0, where, e);
    if (rc)
        return rc;
    struct sw__imp *p = sw__imp(im);
    ep->argv = sw_region_allocn(&p->r, argc + 1, sizeof(*ep->argv));
    if (!ep->argv)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < argc; i++)
        if (!(ep->argv[i] = sw_region_strdup(&p->r, argv[i])))
            return sw_err_set(e, SW_ENOMEM, "out of memory");
    ep->argc = argc;
    ep->arg0 = arg0;
    rc = sw__imp_set_str(im, ep, "engine", ep->engine, where);
    for (size_t j = arg0; j < argc && !rc; j++) {
        const char *w = argv[j];
        const char *rw = raw ? raw[j] : NULL;
        if (w[0] != '-' || !w[1]) {
            if (!strcmp(ep->engine, "vllm") && j == arg0 && !sw__imp_get(ep, "payload.path") &&
                !sw__imp_get(ep, "payload.repo")) {
                rc = set_model(im, ep, "model", w, where);
                continue;
            }
            rc = sw__imp_set_str(im, ep, "args[]", w, sw__imp_printf(im, "%s verbatim", where));
            continue;
        }
        char name[128];
        const char *eq = strchr(w, '=');
        size_t n = eq ? (size_t)(eq - w) : strlen(w);
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, w, n);
        name[n] = 0;
        const struct sw_flag *row = sw_flags_find(t, name);
        if (!row && argparse) {
            for (char *c = name + 2; *c; c++)
                if (*c == '_')
                    *c = '-';
            row = sw_flags_find(t, name);
        }
        bool takes = row ? row->value : (argparse && !eq && j + 1 < argc && argv[j + 1][0] != '-');
        const char *val = eq ? eq + 1 : NULL;
        const char *rval = NULL;
        size_t vj = j;
        if (takes && !eq && j + 1 < argc) {
            vj = ++j;
            val = argv[vj];
        }
        if (takes && eq && rw) {
            const char *req = strchr(rw, '=');
            rval = req ? req + 1 : NULL;
        } else if (takes && raw)
            rval = raw[vj];
        bool partial = false;
        long var = takes ? marker_var(ep, rval, &partial) : -1;
        const char *from = where;
        if (var >= 0) {
            ep->var_used[var] = true;
            from =
                sw__imp_printf(im, "%s:%d %s=%s, read by %s %s", ep->env_where, ep->vars[var].line,
                               ep->vars[var].name, ep->vars[var].value, where, name);
        }
        if (!from)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        if (val && strstr(val, SW__IMP_PORT_MARK)) {
            rc = sw__imp_note(im, where,
                              "%s ${PORT}: llama-swap's port macro; the fleet's listen.port "
                              "decides the port (`slipway export llama-swap` writes ${PORT} "
                              "back)",
                              name);
            continue;
        }
        char first[160];
        if (row)
            sw_flag_name(row, first, sizeof(first));
        else
            snprintf(first, sizeof(first), "%s", name);
        /* secrets: a reference, never the value */
        if (secret_flag(first) || (val && sw_fleet_looks_secret(NULL, val))) {
            rc = import_secret(im, ep, first, val, var, partial, from, where);
            continue;
        }
        if (payload_flag(first)) {
            rc = import_payload(im, ep, first, val, var, partial, from);
            continue;
        }
        const char *target = NULL;
        bool numeric = false;
        const struct sw_fleet_field *f = NULL;
        bool neg = false;
        if (!strcmp(first, "--host"))
            target = "listen.address";
        else if (!strcmp(first, "--port"))
            target = "listen.port", numeric = true;
        else if (!strcmp(first, "--alias") || !strcmp(first, "--served-model-name"))
            target = "alias";
        else if ((f = shape_of(row, name, eng_bit, &neg)) != NULL) {
            if (f->type == SW_FLEET_V_BOOL && takes && val && strcmp(val, "true") &&
                strcmp(val, "false") && strcmp(val, "on") && strcmp(val, "off"))
                f = NULL; /* a value the switch does not read as a boolean: verbatim */
            else
                target = sw__imp_printf(im, "shape.%s", f->name);
            numeric = f && f->type != SW_FLEET_V_STR && f->type != SW_FLEET_V_BOOL;
        }
        if (target && f && f->type == SW_FLEET_V_BOOL) {
            bool b = !neg;
            if (val && (!strcmp(val, "false") || !strcmp(val, "off")))
                b = !b;
            rc = sw__imp_set(im, ep, target, b ? "true" : "false", from);
            continue;
        }
        if (target && val) {
            double d;
            /* a value from the env file: imported through env_file.map, not copied */
            if (var >= 0 && !partial) {
                rc = sw__imp_set(im, ep, sw__imp_printf(im, "env_file.map.%s", ep->vars[var].name),
                                 target, from);
                continue;
            }
            if (partial && var >= 0)
                from = sw__imp_printf(im, "%s, with $%s from %s:%d", where, ep->vars[var].name,
                                      ep->env_where, ep->vars[var].line);
            if (numeric && !sw_parse_double(val, &d, NULL))
                rc = sw__imp_set(im, ep, target, val, from);
            else
                rc = sw__imp_set_str(im, ep, target, val, from);
            continue;
        }
        /* not a setting the fleet names: verbatim, in order */
        const char *vf = sw__imp_printf(im, "%s verbatim%s", from, row ? "" : " (unknown flag)");
        if (takes && val && !eq) {
            rc = sw__imp_set_str(im, ep, "args[]", w, vf);
            if (!rc)
                rc = sw__imp_set_str(im, ep, "args[]", val, vf);
        } else
            rc = sw__imp_set_str(im, ep, "args[]", w, vf);
    }
    if (rc == SW_ENOMEM || rc == SW_ERANGE)
        return sw_err_set(e, rc, "%s: out of memory", where);
    return rc;
}
