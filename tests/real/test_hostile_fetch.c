/*
 * slipway fetch against a hostile destination and a hostile Hub (issue 20, defects 2 and 5), run
 * on the real build/slipway against a real nginx laid out like the Hub (tests/support/swhub):
 *
 *  - links planted in the destination tree: a DEST/FILE.incomplete (and an HF cache
 *    blobs/<sha>.incomplete) that is a symbolic link to a file outside, a linked target, a linked
 *    subdirectory of DEST, a linked blobs/ and a linked snapshots/<commit>/sub. Each must be
 *    refused with the link's path named, exit non-zero, and the outside file or directory left
 *    byte-for-byte as it was. A snapshot's file link that points outside is replaced, not
 *    followed (the cache's own links keep working).
 *  - ETags that cannot verify anything: an S3-style "<md5>-3" and one with path characters
 *    ("../../escaped/x"). The file is "unverified" per file and in the summary, the exit is
 *    non-zero unless --allow-unverified (then 0, still reported unverified), nothing is put in
 *    place without it, and no ETag ever becomes a file name: in the HF cache the accepted blob
 *    is named by the sha256 of the bytes received (and checked against that name later).
 *
 * Bounded: every slipway run has swt_run's timeout; files are at most 1 MiB. Skips when nginx is
 * absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fetch.h>

#include "swhub.h"
#include "swtest.h"

#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPO   "acme/hostile"
#define COMMIT "89abcdef0123456789abcdef0123456789abcd01"
#define SHARD  "model-00001-of-00001.safetensors"
#define SUBF   "sub/extra.safetensors"

struct ctx {
    struct swhub *hub;
    char *tmp;
    char cache[4200];
    char home[4200];
    char dest[4200];
    char outside[4200];
    char repo_dir[4400];
    unsigned char *shard, *subf;
    size_t shard_n, subf_n;
    char config[128];
};

/* A hub with a 1 MiB shard, a 256 KiB shard under sub/ (both LFS) and config.json (regular);
 * `fault` on the 1 MiB shard. */
static struct ctx *hub_new(enum swhub_fault fault)
{
    struct ctx *c = calloc(1, sizeof(*c));
    c->hub = swhub_client(REPO, COMMIT, &c->tmp, c->cache, sizeof(c->cache), "cache", c->home,
                          sizeof(c->home));
    if (!c->hub) {
        free(c);
        return NULL;
    }
    snprintf(c->dest, sizeof(c->dest), "%s/dest", c->tmp);
    snprintf(c->outside, sizeof(c->outside), "%s/outside", c->tmp);
    snprintf(c->repo_dir, sizeof(c->repo_dir), "%s/models--acme--hostile", c->cache);
    mkdir(c->dest, 0755);
    mkdir(c->outside, 0755);
    c->shard_n = 1u << 20;
    c->subf_n = 256u << 10;
    c->shard = swhub_safetensors(c->shard_n, 2463534242u, "w");
    c->subf = swhub_safetensors(c->subf_n, 88172645u, "w");
    snprintf(c->config, sizeof(c->config), "{\"model_type\": \"llama\"}\n");
    swhub_file(c->hub, SHARD, c->shard, c->shard_n, true);
    swhub_file(c->hub, SUBF, c->subf, c->subf_n, true);
    swhub_file(c->hub, "config.json", c->config, strlen(c->config), false);
    if (fault != SWHUB_OK)
        swhub_fault(c->hub, SHARD, fault);
    assert_int_equal(swhub_start(c->hub), 0);
    swhub_env(c->hub, c->cache, c->home);
    return c;
}

static void hub_free(struct ctx *c)
{
    if (!c)
        return;
    swhub_free(c->hub);
    swt_tmpdir_free(c->tmp);
    free(c->shard);
    free(c->subf);
    free(c);
}

#define NEED_HUB(c)                                                                                \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            print_message("nginx is not installed: skipping\n");                                   \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static const char *path2(const char *a, const char *b)
{
    static char buf[4][4600];
    static int i;
    char *p = buf[i++ % 4];
    snprintf(p, 4600, "%s/%s", a, b);
    return p;
}

static bool lexists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void must_say(const struct swt_run *r, const char *what)
{
    if (!strstr(r->out, what) && !strstr(r->err, what))
        fail_msg("the output does not say \"%s\":\n--- stdout\n%s\n--- stderr\n%s", what, r->out,
                 r->err);
}

