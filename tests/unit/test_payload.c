/*
 * payload: manifests (add, JSON round trip, hostile manifests, the default path beside a fleet),
 * SHA-256 against known vectors, and verification: each status (ok, wrong_size, wrong_hash,
 * missing, unexpected, unreadable) on files written into a temporary directory, plus the CLI's
 * `fetch --verify-only` exit codes and JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/payload.h>

#include "swtest.h"
#include "test_payload_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* sha256("abc") and sha256("") (FIPS 180-2 test vectors). */
#define SHA_ABC   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void test_sha256_vectors(void **state)
{
    char *dir = swt_tmpdir();
    char hex[65];
    uint64_t size = 99;
    swt_write_str(swt_join(dir, "abc"), "abc");
    swt_write(swt_join(dir, "empty"), "", 0);
    assert_int_equal(sw_payload_sha256_file(swt_join(dir, "abc"), 0, hex, &size, NULL), 0);
    assert_string_equal(hex, SHA_ABC);
    assert_int_equal(size, 3);
    /* a 1-byte buffer takes the same path through many reads */
    assert_int_equal(sw_payload_sha256_file(swt_join(dir, "abc"), 1, hex, NULL, NULL), 0);
    assert_string_equal(hex, SHA_ABC);
    assert_int_equal(sw_payload_sha256_file(swt_join(dir, "empty"), 0, hex, &size, NULL), 0);
    assert_string_equal(hex, SHA_EMPTY);
    assert_int_equal(size, 0);
    struct sw_err e;
    assert_int_equal(sw_payload_sha256_file(swt_join(dir, "nope"), 0, hex, NULL, &e), SW_ENOENT);

    struct sw_payload_sha256 *h;
    assert_int_equal(sw_payload_sha256_new(&h, NULL), 0);
    sw_payload_sha256_update(h, "a", 1);
    sw_payload_sha256_update(h, "bc", 2);
    assert_int_equal(sw_payload_sha256_final(h, hex), 0);
    assert_string_equal(hex, SHA_ABC);
    assert_int_equal(sw_payload_sha256_reset(h), 0);
    assert_int_equal(sw_payload_sha256_final(h, hex), 0);
    assert_string_equal(hex, SHA_EMPTY);
    sw_payload_sha256_free(h);
    swt_tmpdir_free(dir);
}

static void test_path_ok(void **state)
{
    assert_true(sw_payload_path_ok("model.safetensors"));
    assert_true(sw_payload_path_ok("sub/dir/x.gguf"));
    assert_true(sw_payload_path_ok(".gitattributes"));
    assert_false(sw_payload_path_ok(""));
    assert_false(sw_payload_path_ok("/etc/passwd"));
    assert_false(sw_payload_path_ok("../x"));
    assert_false(sw_payload_path_ok("a/../x"));
    assert_false(sw_payload_path_ok("a/./x"));
    assert_false(sw_payload_path_ok("a//x"));
    assert_false(sw_payload_path_ok("a/"));
    assert_false(sw_payload_path_ok("a\\b"));
    assert_false(sw_payload_path_ok("a\nb"));
    assert_false(sw_payload_path_ok(NULL));
}

static void test_manifest_add_find(void **state)
{
    struct sw_payload_manifest m;
    struct sw_payload_file *f;
    struct sw_err e;
    sw_payload_manifest_init(&m);
    assert_int_equal(sw_payload_manifest_set(&m, "Qwen/Qwen3-8B", "main",
                                             "0123456789ABCDEF0123456789abcdef01234567", &e),
                     0);
    assert_string_equal(m.commit, "0123456789abcdef0123456789abcdef01234567");
    assert_int_equal(sw_payload_manifest_set(&m, NULL, NULL, "abc", &e), SW_EINVAL);
    assert_int_equal(sw_payload_manifest_add(&m, "b.safetensors", 10, SHA_ABC, true, NULL, &f, &e),
                     0);
    assert_true(f->size_known && f->lfs);
    assert_int_equal(sw_payload_manifest_add(&m, "a.json", -1, NULL, false,
                                             "0123456789abcdef0123456789abcdef01234567", &f, &e),
                     0);
    assert_false(f->size_known);
    assert_string_equal(f->sha256, "");
    assert_int_equal(sw_payload_manifest_add(&m, "a.json", 1, NULL, false, NULL, NULL, &e),
                     SW_EEXIST);
    assert_int_equal(sw_payload_manifest_add(&m, "../x", 1, NULL, false, NULL, NULL, &e),
                     SW_EINVAL);
    assert_int_equal(sw_payload_manifest_add(&m, "x", 1, "zz", false, NULL, NULL, &e), SW_EINVAL);
    assert_int_equal(sw_payload_manifest_add(&m, "x", 1, NULL, false, "abc", NULL, &e), SW_EINVAL);
    assert_non_null(sw_payload_manifest_find(&m, "b.safetensors"));
    assert_null(sw_payload_manifest_find(&m, "c"));
    size_t unknown;
    assert_int_equal(sw_payload_manifest_bytes(&m, &unknown), 10);
    assert_int_equal(unknown, 1);
    sw_payload_manifest_sort(&m);
    assert_string_equal(m.files[0].path, "a.json");
    sw_payload_manifest_free(&m);
    sw_payload_manifest_free(NULL);
}

