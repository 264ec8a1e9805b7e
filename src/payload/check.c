/*
 * payload/check: a payload on disk checked the three ways `slipway fetch --verify-only` reports.
 *
 * The target (a directory, or an endpoint's payload through its fleet: payload/target.c) is
 * verified against its manifest when there is one (sizes, sha256 or git oid re-hashed in
 * parallel, files the manifest does not name "unexpected"); without one its files are listed (an
 * endpoint whose payload.path names one file in a shared directory: only that file and its
 * projector). Then every file there is sniffed (an HTML page, a git-lfs pointer or a JSON error
 * body saved as a shard is named), the layout is checked (shards of the index, GGUF split sets,
 * the projector, MTP heads), and so is the endpoint's local draft model. What was found is pinned
 * as a manifest when asked and nothing is wrong: unverified files only with allow_unverified.
 *
 * What it does not do: print (the CLI does, from struct sw_payload_check), download (fetch.c), or
 * repair anything.
 */
#include <slipway/fleet.h>

#include <string.h>
#include <sys/stat.h>

#include "payload/payload_internal.h"

struct progress_ctx {
    struct sw_progress bar;
    bool started;
};

static void on_progress(void *ud, uint64_t done, uint64_t total)
{
    struct progress_ctx *p = ud;
    if (!p->started) {
        sw_progress_init(&p->bar, "verify", "B", total);
        p->started = true;
    }
    sw_progress_update(&p->bar, done);
}

/* The manifest named or kept beside the fleet; none kept yet at the default place is no error
 * (the body and layout checks still run). */
static int load_manifest(struct sw_payload_check *c, struct sw_payload_manifest *m,
                         struct sw_err *e)
{
    const struct sw_payload_target *t = &c->target;
    if (!t->manifest[0])
        return 0;
    int rc = sw_payload_manifest_load(t->manifest, m, e);
    if (rc == SW_ENOENT && t->manifest_default)
        return 0;
    if (rc)
        return rc;
    c->have_manifest = true;
    return 0;
}

/* The payload's own files when payload.path names one file (its GGUF, and the projector when it
 * lies beside it): a models directory shared with others is not scanned. */
static int scan_own_files(const struct sw_payload_target *t, bool hash,
                          const struct sw_verify_opts *vo, struct sw_payload_manifest *scan,
                          struct sw_err *e)
{
    const char *own[2] = {t->gguf, t->mmproj && !strchr(t->mmproj, '/') ? t->mmproj : NULL};
    int rc = 0;
    for (int i = 0; !rc && i < 2; i++) {
        char full[8192];
        struct stat st;
        if (!own[i])
            continue;
        snprintf(full, sizeof(full), "%s/%s", t->root, own[i]);
        if (stat(full, &st) < 0)
            continue; /* the layout check reports it */
        rc = sw_payload_manifest_add(scan, own[i], (int64_t)st.st_size, NULL, false, NULL, NULL, e);
    }
    if (rc || !hash || !scan->n_files)
        return rc;
    const char *paths[2];
    char hex[2][SW_PAYLOAD_SHA256_HEX + 1];
    for (size_t i = 0; i < scan->n_files; i++)
        paths[i] = scan->files[i].path;
    rc = sw_payload_hash_files(t->root, paths, scan->n_files, vo, hex, NULL, e);
    for (size_t i = 0; !rc && i < scan->n_files; i++)
        memcpy(scan->files[i].sha256, hex[i], sizeof(hex[i]));
    return rc;
}

