/*
 * payload/target: where a payload is, from what `slipway fetch` was given: a directory, a Hub
 * repository (namespace/name), or an ENDPOINT of a fleet file, whose payload section names the
 * rest (payload.path, gguf, mmproj, draft, repo, revision, files) and beside which its manifest
 * is kept (FLEET.manifests/ENDPOINT.json).
 *
 * Two readings of one endpoint: sw__payload_target_local, the files on this host to check
 * (check.c), and sw__payload_target_hub, what to fetch from the Hub and where to (fetch.c). A
 * payload path is a path on the endpoint's host: "~/" is expanded with this host's HOME, since
 * both run on the host that keeps the files.
 *
 * What it does not do: read the payload (check.c, download*.c), or reach another host (an
 * endpoint on an ssh host is refused for a download: fetch runs where the files are kept).
 */
#include <slipway/fleet.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "payload/payload_internal.h"

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "~/x" on this host; a payload path is a path on the endpoint's host, and fetch runs there. */
static int expand(const char *p, char *out, size_t n, const struct sw_fleet_at *at,
                  struct sw_err *e)
{
    int w;
    if (p[0] == '~' && (p[1] == '/' || !p[1])) {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/')
            return sw_fleet_err_at(e, SW_EINVAL, at, "%s: HOME is not set to expand ~", p);
        w = snprintf(out, n, "%s%s", home, p + 1);
    } else {
        w = snprintf(out, n, "%s", p);
    }
    if (w < 0 || (size_t)w >= n)
        return sw_fleet_err_at(e, SW_ERANGE, at, "path too long");
    return 0;
}

/* The endpoint named target in the fleet file (NULL: ./fleet.yaml, and then a missing file is
 * said as "TARGET <why>: ..."). */
static int endpoint_of(const char *target, const char *fleet_path, const char *why,
                       struct sw_fleet **fleet, const struct sw_fleet_endpoint **ep,
                       struct sw_err *e)
{
    const char *fpath = fleet_path ? fleet_path : "fleet.yaml";
    int rc = sw_fleet_load(fpath, NULL, fleet, e);
    if (rc) {
        if (rc == SW_ENOENT && !fleet_path)
            sw_err_prefix(e, "%s %s: ", target, why);
        return rc;
    }
    *ep = sw_fleet_endpoint(*fleet, target);
    if (!*ep)
        return sw_err_at(e, SW_ENOENT, fpath, 0, 0, "no endpoint named %s", target);
    return 0;
}

/* The manifest: the one named, else the endpoint's beside its fleet (*dflt: its absence is no
 * error). */
static int manifest_of(const char *named, const struct sw_fleet *fleet,
                       const struct sw_fleet_endpoint *ep, char *out, size_t n, bool *dflt,
                       struct sw_err *e)
{
    if (named) {
        snprintf(out, n, "%s", named);
        return 0;
    }
    int rc = sw_payload_manifest_default_path(fleet->path, ep->name, out, n, e);
    if (rc)
        return rc;
    *dflt = true;
    return 0;
}

int sw__payload_target_local(const char *target, const char *fleet_path, const char *manifest,
                             struct sw_fleet **fleet, struct sw_payload_target *t, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = NULL;
    memset(t, 0, sizeof(*t));
    if (!fleet_path && is_dir(target)) {
        snprintf(t->root, sizeof(t->root), "%s", target);
        if (manifest)
            snprintf(t->manifest, sizeof(t->manifest), "%s", manifest);
        return 0;
    }
    int rc = endpoint_of(target, fleet_path,
                         "is neither a directory nor an endpoint of ./fleet.yaml", fleet, &ep, e);
    if (rc)
        return rc;
    const struct sw_fleet_payload *p = &ep->payload;
    t->endpoint = ep->name;
    if (!p->path.v)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->at,
                               "endpoint %s has no payload.path to verify (a repo-only payload "
                               "is verified where it was downloaded)",
                               ep->name);
    rc = expand(p->path.v, t->root, sizeof(t->root), &p->path.at, e);
    if (rc)
        return rc;
    if (!is_dir(t->root)) {
        /* payload.path may name the model file itself (a GGUF): check its directory */
        char *slash = strrchr(t->root, '/');
        const char *base = strrchr(p->path.v, '/');
        if (slash && slash != t->root && base) {
            t->gguf = base + 1;
            t->file_only = true;
            *slash = '\0';
        }
        if (!is_dir(t->root))
            return sw_fleet_err_at(e, SW_ENOENT, &p->path.at, "payload path %s does not exist",
                                   p->path.v);
    }
    if (p->gguf.v)
        t->gguf = p->gguf.v;
    if (p->mmproj.v && !p->mmproj.off) {
        t->mmproj = p->mmproj.v;
        t->vision = true;
    }
    if (p->draft.v && (p->draft.v[0] == '/' || p->draft.v[0] == '~')) {
        rc = expand(p->draft.v, t->draft, sizeof(t->draft), &p->draft.at, e);
        if (rc)
            return rc;
    }
    return manifest_of(manifest, *fleet, ep, t->manifest, sizeof(t->manifest), &t->manifest_default,
                       e);
}

int sw__payload_target_hub(const struct sw_fetch_payload_opts *o, struct sw_fleet **fleet,
                           struct sw__fetch_target *t, struct sw_err *e)
{
    const struct sw_fleet_endpoint *ep = NULL;
    memset(t, 0, sizeof(*t));
    t->revision = o->revision;
    t->include = o->include && o->include[0] ? o->include : NULL;
    if (o->dest)
        snprintf(t->dest, sizeof(t->dest), "%s", o->dest);
    if (o->manifest)
        snprintf(t->manifest, sizeof(t->manifest), "%s", o->manifest);
    if (strchr(o->target, '/')) {
        /* namespace/name: a Hub repository */
        t->repo = o->target;
        return 0;
    }
    int rc = endpoint_of(o->target, o->fleet,
                         "is not namespace/name and there is no ./fleet.yaml to find it in", fleet,
                         &ep, e);
    if (rc)
        return rc;
    const struct sw_fleet_payload *p = &ep->payload;
    t->endpoint = ep->name;
    if (!p->repo.v)
        return sw_fleet_err_at(e, SW_EUNSUPPORTED, &ep->at,
                               "endpoint %s has no payload.repo: nothing to fetch from the Hub",
                               ep->name);
    t->repo = p->repo.v;
    if (!t->revision && p->revision.v)
        t->revision = p->revision.v;
    if (!t->include && p->n_files) {
        size_t n = SW_MIN(p->n_files, (size_t)SW_FETCH_MAX_INCLUDE);
        for (size_t i = 0; i < n; i++)
            t->globs[i] = p->files[i].v;
        t->globs[n] = NULL;
        t->include = t->globs;
    }
    if (!t->dest[0] && p->path.v) {
        if (ep->host && ep->host->transport != SW_FLEET_LOCAL)
            return sw_fleet_err_at(e, SW_EUNSUPPORTED, &p->path.at,
                                   "the payload of %s lives on host %s (ssh): run slipway fetch "
                                   "there, or give --dest",
                                   ep->name, ep->host->name);
        rc = expand(p->path.v, t->dest, sizeof(t->dest), &p->path.at, e);
        if (rc)
            return rc;
    }
    if (t->manifest[0])
        return 0;
    return manifest_of(NULL, *fleet, ep, t->manifest, sizeof(t->manifest), &t->manifest_default, e);
}
