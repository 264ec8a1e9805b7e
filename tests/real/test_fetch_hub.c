/*
 * slipway fetch against a real nginx laid out like the Hugging Face Hub (tests/support/swhub):
 * resolve URLs that 302 to a CDN path with X-Linked-Size / X-Linked-Etag / X-Repo-Commit, the
 * model-info API, Range. One test per fault: a 403 HTML page, a 500, a transfer cut by killing
 * the server then resumed, a server that ignores Range, a wrong sha256, an LFS pointer body, a
 * full disk (a 4 MiB tmpfs when we may mount one; RLIMIT_FSIZE in the child otherwise and as
 * well), a branch that moves during the listing. Each must end with no bad file in place, a
 * clear message and a state the next run resumes from. A token in the environment must never
 * appear in any process's argv (/proc/<pid>/cmdline, scanned while slipway and nginx run), nor
 * in any output or server log.
 *
 * Synchronisation is by state, never by sleeping: the cut waits (bounded) until the
 * .incomplete holds at least 1 MiB, then kills nginx by its PID. Skips when nginx is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fetch.h>

#include "swhub.h"
#include "swtest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPO   "acme/tiny-model"
#define COMMIT "0123456789abcdef0123456789abcdef01234567"
#define TOKEN  "hf_sEcReTtOkEn0123456789abcdefXYZ"
#define BIG    (8u << 20)
#define SMALL  (1u << 20)

struct ctx {
    struct swhub *hub;
    char *tmp;
    char cache[4200];
    char home[4200];
    unsigned char *big, *small;
    size_t big_n, small_n;
    char config[256];
};

/* A hub with a 8 MiB shard, a 1 MiB shard (both LFS) and config.json (regular), faults set by
 * the caller before start. */
static struct ctx *hub_new(void)
{
    struct ctx *c = calloc(1, sizeof(*c));
    c->hub = swhub_client(REPO, COMMIT, &c->tmp, c->cache, sizeof(c->cache), "hub-cache", c->home,
                          sizeof(c->home));
    if (!c->hub) {
        free(c);
        return NULL;
    }
    c->big_n = BIG;
    c->small_n = SMALL;
    c->big = swhub_safetensors(BIG, 2463534242u, "a");
    c->small = swhub_safetensors(SMALL, 88172645u, "b");
    snprintf(c->config, sizeof(c->config),
             "{\"model_type\": \"llama\", \"num_hidden_layers\": 2}\n");
    swhub_file(c->hub, "model-00001-of-00002.safetensors", c->big, BIG, true);
    swhub_file(c->hub, "model-00002-of-00002.safetensors", c->small, SMALL, true);
    swhub_file(c->hub, "config.json", c->config, strlen(c->config), false);
    return c;
}

static void hub_go(struct ctx *c)
{
    assert_int_equal(swhub_start(c->hub), 0);
    swhub_env(c->hub, c->cache, c->home);
}

static void hub_free(struct ctx *c)
{
    if (!c)
        return;
    swhub_free(c->hub);
    swt_tmpdir_free(c->tmp);
    free(c->big);
    free(c->small);
    free(c);
}

#define NEED_HUB(c) swt_need((c) != NULL, "the test Hub (nginx: /usr/sbin/nginx, swhub_new failed)")

static const char *blob(struct ctx *c, const char *name)
{
    static char p[4][4600];
    static int i;
    char *b = p[i++ % 4];
    const char *h = swhub_sha256(c->hub, name);
    snprintf(b, 4600, "%s/models--acme--tiny-model/blobs/%s", c->cache, h);
    return b;
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

static long long fsize(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* No .incomplete and no blob for a file that failed, anywhere in the cache. */
static int count_suffix(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), s = strlen(suffix);
        if (l >= s && !strcmp(de->d_name + l - s, suffix))
            n++;
    }
    closedir(d);
    return n;
}

static const char *blobs_dir(struct ctx *c)
{
    static char p[4600];
    snprintf(p, sizeof(p), "%s/models--acme--tiny-model/blobs", c->cache);
    return p;
}

