/*
 * payload/layout: is a payload complete? Every shard of model.safetensors.index.json present and
 * exactly 8 + header + largest data end long; a GGUF split set complete and consistent; the
 * projector there when vision is promised; a draft model in one of its two shapes (one
 * model.safetensors, or an index with shards; a GGUF for llama.cpp); MTP/nextn layers a config
 * declares but the weights do not ship.
 *
 * The structure of each file is read by the modules that own it: model/hf parses the index and
 * each safetensors header (here with the file size left unknown, so the size law is checked in
 * one place with one message), model/gguf opens GGUFs and merges split sets, sniff.c names a
 * stand-in body. What it deliberately does not do: hash (verify.c), read tensor data, or decide
 * what an engine is told (gates/ asks sw_payload_mtp_check).
 */
#include <slipway/gguf.h>
#include <slipway/hf.h>
#include <slipway/payload.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "payload/payload_internal.h"

static const char *const issue_names[SW_PAYLOAD_ISSUE__N] = {
    [SW_PAYLOAD_ISSUE_NO_WEIGHTS] = "no_weights",
    [SW_PAYLOAD_ISSUE_INDEX] = "index",
    [SW_PAYLOAD_ISSUE_SHARD_MISSING] = "shard_missing",
    [SW_PAYLOAD_ISSUE_SHARD_SIZE] = "shard_size",
    [SW_PAYLOAD_ISSUE_SHARD_BAD] = "shard_bad",
    [SW_PAYLOAD_ISSUE_GGUF_SPLIT] = "gguf_split",
    [SW_PAYLOAD_ISSUE_GGUF_BAD] = "gguf_bad",
    [SW_PAYLOAD_ISSUE_PROJECTOR] = "projector",
    [SW_PAYLOAD_ISSUE_MTP_NOT_SHIPPED] = "mtp_not_shipped",
    [SW_PAYLOAD_ISSUE_CONFIG] = "config",
};

const char *sw_payload_issue_name(enum sw_payload_issue_kind k)
{
    return (unsigned)k < SW_PAYLOAD_ISSUE__N ? issue_names[k] : "?";
}

const char *sw_payload_format_name(enum sw_payload_format f)
{
    switch (f) {
    case SW_PAYLOAD_FMT_SAFETENSORS:
        return "safetensors";
    case SW_PAYLOAD_FMT_SAFETENSORS_INDEX:
        return "safetensors_index";
    case SW_PAYLOAD_FMT_GGUF:
        return "gguf";
    case SW_PAYLOAD_FMT_GGUF_SPLIT:
        return "gguf_split";
    case SW_PAYLOAD_FMT_NONE:
        break;
    }
    return "none";
}

void sw_payload_layout_free(struct sw_payload_layout *l)
{
    if (!l)
        return;
    sw_free(l->issues);
    memset(l, 0, sizeof(*l));
}

static int add_issue(struct sw_payload_layout *l, enum sw_payload_issue_kind k, const char *file,
                     const char *fmt, ...) SW_PRINTF(4, 5);

static int add_issue(struct sw_payload_layout *l, enum sw_payload_issue_kind k, const char *file,
                     const char *fmt, ...)
{
    struct sw_payload_issue *ni = sw_realloc(l->issues, (l->n_issues + 1) * sizeof(*ni));
    if (!ni)
        return SW_ENOMEM;
    l->issues = ni;
    struct sw_payload_issue *is = &ni[l->n_issues++];
    memset(is, 0, sizeof(*is));
    is->kind = k;
    snprintf(is->file, sizeof(is->file), "%s", file ? file : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->msg, sizeof(is->msg), fmt, ap);
    va_end(ap);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Tensor names
 */
static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

bool sw_payload_is_mtp_tensor(const char *name, int64_t num_hidden_layers)
{
    if (!name)
        return false;
    /* Qwen3-Next / Qwen3.5 ship "mtp.*"; MiMo "model.mtp_layers.*"; llama.cpp "blk.N.nextn.*" */
    if (starts(name, "mtp.") || starts(name, "model.mtp.") || starts(name, "model.mtp_layers.") ||
        starts(name, "mtp_layers.") || strstr(name, ".nextn.") || starts(name, "nextn."))
        return true;
    /* DeepSeek-V3 / GLM-4.5: the nextn layers are model.layers.N with N >= num_hidden_layers */
    const char *p = NULL;
    if (starts(name, "model.layers."))
        p = name + strlen("model.layers.");
    else if (starts(name, "model.language_model.layers."))
        p = name + strlen("model.language_model.layers.");
    if (p && num_hidden_layers > 0 && isdigit((unsigned char)*p)) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(p, &end, 10);
        if (!errno && *end == '.' && n >= (unsigned long long)num_hidden_layers)
            return true;
    }
    return false;
}

