/*
 * import_unit: a systemd unit that runs an engine (natively, or in `podman run`/`docker run`)
 * into an endpoint. The lint's scanner reads the unit (sw_unit_parse: systemd's lines and words,
 * $VAR/${VAR} expanded from Environment= and the EnvironmentFile, the container, the engine and
 * its command line); the fleet's env-file parser reads the EnvironmentFile with its line numbers.
 * The unit is scanned twice: once as systemd runs it, once with every env-file value replaced by
 * a marker, so the words that came from a variable are known and imported through env_file.map.
 *
 * The unit's own keys land in service/runtime where the fleet has them (RestartSec,
 * TimeoutStopSec, StartLimitIntervalSec, StartLimitBurst, OOMScoreAdjust, User, the podman stop
 * grace); every other line is a note: the render writes its own.
 *
 * What it does not do: read a unit over ssh (the host import hands the text in), or judge the
 * unit (`slipway lint` does).
 */
#include "import_internal.h"

#include <slipway/unit_lint.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The env file's path as the fleet will read it: relative to out_dir when it lies under it,
 * else absolute. */
static const char *fleet_env_path(struct sw_import *im, const char *env, const char *out_dir)
{
    char abs[PATH_MAX], dir[PATH_MAX];
    if (!realpath(env, abs))
        return env;
    if (!realpath(out_dir ? out_dir : ".", dir))
        return sw__imp_printf(im, "%s", abs);
    size_t n = strlen(dir);
    if (!strncmp(abs, dir, n) && abs[n] == '/')
        return sw__imp_printf(im, "%s", abs + n + 1);
    return sw__imp_printf(im, "%s", abs);
}

/* A duration systemd wrote ("180", "180s", "3min"): the fleet's form ("180s"). */
static const char *duration(struct sw_import *im, const char *v)
{
    int64_t ms;
    if (sw_unit_timespan_ms(v, &ms) || ms == INT64_MAX)
        return NULL;
    if (ms % 1000)
        return sw__imp_printf(im, "%lldms", (long long)ms);
    return sw__imp_printf(im, "%llds", (long long)(ms / 1000));
}

static const char *where_of(struct sw_import *im, const struct sw_unit *u, int pos)
{
    struct sw__imp *p = sw__imp(im);
    if (p && p->where_override)
        return p->where_override;
    if (!strcmp(u->where, "<argv>"))
        return "<argv>";
    int line = 0;
    const char *f = sw_unit_pos(u, pos, &line);
    return sw__imp_printf(im, "%s:%d", f ? f : u->where, line);
}

/* A native engine's Environment= line: its variables are the engine's environment (env:),
 * a secret as a reference. */
static int native_env(struct sw_import *im, struct sw__imp_ep *ep, const struct sw_unit *u,
                      const struct sw_unit_entry *en, const char *w)
{
    int rc = 0;
    for (size_t i = 0; i < u->n_env && !rc; i++) {
        const char *kv = u->env[i];
        const char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
        char probe[140];
        snprintf(probe, sizeof(probe), "%s=", name);
        const char *at = strstr(en->value, probe);
        if (!at || (at != en->value && at[-1] != ' ' && at[-1] != '"' && at[-1] != '\''))
            continue; /* not from this line */
        bool file = false;
        for (size_t k = 0; k < ep->n_vars; k++)
            if (!strcmp(ep->vars[k].name, name))
                file = true;
        if (file)
            continue; /* the env file overrides it: that value is what runs */
        const char *val = sw_unit_env(u, name);
        char key[160];
        snprintf(key, sizeof(key), "env.%s", name);
        if (!val)
            continue;
        if (sw_fleet_looks_secret(name, val) || strstr(name, "KEY") || strstr(name, "PASS")) {
            rc = sw__imp_set(im, ep, key, sw__imp_printf(im, "{from_env: %s}", name), w);
            if (!rc)
                rc = sw__imp_note(im, w,
                                  "%s: a secret written in the unit: not copied; move it into "
                                  "an env file (mode 0600) and export it",
                                  name);
        } else
            rc = sw__imp_set_str(im, ep, key, val, w);
    }
    return rc;
}