static void test_manifest_roundtrip(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_payload_manifest m, back;
    struct sw_err e;
    sw_payload_manifest_init(&m);
    assert_int_equal(sw_payload_manifest_set(&m, "org/m", "v1.0", NULL, &e), 0);
    assert_int_equal(
        sw_payload_manifest_add(&m, "z.safetensors", 123, SHA_ABC, true, NULL, NULL, &e), 0);
    assert_int_equal(sw_payload_manifest_add(&m, "config.json", 7, NULL, false,
                                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL, &e),
                     0);
    const char *p = swt_join(dir, "m.json");
    assert_int_equal(sw_payload_manifest_save(p, &m, &e), 0);
    assert_int_equal(sw_payload_manifest_load(p, &back, &e), 0);
    assert_int_equal(back.n_files, 2);
    assert_string_equal(back.repo, "org/m");
    assert_string_equal(back.revision, "v1.0");
    assert_null(back.commit);
    assert_string_equal(back.files[0].path, "config.json"); /* sorted on save */
    assert_string_equal(back.files[0].git_oid, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(back.files[1].size, 123);
    assert_string_equal(back.files[1].sha256, SHA_ABC);
    assert_true(back.files[1].lfs);
    sw_payload_manifest_free(&back);
    sw_payload_manifest_free(&m);
    swt_tmpdir_free(dir);
}

static int load_text(const char *text, struct sw_err *e)
{
    struct sw_payload_manifest m;
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    int rc = sw_payload_manifest_from_json(j, "t.json", &m, e);
    json_decref(j);
    sw_payload_manifest_free(&m);
    return rc;
}

static void test_manifest_hostile(void **state)
{
    struct sw_err e;
#define HDR "\"format\":\"slipway-payload-manifest\",\"version\":1"
    assert_int_equal(load_text("{" HDR ",\"files\":[]}", &e), 0);
    assert_int_equal(load_text("[]", &e), SW_EPARSE);
    assert_int_equal(load_text("{\"version\":1,\"files\":[]}", &e), SW_EPARSE);
    assert_int_equal(load_text("{\"format\":\"slipway-payload-manifest\",\"version\":2,"
                               "\"files\":[]}",
                               &e),
                     SW_EUNSUPPORTED);
    assert_int_equal(load_text("{" HDR ",\"files\":[],\"extra\":1}", &e), SW_EPARSE);
    assert_non_null(strstr(e.msg, "unknown key \"extra\""));
    assert_int_equal(load_text("{" HDR ",\"files\":[{\"path\":\"../../etc/passwd\"}]}", &e),
                     SW_EPARSE);
    assert_non_null(strstr(e.msg, "files[0]"));
    assert_int_equal(load_text("{" HDR ",\"files\":[{\"path\":\"a\"},{\"path\":\"a\"}]}", &e),
                     SW_EPARSE);
    assert_non_null(strstr(e.msg, "files[1]"));
    assert_int_equal(load_text("{" HDR ",\"files\":[{\"path\":\"a\",\"size\":-1}]}", &e),
                     SW_EPARSE);
    assert_int_equal(load_text("{" HDR ",\"files\":[{\"path\":\"a\",\"sha256\":\"x\"}]}", &e),
                     SW_EPARSE);
    assert_int_equal(load_text("{" HDR ",\"files\":[{\"path\":\"a\",\"lfs\":1}]}", &e), SW_EPARSE);
    assert_int_equal(load_text("{" HDR ",\"files\":[{\"path\":\"a\",\"sizes\":1}]}", &e),
                     SW_EPARSE);
    assert_int_equal(load_text("{" HDR ",\"commit\":\"xyz\",\"files\":[]}", &e), SW_EPARSE);
    assert_int_equal(load_text("{" HDR ",\"files\":{}}", &e), SW_EPARSE);
#undef HDR
}

static void test_manifest_default_path(void **state)
{
    char p[256];
    struct sw_err e;
    assert_int_equal(sw_payload_manifest_default_path("ops/fleet.yaml", "qwen-a", p, sizeof(p), &e),
                     0);
    assert_string_equal(p, "ops/fleet.manifests/qwen-a.json");
    assert_int_equal(sw_payload_manifest_default_path("fleet.yml", "x", p, sizeof(p), &e), 0);
    assert_string_equal(p, "fleet.manifests/x.json");
    assert_int_equal(sw_payload_manifest_default_path("fleet", "x", p, sizeof(p), &e), 0);
    assert_string_equal(p, "fleet.manifests/x.json");
    assert_int_equal(sw_payload_manifest_default_path("f.yaml", "../x", p, sizeof(p), &e),
                     SW_EINVAL);
    assert_int_equal(sw_payload_manifest_default_path("f.yaml", "a/b", p, sizeof(p), &e),
                     SW_EINVAL);
    assert_int_equal(sw_payload_manifest_default_path(NULL, "a", p, sizeof(p), &e), SW_EINVAL);
    assert_int_equal(sw_payload_manifest_default_path("f.yaml", "a", p, 8, &e), SW_ERANGE);
}

/* ---------------------------------------------------------------------------------------------
 * verify
 */
static void fill(const char *path, size_t n, unsigned seed)
{
    char *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        b[i] = (char)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
    swt_write(path, b, n);
    free(b);
}

static const struct sw_verify_file *vfind(const struct sw_verify_report *r, const char *path)
{
    for (size_t i = 0; i < r->n_files; i++)
        if (!strcmp(r->files[i].path, path))
            return &r->files[i];
    return NULL;
}

struct prog {
    int calls;
    uint64_t last, total;
};
static void on_prog(void *ud, uint64_t done, uint64_t total)
{
    struct prog *p = ud;
    p->calls++;
    p->last = done;
    p->total = total;
}

static void test_verify_statuses(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_err e;
    struct sw_payload_manifest m;
    char hex[65];
    mkdir(swt_join(dir, "sub"), 0755);
    fill(swt_join(dir, "ok.bin"), 300000, 1);
    fill(swt_join(dir, "sub/ok2.bin"), 5000, 2);
    fill(swt_join(dir, "size.bin"), 1000, 3);
    fill(swt_join(dir, "hash.bin"), 4096, 4);
    fill(swt_join(dir, "extra.bin"), 10, 5);
    fill(swt_join(dir, "nohash.json"), 10, 6);
    mkdir(swt_join(dir, ".cache"), 0755); /* hidden directories are not "unexpected" */
    fill(swt_join(dir, ".cache/x"), 10, 7);
    mkdir(swt_join(dir, "adir"), 0755); /* a directory where a file should be */
    assert_int_equal(symlink("gone-blob", swt_join(dir, "dangling.bin")), 0);

    sw_payload_manifest_init(&m);
    assert_int_equal(sw_payload_sha256_file(swt_join(dir, "ok.bin"), 0, hex, NULL, &e), 0);
    assert_int_equal(sw_payload_manifest_add(&m, "ok.bin", 300000, hex, true, NULL, NULL, &e), 0);
    assert_int_equal(sw_payload_sha256_file(swt_join(dir, "sub/ok2.bin"), 0, hex, NULL, &e), 0);
    assert_int_equal(sw_payload_manifest_add(&m, "sub/ok2.bin", 5000, hex, true, NULL, NULL, &e),
                     0);
    assert_int_equal(sw_payload_manifest_add(&m, "size.bin", 999, SHA_ABC, true, NULL, NULL, &e),
                     0);
    assert_int_equal(sw_payload_manifest_add(&m, "hash.bin", 4096, SHA_ABC, true, NULL, NULL, &e),
                     0);
    assert_int_equal(sw_payload_manifest_add(&m, "missing.bin", 5, SHA_ABC, true, NULL, NULL, &e),
                     0);
    assert_int_equal(sw_payload_manifest_add(&m, "nohash.json", 10, NULL, false, NULL, NULL, &e),
                     0);
    assert_int_equal(sw_payload_manifest_add(&m, "adir", 10, NULL, false, NULL, NULL, &e), 0);
    assert_int_equal(sw_payload_manifest_add(&m, "dangling.bin", 10, NULL, true, NULL, NULL, &e),
                     0);

    struct sw_verify_report r;
    struct prog pg = {0};
    struct sw_verify_opts o = {
        .threads = 3, .buf_size = 4096, .progress = on_prog, .progress_ud = &pg};
    assert_int_equal(sw_payload_verify(dir, &m, &o, &r, &e), 0);
    assert_int_equal(vfind(&r, "ok.bin")->status, SW_VERIFY_OK);
    assert_true(vfind(&r, "ok.bin")->hashed);
    assert_int_equal(vfind(&r, "sub/ok2.bin")->status, SW_VERIFY_OK);
    assert_int_equal(vfind(&r, "size.bin")->status, SW_VERIFY_WRONG_SIZE);
    assert_false(vfind(&r, "size.bin")->hashed); /* a wrong size is not worth a read */
    assert_int_equal(vfind(&r, "size.bin")->size, 1000);
    assert_int_equal(vfind(&r, "size.bin")->want_size, 999);
    assert_int_equal(vfind(&r, "hash.bin")->status, SW_VERIFY_WRONG_HASH);
    assert_string_equal(vfind(&r, "hash.bin")->want_sha256, SHA_ABC);
    assert_int_equal(vfind(&r, "missing.bin")->status, SW_VERIFY_MISSING);
    assert_int_equal(vfind(&r, "nohash.json")->status, SW_VERIFY_OK);
    assert_false(vfind(&r, "nohash.json")->hashed);
    assert_true(vfind(&r, "nohash.json")->unverified); /* ok on its size alone: said so */
    assert_false(vfind(&r, "ok.bin")->unverified);
    assert_int_equal(r.unverified, 1);
    assert_int_equal(vfind(&r, "extra.bin")->status, SW_VERIFY_UNEXPECTED);
    assert_int_equal(vfind(&r, "adir")->status, SW_VERIFY_UNREADABLE);
    assert_int_equal(vfind(&r, "dangling.bin")->status, SW_VERIFY_UNREADABLE);
    assert_null(vfind(&r, ".cache/x"));
    assert_int_equal(r.count[SW_VERIFY_OK], 3);
    assert_int_equal(r.count[SW_VERIFY_UNEXPECTED], 1);
    assert_int_equal(r.count[SW_VERIFY_UNREADABLE], 2);
    assert_false(sw_verify_ok(&r));
    assert_int_equal(r.bytes_hashed, 300000 + 5000 + 4096);
    assert_true(r.threads >= 1 && r.threads <= 3);
    assert_true(pg.calls >= 1);
    assert_int_equal(pg.last, 300000 + 5000 + 4096);
    assert_int_equal(pg.total, 300000 + 5000 + 4096);
    /* the manifest's files come first in path order, then the unexpected ones */
    assert_string_equal(r.files[r.n_files - 1].path, "extra.bin");
    json_t *j = sw_verify_report_to_json(&r);
    assert_non_null(j);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "counts"), "wrong_hash")), 1);
    json_decref(j);
    sw_verify_report_free(&r);

    /* hash_all hashes the unhashed and the unexpected too; ignore hides a file */
    const char *ign[] = {"extra.bin", NULL};
    struct sw_verify_opts o2 = {.hash_all = true, .ignore = ign};
    assert_int_equal(sw_payload_verify(dir, &m, &o2, &r, &e), 0);
    assert_true(vfind(&r, "nohash.json")->hashed);
    assert_null(vfind(&r, "extra.bin"));
    sw_verify_report_free(&r);

    /* no_unexpected does not walk */
    fill(swt_join(dir, "more.bin"), 1, 8);
    struct sw_verify_opts o3 = {.no_unexpected = true};
    assert_int_equal(sw_payload_verify(dir, &m, &o3, &r, &e), 0);
    assert_int_equal(r.count[SW_VERIFY_UNEXPECTED], 0);
    sw_verify_report_free(&r);

    assert_int_equal(sw_payload_verify(swt_join(dir, "nope"), &m, NULL, &r, &e), SW_ENOENT);
    assert_int_equal(sw_payload_verify(swt_join(dir, "ok.bin"), &m, NULL, &r, &e), SW_EINVAL);
    sw_payload_manifest_free(&m);
    swt_tmpdir_free(dir);
}