/* Weights of a vision tower or projector inside a safetensors checkpoint (Qwen2.5-VL "visual.",
 * LLaVA "vision_tower." + "multi_modal_projector.", Gemma 3 "vision_tower.", ...). */
static bool is_vision_tensor(const char *name)
{
    return strstr(name, "visual.") || strstr(name, "vision") ||
           strstr(name, "multi_modal_projector") || strstr(name, "mm_projector") ||
           strstr(name, "image_newline");
}

/* ---------------------------------------------------------------------------------------------
 * Safetensors files
 */
static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

struct names {
    int64_t num_hidden_layers; /* for the DeepSeek-style MTP rule; -1 unknown */
    uint64_t mtp, vision, tensors;
};

static void count_names(struct names *nm, const struct sw_st_file *f)
{
    for (size_t i = 0; i < f->n_tensors; i++) {
        nm->tensors++;
        if (sw_payload_is_mtp_tensor(f->tensors[i].name, nm->num_hidden_layers))
            nm->mtp++;
        if (is_vision_tensor(f->tensors[i].name))
            nm->vision++;
    }
}

/*
 * Check one safetensors file: its body (a stand-in is named), its header (parsed by model/hf with
 * the size left unknown) and the size law size == 8 + header + largest data end. Issues go into
 * l under `rel`; *ok says the header was read (its names counted). Returns an error only for OOM.
 */
