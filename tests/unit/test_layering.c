/*
 * scripts/layering.sh, the include-graph check scripts/test.sh runs before the build: it passes on
 * the real tree and fails, naming file:line and the edge, on a copy of the tree with one backward
 * include planted (core including the ledger), a peer include (model including fleet), and a
 * reach into another module's internals. Each plant goes into its own fresh copy, so one
 * failure cannot hide another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "swtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A copy of src/, include/ and the script in a fresh temporary directory. Free with
 * swt_tmpdir_free. */
static char *copy_tree(void)
{
    char *dir = swt_tmpdir();
    char scripts[4096];
    struct swt_run r;
    snprintf(scripts, sizeof(scripts), "%s/scripts", dir);
    const char *const argv[] = {"cp", "-R", swt_src("src"), swt_src("include"), dir, NULL};
    assert_int_equal(swt_run(argv, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    const char *const mk[] = {"mkdir", scripts, NULL};
    assert_int_equal(swt_run(mk, NULL, 10, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    const char *const cp[] = {"cp", swt_src("scripts/layering.sh"), scripts, NULL};
    assert_int_equal(swt_run(cp, NULL, 10, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    return dir;
}

/* Append a line to dir/rel; returns the line number it landed on. */
static int append_line(const char *dir, const char *rel, const char *line)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0, c, last = '\n';
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n')
            n++;
        last = c;
    }
    fclose(f);
    f = fopen(path, "a");
    assert_non_null(f);
    if (last != '\n') {
        fputc('\n', f);
        n++;
    }
    fprintf(f, "%s\n", line);
    fclose(f);
    return n + 1;
}

static void layering(const char *root, struct swt_run *r)
{
    char script[4096];
    snprintf(script, sizeof(script), "%s/scripts/layering.sh", root);
    const char *const argv[] = {"bash", script, root, NULL};
    assert_int_equal(swt_run(argv, NULL, 120, r), 0);
}

static void test_real_tree_passes(void **state)
{
    struct swt_run r;
    (void)state;
    layering(swt_src(""), &r);
    if (r.status != 0)
        fprintf(stderr, "%s", r.err);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "layering: ok"));
    swt_run_free(&r);
}

/* Plant `line` at the end of rel in a fresh copy; the check must exit 1 with "REL:LINE: want"
 * (the planted line's number) on stderr. The unplanted copy passes first, so the failure is the
 * plant's. */
static void planted_fails(const char *rel, const char *line, const char *want)
{
    char *dir = copy_tree();
    struct swt_run r;
    char msg[1024];
    layering(dir, &r);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);

    int at = append_line(dir, rel, line);
    snprintf(msg, sizeof(msg), "%s:%d: %s", rel, at, want);
    layering(dir, &r);
    if (r.status != 1 || !strstr(r.err, msg))
        fprintf(stderr, "expected exit 1 with \"%s\"; got %d:\n%s", msg, r.status, r.err);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, msg));
    assert_non_null(strstr(r.err, "layering: FAILED"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

static void test_backward_include_fails(void **state)
{
    (void)state;
    planted_fails("src/core/alloc.c", "#include <slipway/ledger.h>",
                  "core -> ledger: backward edge");
}

static void test_backward_include_in_public_header_fails(void **state)
{
    (void)state;
    /* the edge this check was written against: a law header pulling in the engine adapter */
    planted_fails("include/slipway/vllm.h", "#include <slipway/engine_vllm.h>",
                  "memory -> engine: backward edge");
}

static void test_peer_include_fails(void **state)
{
    (void)state;
    planted_fails("src/model/arch.c", "#include <slipway/fleet.h>",
                  "model -> fleet: peers on one layer");
}

static void test_foreign_internals_fail(void **state)
{
    (void)state;
    /* forward in the order (cli is on top) but into engine's internals */
    planted_fails("src/cli/cmd_plan.c", "#include \"engine/engine_internal.h\"",
                  "cli -> engine reaches into engine's internals");
}

static void test_unplaced_module_fails(void **state)
{
    char *dir = copy_tree();
    struct swt_run r;
    char path[4096];
    (void)state;
    snprintf(path, sizeof(path), "%s/src/nowhere", dir);
    const char *const mk[] = {"mkdir", path, NULL};
    assert_int_equal(swt_run(mk, NULL, 10, &r), 0);
    swt_run_free(&r);
    snprintf(path, sizeof(path), "%s/src/nowhere/nowhere.c", dir);
    swt_write_str(path, "#include <slipway/core.h>\n");
    layering(dir, &r);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "src/nowhere/: module 'nowhere' is not in the LAYERS table"));
    swt_run_free(&r);
    swt_tmpdir_free(dir);
}

/* README.md's layer block is the table's: a stale block fails the check, --readme rewrites it. */
static void test_readme_block(void **state)
{
    char *dir = copy_tree();
    struct swt_run r;
    char path[4096], script[4096];
    (void)state;
    snprintf(path, sizeof(path), "%s/README.md", dir);
    swt_write_str(path, "# x\n\n<!-- layers -->\n    core   stale\n<!-- /layers -->\n\nafter\n");
    layering(dir, &r);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "README.md's layer block differs"));
    swt_run_free(&r);
    snprintf(script, sizeof(script), "%s/scripts/layering.sh", dir);
    const char *const fix[] = {script, "--readme", dir, NULL};
    assert_int_equal(swt_run(fix, NULL, 60, &r), 0);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    layering(dir, &r);
    assert_int_equal(r.status, 0);
    swt_run_free(&r);
    assert_true(swt_file_has(path, "    core                            errors"));
    assert_true(swt_file_has(path, "\nafter\n"));
    assert_false(swt_file_has(path, "stale"));
    swt_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_tree_passes),
        cmocka_unit_test(test_backward_include_fails),
        cmocka_unit_test(test_backward_include_in_public_header_fails),
        cmocka_unit_test(test_peer_include_fails),
        cmocka_unit_test(test_foreign_internals_fail),
        cmocka_unit_test(test_unplaced_module_fails),
        cmocka_unit_test(test_readme_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
