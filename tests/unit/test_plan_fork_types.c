/*
 * plan + fleet: a fork profile's gguf_types reach the GGUF reader of sw_plan_endpoint. A random
 * gemma3 base (sw_gguf_synth_base, f32) has one tensor's type id rewritten to 115, a type the
 * pinned ggml does not know; the declaration gives it f32's geometry (1 element in 4 bytes) so the
 * file's layout is unchanged. Without the profile the plan names type 115 and the declaration to
 * make; with it the law plans the file and bills the tensor's bytes as declared. A hostile
 * declaration (block_size 0) is refused at fleet load, at its position.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <slipway/fleet.h>
#include <slipway/gguf.h>
#include <slipway/plan.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *TENSOR = "blk.0.attn_q.weight";

/* Rewrite TENSOR's type id in the header (name, n_dims u32, ne u64 x n_dims, type u32). */
static void retype(const char *path, uint32_t from, uint32_t to)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf), f);
    size_t l = strlen(TENSOR);
    size_t at = 0;
    for (size_t i = 8; i + l + 4 < n && !at; i++)
        if (!memcmp(buf + i, TENSOR, l)) {
            uint64_t len;
            memcpy(&len, buf + i - 8, 8);
            if (len == l)
                at = i + l;
        }
    assert_true(at > 0);
    uint32_t nd, ty;
    memcpy(&nd, buf + at, 4);
    assert_true(nd >= 1 && nd <= 4);
    size_t tat = at + 4 + 8 * (size_t)nd;
    memcpy(&ty, buf + tat, 4);
    assert_int_equal(ty, from);
    assert_int_equal(fseek(f, (long)tat, SEEK_SET), 0);
    assert_int_equal(fwrite(&to, 1, 4, f), 4);
    fclose(f);
}

static const char *fleet_text(const char *dir, bool with_profile, const char *decl)
{
    static char y[2048];
    snprintf(y, sizeof(y),
             SWT_FLEET_LOCAL_8G "profiles:\n"
                                "  rocmfpx:\n"
                                "    base: llama.cpp\n"
                                "    gguf_types: [%s]\n"
                                "endpoints:\n"
                                "  fork:\n"
                                "    host: local\n"
                                "    devices: [gpu0]\n"
                                "    engine: llama.cpp\n"
                                "%s"
                                "    payload: {path: %s, gguf: m.gguf}\n"
                                "    shape: {ctx_size: 1024, seqs: 1}\n",
             decl, with_profile ? "    profile: rocmfpx\n" : "", dir);
    return y;
}

static int plan(const char *dir, bool with_profile, const char *decl, struct sw_plan *p,
                struct sw_err *e)
{
    struct sw_fleet *f = NULL;
    struct sw_fleet_opts fo = {.getenv = sw_fleet_no_environ};
    const char *yp = swt_join(dir, "fleet.yaml");
    swt_write_str(yp, fleet_text(dir, with_profile, decl));
    int rc = sw_fleet_load(yp, &fo, &f, e);
    if (rc)
        return rc;
    rc = sw_plan_endpoint(f, sw_fleet_endpoint(f, "fork"), NULL, p, e);
    sw_plan_free(p);
    sw_fleet_free(f);
    return rc;
}

static void test_fork_type_through_profile(void **state)
{
    char *dir = swt_tmpdir();
    struct sw_gguf_base_opts bo = {0};
    struct sw_err e;
    struct sw_plan p;
    (void)state;
    sw_core_init();
    sw_gguf_base_defaults(&bo);
    bo.arch = "gemma3";
    const char *path = swt_join(dir, "m.gguf");
    if (sw_gguf_synth_base(&bo, path, &e))
        fail_msg("%s", e.msg);
    struct sw_plan before;
    const char *decl = "{id: 115, name: Q8_0_ROCMFPX_TEST, block_size: 1, type_size: 4}";
    /* the stock file plans; keep its weights to compare */
    int rc0 = plan(dir, false, decl, &before, &e);
    if (rc0) {
        char b[1024];
        fail_msg("%d %s", rc0, sw_err_format(&e, b, sizeof(b)));
    }
    retype(path, 0, 115);
    /* undeclared: the reader names the type and the declaration */
    assert_int_not_equal(plan(dir, false, decl, &p, &e), 0);
    swt_has_all("e.msg", e.msg, "type 115 is not a ggml type", "gguf_types: [{id: 115", NULL);
    /* declared by the endpoint's profile: planned */
    if (plan(dir, true, decl, &p, &e))
        fail_msg("%s", e.msg);
    /* the declaration reads the tensor's bytes as declared: a smaller block makes it a bad row */
    assert_int_not_equal(
        plan(dir, true, "{id: 115, name: Q8_0_ROCMFPX_TEST, block_size: 7, type_size: 4}", &p, &e),
        0);
    assert_non_null(strstr(e.msg, "block size 7"));
    /* a declaration that names another id says who declared what */
    assert_int_not_equal(
        plan(dir, true, "{id: 116, name: OTHER, block_size: 1, type_size: 4}", &p, &e), 0);
    assert_non_null(strstr(e.msg, "nor declared by profile rocmfpx"));
    /* hostile declarations stop at the fleet, at their position */
    assert_int_not_equal(
        plan(dir, true, "{id: 115, name: Q8_0_ROCMFPX, block_size: 0, type_size: 33}", &p, &e), 0);
    assert_non_null(strstr(e.msg, "block_size must be a whole number >= 1"));
    char eb[1024];
    assert_non_null(strstr(sw_err_format(&e, eb, sizeof(eb)), "fleet.yaml:10:"));
    assert_int_not_equal(
        plan(dir, true, "{id: 115, name: Q8_0_ROCMFPX, block_size: 32, type_size: 99999999999}", &p,
             &e),
        0);
    assert_int_not_equal(
        plan(dir, true, "{id: 8, name: Q8_0_AGAIN, block_size: 32, type_size: 34}", &p, &e), 0);
    assert_non_null(strstr(e.msg, "stock ggml type q8_0"));
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_type_through_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
