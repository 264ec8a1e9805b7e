/*
 * `slipway retire` on real directories: refused (exit 1, the tag named, nothing moved) while a
 * kept tag's manifest needs the payload, also through a symlinked path; a dry run moves nothing;
 * after the tag is retired it moves by rename within a filesystem, recorded in the ledger (the
 * real binary). The library's move itself (sw_payload_retire, payload/retire.c): by copy + verify
 * + remove onto tmpfs, byte-identical, recorded; and a copy that runs out of space half-way (a
 * 1 MiB tmpfs mounted for the test) leaves the source whole and no partial copy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <slipway/ledger.h>
#include <slipway/payload.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

struct fx {
    char *dir;
    char shm[256];   /* a directory on /dev/shm (tmpfs) */
    char small[512]; /* a 1 MiB tmpfs mount point, when mounted */
    bool mounted;
    char ledger[4200];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->dir = swt_tmpdir();
    snprintf(f->ledger, sizeof(f->ledger), "%s/fleet.ledger.sqlite", f->dir);
    snprintf(f->shm, sizeof(f->shm), "/dev/shm/slipway-retire-%ld", (long)getpid());
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->mounted)
        umount2(f->small, MNT_DETACH);
    swt_tmpdir_free(f->dir);
    char *shm = strdup(f->shm);
    /* swt_tmpdir_free removes any tree; reuse it for the tmpfs side */
    if (access(shm, F_OK) == 0)
        swt_tmpdir_free(shm);
    else
        free(shm);
    free(f);
    return 0;
}

/* A payload: a 3 MiB weights file of varied bytes, a nested config, a symlink. */
static void make_payload(const char *dir)
{
    char p[4300];
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(p, sizeof(p), "%s/sub", dir);
    assert_int_equal(mkdir(p, 0750), 0);
    size_t n = 3u << 20;
    unsigned char *b = malloc(n);
    swt_noise(b, n, 2463534242u);
    swt_write(swt_join(dir, "model.gguf"), b, n);
    free(b);
    swt_write_str(swt_join(p, "config.json"), "{\"n_ctx\": 8192}\n");
    snprintf(p, sizeof(p), "%s/latest", dir);
    assert_int_equal(symlink("model.gguf", p), 0);
}

