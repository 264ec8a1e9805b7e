/*
 * A `podman run` / `docker run` command line: its options as the tool reads them (boolean ones
 * take no value, short clusters of flags), the container's name, mounts (-v and --mount bind),
 * devices, environment and env files, entrypoint and --stop-timeout, then its image and the
 * command it runs. The first container of a unit is the one read.
 *
 * It does not pull or inspect the image, or read options the laws do not use.
 */
#include "scan_internal.h"

#include <string.h>

/* `podman run` boolean options (no value): everything else with two dashes and no '=' takes the
 * next word. Short clusters of these letters are flags: d i t P q. */
static const char *const run_bools[] = {"rm",
                                        "detach",
                                        "interactive",
                                        "tty",
                                        "privileged",
                                        "init",
                                        "replace",
                                        "read-only",
                                        "publish-all",
                                        "quiet",
                                        "no-hosts",
                                        "no-healthcheck",
                                        "rootfs",
                                        "env-host",
                                        "http-proxy",
                                        "oom-kill-disable",
                                        "read-only-tmpfs",
                                        "sig-proxy",
                                        "tls-verify",
                                        "help",
                                        NULL};

static bool run_bool(const char *name, size_t n)
{
    for (size_t i = 0; run_bools[i]; i++)
        if (strlen(run_bools[i]) == n && !strncmp(run_bools[i], name, n))
            return true;
    return false;
}

static int add_mount_volume(struct sw__scan *s, const char *v)
{
    struct sw_unit_container *c = &s->u->ctr;
    int rc;
    const char *c1 = strchr(v, ':');
    if (!c1)
        return 0; /* an anonymous volume: no host side */
    const char *c2 = strchr(c1 + 1, ':');
    struct sw_unit_mount m = {0};
    m.host = sw_region_strndup(s->a, v, (size_t)(c1 - v));
    m.cont = c2 ? sw_region_strndup(s->a, c1 + 1, (size_t)(c2 - c1 - 1))
                : sw_region_strdup(s->a, c1 + 1);
    if (!m.host || !m.cont)
        return SW_ENOMEM;
    if (c2) {
        const char *o = c2 + 1;
        while (*o) {
            size_t l = strcspn(o, ",");
            if (l == 2 && !strncmp(o, "ro", 2))
                m.ro = true;
            o += l;
            if (*o)
                o++;
        }
    }
    SW__SCAN_PUSH(c->mounts, c->n_mounts, s->cap_mounts, m);
    return 0;
}

static int add_mount_spec(struct sw__scan *s, const char *v)
{
    struct sw_unit_container *c = &s->u->ctr;
    struct sw_unit_mount m = {0};
    int rc;
    bool bind = false;
    const char *o = v;
    while (*o) {
        size_t l = strcspn(o, ",");
        const char *eq = memchr(o, '=', l);
        size_t kl = eq ? (size_t)(eq - o) : l;
        const char *val = eq ? eq + 1 : o + l;
        size_t vl = (size_t)(o + l - val);
#define K(str) (kl == strlen(str) && !strncmp(o, str, kl))
        if (K("type"))
            bind = vl == 4 && !strncmp(val, "bind", 4);
        else if (K("source") || K("src"))
            m.host = sw_region_strndup(s->a, val, vl);
        else if (K("target") || K("destination") || K("dst"))
            m.cont = sw_region_strndup(s->a, val, vl);
        else if (K("ro") || K("readonly"))
            m.ro = !eq || (vl == 4 && !strncmp(val, "true", 4)) || (vl == 1 && *val == '1');
#undef K
        o += l;
        if (*o)
            o++;
    }
    if (!bind || !m.host || !m.cont)
        return 0;
    SW__SCAN_PUSH(c->mounts, c->n_mounts, s->cap_mounts, m);
    return 0;
}

/* argv[i] is `run` of a podman/docker command line: read its options, image and the rest. */
int sw__scan_run(struct sw__scan *s, char **argv, size_t argc, size_t i, const char *key, int line,
                 bool via_shell)
{
    struct sw_unit_container *c = &s->u->ctr;
    int rc;
    if (c->found)
        return 0; /* the first container wins */
    c->found = true;
    c->tool = !strcmp(sw__scan_base(argv[0]), "docker") ? "docker" : "podman";
    c->key = key;
    c->line = line;
    c->via_shell = via_shell;
    c->stop_timeout_s = -1;
    for (i++; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || !a[1])
            break;
        const char *name = a, *val = NULL;
        size_t nl;
        bool is_long = a[1] == '-';
        if (is_long) {
            name = a + 2;
            const char *eq = strchr(name, '=');
            nl = eq ? (size_t)(eq - name) : strlen(name);
            if (eq)
                val = eq + 1;
            else if (!run_bool(name, nl) && i + 1 < argc)
                val = argv[++i];
        } else {
            name = a + 1;
            nl = strlen(name);
            if (strspn(name, "ditPq") == nl)
                continue;
            if (nl > 1 && strchr("vepwuhml", name[0])) {
                val = name + 1 + (name[1] == '=');
                nl = 1;
            } else if (i + 1 < argc) {
                val = argv[++i];
            }
        }
        if (!val)
            continue;
        rc = 0;
#define N(str) (nl == strlen(str) && !strncmp(name, str, nl))
        if (N("name"))
            c->name = val;
        else if (N("v") || N("volume"))
            rc = add_mount_volume(s, val);
        else if (N("mount"))
            rc = add_mount_spec(s, val);
        else if (N("device"))
            SW__SCAN_PUSH(c->devices, c->n_devices, s->cap_devices, val);
        else if (N("e") || N("env"))
            SW__SCAN_PUSH(c->env, c->n_env, s->cap_cenv, val);
        else if (N("entrypoint"))
            c->entrypoint = val;
        else if (N("env-file"))
            SW__SCAN_PUSH(c->env_files, c->n_env_files, s->cap_cenvf, val);
        else if (N("stop-timeout")) {
            int64_t t;
            if (!sw_parse_i64(val, &t, NULL) && t >= 0)
                c->stop_timeout_s = t;
        }
#undef N
        if (rc)
            return rc;
    }
    if (i < argc) {
        c->image = argv[i++];
        c->argv = (const char **)(argv + i);
        c->argc = argc - i;
    }
    return 0;
}
