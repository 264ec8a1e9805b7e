/*
 * plan/remote_model: what the laws read of a model that lives on its host, read from there (or
 * from the cache when the host's stat says the file is the one read before):
 *   - a GGUF's header: the first 1 MiB, then, only when the header is longer, up to where the
 *     reader says it goes at least (its counts and lengths) or one more MiB, whichever is
 *     further; so at most the header plus one read ahead, never the tensor data. A header-only
 *     file is accepted when the caller asks for the header only;
 *   - config.json, model.safetensors.index.json: whole (bounded by their ceilings);
 *   - the safetensors shards' headers: the 8-byte length of each (one command for all), then
 *     exactly its header (one command for all).
 * Each file is cached by (host, path, size, mtime) with the sha256 of the bytes kept.
 *
 * What it does not do: run commands or parse the host's replies (remote.c), keep entries
 * (remote_cache.c), or say what the laws make of it (plan.c, inputs.c).
 */
#include "plan/remote_internal.h"

#include <slipway/hf.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Stat one path; SW_ENOENT when it is not there or not a regular file. */
static int stat_one(struct sw__remote *r, const char *path, struct sw__rfile *f, struct sw_err *e)
{
    int rc = sw__remote_stat(r, &path, 1, f, e);
    if (rc)
        return rc;
    if (!f->exists)
        return sw_err_set(e, SW_ENOENT, "%s has no %s (or cannot read it)", r->st->host, path);
    if (!f->regular)
        return sw_err_set(e, SW_ENOENT, "%s: %s is not a regular file", r->st->host, path);
    return 0;
}

/* The cache's bytes for k (counted as a cached file); SW_ENOENT on a miss. */
static int from_cache(struct sw__remote *r, const struct sw__rkey *k, char **data, size_t *len)
{
    char sha[65];
    int rc = sw__rcache_get(&r->cache, k, data, len, sha);
    if (!rc)
        r->st->files_cached++;
    return rc;
}

/* Keep bytes read from the host; a cache that cannot be written is said, and is not an error. */
static void keep(struct sw__remote *r, const struct sw__rkey *k, const void *data, size_t len)
{
    struct sw_err e;
    sw_err_clear(&e);
    r->st->files_read++;
    if (sw__rcache_put(&r->cache, k, data, len, &e))
        snprintf(r->st->cache, sizeof(r->st->cache), "off: %.590s", e.msg);
}

int sw__remote_size(struct sw__remote *r, const char *path, uint64_t *size, struct sw_err *e)
{
    struct sw__rfile f;
    int rc = stat_one(r, path, &f, e);
    *size = rc ? 0 : f.size;
    return rc;
}

struct gguf_part {
    struct sw__remote *r;
    const struct sw_gguf_read_opts *o;
};