static void no_token_in(const char *what, const char *text)
{
    if (text && strstr(text, TOKEN))
        fail_msg("the token appears in %s", what);
}

static void run_fetch(struct swt_run *r, const char *a1, const char *a2, const char *a3,
                      const char *a4)
{
    swt_slipway(r, "fetch", REPO, a1, a2, a3, a4, (char *)NULL);
    no_token_in("stdout", r->out);
    no_token_in("stderr", r->err);
}

/* ------------------------------------------------------------------------------------------- */

static void test_manifest_from_headers(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    hub_go(c);
    struct sw_payload_manifest m;
    struct sw_err e;
    struct sw_hub_opts o = {0};
    assert_int_equal(sw_hub_manifest(REPO, NULL, &o, &m, &e), 0);
    assert_string_equal(m.commit, COMMIT);
    assert_string_equal(m.revision, "main");
    assert_int_equal(m.n_files, 3);
    const struct sw_payload_file *f =
        sw_payload_manifest_find(&m, "model-00001-of-00002.safetensors");
    assert_non_null(f);
    assert_true(f->lfs);
    assert_int_equal(f->size, BIG);
    assert_string_equal(f->sha256, swhub_sha256(c->hub, "model-00001-of-00002.safetensors"));
    f = sw_payload_manifest_find(&m, "config.json");
    assert_non_null(f);
    assert_false(f->lfs);
    assert_int_equal(f->size, strlen(c->config));
    assert_string_equal(f->sha256, "");
    assert_string_equal(f->git_oid, swhub_gitsha1(c->hub, "config.json"));
    sw_payload_manifest_free(&m);
    /* --include */
    const char *inc[] = {"*.json", NULL};
    o.include = inc;
    assert_int_equal(sw_hub_manifest(REPO, "main", &o, &m, &e), 0);
    assert_int_equal(m.n_files, 1);
    sw_payload_manifest_free(&m);
    /* an unknown repo */
    assert_int_equal(sw_hub_manifest("acme/nope", "main", NULL, &m, &e), SW_EHTTP);
    assert_non_null(strstr(e.msg, "404"));
    /* the HEADs did not follow the redirect: no GET reached the CDN */
    char *log = swhub_log_text(c->hub);
    assert_null(strstr(log, "GET /cdn/"));
    assert_non_null(
        strstr(log, "HEAD /acme/tiny-model/resolve/main/model-00001-of-00002.safetensors 302"));
    free(log);
    hub_free(c);
}

static void test_fetch_into_hf_cache_then_present(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    hub_go(c);
    struct swt_run r;
    run_fetch(&r, "--json", NULL, NULL, NULL);
    if (r.status != 0)
        print_error("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "commit")), COMMIT);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "counts"), "downloaded")), 3);
    json_decref(j);
    swt_run_free(&r);
    /* the layout huggingface_hub reads */
    char p[5000], link[5000];
    snprintf(p, sizeof(p),
             "%s/models--acme--tiny-model/snapshots/%s/model-00001-of-00002.safetensors", c->cache,
             COMMIT);
    ssize_t n = readlink(p, link, sizeof(link) - 1);
    assert_true(n > 0);
    link[n] = '\0';
    char want[200];
    snprintf(want, sizeof(want), "../../blobs/%s",
             swhub_sha256(c->hub, "model-00001-of-00002.safetensors"));
    assert_string_equal(link, want);
    assert_true(swt_file_is(p, c->big, BIG));
    snprintf(p, sizeof(p), "%s/models--acme--tiny-model/snapshots/%s/config.json", c->cache,
             COMMIT);
    assert_true(swt_file_is(p, c->config, strlen(c->config)));
    snprintf(p, sizeof(p), "%s/models--acme--tiny-model/blobs/%s", c->cache,
             swhub_gitsha1(c->hub, "config.json"));
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/models--acme--tiny-model/refs/main", c->cache);
    char *ref = NULL;
    size_t rl;
    struct sw_err e;
    assert_int_equal(sw_read_file(p, 100, &ref, &rl, &e), 0);
    assert_string_equal(ref, COMMIT);
    sw_free(ref);
    assert_int_equal(count_suffix(blobs_dir(c), ".incomplete"), 0);
    /* again: everything is present (hashed, not fetched) */
    char *log0 = swhub_log_text(c->hub);
    size_t gets0 = 0;
    for (char *q = strstr(log0, "GET /cdn/"); q; q = strstr(q + 1, "GET /cdn/"))
        gets0++;
    assert_int_equal(gets0, 2);
    free(log0);
    run_fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "present"));
    swt_run_free(&r);
    char *log1 = swhub_log_text(c->hub);
    size_t gets1 = 0;
    for (char *q = strstr(log1, "GET /cdn/"); q; q = strstr(q + 1, "GET /cdn/"))
        gets1++;
    assert_int_equal(gets1, 2);
    free(log1);
    hub_free(c);
}