/* dst holds what a pristine make_payload holds. */
static void same_payload(const char *ref, const char *dst)
{
    char a[4300], b[4300], t[64];
    char *data = NULL;
    size_t n = 0;
    struct sw_err e;
    snprintf(a, sizeof(a), "%s/model.gguf", ref);
    assert_int_equal(sw_read_file(a, 8u << 20, &data, &n, &e), 0);
    snprintf(b, sizeof(b), "%s/model.gguf", dst);
    assert_true(swt_file_is(b, data, n));
    sw_free(data);
    snprintf(b, sizeof(b), "%s/sub/config.json", dst);
    assert_true(swt_file_is(b, "{\"n_ctx\": 8192}\n", 16));
    snprintf(b, sizeof(b), "%s/latest", dst);
    ssize_t k = readlink(b, t, sizeof(t) - 1);
    assert_true(k > 0);
    t[k] = '\0';
    assert_string_equal(t, "model.gguf");
    struct stat st;
    snprintf(b, sizeof(b), "%s/sub", dst);
    assert_int_equal(stat(b, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0750);
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* A kept tag whose manifest names dir/model.gguf, and a newer last-good elsewhere. */
static void tag_payload(struct fx *f, const char *dir, char old[SW_LEDGER_TAG_MAX])
{
    struct sw_ledger l;
    struct sw_err e;
    char pay[4400], name[SW_LEDGER_TAG_MAX];
    assert_int_equal(sw_ledger_open(&l, f->ledger, NULL, &e), 0);
    snprintf(pay, sizeof(pay), "[{\"path\":\"%s/model.gguf\",\"size\":%u,\"sha256\":null}]", dir,
             3u << 20);
    json_t *p = json_loads(pay, 0, NULL), *none = json_array();
    json_t *s1 = json_loads("{\"engine\":\"llama.cpp\",\"model\":\"old\",\"ctx\":8192}", 0, NULL);
    json_t *s2 = json_loads("{\"engine\":\"llama.cpp\",\"model\":\"new\",\"ctx\":8192}", 0, NULL);
    struct sw_ledger_tag_new t = {.endpoint = "frank", .shape = s1, .payload = p};
    assert_int_equal(sw_ledger_tag_commit(&l, &t, old, NULL, &e), 0);
    t.shape = s2;
    t.payload = none;
    assert_int_equal(sw_ledger_tag_commit(&l, &t, name, NULL, &e), 0);
    json_decref(p);
    json_decref(none);
    json_decref(s1);
    json_decref(s2);
    sw_ledger_close(&l);
}

static void retire_tag(struct fx *f, const char *name)
{
    struct sw_ledger l;
    struct sw_err e;
    assert_int_equal(sw_ledger_open(&l, f->ledger, NULL, &e), 0);
    if (sw_ledger_tag_retire(&l, name, "superseded", 0, &e))
        fail_msg("%s", e.msg);
    sw_ledger_close(&l);
}

static json_t *moves(struct fx *f)
{
    struct sw_ledger l;
    struct sw_err e;
    json_t *m = NULL;
    assert_int_equal(sw_ledger_open(&l, f->ledger, NULL, &e), 0);
    assert_int_equal(sw_ledger_moves(&l, &m, &e), 0);
    sw_ledger_close(&l);
    return m;
}

static void test_refused_then_moved(void **state)
{
    struct fx *f = *state;
    char payload[4300], ref[4300], trash[4300], link[4300], dst[4400];
    snprintf(payload, sizeof(payload), "%s/models/qwen-old", f->dir);
    snprintf(ref, sizeof(ref), "%s/ref", f->dir);
    snprintf(trash, sizeof(trash), "%s/trash", f->dir);
    snprintf(link, sizeof(link), "%s/via-link", f->dir);
    snprintf(dst, sizeof(dst), "%s/qwen-old", trash);
    char models[4300];
    snprintf(models, sizeof(models), "%s/models", f->dir);
    assert_int_equal(mkdir(models, 0755), 0);
    make_payload(payload);
    make_payload(ref);
    assert_int_equal(symlink(payload, link), 0);
    char old[SW_LEDGER_TAG_MAX];
    tag_payload(f, payload, old);

    /* refused: the kept tag is named, nothing moves */
    struct swt_run r;
    assert_int_equal(swt_slipway(&r, "retire", payload, "--to", trash, "--ledger", f->ledger, NULL),
                     0);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "refused"));
    assert_non_null(strstr(r.out, old));
    assert_non_null(strstr(r.out, "model.gguf"));
    swt_run_free(&r);
    same_payload(ref, payload);
    assert_false(exists(dst));
    /* the same through a symlink to it, and a parent of it, as JSON */
    assert_int_equal(
        swt_slipway(&r, "retire", link, "--to", trash, "--ledger", f->ledger, "--json", NULL), 0);
    assert_int_equal(r.status, 1);
    json_t *j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(j, "needed_by"), 0), "tag")),
                        old);
    assert_false(json_is_true(json_object_get(j, "moved")));
    json_decref(j);
    swt_run_free(&r);
    assert_int_equal(swt_slipway(&r, "retire", models, "--to", trash, "--ledger", f->ledger, NULL),
                     0);
    assert_int_equal(r.status, 1);
    swt_run_free(&r);
    same_payload(ref, payload);

    /* retired: a dry run says what it would do and moves nothing */
    retire_tag(f, old);
    assert_int_equal(
        swt_slipway(&r, "retire", payload, "--to", trash, "--ledger", f->ledger, "--dry-run", NULL),
        0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "would move"));
    swt_run_free(&r);
    same_payload(ref, payload);
    assert_false(exists(trash));
    j = moves(f);
    assert_int_equal(json_array_size(j), 0);
    json_decref(j);

    /* and now it moves: one rename, recorded */
    assert_int_equal(
        swt_slipway(&r, "retire", payload, "--to", trash, "--ledger", f->ledger, "--json", NULL),
        0);
    assert_int_equal(r.status, 0);
    j = swt_json_out(&r);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "rename");
    assert_true(json_is_true(json_object_get(j, "moved")));
    assert_int_equal(json_integer_value(json_object_get(j, "files")), 3);
    json_decref(j);
    swt_run_free(&r);
    assert_false(exists(payload));
    same_payload(ref, dst);
    j = moves(f);
    assert_int_equal(json_array_size(j), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "to")), dst);
    json_decref(j);
    /* a second payload of the same name: the trash entry exists, refused as input */
    make_payload(payload);
    assert_int_equal(swt_slipway(&r, "retire", payload, "--to", trash, "--ledger", f->ledger, NULL),
                     0);
    assert_int_equal(r.status, 2);
    swt_run_free(&r);
    same_payload(ref, payload);
}