static void test_verify_all_ok_and_scan(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_err e;
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%d.bin", i);
        fill(swt_join(dir, name), (size_t)(i * 70001 + 1), (unsigned)i);
    }
    struct sw_payload_manifest m;
    struct sw_verify_opts o = {.threads = 4};
    assert_int_equal(sw_payload_manifest_scan(dir, true, &o, &m, &e), 0);
    assert_int_equal(m.n_files, 7);
    for (size_t i = 0; i < m.n_files; i++) {
        char hex[65];
        assert_int_equal(sw_payload_sha256_file(swt_join(dir, m.files[i].path), 0, hex, NULL, &e),
                         0);
        assert_string_equal(m.files[i].sha256, hex);
    }
    struct sw_verify_report r;
    assert_int_equal(sw_payload_verify(dir, &m, &o, &r, &e), 0);
    assert_true(sw_verify_ok(&r));
    assert_int_equal(r.count[SW_VERIFY_OK], 7);
    sw_verify_report_free(&r);

    /* one byte flipped in place: same size, wrong hash */
    FILE *f = fopen(swt_join(dir, "f3.bin"), "r+b");
    assert_non_null(f);
    fseek(f, 1000, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 1000, SEEK_SET);
    fputc(0x5a ^ c, f);
    fclose(f);
    assert_int_equal(sw_payload_verify(dir, &m, &o, &r, &e), 0);
    assert_int_equal(vfind(&r, "f3.bin")->status, SW_VERIFY_WRONG_HASH);
    assert_int_equal(r.count[SW_VERIFY_OK], 6);
    sw_verify_report_free(&r);

    /* hash_files fails the whole call for an unreadable file */
    const char *paths[] = {"f0.bin", "nope.bin"};
    char hx[2][65];
    assert_int_equal(sw_payload_hash_files(dir, paths, 2, NULL, hx, NULL, &e), SW_ENOENT);
    sw_payload_manifest_free(&m);
    swt_tmpdir_free(dir);
}