/* The unit's keys the fleet holds (service:, runtime:), and a note for every other line. */
static int unit_keys(struct sw_import *im, struct sw__imp_ep *ep, const struct sw_unit *u)
{
    static const struct {
        const char *key, *target;
        bool dur;
    } map[] = {{"RestartSec", "service.restart_sec", true},
               {"TimeoutStopSec", "service.stop_timeout", true},
               {"StartLimitIntervalSec", "service.start_limit_interval", true},
               {"StartLimitBurst", "service.start_limit_burst", false},
               {"OOMScoreAdjust", "service.oom_score_adjust", false},
               {"User", "service.user", false}};
    int rc = 0;
    for (size_t i = 0; i < u->n_entries && !rc; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        const char *w = where_of(im, u, en->line);
        if (!w)
            return SW_ENOMEM;
        if (en->reset)
            continue;
        bool done = false;
        for (size_t k = 0; k < SW_ARRAY_LEN(map) && !done; k++) {
            if (strcmp(en->key, map[k].key))
                continue;
            done = true;
            if (strcmp(sw_unit_get(u, en->section, en->key, NULL), en->value))
                break; /* a later assignment wins */
            if (!strcmp(en->key, "StartLimitIntervalSec") && strcmp(en->section, "Unit")) {
                rc = sw__imp_note(im, w,
                                  "StartLimitIntervalSec= in [%s]: systemd ignores it there "
                                  "(\"Unknown key\"); not imported",
                                  en->section);
                break;
            }
            const char *v = map[k].dur ? duration(im, en->value) : en->value;
            if (!strcmp(en->key, "StartLimitIntervalSec") && v && !strcmp(v, "0s"))
                v = "0";
            if (!v) {
                rc = sw__imp_note(im, w, "%s=%s: not a duration slipway writes; not imported",
                                  en->key, en->value);
                break;
            }
            rc = (map[k].dur && strcmp(v, "0")) || !strcmp(en->key, "User")
                     ? sw__imp_set_str(im, ep, map[k].target, v, w)
                     : sw__imp_set(im, ep, map[k].target, v, w);
        }
        if (done || rc)
            continue;
        const char *k = en->key;
        if (!strcmp(k, "ExecStart") && en->line == u->engine_line)
            continue;
        if (!strcmp(k, "EnvironmentFile") || (!strcmp(k, "Environment") && u->ctr.found))
            continue; /* read: what the command line uses is imported where it lands */
        if (!strcmp(k, "Environment")) {
            rc = native_env(im, ep, u, en, w);
            continue;
        }
        if (!strcmp(k, "ExecStop") && en->line == u->stop_grace_line)
            continue;
        if (!strcmp(k, "Restart") && !strcmp(en->value, "always"))
            continue; /* what the render writes */
        if (!strcmp(k, "Restart")) {
            rc = sw__imp_note(im, w,
                              "Restart=%s: not imported; the render writes Restart=always (a "
                              "dead engine can exit 0: the lint's restart law)",
                              en->value);
            continue;
        }
        if (!strcmp(k, "ExecStartPre") && strstr(en->value, " rm "))
            continue; /* the container's stale copy removed: the render does it too */
        if (!strcmp(k, "Description") || !strcmp(k, "WantedBy") || !strcmp(k, "After") ||
            !strcmp(k, "Wants") || !strcmp(k, "Type"))
            rc = sw__imp_note(im, w, "%s=%s: not imported (the render writes its own)", k,
                              en->value);
        else
            rc = sw__imp_note(im, w, "[%s] %s=%s: not imported (the fleet has no such setting)",
                              en->section, k, en->value);
    }
    return rc;
}

