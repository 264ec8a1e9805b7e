/*
 * The unit lint's laws over a parsed unit (scan.c). Each finding names the relationship it
 * checks and both values, with the lines they come from, so the operator sees which two settings
 * disagree, not a rule number. A secret's value is never quoted, only its key.
 *
 * A position in a drop-in is named with the drop-in's file ("line 3 of foo.service.d/x.conf"),
 * one in the unit as it always was ("line 12").
 *
 * What it does not do: read files (lint_file.c), or guess values systemd takes from elsewhere
 * (system.conf defaults, drop-ins it was not given) beyond the documented defaults named in the
 * messages.
 */
#include "lint_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int sw__unit_add(struct sw_unit_report *r, const char *law, enum sw_unit_severity sev, int line,
                 const char *fmt, ...)
{
    if (sw_grow(&r->v, &r->cap_, r->n, sizeof(*r->v), SIZE_MAX))
        return SW_ENOMEM;
    struct sw_unit_finding *f = &r->v[r->n++];
    f->law = law;
    f->severity = sev;
    f->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
    va_end(ap);
    return 0;
}

void sw_unit_report_free(struct sw_unit_report *r)
{
    if (!r)
        return;
    sw_free(r->v);
    r->v = NULL;
    r->n = r->cap_ = 0;
}

/* How a message names a position: "line 12" in the unit, "line 3 of FILE" in a drop-in. Used as
 * at(u, pos).s in an argument list (the temporary lives to the end of the call). */
struct at_text {
    char s[300];
};

static struct at_text at(const struct sw_unit *u, int pos)
{
    struct at_text t;
    int line = 0;
    const char *file = sw_unit_pos(u, pos, &line);
    if (pos < SW_UNIT_PART_LINES)
        snprintf(t.s, sizeof(t.s), "line %d", line);
    else
        snprintf(t.s, sizeof(t.s), "line %d of %.250s", line, file);
    return t;
}

