/*
 * payload/hub: a payload's manifest from the Hub's own answers.
 *
 * The file list comes from GET /api/models/{repo}/revision/{rev} ("sha": the commit, "siblings":
 * [{"rfilename"}]). Then each file gets a HEAD on /{repo}/resolve/{rev}/{file} WITHOUT following
 * the redirect: the Hub answers an LFS file with a 302 to its CDN whose own headers carry
 * X-Linked-Size and X-Linked-Etag (the LFS oid, i.e. the sha256 of the bytes), and a regular file
 * with a 200 whose ETag is the git blob sha1 and Content-Length its size; both carry
 * X-Repo-Commit (huggingface_hub reads the same headers: file_download.py get_hf_file_metadata).
 * The HEADs run in parallel on one net loop.
 *
 * An ETag is used only when it is a sha256 (64 hex) or a git oid (40 hex), and then only as that
 * hash; any other value (an S3 "<md5>-<parts>", path characters) is dropped with a warning and
 * the file is unverified (download.c).
 *
 * Pinning: the commit the API named (or the first X-Repo-Commit seen) is the pin; a HEAD that
 * reports another commit means the branch moved while we listed it, and the manifest is refused
 * (downloads then use the pinned commit in their URLs, so the bytes cannot move under them).
 *
 * What it does not do: follow the Hub's 307 for a renamed repository (the message says to use the
 * new name), xet-backed files (X-Xet-Hash is ignored; their X-Linked-* headers are read as usual),
 * pagination of /tree (siblings lists every file).
 */
#include <slipway/fetch.h>
#include <slipway/net.h>

#include <stdlib.h>
#include <string.h>

#include "payload/payload_internal.h"

#define API_MAX (32u << 20) /* siblings of a 100k-file repo fit */

const char *sw_hub_endpoint(void)
{
    static _Thread_local char buf[1024];
    const char *v = getenv("HF_ENDPOINT");
    if (!v || !*v)
        return "https://huggingface.co";
    snprintf(buf, sizeof(buf), "%s", v);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '/')
        buf[--n] = '\0';
    return buf;
}

static int enc(struct sw_buf *b, const char *s, bool keep_slash)
{
    static const char hexd[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        unsigned char c = *p;
        bool un = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
        if (un) {
            rc = sw_buf_putc(b, (char)c);
        } else {
            char t[3] = {'%', hexd[c >> 4], hexd[c & 15]};
            rc = sw_buf_append(b, t, 3);
        }
    }
    return rc;
}

int sw_hub_resolve_url(const char *endpoint, const char *repo, const char *rev, const char *path,
                       char *out, size_t n)
{
    struct sw_buf b;
    sw_buf_init(&b, n ? n - 1 : 0);
    int rc = sw_buf_printf(&b, "%s/", endpoint);
    if (!rc)
        rc = enc(&b, repo, true);
    if (!rc)
        rc = sw_buf_puts(&b, "/resolve/");
    if (!rc)
        rc = enc(&b, rev, false);
    if (!rc)
        rc = sw_buf_putc(&b, '/');
    if (!rc)
        rc = enc(&b, path, true);
    if (!rc)
        snprintf(out, n, "%s", sw_buf_cstr(&b));
    sw_buf_free(&b);
    return rc; /* SW_ERANGE past n - 1 bytes, SW_ENOMEM when the buffer could not grow */
}

/* "W/\"abc\"" -> "abc" */
static void etag_norm(const char *v, char *out, size_t n)
{
    out[0] = '\0';
    if (!v)
        return;
    if (!strncmp(v, "W/", 2))
        v += 2;
    size_t l = strlen(v);
    if (l >= 2 && v[0] == '"' && v[l - 1] == '"') {
        v++;
        l -= 2;
    }
    snprintf(out, n, "%.*s", (int)l, v);
}

/* A refusal, in words the operator can act on. */
static int status_err(struct sw_err *e, long status, const char *what, const char *xmsg, bool token)
{
    const char *hint = "";
    if (status == 401 || status == 403)
        hint = token ? ": the token was refused (gated repository not accepted, or no access?)"
                     : ": the repository is gated or private; set HF_TOKEN or put a token in "
                       "~/.cache/huggingface/token (mode 600)";
    else if (status == 404)
        hint = ": no such repository, revision or file";
    return sw_err_set(e, SW_EHTTP, "HTTP %ld for %s%s%s%s", status, what, hint,
                      xmsg ? " (Hub: " : "", xmsg ? xmsg : "");
}

