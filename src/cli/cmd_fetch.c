/*
 * slipway fetch ENDPOINT|DIR --verify-only [--fleet FLEET.yaml] [--manifest FILE] [--json]
 *                                          [--threads N] [--hash-all] [--write-manifest FILE]
 *                                          [--allow-unverified]
 * slipway fetch ENDPOINT|REPO [FLEET.yaml] [--revision R] [--include GLOB]... [--dest DIR]
 *               [--dry-run] [--jobs N] [--manifest FILE] [--write-manifest FILE]
 *               [--allow-unverified] [--json|--quiet]
 *
 * The payload of an endpoint (or a directory): what is on disk checked against its manifest
 * (sizes, sha256 re-hashed in parallel), every file's body sniffed (an HTML page, a git-lfs
 * pointer or a JSON error body saved as a shard), and the layout checked for completeness
 * (shards of the index, GGUF split sets, the projector, the draft, MTP heads declared vs shipped).
 *
 * Modes: the work is picked in one place (sw_cmd_fetch's dispatch on `mode`): MODE_VERIFY is
 * `--verify-only`; MODE_DOWNLOAD (the default) fetches from the Hub (HF_ENDPOINT): the manifest
 * from the Hub's headers (or the one kept beside the fleet), then the files, verified, into the
 * Hugging Face cache or --dest (payload/download.c says how). The token comes from HF_TOKEN or a
 * token file only (fetch.h): there is no flag for it, so it never sits in argv.
 *
 * ENDPOINT resolves through the fleet: the payload's path, its gguf/mmproj/draft, and the manifest
 * kept beside the fleet (FLEET.manifests/ENDPOINT.json) unless --manifest names one.
 * Exit: 0 everything checked is right, 1 a problem was found, 2 unusable input.
 */
#include "cli.h"

#include <slipway/fetch.h>
#include <slipway/fleet.h>
#include <slipway/payload.h>

#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum mode { MODE_NONE = 0, MODE_VERIFY, MODE_DOWNLOAD };

#define MAX_INCLUDE 64

struct opts {
    enum mode mode;
    const char *target;
    const char *fleet;
    const char *manifest;
    const char *write_manifest;
    bool json;
    bool hash_all;
    unsigned threads;
    /* download */
    const char *revision;
    const char *dest;
    const char *include[MAX_INCLUDE + 1];
    size_t n_include;
    bool dry_run;
    bool quiet;
    bool allow_unverified;
    unsigned jobs;
};

/* What the target resolved to. Strings live in `buf_*` or in the fleet. */
struct target {
    char root[4096];       /* payload directory */
    char manifest[4096];   /* "" when none */
    bool manifest_default; /* the fleet's default place: absence is not an error */
    const char *endpoint;  /* NULL for a directory */
    const char *gguf, *mmproj;
    bool vision;
    bool file_only;   /* payload.path names a file in a directory it may share with other models:
                       only the payload's own files are looked at, nothing is "unexpected" */
    char draft[4096]; /* a local draft model directory, "" when none */
};

static const struct sw_opt opts[] = {
    {"verify-only", 0, NULL, 0,
     "re-hash what is on disk against the manifest (in parallel), sniff every\n"
     "file's body and check the layout; download nothing",
     NULL},
    {"fleet", 0, "FLEET.yaml", 0, "the fleet ENDPOINT is in (default ./fleet.yaml)", NULL},
    {"manifest", 0, "FILE", 0,
     "the manifest (default for an ENDPOINT: FLEET.manifests/ENDPOINT.json)", NULL},
    {"write-manifest", 0, "FILE", 0, "pin what is on disk / fetched (sizes + sha256) as a manifest",
     NULL},
    {"hash-all", 0, NULL, 0,
     "(--verify-only) hash files the manifest has no hash for (still unverified:\n"
     "nothing to compare with; --write-manifest pins the hash), and unexpected ones",
     NULL},
    {"threads", 0, "N", 0, "(--verify-only) hashing threads, 1..256", NULL},
    {"revision", 'r', "R", 0,
     "branch, tag or commit (default: the payload's, else main); pinned to the\ncommit it "
     "resolves to",
     NULL},
    {"include", 0, "GLOB", SW_OPT_REPEAT,
     "only files matching this glob (default: the payload's files)", NULL},
    {"dest", 0, "DIR", 0,
     "a plain directory (default: the payload's path for an ENDPOINT, else the\n"
     "Hugging Face cache: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub)",
     "local-dir"},
    {"dry-run", 0, NULL, 0, "say what would be fetched (files present are hashed), fetch nothing",
     NULL},
    {"jobs", 'j', "N", 0, "files downloaded at once, 1..64 (default 4)", NULL},
    {"quiet", 'q', NULL, 0, "no progress; one line per file: STATE<TAB>PATH<TAB>SIZE<TAB>SHA256",
     NULL},
    {"allow-unverified", 0, NULL, 0,
     "accept a file the Hub (or, with --verify-only, the manifest) gives no sha256\n"
     "or git oid for: only its size and kind can be checked; reported \"unverified\"",
     NULL},
    {"token", 0, "TOKEN", SW_OPT_REFUSE,
     "a token on a command line is readable by every user of the host; set HF_TOKEN or use a "
     "token file (mode 600)",
     NULL},
    {0},
};