/* One GGUF file on the host (a whole model, or one part of a split set). */
static int gguf_part(void *ctx, const char *path, struct sw_gguf **out, struct sw_err *e)
{
    struct sw__remote *r = ((struct gguf_part *)ctx)->r;
    const struct sw_gguf_read_opts *o = ((struct gguf_part *)ctx)->o;
    struct sw__rfile f;
    char where[1300], *buf = NULL;
    size_t have = 0;
    uint64_t need = 0;
    int rc;

    *out = NULL;
    snprintf(where, sizeof(where), "%s:%s", r->st->host, path);
    rc = stat_one(r, path, &f, e);
    if (rc)
        return rc;
    struct sw__rkey k = {r->id, path, "gguf-head", &f};
    rc = from_cache(r, &k, &buf, &have);
    if (rc == SW_ENOMEM)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    if (!rc) {
        rc = sw_gguf_parse_head(buf, have, f.size, where, o, &need, out, e);
        if (!rc || !need)
            goto out;
        /* an entry too short for its header (it cannot be, as written): read it again */
        r->st->files_cached--;
        sw_free(buf);
        buf = NULL;
        have = 0;
    }
    uint64_t end = SW_MIN(f.size, (uint64_t)SW_GGUF_MAX_HEADER);
    uint64_t want = SW_MIN(end, (uint64_t)SW__REMOTE_CHUNK);
    for (;;) {
        struct sw__rrange rg = {.path = path, .off = have, .count = want - have, .want = f};
        rc = sw__remote_read(r, &rg, 1, e);
        if (rc)
            goto out;
        char *nb = sw_realloc(buf, have + rg.len + 1);
        if (!nb) {
            sw_free(rg.data);
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        buf = nb;
        memcpy(buf + have, rg.data, rg.len);
        have += rg.len;
        sw_free(rg.data);
        rc = sw_gguf_parse_head(buf, have, f.size, where, o, &need, out, e);
        if (!rc || !need)
            break;
        /* the header goes on: to where it goes at least, or one chunk more */
        uint64_t next = SW_MIN(end, SW_MAX(need, (uint64_t)have + SW__REMOTE_CHUNK));
        if (next <= have) {
            rc = sw_err_set(e, SW_EPARSE, "%s: the header does not end within %" PRIu64 " bytes",
                            where, end);
            goto out;
        }
        want = next;
    }
    if (rc)
        goto out;
    /* the header's bytes are what is kept: a parse never reads past data_offset */
    keep(r, &k, buf, (size_t)SW_MIN((uint64_t)have, (*out)->data_offset));
out:
    if (!rc) {
        r->st->file_size += f.size;
        r->st->header_bytes += (*out)->data_offset;
    }
    sw_free(buf);
    return rc;
}

int sw__remote_gguf(struct sw__remote *r, const char *path, const struct sw_gguf_read_opts *o,
                    struct sw_gguf **out, struct sw_err *e)
{
    struct gguf_part ctx = {r, o};
    /* a split set's other parts are read the same way, found beside it by their names */
    int rc = sw_gguf_open_set(path, gguf_part, &ctx, out, e);
    if (!rc) {
        r->st->found = true;
        r->st->header_only |= (*out)->header_only;
    }
    return rc;
}

/* A whole file of at most max bytes whose stat is f (just taken). */
static int whole_file(struct sw__remote *r, const char *path, const struct sw__rfile *f, size_t max,
                      char **text, size_t *len, struct sw_err *e)
{
    *text = NULL;
    *len = 0;
    if (f->size > max)
        return sw_err_set(e, SW_ERANGE, "%s:%s is %" PRIu64 " bytes; slipway reads at most %zu",
                          r->st->host, path, f->size, max);
    struct sw__rkey k = {r->id, path, "file", f};
    int rc = from_cache(r, &k, text, len);
    if (rc != SW_ENOENT)
        return rc ? sw_err_set(e, SW_ENOMEM, "out of memory") : 0;
    struct sw__rrange rg = {.path = path, .off = 0, .count = f->size, .want = *f};
    rc = sw__remote_read(r, &rg, 1, e);
    if (rc)
        return rc;
    keep(r, &k, rg.data, rg.len);
    *text = rg.data;
    *len = rg.len;
    return 0;
}

int sw__remote_file(struct sw__remote *r, const char *path, size_t max, char **text, size_t *len,
                    struct sw_err *e)
{
    struct sw__rfile f;
    *text = NULL;
    *len = 0;
    int rc = stat_one(r, path, &f, e);
    if (rc)
        return rc;
    rc = whole_file(r, path, &f, max, text, len, e);
    if (!rc)
        r->st->header_bytes += *len;
    return rc;
}

/* "DIR/NAME" into a fresh string; NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = sw_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* The shards' headers (8-byte length, then the header): the data bytes each describes. */
static int shard_bytes(struct sw__remote *r, char **paths, size_t n, uint64_t *bytes,
                       struct sw_err *e)
{
    struct sw__rfile *f = sw_calloc(n, sizeof(*f));
    struct sw__rrange *rg = sw_calloc(n, sizeof(*rg));
    char **head = sw_calloc(n, sizeof(*head));
    size_t *hlen = sw_calloc(n, sizeof(*hlen));
    size_t *todo = sw_calloc(n, sizeof(*todo));
    size_t nt = 0;
    int rc = 0;

    if (!f || !rg || !head || !hlen || !todo) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    rc = sw__remote_stat(r, (const char *const *)paths, n, f, e);
    if (rc)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (!f[i].exists || !f[i].regular) {
            rc = sw_err_set(e, SW_ENOENT, "%s has no shard %s (the index names it)", r->st->host,
                            paths[i]);
            goto out;
        }
        struct sw__rkey k = {r->id, paths[i], "safetensors-head", &f[i]};
        rc = from_cache(r, &k, &head[i], &hlen[i]);
        if (rc == SW_ENOMEM) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        if (rc)
            todo[nt++] = i;
        rc = 0;
    }
    /* the 8-byte lengths of the shards not cached, in one command */
    for (size_t t = 0; t < nt; t++)
        rg[t] =
            (struct sw__rrange){.path = paths[todo[t]], .off = 0, .count = 8, .want = f[todo[t]]};
    if (nt) {
        rc = sw__remote_read(r, rg, nt, e);
        if (rc)
            goto out;
    }
    for (size_t t = 0; t < nt; t++) {
        uint64_t hn = 0;
        size_t i = todo[t];
        rc = sw_st_header_len(rg[t].data, rg[t].len, f[i].size, paths[i], &hn, e);
        if (rc) {
            sw_err_prefix(e, "%s", r->st->host);
            goto out;
        }
        head[i] = sw_malloc((size_t)hn + 9);
        if (!head[i]) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        memcpy(head[i], rg[t].data, 8);
        hlen[i] = 8 + (size_t)hn;
        sw_free(rg[t].data);
        rg[t] = (struct sw__rrange){.path = paths[i], .off = 8, .count = hn, .want = f[i]};
    }
    /* then exactly each header, in one command */
    if (nt) {
        rc = sw__remote_read(r, rg, nt, e);
        if (rc)
            goto out;
    }
    for (size_t t = 0; t < nt; t++) {
        size_t i = todo[t];
        if (rg[t].len != hlen[i] - 8) {
            rc = sw_err_set(e, SW_ETRUNC, "%s:%s: the header came short", r->st->host, paths[i]);
            goto out;
        }
        memcpy(head[i] + 8, rg[t].data, rg[t].len);
        struct sw__rkey k = {r->id, paths[i], "safetensors-head", &f[i]};
        keep(r, &k, head[i], hlen[i]);
    }
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        struct sw_st_file sf;
        uint64_t hn = 0;
        char where[1300];
        snprintf(where, sizeof(where), "%s:%s", r->st->host, paths[i]);
        rc = sw_st_header_len(head[i], hlen[i], f[i].size, where, &hn, e);
        if (!rc && hn != hlen[i] - 8)
            rc = sw_err_set(e, SW_EPARSE, "%s: the header's length changed", where);
        if (!rc)
            rc = sw_st_parse_header(head[i] + 8, (size_t)hn, f[i].size, where, &sf, e);
        if (rc)
            goto out;
        *bytes += sf.data_len;
        r->st->header_bytes += hlen[i];
        sw_st_file_free(&sf);
    }