struct head {
    struct sw_net_xfer x;
    char *path;
    char url[4096];
    bool started;
};

/* One sw_hub_manifest: what was asked, the HEADs in flight, and the commit pinned so far. */
struct listing {
    const char *repo, *rev, *ep, *tok;
    const struct sw_hub_opts *o;
    struct sw_net_loop *loop;
    struct head *h;
    size_t n, next, running, parallel;
    int start_rc;
    struct sw_err start_err;
    char commit[41];       /* the pin, "" until the first commit is seen */
    char first_from[1100]; /* where the pin came from: "the file list" or a file */
};

static void head_done(void *ud, struct sw_net_xfer *x);

static void start_more(struct listing *L)
{
    while (L->running < L->parallel && L->next < L->n && !L->start_rc) {
        struct head *h = &L->h[L->next++];
        h->x.req.on_done = head_done;
        h->x.req.ud = L;
        int rc = sw_net_start(L->loop, &h->x, &L->start_err);
        if (rc) {
            L->start_rc = rc;
            return;
        }
        h->started = true;
        L->running++;
    }
}

static void head_done(void *ud, struct sw_net_xfer *x)
{
    struct listing *L = ud;
    L->running--;
    start_more(L);
}

/* GET /api/models/{repo}/revision/{rev}: the model info (*info, a new reference), or the Hub's
 * refusal in words. */
static int model_info(struct listing *L, json_t **info, struct sw_err *e)
{
    struct sw_net_resp r = {0};
    struct sw_buf url;
    sw_buf_init(&url, 8192);
    *info = NULL;
    int rc = sw_buf_printf(&url, "%s/api/models/", L->ep);
    if (!rc)
        rc = enc(&url, L->repo, true);
    if (!rc)
        rc = sw_buf_puts(&url, "/revision/");
    if (!rc)
        rc = enc(&url, L->rev, false);
    if (rc) {
        rc = sw_err_set(e, SW_ERANGE, "the API URL for %s is too long", L->repo);
        goto out;
    }
    struct sw_net_req q = {.url = sw_buf_cstr(&url),
                           .bearer = L->tok,
                           .body_max = API_MAX,
                           .idle_ms = 60000,
                           .total_ms = 300000};
    rc = sw_net_request(L->loop, &q, &r, e);
    if (rc)
        goto out;
    if (r.status != 200) {
        const char *msg = NULL;
        json_t *ej = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
        if (json_is_object(ej) && json_is_string(json_object_get(ej, "error")))
            msg = json_string_value(json_object_get(ej, "error"));
        char what[600];
        snprintf(what, sizeof(what), "the file list of %s at %s", L->repo, L->rev);
        rc = status_err(e, r.status, what, msg ? msg : sw_net_resp_header(&r, "x-error-message"),
                        L->tok != NULL);
        json_decref(ej);
        goto out;
    }
    *info = sw_json_parse(r.body.data ? r.body.data : "", r.body.len, "the Hub's model info", e);
    if (!*info)
        rc = e ? e->code : SW_EPARSE;
out:
    sw_net_resp_free(&r);
    sw_buf_free(&url);
    return rc;
}

/* The files of the model info ("siblings") that the include globs keep, each with its HEAD
 * request made ready; the commit it names ("sha") is the first pin. */