static const char *const examples[] = {
    "slipway fetch Qwen/Qwen3-0.6B-GGUF --include '*Q8_0.gguf' --dest models/",
    "slipway fetch frank-primary --fleet examples/operator.yaml --dry-run",
    "slipway fetch models/ --verify-only --write-manifest models.json",
    NULL,
};

const struct sw_cmd_spec sw_spec_fetch = {
    .name = "fetch",
    .summary = "download a payload from the Hub, verified and resumable; or --verify-only one",
    .synopsis = "ENDPOINT|DIR --verify-only [--fleet FLEET.yaml] [--manifest FILE] [--json]\n"
                "    [--threads N] [--hash-all] [--write-manifest FILE] [--allow-unverified]\n"
                "ENDPOINT|REPO [FLEET.yaml] [--revision R] [--include GLOB]... [--dest DIR]\n"
                "    [--dry-run] [--jobs N] [--manifest FILE] [--write-manifest FILE]\n"
                "    [--json | --quiet]",
    .about =
        "Download a payload from the Hub (HF_ENDPOINT, default https://huggingface.co): sizes\n"
        "and sha256 from the Hub's headers (or the manifest kept beside the fleet), several\n"
        "files at once, resumed after a cut, each renamed into place only when size and hash\n"
        "match. The token: HF_TOKEN, or a token file (HF_TOKEN_PATH, HF_HOME/token,\n"
        "~/.cache/huggingface/token) that only you can read. Never on the command line.\n"
        "Exit: 0 all ok, 1 a problem found, 2 unusable input.",
    .opts = opts,
    .max_args = 2,
    .examples = examples,
};