static void test_reuse_cache_into_dest_and_dry_run(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    hub_go(c);
    /* another tool downloaded the big shard into the HF cache */
    char p[5000];
    snprintf(p, sizeof(p), "%s/models--acme--tiny-model/blobs", c->cache);
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(p, 0755, &e), 0);
    swt_write(blob(c, "model-00001-of-00002.safetensors"), c->big, BIG);
    char dest[4300];
    snprintf(dest, sizeof(dest), "%s/dest", c->tmp);
    struct swt_run r;
    run_fetch(&r, "--dest", dest, "--dry-run", "--json");
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *cn = json_object_get(j, "counts");
    assert_int_equal(json_integer_value(json_object_get(cn, "linked")), 1);
    assert_int_equal(json_integer_value(json_object_get(cn, "planned")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "bytes_needed")),
                     SMALL + strlen(c->config));
    json_decref(j);
    swt_run_free(&r);
    assert_false(exists(dest) && exists(swt_join(dest, "config.json")));
    run_fetch(&r, "--dest", dest, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "linked"));
    swt_run_free(&r);
    assert_true(swt_file_is(swt_join(dest, "model-00001-of-00002.safetensors"), c->big, BIG));
    assert_true(swt_file_is(swt_join(dest, "model-00002-of-00002.safetensors"), c->small, SMALL));
    assert_true(swt_file_is(swt_join(dest, "config.json"), c->config, strlen(c->config)));
    char *log = swhub_log_text(c->hub);
    char want[200];
    snprintf(want, sizeof(want), "GET /cdn/%s",
             swhub_sha256(c->hub, "model-00001-of-00002.safetensors"));
    assert_null(strstr(log, want)); /* reused, not fetched */
    free(log);
    /* a wrong file in place is removed and replaced */
    swt_write_str(swt_join(dest, "config.json"), "{\"not\": \"it\"}\n");
    run_fetch(&r, "--dest", dest, NULL, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_is(swt_join(dest, "config.json"), c->config, strlen(c->config)));
    hub_free(c);
}

/* A CDN fault on the big shard: exit 1, the message, nothing at its place. */
static void fault_case(enum swhub_fault f, const char *const *want_msgs)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", f);
    hub_go(c);
    struct swt_run r;
    run_fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_equal(r.status, 1);
    for (size_t i = 0; want_msgs[i]; i++)
        if (!strstr(r.err, want_msgs[i]))
            fail_msg("stderr lacks \"%s\":\n%s", want_msgs[i], r.err);
    swt_run_free(&r);
    const char *b = blob(c, "model-00001-of-00002.safetensors");
    assert_false(exists(b));
    char inc[5000];
    snprintf(inc, sizeof(inc), "%s.incomplete", b);
    assert_false(exists(inc)); /* nothing of it was good */
    assert_int_equal(count_suffix(blobs_dir(c), ".incomplete"), 0);
    char snap[5000];
    snprintf(snap, sizeof(snap),
             "%s/models--acme--tiny-model/snapshots/%s/model-00001-of-00002.safetensors", c->cache,
             COMMIT);
    assert_false(exists(snap));
    /* the other files are done; the fault fixed, the next run fetches only the missing one */
    assert_true(exists(blob(c, "model-00002-of-00002.safetensors")));
    swhub_stop(c->hub);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_OK);
    hub_go(c);
    run_fetch(&r, "--json", NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *cn = json_object_get(j, "counts");
    assert_int_equal(json_integer_value(json_object_get(cn, "downloaded")), 1);
    assert_int_equal(json_integer_value(json_object_get(cn, "present")), 2);
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(snap, c->big, BIG));
    hub_free(c);
}

