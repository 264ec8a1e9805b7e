/*
 * slipway fetch ENDPOINT|DIR --verify-only [--fleet FILE] [--manifest FILE] [--json]
 *                                          [--threads N] [--hash-all] [--write-manifest FILE]
 *                                          [--allow-unverified]
 * slipway fetch ENDPOINT|REPO [--fleet FILE] [--revision R] [--include GLOB]... [--dest DIR]
 *               [--dry-run] [--jobs N] [--manifest FILE] [--write-manifest FILE]
 *               [--allow-unverified] [--json|--quiet]
 *
 * The payload of an endpoint (or a directory): what is on disk checked against its manifest
 * (sizes, sha256 re-hashed in parallel), every file's body sniffed (an HTML page, a git-lfs
 * pointer or a JSON error body saved as a shard), and the layout checked for completeness
 * (shards of the index, GGUF split sets, the projector, the draft, MTP heads declared vs shipped).
 *
 * Modes: the work is picked in one place (sw_cmd_fetch's dispatch on `mode`): MODE_VERIFY is
 * `--verify-only`, one call of sw_payload_check (payload/check.c); MODE_DOWNLOAD (the default)
 * fetches from the Hub (HF_ENDPOINT), one call of sw_fetch_payload (payload/fetch.c): the manifest
 * from the Hub's headers (or the one kept beside the fleet), then the files, verified, into the
 * Hugging Face cache or --dest (payload/download.c says how). The token comes from HF_TOKEN or a
 * token file only (fetch.h): there is no flag for it, so it never sits in argv.
 *
 * ENDPOINT resolves through the fleet (payload/target.c): the payload's path, its
 * gguf/mmproj/draft, and the manifest kept beside the fleet (FLEET.manifests/ENDPOINT.json) unless
 * --manifest names one. This file reads the options, makes the one call and prints what it found.
 * Exit: 0 everything checked is right, 1 a problem was found, 2 unusable input.
 */
#include "cli.h"

#include <slipway/fetch.h>
#include <slipway/fleet.h>
#include <slipway/payload.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum mode { MODE_NONE = 0, MODE_VERIFY, MODE_DOWNLOAD };

#define MAX_INCLUDE SW_FETCH_MAX_INCLUDE

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

static const struct sw_opt opts[] = {
    {"verify-only", 0, NULL, 0,
     "re-hash what is on disk against the manifest (in parallel), sniff every\n"
     "file's body and check the layout; download nothing",
     NULL},
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
    .synopsis = "ENDPOINT|DIR --verify-only [--fleet FILE] [--manifest FILE] [--json]\n"
                "    [--threads N] [--hash-all] [--write-manifest FILE] [--allow-unverified]\n"
                "ENDPOINT|REPO [--fleet FILE] [--revision R] [--include GLOB]... [--dest DIR]\n"
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
    .max_args = 1,
    .examples = examples,
    .fleet = true,
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
    /* ENDPOINT, REPO or DIR: the library tells them apart, so the fleet is not required here;
     * --fleet, else $SLIPWAY_FLEET, else (NULL) ./fleet.yaml when it is there */
    o->fleet = a.fleet;
    if (!o->fleet && getenv(SW_CLI_FLEET_ENV_VAR) && *getenv(SW_CLI_FLEET_ENV_VAR))
        o->fleet = getenv(SW_CLI_FLEET_ENV_VAR);
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
    if (o->target && sw_fleet_is_file_name(o->target))
        return sw_args_usage(&a, "'%s' is a fleet file: did you mean --fleet %s?", o->target,
                             o->target);
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

/* ---------------------------------------------------------------------------------------------
 * --verify-only
 */
static void print_report(const struct sw_payload_check *c, bool allow_unverified)
{
    const struct sw_payload_target *t = &c->target;
    const struct sw_verify_report *r = &c->verify;
    char sz[32], want[32];
    if (t->endpoint)
        printf("payload %s (endpoint %s)\n", t->root, t->endpoint);
    else
        printf("payload %s\n", t->root);
    if (c->have_manifest) {
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
               c->files.n_files);
    }
    for (size_t i = 0; i < c->n_bodies; i++)
        printf("  body %-11s %s: %s\n", sw_payload_body_name(c->bodies[i].sniff.body),
               c->bodies[i].path, c->bodies[i].sniff.msg);
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

static int run_verify(const struct opts *o)
{
    struct sw_payload_check_opts co = {.target = o->target,
                                       .fleet = o->fleet,
                                       .manifest = o->manifest,
                                       .write_manifest = o->write_manifest,
                                       .hash_all = o->hash_all,
                                       .allow_unverified = o->allow_unverified,
                                       .threads = o->threads,
                                       .progress = !o->json};
    struct sw_payload_check c;
    struct sw_err e;
    json_t *out = NULL;
    int exit_code;
    sw_err_clear(&e);
    if (sw_payload_check(&co, &c, &e)) {
        exit_code = sw_cli_fail(&e, o->json);
        goto out;
    }
    if (c.not_written[0])
        fprintf(stderr, "slipway: %s\n", c.not_written);
    if (o->json) {
        out = sw_payload_check_to_json(&c);
        if (!out) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            exit_code = sw_cli_fail(&e, false);
            goto out;
        }
        sw_json_print(stdout, out, true);
    } else {
        print_report(&c, o->allow_unverified);
        print_layout("layout", &c.layout);
        if (c.have_draft)
            print_layout("draft", &c.draft);
        printf("%s\n", c.problems ? "PROBLEMS FOUND" : "ok");
    }
    exit_code = c.problems ? SW_EXIT_FAIL : SW_EXIT_OK;
out:
    json_decref(out);
    sw_payload_check_free(&c);
    return exit_code;
}