/* Verify against the manifest, else list what is there (hashing it when it is to be pinned). */
static int verify_or_list(struct sw_payload_check *c, const struct sw_payload_check_opts *o,
                          const struct sw_payload_manifest *m, struct sw_err *e)
{
    const struct sw_payload_target *t = &c->target;
    struct progress_ctx pc;
    memset(&pc, 0, sizeof(pc));
    /* the manifest itself may live under the root: never "unexpected" */
    const char *ignore[2] = {NULL, NULL};
    size_t rl = strlen(t->root);
    if (c->have_manifest && !strncmp(t->manifest, t->root, rl) && t->manifest[rl] == '/')
        ignore[0] = t->manifest + rl + 1;
    bool hash = o->hash_all || o->write_manifest;
    struct sw_verify_opts vo = {.threads = o->threads,
                                .hash_all = hash,
                                .no_unexpected = t->file_only,
                                .ignore = ignore,
                                .progress = o->progress ? on_progress : NULL,
                                .progress_ud = &pc};
    int rc;
    if (c->have_manifest)
        rc = sw_payload_verify(t->root, m, &vo, &c->verify, e);
    else if (t->file_only)
        rc = scan_own_files(t, hash, &vo, &c->files, e);
    else
        rc = sw_payload_manifest_scan(t->root, hash, &vo, &c->files, e);
    if (pc.started)
        sw_progress_finish(&pc.bar);
    if (rc)
        return rc;
    if (c->have_manifest)
        c->problems |= !sw_verify_ok(&c->verify) || (c->verify.unverified && !o->allow_unverified);
    return 0;
}

/* Sniff every file that is there; those rejected are kept in c->bodies. */
static int sniff_all(struct sw_payload_check *c, struct sw_err *e)
{
    const struct sw_verify_report *r = c->have_manifest ? &c->verify : NULL;
    size_t n = r ? r->n_files : c->files.n_files;
    c->bodies = sw_calloc(n ? n : 1, sizeof(*c->bodies));
    if (!c->bodies)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *rel = r ? r->files[i].path : c->files.files[i].path;
        if (r &&
            (r->files[i].status == SW_VERIFY_MISSING || r->files[i].status == SW_VERIFY_UNREADABLE))
            continue;
        char full[8192];
        snprintf(full, sizeof(full), "%s/%s", c->target.root, rel);
        struct sw_payload_sniff s;
        struct sw_err se;
        sw_err_clear(&se);
        int rc = sw_payload_sniff_file(full, &s, &se);
        if (rc && rc != SW_EMISMATCH) {
            s.body = SW_PAYLOAD_BODY_MALFORMED;
            snprintf(s.msg, sizeof(s.msg), "%.760s", se.msg);
        }
        if (s.body == SW_PAYLOAD_BODY_OK)
            continue;
        struct sw_payload_bad_body *b = &c->bodies[c->n_bodies];
        b->path = sw_strdup(rel);
        if (!b->path)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        b->sniff = s;
        c->n_bodies++;
        c->problems = true;
    }
    return 0;
}

/* The layout of the payload, and of the endpoint's local draft. */
static int check_layouts(struct sw_payload_check *c, struct sw_err *e)
{
    const struct sw_payload_target *t = &c->target;
    struct sw_payload_layout_opts lo = {.gguf = t->gguf, .mmproj = t->mmproj, .vision = t->vision};
    int rc = sw_payload_layout_check(t->root, &lo, &c->layout, e);
    if (rc)
        return rc;
    c->problems |= c->layout.n_issues > 0;
    if (!t->draft[0])
        return 0;
    struct sw_payload_layout_opts dro = {.draft = true};
    rc = sw_payload_layout_check(t->draft, &dro, &c->draft, e);
    if (rc)
        return rc;
    c->have_draft = true;
    c->problems |= c->draft.n_issues > 0;
    return 0;
}

/* Pin what was found (with the manifest, the hashes just computed) unless something is wrong:
 * then c->not_written says why. */
