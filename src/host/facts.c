/*
 * host: facts about a host gathered by one POSIX shell script in one round trip: memory
 * (/proc/meminfo), GPU device nodes and driver tools, systemd / podman / docker versions, the
 * kernel, whether the system and the user systemd manager answer (`systemctl show`: the version
 * alone comes from the binary, which answers on a host whose PID 1 is not systemd), and per path
 * asked: exists, directory, executable, and the free space of the filesystem holding it (of its
 * nearest existing parent when it is missing). The script prints
 * `@key value` lines; paths are passed as positional parameters and answered by index, so a path
 * never lands in the script's text. What it does not do: judge the facts (hosts check does).
 */
#include "host_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char sw_host_facts_script[] =
    "echo \"@kernel $(uname -r 2>/dev/null)\"\n"
    "if [ -r /proc/meminfo ]; then\n"
    "  sed -n -e 's/^MemTotal: *\\([0-9]*\\) kB$/@mem_total \\1/p' "
    "-e 's/^MemAvailable: *\\([0-9]*\\) kB$/@mem_avail \\1/p' /proc/meminfo\n"
    "fi\n"
    "echo \"@systemd $(systemctl --version 2>/dev/null | head -n 1)\"\n"
    "if command -v systemctl >/dev/null 2>&1; then\n"
    "  for s in system user; do\n"
    "    m=$(systemctl --$s show --property=Version --value 2>&1 </dev/null); r=$?\n"
    "    m=$(printf '%s' \"$m\" | tr '\\r\\n\\t' '   ' | cut -c1-250)\n"
    "    printf '@manager %s %s %s\\n' \"$s\" \"$r\" \"$m\"\n"
    "  done\n"
    "fi\n"
    "echo \"@podman $(podman --version 2>/dev/null | head -n 1)\"\n"
    "echo \"@docker $(docker --version 2>/dev/null | head -n 1)\"\n"
    "[ -e /dev/kfd ] && echo '@kfd 1'\n"
    "n=0; for d in /dev/dri/renderD*; do [ -e \"$d\" ] && n=$((n+1)); done; echo \"@dri $n\"\n"
    "n=0; for d in /dev/nvidia[0-9]*; do [ -e \"$d\" ] && n=$((n+1)); done; echo \"@nvidia $n\"\n"
    "for t in nvidia-smi rocm-smi amd-smi; do\n"
    "  command -v \"$t\" >/dev/null 2>&1 && echo \"@tool $t\"\n"
    "done\n"
    "i=0\n"
    "for p in \"$@\"; do\n"
    "  i=$((i+1))\n"
    "  case $p in \"~/\"*) p=\"$HOME/${p#\"~/\"}\" ;; \"~\") p=$HOME ;; esac\n"
    "  ex=0; dir=0; x=0; r=\n"
    "  case $p in\n"
    "  */*) [ -e \"$p\" ] && ex=1 ;;\n"
    "  *) r=$(command -v \"$p\" 2>/dev/null) && case $r in /*) p=$r; ex=1 ;; *) r= ;; esac ;;\n"
    "  esac\n"
    "  [ $ex = 1 ] && [ -d \"$p\" ] && dir=1\n"
    "  [ $ex = 1 ] && [ -f \"$p\" ] && [ -x \"$p\" ] && x=1\n"
    "  q=$p; case $q in /*) ;; *) q=$PWD/$q ;; esac\n"
    "  while [ ! -e \"$q\" ]; do q=$(dirname -- \"$q\"); done\n"
    "  d=$(df -B1 --output=size,avail,target -- \"$q\" 2>/dev/null | tail -n 1)\n"
    "  echo \"@path $i $ex $dir $x $d\"\n"
    "  [ -n \"$r\" ] && printf '@resolved %s %s\\n' \"$i\" \"$r\"\n"
    "done\n"
    "echo '@end'\n";

static const char *word_after(const char *s, size_t skip_words, char *out, size_t n)
{
    while (*s == ' ')
        s++;
    for (size_t i = 0; i < skip_words && *s; i++) {
        s += strcspn(s, " ");
        while (*s == ' ')
            s++;
    }
    size_t l = strcspn(s, " ,");
    snprintf(out, n, "%.*s", (int)SW_MIN(l, n - 1), s);
    return out;
}

static int u64_of(const char *s, uint64_t *v)
{
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (end == s)
        return SW_EPARSE;
    *v = x;
    return 0;
}