static int check_st(struct sw_payload_layout *l, const char *path, const char *rel, bool shard,
                    struct names *nm, bool *ok)
{
    int rc = 0;
    char *hdr = NULL;
    struct sw_payload_sniff sn;
    struct sw_err e;
    enum sw_payload_issue_kind bad = SW_PAYLOAD_ISSUE_SHARD_BAD;
    *ok = false;
    sw_err_clear(&e);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = add_issue(l, errno == ENOENT ? SW_PAYLOAD_ISSUE_SHARD_MISSING : bad, rel, "%s: %s",
                       rel, strerror(errno));
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char head[SW_PAYLOAD_SNIFF_HEAD];
    ssize_t got = pread(fd, head, sizeof(head), 0);
    if (got < 0) {
        rc = add_issue(l, bad, rel, "%s: read failed: %s", rel, strerror(errno));
        goto out;
    }
    /* the size a body claims is checked below against the header; judge the head alone here so
     * a truncated shard is not mistaken for a stand-in */
    if (sw_payload_sniff_head(rel, head, (size_t)got, 0, &sn, &e) == SW_EMISMATCH) {
        rc = add_issue(l, bad, rel, "%s: %s", rel, sn.msg);
        goto out;
    }
    if (got < 8) {
        rc = add_issue(l, SW_PAYLOAD_ISSUE_SHARD_SIZE, rel,
                       "%s: %llu bytes, cut before the 8-byte header length", rel,
                       (unsigned long long)size);
        goto out;
    }
    uint64_t hl = le64(head);
    if (hl > SW_ST_HEADER_CEILING) {
        rc = add_issue(l, bad, rel, "%s: header length %llu exceeds the %llu MiB ceiling", rel,
                       (unsigned long long)hl, (unsigned long long)(SW_ST_HEADER_CEILING >> 20));
        goto out;
    }
    if (8 + hl > size) {
        rc = add_issue(l, SW_PAYLOAD_ISSUE_SHARD_SIZE, rel,
                       "%s: %llu bytes, cut inside its %llu-byte header", rel,
                       (unsigned long long)size, (unsigned long long)hl);
        goto out;
    }
    hdr = sw_malloc(hl ? (size_t)hl : 1);
    if (!hdr) {
        rc = SW_ENOMEM;
        goto out;
    }
    size_t done = 0;
    while (done < hl) {
        ssize_t r = pread(fd, hdr + done, (size_t)hl - done, 8 + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = add_issue(l, bad, rel, "%s: header read failed", rel);
            goto out;
        }
        done += (size_t)r;
    }
    struct sw_st_file f;
    int pr = sw_st_parse_header(hdr, (size_t)hl, 0, rel, &f, &e);
    if (pr == SW_ENOMEM) {
        rc = pr;
        goto out;
    }
    if (pr) {
        char m[600];
        rc = add_issue(l, bad, rel, "%s", sw_err_format(&e, m, sizeof(m)));
        goto out;
    }
    uint64_t want = 8 + hl + f.data_len;
    if (size != want) {
        rc = add_issue(l, SW_PAYLOAD_ISSUE_SHARD_SIZE, rel,
                       "%s: %llu bytes, but 8 + header %llu + data %llu = %llu (%llu bytes %s)",
                       rel, (unsigned long long)size, (unsigned long long)hl,
                       (unsigned long long)f.data_len, (unsigned long long)want,
                       (unsigned long long)(size > want ? size - want : want - size),
                       size > want ? "too many" : "missing: truncated");
    }
    if (!shard) /* an index's shards are counted from its weight_map */
        count_names(nm, &f);
    l->weight_bytes += size;
    *ok = rc == 0 && size == want;
    sw_st_file_free(&f);
out:
    sw_free(hdr);
    if (fd >= 0)
        close(fd);
    return rc;
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* "model-00001-of-00003.safetensors": a shard name (so its set wants an index). */
static bool shard_name(const char *n)
{
    const char *p = strstr(n, "-of-");
    if (!p || p - n < 6)
        return false;
    for (const char *q = p - 5; q < p; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    return p[-6] == '-' && isdigit((unsigned char)p[4]);
}

static int check_index(struct sw_payload_layout *l, const char *dir, struct names *nm,
                       bool *all_read)
{
    struct sw_st_index ix;
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_st_index_load(dir, &ix, &e);
    if (rc == SW_ENOMEM)
        return rc;
    if (rc) {
        char m[600];
        *all_read = false;
        return add_issue(l, SW_PAYLOAD_ISSUE_INDEX, "model.safetensors.index.json", "%s",
                         sw_err_format(&e, m, sizeof(m)));
    }
    l->format = SW_PAYLOAD_FMT_SAFETENSORS_INDEX;
    l->n_weight_files = ix.n_shards;
    /* what the checkpoint ships is what its weight_map names (a missing shard included): the
     * MTP and vision questions are answered from it */
    char ipath[4096];
    json_t *root = NULL;
    if (!sw__payload_join(dir, "model.safetensors.index.json", ipath, sizeof(ipath), NULL))
        root = sw_json_load_file(ipath, 64u << 20, NULL);
    json_t *wm = json_object_get(root, "weight_map");
    const char *tname;
    json_t *tv;
    json_object_foreach(wm, tname, tv)
    {
        nm->tensors++;
        if (sw_payload_is_mtp_tensor(tname, nm->num_hidden_layers))
            nm->mtp++;
        if (is_vision_tensor(tname))
            nm->vision++;
    }
    json_decref(root);
    if (!ix.n_shards)
        rc = add_issue(l, SW_PAYLOAD_ISSUE_INDEX, "model.safetensors.index.json",
                       "the weight_map names no shard");
    for (size_t k = 0; !rc && k < ix.n_shards; k++) {
        const struct sw_st_shard *s = &ix.shards[k];
        char path[4096];
        if (sw__payload_join(dir, s->file, path, sizeof(path), NULL)) {
            rc = add_issue(l, SW_PAYLOAD_ISSUE_INDEX, s->file, "shard path too long");
            continue;
        }
        if (!s->present) {
            rc = add_issue(l, SW_PAYLOAD_ISSUE_SHARD_MISSING, s->file,
                           "%s is named by model.safetensors.index.json (%zu tensors) but is "
                           "missing",
                           s->file, s->n_tensors);
            continue;
        }
        bool ok = false;
        rc = check_st(l, path, s->file, true, nm, &ok);
        if (rc)
            break;
        /* the index's own finding about mapped tensors, when the file itself is whole */
        if (ok && !s->complete && s->problem[0])
            rc = add_issue(l, SW_PAYLOAD_ISSUE_SHARD_BAD, s->file, "%s: %s", s->file, s->problem);
    }
    sw_st_index_free(&ix);
    return rc;
}

/* The safetensors files directly in dir (sorted), for a layout without an index. */
static int list_ext(const char *dir, const char *ext, char ***out, size_t *n)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *n = 0;
    if (!d)
        return SW_ENOENT;
    size_t cap = 0, el = strlen(ext);
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l <= el || strcmp(de->d_name + l - el, ext))
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            char **nv = sw_realloc(*out, nc * sizeof(*nv));
            if (!nv) {
                rc = SW_ENOMEM;
                break;
            }
            *out = nv;
            cap = nc;
        }
        (*out)[*n] = sw_strdup(de->d_name);
        if (!(*out)[*n]) {
            rc = SW_ENOMEM;
            break;
        }
        (*n)++;
    }
    closedir(d);
    for (size_t i = 1; !rc && i < *n; i++)
        for (size_t k = i; k > 0 && strcmp((*out)[k - 1], (*out)[k]) > 0; k--) {
            char *t = (*out)[k];
            (*out)[k] = (*out)[k - 1];
            (*out)[k - 1] = t;
        }
    return rc;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sw_free(v[i]);
    sw_free(v);
}