/* The container: image, runtime, mounts, stop grace, its environment. */
static int container(struct sw_import *im, struct sw__imp_ep *ep, const struct sw_unit *u)
{
    const struct sw_unit_container *c = &u->ctr;
    const char *w = where_of(im, u, c->line);
    if (!w)
        return SW_ENOMEM;
    int rc = 0;
    if (c->image)
        rc = sw__imp_set_str(im, ep, "image", c->image, w);
    else
        rc = sw__imp_note(im, w, "%s run names no image: not imported", c->tool);
    if (!rc)
        rc = sw__imp_set_str(im, ep, "runtime.kind", c->tool, w);
    if (!rc && c->via_shell)
        rc = sw__imp_note(im, w,
                          "%s run is started through sh -c: the render runs it directly (and "
                          "`exec %s wait` is the render's own)",
                          c->tool, c->tool);
    struct sw__imp *p = sw__imp(im);
    ep->mnt_host = sw_region_allocn(&p->r, c->n_mounts + 1, sizeof(char *));
    ep->mnt_cont = sw_region_allocn(&p->r, c->n_mounts + 1, sizeof(char *));
    if (!ep->mnt_host || !ep->mnt_cont)
        return SW_ENOMEM;
    for (size_t i = 0; i < c->n_mounts && !rc; i++) {
        const struct sw_unit_mount *m = &c->mounts[i];
        if (m->host[0] != '/') {
            rc = sw__imp_note(im, w, "mount %s:%s: a named volume, not a path; not imported",
                              m->host, m->cont);
            continue;
        }
        ep->mnt_host[ep->n_mnt] = m->host;
        ep->mnt_cont[ep->n_mnt++] = m->cont;
        rc = sw__imp_set(im, ep, "payload.mounts[]",
                         sw__imp_printf(im, "{host: %s, container: %s, readonly: %s}",
                                        sw__imp_yaml(im, m->host), sw__imp_yaml(im, m->cont),
                                        m->ro ? "true" : "false"),
                         w);
    }
    if (!rc)
        rc = sw__imp_note(im, w,
                          "%s run options other than --name, -v, --device, -e, --env-file, "
                          "--stop-timeout and --entrypoint (--ipc, --shm-size, -p, "
                          "--group-add, ...) are not read: the render writes its own (compare "
                          "with `slipway render`)",
                          c->tool);
    for (size_t i = 0; i < c->n_devices && !rc; i++)
        rc = sw__imp_note(im, w,
                          "--device %s: not imported; the render passes the devices of the "
                          "endpoint's host (declare them under hosts.HOST.devices)",
                          c->devices[i]);
    for (size_t i = 0; i < c->n_env_files && !rc; i++)
        rc = sw__imp_note(im, w, "--env-file %s: not read (give its copy with --env-file)",
                          c->env_files[i]);
    if (!rc && c->entrypoint)
        rc = sw__imp_note(im, w, "--entrypoint %s: the render runs the image's engine program",
                          c->entrypoint);
    if (!rc && u->stop_grace_s >= 0 && u->stop_grace_line > 0) {
        const char *gw = where_of(im, u, u->stop_grace_line);
        rc = gw ? sw__imp_set_str(im, ep, "runtime.stop_grace",
                                  sw__imp_printf(im, "%llds", (long long)u->stop_grace_s),
                                  sw__imp_printf(im, "%s %s", gw, u->stop_grace_how))
                : SW_ENOMEM;
    } else if (!rc && u->stop_grace_s >= 0) {
        rc = sw__imp_note(im, w, "stop grace: %s; not imported (the render's default applies)",
                          u->stop_grace_how);
    }
    /* -e NAME / -e NAME=VALUE: the engine's environment */
    for (size_t i = 0; i < c->n_env && !rc; i++) {
        const char *kv = c->env[i];
        const char *eq = strchr(kv, '=');
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(eq ? (size_t)(eq - kv) : strlen(kv)), kv);
        const char *val = eq ? eq + 1 : sw_unit_env(u, name);
        long var = -1;
        for (size_t k = 0; k < ep->n_vars; k++)
            if (!strcmp(ep->vars[k].name, name))
                var = (long)k;
        if (var >= 0 && !eq)
            ep->var_used[var] = true;
        const char *from = var >= 0 && !eq
                               ? sw__imp_printf(im, "%s:%d, passed by %s -e %s", ep->env_where,
                                                ep->vars[var].line, w, name)
                               : w;
        if (!val) {
            rc = sw__imp_note(im, w, "-e %s: unset in the unit's environment; not imported", name);
            continue;
        }
        char key[160];
        snprintf(key, sizeof(key), "env.%s", name);
        if (sw_fleet_looks_secret(name, val) || strstr(name, "KEY") || strstr(name, "PASS")) {
            rc = sw__imp_set(im, ep, key, sw__imp_printf(im, "{from_env: %s}", name), from);
            if (!rc)
                rc = sw__imp_note(im, w,
                                  var >= 0 && !eq
                                      ? "%s: a secret; its value stays in %s, the fleet reads it "
                                        "from the environment when the endpoint starts"
                                      : "%s: a secret written in the unit: not copied; move it "
                                        "into an env file (%s) and export it",
                                  name, var >= 0 && !eq ? ep->env_where : "mode 0600");
        } else if (var >= 0 && !eq) {
            rc = sw__imp_set(im, ep, sw__imp_printf(im, "env_file.map.%s", name), key, from);
        } else {
            rc = sw__imp_set_str(im, ep, key, val, from);
        }
    }
    return rc;
}