void sw_host_facts_free(struct sw_host_facts *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_paths; i++) {
        sw_free(f->paths[i].path);
        sw_free(f->paths[i].resolved);
        sw_free(f->paths[i].fs_target);
    }
    sw_free(f->paths);
    memset(f, 0, sizeof(*f));
}

/* "SCOPE STATUS TEXT": `systemctl --SCOPE show -p Version`'s exit status and what it printed. */
static int parse_manager(struct sw_host_facts *f, const char *v, int line, struct sw_err *e)
{
    char scope[8];
    int status, used = 0;
    if (sscanf(v, "%7s %d%n", scope, &status, &used) != 2 || status < 0 || status > 255)
        return sw_err_at(e, SW_EPARSE, "host facts", line, 0, "bad @manager line '%.80s'", v);
    struct sw_host_manager *m = !strcmp(scope, "system") ? &f->systemd_system
                                : !strcmp(scope, "user") ? &f->systemd_user
                                                         : NULL;
    if (!m)
        return sw_err_at(e, SW_EPARSE, "host facts", line, 0, "@manager of scope '%s'", scope);
    m->asked = true;
    m->reached = status == 0;
    m->said[0] = '\0';
    if (m->reached)
        return 0;
    const char *t = v + used;
    while (*t == ' ')
        t++;
    size_t n = 0;
    for (; *t && n + 1 < sizeof(m->said); t++)
        m->said[n++] = *t >= 0x20 && *t < 0x7f ? *t : '?';
    while (n && m->said[n - 1] == ' ')
        n--;
    m->said[n] = '\0';
    if (!n)
        snprintf(m->said, sizeof(m->said), "systemctl exited %d and said nothing", status);
    return 0;
}