/* ---------------------------------------------------------------------------------------------
 * GGUF
 */
static bool gguf_is_projector(const struct sw_gguf *g)
{
    const char *arch = sw_gguf_arch(g);
    if (arch && !strcmp(arch, "clip"))
        return true;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (sw_gguf_tensor_role(g->tensors[i].name.s) == SW_GGUF_ROLE_VISION)
            return true;
    return false;
}

/* Open the GGUF at path (rel names it) for a check: its part sniffed and parsed alone first (when
 * that body is not a GGUF: an issue of kind k, "<what><rel>: why"), then read as a set (an issue of
 * kind set_k, "<set_what>why"). *g NULL after an issue; SW_ENOMEM passes on. */
static int open_gguf(struct sw_payload_layout *l, const char *path, const char *rel,
                     enum sw_payload_issue_kind k, const char *what,
                     enum sw_payload_issue_kind set_k, const char *set_what, struct sw_gguf **g)
{
    struct sw_err e;
    struct sw_payload_sniff sn;
    char m[700];
    *g = NULL;
    sw_err_clear(&e);
    int rc = sw_payload_sniff_file(path, &sn, &e);
    if (rc == SW_ENOMEM)
        return rc;
    if (rc)
        return add_issue(l, k, rel, "%s%s: %s", what, rel,
                         rc == SW_EMISMATCH ? sn.msg : sw_err_format(&e, m, sizeof(m)));
    /* the part parses: anything wrong from here on is about the set */
    sw_err_clear(&e);
    rc = sw_gguf_open(path, g, &e);
    if (rc == SW_ENOMEM)
        return rc;
    if (rc)
        return add_issue(l, set_k, rel, "%s%s", set_what, sw_err_format(&e, m, sizeof(m)));
    return 0;
}