/* ---------------------------------------------------------------------------------------------
 * Download (the default mode)
 */

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
    struct sw_fetch_payload_opts fo = {.target = o->target,
                                       .fleet = o->fleet,
                                       .revision = o->revision,
                                       .include = o->n_include ? o->include : NULL,
                                       .dest = o->dest,
                                       .manifest = o->manifest,
                                       .write_manifest = o->write_manifest,
                                       .jobs = o->jobs,
                                       .dry_run = o->dry_run,
                                       .progress = !o->json && !o->quiet,
                                       .allow_unverified = o->allow_unverified,
                                       .on_file = o->quiet ? quiet_line : NULL};
    struct sw_fetch_payload p;
    struct sw_err e;
    json_t *out = NULL;
    int exit_code = SW_EXIT_OK;
    sw_err_clear(&e);
    /* a file size limit must end in EFBIG (reported, resumable), not kill us mid-write */
    signal(SIGXFSZ, SIG_IGN);
    int rc = sw_fetch_payload(&fo, &p, &e);
    const struct sw_fetch_report *rep = &p.report;
    if (rc && !rep->n_files) {
        exit_code = sw_cli_fail(&e, o->json);
        if (p.hub_failed) /* the Hub refused or moved: a failure found, not unusable input */
            exit_code = SW_EXIT_FAIL;
        goto out;
    }
    if (o->json) {
        out = sw_fetch_payload_to_json(&p, rc ? &e : NULL);
        if (!out) {
            sw_err_set(&e, SW_ENOMEM, "out of memory");
            exit_code = sw_cli_fail(&e, false);
            goto out;
        }
        sw_json_print(stdout, out, true);
    } else if (!o->quiet) {
        print_download(&p.manifest, rep, o->dry_run);
    }
    if (rc) {
        /* every failed file, on stderr, with what to do */
        if (!o->json)
            for (size_t i = 0; i < rep->n_files; i++)
                if (rep->files[i].state == SW_FETCH_FAILED)
                    fprintf(stderr, "slipway: fetch failed: %s\n", rep->files[i].msg);
        if (!o->json && !rep->count[SW_FETCH_FAILED])
            fprintf(stderr, "slipway: fetch failed: %s\n", e.msg); /* unverified, in place */
        exit_code =
            sw_cli_exit_for(rc) == SW_EXIT_USAGE && rc != SW_EIO ? SW_EXIT_USAGE : SW_EXIT_FAIL;
        if (rep->count[SW_FETCH_FAILED])
            exit_code = SW_EXIT_FAIL;
    }
out:
    json_decref(out);
    sw_fetch_payload_free(&p);
    return exit_code;
}

int sw_cmd_fetch(int argc, char **argv)
{
    struct opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? SW_EXIT_OK : rc;
    switch (o.mode) {
    case MODE_VERIFY:
        return run_verify(&o);
    case MODE_DOWNLOAD:
        return run_download(&o);
    case MODE_NONE:
    default:
        return sw_cli_usage("fetch", "no mode");
    }
}