static int pin(struct sw_payload_check *c, const struct sw_payload_check_opts *o,
               struct sw_payload_manifest *m, struct sw_err *e)
{
    const struct sw_verify_report *r = &c->verify;
    if (c->problems && c->have_manifest && r->unverified && !o->allow_unverified) {
        snprintf(c->not_written, sizeof(c->not_written),
                 "not writing %s: %zu file%s unverified (no sha256 or git oid in the manifest); "
                 "run with --allow-unverified to pin %s as %s",
                 o->write_manifest, r->unverified, r->unverified == 1 ? " is" : "s are",
                 r->unverified == 1 ? "it" : "them", r->unverified == 1 ? "it is" : "they are");
        return 0;
    }
    if (c->problems) {
        snprintf(c->not_written, sizeof(c->not_written), "not writing %s: the payload has problems",
                 o->write_manifest);
        return 0;
    }
    if (!c->have_manifest)
        return sw_payload_manifest_save(o->write_manifest, &c->files, e);
    for (size_t i = 0; i < r->n_files; i++) {
        struct sw_payload_file *f = sw_payload_manifest_find(m, r->files[i].path);
        if (f && r->files[i].hashed)
            memcpy(f->sha256, r->files[i].sha256, sizeof(f->sha256));
    }
    return sw_payload_manifest_save(o->write_manifest, m, e);
}

int sw_payload_check(const struct sw_payload_check_opts *o, struct sw_payload_check *out,
                     struct sw_err *e)
{
    struct sw_payload_manifest m;
    int rc;
    memset(out, 0, sizeof(*out));
    sw_payload_manifest_init(&m);
    sw_payload_manifest_init(&out->files);
    rc = sw__payload_target_local(o->target, o->fleet, o->manifest, &out->fleet, &out->target, e);
    if (rc)
        goto out;
    rc = load_manifest(out, &m, e);
    if (rc)
        goto out;
    rc = verify_or_list(out, o, &m, e);
    if (rc)
        goto out;
    rc = sniff_all(out, e);
    if (rc)
        goto out;
    rc = check_layouts(out, e);
    if (rc)
        goto out;
    if (o->write_manifest)
        rc = pin(out, o, &m, e);
out:
    sw_payload_manifest_free(&m);
    return rc;
}

void sw_payload_check_free(struct sw_payload_check *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_bodies; i++)
        sw_free(c->bodies[i].path);
    sw_free(c->bodies);
    sw_payload_layout_free(&c->draft);
    sw_payload_layout_free(&c->layout);
    sw_verify_report_free(&c->verify);
    sw_payload_manifest_free(&c->files);
    sw_fleet_free(c->fleet);
    memset(c, 0, sizeof(*c));
}

static json_t *bodies_json(const struct sw_payload_check *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->n_bodies; i++) {
        const struct sw_payload_bad_body *b = &c->bodies[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) || sw_json_set_str(o, "path", b->path) ||
            sw_json_set_str(o, "kind", sw_payload_ftype_name(b->sniff.ftype)) ||
            sw_json_set_str(o, "body", sw_payload_body_name(b->sniff.body)) ||
            sw_json_set_str(o, "message", b->sniff.msg)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *sw_payload_check_to_json(const struct sw_payload_check *c)
{
    const struct sw_payload_target *t = &c->target;
    bool man = c->have_manifest;
    json_t *out = json_object();
    if (!out || sw_json_set_str(out, "root", t->root) ||
        sw_json_set_str(out, "endpoint", t->endpoint) ||
        sw_json_set_str(out, "manifest", man ? t->manifest : NULL) ||
        sw_json_set_new(out, "verify", man ? sw_verify_report_to_json(&c->verify) : json_null()) ||
        sw_json_set_new(out, "bodies", bodies_json(c)) ||
        (!man && sw_json_set_new(out, "files", sw_payload_manifest_to_json(&c->files))) ||
        sw_json_set_new(out, "layout", sw_payload_layout_to_json(&c->layout)) ||
        (c->have_draft && sw_json_set_new(out, "draft", sw_payload_layout_to_json(&c->draft))) ||
        (man && sw_json_set_int(out, "unverified", (int64_t)c->verify.unverified)) ||
        (man && sw_json_set_bool(out, "verified", c->verify.unverified == 0)) ||
        sw_json_set_bool(out, "ok", !c->problems)) {
        json_decref(out);
        return NULL;
    }
    return out;
}