static int check_gguf(struct sw_payload_layout *l, const char *path, const char *rel)
{
    struct sw_gguf *g = NULL;
    if (!is_file(path))
        return add_issue(l, SW_PAYLOAD_ISSUE_GGUF_BAD, rel, "%s: missing", rel);
    int rc =
        open_gguf(l, path, rel, SW_PAYLOAD_ISSUE_GGUF_BAD, "", SW_PAYLOAD_ISSUE_GGUF_SPLIT, "", &g);
    if (rc || !g)
        return rc;
    l->format = g->n_splits > 1 ? SW_PAYLOAD_FMT_GGUF_SPLIT : SW_PAYLOAD_FMT_GGUF;
    l->n_weight_files += (size_t)g->n_splits;
    l->weight_bytes += g->file_size;
    l->n_tensors += g->n_tensors;
    uint64_t nextn = 0;
    if (sw_gguf_arch_u64(g, "nextn_predict_layers", &nextn) == 0 && nextn > 0) {
        l->mtp.declared += (int64_t)nextn;
        char key[128];
        if (sw_gguf_arch_key(g, "nextn_predict_layers", key, sizeof(key)) == 0)
            snprintf(l->mtp.source, sizeof(l->mtp.source), "%s: %s", rel, key);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if (sw_payload_is_mtp_tensor(g->tensors[i].name.s, -1))
            l->mtp.tensors++;
        if (sw_gguf_tensor_role(g->tensors[i].name.s) == SW_GGUF_ROLE_VISION)
            l->has_projector = true; /* a model with its vision tower inside */
    }
    sw_gguf_free(g);
    return 0;
}

