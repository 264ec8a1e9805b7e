/*
 * model/gguf_split: open a GGUF that may be one part of a split set and merge the set.
 *
 * llama.cpp's rule (src/llama.cpp llama_split_path/llama_split_prefix, llama-model-loader.cpp):
 * parts are named <prefix>-00001-of-00003.gguf, each carries split.no (0-based) and split.count,
 * the first carries the model metadata and split.tensors.count, and every tensor name is unique
 * across the set. llama.cpp insists on being given the first part; slipway accepts any part and
 * finds the others beside it, then checks the set is complete and consistent.
 *
 * What it does not do: a custom list of part names (llama.cpp's --model with several files).
 */
#include <slipway/gguf.h>

#include <inttypes.h>
#include <string.h>

#include "model/gguf_internal.h"

#define MAX_SPLITS 65535 /* split.count is a u16 in llama.cpp */

static int split_key(const struct sw_gguf *g, const char *key, uint64_t *v, bool required,
                     struct sw_err *e)
{
    int rc = sw_gguf_get_u64(g, key, v);
    if (rc == SW_ENOENT && !required)
        return rc;
    if (rc)
        return sw_gguf_key_err(g, key, "an unsigned integer", rc == SW_ENOENT ? SW_EPARSE : rc, e);
    return 0;
}

/* The path of part i (0-based) of a set, given the path of part `no`. */
static int part_path(const char *path, uint64_t no, uint64_t count, uint64_t i, char **out,
                     struct sw_err *e)
{
    char suffix[48];
    snprintf(suffix, sizeof(suffix), "-%05" PRIu64 "-of-%05" PRIu64 ".gguf", no + 1, count);
    size_t pl = strlen(path), sl = strlen(suffix);
    if (pl <= sl || strcmp(path + pl - sl, suffix))
        return sw_err_at(e, SW_EPARSE, path, 0, 0,
                         "is split part %" PRIu64 " of %" PRIu64
                         " but is not named <prefix>%s as llama.cpp requires",
                         no + 1, count, suffix);
    size_t n = pl - sl + sizeof(suffix);
    char *p = sw_malloc(n);
    if (!p)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    snprintf(p, n, "%.*s-%05" PRIu64 "-of-%05" PRIu64 ".gguf", (int)(pl - sl), path, i + 1, count);
    *out = p;
    return 0;
}

int sw_gguf_open(const char *path, struct sw_gguf **out, struct sw_err *e)
{
    return sw_gguf_open_types(path, NULL, out, e);
}

int sw_gguf_open_types(const char *path, const struct sw_gguf_types *x, struct sw_gguf **out,
                       struct sw_err *e)
{
    struct sw_gguf_read_opts o = {.types = x};
    return sw_gguf_open_opts(path, &o, out, e);
}

/* A part of a set as a file on this machine. */
static int local_part(void *ctx, const char *path, struct sw_gguf **out, struct sw_err *e)
{
    return sw_gguf_open_single_opts(path, ctx, out, e);
}

int sw_gguf_open_opts(const char *path, const struct sw_gguf_read_opts *o, struct sw_gguf **out,
                      struct sw_err *e)
{
    return sw_gguf_open_set(path, local_part, (void *)o, out, e);
}