int sw_import_unit_text(struct sw_import *im, const char *name, const char *text, size_t len,
                        const char *env_name, const char *env_text, size_t env_len,
                        const struct sw_import_opts *o, struct sw_err *e)
{
    static const struct sw_import_opts none;
    if (!o)
        o = &none;
    struct sw_unit *u = NULL, *um = NULL;
    struct sw_fleet_envfile *ef = NULL;
    struct sw_buf marks;
    sw_buf_init(&marks, 4u << 20);
    int rc = 0;
    if (!sw__imp(im))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (env_text) {
        rc = sw_fleet_envfile_parse(env_name, env_text, env_len, sw_fleet_no_environ, NULL, &ef, e);
        if (rc)
            goto out;
    }
    rc = sw_unit_parse(text, len, name, env_text, &u, e);
    if (rc)
        goto out;
    /* garbage: a line systemd itself would skip is refused here (nothing guessed) */
    for (size_t i = 0; i < u->n_notes; i++)
        if (!u->notes[i].warning) {
            rc = sw_err_at(e, SW_EPARSE, name, u->notes[i].line, 0, "not a unit line: %s",
                           u->notes[i].msg);
            goto out;
        }
    if (!u->n_entries) {
        rc = sw_err_at(e, SW_EPARSE, name, 1, 0, "not a systemd unit (no Key=Value line)");
        goto out;
    }
    const char *engine = sw__imp_engine_name(u->engine);
    if (!engine) {
        int line = 0;
        sw_unit_get(u, "Service", "ExecStart", &line);
        rc = sw_err_at(e, SW_EINVAL, name, line, 0,
                       "%s runs no engine slipway imports (llama-server, vLLM, SGLang, "
                       "natively or in podman/docker run)",
                       line ? "ExecStart" : "the unit (no ExecStart)");
        goto out;
    }
    /* the markers: the unit again, each env-file value replaced by one */
    for (size_t i = 0; ef && i < ef->n_vars && !rc; i++)
        rc = sw_buf_printf(&marks, "%s=%s%s%c\n", ef->vars[i].key, SW__IMP_MARK_OPEN,
                           ef->vars[i].key, SW__IMP_MARK_CLOSE);
    if (!rc && ef)
        rc = sw_unit_parse(text, len, name, sw_buf_cstr(&marks), &um, NULL);
    if (rc == SW_ENOMEM)
        goto nomem;
    rc = 0;
    const char *epname = o->endpoint;
    char stem[240];
    if (!epname) {
        snprintf(stem, sizeof(stem), "%s", base_name(name));
        char *dot = strstr(stem, ".service");
        if (dot)
            *dot = 0;
        epname = stem;
    }
    struct sw__imp_ep *ep = sw__imp_ep_new(im, epname, e);
    if (!ep) {
        rc = e ? e->code : SW_ENOMEM;
        goto out;
    }
    ep->engine = engine;
    struct sw__imp *p = sw__imp(im);
    if (ef) {
        ep->env_where = sw_region_strdup(&p->r, env_name);
        ep->vars = sw_region_allocn(&p->r, ef->n_vars + 1, sizeof(*ep->vars));
        ep->var_used = sw_region_allocn(&p->r, ef->n_vars + 1, sizeof(bool));
        if (!ep->env_where || !ep->vars || !ep->var_used)
            goto nomem;
        for (size_t i = 0; i < ef->n_vars; i++) {
            ep->vars[i].name = sw_region_strdup(&p->r, ef->vars[i].key);
            ep->vars[i].value = sw_region_strdup(&p->r, ef->vars[i].value);
            ep->vars[i].line = ef->vars[i].line;
            ep->var_used[i] = false;
            if (!ep->vars[i].name || !ep->vars[i].value)
                goto nomem;
        }
        ep->n_vars = ef->n_vars;
    }
    if (o->host)
        rc = sw__imp_set_str(im, ep, "host", o->host, "--host");
    const char *ew = where_of(im, u, u->engine_line);
    if (!ew)
        goto nomem;
    if (!rc && u->ctr.found)
        rc = container(im, ep, u);
    else if (!rc && u->engine_argv[0][0] == '/' &&
             strncmp(base_name(u->engine_argv[0]), "python", 6))
        rc = sw__imp_set_str(im, ep, "binary", u->engine_argv[0], ew);
    if (!rc) {
        const char *const *raw = NULL;
        if (um && um->engine_argc == u->engine_argc && um->engine_arg0 == u->engine_arg0)
            raw = um->engine_argv;
        else if (ef)
            rc = sw__imp_note(im, ew,
                              "the command line splits differently without the env file's "
                              "values: values are imported as written, not through env_file");
        if (!rc)
            rc = sw__imp_argv(im, ep, u->engine_argv, u->engine_argc, u->engine_arg0, raw, ew, e);
        if (rc && rc != SW_ENOMEM)
            goto out;
    }
    if (!rc) {
        char sname[240];
        snprintf(sname, sizeof(sname), "%s", base_name(name));
        char *dot = strstr(sname, ".service");
        if (dot) {
            *dot = 0;
            rc = sw__imp_set_str(im, ep, "service.name", sname,
                                 sw__imp_printf(im, "%s (the unit's name)", name));
        }
    }
    if (!rc)
        rc = unit_keys(im, ep, u);
    /* the env file: referenced when the command line read it */
    bool mapped = false;
    for (size_t i = 0; i < ep->n_kv; i++)
        if (!strncmp(ep->kv[i].key, "env_file.map.", 13))
            mapped = true;
    if (!rc && mapped) {
        int line = 0;
        sw_unit_get(u, "Service", "EnvironmentFile", &line);
        rc = sw__imp_set_str(im, ep, "env_file.path", fleet_env_path(im, env_name, o->out_dir),
                             sw__imp_printf(im, "%s:%d EnvironmentFile=", name, line));
    }
    for (size_t i = 0; i < ep->n_vars && !rc; i++)
        if (!ep->var_used[i])
            rc = sw__imp_note(im, sw__imp_printf(im, "%s:%d", ep->env_where, ep->vars[i].line),
                              "%s: not read by the unit's command line; not imported",
                              ep->vars[i].name);
    if (!rc)
        rc = sw__imp_emit(im);
    if (rc == SW_ENOMEM || rc == SW_ERANGE)
        goto nomem;
    goto out;
nomem:
    rc = sw_err_set(e, SW_ENOMEM, "out of memory");
out:
    sw_unit_free(u);
    sw_unit_free(um);
    sw_fleet_envfile_free(ef);
    sw_buf_free(&marks);
    return rc;
}