static void test_403_html(void **state)
{
    const char *w[] = {"HTTP 403", "HTML", "model-00001-of-00002.safetensors", NULL};
    fault_case(SWHUB_403_HTML, w);
}

static void test_500(void **state)
{
    const char *w[] = {"HTTP 500", "model-00001-of-00002.safetensors", NULL};
    fault_case(SWHUB_500, w);
}

static void test_wrong_sha256(void **state)
{
    const char *w[] = {"sha256 mismatch", "removed", NULL};
    fault_case(SWHUB_WRONG_SHA, w);
}

static void test_lfs_pointer(void **state)
{
    const char *w[] = {"lfs", "model-00001-of-00002.safetensors", NULL};
    fault_case(SWHUB_LFS_POINTER, w);
}

/* ---- a cut in the middle, then resumed ---- */

static pid_t spawn(const char *const *argv, const char *out, const char *err, long fsize_limit)
{
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        if (fsize_limit > 0) {
            struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Every process's argv, now: the token must be in none. Returns how many were read. */
static int scan_cmdlines(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char p[300];
        snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
        int fd = open(p, O_RDONLY);
        if (fd < 0)
            continue;
        char buf[65536];
        ssize_t k = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (k <= 0)
            continue;
        n++;
        if (memmem(buf, (size_t)k, TOKEN, strlen(TOKEN)))
            fail_msg("the token is in the argv of pid %s", de->d_name);
    }
    closedir(d);
    return n;
}

static char *slurp(const char *p)
{
    char *d = NULL;
    size_t l;
    struct sw_err e;
    if (sw_read_file(p, 16u << 20, &d, &l, &e))
        return sw_strdup("");
    return d;
}

static void test_cut_then_resume_with_token(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_require_token(c->hub, TOKEN);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_SLOW);
    hub_go(c);
    /* without the token: refused, and said why */
    struct swt_run r;
    run_fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "401"));
    assert_non_null(strstr(r.err, "HF_TOKEN"));
    swt_run_free(&r);
    setenv("HF_TOKEN", TOKEN, 1);
    char out[4400], err[4400];
    snprintf(out, sizeof(out), "%s/out1", c->tmp);
    snprintf(err, sizeof(err), "%s/err1", c->tmp);
    const char *argv[] = {swt_bin(), "fetch", REPO, "--include", "model-00001*", NULL};
    pid_t pid = spawn(argv, out, err, 0);
    char inc[5000];
    snprintf(inc, sizeof(inc), "%s.incomplete", blob(c, "model-00001-of-00002.safetensors"));
    bool reached = false;
    int scanned = 0;
    for (int i = 0; i < 6000 && !reached; i++) { /* bounded: 60 s */
        if (i % 10 == 0)
            scanned += scan_cmdlines();
        reached = fsize(inc) >= (long long)SMALL;
        if (!reached)
            sw_sleep_ms(10);
    }
    assert_true(reached);
    assert_true(scanned > 0);
    scan_cmdlines();
    swhub_kill(c->hub); /* the connection dies mid-body */
    int st = swt_wait_exit(pid, 120);
    char *o1 = slurp(out), *e1 = slurp(err);
    no_token_in("stdout", o1);
    no_token_in("stderr", e1);
    if (st != 1)
        print_error("exit %d\n%s\n%s\n", st, o1, e1);
    assert_int_equal(st, 1);
    assert_non_null(strstr(e1, "cut"));
    assert_non_null(strstr(e1, "run again to resume"));
    sw_free(o1);
    sw_free(e1);
    long long kept = fsize(inc);
    assert_true(kept >= (long long)SMALL && kept < (long long)BIG);
    assert_false(exists(blob(c, "model-00001-of-00002.safetensors")));
    /* the kept bytes are the file's first bytes */
    char *part = slurp(inc);
    assert_memory_equal(part, c->big, (size_t)kept);
    sw_free(part);
    /* the server comes back (full speed): the next run resumes where the cut left it */
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_OK);
    assert_int_equal(swhub_start(c->hub), 0);
    run_fetch(&r, "--json", "--include", "model-00001*", NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *f0 = json_array_get(json_object_get(j, "files"), 0);
    assert_int_equal(json_integer_value(json_object_get(f0, "resumed_from")), kept);
    assert_int_equal(json_integer_value(json_object_get(f0, "fetched")), (long long)BIG - kept);
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(blob(c, "model-00001-of-00002.safetensors"), c->big, BIG));
    assert_false(exists(inc));
    char *log = swhub_log_text(c->hub);
    char want[300];
    snprintf(want, sizeof(want), "206 \"bytes=%lld-\"", kept);
    assert_non_null(strstr(log, want));
    no_token_in("the access log", log);
    free(log);
    char elog[4300];
    snprintf(elog, sizeof(elog), "%s/error.log", swhub_dir(c->hub));
    char *el = slurp(elog);
    no_token_in("the server's error log", el);
    sw_free(el);
    hub_free(c);
}

