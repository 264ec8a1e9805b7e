/*
 * payload/patch: an engine patch verified against a real base file, as the operator records it
 * ("base 008eeaa2... -> patched bc9913a1..., apply-verified against the pinned image"). The test
 * writes a base file, its patched version, a unified diff between them made by `diff -u`, and
 * the two sha256s; then: pass; a drifted base (the image's file changed); a patch that no longer
 * applies (the hunk's context is gone); an already-applied patch; a wrong recorded result; and
 * malformed records. The base is never modified and nothing is left in TMPDIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/gate.h>
#include <slipway/host.h>
#include <slipway/payload.h>

#include "swtest.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE                                                                                       \
    "def kv_page_size(spec):\n"                                                                    \
    "    # the attention page\n"                                                                   \
    "    return spec.block_size * spec.page_size_bytes\n"                                          \
    "\n"                                                                                           \
    "def unify(specs):\n"                                                                          \
    "    return max(kv_page_size(s) for s in specs)\n"
#define PATCHED                                                                                    \
    "def kv_page_size(spec):\n"                                                                    \
    "    # the attention page, padded to the MLA multiple\n"                                       \
    "    return spec.block_size * spec.page_size_padded\n"                                         \
    "\n"                                                                                           \
    "def unify(specs):\n"                                                                          \
    "    return max(kv_page_size(s) for s in specs)\n"

static char *dir;

/* Entries of tmp whose name starts with prefix. */
static int count_tmp(const char *tmp, const char *prefix)
{
    DIR *d = opendir(tmp);
    int n = 0;
    struct dirent *de;
    if (!d)
        return 0;
    while ((de = readdir(d)))
        n += !strncmp(de->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

static void hash(const char *path, char out[SW_PAYLOAD_SHA256_HEX + 1])
{
    struct sw_err e;
    if (sw_payload_sha256_file(path, 0, out, NULL, &e))
        fail_msg("%s", e.msg);
}

static void test_patch_verify(void **state)
{
    (void)state;
    swt_need(access("/usr/bin/patch", X_OK) == 0, "GNU patch (/usr/bin/patch)");
    swt_need(access("/usr/bin/diff", X_OK) == 0, "diff (/usr/bin/diff)");
    dir = swt_tmpdir();
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", swt_join(dir, "tmp"));
    assert_int_equal(mkdir(tmp, 0700), 0);
    setenv("TMPDIR", tmp, 1);

    /* a/ and b/ trees as the operator diffs them; the image's file is a copy of a/ */
    const char *a = swt_join(dir, "a/vllm/v1/core"), *b = swt_join(dir, "b/vllm/v1/core");
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s' '%s'", a, b);
    assert_int_equal(system(cmd), 0);
    char base[4096], patched[4096], img[4096], patch[4096];
    snprintf(base, sizeof(base), "%s", swt_join(dir, "a/vllm/v1/core/kv_cache_utils.py"));
    snprintf(patched, sizeof(patched), "%s", swt_join(dir, "b/vllm/v1/core/kv_cache_utils.py"));
    snprintf(img, sizeof(img), "%s", swt_join(dir, "image-kv_cache_utils.py"));
    snprintf(patch, sizeof(patch), "%s", swt_join(dir, "02-mla-page.patch"));
    swt_write_str(base, BASE);
    swt_write_str(patched, PATCHED);
    swt_write_str(img, BASE);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && diff -u a/vllm/v1/core/kv_cache_utils.py "
             "b/vllm/v1/core/kv_cache_utils.py > '%s'; test $? -eq 1",
             dir, patch);
    assert_int_equal(system(cmd), 0);
    char hb[SW_PAYLOAD_SHA256_HEX + 1], hp[SW_PAYLOAD_SHA256_HEX + 1];
    hash(base, hb);
    hash(patched, hp);

    struct sw_payload_patch p = {"vllm/v1/core/kv_cache_utils.py", patch, hb, hp};
    struct sw_payload_patch_result r;
    struct sw_err e;

    /* pass: the base is the recorded one and patch -p1 reproduces the recorded result */
    if (sw_payload_patch_verify(img, &p, &r, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(r.verdict, SW_PATCH_OK);
    assert_string_equal(r.patched_sha256, hp);
    assert_string_equal(sw_payload_patch_verdict_name(r.verdict), "ok");
    assert_true(swt_file_is(img, BASE, strlen(BASE))); /* never written */

    /* a wrong recorded result: applies, but the hash differs */
    char wrong[SW_PAYLOAD_SHA256_HEX + 1];
    snprintf(wrong, sizeof(wrong), "%s", hp);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    struct sw_payload_patch pw = {p.file, patch, hb, wrong};
    assert_int_equal(sw_payload_patch_verify(img, &pw, &r, &e), 0);
    assert_int_equal(r.verdict, SW_PATCH_WRONG_RESULT);

    /* a drifted base: the image's file moved (one character) */
    swt_write_str(img, BASE "# rebuilt\n");
    assert_int_equal(sw_payload_patch_verify(img, &p, &r, &e), 0);
    assert_int_equal(r.verdict, SW_PATCH_BASE_DRIFTED);
    assert_string_not_equal(r.base_sha256, hb);

    /* a patch that no longer applies: record it against an image file whose hunk context is
     * gone (the base hash recorded for that file, so the apply is what fails) */
    const char *moved = "def kv_page_size(spec):\n    return spec.page_bytes()\n";
    swt_write_str(img, moved);
    char hm[SW_PAYLOAD_SHA256_HEX + 1];
    hash(img, hm);
    struct sw_payload_patch pn = {p.file, patch, hm, hp};
    assert_int_equal(sw_payload_patch_verify(img, &pn, &r, &e), 0);
    assert_int_equal(r.verdict, SW_PATCH_DOES_NOT_APPLY);
    assert_non_null(strstr(r.detail, "hunk FAILED")); /* patch's own words */
    assert_string_equal(r.patched_sha256, "");

    /* already applied: --forward refuses instead of reversing it */
    swt_write_str(img, PATCHED);
    struct sw_payload_patch pa = {p.file, patch, hp, hp};
    assert_int_equal(sw_payload_patch_verify(img, &pa, &r, &e), 0);
    assert_int_equal(r.verdict, SW_PATCH_DOES_NOT_APPLY);
    assert_non_null(strstr(r.detail, "previously applied"));

    /* malformed records */
    struct sw_payload_patch bad1 = {"../../etc/passwd", patch, hb, hp};
    assert_int_equal(sw_payload_patch_verify(img, &bad1, &r, &e), SW_EINVAL);
    struct sw_payload_patch bad2 = {"/vllm/x.py", patch, hb, hp};
    assert_int_equal(sw_payload_patch_verify(img, &bad2, &r, &e), SW_EINVAL);
    struct sw_payload_patch bad3 = {p.file, patch, "008eeaa2", hp};
    assert_int_equal(sw_payload_patch_verify(img, &bad3, &r, &e), SW_EINVAL);
    struct sw_payload_patch bad4 = {p.file, swt_join(dir, "absent.patch"), hb, hp};
    assert_int_equal(sw_payload_patch_verify(img, &bad4, &r, &e), SW_ENOENT);
    assert_int_equal(sw_payload_patch_verify(swt_join(dir, "absent.py"), &p, &r, &e), SW_ENOENT);

    /* nothing left behind */
    assert_int_equal(count_tmp(tmp, "slipway-patch-"), 0);
    unsetenv("TMPDIR");
    swt_tmpdir_free(dir);
}

/* The fleet's record and check's gate: patches: [{file, patch, base, base_sha256,
 * patched_sha256}] under an endpoint; relative paths from the fleet file's directory. */
static const char *gate_verdict(const char *d, const char *base_text, const char *hb,
                                const char *hp, char *line, size_t linen)
{
    static char v[16];
    char y[4096];
    struct sw_fleet *f = NULL;
    struct sw_err e;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    swt_write_str(swt_join(d, "image/kv_cache_utils.py"), base_text);
    snprintf(y, sizeof(y),
             SWT_FLEET_LOCAL_8G "endpoints:\n"
                                "  e:\n"
                                "    host: local\n"
                                "    devices: [gpu0]\n"
                                "    engine: vllm\n"
                                "    payload: {path: /nonexistent/model}\n"
                                "    patches:\n"
                                "      - file: vllm/v1/core/kv_cache_utils.py\n"
                                "        patch: 02-mla-page.patch\n"
                                "        base: image/kv_cache_utils.py\n"
                                "        base_sha256: %s\n"
                                "        patched_sha256: %s\n",
             hb, hp);
    swt_write_str(swt_join(d, "fleet.yaml"), y);
    if (sw_fleet_load(swt_join(d, "fleet.yaml"), &fo, &f, &e))
        fail_msg("%s", e.msg);
    json_t *out = NULL;
    struct sw_gate_opts o = {0};
    if (sw_gate_endpoint(f, sw_fleet_endpoint(f, "e"), &o, &out, &e))
        fail_msg("%s", e.msg);
    v[0] = '\0';
    const json_t *gs = json_object_get(out, "gates");
    for (size_t i = 0; i < json_array_size(gs); i++) {
        const json_t *g = json_array_get(gs, i);
        if (strcmp(json_string_value(json_object_get(g, "gate")), "patches"))
            continue;
        snprintf(v, sizeof(v), "%s", json_string_value(json_object_get(g, "verdict")));
        snprintf(line, linen, "%s", json_string_value(json_object_get(g, "line")));
    }
    json_decref(out);
    sw_fleet_free(f);
    return v;
}

/* In d: a/ and b/ hold BASE and PATCHED as vllm/v1/core/kv_cache_utils.py, 02-mla-page.patch the
 * diff between them, image/ an empty folder; hb and hp their SHA-256. */
static void make_patch(const char *d, char *hb, char *hp)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && mkdir -p image a/vllm/v1/core b/vllm/v1/core && printf '%%s' '" BASE
             "' > a/vllm/v1/core/kv_cache_utils.py && printf '%%s' '" PATCHED
             "' > b/vllm/v1/core/kv_cache_utils.py && { diff -u a/vllm/v1/core/kv_cache_utils.py "
             "b/vllm/v1/core/kv_cache_utils.py > 02-mla-page.patch; test $? -eq 1; }",
             d);
    assert_int_equal(system(cmd), 0);
    hash(swt_join(d, "a/vllm/v1/core/kv_cache_utils.py"), hb);
    hash(swt_join(d, "b/vllm/v1/core/kv_cache_utils.py"), hp);
}

static void test_patch_gate(void **state)
{
    (void)state;
    swt_need(access("/usr/bin/patch", X_OK) == 0, "GNU patch (/usr/bin/patch)");
    swt_need(access("/usr/bin/diff", X_OK) == 0, "diff (/usr/bin/diff)");
    char *d = swt_tmpdir();
    char line[1024] = "";
    char hb[SW_PAYLOAD_SHA256_HEX + 1], hp[SW_PAYLOAD_SHA256_HEX + 1];
    make_patch(d, hb, hp);
    assert_string_equal(gate_verdict(d, BASE, hb, hp, line, sizeof(line)), "pass");
    assert_non_null(strstr(line, "reproduces"));
    assert_string_equal(gate_verdict(d, BASE "# rebuilt\n", hb, hp, line, sizeof(line)), "fail");
    assert_non_null(strstr(line, "not the recorded base"));
    /* the seed prints hashes as prefixes ("008eeaa2..."): a record must hold the whole sha256 */
    struct sw_fleet *f = NULL;
    struct sw_err e;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    swt_write_str(swt_join(d, "short.yaml"),
                  "version: 1\nhosts:\n  local:\n    transport: {kind: local}\nendpoints:\n"
                  "  e:\n    host: local\n    engine: vllm\n    payload: {path: /m}\n"
                  "    patches:\n      - {file: a.py, patch: p.patch, base_sha256: 008eeaa2, "
                  "patched_sha256: bc9913a1}\n");
    assert_int_not_equal(sw_fleet_load(swt_join(d, "short.yaml"), &fo, &f, &e), 0);
    assert_non_null(strstr(e.msg, "a prefix cannot verify a file"));
    swt_tmpdir_free(d);
}

/* `slipway hosts check`'s verification: the base read from a host over its transport (the local
 * transport runs the same `cat` an ssh host would), then the one verification. Pass; a drifted
 * base; a patch that no longer applies (the base recorded as the drifted file, so the hash
 * matches and patch itself refuses); nothing left in TMPDIR. */
static void test_patch_on_host(void **state)
{
    (void)state;
    swt_need(access("/usr/bin/patch", X_OK) == 0, "GNU patch (/usr/bin/patch)");
    swt_need(access("/usr/bin/diff", X_OK) == 0, "diff (/usr/bin/diff)");
    char *d = swt_tmpdir();
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", swt_join(d, "tmp"));
    assert_int_equal(mkdir(tmp, 0700), 0);
    setenv("TMPDIR", tmp, 1);
    char hb[SW_PAYLOAD_SHA256_HEX + 1], hp[SW_PAYLOAD_SHA256_HEX + 1];
    make_patch(d, hb, hp);
    char base[4096], patch[4096];
    snprintf(base, sizeof(base), "%s", swt_join(d, "image/kv_cache_utils.py"));
    snprintf(patch, sizeof(patch), "%s", swt_join(d, "02-mla-page.patch"));
    struct sw_fleet_patch fp = {.file = "vllm/v1/core/kv_cache_utils.py",
                                .patch = patch,
                                .base = base,
                                .base_sha256 = hb,
                                .patched_sha256 = hp};
    struct sw_host h;
    struct sw_host_cfg hc = {.name = "local", .kind = SW_HOST_KIND_LOCAL};
    struct sw_err e;
    struct sw_gate_patch_result r;
    assert_int_equal(sw_host_open(&h, &hc, &e), 0);

    swt_write_str(base, BASE);
    assert_int_equal(sw_gate_patch(&fp, &h, 10000, &r, &e), 0);
    assert_int_equal(r.verdict, SW_GATE_PASS);
    assert_string_equal(r.detail, "ok");
    assert_string_equal(r.patched_sha256, hp);
    assert_non_null(strstr(r.line, "on local"));

    /* the image's file changed under the patch */
    swt_write_str(base, BASE "# rebuilt\n");
    assert_int_equal(sw_gate_patch(&fp, &h, 10000, &r, &e), 0);
    assert_int_equal(r.verdict, SW_GATE_FAIL);
    assert_string_equal(r.detail, "base_drifted");
    assert_non_null(strstr(r.line, "not the recorded base"));
    assert_non_null(strstr(r.fix, "rebase the patch"));

    /* recorded against a base the hunk's context is gone from: the hash matches, patch refuses */
    swt_write_str(base, "def kv_page_size(spec):\n    return 0\n");
    char hd[SW_PAYLOAD_SHA256_HEX + 1];
    hash(base, hd);
    fp.base_sha256 = hd;
    assert_int_equal(sw_gate_patch(&fp, &h, 10000, &r, &e), 0);
    assert_int_equal(r.verdict, SW_GATE_FAIL);
    assert_string_equal(r.detail, "does_not_apply");
    assert_non_null(strstr(r.line, "no longer applies"));

    /* a base the host does not have: skip, saying why; a relative base cannot be read there */
    fp.base = "/nonexistent/slipway/kv_cache_utils.py";
    assert_int_equal(sw_gate_patch(&fp, &h, 10000, &r, &e), 0);
    assert_int_equal(r.verdict, SW_GATE_SKIP);
    assert_non_null(strstr(r.line, "cannot verify on local"));
    fp.base = "image/kv_cache_utils.py";
    assert_int_equal(sw_gate_patch(&fp, &h, 10000, &r, &e), 0);
    assert_int_equal(r.verdict, SW_GATE_SKIP);
    assert_non_null(strstr(r.line, "absolute path"));
    assert_int_equal(count_tmp(tmp, "slipway-"), 0);
    unsetenv("TMPDIR");
    swt_tmpdir_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_verify),
        cmocka_unit_test(test_patch_gate),
        cmocka_unit_test(test_patch_on_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