static int list_files(struct listing *L, const json_t *info, struct sw_err *e)
{
    json_t *sha = json_object_get(info, "sha");
    json_t *sib = json_object_get(info, "siblings");
    if (!json_is_array(sib))
        return sw_err_set(e, SW_EPARSE,
                          "%s: the model info has no \"siblings\" list (is %s a Hub?)", L->repo,
                          L->ep);
    if (json_is_string(sha) && sw__payload_hex_ok(json_string_value(sha), 40)) {
        snprintf(L->commit, sizeof(L->commit), "%s", json_string_value(sha));
        snprintf(L->first_from, sizeof(L->first_from), "the file list");
    }
    size_t n = json_array_size(sib);
    L->h = sw_calloc(n ? n : 1, sizeof(*L->h));
    if (!L->h)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *p = json_string_value(json_object_get(json_array_get(sib, i), "rfilename"));
        if (!p)
            return sw_err_set(e, SW_EPARSE, "siblings[%zu] has no rfilename", i);
        if (!sw_payload_path_ok(p))
            return sw_err_set(e, SW_EPARSE, "the Hub lists an unsafe file name \"%s\"", p);
        if (!sw__payload_included(p, L->o->include))
            continue;
        struct head *h = &L->h[L->n++];
        sw_net_xfer_init(&h->x);
        h->path = sw_strdup(p);
        if (!h->path)
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        int rc = sw_hub_resolve_url(L->ep, L->repo, L->rev, p, h->url, sizeof(h->url));
        if (rc)
            return sw_err_set(e, rc,
                              rc == SW_ENOMEM ? "out of memory" : "the URL of %s is too long", p);
        h->x.req.method = "HEAD";
        h->x.req.url = h->url;
        h->x.req.bearer = L->tok;
        h->x.req.max_redirects = 0; /* the redirect carries X-Linked-*: read it, not its target */
        h->x.req.idle_ms = 60000;
        h->x.req.total_ms = 120000;
    }
    if (!L->n)
        return sw_err_set(e, SW_ENOENT, "%s at %s: no file matches the --include globs (%zu files)",
                          L->repo, L->rev, n);
    return 0;
}

/* Every HEAD, o->parallel (8) at once. */
static int run_heads(struct listing *L, struct sw_err *e)
{
    L->parallel = L->o->parallel ? L->o->parallel : 8;
    start_more(L);
    while (sw_net_loop_active(L->loop) > 0)
        sw_net_loop_run(L->loop);
    if (L->start_rc && e)
        *e = L->start_err;
    return L->start_rc;
}

/* A HEAD's X-Repo-Commit against the pin: the first one seen pins, another one means the
 * revision moved while it was being listed. */
static int pin_commit(struct listing *L, const struct head *h, struct sw_err *e)
{
    const char *xc = sw_net_resp_header(&h->x.resp, "x-repo-commit");
    if (!xc)
        return 0;
    if (!sw__payload_hex_ok(xc, 40))
        return sw_err_set(e, SW_EPARSE, "%s: X-Repo-Commit \"%.60s\" is not a commit", h->path, xc);
    if (!L->commit[0]) {
        snprintf(L->commit, sizeof(L->commit), "%s", xc);
        snprintf(L->first_from, sizeof(L->first_from), "%s", h->path);
    } else if (strcasecmp(L->commit, xc) != 0) {
        return sw_err_set(e, SW_EMISMATCH,
                          "revision '%s' of %s moved during the fetch: %s resolved to commit %s, "
                          "then %s resolved to %s. Nothing was downloaded. Run again with "
                          "--revision %s to fetch the commit first seen, or again as is to fetch "
                          "the new one",
                          L->rev, L->repo, L->first_from, L->commit, h->path, xc, L->commit);
    }
    return 0;
}

/* The file a HEAD describes, added to out: its size (X-Linked-Size of a redirect, else
 * Content-Length) and its hash (the LFS sha256, or the git oid of a regular file's ETag; an ETag
 * that is neither leaves the file unverified). */