static void test_server_ignores_range(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_NO_RANGE);
    hub_go(c);
    /* a previous run left half the file */
    struct sw_err e;
    assert_int_equal(sw_mkdir_p(blobs_dir(c), 0755, &e), 0);
    char inc[5000];
    snprintf(inc, sizeof(inc), "%s.incomplete", blob(c, "model-00001-of-00002.safetensors"));
    swt_write(inc, c->big, BIG / 2);
    struct swt_run r;
    run_fetch(&r, "--json", NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    json_t *files = json_object_get(j, "files");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(files); i++) {
        json_t *f = json_array_get(files, i);
        if (strcmp(json_string_value(json_object_get(f, "path")),
                   "model-00001-of-00002.safetensors"))
            continue;
        seen = true;
        assert_true(json_is_true(json_object_get(f, "range_ignored")));
        assert_non_null(strstr(json_string_value(json_object_get(f, "message")), "ignored Range"));
        assert_int_equal(json_integer_value(json_object_get(f, "fetched")), BIG);
    }
    assert_true(seen);
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(blob(c, "model-00001-of-00002.safetensors"), c->big, BIG));
    char *log = swhub_log_text(c->hub);
    char want[300];
    snprintf(want, sizeof(want), "200 \"bytes=%u-\" %u", BIG / 2, BIG);
    assert_non_null(strstr(log, want));
    free(log);
    /* and the human view says it */
    hub_free(c);
}

static void test_revision_moves(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_fault(c->hub, "model-00002-of-00002.safetensors", SWHUB_MOVED);
    hub_go(c);
    struct swt_run r;
    run_fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "moved"));
    assert_non_null(strstr(r.err, COMMIT));
    assert_non_null(strstr(r.err, swhub_other_commit(c->hub)));
    char pin[100];
    snprintf(pin, sizeof(pin), "--revision %s", COMMIT);
    assert_non_null(strstr(r.err, pin));
    swt_run_free(&r);
    assert_int_equal(count_suffix(blobs_dir(c), ""), 0); /* nothing fetched */
    char *log = swhub_log_text(c->hub);
    assert_null(strstr(log, "GET /cdn/"));
    free(log);
    /* pinned to the commit first seen, it completes */
    run_fetch(&r, "--revision", COMMIT, NULL, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_is(blob(c, "model-00002-of-00002.safetensors"), c->small, SMALL));
    hub_free(c);
}

