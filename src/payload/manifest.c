/*
 * payload/manifest: the list of files a payload is made of (path, size, sha256, lfs), pinned to
 * a repository revision; its JSON file format and where it is kept beside a fleet.
 *
 * The download code fills the same struct from the Hub's headers; the verifier reads it. What it
 * deliberately does not do: look at the files themselves (verify.c does), talk to the network.
 */
#include <slipway/payload.h>

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "payload/payload_internal.h"

void sw_payload_manifest_init(struct sw_payload_manifest *m)
{
    memset(m, 0, sizeof(*m));
}

void sw_payload_manifest_free(struct sw_payload_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_files; i++) {
        sw_free(m->files[i].path);
        sw_free(m->files[i].git_oid);
    }
    sw_free(m->files);
    sw_free(m->repo);
    sw_free(m->revision);
    sw_free(m->commit);
    memset(m, 0, sizeof(*m));
}

bool sw__payload_hex_ok(const char *s, size_t n)
{
    if (!s || strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

bool sw__payload_included(const char *path, const char *const *globs)
{
    if (!globs || !globs[0])
        return true;
    for (size_t i = 0; globs[i]; i++)
        if (fnmatch(globs[i], path, 0) == 0)
            return true;
    return false;
}

static void lower_into(char *dst, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[n] = '\0';
}

bool sw_payload_path_ok(const char *path)
{
    if (!path || !*path || path[0] == '/')
        return false;
    size_t n = strlen(path);
    if (n >= SW_PAYLOAD_MAX_PATH)
        return false;
    const char *seg = path;
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c == '/' || c == '\0') {
            size_t l = (size_t)(path + i - seg);
            if (l == 0 || (l == 1 && seg[0] == '.') || (l == 2 && seg[0] == '.' && seg[1] == '.'))
                return false;
            seg = path + i + 1;
            continue;
        }
        if (c < 0x20 || c == 0x7f || c == '\\')
            return false;
    }
    return true;
}

static int dup_opt(char **dst, const char *src)
{
    char *c = NULL;
    if (src) {
        c = sw_strdup(src);
        if (!c)
            return SW_ENOMEM;
    }
    sw_free(*dst);
    *dst = c;
    return 0;
}

int sw_payload_manifest_set(struct sw_payload_manifest *m, const char *repo, const char *revision,
                            const char *commit, struct sw_err *e)
{
    char low[41];
    if (commit && !sw__payload_hex_ok(commit, 40))
        return sw_err_set(e, SW_EINVAL, "commit \"%.80s\" is not 40 hex digits", commit);
    if (commit)
        lower_into(low, commit, 40);
    if (dup_opt(&m->repo, repo) || dup_opt(&m->revision, revision) ||
        dup_opt(&m->commit, commit ? low : NULL))
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    return 0;
}

struct sw_payload_file *sw_payload_manifest_find(const struct sw_payload_manifest *m,
                                                 const char *path)
{
    for (size_t i = 0; i < m->n_files; i++)
        if (!strcmp(m->files[i].path, path))
            return &m->files[i];
    return NULL;
}

int sw_payload_manifest_add(struct sw_payload_manifest *m, const char *path, int64_t size,
                            const char *sha256, bool lfs, const char *git_oid,
                            struct sw_payload_file **out, struct sw_err *e)
{
    if (out)
        *out = NULL;
    if (!sw_payload_path_ok(path))
        return sw_err_set(e, SW_EINVAL,
                          "file path \"%.200s\" is not a safe relative path (absolute, \"..\", "
                          "empty component or control bytes)",
                          path ? path : "(null)");
    if (sha256 && *sha256 && !sw__payload_hex_ok(sha256, SW_PAYLOAD_SHA256_HEX))
        return sw_err_set(e, SW_EINVAL, "%s: sha256 \"%.80s\" is not 64 hex digits", path, sha256);
    if (git_oid && *git_oid && !sw__payload_hex_ok(git_oid, 40))
        return sw_err_set(e, SW_EINVAL, "%s: git oid \"%.80s\" is not 40 hex digits", path,
                          git_oid);
    if (sw_payload_manifest_find(m, path))
        return sw_err_set(e, SW_EEXIST, "%s: listed twice", path);
    if (m->n_files >= SW_PAYLOAD_MAX_FILES)
        return sw_err_set(e, SW_ERANGE, "more than %d files in one payload", SW_PAYLOAD_MAX_FILES);
    if (m->n_files == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        struct sw_payload_file *nf = sw_realloc(m->files, ncap * sizeof(*nf));
        if (!nf)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        m->files = nf;
        m->cap = ncap;
    }
    struct sw_payload_file *f = &m->files[m->n_files];
    memset(f, 0, sizeof(*f));
    f->path = sw_strdup(path);
    if (git_oid && *git_oid) {
        f->git_oid = sw_malloc(41);
        if (f->git_oid)
            lower_into(f->git_oid, git_oid, 40);
    }
    if (!f->path || (git_oid && *git_oid && !f->git_oid)) {
        sw_free(f->path);
        sw_free(f->git_oid);
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    }
    if (size >= 0) {
        f->size = (uint64_t)size;
        f->size_known = true;
    }
    if (sha256 && *sha256)
        lower_into(f->sha256, sha256, SW_PAYLOAD_SHA256_HEX);
    f->lfs = lfs;
    m->n_files++;
    if (out)
        *out = f;
    return 0;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(((const struct sw_payload_file *)a)->path,
                  ((const struct sw_payload_file *)b)->path);
}