/* The Hugging Face cache layout: snapshots/<commit>/<file> are symlinks into blobs/. Verified
 * through the links; a link whose blob is gone is unreadable, not missing. */
static void test_verify_hf_cache_symlinks(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_err e;
    char blobs[4096], snap[4096];
    snprintf(blobs, sizeof(blobs), "%s/blobs", dir);
    snprintf(snap, sizeof(snap), "%s/snapshots", dir);
    mkdir(blobs, 0755);
    mkdir(snap, 0755);
    snprintf(snap, sizeof(snap), "%s/snapshots/0123456789abcdef0123456789abcdef01234567", dir);
    mkdir(snap, 0755);
    fill(swt_join(blobs, "b1"), 70000, 1);
    fill(swt_join(blobs, "b2"), 10, 2);
    assert_int_equal(symlink("../../blobs/b1", swt_join(snap, "model.safetensors")), 0);
    assert_int_equal(symlink("../../blobs/b2", swt_join(snap, "config.json")), 0);
    struct sw_payload_manifest m;
    assert_int_equal(sw_payload_manifest_scan(snap, true, NULL, &m, &e), 0);
    assert_int_equal(m.n_files, 2);
    assert_int_equal(sw_payload_manifest_find(&m, "model.safetensors")->size, 70000);
    struct sw_verify_report r;
    assert_int_equal(sw_payload_verify(snap, &m, NULL, &r, &e), 0);
    assert_true(sw_verify_ok(&r));
    sw_verify_report_free(&r);
    unlink(swt_join(blobs, "b1"));
    assert_int_equal(sw_payload_verify(snap, &m, NULL, &r, &e), 0);
    assert_int_equal(vfind(&r, "model.safetensors")->status, SW_VERIFY_UNREADABLE);
    assert_non_null(strstr(vfind(&r, "model.safetensors")->msg, "symlink"));
    sw_verify_report_free(&r);
    sw_payload_manifest_free(&m);
    swt_tmpdir_free(dir);
}

struct verify_run {
    const char *dir;
    const struct sw_payload_manifest *m;
};

static int verify_once(void *arg)
{
    const struct verify_run *v = arg;
    struct sw_verify_report r;
    struct sw_err e;
    /* one worker: with several, a worker whose setup fails may find no job left (then nothing is
     * lost and the run rightly succeeds), so the outcome would depend on scheduling */
    struct sw_verify_opts o = {.threads = 1};
    int rc = sw_payload_verify(v->dir, v->m, &o, &r, &e);
    if (rc == 0) {
        rc = r.n_files == 3 ? 0 : SW_EINVAL; /* a, b and the unexpected c */
        sw_verify_report_free(&r);
    }
    return rc;
}

