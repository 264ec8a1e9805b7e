/*
 * import_host: the engine units of a fleet host, read over its transport (src/host). One
 * `systemctl show` lists every service's Id, FragmentPath and ExecStart; the units whose
 * ExecStart names an engine or a container runtime are read with `cat` (and their
 * EnvironmentFile, when it exists), then imported as a unit file is. A unit that turns out to run
 * no engine is a note, not an error.
 *
 * What it does not do: change anything on the host, read drop-ins (a note says the unit's own
 * file was read), or copy a secret off it (the local env copy holds only non-secret lines).
 */
#include "import_internal.h"

#include <slipway/host.h>
#include <slipway/unit_lint.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DEADLINE_MS 30000

static bool engine_like(const char *exec)
{
    static const char *const words[] = {"llama-server", "vllm", "sglang", "podman", "docker"};
    for (size_t i = 0; i < SW_ARRAY_LEN(words); i++)
        if (strstr(exec, words[i]))
            return true;
    return false;
}

static int cat(struct sw_host *h, const char *path, char **text, size_t *len, struct sw_err *e)
{
    const char *argv[] = {"cat", "--", path, NULL};
    struct sw_host_result r;
    struct sw_host_run_opts ro = {.deadline_ms = DEADLINE_MS, .max_out = SW_UNIT_TEXT_MAX};
    int rc = sw_host_run(h, argv, &ro, &r, e);
    if (!rc) {
        *text = r.out;
        *len = r.out_len;
        r.out = NULL;
    }
    sw_host_result_free(&r);
    return rc;
}

/* The non-secret lines of an env file: what the fleet may read beside it. */
static int write_env_copy(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return SW_EIO;
    struct sw_buf b;
    sw_buf_init(&b, SW_UNIT_TEXT_MAX);
    int rc = sw_buf_puts(&b, "# a copy of the host's env file without its secrets (they stay on "
                             "the host), written by slipway import host\n");
    for (const char *p = text; *p && !rc;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[4096];
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
        p += n + (nl ? 1 : 0);
        const char *eq = strchr(line, '=');
        char name[256] = "";
        if (eq && line[0] != '#')
            snprintf(name, sizeof(name), "%.*s", (int)(eq - line), line);
        if (*name &&
            (sw_fleet_looks_secret(name, eq + 1) || strstr(name, "KEY") || strstr(name, "PASS")))
            rc = sw_buf_printf(&b, "# %s: a secret, left on the host\n", name);
        else
            rc = sw_buf_printf(&b, "%s\n", line);
    }
    if (!rc && write(fd, b.data, b.len) != (ssize_t)b.len)
        rc = SW_EIO;
    if (close(fd))
        rc = SW_EIO;
    sw_buf_free(&b);
    return rc;
}