static void fetch(struct swt_run *r, const char *a1, const char *a2, const char *a3, const char *a4)
{
    swt_slipway(r, "fetch", REPO, a1, a2, a3, a4, (char *)NULL);
}

static const json_t *file_entry(const json_t *j, const char *path)
{
    const json_t *files = json_object_get(j, "files");
    for (size_t i = 0; i < json_array_size(files); i++) {
        const json_t *f = json_array_get(files, i);
        if (!strcmp(json_string_value(json_object_get(f, "path")), path))
            return f;
    }
    fail_msg("no entry for %s in the report", path);
    return NULL;
}

/* A victim file outside the destination: ~300 KB of text (less than the shard, so a resume
 * would ask for the rest and append it). */
static char *victim(struct ctx *c, const char *name, size_t *n)
{
    size_t len = 300000;
    char *v = malloc(len);
    for (size_t i = 0; i < len; i++)
        v[i] = "precious data, not slipway's\n"[i % 29];
    swt_write(path2(c->outside, name), v, len);
    *n = len;
    return v;
}

/* ---- defect 2: links inside the destination tree ------------------------------------------ */

static void test_linked_incomplete(void **state)
{
    (void)state;
    struct ctx *c = hub_new(SWHUB_OK);
    NEED_HUB(c);
    size_t vn;
    char *v = victim(c, "victim", &vn);
    /* --dest: DEST/FILE.incomplete -> a file outside */
    char link[4600];
    snprintf(link, sizeof(link), "%s/%s.incomplete", c->dest, SHARD);
    assert_int_equal(symlink(path2(c->outside, "victim"), link), 0);
    struct swt_run r;
    fetch(&r, "--dest", c->dest, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, link);
    must_say(&r, "symbolic link");
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->outside, "victim"), v, vn));
    assert_false(lexists(path2(c->dest, SHARD)));
    /* the other files are fetched all the same */
    assert_true(swt_file_is(path2(c->dest, "config.json"), c->config, strlen(c->config)));

    /* the HF cache: blobs/<sha256>.incomplete -> a file outside */
    char blobs[4600], blink[4800];
    snprintf(blobs, sizeof(blobs), "%s/blobs", c->repo_dir);
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(blobs, 0755, &e), 0);
    snprintf(blink, sizeof(blink), "%s/%s.incomplete", blobs, swhub_sha256(c->hub, SHARD));
    assert_int_equal(symlink(path2(c->outside, "victim"), blink), 0);
    fetch(&r, "--json", NULL, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, blink);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(file_entry(j, SHARD), "state")),
                        "failed");
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->outside, "victim"), v, vn));
    free(v);
    hub_free(c);
}

static void test_linked_target(void **state)
{
    (void)state;
    struct ctx *c = hub_new(SWHUB_OK);
    NEED_HUB(c);
    /* DEST/config.json -> a file outside that holds the right bytes: still not ours to use */
    swt_write_str(path2(c->outside, "config.json"), c->config);
    assert_int_equal(symlink(path2(c->outside, "config.json"), path2(c->dest, "config.json")), 0);
    struct swt_run r;
    fetch(&r, "--dest", c->dest, "--json", NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, path2(c->dest, "config.json"));
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->outside, "config.json"), c->config, strlen(c->config)));
    /* and one that holds other bytes: not hashed, not removed through, not replaced */
    swt_write_str(path2(c->outside, "config.json"), "{\"mine\": true}\n");
    fetch(&r, "--dest", c->dest, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, path2(c->dest, "config.json"));
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->outside, "config.json"), "{\"mine\": true}\n", 15));
    hub_free(c);
}