out:
    for (size_t i = 0; head && i < n; i++)
        sw_free(head[i]);
    for (size_t t = 0; rg && t < n; t++)
        sw_free(rg[t].data);
    sw_free(todo);
    sw_free(hlen);
    sw_free(head);
    sw_free(rg);
    sw_free(f);
    return rc;
}

int sw__remote_weight_bytes(struct sw__remote *r, const char *dir, uint64_t *bytes,
                            struct sw_err *e)
{
    char *ip = join(dir, "model.safetensors.index.json"), *sp = join(dir, "model.safetensors");
    char *text = NULL, **paths = NULL;
    size_t len = 0, n = 0, np = 0;
    struct sw__rfile f[2];
    struct sw_st_index ix;
    int rc = 0;

    memset(&ix, 0, sizeof(ix));
    *bytes = 0;
    if (!ip || !sp) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    const char *both[] = {ip, sp};
    rc = sw__remote_stat(r, both, 2, f, e);
    if (rc)
        goto out;
    if (f[0].exists && f[0].regular) {
        char where[1300];
        snprintf(where, sizeof(where), "%s:%s", r->st->host, ip);
        rc = whole_file(r, ip, &f[0], SW_ST_INDEX_CEILING, &text, &len, e);
        if (!rc)
            rc = sw_st_index_parse(text, len, where, &ix, e);
        if (rc)
            goto out;
        r->st->header_bytes += len;
        np = ix.n_shards ? ix.n_shards : 1;
        paths = sw_calloc(np, sizeof(*paths));
        if (!paths) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        for (n = 0; n < ix.n_shards; n++) {
            paths[n] = join(dir, ix.shards[n].file);
            if (!paths[n]) {
                rc = sw_err_set(e, SW_ENOMEM, "out of memory");
                goto out;
            }
        }
    } else if (f[1].exists && f[1].regular) {
        np = 1;
        paths = sw_calloc(np, sizeof(*paths));
        if (paths)
            paths[0] = join(dir, "model.safetensors");
        if (!paths || !paths[0]) {
            rc = sw_err_set(e, SW_ENOMEM, "out of memory");
            goto out;
        }
        n = 1;
    } else {
        rc = sw_err_set(e, SW_ENOENT, "%s has no %s nor %s", r->st->host, ip, sp);
        goto out;
    }
    if (n == 0) {
        rc = sw_err_set(e, SW_EPARSE, "%s:%s maps no tensor to a shard", r->st->host, ip);
        goto out;
    }
    rc = shard_bytes(r, paths, n, bytes, e);
out:
    for (size_t i = 0; paths && i < np; i++)
        sw_free(paths[i]);
    sw_free(paths);
    sw_st_index_free(&ix);
    sw_free(text);
    sw_free(sp);
    sw_free(ip);
    return rc;
}