static int parse_args(int argc, char **argv, struct opts *o)
{
    struct sw_args a;
    int rc;
    memset(o, 0, sizeof(*o));
    if (!sw_args_parse(&sw_spec_fetch, argc, argv, &a, &rc))
        return rc == SW_EXIT_OK ? -1 : rc;
    o->json = a.json;
    o->mode = sw_args_flag(&a, "verify-only") ? MODE_VERIFY : MODE_NONE;
    o->hash_all = sw_args_flag(&a, "hash-all");
    o->dry_run = sw_args_flag(&a, "dry-run");
    o->quiet = sw_args_flag(&a, "quiet");
    o->allow_unverified = sw_args_flag(&a, "allow-unverified");
    o->fleet = sw_args_str(&a, "fleet");
    o->manifest = sw_args_str(&a, "manifest");
    o->write_manifest = sw_args_str(&a, "write-manifest");
    o->revision = sw_args_str(&a, "revision");
    o->dest = sw_args_str(&a, "dest");
    o->n_include = (size_t)sw_args_count(&a, "include");
    if (o->n_include > MAX_INCLUDE)
        return sw_args_usage(&a, "at most %d --include globs", MAX_INCLUDE);
    for (size_t i = 0; i < o->n_include; i++)
        o->include[i] = sw_args_nth(&a, "include", (int)i);
    const char *v = sw_args_str(&a, "jobs");
    uint64_t t;
    if (v && (sw_parse_u64(v, &t, NULL) || t < 1 || t > 64))
        return sw_args_usage(&a, "--jobs must be 1..64 (got %s)", v);
    o->jobs = v ? (unsigned)t : 0;
    v = sw_args_str(&a, "threads");
    if (v && (sw_parse_u64(v, &t, NULL) || t < 1 || t > 256))
        return sw_args_usage(&a, "--threads must be 1..256 (got %s)", v);
    o->threads = v ? (unsigned)t : 0;
    o->target = a.npos ? a.pos[0] : NULL;
    if (a.npos > 1) {
        const char *f = a.pos[1];
        if (o->fleet || (!strstr(f, ".yaml") && !strstr(f, ".yml")))
            return sw_args_usage(&a, "one ENDPOINT or DIR only (got %s and %s)", o->target, f);
        o->fleet = f; /* fetch ENDPOINT FLEET.yaml */
    }
    if (!o->target)
        return sw_args_usage(&a, "give an ENDPOINT, a REPO or a DIR");
    if (o->mode == MODE_NONE)
        o->mode = MODE_DOWNLOAD;
    if (o->json && o->quiet)
        return sw_args_usage(&a, "--json and --quiet are two machine-readable outputs: pick one");
    if (o->mode == MODE_VERIFY && (o->revision || o->dest || o->n_include || o->dry_run))
        return sw_args_usage(&a, "--verify-only takes no --revision/--dest/--include/--dry-run");
    return 0;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "~/x" on this host; a payload path is a path on the endpoint's host, and --verify-only runs
 * there. */
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

static int resolve(const struct opts *o, struct sw_fleet **fleet, struct target *t,
                   struct sw_err *e)
{
    memset(t, 0, sizeof(*t));
    if (!o->fleet && is_dir(o->target)) {
        snprintf(t->root, sizeof(t->root), "%s", o->target);
        if (o->manifest)
            snprintf(t->manifest, sizeof(t->manifest), "%s", o->manifest);
        return 0;
    }
    const char *fpath = o->fleet ? o->fleet : "fleet.yaml";
    int rc = sw_fleet_load(fpath, NULL, fleet, e);
    if (rc) {
        if (rc == SW_ENOENT && !o->fleet)
            sw_err_prefix(e,
                          "%s is neither a directory nor an endpoint of ./fleet.yaml: ", o->target);
        return rc;
    }
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(*fleet, o->target);
    if (!ep)
        return sw_err_at(e, SW_ENOENT, fpath, 0, 0, "no endpoint named %s", o->target);
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
    if (o->manifest) {
        snprintf(t->manifest, sizeof(t->manifest), "%s", o->manifest);
    } else {
        rc = sw_payload_manifest_default_path((*fleet)->path, ep->name, t->manifest,
                                              sizeof(t->manifest), e);
        if (rc)
            return rc;
        t->manifest_default = true;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * --verify-only
 */
struct bodies {
    char **path;
    struct sw_payload_sniff *s;
    size_t n;
};

static void bodies_free(struct bodies *b)
{
    for (size_t i = 0; i < b->n; i++)
        sw_free(b->path[i]);
    sw_free(b->path);
    sw_free(b->s);
    memset(b, 0, sizeof(*b));
}

/* Sniff every file that is there. Returns the count rejected, or a negative error. */
static int sniff_all(const char *root, const struct sw_verify_report *r,
                     const struct sw_payload_manifest *scan, struct bodies *b, struct sw_err *e)
{
    size_t n = r ? r->n_files : scan->n_files;
    int bad = 0;
    b->path = sw_calloc(n ? n : 1, sizeof(*b->path));
    b->s = sw_calloc(n ? n : 1, sizeof(*b->s));
    if (!b->path || !b->s)
        return sw_err_set(e, SW_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *rel = r ? r->files[i].path : scan->files[i].path;
        if (r &&
            (r->files[i].status == SW_VERIFY_MISSING || r->files[i].status == SW_VERIFY_UNREADABLE))
            continue;
        char full[8192];
        snprintf(full, sizeof(full), "%s/%s", root, rel);
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
        b->path[b->n] = sw_strdup(rel);
        if (!b->path[b->n])
            return sw_err_set(e, SW_ENOMEM, "out of memory");
        b->s[b->n++] = s;
        bad++;
    }
    return bad;
}

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

static json_t *bodies_json(const struct bodies *b)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < b->n; i++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) || sw_json_set_str(o, "path", b->path[i]) ||
            sw_json_set_str(o, "kind", sw_payload_ftype_name(b->s[i].ftype)) ||
            sw_json_set_str(o, "body", sw_payload_body_name(b->s[i].body)) ||
            sw_json_set_str(o, "message", b->s[i].msg)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static void print_report(const struct target *t, const struct sw_verify_report *r,
                         const struct sw_payload_manifest *scan, const struct bodies *b,
                         bool allow_unverified)
{
    char sz[32], want[32];
    if (t->endpoint)
        printf("payload %s (endpoint %s)\n", t->root, t->endpoint);
    else
        printf("payload %s\n", t->root);
    if (r) {
        printf("manifest %s\n", t->manifest);
        for (size_t i = 0; i < r->n_files; i++) {
            const struct sw_verify_file *f = &r->files[i];
            printf("  %-10s %s", f->unverified ? "unverified" : sw_verify_status_name(f->status),
                   f->path);
            switch (f->status) {
            case SW_VERIFY_WRONG_SIZE:
                printf(": %s on disk, manifest says %s", sw_fmt_count(f->size, sz, sizeof(sz)),
                       sw_fmt_count(f->want_size, want, sizeof(want)));
                break;
            case SW_VERIFY_WRONG_HASH:
                if (f->want_sha256[0])
                    printf(": sha256 %.16s..., manifest says %.16s...", f->sha256, f->want_sha256);
                else
                    printf(": git oid %.16s..., manifest says %.16s...", f->git_oid,
                           f->want_git_oid);
                break;
            case SW_VERIFY_UNREADABLE:
                printf(": %s", f->msg);
                break;
            case SW_VERIFY_UNEXPECTED:
                printf(" (%s, not in the manifest)", sw_fmt_bytes(f->size, sz, sizeof(sz)));
                break;
            case SW_VERIFY_OK:
                if (f->unverified)
                    printf(" (size only: no sha256 or git oid in the manifest%s)",
                           f->hashed ? "; its sha256 is hashed for --write-manifest" : "");
                break;
            default:
                break;
            }
            printf("\n");
        }
        char hb[32];
        printf("%zu ok, %zu unverified, %zu wrong size, %zu wrong hash, %zu missing, "
               "%zu unexpected, %zu unreadable; hashed %s in %.2f s on %u thread%s",
               r->count[SW_VERIFY_OK] - r->unverified, r->unverified,
               r->count[SW_VERIFY_WRONG_SIZE], r->count[SW_VERIFY_WRONG_HASH],
               r->count[SW_VERIFY_MISSING], r->count[SW_VERIFY_UNEXPECTED],
               r->count[SW_VERIFY_UNREADABLE], sw_fmt_bytes(r->bytes_hashed, hb, sizeof(hb)),
               r->seconds, r->threads, r->threads == 1 ? "" : "s");
        if (r->seconds > 0 && r->bytes_hashed)
            printf(" (%.0f MB/s)", (double)r->bytes_hashed / r->seconds / 1e6);
        printf("\n");
        if (r->unverified)
            printf("%zu unverified: no sha256 or git oid in the manifest to check %s against, only "
                   "size and kind%s\n",
                   r->unverified, r->unverified == 1 ? "it" : "them",
                   allow_unverified ? " (accepted: --allow-unverified)"
                                    : "; run with --allow-unverified to accept");
    } else {
        printf("no manifest: %zu files, sizes and hashes not checked against anything "
               "(pin them with --write-manifest)\n",
               scan->n_files);
    }
    for (size_t i = 0; i < b->n; i++)
        printf("  body %-11s %s: %s\n", sw_payload_body_name(b->s[i].body), b->path[i],
               b->s[i].msg);
}

static void print_layout(const char *what, const struct sw_payload_layout *l)
{
    char wb[32];
    printf("%s: %s, %zu weight file%s, %s, %llu tensors", what, sw_payload_format_name(l->format),
           l->n_weight_files, l->n_weight_files == 1 ? "" : "s",
           sw_fmt_bytes(l->weight_bytes, wb, sizeof(wb)), (unsigned long long)l->n_tensors);
    if (l->has_projector)
        printf(", vision");
    if (l->mtp.declared > 0 || l->mtp.tensors > 0)
        printf(", MTP: %lld declared, %llu tensors (%s)", (long long)l->mtp.declared,
               (unsigned long long)l->mtp.tensors,
               sw_payload_ships_mtp(&l->mtp) ? "shipped" : "NOT shipped");
    printf("\n");
    for (size_t i = 0; i < l->n_issues; i++)
        printf("  %-16s %s\n", sw_payload_issue_name(l->issues[i].kind), l->issues[i].msg);
}

/* The payload's own files when payload.path names one file (its GGUF, and the projector when it
 * lies beside it): a models directory shared with others is not scanned. */
static int scan_own_files(const struct target *t, bool hash, const struct sw_verify_opts *vo,
                          struct sw_payload_manifest *scan, struct sw_err *e)
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

static int run_verify(const struct opts *o, const struct target *t)
{
    struct sw_err e;
    struct sw_payload_manifest m, scan;
    struct sw_verify_report r;
    struct bodies b;
    struct progress_ctx pc;
    struct sw_payload_layout lay, dlay;
    json_t *out = NULL;
    bool have_manifest = false, problems = false, have_dlay = false;
    int rc, exit_code = SW_EXIT_OK;
    sw_err_clear(&e);
    sw_payload_manifest_init(&m);
    sw_payload_manifest_init(&scan);
    memset(&r, 0, sizeof(r));
    memset(&b, 0, sizeof(b));
    memset(&pc, 0, sizeof(pc));
    memset(&lay, 0, sizeof(lay));
    memset(&dlay, 0, sizeof(dlay));

    if (t->manifest[0]) {
        rc = sw_payload_manifest_load(t->manifest, &m, &e);
        if (rc == SW_ENOENT && t->manifest_default) {
            rc = 0; /* no manifest kept yet: body and layout checks still run */
        } else if (rc) {
            exit_code = sw_cli_fail(&e, o->json);
            goto out;
        } else {
            have_manifest = true;
        }
    }
    /* the manifest itself may live under the root: never "unexpected" */
    const char *ignore[2] = {NULL, NULL};
    size_t rl = strlen(t->root);
    if (have_manifest && !strncmp(t->manifest, t->root, rl) && t->manifest[rl] == '/')
        ignore[0] = t->manifest + rl + 1;
    struct sw_verify_opts vo = {.threads = o->threads,
                                .hash_all = o->hash_all || o->write_manifest,
                                .no_unexpected = t->file_only,
                                .ignore = ignore,
                                .progress = o->json ? NULL : on_progress,
                                .progress_ud = &pc};
    if (have_manifest) {
        rc = sw_payload_verify(t->root, &m, &vo, &r, &e);
        if (pc.started)
            sw_progress_finish(&pc.bar);
        if (rc) {
            exit_code = sw_cli_fail(&e, o->json);
            goto out;
        }
        problems |= !sw_verify_ok(&r) || (r.unverified && !o->allow_unverified);
    } else if (t->file_only) {
        rc = scan_own_files(t, o->hash_all || o->write_manifest, &vo, &scan, &e);
        if (pc.started)
            sw_progress_finish(&pc.bar);
        if (rc) {
            exit_code = sw_cli_fail(&e, o->json);
            goto out;
        }
    } else {
        rc = sw_payload_manifest_scan(t->root, o->hash_all || o->write_manifest, &vo, &scan, &e);
        if (pc.started)
            sw_progress_finish(&pc.bar);
        if (rc) {
            exit_code = sw_cli_fail(&e, o->json);
            goto out;
        }
    }
    rc = sniff_all(t->root, have_manifest ? &r : NULL, &scan, &b, &e);
    if (rc < 0) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    problems |= rc > 0;

    struct sw_payload_layout_opts lo = {.gguf = t->gguf, .mmproj = t->mmproj, .vision = t->vision};
    rc = sw_payload_layout_check(t->root, &lo, &lay, &e);
    if (rc) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    problems |= lay.n_issues > 0;
    if (t->draft[0]) {
        struct sw_payload_layout_opts dro = {.draft = true};
        rc = sw_payload_layout_check(t->draft, &dro, &dlay, &e);
        if (rc) {
            exit_code = sw_cli_fail(&e, o->json);
            goto out;
        }
        have_dlay = true;
        problems |= dlay.n_issues > 0;
    }

    if (o->write_manifest) {
        if (problems) {
            if (have_manifest && r.unverified && !o->allow_unverified)
                sw_err_set(&e, SW_EMISMATCH,
                           "not writing %s: %zu file%s unverified (no sha256 or git oid in the "
                           "manifest); run with --allow-unverified to pin %s as %s",
                           o->write_manifest, r.unverified, r.unverified == 1 ? " is" : "s are",
                           r.unverified == 1 ? "it" : "them",
                           r.unverified == 1 ? "it is" : "they are");
            else
                sw_err_set(&e, SW_EMISMATCH, "not writing %s: the payload has problems",
                           o->write_manifest);
            fprintf(stderr, "slipway: %s\n", e.msg);
        } else {
            struct sw_payload_manifest *src = have_manifest ? &m : &scan;
            if (have_manifest) /* the hashes just computed */
                for (size_t i = 0; i < r.n_files; i++) {
                    struct sw_payload_file *f = sw_payload_manifest_find(&m, r.files[i].path);
                    if (f && r.files[i].hashed)
                        memcpy(f->sha256, r.files[i].sha256, sizeof(f->sha256));
                }
            rc = sw_payload_manifest_save(o->write_manifest, src, &e);
            if (rc) {
                exit_code = sw_cli_fail(&e, o->json);
                goto out;
            }
        }
    }

    if (o->json) {
        out = json_object();
        if (!out || sw_json_set_str(out, "root", t->root) ||
            sw_json_set_str(out, "endpoint", t->endpoint) ||
            sw_json_set_str(out, "manifest", have_manifest ? t->manifest : NULL) ||
            sw_json_set_new(out, "verify",
                            have_manifest ? sw_verify_report_to_json(&r) : json_null()) ||
            sw_json_set_new(out, "bodies", bodies_json(&b)) ||
            (!have_manifest && sw_json_set_new(out, "files", sw_payload_manifest_to_json(&scan))) ||
            sw_json_set_new(out, "layout", sw_payload_layout_to_json(&lay)) ||
            (have_dlay && sw_json_set_new(out, "draft", sw_payload_layout_to_json(&dlay))) ||
            (have_manifest && sw_json_set_int(out, "unverified", (int64_t)r.unverified)) ||
            (have_manifest && sw_json_set_bool(out, "verified", r.unverified == 0)) ||
            sw_json_set_bool(out, "ok", !problems)) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            exit_code = sw_cli_fail(&e, false);
            goto out;
        }
        sw_json_print(stdout, out, true);
    } else {
        print_report(t, have_manifest ? &r : NULL, &scan, &b, o->allow_unverified);
        print_layout("layout", &lay);
        if (have_dlay)
            print_layout("draft", &dlay);
        printf("%s\n", problems ? "PROBLEMS FOUND" : "ok");
    }
    exit_code = problems ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    json_decref(out);
    sw_payload_layout_free(&dlay);
    sw_payload_layout_free(&lay);
    bodies_free(&b);
    sw_verify_report_free(&r);
    sw_payload_manifest_free(&scan);
    sw_payload_manifest_free(&m);
    return exit_code;
}

/* ---------------------------------------------------------------------------------------------
 * Download (the default mode)
 */

/* What to fetch: a repo at a revision, the include globs, where to, and a manifest to use. */
struct dl_target {
    const char *repo;
    const char *revision; /* NULL: the manifest's, else main */
    const char *const *include;
    char dest[4096];     /* "" : the HF cache */
    char manifest[4096]; /* "" : ask the Hub */
    bool manifest_default;
    const char *endpoint;
    const char *globs[MAX_INCLUDE + 1];
};

static int resolve_download(const struct opts *o, struct sw_fleet **fleet, struct dl_target *t,
                            struct sw_err *e)
{
    memset(t, 0, sizeof(*t));
    t->revision = o->revision;
    t->include = o->n_include ? o->include : NULL;
    if (o->dest)
        snprintf(t->dest, sizeof(t->dest), "%s", o->dest);
    if (o->manifest)
        snprintf(t->manifest, sizeof(t->manifest), "%s", o->manifest);
    if (strchr(o->target, '/')) {
        /* namespace/name: a Hub repository */
        t->repo = o->target;
        return 0;
    }
    const char *fpath = o->fleet ? o->fleet : "fleet.yaml";
    int rc = sw_fleet_load(fpath, NULL, fleet, e);
    if (rc) {
        if (rc == SW_ENOENT && !o->fleet)
            sw_err_prefix(e,
                          "%s is not namespace/name and there is no ./fleet.yaml to find it "
                          "in: ",
                          o->target);
        return rc;
    }
    const struct sw_fleet_endpoint *ep = sw_fleet_endpoint(*fleet, o->target);
    if (!ep)
        return sw_err_at(e, SW_ENOENT, fpath, 0, 0, "no endpoint named %s", o->target);
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
        size_t n = SW_MIN(p->n_files, (size_t)MAX_INCLUDE);
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
    if (!t->manifest[0]) {
        rc = sw_payload_manifest_default_path((*fleet)->path, ep->name, t->manifest,
                                              sizeof(t->manifest), e);
        if (rc)
            return rc;
        t->manifest_default = true;
    }
    return 0;
}

/* The manifest kept beside the fleet (or --manifest), narrowed to the include globs. 1 when
 * there is none at the default place. */
static int manifest_from_file(const struct dl_target *t, struct sw_payload_manifest *m,
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
        bool keep = !t->include;
        for (size_t k = 0; t->include && t->include[k] && !keep; k++)
            keep = fnmatch(t->include[k], f->path, 0) == 0;
        if (keep)
            rc = sw_payload_manifest_add(m, f->path, f->size_known ? (int64_t)f->size : -1,
                                         f->sha256, f->lfs, f->git_oid, NULL, e);
    }
    if (!rc && !m->n_files)
        rc = sw_err_at(e, SW_ENOENT, t->manifest, 0, 0,
                       "no file of the manifest matches the "
                       "--include globs");
out:
    sw_payload_manifest_free(&all);
    if (rc)
        sw_payload_manifest_free(m);
    return rc;
}