static void test_linked_subdirectory(void **state)
{
    (void)state;
    struct ctx *c = hub_new(SWHUB_OK);
    NEED_HUB(c);
    /* --dest: DEST/sub -> a directory outside */
    char od[4600];
    snprintf(od, sizeof(od), "%s/dir", c->outside);
    mkdir(od, 0755);
    assert_int_equal(symlink(od, path2(c->dest, "sub")), 0);
    struct swt_run r;
    fetch(&r, "--dest", c->dest, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, path2(c->dest, "sub"));
    swt_run_free(&r);
    assert_int_equal(entries(od), 0);
    assert_true(swt_file_is(path2(c->dest, SHARD), c->shard, c->shard_n));

    /* the HF cache: blobs/ -> a directory outside */
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(c->repo_dir, 0755, &e), 0);
    char ob[4600];
    snprintf(ob, sizeof(ob), "%s/blobs", c->outside);
    mkdir(ob, 0755);
    assert_int_equal(symlink(ob, path2(c->repo_dir, "blobs")), 0);
    fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, path2(c->repo_dir, "blobs"));
    swt_run_free(&r);
    assert_int_equal(entries(ob), 0);
    assert_int_equal(unlink(path2(c->repo_dir, "blobs")), 0);

    /* the HF cache: snapshots/<commit>/sub -> a directory outside */
    char snap[4600], os[4600];
    snprintf(snap, sizeof(snap), "%s/snapshots/%s", c->repo_dir, COMMIT);
    assert_int_equal(sw_mkdir_p(snap, 0755, &e), 0);
    snprintf(os, sizeof(os), "%s/snap", c->outside);
    mkdir(os, 0755);
    assert_int_equal(symlink(os, path2(snap, "sub")), 0);
    fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, path2(snap, "sub"));
    swt_run_free(&r);
    assert_int_equal(entries(os), 0);
    assert_int_equal(unlink(path2(snap, "sub")), 0);

    /* not an attack, the layout's own links: a snapshot file linked outside is replaced by the
     * relative link to its blob (never written through), and the cache then works as usual */
    swt_write_str(path2(c->outside, "cfg"), "{\"outside\": 1}\n");
    unlink(path2(snap, "config.json"));
    assert_int_equal(symlink(path2(c->outside, "cfg"), path2(snap, "config.json")), 0);
    fetch(&r, NULL, NULL, NULL, NULL);
    if (r.status != 0)
        print_error("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->outside, "cfg"), "{\"outside\": 1}\n", 15));
    char l[4600], want[200];
    ssize_t n = readlink(path2(snap, "config.json"), l, sizeof(l) - 1);
    assert_true(n > 0);
    l[n] = '\0';
    snprintf(want, sizeof(want), "../../blobs/%s", swhub_gitsha1(c->hub, "config.json"));
    assert_string_equal(l, want);
    assert_true(swt_file_is(path2(snap, SUBF), c->subf, c->subf_n));
    hub_free(c);
}

/* ---- defect 5: an ETag that verifies nothing ------------------------------------------------ */

/* GETs that reached the CDN so far */
static int count_gets(const char *log)
{
    int n = 0;
    for (const char *q = strstr(log, "GET /cdn/"); q; q = strstr(q + 1, "GET /cdn/"))
        n++;
    return n;
}