static void test_disk_full_fsize(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    hub_go(c);
    /* the file size limit stops the write at 2 MiB of the 8 MiB shard */
    char out[4400], err[4400];
    snprintf(out, sizeof(out), "%s/out", c->tmp);
    snprintf(err, sizeof(err), "%s/err", c->tmp);
    const char *argv[] = {swt_bin(), "fetch", REPO, "--include", "model-00001*", NULL};
    pid_t pid = spawn(argv, out, err, 2l << 20);
    int st = swt_wait_exit(pid, 120);
    char *e1 = slurp(err);
    if (st != 1)
        print_error("exit %d\n%s\n", st, e1);
    assert_int_equal(st, 1);
    assert_non_null(strstr(e1, "no room on disk"));
    assert_non_null(strstr(e1, "run again to resume"));
    sw_free(e1);
    char inc[5000];
    snprintf(inc, sizeof(inc), "%s.incomplete", blob(c, "model-00001-of-00002.safetensors"));
    long long kept = fsize(inc);
    assert_true(kept > 0 && kept <= (2ll << 20));
    assert_false(exists(blob(c, "model-00001-of-00002.safetensors")));
    struct swt_run r;
    run_fetch(&r, "--include", "model-00001*", NULL, NULL);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_is(blob(c, "model-00001-of-00002.safetensors"), c->big, BIG));
    hub_free(c);
}

static void test_disk_full_tmpfs(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    hub_go(c);
    char mnt[4300];
    snprintf(mnt, sizeof(mnt), "%s/small-fs", c->tmp);
    mkdir(mnt, 0755);
    bool mounted = geteuid() == 0 && mount("tmpfs", mnt, "tmpfs", 0, "size=4m") == 0;
    if (!mounted) {
        char why[256];
        snprintf(why, sizeof(why), "%s", geteuid() ? "not root" : strerror(errno));
        hub_free(c);
        /* the RLIMIT_FSIZE test covers a full disk elsewhere; CI runs as root and gets both */
        swt_need(false, "a 4 MiB tmpfs to fill (mount needs root: %s)", why);
    }
    char dest[4400];
    snprintf(dest, sizeof(dest), "%s/model", mnt);
    struct swt_run r;
    run_fetch(&r, "--dest", dest, NULL, NULL);
    int st = r.status;
    char *errtext = strdup(r.err);
    swt_run_free(&r);
    bool any = exists(swt_join(dest, "model-00001-of-00002.safetensors.incomplete")) ||
               exists(swt_join(dest, "model-00001-of-00002.safetensors"));
    umount2(mnt, MNT_DETACH);
    assert_int_equal(st, 1);
    if (!strstr(errtext, "not enough disk space"))
        fail_msg("%s", errtext);
    assert_false(any); /* refused before the first byte */
    free(errtext);
    hub_free(c);
}

static void test_token_file_permissions(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_require_token(c->hub, TOKEN);
    hub_go(c);
    char tf[4400];
    snprintf(tf, sizeof(tf), "%s/token", c->home);
    swt_write_str(tf, TOKEN "\n");
    chmod(tf, 0644);
    struct swt_run r;
    run_fetch(&r, "--include", "*.json", NULL, NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "0644"));
    assert_non_null(strstr(r.err, tf));
    swt_run_free(&r);
    chmod(tf, 0600);
    run_fetch(&r, "--include", "*.json", "--quiet", NULL);
    assert_int_equal(r.status, 0);
    /* --quiet: one machine-readable line per file */
    char want[300];
    snprintf(want, sizeof(want), "downloaded\tconfig.json\t%zu\t", strlen(c->config));
    assert_non_null(strstr(r.out, want));
    assert_string_equal(r.err, "");
    swt_run_free(&r);
    hub_free(c);
}

/* An ENDPOINT of a fleet: payload.repo/revision/files/path; the manifest pinned beside the fleet
 * by a first run (--write-manifest), then used instead of asking the Hub. */