/* sw_payload_retire as `slipway retire --to TRASH --ledger LEDGER` calls it. */
static int retire(struct fx *f, const char *payload, const char *trash, struct sw_payload_retire *r,
                  struct sw_err *e)
{
    struct sw_payload_retire_opts o = {.ledger = f->ledger, .note = "slipway retire"};
    sw_err_clear(e);
    return sw_payload_retire(payload, trash, &o, r, e);
}

static void test_across_filesystems(void **state)
{
    struct fx *f = *state;
    struct stat a, b;
    assert_int_equal(stat(f->dir, &a), 0);
    swt_need(stat("/dev/shm", &b) == 0 && a.st_dev != b.st_dev,
             "/dev/shm on another filesystem than %s (a cross-filesystem move)", f->dir);
    char payload[4300], ref[4300], dst[4400];
    snprintf(payload, sizeof(payload), "%s/mistral", f->dir);
    snprintf(ref, sizeof(ref), "%s/ref", f->dir);
    snprintf(dst, sizeof(dst), "%s/mistral", f->shm);
    make_payload(payload);
    make_payload(ref);
    struct sw_payload_retire r;
    struct sw_err e;
    /* no ledger: no answer, nothing moves */
    assert_int_equal(retire(f, payload, f->shm, &r, &e), SW_ENOENT);
    json_decref(r.needed_by);
    assert_false(exists(dst));
    char old[SW_LEDGER_TAG_MAX];
    tag_payload(f, "/elsewhere", old);

    if (retire(f, payload, f->shm, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(json_array_size(r.needed_by), 0);
    assert_true(r.moved);
    assert_string_equal(r.method, "copy");
    assert_int_equal(r.bytes, (3 << 20) + 16);
    json_decref(r.needed_by);
    assert_false(exists(payload));
    same_payload(ref, dst);
    json_t *j = moves(f);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "method")), "copy");
    json_decref(j);
}

static void test_copy_fails_midway(void **state)
{
    struct fx *f = *state;
    snprintf(f->small, sizeof(f->small), "%s/small", f->dir);
    assert_int_equal(mkdir(f->small, 0755), 0);
    f->mounted = mount("tmpfs", f->small, "tmpfs", 0, "size=1m") == 0;
    swt_need(f->mounted, "mounting a 1 MiB tmpfs at %s (root with CAP_SYS_ADMIN): %s", f->small,
             strerror(errno));
    char payload[4300], ref[4300], trash[4400];
    snprintf(payload, sizeof(payload), "%s/big", f->dir);
    snprintf(ref, sizeof(ref), "%s/ref", f->dir);
    snprintf(trash, sizeof(trash), "%s/trash", f->small);
    make_payload(payload);
    make_payload(ref);
    char old[SW_LEDGER_TAG_MAX];
    tag_payload(f, "/elsewhere", old);
    struct sw_payload_retire r;
    struct sw_err e;
    /* the work ran and failed (slipway retire: exit 1), saying nothing moved */
    assert_int_equal(retire(f, payload, trash, &r, &e), SW_EIO);
    json_decref(r.needed_by);
    assert_false(r.moved);
    assert_non_null(strstr(e.msg, "nothing was moved"));
    /* the source is whole, the trash holds no partial copy, no move was recorded */
    same_payload(ref, payload);
    char big[4500];
    snprintf(big, sizeof(big), "%s/big", trash);
    assert_false(exists(big));
    json_t *j = moves(f);
    assert_int_equal(json_array_size(j), 0);
    json_decref(j);
    DIR *d = opendir(trash);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused_then_moved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_across_filesystems, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_fails_midway, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