int sw_gguf_open_set(const char *path, sw_gguf_part_fn part, void *ctx, struct sw_gguf **out,
                     struct sw_err *e)
{
    struct sw_gguf *first = NULL, **parts = NULL;
    char *ppath = NULL;
    uint64_t count = 0, no = 0, want_tensors = 0;
    bool header_only = false;
    int rc = part(ctx, path, &first, e);
    *out = NULL;
    if (rc)
        return rc;
    rc = split_key(first, "split.count", &count, false, e);
    if (rc == SW_ENOENT || (!rc && count <= 1)) {
        *out = first;
        return 0;
    }
    if (rc)
        goto out;
    if (count > MAX_SPLITS) {
        rc = sw_gguf_key_err(first, "split.count", "at most 65535", SW_ERANGE, e);
        goto out;
    }
    rc = split_key(first, "split.no", &no, true, e);
    if (rc)
        goto out;
    if (no >= count) {
        rc = sw_gguf_key_err(first, "split.no", "a part number below split.count", SW_ERANGE, e);
        goto out;
    }
    parts = sw_calloc((size_t)count, sizeof(*parts));
    if (!parts) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    parts[no] = first;
    first = NULL;
    for (uint64_t i = 0; i < count; i++) {
        if (parts[i])
            continue;
        rc = part_path(path, no, count, i, &ppath, e);
        if (rc)
            goto out;
        rc = part(ctx, ppath, &parts[i], e);
        if (rc == SW_ENOENT) {
            rc = sw_err_at(e, SW_ENOENT, ppath, 0, 0,
                           "split set incomplete: part %" PRIu64 " of %" PRIu64
                           " is missing (opened %s)",
                           i + 1, count, path);
            goto out;
        }
        if (rc)
            goto out;
        uint64_t c2, n2;
        rc = split_key(parts[i], "split.count", &c2, true, e);
        if (!rc)
            rc = split_key(parts[i], "split.no", &n2, true, e);
        if (rc)
            goto out;
        if (c2 != count || n2 != i) {
            rc = sw_err_at(e, SW_EPARSE, ppath, 0, 0,
                           "inconsistent split set: this part says it is %" PRIu64 " of %" PRIu64
                           ", its name says %" PRIu64 " of %" PRIu64,
                           n2 + 1, c2, i + 1, count);
            goto out;
        }
        sw_free(ppath);
        ppath = NULL;
    }

    /* merge into part 0, which holds the model's metadata */
    struct sw_gguf *g = parts[0];
    rc = split_key(g, "split.tensors.count", &want_tensors, true, e);
    if (rc)
        goto out;
    uint64_t total = 0, fsize = 0, tbytes = 0;
    for (uint64_t i = 0; i < count; i++) {
        total += parts[i]->n_tensors;
        fsize += parts[i]->file_size;
        tbytes += parts[i]->tensor_bytes;
        header_only |= parts[i]->header_only;
    }
    if (total != want_tensors) {
        rc = sw_err_at(e, SW_EPARSE, g->path, 0, 0,
                       "corrupt split set: split.tensors.count is %" PRIu64 " but the %" PRIu64
                       " parts hold %" PRIu64 " tensors",
                       want_tensors, count, total);
        goto out;
    }
    struct sw_gguf_tensor *ts =
        sw__arena_alloc(&g->priv->arena, (size_t)(total ? total : 1) * sizeof(*ts));
    if (!ts) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t k = 0;
    for (uint64_t i = 0; i < count; i++) {
        for (uint64_t j = 0; j < parts[i]->n_tensors; j++) {
            ts[k] = parts[i]->tensors[j];
            ts[k].split = (int)i;
            k++;
        }
    }
    for (uint64_t i = 1; i < count; i++)
        sw__arena_merge(&g->priv->arena, &parts[i]->priv->arena);
    g->tensors = ts;
    g->n_tensors = total;
    g->file_size = fsize;
    g->tensor_bytes = tbytes;
    g->n_splits = (int)count;
    g->header_only = header_only;
    int64_t dup;
    rc = sw__gguf_build_index(g, &dup);
    if (rc) {
        rc = sw_err_set(e, SW_ENOMEM, "out of memory");
        goto out;
    }
    if (dup >= 0) {
        rc = sw_err_at(e, SW_EPARSE, g->path, 0, 0,
                       "invalid split set: tensor '%s' appears twice (again in part %d)",
                       ts[dup].name.s, ts[dup].split + 1);
        goto out;
    }
    *out = g;
    parts[0] = NULL;
out:
    if (parts)
        for (uint64_t i = 0; i < count; i++)
            sw_gguf_free(parts[i]);
    sw_free(parts);
    sw_free(ppath);
    sw_gguf_free(first);
    return rc;
}