static int add_file(struct listing *L, const struct head *h, struct sw_payload_manifest *out,
                    struct sw_err *e)
{
    const struct sw_net_resp *hr = &h->x.resp;
    char what[1200];
    snprintf(what, sizeof(what), "%s (%s at %s)", h->path, L->repo, L->rev);
    if (hr->rc)
        return sw_err_set(e, hr->rc, "HEAD %s: %s", h->path, hr->err.msg);
    if (hr->status >= 400)
        return status_err(e, hr->status, what, sw_net_resp_header(hr, "x-error-message"),
                          L->tok != NULL);
    int rc = pin_commit(L, h, e);
    if (rc)
        return rc;
    char etag[200], linked[200];
    etag_norm(sw_net_resp_header(hr, "etag"), etag, sizeof(etag));
    etag_norm(sw_net_resp_header(hr, "x-linked-etag"), linked, sizeof(linked));
    const char *lsize = sw_net_resp_header(hr, "x-linked-size");
    uint64_t size = 0;
    struct sw_err pe;
    if (hr->status >= 300 && hr->status < 400 && !lsize) {
        const char *loc = sw_net_resp_header(hr, "location");
        return sw_err_set(e, SW_EUNSUPPORTED,
                          "%s: the Hub redirected to %s without X-Linked-Size (a renamed "
                          "repository? use its new name)",
                          what, loc ? loc : "?");
    }
    const char *sz = lsize ? lsize : sw_net_resp_header(hr, "content-length");
    if (!sz || sw_parse_u64(sz, &size, &pe))
        return sw_err_set(e, SW_EPARSE, "%s: no usable size (X-Linked-Size / Content-Length)",
                          what);
    const char *sha256 = NULL, *oid = NULL;
    bool lfs = false;
    if (linked[0] && sw__payload_hex_ok(linked, 64)) {
        sha256 = linked;
        lfs = true;
    } else if (!linked[0] && sw__payload_hex_ok(etag, 40)) {
        oid = etag;
    } else if (!linked[0] && sw__payload_hex_ok(etag, 64)) {
        sha256 = etag;
        lfs = true;
    }
    if (!sha256 && !oid) {
        /* kept out of the manifest (and so out of every path): the file is unverified */
        const char *raw = linked[0] ? linked : etag;
        char qe[200];
        sw_payload_quote(raw, strlen(raw), 80, qe, sizeof(qe));
        sw_log(SW_LOG_WARN,
               "%s: the Hub's %s %s is neither a sha256 nor a git oid: nothing can verify its "
               "bytes (unverified)",
               h->path, linked[0] ? "X-Linked-Etag" : "ETag", raw[0] ? qe : "(none)");
    }
    return sw_payload_manifest_add(out, h->path, (int64_t)size, sha256, lfs, oid, NULL, e);
}

int sw_hub_manifest(const char *repo, const char *revision, const struct sw_hub_opts *o,
                    struct sw_payload_manifest *out, struct sw_err *e)
{
    int rc = 0;
    struct sw_hub_opts def = {0};
    struct sw_net_loop own;
    bool own_loop = false;
    json_t *info = NULL;
    struct listing L;
    memset(&L, 0, sizeof(L));
    L.o = o ? o : &def;
    L.repo = repo;
    L.rev = revision && *revision ? revision : "main";
    L.ep = L.o->endpoint ? L.o->endpoint : sw_hub_endpoint();
    L.tok = L.o->token && *L.o->token ? L.o->token : NULL;
    L.loop = L.o->loop;
    sw_payload_manifest_init(out);

    if (!strchr(repo, '/') || strchr(strchr(repo, '/') + 1, '/')) {
        rc = sw_err_set(e, SW_EINVAL, "repo '%s' is not of the form namespace/name", repo);
        goto out;
    }
    if (!L.loop) {
        rc = sw_net_loop_init(&own, NULL, e);
        if (rc)
            goto out;
        own_loop = true;
        L.loop = &own;
    }
    rc = model_info(&L, &info, e);
    if (rc)
        goto out;
    rc = list_files(&L, info, e);
    if (rc)
        goto out;
    rc = run_heads(&L, e);
    if (rc)
        goto out;
    rc = sw_payload_manifest_set(out, repo, L.rev, NULL, e);
    for (size_t i = 0; !rc && i < L.n; i++)
        rc = add_file(&L, &L.h[i], out, e);
    if (rc)
        goto out;
    if (!L.commit[0]) {
        rc = sw_err_set(e, SW_EPARSE,
                        "%s at %s: the Hub named no commit (no \"sha\", no "
                        "X-Repo-Commit): cannot pin the revision",
                        repo, L.rev);
        goto out;
    }
    rc = sw_payload_manifest_set(out, repo, L.rev, L.commit, e);
out:
    for (size_t i = 0; i < L.n; i++) {
        sw_free(L.h[i].path);
        sw_net_xfer_close(&L.h[i].x);
    }
    sw_free(L.h);
    json_decref(info);
    if (own_loop)
        sw_net_loop_close(&own);
    if (rc)
        sw_payload_manifest_free(out);
    if (rc && e && L.tok)
        sw_redact(e->msg, L.tok);
    return rc;
}