static void test_verify_alloc_failures(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_err e;
    fill(swt_join(dir, "a"), 100, 1);
    fill(swt_join(dir, "b"), 100, 2);
    struct sw_payload_manifest m;
    assert_int_equal(sw_payload_manifest_scan(dir, true, NULL, &m, &e), 0);
    fill(swt_join(dir, "c"), 100, 3);
    /* fail each allocation in turn: SW_ENOMEM each time, every error path frees what it took
     * (ASan checks) */
    struct verify_run v = {dir, &m};
    assert_true(swt_torture("payload verify", verify_once, &v, SW_ENOMEM) > 3);
    sw_payload_manifest_free(&m);
    swt_tmpdir_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * CLI
 */
static void test_cli_verify_only(void **state)
{
    char *dir = swt_tmpdir();
    char *pl = strdup(swt_join(dir, "payload"));
    char *man = strdup(swt_join(dir, "m.json"));
    struct swt_run r;
    mkdir(pl, 0755);
    fill(swt_join(pl, "w.bin"), 20000, 1);
    swt_write_str(swt_join(pl, "config.json"), "{\"num_hidden_layers\": 2}");
    pb_st1(swt_join(pl, "model.safetensors"), "lm_head.weight", 1000, 0);

    /* pin, then verify: exit 0 */
    swt_slipway_exits(0, "fetch", pl, "--verify-only", "--write-manifest", man, NULL);
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, "--json", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(j, "verify"), "counts"), "ok")),
                     3);
    json_decref(j);
    swt_run_free(&r);

    /* a wrong hash and an HTML body: exit 1, both named */
    fill(swt_join(pl, "w.bin"), 20000, 9);
    swt_write_str(swt_join(pl, "x.safetensors"), "<!doctype html><title>403</title>");
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, NULL);
    assert_int_equal(r.status, 1);
    swt_has_all("stdout", r.out, "wrong_hash w.bin", "unexpected x.safetensors", "an HTML page",
                NULL);
    swt_run_free(&r);

    /* unusable input: exit 2 */
    swt_write_str(man, "{\"format\":\"nope\"}");
    swt_slipway_exits(2, "fetch", pl, "--verify-only", "--manifest", man, NULL);
    swt_slipway_exits(2, "fetch", swt_join(dir, "nothing-here"), "--verify-only", NULL);
    swt_slipway_exits(2, "fetch", pl, "--verify-only", "--threads", "0", NULL);
    free(pl);
    free(man);
    swt_tmpdir_free(dir);
}

static void test_cli_endpoint(void **state)
{
    char *dir = swt_tmpdir();
    char *pl = strdup(swt_join(dir, "m"));
    char *fleet = strdup(swt_join(dir, "fleet.yaml"));
    struct swt_run r;
    mkdir(pl, 0755);
    fill(swt_join(pl, "w.bin"), 1000, 1);
    swt_write_str(swt_join(pl, "config.json"), "{\"num_hidden_layers\": 2}");
    pb_st1(swt_join(pl, "model.safetensors"), "lm_head.weight", 10, 0);
    char y[2048];
    snprintf(y, sizeof(y),
             "hosts:\n  here:\n    transport: local\n    devices:\n      cpu: {kind: cpu}\n"
             "endpoints:\n  e1:\n    host: here\n    engine: llama.cpp\n"
             "    payload: {path: %s}\n    shape: {ctx_size: 4096, seqs: 1}\n",
             pl);
    swt_write_str(fleet, y);
    /* no manifest kept yet: body/layout checks only, still exit 0 */
    swt_slipway(&r, "fetch", "e1", "--fleet", fleet, "--verify-only", NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no manifest"));
    swt_run_free(&r);
    /* the manifest beside the fleet is found */
    char man[4096];
    assert_int_equal(sw_payload_manifest_default_path(fleet, "e1", man, sizeof(man), NULL), 0);
    char mdir[4096];
    snprintf(mdir, sizeof(mdir), "%s", man);
    *strrchr(mdir, '/') = '\0';
    mkdir(mdir, 0755);
    swt_slipway_exits(0, "fetch", pl, "--verify-only", "--write-manifest", man, NULL);
    swt_write_str(swt_join(pl, "w.bin"), "short");
    swt_slipway(&r, "fetch", "e1", "--fleet", fleet, "--verify-only", "--json", NULL);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "endpoint")), "e1");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(j, "verify"), "counts"), "wrong_size")),
                     1);
    json_decref(j);
    swt_run_free(&r);
    swt_slipway_exits(2, "fetch", "nope", "--fleet", fleet, "--verify-only", NULL);
    free(pl);
    free(fleet);
    swt_tmpdir_free(dir);
}

static void test_cli_endpoint_draft_mmproj(void **state)
{
    char *dir = swt_tmpdir();
    char *pl = strdup(swt_join(dir, "m"));
    char *dr = strdup(swt_join(dir, "draft"));
    char *fleet = strdup(swt_join(dir, "fleet.yaml"));
    struct swt_run r;
    mkdir(pl, 0755);
    mkdir(dr, 0755);
    pb_gguf(swt_join(pl, "model.gguf"), "llama", (const char *const[]){"token_embd.weight"}, 1, 0,
            0, 0, 0);
    pb_gguf(swt_join(pl, "mmproj.gguf"), "clip", (const char *const[]){"v.patch_embd.weight"}, 1, 0,
            0, 0, 0);
    swt_write_str(swt_join(dr, "config.json"), "{\"num_hidden_layers\": 2}");
    pb_st1(swt_join(dr, "model.safetensors"), "lm_head.weight", 10, 0);
    char y[4096];
    snprintf(y, sizeof(y),
             "hosts:\n  here:\n    transport: local\n    devices:\n      cpu: {kind: cpu}\n"
             "endpoints:\n  e1:\n    host: here\n    engine: llama.cpp\n"
             "    payload: {path: %s/model.gguf, mmproj: %s/mmproj.gguf, draft: %s}\n"
             "    shape: {ctx_size: 4096, seqs: 1}\n",
             pl, pl, dr);
    swt_write_str(fleet, y);
    swt_slipway(&r, "fetch", "e1", "--fleet", fleet, "--verify-only", "--json", NULL);
    if (r.status != 0)
        print_message("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *lay = json_object_get(j, "layout");
    assert_string_equal(json_string_value(json_object_get(lay, "format")), "gguf");
    assert_true(json_is_true(json_object_get(lay, "has_projector")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "draft"), "format")),
                        "safetensors");
    json_decref(j);
    swt_run_free(&r);
    /* the draft broken into unindexed pieces, the projector gone: both reported, exit 1 */
    pb_st1(swt_join(dr, "more.safetensors"), "x", 4, 0);
    unlink(swt_join(pl, "mmproj.gguf"));
    swt_slipway(&r, "fetch", "e1", "--fleet", fleet, "--verify-only", NULL);
    swt_out_has(&r, 1, "projector", "draft: safetensors",
                "a draft model must be one model.safetensors", NULL);
    free(pl);
    free(dr);
    free(fleet);
    swt_tmpdir_free(dir);
}