int sw_import_host(struct sw_import *im, const char *fleet_path, const char *host,
                   const struct sw_import_opts *o, struct sw_err *e)
{
    static const struct sw_import_opts none;
    if (!o)
        o = &none;
    struct sw_fleet *f = NULL;
    struct sw_host h;
    bool opened = false;
    struct sw_host_result r;
    memset(&r, 0, sizeof(r));
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    int rc = sw_fleet_load(fleet_path, &fo, &f, e);
    if (rc)
        return rc;
    const struct sw_fleet_host *fh = sw_fleet_host(f, host);
    if (!fh) {
        rc = sw_err_set(e, SW_ENOENT, "%s: no host '%s'", fleet_path, host);
        goto out;
    }
    rc = sw_host_open_fleet(&h, fh, 0, e);
    if (rc)
        goto out;
    opened = true;
    /* every service the system manager knows, with its file and command */
    const char *list[] = {"systemctl", "list-units", "--type=service", "--all", "--no-legend",
                          "--plain",   NULL};
    struct sw_host_run_opts ro = {.deadline_ms = DEADLINE_MS};
    rc = sw_host_run(&h, list, &ro, &r, e);
    if (rc)
        goto out;
    size_t count = 0;
    struct sw_buf names;
    sw_buf_init(&names, 4u << 20);
    const char *argv_show[4096];
    size_t na = 0;
    argv_show[na++] = "systemctl";
    argv_show[na++] = "show";
    argv_show[na++] = "--property=Id,FragmentPath,ExecStart";
    char *save = NULL;
    for (char *line = strtok_r(r.out, "\n", &save); line && na + 1 < SW_ARRAY_LEN(argv_show);
         line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '*' || *line == '\xe2')
            line++;
        char *sp = strchr(line, ' ');
        if (sp)
            *sp = 0;
        if (strstr(line, ".service"))
            argv_show[na++] = line;
    }
    argv_show[na] = NULL;
    struct sw_host_result s;
    memset(&s, 0, sizeof(s));
    rc = na > 3 ? sw_host_run(&h, argv_show, &ro, &s, e) : 0;
    sw_buf_free(&names);
    if (rc) {
        sw_host_result_free(&s);
        goto out;
    }
    /* blocks of Id=, FragmentPath=, ExecStart= separated by blank lines */
    const char *id = NULL, *frag = NULL, *exec = NULL;
    char *save2 = NULL;
    char *text = s.out ? s.out : "";
    for (char *p = text;; p = NULL) {
        char *line = strtok_r(p, "\n", &save2);
        bool end = !line || !strncmp(line, "Id=", 3);
        if (end && id && frag && *frag && exec && engine_like(exec) && !rc) {
            char *unit = NULL, *env = NULL;
            size_t ul = 0, el = 0;
            rc = cat(&h, frag, &unit, &ul, e);
            struct sw_unit *u0 = NULL;
            const char *envp = NULL;
            if (!rc && !sw_unit_parse(unit, ul, frag, NULL, &u0, NULL)) {
                const char *ef = sw_unit_get(u0, "Service", "EnvironmentFile", NULL);
                if (ef) {
                    envp = ef[0] == '-' ? ef + 1 : ef;
                    struct sw_err ee;
                    if (cat(&h, envp, &env, &el, &ee))
                        envp = NULL;
                }
            }
            char where[1024], ewhere[4200], local[4096];
            snprintf(where, sizeof(where), "%s:%s", host, frag);
            snprintf(ewhere, sizeof(ewhere), "%s", envp ? envp : "");
            if (!rc && env) {
                char stem[256];
                snprintf(stem, sizeof(stem), "%s", id);
                char *dot = strstr(stem, ".service");
                if (dot)
                    *dot = 0;
                snprintf(local, sizeof(local), "%s/%s-%s.env", o->out_dir ? o->out_dir : ".", host,
                         stem);
                if (write_env_copy(local, env))
                    rc = sw_err_set(e, SW_EIO, "%s: cannot write the env file's copy", local);
                snprintf(ewhere, sizeof(ewhere), "%s", local);
            }
            if (!rc) {
                struct sw_import_opts uo = *o;
                uo.host = host;
                struct sw_err ue;
                sw_err_clear(&ue);
                int urc = sw_import_unit_text(im, where, unit, ul, env ? ewhere : NULL, env, el,
                                              &uo, &ue);
                if (urc == SW_ENOMEM)
                    rc = sw_err_set(e, urc, "out of memory");
                else if (urc)
                    rc = sw__imp_note(im, where, "not imported: %s", ue.msg);
                else {
                    count++;
                    if (envp)
                        rc = sw__imp_note(im, where,
                                          "EnvironmentFile %s:%s read; its non-secret lines "
                                          "copied to %s (the secrets stay on the host)",
                                          host, envp, local);
                }
            }
            sw_unit_free(u0);
            if (env)
                memset(env, 0, el);
            sw_free(env);
            sw_free(unit);
            id = frag = exec = NULL;
        }
        if (!line || rc)
            break;
        if (!strncmp(line, "Id=", 3))
            id = line + 3;
        else if (!strncmp(line, "FragmentPath=", 13))
            frag = line + 13;
        else if (!strncmp(line, "ExecStart=", 10))
            exec = line + 10;
    }
    sw_host_result_free(&s);
    if (!rc && !count)
        rc = sw_err_set(e, SW_ENOENT,
                        "host %s: no service unit runs llama-server, vLLM or SGLang (natively or "
                        "in podman/docker run)",
                        host);
out:
    sw_host_result_free(&r);
    if (opened)
        sw_host_disconnect(&h);
    sw_fleet_free(f);
    return rc;
}