void sw_payload_manifest_sort(struct sw_payload_manifest *m)
{
    if (m->n_files > 1)
        qsort(m->files, m->n_files, sizeof(*m->files), cmp_path);
}

uint64_t sw_payload_manifest_bytes(const struct sw_payload_manifest *m, size_t *unknown)
{
    uint64_t t = 0;
    size_t u = 0;
    for (size_t i = 0; i < m->n_files; i++) {
        if (m->files[i].size_known)
            t += m->files[i].size;
        else
            u++;
    }
    if (unknown)
        *unknown = u;
    return t;
}

#define FORMAT_NAME "slipway-payload-manifest"

static int opt_str(json_t *o, const char *key, const char *where, const char *ctx, const char **out,
                   struct sw_err *e)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%s%s must be a string", ctx, key);
    *out = json_string_value(v);
    return 0;
}

static int file_from_json(json_t *fj, size_t i, const char *where, struct sw_payload_manifest *m,
                          struct sw_err *e)
{
    char ctx[48];
    snprintf(ctx, sizeof(ctx), "files[%zu].", i);
    if (!json_is_object(fj))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "files[%zu] must be an object", i);
    const char *k;
    json_t *v;
    json_object_foreach(fj, k, v)
    {
        if (strcmp(k, "path") && strcmp(k, "size") && strcmp(k, "sha256") && strcmp(k, "lfs") &&
            strcmp(k, "git_oid"))
            return sw_err_at(e, SW_EPARSE, where, 0, 0,
                             "%sunknown key \"%.80s\" (path, size, sha256, lfs, git_oid)", ctx, k);
    }
    const char *path, *sha, *oid;
    int rc = opt_str(fj, "path", where, ctx, &path, e);
    if (!rc)
        rc = opt_str(fj, "sha256", where, ctx, &sha, e);
    if (!rc)
        rc = opt_str(fj, "git_oid", where, ctx, &oid, e);
    if (rc)
        return rc;
    if (!path)
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%spath is required", ctx);
    int64_t size = -1;
    json_t *sz = json_object_get(fj, "size");
    if (sz && !json_is_null(sz)) {
        if (!json_is_integer(sz) || json_integer_value(sz) < 0)
            return sw_err_at(e, SW_EPARSE, where, 0, 0,
                             "%ssize must be a non-negative integer (bytes)", ctx);
        size = json_integer_value(sz);
    }
    json_t *lfs = json_object_get(fj, "lfs");
    if (lfs && !json_is_boolean(lfs))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "%slfs must be true or false", ctx);
    struct sw_err fe;
    sw_err_clear(&fe);
    rc = sw_payload_manifest_add(m, path, size, sha, lfs && json_is_true(lfs), oid, NULL, &fe);
    if (rc)
        return sw_err_at(e, rc == SW_ENOMEM ? SW_ENOMEM : SW_EPARSE, where, 0, 0, "%s%s", ctx,
                         fe.msg);
    return 0;
}

int sw_payload_manifest_from_json(const json_t *cj, const char *where,
                                  struct sw_payload_manifest *m, struct sw_err *e)
{
    json_t *j = (json_t *)cj; /* jansson's getters are not const-qualified */
    int rc = 0;
    if (!where)
        where = "<manifest>";
    sw_payload_manifest_init(m);
    if (!json_is_object(j))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "a manifest must be a JSON object");
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        if (strcmp(k, "format") && strcmp(k, "version") && strcmp(k, "repo") &&
            strcmp(k, "revision") && strcmp(k, "commit") && strcmp(k, "files"))
            return sw_err_at(e, SW_EPARSE, where, 0, 0,
                             "unknown key \"%.80s\" (format, version, repo, revision, commit, "
                             "files)",
                             k);
    }
    const char *fmt, *repo, *rev, *commit;
    if (opt_str(j, "format", where, "", &fmt, e) || opt_str(j, "repo", where, "", &repo, e) ||
        opt_str(j, "revision", where, "", &rev, e) || opt_str(j, "commit", where, "", &commit, e))
        return e ? e->code : SW_EPARSE;
    if (!fmt || strcmp(fmt, FORMAT_NAME))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "format must be \"%s\"", FORMAT_NAME);
    json_t *ver = json_object_get(j, "version");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return sw_err_at(e, json_is_integer(ver) ? SW_EUNSUPPORTED : SW_EPARSE, where, 0, 0,
                         "version must be 1");
    if (commit && !sw__payload_hex_ok(commit, 40))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "commit \"%.80s\" is not 40 hex digits",
                         commit);
    json_t *files = json_object_get(j, "files");
    if (!json_is_array(files))
        return sw_err_at(e, SW_EPARSE, where, 0, 0, "files must be an array");
    if (json_array_size(files) > SW_PAYLOAD_MAX_FILES)
        return sw_err_at(e, SW_ERANGE, where, 0, 0, "more than %d files", SW_PAYLOAD_MAX_FILES);
    rc = sw_payload_manifest_set(m, repo, rev, commit, e);
    for (size_t i = 0; !rc && i < json_array_size(files); i++)
        rc = file_from_json(json_array_get(files, i), i, where, m, e);
    if (rc)
        sw_payload_manifest_free(m);
    return rc;
}