/* payload.path naming one GGUF in a models directory shared with other models: only its own
 * files are pinned and verified; the neighbours are neither sniffed nor "unexpected". */
/* Issue 20, defect 5 in --verify-only: a file the manifest has no sha256 or git oid for is
 * "unverified" (per file, in the summary, human and --json) and fails the run unless
 * --allow-unverified; one with only a git oid is checked against it (git's blob sha1). */
static json_t *jfile(json_t *verify, const char *path)
{
    json_t *files = json_object_get(verify, "files");
    for (size_t i = 0; i < json_array_size(files); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(files, i), "path")), path))
            return json_array_get(files, i);
    return NULL;
}

static void test_cli_verify_unverified(void **state)
{
    char *dir = swt_tmpdir();
    char *pl = strdup(swt_join(dir, "payload"));
    char *man = strdup(swt_join(dir, "m.json"));
    char *pin = strdup(swt_join(dir, "pin.json"));
    struct swt_run r;
    mkdir(pl, 0755);
    /* bytes of the right size that nothing vouches for */
    fill(swt_join(pl, "w.bin"), 20000, 5);
    /* `printf '{"num_hidden_layers": 2}' | git hash-object --stdin` */
    swt_write_str(swt_join(pl, "config.json"), "{\"num_hidden_layers\": 2}");
    /* the weights, pinned by sha256 (a payload without weights fails its layout check) */
    pb_st1(swt_join(pl, "model.safetensors"), "lm_head.weight", 1000, 0);
    char st_hex[65], doc[1024];
    uint64_t st_size = 0;
    assert_int_equal(
        sw_payload_sha256_file(swt_join(pl, "model.safetensors"), 0, st_hex, &st_size, NULL), 0);
    snprintf(doc, sizeof(doc),
             "{\"format\": \"slipway-payload-manifest\", \"version\": 1, \"files\": ["
             "{\"path\": \"config.json\", \"size\": 24,"
             " \"git_oid\": \"a4bbdaf401a1639e3a6d90dd3706c66e61565507\"},"
             "{\"path\": \"model.safetensors\", \"size\": %llu, \"sha256\": \"%s\"},"
             "{\"path\": \"w.bin\", \"size\": 20000, \"lfs\": true}]}",
             (unsigned long long)st_size, st_hex);
    swt_write_str(man, doc);

    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, NULL);
    swt_out_has(&r, 1, "unverified w.bin", "ok         config.json", "2 ok, 1 unverified,",
                "run with --allow-unverified", "PROBLEMS FOUND", NULL);

    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, "--json", NULL);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    assert_true(json_is_false(json_object_get(j, "ok")));
    assert_true(json_is_false(json_object_get(j, "verified")));
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    json_t *v = json_object_get(j, "verify");
    assert_int_equal(json_integer_value(json_object_get(v, "unverified")), 1);
    assert_true(json_is_true(json_object_get(jfile(v, "w.bin"), "unverified")));
    assert_null(json_object_get(jfile(v, "config.json"), "unverified"));
    assert_string_equal(json_string_value(json_object_get(jfile(v, "config.json"), "git_oid")),
                        "a4bbdaf401a1639e3a6d90dd3706c66e61565507");
    json_decref(j);
    swt_run_free(&r);

    /* accepted, and still said */
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, "--allow-unverified", NULL);
    swt_out_has(&r, 0, "unverified w.bin", "(accepted: --allow-unverified)", NULL);
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, "--allow-unverified", "--json",
                NULL);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_true(json_is_false(json_object_get(j, "verified")));
    assert_true(
        json_is_true(json_object_get(jfile(json_object_get(j, "verify"), "w.bin"), "unverified")));
    json_decref(j);
    swt_run_free(&r);

    /* pinning unverified bytes is a choice: refused without --allow-unverified, nothing written */
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, "--hash-all",
                "--write-manifest", pin, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "--allow-unverified"));
    assert_int_equal(access(pin, F_OK), -1);
    swt_run_free(&r);
    swt_slipway_exits(0, "fetch", pl, "--verify-only", "--manifest", man, "--hash-all",
                      "--allow-unverified", "--write-manifest", pin, NULL);
    struct sw_payload_manifest m;
    struct sw_err e;
    char hex[65];
    assert_int_equal(sw_payload_manifest_load(pin, &m, &e), 0);
    assert_int_equal(sw_payload_sha256_file(swt_join(pl, "w.bin"), 0, hex, NULL, &e), 0);
    assert_string_equal(sw_payload_manifest_find(&m, "w.bin")->sha256, hex);
    sw_payload_manifest_free(&m);
    /* against the pin everything is verified */
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", pin, NULL);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "unverified w.bin"));
    assert_non_null(strstr(r.out, "3 ok, 0 unverified,"));
    swt_run_free(&r);

    /* a git oid that does not match is a wrong hash */
    swt_write_str(swt_join(pl, "config.json"), "{\"num_hidden_layers\": 3}");
    swt_slipway(&r, "fetch", pl, "--verify-only", "--manifest", man, "--allow-unverified", NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "wrong_hash config.json: git oid 8e0e18a4f88288b2"));
    swt_run_free(&r);
    free(pin);
    free(pl);
    free(man);
    swt_tmpdir_free(dir);
}