int sw_import_unit(struct sw_import *im, const char *path, const struct sw_import_opts *o,
                   struct sw_err *e)
{
    static const struct sw_import_opts none;
    if (!o)
        o = &none;
    char *text = NULL, *env = NULL;
    size_t len = 0, elen = 0;
    struct sw_unit *u0 = NULL;
    int rc = sw_read_file(path, SW_UNIT_TEXT_MAX, &text, &len, e);
    if (rc)
        return rc;
    const char *env_path = o->env_file;
    if (!env_path) {
        rc = sw_unit_parse(text, len, path, NULL, &u0, e);
        if (rc)
            goto out;
        int line = 0;
        const char *ef = sw_unit_get(u0, "Service", "EnvironmentFile", &line);
        if (ef) {
            bool optional = ef[0] == '-';
            const char *fp = optional ? ef + 1 : ef;
            rc = sw_read_file(fp, SW_UNIT_TEXT_MAX, &env, &elen, NULL);
            if (rc && !optional) {
                rc = sw_err_at(e, rc, path, line, 0,
                               "EnvironmentFile=%s cannot be read here: give a copy with "
                               "--env-file FILE (its values are not guessed)",
                               fp);
                goto out;
            }
            if (rc) {
                rc = sw__imp_note(im, sw__imp_printf(im, "%s:%d", path, line),
                                  "EnvironmentFile=%s: optional and absent here; read nothing "
                                  "from it",
                                  ef);
                if (rc)
                    goto out;
            } else
                env_path = fp;
        }
    } else {
        rc = sw_read_file(env_path, SW_UNIT_TEXT_MAX, &env, &elen, e);
        if (rc)
            goto out;
    }
    rc = sw_import_unit_text(im, path, text, len, env_path, env, elen, o, e);
out:
    sw_unit_free(u0);
    if (env)
        memset(env, 0, elen); /* it may hold secrets */
    sw_free(env);
    sw_free(text);
    return rc;
}