bool sw_unit_exists_local(void *ctx, const char *path)
{
    (void)ctx;
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * stop-timeout: TimeoutStopSec (or TimeoutSec; systemd's default 90 s) > the container's grace.
 */
static int law_stop_timeout(const struct sw_unit *u, struct sw_unit_report *r)
{
    if (u->stop_grace_s < 0)
        return 0;
    int line = 0;
    const char *key = "TimeoutStopSec";
    const char *v = sw_unit_get(u, "Service", key, &line);
    if (!v) {
        key = "TimeoutSec";
        v = sw_unit_get(u, "Service", key, &line);
    }
    int64_t ms = 90000;
    char shown[512];
    if (v) {
        if (sw_unit_timespan_ms(v, &ms))
            return sw__unit_add(r, SW_UNIT_LAW_STOP_TIMEOUT, SW_UNIT_ERROR, line,
                                "%s=%.60s is not a time span systemd reads, so the stop timeout "
                                "cannot be compared with the container's stop grace `%s` "
                                "(%s)",
                                key, v, u->stop_grace_how, at(u, u->stop_grace_line).s);
        if (ms == 0 || ms == INT64_MAX)
            return 0; /* 0 and infinity: systemd never kills the stop */
        snprintf(shown, sizeof(shown), "%s=%.100s (%s)", key, v, at(u, line).s);
    } else {
        snprintf(shown, sizeof(shown),
                 "TimeoutStopSec=90s (systemd's default: the unit sets "
                 "none)");
    }
    /* The grace is seconds as the unit wrote them (podman's -t is any uint): one past what a
     * millisecond count holds is above every finite timeout, and is never multiplied. */
    if (u->stop_grace_s <= INT64_MAX / 1000 && ms > u->stop_grace_s * 1000)
        return 0;
    return sw__unit_add(r, SW_UNIT_LAW_STOP_TIMEOUT, SW_UNIT_ERROR, v ? line : u->stop_grace_line,
                        "%s is not above the container's stop grace `%s` (%s): systemd "
                        "kills the stop before the container may finish it, so every stop is "
                        "logged as failed; set TimeoutStopSec above %llds",
                        shown, u->stop_grace_how, at(u, u->stop_grace_line).s,
                        (long long)u->stop_grace_s);
}

/* ---------------------------------------------------------------------------------------------
 * start-limit: StartLimit* exactly once, in [Unit].
 */
static int law_start_limit(const struct sw_unit *u, struct sw_unit_report *r)
{
    static const char *const keys[] = {"StartLimitIntervalSec", "StartLimitBurst",
                                       "StartLimitAction"};
    int rc = 0;
    for (size_t k = 0; k < SW_ARRAY_LEN(keys) && !rc; k++) {
        int first = 0, count = 0;
        for (size_t i = 0; i < u->n_entries && !rc; i++) {
            const struct sw_unit_entry *en = &u->entries[i];
            bool same =
                !strcmp(en->key, keys[k]) || (k == 0 && !strcmp(en->key, "StartLimitInterval"));
            if (!same || !en->value[0])
                continue;
            if (!strcmp(en->section, "Service")) {
                if (!strcmp(en->key, "StartLimitIntervalSec"))
                    rc = sw__unit_add(r, SW_UNIT_LAW_START_LIMIT, SW_UNIT_ERROR, en->line,
                                      "%s=%.60s is in [Service] but is a [Unit] setting: systemd "
                                      "ignores it (\"Unknown key '%s' in section [Service], "
                                      "ignoring\" on every load), so the start limit is "
                                      "systemd's default; move it to [Unit], once",
                                      en->key, en->value, en->key);
                else
                    rc = sw__unit_add(r, SW_UNIT_LAW_START_LIMIT, SW_UNIT_WARNING, en->line,
                                      "%s=%.60s is in [Service]: systemd reads it there only as "
                                      "a legacy spelling; the start limit belongs in [Unit] "
                                      "(StartLimitIntervalSec/StartLimitBurst), once",
                                      en->key, en->value);
                continue;
            }
            if (strcmp(en->section, "Unit"))
                continue;
            if (++count == 1) {
                first = en->line;
                continue;
            }
            rc = sw__unit_add(r, SW_UNIT_LAW_START_LIMIT, SW_UNIT_ERROR, en->line,
                              "%s=%.60s sets the start limit again (first at %s): only the "
                              "last one counts; keep exactly one",
                              en->key, en->value, at(u, first).s);
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * restart: an engine (or a main process) that exits 0 when the service died needs Restart=always.
 */
static int law_restart(const struct sw_unit *u, struct sw_unit_report *r)
{
    int line = 0;
    const char *v = sw_unit_get(u, "Service", "Restart", &line);
    if (v && !strcmp(v, "always"))
        return 0;
    char shown[400];
    if (v)
        snprintf(shown, sizeof(shown), "Restart=%.40s (%s)", v, at(u, line).s);
    else
        snprintf(shown, sizeof(shown), "Restart=no (systemd's default: the unit sets none)");
    int rc = 0;
    if (u->wait_line) {
        rc = sw__unit_add(r, SW_UNIT_LAW_RESTART, SW_UNIT_ERROR, v ? line : u->wait_line,
                          "%s with `%s wait` as the main process (%s): it exits 0 "
                          "whatever the container's exit status, so the service never restarts "
                          "when the container dies; Restart=always",
                          shown, u->ctr.found ? u->ctr.tool : "podman", at(u, u->wait_line).s);
        if (rc)
            return rc;
    }
    /* vLLM's OpenAI API server shuts down cleanly (exit 0) when its engine core dies: the
     * operator's journal ("Deactivated successfully" after an EngineCore fatal error) and
     * vllm-project/vllm#48966 ("Unexpected EngineCore death exits serving process 0, defeating
     * Restart=on-failure"). SGLang is not held to this: no such exit is documented for it. */
    if (u->engine == SW_UNIT_ENGINE_VLLM && !u->wait_line)
        rc = sw__unit_add(r, SW_UNIT_LAW_RESTART, SW_UNIT_ERROR, v ? line : u->engine_line,
                          "%s with vLLM's API server (%s): it exits 0 when its engine "
                          "dies, so Restart=%.40s never restarts it and the endpoint stays "
                          "down; Restart=always",
                          shown, at(u, u->engine_line).s, v ? v : "no");
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * path: every path the engine receives lies inside its mount namespace (compared in lexical form:
 * `/models/../etc` is not under `/models`).
 */
/* A Hub repository id ("org/name"): the engine downloads it; no path to check. */
static bool repo_id(const char *p)
{
    if (p[0] == '/' || p[0] == '.' || p[0] == '~')
        return false;
    const char *sl = strchr(p, '/');
    if (!sl || sl == p || strchr(sl + 1, '/') || !sl[1])
        return false;
    for (const char *q = p; *q; q++)
        if (!isalnum((unsigned char)*q) && !strchr("-_./", *q))
            return false;
    return true;
}

static int law_paths(const struct sw_unit *u, const struct sw_unit_lint_opts *o,
                     struct sw_unit_report *r)
{
    int rc = 0;
    const char *eng = sw_unit_engine_name(u->engine);
    for (size_t i = 0; i < u->n_paths && !rc; i++) {
        const struct sw_unit_path *p = &u->paths[i];
        if (u->engine != SW_UNIT_ENGINE_LLAMACPP && repo_id(p->path))
            continue;
        if (p->path[0] != '/') {
            rc = sw__unit_add(r, SW_UNIT_LAW_PATH, SW_UNIT_ERROR, u->engine_line,
                              "the %s path %s %.300s that %s receives is relative: it resolves "
                              "against the %s's working directory, not where the file is; give "
                              "an absolute path",
                              p->role, p->flag, p->path, eng,
                              u->ctr.found ? "container" : "service");
            continue;
        }
        if (!u->ctr.found) {
            if (o && o->exists && !o->exists(o->exists_ctx, p->path))
                rc = sw__unit_add(r, SW_UNIT_LAW_PATH, SW_UNIT_ERROR, u->engine_line,
                                  "the %s path %s %.300s that %s receives does not exist on the "
                                  "host",
                                  p->role, p->flag, p->path, eng);
            continue;
        }
        const struct sw_unit_mount *m = NULL;
        size_t ml = 0;
        char rest[4096], hrest[4096];
        for (size_t k = 0; k < u->ctr.n_mounts; k++) {
            size_t l = sw_path_within(p->path, u->ctr.mounts[k].cont, hrest, sizeof(hrest));
            if (l > ml) {
                m = &u->ctr.mounts[k];
                ml = l;
                memcpy(rest, hrest, sizeof(rest));
            }
        }
        if (!m) {
            const struct sw_unit_mount *h = NULL;
            for (size_t k = 0; k < u->ctr.n_mounts; k++)
                if (sw_path_within(p->path, u->ctr.mounts[k].host, hrest, sizeof(hrest)))
                    h = &u->ctr.mounts[k];
            if (h)
                rc = sw__unit_add(
                    r, SW_UNIT_LAW_PATH, SW_UNIT_ERROR, u->engine_line,
                    "the %s path %s %.300s that %s receives inside the container is the HOST "
                    "path: the container mounts %.200s at %.200s (%s), so the engine must "
                    "be given %.200s%.300s",
                    p->role, p->flag, p->path, eng, h->host, h->cont, at(u, u->ctr.line).s, h->cont,
                    hrest);
            else
                rc = sw__unit_add(r, SW_UNIT_LAW_PATH, SW_UNIT_ERROR, u->engine_line,
                                  "the %s path %s %.300s that %s receives lies under none of the "
                                  "container's %zu mount(s) (%s): inside the container it "
                                  "does not exist",
                                  p->role, p->flag, p->path, eng, u->ctr.n_mounts,
                                  at(u, u->ctr.line).s);
            continue;
        }
        if (o && o->exists && m->host[0] == '/') {
            char host[8192], hl[4096];
            if (sw_path_lexical(m->host, hl, sizeof(hl)))
                continue;
            snprintf(host, sizeof(host), "%s%s", strcmp(hl, "/") ? hl : "", rest[0] ? rest : "/");
            if (!o->exists(o->exists_ctx, host))
                rc = sw__unit_add(r, SW_UNIT_LAW_PATH, SW_UNIT_ERROR, u->engine_line,
                                  "the %s path %s %.300s lies under the mount %.200s:%.200s "
                                  "(%s) but its host side %.300s does not exist",
                                  p->role, p->flag, p->path, m->host, m->cont, at(u, u->ctr.line).s,
                                  host);
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * image-digest: name@sha256:<64 hex>.
 */
static bool pinned(const char *img)
{
    const char *at = strstr(img, "@sha256:");
    if (!at)
        return false;
    const char *h = at + 8;
    size_t n = 0;
    while (h[n] && ((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
        n++;
    return n == 64 && h[64] == '\0';
}

static int law_image(const struct sw_unit *u, struct sw_unit_report *r)
{
    if (!u->ctr.found)
        return 0;
    if (!u->ctr.image)
        return sw__unit_add(r, SW_UNIT_LAW_IMAGE, SW_UNIT_ERROR, u->ctr.line,
                            "`%s run` (%s) names no image after its options", u->ctr.tool,
                            at(u, u->ctr.line).s);
    if (pinned(u->ctr.image))
        return 0;
    const char *colon = strrchr(u->ctr.image, ':');
    const char *slash = strrchr(u->ctr.image, '/');
    bool tag = colon && (!slash || colon > slash);
    return sw__unit_add(r, SW_UNIT_LAW_IMAGE, SW_UNIT_ERROR, u->ctr.line,
                        "the image %.300s (%s) is named by %s, not by digest: what runs "
                        "changes whenever the registry moves it; pin name@sha256:<64 hex>",
                        u->ctr.image, at(u, u->ctr.line).s,
                        tag ? "tag" : "bare name (implicitly :latest)");
}

/* ---------------------------------------------------------------------------------------------
 * secret: no secret on a command line, none in the unit file itself.
 */
static bool secret_name(const char *k, size_t n)
{
    char up[128];
    if (n >= sizeof(up))
        n = sizeof(up) - 1;
    for (size_t i = 0; i < n; i++)
        up[i] = (char)toupper((unsigned char)k[i]);
    up[n] = '\0';
    /* HF_TOKEN, HUGGING_FACE_HUB_TOKEN, *_API_KEY, *_SECRET*, *PASSWORD*; not MAX_TOKENS */
    bool token = n >= 5 && !strcmp(up + n - 5, "TOKEN");
    bool access = n >= 10 && !strcmp(up + n - 10, "ACCESS_KEY");
    return token || access || strstr(up, "API_KEY") || strstr(up, "APIKEY") ||
           strstr(up, "SECRET") || strstr(up, "PASSWORD") || strstr(up, "PASSWD");
}

static const char *const secret_flags[] = {"--api-key", "--hf-token", "--token", "--admin-api-key",
                                           NULL};

/* The words of one command as written (raw: no expansion); argv: expanded (for redaction). */
static int secrets_in(const struct sw_unit *u, const struct sw_unit_cmd *c, char **w, size_t n,
                      struct sw_unit_report *r)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *a = w[i];
        for (size_t k = 0; secret_flags[k] && !rc; k++) {
            size_t fl = strlen(secret_flags[k]);
            if (strncmp(a, secret_flags[k], fl) || (a[fl] != '\0' && a[fl] != '='))
                continue;
            const char *val = a[fl] == '=' ? a + fl + 1 : (i + 1 < n ? w[i + 1] : "");
            if (!*val)
                continue;
            bool var = val[0] == '$';
            rc = sw__unit_add(r, SW_UNIT_LAW_SECRET, SW_UNIT_ERROR, c->line,
                              "%s (%s) passes %s %s on the command line: %s is readable by "
                              "every local user (ps, /proc/PID/cmdline) and lands in the "
                              "journal; give it to the engine in its environment from an "
                              "EnvironmentFile (mode 0600) or a credential",
                              c->key, at(u, c->line).s, secret_flags[k],
                              var ? "from a variable, expanded" : "with a literal value",
                              var ? "the expanded value" : "the value");
        }
        /* -e NAME=VALUE / --env NAME=VALUE / --env=NAME=VALUE */
        const char *ev = NULL;
        if ((!strcmp(a, "-e") || !strcmp(a, "--env")) && i + 1 < n)
            ev = w[i + 1];
        else if (!strncmp(a, "--env=", 6))
            ev = a + 6;
        else if (!strncmp(a, "-e", 2) && a[2] && a[2] != '-')
            ev = a + 2;
        if (ev) {
            const char *eq = strchr(ev, '=');
            if (eq && eq[1] && secret_name(ev, (size_t)(eq - ev)))
                rc = sw__unit_add(r, SW_UNIT_LAW_SECRET, SW_UNIT_ERROR, c->line,
                                  "%s (%s) sets %.*s=<value> on the container's command "
                                  "line: readable by every local user (ps) and kept in the "
                                  "container's config; pass `-e %.*s` (from the unit's "
                                  "environment) or --env-file / --secret",
                                  c->key, at(u, c->line).s, (int)(eq - ev), ev, (int)(eq - ev), ev);
        }
    }
    return rc;
}

static int law_secret(struct sw_unit *u, struct sw_unit_report *r)
{
    int rc = 0;
    for (size_t i = 0; i < u->n_entries && !rc; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        if (en->reset || strcmp(en->key, "Environment"))
            continue;
        /* the words as written: NAME=VALUE (quotes removed by the scanner's split) */
        const char *p = en->value;
        while (*p && !rc) {
            while (*p == ' ' || *p == '\t' || *p == '"' || *p == '\'')
                p++;
            size_t wl = strcspn(p, " \t\"'");
            const char *eq = memchr(p, '=', wl);
            if (eq && (size_t)(eq - p) < wl - 1 && secret_name(p, (size_t)(eq - p)))
                rc = sw__unit_add(r, SW_UNIT_LAW_SECRET, SW_UNIT_ERROR, en->line,
                                  "Environment=%.*s=<value> (%s) holds a secret in the unit "
                                  "file, which is world-readable (0644) and shown by `systemctl "
                                  "show`; put it in an EnvironmentFile (mode 0600) or "
                                  "LoadCredential=",
                                  (int)(eq - p), p, at(u, en->line).s);
            p += wl;
        }
    }
    for (size_t i = 0; i < u->n_cmds && !rc; i++) {
        struct sw_unit_cmd *c = &u->cmds[i];
        rc = secrets_in(u, c, c->raw, c->n_raw, r);
        /* inside `sh -c '...'`: the shell string's words, split loosely */
        if (!rc && c->n_raw >= 3 && !strcmp(c->raw[1], "-c")) {
            char *dup = sw_strdup(c->raw[2]);
            char *w[512], *save = NULL;
            size_t n = 0;
            if (!dup)
                return SW_ENOMEM;
            for (char *t = strtok_r(dup, " \t\n'\"", &save); t && n < SW_ARRAY_LEN(w);
                 t = strtok_r(NULL, " \t\n'\"", &save))
                w[n++] = t;
            rc = secrets_in(u, c, w, n, r);
            sw_free(dup);
        }
    }
    /* Belt and braces: no message may carry a value the unit's environment holds for a secret
     * name (the messages above never print one). */
    for (size_t i = 0; i < u->n_env; i++) {
        const char *eq = strchr(u->env[i], '=');
        if (eq && secret_name(u->env[i], (size_t)(eq - u->env[i])))
            for (size_t k = 0; k < r->n; k++)
                sw_redact(r->v[k].msg, eq + 1);
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * memory-limit: MemoryMax= (or the cgroup v1 spelling MemoryLimit=) in [Service], with a value
 * systemd reads, on a unit whose engine it reaches.
 */
static int law_memory(const struct sw_unit *u, struct sw_unit_report *r)
{
    static const char *const keys[] = {"MemoryMax", "MemoryLimit", "MemoryHigh"};
    int rc = 0;
    for (size_t i = 0; i < u->n_entries && !rc; i++) {
        const struct sw_unit_entry *en = &u->entries[i];
        bool mine = false;
        for (size_t k = 0; k < SW_ARRAY_LEN(keys); k++)
            mine |= !strcmp(en->key, keys[k]);
        if (!mine || !en->value[0])
            continue;
        if (strcmp(en->section, "Service"))
            rc = sw__unit_add(r, SW_UNIT_LAW_MEMORY, SW_UNIT_ERROR, en->line,
                              "%s=%.60s is in [%s]: a memory limit is a [Service] setting; "
                              "systemd ignores it there (\"Unknown key\") and the engine runs "
                              "without a limit",
                              en->key, en->value, en->section);
        else if (!sw__unit_size_ok(en->value))
            rc = sw__unit_add(r, SW_UNIT_LAW_MEMORY, SW_UNIT_ERROR, en->line,
                              "%s=%.60s is not a size systemd reads (bytes with an optional "
                              "K/M/G/T/P/E suffix, a percentage, or infinity): it ignores the line "
                              "and the engine runs without a limit",
                              en->key, en->value);
        else if (u->ctr.found)
            rc = sw__unit_add(r, SW_UNIT_LAW_MEMORY, SW_UNIT_WARNING, en->line,
                              "%s=%.60s limits the unit's own processes, not the %s container "
                              "started at %s (its processes live in the runtime's own "
                              "cgroup): give the container --memory",
                              en->key, en->value, u->ctr.tool ? u->ctr.tool : "container",
                              at(u, u->ctr.line).s);
        else if (!strcmp(en->key, "MemoryLimit"))
            rc = sw__unit_add(r, SW_UNIT_LAW_MEMORY, SW_UNIT_WARNING, en->line,
                              "MemoryLimit=%.60s is the cgroup v1 spelling systemd deprecated; "
                              "MemoryMax= is read on both hierarchies",
                              en->value);
    }
    return rc;
}

static int law_syntax(const struct sw_unit *u, struct sw_unit_report *r)
{
    int rc = 0;
    for (size_t i = 0; i < u->n_notes && !rc; i++)
        rc = sw__unit_add(r, SW_UNIT_LAW_SYNTAX,
                          u->notes[i].warning ? SW_UNIT_WARNING : SW_UNIT_ERROR, u->notes[i].line,
                          "%s", u->notes[i].msg);
    return rc;
}

void sw__unit_sort(struct sw_unit_report *r)
{
    for (size_t i = 1; i < r->n; i++) {
        struct sw_unit_finding f = r->v[i];
        size_t j = i;
        while (j > 0 && r->v[j - 1].line > f.line) {
            r->v[j] = r->v[j - 1];
            j--;
        }
        r->v[j] = f;
    }
}

int sw_unit_lint(const struct sw_unit *u, const struct sw_unit_lint_opts *o,
                 struct sw_unit_report *r, struct sw_err *e)
{
    int rc = law_syntax(u, r);
    if (!rc)
        rc = law_stop_timeout(u, r);
    if (!rc)
        rc = law_start_limit(u, r);
    if (!rc)
        rc = law_restart(u, r);
    if (!rc)
        rc = law_paths(u, o, r);
    if (!rc)
        rc = law_image(u, r);
    if (!rc)
        rc = law_secret((struct sw_unit *)u, r);
    if (!rc)
        rc = law_memory(u, r);
    if (!rc && o && o->verify)
        rc = sw__unit_verify(u, o, r, e);
    if (rc == SW_ENOMEM)
        sw_err_set(e, rc, "%s: out of memory", u->where);
    if (!rc)
        sw__unit_sort(r);
    return rc;
}