static void test_cli_endpoint_shared_dir(void **state)
{
    char *dir = swt_tmpdir();
    char *fleet = strdup(swt_join(dir, "fleet.yaml"));
    struct swt_run r;
    pb_gguf(swt_join(dir, "mine.gguf"), "llama", (const char *const[]){"token_embd.weight"}, 1, 0,
            0, 0, 0);
    swt_write_str(swt_join(dir, "other.gguf"), "<html>not mine, not judged</html>");
    char y[4096];
    snprintf(y, sizeof(y),
             "hosts:\n  here:\n    transport: local\n    devices:\n      cpu: {kind: cpu}\n"
             "endpoints:\n  e1:\n    host: here\n    engine: llama.cpp\n"
             "    payload: {path: %s/mine.gguf}\n    shape: {ctx_size: 4096, seqs: 1}\n",
             dir);
    swt_write_str(fleet, y);
    char man[4096];
    assert_int_equal(sw_payload_manifest_default_path(fleet, "e1", man, sizeof(man), NULL), 0);
    char mdir[4096];
    snprintf(mdir, sizeof(mdir), "%s", man);
    *strrchr(mdir, '/') = '\0';
    mkdir(mdir, 0755);
    swt_slipway(&r, "fetch", "e1", "--fleet", fleet, "--verify-only", "--write-manifest", man,
                NULL);
    if (r.status != 0)
        print_message("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    struct sw_payload_manifest m;
    assert_int_equal(sw_payload_manifest_load(man, &m, NULL), 0);
    assert_int_equal(m.n_files, 1);
    assert_string_equal(m.files[0].path, "mine.gguf");
    assert_int_equal(strlen(m.files[0].sha256), 64);
    sw_payload_manifest_free(&m);
    swt_write_str(swt_join(dir, "third.bin"), "x");
    swt_slipway(&r, "fetch", "e1", "--fleet", fleet, "--verify-only", NULL);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "unexpected other"));
    swt_run_free(&r);
    free(fleet);
    swt_tmpdir_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * The check the verb runs, through the library (sw_payload_check): what the CLI tests above see
 * printed, as the struct the CLI prints from.
 */

/* A scratch directory with a payload directory in it; paths owned until scratch_free. */
struct scratch {
    char *dir, *pl, *man, *pin;
};

static void scratch_new(struct scratch *s)
{
    s->dir = swt_tmpdir();
    s->pl = strdup(swt_join(s->dir, "payload"));
    s->man = strdup(swt_join(s->dir, "m.json"));
    s->pin = strdup(swt_join(s->dir, "pin.json"));
    mkdir(s->pl, 0755);
}

static void scratch_free(struct scratch *s)
{
    free(s->pin);
    free(s->man);
    free(s->pl);
    swt_tmpdir_free(s->dir);
}

/* dir/fleet.yaml with one local endpoint e1 whose payload is `payload` (a YAML flow mapping);
 * returns its path (free it). */
static char *fleet_e1(const char *dir, const char *payload)
{
    char *fleet = strdup(swt_join(dir, "fleet.yaml"));
    FILE *f = fopen(fleet, "w");
    assert_non_null(f);
    fputs("hosts:\n  here:\n    transport: local\n    devices:\n      cpu: {kind: cpu}\n", f);
    fprintf(f, "endpoints:\n  e1:\n    host: here\n    engine: llama.cpp\n    payload: %s\n",
            payload);
    fputs("    shape: {ctx_size: 4096, seqs: 1}\n", f);
    assert_int_equal(fclose(f), 0);
    return fleet;
}

static void test_check_directory(void **state)
{
    struct scratch d;
    scratch_new(&d);
    fill(swt_join(d.pl, "w.bin"), 20000, 1);
    pb_st1(swt_join(d.pl, "model.safetensors"), "lm_head.weight", 1000, 0);
    swt_write_str(swt_join(d.pl, "config.json"), "{\"num_hidden_layers\": 2}");
    struct sw_err e;
    struct sw_payload_check c;
    /* no manifest: the files listed, hashed to be pinned, and pinned */
    struct sw_payload_check_opts o = {.target = d.pl, .write_manifest = d.man, .threads = 1};
    assert_int_equal(sw_payload_check(&o, &c, &e), 0);
    assert_false(c.have_manifest);
    assert_null(c.target.endpoint);
    assert_string_equal(c.target.root, d.pl);
    assert_int_equal(c.files.n_files, 3);
    assert_int_equal(strlen(sw_payload_manifest_find(&c.files, "w.bin")->sha256), 64);
    assert_false(c.problems);
    assert_string_equal(c.not_written, "");
    sw_payload_check_free(&c);
    assert_int_equal(access(d.man, F_OK), 0);

    /* against it: a wrong hash and an HTML body are problems, each named where it belongs */
    fill(swt_join(d.pl, "w.bin"), 20000, 9);
    swt_write_str(swt_join(d.pl, "x.safetensors"), "<!doctype html><title>403</title>");
    struct sw_payload_check_opts v = {.target = d.pl, .manifest = d.man, .write_manifest = d.pin};
    assert_int_equal(sw_payload_check(&v, &c, &e), 0);
    assert_true(c.have_manifest);
    assert_true(c.problems);
    assert_int_equal(c.verify.count[SW_VERIFY_WRONG_HASH], 1);
    assert_int_equal(c.verify.count[SW_VERIFY_UNEXPECTED], 1);
    assert_int_equal(c.n_bodies, 1);
    assert_string_equal(c.bodies[0].path, "x.safetensors");
    assert_int_equal(c.bodies[0].sniff.body, SW_PAYLOAD_BODY_HTML);
    assert_non_null(strstr(c.not_written, "the payload has problems"));
    json_t *j = sw_payload_check_to_json(&c);
    assert_non_null(j);
    assert_true(json_is_false(json_object_get(j, "ok")));
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "bodies"), 0), "body")),
        "html");
    json_decref(j);
    sw_payload_check_free(&c);
    assert_int_equal(access(d.pin, F_OK), -1);

    /* unusable input is an error, not a finding */
    v.target = swt_join(d.dir, "nothing-here");
    assert_int_equal(sw_payload_check(&v, &c, &e), SW_ENOENT);
    assert_non_null(strstr(e.msg, "is neither a directory nor an endpoint of ./fleet.yaml"));
    sw_payload_check_free(&c);
    scratch_free(&d);
}

