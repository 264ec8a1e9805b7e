/*
 * unit/render_write: a render as JSON (secrets redacted) and as files in a directory (the
 * service and its env file written whole or not at all).
 */
#include "render_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *strv_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        if (json_array_append_new(a, json_string(v[i]))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *file_json(const struct sw_unit_file *f)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (sw_json_set_str(o, "name", f->name) || sw_json_set_int(o, "mode", f->mode) ||
        sw_json_set_str(o, "text", f->shown)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int restart_json(json_t *o, const char *key, const void *obj)
{
    const struct sw_unit_timing *tm = obj;
    return sw_json_set_str(o, key, tm->restart_always ? "always" : "on-failure");
}

/* The timing the unit renders, as its JSON says it. */
#define T(kind, m, fl) SW_JSON_M(kind, struct sw_unit_timing, m, fl)
/* clang-format off */
static const struct sw_json_field timing_fields[] = {
    T(SW_JK_U64, restart_sec_ms, 0), T(SW_JK_U64, stop_timeout_ms, 0),
    T(SW_JK_U64, stop_grace_ms, 0), T(SW_JK_U64, drain_ms, 0), T(SW_JK_U64, start_timeout_ms, 0),
    T(SW_JK_U64, start_limit_interval_ms, 0), T(SW_JK_U64, start_limit_burst, 0),
    SW_JSON_ROW_IF("oom_score_adjust", SW_JK_I64, struct sw_unit_timing, oom_score_adjust,
                   SW_JF_OMIT, oom_set),
    SW_JSON_ROW_FN("restart", restart_json), T(SW_JK_U64, memory_max, SW_JF_OMIT),
};
/* clang-format on */

json_t *sw_unit_render_json(const struct sw_unit_render *r)
{
    json_t *o = json_object();
    json_t *files = json_array();
    json_t *t = json_object();
    int rc = (!o || !files || !t) ? SW_ENOMEM : 0;
    rc = rc ? rc : json_array_append_new(files, file_json(&r->service)) ? SW_ENOMEM : 0;
    rc = rc ? rc : json_array_append_new(files, file_json(&r->env)) ? SW_ENOMEM : 0;
    rc = rc ? rc : sw_json_set_str(o, "unit", r->name);
    rc = rc ? rc : sw_json_set_str(o, "endpoint", r->ep ? r->ep->name : NULL);
    rc = rc ? rc : sw_json_set_str(o, "runtime", sw_fleet_runtime_name(r->runtime));
    rc = rc ? rc : sw_json_set_str(o, "scope", r->scope == SW_FLEET_SCOPE_USER ? "user" : "system");
    rc = rc ? rc : sw_json_set_str(o, "env_path", r->env_path);
    if (!rc) {
        rc = sw_json_set_new(o, "files", files);
        files = NULL;
    }
    rc = rc ? rc : sw_json_set_new(o, "engine_argv", strv_json(r->engine_argv, r->engine_argc));
    if (!rc && r->container_argv) {
        json_t *c = json_object();
        rc = c ? 0 : SW_ENOMEM;
        rc = rc ? rc : sw_json_set_str(c, "image", r->image);
        rc = rc ? rc : sw_json_set_bool(c, "pinned", r->image_pinned);
        rc = rc ? rc : sw_json_set_str(c, "name", r->name);
        rc = rc ? rc : sw_json_set_new(c, "argv", strv_json(r->container_argv, r->container_argc));
        rc = rc ? rc : sw_json_set_new(c, "stop", strv_json(r->stop_argv, r->stop_argc));
        if (rc)
            json_decref(c);
        else
            rc = sw_json_set_new(o, "container", c);
    } else if (!rc) {
        rc = sw_json_set_new(o, "container", json_null());
    }
    rc = rc ? rc : sw_json_put_fields(t, timing_fields, SW_ARRAY_LEN(timing_fields), &r->timing);
    if (!rc) {
        rc = sw_json_set_new(o, "timing", t);
        t = NULL;
    }
    rc = rc ? rc : sw_json_set_new(o, "warnings", strv_json(r->warnings, r->n_warnings));
    json_decref(files);
    json_decref(t);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Write data into a new temporary file of dir (mode, fsynced); its path into tmp. */
static int write_temp(const char *dir, const struct sw_unit_file *f, char *tmp, size_t tmpn,
                      struct sw_err *e)
{
    if ((size_t)snprintf(tmp, tmpn, "%s/.%s.XXXXXX", dir, f->name) >= tmpn)
        return sw_err_set(e, SW_ERANGE, "%s/%s: path too long", dir, f->name);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        tmp[0] = 0;
        return sw_err_set(e, SW_EIO, "%s: cannot create a file there: %s", dir, strerror(err));
    }
    int rc = 0;
    if (fchmod(fd, (mode_t)f->mode))
        rc = sw_err_set(e, SW_EIO, "%s: chmod: %s", tmp, strerror(errno));
    size_t off = 0;
    while (!rc && off < f->len) {
        ssize_t w = write(fd, f->text + off, f->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = sw_err_set(e, SW_EIO, "%s: write: %s", tmp, strerror(w < 0 ? errno : EIO));
        else
            off += (size_t)w;
    }
    if (!rc && fsync(fd))
        rc = sw_err_set(e, SW_EIO, "%s: fsync: %s", tmp, strerror(errno));
    if (close(fd) && !rc)
        rc = sw_err_set(e, SW_EIO, "%s: close: %s", tmp, strerror(errno));
    return rc;
}

int sw_unit_render_write(const struct sw_unit_render *r, const char *dir, struct sw_err *e)
{
    const struct sw_unit_file *files[2] = {&r->env, &r->service};
    char tmp[2][4096] = {"", ""};
    char dst[4096];
    struct stat st;
    int rc = 0;
    if (!r->service.text || !r->env.text)
        return sw_err_set(e, SW_EINVAL, "nothing rendered to write");
    /* the directory must exist; the error says which path and why (it said only "No such file
     * or directory") */
    rc = sw_out_dir(dir, e);
    if (rc)
        return rc;
    /* a destination that cannot be replaced fails now, before anything is renamed */
    for (size_t i = 0; i < 2; i++) {
        if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", dir, files[i]->name) >= sizeof(dst))
            return sw_err_set(e, SW_ERANGE, "%s/%s: path too long", dir, files[i]->name);
        if (!lstat(dst, &st) && !S_ISREG(st.st_mode))
            return sw_err_set(e, SW_EEXIST, "%s exists and is not a regular file", dst);
    }
    for (size_t i = 0; i < 2 && !rc; i++)
        rc = write_temp(dir, files[i], tmp[i], sizeof(tmp[i]), e);
    /* both written: only now does anything get its final name */
    for (size_t i = 0; i < 2 && !rc; i++) {
        if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", dir, files[i]->name) >= sizeof(dst)) {
            rc = sw_err_set(e, SW_ERANGE, "%s/%s: path too long", dir, files[i]->name);
            break;
        }
        if (rename(tmp[i], dst)) {
            rc = sw_err_set(e, SW_EIO, "%s: rename: %s", dst, strerror(errno));
            break;
        }
        tmp[i][0] = 0;
    }
    for (size_t i = 0; i < 2; i++)
        if (tmp[i][0])
            unlink(tmp[i]);
    if (!rc) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            if (fsync(dfd))
                rc = sw_err_set(e, SW_EIO, "%s: fsync: %s", dir, strerror(errno));
            close(dfd);
        }
    }
    return rc;
}