static void test_endpoint_with_manifest_beside_fleet(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    char index[512];
    snprintf(index, sizeof(index),
             "{\"metadata\": {\"total_size\": %u}, \"weight_map\": {"
             "\"a\": \"model-00001-of-00002.safetensors\", "
             "\"b\": \"model-00002-of-00002.safetensors\"}}\n",
             BIG + SMALL - 2 * 136);
    swhub_file(c->hub, "model.safetensors.index.json", index, strlen(index), false);
    hub_go(c);
    char fleet[4400], dest[4400], man[4400], text[8192];
    snprintf(fleet, sizeof(fleet), "%s/fleet.yaml", c->tmp);
    snprintf(dest, sizeof(dest), "%s/models/tiny", c->tmp);
    snprintf(man, sizeof(man), "%s/fleet.manifests/tiny.json", c->tmp);
    snprintf(text, sizeof(text),
             "version: 1\n"
             "hosts:\n  localhost:\n    transport: local\n    devices:\n      cpu: {kind: cpu, "
             "vendor: cpu}\n"
             "endpoints:\n  tiny:\n    host: localhost\n    engine: vllm\n"
             "    listen: 127.0.0.1:18000\n"
             "    payload:\n      repo: %s\n      revision: main\n      path: %s\n"
             "      files: [\"*.safetensors\", \"*.json\"]\n",
             REPO, dest);
    swt_write_str(fleet, text);
    struct sw_err e;
    char mdir[4400];
    snprintf(mdir, sizeof(mdir), "%s/fleet.manifests", c->tmp);
    assert_int_equal(sw_mkdir_p(mdir, 0755, &e), 0);
    struct swt_run r;
    swt_slipway(&r, "fetch", "tiny", "--fleet", fleet, "--write-manifest", man, "--json", NULL);
    if (r.status != 0)
        print_error("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "endpoint")), "tiny");
    assert_int_equal(json_array_size(json_object_get(j, "files")), 4); /* the payload's globs */
    assert_string_equal(json_string_value(json_object_get(j, "dir")), dest);
    json_decref(j);
    swt_run_free(&r);
    assert_true(swt_file_is(swt_join(dest, "model-00001-of-00002.safetensors"), c->big, BIG));
    assert_true(swt_file_is(swt_join(dest, "config.json"), c->config, strlen(c->config)));
    struct sw_payload_manifest m;
    assert_int_equal(sw_payload_manifest_load(man, &m, &e), 0);
    assert_string_equal(m.commit, COMMIT);
    assert_int_equal(m.n_files, 4);
    sw_payload_manifest_free(&m);
    /* the manifest beside the fleet is used: no question to the Hub; a lost shard comes back */
    unlink(swt_join(dest, "model-00002-of-00002.safetensors"));
    char *log0 = swhub_log_text(c->hub);
    size_t n0 = strlen(log0);
    free(log0);
    swt_slipway(&r, "fetch", "tiny", "--fleet", fleet, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "downloaded"));
    swt_run_free(&r);
    char *log1 = swhub_log_text(c->hub);
    assert_null(strstr(log1 + n0, "/api/"));
    assert_null(strstr(log1 + n0, "HEAD "));
    assert_non_null(strstr(log1 + n0, "GET /acme/tiny-model/resolve/" COMMIT "/model-00002"));
    free(log1);
    assert_true(swt_file_is(swt_join(dest, "model-00002-of-00002.safetensors"), c->small, SMALL));
    /* and the payload verifies with --verify-only against that manifest */
    swt_slipway(&r, "fetch", "tiny", "--fleet", fleet, "--verify-only", NULL);
    if (r.status != 0)
        print_error("%s\n%s\n", r.out, r.err);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    hub_free(c);
}

