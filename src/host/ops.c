/*
 * host: operations built on sw_host_run: an atomic copy with its mode, systemctl verbs, a unit's
 * state (`systemctl show`), and whether an image is present. Each one is a single command on the
 * host; the shell scripts take their paths as positional parameters ("$1"), never spliced into
 * the script's text.
 */
#include "host_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* $1 the target's directory, $2 the target, $3 the mode (octal). The temp file is named in the
 * target's directory so the rename stays on one filesystem; on any failure, or a signal, it is
 * removed. `sync FILE` fsyncs that file (coreutils >= 8.24). */
static const char copy_script[] = "t=\n"
                                  "trap 'rm -f -- \"$t\"; exit 1' HUP INT TERM\n"
                                  "t=$(mktemp -- \"$1/.slipway-copy.XXXXXXXX\") || exit 1\n"
                                  "if cat >\"$t\" && sync -- \"$t\" && chmod -- \"$3\" \"$t\" && "
                                  "mv -f -T -- \"$t\" \"$2\"; then\n"
                                  "  sync -- \"$1\" 2>/dev/null\n"
                                  "  exit 0\n"
                                  "fi\n"
                                  "rm -f -- \"$t\"\n"
                                  "exit 1\n";

int sw_host_copy(struct sw_host *h, const char *src, const char *dst, unsigned mode,
                 int64_t deadline_ms, struct sw_host_result *r, struct sw_err *e)
{
    struct stat st;
    char dir[4096], m[16];
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    if (!dst || !*dst || dst[strlen(dst) - 1] == '/')
        return sw_err_set(e, SW_EINVAL, "host %s: copy: target '%s' is not a file path", h->name,
                          dst ? dst : "");
    if (mode > 07777)
        return sw_err_set(e, SW_EINVAL, "host %s: copy: mode %o out of range", h->name, mode);
    if (stat(src, &st) < 0 || !S_ISREG(st.st_mode))
        return sw_err_set(e, SW_ENOENT, "host %s: copy: %s is not a readable regular file%s%s",
                          h->name, src, errno ? ": " : "", errno ? strerror(errno) : "");
    const char *slash = strrchr(dst, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dst)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)SW_MIN((size_t)(slash - dst), sizeof(dir) - 1),
                 dst);
    snprintf(m, sizeof(m), "%04o", mode);
    const char *argv[] = {"sh", "-c", copy_script, "sh", dir, dst, m, NULL};
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .stdin_path = src, .max_out = 65536};
    int rc = sw_host_run(h, argv, &o, r, e);
    if (rc)
        sw_err_prefix(e, "copy %s to %s", src, dst);
    return rc;
}

int sw_host_systemctl(struct sw_host *h, bool user, const char *verb, const char *unit,
                      int64_t deadline_ms, struct sw_host_result *r, struct sw_err *e)
{
    static const char *const verbs[] = {"start",  "stop",    "restart", "daemon-reload",
                                        "enable", "disable", "reload",  "reset-failed"};
    bool ok = false;
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    for (size_t i = 0; verb && i < SW_ARRAY_LEN(verbs); i++)
        ok |= !strcmp(verb, verbs[i]);
    if (!ok)
        return sw_err_set(e, SW_EINVAL, "host %s: systemctl verb '%s' is not one slipway runs",
                          h->name, verb ? verb : "(null)");
    bool reload = !strcmp(verb, "daemon-reload");
    if (!reload && (!unit || !*unit || unit[0] == '-'))
        return sw_err_set(e, SW_EINVAL, "host %s: systemctl %s: no unit", h->name, verb);
    const char *argv[8];
    size_t n = 0;
    argv[n++] = "systemctl";
    if (user)
        argv[n++] = "--user";
    argv[n++] = verb;
    if (!reload) {
        argv[n++] = "--";
        argv[n++] = unit;
    }
    argv[n] = NULL;
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .max_out = 1u << 20};
    return sw_host_run(h, argv, &o, r, e);
}

static int copy_field(char *dst, size_t n, const char *v, size_t vl)
{
    snprintf(dst, n, "%.*s", (int)SW_MIN(vl, n - 1), v);
    return 0;
}

static int parse_int(const char *v, size_t vl, int64_t *out, int line, struct sw_err *e)
{
    char buf[32];
    if (vl == 0 || vl >= sizeof(buf))
        return sw_err_at(e, SW_EPARSE, "systemctl show", line, 0, "not a number: '%.*s'",
                         (int)SW_MIN(vl, 40), v);
    memcpy(buf, v, vl);
    buf[vl] = '\0';
    if (sw_parse_i64(buf, out, NULL))
        return sw_err_at(e, SW_EPARSE, "systemctl show", line, 0, "not a number: '%s'", buf);
    return 0;
}