static int parse_path(struct sw_host_facts *f, const char *v, int line, struct sw_err *e)
{
    /* "I EX DIR X SIZE AVAIL TARGET" (SIZE AVAIL TARGET absent when df failed) */
    unsigned long idx;
    int ex, dir, x, used = 0;
    if (sscanf(v, "%lu %d %d %d%n", &idx, &ex, &dir, &x, &used) != 4 || idx < 1 || idx > f->n_paths)
        return sw_err_at(e, SW_EPARSE, "host facts", line, 0, "bad @path line '%.80s'", v);
    struct sw_host_path *p = &f->paths[idx - 1];
    p->exists = ex == 1;
    p->is_dir = dir == 1;
    p->is_exec = x == 1;
    const char *rest = v + used;
    unsigned long long size, avail;
    int u2 = 0;
    if (sscanf(rest, "%llu %llu %n", &size, &avail, &u2) == 2) {
        p->fs_size = size;
        p->fs_avail = avail;
        sw_free(p->fs_target);
        p->fs_target = sw_strdup(rest + u2);
        if (!p->fs_target)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    return 0;
}

int sw_host_facts_parse(const char *text, size_t len, const char *const *paths, size_t n_paths,
                        struct sw_host_facts *f, struct sw_err *e)
{
    int rc = 0, line = 0;
    bool ended = false;
    bool *seen = NULL;
    memset(f, 0, sizeof(*f));
    if (n_paths) {
        f->paths = sw_calloc(n_paths, sizeof(*f->paths));
        seen = sw_calloc(n_paths, sizeof(*seen));
        if (!f->paths || !seen) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        f->n_paths = n_paths;
        for (size_t i = 0; i < n_paths; i++) {
            f->paths[i].path = sw_strdup(paths[i]);
            if (!f->paths[i].path) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
                goto out;
            }
        }
    }
    struct sw_lines it;
    struct sw_line ln;
    char buf[8192];
    sw_lines_init(&it, text, len, sizeof(buf) - 1, 0);
    while (!rc && sw_lines_next(&it, &ln)) {
        line = it.no;
        if (!ln.len)
            continue;
        memcpy(buf, ln.s, ln.len);
        buf[ln.len] = '\0';
        if (buf[0] != '@')
            continue; /* a login banner or a shell's noise */
        char *key = buf + 1;
        char *v = key + strcspn(key, " ");
        if (*v)
            *v++ = '\0';
        uint64_t n = 0;
        char w[64];
        if (!strcmp(key, "kernel")) {
            snprintf(f->kernel, sizeof(f->kernel), "%s", v);
        } else if (!strcmp(key, "mem_total") || !strcmp(key, "mem_avail")) {
            if (u64_of(v, &n) || !sw_mul_ok(n, 1024, &n)) {
                rc = sw_err_at(e, SW_EPARSE, "host facts", line, 0, "bad %s '%.40s'", key, v);
                break;
            }
            *(key[4] == 't' ? &f->mem_total : &f->mem_available) = n;
        } else if (!strcmp(key, "systemd")) {
            /* "systemd 252 (252.22-1~deb12u1)" */
            if (*v && (strncmp(v, "systemd ", 8) || u64_of(v + 8, &n) || n > 100000)) {
                rc = sw_err_at(e, SW_EPARSE, "host facts", line, 0,
                               "systemctl --version said '%.60s'", v);
                break;
            }
            f->systemd_version = (int)n;
        } else if (!strcmp(key, "manager")) {
            rc = parse_manager(f, v, line, e);
        } else if (!strcmp(key, "podman")) {
            /* "podman version 4.3.1" */
            if (*v)
                snprintf(f->podman_version, sizeof(f->podman_version), "%s",
                         word_after(v, 2, w, sizeof(w)));
        } else if (!strcmp(key, "docker")) {
            /* "Docker version 20.10.24+dfsg1, build 297e128" */
            if (*v)
                snprintf(f->docker_version, sizeof(f->docker_version), "%s",
                         word_after(v, 2, w, sizeof(w)));
        } else if (!strcmp(key, "kfd")) {
            f->dev_kfd = true;
        } else if (!strcmp(key, "dri") || !strcmp(key, "nvidia")) {
            if (u64_of(v, &n) || n > 4096) {
                rc = sw_err_at(e, SW_EPARSE, "host facts", line, 0, "bad %s '%.40s'", key, v);
                break;
            }
            *(key[0] == 'd' ? &f->n_dri : &f->n_nvidia) = (size_t)n;
        } else if (!strcmp(key, "tool")) {
            f->nvidia_smi |= !strcmp(v, "nvidia-smi");
            f->rocm_smi |= !strcmp(v, "rocm-smi");
            f->amd_smi |= !strcmp(v, "amd-smi");
        } else if (!strcmp(key, "path")) {
            rc = parse_path(f, v, line, e);
            if (!rc)
                seen[strtoul(v, NULL, 10) - 1] = true;
        } else if (!strcmp(key, "resolved")) {
            char *end;
            unsigned long k = strtoul(v, &end, 10);
            if (end == v || *end != ' ' || k < 1 || k > n_paths) {
                rc = sw_err_at(e, SW_EPARSE, "host facts", line, 0, "bad @resolved line");
                break;
            }
            sw_free(f->paths[k - 1].resolved);
            f->paths[k - 1].resolved = sw_strdup(end + 1);
            if (!f->paths[k - 1].resolved)
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        } else if (!strcmp(key, "end")) {
            ended = true;
        }
    }
    if (!rc && it.over)
        rc = sw_err_at(e, SW_ERANGE, "host facts", it.no, 0, "line of %zu bytes", ln.len);
    if (!rc && !ended)
        rc = sw_err_set(e, SW_ETRUNC, "host facts: the script's output ended before '@end'");
    for (size_t k = 0; !rc && k < n_paths; k++)
        if (!seen[k])
            rc = sw_err_set(e, SW_EPARSE, "host facts: no answer for path %zu (%s)", k + 1,
                            paths[k]);
out:
    sw_free(seen);
    if (rc)
        sw_host_facts_free(f);
    return rc;
}

int sw_host_facts(struct sw_host *h, const char *const *paths, size_t n_paths, int64_t deadline_ms,
                  struct sw_host_facts *f, struct sw_err *e)
{
    struct sw_host_result r;
    memset(f, 0, sizeof(*f));
    if (n_paths > 200)
        return sw_err_set(e, SW_ERANGE, "host %s: facts of %zu paths (at most 200)", h->name,
                          n_paths);
    const char *argv[210];
    size_t n = 0;
    argv[n++] = "sh";
    argv[n++] = "-c";
    argv[n++] = sw_host_facts_script;
    argv[n++] = "sh";
    for (size_t i = 0; i < n_paths; i++)
        argv[n++] = paths[i];
    argv[n] = NULL;
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .max_out = 1u << 20};
    int rc = sw_host_run(h, argv, &o, &r, e);
    if (!rc) {
        rc = sw_host_facts_parse(r.out, r.out_len, paths, n_paths, f, e);
        if (rc)
            sw_err_prefix(e, "host %s", h->name);
    }
    sw_host_result_free(&r);
    return rc;
}