static void quiet_line(void *ud, const struct sw_fetch_result *r)
{
    (void)ud;
    char size[32] = "";
    if (r->file->size_known)
        snprintf(size, sizeof(size), "%llu", (unsigned long long)r->file->size);
    /* the sha256 of what is in place, or (failed, planned) the one expected */
    bool in_place = r->state == SW_FETCH_PRESENT || r->state == SW_FETCH_LINKED ||
                    r->state == SW_FETCH_DOWNLOADED;
    printf("%s\t%s\t%s\t%s\n", sw_fetch_state_name(r->state), r->file->path, size,
           in_place && r->sha256[0] ? r->sha256 : r->file->sha256);
    fflush(stdout);
}

static void print_download(const struct sw_payload_manifest *m, const struct sw_fetch_report *r,
                           bool dry)
{
    char a[32], b[32];
    printf("%s %s at %s -> commit %s: %zu files, %s, in %s\n", dry ? "plan" : "fetch", m->repo,
           m->revision ? m->revision : m->commit, m->commit, m->n_files,
           sw_fmt_bytes(r->bytes_total, a, sizeof(a)), r->dir);
    for (size_t i = 0; i < r->n_files; i++) {
        const struct sw_fetch_result *f = &r->files[i];
        printf("  %-10s %s", sw_fetch_state_name(f->state), f->file->path);
        if (f->file->size_known)
            printf("  %s", sw_fmt_bytes(f->file->size, a, sizeof(a)));
        if (f->had && f->state == SW_FETCH_DOWNLOADED && !f->range_ignored)
            printf("  (resumed from %s)", sw_fmt_bytes(f->had, b, sizeof(b)));
        else if (f->had && f->state == SW_FETCH_PLANNED)
            printf("  (%s already there: would resume)", sw_fmt_bytes(f->had, b, sizeof(b)));
        if (f->unverified)
            printf("  UNVERIFIED");
        if (f->msg[0] && f->state != SW_FETCH_FAILED)
            printf("  [%s]", f->msg);
        printf("\n");
    }
    printf("%zu present, %zu linked from the HF cache, %zu downloaded, %zu failed",
           r->count[SW_FETCH_PRESENT], r->count[SW_FETCH_LINKED], r->count[SW_FETCH_DOWNLOADED],
           r->count[SW_FETCH_FAILED]);
    if (dry)
        printf(", %zu to fetch: %s needed, %s free", r->count[SW_FETCH_PLANNED],
               sw_fmt_bytes(r->bytes_needed, a, sizeof(a)),
               sw_fmt_bytes(r->disk_free, b, sizeof(b)));
    else if (r->bytes_fetched)
        printf("; fetched %s in %.2f s (%.1f MB/s)", sw_fmt_bytes(r->bytes_fetched, a, sizeof(a)),
               r->seconds, r->seconds > 0 ? (double)r->bytes_fetched / r->seconds / 1e6 : 0.0);
    printf("\n");
    if (r->unverified)
        printf("%zu unverified: no sha256 or git oid from the Hub to check %s against, only size "
               "and kind%s\n",
               r->unverified, r->unverified == 1 ? "it" : "them",
               r->unverified_allowed ? " (accepted: --allow-unverified)" : "");
}