/* An endpoint whose payload.path names one GGUF in a shared directory, with a projector and a
 * draft: the target as the fleet says, only its own files listed, both layouts checked. */
static void test_check_endpoint(void **state)
{
    struct scratch d;
    scratch_new(&d);
    const char *const tok[] = {"token_embd.weight"}, *const vis[] = {"v.patch_embd.weight"};
    pb_gguf(swt_join(d.dir, "mine.gguf"), "llama", tok, 1, 0, 0, 0, 0);
    pb_gguf(swt_join(d.dir, "mmproj.gguf"), "clip", vis, 1, 0, 0, 0, 0);
    swt_write_str(swt_join(d.dir, "other.gguf"), "<html>not mine, not judged</html>");
    swt_write_str(swt_join(d.pl, "config.json"), "{\"num_hidden_layers\": 2}");
    pb_st1(swt_join(d.pl, "model.safetensors"), "lm_head.weight", 10, 0);
    char payload[2048];
    snprintf(payload, sizeof(payload), "{path: %s/mine.gguf, mmproj: mmproj.gguf, draft: %s}",
             d.dir, d.pl);
    char *fleet = fleet_e1(d.dir, payload);
    struct sw_payload_check_opts o = {.target = "e1", .fleet = fleet, .hash_all = true};
    struct sw_payload_check c;
    struct sw_err e;
    assert_int_equal(sw_payload_check(&o, &c, &e), 0);
    assert_string_equal(c.target.endpoint, "e1");
    assert_string_equal(c.target.root, d.dir);
    assert_string_equal(c.target.gguf, "mine.gguf");
    assert_true(c.target.file_only);
    assert_true(c.target.vision);
    assert_string_equal(c.target.draft, d.pl);
    assert_true(c.target.manifest_default);
    assert_false(c.have_manifest);        /* none kept beside the fleet yet: no error */
    assert_int_equal(c.files.n_files, 2); /* mine.gguf and the projector beside it */
    assert_non_null(sw_payload_manifest_find(&c.files, "mmproj.gguf"));
    assert_null(sw_payload_manifest_find(&c.files, "other.gguf"));
    assert_int_equal(c.n_bodies, 0);
    assert_true(c.have_draft);
    assert_int_equal(c.draft.format, SW_PAYLOAD_FMT_SAFETENSORS);
    assert_true(c.layout.has_projector);
    assert_false(c.problems);
    sw_payload_check_free(&c);
    free(fleet);
    scratch_free(&d);
}

/* Every allocation failing in turn (a directory of a GGUF and a blob, no JSON: jansson is not
 * tortured, see docs/payload.md): nothing leaked or crashed (ASan). A sniff or a layout read that
 * runs out of memory is reported as what it could not judge (a finding, as the CLI prints it), so
 * a run that ends with problems where the clean run has none counts as the failure seen. */
static int check_once(void *arg)
{
    struct sw_payload_check_opts o = {.target = arg, .hash_all = true, .threads = 1};
    struct sw_payload_check c;
    struct sw_err e;
    int rc = sw_payload_check(&o, &c, &e);
    if (rc == 0 && c.problems)
        rc = SW_ENOMEM;
    else if (rc == 0 && c.files.n_files != 2)
        rc = SW_EINVAL;
    sw_payload_check_free(&c);
    return rc;
}

static void test_check_alloc_failures(void **state)
{
    struct scratch d;
    scratch_new(&d);
    const char *const tok[] = {"token_embd.weight"};
    fill(swt_join(d.pl, "w.bin"), 1000, 1);
    pb_gguf(swt_join(d.pl, "model.gguf"), "llama", tok, 1, 0, 0, 0, 0);
    assert_true(swt_torture("payload check", check_once, d.pl, SW_ENOMEM) > 3);
    scratch_free(&d);
}

int main(void)
{
    sw_core_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_path_ok),
        cmocka_unit_test(test_manifest_add_find),
        cmocka_unit_test(test_manifest_roundtrip),
        cmocka_unit_test(test_manifest_hostile),
        cmocka_unit_test(test_manifest_default_path),
        cmocka_unit_test(test_verify_statuses),
        cmocka_unit_test(test_verify_all_ok_and_scan),
        cmocka_unit_test(test_verify_hf_cache_symlinks),
        cmocka_unit_test(test_verify_alloc_failures),
        cmocka_unit_test(test_cli_verify_only),
        cmocka_unit_test(test_cli_verify_unverified),
        cmocka_unit_test(test_cli_endpoint),
        cmocka_unit_test(test_cli_endpoint_draft_mmproj),
        cmocka_unit_test(test_cli_endpoint_shared_dir),
        cmocka_unit_test(test_check_directory),
        cmocka_unit_test(test_check_endpoint),
        cmocka_unit_test(test_check_alloc_failures),
    };
    return cmocka_run_group_tests_name("payload", tests, NULL, NULL);
}