static int check_projector(struct sw_payload_layout *l, const char *path, const char *rel)
{
    struct sw_gguf *g = NULL;
    if (!is_file(path))
        return add_issue(l, SW_PAYLOAD_ISSUE_PROJECTOR, rel,
                         "vision is promised but the projector %s is missing", rel);
    int rc = open_gguf(l, path, rel, SW_PAYLOAD_ISSUE_PROJECTOR, "projector ",
                       SW_PAYLOAD_ISSUE_PROJECTOR, "projector: ", &g);
    if (rc || !g)
        return rc;
    bool proj = gguf_is_projector(g);
    const char *arch = sw_gguf_arch(g);
    if (!proj)
        rc = add_issue(l, SW_PAYLOAD_ISSUE_PROJECTOR, rel,
                       "%s is not a projector: general.architecture is %s and it holds no "
                       "vision tensor (v.*, mm.*)",
                       rel, arch ? arch : "(none)");
    else
        l->has_projector = true;
    sw_gguf_free(g);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * config.json: what it declares
 */
static int64_t int_key(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

/* Declared MTP layers and num_hidden_layers: model/hf's normalised reading when it parses the
 * config, else the raw keys (top level or text_config) so an unmodelled architecture still
 * gets its MTP question answered. Returns 0, or SW_ENOENT without a config. */
static int read_config(const char *dir, struct sw_payload_layout *l, int64_t *n_layers,
                       bool *config_bad, char *why, size_t whyn)
{
    char path[4096];
    struct sw_err e;
    *n_layers = -1;
    *config_bad = false;
    if (sw__payload_join(dir, "config.json", path, sizeof(path), NULL) || !is_file(path))
        return SW_ENOENT;
    struct sw_payload_sniff sn;
    sw_err_clear(&e);
    int rc = sw_payload_sniff_file(path, &sn, &e);
    if (rc) {
        *config_bad = true;
        snprintf(why, whyn, "config.json: %.700s", rc == SW_EMISMATCH ? sn.msg : e.msg);
        return rc == SW_ENOMEM ? rc : 0;
    }
    json_t *root = sw_json_load_file(path, 64u << 20, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        *config_bad = true;
        snprintf(why, whyn, "config.json is not a JSON object");
        return 0;
    }
    json_t *tc = json_object_get(root, "text_config");
    const char *keys[] = {"num_nextn_predict_layers", "mtp_num_hidden_layers", NULL};
    for (int i = 0; keys[i]; i++) {
        int64_t v = int_key(root, keys[i]);
        const char *where = "";
        if (!v && json_is_object(tc)) {
            v = int_key(tc, keys[i]);
            where = "text_config.";
        }
        if (v) {
            l->mtp.declared = v;
            snprintf(l->mtp.source, sizeof(l->mtp.source), "config.json: %s%s", where, keys[i]);
            break;
        }
    }
    int64_t nl = int_key(root, "num_hidden_layers");
    if (!nl && json_is_object(tc))
        nl = int_key(tc, "num_hidden_layers");
    *n_layers = nl ? nl : -1;
    json_decref(root);
    /* model/hf's normalisation knows more spellings; prefer it when it parses */
    struct sw_hf_config *c = sw_calloc(1, sizeof(*c));
    if (!c)
        return SW_ENOMEM;
    sw_err_clear(&e);
    if (sw_hf_config_load(path, c, &e) == 0) {
        if (c->num_nextn_predict_layers > 0 && !l->mtp.declared) {
            l->mtp.declared = c->num_nextn_predict_layers;
            snprintf(l->mtp.source, sizeof(l->mtp.source), "config.json (model/hf)");
        }
        if (c->num_hidden_layers > 0)
            *n_layers = c->num_hidden_layers;
    }
    sw_free(c);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The check
 */
static int check_hf_dir(struct sw_payload_layout *l, const char *dir,
                        const struct sw_payload_layout_opts *o, const char *single)
{
    int rc = 0;
    char path[4096];
    char **files = NULL;
    size_t nfiles = 0;
    bool all_read = true, config_bad = false;
    char why[800] = "";
    struct names nm = {.num_hidden_layers = -1};
    rc = read_config(dir, l, &nm.num_hidden_layers, &config_bad, why, sizeof(why));
    bool have_config = rc != SW_ENOENT;
    if (rc == SW_ENOENT)
        rc = 0;
    if (rc)
        return rc;

    if (single) {
        bool ok = false;
        l->format = SW_PAYLOAD_FMT_SAFETENSORS;
        l->n_weight_files = 1;
        rc = sw__payload_join(dir, single, path, sizeof(path), NULL);
        if (!rc)
            rc = check_st(l, path, single, false, &nm, &ok);
        all_read = ok;
    } else if (!sw__payload_join(dir, "model.safetensors.index.json", path, sizeof(path), NULL) &&
               is_file(path)) {
        rc = check_index(l, dir, &nm, &all_read);
    } else {
        rc = list_ext(dir, ".safetensors", &files, &nfiles);
        if (rc == SW_ENOENT)
            rc = 0;
        bool sharded = false;
        for (size_t i = 0; !rc && i < nfiles; i++) {
            bool ok = false;
            sharded |= shard_name(files[i]);
            rc = sw__payload_join(dir, files[i], path, sizeof(path), NULL);
            if (!rc)
                rc = check_st(l, path, files[i], false, &nm, &ok);
            all_read &= ok;
        }
        if (nfiles) {
            l->format = SW_PAYLOAD_FMT_SAFETENSORS;
            l->n_weight_files = nfiles;
        }
        if (!rc && sharded)
            rc = add_issue(l, SW_PAYLOAD_ISSUE_INDEX, "model.safetensors.index.json",
                           "shards named like %s but no model.safetensors.index.json to say "
                           "which make the set",
                           files[0]);
        else if (!rc && o->draft && nfiles > 1)
            rc = add_issue(l, SW_PAYLOAD_ISSUE_INDEX, "model.safetensors.index.json",
                           "a draft model must be one model.safetensors or an index with its "
                           "shards; found %zu unindexed .safetensors files",
                           nfiles);
    }
    free_list(files, nfiles);
    if (rc)
        return rc;
    if (l->format == SW_PAYLOAD_FMT_NONE)
        return 0; /* the caller looks for GGUF next */
    l->n_tensors += nm.tensors;
    l->mtp.tensors += nm.mtp;
    l->mtp.weights_read = all_read;
    if (nm.vision)
        l->has_projector = true;
    if (!have_config)
        rc = add_issue(l, SW_PAYLOAD_ISSUE_CONFIG, "config.json",
                       "no config.json beside the safetensors weights (engines need it)");
    else if (config_bad)
        rc = add_issue(l, SW_PAYLOAD_ISSUE_CONFIG, "config.json", "%s", why);
    return rc;
}

static int check_gguf_dir(struct sw_payload_layout *l, const char *dir)
{
    char **files = NULL;
    size_t n = 0;
    int rc = list_ext(dir, ".gguf", &files, &n);
    if (rc == SW_ENOENT)
        return 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *f = files[i];
        /* projectors are checked as projectors; later parts of a split set come with part 1 */
        if (!strncmp(f, "mmproj", 6) || strstr(f, "-mmproj"))
            continue;
        const char *of = strstr(f, "-of-");
        if (of && of - f >= 6 && strncmp(of - 6, "-00001", 6) && shard_name(f)) {
            /* part k > 1: checked through part 1 when that exists */
            char first[1100];
            snprintf(first, sizeof(first), "%.*s-00001%s", (int)(of - 6 - f), f, of);
            bool have_first = false;
            for (size_t k = 0; k < n; k++)
                have_first |= !strcmp(files[k], first);
            if (have_first)
                continue;
        }
        char path[4096];
        rc = sw__payload_join(dir, f, path, sizeof(path), NULL);
        if (!rc)
            rc = check_gguf(l, path, f);
    }
    free_list(files, n);
    return rc;
}

int sw_payload_layout_check(const char *target, const struct sw_payload_layout_opts *opts,
                            struct sw_payload_layout *l, struct sw_err *e)
{
    static const struct sw_payload_layout_opts none;
    const struct sw_payload_layout_opts *o = opts ? opts : &none;
    char dir[4096], path[4096];
    const char *single = NULL, *gguf = o->gguf;
    int rc = 0;
    memset(l, 0, sizeof(*l));
    l->mtp.weights_read = true;
    struct stat st;
    if (stat(target, &st) < 0)
        return sw_err_at(e, errno == ENOENT ? SW_ENOENT : SW_EIO, target, 0, 0, "%s",
                         strerror(errno));
    snprintf(dir, sizeof(dir), "%s", target);
    if (S_ISREG(st.st_mode)) {
        /* a file: check it, in its directory */
        char *slash = strrchr(dir, '/');
        const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof(dir), ".");
        if (sw_payload_ftype_of(base) == SW_PAYLOAD_FT_GGUF && !gguf)
            gguf = base;
        else if (sw_payload_ftype_of(base) == SW_PAYLOAD_FT_SAFETENSORS)
            single = base;
        else
            return sw_err_at(e, SW_EINVAL, target, 0, 0,
                             "not a model directory, .gguf or .safetensors file");
    } else if (!S_ISDIR(st.st_mode)) {
        return sw_err_at(e, SW_EINVAL, target, 0, 0, "not a directory or a file");
    }

    if (gguf) {
        if (gguf[0] == '/')
            snprintf(path, sizeof(path), "%s", gguf);
        else if (sw__payload_join(dir, gguf, path, sizeof(path), e))
            return SW_ERANGE;
        rc = check_gguf(l, path, gguf);
    } else {
        rc = check_hf_dir(l, dir, o, single);
        if (!rc && l->format == SW_PAYLOAD_FMT_NONE)
            rc = check_gguf_dir(l, dir);
    }
    if (!rc && l->format == SW_PAYLOAD_FMT_NONE && !l->n_issues)
        rc = add_issue(l, SW_PAYLOAD_ISSUE_NO_WEIGHTS, "",
                       "no weights: no model.safetensors.index.json, *.safetensors or *.gguf "
                       "in %s",
                       dir);
    if (!rc && o->mmproj) {
        if (o->mmproj[0] == '/')
            snprintf(path, sizeof(path), "%s", o->mmproj);
        else if (sw__payload_join(dir, o->mmproj, path, sizeof(path), e))
            return SW_ERANGE;
        rc = check_projector(l, path, o->mmproj);
    } else if (!rc && o->vision && !l->has_projector) {
        rc = add_issue(l, SW_PAYLOAD_ISSUE_PROJECTOR, "",
                       l->format == SW_PAYLOAD_FMT_GGUF || l->format == SW_PAYLOAD_FMT_GGUF_SPLIT
                           ? "vision is promised but no projector (mmproj) is named"
                           : "vision is promised but the weights hold no vision tower or "
                             "projector tensors");
    }
    if (!rc && l->mtp.declared > 0 && l->mtp.tensors == 0 && l->mtp.weights_read &&
        l->format != SW_PAYLOAD_FMT_NONE)
        rc = add_issue(l, SW_PAYLOAD_ISSUE_MTP_NOT_SHIPPED, "",
                       "%s declares %lld MTP/nextn layer%s but the weights ship no MTP tensor: "
                       "spec-decode (MTP) must not be enabled for this checkpoint",
                       l->mtp.source, (long long)l->mtp.declared, l->mtp.declared == 1 ? "" : "s");
    if (rc) {
        sw_payload_layout_free(l);
        return rc == SW_ENOMEM ? sw_err_set(e, SW_ENOMEM, "out of memory") : rc;
    }
    return 0;
}

json_t *sw_payload_layout_to_json(const struct sw_payload_layout *l)
{
    json_t *j = json_object(), *issues = json_array(), *mtp = json_object();
    if (!j || !issues || !mtp)
        goto fail;
    for (size_t i = 0; i < l->n_issues; i++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(issues, o) ||
            sw_json_set_str(o, "kind", sw_payload_issue_name(l->issues[i].kind)) ||
            (l->issues[i].file[0] && sw_json_set_str(o, "file", l->issues[i].file)) ||
            sw_json_set_str(o, "message", l->issues[i].msg))
            goto fail;
    }
    if (sw_json_set_int(mtp, "declared", l->mtp.declared) ||
        sw_json_set_int(mtp, "tensors", (int64_t)l->mtp.tensors) ||
        sw_json_set_bool(mtp, "weights_read", l->mtp.weights_read) ||
        sw_json_set_bool(mtp, "ships", sw_payload_ships_mtp(&l->mtp)) ||
        (l->mtp.source[0] && sw_json_set_str(mtp, "source", l->mtp.source)))
        goto fail;
    if (sw_json_set_str(j, "format", sw_payload_format_name(l->format)) ||
        sw_json_set_int(j, "weight_files", (int64_t)l->n_weight_files) ||
        sw_json_set_int(j, "weight_bytes", (int64_t)l->weight_bytes) ||
        sw_json_set_int(j, "tensors", (int64_t)l->n_tensors) ||
        sw_json_set_bool(j, "has_projector", l->has_projector) ||
        sw_json_set_bool(j, "ok", l->n_issues == 0))
        goto fail;
    if (json_object_set_new(j, "mtp", mtp)) {
        mtp = NULL;
        goto fail;
    }
    mtp = NULL;
    if (json_object_set_new(j, "issues", issues)) {
        issues = NULL;
        goto fail;
    }
    return j;
fail:
    json_decref(mtp);
    json_decref(issues);
    json_decref(j);
    return NULL;
}

bool sw_payload_ships_mtp(const struct sw_payload_mtp *m)
{
    return m && m->declared > 0 && m->tensors > 0;
}

int sw_payload_mtp_check(const char *path, struct sw_payload_mtp *out, struct sw_err *e)
{
    struct sw_payload_layout l;
    memset(out, 0, sizeof(*out));
    int rc = sw_payload_layout_check(path, NULL, &l, e);
    if (rc)
        return rc;
    bool nothing = l.format == SW_PAYLOAD_FMT_NONE && l.mtp.declared == 0;
    *out = l.mtp;
    if (l.format == SW_PAYLOAD_FMT_NONE)
        out->weights_read = false;
    sw_payload_layout_free(&l);
    if (nothing)
        return sw_err_at(e, SW_ENOENT, path, 0, 0,
                         "neither a config declaring MTP layers nor weights to look in");
    return 0;
}