/* The server stops cleanly after half the bytes (a Content-Length that says so): kept, resumed. */
static void test_short_body_resumed(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_TRUNCATED);
    hub_go(c);
    struct swt_run r;
    run_fetch(&r, "--include", "model-00001*", NULL, NULL);
    assert_int_equal(r.status, 1);
    char want[200];
    snprintf(want, sizeof(want), "sent %u of %u bytes", BIG / 2, BIG);
    if (!strstr(r.err, want))
        fail_msg("%s", r.err);
    assert_non_null(strstr(r.err, "run again to resume"));
    swt_run_free(&r);
    char inc[5000];
    snprintf(inc, sizeof(inc), "%s.incomplete", blob(c, "model-00001-of-00002.safetensors"));
    assert_int_equal(fsize(inc), BIG / 2);
    assert_false(exists(blob(c, "model-00001-of-00002.safetensors")));
    swhub_stop(c->hub);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_OK);
    hub_go(c);
    run_fetch(&r, "--include", "model-00001*", NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "resumed from 4.0 MiB"));
    swt_run_free(&r);
    assert_true(swt_file_is(blob(c, "model-00001-of-00002.safetensors"), c->big, BIG));
    char *log = swhub_log_text(c->hub);
    snprintf(want, sizeof(want), "206 \"bytes=%u-\" %u", BIG / 2, BIG / 2);
    assert_non_null(strstr(log, want));
    free(log);
    hub_free(c);
}

/* Ctrl-C in the middle: the transfer is cancelled, said, its bytes kept; the next run resumes. */
static void test_interrupt_then_resume(void **state)
{
    struct ctx *c = hub_new();
    NEED_HUB(c);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_SLOW);
    hub_go(c);
    char out[4400], err[4400];
    snprintf(out, sizeof(out), "%s/out", c->tmp);
    snprintf(err, sizeof(err), "%s/err", c->tmp);
    const char *argv[] = {swt_bin(), "fetch", REPO, NULL};
    pid_t pid = spawn(argv, out, err, 0);
    char inc[5000];
    snprintf(inc, sizeof(inc), "%s.incomplete", blob(c, "model-00001-of-00002.safetensors"));
    bool reached = false;
    for (int i = 0; i < 6000 && !reached; i++) { /* bounded: 60 s */
        reached = fsize(inc) >= (long long)SMALL;
        if (!reached)
            sw_sleep_ms(10);
    }
    assert_true(reached);
    kill(pid, SIGINT);
    int st = swt_wait_exit(pid, 120);
    char *e1 = slurp(err);
    if (st != 1 || !strstr(e1, "interrupted"))
        fail_msg("exit %d: %s", st, e1);
    assert_non_null(strstr(e1, "run again to resume"));
    sw_free(e1);
    long long kept = fsize(inc);
    assert_true(kept >= (long long)SMALL && kept < (long long)BIG);
    assert_false(exists(blob(c, "model-00001-of-00002.safetensors")));
    swhub_stop(c->hub);
    swhub_fault(c->hub, "model-00001-of-00002.safetensors", SWHUB_OK);
    hub_go(c);
    struct swt_run r;
    run_fetch(&r, NULL, NULL, NULL, NULL);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "resumed from"));
    swt_run_free(&r);
    assert_true(swt_file_is(blob(c, "model-00001-of-00002.safetensors"), c->big, BIG));
    hub_free(c);
}

int main(void)
{
    sw_core_init();
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_from_headers),
        cmocka_unit_test(test_fetch_into_hf_cache_then_present),
        cmocka_unit_test(test_reuse_cache_into_dest_and_dry_run),
        cmocka_unit_test(test_403_html),
        cmocka_unit_test(test_500),
        cmocka_unit_test(test_wrong_sha256),
        cmocka_unit_test(test_lfs_pointer),
        cmocka_unit_test(test_cut_then_resume_with_token),
        cmocka_unit_test(test_server_ignores_range),
        cmocka_unit_test(test_interrupt_then_resume),
        cmocka_unit_test(test_short_body_resumed),
        cmocka_unit_test(test_revision_moves),
        cmocka_unit_test(test_disk_full_fsize),
        cmocka_unit_test(test_disk_full_tmpfs),
        cmocka_unit_test(test_token_file_permissions),
        cmocka_unit_test(test_endpoint_with_manifest_beside_fleet),
    };
    return cmocka_run_group_tests_name("fetch_hub", tests, NULL, NULL);
}