json_t *sw_payload_manifest_to_json(const struct sw_payload_manifest *m)
{
    const struct sw_payload_file **order = NULL;
    json_t *j = json_object(), *files = json_array();
    if (!j || !files)
        goto fail;
    if (sw_json_set_str(j, "format", FORMAT_NAME) || sw_json_set_int(j, "version", 1))
        goto fail;
    if ((m->repo && sw_json_set_str(j, "repo", m->repo)) ||
        (m->revision && sw_json_set_str(j, "revision", m->revision)) ||
        (m->commit && sw_json_set_str(j, "commit", m->commit)))
        goto fail;
    order = sw_calloc(m->n_files ? m->n_files : 1, sizeof(*order));
    if (!order)
        goto fail;
    for (size_t i = 0; i < m->n_files; i++)
        order[i] = &m->files[i];
    for (size_t i = 1; i < m->n_files; i++) /* insertion sort on pointers: stable, small */
        for (size_t k = i; k > 0 && strcmp(order[k - 1]->path, order[k]->path) > 0; k--) {
            const struct sw_payload_file *t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (size_t i = 0; i < m->n_files; i++) {
        const struct sw_payload_file *f = order[i];
        json_t *fj = json_object();
        if (!fj || json_array_append_new(files, fj))
            goto fail;
        if (sw_json_set_str(fj, "path", f->path) ||
            (f->size_known && sw_json_set_int(fj, "size", (int64_t)f->size)) ||
            (f->sha256[0] && sw_json_set_str(fj, "sha256", f->sha256)) ||
            (f->lfs && sw_json_set_bool(fj, "lfs", true)) ||
            (f->git_oid && sw_json_set_str(fj, "git_oid", f->git_oid)))
            goto fail;
    }
    sw_free(order);
    if (json_object_set_new(j, "files", files)) {
        json_decref(j);
        return NULL;
    }
    return j;
fail:
    sw_free(order);
    json_decref(files);
    json_decref(j);
    return NULL;
}

int sw_payload_manifest_load(const char *path, struct sw_payload_manifest *out, struct sw_err *e)
{
    sw_payload_manifest_init(out);
    json_t *j = sw_json_load_file(path, SW_PAYLOAD_MANIFEST_MAX, e);
    if (!j)
        return e && e->code ? e->code : SW_EPARSE;
    int rc = sw_payload_manifest_from_json(j, path, out, e);
    json_decref(j);
    return rc;
}

int sw_payload_manifest_save(const char *path, const struct sw_payload_manifest *m,
                             struct sw_err *e)
{
    json_t *j = sw_payload_manifest_to_json(m);
    if (!j)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    char *text = sw_json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    size_t len = strlen(text);
    char *full = sw_malloc(len + 2);
    int rc;
    if (!full) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
    } else {
        memcpy(full, text, len);
        full[len] = '\n';
        full[len + 1] = '\0';
        rc = sw_write_file_atomic(path, full, len + 1, 0644, e);
    }
    sw_free(full);
    sw_free(text);
    return rc;
}

int sw_payload_manifest_default_path(const char *fleet_path, const char *endpoint, char *out,
                                     size_t n, struct sw_err *e)
{
    if (!fleet_path || !*fleet_path)
        return sw_err_set(e, SW_EINVAL, "no fleet file to keep the manifest beside");
    if (!endpoint || !*endpoint || strchr(endpoint, '/') || !strcmp(endpoint, ".") ||
        !strcmp(endpoint, "..") || !sw_payload_path_ok(endpoint))
        return sw_err_set(e, SW_EINVAL, "endpoint name \"%.80s\" cannot name a manifest file",
                          endpoint ? endpoint : "");
    int w = snprintf(out, n, "%.*s.manifests/%s.json", (int)sw_path_yaml_stem(fleet_path),
                     fleet_path, endpoint);
    if (w < 0 || (size_t)w >= n)
        return sw_err_set(e, SW_ERANGE, "manifest path too long");
    return 0;
}