int sw_host_unit_parse(const char *text, size_t len, struct sw_host_unit *u, struct sw_err *e)
{
    memset(u, 0, sizeof(*u));
    struct sw_lines it;
    struct sw_line ln;
    sw_lines_init(&it, text, len, SIZE_MAX, SW_LINES_CRLF);
    while (sw_lines_next(&it, &ln)) {
        int line = it.no;
        if (!ln.len)
            continue;
        const char *p = ln.s, *eq = memchr(p, '=', ln.len);
        if (!eq)
            return sw_err_at(e, SW_EPARSE, "systemctl show", line, 0, "not KEY=VALUE: '%.*s'",
                             (int)SW_MIN(ln.len, 80), p);
        size_t kl = (size_t)(eq - p);
        const char *v = eq + 1;
        size_t vl = ln.len - kl - 1;
        int64_t n = 0;
        int rc = 0;
#define KEY(k) (kl == sizeof(k) - 1 && !memcmp(p, k, kl))
        if (KEY("ActiveState"))
            copy_field(u->active_state, sizeof(u->active_state), v, vl);
        else if (KEY("SubState"))
            copy_field(u->sub_state, sizeof(u->sub_state), v, vl);
        else if (KEY("LoadState"))
            copy_field(u->load_state, sizeof(u->load_state), v, vl);
        else if (KEY("Result"))
            copy_field(u->result, sizeof(u->result), v, vl);
        else if (KEY("ActiveEnterTimestamp"))
            copy_field(u->active_enter, sizeof(u->active_enter), v, vl);
        else if (KEY("NRestarts")) {
            rc = parse_int(v, vl, &n, line, e);
            if (!rc && n < 0)
                rc = sw_err_at(e, SW_EPARSE, "systemctl show", line, 0, "NRestarts < 0");
            u->n_restarts = (uint64_t)n;
        } else if (KEY("MainPID")) {
            rc = parse_int(v, vl, &n, line, e);
            u->main_pid = n;
        } else if (KEY("ExecMainStatus")) {
            rc = parse_int(v, vl, &n, line, e);
            u->exec_main_status = n;
        } else if (KEY("ExecMainCode")) {
            rc = parse_int(v, vl, &n, line, e);
            u->exec_main_code = n;
        }
#undef KEY
        if (rc)
            return rc;
    }
    return 0;
}

int sw_host_unit_show(struct sw_host *h, bool user, const char *unit, int64_t deadline_ms,
                      struct sw_host_unit *u, struct sw_err *e)
{
    struct sw_host_result r;
    memset(u, 0, sizeof(*u));
    if (!unit || !*unit || unit[0] == '-')
        return sw_err_set(e, SW_EINVAL, "host %s: systemctl show: no unit", h->name);
    const char *argv[8];
    size_t n = 0;
    argv[n++] = "systemctl";
    if (user)
        argv[n++] = "--user";
    argv[n++] = "show";
    argv[n++] = "-p";
    argv[n++] = SW_HOST_UNIT_PROPS;
    argv[n++] = "--";
    argv[n++] = unit;
    argv[n] = NULL;
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .max_out = 65536};
    int rc = sw_host_run(h, argv, &o, &r, e);
    if (!rc) {
        rc = sw_host_unit_parse(r.out, r.out_len, u, e);
        if (rc)
            sw_err_prefix(e, "host %s: unit %s", h->name, unit);
    }
    sw_host_result_free(&r);
    return rc;
}

int sw_host_image_present(struct sw_host *h, const char *runtime, const char *image,
                          int64_t deadline_ms, bool *present, struct sw_err *e)
{
    struct sw_host_result r;
    *present = false;
    if (!runtime || (strcmp(runtime, "podman") && strcmp(runtime, "docker")))
        return sw_err_set(e, SW_EINVAL, "host %s: runtime '%s' is not podman or docker", h->name,
                          runtime ? runtime : "(null)");
    if (!image || !*image || image[0] == '-')
        return sw_err_set(e, SW_EINVAL, "host %s: no image", h->name);
    /* exit 0: present; exit 1 with "no such image"/"No such image": absent; 127: no runtime */
    const char *argv[] = {"sh",
                          "-c",
                          "command -v \"$1\" >/dev/null 2>&1 || exit 127; "
                          "exec \"$1\" image inspect --format '{{.Id}}' -- \"$2\"",
                          "sh",
                          runtime,
                          image,
                          NULL};
    struct sw_host_run_opts o = {.deadline_ms = deadline_ms, .max_out = 65536};
    int rc = sw_host_run(h, argv, &o, &r, e);
    if (!rc) {
        *present = true;
    } else if (r.fail == SW_HOST_EXIT && r.exit_code == 127) {
        rc = sw_err_set(e, SW_ENOENT, "host %s: %s is not installed", h->name, runtime);
    } else if (r.fail == SW_HOST_EXIT &&
               (strstr(r.err, "no such image") || strstr(r.err, "No such image") ||
                strstr(r.err, "image not known") || strstr(r.err, "No such object"))) {
        rc = 0;
    }
    sw_host_result_free(&r);
    return rc;
}
