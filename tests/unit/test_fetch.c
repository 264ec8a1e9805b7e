/*
 * fetch: the pieces that need no server. The token's sources and the refusal of a token file
 * others can read, redaction, the Hugging Face cache layout (names, relative snapshot links,
 * refs), resolve URLs and their encoding, HF_ENDPOINT. The downloads themselves run against a
 * real nginx in tests/real/test_fetch_hub.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fetch.h>

#include "swhttpd.h"
#include "swtest.h"

#include <openssl/evp.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dir;

static int setup(void **state)
{
    dir = swt_tmpdir();
    unsetenv("HF_TOKEN");
    unsetenv("HF_TOKEN_PATH");
    unsetenv("HF_HUB_CACHE");
    unsetenv("XDG_CACHE_HOME");
    setenv("HF_HOME", dir, 1);
    return 0;
}

static int teardown(void **state)
{
    swt_tmpdir_free(dir);
    return 0;
}

static void test_token_sources(void **state)
{
    struct sw_fetch_token t;
    struct sw_err e;
    /* nothing anywhere: anonymous, not an error */
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "");
    /* the file in HF_HOME, only when only its owner can read it */
    const char *tf = swt_join(dir, "token");
    swt_write_str(tf, "  hf_fromfile123\n");
    chmod(tf, 0640);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    swt_has_all("e.msg", e.msg, "0640", "chmod 600", NULL);
    assert_null(strstr(e.msg, "hf_fromfile123"));
    assert_string_equal(t.value, "");
    chmod(tf, 0604);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    chmod(tf, 0600);
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "hf_fromfile123");
    assert_string_equal(t.source, tf);
    /* HF_TOKEN wins */
    setenv("HF_TOKEN", "hf_fromenv456", 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "hf_fromenv456");
    assert_string_equal(t.source, "HF_TOKEN");
    /* a header injection is refused */
    setenv("HF_TOKEN", "hf_abc\r\nX-Evil: 1", 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    assert_string_equal(t.value, "");
    unsetenv("HF_TOKEN");
    /* HF_TOKEN_PATH; a symlink is not followed */
    const char *other = swt_join(dir, "other-token");
    swt_write_str(other, "hf_other789");
    chmod(other, 0600);
    setenv("HF_TOKEN_PATH", other, 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), 0);
    assert_string_equal(t.value, "hf_other789");
    const char *ln = swt_join(dir, "link-token");
    assert_int_equal(symlink(other, ln), 0);
    setenv("HF_TOKEN_PATH", ln, 1);
    assert_int_equal(sw_fetch_token_load(&t, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "symbolic link"));
    unsetenv("HF_TOKEN_PATH");
    sw_fetch_token_clear(&t);
    assert_string_equal(t.value, "");
}