static int run_download(const struct opts *o)
{
    struct sw_err e;
    struct sw_fleet *fleet = NULL;
    struct dl_target t;
    struct sw_fetch_token tok;
    struct sw_payload_manifest m;
    struct sw_fetch_report rep;
    json_t *out = NULL;
    int rc, exit_code = SW_EXIT_OK;
    sw_err_clear(&e);
    memset(&tok, 0, sizeof(tok));
    memset(&rep, 0, sizeof(rep));
    sw_payload_manifest_init(&m);
    /* a file size limit must end in EFBIG (reported, resumable), not kill us mid-write */
    signal(SIGXFSZ, SIG_IGN);

    rc = resolve_download(o, &fleet, &t, &e);
    if (rc) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    rc = sw_fetch_token_load(&tok, &e);
    if (rc) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    rc = t.manifest[0] ? manifest_from_file(&t, &m, &e) : 1;
    if (rc < 0) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    if (rc == 1) {
        struct sw_hub_opts ho = {.token = tok.value, .include = t.include};
        rc = sw_hub_manifest(t.repo, t.revision, &ho, &m, &e);
        if (rc) {
            sw_redact(e.msg, tok.value);
            /* the Hub refused or moved: a failure found, not unusable input */
            exit_code = sw_cli_fail(&e, o->json);
            if (rc == SW_EHTTP || rc == SW_EMISMATCH || rc == SW_ENET)
                exit_code = SW_EXIT_FAIL;
            goto out;
        }
    }
    if (o->write_manifest) {
        rc = sw_payload_manifest_save(o->write_manifest, &m, &e);
        if (rc) {
            exit_code = sw_cli_fail(&e, o->json);
            goto out;
        }
    }
    struct sw_fetch_opts fo = {.token = tok.value,
                               .dest = t.dest[0] ? t.dest : NULL,
                               .parallel = o->jobs,
                               .dry_run = o->dry_run,
                               .progress = !o->json && !o->quiet,
                               .stop_on_signal = true,
                               .allow_unverified = o->allow_unverified,
                               .on_file = o->quiet ? quiet_line : NULL};
    rc = sw_fetch_run(&m, &fo, &rep, &e);
    sw_redact(e.msg, tok.value);
    for (size_t i = 0; i < rep.n_files; i++)
        sw_redact(rep.files[i].msg, tok.value);
    if (rc && !rep.n_files) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    if (o->json) {
        out = sw_fetch_report_to_json(&rep);
        if (!out || sw_json_set_str(out, "repo", m.repo) ||
            sw_json_set_str(out, "revision", m.revision) ||
            sw_json_set_str(out, "commit", m.commit) ||
            sw_json_set_str(out, "endpoint", t.endpoint) ||
            sw_json_set_bool(out, "dry_run", o->dry_run) ||
            (rc && sw_json_set_new(out, "error", sw_err_to_json(&e)))) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            exit_code = sw_cli_fail(&e, false);
            goto out;
        }
        sw_json_print(stdout, out, true);
    } else if (!o->quiet) {
        print_download(&m, &rep, o->dry_run);
    }
    if (rc) {
        /* every failed file, on stderr, with what to do */
        if (!o->json)
            for (size_t i = 0; i < rep.n_files; i++)
                if (rep.files[i].state == SW_FETCH_FAILED)
                    fprintf(stderr, "slipway: fetch failed: %s\n", rep.files[i].msg);
        if (!o->json && !rep.count[SW_FETCH_FAILED])
            fprintf(stderr, "slipway: fetch failed: %s\n", e.msg); /* unverified, in place */
        exit_code =
            sw_cli_exit_for(rc) == SW_EXIT_USAGE && rc != SW_EIO ? SW_EXIT_USAGE : SW_EXIT_FAIL;
        if (rep.count[SW_FETCH_FAILED])
            exit_code = SW_EXIT_FAIL;
    }
out:
    json_decref(out);
    sw_fetch_report_free(&rep);
    sw_payload_manifest_free(&m);
    sw_fetch_token_clear(&tok);
    sw_fleet_free(fleet);
    return exit_code;
}

int sw_cmd_fetch(int argc, char **argv)
{
    struct opts o;
    struct sw_err e;
    struct sw_fleet *fleet = NULL;
    struct target t;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? SW_EXIT_OK : rc;
    sw_err_clear(&e);
    if (o.mode == MODE_DOWNLOAD) {
        rc = run_download(&o);
        goto out;
    }
    rc = resolve(&o, &fleet, &t, &e);
    if (rc) {
        rc = sw_cli_fail(&e, o.json);
        goto out;
    }
    switch (o.mode) {
    case MODE_VERIFY:
        rc = run_verify(&o, &t);
        break;
    case MODE_NONE:
    case MODE_DOWNLOAD:
    default:
        rc = sw_cli_usage("fetch", "no mode");
        break;
    }
out:
    sw_fleet_free(fleet);
    return rc;
}
