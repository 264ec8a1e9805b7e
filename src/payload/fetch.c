/*
 * payload/fetch: a payload fetched the way `slipway fetch` does it, in one call.
 *
 * The target (a Hub repository, or an endpoint whose payload names one: payload/target.c), the
 * token (HF_TOKEN or a token file: payload/token.c), the manifest (the one kept beside the fleet
 * or named, which pins a commit so the Hub is not asked, narrowed to the include globs; else the
 * Hub's own, payload/hub.c), saved when asked, then the files (sw_fetch_run, payload/download*.c).
 * Every message that could carry the token has it redacted.
 *
 * What it does not do: print or decide an exit code (the CLI does, from struct sw_fetch_payload),
 * or set signal dispositions (a file size limit's SIGXFSZ is the caller's to ignore).
 */
#include <slipway/fleet.h>

#include <string.h>

#include "payload/payload_internal.h"

/* The manifest kept beside the fleet (or named), narrowed to the include globs. 1 when there is
 * none at the default place. */
static int manifest_from_file(const struct sw__fetch_target *t, struct sw_payload_manifest *m,
                              struct sw_err *e)
{
    struct sw_payload_manifest all;
    int rc = sw_payload_manifest_load(t->manifest, &all, e);
    if (rc == SW_ENOENT && t->manifest_default)
        return 1;
    if (rc)
        return rc;
    sw_payload_manifest_init(m);
    if (!all.repo || !all.commit) {
        rc = sw_err_at(e, SW_EINVAL, t->manifest, 0, 0,
                       "the manifest names no %s: it cannot pin a download",
                       all.repo ? "commit" : "repo");
        goto out;
    }
    if (strcmp(all.repo, t->repo) != 0) {
        rc = sw_err_at(e, SW_EINVAL, t->manifest, 0, 0, "the manifest is for %s, not %s", all.repo,
                       t->repo);
        goto out;
    }
    if (t->revision && strcmp(t->revision, all.commit) != 0 &&
        (!all.revision || strcmp(t->revision, all.revision) != 0)) {
        rc = sw_err_at(e, SW_EINVAL, t->manifest, 0, 0,
                       "the manifest pins %s at commit %s (revision %s), not revision %s: drop "
                       "--revision, or regenerate the manifest with --write-manifest",
                       all.repo, all.commit, all.revision ? all.revision : "?", t->revision);
        goto out;
    }
    rc = sw_payload_manifest_set(m, all.repo, all.revision, all.commit, e);
    for (size_t i = 0; !rc && i < all.n_files; i++) {
        const struct sw_payload_file *f = &all.files[i];
        if (sw__payload_included(f->path, t->include))
            rc = sw_payload_manifest_add(m, f->path, f->size_known ? (int64_t)f->size : -1,
                                         f->sha256, f->lfs, f->git_oid, NULL, e);
    }
    if (!rc && !m->n_files)
        rc = sw_err_at(e, SW_ENOENT, t->manifest, 0, 0,
                       "no file of the manifest matches the --include globs");
out:
    sw_payload_manifest_free(&all);
    if (rc)
        sw_payload_manifest_free(m);
    return rc;
}

/* The manifest to fetch: from its file when there is one, else from the Hub (whose refusal is
 * out->hub_failed). */
static int manifest_of(const struct sw__fetch_target *t, const struct sw_fetch_token *tok,
                       struct sw_fetch_payload *out, struct sw_err *e)
{
    int rc = t->manifest[0] ? manifest_from_file(t, &out->manifest, e) : 1;
    if (rc != 1)
        return rc;
    struct sw_hub_opts ho = {.token = tok->value, .include = t->include};
    rc = sw_hub_manifest(t->repo, t->revision, &ho, &out->manifest, e);
    if (rc && e)
        sw_redact(e->msg, tok->value);
    out->hub_failed = rc == SW_EHTTP || rc == SW_EMISMATCH || rc == SW_ENET;
    return rc;
}

int sw_fetch_payload(const struct sw_fetch_payload_opts *o, struct sw_fetch_payload *out,
                     struct sw_err *e)
{
    struct sw__fetch_target t;
    struct sw_fetch_token tok;
    int rc;
    memset(out, 0, sizeof(*out));
    memset(&tok, 0, sizeof(tok));
    sw_payload_manifest_init(&out->manifest);
    out->dry_run = o->dry_run;
    rc = sw__payload_target_hub(o, &out->fleet, &t, e);
    if (rc)
        goto out;
    out->endpoint = t.endpoint;
    rc = sw_fetch_token_load(&tok, e);
    if (rc)
        goto out;
    rc = manifest_of(&t, &tok, out, e);
    if (rc)
        goto out;
    if (o->write_manifest) {
        rc = sw_payload_manifest_save(o->write_manifest, &out->manifest, e);
        if (rc)
            goto out;
    }
    struct sw_fetch_opts fo = {.token = tok.value,
                               .dest = t.dest[0] ? t.dest : NULL,
                               .parallel = o->jobs,
                               .dry_run = o->dry_run,
                               .progress = o->progress,
                               .stop_on_signal = true,
                               .allow_unverified = o->allow_unverified,
                               .on_file = o->on_file,
                               .ud = o->ud};
    rc = sw_fetch_run(&out->manifest, &fo, &out->report, e);
    if (e)
        sw_redact(e->msg, tok.value);
    for (size_t i = 0; i < out->report.n_files; i++)
        sw_redact(out->report.files[i].msg, tok.value);
out:
    sw_fetch_token_clear(&tok);
    return rc;
}

void sw_fetch_payload_free(struct sw_fetch_payload *p)
{
    if (!p)
        return;
    sw_fetch_report_free(&p->report);
    sw_payload_manifest_free(&p->manifest);
    sw_fleet_free(p->fleet);
    memset(p, 0, sizeof(*p));
}

json_t *sw_fetch_payload_to_json(const struct sw_fetch_payload *p, const struct sw_err *err)
{
    json_t *out = sw_fetch_report_to_json(&p->report);
    if (!out || sw_json_set_str(out, "repo", p->manifest.repo) ||
        sw_json_set_str(out, "revision", p->manifest.revision) ||
        sw_json_set_str(out, "commit", p->manifest.commit) ||
        sw_json_set_str(out, "endpoint", p->endpoint) ||
        sw_json_set_bool(out, "dry_run", p->dry_run) ||
        (err && sw_json_set_new(out, "error", sw_err_to_json(err)))) {
        json_decref(out);
        return NULL;
    }
    return out;
}