static void test_hfcache_layout(void **state)
{
    char c[4200], rd[4400];
    struct sw_err e;
    setenv("HF_HUB_CACHE", "/x/hub", 1);
    assert_int_equal(sw_hfcache_dir(c, sizeof(c), &e), 0);
    assert_string_equal(c, "/x/hub");
    unsetenv("HF_HUB_CACHE");
    setenv("HF_HOME", "/y", 1);
    assert_int_equal(sw_hfcache_dir(c, sizeof(c), &e), 0);
    assert_string_equal(c, "/y/hub");
    setenv("HF_HOME", dir, 1);
    assert_int_equal(sw_hfcache_repo_dir("/c", "Qwen/Qwen3-8B", rd, sizeof(rd), &e), 0);
    assert_string_equal(rd, "/c/models--Qwen--Qwen3-8B");
    assert_int_equal(sw_hfcache_repo_dir("/c", "noslash", rd, sizeof(rd), &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_repo_dir("/c", "a/b/c", rd, sizeof(rd), &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_repo_dir("/c", "../x", rd, sizeof(rd), &e), SW_EINVAL);

    snprintf(c, sizeof(c), "%s/hub", dir);
    assert_int_equal(sw_hfcache_repo_dir(c, "org/m", rd, sizeof(rd), &e), 0);
    const char *commit = "89abcdef0123456789abcdef0123456789abcdef";
    assert_int_equal(sw_hfcache_link(rd, commit, "sub/dir/w.safetensors", "deadbeef", &e), 0);
    char p[5000], l[5000];
    snprintf(p, sizeof(p), "%s/snapshots/%s/sub/dir/w.safetensors", rd, commit);
    ssize_t n = readlink(p, l, sizeof(l) - 1);
    assert_true(n > 0);
    l[n] = '\0';
    assert_string_equal(l, "../../../../blobs/deadbeef");
    /* replaced when it points elsewhere */
    assert_int_equal(sw_hfcache_link(rd, commit, "sub/dir/w.safetensors", "cafe", &e), 0);
    n = readlink(p, l, sizeof(l) - 1);
    l[n] = '\0';
    assert_string_equal(l, "../../../../blobs/cafe");
    assert_int_equal(sw_hfcache_link(rd, commit, "config.json", "abc", &e), 0);
    snprintf(p, sizeof(p), "%s/snapshots/%s/config.json", rd, commit);
    n = readlink(p, l, sizeof(l) - 1);
    l[n] = '\0';
    assert_string_equal(l, "../../blobs/abc");
    /* refs */
    char got[41];
    assert_int_equal(sw_hfcache_read_ref(rd, "main", got, &e), SW_ENOENT);
    assert_int_equal(sw_hfcache_write_ref(rd, "main", commit, &e), 0);
    assert_int_equal(sw_hfcache_read_ref(rd, "main", got, &e), 0);
    assert_string_equal(got, commit);
    assert_int_equal(sw_hfcache_write_ref(rd, "../x", commit, &e), SW_EINVAL);
    /* the file holds the bare commit, as huggingface_hub writes it */
    snprintf(p, sizeof(p), "%s/refs/main", rd);
    char *d = NULL;
    size_t len;
    assert_int_equal(sw_read_file(p, 100, &d, &len, &e), 0);
    assert_int_equal(len, 40);
    sw_free(d);
    /* blob names */
    struct sw_payload_file f = {0};
    assert_null(sw_hfcache_blob_name(&f));
    char oid[] = "0123456789012345678901234567890123456789";
    f.git_oid = oid;
    assert_string_equal(sw_hfcache_blob_name(&f), oid);
    snprintf(f.sha256, sizeof(f.sha256), "%064d", 7);
    assert_string_equal(sw_hfcache_blob_name(&f), f.sha256);
}

/* The layout's writes go through no link: a linked snapshot directory or refs/ is refused by
 * name, a snapshot file linked elsewhere is replaced (not followed), and only a hex hash names a
 * blob. */
static void test_hfcache_no_links(void **state)
{
    char rd[4400], out[4400], p[5000], l[5000];
    struct sw_err e;
    snprintf(rd, sizeof(rd), "%s/nl/models--org--m", dir);
    snprintf(out, sizeof(out), "%s/nl-outside", dir);
    assert_int_equal(sw_mkdir_p(out, 0755, &e), 0);
    const char *commit = "0123456789abcdef0123456789abcdef01234567";
    snprintf(p, sizeof(p), "%s/snapshots/%s", rd, commit);
    assert_int_equal(sw_mkdir_p(p, 0755, &e), 0);
    snprintf(p, sizeof(p), "%s/snapshots/%s/sub", rd, commit);
    assert_int_equal(symlink(out, p), 0);
    assert_int_equal(sw_hfcache_link(rd, commit, "sub/w.safetensors", "abcd", &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, p));
    assert_non_null(strstr(e.msg, "symbolic link"));
    snprintf(p, sizeof(p), "%s/w.safetensors", out);
    assert_false(access(p, F_OK) == 0);
    /* a file link pointing outside is replaced by the relative link to the blob */
    swt_write_str(swt_join(out, "victim"), "mine\n");
    snprintf(p, sizeof(p), "%s/snapshots/%s/c.json", rd, commit);
    assert_int_equal(symlink(swt_join(out, "victim"), p), 0);
    assert_int_equal(sw_hfcache_link(rd, commit, "c.json", "abcd", &e), 0);
    ssize_t n = readlink(p, l, sizeof(l) - 1);
    assert_true(n > 0);
    l[n] = '\0';
    assert_string_equal(l, "../../blobs/abcd");
    char *d = NULL;
    size_t len = 0;
    assert_int_equal(sw_read_file(swt_join(out, "victim"), 100, &d, &len, &e), 0);
    assert_string_equal(d, "mine\n");
    sw_free(d);
    /* no ETag-like blob name, no unsafe path */
    assert_int_equal(sw_hfcache_link(rd, commit, "c.json", "../../x", &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_link(rd, commit, "c.json", "abc/def", &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_link(rd, commit, "c.json", "", &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_link(rd, commit, "../c.json", "abcd", &e), SW_EINVAL);
    assert_int_equal(sw_hfcache_link(rd, "main", "c.json", "abcd", &e), SW_EINVAL);
    /* refs/ linked outside */
    snprintf(p, sizeof(p), "%s/refs", rd);
    assert_int_equal(symlink(out, p), 0);
    assert_int_equal(sw_hfcache_write_ref(rd, "main", commit, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, p));
    assert_false(access(swt_join(out, "main"), F_OK) == 0);
}

static void test_urls(void **state)
{
    char u[512];
    assert_int_equal(
        sw_hub_resolve_url("https://hf.co", "org/m", "main", "a b/c+d.json", u, sizeof(u)), 0);
    assert_string_equal(u, "https://hf.co/org/m/resolve/main/a%20b/c%2Bd.json");
    /* a revision with a slash is one path segment */
    assert_int_equal(sw_hub_resolve_url("https://hf.co", "org/m", "refs/pr/1", "x", u, sizeof(u)),
                     0);
    assert_string_equal(u, "https://hf.co/org/m/resolve/refs%2Fpr%2F1/x");
    assert_int_equal(sw_hub_resolve_url("https://hf.co", "org/m", "main", "x", u, 20), SW_ERANGE);
    unsetenv("HF_ENDPOINT");
    assert_string_equal(sw_hub_endpoint(), "https://huggingface.co");
    setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
    assert_string_equal(sw_hub_endpoint(), "http://127.0.0.1:9");
    unsetenv("HF_ENDPOINT");
    assert_string_equal(sw_fetch_state_name(SW_FETCH_LINKED), "linked");
    assert_string_equal(sw_fetch_state_name((enum sw_fetch_state)99), "?");
}

static void test_cli_refuses_token_flag(void **state)
{
    struct swt_run r;
    swt_slipway(&r, "fetch", "org/m", "--token", "hf_x", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "HF_TOKEN"));
    swt_run_free(&r);
    swt_slipway_exits(2, "fetch", "org/m", "--json", "--quiet", NULL);
}

/* ---- the download engine against scripted replies (what nginx will not do) ---- */

#define C40   "89abcdef0123456789abcdef0123456789abcdef"
#define WPATH "/org/m/resolve/" C40 "/w.bin"

static char body[4096];

static void sha_hex(const void *p, size_t n, char out[65])
{
    unsigned char d[32];
    unsigned dl = 32;
    EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void one_file(struct sw_payload_manifest *m)
{
    struct sw_err e;
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = (char)('a' + i % 26);
    char sha[65];
    sha_hex(body, sizeof(body), sha);
    sw_payload_manifest_init(m);
    assert_int_equal(sw_payload_manifest_set(m, "org/m", "main", C40, &e), 0);
    assert_int_equal(sw_payload_manifest_add(m, "w.bin", sizeof(body), sha, true, NULL, NULL, &e),
                     0);
}

static void run_one(struct swh *s, const struct sw_payload_manifest *m, const char *dest,
                    struct sw_fetch_report *rep, int want_rc)
{
    char ep[64];
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", swh_port(s));
    struct sw_fetch_opts o = {.endpoint = ep, .dest = dest, .cache = dir};
    struct sw_err e;
    sw_err_clear(&e);
    int rc = sw_fetch_run(m, &o, rep, &e);
    if (rc != want_rc)
        fail_msg("rc %d (want %d): %s", rc, want_rc, e.msg);
}

static void test_engine_scripted_faults(void **state)
{
    struct sw_payload_manifest m;
    one_file(&m);
    char dest[4200];
    snprintf(dest, sizeof(dest), "%s/dest", dir);
    const char *inc = swt_join(dest, "w.bin.incomplete");
    const char *fin = swt_join(dest, "w.bin");
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(dest, 0755, &e), 0);
    struct sw_fetch_report rep;

    /* a reset after 1000 bytes: those bytes are kept, the file is not in place */
    struct swh *s = swh_start();
    char hdr[256];
    snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", sizeof(body));
    struct swh_step cut[] = {{SWH_SEND, hdr, 0}, {SWH_SEND, body, 1000}, {SWH_RESET}, {SWH_END}};
    swh_script(s, "GET", WPATH, cut);
    run_one(s, &m, dest, &rep, SW_ENET);
    assert_int_equal(rep.files[0].state, SW_FETCH_FAILED);
    assert_non_null(strstr(rep.files[0].msg, "cut after 1000 of 4096"));
    sw_fetch_report_free(&rep);
    assert_true(access(fin, F_OK) != 0);
    struct stat st;
    assert_int_equal(stat(inc, &st), 0);
    assert_int_equal(st.st_size, 1000);
    swh_stop(s);

    /* a 206 that starts where we did not ask: refused, the partial left as it was */
    s = swh_start();
    snprintf(hdr, sizeof(hdr),
             "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4095/4096\r\n"
             "Content-Length: 4096\r\n\r\n");
    struct swh_step wrong[] = {{SWH_SEND, hdr, 0}, {SWH_SEND, body, sizeof(body)}, {SWH_END}};
    swh_script(s, "GET", WPATH, wrong);
    run_one(s, &m, dest, &rep, SW_EHTTP);
    assert_non_null(strstr(rep.files[0].msg, "Content-Range"));
    sw_fetch_report_free(&rep);
    struct swh_request rq;
    assert_true(swh_last_request(s, WPATH, &rq));
    char rg[64];
    assert_non_null(swh_request_header(&rq, "Range", rg, sizeof(rg)));
    assert_string_equal(rg, "bytes=1000-");
    swh_request_free(&rq);
    assert_int_equal(stat(inc, &st), 0);
    assert_int_equal(st.st_size, 1000);
    swh_stop(s);

    /* 416: the server does not recognise our partial: removed, so the next run starts over */
    s = swh_start();
    swh_reply(s, "GET", WPATH, 416, "text/plain", "range not satisfiable\n");
    run_one(s, &m, dest, &rep, SW_EHTTP);
    assert_non_null(strstr(rep.files[0].msg, "416"));
    sw_fetch_report_free(&rep);
    assert_true(access(inc, F_OK) != 0);
    swh_stop(s);

    /* a regular reply naming another commit: nothing written */
    s = swh_start();
    snprintf(hdr, sizeof(hdr),
             "HTTP/1.1 200 OK\r\nX-Repo-Commit: %s\r\nContent-Length: 4096\r\n\r\n",
             "0000000000000000000000000000000000000000");
    struct swh_step moved[] = {{SWH_SEND, hdr, 0}, {SWH_SEND, body, sizeof(body)}, {SWH_END}};
    swh_script(s, "GET", WPATH, moved);
    run_one(s, &m, dest, &rep, SW_EMISMATCH);
    assert_non_null(strstr(rep.files[0].msg, "commit"));
    sw_fetch_report_free(&rep);
    assert_true(access(inc, F_OK) != 0);
    assert_true(access(fin, F_OK) != 0);
    swh_stop(s);

    /* and a good reply: in place, hashed */
    s = swh_start();
    snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n");
    struct swh_step good[] = {{SWH_SEND, hdr, 0}, {SWH_SEND, body, sizeof(body)}, {SWH_END}};
    swh_script(s, "GET", WPATH, good);
    run_one(s, &m, dest, &rep, 0);
    assert_int_equal(rep.files[0].state, SW_FETCH_DOWNLOADED);
    assert_string_equal(rep.files[0].sha256, m.files[0].sha256);
    json_t *j = sw_fetch_report_to_json(&rep);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    sw_fetch_report_free(&rep);
    assert_int_equal(stat(fin, &st), 0);
    assert_int_equal(st.st_size, 4096);
    swh_stop(s);
    sw_payload_manifest_free(&m);
}

struct fetch_run {
    const struct sw_payload_manifest *m;
    const char *ep;
    long n;
};

/* One download into a fresh destination; the report must say downloaded. */
static int fetch_once(void *arg)
{
    struct fetch_run *f = arg;
    char dest[4300];
    snprintf(dest, sizeof(dest), "%s/alloc%ld", dir, ++f->n);
    struct sw_fetch_opts o = {.endpoint = f->ep, .dest = dest, .cache = dir};
    struct sw_fetch_report rep;
    struct sw_err e;
    int rc = sw_fetch_run(f->m, &o, &rep, &e);
    if (rc == 0 && rep.files[0].state != SW_FETCH_DOWNLOADED)
        rc = SW_EINVAL;
    sw_fetch_report_free(&rep);
    return rc;
}

/* Every allocation failing in turn: SW_ENOMEM each time, never a crash or a leak (ASan), and the
 * loop reaches every allocation of a clean download. */
static void test_engine_alloc_failures(void **state)
{
    struct sw_payload_manifest m;
    one_file(&m);
    struct swh *s = swh_start();
    char hdr[128];
    snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n");
    struct swh_step good[] = {{SWH_SEND, hdr, 0}, {SWH_SEND, body, sizeof(body)}, {SWH_END}};
    swh_script(s, "GET", WPATH, good);
    char ep[64];
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", swh_port(s));
    struct fetch_run f = {&m, ep, 0};
    assert_true(swt_torture("fetch (one file)", fetch_once, &f, SW_ENOMEM) > 3);
    swh_stop(s);
    sw_payload_manifest_free(&m);
}

/* ---- the verb's one call, sw_fetch_payload: target, manifest, run (payload/fetch.c) ---- */

static void write_manifest_file(const char *path, const char *repo)
{
    struct sw_payload_manifest m;
    struct sw_err e;
    one_file(&m);
    assert_int_equal(sw_payload_manifest_set(&m, repo, "main", C40, &e), 0);
    assert_int_equal(sw_payload_manifest_add(&m, "notes.txt", 5, NULL, false, NULL, NULL, &e), 0);
    assert_int_equal(sw_payload_manifest_save(path, &m, &e), 0);
    sw_payload_manifest_free(&m);
}

/* An ENDPOINT resolved through its fleet: the manifest kept beside the fleet pins the commit (the
 * Hub is not asked), narrowed to the include globs, fetched into payload.path. */
static void test_fetch_payload_endpoint(void **state)
{
    char fleet[4200], dest[4200], man[4200], y[8192];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", dir);
    snprintf(dest, sizeof(dest), "%s/pl", dir);
    snprintf(y, sizeof(y),
             "hosts:\n  here:\n    transport: local\n    devices:\n      cpu: {kind: cpu}\n"
             "endpoints:\n  e1:\n    host: here\n    engine: llama.cpp\n"
             "    payload: {repo: org/m, path: %s}\n    shape: {ctx_size: 4096, seqs: 1}\n",
             dest);
    swt_write_str(fleet, y);
    struct sw_err e;
    assert_int_equal(sw_payload_manifest_default_path(fleet, "e1", man, sizeof(man), &e), 0);
    char mdir[4200];
    snprintf(mdir, sizeof(mdir), "%s", man);
    *strrchr(mdir, '/') = '\0';
    assert_int_equal(sw_mkdir_p(mdir, 0755, &e), 0);
    write_manifest_file(man, "org/m");

    struct swh *s = swh_start();
    char hdr[128];
    snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n");
    struct swh_step good[] = {{SWH_SEND, hdr, 0}, {SWH_SEND, body, sizeof(body)}, {SWH_END}};
    swh_script(s, "GET", WPATH, good);
    setenv("HF_ENDPOINT", swh_url(s, ""), 1);
    const char *inc[] = {"w.*", NULL};
    struct sw_fetch_payload_opts o = {.target = "e1", .fleet = fleet, .include = inc};
    struct sw_fetch_payload p;
    sw_err_clear(&e);
    int rc = sw_fetch_payload(&o, &p, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(p.endpoint, "e1");
    assert_false(p.hub_failed);
    assert_int_equal(p.manifest.n_files, 1); /* notes.txt left out by the glob */
    assert_string_equal(p.manifest.commit, C40);
    assert_int_equal(p.report.n_files, 1);
    assert_int_equal(p.report.files[0].state, SW_FETCH_DOWNLOADED);
    assert_string_equal(p.report.dir, dest);
    json_t *j = sw_fetch_payload_to_json(&p, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "endpoint")), "e1");
    assert_string_equal(json_string_value(json_object_get(j, "commit")), C40);
    assert_true(json_is_false(json_object_get(j, "dry_run")));
    assert_null(json_object_get(j, "error"));
    json_decref(j);
    sw_fetch_payload_free(&p);
    assert_int_equal(access(swt_join(dest, "w.bin"), F_OK), 0);
    assert_int_equal(swh_hits(s, "/api/models/org/m/revision/main"), 0);

    /* no endpoint of that name; a manifest for another repository: unusable input, no run */
    o.target = "nope";
    assert_int_equal(sw_fetch_payload(&o, &p, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "no endpoint named nope"));
    assert_int_equal(p.report.n_files, 0);
    sw_fetch_payload_free(&p);
    struct sw_fetch_payload_opts other = {.target = "org/other", .manifest = man};
    assert_int_equal(sw_fetch_payload(&other, &p, &e), SW_EINVAL);
    assert_non_null(strstr(e.msg, "the manifest is for org/m, not org/other"));
    assert_false(p.hub_failed);
    sw_fetch_payload_free(&p);
    swh_stop(s);
    unsetenv("HF_ENDPOINT");
}

/* A REPO without a manifest asks the Hub; its refusal is the Hub's (hub_failed), before any run. */
static void test_fetch_payload_hub_refusal(void **state)
{
    struct swh *s = swh_start();
    swh_reply(s, "GET", "/api/models/org/gated/revision/main", 401, "application/json",
              "{\"error\": \"Access to model org/gated is restricted.\"}");
    setenv("HF_ENDPOINT", swh_url(s, ""), 1);
    struct sw_fetch_payload_opts o = {.target = "org/gated", .dry_run = true};
    struct sw_fetch_payload p;
    struct sw_err e;
    sw_err_clear(&e);
    assert_int_equal(sw_fetch_payload(&o, &p, &e), SW_EHTTP);
    assert_true(p.hub_failed);
    assert_int_equal(p.report.n_files, 0);
    swt_has_all("e.msg", e.msg, "HTTP 401 for the file list of org/gated at main",
                "Access to model org/gated is restricted.", NULL);
    sw_fetch_payload_free(&p);
    swh_stop(s);
    unsetenv("HF_ENDPOINT");
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_sources),
        cmocka_unit_test(test_hfcache_layout),
        cmocka_unit_test(test_hfcache_no_links),
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_cli_refuses_token_flag),
        cmocka_unit_test(test_engine_scripted_faults),
        cmocka_unit_test(test_engine_alloc_failures),
        cmocka_unit_test(test_fetch_payload_endpoint),
        cmocka_unit_test(test_fetch_payload_hub_refusal),
    };
    return cmocka_run_group_tests_name("fetch", tests, setup, teardown);
}