static void test_opaque_etag(void **state)
{
    (void)state;
    struct ctx *c = hub_new(SWHUB_ETAG_OPAQUE);
    NEED_HUB(c);
    struct swt_run r;
    /* not accepted by default: non-zero, "unverified" per file and in the summary, nothing in
     * place */
    fetch(&r, "--dest", c->dest, "--json", NULL);
    assert_int_not_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_false(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    assert_true(json_is_false(json_object_get(j, "verified")));
    assert_true(json_is_true(json_object_get(file_entry(j, SHARD), "unverified")));
    assert_null(json_object_get(file_entry(j, "config.json"), "unverified"));
    json_decref(j);
    swt_run_free(&r);
    assert_false(lexists(path2(c->dest, SHARD)));
    /* the human view says it too */
    fetch(&r, "--dest", c->dest, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, "unverified");
    must_say(&r, "--allow-unverified");
    swt_run_free(&r);
    assert_false(lexists(path2(c->dest, SHARD)));
    /* accepted on request: exit 0, still reported unverified */
    fetch(&r, "--dest", c->dest, "--allow-unverified", "--json");
    if (r.status != 0)
        print_error("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    assert_true(json_is_false(json_object_get(j, "verified")));
    assert_true(json_is_true(json_object_get(file_entry(j, SHARD), "unverified")));
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->dest, SHARD), c->shard, c->shard_n));
    fetch(&r, "--dest", c->dest, "--allow-unverified", NULL);
    assert_int_equal(r.status, 0);
    must_say(&r, "unverified");
    swt_run_free(&r);
    /* in place from an earlier run, still unverified: non-zero without the flag */
    fetch(&r, "--dest", c->dest, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, "unverified");
    swt_run_free(&r);
    /* the HF cache: not accepted by default either; the bytes wait in an .incomplete named
     * after the commit and path (never after the ETag) */
    char snap[4600], want[200];
    snprintf(snap, sizeof(snap), "%s/snapshots/%s/%s", c->repo_dir, COMMIT, SHARD);
    fetch(&r, "--json", NULL, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    assert_true(json_is_true(json_object_get(file_entry(j, SHARD), "unverified")));
    json_decref(j);
    swt_run_free(&r);
    assert_false(lexists(snap));
    char *log = swhub_log_text(c->hub);
    int gets = count_gets(log);
    free(log);
    /* accepted: the blob is named by the sha256 of the bytes received, without fetching again */
    fetch(&r, "--json", "--allow-unverified", NULL, NULL);
    if (r.status != 0)
        print_error("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    assert_true(json_is_false(json_object_get(j, "verified")));
    assert_true(json_is_true(json_object_get(file_entry(j, SHARD), "unverified")));
    json_decref(j);
    swt_run_free(&r);
    log = swhub_log_text(c->hub);
    assert_int_equal(count_gets(log), gets);
    free(log);
    char l[4600];
    ssize_t n = readlink(snap, l, sizeof(l) - 1);
    assert_true(n > 0);
    l[n] = '\0';
    snprintf(want, sizeof(want), "../../blobs/%s", swhub_sha256(c->hub, SHARD));
    assert_string_equal(l, want);
    assert_true(swt_file_is(snap, c->shard, c->shard_n));
    assert_int_equal(entries(path2(c->repo_dir, "blobs")), 3); /* no .incomplete left */
    /* present next time (its bytes hash to its name), still unverified */
    fetch(&r, "--allow-unverified", NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    must_say(&r, "present");
    must_say(&r, "unverified");
    swt_run_free(&r);
    fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    must_say(&r, "unverified");
    swt_run_free(&r);
    /* a blob whose bytes no longer hash to its name is removed and fetched again */
    unsigned char *other = swhub_safetensors(c->shard_n, 12345u, "w");
    char bp[4700];
    snprintf(bp, sizeof(bp), "%s/blobs/%s", c->repo_dir, swhub_sha256(c->hub, SHARD));
    swt_write(bp, other, c->shard_n);
    free(other);
    fetch(&r, "--allow-unverified", NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_is(snap, c->shard, c->shard_n));
    hub_free(c);
}

static bool escaped_found;
static int find_escaped(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (!strcmp(p + ftw->base, "escaped") || strstr(p + ftw->base, "%2F"))
        escaped_found = true;
    return 0;
}

static void test_etag_with_path(void **state)
{
    (void)state;
    struct ctx *c = hub_new(SWHUB_ETAG_PATH);
    NEED_HUB(c);
    struct swt_run r;
    /* the HF cache, where a blob's name is its hash */
    fetch(&r, "--json", NULL, NULL, NULL);
    assert_int_not_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    assert_true(json_is_true(json_object_get(file_entry(j, SHARD), "unverified")));
    json_decref(j);
    swt_run_free(&r);
    fetch(&r, "--allow-unverified", NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    char snap[4600];
    snprintf(snap, sizeof(snap), "%s/snapshots/%s/%s", c->repo_dir, COMMIT, SHARD);
    assert_true(swt_file_is(snap, c->shard, c->shard_n));
    /* --dest, accepted on request */
    fetch(&r, "--dest", c->dest, "--allow-unverified", "--json");
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "unverified")), 1);
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(path2(c->dest, SHARD), c->shard, c->shard_n));
    /* "../../escaped/x" became no file or directory anywhere: not under the cache's blobs, not
     * two levels up from them (the cache root), not in the test's directory */
    escaped_found = false;
    nftw(c->tmp, find_escaped, 16, FTW_PHYS);
    assert_false(escaped_found);
    assert_false(lexists(path2(c->cache, "escaped")));
    hub_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linked_incomplete),   cmocka_unit_test(test_linked_target),
        cmocka_unit_test(test_linked_subdirectory), cmocka_unit_test(test_opaque_etag),
        cmocka_unit_test(test_etag_with_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
